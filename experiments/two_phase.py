"""Su, Xu and Yang's two-phase algorithm against IFCA on unbalanced clients, with the theory on it.

Run ``python -m experiments.two_phase`` for the quick default (a few minutes on two cores), or
``--preset paper`` for the full-scale stand-in.  The paper's numerical settings are not known
(the full text and its experiment section were not available to us): both presets follow
**our** stand-in protocol, not the paper's:

* :math:`\\theta^*_l` Gaussian, rescaled to minimum separation :math:`\\Delta`; features
  :math:`N(0, \\Sigma_l)` with random diagonal :math:`\\Sigma_l` (spectrum log-uniform in
  ``[cov_low, cov_high]``); noise :math:`N(0, \\sigma^2)`;
* labels i.i.d., cluster 0 with probability ``p_min`` and the others sharing the rest;
* client sizes i.i.d. from a heavy-tailed law of fixed mean on ``[1, n_max]`` (about half the
  clients hold a single point under the default Zipf law);
* one anchor per cluster (journal version) topped up to ``anchor_points`` points.

Methods per trial (:func:`mixreg.trials_two_phase.two_phase_trial`): IFCA from random starts
(best of restarts x step sizes by training loss), IFCA started at the truth ("oracle"), FMD then
FedAvg(s), FMD then FedProx, and the known-label least-squares error (the floor).

Grid: three one-dimensional sweeps through a reference cell (``M_ref``, ``law_ref``,
``p_ref``): over the number of clients ``M``, over the size law, and over ``p_min``.

Writes into the results directory (default ``results/two_phase/<preset>``):

* ``trials.csv`` (one row per trial; per-round curves as ``<method>_err_t<ttt>`` columns at the
  checkpoint rounds), ``summary.csv`` and ``manifest.json`` (from the engine);
* ``curves.csv``: median and quartiles of each curve at the reference cell;
* ``theory.csv``: per Phase-2 round, the bound drawn on the rounds figure, and the
  known-label floor;
* ``scaling.csv``: per cell, medians and quartiles of the final errors, ``nu``, ``chi2`` and
  the contraction rates, with the fitted constants and the theory line ``C_nu_line``;
* ``contraction.csv``: per trial, the realised ``p_min`` and ``1 - rate`` of each local solver;
* ``two_phase_rounds.{png,pdf}`` and ``two_phase_scaling.{png,pdf}``, drawn from the four
  tables alone; ``--redraw DIR`` redraws them from a results directory without running anything.

The paper preset also writes the figures to ``figures/two_phase_<name>_paper.{png,pdf}`` (when
the run is the unchanged preset).

Flags: one per field of :class:`Config`, named as the field (``--Ms``, ``--M-ref``, ``--laws``,
``--p-mins``, ``--fmd-rounds``, ...), see ``--help``.  The flags of earlier versions ``--M`` and
``--p-min`` are removed: they exit with a message naming the new flag.
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys

import numpy as np

from experiments import _cli
from experiments._cli import experiment_main, param, parser_from_config
from mixreg.montecarlo import Sweep
from mixreg.plotting import METHODS, method_label, plot_error_vs_rounds, plot_two_phase_scaling, save_figure
from mixreg.problems import SIZE_LAWS, ProblemSpec, size_law
from mixreg.theory import fit_log_constant
from mixreg.trials_two_phase import CURVE_METHODS, TWO_PHASE_CELLS, curve_columns, two_phase_trial

NAME = "two_phase"
TABLES = ("curves", "theory", "scaling", "contraction")  # <name>.csv; the figures are drawn from them alone
DEFAULT_SEED = 20220614  # the paper's arXiv submission month; any fixed integer would do
REPO = pathlib.Path(__file__).resolve().parent.parent

def _labels(config):
    """Legend labels of the methods, from the plotting registry (FedAvg with its s)."""
    return {name: method_label(name, **({"s": config.fedavg_steps} if name == "fedavg" else {}))
            for name in METHODS}


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag of the command line, named as the field
    (``M_ref`` -> ``--M-ref``, ``p_mins`` -> ``--p-mins``), defaulting to the preset's value.
    """

    preset: str = param("quick (default, minutes) or paper (full-scale stand-in, hours)")
    k: int = param("clusters")
    d: int = param("dimension")
    sigma: float = param("noise level sigma")
    separation: float = param("minimum separation Delta")
    Ms: tuple[int, ...] = param("numbers of clients M of the M sweep", renamed_from="--M")
    M_ref: int = param("clients of the reference cell")
    laws: tuple[str, ...] = param("client-size laws of the law sweep", choices=SIZE_LAWS)
    law_ref: str = param("client-size law of the reference cell", choices=SIZE_LAWS)
    p_mins: tuple[float, ...] = param("p_min values of the p_min sweep", renamed_from="--p-min")
    p_ref: float = param("p_min of the reference cell")
    size_mean: float = param("mean client size")
    n_max: int = param("largest client size")
    trials: int = param("trials per cell")
    fmd_rounds: int = param("Phase-1 rounds T1")
    fx_rounds: int = param("Phase-2 rounds")
    fedavg_steps: int = param("local steps s of FedAvg(s)", default=1)
    fedavg_step: float = param("FedAvg step size eta", default=1.0)
    fedprox_step: float = param("FedProx parameter eta", default=10.0)
    ifca_restarts: int = param("IFCA random starts", default=4)
    ifca_steps: tuple[float, ...] = param("IFCA step sizes, each run from every start", default=(0.5, 1.0))
    cov_low: float = param("smallest eigenvalue of the feature covariances Sigma_l", default=0.5)
    cov_high: float = param("largest eigenvalue of the feature covariances Sigma_l", default=2.0)
    anchor_mode: str = param("one recruited anchor per cluster (journal) or random anchors (NeurIPS)",
                             default="per_cluster", choices=("per_cluster", "random"))
    n_anchors: int = param("anchors for --anchor-mode random (0 with per_cluster)", default=0)
    anchor_points: int = param("points per anchor", default=100)
    fmd_sampling: str = param("Phase-1 data of S_t: fresh disjoint pairs every round, or reused",
                              default="fresh", choices=("fresh", "reuse"))
    fmd_anchor_sampling: str = param("Phase-1 data of the anchors: fresh pairs every round, or reused",
                                     default="reuse", choices=("fresh", "reuse"))
    fmd_step_constant: float = param("Phase-1 step constant c of eta = c sqrt(lambda_1)", default=0.5)
    fmd_clients: int = param("clients |S_t| per Phase-1 round (0 = the method's default)", default=0)
    checkpoint_every: int = param("rounds between stored curve points", default=5)

    def validate(self):
        """Raise ``ValueError`` naming the first bad option and its allowed range."""
        for name in ("k", "d", "M_ref", "n_max", "trials", "fmd_rounds", "fx_rounds", "fedavg_steps",
                     "ifca_restarts", "anchor_points", "checkpoint_every"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("n_anchors", "fmd_clients"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0 (0 = default), got {value!r}")
        if not self.Ms or any(not isinstance(M, (int, np.integer)) or M < 1 for M in self.Ms):
            raise ValueError(f"Ms must hold integers >= 1, got {list(self.Ms)}")
        if min(self.Ms + (self.M_ref,)) < 2 * self.k:
            raise ValueError(f"Ms and M_ref must be at least 2k = {2 * self.k}, got {list(self.Ms)} and "
                             f"M_ref={self.M_ref}")
        if not self.laws or any(law not in SIZE_LAWS for law in self.laws + (self.law_ref,)):
            raise ValueError(f"laws and law_ref must be among {', '.join(SIZE_LAWS)}; got {list(self.laws)} "
                             f"and law_ref={self.law_ref!r}")
        if not self.p_mins or any(not 0 < p <= 1 / self.k for p in self.p_mins + (self.p_ref,)):
            raise ValueError(f"p_mins and p_ref must be in (0, 1/k] = (0, {1 / self.k:.4g}], got "
                             f"{list(self.p_mins)} and p_ref={self.p_ref!r}")
        for name in ("sigma",):
            if not np.isfinite(getattr(self, name)) or getattr(self, name) < 0:
                raise ValueError(f"{name} must be finite and >= 0, got {getattr(self, name)!r}")
        for name in ("separation", "fedavg_step", "fedprox_step", "fmd_step_constant", "cov_low", "cov_high"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        if self.cov_high < self.cov_low:
            raise ValueError(f"cov_high must be >= cov_low, got {self.cov_high!r} < {self.cov_low!r}")
        if not self.ifca_steps or any(not np.isfinite(g) or g <= 0 for g in self.ifca_steps):
            raise ValueError(f"ifca_steps must be finite and > 0, got {list(self.ifca_steps)}")
        if self.anchor_mode not in ("per_cluster", "random"):
            raise ValueError(f"anchor_mode must be 'per_cluster' or 'random', got {self.anchor_mode!r}")
        if self.anchor_mode == "random" and not self.k <= self.n_anchors <= min(self.Ms + (self.M_ref,)):
            raise ValueError(f"with anchor_mode='random', n_anchors must be in [k, min M] = [{self.k}, "
                             f"{min(self.Ms + (self.M_ref,))}], got {self.n_anchors}")
        if self.anchor_points < 2:
            raise ValueError(f"anchor_points must be >= 2, got {self.anchor_points}")
        for name in ("fmd_sampling", "fmd_anchor_sampling"):
            if getattr(self, name) not in ("fresh", "reuse"):
                raise ValueError(f"{name} must be 'fresh' or 'reuse', got {getattr(self, name)!r}")
        if self.checkpoint_every > self.fmd_rounds + self.fx_rounds:
            raise ValueError(f"checkpoint_every must be at most the total rounds {self.fmd_rounds + self.fx_rounds}, "
                             f"got {self.checkpoint_every}")
        for law in set(self.laws + (self.law_ref,)):  # the mean must be reachable by every law
            size_law(law, n_min=1, n_max=self.n_max, mean=self.size_mean)
        return self


# Quick: k = 3 clusters in d = 10 with Delta = 2, sigma = 0.5, Sigma_l in [0.5, 2], mean client
# size 6 on [1, 200]; 10 cells x 6 trials, about two minutes on 2 cores.  Anchors hold 100 points,
# few enough not to dominate chi2(w); they reuse them in Phase 1 (50 pairs per round), while S_t
# gets fresh pairs every round.  80 Phase-2 rounds: the slowest cluster contracts by ~0.95 per
# round (p_min = 0.1), so 60 rounds stop short of the floor.  Paper: our full-scale stand-in (k = 4, d = 20, M up to 20000,
# 50 trials); hours, use --jobs.
PRESETS = {
    "quick": dict(k=3, d=10, sigma=0.5, separation=2.0, Ms=(500, 1000, 2000, 4000), M_ref=2000,
                  laws=("equal", "lognormal", "pareto", "zipf"), law_ref="zipf", p_mins=(0.05, 0.1, 0.2, 0.3),
                  p_ref=0.1, size_mean=6.0, n_max=200, trials=6, fmd_rounds=10, fx_rounds=80),
    "paper": dict(k=4, d=20, sigma=0.5, separation=2.0, Ms=(1000, 2000, 5000, 10000, 20000), M_ref=10000,
                  laws=("equal", "lognormal", "pareto", "zipf"), law_ref="zipf",
                  p_mins=(0.05, 0.1, 0.15, 0.25), p_ref=0.1, size_mean=6.0, n_max=500, trials=50,
                  fmd_rounds=10, fx_rounds=150, ifca_restarts=10, anchor_points=200, checkpoint_every=5),
}


def _cell(config, M, law, p_min):
    """One cell: the problem (a :class:`ProblemSpec`, keys of ``TWO_PHASE_CELLS``) and the methods."""
    spec = ProblemSpec(m=int(M), k=config.k, d=config.d, sigma=float(config.sigma), scale=float(config.separation),
                       protocol="gaussian", size_law=law, size_mean=float(config.size_mean), n_max=config.n_max,
                       p_min=float(p_min), cov_low=float(config.cov_low), cov_high=float(config.cov_high),
                       anchor_mode=config.anchor_mode, n_anchors=config.n_anchors,
                       anchor_points=config.anchor_points)
    return dict(
        spec.to_cell(TWO_PHASE_CELLS), fmd_rounds=config.fmd_rounds,
        fmd_sampling=config.fmd_sampling, fmd_anchor_sampling=config.fmd_anchor_sampling,
        fmd_step_constant=float(config.fmd_step_constant),
        fmd_clients=config.fmd_clients, fx_rounds=config.fx_rounds, fedavg_steps=config.fedavg_steps,
        fedavg_step=float(config.fedavg_step), fedprox_step=float(config.fedprox_step),
        ifca_restarts=config.ifca_restarts, ifca_steps=tuple(float(g) for g in config.ifca_steps),
        checkpoint_every=config.checkpoint_every,
    )


def cells_of(config):
    """The three sweeps through the reference cell, without duplicates."""
    keys = [(M, config.law_ref, config.p_ref) for M in config.Ms]
    keys += [(config.M_ref, law, config.p_ref) for law in config.laws]
    keys += [(config.M_ref, config.law_ref, p) for p in config.p_mins]
    keys.append((config.M_ref, config.law_ref, config.p_ref))
    unique = list(dict.fromkeys(keys))
    return tuple(_cell(config, *key) for key in unique)


def trial_flops(cell):
    """Dominant cost, IFCA's (k + 1) 2 N d flops per replica-round (N ~ M * mean size)."""
    replicas = (cell["ifca_restarts"] + 1) * len(cell["ifca_steps"])
    rounds = cell["fmd_rounds"] + cell["fx_rounds"]
    return float((cell["k"] + 1) * 2 * cell["M"] * cell["size_mean"] * cell["d"] * replicas * rounds)


def build_sweep(config, root_seed=DEFAULT_SEED):
    config.validate()
    return Sweep(
        name=NAME,
        trial_fn=two_phase_trial,
        cells=cells_of(config),
        n_trials=config.trials,
        root_seed=root_seed,
        config=dict(dataclasses.asdict(config), curve_methods=list(CURVE_METHODS)),
        cost_fn=trial_flops,
    )


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


def _ok(records):
    return [r for r in records if not r.get("error")]


def _select(records, **params):
    return [r for r in _ok(records) if all(r[k] == v for k, v in params.items())]


def _quartiles(values):
    v = np.asarray([float(x) for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    q = np.percentile(v, [50, 25, 75])
    return float(q[0]), float(q[1]), float(q[2])


def _curves_and_theory(config, records):
    """Median and quartiles of every curve at the reference cell; the Phase-2 bound and the LS floor."""
    ref = _select(records, M=config.M_ref, size_law=config.law_ref, p_min=float(config.p_ref))
    cell = _cell(config, config.M_ref, config.law_ref, config.p_ref)
    curves = []
    for method in CURVE_METHODS:
        for t, column in curve_columns(cell, method):
            med, lo, hi = _quartiles(r[column] for r in ref)
            curves.append(dict(method=method, round=t, median=med, q25=lo, q75=hi, trials=len(ref)))
    floor = _quartiles(r["ls_err"] for r in ref)[0]
    # Phase-2 recursion from the median Phase-1 output: the contraction factor is the exact linear
    # rate computed from the data (median over trials), the additive floor is fitted so that the
    # fixed point is the median final FedAvg error.
    start = _quartiles(r["fmd_err"] for r in ref)[0]
    rate = _quartiles(r["fedavg_rate_linear"] for r in ref)[0]
    final = _quartiles(r["fedavg_final"] for r in ref)[0]
    steps = np.arange(config.fx_rounds + 1)
    if np.isfinite([start, rate, final]).all():
        bound = final + (start - final) * rate**steps
    else:
        bound = np.full(steps.shape, np.nan)
    theory = [dict(round=int(config.fmd_rounds + t), phase2_bound=float(b), contraction=rate, start=start,
                   final=final, ls_floor=floor) for t, b in zip(steps, bound)]
    return curves, theory


def _scaling(config, records):
    """Per-cell medians, the fitted constant of C * nu (and the line) and the fitted C1 of each solver."""
    rows = []
    for cell in cells_of(config):
        recs = _select(records, M=cell["M"], size_law=cell["size_law"], p_min=cell["p_min"])
        row = dict(M=cell["M"], size_law=cell["size_law"], p_min=cell["p_min"], trials=len(recs))
        for col in ("fedavg_final", "fedprox_final", "ifca_final", "oracle_final", "ls_err", "fmd_err",
                    "nu1", "nu2", "chi2", "fedavg_rate", "fedprox_rate", "fedavg_rate_linear",
                    "fedprox_rate_linear", "fedavg_misclustered_data", "p_min_realised"):
            med, lo, hi = _quartiles(r[col] for r in recs)
            row[f"{col}_median"], row[f"{col}_q25"], row[f"{col}_q75"] = med, lo, hi
        row["nu_median"] = _quartiles(r["nu1"] + r["nu2"] for r in recs)[0]
        rows.append(row)
    fit_rows = [r for r in rows if r["p_min"] == float(config.p_ref)]  # the M and law sweeps
    c_nu = fit_log_constant([r["fedavg_final_median"] for r in fit_rows], [r["nu_median"] for r in fit_rows])
    # The theorem bounds the per-round factor by 1 - C1 p_min for some constant C1: the largest
    # C1 consistent with every trial is min (1 - rate) / p_min (also the log-scale fit is kept).
    for solver in ("fedavg", "fedprox"):
        ok = _ok(records)
        gap = np.array([1 - r[f"{solver}_rate"] for r in ok], dtype=float)
        p = np.array([r["p_min_realised"] for r in ok], dtype=float)
        good = np.isfinite(gap) & (p > 0)
        c1 = float(np.min(gap[good] / p[good])) if good.any() else float("nan")
        for row in rows:
            row[f"C1_{solver}_envelope"] = c1
            row[f"C1_{solver}_fitted"] = fit_log_constant(gap, p)
    for row in rows:
        row["C_nu_fitted"] = c_nu
        row["C_nu_line"] = c_nu * row["nu_median"]  # the theory drawn against M and the size law
    return rows


def _contraction(records):
    """Per trial: realised p_min and 1 - rate of each local solver (measured and exact linear)."""
    rows = []
    for r in records:
        failed = bool(r.get("error"))
        row = dict(M=r["M"], size_law=r["size_law"], p_min=r["p_min"], trial=r["trial"], failed=failed,
                   p_min_realised=None if failed else r["p_min_realised"])
        for s in ("fedavg", "fedprox"):
            row[f"{s}_gap"] = None if failed else 1 - r[f"{s}_rate"]
            row[f"{s}_gap_linear"] = None if failed else 1 - r[f"{s}_rate_linear"]
        rows.append(row)
    return rows


def summarise(config, records):
    """The figures' tables.

    Returns
    -------
    dict
        ``curves``: per curve method and checkpoint round, median, quartiles and trials at the
        reference cell.  ``theory``: per Phase-2 round, the bound ``phase2_bound`` drawn on
        the rounds figure (from the median FMD output ``start``, contracting by the median exact
        linear rate ``contraction`` towards the median final FedAvg error ``final``; nan when
        one of them is), and the known-label floor ``ls_floor``.  ``scaling``: per cell, medians
        and quartiles of the final errors, ``nu``, ``chi2`` and the rates, the fitted constants
        (``C_nu_fitted``, ``C1_<solver>_envelope``, ``C1_<solver>_fitted``) and the theory line
        ``C_nu_line`` = ``C_nu_fitted * nu_median``.  ``contraction``: per trial, realised
        ``p_min`` and ``1 - rate`` of each local solver, measured (``<solver>_gap``) and exact
        linear (``<solver>_gap_linear``); ``failed`` trials have them empty.
    """
    curves, theory = _curves_and_theory(config, records)
    return dict(curves=curves, theory=theory, scaling=_scaling(config, records), contraction=_contraction(records))


def _footnote(config):
    return (
        f"{config.preset} (our stand-in protocol; the paper's settings are unknown): k={config.k}, d={config.d}, "
        f"Δ={config.separation:g}, σ={config.sigma:g}, Σ_l diagonal in [{config.cov_low:g}, {config.cov_high:g}], "
        f"mean client size {config.size_mean:g} on [1, {config.n_max}], {config.trials} trials per cell. "
        f"FMD: {config.fmd_rounds} rounds, {config.fmd_sampling} S_t data, {config.fmd_anchor_sampling} anchor "
        f"data, c={config.fmd_step_constant:g}, "
        f"{config.anchor_mode} anchors with {config.anchor_points} points. Phase 2: {config.fx_rounds} rounds, "
        f"FedAvg({config.fedavg_steps}) η={config.fedavg_step:g}, FedProx η={config.fedprox_step:g}. "
        f"IFCA: option I, {config.ifca_restarts} random starts x steps {list(config.ifca_steps)}."
    )


def _rounds_figure(config, tables, labels):
    rows, theory_rows = tables["curves"], tables["theory"]
    curves = []
    for method in ("ifca", "oracle", "fedavg", "fedprox"):
        sel = [r for r in rows if r["method"] == method]
        curves.append(dict(key=method, label=labels[method], rounds=np.array([r["round"] for r in sel]),
                           median=np.array([r["median"] for r in sel]), low=np.array([r["q25"] for r in sel]),
                           high=np.array([r["q75"] for r in sel])))
    first = theory_rows[0]
    theory = None
    if np.isfinite([first["start"], first["contraction"], first["final"]]).all():
        theory = (np.array([r["round"] for r in theory_rows]), np.array([r["phase2_bound"] for r in theory_rows]),
                  f"Phase-2 bound d_t+1 = (1 − C₁p_min) d_t + C₂ν log(1/ν) from the FMD output:\n"
                  f"1 − C₁p_min = {first['contraction']:.3f} (exact linear rate of the slowest cluster, computed), "
                  "floor fitted to the final error")
    title = (f"Two-phase algorithm vs IFCA, unbalanced clients (M = {config.M_ref}, {config.law_ref} sizes, "
             f"p_min = {config.p_ref:g})")
    return plot_error_vs_rounds(curves, floor=(first["ls_floor"], labels["ls"] + " (median)"),
                                switch_round=config.fmd_rounds, theory=theory, title=title,
                                footnote=_footnote(config))


def _scaling_figure(config, tables, labels):
    scaling, contraction = tables["scaling"], tables["contraction"]
    methods = ("fedavg", "fedprox", "ifca", "oracle")

    def series(sel):
        out = [(m, labels[m], [r[f"{m}_final_median"] for r in sel], [r[f"{m}_final_q25"] for r in sel],
                [r[f"{m}_final_q75"] for r in sel]) for m in methods]
        out.append(("ls", labels["ls"], [r["ls_err_median"] for r in sel], [r["ls_err_q25"] for r in sel],
                    [r["ls_err_q75"] for r in sel]))
        return out

    nu_label = f"C·ν, ν with C₃ = C₄ = 1, C = {scaling[0]['C_nu_fitted']:.3g} fitted to FMD → FedAvg"
    by_M_rows = sorted((r for r in scaling if r["size_law"] == config.law_ref and r["p_min"] == config.p_ref),
                       key=lambda r: r["M"])
    by_M_rows = [r for r in by_M_rows if r["M"] in config.Ms]
    by_M = dict(M=np.array([r["M"] for r in by_M_rows]), series=series(by_M_rows),
                theory=(np.array([r["C_nu_line"] for r in by_M_rows]), nu_label))
    law_rows = sorted((r for r in scaling if r["M"] == config.M_ref and r["p_min"] == config.p_ref
                       and r["size_law"] in config.laws), key=lambda r: r["chi2_median"])
    by_law = dict(laws=[r["size_law"] for r in law_rows], chi2=[r["chi2_median"] for r in law_rows],
                  series=series(law_rows), theory=(np.array([r["C_nu_line"] for r in law_rows]), nu_label))
    ok = [r for r in contraction if not r["failed"]]
    rates = []
    for s in ("fedavg", "fedprox"):
        c1 = scaling[0][f"C1_{s}_envelope"]
        rates.append(dict(key=s, label=labels[s], p=[r["p_min_realised"] for r in ok],
                          measured=[r[f"{s}_gap"] for r in ok], linear=[r[f"{s}_gap_linear"] for r in ok], C1=c1,
                          C1_label=f"C₁ p_min, C₁ = {c1:.2f}: largest C₁ with 1 − ρ ≥ C₁ p_min in every "
                                   "trial"))
    title = ("Final error against M and the size law (with the theory's ν), and the Phase-2 contraction"
             " rate against p_min")
    return plot_two_phase_scaling(by_M, by_law, rates, title=title, footnote=_footnote(config))


def draw(config, tables, outdir):
    """The two figures, from the tables of :func:`summarise` only; returns the paths written."""
    outdir, labels = pathlib.Path(outdir), _labels(config)
    paths = save_figure(_rounds_figure(config, tables, labels), outdir / f"{NAME}_rounds")
    paths += save_figure(_scaling_figure(config, tables, labels), outdir / f"{NAME}_scaling")
    return paths


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def build_parser():
    return parser_from_config(
        Config, PRESETS, prog="python -m experiments.two_phase",
        description="Su-Xu-Yang's two-phase algorithm (FMD then FedAvg/FedProx) against IFCA on "
                    "unbalanced clients, with the Phase-2 theory drawn on the figures.",
    )


def config_from_args(args):
    return _cli.config_from_args(Config, PRESETS, args)


def main(argv=None):
    return experiment_main(build_parser(), argv, name=NAME, config_cls=Config, presets=PRESETS,
                           build_sweep=build_sweep, summarise=summarise, draw=draw, tables=TABLES,
                           paper_presets=("paper",), figures_dir=REPO / "figures")


if __name__ == "__main__":
    sys.exit(main())
