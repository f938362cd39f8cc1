"""The checks of the study's claims (:mod:`.claims`), each from the tables of :func:`.summary.summarise`.

Every check takes a run (``run.tables``: the tables recomputed from the records) and returns
a list of :class:`mixreg.predictions.Verdict`.  Nothing depends on the paper preset's cells: a
quick run's tables give verdicts of the same kind.

Comparisons with a table's many cells use its family-wise intervals (at the Bonferroni level
``1 - (1 - level) / cells``, so that all the cells hold together at ``level``: Student-t intervals
of a mean over trials, or Garwood intervals of a count of misclustered worker-rounds); no interval
is widened otherwise (tolerance 0).
A bound "measured <= bound" is contradicted when the interval lies wholly above the bound.
"""

from __future__ import annotations

import math

import numpy as np

from mixreg.predictions import Verdict, exponent_verdict, level_verdict
from mixreg.stats import SlopeFit

__all__ = ["check_factor", "check_rounds", "check_floor", "check_lemma3", "bound_verdict", "slope_fit"]


def _f(row, key):
    value = row.get(key)
    return math.nan if value is None or value == "" else float(value)


def bound_verdict(claim, measured_low, bound, *, what=""):
    """``measured <= bound`` cell by cell: ``"contradicts"`` where the (family-wise) interval's low
    end lies above the bound, ``"not tested"`` without a finite cell.

    Examples
    --------
    >>> bound_verdict("x <= b", [0.1, 0.2], [0.5, 0.5]).status
    'consistent'
    >>> bound_verdict("x <= b", [0.1, 0.6], [0.5, 0.5]).numbers["above"]
    1
    """
    low, b = np.asarray(measured_low, dtype=float), np.asarray(bound, dtype=float)
    ok = np.isfinite(low) & np.isfinite(b)
    above = ok & (low > b)
    numbers = dict(cells=int(ok.sum()), above=int(above.sum()))
    if not ok.any():
        return Verdict(claim, "not tested", numbers, f"no cell with a finite measurement{what}")
    if above.any():
        return Verdict(claim, "contradicts", numbers, f"the interval lies above the bound at {above.sum()} of "
                                                      f"{ok.sum()} cells{what}")
    return Verdict(claim, "consistent", numbers, f"the bound is not below the interval at any of {ok.sum()} "
                                                 f"cells{what}")


def slope_fit(row):
    """A :class:`mixreg.stats.SlopeFit` from a table row with ``fitted``, ``intercept``, ``low``,
    ``high``, ``level``, ``n_points``."""
    return SlopeFit(slope=_f(row, "fitted"), intercept=_f(row, "intercept"), low=_f(row, "low"),
                    high=_f(row, "high"), level=_f(row, "level"), n_points=int(_f(row, "n_points")), n_boot=0)


def check_factor(run):
    """Claim ``ifca-thm2-factor``: the per-round factor far above the floor against Theorem 2's
    ``1 - p lambda / (8 L)`` (a bound), and against the exact second moments (derived)."""
    rows = [r for r in run.tables["factors"] if np.isfinite(_f(r, "factor"))]
    loose = np.array([_f(r, "looseness") for r in rows])
    bound = bound_verdict("per-round factor <= 1 - p lambda / (8 L) (Theorem 2), every (kappa, p, cluster)",
                          [_f(r, "fw_low") for r in rows], [_f(r, "bound") for r in rows])
    bound.numbers.update(looseness_min=float(np.min(loose)) if loose.size else math.nan,
                         looseness_max=float(np.max(loose)) if loose.size else math.nan)
    exact = level_verdict("distance at the window's end = the exact second moments' given each trial's start "
                          "(paired ratio 1; derived, right identities)", 1.0,
                          [_f(r, "paired_low") for r in rows], [_f(r, "paired_high") for r in rows])
    return [bound, exact]


def check_rounds(run):
    """Claim ``ifca-cor2-rounds``: the rounds to ``eps`` of every trial against Theorem 2's ``T``,
    and the exponent of the mean rounds in ``L / (p lambda)`` against ``T``'s 1."""
    rows = run.tables["rounds"]
    reached = [r for r in rows if int(_f(r, "not_reached")) == 0]
    unreached = [r for r in rows if int(_f(r, "not_reached")) > 0]
    claim = "rounds to eps <= T = (8 L / (p lambda)) log(Delta / (2 eps)) in every trial (Theorem 2)"
    if unreached and any(_f(r, "run_rounds") < _f(r, "thm2_T") for r in unreached):
        over = Verdict(claim, "not tested", dict(cells=len(rows), unreached=len(unreached)),
                       "some trials did not reach eps within a run shorter than T")
    else:
        worst = max((_f(r, "max") / _f(r, "thm2_T") for r in reached), default=math.nan)
        over = bound_verdict(claim, [_f(r, "max") for r in reached], [_f(r, "thm2_T") for r in reached],
                             what=" (largest rounds over the trials)")
        over.numbers.update(largest_fraction_of_T=worst)
    verdicts = [over]
    for row in run.tables["rounds_fit"]:
        # T is a number of rounds that suffices: an exponent below T's 1 keeps within it, not tight
        shape = exponent_verdict("rounds to eps ~ (L / (p lambda))^1 (Theorem 2's T at fixed Delta, eps)",
                                 _f(row, "predicted"), slope_fit(row), slack="below")
        shape.numbers["derived"] = _f(row, "derived")
        verdicts.append(shape)
    return verdicts


def check_floor(run):
    """Claim ``ifca-thm2-floor``: the final error's exponents in ``m`` and ``n'`` against Theorem
    2's ``-1/2`` (with the largest value of each axis held out), and its level against the exact
    second moments (derived)."""
    verdicts = []
    for row in run.tables["floor_exponents"]:
        name = "m" if row["axis"] == "m" else "n'"
        v = exponent_verdict(f"final error ~ {name}^-1/2 (Theorem 2's 1/sqrt(m n'))", _f(row, "predicted"),
                             slope_fit(row))
        v.numbers["derived"] = _f(row, "derived")
        verdicts.append(v)
        if np.isfinite(_f(row, "held_out_x")):
            held = level_verdict(f"the fitted line predicts the held-out {name} = {_f(row, 'held_out_x'):g}",
                                 0.0, _f(row, "held_out_low"), _f(row, "held_out_high"))
            held.numbers["residual_log10"] = _f(row, "held_out_residual")
            verdicts.append(held)
    pts = {(r["m"], r["n_prime"]): r for r in run.tables["floor_points"]}.values()
    verdicts.append(level_verdict("final mean square = the exact second moments' (derived)",
                                  [_f(r, "exact_ms") for r in pts], [_f(r, "ms_fw_low") for r in pts],
                                  [_f(r, "ms_fw_high") for r in pts]))
    return verdicts


def _informative_bound(claim, rows, key):
    """A probability bound checked where it is below 1; where it is at least 1 it holds whatever the
    data (vacuous), so those cells are counted (``vacuous_cells``) and not compared, and a bound
    vacuous at every cell is ``not tested``."""
    live = [r for r in rows if _f(r, key) < 1]
    vacuous = len(rows) - len(live)
    if not live:
        return Verdict(claim, "not tested", dict(cells=len(rows), vacuous_cells=vacuous),
                       f"the bound is at least 1 (vacuous) at all {len(rows)} cells: it cannot fail at these sizes")
    verdict = bound_verdict(claim, [_f(r, "fw_low") for r in live], [_f(r, key) for r in live])
    verdict.numbers["vacuous_cells"] = vacuous
    return verdict


def check_lemma3(run):
    """Claim ``ifca-lemma3``: the misclustering per worker-round against Lemma 3's bound and the
    proof's Chebyshev step (bounds), and against the exact probability (paired, per trial)."""
    rows = run.tables["lemma"]
    lemma = _informative_bound("P(misclustered) <= 128 eta^2 / (lambda^2 Delta^4 n') (Lemma 3, k = 2)", rows, "lemma")
    cheb = _informative_bound("P(misclustered) <= the proof's Chebyshev step with the exact variances", rows,
                              "chebyshev")
    exact = level_verdict("misclustered count / its exact expectation given each trial's models = 1 (Sigma "
                          "geometry, derived; Garwood interval)", 1.0, [_f(r, "count_low") for r in rows],
                          [_f(r, "count_high") for r in rows])
    return [lemma, cheb, exact]
