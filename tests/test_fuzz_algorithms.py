"""Bad and edge inputs of every registered algorithm, through the registry's replica driver.

Every algorithm of :data:`mixreg.algorithms.ALGORITHMS` is called as the experiments call it,
``run(problem, init, step_size, *, n_rounds, rng)``.  A bad argument (beyond those of the contract
suite, ``tests/algorithms/test_algorithms_contract.py``) must raise a ``TypeError`` or ``ValueError`` whose
message is one line naming the argument, raised by mixreg's own validation; a problem an
algorithm cannot handle is refused the same way, naming what is missing.  A legal edge problem
(``k = 1``, ``d = 1``, one replica, one round, ``sigma = 0``, one point per client, float32,
``m = k``) must run and give a result of the right shapes and dtype, finite, with every client
assigned to one of the ``k`` models (all to model 0 when ``k = 1``).
"""

from __future__ import annotations

import pathlib
import re
import warnings

import numpy as np
import pytest

import mixreg
from mixreg.algorithms import ALGORITHMS, get_algorithm
from mixreg.problems import make_problem

PACKAGE = pathlib.Path(mixreg.__file__).resolve().parent
NAMES = sorted(ALGORITHMS)
STEPS = {"ifca": 0.3, "ifca_data": 0.3, "ifca_model": 0.1, "fedavg": 0.5, "fedprox": 2.0, "oneshot": 0.5,
         "ifca_points": 0.5, "kfed": 0.5, "pacfl": 0.5, "pacfl_x": 0.5, "fesem": 0.3, "two_phase": 0.5}
#: The algorithms whose driver draws random numbers whatever the options (its seeding), so that
#: ``rng`` is required; the others take ``rng`` only for options not used here.
NEEDS_RNG = ("oneshot", "kfed", "two_phase")


def _problem(**change):
    args = dict(m=12, k=2, n=15, d=4, sigma=0.2, scale=1.5, protocol="gaussian", rng=np.random.default_rng(3))
    return make_problem(**{**args, **change})


PB = _problem()


def _inits(pb, B=2):
    return pb.theta_star[None] + 0.4 * np.random.default_rng(4).standard_normal((B, pb.k, pb.d))


def _call(name, **change):
    args = dict(problem=PB, init=_inits(PB), step=STEPS[name], n_rounds=5, rng=np.random.default_rng(1))
    args.update(change)
    return get_algorithm(name).run(args.pop("problem"), args.pop("init"), args.pop("step"), **args)


# --------------------------------------------------------------------------- bad input, every algorithm

# (id, keyword changes of the call, exception type, pattern of the message)
COMMON_BAD = [
    ("step-nan", dict(step=np.nan), ValueError, r"step_size must be finite and > 0, got \[nan, nan\]"),
    ("step-inf", dict(step=np.inf), ValueError, r"step_size must be finite and > 0, got \[inf, inf\]"),
    ("step-zero", dict(step=0.0), ValueError, r"step_size must be finite and > 0, got \[0\.0, 0\.0\]"),
    ("step-one-negative-replica", dict(step=np.array([0.1, -0.1])), ValueError,
     r"step_size must be finite and > 0, got \[0\.1, -0\.1\]"),
    ("step-text", dict(step="0.1"), TypeError,
     r"step_size must be a real number or an array of real numbers, got '0\.1'"),
    ("step-bool", dict(step=True), TypeError, r"step_size must be a real number .*got True"),
    ("n_rounds-fraction", dict(n_rounds=2.5), TypeError, r"n_rounds must be an integer, got 2\.5 \(float\)"),
    ("n_rounds-bool", dict(n_rounds=True), TypeError, r"n_rounds must be an integer, got True \(bool\)"),
    ("n_rounds-text", dict(n_rounds="5"), TypeError, r"n_rounds must be an integer, got '5' \(str\)"),
    ("n_rounds-negative", dict(n_rounds=-3), ValueError, r"n_rounds must be in \[1, inf\), got -3"),
    ("init-wrong-d", dict(init=np.zeros((2, 2, 5))), ValueError,
     r"init must have shape \(B, k, d\) or \(k, d\) with d=4, got \(2, 2, 5\)"),
    ("init-4d", dict(init=np.zeros((1, 2, 2, 4))), ValueError, r"init must have shape \(B, k, d\) .*got \(1, 2, 2, 4\)"),
    ("init-no-replica", dict(init=np.zeros((0, 2, 4))), ValueError, r"init must have shape \(B, k, d\) .*got \(0, 2, 4\)"),
    ("init-inf", dict(init=np.full((2, 2, 4), np.inf)), ValueError, r"init must contain only finite values"),
    ("init-complex", dict(init=np.zeros((2, 2, 4), dtype=complex)), ValueError,
     r"init must be a real-valued array \(float or integer entries\), got dtype complex128"),
    ("init-None", dict(init=None), ValueError, r"init must be a real-valued array .*got dtype object"),
    ("init-bool", dict(init=np.ones((2, 2, 4), dtype=bool)), ValueError, r"init must be a real-valued array .*got dtype bool"),
    ("tol-nan", dict(tol=np.nan), ValueError, r"tol must be finite, got nan"),
    ("tol-text", dict(tol="small"), TypeError, r"tol must be a real number, got 'small' \(str\)"),
    ("problem-None", dict(problem=None), TypeError, r"problem must be a mixreg Problem, got NoneType"),
    ("problem-arrays", dict(problem={"X": PB.X, "y": PB.y}), TypeError, r"problem must be a mixreg Problem, got dict"),
]
RNG_BAD = [
    ("rng-int", dict(rng=0), TypeError, r"rng must be a numpy\.random\.Generator .*got 0 \(int\)"),
    ("rng-text", dict(rng="seed"), TypeError, r"rng must be a numpy\.random\.Generator .*got 'seed' \(str\)"),
    ("rng-None", dict(rng=None), ValueError, r"rng is required"),
]
# Problems an algorithm cannot handle with its registered options: refused, naming what lacks.
REFUSED = [
    ("pacfl", "d=1", dict(d=1), r"p must be in \[1, 1\], got 3"),
    ("pacfl_x", "d=1", dict(d=1), r"matrix='x' with d=1: the only subspace is the whole line"),
    ("kfed", "n_i=1", dict(n=1, m=20), r"local_clusters must be in \[1, min n_i\] = \[1, 1\]"),
    ("two_phase", "d=1", dict(d=1), r"k must be at most d=1, got k=2"),
    ("two_phase", "n_i=1", dict(n=1, m=20), r"Phase 1 needs n_anchors=4 anchors and at least k=2 other clients with "
     r"n_i >= 2 .* the problem has 0 clients with n_i >= 2"),
    ("two_phase", "m=k", dict(m=2), r"Phase 1 needs n_anchors=4 anchors .* the problem has 2 clients with n_i >= 2"),
]


def _bad_cases():
    cases = [pytest.param(name, change, exc, pattern, id=f"{name}-{id}")
             for name in NAMES for id, change, exc, pattern in COMMON_BAD]
    cases += [pytest.param(name, change, exc, pattern, id=f"{name}-{id}")
              for name in NEEDS_RNG for id, change, exc, pattern in RNG_BAD]
    for name, id, change, pattern in REFUSED:
        pb = _problem(**change)
        cases.append(pytest.param(name, dict(problem=pb, init=_inits(pb)), ValueError, pattern, id=f"{name}-refuses-{id}"))
    return cases


@pytest.mark.parametrize("name,change,exc,pattern", _bad_cases())
def test_a_bad_argument_is_one_line_naming_it(name, change, exc, pattern):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a cast that drops data warns: it must be refused instead
        with pytest.raises((TypeError, ValueError)) as info:
            _call(name, **change)
    message = str(info.value)
    assert type(info.value) is exc, f"{type(info.value).__name__}: {message}"
    assert "\n" not in message and re.search(pattern, message), message
    last = pathlib.Path(info.traceback[-1].path).resolve()
    assert PACKAGE in last.parents, f"raised from {last}, not by mixreg's validation: {message}"


def test_every_registered_algorithm_is_in_the_bad_input_table():
    assert {case.values[0] for case in _bad_cases()} == set(ALGORITHMS)
    assert set(NEEDS_RNG) <= {name for name, alg in ALGORITHMS.items() if alg.uses_rng}


# --------------------------------------------------------------------------- legal edges, every algorithm

# (id, problem changes, replicas B, rounds); the algorithms that refuse a problem (REFUSED) skip it.
EDGES = [
    ("k=1", dict(k=1, m=4), 2, 5),
    ("d=1", dict(d=1), 2, 5),
    ("k=1-d=1", dict(k=1, d=1, m=3), 2, 5),
    ("B=1", {}, 1, 5),
    ("one-round", {}, 2, 1),
    ("sigma=0", dict(sigma=0.0), 2, 5),
    ("n_i=1", dict(n=1, m=20), 2, 5),
    ("float32", dict(dtype="float32"), 2, 5),
    ("m=k", dict(m=2), 2, 5),
]


def _edge_cases():
    refused = {(name, id) for name, id, _, _ in REFUSED}
    cases = []
    for name in NAMES:
        for id, change, B, rounds in EDGES:
            if (name, id) in refused or (name, id.replace("k=1-", "")) in refused:
                continue
            cases.append(pytest.param(name, change, B, rounds, id=f"{name}-{id}"))
    return cases


@pytest.mark.parametrize("name,change,B,rounds", _edge_cases())
def test_a_legal_edge_problem_runs_to_a_finite_result_of_the_right_shape(name, change, B, rounds):
    pb = _problem(**change)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a local solver may say it stopped early; not the point here
        res = _call(name, problem=pb, init=_inits(pb, B), n_rounds=rounds)
    assert res.theta.shape == (B, pb.k, pb.d) and res.theta.dtype == pb.dtype
    assert np.isfinite(res.theta).all() and np.isfinite(res.train_loss).all()
    assert res.train_loss.shape == res.diverged.shape == res.step_sizes.shape == (B,)
    assert not res.diverged.any()
    np.testing.assert_array_equal(res.step_sizes, np.full(B, STEPS[name]))
    assert res.assignments.shape == (B, pb.m) and res.assignments.dtype == np.int64
    assert ((res.assignments >= 0) & (res.assignments < pb.k)).all()
    if pb.k == 1:
        assert (res.assignments == 0).all()
    assert res.n_rounds == rounds and res.stop_reason == f"completed {rounds} rounds"
