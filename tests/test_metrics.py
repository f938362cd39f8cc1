"""Tests for :mod:`mixreg.metrics`.

Everything is deterministic: numpy randomness comes from fixed seeds, and hypothesis runs
derandomized without an example database.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mixreg.metrics import (
    best_permutation,
    matched_max_distance,
    matched_mean_distance,
    misclustering_rate,
    nearest_truth_distance,
    oracle_ls_floor,
    pairwise_distances,
)

# --------------------------------------------------------------------------------------------
# Hypothesis strategies (small and fast)
# --------------------------------------------------------------------------------------------

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None)


def parameter_sets(k, d, *, batch=None, bound=10.0):
    """Float64 parameter arrays of shape (k, d), or (batch, k, d), entries in [-bound, bound]."""
    shape = (k, d) if batch is None else (batch, k, d)
    elements = st.floats(-bound, bound, allow_nan=False, allow_infinity=False)
    return hnp.arrays(np.float64, shape, elements=elements)


@st.composite
def matching_problems(draw, max_k=5, max_d=3, max_batch=3):
    """(theta_hat (B, k, d), theta_star (k, d), a permutation of range(k))."""
    k = draw(st.integers(1, max_k))
    d = draw(st.integers(1, max_d))
    batch = draw(st.integers(1, max_batch))
    theta_star = draw(parameter_sets(k, d))
    # half the time, estimates are noisy copies of the truth (the regime of interest)
    if draw(st.booleans()):
        noise = draw(parameter_sets(k, d, batch=batch, bound=1.0))
        theta_hat = theta_star[None] + noise
    else:
        theta_hat = draw(parameter_sets(k, d, batch=batch))
    perm = np.array(draw(st.permutations(range(k))), dtype=np.intp)
    return theta_hat, theta_star, perm


@st.composite
def clusterings(draw, max_k=4, max_m=12, max_batch=3):
    """(assignments (B, m) in [-1, k), labels (m,) in [0, k), k)."""
    k = draw(st.integers(1, max_k))
    m = draw(st.integers(1, max_m))
    batch = draw(st.integers(1, max_batch))
    labels = draw(hnp.arrays(np.int64, (m,), elements=st.integers(0, k - 1)))
    assignments = draw(hnp.arrays(np.int64, (batch, m), elements=st.integers(-1, k - 1)))
    return assignments, labels, k


# --------------------------------------------------------------------------------------------
# Brute-force references
# --------------------------------------------------------------------------------------------


def brute_force(dist):
    """Objective values of all k! permutations of a (k, k) distance matrix (estimate, truth).

    Returns (perms (k!, k), means (k!,), maxima (k!,)) with perms[p, l] the estimate matched
    to truth l.
    """
    k = dist.shape[0]
    perms = np.array(list(itertools.permutations(range(k))), dtype=np.intp)
    matched = dist[perms, np.arange(k)]
    return perms, matched.mean(axis=1), matched.max(axis=1)


def naive_distances(theta_hat, theta_star):
    """Reference distances with exactly summed squares."""
    theta_hat = np.asarray(theta_hat, dtype=np.float64)
    out = np.empty(theta_hat.shape[:-1] + (len(theta_star),))
    for idx in np.ndindex(*theta_hat.shape[:-1]):
        for l, star in enumerate(np.asarray(theta_star, dtype=np.float64)):
            out[idx + (l,)] = math.sqrt(math.fsum((theta_hat[idx] - star) ** 2))
    return out


# --------------------------------------------------------------------------------------------
# pairwise_distances
# --------------------------------------------------------------------------------------------


def test_pairwise_matches_reference_and_shapes():
    rng = np.random.default_rng(0)
    theta_star = rng.normal(size=(3, 7))
    theta_hat = rng.normal(size=(4, 5, 7))  # k_hat = 5 != k = 3
    dist = pairwise_distances(theta_hat, theta_star)
    assert dist.shape == (4, 5, 3) and dist.dtype == np.float64
    np.testing.assert_allclose(dist, naive_distances(theta_hat, theta_star), rtol=1e-13)
    single = pairwise_distances(theta_hat[2], theta_star)
    assert single.shape == (5, 3)
    np.testing.assert_array_equal(single, dist[2])


def test_pairwise_is_accurate_near_the_truth():
    """Direct differences keep full relative precision where the expansion
    ||a||^2 + ||b||^2 - 2<a, b> would lose it (||theta|| ~ 3e3, distance ~ 3e-8)."""
    rng = np.random.default_rng(1)
    theta_star = 100.0 * rng.normal(size=(4, 1000))
    theta_hat = theta_star[None] + 1e-9 * rng.normal(size=(2, 4, 1000))
    dist = pairwise_distances(theta_hat, theta_star)
    np.testing.assert_allclose(dist, naive_distances(theta_hat, theta_star), rtol=1e-12)
    assert np.all(np.diagonal(dist, axis1=1, axis2=2) < 1e-7)


def test_pairwise_extreme_magnitudes_are_rescaled_not_overflowed():
    theta_star = np.zeros((1, 3))
    tiny = np.array([[3e-200, 4e-200, 0.0]])
    huge = np.array([[3e200, 4e200, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pairwise_distances(tiny, theta_star)[0, 0] == pytest.approx(5e-200, rel=1e-14)
        assert pairwise_distances(huge, theta_star)[0, 0] == pytest.approx(5e200, rel=1e-14)
        assert matched_max_distance(huge, theta_star) == pytest.approx(5e200, rel=1e-14)
        assert matched_mean_distance(tiny, theta_star) == pytest.approx(5e-200, rel=1e-14)


# --------------------------------------------------------------------------------------------
# Permutation invariance (hypothesis)
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(matching_problems())
def test_distances_invariant_under_permuting_estimates(problem):
    """The three distances are functions of the set of estimates, not of their order:
    d(theta_hat[sigma], theta*) = d(theta_hat, theta*) for every permutation sigma."""
    theta_hat, theta_star, perm = problem
    shuffled = theta_hat[:, perm, :]
    for metric in (matched_mean_distance, matched_max_distance, nearest_truth_distance):
        np.testing.assert_allclose(
            metric(shuffled, theta_star), metric(theta_hat, theta_star), rtol=1e-12, atol=1e-12
        )


@SETTINGS
@given(matching_problems())
def test_distance_ordering_and_optimal_permutations(problem):
    """nearest_truth <= matched_mean <= matched_max, and each returned permutation is a
    permutation attaining its distance."""
    theta_hat, theta_star, _ = problem
    k = theta_star.shape[0]
    nearest = nearest_truth_distance(theta_hat, theta_star)
    mean = matched_mean_distance(theta_hat, theta_star)
    worst = matched_max_distance(theta_hat, theta_star)
    assert np.all(nearest <= mean * (1 + 1e-12) + 1e-12)
    assert np.all(mean <= worst * (1 + 1e-12) + 1e-12)
    dist = pairwise_distances(theta_hat, theta_star)
    for objective, value in (("mean", mean), ("max", worst)):
        perm = best_permutation(theta_hat, theta_star, objective=objective)
        assert np.all(np.sort(perm, axis=1) == np.arange(k))
        matched = np.take_along_axis(dist, perm[:, None, :], axis=1)[:, 0, :]
        achieved = matched.mean(axis=1) if objective == "mean" else matched.max(axis=1)
        np.testing.assert_allclose(achieved, value, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(clusterings(), st.data())
def test_misclustering_invariant_under_relabelling(clustering, data):
    """The rate depends only on the partitions: renaming the true clusters (sigma) and the
    estimated clusters (tau) independently leaves it unchanged."""
    assignments, labels, k = clustering
    sigma = np.array(data.draw(st.permutations(range(k))))
    tau = np.array(data.draw(st.permutations(range(k))))
    renamed = np.where(assignments >= 0, tau[assignments], -1)
    np.testing.assert_array_equal(
        misclustering_rate(renamed, sigma[labels], k), misclustering_rate(assignments, labels, k)
    )


# --------------------------------------------------------------------------------------------
# Agreement with brute force over all permutations
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("kind", ["continuous", "ties"])
def test_matched_distances_agree_with_brute_force(k, kind):
    rng = np.random.default_rng(100 * k + (kind == "ties"))
    batch, d = 8, 3
    if kind == "continuous":
        theta_star = rng.normal(size=(k, d))
        theta_hat = theta_star[None] + rng.normal(scale=0.8, size=(batch, k, d))
    else:  # points on a small integer grid: many exactly tied distances
        theta_star = rng.integers(0, 3, size=(k, 1)).astype(float)
        theta_hat = rng.integers(0, 3, size=(batch, k, 1)).astype(float)
    dist = pairwise_distances(theta_hat, theta_star)
    mean = matched_mean_distance(theta_hat, theta_star)
    worst = matched_max_distance(theta_hat, theta_star)
    perm_mean = best_permutation(theta_hat, theta_star, objective="mean")
    perm_max = best_permutation(theta_hat, theta_star, objective="max")
    for b in range(batch):
        perms, means, maxima = brute_force(dist[b])
        assert mean[b] == pytest.approx(means.min(), rel=1e-12, abs=1e-12)
        assert worst[b] == maxima.min()  # the bottleneck value is one of the distances
        matched = dist[b][perm_mean[b], np.arange(k)]
        assert matched.mean() == pytest.approx(means.min(), rel=1e-12, abs=1e-12)
        matched = dist[b][perm_max[b], np.arange(k)]
        assert matched.max() == maxima.min()
        # documented tie-break: smallest sum among the bottleneck-optimal permutations
        assert matched.mean() == pytest.approx(
            means[maxima == maxima.min()].min(), rel=1e-12, abs=1e-12
        )


def test_k_equal_one():
    theta_star = np.array([[1.0, 2.0, 2.0]])
    theta_hat = np.array([[[1.0, 0.0, 0.0]], [[1.0, 2.0, 2.0]]])
    expected = np.array([math.sqrt(8.0), 0.0])
    for metric in (matched_mean_distance, matched_max_distance, nearest_truth_distance):
        np.testing.assert_allclose(metric(theta_hat, theta_star), expected, rtol=1e-15)
    np.testing.assert_array_equal(best_permutation(theta_hat, theta_star, "max"), [[0], [0]])


# --------------------------------------------------------------------------------------------
# Bottleneck correctness on adversarial instances
# --------------------------------------------------------------------------------------------

# k = 2 in the plane: truths (0, 0), (4, 0); estimates (0, 0), (0, 4).
# Distance matrix (estimate, truth) = [[0, 4], [4, sqrt(32)]].
#   identity:  sum 0 + sqrt(32) = 5.657 (min-sum),  max sqrt(32) = 5.657
#   swap:      sum 4 + 4        = 8,                max 4          (bottleneck)
# A greedy matcher taking the cheapest edge first (estimate 0 -> truth 0) gets max 5.657.
GADGET_STAR = np.array([[0.0, 0.0], [4.0, 0.0]])
GADGET_HAT = np.array([[0.0, 0.0], [0.0, 4.0]])


def test_bottleneck_differs_from_min_sum_k2():
    assert matched_mean_distance(GADGET_HAT, GADGET_STAR) == pytest.approx(math.sqrt(32) / 2)
    assert matched_max_distance(GADGET_HAT, GADGET_STAR) == pytest.approx(4.0)
    np.testing.assert_array_equal(best_permutation(GADGET_HAT, GADGET_STAR, "mean"), [0, 1])
    np.testing.assert_array_equal(best_permutation(GADGET_HAT, GADGET_STAR, "max"), [1, 0])


def test_bottleneck_greedy_trap_k3():
    """On a line, truths 0, 10, 20 and estimates 9, 12, 25.  Greedy takes 9 -> 10 (cost 1),
    then 25 -> 20 (5) and is left with 12 -> 0 (12).  Optimal: 9 -> 0, 12 -> 10, 25 -> 20
    with max 9 and sum 16 (also the min-sum matching)."""
    theta_star = np.array([[0.0], [10.0], [20.0]])
    theta_hat = np.array([[9.0], [12.0], [25.0]])
    assert matched_max_distance(theta_hat, theta_star) == 9.0
    assert matched_mean_distance(theta_hat, theta_star) == pytest.approx(16.0 / 3.0)
    np.testing.assert_array_equal(best_permutation(theta_hat, theta_star, "max"), [0, 1, 2])


def _far_apart(*blocks):
    """Stack (hat, star) gadgets into one instance, each translated far from the others."""
    hats, stars = [], []
    for i, (hat, star) in enumerate(blocks):
        offset = np.zeros(2)
        offset[0] = 1000.0 * i
        hats.append(np.column_stack([hat, np.zeros((len(hat), 2 - hat.shape[1]))]) + offset)
        stars.append(np.column_stack([star, np.zeros((len(star), 2 - star.shape[1]))]) + offset)
    return np.concatenate(hats), np.concatenate(stars)


def test_bottleneck_larger_k_with_expected_values():
    """k = 5: the planar gadget, scaled by 10 (bottleneck 40 via the swap, min-sum via the
    identity with max sqrt(3200) = 56.57), next to the greedy trap.  Expected max 40."""
    trap_hat, trap_star = np.array([[9.0], [12.0], [25.0]]), np.array([[0.0], [10.0], [20.0]])
    theta_hat, theta_star = _far_apart((10 * GADGET_HAT, 10 * GADGET_STAR), (trap_hat, trap_star))
    assert matched_max_distance(theta_hat, theta_star) == pytest.approx(40.0)
    assert matched_mean_distance(theta_hat, theta_star) == pytest.approx(
        (math.sqrt(3200.0) + 16.0) / 5
    )
    np.testing.assert_array_equal(best_permutation(theta_hat, theta_star, "max"), [1, 0, 2, 3, 4])
    np.testing.assert_array_equal(best_permutation(theta_hat, theta_star, "mean"), [0, 1, 2, 3, 4])


def test_bottleneck_tie_break_prefers_smallest_sum():
    """Gadget scaled by 1/10 (its bottleneck 0.4) next to the trap (bottleneck 9): the overall
    bottleneck is 9 whichever way the gadget is matched, and the documented tie-break picks
    the gadget's min-sum matching (identity)."""
    trap_hat, trap_star = np.array([[9.0], [12.0], [25.0]]), np.array([[0.0], [10.0], [20.0]])
    theta_hat, theta_star = _far_apart((GADGET_HAT / 10, GADGET_STAR / 10), (trap_hat, trap_star))
    assert matched_max_distance(theta_hat, theta_star) == 9.0
    np.testing.assert_array_equal(best_permutation(theta_hat, theta_star, "max"), [0, 1, 2, 3, 4])


def test_all_distances_tied():
    """Both estimates at the midpoint of the two truths: every matching costs 1."""
    theta_star = np.array([[-1.0, 0.0], [1.0, 0.0]])
    theta_hat = np.zeros((2, 2))
    assert matched_mean_distance(theta_hat, theta_star) == 1.0
    assert matched_max_distance(theta_hat, theta_star) == 1.0
    for objective in ("mean", "max"):
        assert sorted(best_permutation(theta_hat, theta_star, objective)) == [0, 1]


# --------------------------------------------------------------------------------------------
# Collapse, nearest-truth with k_hat != k
# --------------------------------------------------------------------------------------------


def test_collapse_is_invisible_to_nearest_truth_only():
    theta_star = np.array([[0.0, 0.0], [2.0, 0.0]])
    collapsed = np.array([[0.0, 0.0], [0.0, 0.0]])
    assert nearest_truth_distance(collapsed, theta_star) == 0.0
    assert matched_mean_distance(collapsed, theta_star) == 1.0
    assert matched_max_distance(collapsed, theta_star) == 2.0


def test_nearest_truth_with_different_number_of_estimates():
    theta_star = np.array([[0.0], [10.0]])
    theta_hat = np.array([[[1.0], [9.0], [13.0]]])  # k_hat = 3
    np.testing.assert_allclose(nearest_truth_distance(theta_hat, theta_star), [(1 + 1 + 3) / 3])
    assert nearest_truth_distance(theta_hat[0, :1], theta_star) == 1.0  # k_hat = 1


# --------------------------------------------------------------------------------------------
# Non-finite replicas, dtypes, return types
# --------------------------------------------------------------------------------------------


def test_non_finite_replica_gives_nan_and_leaves_others_alone():
    rng = np.random.default_rng(2)
    theta_star = rng.normal(size=(3, 50))
    theta_hat = theta_star[None] + 0.1 * rng.normal(size=(6, 3, 50))
    theta_hat[1, 2, 7] = np.nan
    theta_hat[2, 0, 0] = np.inf
    theta_hat[3, 1, 3] = -np.inf
    theta_hat[4] = 1e308  # finite, but every distance (~7e308) overflows float64
    theta_hat[5] = 1e306  # finite and huge, distances ~7e306 are representable
    bad = [1, 2, 3, 4]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dist = pairwise_distances(theta_hat, theta_star)
        results = {
            metric: metric(theta_hat, theta_star)
            for metric in (matched_mean_distance, matched_max_distance, nearest_truth_distance)
        }
        perms = {obj: best_permutation(theta_hat, theta_star, obj) for obj in ("mean", "max")}
    assert np.all(np.isnan(dist[1:4])) and np.all(np.isinf(dist[4]))
    assert np.all(dist[5] > 1e306) and np.all(np.isfinite(dist[5]))
    for metric, values in results.items():
        assert np.all(np.isnan(values[bad]))
        assert 1e306 < values[5] < np.inf
        assert not np.any(values[bad] < 1e300)  # can never pass a success threshold
        assert values[0] == metric(theta_hat[0], theta_star)
        assert np.isfinite(values[0])
    for perm in perms.values():
        assert np.all(perm[bad] == -1)
        assert sorted(perm[0]) == [0, 1, 2]
    single = theta_hat[1]
    assert np.isnan(matched_max_distance(single, theta_star))
    assert np.all(best_permutation(single, theta_star) == -1)


def test_float32_input_is_computed_in_float64():
    rng = np.random.default_rng(3)
    theta_star = rng.normal(size=(4, 20)).astype(np.float32)
    theta_hat = (theta_star + 0.01 * rng.normal(size=(6, 4, 20))).astype(np.float32)
    for metric in (matched_mean_distance, matched_max_distance, nearest_truth_distance):
        got = metric(theta_hat, theta_star)
        assert got.dtype == np.float64
        np.testing.assert_array_equal(
            got, metric(theta_hat.astype(np.float64), theta_star.astype(np.float64))
        )
    assert pairwise_distances(theta_hat, theta_star).dtype == np.float64


def test_return_shapes_and_types():
    rng = np.random.default_rng(4)
    theta_star = rng.normal(size=(3, 4))
    theta_hat = rng.normal(size=(7, 3, 4))
    for metric in (matched_mean_distance, matched_max_distance, nearest_truth_distance):
        assert metric(theta_hat, theta_star).shape == (7,)
        scalar = metric(theta_hat[0], theta_star)
        assert np.ndim(scalar) == 0 and isinstance(scalar, float)
    assert best_permutation(theta_hat, theta_star).shape == (7, 3)
    assert best_permutation(theta_hat[0], theta_star).shape == (3,)
    assert matched_mean_distance(np.empty((0, 3, 4)), theta_star).shape == (0,)
    # integer input is accepted and converted
    assert matched_max_distance([[0, 0], [3, 4]], [[3, 4], [0, 0]]) == 0.0


# --------------------------------------------------------------------------------------------
# misclustering_rate
# --------------------------------------------------------------------------------------------


def test_misclustering_basic_cases():
    labels = np.array([0, 0, 1, 1, 2, 2])
    assert misclustering_rate([2, 2, 0, 0, 1, 1], labels, 3) == 0.0  # perfect up to relabelling
    assert misclustering_rate([2, 2, 0, 1, 1, 1], labels, 3) == pytest.approx(1 / 6)
    assert misclustering_rate([2, 2, 0, 0, 1, -1], labels, 3) == pytest.approx(1 / 6)
    assert misclustering_rate([-1] * 6, labels, 3) == 1.0
    batch = misclustering_rate([[0, 0, 1, 1, 2, 2], [0, 0, 1, -1, 2, 2]], labels, 3)
    assert batch.shape == (2,)
    np.testing.assert_allclose(batch, [0.0, 1 / 6])
    # -1 is wrong even when it would be the best "label" of a whole cluster
    assert misclustering_rate([-1, -1, 1, 1], [0, 0, 1, 1], 2) == 0.5


def test_misclustering_agrees_with_brute_force():
    rng = np.random.default_rng(5)
    for k in (1, 2, 3, 4):
        labels = rng.integers(0, k, size=15)
        assignments = rng.integers(-1, k, size=(10, 15))
        rate = misclustering_rate(assignments, labels, k)
        for b in range(10):
            best = max(
                sum(a >= 0 and relabel[a] == z for a, z in zip(assignments[b], labels))
                for relabel in itertools.permutations(range(k))
            )
            assert rate[b] == pytest.approx(1 - best / 15)


# --------------------------------------------------------------------------------------------
# oracle_ls_floor
# --------------------------------------------------------------------------------------------


def test_oracle_floor_values():
    floor = oracle_ls_floor(0.1, 1000, [5000, 1002, 1001, 1000, 0])
    assert floor.shape == (5,) and floor.dtype == np.float64
    assert floor[0] == pytest.approx(0.1 * math.sqrt(1000 / 3999), rel=1e-15)
    assert floor[1] == pytest.approx(0.1 * math.sqrt(1000.0))
    assert np.all(np.isinf(floor[2:]))
    # sigma = 0 (our documented choice): exact recovery once N_l >= d
    np.testing.assert_array_equal(oracle_ls_floor(0.0, 10, [100, 11, 10, 9]), [0, 0, 0, np.inf])


def test_oracle_floor_monte_carlo():
    """RMS error of known-label least squares over fixed-seed fits matches the Wishart formula
    sigma * sqrt(d / (N - d - 1)) within 10%."""
    rng = np.random.default_rng(6)
    sigma, d, n, fits = 0.5, 5, 40, 2000
    theta = rng.normal(size=d)
    x = rng.normal(size=(fits, n, d))
    y = x @ theta + sigma * rng.normal(size=(fits, n))
    xtx = np.einsum("fni,fnj->fij", x, x)
    xty = np.einsum("fni,fn->fi", x, y)
    estimates = np.linalg.solve(xtx, xty[..., None])[..., 0]
    rms = math.sqrt(np.mean(np.sum((estimates - theta) ** 2, axis=1)))
    assert rms == pytest.approx(oracle_ls_floor(sigma, d, [n])[0], rel=0.1)


def test_oracle_floor_with_a_covariance_uses_the_trace_of_its_inverse():
    """sigma sqrt(tr(Sigma_l^-1) / (N_l - d - 1)) per cluster: the AR(1) inverse's closed-form trace
    (d + (d - 2) rho^2) / (1 - rho^2), a diagonal matrix's sum of 1 / Sigma_ii; the identity gives
    the default floor.  (A Monte Carlo check is in tests/theory/test_theory_ls_oracle.py.)"""
    d, rho = 5, 0.5
    ar1 = rho ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
    diagonal = np.diag([0.5, 1.0, 2.0, 4.0, 8.0])
    floor = oracle_ls_floor(0.3, d, [40, 20, 6], covariance=np.stack([ar1, diagonal, ar1]))
    assert floor[0] == pytest.approx(0.3 * math.sqrt((d + (d - 2) * rho ** 2) / (1 - rho ** 2) / 34), rel=1e-12)
    assert floor[1] == pytest.approx(0.3 * math.sqrt((2 + 1 + 0.5 + 0.25 + 0.125) / 14), rel=1e-12)
    assert floor[2] == np.inf
    np.testing.assert_allclose(oracle_ls_floor(0.3, d, [40, 20], covariance=np.eye(d)),
                               oracle_ls_floor(0.3, d, [40, 20]), rtol=1e-14)
    np.testing.assert_array_equal(oracle_ls_floor(0.0, d, [40, 4], covariance=ar1), [0.0, np.inf])
    with pytest.raises(ValueError, match=r"^covariance must be positive definite"):
        oracle_ls_floor(0.3, d, [40], covariance=-ar1)
    with pytest.raises(ValueError, match=r"^covariance must have shape \(d, d\) = \(5, 5\) or \(k, d, d\) = \(2, 5"):
        oracle_ls_floor(0.3, d, [40, 40], covariance=np.stack([ar1] * 3))


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------

STAR = np.zeros((2, 3))
HAT = np.zeros((4, 2, 3))
MATCHED = (matched_mean_distance, matched_max_distance, best_permutation)
ALL_DISTANCES = MATCHED + (nearest_truth_distance, pairwise_distances)


@pytest.mark.parametrize("function", ALL_DISTANCES)
@pytest.mark.parametrize(
    "theta_hat, theta_star, message",
    [
        (HAT, np.zeros(3), r"theta_star must have shape \(k, d\)"),
        (HAT, np.zeros((0, 3)), r"theta_star must have shape \(k, d\)"),
        (HAT, np.zeros((2, 3, 1)), r"theta_star must have shape \(k, d\)"),
        (HAT, np.array([[0.0, np.nan, 0.0], [0.0, 0.0, 0.0]]), r"theta_star must contain only"),
        (np.zeros(3), STAR, r"theta_hat must have shape \(B, k, d\) or \(k, d\)"),
        (np.zeros((1, 4, 2, 3)), STAR, r"theta_hat must have shape \(B, k, d\) or \(k, d\)"),
        (np.zeros((4, 2, 5)), STAR, r"theta_hat must have d = 3"),
        (HAT + 0j, STAR, r"theta_hat must be a real-valued array"),
        (HAT, [["a", "b", "c"]] * 2, r"theta_star must be a real-valued array"),
        ([[0.0, 1.0], [2.0]], STAR, r"theta_hat must be a rectangular"),
    ],
)
def test_bad_parameter_arrays(function, theta_hat, theta_star, message):
    with pytest.raises(ValueError, match=message):
        function(theta_hat, theta_star)


@pytest.mark.parametrize("function", MATCHED)
def test_matched_distances_need_the_same_k(function):
    with pytest.raises(ValueError, match=r"theta_hat must have k = 2 estimates"):
        function(np.zeros((4, 3, 3)), STAR)


def test_bad_objective():
    with pytest.raises(ValueError, match=r"objective must be one of 'mean', 'max'; got 'sum'"):
        best_permutation(HAT, STAR, objective="sum")


@pytest.mark.parametrize(
    "assignments, labels, k, message",
    [
        ([0, 1], [0, 2], 2, r"labels must take values in \[0, k\) = \[0, 2\), got .*\[0, 2\]"),
        ([0, 1], [-1, 1], 2, r"labels must take values in \[0, k\)"),
        ([0, 2], [0, 1], 2, r"assignments must take values in \[0, k\) = \[0, 2\) or -1"),
        ([0, -2], [0, 1], 2, r"assignments must take values in"),
        ([0, 1, 1], [0, 1], 2, r"assignments must have shape \(B, m\) or \(m,\) with m = 2"),
        ([[[0, 1]]], [0, 1], 2, r"assignments must have shape"),
        ([0, 1], [[0, 1]], 2, r"labels must have shape \(m,\)"),
        ([0.0, 1.0], [0, 1], 2, r"assignments must be an integer array"),
        ([0, 1], [0.0, 1.0], 2, r"labels must be an integer array"),
        ([0, 0], [0, 0], 0, r"k must be in \[1, inf\), got 0"),
    ],
)
def test_bad_clustering_input(assignments, labels, k, message):
    with pytest.raises(ValueError, match=message):
        misclustering_rate(assignments, labels, k)


@pytest.mark.parametrize(
    "sigma, d, sizes, message",
    [
        (-0.1, 10, [100], r"sigma must be in \[0.0, inf\), got -0.1"),
        (np.inf, 10, [100], r"sigma must be finite"),
        (0.1, 0, [100], r"d must be in \[1, inf\), got 0"),
        (0.1, 10, [100, -1], r"cluster_sizes must be >= 0"),
        (0.1, 10, [], r"cluster_sizes must have shape \(k,\) with k >= 1"),
        (0.1, 10, [100.0], r"cluster_sizes must be an integer array"),
    ],
)
def test_bad_floor_input(sigma, d, sizes, message):
    with pytest.raises(ValueError, match=message):
        oracle_ls_floor(sigma, d, sizes)
