"""Figure helpers shared by the studies' ``figures.py`` (the IFCA mechanism studies
``experiments/ifca_basin``, ``ifca_misclustering``, ``ifca_contraction``, and the comparison,
error-floor and two-phase studies).

Every study's plot function follows one convention: ``plot_x(<data>, *, ax=None, title=None,
footnote=None, ...) -> dict``.  With ``ax=None`` it makes its figure with
:func:`mixreg.plotting.new_figure` (as wide as the current style) and puts its legend above the
panels, its title over them and a short footnote under them; with ``ax`` (one Axes, or the
documented number of them) it draws only into those axes: the legend inside the first of them,
no title over the figure, no footnote, the figure's size untouched.  :func:`panels` and
:func:`finish` are these two halves; :func:`fit_labels` wraps legend labels to the width they
get in the current style.
"""

from __future__ import annotations

import textwrap

import matplotlib as mpl
import numpy as np

from mixreg.plotting import add_footnote, axes_for, figure_width

__all__ = ["floats", "panels", "finish", "fit_labels", "result", "wrap"]


def floats(rows, key):
    """The column ``key`` of ``rows`` as floats, ``None`` as nan."""
    return np.array([np.nan if r.get(key) is None else float(r[key]) for r in rows], dtype=float)


def panels(ax, n, *, aspect=0.75, max_cols=None, **subplot_kw):
    """The figure and the ``n`` axes to draw into: ``ax``'s, or a new figure's
    (:func:`mixreg.plotting.axes_for`, the axes as an array).

    Parameters
    ----------
    ax : Axes, sequence of Axes or None
        The caller's axes (one Axes when ``n == 1``, else a sequence of exactly ``n``), or
        ``None`` for a new figure from :func:`mixreg.plotting.new_figure` (its width the
        style's, ``n`` panels laid out as the width allows).
    n : int
        The panels the plot function draws.
    aspect, max_cols, **subplot_kw
        Passed to :func:`~mixreg.plotting.new_figure` for a new figure.

    Returns
    -------
    fig : Figure
    axes : ndarray of Axes, shape (n,)
    own : bool
        Whether the figure is new (the plot function may then add a figure legend, a title
        and a footnote).

    Raises
    ------
    ValueError
        When ``ax`` is not ``n`` axes of one figure.
    """
    fig, axes, own = axes_for(ax, n, aspect=aspect, max_cols=max_cols, **subplot_kw)
    return fig, np.asarray(axes, dtype=object), own


def _font_inches():
    size = mpl.font_manager.FontProperties(size=mpl.rcParams["legend.fontsize"]).get_size_in_points()
    return size / 72.0


def fit_labels(labels, *, width=None, ncol=None):
    """Legend labels wrapped to the width a legend of ``ncol`` columns gives each, and ``ncol``.

    ``width`` is the legend's width in inches (default: the style's figure width); ``ncol``
    defaults to as many columns as the longest label (up to 60 characters) allows.

    Returns
    -------
    labels : list of str
        Wrapped with newlines.
    ncol : int
    rows : int
        Lines of text the legend takes (its height, in lines).
    """
    labels = [str(label) for label in labels]
    width = figure_width() if width is None else float(width)
    char = 0.56 * _font_inches()                       # an average character of DejaVu Sans
    handle = (mpl.rcParams["legend.handlelength"] + mpl.rcParams["legend.handletextpad"]
              + mpl.rcParams["legend.columnspacing"]) * _font_inches()

    def layout(cols):
        chars = max(12, int((width / cols - handle) / char))
        wrapped = ["\n".join(textwrap.wrap(label, chars)) or label for label in labels]
        lines = [label.count("\n") + 1 for label in wrapped]
        return wrapped, sum(max(lines[i:i + cols]) for i in range(0, len(lines), cols)), chars

    if ncol is None:   # the fewest lines, columns of at least 16 characters
        options = [(layout(cols)[1], cols) for cols in range(1, max(len(labels), 1) + 1)
                   if layout(cols)[2] >= 16 or cols == 1]
        ncol = min(options)[1]
    wrapped, rows, _ = layout(ncol)
    return wrapped, ncol, rows


def shared_legend(fig, axes, *, own, title=None, footnote=None):
    """The legend of panels that share their series: one above a figure of its own, one per panel
    on the caller's axes.

    Every label of ``axes`` is listed once, in the order first drawn; on a figure of its own it
    goes above the panels with the title and the footnote (:func:`finish`); on the caller's axes
    each panel gets a legend of its own and nothing is added to the figure.

    Returns
    -------
    legend : matplotlib.legend.Legend or None
        The figure's legend (on the caller's axes: the first panel's).
    legends : list of matplotlib.legend.Legend
        One per panel on the caller's axes; empty on a figure of its own.
    """
    handles, labels = [], []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    if own:
        return finish(fig, axes, handles, own=True, labels=labels, title=title, footnote=footnote), []
    legends = [ax.legend(fontsize="small", loc="best") for ax in axes]
    return (legends[0] if legends else None), legends


def finish(fig, axes, handles, *, own, labels=None, title=None, footnote=None, ncol=None, legend_ax=None,
           loc="best"):
    """The legend of ``handles``, and on a new figure the title and the short footnote.

    On a figure of its own (``own``) the legend goes above the panels (constrained layout's
    ``"outside upper center"``), its labels wrapped to the figure's width and the figure made
    taller by its lines; the title heads the legend (the figure's suptitle when there is no
    legend: constrained layout would put both in the same place), and the footnote is added under it
    (:func:`mixreg.plotting.add_footnote`).  On the caller's axes the legend goes inside
    ``legend_ax`` (default: the first of ``axes``) at ``loc``, and title and footnote are not
    drawn.

    Returns
    -------
    matplotlib.legend.Legend or None
        ``None`` when there is no handle.
    """
    labels = [h.get_label() for h in handles] if labels is None else list(labels)
    legend = None
    if not own:
        if handles:
            target = axes[0] if legend_ax is None else legend_ax
            legend = target.legend(handles, labels, loc=loc, fontsize="small", ncol=ncol or 1)
        return legend
    title_size = mpl.rcParams["figure.titlesize"]
    width = fig.get_figwidth()
    title = wrap(title, max(20, int(width / (0.56 * _title_inches())))) if title else None
    if handles:   # the title over the legend, as the legend's title: one block above the panels
        wrapped, ncol, rows = fit_labels(labels, width=width, ncol=ncol)
        extra = 1.45 * rows * _font_inches() + 0.1
        if title:
            extra += 1.3 * (title.count("\n") + 1) * _title_inches()
        fig.set_figheight(fig.get_figheight() + extra)
        legend = fig.legend(handles, wrapped, loc="outside upper center", ncol=ncol, title=title,
                            title_fontsize=title_size)
    elif title:
        fig.set_figheight(fig.get_figheight() + 1.3 * (title.count("\n") + 1) * _title_inches())
        fig.suptitle(title)
    add_footnote(fig, footnote)
    return legend


def _title_inches():
    size = mpl.font_manager.FontProperties(size=mpl.rcParams["figure.titlesize"]).get_size_in_points()
    return size / 72.0


def result(fig, axes, legend, **drawn):
    """The dict every plot function returns: ``figure``, ``axes`` (a list), ``legend`` and what it drew."""
    return {"figure": fig, "axes": list(np.atleast_1d(axes)), "legend": legend, **drawn}


def wrap(text, width):
    """``text`` wrapped to ``width`` characters (newlines kept)."""
    return "\n".join("\n".join(textwrap.wrap(line, width)) or line for line in str(text).splitlines())

