"""Anchor clients of Su, Xu and Yang's Phase 1."""

from __future__ import annotations

import numpy as np

from ..validation import check_choice, check_int
from ._checks import check_rng
from ._generate import _check_covariances, _draw_data
from ._problem import Problem

ANCHOR_MODES = ("random", "per_cluster")


def add_anchors(problem: Problem, n_points: int, *, mode: str = "random", n_anchors: int | None = None,
                rng: np.random.Generator) -> tuple[Problem, np.ndarray]:
    """Make some clients anchor clients holding at least ``n_points`` samples.

    Su, Xu and Yang's Phase 1 needs a few *anchor* clients with :math:`\\tilde\\Omega(k)` points
    each.  Two versions exist:

    ``mode="random"`` (NeurIPS 2022 version, slide "Federated Moment Descent in Action", step 1)
        a uniformly random set of ``n_anchors`` distinct clients is chosen;
    ``mode="per_cluster"`` (journal version: the server "recruits one client per cluster")
        one client of each cluster is chosen uniformly among that cluster's clients, and
        ``anchors[l]`` is the anchor of cluster ``l``.

    Our construction (the papers do not say how anchors arise in a simulation): the chosen
    clients keep their identity, label and data, and a client with fewer than ``n_points``
    samples is topped up with fresh samples of its own cluster (same ``theta_star``, ``sigma``
    and covariance), appended after its existing rows.  ``m``, the labels and every other
    client's data are unchanged.

    Parameters
    ----------
    problem : Problem
    n_points : int >= 2
        ``n_A``, the minimum number of samples of an anchor (Phase 1 uses them in pairs).
    mode : {"random", "per_cluster"}
    n_anchors : int in [1, m], optional
        ``M_A``; required for ``"random"``; for ``"per_cluster"`` it must be omitted or ``k``.
    rng : numpy.random.Generator

    Returns
    -------
    problem : Problem
        The problem with the anchors' data topped up.
    anchors : ndarray of shape (M_A,), int64
        Client indices of the anchors (sorted for ``"random"``, by cluster for ``"per_cluster"``).
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a mixreg Problem, got {type(problem).__name__}")
    n_points = check_int("n_points", n_points, low=2)
    check_choice("mode", mode, ANCHOR_MODES)
    check_rng(rng)
    m, k = problem.m, problem.k
    if mode == "random":
        if n_anchors is None:
            raise ValueError("n_anchors is required for mode='random'")
        n_anchors = check_int("n_anchors", n_anchors, low=1, high=m)
        anchors = np.sort(rng.choice(m, size=n_anchors, replace=False)).astype(np.int64)
    else:
        if n_anchors is not None and check_int("n_anchors", n_anchors) != k:
            raise ValueError(f"n_anchors must be omitted or equal k={k} for mode='per_cluster', got {n_anchors}")
        anchors = np.empty(k, dtype=np.int64)
        for l in range(k):
            members = np.flatnonzero(problem.labels == l)
            if members.size == 0:
                raise ValueError(f"cluster {l} has no client, so it cannot get an anchor (mode='per_cluster')")
            anchors[l] = rng.choice(members)
    sizes = problem.sizes
    extra = np.maximum(n_points - sizes[anchors], 0)
    grow = extra > 0
    if not grow.any():
        return problem, anchors
    # the fresh clients alone are no Problem (some clusters may have none): draw their data only
    _, chol = _check_covariances(problem.covariances, k, problem.d)
    fresh_X, fresh_y, fresh_offsets = _draw_data(problem.theta_star, problem.labels[anchors[grow]], extra[grow],
                                                 problem.sigma, chol, problem.dtype, rng)
    order = np.argsort(anchors[grow], kind="stable")  # np.insert needs positions in order
    grown = anchors[grow][order]
    fresh_rows = np.concatenate([np.arange(fresh_offsets[j], fresh_offsets[j + 1]) for j in order])
    positions = np.repeat(problem.offsets[grown + 1], extra[grow][order])
    new_sizes = sizes.copy()
    new_sizes[grown] += extra[grow][order]
    offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(new_sizes, out=offsets[1:])
    point_labels = None
    if problem.point_labels is not None:  # an anchor's fresh points come from its main cluster
        point_labels = np.insert(problem.point_labels, positions, np.repeat(problem.labels[grown], extra[grow][order]))
    grown_problem = Problem(
        X=np.insert(problem.X, positions, fresh_X[fresh_rows], axis=0),
        y=np.insert(problem.y, positions, fresh_y[fresh_rows]),
        offsets=offsets,
        labels=problem.labels,
        theta_star=problem.theta_star,
        sigma=problem.sigma,
        covariances=problem.covariances,
        protocol=problem.protocol,
        point_labels=point_labels,
        _cache=problem.inherited_cache(),  # same truth and labels: not warned about twice
    )
    return grown_problem, anchors
