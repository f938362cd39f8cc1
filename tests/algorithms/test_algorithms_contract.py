"""The contract every registered algorithm keeps, checked over the registry.

A new algorithm registered in :mod:`mixreg.algorithms` is tested here the moment it is
registered: batching (``B = 1`` is the batch path, a batch equals separate runs), divergence
(a diverging replica is frozen, flagged, has no training loss and is never the chosen run, and
the others are untouched), bad input (a clear error naming the parameter), determinism under a
Generator, the common result fields, and the stop rules.
"""

import dataclasses

import numpy as np
import pytest

from mixreg.algorithms import ALGORITHMS, DriverResult, get_algorithm
from mixreg.problems import make_problem

NAMES = sorted(ALGORITHMS)
STEPS = {"ifca": 0.3, "ifca_data": 0.3, "ifca_model": 0.1, "fedavg": 0.5, "fedprox": 2.0, "oneshot": 0.5, "ifca_points": 0.5, "kfed": 0.5, "pacfl": 0.5, "pacfl_x": 0.5, "fesem": 0.3, "two_phase": 0.5}


def _problem(dtype=np.float64):
    return make_problem(m=12, k=2, n=15, d=4, sigma=0.2, scale=1.5, protocol="gaussian",
                        rng=np.random.default_rng(3), dtype=dtype)


def _inits(pb, B, seed=4):
    rng = np.random.default_rng(seed)
    return pb.theta_star[None] + 0.4 * rng.standard_normal((B, pb.k, pb.d))


def _step(name):
    return STEPS.get(name, 0.1)


def _run(name, pb, init, step, **kw):
    return get_algorithm(name).run(pb, init, step, n_rounds=kw.pop("n_rounds", 15),
                                   rng=np.random.default_rng(11), **kw)


def test_every_builtin_is_registered():
    assert {"ifca", "ifca_model", "fedavg", "fedprox"} <= set(NAMES)
    for name in NAMES:
        alg = ALGORITHMS[name]
        assert alg.source and alg.sends, name
    with pytest.raises(ValueError, match="unknown algorithm 'nope'; registered: "):
        get_algorithm("nope")


@pytest.mark.parametrize("name", NAMES)
def test_result_has_the_common_fields(name):
    pb = _problem()
    res = _run(name, pb, _inits(pb, 3), _step(name), history=True)
    assert isinstance(res, DriverResult)
    B, k, d, m = 3, pb.k, pb.d, pb.m
    assert res.theta.shape == (B, k, d) and res.theta.dtype == pb.dtype
    assert res.assignments.shape == (B, m) and res.assignments.dtype == np.int64
    assert res.train_loss.shape == (B,) and np.isfinite(res.train_loss).all()
    assert res.diverged.shape == (B,) and not res.diverged.any()
    assert (res.diverged_round == -1).all()
    assert res.step_sizes.shape == (B,)
    assert res.n_rounds == 15 and res.stop_reason == "completed 15 rounds"
    assert res.wall_time > 0
    h = res.history
    assert h.loss.shape == (15, B) and np.isfinite(h.loss).all()
    assert h.matched_max.shape == (16, B)
    # started near the truth with a stable step: every replica ends closer than it started
    assert (h.matched_max[-1] < h.matched_max[0]).all()


@pytest.mark.parametrize("name", NAMES)
def test_single_replica_is_the_batch_path(name):
    pb = _problem()
    init = _inits(pb, 1)
    a = _run(name, pb, init, _step(name))
    b = _run(name, pb, init[0], _step(name))  # (k, d) is B = 1
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.assignments, b.assignments)


@pytest.mark.parametrize("name", NAMES)
def test_batch_equals_separate_runs(name):
    pb = _problem()
    init = _inits(pb, 3)
    steps = _step(name) * np.array([1.0, 0.5, 0.25])
    batch = _run(name, pb, init, steps)
    for b in range(3):
        alone = _run(name, pb, init[b : b + 1], steps[b])
        np.testing.assert_allclose(batch.theta[b], alone.theta[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(batch.assignments[b], alone.assignments[0])
        assert batch.train_loss[b] == pytest.approx(alone.train_loss[0], rel=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_diverging_replica_is_frozen_flagged_and_never_chosen(name):
    if name == "fedprox":
        pytest.skip("the exact proximal step is stable for every step size; divergence is impossible")
    pb = _problem()
    init = _inits(pb, 3)
    steps = np.array([_step(name), 1e6, _step(name) / 2])
    res = _run(name, pb, init, steps, n_rounds=300)
    assert res.diverged.tolist() == [False, True, False]
    assert res.diverged_round[1] >= 0 and (res.diverged_round[[0, 2]] == -1).all()
    assert np.isfinite(res.theta).all(), "a diverged replica keeps its last finite parameters"
    assert np.isnan(res.train_loss[1]) and np.isfinite(res.train_loss[[0, 2]]).all()
    assert res.best_replica() in (0, 2)
    assert res.best_replica(among=[1]) is None
    # the other replicas are exactly what they would be without the diverging one
    alone = _run(name, pb, init[[0, 2]], steps[[0, 2]], n_rounds=300)
    np.testing.assert_allclose(res.theta[[0, 2]], alone.theta, rtol=1e-10, atol=1e-12)
    # every replica diverged: the loop stops and says so
    res = _run(name, pb, init[1:2], 1e6, n_rounds=300)
    assert res.diverged.all() and res.stop_reason.startswith("all replicas diverged")
    assert res.n_rounds == res.diverged_round[0] + 1 < 300
    assert res.best_replica() is None


@pytest.mark.parametrize("name", NAMES)
def test_a_finite_blow_up_is_divergence(name):
    """A replica growing geometrically is flagged long before it overflows, and never chosen."""
    if name == "fedprox":
        pytest.skip("the exact proximal step is stable for every step size; divergence is impossible")
    pb = _problem()
    init = _inits(pb, 2)
    unstable = {"ifca": 3.0, "ifca_data": 3.0, "ifca_model": 1.5, "fedavg": 4.0, "ifca_points": 6.0, "two_phase": 4.0}.get(name, 10 * _step(name))
    res = _run(name, pb, init, np.array([_step(name), unstable]), n_rounds=300, history=True)
    assert res.diverged.tolist() == [False, True]
    # flagged while still finite: the blow-up rule, not overflow, caught it
    assert res.diverged_round[1] < 150
    assert np.isfinite(res.theta).all() and np.abs(res.theta[1]).max() < 1e10
    assert res.best_replica() == 0


@pytest.mark.parametrize("name", NAMES)
def test_same_generator_same_result(name):
    pb = _problem(np.float32)
    init = _inits(pb, 2)
    a = _run(name, pb, init, _step(name), history=True)
    b = _run(name, pb, init, _step(name), history=True)
    for field in ("theta", "assignments", "train_loss", "diverged"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    np.testing.assert_array_equal(a.history.loss, b.history.loss)


@pytest.mark.parametrize("name", NAMES)
def test_tolerance_stops_with_a_reason(name):
    pb = _problem()
    res = _run(name, pb, _inits(pb, 2), _step(name), n_rounds=500, tol=1e-9)
    assert res.stop_reason.startswith("converged: every replica moved less than tol=1e-09")
    assert res.n_rounds < 500
    full = _run(name, pb, _inits(pb, 2), _step(name), n_rounds=res.n_rounds)
    np.testing.assert_array_equal(res.theta, full.theta)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize(
    "kwargs, exc, pattern",
    [
        (dict(problem="not a problem"), TypeError, "problem must be a mixreg Problem"),
        (dict(init=np.zeros((2, 3))), ValueError, r"init must have shape \(B, k, d\)"),
        (dict(init=[[["a"]]]), ValueError, "init"),
        (dict(init=np.full((1, 2, 4), np.nan)), ValueError, "init"),
        (dict(step=-1.0), ValueError, "step_size must be finite and > 0"),
        (dict(step=np.ones(5)), ValueError, r"step_size must be a scalar or an array of shape \(B,\)"),
        (dict(n_rounds=0), ValueError, "n_rounds"),
        (dict(tol=-1.0), ValueError, "tol"),
    ],
)
def test_bad_input_names_the_parameter(name, kwargs, exc, pattern):
    pb = _problem()
    args = dict(problem=pb, init=_inits(pb, 2), step=_step(name))
    args.update({k: kwargs[k] for k in ("problem", "init", "step") if k in kwargs})
    extra = {k: v for k, v in kwargs.items() if k not in ("problem", "init", "step")}
    with pytest.raises(exc, match=pattern):
        get_algorithm(name).run(args["problem"], args["init"], args["step"], **{"n_rounds": 5, **extra})


def test_results_are_frozen():
    pb = _problem()
    res = _run("ifca", pb, _inits(pb, 1), 0.3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.n_rounds = 3


@pytest.mark.parametrize("name", NAMES)
def test_precondition_says_exactly_when_the_driver_refuses_the_sizes(name):
    """A registered precondition holds on a problem's (d, k, min n_i) exactly when the driver
    accepts the problem's sizes (a comparison then skips the method, recording why)."""
    from mixreg.algorithms import unmet_precondition

    for d, n in ((1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (4, 2)):
        pb = make_problem(m=6, k=2, n=n, d=d, sigma=0.2, scale=1.5, protocol="gaussian",
                          rng=np.random.default_rng(3))
        unmet = unmet_precondition(name, d=pb.d, k=pb.k, n_min=int(pb.sizes.min()))
        try:
            _run(name, pb, _inits(pb, 1), _step(name), n_rounds=2)
            refused = None
        except ValueError as exc:
            refused = exc
        assert (unmet is None) == (refused is None), (name, d, n, unmet, refused)
