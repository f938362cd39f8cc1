"""The nu-terms study's tables: ``axes``, ``exponents``, ``holdout`` (see the package docstring), and
the designs of its five sweeps, which both the grid and the tables read.
"""

from __future__ import annotations

import numpy as np

from mixreg.predictions import exponent_verdict, fit_exponent
from mixreg.stats import fit_slope
from mixreg.theory import fit_log_constant, leave_group_out_constant, sxy_axis_exponent, sxy_bound_shape

from .trial import DESIGN_KEYS, SizeDesign, design_quantities

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "AXES", "AXIS_NAMES", "METHOD_KEYS", "axis_designs", "design_key",
           "summarise"]

NAME = "two_phase_nu"
TABLES = ("axes", "exponents", "holdout")  # <name>.csv; the figure is drawn from them alone
DEFAULT_SEED = 20220614  # the paper's arXiv submission month; any fixed integer would do

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


def design_key(design):
    """The design's values of :data:`DESIGN_KEYS`, as a tuple (a cell's identity in the tables)."""
    return tuple(design.to_cell()[key] for key in DESIGN_KEYS)


def _records_of(records, design):
    key = design_key(design)
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
            row = dict(axis=axis, cell=index.setdefault(design_key(design), len(index)), x=_x(axis, design, q),
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


def _verdict(claim, predicted, fit):
    """:func:`mixreg.predictions.exponent_verdict`'s word; ``"not tested"`` without a predicted
    slope (fewer than two distinct ``x``)."""
    return exponent_verdict(claim, predicted, fit).status if np.isfinite(predicted) else "not tested"


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
            if log_x:
                fit = fit_exponent(x, samples, statistic="median", n_boot=config.n_boot, rng=rng)
            else:  # the tiny-client share starts at 0: a log-slope on a linear axis, not an exponent
                fit = fit_slope(x, samples, log_x=False, statistic="median", n_boot=config.n_boot, rng=rng)
            claim = f"{m}'s final error along {axis}"
            table.append(dict(axis=axis, method=m, predicted=predicted, fitted=fit.slope, low=fit.low,
                              high=fit.high, verdict=_verdict(f"{claim}: slope of nu/p_min", predicted, fit),
                              predicted_log=predicted_log, ls_rate=ls_rate,
                              verdict_ls=_verdict(f"{claim}: known-label LS's slope", ls_rate, fit), log_x=log_x,
                              points=fit.n_points, trials=int(sum(s.size for s in samples))))
    return table


def summarise(config, records):
    """The figure's tables (see the module docstring): ``axes``, ``exponents``, ``holdout``."""
    rows = _axis_rows(config, records)
    holdout = _holdout(rows)
    return dict(axes=rows, exponents=_exponents(config, records, rows), holdout=holdout)
