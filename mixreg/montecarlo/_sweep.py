"""Sweeps: the grid and its trial function, planning the tasks, running them, the result."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import logging
import math
import pathlib
import re
import sys
import warnings
from collections.abc import Callable, Mapping

import numpy as np

from mixreg import provenance
from mixreg._validation import check_int
from mixreg.montecarlo._backends import _open_backend
from mixreg.montecarlo._cells import (
    _check_cells,
    _normalise_json,
    _text_cell,
    trial_seed,
)
from mixreg.montecarlo._errors import SweepWarning
from mixreg.montecarlo._store import (
    CHUNK_DIR_NAME,
    MANIFEST_NAME,
    SUMMARY_CSV_NAME,
    TRIALS_CSV_NAME,
    _directory_lock,
    _load_chunks,
    _new_manifest,
    _prepare_directory,
    _resolve_outdir,
    _warn_version_change,
    _write_atomic,
    _write_chunk,
    _write_manifest,
)
from mixreg.montecarlo._tables import _column_types, _columns, _csv_text, _summarise

logger = logging.getLogger("mixreg.montecarlo")

_MAX_AUTO_CHUNK = 50  # trials per task at most when chosen automatically (checkpoint grain)
_TASKS_PER_WORKER = 8  # automatic chunking aims for at least this many tasks per worker
_SCHEDULER_RE = re.compile(r"^(tcp|tls|ucx|ws|wss|inproc)://\S+$")


# --------------------------------------------------------------------------- the sweep


def _function_name(fn):
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A grid of cells times trials, and the function that runs one trial.

    Parameters
    ----------
    name : str
        Short name, shown in progress bars and stored in the manifest.
    trial_fn : callable ``(cell: dict, seed: numpy.random.SeedSequence) -> dict``
        Runs one trial.  Must be a module-level function (worker processes import it by
        name) and a deterministic function of its arguments; returns a dict of scalars
        (int, float, bool, str; numpy scalars are converted).  It may not return the engine
        columns ``cell, trial, wall_time, seed_entropy, error`` nor the cell's parameter names.
    cells : sequence of dict
        Grid cells, dicts with identical keys whose values are int, float, bool or str
        scalars, or non-empty tuples of int/float/bool scalars (a list is taken as a tuple;
        a key holds tuples in every cell or in none).  Stored as a tuple of dicts with plain
        Python values, every cell in the key order of the first.  A tuple is hashed, written
        to ``trials.csv`` and stored in the manifest as its comma text
        ``",".join(repr(v) for v in value)`` (see :func:`trial_seed`), but the trial function
        and :attr:`SweepResult.records` see the tuple.
    n_trials : int
        Trials per cell, >= 1.
    root_seed : int
        Root seed, >= 0; see :func:`trial_seed`.
    config : dict
        JSON-serialisable full configuration of the experiment.  Compared (after a JSON
        round trip) when a run resumes in an existing directory.
    chunk_size : int, optional
        Trials per task.  ``None`` chooses automatically from the grid and the number of
        workers (at most 50).  Not part of the sweep's identity: a resumed run may use another
        chunk size and still reuses every finished trial.
    cost_fn : callable ``(cell: dict) -> float``, optional
        Estimated flops of one trial of a cell, for :func:`dry_run` and to start the most
        expensive tasks first.

    Raises
    ------
    ValueError, TypeError
        For an empty grid, cells with differing keys or values that are neither scalars nor
        tuples of numbers, a key holding tuples in some cells only, duplicate cells,
        ``n_trials < 1``, a negative root seed or a config that is not JSON-serialisable.
    """

    name: str
    trial_fn: Callable[[dict, np.random.SeedSequence], dict]
    cells: tuple
    n_trials: int
    root_seed: int
    config: dict
    chunk_size: int | None = None
    cost_fn: Callable[[dict], float] | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        if not callable(self.trial_fn):
            raise TypeError(f"trial_fn must be callable, got {type(self.trial_fn).__name__}")
        object.__setattr__(self, "cells", _check_cells(self.cells))
        object.__setattr__(self, "n_trials", check_int("n_trials", self.n_trials, low=1))
        object.__setattr__(self, "root_seed", check_int("root_seed", self.root_seed, low=0))
        if not isinstance(self.config, Mapping):
            raise TypeError(f"config must be a dict, got {type(self.config).__name__}")
        _normalise_json("config", self.config)
        if self.chunk_size is not None:
            object.__setattr__(self, "chunk_size", check_int("chunk_size", self.chunk_size, low=1))
        if self.cost_fn is not None and not callable(self.cost_fn):
            raise TypeError(f"cost_fn must be callable or None, got {type(self.cost_fn).__name__}")

    @property
    def identity(self):
        """The JSON-normalised dict compared on resume (everything that defines the results).

        The trial function enters by its qualified name only, not its module, so that a
        script's trial function keeps its identity whether the script runs as ``__main__``
        or is imported (``python -m``, tests).  A tuple cell value enters as its comma text,
        as in its seed hash: an experiment that moves a list from comma text to a tuple
        keeps its identity and resumes in the results directories it wrote before.  The
        manifest's ``tuple_keys`` says which keys hold tuples.
        """
        return {
            "name": self.name,
            "trial_fn": getattr(self.trial_fn, "__qualname__", repr(self.trial_fn)),
            "root_seed": self.root_seed,
            "n_trials": self.n_trials,
            "cells": [_text_cell(c) for c in self.cells],
            "config": _normalise_json("config", self.config),
        }

    @functools.cached_property
    def key(self):
        """Short hash of :attr:`identity`; stamped into every chunk file."""
        text = json.dumps(self.identity, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """What :func:`run_sweep` returns.

    Attributes
    ----------
    outdir : pathlib.Path
        The directory actually written (differs from the one asked for with ``new_dir``).
    records : list of dict
        One record per (cell, trial), ordered by cell index then trial.  Every record has the
        same keys, in the column order of ``trials.csv``: the cell's parameters (tuples
        stay tuples, also for records loaded on resume), ``cell``,
        ``trial``, the trial function's fields (``None`` where a trial failed),
        ``wall_time`` (seconds), ``seed_entropy`` (JSON list; see :func:`seed_from_record`)
        and ``error`` (``""`` when the trial succeeded).
    failures : list of dict
        One entry per failed trial: ``cell``, ``trial``, ``params``, ``seed_entropy``
        (list of int), ``spawn_key``, ``error``, ``traceback``.
    manifest : dict
        Contents of ``manifest.json`` at the end of the run.
    trials_csv, summary_csv : pathlib.Path
    summary : list of dict
        Rows of ``summary.csv``: per cell its parameters, ``cell``, ``n_trials``,
        ``n_errors`` and ``mean_<column>`` for every numeric or bool column, averaged over
        the trials that did not fail.
    """

    outdir: pathlib.Path
    records: list
    failures: list
    manifest: dict
    trials_csv: pathlib.Path
    summary_csv: pathlib.Path
    summary: list = dataclasses.field(default_factory=list)

    def column(self, name):
        """Return one column of :attr:`records` as an array.

        Bool columns give a bool array, integer columns int64, numeric columns float64,
        a tuple-valued cell parameter a 1-d object array of tuples and anything else a str
        array.  A bool or numeric column with missing values (failed trials) gives float64
        with NaN there; a str column gives ``""`` there.
        """
        if not self.records or name not in self.records[0]:
            columns = list(self.records[0]) if self.records else []
            raise KeyError(f"no column {name!r}; columns are {columns}")
        values = [r[name] for r in self.records]
        present = [v for v in values if v is not None]
        complete = len(present) == len(values)
        if present and all(isinstance(v, bool) for v in present) and complete:
            return np.array(values, dtype=bool)
        if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present) and complete:
            return np.array(values, dtype=np.int64)
        if present and all(isinstance(v, (int, float)) for v in present):
            return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)
        if present and all(isinstance(v, tuple) for v in present) and complete:
            out = np.empty(len(values), dtype=object)
            for i, value in enumerate(values):  # one tuple per element, not a 2-d array
                out[i] = value
            return out
        return np.array(["" if v is None else str(v) for v in values], dtype=str)



# --------------------------------------------------------------------------- planning


def _auto_chunk_size(n_cells, n_trials, workers):
    per_task = math.ceil(n_cells * n_trials / (_TASKS_PER_WORKER * workers))
    size = max(1, min(per_task, n_trials, _MAX_AUTO_CHUNK))
    pieces = math.ceil(n_trials / size)
    return math.ceil(n_trials / pieces)  # balance the chunks of a cell


def _plan(sweep, done, chunk_size, costs):
    """Tasks ``(cell_index, start, stop)`` covering the trials not in ``done``.

    Chunks are aligned to multiples of ``chunk_size``, so an interrupted and resumed run
    writes the same files as an uninterrupted one.  With costs, expensive tasks go first.
    """
    tasks = []
    for ci in range(len(sweep.cells)):
        for lo in range(0, sweep.n_trials, chunk_size):
            hi = min(lo + chunk_size, sweep.n_trials)
            run_start = None
            for t in range(lo, hi + 1):
                missing = t < hi and (ci, t) not in done
                if missing and run_start is None:
                    run_start = t
                elif not missing and run_start is not None:
                    tasks.append((ci, run_start, t))
                    run_start = None
    if costs is not None:
        tasks.sort(key=lambda task: -costs[task[0]] * (task[2] - task[1]))  # stable
    return tasks


def _cell_costs(sweep):
    if sweep.cost_fn is None:
        return None
    costs = []
    for i, cell in enumerate(sweep.cells):
        try:
            cost = float(sweep.cost_fn(dict(cell)))
        except Exception as exc:  # noqa: BLE001 - re-raised with the cell named
            raise ValueError(f"cost_fn failed for cells[{i}] = {cell}: {exc}") from exc
        if not (math.isfinite(cost) and cost >= 0):
            raise ValueError(f"cost_fn must return a finite cost >= 0, got {cost!r} "
                             f"for cells[{i}] = {cell}")
        costs.append(cost)
    return costs


# --------------------------------------------------------------------------- running


def _check_run_arguments(sweep, jobs, scheduler, dask_local, overwrite, new_dir, progress,
                         kernel_threads):
    if not isinstance(sweep, Sweep):
        raise TypeError(f"sweep must be a mixreg.montecarlo.Sweep, got {type(sweep).__name__}")
    jobs = check_int("jobs", jobs, low=1)
    if scheduler is not None and dask_local is not None:
        raise ValueError("give at most one of scheduler (an existing Dask cluster) and "
                         f"dask_local (start a local one); got scheduler={scheduler!r} and "
                         f"dask_local={dask_local!r}")
    if scheduler is not None:
        if not isinstance(scheduler, str) or not _SCHEDULER_RE.match(scheduler):
            raise ValueError(f"scheduler must be a Dask scheduler address such as "
                             f"'tcp://10.0.0.5:8786', got {scheduler!r}")
    if dask_local is not None:
        dask_local = check_int("dask_local", dask_local, low=1)
    if (scheduler is not None or dask_local is not None) and jobs != 1:
        raise ValueError(f"jobs={jobs} applies to the local process backend; with scheduler "
                         "or dask_local the Dask workers set the parallelism (leave jobs=1)")
    if overwrite and new_dir:
        raise ValueError("give at most one of overwrite=True (discard the old results) and "
                         "new_dir=True (write into a fresh sibling directory)")
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"progress must be None, True or False, got {progress!r}")
    if kernel_threads is not None:
        kernel_threads = check_int("kernel_threads", kernel_threads, low=1)
    return jobs, dask_local, kernel_threads


def run_sweep(sweep, outdir, *, jobs=1, scheduler=None, dask_local=None, overwrite=False,
              new_dir=False, progress=None, kernel_threads=None):
    """Run (or resume) a sweep, writing its results directory, and return the results.

    Parameters
    ----------
    sweep : Sweep
    outdir : str or path-like
        Results directory; created if needed.  If it holds the same sweep, finished chunks
        are loaded and only missing trials run.
    jobs : int, default=1
        Local worker processes (joblib's loky backend).  ``1`` runs in this process.
    scheduler : str, optional
        Address of a running Dask scheduler (``"tcp://host:port"``); runs through joblib's
        dask backend on that cluster.  ``mixreg`` and the trial function's module must be
        importable on the workers.
    dask_local : int, optional
        Start a ``distributed.LocalCluster`` with this many single-threaded worker processes
        on 127.0.0.1 (no dashboard) for the duration of the run.
    overwrite : bool, default=False
        Delete this engine's files in ``outdir`` (manifest, CSVs, chunk files) first.
    new_dir : bool, default=False
        If ``outdir`` exists and is not empty, write into the first free ``<outdir>-2``,
        ``<outdir>-3``, ... instead.  :attr:`SweepResult.outdir` tells which.
    progress : bool, optional
        Show a tqdm progress bar on stderr.  ``None``: only when stderr is a terminal.
    kernel_threads : int, optional
        BLAS/OpenMP and numba threads per task.  ``None`` (default): 1 in every worker when
        ``jobs > 1`` or on Dask, unlimited when ``jobs == 1`` (kernels may use all cores).
        Multi-threaded BLAS reductions (long dot products, large matrix-vector products)
        and numba ``prange`` reductions can round differently with another thread count;
        pass ``kernel_threads=1`` to make a ``jobs=1`` run bit-identical to any parallel
        run for every trial function.

    Returns
    -------
    SweepResult

    Raises
    ------
    ConfigMismatchError
        ``outdir`` holds a sweep with a different identity (and neither ``overwrite`` nor
        ``new_dir`` was given).
    ValueError, TypeError
        For invalid arguments, naming the parameter.

    Notes
    -----
    A trial that raises does not stop the sweep: its record has a non-empty ``error`` and
    it is listed in :attr:`SweepResult.failures` and the manifest, with the cell, trial and
    seed needed by :func:`replay_trial`.  Failed trials count as finished and are not re-run
    on resume (they are deterministic); use ``overwrite=True`` after fixing the cause.
    ``wall_time`` is the only column that differs between two runs of the same sweep.
    """
    jobs, dask_local, kernel_threads = _check_run_arguments(
        sweep, jobs, scheduler, dask_local, overwrite, new_dir, progress, kernel_threads)
    outdir = _resolve_outdir(outdir, new_dir)
    if outdir.exists() and not outdir.is_dir():
        raise ValueError(f"outdir '{outdir}' exists and is not a directory")
    outdir.mkdir(parents=True, exist_ok=True)
    chunk_dir = outdir / CHUNK_DIR_NAME
    with _directory_lock(outdir):
        previous = _prepare_directory(outdir, sweep, overwrite)
        chunk_dir.mkdir(exist_ok=True)
        done, failures, thread_settings, n_loaded = _load_chunks(chunk_dir, sweep)
        costs = _cell_costs(sweep)
        environment = provenance.environment_record()
        if previous is not None:
            _warn_version_change(previous, environment)
        with _open_backend(jobs, scheduler, dask_local, kernel_threads) as backend:
            chunk_size = sweep.chunk_size or _auto_chunk_size(
                len(sweep.cells), sweep.n_trials, backend.workers)
            tasks = _plan(sweep, done, chunk_size, costs)
            run_info = {
                "started": environment["time"],
                "finished": None,
                "status": "running",
                "backend": backend.name,
                "jobs": jobs,
                "trial_fn": _function_name(sweep.trial_fn),
                "workers": backend.workers,
                "kernel_threads": backend.kernel_threads,
                "chunk_size": chunk_size,
                "chunks_loaded": n_loaded,
                "trials_loaded": len(done),
                "chunks_computed": 0,
                "tasks_planned": len(tasks),
                **backend.info,
                "environment": environment,
            }
            manifest = _new_manifest(sweep, previous, run_info)
            _write_manifest(outdir, manifest)
            if done:
                logger.info("resuming sweep %r in %s: %d of %d trials loaded from %d chunk files",
                            sweep.name, outdir, len(done), len(sweep.cells) * sweep.n_trials,
                            n_loaded)
            try:
                _execute(sweep, backend, tasks, chunk_dir, done, failures, thread_settings,
                         run_info, progress)
            except BaseException as exc:
                run_info.update(status="interrupted", finished=provenance.utc_now(),
                                error=f"{type(exc).__name__}: {exc}")
                manifest["status"] = "interrupted"
                with contextlib.suppress(Exception):
                    _write_manifest(outdir, manifest)
                raise
        return _finish(sweep, outdir, manifest, run_info, done, failures, thread_settings)


def _execute(sweep, backend, tasks, chunk_dir, done, failures, thread_settings, run_info,
             progress):
    from tqdm import tqdm

    total = len(sweep.cells) * sweep.n_trials
    per_cell = [0] * len(sweep.cells)
    for ci, _ in done:
        per_cell[ci] += 1
    cells_done = sum(1 for c in per_cell if c == sweep.n_trials)
    show = sys.stderr.isatty() if progress is None else progress
    bar = tqdm(total=total, initial=len(done), unit="trial", desc=sweep.name,
               disable=not show, file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
    with bar:
        bar.set_postfix_str(f"cells {cells_done}/{len(sweep.cells)}")
        if not tasks:
            return
        for ci, start, stop, results in backend.run(sweep, tasks):
            _write_chunk(chunk_dir, sweep.key, ci, sweep.cells[ci], start, stop, results,
                         backend.kernel_threads)
            thread_settings.add(backend.kernel_threads)
            for record, failure in results:
                done[(ci, record["trial"])] = record
                if failure is not None:
                    failures[(ci, record["trial"])] = failure
            run_info["chunks_computed"] += 1
            per_cell[ci] += stop - start
            if per_cell[ci] == sweep.n_trials:
                cells_done += 1
            bar.set_postfix_str(f"cells {cells_done}/{len(sweep.cells)}", refresh=False)
            bar.update(stop - start)


def _finish(sweep, outdir, manifest, run_info, done, failures, thread_settings):
    records = [done[(ci, t)] for ci in range(len(sweep.cells)) for t in range(sweep.n_trials)]
    head, middle, tail = _columns(sweep.cells[0], records)
    columns = head + middle + tail
    records = [{c: r.get(c) for c in columns} for r in records]
    failure_list = [failures[k] for k in sorted(failures)]

    trials_csv = outdir / TRIALS_CSV_NAME
    summary_csv = outdir / SUMMARY_CSV_NAME
    _write_atomic(trials_csv, _csv_text(columns, records))
    summary_columns, summary = _summarise(sweep, records, head[:-2], middle)
    _write_atomic(summary_csv, _csv_text(summary_columns, summary))

    run_info.update(status="complete", finished=provenance.utc_now())
    manifest.update(
        status="complete",
        finished=run_info["finished"],
        n_records=len(records),
        n_failures=len(failure_list),
        column_types=_column_types(records, middle),
        kernel_thread_settings=sorted(thread_settings, key=lambda v: (v is not None, v or 0)),
        failures=failure_list,
    )
    _write_manifest(outdir, manifest)

    if len(thread_settings) > 1:
        warnings.warn(
            f"the records in '{outdir}' were computed with different kernel thread settings "
            f"{sorted(map(str, thread_settings))} (a run resumed with another jobs/backend); "
            "multi-threaded reductions may differ in the last bits from an uninterrupted "
            "run. Use kernel_threads=1 for bit-identical results everywhere.",
            SweepWarning, stacklevel=3)
    if failure_list:
        first = failure_list[0]
        message = (f"{len(failure_list)} of {len(records)} trials of sweep {sweep.name!r} "
                   f"raised; first: cell {first['cell']} {first['params']} trial "
                   f"{first['trial']}: {first['error']}. See SweepResult.failures or "
                   f"'{outdir / MANIFEST_NAME}'; replay one with "
                   "mixreg.montecarlo.replay_trial(sweep, cell, trial).")
        logger.info(message)
        warnings.warn(message, SweepWarning, stacklevel=3)
    return SweepResult(outdir=outdir, records=records, failures=failure_list,
                       manifest=manifest, trials_csv=trials_csv, summary_csv=summary_csv,
                       summary=summary)


# --------------------------------------------------------------------------- utilities


def replay_trial(sweep, cell, trial):
    """Run one trial of ``sweep`` in this process and return ``trial_fn``'s output.

    Exceptions propagate, so a failed trial can be debugged (``python -m pdb``, breakpoints).

    Parameters
    ----------
    sweep : Sweep
    cell : int
        Cell index (the ``cell`` column of a record or failure).
    trial : int
        Trial index.
    """
    cell = check_int("cell", cell, low=0, high=len(sweep.cells) - 1)
    trial = check_int("trial", trial, low=0)
    params = sweep.cells[cell]
    return sweep.trial_fn(dict(params), trial_seed(sweep.root_seed, params, trial))


def dry_run(sweep, *, jobs=1):
    """Describe a sweep without running it: grid, tasks and an estimate of the work.

    Parameters
    ----------
    sweep : Sweep
    jobs : int, default=1
        Number of workers assumed for the automatic chunk size and the work per worker.

    Returns
    -------
    text : str
        Human-readable description; mentions the number of tasks.
    """
    if not isinstance(sweep, Sweep):
        raise TypeError(f"sweep must be a mixreg.montecarlo.Sweep, got {type(sweep).__name__}")
    jobs = check_int("jobs", jobs, low=1)
    n_cells, n_trials = len(sweep.cells), sweep.n_trials
    chunk_size = sweep.chunk_size or _auto_chunk_size(n_cells, n_trials, jobs)
    chunk_source = "set by the sweep" if sweep.chunk_size else f"automatic for {jobs} worker(s)"
    tasks_per_cell = math.ceil(n_trials / chunk_size)
    lines = [
        f"Sweep {sweep.name!r} ({_function_name(sweep.trial_fn)}), root seed {sweep.root_seed}",
        f"Grid: {n_cells} cells x {n_trials} trials = {n_cells * n_trials} trials",
    ]
    for key in sweep.cells[0]:
        distinct = {}
        for cell in sweep.cells:
            distinct.setdefault((type(cell[key]).__name__, repr(cell[key])), cell[key])
        values = list(distinct.values())
        shown = ", ".join(repr(v) for v in values[:12]) + (", ..." if len(values) > 12 else "")
        lines.append(f"  {key}: {len(values)} value(s): {shown}")
    lines.append(f"Chunks: {chunk_size} trials per task ({chunk_source}) -> "
                 f"{tasks_per_cell * n_cells} tasks")
    costs = _cell_costs(sweep)
    if costs is None:
        lines.append("Estimated work: unknown (the sweep has no cost_fn)")
    else:
        total = sum(costs) * n_trials
        heaviest = int(np.argmax(costs))
        lines.append(f"Estimated work: {total:.3g} flops in total, {total / jobs:.3g} per "
                     f"worker with {jobs} worker(s); heaviest cell {heaviest} "
                     f"{sweep.cells[heaviest]}: {costs[heaviest]:.3g} flops per trial")
    if n_cells <= 50:
        lines.append("Cells:")
        for i, cell in enumerate(sweep.cells):
            cost = "" if costs is None else f"  ({costs[i] * n_trials:.3g} flops)"
            lines.append(f"  {i:5d}  {cell}{cost}")
    return "\n".join(lines)
