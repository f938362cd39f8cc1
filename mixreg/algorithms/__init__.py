"""The algorithms: one module per algorithm over a shared driver module and a registry.

==========================  ===================================================================
module                      algorithm
==========================  ===================================================================
:mod:`.ifca`                IFCA (Ghosh et al. 2020, Algorithm 2): options I and II, resampling,
                            partial participation
:mod:`.moment_descent`      Su-Xu-Yang Phase 1, federated moment descent (slides, steps 1-7)
:mod:`.fedx`                Su-Xu-Yang Phase 2, FedAvg(s) / FedProx with the ML decoder
:mod:`._driver`             what every batched driver shares: validation, divergence, stop rules,
                            the result base, the history recorder
:mod:`._registry`           the registry the contract test suite runs over
==========================  ===================================================================

Every replica driver takes a :class:`mixreg.problems.Problem`, initial parameters of shape
``(B, k, d)`` and one step size per replica, and returns a frozen result with the fields of
:class:`DriverResult` (final parameters, assignments, training loss, divergence flags, rounds run,
stop reason, wall time, history).
"""

from ._driver import DriverResult, History, HistoryRecorder, Replicas
from ._registry import ALGORITHMS, Algorithm, get_algorithm, register, register_builtin
from .fedx import FedXResult, fedx, fedx_linear_rates
from .ifca import IFCAResult, ifca, initial_parameters, training_loss
from .moment_descent import AnchorClustering, MomentDescentResult, cluster_anchors, moment_descent

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "AnchorClustering",
    "DriverResult",
    "FedXResult",
    "History",
    "HistoryRecorder",
    "IFCAResult",
    "MomentDescentResult",
    "Replicas",
    "cluster_anchors",
    "fedx",
    "fedx_linear_rates",
    "get_algorithm",
    "ifca",
    "initial_parameters",
    "moment_descent",
    "register",
    "training_loss",
]

register_builtin()
