"""Sweeps: the grid and its trial function, planning the tasks, running them, the result."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import math
import os
import pathlib
import re
import sys
import warnings
from collections.abc import Callable, Mapping

import numpy as np

from mixreg import provenance
from mixreg._validation import check_int, check_real
from mixreg.montecarlo._backends import _kernel_threads, _open_backend
from mixreg.montecarlo._cells import (
    _check_cells,
    _normalise_json,
    _text_cell,
    trial_seed,
)
from mixreg.montecarlo._errors import (
    SweepInterrupted,
    SweepTerminated,
    SweepTooLargeError,
    SweepWarning,
    Terminated,
    TrialsFailedWarning,
    raise_on_sigterm,
)
from mixreg.montecarlo._store import (
    CHUNK_DIR_NAME,
    MANIFEST_NAME,
    SUMMARY_CSV_NAME,
    TRIALS_CSV_NAME,
    _directory_lock,
    _load_chunks,
    _make_outdir,
    _new_manifest,
    _prepare_directory,
    _resolve_outdir,
    _warn_version_change,
    _write_atomic,
    _write_chunk,
    _write_manifest,
    file_checksum,
    sweep_key_of,
)
from mixreg.montecarlo._tables import _column_types, _columns, _csv_text, _summarise

logger = logging.getLogger("mixreg.montecarlo")

_MAX_AUTO_CHUNK = 50  # trials per task at most when chosen automatically (checkpoint grain)
_TASKS_PER_WORKER = 8  # automatic chunking aims for at least this many tasks per worker
#: Estimated seconds of a task at most when the chunk size is chosen automatically and the sweep
#: has a cost_fn: an interrupted run loses at most about this much of each worker's work.
_MAX_CHUNK_SECONDS = 300.0
_SCHEDULER_RE = re.compile(r"^(tcp|tls|ucx|ws|wss|inproc)://\S+$")


# --------------------------------------------------------------------------- the sweep


def _function_name(fn):
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


@dataclasses.dataclass(frozen=True)
class OnSpec:
    """``fn`` called with ``spec_type.from_cell(cell)`` in place of the engine's cell dict."""

    fn: Callable
    spec_type: type

    def __call__(self, cell, *args):
        return self.fn(self.spec_type.from_cell(cell), *args)


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
        Estimated flops of one trial of a cell, for :func:`dry_run`, the time estimate that
        refuses a sweep taking more than a year (see :func:`run_sweep`) and to start the most
        expensive tasks first.
    memory_fn : callable ``(cell: dict) -> float``, optional
        Estimated peak bytes of one trial of a cell (its data and buffers).  With it, a sweep
        whose heaviest trial times the number of workers exceeds the machine's memory is
        refused before it starts (above half of it, warned).  Neither function is part of
        the sweep's identity.
    size_names : tuple of str, optional
        What sets a trial's size, in the caller's terms (an experiment gives its flags, e.g.
        ``("--m", "--n", "--d")``): a refusal for memory names them.  Not part of the sweep's
        identity.
    flop_rate : float, optional
        Flop/s one single-threaded worker reaches on this sweep's trials (as measured by a
        benchmark of its kernels), for the time estimate; default :data:`_FLOPS_PER_WORKER`.
        Not part of the sweep's identity.
    spec_type : type, optional
        A typed trial spec (:class:`mixreg.study.TrialSpec`): a class whose instances have
        ``to_cell()`` and whose ``from_cell(cell)`` rebuilds the instance.  With it, ``cells``
        may be given as spec instances (stored as their cells, so seeds and files are those of
        the dicts), and ``trial_fn``, ``cost_fn`` and ``memory_fn`` receive
        ``spec_type.from_cell(cell)`` instead of the dict.  Not part of the sweep's identity
        (the cells are).

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
    memory_fn: Callable[[dict], float] | None = None
    flop_rate: float | None = None
    size_names: tuple = ()
    spec_type: type | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        if not callable(self.trial_fn):
            raise TypeError(f"trial_fn must be callable, got {type(self.trial_fn).__name__}")
        if self.spec_type is not None:
            if not (isinstance(self.spec_type, type) and callable(getattr(self.spec_type, "from_cell", None))):
                raise TypeError(f"spec_type must be a class with a from_cell classmethod, got {self.spec_type!r}")
            cells = self.cells if isinstance(self.cells, (list, tuple)) else tuple(self.cells)
            object.__setattr__(self, "cells", tuple(
                c.to_cell() if isinstance(c, self.spec_type) else c for c in cells))
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
        if self.memory_fn is not None and not callable(self.memory_fn):
            raise TypeError(f"memory_fn must be callable or None, got {type(self.memory_fn).__name__}")
        if isinstance(self.size_names, str):
            raise TypeError(f"size_names must be a tuple of strings, got the string {self.size_names!r}")
        object.__setattr__(self, "size_names", tuple(self.size_names))
        if not all(isinstance(text, str) and text for text in self.size_names):
            raise TypeError(f"size_names must be non-empty strings, got {self.size_names!r}")
        if self.flop_rate is not None:
            object.__setattr__(self, "flop_rate", check_real("flop_rate", self.flop_rate, low=0.0,
                                                             low_inclusive=False))

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

    def function(self, name="trial_fn"):
        """``trial_fn`` (or ``cost_fn``, ``memory_fn``) as the engine calls it, with a cell dict:
        the function itself, or, with :attr:`spec_type`, the function of the spec rebuilt from the
        cell (a picklable wrapper that workers import by the names of both)."""
        fn = getattr(self, name)
        if fn is None or self.spec_type is None:
            return fn
        return OnSpec(fn, self.spec_type)

    @functools.cached_property
    def key(self):
        """Short hash of :attr:`identity`; stamped into every chunk file."""
        return sweep_key_of(self.identity)


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


def _auto_chunk_size(n_cells, n_trials, workers, trial_seconds=None):
    """Trials per task: enough tasks per worker to balance the load, at most
    :data:`_MAX_AUTO_CHUNK`, and, given the estimated seconds of the heaviest trial, at most
    :data:`_MAX_CHUNK_SECONDS` of work (the work an interruption can lose)."""
    per_task = math.ceil(n_cells * n_trials / (_TASKS_PER_WORKER * workers))
    size = max(1, min(per_task, n_trials, _MAX_AUTO_CHUNK))
    if trial_seconds:
        size = max(1, min(size, int(_MAX_CHUNK_SECONDS // trial_seconds)))
    pieces = math.ceil(n_trials / size)
    return math.ceil(n_trials / pieces)  # balance the chunks of a cell


def _heaviest_trial_seconds(sweep, costs):
    """Estimated seconds of the sweep's heaviest trial (its cost at its flop rate), or None."""
    if not costs:
        return None
    return max(costs) / _flop_rate(sweep)


def _flop_rate(sweep):
    """Flop/s per worker of the sweep's time estimates: its own, or :data:`_FLOPS_PER_WORKER`."""
    return sweep.flop_rate or _FLOPS_PER_WORKER


class _Plan:
    """The tasks ``(cell_index, start, stop)`` covering the trials not in ``done``, made lazily.

    Chunks are aligned to multiples of ``chunk_size``, so an interrupted and resumed run
    writes the same files as an uninterrupted one.  With costs, the cells are visited from
    the most expensive down (ties in grid order).  Iterating generates the tasks one at a
    time (the backends consume them as workers free up), so no per-trial or per-task list of
    the whole grid is ever built; ``len`` counts them, by arithmetic for a cell with no
    finished trial.
    """

    def __init__(self, sweep, done, chunk_size, costs):
        self.n_trials, self.chunk_size = sweep.n_trials, chunk_size
        self.finished = {}
        for ci, t in done:
            self.finished.setdefault(ci, set()).add(t)
        order = range(len(sweep.cells))
        self.order = order if costs is None else sorted(order, key=lambda ci: -costs[ci])

    def _cell_tasks(self, ci):
        finished = self.finished.get(ci)
        for lo in range(0, self.n_trials, self.chunk_size):
            hi = min(lo + self.chunk_size, self.n_trials)
            if not finished:
                yield ci, lo, hi
                continue
            run_start = None
            for t in range(lo, hi + 1):
                missing = t < hi and t not in finished
                if missing and run_start is None:
                    run_start = t
                elif not missing and run_start is not None:
                    yield ci, run_start, t
                    run_start = None

    def __iter__(self):
        for ci in self.order:
            yield from self._cell_tasks(ci)

    def __len__(self):
        per_cell = math.ceil(self.n_trials / self.chunk_size)
        return sum(per_cell if not self.finished.get(ci) else sum(1 for _ in self._cell_tasks(ci))
                   for ci in self.order)


def _cell_costs(sweep, name="cost_fn"):
    fn = sweep.function(name)
    if fn is None:
        return None
    costs = []
    for i, cell in enumerate(sweep.cells):
        try:
            cost = float(fn(dict(cell)))
        except Exception as exc:  # noqa: BLE001 - re-raised with the cell named
            raise ValueError(f"{name} failed for cells[{i}] = {cell}: {exc}") from exc
        if not (math.isfinite(cost) and cost >= 0):
            raise ValueError(f"{name} must return a finite value >= 0, got {cost!r} "
                             f"for cells[{i}] = {cell}")
        costs.append(cost)
    return costs


# --------------------------------------------------------------------------- will it fit?

#: Most trials a sweep may have: every record is held in memory until ``trials.csv`` is written.
MAX_TRIALS = 10_000_000
#: Memory per trial assumed by the estimate: a record in memory (a few kB for 30 to 80
#: columns), its copy in column order and its line of CSV text at the end of the run.
_BYTES_PER_TRIAL = 10_000
#: Speed assumed by the time estimate, per single-threaded worker, for a sweep that does not
#: give its own ``flop_rate``: a cautious round figure (the IFCA kernels reach 3e10 to 8e10 on
#: one core at the official sizes, see the README's benchmark); the estimate is an order of
#: magnitude.
_FLOPS_PER_WORKER = 1e10
_WARN_SECONDS = 86_400.0  # warn above a day
_MAX_SECONDS = 365 * 86_400.0  # refuse above a year
_WARN_MEMORY_FRACTION = 0.5  # warn above half the physical memory; refuse above all of it


def _available_cores():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _cap_workers(name, value):
    """``value`` capped at the machine's cores, with a one-line warning when it was above."""
    if value is None:
        return None
    cores = _available_cores()
    if value > cores:
        warnings.warn(f"{name}={value} is more than the {cores} cores of this machine; using "
                      f"{cores} (the results do not depend on the number of workers, only the "
                      "speed does)", SweepWarning, stacklevel=4)
        return cores
    return value


def _size(n):
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def _duration(seconds):
    for unit, scale in (("years", 365 * 86400.0), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.2g} s"


@dataclasses.dataclass(frozen=True)
class _Estimate:
    """What a sweep will cost, and whether it fits (:func:`_estimate`)."""

    trials: int
    flops: float | None
    memory_bytes: float
    seconds: float | None
    workers: int | None
    warnings: tuple
    refusal: str | None
    trial_bytes: float | None = None
    rate: float = _FLOPS_PER_WORKER

    def lines(self):
        mem = _physical_memory()
        text = [f"Estimated memory: {_size(self.memory_bytes)} in all: the records, about "
                f"{_size(_BYTES_PER_TRIAL)} per trial, in the process that runs the command"
                + ("" if self.trial_bytes is None else
                   f", and up to {_size(self.trial_bytes)} per worker for the heaviest trial")
                + ("" if mem is None else f"; this machine has {_size(mem)}")]
        if self.seconds is not None:
            text.append(f"Estimated time: {_duration(self.seconds)} with {self.workers} "
                        f"worker(s), at an assumed {self.rate:.2g} flop/s per worker "
                        "(an order of magnitude)")
        text += [f"Warning: {w}" for w in self.warnings]
        if self.refusal:
            text.append(f"Refused: {self.refusal}")
        return text

    def as_dict(self):
        return {"trials": self.trials, "flops": self.flops, "memory_bytes": self.memory_bytes,
                "seconds": self.seconds, "workers": self.workers, "trial_bytes": self.trial_bytes}

    def enforce(self, stacklevel=3):
        """Raise :class:`SweepTooLargeError` for a refusal; warn (one line each) otherwise."""
        if self.refusal:
            raise SweepTooLargeError(self.refusal, self.as_dict())
        for text in self.warnings:
            warnings.warn(text, SweepWarning, stacklevel=stacklevel + 1)


def _smaller(sweep):
    """The advice of a refusal for memory: lower what sets a trial's size, as the sweep names
    it (``size_names``), or "smaller problems" when it names nothing."""
    names = sweep.size_names
    if not names:
        return "smaller problems"
    return "lower " + (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1])


def _estimate(sweep, workers, costs=None, *, time=True, other=True):
    """The work, memory and time of a sweep, and whether it fits.

    Refused: more than :data:`MAX_TRIALS` trials; an estimated memory above the machine's
    physical memory (the records, plus the heaviest trial per worker with ``memory_fn``); an
    estimated time above a year.  Warned: memory above half the physical memory; time above
    a day.  ``workers=None`` (a scheduler not yet reached) or no
    ``cost_fn`` gives no time estimate.  ``time`` / ``other`` select which checks are made.
    """
    n_cells, n_trials = len(sweep.cells), sweep.n_trials
    total = n_cells * n_trials
    name = f"sweep {sweep.name!r}"
    records_memory = float(total) * _BYTES_PER_TRIAL
    trial_memory = _cell_costs(sweep, "memory_fn")
    trial_bytes = None if trial_memory is None else max(trial_memory)
    local_trials = trial_bytes is not None and workers is not None  # not a remote cluster's
    memory = records_memory + (trial_bytes * workers if local_trials else 0.0)
    if costs is None:
        costs = _cell_costs(sweep)
    flops = None if costs is None else float(sum(costs)) * n_trials
    seconds = None
    rate = _flop_rate(sweep)
    if flops is not None and workers:
        seconds = flops / (rate * workers)
    notes, refusal = [], None
    if other:
        physical = _physical_memory()
        what = (f"its {total} trials' records" if not local_trials else
                f"its {total} trials' records and {workers} worker(s) running a trial of up "
                f"to {_size(trial_bytes)}")
        if total > MAX_TRIALS:
            refusal = (f"{name} has {n_cells} cells x {n_trials} trials = {total:.3g} trials, "
                       f"more than the engine's limit of {MAX_TRIALS:.0e} (every record is "
                       f"held in memory: about {_size(records_memory)}); use fewer trials or cells")
        elif physical and local_trials and trial_bytes > physical:
            refusal = (f"one trial of {name} needs about {_size(trial_bytes)} of memory, more than "
                       f"this machine's {_size(physical)}; "
                       + (_smaller(sweep) if sweep.size_names else "use smaller problems"))
        elif physical and memory > physical:
            refusal = (f"{name} needs about {_size(memory)} of memory for {what}, more than "
                       f"this machine's {_size(physical)}; use fewer trials, cells, workers or "
                       + (_smaller(sweep) if local_trials else "smaller problems"))
        elif physical and memory > _WARN_MEMORY_FRACTION * physical:
            notes.append(f"{name} needs about {_size(memory)} of memory for {what}, more than "
                         f"half of this machine's {_size(physical)}")
    if time and refusal is None and seconds is not None:
        if seconds > _MAX_SECONDS:
            refusal = (f"{name} would take about {_duration(seconds)} with {workers} worker(s) "
                       f"({flops:.3g} flops at an assumed {rate:.2g} flop/s per "
                       "worker); reduce the trials, the grid or the problem sizes")
        elif seconds > _WARN_SECONDS:
            notes.append(f"{name} may take about {_duration(seconds)} with {workers} worker(s) "
                         f"({flops:.3g} flops at an assumed {rate:.2g} flop/s per "
                         "worker); finished chunks are kept if it is interrupted")
    return _Estimate(trials=total, flops=flops, memory_bytes=memory, seconds=seconds,
                     workers=workers, warnings=tuple(notes), refusal=refusal,
                     trial_bytes=trial_bytes, rate=rate)


# --------------------------------------------------------------------------- running


def _check_run_arguments(sweep, jobs, scheduler, dask_local, overwrite, new_dir, progress,
                         kernel_threads, connect_timeout):
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
    if (isinstance(connect_timeout, bool) or not isinstance(connect_timeout, (int, float))
            or not math.isfinite(connect_timeout) or connect_timeout <= 0):
        raise ValueError(f"connect_timeout must be a finite number of seconds > 0, "
                         f"got {connect_timeout!r}")
    return jobs, dask_local, kernel_threads


def run_sweep(sweep, outdir, *, jobs=1, scheduler=None, dask_local=None, overwrite=False,
              new_dir=False, progress=None, kernel_threads=None, connect_timeout=30.0):
    """Run (or resume) a sweep, writing its results directory, and return the results.

    Parameters
    ----------
    sweep : Sweep
    outdir : str or path-like
        Results directory; created if needed.  If it holds the same sweep, finished chunks
        are loaded and only missing trials run.
    jobs : int, default=1
        Local worker processes (joblib's loky backend).  ``1`` runs in this process.  More
        than the machine's cores is capped at the cores, with a :class:`SweepWarning`.
    scheduler : str, optional
        Address of a running Dask scheduler (``"tcp://host:port"``); runs through joblib's
        dask backend on that cluster.  ``mixreg`` and the trial function's module must be
        importable on the workers.
    dask_local : int, optional
        Start a ``distributed.LocalCluster`` with this many single-threaded worker processes
        on 127.0.0.1 (no dashboard) for the duration of the run; capped at the cores like
        ``jobs``.
    overwrite : bool, default=False
        Delete this engine's files in ``outdir`` (manifest, CSVs, chunk files) first.
    new_dir : bool, default=False
        If ``outdir`` exists and is not empty, write into the first free ``<outdir>-2``,
        ``<outdir>-3``, ... instead.  :attr:`SweepResult.outdir` tells which.
    progress : bool, optional
        Show a tqdm progress bar on stderr.  ``None``: only when stderr is a terminal.
    kernel_threads : int, optional
        BLAS/OpenMP and numba threads per task.  ``None`` (default) means 1, in every
        backend: in the workers of ``jobs > 1`` and Dask, and for ``jobs == 1`` too, where
        the trials run under a threadpoolctl limit that is restored afterwards.  This is what
        makes the records bit-identical whatever the backend and the number of workers:
        multi-threaded BLAS reductions (long dot products, large matrix-vector products) and
        numba ``prange`` reductions round differently with another thread count.  Passing a
        number above 1 is an explicit opt-out: it may be faster with fewer workers than
        cores, but **breaks bit-identity** with runs under any other setting (a resumed
        directory that mixes settings says so with a :class:`SweepWarning`).
    connect_timeout : float, default=30
        Seconds to wait for ``scheduler`` to answer before giving up with an ``OSError``.

    Returns
    -------
    SweepResult

    Raises
    ------
    ConfigMismatchError
        ``outdir`` holds a sweep with a different identity (and neither ``overwrite`` nor
        ``new_dir`` was given).
    SweepTooLargeError
        The sweep cannot fit (before anything is written): more than :data:`MAX_TRIALS`
        trials, an estimated memory above the machine's, or an estimated time above a year
        (from ``cost_fn``).  A memory above half the machine's or a time above a day is a
        :class:`SweepWarning`; :func:`dry_run` shows the estimate.
    DirectoryBusyError
        Another live run holds ``outdir``'s lock.
    ResultsDirectoryError
        ``outdir`` cannot be created or written (an ``OSError``).
    OSError
        ``scheduler`` did not answer within ``connect_timeout``.
    SweepInterrupted
        A ``KeyboardInterrupt`` during the run, with the number of trials kept on disk.
    SweepTerminated
        SIGTERM during the run (a :class:`SweepInterrupted`): called from the main thread
        with SIGTERM's default action in place, the run handles SIGTERM as Ctrl-C (see
        :func:`raise_on_sigterm`) instead of dying on the spot.  Either way the worker
        processes are stopped and the manifest says ``interrupted``.
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
        sweep, jobs, scheduler, dask_local, overwrite, new_dir, progress, kernel_threads,
        connect_timeout)
    jobs = _cap_workers("jobs", jobs)
    dask_local = _cap_workers("dask_local", dask_local)
    costs = _cell_costs(sweep)
    workers = None if scheduler is not None else (dask_local or jobs)
    _estimate(sweep, workers, costs).enforce()
    outdir = _resolve_outdir(outdir, new_dir)
    created = not outdir.exists()
    _make_outdir(outdir)
    total = len(sweep.cells) * sweep.n_trials
    done = {}
    try:
        with raise_on_sigterm(), _directory_lock(outdir):
            return _run_locked(sweep, outdir, done, costs, jobs, scheduler, dask_local,
                               overwrite, progress, kernel_threads, connect_timeout)
    except BaseException as exc:
        if created:  # refused before writing anything (a scheduler that does not answer, ...)
            with contextlib.suppress(OSError):
                outdir.rmdir()  # only if still empty
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, SweepInterrupted):
            stopped = SweepTerminated if isinstance(exc, Terminated) else SweepInterrupted
            raise stopped(outdir, len(done), total) from exc
        raise


def _run_locked(sweep, outdir, done, costs, jobs, scheduler, dask_local, overwrite, progress,
                kernel_threads, connect_timeout):
    chunk_dir = outdir / CHUNK_DIR_NAME
    previous = _prepare_directory(outdir, sweep, overwrite)
    loaded, failures, thread_settings, n_loaded = _load_chunks(chunk_dir, sweep)
    done.update(loaded)
    environment = provenance.environment_record(exclude=(outdir,))  # the results are data, not code
    if previous is not None:
        _warn_version_change(previous, environment)
    with _open_backend(jobs, scheduler, dask_local, kernel_threads, connect_timeout) as backend:
        if scheduler is not None:  # the workers are known now
            _estimate(sweep, backend.workers, costs, other=False).enforce(stacklevel=4)
        backend.prepare(sweep)
        chunk_dir.mkdir(exist_ok=True)
        chunk_size = sweep.chunk_size or _auto_chunk_size(
            len(sweep.cells), sweep.n_trials, backend.workers, _heaviest_trial_seconds(sweep, costs))
        plan = _Plan(sweep, done, chunk_size, costs)
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
            "tasks_planned": len(plan),
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
            _execute(sweep, backend, plan, chunk_dir, done, failures, thread_settings,
                     run_info, progress)
        except BaseException as exc:
            run_info.update(status="interrupted", finished=provenance.utc_now(),
                            error=f"{type(exc).__name__}: {exc}")
            manifest["status"] = "interrupted"
            with contextlib.suppress(Exception):
                _write_manifest(outdir, manifest)
            raise
    return _finish(sweep, outdir, manifest, run_info, done, failures, thread_settings)


def _progress_columns(fp):
    """``(columns, rows)`` for tqdm: the terminal's, or 80 x 24 when it reports none (0)."""
    try:
        size = os.get_terminal_size(fp.fileno())
        columns, rows = size.columns, size.lines
    except (AttributeError, OSError, ValueError):
        columns, rows = 0, 0
    if columns <= 1:
        try:
            columns = int(os.environ.get("COLUMNS", ""))
        except ValueError:
            columns = 0
        columns = columns if columns > 1 else 80
    return columns - 1, max(rows - 1, 1) if rows > 1 else 23


def _progress_bar(total, initial, desc, show):
    from tqdm import tqdm

    ncols, nrows = _progress_columns(sys.stderr)
    bar = tqdm(total=total, initial=initial, unit="trial", desc=desc, disable=not show,
               file=sys.stderr, ncols=ncols, nrows=nrows, mininterval=0.5)
    if show:
        bar.dynamic_ncols = _progress_columns  # follows resizes; never 0 columns
    return bar


def _execute(sweep, backend, tasks, chunk_dir, done, failures, thread_settings, run_info,
             progress):
    total = len(sweep.cells) * sweep.n_trials
    per_cell = [0] * len(sweep.cells)
    for ci, _ in done:
        per_cell[ci] += 1
    cells_done = sum(1 for c in per_cell if c == sweep.n_trials)
    show = sys.stderr.isatty() if progress is None else progress
    bar = _progress_bar(total, len(done), sweep.name, show)
    with bar:
        bar.set_postfix_str(f"cells {cells_done}/{len(sweep.cells)}")
        if not run_info["tasks_planned"]:
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
    manifest["checksums"].update({path.name: file_checksum(path) for path in (trials_csv, summary_csv)})
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
            f"{sorted(map(str, thread_settings))} (a run resumed with another kernel_threads "
            "or from an earlier version); multi-threaded reductions may differ in the last "
            "bits from an uninterrupted run. Rerun with overwrite=True for bit-identical "
            "results.", SweepWarning, stacklevel=4)
    if failure_list:
        first = failure_list[0]
        message = (f"{len(failure_list)} of {len(records)} trials of sweep {sweep.name!r} "
                   f"raised; first: cell {first['cell']} {first['params']} trial "
                   f"{first['trial']}: {first['error']}. See SweepResult.failures or "
                   f"'{outdir / MANIFEST_NAME}'; replay one with "
                   "mixreg.montecarlo.replay_trial(sweep, cell, trial).")
        logger.info(message)
        warnings.warn(message, TrialsFailedWarning, stacklevel=4)
    return SweepResult(outdir=outdir, records=records, failures=failure_list,
                       manifest=manifest, trials_csv=trials_csv, summary_csv=summary_csv,
                       summary=summary)


# --------------------------------------------------------------------------- utilities


def replay_trial(sweep, cell, trial, *, kernel_threads=1):
    """Run one trial of ``sweep`` in this process and return ``trial_fn``'s output.

    Exceptions propagate, so a failed trial can be debugged (``python -m pdb``, breakpoints).
    The kernels run with the engine's thread limits (one BLAS/OpenMP and one numba thread by
    default, restored afterwards), so the output equals the trial's record field for field:
    multi-threaded BLAS rounds long products differently.  As for the engine's in-process runs,
    the limit reaches the BLAS libraries loaded when the replay starts; a trial that loads one
    for the first time (scipy's own OpenBLAS, say) runs it with its default threads, so import
    the modules the trial uses before replaying it.

    Parameters
    ----------
    sweep : Sweep
    cell : int
        Cell index (the ``cell`` column of a record or failure).
    trial : int
        Trial index.
    kernel_threads : int or None, default=1
        The run's ``kernel_threads`` (its manifest records it per run); ``None`` leaves the
        thread limits as they are.
    """
    cell = check_int("cell", cell, low=0, high=len(sweep.cells) - 1)
    trial = check_int("trial", trial, low=0)
    if kernel_threads is not None:
        kernel_threads = check_int("kernel_threads", kernel_threads, low=1)
    params = sweep.cells[cell]
    with _kernel_threads(kernel_threads, True):
        return sweep.function()(dict(params), trial_seed(sweep.root_seed, params, trial))


def _dry_run_workers(jobs, warn=True):
    if jobs is None:
        return None
    jobs = check_int("jobs", jobs, low=1)
    return _cap_workers("workers", jobs) if warn else min(jobs, _available_cores())


def check_fits(sweep, *, jobs=1):
    """Refuse a sweep that cannot fit; return the warnings about one that may not.

    The checks :func:`run_sweep` makes before writing anything (see its ``Raises``): more
    than :data:`MAX_TRIALS` trials or an estimated memory above the machine's is refused; an
    estimated time above a year (from ``cost_fn``, at an assumed speed per worker) is
    refused; memory above half the machine's or time above a day is a warning.

    Parameters
    ----------
    sweep : Sweep
    jobs : int or None, default=1
        Workers the run will have (capped at the machine's cores); ``None`` when unknown (a
        Dask scheduler), which skips the time estimate.

    Returns
    -------
    warnings : list of str
        One line each; empty when the sweep fits comfortably.

    Raises
    ------
    SweepTooLargeError
        With a one-line message giving the estimate.
    """
    if not isinstance(sweep, Sweep):
        raise TypeError(f"sweep must be a mixreg.montecarlo.Sweep, got {type(sweep).__name__}")
    estimate = _estimate(sweep, _dry_run_workers(jobs, warn=False))
    if estimate.refusal:
        raise SweepTooLargeError(estimate.refusal, estimate.as_dict())
    return list(estimate.warnings)


def dry_run(sweep, *, jobs=1):
    """Describe a sweep without running it: grid, tasks, and an estimate of work, memory, time.

    Parameters
    ----------
    sweep : Sweep
    jobs : int or None, default=1
        Number of workers assumed for the automatic chunk size, the work per worker and the
        time (capped at the machine's cores); ``None`` when unknown (a Dask scheduler).

    Returns
    -------
    text : str
        Human-readable description; mentions the number of tasks, the estimated memory and
        time, and a ``Warning:`` or ``Refused:`` line when :func:`check_fits` would warn or
        refuse.  The grid is described per parameter, without listing a large grid's cells.
    """
    if not isinstance(sweep, Sweep):
        raise TypeError(f"sweep must be a mixreg.montecarlo.Sweep, got {type(sweep).__name__}")
    workers = _dry_run_workers(jobs)
    n_cells, n_trials = len(sweep.cells), sweep.n_trials
    per_worker = workers or 1
    costs = _cell_costs(sweep)
    chunk_size = sweep.chunk_size or _auto_chunk_size(n_cells, n_trials, per_worker,
                                                      _heaviest_trial_seconds(sweep, costs))
    chunk_source = ("set by the sweep" if sweep.chunk_size
                    else f"automatic for {per_worker} worker(s)")
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
    if costs is None:
        lines.append("Estimated work: unknown (the sweep has no cost_fn)")
    else:
        total = sum(costs) * n_trials
        heaviest = int(np.argmax(costs))
        split = ("" if workers is None else
                 f", {total / workers:.3g} per worker with {workers} worker(s)")
        lines.append(f"Estimated work: {total:.3g} flops in total{split}; heaviest cell "
                     f"{heaviest} {sweep.cells[heaviest]}: {costs[heaviest]:.3g} flops per trial")
    lines += _estimate(sweep, workers, costs).lines()
    if n_cells <= 50:
        lines.append("Cells:")
        for i, cell in enumerate(sweep.cells):
            cost = "" if costs is None else f"  ({costs[i] * n_trials:.3g} flops)"
            lines.append(f"  {i:5d}  {cell}{cost}")
    return "\n".join(lines)
