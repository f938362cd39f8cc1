"""One IFCA round against Theorem 1: the distribution of the contraction ratio, including where
misclustering is not negligible.

Theorem 1 (NeurIPS version, linear model): with ``||theta_j - theta*_j|| <= Delta/4``,
resampling and ``gamma = c1/p``, one round gives, with probability ``1 - 1/poly(m)``,

    ``||theta_j^+ - theta*_j|| <= 1/2 ||theta_j - theta*_j|| + c2 (sigma/p) sqrt(d/(m n'))``
    ``+ c3 exp(-c4 (rho/(rho+1))^2 n')``.

This experiment draws ``theta_j = theta*_j + alpha Delta u_j`` (``u_j`` uniform on the sphere),
runs one resampled round (:func:`.trial.ifca_contraction_trial`) and
records, per cluster, the ratio ``||theta_j^+ - theta*_j|| / ||theta_j - theta*_j||`` against the
right-hand side divided by the current distance, with the constants as
``tests/theory/test_theory_ifca.py`` fixes them (``c1 = 3/8``, ``c2 = 1``, ``c3 = 60``, ``c4 = 1/9``; the
derivation is in that test's docstring), and against the same without its misclustering term.
It also counts the workers the round misclustered (the driver's own identity estimates) and the
exact per-worker probability of that geometry (:func:`mixreg.theory.misclustering_probability`).

The grid goes to small ``n'`` on purpose, where a few percent of the workers are misclustered:
there Assumption 2's ``n' >~ ((rho+1)/rho)^2 log m`` fails (with unit constants for the smallest
``n'``, with the test suite's constant 36 everywhere) and ``alpha > 1/4`` is outside Assumption 1,
so the bound is evaluated as a formula there, not as the theorem (the figure says which).

Run ``python -m experiments.ifca_contraction`` (quick, well under a minute on two cores) or
``--preset paper``.  Writes into ``results/ifca_contraction/<preset>``: ``trials.csv``,
``ratios.csv`` (per ``(rho, alpha, n')``: quantiles of the ratio over draws = trials x clusters,
the bound ratios, violation counts and fractions, the smallest ``c3`` covering every draw,
measured and exact misclustering, whether Assumptions 1 and 2 hold), ``violations.csv``
(fractions of draws violating each bound, over the cells inside Assumption 1 and over all),
``manifest.json`` and ``ifca_contraction.{png,pdf}``; ``--redraw DIR`` redraws.
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

from mixreg.problems import ProblemSpec
from mixreg.study import Spec, Study, param

from ..ifca_mechanism import SPLIT_COST, mechanism_memory
from .figures import draw, plot_one_round_contraction
from .summary import DEFAULT_SEED, K, NAME, TABLES, assumption2_unit, summarise
from .trial import COLUMNS, ContractionSpec, ifca_contraction_trial

__all__ = ["STUDY", "Config", "PRESETS", "ContractionSpec", "cells_of", "trial_flops", "summarise", "assumption2_unit",
           "draw", "NAME", "TABLES", "DEFAULT_SEED", "K", "COLUMNS", "ifca_contraction_trial",
           "plot_one_round_contraction"]

REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Spec):
    """The sweep; every field but ``preset`` is a flag named as the field."""

    preset: str = param("quick (default, < 1 min) or paper")
    m: int = param("workers (k = 2 balanced clusters, p = 1/2)", low=K)
    d: int = param("dimension", low=1)
    rhos: tuple[float, ...] = param("signal-to-noise ratios rho = Delta^2 / sigma^2 (Delta = 1)", low=0,
                                    low_open=True, distinct=True)
    alphas: tuple[float, ...] = param("current closeness: ||theta_j - theta*_j|| = alpha Delta", low=0,
                                      low_open=True, distinct=True)
    n_primes: tuple[int, ...] = param("points per worker in each of the round's two subsets", low=1, distinct=True)
    trials: int = param("trials per (rho, alpha, n') cell", low=1)
    c1: float = param("step size gamma = c1 / p (tests/theory/test_theory_ifca.py: 3/8)", default=0.375, low=0,
                      low_open=True)
    c2: float = param("Theorem 1's noise-term constant (tests/theory/test_theory_ifca.py: 1)", default=1.0, low=0,
                      low_open=True)
    c3: float = param("Theorem 1's misclustering-term constant (tests/theory/test_theory_ifca.py: 60)", default=60.0,
                      low=0)
    c4: float = param("its exponent's constant (tests/theory/test_theory_ifca.py: 1/9)", default=1.0 / 9.0, low=0,
                      low_open=True)
    level: float = param("level of the Wilson intervals", default=0.95, low=0, high=1, low_open=True,
                         high_open=True)


PRESETS = {
    "quick": dict(m=1000, d=10, rhos=(1.0, 4.0), alphas=(0.1, 0.25, 0.4), n_primes=(3, 6, 12, 24, 48), trials=12),
    "paper": dict(m=4000, d=20, rhos=(0.5, 1.0, 4.0, 16.0), alphas=(0.05, 0.1, 0.25, 0.4),
                  n_primes=(2, 4, 8, 16, 32, 64), trials=50),
}


def cells_of(config):
    """One cell per ``(rho, alpha, n')``: a :class:`ContractionSpec` (``k = 2``, ``n = 2 n'``, ``Delta = 1``)."""
    cells = []
    for rho in config.rhos:
        for alpha in config.alphas:
            for n_prime in config.n_primes:
                problem = ProblemSpec(m=config.m, k=K, n=2 * n_prime, d=config.d, sigma=float(1.0 / np.sqrt(rho)),
                                      scale=1.0, protocol="gaussian")
                cells.append(ContractionSpec(problem=problem, rho=float(rho), alpha=float(alpha),
                                             **{c: float(getattr(config, c)) for c in ("c1", "c2", "c3", "c4")}))
    return tuple(cells)


def trial_flops(spec):
    """Flop-equivalents of a trial: drawing the ``N d`` Gaussians (about 100 each, ``N = m n``),
    one round (about ``(k + 3) 2 N d``) and the two splits' loops
    (:data:`experiments.ifca_mechanism.SPLIT_COST`)."""
    pb = spec.problem
    Nd = pb.m * pb.n * pb.d
    return float(((pb.k + 3) * 2 + 100) * Nd + 2 * SPLIT_COST * pb.m)


STUDY = Study(
    name=NAME,
    command="python -m experiments.ifca_contraction",
    description="One IFCA round against Theorem 1's contraction, including regimes where misclustering is not "
                "negligible.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    trial=ifca_contraction_trial,
    spec_type=ContractionSpec,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    cost=trial_flops,
    memory=mechanism_memory,
    size_flags=("--m", "--d", "--n-primes"),
    paper_presets=("paper",),
    figures_dir=REPO / "figures",
    algorithms=(),  # its trial calls its drivers directly (fingerprinted as imports)
)
