"""Tests of mixreg.local_solvers against plain per-client NumPy loops written here."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixreg.kernels import LANES
from mixreg.local_solvers import (
    LOCAL_SOLVERS,
    ClientGrams,
    gradient_steps,
    grouped_rows,
    local_least_squares,
    local_update_operator,
    proximal_step,
    stacked_update_operators,
)
from mixreg.problems import make_problem_from_parameters

FAST = settings(derandomize=True, max_examples=40, deadline=None)


# --------------------------------------------------------------------------------------------
# Reference loops, one client at a time
# --------------------------------------------------------------------------------------------


def _clients(X, y, offsets):
    for i in range(len(offsets) - 1):
        yield X[offsets[i]:offsets[i + 1]], y[offsets[i]:offsets[i + 1]]


def ref_gradient_steps(X, y, offsets, theta, eta, s):
    out = []
    for i, (Xi, yi) in enumerate(_clients(X, y, offsets)):
        v = np.array(theta[i], dtype=float)
        for _ in range(s):
            v = v - eta * Xi.T @ (Xi @ v - yi) / len(yi)
        out.append(v)
    return np.array(out)


def ref_proximal(X, y, offsets, theta, eta):
    d = X.shape[1]
    return np.array([np.linalg.solve(Xi.T @ Xi / len(yi) + np.eye(d) / eta, Xi.T @ yi / len(yi) + theta[i] / eta)
                     for i, (Xi, yi) in enumerate(_clients(X, y, offsets))])


def ref_ridge(X, y, offsets, lam):
    d = X.shape[1]
    return np.array([np.linalg.solve(Xi.T @ Xi / len(yi) + lam[i] * np.eye(d), Xi.T @ yi / len(yi))
                     for i, (Xi, yi) in enumerate(_clients(X, y, offsets))])


@st.composite
def stacked(draw, max_m=8, max_d=6):
    """Stacked data with client sizes on both sides of d, repeated sizes (batched groups)."""
    d = draw(st.integers(1, max_d))
    sizes = np.array(draw(st.lists(st.sampled_from([1, 2, d, d + 1, 3 * d + 2]), min_size=1, max_size=max_m)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    N = int(sizes.sum())
    X = rng.standard_normal((N, d)) * rng.uniform(0.5, 2.0, d)
    y = rng.standard_normal(N)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    theta = rng.standard_normal((sizes.size, d))
    return X, y, offsets, theta


def _problem(sizes, d=5, k=2, seed=0):
    rng = np.random.default_rng(seed)
    return make_problem_from_parameters(rng.standard_normal((k, d)), rng.integers(0, k, len(sizes)),
                                        np.asarray(sizes), 0.3, rng=rng)


# --------------------------------------------------------------------------------------------
# Gradient steps and the proximal step
# --------------------------------------------------------------------------------------------


@FAST
@given(stacked(), st.integers(0, 4), st.floats(0.01, 0.3))
def test_gradient_steps_match_the_per_client_loop(data, s, eta):
    """theta_i <- theta_i - (eta / n_i) X_i^T (X_i theta_i - y_i), s times, every client."""
    X, y, offsets, theta = data
    out = gradient_steps(X, y, offsets, theta, eta, s)
    assert out.shape == theta.shape and out.dtype == np.float64
    np.testing.assert_allclose(out, ref_gradient_steps(X, y, offsets, theta, eta, s), rtol=1e-11, atol=1e-12)
    shared = gradient_steps(X, y, offsets, theta[0], eta, s)
    np.testing.assert_allclose(shared, ref_gradient_steps(X, y, offsets, np.repeat(theta[:1], len(theta), 0), eta, s),
                               rtol=1e-11, atol=1e-12)


@FAST
@given(stacked(), st.integers(1, 4), st.floats(0.01, 0.3))
def test_gradient_steps_equal_the_fedavg_operator(data, s, eta):
    """s gradient steps = theta + K_i (y_i - X_i theta) with K_i of FedAvg(s) (affine in theta)."""
    X, y, offsets, theta = data
    out = gradient_steps(X, y, offsets, theta, eta, s)
    for i, (Xi, yi) in enumerate(_clients(X, y, offsets)):
        K = local_update_operator(Xi, eta, "fedavg", s)
        np.testing.assert_allclose(out[i], theta[i] + K @ (yi - Xi @ theta[i]), rtol=1e-10, atol=1e-12)


@FAST
@given(stacked(), st.floats(0.01, 10.0))
def test_proximal_step_is_the_proximal_minimiser(data, eta):
    """Matches the d x d normal equations, the FedProx operator, and zeroes the prox gradient."""
    X, y, offsets, theta = data
    out = proximal_step(X, y, offsets, theta, eta)
    np.testing.assert_allclose(out, ref_proximal(X, y, offsets, theta, eta), rtol=1e-9, atol=1e-10)
    for i, (Xi, yi) in enumerate(_clients(X, y, offsets)):
        K = local_update_operator(Xi, eta, "fedprox")
        np.testing.assert_allclose(out[i], theta[i] + K @ (yi - Xi @ theta[i]), rtol=1e-9, atol=1e-10)
        grad = Xi.T @ (Xi @ out[i] - yi) / len(yi) + (out[i] - theta[i]) / eta
        assert np.linalg.norm(grad) <= 1e-9 * (1 + np.linalg.norm(Xi.T @ yi) + np.linalg.norm(theta[i]) / eta)


def test_divergent_steps_return_nonfinite_rows_without_warning():
    X = np.array([[10.0, 0.0], [0.0, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = gradient_steps(X, np.ones(2), [0, 1, 2], np.zeros(2), 1.0, 2000)
    assert not np.isfinite(out[0]).all() and np.isfinite(out[1]).all()


def test_float32_data_are_computed_in_float64():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal(6).astype(np.float32)
    offsets = [0, 2, 6]
    for out in (gradient_steps(X, y, offsets, np.zeros(3), 0.1, 2), proximal_step(X, y, offsets, np.zeros(3), 0.1),
                local_least_squares(X, y, offsets)):
        assert out.dtype == np.float64
    np.testing.assert_allclose(local_least_squares(X, y, offsets),
                               local_least_squares(X.astype(float), y.astype(float), offsets), rtol=1e-12)


# --------------------------------------------------------------------------------------------
# Local least squares
# --------------------------------------------------------------------------------------------


@FAST
@given(stacked())
def test_min_norm_least_squares_matches_lstsq(data):
    """X_i^+ y_i: numpy's lstsq (minimum-norm) per client; interpolates and lies in the row
    space of X_i when n_i < d."""
    X, y, offsets, _ = data
    out = local_least_squares(X, y, offsets)
    for i, (Xi, yi) in enumerate(_clients(X, y, offsets)):
        ref = np.linalg.lstsq(Xi, yi, rcond=None)[0]
        np.testing.assert_allclose(out[i], ref, rtol=1e-8, atol=1e-9)
        if len(yi) < X.shape[1]:
            np.testing.assert_allclose(Xi @ out[i], yi, atol=1e-8)
            null = np.linalg.svd(Xi)[2][len(yi):]  # rows span the null space (generic X_i)
            np.testing.assert_allclose(null @ out[i], 0.0, atol=1e-8)


# The minimum-norm solution: X_i^T (X_i X_i^T)^-1 y_i for a client with n_i <= d certified well
# conditioned, the SVD pseudo-inverse for the others.


def _conditioned(rng, n, d, cond):
    """An n x d matrix with singular values spread geometrically from 1 to ``cond``, and
    random singular vectors."""
    p = min(n, d)
    U = np.linalg.qr(rng.standard_normal((n, p)))[0]
    V = np.linalg.qr(rng.standard_normal((d, p)))[0]
    return (U * np.geomspace(cond, 1.0, p)) @ V.T


def _pinv_solution(Xi, yi):
    """The documented rule, computed as the SVD route does: ``pinv`` with lstsq's cutoff."""
    rcond = max(Xi.shape) * np.finfo(np.float64).eps
    return np.matmul(np.linalg.pinv(Xi[None], rcond=rcond), yi[None, :, None])[0, :, 0]


def _stack(blocks):
    X = np.concatenate([b[0] for b in blocks])
    y = np.concatenate([b[1] for b in blocks])
    return X, y, np.concatenate([[0], np.cumsum([len(b[1]) for b in blocks])])


class _PinvCalls:
    """Records the blocks that reach ``numpy.linalg.pinv`` (the SVD route)."""

    def __init__(self):
        self.blocks = []
        self._pinv = np.linalg.pinv

    def __call__(self, a, *args, **kwargs):
        self.blocks.extend(np.array(a, copy=True))
        return self._pinv(a, *args, **kwargs)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(1, 40),
       st.lists(st.tuples(st.integers(1, 40), st.floats(1.0, 10.0)), min_size=1, max_size=8))
def test_min_norm_of_well_conditioned_clients_skips_the_svd_and_matches_lstsq(seed, d, shapes):
    """Clients with n_i <= d and condition number <= 10 are certified: the SVD is never called,
    and the estimates equal lstsq's to a relative 1e-12; clients with n_i > d keep the SVD, bit
    for bit the pseudo-inverse."""
    rng = np.random.default_rng(seed)
    blocks = [(_conditioned(rng, n, d, cond), rng.standard_normal(n)) for n, cond in shapes]
    X, y, offsets = _stack(blocks)
    calls = _PinvCalls()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(np.linalg, "pinv", calls)
        out = local_least_squares(X, y, offsets)
    tall = [Xi for Xi, yi in blocks if len(yi) > d]
    assert sorted(map(bytes, calls.blocks)) == sorted(map(bytes, tall))
    for i, (Xi, yi) in enumerate(blocks):
        ref = np.linalg.lstsq(Xi, yi, rcond=None)[0]
        assert np.linalg.norm(out[i] - ref) <= 1e-12 * np.linalg.norm(ref)
        if len(yi) > d:
            np.testing.assert_array_equal(out[i], _pinv_solution(Xi, yi))


def test_min_norm_formula_on_small_examples():
    """Hand-solved cases, which X^T y, (X X^T)^-1 y or a transposed factor all miss."""
    X = np.array([[1.0, 1.0, 0.0],  # client 0: one row, theta = x y / |x|^2
                  [2.0, 0.0, 0.0], [1.0, 1.0, 0.0]])  # client 1: two rows, theta in their span
    out = local_least_squares(X, np.array([2.0, 4.0, 5.0]), [0, 1, 3])
    np.testing.assert_allclose(out, [[1.0, 1.0, 0.0], [2.0, 3.0, 0.0]], rtol=1e-14, atol=1e-15)
    X = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 2.0]])  # n > d: X^T X = [[2, 2], [2, 8]], X^T y = [5, 12]
    out = local_least_squares(X, np.array([1.0, 2.0, 4.0]), [0, 3])
    np.testing.assert_allclose(out, [[4.0 / 3.0, 7.0 / 6.0]], rtol=1e-14)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(2, 12), st.integers(0, 5))
def test_min_norm_of_rank_deficient_clients_is_exactly_the_pseudo_inverse(seed, d, kind):
    """Duplicate rows (inconsistent responses), a zero row, all zeros, rank one, duplicate
    columns (n > d): the block takes the SVD, bit for bit the documented pseudo-inverse."""
    rng = np.random.default_rng(seed)
    n = 3 * d if kind == 4 else int(rng.integers(2, d + 1))
    Xi = rng.standard_normal((n, d))
    if kind == 0:
        Xi[1] = Xi[0]
    elif kind == 1:
        Xi[-1] = 0.0
    elif kind == 2:
        Xi[:] = 0.0
    elif kind == 3:
        Xi = np.outer(rng.standard_normal(n), rng.standard_normal(d))
    elif kind == 4:
        Xi[:, -1] = Xi[:, 0]
    else:
        Xi[-1] = Xi[0] - 2 * Xi[1 % n]  # a combination of the others
    yi = rng.standard_normal(n)
    calls = _PinvCalls()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(np.linalg, "pinv", calls)
        out = local_least_squares(Xi, yi, [0, n])[0]
    if not (kind == 5 and n == 2):  # n = 2: X_1 = X_0 - 2 X_1 is two rows of one direction, rank 1 too
        assert len(calls.blocks) == 1 and np.array_equal(calls.blocks[0], Xi)
    np.testing.assert_array_equal(out, _pinv_solution(Xi, yi))
    np.testing.assert_allclose(out, np.linalg.lstsq(Xi, yi, rcond=None)[0], rtol=1e-9, atol=1e-10)


def test_duplicate_rows_with_different_responses_are_averaged():
    """The least-squares fit of two copies of a row is the fit of their mean response: the Gram
    is singular (a Gram solve would return inf or rounding noise)."""
    X = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 2.0]])
    out = local_least_squares(X, np.array([1.0, 3.0, 4.0]), [0, 3])
    np.testing.assert_allclose(out, [[2.0, 0.0, 2.0]], rtol=1e-14, atol=1e-15)


def test_min_norm_routes_each_client_of_a_mixed_batch():
    """Clients of one size and of several sizes, well conditioned, rank deficient and of full
    rank but ill conditioned (condition 1e3 and 1e8, above MIN_NORM_GRAM_COND), with n_i <= d
    and n_i > d: exactly the latter two kinds and the clients with n_i > d reach the SVD, and
    every estimate is lstsq's (the SVD ones bit for bit the pseudo-inverse)."""
    rng = np.random.default_rng(7)
    d = 20
    blocks, svd = [], []
    for j, (n, kind) in enumerate([(8, "good"), (8, "dup"), (8, "good"), (8, "cond1e8"), (8, "good"), (8, "zero"),
                                   (20, "cond1e3"), (20, "good"), (5, "good"), (45, "good"), (45, "dupcol"),
                                   (60, "cond1e3"), (33, "good")]):
        Xi = _conditioned(rng, n, d, {"good": 3.0, "cond1e3": 1e3, "cond1e8": 1e8}.get(kind, 3.0))
        if kind == "dup":
            Xi[3] = Xi[5]
        elif kind == "zero":
            Xi[0] = 0.0
        elif kind == "dupcol":
            Xi[:, 4] = Xi[:, 7]
        blocks.append((Xi, rng.standard_normal(n)))
        if kind != "good" or n > d:
            svd.append(j)
    X, y, offsets = _stack(blocks)
    calls = _PinvCalls()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(np.linalg, "pinv", calls)
        out = local_least_squares(X, y, offsets)
    assert sorted(map(bytes, calls.blocks)) == sorted(bytes(blocks[j][0]) for j in svd)
    for j, (Xi, yi) in enumerate(blocks):
        ref = np.linalg.lstsq(Xi, yi, rcond=None)[0]
        if j in svd:
            np.testing.assert_array_equal(out[j], _pinv_solution(Xi, yi))
            np.testing.assert_allclose(out[j], ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())
        else:
            assert np.linalg.norm(out[j] - ref) <= 1e-12 * np.linalg.norm(ref)
    # alone or in the batch: the same estimate
    alone = [local_least_squares(Xi, yi, [0, len(yi)])[0] for Xi, yi in blocks]
    np.testing.assert_array_equal(out, np.array(alone))


@pytest.mark.parametrize("x_scale, y_scale", [(1e-160, 1.0), (1e160, 1.0), (1e-157, 1e-200), (1e-146, 1e20)])
def test_min_norm_out_of_range_grams_take_the_svd(x_scale, y_scale):
    """A Gram that underflows (1e-160), overflows (1e160) or is subnormal (1e-157: rounding
    far above the certificate's bound), and a solve that overflows although the Gram is fine
    (1e-146 with responses of 1e20): the SVD, which sees none of these, and the estimate
    scales as y_scale / x_scale."""
    rng = np.random.default_rng(3)
    Xi, yi = rng.standard_normal((4, 10)), rng.standard_normal(4)
    calls = _PinvCalls()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(np.linalg, "pinv", calls)
        out = local_least_squares(x_scale * Xi, y_scale * yi, [0, 4])[0]
    assert len(calls.blocks) == 1
    np.testing.assert_allclose(out * (x_scale / y_scale), local_least_squares(Xi, yi, [0, 4])[0], rtol=1e-12)


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 9), st.integers(1, 5))
def test_grouped_rows_give_each_keys_least_squares(seed, N, n_keys, d):
    """Rows grouped by random keys (some keys with no row): each block holds exactly its key's
    rows in row order, and the blockwise least squares equal numpy's lstsq key by key."""
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, n_keys, N)
    X, y = rng.standard_normal((N, d)), rng.standard_normal(N)
    order, present, offsets = grouped_rows(keys, n_keys)
    assert present.tolist() == sorted(set(keys.tolist()))
    assert offsets[0] == 0 and offsets[-1] == N and (np.diff(offsets) >= 1).all()
    for j, key in enumerate(present):
        assert order[offsets[j]:offsets[j + 1]].tolist() == np.flatnonzero(keys == key).tolist()
    fits = local_least_squares(X[order], y[order], offsets)
    for j, key in enumerate(present):
        ref = np.linalg.lstsq(X[keys == key], y[keys == key], rcond=None)[0]
        np.testing.assert_allclose(fits[j], ref, rtol=1e-8, atol=1e-9)


@FAST
@given(stacked(), st.floats(1e-4, 10.0))
def test_ridge_least_squares_matches_the_normal_equations(data, lam):
    X, y, offsets, _ = data
    m = len(offsets) - 1
    out = local_least_squares(X, y, offsets, method="ridge", ridge=lam)
    np.testing.assert_allclose(out, ref_ridge(X, y, offsets, np.full(m, lam)), rtol=1e-8, atol=1e-10)


def test_default_ridge_is_relative_to_the_mean_feature_variance():
    rng = np.random.default_rng(1)
    sizes = [2, 2, 7, 3, 7]
    X, y = rng.standard_normal((21, 5)), rng.standard_normal(21)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    lam = [1e-3 * np.sum(Xi**2) / (len(yi) * 5) for Xi, yi in _clients(X, y, offsets)]
    out = local_least_squares(X, y, offsets, method="ridge")
    np.testing.assert_allclose(out, ref_ridge(X, y, offsets, lam), rtol=1e-10)
    # equivariant under a rescaling of the features
    np.testing.assert_allclose(local_least_squares(3 * X, y, offsets, method="ridge"), out / 3, rtol=1e-10)
    # a vanishing penalty tends to the minimum-norm solution
    tiny = local_least_squares(X, y, offsets, method="ridge", ridge=1e-12)
    np.testing.assert_allclose(tiny, local_least_squares(X, y, offsets), rtol=1e-5, atol=1e-8)
    # an all-zero client gets 0
    X[:2] = 0.0
    assert np.all(local_least_squares(X, y, offsets, method="ridge")[0] == 0.0)


# --------------------------------------------------------------------------------------------
# Operators (moved from mixreg.algorithms.fedx)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", LOCAL_SOLVERS)
@pytest.mark.parametrize("n", [2, 5, 9])  # n < d, n = d, n > d: every branch
@pytest.mark.parametrize("s", [1, 3])
def test_operator_is_the_local_update_applied_to_unit_residuals(solver, n, s):
    """Column j of K is the local model started at 0 on data y = e_j (K is linear in y)."""
    rng = np.random.default_rng(n + 10 * s)
    Xi = rng.standard_normal((n, 5))
    K = local_update_operator(Xi, 0.2, solver, s)
    step = (lambda yy: ref_gradient_steps(Xi, yy, [0, n], np.zeros((1, 5)), 0.2, s)) if solver == "fedavg" else \
        (lambda yy: ref_proximal(Xi, yy, [0, n], np.zeros((1, 5)), 0.2))
    cols = np.column_stack([step(e)[0] for e in np.eye(n)])
    assert K.shape == (5, n)
    np.testing.assert_allclose(K, cols, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("solver, s", [("fedavg", 1), ("fedavg", 4), ("fedprox", 1)])
def test_stacked_operators_are_weighted_per_client_operators(solver, s):
    pb = _problem([1, 3, 3, 8, 5, 3, 12, 1])
    KT = stacked_update_operators(pb, 0.15, solver, s)
    KT_u = stacked_update_operators(pb, 0.15, solver, s, weighted=False)
    for i in range(pb.m):
        rows = slice(pb.offsets[i], pb.offsets[i + 1])
        K = local_update_operator(pb.client(i)[0], 0.15, solver, s)
        np.testing.assert_allclose(KT_u[rows], K.T, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(KT[rows], KT_u[rows] * (pb.sizes[i] / pb.N))


# --------------------------------------------------------------------------------------------
# Least squares of row subsets from each client's Gram (ClientGrams)
# --------------------------------------------------------------------------------------------


def _subsets(rng, sizes, d, n_groups, duplicate=False):
    """Stacked clients of the given sizes, their rows grouped by a random key that refines the
    clients (a client's rows in ``n_groups`` groups); ``duplicate``: a copied row in every
    client of two rows or more, which makes the group holding both copies rank deficient."""
    X, y, offsets = _stack([(rng.standard_normal((n, d)), rng.standard_normal(n)) for n in sizes])
    if duplicate:
        for i in range(len(sizes)):
            if sizes[i] >= 2:
                X[offsets[i] + 1] = X[offsets[i]]
    client = np.repeat(np.arange(len(sizes)), sizes)
    keys = client * n_groups + rng.integers(0, n_groups, client.size)
    order, present, boff = grouped_rows(keys, len(sizes) * n_groups)
    return X, y, offsets, order, boff, present // n_groups


@FAST
@given(st.integers(0, 2**32 - 1), st.integers(2, 12),
       st.lists(st.integers(1, 30), min_size=1, max_size=8), st.integers(1, 4), st.booleans())
def test_client_grams_match_local_least_squares_block_by_block(seed, d, sizes, n_groups, duplicate):
    """Every block's estimate is local_least_squares' on the block's rows: to 1e-12 relative for
    the blocks solved through their client's Gram, bit for bit for the others; the Gram route
    is taken only by blocks of clients with n_i <= d, never by a block holding a copied row."""
    rng = np.random.default_rng(seed)
    X, y, offsets, order, boff, client = _subsets(rng, sizes, d, n_groups, duplicate)
    grams = ClientGrams(X, y, offsets)
    theta = grams.min_norm(order, boff)
    ref = local_least_squares(X[order], y[order], boff)
    alpha, other, dual = grams.dual(order, boff)
    sizes = np.asarray(sizes)
    for j in range(boff.size - 1):
        rows = order[boff[j]:boff[j + 1]]
        if dual[j]:
            assert sizes[client[j]] <= d and np.linalg.matrix_rank(X[rows]) == rows.size
            assert np.linalg.norm(theta[j] - ref[j]) <= 1e-12 * max(np.linalg.norm(ref[j]), 1e-300)
            np.testing.assert_allclose(X[rows].T @ alpha[boff[j]:boff[j + 1]], theta[j], rtol=1e-12,
                                       atol=1e-12 * np.abs(theta[j]).max())
            assert (other[j] == 0).all()
        else:
            np.testing.assert_array_equal(theta[j], ref[j])
            np.testing.assert_array_equal(other[j], ref[j])
            assert (alpha[boff[j]:boff[j + 1]] == 0).all()
        if duplicate and client[j] == client[max(j - 1, 0)] and {0, 1} <= set(rows - offsets[client[j]]):
            assert not dual[j]


def test_client_grams_certify_only_well_conditioned_blocks():
    """Blocks of condition 3 and 50 are solved through the Gram; 1e3 and 1e8 (above
    MIN_NORM_GRAM_COND = 100) and a zero row take the SVD, bit for bit local_least_squares."""
    rng = np.random.default_rng(11)
    d = 30
    kinds = [3.0, 1e3, 50.0, 1e8, "zero"]
    blocks = []
    for kind in kinds:
        Xi = _conditioned(rng, 10, d, 3.0 if kind == "zero" else kind)
        if kind == "zero":
            Xi[4] = 0.0
        blocks.append((Xi, rng.standard_normal(10)))
    X, y, offsets = _stack(blocks)
    order = np.arange(X.shape[0])
    _, _, dual = ClientGrams(X, y, offsets).dual(order, offsets)
    assert dual.tolist() == [True, False, True, False, False]
    theta = ClientGrams(X, y, offsets).min_norm(order, offsets)
    ref = local_least_squares(X, y, offsets)
    np.testing.assert_array_equal(theta[~dual], ref[~dual])


def test_a_certified_client_certifies_every_subset_of_its_rows():
    """Cauchy interlacing: a client of condition 3 is certified as a whole, and every subset of
    its rows is solved through the Gram without a certificate of its own, to the same bits as
    with one (the certificate changes which blocks are solved, never how)."""
    from mixreg.kernels import gram_subsets_solve

    rng = np.random.default_rng(8)
    d, n = 40, 30
    X, y, offsets = _stack([(_conditioned(rng, n, d, 3.0), rng.standard_normal(n)) for _ in range(3)])
    grams = ClientGrams(X, y, offsets)
    assert grams.certified.all()
    subsets = [np.sort(rng.choice(n, size, replace=False)) for size in (1, 2, 7, 15, 15, 29, 30)]
    order = np.concatenate([offsets[i % 3] + s for i, s in enumerate(subsets)])
    boff = np.concatenate([[0], np.cumsum([s.size for s in subsets])])
    alpha, _, dual = grams.dual(order, boff)
    assert dual.all()
    for i, s in enumerate(subsets):
        client = i % 3
        out = {}
        for certify in (False, True):
            a, ok = np.empty((1, s.size)), np.empty(1, dtype=np.bool_)
            gram_subsets_solve(grams.flat, grams.starts[[client]], grams.sizes[[client]], s[None], y[offsets[client] + s][None],
                               d, 100.0, certify, a, ok)
            assert ok[0]
            out[certify] = a[0]
        np.testing.assert_array_equal(out[False], out[True])
        np.testing.assert_array_equal(alpha[boff[i]:boff[i + 1]], out[True])


def test_client_grams_estimate_does_not_depend_on_its_neighbours():
    """The Gram route factorises LANES blocks side by side: a block's estimate is the same, to
    the last bit, alone, first or last of a batch of 3 LANES + 5 blocks of its size."""
    rng = np.random.default_rng(5)
    d, n, c = 40, 24, 3 * LANES + 5
    X, y, offsets = _stack([(rng.standard_normal((n, d)), rng.standard_normal(n)) for _ in range(c)])
    grams = ClientGrams(X, y, offsets)
    halves = np.concatenate([np.arange(offsets[i], offsets[i] + n // 2) for i in range(c)])
    boff = np.arange(0, halves.size + 1, n // 2)
    batch = grams.min_norm(halves, boff)
    for i in (0, LANES - 1, LANES, c - 1):
        alone = grams.min_norm(halves[boff[i]:boff[i + 1]], [0, n // 2])
        np.testing.assert_array_equal(alone[0], batch[i])


@pytest.mark.parametrize("scale", [1e-160, 1e160])
def test_client_grams_out_of_range_blocks_take_the_svd(scale):
    """A Gram that underflows or overflows is not certified: local_least_squares' estimate, bit
    for bit, and finite."""
    rng = np.random.default_rng(2)
    X, y, offsets = _stack([(scale * rng.standard_normal((4, 10)), rng.standard_normal(4)) for _ in range(3)])
    order = np.arange(12)
    boff = np.array([0, 2, 4, 6, 8, 10, 12])
    theta = ClientGrams(X, y, offsets).min_norm(order, boff)
    np.testing.assert_array_equal(theta, local_least_squares(X, y, boff))
    assert np.isfinite(theta).all()


def test_predict_dual_is_each_clients_x_x_transpose():
    """P[:, rows_i] = A[:, rows_i] X_i X_i^T for clients with n_i <= d (their Gram) and n_i > d
    (two products), and the dual coefficients predict what the estimates predict."""
    rng = np.random.default_rng(9)
    d = 6
    X, y, offsets = _stack([(rng.standard_normal((n, d)), rng.standard_normal(n)) for n in (4, 6, 4, 9, 2)])
    grams = ClientGrams(X, y, offsets)
    A = rng.standard_normal((3, X.shape[0]))
    P = grams.predict_dual(A)
    for i in range(offsets.size - 1):
        rows = slice(offsets[i], offsets[i + 1])
        np.testing.assert_allclose(P[:, rows], A[:, rows] @ X[rows] @ X[rows].T, rtol=1e-12, atol=1e-12)
    order, boff = np.arange(X.shape[0]), offsets
    alpha, _, dual = grams.dual(order, boff)
    theta = grams.min_norm(order, boff)
    pred = grams.predict_dual(alpha[None])[0]
    for i in np.flatnonzero(dual):
        rows = slice(offsets[i], offsets[i + 1])
        np.testing.assert_allclose(pred[rows], X[rows] @ theta[i], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    "order, boff, pattern",
    [
        ([0, 1, 2], [0, 3], "one client"),  # rows 0-1 are client 0, row 2 client 1
        ([0, 5], [0, 2], "order"),
        ([0, 1], [0, 0, 2], "block_offsets"),
        ([0, 1], [0, 1], "block_offsets"),
        ([0.0, 1.0], [0, 2], "order"),
    ],
)
def test_client_grams_bad_blocks_name_the_parameter(order, boff, pattern):
    grams = ClientGrams(np.eye(4)[:3], np.ones(3), [0, 2, 3])
    with pytest.raises(ValueError, match=pattern):
        grams.min_norm(np.array(order), np.array(boff))
    with pytest.raises(ValueError, match="X"):
        ClientGrams(np.ones(3), np.ones(3), [0, 3])


def test_grouped_rows_with_more_keys_than_16_bits():
    """Beyond 2^16 keys the int64 keys are sorted as they are: the same stable order."""
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 1 << 17, 5000)
    order, present, offsets = grouped_rows(keys, 1 << 17)
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))
    small = keys % 1000
    np.testing.assert_array_equal(grouped_rows(small, 1000)[0], np.argsort(small, kind="stable"))


def test_one_fedavg_step_operator_is_a_row_scaling_bit_for_bit():
    """FedAvg(1)'s stacked operator is (eta / n_i) X_i, exactly as the per-client formula."""
    pb = _problem([1, 3, 3, 8, 5, 3, 12, 1])
    KT = stacked_update_operators(pb, 0.15, "fedavg", 1, weighted=False)
    for i in range(pb.m):
        rows = slice(pb.offsets[i], pb.offsets[i + 1])
        np.testing.assert_array_equal(KT[rows], (0.15 / pb.sizes[i]) * pb.X[rows].astype(np.float64))


# --------------------------------------------------------------------------------------------
# Validation at the boundary
# --------------------------------------------------------------------------------------------


X0, Y0, OFF0 = np.ones((4, 2)), np.ones(4), np.array([0, 1, 4])


@pytest.mark.parametrize(
    "call, exc, name",
    [
        (lambda: gradient_steps(np.ones(4), Y0, OFF0, np.zeros(2), 0.1, 1), ValueError, "X"),
        (lambda: gradient_steps(X0, np.ones(3), OFF0, np.zeros(2), 0.1, 1), ValueError, "y"),
        (lambda: gradient_steps(X0, Y0, [0, 2, 3], np.zeros(2), 0.1, 1), ValueError, "offsets"),
        (lambda: gradient_steps(X0, Y0, [0, 2, 2, 4], np.zeros(2), 0.1, 1), ValueError, "offsets"),
        (lambda: gradient_steps(X0, Y0, [0.0, 4.0], np.zeros(2), 0.1, 1), ValueError, "offsets"),
        (lambda: gradient_steps(X0, Y0, OFF0, np.zeros(3), 0.1, 1), ValueError, "theta"),
        (lambda: gradient_steps(X0, Y0, OFF0, np.zeros((3, 2)), 0.1, 1), ValueError, "theta"),
        (lambda: gradient_steps(X0, Y0, OFF0, np.zeros(2), 0.0, 1), ValueError, "step_size"),
        (lambda: gradient_steps(X0, Y0, OFF0, np.zeros(2), 0.1, -1), ValueError, "n_steps"),
        (lambda: gradient_steps(X0, Y0, OFF0, np.zeros(2), 0.1, 1.5), TypeError, "n_steps"),
        (lambda: proximal_step(X0, Y0, OFF0, np.zeros(2), -1.0), ValueError, "step_size"),
        (lambda: proximal_step(X0, Y0 * np.nan, OFF0, np.zeros(2), 1.0), ValueError, "y"),
        (lambda: local_least_squares(X0, Y0, OFF0, method="qr"), ValueError, "method"),
        (lambda: local_least_squares(X0, Y0, OFF0, ridge=1.0), ValueError, "ridge"),
        (lambda: local_least_squares(X0, Y0, OFF0, method="ridge", ridge=0.0), ValueError, "ridge"),
        (lambda: local_update_operator(X0, 0.1, "sgd"), ValueError, "local_solver"),
        (lambda: local_update_operator(X0, 0.1, "fedavg", 0), ValueError, "local_steps"),
        (lambda: local_update_operator(X0, np.inf), ValueError, "step_size"),
        (lambda: stacked_update_operators(X0, 0.1), TypeError, "problem"),
        (lambda: stacked_update_operators(_problem([2, 3]), [0.1, 0.2]), ValueError, "step_size"),
    ],
)
def test_bad_inputs_name_the_parameter(call, exc, name):
    with pytest.raises(exc, match=name):
        call()
