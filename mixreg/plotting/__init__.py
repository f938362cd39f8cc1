"""Figures drawn from tidy result tables, with the theory on them.

Plotting reads summaries (lists of dicts, see :func:`mixreg.stats.group_rates`) and theory
values computed by the caller; it never runs an algorithm or a sweep.  Uses matplotlib's
object-oriented API only, so it works under any backend (``Agg`` in scripts and CI).

One private module per figure family, every public name re-exported here:

* :mod:`mixreg.plotting._common`: :func:`save_figure` and the helpers every figure shares;
* :mod:`mixreg.plotting._success`: IFCA's success probability against the separation
  (``experiments/success_vs_R.py``);
* :mod:`mixreg.plotting._two_phase`: Su-Xu-Yang's two-phase algorithm, error against rounds and
  the scaling in ``M``, the size law and ``p_min`` (``experiments/two_phase.py``);
* :mod:`mixreg.plotting.methods` (public): the one registry of method and success-rule names,
  labels, colours, markers and line styles (:data:`METHODS`, :data:`RULES`,
  :func:`method_label`, :func:`rule_title`), which every figure draws from.
"""

from __future__ import annotations

from ._common import save_figure
from ._success import plot_success_vs_separation
from ._two_phase import plot_error_vs_rounds, plot_two_phase_scaling
from .methods import METHODS, RULES, MethodStyle, method_label, rule_title

__all__ = [
    "plot_success_vs_separation",
    "save_figure",
    "plot_error_vs_rounds",
    "plot_two_phase_scaling",
    "MethodStyle",
    "METHODS",
    "RULES",
    "method_label",
    "rule_title",
]
