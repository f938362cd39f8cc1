"""Figures drawn from tidy result tables, with the theory on them.

Plotting reads summaries (lists of dicts, see :func:`mixreg.stats.group_rates`) and theory
values computed by the caller; it never runs an algorithm or a sweep.  Uses matplotlib's
object-oriented API only, so it works under any backend (``Agg`` in scripts and CI).

One private module per figure family, every public name re-exported here:

* :mod:`mixreg.plotting._common`: :func:`save_figure`, :func:`not_drawn` (a figure the tables
  cannot give, said in one line) and the helpers every figure shares;
* :mod:`mixreg.plotting._two_phase`: Su-Xu-Yang's two-phase algorithm, error against rounds
  with the controls, the measured Phase-2 contraction (``experiments/two_phase.py``), and the
  scaling in ``M``, the size law and ``p_min``;
* :mod:`mixreg.plotting._two_phase_nu`: Su-Xu-Yang's :math:`\\nu` one term at a time, the fitted
  exponents against the bound's and the held-out residual of its constant
  (``experiments/two_phase_nu.py``);
* :mod:`mixreg.plotting._phase1`: Su-Xu-Yang's Phase 1 with small anchors and a far start, its
  error against ``n_A`` and ``d`` beside anchor least squares, and the clients it needs against
  ``d`` and ``p_min`` (``experiments/two_phase_phase1.py``);
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
from ._two_phase import (
    plot_error_vs_rounds,
    plot_two_phase_contraction,
    plot_two_phase_rounds,
    plot_two_phase_scaling,
)
from ._two_phase_nu import plot_nu_sweeps
from ._phase1 import plot_clients_needed, plot_phase1_error
from ..methods import COMPARE, METHODS, RULES, MethodStyle, method_label, rule_title

__all__ = [
    "plot_comparison",
    "COMPARE",
    "save_figure",
    "FigureNotDrawn",
    "not_drawn",
    "plot_error_vs_rounds",
    "plot_two_phase_scaling",
    "plot_two_phase_rounds",
    "plot_two_phase_contraction",
    "plot_nu_sweeps",
    "plot_phase1_error",
    "plot_clients_needed",
    "MethodStyle",
    "METHODS",
    "RULES",
    "method_label",
    "rule_title",
]
