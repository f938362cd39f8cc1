"""The IFCA paper's Lemma 1 (the misclustering probability decays exponentially in n'), checked on
ifca_misclustering's committed paper run (:mod:`mixreg.study` claims).

Each check reads the tables :func:`.summary.summarise` recomputes from the committed trials, so it
runs on any run of the study.  The exponent verdicts use the fit's raw interval widened only by
the widening its simulated coverage needs (``widening``; no widening chosen by hand).
"""

from __future__ import annotations

from mixreg.predictions import Verdict
from mixreg.study import Claim

from . import PRESETS, STUDY

__all__ = ["CLAIMS"]

_FIGURE = ("ifca_misclustering_paper.png",)


def _inside(value, low, high, widening):
    return low - widening <= value <= high + widening


def _lemma1(run):
    """Per rho: the exact law's slope on the grid inside the fitted exponent's interval; the
    Chernoff exponent recorded beside it (not asserted)."""
    out = []
    for row in run.tables["exponents"]:
        rho, widening = row["rho"], float(row["widening"])
        claim = f"decay exponent of P(misclustered) in n' at rho = {rho:g} = the exact law's slope on the grid"
        numbers = dict(predicted=row["exact_slope"], fitted=row["fitted"], low=row["fitted_low"],
                       high=row["fitted_high"], tolerance=widening, coverage_raw=row["coverage_raw"],
                       n_points=row["n_points"], n_prime_range=f"{row['n_prime_min']}-{row['n_prime_max']}",
                       chernoff=row["chernoff"],
                       chernoff_inside=_inside(row["chernoff"], row["fitted_low"], row["fitted_high"], widening))
        if row["n_points"] < 2 or row["exact_slope"] != row["exact_slope"]:
            out.append(Verdict(claim, "not tested", numbers, "fewer than two n' with a misclustered worker"))
            continue
        inside = _inside(row["exact_slope"], row["fitted_low"], row["fitted_high"], widening)
        status = "consistent" if inside else "contradicts"
        where = "in" if status == "consistent" else "outside"
        out.append(Verdict(claim, status, numbers,
                           f"the exact slope {row['exact_slope']:.4g} lies {where} the fitted "
                           f"[{row['fitted_low']:.4g}, {row['fitted_high']:.4g}] widened by {widening:.3g} "
                           f"(simulated raw coverage {row['coverage_raw']:.3f}); the Chernoff exponent "
                           f"(1/2) log(1 + rho/4) = {row['chernoff']:.4g}, the n' -> infinity rate, is "
                           f"{'inside' if numbers['chernoff_inside'] else 'outside'} it (recorded, not asserted)"))
    return out


def _law(run):
    """The exact law, cell by cell: every cell's simultaneous (Bonferroni) Wilson interval holds it."""
    rows = run.tables["rates"]
    outside = [r for r in rows if not r["inside_sim"]]
    numbers = dict(cells=len(rows), outside=len(outside), level=rows[0]["simultaneous_level"] if rows else None,
                   per_cell_outside=sum(not r["inside"] for r in rows))
    if not rows:
        return Verdict("the exact misclustering law at every (rho, n')", "not tested", numbers, "no cell")
    if outside:
        worst = max(outside, key=lambda r: abs(r["rate"] - r["exact"]) / max(r["high_sim"] - r["low_sim"], 1e-300))
        return Verdict("the exact misclustering law at every (rho, n')", "contradicts", numbers,
                       f"{len(outside)} of {len(rows)} simultaneous intervals miss the exact probability (e.g. "
                       f"rho = {worst['rho']:g}, n' = {worst['n_prime']}: {worst['wrong']}/{worst['workers']} vs "
                       f"{worst['exact']:.4g})")
    return Verdict("the exact misclustering law at every (rho, n')", "consistent", numbers,
                   f"all {len(rows)} simultaneous Wilson intervals hold the exact probability "
                   f"({numbers['per_cell_outside']} per-cell 95% intervals miss it, as about 5% should)")


def _steepening(run):
    """Observation: on a finite grid the fitted exponent exceeds the Chernoff rate at every rho."""
    out = []
    for row in run.tables["exponents"]:
        claim = f"fitted decay exponent above the Chernoff exponent at rho = {row['rho']:g}"
        widening = float(row["widening"])
        numbers = dict(chernoff=row["chernoff"], fitted=row["fitted"], low=row["fitted_low"], high=row["fitted_high"],
                       tolerance=widening, exact_slope=row["exact_slope"])
        if row["n_points"] < 2:
            out.append(Verdict(claim, "not tested", numbers, "fewer than two n' with a misclustered worker"))
            continue
        above = row["fitted_low"] - widening > row["chernoff"]
        out.append(Verdict(claim, "consistent" if above else "contradicts", numbers,
                           f"the fitted [{row['fitted_low']:.4g}, {row['fitted_high']:.4g}] (widened by "
                           f"{widening:.3g}) lies {'above' if above else 'not above'} I(rho) = {row['chernoff']:.4g}; "
                           f"the exact law's slope on the grid is {row['exact_slope']:.4g}"))
    return out


#: The quick preset's overrides for the fresh-run check (``paper_checks/test_claims_fresh.py``):
#: the paper preset's grid (rho up to 32, eight targets) at 30 trials a cell.
FRESH = dict(PRESETS["paper"], trials=30)

#: Claims whose fresh run (:data:`FRESH`, seed 20261127) disagrees with the committed run, with the
#: fresh verdict and its numbers (asserted by ``paper_checks/test_claims_fresh.py``, shown in the
#: claims report).
FRESH_DIFFERS = {
    "ifca-lemma1": ("contradicts", "at rho = 16 the fitted decay exponent 0.976 [0.917, 1.080] misses the exact "
                                   "law's slope on the grid, 0.9085 (the other seven rho and the exact law at all "
                                   "61 (rho, n') cells, simultaneous intervals, hold). The eight per-rho slopes "
                                   "are each checked at 95% without a correction for multiplicity, so one miss in "
                                   "eight is expected in about a third of runs where all hold"),
}

CLAIMS = (
    Claim(
        id="ifca-lemma1",
        paper="IFCA",
        source="Lemma 1 (arXiv v2+ App. A; NeurIPS proof of Theorem 1): P(worker misclustered) <= "
               "c3 exp(-c4 (rho/(rho+1))^2 n')",
        statement="One identity estimate on n' fresh points misclusters a worker with a probability that decays "
                  "exponentially in n'. For k = 2 with both models at the truth the probability is exact (an "
                  "incomplete beta function; no fitted constant): per rho, the slope of log P against n' fitted on "
                  "IFCA's own assignments must hold the exact law's slope on the same grid (raw 95% bootstrap "
                  "interval widened only by what its simulated coverage needs), and every cell's simultaneous "
                  "Wilson interval must hold the exact probability. The Chernoff exponent (1/2) log(1 + rho/4), "
                  "the n' -> infinity rate, is recorded beside the slope, not asserted; the paper's c3, c4 are not "
                  "given.",
        kind="prediction",
        study=STUDY,
        check=lambda run: [*_lemma1(run), _law(run)],
        predictions=("misclustering_probability", "chernoff_exponent"),
        constants="none fitted: the exact law at theta = theta* (mixreg.theory.misclustering_probability)",
        figures=_FIGURE,
        mutants=("mc-exact-slope-is-chernoff",),
    ),
    Claim(
        id="ifca-misclustering-steepening",
        paper="IFCA",
        source="Lemma 1's exponent on a finite grid of n'",
        statement="On the grids used (n' up to where I(rho) n' = the largest target), the fitted decay exponent "
                  "lies above the Chernoff exponent I(rho) = (1/2) log(1 + rho/4) at every rho: the exact "
                  "probability's n'^(-1/2) prefactor steepens the finite-grid slope (interval widened only by its "
                  "measured coverage need).",
        kind="observation",
        study=STUDY,
        check=_steepening,
        figures=_FIGURE,
        mutants=("mc-steepening-any-overlap",),
        observed="ifca_misclustering quick preset (8 trials per cell, rho = 0.5 ... 8): the Chernoff verdict "
                 "'contradicts' at every rho with the fitted exponent above I(rho) (e.g. 0.133 [0.127, 0.142] "
                 "against 0.112 at rho = 1), recorded by the slow claim checks before issue 27.",
    ),
)
