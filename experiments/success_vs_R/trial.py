"""The IFCA success trial (IFCA paper, Fig. 3): its typed spec and the trial, from a seed to a record.

:class:`IfcaSuccessSpec` is one cell of the success studies (``success_vs_R``,
``success_vs_mn``): the problem (a :class:`mixreg.problems.ProblemSpec`, stored under the official
code's names) and IFCA's settings.  :func:`ifca_success_trial` runs one trial of it;
:func:`ifca_success_levels_trial` runs the noise levels (or separation scales) of one draw as
one batch.
"""

from __future__ import annotations

import dataclasses
import re
from typing import ClassVar

import numpy as np

from mixreg.algorithms.ifca import INIT_METHODS, ifca, initial_parameters
from mixreg.baselines import known_label_least_squares
from mixreg.metrics import (
    matched_mean_distance,
    misclustering_rate,
    nearest_truth_distance,
    oracle_ls_floor,
)
from mixreg.problems import CellSchema
from mixreg.study import TrialSpec, param

__all__ = ["IfcaSuccessSpec", "ifca_success_trial", "ifca_success_levels_trial", "unpack_levels",
           "SUCCESS_RULES", "IFCA_SUCCESS_CELLS", "IFCA_LEVELS_CELLS", "IFCA_SCALE_LEVELS_CELLS", "COLUMNS"]

#: How :func:`ifca_success_trial` reads its problem from a cell: the official code's names
#: (``r`` is the protocol's scale).  Changing a key would change the seeds of every trial.
IFCA_SUCCESS_CELLS = CellSchema(keys={"m": "m", "k": "k", "n": "n", "d": "d", "sigma": "sigma", "scale": "r",
                                      "protocol": "protocol", "dtype": "dtype"})

#: How :func:`ifca_success_levels_trial` reads its problem: as :data:`IFCA_SUCCESS_CELLS` without
#: ``sigma`` (the cell's ``sigma_levels`` share one draw; the spec's own sigma is unused).
IFCA_LEVELS_CELLS = CellSchema(keys={key: value for key, value in IFCA_SUCCESS_CELLS.keys.items() if key != "sigma"},
                               fixed={"sigma": 0.0})

#: How :func:`ifca_success_levels_trial` reads its problem at several separation scales: as
#: :data:`IFCA_SUCCESS_CELLS` without ``r`` (the cell's ``r_levels`` share one draw).
IFCA_SCALE_LEVELS_CELLS = CellSchema(keys={key: value for key, value in IFCA_SUCCESS_CELLS.keys.items()
                                           if key != "scale"}, fixed={"scale": 1.0})

#: trials.csv's column order of the cell parameters (the order results directories were written in).
COLUMNS = ("k", "m", "n", "d", "protocol", "n_rounds", "n_inits", "step_sizes", "init", "init_scale",
           "threshold_offset", "dtype", "sigma", "r")

_LEVEL_SCHEMAS = {None: IFCA_SUCCESS_CELLS, "sigma": IFCA_LEVELS_CELLS, "r": IFCA_SCALE_LEVELS_CELLS}


@dataclasses.dataclass(frozen=True, kw_only=True)
class IfcaSuccessSpec(TrialSpec):
    """One cell of an IFCA success study: the problem and IFCA's settings (the official code's
    protocol: IFCA option I, full batch, full participation, every init times every step size).

    With ``sigma_levels`` (or ``r_levels``) the cell's levels of the noise (or of the separation
    scale) share one draw (:func:`ifca_success_levels_trial`); the problem's own ``sigma`` (or
    ``scale``) is then fixed at 0 (1) and unused.
    """

    schema: ClassVar[CellSchema] = IFCA_SUCCESS_CELLS

    n_rounds: int = param("IFCA rounds T", low=1)
    n_inits: int = param("random initialisations per trial", low=1)
    step_sizes: tuple[float, ...] = param("IFCA step sizes, each run from every initialisation", low=0,
                                          low_open=True)
    init: str = param("initialisation", choices=INIT_METHODS)
    init_scale: float = param("scale of the random initialisation", low=0, low_open=True)
    threshold_offset: float = param("success threshold: distance < 0.6 sigma + this offset", low=0)
    sigma_levels: tuple[float, ...] | None = param("noise levels sharing one draw", default=None, low=0,
                                                   distinct=True)
    r_levels: tuple[float, ...] | None = param("separation scales sharing one draw", default=None, low=0,
                                               low_open=True, distinct=True)

    def check(self):
        if self.sigma_levels is not None and self.r_levels is not None:
            raise ValueError("a levels cell holds exactly one of sigma_levels and r_levels")

    @property
    def levels_key(self):
        """``"sigma"``, ``"r"`` or ``None``: which parameter's levels share the cell's draw."""
        return "sigma" if self.sigma_levels is not None else "r" if self.r_levels is not None else None

    @property
    def batch(self):
        """Replicas of one trial's batch: inits x step sizes x the levels of its one draw."""
        levels = self.sigma_levels or self.r_levels or (None,)
        return self.n_inits * len(self.step_sizes) * len(levels)

    def cell_schema(self):
        return _LEVEL_SCHEMAS[self.levels_key]

    @classmethod
    def schema_of(cls, cell):
        if "sigma_levels" in cell and "r_levels" in cell:
            raise ValueError("a levels cell holds exactly one of sigma_levels and r_levels")
        return _LEVEL_SCHEMAS["sigma" if "sigma_levels" in cell else "r" if "r_levels" in cell else None]

    def columns(self):
        key = self.levels_key
        if key is None:
            return COLUMNS
        return tuple(column for column in COLUMNS if column != key) + (f"{key}_levels",)


SUCCESS_RULES = {
    "official": (
        "minimum over all (init, step size) runs of the final nearest-truth mean distance "
        "< 0.6 sigma + offset (official IFCA code; picks the run by its distance to the truth, "
        "which a user could not do; diverged runs are excluded, a trial whose runs all diverged "
        "fails)"
    ),
    "honest": (
        "the run with the lowest final training loss (diverged runs excluded) has a "
        "permutation-matched mean distance < 0.6 sigma + offset"
    ),
    "oracle": (
        "known-label least squares has a permutation-matched mean distance < 0.6 sigma + offset "
        "(a ceiling: what any method could reach once the clusters are right)"
    ),
}


def ifca_success_trial(spec, seed):
    """One trial of the IFCA success-probability experiment (IFCA paper, Fig. 3).

    The protocol of the official code: draw a problem, run IFCA option I (gradient averaging,
    full batch, full participation) from ``n_inits`` initialisations times every step size for
    ``n_rounds`` rounds, all as one batch of ``B = n_inits * len(step_sizes)`` replicas, and score
    the trial under the rules of :data:`SUCCESS_RULES`.

    Parameters
    ----------
    spec : IfcaSuccessSpec
        The problem and IFCA's settings (``threshold_offset`` is 0.001 in the official r-sigma
        sweeps).
    seed : numpy.random.SeedSequence
        Spawns two streams: the problem (data seed) and the initialisations (train seed).

    Returns
    -------
    dict of scalars
    """
    data_ss, init_ss = seed.spawn(2)
    problem = spec.problem.generate(np.random.default_rng(data_ss))
    theta0, gammas = _starts(problem, spec, init_ss)
    res = ifca(problem, theta0, gammas, n_rounds=spec.n_rounds)
    return _score(problem, res, np.arange(gammas.size), spec.threshold_offset)


def ifca_success_levels_trial(spec, seed):
    r"""One trial of the IFCA success experiment at several noise levels, or at several
    separation scales, on ONE draw.

    The official code's protocol for its sweeps: per data seed it draws ``X``, the Bernoulli
    pattern ``b`` of :math:`\theta^* = r b` and one noise vector, and scales the noise by each
    sigma (and the pattern by each r), so that every level of a trial shares its draw
    (:meth:`mixreg.problems.ProblemSpec.generate_levels`).  The initialisations are drawn from
    the same stream at every level (the same starts under the ``"official"`` initialisation,
    which does not look at the problem), and every level runs them with every step size: the
    ``G`` levels run as ``G`` groups of replicas of one batch (``responses`` of
    :func:`mixreg.algorithms.ifca.ifca`), which widens every product ``G``-fold.  Each level is
    scored exactly as :func:`ifca_success_trial` scores its trial.

    Parameters
    ----------
    spec : IfcaSuccessSpec
        With ``sigma_levels`` or ``r_levels``.
    seed : numpy.random.SeedSequence
        Spawns the same two streams as :func:`ifca_success_trial`.

    Returns
    -------
    dict of scalars
        For level ``g`` (in the order of the cell's levels), the record of
        :func:`ifca_success_trial` with every key prefixed ``L<g>_``, and ``L<g>_sigma`` or
        ``L<g>_r``; see :func:`unpack_levels` for one record per level.
    """
    data_ss, init_ss = seed.spawn(2)
    key = spec.levels_key
    if key is None:
        raise ValueError("a levels trial needs sigma_levels or r_levels")
    levels = tuple(float(s) for s in (spec.sigma_levels if key == "sigma" else spec.r_levels))
    rng = np.random.default_rng(data_ss)
    problems = (spec.problem.generate_levels(rng, levels) if key == "sigma"
                else spec.problem.generate_levels(rng, scales=levels))
    starts = [_starts(pb, spec, init_ss) for pb in problems]  # each level's own, from the same stream
    B, G = starts[0][1].size, len(levels)
    res = ifca(problems[0], np.concatenate([theta0 for theta0, _ in starts]),
               np.concatenate([gammas for _, gammas in starts]), n_rounds=spec.n_rounds,
               responses=np.stack([pb.y for pb in problems]), response_of=np.repeat(np.arange(G), B))
    out = {}
    for g, (pb, level) in enumerate(zip(problems, levels)):
        record = _score(pb, res, np.arange(g * B, (g + 1) * B), spec.threshold_offset)
        out[f"L{g}_{key}"] = level
        out.update({f"L{g}_{name}": value for name, value in record.items()})
    return out


def unpack_levels(records, levels, key="sigma"):
    """One record per (trial, level) from records of :func:`ifca_success_levels_trial`: the
    ``L<g>_`` columns of level ``g`` without their prefix, ``key`` (``"sigma"`` or ``"r"``) set
    to the level, the other columns (cell, trial, seed, ...) kept.  Failed trials give one
    failed record per level."""
    out = []
    for rec in records:
        common, per_level = {}, [{} for _ in levels]
        for name, value in rec.items():
            match = _LEVEL_KEY.fullmatch(name)
            if match is None:
                common[name] = value
            elif int(match[1]) < len(levels):
                per_level[int(match[1])][match[2]] = value
        common.pop(f"{key}_levels", None)
        out += [{**common, **fields, key: float(level)} for level, fields in zip(levels, per_level)]
    return out


#: A column of level ``g`` in a record of :func:`ifca_success_levels_trial`: ``L<g>_<field>``.
_LEVEL_KEY = re.compile(r"L(\d+)_(.+)")


def _starts(problem, spec, init_ss):
    """The batch of one trial: replica ``b = (init b // L, step size b % L)``."""
    step_sizes = np.asarray(spec.step_sizes, dtype=np.float64)
    n_inits = spec.n_inits
    inits = initial_parameters(
        problem, n_inits, spec.init, rng=np.random.default_rng(init_ss), scale=spec.init_scale
    )
    return np.repeat(inits, step_sizes.size, axis=0), np.tile(step_sizes, n_inits)


def _score(problem, res, replicas, threshold_offset):
    """The record of one trial: the rules of :data:`SUCCESS_RULES` on the replicas ``replicas``
    of the IFCA run ``res`` on ``problem``."""
    truth = problem.theta_star
    theta, diverged = res.theta[replicas], res.diverged[replicas]
    nearest = np.where(diverged, np.nan, nearest_truth_distance(theta, truth))
    matched = np.where(diverged, np.nan, matched_mean_distance(theta, truth))
    threshold = 0.6 * problem.sigma + threshold_offset

    any_finite = bool(np.isfinite(nearest).any())
    official_best = float(np.nanmin(nearest)) if any_finite else float("nan")
    chosen = res.best_replica(among=replicas)  # the run a user would keep: lowest training loss
    if chosen is not None:
        honest_dist = float(matched[np.flatnonzero(replicas == chosen)[0]])
        honest_step = float(res.step_sizes[chosen])
        honest_miscl = float(misclustering_rate(res.assignments[chosen], problem.labels, problem.k))
    else:
        honest_dist = honest_step = honest_miscl = float("nan")

    oracle = known_label_least_squares(problem)
    oracle_dist = float(matched_mean_distance(oracle, truth))
    floor = oracle_ls_floor(problem.sigma, problem.d, problem.cluster_sizes)
    return {
        "separation": problem.separation,
        "p_min": problem.p_min,
        "snr": problem.snr,
        "threshold": threshold,
        "official_best_dist": official_best,
        "official_success": bool(official_best < threshold),  # nan < x is False
        "honest_dist": honest_dist,
        "honest_step_size": honest_step,
        "honest_misclustering": honest_miscl,
        "honest_success": bool(honest_dist < threshold),
        "oracle_dist": oracle_dist,
        "oracle_success": bool(oracle_dist < threshold),
        "oracle_floor": float(np.mean(floor)),
        "n_runs": int(len(replicas)),
        "n_diverged": int(diverged.sum()),
    }
