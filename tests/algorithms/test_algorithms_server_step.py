"""The server-update seam (:class:`mixreg.algorithms.ServerStep`): every driver that takes a
``server_step`` gives today's bits with the plain step, whatever class carries it; a variant is
one registry entry; and a different step changes the result (the seam is really used)."""

import numpy as np
import pytest

from mixreg.algorithms import ALGORITHMS, ServerStep, get_algorithm, ifca, register, with_server_step
from mixreg.problems import make_problem

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


def test_every_round_based_builtin_takes_a_server_step():
    assert set(STEPPED) == set(ALGORITHMS) and "moment_descent" not in ALGORITHMS  # Phase 1 has no seam


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
    from mixreg.algorithms import oneshot
    with pytest.raises(ValueError, match="server_step is used by finish='fedavg' only"):
        oneshot(pb, pb.theta_star, 0.1, n_rounds=2, rng=np.random.default_rng(0), finish="exact",
                server_step=ServerStep())
