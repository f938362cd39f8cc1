"""Analysis of an iteration's trajectory: checkpoints, decoded labels, measured contraction factors.

What a study reads off a run's history (a path of parameters :math:`\\theta_t`, one per round),
whatever the method that made it:

* :func:`checkpoint_rounds`: the rounds a curve is stored at;
* :func:`phase1_curve`: the error of the mean of each final anchor group along a federated
  moment descent's history (:mod:`mixreg.algorithms.moment_descent`);
* :func:`decoded_labels` and :func:`labels_window`: the maximum-likelihood decoder's labels at
  every iterate, and the round from which they stop moving;
* :func:`measured_contraction`: the per-round factor of an affine iteration whose labels may
  still flip, measured against each round's exact fixed point; :func:`geometric_rate`: the
  factor fitted to the path instead;
* :func:`pooled_training_loss`: the pooled objective :math:`\\frac1N\\sum_i\\min_j F_i` of
  parameters.

Nothing here runs an algorithm; every function takes arrays (and a
:class:`mixreg.problems.Problem` for its data).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import kernels
from .metrics import matched_max_distance
from .problems import Problem

__all__ = [
    "MIN_WINDOW",
    "LABEL_TOLERANCE",
    "checkpoint_rounds",
    "phase1_curve",
    "geometric_rate",
    "decoded_labels",
    "labels_window",
    "measured_contraction",
    "pooled_training_loss",
]

#: Fewest rounds over which :func:`measured_contraction` measures a factor.
MIN_WINDOW = 5

#: :func:`labels_window` opens the window once the decoded labels differ from the final decoding
#: on at most this fraction of the data (one-point clients near a decision boundary keep
#: flipping for as long as the models creep).
LABEL_TOLERANCE = 1e-3


def checkpoint_rounds(n_rounds: int, every: int) -> np.ndarray:
    """The rounds a curve is stored at: ``0, every, 2 every, ...``, always ending with ``n_rounds``.

    Parameters
    ----------
    n_rounds : int >= 0
        The last round.
    every : int >= 1
        Rounds between two stored points.

    Returns
    -------
    ndarray of shape (C,), int64

    Examples
    --------
    >>> checkpoint_rounds(10, 4).tolist()
    [0, 4, 8, 10]
    """
    rounds = list(range(0, n_rounds + 1, every))
    if rounds[-1] != n_rounds:
        rounds.append(n_rounds)
    return np.array(rounds, dtype=np.int64)


def phase1_curve(history: Any, groups: np.ndarray, theta_star: np.ndarray) -> np.ndarray:
    """``d(centres_t, theta*)`` for every Phase-1 round, with the final anchor groups.

    The round-``t`` "estimate" of federated moment descent is the mean of each final anchor
    group's round-``t`` estimates, so the last value is the Phase-1 output's error.

    Parameters
    ----------
    history : MomentDescentHistory
        Its ``theta``, of shape (T1 + 1, M_A, d), is read.
    groups : int array of shape (M_A,)
        Final groups (``-1`` = left out).
    theta_star : ndarray of shape (k, d)

    Returns
    -------
    ndarray of shape (T1 + 1,)
        The permutation-matched maximum distance
        (:func:`mixreg.metrics.matched_max_distance`); ``nan`` where a group is empty.
    """
    k = theta_star.shape[0]
    theta = history.theta  # (T1 + 1, M_A, d)
    centres = np.full((theta.shape[0], k, theta.shape[2]), np.nan)
    for j in range(k):
        members = groups == j
        if members.any():
            centres[:, j] = theta[:, members].mean(axis=1)
    return matched_max_distance(centres, theta_star)


def geometric_rate(theta_path: np.ndarray, *, fraction: float = 0.5, tiny: float = 1e-9) -> float:
    """Per-round contraction of an iteration *fitted* to its path.

    With :math:`e_t = \\max_l \\lVert \\theta_{l,t} - \\theta_{l,T} \\rVert` (distance to the last
    iterate, a proxy of the fixed point), the rate is :math:`\\exp` of the least-squares slope of
    :math:`\\log e_t` over rounds ``1 <= t <= fraction * T`` with
    :math:`e_t > \\text{tiny} \\cdot e_0`.  :func:`measured_contraction` measures it instead,
    against the exact fixed point of the settled labels.

    Parameters
    ----------
    theta_path : ndarray of shape (T + 1, k, d)
    fraction : float in (0, 1)
    tiny : float

    Returns
    -------
    float
        ``nan`` with fewer than 3 usable rounds.

    Examples
    --------
    >>> path = 3.0 + 0.8 ** np.arange(60)[:, None, None] * np.ones((60, 2, 3))
    >>> round(geometric_rate(path), 3)
    0.8
    """
    path = np.asarray(theta_path, dtype=np.float64)
    e = np.linalg.norm(path - path[-1], axis=2).max(axis=1)
    T = path.shape[0] - 1
    t = np.arange(T + 1)
    use = (t >= 1) & (t <= fraction * T) & (e > tiny * max(e[0], np.finfo(float).tiny))
    if use.sum() < 3:
        return float("nan")
    slope = np.polyfit(t[use], np.log(e[use]), 1)[0]
    return float(np.exp(slope))


def decoded_labels(problem: Problem, theta_path: np.ndarray) -> np.ndarray:
    r"""The maximum-likelihood decoder's labels :math:`\arg\min_l F_i(\theta_{l,t})` at every iterate.

    :math:`F_i` is client ``i``'s mean squared error; ties go to the lowest label (as IFCA's
    assignment, :func:`mixreg.algorithms.training_loss`).

    Parameters
    ----------
    problem : Problem
    theta_path : ndarray of shape (T + 1, k, d)

    Returns
    -------
    int array of shape (T + 1, m)

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=10, k=2, n=5, d=3, sigma=0.0, scale=1.0, rng=np.random.default_rng(0))
    >>> bool((decoded_labels(pb, pb.theta_star[None])[0] == pb.labels).all())
    True
    """
    theta = np.ascontiguousarray(theta_path, dtype=problem.dtype)
    B, k, _ = theta.shape
    with np.errstate(over="ignore", invalid="ignore"):
        P = kernels.predict(theta, problem.X)
        losses = np.empty((B, problem.m, k))
        kernels.client_losses(P, problem.y[None], np.zeros(B, dtype=np.int64), problem.offsets, B, k, losses)
        assign = np.empty((B, problem.m), dtype=np.int64)
        kernels.assign_clients(losses, np.ones(problem.m, dtype=np.bool_), assign, np.empty((B, problem.m)))
    return assign


def labels_window(problem: Problem, labels_path: np.ndarray, *, tolerance: float = LABEL_TOLERANCE) -> tuple[int, int]:
    """When the decoded labels stop moving, relative to the final decoding.

    Parameters
    ----------
    problem : Problem
        Its client sizes weigh the labels (weights :math:`n_i / N`).
    labels_path : int array of shape (T + 1, m)
    tolerance : float in [0, 1)

    Returns
    -------
    t0 : int
        First round from which the labels differ from the last row on at most ``tolerance`` of
        the data at every later round.
    settle : int
        First round from which they equal the last row exactly.
    """
    differs = labels_path != labels_path[-1]
    data = differs.astype(np.float64) @ (problem.sizes / problem.N)
    late = np.flatnonzero(data > tolerance)
    changed = np.flatnonzero(differs.any(axis=1))
    return int(late[-1] + 1) if late.size else 0, int(changed[-1] + 1) if changed.size else 0


def measured_contraction(theta_path: np.ndarray, fixed_points: np.ndarray, t0: int, *, min_window: int = MIN_WINDOW,
                         rel_tiny: float = 1e-10) -> tuple[float, int]:
    r"""Per-round factor of an affine iteration whose labels may still flip, measured exactly.

    Round ``t`` maps :math:`\theta_t` to :math:`\theta_{t+1}` with the labels decoded at
    :math:`\theta_t`, an affine map with fixed point :math:`\theta^\infty_t`, so
    :math:`r_t = \max_l \lVert\theta_{l,t+1} - \theta^\infty_{l,t}\rVert /
    \max_l \lVert\theta_{l,t} - \theta^\infty_{l,t}\rVert` is that round's contraction towards
    its own fixed point (when the labels do not change, the product of the :math:`r_t` telescopes
    to :math:`e_{t_1}/e_{t_0}`, :math:`e_t` the distance to the common fixed point).  The factor is
    their geometric mean over the rounds ``t0 <= t`` whose distance is above rounding.

    Parameters
    ----------
    theta_path : ndarray of shape (T + 1, k, d)
    fixed_points : ndarray of shape (T, k, d)
        Row ``t``: the fixed point of round ``t``'s map (rows before ``t0`` are not read).
    t0 : int
    min_window : int
        Fewest rounds the window must hold.
    rel_tiny : float
        Rounds with :math:`e_t \le \text{rel\_tiny} \cdot \max(1, \max_l\lVert\theta^\infty_{l,t}
        \rVert)` end the window (the iterate sits at its fixed point up to rounding).

    Returns
    -------
    factor : float
        ``nan`` if the window is shorter than ``min_window`` rounds.
    window : int
        Rounds used.

    Examples
    --------
    >>> path = 0.9 ** np.arange(11)[:, None, None] * np.ones((11, 2, 3)) + 1.0
    >>> measured_contraction(path, np.ones((10, 2, 3)), 2)
    (0.9, 8)
    """
    path = np.asarray(theta_path, dtype=np.float64)
    fixed = np.asarray(fixed_points, dtype=np.float64)
    logs = []
    for t in range(int(t0), fixed.shape[0]):
        before = np.linalg.norm(path[t] - fixed[t], axis=1).max()
        if not before > rel_tiny * max(1.0, float(np.linalg.norm(fixed[t], axis=1).max())):
            break
        after = np.linalg.norm(path[t + 1] - fixed[t], axis=1).max()
        if not after > 0:  # landed on the fixed point exactly (or left the finite numbers)
            break
        logs.append(np.log(after / before))
    if len(logs) < min_window:
        return float("nan"), len(logs)
    return float(np.round(np.exp(np.mean(logs)), 15)), len(logs)


def pooled_training_loss(problem: Problem, theta: np.ndarray) -> np.ndarray:
    """The pooled objective :math:`\\frac1N \\sum_i \\min_j \\lVert X_i\\theta_j - y_i\\rVert^2` of
    each replica (IFCA with data weights minimises it).

    Parameters
    ----------
    problem : Problem
    theta : ndarray of shape (B, k, d)

    Returns
    -------
    ndarray of shape (B,)
    """
    theta = np.asarray(theta, dtype=np.float64)
    B, k, d = theta.shape
    X, y = problem.X.astype(np.float64), problem.y.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        r2 = np.square(X @ theta.reshape(B * k, d).T - y[:, None])
        per_client = np.add.reduceat(r2, problem.offsets[:-1], axis=0).reshape(problem.m, B, k)
        return per_client.min(axis=2).sum(axis=0) / problem.N
