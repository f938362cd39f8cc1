"""The command line of every study: its Config's flags, the engine's flags and ``--redraw``.

A study (:class:`mixreg.study.Study`) declares each of its parameters once, as a field of its
``Config`` (a :class:`mixreg.study.Spec`) made with :func:`mixreg.study.param`: a real type
annotation, a help text, the allowed range, choices or relation, and the flags of earlier
versions.  ``Study.main(argv)`` builds the command line from it with :func:`parser_from_config`,
turns the arguments into a validated config with :func:`config_from_args` and runs
:func:`experiment_main`; a study's ``__main__.py`` is ``sys.exit(STUDY.main(command_line=True))``.
``--help`` shows every flag's default: its value where every preset has the same, else every
preset's, equal values together (``default quick, paper-a: 2; paper-b: 4``).

Flags
-----
Of the experiment, from its ``Config`` (:func:`parser_from_config`):

``--preset NAME``       the preset; every other experiment flag defaults to the preset's value
``--<field>``           one flag per other field, named as the field with ``_`` as ``-``
                        (``n_inits`` -> ``--n-inits``, ``M_ref`` -> ``--M-ref``); a ``tuple``
                        field takes one or more values (``--sigmas 0 0.5 1``); a ``bool`` field
                        is ``--<field>`` / ``--no-<field>``.  A flag that an earlier version used
                        (``renamed_from``) is refused with a message naming its new spelling.
``--redraw DIR``        redraw every figure of results directory DIR from its ``manifest.json``
                        and tables, running nothing; takes no other flag but ``--style`` and
``--accept-edited F``   with ``--redraw``: draw from the files F (``rates.csv``, ...) although
                        they differ from what the run wrote (its manifest records the sha256 of
                        every table; an edited one is otherwise refused, naming it)
``--style NAME|FILE``   the figures' style, on a run and with ``--redraw``: a name of
                        :data:`mixreg.plotting.STYLES` (``two-column``, the default, 6.9 in;
                        ``one-column``, 3.3 in; ``slides``) or a ``.mplstyle`` file.  Only the
                        default style's figures of a paper preset are copied into ``figures/``;
                        another style's stay in the results directory.  Each PNG and PDF records
                        its style (``mixreg figure, style <name>`` in its Description / Subject).

Of the Monte Carlo engine (:func:`add_engine_arguments`):

``--jobs N``            local worker processes (default: the experiment's, usually all cores;
                        more than the cores is capped at the cores, with a warning)
``--scheduler ADDR``    run on an existing Dask cluster, e.g. ``tcp://10.0.0.5:8786``
``--connect-timeout S`` seconds to wait for the scheduler to answer (default 30)
``--dask-local N``      start a Dask LocalCluster of N single-threaded workers on 127.0.0.1
``--out DIR``           results directory (default: ``results/<experiment>/<preset>``)
``--overwrite``         discard results already in DIR
``--new-dir``           write into a fresh sibling of DIR (``DIR-2``, ...) if DIR is in use
``--dry-run``           print the grid, the number of tasks and the estimated work, memory and
                        time (with the warning or the refusal a run would get); run nothing
``--seed S``            root seed (replaces the sweep's)
``--no-progress``       show nothing while running: no progress bar (or line a minute without a
                        terminal), no "compiling kernels" notice
``--chunk-size N``      trials per task, the checkpoint grain (default: automatic, at most 50)
``--kernel-threads N``  BLAS/numba threads per worker; default 1 in every backend, which makes
                        the records bit-identical whatever the backend and the number of
                        workers.  N > 1 is an opt-out that breaks bit-identity.
``--debug``             show a fault's full traceback instead of its one line

Every fault ends in one line on stderr (``prog: error: ...``), with the exit status 2 for a
usage error (bad value, combination of flags, a directory holding another sweep, a sweep
too large to fit, a ``--redraw`` directory whose tables or config were edited) and 1 for a
runtime fault (a directory that cannot be written or is held by another run, a scheduler that
does not answer).  A finished run whose trials partly failed writes and draws what exists,
lists the failures (one line each) and exits 1.

Stopping a run
--------------
On the command line (``python -m experiments.<study>``, where the script's ``main`` is the
command), Ctrl-C exits 130 with one line ``interrupted: N of M trials kept; rerun the same
command to resume``, and SIGTERM (``kill``, a batch scheduler's stop), whether it reaches the
run's process alone or its whole process group, exits 143 with ``terminated: N of M trials
kept; ...``.  Either way the worker processes are stopped, the manifest says ``interrupted``
and the same command resumes.  Called in-process (``main(argv)`` from a test or a script,
:func:`experiment_main` without ``command_line``), ``main`` raises instead, after the engine
has written the manifest: Ctrl-C's ``KeyboardInterrupt`` (a
:class:`mixreg.montecarlo.SweepInterrupted` once the run has started), so that it stops the
caller (pytest) too, and SIGTERM, when the run turns it into an exception, a
:class:`mixreg.montecarlo.SweepTerminated` (a ``KeyboardInterrupt`` as well; see
:func:`mixreg.montecarlo.raise_on_sigterm`).

Flags are matched exactly (no abbreviations), so a flag is either a field's or an error.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import pathlib
import re
import shutil
import sys
import typing
import warnings

from mixreg.montecarlo import (
    SCHEDULER_ADDRESS,
    ConfigMismatchError,
    EditedFileError,
    SweepInterrupted,
    SweepTooLargeError,
    SweepWarning,
    Terminated,
    TrialsFailedWarning,
    check_fits,
    dry_run,
    raise_on_sigterm,
    run_sweep,
    write_table,
)
from mixreg.montecarlo.reader import read_results
from mixreg.plotting import DEFAULT_STYLE, STYLES, FigureNotDrawn, use_style

__all__ = [
    "config_flag",
    "config_flags",
    "parser_from_config",
    "config_from_args",
    "config_from_record",
    "add_engine_arguments",
    "run_engine_from_args",
    "default_jobs",
    "experiment_main",
    "OneLineParser",
    "first_line",
    "describe_fault",
    "say",
]

_SCALAR_TYPES = (bool, int, float, str)
_METAVARS = {int: "N", float: "X", str: "S"}
_MANIFEST = "manifest.json"
_EXIT_INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C
_EXIT_TERMINATED = 143  # 128 + SIGTERM


# --------------------------------------------------------------------------- a Config's flags


def config_flag(field_name):
    """The flag of a Config field: ``n_inits`` -> ``--n-inits``, ``M_ref`` -> ``--M-ref``."""
    return "--" + field_name.replace("_", "-")


def config_flags(*field_names):
    """The flags of several Config fields, as a tuple (see :func:`config_flag`)."""
    return tuple(config_flag(name) for name in field_names)


def _option_fields(config_cls):
    """The fields that are flags (all but ``preset``), with their resolved annotations."""
    hints = typing.get_type_hints(config_cls)
    return [(f, hints[f.name]) for f in dataclasses.fields(config_cls)
            if f.name != "preset" and f.metadata.get("flag", True)]


def _element_type(config_cls, name, hint):
    """``(type of one value, is a tuple)`` of a field annotated ``T`` or ``tuple[T, ...]``."""
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis and args[0] in _SCALAR_TYPES and args[0] is not bool:
            return args[0], True
    elif hint in _SCALAR_TYPES:
        return hint, False
    raise TypeError(f"{config_cls.__name__}.{name}: a flag needs the annotation int, float, str, bool "
                    f"or tuple[int | float | str, ...], got {hint!r}")


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line (no usage block): ``prog: error: ...``."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {first_line(message)} (see --help)\n")


def first_line(text):
    """The first non-blank line of ``text`` (an exception's message, say), stripped; ``""`` if none."""
    lines = str(text).strip().splitlines()
    return lines[0].strip() if lines else ""


class _RenamedFlag(argparse.Action):
    """A flag of an earlier version: refuse it, naming the flag that replaced it."""

    def __init__(self, option_strings, dest, new_flag, **kwargs):
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs="*", default=argparse.SUPPRESS,
                         help=argparse.SUPPRESS)
        self.new_flag = new_flag

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} is now {self.new_flag}")


def parser_from_config(config_cls, presets, *, prog, description, default_preset=None, name=None, root_seed=None):
    """The command line of an experiment: one flag per ``Config`` field, ``--redraw``, the engine's.

    Parameters
    ----------
    config_cls : dataclass type
        A ``preset: str`` field, then one field per parameter made with :func:`mixreg.study.param` (its
        ``help``, optional ``choices`` and ``renamed_from``), annotated ``int``, ``float``,
        ``str``, ``bool`` or ``tuple[T, ...]`` (real types, or strings that
        :func:`typing.get_type_hints` resolves).
    presets : dict of str to dict
        Preset name -> field values; what a flag not given takes.
    prog, description : str
        For ``--help``.
    default_preset : str, optional
        Default ``"quick"`` when it is a preset, else the first preset.
    name, root_seed : optional
        The experiment's name and root seed, shown in ``--help`` as the defaults of ``--out``
        (``results/<name>/PRESET``) and ``--seed``.

    Returns
    -------
    argparse.ArgumentParser
        Every experiment flag's ``dest`` is its field name and its default ``None`` (= the
        preset's); see :func:`config_from_args`.

    Raises
    ------
    TypeError
        When a field has no help text or an annotation that cannot be a flag.
    """
    if default_preset is None:
        default_preset = "quick" if "quick" in presets else next(iter(presets))
    parser = OneLineParser(prog=prog, description=description, allow_abbrev=False)
    preset_field = {f.name: f for f in dataclasses.fields(config_cls)}["preset"]
    parser.add_argument("--preset", default=default_preset, choices=list(presets),
                        help=preset_field.metadata.get("help", "the preset"))
    group = parser.add_argument_group("experiment", "the parameters of the sweep")
    for field, hint in _option_fields(config_cls):
        meta = field.metadata
        if not meta.get("help"):
            raise TypeError(f"{config_cls.__name__}.{field.name} has no help text; declare it with "
                            "param(help, ...) or metadata={'help': ...}")
        kind, is_tuple = _element_type(config_cls, field.name, hint)
        flag = config_flag(field.name)
        defaults = _preset_defaults(field, presets, default_preset)
        text = f"{meta['help']} ({defaults})"
        if kind is bool:
            group.add_argument(flag, dest=field.name, action=argparse.BooleanOptionalAction, default=None,
                               help=text)
        else:
            choices, metavar = meta.get("choices"), _METAVARS[kind]
            if choices and not is_tuple:
                metavar = None  # argparse shows {a,b,c}
            elif choices:
                text = f"{meta['help']}, among {', '.join(map(str, choices))} ({defaults})"
            nargs = ("*" if meta.get("check", {}).get("allow_empty") else "+") if is_tuple else None
            group.add_argument(flag, dest=field.name, type=kind, nargs=nargs, default=None,
                               choices=choices, metavar=metavar, help=text)
        for old in meta.get("renamed_from", ()):
            group.add_argument(old, action=_RenamedFlag, new_flag=flag)
    figures = parser.add_argument_group("figures")
    figures.add_argument(
        "--redraw", type=pathlib.Path, default=None, metavar="DIR",
        help="redraw every figure of the results directory DIR from its manifest and tables, running "
             "nothing (the paper presets' copies in figures/ too)")
    figures.add_argument(
        "--style", type=_style_argument, default=DEFAULT_STYLE, metavar="NAME|FILE",
        help=f"the figures' style: {', '.join(STYLES)} or a .mplstyle file (default: {DEFAULT_STYLE}); "
             "a paper preset's figures are copied into figures/ only in the default style")
    figures.add_argument(
        "--accept-edited", nargs="+", default=None, metavar="FILE",
        help="with --redraw: draw from these files of DIR (rates.csv, ...; manifest.json for its config) "
             "although they differ from what the run wrote; without it an edited file is refused")
    add_engine_arguments(parser, root_seed=root_seed,
                         default_out=None if name is None else _default_out(name, "PRESET"))
    return parser


def _default_out(name, preset):
    """Where an experiment's run writes without ``--out``."""
    return pathlib.Path("results") / name / preset


def _style_argument(value):
    """``--style``: a name of :data:`mixreg.plotting.STYLES` or a ``.mplstyle`` file that matplotlib
    reads in full (loaded here, so that a bad file is one line and exit 2 before anything runs)."""
    if value in STYLES:
        return value
    if not os.path.isfile(value):
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(STYLES)} or a .mplstyle file; got {value!r}")
    try:
        with use_style(value):
            pass
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def _shown(value):
    """A value as the user would type it: ``1 0.1 0.01`` for a tuple, ``on``/``off`` for a bool."""
    if isinstance(value, tuple):
        return " ".join(_shown(v) for v in value)
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _preset_defaults(field, presets, default_preset):
    """``--help``'s default of a flag: its value, the same in every preset (``default: 10``), or
    every preset's, those of equal values together and the default preset's first
    (``default quick, paper-a: 2; paper-b: 4``).  ``%`` is escaped for argparse."""
    def value_in(preset):
        if field.name in presets[preset]:
            return _shown(presets[preset][field.name])
        return None if field.default is dataclasses.MISSING else _shown(field.default)

    names_of = {value_in(default_preset): [default_preset]}  # value -> presets, default's first
    for preset in presets:
        if preset != default_preset:
            names_of.setdefault(value_in(preset), []).append(preset)
    if len(names_of) == 1:
        text = f"default: {next(iter(names_of))}"
    else:
        text = "default " + "; ".join(f"{', '.join(names)}: {value}" for value, names in names_of.items())
    return text.replace("%", "%%")


def config_from_args(config_cls, presets, args):
    """The validated ``Config``: the chosen preset's values, replaced by the flags given.

    Raises ``ValueError`` (from ``Config.validate``) naming the bad field and its allowed range;
    the message is prefixed with the flags of the fields its subject names (``--n-inits: n_inits
    must be an integer >= 1, got 0``), so the user reads the names they typed.
    """
    values = dict(presets[args.preset])
    fields = [field.name for field, _ in _option_fields(config_cls)]
    for name in fields:
        given = getattr(args, name, None)
        if given is not None:
            values[name] = tuple(given) if isinstance(given, list) else given
    try:
        return config_cls(preset=args.preset, **values).validate()
    except ValueError as exc:
        flags = _flags_named(str(exc), fields)
        if not flags:
            raise
        raise ValueError(f"{', '.join(flags)}: {exc}") from exc


def _flags_named(message, fields):
    """The flags of the fields a ``validate`` message is about: those named in its subject (the
    text before " must ", or its first word), in the order they appear there."""
    subject = message.split(" must ", 1)[0] if " must " in message else message.split(" ", 1)[0]
    found = {}
    for name in fields:
        hit = re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w.-])", subject)
        if hit:
            found[hit.start()] = config_flag(name)
    return [found[position] for position in sorted(found)]


def config_from_record(config_cls, record):
    """A ``Config`` from its ``dataclasses.asdict`` after a JSON round trip (lists -> tuples).
    A field the record lacks takes its default if it has one (an option added later, whose
    default is what the record's run did); a lacking field without a default is an error."""
    if not isinstance(record, dict):
        raise ValueError("missing")
    fields = dataclasses.fields(config_cls)
    missing = [f.name for f in fields if f.name not in record and f.default is dataclasses.MISSING]
    if missing:
        raise ValueError(f"{', '.join(missing)} missing (written by another version?)")
    values = {f.name: tuple(record[f.name]) if isinstance(record[f.name], list) else record[f.name]
              for f in fields if f.name in record}
    return config_cls(**values).validate()


# --------------------------------------------------------------------------- the engine's flags


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _positive_seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds > 0, got {text}")
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
    if not SCHEDULER_ADDRESS.match(text):
        raise argparse.ArgumentTypeError(
            f"expected a Dask scheduler address such as tcp://10.0.0.5:8786, got {text!r}")
    return text


def default_jobs():
    """Local worker processes when ``--jobs`` is not given: the cores of the machine, at most 8.

    Trials are independent, so one single-threaded process per core is the most efficient way
    to use a small machine; results do not depend on this number (see docs/engine.md).
    """
    return max(1, min(8, os.cpu_count() or 1))


def add_engine_arguments(parser, *, root_seed=None, default_out=None):
    """Add the Monte Carlo engine's flags to ``parser`` (an ``argparse.ArgumentParser``).

    ``root_seed`` and ``default_out``, when given, are shown in ``--help`` as the defaults of
    ``--seed`` and ``--out``; ``--jobs`` shows its default on this machine.  Conflicting flags (``--scheduler`` with ``--dask-local``, ``--overwrite`` with
    ``--new-dir``) and malformed values are rejected by argparse itself, with a usage
    message.  Returns ``parser``.
    """
    group = parser.add_argument_group("Monte Carlo engine")
    group.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                       help=f"local worker processes; 1 runs in this process (default: {default_jobs()} here, "
                            "the number of cores, at most 8; more than the cores is capped at the cores, "
                            "with a warning)")
    where = group.add_mutually_exclusive_group()
    where.add_argument("--scheduler", type=_scheduler, default=None, metavar="ADDRESS",
                       help="address of a running Dask scheduler, e.g. tcp://10.0.0.5:8786")
    where.add_argument("--dask-local", type=_positive_int, default=None, metavar="N",
                       help="start a Dask LocalCluster of N single-threaded workers on 127.0.0.1 "
                            "(capped at the cores, with a warning)")
    group.add_argument("--out", type=pathlib.Path, default=None, metavar="DIR",
                       help="results directory; re-running resumes it"
                            + ("" if default_out is None else f" (default: {default_out})"))
    fresh = group.add_mutually_exclusive_group()
    fresh.add_argument("--overwrite", action="store_true",
                       help="discard the results already in the directory")
    fresh.add_argument("--new-dir", action="store_true",
                       help="write into a fresh sibling directory (DIR-2, DIR-3, ...) if DIR is in use")
    group.add_argument("--dry-run", action="store_true",
                       help="print the grid, the number of tasks and the estimated work, memory and time "
                            "(with the warning or refusal the run would get), then exit")
    group.add_argument("--seed", type=_seed, default=None, metavar="S",
                       help="root seed of the sweep (default: "
                            + ("the experiment's)" if root_seed is None else f"{root_seed}, the experiment's)"))
    group.add_argument("--no-progress", action="store_true",
                       help="show nothing while running: no progress bar (where stderr is not a terminal, "
                            "no line a minute), no 'compiling kernels' notice")
    group.add_argument("--chunk-size", type=_positive_int, default=None, metavar="N",
                       help="trials per task, the checkpoint grain: a run killed after a chunk keeps it "
                            "(default: automatic, at most 50; 1 for a run that may be killed often)")
    group.add_argument("--kernel-threads", type=_positive_int, default=None, metavar="N",
                       help="BLAS/numba threads per worker (default 1, in every backend, --jobs 1 included, "
                            "which makes the results bit-identical whatever the backend and the number of "
                            "workers); N > 1 is an opt-out that may be faster with few workers but BREAKS "
                            "bit-identity: multi-threaded BLAS rounds long products differently")
    group.add_argument("--connect-timeout", type=_positive_seconds, default=30.0, metavar="S",
                       help="seconds to wait for --scheduler to answer (default: 30)")
    group.add_argument("--debug", action="store_true",
                       help="show the full traceback of a fault instead of its one-line message")
    return parser


def run_engine_from_args(sweep, args, default_out):
    """Run ``sweep`` as the parsed engine flags say; return its ``SweepResult``.

    Parameters
    ----------
    sweep : mixreg.montecarlo.Sweep
    args : argparse.Namespace
        Parsed with a parser prepared by :func:`add_engine_arguments`.  ``--seed`` and
        ``--chunk-size``, when given, replace ``sweep.root_seed`` and ``sweep.chunk_size``
        (the chunk size is not part of the sweep's identity: a resumed run may change it).
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
        with a Dask cluster), :class:`mixreg.montecarlo.ConfigMismatchError` (a
        ``ValueError``) when the directory holds a different sweep, or
        :class:`mixreg.montecarlo.SweepTooLargeError` (a ``ValueError``) when the sweep
        cannot fit (``--dry-run`` prints the description first).
    OSError, RuntimeError, KeyboardInterrupt
        The faults of :func:`mixreg.montecarlo.run_sweep` (directory, lock, scheduler, Ctrl-C,
        SIGTERM).
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
    chunk_size = getattr(args, "chunk_size", None)
    if chunk_size is not None:
        sweep = dataclasses.replace(sweep, chunk_size=chunk_size)
    if getattr(args, "dry_run", False):
        workers = None if scheduler is not None else (dask_local or jobs)
        print(dry_run(sweep, jobs=workers))
        check_fits(sweep, jobs=workers)  # a refusal exits 2 like the run would; warnings are in the text
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
        connect_timeout=getattr(args, "connect_timeout", 30.0),
    )


# --------------------------------------------------------------------------- tables and figures

def _read_tables(outdir, names, accept_edited=()):
    """The experiment's tables of ``outdir`` (``{name: rows}``), as the results reader parses them
    (each checked against the sha256 its run recorded, unless in ``accept_edited``)."""
    results = read_results(outdir, accept_edited=accept_edited)
    return {name: results.table(f"{name}.csv") for name in names}


class _NotResults(Exception):
    """``--redraw DIR``: DIR is not a finished results directory of this experiment."""


def _results_manifest(outdir, name, tables):
    """The manifest of ``outdir``, after checking it holds a finished run of ``name`` and its tables."""
    if not outdir.is_dir():
        raise _NotResults(f"{outdir} is not a directory")
    path = outdir / _MANIFEST
    if not path.is_file():
        raise _NotResults(f"{outdir} is not a results directory (it has no {_MANIFEST})")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        found = manifest["sweep"]["name"]
    except (ValueError, TypeError, KeyError):
        raise _NotResults(f"{path} is not the manifest of a Monte Carlo sweep") from None
    if found != name:
        raise _NotResults(f"{outdir} holds results of {found!r}, not of {name!r}")
    if manifest.get("status") != "complete":
        raise _NotResults(f"{outdir} holds an unfinished run (status {manifest.get('status')!r}); "
                          "run its command again to finish it")
    checksums = manifest.get("checksums")
    for table in tables:
        if (outdir / f"{table}.csv").is_file():
            continue
        if not isinstance(checksums, dict):  # a manifest of an earlier version says nothing of its tables
            why = f"deleted, or never written: {_MANIFEST} records no tables"
        elif f"{table}.csv" in checksums:
            why = f"deleted or moved: its run wrote it, {_MANIFEST} records its checksum"
        else:
            why = "never written: its run did not make its tables"
        raise _NotResults(f"{outdir} has no {table}.csv ({why}); run its command again, which resumes "
                          "without recomputing a trial and writes the tables")
    return manifest


def _is_preset_run(manifest, config, presets, build_sweep, paper_presets):
    """Whether ``manifest`` records the complete, failure-free run of a paper preset, unchanged."""
    if config.preset not in paper_presets or config.preset not in presets:
        return False
    preset_config = type(config)(preset=config.preset, **presets[config.preset])
    return (manifest.get("status") == "complete" and not manifest.get("n_failures")
            and manifest.get("sweep_key") == build_sweep(preset_config).key)


def _draw(config, outdir, manifest, *, draw, tables, presets, build_sweep, paper_presets, figures_dir,
          accept_edited=(), style=DEFAULT_STYLE, prog=None):
    """Draw from the tables as written (so a redraw repeats it exactly), in ``style``; copy a paper
    run's figures into ``figures_dir`` when drawn in the default style (another style's figures stay
    in the results directory, so that the committed copies are always the default style's)."""
    tables = _read_tables(outdir, tables, accept_edited)
    with use_style(style):
        paths = list(draw(config, tables, outdir))
    if figures_dir is not None and _is_preset_run(manifest, config, presets, build_sweep, paper_presets):
        if style != DEFAULT_STYLE:
            if prog is not None:
                say(prog, f"note: figures drawn in style {style}, not copied into {figures_dir} (only the default "
                          f"style, {DEFAULT_STYLE}, is)")
            return paths
        figures_dir = pathlib.Path(figures_dir)
        figures_dir.mkdir(parents=True, exist_ok=True)
        for path in list(paths):
            suffix = ".caption.txt" if path.name.endswith(".caption.txt") else path.suffix
            copy = figures_dir / f"{path.name[:-len(suffix)]}_{config.preset}{suffix}"
            shutil.copyfile(path, copy)
            paths.append(copy)
    return paths


def _redraw(parser, args, *, name, config_cls, debug=False, **drawing):
    """``--redraw DIR``: draw every figure of DIR from its manifest and tables; run nothing."""
    defaults = vars(parser.parse_args(["--redraw", str(args.redraw)]))
    others = [config_flag(dest) for dest, value in vars(args).items()
              if value != defaults[dest] and dest not in ("debug", "accept_edited", "style")]
    if others:
        parser.exit(2, f"{parser.prog}: error: --redraw takes the config from the directory's manifest; "
                       f"drop {', '.join(others)}\n")
    outdir = args.redraw
    try:
        manifest = _results_manifest(outdir, name, drawing["tables"])
    except _NotResults as exc:
        parser.exit(2, f"{parser.prog}: error: --redraw: {first_line(exc)}\n")
    try:
        config = config_from_record(config_cls, manifest["sweep"].get("config"))
    except (ValueError, TypeError) as exc:
        parser.exit(2, f"{parser.prog}: error: --redraw: the config in {outdir / _MANIFEST}: {first_line(exc)}\n")
    try:
        figures = _draw(config, outdir, manifest, accept_edited=tuple(args.accept_edited or ()), **drawing)
    except EditedFileError as exc:  # the directory's data are not the run's: refused like a wrong directory
        if debug:
            raise
        parser.exit(2, f"{parser.prog}: error: --redraw: {first_line(exc)}\n")
    except Exception as exc:  # noqa: BLE001 - one line, or the traceback with --debug
        if debug:
            raise
        say(parser.prog, f"figures not drawn: {describe_fault(exc, expected=False, hint=False)}")
        return 1
    unverified = [name for name in ("trials.csv", *(f"{table}.csv" for table in drawing["tables"]))
                  if name not in (manifest.get("checksums") or {})]
    if unverified:
        say(parser.prog, f"note: {outdir / _MANIFEST} records no checksum of {', '.join(unverified)} (written "
                          "by an earlier version), so they are drawn unverified")
    for path in figures:
        print(f"wrote {path}")
    return 0


# --------------------------------------------------------------------------- reporting faults

_MAX_FAILURE_LINES = 10  # failed trials listed one line each, then "... and N more"


def say(prog, text):
    """Print ``prog: text`` on stderr: the one line of a command's fault, warning or interruption."""
    print(f"{prog}: {text}", file=sys.stderr, flush=True)


def describe_fault(exc, *, expected=None, hint=True):
    """One line for an exception: the message of the faults a command expects (``OSError``,
    ``ImportError``, ``RuntimeError``, a sweep too large or another sweep's directory), else its
    type too, with a hint to rerun with ``--debug`` unless ``hint=False``."""
    text = first_line(exc)
    if expected is None:
        expected = isinstance(exc, _EXPECTED_FAULTS)
    if expected and text:
        return text
    text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return f"{text} (rerun with --debug for the traceback)" if hint else text


_EXPECTED_FAULTS = (OSError, ImportError, RuntimeError, SweepTooLargeError, ConfigMismatchError)


@contextlib.contextmanager
def _one_line_warnings(prog, debug):
    """Show each warning as one line ``prog: warning: ...`` on stderr (as Python does with --debug).

    A :class:`mixreg.montecarlo.TrialsFailedWarning` is not shown: the failed trials are
    listed by :func:`experiment_main`.  A :class:`mixreg.plotting.FigureNotDrawn` is the line
    ``prog: <figure> not drawn: <reason>`` (a legal run whose tables cannot give that figure).
    The engine's warnings and the figures not drawn are shown every time (not once per
    location), so a script calling ``main`` twice sees both.
    """
    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, TrialsFailedWarning):
            return
        if issubclass(category, FigureNotDrawn):
            say(prog, first_line(message))
            return
        say(prog, f"warning: {first_line(message)}")

    with warnings.catch_warnings():
        warnings.simplefilter("always", SweepWarning)
        warnings.simplefilter("always", FigureNotDrawn)
        if not debug:
            warnings.showwarning = show
        yield


def _failure_lines(failures, cells, limit=_MAX_FAILURE_LINES):
    """One line per failed trial: its cell's varying parameters, the trial, the error's first line."""
    varying = [key for key in cells[0] if len({repr(c[key]) for c in cells}) > 1] if cells else []
    lines = []
    for failure in failures[:limit]:
        params = failure.get("params") or {}
        shown = ", ".join(f"{key}={params[key]}" for key in varying if key in params)
        where = f"cell {failure['cell']}" + (f" ({shown})" if shown else "")
        lines.append(f"  {where} trial {failure['trial']}: {first_line(failure['error'])}")
    if len(failures) > limit:
        lines.append(f"  ... and {len(failures) - limit} more")
    return lines


def _interrupted(exc, state):
    """The one line of a Ctrl-C or a SIGTERM (``exc``): how many trials are kept on disk."""
    what = "terminated" if isinstance(exc, Terminated) else "interrupted"
    if isinstance(exc, SweepInterrupted):
        kept, total = exc.kept, exc.total
    elif state.get("result") is not None:
        kept = total = len(state["result"].records)
    elif state.get("sweep") is not None:
        return f"{what} before the run started; rerun the same command to run or resume it"
    else:
        return what
    return f"{what}: {kept} of {total} trials kept; rerun the same command to resume"


def _summarise_and_draw(config, result, *, prog, summarise, tables, debug, drawing):
    """Write the tables and draw the figures; return ``(paths written, reason or None)``."""
    outdir, written = result.outdir, [result.trials_csv]
    figures = []
    try:
        summary = summarise(config, result.records)
        if set(summary) != set(tables):
            raise RuntimeError(f"summarise returned the tables {sorted(summary)}, expected {sorted(tables)}")
        for table in tables:
            written.append(write_table(outdir / f"{table}.csv", summary[table], record=True))
        figures = _draw(config, outdir, result.manifest, **drawing)
        reason = None
    except Exception as exc:  # noqa: BLE001 - the data are written; say why the figures are not
        if debug:
            raise
        reason = describe_fault(exc, expected=False, hint=False)
    return [*written, outdir / _MANIFEST, *figures], reason


def experiment_main(parser, argv, *, name, config_cls, presets, build_sweep, summarise, draw, tables,
                    paper_presets=(), figures_dir=None, command_line=False):
    """The body of an experiment script's ``main``: parse, configure, run, summarise, draw, report.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        From :func:`parser_from_config`.
    argv : list of str or None
    name : str
        The experiment's (and its sweep's) name: results go to ``results/<name>/<preset>``
        unless ``--out``.
    config_cls : dataclass type
        The experiment's ``Config`` (see :func:`parser_from_config`); ``validate()`` raises
        ``ValueError`` naming the bad field.
    presets : dict of str to dict
    build_sweep : callable
        ``config -> Sweep`` with the experiment's root seed (``--seed`` replaces it).
    summarise : callable
        ``(config, records) -> {table name: list of dict}``, one entry per name of ``tables``;
        receives every record, failed trials included (their ``error`` is not empty).
    draw : callable
        ``(config, tables, outdir) -> list of figure paths``, from the tables only (as read
        back from the CSV files, so that ``--redraw`` draws the same figures).
    tables : sequence of str
        Names of the tables, written as ``<outdir>/<name>.csv`` by ``write_table``.
    paper_presets : sequence of str
        Presets whose figures are also copied to ``figures_dir`` as ``<figure>_<preset>.{png,pdf}``
        (and ``.caption.txt``), when the run is the complete, failure-free, unchanged preset (its
        sweep is the preset's, with the default seed) drawn in the default style
        (:data:`mixreg.plotting.DEFAULT_STYLE`; ``--style`` chooses another, whose figures stay in
        the results directory).
    figures_dir : path-like, optional
    command_line : bool, default=False
        Whether this is the command (``python -m experiments.<study>``, see
        ``Study.main(command_line=True)``): SIGTERM is then handled as Ctrl-C for the whole command
        (:func:`mixreg.montecarlo.raise_on_sigterm`), and either ends in one line and an exit
        status instead of an exception.

    Returns
    -------
    int
        The exit status.  0: the run finished, every trial succeeded, the tables are written
        and the figures are drawn, but for those its grid cannot give, named in one line each
        (``prog: <figure> not drawn: <reason>``, see :func:`mixreg.plotting.not_drawn`).  1: some trials failed (listed on stderr one line each, at most 10, then
        "... and N more"; the rest of the run is summarised and drawn), the tables or figures
        could not be made from what exists (one line ``figures not drawn: <reason>``), or a
        runtime fault: a results directory that cannot be created or written, one held by
        another run, a scheduler that does not answer (one line ``prog: error: ...``).
        2: a usage error (bad flag or value, a combination of flags, a directory holding
        another sweep, a sweep too large to fit), one line.  With ``command_line``, 130:
        Ctrl-C, with ``interrupted: N of M trials kept; rerun the same command to resume``,
        and 143: SIGTERM, with ``terminated: N of M trials kept; ...``.  Warnings are one
        line each (``prog: warning: ...``).  ``--debug`` shows the full traceback of a fault
        instead of its line.

    Raises
    ------
    KeyboardInterrupt
        Without ``command_line`` (in-process), Ctrl-C: once the run has started a
        :class:`mixreg.montecarlo.SweepInterrupted`, raised after the manifest is written as
        ``interrupted``; SIGTERM during the run (which the engine turns into an exception when
        SIGTERM has its default action) a :class:`mixreg.montecarlo.SweepTerminated`.  So
        Ctrl-C stops a test run that calls ``main``.  With ``--debug``, on the command line too.
    """
    args = parser.parse_args(argv)
    debug = bool(getattr(args, "debug", False))
    drawing = dict(draw=draw, tables=tuple(tables), presets=presets, build_sweep=build_sweep,
                   paper_presets=tuple(paper_presets), figures_dir=figures_dir,
                   style=getattr(args, "style", DEFAULT_STYLE), prog=parser.prog)
    state = {}  # what exists when a fault ends the command: the sweep, the result
    sigterm = raise_on_sigterm() if command_line else contextlib.nullcontext()
    with _one_line_warnings(parser.prog, debug), sigterm:
        if not debug:  # a Ctrl-C tears Dask's comms down mid-flight: tornado logs it before we can say a word
            _quiet_shutdown(args, names=("asyncio", "tornado"))
        try:
            if args.redraw is not None:
                return _redraw(parser, args, name=name, config_cls=config_cls, debug=debug, **drawing)
            return _run_experiment(parser, args, state, name=name, config_cls=config_cls, presets=presets,
                                   build_sweep=build_sweep, summarise=summarise, debug=debug, drawing=drawing)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (a Terminated)
            if debug or not command_line:  # in-process: stop the caller too (pytest)
                raise
            say(parser.prog, _interrupted(exc, state))
            _quiet_shutdown(args)
            return _EXIT_TERMINATED if isinstance(exc, Terminated) else _EXIT_INTERRUPTED
        except Exception as exc:  # noqa: BLE001 - every fault ends in one line (--debug: the traceback)
            if debug:
                raise
            say(parser.prog, f"error: {describe_fault(exc)}")
            _quiet_shutdown(args)
            return 1


def _quiet_shutdown(args, names=("asyncio", "distributed", "tornado")):
    """After a fault's line, no more: Dask's client, torn down mid-flight, leaves asyncio futures
    whose errors the ``asyncio`` logger would print when they are collected (at exit), and
    tornado logs the closed streams of an interrupted run.  Genuine failures of a Dask run reach
    the engine as exceptions, which are reported; ``--debug`` keeps every log."""
    import logging

    if getattr(args, "scheduler", None) is None and getattr(args, "dask_local", None) is None:
        return
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _run_experiment(parser, args, state, *, name, config_cls, presets, build_sweep, summarise, debug, drawing):
    try:
        if getattr(args, "accept_edited", None):
            raise ValueError("--accept-edited applies to --redraw only (a run rewrites its tables)")
        config = config_from_args(config_cls, presets, args)
        state["sweep"] = sweep = build_sweep(config)
        result = run_engine_from_args(sweep, args, default_out=_default_out(name, config.preset))
    except (ValueError, TypeError) as exc:  # a bad value or combination, another sweep's directory, too large
        if debug:
            raise
        parser.exit(2, f"{parser.prog}: error: {first_line(exc)}\n")
    if result is None:  # --dry-run
        return 0
    state["result"] = result
    paths, reason = _summarise_and_draw(config, result, prog=parser.prog, summarise=summarise,
                                        tables=drawing["tables"], debug=debug, drawing=drawing)
    for path in paths:
        print(f"wrote {path}")
    if reason is not None:
        say(parser.prog, f"figures not drawn: {reason}")
    if result.failures:
        say(parser.prog, f"{len(result.failures)} of {len(result.records)} trials failed (tracebacks in "
                          f"{result.outdir / _MANIFEST}; replay one with mixreg.montecarlo.replay_trial):")
        for line in _failure_lines(result.failures, sweep.cells):
            print(line, file=sys.stderr)
    return 1 if result.failures or reason is not None else 0
