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
        Row ``l`` is the fit of cluster ``l``.  A cluster with no client has nothing to fit: its
        row is ``nan`` (our choice, rather than raising, so that an experiment records the trial
        instead of crashing; such a problem is degenerate, ``problem.degenerate`` names the
        empty cluster and a :class:`mixreg.problems.DegenerateProblemWarning` was emitted when it
        was built).  Distances to such an estimate are ``nan``.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from mixreg.problems import DegenerateProblemWarning, make_labels, make_problem_from_parameters
    >>> rng = np.random.default_rng(0)
    >>> labels = make_labels(10, 2, proportions=[0.0, 1.0], rng=rng)  # cluster 0 gets no client
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DegenerateProblemWarning)
    ...     pb = make_problem_from_parameters(np.eye(2), labels, 20, 0.1, rng=rng)
    >>> pb.degenerate, np.isnan(known_label_least_squares(pb)).all(axis=1).tolist()
    ('empty cluster 0', [True, False])
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
