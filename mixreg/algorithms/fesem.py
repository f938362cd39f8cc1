"""FeSEM, multi-center federated learning (Xie et al. 2020/2023), for the linear model.

Algorithm 1 ("FeSEM - Federated Stochastic EM") with Algorithm 2 ("Local_update") of the paper,
for the squared loss of the linear model, with ``B`` replicas (restarts x step sizes) sharing
one data set.  The state is a set of ``k`` *centres* :math:`\\tilde W^{(j)}` on the server and a
*local model* :math:`W_i` on every client.  One FeSEM iteration (a round ``t``):

1. **E-step** (Algorithm 1, lines 3-4, Eq. 7): the server, which holds every client's last local
   model, assigns each client to the nearest centre *in parameter space*,

   .. math:: z_i = \\arg\\min_j \\lVert W_i - \\tilde W^{(j)} \\rVert_2^2

   (Eq. 5's L2 distance; ties to the lowest index, :func:`mixreg.kernels.argmin_skip_nan`).
   The data are not looked at: this is not the loss-based decoder of IFCA or Su-Xu-Yang.
2. **M-step** (lines 6-7, Eq. 8): each centre becomes the average of its clients' local models,

   .. math:: \\tilde W^{(j)} = \\frac{\\sum_{i:\\, z_i = j} \\omega_i W_i}{\\sum_{i:\\, z_i = j}
             \\omega_i},

   :math:`\\omega_i = 1` (``weights="uniform"``: Eq. 8 and the macro average of Eqs. 4 and 6) or
   :math:`\\omega_i = n_i` (``weights="data"``: the micro average the paper mentions after Eq. 4,
   the weights of Eq. 3).  A centre no client chose keeps its value (Eq. 8 is 0/0 there).
3. **Local update** (lines 8-11, Algorithm 2): every client starts from its centre and takes
   ``s`` (``local_steps``, the paper's ``N``; ``N = 1`` in its experiments) full-batch gradient
   steps on its local loss
   :math:`\\ell_i(w) = \\frac{1}{2 n_i} \\lVert y_i - X_i w \\rVert^2`:

   .. math:: W_i = G_i^s(\\tilde W^{(z_i)}), \\qquad
             G_i(w) = w - \\frac{\\eta}{n_i} X_i^\\top (X_i w - y_i),

   and returns :math:`W_i` to the server.

Before the first E-step every client trains its local model on its own data (Algorithm 1,
line 1 initialises the :math:`W_i`; Sec. 5.1 clusters them to initialise the centres, so they
exist before round 1): ``warm_start`` says how (our choice, see :func:`warm_start_models`).

Implementation: the ``B`` replicas are batched (centres ``(B, k, d)``, local models
``(m, B, d)``, one step size per replica).  The E-step costs ``O(B m k d)`` (explicit
differences, as :mod:`mixreg.clustering`, in one serial Numba pass over all replicas that sums in
NumPy's order, so it equals :func:`mixreg.clustering.squared_distances` bit for bit); the
round's objective one prediction pass (``2 B N d`` flops); each local step a prediction and a
gradient pass (``4 B N d``), computed by the per-client kernels of :mod:`mixreg.kernels` in one
call for all replicas: ``6 B N d`` flops per round with ``s = 1``.

References
----------
.. [1] M. Xie, G. Long, T. Shen, T. Zhou, X. Wang, J. Jiang, "Multi-Center Federated Learning",
   arXiv:2005.01026 (2020); WWW Journal 2023.  Algorithms 1 and 2, Eqs. 3-8, Sec. 5.1.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from .._typing import ArrayLike, HistoryRequest, ScheduleLike
from .. import kernels
from ..validation import check_choice, check_int
from ..clustering import _pairwise_plan, _pairwise_sq_distance, kmeans
from ..local_solvers import gradient_steps, local_least_squares
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
)
from ._local_steps import local_gradient_steps
from ._registry import Algorithm, _bind
from ._server import ServerStep, check_schedule, check_server_step, is_constant

__all__ = [
    "FeSEMResult",
    "FeSEMHistory",
    "fesem",
    "initial_centres",
    "warm_start_models",
    "WEIGHTS",
    "WARM_STARTS",
]

#: How the M-step weighs the local models of a cluster (Eq. 8 / the micro average of Sec. 4.2).
WEIGHTS = ("uniform", "data")

#: How the local models are trained before the first E-step (Algorithm 1, line 1).
WARM_STARTS = ("least_squares", "ridge", "gradient")

#: FeSEM records the matched max distance of the centres, the centres, the misclustering of the
#: E-step, and the round's objective :math:`\frac{1}{2N} \sum_i \lVert y_i - X_i
#: \tilde W^{(z_i)} \rVert^2` at the round's centres and E-step.
FeSEMHistory = History
HISTORY = ("matched_max", "theta", "misclustering")


@dataclass(frozen=True, kw_only=True)
class FeSEMResult(DriverResult):
    """Outcome of a batched FeSEM run: the common fields of
    :class:`mixreg.algorithms.DriverResult` (``theta`` are the centres) and FeSEM's own.

    ``assignments`` are the E-step (Eq. 7) of the final local models against the final centres,
    and ``train_loss`` is :math:`\\frac{1}{2N} \\sum_i \\lVert y_i - X_i \\tilde W^{(z_i)}
    \\rVert^2` under them (each client's squared loss under its assigned centre, per sample, as
    the other drivers).

    Attributes
    ----------
    local_models : ndarray of shape (B, m, d)
        The clients' final local models :math:`W_i` (a diverged replica's last finite ones).
    md_loss : ndarray of shape (B,)
        The paper's objective, the multi-center distance loss of Eq. 6,
        :math:`\\frac{1}{m} \\sum_i \\lVert W_i - \\tilde W^{(z_i)} \\rVert^2`, at the final state;
        ``nan`` for a diverged replica.
    weights : str
        The M-step's weights (``"uniform"`` or ``"data"``).
    local_steps : int
        ``s``, the local gradient steps of Algorithm 2.
    warm_start : str
        How the local models were first trained.
    """

    local_models: np.ndarray
    md_loss: np.ndarray
    weights: str
    local_steps: int
    warm_start: str


# --------------------------------------------------------------------------------------------
# Local models before the first E-step, and the paper's initial centres
# --------------------------------------------------------------------------------------------


def warm_start_models(problem: Problem, warm_start: str = "least_squares", *, step_size: float | None = None,
                      local_steps: int = 1) -> np.ndarray:
    """The local models every client trains on its own data before FeSEM starts.

    Algorithm 1, line 1 initialises :math:`\\{W_i\\}` without saying how; Sec. 3 (Eq. 1) trains
    a local model as :math:`W_i' = \\arg\\min_W L(\\mathcal{M}_i, \\mathcal{D}_i, W)`.  Ours:

    * ``"least_squares"`` (the default of :func:`fesem`): Eq. 1 solved exactly,
      :math:`W_i = X_i^+ y_i` (:func:`mixreg.local_solvers.local_least_squares`,
      ``method="min_norm"``: the minimum-norm interpolant when :math:`n_i < d`);
    * ``"ridge"``: the same with the small relative ridge of
      :func:`mixreg.local_solvers.local_least_squares` (``method="ridge"``), safer when
      :math:`n_i \\approx d`;
    * ``"gradient"``: Algorithm 2 from zero, :math:`W_i = G_i^s(0)` (``s`` local gradient steps
      of size :math:`\\eta` on :math:`\\ell_i`, :func:`mixreg.local_solvers.gradient_steps`), the
      cheapest "local training"; it depends on the replica's step size.

    Parameters
    ----------
    problem : Problem
    warm_start : {"least_squares", "ridge", "gradient"}
    step_size : float > 0, optional
        :math:`\\eta`; required by (and only used by) ``"gradient"``.
    local_steps : int >= 1
        ``s`` of ``"gradient"``.

    Returns
    -------
    local_models : ndarray of shape (m, d), float64

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=6, k=2, n=20, d=3, sigma=0.0, scale=1.0, rng=np.random.default_rng(0))
    >>> W = warm_start_models(pb)  # sigma = 0 and n_i > d: each client recovers its theta*
    >>> bool(np.allclose(W, pb.theta_star[pb.labels]))
    True
    """
    check_problem(problem)
    check_choice("warm_start", warm_start, WARM_STARTS)
    if warm_start == "gradient":
        if step_size is None:
            raise ValueError("step_size is required for warm_start='gradient'")
        return gradient_steps(problem.X, problem.y, problem.offsets, np.zeros(problem.d), step_size, local_steps)
    method = "min_norm" if warm_start == "least_squares" else "ridge"
    return local_least_squares(problem.X, problem.y, problem.offsets, method=method)


def initial_centres(problem: Problem, n_replicas: int, k: int | None = None, *, warm_start: str = "least_squares",
                    n_init: int = 20, rng: np.random.Generator) -> np.ndarray:
    """Initial centres as in the paper's training settings (Sec. 5.1).

    "For the initialization of cluster centers in FeSEM, we conducted 20 times of pure clustering
    with different randomized initialization, and then the 'best' initialization, which has the
    minimal intra-cluster distance, was selected": k-means (:func:`mixreg.clustering.kmeans`,
    k-means++ starts, best of ``n_init`` by inertia) of the warm-start local models
    (:func:`warm_start_models`).  Each replica runs its own ``n_init`` restarts, drawn from
    ``rng`` one replica after another.

    Parameters
    ----------
    problem : Problem
    n_replicas : int >= 1
        ``B``.
    k : int in [1, m], optional
        Number of centres (default: the problem's ``k``).
    warm_start : {"least_squares", "ridge"}
        The local models clustered (the step-size-free warm starts).
    n_init : int >= 1
        Restarts per replica (20 in the paper).
    rng : numpy.random.Generator

    Returns
    -------
    init : ndarray of shape (B, k, d), the problem's dtype

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=20, k=2, n=30, d=4, sigma=0.1, scale=2.0, rng=np.random.default_rng(0))
    >>> init = initial_centres(pb, 3, rng=np.random.default_rng(1))
    >>> init.shape
    (3, 2, 4)
    """
    check_problem(problem)
    B = check_int("n_replicas", n_replicas, low=1)
    k = problem.k if k is None else check_int("k", k, low=1, high=problem.m)
    check_choice("warm_start", warm_start, WARM_STARTS[:2])
    n_init = check_int("n_init", n_init, low=1)
    check_rng(rng)
    W = warm_start_models(problem, warm_start)
    return np.array([kmeans(W, k, n_init=n_init, rng=rng).centres for _ in range(B)], dtype=problem.dtype)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def fesem(problem: Problem, init: ArrayLike, step_size: float | ArrayLike, *, n_rounds: int = 100,
          rng: np.random.Generator | None = None, tol: float | None = None, history: HistoryRequest = False,
          blowup: float | None = BLOWUP, local_steps: int = 1, weights: str = "uniform",
          warm_start: str = "least_squares", server_step: ServerStep | None = None,
          schedule: ScheduleLike | None = None) -> FeSEMResult:
    r"""Run ``B`` replicas of FeSEM (Algorithms 1 and 2 of Xie et al.) on one problem.

    Round ``t`` from centres :math:`\tilde W_t` and local models :math:`W_t`:

    .. math::

        z_{i,t} = \arg\min_j \lVert W_{i,t} - \tilde W^{(j)}_t \rVert^2, \qquad
        \tilde W^{(j)}_{t+1} = \frac{\sum_{i:\, z_{i,t} = j} \omega_i W_{i,t}}
                                     {\sum_{i:\, z_{i,t} = j} \omega_i}, \qquad
        W_{i,t+1} = G_i^s\big(\tilde W^{(z_{i,t})}_{t+1}\big),

    (Eq. 7, Eq. 8, Algorithm 2) with :math:`G_i(w) = w - \frac{\eta}{n_i} X_i^\top (X_i w - y_i)`
    and :math:`\omega_i = 1` or :math:`n_i`.

    Parameters
    ----------
    problem : Problem
    init : array of shape (B, k, d) or (k, d)
        Initial centres (e.g. ``initial_centres``, the paper's best of 20 k-means runs on
        the warm-start models); cast to the problem's dtype, never modified.
    step_size : float or array of shape (B,)
        :math:`\eta` of each replica's local steps, > 0 (the paper trains CNNs and gives none).
        With ``s = 1`` and stable assignments a centre moves by a gradient step on the
        macro-averaged cluster loss :math:`\frac{1}{|S_j|}\sum_{i \in S_j} \ell_i`, stable for
        :math:`\eta < 2 / \lambda_{max}(\frac{1}{|S_j|}\sum_{i \in S_j} H_i)`,
        :math:`H_i = X_i^\top X_i / n_i` (about 2 for isotropic features and large clusters);
        ``s > 1`` also needs every client's own steps to be stable,
        :math:`\eta < 2 / \lambda_{max}(H_i)`.
    n_rounds : int >= 1
        ``T``, FeSEM iterations.
    rng : numpy.random.Generator, optional
        Unused: FeSEM draws no random numbers once the centres are given (accepted for the
        common driver signature).
    tol : float >= 0, optional
        Stop once no centre of a live replica moved by more than ``tol`` (largest coordinate
        change) in a round; by default all rounds run.
    history : bool, "all" or sequence of str
        Record :class:`mixreg.algorithms.History`: ``True``, the matched max distance, centres,
        misclustering of the E-step and objective; ``"all"`` or names among
        :data:`mixreg.algorithms.HISTORY_FIELDS`: those (with the E-step's identities
        :math:`z_{i,t}` and, as client losses, the squared distances
        :math:`\lVert W_{i,t} - \tilde W^{(z_{i,t})}_t \rVert^2` whose argmin they are: Eq. 6's
        terms, not the squared loss the objective records).  The identities depend on the local
        models :math:`W_{i,t}`, which the history does not keep: they cannot be recomputed from
        the centres alone.
    blowup : float > 1 or None
        Divergence factor of :class:`mixreg.algorithms.Replicas`, applied to the centres and to
        the local models (default :data:`mixreg.algorithms.DEFAULT_BLOWUP`); ``None``: only
        non-finite values count.
    local_steps : int >= 1
        ``s``, Algorithm 2's ``N`` (1 in the paper's experiments).
    weights : {"uniform", "data"}
        M-step weights :math:`\omega_i`: ``"uniform"`` (default, Eq. 8: every client counts the
        same, the paper's macro average) or ``"data"`` (:math:`\omega_i = n_i`, the micro average
        the paper mentions after Eq. 4: the centre is :math:`\sum_{i \in S_j} (n_i / N_j) W_i`).
    warm_start : {"least_squares", "ridge", "gradient"}
        How the local models are trained before the first E-step (Algorithm 1, line 1; the
        paper is silent), see ``warm_start_models``.  Default ``"least_squares"``: Eq. 1
        solved exactly, the same for every replica.  ``"gradient"`` uses each replica's own
        :math:`\eta` (``s`` steps from zero); neither depends on the other replicas, so a batch
        equals separate runs.
    server_step : mixreg.algorithms.ServerStep, optional
        What the server does with the M-step's centres
        (:meth:`~mixreg.algorithms.ServerStep.average`); default the plain step, which takes
        them.
    schedule : mixreg.algorithms.Schedule or callable, optional
        Step-size schedule: round ``t``'s ``s`` local steps use :math:`\eta_t = \eta\, s(t)`
        (a ``"gradient"`` warm start, before round 0, uses :math:`\eta`).  Default constant.

    Returns
    -------
    FeSEMResult
        ``theta`` are the centres; ``assignments`` the E-step of the final local models;
        ``train_loss`` :math:`\frac{1}{2N} \sum_i \lVert y_i - X_i \tilde W^{(z_i)}\rVert^2`;
        ``md_loss`` Eq. 6.

    Notes
    -----
    Choices where the paper is silent (each one a parameter above, or stated here):

    * the E-step is done by the server, which receives every local model; a client downloads
      only its own centre (the paper's line 10, "Send :math:`\tilde W^{(k)}` to device i");
    * ties of the E-step go to the lowest centre index; an empty centre keeps its value;
    * the local loss is normalised per sample, :math:`\frac{1}{2 n_i}`, and the local steps are
      full-batch gradient steps (the paper's Algorithm 2 runs SGD on a CNN);
    * the objective checked for divergence (by :class:`mixreg.algorithms.Replicas`) and
      recorded in the history is the squared loss of each client under its assigned centre,
      :math:`\frac{1}{2N} \sum_i \lVert y_i - X_i \tilde W_t^{(z_{i,t})} \rVert^2`, at the
      round's centres and E-step, before the update; a replica whose new centres or new local
      models are not finite, or blow up (the rule of :class:`mixreg.algorithms.Replicas`, applied
      to both), is frozen with both and flagged.

    What the rule does in mixed linear regression.  With isotropic designs (:math:`H_i = I`) the
    local update is :math:`W_i = (1 - \eta)^s \tilde W^{(z_i)} + (1 - (1 - \eta)^s) W_i^0`, a point
    on the segment from the centre to the client's least-squares estimate :math:`W_i^0`: with
    :math:`\eta = 1, s = 1` FeSEM is Lloyd's k-means on the :math:`W_i^0`; with small steps a
    local model stays next to the centre it came from, so a client changes cluster only if its
    local step carries it past the boundary (more than half-way, :math:`(1 - \eta)^s < 1/2`, when
    the centres sit at the truth), and the first E-step's mistakes are never corrected.  And the
    E-step never looks at the data: when :math:`n_i < d` the min-norm local model only sees the
    row space of :math:`X_i`, and the Euclidean distance prefers short centres, even at
    :math:`\sigma = 0`, where the loss-based decoder is exact.

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=40, k=2, n=30, d=5, sigma=0.1, scale=2.0, protocol="gaussian",
    ...                   rng=np.random.default_rng(0))
    >>> init = np.stack([pb.theta_star + 0.3, pb.theta_star - 0.3])  # B = 2 replicas
    >>> res = fesem(pb, init, [0.5, 1.0], n_rounds=50)
    >>> res.theta.shape, res.local_models.shape, bool((res.assignments == pb.labels).all())
    ((2, 2, 5), (2, 40, 5), True)
    """
    start = time.perf_counter()
    centres, eta, T, tol = check_run(problem, init, step_size, n_rounds, tol)
    B, k, d = centres.shape
    s = check_int("local_steps", local_steps, low=1)
    check_choice("weights", weights, WEIGHTS)
    check_choice("warm_start", warm_start, WARM_STARTS)
    server_step = check_server_step(server_step)
    schedule = check_schedule(schedule)
    fields = check_history(history, HISTORY)
    blowup = check_blowup(blowup)
    if rng is not None:
        check_rng(rng)

    # plan: the buffers of the per-client work, and the warm-start local models
    ws = _Workspace(problem, eta)
    local = _initial_local_models(problem, ws, warm_start, s)
    omega = np.ones(problem.m) if weights == "uniform" else problem.sizes.astype(np.float64)
    replicas = Replicas(B, T, tol, theta0=centres, floors=data_scales(problem), blowup=blowup)
    rec = HistoryRecorder(problem, T, B, k, fields) if fields else None
    local = _run(problem, centres, local, ws, s, omega, replicas, rec, server_step,
                 None if is_constant(schedule) else (schedule, eta))

    # the final E-step, objective and MD-loss (Eq. 6)
    assign = np.empty((B, problem.m), dtype=np.int64)
    dist = np.empty((B, problem.m))
    with np.errstate(over="ignore", invalid="ignore"):
        _e_step(local, centres, assign, dist)
        train_loss = _squared_loss(problem, ws, centres, assign, np.empty_like(local), replicas.live) / (2 * problem.N)
    md_loss = dist.mean(axis=1)
    train_loss[replicas.diverged] = np.nan
    md_loss[replicas.diverged] = np.nan
    return FeSEMResult(
        theta=centres,
        assignments=assign,
        train_loss=train_loss,
        local_models=np.ascontiguousarray(local.transpose(1, 0, 2)),
        md_loss=md_loss,
        weights=weights,
        local_steps=s,
        warm_start=warm_start,
        **common_fields(replicas, eta, start, rec),
    )


class _Workspace:
    """Buffers of the per-client work on all ``B`` replicas, in the client-major layout of
    :mod:`mixreg.kernels` (client ``i``'s block is a ``(B, n_i)`` matrix at ``B * offsets[i]``)."""

    def __init__(self, problem, eta):
        m, N, d, dtype = problem.m, problem.N, problem.d, problem.dtype
        B = eta.size
        sizes = problem.sizes
        self.layout = kernels.ClientLayout(problem.offsets, d, B)
        self.XT = kernels.client_transposed(problem.X, problem.offsets)  # the predictions' form (numerics change 2)
        self.R = np.empty(B * N, dtype=dtype)  # residuals X_i w - y_i
        self.G = np.empty((m, B, d), dtype=dtype)  # X_i^T (X_i w - y_i) / n_i
        self.eta = eta.astype(dtype)[None, :, None]
        self.inv_sizes = (1.0 / sizes).astype(dtype)  # the gradient of the per-sample local loss
        self.everyone = np.zeros((B, m), dtype=np.int64)  # every client takes part in a local step
        # The last local update's first predictions (of each client's centre) and the assignment
        # they were made for: the next objective's predictions wherever the assignment and the
        # centres stayed (valid once the round's centres are accepted)
        self.kept = np.empty(B * N, dtype=dtype)
        self.kept_assign = np.empty((B, m), dtype=np.int64)
        self.kept_valid = False


def _initial_local_models(problem, ws, warm_start, s):
    """The warm-start local models of every replica, client-major (m, B, d) in the problem's dtype."""
    B = ws.eta.shape[1]
    local = np.zeros((problem.m, B, problem.d), dtype=problem.dtype)
    if warm_start == "gradient":  # G_i^s(0), each replica with its own step size
        _local_update(problem, ws, local, s)
    else:
        local[:] = warm_start_models(problem, warm_start)[:, None]
    return local


@njit(cache=True)
def _squared_distances(local, centres, out):
    """``out[b, i, j] = ||W_{i,b} - W~_{b,j}||^2`` for all replicas in one serial pass, in place.

    IN: ``local`` (m, B, d), ``centres`` (B, k, d), either float dtype; OUT: ``out`` (B, m, k),
    float64.  Explicit differences in float64 summed in NumPy's pairwise order and added to 0
    (:func:`mixreg.clustering._pairwise_sq_distance`): every entry equals
    :func:`mixreg.clustering.squared_distances` of the replica's float64 copies bit for bit.
    """
    m, B, d = local.shape
    k = centres.shape[1]
    lo, size = _pairwise_plan(d)
    sums = np.empty(64)
    for i in range(m):
        for b in range(B):
            for j in range(k):
                out[b, i, j] = _pairwise_sq_distance(local[i, b], centres[b, j], lo, size, sums)


def _e_step(local, centres, assign, dist):
    """Eq. 7: ``assign[b, i] = argmin_j ||W_i - W~_j||^2`` (ties to the lowest index), in place.

    ``dist[b, i]`` (OUT) receives the squared distance to the chosen centre (Eq. 6's terms).
    Distances from explicit differences (:mod:`mixreg.clustering`), in float64, for all ``B``
    replicas in one Numba pass (:func:`_squared_distances`, equal bit for bit to
    :func:`mixreg.clustering.squared_distances` of each replica).
    """
    m, B, d = local.shape
    k = centres.shape[1]
    sq = np.empty((B, m, k))
    _squared_distances(local, centres, sq)
    kernels.assign_clients(sq, np.ones(m, dtype=np.bool_), assign, dist)


def _m_step(local, assign, omega, centres):
    """Eq. 8: the ``omega``-weighted average of each centre's local models; an empty centre keeps
    its value.  Returns the new centres (B, k, d) in the centres' dtype."""
    new = np.empty_like(centres)
    _weighted_centres(local, assign, omega, centres, np.empty(centres.shape), np.empty(centres.shape[:2]), new)
    return new


@njit(cache=True)
def _weighted_centres(local, assign, omega, centres, sums, mass, out):
    """Eq. 8 in one pass: ``out[b, j] = sum_i omega_i W_{i,b} / sum_i omega_i`` over the clients
    with ``assign[b, i] = j``, or ``centres[b, j]`` where there is none.

    The products ``omega_i W_{i,b}`` in float64 are added in client order, then divided by the
    mass and rounded to the centres' dtype: the sums, order and roundings of
    ``kernels.scatter_add(omega * local.astype(float64))`` and ``np.where(mass > 0, sums / mass,
    centres).astype(dtype)``, which this replaces (``sums`` (B, k, d) and ``mass`` (B, k) are
    float64 buffers).
    """
    m, B, d = local.shape
    k = centres.shape[1]
    sums[:] = 0.0
    mass[:] = 0.0
    for b in range(B):
        for i in range(m):
            a = assign[b, i]
            if a >= 0:
                w = omega[i]
                for c in range(d):
                    sums[b, a, c] += w * np.float64(local[i, b, c])
                mass[b, a] += w
        for j in range(k):
            if mass[b, j] > 0:
                for c in range(d):
                    out[b, j, c] = sums[b, j, c] / mass[b, j]
            else:
                for c in range(d):
                    out[b, j, c] = centres[b, j, c]


@njit(cache=True)
def _residual_squares(Q, y, offsets, out):
    """``out[b] = sum_i ||Q_{i,b} - y_i||^2`` of client-major predictions ``Q`` (client ``i``'s
    block ``(B, n_i)`` at ``B * offsets[i]``): each residual in the data's dtype, squared in float64
    and added in buffer order, as ``np.bincount`` of the squares did (``out`` (B,), float64, OUT).
    Every client counts: FeSEM assigns every client in every round."""
    B = out.shape[0]
    m = offsets.shape[0] - 1
    out[:] = 0.0
    for i in range(m):
        lo = offsets[i]
        n = offsets[i + 1] - lo
        for b in range(B):
            o = B * lo + b * n
            acc = out[b]
            for r in range(n):
                e = np.float64(Q[o + r] - y[lo + r])
                acc += e * e
            out[b] = acc


def _squared_loss(problem, ws, centres, assign, start, live):
    """``sum_i ||y_i - X_i W~_{z_i}||^2`` of every replica (B,), in float64 (``start`` (m, B, d) is
    a buffer; ``live`` (B,) the replicas that have not diverged).

    The predictions of a client none of whose live replicas changed centre since the last local
    update are that update's first predictions (``ws.kept``): the same product of the same centre
    on the same rows, so the same bits (a row of a product does not depend on the other rows); the
    others are computed (:func:`mixreg.kernels.client_predictions` of those clients, bit for bit
    the whole call's blocks).  A diverged replica kept its old centres, so its rows may be stale:
    its objective is never read (nan in every record, not compared with the blow-up rule).  Only
    the centres of the clients predicted are gathered into ``start``."""
    if ws.kept_valid:
        changed = np.flatnonzero(((assign != ws.kept_assign) & live[:, None]).any(axis=0))
        start[changed] = centres[np.arange(centres.shape[0]), assign[:, changed].T]  # every client is assigned
        predictions = kernels.client_predictions(start, problem.X, ws.layout, ws.kept, ws.XT, clients=changed)
    else:
        kernels.gather_selected(centres, assign, start)
        predictions = kernels.client_predictions(start, problem.X, ws.layout, ws.R, ws.XT)
    ws.kept_valid = False
    out = np.empty(centres.shape[0])
    _residual_squares(predictions, problem.y, problem.offsets, out)
    return out


def _local_update(problem, ws, local, s, step=None, assign=None):
    """Algorithm 2, in place on ``local`` (m, B, d): ``s`` full-batch gradient steps
    ``w <- w - (eta_b / n_i) X_i^T (X_i w - y_i)`` of every client and replica (the batched
    :func:`mixreg.local_solvers.gradient_steps`, with one step size per replica); ``step``
    (1, B, 1) in the problem's dtype replaces ``ws.eta`` (a schedule's round).  With ``assign``
    (``local`` holds each client's assigned centre), the first step's predictions are kept in
    ``ws.kept`` for the next objective (:func:`_squared_loss`)."""
    def residuals(R):  # (X_i w - y_i) / n_i on every row of every client
        kernels.selected_residuals(R, problem.y, problem.offsets, ws.everyone, ws.inv_sizes, R)

    predicted = assign is not None and s > 0
    if predicted:
        kernels.client_predictions(local, problem.X, ws.layout, ws.R, ws.XT)
        np.copyto(ws.kept, ws.R)
        np.copyto(ws.kept_assign, assign)
    local_gradient_steps(local, problem.X, ws.layout, ws.eta if step is None else step, s, residuals, ws.R, ws.G, ws.XT,
                         predicted=predicted)


def _run(problem, centres, local, ws, s, omega, replicas, rec, server_step, scheduled=None):
    """FeSEM's loop, in place on ``centres`` (B, k, d) and ``replicas``; returns the final local
    models (m, B, d), which live in ``local``'s buffer or in another of its shape (the round's new
    local models are computed in a second buffer, which then becomes the current one: no copy);
    ``scheduled``: ``(schedule, eta)`` when the local steps follow a non-constant schedule."""
    B = centres.shape[0]
    m, N = problem.m, problem.N
    assign = np.empty((B, m), dtype=np.int64)
    dist = np.empty((B, m))
    new_local = np.empty_like(local)
    state = server_step.start(centres)
    schedule, eta = scheduled if scheduled is not None else (None, None)
    if rec is not None:
        rec.record_point(0, centres, replicas.diverged)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(replicas.n_rounds):
            _e_step(local, centres, assign, dist)  # Eq. 7
            loss = _squared_loss(problem, ws, centres, assign, new_local, replicas.live)  # the round's objective
            if rec is not None:
                rec.record_round(t, assign, loss / (2 * N), replicas.diverged, dist)
            new = server_step.average(centres, _m_step(local, assign, omega, centres),  # Eq. 8
                                      t=t, state=state, rows=slice(None))
            kernels.gather_selected(new, assign, new_local)  # Algorithm 2: start from the centre,
            step = None if scheduled is None else (eta * schedule.factor(t)).astype(ws.eta.dtype)[None, :, None]
            _local_update(problem, ws, new_local, s, step, assign)  # take s local steps
            # the state is the centres AND the local models: a round that leaves the centres in
            # place (e.g. the first from the k-means start, whose M-step repeats the k-means
            # centres) has not converged if the local models moved
            moved = _largest_change(new_local, local) if replicas.tol is not None else None
            # per-sample mean loss; the local models are under the centres' rules
            replicas.accept(centres, new, loss / N, t, moved=moved, state=new_local.transpose(1, 0, 2))
            live = replicas.live
            ws.kept_valid = True  # every live replica's centres are now `new`
            if not live.all():  # a diverged replica keeps its last local models
                new_local[:, ~live] = local[:, ~live]
            local, new_local = new_local, local
            if rec is not None:
                rec.record_point(t + 1, centres, replicas.diverged)
            if replicas.finished(t):
                break
    return local


@njit(cache=True)
def _largest_change(new, old):
    """``np.abs(new - old).max(axis=(0, 2))`` of two (m, B, d) arrays, (B,) in their dtype: NaN
    where a difference is NaN, in one pass without the temporaries (a maximum is exact, so any
    order gives the same value)."""
    m, B, d = new.shape
    out = np.zeros(B, dtype=new.dtype)  # every |difference| >= 0
    for i in range(m):
        for b in range(B):
            top = out[b]
            if np.isnan(top):
                continue
            for c in range(d):
                v = abs(new[i, b, c] - old[i, b, c])
                if np.isnan(v):
                    top = v
                    break
                if v > top:
                    top = v
            out[b] = top
    return out


# --------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------


def _communication(problem, result, replica):
    """Floats a client uploads and downloads over the run's rounds: its warm-start model once
    and one local model per round up, its assigned centre per round down."""
    n_rounds = result.n_rounds
    return float(problem.d * (n_rounds + 1)), float(problem.d * n_rounds)


def registrations() -> list[Algorithm]:
    """FeSEM's registry entry: uniform (macro) M-step, one local step, least-squares warm start."""
    options = {"weights": "uniform", "local_steps": 1, "warm_start": "least_squares"}
    return [Algorithm(
        name="fesem", run=_bind(fesem, uses_rng=False, **options), uses_rng=False, options=options,
        communication=_communication,
        source="Xie et al. 2020, Multi-Center Federated Learning: Algorithm 1 (FeSEM) with Algorithm 2 "
               "(Local_update), Eqs. 7-8, N = 1 local step",
        sends="its local model (one d-vector; the server does the E-step by parameter distance); receives "
              "its assigned centre (one d-vector); the warm-start local model is uploaded once before round 1")]
