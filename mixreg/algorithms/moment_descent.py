"""Phase 1 of Su, Xu and Yang (2022): federated moment descent (FMD).

Every anchor client ``a`` carries an estimate ``theta_a`` and moves it along a direction
positively correlated with :math:`\\Sigma_{z_a}(\\theta^*_{z_a} - \\theta_a)`, which decreases its
residual variance :math:`\\lVert \\Sigma^{1/2}_{z_a}(\\theta^*_{z_a} - \\theta_a) \\rVert^2` (slides
"Moment Descent: General Idea").  The direction is found in two stages so that an anchor needs
only :math:`\\tilde\\Omega(k)` points (slides "Federated Moment Descent in Action", steps 1-7):

1. choose a set :math:`\\mathcal A` of anchor clients (:func:`mixreg.problems.add_anchors`);
2. broadcast :math:`\\{\\theta_{a,t}\\}` to a subset :math:`S_t` of non-anchor clients;
3. the server estimates, for every anchor, the top-``k`` subspace :math:`U_{a,t}` of

   .. math::

      Y_{a,t} = \\frac{1}{|S_t|} \\sum_{i \\in S_t}
      \\varepsilon(x_{i1}, y_{i1}, \\theta_{a,t})\\, \\varepsilon(x_{i2}, y_{i2}, \\theta_{a,t})^\\top,
      \\qquad \\varepsilon(x, y, \\theta) = (y - \\langle x, \\theta \\rangle)\\, x,

   from two samples of each client of :math:`S_t`;
   :math:`E[Y] = \\sum_l p_l \\Sigma_l(\\theta^*_l - \\theta)(\\theta^*_l - \\theta)^\\top\\Sigma_l`;
4. :math:`U_{a,t}` is sent to anchor ``a``;
5. the anchor takes the leading direction :math:`\\beta_{a,t}` of the ``k x k`` matrix

   .. math::

      Z_{a,t} = \\frac{1}{|D_{a,t}|} \\sum_{j \\in D_{a,t}}
      (U^\\top \\varepsilon(x_{aj}, y_{aj}, \\theta_{a,t}))(U^\\top \\varepsilon(x'_{aj}, y'_{aj}, \\theta_{a,t}))^\\top

   over pairs of its own samples (:math:`E[Z] = v v^\\top`, :math:`v = U^\\top \\Sigma_{z_a}
   (\\theta^*_{z_a} - \\theta_{a,t})`), and :math:`r_{a,t} = U_{a,t} \\beta_{a,t}`;
6. :math:`\\theta_{a,t+1} = \\theta_{a,t} + \\eta_{a,t} r_{a,t}`, uploaded;
7. after ``T`` rounds the anchors' estimates are clustered by thresholding their pairwise
   distances, and the ``k`` group centres are the output :math:`\\hat\\theta`.

Where the slides are silent our choices are parameters of
:func:`moment_descent`, each documented there: the symmetrisation of ``Y`` and ``Z``, the sign of
``beta`` (first moment), the step :math:`\\eta = c \\sqrt{\\max(\\lambda_1(Z), 0)}`, fresh disjoint
data every round, and the threshold rule with its fallback.  With these choices
:math:`\\eta r \\approx c\\, U U^\\top \\Sigma_{z_a}(\\theta^*_{z_a} - \\theta_a)`: a gradient step of
size ``c`` on the anchor's population loss, restricted to ``U``, so the error contracts like
:math:`I - c\\Sigma` (needs :math:`c < 2 / \\lambda_{max}(\\Sigma_l)`) down to a noise floor.

References
----------
.. [1] L. Su, J. Xu, P. Yang, "Global Convergence of Federated Learning for Mixed Regression",
   NeurIPS 2022 (arXiv:2206.07279); J. Xu, Allerton 2022 talk slides.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .._typing import ArrayLike, HistoryRequest
from ..validation import check_array, check_choice, check_int, check_real
from ..problems import Problem, check_rng
from ..clustering import agglomerative, kmeans, single_linkage_cut
from ._driver import (
    BLOWUP,
    HISTORY_FIELDS,
    Replicas,
    check_blowup,
    check_history,
    check_problem,
    data_scales,
    elapsed,
)

__all__ = [
    "MomentDescentResult",
    "MomentDescentHistory",
    "AnchorClustering",
    "moment_descent",
    "moment_vectors",
    "top_subspace",
    "anchor_direction",
    "cluster_anchors",
    "SAMPLING",
    "SIGN_RULES",
    "SUBSPACE_SOLVERS",
    "MISMATCH_RULES",
]

SAMPLING = ("fresh", "reuse")
SIGN_RULES = ("first_moment", "random")
SUBSPACE_SOLVERS = ("auto", "dense", "factored")
MISMATCH_RULES = ("kmeans", "largest", "raise")


# --------------------------------------------------------------------------------------------
# Result records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class MomentDescentHistory:
    """Per-round record of every anchor (row 0 of the ``T + 1`` arrays is the initial point).

    Attributes
    ----------
    theta : ndarray of shape (T + 1, M_A, d)
        Anchor estimates :math:`\\theta_{a,t}`.
    anchor_error : ndarray of shape (T + 1, M_A)
        :math:`\\lVert \\theta_{a,t} - \\theta^*_{z_a} \\rVert_2` (uses the truth; diagnostics only).
    step : ndarray of shape (T, M_A)
        :math:`\\eta_{a,t}` (0 for a frozen anchor).
    lambda1 : ndarray of shape (T, M_A)
        Leading eigenvalue (singular value without symmetrisation) of :math:`Z_{a,t}`.
    subspace_values : ndarray of shape (T, M_A, k)
        Top-``k`` eigenvalues (singular values) of :math:`Y_{a,t}`, descending.
    """

    theta: np.ndarray
    anchor_error: np.ndarray
    step: np.ndarray
    lambda1: np.ndarray
    subspace_values: np.ndarray


@dataclass(frozen=True, kw_only=True)
class AnchorClustering:
    """Step 7: the anchors' estimates grouped into ``k`` centres.

    Attributes
    ----------
    centres : ndarray of shape (k, d)
        Mean of each group's estimates (``nan`` rows if clustering was impossible).
    groups : ndarray of shape (M_A,), int64
        Group of each anchor in ``[0, k)``; ``-1`` for an anchor left out (non-finite, or in a
        group dropped by ``on_mismatch="largest"``).  Groups are numbered by their lowest anchor.
    threshold : float
        The distance threshold :math:`\\tau` used (``inf`` for ``k = 1``).
    n_threshold_groups : int
        Number of connected components of the graph :math:`\\{\\lVert\\theta_a - \\theta_{a'}\\rVert
        \\le \\tau\\}`.
    method : str
        ``"threshold"`` when those components were exactly ``k`` groups, else the fallback used
        (``"kmeans"`` or ``"largest"``), or ``"failed"`` with fewer than ``k`` finite anchors.
    """

    centres: np.ndarray
    groups: np.ndarray
    threshold: float
    n_threshold_groups: int
    method: str


@dataclass(frozen=True, kw_only=True)
class MomentDescentResult:
    """Outcome of Phase 1.

    Attributes
    ----------
    centres : ndarray of shape (k, d), float64
        :math:`\\hat\\theta`, the Phase-1 output (the start of Phase 2).
    anchor_theta : ndarray of shape (M_A, d), float64
        Final anchor estimates :math:`\\theta_{a,T}`.
    anchors : ndarray of shape (M_A,), int64
        Client indices of the anchors.
    clustering : AnchorClustering
        Step 7 (groups, threshold, method).
    clients_per_round : int
        :math:`|S_t|`.
    anchor_pairs : int
        :math:`|D_{a,t}|`, pairs of samples used by each anchor per round.
    n_rounds : int
        Rounds run, ``T``.
    rows_used : int
        Distinct data rows read by Phase 1 (Phase 2 reuses all data anyway).
    nonfinite : ndarray of shape (M_A,), bool
        The anchor's estimate diverged (became non-finite, or grew beyond the blow-up bound of
        :class:`mixreg.algorithms.Replicas`) and was frozen before the offending update.
    diverged_rule : ndarray of shape (M_A,), str
        The rule that fired (:attr:`mixreg.algorithms.DriverResult.diverged_rule`): ``""``,
        ``"non-finite"`` or ``"parameters"`` (Phase 1 has no objective).
    stop_reason : str
    wall_time : float
        Seconds spent in the driver.
    history : MomentDescentHistory or None
    """

    centres: np.ndarray
    anchor_theta: np.ndarray
    anchors: np.ndarray
    clustering: AnchorClustering
    clients_per_round: int
    anchor_pairs: int
    n_rounds: int
    rows_used: int
    nonfinite: np.ndarray
    diverged_rule: np.ndarray
    stop_reason: str
    wall_time: float
    history: MomentDescentHistory | None = None


# --------------------------------------------------------------------------------------------
# The two spectral steps (public: the tests check them against the mathematics)
# --------------------------------------------------------------------------------------------


def moment_vectors(X: np.ndarray, y: np.ndarray, theta: ArrayLike) -> np.ndarray:
    """Residual-moment vectors :math:`\\varepsilon(x, y, \\theta) = (y - \\langle x, \\theta\\rangle) x`.

    Parameters
    ----------
    X : ndarray of shape (n, d) or (A, n, d)
    y : ndarray of shape (n,) or (A, n)
    theta : ndarray of shape (d,) or (A, d)
        One estimate, or one per anchor ``A`` (with shared or per-anchor data).

    Returns
    -------
    eps : ndarray of shape (n, d) or (A, n, d)
        :math:`E[\\varepsilon \\mid \\text{cluster } l] = \\Sigma_l(\\theta^*_l - \\theta)` (zero-mean
        noise independent of ``x``).

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 2.0]]); y = np.array([3.0, 2.0])
    >>> moment_vectors(X, y, np.zeros(2))  # (y - <x, 0>) x
    array([[3., 0.],
           [0., 4.]])
    """
    X = np.asarray(X)
    y = np.asarray(y)
    theta = np.asarray(theta)
    if X.ndim == theta.ndim + 1:  # one estimate per data set
        resid = y - np.einsum("...nd,...d->...n", X, theta)
    else:  # shared data (n, d), one estimate per anchor (A, d)
        resid = y[None] - np.einsum("nd,ad->an", X, theta)
    return resid[..., None] * X


def top_subspace(E1: ArrayLike, E2: ArrayLike, k: int, *, symmetrize: bool = True,
                 solver: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Top-``k`` subspace of :math:`Y = E_1^\\top E_2 / s` (step 3), batched over anchors.

    Parameters
    ----------
    E1, E2 : ndarray of shape (s, d) or (A, s, d)
        Rows are :math:`\\varepsilon(x_{i1}, y_{i1}, \\theta)` and
        :math:`\\varepsilon(x_{i2}, y_{i2}, \\theta)` for the ``s`` clients of :math:`S_t`.
    k : int in [1, d]
    symmetrize : bool, default True
        ``True`` (our default): eigenvectors of the ``k`` largest eigenvalues of
        :math:`(Y + Y^\\top)/2` (:math:`E[Y]` is symmetric PSD, so symmetrising only removes
        noise).  ``False``: top-``k`` left singular vectors of ``Y`` (the slides say "singular
        vectors" without saying which side).
    solver : {"auto", "dense", "factored"}
        ``"dense"`` forms the ``d x d`` matrix (``2 s d^2 + O(d^3)`` flops).  ``"factored"``
        never forms it: with the thin QR :math:`F^\\top = QR` of the ``2s`` rows
        :math:`F = [E_1; E_2]`, :math:`E_1^\\top E_2 + E_2^\\top E_1 = Q (R J R^\\top) Q^\\top`
        with :math:`J` the block swap, so the nonzero spectrum is that of the
        ``2s x 2s`` matrix :math:`R J R^\\top` (without symmetrisation, two QRs and an ``s x s``
        SVD); ``O(d s^2)`` flops, exact.  ``"auto"`` uses ``"factored"`` whenever ``s < d``, so
        a ``d x d`` matrix is never formed from fewer clients than dimensions.

    Returns
    -------
    U : ndarray of shape (d, k) or (A, d, k)
        Orthonormal columns.
    values : ndarray of shape (k,) or (A, k)
        The ``k`` leading eigenvalues (singular values), descending.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> v = np.array([3.0, 0.0, 0.0, 0.0])  # E[Y] = v v^T: the subspace is e_1
    >>> E1 = v + 0.1 * rng.standard_normal((200, 4)); E2 = v + 0.1 * rng.standard_normal((200, 4))
    >>> U, values = top_subspace(E1, E2, 1)
    >>> bool(abs(U[0, 0]) > 0.99), round(float(values[0]))
    (True, 9)
    """
    E1 = np.asarray(E1, dtype=np.float64)
    E2 = np.asarray(E2, dtype=np.float64)
    if E1.shape != E2.shape or E1.ndim not in (2, 3):
        raise ValueError(f"E1 and E2 must have the same shape (s, d) or (A, s, d), got {E1.shape} and {E2.shape}")
    batched = E1.ndim == 3
    if not batched:
        E1, E2 = E1[None], E2[None]
    _, s, d = E1.shape
    k = check_int("k", k, low=1, high=d)
    check_choice("solver", solver, SUBSPACE_SOLVERS)
    if solver == "auto":
        solver = "factored" if s < d else "dense"
    if solver == "factored" and k > (2 * s if symmetrize else s):
        raise ValueError(f"k={k} exceeds the rank of Y with s={s} clients; the factored solver needs k <= "
                         f"{2 * s if symmetrize else s}")
    if solver == "dense":
        Y = np.matmul(E1.transpose(0, 2, 1), E2) / s
        if symmetrize:
            vals, vecs = np.linalg.eigh(0.5 * (Y + Y.transpose(0, 2, 1)))
            U, values = vecs[:, :, ::-1][:, :, :k], vals[:, ::-1][:, :k]
        else:
            u, sv, _ = np.linalg.svd(Y)
            U, values = u[:, :, :k], sv[:, :k]
    elif symmetrize:
        Q, R = np.linalg.qr(np.concatenate([E1, E2], axis=1).transpose(0, 2, 1))
        RJ = np.concatenate([R[:, :, s:], R[:, :, :s]], axis=2)  # R J, J swaps the two blocks
        C = np.matmul(RJ, R.transpose(0, 2, 1)) / (2 * s)
        vals, vecs = np.linalg.eigh(0.5 * (C + C.transpose(0, 2, 1)))
        U, values = np.matmul(Q, vecs[:, :, ::-1][:, :, :k]), vals[:, ::-1][:, :k]
    else:
        Q1, R1 = np.linalg.qr(E1.transpose(0, 2, 1))
        Q2, R2 = np.linalg.qr(E2.transpose(0, 2, 1))
        u, sv, _ = np.linalg.svd(np.matmul(R1, R2.transpose(0, 2, 1)) / s)
        U, values = np.matmul(Q1, u[:, :, :k]), sv[:, :k]
    return (U, values) if batched else (U[0], values[0])


def anchor_direction(P1: ArrayLike, P2: ArrayLike, *, symmetrize: bool = True, sign: str = "first_moment",
                     rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Leading direction :math:`\\beta` of :math:`Z = P_1^\\top P_2 / n` (step 5), batched.

    Parameters
    ----------
    P1, P2 : ndarray of shape (n, k) or (A, n, k)
        :math:`U^\\top \\varepsilon` of the first and second sample of each of the anchor's ``n``
        pairs.
    symmetrize : bool, default True
        Top eigenvector of :math:`(Z + Z^\\top)/2` (``True``) or top left singular vector of
        ``Z`` (``False``).
    sign : {"first_moment", "random"}
        :math:`E[Z] = v v^\\top` does not fix the sign of :math:`\\beta`.  ``"first_moment"``
        (ours, default): :math:`\\beta \\leftarrow \\operatorname{sign}\\langle \\beta, \\bar p
        \\rangle \\beta` with :math:`\\bar p` the mean of all ``2n`` projected vectors
        (:math:`E\\bar p = v`); ``+1`` if the inner product is 0.  For the squared loss this is
        exactly the sign whose step :math:`\\pm\\eta U\\beta` gives the lower empirical loss on
        these samples, since :math:`L(\\theta + \\delta) - L(\\theta - \\delta) =
        -4 \\sum_j \\langle \\varepsilon_j, \\delta \\rangle`.  ``"random"``: a fair coin from
        ``rng`` (an ablation).
    rng : numpy.random.Generator, optional
        Required for ``sign="random"``.

    Returns
    -------
    beta : ndarray of shape (k,) or (A, k)
        Unit vectors.
    lambda1 : ndarray of shape () or (A,)
        Leading eigenvalue (singular value) of ``Z``, :math:`\\approx \\lVert v \\rVert^2`.

    Examples
    --------
    >>> P = np.tile([[0.6, 0.8]], (50, 1))  # every projected vector is v = (0.6, 0.8)
    >>> beta, lam = anchor_direction(P, P)
    >>> np.round(beta, 6).tolist(), round(float(lam), 6)
    ([0.6, 0.8], 1.0)
    """
    P1 = np.asarray(P1, dtype=np.float64)
    P2 = np.asarray(P2, dtype=np.float64)
    if P1.shape != P2.shape or P1.ndim not in (2, 3) or P1.shape[-2] < 1:
        raise ValueError(f"P1 and P2 must have the same shape (n, k) or (A, n, k) with n >= 1, got "
                         f"{P1.shape} and {P2.shape}")
    check_choice("sign", sign, SIGN_RULES)
    batched = P1.ndim == 3
    if not batched:
        P1, P2 = P1[None], P2[None]
    n = P1.shape[1]
    Z = np.matmul(P1.transpose(0, 2, 1), P2) / n
    if symmetrize:
        vals, vecs = np.linalg.eigh(0.5 * (Z + Z.transpose(0, 2, 1)))
        beta, lam = vecs[:, :, -1], vals[:, -1]
    else:
        u, sv, _ = np.linalg.svd(Z)
        beta, lam = u[:, :, 0], sv[:, 0]
    if sign == "first_moment":
        first = 0.5 * (P1.mean(axis=1) + P2.mean(axis=1))
        flip = np.where(np.einsum("ak,ak->a", beta, first) < 0, -1.0, 1.0)
    else:
        if rng is None:
            raise ValueError("rng is required for sign='random'")
        flip = rng.choice(np.array([-1.0, 1.0]), size=beta.shape[0])
    beta = beta * flip[:, None]
    return (beta, lam) if batched else (beta[0], lam[0])


# --------------------------------------------------------------------------------------------
# Step 7: clustering the anchors
# --------------------------------------------------------------------------------------------


def cluster_anchors(theta: ArrayLike, k: int, *, threshold: float | None = None,
                    on_mismatch: str = "kmeans") -> AnchorClustering:
    """Step 7: group the anchors' estimates by thresholding pairwise distances.

    The groups are the connected components of the graph joining anchors ``a, a'`` with
    :math:`\\lVert \\theta_a - \\theta_{a'} \\rVert_2 \\le \\tau`; each centre is the mean of its
    group's estimates.

    Parameters
    ----------
    theta : ndarray of shape (M_A, d)
        Anchor estimates; non-finite rows are left out (group ``-1``).
    k : int in [1, M_A]
    threshold : float > 0, optional
        :math:`\\tau`.  The slides threshold the distances without giving :math:`\\tau`; any
        :math:`\\tau \\in (2\\epsilon, \\Delta - 2\\epsilon)` separates anchors that are
        :math:`\\epsilon`-close to their truths.  Default (ours, needs no knowledge of
        :math:`\\Delta`): the single-linkage cut into ``k`` groups, :math:`\\tau` = midpoint of
        the ``(k-1)``-th and ``k``-th largest edges of the minimum spanning tree of the
        estimates (equivalently the largest :math:`\\tau` giving ``k`` components).  With one
        anchor per cluster (journal version) this is the identity.
    on_mismatch : {"kmeans", "largest", "raise"}
        What to do when the threshold gives a number of groups other than ``k`` (possible with a
        user threshold, or ties): ``"kmeans"`` (default) re-clusters the anchors by
        Lloyd's k-means from a deterministic farthest-point start; ``"largest"`` keeps the ``k``
        most populated groups when there are more than ``k`` (anchors of the others get ``-1``,
        k-means when there are fewer); ``"raise"`` raises ``ValueError``.

    Returns
    -------
    AnchorClustering

    Examples
    --------
    >>> theta = np.array([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.0, 5.1]])
    >>> res = cluster_anchors(theta, 2)
    >>> res.groups.tolist(), res.method, res.centres.tolist()
    ([0, 0, 1, 1], 'threshold', [[0.05, 0.0], [5.0, 5.05]])
    """
    theta = check_array("theta", theta, ndim=2, dtype=np.float64, finite=False)
    n_a, d = theta.shape
    k = check_int("k", k, low=1, high=max(n_a, 1))
    check_choice("on_mismatch", on_mismatch, MISMATCH_RULES)
    if threshold is not None:
        threshold = check_real("threshold", threshold, low=0.0, low_inclusive=False)
    finite = np.isfinite(theta).all(axis=1)
    groups = np.full(n_a, -1, dtype=np.int64)
    centres = np.full((k, d), np.nan)
    pts = theta[finite]
    if pts.shape[0] < k:
        return AnchorClustering(centres=centres, groups=groups, threshold=float("nan"),
                                n_threshold_groups=0, method="failed")
    tau = single_linkage_cut(pts, k) if threshold is None else threshold
    # the groups: connected components of {||theta_a - theta_a'|| <= tau} (single linkage at tau)
    if np.isinf(tau) or pts.shape[0] == 1:
        labels = np.zeros(pts.shape[0], dtype=np.int64)
    else:
        labels = agglomerative(pts, threshold=tau, linkage="single").labels
    n_groups = int(labels.max()) + 1
    method = "threshold"
    if n_groups != k:
        if on_mismatch == "raise":
            raise ValueError(f"thresholding the anchor distances at tau={tau:.4g} gave {n_groups} groups, "
                             f"not k={k} (on_mismatch='raise')")
        if on_mismatch == "largest" and n_groups > k:
            counts = np.bincount(labels)
            keep = np.sort(np.argsort(-counts, kind="stable")[:k])
            remap = np.full(n_groups, -1, dtype=np.int64)
            remap[keep] = np.arange(k)
            labels = remap[labels]
            method = "largest"
        else:
            labels = kmeans(pts, k, init="farthest").labels
            method = "kmeans"
    groups[finite] = labels
    for j in range(k):
        members = pts[labels == j]
        if members.size:
            centres[j] = members.mean(axis=0)
    return AnchorClustering(centres=centres, groups=groups, threshold=tau,
                            n_threshold_groups=n_groups, method=method)


# --------------------------------------------------------------------------------------------
# Data schedule
# --------------------------------------------------------------------------------------------


def _row_order(problem, rng):
    """A random permutation of each client's rows, as one array of global row indices."""
    owner = np.repeat(np.arange(problem.m), problem.sizes)
    return np.lexsort((rng.random(problem.N), owner))


def _client_schedule(problem, eligible, T, s, sampling, order, rng):
    """Row indices ``(T, s, 2)`` of the pair of samples of each client of each ``S_t``."""
    sizes = problem.sizes[eligible]
    starts = problem.offsets[eligible]
    rows = np.empty((T, s, 2), dtype=np.int64)
    if sampling == "reuse":
        for t in range(T):
            pick = rng.choice(eligible.size, size=s, replace=False)
            n = sizes[pick]
            first = rng.integers(0, n)
            second = (first + 1 + rng.integers(0, n - 1)) % n
            rows[t, :, 0] = starts[pick] + first
            rows[t, :, 1] = starts[pick] + second
        return rows
    # fresh: client c offers c_i = min(n_i // 2, T) disjoint pairs; lay the clients out in random
    # order, each one's pairs consecutively, and deal entry j to round j mod T.  A client's
    # c_i <= T entries land in distinct rounds, every round gets exactly s clients.
    capacity = np.minimum(sizes // 2, T)
    perm = rng.permutation(eligible.size)
    who = np.repeat(perm, capacity[perm])[: s * T]
    occurrence = np.arange(who.size) - np.repeat(np.cumsum(capacity[perm]) - capacity[perm], capacity[perm])[: s * T]
    slot = np.arange(s * T)
    base = starts[who] + 2 * occurrence  # positions within the client's random row order
    rows[slot % T, slot // T, 0] = order[base]
    rows[slot % T, slot // T, 1] = order[base + 1]
    return rows


def _anchor_schedule(problem, anchors, T, P, sampling, order, rng):
    """Row indices ``(T, M_A, P, 2)`` of each anchor's pairs in each round."""
    rows = np.empty((T, anchors.size, P, 2), dtype=np.int64)
    starts = problem.offsets[anchors]
    if sampling == "fresh":
        pos = np.arange(T * P * 2).reshape(T, 1, P, 2)
        rows[:] = order[starts[None, :, None, None] + pos]
        return rows
    for t in range(T):
        for a, (lo, n) in enumerate(zip(starts, problem.sizes[anchors])):
            rows[t, a] = lo + rng.permutation(n)[: 2 * P].reshape(P, 2)
    return rows


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def moment_descent(problem: Problem, anchors: ArrayLike, k: int, *, rng: np.random.Generator, n_rounds: int = 10,
                   clients_per_round: int | None = None, anchor_pairs: int | None = None, step_constant: float = 0.5,
                   init: ArrayLike | None = None, sampling: str = "fresh", anchor_sampling: str | None = None,
                   symmetrize: bool = True, sign: str = "first_moment", subspace_solver: str = "auto",
                   threshold: float | None = None, on_mismatch: str = "kmeans", history: HistoryRequest = False,
                   blowup: float | None = BLOWUP) -> MomentDescentResult:
    """Run Phase 1 (federated moment descent) of Su, Xu and Yang and cluster the anchors.

    One round ``t`` for every anchor ``a`` at once (module docstring, steps 2-6):
    :math:`U_{a,t}` = top-``k`` subspace of :math:`Y_{a,t}` (``top_subspace``),
    :math:`\\beta_{a,t}, \\lambda_1` = leading direction of :math:`Z_{a,t}`
    (``anchor_direction``), and

    .. math::

        \\theta_{a,t+1} = \\theta_{a,t} + \\eta_{a,t} U_{a,t} \\beta_{a,t}, \\qquad
        \\eta_{a,t} = c \\sqrt{\\max(\\lambda_1(Z_{a,t}), 0)} .

    After ``n_rounds`` rounds, step 7 (:func:`cluster_anchors`).

    Parameters
    ----------
    problem : Problem
    anchors : int array of shape (M_A,)
        Distinct client indices of the anchors (see :func:`mixreg.problems.add_anchors`); every
        anchor needs at least 2 points.  Anchors never belong to :math:`S_t`.
    k : int in [1, M_A]
        Number of clusters (of the subspace and of the output).
    rng : numpy.random.Generator
        Draws :math:`S_t`, the pairs, and the sign under ``sign="random"``.
    n_rounds : int >= 1
        ``T`` (default 10, ours).  The slides only say O(1) rounds.  With ``c = 0.5`` and exact
        moments the error of an anchor shrinks by ``I - Sigma / 2`` per round; in practice the
        noise floor of ``Y`` is reached within a few rounds, and under ``"fresh"`` sampling
        more rounds mean fewer clients per round.
    clients_per_round : int >= k, optional
        :math:`|S_t|`, non-anchor clients with :math:`n_i \\ge 2` (a client with one point has no
        pair).  Default: all of them under ``"reuse"``, and the largest size the fresh data
        allow under ``"fresh"`` (see ``sampling``).
    anchor_pairs : int >= 1, optional
        :math:`|D_{a,t}|`, pairs of each anchor's samples per round (the same for all anchors).
        Default: the smallest anchor's ``n_a // (2 T)`` under ``anchor_sampling="fresh"``,
        ``n_a // 2`` under ``"reuse"``.
    step_constant : float > 0
        ``c`` (ours, default 0.5).  The expected step is a population gradient step
        of size ``c`` restricted to ``U``, stable for :math:`c < 2/\\lambda_{max}(\\Sigma_l)`.
    init : array of shape (d,) or (M_A, d), optional
        :math:`\\theta_0` (any initialisation is allowed by the theorem); zeros by default.
    sampling : {"fresh", "reuse"}
        Data of :math:`S_t`.  ``"fresh"`` (default; the slides index :math:`S_t` and
        :math:`D_{a,t}` by ``t``, i.e. sample splitting): every data row is used at most once in
        Phase 1.  A client with :math:`n_i` points offers :math:`\\min(\\lfloor n_i/2 \\rfloor, T)`
        disjoint pairs, each in a different round, so :math:`|S_t| \\le \\sum_i
        \\min(\\lfloor n_i/2\\rfloor, T) / T`.  ``"reuse"``: each round draws :math:`S_t` uniformly
        among the eligible clients and a random pair of distinct points of each.
    anchor_sampling : {"fresh", "reuse"}, optional
        Data of the anchors (default: as ``sampling``).  ``"fresh"``: each anchor uses
        ``anchor_pairs`` new pairs per round (needs :math:`n_a \\ge 2 T |D|`); ``"reuse"``: each
        round draws ``anchor_pairs`` disjoint pairs of its own points afresh.  The slides do not
        say how the :math:`n_A = \\tilde\\Omega(k)` points of an anchor are split over the rounds.
    symmetrize : bool
        Symmetrise ``Y`` and ``Z`` before the eigen-decomposition (default) or use singular
        vectors (see ``top_subspace``).
    sign : {"first_moment", "random"}
        Sign of :math:`\\beta` (see ``anchor_direction``).
    subspace_solver : {"auto", "dense", "factored"}
        See ``top_subspace``; ``"auto"`` never forms a ``d x d`` matrix when
        :math:`|S_t| < d`.
    threshold, on_mismatch
        Step 7, see :func:`cluster_anchors`.
    history : bool, "all" or ("theta",)
        Record ``MomentDescentHistory`` (the iterates and the anchors' errors, steps and
        eigenvalues); ``"all"`` and ``("theta",)`` are ``True``.  The replicas are the anchors'
        estimates, with no cluster identities or client losses in a round: the other names of
        :data:`mixreg.algorithms.HISTORY_FIELDS` are refused.
    blowup : float > 1 or None
        Divergence factor of :class:`mixreg.algorithms.Replicas` on the anchors' estimates
        (default :data:`mixreg.algorithms.DEFAULT_BLOWUP`); ``None``: only non-finite values count.

    Returns
    -------
    MomentDescentResult

    Raises
    ------
    ValueError
        Naming the parameter: an anchor index out of range or repeated, an anchor with fewer
        than 2 points, ``k > M_A``, ``clients_per_round`` larger than the eligible clients (or
        than the fresh pairs allow), an anchor too small for ``n_rounds`` fresh rounds, ...

    Examples
    --------
    >>> from mixreg.problems import ProblemSpec
    >>> spec = ProblemSpec(m=3000, k=2, d=5, sigma=0.1, scale=3.0, protocol="gaussian", n=4,
    ...                    anchor_mode="per_cluster", anchor_points=400)
    >>> rng = np.random.default_rng(1)
    >>> pb, anchors = spec.with_anchors(spec.generate(rng), rng)
    >>> res = moment_descent(pb, anchors, 2, rng=rng, anchor_sampling="reuse")
    >>> res.centres.shape, res.stop_reason
    ((2, 5), 'completed 10 rounds')
    """
    start = time.perf_counter()
    fields = check_history(history, ("theta",), unavailable=tuple(f for f in HISTORY_FIELDS if f != "theta"),
                           why="Phase 1's replicas are the anchors' estimates; it records MomentDescentHistory")
    blowup = check_blowup(blowup)
    plan = _plan(problem, anchors, k, rng=rng, n_rounds=n_rounds, clients_per_round=clients_per_round,
                 anchor_pairs=anchor_pairs, step_constant=step_constant, init=init, sampling=sampling,
                 anchor_sampling=anchor_sampling, sign=sign, subspace_solver=subspace_solver,
                 threshold=threshold, on_mismatch=on_mismatch)
    theta = plan.theta0[:, None, :]  # the anchors are the replicas: (M_A, 1, d)
    replicas = Replicas(plan.anchors.size, plan.T, theta0=theta, floors=data_scales(problem), blowup=blowup)
    hist = _Recorder(plan, k) if fields else None
    _run(problem, plan, theta, replicas, hist, k, symmetrize=symmetrize, sign=sign,
         subspace_solver=subspace_solver, c=plan.c, rng=rng)

    theta = theta[:, 0, :]
    nonfinite = replicas.diverged
    stop_reason = replicas.reason
    if nonfinite.all():
        stop_reason = (f"every anchor estimate diverged (non-finite or blown up; last at round "
                       f"{replicas.rounds_run - 1})")
    elif nonfinite.any():
        stop_reason += f"; {int(nonfinite.sum())} anchor(s) frozen after a diverging update"
    clustering = cluster_anchors(np.where(nonfinite[:, None], np.nan, theta), k, threshold=threshold,
                                 on_mismatch=on_mismatch)
    rounds_run = replicas.rounds_run
    rows_used = np.unique(np.concatenate([plan.client_rows[:rounds_run].ravel(),
                                          plan.anchor_rows[:rounds_run].ravel()]))
    return MomentDescentResult(
        centres=clustering.centres,
        anchor_theta=theta,
        anchors=plan.anchors,
        clustering=clustering,
        clients_per_round=plan.s,
        anchor_pairs=plan.P,
        n_rounds=rounds_run,
        rows_used=int(rows_used.size),
        nonfinite=nonfinite,
        diverged_rule=replicas.diverged_rule,
        stop_reason=stop_reason,
        wall_time=elapsed(start),
        history=None if hist is None else hist.result(rounds_run, problem, plan),
    )


def _run(problem, plan, theta, replicas, hist, k, *, symmetrize, sign, subspace_solver, c, rng):
    """Phase 1's loop (steps 2-6), in place on the anchors' ``theta`` (M_A, 1, d)."""
    X, y = problem.X, problem.y
    f64 = lambda rows: (X[rows].astype(np.float64), y[rows].astype(np.float64))  # noqa: E731
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(plan.T):
            live = np.flatnonzero(replicas.live)
            th = theta[live, 0]
            # step 3: U = top-k subspace of Y from the pairs of the clients of S_t
            E1 = moment_vectors(*f64(plan.client_rows[t, :, 0]), th)
            E2 = moment_vectors(*f64(plan.client_rows[t, :, 1]), th)
            U, vals = top_subspace(E1, E2, k, symmetrize=symmetrize, solver=subspace_solver)
            # step 5: beta = leading direction of Z from the anchor's own pairs
            Pa1 = np.matmul(moment_vectors(*f64(plan.anchor_rows[t, live, :, 0]), th), U)
            Pa2 = np.matmul(moment_vectors(*f64(plan.anchor_rows[t, live, :, 1]), th), U)
            beta, lam = anchor_direction(Pa1, Pa2, symmetrize=symmetrize, sign=sign, rng=rng)
            # step 6: theta_{a,t+1} = theta_{a,t} + eta U beta, eta = c sqrt(max(lambda_1, 0))
            eta = c * np.sqrt(np.maximum(lam, 0.0))
            new = theta.copy()
            new[live, 0] = th + eta[:, None] * np.matmul(U, beta[:, :, None])[:, :, 0]
            replicas.accept(theta, new, np.zeros(len(theta)), t)  # no objective: parameters only
            if hist is not None:
                hist.record(t, theta, live, replicas.live[live], eta, lam, vals)
            if replicas.finished(t):
                break


class _Recorder:
    """Per-round record of the anchors (:class:`MomentDescentHistory`)."""

    def __init__(self, plan, k):
        T, n_a, d = plan.T, plan.anchors.size, plan.theta0.shape[1]
        self.theta = np.empty((T + 1, n_a, d))
        self.theta[0] = plan.theta0
        self.step = np.zeros((T, n_a))
        self.lam = np.full((T, n_a), np.nan)
        self.vals = np.full((T, n_a, k), np.nan)

    def record(self, t, theta, live, ok, eta, lam, vals):
        self.theta[t + 1] = theta[:, 0]
        self.step[t, live[ok]] = eta[ok]
        self.lam[t, live] = lam
        self.vals[t, live] = vals

    def result(self, rounds_run, problem, plan):
        theta = self.theta[: rounds_run + 1]
        truth = problem.theta_star[problem.labels[plan.anchors]]
        return MomentDescentHistory(
            theta=theta,
            anchor_error=np.linalg.norm(theta - truth[None], axis=2),
            step=self.step[:rounds_run],
            lambda1=self.lam[:rounds_run],
            subspace_values=self.vals[:rounds_run],
        )


@dataclass(frozen=True)
class _Plan:
    anchors: np.ndarray
    T: int
    s: int
    P: int
    c: float
    theta0: np.ndarray
    client_rows: np.ndarray
    anchor_rows: np.ndarray


def _plan(problem, anchors, k, *, rng, n_rounds, clients_per_round, anchor_pairs, step_constant, init,
          sampling, anchor_sampling, sign, subspace_solver, threshold, on_mismatch):
    """Validate :func:`moment_descent`'s arguments and lay out the data schedule of every round."""
    check_problem(problem)
    check_rng(rng)
    anchors = np.asarray(anchors)
    if anchors.ndim != 1 or anchors.size == 0 or anchors.dtype.kind not in "iu":
        raise ValueError(f"anchors must be a non-empty 1-D integer array of client indices, got {anchors!r}")
    anchors = anchors.astype(np.int64)
    m, d = problem.m, problem.d
    if anchors.min() < 0 or anchors.max() >= m:
        raise ValueError(f"anchors must be client indices in [0, m) = [0, {m}), got range "
                         f"[{anchors.min()}, {anchors.max()}]")
    if np.unique(anchors).size != anchors.size:
        raise ValueError("anchors must be distinct clients")
    n_anchor = problem.sizes[anchors]
    if n_anchor.min() < 2:
        bad = int(anchors[np.argmin(n_anchor)])
        raise ValueError(f"every anchor needs at least 2 points (one pair); anchor client {bad} has "
                         f"n_i = {int(n_anchor.min())}")
    n_a = anchors.size
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"k must be an integer, got {k!r}")
    if k < 1 or k > n_a:
        raise ValueError(f"k must be in [1, M_A] = [1, {n_a}] (one anchor at least per cluster), got k={k}")
    if k > d:
        raise ValueError(f"k must be at most d={d}, got k={k}")
    T = check_int("n_rounds", n_rounds, low=1)
    check_choice("sampling", sampling, SAMPLING)
    if anchor_sampling is None:
        anchor_sampling = sampling
    check_choice("anchor_sampling", anchor_sampling, SAMPLING)
    check_choice("sign", sign, SIGN_RULES)
    check_choice("subspace_solver", subspace_solver, SUBSPACE_SOLVERS)
    check_choice("on_mismatch", on_mismatch, MISMATCH_RULES)
    c = check_real("step_constant", step_constant, low=0.0, low_inclusive=False)
    if threshold is not None:
        check_real("threshold", threshold, low=0.0, low_inclusive=False)

    if anchor_sampling == "fresh":
        most = int(n_anchor.min()) // (2 * T)
        if anchor_pairs is None and most < 1:
            raise ValueError(f"the smallest anchor has n_i={int(n_anchor.min())} points, fewer than the "
                             f"2 * n_rounds = {2 * T} needed for one fresh pair per round; give anchors more "
                             "points, lower n_rounds or use anchor_sampling='reuse'")
    else:
        most = int(n_anchor.min()) // 2
    P = most if anchor_pairs is None else check_int("anchor_pairs", anchor_pairs, low=1)
    if P > most:
        need = 2 * P * (T if anchor_sampling == "fresh" else 1)
        raise ValueError(f"anchor_pairs={P} needs {need} points per anchor (anchor_sampling={anchor_sampling!r}), "
                         f"but the smallest anchor has n_i={int(n_anchor.min())}")

    is_anchor = np.zeros(m, dtype=bool)
    is_anchor[anchors] = True
    eligible = np.flatnonzero(~is_anchor & (problem.sizes >= 2))
    if sampling == "fresh":
        available = int(np.minimum(problem.sizes[eligible] // 2, T).sum()) // T
        limit = (f"the {eligible.size} non-anchor clients with n_i >= 2 offer disjoint pairs for "
                 f"at most {available} clients per round over n_rounds={T} (sampling='fresh')")
    else:
        available = int(eligible.size)
        limit = f"there are {available} non-anchor clients with n_i >= 2 (clients with 1 point have no pair)"
    if clients_per_round is None:
        s = available
        if s < k:
            raise ValueError(f"too few clients for S_t: {limit}, fewer than k={k}")
    else:
        s = check_int("clients_per_round", clients_per_round, low=k)
        if s > available:
            raise ValueError(f"clients_per_round={s} is too large: {limit}")
    if init is None:
        theta = np.zeros((n_a, d))
    else:
        theta0 = check_array("init", init, dtype=np.float64)
        if theta0.shape == (d,):
            theta = np.repeat(theta0[None], n_a, axis=0)
        elif theta0.shape == (n_a, d):
            theta = theta0.copy()
        else:
            raise ValueError(f"init must have shape (d,)=({d},) or (M_A, d)=({n_a}, {d}), got {theta0.shape}")

    order = _row_order(problem, rng)
    client_rows = _client_schedule(problem, eligible, T, s, sampling, order, rng)
    anchor_rows = _anchor_schedule(problem, anchors, T, P, anchor_sampling, order, rng)
    return _Plan(anchors=anchors, T=T, s=s, P=P, c=c, theta0=theta, client_rows=client_rows,
                 anchor_rows=anchor_rows)
