"""
A study's own figures, redrawn from its committed tables
========================================================

Every study redraws its figures from a results directory's tables alone
(``python -m experiments.success_vs_mn --redraw DIR``): nothing is run. Here the ``paper-c``
directory is copied to a temporary directory and the study object redraws it there, in-process,
through the same path as ``--redraw``. The copy keeps the committed ``figures/`` untouched: a
redraw of an unchanged paper preset also refreshes the committed copies, which the study's
``figures_dir`` names, so the study is used with ``figures_dir=None``.

``experiments/`` is the checkout's package of studies (not installed with mixreg): run this
example from the repository root.
"""

import dataclasses
import pathlib
import shutil
import sys
import tempfile

import matplotlib.pyplot as plt

import mixreg

ROOT = pathlib.Path(mixreg.__file__).resolve().parents[1]  # the checkout: mixreg/, figures/, docs/
sys.path.insert(0, str(ROOT))  # experiments/ is importable from the checkout only
from experiments import success_vs_mn  # noqa: E402

from mixreg.plotting import new_figure, use_style  # noqa: E402
use_style()  # the default style, two-column (6.9 in wide, 9 pt), as the studies' figures

study = dataclasses.replace(success_vs_mn.STUDY, figures_dir=None)
with tempfile.TemporaryDirectory() as tmp:
    outdir = shutil.copytree(ROOT / "figures" / "data" / "success_vs_mn" / "paper-c", pathlib.Path(tmp) / "paper-c")
    status = study.main(["--redraw", str(outdir)])
    pngs = sorted(outdir.glob("*.png"))
    images = [plt.imread(png) for png in pngs]
print("exit status", status, "-", ", ".join(png.name for png in pngs))

# %%
# The figures as the study wrote them (PNG files, shown here as images):

for png, image in zip(pngs, images):
    height, width = image.shape[:2]
    fig, (ax,) = new_figure(1, aspect=height / width)
    ax.imshow(image)
    ax.set_axis_off()
    ax.set_title(png.name, fontsize="small")
plt.show()
