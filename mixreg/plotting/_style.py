"""Named figure styles for papers, and the figure layout every plot function shares.

A style is a set of matplotlib rcParams (:data:`STYLES`, read from this package's
``<name>.mplstyle`` files): the figure's width, the font sizes, the line, marker and error-bar cap
sizes, a colour-blind-safe colour cycle, and TrueType fonts in PDF and PostScript output
(``pdf.fonttype = 42``: matplotlib's default, Type 3, is refused by IEEE PDF eXpress and several
publishers).  A style file of one's own is read strictly: a line matplotlib cannot read is an
error naming it, not a warning followed by a figure drawn without it.  :func:`use_style` applies
a style, globally or for a ``with`` block; every plot function of mixreg reads the current
rcParams, so the same call draws a figure for a slide, a two-column paper's full width
(``"two-column"``, 6.9 in) or one column (``"one-column"``, 3.3 in).

:func:`new_figure` makes a figure of ``n`` panels as wide as the style says, with as many panel
columns as fit (at least :data:`MIN_PANEL_WIDTH` inches each), so that a six-panel figure is
three wide at 6.9 in and two wide at 3.3 in; its layout is matplotlib's constrained layout, which
keeps a legend placed with ``fig.legend(loc="outside upper center")`` and a footnote added with
:func:`add_footnote` clear of the panels.
"""

from __future__ import annotations

import difflib
import logging
import math
import os
import pathlib
import re
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

import matplotlib as mpl
import matplotlib.style
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.layout_engine import ConstrainedLayoutEngine, TightLayoutEngine
from matplotlib.legend import Legend
from matplotlib.text import Text

__all__ = ["STYLES", "DEFAULT_STYLE", "MIN_PANEL_WIDTH", "use_style", "current_style", "new_figure", "axes_for",
           "legend_above", "wrap_text", "axes_width", "fit_titles", "keep_aspect", "finish_panels", "add_footnote",
           "figure_width"]

#: The named styles, in the order the command line lists them; each is a ``.mplstyle`` file of this
#: package (``mixreg/plotting/<name>.mplstyle``), which a user may copy and edit for a journal.
_STYLE_NAMES = ("two-column", "one-column", "slides")

_HERE = pathlib.Path(__file__).resolve().parent

#: rcParams that are no style's (the backend, ...): refused in a style file, as matplotlib's own
#: ``style.use`` ignores them.
_NOT_STYLE = frozenset(getattr(matplotlib.style, "_STYLE_BLACKLIST", {"backend", "interactive", "timezone"}))


#: A style: a name of :data:`STYLES`, a ``.mplstyle`` file, or a dict of rcParams.
StyleLike: TypeAlias = "str | os.PathLike[str] | Mapping[str, Any]"


class _MatplotlibLog(logging.Handler):
    """Collects what matplotlib logs while it reads a style file (a bad line, key or value)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _complaint(record: logging.LogRecord) -> str:
    """What matplotlib logged about a style file, as one line naming the line (and the key)."""
    args = record.args
    if isinstance(args, Mapping) and "key" in args:  # "Bad key ...", its args a dict
        return f"line {args['line_no']} ({args['line']!r}): {args['key']!r} is no rcParam of matplotlib"
    if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[1], int):
        reason = record.msg.split(" in file", 1)[0].lower()       # "missing colon", "bad value", ...
        detail = f": {args[3]}" if len(args) > 3 else ""
        return f"line {args[1]} ({args[2]!r}): {reason}{detail}"
    return record.getMessage()


def _read_style_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The rcParams of the style file ``path``; a ValueError of one line at the first line that
    matplotlib cannot read (no colon, an unknown key, a bad value, a parameter that is no style's,
    a warning of any kind), where matplotlib would only log it and go on without the line."""
    logger = logging.getLogger("matplotlib")
    log, propagate = _MatplotlibLog(), logger.propagate
    logger.addHandler(log)
    logger.propagate = False    # said once, in the error below
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            try:
                read = mpl.rc_params_from_file(os.fspath(path), use_default_template=False)
            except UnicodeDecodeError:
                raise ValueError(f"style file {os.fspath(path)}: not a .mplstyle file (not UTF-8 text)") from None
    finally:
        logger.removeHandler(log)
        logger.propagate = propagate
    params: dict[str, Any] = {str(key): value for key, value in read.items()}
    complaints = [_complaint(record) for record in log.records]
    complaints += [str(warning.message) for warning in warned]
    complaints += [f"{key!r} is no style parameter (matplotlib's style files may not set it)"
                   for key in params if key in _NOT_STYLE]
    if complaints:
        first = " ".join(complaints[0].split())
        more = f" (and {len(complaints) - 1} more)" if len(complaints) > 1 else ""
        raise ValueError(f"style file {os.fspath(path)}: {first}{more}")
    return params


#: The named styles: rcParams applied on top of matplotlib's defaults by :func:`use_style`, read
#: from this package's ``<name>.mplstyle`` files: ``"two-column"`` (a figure across both columns
#: of a two-column paper: 6.9 in, 9 pt), ``"one-column"`` (3.3 in, 8 pt), ``"slides"`` (10 in,
#: 12 pt).  Each has the Okabe-Ito colour cycle and writes TrueType fonts into PDFs.
STYLES: dict[str, dict[str, Any]] = {name: _read_style_file(_HERE / f"{name}.mplstyle") for name in _STYLE_NAMES}

#: The style the command line draws in (``--style``) and the committed figures are drawn in.
DEFAULT_STYLE = "two-column"

#: The narrowest panel :func:`new_figure` lays out, in inches.
MIN_PANEL_WIDTH = 1.6


#: The name of the style last applied by :func:`use_style` (see :func:`current_style`).
_current: list[str | None] = [None]


def current_style() -> str | None:
    """The style last applied by :func:`use_style`, as a name for the figures' metadata.

    Returns
    -------
    str or None
        A name of :data:`STYLES`, ``"file <name>.mplstyle"`` for a style file, ``"custom"`` for a
        dict or when ``use_style`` was given overrides, ``None`` when no style was applied
        (matplotlib's rcParams as they are).  :func:`mixreg.plotting.save_figure` writes it into
        every PNG and PDF.
    """
    return _current[0]


def _as_dict(params: Any) -> dict[Any, Any]:
    """``mpl.rcParams`` as the dict it is, for ``dict.update(_as_dict(mpl.rcParams), ...)``: a
    restore without re-validation, as matplotlib's ``rc_context`` does."""
    return params


class _Applied:
    """What :func:`use_style` returns: the style stays applied, or, in a ``with`` block, until its end."""

    def __init__(self, saved: Mapping[Any, Any], name: str | None) -> None:
        self._saved = saved
        self._name = name

    def __enter__(self) -> _Applied:
        return self

    def __exit__(self, *exc_info: object) -> Literal[False]:
        dict.update(_as_dict(mpl.rcParams), self._saved)   # as matplotlib's rc_context restores: no re-validation
        _current[0] = self._name
        return False


def _style_name(style: StyleLike, overrides: Mapping[str, Any]) -> str:
    if overrides or isinstance(style, Mapping):
        return "custom"
    return str(style) if str(style) in STYLES else f"file {os.path.basename(os.fspath(style))}"


def _style_params(style: StyleLike) -> dict[str, Any]:
    if isinstance(style, Mapping):
        return dict(style)
    if isinstance(style, (str, os.PathLike)):
        if str(style) in STYLES:
            return dict(STYLES[str(style)])
        if os.path.isfile(style):
            return _read_style_file(style)
        raise ValueError(f"style must be one of {', '.join(STYLES)}, a .mplstyle file or a dict of "
                         f"rcParams; got {style!r}")
    raise TypeError(f"style must be a name, a path or a dict of rcParams; got {type(style).__name__}")


def _rc_key(keyword: str) -> str:
    """The rcParam that the keyword ``keyword`` of :func:`use_style` names: the one whose dots
    written as underscores spell it (``legend_title_fontsize``: ``legend.title_fontsize``)."""
    if keyword in mpl.rcParams:
        return keyword
    keys = [key for key in mpl.rcParams.keys() if key.replace(".", "_") == keyword]
    if len(keys) == 1:
        return keys[0]
    if keys:
        raise ValueError(f"use_style: the keyword {keyword!r} names several rcParams ({', '.join(keys)}); "
                         f"pass the one meant in a dict as style")
    near = difflib.get_close_matches(keyword, [key.replace(".", "_") for key in mpl.rcParams.keys()], n=3)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    raise ValueError(f"use_style: the keyword {keyword!r} is no rcParam of matplotlib (write its dots as "
                     f"underscores: font_size=10 for 'font.size'){hint}")


def use_style(style: StyleLike = DEFAULT_STYLE, **overrides: Any) -> _Applied:
    """Apply a figure style: matplotlib's defaults, then the style, then ``overrides``.

    Parameters
    ----------
    style : str, path-like or dict, default :data:`DEFAULT_STYLE`
        A name of :data:`STYLES` (``"two-column"``: 6.9 in wide, 9 pt; ``"one-column"``: 3.3 in,
        8 pt; ``"slides"``), a ``.mplstyle`` file, or a dict of rcParams.
    **overrides
        rcParams applied last, with dots written as underscores (``font_size=10``,
        ``legend_title_fontsize=6`` for ``legend.title_fontsize``), or given in a dict as ``style``.

    Returns
    -------
    context manager
        The style is applied on return; used in a ``with`` block, the previous rcParams come back
        at its end (as :func:`matplotlib.pyplot.style.context` does).

    Raises
    ------
    ValueError
        One line, the rcParams unchanged: for a name that is no style and no file; for a style
        file that matplotlib cannot read in full (naming the file and its first bad line: no
        colon, an unknown key, a bad value), where matplotlib itself would only log a warning and
        draw without the line; for a keyword that names no rcParam; for a bad value.

    Notes
    -----
    Starting from matplotlib's defaults (the backend kept) makes a figure depend on the style
    alone, not on a machine's ``matplotlibrc``: the command line's ``--style`` and ``--redraw``
    draw byte-identical figures wherever they run.  Every style writes TrueType fonts into PDF
    and PostScript files (``pdf.fonttype = 42``).

    Examples
    --------
    >>> from mixreg.plotting import use_style
    >>> with use_style("one-column", legend_title_fontsize=6):
    ...     import matplotlib as mpl
    ...     mpl.rcParams["figure.figsize"][0], mpl.rcParams["legend.title_fontsize"]
    (3.3, 6.0)
    """
    params = _style_params(style)
    params.update({_rc_key(key): value for key, value in overrides.items()})
    name = _style_name(style, overrides)
    saved, saved_name = mpl.rcParams.copy(), _current[0]
    backend = mpl.rcParams["backend"] if "backend" in dict.keys(mpl.rcParams) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # deprecated keys among the defaults
        defaults = {key: value for key, value in mpl.rcParamsDefault.items() if key != "backend"}
        dict.update(_as_dict(mpl.rcParams), defaults)
    if backend is not None:
        dict.__setitem__(mpl.rcParams, "backend", backend)
    try:
        for key, value in params.items():
            mpl.rcParams[key] = value   # type: ignore[index]  # validated: a wrong key or value fails here, naming it
    except Exception:
        dict.update(_as_dict(mpl.rcParams), saved)
        raise
    _current[0] = name
    return _Applied(saved, saved_name)


def _rc(key: str) -> Any:
    """``rcParams[key]`` for a key known at run time only (matplotlib's stubs type the keys as literals)."""
    return mpl.rcParams[key]  # type: ignore[index]


def _points(key: str) -> float:
    """The font size ``rcParams[key]`` (a number or ``"small"``, ...) in points."""
    return float(mpl.font_manager.FontProperties(size=_rc(key)).get_size_in_points())


def _figure_of(ax: Axes) -> Figure:
    """The figure of the axes ``ax`` (the root figure when ``ax`` is in a subfigure)."""
    fig = ax.get_figure(root=True)
    if fig is None:
        raise ValueError("ax must be Axes in a figure; got Axes removed from theirs")
    return fig


def figure_width() -> float:
    """The current style's figure width.

    Returns
    -------
    float
        In inches: ``rcParams["figure.figsize"][0]``, the width :func:`new_figure` gives a figure.
    """
    return float(mpl.rcParams["figure.figsize"][0])


def new_figure(n_panels: int = 1, *, aspect: float = 0.75, max_cols: int | None = None, width: float | None = None,
               legend_rows: int = 0, **subplot_kw: Any) -> tuple[Figure, np.ndarray]:
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
    font = _points("legend.fontsize")
    legend_height = legend_rows * 1.45 * font / 72.0
    height = rows * (width / cols) * aspect + legend_height
    fig = plt.figure(figsize=(width, height), layout="constrained")
    grid = fig.subplots(rows, cols, squeeze=False, **subplot_kw)
    flat = grid.ravel()
    for ax in flat[n_panels:]:
        ax.remove()
    return fig, np.asarray(list(flat[:n_panels]), dtype=object)


def add_footnote(fig: Figure, text: str | None) -> Text | None:
    """A short footnote under a figure, left-aligned, in the legend's size.

    The figure is made taller by the footnote's lines, and its constrained layout (from
    :func:`new_figure`) keeps panels and legend above it.  The full text of a figure's notes
    belongs in its caption file (:func:`mixreg.plotting.save_figure`, ``caption=``).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    text : str or None
        The footnote, one short line; ``None`` or ``""`` draws nothing.

    Returns
    -------
    matplotlib.text.Text or None
        The footnote drawn, ``None`` when ``text`` is empty.
    """
    if not text:
        return None
    size = _points("legend.fontsize")
    lines = str(text).count("\n") + 1
    extra = lines * 1.35 * size / 72.0 + 0.04
    height = fig.get_figheight() + extra
    fig.set_figheight(height)
    engine = fig.get_layout_engine()
    if isinstance(engine, (ConstrainedLayoutEngine, TightLayoutEngine)):
        engine.set(rect=(0.0, extra / height, 1.0, 1.0 - extra / height))
    return fig.text(0.005, 0.02 / height, text, ha="left", va="bottom", fontsize=size)


def axes_for(ax: Axes | Sequence[Axes] | np.ndarray | None, n_panels: int, *, name: str = "the figure",
             **new_figure_kw: Any) -> tuple[Figure, list[Axes], bool]:
    """The figure and panels a plot function draws into: the caller's (``ax``) or new ones.

    Parameters
    ----------
    ax : Axes, sequence of Axes or None
        ``None``: a new figure of ``n_panels`` panels (:func:`new_figure` with ``new_figure_kw``);
        else exactly ``n_panels`` Axes (one Axes when ``n_panels`` is 1), drawn into as given.
    n_panels : int
        The panels the plot function draws.
    name : str, default ``"the figure"``
        The plot function, for the error message.
    **new_figure_kw
        Passed to :func:`new_figure` when ``ax`` is ``None``.

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
        When ``ax`` is not ``n_panels`` Axes of one figure.
    """
    if ax is None:
        fig, axes = new_figure(n_panels, **new_figure_kw)
        return fig, list(axes), True
    axes = [ax] if isinstance(ax, Axes) else list(np.ravel(np.asarray(ax, dtype=object)))
    if len(axes) != n_panels or not all(isinstance(a, Axes) for a in axes):
        wanted = (f"one Axes for {name}" if n_panels == 1 else
                  f"{n_panels} Axes for {name} (a sequence of {n_panels} Axes, one per panel)")
        raise ValueError(f"ax must be {wanted}, or None for a figure of its own; got {len(axes)} object(s)")
    figures = {_figure_of(a) for a in axes}
    if len(figures) != 1:
        raise ValueError(f"ax must be Axes of one figure for {name}; got Axes of {len(figures)} figures")
    return figures.pop(), axes, False


def legend_above(fig: Figure, handles: Sequence[Artist], labels: Sequence[str] | None = None, *,
                 title: str | None = None, max_cols: int = 4) -> Legend:
    """A figure legend above the panels, in as many columns as fit in the figure's width.

    The figure is made taller by the legend's rows (so its panels keep their size); its layout
    must be constrained (:func:`new_figure`), which keeps the panels clear of it.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        With constrained layout.
    handles : list of Artist
        The legend's entries.
    labels : list of str, optional
        Default: each handle's label.
    title : str, optional
        The legend's title.
    max_cols : int, default 4
        At most this many columns; fewer when they do not fit, and a single column's labels are
        wrapped (:func:`wrap_text`) when even it does not.

    Returns
    -------
    matplotlib.legend.Legend
        The figure legend, placed ``"outside upper center"``.
    """
    labels = [str(h.get_label()) for h in handles] if labels is None else [str(label) for label in labels]
    for ncol in range(max(1, min(len(handles), max_cols)), 0, -1):
        legend = fig.legend(handles, labels, title=title, loc="outside upper center", ncol=ncol)
        box = legend.get_window_extent()
        if box.width <= 0.98 * fig.bbox.width:
            break
        legend.remove()
        if ncol == 1:  # one column is still too wide: break its labels
            handle = box.width - max(t.get_window_extent().width for t in legend.get_texts())
            width = (0.98 * fig.bbox.width - handle) / fig.dpi
            labels = [wrap_text(label, width, size="legend.fontsize") for label in labels]
            legend = fig.legend(handles, labels, title=title, loc="outside upper center", ncol=1)
    rows = -(-len(handles) // ncol)
    lines = sum(max(label.count("\n") + 1 for label in labels[row * ncol:(row + 1) * ncol]) for row in range(rows))
    size = _points("legend.fontsize")
    fig.set_figheight(fig.get_figheight() + (lines + (1 if title else 0) + 0.5) * 1.4 * size / 72.0)
    return legend


def wrap_text(text: str, width: float, *, size: str = "axes.titlesize") -> str:
    """``text`` broken into lines that fit ``width`` inches at the font size ``rcParams[size]``.

    Each line of ``text`` is wrapped on its own, at spaces only, never around ``=``, ``≈``, ``<``
    or ``>`` (``k = 2`` stays whole) nor at a non-breaking space (``"\\u00a0"``, written out as a
    plain space); an average DejaVu Sans character is taken as 0.56 of the font size, a little
    more than it is.

    Parameters
    ----------
    text : str
        The text, possibly of several lines already.
    width : float
        The width to fit, in inches.
    size : str, default ``"axes.titlesize"``
        The rcParam of the font size the text is drawn in (``"legend.fontsize"``, ...).

    Returns
    -------
    str
        The text with line breaks; a word longer than a line stays whole.

    Examples
    --------
    >>> from mixreg.plotting import use_style, wrap_text
    >>> with use_style("one-column"):
    ...     print(wrap_text("success of IFCA against the separation (k = 2, m = 100)", 1.5))
    success of IFCA against
    the separation (k = 2,
    m = 100)
    """
    points = _points(size)
    chars = max(10, int(width * 72.0 / (0.56 * points)))
    def fill(line: str) -> str:
        kept = re.sub(r" ([=≈<>]) ", "\u00a0\\1\u00a0", line)  # "k = 2" stays on one line
        return textwrap.fill(kept, chars, break_long_words=False, break_on_hyphens=False).replace("\u00a0", " ")

    return "\n".join(fill(line) if line else line for line in str(text).split("\n"))


def axes_width(ax: Axes) -> float:
    """The width of the axes ``ax`` in inches.

    Parameters
    ----------
    ax : matplotlib.axes.Axes

    Returns
    -------
    float
        The axes' width as laid out so far (before a constrained layout's final pass: close to it).
    """
    return float(ax.get_position().width * _figure_of(ax).get_figwidth())


def fit_titles(fig: Figure, axes: Sequence[Axes], title: str | None = None) -> Text | None:
    """Wrap the panels' titles (and the figure's ``title``) to their widths, and make the figure
    taller by their lines beyond the first, so that the panels keep their size.

    ``title`` is the figure's suptitle, or, when a legend is placed above the panels
    (:func:`legend_above`, which matplotlib would draw the suptitle over), that legend's title,
    in the suptitle's size.

    Call it after the panels are drawn and before :func:`add_footnote` (which fixes the layout's
    bottom margin as a fraction of the height).

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    axes : sequence of Axes
        The panels, their titles set.
    title : str, optional
        The figure's title.

    Returns
    -------
    matplotlib.text.Text or None
        The title drawn, ``None`` without ``title``.
    """
    extra, rows = 0.0, dict[object, int]()
    for ax in axes:
        text = ax.get_title()
        if text:
            text = wrap_text(text, 0.95 * axes_width(ax))
            ax.set_title(text)
            spec = ax.get_subplotspec()
            row = spec.rowspan.start if spec is not None else id(ax)
            rows[row] = max(rows.get(row, 1), text.count("\n") + 1)
    extra += sum(lines - 1 for lines in rows.values()) * 1.3 * _points("axes.titlesize")
    suptitle = None
    if title:
        text = wrap_text(title, 0.95 * fig.get_figwidth(), size="figure.titlesize")
        above = [legend for legend in fig.legends if getattr(legend, "_outside_loc", None)]
        if above:  # matplotlib would draw a suptitle over a legend placed outside: the legend's title
            above[0].set_title(text, prop=FontProperties(size=mpl.rcParams["figure.titlesize"]))
            suptitle = above[0].get_title()
        else:
            suptitle = fig.suptitle(text)
        extra += (text.count("\n") + 1) * 1.4 * _points("figure.titlesize")
    fig.set_figheight(fig.get_figheight() + extra / 72.0)
    return suptitle


def keep_aspect(fig: Figure, axes: Sequence[Axes], aspect: float, *, rounds: int = 3) -> None:
    """Make ``fig`` taller until each row of ``axes`` is at least ``aspect`` times as high as wide.

    A constrained layout takes titles, labels and a legend above the panels out of the panels'
    height; a figure with several lines of panel titles or a secondary axis would squash them.
    This lays the figure out (without rendering it), measures each row's panels and adds what
    they lack, a few times over (the layout moves as the figure grows).  Call it before
    :func:`add_footnote`.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        With constrained layout.
    axes : sequence of Axes
        The panels to keep in shape.
    aspect : float
        The least height over width of a panel.
    rounds : int, default 3
        At most this many layouts and resizes.

    Returns
    -------
    None
        ``fig`` is made taller in place.
    """
    for _ in range(rounds):
        fig.draw_without_rendering()
        lacking: dict[object, float] = {}
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


def finish_panels(fig: Figure, axes: Sequence[Axes], *, own: bool, title: str | None = None,
                  footnote: str | None = None, aspect: float | None = None) -> None:
    """The last step of a plot function: title, panel shape and footnote, or only wrapped titles.

    On a figure the plot function made (``own``): the title above the panels and their legend
    (:func:`fit_titles`), each row of panels kept at least ``aspect`` high (:func:`keep_aspect`),
    then the footnote wrapped to the figure's width (:func:`add_footnote`).  On the caller's axes
    (``own=False``): nothing is added to the figure, and each panel's title is wrapped to its
    width.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    axes : sequence of Axes
        The panels drawn.
    own : bool
        Whether the plot function made ``fig`` (``ax=None``).
    title, footnote : str, optional
        Drawn on a figure of its own only.
    aspect : float, optional
        The least height over width of a panel (none: the layout's).

    Returns
    -------
    None
    """
    if not own:
        for ax in axes:
            ax.set_title(wrap_text(ax.get_title(), axes_width(ax)))
        return
    fit_titles(fig, axes, title)
    if aspect is not None:
        keep_aspect(fig, axes, aspect)
    if footnote:
        add_footnote(fig, wrap_text(footnote, fig.get_figwidth(), size="legend.fontsize"))
