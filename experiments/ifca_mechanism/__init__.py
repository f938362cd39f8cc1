"""What the three IFCA mechanism studies share (not a study: it has no command line).

``experiments/ifca_basin`` (the basin of the initialisation), ``experiments/ifca_misclustering``
(the misclustering probability of one identity estimate) and ``experiments/ifca_contraction``
(one round against Theorem 1) draw the same problems and run the same probes of IFCA
(:func:`mixreg.algorithms.ifca.closeness_init`, :func:`mixreg.algorithms.ifca.identity_round`):

* :mod:`.trial`: their cells' common part (:class:`MechanismSpec`, :data:`MECHANISM_CELLS`),
  the memory estimate of a trial and the cost of a resampling split;
* :mod:`.summary`: the failed-trial filter and Assumption 2 with unit constants;
* :mod:`.figures`: the figures' shared legend, title and footnote layout.
"""

from .summary import assumption2_unit, ok_records
from .trial import DIRECTIONS, MECHANISM_CELLS, SPLIT_COST, MechanismSpec, mechanism_memory

__all__ = ["DIRECTIONS", "MECHANISM_CELLS", "SPLIT_COST", "MechanismSpec", "mechanism_memory", "assumption2_unit",
           "ok_records"]
