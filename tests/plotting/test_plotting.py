"""Tests of mixreg.plotting's common helpers and success figure: the figure has what a reader needs.

The registry of method names, labels and colours is tested in ``tests/plotting/test_plotting_methods.py``."""

import matplotlib
import numpy as np

matplotlib.use("Agg")

from experiments.success_vs_R.figures import plot_success_collapse, plot_success_vs_separation  # noqa: E402
from experiments.success_vs_mn.figures import plot_success_heatmap, plot_success_vs_m  # noqa: E402
from _figure_tables import m_n_tables  # noqa: E402
from mixreg.plotting import save_figure  # noqa: E402
from mixreg.plotting import plain_tick  # noqa: E402


def _summary():
    rows = []
    for sigma in (0.0, 0.5):
        for delta, rate in ((0.5, 0.1), (1.0, 0.5), (2.0, 0.9)):
            row = {"sigma": sigma, "separation_mean": delta}
            for rule in ("official", "honest", "oracle"):
                row[f"{rule}_success_rate"] = rate if rule != "oracle" else 1.0
                row[f"{rule}_success_low"] = max(rate - 0.1, 0)
                row[f"{rule}_success_high"] = min(rate + 0.1, 1)
            rows.append(row)
    return rows


def test_figure_has_labels_theory_and_legend(tmp_path):
    fig = plot_success_vs_separation(
        _summary(), separation_lines={0.5: {"unit": 0.8, "fitted": 1.2}}, r_per_delta=10.0,
        title="t", footnote="f")["figure"]
    axes = [ax for ax in fig.axes if ax.get_ylabel() or ax.get_xlabel()]
    assert any("separation" in ax.get_xlabel() for ax in axes)
    assert "success probability" in fig.axes[0].get_ylabel()
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "unit" in labels and "fitted" in labels and any("oracle" in l for l in labels)
    assert any("σ = 0.5" in l for l in labels)
    png, pdf = save_figure(fig, tmp_path / "fig")
    assert png.stat().st_size > 10000 and pdf.stat().st_size > 1000


def test_save_figure_writes_every_copy_of_one_drawing(tmp_path):
    fig = plot_success_vs_separation(_summary())["figure"]
    paths = save_figure(fig, tmp_path / "results" / "fig", tmp_path / "figures" / "fig_paper")
    assert [p.name for p in paths] == ["fig.png", "fig.pdf", "fig_paper.png", "fig_paper.pdf"]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert (tmp_path / "results" / "fig.png").read_bytes() == (tmp_path / "figures" / "fig_paper.png").read_bytes()


def test_save_figure_rounds_a_constrained_layout_and_keeps_the_axes_in_it(tmp_path):
    """The layout's last bits differ from process to process; save_figure rounds the axes'
    positions after every layout pass so that a redraw is byte-identical (the committed figures'
    redraw test, run in fresh processes, caught an antialiased pixel moving without it)."""
    from mixreg.plotting._common import LAYOUT_DECIMALS

    fig = plot_success_vs_separation(_summary(), title="t", footnote="f")["figure"]
    engine = fig.get_layout_engine()
    save_figure(fig, tmp_path / "fig")
    assert fig.get_layout_engine().get() == engine.get()  # the same layout's parameters
    laid_out = [ax for ax in fig.axes if ax.get_in_layout()]
    assert laid_out and len(laid_out) == len(fig.axes)
    for ax in laid_out:
        corners = ax.get_position(original=True).get_points()
        assert np.array_equal(corners, np.round(corners, LAYOUT_DECIMALS))
        assert np.array_equal(ax.get_position().get_points(), corners)


def test_plain_tick_labels_have_no_scientific_notation():
    assert [plain_tick(v) for v in (0.03, 0.1, 2.0, 40.0, 500.0)] == ["0.03", "0.1", "2", "40", "500"]


def test_ceiling_is_drawn_only_when_asked_and_the_prediction_is_labelled():
    from mixreg.plotting import RULES

    def labels(fig):
        return [t.get_text() for legend in fig.legends for t in legend.get_texts()]

    fig = plot_success_vs_separation(_summary(), ceiling=False)["figure"]
    assert RULES["oracle"].label not in labels(fig)
    fig = plot_success_vs_separation(_summary(), predicted_ceiling=("oracle, predicted before the runs",
                                                                    {0.5: 0.7}))["figure"]
    assert RULES["oracle"].label in labels(fig) and "oracle, predicted before the runs" in labels(fig)
    horizontal = [line for line in fig.axes[0].get_lines() if list(line.get_ydata()) == [0.7, 0.7]]
    assert len(horizontal) == 1


def test_collapse_figure_draws_every_sigma_on_every_scale_and_the_held_out_predictions(tmp_path):
    scales = [dict(divisor={0.0: 1.0, 0.5: 2.0}, xlabel="Δ / s(σ)", title="a predicted scale", verdict="verdict A"),
              dict(divisor={0.0: 1.0, 0.5: 1.0}, xlabel="Δ", title="σ-free", verdict="verdict B")]
    fig = plot_success_collapse(_summary(), scales, crossings={0.0: (1.0, 0.5, 2.0), 0.5: (1.0, 0.0, float("inf"))},
                                held_out={"held-out prediction": {0.0: 0.0, 0.5: 1.2}}, title="t", footnote="f")["figure"]
    assert len(fig.axes) == 3
    titles = [ax.get_title().replace("\n", " ") for ax in fig.axes]  # wrapped to the panels' width
    assert "verdict A" in titles[0] and "σ-free" in titles[1]
    for ax, factor in zip(fig.axes[:2], (2.0, 1.0)):  # sigma = 0.5 is drawn at separation / s(0.5)
        xs = [tuple(line.get_xdata()) for line in ax.get_lines() if len(line.get_xdata()) == 3]
        assert (0.5 / factor, 1.0 / factor, 2.0 / factor) in xs
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "held-out prediction" in labels and any("σ = 0.5" in label for label in labels)
    png, _ = save_figure(fig, tmp_path / "collapse")
    assert png.stat().st_size > 10000


def test_a_curve_dozens_of_decades_from_the_others_is_named_not_drawn():
    """The separation condition's root at sigma = 0 is exp(-n'): that curve sits ~44 decades
    from the others; drawing it on one log axis would leave every other curve a vertical stroke."""
    summary = [dict(row, sigma=s) for s in (0.0, 0.25, 0.5) for row in _summary() if row["sigma"] == 0.5]
    scale = dict(divisor={0.0: 1e-44, 0.25: 1.0, 0.5: 2.0}, xlabel="Δ / Δ_sep(σ)", title="degenerate at σ = 0")
    fig = plot_success_collapse(summary, [scale])["figure"]
    ax = fig.axes[0]
    drawn = [x for line in ax.get_lines() for x in line.get_xdata()]
    assert drawn and max(drawn) <= 2.0  # sigma = 0's points (5e43 to 2e44) are not on the axis
    assert ax.get_xlim()[1] < 100
    assert not ax.texts  # named under the x label, never over the data
    assert ax.get_xlabel().replace("\n", " ") == "Δ / Δ_sep(σ) σ = 0 off this axis: x from 5e+43 to 2e+44 →"
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert sum("σ = 0" in label and "σ = 0." not in label for label in labels) == 1  # still in the legend

    near = dict(scale, divisor={0.0: 0.01, 0.25: 1.0, 0.5: 2.0})  # two decades away: drawn as usual
    ax = plot_success_collapse(summary, [near])["axes"][0]
    assert ax.get_xlabel() == "Δ / Δ_sep(σ)" and max(x for line in ax.get_lines() for x in line.get_xdata()) == 200.0


def test_only_a_minority_of_curves_is_ever_named_off_the_axis():
    from experiments.success_vs_R.figures import _far_curves

    x = np.array([0.5, 1.0, 2.0])
    assert _far_curves({0: x * 1e44, 1: x, 2: x * 2, 3: x * 4}) == {0: 1}
    assert _far_curves({0: x * 1e-44, 1: x, 2: x * 2}) == {0: -1}
    assert _far_curves({0: x * 1e44, 1: x * 1e44, 2: x, 3: x * 2}) == {}  # two against two: no main group
    assert _far_curves({0: x, 1: x * 1e7, 2: x * 1e14}) == {}  # three groups of one
    assert _far_curves({0: x, 1: x * 1e44}) == {}  # two curves are always drawn
    assert _far_curves({}) == {}


def test_m_n_figures_have_one_panel_per_rule_and_r_and_say_what_is_predicted(tmp_path):
    rates, predictions = m_n_tables()
    fig = plot_success_vs_m(rates, predictions, title="t", footnote="f")["figure"]
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 6 and all("r = " in ax.get_title() for ax in panels)
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert any("prediction, before the runs" in label for label in labels)
    assert any("n = 20" in label for label in labels)
    save_figure(fig, tmp_path / "curves")
    fig = plot_success_heatmap(rates, predictions, title="t", footnote="f")["figure"]
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 6
    hatched = [p for p in panels[0].patches if p.get_hatch()]
    assert len(hatched) == sum(row["ls_unlikely"] for row in predictions)
    save_figure(fig, tmp_path / "heat")
