"""Tests of mixreg.stats."""

import numpy as np
import pytest
from scipy.stats import binomtest

from mixreg.stats import group_rates, wilson_interval


@pytest.mark.parametrize("s,n", [(0, 10), (3, 10), (10, 10), (17, 40), (1, 1)])
def test_wilson_matches_scipy(s, n):
    lo, hi = wilson_interval(s, n)
    ci = binomtest(s, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)


def test_wilson_bad_input_and_empty():
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 3)
    with pytest.raises(ValueError, match="level"):
        wilson_interval(1, 3, level=1.5)
    lo, hi = wilson_interval(0, 0)
    assert np.isnan(lo) and np.isnan(hi)


def test_group_rates_excludes_errors_and_sorts():
    recs = [
        {"a": 2, "ok": True, "x": 1.0, "error": ""},
        {"a": 1, "ok": False, "x": float("nan"), "error": ""},
        {"a": 1, "ok": True, "x": 3.0, "error": ""},
        {"a": 1, "ok": True, "x": 5.0, "error": "ValueError: boom"},
    ]
    rows = group_rates(recs, ("a",), ("ok",), mean_of=("x",))
    assert [r["a"] for r in rows] == [1, 2]
    assert rows[0]["trials"] == 2 and rows[0]["ok_rate"] == 0.5 and rows[0]["x_mean"] == 3.0
    assert rows[0]["ok_low"] < 0.5 < rows[0]["ok_high"]


def test_fit_slope_recovers_power_and_exponential_laws_and_their_intervals():
    import numpy as np

    from mixreg.stats import fit_slope, slope_verdict

    rng = np.random.default_rng(1)
    x = np.array([25.0, 50, 100, 200, 400])
    power = [x_ ** -1.0 * rng.lognormal(0, 0.2, 80) for x_ in x]
    fit = fit_slope(x, power, rng=rng, n_boot=500)
    assert fit.low < -1.0 < fit.high and fit.high - fit.low < 0.2
    assert slope_verdict(-1.0, fit) == "consistent" and slope_verdict(-0.5, fit) == "contradicts"
    expo = [np.exp(-0.1 * x_) * rng.lognormal(0, 0.2, 80) for x_ in x[:3]]
    fit = fit_slope(x[:3], expo, log_x=False, statistic="median", rng=rng, n_boot=500)
    assert abs(fit.slope + 0.1) < 0.01
    # fewer than two usable grid values: no slope, no verdict
    fit = fit_slope(x[:2], [np.array([1.0]), np.array([np.nan])], rng=rng, n_boot=10)
    assert np.isnan(fit.slope) and slope_verdict(-1.0, fit) == "undetermined"
