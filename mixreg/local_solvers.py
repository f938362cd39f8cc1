"""What a client computes locally for the squared loss of a linear model.

Client ``i`` owns rows ``offsets[i]:offsets[i+1]`` of the stacked data ``X`` of shape
``(N, d)`` and ``y`` of shape ``(N,)`` (the layout of :class:`mixreg.problems.Problem`), and its
local loss is

.. math::

    \\ell_i(\\theta) = \\frac{1}{2 n_i} \\lVert X_i \\theta - y_i \\rVert_2^2,
    \\qquad \\nabla \\ell_i(\\theta) = \\frac{1}{n_i} X_i^\\top (X_i \\theta - y_i),
    \\qquad H_i = \\frac{1}{n_i} X_i^\\top X_i .

The local steps of the clustered-FL algorithms are computed here for all clients at once:

* :func:`gradient_steps`: ``s`` full-batch gradient steps (FedAvg(s) [1]_, IFCA model averaging);
* :func:`proximal_step`: the exact proximal step (FedProx [2]_);
* :func:`local_least_squares`: each client's own estimate (one-shot clustering, FeSEM, k-FED);
* :func:`grouped_rows`: the rows regrouped by a key (an estimated cluster, a (client, group)
  pair), so that the functions above solve each key's rows as one client;
* :func:`local_update_operator`, :func:`stacked_update_operators`: the same FedAvg(s) and
  FedProx updates written as linear operators, :math:`\\theta^{(i)} = \\theta + K_i (y_i -
  X_i\\theta)`, which the Phase-2 driver :func:`mixreg.algorithms.fedx` (Su, Xu and Yang [3]_)
  precomputes once.

Clients are never visited one at a time: row-wise work is a segmented sum over the stacked rows,
and systems are solved in one batched call per distinct client size.  All results are float64.

References
----------
.. [1] B. McMahan, E. Moore, D. Ramage, S. Hampson, B. Agüera y Arcas, "Communication-efficient
   learning of deep networks from decentralized data", AISTATS 2017 (FedAvg).
.. [2] T. Li, A. K. Sahu, M. Zaheer, M. Sanjabi, A. Talwalkar, V. Smith, "Federated optimization
   in heterogeneous networks", MLSys 2020 (FedProx).
.. [3] L. Su, J. Xu, P. Yang, "Global Convergence of Federated Learning for Mixed Regression",
   NeurIPS 2022 (arXiv:2206.07279).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ._typing import ArrayLike
from .kernels import certify_grams, combine_rows, gram_guard, gram_subsets_solve
from .validation import check_array, check_choice, check_int, check_real
from .problems import Problem

__all__ = [
    "LOCAL_SOLVERS",
    "LEAST_SQUARES_METHODS",
    "DEFAULT_RELATIVE_RIDGE",
    "MIN_NORM_GRAM_COND",
    "gradient_steps",
    "proximal_step",
    "local_least_squares",
    "ClientGrams",
    "local_update_operator",
    "stacked_update_operators",
    "stacked_operators",
    "size_groups",
    "client_blocks",
    "grouped_rows",
    "check_solver",
]

LOCAL_SOLVERS = ("fedavg", "fedprox")
LEAST_SQUARES_METHODS = ("min_norm", "ridge")

#: Default ridge penalty of :func:`local_least_squares`, relative to the client's mean feature
#: variance :math:`\\operatorname{tr}(H_i) / d`.
DEFAULT_RELATIVE_RIDGE = 1e-3

#: Largest condition number :math:`\\sigma_{max}(X_i) / \\sigma_{min}(X_i)` of a client that
#: :func:`local_least_squares` (``method="min_norm"``) solves through its Gram matrix; the others
#: take the SVD.
MIN_NORM_GRAM_COND = 100.0


# --------------------------------------------------------------------------------------------
# Validation of the stacked layout
# --------------------------------------------------------------------------------------------


def _check_stacked(X, y, offsets):
    """``X`` (N, d), ``y`` (N,) as float64 and ``offsets`` (m + 1,) int64 with sizes >= 1."""
    X = check_array("X", X, ndim=2, dtype=np.float64)
    N, d = X.shape
    y = check_array("y", y, shape=(N,), dtype=np.float64)
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.size < 2 or offsets.dtype.kind not in "iu":
        raise ValueError(f"offsets must be a 1-D integer array of length m + 1 >= 2, got shape {offsets.shape} "
                         f"and dtype {offsets.dtype}")
    offsets = offsets.astype(np.int64)
    if offsets[0] != 0 or offsets[-1] != N:
        raise ValueError(f"offsets must start at 0 and end at N={N}, got {offsets[0]} and {offsets[-1]}")
    if np.any(np.diff(offsets) < 1):
        raise ValueError("offsets must be strictly increasing (every client owns at least one row)")
    return X, y, offsets


def _check_start(theta, m, d):
    theta = check_array("theta", theta, dtype=np.float64)
    if theta.shape == (d,):
        return np.repeat(theta[None], m, axis=0)
    if theta.shape == (m, d):
        return theta.copy()
    raise ValueError(f"theta must have shape (d,)=({d},) or (m, d)=({m}, {d}), got {theta.shape}")


def grouped_rows(keys: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows grouped by an integer key, so that each group can be solved as one client.

    Sorting the rows by key (stably) makes every key's rows one contiguous block, and the
    block offsets are a client layout: ``X[order]``, ``y[order]`` and ``offsets`` can be handed
    to any function of this module, which then treats each key's rows as a client.  The callers
    use it for the pooled least squares of each estimated cluster (one-shot clustering's exact
    finish), the refit of each (client, local group) in k-FED's local Lloyd steps, and the
    (cluster, client) sub-clients of the fixed-label FedAvg trainer.  Inputs are trusted.

    Parameters
    ----------
    keys : int array of shape (N,), values in ``[0, n_keys)``
    n_keys : int >= 1
        How many keys there can be; keys that no row has get no block.

    Returns
    -------
    order : int64 array of shape (N,)
        The rows sorted by key, ties in row order: rows ``order[offsets[j]:offsets[j + 1]]``
        are the rows of key ``present[j]``.
    present : int64 array of shape (g,)
        The ``g`` keys that occur, ascending.
    offsets : int64 array of shape (g + 1,)
        Block boundaries, strictly increasing, from 0 to ``N``.

    Examples
    --------
    >>> order, present, offsets = grouped_rows(np.array([2, 0, 2, 0, 0]), 4)
    >>> order.tolist(), present.tolist(), offsets.tolist()  # key 1 and key 3 hold no row
    ([1, 3, 4, 0, 2], [0, 2], [0, 3, 5])
    >>> X, y = np.array([[1.0], [2.0], [1.0], [1.0], [3.0]]), np.array([4.0, 2.0, 6.0, 1.0, 3.0])
    >>> local_least_squares(X[order], y[order], offsets).round(12).ravel().tolist()  # a fit per key
    [1.0, 5.0]
    """
    # the stable order is unique; NumPy sorts 16-bit keys by radix, in linear time
    order = np.argsort(keys.astype(np.uint16) if n_keys <= 1 << 16 else keys, kind="stable")
    counts = np.bincount(keys, minlength=n_keys)
    present = np.flatnonzero(counts)
    offsets = np.zeros(present.size + 1, dtype=np.int64)
    np.cumsum(counts[present], out=offsets[1:])
    return order, present, offsets


def size_groups(offsets: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """For every distinct client size ``n``: (n, clients, row indices of shape (c, n))."""
    sizes = np.diff(offsets)
    for n in np.unique(sizes):
        clients = np.flatnonzero(sizes == n)
        yield int(n), clients, offsets[clients][:, None] + np.arange(n)


# --------------------------------------------------------------------------------------------
# Local updates on the data
# --------------------------------------------------------------------------------------------


def gradient_steps(X: np.ndarray, y: np.ndarray, offsets: np.ndarray, theta: ArrayLike, step_size: float,
                   n_steps: int) -> np.ndarray:
    """Every client runs ``n_steps`` full-batch gradient steps on its own loss.

    From :math:`\\theta_i^{(0)} = \\theta_i`, for :math:`j = 0, \\dots, s - 1`:

    .. math::

        \\theta_i^{(j+1)} = \\theta_i^{(j)} - \\eta \\nabla \\ell_i(\\theta_i^{(j)})
        = \\theta_i^{(j)} - \\frac{\\eta}{n_i} X_i^\\top (X_i \\theta_i^{(j)} - y_i),

    the local update of FedAvg(s) [1]_ (Su-Xu-Yang Phase 2 with ``local_solver="fedavg"``).
    Equals :math:`\\theta_i + K_i (y_i - X_i \\theta_i)` with ``K_i =``
    :func:`local_update_operator` ``(X_i, eta, "fedavg", s)`` up to rounding; this function
    costs ``O(s N d)`` and needs no precomputation.

    Parameters
    ----------
    X : array of shape (N, d)
    y : array of shape (N,)
    offsets : int array of shape (m + 1,)
        Client ``i`` owns rows ``offsets[i]:offsets[i+1]`` (at least one).
    theta : array of shape (m, d) or (d,)
        One start per client, or the same start for all.
    step_size : float > 0
        :math:`\\eta`.  Stable when :math:`\\eta < 2 / \\lambda_{max}(H_i)`; an unstable step
        returns non-finite rows without a warning (the caller flags divergence).
    n_steps : int >= 0
        ``s`` (0 returns the starts).

    Returns
    -------
    theta : ndarray of shape (m, d), float64

    References
    ----------
    .. [1] B. McMahan, E. Moore, D. Ramage, S. Hampson, B. Agüera y Arcas, "Communication-efficient
       learning of deep networks from decentralized data", AISTATS 2017 (FedAvg).

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    >>> y = np.array([1.0, 2.0, 3.0])
    >>> gradient_steps(X, y, [0, 2, 3], np.zeros(2), 0.5, 1).tolist()  # one step from 0
    [[0.25, 1.0], [1.5, 1.5]]
    """
    X, y, offsets = _check_stacked(X, y, offsets)
    m, d = offsets.size - 1, X.shape[1]
    theta = _check_start(theta, m, d)
    eta = check_real("step_size", step_size, low=0.0, low_inclusive=False)
    s = check_int("n_steps", n_steps, low=0)
    sizes = np.diff(offsets)
    owner = np.repeat(np.arange(m), sizes)
    scale = (eta / sizes)[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(s):
            resid = np.einsum("nd,nd->n", X, theta[owner]) - y
            theta = theta - scale * np.add.reduceat(X * resid[:, None], offsets[:-1], axis=0)
    return theta


def proximal_step(X: np.ndarray, y: np.ndarray, offsets: np.ndarray, theta: ArrayLike, step_size: float) -> np.ndarray:
    """Every client's exact proximal step (the local update of FedProx [2]_).

    .. math::

        \\theta_i^{+} = \\arg\\min_w \\frac{1}{2 n_i} \\lVert X_i w - y_i \\rVert^2
        + \\frac{1}{2\\eta} \\lVert w - \\theta_i \\rVert^2
        = \\theta_i + \\eta X_i^\\top (n_i I + \\eta X_i X_i^\\top)^{-1} (y_i - X_i \\theta_i)
        = (H_i + I/\\eta)^{-1} (X_i^\\top y_i / n_i + \\theta_i / \\eta) .

    The ``n_i x n_i`` form is solved when :math:`n_i \\le d`, the ``d x d`` form otherwise
    (one batched solve per distinct client size).  Both systems are positive definite for every
    :math:`\\eta > 0`.

    Parameters
    ----------
    X : array of shape (N, d)
    y : array of shape (N,)
    offsets : int array of shape (m + 1,)
    theta : array of shape (m, d) or (d,)
        The proximal centres (the broadcast model of each client).
    step_size : float > 0
        :math:`\\eta`.

    Returns
    -------
    theta : ndarray of shape (m, d), float64

    References
    ----------
    .. [2] T. Li, A. K. Sahu, M. Zaheer, M. Sanjabi, A. Talwalkar, V. Smith, "Federated optimization
       in heterogeneous networks", MLSys 2020 (FedProx).

    Examples
    --------
    >>> X, y = np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([2.0, 4.0])
    >>> proximal_step(X, y, [0, 1, 2], np.zeros(2), 1.0).tolist()  # w = 2 / (1 + 1) on x = e_1
    [[1.0, 0.0], [0.0, 2.0]]
    """
    X, y, offsets = _check_stacked(X, y, offsets)
    m, d = offsets.size - 1, X.shape[1]
    theta = _check_start(theta, m, d)
    eta = check_real("step_size", step_size, low=0.0, low_inclusive=False)
    out = np.empty((m, d))
    for n, clients, rows in size_groups(offsets):
        Xg, yg, tg = X[rows], y[rows], theta[clients]  # (c, n, d), (c, n), (c, d)
        if n <= d:
            G = eta * np.matmul(Xg, Xg.transpose(0, 2, 1))
            G[:, np.arange(n), np.arange(n)] += n
            resid = yg - np.matmul(Xg, tg[:, :, None])[:, :, 0]
            out[clients] = tg + eta * np.matmul(Xg.transpose(0, 2, 1), np.linalg.solve(G, resid[:, :, None]))[:, :, 0]
        else:
            A = np.matmul(Xg.transpose(0, 2, 1), Xg) / n
            A[:, np.arange(d), np.arange(d)] += 1.0 / eta
            b = np.matmul(Xg.transpose(0, 2, 1), yg[:, :, None])[:, :, 0] / n + tg / eta
            out[clients] = np.linalg.solve(A, b[:, :, None])[:, :, 0]
    return out


def client_blocks(X: np.ndarray, y: np.ndarray, offsets: np.ndarray, n: int,
                  clients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``clients`` (all of size ``n``, as :func:`size_groups` gives them) as ``(c, n, d)``
    and ``(c, n)``: a view when the clients are consecutive, else a copy.  Inputs are trusted."""
    c, d = clients.size, X.shape[1]
    if clients[-1] - clients[0] == c - 1:
        lo = offsets[clients[0]]
        return X[lo:lo + c * n].reshape(c, n, d), y[lo:lo + c * n].reshape(c, n)
    rows = offsets[clients][:, None] + np.arange(n)
    return X[rows], y[rows]


def _cholesky_succeeds(A):
    """Which of the stacked symmetric matrices ``A`` (c, p, p) :func:`numpy.linalg.cholesky`
    factorises (a failing batch is split in halves until each failure is isolated)."""
    ok = np.zeros(A.shape[0], dtype=np.bool_)
    pending = [np.arange(A.shape[0])]
    while pending:
        idx = pending.pop()
        try:
            np.linalg.cholesky(A if idx.size == A.shape[0] else A[idx])
        except np.linalg.LinAlgError:
            if idx.size > 1:
                pending += [idx[:idx.size // 2], idx[idx.size // 2:]]
            continue
        ok[idx] = True
    return ok


def _certified(G, q):
    """Which of the Grams ``G = X X^T`` (c, p, p) of blocks ``X`` (c, p, q) are certified to have
    :math:`\\kappa(X) \\le` :data:`MIN_NORM_GRAM_COND` (bool (c,)).

    The certificate: Cholesky succeeds on :math:`G - s I` with :math:`s = \\bar\\lambda /
    \\kappa_{max}^2`, :math:`\\bar\\lambda = \\min(\\operatorname{tr} G, \\lVert G
    \\rVert_\\infty) \\ge \\lambda_{max}(G)`.  The rounding of the Gram and of the Cholesky
    factorisation perturb :math:`G` by at most :math:`(p + q + 3)\\, \\varepsilon
    \\operatorname{tr} G \\le p (p + q + 3)\\, \\varepsilon\\, \\kappa_{max}^2 s`, which the
    size guard keeps below :math:`s / 100`; the floor on :math:`\\operatorname{tr} G` keeps
    underflow out.
    """
    c, p, _ = G.shape
    eps = np.finfo(np.float64).eps
    ok = np.zeros(c, dtype=np.bool_)
    if not gram_guard(p, q, MIN_NORM_GRAM_COND):
        return ok
    diag = np.arange(p)
    trace = np.einsum("cii->c", G)
    lam_bar = np.minimum(trace, np.abs(G).sum(axis=2).max(axis=1))
    candidate = np.flatnonzero(np.isfinite(lam_bar) & (trace >= np.finfo(np.float64).tiny / eps))
    if candidate.size == 0:
        return ok
    shifted = G[candidate]
    shifted[:, diag, diag] -= (lam_bar[candidate] / MIN_NORM_GRAM_COND**2)[:, None]
    ok[candidate[_cholesky_succeeds(shifted)]] = True
    return ok


def _certified_solve(G, b, q):
    """``(alpha, ok)``: ``alpha = G^-1 b`` for the Grams ``G = X X^T`` (c, p, p) of blocks ``X``
    (c, p, q) certified by :func:`_certified` (``ok``); ``alpha`` is 0 where ``ok`` is False."""
    c, p, _ = G.shape
    alpha = np.zeros((c, p))
    ok = _certified(G, q)
    certified = np.flatnonzero(ok)
    if certified.size == 0:
        return alpha, ok
    every = certified.size == c
    try:
        solved = np.linalg.solve(G if every else G[certified], (b if every else b[certified])[:, :, None])
    except np.linalg.LinAlgError:  # not reached for a certified Gram; the SVD takes them all
        ok[:] = False
        return np.zeros((c, p)), ok
    alpha[certified] = solved[:, :, 0]
    return alpha, ok


def _min_norm_least_squares(X, y, offsets, out):
    """OUT ``out`` (m, d): every client's :math:`X_i^+ y_i` (see :func:`local_least_squares`)."""
    m, d = offsets.size - 1, X.shape[1]
    sizes = np.diff(offsets)
    done = np.zeros(m, dtype=np.bool_)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # such blocks take the SVD
        for n in np.unique(sizes[sizes <= d]):
            clients = np.flatnonzero(sizes == n)
            Xg, yg = client_blocks(X, y, offsets, int(n), clients)  # (c, n, d), (c, n)
            alpha, ok = _certified_solve(np.matmul(Xg, Xg.transpose(0, 2, 1)), yg, d)
            if ok.any():  # the minimum-norm formula X^T (X X^T)^-1 y
                theta = np.matmul(Xg.transpose(0, 2, 1), alpha[:, :, None])[:, :, 0]
                ok &= np.isfinite(theta).all(axis=1)
                out[clients[ok]] = theta[ok]
                done[clients[ok]] = True
    if done.all():
        return
    eps = np.finfo(np.float64).eps
    for n, clients, rows in size_groups(offsets):  # the others: the pseudo-inverse by SVD
        todo = ~done[clients]
        if todo.any():
            Xg, yg = X[rows[todo]], y[rows[todo]]  # (c, n, d), (c, n)
            pinv = np.linalg.pinv(Xg, rcond=max(n, d) * eps)  # (c, d, n)
            out[clients[todo]] = np.matmul(pinv, yg[:, :, None])[:, :, 0]


def local_least_squares(X: np.ndarray, y: np.ndarray, offsets: np.ndarray, *, method: str = "min_norm",
                        ridge: float | None = None) -> np.ndarray:
    """Every client's own least-squares estimate (one-shot clustering, FeSEM, k-FED).

    ``method="min_norm"`` (default): the minimum-norm minimiser of
    :math:`\\lVert X_i w - y_i \\rVert^2`,

    .. math::

        \\hat\\theta_i = X_i^{+} y_i ,

    with :math:`X_i^+` the Moore-Penrose pseudo-inverse (SVD; singular values below
    :math:`\\max(n_i, d)\\, \\varepsilon\\, \\sigma_{max}` are treated as zero, the rule of
    :func:`numpy.linalg.lstsq`).  It is the ordinary least-squares estimate when
    :math:`X_i` has rank ``d``; when :math:`n_i < d` the problem is underdetermined and this is
    the interpolating solution of smallest norm (its component in the null space of
    :math:`X_i` is 0).

    How it is computed.  A client with :math:`n_i \\le d` (the underdetermined case of one-shot
    clustering and of k-FED's local groups) certified well conditioned, :math:`\\kappa(X_i) =
    \\sigma_{max} / \\sigma_{min} \\le \\kappa_{max}` = :data:`MIN_NORM_GRAM_COND` (100), has
    full row rank far above the cutoff, and then :math:`X_i^+ y_i` is the minimum-norm formula
    (Golub and Van Loan [4]_)

    .. math::

        \\hat\\theta_i = X_i^\\top (X_i X_i^\\top)^{-1} y_i ,

    one batched ``n x n`` solve per distinct client size, at a cost of :math:`O(n_i^2 d)` flops
    against a much larger one for the SVD.  Every other client (rank deficient, of full rank but
    ill conditioned, or with :math:`n_i > d`) gets the SVD pseudo-inverse above, the very
    computation of the rule, so its estimate is the same to the last bit as computed alone.

    The certificate (Rump [5]_): the Cholesky factorisation of :math:`G_i - s_i I` succeeds,
    with :math:`G_i = X_i X_i^\\top`, :math:`s_i = \\bar\\lambda_i / \\kappa_{max}^2` and
    :math:`\\bar\\lambda_i = \\min(\\operatorname{tr} G_i, \\lVert G_i \\rVert_\\infty) \\ge
    \\lambda_{max}(G_i) = \\sigma_{max}^2`.  Rounding perturbs the computed Gram and its
    factorisation by at most about :math:`(n_i + d + 3)\\, \\varepsilon \\operatorname{tr} G_i
    \\le n_i (n_i + d + 3)\\, \\varepsilon\\, \\kappa_{max}^2\\, s_i` (Higham [6]_), and a
    client is only certified when this is at most :math:`s_i / 100`, so success proves
    :math:`\\sigma_{min}^2 \\ge 0.99\\, s_i`, i.e. :math:`\\kappa(X_i) \\le 1.01\\,
    \\kappa_{max}`.  A rank-deficient :math:`X_i` makes :math:`G_i - s_i I` indefinite by
    :math:`s_i`, a hundred times the rounding, so its factorisation fails and it takes the SVD;
    so do clients too large for the rounding bound, a Gram that overflows or whose trace is
    below ``tiny / eps`` (underflow), and any non-finite result.  Squaring the condition number
    costs accuracy: a certified client's estimate differs from the SVD's by
    :math:`O(\\kappa(X_i)^2 \\varepsilon)` relative, a few times :math:`10^{-12}` at most.

    ``method="ridge"``: the solution of

    .. math::

        (X_i^\\top X_i / n_i + \\lambda_i I)\\, w = X_i^\\top y_i / n_i ,

    solved as :math:`w = X_i^\\top (X_i X_i^\\top / n_i + \\lambda_i I)^{-1} y_i / n_i` when
    :math:`n_i < d` (the smaller system).  ``ridge`` given: :math:`\\lambda_i` = ``ridge`` for
    every client.  ``ridge=None`` (default, ours): :math:`\\lambda_i = 10^{-3}
    \\operatorname{tr}(H_i)/d`, a thousandth of the client's mean feature variance, which is
    :math:`\\approx 10^{-3}` for the unit-variance features of the IFCA and Su-Xu-Yang problems.
    Relative, so the estimate is equivariant under a rescaling of the features; small, so the
    shrinkage bias is negligible next to the least-squares noise of a well-conditioned client,
    while the noise gain :math:`\\sigma_j / (\\sigma_j^2 + \\lambda)` of a nearly singular client
    (:math:`n_i \\approx d`) stays below :math:`1 / (2\\sqrt{\\lambda})` instead of blowing up.
    As :math:`\\lambda \\to 0` the ridge estimate tends to the minimum-norm one.

    Parameters
    ----------
    X : array of shape (N, d)
    y : array of shape (N,)
    offsets : int array of shape (m + 1,)
    method : {"min_norm", "ridge"}
    ridge : float > 0, optional
        :math:`\\lambda` (absolute), only with ``method="ridge"``.

    Returns
    -------
    theta : ndarray of shape (m, d), float64

    Notes
    -----
    Clients of equal size are solved in one batched call.

    References
    ----------
    .. [4] G. H. Golub, C. F. Van Loan, "Matrix Computations", 4th ed., Johns Hopkins University
       Press, 2013, section 5.6 (underdetermined systems).
    .. [5] S. M. Rump, "Verification of positive definiteness", BIT Numerical Mathematics 46,
       433-452, 2006.
    .. [6] N. J. Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., SIAM, 2002,
       chapters 3 (inner products), 10 (Cholesky factorisation) and 21 (underdetermined
       systems).

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 4.0]])
    >>> y = np.array([1.0, 2.0, 5.0])
    >>> local_least_squares(X, y, [0, 2, 3]).round(6).tolist()  # second client: n < d
    [[1.0, 2.0], [0.6, 0.8]]
    >>> local_least_squares(X, y, [0, 2, 3], method="ridge", ridge=1.0).round(6).tolist()
    [[0.333333, 0.666667], [0.576923, 0.769231]]
    """
    X, y, offsets = _check_stacked(X, y, offsets)
    check_choice("method", method, LEAST_SQUARES_METHODS)
    if ridge is not None:
        if method != "ridge":
            raise ValueError(f"ridge is only used with method='ridge', got method={method!r} and ridge={ridge!r}")
        ridge = check_real("ridge", ridge, low=0.0, low_inclusive=False)
    m, d = offsets.size - 1, X.shape[1]
    out = np.empty((m, d))
    if method == "min_norm":
        _min_norm_least_squares(X, y, offsets, out)
        return out
    for n, clients, rows in size_groups(offsets):
        Xg, yg = X[rows], y[rows]  # (c, n, d), (c, n)
        if ridge is None:
            lam = DEFAULT_RELATIVE_RIDGE * (Xg**2).sum(axis=(1, 2)) / (n * d)
            lam = np.where(lam > 0, lam, DEFAULT_RELATIVE_RIDGE)  # an all-zero client: w = 0
        else:
            lam = np.full(clients.size, ridge)
        if n < d:  # dual form: w = X^T (X X^T / n + lam I)^-1 y / n
            G = np.matmul(Xg, Xg.transpose(0, 2, 1)) / n
            G[:, np.arange(n), np.arange(n)] += lam[:, None]
            alpha = np.linalg.solve(G, yg[:, :, None])
            out[clients] = np.matmul(Xg.transpose(0, 2, 1), alpha)[:, :, 0] / n
        else:
            A = np.matmul(Xg.transpose(0, 2, 1), Xg) / n
            A[:, np.arange(d), np.arange(d)] += lam[:, None]
            b = np.matmul(Xg.transpose(0, 2, 1), yg[:, :, None]) / n
            out[clients] = np.linalg.solve(A, b)[:, :, 0]
    return out


def _segments(starts, lengths):
    """The ranges ``starts[j]:starts[j] + lengths[j]`` one after the other (int64)."""
    ends = np.cumsum(lengths)
    return np.repeat(starts - (ends - lengths), lengths) + np.arange(int(ends[-1]) if ends.size else 0)


class ClientGrams:
    """Minimum-norm least squares on many subsets of the clients' rows, each client's Gram
    matrix computed once.

    A clustering that refits a model on every (client, local group) over and over (k-FED's local
    Lloyd steps, :mod:`mixreg.algorithms.kfed`, run for many restarts) would otherwise copy the
    rows of every group and form their Gram matrix on each refit.  Here the Gram
    :math:`G_i = X_i X_i^\\top` of every client with :math:`n_i \\le d` is formed once, and a
    subset :math:`S` of the client's rows is solved from the submatrix :math:`G_i[S, S]`:

    .. math::

        \\hat\\theta_S = X_S^{+} y_S = X_S^\\top (X_S X_S^\\top)^{-1} y_S ,

    certified as :func:`local_least_squares` certifies (:data:`MIN_NORM_GRAM_COND`) and solved by
    a Cholesky factorisation for :math:`\\alpha = (X_S X_S^\\top)^{-1} y_S`; the estimate
    :math:`X_S^\\top \\alpha` is summed over the block's rows in order, so no row is copied
    (:meth:`dual` returns the coefficients :math:`\\alpha` instead, and :meth:`predict_dual`
    predicts with them through the Grams).  A subset that is not
    certified, or of a client with :math:`n_i > d` (no Gram kept: it could be larger than the
    client's rows), is solved by :func:`local_least_squares` on its own rows, bit for bit as
    there.  The certified ones agree with :func:`local_least_squares` on the same rows to
    rounding (the products are formed in another order), not to the last bit.

    The certificate is taken once per client where it can be: when the client's whole Gram is
    certified, :math:`\\kappa(X_i) \\le \\kappa_{max}` up to 1%, every subset of its rows
    is too, because :math:`G_i[S, S]` is a principal submatrix of :math:`G_i` and its eigenvalues
    lie between :math:`G_i`'s extreme ones (Cauchy's interlacing theorem), so
    :math:`\\kappa(X_S) \\le \\kappa(X_i)`.  A block of a client that is not certified (a
    repeated row, say) is certified on its own.

    Parameters
    ----------
    X : array of shape (N, d)
    y : array of shape (N,)
    offsets : int array of shape (m + 1,)
        The clients' rows, as everywhere in this module.

    Examples
    --------
    >>> X = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    >>> grams = ClientGrams(X, np.array([1.0, 2.0, 3.0]), [0, 3])
    >>> order, present, blocks = grouped_rows(np.array([1, 0, 1]), 2)  # rows {1} and {0, 2}
    >>> grams.min_norm(order, blocks).tolist()
    [[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]]
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, offsets: np.ndarray) -> None:
        self.X, self.y, self.offsets = _check_stacked(X, y, offsets)
        self._setup()

    @classmethod
    def _trusted(cls, X, y, offsets):
        """Without validation (float64 ``X``, ``y`` and int64 ``offsets`` of this module's layout)."""
        self = cls.__new__(cls)
        self.X, self.y, self.offsets = X, y, offsets
        self._setup()
        return self

    def _setup(self):
        X, offsets = self.X, self.offsets
        d = X.shape[1]
        self.sizes = sizes = np.diff(offsets)
        self.client_of_row = np.repeat(np.arange(sizes.size), sizes)
        self.starts = np.full(sizes.size, -1, dtype=np.int64)  # of each client's Gram in `flat`
        kept = np.flatnonzero(sizes <= d)
        kept = kept[np.argsort(sizes[kept], kind="stable")]  # the Grams of one size side by side
        self.starts[kept] = np.concatenate([[0], np.cumsum(sizes[kept] ** 2)[:-1]]) if kept.size else kept
        self.flat = np.empty(int(np.sum(sizes[kept] ** 2)))
        self.certified = np.zeros(sizes.size, dtype=np.bool_)  # kappa(X_i) <= MIN_NORM_GRAM_COND, proved
        for n in np.unique(sizes[kept]):
            clients = kept[sizes[kept] == n]
            Xg, _ = client_blocks(X, self.y, offsets, int(n), clients)
            with np.errstate(over="ignore", invalid="ignore"):  # such Grams are not certified
                np.matmul(Xg, Xg.transpose(0, 2, 1), out=self._grams(int(n), clients))
            good = np.empty(clients.size, dtype=np.bool_)
            certify_grams(self.flat, self.starts[clients], int(n), d, MIN_NORM_GRAM_COND, good)
            self.certified[clients] = good

    def _grams(self, n, clients):
        """The Grams ``(c, n, n)`` of all the clients of size ``n <= d`` (ascending), a view."""
        lo = self.starts[clients[0]]
        return self.flat[lo:lo + clients.size * n * n].reshape(clients.size, n, n)

    def _blocks_checked(self, order, block_offsets):
        """``(order, boff, bclient)`` validated: int64 arrays and the client of every block."""
        N = self.X.shape[0]
        order = np.asarray(order)
        boff = np.asarray(block_offsets)
        if order.ndim != 1 or order.dtype.kind not in "iu" or (order.size and (order.min() < 0 or order.max() >= N)):
            raise ValueError(f"order must be a 1-D integer array of row indices in [0, N) = [0, {N})")
        if (boff.ndim != 1 or boff.size < 2 or boff.dtype.kind not in "iu" or boff[0] != 0
                or boff[-1] != order.size or np.any(np.diff(boff) < 1)):
            raise ValueError(f"block_offsets must be a strictly increasing integer array from 0 to len(order) = "
                             f"{order.size}")
        order, boff = order.astype(np.int64), boff.astype(np.int64)
        client = self.client_of_row[order]
        if np.any(np.minimum.reduceat(client, boff[:-1]) != np.maximum.reduceat(client, boff[:-1])):
            raise ValueError("every block's rows must belong to one client (offsets)")
        return order, boff, client[boff[:-1]]

    def min_norm(self, order: ArrayLike, block_offsets: ArrayLike) -> np.ndarray:
        """:math:`X_S^+ y_S` of every block ``S = order[block_offsets[j]:block_offsets[j + 1]]``.

        Parameters
        ----------
        order : int array of shape (L,)
            Row indices; each block's rows must belong to one client (as :func:`grouped_rows`
            gives for keys that refine the clients).
        block_offsets : int array of shape (g + 1,)
            Strictly increasing, from 0 to ``L``.

        Returns
        -------
        theta : ndarray of shape (g, d), float64
        """
        return self._min_norm(*self._blocks_checked(order, block_offsets))

    def dual(self, order: ArrayLike, block_offsets: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The blocks' minimum-norm solutions, the certified ones as coefficients on their rows.

        Parameters are those of :meth:`min_norm`.

        Returns
        -------
        alpha : ndarray of shape (L,), float64
            For a block solved through its Gram (``dual``), the coefficients of its estimate
            :math:`X_S^\\top \\alpha_S` on its rows (position ``s`` is row ``order[s]``); 0 for
            the other blocks.
        theta : ndarray of shape (g, d), float64
            The estimates of the other blocks (:func:`local_least_squares` on their rows); 0 for
            the dual ones.
        dual : bool ndarray of shape (g,)
        """
        return self._dual(*self._blocks_checked(order, block_offsets))

    def predict_dual(self, A: ArrayLike) -> np.ndarray:
        """Predictions on every client's rows of the models :math:`X_i^\\top a` of its rows.

        Parameters
        ----------
        A : array of shape (K, N)
            ``K`` coefficient vectors over all rows; on client ``i``'s rows, vector ``a`` stands
            for the model :math:`X_i^\\top a_i` (as ``alpha`` of :meth:`dual`, with the
            coefficients of one block per client).

        Returns
        -------
        P : ndarray of shape (K, N), float64
            ``P[:, rows_i] = A[:, rows_i] G_i`` (:math:`X_i X_i^\\top a_i` for each vector),
            through the kept Gram; ``(A_i X_i) X_i^T`` for a client with ``n_i > d``.
        """
        A = check_array("A", A, ndim=2, dtype=np.float64)
        if A.shape[1] != self.X.shape[0]:
            raise ValueError(f"A must have shape (K, N) with N = {self.X.shape[0]}, got {A.shape}")
        return self._predict_dual(A)

    def _predict_dual(self, A):
        X, offsets, sizes = self.X, self.offsets, self.sizes
        P = np.empty(A.shape)
        for n in np.unique(sizes):
            clients = np.flatnonzero(sizes == n)
            rows = offsets[clients][:, None] + np.arange(int(n))  # (c, n)
            Ai = A[:, rows].transpose(1, 0, 2)  # (c, K, n)
            if self.starts[clients[0]] >= 0:
                P[:, rows] = np.matmul(Ai, self._grams(int(n), clients)).transpose(1, 0, 2)
            else:
                Xg, _ = client_blocks(X, self.y, offsets, int(n), clients)
                P[:, rows] = np.matmul(np.matmul(Ai, Xg), Xg.transpose(0, 2, 1)).transpose(1, 0, 2)
        return P

    def _dual(self, order, boff, bclient):
        """:meth:`dual` without validation; ``bclient`` the client of every block."""
        y, offsets, d = self.y, self.offsets, self.X.shape[1]
        sizes = np.diff(boff)
        alpha = np.zeros(order.size)
        theta = np.zeros((sizes.size, d))
        dual = np.zeros(sizes.size, dtype=np.bool_)
        kept = self.starts[bclient] >= 0
        trusted = self.certified[bclient]
        for p in np.unique(sizes[kept]):
            for certify in (False, True):  # blocks of a certified client are certified by it
                blocks = np.flatnonzero(kept & (sizes == p) & (trusted != certify))
                if not blocks.size:
                    continue
                blocks = blocks[np.argsort(bclient[blocks], kind="stable")]  # a client's Gram stays in cache
                pos = boff[blocks][:, None] + np.arange(int(p))
                rows = order[pos]
                cl = bclient[blocks]
                a = np.empty((blocks.size, int(p)))
                ok = np.empty(blocks.size, dtype=np.bool_)
                gram_subsets_solve(self.flat, self.starts[cl], self.sizes[cl], rows - offsets[cl][:, None], y[rows],
                                   d, MIN_NORM_GRAM_COND, certify, a, ok)
                alpha[pos[ok]] = a[ok]
                dual[blocks[ok]] = True
        self._solve_rows(order, boff, np.flatnonzero(~dual), theta)
        return alpha, theta, dual

    def _solve_rows(self, order, boff, rest, theta):
        """``theta[rest]``: :func:`local_least_squares` on the rows of each of the blocks ``rest``,
        bit for bit."""
        if rest.size:
            lengths = np.diff(boff)[rest]
            rows = order[_segments(boff[rest], lengths)]
            out = np.empty((rest.size, self.X.shape[1]))
            _min_norm_least_squares(self.X[rows], self.y[rows], np.concatenate([[0], np.cumsum(lengths)]), out)
            theta[rest] = out

    def _client_rows(self, clients):
        """The rows of ``clients`` (repeats allowed), one client after the other."""
        return _segments(self.offsets[clients], self.sizes[clients])

    def _min_norm(self, order, boff, bclient):
        """:meth:`min_norm` without validation; ``bclient`` the client of every block."""
        alpha, theta, dual = self._dual(order, boff, bclient)
        blocks = np.flatnonzero(dual)
        blocks = blocks[np.argsort(bclient[blocks], kind="stable")]  # a client's rows stay in cache
        combined = np.empty((blocks.size, self.X.shape[1]))
        fine = np.empty(blocks.size, dtype=np.bool_)
        combine_rows(self.X, order, boff, alpha, blocks, combined, fine)
        theta[blocks[fine]] = combined[fine]
        self._solve_rows(order, boff, blocks[~fine], theta)  # an estimate that overflowed
        return theta

# --------------------------------------------------------------------------------------------
# Local solvers as linear operators (used by mixreg.algorithms.fedx)
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


def local_update_operator(X: np.ndarray, step_size: float, local_solver: str = "fedavg",
                          local_steps: int = 1) -> np.ndarray:
    """The matrix :math:`K` with local model :math:`\\theta^{(i)} = \\theta + K (y - X \\theta)`.

    For the squared loss both local solvers are affine in the broadcast model :math:`\\theta`:

    .. math::

        K_{\\text{FedAvg}(s)} = \\frac{\\eta}{n} \\sum_{j=0}^{s-1} (I - \\eta H)^j X^\\top,
        \\qquad
        K_{\\text{FedProx}} = \\eta X^\\top (n I + \\eta X X^\\top)^{-1}
        = (H + I/\\eta)^{-1} X^\\top / n,

    with :math:`H = X^\\top X / n` (unrolling ``s`` gradient steps; the closed form of the
    proximal step).

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

    See Also
    --------
    gradient_steps, proximal_step : the same updates applied directly.

    Examples
    --------
    >>> x = np.array([[2.0, 0.0]])  # one point: H = diag(4, 0)
    >>> local_update_operator(x, 0.25, "fedavg", 2).tolist()  # 0.25 (I + (I - 0.25 H)) x^T
    [[0.5], [0.0]]
    >>> local_update_operator(x, 0.5, "fedprox").tolist()  # 0.5 x^T / (1 + 0.5 * 4)
    [[0.3333333333333333], [0.0]]
    """
    X = check_array("X", X, ndim=2, dtype=np.float64)
    eta, solver, s = check_solver(step_size, local_solver, local_steps)
    return _operators_transposed(X[None], float(eta), solver, s)[0].T


def check_solver(step_size: float | ArrayLike, local_solver: str, local_steps: int) -> tuple[np.ndarray, str, int]:
    """Validated ``(eta, local_solver, s)``: ``eta`` finite and > 0 (array), ``s = 1`` for FedProx."""
    eta = np.asarray(step_size, dtype=np.float64)
    if not np.all(np.isfinite(eta)) or np.any(eta <= 0):
        raise ValueError(f"step_size must be finite and > 0, got {np.asarray(step_size).tolist()}")
    check_choice("local_solver", local_solver, LOCAL_SOLVERS)
    s = check_int("local_steps", local_steps, low=1)
    return eta, local_solver, (s if local_solver == "fedavg" else 1)


def stacked_update_operators(problem: Problem, step_size: float, local_solver: str = "fedavg", local_steps: int = 1, *,
                             weighted: bool = True) -> np.ndarray:
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

    Examples
    --------
    >>> from mixreg.problems import make_problem_from_parameters
    >>> pb = make_problem_from_parameters(np.eye(2), np.array([0, 1, 1]), np.array([1, 3, 3]), 0.1,
    ...                                   rng=np.random.default_rng(0))
    >>> stacked_update_operators(pb, 0.1, "fedprox").shape
    (7, 2)
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a mixreg Problem, got {type(problem).__name__}")
    eta, solver, s = check_solver(step_size, local_solver, local_steps)
    if eta.ndim != 0:
        raise ValueError(f"step_size must be a scalar here, got shape {eta.shape}")
    KT = stacked_operators(problem.X, problem.offsets, float(eta), solver, s)
    if weighted:
        sizes = problem.sizes
        KT *= np.repeat(sizes / problem.N, sizes)[:, None]
    return KT


def stacked_operators(X: np.ndarray, offsets: np.ndarray, step_size: float | np.ndarray, local_solver: str,
                      local_steps: int) -> np.ndarray:
    """Unweighted :math:`K_i^\\top` of the clients ``offsets[i]:offsets[i+1]`` of ``X``, stacked
    like the rows (arguments already valid; see :func:`stacked_update_operators`).

    Returns
    -------
    KT : ndarray of shape (N, d), float64
    """
    if local_solver == "fedavg" and local_steps == 1:  # K_i^T = (eta / n_i) X_i: a row scaling, no copies
        scale = np.float64(step_size) / np.diff(offsets).astype(np.float64)
        return np.repeat(scale, np.diff(offsets))[:, None] * X.astype(np.float64, copy=False)
    KT = np.empty(X.shape, dtype=np.float64)
    for _, _, rows in size_groups(offsets):
        KT[rows] = _operators_transposed(X[rows].astype(np.float64), float(step_size), local_solver, local_steps)
    return KT
