"""The nu-terms study's tables: ``axes``, ``exponents``, ``holdout``, ``constants`` and ``region``
(see the package docstring), and the designs of its five sweeps, which both the grid and the
tables read.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

from mixreg.predictions import exponent_verdict
from mixreg.stats import SlopeFit
from mixreg.theory import (
    fit_log_constant,
    leave_group_out_constant,
    sxy_axis_exponent,
    sxy_bound_shape,
    sxy_constants_exponents,
)

from .trial import DESIGN_KEYS, SizeDesign, design_quantities

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "AXES", "AXIS_NAMES", "METHOD_KEYS", "C3_GRID", "C4_GRID",
           "JOINT_LEVEL", "VARIANTS", "NU_SWEEPS", "axis_designs", "design_key", "median_interval", "summarise"]

NAME = "two_phase_nu"
TABLES = ("axes", "exponents", "holdout", "constants", "region")  # <name>.csv; the figures are drawn from them alone
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

#: The constants' grid: ``C3`` on [0.01, 10] and ``C4`` on [0.01, 100], ten points a decade (1 on both).
C3_GRID = np.logspace(-2, 1, 31)
C4_GRID = np.logspace(-2, 2, 41)
#: Each sweep's interval in the joint test: Bonferroni over the five sweeps, so that the true
#: constants (if the bound's shape is right) pass all five at once with probability >= 95%.
JOINT_LEVEL = 1 - 0.05 / 5
#: The bound's shapes whose constants are scanned: ``nu / p_min`` (the study's exponents) and
#: the theorem's ``nu log(1/nu) / p_min`` (defined where every cell has ``nu < 1``).
VARIANTS = {"nu": "ν/p_min", "nu_log": "ν log(1/ν)/p_min"}
#: The sweeps that move nu (the p_min sweep holds it fixed: its prediction, -1, needs no constant).
NU_SWEEPS = ("tiny", "chi2", "M_fixed_n", "M_fixed_N")
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


class _ByDesign(dict):
    """The trials that did not fail, by their cell's :func:`design_key` (looked up once)."""

    def __init__(self, records):
        super().__init__()
        for r in records:
            if not r.get("error"):
                self.setdefault(tuple(r[k] for k in DESIGN_KEYS), []).append(r)


def _records_of(records, design):
    if isinstance(records, _ByDesign):
        return records.get(design_key(design), [])
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


def _exponents(config, records, rows, cache=None):
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
            # a log-slope on a linear axis for the tiny-client share (it starts at 0), else an exponent
            fit = _bootstrap(config, records, designs[axis], x, log_x, m, seed=[DEFAULT_SEED, a, j],
                             cache=cache).fit()
            claim = f"{m}'s final error along {axis}"
            table.append(dict(axis=axis, method=m, predicted=predicted, fitted=fit.slope, low=fit.low,
                              high=fit.high, verdict=_verdict(f"{claim}: slope of nu/p_min", predicted, fit),
                              predicted_log=predicted_log, ls_rate=ls_rate,
                              verdict_ls=_verdict(f"{claim}: known-label LS's slope", ls_rate, fit), log_x=log_x,
                              points=fit.n_points, trials=int(sum(_values(_records_of(records, design), _FINAL[m]).size
                                                                        for design in designs[axis]))))
    return table


class _Bootstrap:
    """The fitted log-slope of a method's median final error along a sweep and its stratified
    bootstrap replicates, drawn exactly as :func:`mixreg.stats.fit_slope` (and
    :func:`mixreg.predictions.fit_exponent`) draws them from the same generator (one
    ``rng.integers`` call per replicate and cell, in that order; the tests hold the two
    together), but with the medians and lines computed for all replicates at once; an interval at
    any level then comes from the same replicates (:meth:`fit`)."""

    def __init__(self, x, samples, log_x, n_boot, seed):
        rng = np.random.default_rng(seed)
        u = np.log(np.asarray(x, dtype=float)) if log_x else np.asarray(x, dtype=float)
        groups = [np.asarray(g, dtype=float)[np.isfinite(g)] for g in samples]
        index = [np.empty((n_boot, g.size), dtype=np.int64) for g in groups]
        for b in range(n_boot):
            for g, i in zip(groups, index):
                if g.size:
                    i[b] = rng.integers(0, g.size, g.size)
        medians = np.stack([np.median(g[i], axis=1) if g.size else np.full(n_boot, np.nan)
                            for g, i in zip(groups, index)], axis=1)  # (n_boot, G)
        point = np.array([np.median(g) if g.size else np.nan for g in groups])
        ok = np.isfinite(point) & (point > 0)
        self.n_points, self.n_boot = int(ok.sum()), n_boot
        if ok.sum() < 2:
            self.slope = self.intercept = np.nan
            self.boots = np.full(0, np.nan)
            return
        self.slope, self.intercept = (float(v) for v in np.polyfit(u[ok], np.log(point[ok]), 1))
        centred = u[ok] - u[ok].mean()
        boots = np.log(medians[:, ok]) @ centred / float(centred @ centred)
        self.boots = boots[np.isfinite(boots)]

    def fit(self, level=0.95):
        """:class:`mixreg.stats.SlopeFit` with the percentile interval at ``level``."""
        if self.boots.size and np.isfinite(self.slope):
            low, high = np.quantile(self.boots, [(1 - level) / 2, (1 + level) / 2])
        else:
            low = high = np.nan
        return SlopeFit(slope=self.slope, intercept=self.intercept, low=float(low), high=float(high), level=level,
                        n_points=self.n_points, n_boot=self.n_boot)


def _bootstrap(config, records, designs, x, log_x, method, *, seed, cache=None):
    """:class:`_Bootstrap` of ``method`` along a sweep of ``designs`` (drawn once per ``seed`` when
    given a ``cache`` dict)."""
    key = tuple(seed)
    if cache is not None and key in cache:
        return cache[key]
    samples = [_values(_records_of(records, design), _FINAL[method]) for design in designs]
    boot = _Bootstrap(x, samples, log_x, config.n_boot, seed)
    if cache is not None:
        cache[key] = boot
    return boot


def median_interval(values, level):
    """Distribution-free interval of a median: the order statistics ``[v_(r), v_(n+1-r)]`` with
    the largest ``r`` whose coverage ``1 - 2 P(B <= r - 1)``, ``B ~ Binomial(n, 1/2)``, is at
    least ``level``; ``(0, inf)`` when no ``r`` reaches it (too few values) or no value.

    Examples
    --------
    >>> median_interval(np.arange(1.0, 11.0), 0.95)  # 10 values: [v_(2), v_(9)], coverage 97.9%
    (2.0, 9.0)
    """
    v = np.sort(np.asarray(values, dtype=float))
    n = v.size
    if n == 0:
        return 0.0, float("inf")
    ok = np.flatnonzero(2 * binom.cdf(np.arange(n), n, 0.5) <= 1 - level)  # r - 1
    if ok.size == 0:
        return 0.0, float("inf")
    r = int(ok[-1]) + 1
    return float(v[r - 1]), float(v[n - r])


def _bounds_grid(sizes, p_min, config, variant):
    """The bound's shape at one cell for every ``(C3, C4)`` of the grid: shape (A, B); ``nan``
    where the variant is undefined (``nu >= 1`` with the log factor)."""
    from mixreg.theory._sxy_nu import _nu_grid  # the grid of nu itself (one cell)

    nu = _nu_grid(sizes, config.d, config.k, C3_GRID, C4_GRID)
    if variant == "nu":
        return nu / p_min, nu
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(nu < 1, nu * np.log(1.0 / np.minimum(nu, 1.0)), np.nan) / p_min, nu


def _extent(mask):
    """``(cells, C3_min, C3_max, C4_min, C4_max)`` of the grid pairs where ``mask`` holds."""
    i3, i4 = np.nonzero(mask)
    if i3.size == 0:
        return 0, np.nan, np.nan, np.nan, np.nan
    return (int(i3.size), float(C3_GRID[i3.min()]), float(C3_GRID[i3.max()]), float(C4_GRID[i4.min()]),
            float(C4_GRID[i4.max()]))


def _region_verdict(mask, defined):
    if not defined.any():
        return "not tested"
    if not mask.any():
        return "no constants fit"
    if mask[defined].all():
        return "every pair fits"
    return "region"


def _constants(config, records, rows, cache=None):
    """``constants`` (one row per variant and grid pair) and ``region`` (one row per method,
    variant and test): which ``(C3, C4)`` make the bound's exponents agree with the sweeps' fitted
    exponents at once (each sweep's interval at :data:`JOINT_LEVEL`), and whether one level
    constant puts the bound inside every cell's median interval (exact, Bonferroni over the
    cells)."""
    designs = axis_designs(config)
    methods = ("fedavg", "fedprox")
    sweeps, joint = {}, {}
    for a, (axis, _, _, _, log_x) in enumerate(AXES):
        sel = [r for r in rows if r["axis"] == axis]
        x = np.array([r["x"] for r in sel])
        sweeps[axis] = dict(x=x, log_x=bool(log_x), p=np.array([r["p_min"] for r in sel]),
                            sizes=[d.labels_and_sizes()[1] for d in designs[axis]])
        for j, m in enumerate(methods):
            # the replicates of exponents.csv's interval, at the joint level
            joint[axis, m] = _bootstrap(config, records, designs[axis], x, log_x, m, seed=[DEFAULT_SEED, a, j],
                                        cache=cache).fit(JOINT_LEVEL)
    cells = {}
    for axis in AXIS_NAMES:
        for row, design in zip([r for r in rows if r["axis"] == axis], designs[axis]):
            cells.setdefault(row["cell"], (row, design))
    cell_level = 1 - 0.05 / len(cells)
    medians = {m: [] for m in methods}
    intervals = {m: [] for m in methods}
    for row, design in cells.values():
        for m in methods:
            values = _values(_records_of(records, design), _FINAL[m])
            medians[m].append(float(np.median(values)) if values.size else np.nan)
            intervals[m].append(median_interval(values, cell_level))
    grid_rows, region_rows = [], []
    for variant in VARIANTS:
        predicted = {axis: sxy_constants_exponents(s["x"], s["sizes"], s["p"], config.d, config.k, C3_GRID, C4_GRID,
                                                   log_x=s["log_x"], log_factor=variant == "nu_log")
                     for axis, s in sweeps.items()}
        bounds, nus = zip(*(_bounds_grid(design.labels_and_sizes()[1], row["p_min"], config, variant)
                            for row, design in cells.values()))
        bounds, nus = np.stack(bounds, axis=-1), np.stack(nus, axis=-1)  # (A, B, J)
        defined = np.all(np.isfinite(bounds), axis=-1)
        ok, level_ok, C_min = {}, {}, {}
        for m in methods:
            for axis in AXIS_NAMES:
                fit = joint[axis, m]
                ok[axis, m] = defined & (fit.low <= predicted[axis]) & (predicted[axis] <= fit.high)
            low = np.array([i[0] for i in intervals[m]])
            high = np.array([i[1] for i in intervals[m]])
            with np.errstate(invalid="ignore", divide="ignore"):
                level_ok[m] = defined & (np.max(low / bounds, axis=-1) <= np.min(high / bounds, axis=-1))
                C_min[m] = np.max(np.array(medians[m]) / bounds, axis=-1)
        for i3, c3 in enumerate(C3_GRID):
            for i4, c4 in enumerate(C4_GRID):
                row = dict(variant=variant, C3=float(c3), C4=float(c4), defined=bool(defined[i3, i4]),
                           nu_min=float(nus[i3, i4].min()), nu_max=float(nus[i3, i4].max()))
                for axis in AXIS_NAMES:
                    row[f"predicted_{axis}"] = round(float(predicted[axis][i3, i4]), 5)
                for m in methods:
                    row[f"{m}_consistent"] = "+".join(a for a in AXIS_NAMES if ok[a, m][i3, i4])
                    row[f"{m}_level"] = bool(level_ok[m][i3, i4])
                    row[f"{m}_C_min"] = float(f"{C_min[m][i3, i4]:.5g}")
                grid_rows.append(row)
        unit = (int(np.argmin(np.abs(np.log(C3_GRID)))), int(np.argmin(np.abs(np.log(C4_GRID)))))
        for m in methods:
            tests = [(axis, (axis,), ok[axis, m]) for axis in AXIS_NAMES]
            tests.append(("nu sweeps", NU_SWEEPS, np.logical_and.reduce([ok[a, m] for a in NU_SWEEPS])))
            tests.append(("all sweeps", AXIS_NAMES, np.logical_and.reduce([ok[a, m] for a in AXIS_NAMES])))
            for test, members, mask in tests:
                n, c3_lo, c3_hi, c4_lo, c4_hi = _extent(mask)
                single = joint[test, m] if test in AXIS_NAMES else None
                spread = [predicted[a][defined] for a in members]
                region_rows.append(dict(
                    method=m, variant=variant, test=test, sweeps="+".join(members), level=JOINT_LEVEL,
                    low=single.low if single else np.nan, high=single.high if single else np.nan,
                    predicted_min=float(min(s.min() for s in spread)) if defined.any() else np.nan,
                    predicted_max=float(max(s.max() for s in spread)) if defined.any() else np.nan,
                    constant_free=bool(defined.any() and all(np.ptp(s) < 1e-9 for s in spread)),
                    pairs=n, of=int(defined.sum()), C3_min=c3_lo, C3_max=c3_hi, C4_min=c4_lo, C4_max=c4_hi,
                    unit_constants=bool(mask[unit]), verdict=_region_verdict(mask, defined)))
            n, c3_lo, c3_hi, c4_lo, c4_hi = _extent(level_ok[m])
            region_rows.append(dict(
                method=m, variant=variant, test="one level", sweeps="+".join(AXIS_NAMES), level=cell_level,
                low=np.nan, high=np.nan, predicted_min=np.nan, predicted_max=np.nan, constant_free=False, pairs=n,
                of=int(defined.sum()), C3_min=c3_lo, C3_max=c3_hi, C4_min=c4_lo, C4_max=c4_hi,
                unit_constants=bool(level_ok[m][unit]), verdict=_region_verdict(level_ok[m], defined)))
    return grid_rows, region_rows


def summarise(config, records):
    """The figures' tables (see the module docstring): ``axes``, ``exponents``, ``holdout``,
    ``constants``, ``region``."""
    records = _ByDesign(records)
    cache = {}  # the bootstrap replicates of each sweep and method, for both levels
    rows = _axis_rows(config, records)
    holdout = _holdout(rows)
    exponents = _exponents(config, records, rows, cache)
    constants, region = _constants(config, records, rows, cache)
    return dict(axes=rows, exponents=exponents, holdout=holdout, constants=constants, region=region)
