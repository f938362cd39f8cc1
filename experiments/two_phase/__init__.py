"""Su, Xu and Yang's two-phase algorithm against IFCA on unbalanced clients: controls and contraction.

Run ``python -m experiments.two_phase`` for the quick default (about a minute of CPU, half a
minute on two idle cores), or ``--preset paper`` for the full-scale stand-in.  The paper's
numerical settings are not known (the full text and its experiment section were not available to
us): both presets follow **our** stand-in protocol, not the paper's:

* :math:`\\theta^*_l` Gaussian, rescaled to minimum separation :math:`\\Delta`; features
  :math:`N(0, \\Sigma_l)` with random diagonal :math:`\\Sigma_l` (spectrum log-uniform in
  ``[cov_low, cov_high]``); noise :math:`N(0, \\sigma^2)`;
* labels i.i.d., cluster 0 with probability ``p_min`` and the others sharing the rest;
* client sizes i.i.d. from a heavy-tailed law of fixed mean on ``[1, n_max]`` (about half the
  clients hold a single point under the default Zipf law);
* one anchor per cluster (journal version) topped up to ``anchor_points`` points.

What it answers
---------------
1. **Is IFCA's error floor clustering or aggregation weighting?**  IFCA runs with Algorithm 2's
   client-uniform weights and with data weights :math:`n_i/N` (a control), each from random
   starts and from :math:`\\theta^*`, beside FMD then FedAvg / FedProx and the two exact
   fixed points with the true labels: known-label least squares (data weights) and the
   client-weighted least squares (client weights).  Every method chooses its step size the
   same way: the lowest final value of its own training objective over the grid ``steps`` (FedX
   :math:`\\eta`; IFCA :math:`\\gamma = \\eta/2`, the same step on the per-point squared error),
   never a distance to the truth (:mod:`.trial`).
2. **Does Phase 2 contract at the theorem's** :math:`1 - C_1 p_{min}` **?**  The per-round factor is
   measured from the round the decoded labels settle, as a ratio of distances to the exact fixed
   point of the settled map, against :math:`1 - C_1 p_{min}` with :math:`C_1` derived in advance
   from the step size and the covariance bounds (:mod:`mixreg.theory._sxy`: FedAvg(1)
   :math:`C_1 = \\eta\\,\\lambda_-`; FedProx from the proximal operator), and the rounds to the
   floor against :math:`\\rho^{-1}\\log(1/\\nu)`, :math:`\\rho = C_1 p_{min}`.
3. **Does the theorem's recursion describe the curves?**  Drawn from the measured Phase-1 output
   with the predicted rate and, as the floor, :math:`C_2\\nu\\log(1/\\nu)` with unit constants
   (a prediction, constants fixed before the data), and with :math:`C_2` fitted on the other
   cells and held out at the reference cell (its residual reported).
4. **Does 1 - factor grow like** :math:`p_{min}^1` **?**  The theorem's shape with :math:`C_1` free:
   the exponent of the median gap 1 - (measured factor) against ``p_min`` over the p_min sweep,
   fitted on its inner cells and validated on the smallest and largest, held out (a prediction
   registered in the manifest before the first trial; the derived :math:`C_1` of item 2 is a
   worst case of linear algebra, not the paper's constant).
5. **Is reusing the data crucial for data-scarce clients?**  FedAvg's Phase 2 again from the same
   Phase-1 output with sample splitting across rounds (``ablation_data="split"``: each point used
   in one round only, the assumption of IFCA's analysis that the slides say the method removes),
   paired with the reuse run on the same draw: the median log ratio of final errors with its
   paired bootstrap interval, a one-sided Wilcoxon signed-rank test, and the clustering error
   rates of both (all clients; clients of at most two points).

Grid: three one-dimensional sweeps through a reference cell (``M_ref``, ``law_ref``, ``p_ref``),
over ``Ms``, ``laws`` and ``p_mins``: the cells where the controls and the contraction are
measured and where the floor constant is fitted (the final error's scaling in ``M``, the size
law and ``p_min`` is the subject of the study ``two_phase_nu``).

Writes into the results directory (default ``results/two_phase/<preset>``):

* ``trials.csv`` (one row per trial; per-round curves as ``<method>_err_t<ttt>`` columns at the
  checkpoint rounds), ``summary.csv`` and ``manifest.json`` (from the engine);
* ``curves.csv``: median and quartiles of each curve at the reference cell;
* ``controls.csv``: per cell and method, the final error's median and quartiles, its ratio to
  the known-label least squares, and the step sizes chosen;
* ``contraction.csv``: per trial and local solver, the measured, exact and predicted factors and
  the rounds to the floor, measured and predicted;
* ``theory.csv``: per Phase-2 round at the reference cell, the recursions drawn on the rounds
  figure (unit constants; fitted :math:`C_2`) and the fixed points;
* ``checks.csv``: each claim the figures make, with the measured value, the reference value,
  the tolerance and the verdict;
* ``factor.csv`` and ``factor_fit.csv`` (item 4), ``ablation.csv`` and ``pairs.csv`` (item 5);
* ``two_phase_rounds.{png,pdf}``, ``two_phase_contraction.{png,pdf}`` and
  ``two_phase_factor_reuse.{png,pdf}`` (items 4 and 5), drawn from the tables alone;
  ``--redraw DIR`` redraws them from a results directory without running anything.

The paper preset also writes the figures to ``figures/two_phase_<name>_paper.{png,pdf}`` (when
the run is the unchanged preset).

Flags: one per field of :class:`Config`, named as the field (``--Ms``, ``--M-ref``, ``--laws``,
``--p-mins``, ``--steps``, ...), see ``--help``.  Flags of earlier versions (``--M``,
``--p-min``, ``--fedavg-step``, ``--fedprox-step``, ``--ifca-steps``) exit with a message naming
the new flag.
"""

from __future__ import annotations

import dataclasses
import pathlib

from mixreg.problems import SIZE_LAWS, ProblemSpec, size_law
from mixreg.study import Spec, Study, param

from .figures import draw, plot_two_phase_contraction, plot_two_phase_rounds
from .summary import CONTROL_METHODS, DEFAULT_SEED, NAME, PREDICTIONS, TABLES, cell_keys, summarise
from .trial import (
    CURVE_METHODS,
    SOLVERS,
    TWO_PHASE_CELLS,
    TwoPhaseSpec,
    curve_columns,
    two_phase_memory,
    two_phase_trial,
)

__all__ = ["STUDY", "Config", "Phase1Options", "PRESETS", "TwoPhaseSpec", "cells_of", "cell_keys", "trial_flops",
           "summarise", "draw", "NAME", "TABLES", "DEFAULT_SEED", "CONTROL_METHODS", "CURVE_METHODS", "SOLVERS",
           "TWO_PHASE_CELLS", "curve_columns", "two_phase_trial", "plot_two_phase_rounds", "plot_two_phase_contraction"]

REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Phase1Options(Spec):
    """Phase 1's data and step, as the two-phase studies (``two_phase``, ``two_phase_nu``) set them."""

    fmd_sampling: str = param("Phase-1 data of S_t: fresh disjoint pairs every round, or reused",
                              default="fresh", choices=("fresh", "reuse"))
    fmd_anchor_sampling: str = param("Phase-1 data of the anchors: fresh pairs every round, or reused",
                                     default="reuse", choices=("fresh", "reuse"))
    fmd_step_constant: float = param("Phase-1 step constant c of eta = c sqrt(lambda_1)", default=0.5, low=0,
                                     low_open=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Phase1Options):
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag of the command line, named as the field
    (``M_ref`` -> ``--M-ref``, ``p_mins`` -> ``--p-mins``), defaulting to the preset's value.
    """

    preset: str = param("quick (default, about a minute of CPU) or paper (about 5 CPU-minutes)")
    k: int = param("clusters", low=1)
    d: int = param("dimension", low=1, at_least="k", why="Phase 1 estimates k directions in dimension d")
    sigma: float = param("noise level sigma", low=0)
    separation: float = param("minimum separation Delta", low=0, low_open=True)
    Ms: tuple[int, ...] = param("numbers of clients M of the M sweep (besides M_ref)", low=1)
    M_ref: int = param("clients of the reference cell", low=1, renamed_from="--M")
    laws: tuple[str, ...] = param("client-size laws of the law sweep (besides law_ref)", choices=SIZE_LAWS)
    law_ref: str = param("client-size law of the reference cell", choices=SIZE_LAWS)
    p_mins: tuple[float, ...] = param("p_min values of the p_min sweep (besides p_ref)", low=0, low_open=True,
                                      renamed_from="--p-min")
    p_ref: float = param("p_min of the reference cell", low=0, low_open=True)
    size_mean: float = param("mean client size, in [1, n_max]", low=1, at_most="n_max")
    n_max: int = param("largest client size (at least 2: Phase 1 draws pairs of points from a client)", low=2)
    trials: int = param("trials per cell", low=1)
    fmd_rounds: int = param("Phase-1 rounds T1", low=1)
    fx_rounds: int = param("Phase-2 rounds", low=1)
    fedavg_steps: int = param("local steps s of FedAvg(s) (the contraction is predicted for s = 1 only)", default=1,
                              low=1)
    steps: tuple[float, ...] = param(
        "step sizes eta of every method, each run and the lowest final training loss kept: FedAvg and "
        "FedProx eta, IFCA gamma = eta / 2", default=(0.25, 0.5, 1.0), low=0, low_open=True,
        renamed_from=("--fedavg-step", "--fedprox-step", "--ifca-steps"))
    ifca_restarts: int = param("IFCA random starts (each run with every step size)", default=4, low=1)
    cov_low: float = param("smallest eigenvalue of the feature covariances Sigma_l", default=0.5, low=0,
                           low_open=True)
    cov_high: float = param("largest eigenvalue of the feature covariances Sigma_l", default=2.0, low=0,
                            low_open=True, at_least="cov_low")
    anchor_mode: str = param("one recruited anchor per cluster (journal) or random anchors (NeurIPS)",
                             default="per_cluster", choices=("per_cluster", "random"))
    n_anchors: int = param("anchors for --anchor-mode random (0 with per_cluster)", default=0, low=0)
    anchor_points: int = param("points per anchor", default=100, low=2)
    fmd_clients: int = param("clients |S_t| per Phase-1 round (0 = the method's default)", default=0, low=0)
    checkpoint_every: int = param("rounds between stored curve points", default=5, low=1)
    ablation_data: str = param("Phase-2 data of the paired ablation run of FedAvg: split (sample splitting across "
                               "rounds, each point used in one round) or reuse (no ablation run)", default="split",
                               choices=("split", "reuse"))

    def check(self):
        """The constraints across fields that :func:`mixreg.study.param` cannot say."""
        smallest = min(self.Ms + (self.M_ref,))
        if smallest < 2 * self.k:
            raise ValueError(f"Ms and M_ref must be at least 2k = {2 * self.k} (two clients per cluster), got "
                             f"{list(self.Ms)} and M_ref={self.M_ref}")
        if any(p > 1 / self.k for p in self.p_mins + (self.p_ref,)):
            raise ValueError(f"p_mins and p_ref must be in (0, 1/k] = (0, {1 / self.k:.4g}], got "
                             f"{list(self.p_mins)} and p_ref={self.p_ref!r}")
        if self.anchor_mode == "random" and not self.k <= self.n_anchors <= smallest:
            raise ValueError(f"with anchor_mode='random', n_anchors must be in [k, min M] = [{self.k}, "
                             f"{smallest}], got {self.n_anchors}")
        if self.checkpoint_every > self.fmd_rounds + self.fx_rounds:
            raise ValueError(f"checkpoint_every must be at most the total rounds {self.fmd_rounds + self.fx_rounds}, "
                             f"got {self.checkpoint_every}")
        for law in sorted(set(self.laws + (self.law_ref,))):  # the mean must be reachable by every law
            try:
                size_law(law, n_min=1, n_max=self.n_max, mean=self.size_mean)
            except ValueError as exc:
                raise ValueError(f"size_mean={self.size_mean!r} with n_max={self.n_max}: {exc}") from None


# Quick: k = 3 clusters in d = 10 with Delta = 2, sigma = 0.5, Sigma_l in [0.5, 2], mean client
# size 6 on [1, 200] (Zipf: about half the clients hold one point); 4 cells x 6 trials, about a
# minute of CPU: the reference (M = 2000, Zipf, p_min = 0.1), equal sizes (where the two IFCA
# weightings coincide but for the k anchors) and p_min = 0.05, 0.2 (the contraction against p_min).  Anchors hold 100
# points and reuse them in Phase 1 (50 pairs per round); S_t gets fresh pairs every round.
# 150 Phase-2 rounds: FedProx's slowest cluster contracts by ~0.98 per round at p_min = 0.1.
# Step sizes eta in {0.25, 0.5, 1}: up to 1 / cov_high, where no cluster can overshoot (see
# mixreg.theory._sxy).
#
# Paper: sized to its two claims and to a shared machine, about 3 CPU-minutes (measured:
# docs/studies/two_phase.md).  The quick setting at M = 2000 with five p_min values (0.04 .. 0.25;
# the factor's exponent is fitted on the three inner ones and checked on the two outer ones, held
# out), 12 trials per cell (the paired ablation's test pools the 5 x 12 pairs and is also given per
# cell), one IFCA random start (IFCA is not in this preset's claims and was 60% of a trial's time),
# and ONE step size eta = 1 for every method: C1 depends on eta, so the exponent of 1 - factor in
# p_min is measured at one eta (with three steps FedProx's chosen eta drifts with p_min and the fit
# mixes two effects).  The earlier paper preset (k = 4, d = 20, M up to 20000, 50 trials) took about
# 1.6 hours at 2 workers.
PRESETS = {
    "quick": dict(k=3, d=10, sigma=0.5, separation=2.0, Ms=(2000,), M_ref=2000, laws=("equal",), law_ref="zipf",
                  p_mins=(0.05, 0.2), p_ref=0.1, size_mean=6.0, n_max=200, trials=6, fmd_rounds=10,
                  fx_rounds=150, checkpoint_every=5),
    "paper": dict(k=3, d=10, sigma=0.5, separation=2.0, Ms=(2000,), M_ref=2000, laws=("zipf",), law_ref="zipf",
                  p_mins=(0.04, 0.07, 0.15, 0.25), p_ref=0.1, size_mean=6.0, n_max=200, trials=12,
                  fmd_rounds=10, fx_rounds=150, steps=(1.0,), ifca_restarts=1, checkpoint_every=5),
}



def _cell(config, M, law, p_min):
    """One cell: the problem (stored under :data:`TWO_PHASE_CELLS`) and the methods' settings."""
    problem = ProblemSpec(m=int(M), k=config.k, d=config.d, sigma=float(config.sigma),
                          scale=float(config.separation), protocol="gaussian", size_law=law,
                          size_mean=float(config.size_mean), n_max=config.n_max, p_min=float(p_min),
                          cov_low=float(config.cov_low), cov_high=float(config.cov_high),
                          anchor_mode=config.anchor_mode, n_anchors=config.n_anchors,
                          anchor_points=config.anchor_points)
    return TwoPhaseSpec(
        problem=problem, fmd_rounds=config.fmd_rounds, fmd_sampling=config.fmd_sampling,
        fmd_anchor_sampling=config.fmd_anchor_sampling, fmd_step_constant=float(config.fmd_step_constant),
        fmd_clients=config.fmd_clients, fx_rounds=config.fx_rounds, fedavg_steps=config.fedavg_steps,
        steps=tuple(float(g) for g in config.steps), ifca_restarts=config.ifca_restarts,
        checkpoint_every=config.checkpoint_every, ablation_data=config.ablation_data)


def cells_of(config):
    """The cells of :func:`.summary.cell_keys`, as :class:`TwoPhaseSpec`."""
    return tuple(_cell(config, *key) for key in cell_keys(config))


def trial_flops(spec):
    """Dominant cost, IFCA's (k + 1) 2 N d flops per replica-round (N ~ M * mean size), two aggregations."""
    pb = spec.problem
    replicas = 2 * (spec.ifca_restarts + 1) * len(spec.steps)
    rounds = spec.fmd_rounds + spec.fx_rounds
    return float((pb.k + 1) * 2 * pb.m * pb.size_mean * pb.d * replicas * rounds)


STUDY = Study(
    name=NAME,
    command="python -m experiments.two_phase",
    description="Su-Xu-Yang's two-phase algorithm (FMD then FedAvg/FedProx) against IFCA on unbalanced "
                "clients: IFCA's aggregation controls, the measured Phase-2 contraction against the "
                "theorem's, and the theorem's recursion on the rounds figure.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    trial=two_phase_trial,
    spec_type=TwoPhaseSpec,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    cost=trial_flops,
    memory=two_phase_memory,
    size_flags=("--M-ref", "--Ms", "--n-max", "--d", "--anchor-points", "--fx-rounds", "--ifca-restarts",
                "--steps"),
    record=lambda config: {**dataclasses.asdict(config), "curve_methods": list(CURVE_METHODS)},
    paper_presets=("paper",),
    figures_dir=REPO / "figures",
    algorithms=(),  # its trial calls its drivers directly (fingerprinted as imports)
    predictions=PREDICTIONS,  # registered in the manifest before the first trial
)
