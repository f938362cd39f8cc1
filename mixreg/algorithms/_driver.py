"""What every batched algorithm driver does, in one place.

A driver runs ``B`` independent *replicas* (restarts x step sizes) on one data set, with
parameters of shape ``(B, k, d)``.  A public driver function reads, in this order:

1. **validate** its arguments once (:func:`check_problem`, :func:`check_initial_parameters`,
   :func:`check_step_sizes`, ...);
2. **plan** (buffers, operators, data schedules);
3. **run** its loop in a private function; each round ends with :meth:`Replicas.accept`, which
   takes the new parameters of the replicas that stayed finite and freezes, and flags, the others;
   :meth:`Replicas.stop_reason` says whether to stop and why;
4. **build** its result, a frozen dataclass derived from :class:`DriverResult`, whose common
   fields (divergence flags, step sizes, rounds run, stop reason, wall time, history) every
   driver fills the same way, from its :class:`Replicas` (:func:`common_fields`).

Per-round metrics are recorded by one :class:`HistoryRecorder` for every driver.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from .._typing import ArrayLike, HistoryRequest
from ..clustering import _pairwise_plan, _pairwise_sq_distance
from ..validation import check_array, check_int, check_real
from ..problems import Problem

__all__ = [
    "check_problem",
    "check_initial_parameters",
    "check_step_sizes",
    "check_tolerance",
    "check_run",
    "ProblemRefused",
    "Replicas",
    "DriverResult",
    "common_fields",
    "History",
    "HistoryRecorder",
    "HISTORY_FIELDS",
    "check_history",
    "BLOWUP",
    "DEFAULT_BLOWUP",
    "check_blowup",
    "DIVERGENCE_RULES",
    "data_scales",
    "level_scales",
]


# --------------------------------------------------------------------------------------------
# Validation at the public boundary
# --------------------------------------------------------------------------------------------


class ProblemRefused(ValueError):
    """A method cannot take this (valid) problem at these settings, e.g. PACFL's ``p`` above a
    client's number of points: a limit of the method, not a bug; comparisons report it as such."""


def check_problem(problem):
    """``problem`` itself, or ``TypeError`` if it is not a :class:`mixreg.problems.Problem`."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a mixreg Problem, got {type(problem).__name__}")
    return problem


def check_initial_parameters(init, d, dtype):
    """``init`` of shape (B, k, d) or (k, d) as a new C-ordered (B, k, d) array of ``dtype``.

    Always a copy: a driver updates it in place and never modifies the caller's array.
    Integer entries are cast; complex, boolean, text or ``None`` entries are refused (a cast
    would drop an imaginary part or invent ``nan``).
    """
    try:
        kind = np.asarray(init).dtype.kind
    except (TypeError, ValueError):  # ragged: check_array says so
        kind = "f"
    if kind not in "iuf":
        raise ValueError(f"init must be a real-valued array (float or integer entries), got dtype "
                         f"{np.asarray(init).dtype}")
    theta = check_array("init", init, dtype=np.float64)
    if theta.ndim == 2:
        theta = theta[None]
    if theta.ndim != 3 or theta.shape[2] != d or theta.shape[1] < 1 or theta.shape[0] < 1:
        raise ValueError(f"init must have shape (B, k, d) or (k, d) with d={d}, got {np.shape(init)}")
    return np.array(theta, dtype=dtype, order="C")


def check_step_sizes(step_size, B):
    """A scalar or an array of shape (B,), finite and > 0, as a new float64 array of shape (B,).

    Text and booleans are refused, not parsed (``"0.1"`` and ``True`` are no step sizes).
    """
    try:
        kind = np.asarray(step_size).dtype.kind
    except (TypeError, ValueError):  # ragged: the cast below says so
        kind = "f"
    if kind not in "iuf":
        raise TypeError(f"step_size must be a real number or an array of real numbers, got {step_size!r}")
    eta = np.asarray(step_size, dtype=np.float64)
    eta = np.broadcast_to(eta, (B,)).copy() if eta.ndim == 0 else eta.copy()
    if eta.shape != (B,):
        raise ValueError(f"step_size must be a scalar or an array of shape (B,)=({B},), got shape {eta.shape}")
    if not np.all(np.isfinite(eta)) or np.any(eta <= 0):
        raise ValueError(f"step_size must be finite and > 0, got {eta.tolist()}")
    return eta


def step_size_groups(eta: np.ndarray) -> tuple[np.ndarray, list]:
    """The replicas of each distinct step size: ``(values, groups)``.

    For a driver that builds something once per step size (FedX's Phase 2 and the fixed-label
    trainer fold their local steps into one operator per step size) and applies it to the
    replicas that use it.

    Parameters
    ----------
    eta : float64 array of shape (B,)
        Every replica's step size (:func:`check_run` gives it).

    Returns
    -------
    values : ndarray
        The distinct step sizes, ascending (:func:`numpy.unique`).
    groups : list
        ``groups[u]`` selects the replicas whose step size is ``values[u]``: an index array, or
        ``slice(None)`` when all share one step size, so that the driver works on its arrays
        without gathering them (the same products on the same values, without the copies).

    Examples
    --------
    >>> values, groups = step_size_groups(np.array([0.1, 0.2, 0.1]))
    >>> values, groups
    (array([0.1, 0.2]), [array([0, 2]), array([1])])
    >>> step_size_groups(np.full(4, 0.5))[1]
    [slice(None, None, None)]
    """
    values, which = np.unique(eta, return_inverse=True)
    if values.size == 1:
        return values, [slice(None)]
    return values, [np.flatnonzero(which == u) for u in range(values.size)]


def check_run(
    problem: Problem,
    init: ArrayLike,
    step_size: float | ArrayLike,
    n_rounds: int,
    tol: float | None,
) -> tuple[np.ndarray, np.ndarray, int, float | None]:
    """The arguments every replica driver shares, validated in the contract's order:
    ``(theta, eta, T, tol)`` with ``theta`` a new (B, k, d) array of the problem's dtype
    (``check_initial_parameters``), ``eta`` of shape (B,) (``check_step_sizes``),
    ``T = n_rounds >= 1`` and ``tol`` (``check_tolerance``)."""
    check_problem(problem)
    theta = check_initial_parameters(init, problem.d, problem.dtype)
    eta = check_step_sizes(step_size, theta.shape[0])
    T = check_int("n_rounds", n_rounds, low=1)
    return theta, eta, T, check_tolerance(tol)


def check_tolerance(tol):
    """``None`` (run every round) or a finite float >= 0 (see :meth:`Replicas.stop_reason`)."""
    return None if tol is None else check_real("tol", tol, low=0.0)


# --------------------------------------------------------------------------------------------
# Replicas: divergence and stop rules
# --------------------------------------------------------------------------------------------


#: A replica whose objective exceeds this factor times its reference, or whose parameters grow
#: beyond this factor times theirs, has diverged (see :class:`Replicas`): every driver's default
#: ``blowup``.
BLOWUP = 1e6
#: The public name of :data:`BLOWUP`.
DEFAULT_BLOWUP = BLOWUP

#: The divergence rules of :class:`Replicas`, in the order of precedence used when several fire
#: in the same round (:attr:`DriverResult.diverged_rule`).
DIVERGENCE_RULES = ("non-finite", "objective", "parameters")


def check_blowup(blowup: float | None) -> float | None:
    """``blowup`` as a float > 1, or ``None`` (only non-finite values count as divergence, the
    official IFCA code's semantics); one-line ``TypeError`` / ``ValueError`` otherwise."""
    if blowup is None:
        return None
    return check_real("blowup", blowup, low=1.0, low_inclusive=False)


def data_scales(problem: Problem, *, y: np.ndarray | None = None) -> tuple[float, float]:
    """``(objective_floor, parameter_floor)`` of a problem: the scales below which a replica's
    objective and parameter norm never count as a blow-up.

    ``objective_floor`` is the mean squared response (the zero model's per-sample loss, up to the
    driver's constant); ``parameter_floor`` is ``sqrt(mean y^2 / mean x_j^2)``, the norm of a
    parameter that explains the responses' energy (about ``||theta*||`` for isotropic features).
    ``y`` replaces the problem's responses (a run on other responses of the same ``X``).
    """
    return _floors(_mean_square(problem.y if y is None else y), problem.feature_mean_square)


def level_scales(problem: Problem, Y: np.ndarray) -> np.ndarray:
    """:func:`data_scales` of every response vector ``y`` of ``Y`` (shape (G, N)) on the problem's
    ``X``, as an array of shape (G, 2); ``X``'s mean square is computed once per problem
    (:attr:`~mixreg.problems.Problem.feature_mean_square`; 55 ms at (m, n, d) = (400, 100,
    1000), float32, one thread), the values are the same."""
    x2 = problem.feature_mean_square
    return np.array([_floors(_mean_square(y), x2) for y in Y])


def _mean_square(a):
    return float(np.mean(np.square(a, dtype=np.float64)))


def _floors(y2, x2):
    return max(y2, np.finfo(float).tiny), (np.sqrt(y2 / x2) if x2 > 0 else 1.0)


class Replicas:
    """Divergence flags of ``B`` replicas and the stop rules of a driver's loop.

    A replica *diverges* in round ``t`` when, in that round,

    * its new parameters or its objective are not all finite, or
    * its objective (per-sample mean loss at ``theta_t``) exceeds ``blowup`` times its
      reference, the larger of its objective at the initial point and the problem's objective
      floor (:func:`data_scales`), or
    * the largest row norm of its new parameters exceeds ``blowup`` times the larger of its
      initial largest row norm and the problem's parameter floor.

    Gradient methods that diverge grow geometrically, so the default factor of a million
    (:data:`DEFAULT_BLOWUP`) is reached within a few dozen rounds, long before float64
    overflows (which takes hundreds), and no stable run comes near it.  The replica is then
    frozen at its parameters before the offending update, flagged (``diverged``,
    ``diverged_round = t``) and never updated again; the others go on.  ``diverged_rule`` says
    which rule fired: ``"non-finite"``, ``"objective"`` or ``"parameters"``; when several fire in
    the same round, the first of that list (:data:`DIVERGENCE_RULES`); ``""`` for a replica that
    did not diverge.

    Parameters
    ----------
    B : int
        Number of replicas.
    n_rounds : int
        ``T``, the most rounds the driver runs.
    tol : float or None
        Convergence tolerance of :meth:`stop_reason`; ``None`` runs all ``T`` rounds.
    theta0 : ndarray of shape (B, k, d), optional
        The initial parameters (their norms are the parameters' reference).
    floors : (float, float), optional
        ``(objective_floor, parameter_floor)`` (:func:`data_scales`); without them only
        non-finite values count as divergence.
    blowup : float > 1 or None
        The factor of the objective and parameter rules (validated by :func:`check_blowup`;
        default :data:`DEFAULT_BLOWUP`); ``None``: only non-finite values count, as without
        ``floors`` (the official IFCA code's semantics).
    """

    def __init__(
        self,
        B: int,
        n_rounds: int,
        tol: float | None = None,
        *,
        theta0: np.ndarray | None = None,
        floors: tuple[float, float] | np.ndarray | None = None,
        blowup: float | None = BLOWUP,
    ) -> None:
        self.n_rounds = n_rounds
        self.tol = tol
        self.blowup = check_blowup(blowup)
        self.diverged = np.zeros(B, dtype=np.bool_)
        self.diverged_round = np.full(B, -1, dtype=np.int64)
        self.diverged_rule = np.full(B, "", dtype=f"<U{max(map(len, DIVERGENCE_RULES))}")
        self.rounds_run = 0
        self.change = np.full(B, np.inf)
        self.reason = f"completed {n_rounds} rounds"
        self.objective_ref: np.ndarray | None = None
        self.objective_floor: float | None = None
        self.param_limit: np.ndarray | None = None
        if floors is not None and self.blowup is not None:
            self.objective_floor = floors[0]
            norms = _row_norms(theta0) if theta0 is not None else np.zeros(B)
            self.param_limit = self.blowup * np.maximum(norms, floors[1])

    @property
    def live(self) -> np.ndarray:
        """Mask of the replicas that have not diverged."""
        return ~self.diverged

    def accept(
        self,
        theta: np.ndarray,
        new: np.ndarray,
        objective: np.ndarray,
        t: int,
        *,
        moved: np.ndarray | None = None,
        state: np.ndarray | None = None,
    ) -> None:
        """End round ``t``: in place, ``theta[b] = new[b]`` for every replica that did not diverge.

        Parameters
        ----------
        theta : ndarray of shape (B, k, d)
            IN/OUT: the current parameters.
        new : ndarray of shape (B, k, d)
            IN: the round's proposed parameters.
        objective : ndarray of shape (B,)
            IN: the round's objective at ``theta`` (per-sample mean loss; it overflows before the
            parameters do).
        t : int
            The round.
        moved : ndarray of shape (B,), optional
            IN: how far the rest of a replica's state moved this round (largest coordinate
            change), for a driver whose state is more than ``theta`` (FeSEM's local models): the
            tolerance stop then needs both to rest.
        state : ndarray of shape (B, r, d), optional
            IN: the rest of a replica's new state (FeSEM's local models, replica-major), under
            the same non-finite and parameter rules as ``new``.
        """
        objective = np.asarray(objective, dtype=np.float64)
        arrays = (new,) if state is None else (new, state)
        # with the parameter rule, each array's row norms are read once and also say where it is
        # finite (_finite_rows); without it, only finiteness is read
        norms = [_row_norms(a) for a in arrays] if self.objective_floor is not None else []
        finite = np.isfinite(objective)
        for i, a in enumerate(arrays):
            finite &= _finite_rows(a, norms[i] if norms else None)
        fired = {"non-finite": ~finite}
        if self.objective_floor is not None:
            assert self.blowup is not None  # the floors are set only with a blowup factor
            if self.objective_ref is None:
                self.objective_ref = np.maximum(np.where(np.isfinite(objective), objective, 0.0),
                                                self.objective_floor)
            with np.errstate(invalid="ignore"):
                fired["objective"] = ~(objective <= self.blowup * self.objective_ref)
                largest = norms[0] if len(norms) == 1 else np.maximum(norms[0], norms[1])
                fired["parameters"] = ~(largest <= self.param_limit)
        newly = ~self.diverged
        newly &= np.logical_or.reduce(list(fired.values()))
        for rule in reversed(DIVERGENCE_RULES):  # the first rule in the list wins
            if rule in fired:
                self.diverged_rule[newly & fired[rule]] = rule
        self.diverged_round[newly] = t
        self.diverged |= newly
        keep = ~self.diverged
        if self.tol is not None:
            self.change[keep] = np.abs(new[keep] - theta[keep]).max(axis=(1, 2))
            if moved is not None:
                self.change[keep] = np.maximum(self.change[keep], moved[keep])
        theta[keep] = new[keep]
        self.rounds_run = t + 1

    def finished(self, t: int) -> bool:
        """After round ``t``: ``True`` to stop now (``reason`` then says why)."""
        reason = self.stop_reason(t)
        if reason is not None:
            self.reason = reason
        return reason is not None

    def stop_reason(self, t: int) -> str | None:
        """After round ``t``: why to stop now, or ``None`` to go on.

        * ``"all replicas diverged (last at round t)"``;
        * ``"converged: every replica moved less than tol in round t"`` when a tolerance was
          given and the largest coordinate change of every live replica in round ``t`` is at
          most ``tol``;
        * ``"completed T rounds"`` after the last round.
        """
        if self.diverged.all():
            return f"all replicas diverged (last at round {t})"
        if self.tol is not None and np.all(self.change[self.live] <= self.tol):
            return f"converged: every replica moved less than tol={self.tol:g} in round {t}"
        if t + 1 >= self.n_rounds:
            return f"completed {self.n_rounds} rounds"
        return None


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class History:
    """Per-round metrics of every replica (row 0 of the ``T + 1`` arrays is the initial point).

    Entries of a replica are ``nan`` from the round in which it diverged on; a metric a driver
    does not record is ``None``.  Distances need the model count to equal the problem's ``k``
    (else ``nan``), except ``nearest``.

    Attributes
    ----------
    nearest : ndarray of shape (T + 1, B) or None
        Nearest-truth mean distance (the official IFCA code's ``min_dist``).
    matched_mean : ndarray of shape (T + 1, B) or None
        Permutation-matched mean distance (the IFCA paper's ``dist``).
    matched_max : ndarray of shape (T + 1, B) or None
        Permutation-matched max distance (Su-Xu-Yang's ``d``).
    theta : ndarray of shape (T + 1, B, k, d) or None
        The iterates.
    loss : ndarray of shape (T, B)
        Round ``t``'s objective as the driver defines it (see the driver's docstring), on the
        data of that round's identity estimate, before the update.
    misclustered_clients : ndarray of shape (T, B) or None
        Fraction of participating clients whose estimated identity in round ``t`` is not the
        model matched to their true cluster (matching: the permutation of ``matched_max``).
    misclustered_data : ndarray of shape (T, B) or None
        The same, weighted by :math:`w_i = n_i / N`.
    assignments : ndarray of shape (T, B, m), int64, or None
        Every client's estimated identity in round ``t`` (the one the round's update used),
        ``-1`` for a client not taking part in that round and for every client of a replica
        from the round after it diverged on.
    client_losses : ndarray of shape (T, B, m) or None
        Every client's loss in round ``t`` at the model it chose, the quantity whose argmin gave
        its identity (each driver states which: e.g. IFCA's :math:`\\min_j F_i(\\theta_j)`);
        ``nan`` where ``assignments`` is ``-1``.
    """

    nearest: np.ndarray | None = None
    matched_mean: np.ndarray | None = None
    matched_max: np.ndarray | None = None
    theta: np.ndarray | None = None
    loss: np.ndarray
    misclustered_clients: np.ndarray | None = None
    misclustered_data: np.ndarray | None = None
    assignments: np.ndarray | None = None
    client_losses: np.ndarray | None = None


#: The metrics a :class:`HistoryRecorder` can record (``"misclustering"`` gives both
#: ``misclustered_clients`` and ``misclustered_data``); the objective ``loss`` is always recorded.
HISTORY_FIELDS = ("nearest", "matched_mean", "matched_max", "theta", "misclustering", "assignments",
                  "client_losses")


def check_history(
    history: HistoryRequest,
    default: tuple[str, ...],
    *,
    unavailable: tuple[str, ...] = (),
    why: str = "",
) -> tuple[str, ...]:
    """The history fields a driver records, from its ``history`` argument.

    Parameters
    ----------
    history : bool, "all" or sequence of str
        ``False``: none (no history); ``True``: the driver's ``default`` (the set it has always
        recorded); ``"all"``: every field of :data:`HISTORY_FIELDS` the driver can record; a
        sequence of names (or one name): those.
    default : tuple of str
        The driver's ``history=True`` set.
    unavailable : tuple of str
        Fields this driver cannot record; asking for one by name is a ``ValueError``.
    why : str
        Why they are unavailable (appended to that error).

    Returns
    -------
    tuple of str
        The fields, in the order of :data:`HISTORY_FIELDS`; empty for ``False``.

    Examples
    --------
    >>> check_history(True, ("nearest",)), check_history(("theta", "assignments"), ())
    (('nearest',), ('theta', 'assignments'))
    >>> len(check_history("all", ())) == len(HISTORY_FIELDS)
    True
    """
    if isinstance(history, (bool, np.bool_)):
        return tuple(default) if history else ()
    if isinstance(history, str):
        names = [f for f in HISTORY_FIELDS if f not in unavailable] if history == "all" else [history]
    else:
        try:
            names = list(history)
        except TypeError:
            names = None
        if names is None or not all(isinstance(f, str) for f in names):
            raise TypeError(f"history must be False, True, 'all' or a sequence of names among "
                            f"{', '.join(HISTORY_FIELDS)}; got {history!r}")
    unknown = [f for f in names if f not in HISTORY_FIELDS]
    if unknown:
        raise ValueError(f"history names must be among {', '.join(HISTORY_FIELDS)} (or 'all', True, False); "
                         f"got {', '.join(map(repr, unknown))}")
    refused = [f for f in names if f in unavailable]
    if refused:
        raise ValueError(f"history: this driver cannot record {', '.join(map(repr, refused))}"
                         + (f" ({why})" if why else ""))
    return tuple(f for f in HISTORY_FIELDS if f in names)


class HistoryRecorder:
    """Records :class:`History` for ``B`` replicas over at most ``T`` rounds.

    Parameters
    ----------
    problem : Problem
    T, B, k : int
    fields : sequence of str
        Subset of :data:`HISTORY_FIELDS`.  With ``"misclustering"``, ``matched_max`` is the
        distance under the bottleneck permutation that also matches the identities (one matching
        per iterate serves both; equal to :func:`mixreg.metrics.matched_max_distance` up to
        rounding); without it, it is :func:`mixreg.metrics.matched_max_distance` itself.

    Attributes
    ----------
    wants_client_losses : bool
        ``"client_losses"`` was asked for: the driver passes them to :meth:`record_round`
        (computing them only then, when they cost extra work).
    """

    def __init__(self, problem: Problem, T: int, B: int, k: int, fields: tuple[str, ...]) -> None:
        from .. import metrics  # metrics are only needed when a history is asked for

        unknown = sorted(set(fields) - set(HISTORY_FIELDS))
        if unknown:
            raise ValueError(f"unknown history fields {unknown}; allowed: {list(HISTORY_FIELDS)}")
        self.metrics = metrics
        self.problem = problem
        self.fields = frozenset(fields)
        self.same_k = k == problem.k
        self.w = problem.sizes / problem.N
        nan = lambda *shape: np.full(shape, np.nan)  # noqa: E731
        self.nearest = nan(T + 1, B) if "nearest" in self.fields else None
        self.matched_mean = nan(T + 1, B) if "matched_mean" in self.fields else None
        self.matched_max = nan(T + 1, B) if "matched_max" in self.fields or "misclustering" in self.fields else None
        self.theta = nan(T + 1, B, k, problem.d) if "theta" in self.fields else None
        self.loss = nan(T, B)
        mis = "misclustering" in self.fields
        self.mis_clients = nan(T, B) if mis else None
        self.mis_data = nan(T, B) if mis else None
        self.assign = np.full((T, B, problem.m), -1, dtype=np.int64) if "assignments" in self.fields else None
        self.wants_client_losses = "client_losses" in self.fields
        self.client_losses = nan(T, B, problem.m) if self.wants_client_losses else None
        self.perm: np.ndarray | None = None

    def record_point(self, t: int, theta: np.ndarray, diverged: np.ndarray) -> None:
        """Record the iterate ``theta_t`` (B, k, d) of the live replicas."""
        live = ~diverged
        self.perm = None
        if self.theta is not None:
            self.theta[t, live] = theta[live]
        if not live.any():
            return
        th = theta[live]
        star = self.problem.theta_star
        if self.nearest is not None:
            self.nearest[t, live] = self.metrics.nearest_truth_distance(th, star)
        if not self.same_k:
            return
        if self.matched_mean is not None:
            self.matched_mean[t, live] = self.metrics.matched_mean_distance(th, star)
        if self.mis_clients is not None:
            perm = self.metrics.best_permutation(th, star, objective="max")
            aligned = np.take_along_axis(th.astype(np.float64), perm[:, :, None], axis=1)
            assert self.matched_max is not None  # recorded with the misclustering
            self.matched_max[t, live] = np.linalg.norm(aligned - star, axis=2).max(axis=1)
            self.perm = perm
        elif self.matched_max is not None:
            self.matched_max[t, live] = self.metrics.matched_max_distance(th, star)

    def record_round(
        self,
        t: int,
        assign: np.ndarray,
        loss: np.ndarray,
        diverged: np.ndarray,
        client_losses: np.ndarray | None = None,
    ) -> None:
        """Record round ``t``'s objective (B,), identities (B, m) (``-1``: not taking part) and,
        when asked for, the clients' losses (B, m) at the models they chose (``nan`` is kept
        where the identity is ``-1``)."""
        live = ~diverged
        self.loss[t] = np.where(diverged, np.nan, loss)
        if self.assign is not None:
            self.assign[t, live] = assign[live]
        if self.client_losses is not None:
            if client_losses is None:
                raise RuntimeError("the driver did not pass the client losses it was asked to record")
            self.client_losses[t, live] = np.where(assign[live] >= 0, client_losses[live], np.nan)
        if self.perm is not None:
            assert self.mis_clients is not None and self.mis_data is not None  # perm is set for them
            a = assign[live]
            wrong = a != self.perm[:, self.problem.labels]
            part = a >= 0
            self.mis_clients[t, live] = (wrong & part).sum(axis=1) / np.maximum(part.sum(axis=1), 1)
            self.mis_data[t, live] = (wrong & part) @ self.w

    def result(self, rounds_run: int) -> History:
        """The :class:`History` of the first ``rounds_run`` rounds."""
        cut = lambda a, n: None if a is None else a[:n]  # noqa: E731
        return History(
            nearest=cut(self.nearest, rounds_run + 1),
            matched_mean=cut(self.matched_mean, rounds_run + 1),
            matched_max=cut(self.matched_max, rounds_run + 1),
            theta=cut(self.theta, rounds_run + 1),
            loss=self.loss[:rounds_run].copy(),
            misclustered_clients=cut(self.mis_clients, rounds_run),
            misclustered_data=cut(self.mis_data, rounds_run),
            assignments=cut(self.assign, rounds_run),
            client_losses=cut(self.client_losses, rounds_run),
        )


@dataclass(frozen=True, kw_only=True)
class DriverResult:
    """Fields every batched driver's result has.

    Attributes
    ----------
    theta : ndarray of shape (B, k, d)
        Final parameters; for a diverged replica, its last finite parameters (it is frozen).
    assignments : ndarray of shape (B, m), int64
        Final cluster identity of every client under the final parameters, on all its data.
    train_loss : ndarray of shape (B,)
        Final training objective on all data (each driver states its own); ``nan`` for a
        diverged replica, so selecting the replica with the lowest loss never picks one.
    diverged : ndarray of shape (B,), bool
        The replica produced a non-finite or blown-up parameter or objective and was frozen
        (the rules of :class:`Replicas`, factor ``blowup``).
    diverged_round : ndarray of shape (B,), int64
        Round in which it diverged, ``-1`` if it did not.
    diverged_rule : ndarray of shape (B,), str, or None
        The rule that fired in that round: ``"non-finite"``, ``"objective"`` or
        ``"parameters"`` (the first of these when several fired, :data:`DIVERGENCE_RULES`);
        ``""`` if it did not diverge.  Every driver of this package fills it
        (:func:`common_fields`); ``None`` (the default) only from a user's driver that builds
        its result without :func:`common_fields`, which then does not say.
    step_sizes : ndarray of shape (B,)
    n_rounds : int
        Rounds run.
    stop_reason : str
        Why the loop ended (see :meth:`Replicas.stop_reason`).
    wall_time : float
        Seconds spent in the driver.
    history : History or None
    """

    theta: np.ndarray
    assignments: np.ndarray
    train_loss: np.ndarray
    diverged: np.ndarray
    diverged_round: np.ndarray
    diverged_rule: np.ndarray | None = None
    step_sizes: np.ndarray
    n_rounds: int
    stop_reason: str
    wall_time: float
    history: History | None = None

    @property
    def finite(self) -> np.ndarray:
        """``~diverged``."""
        return ~self.diverged

    def best_replica(self, among: ArrayLike | None = None) -> int | None:
        """Index of the replica with the lowest final training loss, or ``None`` if all diverged.

        The run a user could choose without knowing the truth (ties: the lowest index).
        Diverged replicas are never chosen; when every candidate diverged there is no choice,
        and callers must report that (as ``nan``), not fall back to an arbitrary replica.

        Parameters
        ----------
        among : int array, optional
            Candidate replicas (default: all).
        """
        among = np.arange(self.theta.shape[0]) if among is None else np.asarray(among)
        loss = np.where(self.diverged[among], np.nan, self.train_loss[among])
        if not np.isfinite(loss).any():
            return None
        return int(among[np.nanargmin(loss)])


def common_fields(
    replicas: Replicas,
    step_sizes: np.ndarray,
    start: float,
    history: HistoryRecorder | History | None = None,
) -> dict[str, Any]:
    """The fields of a :class:`DriverResult` that a run's :class:`Replicas` decide, as keyword
    arguments of the driver's result: ``Result(theta=..., assignments=..., train_loss=...,
    **common_fields(replicas, eta, start, rec))``.

    Parameters
    ----------
    replicas : Replicas
        The loop's divergence flags, rounds run and stop reason.
    step_sizes : ndarray of shape (B,)
    start : float
        The :func:`time.perf_counter` value at the driver's start (``wall_time`` is taken now).
    history : HistoryRecorder or History or None
        A recorder gives its :class:`History` of the rounds run.

    Returns
    -------
    dict
        ``diverged``, ``diverged_round``, ``diverged_rule``, ``step_sizes``, ``n_rounds``,
        ``stop_reason``, ``wall_time`` and ``history``.
    """
    wall_time = elapsed(start)
    if isinstance(history, HistoryRecorder):
        history = history.result(replicas.rounds_run)
    return dict(diverged=replicas.diverged, diverged_round=replicas.diverged_round,
                diverged_rule=replicas.diverged_rule, step_sizes=step_sizes,
                n_rounds=replicas.rounds_run, stop_reason=replicas.reason, wall_time=wall_time, history=history)


def _row_norms(theta):
    """Largest row norm of every replica's parameters (B, k, d) -> (B,), in float64: bit for bit
    ``sqrt(square(theta, dtype=float64).sum(axis=2)).max(axis=1)`` (NumPy's pairwise order,
    :func:`mixreg.clustering._pairwise_plan`; NaN if a row's norm is), in one pass over any
    layout (FeSEM's local models are a transposed view) without the float64 temporary."""
    out = np.empty(theta.shape[0])
    if theta.shape[1] == 0:  # NumPy's max has no identity: its error
        raise ValueError("zero-size array to reduction operation maximum which has no identity")
    _row_norms_into(theta.transpose(1, 0, 2), out)
    return out


@njit(cache=True)
def _row_norms_into(rows, out):
    """``out[b]``: the largest of ``||rows[j, b]||`` over ``j`` (NaN wherever a norm is), for
    ``rows`` (k, B, d) of any layout, read model by model: a replica-major ``(B, k, d)`` array's
    transpose reads a row at a time, FeSEM's client-major local models in memory order (a maximum
    is exact, so the order does not change it)."""
    k, B, d = rows.shape
    lo, size = _pairwise_plan(d)
    sums = np.empty(64)
    zero = np.zeros(d)
    out[:] = -np.inf
    for j in range(k):
        for b in range(B):
            if np.isnan(out[b]):
                continue
            norm = np.sqrt(_pairwise_sq_distance(rows[j, b], zero, lo, size, sums))
            if np.isnan(norm) or norm > out[b]:
                out[b] = norm


def _finite_rows(theta, norms=None):
    """``isfinite(theta).all(axis=(1, 2))`` of ``theta`` (B, k, d), one pass over any layout.

    With ``norms``, :func:`_row_norms` of ``theta``, only the replicas whose norm is not finite
    are read again: a finite norm is a finite sum of the squares of every value, so every value
    is finite; a value that is not makes the norm inf or NaN, and so can a finite value whose
    square overflows (hence the second look).
    """
    if norms is None:
        out = np.empty(theta.shape[0], dtype=np.bool_)
        _all_finite(theta, out)
        return out
    out = np.isfinite(norms)
    for b in np.flatnonzero(~out):
        out[b] = bool(np.isfinite(theta[b]).all())
    return out


@njit(cache=True)
def _all_finite(theta, out):
    """``out[b] = isfinite(theta[b]).all()`` for ``theta`` (B, k, d) of any layout, in place."""
    B, k, d = theta.shape
    for b in range(B):
        ok = True
        for j in range(k):
            for c in range(d):
                if not np.isfinite(theta[b, j, c]):
                    ok = False
                    break
            if not ok:
                break
        out[b] = ok


def elapsed(start):
    """Seconds since ``start`` (a :func:`time.perf_counter` value)."""
    return time.perf_counter() - start
