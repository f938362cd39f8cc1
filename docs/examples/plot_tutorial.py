"""
The tutorial's figures: every method against m, and the known-label floor
=========================================================================

The figures of :doc:`the tutorial </tutorial>` (``docs/tutorial/your_theorem.py``), drawn from
the results directory of one run of it, committed in ``docs/tutorial/data/`` (its manifest,
``trials.csv`` and claims table), instead of running its 48 trials again: every registered
method and the tutorial's variant ``ifca_ii_decay`` (IFCA option II with a decaying step) on
clients with an AR(1) covariance, over the number of clients m, with
:func:`mixreg.plotting.success_plot` and :func:`mixreg.plotting.error_plot`, as the script draws
them.
"""

import pathlib

import matplotlib.pyplot as plt
import numpy as np

from mixreg.montecarlo.reader import read_results
from mixreg.plotting import error_plot, success_plot, use_style
from mixreg.problems import ar1_covariance

try:
    HERE = pathlib.Path(__file__).resolve().parent  # run as a script: python docs/examples/<name>.py
except NameError:  # in the docs build: sphinx-gallery runs the example in its folder, without __file__
    HERE = pathlib.Path.cwd()
ROOT = HERE.parents[1]  # the checkout: figures/, docs/
use_style()  # the default style, two-column (6.9 in wide, 9 pt), as the studies' figures
results = read_results(ROOT / "docs" / "tutorial" / "data")
sizes = results.config  # k, n, d, sigma, ... as the sweep recorded them
print(f"{len(results.records)} trials; sizes {sizes}")

# %%
# One tidy row per trial and method: its squared error (best replica by training loss, matched
# to the truth) and whether it is below 0.25; a method whose every replica diverged has NaN, a
# failure.

names = [column[:-3] for column in results.records[0] if column.endswith("_sq")]  # "ls": known-label LS
tidy = [{"m": rec["m"], "method": name, "sq": rec[f"{name}_sq"], "ok": bool(rec[f"{name}_sq"] < 0.25)}
        for rec in results.records for name in names]
drawn = success_plot(tidy, "m", success="ok", logx=True)
plt.show()

# %%
# The squared errors, with the exact known-label floor registered before the first trial:
# :math:`\sigma^2 \operatorname{tr}(\Sigma^{-1}) / (m n / k - d - 1)` (Gaussian rows, the mean of an
# inverse Wishart).

rho = float(sizes["covariance"].split(":")[1])  # "ar1:0.5": Sigma_ij = 0.5^|i-j|
tr_inv = np.trace(np.linalg.inv(ar1_covariance(sizes["d"], rho)))


def floor(m):
    return sizes["sigma"] ** 2 * tr_inv / (np.asarray(m) * sizes["n"] / sizes["k"] - sizes["d"] - 1)


drawn = error_plot(tidy, "m", "sq", prediction=floor)
plt.show()

# %%
# The verdicts of the run, as its claims table holds them:

for row in results.table("claims.csv"):
    print(f"{row['status']}: {row['claim']}")
