"""The Phase-2 claims of Su, Xu and Yang checked on this study's committed run (``CLAIMS``).

* ``sxy-phase2-factor``: the Phase-2 theorem's per-round contraction :math:`1 - C_1 p_{\\min}`
  (slide "Theoretical guarantee for Phase 2"), as a shape: the gap 1 - (measured per-round factor)
  grows like :math:`p_{\\min}^1` with :math:`C_1` free, fitted on the inner cells of the p_min sweep
  and validated on the two outer ones, held out.
* ``sxy-data-reuse``: "At every iteration, clients reuse all local data, including those used in
  the first phase -- crucial especially for data-scarce clients" (slide "Phase 2: FedX +
  Clustering"), as a paired ablation on the same draws: FedAvg with reuse against FedAvg with
  sample splitting across rounds (each point used in one round, :func:`.trial.phase2_split`).

Each check reads the tables :func:`.summary.summarise` recomputes from the committed trials, so it
runs on any run of the study (quick or paper).
"""

from __future__ import annotations

import numpy as np

from mixreg.predictions import Verdict
from mixreg.study import Claim

from . import PRESETS, STUDY
from .summary import _median

__all__ = ["CLAIMS", "ALPHA"]

#: The level of the paired test of the ablation (one-sided Wilcoxon signed-rank).
ALPHA = 0.05


def _num(v):
    return float("nan") if v is None else float(v)


def _factor(run):
    """Per local solver: the exponent of 1 - factor in p_min (predicted 1) and the held-out cells."""
    verdicts = []
    for row in run.tables["factor_fit"]:
        s = row["solver"]
        numbers = dict(predicted=_num(row["predicted"]), fitted=_num(row["fitted"]), low=_num(row["low"]),
                       high=_num(row["high"]), n_points=int(row["n_points"]), C1_fitted=_num(row["C1_fitted"]),
                       fit_p=row["fit_p"])
        why = (f"fitted exponent {numbers['fitted']:+.3f} [{numbers['low']:+.3f}, {numbers['high']:+.3f}] (95% "
               f"bootstrap over trials; p_min {row['fit_p']}) against the predicted +1")
        verdicts.append(Verdict(f"{s}: 1 - (per-round factor) ~ C1 p_min^1", row["verdict"], numbers, why))
        held = dict(held_out_p=row["held_out_p"], residuals=row["held_out_residuals"],
                    max_abs_residual=_num(row["max_abs_residual"]))
        why = (f"log10 residuals at the held-out p_min {row['held_out_p'] or '(none)'}: "
               f"{row['held_out_residuals'] or '-'}")
        verdicts.append(Verdict(f"{s}: the fitted C1 p_min^a predicts the held-out p_min", row["held_out_verdict"],
                                held, why if row["held_out_verdict"] != "not tested" or row["held_out_p"]
                                else "no p_min held out (fewer than four values)"))
    return verdicts


def _reuse(run):
    """Pooled over the cells: the median log(final error split / reuse) and its paired bootstrap interval,
    and the one-sided Wilcoxon signed-rank test; consistent if reuse is better (interval above 0 and
    p < ALPHA), contradicts otherwise (no detectable advantage, or split better)."""
    rows = {r["cell"]: r for r in run.tables["ablation"]}
    pooled = rows.get("all cells")
    claim = "FedAvg's final error without data reuse (sample splitting across rounds) / with reuse > 1"
    if pooled is None or not pooled["pairs"]:
        return Verdict(claim, "not tested", dict(pairs=0), "no trial ran the ablation (ablation_data='reuse')")
    numbers = dict(pairs=int(pooled["pairs"]), ratio_median=_num(pooled["ratio_median"]),
                   ratio_low=float(np.exp(_num(pooled["log_ratio_low"]))),
                   ratio_high=float(np.exp(_num(pooled["log_ratio_high"]))),
                   wilcoxon_p=_num(pooled["wilcoxon_p_greater"]), split_worse=int(pooled["split_worse"]),
                   reuse_miscl=_num(pooled["reuse_miscl_median"]), split_miscl=_num(pooled["split_miscl_median"]),
                   scarce_clients=_num(pooled["scarce_clients"]))
    text = (f"median ratio {numbers['ratio_median']:.3g} [{numbers['ratio_low']:.3g}, {numbers['ratio_high']:.3g}] "
            f"(paired bootstrap), split worse in {numbers['split_worse']} of {numbers['pairs']} pairs, one-sided "
            f"Wilcoxon p = {numbers['wilcoxon_p']:.3g}; clustering error (clients) reuse {numbers['reuse_miscl']:.3g}, "
            f"split {numbers['split_miscl']:.3g}")
    ok = numbers["ratio_low"] > 1 and numbers["wilcoxon_p"] < ALPHA
    verdicts = [Verdict(claim, "consistent" if ok else "contradicts", numbers, text)]
    ref = rows.get("reference")
    if ref is not None and ref["pairs"]:
        scarce = dict(pairs=int(ref["pairs"]), scarce_clients=_num(ref["scarce_clients"]),
                      reuse_miscl_scarce=_num(ref["reuse_miscl_scarce_median"]),
                      split_miscl_scarce=_num(ref["split_miscl_scarce_median"]),
                      ratio_median=_num(ref["ratio_median"]), ratio_low=float(np.exp(_num(ref["log_ratio_low"]))),
                      wilcoxon_p=_num(ref["wilcoxon_p_greater"]))
        ok = scarce["ratio_low"] > 1 and scarce["wilcoxon_p"] < ALPHA
        verdicts.append(Verdict(
            "reference cell (Zipf sizes, the most data-scarce): split / reuse > 1", "consistent" if ok else "contradicts",
            scarce, f"median ratio {scarce['ratio_median']:.3g} (95% low {scarce['ratio_low']:.3g}), Wilcoxon p = "
                    f"{scarce['wilcoxon_p']:.3g}, {scarce['scarce_clients']:.0%} of clients hold <= 2 points"))
    return verdicts


#: The quick preset's overrides for the fresh-run check (``paper_checks/test_claims_fresh.py``):
#: the paper preset (four p_min values, zipf sizes; the quick preset has two p_min values and
#: equal sizes, so the Phase-2 factor's exponent is fitted on another grid).
FRESH = dict(PRESETS["paper"])

CLAIMS = (
    Claim(
        id="sxy-phase2-factor",
        paper="Su-Xu-Yang",
        source="Su-Xu-Yang, Phase-2 theorem (talk slide 'Theoretical guarantee for Phase 2'): d(theta_{t+1}, theta*) "
               "<= (1 - C1 p_min) d(theta_t, theta*) + C2 nu log(1/nu)",
        statement=("Once the labels settle, Phase 2's per-round factor (measured as the ratio of distances to the "
                   "settled map's fixed point) has 1 - factor ~ C1 p_min^1: the log-log exponent of the median "
                   "over trials against p_min, fitted on the inner p_min cells (95% bootstrap), predicted 1, with "
                   "C1 free and the fitted line validated on the smallest and largest p_min, held out; FedAvg(1) "
                   "and FedProx at one step size eta = 1."),
        kind="prediction",
        study=STUDY,
        check=_factor,
        predictions=("phase2_gap_exponent",),
        constants="exponent 1 in p_min; C1 free (fitted, reported), validated on held-out cells",
        figures=("two_phase_factor_reuse_paper.png", "two_phase_contraction_paper.png"),
        mutants=("fedx-renormalised",),
    ),
    Claim(
        id="sxy-data-reuse",
        paper="Su-Xu-Yang",
        source="Su-Xu-Yang, talk slide 'Phase 2: FedX + Clustering': clients reuse all local data every iteration, "
               "'crucial especially for data-scarce clients'",
        statement=("On the same draws and from the same Phase-1 output, FedAvg's Phase 2 with every client's data "
                   "reused every round ends closer to theta* than with sample splitting across rounds (each point "
                   "used in one round, as IFCA's analysis assumes): the median over trials of the paired log ratio "
                   "of final errors (split / reuse) has a 95% paired-bootstrap interval above 0 and a one-sided "
                   "Wilcoxon signed-rank p < 0.05, pooled over the cells and at the Zipf reference cell, where "
                   "about two thirds of the clients hold at most two points."),
        kind="prediction",
        study=STUDY,
        check=_reuse,
        predictions=("data_reuse_sign",),
        constants="the sign (+1: reuse better), fixed before the data; level 0.05",
        figures=("two_phase_factor_reuse_paper.png",),
        mutants=("split-reuses-all",),
    ),
)
