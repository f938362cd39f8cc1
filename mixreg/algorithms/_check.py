"""The contract every registered algorithm keeps, as a function a user runs on their own driver.

:func:`check_algorithm` is to an algorithm what scikit-learn's ``check_estimator`` is to an
estimator: it runs every check of the contract of :mod:`mixreg.algorithms` on small problems it
builds itself and raises :class:`ContractViolation`, naming the algorithm, the check and what was
wrong, at the first check that fails.  :func:`algorithm_checks` yields the same checks one by one
(scikit-learn's ``parametrize_with_checks``) so that a test suite runs one test per check; the
repository's own contract suite, ``tests/algorithms/test_algorithms_contract.py``, is exactly
that over :data:`mixreg.algorithms.ALGORITHMS`.

The checks (:data:`CHECKS`), in the order they run (a check relies only on those before it: from
``same_generator_same_result`` on, checks run twice from one initial point, which
``inputs_untouched`` guarantees is unchanged, and compare runs, which determinism makes
meaningful); the last column is the driver keyword a check
needs (it is skipped, and reported as skipped, when the driver's signature lacks it):

==============================  ======================================================  ===========
check                           what it asks of the driver                              keyword
==============================  ======================================================  ===========
``entry``                       the entry has a name, a callable ``run``, a ``source``
                                and a ``sends``
``common_fields``               a frozen :class:`DriverResult` with every common field
                                of the right shape and dtype; no divergence on a
                                stable run; ``"completed T rounds"``; the entry's
                                ``communication`` gives two finite counts >= 0
``inputs_untouched``            init, the step sizes and the problem's arrays are not
                                modified; the result does not share init's memory
``same_generator_same_result``  the same Generator state gives the same result
                                (float32: float32 parameters); an entry with
                                ``uses_rng=False`` gives it under any Generator
``history``                     ``history=True`` gives a :class:`History` (loss of      ``history``
                                shape (T, B), matched max distance of shape (T + 1, B)
                                that shrinks from a start near the truth); recording
                                it changes no result
``single_replica_is_batch``     init of shape (k, d) is the batch path with B = 1
``batch_equals_separate_runs``  replica ``b`` of a batch is the run of replica ``b``
                                alone (one step size each)
``diverging_replica``           a replica at step 1e6 is frozen at finite parameters,
                                flagged, has loss ``nan``, is never the best replica,
                                and leaves the others exactly as they are alone; when
                                every replica diverges the loop stops and says so
``finite_blowup``               a replica growing geometrically is flagged while its
                                parameters are still finite (before round 150)
``blowup_none``                 ``blowup=None`` (only non-finite values count) never    ``blowup``
                                flags a finite run and changes no stable run
``tolerance_stops``             ``tol`` stops early with the reason                     ``tol``
                                ``"converged: every replica moved less than tol=..."``,
                                at the parameters of a run of that many rounds
``bad_input``                   bad problem, init, step size, rounds or tolerance
                                raise ``TypeError`` / ``ValueError`` naming the
                                parameter
``precondition_is_exact``       the entry's ``precondition`` holds on a problem's
                                sizes exactly when the driver accepts them
``plain_server_step``           ``server_step=ServerStep()`` is the default bit for     ``server_step``
                                bit; a server step that never moves changes the result
``constant_schedule``           ``schedule=lambda t: 1.0`` is the default bit for bit;  ``schedule``
                                ``lambda t: 0.5`` changes the result
==============================  ======================================================  ===========

A check needs one stable step size (``step_size``) and, for ``finite_blowup``, one at which the
method grows geometrically (``unstable_step_size``); the built-in algorithms' values, and the
checks that cannot apply to them with the reason (FedProx's proximal step cannot diverge), are
data beside the registry, in :data:`CHECK_SETTINGS`, as scikit-learn keeps its estimators' test
parameters and expected failures.

The keywords a driver takes are read from :func:`inspect.signature` of the entry's ``run`` (which
follows :func:`functools.wraps` to the driver), less those the entry fixes (its ``options``).
"""

from __future__ import annotations

import dataclasses
from typing import Any
from collections.abc import Callable, Iterable, Iterator, Mapping
import functools
import inspect
import re

import numpy as np

from ..problems import Problem, make_problem
from ._driver import DriverResult, History
from ._registry import Algorithm, get_algorithm
from ._server import ServerStep

__all__ = ["CHECKS", "CHECK_SETTINGS", "CheckReport", "CheckSkipped", "ContractViolation", "algorithm_checks",
           "check_algorithm"]


#: Every check's name, mapped to the driver keyword it needs (``None``: every driver).
CHECKS = {
    "entry": None,
    "common_fields": None,
    "inputs_untouched": None,
    "same_generator_same_result": None,
    "history": "history",
    "single_replica_is_batch": None,
    "batch_equals_separate_runs": None,
    "diverging_replica": None,
    "finite_blowup": None,
    "blowup_none": "blowup",
    "tolerance_stops": "tol",
    "bad_input": None,
    "precondition_is_exact": None,
    "plain_server_step": "server_step",
    "constant_schedule": "schedule",
}

_STABLE_PROX = "the exact proximal step is stable for every step size; divergence is impossible"

#: The built-in algorithms' check settings: ``step_size`` (stable; default 0.1),
#: ``unstable_step_size`` (a step at which the method grows geometrically; default 10 times the
#: stable one) and ``skip`` (checks that cannot apply, with the reason).
CHECK_SETTINGS: dict[str, dict[str, Any]] = {
    "ifca": dict(step_size=0.3, unstable_step_size=3.0),
    "ifca_data": dict(step_size=0.3, unstable_step_size=3.0),
    "ifca_model": dict(step_size=0.1, unstable_step_size=1.5),
    "fedavg": dict(step_size=0.5, unstable_step_size=4.0),
    "fedprox": dict(step_size=2.0, skip={"diverging_replica": _STABLE_PROX, "finite_blowup": _STABLE_PROX}),
    "oneshot": dict(step_size=0.5),
    "ifca_points": dict(step_size=0.5, unstable_step_size=6.0),
    "kfed": dict(step_size=0.5),
    "pacfl": dict(step_size=0.5),
    "pacfl_x": dict(step_size=0.5),
    "fesem": dict(step_size=0.3),
    "two_phase": dict(step_size=0.5, unstable_step_size=4.0),
}

_ROUNDS = 15  # rounds of a plain run
_LONG = 300  # rounds of a run that must diverge
_HUGE_STEP = 1e6  # a step at which every gradient method diverges in its first rounds
_SEEDS = (3, 4, 11)  # the problem's, the initial parameters' and the driver's Generator seeds


class ContractViolation(AssertionError):
    """An algorithm broke a check of the contract.

    Attributes
    ----------
    algorithm : str
        The algorithm's name.
    check : str
        The check (a key of :data:`CHECKS`).
    detail : str
        What was wrong.
    """

    def __init__(self, algorithm: str, check: str, detail: str) -> None:
        self.algorithm, self.check, self.detail = algorithm, check, detail
        super().__init__(f"algorithm {algorithm!r} fails check {check!r}: {detail}")


class CheckSkipped(Exception):
    """A check does not apply: the driver lacks the keyword it needs, or its settings skip it.

    Attributes
    ----------
    check : str
    reason : str
    """

    def __init__(self, check: str, reason: str) -> None:
        self.check, self.reason = check, reason
        super().__init__(f"check {check!r} skipped: {reason}")


class CheckReport(list):
    """The names of the checks an algorithm passed, in order (a list), and ``skipped``: the checks
    that did not apply, mapped to the reason."""

    def __init__(self, passed: Iterable[str] = (), skipped: Mapping[str, str] | None = None) -> None:
        super().__init__(passed)
        self.skipped = dict(skipped or {})


def check_algorithm(algorithm: Algorithm | str, *, problem: Problem | None = None,
                    rng: int | np.random.Generator | None = None, step_size: float | None = None,
                    unstable_step_size: float | None = None, skip: Mapping[str, str] | None = None) -> CheckReport:
    """Run every check of the algorithms' contract on ``algorithm``; raise at the first it fails.

    Run it on your own driver before registering it (the checks are listed in the module
    docstring).  A bare driver function is checked through its entry::

        Algorithm(name="mine", run=my_driver, source="...", sends="...", uses_rng=False)

    where ``my_driver(problem, init, step_size, *, n_rounds, rng=None, tol=None, history=False)``
    returns a :class:`DriverResult` (see "Writing your own driver" in :mod:`mixreg.algorithms`).

    Parameters
    ----------
    algorithm : Algorithm or str
        An entry, registered or not, or the name of a registered one.
    problem : Problem, optional
        The problem of every check but ``precondition_is_exact`` (which builds problems of
        several sizes); default: ``m = 12`` clients, ``k = 2``, ``n = 15``, ``d = 4``,
        ``sigma = 0.2``, Gaussian ``theta*`` of scale 1.5, in float64 (float32 for
        ``same_generator_same_result``).  Initial parameters are ``theta*`` plus Gaussian noise of
        standard deviation 0.4, a start from which a stable step must approach the truth.
    rng : int or numpy.random.Generator, optional
        Source of the checks' seeds (the problem's, the initial parameters' and the driver's);
        default fixed seeds.
    step_size : float > 0, optional
        A stable step size; default :data:`CHECK_SETTINGS`' for a built-in name, else 0.1.
    unstable_step_size : float > 0, optional
        A step size at which the method grows geometrically (``finite_blowup``); default
        :data:`CHECK_SETTINGS`' for a built-in name, else ten times ``step_size``.
    skip : dict of str to str, optional
        Checks (keys of :data:`CHECKS`) that cannot apply to this algorithm, with the reason,
        e.g. ``{"diverging_replica": "the proximal step is stable for every step size"}``;
        default :data:`CHECK_SETTINGS`' for a built-in name.

    Returns
    -------
    CheckReport
        The names of the checks passed (a list); ``.skipped`` maps the others to the reason.

    Raises
    ------
    ContractViolation
        An ``AssertionError`` naming the algorithm, the check and what was wrong (a driver that
        raises in a check is a violation too; its exception is the cause).

    See Also
    --------
    algorithm_checks : the same checks one by one, for a test suite.

    Examples
    --------
    Check a bare driver: FedAvg(1) of :func:`mixreg.algorithms.fedx` behind the contract's
    signature (it takes no ``blowup``, ``server_step`` or ``schedule``, so those checks are
    skipped):

    >>> from mixreg.algorithms import Algorithm, fedx
    >>> def fedavg1(problem, init, step_size, *, n_rounds, rng=None, tol=None, history=False):
    ...     return fedx(problem, init, step_size, n_rounds=n_rounds, tol=tol, history=history)
    >>> entry = Algorithm(name="fedavg1", run=fedavg1, source="FedAvg(1)", sends="one d-vector")
    >>> report = check_algorithm(entry, step_size=0.5, unstable_step_size=4.0)
    >>> len(report), sorted(report.skipped)
    (12, ['blowup_none', 'constant_schedule', 'plain_server_step'])
    """
    passed, skipped = [], {}
    for name, check in algorithm_checks(algorithm, problem=problem, rng=rng, step_size=step_size,
                                        unstable_step_size=unstable_step_size, skip=skip):
        try:
            check()
        except CheckSkipped as exc:
            skipped[name] = exc.reason
        else:
            passed.append(name)
    return CheckReport(passed, skipped)


def algorithm_checks(algorithm: Algorithm | str, *, problem: Problem | None = None,
                     rng: int | np.random.Generator | None = None, step_size: float | None = None,
                     unstable_step_size: float | None = None,
                     skip: Mapping[str, str] | None = None) -> Iterator[tuple[str, Callable[[], None]]]:
    """The checks of :func:`check_algorithm`, one by one, for a test suite to parametrize over.

    Parameters
    ----------
    algorithm, problem, rng, step_size, unstable_step_size, skip
        As for :func:`check_algorithm`.

    Returns
    -------
    iterator of (name, check)
        ``name`` a key of :data:`CHECKS`, in order; ``check()`` returns ``None`` when the algorithm
        passes, raises :class:`ContractViolation` when it fails and :class:`CheckSkipped` when the
        check does not apply.  The checks of one
        call share their problems and reference runs, built on first use.  The arguments are
        validated at the call, before any check runs.

    Examples
    --------
    One test per check (pytest)::

        @pytest.mark.parametrize("check", [pytest.param(check, id=name)
                                           for name, check in algorithm_checks(MINE)])
        def test_contract(check):
            try:
                check()
            except CheckSkipped as exc:
                pytest.skip(str(exc))

    >>> [name for name, _ in algorithm_checks("fedavg")][:3]
    ['entry', 'common_fields', 'inputs_untouched']
    """
    algorithm = _check_entry(algorithm)
    settings = CHECK_SETTINGS.get(algorithm.name, CHECK_SETTINGS.get(algorithm.base or "", {}))  # a variant: its base's
    step = _positive("step_size", step_size if step_size is not None else settings.get("step_size", 0.1))
    unstable = _positive("unstable_step_size", unstable_step_size if unstable_step_size is not None
                         else settings.get("unstable_step_size", 10 * step))
    skip = settings.get("skip", {}) if skip is None else skip
    if not isinstance(skip, dict) or not all(isinstance(v, str) for v in skip.values()):
        raise TypeError(f"skip must be a dict of check names to reasons (str), got {skip!r}")
    unknown = sorted(set(skip) - set(CHECKS))
    if unknown:
        raise ValueError(f"skip names unknown checks {unknown}; checks: {list(CHECKS)}")
    if problem is not None and not isinstance(problem, Problem):
        raise TypeError(f"problem must be a mixreg Problem or None, got {type(problem).__name__}")
    seeds = _SEEDS if rng is None else tuple(int(s) for s in np.random.default_rng(rng).integers(2**32, size=3))
    context = _Context(algorithm, problem, seeds, step, unstable)
    return ((name, _check(name, keyword, skip.get(name), context)) for name, keyword in CHECKS.items())


# --------------------------------------------------------------------------------------------
# The runner
# --------------------------------------------------------------------------------------------


def _check_entry(algorithm) -> Algorithm:
    if isinstance(algorithm, str):
        return get_algorithm(algorithm)
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"algorithm must be an Algorithm or a registered name, got {type(algorithm).__name__}")
    return algorithm


def _positive(name, value):
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return value


def _keywords(algorithm):
    """The keywords the entry's driver takes and the entry leaves free."""
    try:
        params = inspect.signature(algorithm.run).parameters
    except (TypeError, ValueError):
        return frozenset()
    named = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return frozenset(named - set(algorithm.options))


class _Context:
    """What the checks of one algorithm share: its entry, step sizes, problems and a runner."""

    def __init__(self, algorithm, problem, seeds, step, unstable):
        self.algorithm = algorithm
        self.given = problem
        self.problem_seed, self.init_seed, self.run_seed = seeds
        self.step = step
        self.unstable = unstable
        self.keywords = _keywords(algorithm)
        self.history_kw = {"history": True} if "history" in self.keywords else {}

    def make_problem(self, dtype=np.float64, **sizes):
        sizes = {**dict(m=12, k=2, n=15, d=4), **sizes}
        return make_problem(**sizes, sigma=0.2, scale=1.5, protocol="gaussian",
                            rng=np.random.default_rng(self.problem_seed), dtype=dtype)

    @functools.cached_property
    def problem(self):
        return self.given if self.given is not None else self.make_problem()

    @functools.cached_property
    def problem32(self):
        return self.given if self.given is not None else self.make_problem(np.float32)

    def inits(self, B, problem=None):
        pb = self.problem if problem is None else problem
        noise = np.random.default_rng(self.init_seed).standard_normal((B, pb.k, pb.d))
        return pb.theta_star[None] + 0.4 * noise

    def run(self, init, step, *, problem=None, seed=None, **kwargs):
        kwargs.setdefault("n_rounds", _ROUNDS)
        rng = np.random.default_rng(self.run_seed if seed is None else seed)
        return self.algorithm.run(self.problem if problem is None else problem, init, step, rng=rng, **kwargs)

    @functools.cached_property
    def reference(self):
        """Three replicas from :meth:`inits`, at the stable step, :data:`_ROUNDS` rounds."""
        return self.run(self.inits(3), self.step)

    @functools.cached_property
    def unstable_run(self):
        """Two replicas from :meth:`inits`, at the stable and the unstable step, :data:`_LONG`
        rounds (with the history, if the driver records one)."""
        return self.run(self.inits(2), np.array([self.step, self.unstable]), n_rounds=_LONG, **self.history_kw)


def _check(name, keyword, skip_reason, context):
    body = _BODIES[name]

    def check():
        if skip_reason is not None:
            raise CheckSkipped(name, skip_reason)
        if keyword is not None and keyword not in context.keywords:
            raise CheckSkipped(name, f"the driver takes no {keyword!r} keyword")
        try:
            body(context)
        except (ContractViolation, CheckSkipped):
            raise
        except AssertionError as exc:
            raise ContractViolation(context.algorithm.name, name, str(exc).strip()) from exc
        except Exception as exc:
            raise ContractViolation(context.algorithm.name, name,
                                    f"the driver raised {type(exc).__name__}: {exc}") from exc

    check.__name__ = check.__qualname__ = f"check_{name}"
    check.__doc__ = f"Check {name!r} of the contract on algorithm {context.algorithm.name!r}."
    return check


def _require(condition, message):
    """``AssertionError(message)`` unless ``condition`` (an ``assert`` that ``-O`` keeps)."""
    if not condition:
        raise AssertionError(message)


def _shape(result, field, shape, dtype=None):
    value = getattr(result, field)
    got = np.shape(value)
    _require(got == shape, f"result.{field} has shape {got}, expected {shape}")
    if dtype is not None:
        _require(np.asarray(value).dtype == dtype, f"result.{field} has dtype {np.asarray(value).dtype}, "
                                                   f"expected {np.dtype(dtype)}")


def _rule(result):
    """The result's ``diverged_rule`` (which divergence rule fired), or ``None`` if it has none."""
    rule = getattr(result, "diverged_rule", None)
    return None if rule is None else np.asarray(rule)


# --------------------------------------------------------------------------------------------
# The checks
# --------------------------------------------------------------------------------------------


def _entry(ctx):
    alg = ctx.algorithm
    _require(isinstance(alg.name, str) and alg.name, f"name must be a non-empty str, got {alg.name!r}")
    _require(callable(alg.run), "run is not callable")
    for field in ("source", "sends"):
        value = getattr(alg, field)
        _require(isinstance(value, str) and value.strip(), f"{field} must say it (a non-empty str), got {value!r}")
    for field in ("communication", "precondition"):
        value = getattr(alg, field)
        _require(value is None or callable(value), f"{field} must be callable or None, got {value!r}")


def _common_fields(ctx):
    pb, res = ctx.problem, ctx.reference
    B, k, d, m = 3, pb.k, pb.d, pb.m
    _require(isinstance(res, DriverResult), f"the result is a {type(res).__name__}, not a DriverResult")
    _shape(res, "theta", (B, k, d), pb.dtype)
    _shape(res, "assignments", (B, m), np.int64)
    _shape(res, "train_loss", (B,))
    _require(np.isfinite(res.train_loss).all(), f"train_loss of a stable run is not finite: {res.train_loss}")
    _shape(res, "diverged", (B,), np.bool_)
    _require(not res.diverged.any(), f"a stable run diverged: diverged = {res.diverged}")
    _shape(res, "diverged_round", (B,))
    _require((res.diverged_round == -1).all(), f"diverged_round of a stable run is {res.diverged_round}, not -1")
    _shape(res, "step_sizes", (B,))
    _require(np.array_equal(res.step_sizes, np.full(B, ctx.step)),
             f"step_sizes is {res.step_sizes}, not the step size {ctx.step} of each replica")
    _require(res.n_rounds == _ROUNDS, f"n_rounds is {res.n_rounds} after a run of {_ROUNDS} rounds")
    _require(res.stop_reason == f"completed {_ROUNDS} rounds",
             f"stop_reason is {res.stop_reason!r}, not 'completed {_ROUNDS} rounds'")
    _require(res.wall_time > 0, f"wall_time is {res.wall_time}, not > 0")
    rule = _rule(res)
    if rule is not None:
        _require(rule.shape == (B,) and (rule == "").all(), f"diverged_rule of a stable run is {rule}, not ''")
    try:
        res.n_rounds = 3
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("the result is not frozen (setting n_rounds worked)")
    if ctx.algorithm.communication is not None:
        counts = ctx.algorithm.communication(pb, res, 0)
        _require(len(counts) == 2 and all(np.isfinite(c) and c >= 0 for c in counts),
                 f"communication(problem, result, 0) gives {counts!r}, not two finite counts >= 0")


def _history(ctx):
    pb = ctx.problem
    B, T = 3, _ROUNDS
    res = ctx.run(ctx.inits(B), ctx.step, history=True)
    h = res.history
    _require(isinstance(h, History), f"history=True gives history = {type(h).__name__}, not a History")
    _require(np.shape(h.loss) == (T, B), f"history.loss has shape {np.shape(h.loss)}, expected (T, B) = {(T, B)}")
    _require(np.isfinite(h.loss).all(), "history.loss of a stable run is not finite")
    _require(h.matched_max is not None and np.shape(h.matched_max) == (T + 1, B),
             f"history.matched_max has shape {np.shape(h.matched_max)}, expected (T + 1, B) = {(T + 1, B)}")
    # started near the truth with a stable step: every replica ends closer than it started
    _require((h.matched_max[-1] < h.matched_max[0]).all(),
             f"started near the truth at a stable step, replicas end no closer: matched max distance "
             f"{h.matched_max[0]} -> {h.matched_max[-1]}")
    assignments = getattr(h, "assignments", None)
    if assignments is not None:
        _require(np.shape(assignments) == (T, B, pb.m) and np.asarray(assignments).dtype == np.int64,
                 f"history.assignments has shape {np.shape(assignments)}, dtype {np.asarray(assignments).dtype}; "
                 f"expected (T, B, m) = {(T, B, pb.m)}, int64")
        _require(((assignments >= -1) & (assignments < pb.k)).all(), "history.assignments outside [-1, k)")
    client_losses = getattr(h, "client_losses", None)
    if client_losses is not None:
        _require(np.shape(client_losses) == (T, B, pb.m),
                 f"history.client_losses has shape {np.shape(client_losses)}, expected (T, B, m) = {(T, B, pb.m)}")
    try:  # everything it can record: this package's drivers take "all" (a user's may take booleans only)
        full = ctx.run(ctx.inits(B), ctx.step, history="all")
    except (TypeError, ValueError) as exc:
        _require("history" in str(exc), f"history='all' raised {type(exc).__name__}: {exc}")
        full = None
    if full is not None:
        hf = full.history
        theta = getattr(hf, "theta", None)
        if theta is not None:
            k, d = ctx.inits(B).shape[1:]
            _require(np.shape(theta) == (T + 1, B, k, d),
                     f"history.theta has shape {np.shape(theta)}, expected (T + 1, B, k, d) = {(T + 1, B, k, d)}")
            np.testing.assert_allclose(theta[-1], full.theta, rtol=0, atol=0,
                                       err_msg="history.theta[-1] is not the final theta")
        assignments = getattr(hf, "assignments", None)
        _require(assignments is None or np.shape(assignments) == (T, B, pb.m),
                 f"history='all': assignments of shape {np.shape(assignments)}, expected (T, B, m) = {(T, B, pb.m)}")
        for name in ("misclustered_clients", "misclustered_data"):
            values = getattr(hf, name, None)
            _require(values is None or (np.shape(values) == (T, B) and np.all((values >= 0) & (values <= 1))),
                     f"history='all': {name} of shape {np.shape(values)} or outside [0, 1]; expected (T, B) = {(T, B)}")
        np.testing.assert_array_equal(full.theta, res.theta, err_msg="recording the whole history changed theta")
    plain = ctx.reference
    _require(plain.history is None, f"history=False gives history = {type(plain.history).__name__}, not None")
    np.testing.assert_array_equal(res.theta, plain.theta, err_msg="recording the history changed theta")
    np.testing.assert_array_equal(res.assignments, plain.assignments,
                                  err_msg="recording the history changed the assignments")


def _single_replica_is_batch(ctx):
    init = ctx.inits(1)
    a = ctx.run(init, ctx.step)
    b = ctx.run(init[0], ctx.step)  # (k, d) is B = 1
    np.testing.assert_array_equal(a.theta, b.theta, err_msg="init of shape (k, d) is not the run with B = 1")
    np.testing.assert_array_equal(a.assignments, b.assignments,
                                  err_msg="init of shape (k, d) is not the run with B = 1 (assignments)")


def _batch_equals_separate_runs(ctx):
    init = ctx.inits(3)
    steps = ctx.step * np.array([1.0, 0.5, 0.25])
    batch = ctx.run(init, steps)
    for b in range(3):
        alone = ctx.run(init[b : b + 1], steps[b])
        np.testing.assert_allclose(batch.theta[b], alone.theta[0], rtol=1e-10, atol=1e-12,
                                   err_msg=f"replica {b} of a batch of 3 differs from its run alone (theta)")
        np.testing.assert_array_equal(batch.assignments[b], alone.assignments[0],
                                      err_msg=f"replica {b} of a batch of 3 differs from its run alone (assignments)")
        _require(np.isclose(batch.train_loss[b], alone.train_loss[0], rtol=1e-10, atol=0),
                 f"replica {b} of a batch of 3 differs from its run alone: train_loss {batch.train_loss[b]} vs "
                 f"{alone.train_loss[0]}")


def _inputs_untouched(ctx):
    pb = ctx.problem
    init = ctx.inits(2)
    steps = ctx.step * np.array([1.0, 0.5])
    arrays = {name: getattr(pb, name) for name in ("X", "y", "offsets", "labels", "theta_star")}
    saved = {name: np.array(a, copy=True) for name, a in arrays.items()}
    saved_init, saved_steps = init.copy(), steps.copy()
    res = ctx.run(init, steps)
    np.testing.assert_array_equal(init, saved_init, err_msg="the driver modified init")
    np.testing.assert_array_equal(steps, saved_steps, err_msg="the driver modified step_size")
    for name, a in arrays.items():
        np.testing.assert_array_equal(a, saved[name], err_msg=f"the driver modified problem.{name}")
    _require(not np.shares_memory(res.theta, init), "result.theta shares memory with init")


def _diverging_replica(ctx):
    init = ctx.inits(3)
    steps = np.array([ctx.step, _HUGE_STEP, ctx.step / 2])
    res = ctx.run(init, steps, n_rounds=_LONG)
    _require(res.diverged.tolist() == [False, True, False],
             f"at step sizes {steps.tolist()}, diverged is {res.diverged.tolist()}, not [False, True, False]")
    _require(res.diverged_round[1] >= 0 and (res.diverged_round[[0, 2]] == -1).all(),
             f"diverged_round is {res.diverged_round.tolist()}: the diverged replica's round, -1 for the others")
    _require(np.isfinite(res.theta).all(), "a diverged replica must keep its last finite parameters (frozen)")
    _require(np.isnan(res.train_loss[1]) and np.isfinite(res.train_loss[[0, 2]]).all(),
             f"train_loss is {res.train_loss.tolist()}: nan for the diverged replica only")
    _require(res.best_replica() in (0, 2), f"best_replica() chose the diverged replica ({res.best_replica()})")
    _require(res.best_replica(among=[1]) is None, "best_replica(among=[the diverged replica]) is not None")
    rule = _rule(res)
    if rule is not None:
        _require(rule[1] != "" and (rule[[0, 2]] == "").all(),
                 f"diverged_rule is {rule.tolist()}: a rule for the diverged replica, '' for the others")
    # the other replicas are exactly what they would be without the diverging one
    alone = ctx.run(init[[0, 2]], steps[[0, 2]], n_rounds=_LONG)
    np.testing.assert_allclose(res.theta[[0, 2]], alone.theta, rtol=1e-10, atol=1e-12,
                               err_msg="a diverging replica changed the others' parameters")
    # every replica diverged: the loop stops and says so
    res = ctx.run(init[1:2], _HUGE_STEP, n_rounds=_LONG)
    _require(res.diverged.all() and res.stop_reason.startswith("all replicas diverged"),
             f"with every replica diverged, diverged = {res.diverged.tolist()} and stop_reason = "
             f"{res.stop_reason!r} (expected 'all replicas diverged ...')")
    _require(res.n_rounds == res.diverged_round[0] + 1 < _LONG,
             f"with every replica diverged in round {res.diverged_round[0]}, the loop ran {res.n_rounds} rounds")
    _require(res.best_replica() is None, "best_replica() is not None when every replica diverged")


def _finite_blowup(ctx):
    """A replica growing geometrically is flagged long before it overflows, and never chosen."""
    res = ctx.unstable_run
    _require(res.diverged.tolist() == [False, True],
             f"at step sizes {[ctx.step, ctx.unstable]}, diverged is {res.diverged.tolist()}, not [False, True]")
    # flagged while still finite: the blow-up rule, not overflow, caught it
    _require(res.diverged_round[1] < _LONG // 2,
             f"the geometric blow-up was flagged in round {res.diverged_round[1]}, not before round {_LONG // 2}")
    _require(np.isfinite(res.theta).all() and np.abs(res.theta[1]).max() < 1e10,
             f"the blown-up replica was frozen at parameters of size {np.abs(res.theta[1]).max():.3g}, not < 1e10")
    _require(res.best_replica() == 0, f"best_replica() is {res.best_replica()}, not the stable replica 0")
    rule = _rule(res)
    if rule is not None:
        _require(rule[1] in ("objective", "parameters"),
                 f"diverged_rule of a finite blow-up is {rule[1]!r}, not 'objective' or 'parameters'")


def _blowup_none(ctx):
    ref = ctx.unstable_run  # under the default factor
    rounds = _ROUNDS
    if ref.diverged[1]:
        rule = _rule(ref)
        non_finite = rule is not None and rule[1] == "non-finite"
        rounds = int(ref.diverged_round[1]) + (0 if non_finite else 1)  # up to the finite blow-up
    if rounds >= 1:
        res = ctx.run(ctx.inits(2), np.array([ctx.step, ctx.unstable]), n_rounds=rounds, blowup=None)
        _require(np.isfinite(res.theta).all() and not res.diverged.any(),
                 f"blowup=None flagged a finite run of {rounds} rounds: diverged = {res.diverged.tolist()}")
    res = ctx.run(ctx.inits(3), ctx.step, blowup=None)
    np.testing.assert_array_equal(res.theta, ctx.reference.theta, err_msg="blowup=None changed a stable run")


def _same_generator_same_result(ctx):
    pb = ctx.problem32
    init = ctx.inits(2, pb)
    a = ctx.run(init, ctx.step, problem=pb, **ctx.history_kw)
    b = ctx.run(init, ctx.step, problem=pb, **ctx.history_kw)
    for field in ("theta", "assignments", "train_loss", "diverged"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field),
                                      err_msg=f"two runs from the same Generator state differ in {field}")
    if ctx.history_kw:
        np.testing.assert_array_equal(a.history.loss, b.history.loss,
                                      err_msg="two runs from the same Generator state differ in history.loss")
    _require(a.theta.dtype == pb.dtype, f"a {pb.dtype} problem gives {a.theta.dtype} parameters")
    if not ctx.algorithm.uses_rng:
        c = ctx.run(init, ctx.step, problem=pb, seed=ctx.run_seed + 1)
        np.testing.assert_array_equal(a.theta, c.theta,
                                      err_msg="the entry says uses_rng=False, but another Generator changes theta")


def _tolerance_stops(ctx):
    res = ctx.run(ctx.inits(2), ctx.step, n_rounds=500, tol=1e-9)
    _require(res.stop_reason.startswith("converged: every replica moved less than tol=1e-09"),
             f"with tol=1e-9, stop_reason is {res.stop_reason!r}, not 'converged: every replica moved less than "
             f"tol=1e-09 ...'")
    _require(res.n_rounds < 500, f"with tol=1e-9 the loop ran all {res.n_rounds} rounds")
    full = ctx.run(ctx.inits(2), ctx.step, n_rounds=res.n_rounds)
    np.testing.assert_array_equal(res.theta, full.theta,
                                  err_msg=f"stopping by tol after {res.n_rounds} rounds is not a run of that many "
                                          f"rounds")


def _bad_inputs(pb):
    """(what, arguments replaced, exception, message pattern, keyword needed) on problem ``pb``."""
    return (
        ("a problem that is no Problem", dict(problem="not a problem"), TypeError,
         "problem must be a mixreg Problem", None),
        ("init of shape (2, 3)", dict(init=np.zeros((2, 3))), ValueError, r"init must have shape \(B, k, d\)", None),
        ("text init", dict(init=[[["a"]]]), ValueError, "init", None),
        ("nan init", dict(init=np.full((1, pb.k, pb.d), np.nan)), ValueError, "init", None),
        ("step_size = -1", dict(step=-1.0), ValueError, "step_size must be finite and > 0", None),
        ("5 step sizes for 2 replicas", dict(step=np.ones(5)), ValueError,
         r"step_size must be a scalar or an array of shape \(B,\)", None),
        ("n_rounds = 0", dict(n_rounds=0), ValueError, "n_rounds", None),
        ("tol = -1", dict(tol=-1.0), ValueError, "tol", "tol"),
    )


def _bad_input(ctx):
    pb = ctx.problem
    for what, change, exc, pattern, keyword in _bad_inputs(pb):
        if keyword is not None and keyword not in ctx.keywords:
            continue
        args = {**dict(problem=pb, init=ctx.inits(2), step=ctx.step, n_rounds=5), **change}
        try:
            ctx.run(args.pop("init"), args.pop("step"), **args)
        except Exception as error:  # noqa: BLE001 -- which exception is what is checked
            _require(isinstance(error, exc) and re.search(pattern, str(error)),
                     f"{what} raised {type(error).__name__}({str(error)!r}), expected {exc.__name__} matching "
                     f"{pattern!r}")
        else:
            raise AssertionError(f"{what} was accepted without an error (expected {exc.__name__} matching "
                                 f"{pattern!r})")


def _precondition_is_exact(ctx):
    """A precondition holds on a problem's (d, k, min n_i) exactly when the driver accepts its sizes
    (a comparison then skips the method, recording why)."""
    precondition = ctx.algorithm.precondition
    for d, n in ((1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (4, 2)):
        pb = ctx.make_problem(m=6, n=n, d=d)
        unmet = None if precondition is None else precondition(d=pb.d, k=pb.k, n_min=int(pb.sizes.min()))
        try:
            ctx.run(ctx.inits(1, pb), ctx.step, problem=pb, n_rounds=2)
            refused = None
        except ValueError as exc:
            refused = exc
        _require((unmet is None) == (refused is None),
                 f"on d = {d}, min n_i = {n}: precondition says {unmet}, driver "
                 + ("accepts the problem" if refused is None else f"refuses it ({refused})"))


class _Still(ServerStep):
    """A server step that never moves the models (a driver that honours ``server_step`` changes)."""

    name = "still"

    def gradient(self, theta, grad, step, *, t, state, rows):
        return theta.copy()


def _plain_server_step(ctx):
    plain = ctx.reference
    res = ctx.run(ctx.inits(3), ctx.step, server_step=ServerStep())
    for field in ("theta", "assignments", "train_loss"):
        np.testing.assert_array_equal(getattr(res, field), getattr(plain, field),
                                      err_msg=f"server_step=ServerStep() changed {field}")
    still = ctx.run(ctx.inits(3), ctx.step, server_step=_Still())
    _require(not np.array_equal(still.theta, plain.theta),
             "a server step that never moves the models gave the default result: server_step is ignored")


def _constant_schedule(ctx):
    plain = ctx.reference
    res = ctx.run(ctx.inits(3), ctx.step, schedule=lambda t: 1.0)
    for field in ("theta", "assignments", "train_loss"):
        np.testing.assert_array_equal(getattr(res, field), getattr(plain, field),
                                      err_msg=f"schedule=lambda t: 1.0 changed {field}")
    half = ctx.run(ctx.inits(3), ctx.step, schedule=lambda t: 0.5)
    _require(not np.array_equal(half.theta, plain.theta),
             "schedule=lambda t: 0.5 gave the default result: schedule is ignored")


_BODIES = {
    "entry": _entry,
    "common_fields": _common_fields,
    "history": _history,
    "single_replica_is_batch": _single_replica_is_batch,
    "batch_equals_separate_runs": _batch_equals_separate_runs,
    "inputs_untouched": _inputs_untouched,
    "diverging_replica": _diverging_replica,
    "finite_blowup": _finite_blowup,
    "blowup_none": _blowup_none,
    "same_generator_same_result": _same_generator_same_result,
    "tolerance_stops": _tolerance_stops,
    "bad_input": _bad_input,
    "precondition_is_exact": _precondition_is_exact,
    "plain_server_step": _plain_server_step,
    "constant_schedule": _constant_schedule,
}
