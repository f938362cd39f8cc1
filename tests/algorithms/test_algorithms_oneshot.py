"""Tests of :mod:`mixreg.algorithms.oneshot` (Ghosh et al. 2020, Algorithm 1)."""

import warnings

import numpy as np
import pytest

from mixreg.algorithms import get_algorithm
from mixreg.algorithms.oneshot import oneshot
from mixreg.baselines import known_label_least_squares
from mixreg.clustering import kmeans
from mixreg.metrics import misclustering_rate
from mixreg.problems import make_problem, make_problem_from_parameters


def _problem(sigma=0.3, n=None, seed=3):
    """12 clients of unequal sizes (so the FedAvg weights n_i / N_l matter), k = 2, d = 4."""
    rng = np.random.default_rng(seed)
    sizes = np.array([6, 9, 15, 7, 20, 11, 8, 14, 5, 12, 9, 17]) if n is None else n
    return make_problem(m=12, k=2, n=sizes, d=4, sigma=sigma, scale=2.0, protocol="gaussian", rng=rng)


# --------------------------------------------------------------------------------------------
# A plain reference, written from the algorithm box: one client at a time
# --------------------------------------------------------------------------------------------


def _reference(pb, init, steps, *, n_rounds, seed, local_steps=1, start="centres", local="min_norm",
               ridge=None, n_init=10):
    """Algorithm 1 with numpy only (except the shared k-means, which has its own tests)."""
    m, d = pb.m, pb.d
    k = init.shape[1]
    clients = [pb.client(i) for i in range(m)]
    # step 1: every client's own least squares
    local_models = np.empty((m, d))
    for i, (X, y) in enumerate(clients):
        X, y = X.astype(np.float64), y.astype(np.float64)
        if local == "min_norm":
            local_models[i] = np.linalg.pinv(X) @ y
        else:
            lam = 1e-3 * np.trace(X.T @ X / len(y)) / d if ridge is None else ridge
            local_models[i] = np.linalg.solve(X.T @ X / len(y) + lam * np.eye(d), X.T @ y / len(y))
    # step 2: k-means on the server (the shared implementation, same Generator seed)
    km = kmeans(local_models, k, n_init=n_init, rng=np.random.default_rng(seed))
    labels = km.labels
    # step 3: FedAvg(s) within each estimated cluster, client by client
    thetas = []
    for b, eta in enumerate(steps):
        theta = km.centres.copy() if start == "centres" else init[b].astype(np.float64).copy()
        for _ in range(n_rounds):
            new = theta.copy()
            for l in range(k):
                members = [i for i in range(m) if labels[i] == l]
                if not members:
                    continue
                N_l = sum(len(clients[i][1]) for i in members)
                avg = np.zeros(d)
                for i in members:
                    X, y = clients[i]
                    w = theta[l].copy()
                    for _ in range(local_steps):
                        w = w - eta / len(y) * X.T @ (X @ w - y)
                    avg += len(y) / N_l * w
                new[l] = avg
            theta = new
        thetas.append(theta)
    theta = np.array(thetas)
    loss = np.array([sum(np.sum((y - X @ th[labels[i]]) ** 2) for i, (X, y) in enumerate(clients))
                     for th in theta]) / (2 * pb.N)
    return local_models, labels, theta, loss


@pytest.mark.parametrize("local_steps, start", [(1, "centres"), (3, "centres"), (2, "init")])
def test_matches_the_reference_loop(local_steps, start):
    pb = _problem()
    rng = np.random.default_rng(5)
    init = pb.theta_star[None] + rng.standard_normal((3, 2, pb.d))
    steps = np.array([0.5, 0.2, 0.05])
    res = oneshot(pb, init, steps, n_rounds=12, rng=np.random.default_rng(7), local_steps=local_steps,
                  start=start)
    local_models, labels, theta, loss = _reference(pb, init, steps, n_rounds=12, seed=7,
                                                   local_steps=local_steps, start=start)
    np.testing.assert_allclose(res.local_models, local_models, rtol=1e-10, atol=1e-12)
    assert (res.assignments == labels).all() and res.assignments.shape == (3, pb.m)
    np.testing.assert_allclose(res.theta, theta, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.train_loss, loss, rtol=1e-10)
    assert res.n_rounds == 12 and not res.diverged.any()
    assert res.local == "min_norm" and res.finish == "fedavg"


@pytest.mark.parametrize("ridge", [None, 0.5])
def test_ridge_local_models_match_the_reference(ridge):
    pb = _problem(n=np.array([3, 2, 6, 4, 3, 9, 2, 5, 3, 4, 6, 2]))  # some clients with n_i < d
    init = np.zeros((2, 2, pb.d))
    res = oneshot(pb, init, [0.3, 0.1], n_rounds=5, rng=np.random.default_rng(2), local="ridge", ridge=ridge)
    local_models, labels, theta, loss = _reference(pb, init, [0.3, 0.1], n_rounds=5, seed=2, local="ridge",
                                                   ridge=ridge)
    np.testing.assert_allclose(res.local_models, local_models, rtol=1e-9, atol=1e-12)
    assert (res.assignments == labels).all()
    np.testing.assert_allclose(res.theta, theta, rtol=1e-9, atol=1e-12)
    assert res.local == "ridge"


def test_the_clustering_depends_on_the_generator_and_n_init():
    """k-means++ is seeded from ``rng``; ``n_init`` restarts are passed on (inertia of the best)."""
    pb = _problem(sigma=3.0)  # noisy local models: k-means restarts disagree
    inertias = {(seed, n_init): oneshot(pb, np.zeros((3, pb.d)), 0.1, n_rounds=1, rng=np.random.default_rng(seed),
                                        n_init=n_init).kmeans_inertia
                for seed in range(6) for n_init in (1, 20)}
    for seed in range(6):
        ref = kmeans(oneshot(pb, np.zeros((3, pb.d)), 0.1, n_rounds=1, rng=np.random.default_rng(0)).local_models,
                     3, n_init=20, rng=np.random.default_rng(seed))
        assert inertias[seed, 20] == pytest.approx(ref.inertia, rel=1e-12)
        assert inertias[seed, 20] <= inertias[seed, 1] + 1e-12
    assert len({round(inertias[s, 1], 9) for s in range(6)}) > 1


# --------------------------------------------------------------------------------------------
# Known answers
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("finish", ["fedavg", "exact"])
def test_exact_recovery_without_noise(finish):
    """sigma = 0 and n_i >> d: every local model is its truth, k-means is exact, and so is the fit."""
    pb = make_problem(m=20, k=3, n=40, d=5, sigma=0.0, scale=3.0, protocol="gaussian", rng=np.random.default_rng(1))
    res = oneshot(pb, np.zeros((2, 3, 5)), 0.7, n_rounds=3, rng=np.random.default_rng(2), finish=finish)
    np.testing.assert_allclose(res.local_models, pb.theta_star[pb.labels], atol=1e-10)
    assert misclustering_rate(res.assignments, pb.labels, 3).tolist() == [0.0, 0.0]
    truth_of = {int(z): int(t) for z, t in zip(res.assignments[0], pb.labels)}
    np.testing.assert_allclose(res.theta[:, list(truth_of)], np.broadcast_to(
        pb.theta_star[list(truth_of.values())], (2, 3, 5)), atol=1e-10)
    assert res.kmeans_inertia < 1e-18 and (res.train_loss < 1e-20).all()


def test_exact_finish_is_the_known_label_least_squares_when_the_clustering_is_right():
    pb = make_problem(m=16, k=2, n=np.arange(10, 26), d=4, sigma=0.3, scale=3.0, protocol="gaussian",
                      proportions=[0.5, 0.5], rng=np.random.default_rng(8))
    assert np.any(np.diff(pb.labels) < 0), "interleaved labels: each cluster's rows are not one block"
    res = oneshot(pb, np.zeros((2, 2, 4)), 0.5, n_rounds=7, rng=np.random.default_rng(0), finish="exact",
                  history=True)
    assert misclustering_rate(res.assignments[0], pb.labels, 2) == 0.0
    perm = [int(pb.labels[np.flatnonzero(res.assignments[0] == l)[0]]) for l in range(2)]
    ls = known_label_least_squares(pb)[perm]
    np.testing.assert_allclose(res.theta, np.broadcast_to(ls, (2, 2, 4)), rtol=1e-10)
    row = np.repeat(res.assignments[0], pb.sizes)
    resid = pb.y - np.einsum("nd,nd->n", pb.X, ls[row])
    np.testing.assert_allclose(res.train_loss, resid @ resid / (2 * pb.N), rtol=1e-10)
    # one "round", the solve; nothing diverges; the history shows the centres and the fit
    assert res.n_rounds == 1 and res.stop_reason.startswith("solved exactly")
    assert not res.diverged.any() and (res.diverged_round == -1).all()
    h = res.history
    assert h.theta.shape == (2, 2, 2, 4) and h.loss.shape == (1, 2)
    assert (h.misclustered_clients == 0).all()
    np.testing.assert_allclose(h.theta[1], res.theta)
    assert (res.train_loss < h.loss[0]).all()  # the pooled fit minimises the labelled objective
    # FedAvg run to convergence reaches the same fixed point
    fed = oneshot(pb, np.zeros((2, 4)), 1.0, n_rounds=2000, tol=1e-13, rng=np.random.default_rng(0))
    np.testing.assert_allclose(fed.theta[0], ls, rtol=1e-9, atol=1e-11)
    assert fed.stop_reason.startswith("converged")


def test_without_noise_and_n_i_below_d_the_local_model_is_the_projected_truth():
    """min-norm local least squares with n_i < d: X_i^+ y_i = P_i theta*_{z_i}, P_i = X_i^+ X_i."""
    pb = make_problem(m=6, k=2, n=3, d=8, sigma=0.0, scale=2.0, protocol="gaussian", rng=np.random.default_rng(4))
    res = oneshot(pb, np.zeros((2, 8)), 0.1, n_rounds=1, rng=np.random.default_rng(0))
    for i in range(pb.m):
        X, _ = pb.client(i)
        P = np.linalg.pinv(X) @ X
        np.testing.assert_allclose(res.local_models[i], P @ pb.theta_star[pb.labels[i]], atol=1e-10)
        assert np.linalg.norm(res.local_models[i]) < np.linalg.norm(pb.theta_star[pb.labels[i]])


# --------------------------------------------------------------------------------------------
# The failure regime: clients with fewer points than dimensions
# --------------------------------------------------------------------------------------------


def _shared_component_problem(d, n, shared, seed, m=100, delta=2.0, sigma=0.5):
    """Two truths ``mu +- (delta / 2) u`` with ``||mu|| = shared``, ``mu`` orthogonal to ``u``."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    mu = rng.standard_normal(d)
    mu -= (mu @ u) * u
    mu *= shared / np.linalg.norm(mu)
    theta_star = np.stack([mu + delta / 2 * u, mu - delta / 2 * u])
    return make_problem_from_parameters(theta_star, np.repeat([0, 1], m // 2), n, sigma, rng=rng)


def _misclustering(d, n, shared, seeds=range(6)):
    rates = []
    for seed in seeds:
        pb = _shared_component_problem(d, n, shared, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a near-chance clustering may warn; that is the point
            res = oneshot(pb, np.zeros((2, d)), 0.5, n_rounds=1, rng=np.random.default_rng(100 + seed))
        rates.append(float(misclustering_rate(res.assignments[0], pb.labels, 2)))
    return np.array(rates)


def test_one_shot_breaks_down_when_clients_have_fewer_points_than_dimensions():
    """The same two truths (separation 2, a shared component of norm 5): with n_i = 10 < d = 40
    the local models are random projections of the truth and k-means is near chance (about 46%
    for m = 100 and k = 2); with n_i = 100 >> d = 5 it is exact.  Without the shared component
    the projected truths stay apart and n_i < d still clusters (the ratio sqrt(n_i) Delta /
    ||theta*|| of the module docstring, not n_i < d alone, decides)."""
    bad = _misclustering(40, 10, shared=5.0)
    good = _misclustering(5, 100, shared=5.0)
    no_shared = _misclustering(40, 10, shared=0.0)
    assert bad.mean() >= 0.35 and bad.min() >= 0.25, bad
    assert good.max() == 0.0, good
    assert no_shared.mean() <= 0.02, no_shared


# --------------------------------------------------------------------------------------------
# Options, registration, errors
# --------------------------------------------------------------------------------------------


def test_registration_and_communication():
    alg = get_algorithm("oneshot")
    assert alg.uses_rng and alg.options == {"local": "min_norm", "finish": "fedavg"}
    pb = _problem()
    a = alg.run(pb, np.zeros((2, 4)), 0.5, n_rounds=4, rng=np.random.default_rng(1))
    assert alg.communication(pb, a, 0) == (4 + 4 * 4, 4 * 4)
    b = oneshot(pb, np.zeros((2, 4)), 0.5, n_rounds=4, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(a.theta, b.theta)


def test_history_of_the_fedavg_phase_starts_at_the_centres():
    pb = _problem()
    res = oneshot(pb, np.zeros((2, 2, 4)), 0.5, n_rounds=6, rng=np.random.default_rng(1), history=True)
    centres = kmeans(res.local_models, 2, rng=np.random.default_rng(1)).centres
    np.testing.assert_allclose(res.history.theta[0], np.broadcast_to(centres, (2, 2, 4)), rtol=1e-12)
    np.testing.assert_allclose(res.history.theta[-1], res.theta)
    rate = misclustering_rate(res.assignments[0], pb.labels, 2)
    np.testing.assert_allclose(res.history.misclustered_clients, rate)


@pytest.mark.parametrize(
    "kwargs, exc, pattern",
    [
        (dict(local="ols"), ValueError, "local must be one of 'min_norm', 'ridge'"),
        (dict(ridge=0.1), ValueError, "ridge is only used with local='ridge'"),
        (dict(local="ridge", ridge=0.0), ValueError, r"ridge must be in \(0.0, inf\)"),
        (dict(n_init=0), ValueError, r"n_init must be in \[1, inf\)"),
        (dict(finish="newton"), ValueError, "finish must be one of 'fedavg', 'exact'"),
        (dict(start="zero"), ValueError, "start must be one of 'centres', 'init'"),
        (dict(local_steps=0), ValueError, r"local_steps must be in \[1, inf\)"),
        (dict(rng=None), ValueError, "rng is required"),
        (dict(rng=3), TypeError, "rng must be a numpy.random.Generator"),
        (dict(init=np.zeros((13, 4))), ValueError, "k=13 models but k-means on the m=12 local models"),
    ],
)
def test_bad_options_name_the_parameter(kwargs, exc, pattern):
    pb = _problem()
    args = dict(init=np.zeros((2, 4)), rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises(exc, match=pattern):
        oneshot(pb, args.pop("init"), 0.1, n_rounds=3, **args)
