"""A Dask ``LocalCluster`` in a session of its own, for ``run_sweep(dask_local=N)``.

``python -m mixreg.montecarlo._local_cluster N THREADS`` starts a scheduler and N
single-threaded worker processes on 127.0.0.1 (no dashboard; BLAS/OpenMP/numba limited to
THREADS threads through the environment), prints the scheduler's address as one line on
stdout, and shuts the cluster down when its stdin closes: when the sweep that started it
finishes, fails, is interrupted or is killed.

:func:`start` runs it in a new session (POSIX) or process group (Windows): a Ctrl-C in the
terminal then reaches only the process running the sweep, which reports it in one line and
closes the cluster, instead of every worker printing its own traceback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading

_THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)
_START_TIMEOUT = 600.0  # seconds for the cluster to start: a hang guard (a failure ends the wait at once)
_STOP_TIMEOUT = 15.0  # seconds for it to shut down before it is killed


@contextlib.contextmanager
def start(n_workers, threads):
    """Start the cluster in its own session; yield the scheduler's address; stop it.

    Raises ``RuntimeError`` (with the cluster's last line of output) when it does not start.
    """
    log = tempfile.TemporaryFile(mode="w+b")
    # The workers import what this process imports (the trial function's module), as the
    # workers of a LocalCluster started in this process would: they get its sys.path.
    paths = [p for p in sys.path if isinstance(p, str) and p]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(dict.fromkeys(paths)))
    kwargs = {"start_new_session": True, "env": env}
    if os.name == "nt":  # pragma: no cover - Windows
        kwargs = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP, "env": env}
    proc = subprocess.Popen(
        [sys.executable, "-m", __name__, str(int(n_workers)), str(int(threads))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, **kwargs)
    started = False
    try:
        lines = queue.Queue()
        reader = threading.Thread(target=_first_line, args=(proc.stdout, lines), daemon=True)
        reader.start()
        try:
            address = lines.get(timeout=_START_TIMEOUT).decode().strip()
        except queue.Empty:
            address = ""
        if not address.startswith("tcp://"):
            raise RuntimeError(f"could not start a Dask LocalCluster of {n_workers} workers: "
                               f"{_last_line(proc, log)}")
        started = True
        yield address
    finally:
        _stop(proc, graceful=started)
        log.close()


def _first_line(stream, lines):
    try:
        lines.put(stream.readline())
    except (OSError, ValueError):  # closed under us: the cluster was stopped while starting
        lines.put(b"")


def _last_line(proc, log):
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    log.seek(0)
    lines = [line.strip() for line in log.read().decode(errors="replace").splitlines() if line.strip()]
    if lines:
        return lines[-1]
    return f"it exited with status {proc.returncode}" if proc.poll() is not None else "no answer"


def _stop(proc, graceful):
    """Close the cluster: on end of input when it runs, at once (its whole session) otherwise."""
    with contextlib.suppress(OSError):
        proc.stdin.close()  # a running cluster shuts down on end of input
    try:
        if not graceful:  # still starting (Ctrl-C, a failure): it would not read its input yet
            raise subprocess.TimeoutExpired(proc.args, 0)
        proc.wait(timeout=_STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            if os.name == "nt":  # pragma: no cover - Windows
                proc.kill()
            else:
                os.killpg(proc.pid, signal.SIGKILL)  # the workers too
        proc.wait()
    finally:
        with contextlib.suppress(OSError):
            proc.stdout.close()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    n_workers, threads = int(argv[0]), int(argv[1])
    from distributed import LocalCluster

    env = {var: str(threads) for var in _THREAD_ENV_VARS}
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None, silence_logs=logging.ERROR, env=env) as cluster:
        print(cluster.scheduler_address, flush=True)
        sys.stdin.buffer.read()  # until the sweep closes our input (or dies)
    return 0


if __name__ == "__main__":
    sys.exit(main())
