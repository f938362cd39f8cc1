"""Named figure styles for papers, and the figure layout every plot function shares.

A style is a set of matplotlib rcParams (:data:`STYLES`): the figure's width, the font sizes, the
line and marker sizes, a colour-blind-safe colour cycle, and TrueType fonts in PDF and PostScript
output (``pdf.fonttype = 42``: matplotlib's default, Type 3, is refused by IEEE PDF eXpress and
several publishers).  :func:`use_style` applies one, globally or for a ``with`` block; every plot
function of mixreg reads the current rcParams, so the same call draws a figure for a slide, a
two-column paper's full width (``"two-column"``, 6.9 in) or one column (``"one-column"``, 3.3 in).

:func:`new_figure` makes a figure of ``n`` panels as wide as the style says, with as many panel
columns as fit (at least :data:`MIN_PANEL_WIDTH` inches each), so that a six-panel figure is
three wide at 6.9 in and two wide at 3.3 in; its layout is matplotlib's constrained layout, which
keeps a legend placed with ``fig.legend(loc="outside upper center")`` and a footnote added with
:func:`add_footnote` clear of the panels.
"""

from __future__ import annotations

import math
import os
import re
import textwrap
import warnings
from collections.abc import Mapping

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler

__all__ = ["STYLES", "DEFAULT_STYLE", "MIN_PANEL_WIDTH", "use_style", "current_style", "new_figure", "axes_for",
           "legend_above", "wrap_text", "axes_width", "fit_titles", "keep_aspect", "add_footnote", "figure_width"]

#: The Okabe-Ito palette (Okabe and Ito, "Color Universal Design", 2008), black last: the colour
#: cycle of every style.  :func:`mixreg.methods.styles_for` extends it to any number of methods.
_OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")

_COMMON = {
    "pdf.fonttype": 42,                 # TrueType, not Type 3
    "ps.fonttype": 42,
    "svg.fonttype": "none",             # text as text
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],  # shipped with matplotlib: the same glyphs on every machine
    "mathtext.fontset": "dejavusans",
    "axes.prop_cycle": cycler(color=_OKABE_ITO),
    "axes.grid": False,
    "legend.frameon": False,
    "savefig.bbox": None,               # the style's width is the figure's width
    "figure.dpi": 100,
}

#: The named styles: rcParams applied on top of matplotlib's defaults by :func:`use_style`.
STYLES: dict[str, dict] = {
    # a figure across both columns of a two-column paper (IEEE, ACM, NeurIPS full text width 6.9 in)
    "two-column": {
        **_COMMON,
        "figure.figsize": (6.9, 4.3),
        "font.size": 9, "axes.titlesize": 9, "axes.labelsize": 9, "figure.titlesize": 10,
        "xtick.labelsize": 8, "ytick.labelsize": 8, "legend.fontsize": 8, "legend.title_fontsize": 8,
        "lines.linewidth": 1.3, "lines.markersize": 4.5, "axes.linewidth": 0.7, "patch.linewidth": 0.7,
        "xtick.major.width": 0.7, "ytick.major.width": 0.7, "grid.linewidth": 0.5,
        "savefig.dpi": 150,
    },
    # one column of a two-column paper (3.3 in)
    "one-column": {
        **_COMMON,
        "figure.figsize": (3.3, 2.5),
        "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "figure.titlesize": 8,
        "xtick.labelsize": 7, "ytick.labelsize": 7, "legend.fontsize": 7, "legend.title_fontsize": 7,
        "lines.linewidth": 1.0, "lines.markersize": 3.5, "axes.linewidth": 0.6, "patch.linewidth": 0.6,
        "xtick.major.width": 0.6, "ytick.major.width": 0.6, "xtick.major.size": 2.5, "ytick.major.size": 2.5,
        "grid.linewidth": 0.4, "legend.handlelength": 1.6,
        "savefig.dpi": 300,
    },
    # a slide or a screen: wider, larger type
    "slides": {
        **_COMMON,
        "figure.figsize": (10.0, 5.6),
        "font.size": 12, "axes.titlesize": 12, "axes.labelsize": 12, "figure.titlesize": 14,
        "xtick.labelsize": 11, "ytick.labelsize": 11, "legend.fontsize": 11, "legend.title_fontsize": 11,
        "lines.linewidth": 1.8, "lines.markersize": 6,
        "savefig.dpi": 120,
    },
}

#: The style the command line draws in (``--style``) and the committed figures are drawn in.
DEFAULT_STYLE = "two-column"

#: The narrowest panel :func:`new_figure` lays out, in inches.
MIN_PANEL_WIDTH = 1.6


#: The name of the style last applied by :func:`use_style` (see :func:`current_style`).
_current = [None]


def current_style():
    """The style last applied by :func:`use_style`, as a name for the figures' metadata.

    A name of :data:`STYLES`, ``"file <name>.mplstyle"`` for a style file, ``"custom"`` for a dict
    or when ``use_style`` was given overrides, ``None`` when no style was applied (matplotlib's
    rcParams as they are).  :func:`mixreg.plotting.save_figure` writes it into every PNG and PDF.
    """
    return _current[0]


class _Applied:
    """What :func:`use_style` returns: the style stays applied, or, in a ``with`` block, until its end."""

    def __init__(self, saved, name):
        self._saved = saved
        self._name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        dict.update(mpl.rcParams, self._saved)   # as matplotlib's rc_context restores: no re-validation
        _current[0] = self._name
        return False


def _style_name(style, overrides):
    if overrides or isinstance(style, Mapping):
        return "custom"
    return str(style) if str(style) in STYLES else f"file {os.path.basename(os.fspath(style))}"


def _style_params(style):
    if isinstance(style, Mapping):
        return dict(style)
    if isinstance(style, (str, os.PathLike)):
        if str(style) in STYLES:
            return dict(STYLES[str(style)])
        if os.path.isfile(style):
            return dict(mpl.rc_params_from_file(os.fspath(style), use_default_template=False))
        raise ValueError(f"style must be one of {', '.join(sorted(STYLES))}, a .mplstyle file or a dict of "
                         f"rcParams; got {style!r}")
    raise TypeError(f"style must be a name, a path or a dict of rcParams; got {type(style).__name__}")


def use_style(style=DEFAULT_STYLE, **overrides):
    """Apply a figure style: matplotlib's defaults, then the style, then ``overrides``.

    Parameters
    ----------
    style : str, path-like or dict, default :data:`DEFAULT_STYLE`
        A name of :data:`STYLES` (``"two-column"``: 6.9 in wide, 9 pt; ``"one-column"``: 3.3 in,
        8 pt; ``"slides"``), a ``.mplstyle`` file, or a dict of rcParams.
    **overrides
        rcParams applied last, with dots written as underscores (``font_size=10``) or given in a
        dict as ``style``.

    Returns
    -------
    context manager
        The style is applied on return; used in a ``with`` block, the previous rcParams come back
        at its end (as :func:`matplotlib.pyplot.style.context` does).

    Notes
    -----
    Starting from matplotlib's defaults (the backend kept) makes a figure depend on the style
    alone, not on a machine's ``matplotlibrc``: the command line's ``--style`` and ``--redraw``
    draw byte-identical figures wherever they run.  Every style writes TrueType fonts into PDF
    and PostScript files (``pdf.fonttype = 42``).

    Examples
    --------
    >>> from mixreg.plotting import use_style
    >>> with use_style("one-column"):
    ...     import matplotlib as mpl
    ...     mpl.rcParams["figure.figsize"][0]
    3.3
    """
    params = _style_params(style)
    params.update({key.replace("_", "."): value for key, value in overrides.items()})
    name = _style_name(style, overrides)
    saved, saved_name = mpl.rcParams.copy(), _current[0]
    backend = mpl.rcParams["backend"] if "backend" in dict.keys(mpl.rcParams) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # deprecated keys among the defaults
        defaults = {key: value for key, value in mpl.rcParamsDefault.items() if key != "backend"}
        dict.update(mpl.rcParams, defaults)
    if backend is not None:
        dict.__setitem__(mpl.rcParams, "backend", backend)
    try:
        mpl.rcParams.update(params)     # validated: a wrong key or value fails here, naming it
    except Exception:
        dict.update(mpl.rcParams, saved)
        raise
    _current[0] = name
    return _Applied(saved, saved_name)


def figure_width():
    """The current style's figure width in inches (``rcParams["figure.figsize"][0]``)."""
    return float(mpl.rcParams["figure.figsize"][0])


def new_figure(n_panels=1, *, aspect=0.75, max_cols=None, width=None, legend_rows=0, **subplot_kw):
    """A figure of ``n_panels`` panels, as wide as the style, with as many columns as fit.

    Parameters
    ----------
    n_panels : int, default 1
        The panels drawn.
    aspect : float, default 0.75
        Each panel's height over its width.
    max_cols : int, optional
        At most this many panel columns (default: ``n_panels``).
    width : float, optional
        The figure's width in inches (default: the style's, :func:`figure_width`).
    legend_rows : int, default 0
        Rows of a legend to be placed above the panels (``fig.legend(loc="outside upper
        center")``): the figure is made taller by that many lines of legend text.
    **subplot_kw
        Passed to :meth:`matplotlib.figure.Figure.subplots` (``sharex``, ``sharey``, ...).

    Returns
    -------
    fig : matplotlib.figure.Figure
        With constrained layout.
    axes : numpy.ndarray of Axes, shape (n_panels,)
        The panels in reading order; a grid's unused cells are removed.
    """
    if n_panels < 1:
        raise ValueError(f"n_panels must be >= 1; got {n_panels}")
    width = figure_width() if width is None else float(width)
    fit = max(1, int(width // MIN_PANEL_WIDTH))
    cols = max(1, min(n_panels, fit, n_panels if max_cols is None else int(max_cols)))
    rows = math.ceil(n_panels / cols)
    cols = math.ceil(n_panels / rows)       # as few empty cells as the rows allow: 6 panels are 3 x 2
    font = mpl.font_manager.FontProperties(size=mpl.rcParams["legend.fontsize"]).get_size_in_points()
    legend_height = legend_rows * 1.45 * font / 72.0
    height = rows * (width / cols) * aspect + legend_height
    fig = plt.figure(figsize=(width, height), layout="constrained")
    grid = fig.subplots(rows, cols, squeeze=False, **subplot_kw)
    flat = grid.ravel()
    for ax in flat[n_panels:]:
        ax.remove()
    return fig, np.asarray(list(flat[:n_panels]), dtype=object)


def add_footnote(fig, text):
    """A short footnote under a figure, left-aligned, in the legend's size; ``None``/"" draws nothing.

    The figure is made taller by the footnote's lines, and its constrained layout (from
    :func:`new_figure`) keeps panels and legend above it.  The full text of a figure's notes
    belongs in its caption file (:func:`mixreg.plotting.save_figure`, ``caption=``).

    Returns
    -------
    matplotlib.text.Text or None
    """
    if not text:
        return None
    size = mpl.font_manager.FontProperties(size=mpl.rcParams["legend.fontsize"]).get_size_in_points()
    lines = str(text).count("\n") + 1
    extra = lines * 1.35 * size / 72.0 + 0.04
    height = fig.get_figheight() + extra
    fig.set_figheight(height)
    engine = fig.get_layout_engine()
    if engine is not None and hasattr(engine, "set"):
        engine.set(rect=(0.0, extra / height, 1.0, 1.0 - extra / height))
    return fig.text(0.005, 0.02 / height, text, ha="left", va="bottom", fontsize=size)


def axes_for(ax, n_panels, *, name="the figure", **new_figure_kw):
    """The figure and panels a plot function draws into: the caller's (``ax``) or new ones.

    Parameters
    ----------
    ax : Axes, sequence of Axes or None
        ``None``: a new figure of ``n_panels`` panels (:func:`new_figure` with ``new_figure_kw``);
        else exactly ``n_panels`` Axes (one Axes when ``n_panels`` is 1), drawn into as given.
    n_panels : int
    name : str
        The plot function, for the error message.

    Returns
    -------
    fig : Figure
    axes : list of Axes, length n_panels
    own : bool
        Whether the figure was made here (then the function may add a figure legend, a suptitle
        and a footnote; with the caller's axes it draws into them only).

    Raises
    ------
    ValueError
        When ``ax`` is not ``n_panels`` Axes.
    """
    if ax is None:
        fig, axes = new_figure(n_panels, **new_figure_kw)
        return fig, list(axes), True
    axes = [ax] if hasattr(ax, "plot") else list(np.ravel(np.asarray(ax, dtype=object)))
    if len(axes) != n_panels or not all(hasattr(a, "plot") for a in axes):
        raise ValueError(f"ax must be {n_panels} Axes for {name} (one per panel), or None for a figure of its "
                         f"own; got {len(axes)} object(s)")
    return axes[0].figure, axes, False


def legend_above(fig, handles, labels=None, *, title=None, max_cols=4):
    """A figure legend above the panels, in as many columns as fit in the figure's width.

    The figure is made taller by the legend's rows (so its panels keep their size); its layout
    must be constrained (:func:`new_figure`), which keeps the panels clear of it.

    Parameters
    ----------
    fig : Figure
    handles : list of Artist
    labels : list of str, optional
        Default: each handle's label.
    title : str, optional
    max_cols : int, default 4

    Returns
    -------
    matplotlib.legend.Legend
    """
    labels = [h.get_label() for h in handles] if labels is None else list(labels)
    renderer = fig.canvas.get_renderer()
    for ncol in range(max(1, min(len(handles), max_cols)), 0, -1):
        legend = fig.legend(handles, labels, title=title, loc="outside upper center", ncol=ncol)
        box = legend.get_window_extent(renderer)
        if box.width <= 0.98 * fig.bbox.width:
            break
        legend.remove()
        if ncol == 1:  # one column is still too wide: break its labels
            handle = box.width - max(t.get_window_extent(renderer).width for t in legend.get_texts())
            width = (0.98 * fig.bbox.width - handle) / fig.dpi
            labels = [wrap_text(label, width, size="legend.fontsize") for label in labels]
            legend = fig.legend(handles, labels, title=title, loc="outside upper center", ncol=1)
    rows = -(-len(handles) // ncol)
    lines = sum(max(label.count("\n") + 1 for label in labels[row * ncol:(row + 1) * ncol]) for row in range(rows))
    size = mpl.font_manager.FontProperties(size=mpl.rcParams["legend.fontsize"]).get_size_in_points()
    fig.set_figheight(fig.get_figheight() + (lines + (1 if title else 0) + 0.5) * 1.4 * size / 72.0)
    return legend


def wrap_text(text, width, *, size="axes.titlesize"):
    """``text`` broken into lines that fit ``width`` inches at the font size ``rcParams[size]``.

    Each line of ``text`` is wrapped on its own, at spaces only, never around ``=``, ``≈``, ``<``
    or ``>`` (``k = 2`` stays whole) nor at a non-breaking space (``"\\u00a0"``, written out as a
    plain space); an average DejaVu Sans character is taken as 0.56 of the font size, a little
    more than it is.
    """
    points = mpl.font_manager.FontProperties(size=mpl.rcParams[size]).get_size_in_points()
    chars = max(10, int(width * 72.0 / (0.56 * points)))
    def fill(line):
        kept = re.sub(r" ([=≈<>]) ", "\u00a0\\1\u00a0", line)  # "k = 2" stays on one line
        return textwrap.fill(kept, chars, break_long_words=False, break_on_hyphens=False).replace("\u00a0", " ")

    return "\n".join(fill(line) if line else line for line in str(text).split("\n"))


def axes_width(ax):
    """The width of ``ax`` in inches (before a constrained layout's final pass: close to it)."""
    return ax.get_position().width * ax.figure.get_figwidth()


def fit_titles(fig, axes, title=None):
    """Wrap the panels' titles (and the figure's ``title``) to their widths, and make the figure
    taller by their lines beyond the first, so that the panels keep their size.

    ``title`` is the figure's suptitle, or, when a legend is placed above the panels
    (:func:`legend_above`, which matplotlib would draw the suptitle over), that legend's title,
    in the suptitle's size.

    Call it after the panels are drawn and before :func:`add_footnote` (which fixes the layout's
    bottom margin as a fraction of the height).

    Returns
    -------
    matplotlib.text.Text or None
        The title drawn.
    """
    def points(key):
        return mpl.font_manager.FontProperties(size=mpl.rcParams[key]).get_size_in_points()

    extra, rows = 0.0, {}
    for ax in axes:
        text = ax.get_title()
        if text:
            text = wrap_text(text, 0.95 * axes_width(ax))
            ax.set_title(text)
            spec = ax.get_subplotspec()
            row = spec.rowspan.start if spec is not None else id(ax)
            rows[row] = max(rows.get(row, 1), text.count("\n") + 1)
    extra += sum(lines - 1 for lines in rows.values()) * 1.3 * points("axes.titlesize")
    suptitle = None
    if title:
        text = wrap_text(title, 0.95 * fig.get_figwidth(), size="figure.titlesize")
        above = [legend for legend in fig.legends if getattr(legend, "_outside_loc", None)]
        if above:  # matplotlib would draw a suptitle over a legend placed outside: the legend's title
            above[0].set_title(text, prop={"size": mpl.rcParams["figure.titlesize"]})
            suptitle = above[0].get_title()
        else:
            suptitle = fig.suptitle(text)
        extra += (text.count("\n") + 1) * 1.4 * points("figure.titlesize")
    fig.set_figheight(fig.get_figheight() + extra / 72.0)
    return suptitle


def keep_aspect(fig, axes, aspect, *, rounds=3):
    """Make ``fig`` taller until each row of ``axes`` is at least ``aspect`` times as high as wide.

    A constrained layout takes titles, labels and a legend above the panels out of the panels'
    height; a figure with several lines of panel titles or a secondary axis would squash them.
    This lays the figure out (without rendering it), measures each row's panels and adds what
    they lack, a few times over (the layout moves as the figure grows).  Call it before
    :func:`add_footnote`.
    """
    for _ in range(rounds):
        fig.draw_without_rendering()
        lacking = {}
        for ax in axes:
            box = ax.get_position()
            width, height = box.width * fig.get_figwidth(), box.height * fig.get_figheight()
            spec = ax.get_subplotspec()
            row = spec.rowspan.start if spec is not None else id(ax)
            lacking[row] = max(lacking.get(row, 0.0), aspect * width - height)
        extra = sum(max(0.0, value) for value in lacking.values())
        if extra < 0.02:
            return
        fig.set_figheight(fig.get_figheight() + extra)
