"""Figures for any sweep: success probability and error against any swept field, per method.

Both functions read a tidy table (a list of dicts or a pandas ``DataFrame``: one row per trial,
or per cell with a ``trials`` count for the success figure), with the columns named by the
caller; they draw into the axes given (``ax=``, else a new figure), never show the figure, and
return what they drew (a dict: the artists and the per-method arrays behind them).

Every method of the table is drawn (``methods=`` chooses and orders them; the others are named
in the returned ``note``), each in its style: the registry's (:data:`mixreg.methods.COMPARE`
names every registered algorithm), a style given by :func:`mixreg.methods.register_style`, else
an automatic one, distinct for every unregistered method of the figure
(:func:`mixreg.methods.styles_for`).  Rows that cannot be drawn (a missing or non-finite value,
a value <= 0 on a log axis) are excluded and counted, in the method's legend entry and in the
returned ``note``, never silently.  A crowded figure (more than :data:`CROWDED` legend entries)
keeps it readable: the methods' short names, one entry per method with its fit, lighter bands,
and the legend out of the data: above the axes across a figure made here (in columns, the
figure taller by its rows), beside the axes given.

Sizes are the current style's (:func:`mixreg.plotting.use_style`): a figure made here is one
panel as wide as the style (:func:`mixreg.plotting.new_figure`), and every text, line and marker
takes its size from the rcParams.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.legend import Legend

import matplotlib.pyplot as plt  # noqa: F401 - the examples close their figures with it
import numpy as np
from scipy.stats import norm

from ..methods import COMPARE, styles_for
from ..stats import fit_slope, wilson_interval
from ._style import _figure_of, add_footnote, legend_above, new_figure

__all__ = ["success_plot", "error_plot", "PREDICTION_LABEL", "CROWDED"]

#: Legend text of the prediction line of :func:`error_plot`.
PREDICTION_LABEL = "prediction (fixed before the data)"


def success_plot(table: Iterable[Mapping[str, Any]] | Any, x: str, *, success: str = "success",
                 method: str | None = "method", trials: str | None = None, ax: Axes | None = None,
                 methods: Sequence[str] | None = None, level: float = 0.95, logx: bool = False,
                 label: str | None = None, title: str | None = None, footnote: str | None = None) -> dict[str, Any]:
    r"""Success probability against a swept field, per method, with Wilson score bands.

    For each method and value :math:`x` of the swept field, :math:`k` successes out of
    :math:`n` trials give :math:`\hat p = k / n` (markers and line) and the Wilson score
    interval at ``level`` (band; :func:`mixreg.stats.wilson_interval`):

    .. math::

        \frac{\hat p + z^2/(2n) \pm z \sqrt{\hat p (1 - \hat p)/n + z^2/(4n^2)}}{1 + z^2/n},
        \qquad z = \Phi^{-1}\bigl((1 + \text{level})/2\bigr).

    Parameters
    ----------
    table : list of dict or pandas.DataFrame
        One row per trial (``success`` a boolean, or 0/1), or per cell when ``trials`` is given
        (``success`` then counts the cell's successes).
    x : str
        The column of the swept field (numbers).
    success : str, default ``"success"``
        The column of the outcome.
    method : str or None, default ``"method"``
        The column naming the method; ``None``: every row is one series, named ``success``.
    trials : str, optional
        The column of the number of trials of a per-cell row.
    ax : matplotlib.axes.Axes, optional
        Where to draw (only there: the legend inside or beside it, no footnote); ``None``: a new
        one-panel figure in the current style (:func:`mixreg.plotting.new_figure`).
    methods : sequence of str, optional
        The methods to draw, in legend order; ``None``: every method of the table, in order of
        first appearance.  Their set decides the automatic styles.
    level : float in (0, 1), default 0.95
        Level of the Wilson bands.
    logx : bool, default False
        Log scale for ``x`` (rows with ``x <= 0`` are then excluded and counted).
    label : str, optional
        The y axis label; default ``"success probability (<success>)"``.
    title : str, optional
        The axes' title.
    footnote : str, optional
        A one-line footnote under a figure made here (:func:`mixreg.plotting.add_footnote`);
        ignored with ``ax`` given.  Longer notes belong in the caption file
        (:func:`mixreg.plotting.save_figure`, ``caption=``).

    Returns
    -------
    dict
        ``figure``, ``axes`` (also as ``ax``), ``legend`` (the axes' legend, or the figure's
        above the axes for a crowded figure made here); ``lines`` and ``bands``: method to its
        Line2D and band;
        ``arrays``: method to a dict of arrays ``x`` (sorted distinct values), ``k``, ``n``,
        ``p``, ``low``, ``high``; ``styles``: method to its :class:`~mixreg.methods.MethodStyle`;
        ``excluded``: method to the number of rows left out; ``note``: one sentence naming
        what was left out (rows and methods), ``""`` when nothing was.

    Raises
    ------
    ValueError
        If a column is missing, ``methods`` names a method the table lacks, ``level`` is
        outside (0, 1), or a per-trial ``success`` is not 0/1.

    Examples
    --------
    >>> rows = [{"m": m, "method": "mine", "success": s} for m, s in [(10, 0), (10, 1), (20, 1), (20, 1)]]
    >>> drawn = success_plot(rows, "m")
    >>> drawn["arrays"]["mine"]["p"].tolist(), drawn["note"]
    ([0.5, 1.0], '')
    >>> plt.close(drawn["figure"])
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    rows = _rows(table, [x, success, *([method] if method else []), *([trials] if trials else [])])
    groups, not_drawn = _groups(rows, method, methods, default=success)
    fig, ax, own = _axes(ax)
    styles = styles_for(groups, view=COMPARE)
    drawn: dict[str, Any] = dict(figure=fig, axes=ax, ax=ax, lines={}, bands={}, arrays={}, styles=styles, excluded={})
    notes = []
    for key, group in groups.items():
        xs, ks, ns = list[float](), list[float](), list[float]()
        reasons: dict[str, int] = {}
        for row in group:
            xv, sv = _number(row[x]), _number(row[success])
            nv = _number(row[trials]) if trials else 1.0
            reason = ("non-finite" if not (np.isfinite(xv) and np.isfinite(sv) and np.isfinite(nv))
                      else f"{x} <= 0 on a log axis" if logx and xv <= 0 else None)
            if reason:
                reasons[reason] = reasons.get(reason, 0) + 1
                continue
            if trials is None and sv not in (0.0, 1.0):
                raise ValueError(f"column {success!r} must hold 0/1 (a per-trial outcome), got {row[success]!r}; "
                                 "pass trials= for per-cell counts")
            xs.append(xv)
            ks.append(sv)
            ns.append(nv)
        values = np.unique(xs)
        where = np.searchsorted(values, xs)
        k = np.bincount(where, weights=ks, minlength=values.size).astype(float)
        n = np.bincount(where, weights=ns, minlength=values.size).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = k / n
        low, high = wilson_interval(k, n, level)
        style = styles[key]
        text = (style.short or style.label if len(groups) > CROWDED else style.label) + _excluded(reasons, len(group))
        line, = ax.plot(values, p, color=style.color, marker=style.marker, ls=style.linestyle, label=text)
        drawn["lines"][key] = line
        alpha = 0.15 if len(groups) <= CROWDED else 0.06
        drawn["bands"][key] = ax.fill_between(values, low, high, color=line.get_color(), alpha=alpha, lw=0)
        drawn["arrays"][key] = dict(x=values, k=k, n=n, p=p, low=low, high=high)
        drawn["excluded"][key] = sum(reasons.values())
        notes.append(_row_note(key, reasons, len(group)))
    if logx:
        ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(x)
    ax.set_ylabel(label if label is not None else f"success probability ({success})")
    drawn["legend"] = _legend(ax, own, len(groups), f"band: {level:.0%} Wilson interval")
    _title_footnote(ax, own, title, footnote)
    drawn["note"] = _note(notes, not_drawn)
    return drawn


def error_plot(table: Iterable[Mapping[str, Any]] | Any, x: str, y: str, *, method: str | None = "method",
               ax: Axes | None = None, methods: Sequence[str] | None = None, statistic: str = "mean",
               level: float = 0.95, fit: bool = True,
               prediction: Callable[[np.ndarray], Any] | tuple[Any, Any] | None = None, logx: bool = True,
               logy: bool = True, n_boot: int = 2000, rng: np.random.Generator | None = None,
               label: str | None = None, title: str | None = None, footnote: str | None = None) -> dict[str, Any]:
    r"""An error (any positive outcome) against a swept field, per method, with the exponent fit
    and the prediction.

    Per method and value of ``x``: the mean of ``y`` with its normal-approximation interval at
    ``level`` (:math:`\bar y \pm z\, s / \sqrt{n}`), or the median with the quartiles
    (``statistic="median"``: the trials' spread, as the built-in studies draw it).  With
    ``fit``, the least-squares line of :math:`\log \text{statistic}(y)` on :math:`\log x` (on
    :math:`x` when ``logx`` is false) over the values of ``x``, with a stratified bootstrap
    interval of its slope (:func:`mixreg.stats.fit_slope`), labelled
    ``"<method>, fit: slope a [lo, hi]"``.

    Parameters
    ----------
    table : list of dict or pandas.DataFrame
        One row per trial (or per cell: one value each).
    x, y : str
        The columns of the swept field and of the outcome.
    method : str or None, default ``"method"``
        The column naming the method; ``None``: every row is one series, named ``y``.
    ax : matplotlib.axes.Axes, optional
        Where to draw (only there: the legend inside or beside it, no footnote); ``None``: a new
        one-panel figure in the current style (:func:`mixreg.plotting.new_figure`).
    methods : sequence of str, optional
        The methods to draw, in legend order; ``None``: every method of the table, in order of
        first appearance.
    statistic : {"mean", "median"}, default ``"mean"``
    level : float in (0, 1), default 0.95
        Level of the interval of the mean and of the slope's bootstrap interval.
    fit : bool, default True
        Fit and draw the exponent (for a method with two or more usable values of ``x``).
    prediction : callable or (array, array), optional
        The prediction, drawn as a black dashed line labelled :data:`PREDICTION_LABEL`: a
        function of an array of ``x`` values (evaluated on 200 points across the drawn range),
        or the pair ``(x values, y values)``.
    logx, logy : bool, default True
        Log scales; rows with a value <= 0 on a log axis are excluded and counted.
    n_boot : int >= 1, default 2000
        Bootstrap resamples of the slope's interval.
    rng : numpy.random.Generator, optional
        Draws the bootstrap; ``None``: a Generator seeded with 0, so a redraw is identical.
    label : str, optional
        The y axis label; default ``"<y> (<statistic>)"``.
    title, footnote : str, optional
        As in :func:`success_plot`.

    Returns
    -------
    dict
        ``figure``, ``axes`` (also as ``ax``), ``legend`` (as in :func:`success_plot`);
        ``errorbars``: method to its ErrorbarContainer; ``fit_lines`` and
        ``fits``: method to its fit's Line2D and :class:`~mixreg.stats.SlopeFit`;
        ``prediction``: the prediction's Line2D or ``None``; ``arrays``: method to a dict of
        arrays ``x``, ``n`` (rows used), ``y`` (the statistic), ``low``, ``high``; ``styles``;
        ``excluded``: method to the number of rows left out; ``note``: one sentence naming
        what was left out (``"3 of 48 rows excluded: non-finite"``), ``""`` when nothing was.

    Raises
    ------
    ValueError
        If a column is missing, ``methods`` names a method the table lacks, ``statistic`` or
        ``level`` is invalid, or ``prediction`` is neither a callable nor a pair of arrays.

    Examples
    --------
    >>> rows = [{"m": m, "method": "mine", "err": e} for m, e in [(10, 1.0), (10, 3.0), (40, 1.0), (40, float("nan"))]]
    >>> drawn = error_plot(rows, "m", "err", fit=False)
    >>> drawn["arrays"]["mine"]["y"].tolist(), drawn["note"]
    ([2.0, 1.0], 'mine: 1 of 4 rows excluded: non-finite.')
    >>> plt.close(drawn["figure"])
    """
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if prediction is not None and not callable(prediction) and not _is_pair(prediction):
        raise ValueError(f"prediction must be a callable of x or a pair (x values, y values), got {prediction!r}")
    rng = np.random.default_rng(0) if rng is None else rng
    rows = _rows(table, [x, y, *([method] if method else [])])
    groups, not_drawn = _groups(rows, method, methods, default=y)
    entries = len(groups) * (2 if fit else 1) + (prediction is not None)  # legend entries
    crowded = entries > CROWDED
    fig, ax, own = _axes(ax)
    styles = styles_for(groups, view=COMPARE)
    drawn: dict[str, Any] = dict(figure=fig, axes=ax, ax=ax, errorbars={}, fit_lines={}, fits={}, prediction=None,
                                 arrays={}, styles=styles, excluded={})
    notes: list[str] = []
    spans: list[float] = []
    z = norm.ppf(0.5 + level / 2.0)
    for key, group in groups.items():
        by_x: dict[float, list[float]] = {}
        reasons: dict[str, int] = {}
        for row in group:
            xv, yv = _number(row[x]), _number(row[y])
            reason = ("non-finite" if not (np.isfinite(xv) and np.isfinite(yv))
                      else f"{x} <= 0 on a log axis" if logx and xv <= 0
                      else f"{y} <= 0 on a log axis" if logy and yv <= 0 else None)
            if reason:
                reasons[reason] = reasons.get(reason, 0) + 1
            else:
                by_x.setdefault(xv, []).append(yv)
        values = np.array(sorted(by_x), dtype=float)
        samples = [np.array(by_x[v], dtype=float) for v in values]
        n = np.array([s.size for s in samples], dtype=float)
        if statistic == "mean":
            centre = np.array([s.mean() for s in samples])
            half = np.array([z * s.std(ddof=1) / np.sqrt(s.size) if s.size > 1 else np.nan for s in samples])
            low, high = centre - half, centre + half
        else:
            centre = np.array([np.median(s) for s in samples])
            low = np.array([np.quantile(s, 0.25) for s in samples])
            high = np.array([np.quantile(s, 0.75) for s in samples])
        style = styles[key]
        fitted = None     # the fit, when it gave a slope
        if fit and values.size >= 2:
            result = fit_slope(values, samples, log_x=logx, statistic=statistic, n_boot=n_boot, level=level, rng=rng)
            drawn["fits"][key] = result
            fitted = result if np.isfinite(result.slope) else None
        slope = f"fit: slope {fitted.slope:.3g} [{fitted.low:.3g}, {fitted.high:.3g}]" if fitted is not None else ""
        # a crowded legend has one entry per method: its short name, with its fit
        text = (f"{style.short or style.label}{', ' + slope if slope else ''}" if crowded else style.label)
        bars = ax.errorbar(values, centre, yerr=np.abs([centre - low, high - centre]), color=style.color,
                           marker=style.marker, ls=style.linestyle,
                           label=text + _excluded(reasons, len(group)))
        colour = bars.lines[0].get_color()
        drawn["errorbars"][key] = bars
        drawn["arrays"][key] = dict(x=values, n=n, y=centre, low=low, high=high)
        drawn["excluded"][key] = sum(reasons.values())
        notes.append(_row_note(key, reasons, len(group)))
        spans.extend(values.tolist())
        if fitted is not None:
            grid = _grid(values, logx)
            u = np.log(grid) if logx else grid
            line, = ax.plot(grid, np.exp(fitted.intercept + fitted.slope * u), color=colour, ls=":",
                            label="_fit" if crowded else f"{style.short or style.label}, {slope}")
            drawn["fit_lines"][key] = line
    if prediction is not None:
        if callable(prediction):
            grid = _grid(np.array(spans, dtype=float), logx) if spans else np.array([])
            px, py = grid, np.asarray(prediction(grid), dtype=float) if grid.size else np.array([])
        else:
            px, py = (np.asarray(v, dtype=float) for v in prediction)
        drawn["prediction"], = ax.plot(px, py, "k--", label=PREDICTION_LABEL)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(label if label is not None else f"{y} ({statistic})")
    interval = f"{level:.0%} interval of the mean" if statistic == "mean" else "quartiles"
    drawn["legend"] = _legend(ax, own, entries,
                              f"{statistic} over trials, bars: {interval}" + (", dotted: fit" if crowded and fit else ""))
    ax.grid(True, which="both", alpha=0.25)
    _title_footnote(ax, own, title, footnote)
    drawn["note"] = _note(notes, not_drawn)
    return drawn


# --------------------------------------------------------------------------------------------
# The table: rows, groups by method, exclusions said in words
# --------------------------------------------------------------------------------------------


def _rows(table, columns):
    """The table as a list of mappings, every column of ``columns`` present."""
    if hasattr(table, "to_dict") and hasattr(table, "columns"):  # a pandas DataFrame
        table = table.to_dict("records")
    rows = list(table)
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise ValueError(f"table must be a list of dicts or a DataFrame, got row {i} = {row!r}")
        missing = [c for c in columns if c not in row]
        if missing:
            raise ValueError(f"table row {i} has no column {', '.join(map(repr, missing))}; it has {sorted(row)}")
    return rows


def _groups(rows, method, methods, *, default):
    """The rows of each method to draw (in order) and the table's methods left out."""
    groups = {}
    for row in rows:
        groups.setdefault(row[method] if method else default, []).append(row)
    if methods is None:
        return groups, []
    methods = list(dict.fromkeys(methods))
    absent = [m for m in methods if m not in groups]
    if absent:
        raise ValueError(f"methods names {', '.join(map(repr, absent))}, which the table does not hold; "
                         f"it holds {list(groups)}")
    return {m: groups[m] for m in methods}, [m for m in groups if m not in methods]


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")  # a missing value ("", None): excluded as non-finite


def _excluded(reasons, total):
    count = sum(reasons.values())
    return f" ({count} of {total} excluded: {', '.join(reasons)})" if count else ""


def _row_note(key, reasons, total):
    count = sum(reasons.values())
    if not count:
        return ""
    what = ", ".join(f"{n} {reason}" for reason, n in reasons.items()) if len(reasons) > 1 else next(iter(reasons))
    return f"{key}: {count} of {total} rows excluded: {what}."


def _note(notes, not_drawn):
    if not_drawn:
        notes.append(f"Not drawn (not in methods=): {', '.join(map(str, not_drawn))}.")
    return " ".join(note for note in notes if note)


def _grid(values, logx):
    lo, hi = float(np.min(values)), float(np.max(values))
    return np.geomspace(lo, hi, 200) if logx and lo > 0 else np.linspace(lo, hi, 200)


def _is_pair(value):
    return isinstance(value, (tuple, list)) and len(value) == 2 and np.ndim(value[0]) == 1 == np.ndim(value[1])


#: Above this many series, the legend goes beside the axes (and a figure made here is wider) and
#: the bands are lighter, so that they do not hide the curves.
CROWDED = 6


def _axes(ax: Axes | None) -> tuple[Figure, Axes, bool]:
    """``(figure, axes, made here)``: the axes given, or the one panel of a new figure (:func:`new_figure`)."""
    if ax is None:
        fig, axes = new_figure(1)
        return fig, axes[0], True
    return _figure_of(ax), ax, False


def _legend(ax: Axes, own: bool, n_series: int, title: str) -> Legend:
    """The legend, in the current style's sizes.

    Inside the axes; for a crowded figure (more than :data:`CROWDED` entries), above the axes
    across the figure's width when the figure is made here (the figure grows by its rows, so the
    panel keeps the style's size), beside the axes (upper left, outside) when the axes are the
    caller's.
    """
    if n_series <= CROWDED:
        return ax.legend(title=title)
    if not own:
        return ax.legend(title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    handles, labels = ax.get_legend_handles_labels()
    return legend_above(_figure_of(ax), handles, labels, title=title)


def _title_footnote(ax: Axes, own: bool, title: str | None, footnote: str | None) -> None:
    if title:
        ax.set_title(title)
    if own and footnote:
        add_footnote(_figure_of(ax), footnote)
