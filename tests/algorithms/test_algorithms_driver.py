"""The shared driver machinery: the divergence rules of ``Replicas`` and the factor that sets
them, which rule a replica is flagged by, and the ``history=`` argument every driver reads."""

import time

import numpy as np
import pytest

from mixreg.algorithms import (
    DEFAULT_BLOWUP,
    DIVERGENCE_RULES,
    HISTORY_FIELDS,
    Replicas,
    check_blowup,
    check_history,
    step_size_groups,
)
from mixreg.algorithms._driver import common_fields


def _theta(B):
    return np.ones((B, 1, 1))


def _two_rounds(new, objective, **kw):
    """Round 0 at the reference (objective 1, parameters unchanged), then round 1 proposing
    ``new`` (B,) with ``objective`` (B,); returns the replicas."""
    B = len(new)
    theta = _theta(B)
    rep = Replicas(B, 5, theta0=theta, floors=(1.0, 1.0), **kw)
    rep.accept(theta, theta.copy(), np.ones(B), 0)
    rep.accept(theta, np.asarray(new, dtype=float).reshape(B, 1, 1), np.asarray(objective, dtype=float), 1)
    return rep, theta


def test_the_first_rule_in_the_documented_order_wins():
    assert DIVERGENCE_RULES == ("non-finite", "objective", "parameters")
    big = 1e7  # beyond 1e6 times the reference 1 (objective) and the limit 1e6 * max(1, 1) (parameters)
    rep, theta = _two_rounds(new=[np.nan, big, big, 2.0, 2.0], objective=[big, big, 1.0, big, 1.0])
    assert rep.diverged_rule.tolist() == ["non-finite", "objective", "parameters", "objective", ""]
    assert rep.diverged_round.tolist() == [1, 1, 1, 1, -1]
    assert theta[:4].ravel().tolist() == [1.0] * 4 and theta[4, 0, 0] == 2.0  # frozen before the update
    # a frozen replica keeps the rule that flagged it; a new one gets its own
    rep.accept(theta, np.full((5, 1, 1), np.inf), np.ones(5), 2)
    assert rep.diverged_rule.tolist() == ["non-finite", "objective", "parameters", "objective", "non-finite"]
    assert rep.diverged_round.tolist() == [1, 1, 1, 1, 2]


def test_blowup_none_counts_only_non_finite_values():
    rep, _ = _two_rounds(new=[np.nan, 1e300, 1.0], objective=[1.0, 1e300, np.inf], blowup=None)
    assert rep.diverged_rule.tolist() == ["non-finite", "", "non-finite"]
    assert rep.param_limit is None and rep.blowup is None


def test_a_smaller_factor_flags_a_smaller_growth():
    for blowup, rule in [(10.0, "parameters"), (DEFAULT_BLOWUP, "")]:
        rep, _ = _two_rounds(new=[20.0], objective=[1.0], blowup=blowup)
        assert rep.diverged_rule.tolist() == [rule], blowup
    rep, _ = _two_rounds(new=[1.0], objective=[20.0], blowup=10)
    assert rep.diverged_rule.tolist() == ["objective"]


def test_extra_state_is_under_the_same_rules():
    """FeSEM's local models: a blown-up or non-finite local model flags its replica."""
    theta = _theta(3)
    rep = Replicas(3, 5, theta0=theta, floors=(1.0, 1.0), blowup=10)
    state = np.ones((3, 4, 1))
    state[1, 2] = 50.0
    state[2, 0] = np.nan
    rep.accept(theta, theta.copy(), np.ones(3), 0, state=state)
    assert rep.diverged_rule.tolist() == ["", "parameters", "non-finite"]


def test_common_fields_carry_the_rule():
    rep, _ = _two_rounds(new=[np.nan, 1.0], objective=[1.0, 1.0])
    fields = common_fields(rep, np.ones(2), time.perf_counter())
    assert fields["diverged_rule"].tolist() == ["non-finite", ""]
    assert fields["diverged_round"].tolist() == [1, -1]


def test_check_blowup():
    assert check_blowup(None) is None and check_blowup(10) == 10.0 and check_blowup(1.5) == 1.5
    for bad, exc, match in [(1, ValueError, r"blowup must be in \(1.0, inf\), got 1.0"),
                            (-3.0, ValueError, "blowup must be in"), (np.inf, ValueError, "blowup must be finite"),
                            ("big", TypeError, "blowup must be a real number"), (False, TypeError, "blowup")]:
        with pytest.raises(exc, match=match):
            check_blowup(bad)
    with pytest.raises(ValueError, match="blowup"):
        Replicas(2, 3, blowup=0.5)


def test_check_history():
    default = ("matched_max", "theta", "misclustering")
    assert check_history(False, default) == () and check_history(True, default) == default
    assert check_history("all", default) == HISTORY_FIELDS
    assert check_history("all", default, unavailable=("nearest", "client_losses")) == tuple(
        f for f in HISTORY_FIELDS if f not in ("nearest", "client_losses"))
    # in the order of HISTORY_FIELDS, once each
    assert check_history(["client_losses", "theta", "theta"], default) == ("theta", "client_losses")
    assert check_history("assignments", default) == ("assignments",)
    assert check_history(np.bool_(True), default) == default and check_history((), default) == ()
    with pytest.raises(ValueError, match="history names must be among nearest, matched_mean, .*; got 'thetas'"):
        check_history(("thetas",), default)
    with pytest.raises(ValueError, match=r"history: this driver cannot record 'assignments' \(no clients\)"):
        check_history(["theta", "assignments"], default, unavailable=("assignments",), why="no clients")
    for bad in (1, None, [True]):
        with pytest.raises(TypeError, match="history must be False, True, 'all' or a sequence of names"):
            check_history(bad, default)


def test_step_size_groups_cover_every_replica_once_and_one_step_size_is_a_slice():
    eta = np.array([0.3, 0.1, 0.3, 0.2, 0.1])
    values, groups = step_size_groups(eta)
    assert values.tolist() == [0.1, 0.2, 0.3]
    assert [g.tolist() for g in groups] == [[1, 4], [3], [0, 2]]
    for v, g in zip(values, groups):
        assert np.all(eta[g] == v)
    values, groups = step_size_groups(np.full(3, 0.5))
    assert values.tolist() == [0.5] and groups == [slice(None)]
    theta = np.arange(6.0).reshape(3, 2)
    assert np.shares_memory(theta[groups[0]], theta)  # a view: no gather


@pytest.mark.parametrize("d", [0, 1, 7, 8, 9, 127, 128, 129, 200, 257, 1001])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("layout", ["replica-major", "client-major view"])
def test_the_divergence_checks_are_numpys_expressions_bit_for_bit(d, dtype, layout):
    from mixreg.algorithms._driver import _finite_rows, _row_norms
    rng = np.random.default_rng(d)
    B, k = 6, 3
    shape = (B, k, d) if layout == "replica-major" else (k, B, d)
    decades = 150 if dtype == np.float64 else 30  # rows of magnitudes across the dtype's range
    theta = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-decades, decades, size=shape[:2] + (1,))).astype(dtype)
    if layout != "replica-major":  # FeSEM's local models, (m, B, d), seen replica-major
        theta = theta.transpose(1, 0, 2)
    if d:
        theta[1, 1, d // 2] = np.nan
        theta[2, 0, 0] = np.inf
        theta[3, 2, -1] = -np.inf
        if dtype == np.float64:  # finite, but its square overflows: the norm is inf
            theta[4, 0, 0] = 1e200
    with np.errstate(over="ignore", invalid="ignore"):
        expected = np.sqrt(np.square(theta, dtype=np.float64).sum(axis=2)).max(axis=1)
    assert np.array_equal(_row_norms(theta), expected, equal_nan=True)  # NumPy's pairwise order, its NaN
    finite = np.isfinite(theta).all(axis=(1, 2))
    assert np.array_equal(_finite_rows(theta), finite)
    # read from the norms where they are finite (a mutant that trusts an inf norm fails on the 1e200 row)
    assert np.array_equal(_finite_rows(theta, _row_norms(theta)), finite)
