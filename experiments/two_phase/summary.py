"""two_phase's tables: the curves at the reference cell, the controls, the measured contraction,
the theorem's recursion and the checks of every claim the figures make."""

from __future__ import annotations

import numpy as np

from mixreg.theory import fit_log_constant, sxy_floor_term, sxy_phase2_recursion, sxy_rounds_to_floor

from .trial import CURVE_METHODS, MIN_WINDOW, SOLVERS, curve_columns

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "CONTROL_METHODS", "CLOSE_TO_LS", "GAP_TOLERANCE", "ROUNDS_SPREAD",
           "FLOOR_FACTOR", "cell_keys", "summarise"]

NAME = "two_phase"
TABLES = ("curves", "controls", "contraction", "theory", "checks")  # <name>.csv; figures from them alone
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
        ``checks``: each claim, measured, reference, tolerance, verdict.
    """
    controls, contraction, theory = _controls(config, records), _contraction(config, records), \
        _theory(config, records)
    return dict(curves=_curves(config, records), controls=controls, contraction=contraction, theory=theory,
                checks=_checks(config, records, controls, contraction, theory))
