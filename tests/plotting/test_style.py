"""Figure styles (mixreg.plotting._style), save_figure's caption and metadata, and --style on the command line."""

import json
import shutil

import matplotlib

matplotlib.use("Agg")
import matplotlib as mpl  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from PIL import Image  # noqa: E402

from mixreg.plotting import (DEFAULT_STYLE, STYLES, add_footnote, current_style, new_figure, save_figure,  # noqa: E402
                             use_style, wrap_text)

from _figure_tables import m_n_tables, separation_rates  # noqa: E402


def _snapshot():
    return {key: repr(value) for key, value in mpl.rcParams.items()}


def test_use_style_restores_the_rcparams_after_a_with_block():
    before, name = _snapshot(), current_style()
    with use_style("one-column"):
        assert tuple(mpl.rcParams["figure.figsize"]) == (3.3, 2.5) and mpl.rcParams["font.size"] == 8
        assert mpl.rcParams["pdf.fonttype"] == 42 and current_style() == "one-column"
        with use_style("slides", font_size=13):  # nested, with an override
            assert mpl.rcParams["font.size"] == 13 and current_style() == "custom"
        assert mpl.rcParams["font.size"] == 8 and current_style() == "one-column"
    assert _snapshot() == before and current_style() == name


def test_a_bad_style_is_one_value_error_naming_the_choices_and_changes_nothing():
    before = _snapshot()
    with pytest.raises(ValueError) as caught:
        use_style("three-column")
    message = str(caught.value)
    assert "\n" not in message and "'three-column'" in message
    assert all(name in message for name in STYLES) and ".mplstyle" in message
    with pytest.raises(ValueError):
        use_style("two-column", font_size="huge")  # a bad override: refused, the rcParams as they were
    assert _snapshot() == before


def test_a_mplstyle_file_is_a_style(tmp_path):
    path = tmp_path / "journal.mplstyle"
    path.write_text("figure.figsize: 5.0, 2.0\nfont.size: 7\n")
    with use_style(path):
        assert tuple(mpl.rcParams["figure.figsize"]) == (5.0, 2.0) and mpl.rcParams["font.size"] == 7
        assert current_style() == "file journal.mplstyle"
        fig, axes = new_figure(2)
        assert fig.get_figwidth() == 5.0 and len(axes) == 2
        plt.close(fig)


@pytest.mark.parametrize("text, said", [
    ("vm-builder-7\n", "line 1 ('vm-builder-7'): missing colon"),           # not a style file (/etc/hostname)
    ("figure.figsize: 5.0, 2.0\nfont.size: abc\n", "line 2 ('font.size: abc'): bad value"),
    ("font.size: 7\n# a comment\nfont.sise: 7\n", "line 3 ('font.sise: 7'): 'font.sise' is no rcParam"),
    ("backend: TkAgg\n", "'backend' is no style parameter"),
])
def test_a_style_file_matplotlib_cannot_read_in_full_is_one_value_error_naming_file_and_line(tmp_path, text, said):
    """matplotlib only logs a bad line and draws without it; use_style refuses the file."""
    path = tmp_path / "journal.mplstyle"
    path.write_text(text)
    before, name = _snapshot(), current_style()
    with pytest.raises(ValueError) as caught:
        use_style(path)
    message = str(caught.value)
    assert "\n" not in message and str(path) in message and said in message
    assert _snapshot() == before and current_style() == name
    path.write_bytes(b"font.size: \xff\xfe7\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        use_style(path)


def test_the_named_styles_are_shipped_as_mplstyle_files_to_copy():
    import pathlib

    import mixreg.plotting

    here = pathlib.Path(mixreg.plotting.__file__).parent
    for name in STYLES:
        with use_style(here / f"{name}.mplstyle"):
            from_file = _snapshot()
        with use_style(name):
            assert _snapshot() == from_file


def test_an_override_keyword_is_the_rcparam_its_underscores_spell():
    with use_style("one-column", legend_title_fontsize=6, lines_linewidth=2, font_size=7):
        assert mpl.rcParams["legend.title_fontsize"] == 6 and mpl.rcParams["lines.linewidth"] == 2
        assert mpl.rcParams["font.size"] == 7
    before = _snapshot()
    with pytest.raises(ValueError) as caught:
        use_style("one-column", font_sise=7)
    message = str(caught.value)
    assert "\n" not in message and "'font_sise'" in message and "font_size" in message
    assert _snapshot() == before


@pytest.mark.parametrize("style, columns", [("two-column", 3), ("one-column", 2), ("slides", 6)])
def test_new_figure_is_as_wide_as_the_style_with_as_many_columns_as_fit(style, columns):
    with use_style(style):
        fig, axes = new_figure(6)
        assert fig.get_figwidth() == pytest.approx(STYLES[style]["figure.figsize"][0])
        assert len(axes) == 6 and len({ax.get_subplotspec().colspan.start for ax in axes}) == columns
        assert fig.get_layout_engine() is not None  # constrained: legends and footnotes kept clear
        height = fig.get_figheight()
        plt.close(fig)
        fig, axes = new_figure(6, legend_rows=2)
        assert fig.get_figheight() > height
        plt.close(fig)
        fig, axes = new_figure(5, max_cols=1)
        assert len({ax.get_subplotspec().colspan.start for ax in axes}) == 1
        plt.close(fig)
    with pytest.raises(ValueError, match="n_panels must be >= 1"):
        new_figure(0)


def test_a_footnote_makes_the_figure_taller_and_wrap_text_keeps_equations_whole():
    with use_style("one-column"):
        fig, _ = new_figure(1)
        height = fig.get_figheight()
        text = add_footnote(fig, "one line")
        assert text.get_text() == "one line" and fig.get_figheight() > height
        assert add_footnote(fig, "") is None
        plt.close(fig)
        wrapped = wrap_text("IFCA success (k = 2, m = 100, n = 100, d = 1000)", 1.0)
        lines = wrapped.split("\n")
        assert len(lines) > 1 and "k = 2" in wrapped and "d = 1000" in wrapped
        assert not any(line.endswith("=") or line.startswith("=") for line in lines)
        assert "\u00a0" not in wrap_text("the\u00a0paper's\u00a0panel", 0.5)


def test_save_figure_writes_the_caption_beside_each_copy_and_records_the_style(tmp_path):
    with use_style("one-column"):
        fig, (ax,) = new_figure(1)
        ax.plot([1, 2], [1, 2])
        paths = save_figure(fig, tmp_path / "a" / "fig", tmp_path / "b" / "fig_paper", caption="What it shows.  ")
    assert [path.name for path in paths] == ["fig.png", "fig.pdf", "fig.caption.txt",
                                             "fig_paper.png", "fig_paper.pdf", "fig_paper.caption.txt"]
    assert (tmp_path / "a" / "fig.caption.txt").read_text() == "What it shows.\n"
    assert Image.open(tmp_path / "a" / "fig.png").info["Description"] == "mixreg figure, style one-column"
    assert b"mixreg figure, style one-column" in (tmp_path / "a" / "fig.pdf").read_bytes()
    fig, _ = plt.subplots()
    assert [path.suffix for path in save_figure(fig, tmp_path / "c")] == [".png", ".pdf"]  # no caption: no file


def test_save_figure_writes_a_non_ascii_caption_as_utf8_whatever_the_locale(tmp_path):
    """Captions hold Δ and σ: written as UTF-8 even where the locale's encoding is ASCII."""
    import os
    import subprocess
    import sys

    caption = "Success against \u0394 / s(\u03c3), k = 2."
    script = ("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot as plt; "
              "from mixreg.plotting import save_figure; "
              f"save_figure(plt.figure(), {str(tmp_path / 'fig')!r}, caption={ascii(caption)})")
    env = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          encoding="utf-8", cwd=os.getcwd())
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "fig.caption.txt").read_bytes() == (caption + "\n").encode("utf-8")


# --------------------------------------------------------------------------------------------
# The studies' plot functions draw into the axes given
# --------------------------------------------------------------------------------------------


def _plots():
    from experiments.success_vs_mn.figures import plot_success_heatmap, plot_success_vs_m
    from experiments.success_vs_R.figures import plot_success_collapse, plot_success_vs_separation

    scales = [dict(divisor={0.0: 1.0, 0.5: 2.0}, xlabel="Δ / s(σ)", title="a scale", verdict="v"),
              dict(divisor={0.0: 1.0, 0.5: 1.0}, xlabel="Δ", title="σ-free")]
    rates, predictions = m_n_tables()
    return {  # name: (draw into ax, panels)
        "success_vs_separation": (lambda ax: plot_success_vs_separation(separation_rates(), r_per_delta=5.0, ax=ax,
                                                                        title="t", footnote="f"), 2),
        "success_collapse": (lambda ax: plot_success_collapse(separation_rates(), scales, crossings={0.0: (1.0, 0.5, 2.0)},
                                                              held_out={"held out": {0.5: 1.2}}, ax=ax,
                                                              title="t", footnote="f"), 3),
        "success_vs_m": (lambda ax: plot_success_vs_m(rates, predictions, ax=ax, title="t", footnote="f"), 6),
        "success_heatmap": (lambda ax: plot_success_heatmap(rates, predictions, ax=ax, title="t", footnote="f"), 6),
    }


@pytest.mark.parametrize("name", list(_plots()))
def test_the_studies_plot_functions_draw_into_the_axes_given(name):
    draw, panels = _plots()[name]
    fig, grid = plt.subplots(2, 3, figsize=(9, 6), layout="constrained")
    axes = list(grid.ravel()[:panels])
    before, size = plt.get_fignums(), tuple(fig.get_size_inches())
    drawn = draw(axes)
    assert drawn["figure"] is fig and drawn["axes"] == axes and "legend" in drawn
    assert plt.get_fignums() == before  # no figure of its own
    assert tuple(fig.get_size_inches()) == size and not fig.legends and not fig.texts  # no footnote, no legend
    assert fig._suptitle is None
    assert all(ax.has_data() for ax in axes) and not any(ax.has_data() for ax in grid.ravel()[panels:])
    if drawn["legend"] is not None:
        assert drawn["legend"] in [ax.get_legend() for ax in axes]
    with pytest.raises(ValueError, match=f"ax must be {panels} Axes"):
        draw(axes[:-1])
    if panels > 1:  # panels of two figures: refused, not drawn into the first one's figure
        other, stray = plt.subplots()
        with pytest.raises(ValueError, match="ax must be Axes of one figure"):
            draw(axes[:-1] + [stray])
        plt.close(other)
    plt.close(fig)


@pytest.mark.parametrize("name", list(_plots()))
def test_without_axes_the_studies_plot_functions_make_a_figure_in_the_style(name):
    draw, panels = _plots()[name]
    with use_style("one-column"):
        drawn = draw(None)
        fig = drawn["figure"]
        assert fig.get_figwidth() == pytest.approx(3.3) and len(drawn["axes"]) == panels
        assert drawn["legend"] in fig.legends  # above the panels
        assert any(text.get_text() == "f" for text in fig.texts)  # the one-line footnote
        fig.draw_without_rendering()
        for ax in drawn["axes"]:  # the panels keep a usable size
            box = ax.get_position()
            assert box.width * fig.get_figwidth() > 1.0 and box.height * fig.get_figheight() > 0.6
        plt.close(fig)


# --------------------------------------------------------------------------------------------
# --style on the command line
# --------------------------------------------------------------------------------------------


def test_a_bad_style_flag_is_one_line_naming_the_choices_and_exit_2(capsys):
    from experiments import success_vs_R

    with pytest.raises(SystemExit) as caught:
        success_vs_R.STUDY.main(["--style", "three-column", "--dry-run"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--style" in err
    assert all(name in err for name in STYLES) and ".mplstyle" in err
    assert success_vs_R.STUDY.parser().parse_args([]).style == DEFAULT_STYLE


def test_a_style_file_matplotlib_cannot_read_is_one_line_and_exit_2(tmp_path, capsys):
    from experiments import success_vs_R

    bad = tmp_path / "bad.mplstyle"
    bad.write_text("font.size: abc\n")
    for path in (bad, tmp_path / "hostname"):
        path.parent.mkdir(exist_ok=True)
        if not path.exists():
            path.write_text("vm-builder-7\n")
        with pytest.raises(SystemExit) as caught:
            success_vs_R.STUDY.main(["--style", str(path), "--dry-run"])
        assert caught.value.code == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "--style" in err and str(path) in err and "line 1" in err
    good = tmp_path / "good.mplstyle"
    good.write_text("font.size: 7\n")
    assert success_vs_R.STUDY.parser().parse_args(["--style", str(good)]).style == str(good)


def test_redraw_in_another_style_writes_its_figures_into_the_results_directory_only(tmp_path, monkeypatch, capsys):
    """``--redraw DIR --style one-column``: 3.3 in wide figures in DIR, never copied over figures/."""
    import dataclasses

    from experiments import redraw_figures, success_vs_R

    run = tmp_path / "paper-a"
    shutil.copytree(redraw_figures.DATA / "success_vs_R" / "paper-a", run,
                    ignore=shutil.ignore_patterns("*.png", "*.pdf", "*.caption.txt"))
    figures = tmp_path / "figures"
    monkeypatch.setattr(success_vs_R, "STUDY", dataclasses.replace(success_vs_R.STUDY, figures_dir=figures))
    assert success_vs_R.STUDY.main(["--redraw", str(run), "--style", "one-column"]) == 0
    assert "not copied" in capsys.readouterr().err and not figures.exists()
    for png in ("success_vs_R.png", "success_vs_R_collapse.png"):
        image = Image.open(run / png)
        assert image.size[0] / image.info["dpi"][0] == pytest.approx(3.3, abs=0.01)
        assert image.info["Description"] == "mixreg figure, style one-column"
    assert (run / "success_vs_R_collapse.caption.txt").read_text().startswith("Do the noise levels collapse")

    assert success_vs_R.STUDY.main(["--redraw", str(run)]) == 0  # the default style: copied, captions too
    copied = sorted(path.name for path in figures.iterdir())
    assert "success_vs_R_collapse_paper-a.caption.txt" in copied and "success_vs_R_paper-a.pdf" in copied
    image = Image.open(figures / "success_vs_R_paper-a.png")
    assert image.size[0] / image.info["dpi"][0] == pytest.approx(6.9, abs=0.01)
    json.loads((run / "manifest.json").read_text())  # the directory is still a results directory
