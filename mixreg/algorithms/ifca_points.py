"""Point-level IFCA on clients that mix clusters (UIFCA, the IFCA thesis, chapter 4).

UIFCA (Algorithms 3, 4 and 5 of the thesis) keeps IFCA's alternation between estimating
identities and training ``k`` cluster models, but every client labels each of its *points*
rather than itself, so a client holding points of several clusters trains several models.  The
thesis fits normalizing flows to unlabelled images; here the cluster models are linear
regressions and the per-point loss is the squared residual
:math:`f_\\theta(x, y) = (y - \\langle x, \\theta \\rangle)^2`.  Round ``t`` from
:math:`\\theta_t = (\\theta_{1,t}, \\dots, \\theta_{k,t})`:

1. the server broadcasts the ``k`` models;
2. client ``i`` labels each of its points by its least squared residual (Algorithm 3, line 8),
   ties to the lowest index (:func:`mixreg.kernels.argmin_skip_nan`):
   :math:`S_{i,l} = \\{j : l = \\arg\\min_{l'} (y_{ij} - \\langle x_{ij}, \\theta_{l'} \\rangle)^2\\}`;
3. for each cluster ``l``, ``tau`` rounds of FedAvg on the points labelled ``l``
   (LearnClusterModel, Algorithm 4): every client with :math:`S_{i,l} \\neq \\emptyset` runs
   ``s`` full-batch gradient steps of size :math:`\\eta` on
   :math:`\\frac{1}{2|S_{i,l}|} \\lVert y_{S_{i,l}} - X_{S_{i,l}} \\theta \\rVert^2` from
   :math:`\\theta_l` (ModelUpdate, Algorithm 5) and the server averages the local models with
   weights :math:`|S_{i,l}| / |S_{*,l}|` (Algorithm 4, line 6).  A model with no point keeps its
   value.

With ``s = 1`` a FedAvg round is exactly one gradient step on the cluster's pooled loss,

.. math::

    \\theta_l \\leftarrow \\theta_l - \\frac{\\eta}{N_l} X_{S_l}^\\top (X_{S_l} \\theta_l - y_{S_l}),
    \\qquad S_l = \\cup_i S_{i,l},\\ N_l = |S_l|,

the gradient of :math:`\\frac{1}{2 N_l} \\lVert X_{S_l} \\theta_l - y_{S_l} \\rVert^2`: point-level
IFCA with ``s = tau = 1`` is hard-EM (a "k-lines" Lloyd iteration) for mixed linear regression
with one gradient step as its M-step, and the clients' partition of the data plays no role.

Our choices where the thesis is silent or differs (each a parameter or stated):

* the run starts from the models ``init`` (IFCA's convention), not from a random assignment;
* LearnClusterModel warm-starts from the current model, where the thesis re-initialises
  :math:`\\theta` randomly (Algorithm 4, line 3): with ``tau = 1`` (``inner_rounds``, default)
  the method is an IFCA-like alternation of one relabelling and one FedAvg round;
* ModelUpdate uses the full local batch :math:`S_{i,l}` where the thesis draws minibatches of
  size ``N``; its ``M`` is ``local_steps`` (default 1).

Cost of a round (``tau = 1``): the predictions of all replicas and models are one GEMM
(``2 B k N d`` flops), labelling is a Numba pass over the rows of the predictions (``O(B k N)``,
the points vectorised), and with ``s = 1`` the
aggregated update of every (replica, model) is one product of the masked residuals with ``X``
(``2 B k N d``).  With ``s > 1`` every local step costs two per-client products over the ``B k``
(replica, model) pairs (:func:`mixreg.kernels.client_predictions`,
:func:`mixreg.kernels.client_gradients`), ``4 B k N d`` flops, the rows outside
:math:`S_{i,l}` masked to zero.

References
----------
.. [1] J. Chung, "Efficient Clustering Frameworks for Federated Learning Systems", MS report
   UCB/EECS-2023-212 (the IFCA thesis), chapter 4, "UIFCA: a generative model-based clustering
   method based on IFCA", Algorithms 3-5.
.. [2] A. Ghosh, J. Chung, D. Yin, K. Ramchandran, "An Efficient Framework for Clustered
   Federated Learning", NeurIPS 2020 (IFCA).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from .._typing import ArrayLike, HistoryRequest, ScheduleLike
from ..problems import Problem
from .. import kernels
from ..validation import check_int
from ..kernels import beats
from ._driver import (
    BLOWUP,
    DriverResult,
    HistoryRecorder,
    Replicas,
    check_blowup,
    check_history,
    check_run,
    common_fields,
    data_scales,
)
from ._fixed_labels import majority_labels
from ._local_steps import local_gradient_steps
from ._registry import Algorithm, _bind
from ._server import ServerStep, check_schedule, check_server_step, is_constant

__all__ = ["IFCAPointsResult", "ifca_points", "point_labels"]

#: The shared history records the matched max distance, the iterates and the misclustering of
#: the clients' majority labels; the per-point misclustering is a field of the result.
HISTORY = ("matched_max", "theta", "misclustering")


@dataclass(frozen=True, kw_only=True)
class IFCAPointsResult(DriverResult):
    """Outcome of a batched point-level IFCA run: the common fields of
    :class:`mixreg.algorithms.DriverResult` and the point labels.

    ``train_loss`` is the point-level objective at the final models,
    :math:`\\frac{1}{2N} \\sum_{r=1}^{N} \\min_l (y_r - \\langle x_r, \\theta_l \\rangle)^2`;
    ``assignments`` is each client's majority point label (ties to the lowest).

    Attributes
    ----------
    point_assignments : ndarray of shape (B, N), int64
        The label of every point under the final models.
    point_misclustering : ndarray of shape (B,)
        Fraction of points whose label disagrees with ``problem.row_labels`` under the best
        relabelling (:func:`mixreg.metrics.misclustering_rate`); ``nan`` for a diverged replica.
    point_misclustering_history : ndarray of shape (T, B) or None
        With a history: the same for the labels of round ``t`` (computed at
        :math:`\\theta_t`, before the update); ``nan`` from a replica's divergence on.
    upload_floats, download_floats : ndarray of shape (B,)
        Floats all clients sent the server, and each client received, over the rounds the
        replica was live (up to and including the round it diverged in), counted round by
        round: up, ``tau (d + 1)`` per (client, cluster) pair holding points under that round's
        labels; down, the ``k`` models before each of the ``tau`` inner rounds, ``tau k d``.
    local_steps : int
        ``s``, the local gradient steps of ModelUpdate.
    inner_rounds : int
        ``tau``, the FedAvg rounds of LearnClusterModel per relabelling.
    """

    point_assignments: np.ndarray
    point_misclustering: np.ndarray
    point_misclustering_history: np.ndarray | None = None
    upload_floats: np.ndarray
    download_floats: np.ndarray
    local_steps: int
    inner_rounds: int


# --------------------------------------------------------------------------------------------
# Kernel: the point labels and the masked residuals
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _label_points(P, y, k, relabel, labels, best, R):
    """Per-point labels (Algorithm 3, line 8) and the residuals of the labelled models.

    For replica ``b`` and row ``r``, with ``e_l = y_r - P[b*k + l, r]`` (float64):

    * if ``relabel``: ``labels[b, r] = argmin_l e_l^2`` by :func:`argmin_skip_nan` (OUT);
      otherwise ``labels`` is IN and kept;
    * ``best[b, r] = e_a^2`` with ``a = labels[b, r]`` (OUT);
    * ``R[b*k + l, r] = -e_l`` (the prediction minus the response) for ``l = a`` and 0 for the
      other models (OUT), so that ``R @ X`` sums each model's gradient over its points.
    """
    B, N = labels.shape
    for b in range(B):
        lab, bst = labels[b], best[b]
        if relabel:  # argmin_skip_nan over the models, a row of P at a time (vectorises over r)
            p = P[b * k]
            for r in range(N):
                e = np.float64(y[r]) - np.float64(p[r])
                bst[r] = e * e
                lab[r] = 0
            for l in range(1, k):
                p = P[b * k + l]
                for r in range(N):
                    e = np.float64(y[r]) - np.float64(p[r])
                    w = e * e
                    v = bst[r]
                    take = beats(w, v)
                    lab[r] = l if take else lab[r]
                    bst[r] = w if take else v
        else:
            for r in range(N):
                e = np.float64(y[r]) - np.float64(P[b * k + lab[r], r])
                bst[r] = e * e
        for l in range(k):  # row by row of R: contiguous writes, a select per entry
            p, out = P[b * k + l], R[b * k + l]
            for r in range(N):
                e = p[r] - y[r]
                out[r] = e if lab[r] == l else 0.0


@njit(cache=True)
def _count_labels(labels, offsets, counts):
    """``counts[b, i, l] = |S_{i,l}|``: client ``i``'s points with ``labels[b, r] == l`` (OUT)."""
    B = labels.shape[0]
    m = offsets.shape[0] - 1
    counts[:] = 0
    for b in range(B):
        for i in range(m):
            for r in range(offsets[i], offsets[i + 1]):
                counts[b, i, labels[b, r]] += 1


@njit(cache=True)
def _masked_local_residuals(Q, y, offsets, labels, counts, k, out):
    """Client-major local residuals of the sub-clients (client ``i``, cluster ``l``).

    ``Q`` holds the client-major predictions of the ``B k`` local models (column ``c = b*k + l``,
    block ``(B k, n_i)`` of client ``i`` at ``B*k*offsets[i]``); ``out`` receives
    ``(Q - y_r) / counts[b, i, l]`` where ``labels[b, r] == l`` and 0 elsewhere (the gradient
    weights of :math:`\\frac{1}{2|S_{i,l}|}\\lVert y_S - X_S \\theta \\rVert^2`).  ``Q`` and
    ``out`` may be the same buffer.
    """
    B = labels.shape[0]
    m = offsets.shape[0] - 1
    Bk = B * k
    for i in range(m):
        lo = offsets[i]
        n = offsets[i + 1] - lo
        base = Bk * lo
        for c in range(Bk):
            b = c // k
            l = c - b * k
            o = base + c * n
            cnt = counts[b, i, l]
            for j in range(n):
                if labels[b, lo + j] == l:
                    out[o + j] = (Q[o + j] - y[lo + j]) / cnt
                else:
                    out[o + j] = 0.0


def point_labels(problem: Problem, theta: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Each point's label and the point-level objective under ``theta``.

    Parameters
    ----------
    problem : Problem
    theta : array of shape (B, k, d)

    Returns
    -------
    labels : ndarray of shape (B, N), int64
        :math:`\\arg\\min_l (y_r - \\langle x_r, \\theta_l \\rangle)^2`, ties to the lowest index.
    loss : ndarray of shape (B,)
        :math:`\\frac{1}{2N} \\sum_r \\min_l (y_r - \\langle x_r, \\theta_l \\rangle)^2`.

    Examples
    --------
    >>> from mixreg.problems import ProblemSpec
    >>> pb = ProblemSpec(m=4, k=2, n=20, d=3, sigma=0.0, scale=3.0, protocol="gaussian",
    ...                  main_fraction=0.5).generate(np.random.default_rng(0))
    >>> labels, loss = point_labels(pb, pb.theta_star[None])
    >>> bool((labels[0] == pb.row_labels).all()), round(float(loss[0]), 12)
    (True, 0.0)
    """
    theta = np.ascontiguousarray(theta, dtype=problem.dtype)
    B, k, _ = theta.shape
    P = kernels.predict(theta, problem.X)
    labels = np.empty((B, problem.N), dtype=np.int64)
    best = np.empty((B, problem.N))
    _label_points(P, problem.y, k, True, labels, best, np.empty_like(P))
    return labels, best.sum(axis=1) / (2 * problem.N)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def ifca_points(problem: Problem, init: ArrayLike, step_size: float | ArrayLike, *, n_rounds: int,
                rng: np.random.Generator | None = None, tol: float | None = None, history: HistoryRequest = False,
                blowup: float | None = BLOWUP, local_steps: int = 1, inner_rounds: int = 1,
                server_step: ServerStep | None = None, schedule: ScheduleLike | None = None) -> IFCAPointsResult:
    r"""Run ``B`` replicas of point-level IFCA (UIFCA, the IFCA thesis, Algorithms 3-5).

    Round ``t``: label every point, :math:`\hat z_r = \arg\min_l (y_r - \langle x_r,
    \theta_{l,t}\rangle)^2` (Algorithm 3, line 8; ties to the lowest index), then ``tau`` FedAvg
    rounds within each cluster of points (Algorithms 4 and 5),

    .. math::

        \theta_l \leftarrow \sum_{i:\, S_{i,l} \neq \emptyset} \frac{|S_{i,l}|}{|S_{*,l}|}\,
        G_{i,l}^{s}(\theta_l), \qquad
        G_{i,l}(\theta) = \theta - \frac{\eta}{|S_{i,l}|} X_{S_{i,l}}^\top
        (X_{S_{i,l}} \theta - y_{S_{i,l}}),

    where :math:`S_{i,l}` are client ``i``'s points labelled ``l``; a model with no point keeps
    its value.  With ``s = 1`` this is one gradient step of size :math:`\eta` on the pooled
    :math:`\frac{1}{2N_l}\lVert X_{S_l}\theta_l - y_{S_l}\rVert^2`.

    Parameters
    ----------
    problem : Problem
        Any problem; on one with ``main_fraction`` (clients that mix clusters) the true labels
        of the points are ``problem.row_labels``.
    init : array of shape (B, k, d) or (k, d)
        Starting models (ours: the thesis starts from a random assignment of the points); cast
        to the problem's dtype, never modified.
    step_size : float or array of shape (B,)
        :math:`\eta` of each replica, > 0.  With ``s = 1`` stable for
        :math:`\eta < 2 N_l / \lambda_{max}(X_{S_l}^\top X_{S_l})` (about 2 for unit-variance
        features and :math:`N_l \gg d`).  With ``s > 1`` every sub-client's local steps must
        also be stable, :math:`\eta < 2 |S_{i,l}| / \lambda_{max}(X_{S_{i,l}}^\top
        X_{S_{i,l}})`, and a sub-client of one point (common when a client holds few points of
        a cluster) needs :math:`\eta < 2 / \lVert x \rVert^2 \approx 2 / d`.
    n_rounds : int >= 1
        ``T``, relabellings (the thesis's cluster rounds).
    rng : numpy.random.Generator, optional
        Unused: the method draws nothing (accepted for the common driver signature).
    tol : float >= 0, optional
        Stop once every live replica's models moved by at most ``tol`` (largest coordinate
        change) in a round; by default all ``T`` rounds run.
    history : bool, "all" or sequence of str
        Record :class:`mixreg.algorithms.History`: ``True``, the matched max distance, iterates,
        misclustering of the clients' majority labels, and the objective of ``train_loss`` at
        :math:`\theta_t`; ``"all"`` or names among :data:`mixreg.algorithms.HISTORY_FIELDS`:
        those (the identities are the clients' majority point labels of round ``t``, ties to the
        lowest; the client losses are each client's :math:`\sum_{r \in i} \min_l (y_r - \langle
        x_r, \theta_{l,t}\rangle)^2`, the sum of its points' losses whose argmins are the point
        labels, summing over the clients to :math:`2N` times the objective).  Any history also
        fills ``point_misclustering_history``.
    blowup : float > 1 or None
        Divergence factor of :class:`mixreg.algorithms.Replicas` (default
        :data:`mixreg.algorithms.DEFAULT_BLOWUP`); ``None``: only non-finite values count.
    local_steps : int >= 1
        ``s``, the gradient steps of ModelUpdate (Algorithm 5's ``M``) on the full local batch
        :math:`S_{i,l}` (ours: the thesis draws minibatches of size ``N``).  Default 1.
    inner_rounds : int >= 1
        ``tau``, the FedAvg rounds of LearnClusterModel (Algorithm 4) per relabelling, each
        warm-started from the current model (ours: the thesis re-initialises randomly).
        Default 1, IFCA's alternation.
    server_step : mixreg.algorithms.ServerStep, optional
        What the server does with each inner round's update: with ``s = 1`` the gradient step
        :math:`\theta_l - (\eta / N_l) X_{S_l}^\top (X_{S_l}\theta_l - y_{S_l})`
        (:meth:`~mixreg.algorithms.ServerStep.gradient`), with ``s > 1`` the weighted average
        (:meth:`~mixreg.algorithms.ServerStep.average`); its update index is ``t * tau + u``.
        Default the plain step.
    schedule : mixreg.algorithms.Schedule or callable, optional
        Step-size schedule: server update ``t * tau + u`` uses :math:`\eta\, s(t \tau + u)` for
        its gradient step (``s = 1``) or its local steps.  Default constant.

    Returns
    -------
    IFCAPointsResult

    Notes
    -----
    Communication of a client per round, ``tau`` times: it downloads the ``k`` models (``k d``
    floats) and uploads, for every cluster it holds points of under the round's labels, one
    local model and the count :math:`|S_{i,l}|`, at most ``k (d + 1)`` floats.  The uploads
    are counted round by round (``upload_floats``).

    A replica whose models or objective stop being finite, or blow up, is frozen at its last
    finite models and flagged (``diverged``), as in every driver of :mod:`mixreg.algorithms`.

    Examples
    --------
    >>> from mixreg.problems import ProblemSpec
    >>> pb = ProblemSpec(m=20, k=2, n=40, d=5, sigma=0.05, scale=4.0, protocol="gaussian",
    ...                  main_fraction=0.5).generate(np.random.default_rng(0))
    >>> res = ifca_points(pb, pb.theta_star + 0.3, 0.5, n_rounds=30)
    >>> res.theta.shape, res.point_assignments.shape, float(res.point_misclustering[0]) < 0.02
    ((1, 2, 5), (1, 800), True)
    """
    start = time.perf_counter()
    theta, eta, T, tol = check_run(problem, init, step_size, n_rounds, tol)
    B, k, d = theta.shape
    s = check_int("local_steps", local_steps, low=1)
    tau = check_int("inner_rounds", inner_rounds, low=1)
    server_step = check_server_step(server_step)
    schedule = check_schedule(schedule)
    fields = check_history(history, HISTORY)
    blowup = check_blowup(blowup)

    replicas = Replicas(B, T, tol, theta0=theta, floors=data_scales(problem), blowup=blowup)
    rec = HistoryRecorder(problem, T, B, k, fields) if fields else None
    point_history = np.full((T, B), np.nan) if fields else None
    uploads, downloads = np.zeros(B), np.zeros(B)
    _run(problem, theta, eta, replicas, rec, point_history, uploads, downloads, s=s, tau=tau,
         server_step=server_step, schedule=schedule)

    with np.errstate(over="ignore", invalid="ignore"):
        labels, train_loss = point_labels(problem, theta)
    train_loss[replicas.diverged] = np.nan
    point_mis = _point_misclustering(problem, labels, k)
    point_mis[replicas.diverged] = np.nan
    return IFCAPointsResult(
        theta=theta,
        assignments=_majority(labels, problem.offsets, k),
        train_loss=train_loss,
        **common_fields(replicas, eta, start, rec),
        point_assignments=labels,
        point_misclustering=point_mis,
        point_misclustering_history=None if point_history is None else point_history[: replicas.rounds_run],
        upload_floats=uploads,
        download_floats=downloads,
        local_steps=s,
        inner_rounds=tau,
    )


def _majority(labels, offsets, k):
    """Each client's majority point label (ties to the lowest) of every replica, (B, m)."""
    B, N = labels.shape
    stacked = np.append((np.arange(B)[:, None] * N + offsets[:-1]).ravel(), B * N)  # replica-major
    return majority_labels(labels.ravel(), stacked, k).reshape(B, offsets.size - 1)


def _point_misclustering(problem, labels, k):
    """Per-point misclustering of every replica's labels (B,) against ``problem.row_labels``."""
    from ..metrics import misclustering_rate  # metrics are needed only for the report

    return np.asarray(misclustering_rate(labels, problem.row_labels, max(k, problem.k)), dtype=np.float64)


def _run(problem, theta, eta, replicas, rec, point_history, uploads, downloads, *, s, tau, server_step, schedule):
    """Point-level IFCA's loop, in place on ``theta`` (B, k, d), ``replicas``, the records and
    the floats sent to the server (``uploads``) and to each client (``downloads``), (B,)."""
    B, k, d = theta.shape
    N, m, dtype = problem.N, problem.m, problem.dtype
    X, y, offsets = problem.X, problem.y, problem.offsets
    P = np.empty((B * k, N), dtype=dtype)
    R = np.empty((B * k, N), dtype=dtype)
    labels = np.empty((B, N), dtype=np.int64)
    best = np.empty((B, N))
    counts = np.empty((B, m, k), dtype=np.int64)
    if s > 1:  # the B k local models of every client, client-major (kernels.ClientLayout)
        layout = kernels.ClientLayout(offsets, d, B * k)
        local = np.empty((m, B * k, d), dtype=dtype)
        Q = np.empty(B * k * N, dtype=dtype)
        C = np.empty((m, B * k, d), dtype=dtype)
        local_step = np.repeat(eta, k).astype(dtype)[None, :, None]
        XT = kernels.client_transposed(X, offsets)  # the local predictions' form (numerics change 2)
    state = server_step.start(theta)
    constant = is_constant(schedule)
    if rec is not None:
        rec.record_point(0, theta, replicas.diverged)

    # Divergence is detected explicitly (Replicas.accept freezes and flags the replica), so the
    # floating-point warnings it causes on the way are silenced.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for t in range(replicas.n_rounds):
            # (1)-(2) broadcast the k models; every point takes its least-residual model
            kernels.predict(theta, X, out=P)
            _label_points(P, y, k, True, labels, best, R)
            objective = best.sum(axis=1)  # sum_r min_l (y_r - <x_r, theta_l>)^2 at theta_t
            if rec is not None:
                per_client = np.add.reduceat(best, offsets[:-1], axis=1) if rec.wants_client_losses else None
                rec.record_round(t, _majority(labels, offsets, k), objective / (2 * N), replicas.diverged, per_client)
                live = replicas.live
                if live.any():
                    point_history[t, live] = _point_misclustering(problem, labels[live], k)

            # |S_{i,l}| of every replica, client and cluster; |S_{*,l}| = N_l
            _count_labels(labels, offsets, counts)
            N_l = counts.sum(axis=1)
            present = N_l > 0
            uploads += np.where(replicas.live, (counts > 0).sum(axis=(1, 2)), 0) * (tau * (d + 1))
            downloads += np.where(replicas.live, tau * k * d, 0)

            # (3) tau FedAvg rounds within each cluster of points, warm-started
            new = theta.copy()
            for u in range(tau):
                eta_u = eta if constant else eta * schedule.factor(t * tau + u)  # this server update's step
                if u > 0:  # the labels stay; the residuals are those of the updated models
                    kernels.predict(new, X, out=P)
                    _label_points(P, y, k, False, labels, best, R)
                if s == 1:  # theta_l -= (eta / N_l) X_{S_l}^T (X_{S_l} theta_l - y_{S_l})
                    grad = np.matmul(R, X).reshape(B, k, d)  # exactly 0 for a model with no point
                    scale = (eta_u[:, None] / np.maximum(N_l, 1)).astype(dtype)
                    new = server_step.gradient(new, grad, scale[:, :, None], t=t * tau + u, state=state,
                                               rows=slice(None))
                else:  # s local steps of every sub-client, then the |S_il| / |S_*l| average
                    local[:] = new.reshape(1, B * k, d)
                    if not constant:
                        local_step = np.repeat(eta_u, k).astype(dtype)[None, :, None]
                    local_gradient_steps(local, X, layout, local_step, s,  # on (X w - y) / |S_il| over S_il
                                         lambda R: _masked_local_residuals(R, y, offsets, labels, counts, k, R), Q, C, XT)
                    weights = (counts / np.maximum(N_l, 1)[:, None, :]).transpose(1, 0, 2).reshape(m, B * k)
                    average = np.einsum("ic,icd->cd", weights.astype(dtype), local).reshape(B, k, d)
                    new = server_step.average(new, np.where(present[:, :, None], average, new), t=t * tau + u,
                                              state=state, rows=slice(None))

            replicas.accept(theta, new, objective / N, t)  # per-sample mean loss at theta_t
            if rec is not None:
                rec.record_point(t + 1, theta, replicas.diverged)
            if replicas.finished(t):
                break


# --------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------


def _communication(problem, result, replica):
    """Per client, over the replica's live rounds (:attr:`IFCAPointsResult.upload_floats`):
    up, a model and a count for every cluster it holds points of under each round's labels,
    ``tau`` times a round; down, the ``k`` models before each of the ``tau`` inner rounds."""
    return float(result.upload_floats[replica] / problem.m), float(result.download_floats[replica])


def registrations() -> list[Algorithm]:
    """The registry entry: point-level IFCA with one local step and one FedAvg round per labelling."""
    return [
        Algorithm(
            name="ifca_points",
            run=_bind(ifca_points, uses_rng=False),
            uses_rng=False,
            options={"local_steps": 1, "inner_rounds": 1},
            communication=_communication,
            source=("the IFCA thesis (Chung, UCB/EECS-2023-212), chapter 4, UIFCA: Algorithms 3 (per-point labels), 4 "
                    "(LearnClusterModel: FedAvg with |S_il| / |S_*l| weights) and 5 (ModelUpdate), with "
                    "linear regression models in place of normalizing flows"),
            sends=("for every cluster it holds points of, one d-vector local model and the count |S_il| "
                   "(at most k (d + 1) floats; the per-point labels stay on the client); receives k models"),
        )
    ]
