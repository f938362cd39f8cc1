"""
Success against the separation (IFCA Fig. 3(a))
===============================================

The committed ``paper-a`` run of ``success_vs_R`` (k = 2 clusters, m = 100 clients, n = 100
points each, d = 1000, 40 trials per separation, four noise levels per trial on one shared draw),
read back with :func:`mixreg.montecarlo.reader.read_results` and drawn with
:func:`mixreg.plotting.success_plot`: the success probability of each success rule against the
per-coordinate separation r, one panel per noise level, with 95% Wilson bands. Nothing is
recomputed: the trials are those of ``figures/data/success_vs_R/paper-a/trials.csv``.
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
results = read_results(ROOT / "figures" / "data" / "success_vs_R" / "paper-a")
print(f"{len(results.records)} trials, status {results.manifest['status']!r}, "
      f"config: k={results.config['k']}, m={results.config['m']}, n={results.config['n']}, d={results.config['d']}")

# %%
# A trial of this run drew one problem and ran IFCA at every noise level on it: its record holds
# the fields of level ``i`` under the prefix ``L<i>_``. One tidy row per trial, level and success
# rule (``official``: the official code's best run by distance to the truth; ``honest``: the run
# of lowest training loss; ``oracle``: known-label least squares) is all
# :func:`~mixreg.plotting.success_plot` needs.

RULES = ("official", "honest", "oracle")
n_levels = sum(1 for key in results.records[0] if key.startswith("L") and key.endswith("_sigma"))
tidy = [{"r": rec["r"], "sigma": rec[f"L{i}_sigma"], "method": rule, "success": rec[f"L{i}_{rule}_success"]}
        for rec in results.records for i in range(n_levels) for rule in RULES]
sigmas = sorted({row["sigma"] for row in tidy})

fig, axes = new_figure(len(sigmas), max_cols=2, sharey=True)
for i, (ax, sigma) in enumerate(zip(axes, sigmas)):
    success_plot([row for row in tidy if row["sigma"] == sigma], "r", ax=ax, methods=RULES, logx=True,
                 label="success probability")
    ax.set_title(f"σ = {sigma:g}")
    if i and ax.get_legend() is not None:  # one legend is enough: the rules are the same in every panel
        ax.get_legend().remove()
plt.show()
