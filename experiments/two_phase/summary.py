"""two_phase's tables: the curves at the reference cell, the controls, the measured contraction,
the theorem's recursion and the checks of every claim the figures make."""

from __future__ import annotations

import numpy as np
from scipy.stats import wilcoxon

from mixreg.predictions import Constant, Prediction, exponent_verdict, fit_exponent, held_out_verdict
from mixreg.theory import fit_log_constant, sxy_floor_term, sxy_phase2_recursion, sxy_rounds_to_floor

from .trial import CURVE_METHODS, MIN_WINDOW, SOLVERS, curve_columns

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "CONTROL_METHODS", "CLOSE_TO_LS", "GAP_TOLERANCE", "ROUNDS_SPREAD",
           "FLOOR_FACTOR", "PREDICTIONS", "N_BOOT", "cell_keys", "p_min_keys", "held_out_p", "summarise"]

NAME = "two_phase"
TABLES = ("curves", "controls", "contraction", "theory", "checks", "factor", "factor_fit", "ablation", "pairs")  # <name>.csv;
# the figures are drawn from them alone
DEFAULT_SEED = 20220614  # the paper's arXiv submission month; any fixed integer would do

#: Methods of the controls table, in its order: the curve methods, Phase 1, the fixed points.
CONTROL_METHODS = ("ifca", "oracle", "ifca_data", "oracle_data", "fedavg", "fedprox", "fmd", "ls", "cwls")
#: Record column of each control's final error.
_FINAL = {**{m: f"{m}_final" for m in CURVE_METHODS}, "fmd": "fmd_err", "ls": "ls_err", "cwls": "cwls_err"}
#: Tolerances of the checks (stated in the checks table and on the study's page, docs/studies/two_phase.md).
CLOSE_TO_LS = 0.10  # "within 10%" of the known-label least squares
GAP_TOLERANCE = 0.25  # measured 1 - rho within 25% of the predicted C1 p_min
ROUNDS_SPREAD = 2.0  # rounds to the floor / rho^-1 log(1/nu): the same constant across cells, within x2
FLOOR_FACTOR = 2.0  # a recursion's fixed point "matches" the measured floor within x2
N_BOOT = 2000  # bootstrap replicates of the factor's exponent and of the ablation's paired interval

_PHASE2 = "Su, Xu and Yang, Phase-2 theorem (slides): d(theta_{t+1}, theta*) <= (1 - C1 p_min) d(theta_t, theta*) + ..."
_REUSE = ("Su, Xu and Yang, slides 'Phase 2: FedX + Clustering': reusing all local data every round is 'crucial "
          "especially for data-scarce clients'")


def _exponent_of(cell, **exponents):
    """The predicted exponent along the cell's axis: the constant named after it."""
    return exponents[cell["axis"]]


def _advantage(cell, sign):
    """The predicted sign of the median log(final error without reuse / with reuse): +1, reuse is better."""
    return sign


#: Fixed before the data and registered in the manifest before the first trial: the per-round
#: contraction's gap 1 - factor grows like p_min^1 (C1 free), and sample splitting across rounds
#: (no reuse) ends with a larger error than reuse on the same draws.
PREDICTIONS = (
    Prediction("phase2_gap_exponent", _exponent_of, "1 - (per-round factor) ~ C1 p_min^1, C1 free",
               constants=dict(p_min=Constant(1.0, _PHASE2)), fields=("axis",)),
    Prediction("data_reuse_sign", _advantage, "sign of the median over trials of log(final error, split / reuse)",
               constants=dict(sign=Constant(1.0, _REUSE)), fields=()),
)



def _key(config, M, law, p):
    return int(M), str(law), float(p)


def _ref_key(config):
    return _key(config, config.M_ref, config.law_ref, config.p_ref)


def cell_keys(config):
    """``(M, size_law, p_min)`` of every cell: the reference first, then the three sweeps, no duplicates."""
    keys = [_ref_key(config)]
    keys += [_key(config, M, config.law_ref, config.p_ref) for M in config.Ms]
    keys += [_key(config, config.M_ref, law, config.p_ref) for law in config.laws]
    keys += [_key(config, config.M_ref, config.law_ref, p) for p in config.p_mins]
    return tuple(dict.fromkeys(keys))



def _ok(records):
    return [r for r in records if not r.get("error")]


def _select(records, key):
    M, law, p = key
    return [r for r in _ok(records) if r["M"] == M and r["size_law"] == law and float(r["p_min"]) == p]


def _finite(values):
    v = np.asarray([np.nan if x is None else float(x) for x in values], dtype=float)
    return v[np.isfinite(v)]


def _quartiles(values):
    v = _finite(values)
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    q = np.percentile(v, [50, 25, 75])
    return float(q[0]), float(q[1]), float(q[2])


def _median(values):
    return _quartiles(values)[0]


def _nu(r):
    return float(r["nu1"]) + float(r["nu2"])


def _choices(values):
    """``"0.5:2 1:4"``: how often each step size was chosen."""
    v = _finite(values)
    if v.size == 0:
        return "none"
    steps, counts = np.unique(v, return_counts=True)
    return " ".join(f"{s:g}:{c}" for s, c in zip(steps, counts))


def _curves(config, records):
    ref = _select(records, _ref_key(config))
    rows = []
    for method in CURVE_METHODS:
        for t, column in curve_columns(config, method):  # the config holds the rounds of every cell
            med, lo, hi = _quartiles(r[column] for r in ref)
            rows.append(dict(method=method, round=t, median=med, q25=lo, q75=hi, trials=len(ref)))
    return rows


def _controls(config, records):
    rows = []
    for key in cell_keys(config):
        recs = _select(records, key)
        ls = _median(r["ls_err"] for r in recs)
        for method in CONTROL_METHODS:
            med, lo, hi = _quartiles(r[_FINAL[method]] for r in recs)
            step_col = f"{method}_step"
            rows.append(dict(M=key[0], size_law=key[1], p_min=key[2], reference=key == _ref_key(config),
                             method=method, median=med, q25=lo, q75=hi, ratio_to_ls=med / ls if ls > 0 else np.nan,
                             steps_chosen=_choices(r[step_col] for r in recs) if recs and step_col in recs[0]
                             else "-", trials=len(recs)))
    return rows


def _contraction(config, records):
    """Per trial and local solver: the contraction, measured and predicted, and the rounds to the floor."""
    rows = []
    for r in records:
        failed = bool(r.get("error"))
        for s in SOLVERS:
            row = dict(M=r["M"], size_law=r["size_law"], p_min=float(r["p_min"]), trial=r["trial"], solver=s,
                       failed=failed, reference=_key(config, r["M"], r["size_law"], r["p_min"]) == _ref_key(config))
            cols = ("step", "window_start", "settle_round", "rate_window", "labels_right", "rate_measured",
                    "rate_exact",
                    "rate_linear", "rate_predicted", "C1_predicted", "fixed_point_err", "rounds_to_floor")
            for c in cols:
                row[c] = np.nan if failed else float(r[f"{s}_{c}"])
            row["p_min_data"] = np.nan if failed else float(r["p_min_data"])
            row["p_max_data"] = np.nan if failed else float(r["p_max_data"])
            row["nu"] = np.nan if failed else _nu(r)
            rate = row["rate_predicted"]
            row["rounds_predicted"] = (sxy_rounds_to_floor(rate, row["nu"]) if np.isfinite(rate) and 0 < rate < 1
                                       else np.nan)
            rows.append(row)
    return rows


def _recursion(r, solver, n_rounds, C2):
    """One trial's Phase-2 recursion from its Phase-1 output (theorem form, predicted C1)."""
    C1, p, nu, d0 = float(r[f"{solver}_C1_predicted"]), float(r["p_min_data"]), _nu(r), float(r["fmd_err"])
    if not (np.isfinite([C1, p, nu, d0, C2]).all() and 0 < C1 * p <= 1 and C2 > 0):
        return np.full(n_rounds + 1, np.nan)
    return sxy_phase2_recursion(d0, p, nu, n_rounds, C1=C1, C2=C2)


def _fixed_point(r, solver, C2):
    C1, p, nu = float(r[f"{solver}_C1_predicted"]), float(r["p_min_data"]), _nu(r)
    if not (np.isfinite([C1, p, nu, C2]).all() and C1 * p > 0 and C2 > 0):
        return np.nan
    return sxy_floor_term(nu, C2=C2) / (C1 * p)


def _floor_fit(config, records, solver):
    """C2 fitted on every cell but the reference (medians, log scale), its held-out residual there
    (measured floor / fitted fixed point) and the largest in-sample residual (max over the fit cells
    of the ratio or its inverse)."""
    fit_keys = [key for key in cell_keys(config) if key != _ref_key(config)]
    observed, model = [], []
    for key in fit_keys:
        recs = _select(records, key)
        observed.append(_median(r[f"{solver}_fixed_point_err"] for r in recs))
        model.append(_median(_fixed_point(r, solver, 1.0) for r in recs))
    C2 = fit_log_constant(observed, model) if fit_keys else np.nan
    ratios = _finite(np.array(observed) / (C2 * np.array(model))) if fit_keys else np.array([])
    in_sample = float(np.exp(np.abs(np.log(ratios)).max())) if ratios.size else np.nan
    ref = _select(records, _ref_key(config))
    held_obs = _median(r[f"{solver}_fixed_point_err"] for r in ref)
    held_fit = C2 * _median(_fixed_point(r, solver, 1.0) for r in ref)
    return C2, held_obs / held_fit if held_fit > 0 else np.nan, len(fit_keys), in_sample


def _theory(config, records):
    """Per Phase-2 round and solver: the median over trials of the recursion, unit and fitted C2."""
    ref = _select(records, _ref_key(config))
    rows = []
    for s in SOLVERS:
        C2, residual, n_fit, in_sample = _floor_fit(config, records, s)
        unit = np.array([_recursion(r, s, config.fx_rounds, 1.0) for r in ref]).reshape(len(ref), -1)
        fitted = np.array([_recursion(r, s, config.fx_rounds, C2) for r in ref]).reshape(len(ref), -1)
        unit_fp = _median(_fixed_point(r, s, 1.0) for r in ref)
        for t in range(config.fx_rounds + 1):
            rows.append(dict(solver=s, round=config.fmd_rounds + t,
                             unit=_median(unit[:, t]) if len(ref) else np.nan,
                             fitted=_median(fitted[:, t]) if len(ref) else np.nan,
                             C1=_median(r[f"{s}_C1_predicted"] for r in ref),
                             rate=_median(r[f"{s}_rate_predicted"] for r in ref),
                             unit_fixed_point=unit_fp, C2_fitted=C2, fit_cells=n_fit, heldout_ratio=residual,
                             fit_worst_ratio=in_sample,
                             measured_floor=_median(r[f"{s}_fixed_point_err"] for r in ref),
                             start=_median(r["fmd_err"] for r in ref),
                             ls_floor=_median(r["ls_err"] for r in ref),
                             cwls_floor=_median(r["cwls_err"] for r in ref)))
    return rows


def _verdict(ok):
    return "holds" if ok is True else ("fails" if ok is False else "not measured")


def _checks(config, records, controls, contraction, theory):
    """Every claim of the figures: measured value, reference value, tolerance, verdict."""
    rows = []

    def add(check, cell, measured, reference, tolerance, ok):
        rows.append(dict(check=check, cell=cell, measured=float(measured), reference=float(reference),
                         tolerance=tolerance, verdict=_verdict(None if not np.isfinite(measured) else bool(ok))))

    for key in cell_keys(config):
        at = {c["method"]: c for c in controls if (c["M"], c["size_law"], c["p_min"]) == key}
        cell = "reference" if key == _ref_key(config) else f"M={key[0]} {key[1]} p_min={key[2]:g}"
        ratio = at["cwls"]["ratio_to_ls"]
        add("IFCA's true-label fixed points: client-weighted LS / known-label LS (medians; 1 = weighting costs "
            "nothing)", cell, ratio, 1.0, f"+{CLOSE_TO_LS:.0%}", ratio <= 1 + CLOSE_TO_LS)
        for m in ("oracle_data", "ifca_data", "fedavg", "fedprox", "oracle", "ifca"):
            ratio = at[m]["ratio_to_ls"]
            add(f"{m}: median final / median known-label LS", cell, ratio, 1.0, f"+{CLOSE_TO_LS:.0%}",
                ratio <= 1 + CLOSE_TO_LS)
        ratio = at["oracle"]["median"] / at["cwls"]["median"]
        add("oracle: median final / median client-weighted LS (its true-label fixed point)", cell, ratio, 1.0,
            f"+{CLOSE_TO_LS:.0%}", ratio <= 1 + CLOSE_TO_LS)
        for s in SOLVERS:
            rows_s = [r for r in contraction if r["solver"] == s and not r["failed"]
                      and (r["M"], r["size_law"], r["p_min"]) == key]
            measured = [r for r in rows_s if np.isfinite(r["rate_measured"])]
            add(f"{s}: trials with a measured factor (>= {MIN_WINDOW} rounds after the labels settle)", cell,
                len(measured), len(rows_s), "all", len(measured) == len(rows_s))
            gap = _median((1 - r["rate_measured"]) / (1 - r["rate_predicted"]) for r in measured)
            add(f"{s}: measured 1 - rho / predicted C1 p_min (median over trials)", cell, gap, 1.0,
                f"±{GAP_TOLERANCE:.0%}", abs(gap - 1) <= GAP_TOLERANCE)
            below = sum(r["rate_measured"] <= r["rate_predicted"] + 1e-3 for r in measured)
            add(f"{s}: trials whose measured factor is at most the predicted worst factor (+0.001)", cell, below,
                len(measured), "all", below == len(measured) if measured else np.nan)
            diff = _finite(np.abs([r["rate_measured"] - r["rate_exact"] for r in measured]))
            add(f"{s}: largest |measured - exact factor of the settled map| (the measurement)", cell,
                diff.max() if diff.size else np.nan, 0.0, "0.01", diff.size and diff.max() <= 0.01)
    for s in SOLVERS:
        ratios = []
        for key in cell_keys(config):
            rows_s = [r for r in contraction if r["solver"] == s and not r["failed"]
                      and (r["M"], r["size_law"], r["p_min"]) == key]
            ratios.append(_median(r["rounds_to_floor"] / r["rounds_predicted"] for r in rows_s))
        ratios = _finite(ratios)
        spread = ratios.max() / ratios.min() if ratios.size >= 2 and ratios.min() > 0 else np.nan
        add(f"{s}: rounds to 2x floor / (rho^-1 log(1/nu)): max / min over cells of the median (Theta: a "
            "constant; reference = median of the cell medians)", "all cells", spread,
            float(np.median(ratios)) if ratios.size else np.nan, f"x{ROUNDS_SPREAD:g}", spread <= ROUNDS_SPREAD)
        th = [t for t in theory if t["solver"] == s][0]
        ratio = th["unit_fixed_point"] / th["measured_floor"]
        add(f"{s}: recursion fixed point with C2 = C3 = C4 = 1 / measured floor", "reference", ratio, 1.0,
            f"x{FLOOR_FACTOR:g}", 1 / FLOOR_FACTOR <= ratio <= FLOOR_FACTOR)
        add(f"{s}: measured floor / fixed point with C2 fitted on the {th['fit_cells']} other cells (held out)",
            "reference", th["heldout_ratio"], 1.0, f"x{FLOOR_FACTOR:g}",
            1 / FLOOR_FACTOR <= th["heldout_ratio"] <= FLOOR_FACTOR)
    return rows


def p_min_keys(config):
    """The cells of the p_min sweep (at ``M_ref`` and ``law_ref``), by increasing p_min, the reference among them."""
    ps = sorted(set(float(p) for p in config.p_mins) | {float(config.p_ref)})
    return [_key(config, config.M_ref, config.law_ref, p) for p in ps]


def held_out_p(config):
    """The p_min values held out of the factor's fit: the smallest and the largest of the sweep (with at least
    four values; otherwise none, and the fit uses them all)."""
    ps = [key[2] for key in p_min_keys(config)]
    return (ps[0], ps[-1]) if len(ps) >= 4 else ()


def _factor(config, contraction):
    """Per p_min cell and solver: the gap 1 - measured factor (median, quartiles), the step sizes used."""
    rows = []
    for s in SOLVERS:
        for key in p_min_keys(config):
            sel = [r for r in contraction if r["solver"] == s and not r["failed"]
                   and (r["M"], r["size_law"], r["p_min"]) == key]
            gap = _finite([1 - r["rate_measured"] for r in sel])
            med, lo, hi = _quartiles(gap)
            rows.append(dict(solver=s, p_min=key[2], trials=len(sel), measured=int(gap.size), gap_median=med,
                             gap_q25=lo, gap_q75=hi, gap_over_p=med / key[2],
                             p_min_data_median=_median(r["p_min_data"] for r in sel),
                             steps_chosen=_choices(r["step"] for r in sel),
                             held_out=key[2] in held_out_p(config)))
    return rows


def _factor_fit(config, contraction):
    """Per solver: the exponent of the median gap 1 - factor against p_min over the sweep's cells but the
    held-out ones (:func:`held_out_p`), its 95% bootstrap interval and verdict against the registered 1,
    and the held-out cells' log10 residuals, intervals and verdict (C1 is the fitted constant)."""
    rows = []
    held = held_out_p(config)
    rng = np.random.default_rng(DEFAULT_SEED + 1)
    predicted = float(PREDICTIONS[0].predict([dict(axis="p_min")])[0])
    for s in SOLVERS:
        xs, ys = [], []
        for key in p_min_keys(config):
            xs.append(key[2])
            ys.append(_finite([1 - r["rate_measured"] for r in contraction if r["solver"] == s and not r["failed"]
                               and (r["M"], r["size_law"], r["p_min"]) == key]))
        fit = fit_exponent(np.array(xs), ys, held_out=list(held), statistic="median", n_boot=N_BOOT, rng=rng)
        claim = f"{s}: 1 - (per-round factor) ~ C1 p_min^1"
        v = exponent_verdict(claim, predicted, fit)
        hv = held_out_verdict(claim + " on held-out p_min", fit)
        rows.append(dict(solver=s, predicted=predicted, fitted=fit.slope, low=fit.low, high=fit.high,
                         verdict=v.status, n_points=fit.n_points, C1_fitted=float(np.exp(fit.intercept)),
                         fit_p=" ".join(f"{x:g}" for x in fit.x),
                         held_out_p=" ".join(f"{h['x']:g}" for h in fit.held_out),
                         held_out_residuals=" ".join(f"{h['residual']:+.3f} [{h['residual_low']:+.3f}, "
                                                     f"{h['residual_high']:+.3f}]" for h in fit.held_out),
                         held_out_verdict=hv.status,
                         max_abs_residual=hv.numbers.get("max_abs_residual", float("nan"))))
    return rows


def _paired_interval(diffs, rng, n_boot=N_BOOT):
    """Median of paired differences and its percentile bootstrap interval (pairs resampled)."""
    d = _finite(diffs)
    if d.size == 0:
        return float("nan"), float("nan"), float("nan")
    boot = np.median(d[rng.integers(0, d.size, (n_boot, d.size))], axis=1)
    low, high = np.quantile(boot, [0.025, 0.975])
    return float(np.median(d)), float(low), float(high)


def _ablation(config, records):
    """Per cell (and all cells pooled): FedAvg's final error with data reuse and with sample splitting
    across rounds on the same draws, the paired test of their log ratio, and the clustering error rates."""
    rows = []
    rng = np.random.default_rng(DEFAULT_SEED + 2)
    groups = [(f"M={k[0]} {k[1]} p_min={k[2]:g}" if k != _ref_key(config) else "reference", _select(records, k))
              for k in cell_keys(config)]
    groups.append(("all cells", _ok(records)))
    for name, sel in groups:
        sel = [r for r in sel if r.get("split_final") is not None]
        pairs = np.array([(float(r["reuse_final"]), float(r["split_final"])) for r in sel]).reshape(-1, 2)
        ok = np.isfinite(pairs).all(axis=1) & (pairs > 0).all(axis=1)
        diff = np.log(pairs[ok, 1] / pairs[ok, 0])
        med, low, high = _paired_interval(diff, rng)
        p_value = float(wilcoxon(diff, alternative="greater").pvalue) if diff.size >= 6 and np.any(diff != 0) \
            else float("nan")
        row = dict(cell=name, pairs=int(ok.sum()), reuse_median=_median(pairs[ok, 0]),
                   split_median=_median(pairs[ok, 1]), log_ratio_median=med, log_ratio_low=low, log_ratio_high=high,
                   ratio_median=float(np.exp(med)), split_worse=int(np.sum(diff > 0)),
                   wilcoxon_p_greater=p_value,
                   scarce_clients=_median(r["scarce_clients"] for r in sel))
        for mode in ("reuse", "split"):
            row[f"{mode}_miscl_median"] = _median(r[f"{mode}_miscl"] for r in sel)
            row[f"{mode}_miscl_scarce_median"] = _median(r[f"{mode}_miscl_scarce"] for r in sel)
        row["split_steps"] = _choices(r["split_step"] for r in sel)
        row["split_diverged"] = int(sum(int(r["split_diverged"] or 0) for r in sel))
        rows.append(row)
    return rows


def _pairs(config, records):
    """Per trial that ran the ablation: its cell and FedAvg's final error and clustering error rates, with data
    reuse and with sample splitting across rounds (the pairs of the ablation's paired test)."""
    rows = []
    for r in _ok(records):
        if r.get("split_final") is None:
            continue
        key = _key(config, r["M"], r["size_law"], r["p_min"])
        rows.append(dict(M=r["M"], size_law=r["size_law"], p_min=float(r["p_min"]), trial=r["trial"],
                         reference=key == _ref_key(config), reuse_final=float(r["reuse_final"]),
                         split_final=float(r["split_final"]), reuse_miscl=float(r["reuse_miscl"]),
                         split_miscl=float(r["split_miscl"]),
                         reuse_miscl_scarce=_num(r["reuse_miscl_scarce"]), split_miscl_scarce=_num(r["split_miscl_scarce"]),
                         scarce_clients=float(r["scarce_clients"])))
    if not rows:  # write_table needs a row: one of nan (no trial ran the ablation)
        rows.append(dict(M=0, size_law="", p_min=float("nan"), trial=-1, reference=False, reuse_final=float("nan"),
                         split_final=float("nan"), reuse_miscl=float("nan"), split_miscl=float("nan"),
                         reuse_miscl_scarce=float("nan"), split_miscl_scarce=float("nan"),
                         scarce_clients=float("nan")))
    return rows


def _num(v):
    return float("nan") if v is None else float(v)


def summarise(config, records):
    """The figures' tables.

    Returns
    -------
    dict
        ``curves``: per curve method and checkpoint round, median, quartiles and trials at the
        reference cell.  ``controls``: per cell and method of :data:`CONTROL_METHODS`, the
        final error's median and quartiles, ``ratio_to_ls`` (median / median of the known-label
        least squares) and ``steps_chosen`` (``"step:count"``).  ``contraction``: per trial and
        local solver, the measured factor ``rate_measured``, the exact factor of the settled map
        ``rate_exact``, the predicted ``rate_predicted`` and ``C1_predicted``, the rounds to the
        floor ``rounds_to_floor`` against ``rounds_predicted`` = :math:`\\rho^{-1}\\log(1/\\nu)`
        (:math:`\\rho` = 1 - ``rate_predicted``, :math:`\\nu` with unit constants).  ``theory``:
        per Phase-2 round and solver at the reference cell, the median over trials of each
        trial's recursion from its Phase-1 output with the predicted :math:`C_1`, with unit
        :math:`C_2` (``unit``) and with :math:`C_2` fitted on the other cells (``fitted``,
        ``C2_fitted``, ``heldout_ratio`` = measured floor / fitted fixed point at the reference).
        ``checks``: each claim, measured, reference, tolerance, verdict.  ``factor``: per solver and
        p_min cell of the p_min sweep, the gap 1 - measured factor (median, quartiles) and the steps
        used.  ``factor_fit``: per solver, the exponent of the median gap against p_min fitted on the
        cells not held out (:func:`held_out_p`) with its 95% bootstrap interval and verdict against
        the registered 1 (:data:`PREDICTIONS`), the fitted C1, and the held-out cells' log10
        residuals with their verdict.  ``ablation``: per cell and pooled, FedAvg's final error with
        data reuse and with sample splitting across rounds on the same draws: the median log ratio
        (split / reuse) with its paired bootstrap interval, the one-sided Wilcoxon signed-rank
        p-value (split worse), and the clustering error rates (all clients; data-scarce ones).
        ``pairs``: the ablation's pairs, one row per trial.
    """
    controls, contraction, theory = _controls(config, records), _contraction(config, records), \
        _theory(config, records)
    return dict(curves=_curves(config, records), controls=controls, contraction=contraction, theory=theory,
                checks=_checks(config, records, controls, contraction, theory),
                factor=_factor(config, contraction), factor_fit=_factor_fit(config, contraction),
                ablation=_ablation(config, records), pairs=_pairs(config, records))
