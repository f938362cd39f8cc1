"""Tests for :mod:`mixreg.theory._ifca_clustering`: IFCA's identity estimate, exactly.

* the exact misclustering probability against a large Monte Carlo of the two residual sums
  drawn with plain NumPy (features, noise, sums; nothing of IFCA), at geometries where the
  residuals' cross term matters, with a check that the formula without the cross term is
  rejected by the same comparison (the test has power against that mutant);
* known special cases: ``n' = 1`` (the arcsine law of ``sign((U - V)(U + V))``), uncorrelated
  residuals (the F law), the noise-free truth (probability 0), identical models (ties);
* the Chernoff exponent against ``-(1/n') log P`` at large ``n'``, against a numerical
  minimisation of the moment generating function, and as a bound at every ``n'``;
* Lemma 1's shape and the population edge of the basin (against a brute-force scan).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from mixreg import theory
from mixreg.theory import ResidualPair

FAST = settings(max_examples=60, deadline=None, derandomize=True, database=None)


def _geometry(seed, d=4, own_scale=0.5, other_scale=1.0, sigma=0.6):
    rng = np.random.default_rng(seed)
    star = rng.standard_normal(d)
    own = star + own_scale * rng.standard_normal(d) / math.sqrt(d)
    other = star + other_scale * rng.standard_normal(d) / math.sqrt(d)
    return star, own, other, sigma


def _monte_carlo(star, own, other, sigma, n_prime, reps, rng):
    """Fraction of ``reps`` workers with ``S_other < S_own``: plain NumPy residual sums."""
    d = star.size
    wrong = 0
    chunk = max(1, 2_000_000 // (n_prime * d))
    done = 0
    while done < reps:
        r = min(chunk, reps - done)
        X = rng.standard_normal((r, n_prime, d))
        y = X @ star + sigma * rng.standard_normal((r, n_prime))
        s_own = ((y - X @ own) ** 2).sum(axis=1)
        s_other = ((y - X @ other) ** 2).sum(axis=1)
        wrong += int(np.sum(s_other < s_own))
        done += r
    return wrong / reps


def _without_cross_term(n_prime, pair):
    """The mutant: the residuals taken as uncorrelated (c = 0)."""
    return theory.misclustering_probability(
        n_prime, ResidualPair(own=pair.own, other=pair.other, cross=0.0, det=pair.own * pair.other))


# Geometries: the own model off the truth, the other model correlated with it (strong cross term),
# and both at the truth (the cross term is the noise variance).
GEOMETRIES = {
    "off-truth": _geometry(1, own_scale=0.8, other_scale=1.2, sigma=0.5),
    "correlated": (np.zeros(3), np.array([0.6, 0.0, 0.0]), np.array([1.0, 0.3, 0.0]), 0.4),
    "at-truth": (np.array([0.2, -0.1]), np.array([0.2, -0.1]), np.array([1.2, -0.1]), 1.0),
}


@pytest.mark.parametrize("name", list(GEOMETRIES))
@pytest.mark.parametrize("n_prime", [1, 4, 15])
def test_exact_probability_matches_a_monte_carlo_of_the_residual_sums(name, n_prime):
    """The exact probability lies within 4.5 standard errors of 400 000 simulated workers, and
    the formula without the residuals' cross term does not (where it differs enough to tell)."""
    star, own, other, sigma = GEOMETRIES[name]
    pair = ResidualPair.from_parameters(star, own, other, sigma)
    exact = float(theory.misclustering_probability(n_prime, pair))
    reps = 400_000
    measured = _monte_carlo(star, own, other, sigma, n_prime, reps, np.random.default_rng([7, n_prime, len(name)]))
    se = math.sqrt(max(exact * (1 - exact), 1e-12) / reps)
    assert abs(measured - exact) <= 4.5 * se + 1e-6, (measured, exact, se)
    mutant = float(_without_cross_term(n_prime, pair))
    if abs(mutant - exact) > 12 * se:
        assert abs(measured - mutant) > 4.5 * se


@pytest.mark.parametrize("name", ["correlated", "at-truth"])
def test_the_monte_carlo_comparison_has_power_against_dropping_the_cross_term(name):
    """Where the residuals are correlated (through the noise at the truth, through the
    displacements elsewhere), the formula without the cross term is more than 40 standard errors
    of the Monte Carlo above away from the exact one, so the comparison rejects that mutant."""
    pair = ResidualPair.from_parameters(*GEOMETRIES[name])
    n = np.array([1, 4, 15])
    exact = theory.misclustering_probability(n, pair)
    se = np.sqrt(exact * (1 - exact) / 400_000)
    assert np.all(np.abs(_without_cross_term(n, pair) - exact) > 40 * se)


@FAST
@given(a=st.floats(0.05, 5.0), b=st.floats(0.05, 5.0), corr=st.floats(-0.95, 0.95))
def test_one_point_is_the_arcsine_law(a, b, corr):
    """n' = 1: P(V^2 < U^2) = P((U - V)(U + V) > 0) = 1/2 + arcsin(corr(U - V, U + V)) / pi, and
    corr(U - V, U + V) = (a - b) / sqrt((a + b)^2 - 4 c^2)."""
    c = corr * math.sqrt(a * b)
    pair = ResidualPair(own=a, other=b, cross=c, det=a * b - c * c)
    expected = 0.5 + math.asin((a - b) / math.sqrt((a + b) ** 2 - 4 * c * c)) / math.pi
    assert float(theory.misclustering_probability(1, pair)) == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("a,b", [(1.0, 2.0), (0.5, 3.0), (2.0, 1.5)])
@pytest.mark.parametrize("n_prime", [1, 3, 10, 40])
def test_uncorrelated_residuals_give_the_f_law(a, b, n_prime):
    """c = 0 (e.g. sigma = 0 and orthogonal displacements): S_own / a and S_other / b are
    independent chi-square(n'), so P(S_other < S_own) = P(F(n', n') > b / a)."""
    pair = ResidualPair(own=a, other=b, cross=0.0, det=a * b)
    expected = stats.f.sf(b / a, n_prime, n_prime)
    assert float(theory.misclustering_probability(n_prime, pair)) == pytest.approx(expected, rel=1e-10)


def test_orthogonal_displacements_without_noise_are_uncorrelated():
    star = np.zeros(3)
    pair = ResidualPair.from_parameters(star, np.array([0.5, 0, 0]), np.array([0, 1.0, 0]), 0.0)
    assert (pair.own, pair.other, pair.cross, pair.det) == pytest.approx((0.25, 1.0, 0.0, 0.25))


def test_noise_free_truth_is_never_misclustered():
    """sigma = 0 and the own model at the truth: S_own = 0 < S_other, so P = 0 and I = inf."""
    star = np.array([1.0, 2.0])
    pair = ResidualPair.from_parameters(star, star, star + [0.3, 0.0], 0.0)
    assert pair.det == 0.0
    assert np.all(theory.misclustering_probability(np.arange(1, 6), pair) == 0.0)
    assert theory.misclustering_exponent(pair) == math.inf


def test_identical_models_tie_and_the_lowest_index_wins():
    star = np.array([0.0, 1.0])
    pair = ResidualPair.from_parameters(star, star + 0.2, star + 0.2, 0.5)
    assert float(theory.misclustering_probability(3, pair, own_first=True)) == 0.0
    assert float(theory.misclustering_probability(3, pair, own_first=False)) == 1.0
    assert theory.misclustering_exponent(pair) == 0.0


def test_far_other_model_is_almost_never_chosen():
    """theta_other far away: the probability vanishes and the exponent grows like (1/2) log b."""
    star = np.zeros(2)
    exps = []
    for far in (10.0, 100.0, 1000.0):
        pair = ResidualPair.from_parameters(star, star, star + [far, 0.0], 1.0)
        assert float(theory.misclustering_probability(5, pair)) < 1e-3 / far
        exps.append(theory.misclustering_exponent(pair))
    np.testing.assert_allclose(np.diff(exps), math.log(10.0), rtol=0.02)  # (1/2) log(far^2) steps


@pytest.mark.parametrize("rho", [0.5, 1.0, 4.0, 16.0])
def test_exponent_at_truth_closed_form(rho):
    pair = ResidualPair.at_truth(rho)
    assert theory.misclustering_exponent(pair) == pytest.approx(0.5 * math.log(1 + rho / 4), rel=1e-14)
    assert float(theory.misclustering_exponent_at_truth(rho)) == pytest.approx(0.5 * math.log1p(rho / 4), rel=1e-14)
    # scale invariance: sigma = 2, Delta = 2 sqrt(rho) is the same pair up to a factor 4
    star = np.zeros(3)
    scaled = ResidualPair.from_parameters(star, star, star + [2 * math.sqrt(rho), 0, 0], 2.0)
    assert theory.misclustering_exponent(scaled) == pytest.approx(theory.misclustering_exponent(pair), rel=1e-12)
    n = np.array([1, 7, 30])
    np.testing.assert_allclose(theory.misclustering_probability(n, scaled),
                               theory.misclustering_probability(n, pair), rtol=1e-10)


@pytest.mark.parametrize("name", list(GEOMETRIES))
def test_exponent_is_the_minimised_moment_generating_function(name):
    """I = -min_t log E exp(t (U^2 - V^2)) = -min_t [-(1/2) log det(I - 2 t Sigma diag(1, -1))],
    minimised numerically over the t where the expectation is finite."""
    pair = ResidualPair.from_parameters(*GEOMETRIES[name])
    S = pair.covariance @ np.diag([1.0, -1.0])

    def log_mgf(t):
        det = np.linalg.det(np.eye(2) - 2 * t * S)
        return np.inf if det <= 0 else -0.5 * math.log(det)

    eig = np.linalg.eigvals(S).real
    hi = 1 / (2 * eig.max()) * (1 - 1e-9)  # the MGF is finite for t in (1 / (2 lambda_min), 1 / (2 lambda_max))
    res = optimize.minimize_scalar(log_mgf, bounds=(0.0, hi), method="bounded", options={"xatol": 1e-12})
    assert theory.misclustering_exponent(pair) == pytest.approx(-res.fun, rel=1e-7)


@pytest.mark.parametrize("pair", [ResidualPair.at_truth(1.0), ResidualPair.at_truth(6.0),
                                  ResidualPair.from_parameters(*GEOMETRIES["correlated"])],
                         ids=["rho1", "rho6", "correlated"])
def test_chernoff_exponent_is_the_limit_of_the_log_probability(pair):
    """-(1/n') log P = I + log(n') / (2 n') + C / n' + o(1/n') (the Beta tail's prefactor): the gap
    to I is positive, shrinks, and n' gap - (1/2) log n' settles (its steps shrink geometrically)."""
    rate = theory.misclustering_exponent(pair)
    n = np.array([150, 300, 600, 1200])
    P = theory.misclustering_probability(n, pair)
    assert np.all(P > 0)
    gap = -np.log(P) / n - rate
    assert np.all(gap > 0) and np.all(np.diff(gap) < 0)
    steps = np.abs(np.diff(n * gap - 0.5 * np.log(n)))
    assert np.all(steps[1:] < 0.7 * steps[:-1]), steps
    assert gap[-1] < 0.05 * rate


@FAST
@given(seed=st.integers(0, 2**31), own_scale=st.floats(0.0, 0.5), other_scale=st.floats(0.8, 3.0),
       sigma=st.floats(0.0, 2.0), n_prime=st.integers(1, 300))
def test_chernoff_bound_holds_at_every_n_prime(seed, own_scale, other_scale, sigma, n_prime):
    pair = ResidualPair.from_parameters(*_geometry(seed, own_scale=own_scale, other_scale=other_scale, sigma=sigma))
    P = float(theory.misclustering_probability(n_prime, pair))
    assert 0.0 <= P <= 1.0
    assert P <= math.exp(-theory.misclustering_exponent(pair) * n_prime) * (1 + 1e-9) + 1e-300


@FAST
@given(seed=st.integers(0, 2**31), sigma=st.floats(0.0, 2.0))
def test_determinant_without_cancellation_matches_the_plain_formula(seed, sigma):
    pair = ResidualPair.from_parameters(*_geometry(seed, sigma=sigma))
    plain = pair.own * pair.other - pair.cross**2
    assert pair.det == pytest.approx(plain, rel=1e-8, abs=1e-12)


def test_probability_decreases_in_n_prime_and_rho():
    n = np.arange(1, 60)
    for rho in (0.5, 2.0, 8.0):
        P = theory.misclustering_probability(n, ResidualPair.at_truth(rho))
        assert np.all(np.diff(P) < 0)
    at = [float(theory.misclustering_probability(10, ResidualPair.at_truth(r))) for r in (0.5, 1, 2, 4)]
    assert np.all(np.diff(at) < 0)


def test_lemma1_shape_and_the_bound_constant():
    """(rho/(rho+1))^2 with c4; c4 = 1/9 keeps it below the exact exponent at the truth for every
    rho (the test suite's worst-geometry constant), while c4 = 1/2 does not (the shape is not the
    exponent's: it saturates at large rho and is quadratic at small rho)."""
    rho = np.geomspace(1e-3, 1e4, 200)
    shape = theory.lemma1_exponent(rho)
    np.testing.assert_allclose(shape, (rho / (rho + 1)) ** 2, rtol=1e-14)
    assert float(theory.lemma1_exponent(np.inf, c4=0.3)) == pytest.approx(0.3)
    exact = theory.misclustering_exponent_at_truth(rho)
    assert np.all(theory.lemma1_exponent(rho, c4=1 / 9) < exact)
    ratio = exact / shape
    assert ratio.min() < 0.5 < ratio.max()
    assert ratio[0] > 10 and ratio[-1] > 3  # loose at both ends


def test_population_edge_adversarial_is_one_half():
    star = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    towards = np.array([star[1] - star[0], star[0] - star[1], star[0] - star[2]])
    assert theory.population_basin_edge(star, towards) == pytest.approx(0.5)
    away = -towards
    assert theory.population_basin_edge(star, away) > 0.5


@pytest.mark.parametrize("seed", range(5))
def test_population_edge_matches_a_brute_force_scan(seed):
    """The smallest alpha at which some worker's expected loss ||theta*_j - theta_l||^2 + sigma^2
    is at most its own model's, scanned on a fine grid."""
    rng = np.random.default_rng(seed)
    k, d = 3, 4
    star = rng.standard_normal((k, d))
    u = rng.standard_normal((k, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    delta = min(np.linalg.norm(star[i] - star[j]) for i in range(k) for j in range(k) if i != j)
    edge = theory.population_basin_edge(star, u)
    grid = np.linspace(1e-3, 20, 200_001)
    theta = star[None] + grid[:, None, None] * delta * u[None]
    losses = np.linalg.norm(star[None, :, None, :] - theta[:, None, :, :], axis=3)  # [alpha, j, l]
    own = np.einsum("ajj->aj", losses)
    wrong = (losses <= own[:, :, None] + 1e-15) & ~np.eye(k, dtype=bool)[None]
    first = grid[np.argmax(wrong.any(axis=(1, 2)))] if wrong.any() else np.inf
    assert edge == pytest.approx(first, abs=2e-4) if np.isfinite(first) else edge > 20


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: theory.misclustering_probability(0, ResidualPair.at_truth(1.0)), "n_prime must be integers >= 1"),
        (lambda: theory.misclustering_probability(2.5, ResidualPair.at_truth(1.0)), "n_prime must be integers"),
        (lambda: theory.misclustering_probability(3, (1.0, 2.0, 0.5)), "pair must be a ResidualPair"),
        (lambda: ResidualPair.at_truth(-1.0), "rho must be in"),
        (lambda: ResidualPair(own=1.0, other=1.0, cross=0.0, det=-1.0), "det must be in"),
        (lambda: ResidualPair.from_parameters(np.zeros(2), np.zeros(3), np.zeros(2), 1.0), "theta_own"),
        (lambda: ResidualPair.from_parameters(np.zeros(2), np.zeros(2), np.zeros(2), -1.0), "sigma must be in"),
        (lambda: theory.lemma1_exponent(-1.0), "rho must be >= 0"),
        (lambda: theory.misclustering_exponent_at_truth(np.nan), "rho must be >= 0"),
        (lambda: theory.population_basin_edge(np.zeros((1, 2)), np.ones((1, 2))), "k >= 2"),
        (lambda: theory.population_basin_edge(np.zeros((2, 2)), np.ones((2, 2))), "two equal rows"),
    ],
)
def test_bad_inputs_raise_naming_the_parameter(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()
