"""Tests of mixreg.plotting's generic figures (``success_plot``, ``error_plot``): from any tidy
table, every method drawn in a style of its own, every row left out counted, the arrays behind
each line equal to a hand computation."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mixreg import methods  # noqa: E402
from mixreg.methods import COMPARE  # noqa: E402
from mixreg.plotting import PREDICTION_LABEL, error_plot, register_style, success_plot  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def user_styles(monkeypatch):
    """register_style's registry, emptied for the test and restored after it."""
    monkeypatch.setattr(methods, "_USER", {})


def _legend_texts(ax):
    return [text.get_text() for text in ax.get_legend().get_texts()]


def _trials(table):
    """Per-trial rows ``(method, m, success)`` from ``{(method, m): (successes, trials)}``."""
    return [dict(method=method, m=m, success=int(i < k)) for (method, m), (k, n) in table.items() for i in range(n)]


def _wilson_by_hand(k, n, level):
    """The Wilson score interval written out from its formula (Wilson, JASA 1927), not from mixreg."""
    z = {0.95: 1.959963984540054, 0.8: 1.2815515655446004}[level]
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(centre - half, 0.0), min(centre + half, 1.0)


@pytest.mark.parametrize("level", [0.95, 0.8])
def test_success_arrays_and_wilson_bands_equal_a_hand_computation(level):
    table = {("mine", 10): (1, 4), ("mine", 20): (3, 4), ("mine", 40): (5, 5), ("ifca", 10): (0, 3),
             ("ifca", 40): (2, 3)}
    rows = _trials(table)[::-1]  # the rows' order must not matter
    drawn = success_plot(rows, "m", level=level)
    mine, ifca = drawn["arrays"]["mine"], drawn["arrays"]["ifca"]
    assert mine["x"].tolist() == [10, 20, 40] and ifca["x"].tolist() == [10, 40]
    assert mine["k"].tolist() == [1, 3, 5] and mine["n"].tolist() == [4, 4, 5]
    assert mine["p"].tolist() == [0.25, 0.75, 1.0] and ifca["p"].tolist() == [0.0, 2 / 3]
    for (method, m), (k, n) in table.items():
        arrays = drawn["arrays"][method]
        i = arrays["x"].tolist().index(m)
        assert (arrays["low"][i], arrays["high"][i]) == pytest.approx(_wilson_by_hand(k, n, level), abs=1e-12)
    # what is drawn is what is returned: the line through p, the band between low and high
    line = drawn["lines"]["mine"]
    assert line.get_xdata().tolist() == [10, 20, 40] and np.allclose(line.get_ydata(), mine["p"])
    band = drawn["bands"]["mine"].get_paths()[0].vertices
    assert np.isclose(band[:, 1].min(), mine["low"].min()) and np.isclose(band[:, 1].max(), mine["high"].max())
    assert drawn["note"] == "" and drawn["excluded"] == {"mine": 0, "ifca": 0}


def test_per_cell_rows_with_a_trials_column_give_the_same_arrays_as_per_trial_rows():
    table = {("mine", 10): (1, 4), ("mine", 20): (3, 4)}
    cells = [dict(method=method, m=m, wins=k, runs=n) for (method, m), (k, n) in table.items()]
    per_cell = success_plot(cells, "m", success="wins", trials="runs")["arrays"]["mine"]
    per_trial = success_plot(_trials(table), "m")["arrays"]["mine"]
    for name in ("x", "k", "n", "p", "low", "high"):
        assert np.array_equal(per_cell[name], per_trial[name]), name
    with pytest.raises(ValueError, match="must hold 0/1 .* pass trials="):
        success_plot(cells, "m", success="wins")


def test_a_registered_method_keeps_its_style_and_an_unregistered_one_gets_its_own(user_styles):
    rows = _trials({("ifca", 10): (1, 2), ("mine", 10): (2, 2), ("yours", 10): (0, 2)})
    drawn = success_plot(rows, "m")
    ifca, mine, yours = (drawn["lines"][key] for key in ("ifca", "mine", "yours"))
    assert matplotlib.colors.to_hex(ifca.get_color()) == COMPARE["ifca"].color.lower()
    assert ifca.get_marker() == COMPARE["ifca"].marker
    looks = {key: (matplotlib.colors.to_hex(line.get_color()), line.get_marker(), line.get_linestyle())
             for key, line in drawn["lines"].items()}
    assert len(set(looks.values())) == 3
    assert looks["mine"][0] != looks["yours"][0] and looks["mine"][1] != looks["yours"][1]
    texts = _legend_texts(drawn["ax"])
    assert {"mine", "yours", COMPARE["ifca"].label} <= set(texts)
    # a style the user registers is drawn as given, under its label
    register_style("mine", label="IFCA II, scheduled", color="tab:red", marker="*", linestyle=":")
    mine = success_plot(rows, "m")["lines"]["mine"]
    assert (matplotlib.colors.to_hex(mine.get_color()), mine.get_marker(), mine.get_linestyle()) == \
        (matplotlib.colors.to_hex("tab:red"), "*", ":")
    assert mine.get_label() == "IFCA II, scheduled"


def test_twelve_unregistered_methods_look_distinct_and_the_rows_order_does_not_change_them():
    keys = [f"method {i:02d}" for i in range(12)]
    rows = _trials({(key, m): (1, 2) for key in keys for m in (10, 20)})
    drawn = success_plot(rows, "m")

    def looks(lines):
        return {key: (matplotlib.colors.to_hex(line.get_color()), line.get_marker(), line.get_linestyle())
                for key, line in lines.items()}

    assert len(set(looks(drawn["lines"]).values())) == 12
    again = success_plot(rows[::-1], "m")  # the style is the key's and the set's, not the row order's
    assert looks(again["lines"]) == looks(drawn["lines"])


def test_rows_that_cannot_be_drawn_are_counted_in_the_legend_and_the_note():
    rows = [dict(method="mine", m=10, err=1.0), dict(method="mine", m=10, err=float("nan")),
            dict(method="mine", m=20, err=0.5), dict(method="mine", m=20, err=float("inf")),
            dict(method="mine", m=20, err=0.0), dict(method="ifca", m=10, err=2.0), dict(method="ifca", m=20, err="")]
    drawn = error_plot(rows, "m", "err", fit=False)
    assert drawn["excluded"] == {"mine": 3, "ifca": 1}
    assert drawn["note"] == ("mine: 3 of 5 rows excluded: 2 non-finite, 1 err <= 0 on a log axis. "
                             "ifca: 1 of 2 rows excluded: non-finite.")
    texts = _legend_texts(drawn["ax"])
    assert "mine (3 of 5 excluded: non-finite, err <= 0 on a log axis)" in texts
    assert drawn["arrays"]["mine"]["n"].tolist() == [1, 1]
    # on a linear y axis a zero error is drawn
    assert error_plot(rows, "m", "err", fit=False, logy=False)["excluded"]["mine"] == 2
    # a success table too: a missing outcome is counted, never taken as a failure
    success = [dict(method="mine", m=10, success=1), dict(method="mine", m=10, success=None)]
    drawn = success_plot(success, "m")
    assert drawn["arrays"]["mine"]["n"].tolist() == [1] and drawn["note"] == "mine: 1 of 2 rows excluded: non-finite."


def test_error_arrays_equal_a_hand_computation():
    values = {10: [1.0, 2.0, 6.0], 40: [0.5, 1.5]}
    rows = [dict(method="mine", m=m, err=e) for m, errs in values.items() for e in errs]
    drawn = error_plot(rows, "m", "err", fit=False, level=0.95)
    arrays = drawn["arrays"]["mine"]
    assert arrays["x"].tolist() == [10, 40] and arrays["n"].tolist() == [3, 2]
    assert arrays["y"].tolist() == [3.0, 1.0]
    half = [1.959963984540054 * np.std(errs, ddof=1) / math.sqrt(len(errs)) for errs in values.values()]
    assert np.allclose(arrays["low"], [3.0 - half[0], 1.0 - half[1]]) and np.allclose(arrays["high"], [3.0 + half[0],
                                                                                                        1.0 + half[1]])
    median = error_plot(rows, "m", "err", fit=False, statistic="median")["arrays"]["mine"]
    assert median["y"].tolist() == [2.0, 1.0]
    assert median["low"].tolist() == [1.5, 0.75] and median["high"].tolist() == [4.0, 1.25]
    line = drawn["errorbars"]["mine"].lines[0]
    assert line.get_xdata().tolist() == [10, 40] and line.get_ydata().tolist() == [3.0, 1.0]


def test_the_exponent_fit_and_the_prediction_are_drawn_and_labelled():
    rng = np.random.default_rng(1)
    ms = [10.0, 20.0, 40.0, 80.0, 160.0]
    rows = [dict(method="mine", m=m, err=3.0 * m ** -0.5 * rng.lognormal(0, 0.05)) for m in ms for _ in range(8)]
    drawn = error_plot(rows, "m", "err", prediction=lambda m: 3.0 * np.asarray(m) ** -0.5)
    fit = drawn["fits"]["mine"]
    assert fit.slope == pytest.approx(-0.5, abs=0.03) and fit.low < fit.slope < fit.high
    label = drawn["fit_lines"]["mine"].get_label()
    assert label == f"mine, fit: slope {fit.slope:.3g} [{fit.low:.3g}, {fit.high:.3g}]"
    px, py = drawn["prediction"].get_xdata(), drawn["prediction"].get_ydata()
    assert px[0] == 10.0 and px[-1] == pytest.approx(160.0) and np.allclose(py, 3.0 * px ** -0.5)
    assert drawn["prediction"].get_label() == PREDICTION_LABEL == "prediction (fixed before the data)"
    assert PREDICTION_LABEL in _legend_texts(drawn["ax"])
    assert drawn["ax"].get_xscale() == drawn["ax"].get_yscale() == "log"
    # the same figure from the same table: the bootstrap is seeded
    assert error_plot(rows, "m", "err")["fits"]["mine"] == fit
    # a prediction given as arrays is drawn as given
    given = error_plot(rows, "m", "err", fit=False, prediction=([10, 100], [1.0, 0.3]))["prediction"]
    assert given.get_xdata().tolist() == [10, 100] and given.get_ydata().tolist() == [1.0, 0.3]
    with pytest.raises(ValueError, match="prediction must be a callable"):
        error_plot(rows, "m", "err", prediction=0.3)


def test_both_figures_draw_into_the_axes_given_and_open_no_figure():
    fig, (left, right) = plt.subplots(1, 2)
    before = plt.get_fignums()
    rows = [dict(method="mine", m=m, err=1.0 / m, success=int(m > 10)) for m in (10, 20, 40)]
    drawn = success_plot(rows, "m", ax=left)
    assert drawn["ax"] is left and drawn["figure"] is fig and drawn["lines"]["mine"] in left.get_lines()
    drawn = error_plot(rows, "m", "err", ax=right, fit=False)
    assert drawn["ax"] is right and drawn["errorbars"]["mine"].lines[0] in right.get_lines()
    assert plt.get_fignums() == before and not left.get_yscale() == "log"
    assert success_plot(rows, "m")["figure"] is not fig  # without ax=, a figure of its own


def test_methods_choose_and_order_the_series_and_the_others_are_named():
    rows = _trials({("a", 10): (1, 2), ("b", 10): (2, 2), ("c", 10): (0, 2)})
    drawn = success_plot(rows, "m", methods=["c", "a"])
    assert list(drawn["lines"]) == ["c", "a"] and drawn["note"] == "Not drawn (not in methods=): b."
    with pytest.raises(ValueError, match=r"methods names 'z', which the table does not hold; "
                                         r"it holds \['a', 'b', 'c'\]"):
        success_plot(rows, "m", methods=["a", "z"])
    with pytest.raises(ValueError, match="has no column 'n_clients'"):
        success_plot(rows, "n_clients")


def test_a_dataframe_like_table_and_a_table_without_methods_are_drawn():
    class Frame:  # what success_plot reads of a pandas DataFrame
        columns = ("m", "success")

        def to_dict(self, orient):
            assert orient == "records"
            return [dict(m=10, success=1), dict(m=10, success=0), dict(m=20, success=1)]

    drawn = success_plot(Frame(), "m", method=None)
    assert list(drawn["arrays"]) == ["success"] and drawn["arrays"]["success"]["p"].tolist() == [0.5, 1.0]


@pytest.mark.parametrize("style", ["two-column", "one-column", "slides"])
def test_a_crowded_figure_keeps_one_legend_entry_per_method_clear_of_the_data(style):
    # the tutorial's figure: every registered method and the user's (15 series); before, the legend
    # of 31 entries covered the axes and ran off the figure
    import matplotlib.pyplot as plt

    from mixreg.methods import COMPARE
    from mixreg.plotting import CROWDED, error_plot, use_style

    names = [key for key, style in COMPARE.items() if style.kind != "reference"] + ["mine"]
    rows = [{"m": m, "method": name, "err": (1 + i) / m * (1 + 0.1 * t)}
            for i, name in enumerate(names) for m in (10, 20, 40) for t in range(3)]
    with use_style(style):
        drawn = error_plot(rows, "m", "err", prediction=lambda m: 1 / m)  # a figure of its own
        legend = drawn["legend"]
        texts = [t.get_text() for t in legend.get_texts()]
        assert len(names) + 1 > CROWDED and len(texts) == len(names) + 1  # the methods and the prediction
        assert texts[1].startswith(COMPARE["ifca"].short + ", fit: slope -1 ")
        fig = drawn["figure"]
        fig.canvas.draw()
        box, axes = legend.get_window_extent(), drawn["axes"].get_tightbbox()
        assert box.y0 >= axes.y1 - 1 and box.x0 >= -1 and box.x1 <= fig.bbox.x1 + 1 and box.y1 <= fig.bbox.y1 + 1
        assert fig.get_figwidth() == pytest.approx(plt.rcParams["figure.figsize"][0])  # the style's width
        plt.close(fig)

        fig, ax = plt.subplots(figsize=(10, 4), layout="constrained")  # the caller's axes: the legend beside them
        drawn = error_plot(rows, "m", "err", prediction=lambda m: 1 / m, ax=ax)
        assert drawn["legend"] is ax.get_legend() and fig.legends == []
        fig.canvas.draw()
        box, axes = drawn["legend"].get_window_extent(), ax.get_window_extent()
        assert box.x0 >= axes.x1  # beside the axes
        plt.close(fig)
