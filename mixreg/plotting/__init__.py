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
* :mod:`mixreg.plotting._ifca_mechanism`: IFCA against its theorems: the basin of the
  initialisation, the misclustering exponent and the one-round contraction
  (``experiments/ifca_basin.py``, ``ifca_misclustering.py``, ``ifca_contraction.py``);
* :mod:`mixreg.plotting._phase1`: Su-Xu-Yang's Phase 1 with small anchors and a far start, its
  error against ``n_A`` and ``d`` beside anchor least squares, and the clients it needs against
  ``d`` and ``p_min`` (``experiments/two_phase_phase1.py``);
and, re-exported from :mod:`mixreg.methods` (data only, so trials and tables read it without
matplotlib): the one registry of method and success-rule names, labels, colours, markers and
line styles (:data:`METHODS`, :data:`RULES`, :data:`COMPARE`, :func:`method_label`,
:func:`rule_title`), which every figure draws from.
"""

from __future__ import annotations

from ._common import FigureNotDrawn, not_drawn, save_figure
from ._error_floor import plot_error_floor
from ._two_phase import (
    plot_error_vs_rounds,
    plot_two_phase_contraction,
    plot_two_phase_rounds,
    plot_two_phase_scaling,
)
from ._ifca_mechanism import plot_ifca_basin, plot_misclustering_exponent, plot_one_round_contraction
from ._phase1 import plot_clients_needed, plot_phase1_error
from ..methods import COMPARE, METHODS, RULES, MethodStyle, method_label, rule_title

__all__ = [
    "COMPARE",
    "plot_error_floor",
    "save_figure",
    "FigureNotDrawn",
    "not_drawn",
    "plot_error_vs_rounds",
    "plot_two_phase_scaling",
    "plot_two_phase_rounds",
    "plot_two_phase_contraction",
    "plot_ifca_basin",
    "plot_misclustering_exponent",
    "plot_one_round_contraction",
    "plot_phase1_error",
    "plot_clients_needed",
    "MethodStyle",
    "METHODS",
    "RULES",
    "method_label",
    "rule_title",
]
