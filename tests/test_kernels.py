"""Tests of mixreg.kernels against plain NumPy."""

import numpy as np
import pytest

from mixreg import kernels


def _ragged(sizes, d, B, seed=0):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = rng.standard_normal((offsets[-1], d))
    R = rng.standard_normal(B * offsets[-1])
    theta_sel = rng.standard_normal((len(sizes), B, d))
    return offsets, X, R, theta_sel


@pytest.mark.parametrize("small_work", [0, 10**9, 16384])  # all BLAS, all Numba, mixed
def test_per_client_products_match_numpy(small_work):
    sizes = [1, 2, 300, 5, 1200, 1, 40]
    d, B = 8, 2
    offsets, X, R, theta_sel = _ragged(sizes, d, B)
    layout = kernels.ClientLayout(offsets, d, B, small_work=small_work)
    if small_work == 16384:
        assert layout.small.size and layout.large.size  # both paths are exercised
    out = np.empty((len(sizes), B, d))
    kernels.client_gradients(R, X, layout, out)
    pred = np.empty(B * offsets[-1])
    kernels.client_predictions(theta_sel, X, layout, pred)
    for i in range(len(sizes)):
        lo, hi = offsets[i], offsets[i + 1]
        Ri = R[B * lo : B * hi].reshape(B, hi - lo)
        np.testing.assert_allclose(out[i], Ri @ X[lo:hi], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(pred[B * lo : B * hi].reshape(B, hi - lo), theta_sel[i] @ X[lo:hi].T,
                                   rtol=1e-12, atol=1e-12)


def test_equal_sizes_use_one_batched_product():
    offsets, X, R, theta_sel = _ragged([4, 4, 4], 3, 2)
    layout = kernels.ClientLayout(offsets, 3, 2)
    assert layout.n_equal == 4
    out = np.empty((3, 2, 3))
    kernels.client_gradients(R, X, layout, out)
    np.testing.assert_allclose(out[1], R[8:16].reshape(2, 4) @ X[4:8], rtol=1e-12)


def test_losses_assignment_and_scatter():
    rng = np.random.default_rng(1)
    offsets = np.array([0, 2, 5, 6], dtype=np.int64)
    B, k, N = 2, 3, 6
    P = rng.standard_normal((B * k, N))
    y = rng.standard_normal(N)
    losses = np.empty((B, 3, k))
    kernels.client_losses(P, y[None], np.zeros(B, dtype=np.int64), offsets, B, k, losses)
    for b in range(B):
        for i in range(3):
            for j in range(k):
                lo, hi = offsets[i], offsets[i + 1]
                assert losses[b, i, j] == pytest.approx(np.mean((P[b * k + j, lo:hi] - y[lo:hi]) ** 2))
    # replicas with their own responses (one draw of X at several noise levels)
    Y = np.stack([y, 2 * y + 1])
    grouped = np.empty((B, 3, k))
    kernels.client_losses(P, Y, np.array([1, 0]), offsets, B, k, grouped)
    np.testing.assert_array_equal(grouped[1], losses[1])
    for i in range(3):
        lo, hi = offsets[i], offsets[i + 1]
        assert grouped[0, i, 0] == pytest.approx(np.mean((P[0, lo:hi] - Y[1, lo:hi]) ** 2))
    losses[0, 1] = [1.0, 1.0, 2.0]  # a tie goes to the lowest index
    assign = np.empty((B, 3), dtype=np.int64)
    best = np.empty((B, 3))
    kernels.assign_clients(losses, np.array([True, True, False]), assign, best)
    assert assign[0, 1] == 0 and assign[0, 2] == -1 and assign[1, 2] == -1
    C = rng.standard_normal((3, B, 4))
    out = np.empty((B, k, 4))
    kernels.scatter_add(C, assign, out)
    for b in range(B):
        for j in range(k):
            np.testing.assert_allclose(out[b, j], C[assign[b] == j, b].sum(axis=0) if (assign[b] == j).any() else 0.0)
