"""The IFCA paper's initialisation conditions (Assumption 1, NeurIPS; the closeness alpha of arXiv
v2+), checked on ifca_basin's committed paper run (:mod:`mixreg.study` claims).

Our ``alpha`` is the start's distance over Delta: ``||theta_j^(0) - theta*_j|| = alpha Delta``.
NeurIPS's Assumption 1 is ``alpha <= 1/4``; arXiv v2+'s closeness ``alpha' in (0, 1/2)`` is
``alpha = 1/2 - alpha'``, so "only slightly better than random" (``alpha'`` near 0) is ``alpha``
just below 1/2.  Each check reads the tables :func:`.summary.summarise` recomputes from the
committed trials, so it runs on any run of the study.  The theorem holds with high probability:
the checks expect **zero** failures (no tolerance) and give the Wilson interval of the success
rate beside the count.
"""

from __future__ import annotations

from mixreg.predictions import Verdict
from mixreg.stats import wilson_interval
from mixreg.study import Claim

from . import STUDY

__all__ = ["CLAIMS"]

_FIGURE = ("ifca_basin_paper.png",)


def _no_failure(claim, rows, level, edge=None):
    """Zero failures of the resampled run (Theorem 1's scheme) to reach its own centre over ``rows``."""
    trials = sum(r["trials"] for r in rows)
    hits = sum(round(r["rs_same_success_rate"] * r["trials"]) for r in rows)
    numbers = dict(cells=len(rows), trials=trials, successes=hits,
                   alphas=sorted({r["alpha"] for r in rows}) if rows else [])
    if edge is not None:
        numbers["measured_edge"] = edge
    if not trials:
        return Verdict(claim, "not tested", numbers, "no cell in the claim's scope")
    low, high = wilson_interval(hits, trials, level)
    numbers.update(rate=hits / trials, low=float(low), high=float(high),
                   full_batch_rate=sum(round(r["fb_same_success_rate"] * r["trials"]) for r in rows) / trials)
    if hits < trials:
        failing = [(r["direction"], r["alpha"], r["trials"] - round(r["rs_same_success_rate"] * r["trials"]))
                   for r in rows if r["rs_same_success_rate"] < 1]
        return Verdict(claim, "contradicts", numbers,
                       f"{trials - hits} of {trials} runs do not end at their own centre ((direction, alpha, "
                       f"failures): {failing[:4]})")
    return Verdict(claim, "consistent", numbers, f"all {trials} runs end at their own centre")


def _edge(run, k, direction):
    for e in run.tables["edges"]:
        if e["k"] == k and e["direction"] == direction and e["variant"] == "rs" and e["notion"] == "same_success":
            return e["edge"]
    return None


def _assumption1(run):
    """Every start within Delta/4 converges, each k (all directions pooled)."""
    rows = [r for r in run.tables["rates"] if r["alpha"] <= 0.25 + 1e-12]
    return [_no_failure(f"k = {k}: every start with alpha <= 1/4 converges to its own centre", [r for r in rows
                        if r["k"] == k], run.config.level) for k in sorted({r["k"] for r in rows})]


def _below_half(run, k):
    """Per direction: every start with alpha < 1/2 converges to its own centre, for ``k`` clusters."""
    rows = [r for r in run.tables["rates"] if r["k"] == k and r["alpha"] < 0.5 - 1e-12]
    out = []
    for direction in sorted({r["direction"] for r in rows}):
        out.append(_no_failure(f"k = {k}, {direction} directions: every start with alpha < 1/2 converges to its "
                               "own centre", [r for r in rows if r["direction"] == direction], run.config.level,
                               edge=_edge(run, k, direction)))
    if not out:
        out.append(Verdict(f"k = {k}: starts with alpha < 1/2", "not tested", {}, f"no cell with k = {k}"))
    return out


CLAIMS = (
    Claim(
        id="ifca-assumption1-basin",
        paper="IFCA",
        source="Assumption 1 with Theorem 1 and Corollary 1 (NeurIPS Sec. 4): ||theta_j^(0) - theta*_j|| <= Delta/4",
        statement="Every IFCA run of the theorem's scheme (resampling, gamma = c1/p) started within Delta/4 of the "
                  "truth (alpha <= 1/4; random, adversarial and shifted directions; k = 2 and 4) ends with every "
                  "model at its own centre (success threshold: twice the known-label LS floor of a round's points): "
                  "zero failures, one verdict per k.",
        kind="prediction",
        study=STUDY,
        check=_assumption1,
        constants="Delta/4 from Assumption 1; gamma = c1/p with c1 = 3/8; success = final distance below 2 x the "
                  "known-label LS RMS floor (a stated choice)",
        figures=_FIGURE,
        mutants=("bs-alpha-comparison-flipped",),
    ),
    Claim(
        id="ifca-alpha-near-random",
        paper="IFCA",
        source="arXiv v2+ Sec. 5.1 (Assumption 1 with closeness alpha' in (0, 1/2), Theorem 1, Corollary 1): "
               "'for two clusters, an initialisation only slightly better than random suffices'",
        statement="For k = 2, every start strictly closer to its own centre than halfway (our alpha < 1/2, i.e. "
                  "closeness alpha' > 0; the grid reaches alpha = 0.475) converges to its own centre under the "
                  "theorem's scheme, in each direction (adversarial: both models moved towards each other, the "
                  "worst case for the identity estimates): zero failures per direction; the measured edge (where "
                  "the success rate falls through 1/2) is reported.",
        kind="prediction",
        study=STUDY,
        check=lambda run: _below_half(run, 2),
        constants="alpha' > 0, i.e. alpha < 1/2 (no constant); the paper's n' condition for small alpha' is not "
                  "recoverable from the text",
        figures=_FIGURE,
        mutants=("bs-half-inclusive",),
    ),
    Claim(
        id="ifca-basin-k4-near-half",
        paper="IFCA",
        source="arXiv v2+ Sec. 5.1 states the near-random initialisation for two clusters only",
        statement="For k = 4 as for k = 2, every start with alpha < 1/2 (each start closer to its own centre than "
                  "to any other) converges to its own centre in each direction: zero failures per direction.",
        kind="observation",
        study=STUDY,
        check=lambda run: _below_half(run, 4),
        figures=_FIGURE,
        mutants=("bs-half-inclusive",),
        observed="ifca_basin quick preset (12 trials per cell): for k = 4 every run with alpha <= 0.45 reached its "
                 "own centre in all three directions (same-centre edge of the adversarial direction 0.51), as "
                 "for k = 2.",
    ),
)
