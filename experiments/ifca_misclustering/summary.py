"""The misclustering study's tables: measured rates per ``(rho, n')``, fitted exponents, exact curves."""

from __future__ import annotations

import numpy as np

from mixreg.predictions import Prediction, exponent_verdict
from mixreg.stats import fit_slope, wilson_interval
from mixreg.theory import (
    ResidualPair,
    fit_log_constant,
    lemma1_exponent,
    misclustering_exponent_at_truth,
    misclustering_probability,
)

from ..error_floor.coverage import slope_coverage
from ..ifca_mechanism import ok_records

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "PREDICTIONS", "n_prime_grid", "summarise"]

NAME = "ifca_misclustering"
TABLES = ("rates", "exponents", "curves")
DEFAULT_SEED = 20200611  # any fixed integer


def _exact_probability(cell):
    return float(misclustering_probability(cell["n_prime"], ResidualPair.at_truth(cell["rho"])))


def _chernoff_exponent(cell):
    return float(misclustering_exponent_at_truth(cell["rho"]))


#: The exact law at ``theta = theta*`` (``k = 2``), no fitted constant: the probability that one
#: identity estimate on ``n'`` points misclusters (a cell ``{"rho", "n_prime"}``) and its
#: exponent ``I(rho)`` (a cell ``{"rho"}``).  Registered in the manifest before the first trial.
PREDICTIONS = (
    Prediction("misclustering_probability", _exact_probability,
               "P(misclustered) = I_{lambda/s}(n'/2, n'/2) with both estimates at the truth (incomplete beta, "
               "mixreg.theory.misclustering_probability)", fields=("rho", "n_prime")),
    Prediction("chernoff_exponent", _chernoff_exponent,
               "P(misclustered) ~ exp(-I(rho) n'), I(rho) = (1/2) log(1 + rho/4) "
               "(mixreg.theory.misclustering_exponent_at_truth)", fields=("rho",)),
)


def n_prime_grid(rho, targets):
    """``n' = max(1, round(t / I(rho)))`` for each target ``t``, without repeats, increasing."""
    rate = float(misclustering_exponent_at_truth(rho))
    return sorted({max(1, int(round(t / rate))) for t in targets})


def _rates(config, records):
    """Per (rho, n'): the pooled count, its Wilson interval at ``level`` and the simultaneous one.

    The simultaneous intervals are Wilson intervals at level ``1 - (1 - level) / G`` over the
    ``G`` cells (Bonferroni): all of them cover their true probabilities with probability at
    least ``level``, so the exact curve should lie in every one of them, while about
    ``(1 - level) G`` of the per-cell intervals miss by chance.
    """
    n_cells = sum(len(n_prime_grid(rho, config.targets)) for rho in config.rhos)
    sim_level = 1.0 - (1.0 - config.level) / n_cells
    rows = []
    for rho in config.rhos:
        for n_prime in n_prime_grid(rho, config.targets):
            recs = [r for r in records if r["rho"] == rho and r["n"] == 2 * n_prime]
            workers = sum(int(r["n_workers"]) for r in recs)
            wrong = sum(int(r["n_wrong"]) for r in recs)
            low, high = wilson_interval(wrong, workers, config.level) if workers else (np.nan, np.nan)
            low_sim, high_sim = wilson_interval(wrong, workers, sim_level) if workers else (np.nan, np.nan)
            exact = float(PREDICTIONS[0].predict([dict(rho=rho, n_prime=n_prime)])[0])
            rows.append(dict(rho=float(rho), n_prime=n_prime, trials=len(recs), workers=workers, wrong=wrong,
                             rate=wrong / workers if workers else float("nan"), low=float(low), high=float(high),
                             exact=exact, inside=bool(low <= exact <= high), simultaneous_level=sim_level,
                             low_sim=float(low_sim), high_sim=float(high_sim),
                             inside_sim=bool(low_sim <= exact <= high_sim)))
    return rows


def _exponents(config, records):
    """Per rho: the measured exponent with its bootstrap interval, the exact exponents, Lemma 1."""
    rows = []
    for i, rho in enumerate(config.rhos):
        grid = np.array(n_prime_grid(rho, config.targets), dtype=float)
        samples = [np.array([float(r["wrong_fraction"]) for r in records if r["rho"] == rho and r["n"] == 2 * g])
                   for g in grid]
        rng = np.random.default_rng([DEFAULT_SEED, i])
        fit = fit_slope(grid, samples, log_x=False, n_boot=config.n_boot, level=config.level, rng=rng)
        coverage = slope_coverage(grid, samples, log_x=False, level=config.level, target=config.level, rng=rng)
        widening = float(coverage.widening) if np.isfinite(coverage.widening) else 0.0
        used = np.array([s.size > 0 and np.mean(s) > 0 for s in samples])  # the points fit_slope keeps
        exact = misclustering_probability(grid.astype(int), ResidualPair.at_truth(rho))
        exact_slope = float(np.polyfit(grid[used], np.log(exact[used]), 1)[0]) if used.sum() >= 2 else float("nan")
        chernoff = float(PREDICTIONS[1].predict([dict(rho=rho)])[0])
        claim = f"slope of log P(misclustered) in n' at rho = {rho:g}"
        # no exact slope where fewer than two points are kept, and then no fit either
        exact_verdict = (exponent_verdict(f"{claim}: the exact probability's", exact_slope, fit,
                                          tolerance=widening).status if np.isfinite(exact_slope) else "not tested")
        rows.append(dict(
            rho=float(rho), n_prime_min=int(grid[used].min()) if used.any() else None,
            n_prime_max=int(grid[used].max()) if used.any() else None, n_points=fit.n_points,
            fitted=-fit.slope, fitted_low=-fit.high, fitted_high=-fit.low,
            exact_slope=-exact_slope, chernoff=chernoff,
            verdict_chernoff=exponent_verdict(f"{claim}: -I(rho)", -chernoff, fit, tolerance=widening).status,
            verdict_exact_slope=exact_verdict, widening=widening, coverage_raw=coverage.coverage,
            coverage_se=coverage.se, coverage_widened=coverage.coverage_widened,
            lemma1_shape=float(lemma1_exponent(rho)), role="fit" if rho in config.fit_rhos else "held out"))
    fitted = np.array([r["fitted"] for r in rows])
    shape = np.array([r["lemma1_shape"] for r in rows])
    chern = np.array([r["chernoff"] for r in rows])
    in_fit = np.array([r["role"] == "fit" for r in rows])
    c4 = fit_log_constant(fitted[in_fit], shape[in_fit])
    c4_exact = fit_log_constant(chern[in_fit], shape[in_fit])
    for r in rows:
        predicted = c4 * r["lemma1_shape"]
        r.update(c4_fitted=c4, lemma1_fitted=predicted, residual=r["fitted"] / predicted - 1.0,
                 predicted_in_interval=bool(r["fitted_low"] <= predicted <= r["fitted_high"]),
                 c4_fitted_to_chernoff=c4_exact, chernoff_over_shape=r["chernoff"] / r["lemma1_shape"],
                 c4_bound=float(config.c4_bound), lemma1_bound=float(config.c4_bound) * r["lemma1_shape"])
    return rows


def _curves(config):
    rows = []
    for rho in config.rhos:
        grid = n_prime_grid(rho, config.targets)
        pair, rate = ResidualPair.at_truth(rho), float(misclustering_exponent_at_truth(rho))
        for n_prime in range(max(1, grid[0] // 2), int(grid[-1] * 1.15) + 2):
            rows.append(dict(rho=float(rho), n_prime=n_prime,
                             exact=float(misclustering_probability(n_prime, pair)),
                             chernoff=float(np.exp(-rate * n_prime))))
    return rows


def summarise(config, records):
    """The tables ``rates``, ``exponents`` and ``curves`` (see the module docstring).

    The exponent verdicts compare with the fit's raw interval at ``level``, widened only by what
    a simulation of that interval's coverage at the row's own sizes says it needs
    (:func:`experiments.error_floor.coverage.slope_coverage`; columns ``widening``,
    ``coverage_raw`` with its Monte Carlo ``coverage_se``, ``coverage_widened``): no widening is
    chosen by hand.
    """
    records = ok_records(records)
    return {"rates": _rates(config, records), "exponents": _exponents(config, records), "curves": _curves(config)}
