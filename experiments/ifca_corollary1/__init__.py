"""IFCA's Corollary 1 in full (linear model, ``Sigma = I``), and the numeric content of Lemma 2.

Corollary 1 (thesis Sec. 3.3; NeurIPS version, linear model): under Assumptions 1 and 2, with
``gamma = c1 / p``, with probability at least ``1 - log(Delta / (4 eps)) / poly(m)``, after
``T = log(Delta / (4 eps))`` rounds of resampled IFCA, ``||theta_j - theta*_j|| <= eps`` for all
``j``, with ``eps = c5 (sigma / p) sqrt(d / (m n')) + c6 exp(-c4 (rho / (rho + 1))^2 n')``.  It
iterates Theorem 1, whose distance at least halves each round (factor 1/2) up to the two additive
terms, so the log is ``log_2`` (our reading: ``T`` halvings take ``Delta / 4`` to ``eps``).  The
NeurIPS proof has no burn-in (Assumption 1 puts every model within ``Delta / 4``); the arXiv
version's proof (App. B) adds a constant number ``T'`` of rounds for its closeness parameter to
reach 1/4, which does not arise from ``alpha = 1/4`` as run here.

Three parts, each a set of cells (:class:`.trial.Corollary1Spec`; k = 2 balanced clusters,
``Delta = 1``, ``x ~ N(0, I_d)``, the resampling scheme, option I, full participation, models
started at ``theta*_j + alpha Delta u_j`` with ``alpha = 1/4``, Assumption 1's boundary):

* **rounds** (``ifca-cor1-rounds``, ``ifca-cor1-success-vs-m``): a run of ``rounds`` rounds per
  ``(m, c1)``, at a high ``rho`` (the exponential term negligible); per trial the rounds needed
  to reach each ``eps_h = (Delta / 4) 2^-h`` above the floor (``eps_h >= margin`` times the noise
  term ``(sigma / p) sqrt(d / (m n'))``) against ``T = h``, and whether the error after
  ``T = ceil(log2(Delta / (4 eps)))`` rounds is at most ``eps`` (success) for ``eps = kappa`` times
  the noise term, at the smallest ``m`` (series ``fixed``) or at each ``m`` (``scaled``).
  ``c1_theorem = 3/8`` is the test suite's constant (``tests/theory/test_theory_ifca.py``: one
  round at most halves the distance for ``p m n' >= 40 d``, 1/4 on average); ``c1 = 1/4`` is the
  edge where the population factor is exactly 1/2 (shown, not a verdict);
* **exponential** (``ifca-cor1-exponential-term``): small ``n'`` and small ``rho``, where clients
  stay misclustered at the end: the misclustered fraction of the last ``last`` rounds and the
  excess of the final error over the known-label run on the same data (the same resampled steps
  with the true labels), against ``x = (rho / (rho + 1))^2 n'``; ``c4`` fitted in
  ``A exp(-c4 x)`` on the cells whose ``rho`` is not in ``held_out_rhos``, validated on those;
* **lemma2** (``ifca-lemma2``, a proof lemma: App. A.2, Vershynin 2010 Thm 5.39 and the
  Hanson-Wright inequality): the pooled ``N x d`` Gaussian design of a cluster: the deviation of
  its singular values from ``sqrt(N)`` and ``||X^T X / N - I||_op`` against ``sqrt(d / N)``
  (exponents -1/2 in ``N``, +1/2 in ``d``), and ``||X^T eps|| / (sigma sqrt(N d))`` (its square has
  mean exactly 1).

Run ``python -m experiments.ifca_corollary1`` (quick, about 19 CPU-seconds) or
``--preset paper``.  Writes into ``results/ifca_corollary1/<preset>``: ``trials.csv``, the tables
of :data:`.summary.TABLES` (see :mod:`.summary`), ``manifest.json`` (registering
:data:`.summary.PREDICTIONS` before the first trial) and ``ifca_corollary1.{png,pdf}``;
``--redraw DIR`` redraws from a results directory.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib

from mixreg.problems import ProblemSpec
from mixreg.study import Spec, Study, param

from ..ifca_mechanism import SPLIT_COST
from .figures import draw, plot_corollary1
from .summary import DEFAULT_SEED, K, NAME, PREDICTIONS, TABLES, summarise
from .trial import COLUMNS, PARTS, Corollary1Spec, corollary1_memory, corollary1_trial

__all__ = ["STUDY", "Config", "PRESETS", "Corollary1Spec", "cells_of", "trial_flops", "summarise", "draw",
           "plot_corollary1", "NAME", "TABLES", "DEFAULT_SEED", "K", "COLUMNS", "PARTS", "PREDICTIONS",
           "corollary1_trial"]

REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Spec):
    """The sweep; every field but ``preset`` is a flag named as the field."""

    preset: str = param("quick (default, < 1 min on one core) or paper")
    trials: int = param("trials per cell", low=1)
    d: int = param("dimension", low=1)
    separation: float = param("minimum separation Delta of theta* (Gaussian protocol, exact)", default=1.0, low=0,
                              low_open=True)
    alpha: float = param("initial distance alpha Delta (Assumption 1: 1/4)", default=0.25, low=0, high=0.5,
                         low_open=True, high_open=True)
    # rounds part
    ms: tuple[int, ...] = param("rounds part: clients m (even: balanced clusters)", low=4, distinct=True)
    n_prime: int = param("rounds part: points per client in each of a round's two subsets", low=1)
    sigma: float = param("rounds part: noise level (rho = Delta^2 / sigma^2 high: exponential term negligible)",
                         low=0, low_open=True)
    c1s: tuple[float, ...] = param("rounds part: step constants, gamma = c1 / p", low=0, low_open=True,
                                   distinct=True)
    c1_theorem: float = param("the step constant of the verdicts and of the other parts (test suite's 3/8)",
                              default=0.375, low=0, low_open=True)
    rounds: int = param("rounds part: rounds T of every run", low=1)
    levels: int = param("rounds part: eps_h = (Delta / 4) 2^-h for h = 1..levels (those above the floor)", low=2)
    margin: float = param("rounds part: eps counts as above the floor when eps >= margin x noise term", default=2.0,
                          low=0, low_open=True)
    kappa: float = param("success rule: eps = kappa x noise term (Corollary 1's c5)", default=0.75, low=0,
                         low_open=True)
    # exponential part
    m_exp: int = param("exponential part: clients m", low=4)
    rhos: tuple[float, ...] = param("exponential part: rho = Delta^2 / sigma^2", low=0, low_open=True, distinct=True)
    n_primes_exp: tuple[int, ...] = param("exponential part: points per client and subset n'", low=1, distinct=True)
    rounds_exp: int = param("exponential part: rounds T of every run", low=1)
    last: int = param("exponential part: final rounds whose misclustered fraction is averaged", default=5, low=1)
    held_out_rhos: tuple[float, ...] = param("exponential part: rho values held out of the fit of c4", low=0,
                                             low_open=True, allow_empty=True)
    miscl_max: float = param("exponential part: cells whose mean misclustered fraction exceeds this are left out "
                             "of its fit (saturation)", default=0.25, low=0, high=1, low_open=True)
    # lemma 2
    lemma2_ns: tuple[int, ...] = param("Lemma 2: pooled design sizes N", low=2, distinct=True)
    lemma2_ds: tuple[int, ...] = param("Lemma 2: dimensions d", low=1, distinct=True)
    n_boot: int = param("bootstrap resamples of the intervals", default=2000, low=1)
    level: float = param("level of the intervals", default=0.95, low=0, high=1, low_open=True, high_open=True)

    def check(self):
        """What the fields cannot say alone."""
        if any(m % K for m in self.ms + (self.m_exp,)):
            raise ValueError(f"ms and m_exp must be even (k = 2 balanced clusters), got {list(self.ms)} and "
                             f"m_exp={self.m_exp}")
        if not any(math.isclose(c, self.c1_theorem) for c in self.c1s):
            raise ValueError(f"c1s must include c1_theorem = {self.c1_theorem}, got {list(self.c1s)}")
        if self.last > self.rounds_exp:
            raise ValueError(f"last must be at most rounds_exp = {self.rounds_exp}, got {self.last}")
        if not set(self.held_out_rhos) <= set(self.rhos):
            raise ValueError(f"held_out_rhos must be among rhos {list(self.rhos)}, got {list(self.held_out_rhos)}")
        if len(set(self.rhos) - set(self.held_out_rhos)) < 1:
            raise ValueError(f"held_out_rhos must leave at least one of rhos {list(self.rhos)} in the fit of c4, "
                             f"got {list(self.held_out_rhos)}")
        if any(N < 2 * d for N in self.lemma2_ns for d in self.lemma2_ds):
            raise ValueError(f"lemma2_ns must be at least 2 max(lemma2_ds) = {2 * max(self.lemma2_ds)} (Lemma 2 "
                             f"needs N >~ d in every cell), got {list(self.lemma2_ns)}")


# Rounds part: d = 10, n' = 20, sigma = 1e-3 (rho = 10^6, the exponential term nil), so the
# noise term 2 sigma sqrt(d / (m n')) runs from 2.8e-4 (m = 26) to 7e-5 (m = 400) and 8 to 10
# levels eps_h = 2^-h / 4 lie above twice it; 16 rounds cover the smallest of them at c1 = 1/4 and
# Corollary 1's T for the success rule (at most 13).  Exponential part: m = 200, d = 10, rho from 1
# to 8 and n' from 2 to 32 (about 40% to none misclustered at the end), 12 rounds (the distance
# contracts by about 1/4 a round, so the last 5 are at the floor), rho = 1 and 8 held out of the
# fit.  Lemma 2: N from 250 to 16000 (p m n' of the runs: 260 to 4000 and 200 to 3200), d from 5
# to 40.
# The paper preset's 300 trials per cell: they resolve a failure proportion of 0.09 (the derived
# failure of the scaled series) to about +-0.03 and a fall to 0 over m for the trend test, and
# give the exponential part's per-cell means intervals narrow enough for held-out residuals.  About
# 1.5 CPU-seconds per trial index (all cells), 8 CPU-minutes in all.
PRESETS = {
    "quick": dict(trials=12, d=10, ms=(26, 100, 400), n_prime=20, sigma=1e-3, c1s=(0.25, 0.375), rounds=16,
                  levels=14, m_exp=100, rhos=(1.0, 2.0, 4.0), n_primes_exp=(2, 4, 8, 16), rounds_exp=12, last=4,
                  held_out_rhos=(1.0,), lemma2_ns=(250, 1000, 4000), lemma2_ds=(5, 10, 20), n_boot=300),
    "paper": dict(trials=300, d=10, ms=(26, 50, 100, 200, 400), n_prime=20, sigma=1e-3, c1s=(0.25, 0.375),
                  rounds=16, levels=14, m_exp=200, rhos=(1.0, 2.0, 4.0, 8.0), n_primes_exp=(2, 4, 8, 16, 32),
                  rounds_exp=12, last=5, held_out_rhos=(1.0, 8.0), lemma2_ns=(250, 1000, 4000, 16000),
                  lemma2_ds=(5, 10, 20, 40), n_boot=2000),
}


def _problem(m, n, d, sigma, delta, k=K):
    return ProblemSpec(m=m, k=k, n=n, d=d, sigma=float(sigma), scale=float(delta), protocol="gaussian")


def cells_of(config):
    """The three parts' cells (:class:`.trial.Corollary1Spec`)."""
    cells, delta = [], config.separation
    for c1 in config.c1s:
        for m in config.ms:
            cells.append(Corollary1Spec(
                part="rounds", problem=_problem(m, 2 * config.rounds * config.n_prime, config.d, config.sigma, delta),
                rho=float(delta**2 / config.sigma**2), alpha=config.alpha, c1=float(c1), rounds=config.rounds,
                last=1))
    for rho in config.rhos:
        for n_prime in config.n_primes_exp:
            cells.append(Corollary1Spec(
                part="exponential", problem=_problem(config.m_exp, 2 * config.rounds_exp * n_prime, config.d,
                                                     delta / math.sqrt(rho), delta),
                rho=float(rho), alpha=config.alpha, c1=config.c1_theorem, rounds=config.rounds_exp, last=config.last))
    for N in config.lemma2_ns:
        for d in config.lemma2_ds:
            cells.append(Corollary1Spec(part="lemma2", problem=_problem(1, N, d, 1.0, delta, k=1), rho=1.0,
                                        alpha=config.alpha, c1=config.c1_theorem, rounds=1, last=1))
    return tuple(cells)


def trial_flops(spec):
    """Flop-equivalents of a trial: drawing the ``N d`` Gaussians (about 100 each), the rounds (about
    ``(k + 3) 2 N d`` over the run, ``N = m n``), the splits' loops and, for Lemma 2, an SVD."""
    pb = spec.problem
    Nd = pb.m * pb.n * pb.d
    if spec.part == "lemma2":
        return float(100 * Nd + 4 * pb.n * pb.d**2)
    known = 2 if spec.part == "exponential" else 1
    return float(known * ((pb.k + 3) * 2 + 100) * Nd + known * SPLIT_COST * pb.m)


STUDY = Study(
    name=NAME,
    command="python -m experiments.ifca_corollary1",
    description="IFCA's Corollary 1 in full: rounds to eps against log2(Delta/(4 eps)), success within T rounds "
                "against m, the exponential term where clients stay misclustered, and Lemma 2's design "
                "concentration.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    trial=corollary1_trial,
    spec_type=Corollary1Spec,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    cost=trial_flops,
    memory=corollary1_memory,
    size_flags=("--ms", "--n-prime", "--rounds", "--m-exp", "--n-primes-exp", "--lemma2-ns"),
    paper_presets=("paper",),
    figures_dir=REPO / "figures",
    algorithms=(),  # its trial calls its drivers directly (fingerprinted as imports)
    predictions=PREDICTIONS,  # registered in the manifest before the first trial
)
