"""Module-level toy trial functions for tests/test_montecarlo.py.

They live in their own module so that worker processes (loky, Dask) can import them by name.
Each is a deterministic function of its cell and seed.
"""

import time

import numpy as np


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
    """Sleep ``cell['sleep']`` seconds, then return a draw (for the kill-and-resume test)."""
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


def bad_output_trial(cell, seed):
    """Returns a non-scalar value: the engine must report it as a trial failure."""
    return {"vector": np.zeros(3)}


def thread_probe_trial(cell, seed):
    """Report the BLAS and numba thread counts the trial runs with."""
    import numba
    from threadpoolctl import threadpool_info

    blas = [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]
    return {"blas_threads": max(blas), "numba_threads": int(numba.get_num_threads())}


def sleepy_sweep(root_seed=7):
    """The sweep the kill-and-resume test runs in a subprocess and again in-process."""
    from mixreg.montecarlo import Sweep

    cells = [{"sleep": 0.1, "group": g} for g in ("a", "b")]
    return Sweep(name="sleepy", trial_fn=sleepy_trial, cells=cells, n_trials=4,
                 root_seed=root_seed, config={"purpose": "kill test"}, chunk_size=1)
