"""History on request and the divergence rules, for every registered algorithm.

``history="all"`` records, round by round, the identities every client took, its loss at the
model it chose, the iterates and the misclustering: the identities must be those recomputed from
the recorded iterate (the driver's own argmin rule), the client losses must add up to the
recorded objective, the misclustering must be that of the recorded identities.  A run of ``T``
rounds replays as ``T`` one-round calls chained.  ``blowup`` sets the divergence factor
(``None``: only non-finite values count) and ``diverged_rule`` says which rule fired.
"""

import numpy as np
import pytest

from mixreg.algorithms import (
    ALGORITHMS,
    DEFAULT_BLOWUP,
    DIVERGENCE_RULES,
    HISTORY_FIELDS,
    get_algorithm,
    ifca,
    moment_descent,
    training_loss,
)
from mixreg.algorithms._driver import BLOWUP
from mixreg.algorithms.fesem import warm_start_models
from mixreg.algorithms.ifca_points import _majority, point_labels
from mixreg.clustering import squared_distances
from mixreg.metrics import best_permutation
from mixreg.problems import ProblemSpec, make_problem

NAMES = sorted(ALGORITHMS)
STEPS = {"ifca": 0.3, "ifca_data": 0.3, "ifca_model": 0.1, "fedavg": 0.5, "fedprox": 2.0, "oneshot": 0.5,
         "ifca_points": 0.5, "kfed": 0.5, "pacfl": 0.5, "pacfl_x": 0.5, "fesem": 0.3, "two_phase": 0.5}
#: Step sizes at which each algorithm grows geometrically but takes a few rounds to blow up.
UNSTABLE = {"ifca": 3.0, "ifca_data": 3.0, "ifca_model": 1.5, "fedavg": 4.0, "ifca_points": 6.0, "two_phase": 4.0}
#: How the recorded objective is made of the client losses (the drivers' docstrings).
MEAN_OF_CLIENT_LOSSES = ("ifca", "ifca_data", "ifca_model")  # (1/|M_t|) sum_i min_j F_i
SUM_OVER_2N = ("fedavg", "fedprox", "two_phase", "ifca_points", "oneshot", "pacfl", "pacfl_x", "kfed")
#: Drivers whose identities are fixed before the rounds (a clustering, then FedAvg).
FIXED_LABELS = ("oneshot", "pacfl", "pacfl_x", "kfed")
T, B = 6, 2


def _problem():
    return make_problem(m=12, k=2, n=15, d=4, sigma=0.2, scale=1.5, protocol="gaussian",
                        rng=np.random.default_rng(3))


def _inits(pb, B, seed=4):
    return pb.theta_star[None] + 0.6 * np.random.default_rng(seed).standard_normal((B, pb.k, pb.d))


def _run(name, pb, init, step, **kw):
    return get_algorithm(name).run(pb, init, step, n_rounds=kw.pop("n_rounds", T),
                                   rng=np.random.default_rng(11), **kw)


@pytest.fixture(scope="module")
def runs():
    pb = _problem()
    init = _inits(pb, B)
    return pb, {name: _run(name, pb, init, STEPS[name] * np.array([1.0, 0.5]), history="all") for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_all_gives_every_field_in_its_shape(name, runs):
    pb, results = runs
    h = results[name].history
    k, d, m = pb.k, pb.d, pb.m
    assert h.theta.shape == (T + 1, B, k, d)
    assert h.assignments.shape == (T, B, m) and h.assignments.dtype == np.int64
    assert h.client_losses.shape == (T, B, m) and h.client_losses.dtype == np.float64
    assert h.loss.shape == h.misclustered_clients.shape == h.misclustered_data.shape == (T, B)
    for field in ("nearest", "matched_mean", "matched_max"):
        assert getattr(h, field).shape == (T + 1, B), field
    # full participation, nothing diverged: every client has an identity and a finite loss
    assert ((h.assignments >= 0) & (h.assignments < k)).all()
    assert np.isfinite(h.client_losses).all() and (h.client_losses >= 0).all()
    np.testing.assert_array_equal(h.theta[-1], results[name].theta)


@pytest.mark.parametrize("name", NAMES)
def test_assignments_are_the_drivers_rule_at_the_recorded_iterate(name, runs):
    pb, results = runs
    res = results[name]
    h = res.history
    for t in range(T):
        theta = h.theta[t]
        if name in ("ifca", "ifca_data", "ifca_model", "fedavg", "fedprox", "two_phase"):
            # argmin_j F_i(theta_j) (FedX: the plain sum n_i F_i, the same argmin)
            _, assign = training_loss(pb, theta)
            np.testing.assert_array_equal(h.assignments[t], assign)
            P = np.einsum("bkd,nd->bkn", theta, pb.X)
            sq = np.square(pb.y - P)  # (B, k, N)
            sums = np.add.reduceat(sq, pb.offsets[:-1], axis=2)  # (B, k, m)
            chosen = np.take_along_axis(sums, assign[:, None, :], axis=1)[:, 0]
            expected = chosen / pb.sizes if name.startswith("ifca") else chosen
            np.testing.assert_allclose(h.client_losses[t], expected, rtol=1e-10)
        elif name == "ifca_points":
            labels, _ = point_labels(pb, theta)
            np.testing.assert_array_equal(h.assignments[t], _majority(labels, pb.offsets, pb.k))
        elif name in FIXED_LABELS:
            np.testing.assert_array_equal(h.assignments[t], res.assignments)
        elif name == "fesem" and t == 0:  # the E-step of the warm-start local models
            dist = np.stack([squared_distances(warm_start_models(pb), theta[b]) for b in range(B)])
            np.testing.assert_array_equal(h.assignments[0], dist.argmin(axis=2))
            np.testing.assert_allclose(h.client_losses[0], dist.min(axis=2), rtol=1e-10)


@pytest.mark.parametrize("name", NAMES)
def test_client_losses_make_the_recorded_objective(name, runs):
    pb, results = runs
    h = results[name].history
    if name in MEAN_OF_CLIENT_LOSSES:
        np.testing.assert_allclose(h.client_losses.mean(axis=2), h.loss, rtol=1e-10)
    elif name in SUM_OVER_2N:
        np.testing.assert_allclose(h.client_losses.sum(axis=2) / (2 * pb.N), h.loss, rtol=1e-10)
    else:  # FeSEM: squared parameter distances of the E-step, not the squared loss
        assert name == "fesem"
        assert not np.allclose(h.client_losses.sum(axis=2) / (2 * pb.N), h.loss)


@pytest.mark.parametrize("name", NAMES)
def test_misclustering_is_that_of_the_recorded_assignments(name, runs):
    pb, results = runs
    h = results[name].history
    w = pb.sizes / pb.N
    for t in range(T):
        perm = best_permutation(h.theta[t], pb.theta_star, objective="max")  # (B, k)
        wrong = h.assignments[t] != np.take_along_axis(perm, np.broadcast_to(pb.labels, (B, pb.m)), axis=1)
        np.testing.assert_allclose(h.misclustered_clients[t], wrong.mean(axis=1), rtol=1e-12)
        np.testing.assert_allclose(h.misclustered_data[t], wrong @ w, rtol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_true_is_the_drivers_old_default_and_names_select(name):
    pb = _problem()
    init = _inits(pb, 1)
    default = _run(name, pb, init, STEPS[name], history=True).history
    assert default.assignments is None and default.client_losses is None
    assert (default.nearest is None) == (not name.startswith("ifca") or name == "ifca_points")
    chosen = _run(name, pb, init, STEPS[name], history=("assignments", "theta")).history
    assert chosen.assignments is not None and chosen.theta is not None
    assert chosen.client_losses is None and chosen.misclustered_clients is None and chosen.matched_max is None
    one = _run(name, pb, init, STEPS[name], history="client_losses").history
    assert one.client_losses.shape == (T, 1, pb.m) and one.assignments is None
    np.testing.assert_array_equal(one.loss, default.loss)  # asking for more changes nothing recorded
    assert _run(name, pb, init, STEPS[name], history=False).history is None


@pytest.mark.parametrize("name", NAMES)
def test_bad_history_and_blowup_are_refused_in_one_line(name):
    pb = _problem()
    init = _inits(pb, 1)
    for bad, exc, match in [(("theta", "iterates"), ValueError, "history names must be among nearest, .*"
                              "client_losses.*got 'iterates'"),
                             ("nope", ValueError, "history names"), (3, TypeError, "history must be"),
                             ((1, 2), TypeError, "history must be")]:
        with pytest.raises(exc, match=match) as info:
            _run(name, pb, init, STEPS[name], history=bad)
        assert "\n" not in str(info.value)
    for bad, exc in [(1.0, ValueError), (0.5, ValueError), (np.inf, ValueError), (np.nan, ValueError),
                     ("1e6", TypeError), (True, TypeError)]:
        with pytest.raises(exc, match="blowup") as info:
            _run(name, pb, init, STEPS[name], blowup=bad)
        assert "\n" not in str(info.value)


def test_moment_descent_refuses_what_it_cannot_record():
    spec = ProblemSpec(m=300, k=2, d=4, sigma=0.1, scale=3.0, protocol="gaussian", n=4,
                       anchor_mode="per_cluster", anchor_points=40)
    rng = np.random.default_rng(1)
    pb, anchors = spec.with_anchors(spec.generate(rng), rng)
    for bad in (("assignments",), ("theta", "client_losses"), "misclustering"):
        with pytest.raises(ValueError, match="history: this driver cannot record .*anchors") as info:
            moment_descent(pb, anchors, 2, rng=np.random.default_rng(2), history=bad, anchor_sampling="reuse")
        assert "\n" not in str(info.value)
    res = moment_descent(pb, anchors, 2, rng=np.random.default_rng(2), history="all", anchor_sampling="reuse",
                         n_rounds=3)
    assert res.history.theta.shape == (4, anchors.size, 4)
    assert res.diverged_rule.shape == (anchors.size,) and (res.diverged_rule == "").all()
    blown = moment_descent(pb, anchors, 2, rng=np.random.default_rng(2), anchor_sampling="reuse", n_rounds=3,
                           step_constant=1e4, blowup=2.0)
    assert set(blown.diverged_rule[blown.nonfinite]) == {"parameters"}


def test_a_run_replays_as_one_round_calls_chained():
    """T rounds in ONE call with history=("theta", "assignments") give every round's iterate and
    identities: the same, bit for bit, as T calls of one round, each from the last one's end."""
    pb = _problem()
    init = _inits(pb, 3)
    steps = np.array([0.3, 0.6, 0.9])
    res = ifca(pb, init, steps, n_rounds=T, history=("theta", "assignments"))
    h = res.history
    assert h.nearest is None and h.client_losses is None
    theta = np.array(init)
    for t in range(T):
        np.testing.assert_array_equal(h.theta[t], theta)
        one = ifca(pb, theta, steps, n_rounds=1, history=("theta", "assignments"))
        np.testing.assert_array_equal(h.assignments[t], one.history.assignments[0])
        theta = one.theta
    np.testing.assert_array_equal(h.theta[T], theta)
    np.testing.assert_array_equal(res.theta, theta)


def test_partial_participation_marks_absent_clients():
    pb = _problem()
    res = ifca(pb, _inits(pb, 2), 0.3, n_rounds=T, participation=0.5, rng=np.random.default_rng(5), history="all")
    h = res.history
    absent = h.assignments == -1
    assert (absent.sum(axis=2) == pb.m // 2).all()  # round(q m) clients take part, the same in every replica
    assert np.isnan(h.client_losses[absent]).all() and np.isfinite(h.client_losses[~absent]).all()
    np.testing.assert_allclose(np.nanmean(h.client_losses, axis=2), h.loss, rtol=1e-10)


@pytest.mark.parametrize("name", sorted(set(NAMES) - {"fedprox"}))
def test_blowup_sets_when_and_which_rule_fires(name):
    """A huge step with ``blowup=None`` goes on until a value is not finite; the default flags the
    objective or the parameters rounds earlier; a smaller factor fires earlier still on a slower
    blow-up; a live replica has no rule."""
    pb = _problem()
    init = _inits(pb, 2)
    stable = STEPS[name]
    huge = np.array([stable, 1e6])
    default = _run(name, pb, init, huge, n_rounds=300)
    none = _run(name, pb, init, huge, n_rounds=300, blowup=None)
    assert default.diverged.tolist() == none.diverged.tolist() == [False, True]
    assert default.diverged_rule[0] == none.diverged_rule[0] == ""
    assert default.diverged_rule[1] in ("objective", "parameters")
    assert none.diverged_rule[1] == "non-finite"
    assert default.diverged_round[1] < none.diverged_round[1]
    assert default.diverged_rule.shape == (2,) and set(default.diverged_rule) <= {""} | set(DIVERGENCE_RULES)

    slow = np.array([stable, UNSTABLE.get(name, 10 * stable)])
    tight = _run(name, pb, init, slow, n_rounds=300, blowup=10)
    usual = _run(name, pb, init, slow, n_rounds=300, blowup=DEFAULT_BLOWUP)
    assert tight.diverged_rule[1] != "" and usual.diverged_rule[1] != ""
    assert 0 <= tight.diverged_round[1] < usual.diverged_round[1]
    # the stable replica is the same whatever the factor (up to the last bits of a compacted batch)
    np.testing.assert_allclose(tight.theta[0], usual.theta[0], rtol=1e-10, atol=1e-12)


def test_default_blowup_is_the_documented_constant():
    assert DEFAULT_BLOWUP == BLOWUP == 1e6
    assert HISTORY_FIELDS[-2:] == ("assignments", "client_losses")
