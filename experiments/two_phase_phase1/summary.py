"""two_phase_phase1's tables: Phase 1's error against n_A and d (part a), the clients it needs
against d and p_min (part b), and the fitted exponents against the theorem's."""

from __future__ import annotations

import numpy as np

from mixreg.predictions import Constant, Prediction, exponent_verdict, fit_exponent
from mixreg.stats import fit_clients_needed, wilson_interval

from .trial import c_label, clients_for

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "PREDICTIONS", "cell_keys", "summarise"]

NAME = "two_phase_phase1"
TABLES = ("errors", "exponents", "needed", "rates")  # <name>.csv; the figures are drawn from them alone
DEFAULT_SEED = 20220615  # any fixed integer would do


def _exponent_along(cell, **exponents):
    """The predicted exponent along the cell's axis: the constant named after it."""
    return exponents[cell["axis"]]


_THEOREM = "Su, Xu and Yang, Phase-1 theorem: d(theta_hat, theta*) <= eps in O(1) rounds once M >= p_min^-2 Omega~(d)"

#: The exponents the Phase-1 theorem predicts (at a cell ``{"axis": ...}``), fixed before the runs and
#: registered in the manifest before the first trial: Phase 1's error does not depend on ``d`` at
#: ``M = c d / p_min^2`` (part a); the clients needed grow as ``d / p_min^2`` (part b).
PREDICTIONS = (
    Prediction("phase1_error_exponent", _exponent_along, "Phase 1's error ~ d^0 at M = c d / p_min^2",
               constants=dict(d=Constant(0.0, _THEOREM)), fields=("axis",)),
    Prediction("clients_needed_exponent", _exponent_along, "clients needed M ~ d^1 p_min^-2",
               constants=dict(d=Constant(1.0, _THEOREM), p_min=Constant(-2.0, _THEOREM)), fields=("axis",)),
)


def _predicted(prediction, axis):
    return float(prediction.predict([dict(axis=axis)])[0])


def cell_keys(config):
    """``(d, p_min, n_A, cs, anchor_mode)`` of every cell: part (a), then part (b), no duplicates."""
    keys = []
    for mode in config.anchor_modes:
        keys += [(config.d_ref, config.p_ref, n_A, (config.c_ref,), mode) for n_A in config.nA_grid]
        keys += [(d, config.p_ref, config.nA_ref, (config.c_ref,), mode) for d in config.d_grid]
    keys += [(d, p, config.need_nA, tuple(config.need_cs), config.need_anchor_mode)
             for d in config.need_ds for p in config.need_p_mins]
    return tuple(dict.fromkeys(keys))



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


def _exponents_and_needed(config, records):
    rng = np.random.default_rng(DEFAULT_SEED)  # the bootstrap's own stream: the tables are reproducible
    exponents, needed = [], []
    tag = c_label(config.c_ref)
    for mode in config.anchor_modes:
        ds = np.array(config.d_grid, dtype=float)
        sels = [_select(records, d, config.p_ref, config.nA_ref, (config.c_ref,), mode) for d in config.d_grid]
        regime = f"{mode} anchors, n_A = {config.nA_ref}, M = {config.c_ref:g} d / p_min^2, p_min = {config.p_ref:.3g}"
        phase1 = _predicted(PREDICTIONS[0], "d")
        for column, what, predicted in (("fmd_err", "Phase-1 error d(theta_hat, theta*)", phase1),
                                        ("ls_err", "anchor least squares, same step 7 (no claim)", None)):
            col = f"{column}_{tag}" if column == "fmd_err" else column
            fit = fit_exponent(ds, [_values(s, col) for s in sels], statistic="median", n_boot=config.n_boot, rng=rng)
            verdict = "reference" if predicted is None else exponent_verdict(what, predicted, fit).status
            exponents.append(dict(
                axis="d", setting=f"{what}; {regime}", predicted=predicted, fitted=fit.slope, low=fit.low,
                high=fit.high, verdict=verdict, n_points=fit.n_points,
                note="log-log slope of the median over trials; bootstrap over trials"))
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
        for axis in ("d", "p_min"):
            fit, predicted = fits[axis], _predicted(PREDICTIONS[1], axis)
            setting = (f"clients M needed for d(theta_hat, theta*) < Delta/{q} in half the trials; "
                       f"{config.need_anchor_mode} anchors, n_A = {config.need_nA}")
            exponents.append(dict(
                axis=axis, setting=setting, predicted=predicted, fitted=fit.slope, low=fit.low, high=fit.high,
                verdict=exponent_verdict(f"{setting} along {axis}", predicted, fit).status,
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
        bootstrap interval and verdict (:func:`mixreg.predictions.exponent_verdict`:
        ``consistent``: the prediction lies in the 95% interval, ``contradicts``: it does not,
        ``not tested``: no fit).  ``needed``: per target and cell, the smallest grid ``M`` with
        success in half the trials, the log-interpolated crossing and whether it lies inside the
        grid.  ``rates``: per cell and grid ``M``,
        the success rates (Wilson intervals) and the error quartiles.
    """
    exponents, needed = _exponents_and_needed(config, records)
    return dict(errors=_errors(config, records), exponents=exponents, needed=needed, rates=_rates(config, records))
