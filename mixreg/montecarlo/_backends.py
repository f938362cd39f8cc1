"""Running chunks of trials: in this process, on loky worker processes or on Dask workers.

A task is a chunk, trials ``[start, stop)`` of one cell (:func:`_run_chunk`).  Every backend,
the in-process one included, runs its kernels with one BLAS/OpenMP and one numba thread unless
``kernel_threads`` says otherwise (:func:`_kernel_threads`): multi-threaded BLAS rounds long
products differently with another thread count, so one thread is what makes the records
bit-identical whatever the backend and the number of workers.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
import signal
import sys
import time
import traceback
import warnings
from typing import Any
from collections.abc import Mapping

import numpy as np

from mixreg import provenance
from mixreg.montecarlo import _local_cluster
from mixreg.montecarlo._cells import ENGINE_COLUMNS, _cell_entropy, plain_scalar
from mixreg.montecarlo._code import algorithm_payloads, install_algorithms
from mixreg.montecarlo._errors import AlgorithmUnavailableError, SweepWarning

__all__ = ["SCHEDULER_ADDRESS"]

#: The form of a Dask scheduler address (``tcp://10.0.0.5:8786``; also ``tls``, ``ucx``, ``ws``,
#: ``wss`` and ``inproc``): what :func:`mixreg.montecarlo.run_sweep` accepts as ``scheduler``,
#: and what a command line should check its ``--scheduler`` against (``.match(text)``).
SCHEDULER_ADDRESS = re.compile(r"^(tcp|tls|ucx|ws|wss|inproc)://\S+$")
_TRACEBACK_LIMIT = 4000  # characters of a failure's traceback kept in the manifest


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
            fields[key] = plain_scalar(value)
        except TypeError:
            raise TypeError(f"trial_fn returned {key}={value!r} ({type(value).__name__}); "
                            "values must be int, float, bool or str scalars") from None
    return fields


def _run_chunk(trial_fn, root_seed, cell_index, cell, start, stop, kernel_threads, restore, algorithms=()):
    """Run trials ``[start, stop)`` of one cell: the task shipped to workers.

    ``algorithms`` (:func:`~mixreg.montecarlo._code.algorithm_payloads`) are the user-registered
    algorithms the trials may run, installed in the worker first (a no-op once there)."""
    if algorithms:
        install_algorithms(algorithms)
    with _kernel_threads(kernel_threads, restore):
        results = [_run_trial(trial_fn, root_seed, cell_index, cell, t) for t in range(start, stop)]
    return cell_index, start, stop, results


@contextlib.contextmanager
def _kernel_threads(n, restore):
    """Limit BLAS/OpenMP (threadpoolctl) and numba to ``n`` threads; ``None`` = no limit.

    The engine always passes a number (1 unless ``kernel_threads`` says otherwise), for
    in-process runs too.

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


# --------------------------------------------------------------------------- backends


class _Backend:
    """Runs chunk tasks and yields ``(cell_index, start, stop, results)`` as they finish."""

    name = "serial"
    workers = 1
    kernel_threads = None
    info: dict[str, object] = {}

    def prepare(self, sweep, code):
        """Check, before any task is sent, that the workers can run ``sweep``'s trials (whose
        code fingerprint is ``code``)."""

    def run(self, sweep, tasks):
        for ci, start, stop in tasks:
            yield _run_chunk(sweep.function(), sweep.root_seed, ci, sweep.cells[ci], start,
                             stop, self.kernel_threads, True)


def _leave_stops_to_the_parent():
    """A loky worker's initializer: ignore SIGINT and SIGTERM, which the parent turns into
    stopping the run.

    Ctrl-C in a terminal signals the whole foreground process group, workers included, and a
    batch scheduler's SIGTERM often reaches every process of the job.  A worker caught between
    tasks would die printing its own traceback ("Process LokyProcess-1: ...") on SIGINT, one
    killed by SIGTERM breaks the pool, and one inside a trial would race the parent's shutdown.
    Ignoring both leaves one reaction: the parent's KeyboardInterrupt (SIGTERM raises one in
    the parent, see :func:`~mixreg.montecarlo.raise_on_sigterm`), on which joblib aborts the
    pool and kills the workers (SIGKILL); the chunks already written are kept and the trials in
    flight are run again on resume.  A worker runs it once started (about half a second after
    it is spawned, at a run's start or when loky replaces a worker), so a Ctrl-C inside that
    window can still make it print a traceback.  Needs joblib >= 1.5, whose
    ``parallel_config`` passes ``initializer`` to the loky executor.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


#: What the workers of loky's reusable pool were started with, as far as this process has run
#: sweeps on them: ``sys.path`` and the source digest of every module a sweep's code fingerprint named.
_POOL_STARTED_WITH: dict[str, Any] = {"path": None, "digests": {}}


def _retire_stale_pool(code):
    """Shut down loky's reusable worker pool if its workers may hold other code than ``code``.

    joblib keeps the loky workers between runs, and a worker imports a module once: after the
    trial's module (or an algorithm's) was edited and reloaded here, or ``sys.path`` changed, a
    kept worker would run the old code, or not find the module at all.  The next run then
    starts fresh workers (about a second).
    """
    trial = code["trial_fn"]
    digests = {f"{trial['module']}:{trial['name']}": trial["sha256"], **trial["modules"]}
    for name, record in code["algorithms"].items():
        digests[f"algorithm {name}"] = record["sha256"]
        digests.update(record["modules"])
    known = _POOL_STARTED_WITH["digests"]
    path = tuple(sys.path)
    stale = (_POOL_STARTED_WITH["path"] not in (None, path)
             or any(name in known and known[name] != digest for name, digest in digests.items()))
    if stale:
        from joblib.externals.loky import reusable_executor

        executor = getattr(reusable_executor, "_executor", None)
        if executor is not None:
            executor.shutdown(wait=True)
        known.clear()
    _POOL_STARTED_WITH["path"] = path
    known.update(digests)


#: joblib's warning when its generator of results is closed before the last (joblib >= 1.3).
_JOBLIB_EXIT_EARLY = (r"(\d+ tasks have been successfully executed +but not used|"
                      r"\d+ tasks which were still being processed by the workers have been cancelled)")


class _JoblibBackend(_Backend):
    def __init__(self, name, workers, kernel_threads, config, info=None):
        self.name, self.workers, self.kernel_threads = name, workers, kernel_threads
        self._config, self.info = config, info or {}

    def prepare(self, sweep, code):
        self._algorithms = algorithm_payloads(code)
        client = self._config.get("client")
        if client is None:
            _retire_stale_pool(code)
        if client is not None and self._algorithms:  # fail before the first task, naming the algorithm
            try:
                client.run(install_algorithms, self._algorithms)
            except AlgorithmUnavailableError:
                raise
            except Exception as exc:  # noqa: BLE001 - one line, as for the trial's module below
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise RuntimeError(f"the Dask workers cannot install the sweep's algorithms ({reason})") from None
        module = getattr(sweep.trial_fn, "__module__", None)
        if client is None or not module or module == "__main__":  # loky workers share our path
            return
        try:
            client.run(importlib.import_module, module)
        except Exception as exc:  # noqa: BLE001 - a task would fail to unpickle, and joblib wait forever
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise RuntimeError(f"the Dask workers cannot import {module!r}, the module of the trial "
                               f"function ({reason}); mixreg and that module must be importable on "
                               "every worker") from None

    def run(self, sweep, tasks):
        from joblib import Parallel, delayed, parallel_config

        calls = (
            delayed(_run_chunk)(sweep.function(), sweep.root_seed, ci, sweep.cells[ci], start,
                                stop, self.kernel_threads, False, getattr(self, "_algorithms", ()))
            for ci, start, stop in tasks
        )
        with parallel_config(**self._config):
            parallel = Parallel(return_as="generator_unordered", batch_size=1)
            outputs = parallel(calls)
            try:
                for output in outputs:  # not ``yield from``: it would close ``outputs`` itself
                    yield output
            finally:
                # Stopped early (Ctrl-C while the engine writes a chunk closes this generator):
                # joblib warns of the tasks it cancels or computed in vain.  The engine says how
                # many trials are kept, and a resume runs the others; so nothing more is said.
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=_JOBLIB_EXIT_EARLY, category=UserWarning)
                    outputs.close()


@contextlib.contextmanager
def _open_backend(jobs, scheduler, dask_local, kernel_threads, connect_timeout=30.0):
    """The backend for these arguments; ``kernel_threads`` None means 1 (see run_sweep)."""
    threads = 1 if kernel_threads is None else kernel_threads
    if scheduler is None and dask_local is None:
        if jobs == 1:
            backend = _Backend()
            backend.kernel_threads = threads
            backend.name = "serial (in-process)"
            yield backend
            return
        config = {"backend": "loky", "n_jobs": jobs, "inner_max_num_threads": threads,
                  "initializer": _leave_stops_to_the_parent}
        yield _JoblibBackend(f"loky ({jobs} processes)", jobs, threads, config)
        return

    try:
        from distributed import Client
    except ImportError:
        raise ImportError("scheduler/dask_local need dask.distributed, which is not installed: "
                          'pip install "mixreg[dask]" (from a checkout: pip install -e ".[dask]")') from None
    with contextlib.ExitStack() as stack:
        if dask_local is not None:
            # In a session of its own, so that Ctrl-C reaches only this process (see _local_cluster).
            address = stack.enter_context(_local_cluster.start(dask_local, threads))
            client = stack.enter_context(Client(address, set_as_default=False,
                                                timeout=connect_timeout))
            name = f"dask LocalCluster ({dask_local} workers on 127.0.0.1)"
        else:
            try:
                client = stack.enter_context(Client(scheduler, set_as_default=False,
                                                    timeout=connect_timeout))
            except OSError as exc:  # TimeoutError too
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise OSError(f"could not connect to the Dask scheduler at {scheduler!r} "
                              f"within {connect_timeout:g} s ({reason})") from None
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
