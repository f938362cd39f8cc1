"""The comparison's figure (:func:`experiments.compare.figures.plot_comparison`), from a hand-made table."""

import pytest


def test_comparison_figure_says_why_a_method_was_refused():
    import matplotlib.pyplot as plt

    from experiments.compare.figures import plot_comparison

    reason = "needs d >= 4 for p = 3 signature vectors; got d = 3"
    rows = [dict(method="ifca", trials=2, refused=0, refusal="", all_diverged=0, err_mean_mean=0.5,
                 err_max_mean=0.7, mis_clients_mean=0.1, mis_points_mean=0.1, rounds_mean=10.0,
                 upload_mean=5.0, download_mean=5.0, time_mean=0.01),
            dict(method="pacfl_x", trials=2, refused=2, refusal=reason, all_diverged=0)]
    drawn = plot_comparison(rows, title="balanced", footnote="Every method: ...")
    fig = drawn["figure"]
    texts = [t.get_text() for t in fig.texts] + [t.get_text() for ax in fig.axes for t in ax.texts]
    plt.close(fig)
    assert drawn["notes"] == [f"PACFL (x) refused: {reason}."]  # for the caption file (draw())
    assert "Every method: ..." in texts and not any(reason in text for text in texts)  # the footnote stays one line
    assert "refused in 2/2 trials (reason: in the caption)" in texts


def _row(method, err):
    return dict(method=method, trials=2, refused=0, refusal="", all_diverged=0, err_mean_mean=err, err_max_mean=err,
                mis_clients_mean=0.1, mis_points_mean=0.1, rounds_mean=10.0, upload_mean=5.0, download_mean=5.0,
                time_mean=0.01)


def test_comparison_figure_draws_every_method_of_the_table_a_users_too(monkeypatch):
    """A method outside the registry's comparison view (a user's) is drawn, named and coloured,
    after the registered ones; no row of the table disappears from the figure."""
    import matplotlib.colors
    import matplotlib.pyplot as plt

    import mixreg.methods
    from experiments.compare.figures import plot_comparison
    from mixreg.methods import COMPARE, register_style, styles_for

    monkeypatch.setattr(mixreg.methods, "_USER", {})
    rows = [_row("mine", 0.3), _row("ifca", 0.5), _row("yours", 0.2), _row("known_label_ls", 0.1)]
    fig = plot_comparison(rows, title="balanced")["figure"]
    ticks = fig.axes[0].get_yticklabels()
    names = [tick.get_text() for tick in ticks]
    assert names == [COMPARE["ifca"].short, COMPARE["known_label_ls"].short, "mine", "yours"]  # top to bottom
    assert len(fig.axes[0].get_yticks()) == len(rows)
    colours = {tick.get_text(): matplotlib.colors.to_hex(tick.get_color()) for tick in ticks}
    auto = styles_for(["mine", "yours"])
    assert colours["mine"] == matplotlib.colors.to_hex(auto["mine"].color) != colours["yours"]
    # every method has its error drawn in its colour in the first panel
    drawn = {matplotlib.colors.to_hex(line.get_color()) for line in fig.axes[0].get_lines()}
    assert {colours["mine"], colours["yours"], matplotlib.colors.to_hex(COMPARE["ifca"].color)} <= drawn
    plt.close(fig)
    register_style("mine", label="IFCA II with a schedule", short="IFCA II (sched.)", color="tab:red")
    fig = plot_comparison(rows, title="balanced")["figure"]
    assert "IFCA II (sched.)" in [tick.get_text() for tick in fig.axes[0].get_yticklabels()]
    plt.close(fig)


def test_comparison_figure_draws_into_the_axes_it_is_given():
    import matplotlib.pyplot as plt

    from experiments.compare.figures import plot_comparison

    rows = [_row("ifca", 0.5), _row("known_label_ls", 0.1)]
    fig, axes = plt.subplots(1, 5)
    size, before = tuple(fig.get_size_inches()), plt.get_fignums()
    drawn = plot_comparison(rows, ax=axes, title="balanced", footnote="a note")
    assert plt.get_fignums() == before and drawn["figure"] is fig and drawn["axes"] == list(axes)
    assert {"figure", "axes", "legend", "methods", "notes"} <= set(drawn)
    assert tuple(fig.get_size_inches()) == size and not fig.texts and fig._suptitle is None
    assert [t.get_text() for t in axes[0].get_yticklabels()][0]
    with pytest.raises(ValueError, match="a sequence of 5 Axes"):
        plot_comparison(rows, ax=axes[:2])
    plt.close(fig)
