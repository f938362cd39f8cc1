"""The claims of success_vs_R: each check on small synthetic tables, where it must be able to fail."""

import types

import pytest

from mixreg.stats import wilson_interval

from experiments.success_vs_R import claims


def _rates(curves, trials=40):
    """A rates table from ``{sigma: {r: successes}}`` (every rule with the same counts)."""
    rows = []
    for sigma, curve in curves.items():
        for r, hits in curve.items():
            low, high = wilson_interval(hits, trials)
            row = dict(sigma=sigma, r=r, trials=trials)
            for rule in ("official", "honest", "oracle"):
                row.update({f"{rule}_success_rate": hits / trials, f"{rule}_success_low": float(low),
                            f"{rule}_success_high": float(high)})
            rows.append(row)
    return rows


def _run(rates=(), theory=()):
    return types.SimpleNamespace(tables=dict(rates=list(rates), theory=list(theory)))


def _statuses(verdicts):
    return [v.status for v in verdicts]


def test_every_claim_is_declared_with_its_mutants():
    assert [c.id for c in claims.CLAIMS] == ["ifca-fig3-r", "ifca-random-init-restarts", "ifca-sigma-no-effect-paired",
                                            "ifca-sigma-free-collapse"]
    assert all(c.mutants for c in claims.CLAIMS)
    assert all(c.observed for c in claims.CLAIMS if c.kind == "observation")


def test_fig3_r_contradicted_only_by_a_significant_drop():
    """28 -> 22 of 40 is a drop within the intervals (consistent); 38 -> 20 lies outside them."""
    fig3 = claims.CLAIMS[0].check
    assert set(_statuses(fig3(_run(_rates({0.1: {0.1: 10, 0.25: 28, 0.5: 22, 1.0: 40}}))))) == {"consistent"}
    # 30 -> 19 of 40: the 95% Wilson intervals overlap (90% ones would not)
    assert set(_statuses(fig3(_run(_rates({0.1: {0.1: 10, 0.25: 30, 0.5: 19, 1.0: 40}}))))) == {"consistent"}
    out = fig3(_run(_rates({0.1: {0.1: 10, 0.25: 38, 0.5: 20, 1.0: 40}})))
    assert set(_statuses(out)) == {"contradicts"} and "0.25" in out[0].why
    assert _statuses(fig3(_run(_rates({0.1: {0.5: 3}})))) == ["not tested"] * 2


def test_restarts_needs_the_interval_above_the_level():
    restarts = claims.CLAIMS[1].check
    assert set(_statuses(restarts(_run(_rates({0.0: {0.1: 5, 1.0: 40}}))))) == {"consistent"}
    assert set(_statuses(restarts(_run(_rates({0.0: {0.1: 5, 1.0: 36}}))))) == {"not tested"}  # 0.77-0.96
    assert set(_statuses(restarts(_run(_rates({0.0: {0.1: 5, 1.0: 20}}))))) == {"contradicts"}
    # 58/60: the 95% Wilson interval starts at 0.886 (a 90% one, at 0.904, would call it consistent)
    assert set(_statuses(restarts(_run(_rates({0.0: {0.1: 5, 1.0: 58}}, trials=60))))) == {"not tested"}


def _theory_row(quantity, rule="official", **fields):
    row = dict(kind="test", quantity=quantity, rule=rule, sigma=None, r=None, value=None, low=None, high=None,
               residual=None, p_value=None, verdict="", label="", reason=None)
    row.update(fields)
    return row


def test_sigma_effect_reads_the_pooled_paired_test():
    check = claims.CLAIMS[2].check
    label = "Cochran's Q, exact, at every r: paired"
    same = [_theory_row("sigma_homogeneity", value=3.0, p_value=0.48, label=label),
            _theory_row("sigma_homogeneity", r=0.1, value=9.0, p_value=0.001, label=label)]
    assert _statuses(check(_run(theory=same))) == ["consistent"]
    differ = [_theory_row("sigma_homogeneity", value=30.0, p_value=0.001, label=label)]
    assert _statuses(check(_run(theory=differ))) == ["contradicts"]
    one = [_theory_row("sigma_homogeneity", verdict="not tested", reason="one noise level (--sigmas 0)")]
    assert _statuses(check(_run(theory=one))) == ["not tested"]


def test_collapse_undetermined_is_not_tested():
    check = claims.CLAIMS[3].check
    rows = [_theory_row("collapse_delta", value=1.04, low=4.2, high=6.0, verdict="consistent with one curve"),
            _theory_row("sigma_free_crossing", kind="held_out", sigma=0.1, value=5.0, residual=0.01,
                        verdict="undetermined (4 of 4 curves cross 1/2 on one grid cell: ...)"),
            _theory_row("sigma_free_crossing", kind="held_out", sigma=0.2, value=5.0, residual=0.4,
                        verdict="contradicts")]
    assert _statuses(check(_run(theory=rows))) == ["consistent", "not tested", "contradicts"]
