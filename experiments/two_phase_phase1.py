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
(:func:`mixreg.trials_phase1.far_init`).  Phase 1 runs ``fmd_rounds`` rounds; each anchor reuses
its ``n_A`` points every round (``n_A // 2`` fresh pairs of them), the server's :math:`S_t` is
every non-anchor client under ``fmd_sampling="reuse"`` (so ``M`` counts the clients used).

Two parts, one trial function (:func:`mixreg.trials_phase1.phase1_trial`):

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
``trials.csv``, ``summary.csv``, ``manifest.json`` (the engine's); ``errors.csv`` (part a),
``exponents.csv`` (axis, setting, predicted, fitted, low, high, verdict), ``needed.csv`` and
``rates.csv`` (part b); ``phase1_error.{png,pdf}`` and ``phase1_clients.{png,pdf}``, drawn from
the tables alone (``--redraw DIR`` redraws them).  The paper preset also copies its figures to
``figures/``.  Flags: one per field of :class:`Config` (``--nA-grid``, ``--d-grid``,
``--need-ds``, ``--target-divisors``, ...), see ``--help``.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys

import numpy as np

from mixreg import cli as _cli
from mixreg.cli import param
from mixreg.montecarlo import Sweep
from mixreg.plotting import plot_clients_needed, plot_phase1_error, save_figure
from mixreg.problems import ANCHOR_MODES, ProblemSpec
from mixreg.stats import SlopeFit, fit_slope, slope_verdict, wilson_interval
from mixreg.algorithms import TRIAL_OVERHEAD
from mixreg.trials_phase1 import PHASE1_CELLS, c_label, clients_for, fit_clients_needed, phase1_memory, phase1_trial

NAME = "two_phase_phase1"
TABLES = ("errors", "exponents", "needed", "rates")  # <name>.csv; the figures are drawn from them alone
DEFAULT_SEED = 20220615  # any fixed integer would do
REPO = pathlib.Path(__file__).resolve().parent.parent


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag, named as the field (``nA_grid`` -> ``--nA-grid``).
    """

    preset: str = param("quick (default, 40 s to 2 min on 2 cores) or paper (larger, a few CPU-hours)")
    k: int = param("clusters")
    sigma: float = param("noise level sigma")
    separation: float = param("minimum separation Delta of theta*")
    far: float = param("distance of the initialisation from every theta*_l, in units of Delta")
    fmd_rounds: int = param("Phase-1 rounds T")
    fmd_step_constant: float = param("Phase-1 step constant c of eta = c sqrt(lambda_1)")
    trials: int = param("trials per cell")
    # part (a)
    anchor_modes: tuple[str, ...] = param("anchor versions of part (a): random (without labels) and/or "
                                          "per_cluster", choices=ANCHOR_MODES)
    n_anchors: int = param("anchors M_A of the random version")
    p_ref: float = param("p_min of part (a)")
    c_ref: float = param("clients of part (a) in the theorem's unit: M = c_ref d / p_min^2")
    d_ref: int = param("dimension of the n_A sweep")
    nA_grid: tuple[int, ...] = param("anchor sizes n_A of the n_A sweep")
    nA_ref: int = param("anchor size n_A of the d sweep")
    d_grid: tuple[int, ...] = param("dimensions of the d sweep")
    # part (b)
    need_ds: tuple[int, ...] = param("dimensions of the clients-needed grid")
    need_p_mins: tuple[float, ...] = param("p_min values of the clients-needed grid")
    need_cs: tuple[float, ...] = param("grid of M in the theorem's unit: M = c d / p_min^2")
    need_nA: int = param("anchor size n_A of part (b)")
    target_divisors: tuple[int, ...] = param("accuracy targets Delta/q: success is d(theta_hat, theta*) < Delta/q")
    main_divisor: int = param("the target drawn as success rates in the clients figure")
    need_anchor_mode: str = param("anchor version of part (b)", default="per_cluster", choices=ANCHOR_MODES)
    fmd_sampling: str = param("data of S_t: every non-anchor client each round (reuse) or fresh disjoint pairs",
                              default="reuse", choices=("reuse", "fresh"))
    n_boot: int = param("bootstrap replicates of the fitted exponents", default=2000)

    def validate(self):
        """Raise ``ValueError`` naming the first bad option and its allowed range."""
        for name in ("k", "fmd_rounds", "trials", "n_anchors", "d_ref", "nA_ref", "need_nA", "main_divisor",
                     "n_boot"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.k < 2:  # the far start lies far * Delta from theta*; one cluster has no separation Delta
            raise ValueError(f"k must be at least 2 (the far start is placed at a multiple of the separation of "
                             f"theta*, which one cluster does not have), got {self.k}")
        for name in ("nA_grid", "d_grid", "need_ds", "target_divisors"):
            values = getattr(self, name)
            if not values or any(not isinstance(v, (int, np.integer)) or v < 1 for v in values):
                raise ValueError(f"{name} must hold integers >= 1, got {list(values)}")
        for name in ("nA_grid", "d_grid", "need_ds", "need_p_mins", "need_cs", "target_divisors"):
            values = list(getattr(self, name))
            if not np.all(np.isfinite(values)):  # nan is no repeat, and sorts nowhere
                raise ValueError(f"{name} must hold finite values, got {values}")
            if values != sorted(set(values)):
                raise ValueError(f"{name} must be increasing without repeats, got {values}")
        if min(self.nA_grid + (self.nA_ref, self.need_nA)) < 2:
            raise ValueError(f"anchor sizes must be >= 2 (one pair), got nA_grid={list(self.nA_grid)}, "
                             f"nA_ref={self.nA_ref}, need_nA={self.need_nA}")
        dims = self.d_grid + self.need_ds + (self.d_ref,)
        if min(dims) <= self.k:
            raise ValueError(f"every dimension must exceed k={self.k} (the far start lies outside the "
                             f"truths' span), got {sorted(set(dims))}")
        if self.main_divisor not in self.target_divisors:
            raise ValueError(f"main_divisor must be one of target_divisors {list(self.target_divisors)}, "
                             f"got {self.main_divisor}")
        if len(self.need_ds) < 2 or len(self.need_p_mins) < 2:
            raise ValueError(f"need_ds and need_p_mins need at least 2 values each to fit exponents, got "
                             f"{list(self.need_ds)} and {list(self.need_p_mins)}")
        p_max = 1.0 / self.k + 1e-12
        if not self.need_p_mins or any(not 0 < p <= p_max for p in self.need_p_mins + (self.p_ref,)):
            raise ValueError(f"need_p_mins and p_ref must be in (0, 1/k] = (0, {1 / self.k:.4g}], got "
                             f"{list(self.need_p_mins)} and p_ref={self.p_ref!r}")
        if not self.need_cs or any(not np.isfinite(c) or c <= 0 for c in self.need_cs + (self.c_ref,)):
            raise ValueError(f"need_cs and c_ref must be finite and > 0, got {list(self.need_cs)} and "
                             f"c_ref={self.c_ref!r}")
        for name in ("sigma", "far"):
            value = getattr(self, name)
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
        for name in ("separation", "fmd_step_constant"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        if not self.anchor_modes or any(mode not in ANCHOR_MODES for mode in self.anchor_modes):
            raise ValueError(f"anchor_modes must be among {', '.join(ANCHOR_MODES)}, got {list(self.anchor_modes)}")
        if "random" in self.anchor_modes + (self.need_anchor_mode,) and self.n_anchors < self.k:
            raise ValueError(f"n_anchors must be >= k={self.k} for random anchors, got {self.n_anchors}")
        if self.fmd_sampling == "fresh" and self.fmd_rounds > 1:
            smallest = min(clients_for(c, d, p) for c in (min(self.need_cs), self.c_ref)
                           for d in dims for p in self.need_p_mins + (self.p_ref,))
            if smallest < self.k * self.fmd_rounds:
                raise ValueError(f"fmd_sampling='fresh' splits the {smallest} clients of the smallest cell over "
                                 f"{self.fmd_rounds} rounds, fewer than k={self.k} per round")
        return self


# Quick: k = 3, Delta = 1, sigma = 0.25, start at 5 Delta from every truth, 20 rounds with c = 0.8
# (c = 0.5 needs about twice the rounds; with n_A = 4k the error still falls between rounds 15
# and 30, slightly more at large d, so fewer rounds would show a growth with d that is only slower
# convergence).  (a): n_A from k to 16k at
# d = 24, and d from 6 to 48 at n_A = 4k, both versions (9 random anchors), balanced clusters,
# M = 16 d / p_min^2 = 144 d.  (b): d in {6, 12, 24} x p_min in {1/3, 0.2}, M = c d / p_min^2 for
# c = 0.5 .. 32, journal anchors of 16k points (so that the anchors are not the bottleneck), 8 trials;
# 40 s on two lightly loaded cores, 2 minutes on busy ones.  Paper: the same questions on wider
# grids (d up to 96 in (a); d in {8, 16, 32} x 4 values of p_min in (b), M up to 128 d / p_min^2,
# about 280000 clients at d = 32, p_min = 0.12), 30 rounds, 30 trials: 2.2e13 flops by the cost
# model, about 3 to 8 CPU-hours at the rates measured on the quick run and a medium run, under
# 1 GB per worker; not run for the figures here.  Use --jobs.
PRESETS = {
    "quick": dict(k=3, sigma=0.25, separation=1.0, far=5.0, fmd_rounds=20, fmd_step_constant=0.8, trials=8,
                  anchor_modes=("random", "per_cluster"), n_anchors=9, p_ref=1 / 3, c_ref=16.0, d_ref=24,
                  nA_grid=(3, 6, 12, 24, 48), nA_ref=12, d_grid=(6, 12, 24, 48),
                  need_ds=(6, 12, 24), need_p_mins=(0.2, 1 / 3), need_cs=(0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0),
                  need_nA=48, target_divisors=(2, 3, 4), main_divisor=3, n_boot=1000),
    "paper": dict(k=3, sigma=0.25, separation=1.0, far=5.0, fmd_rounds=30, fmd_step_constant=0.8, trials=30,
                  anchor_modes=("random", "per_cluster"), n_anchors=12, p_ref=1 / 3, c_ref=32.0, d_ref=48,
                  nA_grid=(3, 6, 12, 24, 48, 96, 192), nA_ref=12, d_grid=(6, 12, 24, 48, 96),
                  need_ds=(8, 16, 32), need_p_mins=(0.12, 0.16, 0.22, 1 / 3),
                  need_cs=(0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0), need_nA=48,
                  target_divisors=(2, 3, 4), main_divisor=4),
}


# --------------------------------------------------------------------------------------------
# The grid
# --------------------------------------------------------------------------------------------


def _cell(config, d, p_min, n_A, cs, mode):
    """One cell: the problem (a :class:`ProblemSpec`, keys of ``PHASE1_CELLS``) and Phase 1's settings."""
    n_anchors = config.n_anchors if mode == "random" else 0
    m = clients_for(max(cs), d, p_min) + (n_anchors or config.k)
    spec = ProblemSpec(m=m, k=config.k, d=int(d), sigma=float(config.sigma), scale=float(config.separation),
                       protocol="gaussian", n=2, p_min=float(p_min), anchor_mode=mode, n_anchors=n_anchors,
                       anchor_points=int(n_A))
    return dict(spec.to_cell(PHASE1_CELLS), cs=tuple(float(c) for c in cs), far=float(config.far),
                fmd_rounds=config.fmd_rounds, fmd_step_constant=float(config.fmd_step_constant),
                fmd_sampling=config.fmd_sampling)


def cell_keys(config):
    """``(d, p_min, n_A, cs, anchor_mode)`` of every cell: part (a), then part (b), no duplicates."""
    keys = []
    for mode in config.anchor_modes:
        keys += [(config.d_ref, config.p_ref, n_A, (config.c_ref,), mode) for n_A in config.nA_grid]
        keys += [(d, config.p_ref, config.nA_ref, (config.c_ref,), mode) for d in config.d_grid]
    keys += [(d, p, config.need_nA, tuple(config.need_cs), config.need_anchor_mode)
             for d in config.need_ds for p in config.need_p_mins]
    return tuple(dict.fromkeys(keys))


def cells_of(config):
    return tuple(_cell(config, *key) for key in cell_keys(config))


def trial_flops(cell):
    """Phase 1's dominant cost: per round and anchor, ``M (8 d + 2 d^2)`` flops (moment vectors, ``Y``)."""
    d = cell["d"]
    anchors = cell["k"] if cell["anchor_mode"] == "per_cluster" else cell["n_anchors"]
    Ms = sum(clients_for(c, d, cell["p_min"]) for c in cell["cs"])
    return float(cell["fmd_rounds"] * anchors * Ms * (8 * d + 2 * d * d))


#: The flags that set a trial's memory (a refusal for memory names them).
SIZE_FLAGS = _cli.config_flags("c_ref", "d_ref", "d_grid", "nA_grid", "nA_ref", "need_ds", "need_cs", "need_nA",
                               "fmd_rounds")


def trial_memory(cell):
    """Upper estimate of one trial's peak bytes: its arrays
    (:func:`mixreg.trials_phase1.phase1_memory`) and :data:`TRIAL_OVERHEAD`."""
    return TRIAL_OVERHEAD + phase1_memory(cell)


def build_sweep(config, root_seed=DEFAULT_SEED):
    config.validate()
    return Sweep(name=NAME, trial_fn=phase1_trial, cells=cells_of(config), n_trials=config.trials,
                 root_seed=root_seed, config=dataclasses.asdict(config), cost_fn=trial_flops,
                 memory_fn=trial_memory, size_names=SIZE_FLAGS)


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


def _ok(records):
    return [r for r in records if not r.get("error")]


def _num(value):
    return float("nan") if value is None else float(value)


def _values(rows, column):
    return np.array([_num(r.get(column)) for r in rows], dtype=float)


def _quartiles(values):
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    q = np.percentile(v, [50, 25, 75])
    return float(q[0]), float(q[1]), float(q[2])


def _select(records, d, p_min, n_A, cs, mode):
    return [r for r in _ok(records) if r["d"] == d and float(r["p_min"]) == float(p_min) and r["n_A"] == n_A
            and tuple(float(c) for c in r["cs"]) == tuple(float(c) for c in cs) and r["anchor_mode"] == mode]


def _errors(config, records):
    """Part (a): one row per (axis, anchor version, value of the axis)."""
    rows = []
    tag = c_label(config.c_ref)
    for mode in config.anchor_modes:
        for axis, values in (("n_A", config.nA_grid), ("d", config.d_grid)):
            for value in values:
                d, n_A = (config.d_ref, value) if axis == "n_A" else (value, config.nA_ref)
                sel = _select(records, d, config.p_ref, n_A, (config.c_ref,), mode)
                fmd = _values(sel, f"fmd_err_{tag}")
                ls = _values(sel, "ls_err")
                row = dict(axis=axis, anchor_mode=mode, d=d, n_A=n_A, p_min=config.p_ref,
                           M=clients_for(config.c_ref, d, config.p_ref), trials=len(sel))
                for name, v in (("fmd_err", fmd), ("ls_err", ls)):
                    row[f"{name}_median"], row[f"{name}_q25"], row[f"{name}_q75"] = _quartiles(v)
                row["fmd_err_mid_median"] = _quartiles(_values(sel, f"fmd_err_mid_{tag}"))[0]
                row["anchor_err_max_median"], row["anchor_err_max_q25"], row["anchor_err_max_q75"] = \
                    _quartiles(_values(sel, f"anchor_err_max_{tag}"))
                row["anchor_err_med_median"] = _quartiles(_values(sel, f"anchor_err_med_{tag}"))[0]
                row["ls_anchor_err_median"] = _quartiles(_values(sel, "ls_anchor_err_med"))[0]
                row["theta_norm_median"] = _quartiles(_values(sel, "theta_norm_max"))[0]
                covered = _values(sel, "anchor_clusters") == config.k
                row["covered_rate"] = float(np.mean(covered)) if sel else float("nan")
                row["init_distance_min"] = float(np.min(_values(sel, "init_distance"))) if sel else float("nan")
                for q in config.target_divisors:
                    row[f"fmd_success_D{q}"] = float(np.mean(fmd * q < _values(sel, "separation_realised"))) \
                        if sel else float("nan")
                rows.append(row)
    return rows


def _success(rows, tag, q):
    """Per trial: Phase 1's output within Delta/q (a failed or non-finite run is a failure)."""
    err = _values(rows, f"fmd_err_{tag}")
    return np.where(np.isfinite(err), err * q < _values(rows, "separation_realised"), False)


def _needed_cells(config, records, q):
    cells = []
    for d in config.need_ds:
        for p in config.need_p_mins:
            sel = _select(records, d, p, config.need_nA, tuple(config.need_cs), config.need_anchor_mode)
            Ms = np.array([clients_for(c, d, p) for c in config.need_cs], dtype=float)
            success = np.array([_success(sel, c_label(c), q) for c in config.need_cs], dtype=float).T
            cells.append(dict(d=d, p_min=p, Ms=Ms, success=success.reshape(len(sel), len(config.need_cs))))
    return cells


def _rates(config, records):
    rows = []
    for d in config.need_ds:
        for p in config.need_p_mins:
            sel = _select(records, d, p, config.need_nA, tuple(config.need_cs), config.need_anchor_mode)
            for c in config.need_cs:
                tag = c_label(c)
                row = dict(d=d, p_min=p, c=c, M=clients_for(c, d, p), trials=len(sel))
                row["err_median"], row["err_q25"], row["err_q75"] = _quartiles(_values(sel, f"fmd_err_{tag}"))
                row["err_mid_median"] = _quartiles(_values(sel, f"fmd_err_mid_{tag}"))[0]
                for q in config.target_divisors:
                    s = int(_success(sel, tag, q).sum())
                    low, high = wilson_interval(s, len(sel))
                    row[f"success_D{q}"] = s / len(sel) if sel else float("nan")
                    row[f"success_D{q}_low"], row[f"success_D{q}_high"] = float(low), float(high)
                rows.append(row)
    return rows


def _verdict(predicted, fit):
    return slope_verdict(predicted, fit) if np.isfinite(fit.slope) else "undetermined"


def _exponents_and_needed(config, records):
    rng = np.random.default_rng(DEFAULT_SEED)  # the bootstrap's own stream: the tables are reproducible
    exponents, needed = [], []
    tag = c_label(config.c_ref)
    for mode in config.anchor_modes:
        ds = np.array(config.d_grid, dtype=float)
        sels = [_select(records, d, config.p_ref, config.nA_ref, (config.c_ref,), mode) for d in config.d_grid]
        regime = f"{mode} anchors, n_A = {config.nA_ref}, M = {config.c_ref:g} d / p_min^2, p_min = {config.p_ref:.3g}"
        for column, what, predicted in (("fmd_err", "Phase-1 error d(theta_hat, theta*)", 0.0),
                                        ("ls_err", "anchor least squares, same step 7 (no claim)", None)):
            col = f"{column}_{tag}" if column == "fmd_err" else column
            fit = fit_slope(ds, [_values(s, col) for s in sels], statistic="median", n_boot=config.n_boot, rng=rng)
            exponents.append(dict(
                axis="d", setting=f"{what}; {regime}", predicted=predicted, fitted=fit.slope, low=fit.low,
                high=fit.high, verdict=_verdict(predicted, fit) if predicted is not None else "reference",
                n_points=fit.n_points, note="log-log slope of the median over trials; bootstrap over trials"))
    for q in config.target_divisors:
        cells = _needed_cells(config, records, q)
        fits = fit_clients_needed(cells, n_boot=config.n_boot, rng=rng)
        for cell, (grid, interp, status) in zip(cells, fits["crossings"]):
            needed.append(dict(target_divisor=q, d=cell["d"], p_min=cell["p_min"], trials=int(cell["success"].shape[0]),
                               M_needed=grid, M_interpolated=interp, status=status,
                               c_interpolated=interp * cell["p_min"] ** 2 / cell["d"],
                               M_grid_max=float(cell["Ms"][-1])))
        found = sum(status == "found" for *_, status in fits["crossings"])
        note = (f"{found} of {len(cells)} cells cross 1/2 inside their grid; joint least squares of log M on "
                "log d and log p_min over those, bootstrap over trials")
        for axis, predicted in (("d", 1.0), ("p_min", -2.0)):
            fit = fits[axis]
            exponents.append(dict(
                axis=axis, setting=(f"clients M needed for d(theta_hat, theta*) < Delta/{q} in half the trials; "
                                    f"{config.need_anchor_mode} anchors, n_A = {config.need_nA}"),
                predicted=predicted, fitted=fit.slope, low=fit.low, high=fit.high, verdict=_verdict(predicted, fit),
                n_points=fit.n_points, note=note))
    return exponents, needed


def summarise(config, records):
    """The tables of the figures.

    Returns
    -------
    dict
        ``errors`` (part a): per (axis, anchor version, value) medians and quartiles of Phase 1's
        error and of the anchor least squares, the rate of trials whose anchors cover every
        cluster, the smallest start distance (units of Delta), success rates at each target.
        ``exponents``: slopes against ``d`` of the part-(a) errors (Phase 1: predicted 0) and the
        exponents of the clients needed (predicted +1 for d, -2 for p_min), each with its
        bootstrap interval and verdict (``consistent``: the prediction lies in the 95% interval,
        ``contradicts``: it does not, ``undetermined``: no fit).  ``needed``: per target and
        cell, the smallest grid ``M`` with success in half the trials, the log-interpolated
        crossing and whether it lies inside the grid.  ``rates``: per cell and grid ``M``,
        the success rates (Wilson intervals) and the error quartiles.
    """
    exponents, needed = _exponents_and_needed(config, records)
    return dict(errors=_errors(config, records), exponents=exponents, needed=needed, rates=_rates(config, records))


# --------------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------------


def _run_name(config):
    """The preset's name, or that it was changed by flags."""
    preset = config_from_args(build_parser().parse_args(["--preset", config.preset]))
    return config.preset if preset == config else f"{config.preset} preset with changed flags"


def _footnote(config):
    return (f"{_run_name(config)} (our stand-in protocol): k={config.k}, Δ={config.separation:g}, "
            f"σ={config.sigma:g}, x ~ N(0, I), non-anchor clients of 2 points, start θ₀ at {config.far:g}Δ from "
            f"every θ*_l (outside their span), {config.fmd_rounds} Phase-1 rounds, "
            f"step c={config.fmd_step_constant:g}, S_t = "
            f"{'all non-anchor clients' if config.fmd_sampling == 'reuse' else 'fresh pairs'} each round, anchors "
            f"reuse their n_A points; {config.trials} trials per cell; median and quartiles.")


def _fit_of(rows, axis, prefix):
    row = next((r for r in rows if r["axis"] == axis and str(r["setting"]).startswith(prefix)), None)
    if row is None:
        return None
    return SlopeFit(slope=_num(row["fitted"]), intercept=float("nan"), low=_num(row["low"]), high=_num(row["high"]),
                    level=0.95, n_points=int(row["n_points"]), n_boot=0), row["verdict"]


def _error_figure(config, tables):
    errors, exponents = tables["errors"], tables["exponents"]
    panels = []
    for axis, fixed in (("n_A", f"d = {config.d_ref}"), ("d", f"n_A = {config.nA_ref}")):
        series = []
        for mode in config.anchor_modes:
            rows = sorted((r for r in errors if r["axis"] == axis and r["anchor_mode"] == mode), key=lambda r: r[axis])
            x = [r[axis] for r in rows]
            slope = ""
            if axis == "d":
                fit = _fit_of([e for e in exponents if f"{mode} anchors" in e["setting"]], "d", "Phase-1 error")
                if fit is not None:
                    slope = f", slope {fit[0].slope:+.2f} [{fit[0].low:+.2f}, {fit[0].high:+.2f}] ({fit[1]})"
            series.append(dict(key=f"fmd_{mode}", mode=mode, method="fmd", x=x,
                               median=[r["fmd_err_median"] for r in rows], low=[r["fmd_err_q25"] for r in rows],
                               high=[r["fmd_err_q75"] for r in rows],
                               label=f"Phase 1 (FMD), {mode.replace('_', ' ')} anchors{slope}"))
            if mode == "random":  # with one anchor per cluster the output is the anchors themselves
                series.append(dict(key=f"anchor_{mode}", mode=mode, method="anchor", x=x,
                                   median=[r["anchor_err_max_median"] for r in rows],
                                   low=[r["anchor_err_max_q25"] for r in rows],
                                   high=[r["anchor_err_max_q75"] for r in rows],
                                   label="Phase 1, worst single anchor max_a ‖θ_a,T − θ*_z_a‖, random anchors "
                                         "(per cluster: equal to the output)"))
            series.append(dict(key=f"ls_{mode}", mode=mode, method="ls", x=x,
                               median=[r["ls_err_median"] for r in rows], low=[r["ls_err_q25"] for r in rows],
                               high=[r["ls_err_q75"] for r in rows],
                               label=f"least squares on each anchor, {mode.replace('_', ' ')} anchors"))
        rows = [r for r in errors if r["axis"] == axis]
        covered = {m: min((r["covered_rate"] for r in rows if r["anchor_mode"] == m), default=float("nan"))
                   for m in config.anchor_modes}
        panels.append(dict(
            axis=axis, series=series,
            reference=(float(np.nanmedian([_num(r["theta_norm_median"]) for r in rows])),
                       "error of the estimate 0 (max ‖θ*_l‖, median)"),
            start=(float(np.nanmin([_num(r["init_distance_min"]) for r in rows])) * config.separation,
                   f"the start: min_l ‖θ₀ − θ*_l‖ (≥ {config.far:g}Δ)"),
            diagonal=(config.d_ref if axis == "n_A" else config.nA_ref),
            diagonal_label=("n_A = d" if axis == "n_A" else "d = n_A"),
            title=(f"error against n_A ({fixed}, M = {clients_for(config.c_ref, config.d_ref, config.p_ref)})"
                   if axis == "n_A" else f"error against d ({fixed}, M = {config.c_ref:g} d / p_min² = "
                   f"{config.c_ref / config.p_ref ** 2:.0f} d)"),
            xlabel=("points per anchor n_A (k = %d)" % config.k) if axis == "n_A" else "dimension d",
            note=("random anchors covered every cluster in ≥ "
                  f"{covered.get('random', float('nan')):.0%} of the trials of each point"
                  if "random" in covered else ""),
        ))
    targets = [(config.separation / q, f"Δ/{q}") for q in config.target_divisors]
    title = (f"Phase 1 with small anchors from a far start (θ₀ at {config.far:g}Δ): k = {config.k}, "
             f"p_min = {config.p_ref:.3g}, Δ = {config.separation:g}")
    return plot_phase1_error(panels, targets=targets, title=title, footnote=_footnote(config))


def _clients_figure(config, tables):
    rates, needed, exponents = tables["rates"], tables["needed"], tables["exponents"]
    q = config.main_divisor
    cells = []
    for d in config.need_ds:
        for p in config.need_p_mins:
            rows = sorted((r for r in rates if r["d"] == d and abs(_num(r["p_min"]) - p) < 1e-12), key=lambda r: r["M"])
            cells.append(dict(d=d, p_min=p, M=[r["M"] for r in rows], err=[r["err_median"] for r in rows],
                              err_low=[r["err_q25"] for r in rows], err_high=[r["err_q75"] for r in rows],
                              rate=[r[f"success_D{q}"] for r in rows], rate_low=[r[f"success_D{q}_low"] for r in rows],
                              rate_high=[r[f"success_D{q}_high"] for r in rows]))
    crossings = []
    for qq in config.target_divisors:
        rows = [r for r in needed if r["target_divisor"] == qq]
        fits = {axis: _fit_of([e for e in exponents if f"Delta/{qq} " in e["setting"]], axis, "clients")
                for axis in ("d", "p_min")}
        text = "; ".join(f"{axis}: {fit[0].slope:+.2f} [{fit[0].low:+.2f}, {fit[0].high:+.2f}] {fit[1]}"
                         for axis, fit in fits.items() if fit is not None and np.isfinite(fit[0].slope))
        if not text:
            found = sum(r["status"] == "found" for r in rows)
            text = f"not fitted ({found} of {len(rows)} cells cross 1/2 inside their grid; 3 needed)"
        crossings.append(dict(divisor=qq, d=[r["d"] for r in rows], p_min=[_num(r["p_min"]) for r in rows],
                              M=[_num(r["M_interpolated"]) for r in rows], status=[r["status"] for r in rows],
                              M_grid_max=[_num(r["M_grid_max"]) for r in rows],
                              label=f"Δ/{qq}: exponents {text}"))
    title = (f"Clients needed by Phase 1 against d and p_min (predicted M ∝ d / p_min²): k = {config.k}, "
             f"{config.need_anchor_mode.replace('_', ' ')} anchors of n_A = {config.need_nA} points")
    return plot_clients_needed(cells, crossings, main_target=(config.separation / q, f"Δ/{q}"),
                               targets=[(config.separation / qq, f"Δ/{qq}") for qq in config.target_divisors],
                               title=title, footnote=_footnote(config))


def draw(config, tables, outdir):
    """The two figures, from the tables of :func:`summarise` only; returns the paths written."""
    outdir = pathlib.Path(outdir)
    paths = save_figure(_error_figure(config, tables), outdir / "phase1_error")
    paths += save_figure(_clients_figure(config, tables), outdir / "phase1_clients")
    return paths


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


build_parser, config_from_args, main = _cli.entry_points(
    __name__, paper_presets=("paper",),
    description="Phase 1 of Su-Xu-Yang (federated moment descent) with small anchors and a far start: "
                "its error against n_A and d beside anchor least squares, and the clients it needs "
                "against d and p_min, with fitted exponents.")


if __name__ == "__main__":
    sys.exit(main())
