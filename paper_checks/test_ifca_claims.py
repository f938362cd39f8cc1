"""Claims of the IFCA paper (Ghosh, Chung, Yin, Ramchandran: "An Efficient Framework for Clustered
Federated Learning"), one check per claim, on the experiments' sweeps sized for a slow check.

    python -m pytest -m slow paper_checks/test_ifca_claims.py

Each check names its source statement and its numeric tolerance, adds a row to the session report
(``paper_checks_report.md``, see ``conftest.py``) and then asserts.  Where the data contradict a
prediction of the paper that the check does not assert (the 1/p factor, the Chernoff exponent),
the row records the contradiction and the check asserts what the data show robustly.
"""

from __future__ import annotations

import pytest

from experiments import error_floor, ifca_basin, ifca_contraction, ifca_misclustering, success_vs_mn
from paper_checks.conftest import run_experiment
from mixreg.stats import wilson_interval

pytestmark = pytest.mark.slow

# Sizes of the slow checks: the quick presets with more trials (a few minutes in all on 2 cores).
ERROR_FLOOR = dict(trials=48)
BASIN = dict(trials=24)
MISCLUSTERING = dict(trials=24)
CONTRACTION = dict(trials=24)
SUCCESS = dict(trials=16)

_CACHE = {}


def _tables(module, overrides, outdir):
    if module.NAME not in _CACHE:
        _CACHE[module.NAME] = run_experiment(module, outdir / "sweeps" / module.NAME, **overrides)
    return _CACHE[module.NAME]


@pytest.fixture(scope="module")
def floor_tables(paper_checks_dir):
    return _tables(error_floor, ERROR_FLOOR, paper_checks_dir)[1]


def _exponent(tables, axis, setting):
    return next(r for r in tables["exponents"] if r["axis"] == axis and r["setting"] == setting)


@pytest.mark.parametrize("axis,predicted", [("m", -0.5), ("n_prime", -0.5), ("d", 0.5), ("sigma", 1.0)])
def test_final_error_exponents_in_theorem_setting(floor_tables, claim_report, axis, predicted):
    """IFCA paper, Theorem 1 / Corollary 1 (linear model): the final error is
    (sigma/p) sqrt(d/(m n')) where misclustering is negligible.  Tolerance: the predicted exponent
    lies in the 95% bootstrap interval of the fitted slope widened by 0.05."""
    row = _exponent(floor_tables, axis, "theorem")
    tol = 0.05
    verdict = "consistent" if row["low"] - tol <= predicted <= row["high"] + tol else "contradicts"
    claim_report.add(claim=f"final-error exponent in {axis} (theorem's setting)", source="IFCA Thm 1 / Cor. 1",
                     predicted=predicted, measured=row["fitted"], interval=(row["low"], row["high"]),
                     tolerance=f"+-{tol}", verdict=verdict)
    assert verdict == "consistent", row


def test_one_over_p_factor(floor_tables, claim_report):
    """IFCA paper, Corollary 1: the error carries a 1/p factor (exponent -1 in p).  The data: with
    gamma = c1/p the large cluster diverges at small p, with the safe step the error barely moves,
    and the practical runs follow known-label least squares, whose rate is p^-1/2.  The check
    records Corollary 1's -1 against every setting and asserts the known-label rate -1/2
    (tolerance: inside the 95% interval widened by 0.05)."""
    tol = 0.05
    for setting in ("theorem", "theorem_safe_step", "practical"):
        row = _exponent(floor_tables, "p", setting)
        claim_report.add(claim=f"1/p factor of the final error ({setting})", source="IFCA Cor. 1",
                         predicted=-1.0, measured=row["fitted"], interval=(row["low"], row["high"]),
                         tolerance=f"+-{tol}", verdict=f"{row['verdict']} (recorded, not asserted)")
    ls = _exponent(floor_tables, "p", "known_label_ls")
    practical = _exponent(floor_tables, "p", "practical")
    ok = all(r["low"] - tol <= -0.5 <= r["high"] + tol for r in (ls, practical))
    claim_report.add(claim="what the data say: error ~ p^-1/2 (known-label LS and practical IFCA)",
                     source="minimax known-label rate sigma sqrt(d/(p m n'))", predicted=-0.5,
                     measured=f"LS {ls['fitted']:.3f}, practical {practical['fitted']:.3f}",
                     interval=f"LS [{ls['low']:.3f}, {ls['high']:.3f}], practical [{practical['low']:.3f}, "
                              f"{practical['high']:.3f}]", tolerance=f"+-{tol}",
                     verdict="consistent" if ok else "contradicts")
    assert ok, (ls, practical)


def test_basin_inside_quarter_delta(paper_checks_dir, claim_report):
    """IFCA paper, Assumption 1 with Theorem 1: from any start within Delta/4 of the truth every
    model converges (resampled IFCA, every direction, k = 2 and 4).  Tolerance: no failure at all
    (every trial of every alpha <= 1/4 cell succeeds, each model at its own centre)."""
    _, tables = _tables(ifca_basin, BASIN, paper_checks_dir)
    rows = [r for r in tables["rates"] if r["alpha"] <= 0.25 + 1e-12]
    trials = sum(r["trials"] for r in rows)
    hits = sum(round(r["rs_same_success_rate"] * r["trials"]) for r in rows)
    lo, hi = wilson_interval(hits, trials)
    verdict = "consistent" if hits == trials else "contradicts"
    claim_report.add(claim="basin: every start within Delta/4 converges (same centre)",
                     source="IFCA Assumption 1 + Thm 1", predicted=1.0, measured=hits / trials,
                     interval=(float(lo), float(hi)), tolerance="0 failures", verdict=verdict)
    assert verdict == "consistent", [r for r in rows if r["rs_same_success_rate"] < 1]


def test_misclustering_exponent(paper_checks_dir, claim_report):
    """IFCA paper, Lemma 1 (arXiv App. A): misclustering probability ~ exp(-c n') with, for k = 2
    at the truth, the exact Chernoff exponent (1/2) log(1 + rho/4).  The Chernoff exponent is the
    n' -> infinity rate; on a finite grid the exact probability's n'^-1/2 prefactor steepens the
    slope.  The check records the Chernoff verdict per rho and asserts that the fitted exponent
    matches the exact probability's slope on the same grid (tolerance: 20% relative)."""
    _, tables = _tables(ifca_misclustering, MISCLUSTERING, paper_checks_dir)
    tol = 0.20
    bad = []
    for r in tables["exponents"]:
        claim_report.add(claim=f"misclustering exponent = Chernoff, rho={r['rho']:g}", source="IFCA Lemma 1",
                         predicted=r["chernoff"], measured=r["fitted"], interval=(r["fitted_low"], r["fitted_high"]),
                         tolerance="95% interval", verdict=f"{r['verdict_chernoff']} (recorded, not asserted)")
        rel = abs(r["fitted"] / r["exact_slope"] - 1)
        verdict = "consistent" if rel <= tol else "contradicts"
        claim_report.add(claim=f"misclustering exponent = exact law's slope, rho={r['rho']:g}",
                         source="IFCA Lemma 1 (exact k=2 law)", predicted=r["exact_slope"], measured=r["fitted"],
                         interval=(r["fitted_low"], r["fitted_high"]), tolerance=f"{tol:.0%} rel.", verdict=verdict)
        if verdict != "consistent":
            bad.append(r)
    assert not bad, bad


def test_halving_per_round_until_the_floor(paper_checks_dir, claim_report):
    """IFCA paper, Theorem 1: one round gives ||theta+ - theta*|| <= 1/2 ||theta - theta*|| + floor
    (+ a misclustering term).  Where misclustering is negligible (exact per-worker probability
    <= 1%) and alpha <= 1/4, the one-round ratio must be <= 1/2 + floor/dist (the test suite's
    c2 = 1).  Tolerance: at most 1% of the draws above it."""
    _, tables = _tables(ifca_contraction, CONTRACTION, paper_checks_dir)
    rows = [r for r in tables["ratios"] if r["exact_wrong_mean"] <= 0.01 and r["alpha"] <= 0.25 + 1e-12]
    draws = sum(r["draws"] for r in rows)
    viol = sum(r["noise_violations"] for r in rows)
    lo, hi = wilson_interval(viol, draws)
    worst = max(r["max_ratio"] / r["noise_ratio"] for r in rows)
    verdict = "consistent" if viol <= 0.01 * draws else "contradicts"
    claim_report.add(claim="one round: ratio <= 1/2 + floor/dist where misclustering negligible (violation fraction)",
                     source="IFCA Thm 1 (one-round contraction)", predicted="0 violations",
                     measured=f"{viol}/{draws} (worst ratio/bound {worst:.3f})", interval=(float(lo), float(hi)),
                     tolerance="<= 1% of draws", verdict=verdict)
    assert verdict == "consistent", [r for r in rows if r["noise_violations"]]


@pytest.fixture(scope="module")
def success_tables(paper_checks_dir):
    return _tables(success_vs_mn, SUCCESS, paper_checks_dir)


def test_success_impossible_where_known_label_ls_misses_threshold(success_tables, claim_report):
    """IFCA paper, Fig. 3(c)/(d): no success where even known-label least squares cannot meet the
    threshold 0.6 sigma.  'Cannot' means its RMS error is at least 1.25 times the threshold (our
    margin: near ratio 1 the oracle itself succeeds by chance).  Tolerance: zero successes under
    every rule (official, honest, oracle) in those cells."""
    config, tables = success_tables
    ratio = {(t["m"], t["n"]): t["ls_rms_over_threshold"] for t in success_vs_mn.predictions(config)}
    rows = [r for r in tables["rates"] if ratio[(r["m"], r["n"])] >= 1.25]
    trials = sum(r["trials"] for r in rows)
    hits = {rule: sum(round(r[f"{rule}_success_rate"] * r["trials"]) for r in rows)
            for rule in ("official", "honest", "oracle")}
    lo, hi = wilson_interval(max(hits.values()), trials)
    verdict = "consistent" if trials and not any(hits.values()) else "contradicts"
    claim_report.add(claim=f"impossible region: zero success where LS RMS >= 1.25 x threshold ({len(rows)} cells)",
                     source="IFCA Fig. 3(c)/(d)", predicted=0.0,
                     measured=", ".join(f"{k} {v}/{trials}" for k, v in hits.items()),
                     interval=(float(lo), float(hi)), tolerance="0 successes", verdict=verdict)
    assert verdict == "consistent", hits


def test_success_monotone_in_m(success_tables, claim_report):
    """IFCA paper, Fig. 3(c)/(d): the success probability rises with m.  Tolerance: no pair
    m1 < m2 (same r, n and rule) whose 95% Wilson intervals are disjoint with rate(m2) below."""
    _, tables = success_tables
    rows = tables["rates"]
    drops, pairs = [], 0
    for rule in ("official", "oracle"):
        for key in sorted({(r["r"], r["n"]) for r in rows}):
            line = sorted((r for r in rows if (r["r"], r["n"]) == key), key=lambda r: r["m"])
            for i, a in enumerate(line):
                for b in line[i + 1:]:
                    pairs += 1
                    if b[f"{rule}_success_high"] < a[f"{rule}_success_low"]:
                        drops.append((rule, key, a["m"], b["m"]))
    verdict = "consistent" if not drops else "contradicts"
    claim_report.add(claim="success rate non-decreasing in m (within Wilson intervals)", source="IFCA Fig. 3(c)/(d)",
                     predicted="0 significant drops", measured=f"{len(drops)} of {pairs} pairs",
                     interval="95% Wilson per cell", tolerance="0 disjoint drops", verdict=verdict)
    assert not drops, drops
