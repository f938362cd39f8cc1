"""Module-level toy trial functions and shared helpers for tests/test_montecarlo_*.py.

The trial functions live in their own module so that worker processes (loky, Dask) can
import them by name.  Each is a deterministic function of its cell and seed.
"""

import csv
import json
import os
import pathlib
import time

import numpy as np

TESTS_DIR = pathlib.Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent

CELLS = [{"R": r, "noise": s} for r in (0.5, 1.0, 2.0) for s in (0.1, 1.0)]

#: Seconds after which a test's wait is a hang (a deadlock guard, never a speed limit): only a
#: process that never starts or never ends takes this long, however busy the machine.
HANG = 600.0


def least_squares_trial(cell, seed):
    """Exercise BLAS/LAPACK: a (200, 50) least-squares fit and a Gram matrix."""
    rng = np.random.default_rng(seed)
    n, d = 200, 50
    X = rng.standard_normal((n, d))
    beta = rng.standard_normal(d) * cell["R"]
    y = X @ beta + cell["noise"] * rng.standard_normal(n)
    beta_hat = np.linalg.lstsq(X, y, rcond=None)[0]
    gram = X.T @ X
    dist = float(np.linalg.norm(beta_hat - beta))
    return {
        "dist": dist,
        "gram_trace": float(np.trace(gram)),
        "first": np.float64(beta_hat[0]),
        "success": bool(dist < 0.5 * cell["R"]),
        "iterations": np.int64(rng.integers(1, 100)),
        "nonfinite": False,
    }


def failing_trial(cell, seed):
    """Like :func:`least_squares_trial` but raises for trial 2 of every cell."""
    if seed.spawn_key[-1] == 2:
        raise FloatingPointError(f"diverged at R={cell['R']}")
    return least_squares_trial(cell, seed)


def sleepy_trial(cell, seed):
    """Sleep ``cell['sleep']`` seconds, then return a draw."""
    time.sleep(cell["sleep"])
    rng = np.random.default_rng(seed)
    return {"draw": float(rng.standard_normal()), "label": f"s{cell['sleep']}"}


def long_reduction_trial(cell, seed):
    """Long dot products: multi-threaded BLAS may round them differently from one thread."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(cell["length"])
    A = rng.standard_normal((cell["length"] // 100, 100))
    w = rng.standard_normal(cell["length"] // 100)
    return {"sq_norm": float(x @ x), "atw0": float((A.T @ w)[0])}


#: The environment variable holding ``"k,trial"`` (cell parameter k, trial) at which
#: :func:`interrupting_trial` raises KeyboardInterrupt: an environment setting, not a module
#: constant, since a constant the trial reads is part of its code (the sweep's code fingerprint).
INTERRUPT_ENV = "MIXREG_TEST_INTERRUPT_AT"


def interrupting_trial(cell, seed):
    """A draw, or a KeyboardInterrupt (as Ctrl-C would raise) at ``$MIXREG_TEST_INTERRUPT_AT``."""
    if os.environ.get(INTERRUPT_ENV) == f"{cell['k']},{seed.spawn_key[-1]}":
        raise KeyboardInterrupt
    rng = np.random.default_rng(seed)
    return {"draw": float(rng.standard_normal())}


def bad_output_trial(cell, seed):
    """Returns a non-scalar value: the engine must report it as a trial failure."""
    return {"vector": np.zeros(3)}


def thread_probe_trial(cell, seed):
    """Report the BLAS and numba thread counts the trial runs with."""
    import numba
    from threadpoolctl import threadpool_info

    blas = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    return {"blas_threads": max(blas), "numba_threads": int(numba.get_num_threads())}


def slow_sweep(sleep=0.5, n_trials=6):
    """A sweep of a few sleepy trials, one per chunk (tasks still running when a test stops the backend)."""
    from mixreg.montecarlo import Sweep

    return Sweep(name="slow", trial_fn=sleepy_trial, cells=[{"sleep": sleep, "group": "a"}],
                 n_trials=n_trials, root_seed=3, config={"purpose": "lock test"}, chunk_size=1)


def stoppable_sweep(groups=("a", "b"), n_trials=4):
    """A sweep of :func:`stoppable_trial`, one trial per chunk, for the tests that stop or kill a run."""
    from mixreg.montecarlo import Sweep

    return Sweep(name="stoppable", trial_fn=stoppable_trial, cells=[{"group": g} for g in groups],
                 n_trials=n_trials, root_seed=5, config={"purpose": "stop test"}, chunk_size=1)


def step_sizes_trial(cell, seed):
    """Use a list of step sizes given as a tuple, or as the comma text it replaced."""
    steps = cell["steps"]
    if isinstance(steps, str):
        steps = tuple(float(v) for v in steps.split(","))
    elif not isinstance(steps, tuple):
        raise TypeError(f"steps reached the trial as a {type(steps).__name__}, not a tuple")
    rng = np.random.default_rng(seed)
    return {"n_steps": len(steps), "last_step": float(steps[-1]),
            "draw": float(rng.standard_normal()) * cell["k"], "label": f"k{cell['k']}"}


def awkward_values_trial(cell, seed):
    """Values that are hard to write to CSV and read back exactly; trial 1 of cell 1 fails."""
    if cell["k"] == 1 and seed.spawn_key[-1] == 1:
        raise ArithmeticError("deliberate failure")
    rng = np.random.default_rng(seed)
    u = float(rng.random())
    return {"third": u / 3.0, "tiny": 5e-324 * (1 + seed.spawn_key[-1]), "neg_zero": -0.0,
            "inf": float("inf"), "nan": float("nan"), "big_int": 2**62 + 1, "flag": u < 0.5,
            "digits": "0123", "true_text": "True", "empty": "", "mixed": 1 if u < 0.5 else 2.5}


# --------------------------------------------------------------------------- test helpers


def toy_sweep(trial_fn=least_squares_trial, cells=CELLS, n_trials=6, root_seed=2024,
              config=None, **kwargs):
    """The least-squares toy sweep of the engine's tests (arguments override its fields)."""
    from mixreg.montecarlo import Sweep

    config = {"experiment": "toy", "lr": 0.1} if config is None else config
    return Sweep(name="toy", trial_fn=trial_fn, cells=cells, n_trials=n_trials,
                 root_seed=root_seed, config=config, **kwargs)


def csv_rows(path, drop=("wall_time",)):
    """trials.csv as a list of rows (strings), without the run-dependent columns."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    keep = [i for i, name in enumerate(rows[0]) if name not in drop]
    return [[row[i] for i in keep] for row in rows]


def records_json(records, drop=("wall_time",)):
    """Records (or a result's records) as JSON text, without the run-dependent columns.

    JSON tells ``1`` from ``1.0``, ``True`` and ``"1"``, and writes NaN, so equal texts mean
    equal values of equal types.
    """
    records = getattr(records, "records", records)
    return json.dumps([{k: v for k, v in r.items() if k not in drop} for r in records])


def subprocess_env():
    """Environment for a Python subprocess that imports mixreg and this module."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_DIR), str(TESTS_DIR), env.get("PYTHONPATH", "")])
    return env


def sigint_probe_trial(cell, seed):
    """Whether the trial runs with SIGINT and SIGTERM ignored (loky workers leave stops to the parent)."""
    import signal

    return {"sigint_ignored": signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
            "sigterm_ignored": signal.getsignal(signal.SIGTERM) is signal.SIG_IGN}


#: Environment variables of :func:`stoppable_trial` (read when it runs, so worker processes,
#: which inherit the environment, see them too).
STOP_ENV, STOP_AT_ENV, RELEASE_ENV = "MIXREG_TOY_STOP", "MIXREG_TOY_STOP_AT", "MIXREG_TOY_RELEASE"


def stoppable_trial(cell, seed):
    """A draw; or, at trial ``$MIXREG_TOY_STOP_AT`` (an int), what ``$MIXREG_TOY_STOP`` says.

    ``block``: this trial and every later one block until the file ``$MIXREG_TOY_RELEASE``
    exists, or without it until their process is killed.  A run then ends only when the test
    says so, whatever the machine's speed and load, and keeps exactly the trials before.
    ``ctrl-c``: raise ``KeyboardInterrupt`` as Python's SIGINT handler does.  ``sigterm``: send
    SIGTERM to this process, which must have a handler for it (a run turns SIGTERM into an
    exception in its main process; the handler runs before ``raise_signal`` returns); else
    raise ``RuntimeError`` rather than kill the process (the test run itself).  Unset: a draw,
    every trial.
    """
    import signal

    stop, trial = os.environ.get(STOP_ENV), seed.spawn_key[-1]
    at = int(os.environ.get(STOP_AT_ENV, "0"))
    if stop == "block" and trial >= at:
        release = os.environ.get(RELEASE_ENV)
        while release is None:
            signal.pause()  # until killed: a worker ignores SIGINT and SIGTERM
        while not os.path.exists(release):
            time.sleep(0.01)  # polls for the test's signal: how long it takes does not matter
    if stop == "ctrl-c" and trial == at:
        raise KeyboardInterrupt
    if stop == "sigterm" and trial == at:
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            raise RuntimeError("SIGTERM has its default action here: sending it would kill the process")
        signal.raise_signal(signal.SIGTERM)
    rng = np.random.default_rng(seed)
    return {"draw": float(rng.standard_normal())}
