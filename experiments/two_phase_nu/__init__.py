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
are not drawn but designed (:class:`mixreg.trials_two_phase_nu.SizeDesign`), so that ``M``,
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

Methods per trial (:func:`mixreg.trials_two_phase_nu.two_phase_nu_trial`): FMD -> FedAvg(s) and
FMD -> FedProx (Phase 2 run until it stops moving), and known-label least squares (the oracle).

For every sweep and method, the fitted exponent (or log-slope, along the tiny-client fraction) of
the median final error with a stratified bootstrap interval (:func:`mixreg.stats.fit_slope`) is
set against the exponent the bound predicts, computed in advance from the cells' sizes with
unit constants (:func:`mixreg.theory.sxy_axis_exponent`; the log factor left out, and reported
separately), and against the rate of known-label least squares.  The level constant ``C`` of
``C nu / p_min`` is fitted with each sweep held out and its residual shown on the held-out sweep
(:func:`mixreg.theory.leave_group_out_constant`).

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
  it, and the range of ``final / (nu / p_min)`` over all cells;
* ``two_phase_nu.{png,pdf}``, drawn from the three tables alone; ``--redraw DIR`` redraws it.

The paper preset also writes the figure to ``figures/two_phase_nu_paper.{png,pdf}`` (when the run
is the unchanged preset).  Flags: one per field of :class:`Config` (``--tiny-fractions``,
``--chi2s``, ``--Ms-fixed-n``, ``--Ms-fixed-N``, ``--N-fixed``, ``--p-mins``, ...), see ``--help``.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys

import numpy as np

from mixreg import cli as _cli
from mixreg.cli import param
from mixreg.montecarlo import Sweep
from mixreg.plotting import method_label, plot_nu_sweeps, save_figure
from mixreg.stats import fit_slope, slope_verdict
from mixreg.theory import fit_log_constant, leave_group_out_constant, sxy_axis_exponent, sxy_bound_shape
from mixreg.algorithms import TRIAL_OVERHEAD
from mixreg.trials_two_phase_nu import (
    DESIGN_KEYS,
    SizeDesign,
    design_quantities,
    two_phase_nu_memory,
    two_phase_nu_trial,
)

NAME = "two_phase_nu"
TABLES = ("axes", "exponents", "holdout")  # <name>.csv; the figure is drawn from them alone
DEFAULT_SEED = 20220614  # the paper's arXiv submission month; any fixed integer would do
REPO = pathlib.Path(__file__).resolve().parent.parent

#: The sweeps, in the order of the figure: (name, what moves, what is held, x label, x on a log scale).
AXES = (
    ("tiny", "ν₁: share of tiny clients", "N, M fixed; χ²(w) rises with it",
     "fraction of the clients holding {n_tiny} point(s)", False),
    ("chi2", "ν₂ through χ²(w)", "N, M fixed, no tiny clients", "1 + χ²(w) (realised, anchors included)", True),
    ("M_fixed_n", "ν₂ through M at fixed n_i", "N grows with M", "ordinary clients M", True),
    ("M_fixed_N", "ν₂ through M at fixed N", "n_i = N/M shrinks", "ordinary clients M", True),
    ("p_min", "1/p_min at fixed ν", "client sizes fixed", "realised p_min (anchors included)", True),
)
AXIS_NAMES = tuple(a[0] for a in AXES)
METHOD_KEYS = ("fedavg", "fedprox", "ls")
_FINAL = {"fedavg": "fedavg_final", "fedprox": "fedprox_final", "ls": "ls_err"}


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag of the command line, named as the field
    (``Ms_fixed_n`` -> ``--Ms-fixed-n``), defaulting to the preset's value.
    """

    preset: str = param("quick (default, about 35 s of CPU) or paper (about 5 min of CPU)")
    k: int = param("clusters")
    d: int = param("dimension")
    sigma: float = param("noise level sigma")
    separation: float = param("minimum separation Delta of theta*")
    M_ref: int = param("ordinary clients of the reference cell (the k anchors come on top)")
    n_ref: int = param("client size of the reference cell (N_ref = M_ref n_ref)")
    p_ref: float = param("fraction of the ordinary clients in the smallest cluster, reference cell")
    tiny_fractions: tuple[float, ...] = param("fractions of tiny clients of the 'tiny' sweep")
    chi2s: tuple[float, ...] = param("target chi-squares of the bulk sizes of the 'chi2' sweep")
    Ms_fixed_n: tuple[int, ...] = param("numbers of clients M of the 'M at fixed n_i' sweep")
    Ms_fixed_N: tuple[int, ...] = param("numbers of clients M of the 'M at fixed N' sweep")
    N_fixed: int = param("total points N of the ordinary clients along the 'M at fixed N' sweep")
    p_mins: tuple[float, ...] = param("p_min values of the 'p_min at fixed nu' sweep")
    trials: int = param("trials per cell")
    n_tiny: int = param("points of a tiny client", default=1)
    n_low: int = param("points of the small clients of the 'chi2' sweep (0 = n_ref - 1)", default=0)
    anchor_points: int = param("points of each of the k anchors (one per cluster)", default=60)
    cov_low: float = param("smallest eigenvalue of the feature covariances Sigma_l", default=0.5)
    cov_high: float = param("largest eigenvalue of the feature covariances Sigma_l", default=2.0)
    fmd_rounds: int = param("Phase-1 rounds T1", default=10)
    fmd_sampling: str = param("Phase-1 data of S_t: fresh disjoint pairs every round, or reused",
                              default="fresh", choices=("fresh", "reuse"))
    fmd_anchor_sampling: str = param("Phase-1 data of the anchors: fresh pairs every round, or reused",
                                     default="reuse", choices=("fresh", "reuse"))
    fmd_step_constant: float = param("Phase-1 step constant c of eta = c sqrt(lambda_1)", default=0.5)
    fx_rounds: int = param("Phase-2 rounds at most", default=1500)
    fx_tol: float = param("Phase 2 stops once no coordinate moves more than this in a round", default=1e-6)
    fedavg_steps: int = param("local steps s of FedAvg(s)", default=1)
    fedavg_step: float = param("FedAvg step size eta", default=1.0)
    fedprox_step: float = param("FedProx parameter eta", default=10.0)
    n_boot: int = param("bootstrap resamples of each fitted exponent", default=2000)

    @property
    def low_size(self):
        """``n_low`` of the 'chi2' sweep (``n_ref - 1`` when the field is 0)."""
        return self.n_low or self.n_ref - 1

    def validate(self):
        """Raise ``ValueError`` naming the first bad option and its allowed range."""
        for name in ("k", "d", "M_ref", "n_ref", "N_fixed", "trials", "n_tiny", "anchor_points", "fmd_rounds",
                     "fx_rounds", "fedavg_steps", "n_boot"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.k < 2:
            raise ValueError(f"k must be at least 2 (the sweeps need clusters), got {self.k}")
        if self.d < self.k:  # Phase 1 estimates the span of the k models: at most d directions
            raise ValueError(f"d must be at least k = {self.k} (Phase 1 estimates k directions in dimension d), "
                             f"got d={self.d}")
        if not isinstance(self.n_low, (int, np.integer)) or not 0 <= self.n_low < self.n_ref:
            raise ValueError(f"n_low must be an integer in [0, n_ref) = [0, {self.n_ref}) (0 = n_ref - 1), "
                             f"got {self.n_low!r}")
        if self.n_ref < 2 and self.n_low == 0:
            raise ValueError("n_ref must be at least 2 when n_low = 0 (n_low = n_ref - 1 >= 1)")
        for name in ("tiny_fractions", "chi2s", "Ms_fixed_n", "Ms_fixed_N", "p_mins"):
            if len(getattr(self, name)) < 2:
                raise ValueError(f"{name} needs at least 2 values (a slope), got {list(getattr(self, name))}")
        if any(not 0 <= f < 1 for f in self.tiny_fractions):
            raise ValueError(f"tiny_fractions must be in [0, 1), got {list(self.tiny_fractions)}")
        if any(not np.isfinite(c) or c < 0 for c in self.chi2s):
            raise ValueError(f"chi2s must be finite and >= 0, got {list(self.chi2s)}")
        for name in ("Ms_fixed_n", "Ms_fixed_N"):
            Ms = getattr(self, name)
            if any(not isinstance(M, (int, np.integer)) or M < 2 * self.k for M in Ms):
                raise ValueError(f"{name} must hold integers >= 2k = {2 * self.k}, got {list(Ms)}")
        if any(M > self.N_fixed for M in self.Ms_fixed_N):
            raise ValueError(f"Ms_fixed_N must be at most N_fixed = {self.N_fixed} (every client needs a point), "
                             f"got {list(self.Ms_fixed_N)}")
        if any(not 0 < p <= 1 / self.k for p in self.p_mins + (self.p_ref,)):
            raise ValueError(f"p_mins and p_ref must be in (0, 1/k] = (0, {1 / self.k:.4g}], got "
                             f"{list(self.p_mins)} and p_ref={self.p_ref!r}")
        if not np.isfinite(self.sigma) or self.sigma < 0:
            raise ValueError(f"sigma must be finite and >= 0, got {self.sigma!r}")
        for name in ("separation", "fedavg_step", "fedprox_step", "fmd_step_constant", "cov_low", "cov_high"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        if self.cov_high < self.cov_low:
            raise ValueError(f"cov_high must be >= cov_low, got {self.cov_high!r} < {self.cov_low!r}")
        if not np.isfinite(self.fx_tol) or self.fx_tol < 0:
            raise ValueError(f"fx_tol must be finite and >= 0, got {self.fx_tol!r}")
        axis_designs(self)  # every design of every sweep must be buildable (raises naming the problem)
        return self


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


# --------------------------------------------------------------------------------------------
# The grid
# --------------------------------------------------------------------------------------------


def _design(config, M, N, *, p_min=None, tiny_fraction=0.0, chi2_target=0.0):
    return SizeDesign(M=int(M), N=int(N), k=config.k, p_min=float(config.p_ref if p_min is None else p_min),
                      tiny_fraction=float(tiny_fraction), n_tiny=config.n_tiny, chi2_target=float(chi2_target),
                      n_low=config.low_size if chi2_target > 0 else 1, anchor_points=config.anchor_points)


def axis_designs(config):
    """``{sweep: [SizeDesign, ...]}`` in the order of the sweep's values."""
    M, N = config.M_ref, config.M_ref * config.n_ref
    return {
        "tiny": [_design(config, M, N, tiny_fraction=f) for f in config.tiny_fractions],
        "chi2": [_design(config, M, N, chi2_target=c) for c in config.chi2s],
        "M_fixed_n": [_design(config, m, m * config.n_ref) for m in config.Ms_fixed_n],
        "M_fixed_N": [_design(config, m, config.N_fixed) for m in config.Ms_fixed_N],
        "p_min": [_design(config, M, N, p_min=p) for p in config.p_mins],
    }


def _cell(config, design):
    """One cell: the design (:data:`DESIGN_KEYS`), the problem and the methods."""
    return dict(
        design.to_cell(), d=config.d, sigma=float(config.sigma), separation=float(config.separation),
        cov_low=float(config.cov_low), cov_high=float(config.cov_high), fmd_rounds=config.fmd_rounds,
        fmd_sampling=config.fmd_sampling, fmd_anchor_sampling=config.fmd_anchor_sampling,
        fmd_step_constant=float(config.fmd_step_constant), fx_rounds=config.fx_rounds, fx_tol=float(config.fx_tol),
        fedavg_steps=config.fedavg_steps, fedavg_step=float(config.fedavg_step),
        fedprox_step=float(config.fedprox_step),
    )


def _key(design):
    return tuple(design.to_cell()[key] for key in DESIGN_KEYS)


def cells_of(config):
    """The five sweeps' cells, each distinct design once (the reference cell is on four sweeps)."""
    designs = {}
    for sweep in axis_designs(config).values():
        for design in sweep:
            designs.setdefault(_key(design), design)
    return tuple(_cell(config, design) for design in designs.values())


def trial_flops(cell):
    """Dominant cost: per local solver and Phase-2 round, two GEMMs of ``2 k N_total d`` flops
    (about 150 rounds assumed; Phase 2 stops when it stops moving)."""
    return float(2 * 2 * 2 * cell["k"] * (cell["N"] + cell["k"] * cell["anchor_points"]) * cell["d"] * 150)


#: The flags that set a trial's memory (a refusal for memory names them).
SIZE_FLAGS = _cli.config_flags("M_ref", "n_ref", "Ms_fixed_n", "Ms_fixed_N", "N_fixed", "d", "anchor_points")


def trial_memory(cell):
    """Upper estimate of one trial's peak bytes: its arrays
    (:func:`mixreg.trials_two_phase_nu.two_phase_nu_memory`) and :data:`TRIAL_OVERHEAD`."""
    return TRIAL_OVERHEAD + two_phase_nu_memory(cell)


def build_sweep(config, root_seed=DEFAULT_SEED):
    config.validate()
    return Sweep(
        name=NAME,
        trial_fn=two_phase_nu_trial,
        cells=cells_of(config),
        n_trials=config.trials,
        root_seed=root_seed,
        config=dataclasses.asdict(config),
        cost_fn=trial_flops,
        memory_fn=trial_memory,
        size_names=SIZE_FLAGS,
    )


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


def _records_of(records, design):
    key = _key(design)
    return [r for r in records if not r.get("error") and tuple(r[k] for k in DESIGN_KEYS) == key]


def _values(records, column):
    v = np.array([float(r[column]) if r[column] is not None else np.nan for r in records], dtype=float)
    return v[np.isfinite(v)]


def _quartiles(values):
    if values.size == 0:
        return float("nan"), float("nan"), float("nan")
    q = np.percentile(values, [50, 25, 75])
    return float(q[0]), float(q[1]), float(q[2])


def _x(axis, design, quantities):
    """The sweep's coordinate of a cell, from its realised design."""
    if axis == "tiny":
        return float(design.tiny_counts.sum() / design.M)
    if axis == "chi2":
        return 1.0 + quantities["chi2"]
    if axis in ("M_fixed_n", "M_fixed_N"):
        return float(design.M)
    return quantities["p_min_realised"]


def _axis_rows(config, records):
    """Per sweep and cell: x, realised quantities and the methods' medians and quartiles."""
    rows, index = [], {}
    for axis, designs in axis_designs(config).items():
        for design in designs:
            q = design_quantities(design, d=config.d, sigma=config.sigma)
            recs = _records_of(records, design)
            row = dict(axis=axis, cell=index.setdefault(_key(design), len(index)), x=_x(axis, design, q),
                       M=design.M, N=design.N, M_total=q["M_total"], N_total=q["N_total"],
                       p_min=q["p_min_realised"], N_min=q["N_min"], chi2=q["chi2"], nu1=q["nu1"], nu2=q["nu2"],
                       nu=q["nu"], tiny_data=q["tiny_data"], mean_size=q["mean_size"],
                       bound=float(sxy_bound_shape(q["nu"], q["p_min_realised"])), ls_floor=q["ls_floor"],
                       trials=len(recs))
            for m in METHOD_KEYS:
                values = _values(recs, _FINAL[m])
                row[f"{m}_median"], row[f"{m}_q25"], row[f"{m}_q75"] = _quartiles(values)
                row[f"{m}_missing"] = len(recs) - values.size
            for m in ("fedavg", "fedprox"):
                row[f"{m}_misclustered_median"] = _quartiles(_values(recs, f"{m}_misclustered_data"))[0]
                row[f"{m}_converged"] = float(np.mean([bool(r[f"{m}_converged"]) for r in recs])) if recs else np.nan
            row["fmd_median"] = _quartiles(_values(recs, "fmd_err"))[0]
            rows.append(row)
    return rows


def _holdout(rows):
    """Leave-one-sweep-out constant of ``C nu / p_min`` per method, on the distinct cells."""
    cells = {}
    for row in rows:
        cells.setdefault(row["cell"], row)
    cells = [cells[j] for j in sorted(cells)]
    member = np.zeros((len(AXIS_NAMES), len(cells)), dtype=bool)
    for row in rows:
        member[AXIS_NAMES.index(row["axis"]), row["cell"]] = True
    reference = np.array([c["bound"] for c in cells])
    table = []
    for m in ("fedavg", "fedprox"):
        observed = np.array([c[f"{m}_median"] for c in cells])
        C, residual = leave_group_out_constant(observed, reference, member)
        ratio = observed / reference
        C_all = fit_log_constant(observed, reference)
        for g, axis in enumerate(AXIS_NAMES):
            r = residual[g][member[g]]
            r = r[np.isfinite(r)]
            for row in rows:
                if row["axis"] == axis:
                    row[f"{m}_theory"] = float(C[g] * row["bound"])
                    row[f"{m}_residual"] = float(row[f"{m}_median"] / row[f"{m}_theory"])
            table.append(dict(axis=axis, method=m, C_without_axis=float(C[g]),
                              train_cells=int((~member[g]).sum()), test_cells=int(member[g].sum()),
                              residual_min=float(r.min()) if r.size else np.nan,
                              residual_max=float(r.max()) if r.size else np.nan,
                              rms_log10_residual=float(np.sqrt(np.mean(np.log10(r) ** 2))) if r.size else np.nan,
                              C_all_cells=C_all, ratio_min_all=float(np.nanmin(ratio)),
                              ratio_max_all=float(np.nanmax(ratio))))
    return table


def _exponents(config, records, rows):
    """Per sweep and method: fitted exponent with its bootstrap interval, the bound's and LS's."""
    table = []
    designs = axis_designs(config)
    for a, (axis, _, _, _, log_x) in enumerate(AXES):
        sel = [r for r in rows if r["axis"] == axis]
        x = np.array([r["x"] for r in sel])
        u = np.log(x) if log_x else x
        predicted = sxy_axis_exponent(x, [r["nu"] for r in sel], [r["p_min"] for r in sel], log_x=log_x)
        predicted_log = sxy_axis_exponent(x, [r["nu"] for r in sel], [r["p_min"] for r in sel], log_x=log_x,
                                          log_factor=True)
        ls_rate = float(np.polyfit(u, np.log([r["ls_floor"] for r in sel]), 1)[0])
        for j, m in enumerate(METHOD_KEYS):
            samples = [_values(_records_of(records, design), _FINAL[m]) for design in designs[axis]]
            rng = np.random.default_rng([DEFAULT_SEED, a, j])
            fit = fit_slope(x, samples, log_x=log_x, statistic="median", n_boot=config.n_boot, rng=rng)
            table.append(dict(axis=axis, method=m, predicted=predicted, fitted=fit.slope, low=fit.low,
                              high=fit.high, verdict=slope_verdict(predicted, fit), predicted_log=predicted_log,
                              ls_rate=ls_rate, verdict_ls=slope_verdict(ls_rate, fit), log_x=log_x,
                              points=fit.n_points, trials=int(sum(s.size for s in samples))))
    return table


def summarise(config, records):
    """The figure's tables (see the module docstring): ``axes``, ``exponents``, ``holdout``."""
    rows = _axis_rows(config, records)
    holdout = _holdout(rows)
    return dict(axes=rows, exponents=_exponents(config, records, rows), holdout=holdout)


# --------------------------------------------------------------------------------------------
# The figure
# --------------------------------------------------------------------------------------------


def _labels(config):
    return {m: method_label(m, **({"s": config.fedavg_steps} if m == "fedavg" else {})) for m in METHOD_KEYS}


def _fmt(value):
    return f"{value:+.2f}" if np.isfinite(value) else "n/a"


def statement(axis, exponents):
    """One plain sentence on what a sweep shows, from its rows of ``exponents.csv``."""
    rows = {r["method"]: r for r in exponents if r["axis"] == axis}
    avg, ls = rows["fedavg"], rows["ls"]
    unit = "log-slope" if not _truthy(avg["log_x"]) else "exponent"
    fitted = f"{unit} {_fmt(avg['fitted'])} [{_fmt(avg['low'])}, {_fmt(avg['high'])}]"
    if avg["verdict"] == "consistent":
        shape = f"{fitted}, consistent with the {_fmt(avg['predicted'])} of ν/p_min"
    elif avg["verdict"] == "contradicts":
        flat = avg["low"] <= 0 <= avg["high"]
        shape = (f"CONTRADICTS the bound's shape{': no visible effect' if flat else ''}, {fitted} where ν/p_min "
                 f"predicts {_fmt(avg['predicted'])}")
    else:
        shape = "undetermined (no interval)"
    if ls["verdict_ls"] == "consistent" and avg["verdict_ls"] == "consistent":
        floor = f"; FedAvg follows known-label LS ({_fmt(ls['fitted'])})"
    elif avg["verdict_ls"] == "contradicts":
        floor = f"; FedAvg departs from the LS rate {_fmt(avg['ls_rate'])}"
    else:
        floor = ""
    return f"FMD → FedAvg: {shape}{floor}."


def _truthy(value):
    return value is True or str(value).lower() == "true"


def _footnote(config):
    return (
        f"{config.preset}: k={config.k}, d={config.d}, Δ={config.separation:g}, σ={config.sigma:g}, Σ_l diagonal in "
        f"[{config.cov_low:g}, {config.cov_high:g}], reference M={config.M_ref} clients of {config.n_ref} points, "
        f"p_min={config.p_ref:g}, + {config.k} anchors of {config.anchor_points} points; sizes designed, not drawn "
        f"(N, M, χ², ν identical in every trial of a cell); {config.trials} trials per cell. "
        f"FMD {config.fmd_rounds} rounds; Phase 2 until no coordinate moves more than {config.fx_tol:g} "
        f"(at most {config.fx_rounds} rounds), "
        f"FedAvg({config.fedavg_steps}) η={config.fedavg_step:g}, FedProx η={config.fedprox_step:g}. ν with unit "
        "constants C₃ = C₄ = 1; exponents from medians, 95% stratified bootstrap; predicted = exponent of ν/p_min "
        "(log factor left out)."
    )


def draw(config, tables, outdir):
    """The figure, from the tables of :func:`summarise` only; returns the paths written."""
    rows, exponents, holdout = tables["axes"], tables["exponents"], tables["holdout"]
    labels = _labels(config)
    panels = []
    for axis, moves, held, xlabel, log_x in AXES:
        sel = [r for r in rows if r["axis"] == axis]
        series = [(m, labels[m], [r[f"{m}_median"] for r in sel], [r[f"{m}_q25"] for r in sel],
                   [r[f"{m}_q75"] for r in sel]) for m in METHOD_KEYS]
        C = next(h["C_without_axis"] for h in holdout if h["axis"] == axis and h["method"] == "fedavg")
        fits = {r["method"]: r for r in exponents if r["axis"] == axis}
        note = "\n".join(
            f"{labels[m].replace('FMD → ', '')}: {_fmt(fits[m]['fitted'])} [{_fmt(fits[m]['low'])}, "
            f"{_fmt(fits[m]['high'])}]" for m in METHOD_KEYS)
        note += (f"\nν/p_min predicts {_fmt(fits['fedavg']['predicted'])} (with log(1/ν): "
                 f"{_fmt(fits['fedavg']['predicted_log'])}); LS rate {_fmt(fits['fedavg']['ls_rate'])}")
        panels.append(dict(
            title=f"{moves}\n({held})", xlabel=xlabel.format(n_tiny=config.n_tiny), log_x=bool(_truthy(log_x)),
            x=[r["x"] for r in sel], nu=[r["nu"] for r in sel], series=series,
            theory=([r["fedavg_theory"] for r in sel],
                    f"C·ν/p_min, C = {C:.3g} fitted on the other sweeps' cells (FedAvg)"),
            note=note, statement=statement(axis, exponents),
            contradicts=next(r["verdict"] for r in exponents if r["axis"] == axis and r["method"] == "fedavg")
            == "contradicts"))
    forest = dict(axes=[a[1].replace(" through ", "\nthrough ") for a in AXES],
                  rows=[dict(axis=AXIS_NAMES.index(r["axis"]), key=r["method"], label=labels[r["method"]],
                             fitted=r["fitted"], low=r["low"], high=r["high"], predicted=r["predicted"],
                             ls_rate=r["ls_rate"]) for r in exponents])
    ratio = {h["method"]: (h["ratio_min_all"], h["ratio_max_all"], h["C_all_cells"]) for h in holdout}
    held = dict(axes=[a[1] for a in AXES],
                points=[dict(axis=AXIS_NAMES.index(r["axis"]), key=m, label=labels[m], residual=r[f"{m}_residual"])
                        for r in rows for m in ("fedavg", "fedprox")],
                text="\n".join(f"{labels[m].replace('FMD → ', '')}: final/(ν/p_min) ranges {lo:.3g} to {hi:.3g} "
                               f"over the cells ({hi / lo:.1f}x)" for m, (lo, hi, _) in ratio.items()))
    title = ("Su-Xu-Yang's ν one term at a time: fitted exponents of the final error against those of the "
             "bound ν/p_min (unit constants)")
    fig = plot_nu_sweeps(panels, forest, held, title=title, footnote=_footnote(config))
    return save_figure(fig, pathlib.Path(outdir) / NAME)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


build_parser, config_from_args, main = _cli.entry_points(
    __name__, paper_presets=("paper",),
    description="Su-Xu-Yang's nu one term at a time: fitted exponents of the two-phase method's final "
                "error against the bound's, with a held-out constant.")


if __name__ == "__main__":
    sys.exit(main())
