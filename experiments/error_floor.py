"""IFCA's final error against m, n', d, sigma and p, against the exponents of its Corollary 1.

Run ``python -m experiments.error_floor`` for the quick default (about 40 CPU-seconds: under a
minute on two idle cores), or ``--preset paper`` for larger grids and more trials (about half a
CPU-hour; see ``PRESETS``).

Corollary 1 of the IFCA paper (linear model) bounds the final error by
``eps = c5 (sigma / p) sqrt(d / (m n')) + c6 exp(-c4 (rho / (rho + 1))^2 n')``: where the
exponential term is negligible, the exponents are -1/2 in ``m`` and ``n'``, +1/2 in ``d``, +1 in
``sigma`` and -1 in ``p``.  Known-label least squares has ``sigma sqrt(d / (p m n'))``: -1/2 in
``p``.  Five one-dimensional sweeps through a reference cell measure them, each trial running
(:func:`mixreg.trials_error_floor.error_floor_trial`)

* **the theorem's setting** (covered by Theorem 1): initial models at distance
  ``alpha Delta`` from the truth (Assumption 1's boundary for ``alpha = 1/4``), the resampling
  scheme (``n'`` fresh points per round for each of the identity estimate and the gradient),
  option I with ``gamma = c1 / p``; on the p axis also with the safe step ``c1 / p_max``, which
  Theorem 1 does not consider but which the unbalanced clusters need (:mod:`mixreg.theory`);
* **the paper's practical setting** (not covered by Theorem 1): random Gaussian
  initialisations, no resampling (``n = n'`` points per client, all used every round), best of
  ``restarts`` x ``step_sizes`` runs by final training loss, the same step grid in every cell;
* **known-label least squares** on the practical data (the oracle that knows the clusters; the
  minimax-rate estimator, not a floor: shrinkage beats it for ``d >= 3``).

The error of a trial is the permutation-matched distance per cluster, maximum over clusters
(Theorem 1 holds for all ``j``); the statistic is its mean over the trials.  Each axis and
setting gets a row of ``exponents.csv``: the predicted exponent and where it comes from, the
fitted one (least squares of ``log mean`` on ``log x``) with its 95% stratified bootstrap
interval (:func:`mixreg.stats.fit_slope`), the verdict (:func:`mixreg.stats.slope_verdict`,
widened by ``tolerance``), and what our own derivation predicts (``derived``).

Writes into the results directory (default ``results/error_floor/<preset>``):

* ``trials.csv``, ``summary.csv`` and ``manifest.json`` (from the engine);
* ``points.csv``: per axis value and series, the mean final error with its 95% bootstrap
  interval, divergences, misclustering, the realised ``p``, ``rho``, ``T``;
* ``exponents.csv``: per axis and setting, predicted and fitted exponents and the verdict;
* ``error_floor.png`` and ``.pdf``, drawn from the two tables alone; ``--redraw DIR`` redraws
  them from a results directory without running anything.

The paper preset also writes the figure to ``figures/error_floor_paper.{png,pdf}`` (when the run
is the unchanged preset).  Flags: one per field of :class:`Config` (``--ms``, ``--n-primes``,
``--m-ref``, ``--step-sizes``, ...), see ``--help``.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import sys

import numpy as np

from mixreg import cli as _cli
from mixreg.cli import param
from mixreg.montecarlo import Sweep
from mixreg.plotting import plot_error_floor, save_figure
from mixreg.problems import ProblemSpec, make_labels
from mixreg.stats import fit_slope, slope_verdict
from mixreg.theory import ifca_safe_step_size, ifca_stationary_error, ifca_step_size
from mixreg.algorithms import TRIAL_OVERHEAD
from mixreg.trials_error_floor import (
    ERROR_FLOOR_CELLS,
    error_floor_memory,
    error_floor_trial,
    exact_labels,
    theory_rounds,
)

NAME = "error_floor"
TABLES = ("points", "exponents")  # written as <name>.csv; the figure is drawn from them alone
DEFAULT_SEED = 20200604  # IFCA's arXiv submission date; any fixed integer would do
REPO = pathlib.Path(__file__).resolve().parent.parent

#: The five axes, in panel order: the cell key each moves and its Config grid field.
AXES = {"m": "ms", "n_prime": "n_primes", "d": "ds", "sigma": "sigmas", "p": "ps"}

#: Corollary 1's exponent of its noise term (sigma / p) sqrt(d / (m n')), per axis.
COROLLARY = {"m": -0.5, "n_prime": -0.5, "d": 0.5, "sigma": 1.0, "p": -1.0}
#: The known-label (minimax) rate sigma sqrt(d / (p m n')), per axis.
MINIMAX = {"m": -0.5, "n_prime": -0.5, "d": 0.5, "sigma": 1.0, "p": -0.5}

#: The series of the figure and the settings of the table: record column of the final error and
#: what the row's prediction is.
SETTINGS = {
    "theorem": dict(column="thm_err", source="Corollary 1", covered=True),
    "theorem_safe_step": dict(column="safe_err", source="Corollary 1's form (step c1/p_max is outside Theorem 1)",
                              covered=False),
    "practical": dict(column="practical_err", source="Corollary 1's form (not covered: random init, no resampling)",
                      covered=False),
    "known_label_ls": dict(column="ls_err", source="minimax rate sigma sqrt(d/(p m n')) with known labels",
                           covered=False),
}


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag of the command line, named as the field
    (``n_prime_ref`` -> ``--n-prime-ref``), defaulting to the preset's value.
    """

    preset: str = param("quick (default, under a minute on 2 idle cores) or paper (larger grids, more trials, "
                        "about half a CPU-hour)")
    k: int = param("clusters")
    separation: float = param("minimum separation Delta of theta* (Gaussian protocol, exact)")
    m_ref: int = param("clients m of the reference cell")
    n_prime_ref: int = param("points per client and round n' of the reference cell")
    d_ref: int = param("dimension d of the reference cell")
    sigma_ref: float = param("noise level sigma of the reference cell")
    p_ref: float = param("smallest cluster proportion p of the reference cell (1/k: balanced)")
    ms: tuple[int, ...] = param("clients m of the m axis")
    n_primes: tuple[int, ...] = param("points per client and round n' of the n' axis")
    ds: tuple[int, ...] = param("dimensions d of the d axis")
    sigmas: tuple[float, ...] = param("noise levels sigma of the sigma axis")
    ps: tuple[float, ...] = param("smallest cluster proportions p of the p axis (exact proportions)")
    trials: int = param("trials per cell")
    restarts: int = param("practical setting: random initialisations per trial")
    step_sizes: tuple[float, ...] = param("practical setting: step sizes run from every initialisation")
    practical_rounds: int = param("practical setting: most rounds")
    n_boot: int = param("bootstrap resamples of the intervals")
    alpha: float = param("initial distance alpha Delta of the theorem's setting (Assumption 1: 1/4)", default=0.25)
    c1: float = param("Theorem 1's step constant: gamma = c1 / p", default=0.375)
    halvings: int = param("theorem's setting: rounds T = halvings on balanced clusters (Corollary 1's "
                          "log2(Delta/(4 eps))), more when the safe step is slower", default=14)
    practical_tol: float = param("practical setting: stop once every run moves less than this (0: never)",
                                 default=1e-9)
    tolerance: float = param("slope verdict: predicted exponent within the interval widened by this", default=0.05)

    def validate(self):
        """Raise ``ValueError`` naming the first bad option and its allowed range."""
        for name in ("k", "m_ref", "n_prime_ref", "d_ref", "trials", "halvings", "restarts", "practical_rounds",
                     "n_boot"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.k < 2:
            raise ValueError(f"k must be >= 2 (Delta and Assumption 1 need two clusters), got {self.k}")
        for name in ("ms", "n_primes", "ds"):
            grid = getattr(self, name)
            if len(grid) < 2 or any(not isinstance(v, (int, np.integer)) or v < 1 for v in grid):
                raise ValueError(f"{name} must hold at least two integers >= 1 (a slope needs two points), "
                                 f"got {list(grid)}")
        if min(self.ms + (self.m_ref,)) < 2 * self.k:
            raise ValueError(f"ms and m_ref must be at least 2k = {2 * self.k}, got {list(self.ms)} and "
                             f"m_ref={self.m_ref}")
        if len(self.sigmas) < 2 or any(not np.isfinite(s) or s <= 0 for s in self.sigmas):
            raise ValueError(f"sigmas must hold at least two values > 0 (a log axis), got {list(self.sigmas)}")
        if not np.isfinite(self.sigma_ref) or self.sigma_ref <= 0:
            raise ValueError(f"sigma_ref must be finite and > 0, got {self.sigma_ref!r}")
        top = 1.0 / self.k
        if len(self.ps) < 2 or any(not 0 < p <= top + 1e-12 for p in self.ps + (self.p_ref,)):
            raise ValueError(f"ps (at least two) and p_ref must be in (0, 1/k] = (0, {top:.4g}], got "
                             f"{list(self.ps)} and p_ref={self.p_ref!r}")
        if min(self.ps + (self.p_ref,)) * min(self.ms + (self.m_ref,)) < 1:
            raise ValueError(f"every cluster needs a client: min(ps) * min(ms) must be >= 1, got "
                             f"{min(self.ps + (self.p_ref,))} * {min(self.ms + (self.m_ref,))}")
        if not np.isfinite(self.separation) or self.separation <= 0:
            raise ValueError(f"separation must be finite and > 0, got {self.separation!r}")
        if not np.isfinite(self.alpha) or not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha must be in (0, 1/2), got {self.alpha!r}")
        if not np.isfinite(self.c1) or self.c1 <= 0:
            raise ValueError(f"c1 must be finite and > 0, got {self.c1!r}")
        if not self.step_sizes or any(not np.isfinite(g) or g <= 0 for g in self.step_sizes):
            raise ValueError(f"step_sizes must be finite and > 0, got {list(self.step_sizes)}")
        if not np.isfinite(self.practical_tol) or self.practical_tol < 0:
            raise ValueError(f"practical_tol must be finite and >= 0, got {self.practical_tol!r}")
        if not np.isfinite(self.tolerance) or self.tolerance < 0:
            raise ValueError(f"tolerance must be finite and >= 0, got {self.tolerance!r}")
        return self


# Quick: k = 2, Delta = 1, reference (m, n', d, sigma, p) = (100, 20, 10, 0.1, 1/2), so
# p m n' = 100 d (eta = sqrt(d / (p m n')) = 0.1) and rho = 100: the theorem's regime, where
# misclustering after the first rounds is negligible, holds on every axis (eta <= 0.2 at the
# ends of the m, n' and d axes; rho >= 6 on the sigma axis).  The p axis reaches p_max / p = 9,
# where Theorem 1's step makes the large cluster diverge.  24 trials per cell.
# About 40 CPU-seconds in all (trials, tables and figure), so well under a minute on two idle
# cores.  Paper: longer axes (factor 32 in m and n', 64 in sigma, p_max / p up to 9), 100
# trials, 10 restarts x 3 step sizes, 300 practical rounds, 4000 bootstrap resamples: about half
# a CPU-hour (15-20 minutes on two idle cores; --jobs or --scheduler for more) and up to ~0.7 GB
# per worker at p = 0.1 (T = 112 resampled rounds of n' = 40 points in d = 20).
PRESETS = {
    "quick": dict(k=2, separation=1.0, m_ref=100, n_prime_ref=20, d_ref=10, sigma_ref=0.1, p_ref=0.5,
                  ms=(25, 50, 100, 200, 400), n_primes=(5, 10, 20, 40, 80), ds=(5, 10, 20, 40),
                  sigmas=(0.025, 0.05, 0.1, 0.2, 0.4), ps=(0.1, 0.2, 0.3, 0.4, 0.5), trials=24, restarts=3,
                  step_sizes=(0.5, 1.0), practical_rounds=100, n_boot=1000),
    "paper": dict(k=2, separation=1.0, m_ref=100, n_prime_ref=40, d_ref=20, sigma_ref=0.1, p_ref=0.5,
                  ms=(25, 50, 100, 200, 400, 800), n_primes=(10, 20, 40, 80, 160, 320), ds=(5, 10, 20, 40, 80),
                  sigmas=(0.0125, 0.025, 0.05, 0.1, 0.2, 0.4, 0.8), ps=(0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5),
                  trials=100, restarts=10, step_sizes=(0.25, 0.5, 1.0), practical_rounds=300, n_boot=4000),
}


def _reference(config):
    return dict(m=config.m_ref, n_prime=config.n_prime_ref, d=config.d_ref, sigma=float(config.sigma_ref),
                p=float(config.p_ref))


def _cell(config, m, n_prime, d, sigma, p):
    """One cell: the problem (a :class:`ProblemSpec`, keys of ``ERROR_FLOOR_CELLS``) and the method."""
    spec = ProblemSpec(m=int(m), k=config.k, d=int(d), sigma=float(sigma), scale=float(config.separation),
                       protocol="gaussian", n=int(n_prime), dtype="float64")
    return dict(spec.to_cell(ERROR_FLOOR_CELLS), p_min=float(p), alpha=float(config.alpha), c1=float(config.c1),
                halvings=config.halvings, restarts=config.restarts,
                step_sizes=tuple(float(g) for g in config.step_sizes), practical_rounds=config.practical_rounds,
                practical_tol=float(config.practical_tol))


def axis_points(config, axis):
    """The cells' parameters along ``axis``: ``[(value, {m, n_prime, d, sigma, p}), ...]``, sorted."""
    grid = sorted(set(getattr(config, AXES[axis])))
    return [(v, {**_reference(config), axis: v}) for v in grid]


def cells_of(config):
    """The five sweeps through the reference cell, without duplicates."""
    keys = [tuple(params[name] for name in ("m", "n_prime", "d", "sigma", "p"))
            for axis in AXES for _, params in axis_points(config, axis)]
    return tuple(_cell(config, *key) for key in dict.fromkeys(keys))


def trial_flops(cell):
    """IFCA's own count: (k + 1) 2 N d per replica-round, practical runs (up to all rounds) and the
    theorem's two runs on n' points per round."""
    m, n, d, k = cell["m"], cell["n_prime"], cell["d"], cell["k"]
    p = exact_labels(m, k, cell["p_min"]) if cell["p_min"] < 1 / k - 1e-12 else None
    props = np.full(k, 1 / k) if p is None else np.bincount(p) / m
    T = theory_rounds(cell["halvings"], cell["c1"], props.min(), props.max())
    practical = cell["restarts"] * len(cell["step_sizes"]) * cell["practical_rounds"]
    return float((k + 1) * 2 * m * n * d * (practical + 2 * T) + 4 * T * m * n * d)


def trial_memory(cell):
    """Upper estimate of one trial's peak bytes: its arrays
    (:func:`mixreg.trials_error_floor.error_floor_memory`) and :data:`TRIAL_OVERHEAD`."""
    return TRIAL_OVERHEAD + error_floor_memory(cell)


def build_sweep(config, root_seed=DEFAULT_SEED):
    config.validate()
    return Sweep(
        name=NAME,
        trial_fn=error_floor_trial,
        cells=cells_of(config),
        n_trials=config.trials,
        root_seed=root_seed,
        config=dataclasses.asdict(config),
        cost_fn=trial_flops,
        memory_fn=trial_memory,
        size_names=_cli.config_flags("m_ref", "n_prime_ref", "d_ref", "ms", "n_primes", "ds", "halvings", "k",
                                     "restarts", "step_sizes"),
    )


# --------------------------------------------------------------------------------------------
# Summaries
# --------------------------------------------------------------------------------------------


def _select(records, params):
    """The successful trials of the cell with these (m, n', d, sigma, p)."""
    return [r for r in records if not r.get("error") and r["m"] == params["m"] and r["n_prime"] == params["n_prime"]
            and r["d"] == params["d"] and r["sigma"] == params["sigma"] and r["p_min"] == params["p"]]


def _values(records, column):
    return np.array([np.nan if r[column] is None else float(r[column]) for r in records], dtype=float)


def _nanmean(values):
    """Mean of the finite values, ``nan`` when there is none (no warning)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else math.nan


def _mean_interval(values, rng, n_boot, level=0.95):
    """Mean of the finite values and its percentile bootstrap interval (``nan`` without values)."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    boots = v[rng.integers(0, v.size, (n_boot, v.size))].mean(axis=1)
    low, high = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return float(v.mean()), float(low), float(high)


def _derived(setting, config, params, recs):
    """Our derivation of the statistic's leading term at a cell (``nan`` where it has none).

    Theorem's setting: the largest stationary RMS error (:func:`mixreg.theory.ifca_stationary_error`)
    with the step of the setting; practical setting and known-label least squares: the largest
    known-label RMS ``sigma sqrt(d / (N_j - d - 1))`` (with the right identities, full-batch IFCA
    converges to known-label least squares).
    """
    if setting in ("practical", "known_label_ls"):
        return _nanmean(_values(recs, "ls_rms")) if recs else math.nan
    k, m = config.k, params["m"]
    labels = exact_labels(m, k, params["p"]) if params["p"] < 1 / k - 1e-12 else make_labels(m, k)
    props = np.bincount(labels, minlength=k) / labels.size
    step = (ifca_step_size(props.min(), config.c1) if setting == "theorem"
            else ifca_safe_step_size(props.max(), config.c1))
    return float(np.max(ifca_stationary_error(step, props, params["sigma"], params["d"], m, params["n_prime"])))


def _points(config, records):
    """One row per axis value and series (see :func:`summarise`)."""
    rows = []
    for a, axis in enumerate(AXES):
        settings = [s for s in SETTINGS if s != "theorem_safe_step" or axis == "p"]
        for value, params in axis_points(config, axis):
            recs = _select(records, params)
            x = _nanmean(_values(recs, "p")) if axis == "p" and recs else float(value)
            for s, setting in enumerate(settings):
                column = SETTINGS[setting]["column"]
                rng = np.random.default_rng([DEFAULT_SEED, a, s, len(rows)])
                mean, low, high = _mean_interval(_values(recs, column), rng, config.n_boot)
                run = {"theorem": "thm", "theorem_safe_step": "safe"}.get(setting)
                diverged = int(np.nansum(_values(recs, f"{run}_diverged"))) if run else (
                    int(np.nansum(_values(recs, "practical_diverged"))) if setting == "practical" else 0)
                contracted = int(np.nansum(_values(recs, f"{run}_contracted"))) if run else len(recs)
                miscl = {"thm": "thm_misclustering", "safe": "safe_misclustering"}.get(
                    run, "practical_misclustering" if setting == "practical" else None)
                rows.append(dict(
                    axis=axis, value=float(value), x=x, series=setting, mean=mean, low=low, high=high,
                    trials=len(recs), finite=int(np.isfinite(_values(recs, column)).sum()) if recs else 0,
                    diverged=diverged, not_contracting=len(recs) - contracted,
                    misclustering=_nanmean(_values(recs, miscl)) if miscl and recs else None,
                    derived=_derived(setting, config, params, recs),
                    p=x if axis == "p" else float(params["p"]),
                    rho=_nanmean(_values(recs, "rho")) if recs else math.nan,
                    n_prime=int(params["n_prime"]),
                    theory_rounds=int(np.max(_values(recs, "theory_rounds"))) if recs else 0,
                    init_dist=_nanmean(_values(recs, "init_dist")) if recs else math.nan,
                    practical_step=_nanmean(_values(recs, "practical_step")) if recs else math.nan,
                ))
    return rows


def _slope(xs, ys):
    """Least-squares slope of log y on log x over the finite positive points (``nan`` otherwise)."""
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0]) if ok.sum() >= 2 else math.nan


def _exponents(config, records, points):
    """One row per axis and setting (see :func:`summarise`)."""
    rows = []
    for a, axis in enumerate(AXES):
        settings = [s for s in SETTINGS if s != "theorem_safe_step" or axis == "p"]
        for s, setting in enumerate(settings):
            column = SETTINGS[setting]["column"]
            pts = [r for r in points if r["axis"] == axis and r["series"] == setting]
            failing = [r for r in pts if r["diverged"] or r["not_contracting"]]
            used = [r for r in pts if r not in failing] if setting.startswith("theorem") else pts
            samples = []
            for r in used:
                params = dict(dict(axis_points(config, axis))[r["value"]])
                samples.append(_values(_select(records, params), column))
            predicted = MINIMAX[axis] if setting == "known_label_ls" else COROLLARY[axis]
            fit = fit_slope([r["x"] for r in used], samples, statistic="mean", n_boot=config.n_boot,
                            rng=np.random.default_rng([DEFAULT_SEED, 100 + a, s]))
            if failing:
                verdict = "fails: not contracting"
                others = slope_verdict(predicted, fit, tolerance=config.tolerance)
                where = ", ".join(f"{r['x']:.3g}" for r in failing)
                diverged = sum(r["diverged"] for r in failing)
                note = (f"at {axis} = {where}: {sum(r['not_contracting'] for r in failing)} of "
                        f"{sum(r['trials'] for r in failing)} trials end above the initial distance alpha Delta "
                        f"({diverged} diverged); fitted on the other {len(used)} points only, where the slope "
                        f"{'is consistent with' if others == 'consistent' else others} {predicted:+g}")
            else:
                verdict = slope_verdict(predicted, fit, tolerance=config.tolerance)
                note = ""
            logs = [(math.log(r["x"]), math.log(r["mean"])) for r in used if r["mean"] and r["mean"] > 0]
            anchor_x = math.exp(np.mean([u for u, _ in logs])) if logs else math.nan
            anchor_y = math.exp(np.mean([v for _, v in logs])) if logs else math.nan
            rows.append(dict(
                axis=axis, setting=setting, predicted=predicted, source=SETTINGS[setting]["source"],
                fitted=fit.slope, low=fit.low, high=fit.high, verdict=verdict,
                covered=SETTINGS[setting]["covered"], n_points=fit.n_points, intercept=fit.intercept,
                anchor_x=anchor_x, anchor_y=anchor_y,
                derived=_slope([r["x"] for r in used], [r["derived"] for r in used]),
                tolerance=float(config.tolerance), note=note,
            ))
    return rows


def summarise(config, records):
    """The figure's tables.

    Returns
    -------
    dict
        ``points``: one row per axis, axis value and series (``theorem``, ``theorem_safe_step``
        on the p axis only, ``practical``, ``known_label_ls``): ``x`` (the axis value; on the p
        axis the mean realised ``p``), ``mean`` of the final error over the trials where it is
        finite, ``low``/``high`` (95% percentile bootstrap interval of the mean), ``trials``,
        ``finite``, ``diverged`` (trials whose theorem-setting run diverged; for the practical
        setting, diverged runs of all trials), ``not_contracting`` (theorem's setting: trials
        ending above ``alpha Delta``), ``misclustering`` (mean final), ``derived`` (our
        derivation of the leading term, see ``_derived``), ``p``, ``rho``, ``n_prime``,
        ``theory_rounds`` (largest ``T``), ``init_dist`` (``alpha Delta``), ``practical_step``
        (mean chosen step).
        ``exponents``: one row per axis and setting: ``predicted`` (Corollary 1's exponent, or
        the minimax rate's for known-label least squares) and its ``source``, ``fitted`` with
        its 95% bootstrap interval ``low``/``high``, ``verdict`` (``consistent``,
        ``contradicts``, ``undetermined``, or ``fails: not contracting`` when a theorem-setting
        run did not contract at some axis value, which ``note`` names; the fit then uses the
        other values), ``covered`` (the setting is Theorem 1's), ``n_points``, ``intercept``,
        ``anchor_x``/``anchor_y`` (geometric centre of the fitted points: where the predicted
        slope is drawn through), ``derived`` (slope of ``derived`` over the same points),
        ``tolerance``, ``note``.
    """
    points = _points(config, records)
    return {"points": points, "exponents": _exponents(config, records, points)}


# --------------------------------------------------------------------------------------------
# Figure
# --------------------------------------------------------------------------------------------


def _footnote(config, points):
    rounds = [r["theory_rounds"] for r in points if r["theory_rounds"]]
    T = f"T = {config.halvings} rounds on balanced cells, up to {max(rounds)} on the p axis" if rounds else ""
    return (
        f"{config.preset}: k={config.k}, Δ={config.separation:g} (θ* Gaussian, exact separation), x ~ N(0, I); "
        f"reference m={config.m_ref}, n'={config.n_prime_ref}, d={config.d_ref}, σ={config.sigma_ref:g}, "
        f"p={config.p_ref:g}; {config.trials} trials per point. Error: permutation-matched distance per "
        "cluster, max over clusters; points = mean over trials with 95% bootstrap intervals; slopes = least "
        "squares of log mean on log x with 95% stratified bootstrap intervals. Theorem's setting: init at "
        f"distance {config.alpha:g}Δ, resampling (2T subsets of n' per client), option I, γ = {config.c1:g}/p, "
        f"{T} (the safe step's slow cluster). Practical setting: {config.restarts} Gaussian inits "
        f"N(0, Δ²/(2d) I) x steps {list(config.step_sizes)}, no resampling (n = n'), up to "
        f"{config.practical_rounds} rounds, run chosen by training loss; it lands on known-label LS (same data, "
        "right identities, converged). "
        "Predicted lines have their slope fixed in advance and pass through the centre of the points they "
        "compare with: they compare slopes only (the constants c5, c6 are unknown)."
    )


def draw(config, tables, outdir):
    """The figure, from the tables of :func:`summarise` only; returns the paths written."""
    fig = plot_error_floor(
        tables["points"], tables["exponents"],
        title=(f"IFCA's final error against m, n', d, σ and p (k = {config.k}): Corollary 1's exponents "
               "against fitted slopes"),
        footnote=_footnote(config, tables["points"]),
    )
    return save_figure(fig, pathlib.Path(outdir) / NAME)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


build_parser, config_from_args, main = _cli.entry_points(
    __name__, paper_presets=("paper",),
    description="IFCA's final error against m, n', d, sigma and p in the theorem's and the practical "
                "setting, beside known-label least squares, with Corollary 1's exponents.")


if __name__ == "__main__":
    sys.exit(main())
