"""Tests for the probes of :mod:`mixreg.algorithms.ifca`: the initial directions of
:func:`closeness_init` and the recovered identity estimates of a resampled round
(:func:`identity_round`)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from mixreg import theory
from mixreg.algorithms.ifca import (
    CLOSENESS_DIRECTIONS,
    _resampled_rounds,
    closeness_directions,
    closeness_init,
    identity_round,
)
from mixreg.problems import make_labels, make_problem_from_parameters, make_theta_star


def _problem(k=3, m=30, n=8, d=5, sigma=0.5, seed=0):
    rng = np.random.default_rng(seed)
    star = make_theta_star(k, d, 1.0, protocol="gaussian", rng=rng)
    return make_problem_from_parameters(star, make_labels(m, k), n, sigma, rng=rng)


def test_adversarial_directions_point_to_the_nearest_other_centre():
    star = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
    u = closeness_directions(star, "adversarial")
    np.testing.assert_allclose(u, [[1, 0], [-1, 0], [0, -1]], atol=1e-15)


def test_shifted_directions_move_every_estimate_along_the_closest_pair():
    star = np.array([[0.0, 0.0], [0.0, 3.0], [1.0, 0.0]])
    np.testing.assert_allclose(closeness_directions(star, "shifted"), [[1, 0]] * 3, atol=1e-15)


@pytest.mark.parametrize("direction", CLOSENESS_DIRECTIONS)
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
    assert theory.population_basin_edge(pb.theta_star, closeness_directions(pb.theta_star, "adversarial")) == pytest.approx(0.5)


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


@pytest.mark.parametrize("star,message", [
    (np.zeros((1, 3)), "k >= 2 centres"),
    (np.array([[0.0, 1.0], [0.0, 1.0]]), "distinct rows"),
    (np.array([[0.0, np.nan], [1.0, 0.0]]), "theta_star"),
])
def test_closeness_directions_refuse_what_gives_no_direction(star, message):
    with pytest.raises(ValueError, match=message):
        closeness_directions(star, "adversarial")
    with pytest.raises(ValueError, match="direction must be one of"):
        closeness_directions(np.eye(2), "random")
