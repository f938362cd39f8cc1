"""The Phase-1 study's trial: federated moment descent in its own regime, its typed spec and trial.

:class:`Phase1Spec` is one cell of the grid: the problem (a :class:`mixreg.problems.ProblemSpec`
stored under :data:`PHASE1_CELLS`) and Phase 1's settings.

Su, Xu and Yang's Phase 1 (:func:`mixreg.algorithms.moment_descent.moment_descent`) is claimed
to work with anchors of only :math:`n_A = \\tilde O(k)` points, from any initialisation, once
there are :math:`M \\ge p_{\\min}^{-2}\\tilde\\Omega(d)` other clients (slides, "Theoretical
Guarantee for Phase 1"):

.. math::

    d(\\hat\\theta, \\theta^*) = \\min_\\pi \\max_l \\lVert \\hat\\theta_{\\pi(l)} - \\theta^*_l
    \\rVert_2 \\le \\epsilon .

:func:`phase1_trial` draws one problem in that regime and runs Phase 1 on nested subsets of its
clients:

* ``M_max`` non-anchor clients holding **two points each** (the least a client needs to offer
  a pair), labels i.i.d. with cluster 0 of probability ``p_min`` (:func:`mixreg.problems.
  cluster_proportions`), :math:`\\theta^*` of the ``"gaussian"`` protocol at minimum separation
  :math:`\\Delta`, features :math:`N(0, I_d)`, noise :math:`N(0, \\sigma^2)`;
* anchors topped up to ``n_A`` points (:func:`mixreg.problems.add_anchors`): either ``n_anchors``
  clients drawn uniformly at random **without looking at the labels** (conference version,
  ``anchor_mode="random"``) or one recruited client per cluster (journal version,
  ``"per_cluster"``);
* one initialisation far from every truth (:func:`far_init`), shared by all anchors;
* for each value ``c`` of the cell's grid ``cs``, Phase 1 on the anchors and the first
  :math:`M = \\lceil c\\, d / p_{\\min}^2 \\rceil` non-anchor clients (:func:`clients_for`;
  the grid is in the theorem's unit :math:`d / p_{\\min}^2`), so the runs of one trial are
  nested, with common data;
* local least squares on each anchor's own points (minimum-norm when :math:`n_A < d`,
  :func:`mixreg.local_solvers.local_least_squares`), grouped by the same step 7
  (:func:`mixreg.algorithms.moment_descent.cluster_anchors`): what an anchor could do alone.

The records hold errors only; success at an accuracy target is decided in the study's summary,
which states the target.  :func:`mixreg.stats.crossing` and :func:`mixreg.stats.fit_clients_needed`
turn success rates over the grid of ``M`` into the number of clients needed and its exponents.
"""

from __future__ import annotations

import dataclasses
import time
from typing import ClassVar

import numpy as np

from mixreg.validation import check_int, check_real
from mixreg.algorithms import RunSizes, trial_bytes
from mixreg.algorithms.moment_descent import cluster_anchors, moment_descent
from mixreg.local_solvers import local_least_squares
from mixreg.metrics import matched_max_distance
from mixreg.problems import CellSchema, Problem
from mixreg.study import TrialSpec, param
from mixreg.trajectories import phase1_curve

__all__ = [
    "Phase1Spec",
    "PHASE1_CELLS",
    "phase1_memory",
    "clients_for",
    "c_label",
    "far_init",
    "nested_problem",
    "anchor_prefix",
    "anchor_least_squares",
    "stays_below_from",
    "phase1_trial",
]

#: How :func:`phase1_trial` reads its problem from a cell.  ``m`` is every client drawn
#: (the anchors are drawn among them): ``clients_for(max(cs), d, p_min) + M_A``.  Non-anchor
#: clients hold ``n = 2`` points; ``n_A`` is the anchors' size.  Changing a key changes every seed.
PHASE1_CELLS = CellSchema(
    keys={"m": "m", "k": "k", "d": "d", "sigma": "sigma", "scale": "separation", "p_min": "p_min",
          "anchor_mode": "anchor_mode", "n_anchors": "n_anchors", "anchor_points": "n_A"},
    fixed={"protocol": "gaussian", "n": 2})


@dataclasses.dataclass(frozen=True, kw_only=True)
class Phase1Spec(TrialSpec):
    """One cell of the Phase-1 study: the problem (:data:`PHASE1_CELLS`) and Phase 1's settings.

    The problem holds every client drawn, ``m = clients_for(max(cs), d, p_min) + M_A``; Phase 1
    runs on nested subsets of them, one per grid value of ``cs``.
    """

    schema: ClassVar[CellSchema] = PHASE1_CELLS

    cs: tuple[float, ...] = param("grid of M in the theorem's unit: M = c d / p_min^2", low=0, low_open=True,
                                  distinct=True)
    far: float = param("distance of the initialisation from every theta*_l, in units of Delta", low=0)
    fmd_rounds: int = param("Phase-1 rounds T", low=1)
    fmd_step_constant: float = param("Phase-1 step constant c of eta = c sqrt(lambda_1)", low=0, low_open=True)
    fmd_sampling: str = param("data of S_t", choices=("reuse", "fresh"))
    part: str = param("which part of the study the cell belongs to: 'ab' (error against n_A and d; clients "
                      "needed: Phase 1 at every grid value of cs) or 'c' (Phase 1 at every n_A of nA_grid)",
                      default="ab", choices=("ab", "c"))
    nA_grid: tuple[int, ...] | None = param(
        "anchor sizes n_A run on nested prefixes of the anchors' points, at the single grid value cs[0] "
        "(part 'c'; part 'ab' runs the problem's anchor_points only, and the study sets it to (n_A,) so that "
        "every cell has the same keys)", default=None, low=2, distinct=True)

    def check(self):
        """``cs`` increasing, and the problem's ``m`` clients enough for the anchors and the
        ``clients_for(max(cs), d, p_min)`` non-anchor clients of the largest grid value."""
        if list(self.cs) != sorted(self.cs):
            raise ValueError(f"cs must be increasing positive grid values, got {list(self.cs)}")
        problem = self.problem
        if self.part == "c":
            if self.nA_grid is None or list(self.nA_grid) != sorted(self.nA_grid) or len(self.cs) != 1:
                raise ValueError(f"a part-c cell needs an increasing nA_grid and a single grid value cs, got {self.nA_grid} "
                                 f"and cs={list(self.cs)}")
            if self.nA_grid[-1] != problem.anchor_points or problem.anchor_mode != "per_cluster":
                raise ValueError(f"nA_grid must end at the problem's anchor_points={problem.anchor_points} with "
                                 f"one anchor per cluster, got {list(self.nA_grid)} ({problem.anchor_mode!r})")
        M = clients_for(self.cs[-1], problem.d, problem.p_min)
        n_anchors = problem.k if problem.anchor_mode == "per_cluster" else problem.n_anchors
        if M + n_anchors > problem.m:
            raise ValueError(f"m={problem.m} clients cannot hold M={M} non-anchor clients and {n_anchors} anchors "
                             f"(cs up to {self.cs[-1]:g})")


def clients_for(c, d, p_min):
    """Non-anchor clients :math:`M = \\lceil c\\, d / p_{\\min}^2 \\rceil` at grid value ``c``.

    >>> clients_for(16, 8, 0.25)
    2048
    """
    return int(np.ceil(float(c) * int(d) / float(p_min) ** 2 - 1e-9))


def c_label(c):
    """Column suffix of grid value ``c``: ``c_label(16.0) == "c16"``, ``c_label(2.5) == "c2.5"``."""
    return f"c{float(c):g}"


def far_init(theta_star, distance, rng):
    """An initialisation at distance at least ``distance`` from every true parameter.

    :math:`\\theta_0 = \\bar\\theta^* + \\text{distance}\\cdot u` with :math:`\\bar\\theta^*` the mean
    of the :math:`\\theta^*_l` and ``u`` a uniformly random unit vector orthogonal to their
    differences :math:`\\theta^*_l - \\bar\\theta^*`, so that exactly

    .. math::

        \\lVert \\theta_0 - \\theta^*_l \\rVert^2 = \\text{distance}^2 +
        \\lVert \\theta^*_l - \\bar\\theta^* \\rVert^2 \\ge \\text{distance}^2 .

    The truth only places the start (the experimenter's choice of a bad start); Phase 1 never
    sees it.  The whole displacement lies outside the affine hull of the truths, the part of
    the error that the subspace step of Phase 1 must find from the data.

    Parameters
    ----------
    theta_star : ndarray of shape (k, d), d >= k
    distance : float >= 0
    rng : numpy.random.Generator

    Returns
    -------
    theta0 : ndarray of shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> star = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    >>> t0 = far_init(star, 5.0, np.random.default_rng(0))
    >>> np.round(np.linalg.norm(t0 - star, axis=1) ** 2, 6).tolist()  # 25 + 0.5
    [25.5, 25.5]
    """
    star = np.asarray(theta_star, dtype=np.float64)
    if star.ndim != 2 or not np.isfinite(star).all():
        raise ValueError(f"theta_star must be a finite (k, d) array, got shape {star.shape}")
    k, d = star.shape
    if d < k:
        raise ValueError(f"far_init needs d >= k (a direction orthogonal to the k - 1 differences), got k={k}, d={d}")
    distance = check_real("distance", distance, low=0.0)
    centre = star.mean(axis=0)
    diffs = (star - centre).T  # (d, k): spans at most k - 1 dimensions
    q, r = np.linalg.qr(diffs)
    basis = q[:, np.abs(np.diag(r)) > 1e-12 * max(1.0, np.abs(r).max())]
    while True:  # a Gaussian draw falls in a (k-1)-dim subspace with probability 0
        g = rng.standard_normal(d)
        g -= basis @ (basis.T @ g)
        norm = np.linalg.norm(g)
        if norm > 1e-12:
            return centre + distance * g / norm


def nested_problem(problem, anchors, M):
    """The anchors and the first ``M`` non-anchor clients of ``problem`` (in client order).

    Labels are i.i.d., so the first ``M`` non-anchor clients are a random sample of them and
    the problems for ``M_1 < M_2`` are nested.

    Parameters
    ----------
    problem : Problem
    anchors : int array of shape (M_A,)
    M : int in [1, m - M_A]

    Returns
    -------
    sub : Problem
    sub_anchors : ndarray of shape (M_A,), int64
        Indices of the same anchors (same order) in ``sub``.
    """
    anchors = np.asarray(anchors, dtype=np.int64)
    others = np.setdiff1d(np.arange(problem.m), anchors)
    M = check_int("M", M, low=1, high=others.size)
    keep = np.sort(np.concatenate([anchors, others[:M]]))
    starts, sizes = problem.offsets[keep], problem.sizes[keep]
    rows = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + np.arange(sizes.sum())
    sub = Problem.from_arrays(problem.X[rows], problem.y[rows], sizes, problem.labels[keep], problem.theta_star,
                              sigma=problem.sigma, covariances=problem.covariances, protocol=problem.protocol)
    return sub, np.searchsorted(keep, anchors).astype(np.int64)


def anchor_prefix(problem, anchors, n_A):
    """``problem`` with each anchor cut to its first ``n_A`` points (every other client whole).

    An anchor's points are i.i.d., so its first ``n_A`` points are a random sample of them and the
    problems for ``n_A < n_A'`` are nested: part (c) runs Phase 1 on every grid value of ``n_A``
    on common data (a paired comparison across ``n_A``).

    Parameters
    ----------
    problem : Problem
    anchors : int array of shape (M_A,)
    n_A : int in [2, min anchor size]

    Returns
    -------
    Problem
        The same clients in the same order (the anchors' indices are unchanged).
    """
    anchors = np.asarray(anchors, dtype=np.int64)
    n_A = check_int("n_A", n_A, low=2, high=int(problem.sizes[anchors].min()))
    sizes = problem.sizes.copy()
    sizes[anchors] = n_A
    rows = np.concatenate([np.arange(problem.offsets[i], problem.offsets[i] + sizes[i]) for i in range(problem.m)])
    return Problem.from_arrays(problem.X[rows], problem.y[rows], sizes, problem.labels, problem.theta_star,
                               sigma=problem.sigma, covariances=problem.covariances, protocol=problem.protocol)


def stays_below_from(curve, level):
    """The first round from which ``curve`` stays below ``level`` to its end (``nan`` if it ends above).

    Rounds needed to reach an accuracy: a curve that dips below and comes back up has not reached it.

    >>> stays_below_from([5.0, 2.0, 0.4, 0.6, 0.3, 0.2], 0.5)
    4.0
    >>> import math; math.isnan(stays_below_from([5.0, 0.4, 0.6], 0.5))
    True
    """
    curve = np.asarray(curve, dtype=float)
    above = np.flatnonzero(~(curve < level))  # nan counts as above
    if above.size and above[-1] == curve.size - 1:
        return float("nan")
    return float(above[-1] + 1) if above.size else 0.0


def anchor_least_squares(problem, anchors):
    """Each anchor's own least-squares estimate, minimum-norm when it has fewer points than ``d``.

    Returns
    -------
    ndarray of shape (M_A, d)
        :math:`X_a^+ y_a` (:func:`mixreg.local_solvers.local_least_squares`, ``"min_norm"``).
        With :math:`n_A < d` it lies in the ``n_A``-dimensional row space of :math:`X_a`, so
        its error is at least the norm of the truth's component outside it, about
        :math:`\\sqrt{1 - n_A/d}\\,\\lVert\\theta^*\\rVert` for Gaussian features.
    """
    anchors = np.asarray(anchors, dtype=np.int64)
    sizes = problem.sizes[anchors]
    rows = np.concatenate([np.arange(problem.offsets[a], problem.offsets[a + 1]) for a in anchors])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    return local_least_squares(problem.X[rows].astype(np.float64), problem.y[rows].astype(np.float64), offsets)


def phase1_memory(spec):
    """Upper estimate of :func:`phase1_trial`'s peak bytes from the cell's sizes (nothing is
    allocated; :func:`mixreg.algorithms.trial_bytes`): the problem with its anchors and one
    nested copy of its rows (:func:`nested_problem`), then Phase 1 with its history on it, or
    the anchors' least squares (besides :data:`mixreg.study.TRIAL_OVERHEAD`).

    Parameters
    ----------
    spec : Phase1Spec

    Returns
    -------
    float
    """
    T = spec.fmd_rounds
    spec = spec.problem
    nested = (np.dtype(spec.dtype).itemsize * spec.d + 24) * spec.max_rows
    anchors = spec.k if spec.anchor_mode == "per_cluster" else spec.n_anchors
    runs = [("moment_descent", RunSizes(m=anchors, N=spec.max_rows, d=spec.d, k=spec.k, history_rounds=T)),
            ("least_squares", RunSizes.of(spec))]
    return trial_bytes([spec], runs) + float(nested)


def phase1_trial(spec, seed):
    """One trial of the Phase-1 experiment (see the module docstring).

    Parameters
    ----------
    spec : Phase1Spec
        Problem (``spec.problem``, stored under :data:`PHASE1_CELLS`): ``m, k, d, sigma``,
        ``scale`` (the separation), ``p_min, anchor_mode, n_anchors`` (ignored for
        ``"per_cluster"``), ``anchor_points`` (the cell's ``n_A``).  Method: ``cs`` (tuple, the grid
        of :math:`M p_{\\min}^2 / d`), ``far`` (distance of :math:`\\theta_0` from the truths in
        units of :math:`\\Delta`), ``fmd_rounds``, ``fmd_step_constant``, ``fmd_sampling``
        (data of :math:`S_t`; the anchors always reuse their ``n_A`` points, drawing
        ``n_A // 2`` disjoint pairs afresh every round).
    seed : numpy.random.SeedSequence
        Spawns: data, anchors, initialisation, and one Phase-1 stream per grid value.

    Returns
    -------
    dict of scalars
        Independent of ``M``: ``separation_realised``, ``theta_norm_max`` (the error of the
        estimate 0), ``init_distance`` (:math:`\\min_l \\lVert\\theta_0-\\theta^*_l\\rVert /
        \\Delta`), ``anchor_clusters`` (clusters holding an anchor, a diagnostic read from the
        labels after the anchors were drawn), ``ls_err`` (step 7 on the anchors' least-squares
        estimates, matched max distance), ``ls_anchor_err_med`` / ``ls_anchor_err_max``
        (:math:`\\lVert\\hat\\theta_a - \\theta^*_{z_a}\\rVert` over anchors).  Per grid value
        ``c`` (suffix :func:`c_label`): ``M_<c>``, ``fmd_err_<c>`` (the Phase-1 output),
        ``fmd_err_mid_<c>`` (at round ``T // 2``, with the final groups),
        ``anchor_err_med_<c>`` / ``anchor_err_max_<c>``, ``fmd_method_<c>`` (step 7's rule),
        ``fmd_time_<c>``.  Part (c) cells (``part == "c"``; one grid value ``c``): instead of the
        per-``c`` columns, ``M``, per ``n_A`` of the grid ``err_nA<n_A>`` (the Phase-1 output's
        error, anchors cut to their first ``n_A`` points, :func:`anchor_prefix`) and
        ``diverged_nA<n_A>`` (anchors frozen by the blow-up guard), and ``curve_t<tt>``: the
        error at every round ``t`` of the run with the largest ``n_A`` (:func:`phase1_curve`).
    """
    data_ss, anchor_ss, init_ss, fmd_ss = seed.spawn(4)
    cell, spec = spec, spec.problem  # the typed cell (Phase 1's settings) and its problem
    cs = tuple(float(c) for c in cell.cs)  # increasing, and m holds the anchors and M of max(cs): Phase1Spec.check
    k, d, p_min = spec.k, spec.d, spec.p_min
    Ms = [clients_for(c, d, p_min) for c in cs]
    T = cell.fmd_rounds

    problem, anchors = spec.with_anchors(spec.generate(np.random.default_rng(data_ss)),
                                         np.random.default_rng(anchor_ss))
    star = problem.theta_star
    delta = problem.separation
    theta0 = far_init(star, cell.far * delta, np.random.default_rng(init_ss))
    truth = star[problem.labels[anchors]]

    ls = anchor_least_squares(problem, anchors)
    ls_anchor = np.linalg.norm(ls - truth, axis=1)
    out = dict(
        separation_realised=float(delta),
        theta_norm_max=float(np.linalg.norm(star, axis=1).max()),
        init_distance=float(np.linalg.norm(theta0 - star, axis=1).min() / delta),
        anchor_clusters=int(np.unique(problem.labels[anchors]).size),
        ls_err=float(matched_max_distance(cluster_anchors(ls, k).centres, star)),
        ls_anchor_err_med=float(np.median(ls_anchor)),
        ls_anchor_err_max=float(ls_anchor.max()),
    )
    if cell.part == "c":
        out.update(_nA_runs(cell, problem, anchors, Ms[0], theta0, star, fmd_ss))
        return out
    for c, M, ss in zip(cs, Ms, fmd_ss.spawn(len(cs))):
        start = time.perf_counter()
        sub, sub_anchors = nested_problem(problem, anchors, M)
        res = moment_descent(sub, sub_anchors, k, rng=np.random.default_rng(ss), n_rounds=T, init=theta0,
                             sampling=cell.fmd_sampling, anchor_sampling="reuse",
                             step_constant=cell.fmd_step_constant, history=True)
        curve = phase1_curve(res.history, res.clustering.groups, star)
        per_anchor = np.linalg.norm(res.anchor_theta - truth, axis=1)
        tag = c_label(c)
        out.update({
            f"M_{tag}": M,
            f"fmd_err_{tag}": float(matched_max_distance(res.centres, star)),
            f"fmd_err_mid_{tag}": float(curve[T // 2]) if curve.size > T // 2 else float("nan"),
            f"anchor_err_med_{tag}": float(np.median(per_anchor)),
            f"anchor_err_max_{tag}": float(per_anchor.max()),
            f"fmd_method_{tag}": res.clustering.method,
            f"fmd_time_{tag}": time.perf_counter() - start,
        })
    return out


def _nA_runs(cell, problem, anchors, M, theta0, star, fmd_ss):
    """Part (c): Phase 1 with ``M`` clients and the anchors cut to each ``n_A`` of the grid."""
    T = cell.fmd_rounds
    sub, sub_anchors = nested_problem(problem, anchors, M)
    out = dict(M=M)
    grid = tuple(int(n) for n in cell.nA_grid)
    for n_A, ss in zip(grid, fmd_ss.spawn(len(grid))):
        res = moment_descent(anchor_prefix(sub, sub_anchors, n_A), sub_anchors, problem.k,
                             rng=np.random.default_rng(ss), n_rounds=T, init=theta0, sampling=cell.fmd_sampling,
                             anchor_sampling="reuse", step_constant=cell.fmd_step_constant,
                             history=n_A == grid[-1])
        out[f"err_nA{n_A}"] = float(matched_max_distance(res.centres, star))
        out[f"diverged_nA{n_A}"] = int(res.nonfinite.sum())
        if n_A == grid[-1]:
            curve = phase1_curve(res.history, res.clustering.groups, star)
            out.update({f"curve_t{t:02d}": float(curve[t]) if t < curve.size else float("nan")
                        for t in range(T + 1)})
    return out
