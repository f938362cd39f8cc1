"""What every figure shares: the backend, saving, tick formatting and method-styled error bars.

No size is written here: fonts, lines, markers and error-bar caps take the current style's
rcParams (:func:`mixreg.plotting.use_style`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg", force=False)  # a no-op when a backend was already chosen
import matplotlib.collections  # noqa: E402
import matplotlib.colors  # noqa: E402
import matplotlib.lines  # noqa: E402
import matplotlib.markers  # noqa: E402
import matplotlib.patches  # noqa: E402
import matplotlib.path  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402
from matplotlib.layout_engine import ConstrainedLayoutEngine, LayoutEngine  # noqa: E402

from ..methods import METHODS, MethodStyle, method_label, styles_for  # noqa: E402

__all__ = ["save_figure", "FigureNotDrawn", "not_drawn", "plain_tick", "method_style", "series_label",
           "median_errorbars", "undrawn_legend_entries"]

# Drawn for a line that is no method (key None): matplotlib's colour cycle, no marker.
_NEUTRAL = MethodStyle("", "", None, None, "-")


def method_style(key: str | None, *, among: Sequence[str | None] | None = None) -> MethodStyle:
    """The style of method ``key`` in the two-phase figures.

    Parameters
    ----------
    key : str or None
        A key of :data:`mixreg.methods.METHODS` (its style), a key given a style by
        :func:`mixreg.methods.register_style` (that style), any other key (an automatic style:
        :func:`mixreg.methods.styles_for`), or ``None`` for a line that is no method (a neutral
        style: matplotlib's colour cycle, no marker).
    among : sequence of str, optional
        Every key the figure draws, so that its unregistered keys get distinct automatic styles;
        ``None``: ``key`` alone.

    Returns
    -------
    MethodStyle
        Its label, short name, colour, marker and line style.
    """
    if key is None:
        return _NEUTRAL
    return styles_for([key, *(other for other in among or () if other is not None)], view=METHODS)[key]


def series_label(key: str | None, label: str | None) -> str:
    """The legend label of a series of method ``key``.

    Parameters
    ----------
    key : str or None
        The method (as in :func:`method_style`).
    label : str or None
        The caller's label, if any.

    Returns
    -------
    str
        ``label`` when the caller gave one, else the registry's label of method ``key`` (the
        label of its registered or automatic style when :data:`~mixreg.methods.METHODS` lacks it).
    """
    if label is not None:
        return label
    if key is None:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got None: a series that is no method "
                         "needs a label")
    return method_label(key) if key in METHODS else method_style(key).label


def plain_tick(value: float, _pos: int | None = None) -> str:
    """Tick label without scientific notation: 0.03, 0.1, 2, 40.

    For :class:`matplotlib.ticker.FuncFormatter` (``ax.xaxis.set_major_formatter(plain_tick)``).

    Parameters
    ----------
    value : float
        The tick's value.
    _pos : int, optional
        The tick's position (unused; matplotlib passes it).

    Returns
    -------
    str
        ``value`` in ``%g`` format.

    Examples
    --------
    >>> plain_tick(0.03), plain_tick(40.0)
    ('0.03', '40')
    """
    return f"{value:g}"


class FigureNotDrawn(UserWarning):
    """A figure that the tables cannot give, and why, in the user's terms (see :func:`not_drawn`)."""


def not_drawn(name: str, reason: str) -> None:
    """Say that figure ``name`` is not drawn and why: a :class:`FigureNotDrawn` warning.

    For a legal run whose tables cannot give a figure (a crossing panel with one separation,
    a separation axis with one cluster): the tables are written all the same, the other figures
    are drawn, and the command line shows this as one line ``<name> not drawn: <reason>``.

    Parameters
    ----------
    name : str
        The figure's file name without suffix (``"success_vs_R_collapse"``).
    reason : str
        What it needs and what the run gave, naming the flag (``"the collapse panels need two
        r values; got --rs 1.0"``).

    Returns
    -------
    None
        The warning is issued (with ``stacklevel=2``: at the caller).
    """
    import warnings

    warnings.warn(f"{name} not drawn: {reason}", FigureNotDrawn, stacklevel=2)


#: Decimals (of the figure's width and height) to which :func:`save_figure` rounds the axes'
#: positions a constrained layout computes.  The layout's last bits differ from process to
#: process (seen: axes 2e-16 apart in two redraws of the same figure from the same tables), which
#: moved an antialiased pixel of a PNG and, once, a coordinate of a PDF; rounded, a redraw is
#: byte-identical.  1e-8 of a 6.9 in figure is 5e-6 pt, and a position's noise of a few units in
#: its last place crosses a rounding boundary about once in 1e7 positions.
LAYOUT_DECIMALS = 8


class _RoundedLayout(ConstrainedLayoutEngine):
    """A figure's constrained layout, then every axes' position rounded to
    ``LAYOUT_DECIMALS`` decimals (the axes stay in the layout)."""

    def __init__(self, base: ConstrainedLayoutEngine) -> None:
        LayoutEngine.__init__(self)  # not ConstrainedLayoutEngine's, which would set its defaults
        self._base = base

    def get(self) -> dict[str, Any]:
        return self._base.get()

    def set(self, **kwargs: Any) -> None:
        self._base.set(**kwargs)

    def execute(self, fig: Any) -> Any:
        done = self._base.execute(fig)
        for ax in fig.axes:
            if ax.get_in_layout():
                corners = np.round(ax.get_position(original=True).get_points(), LAYOUT_DECIMALS)
                ax.set_position(Bbox(corners), which="both")
                ax.set_in_layout(True)  # set_position takes an axes out of the layout
        return done


def save_figure(fig: Figure, path_without_suffix: str | os.PathLike[str], *more_paths: str | os.PathLike[str],
                caption: str | None = None) -> list[Path]:
    """Write ``<path>.png`` and ``<path>.pdf`` for each path given, then close ``fig``.

    The PNG's resolution is the style's (``rcParams["savefig.dpi"]``, see
    :func:`mixreg.plotting.use_style`); the PDF embeds TrueType fonts whatever the rcParams say
    (``pdf.fonttype = 42``: journals refuse matplotlib's default Type 3) and carries no timestamp,
    so that a redraw is byte-identical (a constrained layout's axes positions rounded to
    eight decimals of the figure, whose last bits otherwise differ between processes).  Both record the
    style they were drawn in
    (:func:`mixreg.plotting.current_style`): the PNG's ``Description`` and the PDF's ``Subject``
    read ``mixreg figure, style <name>``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path_without_suffix, *more_paths : path-like
        Where to write; the suffixes are added.
    caption : str, optional
        The figure's caption (what it shows, its notes and exclusions): written to
        ``<path>.caption.txt`` beside each figure (UTF-8: captions hold Δ, σ, ...), so that a
        paper's caption can quote it and the figure itself keeps at most a short footnote.

    Returns
    -------
    list of pathlib.Path
        The written paths: PNG, PDF (and the caption) for each path in order.
    """
    import matplotlib as mpl

    from ._style import current_style

    engine = fig.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine) and not isinstance(engine, _RoundedLayout):
        fig.set_layout_engine(_RoundedLayout(engine))
    written: list[Path] = []
    drawn_in = f"mixreg figure, style {current_style() or 'none (matplotlib rcParams as found)'}"
    for path in (path_without_suffix, *more_paths):
        base = Path(path)
        base.parent.mkdir(parents=True, exist_ok=True)
        png, pdf = base.with_suffix(".png"), base.with_suffix(".pdf")
        with mpl.rc_context({"pdf.fonttype": 42, "ps.fonttype": 42}):
            fig.savefig(png, metadata={"Description": drawn_in})
            # no timestamp: a redraw is byte-identical
            fig.savefig(pdf, metadata={"CreationDate": None, "Subject": drawn_in})
        written += [png, pdf]
        if caption:
            text = base.with_name(base.name + ".caption.txt")
            text.write_text(caption.rstrip() + "\n", encoding="utf-8")
            written.append(text)
    plt.close(fig)
    return written


def median_errorbars(ax: Axes, x: Any, series: Sequence[tuple[str | None, str | None, Any, Any, Any]], *,
                     spread: float = 0.0) -> list[ErrorbarContainer]:
    """Median markers with quartile bars for each ``(key, label, median, low, high)``.

    Colour, marker and line style are the registry's for ``key`` (an automatic style, distinct
    for each unregistered key of ``series``: :func:`method_style`); ``label=None`` takes the
    registry's label too.  With ``spread > 0`` the series are shifted side by side on a linear
    x axis and drawn without connecting lines.  Line width, marker size and the bars' caps are
    the style's (``rcParams["lines.linewidth"]``, ``["lines.markersize"]``, ``["errorbar.capsize"]``).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        Where to draw.
    x : array-like of shape (n,)
        The x values, shared by the series.
    series : sequence of (key, label, median, low, high)
        Per series: the method (as in :func:`method_style`), its label or ``None``, and arrays of
        shape (n,) of the medians and of the lower and upper quartiles.
    spread : float, default 0.0
        The shift between neighbouring series, in x units.

    Returns
    -------
    list of matplotlib.container.ErrorbarContainer
        One per series, in order.
    """
    n = len(series)
    keys = [key for key, *_ in series]
    drawn = []
    for j, (key, label, med, lo, hi) in enumerate(series):
        style = method_style(key, among=keys)
        shift = spread * (j - (n - 1) / 2)
        xs = np.asarray(x, dtype=float) + shift
        med, lo, hi = (np.asarray(v, dtype=float) for v in (med, lo, hi))
        drawn.append(ax.errorbar(xs, med, yerr=[med - lo, hi - med], marker=style.marker or "o",
                                 ls=style.linestyle if spread == 0 else "none", color=style.color,
                                 label=series_label(key, label)))
    return drawn


# --------------------------------------------------------------------------------------------
# Legend entries against what is drawn
# --------------------------------------------------------------------------------------------

_NO_LINE = ("None", "none", "", " ")


def _rgb(colour):
    """The RGB of a colour (alpha dropped) or ``None`` for no colour (``"none"``, alpha 0)."""
    rgba = matplotlib.colors.to_rgba(colour)
    return None if rgba[3] == 0 else np.array(rgba[:3])


def _colours(values):
    """The RGBs of a colour or an array of colours (an empty list for none)."""
    arr = np.asarray(values, dtype=object) if not isinstance(values, str) else None
    if arr is None or (arr.ndim == 1 and arr.size in (3, 4) and all(np.isscalar(v) for v in arr)):
        found = [_rgb(values)]
    else:
        found = [_rgb(tuple(v)) for v in np.asarray(values, dtype=float).reshape(-1, 4)]
    return [c for c in found if c is not None]


def _same_colour(entry, drawn):
    """An achromatic entry colour (black, greys) stands for any colour (the style legends of
    this package draw "dashed: the bound" in grey over coloured series); another must be one of
    ``drawn``'s colours."""
    if not entry:
        return True
    return any(np.ptp(e) < 1e-6 or any(np.abs(e - d).max() < 2e-3 for d in drawn) for e in entry)


def _dashes(line):
    """The unscaled dash pattern of a line (``None``: solid; ``"none"``: no line)."""
    if line.get_linestyle() in _NO_LINE or line.get_linewidth() <= 0:
        return "none"
    offset, seq = getattr(line, "_unscaled_dash_pattern", (0, None))
    return None if not seq else tuple(np.round(np.asarray(seq, dtype=float), 6))


def _marker(line):
    marker = line.get_marker()
    return None if marker is None or str(marker) in _NO_LINE else str(marker)


def _in_box(points, box):
    points = points[np.isfinite(points).all(axis=1)]
    return points[(points[:, 0] >= box.x0 - 0.5) & (points[:, 0] <= box.x1 + 0.5)
                  & (points[:, 1] >= box.y0 - 0.5) & (points[:, 1] <= box.y1 + 0.5)]


def _line_shown(line, ax):
    """A finite point of ``line`` inside ``ax`` (its markers), or a finite segment crossing it."""
    if not line.get_visible() or line.get_alpha() == 0:
        return False
    xy = np.asarray(line.get_xydata(), dtype=float).reshape(-1, 2)
    if xy.size == 0:
        return False
    display = line.get_transform().transform(xy)
    if _in_box(display, ax.bbox).size:
        return True
    if _dashes(line) == "none":
        return False
    finite = np.isfinite(display).all(axis=1)
    segments = finite[:-1] & finite[1:]
    return any(matplotlib.path.Path(display[i:i + 2]).intersects_bbox(ax.bbox, filled=False)
               for i in np.flatnonzero(segments))


def _paths_shown(artist, ax):
    """A path of a patch or a collection with an extent overlapping ``ax`` (offsets counted)."""
    if not artist.get_visible() or artist.get_alpha() == 0:
        return False
    if isinstance(artist, matplotlib.patches.Patch):
        paths, transform = [artist.get_path()], artist.get_transform()
    else:
        paths, transform = artist.get_paths(), artist.get_transform()
        if isinstance(artist, matplotlib.collections.PathCollection):
            # markers (a scatter's points): one of the offsets in the axes
            offsets = np.asarray(artist.get_offsets(), dtype=float).reshape(-1, 2)
            return bool(_in_box(artist.get_offset_transform().transform(offsets), ax.bbox).size)
    for path in paths:
        vertices = path.vertices[np.isfinite(path.vertices).all(axis=1)]
        if len(vertices) == 0:
            continue
        box = matplotlib.path.Path(vertices).get_extents(transform)
        if box.x1 >= ax.bbox.x0 and box.x0 <= ax.bbox.x1 and box.y1 >= ax.bbox.y0 and box.y0 <= ax.bbox.y1:
            return True
    return False


def _face_or_edge(artist):
    """The colours an area artist is seen by: its face, or its edge where the face is empty."""
    faces = _colours(artist.get_facecolor())
    return faces or _colours(artist.get_edgecolor())


def _line_part(handle, colour, axes):
    """Some line of ``axes`` with the dash pattern of ``handle``, of its colour, inside its axes."""
    dashes = _dashes(handle)
    return any(_dashes(line) == dashes and _same_colour(colour, _colours(line.get_color())) and _line_shown(line, ax)
               for ax in axes for line in ax.lines)


def _marker_path(marker):
    style = matplotlib.markers.MarkerStyle(marker)
    return style.get_path().transformed(style.get_transform()).vertices


def _same_shape(vertices, coll):
    """A scatter's marker has the shape ``vertices`` (a marker path in marker units), or any
    shape when ``vertices`` is ``None``."""
    if vertices is None:
        return True
    paths = coll.get_paths()
    return any(len(p.vertices) == len(vertices) and np.allclose(p.vertices, vertices) for p in paths)


def _marker_part(marker, colour, axes, shape=None):
    """Some line of ``axes`` with ``marker`` (``None``: lines do not count), or some scatter of
    that marker's shape (or of ``shape``, a marker path's vertices), of ``colour``, with a point
    inside its axes."""
    if marker is not None and shape is None:
        shape = _marker_path(marker)
    for ax in axes:
        for line in ax.lines if marker is not None else ():
            drawn = _colours(line.get_color()) + _colours(line.get_markerfacecolor())
            if _marker(line) == marker and _same_colour(colour, drawn) and _line_shown(line, ax):
                return True
        for coll in ax.collections:
            if isinstance(coll, matplotlib.collections.PathCollection) and _same_shape(shape, coll) and \
                    _same_colour(colour, _face_or_edge(coll)) and _paths_shown(coll, ax):
                return True
    return False


def _matches(handle, axes):
    """Whether the artists drawn in ``axes`` show what the legend handle ``handle`` shows.

    A line entry with a marker is drawn when both its line and its marker are, by one artist or
    by two (a crossing drawn as an interval line and a marker at the value)."""
    if isinstance(handle, matplotlib.lines.Line2D):
        has_line, has_marker = _dashes(handle) != "none", _marker(handle) is not None
        if not (has_line or has_marker):
            return False
        colour = _colours(handle.get_color()) or _colours(handle.get_markerfacecolor())
        together = has_line and has_marker and any(
            _dashes(line) == _dashes(handle) and _marker(line) == _marker(handle)
            and _same_colour(colour, _colours(line.get_color())) and _line_shown(line, ax)
            for ax in axes for line in ax.lines)
        return together or ((not has_line or _line_part(handle, colour, axes))
                            and (not has_marker or _marker_part(_marker(handle), colour, axes)))
    if isinstance(handle, matplotlib.collections.LineCollection):
        colour = _colours(handle.get_color())
        return any(isinstance(c, matplotlib.collections.LineCollection)
                   and _same_colour(colour, _colours(c.get_color())) and _paths_shown(c, ax)
                   for ax in axes for c in ax.collections)
    if isinstance(handle, (matplotlib.patches.Patch, matplotlib.collections.Collection)):
        colour = _face_or_edge(handle)
        if not colour:
            return False
        if isinstance(handle, matplotlib.collections.PathCollection):   # a scatter's entry
            paths = handle.get_paths()
            return _marker_part(None, colour, axes, paths[0].vertices if len(paths) else None)
        return any(_same_colour(colour, _face_or_edge(a)) and _paths_shown(a, ax)
                   for ax in axes for a in list(ax.patches) + list(ax.collections)
                   if not isinstance(a, matplotlib.collections.LineCollection))
    return False


def _legends(fig):
    legends = list(fig.legends)
    for ax in fig.axes:
        if ax.get_legend() is not None:
            legends.append(ax.get_legend())
    for sub in getattr(fig, "subfigs", ()):
        legends += _legends(sub)
    return legends


def undrawn_legend_entries(fig: Figure) -> list[str]:
    """The legend entries of ``fig`` that show nothing drawn: an empty list when every entry is.

    An entry is drawn when some artist of some axes of the figure looks like its handle and
    shows data inside that axes: for a line entry, a line with the same dash pattern with a
    finite point in the axes or a segment crossing them (and, when the entry has a marker, a
    line or a scatter with that marker and a point in the axes: the same artist or another, as
    an interval drawn as a line with its estimate as a marker); for a marker-only entry, a line
    or a scatter with that marker and a point in the axes; for a patch entry (a band, a bar, an
    area), a patch or a collection overlapping the axes.
    The colours must agree too, except that an achromatic entry (black, a grey) stands for any
    colour: a style legend ("dashed: the bound") drawn in grey over coloured series.  Handles
    are compared by style because a legend keeps copies of its handles, and because the figures
    of this package list proxies (``Line2D([], [], ...)``) rather than the artists themselves.
    So an entry for a series whose values are all off the scale, or all ``nan``, or empty, and
    an entry with neither a line nor a marker, are listed.  Draws the figure once (to settle
    its limits and layout).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Its legends (the figure's and every axes') are checked against its axes.

    Returns
    -------
    list of str
        One line per undrawn entry: the entry's label and the handle's type.

    See Also
    --------
    save_figure : where a figure whose legends pass this check is written.

    Examples
    --------
    >>> from mixreg.plotting import new_figure
    >>> fig, (ax,) = new_figure()
    >>> _ = ax.plot([1, 2, 3], [1, 4, 9], "-o", label="data")
    >>> _ = ax.plot([1, 2, 3], [50, 60, 70], "--", label="bound")   # above the axis
    >>> _ = ax.set_ylim(0, 10)
    >>> _ = ax.legend()
    >>> undrawn_legend_entries(fig)
    ['bound (Line2D)']
    """
    fig.canvas.draw()
    axes = [ax for ax in fig.axes if ax.get_visible()]
    problems = []
    for legend in _legends(fig):
        for handle, text in zip(legend.legend_handles, legend.get_texts()):
            if handle is None or not _matches(handle, axes):
                problems.append(f"{text.get_text()} ({type(handle).__name__})")
    return problems
