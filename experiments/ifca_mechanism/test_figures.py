"""The figure helpers the studies share (:mod:`experiments.ifca_mechanism.figures`)."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.lines  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from experiments.ifca_mechanism.figures import finish, fit_labels, panels  # noqa: E402
from mixreg.plotting import use_style  # noqa: E402


def test_panels_take_the_callers_axes_or_make_a_figure_as_wide_as_the_style():
    fig, axes = plt.subplots(1, 3)
    same, drawn, own = panels(axes, 3)
    assert same is fig and list(drawn) == list(axes) and not own
    with pytest.raises(ValueError, match="a sequence of 2 Axes"):
        panels(axes, 2)
    with pytest.raises(ValueError, match="one Axes"):
        panels(axes, 1)
    plt.close(fig)
    with use_style("one-column"):
        fig, drawn, own = panels(None, 4)
        assert own and len(drawn) == 4 and fig.get_figwidth() == pytest.approx(3.3)
        plt.close(fig)


def test_long_legend_labels_are_wrapped_to_the_figure_and_the_title_heads_the_legend():
    labels = ["a rather long legend label that says what the line is, and why it is drawn"] * 3
    with use_style("one-column"):
        wrapped, ncol, rows = fit_labels(labels)
        assert all("\n" in label for label in wrapped) and rows >= 3
        fig, axes, own = panels(None, 2)
        height = fig.get_figheight()
        handles = [matplotlib.lines.Line2D([], [], label=label) for label in labels]
        legend = finish(fig, axes, handles, own=own, title="the figure's title", footnote="a short note")
        assert legend in fig.legends and legend.get_title().get_text() == "the figure's title"
        assert fig.get_figheight() > height and fig.get_figwidth() == pytest.approx(3.3)
        plt.close(fig)


def test_on_the_callers_axes_the_legend_goes_inside_and_nothing_else_is_added():
    fig, axes = plt.subplots(1, 2)
    size = tuple(fig.get_size_inches())
    line, = axes[1].plot([0, 1], label="a line")
    legend = finish(fig, axes, [line], own=False, title="not drawn", footnote="not drawn", legend_ax=axes[1])
    assert legend is axes[1].get_legend() and not fig.legends and not fig.texts and fig._suptitle is None
    assert tuple(fig.get_size_inches()) == size
    plt.close(fig)
