"""Every legend entry of every figure is drawn, and every labelled artist is in a legend.

A legend entry that stands for nothing on the panels (a bound off the scale, a series with no
finite point, an empty proxy) tells the reader a line is there that is not: the check
:func:`mixreg.plotting.undrawn_legend_entries` compares each entry's handle with what the axes
show (same dash pattern, marker and colour, with data inside the axes' limits).  The reverse,
checked here by :func:`unlisted_artists`: an artist given a label the legends do not list.

The figures checked: every plot function of :mod:`mixreg.plotting` and of the two Fig. 3
studies on tiny tables (``tests/_figure_tables.py`` and below), and every figure of every study
redrawn from its committed paper-scale tables (``figures/data/<study>/<preset>/``, through the
study's own ``draw``), so a study's figures are checked on real tables as soon as its run is
committed.  A plot function that neither a tiny table nor a committed run draws is listed as
skipped, with its name.  The first tests show that the check can fail.
"""

import importlib
import json
import pathlib
import re
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.collections  # noqa: E402
import matplotlib.lines  # noqa: E402
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from _figure_tables import m_n_tables, separation_rates  # noqa: E402
from experiments import redraw_figures  # noqa: E402
from mixreg.cli import config_from_record  # noqa: E402
from mixreg.montecarlo.reader import read_results  # noqa: E402
from mixreg.plotting._common import _line_shown, _matches, _paths_shown  # noqa: E402 (the same matching)
from mixreg.plotting import (DEFAULT_STYLE, error_plot, new_figure, success_plot, undrawn_legend_entries,  # noqa: E402
                             use_style)

REPO = pathlib.Path(__file__).resolve().parent.parent
STUDIES = sorted(p.parent.name for p in (REPO / "experiments").glob("*/figures.py"))


def _words(text):
    return re.sub(r"\s+", " ", text).strip()


def unlisted_artists(fig):
    """Labels of the artists of ``fig``'s axes given a label (not ``_``-prefixed) and shown in
    their axes that no legend entry stands for: neither an entry of the same text (whitespace
    collapsed: legends wrap) nor one that looks like the artist (the figures list style proxies,
    "fitted slope" in grey for the fitted line of every series; an artist's label may carry
    the caption's numbers instead)."""
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    listed = {_words(t.get_text()) for legend in legends for t in legend.get_texts()}
    handles = [h for legend in legends for h in legend.legend_handles if h is not None]
    missing = []
    for ax in fig.axes:
        for artist in list(ax.lines) + list(ax.collections) + list(ax.patches):
            label = str(artist.get_label() or "")
            if not label or label.startswith("_") or _words(label) in listed:
                continue
            alone = SimpleNamespace(
                bbox=ax.bbox, lines=[artist] if isinstance(artist, matplotlib.lines.Line2D) else [],
                collections=[artist] if isinstance(artist, matplotlib.collections.Collection) else [],
                patches=[artist] if isinstance(artist, matplotlib.patches.Patch) else [])
            if _shown(artist, ax) and not any(_matches(h, [alone]) for h in handles):
                missing.append(label)
    return sorted(set(missing))


def _shown(artist, ax):
    if isinstance(artist, matplotlib.lines.Line2D):
        return _line_shown(artist, ax)
    return _paths_shown(artist, ax)


def _problems(fig):
    return {"undrawn legend entries": undrawn_legend_entries(fig),
            "labelled but not in a legend": unlisted_artists(fig)}


# --------------------------------------------------------------------------------------------
# The check can fail
# --------------------------------------------------------------------------------------------


def _axes():
    fig, (ax,) = new_figure()
    ax.plot([1, 2, 3], [0.2, 0.4, 0.6], "-o", color="C0", label="data")
    ax.set_xlim(0, 4)
    ax.set_ylim(0, 1)
    return fig, ax


def test_a_figure_whose_entries_are_all_drawn_passes():
    fig, ax = _axes()
    ax.axhline(0.5, color="0.2", lw=0.8, label="½")
    ax.fill_between([1, 2, 3], [0.1, 0.3, 0.5], [0.3, 0.5, 0.7], color="C0", alpha=0.2, label="band")
    ax.scatter([2], [0.9], marker="^", color="C1", label="largest")
    ax.plot([0, 10], [-1, 2], ":", color="C2", label="crosses the panel")  # no point inside, a segment is
    ax.legend()
    assert _problems(fig) == {"undrawn legend entries": [], "labelled but not in a legend": []}
    plt.close(fig)


@pytest.mark.parametrize("case", ["off the scale", "all nan", "empty", "scatter off the scale", "band off the scale",
                                  "hidden"])
def test_an_entry_for_a_series_that_shows_nothing_is_listed(case):
    fig, ax = _axes()
    if case == "off the scale":     # the ifca_contraction defect of issue 27: a bound above the axis
        ax.plot([1, 2, 3], [5.0, 6.0, 7.0], "--", color="C3", label=case)
    elif case == "all nan":
        ax.plot([1, 2, 3], [np.nan] * 3, "--", color="C3", label=case)
    elif case == "empty":
        ax.plot([], [], "--", color="C3", label=case)
    elif case == "scatter off the scale":
        ax.scatter([2], [3.0], marker="s", color="C3", label=case)
    elif case == "band off the scale":
        ax.fill_between([1, 2], [2.0, 2.0], [3.0, 3.0], color="C3", label=case)
    else:
        ax.plot([1, 2], [0.5, 0.5], "--", color="C3", label=case, visible=False)
    ax.legend()
    kind = "PathCollection" if "scatter" in case else "Rectangle" if "band" in case else "Line2D"
    assert undrawn_legend_entries(fig) == [f"{case} ({kind})"]
    plt.close(fig)


def test_a_proxy_for_nothing_is_listed():
    """Proxies: one with neither line nor marker, one whose dash pattern no line has, one whose
    colour no artist has (grey proxies stand for any colour, as the studies' style legends), one
    whose marker no line or scatter has."""
    fig, ax = _axes()
    ax.scatter([2], [0.8], marker="^", color="C1")
    handles = [matplotlib.lines.Line2D([], [], color="C0", marker="o", label="data"),
               matplotlib.lines.Line2D([], [], color="0.3", marker="^", ls="none", label="grey: the scatter"),
               matplotlib.lines.Line2D([], [], color="0.3", marker="s", ls="none", label="squares"),
               matplotlib.lines.Line2D([], [], color="0.3", ls="-", label="grey: any solid line"),
               matplotlib.lines.Line2D([], [], ls="none", label="nothing at all"),
               matplotlib.lines.Line2D([], [], color="0.3", ls="--", label="a dashed bound"),
               matplotlib.lines.Line2D([], [], color="C5", ls="-", label="a series in another colour"),
               matplotlib.patches.Patch(color="C0", alpha=0.2, label="a band")]
    ax.legend(handles=handles)
    assert undrawn_legend_entries(fig) == ["squares (Line2D)", "nothing at all (Line2D)", "a dashed bound (Line2D)",
                                           "a series in another colour (Line2D)", "a band (Rectangle)"]
    plt.close(fig)


def test_a_labelled_artist_missing_from_the_legends_is_listed():
    """Listed: a labelled line no entry names or looks like; not listed: one a grey style entry
    stands for, and one off the scale."""
    fig, ax = _axes()
    ax.plot([1, 2], [0.3, 0.3], "--", color="C1", label="kept out")
    ax.plot([1, 2], [0.7, 0.7], ":", color="C2", label="slope +0.51 [0.47, 0.55]")
    ax.plot([1, 2], [7.0, 7.0], "-.", color="C3", label="off the scale")
    ax.legend(handles=ax.lines[:1] + [matplotlib.lines.Line2D([], [], color="0.3", ls=":", label="fitted slope")])
    assert unlisted_artists(fig) == ["kept out"]
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# Every plot function on tiny tables
# --------------------------------------------------------------------------------------------


def _tiny_figures():
    """Every plot function of mixreg.plotting and of the two Fig. 3 studies, on tiny tables."""
    from experiments.success_vs_mn.figures import plot_success_heatmap, plot_success_vs_m
    from experiments.success_vs_R.figures import plot_success_collapse, plot_success_vs_separation
    from experiments.two_phase.figures import plot_error_vs_rounds, plot_two_phase_scaling

    trials = [dict(method=method, m=m, ok=int(m > 10 + 10 * i), err=(1 + i) / m)
              for i, method in enumerate(("ifca", "mine")) for m in (10, 20, 40) for _ in range(3)]
    scales = [dict(divisor={0.0: 1.0, 0.5: 2.0}, xlabel="Δ / s(σ)", title="a scale", verdict="verdict"),
              dict(divisor={0.0: 1.0, 0.5: 1.0}, xlabel="Δ", title="σ-free")]
    rates, predictions = m_n_tables()
    # the two two-phase figures no draw() of a study calls (its own figures are drawn from its run)
    rounds = np.arange(0, 21, 5)
    curves = [dict(key=key, rounds=rounds, median=np.exp(-rounds / (5.0 + j)), low=0.8 * np.exp(-rounds / (5.0 + j)),
                   high=1.2 * np.exp(-rounds / (5.0 + j))) for j, key in enumerate(("ifca", "oracle", "fedavg"))]
    keys = ("fedavg", "fedprox", "ifca", "ls")

    def series(n):
        return [(key, None, 0.1 * (j + 1) / np.arange(1, n + 1), 0.09 * (j + 1) / np.arange(1, n + 1),
                 0.11 * (j + 1) / np.arange(1, n + 1)) for j, key in enumerate(keys)]

    by_M = dict(M=np.array([100, 200, 400]), series=series(3), theory=(0.2 / np.arange(1, 4), "theory"))
    by_law = dict(laws=["equal", "zipf"], chi2=[0.0, 1.5], series=series(2), theory=([0.1, 0.05], "theory"))
    draws = np.random.default_rng(0)
    solver_rates = [dict(key=key, p=draws.uniform(0.05, 0.3, 5), measured=draws.uniform(0.01, 0.1, 5),
                         linear=draws.uniform(0.01, 0.1, 5), C1=0.3, C1_label="1 − ρ = C₁ p_min")
                    for key in ("fedavg", "fedprox")]
    return {
        "mixreg.plotting.success_plot": lambda: success_plot(trials, "m", success="ok", title="t", footnote="f"),
        "mixreg.plotting.error_plot": lambda: error_plot(trials, "m", "err", prediction=lambda m: 1 / m, n_boot=50),
        "success_vs_R.plot_success_vs_separation": lambda: plot_success_vs_separation(
            separation_rates(), r_per_delta=5.0, title="t", footnote="f"),
        "success_vs_R.plot_success_collapse": lambda: plot_success_collapse(
            separation_rates(), scales, crossings={0.0: (1.0, 0.5, 2.0)}, held_out={"held out": {0.5: 1.2}}, title="t"),
        "success_vs_mn.plot_success_vs_m": lambda: plot_success_vs_m(rates, predictions, title="t", footnote="f"),
        "success_vs_mn.plot_success_heatmap": lambda: plot_success_heatmap(rates, predictions, title="t", footnote="f"),
        "two_phase.plot_error_vs_rounds": lambda: plot_error_vs_rounds(
            curves, floor=(1e-3, None), switch_round=5, theory=(rounds, np.exp(-rounds / 4.0), "theory")),
        "two_phase.plot_two_phase_scaling": lambda: plot_two_phase_scaling(by_M, by_law, solver_rates, title="t"),
    }


@pytest.mark.parametrize("name", list(_tiny_figures()))
def test_every_legend_entry_of_a_plot_function_on_tiny_tables_is_drawn(name):
    drawn = _tiny_figures()[name]()
    try:
        assert _problems(drawn["figure"]) == {"undrawn legend entries": [], "labelled but not in a legend": []}
    finally:
        plt.close(drawn["figure"])


# --------------------------------------------------------------------------------------------
# Every figure of every committed run, redrawn from its tables
# --------------------------------------------------------------------------------------------

COMMITTED = [(name, run) for name, run in redraw_figures.results_directories() if redraw_figures.is_finished(run)]
_REDRAWN = {}


def _redraw(name, run, outdir):
    """Draw the committed ``run`` of study ``name`` from its tables (as ``--redraw`` does, in the
    default style; nothing written: the study's ``save_figure`` is replaced by the check); return
    ``({figure file name: problems}, {plot functions called})``, computed once per session."""
    if (name, run) in _REDRAWN:
        return _REDRAWN[name, run]
    study = importlib.import_module(f"experiments.{name}").STUDY
    figures = importlib.import_module(f"experiments.{name}.figures")
    found, called = {}, set()

    def checked_save(fig, path, *more, **kwargs):
        found[pathlib.Path(path).name] = _problems(fig)
        plt.close(fig)
        return []

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(figures, "save_figure", checked_save)
        for attr in getattr(figures, "__all__", ()):
            if attr.startswith("plot_"):
                def recorded(*args, _f=getattr(figures, attr), _n=attr, **kwargs):
                    called.add(_n)
                    return _f(*args, **kwargs)
                patch.setattr(figures, attr, recorded)
        manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
        config = config_from_record(study.config, manifest["sweep"]["config"])
        results = read_results(run)
        tables = {table: results.table(f"{table}.csv") for table in study.tables}
        with use_style(DEFAULT_STYLE):
            study.draw(config, tables, outdir)
    _REDRAWN[name, run] = found, called
    return found, called


@pytest.mark.parametrize("name, run", COMMITTED, ids=[f"{n}/{r.name}" for n, r in COMMITTED])
def test_every_legend_entry_of_every_committed_figure_is_drawn(name, run, tmp_path):
    found, _ = _redraw(name, run, tmp_path)
    assert found, f"drawing {run} saved no figure"
    failing = {figure: problems for figure, problems in found.items() if any(problems.values())}
    assert not failing, failing


def _plot_functions():
    names = ["mixreg.plotting.success_plot", "mixreg.plotting.error_plot"]
    for study in STUDIES:
        figures = importlib.import_module(f"experiments.{study}.figures")
        names += [f"{study}.{attr}" for attr in getattr(figures, "__all__", ()) if attr.startswith("plot_")]
    return names


@pytest.mark.parametrize("function", _plot_functions())
def test_every_plot_function_is_checked_on_tiny_or_committed_tables(function, tmp_path):
    """Each plot function is drawn by a tiny table above or by the redraw of a committed run; one
    that is not (its study has no committed run yet) is skipped, by name."""
    if function in _tiny_figures():
        return
    study, attr = function.split(".", 1)
    for name, run in COMMITTED:
        if name == study and attr in _redraw(name, run, tmp_path)[1]:
            return
    pytest.skip(f"{function}: no tiny table here and no committed run of {study} draws it")
