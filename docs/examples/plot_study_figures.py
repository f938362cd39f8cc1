"""
IFCA Fig. 3(c) and 3(d): the study's figure functions on its committed tables
=============================================================================

The four committed figures of ``success_vs_mn`` (``figures/success_vs_mn_paper-c.png``,
``figures/success_vs_mn_heatmap_paper-c.png`` and those of ``paper-d``), drawn from the tables of
their results directories, ``figures/data/success_vs_mn/paper-c`` and ``paper-d``: read with
:func:`mixreg.montecarlo.reader.read_results`, drawn with the study's figure functions
``plot_success_vs_m`` and ``plot_success_heatmap`` (``experiments.success_vs_mn``) in the default
style, with the title and footnote the study gives them. These are the calls of the study's
``draw`` (which ``--redraw DIR`` makes and which then writes the PNG, PDF and caption files);
here each draws a figure of its own, shown by the gallery. Nothing is recomputed.

``experiments/`` is the checkout's package of studies (not installed with mixreg): this example
needs a checkout.
"""

import pathlib
import sys

import matplotlib.pyplot as plt

try:
    HERE = pathlib.Path(__file__).resolve().parent  # run as a script: python docs/examples/<name>.py
except NameError:  # in the docs build: sphinx-gallery runs the example in its folder, without __file__
    HERE = pathlib.Path.cwd()
ROOT = HERE.parents[1]  # the checkout: figures/, docs/, experiments/
sys.path.insert(0, str(ROOT))  # experiments/ is importable from the checkout only
from experiments.success_vs_mn import PAPER_R, RULES_DRAWN, plot_success_heatmap, plot_success_vs_m  # noqa: E402

from mixreg.montecarlo.reader import read_results  # noqa: E402
from mixreg.plotting import use_style  # noqa: E402

use_style()  # the default style, two-column (6.9 in wide, 9 pt), as the committed figures


def draw_committed(preset):
    """The two figures of the committed ``success_vs_mn`` run ``preset``, as the study draws them."""
    results = read_results(ROOT / "figures" / "data" / "success_vs_mn" / preset)
    rates, theory = results.table("rates.csv"), results.table("theory.csv")  # per (r, n, m) cell; predictions
    config = results.config
    title = (f"IFCA success probability vs clients m and points per client n "
             f"(k = {config['k']}, d = {config['d']}, σ = {config['sigma']:g})")
    curves = plot_success_vs_m(rates, theory, rules=RULES_DRAWN, paper_r=PAPER_R[preset], title=title,
                               footnote=f"{config['trials']} trials per point; shaded: predicted before the runs; "
                                        "bands: 95% Wilson intervals")
    heatmap = plot_success_heatmap(rates, theory, rules=RULES_DRAWN, paper_r=PAPER_R[preset], title=title,
                                   footnote=f"{config['trials']} trials per cell; hatched: predicted before the runs")
    print(f"figures/success_vs_mn_{preset}.png and figures/success_vs_mn_heatmap_{preset}.png: "
          f"{len(results.records)} trials over {len(rates)} (r, n, m) cells")
    return curves, heatmap


# %%
# ``paper-c``: k = 2 clusters, d = 1000, σ = 0.1, 40 trials per (m, n) cell, both separations r on
# one shared draw per trial; r = 0.1 is the paper's panel. One panel per success rule and r: the
# success rate against the number of clients m, one curve per number of points per client n. The
# shaded region is the prediction made from the sizes before the runs (``theory.csv``): there,
# even known-label least squares misses the success threshold. Then the same rates as a heatmap
# over the (m, n) grid, the predicted cells hatched.

curves, heatmap = draw_committed("paper-c")
plt.show()

# %%
# ``paper-d``: k = 4, the separations r = 0.5 (the paper's panel) and 0.75. The function returns
# what it drew (``"figure"``, ``"axes"``, ``"legend"`` and the series), so a reader can check a
# number against the figure:

curves, heatmap = draw_committed("paper-d")
plt.show()
print(sorted(curves))
