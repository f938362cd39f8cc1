"""The coverage of a fitted slope's bootstrap interval, measured by simulation, and the widening it needs.

An exponent verdict asks whether a predicted slope lies in the 95% stratified percentile-bootstrap
interval of a fitted one (:func:`mixreg.predictions.fit_exponent`, :func:`mixreg.stats.fit_slope`).
A percentile bootstrap of a mean over a few dozen trials covers a little less than its nominal
level (it resamples with the plug-in variance, and the log of a mean of few skewed values is
biased), so a verdict at tolerance 0 can reject a true exponent more often than 5% of the time.
Instead of a widening chosen by hand, :func:`slope_coverage` measures that coverage on data with a
**known** exponent and the study's own sizes and dispersion:

1. each cell's finite trial outcomes ``y_g`` are rescaled to the null population
   ``z_g = y_g / stat(y_g)`` (so ``stat(z_g) = 1``: an exact power law, or exponential, of
   slope 0, with the cell's own shape, skewness and number of trials);
2. ``n_rep`` times, a fresh data set of the same sizes is drawn from those populations
   (``n_g`` values with replacement from ``z_g``) and its interval is computed exactly as the
   fit computes it (``n_boot`` stratified resamples, least-squares slope of ``log stat`` on
   ``u``, percentile interval at ``level``; a resample whose statistic is not positive leaves
   that cell out of its line, as the fit does);
3. the coverage is the fraction of those intervals holding 0, and the **widening** is the
   smallest ``w`` such that at least a fraction ``target`` of the intervals widened by ``w`` on
   both sides hold 0 (``0`` when the raw intervals already do).

Slopes are shift-equivariant (rescaling cell ``g`` by ``e^{c u_g}`` adds ``c`` to every slope
of every resample), so the coverage at slope 0 is the coverage at any slope.  This is a
parametric check of the procedure at the observed sizes (a double bootstrap, Beran 1987,
"Prepivoting to reduce level error of confidence sets", Biometrika 74); it says nothing about a
prediction whose *shape* is wrong (a curved log-log relation), which the verdict is there to
detect.

Examples
--------
>>> rng = np.random.default_rng(0)
>>> x = np.array([10.0, 20, 40, 80, 160])
>>> ys = [v ** -0.5 * rng.lognormal(0, 0.3, 24) for v in x]
>>> cov = slope_coverage(x, ys, n_rep=100, n_boot=200, rng=np.random.default_rng(1))
>>> 0.8 < cov.coverage <= 1.0, cov.widening >= 0, cov.coverage_widened >= 0.95
(True, True, True)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["SlopeCoverage", "slope_coverage", "COVERAGE_REPS", "COVERAGE_BOOT"]

#: Simulated data sets per fit (the coverage's Monte Carlo standard error is about 0.015 near 95%).
COVERAGE_REPS = 200
#: Bootstrap resamples of each simulated data set's interval (the fit itself uses the study's
#: ``n_boot``; fewer resamples make the simulated endpoints noisier, which if anything lowers the
#: simulated coverage and so errs towards a larger widening).
COVERAGE_BOOT = 200


@dataclasses.dataclass(frozen=True)
class SlopeCoverage:
    """What :func:`slope_coverage` measured.

    Attributes
    ----------
    coverage : float
        Fraction of the simulated raw intervals holding the true slope (``nan`` without a fit).
    widening : float
        The smallest widening (both sides) with simulated coverage at least ``target``.
    coverage_widened : float
        Simulated coverage of the intervals widened by ``widening``.
    se : float
        Monte Carlo standard error of ``coverage``, ``sqrt(c (1 - c) / n_rep)``.
    n_rep, n_boot : int
    level, target : float
    """

    coverage: float
    widening: float
    coverage_widened: float
    se: float
    n_rep: int
    n_boot: int
    level: float
    target: float


def _chunk_slopes(u, means):
    """Least-squares slopes of ``log means`` on ``u`` along the last axis, leaving out cells whose
    mean is not positive (``nan`` where fewer than two are left).  ``means``: ``(..., G)``."""
    ok = np.isfinite(means) & (means > 0)
    w = ok.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(ok, np.log(np.where(ok, means, 1.0)), 0.0)
        n = w.sum(axis=-1, keepdims=True)
        ubar = (w * u).sum(axis=-1, keepdims=True) / n
        vbar = (w * v).sum(axis=-1, keepdims=True) / n
        du = (u - ubar) * w
        slope = (du * (v - vbar)).sum(axis=-1) / (du * (u - ubar)).sum(axis=-1)
    return np.where(n[..., 0] >= 2, slope, np.nan)


def slope_coverage(x, samples, *, log_x=True, statistic="mean", n_rep=None, n_boot=None, level=0.95, target=0.95,
                   rng):
    """Simulated coverage of a slope's stratified percentile-bootstrap interval (see the module docstring).

    Parameters
    ----------
    x : array of shape (G,)
        The cells' values (> 0 when ``log_x``).
    samples : sequence of G arrays
        The trial outcomes of each cell, as given to the fit; non-finite values are dropped, and
        cells whose statistic is not positive (the fit leaves them out) too.
    log_x : bool
        ``u = log x`` (a power law) or ``u = x`` (an exponential).
    statistic : {"mean", "median"}
    n_rep, n_boot : int, optional
        Simulated data sets, and bootstrap resamples of each (default :data:`COVERAGE_REPS`,
        :data:`COVERAGE_BOOT`, read when called).
    level : float
        The interval's level (as the fit's).
    target : float
        The coverage the widening must reach.
    rng : numpy.random.Generator

    Returns
    -------
    SlopeCoverage
        ``nan`` coverage and widening with fewer than two usable cells.
    """
    n_rep = COVERAGE_REPS if n_rep is None else int(n_rep)
    n_boot = COVERAGE_BOOT if n_boot is None else int(n_boot)
    stat = np.mean if statistic == "mean" else np.median
    x = np.asarray(x, dtype=float)
    u_all = np.log(x) if log_x else x
    pops, u = [], []
    for ug, s in zip(u_all, samples):
        s = np.asarray(s, dtype=float)
        s = s[np.isfinite(s)]
        if s.size and stat(s) > 0:
            pops.append(s / stat(s))
            u.append(ug)
    if len(pops) < 2:
        nan = math.nan
        return SlopeCoverage(nan, nan, nan, nan, n_rep, n_boot, level, target)
    u = np.array(u)
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    misses = []
    chunk = max(1, min(n_rep, 4_000_000 // max(1, n_boot * max(p.size for p in pops))))
    done = 0
    while done < n_rep:
        r = min(chunk, n_rep - done)
        boot_stats = np.empty((r, n_boot, len(pops)))
        for g, z in enumerate(pops):
            fresh = z[rng.integers(0, z.size, (r, z.size))]                       # (r, n_g): a new data set
            index = rng.integers(0, z.size, (r, n_boot, z.size), dtype=np.int32)  # its resamples
            resampled = np.take_along_axis(fresh[:, None, :], index, axis=2)
            boot_stats[:, :, g] = stat(resampled, axis=2)
        slopes = _chunk_slopes(u, boot_stats)                                      # (r, n_boot)
        if np.isfinite(slopes).all():
            low, high = np.quantile(slopes, [lo_q, hi_q], axis=1)
        else:  # a resample with fewer than two usable cells has no slope: left out, as the fit does
            low, high = np.array([np.quantile(row[np.isfinite(row)], [lo_q, hi_q]) if np.isfinite(row).any()
                                  else (np.nan, np.nan) for row in slopes]).T
        misses.append(np.maximum(0.0, np.maximum(low, -high)))
        done += r
    miss = np.concatenate(misses)
    miss = np.where(np.isfinite(miss), miss, np.inf)
    coverage = float(np.mean(miss == 0))
    ordered = np.sort(miss)
    widening = 0.0 if coverage >= target else float(ordered[int(math.ceil(target * miss.size)) - 1])
    return SlopeCoverage(coverage=coverage, widening=widening, coverage_widened=float(np.mean(miss <= widening)),
                         se=math.sqrt(coverage * (1 - coverage) / miss.size), n_rep=n_rep, n_boot=n_boot,
                         level=level, target=target)
