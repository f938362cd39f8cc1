"""Trial functions of the IFCA mechanism experiments: the basin, the misclustering exponent and the
one-round contraction (IFCA, linear model, Sec. 5.1; NeurIPS Theorem 1 and the proof's Lemma 1).

Every trial draws a balanced problem with ``theta*`` of the ``"gaussian"`` protocol (minimum
separation exactly ``Delta``, :data:`MECHANISM_CELLS`), runs :func:`mixreg.algorithms.ifca.ifca`
and returns scalars:

* :func:`ifca_basin_trial`: ``T`` rounds from ``theta_j = theta*_j + alpha Delta u_j`` with a
  random or an adversarial direction ``u_j`` (:func:`closeness_init`), with the resampling
  scheme and without it (full batch), step size ``gamma = c1 / p``;
* :func:`ifca_misclustering_trial`: one resampled round from ``theta = theta*`` and the number of
  workers its identity estimate sent to the wrong model;
* :func:`ifca_contraction_trial`: one resampled round from a random direction at ``alpha Delta``,
  the per-cluster contraction ratio, the round's misclustered workers, the exact misclustering
  probability of that geometry and Theorem 1's right-hand side.

The identity estimates of a resampled round are the driver's own: :func:`identity_round` runs
the round and recovers the identity subset the driver drew (the same generator state through the
driver's split), then applies the driver's kernels (:func:`mixreg.algorithms.ifca.training_loss`:
prediction GEMM, per-client losses, lowest-index argmin) to it, and checks the result against the
round's recorded objective.
"""

from __future__ import annotations

import numpy as np

from .algorithms import RunSizes, trial_bytes
from .algorithms.ifca import CLOSENESS_DIRECTIONS, closeness_init, identity_round, ifca
from .baselines import known_label_least_squares
from .metrics import matched_max_distance, oracle_ls_floor
from .problems import CellSchema, ProblemSpec
from .theory import (
    ResidualPair,
    ifca_step_size,
    lemma1_exponent,
    misclustering_probability,
    population_basin_edge,
)

__all__ = [
    "DIRECTIONS",
    "MECHANISM_CELLS",
    "ifca_basin_trial",
    "ifca_misclustering_trial",
    "ifca_contraction_trial",
    "mechanism_memory",
]

#: Directions of the initial displacement ``theta_j - theta*_j`` (see
#: :func:`mixreg.algorithms.ifca.closeness_init`).
DIRECTIONS = CLOSENESS_DIRECTIONS

#: How the trials read their problem from a cell: ``delta`` is the exact minimum separation of
#: the ``"gaussian"`` protocol; labels are balanced and contiguous (``p = 1/k`` exactly).
MECHANISM_CELLS = CellSchema(keys={"m": "m", "k": "k", "n": "n", "d": "d", "sigma": "sigma", "scale": "delta"},
                             fixed={"protocol": "gaussian"})


def _spec(cell):
    return ProblemSpec.from_cell(cell, MECHANISM_CELLS)


def mechanism_memory(cell):
    """Upper estimate of the peak bytes of a trial of :func:`ifca_basin_trial`,
    :func:`ifca_misclustering_trial` or :func:`ifca_contraction_trial` from the cell's sizes
    (nothing is allocated; :func:`mixreg.algorithms.trial_bytes`): the problem, one IFCA replica
    with resampling (the identity round copies the identity subset once more, ``s N d``), and
    known-label least squares."""
    spec = _spec(cell)
    sizes = RunSizes.of(spec, replicas=1, resample=True, history_rounds=1)
    rows = np.dtype(spec.dtype).itemsize * spec.max_rows * spec.d
    return trial_bytes([spec], [("ifca", sizes), ("least_squares", RunSizes.of(spec))]) + rows


def _same_index_distance(theta, theta_star):
    """``max_j ||theta_j - theta*_j||`` (no permutation: the distance Theorem 1 tracks)."""
    return float(np.linalg.norm(np.asarray(theta, dtype=np.float64) - theta_star, axis=-1).max())


def ifca_basin_trial(cell, seed):
    """One trial of the basin experiment: IFCA from ``alpha Delta`` with and without resampling.

    Parameters
    ----------
    cell : dict
        The problem (:data:`MECHANISM_CELLS`: ``m, k, n, d, sigma, delta``) and ``alpha``,
        ``direction`` (one of :data:`DIRECTIONS`), ``n_rounds`` (``T``; the resampled run uses
        ``n' = n // (2T)`` points per subset), ``c1`` (``gamma = c1 / p``) and
        ``floor_factor``.
    seed : numpy.random.SeedSequence
        Spawns the problem, the initial direction and the resampling streams.

    Returns
    -------
    dict of scalars
        For each variant ``rs`` (resampling) and ``fb`` (full batch, all ``n`` points every
        round): ``<v>_dist`` (permutation-matched max distance), ``<v>_same_dist`` (max distance
        without permutation), ``<v>_threshold`` = ``floor_factor`` times the largest known-label
        least-squares RMS error (:func:`mixreg.metrics.oracle_ls_floor`) with the points per
        worker the variant's update uses (``n'`` or ``n``), ``<v>_success`` (matched distance
        below the threshold), ``<v>_same_success``, ``<v>_diverged``; ``population_edge``
        (:func:`mixreg.theory.population_basin_edge` of the drawn directions), ``oracle_dist``
        (measured known-label LS matched max distance on all data), ``separation``, ``n_prime``.
    """
    data_ss, init_ss, split_ss = seed.spawn(3)
    problem = _spec(cell).generate(np.random.default_rng(data_ss))
    alpha, T = float(cell["alpha"]), int(cell["n_rounds"])
    theta0, u = closeness_init(problem, alpha, cell["direction"], np.random.default_rng(init_ss))
    gamma = ifca_step_size(problem.p_min, c1=float(cell["c1"]))
    n_prime = int(problem.sizes.min()) // (2 * T)
    runs = {
        "rs": ifca(problem, theta0, gamma, n_rounds=T, resample=True, rng=np.random.default_rng(split_ss)),
        "fb": ifca(problem, theta0, gamma, n_rounds=T),
    }
    workers = np.bincount(problem.labels, minlength=problem.k)
    points = {"rs": n_prime, "fb": int(problem.sizes.min())}
    record = {"separation": problem.separation, "n_prime": n_prime,
              "population_edge": population_basin_edge(problem.theta_star, u)}
    for name, res in runs.items():
        floor = oracle_ls_floor(problem.sigma, problem.d, workers * points[name])
        threshold = float(cell["floor_factor"]) * float(np.max(floor))
        diverged = bool(res.diverged[0])
        dist = float("nan") if diverged else float(matched_max_distance(res.theta[0], problem.theta_star))
        same = float("nan") if diverged else _same_index_distance(res.theta[0], problem.theta_star)
        record.update({
            f"{name}_dist": dist,
            f"{name}_same_dist": same,
            f"{name}_threshold": threshold,
            f"{name}_success": bool(dist < threshold),  # nan < x is False
            f"{name}_same_success": bool(same < threshold),
            f"{name}_diverged": diverged,
        })
    record["oracle_dist"] = float(matched_max_distance(known_label_least_squares(problem), problem.theta_star))
    return record


def ifca_misclustering_trial(cell, seed):
    """One trial of the misclustering experiment: one resampled round from ``theta = theta*``.

    Parameters
    ----------
    cell : dict
        The problem (:data:`MECHANISM_CELLS`, ``k = 2``, ``n = 2 n'``) and ``c1``.
    seed : numpy.random.SeedSequence
        Spawns the problem and the resampling streams.

    Returns
    -------
    dict of scalars
        ``n_workers``, ``n_wrong`` (workers whose identity estimate is not their own cluster's
        model), ``wrong_fraction``, ``exact_probability``
        (:func:`mixreg.theory.misclustering_probability` at the truth, the same for every
        worker), ``snr`` (realised ``Delta^2 / sigma^2``), ``n_prime``.
    """
    data_ss, split_ss = seed.spawn(2)
    problem = _spec(cell).generate(np.random.default_rng(data_ss))
    if problem.k != 2:
        raise ValueError(f"the exact misclustering probability is for k = 2 clusters, got k={problem.k}")
    gamma = ifca_step_size(problem.p_min, c1=float(cell["c1"]))
    rnd = identity_round(problem, problem.theta_star, gamma, np.random.default_rng(split_ss))
    wrong = int(np.sum(rnd.assignments != problem.labels))
    pair = ResidualPair.at_truth(problem.snr)
    return {
        "n_prime": rnd.n_prime,
        "snr": problem.snr,
        "n_workers": problem.m,
        "n_wrong": wrong,
        "wrong_fraction": wrong / problem.m,
        "exact_probability": float(misclustering_probability(rnd.n_prime, pair)),
    }


def ifca_contraction_trial(cell, seed):
    """One trial of the contraction experiment: one resampled round of Theorem 1.

    From ``theta_j = theta*_j + alpha Delta u_j`` (``u_j`` uniform on the sphere), one round
    with ``gamma = c1 / p``.  Theorem 1's right-hand side with the constants of the cell:

    ``bound_j = 1/2 ||theta_j - theta*_j|| + c2 (sigma/p) sqrt(d/(m n')) + c3 exp(-c4 (rho/(rho+1))^2 n')``.

    Parameters
    ----------
    cell : dict
        The problem (:data:`MECHANISM_CELLS`, ``k = 2``, ``n = 2 n'``), ``alpha``, ``c1``,
        ``c2``, ``c3``, ``c4``.
    seed : numpy.random.SeedSequence

    Returns
    -------
    dict of scalars
        Per cluster ``j``: ``ratio_j`` (``||theta_j^+ - theta*_j|| / ||theta_j - theta*_j||``),
        ``bound_ratio_j`` (``bound_j / ||theta_j - theta*_j||``), ``noise_ratio_j``
        (``1/2 + c2 (...) / ||theta_j - theta*_j||``: the bound without its misclustering
        term), ``c3_needed_j`` (the smallest ``c3`` that would cover this draw, 0 if the
        rest of the bound does), ``wrong_j`` (fraction of cluster ``j``'s workers misclustered
        in the round) and ``exact_wrong_j`` (the exact per-worker probability of that geometry);
        ``wrong_fraction`` over all workers, ``noise_term``, ``miscl_term``, ``n_prime``, ``snr`` (realised ``rho``).
    """
    data_ss, init_ss, split_ss = seed.spawn(3)
    problem = _spec(cell).generate(np.random.default_rng(data_ss))
    if problem.k != 2:
        raise ValueError(f"the exact misclustering probability is for k = 2 clusters, got k={problem.k}")
    theta0, _ = closeness_init(problem, float(cell["alpha"]), "random", np.random.default_rng(init_ss))
    p = problem.p_min
    gamma = ifca_step_size(p, c1=float(cell["c1"]))
    rnd = identity_round(problem, theta0, gamma, np.random.default_rng(split_ss))
    n_prime, star, sigma = rnd.n_prime, problem.theta_star, problem.sigma
    theta = theta0[0].astype(np.float64)
    after = np.linalg.norm(rnd.result.theta[0].astype(np.float64) - star, axis=1)
    before = np.linalg.norm(theta - star, axis=1)
    noise = float(cell["c2"]) * (sigma / p) * np.sqrt(problem.d / (problem.m * n_prime))
    decay = float(np.exp(-lemma1_exponent(problem.snr, float(cell["c4"])) * n_prime))
    miscl = float(cell["c3"]) * decay
    record = {"n_prime": n_prime, "snr": problem.snr, "noise_term": noise, "miscl_term": miscl,
              "wrong_fraction": float(np.mean(rnd.assignments != problem.labels))}
    for j in range(2):
        other = 1 - j
        pair = ResidualPair.from_parameters(star[j], theta[j], theta[other], sigma)
        mine = problem.labels == j
        record.update({
            f"ratio_{j}": float(after[j] / before[j]),
            f"bound_ratio_{j}": float(0.5 + (noise + miscl) / before[j]),
            f"noise_ratio_{j}": float(0.5 + noise / before[j]),
            f"c3_needed_{j}": float(max(0.0, after[j] - 0.5 * before[j] - noise) / decay),
            f"wrong_{j}": float(np.mean(rnd.assignments[mine] != j)),
            f"exact_wrong_{j}": float(misclustering_probability(n_prime, pair, own_first=j < other)),
        })
    return record
