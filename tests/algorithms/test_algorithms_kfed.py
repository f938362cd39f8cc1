"""Tests of :mod:`mixreg.algorithms.kfed` (k-FED, the IFCA thesis, Algorithm 2).

The local phase and the point labelling are checked against plain per-client loops written from
the algorithm box; the FedAvg phase is the shared trainer (tested in
``tests/algorithms/test_algorithms_fixed_labels.py``), checked here only for where it starts.  The regimes:
on clients that mix two well separated clusters with many points each, local regressions
recover the point labels (misclustering at the oracle's level) while local k-means on the raw
points ``(x, y)`` is near chance; with ``n_i`` small against ``k' d`` the local regressions are
underdetermined and the labelling breaks down.
"""

import warnings

import numpy as np
import pytest

from mixreg.algorithms import get_algorithm
from mixreg.algorithms.kfed import kfed
from mixreg.clustering import ClusteringWarning
from mixreg.metrics import misclustering_rate
from mixreg.problems import Problem, ProblemSpec, make_problem, make_problem_from_parameters, mixed_point_labels


def _mixed(m=12, n=60, d=3, sigma=0.05, scale=4.0, p=0.5, seed=0):
    spec = ProblemSpec(m=m, k=2, n=n, d=d, sigma=sigma, scale=scale, protocol="gaussian", main_fraction=p)
    return spec.generate(np.random.default_rng(seed))


def _unequal_mixed(seed=5):
    """Mixed clients of unequal sizes, one of them too small for its local regressions (n < k' d)."""
    rng = np.random.default_rng(seed)
    theta_star = np.array([[3.0, 0.0, 1.0, -1.0], [-2.0, 2.0, 0.0, 1.0]])
    labels = np.array([0, 1, 0, 1, 0, 1])
    sizes = np.array([40, 25, 6, 33, 40, 18])
    point_labels = mixed_point_labels(labels, sizes, 0.6, rng=rng)
    return make_problem_from_parameters(theta_star, labels, sizes, 0.1, rng=rng, point_labels=point_labels)


def _clients(pb):
    return [np.arange(pb.offsets[i], pb.offsets[i + 1]) for i in range(pb.m)]


# --------------------------------------------------------------------------------------------
# Plain references, written from the algorithm box (numpy only)
# --------------------------------------------------------------------------------------------


def _reference_local_regressions(pb, kl, restarts, max_iter, rng):
    """Per client, per restart: Lloyd's alternation with squared residuals as distances."""
    X, y = pb.X.astype(np.float64), pb.y.astype(np.float64)
    u = rng.random((restarts, pb.N))  # the driver's only draw before the server's k-means
    models = np.empty((pb.m, kl, pb.d))
    groups = np.empty(pb.N, dtype=np.int64)
    for i, rows in enumerate(_clients(pb)):
        runs = []
        for r in range(restarts):
            g = np.empty(rows.size, dtype=np.int64)
            g[np.argsort(u[r, rows], kind="stable")] = np.arange(rows.size) % kl  # rank q -> group q mod k'
            mu = np.zeros((kl, pb.d))
            for _ in range(max_iter):
                for c in range(kl):
                    members = g == c
                    if members.any():  # an emptied group keeps its model
                        mu[c] = np.linalg.lstsq(X[rows][members], y[rows][members], rcond=None)[0]
                sq = (y[rows][:, None] - X[rows] @ mu.T) ** 2
                new = np.argmin(sq, axis=1)  # ties to the lowest index
                done = np.array_equal(new, g)
                g = new
                if done:
                    break
            runs.append((sq.min(axis=1).sum(), mu.copy(), g.copy()))
        # the first restart whose SSE is within 1e-10 ||y_i||^2 of the least (rounding ties)
        least = min(run[0] for run in runs)
        best = next(run for run in runs if run[0] <= least + 1e-10 * np.sum(y[rows] ** 2))
        models[i], groups[rows] = best[1], best[2]
    return models, groups


def _reference_point_labels(pb, local, centroids, centroid_labels):
    """Algorithm 2 step 4: every point takes the server cluster of its nearest local centroid."""
    X, y = pb.X.astype(np.float64), pb.y.astype(np.float64)
    out = np.empty(pb.N, dtype=np.int64)
    for i, rows in enumerate(_clients(pb)):
        if local == "regressions":
            dist = (y[rows][:, None] - X[rows] @ centroids[i].T) ** 2
        else:
            z = np.column_stack([X[rows], y[rows]])
            dist = ((z[:, None, :] - centroids[i][None]) ** 2).sum(axis=2)
        out[rows] = centroid_labels[i, np.argmin(dist, axis=1)]
    return out


# --------------------------------------------------------------------------------------------
# The local phase and the labelling against the references
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kl", [2, 3])
def test_local_regressions_match_a_per_client_loop(kl):
    pb = _unequal_mixed()
    res = kfed(pb, np.zeros((3, 2, pb.d)), np.array([0.5, 0.2, 0.1]), n_rounds=3, local_clusters=kl,
               local_restarts=4, rng=np.random.default_rng(7))
    models, groups = _reference_local_regressions(pb, kl, 4, 100, np.random.default_rng(7))
    np.testing.assert_allclose(res.local_centroids, models, rtol=1e-10, atol=1e-10)
    client = np.repeat(np.arange(pb.m), pb.sizes)
    for b in range(3):
        np.testing.assert_array_equal(res.point_assignments[b], res.centroid_labels[client, groups])


def test_local_regressions_through_the_grams_match_a_per_client_loop():
    """Clients with n_i <= d (groups interpolated, solved through each client's Gram and held as
    coefficients on its rows), a client with n_i > d (the SVD on copied rows) and a client with a
    repeated row (a rank-deficient group, the SVD): the per-client loop's local models and groups."""
    rng = np.random.default_rng(3)
    theta_star = rng.standard_normal((2, 12))
    labels = np.array([0, 1, 0, 1, 0])
    sizes = np.array([10, 6, 30, 8, 11])
    point_labels = mixed_point_labels(labels, sizes, 0.6, rng=rng)
    pb = make_problem_from_parameters(theta_star, labels, sizes, 0.1, rng=rng, point_labels=point_labels)
    X = pb.X.copy()
    X[pb.offsets[3] + 1] = X[pb.offsets[3]]  # client 3: one row twice
    pb = Problem(X=X, y=pb.y, offsets=pb.offsets, labels=pb.labels, theta_star=pb.theta_star, sigma=pb.sigma,
                 point_labels=pb.point_labels)
    res = kfed(pb, np.zeros((2, 2, pb.d)), 0.1, n_rounds=2, local_restarts=5, rng=np.random.default_rng(4))
    models, groups = _reference_local_regressions(pb, 2, 5, 100, np.random.default_rng(4))
    np.testing.assert_allclose(res.local_centroids, models, rtol=1e-10, atol=1e-10)
    client = np.repeat(np.arange(pb.m), pb.sizes)
    np.testing.assert_array_equal(res.point_assignments[0], res.centroid_labels[client, groups])


@pytest.mark.parametrize("local", ["regressions", "points"])
def test_point_labels_are_the_server_cluster_of_the_nearest_local_centroid(local):
    pb = _unequal_mixed()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusteringWarning)
        res = kfed(pb, np.zeros((2, 2, pb.d)), np.array([0.4, 0.2]), n_rounds=3, local=local, local_restarts=3,
                   rng=np.random.default_rng(2))
    ref = _reference_point_labels(pb, local, res.local_centroids, res.centroid_labels)
    np.testing.assert_array_equal(res.point_assignments, np.stack([ref, ref]))
    # the server's k-means: every centre is the mean of its local centroids, each of which is
    # nearest to its own centre (a fixed point of Lloyd's iteration)
    flat = res.local_centroids.reshape(-1, res.local_centroids.shape[2])
    lab = res.centroid_labels.ravel()
    for g in range(2):
        np.testing.assert_allclose(res.server_centres[g], flat[lab == g].mean(axis=0), rtol=1e-12)
    nearest = ((flat[:, None] - res.server_centres[None]) ** 2).sum(axis=2).argmin(axis=1)
    np.testing.assert_array_equal(nearest, lab)
    # a client's cluster is the majority of its points' labels (ties to the lowest)
    majority = [np.bincount(ref[rows], minlength=2).argmax() for rows in _clients(pb)]
    np.testing.assert_array_equal(res.assignments, np.stack([majority, majority]))
    np.testing.assert_allclose(res.point_misclustering, misclustering_rate(res.point_assignments,
                                                                           pb.row_labels, 2))


def test_local_points_are_kmeans_fixed_points_of_each_client():
    pb = _unequal_mixed()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusteringWarning)
        res = kfed(pb, np.zeros((2, pb.d)), 0.3, n_rounds=2, local="points", local_restarts=3,
                   rng=np.random.default_rng(3))
    assert res.local_centroids.shape == (pb.m, 2, pb.d + 1) and res.local == "points"
    z = np.column_stack([pb.X, pb.y])
    for i, rows in enumerate(_clients(pb)):
        dist = ((z[rows][:, None] - res.local_centroids[i][None]) ** 2).sum(axis=2)
        groups = dist.argmin(axis=1)
        for c in np.unique(groups):
            np.testing.assert_allclose(res.local_centroids[i, c], z[rows][groups == c].mean(axis=0), rtol=1e-10)


def test_fedavg_starts_from_the_server_centres_or_from_init():
    pb = _mixed()
    init = np.random.default_rng(0).standard_normal((2, 2, pb.d))
    res = kfed(pb, init, 0.5, n_rounds=2, history=True, local_restarts=2, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(res.history.theta[0], np.stack([res.server_centres] * 2))
    res = kfed(pb, init, 0.5, n_rounds=2, history=True, start="init", local_restarts=2,
               rng=np.random.default_rng(1))
    np.testing.assert_array_equal(res.history.theta[0], init)


@pytest.mark.parametrize("local", ["regressions", "points"])
def test_the_clustering_is_drawn_once_for_the_batch(local):
    pb = _mixed(m=6, n=30)
    init = np.random.default_rng(0).standard_normal((3, 2, pb.d))
    steps = np.array([0.5, 0.3, 0.1])
    batch = kfed(pb, init, steps, n_rounds=5, local=local, start="init", local_restarts=2,
                 rng=np.random.default_rng(9))
    for b in range(3):
        alone = kfed(pb, init[b], steps[b], n_rounds=5, local=local, start="init", local_restarts=2,
                     rng=np.random.default_rng(9))
        np.testing.assert_allclose(batch.theta[b], alone.theta[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(batch.point_assignments[b], alone.point_assignments[0])


# --------------------------------------------------------------------------------------------
# Where it works and where it must fail
# --------------------------------------------------------------------------------------------


def _oracle_point_misclustering(pb):
    """Labels by the least residual under the true parameters: the floor of any point labelling."""
    sq = (pb.y[:, None] - pb.X @ pb.theta_star.T) ** 2
    return float(misclustering_rate(sq.argmin(axis=1), pb.row_labels, pb.k))


def test_local_regressions_recover_mixed_points_and_raw_points_do_not():
    """k = 2, half of each client's rows from its main cluster, n_i = 100 >> k' d = 8.

    Measured (seed 0): regressions 0.0010 (the oracle's 0.0010: points near the intersection of the
    two hyperplanes), points 0.49 (chance: 1/2).
    """
    pb = _mixed(m=20, n=100, d=4, sigma=0.01, scale=5.0, p=0.5)
    init = np.zeros((1, 2, pb.d))
    good = kfed(pb, init, 1.0, n_rounds=100, local_restarts=5, rng=np.random.default_rng(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusteringWarning)
        raw = kfed(pb, init, 1.0, n_rounds=1, local="points", local_restarts=5, rng=np.random.default_rng(1))
    oracle = _oracle_point_misclustering(pb)
    print(f"point misclustering: regressions {good.point_misclustering[0]:.4f} (oracle {oracle:.4f}), "
          f"points {raw.point_misclustering[0]:.4f}")
    assert good.point_misclustering[0] <= oracle + 0.005
    assert raw.point_misclustering[0] > 0.35
    # trained on nearly right labels, the models reach the truth up to the mislabelled points
    err = np.linalg.norm(good.theta[0] - pb.theta_star[:, None, :], axis=2)  # (k, k)
    assert min(err[0, 0] + err[1, 1], err[0, 1] + err[1, 0]) < 0.05


def test_sigma_zero_exact_recovery():
    pb = _mixed(m=8, n=40, d=3, sigma=0.0, scale=4.0, p=0.5, seed=3)
    res = kfed(pb, np.zeros((2, pb.d)), 1.0, n_rounds=200, local_restarts=3, rng=np.random.default_rng(4))
    assert res.point_misclustering[0] == 0.0
    assert res.train_loss[0] < 1e-12


def test_underdetermined_local_regressions_break_down():
    """n_i = 15 < k' d = 20: each local group (about 7 points) is interpolated, Lloyd stops at
    its random start, the local models are the truths projected on random row spaces.

    Measured (seeds 0-2): 0.347, 0.473, 0.343, against 0.034, 0.033, 0.032 with n_i = 100 at the
    same d.
    """
    small, large = [], []
    for seed in range(3):
        for n, out in ((15, small), (100, large)):
            pb = _mixed(m=20, n=n, d=10, sigma=0.1, scale=5.0, p=0.5, seed=seed)
            res = kfed(pb, np.zeros((2, pb.d)), 0.5, n_rounds=1, local_restarts=3, rng=np.random.default_rng(seed))
            out.append(float(res.point_misclustering[0]))
    print(f"point misclustering, n_i = 15: {np.round(small, 3)}; n_i = 100: {np.round(large, 3)}")
    assert min(small) > 0.25
    assert max(large) < 0.1


# --------------------------------------------------------------------------------------------
# Registration, communication, options
# --------------------------------------------------------------------------------------------


def test_registration_and_communication():
    alg = get_algorithm("kfed")
    assert alg.uses_rng and alg.options == {"local": "regressions"}
    pb = _mixed(m=4, n=20, d=3)
    res = alg.run(pb, np.zeros((2, 3)), 0.5, n_rounds=10, rng=np.random.default_rng(0))
    up, down = alg.communication(pb, res, 0)
    client = np.repeat(np.arange(pb.m), pb.sizes)  # the clusters a client holds under its estimated labels
    held = np.mean([np.unique(res.point_assignments[0, client == i]).size for i in range(pb.m)])
    assert up == pytest.approx(2 * 3 + held * (3 + 1) * 10) and down == 2 + 2 * 3 * 10
    assert res.local == "regressions" and res.local_centroids.shape == (4, 2, 3)


def test_one_cluster_clients_are_clustered_too():
    """On an ordinary problem (one cluster per client) row_labels are the clients' labels."""
    pb = make_problem(m=10, k=2, n=40, d=3, sigma=0.01, scale=4.0, protocol="gaussian",
                      rng=np.random.default_rng(0))
    res = kfed(pb, np.zeros((2, 3)), 1.0, n_rounds=50, local_restarts=3, rng=np.random.default_rng(1))
    assert res.point_misclustering[0] == 0.0
    assert float(misclustering_rate(res.assignments[0], pb.labels, 2)) == 0.0


@pytest.mark.parametrize(
    "kwargs, exc, pattern",
    [
        (dict(local="x"), ValueError, "local must be one of 'regressions', 'points'"),
        (dict(local_clusters=0), ValueError, r"local_clusters must be in \[1, inf\)"),
        (dict(local_clusters=21), ValueError, r"local_clusters must be in \[1, min n_i\] = \[1, 20\]"),
        (dict(local_clusters=1, init=np.zeros((5, 3))), ValueError, "k <= m k'"),
        (dict(n_init=0), ValueError, "n_init"),
        (dict(local_restarts=0), ValueError, "local_restarts"),
        (dict(local_max_iter=0), ValueError, "local_max_iter"),
        (dict(start="x"), ValueError, "start must be one of"),
        (dict(local="points", start="centroids"), ValueError, "start='centroids' needs local='regressions'"),
        (dict(local_steps=0), ValueError, "local_steps"),
        (dict(rng=None), ValueError, "rng is required"),
        (dict(rng=3), TypeError, "rng"),
    ],
)
def test_bad_options_name_the_parameter(kwargs, exc, pattern):
    pb = _mixed(m=4, n=20, d=3)
    args = dict(init=np.zeros((2, 3)), rng=np.random.default_rng(0))
    args.update(kwargs)
    init = args.pop("init")
    with pytest.raises(exc, match=pattern):
        kfed(pb, init, 0.5, n_rounds=2, **args)


def test_unconverged_local_lloyd_warns():
    pb = _mixed(m=4, n=40, d=3, sigma=1.0)
    with pytest.warns(ClusteringWarning, match="had not converged within local_max_iter=1"):
        kfed(pb, np.zeros((2, 3)), 0.5, n_rounds=2, local_max_iter=1, local_restarts=1,
             rng=np.random.default_rng(0))


def test_a_kept_model_that_overflows_is_refit_on_its_rows():
    """The kept restart's models are formed from their coefficients; one that overflows is
    local_least_squares on its group's rows instead, never inf or nan."""
    import importlib

    from mixreg.local_solvers import ClientGrams, local_least_squares

    kfed_module = importlib.import_module("mixreg.algorithms.kfed")
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((6, 10)), rng.standard_normal(6)
    grams = ClientGrams(X, y, np.array([0, 6]))
    alpha = np.zeros((6, 2))
    alpha[[0, 2, 4], 0] = [1.0, 2.0, 3.0]
    alpha[[1, 3, 5], 1] = 1e308  # X^T alpha overflows
    out = kfed_module._kept_models(grams, alpha, np.zeros((1, 2), dtype=bool), np.zeros((1, 2, 10)))
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[0, 0], X[[0, 2, 4]].T @ [1.0, 2.0, 3.0], rtol=1e-14)
    np.testing.assert_array_equal(out[0, 1], local_least_squares(X[[1, 3, 5]], y[[1, 3, 5]], [0, 3])[0])
