"""success_vs_mn's tables: rates per (r, n, m), the known-label predictions, the 1/2-crossings in m."""

from __future__ import annotations

import numpy as np

from mixreg.metrics import oracle_ls_floor
from mixreg.problems import make_labels
from mixreg.stats import group_rates
from mixreg.theory import crossing_draws, draws_interval, half_crossing, ls_oracle_success_probability, ls_points_needed

from experiments.success_vs_R.trial import unpack_levels

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "RULES_DRAWN", "PREDICTION_TEXT", "predictions", "summarise"]

NAME = "success_vs_mn"
TABLES = ("rates", "theory", "crossings")  # written as <name>.csv; the figures are drawn from them alone
RULES_DRAWN = ("official", "honest", "oracle")
DEFAULT_SEED = 20200604  # IFCA's arXiv submission date, as success_vs_R

PREDICTION_TEXT = (
    "known-label least squares on the N pooled points of the smallest cluster (N = m n / k when balanced) "
    "has RMS error sigma sqrt(d / (N - d - 1)) (mixreg.metrics.oracle_ls_floor); where it exceeds the "
    "threshold 0.6 sigma + offset (ls_unlikely), success is improbable even with the true labels, except at "
    "the edge: its probability there is oracle_success_probability (mixreg.theory.ls_oracle_success_probability; "
    "IFCA converges to least squares on its clusters, so it should not do better); as d grows the error "
    "concentrates at its RMS and the edge closes; fixed by (k, m, n, d, sigma, offset) before any run"
)

#: The r each paper preset's figure plots (the paper's Fig. 3(c) at R = 0.1, 3(d) at R = 0.5; the
#: official scripts also run 0.25 and 0.75): its panels are titled as the paper's.
PAPER_R = {"paper-c": 0.1, "paper-d": 0.5}

#: Inside the predicted region, a cell whose predicted oracle success probability is at least this
#: is an edge cell, reported apart from the cells deep inside (where success should be ~0).
EDGE_PROBABILITY = 0.05


def _threshold(config):
    return 0.6 * config.sigma + config.threshold_offset


def predictions(config):
    """The known-label least-squares prediction per (m, n), from the sizes alone (theory.csv).

    Returns
    -------
    list of dict, one per (n, m)
        ``n``, ``m``, ``points_per_cluster`` (``N`` of the smallest cluster),
        ``ls_rms_over_threshold`` (:func:`mixreg.metrics.oracle_ls_floor` over ``0.6 sigma +
        offset``), ``ls_unlikely`` (that ratio exceeds 1: the shaded region),
        ``oracle_success_probability`` (:func:`mixreg.theory.ls_oracle_success_probability`),
        ``m_needed`` (for this n, the m at which the RMS error meets the threshold with
        ``N = m n / k``, :func:`mixreg.theory.ls_points_needed`) and ``status``.
    """
    threshold = _threshold(config)
    rows = []
    for n in sorted(config.ns):
        m_needed = config.k * ls_points_needed(config.sigma, config.d, threshold) / n
        for m in sorted(config.ms):
            sizes = np.bincount(make_labels(m, config.k), minlength=config.k) * n
            rms = float(np.max(oracle_ls_floor(config.sigma, config.d, sizes)))
            ratio = rms / threshold if threshold > 0 else float("inf")
            rows.append(dict(n=int(n), m=int(m), points_per_cluster=int(sizes.min()),
                             ls_rms_over_threshold=float(ratio), ls_unlikely=bool(ratio > 1.0),
                             oracle_success_probability=float(
                                 ls_oracle_success_probability(config.sigma, config.d, sizes, threshold)),
                             m_needed=float(m_needed), status="prediction, fixed before the runs"))
    return rows


def summarise(config, records):
    """The figures' tables: rates per (r, n, m), the predictions per (m, n), the 1/2-crossings in m.

    Returns
    -------
    dict
        ``rates``: one row per (r, n, m), see :func:`mixreg.stats.group_rates`.
        ``theory``: :func:`predictions` (no data enter it).
        ``crossings``: one row per (rule, r, n): ``m_half`` (where the rate rises through 1/2,
        log-interpolated in m; empty if it never does within the grid), ``m_half_low`` and
        ``m_half_high`` (its 95% interval from Jeffreys-posterior draws of every cell,
        :func:`mixreg.theory.crossing_draws`: 0 or inf when beyond the grid), ``m_needed``
        (predicted) and ``m_half_over_needed``.

    With ``shared_draws`` each record holds every r of its draw; it is unpacked into one record
    per (trial, r) first (:func:`experiments.success_vs_R.trial.unpack_levels`).
    """
    if config.shared_draws:
        records = unpack_levels(records, config.rs, key="r")
    flags = [f"{rule}_success" for rule in RULES_DRAWN]
    rates = group_rates(records, ("r", "n", "m"), flags, mean_of=("separation", "oracle_floor", "n_diverged"))
    theory = predictions(config)
    needed = {row["n"]: row["m_needed"] for row in theory}
    crossings = []
    for rule in RULES_DRAWN:
        for r in sorted({row["r"] for row in rates}):
            for n in sorted({row["n"] for row in rates}):
                rows = sorted((row for row in rates if row["r"] == r and row["n"] == n), key=lambda row: row["m"])
                m = np.array([row["m"] for row in rows], dtype=float)
                value = half_crossing(m, [row[f"{rule}_success_rate"] for row in rows])
                hits = [round(row[f"{rule}_success_rate"] * row["trials"]) for row in rows]
                draws = crossing_draws(m, hits, [row["trials"] for row in rows], seed=DEFAULT_SEED)
                low, high = draws_interval(draws)
                crossings.append(dict(rule=rule, r=float(r), n=int(n), m_half=None if np.isnan(value) else value,
                                      m_half_low=low, m_half_high=high, m_needed=needed[n],
                                      m_half_over_needed=None if np.isnan(value) else value / needed[n]))
    return {"rates": rates, "theory": theory, "crossings": crossings}
