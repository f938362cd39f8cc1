"""FedAvg within clusters whose labels are fixed: the training phase of the one-shot methods.

One-shot clustering (Ghosh et al. 2020, Algorithm 1), PACFL (Vahidian et al. 2023, Algorithm 1)
and k-FED (the IFCA thesis, Algorithm 2) first label the data once and then train one model per
estimated cluster with FedAvg.  They share this trainer.  Labels are given per *row*, so a client
may hold points of several clusters (k-FED on clients that mix clusters): every (client,
cluster) pair that holds rows is a *sub-client* with ``n_{i,l}`` rows, and a round is

.. math::

    \\theta_{l,t+1} = \\sum_{i:\\, n_{i,l} > 0} \\frac{n_{i,l}}{N_l}\\, G_{i,l}^s(\\theta_{l,t}),
    \\qquad G_{i,l}(\\theta) = \\theta - \\frac{\\eta}{n_{i,l}} X_{i,l}^\\top (X_{i,l} \\theta - y_{i,l}),

FedAvg(s) within cluster ``l`` with the data-size weights of McMahan et al. (renormalised within
the cluster; contrast Phase 2 of Su-Xu-Yang, :mod:`mixreg.algorithms.fedx`, which keeps
:math:`n_i / N`).  A model whose cluster holds no row keeps its value.  With ``s = 1`` a round is
one gradient step of size :math:`\\eta` on :math:`\\frac{1}{2 N_l} \\lVert X_{S_l}\\theta -
y_{S_l}\\rVert^2`, stable for :math:`\\eta < 2 N_l / \\lambda_{max}(X_{S_l}^\\top X_{S_l})`.

As in :mod:`mixreg.algorithms.fedx`, the local steps are affine in the broadcast model, so the
operators :math:`(n_{i,l}/N_l) K_{i,l}` are computed once and a round costs two products of
``2 B N d`` flops per cluster whatever ``s``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..local_solvers import grouped_rows, stacked_operators
from ._driver import BLOWUP, History, HistoryRecorder, Replicas, check_history, data_scales, step_size_groups
from ._server import check_schedule, check_server_step, is_constant, per_factor

__all__ = ["LabelledTraining", "train_on_labels", "majority_labels", "clusters_held"]

HISTORY = ("matched_max", "theta", "misclustering")


@dataclass(frozen=True, kw_only=True)
class LabelledTraining:
    """What :func:`train_on_labels` returns to the driver that called it.

    Attributes
    ----------
    theta : ndarray of shape (B, k, d)
        Final models (a diverged replica's last finite ones).
    train_loss : ndarray of shape (B,)
        :math:`\\frac{1}{2N} \\sum_{rows} (y - \\langle x, \\theta_{label(row)} \\rangle)^2` at the
        final models; ``nan`` for a diverged replica.
    assignments : ndarray of shape (B, m), int64
        Each client's cluster (the fixed labels, or the majority of its rows' labels).
    replicas : Replicas
        Divergence flags, rounds run and stop reason.
    history : History or None
    """

    theta: np.ndarray
    train_loss: np.ndarray
    assignments: np.ndarray
    replicas: Replicas
    history: History | None


def majority_labels(row_labels, offsets, k):
    """Each client's most frequent row label (ties to the lowest), shape (m,), int64."""
    m = offsets.shape[0] - 1
    client = np.repeat(np.arange(m), np.diff(offsets))
    counts = np.zeros((m, k), dtype=np.int64)
    np.add.at(counts, (client, row_labels), 1)
    return counts.argmax(axis=1).astype(np.int64)


def clusters_held(problem, row_labels):
    """How many clusters an average client holds points of, under the row labels (N,)."""
    client = np.repeat(np.arange(problem.m), problem.sizes)
    k = int(row_labels.max()) + 1
    return np.unique(client * k + row_labels).size / problem.m


def train_on_labels(problem, row_labels, theta, eta, *, local_steps=1, n_rounds, tol=None, history=False,
                    blowup=BLOWUP, client_labels=None, server_step=None, schedule=None):
    """FedAvg(s) within each cluster of fixed row labels, for ``B`` replicas.

    The caller (a public driver) has validated every argument.

    Parameters
    ----------
    problem : Problem
    row_labels : int64 array of shape (N,), values in [0, k)
        The cluster of every row (``np.repeat(client_labels, problem.sizes)`` for client-level
        labels).
    theta : ndarray of shape (B, k, d), the problem's dtype
        Starting models (not modified).
    eta : float64 array of shape (B,), > 0
        Step size of each replica.
    local_steps : int >= 1
        ``s`` of FedAvg(s).
    n_rounds : int >= 1
    tol : float or None
        Stop once no live replica moved more than ``tol`` in a round.
    history : bool, "all" or sequence of str
        History fields (:func:`mixreg.algorithms._driver.check_history`; ``True``: matched max
        distance, iterates, misclustering).  The identities are the fixed client labels in every
        round, not an argmin of the round; the client losses are each client's squared residuals
        :math:`\\sum_{r \\in i} (y_r - \\langle x_r, \\theta_{l(r),t}\\rangle)^2` under its rows'
        labels :math:`l(r)`, whose sum over the clients is :math:`2N` times the objective.
    blowup : float > 1 or None
        Divergence factor of :class:`Replicas` (validated).
    client_labels : int64 array of shape (m,), optional
        The clients' clusters reported in ``assignments`` and the history (default: the majority
        of their rows' labels).
    server_step : mixreg.algorithms.ServerStep, optional
        What the server does with each FedAvg round's average within the clusters
        (:meth:`~mixreg.algorithms.ServerStep.average`); default the plain step, which takes it.
    schedule : mixreg.algorithms.Schedule or callable, optional
        Step-size schedule: round ``t``'s local steps use ``eta * schedule(t)`` (the operators
        rebuilt for every new value); default constant, ``eta`` itself.

    Returns
    -------
    LabelledTraining
    """
    B, k, d = theta.shape
    N, m = problem.N, problem.m
    history = check_history(history, HISTORY)
    theta = theta.copy()
    # sub-clients (client i, cluster l), ordered by cluster then client: cluster l's rows are
    # the contiguous block bounds[l]:bounds[l + 1]
    client = np.repeat(np.arange(m), problem.sizes)
    order, keys, offsets = grouped_rows(row_labels * m + client, k * m)
    counts = np.diff(offsets)
    X, y = problem.X[order], problem.y[order]
    cluster_rows = np.bincount(row_labels, minlength=k)
    bounds = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(cluster_rows, out=bounds[1:])
    weight = np.repeat(counts / cluster_rows[keys // m], counts)[:, None]  # n_{i,l} / N_l per row

    values, groups = step_size_groups(eta)
    operators = [_weighted(stacked_operators(X, offsets, v, "fedavg", local_steps), weight, problem.dtype)
                 for v in values]
    if client_labels is None:
        client_labels = majority_labels(row_labels, problem.offsets, k)
    assign = np.broadcast_to(client_labels, (B, m))
    replicas = Replicas(B, n_rounds, tol, theta0=theta, floors=data_scales(problem), blowup=blowup)
    rec = HistoryRecorder(problem, n_rounds, B, k, history) if history else None
    # per-client sums of the squared residuals, only when the client losses are recorded
    row_client = client[order] if rec is not None and rec.wants_client_losses else None
    server_step = check_server_step(server_step)
    schedule = check_schedule(schedule)
    if not is_constant(schedule):  # round t: the operators of eta_t = eta s(t), built for each new s(t)
        scaled = per_factor(schedule, lambda f: [
            _weighted(stacked_operators(X, offsets, v * f, "fedavg", local_steps), weight, problem.dtype)
            for v in values])
    state = server_step.start(theta)
    if rec is not None:
        rec.record_point(0, theta, replicas.diverged)
    blocks = [(l, slice(bounds[l], bounds[l + 1])) for l in range(k) if cluster_rows[l]]
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(n_rounds):
            new = theta.copy()
            round_operators = operators if is_constant(schedule) else scaled(t)
            per_client = None if row_client is None else np.zeros((B, m))
            loss = _residual_sums(theta, X, y, blocks, groups, round_operators, new, row_client, per_client)
            new = server_step.average(theta, new, t=t, state=state, rows=slice(None))
            if rec is not None:
                rec.record_round(t, assign, loss / (2 * N), replicas.diverged, per_client)
            replicas.accept(theta, new, loss / N, t)
            if rec is not None:
                rec.record_point(t + 1, theta, replicas.diverged)
            if replicas.finished(t):
                break
        final = _residual_sums(theta, X, y, blocks, groups, None, None)
    train_loss = np.where(replicas.diverged, np.nan, final / (2 * N))
    return LabelledTraining(theta=theta, train_loss=train_loss, assignments=np.array(assign),
                            replicas=replicas, history=None if rec is None else rec.result(replicas.rounds_run))


def _weighted(KT, weight, dtype):
    """``(weight * KT).astype(dtype)``, in place in ``KT`` (a fresh float64 array), no other copy."""
    np.multiply(KT, weight, out=KT)
    return KT.astype(dtype, copy=False)


def _residual_sums(theta, X, y, blocks, groups, operators, new, row_client=None, per_client=None):
    """Per replica, the sum over rows of squared residuals under the row's cluster model; with
    ``operators``, also add the round's FedAvg step ``R_l @ K_l`` to ``new`` (OUT); with
    ``row_client`` (the client of every row, (N,)), add each client's sum to ``per_client``
    (OUT, (B, m))."""
    total = np.zeros(theta.shape[0])
    for l, rows in blocks:
        R = y[rows][None, :] - theta[:, l] @ X[rows].T  # (B, N_l)
        sq = np.square(R, dtype=np.float64)
        total += sq.sum(axis=1)
        if per_client is not None:
            for b in range(theta.shape[0]):
                per_client[b] += np.bincount(row_client[rows], weights=sq[b], minlength=per_client.shape[1])
        if operators is not None:
            for g, KT in zip(groups, operators):
                new[g, l] += R[g] @ KT[rows]
    return total
