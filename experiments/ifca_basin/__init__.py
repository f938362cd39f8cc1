"""IFCA's basin of attraction against the initial closeness alpha, with Assumption 1's predictions.

Assumption 1 asks for ``||theta_j^(0) - theta*_j|| <= Delta/4`` (NeurIPS version; ``alpha = 1/4``
in our convention ``||theta_j^(0) - theta*_j|| = alpha Delta``) or ``<= (1/2 - alpha') Delta``
(arXiv version, closeness ``alpha' in (0, 1/2)``; ``alpha = 1/2 - alpha'``).  This experiment
starts IFCA (option I, ``gamma = c1 / p``) at ``theta*_j + alpha Delta u_j`` for a grid of
``alpha`` and three directions ``u`` (:func:`mixreg.algorithms.ifca.closeness_init`):

* ``random``: independent uniform directions;
* ``adversarial``: each estimate towards its nearest other centre (the worst direction for
  every worker's identity estimate; for ``k = 2`` the two estimates move towards each other);
* ``shifted``: every estimate moved by the same vector, from the closest pair's first centre
  towards its second (one model approaches a second cluster while that cluster's model leaves).

Each trial runs IFCA twice on the same problem and start: with the resampling scheme of
Theorem 1 (``T`` rounds, ``n'`` fresh points per subset, ``n = 2 T n'``) and without it (full
batch, all ``n`` points every round), and scores both (:func:`.trial.
ifca_basin_trial`):

* **success**: final permutation-matched max distance below ``floor_factor`` times the largest
  known-label least-squares RMS error of the points the variant's update uses per round
  (``sigma sqrt(d / (p m n' - d - 1))`` with resampling, ``n`` instead of ``n'`` without;
  :func:`mixreg.metrics.oracle_ls_floor`), a stated choice tied to each variant's error floor;
* **success without permutation**: the same for ``max_j ||theta_j - theta*_j||`` (Theorem 1's
  notion: every estimate converges to the centre it started near).

Predictions drawn: Assumption 1's ``alpha <= 1/4`` (NeurIPS), the arXiv limit ``alpha -> 1/2``,
and the population edge (:func:`mixreg.theory.population_basin_edge`): the ``alpha`` at which a
worker's *expected* loss first prefers another model, exactly 1/2 for the adversarial and
shifted directions.  The measured edge is where the success rate first falls through 1/2
(interpolated in ``log alpha``).

Run ``python -m experiments.ifca_basin`` (quick, well under a minute on two cores) or
``--preset paper``.  Writes into ``results/ifca_basin/<preset>``: ``trials.csv``, ``rates.csv``
(per ``(k, direction, alpha)``: success rates with Wilson intervals for both variants and both
notions, final-error quartiles over ``Delta``, thresholds), ``edges.csv`` (per ``(k, direction,
variant, notion)``: measured edge and its bracketing grid values, population edge, Assumption
1's values), ``manifest.json`` and ``ifca_basin.{png,pdf}``; ``--redraw DIR`` redraws.
"""

from __future__ import annotations

import dataclasses
import pathlib

from mixreg.problems import ProblemSpec
from mixreg.study import Spec, Study, param

from ..ifca_mechanism import DIRECTIONS, mechanism_memory
from .figures import draw, plot_ifca_basin
from .summary import DEFAULT_SEED, NAME, NOTIONS, TABLES, VARIANTS, basin_edge, summarise
from .trial import COLUMNS, BasinSpec, ifca_basin_trial

__all__ = ["STUDY", "Config", "PRESETS", "BasinSpec", "cells_of", "trial_flops", "summarise", "basin_edge", "draw",
           "NAME", "TABLES", "DEFAULT_SEED", "COLUMNS", "VARIANTS", "NOTIONS", "ifca_basin_trial", "plot_ifca_basin"]

REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Spec):
    """The sweep; every field but ``preset`` is a flag named as the field."""

    preset: str = param("quick (default, < 1 min) or paper")
    ks: tuple[int, ...] = param("numbers of clusters k", low=2, distinct=True)
    m_per: int = param("workers per cluster (m = k m_per, balanced, p = 1/k)", low=1)
    n_prime: int = param("points per worker in each subset of a resampled round (n = 2 T n')", low=1)
    n_rounds: int = param("IFCA rounds T", low=1)
    d: int = param("dimension", low=1)
    sigma: float = param("noise standard deviation (Delta = 1; > 0: the threshold is tied to the noise floor)",
                         low=0, low_open=True)
    alphas: tuple[float, ...] = param("initial closeness alpha: ||theta_j - theta*_j|| = alpha Delta", low=0,
                                      low_open=True, distinct=True)
    directions: tuple[str, ...] = param("initial directions", choices=DIRECTIONS, distinct=True)
    trials: int = param("trials per (k, direction, alpha) cell", low=1)
    c1: float = param("step size gamma = c1 / p (Theorem 1; 3/8 as in the theory's default)", default=0.375, low=0,
                      low_open=True)
    floor_factor: float = param("success threshold: this times the known-label LS RMS error floor", default=2.0,
                                low=0, low_open=True)
    level: float = param("level of the Wilson intervals", default=0.95, low=0, high=1, low_open=True,
                         high_open=True)

    def check(self):
        if self.m_per * self.n_prime <= self.d + 1:
            raise ValueError(f"m_per * n_prime must exceed d + 1 = {self.d + 1} (the known-label floor of one "
                             f"round's points is infinite otherwise), got {self.m_per * self.n_prime}")


_ALPHAS_QUICK = (0.1, 0.25, 0.4, 0.45, 0.5, 0.55, 0.6, 0.75, 1.0, 1.5, 2.0, 3.0)
_ALPHAS_PAPER = (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.475, 0.5, 0.525, 0.55, 0.6, 0.7, 0.8, 1.0, 1.25, 1.5, 2.0,
                 2.5, 3.0, 4.0)
PRESETS = {
    "quick": dict(ks=(2, 4), m_per=20, n_prime=20, n_rounds=10, d=10, sigma=0.3, alphas=_ALPHAS_QUICK,
                  directions=DIRECTIONS, trials=12),
    "paper": dict(ks=(2, 4), m_per=50, n_prime=50, n_rounds=12, d=20, sigma=0.3, alphas=_ALPHAS_PAPER,
                  directions=DIRECTIONS, trials=20),
}


def cells_of(config):
    """One cell per ``(k, direction, alpha)``: a :class:`BasinSpec` (``Delta = 1``)."""
    cells = []
    for k in config.ks:
        problem = ProblemSpec(m=k * config.m_per, k=k, n=2 * config.n_rounds * config.n_prime, d=config.d,
                              sigma=float(config.sigma), scale=1.0, protocol="gaussian")
        for direction in config.directions:
            for alpha in config.alphas:
                cells.append(BasinSpec(problem=problem, direction=direction, alpha=float(alpha),
                                       n_rounds=config.n_rounds, c1=float(config.c1),
                                       floor_factor=float(config.floor_factor)))
    return tuple(cells)


def trial_flops(spec):
    """Flop-equivalents of a trial: two runs of ``T`` rounds, ``(k + 1) 2 N d`` per full-batch round
    and a ``1/(2T)`` of it resampled, plus drawing the ``N d`` Gaussians (about 100 each)."""
    pb = spec.problem
    Nd = pb.m * pb.n * pb.d
    return float((pb.k + 1) * 2 * Nd * spec.n_rounds * 1.1 + 100 * Nd)


STUDY = Study(
    name=NAME,
    command="python -m experiments.ifca_basin",
    description="IFCA's basin of attraction against the initial closeness alpha, with Assumption 1's "
                "predictions and the population edge.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    trial=ifca_basin_trial,
    spec_type=BasinSpec,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    cost=trial_flops,
    memory=mechanism_memory,
    size_flags=("--ks", "--m-per", "--n-prime", "--n-rounds", "--d"),
    paper_presets=("paper",),
    figures_dir=REPO / "figures",
    algorithms=(),  # its trial calls its drivers directly (fingerprinted as imports)
)
