"""Numba and BLAS kernels shared by the algorithm drivers.

Conventions (the drivers guarantee them; kernels trust their inputs):

* ``B`` replicas share one data set; parameters are ``theta`` of shape ``(B, k, d)``.
* Stacked data ``X`` of shape ``(N, d)``, ``y`` of shape ``(N,)`` and client ``i`` owning rows
  ``offsets[i]:offsets[i+1]``.
* Predictions of all replicas and clusters come from one GEMM, ``P = theta.reshape(B*k, d) @ X.T``
  of shape ``(B*k, N)``: row ``b*k + j`` holds ``<x_r, theta_{b,j}>`` for every sample ``r``.
* Per-client work on ``B`` columns lives in a *client-major* flat buffer of length ``B*N``: client
  ``i``'s block starts at ``B*offsets[i]`` and is a ``(B, n_i)`` row-major matrix.  With equal
  ``n_i`` the buffer is simply an ``(m, B, n)`` array, so per-client products are one batched
  ``matmul``.
* Assignments are int64 arrays of shape ``(B, m)``; ``-1`` marks a client that did not take part
  in the round.

The Numba kernels are serial on purpose: they are light, memory-bound passes (``O(N B k)``
against the GEMMs' ``O(N d B k)``), and running them on Numba's thread pool right after an
OpenBLAS call made them several times *slower* on 2 cores, because OpenBLAS's threads keep
spinning after a GEMM (measured: 3.8 s against 0.57 s for 300 rounds at m = n = 50, d = 100,
B = 30).  Serial kernels also sum in one fixed order, so their results never depend on a thread
count.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._gram_kernels import LANES, certify_grams, combine_rows, gram_guard, gram_subsets_solve

__all__ = [
    "predict",
    "client_losses",
    "argmin_skip_nan",
    "beats",
    "assign_clients",
    "decode_clients",
    "decode_and_residuals",
    "weighted_residuals",
    "selected_residuals",
    "gather_selected",
    "gather_predictions",
    "column_step",
    "client_gradients",
    "LocalStepGrams",
    "cluster_gradients",
    "ClientBlocks",
    "client_predictions",
    "client_transposed",
    "scatter_add",
    "scatter_accumulate",
    "cluster_average",
    "stepped_cluster_average",
    "equal_sizes",
    "ClientLayout",
    "LANES",
    "gram_guard",
    "gram_subsets_solve",
    "certify_grams",
    "combine_rows",
]


def predict(theta: np.ndarray, X: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``P = theta.reshape(B*k, d) @ X.T`` of shape ``(B*k, N)`` (one GEMM)."""
    B, k, d = theta.shape
    return np.matmul(theta.reshape(B * k, d), X.T, out=out)


@njit(cache=True)
def client_losses(P, Y, group, offsets, B, k, out):
    """Mean squared loss of every client under every model.

    ``out[b, i, j] = (1/n_i) sum_{r in client i} (P[b*k + j, r] - y[r])^2`` (IFCA's ``F_i``, a
    per-client mean as in the official code's ``MSELoss``) with ``y = Y[group[b]]``: replica
    ``b``'s responses (``Y`` of shape (G, N): one draw of ``X`` at G noise levels; one response
    vector is ``Y = y[None]``, ``group = 0``).  Accumulates in float64.
    """
    m = offsets.shape[0] - 1
    for b in range(B):
        y = Y[group[b]]
        for j in range(k):
            row = P[b * k + j]
            for i in range(m):
                lo = offsets[i]
                hi = offsets[i + 1]
                s = 0.0
                for r in range(lo, hi):
                    e = np.float64(row[r]) - np.float64(y[r])
                    s += e * e
                out[b, i, j] = s / (hi - lo)


@njit(cache=True, inline="always")
def beats(w, v):
    """``True`` when a value ``w`` met later replaces the best so far ``v`` in
    :func:`argmin_skip_nan`'s rule: strictly smaller, or a number against ``nan``.

    A boolean expression, not branches, so that a loop of it compiles to selects (a decoder's
    choices are as good as random, and a mispredicted branch per value cost point-level IFCA's
    labelling over half its time).
    """
    return (w < v) | ((v != v) & (w == w))


@njit(cache=True, inline="always")
def argmin_skip_nan(values):
    """Index of the smallest of ``values`` (1-D): ties to the lowest index, ``nan`` skipped.

    The one argmin rule of every decoder (IFCA's identity estimate, the ML decoder of FedX, the
    assignment steps of the clustering baselines): strict comparison, so the lowest index wins a
    tie; a ``nan`` entry never wins against a number; all ``nan`` gives 0 (:func:`beats`).
    """
    a = 0
    v = values[0]
    for j in range(1, values.shape[0]):
        w = values[j]
        take = beats(w, v)
        a = j if take else a
        v = w if take else v
    return a


@njit(cache=True)
def assign_clients(losses, active, assign, best):
    """Cluster identity estimate ``argmin_j losses[b, i, j]``, ties to the lowest index.

    Inactive clients (``active[i] == False``) get ``-1``.  ``best[b, i]`` receives the minimum
    loss (``nan`` if every loss is ``nan``, in which case the assignment is 0); the rule is
    :func:`argmin_skip_nan`.
    """
    B, m, k = losses.shape
    for b in range(B):
        for i in range(m):
            if not active[i]:
                assign[b, i] = -1
                best[b, i] = np.nan
                continue
            a = argmin_skip_nan(losses[b, i])
            assign[b, i] = a
            best[b, i] = losses[b, i, a]


@njit(cache=True)
def weighted_residuals(P, Y, group, offsets, assign, k, weights, out):
    """Client-major residuals of the assigned model, scaled per client.

    ``out`` block of client ``i`` (shape ``(B, n_i)`` at ``B*offsets[i]``) holds
    ``weights[i] * (P[b*k + a, r] - y[r])`` with ``a = assign[b, i]`` and ``y = Y[group[b]]``
    (see :func:`client_losses`), or 0 if ``a < 0``.
    """
    B = assign.shape[0]
    m = offsets.shape[0] - 1
    for i in range(m):
        lo = offsets[i]
        n = offsets[i + 1] - lo
        base = B * lo
        w = weights[i]
        for b in range(B):
            a = assign[b, i]
            o = base + b * n
            if a < 0:
                for r in range(n):
                    out[o + r] = 0.0
            else:
                row = P[b * k + a]
                y = Y[group[b]]
                for r in range(n):
                    out[o + r] = w * (row[lo + r] - y[lo + r])


@njit(cache=True)
def selected_residuals(Q, y, offsets, assign, weights, out):
    """In place on client-major predictions ``Q`` of each client's own model.

    ``out = weights[i] * (Q - y)`` per client block, 0 where ``assign[b, i] < 0``.  ``Q`` and
    ``out`` may be the same buffer.
    """
    B = assign.shape[0]
    m = offsets.shape[0] - 1
    for i in range(m):
        lo = offsets[i]
        n = offsets[i + 1] - lo
        base = B * lo
        w = weights[i]
        for b in range(B):
            o = base + b * n
            if assign[b, i] < 0:
                for r in range(n):
                    out[o + r] = 0.0
            else:
                for r in range(n):
                    out[o + r] = w * (Q[o + r] - y[lo + r])


@njit(cache=True)
def column_step(local, step, G):
    """``local[i, c] -= step[c] * G[i, c]`` in place on ``local`` (m, C, d), one pass.

    ``step`` (C,) of a type that keeps ``G``'s dtype in the product (the same dtype, say): each
    product is rounded to that dtype, then subtracted, as NumPy's ``local -= step[None, :, None] *
    G`` does, without its temporary.
    """
    m, C, d = local.shape
    for i in range(m):
        for c in range(C):
            s = step[c]
            for j in range(d):
                local[i, c, j] -= s * G[i, c, j]


@njit(cache=True)
def gather_selected(theta, assign, out):
    """``out[i, b] = theta[b, assign[b, i]]`` (model 0 for inactive clients)."""
    B, k, d = theta.shape
    m = assign.shape[1]
    for i in range(m):
        for b in range(B):
            a = assign[b, i]
            if a < 0:
                a = 0
            for c in range(d):
                out[i, b, c] = theta[b, a, c]


@njit(cache=True)
def gather_predictions(P, offsets, assign, out):
    """Client-major predictions of each client's selected model, taken from the predictions of
    every model: ``out[B * lo + b * n_i + r] = P[b * k + assign[b, i], lo + r]`` for client ``i``'s
    rows ``lo + r`` (model 0 for inactive clients, as :func:`gather_selected`).

    ``P`` is :func:`predict`'s ``(B k, N)``; ``out`` the ``(B N,)`` layout of
    :func:`client_predictions`, whose values it replaces by those of the product of all rows
    (the same up to rounding: the two products round differently).
    """
    B, m = assign.shape
    k = P.shape[0] // B
    for i in range(m):
        lo = offsets[i]
        n = offsets[i + 1] - lo
        for b in range(B):
            a = assign[b, i]
            if a < 0:
                a = 0
            row = b * k + a
            base = B * lo + b * n
            for r in range(n):
                out[base + r] = P[row, lo + r]


def scatter_add(C: np.ndarray, assign: np.ndarray, out: np.ndarray) -> None:
    """``out[b, j] = sum_{i : assign[b, i] = j} C[i, b]`` (clients summed in index order)."""
    out[...] = 0.0
    scatter_accumulate(C, assign, out)


@njit(cache=True)
def scatter_accumulate(C, assign, out):
    """``out[b, j] += sum_{i : assign[b, i] = j} C[i, b]``, the clients added one at a time in index
    order: calls on consecutive blocks of clients, in block order, sum exactly as one call on all."""
    m, B, d = C.shape
    for b in range(B):
        for i in range(m):
            a = assign[b, i]
            if a >= 0:
                for c in range(d):
                    out[b, a, c] += C[i, b, c]


@njit(cache=True)
def cluster_average(local, assign, theta):
    """IFCA option II server step, in place on ``theta`` (B, k, d).

    ``theta[b, j] = mean of local[i, b]`` over clients with ``assign[b, i] = j``; a cluster that no
    client chose keeps its parameters (official code behaviour).
    """
    m, B, d = local.shape
    k = theta.shape[1]
    acc = np.zeros((B, k, d))
    cnt = np.zeros((B, k), dtype=np.int64)
    for b in range(B):
        for i in range(m):
            a = assign[b, i]
            if a >= 0:
                cnt[b, a] += 1
                for c in range(d):
                    acc[b, a, c] += local[i, b, c]
        for j in range(k):
            if cnt[b, j] > 0:
                for c in range(d):
                    theta[b, j, c] = acc[b, j, c] / cnt[b, j]


@njit(cache=True)
def stepped_cluster_average(start, step, G, assign, theta):
    """IFCA option II's server step straight from the clients' last local gradients, in place on
    ``theta`` (B, k, d).

    ``theta[b, j] = mean of (start[b, j] - step[b] * G[i, b])`` over the clients with
    ``assign[b, i] = j``, where ``start`` (B, k, d) holds the models the clients started from and
    ``G`` (m, B, d) their gradients (for unrolled local steps, the sum
    :meth:`LocalStepGrams.unrolled_gradients` gives); ``step`` (B,) in ``G``'s dtype.  A cluster
    that no client chose keeps its parameters (``theta`` is their source then).

    Bit for bit :func:`gather_selected` of ``start``, :func:`column_step` and
    :func:`cluster_average`, without their ``(m, B, d)`` local models: each local model is the
    same ``start - step * G`` rounded to the dtype before it is added (in float64, the clients in
    index order), and the mean is the same division.
    """
    m, B, d = G.shape
    k = theta.shape[1]
    acc = np.zeros((B, k, d))
    cnt = np.zeros((B, k), dtype=np.int64)
    for b in range(B):
        s = step[b]
        for i in range(m):
            a = assign[b, i]
            if a >= 0:
                cnt[b, a] += 1
                w, g, out = start[b, a], G[i, b], acc[b, a]
                for c in range(d):
                    out[c] += w[c] - s * g[c]
        for j in range(k):
            if cnt[b, j] > 0:
                for c in range(d):
                    theta[b, j, c] = acc[b, j, c] / cnt[b, j]


def equal_sizes(offsets: np.ndarray) -> int | None:
    """The common client size if all clients have the same number of rows, else ``None``."""
    sizes = np.diff(offsets)
    return int(sizes[0]) if sizes.size and np.all(sizes == sizes[0]) else None


class ClientLayout:
    """How the per-client products of one data layout are computed.

    Equal client sizes: one batched GEMM.  Unequal sizes: clients whose product is so small that
    a BLAS call would be mostly call overhead (``n_i d B <= small_work``, e.g. the one- and
    two-point clients of heavy-tailed size laws) go to a Numba loop; the others get one BLAS
    call each.  ``per_client=True`` takes the unequal sizes' way even when the sizes are equal (a
    block of clients of a layout with unequal sizes, whose clients must be computed as there).
    """

    def __init__(self, offsets: np.ndarray, d: int, B: int, small_work: int = 16384, per_client: bool = False) -> None:
        self.offsets = offsets
        self.n_equal = None if per_client else equal_sizes(offsets)
        sizes = np.diff(offsets)
        if self.n_equal is None:
            small = sizes * d * B <= small_work
            self.small = np.flatnonzero(small).astype(np.int64)
            self.large = np.flatnonzero(~small).astype(np.int64)
        else:
            self.small = self.large = np.empty(0, dtype=np.int64)


@njit(cache=True)
def _small_client_gradients(R, X, offsets, clients, out):
    B = out.shape[1]
    d = X.shape[1]
    for ii in range(clients.shape[0]):
        i = clients[ii]
        lo = offsets[i]
        n = offsets[i + 1] - lo
        base = B * lo
        for b in range(B):
            for c in range(d):
                out[i, b, c] = 0.0
            for r in range(n):
                w = R[base + b * n + r]
                for c in range(d):
                    out[i, b, c] += w * X[lo + r, c]


@njit(cache=True)
def _small_client_predictions(theta_sel, X, offsets, clients, out):
    B = theta_sel.shape[1]
    d = X.shape[1]
    for ii in range(clients.shape[0]):
        i = clients[ii]
        lo = offsets[i]
        n = offsets[i + 1] - lo
        base = B * lo
        for b in range(B):
            for r in range(n):
                s = 0.0
                for c in range(d):
                    s += theta_sel[i, b, c] * X[lo + r, c]
                out[base + b * n + r] = s


def client_gradients(R: np.ndarray, X: np.ndarray, layout: ClientLayout, out: np.ndarray) -> np.ndarray:
    """Per-client products ``out[i] = R_i @ X_i`` of shape ``(m, B, d)``.

    ``R`` is a client-major buffer (block ``(B, n_i)`` per client) and ``layout`` a
    :class:`ClientLayout` of the same offsets.  Costs ``2 N d B`` flops, the minimum for one
    gradient per replica.
    """
    m, B, d = out.shape
    offsets = layout.offsets
    if layout.n_equal is not None:
        n = layout.n_equal
        np.matmul(R.reshape(m, B, n), X.reshape(m, n, d), out=out)
        return out
    _small_client_gradients(R, X, offsets, layout.small, out)
    for i in layout.large:
        lo, hi = offsets[i], offsets[i + 1]
        np.matmul(R[B * lo : B * hi].reshape(B, hi - lo), X[lo:hi], out=out[i])
    return out


@njit(cache=True)
def _unrolled_step(S, R, T, coef, clients, bases, widths, C):
    """``S = R + (S - coef[i, c] T)`` on the blocks ``(C, widths[i])`` at ``bases[i]`` of the flat
    arrays ``S`` (IN/OUT), ``R`` and ``T``, for the ``clients`` listed; one pass, in this order."""
    for ii in range(clients.shape[0]):
        i = clients[ii]
        q = widths[i]
        for c in range(C):
            a = coef[i, c]
            o = bases[i] + c * q
            for r in range(q):
                S[o + r] = R[o + r] + (S[o + r] - a * T[o + r])


class LocalStepGrams:
    r"""Every client's Gram matrix, to unroll local gradient steps into one gradient product.

    ``s`` full-batch gradient steps of the squared loss from :math:`w_0`, with step
    :math:`\eta` and row weight :math:`\omega_i` (:math:`w \leftarrow w - \eta X_i^\top
    \omega_i (X_i w - y_i)`), are affine in :math:`w_0`:

    .. math::

        w_s = w_0 - \eta \sum_{j=0}^{s-1} X_i^\top (I - c\, X_i X_i^\top)^j r
            = w_0 - \eta \sum_{j=0}^{s-1} (I - c\, X_i^\top X_i)^j X_i^\top r,
        \qquad r = \omega_i (X_i w_0 - y_i),\ c = \eta\, \omega_i,

    so they need the first step's residuals, ``s - 1`` products with a Gram matrix and one
    gradient product, instead of ``s`` predictions and ``s`` gradients (``4 s n_i d`` flops per
    column).  A client with ``n_i <= d`` rows keeps :math:`X_i X_i^\top` (``n_i x n_i``; the
    first form, ``2 n_i^2`` flops per column and step), a larger one :math:`X_i^\top X_i`
    (``d x d``; the second form, ``2 d^2``): never more memory than ``X`` (``N d`` values).  The
    matrices are computed in float64 and stored in ``X``'s dtype.  Each product is one BLAS call
    per client (one batched call for equal sizes), the sums a Numba pass in a fixed order
    (``_unrolled_step``), so the result is a deterministic function of the inputs; it rounds
    otherwise than the ``s`` steps one after the other (numerics change 4 of
    :data:`mixreg.provenance.NUMERIC_CHANGES`, IFCA's option II).

    Parameters
    ----------
    X : ndarray of shape (N, d)
    offsets : int64 array of shape (m + 1,)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X, y, offsets = rng.standard_normal((9, 3)), rng.standard_normal(9), np.array([0, 2, 9])
    >>> w0, eta, steps = rng.standard_normal((2, 1, 3)), 0.05, 4  # two clients, one column
    >>> omega = 1.0 / np.diff(offsets)  # the gradient of the per-client half mean
    >>> w = w0.copy()  # the steps one after the other
    >>> for _ in range(steps):
    ...     for i in range(2):
    ...         Xi, yi = X[offsets[i]:offsets[i + 1]], y[offsets[i]:offsets[i + 1]]
    ...         w[i, 0] -= eta * omega[i] * Xi.T @ (Xi @ w[i, 0] - yi)
    >>> R = np.concatenate([omega[i] * (X[offsets[i]:offsets[i + 1]] @ w0[i, 0] - y[offsets[i]:offsets[i + 1]])
    ...                     for i in range(2)])  # client-major, one column
    >>> G = LocalStepGrams(X, offsets).unrolled_gradients(R, X, ClientLayout(offsets, 3, 1), eta * omega[:, None],
    ...                                                 steps, np.empty((2, 1, 3)))
    >>> bool(np.allclose(w0 - eta * G, w))
    True
    """

    def __init__(self, X: np.ndarray, offsets: np.ndarray) -> None:
        d = X.shape[1]
        sizes = np.diff(offsets)
        m = sizes.shape[0]
        self.offsets = offsets
        self.widths = np.where(sizes <= d, sizes, d).astype(np.int64)  # the side of each Gram matrix
        self.rows = np.flatnonzero(sizes <= d).astype(np.int64)  # the first form's clients
        self.cols = np.flatnonzero(sizes > d).astype(np.int64)
        self.n_equal = equal_sizes(offsets)
        if self.n_equal is not None:  # one (m, q, q) array
            n = self.n_equal
            Xc = X.reshape(m, n, d).astype(np.float64, copy=False)
            gram = Xc @ Xc.transpose(0, 2, 1) if n <= d else Xc.transpose(0, 2, 1) @ Xc
            self.grams = gram.astype(X.dtype, copy=False)
        else:
            self.grams = []
            for i in range(m):
                Xi = X[offsets[i] : offsets[i + 1]].astype(np.float64, copy=False)
                self.grams.append((Xi @ Xi.T if sizes[i] <= d else Xi.T @ Xi).astype(X.dtype, copy=False))

    def unrolled_gradients(self, R: np.ndarray, X: np.ndarray, layout: ClientLayout, coef: np.ndarray, n_steps: int,
                           out: np.ndarray) -> np.ndarray:
        r"""``out[i, c]`` :math:`= \sum_{j<s} (I - c_{ic} X_i^\top X_i)^j X_i^\top r_{ic}`: what
        ``s = n_steps`` local gradient steps subtract from column ``c``'s model, divided by its step.

        Parameters
        ----------
        R : ndarray of shape (C N,)
            The first step's weighted residuals :math:`r`, client-major (not modified).
        X : ndarray of shape (N, d)
            The data the matrices were computed from.
        layout : ClientLayout
            The clients' rows, for ``C`` columns.
        coef : ndarray of shape (m, C)
            :math:`c_{ic} = \eta_c \omega_i`, in ``X``'s dtype.
        n_steps : int >= 1
        out : ndarray of shape (m, C, d)
            OUT.

        Returns
        -------
        out
            With one step, :func:`client_gradients` of ``R`` (bit for bit).
        """
        m, C, d = out.shape
        offsets = self.offsets
        if n_steps == 1:
            return client_gradients(R, X, layout, out)
        rows, cols = self.rows, self.cols
        if rows.size:  # the first form, in the residuals' layout: S = sum_j (I - c X X^T)^j r
            S, T = R.copy(), np.empty_like(R)
            bases = C * offsets[:-1]
            for _ in range(n_steps - 1):
                self._products(S, T, rows, bases, C)
                _unrolled_step(S, R, T, coef, rows, bases, self.widths, C)
            R = S  # the second form's clients' blocks are still r
        client_gradients(R, X, layout, out)
        if cols.size:  # the second form, on the gradients: sum_j (I - c X^T X)^j X^T r
            flat = out.reshape(m * C * d)
            V, T = flat.copy(), np.empty_like(flat)
            bases = C * d * np.arange(m, dtype=np.int64)
            for _ in range(n_steps - 1):
                self._products(flat, T, cols, bases, C)
                _unrolled_step(flat, V, T, coef, cols, bases, self.widths, C)
        return out

    def _products(self, S, T, clients, bases, C):
        """``T_i = S_i @ G_i`` for the ``clients`` (blocks ``(C, q_i)`` at ``bases[i]``; the Gram
        matrices are symmetric, so this is ``(G_i S_i^T)^T``)."""
        if self.n_equal is not None:  # every client has the same form
            q = self.widths[0]
            m = self.widths.shape[0]
            np.matmul(S.reshape(m, C, q), self.grams, out=T.reshape(m, C, q))
            return
        for i in clients:
            q, lo = self.widths[i], bases[i]
            np.matmul(S[lo : lo + C * q].reshape(C, q), self.grams[i], out=T[lo : lo + C * q].reshape(C, q))


def client_transposed(X: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Every client's rows transposed, client-major: ``X_i^T`` (``(d, n_i)``, C order) at
    ``d * offsets[i]`` of a flat array of ``N d`` values, for :func:`client_predictions`' ``XT``.

    A copy of the data, made once per data layout (``N d`` values: as much memory as ``X``).

    Examples
    --------
    >>> X, offsets = np.arange(10.0).reshape(5, 2), np.array([0, 2, 5])
    >>> XT = client_transposed(X, offsets)
    >>> XT[:4].reshape(2, 2), XT[4:].reshape(2, 3)
    (array([[0., 2.],
           [1., 3.]]), array([[4., 6., 8.],
           [5., 7., 9.]]))
    """
    N, d = X.shape
    n = equal_sizes(offsets)
    if n:  # equal sizes: one transposing copy
        return np.ascontiguousarray(X.reshape(-1, n, d).transpose(0, 2, 1)).reshape(N * d)
    out = np.empty(N * d, dtype=X.dtype)
    for i in range(offsets.shape[0] - 1):
        lo, hi = offsets[i], offsets[i + 1]
        out[d * lo : d * hi].reshape(d, hi - lo)[...] = X[lo:hi].T
    return out


def client_predictions(theta_sel: np.ndarray, X: np.ndarray, layout: ClientLayout, out: np.ndarray,
                       XT: np.ndarray | None = None, clients: np.ndarray | None = None) -> np.ndarray:
    """Client-major predictions ``out_i = theta_sel[i] @ X_i.T`` (block ``(B, n_i)``).

    ``XT``, the :func:`client_transposed` copy of ``X``, makes each BLAS product a plain one
    (``theta_sel[i] @ XT_i``) instead of one with a transposed operand: 1.4x (float64) to 1.8x
    (float32) faster at ``(m, n, d, B) = (100, 50, 200, 30)`` with OpenBLAS's SkylakeX kernels,
    one thread (docs/benchmark.md).  The two forms may round differently (the library can pick
    another kernel for each: it does at that size, not at (100, 100, 1000, 30)), so a driver takes
    one of them for good; the drivers with local steps pass
    ``XT`` (registered as a numerics change, :data:`mixreg.provenance.NUMERIC_CHANGES`).  The
    clients small enough for the Numba loop (:class:`ClientLayout`) read ``X`` either way.

    ``clients`` (sorted indices) computes those clients' blocks only, bit for bit as the whole
    call computes them (each client's product is the same BLAS call on the same operands, and a
    row of a product does not depend on the other rows' values); the other blocks of ``out`` are
    left as they are.
    """
    m, B, d = theta_sel.shape
    offsets = layout.offsets
    if layout.n_equal is not None:
        n = layout.n_equal
        right = X.reshape(m, n, d).transpose(0, 2, 1) if XT is None else XT.reshape(m, d, n)
        blocks = out.reshape(m, B, n)
        if clients is None:
            np.matmul(theta_sel, right, out=blocks)
        else:  # the batched product's slices, one at a time
            for i in clients:
                np.matmul(theta_sel[i], right[i], out=blocks[i])
        return out
    small, large = layout.small, layout.large
    if clients is not None:
        small, large = np.intersect1d(small, clients), np.intersect1d(large, clients)
    _small_client_predictions(theta_sel, X, offsets, small, out)
    for i in large:
        lo, hi = offsets[i], offsets[i + 1]
        right = X[lo:hi].T if XT is None else XT[d * lo : d * hi].reshape(d, hi - lo)
        np.matmul(theta_sel[i], right, out=out[B * lo : B * hi].reshape(B, hi - lo))
    return out


#: Bytes of one block's per-client gradients in :func:`cluster_gradients`: of the order of a
#: core's L2 cache (1 MiB on the 2-core machine of docs/benchmark.md), so that each gradient
#: is added up while it is still in cache.  There, float32, d = 1000, one thread, this took the
#: residuals, gradients and sums of a round from 23 to 18 ms at (m, n, k, B) = (100, 100, 2, 120)
#: and from 33 to 25 ms at (400, 50, 2, 60) (with a trial running on the other core); 2 to 8
#: clients per block were equally fast, 16 and 32 slower.
BLOCK_BYTES = 2 ** 21


class ClientBlocks:
    """Consecutive clients in blocks for :func:`cluster_gradients`, with the blocks' buffers.

    Each block holds as many clients as keep its per-client gradients (``c x B x d``) within
    ``BLOCK_BYTES`` (one client at the least); ``blocks`` lists ``(i0, i1, lo, hi, offsets,
    layout)``: clients ``i0:i1``, their rows ``lo:hi``, the offsets within those rows and their
    :class:`ClientLayout`, which computes every client's product as the layout of all clients
    would (one batched product for equal sizes; otherwise per client, in the same small or large
    class, which depends on the client's own size only).
    """

    def __init__(self, offsets: np.ndarray, d: int, B: int, dtype: np.dtype | type) -> None:
        m = offsets.shape[0] - 1
        per = max(1, BLOCK_BYTES // (B * d * np.dtype(dtype).itemsize))
        equal = equal_sizes(offsets)
        self.blocks = []
        for i0 in range(0, m, per):
            i1 = min(m, i0 + per)
            sub = offsets[i0 : i1 + 1] - offsets[i0]
            layout = ClientLayout(sub, d, B, per_client=equal is None)
            self.blocks.append((i0, i1, int(offsets[i0]), int(offsets[i1]), sub, layout))
        rows = max(hi - lo for _, _, lo, hi, _, _ in self.blocks)
        self.R = np.empty(B * rows, dtype=dtype)
        self.C = np.empty((min(per, m), B, d), dtype=dtype)


def cluster_gradients(P: np.ndarray, Y: np.ndarray, group: np.ndarray, assign: np.ndarray, k: int, weights: np.ndarray,
                      X: np.ndarray, blocks: ClientBlocks, out: np.ndarray) -> np.ndarray:
    """Every replica's summed gradients: ``out[b, j] = sum_{i : assign[b, i] = j} weights[i]
    (P[b*k + j, rows of i] - y_i) X_i`` with ``y = Y[group[b]]`` (IFCA's gradient step, before the
    step size), from the predictions ``P`` of :func:`predict`.

    The three passes :func:`weighted_residuals`, :func:`client_gradients` and
    :func:`scatter_add`, run a block of clients at a time (``blocks``, a :class:`ClientBlocks`) so
    that the per-client gradients are summed while still in cache instead of going through an
    ``(m, B, d)`` buffer in memory.  The result is bit-identical to the three passes over all
    clients: each client's product is the same BLAS call on the same operands, and every sum adds
    the clients in index order.
    """
    out[...] = 0.0
    for i0, i1, lo, hi, offsets, layout in blocks.blocks:
        R = blocks.R[: (hi - lo) * assign.shape[0]]
        C = blocks.C[: i1 - i0]
        weighted_residuals(P[:, lo:hi], Y[:, lo:hi], group, offsets, assign[:, i0:i1], k, weights[i0:i1], R)
        client_gradients(R, X[lo:hi], layout, C)
        scatter_accumulate(C, assign[:, i0:i1], out)
    return out


@njit(cache=True)
def decode_clients(P, y, offsets, B, k, assign, best):
    """The ML decoder of every client (Su-Xu-Yang's Phase 2, step 2), from the predictions ``P``
    of :func:`predict`.

    For replica ``b`` and client ``i`` (rows ``offsets[i]:offsets[i+1]``):
    ``L[l] = sum_r (y_r - P[b*k + l, r])^2`` (``L_i(theta, l)``, a plain sum, accumulated in
    float64), ``assign[b, i] = argmin_l L[l]`` by :func:`argmin_skip_nan` and
    ``best[b, i] = L[assign]`` (both OUT).
    """
    m = offsets.shape[0] - 1
    losses = np.empty(k)
    for b in range(B):
        for i in range(m):
            lo = offsets[i]
            hi = offsets[i + 1]
            for l in range(k):
                row = P[b * k + l]
                s = 0.0
                for r in range(lo, hi):
                    e = np.float64(y[r]) - np.float64(row[r])
                    s += e * e
                losses[l] = s
            a = argmin_skip_nan(losses)
            assign[b, i] = a
            best[b, i] = losses[a]


@njit(cache=True)
def decode_and_residuals(P, y, offsets, B, k, frozen, assign, best, R):
    """:func:`decode_clients`, and the residual matrix of the decoded models.

    ``R[b*k + l, r] = y_r - P[b*k + l, r]`` for the decoded ``l = assign[b, i]`` and 0 for the
    other models, so that ``R @ K`` sums, per model, the local updates of the clients that chose
    it.  A frozen replica (``frozen[b]``) gets all-zero rows.
    """
    decode_clients(P, y, offsets, B, k, assign, best)
    m = offsets.shape[0] - 1
    for b in range(B):
        for i in range(m):
            lo = offsets[i]
            hi = offsets[i + 1]
            a = assign[b, i]
            for l in range(k):
                out = R[b * k + l]
                if l == a and not frozen[b]:
                    row = P[b * k + l]
                    for r in range(lo, hi):
                        out[r] = y[r] - row[r]
                else:
                    for r in range(lo, hi):
                        out[r] = 0.0
