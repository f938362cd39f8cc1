"""The public contract checker, :func:`mixreg.algorithms.check_algorithm`, on drivers written here.

A correct toy driver (gradient descent on each model's pooled least squares, its clients chosen by
their lowest loss), written with the public helpers as a user would, passes every check.  The
same driver with one defect each (a flag of :func:`toy`) fails, and the violation names the check
that catches the defect: every check has teeth.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from mixreg.algorithms import (
    CHECKS,
    DEFAULT_BLOWUP,
    Algorithm,
    CheckReport,
    CheckSkipped,
    ContractViolation,
    DriverResult,
    HistoryRecorder,
    Replicas,
    ServerStep,
    algorithm_checks,
    check_algorithm,
    check_run,
    common_fields,
    data_scales,
)
from mixreg.problems import make_problem

STEP = 0.5  # stable for the toy on the checks' problems; 10 x STEP grows geometrically


def toy(*defects):
    """A replica driver of the contract's signature: each of the ``k`` models takes a gradient step
    on the pooled least squares of the clients whose loss it minimises; ``defects`` break it."""
    defects = set(defects)

    def run(problem, init, step_size, *, n_rounds, rng=None, tol=None, history=False, blowup=DEFAULT_BLOWUP,
            server_step=None, schedule=None):
        start = time.perf_counter()
        T_in = max(n_rounds, 1) if "accepts_zero_rounds" in defects else n_rounds
        theta, eta, T, tol = check_run(problem, init, step_size, T_in, tol)
        if "one_round_less_for_one_replica" in defects and np.ndim(init) == 2:
            T = max(T - 1, 1)
        B, k, d = theta.shape
        if "global_random" in defects:
            theta += 1e-3 * np.random.standard_normal(theta.shape).astype(theta.dtype)
        if "draws_from_rng" in defects:
            theta += 1e-3 * rng.standard_normal(theta.shape).astype(theta.dtype)
        server_step = ServerStep() if server_step is None or "ignores_server_step" in defects else server_step
        if "blowup_none_is_default" in defects and blowup is None:
            blowup = DEFAULT_BLOWUP
        if "only_non_finite" in defects:
            blowup = None
        replicas = Replicas(B, T, None if "ignores_tol" in defects else tol, theta0=theta,
                            floors=data_scales(problem), blowup=blowup)
        rec = HistoryRecorder(problem, T, B, k, ("matched_max",)) if history else None
        state = server_step.start(theta)
        if rec is not None:
            rec.record_point(0, theta, replicas.diverged)
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(T):
                assign, best, grad = _round(problem, theta)
                if rec is not None:
                    rec.record_round(t, assign, best.sum(axis=1) / (2 * problem.N), replicas.diverged)
                factor = 1.0 if schedule is None or "ignores_schedule" in defects else schedule(t)
                step = (eta * factor)[:, None, None].astype(theta.dtype)
                if "first_replica_only" in defects:
                    step[:] = step[0]
                new = server_step.gradient(theta, grad, step, t=t, state=state, rows=slice(None))
                replicas.accept(theta, new, best.sum(axis=1) / problem.N, t)
                if "no_freezing" in defects:
                    theta[:] = new
                if rec is not None:
                    rec.record_point(t + 1, theta, replicas.diverged)
                if "stops_at_first_divergence" in defects and replicas.diverged.any():
                    replicas.reason = "a replica diverged"
                    break
                if replicas.finished(t):
                    break
            assign, best, _ = _round(problem, theta)
        train_loss = best.sum(axis=1) / (2 * problem.N)
        if "loss_of_diverged" not in defects:
            train_loss[replicas.diverged] = np.nan
        if "int32_assignments" in defects:
            assign = assign.astype(np.int32)
        if "writes_into_init" in defects:
            np.copyto(init, theta)
        result = DriverResult(theta=theta, assignments=assign, train_loss=train_loss,
                              **common_fields(replicas, eta, start, rec))
        if "history_one_row_too_many" in defects and result.history is not None:
            h = result.history
            result = dataclasses.replace(result, history=dataclasses.replace(h, loss=np.vstack([h.loss, h.loss[-1:]])))
        return result

    return run


def _round(problem, theta):
    """Every client's identity (B, m), its loss (B, m) and each model's pooled gradient (B, k, d)."""
    X, y, offsets = problem.X, problem.y, problem.offsets
    sizes = np.diff(offsets)
    B, k, d = theta.shape
    assign = np.empty((B, problem.m), dtype=np.int64)
    best = np.empty((B, problem.m))
    grad = np.zeros_like(theta)
    for b in range(B):
        R = X @ theta[b].T - y[:, None]  # (N, k) residuals of every model
        losses = np.add.reduceat(R.astype(np.float64) ** 2, offsets[:-1], axis=0)  # (m, k)
        assign[b] = losses.argmin(axis=1)
        best[b] = losses[np.arange(problem.m), assign[b]]
        mine = np.repeat(assign[b], sizes)[:, None] == np.arange(k)  # (N, k): row chose model l
        grad[b] = (X.T @ (R * mine)).T / problem.N
    return assign, best, grad


def entry(*defects, **fields):
    return Algorithm(**{**dict(name="toy", run=toy(*defects), source="a test's toy: pooled least squares",
                               sends="its identity and one d-vector gradient"), **fields})


def test_the_correct_toy_passes_every_check():
    report = check_algorithm(entry(), step_size=STEP)
    assert isinstance(report, CheckReport)
    assert report == list(CHECKS) and report.skipped == {}


def _refuse_d1(d, k, n_min):
    from mixreg.algorithms import Unmet
    return Unmet("d", d, "d >= 2") if d < 2 else None


@pytest.mark.parametrize("algorithm, check", [
    pytest.param(entry(sends=""), "entry", id="no-protocol"),
    pytest.param(entry("int32_assignments"), "common_fields", id="int32-assignments"),
    pytest.param(entry("global_random", uses_rng=True), "same_generator_same_result", id="global-np-random"),
    pytest.param(entry("draws_from_rng"), "same_generator_same_result", id="rng-used-but-uses_rng-False"),
    pytest.param(entry("writes_into_init"), "inputs_untouched", id="mutates-init"),
    pytest.param(entry("history_one_row_too_many"), "history", id="history-shape"),
    pytest.param(entry("one_round_less_for_one_replica"), "single_replica_is_batch", id="2d-init-other-path"),
    pytest.param(entry("first_replica_only"), "batch_equals_separate_runs", id="ignores-replicas-beyond-first"),
    pytest.param(entry("no_freezing"), "diverging_replica", id="no-divergence-freezing"),
    pytest.param(entry("loss_of_diverged"), "diverging_replica", id="finite-loss-for-diverged"),
    pytest.param(entry("stops_at_first_divergence"), "diverging_replica", id="divergence-stops-the-others"),
    pytest.param(entry("only_non_finite"), "finite_blowup", id="only-overflow-is-divergence"),
    pytest.param(entry("blowup_none_is_default"), "blowup_none", id="blowup-none-still-flags-finite"),
    pytest.param(entry("ignores_tol"), "tolerance_stops", id="ignores-tol"),
    pytest.param(entry("accepts_zero_rounds"), "bad_input", id="accepts-bad-input-silently"),
    pytest.param(entry(precondition=_refuse_d1), "precondition_is_exact", id="precondition-too-strict"),
    pytest.param(entry("ignores_server_step"), "plain_server_step", id="ignores-server-step"),
    pytest.param(entry("ignores_schedule"), "constant_schedule", id="ignores-schedule"),
])
def test_a_broken_driver_fails_the_check_that_catches_it(algorithm, check):
    with pytest.raises(ContractViolation) as info:
        check_algorithm(algorithm, step_size=STEP)
    assert info.value.check == check and info.value.algorithm == "toy"
    assert f"algorithm 'toy' fails check {check!r}: " in str(info.value)


def test_every_check_has_a_broken_driver_above():
    """Each check of the contract fails for one of the broken drivers (none is without teeth)."""
    import inspect
    source = inspect.getsource(test_a_broken_driver_fails_the_check_that_catches_it)
    assert all(f'"{name}"' in source for name in CHECKS), [n for n in CHECKS if f'"{n}"' not in source]


def test_a_violation_is_an_assertion_error_with_what_was_wrong():
    check = dict(algorithm_checks(entry("accepts_zero_rounds"), step_size=STEP))["bad_input"]
    with pytest.raises(AssertionError, match=r"n_rounds = 0 was accepted without an error") as info:
        check()
    assert isinstance(info.value, ContractViolation) and info.value.detail.startswith("n_rounds = 0")


def test_a_driver_that_raises_is_a_violation_with_its_error_as_cause():
    def no_rng(problem, init, step_size, *, n_rounds):
        return toy()(problem, init, step_size, n_rounds=n_rounds)

    with pytest.raises(ContractViolation, match="'common_fields': the driver raised TypeError") as info:
        check_algorithm(entry(run=no_rng), step_size=STEP)
    assert isinstance(info.value.__cause__, TypeError)


def test_checks_of_absent_keywords_are_skipped_and_reported():
    def plain(problem, init, step_size, *, n_rounds, rng=None, tol=None, history=False):
        return toy()(problem, init, step_size, n_rounds=n_rounds, tol=tol, history=history)

    report = check_algorithm(entry(run=plain), step_size=STEP)
    assert report.skipped == {name: f"the driver takes no {kw!r} keyword"
                              for name, kw in CHECKS.items() if kw in ("blowup", "server_step", "schedule")}
    assert report == [name for name in CHECKS if name not in report.skipped]
    skipped = dict(algorithm_checks(entry(run=plain), step_size=STEP))["constant_schedule"]
    with pytest.raises(CheckSkipped, match="check 'constant_schedule' skipped: the driver takes no 'schedule'"):
        skipped()


def test_a_keyword_the_entry_fixes_is_not_checked():
    """An entry whose ``options`` fix a keyword leaves it to no caller: its check is skipped."""
    report = check_algorithm(entry(options={"schedule": "constant"}), step_size=STEP)
    assert report.skipped == {"constant_schedule": "the driver takes no 'schedule' keyword"}


def test_a_registered_name_uses_its_settings_and_skips_with_their_reason():
    report = check_algorithm("fedprox")
    assert report.skipped["diverging_replica"].startswith("the exact proximal step is stable")
    assert "bad_input" in report and "finite_blowup" not in report
    # a user's skip replaces the settings'
    report = check_algorithm(entry(), step_size=STEP, skip={"history": "not recorded"})
    assert report.skipped == {"history": "not recorded"} and "history" not in report


def test_the_problem_and_the_seeds_are_the_callers():
    seen = []

    def spy(problem, init, step_size, **kwargs):
        seen.append((problem, float(problem.X[0, 0]), float(np.ravel(init)[0])))
        return toy()(problem, init, step_size, **kwargs)

    pb = make_problem(m=10, k=2, n=20, d=3, sigma=0.1, scale=1.5, protocol="gaussian", rng=np.random.default_rng(0))
    dict(algorithm_checks(entry(run=spy), problem=pb, step_size=STEP))["common_fields"]()
    assert seen[-1][0] is pb
    firsts = []
    for rng in (None, 1, 2):
        dict(algorithm_checks(entry(run=spy), rng=rng, step_size=STEP))["common_fields"]()
        firsts.append(seen[-1][1:])
    assert len(set(firsts)) == 3  # other seeds: another problem and other initial parameters
    dict(algorithm_checks(entry(run=spy), rng=1, step_size=STEP))["common_fields"]()
    assert seen[-1][1:] == firsts[1]


@pytest.mark.parametrize("call, exc, match", [
    (lambda: check_algorithm(42), TypeError, "algorithm must be an Algorithm or a registered name, got int"),
    (lambda: check_algorithm("nope"), ValueError, "unknown algorithm 'nope'"),
    (lambda: check_algorithm(entry(), skip={"nope": "x"}), ValueError, r"skip names unknown checks \['nope'\]"),
    (lambda: check_algorithm(entry(), skip=["history"]), TypeError, "skip must be a dict"),
    (lambda: check_algorithm(entry(), step_size=-1.0), ValueError, "step_size must be finite and > 0"),
    (lambda: check_algorithm(entry(), unstable_step_size=np.inf), ValueError, "unstable_step_size must be finite"),
    (lambda: check_algorithm(entry(), problem="pb"), TypeError, "problem must be a mixreg Problem or None"),
])
def test_bad_arguments_of_the_checker(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_algorithm_checks_refuses_bad_arguments_when_called_not_when_iterated():
    with pytest.raises(ValueError, match=r"skip names unknown checks \['nope'\]"):
        algorithm_checks(entry(), skip={"nope": "x"})
