"""Figures drawn from tidy result tables, with the theory on them.

Plotting reads summaries (lists of dicts, see :func:`mixreg.stats.group_rates`) and theory
values computed by the caller; it never runs an algorithm or a sweep.  Uses matplotlib's
object-oriented API only, so it works under any backend (``Agg`` in scripts and CI).

One private module per figure family, every public name re-exported here:

* :mod:`mixreg.plotting._common`: :func:`save_figure`, :func:`not_drawn` (a figure the tables
  cannot give, said in one line) and the helpers every figure shares;
* :mod:`mixreg.plotting._two_phase_nu`: Su-Xu-Yang's :math:`\\nu` one term at a time, the fitted
  exponents against the bound's and the held-out residual of its constant
  (``experiments/two_phase_nu.py``);
* :mod:`mixreg.plotting._compare`: every method of the registry and the reference points on one
  regime, error, misclustering, rounds, communication and wall time side by side
  (``experiments/compare.py``);
and, re-exported from :mod:`mixreg.methods` (data only, so trials and tables read it without
matplotlib): the one registry of method and success-rule names, labels, colours, markers and
line styles (:data:`METHODS`, :data:`RULES`, :data:`COMPARE`, :func:`method_label`,
:func:`rule_title`), which every figure draws from.
"""

from __future__ import annotations

from ._common import FigureNotDrawn, not_drawn, save_figure
from ._compare import plot_comparison
from ._two_phase_nu import plot_nu_sweeps
from ..methods import COMPARE, METHODS, RULES, MethodStyle, method_label, rule_title

__all__ = [
    "plot_comparison",
    "COMPARE",
    "save_figure",
    "FigureNotDrawn",
    "not_drawn",
    "plot_nu_sweeps",
    "MethodStyle",
    "METHODS",
    "RULES",
    "method_label",
    "rule_title",
]
