"""Phase 2 of Su, Xu and Yang (2022): FedX with clustering (FedAvg(s) or FedProx).

Slides "FedX + Clustering in Action", steps 1-4; all clients take part every round and reuse all
their data, including the data used in Phase 1.  Round ``t`` from
:math:`\\theta_t = (\\theta_{1,t}, \\dots, \\theta_{k,t})`:

1. broadcast the ``k`` models to all clients;
2. client ``i`` decodes its label with the ML decoder
   :math:`z_{i,t} \\in \\arg\\min_l L_i(\\theta_t, l)`,
   :math:`L_i(\\theta, l) = \\sum_{j=1}^{n_i} (y_{ij} - \\langle x_{ij}, \\theta_l \\rangle)^2`
   (ties to the lowest index: ours, the slides are silent);
3. client ``i`` refines the chosen model with the local loss
   :math:`\\ell_i(\\theta) = \\frac{1}{2 n_i} \\sum_j (y_{ij} - \\langle x_{ij}, \\theta \\rangle)^2`
   (our normalisation: the slides write the plain sum :math:`L_i`, which with weights
   :math:`w_i \\propto n_i` would count a client :math:`\\propto n_i^2`):

   * FedAvg(s): :math:`\\theta^{(i)} = G_i^s(\\theta_{z_{i,t},t})`,
     :math:`G_i(\\theta) = \\theta - \\eta \\nabla \\ell_i(\\theta)`;
   * FedProx: :math:`\\theta^{(i)} = \\arg\\min_\\theta \\ell_i(\\theta) + \\frac{1}{2\\eta}
     \\lVert \\theta - \\theta_{z_{i,t},t} \\rVert^2`;

4. the server averages the full ``k``-tuples over all clients with :math:`w_i = n_i / \\sum n`:
   :math:`\\theta_{t+1} = \\sum_i w_i \\theta_{i,t}`, i.e. per model

   .. math::

      \\theta_{l,t+1} = \\theta_{l,t} + \\sum_{i:\\, z_{i,t} = l} w_i\\, (\\theta^{(i)} - \\theta_{l,t}),

   with no renormalisation within a cluster: a model nobody chose keeps its value, and a
   model's step is damped by the fraction of data that chose it (the source of the
   :math:`1 - C_1 p_{min}` contraction).

Implementation: for the squared loss both local solvers are *affine in the broadcast model*:
:math:`\\theta^{(i)} - \\theta = K_i (y_i - X_i \\theta)` with a ``d x n_i`` matrix :math:`K_i`
that depends only on :math:`X_i`, :math:`\\eta` and the solver (:func:`local_update_operator`):

* FedAvg(s): :math:`K_i = \\frac{\\eta}{n_i} \\sum_{j=0}^{s-1} (I - \\eta H_i)^j X_i^\\top`,
  :math:`H_i = X_i^\\top X_i / n_i` (unrolling ``s`` gradient steps);
* FedProx: :math:`K_i = \\eta X_i^\\top (n_i I + \\eta X_i X_i^\\top)^{-1}
  = (H_i + I/\\eta)^{-1} X_i^\\top / n_i` (closed form of the proximal step; the smaller of the
  :math:`n_i \\times n_i` and :math:`d \\times d` systems is solved).

So the operators :math:`w_i K_i` are computed once, stacked like the data (one ``N x d``
array), and a round is a GEMM of ``2 B k N d`` flops (the predictions of every model, for the
decoder), a Numba pass (the decoder), and each client's product of its decoded model's
residuals with its operator, ``2 B N d`` flops, added up per model
(:func:`mixreg.kernels.cluster_gradients`), for any ``s``: local steps cost nothing per round.
FedAvg(1) with these weights is exactly one gradient step of size :math:`\\eta` on the pooled
per-cluster least squares :math:`\\frac{1}{2N}\\lVert X_{S_l}\\theta - y_{S_l}\\rVert^2`.

References
----------
.. [1] L. Su, J. Xu, P. Yang, "Global Convergence of Federated Learning for Mixed Regression",
   NeurIPS 2022 (arXiv:2206.07279); J. Xu, Allerton 2022 talk slides.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._typing import ArrayLike, HistoryRequest, ScheduleLike
from ..problems import Problem
from .. import kernels
from ..local_solvers import LOCAL_SOLVERS, check_solver, local_update_operator, stacked_update_operators
from ._driver import (
    BLOWUP,
    DriverResult,
    History,
    HistoryRecorder,
    Replicas,
    check_blowup,
    check_history,
    check_run,
    common_fields,
    data_scales,
    step_size_groups,
)
from ._server import ServerStep, check_schedule, check_server_step, is_constant, per_factor

__all__ = [
    "FedXResult",
    "FedXHistory",
    "fedx",
    "local_update_operator",
    "stacked_update_operators",
    "fedx_linear_rates",
    "LOCAL_SOLVERS",
]


#: Phase 2 records (``history=True``) the matched max distance, the iterates and the
#: misclustering every round, and its objective :math:`\frac{1}{2N} \sum_i \min_l L_i(\theta_t, l)`
#: at the decoding; on request also the decoded labels and the client losses
#: :math:`\min_l L_i(\theta_t, l)` whose argmin they are.
FedXHistory = History
HISTORY = ("matched_max", "theta", "misclustering")


@dataclass(frozen=True, kw_only=True)
class FedXResult(DriverResult):
    """Outcome of a batched FedX-with-clustering run: the common fields of
    :class:`mixreg.algorithms.DriverResult` and the local solver.

    ``assignments`` are the ML-decoded labels under the final models and ``train_loss`` is
    :math:`\\frac{1}{2N} \\sum_i \\min_l L_i(\\theta_T, l)`.

    Attributes
    ----------
    local_solver : str
    local_steps : int
        ``s`` of FedAvg(s) (1 for FedProx).
    """

    local_solver: str
    local_steps: int


def fedx_linear_rates(problem: Problem, step_size: float, local_solver: str = "fedavg", local_steps: int = 1, *,
                      labels: ArrayLike | None = None) -> np.ndarray:
    """Per-cluster contraction factor of Phase 2 when the decoder is always right.

    With the labels fixed, model ``l`` follows the affine map
    :math:`\\theta_l \\mapsto A_l \\theta_l + b_l`, :math:`A_l = I - \\sum_{i \\in S_l} w_i K_i X_i`
    (symmetric: :math:`K_i X_i` is a spectral function of :math:`H_i`), so the error to its
    fixed point contracts exactly by the spectral radius of :math:`A_l` per round.  This is the
    realised value of the theorem's :math:`1 - C_1 p_{min}` (for FedAvg(1) and large clusters,
    :math:`\\approx 1 - \\eta\\, (N_l/N)\\, \\lambda_{min}(\\Sigma_l)`).

    Parameters
    ----------
    problem : Problem
    step_size, local_solver, local_steps
        As for :func:`fedx`.
    labels : int array of shape (m,), optional
        The fixed labels (default: the true ones).

    Returns
    -------
    rates : ndarray of shape (k,)
        :math:`\\max_j |\\lambda_j(A_l)|`; ``nan`` for a cluster with no client.

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=20, k=2, n=50, d=3, sigma=0.1, scale=1.0, rng=np.random.default_rng(0))
    >>> rates = fedx_linear_rates(pb, 1.0)  # about 1 - (N_l / N) lambda_min: near 1/2 here
    >>> rates.shape, bool(np.all((0.3 < rates) & (rates < 0.7)))
    ((2,), True)
    """
    KT = stacked_update_operators(problem, step_size, local_solver, local_steps)
    labels = problem.labels if labels is None else np.asarray(labels)
    if labels.shape != (problem.m,):
        raise ValueError(f"labels must have shape (m,)=({problem.m},), got {labels.shape}")
    row_label = np.repeat(labels, problem.sizes)
    X = problem.X.astype(np.float64)
    rates = np.full(problem.k, np.nan)
    for l in range(problem.k):
        rows = row_label == l
        if rows.any():
            A = np.eye(problem.d) - KT[rows].T @ X[rows]
            rates[l] = np.abs(np.linalg.eigvalsh(0.5 * (A + A.T))).max()
    return rates


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def fedx(problem: Problem, init: ArrayLike, step_size: float | ArrayLike, *, local_solver: str = "fedavg",
         local_steps: int = 1, n_rounds: int = 100, tol: float | None = None, history: HistoryRequest = False,
         blowup: float | None = BLOWUP, server_step: ServerStep | None = None,
         schedule: ScheduleLike | None = None) -> FedXResult:
    r"""Run ``B`` replicas of Phase 2 (FedX with clustering) on one problem.

    Round ``t`` (slides "FedX + Clustering in Action", steps 1-4): decode
    :math:`z_i = \arg\min_l L_i(\theta_t, l)`, refine locally, average the ``k``-tuples,

    .. math::

        \theta_{l,t+1} = \theta_{l,t} + \sum_{i:\, z_{i,t} = l} w_i K_i
        (y_i - X_i \theta_{l,t}), \qquad w_i = n_i / N,

    with :math:`K_i` the local solver's operator
    (:func:`~mixreg.local_solvers.local_update_operator`).

    Parameters
    ----------
    problem : Problem
    init : array of shape (B, k, d) or (k, d)
        Starting models, e.g. the Phase-1 centres
        (:class:`~mixreg.algorithms.MomentDescentResult`); cast to the problem's dtype, never
        modified.
    step_size : float or array of shape (B,)
        :math:`\eta` of each replica, > 0 (the slides give no value).  FedAvg(1): the model of
        cluster ``l`` moves by a gradient step on :math:`\frac{1}{2N}\lVert X_{S_l}\theta -
        y_{S_l}\rVert^2`, stable for :math:`\eta < 2 N / \lambda_{max}(X_{S_l}^\top X_{S_l})`.
        FedAvg(s > 1) also needs every client's local steps to be stable,
        :math:`\eta < 2 / \lambda_{max}(X_i^\top X_i / n_i)`, which for a one-point client is
        :math:`2 / \lVert x \rVert^2 \approx 2/d`.  FedProx is stable for every :math:`\eta`.
    local_solver : {"fedavg", "fedprox"}
    local_steps : int >= 1
        ``s`` of FedAvg(s); ignored by FedProx.
    n_rounds : int >= 1
    tol : float >= 0, optional
        Stop once every live replica moved by at most ``tol`` in a round (largest coordinate
        change); by default all rounds run.
    history : bool, "all" or sequence of str
        Record :class:`mixreg.algorithms.History` (a metric evaluation per round): ``True``, the
        matched max distance, iterates, misclustering and objective
        :math:`\frac{1}{2N}\sum_i \min_l L_i(\theta_t, l)`; ``"all"`` or names among
        :data:`mixreg.algorithms.HISTORY_FIELDS`: those (with the decoded labels :math:`z_{i,t}`
        and the client losses :math:`L_i(\theta_t, z_{i,t}) = \lVert y_i - X_i
        \theta_{z_{i,t},t}\rVert^2`, whose sum over the clients is :math:`2N` times the objective).
    blowup : float > 1 or None
        Divergence factor of :class:`mixreg.algorithms.Replicas` (default
        :data:`mixreg.algorithms.DEFAULT_BLOWUP`); ``None``: only non-finite values count.
    server_step : mixreg.algorithms.ServerStep, optional
        What the server does with the averaged ``k``-tuple
        (:meth:`~mixreg.algorithms.ServerStep.average`); default the plain step, which takes it.
    schedule : mixreg.algorithms.Schedule or callable, optional
        Step-size schedule: round ``t``'s local solver uses :math:`\eta_t = \eta\, s(t)`
        (FedAvg's local step, FedProx's proximal parameter), its operators :math:`K_i` rebuilt
        for every new value of :math:`s(t)`.  Default constant: :math:`\eta`, operators built once.

    Returns
    -------
    FedXResult

    Notes
    -----
    A replica whose models or decoder losses stop being finite is frozen at its last finite
    models and flagged (``diverged``), as in every driver of :mod:`mixreg.algorithms`.

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=40, k=2, n=20, d=5, sigma=0.1, scale=2.0, protocol="gaussian",
    ...                   rng=np.random.default_rng(0))
    >>> res = fedx(pb, pb.theta_star + 0.3, 1.0, local_solver="fedprox", n_rounds=30)
    >>> res.theta.shape, bool(res.train_loss[0] < 0.01)
    ((1, 2, 5), True)
    """
    start = time.perf_counter()
    theta, eta, T, tol = check_run(problem, init, step_size, n_rounds, tol)
    B, k, d = theta.shape
    _, solver, s = check_solver(eta, local_solver, local_steps)
    server_step = check_server_step(server_step)
    schedule = check_schedule(schedule)
    fields = check_history(history, HISTORY)
    blowup = check_blowup(blowup)

    # plan: the operators w_i K_i^T of each distinct step size, stacked like the data
    values, groups = step_size_groups(eta)
    operators = [stacked_update_operators(problem, v, solver, s).astype(problem.dtype) for v in values]
    replicas = Replicas(B, T, tol, theta0=theta, floors=data_scales(problem), blowup=blowup)
    rec = HistoryRecorder(problem, T, B, k, fields) if fields else None
    if not is_constant(schedule):  # round t: the operators of eta_t = eta s(t), built for each new s(t)
        operators = per_factor(schedule, lambda f: [stacked_update_operators(problem, v * f, solver, s)
                                                    .astype(problem.dtype) for v in values])
    _run(problem, theta, groups, operators, replicas, rec, server_step)

    # the final decoding, on all data
    P = kernels.predict(theta, problem.X)
    assign = np.empty((B, problem.m), dtype=np.int64)
    best = np.empty((B, problem.m))
    with np.errstate(over="ignore", invalid="ignore"):
        kernels.decode_clients(P, problem.y, problem.offsets, B, k, assign, best)
        train_loss = best.sum(axis=1) / (2 * problem.N)
    train_loss[replicas.diverged] = np.nan
    return FedXResult(
        theta=theta,
        assignments=assign,
        train_loss=train_loss,
        local_solver=solver,
        local_steps=s,
        **common_fields(replicas, eta, start, rec),
    )


def _run(problem, theta, groups, operators, replicas, rec, server_step):
    """Phase 2's loop, in place on ``theta`` (B, k, d) and ``replicas``; ``operators`` is a list
    (one per step-size group), or a function of the round giving it (a schedule).

    A round's update is :func:`mixreg.kernels.cluster_gradients` of the decoded models'
    residuals with the stacked operators in the place of the data: each client's product
    :math:`(y_i - X_i \\theta_l)^\\top (w_i K_i^\\top)` of its own model only, added up per model in
    client order (``2 B N d`` flops; numerics change 3, :data:`mixreg.provenance.NUMERIC_CHANGES`:
    the version before multiplied the ``(B k, N)`` residuals, zero outside each client's decoded
    model, by the stacked operators in one product, ``k`` times the flops)."""
    B, k, d = theta.shape
    N, m = problem.N, problem.m
    # the rows of P of each group's models (one step size: all, without gathers)
    model_rows = [g if isinstance(g, slice) else (g[:, None] * k + np.arange(k)).ravel() for g in groups]
    widths = [B if isinstance(g, slice) else g.size for g in groups]
    blocks = [kernels.ClientBlocks(problem.offsets, d, w, problem.dtype) for w in widths]
    Y, response = problem.y[None], np.zeros(B, dtype=np.int64)  # every replica reads y
    sign = np.full(m, -1.0, dtype=problem.dtype)  # weighted_residuals' -(P - y) is y - P exactly
    update = np.empty((B, k, d), dtype=problem.dtype)
    P = np.empty((B * k, N), dtype=problem.dtype)
    assign = np.empty((B, m), dtype=np.int64)
    best = np.empty((B, m))
    state = server_step.start(theta)
    if rec is not None:
        rec.record_point(0, theta, replicas.diverged)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(replicas.n_rounds):
            # ML decoder z_i = argmin_l L_i(theta_t, l)
            kernels.predict(theta, problem.X, out=P)
            kernels.decode_clients(P, problem.y, problem.offsets, B, k, assign, best)
            if rec is not None:
                rec.record_round(t, assign, best.sum(axis=1) / (2 * N), replicas.diverged, best)
            # theta_l += sum_{i: z_i = l} w_i K_i (y_i - X_i theta_l); a frozen replica's update is 0
            chosen = np.where(replicas.diverged[:, None], -1, assign) if replicas.diverged.any() else assign
            new = theta.copy()
            for g, rows, KT, gb in zip(groups, model_rows, operators(t) if callable(operators) else operators, blocks):
                out = update[g]  # a view for one step size; a fresh array for a group's rows
                new[g] += kernels.cluster_gradients(P[rows], Y, response[g], chosen[g], k, sign, KT, gb, out)
            new = server_step.average(theta, new, t=t, state=state, rows=slice(None))
            replicas.accept(theta, new, best.sum(axis=1) / N, t)  # per-sample mean loss
            if rec is not None:
                rec.record_point(t + 1, theta, replicas.diverged)
            if replicas.finished(t):
                break
