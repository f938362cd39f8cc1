"""The comparison's table: ``summary``, one row per (regime, method)."""

from __future__ import annotations

import numpy as np

from .trial import METHODS, METRICS

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "summarise"]

NAME = "compare"
TABLES = ("summary",)
DEFAULT_SEED = 20221128  # NeurIPS 2022, where Su, Xu and Yang presented the two-phase method


#: Metrics summarised with a 95% interval of the mean (normal approximation).
_WITH_INTERVAL = ("err_mean", "err_max", "mis_clients", "mis_points")


def summarise(config, records):
    """``summary``: one row per (regime, method), in the order of :data:`METHODS`.

    Columns: ``regime``, ``method``, ``trials`` (without failed trials), ``refused`` (trials
    where the method refused the problem) and the first ``refusal`` reason, ``all_diverged``
    (trials where every replica of the method diverged: no estimate, left out of every mean),
    ``<metric>_mean`` for every metric of :data:`.trial.METRICS` (``nan``
    ignored), ``<metric>_low`` / ``_high`` for the errors and misclustering.
    """
    ok = [rec for rec in records if not rec.get("error")]
    for rec in ok[:1]:  # a method with no column did not run: never read its absence as divergence
        absent = [method for method in METHODS if f"{method}_err_mean" not in rec]
        if absent:
            raise RuntimeError(f"the trials hold no record of {', '.join(map(repr, absent))}: those methods did not "
                               "run, which is not divergence; rerun with --overwrite")
    rows = []
    for regime in config.regimes:
        recs = [rec for rec in ok if rec["regime"] == regime]
        for method in METHODS:
            refused = [rec.get(f"{method}_refused") or "" for rec in recs]
            row = dict(regime=regime, method=method, trials=len(recs),
                       refused=sum(1 for reason in refused if reason),
                       refusal=next((reason for reason in refused if reason), ""),
                       all_diverged=sum(1 for rec, reason in zip(recs, refused)
                                        if not reason and not np.isfinite(_num(rec, f"{method}_err_mean"))))
            for metric in METRICS:
                values = np.array([_num(rec, f"{method}_{metric}") for rec in recs], dtype=float)
                values = values[np.isfinite(values)]
                row[f"{metric}_mean"] = float(values.mean()) if values.size else float("nan")
                if metric in _WITH_INTERVAL:
                    half = float(1.96 * values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else float("nan")
                    row[f"{metric}_low"] = float(row[f"{metric}_mean"] - half)
                    row[f"{metric}_high"] = float(row[f"{metric}_mean"] + half)
            rows.append(row)
    return {"summary": rows}


def _num(rec, key):
    value = rec.get(key)
    if value is None or value == "":
        return float("nan")
    return float(value)
