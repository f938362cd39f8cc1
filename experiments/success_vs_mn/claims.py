"""The claims checked on success_vs_mn's committed runs (IFCA Fig. 3(c)/(d), thesis Sec. 3.4).

Each check reads the tables the study's ``summarise`` recomputes from the committed trials, never a
cell value of a preset, so it runs on a quick run too.  Cells of different (m, n) are independent
draws (their own seeds), so trends in m and n compare their Wilson intervals (unpaired); the two r
of a cell share its draws with ``--shared-draws`` and are compared trial by trial in ``paired.csv``
(exact McNemar), which the claims below do not need.
"""

from __future__ import annotations

from mixreg.predictions import Verdict
from mixreg.study import Claim

from experiments.success_vs_R.claims import decreases

from . import STUDY
from .summary import RULES_DRAWN

__all__ = ["CLAIMS", "IMPOSSIBLE"]

#: Where success is "impossible": known-label least squares' registered probability of meeting the
#: threshold is below this (at d = 1000 the cells deep inside the region are below 1e-38; at the quick
#: preset's d = 50 the edge of the region, near 0.045, is not sharp and is left out).
IMPOSSIBLE = 0.01


def _fig3_mn(run):
    """Per rule and r: no significant drop in m at any n, nor in n at any m (independent cells)."""
    rates = run.tables["rates"]
    verdicts = []
    for rule in ("official", "honest"):
        for r in sorted({row["r"] for row in rates}):
            at_r = [row for row in rates if row["r"] == r]
            drops, curves = [], 0
            for along, fixed in (("m", "n"), ("n", "m")):
                for value in sorted({row[fixed] for row in at_r}):
                    rows = [row for row in at_r if row[fixed] == value]
                    if len(rows) > 1:
                        curves += 1
                        drops += [(f"{fixed}={value}", *drop) for drop in decreases(rows, along, f"{rule}_success")]
            claim = f"{rule} rule, r = {r:g}: success non-decreasing in m (each n) and in n (each m)"
            numbers = dict(curves=curves, drops=len(drops))
            if not curves:
                verdicts.append(Verdict(claim, "not tested", numbers, why="one m and one n: no trend to test"))
            else:
                verdicts.append(Verdict(claim, "contradicts" if drops else "consistent", numbers,
                                        why=(f"significant drops: {drops}" if drops else
                                             f"no significant drop along {curves} curves (95% Wilson intervals)")))
    return verdicts


def _impossible_region(run):
    """Every rule at every r: zero successes in the cells where known-label least squares meets the
    threshold with a registered probability below :data:`IMPOSSIBLE`."""
    theory, rates = run.tables["theory"], run.tables["rates"]
    deep = {(row["m"], row["n"]) for row in theory
            if row["ls_unlikely"] and row["oracle_success_probability"] < IMPOSSIBLE}
    rows = [row for row in rates if (row["m"], row["n"]) in deep]
    if not rows:
        return [Verdict("IFCA never succeeds where known-label LS cannot", "not tested",
                        why=f"no cell of the grid has a registered LS success probability below {IMPOSSIBLE:g}")]
    verdicts = []
    for rule in RULES_DRAWN:
        hits = sum(round(row[f"{rule}_success_rate"] * row["trials"]) for row in rows)
        trials = sum(row["trials"] for row in rows)
        verdicts.append(Verdict(
            f"{rule} rule: zero successes deep inside the LS-unlikely region",
            "consistent" if hits == 0 else "contradicts",
            dict(cells=len(deep), trials=trials, successes=hits),
            why=f"{hits} successes in {trials} (cell, r, trial) of the {len(deep)} cells (m, n) = "
                + ", ".join(f"({m}, {n})" for m, n in sorted(deep))))
    return verdicts


CLAIMS = (
    Claim(
        id="ifca-fig3-mn",
        paper="IFCA",
        source="Fig. 3(c)/(d) (thesis Fig. 3.2(c-d), Sec. 3.4): 'the success probability improves with an increase "
               "of mn, i.e., more data on each machine and/or more machines'",
        statement="On paper-c (k = 2, d = 1000, sigma = 0.1, m in 50..400, n in {50, 100, 200}, r in {0.1, 0.25}, 40 "
                  "trials per cell), IFCA's success rate does not drop as m grows at any n, nor as n grows at any m, "
                  "for each r and both success rules: no pair of independent cells whose 95% Wilson intervals lie "
                  "apart with the larger m (or n) below",
        kind="prediction",
        study=STUDY, preset="paper-c",
        check=_fig3_mn,
        constants="none (a shape); 95% Wilson intervals",
        figures=("success_vs_mn_paper-c.png", "success_vs_mn_heatmap_paper-c.png"),
        mutants=("stats-monotone-no-lower-bound", "stats-wilson-z"),
    ),
    Claim(
        id="ifca-ls-impossible-zero",
        paper="IFCA",
        source="Fig. 3(c) (thesis Fig. 3.2(c)): the curves at 0 for small m and n",
        statement="On paper-c, in every cell where known-label least squares' probability of meeting the "
                  f"threshold 0.6 sigma, registered before the runs, is below {IMPOSSIBLE:g} (the five cells deep "
                  "inside the LS-unlikely region), every rule, the known-label oracle included, succeeds in 0 trials "
                  "at both r",
        kind="observation",
        study=STUDY, preset="paper-c",
        check=_impossible_region,
        constants=f"threshold 0.6 sigma (the official code's); 'impossible': probability below {IMPOSSIBLE:g}; the "
                  "oracle success probabilities registered in the run's manifest (config.predictions) before its "
                  "first trial",
        figures=("success_vs_mn_heatmap_paper-c.png",),
        mutants=("stats-impossible-region-edge",),
        observed="success_vs_mn paper-c (run at c93238a, its manifest; stated in 1246ccf)",
    ),
)
