"""Summaries of trial outcomes: :func:`mixreg.stats.finite_mean`,
:func:`~mixreg.stats.bootstrap_mean_interval` and :func:`~mixreg.stats.loglog_slope`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mixreg.stats import bootstrap_mean_interval, finite_mean, fit_slope, loglog_slope


def test_finite_mean_drops_nan_and_inf():
    assert finite_mean([1.0, np.nan, 3.0, np.inf]) == 2.0
    assert math.isnan(finite_mean([])) and math.isnan(finite_mean([np.nan, -np.inf]))


def test_bootstrap_mean_interval_covers_the_mean_and_is_reproducible():
    values = np.array([1.0, 2.0, np.nan, 4.0, 8.0])
    mean, low, high = bootstrap_mean_interval(values, np.random.default_rng(3), 2000)
    assert mean == pytest.approx(3.75) and low < mean < high and 1.0 <= low and high <= 8.0
    assert (mean, low, high) == bootstrap_mean_interval(values, np.random.default_rng(3), 2000)
    narrow = bootstrap_mean_interval(values, np.random.default_rng(3), 2000, level=0.5)
    assert low <= narrow[1] <= narrow[2] <= high
    assert all(math.isnan(v) for v in bootstrap_mean_interval(np.array([np.nan]), np.random.default_rng(0), 10))


def test_loglog_slope_recovers_a_power_law_over_the_usable_points():
    x = np.array([1.0, 2.0, 4.0, 8.0, 0.0, 16.0])
    y = 3.0 * np.where(x > 0, x, 1.0) ** -0.5  # the point at x = 0 is dropped whatever its y
    y[-1] = np.nan  # dropped, as x = 0
    assert loglog_slope(x, y) == pytest.approx(-0.5, abs=1e-12)
    assert math.isnan(loglog_slope([1.0, 2.0], [1.0, np.nan]))


def test_loglog_slope_is_fit_slope_on_the_means():
    rng = np.random.default_rng(0)
    x = np.array([10.0, 20.0, 40.0])
    samples = [v ** 0.5 * rng.lognormal(0, 0.1, 20) for v in x]
    fit = fit_slope(x, samples, n_boot=10, rng=rng)
    assert loglog_slope(x, [s.mean() for s in samples]) == pytest.approx(fit.slope, rel=1e-12)
