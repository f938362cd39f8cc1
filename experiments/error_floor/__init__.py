"""IFCA's final error against m, n', d, sigma and p, against the exponents of its Corollary 1.

Run ``python -m experiments.error_floor`` for the quick default (about 40 CPU-seconds: under a
minute on two idle cores), or ``--preset paper`` for larger grids and more trials (about half a
CPU-hour; see ``PRESETS``).

Corollary 1 of the IFCA paper (linear model) bounds the final error by
``eps = c5 (sigma / p) sqrt(d / (m n')) + c6 exp(-c4 (rho / (rho + 1))^2 n')``: where the
exponential term is negligible, the exponents are -1/2 in ``m`` and ``n'``, +1/2 in ``d``, +1 in
``sigma`` and -1 in ``p``.  Known-label least squares has ``sigma sqrt(d / (p m n'))``: -1/2 in
``p``.  Five one-dimensional sweeps through a reference cell measure them, each trial running
(:func:`.trial.error_floor_trial`)

* **the theorem's setting** (covered by Theorem 1): initial models at distance
  ``alpha Delta`` from the truth (Assumption 1's boundary for ``alpha = 1/4``), the resampling
  scheme (``n'`` fresh points per round for each of the identity estimate and the gradient),
  option I with ``gamma = c1 / p``; on the p axis also with the safe step ``c1 / p_max``, which
  Theorem 1 does not consider but which the unbalanced clusters need (:mod:`mixreg.theory`);
* **the paper's practical setting** (not covered by Theorem 1): random Gaussian
  initialisations, no resampling (``n = n'`` points per client, all used every round), best of
  ``restarts`` x ``step_sizes`` runs by final training loss, the same step grid in every cell;
* **known-label least squares** on the practical data (the oracle that knows the clusters; the
  minimax-rate estimator, not a floor: shrinkage beats it for ``d >= 3``).

The error of a trial is the permutation-matched distance per cluster, maximum over clusters
(Theorem 1 holds for all ``j``); the statistic is its mean over the trials.  Each axis and
setting gets a row of ``exponents.csv``: the predicted exponent and where it comes from, the
fitted one (least squares of ``log mean`` on ``log x``) with its 95% stratified bootstrap
interval (:func:`mixreg.predictions.fit_exponent`), the verdict
(:func:`mixreg.predictions.exponent_verdict`), and what our own derivation predicts
(``derived``).  No widening is chosen by hand: the coverage of each row's raw interval is
measured by simulation at the row's own sizes and dispersion (:func:`.coverage.slope_coverage`:
200 data sets drawn from the row's cells rescaled to an exact power law), and the verdict widens
the interval by the smallest amount that brings the simulated coverage to 95% (``widening``, 0
where the raw interval reaches it; ``coverage_raw`` states what was measured).  On the p axis
the same fit is repeated over the cells where the smallest cluster is unique (``p < 1/k``: at
``p = 1/k`` the error, a maximum over clusters, is the largest of ``k`` equally distributed
errors).  A third table, ``optimality``, gives per axis the ratio of the theorem's final error
to known-label least squares on the same ``2 T n'`` points per client, and the exponent of that
ratio (0 if IFCA stays within a constant of the oracle, the paper's optimality remark).

Writes into the results directory (default ``results/error_floor/<preset>``):

* ``trials.csv``, ``summary.csv`` and ``manifest.json`` (from the engine; the manifest registers
  the predicted exponents, :data:`.summary.PREDICTIONS`, before the first trial);
* ``points.csv``: per axis value and series, the mean final error with its 95% bootstrap
  interval, divergences, misclustering, the realised ``p``, ``rho``, ``T``;
* ``exponents.csv``: per axis and setting, predicted and fitted exponents, the simulated
  coverage and widening, and the verdict;
* ``optimality.csv``: per axis, the theorem's error over known-label least squares on the same
  data, and the exponent of that ratio;
* ``error_floor.png`` and ``.pdf``, drawn from the two tables alone; ``--redraw DIR`` redraws
  them from a results directory without running anything.

The paper preset also writes the figure to ``figures/error_floor_paper.{png,pdf}`` (when the run
is the unchanged preset).  Flags: one per field of :class:`Config` (``--ms``, ``--n-primes``,
``--m-ref``, ``--step-sizes``, ...), see ``--help``.
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

from mixreg.problems import ProblemSpec, exact_labels
from mixreg.study import Spec, Study, param

from .figures import ERROR_FLOOR_SERIES, draw, plot_error_floor
from .summary import (
    AXES,
    COROLLARY,
    DEFAULT_SEED,
    MINIMAX,
    NAME,
    PREDICTIONS,
    SETTINGS,
    TABLES,
    axis_points,
    summarise,
)
from .trial import ERROR_FLOOR_CELLS, ErrorFloorSpec, error_floor_memory, error_floor_trial, theory_rounds

__all__ = ["STUDY", "Config", "PRESETS", "ErrorFloorSpec", "cells_of", "axis_points", "trial_flops", "summarise",
           "draw", "NAME", "TABLES", "DEFAULT_SEED", "AXES", "COROLLARY", "MINIMAX", "PREDICTIONS", "SETTINGS",
           "ERROR_FLOOR_CELLS", "error_floor_trial", "error_floor_memory", "theory_rounds", "plot_error_floor",
           "ERROR_FLOOR_SERIES"]

REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Spec):
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag of the command line, named as the field
    (``n_prime_ref`` -> ``--n-prime-ref``), defaulting to the preset's value.
    """

    preset: str = param("quick (default, under a minute on 2 idle cores) or paper (larger grids, more trials, "
                        "about half a CPU-hour)")
    k: int = param("clusters (at least two: Delta and Assumption 1 need two clusters)", low=2)
    separation: float = param("minimum separation Delta of theta* (Gaussian protocol, exact)", low=0, low_open=True)
    m_ref: int = param("clients m of the reference cell", low=1)
    n_prime_ref: int = param("points per client and round n' of the reference cell", low=1)
    d_ref: int = param("dimension d of the reference cell", low=1)
    sigma_ref: float = param("noise level sigma of the reference cell", low=0, low_open=True)
    p_ref: float = param("smallest cluster proportion p of the reference cell (1/k: balanced)", low=0,
                         low_open=True)
    ms: tuple[int, ...] = param("clients m of the m axis", low=1)
    n_primes: tuple[int, ...] = param("points per client and round n' of the n' axis", low=1)
    ds: tuple[int, ...] = param("dimensions d of the d axis", low=1)
    sigmas: tuple[float, ...] = param("noise levels sigma of the sigma axis", low=0, low_open=True)
    ps: tuple[float, ...] = param("smallest cluster proportions p of the p axis (exact proportions)", low=0,
                                  low_open=True)
    trials: int = param("trials per cell", low=1)
    restarts: int = param("practical setting: random initialisations per trial", low=1)
    step_sizes: tuple[float, ...] = param("practical setting: step sizes run from every initialisation", low=0,
                                          low_open=True)
    practical_rounds: int = param("practical setting: most rounds", low=1)
    n_boot: int = param("bootstrap resamples of the intervals", low=1)
    alpha: float = param("initial distance alpha Delta of the theorem's setting (Assumption 1: 1/4)", default=0.25,
                         low=0, high=0.5, low_open=True, high_open=True)
    c1: float = param("Theorem 1's step constant: gamma = c1 / p", default=0.375, low=0, low_open=True)
    halvings: int = param("theorem's setting: rounds T = halvings on balanced clusters (Corollary 1's "
                          "log2(Delta/(4 eps))), more when the safe step is slower", default=14, low=1)
    practical_tol: float = param("practical setting: stop once every run moves less than this (0: never)",
                                 default=1e-9, low=0)
    tolerance: float = param("not used: the slope verdicts widen the interval by the widening measured by "
                             "simulation (exponents.csv, column widening); kept so that runs recorded with it "
                             "replay", default=0.05, low=0)

    def check(self):
        """What the fields' own constraints cannot say: every axis needs two points (a slope), the
        clients at least two per cluster, the proportions at most ``1/k`` and a client in every
        cluster."""
        for name in AXES.values():
            grid = getattr(self, name)
            if len(grid) < 2:
                raise ValueError(f"{name} must hold at least two values (a slope needs two points), got {list(grid)}")
        if min(self.ms + (self.m_ref,)) < 2 * self.k:
            raise ValueError(f"ms and m_ref must be at least 2k = {2 * self.k}, got {list(self.ms)} and "
                             f"m_ref={self.m_ref}")
        top = 1.0 / self.k
        if any(p > top + 1e-12 for p in self.ps + (self.p_ref,)):
            raise ValueError(f"ps and p_ref must be at most 1/k = {top:.4g}, got {list(self.ps)} and "
                             f"p_ref={self.p_ref!r}")
        if min(self.ps + (self.p_ref,)) * min(self.ms + (self.m_ref,)) < 1:
            raise ValueError(f"every cluster needs a client: min(ps) * min(ms) must be >= 1, got "
                             f"{min(self.ps + (self.p_ref,))} * {min(self.ms + (self.m_ref,))}")


# Quick: k = 2, Delta = 1, reference (m, n', d, sigma, p) = (100, 20, 10, 0.1, 1/2), so
# p m n' = 100 d (eta = sqrt(d / (p m n')) = 0.1) and rho = 100: the theorem's regime, where
# misclustering after the first rounds is negligible, holds on every axis (eta <= 0.2 at the
# ends of the m, n' and d axes; rho >= 6 on the sigma axis).  The p axis reaches p_max / p = 9,
# where Theorem 1's step makes the large cluster diverge.  24 trials per cell.
# About 40 CPU-seconds in all (trials, tables and figure), so well under a minute on two idle
# cores.  Paper: longer axes (factor 32 in m and n', 64 in sigma, p_max / p up to 9), 100
# trials, 10 restarts x 3 step sizes, 300 practical rounds, 4000 bootstrap resamples: about half
# a CPU-hour (15-20 minutes on two idle cores; --jobs or --scheduler for more) and up to ~0.7 GB
# per worker at p = 0.1 (T = 112 resampled rounds of n' = 40 points in d = 20).
PRESETS = {
    "quick": dict(k=2, separation=1.0, m_ref=100, n_prime_ref=20, d_ref=10, sigma_ref=0.1, p_ref=0.5,
                  ms=(25, 50, 100, 200, 400), n_primes=(5, 10, 20, 40, 80), ds=(5, 10, 20, 40),
                  sigmas=(0.025, 0.05, 0.1, 0.2, 0.4), ps=(0.1, 0.2, 0.3, 0.4, 0.5), trials=24, restarts=3,
                  step_sizes=(0.5, 1.0), practical_rounds=100, n_boot=1000),
    "paper": dict(k=2, separation=1.0, m_ref=100, n_prime_ref=40, d_ref=20, sigma_ref=0.1, p_ref=0.5,
                  ms=(25, 50, 100, 200, 400, 800), n_primes=(10, 20, 40, 80, 160, 320), ds=(5, 10, 20, 40, 80),
                  sigmas=(0.0125, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8), ps=(0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5),
                  trials=50, restarts=10, step_sizes=(0.25, 0.5, 1.0), practical_rounds=300, n_boot=4000),
}


def cells_of(config):
    """The five sweeps through the reference cell (:func:`.summary.axis_points`), without
    duplicates, as :class:`.trial.ErrorFloorSpec`."""
    keys = [tuple(params[name] for name in ("m", "n_prime", "d", "sigma", "p"))
            for axis in AXES for _, params in axis_points(config, axis)]
    return tuple(_cell(config, *key) for key in dict.fromkeys(keys))


def _cell(config, m, n_prime, d, sigma, p):
    """One cell: the problem and the method."""
    problem = ProblemSpec(m=int(m), k=config.k, d=int(d), sigma=float(sigma), scale=float(config.separation),
                          protocol="gaussian", n=int(n_prime), dtype="float64")
    return ErrorFloorSpec(problem=problem, p_min=float(p), alpha=float(config.alpha), c1=float(config.c1),
                          halvings=config.halvings, restarts=config.restarts,
                          step_sizes=tuple(float(g) for g in config.step_sizes),
                          practical_rounds=config.practical_rounds, practical_tol=float(config.practical_tol))


def trial_flops(spec):
    """IFCA's own count: (k + 1) 2 N d per replica-round, practical runs (up to all rounds) and the
    theorem's two runs on n' points per round."""
    pb = spec.problem
    m, n, d, k = pb.m, pb.n, pb.d, pb.k
    p = exact_labels(m, k, spec.p_min) if spec.p_min < 1 / k - 1e-12 else None
    props = np.full(k, 1 / k) if p is None else np.bincount(p) / m
    T = theory_rounds(spec.halvings, spec.c1, props.min(), props.max())
    practical = spec.restarts * len(spec.step_sizes) * spec.practical_rounds
    return float((k + 1) * 2 * m * n * d * (practical + 2 * T) + 4 * T * m * n * d)


STUDY = Study(
    name=NAME,
    command="python -m experiments.error_floor",
    description="IFCA's final error against m, n', d, sigma and p in the theorem's and the practical "
                "setting, beside known-label least squares, with Corollary 1's exponents.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    trial=error_floor_trial,
    spec_type=ErrorFloorSpec,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    cost=trial_flops,
    memory=error_floor_memory,
    size_flags=("--m-ref", "--n-prime-ref", "--d-ref", "--ms", "--n-primes", "--ds", "--halvings", "--k",
                "--restarts", "--step-sizes"),
    paper_presets=("paper",),
    figures_dir=REPO / "figures",
    algorithms=(),  # its trial calls its drivers directly (fingerprinted as imports)
    predictions=PREDICTIONS,  # registered in the manifest before the first trial
)
