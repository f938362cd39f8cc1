"""Running a sweep: planning its tasks, running them, the result (the sweep itself is in ``_spec``,
its estimates in ``_fits``)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import pathlib
from typing import Any
import warnings

import numpy as np

from mixreg import provenance
from mixreg.validation import check_int
from mixreg.montecarlo._backends import SCHEDULER_ADDRESS, _kernel_threads, _open_backend
from mixreg.montecarlo._cells import trial_seed
from mixreg.montecarlo._errors import (
    SweepInterrupted,
    SweepTerminated,
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
    _chunk_name,
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
)
from mixreg.montecarlo._fits import (
    _auto_chunk_size,
    _cap_workers,
    _cell_costs,
    _estimate,
    _heaviest_trial_seconds,
)
from mixreg.montecarlo._progress import cold_kernels_notice, open_progress
from mixreg.montecarlo._spec import Sweep, _function_name
from mixreg.montecarlo._tables import _column_types, _columns, _csv_text, _summarise

logger = logging.getLogger("mixreg.montecarlo")


# --------------------------------------------------------------------------- the result


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

    def column(self, name: str) -> np.ndarray:
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
        if not isinstance(scheduler, str) or not SCHEDULER_ADDRESS.match(scheduler):
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


def run_sweep(sweep: Sweep, outdir: str | os.PathLike[str], *, jobs: int | None = 1, scheduler: str | None = None,
              dask_local: int | None = None, overwrite: bool = False, new_dir: bool = False,
              progress: bool | None = None, kernel_threads: int | None = None,
              connect_timeout: float = 30.0) -> SweepResult:
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
        What the run shows while it runs.  ``None`` (default): in Jupyter with ``ipywidgets``
        a progress widget (``tqdm.auto``); where stderr is a terminal a tqdm bar on it;
        anywhere else (a notebook without ``ipywidgets``, output redirected to a file, a batch
        job) plain lines on stderr, one when the run starts, then one a minute
        (``mixreg.montecarlo._progress.LOG_INTERVAL`` seconds) while it runs, even while no
        chunk finishes, and one at the end, such as
        ``success_vs_R quick: 1,200/4,800 trials (25%), 3.1 trials/s, ETA 19 min``.
        ``True``: the bar (or widget) even where stderr is not a terminal.  ``False``:
        nothing, not even the line ``compiling kernels (first run only) ...`` written before
        the workers start when the Numba kernels the trials reach are not in Numba's cache
        yet.  Whatever is shown, the records are the same.
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
    done: dict[Any, Any] = {}
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
    code = sweep.code()
    previous = _prepare_directory(outdir, sweep, overwrite, code)
    loaded, failures, thread_settings, n_loaded = _load_chunks(chunk_dir, sweep)
    done.update(loaded)
    environment = provenance.environment_record(exclude=(outdir,))  # the results are data, not code
    if previous is not None:
        _warn_version_change(previous, environment)
    with _open_backend(jobs, scheduler, dask_local, kernel_threads, connect_timeout) as backend:
        if scheduler is not None:  # the workers are known now
            _estimate(sweep, backend.workers, costs, other=False).enforce(stacklevel=4)
        backend.prepare(sweep, code)
        if progress is not False and scheduler is None:  # a remote cluster's cache is not ours
            cold_kernels_notice(sweep, code)
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
        manifest = _new_manifest(sweep, previous, run_info, code)
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


def _label(sweep):
    """The sweep's name on its progress bar or lines, with its config's preset if it has one."""
    preset = sweep.config.get("preset") if isinstance(sweep.config, dict) else None
    return f"{sweep.name} {preset}" if isinstance(preset, str) and preset else sweep.name


def _execute(sweep, backend, tasks, chunk_dir, done, failures, thread_settings, run_info,
             progress):
    total = len(sweep.cells) * sweep.n_trials
    per_cell = [0] * len(sweep.cells)
    for ci, _ in done:
        per_cell[ci] += 1
    cells_done = sum(1 for c in per_cell if c == sweep.n_trials)
    if not run_info["tasks_planned"]:
        return
    with open_progress(total, len(done), _label(sweep), progress) as display:
        for ci, start, stop, results in backend.run(sweep, tasks):
            try:
                _write_chunk(chunk_dir, sweep.key, ci, sweep.cells[ci], start, stop, results,
                             backend.kernel_threads)
                _keep(done, failures, ci, results)
            except BaseException:
                # A signal after the chunk's atomic rename but before its records were counted:
                # the chunk is on disk and the rerun loads it, so it is among the trials kept.
                if (chunk_dir / _chunk_name(ci, start, stop)).exists():
                    _keep(done, failures, ci, results)
                raise
            thread_settings.add(backend.kernel_threads)
            run_info["chunks_computed"] += 1
            per_cell[ci] += stop - start
            if per_cell[ci] == sweep.n_trials:
                cells_done += 1
            display.update(stop - start, cells_done, len(sweep.cells))


def _keep(done, failures, ci, results):
    """Count a written chunk's records (and failures) among the run's; idempotent."""
    for record, failure in results:
        done[(ci, record["trial"])] = record
        if failure is not None:
            failures[(ci, record["trial"])] = failure


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


def replay_trial(sweep: Sweep, cell: int, trial: int, *, kernel_threads: int | None = 1) -> dict[str, Any]:
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
        trial_fn = sweep.function()
        assert trial_fn is not None  # a sweep always has its trial function
        return trial_fn(dict(params), trial_seed(sweep.root_seed, params, trial))
