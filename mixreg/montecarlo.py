"""Monte Carlo engine: run a grid of cells times trials, resumably and reproducibly.

A *sweep* is a grid of cells (one parameter combination each, a dict of scalars) times
``n_trials`` trials.  A trial is the unit of randomness: ``trial_fn(cell, seed)`` receives
its own :class:`numpy.random.SeedSequence` and returns a small dict of scalars.  Trials of a
cell are batched into chunks, the unit of work and of storage.

Guarantees
----------
Same numbers wherever it runs
    The seed of trial ``t`` of a cell depends only on the root seed, an exact, stable
    encoding of the cell's parameters and ``t`` (:func:`trial_seed`): not on the cell's
    position in the grid, the chunking, the backend or the process.  Adding a value to a grid
    leaves the records of the cells already there unchanged.  Parallel workers (loky
    processes, Dask workers) run their kernels with one BLAS thread and one numba thread,
    see ``kernel_threads`` in :func:`run_sweep` for the one caveat.
Never loses finished work
    Each finished chunk is written by the coordinating process to its own file under a
    temporary name, flushed to disk and renamed, so a kill at any moment leaves either the
    whole file or none.  Re-running the same call loads the finished chunks and computes
    only the missing trials.  A truncated or corrupted chunk file (checksum or record count)
    is reported with a :class:`SweepWarning` and recomputed.
Never mixes two configurations
    ``manifest.json`` holds the sweep's identity (name, trial function, root seed, number of
    trials, cells, config).  Running a different sweep into the same directory raises
    :class:`ConfigMismatchError`, naming the differing keys, unless ``overwrite=True`` (start
    fresh) or ``new_dir=True`` (write into ``<dir>-2``, ``<dir>-3``, ...).

Layout of a results directory::

    <outdir>/
        manifest.json            identity + provenance + runs + failures
        trials.csv               one row per (cell, trial), ordered by cell then trial
        summary.csv              one row per cell: counts and per-cell means
        chunks/
            cell00000_t000000-000050.json    records of trials [0, 50) of cell 0
            ...
        .lock                    held (flock) while a run writes into the directory

Examples
--------
>>> import numpy as np
>>> from mixreg.montecarlo import trial_seed
>>> ss = trial_seed(0, {"R": 1.5, "m": 10}, trial=3)
>>> ss.spawn_key
(3,)
>>> rng = np.random.default_rng(ss)  # what a trial function does with its seed
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import functools
import hashlib
import io
import json
import logging
import math
import numbers
import os
import pathlib
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Mapping

import numpy as np

from mixreg import provenance
from mixreg._validation import check_int

__all__ = [
    "trial_seed",
    "seed_from_record",
    "Sweep",
    "SweepResult",
    "run_sweep",
    "dry_run",
    "write_table",
    "replay_trial",
    "ConfigMismatchError",
    "SweepWarning",
]

logger = logging.getLogger(__name__)

FORMAT = "mixreg.montecarlo/1"
MANIFEST_NAME = "manifest.json"
TRIALS_CSV_NAME = "trials.csv"
SUMMARY_CSV_NAME = "summary.csv"
CHUNK_DIR_NAME = "chunks"
LOCK_NAME = ".lock"

#: Columns the engine adds to every record; a trial function may not return these names.
ENGINE_COLUMNS = ("cell", "trial", "wall_time", "seed_entropy", "error")

_SEED_DOMAIN = b"mixreg.trial_seed/1\n"
_CHUNK_RE = re.compile(r"^cell(\d+)_t(\d+)-(\d+)\.json$")
_TMP_RE = re.compile(r"^\.cell\d+_t\d+-\d+\.json\.\d+\.tmp$")
_MAX_AUTO_CHUNK = 50  # trials per task at most when chosen automatically (checkpoint grain)
_TASKS_PER_WORKER = 8  # automatic chunking aims for at least this many tasks per worker
_THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)
_SCHEDULER_RE = re.compile(r"^(tcp|tls|ucx|ws|wss|inproc)://\S+$")
_TRACEBACK_LIMIT = 4000  # characters of a failure's traceback kept in the manifest


class ConfigMismatchError(ValueError):
    """The results directory holds a sweep whose identity differs from the one requested.

    Attributes
    ----------
    directory : pathlib.Path
    keys : list of str
        Dotted paths of the differing entries (``"n_trials"``, ``"config.R_grid"``, ...).
    """

    def __init__(self, directory, keys):
        self.directory = pathlib.Path(directory)
        self.keys = list(keys)
        super().__init__(
            f"results directory '{self.directory}' holds a different sweep "
            f"(differing keys: {', '.join(self.keys)}); refusing to mix results of two "
            "configurations. Pass overwrite=True (--overwrite) to discard the old results, "
            "or new_dir=True (--new-dir) to write into a fresh sibling directory."
        )


class SweepWarning(UserWarning):
    """Something in a sweep needs the user's attention but did not stop it."""


# --------------------------------------------------------------------------- seeds


def _scalar(value):
    """``value`` as a plain Python bool/int/float/str, or raise TypeError."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"expected an int, float, bool or str scalar, got {type(value).__name__}")


def _canonical_cell(cell):
    """Exact, type-tagged, key-sorted JSON text of a cell (the input of its seed hash).

    Floats are encoded with ``float.hex`` (exact), and the type is part of the encoding, so
    ``1``, ``1.0`` and ``True`` are different cells.
    """
    items = []
    for key in sorted(cell):
        value = _scalar(cell[key])
        if isinstance(value, bool):
            encoded = ["bool", value]
        elif isinstance(value, int):
            encoded = ["int", str(value)]
        elif isinstance(value, float):
            encoded = ["float", value.hex()]
        else:
            encoded = ["str", value]
        items.append([str(key), encoded])
    return json.dumps(items, ensure_ascii=True, separators=(",", ":"))


def _cell_entropy(root_seed, cell):
    digest = hashlib.sha256(_SEED_DOMAIN + _canonical_cell(cell).encode("ascii")).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, len(digest), 4)]
    return [int(root_seed), *words]


def trial_seed(root_seed, cell, trial):
    """Return the seed sequence of one trial of one cell.

    .. math::

        \\text{seed}(r, c, t) = \\mathrm{SeedSequence}(\\text{entropy}=[r, w_0, \\dots, w_7],
        \\ \\text{spawn\\_key}=(t,))

    where :math:`w_0, \\dots, w_7` are the eight little-endian 32-bit words of the SHA-256
    of a canonical encoding of the cell (keys sorted, each value tagged with its type,
    floats written exactly with ``float.hex``).

    Parameters
    ----------
    root_seed : int
        Non-negative root seed of the sweep.
    cell : mapping of str to int, float, str or bool
        The cell's parameters.  Key order does not matter; value types do (``1`` and
        ``1.0`` are different cells).
    trial : int
        Non-negative trial index.

    Returns
    -------
    seed : numpy.random.SeedSequence
        Independent of the cell's position in a grid, of other cells, of the process and of
        the Python hash seed.

    Examples
    --------
    >>> a = trial_seed(1, {"R": 2.0, "m": 4}, 0)
    >>> b = trial_seed(1, {"m": 4, "R": 2.0}, 0)
    >>> bool((a.generate_state(4) == b.generate_state(4)).all())
    True
    """
    root_seed = check_int("root_seed", root_seed, low=0)
    trial = check_int("trial", trial, low=0)
    cell = _check_cell("cell", cell)
    return np.random.SeedSequence(_cell_entropy(root_seed, cell), spawn_key=(trial,))


def seed_from_record(record):
    """Return the seed sequence a record's trial ran with (from its ``seed_entropy``)."""
    entropy = json.loads(record["seed_entropy"])
    return np.random.SeedSequence(entropy, spawn_key=(int(record["trial"]),))


# --------------------------------------------------------------------------- the sweep


def _check_cell(name, cell):
    if not isinstance(cell, Mapping):
        raise TypeError(f"{name} must be a dict of scalars, got {type(cell).__name__}")
    out = {}
    for key, value in cell.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} keys must be strings, got {key!r}")
        try:
            out[key] = _scalar(value)
        except TypeError:
            raise TypeError(
                f"{name}[{key!r}] must be an int, float, str or bool scalar, "
                f"got {value!r} ({type(value).__name__})"
            ) from None
    return out


def _check_cells(cells):
    if isinstance(cells, Mapping) or isinstance(cells, (str, bytes)):
        raise TypeError("cells must be a sequence of dicts (one per grid cell), got a single "
                        f"{type(cells).__name__}")
    try:
        cells = list(cells)
    except TypeError:
        raise TypeError(f"cells must be a sequence of dicts, got {type(cells).__name__}") from None
    if not cells:
        raise ValueError("cells must contain at least one cell; the grid is empty")
    checked = [_check_cell(f"cells[{i}]", c) for i, c in enumerate(cells)]
    keys = list(checked[0])
    if not keys:
        raise ValueError("cells[0] has no parameters; a cell needs at least one key")
    clash = sorted(set(keys) & set(ENGINE_COLUMNS))
    if clash:
        raise ValueError(f"cell parameter names {clash} are reserved for engine columns "
                         f"{list(ENGINE_COLUMNS)}; rename them")
    seen = {}
    for i, cell in enumerate(checked):
        if set(cell) != set(keys):
            raise ValueError(f"cells must all have the same keys: cells[{i}] has "
                             f"{sorted(cell)} but cells[0] has {sorted(keys)}")
        canon = _canonical_cell(cell)
        if canon in seen:
            raise ValueError(f"cells[{i}] duplicates cells[{seen[canon]}] ({cell}); "
                             "identical cells would repeat the same random trials")
        seen[canon] = i
    return tuple({k: cell[k] for k in keys} for cell in checked)


def _json_default(obj):
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serialisable")


def _normalise_json(name, obj):
    """``obj`` after a JSON round trip (tuples -> lists, numpy scalars -> Python)."""
    try:
        text = json.dumps(obj, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be JSON-serialisable: {exc}") from None
    return json.loads(text)


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
        Grid cells, dicts of scalars with identical keys.  Stored as a tuple of dicts with
        plain Python values, every cell in the key order of the first.
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
        For an empty grid, cells with differing keys or non-scalar values, duplicate cells,
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
        or is imported (``python -m``, tests).
        """
        return {
            "name": self.name,
            "trial_fn": getattr(self.trial_fn, "__qualname__", repr(self.trial_fn)),
            "root_seed": self.root_seed,
            "n_trials": self.n_trials,
            "cells": [dict(c) for c in self.cells],
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
        same keys, in the column order of ``trials.csv``: the cell's parameters, ``cell``,
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

        Bool columns give a bool array, integer columns int64, numeric columns float64 and
        anything else a str array.  A bool or numeric column with missing values (failed
        trials) gives float64 with NaN there; a str column gives ``""`` there.
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
        return np.array(["" if v is None else str(v) for v in values], dtype=str)


# --------------------------------------------------------------------------- trials


def _run_trial(trial_fn, root_seed, cell_index, cell, trial):
    """Run one trial; never raises for an exception of the trial function."""
    entropy = _cell_entropy(root_seed, cell)
    seed = np.random.SeedSequence(entropy, spawn_key=(trial,))
    failure = None
    start = time.perf_counter()
    try:
        fields = _check_trial_output(trial_fn(dict(cell), seed), cell)
        error = ""
    except Exception as exc:  # noqa: BLE001 - a failing trial is data, the sweep goes on
        fields = {}
        error = f"{type(exc).__name__}: {exc}"
        failure = {
            "cell": cell_index,
            "trial": trial,
            "params": dict(cell),
            "seed_entropy": entropy,
            "spawn_key": [trial],
            "error": error,
            "traceback": traceback.format_exc()[-_TRACEBACK_LIMIT:],
        }
    wall_time = time.perf_counter() - start
    record = {**cell, "cell": cell_index, "trial": trial, **fields,
              "wall_time": wall_time, "seed_entropy": json.dumps(entropy), "error": error}
    return record, failure


def _check_trial_output(out, cell):
    if not isinstance(out, Mapping):
        raise TypeError(f"trial_fn must return a dict of scalars, got {type(out).__name__}")
    fields = {}
    for key, value in out.items():
        if not isinstance(key, str):
            raise TypeError(f"trial_fn returned a non-string key {key!r}")
        if key in ENGINE_COLUMNS or key in cell:
            raise ValueError(f"trial_fn returned key {key!r}, which is reserved for an engine "
                             "column or a cell parameter; rename it")
        try:
            fields[key] = _scalar(value)
        except TypeError:
            raise TypeError(f"trial_fn returned {key}={value!r} ({type(value).__name__}); "
                            "values must be int, float, bool or str scalars") from None
    return fields


def _run_chunk(trial_fn, root_seed, cell_index, cell, start, stop, kernel_threads, restore):
    """Run trials ``[start, stop)`` of one cell: the task shipped to workers."""
    with _kernel_threads(kernel_threads, restore):
        results = [_run_trial(trial_fn, root_seed, cell_index, cell, t) for t in range(start, stop)]
    return cell_index, start, stop, results


@contextlib.contextmanager
def _kernel_threads(n, restore):
    """Limit BLAS/OpenMP (threadpoolctl) and numba to ``n`` threads; ``None`` = no limit.

    In worker processes ``restore`` is False: the limit stays for the life of the worker,
    which is dedicated to the sweep (restoring could race with a concurrent task on a
    multi-threaded Dask worker).  In-process runs restore the previous limits afterwards.
    The call is repeated per task, so BLAS libraries loaded by an earlier task (scipy's own
    OpenBLAS, say) are limited too.
    """
    if n is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    limiter = threadpool_limits(limits=n)
    numba_before = None
    try:
        import numba
    except ImportError:  # pragma: no cover - numba is a dependency
        numba = None
    if numba is not None:
        numba_before = numba.get_num_threads()
        numba.set_num_threads(max(1, min(n, numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        if restore:
            limiter.restore_original_limits()
            if numba is not None:
                numba.set_num_threads(numba_before)


# --------------------------------------------------------------------------- chunk files


def _chunk_name(cell_index, start, stop):
    return f"cell{cell_index:05d}_t{start:06d}-{stop:06d}.json"


def _checksum(records, failures):
    text = json.dumps({"records": records, "failures": failures}, sort_keys=True,
                      separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write_atomic(path, text):
    """Write ``text`` to ``path`` so that readers see the old file, or all of the new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _write_chunk(chunk_dir, sweep_key, cell_index, cell, start, stop, results, kernel_threads):
    records = [r for r, _ in results]
    failures = [f for _, f in results if f is not None]
    payload = {
        "format": FORMAT,
        "sweep_key": sweep_key,
        "cell_index": cell_index,
        "cell": cell,
        "trial_start": start,
        "trial_stop": stop,
        "n_records": len(records),
        "kernel_threads": kernel_threads,
        "written": provenance.utc_now(),
        "checksum": _checksum(records, failures),
        "records": records,
        "failures": failures,
    }
    _write_atomic(chunk_dir / _chunk_name(cell_index, start, stop), json.dumps(payload))


def _read_chunk(path, sweep):
    """Return ``(cell_index, records, failures, kernel_threads)`` or raise ValueError(reason)."""
    match = _CHUNK_RE.match(path.name)
    cell_index, start, stop = (int(g) for g in match.groups())
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable ({type(exc).__name__}: {exc}); truncated or corrupted")
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError("not a chunk file of this format")
    if payload.get("sweep_key") != sweep.key:
        raise ValueError("written by a different sweep")
    if not (0 <= cell_index < len(sweep.cells)) or payload.get("cell_index") != cell_index:
        raise ValueError("cell index out of the grid or inconsistent with the file name")
    if _canonical_cell(payload.get("cell", {})) != _canonical_cell(sweep.cells[cell_index]):
        raise ValueError("cell parameters differ from the grid's")
    if (payload.get("trial_start"), payload.get("trial_stop")) != (start, stop) or not (
        0 <= start < stop <= sweep.n_trials
    ):
        raise ValueError("trial range out of bounds or inconsistent with the file name")
    records, failures = payload.get("records"), payload.get("failures")
    if not isinstance(records, list) or not isinstance(failures, list):
        raise ValueError("records or failures missing")
    if payload.get("n_records") != stop - start or len(records) != stop - start:
        raise ValueError(f"holds {len(records)} records, expected {stop - start}")
    if payload.get("checksum") != _checksum(records, failures):
        raise ValueError("checksum mismatch; corrupted")
    if [r.get("trial") for r in records] != list(range(start, stop)):
        raise ValueError("trial indices do not match the file's range")
    return cell_index, records, failures, payload.get("kernel_threads")


def _load_chunks(chunk_dir, sweep):
    """Load every valid chunk file; warn about and delete the invalid ones."""
    done, failures, thread_settings, n_files = {}, {}, set(), 0
    if not chunk_dir.is_dir():
        return done, failures, thread_settings, n_files
    for path in sorted(chunk_dir.iterdir()):
        if _TMP_RE.match(path.name):  # left by a run killed mid-write
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        if not _CHUNK_RE.match(path.name):
            continue
        try:
            cell_index, records, chunk_failures, threads = _read_chunk(path, sweep)
        except ValueError as exc:
            warnings.warn(f"chunk file '{path}' is {exc}; its trials will be recomputed",
                          SweepWarning, stacklevel=3)
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        n_files += 1
        thread_settings.add(threads)
        failure_of = {f.get("trial"): f for f in chunk_failures}
        for record in records:
            key = (cell_index, record["trial"])
            if key in done:  # overlapping chunks (the chunk size changed): keep the first
                continue
            done[key] = record
            if record["trial"] in failure_of:
                failures[key] = failure_of[record["trial"]]
    return done, failures, thread_settings, n_files


# --------------------------------------------------------------------------- directory


def _resolve_outdir(outdir, new_dir):
    outdir = pathlib.Path(os.path.expanduser(os.fspath(outdir)))
    if not new_dir or not outdir.exists() or (outdir.is_dir() and not any(outdir.iterdir())):
        return outdir
    k = 2
    while True:
        candidate = outdir.with_name(f"{outdir.name}-{k}")
        if not candidate.exists():
            return candidate
        k += 1


@contextlib.contextmanager
def _directory_lock(outdir):
    """Hold an exclusive flock on ``outdir/.lock``; released by the OS even on SIGKILL."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no locking
        yield
        return
    path = outdir / LOCK_NAME
    created = not path.exists()
    fh = open(path, "a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(f"another process is running a sweep into '{outdir}'; wait for "
                               "it to finish or choose another directory") from None
        except OSError:  # filesystem without locks: proceed unlocked
            pass
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield
    finally:
        fh.close()
        if created and not (outdir / MANIFEST_NAME).exists():  # refused: leave no litter
            with contextlib.suppress(OSError):
                path.unlink()


def _remove_own_files(outdir):
    for name in (MANIFEST_NAME, TRIALS_CSV_NAME, SUMMARY_CSV_NAME):
        with contextlib.suppress(FileNotFoundError):
            (outdir / name).unlink()
    chunk_dir = outdir / CHUNK_DIR_NAME
    if chunk_dir.is_dir():
        for path in chunk_dir.iterdir():
            if _CHUNK_RE.match(path.name) or _TMP_RE.match(path.name):
                path.unlink()


def _diff_keys(old, new, prefix=""):
    if isinstance(old, dict) and isinstance(new, dict):
        keys = []
        for key in list(old) + [k for k in new if k not in old]:
            path = f"{prefix}{key}"
            if key not in old or key not in new:
                keys.append(path)
            else:
                keys.extend(_diff_keys(old[key], new[key], path + "."))
        return keys
    same = json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)
    return [] if same else [prefix.rstrip(".") or "(root)"]


def _prepare_directory(outdir, sweep, overwrite):
    """Check or reset ``outdir``; return the previous manifest (None when starting fresh)."""
    manifest_path = outdir / MANIFEST_NAME
    entries = [p for p in outdir.iterdir() if p.name != LOCK_NAME]
    if overwrite:
        _remove_own_files(outdir)
        return None
    if not manifest_path.exists():
        if entries:
            raise ValueError(
                f"results directory '{outdir}' is not empty and holds no {MANIFEST_NAME}, so "
                "it is not a mixreg sweep directory; choose another directory, or pass "
                "overwrite=True (--overwrite) to write the sweep into it anyway"
            )
        return None
    try:
        previous = json.loads(manifest_path.read_text(encoding="utf-8"))
        old_identity = previous["sweep"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigMismatchError(outdir, [f"{MANIFEST_NAME} (unreadable)"]) from None
    keys = _diff_keys(old_identity, sweep.identity)
    if previous.get("format") != FORMAT:
        keys.insert(0, "format")
    if keys:
        raise ConfigMismatchError(outdir, keys)
    return previous


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


# --------------------------------------------------------------------------- backends


class _Backend:
    """Runs chunk tasks and yields ``(cell_index, start, stop, results)`` as they finish."""

    name = "serial"
    workers = 1
    kernel_threads = None
    info = {}

    def run(self, sweep, tasks):
        for ci, start, stop in tasks:
            yield _run_chunk(sweep.trial_fn, sweep.root_seed, ci, sweep.cells[ci], start,
                             stop, self.kernel_threads, True)


class _JoblibBackend(_Backend):
    def __init__(self, name, workers, kernel_threads, config, info=None):
        self.name, self.workers, self.kernel_threads = name, workers, kernel_threads
        self._config, self.info = config, info or {}

    def run(self, sweep, tasks):
        from joblib import Parallel, delayed, parallel_config

        calls = (
            delayed(_run_chunk)(sweep.trial_fn, sweep.root_seed, ci, sweep.cells[ci], start,
                                stop, self.kernel_threads, False)
            for ci, start, stop in tasks
        )
        with parallel_config(**self._config):
            parallel = Parallel(return_as="generator_unordered", batch_size=1)
            yield from parallel(calls)


@contextlib.contextmanager
def _open_backend(jobs, scheduler, dask_local, kernel_threads):
    if scheduler is None and dask_local is None:
        if jobs == 1:
            backend = _Backend()
            backend.kernel_threads = kernel_threads
            backend.name = "serial (in-process)"
            yield backend
            return
        threads = 1 if kernel_threads is None else kernel_threads
        config = {"backend": "loky", "n_jobs": jobs, "inner_max_num_threads": threads}
        yield _JoblibBackend(f"loky ({jobs} processes)", jobs, threads, config)
        return

    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ImportError("scheduler/dask_local need dask.distributed: "
                          "pip install 'dask[distributed]'") from None
    threads = 1 if kernel_threads is None else kernel_threads
    with contextlib.ExitStack() as stack:
        if dask_local is not None:
            env = {var: str(threads) for var in _THREAD_ENV_VARS}
            cluster = stack.enter_context(LocalCluster(
                n_workers=dask_local, threads_per_worker=1, processes=True,
                host="127.0.0.1", dashboard_address=None, silence_logs=logging.ERROR,
                env=env,
            ))
            client = stack.enter_context(Client(cluster, set_as_default=False))
            name = f"dask LocalCluster ({dask_local} workers on 127.0.0.1)"
        else:
            try:
                client = stack.enter_context(Client(scheduler, set_as_default=False))
            except OSError as exc:
                raise OSError(f"could not connect to the Dask scheduler at {scheduler!r}: "
                              f"{exc}") from None
            name = f"dask ({scheduler})"
        nthreads = client.nthreads()
        workers = max(1, sum(nthreads.values()))
        info = {"dask_workers": len(nthreads), "dask_threads": sum(nthreads.values())}
        info["worker_packages"] = _check_worker_versions(client)
        config = {"backend": "dask", "client": client, "n_jobs": -1}
        yield _JoblibBackend(name, workers, threads, config, info)


def _check_worker_versions(client):
    """Package versions of the Dask workers; warn when they differ from this process's."""
    try:
        per_worker = client.run(provenance.package_versions)
    except Exception as exc:  # noqa: BLE001 - informational only
        return f"unknown ({type(exc).__name__}: {exc})"
    local = provenance.package_versions()
    distinct = {json.dumps(v, sort_keys=True) for v in per_worker.values()}
    for text in distinct:
        versions = json.loads(text)
        differing = sorted(k for k in local if versions.get(k) != local[k])
        if differing:
            detail = ", ".join(f"{k} {local[k]} here vs {versions.get(k)}" for k in differing)
            warnings.warn(f"Dask workers run different package versions ({detail}); results "
                          "may differ from a local run", SweepWarning, stacklevel=4)
    return [json.loads(t) for t in sorted(distinct)]


# --------------------------------------------------------------------------- tables


def _columns(sweep, records):
    head = list(sweep.cells[0]) + ["cell", "trial"]
    tail = ["wall_time", "seed_entropy", "error"]
    middle = []
    seen = set(head) | set(tail)
    for record in records:
        for key in record:
            if key not in seen:
                seen.add(key)
                middle.append(key)
    return head, middle, tail


def _format_value(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _csv_text(columns, rows):
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_format_value(row.get(c)) for c in columns])
    return buffer.getvalue()


def write_table(path, rows):
    """Write ``rows`` (dicts with the keys of the first row) as CSV, atomically.

    Floats are written with ``repr`` so they read back exactly; ``None`` is an empty field.
    The format of the engine's own ``trials.csv`` and ``summary.csv``, for an experiment's
    derived tables.
    """
    rows = list(rows)
    if not rows:
        raise ValueError(f"rows must hold at least one row to write {path}")
    path = pathlib.Path(path)
    _write_atomic(path, _csv_text(list(rows[0]), rows))
    return path


def _summarise(sweep, records, param_cols, middle):
    numeric = [c for c in middle + ["wall_time"]
               if all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in records)]
    rows = []
    n = sweep.n_trials
    for ci, cell in enumerate(sweep.cells):
        block = records[ci * n : (ci + 1) * n]
        row = {**cell, "cell": ci, "n_trials": len(block),
               "n_errors": sum(1 for r in block if r["error"])}
        for col in numeric:
            values = [float(r[col]) for r in block if r.get(col) is not None and not r["error"]]
            row[f"mean_{col}"] = float(np.mean(values)) if values else math.nan
        rows.append(row)
    columns = list(param_cols) + ["cell", "n_trials", "n_errors"] + [f"mean_{c}" for c in numeric]
    return columns, rows


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
    head, middle, tail = _columns(sweep, records)
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


def _new_manifest(sweep, previous, run_info):
    runs = list(previous.get("runs", [])) if previous else []
    runs.append(run_info)
    environment = run_info["environment"]
    return {
        "format": FORMAT,
        "sweep": sweep.identity,
        "sweep_key": sweep.key,
        "status": "running",
        "started": previous.get("started", run_info["started"]) if previous else run_info["started"],
        "finished": None,
        "backend": run_info["backend"],
        "jobs": run_info["jobs"],
        "packages": environment["packages"],
        "git": environment["git"],
        "n_cells": len(sweep.cells),
        "n_trials_per_cell": sweep.n_trials,
        "runs": runs,
        "n_failures": None,
        "failures": [],
    }


def _write_manifest(outdir, manifest):
    text = json.dumps(manifest, indent=2, default=_json_default)
    _write_atomic(outdir / MANIFEST_NAME, text + "\n")


def _warn_version_change(previous, environment):
    """Warn when a resumed run's code or packages differ from the previous run's."""
    old = previous.get("packages") or {}
    new = environment["packages"]
    changes = [f"{k} {old[k]} -> {new[k]}" for k in new if k in old and old[k] != new[k]]
    old_git, new_git = previous.get("git") or {}, environment["git"]
    if old_git.get("commit") != new_git["commit"] and "unknown" not in (
            old_git.get("commit", "unknown"), new_git["commit"]):
        changes.append(f"git commit {old_git['commit'][:12]} -> {new_git['commit'][:12]}")
    if changes:
        warnings.warn(f"resuming with different code or package versions ({', '.join(changes)});"
                      " new trials may differ from the earlier ones", SweepWarning, stacklevel=4)


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
