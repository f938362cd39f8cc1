"""
Every other paper-scale study, redrawn from its committed tables
=================================================================

Beside IFCA's Fig. 3 (``success_vs_R`` and ``success_vs_mn``, drawn by two other examples), ten
studies have a committed paper-scale run in ``figures/data/<study>/paper``: the IFCA theory studies (``error_floor``, ``ifca_basin``,
``ifca_misclustering``, ``ifca_contraction``, ``ifca_corollary1``, ``ifca_strongly_convex``), the
Su-Xu-Yang studies (``two_phase``, ``two_phase_phase1``, ``two_phase_nu``) and ``compare``. The
claims report (``figures/claims_report.md``) checks the papers' claims on exactly these runs.

Each study redraws its run in-process through the same path as ``--redraw DIR``, from the run's
tables and manifest alone: nothing is run and nothing is recomputed from trials. As in the
example that redraws ``success_vs_R``, each directory is copied to a temporary directory first and the study is used
with ``figures_dir=None``, so the checkout is left as it is. Each figure is shown with the start of
its caption file, and compared pixel for pixel with the committed copy ``figures/<name>.png``.

``experiments/`` is the checkout's package of studies (not installed with mixreg): this example
needs a checkout.
"""

import contextlib
import dataclasses
import importlib
import io
import pathlib
import shutil
import sys
import tempfile
import textwrap

import matplotlib.pyplot as plt
import numpy as np

try:
    HERE = pathlib.Path(__file__).resolve().parent  # run as a script: python docs/examples/<name>.py
except NameError:  # in the docs build: sphinx-gallery runs the example in its folder, without __file__
    HERE = pathlib.Path.cwd()
ROOT = HERE.parents[1]  # the checkout: figures/, docs/, experiments/
sys.path.insert(0, str(ROOT))  # experiments/ is importable from the checkout only

from mixreg.plotting import new_figure, use_style  # noqa: E402

use_style()  # the default style, two-column (6.9 in wide, 9 pt), as the committed figures


def redraw(name, preset="paper"):
    """Redraw the committed run ``figures/data/<name>/<preset>`` with its study, in a temporary copy;
    return ``{committed figure name: (image, caption)}``."""
    study = dataclasses.replace(importlib.import_module(f"experiments.{name}").STUDY, figures_dir=None)
    drawn = {}
    with tempfile.TemporaryDirectory() as tmp:
        outdir = shutil.copytree(ROOT / "figures" / "data" / name / preset, pathlib.Path(tmp) / preset)
        with contextlib.redirect_stdout(io.StringIO()):  # its "wrote <path>" lines name the temporary directory
            status = study.main(["--redraw", str(outdir)])
        print(f"{name} {preset}: exit status {status}")
        for png in sorted(outdir.glob("*.png")):
            caption = png.with_suffix(".caption.txt").read_text(encoding="utf-8")
            drawn[f"{png.stem}_{preset}"] = plt.imread(png), caption
    return drawn


def show(drawn):
    """One figure per redrawn PNG, and a line naming its committed copy and whether the pixels agree."""
    for name, (image, caption) in drawn.items():
        height, width = image.shape[:2]
        fig, (ax,) = new_figure(1, aspect=height / width)
        ax.imshow(image)
        ax.set_axis_off()
        same = np.array_equal(image, plt.imread(ROOT / "figures" / f"{name}.png"))
        print(f"figures/{name}.png ({'the same pixels' if same else 'pixels differ'}): "
              + textwrap.shorten(caption, width=150, placeholder=" ..."))
    plt.show()


# %%
# IFCA's linear-model theory: the error floor's exponents in m, n', d and σ against Corollary 1
# (``error_floor``), the basin of attraction of Assumption 1 (``ifca_basin``), the exact
# misclustering law behind Theorem 1 (``ifca_misclustering``) and the one-round contraction
# (``ifca_contraction``).

for study in ("error_floor", "ifca_basin", "ifca_misclustering", "ifca_contraction"):
    show(redraw(study))

# %%
# Corollary 1 in full (rounds to ε against log(Δ / 4ε), success against m, the exponential term
# with clients left misclustered, Lemma 2), and Theorem 2 on squared loss with a non-identity
# covariance, the strongly convex case (``ifca_strongly_convex``).

for study in ("ifca_corollary1", "ifca_strongly_convex"):
    show(redraw(study))

# %%
# Su, Xu and Yang's two-phase method: Phase 2's contraction and rounds, the Phase-2 factor against
# p_min with the data-reuse ablation (``two_phase``); Phase 1's error, the clients it needs and its
# rates against d, k and p_min (``two_phase_phase1``); the error floor against ν and the region of
# the unknown constants (C3, C4) (``two_phase_nu``).

for study in ("two_phase", "two_phase_phase1", "two_phase_nu"):
    show(redraw(study))

# %%
# ``compare``: IFCA, the two-phase method and the seed baselines on eight regimes, one figure per
# regime, every method's step chosen by training loss.

show(redraw("compare"))
