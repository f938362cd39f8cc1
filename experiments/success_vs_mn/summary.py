"""success_vs_mn's tables: rates per (r, n, m), the known-label predictions, the 1/2-crossings in m."""

from __future__ import annotations

import numpy as np

from mixreg.metrics import oracle_ls_floor
from mixreg.predictions import Constant, Prediction
from mixreg.problems import make_labels
from mixreg.stats import group_rates
from mixreg.theory import crossing_draws, draws_interval, half_crossing, ls_oracle_success_probability, ls_points_needed

from experiments.success_vs_R.summary import paired_outcomes, paired_test
from experiments.success_vs_R.trial import unpack_levels

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "RULES_DRAWN", "PREDICTION_TEXT", "THRESHOLD_FACTOR", "PREDICTIONS",
           "predictions", "summarise"]

NAME = "success_vs_mn"
TABLES = ("rates", "theory", "crossings", "paired")  # written as <name>.csv; the figures are drawn from them alone
RULES_DRAWN = ("official", "honest", "oracle")
DEFAULT_SEED = 20200604  # IFCA's arXiv submission date, as success_vs_R

#: The success threshold is ``factor sigma + offset``.
THRESHOLD_FACTOR = Constant(0.6, "the official IFCA code's success rule: distance < 0.6 sigma")
_THRESHOLD = f"{THRESHOLD_FACTOR.value:g} sigma + offset"

PREDICTION_TEXT = (
    "known-label least squares on the N pooled points of the smallest cluster (N = m n / k when balanced) "
    "has RMS error sigma sqrt(d / (N - d - 1)) (mixreg.metrics.oracle_ls_floor); where it exceeds the "
    f"threshold {_THRESHOLD} (ls_unlikely), success is improbable even with the true labels, except at "
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

_FIELDS = ("k", "m", "n", "d", "sigma", "threshold_offset")


def _cluster_points(cell):
    """Pooled points per cluster: ``n`` per client, the ``m`` clients dealt as :func:`make_labels`."""
    return np.bincount(make_labels(cell["m"], cell["k"]), minlength=cell["k"]) * cell["n"]


def _ls_rms_over_threshold(cell, factor):
    threshold = factor * cell["sigma"] + cell["threshold_offset"]
    rms = float(np.max(oracle_ls_floor(cell["sigma"], cell["d"], _cluster_points(cell))))
    return rms / threshold if threshold > 0 else float("inf")


def _oracle_success(cell, factor):
    threshold = factor * cell["sigma"] + cell["threshold_offset"]
    return ls_oracle_success_probability(cell["sigma"], cell["d"], _cluster_points(cell), threshold)


def _m_needed(cell, factor):
    return cell["k"] * ls_points_needed(cell["sigma"], cell["d"], factor * cell["sigma"] + cell["threshold_offset"]) \
        / cell["n"]


#: The known-label least-squares predictions of a cell (k, m, n, d, sigma, threshold_offset), exact given
#: the sizes: no constant is fitted.
PREDICTIONS = tuple(
    Prediction(name, formula, text, constants={"factor": THRESHOLD_FACTOR}, fields=_FIELDS)
    for name, formula, text in (
        ("ls_rms_over_threshold", _ls_rms_over_threshold,
         f"sigma sqrt(d / (N - d - 1)) / ({_THRESHOLD}), N the smallest cluster's pooled points"),
        ("oracle_success_probability", _oracle_success,
         f"P(known-label least squares' error < {_THRESHOLD}) on every cluster"),
        ("m_needed", _m_needed,
         f"k N / n, N the pooled points at which sigma sqrt(d / (N - d - 1)) = {_THRESHOLD}"),
    ))


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
        ``N = m n / k``, :func:`mixreg.theory.ls_points_needed`) and ``status``; each of the three
        numbers is one of :data:`PREDICTIONS` at the cell.
    """
    cells = [dict(k=config.k, m=int(m), n=int(n), d=config.d, sigma=config.sigma,
                  threshold_offset=config.threshold_offset) for n in sorted(config.ns) for m in sorted(config.ms)]
    ratio, probability, needed = (p.predict(cells) for p in PREDICTIONS)
    return [dict(n=cell["n"], m=cell["m"], points_per_cluster=int(_cluster_points(cell).min()),
                 ls_rms_over_threshold=float(r), ls_unlikely=bool(r > 1.0), oracle_success_probability=float(q),
                 m_needed=float(mn), status="prediction, fixed before the runs")
            for cell, r, q, mn in zip(cells, ratio, probability, needed)]


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
        ``paired``: one row per (rule, n, m): do the separation scales r differ there?  With
        ``shared_draws`` the r of a trial share its draw, so the test is paired over the trials:
        the exact McNemar test for two r, Cochran's Q (exact conditional p) for more
        (:func:`experiments.success_vs_R.summary.paired_test`); ``test``, ``statistic``, ``df``,
        ``p_value``, ``p_chi2``, ``trials``, ``discordant`` (trials whose r disagree),
        ``successes`` (per r), ``verdict``.  Without ``shared_draws``, or with one r, one row per
        rule saying why nothing is tested (``reason``).

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
    return {"rates": rates, "theory": theory, "crossings": crossings, "paired": _paired_rows(config, records)}


PAIRED_COLUMNS = ("rule", "n", "m", "test", "statistic", "df", "p_value", "p_chi2", "trials", "discordant",
                  "successes", "verdict", "reason")


def _paired_rows(config, records):
    """The ``paired`` table (see :func:`summarise`): the r of each (n, m) compared trial by trial."""
    rs = tuple(sorted(float(r) for r in config.rs))
    if not config.shared_draws or len(rs) < 2:
        reason = ("one r (--rs " + " ".join(f"{r:g}" for r in rs) + "): nothing to compare" if len(rs) < 2 else
                  "the r of a trial are independent draws (no --shared-draws): the rates of crossings.csv and "
                  "rates.csv compare them as independent samples")
        return [dict(dict.fromkeys(PAIRED_COLUMNS), rule=rule, test="not tested", reason=reason)
                for rule in RULES_DRAWN]
    good = [dict(rec, nm=(rec["n"], rec["m"])) for rec in records if not rec.get("error")]
    rows = []
    for rule in RULES_DRAWN:
        blocks = paired_outcomes(good, "r", rs, f"{rule}_success", "nm")
        for (n, m), outcomes in sorted(blocks.items()):
            test = paired_test(outcomes)
            rows.append(dict(rule=rule, n=int(n), m=int(m), test=test.method + " (the r share each trial's draw)",
                             statistic=test.statistic, df=test.df, p_value=test.p_value, p_chi2=test.p_chi2,
                             trials=test.n_blocks, discordant=test.n_discordant,
                             successes=" ".join(f"r={r:g}:{c}" for r, c in zip(rs, test.successes)),
                             verdict="differ at 5%" if test.p_value < 0.05 else "indistinguishable at 5%",
                             reason=None))
    if not rows:  # every trial failed: nothing paired to compare
        rows = [dict(dict.fromkeys(PAIRED_COLUMNS), rule=rule, test="not tested",
                     reason="no trial without an error holds every r") for rule in RULES_DRAWN]
    return rows

