"""Figures drawn from tidy result tables, with the theory on them.

Plotting reads summaries (lists of dicts, see :func:`mixreg.stats.group_rates`) and theory
values computed by the caller; it never runs an algorithm or a sweep.  Uses matplotlib's
object-oriented API only, so it works under any backend (``Agg`` in scripts and CI).

Figures for papers: :func:`use_style` applies a named style of :data:`STYLES`
(``"two-column"``, the default :data:`DEFAULT_STYLE`: 6.9 in wide, 9 pt, a paper's full text
width; ``"one-column"``: 3.3 in, 8 pt; ``"slides"``; each shipped as a ``<name>.mplstyle`` file
of this package, to copy and edit), a ``.mplstyle`` file or a dict of rcParams, globally or for
a ``with`` block; every style has a colour-blind-safe palette and writes TrueType fonts into
PDFs.  The plot functions of this package write no size: font sizes, line widths, marker sizes
and error-bar caps are the current rcParams' (relative sizes such as ``"small"`` at most), and,
when no axes are given, the figure is made by :func:`new_figure` (as wide as the style, as many
panel columns as fit).  The command line's ``--style NAME|FILE`` (a study run, ``--redraw``) draws in
the style chosen.  Every plot function follows one convention: ``plot_x(<data>, *, ax=None,
title=None, footnote=None, ...) -> dict``, drawing only into the axes given (``ax=``) or into a
figure of its own, and returning what it drew (``"figure"``, ``"axes"``, ``"legend"`` and the
artists).  A figure keeps at most a one-line footnote (:func:`add_footnote`); its long notes go
to a caption file beside it (:func:`save_figure`, ``caption=``).

The figures of a study live in its folder (``experiments/<study>/figures.py``); this package
holds what every figure shares: :func:`save_figure`, :func:`not_drawn` (a figure the tables
cannot give, said in one line) the registry-styled series (:func:`method_style`, :func:`series_label`,
:func:`median_errorbars`), plain tick labels (:func:`plain_tick`), the check that every
legend entry stands for something drawn inside the axes (:func:`undrawn_legend_entries`), and,
re-exported from :mod:`mixreg.methods` (data only, so trials and tables read it without
matplotlib): the one registry of method and success-rule names, labels, colours, markers and
line styles (:data:`METHODS`, :data:`RULES`, :data:`COMPARE`, :func:`method_label`,
:func:`rule_title`), which every figure draws from, with a user's styles
(:func:`register_style`) and the automatic style of any other method (:func:`styles_for`,
:func:`auto_style`: no two unregistered methods of a figure look alike).

Two figures work for any sweep, from any tidy table: :func:`success_plot`
(success probability with Wilson bands against any swept field) and :func:`error_plot` (an
error against any swept field, with the exponent fit and the prediction).  Both draw into the
axes given (``ax=``) and return what they drew; no figure leaves a method or a row out
without saying so.
"""

from __future__ import annotations

from ._common import (FigureNotDrawn, median_errorbars, method_style, not_drawn, plain_tick, save_figure, series_label,
                      undrawn_legend_entries)
from ._style import (DEFAULT_STYLE, MIN_PANEL_WIDTH, STYLES, add_footnote, axes_for, axes_width, current_style,
                     figure_width, finish_panels, fit_titles, keep_aspect, legend_above, new_figure, use_style, wrap_text)
from ._generic import CROWDED, PREDICTION_LABEL, error_plot, success_plot
from ..methods import (COMPARE, METHODS, RULES, MethodStyle, auto_style, method_label, register_style, rule_title,
                       styles_for)

__all__ = [
    "use_style",
    "current_style",
    "STYLES",
    "DEFAULT_STYLE",
    "new_figure",
    "axes_for",
    "legend_above",
    "wrap_text",
    "axes_width",
    "fit_titles",
    "keep_aspect",
    "finish_panels",
    "add_footnote",
    "figure_width",
    "MIN_PANEL_WIDTH",
    "CROWDED",
    "success_plot",
    "error_plot",
    "PREDICTION_LABEL",
    "register_style",
    "styles_for",
    "auto_style",
    "COMPARE",
    "save_figure",
    "FigureNotDrawn",
    "not_drawn",
    "plain_tick",
    "method_style",
    "series_label",
    "median_errorbars",
    "undrawn_legend_entries",
    "MethodStyle",
    "METHODS",
    "RULES",
    "method_label",
    "rule_title",
]
