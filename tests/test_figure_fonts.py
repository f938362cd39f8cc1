"""No PDF figure embeds a Type 3 font: IEEE PDF eXpress and several publishers refuse them.

matplotlib's default (``pdf.fonttype = 3``) writes Type 3 fonts; every style of
:mod:`mixreg.plotting` and :func:`mixreg.plotting.save_figure` write TrueType (``42``).  The
scan reads a PDF's objects, and the objects of its compressed streams, for a font dictionary
with ``/Subtype /Type3``.
"""

import pathlib
import re
import zlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from _figure_tables import m_n_tables, separation_rates  # noqa: E402
from mixreg.plotting import STYLES, error_plot, save_figure, success_plot, use_style  # noqa: E402

FIGURES = pathlib.Path(__file__).resolve().parent.parent / "figures"
COMMITTED = sorted(FIGURES.glob("*.pdf"))

_TYPE3 = re.compile(rb"/Subtype\s*/Type3\b")
_STREAM = re.compile(rb"stream\r?\n(.*?)endstream", re.S)


def type3_fonts(pdf):
    """How many font dictionaries of the PDF ``pdf`` (bytes) are Type 3, in its objects or in
    its Flate-compressed streams (object streams hold objects too)."""
    found = len(_TYPE3.findall(pdf))
    for stream in _STREAM.findall(pdf):
        try:
            found += len(_TYPE3.findall(zlib.decompress(stream)))
        except zlib.error:  # not a Flate stream (an image, say)
            continue
    return found


def test_figures_are_committed():
    assert COMMITTED, "figures/ holds no PDF"


@pytest.mark.parametrize("pdf", COMMITTED, ids=[path.name for path in COMMITTED])
def test_no_committed_pdf_has_a_type3_font(pdf):
    assert type3_fonts(pdf.read_bytes()) == 0, f"{pdf.name} embeds a Type 3 font"


def test_the_scan_finds_the_type3_fonts_of_matplotlibs_default(tmp_path):
    """The test above can fail: a PDF written with matplotlib's default fonttype 3 is caught."""
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4], label="a label")
    ax.set_title("a title")
    with matplotlib.rc_context({"pdf.fonttype": 3}):
        fig.savefig(tmp_path / "type3.pdf")
    with matplotlib.rc_context({"pdf.fonttype": 42}):
        fig.savefig(tmp_path / "truetype.pdf")
    plt.close(fig)
    assert type3_fonts((tmp_path / "type3.pdf").read_bytes()) > 0
    assert type3_fonts((tmp_path / "truetype.pdf").read_bytes()) == 0


def _figures():
    """Every plot function of mixreg.plotting and of the two success studies, on tiny tables."""
    from experiments.success_vs_mn.figures import plot_success_heatmap, plot_success_vs_m
    from experiments.success_vs_R.figures import plot_success_collapse, plot_success_vs_separation

    trials = [dict(method=method, m=m, ok=int(m > 10 + 10 * i), err=(1 + i) / m)
              for i, method in enumerate(("ifca", "mine")) for m in (10, 20, 40) for _ in range(3)]
    scales = [dict(divisor={0.0: 1.0, 0.5: 2.0}, xlabel="Δ / s(σ)", title="a scale", verdict="verdict"),
              dict(divisor={0.0: 1.0, 0.5: 1.0}, xlabel="Δ", title="σ-free")]
    rates, predictions = m_n_tables()
    return {
        "success_plot": lambda: success_plot(trials, "m", success="ok", title="t", footnote="f"),
        "error_plot": lambda: error_plot(trials, "m", "err", prediction=lambda m: 1 / m, n_boot=50),
        "success_vs_separation": lambda: plot_success_vs_separation(separation_rates(), r_per_delta=5.0, title="t",
                                                                    footnote="f"),
        "success_collapse": lambda: plot_success_collapse(separation_rates(), scales, crossings={0.0: (1.0, 0.5, 2.0)},
                                                          held_out={"held out": {0.5: 1.2}}, title="t"),
        "success_vs_m": lambda: plot_success_vs_m(rates, predictions, title="t", footnote="f"),
        "success_heatmap": lambda: plot_success_heatmap(rates, predictions, title="t", footnote="f"),
    }


@pytest.mark.parametrize("style", list(STYLES))
@pytest.mark.parametrize("figure", list(_figures()))
def test_every_plot_function_saves_truetype_in_every_style(figure, style, tmp_path):
    """Even where the rcParams ask for Type 3 (a user's matplotlibrc), save_figure writes TrueType."""
    with use_style(style, pdf_fonttype=3):
        drawn = _figures()[figure]()
        assert drawn["figure"].get_figwidth() == pytest.approx(STYLES[style]["figure.figsize"][0])
        png, pdf = save_figure(drawn["figure"], tmp_path / figure)
    assert type3_fonts(pdf.read_bytes()) == 0
    assert png.stat().st_size > 1000
