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
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ..methods import METHODS, MethodStyle, method_label, styles_for  # noqa: E402

__all__ = ["save_figure", "FigureNotDrawn", "not_drawn", "plain_tick", "method_style", "series_label",
           "median_errorbars"]

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


def save_figure(fig: Figure, path_without_suffix: str | os.PathLike[str], *more_paths: str | os.PathLike[str],
                caption: str | None = None) -> list[Path]:
    """Write ``<path>.png`` and ``<path>.pdf`` for each path given, then close ``fig``.

    The PNG's resolution is the style's (``rcParams["savefig.dpi"]``, see
    :func:`mixreg.plotting.use_style`); the PDF embeds TrueType fonts whatever the rcParams say
    (``pdf.fonttype = 42``: journals refuse matplotlib's default Type 3) and carries no timestamp,
    so that a redraw is byte-identical.  Both record the style they were drawn in
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
