"""The algorithms: one module per algorithm over a shared driver module and a registry.

==========================  ===================================================================
module                      algorithm
==========================  ===================================================================
:mod:`.ifca`                IFCA (Ghosh et al. 2020, Algorithm 2): options I and II, resampling,
                            partial participation
:mod:`.moment_descent`      Su-Xu-Yang Phase 1, federated moment descent (slides, steps 1-7)
:mod:`.fedx`                Su-Xu-Yang Phase 2, FedAvg(s) / FedProx with the ML decoder
:mod:`.two_phase`           Su-Xu-Yang's two-phase method: Phase 1, then Phase 2 from its
                            centres, in one call
:mod:`.oneshot`             one-shot clustering (Ghosh et al. 2020, Algorithm 1): local least
                            squares, server k-means, FedAvg per estimated cluster
:mod:`.fesem`               FeSEM, multi-center FL (Xie et al., Algorithms 1-2): clients to the
                            nearest centre by model distance, centres as averages, local steps
:mod:`.pacfl`               PACFL (Vahidian et al., Algorithms 1-2): principal angles between
                            client subspaces, hierarchical clustering, FedAvg per cluster, PME
:mod:`.ifca_points`         point-level IFCA on clients that mix clusters (UIFCA's scheme, the
                            IFCA thesis, Algorithms 3-5, with regression models)
:mod:`.kfed`                k-FED (the IFCA thesis, Algorithm 2): local clustering, server
                            k-means over local centroids, FedAvg on the point labels
:mod:`._fixed_labels`       FedAvg within clusters of fixed row labels (the training phase of
                            the one-shot methods)
:mod:`._driver`             what every batched driver shares: validation, divergence, stop rules,
                            the result base, the history recorder
:mod:`._server`             the server's update of a round (:class:`ServerStep`: plain,
                            :class:`HeavyBall`, :class:`Nesterov`) and the step-size schedule
                            (:class:`Schedule`: :class:`Constant`, :class:`InverseTime`,
                            :class:`PiecewiseConstant`, any callable of the round)
:mod:`._registry`           the registry the contract test suite runs over
==========================  ===================================================================

Every replica driver takes a :class:`mixreg.problems.Problem`, initial parameters of shape
``(B, k, d)`` and one step size per replica, and returns a frozen result with the fields of
:class:`DriverResult` (final parameters, assignments, training loss, divergence flags and the
rule that fired, rounds run, stop reason, wall time, history).  Every driver takes
``history=`` (``False``, ``True``, ``"all"`` or names among :data:`HISTORY_FIELDS`, see
:func:`check_history`) and ``blowup=`` (:data:`DEFAULT_BLOWUP`, or ``None`` for non-finite
values only, see :class:`Replicas`).  The gradient-based drivers also take a server step and a
step-size schedule (:mod:`._server`); :func:`variant` registers such a combination as one entry.
"""

from ._driver import (
    DEFAULT_BLOWUP,
    DIVERGENCE_RULES,
    HISTORY_FIELDS,
    DriverResult,
    History,
    HistoryRecorder,
    ProblemRefused,
    Replicas,
    check_blowup,
    check_history,
    data_scales,
    level_scales,
)
from ._memory import TRIAL_OVERHEAD, WORK_ARRAYS, RunSizes, trial_bytes, work_bytes, work_methods
from ._registry import (
    ALGORITHMS,
    Algorithm,
    Unmet,
    get_algorithm,
    register,
    register_builtin,
    builtin_algorithms,
    registered_by,
    unmet_precondition,
    variant,
    with_server_step,
)
from ._server import (
    Constant,
    HeavyBall,
    InverseTime,
    Nesterov,
    PiecewiseConstant,
    Schedule,
    ServerStep,
    check_schedule,
)
from .fedx import FedXResult, fedx, fedx_linear_rates
from .fesem import FeSEMResult, fesem
from .ifca_points import IFCAPointsResult, ifca_points
from .kfed import KFEDResult, kfed
from .oneshot import OneShotResult, oneshot
from .pacfl import PACFLResult, pacfl
from .ifca import IFCAResult, ifca, initial_parameters, training_loss
from .moment_descent import AnchorClustering, MomentDescentResult, cluster_anchors, moment_descent
from .two_phase import TwoPhaseResult, TwoPhaseRun, two_phase

__all__ = [
    "ALGORITHMS",
    "DEFAULT_BLOWUP",
    "DIVERGENCE_RULES",
    "HISTORY_FIELDS",
    "check_blowup",
    "check_history",
    "RunSizes",
    "TRIAL_OVERHEAD",
    "Unmet",
    "unmet_precondition",
    "WORK_ARRAYS",
    "trial_bytes",
    "work_bytes",
    "work_methods",
    "Algorithm",
    "AnchorClustering",
    "DriverResult",
    "FedXResult",
    "FeSEMResult",
    "IFCAPointsResult",
    "KFEDResult",
    "OneShotResult",
    "PACFLResult",
    "History",
    "HistoryRecorder",
    "IFCAResult",
    "MomentDescentResult",
    "ProblemRefused",
    "ServerStep",
    "HeavyBall",
    "Nesterov",
    "Schedule",
    "Constant",
    "InverseTime",
    "PiecewiseConstant",
    "check_schedule",
    "TwoPhaseResult",
    "TwoPhaseRun",
    "Replicas",
    "cluster_anchors",
    "data_scales",
    "level_scales",
    "fedx",
    "fedx_linear_rates",
    "fesem",
    "ifca_points",
    "kfed",
    "oneshot",
    "pacfl",
    "get_algorithm",
    "ifca",
    "initial_parameters",
    "moment_descent",
    "register",
    "registered_by",
    "builtin_algorithms",
    "variant",
    "with_server_step",
    "training_loss",
    "two_phase",
]

register_builtin()
