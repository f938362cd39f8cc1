"""Reference estimators that know what the algorithms must discover.

``known_label_least_squares`` is the oracle of every clustered-regression experiment: the
least-squares fit of each cluster on the pooled data of its true clients.  Its error is the floor
``sigma sqrt(d / (N_l - d - 1))`` of :func:`mixreg.metrics.oracle_ls_floor` in expectation; no
method that must also find the clusters can do better in that regime.

``client_weighted_least_squares`` weighs every *client* equally instead of every point: it is the
fixed point of IFCA's Algorithm 2 (gradient averaging with the server step divided by the number
of clients ``m``) when every client's identity is right.  With unequal client sizes it is a worse
estimate than the known-label least squares, and the gap between the two is the part of IFCA's
error that comes from its aggregation weights, not from clustering.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .problems import Problem

__all__ = ["known_label_least_squares", "client_weighted_least_squares"]


def known_label_least_squares(problem: Problem) -> np.ndarray:
    """Per-cluster least squares with the true labels (of the rows,
    :attr:`~mixreg.problems.Problem.row_labels`: on clients that mix clusters, every point is
    fitted with its own cluster).

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
    row_label = problem.row_labels
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


def client_weighted_least_squares(problem: Problem) -> np.ndarray:
    r"""Per-cluster least squares that weighs every true client equally.

    .. math::

        \hat\theta_l = \arg\min_\theta \sum_{i:\, z_i = l} \frac{1}{n_i}
        \lVert X_i \theta - y_i \rVert_2^2
        = \Big(\sum_{i:\, z_i = l} H_i\Big)^{-1} \sum_{i:\, z_i = l} \frac{X_i^\top y_i}{n_i},
        \qquad H_i = X_i^\top X_i / n_i ,

    the fixed point of IFCA's option I with client-uniform weights (Algorithm 2,
    :func:`mixreg.algorithms.ifca` with ``aggregation="clients"``) when every identity is
    right: its update :math:`\theta_l \leftarrow \theta_l - \frac{\gamma}{m} \sum_{i \in S_l}
    \nabla F_i(\theta_l)`, :math:`F_i = \frac{1}{n_i}\lVert X_i\theta - y_i\rVert^2`, stops
    exactly where the gradient of this objective vanishes.  A one-point client counts as much
    as a client of a hundred points.  With equal sizes it is :func:`known_label_least_squares`.

    Solved in float64 as the least squares of the rows scaled by :math:`1/\sqrt{n_i}` (minimum
    norm when the cluster's rows do not span :math:`\mathbb{R}^d`).

    Parameters
    ----------
    problem : Problem

    Returns
    -------
    theta : ndarray of shape (k, d), float64
        Row ``l`` is cluster ``l``'s client-weighted fit, the point Algorithm 2 stops at; ``nan``
        for a cluster with no client (as :func:`known_label_least_squares`).

    Examples
    --------
    >>> from mixreg.problems import make_problem_from_parameters
    >>> rng = np.random.default_rng(0)
    >>> pb = make_problem_from_parameters(np.eye(2), np.array([0, 0, 1, 1]), np.array([1, 9, 5, 5]), 0.5,
    ...                                   rng=rng)
    >>> cw, ls = client_weighted_least_squares(pb), known_label_least_squares(pb)
    >>> bool(np.allclose(cw[1], ls[1])), bool(np.allclose(cw[0], ls[0]))  # equal sizes only in cluster 1
    (True, False)
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a mixreg Problem, got {type(problem).__name__}")
    row_label = problem.row_labels
    row_scale = np.repeat(1.0 / np.sqrt(problem.sizes), problem.sizes)
    theta = np.full((problem.k, problem.d), np.nan)
    for l in range(problem.k):
        rows = row_label == l
        if rows.any():
            scale = row_scale[rows]
            Xl = problem.X[rows].astype(np.float64) * scale[:, None]
            yl = problem.y[rows].astype(np.float64) * scale
            theta[l] = np.linalg.lstsq(Xl, yl, rcond=None)[0]
    return theta
