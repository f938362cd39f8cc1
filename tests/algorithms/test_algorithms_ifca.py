"""Tests of mixreg.algorithms.ifca against a plain per-client NumPy implementation written here."""

import importlib

import numpy as np
import pytest

from mixreg.algorithms import data_scales, level_scales
from mixreg.algorithms.ifca import ifca, initial_parameters, training_loss
from mixreg.problems import make_problem, make_problem_from_parameters

# the module (the package exports a function of the same name)
ifca_mod = importlib.import_module("mixreg.algorithms.ifca")


def reference_ifca(problem, theta0, gamma, T, option="gradient", tau=1, rounds_data=None, active_sets=None):
    """Algorithm 2, one replica, one client at a time, float64, no cleverness.

    ``rounds_data[t] = (ident_rows, grad_rows)``: per client, the row indices used in round t.
    ``active_sets[t]``: participating clients of round t.
    """
    X, y = problem.X.astype(np.float64), problem.y.astype(np.float64)
    theta = np.array(theta0, dtype=np.float64)
    k = theta.shape[0]
    m = problem.m
    for t in range(T):
        new = theta.copy()
        grads = np.zeros_like(theta)
        members = [[] for _ in range(k)]
        for i in range(m):
            if active_sets is not None and i not in active_sets[t]:
                continue
            if rounds_data is None:
                lo, hi = problem.offsets[i], problem.offsets[i + 1]
                ident = grad_rows = np.arange(lo, hi)
            else:
                ident, grad_rows = rounds_data[t][0][i], rounds_data[t][1][i]
            losses = [np.mean((y[ident] - X[ident] @ theta[j]) ** 2) for j in range(k)]
            j = int(np.argmin(losses))  # first index on ties
            Xi, yi = X[grad_rows], y[grad_rows]
            if option == "gradient":
                grads[j] += 2.0 / len(yi) * Xi.T @ (Xi @ theta[j] - yi)
            else:
                loc = theta[j].copy()
                for _ in range(tau):
                    loc -= gamma * 2.0 / len(yi) * Xi.T @ (Xi @ loc - yi)
                members[j].append(loc)
        if option == "gradient":
            new = theta - gamma / m * grads
        else:
            for j in range(k):
                if members[j]:
                    new[j] = np.mean(members[j], axis=0)
        theta = new
    return theta


@pytest.fixture(scope="module")
def small_problem():
    return make_problem(m=12, k=3, n=20, d=8, sigma=0.3, scale=1.0, rng=np.random.default_rng(1))


@pytest.mark.parametrize("option,tau", [("gradient", 1), ("model", 1), ("model", 3)])
def test_matches_reference(small_problem, option, tau):
    pb = small_problem
    theta0 = initial_parameters(pb, 2, "gaussian", rng=np.random.default_rng(2))
    gammas = np.array([0.05, 0.2])
    res = ifca(pb, theta0, gammas, n_rounds=15, option=option, local_steps=tau)
    for b in range(2):
        ref = reference_ifca(pb, theta0[b], gammas[b], 15, option=option, tau=tau)
        np.testing.assert_allclose(res.theta[b], ref, rtol=1e-10, atol=1e-12)
    assert not res.diverged.any()


def test_unequal_client_sizes_match_reference():
    rng = np.random.default_rng(3)
    theta_star = rng.standard_normal((2, 5))
    labels = np.array([0, 1, 0, 1, 1, 0, 0])
    sizes = np.array([3, 9, 1, 15, 4, 7, 2])
    pb = make_problem_from_parameters(theta_star, labels, sizes, 0.2, rng=rng)
    theta0 = initial_parameters(pb, 3, "gaussian", rng=rng)
    for option in ("gradient", "model"):
        res = ifca(pb, theta0, 0.1, n_rounds=10, option=option, local_steps=2)
        for b in range(3):
            ref = reference_ifca(pb, theta0[b], 0.1, 10, option=option, tau=2)
            np.testing.assert_allclose(res.theta[b], ref, rtol=1e-10, atol=1e-12)


def test_batch_equals_separate_runs(small_problem):
    pb = small_problem
    theta0 = initial_parameters(pb, 4, "official", rng=np.random.default_rng(5))
    gammas = np.array([0.01, 0.1, 0.3, 1.0])
    batch = ifca(pb, theta0, gammas, n_rounds=20, participation=0.5, rng=np.random.default_rng(9))
    for b in range(4):
        one = ifca(pb, theta0[b], gammas[b], n_rounds=20, participation=0.5, rng=np.random.default_rng(9))
        np.testing.assert_allclose(batch.theta[b], one.theta[0], rtol=1e-12, atol=1e-13)
        np.testing.assert_array_equal(batch.assignments[b], one.assignments[0])


def test_partial_participation_matches_reference(small_problem):
    pb = small_problem
    theta0 = initial_parameters(pb, 1, "gaussian", rng=np.random.default_rng(6))
    res = ifca(pb, theta0, 0.2, n_rounds=8, participation=0.25, rng=np.random.default_rng(11))
    # replay the generator: each round draws round(0.25 * 12) = 3 clients without replacement
    rng = np.random.default_rng(11)
    active_sets = [set(rng.choice(pb.m, size=3, replace=False).tolist()) for _ in range(8)]
    ref = reference_ifca(pb, theta0[0], 0.2, 8, active_sets=active_sets)
    np.testing.assert_allclose(res.theta[0], ref, rtol=1e-10, atol=1e-12)


def test_resampling_uses_disjoint_fresh_subsets(small_problem, monkeypatch):
    pb = make_problem(m=6, k=2, n=40, d=4, sigma=0.1, scale=1.0, rng=np.random.default_rng(7))
    T = 5
    Xr, yr, offr = ifca_mod._resampled_rounds(pb, T, np.random.default_rng(8))
    # recover which original rows each subset holds
    row_of = {tuple(np.round(r, 12)): i for i, r in enumerate(pb.X)}
    used = []
    for s in range(2 * T):
        rows = np.array([row_of[tuple(np.round(r, 12))] for r in Xr[s]])
        for i in range(pb.m):
            part = rows[offr[i] : offr[i + 1]]
            assert part.size == 40 // (2 * T)
            assert np.all((part >= pb.offsets[i]) & (part < pb.offsets[i + 1]))  # the client's own rows
        used.append(rows)
    allrows = np.concatenate(used)
    assert np.unique(allrows).size == allrows.size  # all 2T subsets are pairwise disjoint
    np.testing.assert_array_equal(yr[3], pb.y[used[3]])


def test_resampled_run_matches_reference():
    pb = make_problem(m=6, k=2, n=40, d=4, sigma=0.1, scale=1.0, rng=np.random.default_rng(7))
    T = 4
    theta0 = initial_parameters(pb, 1, "close", rng=np.random.default_rng(1), alpha=0.25)
    res = ifca(pb, theta0, 0.5, n_rounds=T, resample=True, rng=np.random.default_rng(8))
    Xr, yr, offr = ifca_mod._resampled_rounds(pb, T, np.random.default_rng(8))
    row_of = {tuple(np.round(r, 12)): i for i, r in enumerate(pb.X)}
    def rows(s):
        idx = np.array([row_of[tuple(np.round(r, 12))] for r in Xr[s]])
        return [idx[offr[i] : offr[i + 1]] for i in range(pb.m)]
    rounds_data = [(rows(2 * t), rows(2 * t + 1)) for t in range(T)]
    ref = reference_ifca(pb, theta0[0], 0.5, T, rounds_data=rounds_data)
    np.testing.assert_allclose(res.theta[0], ref, rtol=1e-10, atol=1e-12)


def test_resampling_needs_enough_points(small_problem):
    theta0 = initial_parameters(small_problem, 1, "truth")
    with pytest.raises(ValueError, match="n_i >= 2 \\* n_rounds"):
        ifca(small_problem, theta0, 0.1, n_rounds=11, resample=True, rng=np.random.default_rng(0))


def test_noiseless_well_separated_converges_to_truth():
    pb = make_problem(m=20, k=2, n=50, d=10, sigma=0.0, scale=1.0, rng=np.random.default_rng(4))
    theta0 = initial_parameters(pb, 3, "close", rng=np.random.default_rng(5), alpha=0.25)
    res = ifca(pb, theta0, 1.0, n_rounds=200, history=True)
    err = np.abs(res.theta - pb.theta_star[None]).max()
    assert err < 1e-8
    assert np.all(res.history.matched_max[-1] < 1e-8)
    assert np.all(res.train_loss < 1e-15)


def test_nan_replica_frozen_and_flagged(small_problem):
    pb = small_problem
    theta0 = initial_parameters(pb, 3, "official", rng=np.random.default_rng(5))
    res = ifca(pb, theta0, np.array([0.1, 1e8, 0.1]), n_rounds=60, history=True)
    assert res.diverged.tolist() == [False, True, False]
    assert res.diverged_round[1] >= 0 and res.diverged_round[0] == -1
    assert np.all(np.isfinite(res.theta))  # frozen at the last finite parameters
    assert np.isnan(res.train_loss[1]) and np.isfinite(res.train_loss[[0, 2]]).all()
    assert np.isnan(res.history.nearest[-1, 1])
    # the other replicas are unaffected
    ok = ifca(pb, theta0[[0, 2]], 0.1, n_rounds=60)
    np.testing.assert_allclose(res.theta[[0, 2]], ok.theta, rtol=1e-12)


def test_all_diverged_stops_early(small_problem):
    theta0 = initial_parameters(small_problem, 2, "official", rng=np.random.default_rng(5))
    res = ifca(small_problem, theta0, 1e8, n_rounds=100)
    assert res.diverged.all() and res.n_rounds < 100
    assert "diverged" in res.stop_reason


def test_float32_close_to_float64(small_problem):
    pb64 = small_problem
    pb32 = pb64.astype(np.float32)
    theta0 = initial_parameters(pb64, 2, "close", rng=np.random.default_rng(3))
    r64 = ifca(pb64, theta0, 0.5, n_rounds=30)
    r32 = ifca(pb32, theta0.astype(np.float32), 0.5, n_rounds=30)
    assert r32.theta.dtype == np.float32
    np.testing.assert_allclose(r32.theta, r64.theta, rtol=1e-4, atol=1e-4)


def test_training_loss_definition(small_problem):
    pb = small_problem
    theta = initial_parameters(pb, 2, "gaussian", rng=np.random.default_rng(0))
    loss, assign = training_loss(pb, theta)
    for b in range(2):
        per = np.array([[np.mean((pb.client(i)[1] - pb.client(i)[0] @ theta[b, j]) ** 2) for j in range(pb.k)] for i in range(pb.m)])
        np.testing.assert_allclose(loss[b], per.min(axis=1).mean(), rtol=1e-12)
        np.testing.assert_array_equal(assign[b], per.argmin(axis=1))


def test_ties_go_to_lowest_index():
    pb = make_problem(m=4, k=2, n=5, d=3, sigma=0.1, scale=1.0, rng=np.random.default_rng(0))
    theta0 = np.zeros((1, 2, 3))  # identical models: every client ties
    res = ifca(pb, theta0, 0.1, n_rounds=1)
    # all clients went to model 0, model 1 got no gradient
    np.testing.assert_array_equal(res.theta[0, 1], 0.0)
    assert np.any(res.theta[0, 0] != 0.0)


def test_initial_parameters(small_problem):
    pb = small_problem
    rng = np.random.default_rng(0)
    off = initial_parameters(pb, 5, "official", rng=rng)
    assert off.shape == (5, pb.k, pb.d) and set(np.unique(off)) <= {0.0, 1.0}
    close = initial_parameters(pb, 5, "close", rng=rng, alpha=0.25)
    dist = np.linalg.norm(close - pb.theta_star[None], axis=2)
    np.testing.assert_allclose(dist, 0.25 * pb.separation, rtol=1e-12)
    np.testing.assert_array_equal(initial_parameters(pb, 2, "truth")[1], pb.theta_star)
    assert initial_parameters(pb.astype(np.float32), 1, "truth").dtype == np.float32


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"step_size": 0.0}, "step_size"),
        ({"step_size": -1.0}, "step_size"),
        ({"step_size": np.array([0.1, 0.2, 0.3])}, "step_size"),
        ({"n_rounds": 0}, "n_rounds"),
        ({"option": "both"}, "option"),
        ({"local_steps": 0}, "local_steps"),
        ({"participation": 0.0}, "participation"),
        ({"participation": 1.5}, "participation"),
        ({"participation": 0.5}, "rng is required"),
        ({"init": np.zeros((2, 3, 7))}, "init must have shape"),
        ({"init": np.full((2, 3, 8), np.nan)}, "init must contain only finite"),
    ],
)
def test_bad_input(small_problem, kwargs, match):
    args = {"init": np.zeros((2, 3, 8)), "step_size": 0.1}
    args.update(kwargs)
    init = args.pop("init")
    step = args.pop("step_size")
    with pytest.raises((ValueError, TypeError), match=match):
        ifca(small_problem, init, step, **args)


def test_bad_init_method(small_problem):
    with pytest.raises(ValueError, match="method"):
        initial_parameters(small_problem, 1, "random")
    with pytest.raises(ValueError, match="rng is required"):
        initial_parameters(small_problem, 1, "gaussian")
    with pytest.raises(ValueError, match="n_replicas"):
        initial_parameters(small_problem, 0, "truth")


def test_data_aggregation_is_a_step_on_the_pooled_loss():
    """aggregation='data': theta_j -= gamma (2/N) sum_{i in S_j} X_i^T (X_i theta_j - y_i), one
    gradient step on the pooled per-sample mean loss of the clients that chose j."""
    rng = np.random.default_rng(5)
    sizes = np.array([1, 2, 7, 3, 12, 1, 5, 9])
    pb = make_problem_from_parameters(rng.standard_normal((2, 4)), np.arange(8) % 2, sizes, 0.3, rng=rng)
    theta0 = pb.theta_star + 0.2 * rng.standard_normal((2, 4))
    res = ifca(pb, theta0, 0.07, n_rounds=1, aggregation="data")
    _, assign = training_loss(pb, theta0[None])
    want = theta0.copy()
    for i in range(pb.m):
        X, y = pb.client(i)
        j = assign[0, i]
        want[j] -= 0.07 * (2.0 / pb.N) * X.T @ (X @ theta0[j] - y)
    np.testing.assert_allclose(res.theta[0], want, rtol=1e-12, atol=1e-14)


def test_fixed_points_with_the_true_labels_are_the_weighted_least_squares():
    """Started at the truth with identities that stay right, IFCA converges to the least squares
    that weighs each client as its aggregation does: data weights -> known-label LS; client
    weights -> the client-weighted LS sum_i (1/n_i) ||X_i theta - y_i||^2."""
    from mixreg.baselines import known_label_least_squares

    rng = np.random.default_rng(6)
    sizes = rng.integers(1, 30, size=40)
    pb = make_problem_from_parameters(np.array([[3.0, 0, 0], [0, 3.0, 0]]), np.arange(40) % 2, sizes, 0.5,
                                      rng=rng)
    data = ifca(pb, pb.theta_star, 0.2, n_rounds=3000, aggregation="data")
    np.testing.assert_allclose(data.theta[0], known_label_least_squares(pb), atol=1e-8)
    clients = ifca(pb, pb.theta_star, 0.2, n_rounds=3000)
    for j in range(2):
        A = sum(pb.client(i)[0].T @ pb.client(i)[0] / sizes[i] for i in range(40) if pb.labels[i] == j)
        b = sum(pb.client(i)[0].T @ pb.client(i)[1] / sizes[i] for i in range(40) if pb.labels[i] == j)
        np.testing.assert_allclose(clients.theta[0, j], np.linalg.solve(A, b), atol=1e-8)
    assert np.abs(clients.theta[0] - data.theta[0]).max() > 1e-3  # the two really differ here


def test_data_aggregation_needs_option_one():
    pb = make_problem(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="aggregation='data' is implemented for option='gradient' only"):
        ifca(pb, pb.theta_star, 0.1, option="model", aggregation="data")
    with pytest.raises(ValueError, match="aggregation must be one of"):
        ifca(pb, pb.theta_star, 0.1, aggregation="median")


def test_diverged_replicas_are_dropped_from_the_products(monkeypatch):
    """Compaction: once a replica diverges, later rounds' products have fewer rows, and the live
    replicas end where an uncompacted run ends (up to the last bits of other product shapes)."""
    ifca_module = importlib.import_module("mixreg.algorithms.ifca")
    pb = make_problem(m=20, k=2, n=30, d=8, sigma=0.1, scale=1.0, rng=np.random.default_rng(0))
    init = initial_parameters(pb, 6, "gaussian", rng=np.random.default_rng(1))
    steps = np.array([0.3, 50.0, 0.1, 80.0, 0.2, 0.05])
    rows = []
    predict = ifca_module.kernels.predict

    def spy(theta, X, out=None):
        rows.append(theta.shape[0])
        return predict(theta, X, out=out)

    monkeypatch.setattr(ifca_module.kernels, "predict", spy)
    compacted = ifca(pb, init, steps, n_rounds=60)
    assert compacted.diverged.tolist() == [False, True, False, True, False, False]
    assert rows[0] == 6 and rows[-2] == 4  # the last call is the final training loss, on all replicas
    monkeypatch.setattr(ifca_module, "COMPACT", False)
    rows.clear()
    full = ifca(pb, init, steps, n_rounds=60)
    assert set(rows) == {6}
    np.testing.assert_array_equal(full.diverged, compacted.diverged)
    np.testing.assert_array_equal(full.diverged_round, compacted.diverged_round)
    live = ~full.diverged
    np.testing.assert_allclose(compacted.theta[live], full.theta[live], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(compacted.theta[~live], full.theta[~live])  # frozen at the same point


@pytest.mark.parametrize(
    "kwargs, exc, pattern",
    [
        (dict(response_of=np.zeros(2, dtype=int)), ValueError, "response_of is given without responses"),
        (dict(responses=np.zeros((2, 7))), ValueError, r"responses must have shape \(G, N\)"),
        (dict(responses="y32", response_of=np.zeros(2, dtype=int)), TypeError, "responses must have the problem's dtype"),
        (dict(responses="y", response_of=None), ValueError, r"response_of must be an integer array of shape \(B,\)"),
        (dict(responses="y", response_of=np.array([0, 1])), ValueError, r"response_of must lie in \[0, G\)"),
        (dict(responses="y", response_of=np.zeros(2, dtype=int), option="model"), ValueError,
         "responses are implemented for option='gradient'"),
    ],
)
def test_bad_responses_name_the_parameter(kwargs, exc, pattern):
    pb = make_problem(m=6, k=2, n=5, d=3, sigma=0.1, scale=1.0, rng=np.random.default_rng(0))
    if isinstance(kwargs.get("responses"), str):
        y = pb.y[None] if kwargs["responses"] == "y" else pb.y[None].astype(np.float32)
        kwargs = dict(kwargs, responses=y)
    with pytest.raises(exc, match=pattern):
        ifca(pb, np.zeros((2, 2, 3)), 0.1, n_rounds=2, **kwargs)


def test_level_scales_are_each_levels_data_scales_bit_for_bit():
    """The divergence floors of a shared-draw batch: X's mean square is computed once for all
    levels, and each level's floors equal those of a separate run on its responses (N = 10,000,
    enough for summation orders to show in the last bits)."""
    pb = make_problem(m=200, k=2, n=50, d=20, sigma=0.1, scale=1.0, rng=np.random.default_rng(0), dtype="float32")
    Y = np.stack([pb.y, 3.0 * pb.y, np.zeros_like(pb.y)])
    scales = level_scales(pb, Y)
    assert scales.shape == (3, 2)
    for y, row in zip(Y, scales):
        assert tuple(row) == data_scales(pb, y=y)
    assert scales[1, 1] != scales[0, 1] and scales[2, 0] > 0  # the levels' own floors; never zero


@pytest.mark.parametrize("n,d", [(20, 8), (6, 8)])
def test_option_ii_local_steps_with_partial_participation_match_reference(n, d):
    """Option II's unrolled local steps (n > d: through X_i^T X_i; n <= d: through X_i X_i^T) with
    clients left out of a round: the reference's steps one after the other."""
    pb = make_problem(m=12, k=3, n=n, d=d, sigma=0.3, scale=1.0, rng=np.random.default_rng(1))
    theta0 = initial_parameters(pb, 2, "gaussian", rng=np.random.default_rng(6))
    gammas = np.array([0.02, 0.05])
    res = ifca(pb, theta0, gammas, n_rounds=8, option="model", local_steps=4, participation=0.5,
               rng=np.random.default_rng(11))
    rng = np.random.default_rng(11)
    active_sets = [set(rng.choice(pb.m, size=6, replace=False).tolist()) for _ in range(8)]
    for b in range(2):
        ref = reference_ifca(pb, theta0[b], gammas[b], 8, option="model", tau=4, active_sets=active_sets)
        np.testing.assert_allclose(res.theta[b], ref, rtol=1e-10, atol=1e-12)
    assert not res.diverged.any()
