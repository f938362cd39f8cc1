"""Su, Xu and Yang's two-phase method as one algorithm: Phase 1, then Phase 2 from its output.

Slides "Our Two-phase FL algorithm" (Su, Xu, Yang 2022; J. Xu's Allerton 2022 talk):

1. obtain coarse estimates of :math:`(\\theta^*_1, \\dots, \\theta^*_k)` by *federated moment
   descent* (slides "Federated Moment Descent in Action", steps 1-7;
   :func:`mixreg.algorithms.moment_descent`);
2. iteratively estimate the cluster labels and refine the models by FedAvg or FedProx with the
   ML decoder, starting from the Phase-1 output (slides "FedX + Clustering in Action", steps
   1-4; :func:`mixreg.algorithms.fedx`).

The global theorem (slides "Putting Two Phases Together: Global Convergence"): from any
:math:`\\theta_0`, Phase 1 for :math:`\\Theta(1)` iterations followed by Phase 2 for
:math:`\\Theta(\\rho^{-1}\\log(1/\\nu))` iterations outputs :math:`\\hat\\theta` with
:math:`d(\\hat\\theta, \\theta^*) \\lesssim \\nu\\log(1/\\nu)/p_{min}`.

:func:`two_phase` runs both phases in one call and returns both outputs
(:class:`TwoPhaseResult`); every detail the slides leave open is a documented parameter of it
(or of the two phases' own drivers, whose options it passes on).  Phase 2 runs ``B`` replicas,
one per step size, all from the same Phase-1 centres.

The registry entry ``two_phase`` (:func:`registrations`) adapts it to the replica-driver
signature of :mod:`mixreg.algorithms._registry`: a problem carries no anchors, so the entry draws
them at random (the slides' step 1: "Choose a set A of anchor clients at random"), ``2k``
clients among those with at least two points (ours), runs Phase 1 with the data reused across
rounds, then Phase 2 with FedAvg(2) (the registered ``fedavg`` entry's solver) for ``n_rounds``
rounds from the Phase-1 centres; ``init`` fixes the number of replicas and ``k`` only.

References
----------
.. [1] L. Su, J. Xu, P. Yang, "Global Convergence of Federated Learning for Mixed Regression",
   NeurIPS 2022 (arXiv:2206.07279); J. Xu, Allerton 2022 talk slides.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._typing import ArrayLike, HistoryRequest, ScheduleLike
from ..validation import check_choice, check_int
from ..local_solvers import LOCAL_SOLVERS
from ..problems import Problem, check_rng
from ._server import ServerStep
from ._driver import (
    BLOWUP,
    DriverResult,
    check_blowup,
    check_history,
    check_problem,
    check_run,
    check_step_sizes,
    check_tolerance,
    elapsed,
)
from ._registry import Algorithm, Unmet, _bind
from .fedx import FedXResult, fedx
from .moment_descent import MomentDescentResult, moment_descent

__all__ = ["TwoPhaseResult", "TwoPhaseRun", "two_phase", "two_phase_replicas", "ON_PHASE1_FAILURE",
           "PHASE1_OPTIONS", "registrations"]

#: What :func:`two_phase` does when Phase 1 gives no ``k`` finite centres.
ON_PHASE1_FAILURE = ("skip", "raise")

#: The keywords of :func:`mixreg.algorithms.moment_descent` that
#: :func:`two_phase` passes on through ``phase1_options`` (the others are its own arguments).
PHASE1_OPTIONS = ("clients_per_round", "anchor_pairs", "init", "symmetrize", "sign", "subspace_solver",
                  "threshold", "on_mismatch")


@dataclass(frozen=True, kw_only=True)
class TwoPhaseResult:
    """Both phases' outputs of :func:`two_phase`.

    Attributes
    ----------
    phase1 : MomentDescentResult
        Phase 1: the centres :math:`\\hat\\theta` (Phase 2's start), the anchors' clustering, and
        the per-round history if asked for.
    phase2 : FedXResult or None
        Phase 2 over the step sizes (one replica each); ``None`` when Phase 1 gave no ``k``
        finite centres (``on_phase1_failure="skip"``).
    wall_time : float
        Seconds spent in the call (both phases).
    """

    phase1: MomentDescentResult
    phase2: FedXResult | None
    wall_time: float

    @property
    def started(self) -> bool:
        """Phase 1 gave ``k`` finite centres, so Phase 2 ran."""
        return self.phase2 is not None


@dataclass(frozen=True, kw_only=True)
class TwoPhaseRun(DriverResult):
    """The registry entry's result (``two_phase_replicas``): Phase 2's common fields of
    :class:`mixreg.algorithms.DriverResult` (``n_rounds`` and ``history`` count Phase 2's rounds),
    with Phase 1 and the local solver.

    Attributes
    ----------
    phase1 : MomentDescentResult
    local_solver : str
    local_steps : int
    """

    phase1: MomentDescentResult
    local_solver: str
    local_steps: int


def _replicas_of(step_size):
    """The ``B`` of ``step_size`` (1 for a scalar), validated as every driver does."""
    B = int(np.size(step_size)) if np.ndim(step_size) == 1 else 1
    check_step_sizes(step_size, B)
    return B


def two_phase(problem: Problem, anchors: ArrayLike, k: int, step_size: float | ArrayLike, *,
              rng: np.random.Generator | None = None, phase1_rounds: int = 10, sampling: str = "fresh",
              anchor_sampling: str | None = None, step_constant: float = 0.5,
              phase1_options: Mapping[str, Any] | None = None, phase1_history: HistoryRequest = False,
              local_solver: str = "fedavg", local_steps: int = 1, phase2_rounds: int = 100, tol: float | None = None,
              history: HistoryRequest = False, blowup: float | None = BLOWUP, on_phase1_failure: str = "skip",
              phase1: MomentDescentResult | None = None, server_step: ServerStep | None = None,
              schedule: ScheduleLike | None = None) -> TwoPhaseResult:
    """Run Su, Xu and Yang's two-phase method: federated moment descent, then FedX from its centres.

    Phase 1 (:func:`mixreg.algorithms.moment_descent`, slides "Federated Moment
    Descent in Action", steps 1-7) moves the anchors' estimates and clusters them into ``k``
    centres :math:`\\hat\\theta`; Phase 2 (:func:`mixreg.algorithms.fedx`, slides
    "FedX + Clustering in Action", steps 1-4) starts every replica at :math:`\\hat\\theta` and
    alternates the ML decoder with FedAvg(s) or FedProx on all clients and all their data.

    Parameters
    ----------
    problem : Problem
    anchors : int array of shape (M_A,)
        The anchor clients of Phase 1 (step 1; e.g. :func:`mixreg.problems.add_anchors`), each
        with at least 2 points.  Phase 2 uses their data like any other client's.
    k : int
        Clusters: of Phase 1's subspace and output, hence of Phase 2's models.
    step_size : float or array of shape (B,)
        Phase 2's :math:`\\eta`, one replica per value, each from the Phase-1 centres; > 0.  The
        slides give no value (:func:`mixreg.algorithms.fedx` states the stable range).
    rng : numpy.random.Generator
        Phase 1's randomness (its clients :math:`S_t`, its pairs); required unless ``phase1``
        is given.  Phase 2 draws nothing.
    phase1_rounds : int >= 1
        Phase 1's ``T``.  The slides say :math:`\\Theta(1)` iterations without a constant;
        default 10 (ours, as :func:`~mixreg.algorithms.moment_descent`).
    sampling, anchor_sampling : {"fresh", "reuse"}
        Phase 1's data of :math:`S_t` and of the anchors (``anchor_sampling`` defaults to
        ``sampling``).  The slides index the samples by round without saying whether they are
        fresh; see :func:`~mixreg.algorithms.moment_descent`.
    step_constant : float > 0
        Phase 1's ``c`` in :math:`\\eta_{a,t} = c\\sqrt{\\max(\\lambda_1(Z_{a,t}), 0)}` (the slides
        give no step rule; ours, default 0.5).
    phase1_options : dict, optional
        Other keywords of :func:`~mixreg.algorithms.moment_descent`, among
        ``PHASE1_OPTIONS`` (``clients_per_round``, ``anchor_pairs``, the start ``init``, the
        symmetrisation, the sign rule, the subspace solver, and step 7's ``threshold`` and
        ``on_mismatch``), each a detail the slides leave open and documented there.
    phase1_history : bool, "all" or ("theta",)
        Record Phase 1's per-round history (``MomentDescentHistory``).
    local_solver : {"fedavg", "fedprox"}
        Phase 2's local solver; the slides offer either.
    local_steps : int >= 1
        ``s`` of FedAvg(s) (the slides give no value; default 1); ignored by FedProx.
    phase2_rounds : int >= 1
        Phase 2's rounds at most.  The theorem's :math:`\\Theta(\\rho^{-1}\\log(1/\\nu))` has no
        stated constant; default 100 (ours).
    tol : float >= 0, optional
        Stop Phase 2 once every live replica moved by at most ``tol`` in a round (ours; the
        slides state no stop rule); by default all ``phase2_rounds`` run.
    history : bool, "all" or sequence of str
        Record Phase 2's :class:`mixreg.algorithms.History` (as :func:`mixreg.algorithms.fedx`:
        ``"all"`` adds the decoded labels and the client losses).
    blowup : float > 1 or None
        Divergence factor of both phases (:class:`mixreg.algorithms.Replicas`; default
        :data:`mixreg.algorithms.DEFAULT_BLOWUP`); ``None``: only non-finite values count.
    server_step : mixreg.algorithms.ServerStep, optional
        Phase 2's server update (default the plain step); Phase 1 moves its anchors along spectral
        directions, not along an aggregate a server steps on, so it has none.
    schedule : mixreg.algorithms.Schedule or callable, optional
        Phase 2's step-size schedule (:func:`mixreg.algorithms.fedx`); default constant.
    on_phase1_failure : {"skip", "raise"}
        When Phase 1 gives no ``k`` finite centres (fewer than ``k`` anchors left finite: its
        clustering method is ``"failed"``), Phase 2 has no start; the slides do not consider
        it.  ``"skip"`` (default): Phase 2 is not run and :attr:`TwoPhaseResult.phase2` is
        ``None``; ``"raise"``: ``ValueError``.
    phase1 : MomentDescentResult, optional
        A Phase-1 output of an earlier call on the same problem, anchors and ``k``: Phase 1 is
        not run again and Phase 2 starts from its centres (e.g. Phase 2 with the other local
        solver from the same Phase 1).  ``rng`` and the Phase-1 options are then unused.

    Returns
    -------
    TwoPhaseResult

    Raises
    ------
    ValueError
        Naming the parameter: a Phase-2 option out of range (checked before Phase 1 runs),
        Phase 1's own refusals (:func:`~mixreg.algorithms.moment_descent`), or
        a Phase-1 failure under ``on_phase1_failure="raise"``.

    Examples
    --------
    >>> from mixreg.problems import ProblemSpec
    >>> spec = ProblemSpec(m=3000, k=2, d=5, sigma=0.1, scale=3.0, protocol="gaussian", n=4,
    ...                    anchor_mode="per_cluster", anchor_points=400)
    >>> rng = np.random.default_rng(1)
    >>> pb, anchors = spec.with_anchors(spec.generate(rng), rng)
    >>> res = two_phase(pb, anchors, 2, [0.5, 1.0], rng=rng, anchor_sampling="reuse", phase2_rounds=50)
    >>> res.phase1.centres.shape, res.phase2.theta.shape, res.phase2.stop_reason
    ((2, 5), (2, 2, 5), 'completed 50 rounds')
    """
    start = time.perf_counter()
    check_problem(problem)
    B = _replicas_of(step_size)
    check_int("phase1_rounds", phase1_rounds, low=1)
    check_choice("local_solver", local_solver, LOCAL_SOLVERS)
    check_int("local_steps", local_steps, low=1)
    check_int("phase2_rounds", phase2_rounds, low=1)
    check_tolerance(tol)
    check_choice("on_phase1_failure", on_phase1_failure, ON_PHASE1_FAILURE)
    check_history(history, ())
    blowup = check_blowup(blowup)
    options = {} if phase1_options is None else dict(phase1_options)
    unknown = sorted(set(options) - set(PHASE1_OPTIONS))
    if unknown:
        raise ValueError(f"phase1_options must be keywords among {', '.join(PHASE1_OPTIONS)}; got {unknown}")

    if phase1 is None:
        if rng is None:
            raise ValueError("rng is required to run Phase 1 (pass a numpy.random.Generator, or phase1=)")
        check_rng(rng)
        phase1 = moment_descent(problem, anchors, k, rng=rng, n_rounds=phase1_rounds, sampling=sampling,
                                anchor_sampling=anchor_sampling, step_constant=step_constant,
                                history=phase1_history, blowup=blowup, **options)
    elif not isinstance(phase1, MomentDescentResult):
        raise TypeError(f"phase1 must be a MomentDescentResult, got {type(phase1).__name__}")
    elif phase1.centres.shape != (k, problem.d):
        raise ValueError(f"phase1 must have centres of shape (k, d)=({k}, {problem.d}), got {phase1.centres.shape}")

    centres = phase1.centres
    if not np.isfinite(centres).all():  # Phase 1 could not form k groups: Phase 2 has no start
        if on_phase1_failure == "raise":
            raise ValueError(f"Phase 1 gave no k={k} finite centres (clustering {phase1.clustering.method!r}: "
                             f"{phase1.stop_reason}); on_phase1_failure='raise'")
        return TwoPhaseResult(phase1=phase1, phase2=None, wall_time=elapsed(start))
    init = centres if np.ndim(step_size) == 0 else np.repeat(centres[None], B, axis=0)
    phase2 = fedx(problem, init, step_size, local_solver=local_solver, local_steps=local_steps,
                  n_rounds=phase2_rounds, tol=tol, history=history, blowup=blowup, server_step=server_step,
                  schedule=schedule)
    return TwoPhaseResult(phase1=phase1, phase2=phase2, wall_time=elapsed(start))


# --------------------------------------------------------------------------------------------
# The registry entry
# --------------------------------------------------------------------------------------------


def _draw_anchors(problem, n_anchors, k, rng):
    """``n_anchors`` distinct clients drawn uniformly among those with at least 2 points (sorted)."""
    eligible = np.flatnonzero(problem.sizes >= 2)
    if eligible.size < n_anchors + k:
        raise ValueError(f"Phase 1 needs n_anchors={n_anchors} anchors and at least k={k} other clients with "
                         f"n_i >= 2 (the clients of S_t); the problem has {eligible.size} clients with n_i >= 2")
    return np.sort(rng.choice(eligible, size=n_anchors, replace=False)).astype(np.int64)


def two_phase_replicas(problem: Problem, init: ArrayLike, step_size: float | ArrayLike, *, n_rounds: int,
                       rng: np.random.Generator | None = None, tol: float | None = None,
                       history: HistoryRequest = False, blowup: float | None = BLOWUP, n_anchors: int | None = None,
                       phase1_rounds: int = 10, sampling: str = "reuse", local_solver: str = "fedavg",
                       local_steps: int = 2, server_step: ServerStep | None = None,
                       schedule: ScheduleLike | None = None) -> TwoPhaseRun:
    """The two-phase method as a replica driver (the registry's signature).

    Draws ``n_anchors`` anchors at random among the clients with at least two points (the
    slides' step 1 draws them at random; the size filter is ours: a one-point client has no
    pair), runs :func:`two_phase` with ``k = init.shape[1]`` and ``B = init.shape[0]``
    replicas of Phase 2, every one from the Phase-1 centres with its own step size.

    Parameters
    ----------
    problem : Problem
    init : array of shape (B, k, d) or (k, d)
        Fixes ``B`` and ``k`` and is validated; its values are not used (Phase 2 starts from
        Phase 1's centres, Phase 1 from :math:`\\theta_0 = 0`).
    step_size : float or array of shape (B,)
        Phase 2's :math:`\\eta` of each replica.
    n_rounds : int >= 1
        Phase 2's rounds (Phase 1's are ``phase1_rounds``).
    rng : numpy.random.Generator
        Required: the anchors and Phase 1 draw from it (once for the whole batch, so replica
        ``b`` of a batch equals a run of ``init[b:b+1]`` under a Generator in the same state).
    tol, history
        Phase 2's, as for :func:`mixreg.algorithms.fedx`.
    blowup : float > 1 or None
        Both phases' divergence factor, as for :func:`two_phase`.
    n_anchors : int >= k, optional
        :math:`M_A`; default ``2k`` (ours: the theorem asks :math:`M_A \\ge \\tilde\\Omega(k)`).
    phase1_rounds, local_solver, local_steps, server_step, schedule
        As for :func:`two_phase`.
    sampling : {"fresh", "reuse"}
        Phase 1's data, of :math:`S_t` and the anchors alike (default ``"reuse"``: a problem
        without topped-up anchors rarely holds ``2 T`` points per anchor).

    Returns
    -------
    TwoPhaseRun
    """
    theta, eta, T, tol = check_run(problem, init, step_size, n_rounds, tol)
    B, k, _ = theta.shape
    check_history(history, ())
    blowup = check_blowup(blowup)
    if rng is None:
        raise ValueError("rng is required: the anchors and Phase 1 draw from it (pass a numpy.random.Generator)")
    check_rng(rng)
    n_anchors = 2 * k if n_anchors is None else check_int("n_anchors", n_anchors, low=k)
    anchors = _draw_anchors(problem, n_anchors, k, rng)
    res = two_phase(problem, anchors, k, eta, rng=rng, phase1_rounds=phase1_rounds, sampling=sampling,
                    local_solver=local_solver, local_steps=local_steps, phase2_rounds=T, tol=tol, history=history,
                    blowup=blowup, on_phase1_failure="raise", server_step=server_step, schedule=schedule)
    assert res.phase2 is not None  # on_phase1_failure="raise": Phase 2 ran
    common = {f.name: getattr(res.phase2, f.name) for f in fields(DriverResult)}
    common["wall_time"] = res.wall_time
    return TwoPhaseRun(**common, phase1=res.phase1, local_solver=res.phase2.local_solver,
                       local_steps=res.phase2.local_steps)


def _communication(problem, result, replica):
    """Floats an average client moves in both phases (the slides' protocol, counted per round).

    Phase 1, per round: the server broadcasts the :math:`M_A` anchor estimates to the
    :math:`|S_t|` clients (step 2), each returns its two moment vectors
    :math:`\\varepsilon(x_{i1}, y_{i1}, \\theta_a), \\varepsilon(x_{i2}, y_{i2}, \\theta_a)` per
    anchor (step 3: the server forms :math:`Y_{a,t}`), the server sends each anchor its ``d x k``
    subspace (step 4) and the anchor uploads its new estimate (step 6); totals over all clients
    divided by ``m``.  Phase 2, per round: ``k`` models down, the label and one d-vector up.
    """
    p1 = result.phase1
    d, m, k = problem.d, problem.m, result.theta.shape[1]
    n_a, s, T1 = p1.anchors.size, p1.clients_per_round, p1.n_rounds
    up = T1 * (2 * s * n_a * d + n_a * d) / m + (d + 1) * result.n_rounds
    down = T1 * (s * n_a * d + n_a * d * k) / m + k * d * result.n_rounds
    return float(up), float(down)


def _precondition(*, d, k, n_min):
    """Phase 1's subspace has ``k`` dimensions in :math:`\\mathbb R^d`; its anchors and the
    clients of :math:`S_t` send pairs of samples (conservative: a problem whose smallest client
    has one point may still hold enough clients of two)."""
    if d < k:
        return Unmet("d", d, f"d >= k = {k} (Phase 1's top-k subspace of R^d)")
    if n_min < 2:
        return Unmet("n_min", n_min, "min n_i >= 2 (Phase 1's anchors and the clients of S_t send pairs of samples)")
    return None


def registrations() -> list[Algorithm]:
    """The registry entry: federated moment descent, then FedAvg(2) from its centres."""
    # n_anchors=None: 2k anchors, drawn at random among the clients with n_i >= 2
    options = {"n_anchors": None, "phase1_rounds": 10, "sampling": "reuse", "local_solver": "fedavg",
               "local_steps": 2}
    return [
        Algorithm(
            name="two_phase",
            run=_bind(two_phase_replicas, uses_rng=True, **options),
            uses_rng=True,
            options=options,
            communication=_communication,
            precondition=_precondition,
            source=("Su, Xu, Yang 2022, the two-phase algorithm (slides 'Our Two-phase FL algorithm'): Phase 1 "
                    "federated moment descent (steps 1-7), then Phase 2 FedX + clustering with FedAvg(2) from its "
                    "centres"),
            sends=("Phase 1, per round: a client of S_t receives the M_A anchor estimates and sends two d-vector "
                   "moment vectors per anchor; an anchor receives its d x k subspace and sends its new d-vector "
                   "estimate; Phase 2, per round: its decoded label and one d-vector local model, receiving k "
                   "models"),
        )
    ]
