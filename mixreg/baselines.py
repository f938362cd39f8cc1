"""Reference estimators that know what the algorithms must discover.

``known_label_least_squares`` is the oracle of every clustered-regression experiment: the
least-squares fit of each cluster on the pooled data of its true clients.  Its error is the floor
``sigma sqrt(d / (N_l - d - 1))`` of :func:`mixreg.metrics.oracle_ls_floor` in expectation; no
method that must also find the clusters can do better in that regime.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .problems import Problem

__all__ = ["known_label_least_squares"]


def known_label_least_squares(problem):
    """Per-cluster least squares with the true labels.

    Solved in float64 through the normal equations (Cholesky) when the cluster has more samples
    than dimensions, and as the minimum-norm solution otherwise.

    Parameters
    ----------
    problem : Problem

    Returns
    -------
    theta : ndarray of shape (k, d), float64
        ``nan`` rows for clusters with no client.
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a mixreg Problem, got {type(problem).__name__}")
    row_label = np.repeat(problem.labels, problem.sizes)
    theta = np.full((problem.k, problem.d), np.nan)
    for l in range(problem.k):
        rows = row_label == l
        if not rows.any():
            continue
        Xl = problem.X[rows].astype(np.float64)
        yl = problem.y[rows].astype(np.float64)
        if Xl.shape[0] > Xl.shape[1]:
            gram = Xl.T @ Xl
            try:
                theta[l] = scipy.linalg.cho_solve(scipy.linalg.cho_factor(gram), Xl.T @ yl)
                continue
            except np.linalg.LinAlgError:
                pass  # rank deficient despite N > d: fall through to the minimum-norm solution
        theta[l] = np.linalg.lstsq(Xl, yl, rcond=None)[0]
    return theta
