"""IFCA, the Iterative Federated Clustering Algorithm (Ghosh, Chung, Yin, Ramchandran 2020).

Algorithm 2 of the arXiv text (Algorithm 1 of the NeurIPS version), for the squared loss of
the linear model, with ``B`` independent replicas (restarts x step sizes) sharing one data set.
Each round ``t``:

1. the server picks the participating clients ``M_t`` and broadcasts ``theta_1..theta_k``;
2. each participating client ``i`` estimates its identity
   ``j_hat = argmin_j F_i(theta_j)`` with ``F_i(theta) = (1/n_i) sum_r (y_r - <x_r, theta>)^2``
   (a per-client mean, as the official code's ``MSELoss``), ties to the lowest index;
3. option I, *gradient averaging*:

   .. math:: \\theta_j \\leftarrow \\theta_j - \\frac{\\gamma}{m}
             \\sum_{i \\in M_t,\\ \\hat j_i = j} \\nabla F_i(\\theta_j),

   divided by the **total** number of clients ``m``, not the cluster size nor ``|M_t|``;
   option II, *model averaging*: each client runs ``tau`` full-batch gradient steps of size
   ``gamma`` on ``F_i`` from ``theta_{j_hat}`` and the server averages the local models of each
   estimated cluster (plain mean); a cluster that nobody chose keeps its parameters.

With ``resample=True`` the analysis scheme of Sec. 5 / Theorem 1 is used: each client's ``n_i``
points are split once into ``2T`` disjoint subsets of ``n'_i = floor(n_i / (2T))`` points, and
round ``t`` uses subset ``2t`` for the identity estimate and subset ``2t + 1`` for the gradient,
so every round sees fresh data independent of the current iterate.

The work of a round is one GEMM for the ``k`` predictions of every replica (``2 N d B k`` flops),
a Numba pass for losses, argmin and residuals, and per-client GEMMs for the gradient
(``2 N d B`` flops): ``(k + 1) 2 N d`` flops per replica-round, the algorithm's own count.
Option I without resampling sums the per-client gradients a few clients at a time
(:func:`mixreg.kernels.cluster_gradients`), bit-identically to summing them after all clients.
Option II's ``tau`` local steps are affine in the broadcast model: without resampling the first
step's residuals are taken from the round's own predictions (:func:`mixreg.kernels.weighted_residuals`,
numerics change 2 of :mod:`mixreg.provenance`) and the steps are unrolled through each client's
Gram matrix (:class:`mixreg.kernels.LocalStepGrams`, numerics change 4): ``tau - 1`` products of
``2 min(n_i, d)^2`` flops per client, then one gradient, ``(k + 1) 2 N d + (tau - 1) 2 sum_i
min(n_i, d)^2`` flops in all instead of ``(k + 2 tau - 1) 2 N d``; the server's mean of the
clients' models is taken straight from those gradients
(:func:`mixreg.kernels.stepped_cluster_average`, bit for bit the models formed and averaged).
A resampled round's subsets change every round, so its ``tau`` steps cost a prediction and a
gradient each.

Two probes of the mechanism behind Theorem 1 stand next to the driver: :func:`closeness_init`
starts every model at ``theta*_j + alpha Delta u_j`` in a random, an adversarial or a shifted
direction (:data:`CLOSENESS_DIRECTIONS`), and :func:`identity_round` runs one resampled round
and returns the identity estimates the driver made in it (recovered through the driver's own
split and kernels, so it must change with them).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import numpy as np

from .._typing import ArrayLike, HistoryRequest, ScheduleLike
from .. import kernels
from ..validation import check_array, check_choice, check_int, check_real
from ..problems import Problem, check_rng
from ._driver import (
    BLOWUP,
    DriverResult,
    History,
    HistoryRecorder,
    Replicas,
    check_blowup,
    check_history,
    check_problem,
    check_run,
    common_fields,
    data_scales,
    level_scales,
)
from ._local_steps import local_gradient_steps
from ._server import ServerStep, check_schedule, check_server_step, is_constant

__all__ = [
    "IFCAResult",
    "IFCAHistory",
    "ifca",
    "initial_parameters",
    "training_loss",
    "OPTIONS",
    "AGGREGATIONS",
    "INIT_METHODS",
    "CLOSENESS_DIRECTIONS",
    "closeness_directions",
    "closeness_init",
    "IdentityRound",
    "identity_round",
]

OPTIONS = ("gradient", "model")
AGGREGATIONS = ("clients", "data")
INIT_METHODS = ("official", "gaussian", "close", "truth")
#: Directions of the displacement ``theta_j - theta*_j`` of :func:`closeness_init`.
CLOSENESS_DIRECTIONS = ("random", "adversarial", "shifted")


#: IFCA records (``history=True``) the nearest-truth and both matched distances every round, and
#: its objective ``(1/|M_t|) sum_{i in M_t} min_j F_i(theta_j)`` on the identity-estimate data;
#: on request also the iterates, the misclustering, the identities ``j_hat_i`` and the client
#: losses ``min_j F_i(theta_j)`` whose argmin they are.
IFCAHistory = History
HISTORY = ("nearest", "matched_mean", "matched_max")


@dataclass(frozen=True, kw_only=True)
class IFCAResult(DriverResult):
    """Outcome of a batched IFCA run (the common fields of :class:`DriverResult`).

    ``train_loss`` is ``(1/m) sum_i min_j F_i(theta_j)`` on all data; ``assignments`` the
    identity estimate of every client on all its data.
    """


def initial_parameters(
    problem: Problem,
    n_replicas: int,
    method: str = "official",
    *,
    rng: np.random.Generator | None = None,
    k: int | None = None,
    scale: float = 1.0,
    alpha: float = 0.25,
) -> np.ndarray:
    """Initial parameters of shape ``(B, k, d)`` in the problem's dtype.

    Parameters
    ----------
    problem : Problem
    n_replicas : int >= 1
        ``B``.
    method : {"official", "gaussian", "close", "truth"}
        ``"official"``: coordinates Bernoulli(1/2) times ``scale`` (official code: ``scale = 1``,
        *not* scaled like ``theta*``); ``"gaussian"``: coordinates ``N(0, scale^2)``;
        ``"close"``: ``theta*_j + alpha * Delta * u_j`` with ``u_j`` uniform on the unit sphere,
        i.e. exactly at the boundary of Assumption 1 (``alpha = 1/4`` in the NeurIPS version,
        ``1/2 - alpha`` of the arXiv version's closeness ``alpha``); ``"truth"``: ``theta*``
        (oracle initialisation).
    rng : numpy.random.Generator
        Required for the random methods.
    k : int, optional
        Number of models; defaults to the problem's ``k`` (must equal it for "close"/"truth").

    Raises
    ------
    ValueError
        ``rng`` missing for a random method, or ``method="close"`` on a problem whose
        separation is not finite (``k = 1``, or an overflowing separation).
    TypeError
        ``rng`` not a ``numpy.random.Generator`` (a seed must be wrapped in
        ``numpy.random.default_rng(seed)``).

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=10, k=2, n=5, d=3, sigma=0.1, scale=1.0, rng=np.random.default_rng(0))
    >>> theta = initial_parameters(pb, 4, "close", rng=np.random.default_rng(1))
    >>> theta.shape, np.allclose(np.linalg.norm(theta - pb.theta_star, axis=2), 0.25 * pb.separation)
    ((4, 2, 3), True)
    """
    check_problem(problem)
    B = check_int("n_replicas", n_replicas, low=1)
    check_choice("method", method, INIT_METHODS)
    k = problem.k if k is None else check_int("k", k, low=1)
    d = problem.d
    if method in ("close", "truth") and k != problem.k:
        raise ValueError(f"k must equal the problem's k={problem.k} for method={method!r}, got {k}")
    if method == "truth":
        return np.array(np.broadcast_to(problem.theta_star, (B, k, d)), dtype=problem.dtype)
    if rng is None:
        raise ValueError(f"rng is required for method={method!r}: pass a numpy.random.Generator")
    rng = check_rng(rng)
    if method in ("official", "gaussian"):
        scale = check_real("scale", scale, low=0.0)
    if method == "official":
        theta = rng.binomial(1, 0.5, size=(B, k, d)) * scale
    elif method == "gaussian":
        theta = rng.standard_normal((B, k, d)) * scale
    elif method == "close":
        alpha = check_real("alpha", alpha, low=0.0)
        if not np.isfinite(problem.separation):
            raise ValueError(f"method='close' needs a finite separation of theta* (k >= 2), got separation "
                             f"{problem.separation} with k={problem.k}; use 'truth', 'gaussian' or 'official'")
        u = rng.standard_normal((B, k, d))
        u /= np.linalg.norm(u, axis=2, keepdims=True)
        theta = problem.theta_star[None] + alpha * problem.separation * u
    return np.array(theta, dtype=problem.dtype)


def closeness_directions(theta_star: ArrayLike, direction: str | ArrayLike) -> np.ndarray:
    """Unit vectors ``u`` (one per centre) along which to move the estimates from the truth.

    ``"adversarial"``: from each centre towards its nearest other centre (lowest index on ties).
    Moving ``theta_j`` along ``u_j`` brings it closest to the model a worker of the nearest
    cluster compares it with: the worst direction for the identity estimate at a given
    ``||theta_j - theta*_j||``.  For ``k = 2`` the two estimates move towards each other, and
    beyond ``alpha = 1/2`` both clusters' workers swap models: IFCA converges to the permuted
    truth.

    ``"shifted"``: one vector for every estimate, from the closest pair's first centre to its
    second.  ``theta_a`` approaches ``theta*_b`` (the closest pair ``a < b``, lowest indices on
    ties) while ``theta_b`` moves away from ``theta*_a``.  Beyond ``alpha = 1/2`` the workers of
    ``b`` prefer model ``a`` while those of ``a`` keep it: one model takes two clusters (for
    ``k = 2``, every worker), the configuration IFCA cannot leave.

    Parameters
    ----------
    theta_star : array_like of shape (k, d), k >= 2, finite, with distinct rows
    direction : {"adversarial", "shifted"}

    Returns
    -------
    ndarray of shape (k, d), float64
    """
    check_choice("direction", direction, ("adversarial", "shifted"))
    star = check_array("theta_star", theta_star, ndim=2, dtype=np.float64)
    if star.shape[0] < 2:
        raise ValueError(f"theta_star must hold k >= 2 centres to move towards each other, got k={star.shape[0]}")
    diff = star[None, :, :] - star[:, None, :]  # [j, l] = theta*_l - theta*_j
    dist = np.linalg.norm(diff, axis=2)
    if np.any(dist[np.triu_indices(star.shape[0], 1)] == 0):
        raise ValueError("theta_star must have distinct rows: two equal centres give no direction")
    if direction == "adversarial":
        np.fill_diagonal(dist, np.inf)
        u = diff[np.arange(star.shape[0]), np.argmin(dist, axis=1)]
        return u / np.linalg.norm(u, axis=1, keepdims=True)
    dist[np.tril_indices(star.shape[0])] = np.inf
    a, b = np.unravel_index(np.argmin(dist), dist.shape)
    return np.broadcast_to((star[b] - star[a]) / dist[a, b], star.shape).copy()


def closeness_init(
    problem: Problem,
    alpha: float,
    direction: str | ArrayLike,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """``theta_j = theta*_j + alpha Delta u_j`` (one replica) and the directions ``u``.

    ``alpha`` is our closeness convention (:func:`initial_parameters`'s ``"close"``): NeurIPS
    Assumption 1 is ``alpha <= 1/4``; the arXiv version's
    ``(1/2 - alpha') Delta`` is ``alpha = 1/2 - alpha'``.

    Parameters
    ----------
    problem : Problem
    alpha : float >= 0
    direction : {"random", "adversarial", "shifted"}
        ``"random"``: ``u_j`` independent and uniform on the sphere (``initial_parameters``'s
        ``"close"``); ``"adversarial"`` and ``"shifted"``: :func:`closeness_directions`.
    rng : numpy.random.Generator
        Used by ``"random"`` only.

    Returns
    -------
    theta : ndarray of shape (1, k, d), the problem's dtype
    u : ndarray of shape (k, d), float64
    """
    check_choice("direction", direction, CLOSENESS_DIRECTIONS)
    star, delta = problem.theta_star, problem.separation
    if direction == "random":  # the unit sphere of initial_parameters' convention, at alpha = 1
        u = (initial_parameters(problem, 1, "close", rng=rng, alpha=1.0)[0].astype(np.float64) - star) / delta
        u /= np.linalg.norm(u, axis=1, keepdims=True)
    else:
        u = closeness_directions(star, direction)
    theta = (star + alpha * delta * u)[None]
    return np.array(theta, dtype=problem.dtype), u


def _resampled_rounds(problem, n_rounds, rng):
    """Split each client's rows into ``2T`` disjoint random subsets (analysis scheme, Sec. 5)."""
    sizes = problem.sizes
    sub = sizes // (2 * n_rounds)
    if np.any(sub < 1):
        raise ValueError(
            f"resample=True needs n_i >= 2 * n_rounds = {2 * n_rounds} points on every client; "
            f"the smallest client has {int(sizes.min())}"
        )
    idx = np.empty((2 * n_rounds, int(sub.sum())), dtype=np.int64)
    pos = 0
    for i in range(problem.m):
        perm = problem.offsets[i] + rng.permutation(int(sizes[i]))
        s = int(sub[i])
        idx[:, pos : pos + s] = perm[: 2 * n_rounds * s].reshape(2 * n_rounds, s)
        pos += s
    offsets = np.zeros(problem.m + 1, dtype=np.int64)
    np.cumsum(sub, out=offsets[1:])
    return problem.X[idx], problem.y[idx], offsets


#: Drop diverged replicas from the round's products (see :func:`_run`).  A compacted batch's
#: products have other shapes, so its live replicas may differ from an uncompacted run's in the
#: last bits (on a paper-a trial, single-threaded, they were identical); results stay a
#: deterministic function of the inputs.
COMPACT = True


class _Workspace:
    """Preallocated buffers of one data layout (one per distinct ``(N, offsets)``)."""

    def __init__(self, X, Y, group, offsets, B, k, d, dtype, blocked):
        self.X, self.Y, self.group, self.offsets = X, Y, group, offsets
        m = offsets.shape[0] - 1
        N = X.shape[0]
        self.layout = kernels.ClientLayout(offsets, d, B)
        self.weights = (2.0 / np.diff(offsets)).astype(dtype)  # gradient of the per-client mean
        self.pooled = np.full(m, 2.0 / N, dtype=dtype)  # (n_i / N) times that: the pooled mean
        self.P = np.empty((B * k, N), dtype=dtype)
        self.losses = np.empty((B, m, k))
        if blocked:  # the gradient from this round's predictions, a block of clients at a time
            self.blocks = kernels.ClientBlocks(offsets, d, B, dtype)
        else:  # the client-major residuals and the per-client gradients of all clients
            self.R = np.empty(B * N, dtype=dtype)
            self.C = np.empty((m, B, d), dtype=dtype)


def _responses(problem, B, responses, response_of):
    """``(Y, group)`` for the kernels: ``Y`` of shape (G, N), replica ``b`` uses ``Y[group[b]]``."""
    if responses is None:
        return problem.y[None], np.zeros(B, dtype=np.int64)
    return responses, response_of


def check_responses(problem, B, responses, response_of):
    """Validated ``(Y, group)`` of :func:`ifca`'s ``responses`` / ``response_of`` arguments."""
    if responses is None:
        if response_of is not None:
            raise ValueError("response_of is given without responses")
        return _responses(problem, B, None, None)
    Y = np.asarray(responses)
    if Y.ndim != 2 or Y.shape[1] != problem.N or Y.shape[0] < 1:
        raise ValueError(f"responses must have shape (G, N) with N = {problem.N}, got {Y.shape}")
    if Y.dtype != problem.dtype:
        raise TypeError(f"responses must have the problem's dtype {problem.dtype}, got {Y.dtype}")
    if not np.isfinite(Y).all():
        raise ValueError("responses must be finite")
    group = np.asarray(response_of)
    if response_of is None or group.shape != (B,) or group.dtype.kind not in "iu":
        raise ValueError(f"response_of must be an integer array of shape (B,) = ({B},) with responses, got "
                         f"{None if response_of is None else group.shape}")
    if group.min() < 0 or group.max() >= Y.shape[0]:
        raise ValueError(f"response_of must lie in [0, G) = [0, {Y.shape[0]}), got [{group.min()}, {group.max()}]")
    return np.ascontiguousarray(Y), group.astype(np.int64)


def training_loss(
    problem: Problem,
    theta: ArrayLike,
    responses: np.ndarray | None = None,
    response_of: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Final objective and assignments on all data (replica ``b`` on ``responses[response_of[b]]``
    when given, see :func:`ifca`).

    Returns
    -------
    loss : ndarray of shape (B,)
        ``(1/m) sum_i min_j F_i(theta_j)``.
    assignments : ndarray of shape (B, m)

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=10, k=2, n=5, d=3, sigma=0.0, scale=1.0, rng=np.random.default_rng(0))
    >>> loss, assign = training_loss(pb, pb.theta_star[None])
    >>> float(loss[0]), bool((assign[0] == pb.labels).all())
    (0.0, True)
    """
    theta = np.ascontiguousarray(theta, dtype=problem.dtype)
    B, k, _ = theta.shape
    Y, group = _responses(problem, B, responses, response_of)
    P = kernels.predict(theta, problem.X)
    losses = np.empty((B, problem.m, k))
    kernels.client_losses(P, Y, group, problem.offsets, B, k, losses)
    assign = np.empty((B, problem.m), dtype=np.int64)
    best = np.empty((B, problem.m))
    kernels.assign_clients(losses, np.ones(problem.m, dtype=np.bool_), assign, best)
    return best.mean(axis=1), assign


def ifca(
    problem: Problem,
    init: ArrayLike,
    step_size: float | ArrayLike,
    *,
    n_rounds: int = 300,
    option: str = "gradient",
    local_steps: int = 1,
    resample: bool = False,
    participation: float = 1.0,
    aggregation: str = "clients",
    rng: np.random.Generator | None = None,
    tol: float | None = None,
    history: HistoryRequest = False,
    blowup: float | None = BLOWUP,
    responses: np.ndarray | None = None,
    response_of: np.ndarray | None = None,
    server_step: ServerStep | None = None,
    schedule: ScheduleLike | None = None,
) -> IFCAResult:
    r"""Run ``B`` replicas of IFCA (Algorithm 2 of the arXiv text) on one problem.

    Round ``t``, for every replica at once: each participating client :math:`i \in M_t` takes
    :math:`\hat j_i = \arg\min_j F_i(\theta_j)` (ties to the lowest index), then

    .. math::

        \text{option I:}\quad \theta_j \leftarrow \theta_j - \frac{\gamma}{m}
        \sum_{i \in M_t,\ \hat j_i = j} \nabla F_i(\theta_j), \qquad
        \text{option II:}\quad \theta_j \leftarrow \operatorname{mean}_{i:\ \hat j_i = j}
        G_i^{\tau}(\theta_j),

    with :math:`F_i(\theta) = \frac{1}{n_i}\sum_r (y_r - \langle x_r, \theta\rangle)^2` and
    :math:`G_i` one gradient step of size :math:`\gamma` on :math:`F_i`.

    Parameters
    ----------
    problem : Problem
    init : array of shape (B, k, d) or (k, d)
        Initial parameters (see :func:`initial_parameters`); cast to the problem's dtype.
    step_size : float or array of shape (B,)
        ``gamma`` of each replica, > 0.
    n_rounds : int >= 1
        ``T``.
    option : {"gradient", "model"}
        Option I (gradient averaging) or option II (model averaging).
    local_steps : int >= 1
        ``tau``, local full-batch steps of option II (ignored by option I).
    resample : bool
        Use the analysis scheme's fresh disjoint subsets (needs ``n_i >= 2T``).
    aggregation : {"clients", "data"}
        How option I weighs the clients' gradients.  ``"clients"`` (Algorithm 2, the paper and the
        official code): :math:`\frac{\gamma}{m} \sum_{i \in S_j} \nabla F_i`, every client
        counts the same whatever its size, so with unequal sizes a cluster converges to the
        client-weighted least squares.  ``"data"`` (ours, a control): :math:`\gamma \sum_{i \in
        S_j} \frac{n_i}{N} \nabla F_i`, a gradient step on the pooled per-sample mean loss, whose
        fixed point with the right identities is the known-label least squares.  Equal with
        equal client sizes up to the step's scale (``"data"`` = ``"clients"`` with ``gamma`` times
        ``m n / N = 1``).  Option II supports ``"clients"`` only.
    participation : float in (0, 1]
        Fraction of clients drawn (without replacement, ``max(1, round(q m))`` of them) each round
        from ``rng``.  The draw is shared by all replicas of the batch, so replica ``b`` of a batch
        equals a run of ``B = 1`` with the same generator.
    rng : numpy.random.Generator
        Required when ``resample`` or ``participation < 1``.
    tol : float >= 0, optional
        Stop once every live replica's parameters moved by at most ``tol`` (largest coordinate
        change) in a round; by default all ``T`` rounds run.
    history : bool, "all" or sequence of str
        Record :class:`mixreg.algorithms.History` (costs a metric evaluation per round): ``True``,
        the nearest, matched mean and max distances and the round's objective
        :math:`\frac{1}{|M_t|}\sum_{i \in M_t} \min_j F_i(\theta_j)`; ``"all"`` or names among
        :data:`mixreg.algorithms.HISTORY_FIELDS`: those (the iterates, the misclustering, the
        identities :math:`\hat j_i` of round ``t``, ``-1`` for a client not in :math:`M_t`, and
        the client losses :math:`F_i(\theta_{\hat j_i}) = \min_j F_i(\theta_j)`, on the round's
        identity data: the ``2t``-th subset with ``resample``).  The objective is the mean of the
        client losses over :math:`M_t`.
    blowup : float > 1 or None
        Divergence factor of :class:`mixreg.algorithms.Replicas` (default
        :data:`mixreg.algorithms.DEFAULT_BLOWUP`); ``None``: only non-finite values count, the
        official code's semantics.
    responses : array of shape (G, N), optional
        ``G`` response vectors on the problem's ``X`` (the problem's own ``y`` is then unused),
        e.g. one draw of ``X``, :math:`\theta^*` and the noise at ``G`` noise levels
        (:meth:`mixreg.problems.ProblemSpec.generate_levels`, the official code's protocol):
        running the levels as replicas of one batch widens every product ``G``-fold, and replica
        ``b`` equals a separate run on ``responses[response_of[b]]`` (up to the last bits of the
        wider products).  Option I without resampling and with full participation only.
    response_of : int array of shape (B,), with ``responses``
        The response vector of each replica, in ``[0, G)``.
    server_step : mixreg.algorithms.ServerStep, optional
        What the server does with option I's gradient
        (:meth:`~mixreg.algorithms.ServerStep.gradient`) or option II's average
        (:meth:`~mixreg.algorithms.ServerStep.average`); default the plain step above.
    schedule : mixreg.algorithms.Schedule or callable, optional
        Step-size schedule: round ``t`` uses :math:`\gamma_t = \gamma\, s(t)` for option I's
        server step and option II's ``tau`` local steps (:class:`~mixreg.algorithms.Schedule`); e.g.
        :class:`~mixreg.algorithms.InverseTime`.  Default constant, :math:`\gamma` itself.

    Returns
    -------
    IFCAResult

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> rng = np.random.default_rng(0)
    >>> pb = make_problem(m=40, k=2, n=30, d=10, sigma=0.1, scale=1.0, rng=rng)
    >>> res = ifca(pb, initial_parameters(pb, 4, "close", rng=rng), 0.5, n_rounds=50)
    >>> res.theta.shape, res.stop_reason, bool(res.diverged.any())
    ((4, 2, 10), 'completed 50 rounds', False)
    """
    start = time.perf_counter()
    theta, gamma, T, tol = check_run(problem, init, step_size, n_rounds, tol)
    B, k, d = theta.shape
    check_choice("option", option, OPTIONS)
    check_choice("aggregation", aggregation, AGGREGATIONS)
    if option == "model" and aggregation != "clients":
        raise ValueError("aggregation='data' is implemented for option='gradient' only")
    tau = check_int("local_steps", local_steps, low=1)
    q = check_real("participation", participation, low=0.0, high=1.0, low_inclusive=False)
    Y, group = check_responses(problem, B, responses, response_of)
    if responses is not None and (option != "gradient" or resample or q < 1.0):
        raise ValueError("responses are implemented for option='gradient' without resampling and with "
                         "participation=1 only")
    if (resample or q < 1.0) and rng is None:
        raise ValueError("rng is required when resample=True or participation < 1")
    if resample or q < 1.0:
        check_rng(rng)
    server_step = check_server_step(server_step)
    schedule = check_schedule(schedule)
    fields = check_history(history, HISTORY)
    blowup = check_blowup(blowup)

    if responses is None:
        floors = data_scales(problem)
    else:  # each replica's own scales, as in a separate run on its responses
        scales = level_scales(problem, Y)
        floors = (scales[group, 0], scales[group, 1])
    replicas = Replicas(B, T, tol, theta0=theta, floors=floors, blowup=blowup)
    rec = HistoryRecorder(problem, T, B, k, fields) if fields else None
    _run(problem, theta, gamma, replicas, rec, option=option, tau=tau, resample=resample, q=q, rng=rng,
         aggregation=aggregation, Y=Y, group=group, server_step=server_step,
         schedule=schedule)

    with np.errstate(over="ignore", invalid="ignore"):
        train_loss, assignments = training_loss(problem, theta, Y, group)
    train_loss[replicas.diverged] = np.nan
    return IFCAResult(
        theta=theta,
        assignments=assignments,
        train_loss=train_loss,
        **common_fields(replicas, gamma, start, rec),
    )


def _run(problem, theta, gamma, replicas, rec, *, option, tau, resample, q, rng, aggregation, Y, group, server_step,
         schedule):
    """IFCA's loop, in place on ``theta`` (B, k, d) and ``replicas``.

    The round's work runs on the *working* replicas only: once a replica has diverged (it is
    frozen, its updates are discarded), the next round drops it from every product
    (:data:`COMPACT`), so a batch whose large step sizes blow up early costs only its stable
    replicas.  Without a history, which records every replica every round.
    """
    B, k, d = theta.shape
    m, T, dtype = problem.m, replicas.n_rounds, problem.dtype
    if resample:
        Xr, yr, offr = _resampled_rounds(problem, T, rng)
        data = (Xr[0], yr[0][None], offr)
    else:
        data = (problem.X, Y, problem.offsets)
    # option I's server step: (gamma / m) sum_i grad F_i, or gamma sum_i (n_i / N) grad F_i
    step_all = (gamma / m if aggregation == "clients" else gamma).astype(dtype)[:, None, None]
    active = np.ones(m, dtype=np.bool_)
    n_active = max(1, int(round(q * m)))
    compact = COMPACT and rec is None
    blocked = option == "gradient" and not resample
    # option II's tau local steps without resampling: the first step's predictions are the round's
    # (numerics change 2 of mixreg.provenance), the others unrolled through the clients' Gram
    # matrices (numerics change 4); a resampled round's subset is stepped through as it is
    grams = (kernels.LocalStepGrams(problem.X, problem.offsets)
             if option == "model" and not resample and tau > 1 else None)
    work = np.arange(B)
    state = server_step.start(theta)
    constant = is_constant(schedule)
    if rec is not None:
        rec.record_point(0, theta, replicas.diverged)

    # Divergence is detected explicitly (Replicas.accept freezes non-finite replicas), so the
    # floating-point warnings it causes on the way are silenced.
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(T):
            if t == 0 or (compact and replicas.diverged[work].any()):  # (re)size the buffers
                work = np.flatnonzero(replicas.live) if t else work
                Bw = work.size
                ws = _Workspace(data[0], data[1], group[work], data[2], Bw, k, d, dtype, blocked)
                server = ws.weights if aggregation == "clients" else ws.pooled
                step, loc_step = step_all[work], gamma[work].astype(dtype)[None, :, None]
                assign = np.empty((Bw, m), dtype=np.int64)
                best = np.empty((Bw, m))
                grad = np.empty((Bw, k, d), dtype=dtype)
                local = np.empty((m, Bw, d), dtype=dtype) if resample else None
            if not constant:  # the round's steps: gamma_t = gamma s(t), then as gamma above
                gamma_t = gamma[work] * schedule.factor(t)
                step = (gamma_t / m if aggregation == "clients" else gamma_t).astype(dtype)[:, None, None]
                loc_step = gamma_t.astype(dtype)[None, :, None]
            if q < 1.0:
                active[:] = False
                active[rng.choice(m, size=n_active, replace=False)] = True
            # Data of this round: the identity estimate uses (ws.X, ws.Y), the update (gX, gY).
            # Without resampling both are all the data; with it, fresh disjoint subsets 2t, 2t+1.
            if resample:
                ws.X, ws.Y = Xr[2 * t], yr[2 * t][None]
                gX, gY = Xr[2 * t + 1], yr[2 * t + 1][None]
            else:
                gX, gY = ws.X, ws.Y
            th, rows = (theta, slice(None)) if Bw == B else (theta[work], work)

            # identity estimate: j_hat = argmin_j F_i(theta_j)
            kernels.predict(th, ws.X, out=ws.P)
            kernels.client_losses(ws.P, ws.Y, ws.group, ws.offsets, Bw, k, ws.losses)
            kernels.assign_clients(ws.losses, active, assign, best)
            if rec is not None:
                rec.record_round(t, assign, best[:, active].mean(axis=1), replicas.diverged, best)

            if option == "gradient":  # theta_j -= (gamma / m) sum_{i: j_hat_i = j} grad F_i(theta_j)
                if resample:  # the round's predictions are on the identity subset: recompute
                    kernels.gather_selected(th, assign, local)
                    kernels.client_predictions(local, gX, ws.layout, ws.R)
                    kernels.selected_residuals(ws.R, gY[0], ws.offsets, assign, server, ws.R)
                    kernels.client_gradients(ws.R, gX, ws.layout, ws.C)
                    kernels.scatter_add(ws.C, assign, grad)
                else:  # reuse this round's predictions of the assigned model
                    kernels.cluster_gradients(ws.P, gY, ws.group, assign, k, server, gX, ws.blocks, grad)
                new = server_step.gradient(th, grad, step, t=t, state=state, rows=rows)
            else:  # theta_j = mean of the tau-step local models of the clients that chose j
                new = th.copy()
                if resample:  # tau steps on F_i from theta_{j_hat_i}, on the round's gradient subset
                    kernels.gather_selected(th, assign, local)
                    local_gradient_steps(local, gX, ws.layout, loc_step, tau,
                                         lambda R: kernels.selected_residuals(R, gY[0], ws.offsets, assign,
                                                                              ws.weights, R),
                                         ws.R, ws.C)
                    kernels.cluster_average(local, assign, new)
                else:  # the first step's residuals from the round's predictions (numerics change 2),
                    # the other steps unrolled (change 4): one step from theta_{j_hat_i} along the
                    # summed gradients, which the average takes without forming the local models
                    kernels.weighted_residuals(ws.P, gY, ws.group, ws.offsets, assign, k, ws.weights, ws.R)
                    if grams is None:  # tau = 1
                        kernels.client_gradients(ws.R, gX, ws.layout, ws.C)
                    else:
                        coef = ws.weights[:, None] * loc_step.reshape(1, -1)
                        grams.unrolled_gradients(ws.R, gX, ws.layout, coef, tau, ws.C)
                    kernels.stepped_cluster_average(th, loc_step.ravel(), ws.C, assign, new)
                new = server_step.average(th, new, t=t, state=state, rows=rows)

            # the objective (losses of the identity estimate) overflows before the parameters do
            objective = best[:, active].mean(axis=1)
            if Bw < B:  # back to full width: the dropped replicas are frozen and stay so
                new_all, objective_all = theta.copy(), np.full(B, np.nan)
                new_all[work], objective_all[work] = new, objective
                new, objective = new_all, objective_all
            replicas.accept(theta, new, objective, t)
            if rec is not None:
                rec.record_point(t + 1, theta, replicas.diverged)
            if replicas.finished(t):
                break


@dataclass(frozen=True, kw_only=True)
class IdentityRound:
    """One resampled IFCA round and the identity estimates it made.

    Attributes
    ----------
    result : IFCAResult
        The round (``n_rounds = 1``, one replica, history recorded).
    assignments : ndarray of shape (m,), int64
        ``argmin_j F_i(theta_j)`` of every worker on its identity subset (ties: lowest index).
    n_prime : int
        Points of each worker's identity subset.
    """

    result: IFCAResult
    assignments: np.ndarray
    n_prime: int


def identity_round(problem: Problem, theta: ArrayLike, step_size: float, rng: np.random.Generator) -> IdentityRound:
    """One IFCA round (option I, resampling scheme, full participation) and its identity estimates.

    The driver splits each worker's ``n_i`` points into a fresh identity subset and a fresh
    gradient subset (``n' = floor(n_i / 2)`` each) with ``rng``; this reads the identity
    subset from the same split (a copy of ``rng`` taken before the round, through the driver's
    own splitting function) and applies the driver's kernels to it.  The mean of the
    workers' smallest losses must equal the objective the driver recorded for the round.

    Parameters
    ----------
    problem : Problem
    theta : array of shape (k, d) or (1, k, d)
    step_size : float
    rng : numpy.random.Generator

    Returns
    -------
    IdentityRound

    Raises
    ------
    RuntimeError
        If the recovered identity subset is not the one the driver used (the driver's
        splitting changed).
    """
    theta = np.asarray(theta)
    theta = theta if theta.ndim == 3 else theta[None]
    if theta.shape[0] != 1:
        raise ValueError(f"theta must be one replica, shape (k, d) or (1, k, d), got {theta.shape}")
    before = copy.deepcopy(rng)  # the generator as the driver will find it
    result = ifca(problem, theta, step_size, n_rounds=1, resample=True, rng=rng, history=True)
    X, y, offsets = _resampled_rounds(problem, 1, before)
    subset = Problem.from_arrays(X[0], y[0], offsets, problem.labels, problem.theta_star, sigma=problem.sigma)
    objective, assignments = training_loss(subset, theta)
    assert result.history is not None  # asked for
    recorded = result.history.loss[0, 0]
    if not np.isclose(objective[0], recorded, rtol=1e-9, atol=0.0):
        raise RuntimeError(f"the recovered identity subset is not the driver's: objective {objective[0]!r} "
                           f"against the recorded {recorded!r}")
    return IdentityRound(result=result, assignments=assignments[0], n_prime=int(np.diff(offsets).min()))
