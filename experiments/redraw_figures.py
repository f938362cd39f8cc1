"""Redraw every committed paper-scale figure from its committed tables, running nothing.

``python -m experiments.redraw_figures`` reads each results directory kept under
``figures/data/<experiment>/<preset>/`` (its manifest, ``trials.csv`` and tables, committed with the
figure) and calls that experiment's ``--redraw``, which draws the figures from the tables and,
for a complete unchanged paper preset, writes them into ``figures/`` as
``<figure>_<preset>.{png,pdf}`` (and ``.caption.txt``).  Takes seconds per figure.

``--style NAME|FILE`` draws in another style (:data:`mixreg.plotting.STYLES`: ``two-column``, the
default, ``one-column``, ``slides``, or a ``.mplstyle`` file).  The copies in ``figures/`` are the
default style's only: in any other style the figures are written into each results directory
under ``figures/data/`` (beside its tables) and ``figures/`` is left as it is.  Every PNG and PDF
records the style it was drawn in (``mixreg figure, style <name>``, in its Description / Subject).

A paper preset too long for one sitting is committed unfinished: its manifest and its chunk files
(the trials done so far), so that it can be resumed on another machine with the command this
script prints for it (only an unchanged preset resumes so: the command carries no other flag; it
names the BLAS kernels the run computed with, which round differently from others).
Such a directory has no figure; it is listed and skipped, and does not change the exit status.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import shlex
import sys

from mixreg import cli as _cli
from mixreg.montecarlo.reader import read_results
from mixreg.plotting import DEFAULT_STYLE, STYLES
from mixreg.provenance import openblas_coretype, run_blas_kernels

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = REPO / "figures" / "data"


def results_directories(root=DATA):
    """``(experiment, directory)`` of every committed results directory, in name order."""
    root = pathlib.Path(root)
    if not root.is_dir():
        return []
    return [(exp.name, run) for exp in sorted(root.iterdir()) if exp.is_dir()
            for run in sorted(exp.iterdir()) if (run / "manifest.json").is_file()]


def _manifest(run):
    return json.loads((pathlib.Path(run) / "manifest.json").read_text(encoding="utf-8"))


def _status(run):
    """The ``status`` of the manifest of ``run``; None when it cannot be read (``--redraw`` says why)."""
    try:
        return _manifest(run).get("status")
    except (OSError, ValueError, AttributeError):
        return None


def is_finished(run):
    """Whether the results directory ``run`` holds a complete run (and so its figures' tables)."""
    return _status(run) == "complete"


def progress(run):
    """``(trials done, trials in the grid)`` of the unfinished run kept in ``run``: the trials of its
    chunk files, which a resume loads (not a ``trials.csv`` an earlier, complete run left)."""
    manifest = _manifest(run)
    total = manifest["n_cells"] * manifest["n_trials_per_cell"]
    if not (pathlib.Path(run) / "chunks").is_dir():  # no trial kept yet
        return 0, total
    return len(read_results(run, from_chunks=True).records), total


def resume_command(name, run):
    """The command that finishes the unfinished paper-preset run kept in ``run``, writing into it;
    from the repository's root (``run`` is shown relative to it when inside it).  It names the
    BLAS kernels the run computed with (``OPENBLAS_CORETYPE``): other kernels round differently."""
    run = pathlib.Path(run).resolve()
    shown = run.relative_to(REPO) if run.is_relative_to(REPO) else run
    manifest = _manifest(run)
    preset = (manifest.get("sweep") or {}).get("config", {}).get("preset", run.name)  # named after it
    coretype = openblas_coretype(run_blas_kernels((manifest.get("runs") or [None])[-1]))  # the last run's
    prefix = f"OPENBLAS_CORETYPE={shlex.quote(coretype)} " if coretype else ""
    return f"{prefix}python -m experiments.{name} --preset {shlex.quote(str(preset))} --out {shlex.quote(str(shown))}"


def _experiment(name):
    """The study ``experiments.<name>`` (a module with a ``STUDY``, whose ``STUDY.main(["--redraw",
    DIR])`` draws a results directory), or None if there is none."""
    if not name.isidentifier():
        return None
    try:
        module = importlib.import_module(f"experiments.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"experiments.{name}":  # the experiment exists but a module it imports does not
            raise
        return None
    return module if callable(getattr(getattr(module, "STUDY", None), "main", None)) else None


def _shown_path(path):
    """``path`` as ``--help`` shows it: relative to the current directory if it is below it."""
    try:
        return path.relative_to(pathlib.Path.cwd())
    except ValueError:
        return path


def main(argv=None):
    parser = _cli.OneLineParser(prog="python -m experiments.redraw_figures",
                                 description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=pathlib.Path, default=DATA, metavar="DIR",
                        help="where the results directories are kept, as <experiment>/<preset>/ "
                             f"(default: {_shown_path(DATA)})")
    parser.add_argument("--style", type=_cli._style_argument, default=DEFAULT_STYLE, metavar="NAME|FILE",
                        help=f"the figures' style: {', '.join(STYLES)} or a .mplstyle file (default: {DEFAULT_STYLE}); "
                             "in another style than the default, the figures are written into each results "
                             "directory only, never over the copies in figures/")
    args = parser.parse_args(argv)
    runs = results_directories(args.data)
    if not runs:
        print(f"{parser.prog}: no results directory under {args.data}", file=sys.stderr)
        return 1
    status = 0
    for name, run in runs:
        if _status(run) not in ("complete", None):  # unreadable: --redraw reports it in one line
            try:
                done, total = progress(run)
                kept = f"{done} of {total} trials"
            except (ValueError, KeyError, TypeError) as exc:  # a damaged chunk (a resume recomputes it)
                kept = f"trials kept unknown: {str(exc).splitlines()[0]}"
            print(f"{run}: unfinished ({kept}), no figure; resume it with {resume_command(name, run)}")
            continue
        module = _experiment(name)
        if module is None:  # a directory named after no experiment: say so, redraw the others
            print(f"{parser.prog}: error: {run}: no experiment named {name!r} (experiments.{name} does not exist); "
                  "skipped", file=sys.stderr)
            status = max(status, 1)
            continue
        status = max(status, module.STUDY.main(["--redraw", str(run), "--style", args.style]))
    return status


if __name__ == "__main__":
    try:
        status = main()
    except KeyboardInterrupt:  # an experiment's main, called in-process, raises Ctrl-C (see mixreg.cli)
        print("python -m experiments.redraw_figures: interrupted", file=sys.stderr)
        status = 130
    sys.exit(status)
