"""
Success against the number of clients (IFCA Fig. 3(c))
======================================================

The committed ``paper-c`` run of ``success_vs_mn`` (k = 2, d = 1000, σ = 0.1, 40 trials per
(m, n) cell, both separations r on one shared draw per trial), read back with
:func:`mixreg.montecarlo.reader.read_results` and drawn with :func:`mixreg.plotting.success_plot`:
the success probability under the official rule against the number of clients m, one series per
number of points per client n, one panel per separation. Nothing is recomputed.
"""

import pathlib

import matplotlib.pyplot as plt

from mixreg.montecarlo.reader import read_results
from mixreg.plotting import new_figure, success_plot, use_style

try:
    HERE = pathlib.Path(__file__).resolve().parent  # run as a script: python docs/examples/<name>.py
except NameError:  # in the docs build: sphinx-gallery runs the example in its folder, without __file__
    HERE = pathlib.Path.cwd()
ROOT = HERE.parents[1]  # the checkout: figures/, docs/
use_style()  # the default style, two-column (6.9 in wide, 9 pt), as the studies' figures
results = read_results(ROOT / "figures" / "data" / "success_vs_mn" / "paper-c")
print(f"{len(results.records)} trials over {len(results.cells)} (m, n) cells")

# %%
# The record of a trial holds the fields of separation level ``i`` under the prefix ``L<i>_``.
# A series is any column of the tidy rows: here the number of points per client, named as the
# legend should say it.

n_levels = sum(1 for key in results.records[0] if key.startswith("L") and key.endswith("_r"))
tidy = [{"m": rec["m"], "r": rec[f"L{i}_r"], "method": f"n = {rec['n']}", "success": rec[f"L{i}_official_success"]}
        for rec in results.records for i in range(n_levels)]
separations = sorted({row["r"] for row in tidy})

fig, axes = new_figure(len(separations), sharey=True)
for i, (ax, r) in enumerate(zip(axes, separations)):
    success_plot([row for row in tidy if row["r"] == r], "m", ax=ax, logx=True, label="success probability (official rule)")
    ax.set_title(f"r = {r:g}")
    if i and ax.get_legend() is not None:
        ax.get_legend().remove()
plt.show()

# %%
# The study's own figure adds what the theory says in advance: the region where even known-label
# least squares cannot meet the success threshold, from the sizes alone (``theory.csv``). The
# table comes back typed, as the run wrote it:

for row in results.table("theory.csv")[:3]:
    print(row)
