"""The analysis of a run's trajectory (:mod:`mixreg.trajectories`): checkpoints, decoded labels,
the measured contraction and the pooled objective."""

import types

import numpy as np
import pytest

from mixreg.algorithms.ifca import training_loss
from mixreg.metrics import matched_max_distance
from mixreg.problems import make_problem, make_problem_from_parameters
from mixreg.trajectories import (
    MIN_WINDOW,
    checkpoint_rounds,
    decoded_labels,
    geometric_rate,
    labels_window,
    measured_contraction,
    phase1_curve,
    pooled_training_loss,
)


def test_checkpoint_rounds_and_the_fitted_rate():
    np.testing.assert_array_equal(checkpoint_rounds(10, 4), [0, 4, 8, 10])
    np.testing.assert_array_equal(checkpoint_rounds(8, 4), [0, 4, 8])
    path = 3.0 + 0.8 ** np.arange(60)[:, None, None] * np.ones((60, 2, 3))
    assert geometric_rate(path) == pytest.approx(0.8, rel=1e-3)
    assert np.isnan(geometric_rate(np.ones((4, 2, 3))))  # no usable round


def test_measured_contraction_follows_each_rounds_own_fixed_point():
    """Labels that flip at round 5 move the fixed point; each round's ratio is taken to its own."""
    a, b = np.zeros((2, 3)), np.ones((2, 3))
    path = np.empty((13, 2, 3))
    path[0] = 5.0
    fixed = np.empty((12, 2, 3))
    for t in range(12):
        fixed[t] = a if t < 5 else b
        path[t + 1] = fixed[t] + 0.7 * (path[t] - fixed[t])
    factor, window = measured_contraction(path, fixed, 0)
    assert factor == pytest.approx(0.7) and window == 12
    # the distance to the final fixed point alone would not show 0.7 over the flip
    e = np.linalg.norm(path - b, axis=2).max(axis=1)
    assert (e[-1] / e[0]) ** (1 / 12) != pytest.approx(0.7, abs=0.01)
    assert MIN_WINDOW > 3
    assert np.isnan(measured_contraction(path, fixed, 9)[0])  # fewer than MIN_WINDOW rounds left
    assert measured_contraction(path, fixed, 9, min_window=3) == pytest.approx((0.7, 3))


def test_labels_window():
    pb = make_problem_from_parameters(np.eye(2), np.array([0, 1, 1]), np.array([1, 998, 1]), 0.1,
                                      rng=np.random.default_rng(0))
    final = np.array([0, 1, 1])
    labels = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 1], final, final])
    assert labels_window(pb, labels) == (1, 3)  # a one-point client is 0.1% of the data, within the tolerance
    assert labels_window(pb, labels, tolerance=0.0) == (3, 3)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_decoded_labels_are_ifcas_assignments(dtype):
    pb = make_problem(30, 3, 4, 5, 0.5, 1.0, rng=np.random.default_rng(5), dtype=dtype)
    path = pb.theta_star[None] + 0.8 * np.random.default_rng(6).standard_normal((7, 3, 5))
    labels = decoded_labels(pb, path)
    assert labels.shape == (7, 30) and labels.dtype == np.int64
    np.testing.assert_array_equal(labels, training_loss(pb, path)[1])
    assert ((decoded_labels(pb, path) >= 0) & (decoded_labels(pb, path) < 3)).all()


def test_phase1_curve_is_the_error_of_each_groups_mean():
    star = np.array([[0.0, 0.0], [4.0, 0.0]])
    theta = np.stack([star[[0, 0, 1]] + t for t in (1.0, 0.5, 0.0)])  # 3 rounds, 3 anchors
    history = types.SimpleNamespace(theta=theta)
    curve = phase1_curve(history, np.array([0, 0, 1]), star)
    np.testing.assert_allclose(curve, [np.sqrt(2), np.sqrt(0.5), 0.0])
    np.testing.assert_allclose(curve, matched_max_distance(theta[:, [0, 2]], star))
    assert np.isnan(phase1_curve(history, np.array([0, 0, -1]), star)).all()  # an empty group


def test_pooled_training_loss():
    pb = make_problem(10, 2, np.array([1, 2, 3, 4, 5, 1, 2, 3, 4, 5]), 3, 0.3, 1.0, rng=np.random.default_rng(3))
    theta = np.random.default_rng(4).standard_normal((2, 2, 3))
    expected = [sum(min(np.sum((pb.client(i)[0] @ th[j] - pb.client(i)[1]) ** 2) for j in range(2))
                    for i in range(10)) / pb.N for th in theta]
    np.testing.assert_allclose(pooled_training_loss(pb, theta), expected)
