"""Small statistics on tidy tables of trial records (lists of dicts, or pandas DataFrames).

pandas is optional (the ``frames`` extra): it is imported only when a DataFrame is asked for, and
a DataFrame can only be passed in where pandas is installed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import importlib
import math
import sys

import numpy as np
from scipy.stats import binom, chi2, norm

from .validation import check_int, check_real

if TYPE_CHECKING:  # the frames extra: imported only when a DataFrame is asked for
    import pandas

__all__ = ["wilson_interval", "group_rates", "SlopeFit", "fit_slope", "slope_verdict", "finite_mean",
           "bootstrap_mean_interval", "loglog_slope", "crossing", "fit_clients_needed", "PairedTest",
           "mcnemar_exact", "cochran_q"]


def wilson_interval(successes: int | np.ndarray, trials: int | np.ndarray,
                    level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion.

    Parameters
    ----------
    successes, trials : int or array of int
    level : float in (0, 1)

    Returns
    -------
    low, high : ndarray
        ``nan`` where ``trials == 0``.
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    if np.any(s < 0) or np.any(s > n):
        raise ValueError("successes must lie in [0, trials]")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    z = norm.ppf(0.5 + level / 2.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s / n
        denom = 1.0 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


@overload
def group_rates(records: Iterable[Mapping[str, Any]], keys: Sequence[str], flags: Sequence[str], *,
                mean_of: Sequence[str] = (), level: float = 0.95) -> list[dict[str, Any]]: ...
@overload
def group_rates(records: pandas.DataFrame, keys: Sequence[str], flags: Sequence[str], *,
                mean_of: Sequence[str] = (), level: float = 0.95) -> pandas.DataFrame: ...
def group_rates(records, keys, flags, *, mean_of=(), level=0.95):
    """Success rates per group of records, with Wilson intervals.

    Parameters
    ----------
    records : list of dict or pandas.DataFrame
        Tidy per-trial records, one dict or one row per trial (the ``records`` of
        :func:`mixreg.montecarlo.reader.read_results`, or its :meth:`~mixreg.montecarlo.reader.Results.frame`).
        Records with a non-empty ``"error"`` field are excluded (a trial that raised is not a
        failure of the algorithm, and never a success); an empty, ``None`` or ``nan`` error is
        no error.
    keys : sequence of str
        Grouping columns; groups come out sorted by these.
    flags : sequence of str
        Boolean columns; for each, ``<flag>_rate``, ``<flag>_low`` and ``<flag>_high`` (Wilson
        interval at ``level``) are returned.
    mean_of : sequence of str
        Numeric columns to average per group (``nan`` ignored) as ``<col>_mean``.
    level : float in (0, 1), default 0.95
        Level of the Wilson intervals (:func:`wilson_interval`).

    Returns
    -------
    list of dict or pandas.DataFrame
        One row per group, with the columns ``keys``, ``trials`` (the records that did not
        fail), then the rates of each flag and the means, in that order.  A list of dicts for a
        list (or any iterable of dicts); a ``DataFrame`` with these columns for a ``DataFrame``
        (a pandas table in, a pandas table out: the same rows, with a ``RangeIndex``; a column
        of one type has its dtype: ``int64``, ``float64``, ``bool``, a tuple column is
        ``object``).  Either table can be drawn with :func:`mixreg.plotting.success_plot`,
        which reads both.

    Raises
    ------
    TypeError
        If ``records`` is neither a DataFrame nor a sequence of dicts.
    ValueError
        If a record that did not fail lacks a column of ``keys``, ``flags`` or ``mean_of`` (the
        message names the record, or for a DataFrame the column, and the columns there are).

    See Also
    --------
    mixreg.montecarlo.reader.Results.frame : The records of a results directory as a DataFrame.
    mixreg.plotting.success_plot : Success probability with Wilson bands, from a list or a DataFrame.

    Examples
    --------
    >>> records = [{"r": 1.0, "ok": True, "err": 0.1, "error": ""},
    ...            {"r": 1.0, "ok": False, "err": 0.3, "error": ""},
    ...            {"r": 2.0, "ok": True, "err": 0.2, "error": ""},
    ...            {"r": 2.0, "ok": None, "err": None, "error": "FloatingPointError: diverged"}]
    >>> rows = group_rates(records, ["r"], ["ok"], mean_of=["err"])
    >>> [(row["r"], row["trials"], row["ok_rate"], round(row["err_mean"], 3)) for row in rows]
    [(1.0, 2, 0.5, 0.2), (2.0, 1, 1.0, 0.2)]
    >>> round(rows[0]["ok_low"], 3), round(rows[0]["ok_high"], 3)
    (0.095, 0.905)
    """
    frame = _is_frame(records)
    if frame:
        missing = [c for c in dict.fromkeys((*keys, *flags, *mean_of)) if c not in records.columns]
        if missing:
            raise ValueError(f"the DataFrame has no column {', '.join(map(repr, missing))} (named in keys, flags "
                             f"or mean_of); it has {list(records.columns)}")
        used = list(dict.fromkeys((*keys, *flags, *mean_of, *(["error"] if "error" in records.columns else []))))
        records = records[used].to_dict("records")  # Python scalars, None where pandas.NA
    try:
        records = list(records)
    except TypeError:
        raise TypeError(f"records must be a list of dicts or a pandas DataFrame, got "
                        f"{type(records).__name__}") from None
    columns = (*keys, *flags, *mean_of)
    groups = {}
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise TypeError(f"records must be a list of dicts, got records[{i}] = {rec!r} ({type(rec).__name__})")
        if _failed(rec.get("error")):
            continue
        missing = [c for c in columns if c not in rec]
        if missing:
            raise ValueError(f"records[{i}] has no column {', '.join(map(repr, missing))} "
                             f"(named in keys, flags or mean_of); it has {sorted(rec)}")
        groups.setdefault(tuple(rec[k] for k in keys), []).append(rec)
    out = []
    for key in sorted(groups):
        rows = groups[key]
        row = dict(zip(keys, key))
        row["trials"] = len(rows)
        for f in flags:
            s = sum(bool(r[f]) for r in rows)
            lo, hi = wilson_interval(s, len(rows), level)
            row[f + "_rate"] = s / len(rows)
            row[f + "_low"] = float(lo)
            row[f + "_high"] = float(hi)
        for c in mean_of:
            vals = np.array([float(r[c]) for r in rows])
            row[c + "_mean"] = float(np.nanmean(vals)) if np.isfinite(vals).any() else float("nan")
        out.append(row)
    if not frame:
        return out
    names = [*keys, "trials", *(f + end for f in flags for end in ("_rate", "_low", "_high")),
             *(c + "_mean" for c in mean_of)]
    return _frame(names, out, needed_by="group_rates on a DataFrame")


def _failed(error):
    """Whether a record's ``error`` field says its trial raised: a non-empty value that is not ``nan``
    (a DataFrame read from CSV, or with pandas' string dtype, holds ``nan`` where there is none)."""
    if isinstance(error, float) and math.isnan(error):
        return False
    return bool(error)


def _is_frame(table):
    """Whether ``table`` is a pandas DataFrame, without importing pandas (a DataFrame exists only once
    pandas is imported)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and isinstance(table, getattr(pandas, "DataFrame", ()))


def _import_extra(module, needed_by):
    """Import ``module`` of the ``frames`` extra (pandas or xarray), or raise a one-line ImportError
    saying what needs it and how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f'{needed_by} needs {module}: pip install "mixreg[frames]"') from None


def _frame(columns, rows, *, needed_by):
    """A pandas DataFrame of ``rows`` (dicts, ``None`` where a value is missing) with ``columns`` in order,
    each column of the dtype its values' one type gives, so that every value reads back with the type
    it has in ``rows``.

    bool, int (that fit int64) and float columns are ``bool``, ``int64`` and ``float64``; with a
    missing value, pandas' nullable ``boolean`` and ``Int64`` (``pandas.NA`` there), and ``nan`` in a
    ``float64`` column; a column of str has pandas' string dtype (``str`` since pandas 3, ``object``
    before); any other column (tuples, lists, values of several types, none at all) is ``object``,
    holding the values themselves (``None`` where missing).
    """
    pandas = _import_extra("pandas", needed_by)
    data = {c: _frame_column(pandas, [row[c] for row in rows]) for c in columns}
    return pandas.DataFrame(data, columns=list(columns), index=pandas.RangeIndex(len(rows)))


_INT64 = (-2**63, 2**63 - 1)


def _frame_column(pandas, values):
    kinds = set(map(type, values))
    missing = type(None) in kinds
    kinds.discard(type(None))
    if kinds == {bool}:
        return pandas.array(values, dtype="boolean") if missing else np.array(values, dtype=bool)
    if kinds == {int} and _INT64[0] <= min(v for v in values if v is not None) and max(
            v for v in values if v is not None) <= _INT64[1]:
        return pandas.array(values, dtype="Int64") if missing else np.array(values, dtype=np.int64)
    if kinds == {float}:
        return np.array([math.nan if v is None else v for v in values] if missing else values, dtype=float)
    if kinds == {str}:
        return pandas.Series(values, index=pandas.RangeIndex(len(values)))
    column = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        column[i] = value  # one by one: a list of tuples given at once would make a 2-d array
    return column


@dataclass(frozen=True, kw_only=True)
class SlopeFit:
    """A fitted slope with its bootstrap interval (see :func:`fit_slope`).

    Attributes
    ----------
    slope, intercept : float
        Least-squares line through the points ``(u(x), log statistic(y at x))``.
    low, high : float
        Percentile bootstrap interval of the slope at the requested level.
    level : float
    n_points : int
        Grid values used (those with a finite, positive statistic).
    n_boot : int
    """

    slope: float
    intercept: float
    low: float
    high: float
    level: float
    n_points: int
    n_boot: int


def fit_slope(x: np.ndarray | list[float], samples: list[np.ndarray] | tuple[np.ndarray, ...], *, log_x: bool = True,
              statistic: str = "mean", n_boot: int = 2000, level: float = 0.95, rng: np.random.Generator) -> SlopeFit:
    r"""Slope of ``log statistic(y)`` against ``log x`` (or ``x``), with a bootstrap interval.

    For grid values :math:`x_1 < \dots < x_G` with independent trial outcomes
    :math:`y_{g,1}, \dots, y_{g,T_g}` at each, the point estimate is the least-squares slope of
    :math:`\log s_g` on :math:`\log x_g` (``log_x=True``: a power law :math:`y \propto x^a`) or
    on :math:`x_g` (``log_x=False``: an exponential :math:`y \propto e^{a x}`), with
    :math:`s_g` the mean (or median) of the trials at :math:`x_g`.  The interval resamples the
    trials *within* each grid value (a stratified nonparametric bootstrap) and refits.

    Parameters
    ----------
    x : array of shape (G,)
        Grid values (> 0 when ``log_x``).
    samples : sequence of G arrays
        The trial outcomes at each grid value; non-finite outcomes are dropped.
    log_x : bool
    statistic : {"mean", "median"}
    n_boot : int >= 1
    level : float in (0, 1)
    rng : numpy.random.Generator

    Returns
    -------
    SlopeFit
        ``nan`` slope and interval with fewer than two usable grid values.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.array([10.0, 20, 40, 80])
    >>> ys = [x_ ** -0.5 * rng.lognormal(0, 0.1, 50) for x_ in x]
    >>> fit = fit_slope(x, ys, rng=rng)
    >>> round(fit.slope, 1), bool(fit.low < -0.5 < fit.high)
    (-0.5, True)
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or len(samples) != x.size:
        raise ValueError(f"samples must hold one array per grid value of x ({x.size}), got {len(samples)}")
    if log_x and np.any(x <= 0):
        raise ValueError("x must be > 0 for a log-log fit")
    stat = np.mean if statistic == "mean" else np.median
    clean = [np.asarray(s, dtype=float)[np.isfinite(np.asarray(s, dtype=float))] for s in samples]
    u = np.log(x) if log_x else x
    slope, intercept, n_points = _line(u, clean, stat)
    boots = _bootstrap_lines(u, clean, stat, n_boot, rng)[:, 0]
    boots = boots[np.isfinite(boots)]
    if boots.size and np.isfinite(slope):
        low, high = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    else:
        low = high = np.nan
    return SlopeFit(slope=slope, intercept=intercept, low=float(low), high=float(high), level=level,
                    n_points=n_points, n_boot=n_boot)


def _line(u, groups, stat):
    """Least-squares line of ``log stat(group)`` on ``u`` over the groups whose statistic is finite
    and positive: ``(slope, intercept, groups used)``, ``nan`` twice with fewer than two."""
    v = np.array([stat(g) if g.size else np.nan for g in groups])
    ok = np.isfinite(v) & (v > 0)
    if ok.sum() < 2:
        return np.nan, np.nan, int(ok.sum())
    slope, intercept = np.polyfit(u[ok], np.log(v[ok]), 1)
    return float(slope), float(intercept), int(ok.sum())


def _bootstrap_lines(u, groups, stat, n_boot, rng):
    """``(n_boot, 2)`` slopes and intercepts of :func:`_line` refitted on the trials resampled within
    each group (one ``rng.integers`` call per group and replicate, in that order)."""
    lines = [_line(u, [g[rng.integers(0, g.size, g.size)] if g.size else g for g in groups], stat)[:2]
             for _ in range(n_boot)]
    return np.array(lines, dtype=float).reshape(n_boot, 2)


def slope_verdict(predicted: float, fit: SlopeFit, *, tolerance: float = 0.0) -> str:
    """``"consistent"`` if ``predicted`` lies in the fit's interval widened by ``tolerance``,
    ``"contradicts"`` if not, ``"undetermined"`` without an interval.

    ``fit`` must be a :class:`SlopeFit` (``TypeError`` otherwise) and ``tolerance`` finite and
    ``>= 0`` (``ValueError`` otherwise).
    """
    if not isinstance(fit, SlopeFit):
        raise TypeError(f"fit must be a SlopeFit (from fit_slope), got {type(fit).__name__}")
    tolerance = check_real("tolerance", tolerance, low=0.0)
    if not (np.isfinite(fit.low) and np.isfinite(fit.high)):
        return "undetermined"
    inside = fit.low - tolerance <= predicted <= fit.high + tolerance
    return "consistent" if inside else "contradicts"


def finite_mean(values: np.ndarray | list[float]) -> float:
    """Mean of the finite values, ``nan`` when there is none (no warning).

    Examples
    --------
    >>> finite_mean([1.0, float("nan"), 3.0]), finite_mean([float("inf")])
    (2.0, nan)
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if v.size else math.nan


def bootstrap_mean_interval(values: np.ndarray | list[float], rng: np.random.Generator, n_boot: int,
                            level: float = 0.95) -> tuple[float, float, float]:
    """Mean of the finite values and its percentile bootstrap interval.

    Parameters
    ----------
    values : array of float
        Trial outcomes; non-finite ones are dropped.
    rng : numpy.random.Generator
        Draws the ``(n_boot, size)`` resample indices in one call.
    n_boot : int >= 1
        Bootstrap resamples.
    level : float in (0, 1)

    Returns
    -------
    (mean, low, high) : tuple of float
        ``nan`` three times when no value is finite.

    Examples
    --------
    >>> mean, low, high = bootstrap_mean_interval(np.arange(10.0), np.random.default_rng(0), 500)
    >>> mean, bool(low < mean < high)
    (4.5, True)
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    boots = v[rng.integers(0, v.size, (n_boot, v.size))].mean(axis=1)
    low, high = np.quantile(boots, [(1 - level) / 2, (1 + level) / 2])
    return float(v.mean()), float(low), float(high)


def loglog_slope(x: np.ndarray | list[float], y: np.ndarray | list[float]) -> float:
    """Least-squares slope of ``log y`` on ``log x`` over the finite positive points, ``nan`` with
    fewer than two (no interval: see :func:`fit_slope` for one).

    Examples
    --------
    >>> round(loglog_slope([1, 4, 16, 0], [1, 2, 4, 5]), 12)
    0.5
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0]) if ok.sum() >= 2 else math.nan


# --------------------------------------------------------------------------------------------
# From success rates over a grid of M to the number of clients needed
# --------------------------------------------------------------------------------------------


def crossing(Ms: np.ndarray, rates: np.ndarray, level: float = 0.5) -> tuple[float, float, str]:
    """Where a success rate reaches ``level`` on an increasing grid of ``M``.

    Parameters
    ----------
    Ms : array of shape (G,), increasing, > 0
    rates : array of shape (G,)
        Success rate at each ``M`` (``nan`` = not measured, skipped).
    level : float in (0, 1)

    Returns
    -------
    grid : float
        The smallest grid ``M`` with ``rate >= level`` (``nan`` if none).
    interpolated : float
        ``M`` at which the rate rises through ``level`` between the last grid value below it
        and ``grid``, interpolated linearly in ``log M`` (equal to ``grid`` at the first grid
        value; ``nan`` if ``grid`` is).
    status : {"found", "below_grid", "above_grid"}
        ``"below_grid"`` when the first grid value already reaches ``level`` (the true value
        may be smaller), ``"above_grid"`` when no grid value does.

    Examples
    --------
    >>> grid, m, status = crossing([100, 200, 400], [0.0, 0.25, 0.75])  # log-midway in [200, 400]
    >>> grid, round(m, 6), status
    (400.0, 282.842712, 'found')
    """
    Ms = np.asarray(Ms, dtype=float)
    rates = np.asarray(rates, dtype=float)
    ok = np.isfinite(rates)
    Ms, rates = Ms[ok], rates[ok]
    hit = np.flatnonzero(rates >= level)
    if hit.size == 0:
        return float("nan"), float("nan"), "above_grid"
    j = int(hit[0])
    if j == 0:
        return float(Ms[0]), float(Ms[0]), "below_grid"
    t = (level - rates[j - 1]) / (rates[j] - rates[j - 1])
    log_m = np.log(Ms[j - 1]) + t * (np.log(Ms[j]) - np.log(Ms[j - 1]))
    return float(Ms[j]), float(np.exp(log_m)), "found"


def _crossings_batch(Ms, rates, level):
    """:func:`crossing` for many rate curves at once: ``rates`` (B, G) -> interpolated ``M`` (B,)
    with ``nan`` where the crossing is not inside the grid."""
    hit = rates >= level
    any_hit = hit.any(axis=1)
    j = np.argmax(hit, axis=1)
    inside = any_hit & (j > 0)
    out = np.full(rates.shape[0], np.nan)
    if inside.any():
        rows = np.flatnonzero(inside)
        jj = j[rows]
        r0, r1 = rates[rows, jj - 1], rates[rows, jj]
        t = (level - r0) / (r1 - r0)
        log_m = np.log(Ms[jj - 1]) + t * (np.log(Ms[jj]) - np.log(Ms[jj - 1]))
        out[rows] = np.exp(log_m)
    return out


def _power_law(d, p, m):
    """Least squares of ``log m`` on ``[log d, log p, 1]`` over finite ``m``; ``(a_d, a_p, b)`` or nans."""
    ok = np.isfinite(m) & (m > 0)
    if ok.sum() < 3:
        return np.nan, np.nan, np.nan
    A = np.column_stack([np.log(d[ok]), np.log(p[ok]), np.ones(ok.sum())])
    if np.linalg.matrix_rank(A) < 3:
        return np.nan, np.nan, np.nan
    coef = np.linalg.lstsq(A, np.log(m[ok]), rcond=None)[0]
    return float(coef[0]), float(coef[1]), float(coef[2])


def fit_clients_needed(cells: list[dict], *, level: float = 0.5, n_boot: int = 2000, ci: float = 0.95,
                       rng: np.random.Generator) -> dict:
    """Exponents of the clients needed, :math:`M^* \\propto d^{a_d} p_{\\min}^{a_p}`, with intervals.

    For each cell ``(d, p_min)``, :math:`M^*` is the interpolated :func:`crossing` of its success
    rate through ``level``; the exponents are the least-squares fit of :math:`\\log M^*` on
    :math:`\\log d` and :math:`\\log p_{\\min}` jointly, over the cells whose crossing lies inside
    their grid (``"found"``).  The interval resamples the trials within each cell (a trial's
    outcomes over the whole grid move together: they share the data) and refits; a replicate in
    which a cell's crossing leaves its grid drops that cell.

    Parameters
    ----------
    cells : list of dict
        ``d``, ``p_min``, ``Ms`` (array (G,), increasing), ``success`` (array (n_trials, G) of
        0/1).
    level : float
    n_boot : int
    ci : float in (0, 1)
    rng : numpy.random.Generator

    Returns
    -------
    dict
        ``d``: :class:`mixreg.stats.SlopeFit` of :math:`a_d` (``intercept`` is the fit's
        constant :math:`b`, ``n_points`` the cells used, ``n_boot`` the replicates that could
        be fitted); ``p_min``: the same for :math:`a_p`; ``crossings``: per cell
        ``(grid, interpolated, status)`` of :func:`crossing`.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    n_boot = check_int("n_boot", n_boot, low=1)
    d = np.array([float(c["d"]) for c in cells])
    p = np.array([float(c["p_min"]) for c in cells])
    grids = [np.asarray(c["Ms"], dtype=float) for c in cells]
    success = [np.asarray(c["success"], dtype=float).reshape(-1, g.size) for c, g in zip(cells, grids)]
    observed = [crossing(g, s.mean(axis=0) if s.shape[0] else np.full(g.size, np.nan), level)
                for g, s in zip(grids, success)]
    found = np.array([m if status == "found" else np.nan for _, m, status in observed])
    a_d, a_p, b = _power_law(d, p, found)
    boot_m = np.full((n_boot, len(cells)), np.nan)
    for j, (g, s) in enumerate(zip(grids, success)):
        if s.shape[0]:
            idx = rng.integers(0, s.shape[0], size=(n_boot, s.shape[0]))
            boot_m[:, j] = _crossings_batch(g, s[idx].mean(axis=1), level)
    boots = np.array([_power_law(d, p, row)[:2] for row in boot_m]).reshape(n_boot, 2)
    out: dict = {"crossings": observed}
    for j, (name, value) in enumerate((("d", a_d), ("p_min", a_p))):
        col = boots[:, j][np.isfinite(boots[:, j])]
        low, high = (np.quantile(col, [(1 - ci) / 2, (1 + ci) / 2]) if col.size and np.isfinite(value)
                     else (np.nan, np.nan))
        out[name] = SlopeFit(slope=value, intercept=b, low=float(low), high=float(high), level=ci,
                             n_points=int(np.isfinite(found).sum()), n_boot=int(col.size))
    return out



# --------------------------------------------------------------------------------------------
# Paired success/failure outcomes: several levels measured on one draw per trial
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PairedTest:
    """The result of a test that paired binary outcomes share one success probability
    (:func:`mcnemar_exact`, :func:`cochran_q`).

    Attributes
    ----------
    statistic : float
        Cochran's Q (with two levels, McNemar's uncorrected chi-square ``(b - c)^2 / (b + c)``).
    df : int
        Degrees of freedom of the chi-square approximation: levels - 1.
    p_value : float
        The exact p-value (or the permutation p-value, see ``method``): the probability, under the
        null that within every block the levels' outcomes are exchangeable, of a statistic at
        least as large as observed, given each block's number of successes.
    p_chi2 : float
        The chi-square approximation's p-value (poor with few discordant blocks).
    method : str
        Which test gave ``p_value``: ``"exact McNemar"``, ``"Cochran's Q, exact"`` or
        ``"Cochran's Q, permutation (<n> draws)"``.
    n_blocks : int
        Blocks (trials) compared.
    n_discordant : int
        Blocks whose levels do not all agree: the only ones carrying information.
    successes : tuple of int
        Successes per level (column totals).
    """

    statistic: float
    df: int
    p_value: float
    p_chi2: float
    method: str
    n_blocks: int
    n_discordant: int
    successes: tuple


def _paired_outcomes(name, outcomes, min_levels):
    """``outcomes`` as an int array (n_blocks, levels) of 0/1, validated."""
    x = np.asarray(outcomes)
    if x.ndim != 2 or x.shape[1] < min_levels:
        raise ValueError(f"{name} must be a 2-D array of shape (n_blocks, levels) with levels >= {min_levels}, "
                         f"got shape {x.shape}")
    if x.dtype == bool:
        return x.astype(np.int64)
    if x.size and not np.all((x == 0) | (x == 1)):
        bad = x[(x != 0) & (x != 1)].ravel()[0]
        raise ValueError(f"{name} must hold 0/1 or booleans (success or failure), got {bad!r}")
    return x.astype(np.int64)


def mcnemar_exact(first: np.ndarray | list[bool], second: np.ndarray | list[bool]) -> PairedTest:
    r"""Exact McNemar test: do two levels measured on the same trials share one success probability?

    Each trial (block) gives an outcome under both levels, on one draw.  Only the discordant
    trials carry information: ``b`` (success under ``first`` only) and ``c`` (under ``second``
    only).  Under the null (within a trial the two outcomes are exchangeable), given
    :math:`b + c`, :math:`b \sim \mathrm{Binomial}(b + c, 1/2)`; the two-sided exact p-value is

    .. math:: p = \min\Big(1,\ 2\, P\big(B \le \min(b, c)\big)\Big), \qquad B \sim \mathrm{Bin}(b + c, 1/2),

    (McNemar 1947; Agresti, *Categorical Data Analysis*, 3rd ed., Sec. 11.1; statsmodels'
    ``mcnemar(exact=True)``).  The statistic is McNemar's uncorrected chi-square
    :math:`(b - c)^2 / (b + c)` (0 when ``b + c = 0``), whose chi-square(1) p-value is
    ``p_chi2``; it equals Cochran's Q with two levels (:func:`cochran_q`).

    An unpaired test (Fisher's, or a chi-square on the two totals) treats the two columns as
    independent samples: with outcomes positively correlated within a trial (same data, same
    initialisations) it is conservative and its p-value does not answer the paired question.

    Parameters
    ----------
    first, second : array of shape (n,) of bool or 0/1
        The outcome of each trial under each level, in the same trial order.

    Returns
    -------
    PairedTest
        ``method`` is ``"exact McNemar"``; ``successes`` is ``(sum(first), sum(second))``.

    Raises
    ------
    ValueError
        If the two arrays differ in length or hold anything but 0/1 or booleans.

    See Also
    --------
    cochran_q : The same null for more than two levels.

    Examples
    --------
    Agresti's presidential-approval table (1,600 people asked twice; 150 approve then
    disapprove, 86 the reverse): :math:`z^2 = 64^2 / 236 = 17.36`.

    >>> first = [1] * 794 + [1] * 150 + [0] * 86 + [0] * 570
    >>> second = [1] * 794 + [0] * 150 + [1] * 86 + [0] * 570
    >>> test = mcnemar_exact(first, second)
    >>> round(test.statistic, 2), test.n_discordant, test.p_value < 1e-4
    (17.36, 236, True)
    """
    a = np.asarray(first)
    b = np.asarray(second)
    if a.ndim != 1 or b.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"first and second must be 1-D of one length (one outcome per trial), got shapes "
                         f"{a.shape} and {b.shape}")
    x = _paired_outcomes("first and second", np.column_stack([a, b]) if a.size else np.zeros((0, 2)), 2)
    only_first = int(np.count_nonzero((x[:, 0] == 1) & (x[:, 1] == 0)))
    only_second = int(np.count_nonzero((x[:, 0] == 0) & (x[:, 1] == 1)))
    discordant = only_first + only_second
    statistic = (only_first - only_second) ** 2 / discordant if discordant else 0.0
    p_value = min(1.0, 2.0 * float(binom.cdf(min(only_first, only_second), discordant, 0.5))) if discordant else 1.0
    return PairedTest(statistic=float(statistic), df=1, p_value=p_value,
                      p_chi2=float(chi2.sf(statistic, 1)) if discordant else 1.0, method="exact McNemar",
                      n_blocks=int(x.shape[0]), n_discordant=discordant,
                      successes=tuple(int(v) for v in x.sum(axis=0)))


def _cochran_statistic(column_totals, k, total, row_squares):
    """Cochran's Q from the column totals (any leading shape), ``k`` levels, ``total`` successes and
    ``sum_i R_i^2``: ``(k - 1) (k sum_j C_j^2 - N^2) / (k N - sum_i R_i^2)``."""
    c = np.asarray(column_totals, dtype=float)
    return (k - 1) * (k * np.sum(c**2, axis=-1) - total**2) / (k * total - row_squares)


def cochran_q(outcomes: np.ndarray | list[list[bool]], *, exact: bool | None = None, n_permutations: int = 20000,
              seed: int = 0, max_states: int = 200_000) -> PairedTest:
    r"""Cochran's Q test: do ``k`` levels measured on the same blocks share one success probability?

    ``outcomes[i, j]`` is the success (1) or failure (0) of block ``i`` (a trial: one draw of
    the data and the initialisations) under level ``j`` (e.g. a noise level applied to that
    draw).  With :math:`C_j` the successes of level ``j``, :math:`R_i` those of block ``i`` and
    :math:`N = \sum_j C_j` (Cochran 1950; Conover, *Practical Nonparametric Statistics*, 3rd ed.,
    Sec. 4.6),

    .. math:: Q = \frac{(k - 1)\big(k \sum_j C_j^2 - N^2\big)}{k N - \sum_i R_i^2},

    approximately chi-square with ``k - 1`` degrees of freedom for many discordant blocks
    (``p_chi2``).  Blocks whose levels all agree (all succeed or all fail) leave :math:`Q`
    unchanged.  Null hypothesis: within each block the ``k`` outcomes are exchangeable (so the
    levels share one success probability; blocks may differ arbitrarily, e.g. by separation).
    The exact p-value conditions on every :math:`R_i`: under the null a block's :math:`R_i`
    successes fall on a uniformly random set of :math:`R_i` levels, independently across blocks,
    and :math:`p = P(Q^* \ge Q)`.  It is computed by convolving the blocks' contributions to
    the sorted column totals (``"Cochran's Q, exact"``), or, when that needs more than
    ``max_states`` states, estimated from ``n_permutations`` within-block permutations
    (``(1 + #{Q^* >= Q}) / (1 + n_permutations)``, fixed ``seed``).  With two levels the exact
    p-value is the exact McNemar test's (:func:`mcnemar_exact`).

    Parameters
    ----------
    outcomes : array of shape (n_blocks, k), bool or 0/1, k >= 2
    exact : bool or None, default None
        ``True``: the exact p-value, or ``ValueError`` if it needs more than ``max_states``
        states; ``False``: the permutation p-value; ``None``: exact when it fits in
        ``max_states``, permutation otherwise.
    n_permutations : int >= 1
    seed : int >= 0
        Seed of the permutation draws.
    max_states : int >= 1
        Largest number of distinct (sorted) column-total vectors the exact convolution may hold.

    Returns
    -------
    PairedTest
        ``statistic`` Q (0 without discordant blocks, then both p-values are 1), ``df = k - 1``.

    Raises
    ------
    ValueError
        If ``outcomes`` is not 2-D with ``k >= 2`` columns of 0/1, or ``exact=True`` and the exact
        distribution needs more than ``max_states`` states.

    See Also
    --------
    mcnemar_exact : The exact test for two levels.
    mixreg.theory.stratified_homogeneity_test : The test for independent samples per level.

    Examples
    --------
    Three classifiers scored on the same 100 cases (mlxtend's ``cochrans_q`` example):

    >>> wrong = np.zeros((100, 3), dtype=int)
    >>> wrong[:16, 0] = 1
    >>> wrong[[0, 1, 2, 3, 4, 5, 20, 21], 1] = 1
    >>> wrong[[0, 1, 2, 6, 20, 21, 98, 99], 2] = 1
    >>> test = cochran_q(1 - wrong)
    >>> round(test.statistic, 4), round(test.p_chi2, 4), test.method
    (7.5294, 0.0232, "Cochran's Q, exact")
    """
    x = _paired_outcomes("outcomes", outcomes, 2)
    n_permutations = check_int("n_permutations", n_permutations, low=1)
    seed = check_int("seed", seed, low=0)
    max_states = check_int("max_states", max_states, low=1)
    if exact not in (None, True, False):
        raise ValueError(f"exact must be True, False or None, got {exact!r}")
    n_blocks, k = x.shape
    rows = x.sum(axis=1)
    columns = x.sum(axis=0)
    discordant = (rows > 0) & (rows < k)
    base = dict(df=k - 1, n_blocks=int(n_blocks), n_discordant=int(discordant.sum()),
                successes=tuple(int(v) for v in columns))
    if not discordant.any():
        return PairedTest(statistic=0.0, p_value=1.0, p_chi2=1.0, method="Cochran's Q, exact", **base)
    total = int(rows.sum())
    row_squares = int(np.sum(rows**2))
    q = float(_cochran_statistic(columns, k, total, row_squares))
    p_chi2 = float(chi2.sf(q, k - 1))
    # Q grows with sum_j C_j^2 alone (N and the R_i are fixed by the conditioning): compare that integer.
    observed = int(np.sum(columns**2))
    p_value = None
    if exact is not False:
        p_value = _cochran_exact_tail(rows[discordant], k, int(np.sum(rows == k)), observed, max_states)
        if p_value is None and exact:
            raise ValueError(f"the exact distribution of Cochran's Q needs more than max_states={max_states} states "
                             f"({int(discordant.sum())} discordant blocks, k = {k}); raise max_states or pass "
                             "exact=None for the permutation p-value")
    if p_value is not None:
        return PairedTest(statistic=q, p_value=p_value, p_chi2=p_chi2, method="Cochran's Q, exact", **base)
    rng = np.random.default_rng(seed)
    exceed = 0
    for start in range(0, n_permutations, _PERMUTATION_CHUNK):  # bounded memory: chunks of permutations
        size = min(_PERMUTATION_CHUNK, n_permutations - start)
        keys = rng.random((size, int(discordant.sum()), k))
        ranks = np.argsort(np.argsort(keys, axis=-1), axis=-1)  # a uniform permutation of each block's levels
        hits = (ranks < rows[discordant][None, :, None]).sum(axis=1) + int(np.sum(rows == k))  # column totals
        exceed += int(np.count_nonzero(np.sum(hits**2, axis=-1) >= observed))
    return PairedTest(statistic=q, p_value=float((1 + exceed) / (1 + n_permutations)), p_chi2=p_chi2,
                      method=f"Cochran's Q, permutation ({n_permutations} draws)", **base)


_PERMUTATION_CHUNK = 1000


def _cochran_exact_tail(block_rows, k, n_full, observed, max_states):
    """``P(sum_j C_j^2 >= observed)`` when each block puts its ``R_i`` successes on a uniform random
    ``R_i``-subset of the ``k`` levels, by convolution over the blocks of the distribution of the
    *sorted* column totals (the null is invariant under relabelling the levels, so sorting loses
    nothing), starting from the ``n_full`` blocks that succeed at every level; ``None`` if more than
    ``max_states`` states would be needed."""
    from itertools import combinations

    subsets = {r: [tuple(int(j in s) for j in range(k)) for s in combinations(range(k), r)]
               for r in set(int(v) for v in block_rows)}
    states = {(int(n_full),) * k: 1.0}
    for r in block_rows:
        choices = subsets[int(r)]
        weight = 1.0 / len(choices)
        new = {}
        for state, prob in states.items():
            for add in choices:
                key = tuple(sorted(a + b for a, b in zip(state, add)))
                new[key] = new.get(key, 0.0) + prob * weight
        if len(new) > max_states:
            return None
        states = new
    tail = math.fsum(prob for state, prob in states.items() if sum(v * v for v in state) >= observed)
    below = math.fsum(prob for state, prob in states.items() if sum(v * v for v in state) < observed)
    return float(tail / (tail + below))  # normalised: the rounding of the convolution cancels (1 exactly if no state is below)
