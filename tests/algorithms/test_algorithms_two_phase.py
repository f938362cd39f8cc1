"""The two-phase method as one call (:mod:`mixreg.algorithms.two_phase`): each phase is the driver
it composes, the options are checked before anything runs, and the registry entry's refusals and
communication follow its protocol."""

import numpy as np
import pytest

from mixreg.algorithms import ALGORITHMS, fedx, moment_descent, two_phase, unmet_precondition
from mixreg.algorithms.two_phase import TwoPhaseRun, two_phase_replicas
from mixreg.problems import ProblemSpec, make_problem

SPEC = ProblemSpec(m=300, k=2, d=4, sigma=0.2, scale=2.0, protocol="gaussian", n=6, anchor_mode="per_cluster",
                   anchor_points=80)
PHASE1 = dict(phase1_rounds=4, sampling="reuse", step_constant=0.5)


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(5)
    return SPEC.with_anchors(SPEC.generate(rng), rng)


def test_phase1_is_moment_descent_and_phase2_is_fedx_from_its_centres(problem):
    pb, anchors = problem
    steps = np.array([0.3, 1.0])
    res = two_phase(pb, anchors, 2, steps, rng=np.random.default_rng(8), **PHASE1, phase1_history=True,
                    local_solver="fedavg", local_steps=2, phase2_rounds=12, history=True)
    p1 = moment_descent(pb, anchors, 2, rng=np.random.default_rng(8), n_rounds=4, sampling="reuse",
                        step_constant=0.5, history=True)
    np.testing.assert_array_equal(res.phase1.centres, p1.centres)
    np.testing.assert_array_equal(res.phase1.history.theta, p1.history.theta)
    assert res.started and res.phase1.clustering.method == p1.clustering.method
    p2 = fedx(pb, np.repeat(p1.centres[None], 2, axis=0), steps, local_solver="fedavg", local_steps=2, n_rounds=12,
              history=True)
    np.testing.assert_array_equal(res.phase2.theta, p2.theta)
    np.testing.assert_array_equal(res.phase2.history.matched_max, p2.history.matched_max)
    assert res.phase2.local_steps == 2 and res.phase2.n_rounds == 12
    # Phase 2 moved: the method is not Phase 1 alone
    assert not np.array_equal(res.phase2.theta[0], p1.centres)


def test_phase2_from_a_given_phase1_equals_fedx_from_those_centres(problem):
    """``phase1=`` skips Phase 1: Phase 2 starts from its centres, here the truth's, and equals
    FedX from the true parameters (the rng is not needed)."""
    pb, anchors = problem
    p1 = moment_descent(pb, anchors, 2, rng=np.random.default_rng(1), n_rounds=2, sampling="reuse")
    truth = type(p1)(**{**p1.__dict__, "centres": pb.theta_star.copy()})
    res = two_phase(pb, anchors, 2, 4.0, phase1=truth, local_solver="fedprox", phase2_rounds=30, tol=1e-9)
    alone = fedx(pb, pb.theta_star, 4.0, local_solver="fedprox", n_rounds=30, tol=1e-9)
    np.testing.assert_array_equal(res.phase2.theta, alone.theta)
    np.testing.assert_array_equal(res.phase2.assignments, alone.assignments)
    assert res.phase2.stop_reason == alone.stop_reason and res.phase1 is truth
    # from the truth with (nearly) separated clusters, the decoder keeps the true labels
    assert (alone.assignments[0] == pb.labels).mean() > 0.9


def test_second_solver_reuses_phase1(problem):
    pb, anchors = problem
    first = two_phase(pb, anchors, 2, 0.5, rng=np.random.default_rng(3), **PHASE1, phase2_rounds=5)
    second = two_phase(pb, anchors, 2, 0.5, phase1=first.phase1, local_solver="fedprox", phase2_rounds=5)
    again = two_phase(pb, anchors, 2, 0.5, rng=np.random.default_rng(3), **PHASE1, local_solver="fedprox",
                      phase2_rounds=5)
    assert second.phase1 is first.phase1
    np.testing.assert_array_equal(second.phase2.theta, again.phase2.theta)


def test_phase1_failure_skips_or_raises(problem):
    pb, anchors = problem
    kwargs = dict(rng=np.random.default_rng(3), phase1_rounds=4, sampling="reuse", step_constant=1e8, phase2_rounds=5)
    res = two_phase(pb, anchors, 2, 0.5, **kwargs)
    assert res.phase1.clustering.method == "failed" and res.phase2 is None and not res.started
    kwargs["rng"] = np.random.default_rng(3)
    with pytest.raises(ValueError, match="Phase 1 gave no k=2 finite centres .*on_phase1_failure='raise'"):
        two_phase(pb, anchors, 2, 0.5, on_phase1_failure="raise", **kwargs)


@pytest.mark.parametrize("change, exc, pattern", [
    (dict(phase1_rounds=0), ValueError, r"phase1_rounds must be in \[1, inf\), got 0"),
    (dict(phase2_rounds=0), ValueError, r"phase2_rounds must be in \[1, inf\), got 0"),
    (dict(local_steps=0), ValueError, r"local_steps must be in \[1, inf\), got 0"),
    (dict(local_solver="sgd"), ValueError, r"local_solver must be one of .*fedavg.*fedprox.*; got 'sgd'"),
    (dict(on_phase1_failure="ignore"), ValueError, r"on_phase1_failure must be one of .*skip.*raise"),
    (dict(tol=-1.0), ValueError, r"tol must be in \[0"),
    (dict(step_size=-0.5), ValueError, r"step_size must be finite and > 0"),
    (dict(step_size=np.ones((2, 2))), ValueError, r"step_size must be a scalar or an array of shape \(B,\)"),
    (dict(phase1_options={"n_rounds": 3}), ValueError, r"phase1_options must be keywords among .*; got \['n_rounds'\]"),
    (dict(rng=None), ValueError, r"rng is required to run Phase 1"),
    (dict(rng=3), TypeError, r"rng must be a numpy\.random\.Generator"),
    (dict(phase1="centres"), TypeError, r"phase1 must be a MomentDescentResult, got str"),
    (dict(sampling="twice"), ValueError, r"sampling must be one of"),
    (dict(anchors=[0]), ValueError, r"k must be in \[1, M_A\] = \[1, 1\]"),
])
def test_a_bad_option_is_one_value_error_naming_it(problem, change, exc, pattern):
    pb, anchors = problem
    args = dict(anchors=anchors, step_size=0.5, rng=np.random.default_rng(0), phase2_rounds=3, **PHASE1)
    args.update(change)
    with pytest.raises(exc, match=pattern) as info:
        two_phase(pb, args.pop("anchors"), 2, args.pop("step_size"), **args)
    assert "\n" not in str(info.value)


def test_phase2_options_are_checked_before_phase1_runs(problem, monkeypatch):
    import sys

    module = sys.modules["mixreg.algorithms.two_phase"]  # the package's name two_phase is the function

    def boom(*args, **kwargs):
        raise AssertionError("Phase 1 ran")

    monkeypatch.setattr(module, "moment_descent", boom)
    pb, anchors = problem
    with pytest.raises(ValueError, match="phase2_rounds"):
        two_phase(pb, anchors, 2, 0.5, rng=np.random.default_rng(0), phase2_rounds=0)


def test_registry_entry_is_two_phase_with_random_anchors():
    alg = ALGORITHMS["two_phase"]
    assert alg.uses_rng and alg.run.__wrapped__ is two_phase_replicas and "Su, Xu, Yang" in alg.source
    assert alg.options == {"n_anchors": None, "phase1_rounds": 10, "sampling": "reuse", "local_solver": "fedavg",
                           "local_steps": 2}
    pb = make_problem(m=30, k=2, n=10, d=4, sigma=0.1, scale=2.0, protocol="gaussian", rng=np.random.default_rng(2))
    res = alg.run(pb, np.zeros((3, 2, 4)), np.array([0.2, 0.5, 1.0]), n_rounds=20, rng=np.random.default_rng(4))
    assert isinstance(res, TwoPhaseRun) and res.n_rounds == 20 and res.local_steps == 2
    assert res.phase1.anchors.size == 4 and np.unique(res.phase1.anchors).size == 4
    # init's values are unused: every replica starts from the Phase-1 centres
    again = alg.run(pb, np.ones((3, 2, 4)), np.array([0.2, 0.5, 1.0]), n_rounds=20, rng=np.random.default_rng(4))
    np.testing.assert_array_equal(res.theta, again.theta)
    # the registry's communication: Phase 1 on top of Phase 2's d + 1 up and k d down per round
    up, down = alg.communication(pb, res, 0)
    p1 = res.phase1
    assert up == pytest.approx((2 * p1.clients_per_round * 4 * 4 + 4 * 4) * p1.n_rounds / 30 + 5 * 20)
    assert down == pytest.approx((p1.clients_per_round * 4 * 4 + 4 * 4 * 2) * p1.n_rounds / 30 + 8 * 20)


def test_registry_entry_refuses_what_its_precondition_says():
    assert unmet_precondition("two_phase", d=1, k=2, n_min=5).size == "d"
    assert unmet_precondition("two_phase", d=4, k=2, n_min=1).size == "n_min"
    assert unmet_precondition("two_phase", d=4, k=2, n_min=2) is None
    pb = make_problem(m=5, k=2, n=10, d=4, sigma=0.1, scale=2.0, protocol="gaussian", rng=np.random.default_rng(2))
    with pytest.raises(ValueError, match=r"n_anchors=4 anchors and at least k=2 other clients .* has 5 clients"):
        two_phase_replicas(pb, np.zeros((1, 2, 4)), 0.5, n_rounds=3, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"n_anchors must be in \[2, inf\), got 1"):
        two_phase_replicas(pb, np.zeros((1, 2, 4)), 0.5, n_rounds=3, rng=np.random.default_rng(0), n_anchors=1)


def test_memory_estimate_of_the_registry_entry_covers_both_phases():
    from mixreg.algorithms import RunSizes, work_bytes

    z = RunSizes(m=1000, N=20_000, d=50, k=3, replicas=5)
    assert work_bytes("two_phase", z) == max(work_bytes("fedavg", z),
                                             work_bytes("moment_descent", RunSizes(m=6, N=20_000, d=50, k=3)))
    wide = RunSizes(m=10, N=20_000, d=50, k=3)  # Phase 1's moment vectors dominate a single replica
    assert work_bytes("two_phase", wide) > work_bytes("fedavg", wide)
