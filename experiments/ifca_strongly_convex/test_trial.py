"""Unit tests of the strongly convex trial and of its theory (:mod:`mixreg.theory._ifca_sc`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mixreg.problems import ProblemSpec
from mixreg.theory import misclustering_probability
from mixreg.theory._ifca_sc import (
    ifca_sc_conditional_moments,
    ifca_sc_second_moments,
    ifca_sc_stationary,
    lemma3_bound,
    lemma3_chebyshev,
    residual_pair,
    squared_loss_variance,
    strong_convexity_constants,
)

from experiments.ifca_strongly_convex.trial import ScSpec, plan, sc_covariance, sc_trial


def _spec(**kw):
    problem = ProblemSpec(m=kw.pop("m", 40), k=2, d=kw.pop("d", 6), sigma=kw.pop("sigma", 0.05), scale=1.0,
                          protocol="gaussian", n=kw.pop("n", 10), dtype="float64")
    base = dict(family="rate", kappa=4.0, p_min=0.5, r0=0.125, rounds=30, eps=0.01, far=5.0)
    return ScSpec(problem=problem, **{**base, **kw})


def test_assumption3_constants_are_twice_the_extreme_eigenvalues_and_kappa_is_their_ratio():
    for kappa in (1.0, 4.0, 16.0):
        lam, L = strong_convexity_constants(sc_covariance(8, kappa))
        assert L == pytest.approx(2.0) and L / lam == pytest.approx(kappa)


def test_squared_loss_variance_is_the_monte_carlo_variance():
    """Assumption 4's variance of (y - <x, theta>)^2 for x ~ N(0, Sigma), noise N(0, sigma^2):
    2 (||theta - theta*||_Sigma^2 + sigma^2)^2 (the chi-square's 2)."""
    rng = np.random.default_rng(0)
    cov = sc_covariance(3, 9.0)
    star, theta, sigma = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, 0.0]), 0.3
    x = rng.multivariate_normal(np.zeros(3), cov, size=400_000)
    f = (x @ (star - theta) + sigma * rng.standard_normal(x.shape[0])) ** 2
    assert squared_loss_variance(theta, star, cov, sigma) == pytest.approx(f.var(), rel=0.02)


def test_lemma3_constant_and_chebyshev_step():
    assert lemma3_bound(2.0, 0.5, 1.0, 16) == pytest.approx(128 * 2.0 / (0.25 * 16))
    star, own, other = np.zeros(2), np.array([0.1, 0.0]), np.array([1.0, 0.0])
    cov = np.eye(2)
    gap = (1.0 - 0.01) / 2
    var = 2 * (0.01 + 0.04) ** 2 + 2 * (1.0 + 0.04) ** 2
    assert lemma3_chebyshev(star, own, other, cov, 0.2, 5) == pytest.approx(var / (5 * gap**2))


def test_residual_pair_in_the_sigma_geometry_gives_the_monte_carlo_probability():
    rng = np.random.default_rng(1)
    cov = sc_covariance(3, 16.0)
    star, own, other = np.zeros(3), np.array([0.05, 0.0, 0.1]), np.array([0.2, 0.5, 0.7])
    pair = residual_pair(star, own, other, cov, 0.3)
    n_prime, reps = 3, 200_000
    x = rng.multivariate_normal(np.zeros(3), cov, size=(reps, n_prime))
    y = 0.3 * rng.standard_normal((reps, n_prime))
    wrong = np.mean(((y - x @ other) ** 2).sum(1) < ((y - x @ own) ** 2).sum(1))
    exact = float(misclustering_probability(n_prime, pair))
    assert abs(wrong - exact) < 5 * math.sqrt(exact * (1 - exact) / reps)


def test_conditional_moments_average_to_the_isotropic_ones():
    """E over a uniform direction of the conditional recursion is the isotropic one (linear in P0)."""
    cov = sc_covariance(4, 8.0)
    s = np.linalg.eigvalsh(cov)
    iso = ifca_sc_second_moments(s, 0.3, 50, 7, 0.1, 0.2, 12)
    basis = [0.2 * e for e in np.eye(4)]
    mean = np.mean([ifca_sc_conditional_moments(cov, 0.3, 50, 7, 0.1, e0, 12) for e0 in basis], axis=0)
    np.testing.assert_allclose(mean, iso, rtol=1e-12)
    long = ifca_sc_second_moments(s, 0.3, 50, 7, 0.1, 0.2, 4000)
    assert long[-1] == pytest.approx(ifca_sc_stationary(s, 0.3, 50, 7, 0.1), rel=1e-9)


def test_plan_window_is_far_above_the_floor_and_rounds_reach_it():
    spec = _spec(kappa=4.0, rounds=60)
    planned = plan(spec, horizon=2000)
    for j in range(2):
        w = planned["window"][j]
        mom = planned["moments"][j]
        assert w >= 1 and mom[w] >= 25 * planned["floor2"][j] > mom[w + 1]
        assert planned["to_floor"][j] < 2000


def test_sc_trial_record():
    spec = _spec(rounds=40, p_min=0.25)
    rec = sc_trial(spec, np.random.SeedSequence(3))
    assert rec["L"] == pytest.approx(2.0) and rec["lam"] == pytest.approx(0.5) and rec["step"] == 0.5
    assert rec["points_per_round"] == 10 and rec["separation"] == pytest.approx(1.0)
    assert rec["p_0"] == 0.25 and rec["p_1"] == 0.75
    assert 0 < rec["rounds_eps"] <= 40
    for j in range(2):
        assert rec[f"d2win_{j}"] < spec.r0**2 and rec[f"final2_{j}"] < rec[f"d2win_{j}"]
        assert 0 <= rec[f"exact_{j}"] < 1e-3 and rec[f"wrong_all_{j}"] == 0.0
        assert rec[f"lemma_{j}"] > rec[f"cheb_{j}"] > 0


def test_spec_refuses_a_bad_family_and_kappa_below_one():
    with pytest.raises(ValueError, match="family"):
        _spec(family="other")
    with pytest.raises(ValueError, match="kappa"):
        _spec(kappa=0.5)
