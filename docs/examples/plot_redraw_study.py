"""
IFCA Fig. 3(a) and 3(b): the study redraws its committed figures from their tables
==================================================================================

Every study redraws the figures of a results directory from its tables alone
(``python -m experiments.success_vs_R --redraw DIR``): nothing is run. Here the ``success_vs_R``
study object does so in-process, through the same path as ``--redraw``, for its two committed
paper presets, ``paper-a`` (k = 2, m = 100) and ``paper-b`` (k = 4, m = 400), kept in
``figures/data/success_vs_R/``: the four committed figures ``figures/success_vs_R_paper-a.png``,
``figures/success_vs_R_collapse_paper-a.png`` and those of ``paper-b``, each with its caption file.

A redraw writes into the results directory it draws, and the figures of an unchanged paper preset
also over the committed copies in ``figures/`` (the study's ``figures_dir``). So each directory is
copied to a temporary directory first, and the study is used with ``figures_dir=None``: the
checkout is left as it is.

``experiments/`` is the checkout's package of studies (not installed with mixreg): this example
needs a checkout.
"""

import contextlib
import dataclasses
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
from experiments import success_vs_R  # noqa: E402

from mixreg.plotting import new_figure, use_style  # noqa: E402

use_style()  # the default style, two-column (6.9 in wide, 9 pt), as the committed figures

study = dataclasses.replace(success_vs_R.STUDY, figures_dir=None)  # never over the copies in figures/
redrawn = {}  # the committed figure's name -> (image, caption)
with tempfile.TemporaryDirectory() as tmp:
    for preset in ("paper-a", "paper-b"):
        outdir = shutil.copytree(ROOT / "figures" / "data" / "success_vs_R" / preset, pathlib.Path(tmp) / preset)
        with contextlib.redirect_stdout(io.StringIO()):  # its "wrote <path>" lines name the temporary directory
            status = study.main(["--redraw", str(outdir)])
        print(f"{preset}: exit status {status}")
        for png in sorted(outdir.glob("*.png")):
            caption = png.with_suffix(".caption.txt").read_text(encoding="utf-8")
            redrawn[f"{png.stem}_{preset}"] = plt.imread(png), caption

# %%
# Each figure as the study wrote it (its PNG file, shown here as an image), with the beginning of
# its caption file; the redrawn PNG is the committed one, pixel for pixel. The first
# figure of a preset: the success probability against the realised separation, one curve per
# noise level σ, one panel per success rule; the second (``_collapse``): the same success on two
# scales fixed before the runs, and the 1/2-crossings against σ with held-out predictions.

for name, (image, caption) in redrawn.items():
    height, width = image.shape[:2]
    fig, (ax,) = new_figure(1, aspect=height / width)
    ax.imshow(image)
    ax.set_axis_off()
    same = np.array_equal(image, plt.imread(ROOT / "figures" / f"{name}.png"))
    print(f"figures/{name}.png ({'the same pixels' if same else 'pixels differ'}): "
          + textwrap.shorten(caption, width=150, placeholder=" ..."))
plt.show()
