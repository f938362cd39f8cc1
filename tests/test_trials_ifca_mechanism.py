"""Tests for :mod:`mixreg.trials_ifca_mechanism`: initial directions, the recovered identity
estimates of a resampled IFCA round, and the three trial functions."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from mixreg import theory
from mixreg.algorithms.ifca import _resampled_rounds
from mixreg.problems import make_labels, make_problem_from_parameters, make_theta_star
from mixreg.trials_ifca_mechanism import (
    DIRECTIONS,
    adversarial_directions,
    closeness_init,
    identity_round,
    ifca_basin_trial,
    ifca_contraction_trial,
    ifca_misclustering_trial,
    shifted_directions,
)


def _problem(k=3, m=30, n=8, d=5, sigma=0.5, seed=0):
    rng = np.random.default_rng(seed)
    star = make_theta_star(k, d, 1.0, protocol="gaussian", rng=rng)
    return make_problem_from_parameters(star, make_labels(m, k), n, sigma, rng=rng)


def test_adversarial_directions_point_to_the_nearest_other_centre():
    star = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
    u = adversarial_directions(star)
    np.testing.assert_allclose(u, [[1, 0], [-1, 0], [0, -1]], atol=1e-15)


def test_shifted_directions_move_every_estimate_along_the_closest_pair():
    star = np.array([[0.0, 0.0], [0.0, 3.0], [1.0, 0.0]])
    np.testing.assert_allclose(shifted_directions(star), [[1, 0]] * 3, atol=1e-15)


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("alpha", [0.0, 0.25, 1.7])
def test_closeness_init_is_at_alpha_delta(direction, alpha):
    pb = _problem()
    theta, u = closeness_init(pb, alpha, direction, np.random.default_rng(1))
    assert theta.shape == (1, pb.k, pb.d) and theta.dtype == pb.dtype
    np.testing.assert_allclose(np.linalg.norm(theta[0] - pb.theta_star, axis=1), alpha * pb.separation, atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="direction must be one of"):
        closeness_init(pb, alpha, "sideways", np.random.default_rng(1))


def test_adversarial_start_at_one_half_puts_a_model_on_the_midpoint():
    pb = _problem(k=2)
    theta, _ = closeness_init(pb, 0.5, "adversarial", None)
    mid = pb.theta_star.mean(axis=0)
    np.testing.assert_allclose(theta[0], [mid, mid], atol=1e-12)
    assert theory.population_basin_edge(pb.theta_star, adversarial_directions(pb.theta_star)) == pytest.approx(0.5)


def test_identity_round_recovers_the_assignments_the_update_used():
    """Rebuild the gradient step of the round from the recovered identity estimates and the
    driver's gradient subset: it must give the driver's parameters (option I, per-client mean
    loss, divided by m)."""
    pb = _problem(k=3, m=30, n=10, d=4, sigma=0.8)
    theta, _ = closeness_init(pb, 0.4, "random", np.random.default_rng(2))
    gamma = 0.7
    rng = np.random.default_rng(3)
    before = copy.deepcopy(rng)
    rnd = identity_round(pb, theta, gamma, rng)
    assert rnd.n_prime == 5 and rnd.assignments.shape == (pb.m,)
    X, y, offsets = _resampled_rounds(pb, 1, before)
    expected = theta[0].astype(np.float64).copy()
    for j in range(pb.k):
        grad = np.zeros(pb.d)
        for i in np.flatnonzero(rnd.assignments == j):
            Xi, yi = X[1][offsets[i]:offsets[i + 1]], y[1][offsets[i]:offsets[i + 1]]
            grad += 2.0 / Xi.shape[0] * Xi.T @ (Xi @ theta[0, j] - yi)
        expected[j] -= gamma / pb.m * grad
    np.testing.assert_allclose(rnd.result.theta[0], expected, rtol=1e-10, atol=1e-12)
    # and the recovered estimates are the argmin of the identity subset's losses
    for i in range(pb.m):
        Xi, yi = X[0][offsets[i]:offsets[i + 1]], y[0][offsets[i]:offsets[i + 1]]
        losses = ((yi[:, None] - Xi @ theta[0].T) ** 2).mean(axis=0)
        assert rnd.assignments[i] == int(np.argmin(losses))


def test_identity_round_refuses_several_replicas():
    pb = _problem()
    with pytest.raises(ValueError, match="one replica"):
        identity_round(pb, np.repeat(pb.theta_star[None], 2, axis=0), 0.5, np.random.default_rng(0))


def _cell(**kw):
    base = dict(m=40, k=2, n=40, d=5, sigma=0.5, delta=1.0, c1=0.375)
    return {**base, **kw}


def test_misclustering_trial_counts_and_exact_probability():
    cell = _cell(m=400, n=2 * 6, sigma=1.0)
    rec = ifca_misclustering_trial(cell, np.random.SeedSequence(4))
    assert rec["n_prime"] == 6 and rec["n_workers"] == 400 and 0 <= rec["n_wrong"] <= 400
    assert rec["snr"] == pytest.approx(1.0)
    assert rec["exact_probability"] == pytest.approx(
        float(theory.misclustering_probability(6, theory.ResidualPair.at_truth(1.0))), rel=1e-9)
    assert rec["wrong_fraction"] == rec["n_wrong"] / 400
    assert rec == ifca_misclustering_trial(cell, np.random.SeedSequence(4))  # deterministic
    with pytest.raises(ValueError, match="k = 2"):
        ifca_misclustering_trial(_cell(k=3, m=30), np.random.SeedSequence(0))


def test_contraction_trial_ratios_and_bound():
    cell = _cell(m=200, n=2 * 10, sigma=0.7, alpha=0.25, c2=1.0, c3=60.0, c4=1 / 9)
    rec = ifca_contraction_trial(cell, np.random.SeedSequence(5))
    rho, p, n_prime, d, m = rec["snr"], 0.5, 10, 5, 200
    for j in range(2):
        before = 0.25
        rhs = theory.ifca_one_round_bound(before, 0.7, p, d, m, n_prime, 1.0, c2=1.0, c3=60.0, c4=1 / 9)
        assert rec[f"bound_ratio_{j}"] == pytest.approx(rhs / before, rel=1e-10)
        assert rec[f"noise_ratio_{j}"] == pytest.approx(0.5 + theory.ifca_error_floor(
            0.7, p, d, m, n_prime, 1.0, c2=1.0, c3=0.0) / before, rel=1e-10)
        assert 0 <= rec[f"wrong_{j}"] <= 1 and 0 <= rec[f"exact_wrong_{j}"] <= 1
        assert rec[f"ratio_{j}"] > 0 and rec[f"c3_needed_{j}"] >= 0
    assert rho == pytest.approx(1 / 0.49)


def test_basin_trial_inside_and_beyond_the_adversarial_edge():
    """Inside Assumption 1 both variants succeed; at alpha = 0.7 in the adversarial direction
    (k = 2) the two estimates have crossed the midpoint: IFCA converges to the swapped truth, a
    success up to permutation but not for Theorem 1's notion."""
    base = _cell(m=40, n=2 * 8 * 20, d=5, sigma=0.2, n_rounds=8, floor_factor=2.0)
    inside = ifca_basin_trial({**base, "alpha": 0.2, "direction": "random"}, np.random.SeedSequence(6))
    assert inside["rs_success"] and inside["fb_success"] and inside["rs_same_success"]
    assert inside["n_prime"] == 20 and inside["rs_threshold"] > inside["fb_threshold"] > 0
    swapped = ifca_basin_trial({**base, "alpha": 0.7, "direction": "adversarial"}, np.random.SeedSequence(6))
    assert swapped["population_edge"] == pytest.approx(0.5)
    assert swapped["fb_success"] and not swapped["fb_same_success"]
    assert swapped["fb_same_dist"] > 0.9  # each estimate ended at the other centre
