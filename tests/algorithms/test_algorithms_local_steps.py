"""Tests of mixreg.algorithms._local_steps (the local gradient steps of FeSEM and point-level IFCA)
against plain per-client NumPy loops written here."""

import numpy as np
import pytest

from mixreg import kernels
from mixreg.algorithms._local_steps import local_gradient_steps


def _data(sizes, d=3, seed=0):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return rng.standard_normal((offsets[-1], d)), rng.standard_normal(offsets[-1]), offsets, rng


@pytest.mark.parametrize("sizes", [[4, 4, 4], [1, 3, 9, 2000]])  # one batched GEMM; Numba and BLAS clients
def test_masked_steps_match_the_per_sub_client_loop(sizes):
    """Column c of client i takes s steps w <- w - eta_c X_S^T (X_S w - y_S) / |S| on its own rows
    S = {r : mask[c, r]} (no step on an empty S), as point-level IFCA's sub-clients and, with an
    all-true mask, FeSEM's clients."""
    d, C, s = 3, 4, 3
    X, y, offsets, rng = _data(sizes, d)
    m, N = len(sizes), offsets[-1]
    mask = rng.random((C, N)) < 0.6
    mask[:, 0] = False
    mask[0] = True  # column 0: every row (FeSEM's local loss)
    eta = np.array([0.05, 0.1, 0.2, 0.3])
    start = rng.standard_normal((m, C, d))

    def residuals(R):  # client-major (C, n_i) blocks: (X w - y) / |S| on S, 0 elsewhere
        for i in range(m):
            lo, hi = offsets[i], offsets[i + 1]
            block = R[C * lo:C * hi].reshape(C, hi - lo)
            keep = mask[:, lo:hi]
            block[:] = np.where(keep, (block - y[lo:hi]) / np.maximum(keep.sum(axis=1), 1)[:, None], 0.0)

    local = start.copy()
    local_gradient_steps(local, X, kernels.ClientLayout(offsets, d, C), eta[None, :, None], s, residuals,
                         np.empty(C * N), np.empty((m, C, d)))
    for i in range(m):
        lo, hi = offsets[i], offsets[i + 1]
        for c in range(C):
            S = np.flatnonzero(mask[c, lo:hi]) + lo
            w = start[i, c].copy()
            for _ in range(s if S.size else 0):
                w = w - eta[c] * X[S].T @ (X[S] @ w - y[S]) / S.size
            np.testing.assert_allclose(local[i, c], w, rtol=1e-10, atol=1e-12)


def test_zero_steps_leave_the_models():
    X, y, offsets, rng = _data([2, 5])
    local = rng.standard_normal((2, 1, 3))
    before = local.copy()
    local_gradient_steps(local, X, kernels.ClientLayout(offsets, 3, 1), 0.1, 0, None, np.empty(7), None)
    assert np.array_equal(local, before)
