"""Tests of mixreg.algorithms.fedx (Phase 2 of Su-Xu-Yang) against plain per-client NumPy written here."""

import numpy as np
import pytest

from mixreg.algorithms.fedx import fedx, fedx_linear_rates, local_update_operator, stacked_update_operators
from mixreg.problems import make_problem_from_parameters


def reference_fedx(problem, theta0, eta, T, solver="fedavg", s=1):
    """Slides "FedX + Clustering in Action", one replica, one client at a time, float64.

    Local loss l_i(theta) = (1/(2 n_i)) ||X_i theta - y_i||^2; FedAvg(s) runs s literal gradient
    steps, FedProx solves the normal equations of the proximal problem; the server averages the
    whole k-tuples with w_i = n_i / N.
    """
    theta = np.array(theta0, dtype=np.float64)
    k, d = theta.shape
    N = problem.N
    for _ in range(T):
        new = np.zeros_like(theta)
        for i in range(problem.m):
            Xi, yi = problem.client(i)
            Xi, yi = Xi.astype(np.float64), yi.astype(np.float64)
            n = len(yi)
            z = int(np.argmin([np.sum((yi - Xi @ theta[l]) ** 2) for l in range(k)]))
            local = theta.copy()
            if solver == "fedavg":
                v = theta[z].copy()
                for _ in range(s):
                    v = v - eta * Xi.T @ (Xi @ v - yi) / n
            else:
                v = np.linalg.solve(Xi.T @ Xi / n + np.eye(d) / eta, Xi.T @ yi / n + theta[z] / eta)
            local[z] = v
            new += (n / N) * local
        theta = new
    return theta


def _problem(sizes, d=6, k=3, sigma=0.3, seed=0, cov=False):
    rng = np.random.default_rng(seed)
    theta_star = rng.standard_normal((k, d))
    labels = rng.integers(0, k, size=len(sizes))
    covariances = None
    if cov:
        covariances = np.array([np.diag(rng.uniform(0.5, 2.0, d)) for _ in range(k)])
    return make_problem_from_parameters(theta_star, labels, np.asarray(sizes), sigma, rng=rng,
                                        covariances=covariances)


@pytest.fixture(scope="module")
def unbalanced():
    # sizes on both sides of d = 6, including single-point clients
    return _problem([1, 1, 2, 9, 3, 1, 15, 4, 7, 1, 2, 30, 5, 1, 8], cov=True)


@pytest.mark.parametrize("n", [3, 20])  # n < d and n > d: the two branches of the closed form
def test_fedprox_closed_form_is_the_proximal_minimiser(n):
    """theta + K (y - X theta) minimises l(v) + ||v - theta||^2 / (2 eta) (converged GD)."""
    rng = np.random.default_rng(n)
    d, eta = 8, 0.7
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 2.0, d)
    y = rng.standard_normal(n)
    theta = rng.standard_normal(d)
    closed = theta + local_update_operator(X, eta, "fedprox") @ (y - X @ theta)
    # gradient descent on the strongly convex proximal objective, step 1/L, run to convergence
    H = X.T @ X / n
    L = np.linalg.eigvalsh(H).max() + 1.0 / eta
    v = theta.copy()
    for _ in range(20000):
        v -= (H @ v - X.T @ y / n + (v - theta) / eta) / L
    np.testing.assert_allclose(closed, v, rtol=0, atol=1e-10)


@pytest.mark.parametrize("n,s", [(2, 1), (2, 4), (20, 3)])
def test_fedavg_operator_unrolls_local_steps(n, s):
    rng = np.random.default_rng(s)
    d, eta = 8, 0.05
    X, y, theta = rng.standard_normal((n, d)), rng.standard_normal(n), rng.standard_normal(d)
    v = theta.copy()
    for _ in range(s):
        v -= eta * X.T @ (X @ v - y) / n
    K = local_update_operator(X, eta, "fedavg", local_steps=s)
    np.testing.assert_allclose(theta + K @ (y - X @ theta), v, rtol=1e-12, atol=1e-13)


def test_fedavg1_is_one_gradient_step_on_pooled_cluster_least_squares(unbalanced):
    """With w_i = n_i / N, FedAvg(1): theta_l <- theta_l - eta grad (1/(2N)) ||X_S theta - y_S||^2."""
    pb = unbalanced
    rng = np.random.default_rng(5)
    theta0 = pb.theta_star + 0.3 * rng.standard_normal(pb.theta_star.shape)
    eta = 0.8
    res = fedx(pb, theta0, eta, local_solver="fedavg", n_rounds=1, history=True)
    # the decoder of round 0, by hand
    z = np.array([np.argmin([np.sum((pb.client(i)[1] - pb.client(i)[0] @ t) ** 2) for t in theta0])
                  for i in range(pb.m)])
    rows = np.repeat(z, pb.sizes)
    expected = theta0.copy()
    for l in range(pb.k):
        Xs, ys = pb.X[rows == l], pb.y[rows == l]
        expected[l] -= eta * Xs.T @ (Xs @ theta0[l] - ys) / pb.N
    np.testing.assert_allclose(res.theta[0], expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("solver,s", [("fedavg", 1), ("fedavg", 3), ("fedprox", 1)])
def test_matches_reference_with_single_point_clients(unbalanced, solver, s):
    pb = unbalanced
    rng = np.random.default_rng(1)
    theta0 = pb.theta_star + 0.5 * rng.standard_normal((2, pb.k, pb.d))
    etas = np.array([0.05, 0.2]) if solver == "fedavg" else np.array([0.5, 4.0])
    res = fedx(pb, theta0, etas, local_solver=solver, local_steps=s, n_rounds=12)
    assert not res.diverged.any() and np.isfinite(res.theta).all()
    for b in range(2):
        ref = reference_fedx(pb, theta0[b], etas[b], 12, solver, s)
        np.testing.assert_allclose(res.theta[b], ref, rtol=1e-10, atol=1e-12)
    # B = 1 is the same code path and gives the same numbers
    single = fedx(pb, theta0[1], etas[1], local_solver=solver, local_steps=s, n_rounds=12)
    np.testing.assert_allclose(single.theta[0], res.theta[1], rtol=1e-13, atol=1e-14)


def test_all_clients_of_one_point():
    pb = _problem([1] * 40, d=5, k=2, sigma=0.1, seed=3)
    theta0 = pb.theta_star + 0.2
    for solver, eta in (("fedavg", 0.1), ("fedprox", 2.0)):
        res = fedx(pb, theta0, eta, local_solver=solver, n_rounds=5)
        np.testing.assert_allclose(res.theta[0], reference_fedx(pb, theta0, eta, 5, solver), rtol=1e-10,
                                   atol=1e-12)


def test_decoder_ties_go_to_the_lowest_index_and_unchosen_models_stay():
    pb = _problem([3, 4, 5, 2], d=4, k=3, seed=1)  # every cluster holds a client (an empty one would warn)
    theta0 = np.zeros((3, 4))
    theta0[2] = 100.0  # far away: nobody chooses model 2
    res = fedx(pb, theta0, 0.5, n_rounds=1, history=True)
    assert (res.history.misclustered_clients.shape == (1, 1))
    # models 0 and 1 tie exactly at round 0, so every client decodes 0: model 1 keeps its value
    np.testing.assert_array_equal(res.theta[0, 1], theta0[1])
    np.testing.assert_array_equal(res.theta[0, 2], theta0[2])
    assert not np.array_equal(res.theta[0, 0], theta0[0])


def test_history_and_final_decoding(unbalanced):
    pb = unbalanced
    res = fedx(pb, pb.theta_star, 0.5, n_rounds=4, history=True)
    h = res.history
    assert h.matched_max.shape == (5, 1) and h.theta.shape == (5, 1, pb.k, pb.d)
    assert h.loss.shape == h.misclustered_data.shape == h.misclustered_clients.shape == (4, 1)
    assert h.matched_max[0, 0] == 0.0
    assert 0.0 <= h.misclustered_data.min() and h.misclustered_data.max() <= 1.0
    np.testing.assert_array_equal(h.theta[-1], res.theta)
    assert res.assignments.shape == (1, pb.m)
    assert np.isclose(res.train_loss[0], sum(
        np.sum((pb.client(i)[1] - pb.client(i)[0] @ res.theta[0, res.assignments[0, i]]) ** 2)
        for i in range(pb.m)) / (2 * pb.N))


def test_diverging_replica_is_frozen_and_flagged(unbalanced):
    pb = unbalanced
    theta0 = np.repeat(pb.theta_star[None] + 0.1, 3, axis=0)
    # eta = 0.5 makes the one-point clients' local steps unstable (eta > 2 / ||x||^2): the error
    # grows about 1.7x per round and stays finite for hundreds of rounds; it is divergence all
    # the same, flagged once the parameters grow a millionfold
    res = fedx(pb, theta0, np.array([0.05, 1e6, 0.5]), local_solver="fedavg", local_steps=3, n_rounds=60)
    assert res.diverged.tolist() == [False, True, True]
    assert np.isfinite(res.theta).all() and np.isnan(res.train_loss[1:]).all()
    assert res.diverged_round[0] == -1 and (res.diverged_round[1:] >= 0).all()
    assert np.abs(res.theta[2]).max() < 1e8, "frozen before the update that blew up"
    alone = fedx(pb, theta0[0], 0.05, local_solver="fedavg", local_steps=3, n_rounds=60)
    np.testing.assert_allclose(alone.theta[0], res.theta[0], rtol=1e-13, atol=1e-14)


def test_linear_rate_is_the_measured_noiseless_contraction():
    """Noiseless, correct decoding: theta_l - theta*_l = A_l^t (theta_l0 - theta*_l) with A_l
    symmetric, so every round shrinks cluster l's error by at most the predicted spectral radius,
    and the per-round ratio tends to it."""
    pb = _problem([40, 60, 50, 80, 45, 70], d=5, k=2, sigma=0.0, seed=4)
    for solver, eta in (("fedavg", 1.0), ("fedprox", 1.0)):
        rates = fedx_linear_rates(pb, eta, solver)
        res = fedx(pb, pb.theta_star + 0.05, eta, local_solver=solver, n_rounds=80, history=True)
        err = np.linalg.norm(res.history.theta[:, 0] - pb.theta_star, axis=2)  # (T + 1, k)
        for l in range(pb.k):
            e = err[err[:, l] > 1e-11, l]
            ratio = e[1:] / e[:-1]
            assert ratio.max() <= rates[l] * (1 + 1e-9), (solver, l, ratio.max(), rates[l])
            assert ratio[-1] > rates[l] - 0.03, (solver, l, ratio[-1], rates[l])


def test_stacked_operators_rows_and_weights(unbalanced):
    pb = unbalanced
    KT = stacked_update_operators(pb, 0.3, "fedprox")
    for i in (0, 6, 11):
        lo, hi = pb.offsets[i], pb.offsets[i + 1]
        K = local_update_operator(pb.client(i)[0], 0.3, "fedprox")
        np.testing.assert_allclose(KT[lo:hi], (hi - lo) / pb.N * K.T, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(step_size=0.0), "step_size"),
        (dict(step_size=np.array([0.1, 0.2, 0.3])), "step_size"),
        (dict(local_solver="sgd"), "local_solver"),
        (dict(local_steps=0), "local_steps"),
        (dict(n_rounds=0), "n_rounds"),
        (dict(init=np.zeros((2, 3, 5))), "init"),
    ],
)
def test_bad_inputs_name_the_parameter(unbalanced, kwargs, match):
    args = dict(init=np.zeros((2, unbalanced.k, unbalanced.d)), step_size=0.1)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        fedx(unbalanced, args.pop("init"), args.pop("step_size"), **args)
