"""Command-line flags shared by every experiment script that runs a Monte Carlo sweep.

An experiment script builds its own parser, adds its own flags, then::

    parser = argparse.ArgumentParser(description=...)
    add_engine_arguments(parser)
    args = parser.parse_args(argv)
    sweep = build_sweep(config_from(args), root_seed=args.seed or DEFAULT_SEED)
    result = run_engine_from_args(sweep, args, default_out=pathlib.Path("results") / NAME)
    if result is None:  # --dry-run
        return

Flags
-----
``--jobs N``            local worker processes (default: the experiment's, usually all cores)
``--scheduler ADDR``    run on an existing Dask cluster, e.g. ``tcp://10.0.0.5:8786``
``--dask-local N``      start a Dask LocalCluster of N single-threaded workers on 127.0.0.1
``--out DIR``           results directory (default: the script's own)
``--overwrite``         discard results already in DIR
``--new-dir``           write into a fresh sibling of DIR (``DIR-2``, ...) if DIR is in use
``--dry-run``           print the grid, the number of tasks and the work estimate; run nothing
``--seed S``            root seed (replaces the sweep's)
``--no-progress``       no progress bar
``--kernel-threads N``  BLAS/numba threads per task (1 = bit-identical across all backends)
"""

from __future__ import annotations

import argparse
import os
import sys
import dataclasses
import pathlib
import re

from mixreg.montecarlo import dry_run, run_sweep

__all__ = ["add_engine_arguments", "run_engine_from_args", "default_jobs", "experiment_main"]

_SCHEDULER_RE = re.compile(r"^(tcp|tls|ucx|ws|wss|inproc)://\S+$")


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _seed(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def _scheduler(text):
    if not _SCHEDULER_RE.match(text):
        raise argparse.ArgumentTypeError(
            f"expected a Dask scheduler address such as tcp://10.0.0.5:8786, got {text!r}")
    return text


def default_jobs():
    """Local worker processes when ``--jobs`` is not given: the cores of the machine, at most 8.

    Trials are independent, so one single-threaded process per core is the most efficient way
    to use a small machine; results do not depend on this number (see the README).
    """
    return max(1, min(8, os.cpu_count() or 1))


def add_engine_arguments(parser):
    """Add the Monte Carlo engine's flags to ``parser`` (an ``argparse.ArgumentParser``).

    Conflicting flags (``--scheduler`` with ``--dask-local``, ``--overwrite`` with
    ``--new-dir``) and malformed values are rejected by argparse itself, with a usage
    message.  Returns ``parser``.
    """
    group = parser.add_argument_group("Monte Carlo engine")
    group.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                       help="local worker processes; 1 runs in this process "
                            "(default: the number of cores, at most 8)")
    where = group.add_mutually_exclusive_group()
    where.add_argument("--scheduler", type=_scheduler, default=None, metavar="ADDRESS",
                       help="address of a running Dask scheduler, e.g. tcp://10.0.0.5:8786")
    where.add_argument("--dask-local", type=_positive_int, default=None, metavar="N",
                       help="start a Dask LocalCluster of N single-threaded workers on 127.0.0.1")
    group.add_argument("--out", type=pathlib.Path, default=None, metavar="DIR",
                       help="results directory; re-running resumes it")
    fresh = group.add_mutually_exclusive_group()
    fresh.add_argument("--overwrite", action="store_true",
                       help="discard the results already in the directory")
    fresh.add_argument("--new-dir", action="store_true",
                       help="write into a fresh sibling directory (DIR-2, DIR-3, ...) if DIR is in use")
    group.add_argument("--dry-run", action="store_true",
                       help="print the grid, the number of tasks and a work estimate, then exit")
    group.add_argument("--seed", type=_seed, default=None, metavar="S",
                       help="root seed of the sweep (default: the experiment's)")
    group.add_argument("--no-progress", action="store_true", help="do not show a progress bar")
    group.add_argument("--kernel-threads", type=_positive_int, default=None, metavar="N",
                       help="BLAS/numba threads per task (default: 1 per parallel worker, "
                            "all cores with --jobs 1); 1 gives bit-identical results everywhere")
    return parser


def run_engine_from_args(sweep, args, default_out):
    """Run ``sweep`` as the parsed engine flags say; return its ``SweepResult``.

    Parameters
    ----------
    sweep : mixreg.montecarlo.Sweep
    args : argparse.Namespace
        Parsed with a parser prepared by :func:`add_engine_arguments`.  ``--seed``, when
        given, replaces ``sweep.root_seed``.
    default_out : str or path-like
        Results directory when ``--out`` is not given.

    Returns
    -------
    result : mixreg.montecarlo.SweepResult or None
        ``None`` for ``--dry-run``, after printing the description.

    Raises
    ------
    ValueError
        With a message naming the flags, for combinations argparse cannot see (``--jobs``
        with a Dask cluster), or :class:`mixreg.montecarlo.ConfigMismatchError` (a
        ``ValueError``) when the directory holds a different sweep.
    """
    jobs = getattr(args, "jobs", None)
    scheduler = getattr(args, "scheduler", None)
    dask_local = getattr(args, "dask_local", None)
    if scheduler is not None and dask_local is not None:
        raise ValueError("--scheduler and --dask-local are mutually exclusive")
    if (scheduler is not None or dask_local is not None) and jobs is not None:
        raise ValueError("--jobs applies to local processes; with --scheduler or --dask-local "
                         "the Dask workers set the parallelism (drop --jobs)")
    if getattr(args, "overwrite", False) and getattr(args, "new_dir", False):
        raise ValueError("--overwrite and --new-dir are mutually exclusive")
    if jobs is None:
        jobs = default_jobs() if scheduler is None and dask_local is None else 1
    seed = getattr(args, "seed", None)
    if seed is not None:
        sweep = dataclasses.replace(sweep, root_seed=seed)
    if getattr(args, "dry_run", False):
        print(dry_run(sweep, jobs=dask_local or jobs))
        return None
    out = getattr(args, "out", None)
    return run_sweep(
        sweep,
        default_out if out is None else out,
        jobs=jobs,
        scheduler=scheduler,
        dask_local=dask_local,
        overwrite=getattr(args, "overwrite", False),
        new_dir=getattr(args, "new_dir", False),
        progress=False if getattr(args, "no_progress", False) else None,
        kernel_threads=getattr(args, "kernel_threads", None),
    )


def experiment_main(parser, argv, config_from_args, build_sweep, draw, *, name, tables=()):
    """The body of an experiment script's ``main``: parse, configure, run, draw, report.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        Prepared with :func:`add_engine_arguments`.
    argv : list of str or None
    config_from_args : callable
        ``args -> config`` (a dataclass with a ``preset`` field); raises ``ValueError`` naming
        the bad option.
    build_sweep : callable
        ``config -> Sweep`` (``--seed`` replaces its root seed).
    draw : callable
        ``(config, records, outdir) -> list of figure paths``.
    name : str
        The experiment's name: results go to ``results/<name>/<preset>`` unless ``--out``.
    tables : sequence of str
        Files the experiment writes into the results directory besides the engine's.

    Returns
    -------
    int
        0, or 1 if any trial raised (the failures are in the manifest).  Bad options and
        configuration errors exit through ``parser.error`` with status 2.
    """
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
        result = run_engine_from_args(build_sweep(config), args,
                                      default_out=pathlib.Path("results") / name / config.preset)
    except ValueError as exc:
        parser.error(str(exc))
    if result is None:  # --dry-run
        return 0
    paths = draw(config, result.records, result.outdir)
    outdir = result.outdir
    for path in [result.trials_csv, *(outdir / t for t in tables), outdir / "manifest.json", *paths]:
        print(f"wrote {path}")
    if result.failures:
        print(f"{len(result.failures)} trial(s) raised; see {outdir / 'manifest.json'}", file=sys.stderr)
        return 1
    return 0
