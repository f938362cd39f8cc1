"""The algorithms: one module per algorithm over a shared driver module and a registry.

==========================  ===================================================================
driver (module)             algorithm
==========================  ===================================================================
:func:`ifca`                IFCA (Ghosh et al. 2020, Algorithm 2): options I and II, resampling,
                            partial participation
:func:`moment_descent`      Su-Xu-Yang Phase 1, federated moment descent (slides, steps 1-7)
:func:`fedx`                Su-Xu-Yang Phase 2, FedAvg(s) / FedProx with the ML decoder
:func:`two_phase`           Su-Xu-Yang's two-phase method: Phase 1, then Phase 2 from its
                            centres, in one call
:func:`oneshot`             one-shot clustering (Ghosh et al. 2020, Algorithm 1): local least
                            squares, server k-means, FedAvg per estimated cluster
:func:`fesem`               FeSEM, multi-center FL (Xie et al., Algorithms 1-2): clients to the
                            nearest centre by model distance, centres as averages, local steps
:func:`pacfl`               PACFL (Vahidian et al., Algorithms 1-2): principal angles between
                            client subspaces, hierarchical clustering, FedAvg per cluster, PME
:func:`ifca_points`         point-level IFCA on clients that mix clusters (UIFCA's scheme, the
                            IFCA thesis, Algorithms 3-5, with regression models)
:func:`kfed`                k-FED (the IFCA thesis, Algorithm 2): local clustering, server
                            k-means over local centroids, FedAvg on the point labels
``_fixed_labels``           FedAvg within clusters of fixed row labels (the training phase of
                            the one-shot methods)
``_driver``                 what every batched driver shares: validation, divergence, stop rules,
                            the result base, the history recorder
``_server``                 the server's update of a round (:class:`ServerStep`: plain,
                            :class:`HeavyBall`, :class:`Nesterov`) and the step-size schedule
                            (:class:`Schedule`: :class:`Constant`, :class:`InverseTime`,
                            :class:`PiecewiseConstant`, any callable of the round)
``_registry``               the registry the contract test suite runs over
``_check``                  the contract as a public check of any driver (:func:`check_algorithm`)
==========================  ===================================================================

Every replica driver takes a :class:`mixreg.problems.Problem`, initial parameters of shape
``(B, k, d)`` and one step size per replica, and returns a frozen result with the fields of
:class:`DriverResult` (final parameters, assignments, training loss, divergence flags and the
rule that fired, rounds run, stop reason, wall time, history).  Every driver takes
``history=`` (``False``, ``True``, ``"all"`` or names among :data:`HISTORY_FIELDS`, see
:func:`check_history`) and ``blowup=`` (:data:`DEFAULT_BLOWUP`, or ``None`` for non-finite
values only, see :class:`Replicas`).  The gradient-based drivers also take a server step and a
step-size schedule (:class:`ServerStep`, :class:`Schedule`); :func:`variant` registers such a
combination as one entry.

Writing your own driver
-----------------------
A driver is a function with the signature every registered algorithm has::

    run(problem, init, step_size, *, n_rounds, rng=None, tol=None, history=False) -> DriverResult

``problem`` a :class:`mixreg.problems.Problem`; ``init`` of shape ``(B, k, d)`` (or ``(k, d)``,
``B = 1``), never modified; ``step_size`` a float or one per replica, shape ``(B,)``;
``n_rounds >= 1``; ``rng`` a :class:`numpy.random.Generator`, the only source of randomness
(a driver that draws nothing ignores it); ``tol`` ``None`` or a float >= 0 (stop once every live
replica moved at most ``tol`` in a round); ``history`` ``True`` to record a :class:`History`.  A
driver may take more keywords; those the contract knows are checked when present: ``blowup``
(the divergence factor, ``None``: only non-finite values; pass it to :class:`Replicas`),
``server_step`` (:class:`ServerStep`) and ``schedule`` (a step-size multiplier of the round
``t``, :func:`check_schedule`).

It returns a frozen dataclass derived from :class:`DriverResult`: ``theta`` of shape
``(B, k, d)`` in the problem's dtype, ``assignments`` of shape ``(B, m)``, int64,
``train_loss`` of shape ``(B,)`` (``nan`` for a diverged replica, so that
:meth:`DriverResult.best_replica` never chooses it), ``diverged`` and ``diverged_round``
(a diverged replica frozen at its last finite parameters, the others exactly as without it),
``step_sizes``, ``n_rounds`` run, ``stop_reason``, ``wall_time`` and ``history``.  The helpers
every built-in uses make this short: :func:`check_run` validates the common arguments with the
contract's messages, :class:`Replicas` (with :func:`data_scales`) owns divergence and the stop
rules, :class:`HistoryRecorder` the history and :func:`common_fields` the result's common fields
(a driver that builds something once per step size groups its replicas with
:func:`step_size_groups`)::

    def my_driver(problem, init, step_size, *, n_rounds, rng=None, tol=None, history=False):
        start = time.perf_counter()
        theta, eta, T, tol = check_run(problem, init, step_size, n_rounds, tol)
        B, k, d = theta.shape
        replicas = Replicas(B, T, tol, theta0=theta, floors=data_scales(problem))
        rec = HistoryRecorder(problem, T, B, k, ("matched_max",)) if history else None
        if rec is not None:
            rec.record_point(0, theta, replicas.diverged)
        for t in range(T):
            assign, objective, new = my_round(problem, theta, eta)  # objective: mean loss, (B,)
            if rec is not None:
                rec.record_round(t, assign, objective, replicas.diverged)
            replicas.accept(theta, new, objective, t)  # freezes and flags a diverging replica
            if rec is not None:
                rec.record_point(t + 1, theta, replicas.diverged)
            if replicas.finished(t):
                break
        assign, train_loss = my_final_loss(problem, theta)
        train_loss[replicas.diverged] = np.nan
        return DriverResult(theta=theta, assignments=assign, train_loss=train_loss,
                            **common_fields(replicas, eta, start, rec))

Wrap it in an entry, check it, register it::

    mine = Algorithm(name="mine", run=my_driver, source="the paper, Algorithm 1",
                     sends="what a client sends per round", uses_rng=False)
    check_algorithm(mine, step_size=0.5)  # raises ContractViolation naming the broken check
    register(mine)  # now in ALGORITHMS: comparisons and the contract suite run it

A driver whose own keywords need fixing (an option, a local solver) is wrapped in a function of
the signature above, decorated with :func:`functools.wraps` so that :func:`check_algorithm` sees
the keywords it takes.  :func:`algorithm_checks` yields the same checks one by one, for one test
per check in your own test suite.
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
    check_run,
    common_fields,
    data_scales,
    level_scales,
    step_size_groups,
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
from ._check import (
    CHECK_SETTINGS,
    CHECKS,
    CheckReport,
    CheckSkipped,
    ContractViolation,
    algorithm_checks,
    check_algorithm,
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
    "CHECKS",
    "CHECK_SETTINGS",
    "CheckReport",
    "CheckSkipped",
    "ContractViolation",
    "algorithm_checks",
    "check_algorithm",
    "check_run",
    "common_fields",
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
    "step_size_groups",
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
