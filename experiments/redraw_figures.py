"""Redraw every committed paper-scale figure from its committed tables, running nothing.

``python -m experiments.redraw_figures`` reads each results directory kept under
``figures/data/<experiment>/<preset>/`` (its manifest, ``trials.csv`` and tables, committed with the
figure) and calls that experiment's ``--redraw``, which draws the figures from the tables and,
for a complete unchanged paper preset, writes them into ``figures/`` as
``<figure>_<preset>.{png,pdf}``.  Takes seconds per figure.
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = REPO / "figures" / "data"


def results_directories(root=DATA):
    """``(experiment, directory)`` of every committed results directory, in name order."""
    root = pathlib.Path(root)
    if not root.is_dir():
        return []
    return [(exp.name, run) for exp in sorted(root.iterdir()) if exp.is_dir()
            for run in sorted(exp.iterdir()) if (run / "manifest.json").is_file()]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m experiments.redraw_figures", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=pathlib.Path, default=DATA, help="where the results directories are kept")
    args = parser.parse_args(argv)
    runs = results_directories(args.data)
    if not runs:
        print(f"{parser.prog}: no results directory under {args.data}", file=sys.stderr)
        return 1
    status = 0
    for name, run in runs:
        module = importlib.import_module(f"experiments.{name}")
        status = max(status, module.main(["--redraw", str(run)]))
    return status


if __name__ == "__main__":
    sys.exit(main())
