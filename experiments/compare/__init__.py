"""The registered methods of :data:`.trial.COMPARED`, head to head, on a suite of regimes.

Run ``python -m experiments.compare`` for the quick default (eight regimes, k = 2, d = 10,
m = 40, 8 trials each, about a minute on two cores), ``--preset paper`` (the same problems, 24
trials each: about 9 CPU-minutes; its figures are copied into ``figures/``) or ``--preset full``
(40 trials, m = 100).

Methods (:mod:`.trial`): IFCA (options I and II, two aggregations), Su-Xu-Yang's
Phase 2 (FedAvg(2), FedProx with the ML decoder) from random starts, the one-shot method, FeSEM,
PACFL (joint and x-only signatures), point-level IFCA and k-FED (an explicit list: the two-phase
method, registered as ``two_phase``, needs anchor clients and is not compared); and the reference
points global FedAvg (k = 1), local-only least squares, known-label least squares and IFCA from the
truth.
Every method is tuned the same way: the replica (random start x step size of one grid) with the
lowest final value of its own training objective, never a distance to the truth.

Regimes (:data:`.trial.REGIMES`), each a change of one thing from ``balanced``:

``balanced``        n_i = n for every client, identity covariances, clusters of equal size
``small_n``         n_i = d / 5 < d: local least squares is underdetermined
``unbalanced``      log-normal client sizes from 2 to 10 n, mean n (some n_i < d)
``covariances``     cluster-specific diagonal covariances, spectra log-uniform on [0.1, 10]
``low_snr``         sigma three times larger
``high_snr``        sigma ten times smaller
``unequal_p``       labels i.i.d., cluster 0 with probability 0.2
``mixed``           clients that mix clusters: 60% of a client's points from its main cluster, the
                    rest from the mixture (the IFCA thesis, chapter 4)

Writes into the results directory (default ``results/compare/<preset>``): ``trials.csv`` (one row
per trial, ``<method>_<metric>`` columns), ``summary.csv`` (one row per regime and method: the
mean of every metric, with 95% intervals for the errors and the misclustering, and how many
trials had every replica diverge, which never enter a mean), ``manifest.json``, and one figure
per regime, ``compare_<regime>.png`` / ``.pdf``, drawn from ``summary.csv`` alone (``--redraw
DIR`` redraws them).
"""

from __future__ import annotations

import dataclasses
import pathlib
import warnings
from collections.abc import Mapping

from mixreg.algorithms import unmet_precondition
from mixreg.montecarlo import SweepWarning
from mixreg.study import Spec, Study, param

from .figures import draw, plot_comparison
from .summary import DEFAULT_SEED, NAME, TABLES, summarise
from .trial import (
    COMPARED,
    METHODS,
    METRICS,
    REFERENCES,
    REGIMES,
    STEPS,
    TOL,
    VARIANTS,
    CompareSpec,
    compare_memory,
    compare_trial,
    spec_of,
)

__all__ = ["STUDY", "Config", "PRESETS", "CompareSpec", "cells_of", "method_refusals", "summarise", "draw", "NAME",
           "TABLES", "DEFAULT_SEED", "COMPARED", "METHODS", "METRICS", "REFERENCES", "REGIMES", "STEPS", "TOL",
           "VARIANTS", "compare_trial", "compare_memory", "spec_of", "plot_comparison"]

REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Spec):
    """Everything that defines the comparison (what the manifest records and a resume compares)."""

    preset: str = param("quick (default, about a minute), paper (24 trials per regime, about 9 CPU-minutes) or "
                        "full")
    regimes: tuple[str, ...] = param("regimes to run (REGIMES of experiments/compare/trial.py)",
                                     choices=tuple(REGIMES), distinct=True)
    m: int = param("clients", low=1)
    n: int = param("points per client (the mean, in the unbalanced regime)", low=1)
    d: int = param("dimension", low=1)
    k: int = param("clusters", low=2, at_most="m", why="every cluster needs a client")
    sigma: float = param("noise level sigma (x 3 and / 10 in the SNR regimes)", low=0, low_open=True)
    separation: float = param("minimum distance between the theta*_l (Gaussian protocol)", low=0, low_open=True)
    trials: int = param("trials per regime", low=1)
    n_inits: int = param("random starts per method, each run with every step size of the grid", low=1)
    n_rounds: int = param("most rounds of every iterative phase", low=1)

    def __post_init__(self):
        # the recorded config (_record) holds the regimes' descriptions under their names, in order:
        # a config rebuilt from a manifest (--redraw) reads the names
        if isinstance(self.regimes, Mapping):
            object.__setattr__(self, "regimes", tuple(self.regimes))
        super().__post_init__()

    def check(self):
        """The unequal_p regime's share of cluster 0 (0.2 <= 1/k), and every regime's problem."""
        if "unequal_p" in self.regimes and 0.2 > 1 / self.k:
            raise ValueError(f"the unequal_p regime gives cluster 0 probability 0.2, which needs k <= 5, got k={self.k}")
        for regime in self.regimes:
            _spec(self, regime)  # raises naming the ProblemSpec field


PRESETS = {
    "quick": dict(regimes=tuple(REGIMES), m=40, n=40, d=10, k=2, sigma=0.5, separation=2.0, trials=8, n_inits=3,
                  n_rounds=200),
    # paper: the quick preset's problems with 3x its trials, so every interval of summary.csv is about
    # sqrt(3) narrower (see docs/studies/compare.md for why this size)
    "paper": dict(regimes=tuple(REGIMES), m=40, n=40, d=10, k=2, sigma=0.5, separation=2.0, trials=24, n_inits=3,
                  n_rounds=200),
    "full": dict(regimes=tuple(REGIMES), m=100, n=40, d=10, k=2, sigma=0.5, separation=2.0, trials=40, n_inits=5,
                 n_rounds=300),
}


def cells_of(config):
    """One cell per regime: the regime's name and the base problem (see :func:`spec_of`).

    Warns (a :class:`mixreg.montecarlo.SweepWarning`, shown in one line by the command line) once
    per method a regime refuses whatever the draw (:func:`method_refusals`): the grid is where
    the study learns it, before any trial runs."""
    for line in method_refusals(config):
        warnings.warn(line, SweepWarning, stacklevel=3)
    return tuple(CompareSpec(regime=regime, m=config.m, n=config.n, d=config.d, k=config.k, sigma=float(config.sigma),
                             separation=float(config.separation), n_rounds=config.n_rounds, n_inits=config.n_inits)
                 for regime in config.regimes)


def _spec(config, regime):
    return spec_of(regime, m=config.m, n=config.n, d=config.d, k=config.k, sigma=config.sigma,
                   separation=config.separation)


def _given(config, regime, unmet):
    """What the flags make of the size ``unmet`` falls short on, in the user's terms."""
    if unmet.size == "d":
        return f"--d {config.d}"
    if unmet.size == "k":
        return f"--k {config.k}"
    if regime == "small_n":
        return f"n_i = d/5 = {unmet.value} in the small_n regime (--d {config.d})"
    return f"--n {config.n}"


def method_refusals(config):
    """The methods each regime's problems refuse whatever the draw, from the flags alone.

    A method of the registry whose precondition
    (:attr:`mixreg.algorithms.Algorithm.precondition`) fails on a regime's sizes is recorded as
    refused in every trial of that regime (``<method>_refused``, the ``refused`` and
    ``refusal`` columns of ``summary.csv``, a note on the figure) while the other methods run.
    Under a size law (``unbalanced``) the smallest client is random: only what fails at every
    client size is listed.

    Returns
    -------
    list of str
        One line per (regime, method): ``regime small_n: kfed needs ...; got n_i = d/5 = 1 in
        the small_n regime (--d 7)``.
    """
    lines = []
    for regime in config.regimes:
        spec = _spec(config, regime)
        n_min = spec.n if spec.size_law is None else spec.n_max
        for name in COMPARED:
            unmet = unmet_precondition(name, d=spec.d, k=spec.k, n_min=n_min)
            if unmet is not None:
                lines.append(f"regime {regime}: {name} needs {unmet.needs}; got {_given(config, regime, unmet)} "
                             "(recorded as refused; the other methods run)")
    return lines


def _record(config):
    """The recorded config: the flags, the methods, the step grid, the tolerance, the tuning rule
    and the regimes' descriptions (in place of their names)."""
    return dict(dataclasses.asdict(config), methods=list(METHODS), steps=list(STEPS), tol_relative=TOL,
                tuning="per method, the replica (start x step) with the lowest final training objective",
                regimes={name: REGIMES[name][0] for name in config.regimes})


STUDY = Study(
    name=NAME,
    command="python -m experiments.compare",
    description="Every registered method and the reference points, head to head, on a suite of regimes.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    trial=compare_trial,
    spec_type=CompareSpec,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    memory=compare_memory,
    size_flags=("--m", "--n", "--d", "--k", "--n-inits"),
    record=_record,
    paper_presets=("paper",),
    figures_dir=REPO / "figures",
    algorithms=COMPARED,  # the registered methods it runs by name
)
