"""
The final error against the number of clients, with the known-label floor
=========================================================================

From the same committed ``paper-c`` run of ``success_vs_mn``: the distance to the truth of the
run IFCA would pick (lowest training loss, the ``honest`` rule) and of known-label least squares,
against the number of clients m, drawn with :func:`mixreg.plotting.error_plot` (medians with
quartiles) beside the known-label floor
σ √(d / (N_l − d − 1)) that the run recorded for each cell from its sizes alone. Nothing is
recomputed.
"""

import pathlib

import matplotlib.pyplot as plt
import numpy as np

from mixreg.montecarlo.reader import read_results
from mixreg.plotting import error_plot, new_figure, use_style

try:
    HERE = pathlib.Path(__file__).resolve().parent  # run as a script: python docs/examples/<name>.py
except NameError:  # in the docs build: sphinx-gallery runs the example in its folder, without __file__
    HERE = pathlib.Path.cwd()
ROOT = HERE.parents[1]  # the checkout: figures/, docs/
use_style()  # the default style, two-column (6.9 in wide, 9 pt), as the studies' figures
results = read_results(ROOT / "figures" / "data" / "success_vs_mn" / "paper-c")

# %%
# At the larger separation (level 1, r = 0.25) and n = 100 points per client: one tidy row per
# trial and method. The floor is one number per cell, the same in every trial of it.

N_POINTS, LEVEL = 100, 1
records = [rec for rec in results.records if rec["n"] == N_POINTS]
tidy = [{"m": rec["m"], "method": method, "distance": rec[f"L{LEVEL}_{field}"]}
        for rec in records for method, field in (("IFCA (lowest training loss)", "honest_dist"),
                                                 ("known-label least squares", "oracle_dist"))]
floor = {rec["m"]: rec[f"L{LEVEL}_oracle_floor"] for rec in records}
ms = np.array(sorted(floor))

fig, (ax,) = new_figure(1)
drawn = error_plot(tidy, "m", "distance", ax=ax, statistic="median", prediction=(ms, [floor[m] for m in ms]),
                   fit=False, label="distance to the truth (median)")
ax.set_title(f"r = {records[0][f'L{LEVEL}_r']:g}, n = {N_POINTS}")
plt.show()

# %%
# IFCA fails at m = 50, where even known-label least squares misses the success threshold 0.6 σ, and
# from m = 70 on sits on the known-label error: the clients are clustered right. An exponent fit
# (``fit=True``, the default) would mix the two regimes, so it is left out here. The medians drawn:

for method, arrays in drawn["arrays"].items():
    print(method, dict(zip(arrays["x"].astype(int).tolist(), arrays["y"].round(4).tolist())))
