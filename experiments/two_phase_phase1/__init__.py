"""Phase 1 of Su, Xu and Yang (federated moment descent) in the regime its theorem is about.

The Phase-1 theorem (slides, "Theoretical Guarantee for Phase 1"): with anchors of
:math:`n_A = \\tilde\\Omega(k)` points, :math:`M_A = \\tilde\\Omega(k)` anchors and
:math:`M \\ge p_{\\min}^{-2}\\tilde\\Omega(d)` clients, from **any** initialisation, Phase 1 reaches
:math:`d(\\hat\\theta, \\theta^*) \\le \\epsilon` in O(1) rounds.  Run
``python -m experiments.two_phase_phase1`` (quick: 40 s to 2 minutes on two cores, depending on
what else runs) or ``--preset paper`` (larger; see the preset's comment for its cost).  Both presets follow our
stand-in protocol (the paper's settings are not known): :math:`\\theta^*_l` Gaussian at minimum
separation :math:`\\Delta`, features :math:`N(0, I_d)`, noise :math:`N(0, \\sigma^2)`, labels
i.i.d. with cluster 0 of probability ``p_min``, non-anchor clients with **two points each**, all
anchors started at one :math:`\\theta_0` at distance ``far`` :math:`\\cdot\\Delta` from every truth
(:func:`.trial.far_init`).  Phase 1 runs ``fmd_rounds`` rounds; each anchor reuses
its ``n_A`` points every round (``n_A // 2`` fresh pairs of them), the server's :math:`S_t` is
every non-anchor client under ``fmd_sampling="reuse"`` (so ``M`` counts the clients used).

Two parts, one trial function (:func:`.trial.phase1_trial`):

(a) **the error against n_A and against d**: Phase 1's output error and the per-anchor errors,
    beside each anchor's own least squares (minimum-norm when :math:`n_A < d`), for random
    anchors drawn without the labels (conference version) and one anchor per cluster (journal
    version).  The number of clients follows the theorem's unit, :math:`M = c_{ref}\\, d /
    p_{\\min}^2`, so the d sweep stays in the claimed regime, where the error should not depend
    on d: its fitted slope against d (predicted 0) goes to ``exponents.csv``;
(b) **the clients needed**: for each ``(d, p_min)``, success rates at accuracies
    :math:`\\Delta/q` over a grid :math:`M = c\\, d / p_{\\min}^2`, the smallest grid ``M`` with
    success in at least half the trials, and the exponents of that ``M`` against ``d``
    (predicted +1) and ``p_min`` (predicted -2), jointly fitted with bootstrap intervals.

Writes into the results directory (default ``results/two_phase_phase1/<preset>``):
``trials.csv``, ``summary.csv``, ``manifest.json`` (the engine's, registering the predicted exponents
:data:`.summary.PREDICTIONS` before the first trial); ``errors.csv`` (part a),
``exponents.csv`` (axis, setting, predicted, fitted, low, high, verdict), ``needed.csv`` and
``rates.csv`` (part b); ``phase1_error.{png,pdf}`` and ``phase1_clients.{png,pdf}``, drawn from
the tables alone (``--redraw DIR`` redraws them).  The paper preset also copies its figures to
``figures/``.  Flags: one per field of :class:`Config` (``--nA-grid``, ``--d-grid``,
``--need-ds``, ``--target-divisors``, ...), see ``--help``.
"""

from __future__ import annotations

import dataclasses
import pathlib

from mixreg.problems import ANCHOR_MODES, ProblemSpec
from mixreg.study import Spec, Study, param

from .figures import draw, plot_clients_needed, plot_phase1_error
from .summary import DEFAULT_SEED, NAME, PREDICTIONS, TABLES, cell_keys, rates_keys, summarise
from .trial import PHASE1_CELLS, Phase1Spec, c_label, clients_for, phase1_memory, phase1_trial

__all__ = ["STUDY", "Config", "PRESETS", "Phase1Spec", "cells_of", "cell_keys", "rates_keys", "trial_flops", "summarise", "draw",
           "NAME", "TABLES", "DEFAULT_SEED", "PREDICTIONS", "PHASE1_CELLS", "c_label", "clients_for", "phase1_trial",
           "plot_phase1_error", "plot_clients_needed"]

REPO = pathlib.Path(__file__).resolve().parents[2]

_INCREASING = ("nA_grid", "d_grid", "need_ds", "need_p_mins", "need_cs", "target_divisors", "rates_ds", "rates_ks",
               "rates_p_mins", "rates_nA_grid")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Spec):
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag, named as the field (``nA_grid`` -> ``--nA-grid``).
    """

    preset: str = param("quick (default, about 80 CPU-seconds) or paper (about 10 CPU-minutes)")
    k: int = param("clusters (at least 2: the far start is placed at a multiple of the separation of theta*, "
                   "which one cluster does not have)", low=2)
    sigma: float = param("noise level sigma", low=0)
    separation: float = param("minimum separation Delta of theta*", low=0, low_open=True)
    far: float = param("distance of the initialisation from every theta*_l, in units of Delta", low=0)
    fmd_rounds: int = param("Phase-1 rounds T", low=1)
    fmd_step_constant: float = param("Phase-1 step constant c of eta = c sqrt(lambda_1)", low=0, low_open=True)
    trials: int = param("trials per cell", low=1)
    # part (a)
    anchor_modes: tuple[str, ...] = param("anchor versions of part (a): random (without labels) and/or "
                                          "per_cluster", choices=ANCHOR_MODES, distinct=True)
    n_anchors: int = param("anchors M_A of the random version", low=1)
    p_ref: float = param("p_min of part (a)", low=0, low_open=True)
    c_ref: float = param("clients of part (a) in the theorem's unit: M = c_ref d / p_min^2", low=0, low_open=True)
    d_ref: int = param("dimension of the n_A sweep", low=1)
    nA_grid: tuple[int, ...] = param("anchor sizes n_A of the n_A sweep (increasing; at least 2, one pair)", low=2,
                                     distinct=True)
    nA_ref: int = param("anchor size n_A of the d sweep (at least 2, one pair)", low=2)
    d_grid: tuple[int, ...] = param("dimensions of the d sweep (increasing)", low=1, distinct=True)
    # part (b)
    need_ds: tuple[int, ...] = param("dimensions of the clients-needed grid (increasing)", low=1, distinct=True)
    need_p_mins: tuple[float, ...] = param("p_min values of the clients-needed grid (increasing)", low=0,
                                           low_open=True, distinct=True)
    need_cs: tuple[float, ...] = param("grid of M in the theorem's unit: M = c d / p_min^2 (increasing)", low=0,
                                       low_open=True, distinct=True)
    need_nA: int = param("anchor size n_A of part (b) (at least 2, one pair)", low=2)
    target_divisors: tuple[int, ...] = param("accuracy targets Delta/q: success is d(theta_hat, theta*) < Delta/q "
                                             "(increasing)", low=1, distinct=True)
    main_divisor: int = param("the target drawn as success rates in the clients figure", low=1)
    need_anchor_mode: str = param("anchor version of part (b)", default="per_cluster", choices=ANCHOR_MODES)
    fmd_sampling: str = param("data of S_t: every non-anchor client each round (reuse) or fresh disjoint pairs",
                              default="reuse", choices=("reuse", "fresh"))
    # part (c)
    rates_ds: tuple[int, ...] = param("part (c): dimensions of the d sweep (increasing, holds rates_d_ref)", low=1,
                                      distinct=True)
    rates_ks: tuple[int, ...] = param("part (c): clusters of the k sweep (increasing, holds rates_k_ref)", low=2,
                                      distinct=True)
    rates_p_mins: tuple[float, ...] = param("part (c): p_min values of the p_min sweep (increasing, holds "
                                            "rates_p_ref)", low=0, low_open=True, distinct=True)
    rates_d_ref: int = param("part (c): dimension of the k and p_min sweeps", low=1)
    rates_k_ref: int = param("part (c): clusters of the d and p_min sweeps", low=2)
    rates_p_ref: float = param("part (c): p_min of the d and k sweeps", low=0, low_open=True)
    rates_c: float = param("part (c): clients M = rates_c d / p_min^2", low=0, low_open=True)
    rates_nA_grid: tuple[int, ...] = param("part (c): anchor sizes n_A, run on nested prefixes of one anchor per "
                                           "cluster (increasing; at least 2, one pair)", low=2, distinct=True)
    rates_divisor: int = param("part (c): the accuracy Delta/q reached (rounds) and needed (n_A)", low=1)
    n_boot: int = param("bootstrap replicates of the fitted exponents", default=2000, low=1)

    def check(self):
        """The constraints across fields that :func:`mixreg.study.param` cannot say."""
        for name in _INCREASING:
            values = list(getattr(self, name))
            if values != sorted(values):
                raise ValueError(f"{name} must be increasing, got {values}")
        dims = self.d_grid + self.need_ds + (self.d_ref,)
        if min(dims) <= self.k:
            raise ValueError(f"every dimension must exceed k={self.k} (the far start lies outside the "
                             f"truths' span), got {sorted(set(dims))}")
        for grid, ref in (("rates_ds", "rates_d_ref"), ("rates_ks", "rates_k_ref"), ("rates_p_mins", "rates_p_ref")):
            if getattr(self, ref) not in getattr(self, grid):
                raise ValueError(f"{grid} must hold {ref}={getattr(self, ref)!r} (the sweeps meet at the reference "
                                 f"cell), got {list(getattr(self, grid))}")
        if min(self.rates_ds) <= self.rates_k_ref or self.rates_d_ref <= max(self.rates_ks):
            raise ValueError(f"part (c)'s dimensions must exceed its k: rates_ds {list(self.rates_ds)} above "
                             f"rates_k_ref={self.rates_k_ref}, rates_d_ref={self.rates_d_ref} above max(rates_ks)")
        if self.rates_p_ref > 1.0 / max(self.rates_ks) + 1e-12 or max(self.rates_p_mins) > 1.0 / self.rates_k_ref + 1e-12:
            raise ValueError(f"rates_p_ref must be <= 1/max(rates_ks) and rates_p_mins <= 1/rates_k_ref, got "
                             f"{self.rates_p_ref!r}, {list(self.rates_p_mins)}")
        if self.main_divisor not in self.target_divisors:
            raise ValueError(f"main_divisor must be one of target_divisors {list(self.target_divisors)}, "
                             f"got {self.main_divisor}")
        if len(self.need_ds) < 2 or len(self.need_p_mins) < 2:
            raise ValueError(f"need_ds and need_p_mins need at least 2 values each to fit exponents, got "
                             f"{list(self.need_ds)} and {list(self.need_p_mins)}")
        if any(p > 1.0 / self.k + 1e-12 for p in self.need_p_mins + (self.p_ref,)):
            raise ValueError(f"need_p_mins and p_ref must be in (0, 1/k] = (0, {1 / self.k:.4g}], got "
                             f"{list(self.need_p_mins)} and p_ref={self.p_ref!r}")
        if "random" in self.anchor_modes + (self.need_anchor_mode,) and self.n_anchors < self.k:
            raise ValueError(f"n_anchors must be >= k={self.k} for random anchors, got {self.n_anchors}")
        if self.fmd_sampling == "fresh" and self.fmd_rounds > 1:
            smallest = min(clients_for(c, d, p) for c in (min(self.need_cs), self.c_ref)
                           for d in dims for p in self.need_p_mins + (self.p_ref,))
            if smallest < self.k * self.fmd_rounds:
                raise ValueError(f"fmd_sampling='fresh' splits the {smallest} clients of the smallest cell over "
                                 f"{self.fmd_rounds} rounds, fewer than k={self.k} per round")


# Quick: k = 3, Delta = 1, sigma = 0.25, start at 5 Delta from every truth, 20 rounds with c = 0.8
# (c = 0.5 needs about twice the rounds; with n_A = 4k the error still falls between rounds 15
# and 30, slightly more at large d, so fewer rounds would show a growth with d that is only slower
# convergence).  (a): n_A from k to 16k at d = 24, and d from 6 to 48 at n_A = 4k, both versions
# (9 random anchors), balanced clusters, M = 16 d / p_min^2 = 144 d.  (b): d in {6, 12, 24} x
# p_min in {1/3, 0.2}, M = c d / p_min^2 for c = 0.5 .. 32, journal anchors of 16k points (so that
# the anchors are not the bottleneck).  (c): one anchor per cluster cut to n_A in {4, ..., 64}, M =
# 16 d / p_min^2, d in {6, 12, 24}, k in {2, 3, 4}, p_min in {0.1, 0.2, 0.3} through (12, 3, 0.2),
# target Delta/2.  8 trials; about 80 CPU-seconds (4 to 5 minutes of wall time on busy cores).
#
# Paper: sized to the four claims and to a shared machine, about 5 CPU-minutes (measured: see
# docs/studies/two_phase_phase1.md).  (a) as quick with 10 trials, d up to 24 (the constant-accuracy
# claim reads medians at n_A >= 4k, both versions).  (b) three values each of d (6, 12, 24) and p_min
# (0.15, 0.22, 1/3) -- two p_min values cannot pin the p_min exponent -- with c up to 32 so that the
# Delta/3 crossings (c ~ 10-20 on the quick run) lie inside the grid.  10 trials per cell in every part.  (c) four values per
# axis (d 6..24, k 2..6, p_min 0.12..1/3), n_A in steps of about x1.4 up to 48 = 8k at k = 6, M = 8 d /
# p_min^2 (the Delta/2 crossing in M is at c ~ 2-3 at k = 3).  d stops at 24 because the cost grows as
# M d^2 = c d^3 / p_min^2 per round: the earlier paper preset (d up to 96, M up to 128 d / p_min^2,
# 30 trials) was 3 to 8 CPU-hours, and a first cut of this one (p_min down to 0.08, M = 16 d / p_min^2)
# spent 6 CPU-seconds per trial of its costliest cell.
PRESETS = {
    "quick": dict(k=3, sigma=0.25, separation=1.0, far=5.0, fmd_rounds=20, fmd_step_constant=0.8, trials=8,
                  anchor_modes=("random", "per_cluster"), n_anchors=9, p_ref=1 / 3, c_ref=16.0, d_ref=24,
                  nA_grid=(3, 6, 12, 24, 48), nA_ref=12, d_grid=(6, 12, 24, 48),
                  need_ds=(6, 12, 24), need_p_mins=(0.2, 1 / 3), need_cs=(0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0),
                  need_nA=48, target_divisors=(2, 3, 4), main_divisor=3, n_boot=1000,
                  rates_ds=(6, 12, 24), rates_ks=(2, 3, 4), rates_p_mins=(0.1, 0.2, 0.3), rates_d_ref=12,
                  rates_k_ref=3, rates_p_ref=0.2, rates_c=16.0, rates_nA_grid=(4, 8, 16, 32, 64), rates_divisor=2),
    "paper": dict(k=3, sigma=0.25, separation=1.0, far=5.0, fmd_rounds=20, fmd_step_constant=0.8, trials=10,
                  anchor_modes=("random", "per_cluster"), n_anchors=9, p_ref=1 / 3, c_ref=16.0, d_ref=24,
                  nA_grid=(3, 6, 12, 24, 48), nA_ref=12, d_grid=(6, 12, 24),
                  need_ds=(6, 12, 24), need_p_mins=(0.15, 0.22, 1 / 3),
                  need_cs=(1.0, 2.0, 4.0, 8.0, 16.0, 32.0), need_nA=48,
                  target_divisors=(2, 3, 4), main_divisor=3, n_boot=2000,
                  rates_ds=(6, 12, 18, 24), rates_ks=(2, 3, 4, 6), rates_p_mins=(0.12, 0.16, 0.24, 0.33),
                  rates_d_ref=12, rates_k_ref=3, rates_p_ref=0.16, rates_c=8.0,
                  rates_nA_grid=(4, 6, 8, 12, 16, 24, 32, 48), rates_divisor=2),
}



def _cell(config, d, p_min, n_A, cs, mode):
    """One cell: the problem (stored under :data:`PHASE1_CELLS`) and Phase 1's settings."""
    n_anchors = config.n_anchors if mode == "random" else 0
    m = clients_for(max(cs), d, p_min) + (n_anchors or config.k)
    problem = ProblemSpec(m=m, k=config.k, d=int(d), sigma=float(config.sigma), scale=float(config.separation),
                          protocol="gaussian", n=2, p_min=float(p_min), anchor_mode=mode, n_anchors=n_anchors,
                          anchor_points=int(n_A))
    return Phase1Spec(problem=problem, cs=tuple(float(c) for c in cs), far=float(config.far),
                      fmd_rounds=config.fmd_rounds, fmd_step_constant=float(config.fmd_step_constant),
                      fmd_sampling=config.fmd_sampling, part="ab", nA_grid=(int(n_A),))


def _rates_cell(config, d, k, p_min):
    """One part-(c) cell: one anchor per cluster holding ``max(rates_nA_grid)`` points, ``M = rates_c d /
    p_min^2`` clients, Phase 1 run for every ``n_A`` of the grid on prefixes of the anchors' points."""
    m = clients_for(config.rates_c, d, p_min) + int(k)
    problem = ProblemSpec(m=m, k=int(k), d=int(d), sigma=float(config.sigma), scale=float(config.separation),
                          protocol="gaussian", n=2, p_min=float(p_min), anchor_mode="per_cluster", n_anchors=0,
                          anchor_points=int(config.rates_nA_grid[-1]))
    return Phase1Spec(problem=problem, cs=(float(config.rates_c),), far=float(config.far),
                      fmd_rounds=config.fmd_rounds, fmd_step_constant=float(config.fmd_step_constant),
                      fmd_sampling=config.fmd_sampling, part="c", nA_grid=tuple(int(n) for n in config.rates_nA_grid))


def cells_of(config):
    """The cells of :func:`.summary.cell_keys` (parts a, b), then of :func:`.summary.rates_keys` (part c),
    as :class:`Phase1Spec`."""
    return (tuple(_cell(config, *key) for key in cell_keys(config))
            + tuple(_rates_cell(config, *key) for key in rates_keys(config)))


def trial_flops(spec):
    """Phase 1's dominant cost: per round and anchor, ``M (8 d + 2 d^2)`` flops (moment vectors, ``Y``),
    for every grid value of ``M`` (parts a, b) or of ``n_A`` (part c)."""
    pb = spec.problem
    anchors = pb.k if pb.anchor_mode == "per_cluster" else pb.n_anchors
    Ms = sum(clients_for(c, pb.d, pb.p_min) for c in spec.cs) * (len(spec.nA_grid) if spec.part == "c" else 1)
    return float(spec.fmd_rounds * anchors * Ms * (8 * pb.d + 2 * pb.d * pb.d))


STUDY = Study(
    name=NAME,
    command="python -m experiments.two_phase_phase1",
    description="Phase 1 of Su-Xu-Yang (federated moment descent) with small anchors and a far start: "
                "its error against n_A and d beside anchor least squares, and the clients it needs "
                "against d and p_min, with fitted exponents.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    trial=phase1_trial,
    spec_type=Phase1Spec,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    cost=trial_flops,
    memory=phase1_memory,
    size_flags=("--c-ref", "--d-ref", "--d-grid", "--nA-grid", "--nA-ref", "--need-ds", "--need-cs", "--need-nA",
                "--fmd-rounds"),
    paper_presets=("paper",),
    figures_dir=REPO / "figures",
    algorithms=(),  # its trial calls its drivers directly (fingerprinted as imports)
    predictions=PREDICTIONS,  # registered in the manifest before the first trial
)
