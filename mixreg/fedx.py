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
array), and a round is two GEMMs of ``2 B k N d`` flops each (predictions for the decoder, then
``R @ K``) plus a Numba pass, for any ``s``: local steps cost nothing per round.  FedAvg(1) with
these weights is exactly one gradient step of size :math:`\\eta` on the pooled per-cluster least
squares :math:`\\frac{1}{2N}\\lVert X_{S_l}\\theta - y_{S_l}\\rVert^2`.

References
----------
.. [1] L. Su, J. Xu, P. Yang, "Global Convergence of Federated Learning for Mixed Regression",
   NeurIPS 2022 (arXiv:2206.07279); J. Xu, Allerton 2022 talk slides.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from . import kernels
from ._replicas import accept_finite, check_initial_parameters, check_step_sizes
from ._validation import check_array, check_choice, check_int
from .fedx_kernels import decode_and_residuals
from .problems import Problem

__all__ = [
    "FedXResult",
    "FedXHistory",
    "fedx",
    "local_update_operator",
    "stacked_update_operators",
    "fedx_linear_rates",
    "LOCAL_SOLVERS",
]

LOCAL_SOLVERS = ("fedavg", "fedprox")


@dataclass(frozen=True, kw_only=True)
class FedXHistory:
    """Per-round record of every replica (row 0 of the ``T + 1`` arrays is the initial point).

    Entries of a replica are ``nan`` from the round in which it diverged on.  The
    misclustering entries need the model count to equal the problem's ``k`` (else ``nan``).

    Attributes
    ----------
    matched_max : ndarray of shape (T + 1, B)
        Su-Xu-Yang's :math:`d(\\theta_t, \\theta^*) = \\min_\\pi \\max_l
        \\lVert\\theta_{\\pi(l),t} - \\theta^*_l\\rVert`.
    theta : ndarray of shape (T + 1, B, k, d)
        The iterates.
    loss : ndarray of shape (T, B)
        :math:`\\frac{1}{2N} \\sum_i \\min_l L_i(\\theta_t, l)` at the decoding of round ``t``.
    misclustered_clients : ndarray of shape (T, B)
        Fraction of clients whose decoded model at round ``t`` is not the one matched to their
        true cluster (matching: the permutation of ``matched_max``).
    misclustered_data : ndarray of shape (T, B)
        The same, weighted by :math:`w_i = n_i / N` (the quantity the theorem's :math:`\\nu`
        bounds).
    """

    matched_max: np.ndarray
    theta: np.ndarray
    loss: np.ndarray
    misclustered_clients: np.ndarray
    misclustered_data: np.ndarray


@dataclass(frozen=True, kw_only=True)
class FedXResult:
    """Outcome of a batched FedX-with-clustering run.

    Attributes
    ----------
    theta : ndarray of shape (B, k, d)
        Final models; for a diverged replica, its last finite models (it is frozen).
    assignments : ndarray of shape (B, m), int64
        ML-decoded label of every client under the final models.
    train_loss : ndarray of shape (B,)
        :math:`\\frac{1}{2N} \\sum_i \\min_l L_i(\\theta_T, l)`; ``nan`` for diverged replicas.
    diverged : ndarray of shape (B,), bool
    diverged_round : ndarray of shape (B,), int64
        ``-1`` if the replica did not diverge.
    step_sizes : ndarray of shape (B,)
        :math:`\\eta` of each replica.
    local_solver : str
    local_steps : int
        ``s`` of FedAvg(s) (1 for FedProx).
    n_rounds : int
    stop_reason : str
    wall_time : float
    history : FedXHistory or None
    """

    theta: np.ndarray
    assignments: np.ndarray
    train_loss: np.ndarray
    diverged: np.ndarray
    diverged_round: np.ndarray
    step_sizes: np.ndarray
    local_solver: str
    local_steps: int
    n_rounds: int
    stop_reason: str
    wall_time: float
    history: FedXHistory | None = None

    @property
    def finite(self) -> np.ndarray:
        """``~diverged``."""
        return ~self.diverged


# --------------------------------------------------------------------------------------------
# Local solvers as linear operators
# --------------------------------------------------------------------------------------------


def _operators_transposed(Xg, eta, solver, s):
    """``K_i^T`` of shape (c, n, d) for ``c`` clients of equal size ``n`` (float64)."""
    c, n, d = Xg.shape
    if solver == "fedprox":
        if n <= d:  # n x n system: K^T = eta (n I + eta X X^T)^-1 X
            G = eta * np.matmul(Xg, Xg.transpose(0, 2, 1))
            G[:, np.arange(n), np.arange(n)] += n
            return eta * np.linalg.solve(G, Xg)
        H = np.matmul(Xg.transpose(0, 2, 1), Xg) / n  # d x d system: K^T = X (H + I / eta)^-1 / n
        H[:, np.arange(d), np.arange(d)] += 1.0 / eta
        return np.linalg.solve(H, Xg.transpose(0, 2, 1)).transpose(0, 2, 1) / n
    base = (eta / n) * Xg  # FedAvg: K_{j+1}^T = K_j^T (I - eta H) + (eta / n) X
    KT = base.copy()
    H = np.matmul(Xg.transpose(0, 2, 1), Xg) / n if n > d else None
    for _ in range(s - 1):
        if H is None:
            KT = KT - (eta / n) * np.matmul(np.matmul(KT, Xg.transpose(0, 2, 1)), Xg) + base
        else:
            KT = KT - eta * np.matmul(KT, H) + base
    return KT


def local_update_operator(X, step_size, local_solver="fedavg", local_steps=1):
    """The matrix :math:`K` with local model :math:`\\theta^{(i)} = \\theta + K (y - X \\theta)`.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        One client's features.
    step_size : float > 0
        :math:`\\eta` (the local step of FedAvg, the proximal parameter of FedProx).
    local_solver : {"fedavg", "fedprox"}
    local_steps : int >= 1
        ``s`` of FedAvg(s); ignored by FedProx.

    Returns
    -------
    K : ndarray of shape (d, n), float64
        FedAvg(s): :math:`\\frac{\\eta}{n}\\sum_{j<s}(I - \\eta X^\\top X/n)^j X^\\top`; FedProx:
        :math:`\\eta X^\\top (n I + \\eta X X^\\top)^{-1}` (solved as a ``n x n`` system when
        ``n <= d``, else as :math:`(X^\\top X / n + I/\\eta)^{-1} X^\\top / n`, a ``d x d`` one).
    """
    X = check_array("X", X, ndim=2, dtype=np.float64)
    eta, solver, s = _check_solver(step_size, local_solver, local_steps)
    return _operators_transposed(X[None], float(eta), solver, s)[0].T


def _check_solver(step_size, local_solver, local_steps):
    eta = np.asarray(step_size, dtype=np.float64)
    if not np.all(np.isfinite(eta)) or np.any(eta <= 0):
        raise ValueError(f"step_size must be finite and > 0, got {np.asarray(step_size).tolist()}")
    check_choice("local_solver", local_solver, LOCAL_SOLVERS)
    s = check_int("local_steps", local_steps, low=1)
    return eta, local_solver, (s if local_solver == "fedavg" else 1)


def stacked_update_operators(problem, step_size, local_solver="fedavg", local_steps=1, *, weighted=True):
    """All clients' :math:`w_i K_i^\\top`, stacked like the data.

    Parameters
    ----------
    problem : Problem
    step_size : float > 0
    local_solver, local_steps
        See :func:`local_update_operator`.
    weighted : bool
        Multiply client ``i``'s rows by :math:`w_i = n_i / N` (default) or not.

    Returns
    -------
    KT : ndarray of shape (N, d), float64
        Rows ``offsets[i]:offsets[i+1]`` hold :math:`w_i K_i^\\top`, so that the server step of
        a model ``l`` is ``R_l @ KT`` with ``R_l`` the residuals of the clients that chose it.
        Clients of equal size are processed together (one batched solve per distinct size).
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a mixreg Problem, got {type(problem).__name__}")
    eta, solver, s = _check_solver(step_size, local_solver, local_steps)
    if eta.ndim != 0:
        raise ValueError(f"step_size must be a scalar here, got shape {eta.shape}")
    sizes = problem.sizes
    KT = np.empty((problem.N, problem.d))
    for n in np.unique(sizes):
        clients = np.flatnonzero(sizes == n)
        rows = problem.offsets[clients][:, None] + np.arange(n)
        KT[rows] = _operators_transposed(problem.X[rows].astype(np.float64), float(eta), solver, s)
    if weighted:
        KT *= np.repeat(sizes / problem.N, sizes)[:, None]
    return KT


def fedx_linear_rates(problem, step_size, local_solver="fedavg", local_steps=1, *, labels=None):
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


class _HistoryRecorder:
    def __init__(self, problem, T, B, k):
        from . import metrics  # metrics are only needed when a history is asked for

        self.metrics = metrics
        self.problem = problem
        self.same_k = k == problem.k
        self.w = problem.sizes / problem.N
        self.matched_max = np.full((T + 1, B), np.nan)
        self.theta = np.full((T + 1, B, k, problem.d), np.nan)
        self.loss = np.full((T, B), np.nan)
        self.mis_clients = np.full((T, B), np.nan)
        self.mis_data = np.full((T, B), np.nan)

    def record_point(self, t, theta, diverged):
        """Record ``theta_t``; keep its matching for the decoding of round ``t``."""
        live = ~diverged
        self.theta[t, live] = theta[live]
        self.perm = None
        if self.same_k and live.any():
            # one bottleneck matching per iterate serves both the distance and the misclustering
            perm = self.metrics.best_permutation(theta[live], self.problem.theta_star, objective="max")
            aligned = np.take_along_axis(theta[live].astype(np.float64), perm[:, :, None], axis=1)
            self.matched_max[t, live] = np.linalg.norm(aligned - self.problem.theta_star, axis=2).max(axis=1)
            self.perm = perm

    def record_decoding(self, t, assign, loss, diverged):
        live = ~diverged
        self.loss[t, live] = loss[live]
        if self.perm is not None:
            wrong = assign[live] != self.perm[:, self.problem.labels]
            self.mis_clients[t, live] = wrong.mean(axis=1)
            self.mis_data[t, live] = wrong @ self.w

    def result(self, rounds_run):
        return FedXHistory(
            matched_max=self.matched_max[: rounds_run + 1],
            theta=self.theta[: rounds_run + 1],
            loss=self.loss[:rounds_run],
            misclustered_clients=self.mis_clients[:rounds_run],
            misclustered_data=self.mis_data[:rounds_run],
        )


def fedx(problem, init, step_size, *, local_solver="fedavg", local_steps=1, n_rounds=100, history=False):
    """Run ``B`` replicas of Phase 2 (FedX with clustering) on one problem.

    Parameters
    ----------
    problem : Problem
    init : array of shape (B, k, d) or (k, d)
        Starting models, e.g. the Phase-1 centres (:class:`mixreg.moment_descent.
        MomentDescentResult`); cast to the problem's dtype, never modified.
    step_size : float or array of shape (B,)
        :math:`\\eta` of each replica, > 0 (the slides give no value).  FedAvg(1): the model of
        cluster ``l`` moves by a gradient step on :math:`\\frac{1}{2N}\\lVert X_{S_l}\\theta -
        y_{S_l}\\rVert^2`, stable for :math:`\\eta < 2 N / \\lambda_{max}(X_{S_l}^\\top X_{S_l})`.
        FedAvg(s > 1) also needs every client's local steps to be stable,
        :math:`\\eta < 2 / \\lambda_{max}(X_i^\\top X_i / n_i)`, which for a one-point client is
        :math:`2 / \\lVert x \\rVert^2 \\approx 2/d`.  FedProx is stable for every :math:`\\eta`.
    local_solver : {"fedavg", "fedprox"}
    local_steps : int >= 1
        ``s`` of FedAvg(s); ignored by FedProx.
    n_rounds : int >= 1
    history : bool
        Record :class:`FedXHistory` (a metric evaluation per round).

    Returns
    -------
    FedXResult

    Notes
    -----
    A replica whose models or decoder losses stop being finite is frozen at its last finite
    models and flagged (``diverged``), as in :func:`mixreg.ifca.ifca`; the others go on.
    """
    start = time.perf_counter()
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a mixreg Problem, got {type(problem).__name__}")
    dtype = problem.dtype
    theta = check_initial_parameters(init, problem.d, dtype)
    B, k, d = theta.shape
    eta = check_step_sizes(step_size, B)
    _, solver, s = _check_solver(eta, local_solver, local_steps)
    T = check_int("n_rounds", n_rounds, low=1)

    values, which = np.unique(eta, return_inverse=True)
    operators = [stacked_update_operators(problem, v, solver, s).astype(dtype) for v in values]
    groups = [np.flatnonzero(which == u) for u in range(values.size)]
    model_rows = [(g[:, None] * k + np.arange(k)).ravel() for g in groups]
    N, m = problem.N, problem.m
    P = np.empty((B * k, N), dtype=dtype)
    R = np.empty((B * k, N), dtype=dtype)
    assign = np.empty((B, m), dtype=np.int64)
    best = np.empty((B, m))
    diverged = np.zeros(B, dtype=np.bool_)
    diverged_round = np.full(B, -1, dtype=np.int64)
    rec = _HistoryRecorder(problem, T, B, k) if history else None
    if rec is not None:
        rec.record_point(0, theta, diverged)

    stop_reason = f"completed {T} rounds"
    rounds_run = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(T):
            kernels.predict(theta, problem.X, out=P)
            decode_and_residuals(P, problem.y, problem.offsets, B, k, diverged, assign, best, R)
            if rec is not None:
                rec.record_decoding(t, assign, best.sum(axis=1) / (2 * N), diverged)
            new = theta.copy()
            for g, rows, KT in zip(groups, model_rows, operators):
                new[g] += np.matmul(R[rows], KT).reshape(g.size, k, d)
            accept_finite(theta, new, best, diverged, diverged_round, t)
            rounds_run = t + 1
            if rec is not None:
                rec.record_point(t + 1, theta, diverged)
            if diverged.all():
                stop_reason = f"all replicas diverged (last at round {t})"
                break

    with np.errstate(over="ignore", invalid="ignore"):
        kernels.predict(theta, problem.X, out=P)
        decode_and_residuals(P, problem.y, problem.offsets, B, k, diverged, assign, best, R)
    train_loss = best.sum(axis=1) / (2 * N)
    train_loss[diverged] = np.nan
    return FedXResult(
        theta=theta,
        assignments=assign,
        train_loss=train_loss,
        diverged=diverged,
        diverged_round=diverged_round,
        step_sizes=eta,
        local_solver=solver,
        local_steps=s,
        n_rounds=rounds_run,
        stop_reason=stop_reason,
        wall_time=time.perf_counter() - start,
        history=None if rec is None else rec.result(rounds_run),
    )
