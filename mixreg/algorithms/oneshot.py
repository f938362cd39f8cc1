"""One-shot clustering (Ghosh, Chung, Yin, Ramchandran 2020, Algorithm 1 of the arXiv text).

The baseline IFCA is compared with (Sec. 4.1, "One-Shot Clustering"):

1. every client computes its local empirical risk minimiser, here its own least squares
   :math:`\\hat\\theta_i = \\arg\\min_\\theta \\lVert X_i \\theta - y_i \\rVert^2`, and sends it;
2. the server runs k-means on the ``m`` vectors :math:`\\hat\\theta_i`, once: the labels
   :math:`\\hat z_i` are never revised afterwards;
3. the server trains each estimated cluster separately "with any federated learning method";
   here FedAvg(s) within each cluster (:mod:`mixreg.algorithms._fixed_labels`) or, as a
   control with no step size, the exact pooled least squares of each estimated cluster.

The paper names its drawback: a client misclustered in step 2 stays misclustered.  In mixed
linear regression step 2 breaks down when clients hold fewer points than dimensions
(:math:`n_i < d`): the minimum-norm local solution is
:math:`X_i^+ y_i = P_i \\theta^*_{z_i} + X_i^+ \\varepsilon_i`, with :math:`P_i` the orthogonal
projection onto the ``n_i``-dimensional row space of :math:`X_i`, and the part of the truth
outside that space is lost.  For isotropic features :math:`P_i` is a random projection: the
cluster means shrink to :math:`(n_i/d)\\,\\theta^*_l` and their separation to
:math:`(n_i/d)\\,\\Delta`, while in every direction a local vector scatters around its mean by
about :math:`\\sqrt{n_i (\\lVert\\theta^*_l\\rVert^2 + \\sigma^2)}/d`.  The ratio of the two is
:math:`\\sqrt{n_i}\\,\\Delta / \\sqrt{\\lVert\\theta^*\\rVert^2 + \\sigma^2}`, against
:math:`\\sqrt{n_i}\\,\\Delta / \\sigma` for ordinary least squares when :math:`n_i \\gg d`: the
truth itself acts as noise of energy :math:`\\lVert\\theta^*_l\\rVert^2`.  So the local vectors
lose their separation, and k-means labels clients near chance, once that ratio is of order one:
when the truths share a component comparable to :math:`\\sqrt{n_i}\\,\\Delta` or larger.
Measured (``tests/algorithms/test_algorithms_oneshot.py``, ``k = 2``, ``m = 100``, :math:`\\Delta = 2`,
:math:`\\sigma = 0.5`, a shared component of norm 5, six problems): 44% of clients misclustered on average (37% to 50%) at ``d = 40``,
``n_i = 10``, where chance is about 46%; none at ``d = 5``, ``n_i = 100``; and without the shared
component, none at ``d = 40``, ``n_i = 10`` either.

Cost: the local solves are one batched solve per distinct client size (``O(N d min(n_i, d))``:
an ``n_i x n_i`` Gram solve for a well-conditioned client with ``n_i <= d``, the SVD otherwise,
:func:`mixreg.local_solvers.local_least_squares`),
k-means is ``n_init`` Lloyd runs on ``m`` points in ``R^d``, and a FedAvg round costs two
products of ``2 B N d`` flops (see :mod:`mixreg.algorithms._fixed_labels`).

References
----------
.. [1] A. Ghosh, J. Chung, D. Yin, K. Ramchandran, "An Efficient Framework for Clustered
   Federated Learning", arXiv:2006.04088 (Algorithm 1, Sec. 4.1); NeurIPS 2020.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._typing import ArrayLike, HistoryRequest, ScheduleLike
from ..validation import check_choice, check_int, check_real
from ..clustering import kmeans
from ..local_solvers import LEAST_SQUARES_METHODS, grouped_rows, local_least_squares
from ..problems import Problem, check_rng
from ._driver import (
    BLOWUP,
    DriverResult,
    HistoryRecorder,
    Replicas,
    check_blowup,
    check_history,
    check_run,
    common_fields,
)
from ._fixed_labels import HISTORY, train_on_labels
from ._registry import Algorithm, _bind
from ._server import ServerStep, check_schedule, check_server_step

__all__ = ["OneShotResult", "oneshot", "FINISHES", "STARTS"]

#: How each estimated cluster is trained after the clustering.
FINISHES = ("fedavg", "exact")
#: Where FedAvg starts: the k-means centres, or the caller's ``init``.
STARTS = ("centres", "init")


@dataclass(frozen=True, kw_only=True)
class OneShotResult(DriverResult):
    """Outcome of a batched one-shot run: the common fields of
    :class:`mixreg.algorithms.DriverResult` and the clustering.

    ``assignments`` are the k-means labels (the same for every replica); ``train_loss`` is
    :math:`\\frac{1}{2N} \\sum_{i} \\lVert y_i - X_i \\theta_{\\hat z_i} \\rVert^2`, every point
    scored by its client's estimated cluster.

    Attributes
    ----------
    local_models : ndarray of shape (m, d), float64
        The clients' local least-squares estimates :math:`\\hat\\theta_i` (step 1).
    kmeans_inertia : float
        :math:`\\sum_i \\lVert \\hat\\theta_i - c_{\\hat z_i} \\rVert^2` of the k-means run kept.
    local : str
        ``"min_norm"`` or ``"ridge"``.
    finish : str
        ``"fedavg"`` or ``"exact"``.
    """

    local_models: np.ndarray
    kmeans_inertia: float
    local: str
    finish: str


def oneshot(problem: Problem, init: ArrayLike, step_size: float | ArrayLike, *, n_rounds: int,
            rng: np.random.Generator | None = None, tol: float | None = None, history: HistoryRequest = False,
            blowup: float | None = BLOWUP, local: str = "min_norm", ridge: float | None = None, n_init: int = 10,
            finish: str = "fedavg", local_steps: int = 1, start: str = "centres", server_step: ServerStep | None = None,
            schedule: ScheduleLike | None = None) -> OneShotResult:
    r"""Run ``B`` replicas of one-shot clustering (Algorithm 1 of Ghosh et al.) on one problem.

    .. math::

        \hat\theta_i &= X_i^{+} y_i \quad (\text{every client, once}), \\
        (\hat z, c) &= \operatorname{k-means}(\hat\theta_1, \dots, \hat\theta_m;\ k)
            \quad (\text{the server, once}), \\
        \theta_{l,t+1} &= \sum_{i:\, \hat z_i = l} \frac{n_i}{N_l}\, G_i^s(\theta_{l,t}),
        \qquad \theta_{l,0} = c_l, \qquad N_l = \sum_{i:\, \hat z_i = l} n_i,

    with :math:`G_i(\theta) = \theta - \frac{\eta}{n_i} X_i^\top (X_i\theta - y_i)` one local
    gradient step (FedAvg(s) within each estimated cluster, McMahan et al.'s data weights).
    With ``finish="exact"`` the last line is replaced by the pooled least squares
    :math:`\theta_l = \arg\min_\theta \sum_{i:\, \hat z_i = l} \lVert X_i\theta - y_i\rVert^2`
    (minimum norm if the cluster has fewer rows than ``d``).

    Parameters
    ----------
    problem : Problem
    init : array of shape (B, k, d) or (k, d)
        Fixes ``B`` and ``k`` (the k-means ``k``) and is validated; with ``start="centres"``
        (default) its values are not used.
    step_size : float or array of shape (B,)
        :math:`\eta` of each replica's FedAvg, > 0 (unused by ``finish="exact"``).  With
        ``s = 1`` a round is a gradient step on :math:`\frac{1}{2N_l}\lVert X_{S_l}\theta -
        y_{S_l}\rVert^2`, stable for :math:`\eta < 2 N_l / \lambda_{max}(X_{S_l}^\top X_{S_l})`
        (about 2 for unit-variance features and :math:`N_l \gg d`); ``s > 1`` also needs every
        client's local steps stable, :math:`\eta < 2 / \lambda_{max}(X_i^\top X_i / n_i)`, about
        :math:`2 n_i / d` for a client with :math:`n_i < d`.
    n_rounds : int >= 1
        FedAvg rounds.
    rng : numpy.random.Generator
        Required: drives the k-means++ seeding.  The clustering does not depend on the replica
        and is drawn once for the whole batch, so replica ``b`` of a batch equals a run of
        ``init[b:b+1]`` under a Generator in the same state.
    tol : float >= 0, optional
        Stop FedAvg once every live replica moved by at most ``tol`` in a round.
    history : bool, "all" or sequence of str
        Record :class:`mixreg.algorithms.History` of the FedAvg phase: ``True``, the matched max
        distance, iterates, misclustering of the k-means labels and the objective of ``train_loss``;
        ``"all"`` or names among :data:`mixreg.algorithms.HISTORY_FIELDS`: those (the identities
        of every round are the k-means labels, fixed before the rounds; the client losses are each
        client's squared residuals under its rows' labels, summing over the clients to :math:`2N`
        times the objective).
    blowup : float > 1 or None
        Divergence factor of :class:`mixreg.algorithms.Replicas` (default
        :data:`mixreg.algorithms.DEFAULT_BLOWUP`); ``None``: only non-finite values count.
    local : {"min_norm", "ridge"}
        The local solver (:func:`mixreg.local_solvers.local_least_squares`; the paper says
        "ERM"; ours).  ``"min_norm"`` (default): :math:`X_i^+ y_i`, ordinary least squares when
        :math:`n_i \ge d`; when :math:`n_i < d` it is :math:`P_i\theta^*_{z_i}` plus noise, the
        truth projected onto the row space of :math:`X_i`, so the local vectors lose their
        separation and k-means on them fails once the truths share a component comparable to
        :math:`\sqrt{n_i}\,\Delta` (module docstring).  ``"ridge"``: the ridge
        solution, penalty ``ridge`` or by default :math:`10^{-3}\operatorname{tr}(H_i)/d`; it
        tames nearly singular clients (:math:`n_i \approx d`) but when :math:`n_i < d` it is
        the same projection shrunk slightly, and fails the same way.
    ridge : float > 0, optional
        Absolute ridge penalty; only with ``local="ridge"``.
    n_init : int >= 1
        k-means++ restarts (the best by inertia is kept; :func:`mixreg.clustering.kmeans`).
    finish : {"fedavg", "exact"}
        How each estimated cluster is trained (the paper: "any federated learning method").
        ``"fedavg"`` (default): FedAvg(s) from the shared trainer
        (``train_on_labels``); ``"exact"``: the pooled least
        squares of each estimated cluster, a control in which the step size is unused, nothing
        can diverge, and the result reports one round (the solve) whatever ``n_rounds``.  A
        cluster that k-means left empty (fewer than ``k`` distinct local models) keeps its
        starting model under both.
    local_steps : int >= 1
        ``s`` of FedAvg(s).
    start : {"centres", "init"}
        Where FedAvg starts (ours; the paper is silent): ``"centres"`` (default), cluster
        ``l``'s k-means centre, the server's best guess at no extra cost; ``"init"``, the given
        ``init[b, l]`` for cluster ``l`` (label ``l`` is the k-means numbering, groups in the
        order of their lowest client).
    server_step : mixreg.algorithms.ServerStep, optional
        What the server does with each FedAvg round's average within the clusters
        (:meth:`~mixreg.algorithms.ServerStep.average`); default the plain step, which takes it.
    schedule : mixreg.algorithms.Schedule or callable, optional
        Step-size schedule of the FedAvg rounds: round ``t``'s local steps use
        :math:`\eta\, s(t)` (:class:`~mixreg.algorithms.Schedule`).  Default constant.  With
        ``finish="fedavg"`` only.
        With ``finish="fedavg"`` only (``ValueError`` with ``"exact"``, which runs no rounds).

    Returns
    -------
    OneShotResult

    Notes
    -----
    Communication of an average client: it uploads ``d`` floats once (its local model) and
    ``d + 1`` per FedAvg round (its label and its local model), and downloads ``d`` once (its
    assigned centre) and ``d`` per round (its cluster's model).

    A replica whose models or objective stop being finite is frozen at its last finite models
    and flagged (``diverged``), as in every driver of :mod:`mixreg.algorithms`.

    Examples
    --------
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=20, k=2, n=50, d=5, sigma=0.0, scale=2.0, protocol="gaussian",
    ...                   rng=np.random.default_rng(0))
    >>> res = oneshot(pb, np.zeros((2, 5)), 1.0, n_rounds=5, rng=np.random.default_rng(1))
    >>> bool(np.allclose(res.local_models, pb.theta_star[pb.labels]))  # sigma = 0, n_i > d
    True
    >>> float(res.train_loss[0]) < 1e-12
    True
    """
    t0 = time.perf_counter()
    # validate
    theta, eta, T, tol = check_run(problem, init, step_size, n_rounds, tol)
    B, k, d = theta.shape
    check_choice("local", local, LEAST_SQUARES_METHODS)
    if ridge is not None:
        if local != "ridge":
            raise ValueError(f"ridge is only used with local='ridge', got local={local!r} and ridge={ridge!r}")
        ridge = check_real("ridge", ridge, low=0.0, low_inclusive=False)
    n_init = check_int("n_init", n_init, low=1)
    check_choice("finish", finish, FINISHES)
    s = check_int("local_steps", local_steps, low=1)
    check_choice("start", start, STARTS)
    if k > problem.m:
        raise ValueError(f"init has k={k} models but k-means on the m={problem.m} local models needs k <= m")
    if rng is None:
        raise ValueError("rng is required: the k-means++ seeding draws from it (pass a numpy.random.Generator)")
    check_rng(rng)
    for keyword, value in (("server_step", server_step), ("schedule", schedule)):
        if value is not None and finish != "fedavg":
            raise ValueError(f"{keyword} is used by finish='fedavg' only, got finish={finish!r}")
    server_step = check_server_step(server_step)
    schedule = check_schedule(schedule)
    fields = check_history(history, HISTORY)
    blowup = check_blowup(blowup)

    # steps 1 and 2, once for all replicas: local least squares, k-means on the server
    local_models = local_least_squares(problem.X, problem.y, problem.offsets, method=local, ridge=ridge)
    clustering = kmeans(local_models, k, n_init=n_init, rng=rng)
    labels = clustering.labels
    row_labels = np.repeat(labels, problem.sizes)
    if start == "centres":
        theta = np.array(np.broadcast_to(clustering.centres, (B, k, d)), dtype=problem.dtype)

    # step 3: train each estimated cluster
    if finish == "fedavg":
        trained = train_on_labels(problem, row_labels, theta, eta, local_steps=s, n_rounds=T, tol=tol,
                                  history=fields, blowup=blowup, client_labels=labels, server_step=server_step,
                                  schedule=schedule)
        theta, train_loss, replicas, hist = trained.theta, trained.train_loss, trained.replicas, trained.history
    else:
        theta, train_loss, hist = _exact_finish(problem, labels, row_labels, theta, fields)
        replicas = Replicas(B, 1)  # one step, no divergence
        replicas.rounds_run, replicas.reason = 1, "solved exactly: pooled least squares of each estimated cluster"

    return OneShotResult(
        theta=theta,
        assignments=np.array(np.broadcast_to(labels, (B, problem.m)), dtype=np.int64),
        train_loss=train_loss,
        **common_fields(replicas, eta, t0, hist),
        local_models=local_models,
        kmeans_inertia=clustering.inertia,
        local=local,
        finish=finish,
    )


def _exact_finish(problem, labels, row_labels, theta, history):
    """``finish="exact"``: each non-empty estimated cluster's pooled least squares, as one round.

    The pooled fit of cluster ``l`` is the minimum-norm least squares of a "client" made of all
    its rows, so the rows are regrouped by cluster and handed to
    :func:`mixreg.local_solvers.local_least_squares`.  Returns ``(theta, train_loss, history)``.
    """
    B, k, d = theta.shape
    order, present, offsets = grouped_rows(row_labels, k)
    new = theta.copy()
    new[:, present] = local_least_squares(problem.X[order], problem.y[order], offsets, method="min_norm")
    loss = lambda th: _labelled_loss(problem, row_labels, th)  # noqa: E731
    rec = None
    if history:
        rec = HistoryRecorder(problem, 1, B, k, history)
        no = np.zeros(B, dtype=np.bool_)
        rec.record_point(0, theta, no)
        per_client = _labelled_client_losses(problem, row_labels, theta) if rec.wants_client_losses else None
        rec.record_round(0, np.broadcast_to(labels, (B, problem.m)), loss(theta), no, per_client)
        rec.record_point(1, new, no)
    return new, loss(new), None if rec is None else rec.result(1)


def _labelled_client_losses(problem, row_labels, theta):
    """Each client's :math:`\\sum_{r \\in i} (y_r - \\langle x_r, \\theta_{label(r)}\\rangle)^2` per
    replica (B, m), the terms of :func:`_labelled_loss` (times ``2N``)."""
    P = np.matmul(theta.astype(np.float64), problem.X.astype(np.float64).T)  # (B, k, N)
    pred = np.take_along_axis(P, np.broadcast_to(row_labels, (P.shape[0], 1, problem.N)), axis=1)[:, 0]
    return np.add.reduceat(np.square(problem.y - pred), problem.offsets[:-1], axis=1)


def _labelled_loss(problem, row_labels, theta):
    """:math:`\\frac{1}{2N}\\sum_{rows} (y - \\langle x, \\theta_{label(row)}\\rangle)^2` per replica (B,)."""
    P = np.matmul(theta.astype(np.float64), problem.X.astype(np.float64).T)  # (B, k, N)
    pred = np.take_along_axis(P, np.broadcast_to(row_labels, (P.shape[0], 1, problem.N)), axis=1)[:, 0]
    return np.square(problem.y - pred).sum(axis=1) / (2 * problem.N)


# --------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------


def _communication(problem, result, replica):
    """Upload ``d`` once (the local model) plus ``d`` per FedAvg round (the server assigned the
    labels, so a client sends only its model); download ``d`` per round (its cluster's model; the
    k-means centre is the first round's)."""
    d, n_rounds = problem.d, result.n_rounds
    return float(d + d * n_rounds), float(d * n_rounds)


def registrations() -> list[Algorithm]:
    """The registry entry: one-shot clustering with min-norm local models and a FedAvg finish."""
    return [
        Algorithm(
            name="oneshot",
            run=_bind(oneshot, uses_rng=True, local="min_norm", finish="fedavg"),
            uses_rng=True,
            options={"local": "min_norm", "finish": "fedavg"},
            communication=_communication,
            source="Ghosh et al. 2020, Algorithm 1 (arXiv; Sec. 4.1 'One-Shot Clustering'), FedAvg finish",
            sends=("once: its local least-squares model (d floats); then per round one d-vector local model, "
                   "receiving its cluster's model (the first is its k-means centre)"),
        )
    ]
