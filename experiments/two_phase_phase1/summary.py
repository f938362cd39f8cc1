"""two_phase_phase1's tables: Phase 1's error against n_A and d (part a), the clients it needs
against d and p_min (part b), and the fitted exponents against the theorem's."""

from __future__ import annotations

import numpy as np

from mixreg.predictions import Constant, Prediction, exponent_verdict, fit_exponent, held_out_verdict
from mixreg.stats import bootstrap_mean_interval, fit_clients_needed, wilson_interval

from .trial import c_label, clients_for

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "PREDICTIONS", "CENSORED_FACTOR", "ROUND_OFF", "cell_keys", "rates_keys",
           "rounds_needed", "nA_needed", "summarise"]

NAME = "two_phase_phase1"
TABLES = ("errors", "exponents", "needed", "rates", "part_c", "nA_success", "exponents_c")  # <name>.csv; the
# figures are drawn from them alone
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
    Prediction("phase1_rounds_exponent", _exponent_along,
               "rounds to reach Delta/q ~ d^0 k^0 p_min^0 at M = c d / p_min^2 (O(1) rounds)",
               constants=dict(d=Constant(0.0, _THEOREM), k=Constant(0.0, _THEOREM),
                              p_min=Constant(0.0, _THEOREM)), fields=("axis",)),
    Prediction("phase1_nA_exponent", _exponent_along,
               "anchor size n_A needed for Delta/q ~ k^1 d^0 p_min^0 (n_A = O~(k), independent of d; the "
               "theorem's n_A condition holds no p_min)",
               constants=dict(d=Constant(0.0, _THEOREM), k=Constant(1.0, _THEOREM + "; n_A = Omega~(k): "
                                                                                  "exponent 1 up to log factors"),
                              p_min=Constant(0.0, _THEOREM)), fields=("axis",)),
)

#: A trial that does not reach the target at any grid ``n_A`` counts as needing
#: ``CENSORED_FACTOR * max(n_A grid)``: above the grid, so the median over trials is exact while
#: fewer than half the trials are censored (the table counts them).
CENSORED_FACTOR = 2.0

#: The only tolerance of part (c)'s exponent verdicts: float round-off.  Equal medians on the n_A grid give
#: a slope and interval of about 1e-16, not exactly 0; no statistical widening.
ROUND_OFF = 1e-9


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



def rates_keys(config):
    """``(d, k, p_min)`` of every part-(c) cell: the d, k and p_min sweeps through the reference, no duplicates."""
    d0, k0, p0 = config.rates_d_ref, config.rates_k_ref, float(config.rates_p_ref)
    keys = [(int(d), k0, p0) for d in config.rates_ds] + [(d0, int(k), p0) for k in config.rates_ks]
    keys += [(d0, k0, float(p)) for p in config.rates_p_mins]
    return tuple(dict.fromkeys(keys))


def _ok(records):
    """Successful records of parts (a) and (b)."""
    return [r for r in records if not r.get("error") and r.get("part", "ab") == "ab"]


def _ok_c(records):
    """Successful records of part (c)."""
    return [r for r in records if not r.get("error") and r.get("part") == "c"]


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


def rounds_needed(record, T, q):
    """Rounds from which the run with the largest ``n_A`` stays below ``Delta/q`` (``nan``: never)."""
    from .trial import stays_below_from
    curve = [_num(record.get(f"curve_t{t:02d}")) for t in range(T + 1)]
    return stays_below_from(curve, _num(record["separation_realised"]) / q)


def nA_needed(record, grid, q):
    """The smallest grid ``n_A`` from which every larger grid ``n_A`` reaches ``Delta/q`` too
    (``CENSORED_FACTOR * max(grid)`` if the largest does not)."""
    delta = _num(record["separation_realised"])
    ok = [np.isfinite(_num(record.get(f"err_nA{n}"))) and _num(record.get(f"err_nA{n}")) * q < delta for n in grid]
    if not ok[-1]:
        return CENSORED_FACTOR * grid[-1]
    j = len(ok) - 1
    while j > 0 and ok[j - 1]:
        j -= 1
    return float(grid[j])


def _select_c(records, d, k, p):
    return [r for r in _ok_c(records) if r["d"] == d and r["k"] == k and float(r["p_min"]) == float(p)]


def _axis_values(config, axis):
    return {"d": config.rates_ds, "k": config.rates_ks, "p_min": config.rates_p_mins}[axis]


def _axis_key(config, axis, value):
    d, k, p = config.rates_d_ref, config.rates_k_ref, float(config.rates_p_ref)
    return {"d": (int(value), k, p), "k": (d, int(value), p), "p_min": (d, k, float(value))}[axis]


def _part_c(config, records):
    """Part (c): per cell the rounds needed and the n_A needed; per cell and n_A the success rate."""
    grid = tuple(int(n) for n in config.rates_nA_grid)
    q, T = config.rates_divisor, config.fmd_rounds
    cells, success = [], []
    rng = np.random.default_rng(DEFAULT_SEED + 2)  # the rounds' bootstrap intervals
    for d, k, p in rates_keys(config):
        sel = _select_c(records, d, k, p)
        rounds = np.array([rounds_needed(r, T, q) for r in sel])
        needed = np.array([nA_needed(r, grid, q) for r in sel])
        finite = rounds[np.isfinite(rounds)]
        _, r_low, r_high = bootstrap_mean_interval(finite, rng, config.n_boot)
        row = dict(d=d, k=k, p_min=p, M=clients_for(config.rates_c, d, p), target_divisor=q, trials=len(sel),
                   rounds_mean=float(finite.mean()) if finite.size else float("nan"),
                   rounds_mean_low=r_low, rounds_mean_high=r_high,
                   rounds_median=_quartiles(finite)[0], rounds_max=float(finite.max()) if finite.size else float("nan"),
                   rounds_never=int(np.sum(~np.isfinite(rounds))),
                   nA_needed_median=_quartiles(needed)[0], nA_needed_q25=_quartiles(needed)[1],
                   nA_needed_q75=_quartiles(needed)[2], nA_censored=int(np.sum(needed > grid[-1])),
                   nA_needed_over_k=_quartiles(needed)[0] / k)
        cells.append(row)
        for n in grid:
            err = _values(sel, f"err_nA{n}")
            ok = np.where(np.isfinite(err), err * q < _values(sel, "separation_realised"), False)
            low, high = wilson_interval(int(ok.sum()), len(sel))
            med, lo, hi = _quartiles(err)
            success.append(dict(d=d, k=k, p_min=p, n_A=n, nA_over_k=n / k, trials=len(sel),
                                success=float(ok.mean()) if sel else float("nan"), success_low=float(low),
                                success_high=float(high), err_median=med, err_q25=lo, err_q75=hi,
                                diverged_trials=int(np.sum(_values(sel, f"diverged_nA{n}") > 0))))
    return cells, success


def _exponents_c(config, records, rng):
    """Part (c)'s exponents: rounds (mean over trials reaching the target) and n_A needed (median) against
    d, k and p_min, each fitted on the sweep's cells (verdict against the registered exponent) and
    refitted without its largest value, held out (residual and its verdict).  A cell where half the
    trials or more never reach the target (rounds) or reach it only above the n_A grid (n_A) has no
    determined statistic and is left out (``left_out``: which, and how many trials); with fewer than
    two cells left the exponent is not tested, with fewer than three there is no held-out cell."""
    grid = tuple(int(n) for n in config.rates_nA_grid)
    q, T = config.rates_divisor, config.fmd_rounds
    rows = []
    for quantity, prediction, statistic in (("rounds", PREDICTIONS[2], "mean"), ("n_A", PREDICTIONS[3], "median")):
        for axis in ("d", "k", "p_min"):
            all_xs = np.array(_axis_values(config, axis), dtype=float)
            xs, ys, dropped = [], [], []
            for x in all_xs:
                sel = _select_c(records, *_axis_key(config, axis, x))
                y = np.array([rounds_needed(r, T, q) if quantity == "rounds" else nA_needed(r, grid, q)
                              for r in sel], dtype=float)
                # a trial that never reaches the target (rounds: nan) or only above the grid (n_A: censored)
                # leaves the cell's statistic undetermined once it is half the cell or more: left out
                censored = ~np.isfinite(y) if quantity == "rounds" else y > grid[-1]
                if y.size == 0 or 2 * censored.sum() >= y.size:
                    dropped.append(f"{x:g} ({int(censored.sum())} of {y.size})")
                    continue
                xs.append(x)
                ys.append(y)
            xs = np.array(xs, dtype=float)
            predicted = _predicted(prediction, axis)
            what = ("rounds from which Phase 1 stays below Delta/%d (mean over the trials that do)" % q
                    if quantity == "rounds" else
                    "n_A needed for Delta/%d (median over trials; smallest grid n_A from which all larger succeed)" % q)
            row = dict(quantity=quantity, axis=axis, setting=what, predicted=predicted, fitted=float("nan"),
                       low=float("nan"), high=float("nan"), verdict="not tested", n_points=int(xs.size),
                       statistic=statistic, x=" ".join(f"{v:g}" for v in xs), observed="",
                       left_out="; ".join(dropped), heldout_x=float("nan"), heldout_slope=float("nan"),
                       heldout_observed=float("nan"), heldout_fitted=float("nan"), heldout_residual=float("nan"),
                       heldout_low=float("nan"), heldout_high=float("nan"), heldout_verdict="not tested")
            if xs.size >= 2:
                fit = fit_exponent(xs, ys, statistic=statistic, n_boot=config.n_boot, rng=rng)
                verdict = exponent_verdict(f"{what} against {axis}", predicted, fit, tolerance=ROUND_OFF)
                row.update(fitted=fit.slope, low=fit.low, high=fit.high, verdict=verdict.status, n_points=fit.n_points,
                           observed=" ".join(f"{v:.4g}" for v in fit.observed))
            if xs.size >= 3:
                held = fit_exponent(xs, ys, held_out=[xs[-1]], statistic=statistic, n_boot=config.n_boot, rng=rng)
                hv = held_out_verdict(f"{what} against {axis}: line fitted without {axis} = {xs[-1]:g}", held)
                h = held.held_out[0]
                row.update(heldout_x=h["x"], heldout_slope=held.slope, heldout_observed=h["observed"],
                           heldout_fitted=h["fitted"], heldout_residual=h["residual"], heldout_low=h["residual_low"],
                           heldout_high=h["residual_high"], heldout_verdict=hv.status)
            rows.append(row)
    return rows


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
        ``part_c``: per (d, k, p_min) cell, the rounds from which Phase 1 stays below
        ``Delta/rates_divisor`` (mean, median, max over the trials that get there; ``rounds_never``
        the others) and the ``n_A`` needed (:func:`nA_needed`: quartiles, censored count).
        ``nA_success``: per cell and grid ``n_A``, the success rate (Wilson interval) and the error
        quartiles.  ``exponents_c``: the exponents of both against d, k and p_min, registered
        (:data:`PREDICTIONS`: rounds 0, 0, 0; n_A 0, +1, 0), fitted on each sweep's cells with their
        95% bootstrap intervals and verdicts, and refitted without the sweep's largest value, whose
        held-out log10 residual and interval are the ``heldout_*`` columns.
    """
    exponents, needed = _exponents_and_needed(config, records)
    part_c, nA_success = _part_c(config, records)
    exponents_c = _exponents_c(config, records, np.random.default_rng(DEFAULT_SEED + 1))
    return dict(errors=_errors(config, records), exponents=exponents, needed=needed, rates=_rates(config, records),
                part_c=part_c, nA_success=nA_success, exponents_c=exponents_c)
