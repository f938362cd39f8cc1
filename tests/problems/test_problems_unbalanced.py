"""Unbalanced client sizes, per-cluster covariances and anchor clients (mixreg.problems)."""

import numpy as np
import pytest
from scipy.stats import norm

from mixreg.problems import (
    SIZE_LAWS,
    DegenerateProblemWarning,
    add_anchors,
    client_sizes,
    diagonal_covariances,
    make_problem,
    make_problem_from_parameters,
    size_law,
)


def test_size_law_tables():
    zipf = size_law("zipf", n_min=1, n_max=50, a=1.5)
    n = zipf.support.astype(float)
    np.testing.assert_allclose(zipf.pmf / zipf.pmf[0], n**-1.5)
    pareto = size_law("pareto", n_min=2, n_max=40, alpha=0.7)
    n = pareto.support.astype(float)
    raw = (n / 2) ** -0.7 - ((n + 1) / 2) ** -0.7
    np.testing.assert_allclose(pareto.pmf, raw / raw.sum())
    logn = size_law("lognormal", n_min=1, n_max=200, median=5.0, s=0.8)
    n = logn.support.astype(float)
    raw = norm.cdf((np.log(n + 0.5) - np.log(5)) / 0.8) - norm.cdf((np.log(n - 0.5) - np.log(5)) / 0.8)
    np.testing.assert_allclose(logn.pmf, raw / raw.sum())
    equal = size_law("equal", n_min=1, n_max=10, n=4)
    assert equal.mean == 4.0 and equal.pmf[3] == 1.0
    for law in (zipf, pareto, logn, equal):
        assert law.pmf.sum() == pytest.approx(1.0) and (law.pmf >= 0).all()


@pytest.mark.parametrize("law", SIZE_LAWS)
def test_mean_calibration(law):
    dist = size_law(law, n_min=1, n_max=300, mean=8.0)
    assert dist.mean == pytest.approx(8.0, rel=1e-9)
    assert dist.second_moment >= dist.mean**2


def test_sampling_follows_the_table():
    dist = size_law("zipf", n_min=1, n_max=20, a=2.0)
    sizes = dist.sample(40_000, rng=np.random.default_rng(0))
    freq = np.bincount(sizes, minlength=21)[1:] / sizes.size
    np.testing.assert_allclose(freq, dist.pmf, atol=0.01)
    drawn = client_sizes(1000, "zipf", rng=np.random.default_rng(1), n_max=100, mean=3.0)
    assert drawn.dtype == np.int64 and drawn.min() == 1 and (drawn == 2).any()


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(law="gamma"), "law"),
        (dict(law="zipf", b=1.0), "unknown parameter"),
        (dict(law="zipf", a=2.0, mean=3.0), "either mean or a"),
        (dict(law="equal"), "needs n"),
        (dict(law="equal", mean=2.5), "integer"),
        (dict(law="pareto", alpha=-1.0), "alpha"),
        (dict(law="pareto", mean=150.0, n_max=200), "not reachable"),
        (dict(law="zipf", n_min=5, n_max=3), "n_max"),
    ],
)
def test_size_law_errors(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        size_law(**kwargs)


def test_diagonal_covariances():
    cov = diagonal_covariances(3, 7, rng=np.random.default_rng(2), low=0.5, high=4.0)
    assert cov.shape == (3, 7, 7)
    diag = np.diagonal(cov, axis1=1, axis2=2)
    assert np.all(cov == np.einsum("kd,de->kde", diag, np.eye(7)))
    assert diag.min() >= 0.5 and diag.max() <= 4.0
    with pytest.raises(ValueError, match="high"):
        diagonal_covariances(2, 2, rng=np.random.default_rng(0), low=2.0, high=1.0)


@pytest.fixture(scope="module")
def base():
    rng = np.random.default_rng(3)
    sizes = client_sizes(40, "zipf", rng=rng, n_max=30, mean=3.0)
    cov = diagonal_covariances(3, 4, rng=rng)
    theta_star = rng.standard_normal((3, 4))
    labels = np.repeat([0, 1, 2], [10, 10, 20])
    return make_problem_from_parameters(theta_star, labels, sizes, 0.0, rng=rng, covariances=cov)


@pytest.mark.parametrize("mode,n_anchors", [("random", 5), ("per_cluster", None)])
def test_add_anchors_tops_up_only_the_anchors(base, mode, n_anchors):
    pb, anchors = add_anchors(base, 25, mode=mode, n_anchors=n_anchors, rng=np.random.default_rng(4))
    assert anchors.dtype == np.int64 and np.unique(anchors).size == anchors.size
    if mode == "per_cluster":
        np.testing.assert_array_equal(base.labels[anchors], [0, 1, 2])
    else:
        assert anchors.size == 5 and np.all(np.diff(anchors) > 0)
    assert (pb.sizes[anchors] == np.maximum(base.sizes[anchors], 25)).all()
    others = np.setdiff1d(np.arange(base.m), anchors)
    np.testing.assert_array_equal(pb.sizes[others], base.sizes[others])
    np.testing.assert_array_equal(pb.labels, base.labels)
    for i in range(base.m):  # old rows kept, in place, at the start of each client
        Xo, yo = base.client(i)
        Xn, yn = pb.client(i)
        np.testing.assert_array_equal(Xn[: len(yo)], Xo)
        np.testing.assert_array_equal(yn[: len(yo)], yo)
        # sigma = 0: every (new) row follows the client's own cluster model exactly
        np.testing.assert_allclose(yn, Xn @ base.theta_star[base.labels[i]], atol=1e-12)


def test_add_anchors_errors(base):
    rng = np.random.default_rng(5)
    with pytest.raises(ValueError, match="n_points"):
        add_anchors(base, 1, mode="random", n_anchors=2, rng=rng)
    with pytest.raises(ValueError, match="n_anchors is required"):
        add_anchors(base, 5, mode="random", rng=rng)
    with pytest.raises(ValueError, match="n_anchors must be omitted or equal k"):
        add_anchors(base, 5, mode="per_cluster", n_anchors=2, rng=rng)
    with pytest.raises(ValueError, match="n_anchors"):
        add_anchors(base, 5, mode="random", n_anchors=41, rng=rng)
    with pytest.warns(DegenerateProblemWarning, match="empty cluster 0"):
        empty = make_problem(6, 3, 2, 3, 0.1, 1.0, rng=rng, proportions=[0.0, 0.5, 0.5])
    with pytest.raises(ValueError, match="cluster 0 has no client"):
        add_anchors(empty, 5, mode="per_cluster", rng=rng)
