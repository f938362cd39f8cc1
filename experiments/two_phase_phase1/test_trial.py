"""The Phase-1 trial function and its helpers (:mod:`.trial`), on tiny cells."""

import numpy as np
import pytest

from experiments.two_phase_phase1.summary import nA_needed, rounds_needed
from experiments.two_phase_phase1.trial import (
    Phase1Spec,
    anchor_least_squares,
    anchor_prefix,
    stays_below_from,
    c_label,
    clients_for,
    far_init,
    nested_problem,
    phase1_trial,
)
from mixreg.algorithms.moment_descent import moment_descent
from mixreg.problems import Problem, ProblemSpec


def tiny_cell(**change):
    cell = dict(m=0, k=2, d=6, sigma=0.1, separation=1.0, p_min=0.5, anchor_mode="per_cluster", n_anchors=0,
                n_A=8, cs=(4.0, 8.0), far=5.0, fmd_rounds=4, fmd_step_constant=0.8, fmd_sampling="reuse")
    cell.update(change)
    if not change.get("m"):
        n_anchors = cell["k"] if cell["anchor_mode"] == "per_cluster" else cell["n_anchors"]
        cell["m"] = clients_for(max(cell["cs"]), cell["d"], cell["p_min"]) + n_anchors
    return Phase1Spec.from_cell(cell)


def test_grid_units():
    assert clients_for(16, 8, 0.25) == 2048
    assert clients_for(16, 24, 1 / 3) == 3456  # exact products are not rounded up by float error
    assert clients_for(1, 6, 0.2) == 150
    assert c_label(16.0) == "c16" and c_label(2.5) == "c2.5"


def test_far_init_is_far_from_every_truth_and_outside_their_span():
    """||theta_0 - theta*_l||^2 = far^2 + ||theta*_l - mean||^2 exactly, for every l."""
    rng = np.random.default_rng(3)
    star = rng.standard_normal((3, 7))
    t0 = far_init(star, 5.0, np.random.default_rng(0))
    centre = star.mean(axis=0)
    np.testing.assert_allclose(np.linalg.norm(t0 - star, axis=1) ** 2,
                               25.0 + np.linalg.norm(star - centre, axis=1) ** 2, rtol=1e-12)
    np.testing.assert_allclose((star - centre) @ (t0 - centre), 0.0, atol=1e-12)
    np.testing.assert_array_equal(t0, far_init(star, 5.0, np.random.default_rng(0)))  # seeded
    assert not np.allclose(t0, far_init(star, 5.0, np.random.default_rng(1)))
    np.testing.assert_allclose(far_init(star, 0.0, np.random.default_rng(0)), centre)
    with pytest.raises(ValueError, match="d >= k"):
        far_init(np.eye(3)[:, :2], 1.0, rng)


def test_nested_problem_keeps_anchors_and_a_prefix_of_the_other_clients():
    spec = ProblemSpec(m=40, k=2, d=3, sigma=0.1, scale=1.0, protocol="gaussian", n=2, p_min=0.5,
                       anchor_mode="random", n_anchors=3, anchor_points=10)
    rng = np.random.default_rng(0)
    pb, anchors = spec.with_anchors(spec.generate(rng), rng)
    sub, sub_anchors = nested_problem(pb, anchors, 5)
    assert sub.m == 8 and sub.d == 3
    for a, b in zip(anchors, sub_anchors):  # the anchors' data, in the same order
        np.testing.assert_array_equal(sub.client(int(b))[0], pb.client(int(a))[0])
        assert sub.labels[b] == pb.labels[a] and sub.sizes[b] == 10
    others = np.setdiff1d(np.arange(pb.m), anchors)[:5]
    sub_others = np.setdiff1d(np.arange(sub.m), sub_anchors)
    for i, j in zip(others, sub_others):
        np.testing.assert_array_equal(sub.client(int(j))[1], pb.client(int(i))[1])
    bigger, _ = nested_problem(pb, anchors, 9)  # nested: the 5-client problem's rows are in the 9-client one
    assert set(map(tuple, sub.X)) <= set(map(tuple, bigger.X))
    with pytest.raises(ValueError, match="M must be in"):
        nested_problem(pb, anchors, pb.m)


def test_anchor_least_squares_exact_when_overdetermined_and_min_norm_otherwise():
    rng = np.random.default_rng(1)
    d = 6
    star = rng.standard_normal((2, d))
    X = rng.standard_normal((14, d))
    labels = np.array([0, 1])
    y = np.concatenate([X[:10] @ star[0], X[10:] @ star[1]])  # noiseless: 10 >= d points, then 4 < d
    pb = Problem.from_arrays(X, y, [10, 4], labels, star, sigma=0.0)
    est = anchor_least_squares(pb, np.array([0, 1]))
    np.testing.assert_allclose(est[0], star[0], atol=1e-10)
    Xa = X[10:]
    row_space = np.linalg.pinv(Xa) @ Xa  # projection onto the row space of the small anchor
    np.testing.assert_allclose(est[1], row_space @ star[1], atol=1e-10)
    # its error is exactly the truth's component outside the 4-dimensional row space
    assert np.linalg.norm(est[1] - star[1]) == pytest.approx(np.linalg.norm(star[1] - row_space @ star[1]))


def test_trial_is_deterministic_and_reports_every_grid_value():
    cell = tiny_cell()
    rec = phase1_trial(cell, np.random.SeedSequence(5))
    again = phase1_trial(cell, np.random.SeedSequence(5))
    assert {k: v for k, v in rec.items() if "time" not in k} == {k: v for k, v in again.items() if "time" not in k}
    other = phase1_trial(cell, np.random.SeedSequence(6))
    assert other["fmd_err_c8"] != rec["fmd_err_c8"]
    assert all(isinstance(v, (bool, int, float, str, np.integer, np.floating)) for v in rec.values())
    for c, M in ((4.0, 96), (8.0, 192)):  # M = c d / p_min^2
        tag = c_label(c)
        assert rec[f"M_{tag}"] == M
        assert np.isfinite(rec[f"fmd_err_{tag}"]) and rec[f"anchor_err_max_{tag}"] >= rec[f"anchor_err_med_{tag}"]
        assert rec[f"fmd_method_{tag}"] == "threshold"  # one anchor per cluster: step 7 is the identity
    assert rec["anchor_clusters"] == 2  # per_cluster anchors cover every cluster by construction
    assert rec["ls_anchor_err_max"] >= rec["ls_anchor_err_med"] > 0


def test_far_start_really_is_far():
    for far in (3.0, 6.0):
        rec = phase1_trial(tiny_cell(far=far, cs=(4.0,)), np.random.SeedSequence(2))
        assert rec["init_distance"] >= far  # min over clusters, in units of the separation
        assert rec["init_distance"] < far + 2.0
    rec = phase1_trial(tiny_cell(far=5.0, cs=(4.0,), fmd_rounds=1, fmd_step_constant=1e-9), np.random.SeedSequence(2))
    assert rec["fmd_err_c4"] >= 5.0  # a negligible step leaves the output at the start


def test_random_anchors_are_drawn_without_the_labels():
    """The random anchors are the same clients whatever the labels, and need not cover the clusters."""
    spec = ProblemSpec(m=60, k=3, d=5, sigma=0.1, scale=1.0, protocol="gaussian", n=2, p_min=1 / 3,
                       anchor_mode="random", n_anchors=3, anchor_points=6)
    pb = spec.generate(np.random.default_rng(0))
    relabelled = Problem.from_arrays(pb.X, pb.y, pb.offsets, np.random.default_rng(1).permutation(pb.labels),
                                     pb.theta_star, sigma=pb.sigma)
    _, a1 = spec.with_anchors(pb, np.random.default_rng(7))
    _, a2 = spec.with_anchors(relabelled, np.random.default_rng(7))
    np.testing.assert_array_equal(a1, a2)
    # three random anchors among three balanced clusters miss one with probability 7/9
    covered = [phase1_trial(tiny_cell(k=3, p_min=1 / 3, anchor_mode="random", n_anchors=3, cs=(4.0,), fmd_rounds=2),
                            np.random.SeedSequence(s))["anchor_clusters"] for s in range(8)]
    assert min(covered) < 3 and max(covered) <= 3


def test_spec_rejects_a_bad_grid():
    """The cell is refused when it is made (before any trial runs), naming the field."""
    with pytest.raises(ValueError, match="cs must be increasing"):
        tiny_cell(cs=(8.0, 4.0), m=300)
    with pytest.raises(ValueError, match="cs must be distinct"):
        tiny_cell(cs=(4.0, 4.0), m=300)
    with pytest.raises(ValueError, match="cannot hold"):
        tiny_cell(m=50)


def rates_cell(**change):
    """A part-(c) cell: one anchor per cluster of 32 points, cut to each n_A of the grid."""
    cell = dict(k=2, d=6, sigma=0.1, separation=1.0, p_min=0.5, anchor_mode="per_cluster", n_anchors=0, n_A=32,
                cs=(16.0,), far=5.0, fmd_rounds=12, fmd_step_constant=0.8, fmd_sampling="reuse", part="c",
                nA_grid=(4, 8, 32))
    cell.update(change)
    cell["m"] = clients_for(cell["cs"][0], cell["d"], cell["p_min"]) + cell["k"]
    return Phase1Spec.from_cell(cell)


def test_stays_below_from_is_the_round_after_the_last_one_above():
    assert stays_below_from([5.0, 2.0, 0.4, 0.6, 0.3, 0.2], 0.5) == 4.0
    assert stays_below_from([0.1, 0.2], 0.5) == 0.0
    assert np.isnan(stays_below_from([5.0, 0.4, 0.6], 0.5))
    assert np.isnan(stays_below_from([5.0, 0.4, np.nan], 0.5))  # a lost final value counts as above


def test_anchor_prefix_cuts_only_the_anchors_and_is_nested():
    spec = ProblemSpec(m=30, k=2, d=3, sigma=0.1, scale=1.0, protocol="gaussian", n=2, p_min=0.5,
                       anchor_mode="per_cluster", n_anchors=0, anchor_points=20)
    rng = np.random.default_rng(0)
    pb, anchors = spec.with_anchors(spec.generate(rng), rng)
    small, large = anchor_prefix(pb, anchors, 6), anchor_prefix(pb, anchors, 12)
    assert (small.sizes[anchors] == 6).all() and small.m == pb.m
    others = np.setdiff1d(np.arange(pb.m), anchors)
    np.testing.assert_array_equal(small.sizes[others], pb.sizes[others])
    for a in anchors:
        np.testing.assert_array_equal(small.client(int(a))[0], pb.client(int(a))[0][:6])
        np.testing.assert_array_equal(large.client(int(a))[0][:6], small.client(int(a))[0])  # nested
    np.testing.assert_array_equal(small.labels, pb.labels)
    with pytest.raises(ValueError, match="n_A"):
        anchor_prefix(pb, anchors, 21)


def test_part_c_runs_phase1_with_all_clients_and_all_anchor_pairs():
    """Under reuse Phase 1 uses every non-anchor client each round (S_t = the M clients) and n_A // 2
    pairs of each anchor's n_A points: the n_A grid is what the anchors hold, M what the server pools."""
    cell = rates_cell()
    pb = cell.problem
    problem, anchors = pb.with_anchors(pb.generate(np.random.default_rng(1)), np.random.default_rng(2))
    sub, sub_anchors = nested_problem(problem, anchors, clients_for(16.0, 6, 0.5))
    for n_A in (4, 8, 32):
        res = moment_descent(anchor_prefix(sub, sub_anchors, n_A), sub_anchors, 2, rng=np.random.default_rng(0),
                             n_rounds=2, sampling="reuse", anchor_sampling="reuse")
        assert res.anchor_pairs == n_A // 2
        assert res.clients_per_round == clients_for(16.0, 6, 0.5)


def test_part_c_trial_records_every_nA_and_the_curve():
    cell = rates_cell()
    rec = phase1_trial(cell, np.random.SeedSequence(3))
    assert rec["M"] == clients_for(16.0, 6, 0.5)
    assert {f"err_nA{n}" for n in (4, 8, 32)} <= set(rec) and f"curve_t{cell.fmd_rounds:02d}" in rec
    assert rec["curve_t12"] == pytest.approx(rec["err_nA32"])  # the curve's last round is the output's error
    assert rec["curve_t00"] >= 5.0  # the far start
    with pytest.raises(ValueError, match="nA_grid"):
        rates_cell(nA_grid=(4, 8))  # must end at the anchors' size


def test_phase1_from_5_delta_reaches_constant_accuracy_in_few_rounds():
    """The Phase-1 theorem's shape on a tiny part-(c) cell: from 5 Delta away, with M = 16 d / p_min^2
    clients of two points and anchors of 32 points, the error ends below 2 Delta / 3 and below Delta/2
    within 10 rounds, in each of 4 seeds."""
    grid = (4, 8, 32)
    for seed in range(4):
        rec = phase1_trial(rates_cell(), np.random.SeedSequence(seed))
        assert rec["err_nA32"] < 2 / 3 * rec["separation_realised"], (seed, rec["err_nA32"])
        assert rounds_needed(rec, 12, 2) <= 10, (seed, [rec[f"curve_t{t:02d}"] for t in range(13)])
        assert nA_needed(rec, grid, 2) in (4.0, 8.0, 32.0)
