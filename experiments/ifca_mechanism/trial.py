"""What the IFCA mechanism studies share (``experiments/ifca_basin``, ``ifca_misclustering``,
``ifca_contraction``: IFCA, linear model, Sec. 5.1; NeurIPS Theorem 1 and the proof's Lemma 1).

Every trial draws a balanced problem with ``theta*`` of the ``"gaussian"`` protocol (minimum
separation exactly ``Delta``, :data:`MECHANISM_CELLS`), runs :func:`mixreg.algorithms.ifca.ifca`
and returns scalars.  :class:`MechanismSpec` is the common part of their cells (the problem and
the step size ``gamma = c1 / p``), :func:`mechanism_memory` their memory estimate and
:data:`SPLIT_COST` the cost of a resampling split.  The studies' own trials:

* ``ifca_basin``: ``T`` rounds from ``theta_j = theta*_j + alpha Delta u_j`` in a random, an
  adversarial or a shifted direction (:func:`mixreg.algorithms.ifca.closeness_init`), with the
  resampling scheme and without it;
* ``ifca_misclustering``: one resampled round from ``theta = theta*`` and the workers its
  identity estimate sent to the wrong model (:func:`mixreg.algorithms.ifca.identity_round`);
* ``ifca_contraction``: one resampled round from a random direction at ``alpha Delta``, the
  per-cluster contraction ratio against Theorem 1's right-hand side.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from mixreg.algorithms import RunSizes, trial_bytes
from mixreg.algorithms.ifca import CLOSENESS_DIRECTIONS
from mixreg.problems import CellSchema
from mixreg.study import TrialSpec, param

__all__ = ["DIRECTIONS", "MECHANISM_CELLS", "MechanismSpec", "mechanism_memory", "SPLIT_COST"]

#: Directions of the initial displacement ``theta_j - theta*_j`` (see
#: :func:`mixreg.algorithms.ifca.closeness_init`).
DIRECTIONS = CLOSENESS_DIRECTIONS

#: How the trials read their problem from a cell: ``delta`` is the exact minimum separation of
#: the ``"gaussian"`` protocol; labels are balanced and contiguous (``p = 1/k`` exactly).
MECHANISM_CELLS = CellSchema(keys={"m": "m", "k": "k", "n": "n", "d": "d", "sigma": "sigma", "scale": "delta"},
                             fixed={"protocol": "gaussian"})

#: Flop-equivalents per worker of the resampling split, done twice per trial of a one-round study
#: (by the driver and to recover its identity subset): a Python loop over workers, about 14
#: microseconds each.
SPLIT_COST = 1.4e5


@dataclasses.dataclass(frozen=True, kw_only=True)
class MechanismSpec(TrialSpec):
    """One cell of a mechanism study: the problem (:data:`MECHANISM_CELLS`) and IFCA's step size
    ``gamma = c1 / p``; each study adds its own fields and its cells' column order
    (:meth:`columns`, from the class attribute ``COLUMNS``)."""

    schema: ClassVar[CellSchema] = MECHANISM_CELLS
    COLUMNS: ClassVar[tuple] = ()

    c1: float = param("step size gamma = c1 / p", low=0, low_open=True)

    def columns(self):
        return type(self).COLUMNS


def mechanism_memory(spec):
    """Upper estimate of the peak bytes of a mechanism trial's arrays from its sizes (nothing is
    allocated; :func:`mixreg.algorithms.trial_bytes`): the problem, one IFCA replica with
    resampling (the identity round copies the identity subset once more, ``s N d``), and
    known-label least squares."""
    problem = spec.problem
    sizes = RunSizes.of(problem, replicas=1, resample=True, history_rounds=1)
    rows = np.dtype(problem.dtype).itemsize * problem.max_rows * problem.d
    return trial_bytes([problem], [("ifca", sizes), ("least_squares", RunSizes.of(problem))]) + rows
