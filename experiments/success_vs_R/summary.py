"""success_vs_R's tables: success rates per (sigma, r) and the theory checked against them."""

from __future__ import annotations

import numpy as np

from mixreg.metrics import oracle_ls_floor
from mixreg.problems import make_labels
from mixreg.stats import cochran_q, group_rates, mcnemar_exact, wilson_interval
from mixreg.theory import (
    crossing_draws,
    draws_interval,
    half_crossing,
    held_out_constant,
    ifca_separation_threshold,
    ls_oracle_success_probability,
    stratified_homogeneity_test,
)

from .trial import unpack_levels

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "THEORY_COLUMNS", "CHECKED_RULES", "ONE_CELL", "predictions",
           "summarise", "paired_outcomes", "paired_test", "crossing_cells"]

NAME = "success_vs_R"
TABLES = ("rates", "theory")  # written as <name>.csv; the figure is drawn from them alone
DEFAULT_SEED = 20200604  # IFCA's arXiv submission date; any fixed integer would do

#: theory.csv: one row per statement, in long form (every row has these columns).
THEORY_COLUMNS = ("kind", "quantity", "rule", "sigma", "r", "value", "low", "high", "residual", "p_value",
                  "verdict", "label", "reason")
CHECKED_RULES = ("official", "honest")  # the rules whose curves are tested and drawn
N_PERMUTATIONS = 20000  # draws of the exact test that the noise levels differ (fixed seed)
N_DRAWS = 4000  # posterior draws per curve for the crossings' intervals (fixed seeds)
#: A 1/2-crossing rests on the grid cells whose 95% Wilson interval holds 1/2 (the cells that cannot tell
#: whether the curve is below or above 1/2 there).  With none, the crossing is bracketed by two adjacent
#: grid cells on either side of 1/2 and its interval spans that bracket; with two or more, the curve is
#: measured through 1/2 at two cells or more; with exactly one, its place in the two grid intervals
#: around that cell is the log-linear interpolation's, and crossings that agree only say that the rates
#: agree at that cell: a collapse or held-out "consistent" resting on such a curve is "undetermined".
ONE_CELL = 1
SEPARATION_SCALE_LABEL = ("scale suggested by Thm 1's separation condition, unit constants, n' = n "
                          "(outside its assumptions: random init, no resampling)")


def _row(kind, quantity, value, **fields):
    """One row of theory.csv; numbers as plain floats (a NumPy scalar would be written as its repr).

    A row with a ``reason`` is a statement the run cannot support (one separation, one cluster,
    one noise level): its numbers that could not be computed are blank, and ``reason`` says why,
    naming the flag.
    """
    row = dict.fromkeys(THEORY_COLUMNS)
    row.update(kind=kind, quantity=quantity, value=value, label="")
    row.update(fields)
    for key in ("sigma", "r", "value", "low", "high", "residual", "p_value"):
        if row[key] is not None:
            row[key] = float(row[key])
            if row["reason"] and np.isnan(row[key]):
                row[key] = None
    return row


def _flag(name, values):
    """The flag that gave ``values``, as the user typed it: ``--rs 0.3 1``."""
    return f"--{name} " + " ".join(f"{v:g}" for v in values)


def _no_crossing_reason(config, n_separations):
    """Why no 1/2-crossing can be located on a curve with ``n_separations`` points of Δ > 0 (None: one can)."""
    if n_separations >= 2:
        return None
    if config.k == 1:
        return "--k 1: one cluster has no separation Δ, so no crossing in Δ"
    if len(config.rs) < 2:
        return f"a 1/2-crossing needs the rate at two separations or more; got {_flag('rs', config.rs)}"
    return (f"a 1/2-crossing needs the rate at two separations or more; {n_separations} r of "
            f"{_flag('rs', config.rs)} recorded a separation Δ > 0")


def _cluster_sizes(config):
    """Pooled points per cluster: the library's balanced contiguous labels times n."""
    return np.bincount(make_labels(config.m, config.k), minlength=config.k) * config.n


def predictions(config):
    """What the theory says before any run, per noise level (rows of theory.csv, kind "prediction").

    * ``ls_rms_over_threshold``: the known-label least-squares RMS error
      ``sigma sqrt(d / (N - d - 1))`` over the threshold ``0.6 sigma + offset`` (above 1: success
      unlikely for any method, see :func:`mixreg.theory.ls_points_needed`);
    * ``oracle_success_probability``: the oracle rule's success probability,
      :func:`mixreg.theory.ls_oracle_success_probability`;
    * ``separation_scale``: the root of Theorem 1's separation condition with unit constants and
      ``n' = n`` (:func:`mixreg.theory.ifca_separation_threshold`), the x-scale of the collapse
      panel.  The runs use random initialisation and no resampling, so Theorem 1's Assumption 1
      fails: the scale is a candidate to test, not a consequence of the theorem.
    """
    sizes = _cluster_sizes(config)
    p = float(sizes.min()) / (config.m * config.n)
    rows = []
    for sigma in sorted(config.sigmas):
        threshold = 0.6 * sigma + config.threshold_offset
        rms = float(np.mean(oracle_ls_floor(sigma, config.d, sizes)))
        rows.append(_row("prediction", "ls_rms_over_threshold", rms / threshold, rule="oracle", sigma=sigma,
                         label=f"known-label LS RMS error σ√(d/(N−d−1)) = {rms:.3g} (N = {int(sizes.min())} per "
                               f"cluster) over the threshold 0.6σ + {config.threshold_offset:g}; fixed by the "
                               "sizes before the runs"))
        prob = ls_oracle_success_probability(sigma, config.d, sizes, threshold)
        rows.append(_row("prediction", "oracle_success_probability", prob, rule="oracle", sigma=sigma,
                         label="known-label LS meets the threshold: probability from the exact error moments, "
                               "fixed by the sizes before the runs"))
        sep = ifca_separation_threshold(sigma, p, config.d, config.m, config.n)
        rows.append(_row("prediction", "separation_scale", sep, sigma=sigma, label=SEPARATION_SCALE_LABEL))
    return rows


def crossing_cells(successes, trials, level=0.5):
    """How many grid cells of a curve have a 95% Wilson interval holding ``level``: the cells that
    place its crossing (``successes``, ``trials``: arrays over the grid)."""
    low, high = wilson_interval(np.asarray(successes), np.asarray(trials))
    return int(np.count_nonzero((np.asarray(trials) > 0) & (low <= level) & (level <= high)))


def _undetermined_by_cells(cells):
    """The verdict replacing "consistent" when a curve's crossing rests on one grid cell near 1/2
    (:data:`ONE_CELL`); None when none does."""
    if ONE_CELL not in list(cells):
        return None
    return (f"undetermined ({list(cells).count(ONE_CELL)} of {len(cells)} curves cross 1/2 on one grid cell: "
            "their crossings agree as their rates at that cell do)")


def _verdict_of_collapse(crossings, cells=None):
    """Whether the 1/2-crossings of all noise levels can be one point: their intervals meet; a
    "consistent" verdict is "undetermined" when a curve crosses on one grid cell (``cells``, the
    count of :func:`crossing_cells` per curve; see :data:`ONE_CELL`)."""
    if not crossings:
        return float("nan"), float("nan"), float("nan"), "undetermined"
    values = [c[0] for c in crossings if np.isfinite(c[0]) and c[0] > 0]
    common_low = max(c[1] for c in crossings)
    common_high = min(c[2] for c in crossings)
    spread = max(values) / min(values) if len(values) >= 2 else float("nan")
    if any(np.isnan(c[1]) or np.isnan(c[2]) for c in crossings) or len(crossings) < 2:
        verdict = "undetermined"
    elif not values:  # every level crosses below (or beyond) the grid: nothing to compare
        verdict = "undetermined (no crossing in the grid)"
    elif common_low <= common_high:
        verdict = (cells is not None and _undetermined_by_cells(cells)) or "consistent with one curve"
    else:
        verdict = "does not collapse"
    return spread, common_low, common_high, verdict


def summarise(config, records):
    """The figure's tables: success rates per (sigma, r), and the theory checked against them.

    Returns
    -------
    dict
        ``rates``: one row per (sigma, r), see :func:`mixreg.stats.group_rates`.
        ``theory``: one row per statement, columns :data:`THEORY_COLUMNS`; ``kind`` says what
        it is:

        * ``prediction`` (fixed by the config before any run, see :func:`predictions`);
        * ``observation``: ``oracle_success_rate`` per sigma (pooled over r, Wilson interval);
          ``half_crossing`` per rule and sigma (the separation where the rate rises through
          1/2, log-interpolated, with a 95% interval from Jeffreys-posterior draws of every
          cell, :func:`mixreg.theory.crossing_draws`);
          ``half_crossing_scaled`` (the same on the separation-condition scale);
          ``delta_per_r`` (mean realised separation over ``r``, the top axis);
          ``crossing_cells`` per rule and sigma (:func:`crossing_cells`: the grid cells whose 95%
          Wilson interval holds 1/2; a collapse or held-out "consistent" resting on a curve with
          exactly one is "undetermined", see :data:`ONE_CELL`);
        * ``test``: ``collapse_delta`` and ``collapse_separation_scale`` per rule (``value``
          the spread max/min of the crossings on that scale, ``low``/``high`` the range common
          to all their intervals, ``verdict``: do the curves collapse), and the same over the
          noise levels ``sigma > 0`` only (``..._noisy``: at ``sigma = 0`` the separation
          condition's scale is its exponential term alone);
          ``sigma_homogeneity`` per rule and r, and pooled over r (``r`` empty): the test that the
          noise levels share one success probability, named with its reason in ``label``: with
          ``shared_draws`` the levels of a trial share its draw, so it is paired over the trials
          (:func:`paired_test`: Cochran's Q with its exact conditional p-value, ``value`` Q; the
          exact McNemar test for two levels; pooled over r, every trial of every r is a block);
          otherwise the exact conditional G test stratified by r for independent samples
          (``value`` G); ``p_value`` the exact (or permutation) p-value; with one noise level,
          one row per rule saying there is nothing to test;
        * ``held_out``: ``noise_term_crossing`` and ``sigma_free_crossing`` per rule and sigma:
          the crossing predicted from a constant fitted on the *other* sigma levels, for the
          model ``Delta_50 = C (sigma/p) sqrt(d/(m n))`` and the model ``Delta_50 = C``
          (``value`` the predicted crossing, ``residual`` ``log10(predicted / observed)``,
          ``low``/``high`` its 95% interval over the draws, ``verdict``: consistent when the
          interval holds 0).

        Every legal run gives both tables: a statement its grid cannot support (a crossing with
        one separation or with ``k = 1``, a collapse or a fit with one noise level) is a row
        whose numbers are blank and whose ``reason`` says why, naming the flag; ``reason`` is
        empty otherwise.

    With ``shared_draws`` each record holds every noise level of its draw; it is unpacked into
    one record per (trial, sigma) first (:func:`.trial.unpack_levels`).
    """
    if config.shared_draws:
        records = unpack_levels(records, config.sigmas)
    flags = [f"{rule}_success" for rule in ("official", "honest", "oracle")]
    rates = group_rates(records, ("sigma", "r"), flags, mean_of=("separation", "oracle_floor", "n_diverged"))
    good = [rec for rec in records if not rec.get("error")]
    sigmas = sorted({row["sigma"] for row in rates})
    rs = sorted({row["r"] for row in rates})
    theory = [row for row in predictions(config) if row["sigma"] in sigmas]
    scale = {row["sigma"]: row["value"] for row in theory if row["quantity"] == "separation_scale"}
    p = float(_cluster_sizes(config).min()) / (config.m * config.n)

    for sigma in sigmas:  # the oracle, pooled over r: its prediction does not depend on the separation
        hits = [bool(rec["oracle_success"]) for rec in good if rec["sigma"] == sigma]
        lo, hi = wilson_interval(sum(hits), len(hits))
        theory.append(_row("observation", "oracle_success_rate", sum(hits) / len(hits), rule="oracle", sigma=sigma,
                           low=lo, high=hi, label=f"known-label LS met the threshold in {sum(hits)}/{len(hits)} "
                                                  "trials (all r)"))
    paired = config.shared_draws and len(sigmas) >= 2
    for rule in CHECKED_RULES:
        successes = np.array([[sum(bool(rec[f"{rule}_success"]) for rec in good if rec["sigma"] == s and rec["r"] == r)
                               for s in sigmas] for r in rs], dtype=np.int64)
        trials = np.array([[sum(1 for rec in good if rec["sigma"] == s and rec["r"] == r) for s in sigmas]
                           for r in rs], dtype=np.int64)
        crossings, draws, no_crossing = {}, {}, {}
        for j, sigma in enumerate(sigmas):
            rows = {r["r"]: r for r in rates if r["sigma"] == sigma}
            cells = sorted((rows[r]["separation_mean"], i) for i, r in enumerate(rs)
                           if r in rows and _given(rows[r]["separation_mean"]) and rows[r]["separation_mean"] > 0)
            x = np.array([c[0] for c in cells], dtype=float)
            idx = [c[1] for c in cells]
            no_crossing[sigma] = _no_crossing_reason(config, len(cells))
            if no_crossing[sigma]:
                crossings[sigma], draws[sigma] = (np.nan,) * 3, np.full(N_DRAWS, np.nan)
                continue
            value = half_crossing(x, [rows[rs[i]][f"{rule}_success_rate"] for i in idx])
            draws[sigma] = crossing_draws(x, successes[idx, j], trials[idx, j], n_draws=N_DRAWS, seed=DEFAULT_SEED + j)
            crossings[sigma] = (value, *draws_interval(draws[sigma]))
        scaled = {s: tuple(v / scale[s] for v in crossings[s]) for s in sigmas}
        cells = {s: crossing_cells(successes[:, j], trials[:, j]) for j, s in enumerate(sigmas)}
        for sigma in sigmas:
            theory.append(_row("observation", "crossing_cells", cells[sigma], rule=rule, sigma=sigma,
                               label=f"grid cells whose 95% Wilson interval holds 1/2 (of {len(rs)}): the cells that "
                                     "place the 1/2-crossing; with exactly one, its place between grid points is "
                                     "the log-linear interpolation's and a collapse or held-out 'consistent' "
                                     "resting on it is undetermined"))
        for sigma in sigmas:
            for quantity, (value, low, high) in (("half_crossing", crossings[sigma]),
                                                 ("half_crossing_scaled", scaled[sigma])):
                theory.append(_row("observation", quantity, value, rule=rule, sigma=sigma, low=low, high=high,
                                   reason=no_crossing[sigma], label="separation where the success rate rises through 1/2 (log-interpolated); "
                                         "95% interval from Jeffreys-posterior draws of every cell (0: below the "
                                         "grid, inf: beyond it)" + ("; divided by the separation-condition scale"
                                                                    if quantity == "half_crossing_scaled" else "")))
        for quantity, values, label in (("collapse_delta", crossings, "separation Δ (no σ in the scale)"),
                                        ("collapse_separation_scale", scaled, "Δ / " + SEPARATION_SCALE_LABEL)):
            verdicts, rows = {}, {}
            for suffix, levels, which in (("_noisy", [s for s in sigmas if s > 0], "σ > 0"), ("", sigmas, "all σ")):
                spread, low, high, verdict = _verdict_of_collapse([values[s] for s in levels],
                                                                  [cells[s] for s in levels])
                if (suffix == "" and verdict == "does not collapse" and 0.0 in levels and len(levels) > 2
                        and not verdicts["_noisy"].startswith("does not collapse")):
                    verdict = ("does not collapse only through σ = 0" + (
                        " (its scale is the separation condition's exponential term alone)"
                        if quantity == "collapse_separation_scale" else ""))
                verdicts[suffix] = verdict
                if not levels:
                    reason = f"no σ > 0 among {_flag('sigmas', config.sigmas)}: nothing to collapse"
                elif len(levels) < 2:
                    reason = f"one noise level ({which}: {_flag('sigmas', config.sigmas)}): nothing to collapse"
                else:
                    reason = next((no_crossing[s] for s in levels if no_crossing[s]), None)
                rows[suffix] = _row("test", quantity + suffix, spread, rule=rule, low=low, high=high, verdict=verdict,
                                   reason=reason, label=f"do the 1/2-crossings of {which} share a point on the scale {label}? value: "
                                         "max/min of the crossings; low-high: the range common to their 95% "
                                         "intervals")
            theory += [rows[""], rows["_noisy"]]
        observed = np.array([crossings[s][0] for s in sigmas])
        noise_ref = np.array([(s / p) * np.sqrt(config.d / (config.m * config.n)) for s in sigmas])
        for quantity, reference, model in (
            ("noise_term_crossing", noise_ref, "Δ½ = C (σ/p)√(d/(m n)) (the noise term's scale)"),
            ("sigma_free_crossing", np.ones(len(sigmas)), "Δ½ = C (no σ dependence)"),
        ):
            fits = held_out_constant(observed, np.array([draws[s] for s in sigmas]), reference)
            few = _undetermined_by_cells(list(cells.values()))
            for sigma, fit in zip(sigmas, fits):
                if fit["verdict"] == "consistent" and few:
                    fit = dict(fit, verdict=few)
                used = ", ".join(f"{sigmas[i]:g}" for i in fit["fitted_on"]) or "none"
                reason = no_crossing[sigma]
                if not fit["fitted_on"]:
                    reason = (f"one noise level ({_flag('sigmas', config.sigmas)}): no other σ to fit C on"
                              if len(sigmas) < 2 else reason or "no other σ has a 1/2-crossing in the grid to fit C on")
                theory.append(_row("held_out", quantity, fit["predicted"], rule=rule, sigma=sigma,
                                   low=fit["residual_low"], high=fit["residual_high"], residual=fit["residual"],
                                   verdict=fit["verdict"], reason=reason,
                                   label=f"{model}, C = {fit['C']:.3g} fitted on σ ∈ {{{used}}}, predicting the "
                                         f"held-out σ = {sigma:g}; value: the predicted crossing; residual "
                                         "log10(predicted/observed), low-high its 95% interval over the draws"))
        if len(sigmas) < 2:
            theory.append(_row("test", "sigma_homogeneity", None, rule=rule, verdict="not tested",
                               label="exact conditional test that all σ share one success probability",
                               reason=f"one noise level ({_flag('sigmas', config.sigmas)}): nothing to compare"))
            continue
        if paired:
            blocks = paired_outcomes(good, "sigma", sigmas, f"{rule}_success", "r")
            for r_value in [None] + rs:
                outcomes = (np.vstack([blocks[r] for r in rs if r in blocks]) if r_value is None
                            else blocks.get(r_value, np.zeros((0, len(sigmas)), dtype=np.int64)))
                test = paired_test(outcomes)
                where = "at this r" if r_value is not None else "at every r (each trial of every r one block)"
                theory.append(_row(
                    "test", "sigma_homogeneity", test.statistic, rule=rule, r=r_value, p_value=test.p_value,
                    verdict="differ at 5%" if test.p_value < 0.05 else "indistinguishable at 5%",
                    label=f"{test.method}, {where}: the σ levels share each trial's draw (--shared-draws), so "
                          f"the test is paired over the {test.n_blocks} trials ({test.n_discordant} with "
                          f"levels that disagree); statistic {test.statistic:.3g}, df = {test.df}, chi-square "
                          f"p = {test.p_chi2:.3g}; successes per σ "
                          + ", ".join(f"{s:g}: {c}" for s, c in zip(sigmas, test.successes))))
            continue
        strata = [(r_value, successes[i:i + 1], trials[i:i + 1]) for i, r_value in enumerate(rs)]
        for r_value, succ, tri in [(None, successes, trials)] + strata:
            test = stratified_homogeneity_test(succ, tri, n_permutations=N_PERMUTATIONS, seed=DEFAULT_SEED)
            theory.append(_row("test", "sigma_homogeneity", test["G"], rule=rule, r=r_value, p_value=test["p_value"],
                               verdict="differ at 5%" if test["p_value"] < 0.05 else "indistinguishable at 5%",
                               label=f"exact conditional test that all σ share one success probability "
                                     f"{'at this r' if r_value is not None else 'at every r (stratified by r)'}, "
                                     "for independent draws per σ (no --shared-draws): "
                                     f"G = {test['G']:.3g}, df = {test['df']}, chi-square p = {test['p_chi2']:.3g}, "
                                     f"{N_PERMUTATIONS} hypergeometric draws"))
    ratios = [rec["separation"] / rec["r"] for rec in good]
    if ratios and config.protocol == "official":
        theory.append(_row("observation", "delta_per_r", float(np.mean(ratios)) if config.k > 1 else None,
                           label="mean realised separation over r (the top axis)",
                           reason="--k 1: one cluster has no separation Δ" if config.k == 1 else None))
    return {"rates": rates, "theory": theory}


def _given(value):
    """Whether a table's field holds a number (an empty field reads as nan, or None)."""
    return value is not None and bool(np.isfinite(value))


def paired_outcomes(records, level_key, levels, flag, stratum_key):
    """The outcomes of paired levels, one block per trial: ``{stratum: int array (n_trials, L)}``.

    ``records`` are unpacked records (:func:`.trial.unpack_levels`: one per (trial, level), the
    trial's ``cell`` and ``trial`` kept); a block is one (``cell``, ``trial``), its row the
    ``flag`` (0/1) at each of ``levels`` (``level_key``), grouped by ``stratum_key``.  A trial
    that failed (an ``error``) or lacks a level is left out whole: a paired test compares the
    levels on the same draws only.
    """
    index = {float(level): j for j, level in enumerate(levels)}
    blocks = {}
    for rec in records:
        if rec.get("error"):
            continue
        key = (rec[stratum_key], rec["cell"], rec["trial"])
        row = blocks.setdefault(key, [None] * len(levels))
        row[index[float(rec[level_key])]] = int(bool(rec[flag]))
    out = {}
    for (stratum, _, _), row in sorted(blocks.items()):
        if None not in row:
            out.setdefault(stratum, []).append(row)
    return {stratum: np.array(rows, dtype=np.int64).reshape(-1, len(levels)) for stratum, rows in out.items()}


def paired_test(outcomes):
    """The paired test of levels measured on the same trials: the exact McNemar test for two levels
    (:func:`mixreg.stats.mcnemar_exact`), Cochran's Q with its exact conditional p-value for more
    (:func:`mixreg.stats.cochran_q`; a permutation p-value from a fixed seed beyond its state limit)."""
    outcomes = np.asarray(outcomes)
    if outcomes.shape[1] == 2:
        return mcnemar_exact(outcomes[:, 0], outcomes[:, 1])
    return cochran_q(outcomes, n_permutations=N_PERMUTATIONS, seed=DEFAULT_SEED)
