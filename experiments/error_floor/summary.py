"""error_floor's tables: per axis value and series the mean final error (``points``), per axis and
setting the fitted exponent against Corollary 1's (``exponents``), and per axis the ratio of the
theorem's error to known-label least squares on the same data (``optimality``).

Every exponent verdict compares the prediction with the fit's raw 95% bootstrap interval, widened
only by what a simulation of that interval's coverage at the row's own sizes says it needs
(:func:`.coverage.slope_coverage`: the ``widening`` column, 0 where the raw interval covers 95%;
the measured coverage is in ``coverage_raw``).  No widening is chosen by hand.
"""

from __future__ import annotations

import math

import numpy as np

from mixreg.problems import exact_labels, make_labels
from mixreg.predictions import Constant, Prediction, exponent_verdict, fit_exponent
from mixreg.stats import bootstrap_mean_interval, finite_mean, fit_slope, loglog_slope
from mixreg.theory import ifca_safe_step_size, ifca_stationary_error, ifca_step_size

from .coverage import slope_coverage

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "AXES", "COROLLARY", "MINIMAX", "PREDICTIONS", "SETTINGS",
           "OPTIMALITY_AXES", "axis_points", "fit_with_coverage", "summarise"]

NAME = "error_floor"
TABLES = ("points", "exponents", "optimality")  # written as <name>.csv; the figure is drawn from the first two
DEFAULT_SEED = 20200604  # IFCA's arXiv submission date; any fixed integer would do

#: The five axes, in panel order: the cell key each moves and its Config grid field.
AXES = {"m": "ms", "n_prime": "n_primes", "d": "ds", "sigma": "sigmas", "p": "ps"}


def _exponent_along(cell, **exponents):
    """The predicted exponent along the cell's axis: the constant named after it."""
    return exponents[cell["axis"]]


def _per_axis(name, text, source, **exponents):
    """A prediction of one exponent per axis, all from ``source``."""
    return Prediction(name, _exponent_along, text, fields=("axis",),
                      constants={axis: Constant(value, source) for axis, value in exponents.items()})


#: The exponent of the final error along each axis (at a cell ``{"axis": ...}``), fixed before the
#: runs: Corollary 1's noise term (where its exponential term is negligible), and known-label least
#: squares' RMS error, which differs in ``p`` only.  Registered in the manifest before the first trial.
PREDICTIONS = (
    _per_axis("corollary1_exponent", "final error ~ (sigma / p) sqrt(d / (m n')): exponent -1/2 in m and n', "
              "+1/2 in d, +1 in sigma, -1 in p (where Corollary 1's exponential term is negligible)",
              "IFCA, Corollary 1: noise term c5 (sigma / p) sqrt(d / (m n'))",
              m=-0.5, n_prime=-0.5, d=0.5, sigma=1.0, p=-1.0),
    _per_axis("known_label_exponent", "known-label least squares' error ~ sigma sqrt(d / (p m n')): exponent "
              "-1/2 in m, n' and p, +1/2 in d, +1 in sigma",
              "exact: known-label least squares' RMS error sigma sqrt(d / (p m n')), the minimax rate",
              m=-0.5, n_prime=-0.5, d=0.5, sigma=1.0, p=-0.5),
)
#: Corollary 1's exponent of its noise term (sigma / p) sqrt(d / (m n')), per axis (``PREDICTIONS[0]``).
COROLLARY = {axis: PREDICTIONS[0].constants[axis].value for axis in AXES}
#: The known-label (minimax) rate sigma sqrt(d / (p m n')), per axis (``PREDICTIONS[1]``).
MINIMAX = {axis: PREDICTIONS[1].constants[axis].value for axis in AXES}

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


def _reference(config):
    return dict(m=config.m_ref, n_prime=config.n_prime_ref, d=config.d_ref, sigma=float(config.sigma_ref),
                p=float(config.p_ref))


def axis_points(config, axis):
    """The cells' parameters along ``axis``: ``[(value, {m, n_prime, d, sigma, p}), ...]``, sorted."""
    grid = sorted(set(getattr(config, AXES[axis])))
    return [(v, {**_reference(config), axis: v}) for v in grid]


def _select(records, params):
    """The successful trials of the cell with these (m, n', d, sigma, p)."""
    return [r for r in records if not r.get("error") and r["m"] == params["m"] and r["n_prime"] == params["n_prime"]
            and r["d"] == params["d"] and r["sigma"] == params["sigma"] and r["p_min"] == params["p"]]


def _values(records, column):
    return np.array([np.nan if r[column] is None else float(r[column]) for r in records], dtype=float)


def _derived(setting, config, params, recs):
    """Our derivation of the statistic's leading term at a cell (``nan`` where it has none).

    Theorem's setting: the largest stationary RMS error (:func:`mixreg.theory.ifca_stationary_error`)
    with the step of the setting; practical setting and known-label least squares: the largest
    known-label RMS ``sigma sqrt(d / (N_j - d - 1))`` (with the right identities, full-batch IFCA
    converges to known-label least squares).
    """
    if setting in ("practical", "known_label_ls"):
        return finite_mean(_values(recs, "ls_rms")) if recs else math.nan
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
            x = finite_mean(_values(recs, "p")) if axis == "p" and recs else float(value)
            for s, setting in enumerate(settings):
                column = SETTINGS[setting]["column"]
                rng = np.random.default_rng([DEFAULT_SEED, a, s, len(rows)])
                mean, low, high = bootstrap_mean_interval(_values(recs, column), rng, config.n_boot)
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
                    misclustering=finite_mean(_values(recs, miscl)) if miscl and recs else None,
                    derived=_derived(setting, config, params, recs),
                    p=x if axis == "p" else float(params["p"]),
                    rho=finite_mean(_values(recs, "rho")) if recs else math.nan,
                    n_prime=int(params["n_prime"]),
                    theory_rounds=int(np.max(_values(recs, "theory_rounds"))) if recs else 0,
                    init_dist=finite_mean(_values(recs, "init_dist")) if recs else math.nan,
                    practical_step=finite_mean(_values(recs, "practical_step")) if recs else math.nan,
                ))
    return rows


def fit_with_coverage(x, samples, *, n_boot, rng, log_x=True):
    """The fitted exponent (:func:`mixreg.predictions.fit_exponent`, or :func:`mixreg.stats.fit_slope`
    for ``log_x=False``) and the simulated coverage of its interval (:func:`.coverage.slope_coverage`),
    from one ``rng``: ``(fit, coverage)``."""
    if log_x:
        fit = fit_exponent(x, samples, statistic="mean", n_boot=n_boot, rng=rng)
    else:
        fit = fit_slope(x, samples, log_x=False, n_boot=n_boot, rng=rng)
    return fit, slope_coverage(x, samples, log_x=log_x, rng=rng)


def _widening(coverage):
    """The widening a verdict uses: the measured one, 0 where none could be measured."""
    return float(coverage.widening) if np.isfinite(coverage.widening) else 0.0


def _coverage_columns(coverage, suffix=""):
    return {f"widening{suffix}": _widening(coverage), f"coverage_raw{suffix}": coverage.coverage,
            f"coverage_se{suffix}": coverage.se, f"coverage_widened{suffix}": coverage.coverage_widened}


def _cell_samples(config, records, axis, used, column):
    """The trial outcomes of ``column`` at each of the ``used`` points of ``axis``."""
    samples = []
    for r in used:
        params = dict(dict(axis_points(config, axis))[r["value"]])
        samples.append(_values(_select(records, params), column))
    return samples


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
            samples = _cell_samples(config, records, axis, used, column)
            prediction = PREDICTIONS[1] if setting == "known_label_ls" else PREDICTIONS[0]
            predicted = float(prediction.predict([dict(axis=axis)])[0])
            fit, coverage = fit_with_coverage([r["x"] for r in used], samples, n_boot=config.n_boot,
                                              rng=np.random.default_rng([DEFAULT_SEED, 100 + a, s]))
            widening = _widening(coverage)
            status = exponent_verdict(f"{setting} along {axis}", predicted, fit, tolerance=widening).status
            if failing:
                verdict = "fails: not contracting"
                where = ", ".join(f"{r['x']:.3g}" for r in failing)
                diverged = sum(r["diverged"] for r in failing)
                note = (f"at {axis} = {where}: {sum(r['not_contracting'] for r in failing)} of "
                        f"{sum(r['trials'] for r in failing)} trials end above the initial distance alpha Delta "
                        f"({diverged} diverged); fitted on the other {len(used)} points only, where the slope "
                        f"{'is consistent with' if status == 'consistent' else status} {predicted:+g}")
            else:
                verdict, note = status, ""
            logs = [(math.log(r["x"]), math.log(r["mean"])) for r in used if r["mean"] and r["mean"] > 0]
            anchor_x = math.exp(np.mean([u for u, _ in logs])) if logs else math.nan
            anchor_y = math.exp(np.mean([v for _, v in logs])) if logs else math.nan
            row = dict(
                axis=axis, setting=setting, predicted=predicted, source=SETTINGS[setting]["source"],
                fitted=fit.slope, low=fit.low, high=fit.high, verdict=verdict,
                covered=SETTINGS[setting]["covered"], n_points=fit.n_points, intercept=fit.intercept,
                anchor_x=anchor_x, anchor_y=anchor_y,
                derived=loglog_slope([r["x"] for r in used], [r["derived"] for r in used]),
                tolerance=widening, note=note, **_coverage_columns(coverage))
            row.update(_unique_smallest(config, records, axis, a, s, used, column))
            rows.append(row)
    return rows


def _unique_smallest(config, records, axis, a, s, used, column):
    """On the p axis, the same fit over the cells where the smallest cluster is unique (``p < 1/k``):
    at ``p = 1/k`` every cluster is a smallest one and the error, a maximum over clusters, is the
    maximum of ``k`` equally distributed errors, lifted above one cluster's.  ``nan`` elsewhere."""
    keys = ("fitted_unique", "low_unique", "high_unique", "n_points_unique", "widening_unique",
            "coverage_raw_unique", "coverage_se_unique", "coverage_widened_unique")
    if axis != "p":
        return dict.fromkeys(keys, math.nan)
    kept = [r for r in used if r["x"] < 1.0 / config.k - 1e-9]
    if len(kept) < 2:
        return dict.fromkeys(keys, math.nan)
    fit, coverage = fit_with_coverage([r["x"] for r in kept], _cell_samples(config, records, axis, kept, column),
                                      n_boot=config.n_boot, rng=np.random.default_rng([DEFAULT_SEED, 200 + a, s]))
    return dict(fitted_unique=fit.slope, low_unique=fit.low, high_unique=fit.high, n_points_unique=fit.n_points,
                **_coverage_columns(coverage, "_unique"))


#: The axes of the ``optimality`` table (the p axis's theorem step diverges on unbalanced clusters).
OPTIMALITY_AXES = ("m", "n_prime", "d", "sigma")


def _ratios(records):
    """Per trial: the theorem's final error over known-label least squares on the same ``2 T n'``
    points per client (``nan`` where either is missing)."""
    thm, full = _values(records, "thm_err"), _values(records, "ls_full_err")
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(thm) & (full > 0), thm / full, np.nan)


def _optimality(config, records):
    """One row per axis of :data:`OPTIMALITY_AXES` (see :func:`summarise`)."""
    rows = []
    for a, axis in enumerate(OPTIMALITY_AXES):
        xs, samples, means, lows, highs, rounds = [], [], [], [], [], []
        for i, (value, params) in enumerate(axis_points(config, axis)):
            recs = _select(records, params)
            ratio = _ratios(recs)
            mean, low, high = bootstrap_mean_interval(ratio, np.random.default_rng([DEFAULT_SEED, 400 + a, i]),
                                                      config.n_boot)
            xs.append(float(value))
            samples.append(ratio)
            means.append(mean)
            lows.append(low)
            highs.append(high)
            rounds += [int(v) for v in _values(recs, "theory_rounds") if np.isfinite(v)]
        fit, coverage = fit_with_coverage(xs, samples, n_boot=config.n_boot,
                                          rng=np.random.default_rng([DEFAULT_SEED, 500 + a]))
        widening = _widening(coverage)
        verdict = exponent_verdict(f"ratio along {axis}", 0.0, fit, tolerance=widening)
        finite = [i for i, v in enumerate(means) if np.isfinite(v)]
        T = max(rounds) if rounds else 0
        rows.append(dict(
            axis=axis, values=" ".join(f"{x:g}" for x in xs),
            ratio_means=" ".join(f"{means[i]:.4g}" for i in finite),
            ratio_min=min((means[i] for i in finite), default=math.nan),
            ratio_max=max((means[i] for i in finite), default=math.nan),
            ratio_low=min((lows[i] for i in finite), default=math.nan),
            ratio_high=max((highs[i] for i in finite), default=math.nan),
            predicted=0.0, fitted=fit.slope, low=fit.low, high=fit.high, n_points=fit.n_points,
            verdict=verdict.status, theory_rounds=T,
            ratio_derived=math.sqrt(2 * T * config.c1 / (1 - config.c1)) if T and config.c1 < 1 else math.nan,
            **_coverage_columns(coverage)))
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
        its 95% bootstrap interval ``low``/``high`` (:func:`mixreg.predictions.fit_exponent`),
        ``verdict`` (:func:`mixreg.predictions.exponent_verdict`: ``consistent``,
        ``contradicts``, ``not tested``, or ``fails: not contracting`` when a theorem-setting
        run did not contract at some axis value, which ``note`` names; the fit then uses the
        other values), ``covered`` (the setting is Theorem 1's), ``n_points``, ``intercept``,
        ``anchor_x``/``anchor_y`` (geometric centre of the fitted points: where the predicted
        slope is drawn through), ``derived`` (slope of ``derived`` over the same points),
        ``tolerance`` (the widening the verdict used: ``widening``), ``note``; the simulated
        coverage of the raw interval (:func:`.coverage.slope_coverage`): ``coverage_raw`` with its
        Monte Carlo ``coverage_se``, ``widening`` (the smallest widening with simulated coverage
        >= 95%, 0 where the raw interval reaches it) and ``coverage_widened``; on the p axis the
        same fit over the cells where the smallest cluster is unique, ``p < 1/k``
        (``fitted_unique``, ``low_unique``, ``high_unique``, ``n_points_unique``,
        ``widening_unique``, ``coverage_*_unique``; ``nan`` on the other axes).
        ``optimality``: one row per axis m, n', d, sigma: the per-trial ratio of the theorem's
        final error to known-label least squares on the same ``2 T n'`` points per client (the
        estimator whose rate the paper's optimality remark compares with): ``values`` (the axis),
        ``ratio_means`` (mean ratio per value), ``ratio_min``/``ratio_max`` (of those means),
        ``ratio_low``/``ratio_high`` (the extreme ends of their 95% bootstrap intervals),
        ``predicted`` (0: a ratio bounded by a constant), the ratio's ``fitted`` exponent with
        ``low``/``high``, ``n_points``, its ``verdict`` against 0 (widened by ``widening``, with
        the coverage columns as above), ``theory_rounds`` (``T``) and ``ratio_derived``
        (our derivation for balanced clusters, not fitted: ``sqrt(2 T c1 / (1 - c1))``, the
        stationary RMS ``sigma sqrt(gamma d / (m n' (1 - gamma p)))`` with ``gamma = c1 / p`` over
        the oracle's ``sigma sqrt(d / (p m 2 T n'))``).
    """
    points = _points(config, records)
    return {"points": points, "exponents": _exponents(config, records, points),
            "optimality": _optimality(config, records)}
