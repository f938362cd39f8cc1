"""IFCA's strongly convex analysis (Theorem 2, its per-round contraction, its ``T``, Lemma 3) on
mixed linear regression with features ``N(0, Sigma)`` of condition number ``kappa``.

With the driver's squared loss ``f = (y - <x, theta>)^2`` and rows ``N(0, Sigma)``,
``F^j(theta) = sigma^2 + ||theta - theta*_j||_Sigma^2`` is ``lambda``-strongly convex and
``L``-smooth with ``lambda = 2 lambda_min(Sigma)``, ``L = 2 lambda_max(Sigma)`` (the factor 2 is
the squared loss's; :mod:`mixreg.theory._ifca_sc`).  ``Sigma = diag(kappa^(-i/(d-1)))``
(:func:`.trial.sc_covariance`): ``L = 2``, ``L / lambda = kappa``.  Every run uses Theorem 2's
step ``gamma = 1 / L``, the resampling scheme (``n'`` fresh points per round for each of the
identity estimate and the gradient), full participation, ``k = 2``, ``Delta = 1`` exactly.

Three families of cells (:func:`cells_of`):

* **rate**: ``kappa`` x ``p`` at ``(m_ref, n'_ref)``, from ``||theta_j - theta*_j|| = r0 Delta``
  with ``r0 = (1/4) sqrt(1 / max kappa)`` (inside Assumption 6 for every ``kappa``), run to the
  floor: the per-round factor over the rounds far above the floor (claim 1), the rounds to
  ``eps`` (claim 2);
* **floor**: the ``m`` and ``n'`` axes through ``(m_ref, n'_ref)`` at ``kappa_ref``, ``p = 1/2``:
  the final error (claim 3);
* **lemma**: one round from Assumption 6's boundary ``(1/4) sqrt(lambda / L) Delta`` at every
  ``kappa`` and ``n'`` of ``lemma_n_primes``, noise ``lemma_sigma``: the misclustering
  probability per worker-round (claim 4).

Run ``python -m experiments.ifca_strongly_convex`` (quick) or ``--preset paper``; writes
``trials.csv``, the tables of :data:`.summary.TABLES`, ``manifest.json`` (with the
:data:`.summary.PREDICTIONS` registered before the first trial) and ``ifca_strongly_convex.{png,pdf}``.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib

from mixreg.problems import ProblemSpec
from mixreg.study import Spec, Study, param

from .figures import draw, plot_strongly_convex
from .summary import DEFAULT_SEED, NAME, PREDICTION, PREDICTIONS, TABLES, final_mean_square, summarise, window_factor
from .trial import FAMILIES, K, SC_CELLS, ScSpec, plan, sc_covariance, sc_memory, sc_trial

__all__ = ["STUDY", "Config", "PRESETS", "cells_of", "trial_flops", "summarise", "draw", "plot_strongly_convex",
           "NAME", "TABLES", "DEFAULT_SEED", "PREDICTIONS", "PREDICTION", "ScSpec", "sc_trial", "sc_covariance",
           "sc_memory", "plan", "SC_CELLS", "FAMILIES", "K", "window_factor", "final_mean_square"]

REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Spec):
    """The sweep; every field but ``preset`` is a flag named as the field."""

    preset: str = param("quick (default, < 1 min on one core) or paper")
    d: int = param("dimension", low=2)
    sigma: float = param("noise level of the rate and floor cells", low=0, low_open=True)
    kappas: tuple[float, ...] = param("condition numbers L / lambda of the rate and lemma cells", low=1, distinct=True)
    ps: tuple[float, ...] = param("smallest cluster proportions p of the rate cells (exact; 0.5: balanced)", low=0,
                                  high=0.5, low_open=True, distinct=True)
    m_ref: int = param("workers of the rate cells and the floor cells' reference", low=4)
    n_prime_ref: int = param("points per round n' of the rate cells and the floor cells' reference", low=1)
    kappa_ref: float = param("condition number of the floor cells", low=1)
    ms: tuple[int, ...] = param("workers m of the floor cells' m axis", low=4, distinct=True)
    n_primes: tuple[int, ...] = param("points per round n' of the floor cells' n' axis", low=1, distinct=True)
    lemma_m: int = param("workers of the lemma cells", low=4)
    lemma_sigma: float = param("noise level of the lemma cells", low=0, low_open=True)
    lemma_n_primes: tuple[int, ...] = param("points per round n' of the lemma cells", low=1, distinct=True)
    trials: int = param("trials per cell", low=2)
    eps: float = param("target accuracy of the rounds count (well above the floor)", default=0.01, low=0,
                       low_open=True)
    far: float = param("the factor's window: rounds whose exact RMS error is >= far x the floor's", default=5.0,
                       low=1)
    n_boot: int = param("bootstrap resamples of the intervals", default=2000, low=100)
    level: float = param("level of the intervals", default=0.95, low=0, high=1, low_open=True, high_open=True)


# Sizes: Delta = 1, sigma = 0.05, d = 8, m n' = 1000 puts the floor at RMS ~ 0.0035 (exact,
# mixreg.theory._ifca_sc.ifca_sc_stationary), eps = 0.01 about 3x above it and r0 = 1/16 about 18x,
# so the factor's window (>= 5x the floor) has at least one round in every rate cell.  The lemma
# cells' noise 0.5 (rho = 4) keeps the misclustering measurable up to n' ~ 30.
PRESETS = {
    "quick": dict(d=8, sigma=0.05, kappas=(1.0, 16.0), ps=(0.5, 0.2), m_ref=100, n_prime_ref=10, kappa_ref=4.0,
                  ms=(50, 100, 200), n_primes=(5, 10, 20), lemma_m=400, lemma_sigma=0.5,
                  lemma_n_primes=(1, 2, 4, 8, 16), trials=4, n_boot=400),
    "paper": dict(d=8, sigma=0.05, kappas=(1.0, 4.0, 16.0), ps=(0.5, 0.2), m_ref=100, n_prime_ref=10, kappa_ref=4.0,
                  ms=(25, 50, 100, 200, 400), n_primes=(5, 10, 20, 40, 80), lemma_m=1000, lemma_sigma=0.5,
                  lemma_n_primes=(1, 2, 4, 8, 16, 32, 64), trials=40, n_boot=2000),
}


def _problem(config, m, n_prime, sigma):
    return ProblemSpec(m=int(m), k=K, d=config.d, sigma=float(sigma), scale=1.0, protocol="gaussian", n=int(n_prime),
                       dtype="float64")


def _to_floor(config, family, m, n_prime, kappa, p, r0):
    """The cell with its rounds: until the exact mean square of every cluster is within 2% of the floor."""
    probe = ScSpec(problem=_problem(config, m, n_prime, config.sigma), family=family, kappa=float(kappa),
                   p_min=float(p), r0=float(r0), rounds=1, eps=float(config.eps), far=float(config.far))
    rounds = max(plan(probe, horizon=5000)["to_floor"])
    return dataclasses.replace(probe, rounds=int(rounds))


def cells_of(config):
    """The rate, floor and lemma cells (see the module docstring), as :class:`.trial.ScSpec`."""
    r0 = 0.25 / math.sqrt(max(config.kappas + (config.kappa_ref,)))
    cells = [_to_floor(config, "rate", config.m_ref, config.n_prime_ref, kappa, p, r0)
             for kappa in config.kappas for p in config.ps]
    axis = [(m, config.n_prime_ref) for m in config.ms] + [(config.m_ref, n) for n in config.n_primes]
    cells += [_to_floor(config, "floor", m, n, config.kappa_ref, 0.5, r0) for m, n in dict.fromkeys(axis)]
    cells += [ScSpec(problem=_problem(config, config.lemma_m, n, config.lemma_sigma), family="lemma",
                     kappa=float(kappa), p_min=0.5, r0=0.25 / math.sqrt(kappa), rounds=1, eps=float(config.eps),
                     far=float(config.far))
              for kappa in config.kappas for n in config.lemma_n_primes]
    return tuple(cells)


def trial_flops(spec):
    """Flop-equivalents of a trial: drawing ``2 T n' m`` rows of ``d`` Gaussians through the
    covariance (about ``100 + 2 d`` each) and the rounds (``(k + 1) 2 m n' d`` each, and a
    Python overhead of about 3e5 per round)."""
    pb = spec.problem
    rows = 2 * spec.rounds * pb.n * pb.m
    return float(rows * pb.d * (100 + 2 * pb.d) + spec.rounds * ((K + 1) * 2 * pb.m * pb.n * pb.d + 3e5))


STUDY = Study(
    name=NAME,
    command="python -m experiments.ifca_strongly_convex",
    description="IFCA's strongly convex analysis (Theorem 2's contraction and T, its rate, Lemma 3) on mixed linear "
                "regression with non-identity feature covariances.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    trial=sc_trial,
    spec_type=ScSpec,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    cost=trial_flops,
    flop_rate=5e8,  # measured: drawing the rows through the covariance dominates (about 1 s per 6e8 "flops")
    memory=sc_memory,
    size_flags=("--m-ref", "--n-prime-ref", "--ms", "--n-primes", "--lemma-m", "--lemma-n-primes"),
    paper_presets=("paper",),
    figures_dir=REPO / "figures",
    algorithms=(),  # its trial calls the driver directly (fingerprinted as an import)
    predictions=PREDICTIONS,  # registered in the manifest before the first trial
)
