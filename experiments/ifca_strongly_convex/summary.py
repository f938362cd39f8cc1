"""The strongly convex study's tables and its predictions, registered before the data.

Tables (each a list of dicts, written as ``<name>.csv``):

* ``factors``: per ``(kappa, p)`` rate cell and cluster, the measured per-round factor over the
  window far above the floor (the RMS distance over the trials, ``(RMS_w / r0)^(1/w)``), against
  Theorem 2's ``1 - p lambda / (8 L)`` and the exact second moments' factor, and the paired ratio
  of each trial's squared distance at the window's end to its exact mean given the trial's start;
* ``rounds``: per rate cell, the rounds to ``max_j ||theta_j - theta*_j|| <= eps`` against
  Theorem 2's ``T = (8 L / (p lambda)) log(Delta / (2 eps))``; ``rounds_fit``: the exponent of the
  measured rounds in ``L / (p lambda)``;
* ``floor_points`` and ``floor_exponents``: the final error along the ``m`` and ``n'`` axes and its
  fitted exponents against Theorem 2's ``-1/2`` (with a held-out cell), and the exact mean square;
* ``lemma`` and ``lemma_decay``: the misclustering probability per worker-round against Lemma 3's
  Chebyshev bound, the proof's Chebyshev step and the exact probability (paired per trial), and its
  decay in ``n'`` (the polynomial exponent, the exponential rate, the exact Chernoff exponent).

Intervals: ``low``/``high`` are 95% (``level``) bootstrap or Wilson intervals of a cell;
``fw_low``/``fw_high`` (and ``paired_*``, ``ms_fw_*``) Student-t intervals of the mean over trials
at the Bonferroni level ``1 - (1 - level) / cells`` of their table (``fw_level``), so that all the
cells of a table hold together at ``level``: what the claims' checks compare with.  In ``lemma``
they are Garwood intervals of the count of misclustered worker-rounds (over ``worker_rounds``), and
``count_ratio`` (with ``count_low``/``count_high``) is the count over its exact expectation given
each trial's models (``expected``): the paired comparison with the exact probability.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.stats

from mixreg.predictions import Constant, Prediction, fit_exponent
from mixreg.stats import bootstrap_mean_interval, loglog_slope, wilson_interval
from mixreg.theory._ifca_sc import LEMMA3_CONSTANT, THEOREM2_CONSTANT, lemma3_bound

from .trial import K, ScSpec, plan

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "PREDICTIONS", "PREDICTION", "summarise", "window_factor",
           "final_mean_square"]

NAME = "ifca_strongly_convex"
TABLES = ("factors", "rounds", "rounds_fit", "floor_points", "floor_exponents", "lemma", "lemma_decay")
DEFAULT_SEED = 20201103  # any fixed integer


def _thm2_factor(cell, c):
    """Theorem 2's per-round factor at a row with ``p`` (smallest proportion) and ``kappa = L / lambda``."""
    return 1.0 - cell["p"] / (c * cell["kappa"])


def _thm2_rounds(cell, c):
    """Theorem 2's ``T`` at a row with ``p``, ``kappa``, ``delta``, ``eps``."""
    return c * cell["kappa"] / cell["p"] * math.log(cell["delta"] / (2.0 * cell["eps"]))


def _exponent(cell, value):
    return value


def _per_axis(cell, m, n_prime):
    return {"m": m, "n_prime": n_prime}[cell["axis"]]


def _lemma3(cell, c):
    """Lemma 3's bound at a row with ``eta2`` (the exact loss variance), ``kappa``, ``delta``, ``n_prime``."""
    return lemma3_bound(cell["eta2"], 2.0 / cell["kappa"], cell["delta"], int(cell["n_prime"]), k=K, c=c)


def window_factor(cell):
    """The exact second moments' factor over a window: ``(E||e_w||^2 / r0^2)^(1 / (2 w))`` at a row
    with the cell's ``spec`` fields (derived, :func:`mixreg.theory.ifca_sc_second_moments`)."""
    spec = ScSpec.from_cell(cell["cell"])
    planned = plan(spec)
    j, w = int(cell["cluster"]), planned["window"][int(cell["cluster"])]
    r0 = spec.r0 * spec.problem.scale
    return float((planned["moments"][j][w] / r0**2) ** (0.5 / w)) if w > 0 else math.nan


def final_mean_square(cell):
    """The exact ``mean_j E||theta_j^(T) - theta*_j||^2`` after the cell's rounds (derived)."""
    planned = plan(ScSpec.from_cell(cell["cell"]))
    return float(np.mean([mom[-1] for mom in planned["moments"]]))


#: Fixed before the data, registered in the manifest before the first trial.
PREDICTIONS = (
    Prediction("thm2_factor", _thm2_factor, "per-round factor <= 1 - p lambda / (8 L) (a bound, far above the floor)",
               constants={"c": Constant(THEOREM2_CONSTANT, "IFCA, Theorem 2's per-iteration contraction")},
               fields=("p", "kappa")),
    Prediction("thm2_rounds", _thm2_rounds, "rounds to eps <= T = (8 L / (p lambda)) log(Delta / (2 eps))",
               constants={"c": Constant(THEOREM2_CONSTANT, "IFCA, Theorem 2")}, fields=("p", "kappa", "delta", "eps")),
    Prediction("thm2_rounds_exponent", _exponent, "rounds to eps ~ (L / (p lambda))^1 at fixed Delta, eps",
               constants={"value": Constant(1.0, "IFCA, Theorem 2's T")}),
    Prediction("thm2_rate_exponent", _per_axis, "final error ~ 1/sqrt(m n') (+ 1/n'): exponent -1/2 in m and n'",
               constants={"m": Constant(-0.5, "IFCA, Theorem 2: O~(1/sqrt(m n') + 1/n')"),
                          "n_prime": Constant(-0.5, "IFCA, Theorem 2: its 1/sqrt(m n') term")},
               fields=("axis",)),
    Prediction("exact_window_factor", window_factor, "factor of the exact second moments over the window "
               "(derived: right identities, Gaussian rows)", fields=("cell", "cluster")),
    Prediction("exact_final_mean_square", final_mean_square, "mean_j E||theta_j^(T) - theta*_j||^2 of the exact "
               "second moments (derived)", fields=("cell",)),
    Prediction("lemma3_bound", _lemma3, "P(misclustered) <= 128 (k - 1) eta^2 / (lambda^2 Delta^4 n')",
               constants={"c": Constant(LEMMA3_CONSTANT, "IFCA, Lemma 3 (App. C.1: 2 x 64, our reconstruction)")},
               fields=("eta2", "kappa", "delta", "n_prime")),
)
#: The predictions by name.
PREDICTION = {p.name: p for p in PREDICTIONS}


def _ok(records):
    return [r for r in records if not r.get("failed") and not r.get("diverged")]


_CELL_KEYS = ("m", "d", "sigma", "delta", "n_prime", "family", "kappa", "p_min", "r0", "rounds", "eps", "far")


def _group(records, family):
    groups = {}
    for r in records:
        if r["family"] == family:
            groups.setdefault(tuple(r[k] for k in _CELL_KEYS), []).append(r)
    return [(dict(zip(_CELL_KEYS, key)), recs) for key, recs in groups.items()]


def _rng(*keys):
    return np.random.default_rng([DEFAULT_SEED, *keys])


def family_level(level, cells):
    """The level of each of ``cells`` intervals whose union holds at ``level`` (Bonferroni)."""
    return 1.0 - (1.0 - level) / max(int(cells), 1)


def garwood_interval(count, level):
    """Exact (Garwood) interval at ``level`` of a Poisson mean from one ``count``.

    Used for a count of misclustered worker-rounds: given each trial's geometry the count is a sum
    of independent Bernoulli variables, whose variance is at most the Poisson's (conservative for
    large probabilities, exact in the limit of rare events, where a normal interval fails).

    Examples
    --------
    >>> [round(v, 3) for v in garwood_interval(0, 0.95)]
    [0.0, 3.689]
    """
    alpha = 1.0 - level
    low = 0.0 if count == 0 else float(scipy.stats.chi2.ppf(alpha / 2, 2 * count) / 2)
    return low, float(scipy.stats.chi2.ppf(1 - alpha / 2, 2 * count + 2) / 2)


def t_interval(values, level):
    """Mean of the finite ``values`` and its Student-t interval at ``level`` (``nan`` with < 2 values)."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return (float(v.mean()) if v.size else math.nan), math.nan, math.nan
    half = float(scipy.stats.t.ppf(0.5 + level / 2, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))
    return float(v.mean()), float(v.mean() - half), float(v.mean() + half)


def _factors(config, records):
    rows = []
    groups = _group(records, "rate")
    fw = family_level(config.level, K * len(groups))
    for i, (cell, recs) in enumerate(groups):
        spec = ScSpec.from_cell(cell)
        planned = plan(spec)
        p = float(min(planned["p"]))
        r0 = spec.r0 * spec.problem.scale
        bound = float(PREDICTION["thm2_factor"].predict([dict(p=p, kappa=spec.kappa)])[0])
        for j in range(K):
            w = planned["window"][j]
            d2 = np.array([r[f"d2win_{j}"] for r in recs], dtype=float)
            mean, low, high = bootstrap_mean_interval(d2, _rng(1, i, j), config.n_boot, config.level)
            def f(v, w=w):  # the per-round factor of a mean square at the window's end
                return (v / r0**2) ** (0.5 / w) if w > 0 and v > 0 else math.nan

            per_trial = np.array([f(v) for v in d2])
            exact = window_factor(dict(cell=cell, cluster=j))
            measured = f(mean)
            _, fw_low, fw_high = t_interval(d2, fw)
            paired = d2 / np.array([r[f"exact2win_{j}"] for r in recs], dtype=float)
            ratio, ratio_low, ratio_high = t_interval(paired, fw)
            rows.append(dict(
                kappa=spec.kappa, p=p, p_j=float(planned["p"][j]), cluster=j, ratio=spec.kappa / p,
                m=spec.problem.m, n_prime=spec.problem.n, trials=len(recs), window=w, r0=r0,
                factor=measured, low=f(low), high=f(high), fw_low=f(max(fw_low, 1e-300)), fw_high=f(fw_high),
                fw_level=fw, exact=exact, bound=bound, paired_ratio=ratio, paired_low=ratio_low,
                paired_high=ratio_high,
                population=1.0 - float(planned["p"][j]) / spec.kappa,
                looseness=(1.0 - measured) / (1.0 - bound) if np.isfinite(measured) else math.nan,
                above_bound=int(np.sum(per_trial > bound)),
                lam=float(np.mean([r["lam"] for r in recs])), L=float(np.mean([r["L"] for r in recs])),
                wrong_all=float(np.mean([r[f"wrong_all_{j}"] for r in recs])),
            ))
    return rows


def _exact_rounds(spec, planned):
    """First round at which the exact RMS of every cluster is <= eps (derived, for the figure)."""
    rms = np.sqrt(np.max(np.vstack(planned["moments"]), axis=0))
    hit = np.nonzero(rms <= spec.eps)[0]
    return float(hit[0]) if hit.size else math.nan


def _rounds(config, records):
    rows = []
    for i, (cell, recs) in enumerate(_group(records, "rate")):
        spec = ScSpec.from_cell(cell)
        planned = plan(spec)
        p = float(min(planned["p"]))
        vals = np.array([r["rounds_eps"] for r in recs], dtype=float)
        finite = vals[np.isfinite(vals)]
        mean, low, high = (bootstrap_mean_interval(finite, _rng(2, i), config.n_boot, config.level) if finite.size
                           else (math.nan, math.nan, math.nan))
        delta = float(np.mean([r["separation"] for r in recs]))
        rows.append(dict(
            kappa=spec.kappa, p=p, ratio=spec.kappa / p, trials=len(recs), not_reached=int(np.sum(~np.isfinite(vals))),
            run_rounds=spec.rounds, eps=spec.eps, delta=delta, mean=mean, low=low, high=high,
            max=float(finite.max()) if finite.size else math.nan,
            thm2_T=float(PREDICTION["thm2_rounds"].predict([dict(p=p, kappa=spec.kappa, delta=delta,
                                                                  eps=spec.eps)])[0]),
            exact_rounds=_exact_rounds(spec, planned),
        ))
    return sorted(rows, key=lambda r: r["ratio"])


def _rounds_fit(config, records, rounds):
    groups = _group(records, "rate")
    xs = [ScSpec.from_cell(c).kappa / float(min(plan(ScSpec.from_cell(c))["p"])) for c, _ in groups]
    ys = [np.array([r["rounds_eps"] for r in recs], dtype=float) for _, recs in groups]
    rows = []
    if len(set(xs)) == len(xs) and len(xs) >= 2:
        fit = fit_exponent(xs, ys, statistic="mean", n_boot=config.n_boot, level=config.level, rng=_rng(3))
        derived = loglog_slope([r["ratio"] for r in rounds], [r["exact_rounds"] for r in rounds])
        rows.append(dict(x="L / (p lambda)", predicted=float(PREDICTION["thm2_rounds_exponent"].predict([{}])[0]),
                         fitted=fit.slope, low=fit.low, high=fit.high, level=fit.level, n_points=fit.n_points,
                         intercept=fit.intercept, derived=derived))
    return rows


def _floor_points(config, records):
    rows = []
    ref = dict(m=config.m_ref, n_prime=config.n_prime_ref)
    groups = _group(records, "floor")
    fw = family_level(config.level, len(groups))
    for i, (cell, recs) in enumerate(groups):
        spec = ScSpec.from_cell(cell)
        ms = np.array([np.mean([r[f"final2_{j}"] for j in range(K)]) for r in recs])
        mean, low, high = bootstrap_mean_interval(ms, _rng(4, i), config.n_boot, config.level)
        _, fw_low, fw_high = t_interval(ms, fw)
        rms = np.sqrt(ms)
        rmean, rlow, rhigh = bootstrap_mean_interval(rms, _rng(5, i), config.n_boot, config.level)
        for axis, other in (("m", "n_prime"), ("n_prime", "m")):  # the reference cell is on both axes
            if cell[other] != ref[other]:
                continue
            rows.append(dict(axis=axis, x=float(cell[axis]), m=cell["m"], n_prime=cell["n_prime"], kappa=spec.kappa,
                             rounds=spec.rounds, trials=len(recs), ms=mean, ms_low=low, ms_high=high,
                             ms_fw_low=fw_low, ms_fw_high=fw_high, fw_level=fw,
                             exact_ms=final_mean_square(dict(cell=cell)), rms=rmean, rms_low=rlow, rms_high=rhigh,
                             wrong_all=float(np.mean([r[f"wrong_all_{j}"] for r in recs for j in range(K)]))))
    return sorted(rows, key=lambda r: (r["axis"], r["x"]))


def _floor_exponents(config, records, points):
    rows = []
    for a, axis in enumerate(("m", "n_prime")):
        pts = [r for r in points if r["axis"] == axis]
        if len(pts) < 2:
            continue
        samples = []
        for r in pts:
            recs = [q for q in records if q["family"] == "floor" and q["m"] == r["m"] and q["n_prime"] == r["n_prime"]]
            samples.append(np.sqrt([np.mean([q[f"final2_{j}"] for j in range(K)]) for q in recs]))
        xs = [r["x"] for r in pts]
        held = [max(xs)] if len(xs) >= 4 else []
        fit = fit_exponent(xs, samples, held_out=held, statistic="mean", n_boot=config.n_boot, level=config.level,
                           rng=_rng(6, a))
        ho = fit.held_out[0] if fit.held_out else {}
        rows.append(dict(axis=axis, predicted=float(PREDICTION["thm2_rate_exponent"].predict([dict(axis=axis)])[0]),
                         fitted=fit.slope, low=fit.low, high=fit.high, level=fit.level, n_points=fit.n_points,
                         intercept=fit.intercept, held_out_x=ho.get("x", math.nan),
                         held_out_residual=ho.get("residual", math.nan),
                         held_out_low=ho.get("residual_low", math.nan), held_out_high=ho.get("residual_high", math.nan),
                         derived=loglog_slope(xs, np.sqrt([r["exact_ms"] for r in pts]))))
    return rows


def _lemma(config, records):
    rows = []
    groups = _group(records, "lemma")
    fw = family_level(config.level, len(groups))
    for cell, recs in groups:
        spec = ScSpec.from_cell(cell)
        sizes = np.bincount(np.repeat(np.arange(K), [round(spec.p_min * spec.problem.m),
                                                     spec.problem.m - round(spec.p_min * spec.problem.m)]))
        wrong = sum(int(round(r[f"wrong_{j}"] * sizes[j])) for r in recs for j in range(K))
        total = int(len(recs) * sizes.sum())
        low, high = wilson_interval(wrong, total, config.level)
        weights = np.array([sizes[j] for _ in recs for j in range(K)], dtype=float)

        def wmean(key):
            return float(np.average([r[f"{key}_{j}"] for r in recs for j in range(K)], weights=weights))

        expected = float(sum(sizes[j] * r[f"exact_{j}"] for r in recs for j in range(K)))
        count_low, count_high = garwood_interval(wrong, fw)
        rows.append(dict(kappa=spec.kappa, n_prime=spec.problem.n, m=spec.problem.m, sigma=spec.problem.sigma,
                         r0=spec.r0, trials=len(recs), worker_rounds=total, wrong=wrong, measured=wrong / total,
                         low=float(low), high=float(high), fw_low=count_low / total, fw_high=count_high / total,
                         fw_level=fw, expected=expected, count_ratio=wrong / expected if expected > 0 else math.nan,
                         count_low=count_low / expected if expected > 0 else math.nan,
                         count_high=count_high / expected if expected > 0 else math.nan,
                         exact=wmean("exact"), chebyshev=wmean("cheb"),
                         lemma=wmean("lemma"), eta2=wmean("eta2"), chernoff=wmean("chernoff"),
                         delta=float(np.mean([r["separation"] for r in recs]))))
    return sorted(rows, key=lambda r: (r["kappa"], r["n_prime"]))


def _lemma_decay(config, records, lemma):
    rows = []
    for i, kappa in enumerate(sorted({r["kappa"] for r in lemma})):
        cells = [r for r in lemma if r["kappa"] == kappa]
        positive = [r for r in cells if r["wrong"] > 0]
        samples = []
        for r in positive:
            recs = [q for q in records
                    if q["family"] == "lemma" and q["kappa"] == kappa and q["n_prime"] == r["n_prime"]]
            samples.append(np.array([np.mean([q[f"wrong_{j}"] for j in range(K)]) for q in recs]))
        xs = [float(r["n_prime"]) for r in positive]
        poly = (fit_exponent(xs, samples, statistic="mean", n_boot=config.n_boot, level=config.level, rng=_rng(7, i))
                if len(xs) >= 2 else None)
        rate = (-float(np.polyfit(xs, np.log([r["measured"] for r in positive]), 1)[0]) if len(xs) >= 2
                else math.nan)
        exact_rate = (-float(np.polyfit([r["n_prime"] for r in cells], np.log([r["exact"] for r in cells]), 1)[0])
                      if len(cells) >= 2 and all(r["exact"] > 0 for r in cells) else math.nan)
        rows.append(dict(kappa=kappa, cells=len(cells), cells_positive=len(positive),
                         poly_exponent=poly.slope if poly else math.nan, poly_low=poly.low if poly else math.nan,
                         poly_high=poly.high if poly else math.nan, bound_exponent=-1.0,
                         exp_rate=rate, exact_exp_rate=exact_rate,
                         chernoff=float(np.mean([r["chernoff"] for r in cells])),
                         chebyshev_below_one_from=min((r["n_prime"] for r in cells if r["chebyshev"] < 1),
                                                      default=math.nan),
                         lemma_below_one_from=min((r["n_prime"] for r in cells if r["lemma"] < 1),
                                                  default=math.nan)))
    return rows


def summarise(config, records):
    """The tables (see the module docstring), from the trial records alone."""
    records = _ok(records)
    rounds = _rounds(config, records)
    points = _floor_points(config, records)
    lemma = _lemma(config, records)
    return {"factors": _factors(config, records), "rounds": rounds, "rounds_fit": _rounds_fit(config, records, rounds),
            "floor_points": points, "floor_exponents": _floor_exponents(config, records, points), "lemma": lemma,
            "lemma_decay": _lemma_decay(config, records, lemma)}
