"""Tests of mixreg.theory._ls_oracle under a general covariance: known-label least squares on rows
x ~ N(0, Sigma), checked by Monte Carlo with bounds computed from the draws, each paired with the
identity formula outside the same bound (so a covariance ignored, or Sigma used where Sigma^-1 is
meant, fails)."""

import math

import numpy as np
import pytest

from mixreg.metrics import oracle_ls_floor
from mixreg.problems import ar1_covariance, toeplitz_covariance
from mixreg.theory import ls_error_moments, ls_oracle_success_probability, ls_points_needed

SIGMA, DRAWS = 1.0, 4000


def _ls_squared_errors(cov, n, rng):
    """``||theta_LS - theta*||^2`` of DRAWS independent fits on ``n`` rows ~ N(0, cov) with
    N(0, SIGMA^2) noise (the error does not depend on theta*, so theta* = 0)."""
    d = cov.shape[0]
    X = rng.standard_normal((DRAWS, n, d)) @ np.linalg.cholesky(cov).T
    noise = SIGMA * rng.standard_normal((DRAWS, n))
    gram = np.einsum("bni,bnj->bij", X, X)
    error = np.linalg.solve(gram, np.einsum("bni,bn->bi", X, noise)[..., None])[..., 0]
    return np.sum(error ** 2, axis=1)


def test_mean_and_variance_match_simulation_under_ar1_and_not_the_identity_formula():
    """E||e||^2 = sigma^2 tr(Sigma^-1) / (N - d - 1) (inverse-Wishart mean) and the module's
    variance, at AR(1) rho = 0.5, d = 5, N = 40: each within 4 standard errors of the 4000 draws'
    mean and variance; the Sigma = I values (d / (N - d - 1)) are not."""
    d, n = 5, 40
    cov = ar1_covariance(d, 0.5)
    sq = _ls_squared_errors(cov, n, np.random.default_rng(0))
    mean, var = ls_error_moments(d, n, covariance=cov)
    assert mean == pytest.approx(np.trace(np.linalg.inv(cov)) / (n - d - 1), rel=1e-12)
    se_mean = sq.std(ddof=1) / math.sqrt(DRAWS)
    centred = sq - sq.mean()
    sample_var = sq.var(ddof=1)
    se_var = math.sqrt((np.mean(centred ** 4) - sample_var ** 2) / DRAWS)  # the sample variance's
    assert abs(sq.mean() - SIGMA ** 2 * mean) < 4 * se_mean
    assert abs(sample_var - SIGMA ** 4 * var) < 4 * se_var
    mean_identity, var_identity = ls_error_moments(d, n)
    assert abs(sq.mean() - SIGMA ** 2 * mean_identity) > 4 * se_mean
    assert abs(sample_var - SIGMA ** 4 * var_identity) > 4 * se_var
    floor = oracle_ls_floor(SIGMA, d, [n], covariance=cov)[0]  # the metrics' floor is the RMS of the same law
    assert abs(sq.mean() - floor ** 2) < 4 * se_mean


@pytest.fixture(scope="module")
def two_clusters():
    """``(d, n, covs, mean_norm)``: DRAWS draws of the mean over two clusters of ``||e_l||``."""
    d, n = 20, 80
    covs = np.stack([ar1_covariance(d, 0.5), toeplitz_covariance([1.0, -0.3] + [0.0] * (d - 2))])
    rng = np.random.default_rng(1)
    return d, n, covs, np.mean([np.sqrt(_ls_squared_errors(c, n, rng)) for c in covs], axis=0)


@pytest.mark.parametrize("fraction", [0.9, 1.0, 1.1])
def test_success_probability_matches_simulation_with_one_covariance_per_cluster(fraction, two_clusters):
    """P(mean_l ||e_l|| < t) for two clusters, AR(1) rho = 0.5 and a tridiagonal Toeplitz matrix,
    d = 20, N_l = 80, at thresholds around the median: within 4 binomial standard errors of the
    4000 draws' frequency; the Sigma = I prediction is not.  (The gamma-and-normal approximation
    is the module's; at d = 5 it is off by about 0.02 in the lower tail for Sigma = I as well.)"""
    d, n, covs, mean_norm = two_clusters
    median = float(np.median(mean_norm))
    threshold = fraction * median
    p = ls_oracle_success_probability(SIGMA, d, [n, n], threshold, covariance=covs)
    frequency = float(np.mean(mean_norm < threshold))
    bound = 4 * math.sqrt(p * (1 - p) / DRAWS)
    assert abs(frequency - p) < bound
    assert abs(frequency - ls_oracle_success_probability(SIGMA, d, [n, n], threshold)) > bound


def test_one_matrix_for_all_clusters_and_the_identity_give_the_default_path():
    d = 6
    for sizes, t in (([40, 60], 0.9), ([200, 200], 0.3)):
        p = ls_oracle_success_probability(SIGMA, d, sizes, t)
        assert ls_oracle_success_probability(SIGMA, d, sizes, t, covariance=np.eye(d)) == pytest.approx(p, rel=1e-12)
        cov = ar1_covariance(d, -0.4)
        assert (ls_oracle_success_probability(SIGMA, d, sizes, t, covariance=cov)
                == ls_oracle_success_probability(SIGMA, d, sizes, t, covariance=np.stack([cov, cov])))
    for N in (6, 7, 9, 10, 50):
        np.testing.assert_allclose(ls_error_moments(d, N, covariance=np.eye(d)), ls_error_moments(d, N), rtol=1e-12)


def test_scaling_the_covariance_scales_the_error():
    """Sigma -> c Sigma divides theta_LS - theta* by sqrt(c): the mean by c, the variance by c^2
    (catches a formula in Sigma instead of Sigma^-1)."""
    d, n, c = 4, 30, 3.0
    cov = toeplitz_covariance([2.0, 0.7, 0.2, 0.0])
    mean, var = ls_error_moments(d, n, covariance=cov)
    scaled = ls_error_moments(d, n, covariance=c * cov)
    assert scaled == pytest.approx((mean / c, var / c ** 2), rel=1e-12)


def test_points_needed_uses_the_trace_of_the_inverse():
    d, cov = 5, ar1_covariance(5, 0.5)
    trace = (d + (d - 2) * 0.25) / (1 - 0.25)  # the AR(1) inverse's closed form
    assert ls_points_needed(0.2, d, 0.1, covariance=cov) == pytest.approx(d + 1 + trace * 4, rel=1e-12)
    assert ls_points_needed(0.2, d, 0.1, covariance=np.eye(d)) == pytest.approx(ls_points_needed(0.2, d, 0.1))
    # at that N the RMS floor is the threshold
    n_star = ls_points_needed(0.2, d, 0.1, covariance=cov)
    assert 0.2 * math.sqrt(trace / (n_star - d - 1)) == pytest.approx(0.1, rel=1e-12)


@pytest.mark.parametrize("call, pattern", [
    (lambda: ls_error_moments(2, 10, covariance=[[1.0, 2.0], [2.0, 1.0]]),
     r"^covariance must be positive definite, got smallest eigenvalue -1"),
    (lambda: ls_error_moments(3, 10, covariance=np.eye(2)), r"^covariance must have shape \(d, d\) = \(3, 3\)"),
    (lambda: ls_oracle_success_probability(1.0, 2, [10, 10, 10], 0.5, covariance=np.stack([np.eye(2)] * 2)),
     r"^covariance must have shape .* \(k, d, d\) = \(3, 2, 2\)"),
    (lambda: ls_oracle_success_probability(1.0, 2, [10, 10], 0.0, covariance=[[1.0, 0.5], [0.4, 1.0]]),
     r"^covariance must be symmetric"),
    (lambda: ls_oracle_success_probability(1.0, 2, [10, 10], 0.5, covariance=np.stack([np.eye(2), -np.eye(2)])),
     r"^covariance\[1\] must be positive definite"),
    (lambda: ls_points_needed(1.0, 2, 0.5, covariance=[[1.0, np.nan], [np.nan, 1.0]]), r"^covariance must contain"),
])
def test_bad_covariances_are_refused_in_one_line(call, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        call()
    assert "\n" not in str(info.value)
