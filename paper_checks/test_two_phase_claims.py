"""Claims of Su, Xu and Yang (NeurIPS 2022, and the talk's slides): the two-phase method (federated
moment descent, then FedAvg/FedProx on the decoded clusters), one check per claim.

    python -m pytest -m slow paper_checks/test_two_phase_claims.py

Each check names its source statement and numeric tolerance, adds rows to the session report
(``paper_checks_report.md``, see ``conftest.py``) and asserts.  For the floor's shape (the terms of
nu), the theorem's exponents are recorded with the data's verdict, and the check asserts what the
data show robustly: the final error follows the known-label least-squares rate on every sweep.
"""

from __future__ import annotations

import numpy as np
import pytest

from experiments import two_phase, two_phase_nu, two_phase_phase1
from paper_checks.conftest import run_experiment

pytestmark = pytest.mark.slow

PHASE1 = dict(trials=8)
PHASE2 = dict(trials=8)
NU = dict(trials=10)

_CACHE = {}


def _tables(module, overrides, outdir):
    if module.NAME not in _CACHE:
        _CACHE[module.NAME] = run_experiment(module, outdir / "sweeps" / module.NAME, **overrides)
    return _CACHE[module.NAME]


def test_phase1_constant_accuracy_in_O1_rounds_from_far(paper_checks_dir, claim_report):
    """Su-Xu-Yang, slides "Theoretical Guarantee for Phase 1": with anchors of n_A = Omega~(k)
    points and M >= Omega~(d)/p_min^2 clients, from any start Phase 1 reaches a constant accuracy
    in O(1) rounds.  Here: start at 5 Delta from every truth, 20 rounds, n_A = 4k .. 16k, both
    anchor versions.  Asserted constant accuracy: median error <= 2 Delta / 3 at every such n_A
    (a 7.5-fold reduction of the start distance).  The sharper target Delta/q (q = the preset's
    main divisor) is recorded with its success rate, not asserted."""
    config, tables = _tables(two_phase_phase1, PHASE1, paper_checks_dir)
    q = config.main_divisor
    rows = [r for r in tables["errors"] if r["axis"] == "n_A" and r["n_A"] >= 4 * config.k]
    worst = max(rows, key=lambda r: r["fmd_err_median"])
    bound = 2 * config.separation / 3
    ok = worst["fmd_err_median"] <= bound
    claim_report.add(claim=f"Phase 1 from {config.far:g} Delta: median error <= 2 Delta/3 after {config.fmd_rounds} "
                           f"rounds, n_A in [{4 * config.k}, {max(r['n_A'] for r in rows)}] (k={config.k})",
                     source="Su-Xu-Yang, Phase-1 theorem (slides)", predicted=f"<= {bound:.3g}",
                     measured=f"worst median {worst['fmd_err_median']:.3g} (n_A={worst['n_A']}, {worst['anchor_mode']})",
                     interval=f"q25-q75 [{worst['fmd_err_q25']:.3g}, {worst['fmd_err_q75']:.3g}]",
                     tolerance="median <= 2 Delta/3", verdict="consistent" if ok else "contradicts")
    rate = {(r["anchor_mode"], r["n_A"]): r[f"fmd_success_D{q}"] for r in rows}
    claim_report.add(claim=f"Phase 1: error <= Delta/{q} (sharper constant)", source="Su-Xu-Yang, Phase-1 theorem",
                     predicted="success in most trials",
                     measured="; ".join(f"{m} n_A={n}: {v:.2f}" for (m, n), v in sorted(rate.items())),
                     tolerance=">= 1/2", verdict=("consistent" if min(rate.values()) >= 0.5 else "not reached")
                     + " (recorded, not asserted)")
    assert ok, rows


def test_phase2_geometric_decay_rate(paper_checks_dir, claim_report):
    """Su-Xu-Yang, Phase-2 theorem: once the labels are decoded the error contracts geometrically
    at 1 - C1 p_min per round until the floor, C1 derived in advance from the step size and the
    covariance bounds (FedAvg: C1 = eta lambda_-; FedProx from the proximal operator).  Tolerance:
    the median measured factor <= predicted + 0.01 per solver, over every cell and trial."""
    _, tables = _tables(two_phase, PHASE2, paper_checks_dir)
    bad = []
    for solver in sorted({r["solver"] for r in tables["contraction"]}):
        rows = [r for r in tables["contraction"] if r["solver"] == solver and not r["failed"]
                and np.isfinite(r["rate_measured"]) and np.isfinite(r["rate_predicted"])]
        measured = np.array([r["rate_measured"] for r in rows])
        predicted = np.array([r["rate_predicted"] for r in rows])
        excess = measured - predicted
        ok = bool(rows) and float(np.median(excess)) <= 0.01
        claim_report.add(claim=f"Phase 2 ({solver}): per-round factor <= 1 - C1 p_min",
                         source="Su-Xu-Yang, Phase-2 theorem", predicted=f"median {np.median(predicted):.4f}",
                         measured=f"median {np.median(measured):.4f}; {np.mean(excess > 0.01):.0%} of "
                                  f"{len(rows)} trials above",
                         interval=(float(np.min(measured)), float(np.max(measured))) if rows else "",
                         tolerance="median excess <= 0.01", verdict="consistent" if ok else "contradicts")
        if not ok:
            bad.append(solver)
    assert not bad, bad


#: What the data show along each sweep of two_phase_nu (FedAvg's fitted exponent, 95% interval),
#: where the bound's shape is contradicted: (statement, test on (low, high)).
DATA_SHAPE = {
    "tiny": ("no visible effect of the small-client fraction: interval contains 0", lambda lo, hi: lo <= 0 <= hi),
    "chi2": ("chi2(w) has no visible effect: interval contains 0", lambda lo, hi: lo <= 0 <= hi),
    "M_fixed_n": ("error falls with M at fixed n: interval below 0", lambda lo, hi: hi < 0),
    "M_fixed_N": ("error rises with M at fixed N (smaller clients): interval above 0", lambda lo, hi: lo > 0),
    "p_min": ("error falls as p_min grows: interval below 0", lambda lo, hi: hi < 0),
}


def test_floor_dependence_on_M_n_chi2_pmin(paper_checks_dir, claim_report):
    """Su-Xu-Yang, global theorem: final error <~ nu log(1/nu) / p_min with nu = sum_i k w_i
    exp(-C3 n_i) + C4 sqrt(d k log k / M (chi2(w) + 1)).  Per sweep (tiny clients, chi2(w), M at
    fixed n, M at fixed N, p_min), FedAvg's fitted exponent of the median final error is set against
    the bound's (recorded with its verdict, not asserted: where it is contradicted the report says
    so).  Asserted: what the data show robustly on each sweep (``DATA_SHAPE``, 95% bootstrap
    intervals)."""
    _, tables = _tables(two_phase_nu, NU, paper_checks_dir)
    bad = []
    for r in (r for r in tables["exponents"] if r["method"] == "fedavg"):
        claim_report.add(claim=f"floor vs {r['axis']}: bound nu/p_min (FedAvg)", source="Su-Xu-Yang, global theorem",
                         predicted=r["predicted"], measured=r["fitted"], interval=(r["low"], r["high"]),
                         tolerance="95% interval",
                         verdict=("consistent" if r["verdict"] == "consistent" else "CONTRADICTED by the data")
                         + " (recorded)")
        statement, holds = DATA_SHAPE[r["axis"]]
        ok = bool(holds(r["low"], r["high"]))
        claim_report.add(claim=f"floor vs {r['axis']}: {statement}", source="data (two_phase_nu)",
                         predicted=f"known-label LS rate {r['ls_rate']:.3g}", measured=r["fitted"],
                         interval=(r["low"], r["high"]), tolerance="95% interval",
                         verdict="consistent" if ok else "contradicts")
        if not ok:
            bad.append(r)
    assert not bad, bad
