"""Trial function of the experiment on the terms of Su-Xu-Yang's :math:`\\nu`, one at a time.

The Phase-2 theorem's floor is driven by

.. math::

    \\nu = \\underbrace{\\sum_i k\\, w_i\\, e^{-C_3 n_i}}_{\\nu_1\\ \\text{(small clients)}}
        + \\underbrace{C_4 \\sqrt{\\frac{d k \\log k}{M} (\\chi^2(w) + 1)}}_{\\nu_2\\
          \\text{(uniform deviation)}}, \\qquad w_i = n_i / N,

and the global theorem's final error by :math:`\\nu \\log(1/\\nu) / p_{min}`.  To see each term
act alone, the client sizes of a cell are not drawn: they are a deterministic
:class:`SizeDesign`, so that ``M``, ``N``, :math:`\\chi^2(w)`, :math:`\\nu` and every cluster's
data are the same in every trial of the cell and known before any trial runs.  (A
:class:`mixreg.problems.ProblemSpec` draws sizes i.i.d. from a law, so ``N`` and
:math:`\\chi^2(w)` would vary from trial to trial; that is why this module builds its problem from
the generators :func:`~mixreg.problems.make_theta_star`,
:func:`~mixreg.problems.diagonal_covariances` and
:func:`~mixreg.problems.make_problem_from_parameters` directly.)

A design has ``M`` ordinary clients holding ``N`` points, split over the clusters *stratified*:
cluster 0 gets ``round(p_min M)`` clients, the others share the rest, and every cluster holds
the same mean size ``N / M`` (so its data ``N_l`` are fixed too).  Within a cluster:

* the nearest integer to ``tiny_fraction * c_l`` of *tiny* clients of ``n_tiny`` points;
* the remaining (*bulk*) clients share the rest of the cluster's data: equally (sizes differ by
  at most one) when ``chi2_target == 0``; otherwise ``q`` of them are *big* and the others hold
  ``n_low`` points, with the number ``q`` of big clients chosen so that the cluster's
  bulk sizes' :math:`\\chi^2` is closest to ``chi2_target`` (the realised value is reported).

On top, ``k`` anchor clients (one per cluster, the journal version of Phase 1) of exactly
``anchor_points`` points each: they are clients of the problem like any other (Phase 2 uses
their data; they count in ``M_total``, ``N_total`` and in :math:`w`).

:func:`two_phase_nu_trial` runs FMD -> FedAvg(s) and FMD -> FedProx
(:func:`mixreg.algorithms.two_phase.two_phase`: Phase 1 from :math:`\\theta_0 = 0`, then Phase 2
from the Phase-1 centres until it stops moving, as the two-phase study runs them) and
known-label least squares (the oracle), and records the realised design quantities next to the
errors.  Its cell is a :class:`NuTrialSpec`: the design, the problem's other parameters and the
methods' settings.  It is not a :class:`mixreg.study.TrialSpec` (a :class:`ProblemSpec` and a
method) because the problem of a cell is not a ``ProblemSpec``: its sizes are designed, not drawn.
"""

from __future__ import annotations

import dataclasses
import time
from functools import cached_property

import numpy as np

from mixreg.algorithms import RunSizes, trial_bytes
from mixreg.algorithms.two_phase import two_phase
from mixreg.baselines import known_label_least_squares
from mixreg.metrics import best_permutation, matched_max_distance, oracle_ls_floor
from mixreg.problems import (
    ProblemSpec,
    cluster_proportions,
    diagonal_covariances,
    make_problem_from_parameters,
    make_theta_star,
)
from mixreg.study import Spec, param
from mixreg.theory import chi_square_from_uniform, sxy_nu_terms

__all__ = [
    "SizeDesign",
    "NuTrialSpec",
    "DESIGN_KEYS",
    "TRIAL_KEYS",
    "nu_problem",
    "two_phase_nu_trial",
    "two_phase_nu_memory",
    "design_quantities",
]

#: The cell keys that define a :class:`SizeDesign` (the design's field names).
DESIGN_KEYS = ("M", "N", "k", "p_min", "tiny_fraction", "n_tiny", "chi2_target", "n_low", "anchor_points")


def _split(total, weights):
    """Integers proportional to ``weights`` summing exactly to ``total`` (largest remainders)."""
    weights = np.asarray(weights, dtype=np.float64)
    raw = total * weights / weights.sum()
    out = np.floor(raw).astype(np.int64)
    order = np.argsort(-(raw - out), kind="stable")
    out[order[: total - out.sum()]] += 1
    return out


def _equal(count, total):
    """``count`` sizes summing to ``total``, as equal as integers allow (larger first)."""
    sizes = np.full(count, total // count, dtype=np.int64)
    sizes[: total - sizes.sum()] += 1
    return sizes


def _spread(count, total, n_low, chi2):
    """Bulk sizes: ``q`` big clients share what ``count - q`` clients of ``n_low`` leave (as equally
    as integers allow), with ``q`` chosen so that the chi-square of the sizes is closest to ``chi2``."""
    q = np.arange(1, count + 1, dtype=np.int64)
    big = total - (count - q) * n_low
    q, big = q[big >= q * n_low], big[big >= q * n_low]  # the big clients must not be smaller
    b, r = big // q, big % q
    squares = (count - q) * n_low**2 + r * (b + 1) ** 2 + (q - r) * b**2
    chi2_of_q = count * squares / total**2 - 1.0
    best = int(np.argmin(np.abs(chi2_of_q - chi2)[::-1]))  # ties: the most big clients
    q = int(q[::-1][best])
    return np.concatenate([_equal(q, total - (count - q) * n_low), np.full(count - q, n_low, dtype=np.int64)])


@dataclasses.dataclass(frozen=True, kw_only=True)
class SizeDesign(Spec):
    """Deterministic client sizes and labels of one cell (see the module docstring).

    Attributes
    ----------
    M : int >= 2k
        Ordinary clients (the ``k`` anchors come on top).
    N : int >= M
        Their points.
    k : int >= 2
        Clusters.
    p_min : float in (0, 1/k]
        Fraction of the ordinary clients in cluster 0 (:func:`mixreg.problems.cluster_proportions`;
        the realised ``p_min`` counts the anchors too).
    tiny_fraction : float in [0, 1)
        Fraction of each cluster's clients that are tiny.
    n_tiny : int >= 1
        Points of a tiny client.
    chi2_target : float >= 0
        Target chi-square of the sizes of each cluster's bulk clients; 0 gives equal bulk sizes
        (the realised chi-square of the whole problem's weights, anchors included, is what
        :func:`design_quantities` reports).
    n_low : int >= 1
        Size of the small bulk clients when ``chi2_target > 0`` (ignored otherwise); below the bulk's
        mean size.
    anchor_points : int >= 2
        Points of each of the ``k`` anchors.

    Examples
    --------
    >>> design = SizeDesign(M=100, N=800, k=2, p_min=0.3, tiny_fraction=0.5, anchor_points=20)
    >>> labels, sizes = design.labels_and_sizes()
    >>> int(sizes.size), int(sizes.sum()), int((sizes == 1).sum())
    (102, 840, 50)
    """

    M: int = param("ordinary clients (the k anchors come on top), at least 2k", low=4)
    N: int = param("points of the ordinary clients", low=1, at_least="M", why="every client needs a point")
    k: int = param("clusters", low=2)
    p_min: float = param("fraction of the ordinary clients in cluster 0, at most 1/k", low=0, low_open=True,
                         high=0.5)
    tiny_fraction: float = param("fraction of each cluster's clients that are tiny", default=0.0, low=0, high=1,
                                 high_open=True)
    n_tiny: int = param("points of a tiny client", default=1, low=1)
    chi2_target: float = param("target chi-square of each cluster's bulk sizes (0: equal sizes)", default=0.0, low=0)
    n_low: int = param("size of the small bulk clients when chi2_target > 0", default=1, low=1)
    anchor_points: int = param("points of each of the k anchors", low=2)

    def check(self):
        """``M >= 2k``, ``p_min <= 1/k``, and every cluster's bulk buildable (raises naming the field)."""
        if self.M < 2 * self.k:
            raise ValueError(f"M must be an integer >= 2k = {2 * self.k} (two clients per cluster), got {self.M!r} "
                             f"(k={self.k})")
        cluster_proportions(self.k, self.p_min)  # p_min in (0, 1/k]
        for l, (count, data, tiny) in enumerate(zip(self.cluster_counts, self.cluster_data, self.tiny_counts)):
            bulk, rest = count - tiny, data - tiny * self.n_tiny
            if bulk < 1 or rest < bulk:
                raise ValueError(
                    f"cluster {l}: {tiny} tiny clients of n_tiny={self.n_tiny} points leave {bulk} bulk clients "
                    f"{rest} points, fewer than one each; lower tiny_fraction or n_tiny, or raise N")
            if self.chi2_target > 0 and self.n_low * bulk >= rest:
                raise ValueError(
                    f"n_low={self.n_low} must be below the bulk mean size of cluster {l}, {rest / bulk:.3g}, "
                    "when chi2_target > 0 (the big clients must be bigger)")

    @classmethod
    def from_cell(cls, cell):
        """The design of a cell (its :data:`DESIGN_KEYS`)."""
        missing = [key for key in DESIGN_KEYS if key not in cell]
        if missing:
            raise ValueError(f"cell must hold the design key(s) {missing}, got keys {sorted(cell)}")
        return cls(**{key: cell[key] for key in DESIGN_KEYS})

    @cached_property
    def cluster_counts(self):
        """Ordinary clients per cluster, int array of shape (k,)."""
        counts = np.empty(self.k, dtype=np.int64)
        counts[0] = max(1, int(round(self.p_min * self.M)))
        counts[1:] = _split(self.M - counts[0], np.ones(self.k - 1))
        return counts

    @cached_property
    def cluster_data(self):
        """Ordinary points per cluster (proportional to the clients), int array of shape (k,)."""
        return _split(self.N, self.cluster_counts)

    @cached_property
    def tiny_counts(self):
        """Tiny clients per cluster, int array of shape (k,)."""
        return np.rint(self.tiny_fraction * self.cluster_counts).astype(np.int64)

    def cluster_sizes(self, l):
        """Sizes of cluster ``l``'s ordinary clients: tiny ones first, then the bulk (int64)."""
        count, data = int(self.cluster_counts[l]), int(self.cluster_data[l])
        tiny = int(self.tiny_counts[l])
        rest = data - tiny * self.n_tiny
        bulk = (_equal(count - tiny, rest) if self.chi2_target == 0
                else _spread(count - tiny, rest, self.n_low, self.chi2_target))
        return np.concatenate([np.full(tiny, self.n_tiny, dtype=np.int64), bulk])

    def labels_and_sizes(self):
        """``(labels, sizes)``, int arrays of shape (M + k,): the anchors of clusters ``0..k-1``
        first (client ``l`` is cluster ``l``'s anchor), then the ordinary clients cluster by cluster."""
        sizes = [np.full(self.k, self.anchor_points, dtype=np.int64)]
        labels = [np.arange(self.k, dtype=np.int64)]
        for l in range(self.k):
            s = self.cluster_sizes(l)
            sizes.append(s)
            labels.append(np.full(s.size, l, dtype=np.int64))
        return np.concatenate(labels), np.concatenate(sizes)


#: The cell keys after the design's (:data:`DESIGN_KEYS`): the problem's other parameters, then
#: the methods' settings, in the order trials.csv has always had them (a trial's seed hashes them).
TRIAL_KEYS = ("d", "sigma", "separation", "cov_low", "cov_high", "fmd_rounds", "fmd_sampling", "fmd_anchor_sampling",
              "fmd_step_constant", "fx_rounds", "fx_tol", "fedavg_steps", "fedavg_step", "fedprox_step")


@dataclasses.dataclass(frozen=True, kw_only=True)
class NuTrialSpec(Spec):
    """One cell of the nu-terms study: a :class:`SizeDesign`, the problem's other parameters and
    the two-phase methods' settings (what :func:`two_phase_nu_trial` runs).

    Its engine cell (:meth:`to_cell`) is the design's keys (:data:`DESIGN_KEYS`) then
    :data:`TRIAL_KEYS`, flat; :meth:`from_cell` is the inverse.
    """

    design: SizeDesign
    d: int = param("dimension", low=1)
    sigma: float = param("noise level sigma", low=0)
    separation: float = param("minimum separation Delta of theta*", low=0, low_open=True)
    cov_low: float = param("smallest eigenvalue of the feature covariances", low=0, low_open=True)
    cov_high: float = param("largest eigenvalue of the feature covariances", low=0, low_open=True,
                            at_least="cov_low")
    fmd_rounds: int = param("Phase-1 rounds T1", low=1)
    fmd_sampling: str = param("Phase-1 data of S_t", choices=("fresh", "reuse"))
    fmd_anchor_sampling: str = param("Phase-1 data of the anchors", choices=("fresh", "reuse"))
    fmd_step_constant: float = param("Phase-1 step constant c", low=0, low_open=True)
    fx_rounds: int = param("Phase-2 rounds at most", low=1)
    fx_tol: float = param("Phase-2 stopping tolerance", low=0)
    fedavg_steps: int = param("local steps s of FedAvg(s)", low=1)
    fedavg_step: float = param("FedAvg step size eta", low=0, low_open=True)
    fedprox_step: float = param("FedProx parameter eta", low=0, low_open=True)

    def to_cell(self):
        """The engine cell: ``{**design.to_cell(), d, sigma, ...}`` (:data:`TRIAL_KEYS`)."""
        return {**self.design.to_cell(), **{key: getattr(self, key) for key in TRIAL_KEYS}}

    @classmethod
    def from_cell(cls, cell):
        """The spec a cell made by :meth:`to_cell` stands for."""
        return cls(design=SizeDesign.from_cell(cell), **{key: cell[key] for key in TRIAL_KEYS})


def design_quantities(design, *, d, sigma):
    """What a design fixes, computed from its sizes alone (unit constants ``C3 = C4 = 1``).

    Parameters
    ----------
    design : SizeDesign
    d : int
    sigma : float

    Returns
    -------
    dict
        ``M_total, N_total`` (anchors included), ``p_min_realised`` (smallest fraction of
        clients, anchors included), ``N_min`` (smallest cluster's points), ``chi2`` of the
        weights :math:`w_i = n_i / N_{total}`, ``nu1, nu2, nu`` (:func:`mixreg.theory.sxy_nu_terms`),
        ``tiny_data`` (fraction of the points on tiny clients), ``mean_size`` (ordinary
        clients) and ``ls_floor`` (:func:`mixreg.metrics.oracle_ls_floor` of the smallest
        cluster, identity covariance: the known-label least-squares scale).
    """
    labels, sizes = design.labels_and_sizes()
    k = design.k
    per_cluster = np.bincount(labels, weights=sizes, minlength=k).astype(np.int64)
    nu1, nu2 = sxy_nu_terms(sizes, d, k)
    return dict(
        M_total=int(sizes.size),
        N_total=int(sizes.sum()),
        p_min_realised=float(np.bincount(labels, minlength=k).min() / sizes.size),
        N_min=int(per_cluster.min()),
        chi2=chi_square_from_uniform(sizes / sizes.sum()),
        nu1=nu1,
        nu2=nu2,
        nu=nu1 + nu2,
        tiny_data=float(design.tiny_counts.sum() * design.n_tiny / sizes.sum()),
        mean_size=float(design.N / design.M),
        ls_floor=float(oracle_ls_floor(sigma, d, per_cluster).max()),
    )


def nu_problem(design, *, d, sigma, separation, cov_low, cov_high, rng):
    """Draw a problem with the design's exact sizes and labels, clients in random order.

    Draws, in order: :math:`\\theta^*` (``"gaussian"`` protocol, minimum separation
    ``separation``), the order of the clients, the covariances (diagonal, spectrum log-uniform
    in ``[cov_low, cov_high]``; none when both are 1), the data.

    Returns
    -------
    problem : Problem
    anchors : int array of shape (k,)
        ``anchors[l]`` is the index of cluster ``l``'s anchor client.
    """
    labels, sizes = design.labels_and_sizes()
    k = design.k
    theta_star = make_theta_star(k, d, separation, protocol="gaussian", rng=rng)
    order = rng.permutation(labels.size)
    cov = None
    if not cov_low == cov_high == 1.0:
        cov = diagonal_covariances(k, d, rng=rng, low=cov_low, high=cov_high)
    problem = make_problem_from_parameters(theta_star, labels[order], sizes[order], sigma, rng=rng, covariances=cov,
                                           protocol="gaussian")
    position = np.empty(labels.size, dtype=np.int64)
    position[order] = np.arange(labels.size)
    return problem, position[:k]


def _misclustered_data(problem, theta, assignments):
    """Fraction of the points on clients decoded to a model other than their true cluster's
    match (models matched to the truth by the max-distance permutation)."""
    perm = best_permutation(theta, problem.theta_star, objective="max")
    if np.any(perm < 0):
        return float("nan")
    wrong = assignments != perm[problem.labels]
    return float(problem.sizes[wrong].sum() / problem.N)


def two_phase_nu_memory(spec):
    """Upper estimate of :func:`two_phase_nu_trial`'s peak bytes from the spec's sizes (nothing is
    allocated; :func:`mixreg.algorithms.trial_bytes`): the problem of ``M + k`` clients and ``N``
    points plus the anchors' (the design's sizes and labels, ``24 (M + k)``), Phase 1, one
    Phase-2 replica, known-label least squares."""
    design = spec.design
    M, N, k = int(design.M), int(design.N), int(design.k)
    clients, rows = M + k, N + k * int(design.anchor_points)
    problem = ProblemSpec(m=clients, k=k, d=spec.d, n=-(-rows // clients), sigma=spec.sigma,
                          scale=spec.separation, protocol="gaussian", cov_low=spec.cov_low,
                          cov_high=spec.cov_high)
    runs = [("moment_descent", RunSizes(m=k, N=problem.max_rows, d=problem.d, k=k)), ("fedx", RunSizes.of(problem)),
            ("least_squares", RunSizes.of(problem))]
    return trial_bytes([problem], runs) + 24.0 * clients


def two_phase_nu_trial(spec, seed):
    """One trial: a problem of the spec's :class:`SizeDesign`, the two-phase methods, the oracle.

    Parameters
    ----------
    spec : NuTrialSpec
        The design; the problem: ``d, sigma, separation, cov_low, cov_high``; Phase 1:
        ``fmd_rounds, fmd_sampling, fmd_anchor_sampling, fmd_step_constant``; Phase 2:
        ``fx_rounds`` (at most), ``fx_tol`` (stop once no coordinate moves more than this in a
        round), ``fedavg_steps, fedavg_step, fedprox_step``.
    seed : numpy.random.SeedSequence
        Spawns two streams: the problem, Phase 1.

    Returns
    -------
    dict of scalars
        ``fmd_err``; per method ``fedavg`` and ``fedprox``: ``<m>_final`` (matched max distance
        to :math:`\\theta^*`), ``<m>_misclustered_data``, ``<m>_rounds``, ``<m>_converged``,
        ``<m>_diverged``, ``<m>_time``; ``ls_err`` (known-label least squares); the realised
        ``M_total, N_total, p_min_realised, N_min, chi2, nu1, nu2, nu`` of the problem drawn.
    """
    data_ss, fmd_ss = seed.spawn(2)
    design = spec.design
    d = spec.d
    problem, anchors = nu_problem(design, d=d, sigma=spec.sigma, separation=spec.separation,
                                  cov_low=spec.cov_low, cov_high=spec.cov_high,
                                  rng=np.random.default_rng(data_ss))
    theta_star, k = problem.theta_star, design.k
    out = {}

    solvers = {"fedavg": (spec.fedavg_step, spec.fedavg_steps),
               "fedprox": (spec.fedprox_step, 1)}
    p1 = None  # the FedAvg call runs Phase 1, the FedProx call starts from its output
    for name, (eta, steps) in solvers.items():
        run = two_phase(problem, anchors, k, eta, rng=np.random.default_rng(fmd_ss),
                        phase1_rounds=spec.fmd_rounds, sampling=spec.fmd_sampling,
                        anchor_sampling=spec.fmd_anchor_sampling, step_constant=spec.fmd_step_constant,
                        local_solver=name, local_steps=steps, phase2_rounds=spec.fx_rounds,
                        tol=spec.fx_tol, phase1=p1)
        if p1 is None:
            p1 = run.phase1
            start = time.perf_counter()
            out.update(fmd_err=float(matched_max_distance(p1.centres, theta_star)) if run.started else float("nan"),
                       fmd_clustering=p1.clustering.method, fmd_time=p1.wall_time + time.perf_counter() - start)
        start = time.perf_counter()
        res = run.phase2
        if res is not None:
            theta = res.theta[0].astype(np.float64)
            final = float(matched_max_distance(theta, theta_star))
            record = {f"{name}_final": final,
                      f"{name}_misclustered_data": _misclustered_data(problem, theta, res.assignments[0]),
                      f"{name}_rounds": int(res.n_rounds),
                      f"{name}_converged": res.stop_reason.startswith("converged"),
                      f"{name}_diverged": bool(res.diverged[0])}
        else:  # Phase 1 gave no k centres: Phase 2 has no start
            record = {f"{name}_final": float("nan"), f"{name}_misclustered_data": float("nan"),
                      f"{name}_rounds": 0, f"{name}_converged": False, f"{name}_diverged": False}
        record[f"{name}_time"] = (0.0 if res is None else res.wall_time) + time.perf_counter() - start
        out.update(record)

    nu1, nu2 = sxy_nu_terms(problem.sizes, d, k)
    out.update(
        ls_err=float(matched_max_distance(known_label_least_squares(problem), theta_star)),
        M_total=problem.m,
        N_total=problem.N,
        p_min_realised=problem.p_min,
        N_min=int(problem.cluster_sizes.min()),
        chi2=chi_square_from_uniform(problem.sizes / problem.N),
        nu1=nu1,
        nu2=nu2,
        nu=nu1 + nu2,
    )
    return out
