"""The terms of Su-Xu-Yang's nu one at a time: is the two-phase method's final error shaped like
the global theorem's ``nu / p_min``?

Run ``python -m experiments.two_phase_nu`` for the quick default (19 cells x 10 trials: about 35 s of
CPU, a minute on two shared cores), or ``--preset paper`` for the larger grid (30 cells x 40 trials:
about 5 minutes of CPU, so about 3 minutes on two idle cores).  The
theorem (Su, Xu and Yang, NeurIPS 2022; see ``mixreg.theory``) bounds the final error by
``nu log(1/nu) / p_min`` up to constants, with

    nu = sum_i k w_i exp(-C3 n_i)  +  C4 sqrt(d k log k / M (chi2(w) + 1)),   w_i = n_i / N.

Five one-dimensional sweeps through one reference cell (``M_ref`` clients of mean size
``n_ref``, ``p_ref``), each moving one term and holding the others fixed, with client sizes that
are not drawn but designed (:class:`.trial.SizeDesign`), so that ``M``,
``N``, ``chi2(w)`` and ``nu`` are exactly the same in every trial of a cell:

``tiny``
    the small-client term: a fraction of the clients hold ``n_tiny`` points, the others share
    the rest equally, at fixed ``N`` and ``M`` (``chi2(w)`` rises with it; it is in the
    prediction);
``chi2``
    the chi-square term: a few big clients hold the data that ``M - q`` clients of ``n_low``
    points leave, at fixed ``N`` and ``M``;
``M_fixed_n``
    the number of clients at a fixed client size (``N`` grows with ``M``): nu and known-label
    least squares both fall like ``M^-1/2`` here;
``M_fixed_N``
    the number of clients at fixed ``N`` (client sizes shrink): nu still falls like
    ``M^-1/2`` (until its small-client term wakes up) while known-label least squares is flat;
``p_min``
    the smallest cluster's share at fixed sizes, hence at fixed nu: the bound goes like
    ``1 / p_min``.

Methods per trial (:func:`.trial.two_phase_nu_trial`): FMD -> FedAvg(s) and
FMD -> FedProx (Phase 2 run until it stops moving), and known-label least squares (the oracle).

For every sweep and method, the fitted exponent (:func:`mixreg.predictions.fit_exponent`; a
log-slope along the tiny-client fraction, which starts at 0, :func:`mixreg.stats.fit_slope`) of
the median final error with a stratified bootstrap interval is set against the exponent the
bound predicts, computed in advance from the cells' sizes with unit constants
(:func:`mixreg.theory.sxy_axis_exponent`; the log factor left out, and reported separately), and
against the rate of known-label least squares (verdicts:
:func:`mixreg.predictions.exponent_verdict`).  The level constant ``C`` of
``C nu / p_min`` is fitted with each sweep held out and its residual shown on the held-out sweep
(:func:`mixreg.theory.leave_group_out_constant`).

The paper gives no ``C3``, ``C4``: the ``constants`` and ``region`` tables ask which pairs of a grid
(``C3`` in [0.01, 10], ``C4`` in [0.01, 100], log-spaced) make the bound's exponent along every
sweep lie inside the sweep's fitted interval, for ``nu / p_min`` and for the theorem's
``nu log(1/nu) / p_min`` (:func:`mixreg.theory.sxy_constants_exponents`), each interval at 99% so
that the five sweeps together hold the true constants with probability at least 95% (Bonferroni);
and whether one level constant puts ``C nu / p_min`` inside every cell's exact median interval.
The ``p_min`` sweep holds nu fixed: its prediction, ``-1``, needs no constant.

Writes into the results directory (default ``results/two_phase_nu/<preset>``):

* ``trials.csv``, ``summary.csv``, ``manifest.json`` (from the engine);
* ``axes.csv``: one row per sweep and cell: the sweep's ``x``, the realised ``M_total``,
  ``N_total``, ``p_min``, ``chi2``, ``nu1``, ``nu2``, ``nu``, the bound's shape ``nu / p_min``,
  per method the median and quartiles of the final error, the held-out line
  ``C_{-sweep} nu / p_min`` and its residual;
* ``exponents.csv``: per sweep and method, ``predicted`` (the bound's exponent),
  ``predicted_log`` (with the log factor), ``ls_rate`` (the known-label least-squares
  exponent of the design), ``fitted`` with ``low``/``high`` (95% bootstrap), ``verdict``
  (predicted inside the interval or not) and ``verdict_ls``;
* ``holdout.csv``: per sweep and method, ``C`` fitted without the sweep and the residual range on
  it, and the range of ``median final error / (nu / p_min)`` over all cells;
* ``constants.csv``: per shape of the bound (``variant``: ``nu`` or ``nu_log``) and pair
  ``(C3, C4)`` of the grid, whether the shape is defined at every cell, the range of nu, the
  exponent predicted along each sweep (``predicted_<sweep>``), and per method the sweeps whose
  99% interval holds it (``<method>_consistent``, e.g. ``tiny+chi2``), whether one level constant
  fits every cell (``<method>_level``) and the smallest constant with which the bound lies above
  every cell's median (``<method>_C_min``);
* ``region.csv``: per method, variant and test (each sweep, the four ``nu sweeps``, ``all
  sweeps``, ``one level``) the pairs that pass, their extent in ``C3`` and ``C4``, whether the
  unit constants pass, whether the prediction needs no constant (``constant_free``) and the
  verdict (``no constants fit``, ``region``, ``every pair fits``, ``not tested``);
* ``two_phase_nu.{png,pdf}`` and ``two_phase_nu_constants.{png,pdf}``, drawn from the tables
  alone; ``--redraw DIR`` redraws them.

The paper preset also writes the figures to ``figures/two_phase_nu_paper.{png,pdf}`` and
``figures/two_phase_nu_constants_paper.{png,pdf}`` (when the run is the unchanged preset).  Flags:
one per field of :class:`Config` (``--tiny-fractions``,
``--chi2s``, ``--Ms-fixed-n``, ``--Ms-fixed-N``, ``--N-fixed``, ``--p-mins``, ...), see ``--help``.
"""

from __future__ import annotations

import dataclasses
import pathlib

from mixreg.study import Study, param

from experiments.two_phase import Phase1Options

from .figures import (
    draw,
    level_statement,
    plot_nu_constants,
    plot_nu_sweeps,
    region_statement,
    results_markdown,
    statement,
)
from .summary import (
    AXES,
    AXIS_NAMES,
    C3_GRID,
    C4_GRID,
    DEFAULT_SEED,
    JOINT_LEVEL,
    METHOD_KEYS,
    NAME,
    NU_SWEEPS,
    TABLES,
    VARIANTS,
    axis_designs,
    design_key,
    median_interval,
    summarise,
)
from .trial import (
    DESIGN_KEYS,
    NuTrialSpec,
    SizeDesign,
    design_quantities,
    two_phase_nu_memory,
    two_phase_nu_trial,
)

__all__ = ["STUDY", "Config", "PRESETS", "NuTrialSpec", "SizeDesign", "DESIGN_KEYS", "cells_of", "axis_designs",
           "design_key", "trial_flops", "summarise", "draw", "statement", "NAME", "TABLES", "DEFAULT_SEED", "AXES",
           "AXIS_NAMES", "METHOD_KEYS", "design_quantities", "two_phase_nu_trial", "two_phase_nu_memory",
           "plot_nu_sweeps", "plot_nu_constants", "level_statement", "region_statement", "results_markdown",
           "median_interval", "C3_GRID", "C4_GRID", "JOINT_LEVEL", "VARIANTS", "NU_SWEEPS"]

REPO = pathlib.Path(__file__).resolve().parents[2]

_SLOPES = ("tiny_fractions", "chi2s", "Ms_fixed_n", "Ms_fixed_N", "p_mins")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Phase1Options):
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag of the command line, named as the field
    (``Ms_fixed_n`` -> ``--Ms-fixed-n``), defaulting to the preset's value.
    """

    preset: str = param("quick (default, about 35 s of CPU) or paper (about 5 min of CPU)")
    k: int = param("clusters", low=2)
    d: int = param("dimension", low=1, at_least="k", why="Phase 1 estimates k directions in dimension d")
    sigma: float = param("noise level sigma", low=0)
    separation: float = param("minimum separation Delta of theta*", low=0, low_open=True)
    M_ref: int = param("ordinary clients of the reference cell (the k anchors come on top)", low=1)
    n_ref: int = param("client size of the reference cell (N_ref = M_ref n_ref)", low=1)
    p_ref: float = param("fraction of the ordinary clients in the smallest cluster, reference cell (at most 1/k)",
                         low=0, low_open=True, high=0.5)
    tiny_fractions: tuple[float, ...] = param("fractions of tiny clients of the 'tiny' sweep", low=0, high=1,
                                              high_open=True)
    chi2s: tuple[float, ...] = param("target chi-squares of the bulk sizes of the 'chi2' sweep", low=0)
    Ms_fixed_n: tuple[int, ...] = param("numbers of clients M of the 'M at fixed n_i' sweep (each at least 2k)",
                                        low=1)
    Ms_fixed_N: tuple[int, ...] = param("numbers of clients M of the 'M at fixed N' sweep (each at least 2k, at most "
                                        "N_fixed)", low=1)
    N_fixed: int = param("total points N of the ordinary clients along the 'M at fixed N' sweep", low=1)
    p_mins: tuple[float, ...] = param("p_min values of the 'p_min at fixed nu' sweep (each at most 1/k)", low=0,
                                      low_open=True, high=0.5)
    trials: int = param("trials per cell", low=1)
    n_tiny: int = param("points of a tiny client", default=1, low=1)
    n_low: int = param("points of the small clients of the 'chi2' sweep (0 = n_ref - 1), below n_ref", default=0,
                       low=0)
    anchor_points: int = param("points of each of the k anchors (one per cluster)", default=60, low=2)
    cov_low: float = param("smallest eigenvalue of the feature covariances Sigma_l", default=0.5, low=0,
                           low_open=True)
    cov_high: float = param("largest eigenvalue of the feature covariances Sigma_l", default=2.0, low=0,
                            low_open=True, at_least="cov_low")
    fmd_rounds: int = param("Phase-1 rounds T1", default=10, low=1)
    fx_rounds: int = param("Phase-2 rounds at most", default=1500, low=1)
    fx_tol: float = param("Phase 2 stops once no coordinate moves more than this in a round", default=1e-6, low=0)
    fedavg_steps: int = param("local steps s of FedAvg(s)", default=1, low=1)
    fedavg_step: float = param("FedAvg step size eta", default=1.0, low=0, low_open=True)
    fedprox_step: float = param("FedProx parameter eta", default=10.0, low=0, low_open=True)
    n_boot: int = param("bootstrap resamples of each fitted exponent", default=2000, low=1)

    @property
    def low_size(self):
        """``n_low`` of the 'chi2' sweep (``n_ref - 1`` when the field is 0)."""
        return self.n_low or self.n_ref - 1

    def check(self):
        """What no field's keywords say: the slopes' two points, ``n_low < n_ref``, ``M <= N_fixed``
        (a relation checked here, after ``N_fixed``'s own range), ``M >= 2k``, ``p <= 1/k``, and
        every design of every sweep buildable (raises naming the problem)."""
        if self.n_low >= self.n_ref:
            raise ValueError(f"n_low must be below n_ref (0 = n_ref - 1); got n_low={self.n_low}, n_ref={self.n_ref}")
        if self.n_ref < 2 and self.n_low == 0:
            raise ValueError("n_ref must be at least 2 when n_low = 0 (n_low = n_ref - 1 >= 1)")
        for name in _SLOPES:
            if len(getattr(self, name)) < 2:
                raise ValueError(f"{name} needs at least 2 values (a slope), got {list(getattr(self, name))}")
        if any(M > self.N_fixed for M in self.Ms_fixed_N):  # here, not at_most=: N_fixed comes later
            raise ValueError(f"every value of Ms_fixed_N must be at most N_fixed (every client needs a point); "
                             f"got Ms_fixed_N={list(self.Ms_fixed_N)}, N_fixed={self.N_fixed}")
        for name in ("Ms_fixed_n", "Ms_fixed_N"):
            if any(M < 2 * self.k for M in getattr(self, name)):
                raise ValueError(f"every value of {name} must be at least 2k (two clients per cluster); "
                                 f"got {name}={list(getattr(self, name))}, k={self.k}")
        if any(p > 1 / self.k for p in self.p_mins + (self.p_ref,)):
            raise ValueError(f"p_mins and p_ref must be at most 1/k = {1 / self.k:.4g} (the smallest cluster's "
                             f"share); got p_mins={list(self.p_mins)}, p_ref={self.p_ref!r}")
        axis_designs(self)


# Quick: k = 3, d = 10, Delta = 2, sigma = 1.5 (snr Delta^2/sigma^2 = 1.8: clients of a few points are
# misclustered often enough that the clustering error shows, the regime the nu terms are about),
# reference M = 1000 clients of 8 points, p_min = 0.2, 10 trials per cell, 19 distinct cells.
# Paper: the same problem with wider sweeps and 40 trials per cell.
PRESETS = {
    "quick": dict(k=3, d=10, sigma=1.5, separation=2.0, M_ref=1000, n_ref=8, p_ref=0.2,
                  tiny_fractions=(0.0, 0.2, 0.4, 0.6), chi2s=(0.0, 0.5, 1.0, 2.0, 3.0),
                  Ms_fixed_n=(500, 1000, 2000, 4000), Ms_fixed_N=(1000, 2000, 3000, 4000, 6000), N_fixed=24000,
                  p_mins=(0.05, 0.1, 0.2, 1 / 3), trials=10),
    "paper": dict(k=3, d=10, sigma=1.5, separation=2.0, M_ref=2000, n_ref=8, p_ref=0.2,
                  tiny_fractions=(0.0, 0.15, 0.3, 0.45, 0.6, 0.7), chi2s=(0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 6.0),
                  Ms_fixed_n=(500, 1000, 2000, 4000, 8000, 16000),
                  Ms_fixed_N=(1000, 1500, 2000, 3000, 4000, 6000, 8000), N_fixed=48000,
                  p_mins=(0.03, 0.05, 0.1, 0.15, 0.2, 0.25, 1 / 3), trials=40),
}


def cells_of(config):
    """The five sweeps' cells, each distinct design once (the reference cell is on four sweeps)."""
    designs = {}
    for sweep in axis_designs(config).values():
        for design in sweep:
            designs.setdefault(design_key(design), design)
    return tuple(_cell(config, design) for design in designs.values())


def _cell(config, design):
    """One cell: the design, the problem and the methods."""
    return NuTrialSpec(
        design=design, d=config.d, sigma=float(config.sigma), separation=float(config.separation),
        cov_low=float(config.cov_low), cov_high=float(config.cov_high), fmd_rounds=config.fmd_rounds,
        fmd_sampling=config.fmd_sampling, fmd_anchor_sampling=config.fmd_anchor_sampling,
        fmd_step_constant=float(config.fmd_step_constant), fx_rounds=config.fx_rounds, fx_tol=float(config.fx_tol),
        fedavg_steps=config.fedavg_steps, fedavg_step=float(config.fedavg_step),
        fedprox_step=float(config.fedprox_step),
    )


def trial_flops(spec):
    """Dominant cost: per local solver and Phase-2 round, ``2 x 2 k N_total d`` flops (about 150
    rounds assumed; Phase 2 stops when it stops moving).  An upper bound since numerics change 3:
    a round is the predictions' ``2 k N_total d`` and an update of ``2 N_total d`` (it was a
    second product of ``2 k N_total d``); kept so that the estimates of committed runs stand."""
    design = spec.design
    return float(2 * 2 * 2 * design.k * (design.N + design.k * design.anchor_points) * spec.d * 150)


STUDY = Study(
    name=NAME,
    command="python -m experiments.two_phase_nu",
    description="Su-Xu-Yang's nu one term at a time: fitted exponents of the two-phase method's final "
                "error against the bound's, with a held-out constant.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    trial=two_phase_nu_trial,
    spec_type=NuTrialSpec,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    cost=trial_flops,
    memory=two_phase_nu_memory,
    size_flags=("--M-ref", "--n-ref", "--Ms-fixed-n", "--Ms-fixed-N", "--N-fixed", "--d", "--anchor-points"),
    paper_presets=("paper",),
    figures_dir=REPO / "figures",
    algorithms=(),  # its trial calls its drivers directly (fingerprinted as imports)
)
