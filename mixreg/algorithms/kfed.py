"""k-FED, one-shot federated clustering of points (the IFCA thesis, chapter 4, Algorithm 2).

The baseline the IFCA thesis compares UIFCA with on clients that *mix* clusters (Dennis, Li,
Smith 2021, "Heterogeneity for the win: one-shot federated clustering"), done once:

1. every client clusters its own points into ``k'`` local groups and computes their
   *centroids*;
2. it sends the ``k'`` centroids; the server runs k-means over the ``m k'`` local centroids;
3. the server returns the cluster of each local centroid, and every point takes the server
   cluster of its local centroid (Algorithm 2, step 4).  The point labels stay on the client.

Then, as in the thesis ("runs FedAvg with them"), the ``k`` models are trained by FedAvg(s) on
the point labels (:func:`mixreg.algorithms._fixed_labels.train_on_labels`: a client holding
points of several clusters takes part in each of their FedAvg).

**What is a centroid of regression data?**  In mixed linear regression the features have the
same law :math:`N(0, I)` in every cluster and :math:`y = \\langle x, \\theta^*_l\\rangle +
\\zeta` has mean 0 in every cluster, so the points :math:`z = (x, y)` of all clusters share
mean 0: their clusters differ only in the *direction* of the joint covariance, which k-means
on the raw points cannot see (as the thesis's subspace clusters, on which k-FED reaches 11.5 to
19.3 % cluster accuracy with k = 4 against 100 % on Gaussian clusters: Table 4.1, Sec. 4.3).  Two
local steps are offered:

* ``local="regressions"`` (default, ours): the regression analogue of local k-means.  Each client
  fits ``k'`` local linear models by Lloyd's alternation with the squared residual as the
  distance (assign every point to the local model with the least squared residual, refit every
  local model by least squares on its points), and its "centroids" are the ``k'`` local models,
  vectors of :math:`\\mathbb{R}^d` comparable across clients.  It recovers the point labels when
  every local cluster holds enough points (:math:`n_{i,l} \\gg d`), and breaks down when
  :math:`n_i` is small against :math:`k' d`: local groups with fewer than ``d`` points are
  interpolated exactly (minimum-norm least squares, zero residual), so Lloyd stops at its random
  start and the local models are the truths projected on random row spaces, as one-shot
  clustering's local models when :math:`n_i < d` (:mod:`mixreg.algorithms.oneshot`).
* ``local="points"``: the literal k-FED, local k-means on :math:`z_{ij} = (x_{ij}, y_{ij}) \\in
  \\mathbb{R}^{d+1}`; near chance in mixed linear regression, for the reason above.

Cost of the one-shot phase: ``local="regressions"`` runs Lloyd iterations vectorised over all
clients and restarts at once, on each client's Gram matrix :math:`X_i X_i^\\top` (formed once,
:class:`mixreg.local_solvers.ClientGrams`, for the clients with :math:`n_i \\le d`): an
iteration costs, per restart, the minimum-norm refit of every (client, local group) block from a
submatrix of its client's Gram (a Cholesky factorisation of at most ``n_i x n_i``, certified well
conditioned as :func:`mixreg.local_solvers.local_least_squares` certifies, once per client where
it can be), predictions through the Gram (``2 sum_i n_i^2 k'`` flops) and the shared argmin
kernel; only the kept restart's models are formed (``X^T`` times the coefficients).  The blocks
not certified and those of clients with :math:`n_i > d` take
:func:`~mixreg.local_solvers.local_least_squares` itself on copies of their rows (its Gram solve
or its batched SVD, ``O(N d min(n_{i,l}, d))``), and predict as ``X_i theta``.
``local="points"`` calls the shared k-means once per client (a Python loop over clients, in this
one-shot phase only: :func:`mixreg.clustering.kmeans` takes one point set).  The server's k-means
runs on ``m k'`` points.  A FedAvg round costs two products of ``2 B N d`` flops
(:mod:`mixreg.algorithms._fixed_labels`).

References
----------
.. [1] D. K. Dennis, T. Li, V. Smith, "Heterogeneity for the win: one-shot federated clustering",
   ICML 2021.
.. [2] The IFCA thesis, chapter 4 ("UIFCA"), Algorithm 2 "k-FED algorithm" and section 4.1 (the
   clients that mix clusters).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._typing import ArrayLike, HistoryRequest, ScheduleLike
from .. import kernels
from ..validation import check_choice, check_int
from ..clustering import ClusteringWarning, kmeans
from ..local_solvers import ClientGrams, grouped_rows, size_groups
from ..metrics import misclustering_rate
from ..problems import Problem, check_rng
from ._driver import (
    BLOWUP,
    DriverResult,
    check_blowup,
    check_history,
    check_run,
    common_fields,
)
from ._fixed_labels import HISTORY, clusters_held, train_on_labels
from ._registry import Algorithm, Unmet, _bind
from ._server import ServerStep, check_schedule, check_server_step

__all__ = ["KFEDResult", "kfed", "LOCAL_STEPS", "STARTS"]

#: What a client clusters locally: its points' regressions, or its raw points ``(x, y)``.
LOCAL_STEPS = ("regressions", "points")
#: Where FedAvg starts: the server's k-means centres (regression vectors), or the caller's ``init``.
STARTS = ("centroids", "init")

# Most float64 entries of the rows copied and the residuals held for a block of local restarts (32 MiB).
_ROW_BLOCK = 1 << 22
# Local restarts whose residual sums of squares differ by less than this fraction of the client's
# squared responses are tied (rounding), and the first of them is kept.
_SSE_TIES = 1e-10


@dataclass(frozen=True, kw_only=True)
class KFEDResult(DriverResult):
    """Outcome of a batched k-FED run: the common fields of
    :class:`mixreg.algorithms.DriverResult` and the one-shot clustering.

    ``assignments`` (B, m) is the majority of each client's point labels (ties to the lowest
    label); ``train_loss`` is :math:`\\frac{1}{2N} \\sum_{i, j} (y_{ij} - \\langle x_{ij},
    \\theta_{\\hat z_{ij}} \\rangle)^2`, every point scored by the model of its own label.

    Attributes
    ----------
    point_assignments : ndarray of shape (B, N), int64
        :math:`\\hat z_{ij}`, the server cluster of every point (the same for every replica).
    point_misclustering : ndarray of shape (B,)
        Fraction of points misclustered under the best relabelling,
        :func:`mixreg.metrics.misclustering_rate` against ``problem.row_labels``.
    local : str
        ``"regressions"`` or ``"points"``.
    local_centroids : ndarray of shape (m, k', D), float64
        What each client sent: its ``k'`` local models (``D = d``) or local k-means centres of
        the points ``(x, y)`` (``D = d + 1``).
    centroid_labels : ndarray of shape (m, k'), int64
        The server cluster of every local centroid (what the client receives back).
    server_centres : ndarray of shape (k, D), float64
        The server's k-means centres.
    """

    point_assignments: np.ndarray
    point_misclustering: np.ndarray
    local: str
    local_centroids: np.ndarray
    centroid_labels: np.ndarray
    server_centres: np.ndarray


def kfed(problem: Problem, init: ArrayLike, step_size: float | ArrayLike, *, n_rounds: int,
         rng: np.random.Generator | None = None, tol: float | None = None, history: HistoryRequest = False,
         blowup: float | None = BLOWUP, local: str = "regressions", local_clusters: int | None = None, n_init: int = 10,
         local_restarts: int = 10, local_max_iter: int = 100, start: str | None = None, local_steps: int = 1,
         server_step: ServerStep | None = None, schedule: ScheduleLike | None = None) -> KFEDResult:
    r"""Run ``B`` replicas of k-FED (the IFCA thesis, Algorithm 2) followed by FedAvg on one problem.

    With ``local="regressions"``, client ``i`` fits ``k'`` local models (Algorithm 2, steps 1-2,
    with the squared residual as the distance), by Lloyd's alternation from a random partition:

    .. math::

        S_{i,c} &\leftarrow \{ j : c = \arg\min_{c'} (y_{ij} - \langle x_{ij},
            \mu_{i,c'} \rangle)^2 \}, \qquad
        \mu_{i,c} \leftarrow \arg\min_{\mu} \sum_{j \in S_{i,c}} (y_{ij} - \langle x_{ij},
            \mu\rangle)^2, \\
        (g, c) &= \operatorname{k-means}\big(\{\mu_{i,c}\}_{i \le m,\, c \le k'};\ k\big)
            \quad (\text{step 3, the server}), \qquad
        \hat z_{ij} = g(\mu_{i, c_{ij}}) \quad (\text{step 4}), \\
        \theta_{l,t+1} &= \sum_{i:\, n_{i,l} > 0} \frac{n_{i,l}}{N_l}\, G_{i,l}^s(\theta_{l,t}),
        \qquad \theta_{l,0} = c_l,

    with :math:`c_{ij}` the local group of point ``j`` of client ``i``, :math:`n_{i,l}` the
    points of client ``i`` labelled ``l`` and :math:`G_{i,l}(\theta) = \theta -
    \frac{\eta}{n_{i,l}} X_{i,l}^\top (X_{i,l}\theta - y_{i,l})` one local gradient step on
    them.  With ``local="points"`` the first line is Lloyd's k-means on :math:`z_{ij} = (x_{ij},
    y_{ij})` (the thesis's :math:`S_{i,k} = \{ j : k = \arg\min \lVert \mu_k - x^{i,j} \rVert\}`).

    Parameters
    ----------
    problem : Problem
        Typically with clients that mix clusters (``ProblemSpec(main_fraction=p)``); any problem
        is accepted (its ``row_labels`` are its clients' labels).
    init : array of shape (B, k, d) or (k, d)
        Fixes ``B`` and ``k`` (the server's k-means ``k``) and is validated; with
        ``start="centroids"`` (the default for ``local="regressions"``) its values are unused.
    step_size : float or array of shape (B,)
        :math:`\eta` of each replica's FedAvg, > 0.  With ``s = 1`` a round is a gradient step
        on :math:`\frac{1}{2N_l}\lVert X_{S_l}\theta - y_{S_l}\rVert^2`, stable for
        :math:`\eta < 2 N_l / \lambda_{max}(X_{S_l}^\top X_{S_l})` (about 2 for unit-variance
        features and :math:`N_l \gg d`).
    n_rounds : int >= 1
        FedAvg rounds.
    rng : numpy.random.Generator
        Required.  Draws, in this order: the random partitions of the local restarts (one
        ``rng.random((local_restarts, N))`` call) or the local k-means++ seedings (client by
        client), then the server's k-means++ seeding.  The clustering does not depend on the
        replica and is drawn once for the whole batch, so replica ``b`` of a batch equals a run of
        ``init[b:b+1]`` under a Generator in the same state.
    tol : float >= 0, optional
        Stop FedAvg once every live replica moved by at most ``tol`` in a round.
    history : bool, "all" or sequence of str
        Record :class:`mixreg.algorithms.History` of the FedAvg phase: ``True``, the matched max
        distance, iterates, misclustering of the majority client labels and the objective of ``train_loss``;
        ``"all"`` or names among :data:`mixreg.algorithms.HISTORY_FIELDS`: those (the identities
        of every round are the majority client labels, fixed before the rounds; the client losses are each
        client's squared residuals under its rows' labels, summing over the clients to :math:`2N`
        times the objective).
    blowup : float > 1 or None
        Divergence factor of :class:`mixreg.algorithms.Replicas` (default
        :data:`mixreg.algorithms.DEFAULT_BLOWUP`); ``None``: only non-finite values count.
    local : {"regressions", "points"}
        What a client clusters (the module docstring says why; ours: the paper clusters points).
        ``"regressions"`` (default): ``k'`` local linear models by Lloyd's alternation with
        squared residuals as distances; the argmin is the shared rule
        ``argmin_skip_nan`` (ties to the lowest local index) and the refit
        the minimum-norm least squares (:func:`mixreg.local_solvers.local_least_squares`'s rule,
        computed through the clients' Grams, :class:`mixreg.local_solvers.ClientGrams`), so a
        local group with fewer points than ``d`` is interpolated; an emptied group keeps its
        model (as :func:`mixreg.clustering.kmeans` keeps an emptied centre).  ``"points"``: the
        shared :func:`mixreg.clustering.kmeans` (k-means++, ``local_restarts`` restarts) on each
        client's points :math:`(x, y)`.
    local_clusters : int >= 1, optional
        ``k'``, the local groups of every client (default ``k``, the thesis's choice); every
        client must hold at least ``k'`` points, and ``k <= m k'``.
    n_init : int >= 1
        k-means++ restarts of the server's k-means (the best by inertia is kept).
    local_restarts : int >= 1
        Restarts of each client's local clustering (ours; the paper is silent).  With
        ``"regressions"``: restart ``r`` starts from a balanced random partition, the point of
        rank ``q`` (ascending ``u_{r,j}``, the restart's uniform draws, within the client) in
        local group ``q mod k'``, so every group starts with at least
        :math:`\lfloor n_i / k' \rfloor` points; each client keeps the restart with the least
        local residual sum of squares :math:`\sum_j \min_c (y_{ij} - \langle x_{ij}, \mu_{i,c}
        \rangle)^2`, the first of those within a relative :math:`10^{-10} \lVert y_i\rVert^2` of
        the least (a client whose groups are interpolated has SSE 0 up to rounding in every
        restart, which must not choose the restart).  With ``"points"``: the k-means++
        restarts of each client's k-means.
    local_max_iter : int >= 1
        Most assignment steps of one local Lloyd run (a
        :class:`~mixreg.clustering.ClusteringWarning` says how many clients had not converged).
    start : {"centroids", "init"}, optional
        Where FedAvg starts (ours; the paper is silent): ``"centroids"``, cluster ``l``'s server
        centre, which with ``local="regressions"`` is a regression vector, the server's best
        guess at no extra cost (default there); ``"init"``, ``init[b, l]`` for cluster ``l``
        (the server's numbering, groups in the order of their lowest local centroid; the only
        choice with ``local="points"``, whose centres lie in :math:`\mathbb{R}^{d+1}`).
    local_steps : int >= 1
        ``s`` of FedAvg(s).
    server_step : mixreg.algorithms.ServerStep, optional
        What the server does with each FedAvg round's average within the clusters
        (:meth:`~mixreg.algorithms.ServerStep.average`); default the plain step, which takes it.
    schedule : mixreg.algorithms.Schedule or callable, optional
        Step-size schedule of the FedAvg rounds: round ``t``'s local steps use
        :math:`\eta\, s(t)` (:class:`~mixreg.algorithms.Schedule`).  Default constant.

    Returns
    -------
    KFEDResult

    Notes
    -----
    Communication of a client: once, it uploads its ``k' D`` centroid coordinates and downloads
    the ``k'`` server labels of its centroids (its point labels never leave it); then, per
    FedAvg round, for every cluster it holds points of, it uploads one ``d``-vector local model
    and the cluster index, and it downloads the ``k`` models (``k d`` floats).

    A replica whose models or objective stop being finite is frozen at its last finite models
    and flagged (``diverged``), as in every driver of :mod:`mixreg.algorithms`.

    Examples
    --------
    >>> from mixreg.problems import ProblemSpec
    >>> spec = ProblemSpec(m=10, k=2, n=100, d=3, sigma=0.0, scale=4.0, protocol="gaussian",
    ...                    main_fraction=0.5)
    >>> pb = spec.generate(np.random.default_rng(0))
    >>> res = kfed(pb, np.zeros((2, 3)), 1.0, n_rounds=30, rng=np.random.default_rng(1))
    >>> float(res.point_misclustering[0]), bool(res.train_loss[0] < 1e-12)  # sigma = 0
    (0.0, True)
    >>> raw = kfed(pb, np.zeros((2, 3)), 1.0, n_rounds=30, rng=np.random.default_rng(1), local="points")
    >>> raw.local_centroids.shape, bool(raw.point_misclustering[0] > 0.2)
    ((10, 2, 4), True)
    """
    t0 = time.perf_counter()
    # validate
    theta, eta, T, tol = check_run(problem, init, step_size, n_rounds, tol)
    B, k, d = theta.shape
    check_choice("local", local, LOCAL_STEPS)
    n_min = int(problem.sizes.min())
    kl = k if local_clusters is None else check_int("local_clusters", local_clusters, low=1)
    if kl > n_min:
        raise ValueError(f"local_clusters must be in [1, min n_i] = [1, {n_min}] (every client splits its points "
                         f"into k' groups), got {kl}" + (" (the default k' = k)" if local_clusters is None else ""))
    if k > problem.m * kl:
        raise ValueError(f"init has k={k} models but the server's k-means on m k' = {problem.m * kl} local "
                         f"centroids needs k <= m k'")
    n_init = check_int("n_init", n_init, low=1)
    restarts = check_int("local_restarts", local_restarts, low=1)
    max_iter = check_int("local_max_iter", local_max_iter, low=1)
    if start is None:
        start = "centroids" if local == "regressions" else "init"
    check_choice("start", start, STARTS)
    if start == "centroids" and local == "points":
        raise ValueError("start='centroids' needs local='regressions': with local='points' the server centres "
                         "lie in R^(d+1) and are not regression vectors; use start='init'")
    s = check_int("local_steps", local_steps, low=1)
    if rng is None:
        raise ValueError("rng is required: the local clusterings and the server's k-means++ seeding draw from it "
                         "(pass a numpy.random.Generator)")
    check_rng(rng)
    server_step = check_server_step(server_step)
    schedule = check_schedule(schedule)
    fields = check_history(history, HISTORY)
    blowup = check_blowup(blowup)

    # steps 1-2 (every client, once): local groups and their centroids
    if local == "regressions":
        centroids, groups = _local_regressions(problem, kl, restarts, max_iter, rng)
    else:
        centroids, groups = _local_kmeans(problem, kl, restarts, max_iter, rng)
    # step 3 (the server, once): k-means over the m k' local centroids
    clustering = kmeans(centroids.reshape(problem.m * kl, -1), k, n_init=n_init, rng=rng)
    centroid_labels = clustering.labels.reshape(problem.m, kl)
    # step 4 (every client): each point takes the server cluster of its local centroid
    client = np.repeat(np.arange(problem.m), problem.sizes)
    row_labels = centroid_labels[client, groups]
    if start == "centroids":
        theta = np.array(np.broadcast_to(clustering.centres, (B, k, d)), dtype=problem.dtype)

    # FedAvg(s) within the estimated clusters, on the point labels
    trained = train_on_labels(problem, row_labels, theta, eta, local_steps=s, n_rounds=T, tol=tol, history=fields,
                              blowup=blowup, server_step=server_step, schedule=schedule)
    point_assignments = np.array(np.broadcast_to(row_labels, (B, problem.N)), dtype=np.int64)
    return KFEDResult(
        theta=trained.theta,
        assignments=trained.assignments,
        train_loss=trained.train_loss,
        **common_fields(trained.replicas, eta, t0, trained.history),
        point_assignments=point_assignments,
        point_misclustering=np.repeat(misclustering_rate(row_labels[None], problem.row_labels, max(k, problem.k)), B),
        local=local,
        local_centroids=centroids,
        centroid_labels=centroid_labels,
        server_centres=clustering.centres,
    )


# --------------------------------------------------------------------------------------------
# The local step (once per client)
# --------------------------------------------------------------------------------------------


def _local_regressions(problem, kl, restarts, max_iter, rng):
    """Every client's ``k'`` local linear models by Lloyd's alternation on squared residuals.

    The restarts are run together as ``restarts x m`` virtual clients on the same rows (restart
    ``r``'s copy of client ``i``), in blocks of restarts that keep below :data:`_ROW_BLOCK`
    floats the rows the refits copy (those of clients with ``n_i > d``, times ``d``) and the
    predictions (``N k'`` per restart); a virtual client that stopped changing is at a fixed
    point (same groups, same refit), so iterating it with the others changes nothing.  The
    refits and the predictions go through each client's Gram matrix
    (:class:`mixreg.local_solvers.ClientGrams`, formed once for all restarts and iterations):
    a certified refit is kept as coefficients on its rows and only the kept restart's models
    are formed.  Each client keeps its restart of least residual sum of squares, the first of
    those within :data:`_SSE_TIES` times :math:`\\lVert y_i \\rVert^2` of the least (rounding
    ties).  Returns ``(models (m, k', d), groups (N,))``, the models and every row's local group
    in the kept restart.
    """
    m, N, d = problem.m, problem.N, problem.d
    X = problem.X.astype(np.float64, copy=False)
    y = problem.y.astype(np.float64, copy=False)
    offsets = problem.offsets.astype(np.int64, copy=False)
    grams = ClientGrams._trusted(X, y, offsets)
    u = rng.random((restarts, N))
    alpha = np.empty((restarts, kl, N))
    primal = np.empty((restarts, m, kl), dtype=np.bool_)
    models = np.empty((restarts, m, kl, d))
    groups = np.empty((restarts, N), dtype=np.int64)
    sse = np.empty((restarts, m))
    moved = np.empty((restarts, m), dtype=np.bool_)
    copied = int(problem.sizes[problem.sizes > d].sum())  # rows whose groups' refits copy them
    per_block = max(1, _ROW_BLOCK // (copied * d + N * kl))
    for lo in range(0, restarts, per_block):
        R = min(per_block, restarts - lo)
        rows = slice(lo, lo + R)
        (alpha[rows], primal[rows], models[rows], groups[rows], sse[rows],
         moved[rows]) = _lloyd_regressions(grams, u[rows], kl, max_iter)
    # the first restart within rounding of the least SSE: interpolated clients (groups of fewer
    # than d points) have SSE 0 up to rounding in every restart, which must not pick the restart
    slack = _SSE_TIES * np.add.reduceat(np.square(y), offsets[:-1])
    best = np.argmax(sse <= sse.min(axis=0) + slack, axis=0)  # (m,)
    unconverged = moved[best, np.arange(m)]
    if unconverged.any():
        warnings.warn(f"local regressions: {int(unconverged.sum())} of {m} clients' Lloyd runs had not converged "
                      f"within local_max_iter={max_iter}", ClusteringWarning, stacklevel=3)
    client = grams.client_of_row
    kept = _kept_models(grams, alpha[best[client], :, np.arange(N)], primal[best, np.arange(m)],
                        models[best, np.arange(m)])
    return kept, groups[best[client], np.arange(N)]


def _kept_models(grams, alpha, primal, models):
    """The models ``(m, k', d)`` of the kept restarts: ``X_i^T alpha_i`` of every group solved
    through the Gram (``alpha`` (N, k'), the coefficients on each client's rows; where that
    overflows, ``local_least_squares`` on the group's rows, those of nonzero coefficients), the
    estimate (``models``) of the others (``primal`` (m, k'))."""
    m, kl, d = models.shape
    out = models.copy()
    dual = np.flatnonzero(~primal.ravel())  # (client, group) blocks
    if dual.size:
        client, group = dual // kl, dual % kl
        sizes = grams.sizes[client]
        boff = np.concatenate([[0], np.cumsum(sizes)])
        rows = grams._client_rows(client)
        theta = np.empty((dual.size, d))
        fine = np.empty(dual.size, dtype=np.bool_)
        coefficients = alpha[rows, np.repeat(group, sizes)]
        kernels.combine_rows(grams.X, rows, boff, coefficients, np.arange(dual.size), theta, fine)
        for j in np.flatnonzero(~fine):  # an estimate that overflowed: local_least_squares on its group's rows
            block = rows[boff[j]:boff[j + 1]][coefficients[boff[j]:boff[j + 1]] != 0]
            grams._solve_rows(block, np.array([0, block.size]), np.array([0]), theta[j:j + 1])
        out.reshape(m * kl, d)[dual] = theta
    return out


def _lloyd_regressions(grams, u, kl, max_iter):
    """Lloyd's alternation of ``R = len(u)`` restarts at once, from balanced random partitions.

    Restart ``r`` starts with the point of rank ``q`` (ascending ``u[r]`` within its client) in
    local group ``q mod k'``.  A group's model is held as coefficients on its client's rows
    (``alpha`` (R, k', N): the model :math:`X_i^\\top a` of the coefficients ``a`` on client
    ``i``'s rows), or, where its refit was not certified (``primal`` (R, m, k')), as the SVD
    estimate in ``models`` (R, m, k', d).  Returns ``alpha``, ``primal``, ``models``, ``groups
    (R, N)``, the local residual sums of squares ``(R, m)`` and whether each run still moved in
    its last step ``(R, m)``.
    """
    R, N = u.shape
    offsets, client = grams.offsets, grams.client_of_row
    m, d = offsets.size - 1, grams.X.shape[1]
    vclient = (np.arange(R)[:, None] * m + client).ravel()  # virtual client (restart, client)
    vstarts = (np.arange(R)[:, None] * N + offsets[:-1]).ravel()
    groups = np.empty((R, N), dtype=np.int64)
    for n, _, rows in size_groups(offsets):  # rank q within the client (ties in row order): group q mod k'
        start = np.empty((R,) + rows.shape, dtype=np.int64)
        np.put_along_axis(start, np.argsort(u[:, rows], axis=2, kind="stable"), np.arange(n) % kl, axis=2)
        groups[:, rows] = start
    groups = groups.ravel()
    alpha = np.zeros((R, kl, N))  # every model starts at 0
    primal = np.zeros((R, m, kl), dtype=np.bool_)
    models = np.zeros((R, m, kl, d))
    row = np.tile(np.arange(N), R)  # the row of every virtual row
    for _ in range(max_iter):
        _refit(grams, row, vclient, groups, alpha, primal, models)
        new, sq = _assign(grams, alpha, primal, models)
        moved = np.logical_or.reduceat(new != groups, vstarts)
        groups = new
        if not moved.any():
            break
    sse = np.add.reduceat(sq, vstarts)
    return alpha, primal, models, groups.reshape(R, N), sse.reshape(R, m), moved.reshape(R, m)


def _refit(grams, row, vclient, groups, alpha, primal, models):
    """OUT ``alpha``, ``primal``, ``models``: every non-empty (virtual client, group)'s
    minimum-norm least squares (:meth:`~mixreg.local_solvers.ClientGrams.dual`); an empty group
    keeps its model."""
    R, kl, N = alpha.shape
    m = grams.sizes.size
    order, held, boff = grouped_rows(vclient * kl + groups, R * m * kl)
    restart, group, client = held // (m * kl), held % kl, (held // kl) % m
    coefficients, theta, dual = grams._dual(row[order], boff, client)
    # a held group's coefficients are its own rows' and 0 on its client's other rows (in other
    # groups of this restart); an emptied group keeps its coefficients, or its SVD model
    lengths = grams.sizes[client]
    alpha[np.repeat(restart, lengths), np.repeat(group, lengths), grams._client_rows(client)] = 0.0
    sizes = np.diff(boff)
    alpha[np.repeat(restart, sizes), np.repeat(group, sizes), row[order]] = coefficients
    flat_primal, flat_models = primal.reshape(-1), models.reshape(-1, models.shape[-1])
    flat_primal[held] = ~dual
    flat_models[held[~dual]] = theta[~dual]


def _assign(grams, alpha, primal, models):
    """Every virtual row's local group, the argmin of its squared residuals under its virtual
    client's ``k'`` models (:func:`mixreg.kernels.argmin_skip_nan`), and that least squared
    residual, (R N,) each (restart-major).

    The predictions of the models held as coefficients are products with each client's Gram
    (:meth:`~mixreg.local_solvers.ClientGrams.predict_dual`, all restarts at once), those of the
    SVD models ``X_i theta``: the rows are never copied per restart."""
    R, kl, N = alpha.shape
    X, y, offsets = grams.X, grams.y, grams.offsets
    pred = grams._predict_dual(alpha.reshape(R * kl, N)).reshape(R, kl, N)
    for r, i, g in zip(*np.nonzero(primal)):
        rows = slice(offsets[i], offsets[i + 1])
        pred[r, g, rows] += X[rows] @ models[r, i, g]
    sq = np.square(y - pred).transpose(0, 2, 1)  # (R, N, k')
    groups = np.empty((1, R * N), dtype=np.int64)
    best = np.empty((1, R * N))
    kernels.assign_clients(np.ascontiguousarray(sq).reshape(1, R * N, kl), np.ones(R * N, dtype=np.bool_), groups,
                           best)
    return groups[0], best[0]


def _local_kmeans(problem, kl, restarts, max_iter, rng):
    """The literal k-FED local step: the shared k-means on each client's points ``(x, y)``, client
    by client (a one-shot loop).  Returns ``(centres (m, k', d + 1), groups (N,))``."""
    Z = np.concatenate([problem.X, problem.y[:, None]], axis=1).astype(np.float64)
    centres = np.empty((problem.m, kl, problem.d + 1))
    groups = np.empty(problem.N, dtype=np.int64)
    for i in range(problem.m):
        rows = slice(problem.offsets[i], problem.offsets[i + 1])
        res = kmeans(Z[rows], kl, n_init=restarts, max_iter=max_iter, rng=rng)
        centres[i], groups[rows] = res.centres, res.labels
    return centres, groups


# --------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------


def _communication(problem, result, replica):
    """k-FED with ``local="regressions"``, ``k' = k``: once, ``k d`` up and ``k`` labels down;
    per round, ``d + 1`` up for every cluster a client holds points of under the replica's
    estimated point labels, and ``k d`` down."""
    k, n_rounds = result.theta.shape[1], result.n_rounds
    held = clusters_held(problem, result.point_assignments[replica])
    return float(k * problem.d + held * (problem.d + 1) * n_rounds), float(k + k * problem.d * n_rounds)


def _precondition(*, d, k, n_min):
    """The registry's precondition: with ``k' = k`` every client splits its points into ``k``
    local groups, so it needs ``n_i >= k`` (:func:`kfed`'s ``local_clusters``)."""
    if n_min >= k:
        return None
    return Unmet("n_min", n_min, f"every client to hold at least k' = k = {k} points (it splits its points "
                                 "into k' local groups)")


def registrations() -> list[Algorithm]:
    """The registry entry: k-FED with local regressions (``k' = k``) and a FedAvg finish."""
    return [
        Algorithm(
            name="kfed",
            run=_bind(kfed, uses_rng=True, local="regressions"),
            uses_rng=True,
            options={"local": "regressions"},
            communication=_communication,
            precondition=_precondition,
            source=("IFCA thesis ch. 4, Algorithm 2 'k-FED algorithm' (Dennis, Li, Smith, ICML 2021), with "
                    "k' local linear models as centroids, then FedAvg on the point labels"),
            sends=("once: its k' local models (k' d floats), receiving their server clusters (its point labels stay "
                   "local); then per round, for each cluster it holds points of, its index and one d-vector local "
                   "model, receiving the k models"),
        )
    ]
