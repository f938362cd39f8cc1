"""Figures drawn from tidy result tables, with the theory on them.

Plotting reads summaries (lists of dicts, see :func:`mixreg.stats.group_rates`) and theory
values computed by the caller; it never runs an algorithm or a sweep.  Uses matplotlib's
object-oriented API only, so it works under any backend (``Agg`` in scripts and CI).

The figures of a study live in its folder (``experiments/<study>/figures.py``); this package
holds what every figure shares: :func:`save_figure`, :func:`not_drawn` (a figure the tables
cannot give, said in one line) the registry-styled series (:func:`method_style`, :func:`series_label`,
:func:`median_errorbars`) and plain tick labels (:func:`plain_tick`), and,
re-exported from :mod:`mixreg.methods` (data only, so trials and tables read it without
matplotlib): the one registry of method and success-rule names, labels, colours, markers and
line styles (:data:`METHODS`, :data:`RULES`, :data:`COMPARE`, :func:`method_label`,
:func:`rule_title`), which every figure draws from.
"""

from __future__ import annotations

from ._common import FigureNotDrawn, median_errorbars, method_style, not_drawn, plain_tick, save_figure, series_label
from ..methods import COMPARE, METHODS, RULES, MethodStyle, method_label, rule_title

__all__ = [
    "COMPARE",
    "save_figure",
    "FigureNotDrawn",
    "not_drawn",
    "plain_tick",
    "method_style",
    "series_label",
    "median_errorbars",
    "MethodStyle",
    "METHODS",
    "RULES",
    "method_label",
    "rule_title",
]
