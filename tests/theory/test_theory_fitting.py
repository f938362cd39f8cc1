"""Tests for :mod:`mixreg.theory._fitting`: the log-scale fits of the constants the papers do not give."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mixreg import theory


def test_fit_log_constant():
    ref = np.array([0.1, 0.2, np.nan, 0.4])
    assert theory.fit_log_constant(3.0 * ref, ref) == pytest.approx(3.0)
    assert np.isnan(theory.fit_log_constant([np.nan], [1.0]))


def test_fit_separation_constant_recovers_a_planted_constant():
    sigma = np.array([0.05, 0.1, 0.2, 0.4])
    p, d, m, n_prime = 0.5, 1000, 100, 50
    for planted in (0.37, 1.0, 4.2):
        observed = planted * (sigma / p) * np.sqrt(d / (m * n_prime))
        assert theory.fit_separation_constant(observed, sigma, p, d, m, n_prime) == pytest.approx(
            planted, rel=1e-12
        )
    # noisy observations: the fit is the geometric mean of the per-sigma ratios
    factors = np.array([0.8, 1.25, 1.0, 1.1])
    observed = 2.0 * factors * (sigma / p) * np.sqrt(d / (m * n_prime))
    expected = 2.0 * np.exp(np.mean(np.log(factors)))
    fitted = theory.fit_separation_constant(observed, sigma, p, d, m, n_prime)
    assert fitted == pytest.approx(expected, rel=1e-12)


def test_fit_separation_constant_ignores_unusable_points():
    sigma = np.array([0.0, 0.1, 0.2, 0.3, 0.4])
    observed = 3.0 * (sigma / 0.5) * np.sqrt(10 / (20 * 5))
    observed[2] = np.nan  # no crossing observed at this sigma
    observed[3] = 0.0
    assert theory.fit_separation_constant(observed, sigma, 0.5, 10, 20, 5) == pytest.approx(3.0, rel=1e-12)
    assert math.isnan(theory.fit_separation_constant([np.nan, 0.0], [0.1, 0.2], 0.5, 10, 20, 5))
    assert math.isnan(theory.fit_separation_constant([0.3, 0.5], [0.0, 0.0], 0.5, 10, 20, 5))


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("p", dict(p=0.0)),
        ("d", dict(d=0)),
        ("m", dict(m=-1)),
        ("n_prime", dict(n_prime=0)),
        ("sigma", dict(sigma=[0.1, 0.2])),
    ],
)
def test_fit_separation_constant_validates_its_inputs(name, kwargs):
    args = dict(observed_delta=[0.5, 0.6, 0.9], sigma=[0.1, 0.2, 0.3], p=0.5, d=10, m=20, n_prime=5)
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        theory.fit_separation_constant(**{**args, **kwargs})


@pytest.mark.parametrize("rate,expected", [(0.2, np.inf), (0.8, 0.0)])
def test_a_one_point_grid_has_no_crossing_inside_it(rate, expected):
    """With one grid value a curve cannot rise between two: the crossing is beyond the grid
    (rate below 1/2) or below it (at or above 1/2), never an error (it raised at 1603bac)."""
    assert math.isnan(theory.half_crossing([1.0], [rate]))
    draws = theory.crossing_draws([1.0], [round(10 * rate)], [10], n_draws=200, seed=1)
    assert draws.shape == (200,)
    assert set(np.unique(draws)) <= {0.0, np.inf}
    assert np.mean(draws == expected) > 0.5
