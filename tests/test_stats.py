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
