"""Tests of mixreg.stats."""

import numpy as np
import pytest
from scipy.stats import binomtest

from mixreg.stats import crossing, fit_clients_needed, group_rates, slope_verdict, wilson_interval


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


def test_group_rates_on_a_dataframe_gives_a_dataframe_of_the_same_rows():
    pd = pytest.importorskip("pandas")
    recs = [
        {"a": 2, "ok": True, "x": 1.0, "error": ""},
        {"a": 1, "ok": False, "x": float("nan"), "error": ""},
        {"a": 1, "ok": True, "x": 3.0, "error": ""},
        {"a": 1, "ok": True, "x": 5.0, "error": "ValueError: boom"},
    ]
    on_list = group_rates(recs, ("a",), ("ok",), mean_of=("x",))
    on_frame = group_rates(pd.DataFrame(recs), ("a",), ("ok",), mean_of=("x",))
    assert isinstance(on_frame, pd.DataFrame)
    assert list(on_frame.columns) == ["a", "trials", "ok_rate", "ok_low", "ok_high", "x_mean"]
    assert on_frame.to_dict("records") == on_list
    assert on_frame["a"].dtype == np.int64 and on_frame["trials"].dtype == np.int64
    with pytest.raises(ValueError, match=r"the DataFrame has no column 'y' \(named in keys, flags or mean_of\); "
                                         r"it has \['a', 'ok', 'x', 'error'\]"):
        group_rates(pd.DataFrame(recs), ("a",), ("ok",), mean_of=("y",))


def test_group_rates_reads_a_missing_error_as_none():
    """A DataFrame read from CSV (``pandas.read_csv``) holds ``nan`` where a trial has no error: it did
    not fail, in a DataFrame as in a list."""
    recs = [{"a": 1, "ok": True, "error": float("nan")}, {"a": 1, "ok": False, "error": None},
            {"a": 1, "ok": True, "error": "ZeroDivisionError: x"}]
    assert group_rates(recs, ("a",), ("ok",))[0]["trials"] == 2
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1, 1, 1], "ok": [True, False, True], "error": [np.nan, np.nan, "E: x"]})
    assert group_rates(frame, ("a",), ("ok",))["trials"].tolist() == [2]


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


# --------------------------------------------------------------------------------------------
# From success rates over a grid of M to the clients needed (moved from the Phase-1 study's trial tests)
# --------------------------------------------------------------------------------------------


def test_crossing():
    assert crossing([100, 200, 400], [0.0, 0.25, 0.75]) == (400.0, pytest.approx(200 * np.sqrt(2)), "found")
    assert crossing([100, 200], [0.5, 1.0]) == (100.0, 100.0, "below_grid")
    grid, interp, status = crossing([100, 200], [0.0, 0.4])
    assert np.isnan(grid) and np.isnan(interp) and status == "above_grid"
    assert crossing([100, 200, 400], [0.0, np.nan, 1.0])[2] == "found"  # unmeasured points are skipped


def _synthetic_cells(law, rng, trials=40):
    """Success iff M >= M*_trial, M*_trial = law(d, p) times a lognormal factor."""
    cells = []
    for d in (8, 16, 32):
        for p in (0.1, 0.2, 0.4):
            Ms = law(d, p) * 2.0 ** np.arange(-3, 4.5, 0.5)
            need = law(d, p) * np.exp(0.3 * rng.standard_normal(trials))
            cells.append(dict(d=d, p_min=p, Ms=Ms, success=Ms[None, :] >= need[:, None]))
    return cells


def test_fit_clients_needed_recovers_known_exponents():
    """With M* = 5 d / p^2 exactly in the law, the fit recovers +1 and -2 inside its intervals."""
    rng = np.random.default_rng(0)
    fits = fit_clients_needed(_synthetic_cells(lambda d, p: 5.0 * d / p**2, rng), n_boot=300, rng=rng)
    assert fits["d"].slope == pytest.approx(1.0, abs=0.1) and fits["p_min"].slope == pytest.approx(-2.0, abs=0.1)
    assert slope_verdict(1.0, fits["d"]) == "consistent" and slope_verdict(-2.0, fits["p_min"]) == "consistent"
    assert fits["d"].n_points == 9 and all(status == "found" for *_, status in fits["crossings"])
    # a law with M* ~ d^2 / p contradicts the claim's shape
    fits = fit_clients_needed(_synthetic_cells(lambda d, p: 0.5 * d**2 / p, rng), n_boot=300, rng=rng)
    assert slope_verdict(1.0, fits["d"]) == "contradicts" and slope_verdict(-2.0, fits["p_min"]) == "contradicts"
    assert fits["d"].slope == pytest.approx(2.0, abs=0.15) and fits["p_min"].slope == pytest.approx(-1.0, abs=0.15)


def test_fit_clients_needed_without_enough_crossings_is_undetermined():
    rng = np.random.default_rng(0)
    cells = [dict(d=d, p_min=0.2, Ms=np.array([10.0, 20.0]), success=np.zeros((5, 2))) for d in (4, 8, 16)]
    fits = fit_clients_needed(cells, n_boot=20, rng=rng)
    assert np.isnan(fits["d"].slope) and slope_verdict(1.0, fits["d"]) == "undetermined"
    assert [status for *_, status in fits["crossings"]] == ["above_grid"] * 3
