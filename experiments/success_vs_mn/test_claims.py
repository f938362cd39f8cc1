"""The claims of success_vs_mn: each check on small synthetic tables, where it must be able to fail."""

import types

from mixreg.stats import wilson_interval

from experiments.success_vs_mn import claims


def _rates(cells, trials=40, r=0.1):
    """A rates table from ``{(m, n): successes}`` (every rule with the same counts)."""
    rows = []
    for (m, n), hits in cells.items():
        low, high = wilson_interval(hits, trials)
        row = dict(r=r, m=m, n=n, trials=trials)
        for rule in ("official", "honest", "oracle"):
            row.update({f"{rule}_success_rate": hits / trials, f"{rule}_success_low": float(low),
                        f"{rule}_success_high": float(high)})
        rows.append(row)
    return rows


def _theory(cells):
    """Theory rows from ``{(m, n): registered oracle success probability}``."""
    return [dict(m=m, n=n, ls_unlikely=q < 0.5, oracle_success_probability=q) for (m, n), q in cells.items()]


def _statuses(verdicts):
    return [v.status for v in verdicts]


def test_claims_are_declared_with_their_mutants():
    assert [c.id for c in claims.CLAIMS] == ["ifca-fig3-mn", "ifca-ls-impossible-zero"]
    assert all(c.mutants for c in claims.CLAIMS)


def test_fig3_mn_contradicted_only_by_a_significant_drop_in_m_or_n():
    check = claims.CLAIMS[0].check
    grid = {(50, 50): 0, (100, 50): 25, (200, 50): 20, (50, 100): 10, (100, 100): 30, (200, 100): 40}
    run = types.SimpleNamespace(tables=dict(rates=_rates(grid)))
    assert _statuses(check(run)) == ["consistent"] * 2  # 25 -> 20 of 40 lies within the intervals
    edge = {**grid, (50, 200): 30, (100, 200): 19}  # 95% Wilson intervals overlap, 90% ones would not
    assert _statuses(check(types.SimpleNamespace(tables=dict(rates=_rates(edge))))) == ["consistent"] * 2
    grid[(200, 100)] = 12  # in m at n = 100 (30 -> 12) and in n at m = 200 (20 -> 12 is within)
    out = check(types.SimpleNamespace(tables=dict(rates=_rates(grid))))
    assert _statuses(out) == ["contradicts"] * 2 and "n=100" in out[0].why


def test_impossible_region_counts_only_the_deep_cells():
    """The edge cell (registered probability 0.4) may succeed; a success deep inside contradicts."""
    check = claims.CLAIMS[1].check
    theory = _theory({(50, 50): 1e-30, (100, 50): 0.4, (200, 50): 1.0})
    run = types.SimpleNamespace(tables=dict(theory=theory, rates=_rates({(50, 50): 0, (100, 50): 16, (200, 50): 40})))
    assert _statuses(check(run)) == ["consistent"] * 3
    run = types.SimpleNamespace(tables=dict(theory=theory, rates=_rates({(50, 50): 1, (100, 50): 16, (200, 50): 40})))
    assert _statuses(check(run)) == ["contradicts"] * 3
    run = types.SimpleNamespace(tables=dict(theory=_theory({(200, 50): 1.0}), rates=_rates({(200, 50): 40})))
    assert _statuses(check(run)) == ["not tested"]
