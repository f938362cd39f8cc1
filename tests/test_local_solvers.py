"""Tests of mixreg.local_solvers against plain per-client NumPy loops written here."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixreg.local_solvers import (
    LOCAL_SOLVERS,
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
