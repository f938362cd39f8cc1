"""The kernels of the minimum-norm Gram solves (:class:`mixreg.local_solvers.ClientGrams`, k-FED).

Cholesky factorisations of many small Gram matrices side by side with a certificate of their
conditioning, the solves they give, and the estimates combined from the rows.  Re-exported by
:mod:`mixreg.kernels`, whose page documents them; a module of its own only to keep each module
short.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def gram_guard(p, q, kappa):
    """Whether the rounding of a ``p x p`` Gram of rows of ``q`` columns and of its Cholesky
    factorisation, at most ``p (p + q + 3) eps kappa^2`` times the certificate's shift, stays below
    a hundredth of it: the size limit of the certificate of
    :func:`mixreg.local_solvers.local_least_squares` (and of :func:`gram_subsets_solve`)."""
    return p * (p + q + 3) * np.finfo(np.float64).eps * kappa * kappa <= 1e-2


#: Blocks factorised side by side by :func:`gram_subsets_solve` (the innermost loops run over
#: them, each block's arithmetic the same as alone).
LANES = 64


@njit(cache=True)
def _cholesky_lanes(G, shift, U, w, good):
    """``U^T U = G - shift I`` for :data:`LANES` matrices side by side (last axis), ``U`` upper
    triangular, from the upper triangle of ``G``: entry ``(j, i)`` is ``(G[j, i] - sum_{t < j}
    U[t, j] U[t, i]) / U[j, j]``, the inner product taken left to right (the column Cholesky
    algorithm).  ``good[l]`` becomes False when a pivot of lane ``l`` is not positive (or not a
    number), where LAPACK's ``potrf`` fails; that lane then goes on with a unit pivot, which
    leaves the others alone."""
    p = G.shape[0]
    for j in range(p):
        for i in range(j, p):
            for l in range(LANES):
                w[i, l] = G[j, i, l]
        for l in range(LANES):
            w[j, l] -= shift[l]
        for t in range(j):
            for i in range(j, p):
                for l in range(LANES):
                    w[i, l] -= U[t, i, l] * U[t, j, l]
        for l in range(LANES):
            if not w[j, l] > 0.0:
                good[l] = False
                w[j, l] = 1.0
            U[j, j, l] = np.sqrt(w[j, l])
        for i in range(j + 1, p):
            for l in range(LANES):
                U[j, i, l] = w[i, l] / U[j, j, l]


@njit(cache=True)
def _certify_lanes(G, kappa, eps, tiny, trace, norm, row_sum, shift, good, U, w):
    """OUT ``good``: for each lane, whether the Cholesky factorisation of ``G - s I`` succeeds,
    ``s = min(tr G, ||G||_inf) / kappa^2`` (``G`` the symmetric matrix of its upper triangle; a
    trace that is not finite or below ``tiny / eps`` fails)."""
    p = G.shape[0]
    for i in range(p):
        for l in range(LANES):
            row_sum[i, l] = 0.0
    for l in range(LANES):
        trace[l] = 0.0
        norm[l] = 0.0
    for i in range(p):  # tr G and ||G||_inf of that matrix
        for l in range(LANES):
            trace[l] += G[i, i, l]
            row_sum[i, l] += abs(G[i, i, l])
        for j in range(i + 1, p):
            for l in range(LANES):
                g = abs(G[i, j, l])
                row_sum[i, l] += g
                row_sum[j, l] += g
    for i in range(p):
        for l in range(LANES):
            norm[l] = max(norm[l], row_sum[i, l])
    for l in range(LANES):
        lam = min(trace[l], norm[l])
        good[l] = np.isfinite(lam) and trace[l] >= tiny / eps
        shift[l] = lam / (kappa * kappa) if good[l] else 0.0
    _cholesky_lanes(G, shift, U, w, good)  # the certificate


@njit(cache=True)
def certify_grams(flat, start, n, q, kappa, good):
    """OUT ``good[c]``: whether the whole ``n x n`` Gram at ``flat[start[c]]`` (all clients of one
    size ``n``, rows of ``q`` columns) is certified as in :func:`gram_subsets_solve`, the size
    guard included; :data:`LANES` Grams side by side."""
    C = start.shape[0]
    eps = np.finfo(np.float64).eps
    tiny = np.finfo(np.float64).tiny
    G = np.empty((n, n, LANES))
    U = np.empty((n, n, LANES))
    w = np.empty((n, LANES))
    lane_good = np.empty(LANES, dtype=np.bool_)
    trace = np.empty(LANES)
    norm = np.empty(LANES)
    row_sum = np.empty((n, LANES))
    shift = np.empty(LANES)
    for c in range(C):
        good[c] = False
    if not gram_guard(n, q, kappa):
        return
    for c0 in range(0, C, LANES):
        for l in range(LANES):
            base = start[min(c0 + l, C - 1)]  # a short last chunk repeats its last Gram
            for i in range(n):
                for j in range(i, n):
                    G[i, j, l] = flat[base + i * n + j]
        _certify_lanes(G, kappa, eps, tiny, trace, norm, row_sum, shift, lane_good, U, w)
        for l in range(min(LANES, C - c0)):
            good[c0 + l] = lane_good[l]


@njit(cache=True)
def gram_subsets_solve(flat, start, n, local, b, q, kappa, certify, alpha, ok):
    """Minimum-norm least squares of row subsets from their clients' Grams.

    Block ``c`` holds ``p`` rows of a client whose ``n[c] x n[c]`` Gram starts at
    ``flat[start[c]]``, at positions ``local[c]`` within the client, and responses ``b[c]``; the
    rows have ``q`` columns.  Its Gram ``G = X_S X_S^T`` is that Gram's submatrix (its upper
    triangle, taken as the symmetric matrix: the one the factorisation sees); it is
    certified as in :func:`mixreg.local_solvers.local_least_squares` (the Cholesky
    factorisation of ``G - s I`` succeeds, ``s = min(tr G, ||G||_inf) / kappa^2``), or, with
    ``certify=False``, taken as certified (every block's client was: see
    :class:`mixreg.local_solvers.ClientGrams`).  A certified block gets ``alpha[c] = G^-1 b[c]``
    by the Cholesky factor of ``G`` and ``ok[c]`` if that factorisation succeeds and ``alpha[c]``
    is finite (its estimate is then ``X_S^T alpha[c]``).  The blocks are factorised
    :data:`LANES` at a time (``_cholesky_lanes``); a block's arithmetic does not depend on
    its neighbours."""
    C, p = local.shape
    eps = np.finfo(np.float64).eps
    tiny = np.finfo(np.float64).tiny
    G = np.empty((p, p, LANES))
    U = np.empty((p, p, LANES))
    w = np.empty((p, LANES))
    a = np.empty((p, LANES))
    shift = np.empty(LANES)
    zero = np.zeros(LANES)
    good = np.empty(LANES, dtype=np.bool_)
    for c in range(C):
        ok[c] = False
    if certify and not gram_guard(p, q, kappa):
        return
    trace = np.empty(LANES)
    norm = np.empty(LANES)
    row_sum = np.empty((p, LANES))
    for c0 in range(0, C, LANES):
        for l in range(LANES):  # the upper triangle: the symmetric matrix the factorisation sees
            c = min(c0 + l, C - 1)  # a short last chunk repeats its last block
            base = start[c]
            for i in range(p):
                row = base + local[c, i] * n[c]
                for j in range(i, p):
                    G[i, j, l] = flat[row + local[c, j]]
        if not certify:
            for l in range(LANES):
                good[l] = True
        else:
            _certify_lanes(G, kappa, eps, tiny, trace, norm, row_sum, shift, good, U, w)
        _cholesky_lanes(G, zero, U, w, good)
        for i in range(p):  # U^T w = y_S (each w[i] = (y_i - sum_{t < i} U[t, i] w[t]) / U[i, i])
            for l in range(LANES):
                w[i, l] = b[min(c0 + l, C - 1), i]
        for t in range(p):
            for l in range(LANES):
                w[t, l] /= U[t, t, l]
            for i in range(t + 1, p):
                for l in range(LANES):
                    w[i, l] -= U[t, i, l] * w[t, l]
        for i in range(p - 1, -1, -1):  # then U a = w
            for l in range(LANES):
                a[i, l] = w[i, l]
            for t in range(i + 1, p):
                for l in range(LANES):
                    a[i, l] -= U[i, t, l] * a[t, l]
            for l in range(LANES):
                a[i, l] /= U[i, i, l]
        for l in range(min(LANES, C - c0)):
            c = c0 + l
            fine = good[l]
            for i in range(p):
                alpha[c, i] = a[i, l]
                if not np.isfinite(a[i, l]):
                    fine = False
            ok[c] = fine


@njit(cache=True)
def combine_rows(X, order, boff, alpha, blocks, theta, ok):
    """OUT ``theta[c] = sum_s alpha[s] X[order[s]]`` over the positions ``s`` of block
    ``b = blocks[c]`` (``boff[b]:boff[b + 1]``), added in order, and ``ok[c]``: whether it is
    finite.  The estimate :math:`X_S^\\top \\alpha` of a block of :meth:`mixreg.local_solvers.ClientGrams.dual`
    (a Numba function: arguments are trusted; ``X`` float64 (N, d), ``order`` and ``boff`` int64,
    ``alpha`` float64 (L,), ``blocks`` int64 (c,), ``theta`` float64 (c, d), ``ok`` bool (c,))."""
    q = X.shape[1]
    for c in range(blocks.shape[0]):
        b = blocks[c]
        for j in range(q):
            theta[c, j] = 0.0
        for s in range(boff[b], boff[b + 1]):
            a = alpha[s]
            x = X[order[s]]
            for j in range(q):
                theta[c, j] += a * x[j]
        fine = True
        for j in range(q):
            if not np.isfinite(theta[c, j]):
                fine = False
        ok[c] = fine
