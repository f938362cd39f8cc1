"""Tests of mixreg.problems: shapes, labels, protocols, realised separation, determinism."""

import numpy as np
import pytest

from mixreg.problems import (
    THETA_PROTOCOLS,
    Problem,
    make_labels,
    make_problem,
    make_problem_from_parameters,
    make_theta_star,
    min_separation,
)


def test_shapes_offsets_and_stacked_storage():
    pb = make_problem(m=10, k=2, n=7, d=4, sigma=0.1, scale=1.0, rng=np.random.default_rng(0))
    assert pb.X.shape == (70, 4) and pb.y.shape == (70,)
    np.testing.assert_array_equal(pb.offsets, np.arange(0, 71, 7))
    assert (pb.m, pb.k, pb.d, pb.N) == (10, 2, 4, 70)
    Xi, yi = pb.client(3)
    assert np.shares_memory(Xi, pb.X) and Xi.shape == (7, 4)


def test_unequal_sizes_and_model():
    rng = np.random.default_rng(1)
    theta = rng.standard_normal((3, 5))
    labels = np.array([2, 0, 1, 1, 0])
    sizes = np.array([1, 2, 3, 4, 5])
    pb = make_problem_from_parameters(theta, labels, sizes, 0.0, rng=rng)
    np.testing.assert_array_equal(pb.sizes, sizes)
    np.testing.assert_array_equal(pb.cluster_sizes, [2 + 5, 3 + 4, 1])
    for i in range(5):  # noiseless: y = X theta*_{z_i} exactly
        Xi, yi = pb.client(i)
        np.testing.assert_allclose(yi, Xi @ theta[labels[i]], rtol=1e-12, atol=1e-12)


def test_noise_level():
    rng = np.random.default_rng(2)
    theta = np.zeros((1, 3))
    pb = make_problem_from_parameters(theta, np.zeros(4, dtype=int), 5000, 0.3, rng=rng)
    assert abs(pb.y.std() - 0.3) < 0.01


def test_balanced_contiguous_labels_like_the_official_code():
    np.testing.assert_array_equal(make_labels(8, 4), [0, 0, 1, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(make_labels(100, 2)[[0, 49, 50, 99]], [0, 0, 1, 1])
    assert np.bincount(make_labels(10, 3)).tolist() == [4, 3, 3]


def test_labels_with_proportions():
    labels = make_labels(20000, 3, proportions=[0.1, 0.3, 0.6], rng=np.random.default_rng(0))
    np.testing.assert_allclose(np.bincount(labels) / 20000, [0.1, 0.3, 0.6], atol=0.01)


def test_protocols_and_realised_separation():
    rng = np.random.default_rng(3)
    off = make_theta_star(4, 1000, 0.25, protocol="official", rng=rng)
    assert set(np.unique(off)) == {0.0, 0.25}
    assert abs(min_separation(off) / (0.25 * np.sqrt(500)) - 1) < 0.1  # about r sqrt(d/2)
    paper = make_theta_star(4, 50, 0.7, protocol="paper", rng=rng)
    np.testing.assert_allclose(np.linalg.norm(paper, axis=1), 0.7)
    gauss = make_theta_star(5, 20, 1.5, protocol="gaussian", rng=rng)
    assert min_separation(gauss) == pytest.approx(1.5, rel=1e-12)
    brute = min(np.linalg.norm(gauss[i] - gauss[j]) for i in range(5) for j in range(i + 1, 5))
    assert min_separation(gauss) == pytest.approx(brute, rel=1e-12)


def test_paper_protocol_redraws_all_zero_vectors():
    # with d = 1 half the draws are all-zero; every row must still have norm R
    theta = make_theta_star(50, 1, 2.0, protocol="paper", rng=np.random.default_rng(0))
    np.testing.assert_allclose(np.abs(theta), 2.0)


def test_reported_quantities():
    pb = make_problem(m=12, k=3, n=10, d=6, sigma=0.5, scale=2.0, protocol="gaussian", rng=np.random.default_rng(4))
    assert pb.separation == pytest.approx(2.0)
    assert pb.p_min == pytest.approx(1 / 3)
    assert pb.snr == pytest.approx(16.0)
    s = pb.summary()
    assert s["separation"] == pb.separation and s["n_min"] == s["n_max"] == 10
    assert make_problem(m=4, k=2, n=3, d=2, sigma=0.0, scale=1.0, rng=np.random.default_rng(0)).snr == np.inf


def test_deterministic_under_a_seed_and_float32_is_the_rounded_float64_draw():
    a = make_problem(m=6, k=2, n=5, d=3, sigma=0.2, scale=1.0, rng=np.random.default_rng(9))
    b = make_problem(m=6, k=2, n=5, d=3, sigma=0.2, scale=1.0, rng=np.random.default_rng(9))
    c = make_problem(m=6, k=2, n=5, d=3, sigma=0.2, scale=1.0, rng=np.random.default_rng(9), dtype=np.float32)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    assert c.X.dtype == np.float32
    np.testing.assert_array_equal(c.X, a.X.astype(np.float32))
    d = make_problem(m=6, k=2, n=5, d=3, sigma=0.2, scale=1.0, rng=np.random.default_rng(10))
    assert not np.array_equal(a.X, d.X)


def test_cluster_covariances():
    rng = np.random.default_rng(5)
    cov = np.stack([np.diag([4.0, 1.0]), np.array([[1.0, 0.8], [0.8, 1.0]])])
    theta_star = np.array([[1.0, 0.0], [0.0, 1.0]])
    pb = make_problem_from_parameters(theta_star, np.array([0, 1]), 40000, 0.0, rng=rng, covariances=cov)
    for l in range(2):
        Xl = pb.client(l)[0]
        np.testing.assert_allclose(Xl.T @ Xl / Xl.shape[0], cov[l], atol=0.05)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(m=2, k=3), "k must be at most m"),
        (dict(m=0), "m must be in"),
        (dict(n=0), "n must be in"),
        (dict(d=0), "d must be in"),
        (dict(sigma=-0.1), "sigma must be in"),
        (dict(scale=-1.0), "scale must be in"),
        (dict(protocol="norm"), "protocol must be one of"),
        (dict(n=np.array([3, 3])), "n must be an integer or an array of shape"),
        (dict(n=np.array([3, 0, 3, 3])), "n must hold integers >= 1"),
        (dict(dtype=np.int32), "dtype must be float32 or float64"),
        (dict(proportions=[0.5, 0.6]), "proportions must be non-negative and sum to 1"),
        (dict(proportions=[1.0]), "proportions must have length k"),
    ],
)
def test_bad_input(kwargs, match):
    args = dict(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0, rng=np.random.default_rng(0))
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        make_problem(**args)


def test_bad_parameters_for_given_truth():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="labels must lie in"):
        make_problem_from_parameters(np.zeros((2, 3)), np.array([0, 2]), 3, 0.1, rng=rng)
    with pytest.raises(ValueError, match="covariances must be positive definite"):
        make_problem_from_parameters(np.zeros((1, 2)), np.array([0]), 3, 0.1, rng=rng,
                                     covariances=np.array([[[1.0, 2.0], [2.0, 1.0]]]))
    with pytest.raises(ValueError, match="covariances must have shape"):
        make_problem_from_parameters(np.zeros((1, 2)), np.array([0]), 3, 0.1, rng=rng, covariances=np.eye(2))


def test_protocol_names_are_documented():
    import mixreg.problems as mod

    for name in THETA_PROTOCOLS:
        assert f'``"{name}"``' in mod.__doc__


def test_a_valid_hand_built_problem_is_not_copied_and_matches_the_generated_one():
    pb = make_problem(m=5, k=2, n=4, d=3, sigma=0.1, scale=1.0, protocol="gaussian", rng=np.random.default_rng(0))
    assert pb.degenerate == ""
    again = Problem(pb.X, pb.y, pb.offsets, pb.labels, pb.theta_star, pb.sigma)
    for name in ("X", "y", "offsets", "labels", "theta_star"):
        assert getattr(again, name) is getattr(pb, name), name
    from_sizes = Problem.from_arrays(pb.X, pb.y, pb.sizes, pb.labels.tolist(), pb.theta_star, sigma=pb.sigma)
    from_offsets = Problem.from_arrays(pb.X, pb.y, pb.offsets.astype(np.int32), pb.labels, pb.theta_star, sigma=0.1)
    for built in (from_sizes, from_offsets):
        np.testing.assert_array_equal(built.offsets, pb.offsets)
        assert built.offsets.dtype == built.labels.dtype == np.int64
        assert built.summary() == pb.summary()


def test_rng_must_be_a_generator_everywhere_it_is_used():
    from mixreg.algorithms import initial_parameters
    from mixreg.problems import add_anchors, client_sizes, diagonal_covariances

    pb = make_problem(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0, protocol="gaussian", rng=np.random.default_rng(0))
    calls = [
        lambda rng: make_problem(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0, rng=rng),
        lambda rng: make_theta_star(2, 3, 1.0, rng=rng),
        lambda rng: make_labels(4, 2, proportions=[0.5, 0.5], rng=rng),
        lambda rng: make_problem_from_parameters(np.eye(2), [0, 1], 3, 0.1, rng=rng),
        lambda rng: client_sizes(4, rng=rng),
        lambda rng: diagonal_covariances(2, 2, rng=rng),
        lambda rng: add_anchors(pb, 4, mode="per_cluster", rng=rng),
        lambda rng: initial_parameters(pb, 2, "gaussian", rng=rng),
    ]
    for call in calls:
        for bad in (0, np.random.RandomState(0), "seed"):
            with pytest.raises(TypeError, match=r"^rng must be a numpy.random.Generator \(e.g. numpy.random"):
                call(bad)
        call(np.random.default_rng(1))


def test_degenerate_problems_warn_and_are_flagged():
    from mixreg.problems import DegenerateProblemWarning

    rng = np.random.default_rng(0)
    with pytest.warns(DegenerateProblemWarning, match="duplicate theta"):
        pb = make_problem_from_parameters(np.zeros((2, 2)), np.array([0, 1]), 3, 0.1, rng=rng)
    assert pb.degenerate == "duplicate theta* (separation 0)" and pb.snr == 0.0
    with pytest.warns(DegenerateProblemWarning, match="non-finite separation"):
        pb = make_problem(m=4, k=2, n=2, d=3, sigma=1e-200, scale=1e300, rng=np.random.default_rng(3))
    assert pb.separation == np.inf and pb.snr == np.inf
    with pytest.raises(ValueError, match="scale=1e\\+308 is too large"):
        make_theta_star(5, 1, 1e308, protocol="gaussian", rng=rng)


def test_feature_mean_square_is_computed_once_per_data():
    """mean(X^2) in float64, cached like the separation; a float32 copy computes its own."""
    pb = make_problem(m=6, k=2, n=5, d=4, sigma=0.1, scale=1.0, rng=np.random.default_rng(0))
    value = pb.feature_mean_square
    assert value == float(np.mean(np.square(pb.X, dtype=np.float64)))
    assert pb._cache["feature_mean_square"] is value
    single = pb.astype(np.float32)
    assert "feature_mean_square" not in single._cache
    assert single.feature_mean_square == float(np.mean(np.square(single.X, dtype=np.float64)))
