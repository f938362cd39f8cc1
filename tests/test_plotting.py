"""Tests of mixreg.plotting's common helpers and success figure: the figure has what a reader needs.

The registry of method names, labels and colours is tested in ``tests/test_plotting_methods.py``."""

import matplotlib

matplotlib.use("Agg")

from mixreg.plotting import plot_success_vs_separation, save_figure  # noqa: E402
from mixreg.plotting._common import _plain  # noqa: E402


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
        title="t", footnote="f")
    axes = [ax for ax in fig.axes if ax.get_ylabel() or ax.get_xlabel()]
    assert any("separation" in ax.get_xlabel() for ax in axes)
    assert "success probability" in fig.axes[0].get_ylabel()
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "unit" in labels and "fitted" in labels and any("oracle" in l for l in labels)
    assert any("σ = 0.5" in l for l in labels)
    png, pdf = save_figure(fig, tmp_path / "fig")
    assert png.stat().st_size > 10000 and pdf.stat().st_size > 1000


def test_save_figure_writes_every_copy_of_one_drawing(tmp_path):
    fig = plot_success_vs_separation(_summary())
    paths = save_figure(fig, tmp_path / "results" / "fig", tmp_path / "figures" / "fig_paper")
    assert [p.name for p in paths] == ["fig.png", "fig.pdf", "fig_paper.png", "fig_paper.pdf"]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert (tmp_path / "results" / "fig.png").read_bytes() == (tmp_path / "figures" / "fig_paper.png").read_bytes()


def test_plain_tick_labels_have_no_scientific_notation():
    assert [_plain(v) for v in (0.03, 0.1, 2.0, 40.0, 500.0)] == ["0.03", "0.1", "2", "40", "500"]
