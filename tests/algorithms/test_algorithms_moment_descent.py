"""Tests of mixreg.algorithms.moment_descent (Phase 1 of Su-Xu-Yang) against the mathematics of the slides."""

import importlib

import numpy as np
import pytest
from scipy.linalg import subspace_angles

from mixreg.metrics import matched_max_distance
from mixreg.algorithms.moment_descent import (
    anchor_direction,
    cluster_anchors,
    moment_descent,
    moment_vectors,
    top_subspace,
)
from mixreg.problems import add_anchors, client_sizes, diagonal_covariances, make_problem

# the module (the package exports a function of the same name)
md = importlib.import_module("mixreg.algorithms.moment_descent")


def _mixture(rng, n, theta_star, sds, labels_p, pairs=True):
    """Noiseless samples: n clients (or n pairs of one cluster) with two samples each."""
    k, d = theta_star.shape
    z = rng.choice(k, size=n, p=labels_p)
    out = []
    for _ in range(2 if pairs else 1):
        x = rng.standard_normal((n, d)) * sds[z]
        out.append((x, np.einsum("nd,nd->n", x, theta_star[z])))
    return out


@pytest.fixture(scope="module")
def truth():
    rng = np.random.default_rng(0)
    k, d = 3, 6
    theta_star = rng.standard_normal((k, d))
    sds = np.sqrt(rng.uniform(0.5, 2.0, (k, d)))  # Sigma_l = diag(sds_l^2)
    return theta_star, sds


def test_moment_vectors_shapes_and_mean():
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((5, 3)), rng.standard_normal(5)
    theta = rng.standard_normal((2, 3))
    eps = moment_vectors(X, y, theta)
    assert eps.shape == (2, 5, 3)
    np.testing.assert_allclose(eps[1], (y - X @ theta[1])[:, None] * X)
    np.testing.assert_allclose(moment_vectors(X, y, theta[0]), eps[0])
    per_anchor = moment_vectors(np.stack([X, 2 * X]), np.stack([y, y]), theta)
    np.testing.assert_allclose(per_anchor[1], (y - 2 * X @ theta[1])[:, None] * 2 * X)


def test_subspace_spans_the_cluster_directions(truth):
    """Noiseless, |S_t| large: span U = span{Sigma_l (theta*_l - theta)} (slide step 3)."""
    theta_star, sds = truth
    k, d = theta_star.shape
    rng = np.random.default_rng(2)
    theta = 0.3 * rng.standard_normal(d)
    (x1, y1), (x2, y2) = _mixture(rng, 200_000, theta_star, sds, [0.2, 0.3, 0.5])
    U, values = top_subspace(moment_vectors(x1, y1, theta), moment_vectors(x2, y2, theta), k)
    V = (sds**2 * (theta_star - theta)).T  # columns Sigma_l (theta*_l - theta)
    angles = subspace_angles(U, V)
    assert angles.max() < 0.1, angles
    # and the eigenvalues are those of E[Y] = sum_l p_l v_l v_l^T
    EY = (V * np.array([0.2, 0.3, 0.5])) @ V.T
    expected = np.sort(np.linalg.eigvalsh(EY))[::-1][:k]
    np.testing.assert_allclose(values, expected, rtol=0.1)


@pytest.mark.parametrize("symmetrize", [True, False])
def test_factored_solver_equals_dense(symmetrize):
    """Never forming the d x d matrix gives the same subspace and spectrum (|S_t| < d)."""
    rng = np.random.default_rng(3)
    E1, E2 = rng.standard_normal((2, 4, 8, 40))  # 4 anchors, s = 8 clients, d = 40
    U_d, v_d = top_subspace(E1, E2, 3, symmetrize=symmetrize, solver="dense")
    U_f, v_f = top_subspace(E1, E2, 3, symmetrize=symmetrize, solver="factored")
    U_a, _ = top_subspace(E1, E2, 3, symmetrize=symmetrize)  # auto picks factored here
    np.testing.assert_allclose(v_f, v_d, rtol=1e-10)
    for a in range(4):
        P_d = U_d[a] @ U_d[a].T
        np.testing.assert_allclose(U_f[a] @ U_f[a].T, P_d, atol=1e-9)
        np.testing.assert_allclose(U_a[a] @ U_a[a].T, P_d, atol=1e-9)
        np.testing.assert_allclose(U_f[a].T @ U_f[a], np.eye(3), atol=1e-12)


def test_anchor_matrix_is_rank_one_along_the_predicted_direction(truth):
    """E[Z] = v v^T with v = U^T Sigma_l (theta*_l - theta) (slide step 5); sign from the first
    moment makes beta point along +v."""
    theta_star, sds = truth
    rng = np.random.default_rng(4)
    theta = rng.standard_normal(theta_star.shape[1])
    U = np.linalg.qr((sds**2 * (theta_star - theta)).T)[0]  # an orthonormal basis of the span
    (x1, y1), (x2, y2) = _mixture(rng, 100_000, theta_star, sds, [0.0, 1.0, 0.0])  # cluster 1
    P1, P2 = moment_vectors(x1, y1, theta) @ U, moment_vectors(x2, y2, theta) @ U
    v = U.T @ (sds[1] ** 2 * (theta_star[1] - theta))
    Z = P1.T @ P2 / len(y1)
    assert np.linalg.norm(Z - np.outer(v, v)) < 0.05 * (v @ v)
    beta, lam = anchor_direction(P1, P2)
    assert beta @ v / np.linalg.norm(v) > 0.999
    assert abs(lam - v @ v) < 0.05 * (v @ v)
    beta_ns, _ = anchor_direction(P1, P2, symmetrize=False)
    assert beta_ns @ v / np.linalg.norm(v) > 0.999


def test_first_moment_sign_is_the_lower_local_loss_sign():
    rng = np.random.default_rng(5)
    X, y, theta = rng.standard_normal((30, 4)), rng.standard_normal(30), rng.standard_normal(4)
    U = np.linalg.qr(rng.standard_normal((4, 2)))[0]
    eps = moment_vectors(X, y, theta) @ U
    beta, _ = anchor_direction(eps[:15], eps[15:])
    delta = 0.1 * U @ beta

    def loss(t):
        return np.sum((y - X @ t) ** 2)

    assert loss(theta + delta) < loss(theta - delta)


@pytest.fixture(scope="module")
def anchored():
    """d = 10, k = 3, 20000 clients of 4 points, Sigma_l diagonal in [0.5, 2], one anchor per
    cluster with 2000 points."""
    def make(seed, m=20_000, sizes=4, anchor_points=2000, proportions=(1 / 3, 1 / 3, 1 / 3)):
        rng = np.random.default_rng(seed)
        cov = diagonal_covariances(3, 10, rng=rng)
        pb = make_problem(m, 3, sizes, 10, 0.1, 2.0, rng=rng, protocol="gaussian",
                          proportions=list(proportions), covariances=cov)
        return add_anchors(pb, anchor_points, mode="per_cluster", rng=rng) + (rng,)
    return make


def test_one_step_decreases_the_residual_variance_of_every_anchor(anchored):
    """||Sigma^{1/2}(theta* - theta)|| decreases: with c = 1/2 and Sigma in [0.5, 2] the expected
    update maps the error by I - Sigma / 2 (spectrum in [0, 0.75])."""
    pb, anchors, rng = anchored(6, m=30_000, sizes=2)
    init = rng.standard_normal((3, pb.d))
    res = moment_descent(pb, anchors, 3, rng=rng, n_rounds=1, init=init, sampling="reuse",
                         anchor_pairs=1000, history=True)
    for a, client in enumerate(anchors):
        l = pb.labels[client]
        root = np.sqrt(np.diag(pb.covariances[l]))
        before = np.linalg.norm(root * (pb.theta_star[l] - init[a]))
        after = np.linalg.norm(root * (pb.theta_star[l] - res.anchor_theta[a]))
        assert after < 0.85 * before, (a, before, after)
    assert res.history.step.shape == (1, 3) and (res.history.step > 0).all()


def test_phase1_from_zero_reaches_epsilon(anchored):
    """From theta_0 = 0, T = 10 rounds (fresh data, |S_t| = 3999, 100 fresh pairs per anchor and
    round) give d(theta_hat, theta*) <= epsilon = 0.3 Delta = 0.6 in at least 4 of 5 seeds.
    (Phase-1 theorem: a fixed epsilon once M >~ p_min^-2 d; the initial error is ~2-3.)"""
    errors = []
    for seed in range(5):
        pb, anchors, rng = anchored(10 + seed)
        res = moment_descent(pb, anchors, 3, rng=rng, n_rounds=10)
        assert res.clients_per_round == 3999 and res.anchor_pairs == 100  # 19997 clients x 2 pairs / 10
        errors.append(matched_max_distance(res.centres, pb.theta_star))
    assert sum(e <= 0.6 for e in errors) >= 4, errors


def test_phase1_floor_shrinks_with_more_clients_per_round(anchored):
    """The noise floor of Y falls with |S_t| (the theorem's M >~ d condition): median over 5
    seeds at |S_t| = 3000 is below the one at |S_t| = 250."""
    small, large = [], []
    for seed in range(5):
        pb, anchors, rng = anchored(20 + seed)
        for s, out in ((250, small), (3000, large)):
            res = moment_descent(pb, anchors, 3, rng=np.random.default_rng(seed), n_rounds=10,
                                 clients_per_round=s)
            out.append(matched_max_distance(res.centres, pb.theta_star))
    assert np.median(large) < np.median(small), (small, large)


def test_random_anchors_are_clustered_by_threshold():
    rng = np.random.default_rng(7)
    pb = make_problem(12_000, 3, client_sizes(12_000, "zipf", rng=rng, n_max=50, mean=4.0), 8, 0.1, 2.0,
                      rng=rng, protocol="gaussian")
    pb, anchors = add_anchors(pb, 800, mode="random", n_anchors=12, rng=rng)
    assert set(pb.labels[anchors]) == {0, 1, 2}
    res = moment_descent(pb, anchors, 3, rng=rng, n_rounds=8, history=True)
    assert res.clustering.method == "threshold" and res.clustering.n_threshold_groups == 3
    # anchors of one true cluster share a group, and groups differ across clusters
    groups = res.clustering.groups
    for l in range(3):
        assert np.unique(groups[pb.labels[anchors] == l]).size == 1
    assert np.unique(groups).size == 3
    assert matched_max_distance(res.centres, pb.theta_star) < 1.0
    assert res.history.theta.shape == (9, 12, 8) and res.history.anchor_error.shape == (9, 12)


def test_fresh_schedule_uses_every_row_at_most_once(anchored):
    pb, anchors, rng = anchored(8, m=3000, sizes=client_sizes(3000, "zipf", rng=np.random.default_rng(0),
                                                             n_max=30, mean=3.0))
    res = moment_descent(pb, anchors, 3, rng=rng, n_rounds=5, clients_per_round=200, anchor_pairs=40)
    assert res.rows_used == 2 * 5 * (200 + 3 * 40)
    # the client pairs: same client, distinct rows, never an anchor or a one-point client, and
    # distinct clients within a round
    is_anchor = np.zeros(pb.m, bool)
    is_anchor[anchors] = True
    eligible = np.flatnonzero(~is_anchor & (pb.sizes >= 2))
    owner = np.repeat(np.arange(pb.m), pb.sizes)
    for sampling in ("fresh", "reuse"):
        order = md._row_order(pb, np.random.default_rng(1))
        rows = md._client_schedule(pb, eligible, 5, 200, sampling, order, np.random.default_rng(2))
        assert (owner[rows[..., 0]] == owner[rows[..., 1]]).all()
        assert (rows[..., 0] != rows[..., 1]).all()
        assert not is_anchor[owner[rows]].any() and (pb.sizes[owner[rows]] >= 2).all()
        for t in range(5):
            assert np.unique(owner[rows[t, :, 0]]).size == 200
        if sampling == "fresh":
            assert np.unique(rows).size == rows.size


def _groups(rng):
    centres = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    return np.concatenate([c + 0.1 * rng.standard_normal((4, 2)) for c in centres]), centres


def test_cluster_anchors_threshold_and_fallbacks():
    rng = np.random.default_rng(9)
    pts, centres = _groups(rng)
    auto = cluster_anchors(pts, 3)
    assert auto.method == "threshold" and auto.n_threshold_groups == 3
    np.testing.assert_array_equal(auto.groups, np.repeat([0, 1, 2], 4))
    np.testing.assert_allclose(auto.centres, pts.reshape(3, 4, 2).mean(axis=1))
    tiny = cluster_anchors(pts, 3, threshold=1e-3)  # 12 singletons -> k-means
    assert tiny.method == "kmeans" and tiny.n_threshold_groups == 12
    np.testing.assert_array_equal(tiny.groups, auto.groups)
    with pytest.raises(ValueError, match="12 groups"):
        cluster_anchors(pts, 3, threshold=1e-3, on_mismatch="raise")
    outlier = np.vstack([pts, [[40.0, 40.0]]])
    kept = cluster_anchors(outlier, 3, threshold=1.0, on_mismatch="largest")
    assert kept.method == "largest" and kept.groups[-1] == -1
    np.testing.assert_allclose(kept.centres, auto.centres)
    # one anchor per cluster: the identity
    one = cluster_anchors(centres, 3)
    np.testing.assert_array_equal(one.groups, [0, 1, 2])
    np.testing.assert_array_equal(one.centres, centres)
    # a non-finite anchor is left out
    bad = pts.copy()
    bad[0] = np.nan
    res = cluster_anchors(bad, 3)
    assert res.groups[0] == -1 and np.isfinite(res.centres).all()


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(11)
    pb = make_problem(60, 2, client_sizes(60, "zipf", rng=rng, n_max=10, mean=2.0), 5, 0.1, 1.0, rng=rng,
                      protocol="gaussian")
    pb, anchors = add_anchors(pb, 40, mode="per_cluster", rng=rng)
    return pb, anchors


@pytest.mark.parametrize(
    "change,match",
    [
        (dict(k=3), "k must be in"),
        (dict(anchors=[0, 0]), "distinct"),
        (dict(anchors=[-1, 2]), "anchors must be client indices"),
        (dict(clients_per_round=10_000), "clients_per_round=10000 is too large"),
        (dict(clients_per_round=10_000, sampling="reuse"), "clients_per_round=10000 is too large"),
        (dict(clients_per_round=1), "clients_per_round"),
        (dict(n_rounds=30), "fewer than the 2 \\* n_rounds"),
        (dict(anchor_pairs=30, sampling="reuse"), "anchor_pairs=30"),
        (dict(anchor_pairs=30, anchor_sampling="reuse"), "anchor_pairs=30"),
        (dict(anchor_sampling="all"), "anchor_sampling"),
        (dict(step_constant=0.0), "step_constant"),
        (dict(sampling="bootstrap"), "sampling"),
        (dict(init=np.zeros(4)), "init"),
        (dict(threshold=-1.0), "threshold"),
    ],
)
def test_bad_inputs_name_the_parameter(small, change, match):
    pb, anchors = small
    args = dict(anchors=anchors, k=2, n_rounds=3)
    args.update(change)
    with pytest.raises((ValueError, TypeError), match=match):
        moment_descent(pb, args.pop("anchors"), args.pop("k"), rng=np.random.default_rng(0), **args)


def test_anchor_with_one_point_is_rejected(small):
    pb, _ = small
    single = int(np.flatnonzero(pb.sizes == 1)[0])
    with pytest.raises(ValueError, match=f"anchor client {single} has n_i = 1"):
        moment_descent(pb, [single, int(np.flatnonzero(pb.sizes >= 2)[0])], 2, rng=np.random.default_rng(0))


def test_driver_solvers_agree():
    """The factored path (|S_t| < d) and the dense one give the same iterates."""
    rng = np.random.default_rng(12)
    pb = make_problem(400, 2, 4, 60, 0.1, 2.0, rng=rng, protocol="gaussian")
    pb, anchors = add_anchors(pb, 200, mode="per_cluster", rng=rng)
    runs = [moment_descent(pb, anchors, 2, rng=np.random.default_rng(3), n_rounds=4, clients_per_round=25,
                           subspace_solver=solver) for solver in ("dense", "factored", "auto")]
    for other in runs[1:]:
        np.testing.assert_allclose(other.anchor_theta, runs[0].anchor_theta, rtol=1e-8, atol=1e-10)


def test_a_huge_step_is_flagged_not_a_linear_algebra_error():
    """step_constant=1e200 sends every anchor far away in round 0: flagged as diverged (the
    parameter blow-up rule), instead of an eigendecomposition of infinities in round 1."""
    rng = np.random.default_rng(0)
    pb = make_problem(m=300, k=2, n=6, d=5, sigma=0.1, scale=2.0, protocol="gaussian", rng=rng)
    pb, anchors = add_anchors(pb, 40, mode="per_cluster", rng=rng)
    res = moment_descent(pb, anchors, 2, rng=rng, step_constant=1e200, anchor_sampling="reuse")
    assert res.nonfinite.all() and res.stop_reason.startswith("every anchor estimate diverged")
    assert res.n_rounds == 1 and np.isfinite(res.anchor_theta).all()
    assert res.clustering.method == "failed" and np.isnan(res.centres).all()
