"""The comparison's figure (:func:`experiments.compare.figures.plot_comparison`), from a hand-made table."""


def test_comparison_figure_says_why_a_method_was_refused():
    import matplotlib.pyplot as plt

    from experiments.compare.figures import plot_comparison

    reason = "needs d >= 4 for p = 3 signature vectors; got d = 3"
    rows = [dict(method="ifca", trials=2, refused=0, refusal="", all_diverged=0, err_mean_mean=0.5,
                 err_max_mean=0.7, mis_clients_mean=0.1, mis_points_mean=0.1, rounds_mean=10.0,
                 upload_mean=5.0, download_mean=5.0, time_mean=0.01),
            dict(method="pacfl_x", trials=2, refused=2, refusal=reason, all_diverged=0)]
    fig = plot_comparison(rows, title="balanced", footnote="Every method: ...")
    texts = [t.get_text() for t in fig.texts] + [t.get_text() for ax in fig.axes for t in ax.texts]
    plt.close(fig)
    assert any(text.endswith(f"PACFL (x) refused: {reason}.") and text.startswith("Every method") for text in texts)
    assert "refused in 2/2 trials (why: below)" in texts
