"""The trial of the nu-terms experiment on tiny cells: designed sizes, what each sweep holds fixed,
the trial's record, and the theory helpers it is compared with (:mod:`mixreg.theory._sxy_nu`)."""

import numpy as np
import pytest

from experiments import two_phase_nu
from experiments.two_phase_nu.trial import (
    DESIGN_KEYS,
    NuTrialSpec,
    SizeDesign,
    design_quantities,
    nu_problem,
    two_phase_nu_trial,
)
from mixreg.theory import leave_group_out_constant, sxy_axis_exponent, sxy_bound_shape, sxy_nu_terms

# a small version of the experiment: every sweep has two or three cells of at most 240 clients
TINY = dict(k=3, d=4, sigma=1.0, separation=2.0, M_ref=60, n_ref=8, p_ref=0.2, tiny_fractions=(0.0, 0.5),
            chi2s=(0.0, 0.5), Ms_fixed_n=(30, 120), Ms_fixed_N=(60, 120, 240), N_fixed=960, p_mins=(0.1, 0.3),
            trials=1, anchor_points=30, fx_rounds=60)


@pytest.fixture(scope="module")
def config():
    return two_phase_nu.Config(preset="quick", **TINY).validate()


@pytest.fixture(scope="module")
def sweeps(config):
    """``{sweep: [(design, record), ...]}``: one trial of every cell of every sweep."""
    cells = {two_phase_nu.design_key(spec.design): spec for spec in two_phase_nu.cells_of(config)}
    out = {}
    for axis, designs in two_phase_nu.axis_designs(config).items():
        out[axis] = [(d, two_phase_nu_trial(cells[two_phase_nu.design_key(d)], np.random.SeedSequence(7))) for d in designs]
    return out


# ------------------------------------------------------------------------------------ designs


def test_design_is_exact():
    design = SizeDesign(M=100, N=800, k=2, p_min=0.3, tiny_fraction=0.5, anchor_points=20)
    labels, sizes = design.labels_and_sizes()
    assert labels.shape == sizes.shape == (102,)
    assert sizes.sum() == 800 + 2 * 20 and sizes.min() >= 1
    np.testing.assert_array_equal(labels[:2], [0, 1])  # the anchors come first
    np.testing.assert_array_equal(sizes[:2], [20, 20])
    np.testing.assert_array_equal(np.bincount(labels[2:]), design.cluster_counts)
    np.testing.assert_array_equal(design.cluster_counts, [30, 70])
    np.testing.assert_array_equal(np.bincount(labels[2:], weights=sizes[2:]), design.cluster_data)
    np.testing.assert_array_equal(design.cluster_data, [240, 560])  # the same mean size in every cluster
    np.testing.assert_array_equal(design.tiny_counts, [15, 35])
    assert (sizes[2:] == 1).sum() == 50
    # equal sizes: exactly n everywhere
    equal = SizeDesign(M=90, N=720, k=3, p_min=0.2, anchor_points=10)
    assert set(equal.labels_and_sizes()[1][3:].tolist()) == {8}


def test_design_chi2_target_and_fixed_small_clients():
    low = 7
    for target in (0.5, 1.0, 2.0):
        design = SizeDesign(M=3000, N=24000, k=3, p_min=0.2, chi2_target=target, n_low=low, anchor_points=10)
        for l in range(3):
            s = design.cluster_sizes(l)
            assert s.sum() == design.cluster_data[l] and s.size == design.cluster_counts[l]
            assert set(s.tolist()) - {low} and s.min() == low  # clients of n_low, and a few big ones
            chi2 = s.size * np.dot(s, s) / s.sum() ** 2 - 1
            assert chi2 == pytest.approx(target, rel=0.25)


@pytest.mark.parametrize("change,message", [
    (dict(tiny_fraction=0.99, N=120), "tiny clients"),
    (dict(chi2_target=1.0, n_low=8), "n_low=8 must be below the bulk mean"),
    (dict(p_min=0.5), "p_min must be in"),
    (dict(M=4), "M must be"),
    (dict(anchor_points=1), "anchor_points"),
    (dict(N=59), "N must be at least M"),
    (dict(k=1), "k must be an integer >= 2"),
    (dict(tiny_fraction=1.0), "tiny_fraction must be finite and in"),
])
def test_design_validation(change, message):
    with pytest.raises(ValueError, match=message):
        SizeDesign(**{**dict(M=60, N=480, k=3, p_min=0.2, anchor_points=10), **change})


def test_design_round_trips_through_a_cell():
    design = SizeDesign(M=60, N=480, k=3, p_min=0.2, chi2_target=0.5, n_low=7, anchor_points=10)
    cell = dict(design.to_cell(), d=4)
    assert tuple(design.to_cell()) == DESIGN_KEYS
    assert SizeDesign.from_cell(cell) == design
    with pytest.raises(ValueError, match="design key"):
        SizeDesign.from_cell({"M": 60})


def test_problem_has_the_design_and_its_anchors():
    design = SizeDesign(M=60, N=480, k=3, p_min=0.2, tiny_fraction=0.3, anchor_points=25)
    pb, anchors = nu_problem(design, d=4, sigma=0.5, separation=2.0, cov_low=1.0, cov_high=1.0,
                             rng=np.random.default_rng(0))
    labels, sizes = design.labels_and_sizes()
    assert pb.m == labels.size and pb.N == sizes.sum() and pb.covariances is None
    np.testing.assert_array_equal(np.sort(pb.sizes), np.sort(sizes))
    np.testing.assert_array_equal(pb.labels[anchors], np.arange(3))
    np.testing.assert_array_equal(pb.sizes[anchors], [25, 25, 25])
    assert pb.separation == pytest.approx(2.0)


# ------------------------------------------------------------------------------------ sweeps


def test_the_sweeps_hold_fixed_what_they_claim(config, sweeps):
    """Each sweep moves one term of nu; the realised values of the problems drawn say so."""
    def realised(axis, key):
        return [rec[key] for _, rec in sweeps[axis]]

    k, A = config.k, config.anchor_points
    N_ref = config.M_ref * config.n_ref + k * A
    # small-client term: N and M fixed, nu1 grows with the tiny clients
    assert set(realised("tiny", "N_total")) == {N_ref} and set(realised("tiny", "M_total")) == {config.M_ref + k}
    assert np.all(np.diff(realised("tiny", "nu1")) > 0)
    # chi2: N and M fixed, chi2 grows, nu1 stays tiny next to nu2 (no client below n_low = n_ref - 1)
    assert set(realised("chi2", "N_total")) == {N_ref} and set(realised("chi2", "M_total")) == {config.M_ref + k}
    assert np.all(np.diff(realised("chi2", "chi2")) > 0)
    assert max(realised("chi2", "nu1")) < 0.05 * min(realised("chi2", "nu2"))
    # M at fixed n_i: every ordinary client has n_ref points, N grows with M
    for design, rec in sweeps["M_fixed_n"]:
        assert set(design.labels_and_sizes()[1][k:].tolist()) == {config.n_ref}
        assert rec["N_total"] == design.M * config.n_ref + k * A
    # M at fixed N: N fixed, M grows, sizes N/M
    assert set(realised("M_fixed_N", "N_total")) == {config.N_fixed + k * A}
    assert realised("M_fixed_N", "M_total") == [M + k for M in config.Ms_fixed_N]
    # p_min at fixed nu: the same sizes, so the same N, M, chi2 and nu; p_min grows
    for key in ("N_total", "M_total", "chi2", "nu1", "nu2", "nu"):
        assert len(set(realised("p_min", key))) == 1, key
    assert np.all(np.diff(realised("p_min", "p_min_realised")) > 0)


def test_realised_values_are_the_ones_computed_in_advance(config, sweeps):
    for axis, pairs in sweeps.items():
        for design, rec in pairs:
            q = design_quantities(design, d=config.d, sigma=config.sigma)
            for key in ("M_total", "N_total", "N_min", "p_min_realised", "chi2", "nu1", "nu2", "nu"):
                assert rec[key] == pytest.approx(q[key], rel=1e-12), (axis, key)
            labels, sizes = design.labels_and_sizes()
            assert (q["nu1"], q["nu2"]) == pytest.approx(sxy_nu_terms(sizes, config.d, config.k))


def test_trial_record(config, sweeps):
    design, rec = sweeps["tiny"][0]
    assert all(isinstance(v, (bool, int, float, str, np.integer, np.floating, np.bool_)) for v in rec.values())
    for m in ("fedavg", "fedprox"):
        assert np.isfinite(rec[f"{m}_final"]) and rec[f"{m}_final"] > 0
        assert 0 <= rec[f"{m}_misclustered_data"] <= 1
        assert 1 <= rec[f"{m}_rounds"] <= config.fx_rounds and not rec[f"{m}_diverged"]
    assert rec["ls_err"] > 0 and rec["fmd_err"] > 0
    spec = next(c for c in two_phase_nu.cells_of(config) if c.design == design)
    assert NuTrialSpec.from_cell(spec.to_cell()) == spec  # the engine's cell gives the spec back
    again = two_phase_nu_trial(spec, np.random.SeedSequence(7))
    assert {k: v for k, v in again.items() if not k.endswith("_time")} == \
        {k: v for k, v in rec.items() if not k.endswith("_time")}


# ------------------------------------------------------------------------------------ theory helpers


def test_axis_exponent_of_the_bound():
    M = np.array([500.0, 1000, 2000, 4000])
    assert sxy_axis_exponent(M, np.sqrt(30 / M), np.full(4, 0.2)) == pytest.approx(-0.5)
    # p_min at fixed nu: exactly -1; with the log factor too (nu is fixed)
    p = np.array([0.05, 0.1, 0.2])
    assert sxy_axis_exponent(p, [0.2] * 3, p) == pytest.approx(-1.0)
    assert sxy_axis_exponent(p, [0.2] * 3, p, log_factor=True) == pytest.approx(-1.0)
    # a log-slope on a linear axis: nu = exp(0.7 x)
    x = np.array([0.0, 0.2, 0.4])
    assert sxy_axis_exponent(x, 0.1 * np.exp(0.7 * x), [0.2] * 3, log_x=False) == pytest.approx(0.7)
    # the log factor flattens the exponent where nu is not small: 1 - 1/log(1/nu) locally
    nu = 0.2 * (M / 500) ** -0.5
    with_log = sxy_axis_exponent(M, nu, [0.2] * 4, log_factor=True)
    assert -0.5 < with_log < -0.1
    assert np.isnan(sxy_axis_exponent([1.0, 1.0], [0.1, 0.2], [0.2, 0.2]))
    assert np.isnan(sxy_bound_shape([1.5], [0.2], log_factor=True)[0])
    with pytest.raises(ValueError, match="x must be > 0"):
        sxy_axis_exponent([0.0, 1.0], [0.1, 0.2], [0.2, 0.2])
    with pytest.raises(ValueError, match="p_min"):
        sxy_bound_shape([0.1], [0.0])


def test_leave_group_out_constant_never_sees_the_group():
    reference = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    observed = np.array([2.0, 2.0, 2.0, 8.0, 8.0])  # the last group sits 4x above the others
    member = np.array([[1, 1, 0, 0, 0], [0, 1, 1, 0, 0], [0, 0, 0, 1, 1]], dtype=bool)  # cell 1 in two groups
    C, residual = leave_group_out_constant(observed, reference, member)
    assert C[2] == pytest.approx(2.0)  # fitted on cells 0-2 only
    np.testing.assert_allclose(residual[2, 3:], [4.0, 4.0])  # the miss is shown, not absorbed
    assert C[0] == pytest.approx(np.exp(np.mean(np.log([2.0, 8.0, 8.0]))))  # cells 2, 3, 4
    assert np.isnan(residual[0, 2:]).all() and np.isfinite(residual[0, :2]).all()
    C, _ = leave_group_out_constant([1.0, 2.0], [1.0, 1.0], [[True, True]])
    assert np.isnan(C[0])  # nothing left to fit on
