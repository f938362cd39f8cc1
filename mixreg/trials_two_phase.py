"""Trial function of the two-phase experiment (Su, Xu and Yang 2022): one problem, every method.

:func:`two_phase_trial` draws an unbalanced clustered problem with anchors, runs

* **FMD -> FedAvg(s)** and **FMD -> FedProx**: Phase 1 (:func:`mixreg.algorithms.moment_descent.
  moment_descent`, from :math:`\\theta_0 = 0`) then Phase 2 (:func:`mixreg.algorithms.fedx.fedx`) from the
  Phase-1 centres;
* **IFCA** from random initialisation (option I, gradient averaging, as in the IFCA paper's
  synthetic experiment; initial models :math:`N(0, s^2 I)` with :math:`s = \\Delta/\\sqrt{2d}`, so
  that their pairwise distances match the separation), best of ``ifca_restarts`` restarts x step
  sizes chosen by the final training loss;
* **IFCA oracle**: IFCA started at :math:`\\theta^*` (the slides' "Oracle"), step size chosen by
  the final training loss;
* **known-label least squares** (the floor no method can beat on average),

and returns scalars only (the engine's records hold scalars).

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

import time

import numpy as np

from .baselines import known_label_least_squares
from .algorithms.fedx import fedx, fedx_linear_rates
from .algorithms.ifca import ifca, initial_parameters
from .metrics import matched_max_distance
from .algorithms.moment_descent import moment_descent
from .problems import CellSchema, ProblemSpec, cluster_proportions
from .theory import chi_square_from_uniform, sxy_nu_terms

__all__ = [
    "two_phase_trial",
    "cluster_proportions",
    "checkpoint_rounds",
    "curve_columns",
    "phase1_curve",
    "geometric_rate",
    "CURVE_METHODS",
    "TWO_PHASE_CELLS",
]

#: How :func:`two_phase_trial` reads its problem from a cell (``M`` clients, theta* of the
#: Gaussian protocol at minimum separation ``separation``, sizes on ``[1, n_max]``).  Changing
#: a key would change the seeds of every trial.
TWO_PHASE_CELLS = CellSchema(
    keys={"m": "M", "k": "k", "d": "d", "sigma": "sigma", "scale": "separation", "p_min": "p_min",
          "size_law": "size_law", "size_mean": "size_mean", "n_max": "n_max", "cov_low": "cov_low",
          "cov_high": "cov_high", "anchor_mode": "anchor_mode", "n_anchors": "n_anchors",
          "anchor_points": "anchor_points"},
    fixed={"protocol": "gaussian", "n_min": 1})

#: Methods whose error curve is stored at the checkpoint rounds.
CURVE_METHODS = ("ifca", "oracle", "fedavg", "fedprox")


def checkpoint_rounds(n_rounds, every):
    """``0, every, 2 every, ...`` up to ``n_rounds``, always ending with ``n_rounds``."""
    rounds = list(range(0, n_rounds + 1, every))
    if rounds[-1] != n_rounds:
        rounds.append(n_rounds)
    return np.array(rounds, dtype=np.int64)


def curve_columns(cell, method):
    """``[(round, column name), ...]`` of ``method``'s curve in a cell's records."""
    total = int(cell["fmd_rounds"]) + int(cell["fx_rounds"])
    return [(int(t), f"{method}_err_t{t:03d}") for t in checkpoint_rounds(total, int(cell["checkpoint_every"]))]


def phase1_curve(history, groups, theta_star):
    """``d(centres_t, theta*)`` for every Phase-1 round, with the final anchor groups.

    Parameters
    ----------
    history : MomentDescentHistory
    groups : int array of shape (M_A,)
        Final groups (``-1`` = left out).
    theta_star : ndarray of shape (k, d)

    Returns
    -------
    ndarray of shape (T1 + 1,)
        ``nan`` where a group is empty.
    """
    k = theta_star.shape[0]
    theta = history.theta  # (T1 + 1, M_A, d)
    centres = np.full((theta.shape[0], k, theta.shape[2]), np.nan)
    for j in range(k):
        members = groups == j
        if members.any():
            centres[:, j] = theta[:, members].mean(axis=1)
    return matched_max_distance(centres, theta_star)


def geometric_rate(theta_path, *, fraction=0.5, tiny=1e-9):
    """Measured per-round contraction of an iteration, from its path of iterates.

    With :math:`e_t = \\max_l \\lVert \\theta_{l,t} - \\theta_{l,T} \\rVert` (distance to the last
    iterate, a proxy of the fixed point), the rate is :math:`\\exp` of the least-squares slope of
    :math:`\\log e_t` over rounds ``1 <= t <= fraction * T`` with
    :math:`e_t > \\text{tiny} \\cdot e_0` (round 0 is skipped: labels still settle).

    Parameters
    ----------
    theta_path : ndarray of shape (T + 1, k, d)
    fraction : float in (0, 1)
    tiny : float

    Returns
    -------
    float
        ``nan`` with fewer than 3 usable rounds.
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


def _curve_record(prefix, rounds, values):
    return {f"{prefix}_err_t{t:03d}": float(values[t]) if t < len(values) else float("nan") for t in rounds}


def two_phase_trial(cell, seed):
    """One trial of the two-phase experiment (see the module docstring).

    Parameters
    ----------
    cell : dict
        Problem: ``M, k, d, sigma, separation`` (minimum distance of the Gaussian-protocol
        :math:`\\theta^*`), ``p_min`` (:func:`cluster_proportions`), ``size_law, size_mean,
        n_max`` (:func:`mixreg.problems.client_sizes`, ``n_min = 1``), ``cov_low, cov_high``
        (:func:`mixreg.problems.diagonal_covariances`; both 1 for the identity).
        Anchors: ``anchor_mode, n_anchors`` (ignored for ``"per_cluster"``), ``anchor_points``.
        Phase 1: ``fmd_rounds, fmd_sampling, fmd_anchor_sampling, fmd_step_constant, fmd_clients``
        (0 = default).
        Phase 2: ``fx_rounds, fedavg_steps, fedavg_step, fedprox_step``.
        IFCA: ``ifca_restarts`` and ``ifca_steps`` (comma-separated step sizes; every restart
        and the oracle start run with each, the lowest final training loss is kept).  Output:
        ``checkpoint_every``.
    seed : numpy.random.SeedSequence
        Spawns four streams: data, anchors, Phase 1, IFCA initialisations.

    Returns
    -------
    dict of scalars
    """
    data_ss, anchor_ss, fmd_ss, init_ss = seed.spawn(4)
    spec = ProblemSpec.from_cell(cell, TWO_PHASE_CELLS)
    problem, anchors = spec.with_anchors(spec.generate(np.random.default_rng(data_ss)),
                                         np.random.default_rng(anchor_ss))
    k, d, separation, theta_star = spec.k, spec.d, spec.scale, problem.theta_star
    T1, T2 = int(cell["fmd_rounds"]), int(cell["fx_rounds"])
    total = T1 + T2
    rounds = checkpoint_rounds(total, int(cell["checkpoint_every"]))
    out = {}

    # Phase 1, then Phase 2 with each local solver
    start = time.perf_counter()
    p1 = moment_descent(problem, anchors, k, rng=np.random.default_rng(fmd_ss), n_rounds=T1,
                        sampling=cell["fmd_sampling"], anchor_sampling=cell["fmd_anchor_sampling"],
                        step_constant=float(cell["fmd_step_constant"]),
                        clients_per_round=int(cell["fmd_clients"]) or None, history=True)
    p1_curve = phase1_curve(p1.history, p1.clustering.groups, theta_star)
    out.update(fmd_err=float(p1_curve[-1]), fmd_clustering=p1.clustering.method,
               fmd_threshold_groups=p1.clustering.n_threshold_groups,
               fmd_clients_per_round=p1.clients_per_round, fmd_anchor_pairs=p1.anchor_pairs,
               fmd_anchor_clusters=int(np.unique(problem.labels[anchors]).size),
               fmd_time=time.perf_counter() - start)
    solvers = {"fedavg": (float(cell["fedavg_step"]), int(cell["fedavg_steps"])),
               "fedprox": (float(cell["fedprox_step"]), 1)}
    for name, (eta, steps) in solvers.items():
        start = time.perf_counter()
        predicted = float(np.nanmax(fedx_linear_rates(problem, eta, name, steps)))
        if np.isfinite(p1.centres).all():
            res = fedx(problem, p1.centres, eta, local_solver=name, local_steps=steps, n_rounds=T2, history=True)
            curve = np.concatenate([p1_curve, res.history.matched_max[1:, 0]])
            final, rate = float(curve[-1]), geometric_rate(res.history.theta[:, 0])
            miscl = float(res.history.misclustered_data[-1, 0])
            diverged = bool(res.diverged[0])
        else:  # Phase 1 could not form k groups: Phase 2 has no start
            curve = np.concatenate([p1_curve, np.full(T2, np.nan)])
            final = rate = miscl = float("nan")
            diverged = False
        out.update(_curve_record(name, rounds, curve))
        out.update({f"{name}_final": final, f"{name}_rate": rate, f"{name}_rate_linear": predicted,
                    f"{name}_misclustered_data": miscl, f"{name}_diverged": diverged,
                    f"{name}_time": time.perf_counter() - start})

    # IFCA: random restarts x step sizes, and the oracle start x step sizes, in one batch
    start = time.perf_counter()
    R = int(cell["ifca_restarts"])
    steps = np.asarray(cell["ifca_steps"], dtype=np.float64)
    L = steps.size
    inits = initial_parameters(problem, R, "gaussian", rng=np.random.default_rng(init_ss),
                               scale=separation / np.sqrt(2 * d))
    theta0 = np.concatenate([np.repeat(inits, L, axis=0), np.repeat(theta_star[None], L, axis=0)])
    res = ifca(problem, theta0, np.tile(steps, R + 1), n_rounds=total, history=True)
    for name, replicas in (("ifca", np.arange(R * L)), ("oracle", R * L + np.arange(L))):
        b = res.best_replica(among=replicas)  # the run a user would keep: lowest training loss
        curve = np.full(total + 1, np.nan) if b is None else res.history.matched_max[:, b]
        out.update(_curve_record(name, rounds, curve))
        out[f"{name}_final"] = float(curve[-1]) if len(curve) == total + 1 else float("nan")
        out[f"{name}_step"] = float("nan") if b is None else float(res.step_sizes[b])
    out.update(ifca_diverged=int(res.diverged.sum()), ifca_time=time.perf_counter() - start)

    # floor and theory inputs
    w = problem.sizes / problem.N
    nu1, nu2 = sxy_nu_terms(problem.sizes, d, k)
    out.update(
        ls_err=float(matched_max_distance(known_label_least_squares(problem), theta_star)),
        p_min_realised=problem.p_min,
        p_min_data=float((problem.cluster_sizes / problem.N).min()),
        chi2=chi_square_from_uniform(w),
        nu1=nu1,
        nu2=nu2,
        N=problem.N,
        single_point_clients=float(np.mean(problem.sizes == 1)),
        separation_realised=problem.separation,
    )
    return out
