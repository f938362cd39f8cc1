"""The two-phase study's trial (Su, Xu and Yang 2022): its typed spec and one problem, every method.

:class:`TwoPhaseSpec` is one cell of the grid: the problem (a :class:`mixreg.problems.ProblemSpec`,
stored under :data:`TWO_PHASE_CELLS`) and the methods' settings.

:func:`two_phase_trial` draws an unbalanced clustered problem with anchors, runs

* **FMD -> FedAvg(s)** and **FMD -> FedProx**: :func:`mixreg.algorithms.two_phase.two_phase`, Phase 1
  (federated moment descent, from :math:`\\theta_0 = 0`) then Phase 2 (FedX) from the Phase-1
  centres, every step size :math:`\\eta` of the cell's grid ``steps``; Phase 1 runs once, the
  FedProx call reusing the FedAvg call's Phase 1;
* **IFCA** option I (gradient averaging) in two aggregations, each from random initialisation
  (``ifca_restarts`` starts :math:`N(0, s^2 I)` with :math:`s = \\Delta/\\sqrt{2d}`, so that their
  pairwise distances match the separation) and from the truth, every step size
  :math:`\\gamma = \\eta / 2` of the grid (IFCA's :math:`F_i` is a mean of squares without the
  :math:`\\frac12` of FedX's :math:`\\ell_i`, so :math:`\\gamma = \\eta/2` is the same step on the
  per-point squared error):

  - ``ifca`` / ``oracle``: client-uniform weights :math:`1/m` (Algorithm 2, the paper and the
    official code), from random starts / from :math:`\\theta^*` (the slides' "Oracle");
  - ``ifca_data`` / ``oracle_data``: data weights :math:`n_i/N` (``aggregation="data"``, a
    control: a gradient step on the pooled loss, whose fixed point with the right identities is
    the known-label least squares);

* the two fixed points that IFCA reaches when every identity is right, computed exactly:
  **known-label least squares** (``ls``, data weights) and the **client-weighted least
  squares** (``cwls``, client weights; :mod:`mixreg.baselines`).

Step sizes, one rule for every method
-------------------------------------
Every method runs every step size of the grid and keeps the run with the lowest final value of
**its own training objective** (never a distance to the truth): FedX
:math:`\\frac{1}{2N}\\sum_i \\min_l L_i`, IFCA with client weights
:math:`\\frac1m \\sum_i \\min_j F_i`, IFCA with data weights :math:`\\frac1N \\sum_i n_i \\min_j F_i`;
for IFCA from random starts the choice is over restarts x steps.  Diverged runs are never chosen.
The chosen IFCA runs are rerun alone with a history for their curves.

Phase-2 contraction, measured
-----------------------------
For each local solver's chosen run, the labels are decoded at every Phase-2 iterate.  Round ``t``
maps :math:`\\theta_t` to :math:`\\theta_{t+1}` with the labels decoded at :math:`\\theta_t`, an affine
map whose fixed point :math:`\\theta^\\infty_t` is solved exactly (:class:`LabelMapFixedPoints`), so
the round's contraction :math:`r_t = e'_{t+1} / e_t`, with :math:`e_t = \\max_l \\lVert
\\theta_{l,t} - \\theta^\\infty_{l,t}\\rVert` and :math:`e'_{t+1}` the same for :math:`\\theta_{t+1}`,
is a ratio of measured distances, not a fit.  The measured factor is their geometric mean from
the round ``t0`` at which the labels have settled (they differ from the final decoding on at
most :data:`LABEL_TOLERANCE` of the data from then on) until the iterate sits at its fixed point
up to rounding (:func:`mixreg.trajectories.measured_contraction`; ``nan`` if fewer than
:data:`MIN_WINDOW` rounds).
The labels never all equal the true ones here: a one-point client is misclustered at any
:math:`\\theta` with a probability bounded away from 0, so "from the round the labels are right"
is read as "from the round they stop moving"; the fraction of data they get right is recorded.
Beside it: the spectral radius of the final labels' map, computed from the data
(``rate_exact``), and the prediction made before any run from the step size, the design bounds
``cov_low``/``cov_high``, the design trace of :math:`\\Sigma` (:func:`design_trace`) and the
realised data fractions (:func:`mixreg.theory.sxy_predicted_contraction`; FedAvg(1) and FedProx
only).  The floor is :math:`d(\\theta^\\infty, \\theta^*)` for the final labels' fixed point, and
the rounds to the floor are the first Phase-2 round after which :math:`d(\\theta_t, \\theta^*) \\le 2
d(\\theta^\\infty, \\theta^*)` holds for good.

Per-round curves as columns
---------------------------
A curve :math:`d(\\theta_t, \\theta^*)` is stored at the checkpoint rounds
``0, e, 2e, ..., T`` (``e = checkpoint_every``, ``T = fmd_rounds + fx_rounds``, the last round
always included) as columns ``<method>_err_t<ttt>``, e.g. ``fedavg_err_t005``, with methods
:data:`CURVE_METHODS`.  Rounds count communication rounds: for the two-phase methods, rounds
``0..T1`` are Phase 1, whose "estimate" at round ``t`` is the mean of each final anchor group's
round-``t`` estimates (so round ``T1`` is the Phase-1 output), and round ``T1 + t`` is Phase-2
round ``t``; IFCA runs ``T`` rounds.  :func:`curve_columns` lists the columns of a cell.
"""

from __future__ import annotations

import dataclasses
import time
from typing import ClassVar

import numpy as np

from mixreg.algorithms import RunSizes, trial_bytes
from mixreg.algorithms.fedx import fedx, fedx_linear_rates
from mixreg.algorithms.ifca import ifca, initial_parameters
from mixreg.algorithms.two_phase import two_phase
from mixreg.baselines import client_weighted_least_squares, known_label_least_squares
from mixreg.local_solvers import stacked_update_operators
from mixreg.metrics import matched_max_distance, misclustering_rate
from mixreg.problems import CellSchema, Problem
from mixreg.study import TrialSpec, param
from mixreg.theory import chi_square_from_uniform, sxy_contraction_constant, sxy_nu_terms, sxy_predicted_contraction
from mixreg.trajectories import (
    LABEL_TOLERANCE,
    MIN_WINDOW,
    checkpoint_rounds,
    decoded_labels,
    labels_window,
    measured_contraction,
    phase1_curve,
    pooled_training_loss,
)

__all__ = [
    "TwoPhaseSpec",
    "two_phase_trial",
    "two_phase_memory",
    "curve_columns",
    "LabelMapFixedPoints",
    "design_trace",
    "CURVE_METHODS",
    "IFCA_RUNS",
    "SOLVERS",
    "MIN_WINDOW",
    "LABEL_TOLERANCE",
    "TWO_PHASE_CELLS",
    "PHASE2_DATA",
    "SCARCE_SIZE",
    "split_rounds",
    "phase2_split",
]

#: Phase-2 data of the ablation run (FedAvg only): ``"reuse"`` is the paper's (every round every
#: client's every point, Phase 1's included; slides "Phase 2: FedX + Clustering"); ``"split"`` is
#: sample splitting across rounds, the assumption of IFCA's analysis the slides name as what their
#: analysis removes: each point is used in one Phase-2 round only (:func:`split_rounds`).
PHASE2_DATA = ("reuse", "split")

#: Clients with at most this many points are "data-scarce" in the ablation's clustering-error rates.
SCARCE_SIZE = 2

#: How :func:`two_phase_trial` reads its problem from a cell (``M`` clients, theta* of the
#: Gaussian protocol at minimum separation ``separation``, sizes on ``[1, n_max]``).  Changing
#: a key would change the seeds of every trial.
TWO_PHASE_CELLS = CellSchema(
    keys={"m": "M", "k": "k", "d": "d", "sigma": "sigma", "scale": "separation", "p_min": "p_min",
          "size_law": "size_law", "size_mean": "size_mean", "n_max": "n_max", "cov_low": "cov_low",
          "cov_high": "cov_high", "anchor_mode": "anchor_mode", "n_anchors": "n_anchors",
          "anchor_points": "anchor_points"},
    fixed={"protocol": "gaussian", "n_min": 1})

#: The IFCA runs: method name -> (aggregation, start).
IFCA_RUNS = {
    "ifca": ("clients", "random"),
    "oracle": ("clients", "truth"),
    "ifca_data": ("data", "random"),
    "oracle_data": ("data", "truth"),
}

#: Phase-2 local solvers.
SOLVERS = ("fedavg", "fedprox")

#: Methods whose error curve is stored at the checkpoint rounds.
CURVE_METHODS = (*IFCA_RUNS, *SOLVERS)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TwoPhaseSpec(TrialSpec):
    """One cell of the two-phase study: the problem and every method's settings.

    The problem (:data:`TWO_PHASE_CELLS`): ``M`` clients, :math:`\\theta^*` of the Gaussian
    protocol at minimum separation ``separation`` (the spec's ``scale``), ``p_min``
    (:func:`mixreg.problems.cluster_proportions`), client sizes of ``size_law`` with mean
    ``size_mean`` on ``[1, n_max]``, diagonal covariances in ``[cov_low, cov_high]``, the anchors.
    """

    schema: ClassVar[CellSchema] = TWO_PHASE_CELLS

    fmd_rounds: int = param("Phase-1 rounds T1", low=1)
    fmd_sampling: str = param("Phase-1 data of S_t", choices=("fresh", "reuse"))
    fmd_anchor_sampling: str = param("Phase-1 data of the anchors", choices=("fresh", "reuse"))
    fmd_step_constant: float = param("Phase-1 step constant c of eta = c sqrt(lambda_1)", low=0, low_open=True)
    fmd_clients: int = param("clients |S_t| per Phase-1 round (0 = the method's default)", low=0)
    fx_rounds: int = param("Phase-2 rounds", low=1)
    fedavg_steps: int = param("local steps s of FedAvg(s)", low=1)
    steps: tuple[float, ...] = param("step sizes eta (IFCA gamma = eta / 2)", low=0, low_open=True)
    ifca_restarts: int = param("IFCA random starts", low=1)
    checkpoint_every: int = param("rounds between stored curve points", low=1)
    ablation_data: str = param("Phase-2 data of the paired ablation run of FedAvg (PHASE2_DATA): 'split' runs it "
                               "with sample splitting across rounds beside the reuse run; 'reuse' runs no ablation",
                               default="split", choices=PHASE2_DATA)


def curve_columns(spec, method):
    """``[(round, column name), ...]`` of ``method``'s curve in the records of the cell ``spec``
    (a :class:`TwoPhaseSpec`)."""
    total = spec.fmd_rounds + spec.fx_rounds
    return [(int(t), f"{method}_err_t{t:03d}") for t in checkpoint_rounds(total, spec.checkpoint_every)]


def design_trace(d, cov_low, cov_high):
    """Expected :math:`\\operatorname{tr}\\Sigma_l` of the design: ``d`` times the mean of the
    log-uniform law on ``[cov_low, cov_high]`` (:func:`mixreg.problems.diagonal_covariances`).

    Parameters
    ----------
    d : int
    cov_low, cov_high : float, 0 < cov_low <= cov_high

    Returns
    -------
    float
    """
    if cov_high == cov_low:
        return float(d * cov_low)
    return float(d * (cov_high - cov_low) / np.log(cov_high / cov_low))


class LabelMapFixedPoints:
    r"""Exact fixed points of Phase 2's map with the labels held fixed, for any labels.

    With labels ``z`` model ``l`` follows :math:`\theta_l \mapsto \theta_l + \sum_{i: z_i = l}
    w_i K_i (y_i - X_i\theta_l)` (:mod:`mixreg.algorithms.fedx`), whose fixed point solves
    :math:`\sum_{i: z_i = l} w_i K_i X_i\, \theta = \sum_{i: z_i = l} w_i K_i y_i`.  Each
    client's ``d x d`` block and ``d`` vector are computed once; a call sums them per label.
    For FedAvg(1) and the true labels the fixed point is the known-label least squares.

    Parameters
    ----------
    problem : Problem
    step_size, local_solver, local_steps
        As for :func:`mixreg.algorithms.fedx.fedx`.
    """

    def __init__(self, problem, step_size, local_solver="fedavg", local_steps=1):
        KT = stacked_update_operators(problem, step_size, local_solver, local_steps)
        X, y = problem.X.astype(np.float64), problem.y.astype(np.float64)
        starts = problem.offsets[:-1]
        self.k = problem.k
        self.A = np.add.reduceat(KT[:, :, None] * X[:, None, :], starts, axis=0)  # (m, d, d)
        self.b = np.add.reduceat(KT * y[:, None], starts, axis=0)  # (m, d)

    def __call__(self, labels, start):
        """Fixed point of shape (k, d) for ``labels`` (m,); a model no client chose stays at ``start``."""
        out = np.array(start, dtype=np.float64)
        for l in range(self.k):
            mine = labels == l
            if mine.any():
                out[l] = np.linalg.lstsq(self.A[mine].sum(axis=0), self.b[mine].sum(axis=0), rcond=None)[0]
        return out


def _best(loss, among):
    """Index in ``among`` of the lowest finite loss (ties: the first), or ``None``."""
    values = np.asarray(loss, dtype=np.float64)[among]
    if not np.isfinite(values).any():
        return None
    return int(among[np.nanargmin(values)])


def _curve_record(prefix, rounds, values):
    return {f"{prefix}_err_t{t:03d}": float(values[t]) if t < len(values) else float("nan") for t in rounds}


def _nan_solver_record(name):
    return {f"{name}_{key}": float("nan") for key in
            ("final", "step", "misclustered_data", "window_start", "settle_round", "labels_right", "fixed_point_err",
             "rate_measured", "rate_window", "rate_exact", "rounds_to_floor")}


def _phase2(problem, name, res, steps, local_steps, n_rounds, p1_curve, rounds):
    """Phase 2 with one local solver over the step grid (``res``: :func:`mixreg.algorithms.two_phase.
    two_phase`'s Phase 2, ``None`` if it had no start); the chosen run's curve and contraction."""
    theta_star, k, d = problem.theta_star, problem.k, problem.d
    out = {}
    if res is None:  # Phase 1 could not form k groups: Phase 2 has no start
        out.update(_curve_record(name, rounds, np.concatenate([p1_curve, np.full(n_rounds, np.nan)])))
        out.update(_nan_solver_record(name))
        out[f"{name}_diverged"] = 0
        return out
    out[f"{name}_diverged"] = int(res.diverged.sum())
    b = res.best_replica()  # the lowest final (1/2N) sum_i min_l L_i
    if b is None:
        out.update(_curve_record(name, rounds, np.concatenate([p1_curve, np.full(n_rounds, np.nan)])))
        out.update(_nan_solver_record(name))
        return out
    eta = float(steps[b])
    curve = np.concatenate([p1_curve, res.history.matched_max[1:, b]])
    path = res.history.theta[:, b].astype(np.float64)
    labels = decoded_labels(problem, path)
    t0, settle = labels_window(problem, labels)
    fixed_point = LabelMapFixedPoints(problem, eta, name, local_steps)
    per_round = np.full((n_rounds, k, d), np.nan)
    cache = {}
    for t in range(t0, n_rounds):  # the fixed point of every round's map (cached by labels)
        key = labels[t].tobytes()
        if key not in cache:
            cache[key] = fixed_point(labels[t], np.full((k, d), np.nan))
        per_round[t] = np.where(np.isnan(cache[key]), path[t], cache[key])  # a model no one chose stays
    final_fixed = fixed_point(labels[-1], path[-1])
    floor = float(matched_max_distance(final_fixed, theta_star))
    factor, window = measured_contraction(path, per_round, t0)
    dist = res.history.matched_max[:, b]
    above = np.flatnonzero(~(dist <= 2 * floor))
    reached = float(above[-1] + 1) if above.size else 0.0
    out.update(_curve_record(name, rounds, curve))
    out.update({
        f"{name}_final": float(curve[-1]),
        f"{name}_step": eta,
        f"{name}_misclustered_data": float(res.history.misclustered_data[-1, b]),
        f"{name}_window_start": t0,
        f"{name}_settle_round": settle,
        f"{name}_labels_right": 1.0 - float(res.history.misclustered_data[-1, b]),
        f"{name}_fixed_point_err": floor,
        f"{name}_rate_measured": factor,
        f"{name}_rate_window": window,
        f"{name}_rate_exact": float(np.nanmax(fedx_linear_rates(problem, eta, name, local_steps,
                                                                labels=labels[-1]))),
        f"{name}_rounds_to_floor": reached if reached <= n_rounds else float("nan"),
    })
    return out


def split_rounds(problem, n_rounds, rng):
    """The Phase-2 round of every data row under sample splitting across rounds.

    Each client's points, in a random order, are dealt to the rounds evenly from a random first
    round: point ``j`` of client ``i`` goes to round :math:`(\\lfloor j T / n_i \\rfloor + s_i) \\bmod T`,
    :math:`s_i` uniform on ``[0, T)``.  Every point is used in exactly one round; a client with
    :math:`n_i < T` points takes part in :math:`n_i` rounds only, each with one point.

    Parameters
    ----------
    problem : Problem
    n_rounds : int >= 1
    rng : numpy.random.Generator

    Returns
    -------
    int array of shape (N,)
        The round of each row, in ``[0, n_rounds)``.

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=4, k=2, n=6, d=2, sigma=0.1, scale=1.0, rng=np.random.default_rng(0))
    >>> r = split_rounds(pb, 3, np.random.default_rng(1))
    >>> [np.bincount(r[pb.offsets[i]:pb.offsets[i + 1]], minlength=3).tolist() for i in range(2)]
    [[2, 2, 2], [2, 2, 2]]
    """
    sizes = problem.sizes.astype(np.int64)
    owner = np.repeat(np.arange(problem.m), sizes)
    position = np.empty(problem.N, dtype=np.int64)
    order = np.lexsort((rng.random(problem.N), owner))  # a random order within each client
    position[order] = np.arange(problem.N) - np.repeat(problem.offsets[:-1], sizes)
    shift = rng.integers(0, n_rounds, size=problem.m)
    return ((position * n_rounds) // sizes[owner] + shift[owner]) % n_rounds


def phase2_split(problem, start, steps, n_rounds, rng, *, local_solver="fedavg", local_steps=1):
    """Phase 2 without data reuse: round ``t`` decodes and updates on the points of round ``t`` only.

    Round ``t`` is one round of :func:`mixreg.algorithms.fedx.fedx` on the sub-problem of the
    points :func:`split_rounds` deals to it (the clients holding none sit the round out; the
    weights :math:`w_i = n_{i,t} / \\sum_{i'} n_{i',t}` are the paper's data weights on the data
    used), over the step grid from one start.  The step is chosen as for the reuse run: the
    lowest final training loss :math:`\\frac1N\\sum_i \\min_l L_i` on all the data.

    Parameters
    ----------
    problem : Problem
    start : ndarray of shape (k, d)
        Phase 1's output (the reuse run's start).
    steps : ndarray of shape (B,)
    n_rounds : int >= 1
    rng : numpy.random.Generator
        Deals the points to the rounds.

    Returns
    -------
    theta : ndarray of shape (k, d)
        The chosen step's final models (``nan`` if every step diverged).
    step : float
    diverged : int
        Steps whose run diverged.
    """
    rnd = split_rounds(problem, n_rounds, rng)
    owner = np.repeat(np.arange(problem.m), problem.sizes)
    B = len(steps)
    theta = np.repeat(np.asarray(start, dtype=np.float64)[None], B, axis=0)
    diverged = np.zeros(B, dtype=bool)
    for t in range(n_rounds):
        rows = np.flatnonzero(rnd == t)  # client after client: rows are stored by client
        if rows.size == 0:
            continue
        clients, counts = np.unique(owner[rows], return_counts=True)
        sub = Problem.from_arrays(problem.X[rows], problem.y[rows], counts, problem.labels[clients],
                                  problem.theta_star, sigma=problem.sigma, covariances=problem.covariances,
                                  protocol=problem.protocol)
        res = fedx(sub, theta, steps, local_solver=local_solver, local_steps=local_steps, n_rounds=1)
        new = np.asarray(res.theta, dtype=np.float64)
        diverged |= np.asarray(res.diverged) | ~np.isfinite(new).all(axis=(1, 2))
        theta = np.where(diverged[:, None, None], theta, new)
    loss = np.where(diverged, np.nan, pooled_training_loss(problem, theta))
    if not np.isfinite(loss).any():
        return np.full(theta.shape[1:], np.nan), float("nan"), int(diverged.sum())
    b = int(np.nanargmin(loss))
    return theta[b], float(steps[b]), int(diverged.sum())


def _clustering_errors(problem, theta, prefix):
    """The decoder's clustering error at ``theta`` on each client's full data: all clients and the
    data-scarce ones (``n_i <= SCARCE_SIZE``), best relabelling."""
    if not np.isfinite(theta).all():
        return {f"{prefix}_miscl": float("nan"), f"{prefix}_miscl_scarce": float("nan")}
    assign = decoded_labels(problem, np.asarray(theta, dtype=np.float64)[None])[0]
    scarce = problem.sizes <= SCARCE_SIZE
    out = {f"{prefix}_miscl": float(misclustering_rate(assign, problem.labels, problem.k))}
    out[f"{prefix}_miscl_scarce"] = float(misclustering_rate(assign[scarce], problem.labels[scarce], problem.k)) \
        if scarce.any() else float("nan")
    return out


def _ablation(problem, run, p1, spec, steps, rng):
    """The paired ablation: FedAvg's reuse run (the study's) against the same Phase 2 with the data
    of :data:`PHASE2_DATA` ``spec.ablation_data``, from the same Phase-1 output."""
    star = problem.theta_star
    res = run.phase2
    b = None if res is None else res.best_replica()
    reuse = np.full((problem.k, problem.d), np.nan) if b is None else np.asarray(res.theta[b], dtype=np.float64)
    out = {"reuse_final": float(matched_max_distance(reuse, star)) if np.isfinite(reuse).all() else float("nan")}
    out.update(_clustering_errors(problem, reuse, "reuse"))
    start = time.perf_counter()
    if res is None:
        split, step, diverged = np.full_like(reuse, np.nan), float("nan"), 0
    else:
        split, step, diverged = phase2_split(problem, p1.centres, steps, spec.fx_rounds, rng,
                                             local_steps=spec.fedavg_steps)
    out.update(split_final=float(matched_max_distance(split, star)) if np.isfinite(split).all() else float("nan"),
               split_step=step, split_diverged=diverged, split_time=time.perf_counter() - start,
               scarce_clients=float(np.mean(problem.sizes <= SCARCE_SIZE)))
    out.update(_clustering_errors(problem, split, "split"))
    return out


def _ifca_runs(problem, spec, init_ss, total, rounds):
    """The four IFCA runs (two aggregations x two starts), each over the step grid."""
    d = problem.d
    R = spec.ifca_restarts
    gammas = np.asarray(spec.steps, dtype=np.float64) / 2  # gamma = eta / 2 (see the module docstring)
    L = gammas.size
    inits = initial_parameters(problem, R, "gaussian", rng=np.random.default_rng(init_ss),
                               scale=spec.problem.scale / np.sqrt(2 * d))
    theta0 = np.concatenate([np.repeat(inits, L, axis=0), np.repeat(problem.theta_star[None], L, axis=0)])
    starts = {"random": np.arange(R * L), "truth": R * L + np.arange(L)}
    out, diverged = {}, 0
    for aggregation in ("clients", "data"):
        res = ifca(problem, theta0, np.tile(gammas, R + 1), n_rounds=total, aggregation=aggregation)
        diverged += int(res.diverged.sum())
        loss = res.train_loss if aggregation == "clients" else pooled_training_loss(problem, res.theta)
        loss = np.where(res.diverged, np.nan, loss)
        names = [name for name, (agg, _) in IFCA_RUNS.items() if agg == aggregation]
        chosen = {name: _best(loss, starts[IFCA_RUNS[name][1]]) for name in names}
        keep = [name for name in names if chosen[name] is not None]
        if keep:  # rerun the chosen runs alone, with a history, for their curves
            idx = np.array([chosen[name] for name in keep])
            again = ifca(problem, theta0[idx], res.step_sizes[idx], n_rounds=total, aggregation=aggregation,
                         history=True)
        for name in names:
            if chosen[name] is None:
                curve, step = np.full(total + 1, np.nan), float("nan")
            else:
                j = keep.index(name)
                curve, step = again.history.matched_max[:, j], float(res.step_sizes[chosen[name]])
            out.update(_curve_record(name, rounds, curve))
            out[f"{name}_final"] = float(curve[-1]) if len(curve) == total + 1 else float("nan")
            out[f"{name}_step"] = step
    out["ifca_diverged"] = diverged
    return out


def two_phase_memory(spec):
    """Upper estimate of :func:`two_phase_trial`'s peak bytes from the cell's sizes (nothing is
    allocated; :func:`mixreg.algorithms.trial_bytes`): the problem with its anchors and the
    decoded labels of every round, then Phase 1 with its history, Phase 2 over the step grid with
    its history, the losses of its path (:func:`mixreg.trajectories.decoded_labels`: the path's
    rounds as replicas),
    the IFCA runs (``(ifca_restarts + 1) x len(steps)`` replicas), the least-squares baselines
    and :class:`LabelMapFixedPoints` (every row's ``d x d`` block in float64, ``8 N d^2``), one
    after the other (besides :data:`mixreg.study.TRIAL_OVERHEAD`).

    Parameters
    ----------
    spec : TwoPhaseSpec

    Returns
    -------
    float
    """
    T1, T2, L, R = spec.fmd_rounds, spec.fx_rounds, len(spec.steps), spec.ifca_restarts
    spec = spec.problem
    anchors = spec.k if spec.anchor_mode == "per_cluster" else spec.n_anchors
    runs = [("moment_descent", RunSizes(m=anchors, N=spec.max_rows, d=spec.d, k=spec.k, history_rounds=T1)),
            ("fedx", RunSizes.of(spec, replicas=L, history_rounds=T2)),
            ("training_loss", RunSizes.of(spec, replicas=T2 + 1)),  # decoded_labels along the path
            ("ifca", RunSizes.of(spec, replicas=(R + 1) * L, history_rounds=T1 + T2)),
            ("least_squares", RunSizes.of(spec)),
            8.0 * spec.max_rows * spec.d * (spec.d + 3)]  # LabelMapFixedPoints: every row's d x d block
    return trial_bytes([spec], runs) + 8.0 * 2 * (T1 + T2 + 1) * spec.m


def two_phase_trial(spec, seed):
    """One trial of the two-phase experiment (see the module docstring).

    Parameters
    ----------
    spec : TwoPhaseSpec
        Problem (``spec.problem``): ``m`` clients (the cell's ``M``), ``k, d, sigma``, ``scale``
        (the minimum distance ``separation`` of the Gaussian-protocol :math:`\\theta^*`),
        ``p_min`` (:func:`mixreg.problems.cluster_proportions`), ``size_law, size_mean, n_max``
        (:func:`mixreg.problems.client_sizes`, ``n_min = 1``), ``cov_low, cov_high``
        (:func:`mixreg.problems.diagonal_covariances`; both 1 for the identity).  Anchors:
        ``anchor_mode, n_anchors`` (ignored for ``"per_cluster"``), ``anchor_points``.
        Phase 1: ``fmd_rounds, fmd_sampling, fmd_anchor_sampling, fmd_step_constant, fmd_clients``
        (0 = default).  Phase 2: ``fx_rounds, fedavg_steps``.  Step sizes: ``steps``, the grid
        of :math:`\\eta` (FedX; IFCA runs :math:`\\gamma = \\eta/2`).  IFCA: ``ifca_restarts``.
        Output: ``checkpoint_every``.  Ablation: ``ablation_data`` (``"split"``: FedAvg's Phase 2
        again from the same Phase-1 output with sample splitting across rounds, :func:`phase2_split`;
        records ``reuse_final``, ``split_final``, ``split_step``, ``split_diverged``, the clustering
        error rates ``reuse_miscl``, ``split_miscl`` and their data-scarce versions ``*_miscl_scarce``
        (clients of at most :data:`SCARCE_SIZE` points), ``scarce_clients``).
    seed : numpy.random.SeedSequence
        Spawns four streams: data, anchors, Phase 1, IFCA initialisations; the ablation's dealing
        of points to rounds spawns a fifth from the seed's entropy (so the other four are unchanged).

    Returns
    -------
    dict of scalars
    """
    data_ss, anchor_ss, fmd_ss, init_ss = seed.spawn(4)
    pb = spec.problem
    problem, anchors = pb.with_anchors(pb.generate(np.random.default_rng(data_ss)), np.random.default_rng(anchor_ss))
    k, d, theta_star = pb.k, pb.d, problem.theta_star
    T1, T2 = spec.fmd_rounds, spec.fx_rounds
    total = T1 + T2
    rounds = checkpoint_rounds(total, spec.checkpoint_every)
    steps = np.asarray(spec.steps, dtype=np.float64)
    s = spec.fedavg_steps
    fractions = problem.cluster_sizes / problem.N
    trace = design_trace(d, float(pb.cov_low), float(pb.cov_high))
    out = {}

    # Phase 1, then Phase 2 with each local solver: the FedAvg call runs Phase 1, the FedProx call
    # starts from its output (Phase 1 runs once)
    p1 = None
    for name in SOLVERS:
        local_steps = s if name == "fedavg" else 1
        run = two_phase(problem, anchors, k, steps, rng=np.random.default_rng(fmd_ss), phase1_rounds=T1,
                        sampling=spec.fmd_sampling, anchor_sampling=spec.fmd_anchor_sampling,
                        step_constant=spec.fmd_step_constant,
                        phase1_options=dict(clients_per_round=spec.fmd_clients or None), phase1_history=True,
                        local_solver=name, local_steps=local_steps, phase2_rounds=T2, history=True, phase1=p1)
        if p1 is None:
            p1 = run.phase1
            start = time.perf_counter()
            p1_curve = phase1_curve(p1.history, p1.clustering.groups, theta_star)
            out.update(fmd_err=float(p1_curve[-1]), fmd_clustering=p1.clustering.method,
                       fmd_threshold_groups=p1.clustering.n_threshold_groups,
                       fmd_clients_per_round=p1.clients_per_round, fmd_anchor_pairs=p1.anchor_pairs,
                       fmd_anchor_clusters=int(np.unique(problem.labels[anchors]).size),
                       fmd_time=p1.wall_time + time.perf_counter() - start)
        if name == "fedavg" and spec.ablation_data == "split":
            split_rng = np.random.default_rng(np.random.SeedSequence(seed.entropy, spawn_key=seed.spawn_key + (99,)))
            out.update(_ablation(problem, run, p1, spec, steps, split_rng))
        start = time.perf_counter()
        out.update(_phase2(problem, name, run.phase2, steps, local_steps, T2, p1_curve, rounds))
        spent = 0.0 if run.phase2 is None else run.phase2.wall_time
        del run  # one solver's Phase 2, with its history, at a time
        eta = out[f"{name}_step"]
        predictable = np.isfinite(eta) and local_steps == 1  # derived for FedAvg(1) and FedProx
        theory = dict(sizes=problem.sizes, cov_trace=trace) if name == "fedprox" else {}
        out[f"{name}_rate_predicted"] = float(sxy_predicted_contraction(
            eta, fractions, float(pb.cov_low), float(pb.cov_high), name, **theory)) if predictable \
            else float("nan")
        out[f"{name}_C1_predicted"] = float(sxy_contraction_constant(eta, float(pb.cov_low), name, **theory)) \
            if predictable else float("nan")
        out[f"{name}_rate_linear"] = float(np.nanmax(fedx_linear_rates(problem, eta, name, local_steps))) \
            if np.isfinite(eta) else float("nan")
        out[f"{name}_time"] = spent + time.perf_counter() - start

    # IFCA: two aggregations x (random starts, the truth) x step sizes
    start = time.perf_counter()
    out.update(_ifca_runs(problem, spec, init_ss, total, rounds))
    out["ifca_time"] = time.perf_counter() - start

    # the exact fixed points with the true labels, and the theory's inputs
    w = problem.sizes / problem.N
    nu1, nu2 = sxy_nu_terms(problem.sizes, d, k)
    out.update(
        ls_err=float(matched_max_distance(known_label_least_squares(problem), theta_star)),
        cwls_err=float(matched_max_distance(client_weighted_least_squares(problem), theta_star)),
        p_min_realised=problem.p_min,
        p_min_data=float(fractions.min()),
        p_max_data=float(fractions.max()),
        chi2=chi_square_from_uniform(w),
        nu1=nu1,
        nu2=nu2,
        cov_trace=trace,
        N=problem.N,
        single_point_clients=float(np.mean(problem.sizes == 1)),
        separation_realised=problem.separation,
    )
    return out
