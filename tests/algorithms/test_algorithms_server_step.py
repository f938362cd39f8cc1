"""The server-update seam and the step-size schedules (:mod:`mixreg.algorithms._server`): every
driver that takes a ``server_step`` and a ``schedule`` gives today's bits with the plain step and
the constant schedule, whatever carries them; momentum and schedules match independent NumPy
references; a variant is one registry entry; and a different step or schedule changes the result
(the seam is really used)."""

import numpy as np
import pytest

from mixreg.algorithms import (
    ALGORITHMS,
    Algorithm,
    Constant,
    HeavyBall,
    InverseTime,
    Nesterov,
    PiecewiseConstant,
    Schedule,
    ServerStep,
    check_schedule,
    fedx,
    fesem,
    get_algorithm,
    ifca,
    ifca_points,
    oneshot,
    register,
    variant,
    with_server_step,
)
from mixreg.problems import ProblemSpec, make_problem

STEPPED = sorted(name for name, alg in ALGORITHMS.items() if alg.takes_server_step)
STEPS = {"ifca": 0.3, "ifca_data": 0.3, "ifca_model": 0.1, "fedavg": 0.5, "fedprox": 2.0, "oneshot": 0.5,
         "ifca_points": 0.5, "kfed": 0.5, "pacfl": 0.5, "pacfl_x": 0.5, "fesem": 0.3}


class Wrapped(ServerStep):
    """A user's class that delegates both forms to the plain step, and counts the calls."""

    name = "wrapped"

    def __init__(self):
        self.calls = []

    def start(self, theta):
        return {"B": theta.shape[0]}

    def gradient(self, theta, grad, step, *, t, state, rows):
        self.calls.append(("gradient", t))
        return ServerStep().gradient(theta, grad, step, t=t, state=state, rows=rows)

    def average(self, theta, proposal, *, t, state, rows):
        self.calls.append(("average", t))
        return ServerStep().average(theta, proposal, t=t, state=state, rows=rows)


class Doubled(ServerStep):
    """A deliberately different step: twice the plain one (the model form follows as FedOpt's
    pseudo-gradient step, ``theta - 2 (theta - proposal)``)."""

    name = "doubled"

    def gradient(self, theta, grad, step, *, t, state, rows):
        return theta - (2 * step) * grad


def _problem():
    return make_problem(m=12, k=2, n=15, d=4, sigma=0.2, scale=1.5, protocol="gaussian",
                        rng=np.random.default_rng(3))


def _run(alg, pb, **kw):
    init = pb.theta_star[None] + 0.4 * np.random.default_rng(4).standard_normal((3, pb.k, pb.d))
    return alg.run(pb, init, STEPS.get(alg.name.split("+")[0], 0.1), n_rounds=8, rng=np.random.default_rng(11),
                   history=True, **kw)


def test_every_round_based_builtin_takes_a_server_step_and_a_schedule():
    assert set(STEPPED) == set(ALGORITHMS) and "moment_descent" not in ALGORITHMS  # Phase 1 has no seam
    assert all(ALGORITHMS[name].takes_schedule for name in STEPPED)


@pytest.mark.parametrize("name", STEPPED)
def test_a_registered_plain_variant_gives_the_same_bits(name):
    pb = _problem()
    base = get_algorithm(name)
    step = Wrapped()
    variant = with_server_step(base, step, name=f"{name}+wrapped")
    register(variant)
    try:
        assert get_algorithm(f"{name}+wrapped").options["server_step"] == "wrapped"
        a, b = _run(base, pb), _run(get_algorithm(f"{name}+wrapped"), pb)
    finally:
        del ALGORITHMS[f"{name}+wrapped"]
    assert step.calls, "the driver never called its server step"
    assert [t for _, t in step.calls[:3]] == [0, 1, 2]
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.train_loss, b.train_loss)
    np.testing.assert_array_equal(a.history.loss, b.history.loss)
    assert a.n_rounds == b.n_rounds and a.stop_reason == b.stop_reason


@pytest.mark.parametrize("name", STEPPED)
def test_a_different_step_changes_the_result(name):
    pb = _problem()
    a = _run(get_algorithm(name), pb)
    b = _run(with_server_step(get_algorithm(name), Doubled()), pb)
    assert not np.array_equal(a.theta, b.theta)


def test_option_one_doubled_is_the_doubled_step_size():
    pb = _problem()
    init = pb.theta_star + 0.3
    doubled = ifca(pb, init, 0.1, n_rounds=5, server_step=Doubled())
    np.testing.assert_allclose(doubled.theta, ifca(pb, init, 0.2, n_rounds=5).theta, rtol=1e-12)


def test_the_state_follows_the_replicas_ifca_drops():
    """IFCA compacts diverged replicas away: ``rows`` says which replicas ``theta`` holds."""
    seen = []

    class Rows(ServerStep):
        def start(self, theta):
            return np.arange(theta.shape[0])

        def gradient(self, theta, grad, step, *, t, state, rows):
            seen.append(state[rows].tolist())
            return super().gradient(theta, grad, step, t=t, state=state, rows=rows)

    pb = _problem()
    ifca(pb, np.repeat(pb.theta_star[None], 3, axis=0), [0.1, 1e3, 0.1], n_rounds=30, server_step=Rows())
    assert seen[0] == [0, 1, 2] and seen[-1] == [0, 2]


def test_bad_server_steps_are_refused():
    pb = _problem()
    with pytest.raises(TypeError, match="server_step must be a mixreg ServerStep"):
        ifca(pb, pb.theta_star, 0.1, n_rounds=2, server_step=lambda *a: a[0])
    with pytest.raises(ValueError, match="takes no server_step"):
        with_server_step(with_server_step(get_algorithm("ifca"), Doubled()), Doubled())
    with pytest.raises(ValueError, match="server_step is used by finish='fedavg' only"):
        oneshot(pb, pb.theta_star, 0.1, n_rounds=2, rng=np.random.default_rng(0), finish="exact",
                server_step=ServerStep())


# --------------------------------------------------------------------------------------------
# Heavy-ball and Nesterov momentum
# --------------------------------------------------------------------------------------------


def _same_run(a, b):
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.train_loss, b.train_loss)
    np.testing.assert_array_equal(a.history.loss, b.history.loss)
    assert a.n_rounds == b.n_rounds and a.stop_reason == b.stop_reason


@pytest.mark.parametrize("momentum", [HeavyBall, Nesterov])
@pytest.mark.parametrize("name", STEPPED)
def test_momentum_zero_is_the_plain_step_bit_for_bit(name, momentum):
    """``beta = 0``: no velocity, and the model form takes the proposal itself (the pseudo-gradient
    step ``theta - (theta - proposal)`` would round differently)."""
    pb = _problem()
    base = get_algorithm(name)
    _same_run(_run(base, pb), _run(variant(base, server_step=momentum(0.0), name=f"{name}+zero"), pb))


@pytest.mark.parametrize("name", STEPPED)
def test_momentum_changes_the_result(name):
    pb = _problem()
    base = get_algorithm(name)
    moved = _run(variant(base, server_step=HeavyBall(0.5), name=f"{name}+hb"), pb)
    assert not np.array_equal(_run(base, pb).theta, moved.theta)


def _client_rows(pb, i):
    rows = slice(pb.offsets[i], pb.offsets[i + 1])
    return pb.X[rows], pb.y[rows]


def _ifca_reference(pb, theta, gamma, n_rounds, *, beta=0.0, nesterov=False, factor=lambda t: 1.0):
    """IFCA option I (Algorithm 2) with server momentum, client by client in NumPy."""
    theta, v = np.array(theta, dtype=np.float64), np.zeros(theta.shape)
    for t in range(n_rounds):
        g = np.zeros_like(theta)
        for i in range(pb.m):
            X, y = _client_rows(pb, i)
            j = np.argmin(((y[:, None] - X @ theta.T) ** 2).mean(axis=0))
            g[j] += 2.0 / len(y) * X.T @ (X @ theta[j] - y)  # grad of (1/n_i) sum (y - x theta)^2
        step = gamma * factor(t) / pb.m
        v = beta * v + g
        theta = theta - step * ((g + beta * v) if nesterov else v)
    return theta


def _fedx_reference(pb, theta, eta, n_rounds, local_steps, *, beta=0.0, factor=lambda t: 1.0):
    """FedAvg(s) Phase 2 with FedAvgM's heavy-ball server momentum in NumPy: the pseudo-gradient
    ``theta - sum_i (n_i / N) local_i`` (unchosen models keep their value) into the velocity."""
    theta, v = np.array(theta, dtype=np.float64), np.zeros(theta.shape)
    for t in range(n_rounds):
        proposal = theta.copy()
        for i in range(pb.m):
            X, y = _client_rows(pb, i)
            z = np.argmin(((y[:, None] - X @ theta.T) ** 2).sum(axis=0))
            w = theta[z].copy()
            for _ in range(local_steps):
                w = w - eta * factor(t) / len(y) * X.T @ (X @ w - y)
            proposal[z] += len(y) / pb.N * (w - theta[z])
        v = beta * v + (theta - proposal)
        theta = theta - v
    return theta


@pytest.mark.parametrize("momentum", [HeavyBall(0.7), Nesterov(0.7)])
def test_ifca_option_one_momentum_matches_a_numpy_reference(momentum):
    pb = _problem()
    init = pb.theta_star + 0.4 * np.random.default_rng(5).standard_normal((pb.k, pb.d))
    got = ifca(pb, init, 0.3, n_rounds=3, server_step=momentum).theta[0]
    want = _ifca_reference(pb, init, 0.3, 3, beta=0.7, nesterov=isinstance(momentum, Nesterov))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    plain = _ifca_reference(pb, init, 0.3, 3)  # the reference tells momentum from the plain step
    assert np.abs(want - plain).max() > 1e-3


def test_ifca_option_one_momentum_with_a_schedule_matches_a_numpy_reference():
    pb = _problem()
    init = pb.theta_star + 0.4 * np.random.default_rng(5).standard_normal((pb.k, pb.d))
    got = ifca(pb, init, 0.3, n_rounds=3, server_step=HeavyBall(0.7), schedule=InverseTime(1.5)).theta[0]
    want = _ifca_reference(pb, init, 0.3, 3, beta=0.7, factor=lambda t: 1 / (1 + t / 1.5))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("local_steps", [1, 3])
def test_fedx_momentum_matches_a_numpy_reference(local_steps):
    pb = _problem()
    init = pb.theta_star + 0.4 * np.random.default_rng(5).standard_normal((pb.k, pb.d))
    got = fedx(pb, init, 0.5, local_steps=local_steps, n_rounds=3, server_step=HeavyBall(0.6)).theta[0]
    np.testing.assert_allclose(got, _fedx_reference(pb, init, 0.5, 3, local_steps, beta=0.6), rtol=1e-10,
                               atol=1e-13)
    factor = PiecewiseConstant([1, 2], [1.0, 0.5, 0.2])
    got = fedx(pb, init, 0.5, local_steps=local_steps, n_rounds=3, server_step=HeavyBall(0.6), schedule=factor)
    want = _fedx_reference(pb, init, 0.5, 3, local_steps, beta=0.6, factor=factor)
    np.testing.assert_allclose(got.theta[0], want, rtol=1e-10, atol=1e-13)


def test_the_velocity_is_kept_per_replica_through_ifca_compaction():
    """A replica that diverges is dropped from IFCA's products; the others' velocities stay theirs:
    the live replicas equal a batch without the diverging one."""
    pb = _problem()
    init = pb.theta_star[None] + 0.4 * np.random.default_rng(4).standard_normal((3, pb.k, pb.d))
    for option in ("gradient", "model"):
        kw = dict(n_rounds=40, option=option, local_steps=2, server_step=HeavyBall(0.5), schedule=InverseTime(10))
        res = ifca(pb, init, [0.2, 1e6, 0.1], **kw)
        alone = ifca(pb, init[[0, 2]], [0.2, 0.1], **kw)
        assert res.diverged.tolist() == [False, True, False]
        np.testing.assert_allclose(res.theta[[0, 2]], alone.theta, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("bad, exc, pattern", [
    (1.0, ValueError, r"beta must be in \[0, 1\), got 1.0"),
    (-0.1, ValueError, r"beta must be in \[0, 1\), got -0.1"),
    (float("nan"), ValueError, r"beta must be in \[0, 1\), got nan"),
    ("0.9", TypeError, r"beta must be a real number in \[0, 1\), got str"),
])
def test_bad_momentum_is_refused_in_one_line(bad, exc, pattern):
    for momentum in (HeavyBall, Nesterov):
        with pytest.raises(exc, match=pattern) as info:
            momentum(bad)
        assert "\n" not in str(info.value)


# --------------------------------------------------------------------------------------------
# Schedules
# --------------------------------------------------------------------------------------------


def test_the_built_in_schedules_give_their_multipliers():
    assert [InverseTime(10)(t) for t in (0, 5, 10, 30)] == [1.0, 1 / 1.5, 0.5, 0.25]
    s = PiecewiseConstant([3, 7], [1.0, 0.5, 0.125])
    assert [s(t) for t in range(9)] == [1.0] * 3 + [0.5] * 4 + [0.125] * 2
    assert Constant()(10**6) == 1.0
    assert isinstance(check_schedule(None), Constant)
    assert isinstance(check_schedule(InverseTime(2)), InverseTime)

    def halve(t):
        return 0.5 ** t

    wrapped = check_schedule(halve)
    assert isinstance(wrapped, Schedule) and wrapped.name == "halve" and wrapped.factor(3) == 0.125
    assert check_schedule(lambda t: 1.0).name == "callable"


def _scaled_run(alg, pb, scale, **kw):
    init = pb.theta_star[None] + 0.4 * np.random.default_rng(4).standard_normal((3, pb.k, pb.d))
    step = STEPS.get(alg.name.split("+")[0], 0.1) * np.array([1.0, 0.5, 0.25])
    return alg.run(pb, init, step * scale, n_rounds=8, rng=np.random.default_rng(11), history=True, **kw)


@pytest.mark.parametrize("name", STEPPED)
def test_constant_is_none_bit_for_bit(name):
    pb = _problem()
    base = get_algorithm(name)
    _same_run(_scaled_run(base, pb, 1.0), _scaled_run(variant(base, schedule=Constant(), name=f"{name}+c"), pb, 1.0))


@pytest.mark.parametrize("name", STEPPED)
def test_a_schedule_scales_every_step_the_driver_takes(name):
    """A multiplier ``c`` every round is the step size times ``c``, bit for bit (the round's step is
    ``step_size * s(t)``, then exactly what the driver makes of ``step_size``); the scheduled path
    with ``c = 1`` is today's bits; and a decaying schedule changes the result."""
    pb = _problem()
    base = get_algorithm(name)
    one, half = variant(base, schedule=lambda t: 1.0, name=f"{name}+1"), variant(base, schedule=lambda t: 0.5,
                                                                                 name=f"{name}+h")
    _same_run(_scaled_run(base, pb, 1.0), _scaled_run(one, pb, 1.0))
    _same_run(_scaled_run(base, pb, 0.5), _scaled_run(half, pb, 1.0))
    decayed = _scaled_run(variant(base, schedule=InverseTime(2), name=f"{name}+it"), pb, 1.0)
    assert not np.array_equal(decayed.theta, _scaled_run(base, pb, 1.0).theta)


def _rounds_one_at_a_time(run, theta, step, factor, n_rounds):
    for t in range(n_rounds):
        theta = run(theta, step * factor(t)).theta[0]
    return theta


@pytest.mark.parametrize("option", ["model", "gradient"])
def test_inverse_time_on_ifca_is_one_round_calls_with_the_scaled_step(option):
    """The issue's variant: IFCA option II, tau = 5 local steps, gamma_t = gamma_0 / (1 + t / t0)."""
    pb = _problem()
    init = pb.theta_star + 0.4 * np.random.default_rng(5).standard_normal((pb.k, pb.d))
    schedule = InverseTime(3)
    got = ifca(pb, init, 0.1, n_rounds=6, option=option, local_steps=5, schedule=schedule).theta[0]
    want = _rounds_one_at_a_time(lambda th, g: ifca(pb, th, g, n_rounds=1, option=option, local_steps=5), init,
                                 0.1, schedule, 6)
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, ifca(pb, init, 0.1, n_rounds=6, option=option, local_steps=5).theta[0])


@pytest.mark.parametrize("solver", ["fedavg", "fedprox"])
def test_a_schedule_on_fedx_is_one_round_calls_with_the_scaled_step(solver):
    pb = _problem()
    init = pb.theta_star + 0.4 * np.random.default_rng(5).standard_normal((pb.k, pb.d))
    schedule = PiecewiseConstant([2, 4], [1.0, 0.5, 0.25])
    got = fedx(pb, init, 0.5, local_solver=solver, local_steps=3, n_rounds=6, schedule=schedule).theta[0]
    want = _rounds_one_at_a_time(lambda th, g: fedx(pb, th, g, local_solver=solver, local_steps=3, n_rounds=1),
                                 init, 0.5, schedule, 6)
    np.testing.assert_array_equal(got, want)


def test_point_level_ifca_reads_the_schedule_at_every_server_update():
    """``inner_rounds = tau``: round ``t`` makes the server updates ``t tau + u``."""
    pb = ProblemSpec(m=8, k=2, n=20, d=3, sigma=0.1, scale=2.0, protocol="gaussian",
                     main_fraction=0.7).generate(np.random.default_rng(0))
    seen = []

    def record(t):
        seen.append(t)
        return 1.0 / (1 + t)

    for s in (1, 2):
        seen.clear()
        ifca_points(pb, pb.theta_star + 0.2, 0.5, n_rounds=3, inner_rounds=2, local_steps=s, schedule=record)
        assert seen == list(range(6)), s


def test_fesem_schedules_the_local_steps_of_each_round():
    """FeSEM's local steps are the only place its step enters: a schedule dividing the step of
    round 1 on only differs from the plain run after round 0's local steps."""
    pb = _problem()
    init = pb.theta_star + 0.3
    kw = dict(n_rounds=1, history=True)
    first = fesem(pb, init, 0.3, schedule=PiecewiseConstant([1], [1.0, 0.1]), **kw)
    _same_run(first, fesem(pb, init, 0.3, **kw))
    two = fesem(pb, init, 0.3, n_rounds=2, schedule=PiecewiseConstant([1], [1.0, 0.1]))
    np.testing.assert_array_equal(two.local_models, fesem(pb, init, 0.3, n_rounds=2,
                                                          schedule=lambda t: (1.0, 0.1)[t]).local_models)
    assert not np.array_equal(two.local_models, fesem(pb, init, 0.3, n_rounds=2).local_models)


@pytest.mark.parametrize("bad, exc, pattern", [
    (lambda: InverseTime(0), ValueError, "t0 must be finite and > 0, got 0"),
    (lambda: InverseTime(float("inf")), ValueError, "t0 must be finite and > 0, got inf"),
    (lambda: PiecewiseConstant([5, 5], [1, 1, 1]), ValueError, r"boundaries must be strictly increasing, got \[5, 5"),
    (lambda: PiecewiseConstant([0], [1, 1]), ValueError, r"boundaries must be integers >= 1"),
    (lambda: PiecewiseConstant([2.5], [1, 1]), ValueError, r"boundaries must be integers >= 1"),
    (lambda: PiecewiseConstant([5], [1]), ValueError, r"factors must have len\(boundaries\) \+ 1 = 2 values, got 1"),
    (lambda: PiecewiseConstant([5], [1, 0]), ValueError, r"factors must be finite and > 0, got \[1, 0\]"),
    (lambda: check_schedule(0.5), TypeError, "schedule must be a mixreg Schedule or a callable"),
])
def test_bad_schedules_are_refused_in_one_line(bad, exc, pattern):
    with pytest.raises(exc, match=pattern) as info:
        bad()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("value, pattern", [
    (0.0, r"schedule 'decay' must return a finite multiplier > 0, got 0.0 at server update t=2"),
    (float("nan"), r"schedule 'decay' must return a finite multiplier > 0, got nan at server update t=2"),
    ("x", r"schedule 'decay' must return a real number at server update t=2, got str"),
])
@pytest.mark.parametrize("name", ["ifca", "ifca_model", "fedavg", "fesem", "ifca_points", "oneshot"])
def test_a_bad_value_of_a_callable_names_the_schedule_and_the_round(name, value, pattern):
    def decay(t):
        return 1.0 if t < 2 else value

    pb = _problem()
    with pytest.raises(ValueError, match=pattern) as info:
        _run(variant(get_algorithm(name), schedule=decay, name=f"{name}+decay"), pb)
    assert "\n" not in str(info.value)


def test_oneshot_exact_finish_refuses_a_schedule():
    pb = _problem()
    with pytest.raises(ValueError, match="schedule is used by finish='fedavg' only, got finish='exact'"):
        oneshot(pb, pb.theta_star, 0.1, n_rounds=2, rng=np.random.default_rng(0), finish="exact",
                schedule=InverseTime(2))


# --------------------------------------------------------------------------------------------
# The registry
# --------------------------------------------------------------------------------------------


def test_a_variant_is_one_registry_entry():
    entry = variant(get_algorithm("ifca_model"), server_step=Nesterov(0.5), schedule=InverseTime(5))
    assert entry.name == "ifca_model_nesterov_0.5_inverse_time_5"
    assert entry.options == {"option": "model", "local_steps": 2, "server_step": "nesterov_0.5",
                             "schedule": "inverse_time_5"}
    assert not entry.takes_server_step and not entry.takes_schedule
    assert variant(get_algorithm("fedavg"), schedule=InverseTime(5)).name == "fedavg_inverse_time_5"
    named = variant(get_algorithm("ifca"), server_step=HeavyBall(0.9), name="ifca_momentum")
    assert named.name == "ifca_momentum" and named.options["server_step"] == "heavy_ball_0.9"
    register(entry)
    try:
        got = get_algorithm(entry.name)
        assert got is entry and entry.name in ALGORITHMS
        pb = _problem()
        init = pb.theta_star + 0.3
        direct = ifca(pb, init, 0.1, n_rounds=6, option="model", local_steps=2, server_step=Nesterov(0.5),
                      schedule=InverseTime(5))
        np.testing.assert_array_equal(got.run(pb, init, 0.1, n_rounds=6, rng=np.random.default_rng(0)).theta,
                                      direct.theta)
        # under the contract: a batch equals separate runs, a diverging replica leaves the others as they are
        inits = pb.theta_star[None] + 0.4 * np.random.default_rng(4).standard_normal((3, pb.k, pb.d))
        batch = got.run(pb, inits, [0.1, 1e6, 0.05], n_rounds=30)
        assert batch.diverged.tolist() == [False, True, False]
        for b in (0, 2):
            alone = got.run(pb, inits[b], [0.1, 1e6, 0.05][b], n_rounds=30)
            np.testing.assert_allclose(batch.theta[b], alone.theta[0], rtol=1e-10, atol=1e-12)
    finally:
        del ALGORITHMS[entry.name]


def test_variant_refuses_what_the_entry_cannot_take():
    with pytest.raises(ValueError, match="variant of 'ifca' needs a server_step or a schedule, got neither"):
        variant(get_algorithm("ifca"))
    scheduled = variant(get_algorithm("ifca"), schedule=InverseTime(5))
    with pytest.raises(ValueError, match="algorithm 'ifca_inverse_time_5' takes no schedule"):
        variant(scheduled, schedule=Constant())
    assert variant(scheduled, server_step=HeavyBall(0.5)).options["schedule"] == "inverse_time_5"

    def bare(problem, init, step_size, *, n_rounds, rng=None, tol=None, history=False):
        raise AssertionError("not run")

    plain = Algorithm(name="bare", run=bare, source="a test", sends="nothing")
    for kw in (dict(server_step=HeavyBall(0.5)), dict(schedule=InverseTime(2))):
        with pytest.raises(ValueError, match=f"algorithm 'bare' takes no {next(iter(kw))}"):
            variant(plain, **kw)
    with pytest.raises(TypeError, match="schedule must be a mixreg Schedule"):
        variant(get_algorithm("ifca"), schedule="inverse_time")
    with pytest.raises(TypeError, match="algorithm must be an Algorithm"):
        variant("ifca", schedule=InverseTime(2))
