"""The basin trial: IFCA from ``theta*_j + alpha Delta u_j``, with and without resampling.

:class:`BasinSpec` is one cell of ``ifca_basin`` (the problem, the direction and closeness of the
start, the rounds, the step size and the success threshold); :func:`ifca_basin_trial` runs it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mixreg.algorithms.ifca import closeness_init, ifca
from mixreg.baselines import known_label_least_squares
from mixreg.metrics import matched_max_distance, oracle_ls_floor
from mixreg.study import param
from mixreg.theory import ifca_step_size, population_basin_edge

from ..ifca_mechanism import DIRECTIONS, MechanismSpec

__all__ = ["BasinSpec", "ifca_basin_trial", "COLUMNS"]

#: trials.csv's column order of the cell parameters (the order results directories were written in).
COLUMNS = ("m", "k", "n", "d", "sigma", "delta", "direction", "alpha", "n_rounds", "c1", "floor_factor")


@dataclasses.dataclass(frozen=True, kw_only=True)
class BasinSpec(MechanismSpec):
    """One cell of the basin study: the problem, the start and IFCA's settings."""

    COLUMNS = COLUMNS

    direction: str = param("initial direction", choices=DIRECTIONS)
    alpha: float = param("initial closeness: ||theta_j - theta*_j|| = alpha Delta", low=0)
    n_rounds: int = param("IFCA rounds T (the resampled run uses n' = n // (2T) points per subset)", low=1)
    floor_factor: float = param("success threshold: this times the known-label LS RMS error floor", low=0,
                                low_open=True)


def _same_index_distance(theta, theta_star):
    """``max_j ||theta_j - theta*_j||`` (no permutation: the distance Theorem 1 tracks)."""
    return float(np.linalg.norm(np.asarray(theta, dtype=np.float64) - theta_star, axis=-1).max())


def ifca_basin_trial(spec, seed):
    """One trial of the basin experiment: IFCA from ``alpha Delta`` with and without resampling.

    Parameters
    ----------
    spec : BasinSpec
        The problem (:data:`MECHANISM_CELLS`: ``m, k, n, d, sigma, delta``) and ``alpha``,
        ``direction`` (one of :data:`.DIRECTIONS`), ``n_rounds`` (``T``; the resampled run uses
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
    problem = spec.problem.generate(np.random.default_rng(data_ss))
    alpha, T = spec.alpha, spec.n_rounds
    theta0, u = closeness_init(problem, alpha, spec.direction, np.random.default_rng(init_ss))
    gamma = ifca_step_size(problem.p_min, c1=spec.c1)
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
        threshold = spec.floor_factor * float(np.max(floor))
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
