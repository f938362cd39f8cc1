"""Benchmark: IFCA kernels against the machine's GEMM peak and a naive per-client loop, and the
Monte Carlo engine's overhead and parallel efficiency.

Run ``python -m experiments.bench_ifca`` (about 3-6 minutes on 2 cores; ``--quick`` for a smoke
run).  Everything is measured in one run and reported as ratios, because absolute times on a
shared machine are noisy:

* ``peak``: best of several ``n x n`` matrix products (``n = 2000``), per dtype, on one thread
  (the engine runs one single-threaded worker per core, so a core's peak is the yardstick);
* ``ifca``: the batched driver at ``(m, n, d, k) = (100, 100, 1000, 2)`` and
  ``(400, 100, 1000, 4)`` with ``B = 30`` replicas, and in float32 with the paper presets'
  four noise levels of one draw as one batch (``B = 120``): seconds per replica-round, achieved
  GFLOP/s counting the algorithm's ``(k + 1) 2 N d`` flops per replica-round, and that as a
  fraction of the peak;
* ``naive``: a per-client NumPy loop in the style of the official code (one product per client
  and model, one replica at a time), seconds per replica-round, and our speed-up over it;
* ``engine``: a sweep of realistic IFCA cells run with 1 and with 2 worker processes (one
  thread each): parallel efficiency ``t1 / (2 t2)`` and the engine's overhead per task
  (elapsed time not spent inside trials).

Results are printed and written to ``results/bench/bench_ifca.json`` with the provenance record.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time

import numpy as np
from threadpoolctl import threadpool_limits

from mixreg.algorithms.ifca import ifca, initial_parameters
from mixreg.montecarlo import Sweep, run_sweep
from mixreg.problems import ProblemSpec, make_problem
from mixreg.provenance import environment_record
from mixreg.trials import ifca_success_trial

SIZES = ((100, 100, 1000, 2), (400, 100, 1000, 4))


def gemm_peak(dtype, n=2000, repeats=5):
    """Best GFLOP/s of an ``n x n`` by ``n x n`` product."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    a @ b
    best = min(_timed(lambda: a @ b) for _ in range(repeats))
    return 2.0 * n**3 / best / 1e9


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def naive_round(problem, theta, gamma):
    """One IFCA round for one replica, client by client (the official code's structure)."""
    k = theta.shape[0]
    grads = np.zeros_like(theta)
    for i in range(problem.m):
        Xi, yi = problem.client(i)
        losses = [np.mean((Xi @ theta[j] - yi) ** 2) for j in range(k)]
        j = int(np.argmin(losses))
        grads[j] += (2.0 / yi.size) * (Xi.T @ (Xi @ theta[j] - yi))
    return theta - (gamma / problem.m) * grads


def bench_ifca(dtype, size, B=30, rounds=20, naive_rounds=3, levels=1):
    """IFCA's seconds per replica-round with ``B`` replicas per noise level and ``levels`` noise
    levels of one draw run as one batch (``responses``; 4 in the paper presets, so
    ``4 B`` replicas).  The step sizes are small enough that no replica diverges (the timing is
    of full-width rounds)."""
    m, n, d, k = size
    spec = ProblemSpec(m=m, k=k, n=n, d=d, sigma=0.1, scale=0.25, dtype=np.dtype(dtype).name)
    problems = spec.generate_levels(np.random.default_rng(0), (0.0, 0.1, 0.2, 0.4)[:levels])
    problem = problems[0]
    theta0 = np.tile(initial_parameters(problem, B, "official", rng=np.random.default_rng(1)), (levels, 1, 1))
    gammas = np.tile([0.1, 0.03, 0.01], levels * B // 3 + 1)[: levels * B]
    shared = {} if levels == 1 else dict(responses=np.stack([pb.y for pb in problems]),
                                         response_of=np.repeat(np.arange(levels), B))
    ifca(problem, theta0, gammas, n_rounds=2, **shared)  # compile and warm up
    seconds = min(_timed(lambda: ifca(problem, theta0, gammas, n_rounds=rounds, **shared)) for _ in range(2))
    per = seconds / (rounds * levels * B)
    flops = (k + 1) * 2.0 * problem.N * d
    th = theta0[0].copy()
    naive = min(_timed(lambda: naive_round(problem, th, 0.1)) for _ in range(naive_rounds))
    return {"m": m, "n": n, "d": d, "k": k, "B": levels * B, "levels": levels, "dtype": np.dtype(dtype).name,
            "seconds_per_replica_round": per, "gflops": flops / per / 1e9,
            "naive_seconds_per_replica_round": naive, "speedup_vs_naive": naive / per}


def bench_engine(tmp, trials=8):
    """Parallel efficiency and overhead per task on a realistic IFCA cell (k = 2, d = 200)."""
    cell = dict(m=100, k=2, n=20, d=200, sigma=0.5, r=0.2, protocol="official", n_rounds=300, n_inits=10,
                step_sizes=(1.0, 0.1, 0.01), init="official", init_scale=1.0, threshold_offset=0.001,
                dtype="float64")
    cells = tuple(dict(cell, r=r) for r in (0.1, 0.2))
    sweep = Sweep(name="bench", trial_fn=ifca_success_trial, cells=cells, n_trials=trials, root_seed=1,
                  config={"bench": True}, chunk_size=1)
    out = {}
    # start the worker processes first (loky reuses them), so the timing is of the sweep only
    warm = Sweep(name="warm", trial_fn=ifca_success_trial, cells=(dict(cell, d=10, m=10, n_rounds=2),),
                 n_trials=2, root_seed=0, config={"warm": True}, chunk_size=1)
    run_sweep(warm, pathlib.Path(tmp) / "warm", jobs=2, kernel_threads=1, progress=False, overwrite=True)
    for jobs in (1, 2):
        start = time.perf_counter()
        res = run_sweep(sweep, pathlib.Path(tmp) / f"jobs{jobs}", jobs=jobs, kernel_threads=1,
                        progress=False, overwrite=True)
        elapsed = time.perf_counter() - start
        if res.failures:  # a failed trial takes no time: the ratios would mean nothing
            raise RuntimeError(f"the engine benchmark's trials failed: {res.failures[0]}")
        inside = sum(r["wall_time"] for r in res.records)
        out[jobs] = {"elapsed": elapsed, "trial_seconds": inside, "tasks": len(res.records)}
    t1, t2 = out[1]["elapsed"], out[2]["elapsed"]
    return {
        "tasks": out[1]["tasks"],
        "seconds_1_worker": t1,
        "seconds_2_workers": t2,
        "parallel_efficiency": t1 / (2 * t2),
        "overhead_per_task_1_worker": (t1 - out[1]["trial_seconds"]) / out[1]["tasks"],
        "overhead_fraction_1_worker": (t1 - out[1]["trial_seconds"]) / t1,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m experiments.bench_ifca", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller rounds, first size only (smoke test)")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("results") / "bench")
    args = parser.parse_args(argv)
    sizes = SIZES[:1] if args.quick else SIZES
    rounds = 3 if args.quick else 20
    dtypes = (np.float32, np.float64)
    report = {"environment": environment_record(), "peak_gflops": {}, "ifca": []}
    # One BLAS thread throughout, peak included: the engine runs one single-threaded worker per
    # core (bit-identical records; faster per trial than threaded kernels, see the README), so a
    # core's own peak is the yardstick.
    with threadpool_limits(limits=1):
        peaks = {np.dtype(t).name: [gemm_peak(t)] for t in dtypes}
        plan = [(t, size, 1) for size in sizes for t in dtypes] + [(np.float32, size, 4) for size in sizes]
        rows = [bench_ifca(t, size, rounds=rounds, naive_rounds=1 if args.quick else 3, levels=levels)
                for t, size, levels in plan]
        # The peak is measured before and after the runs and the best is kept, so that a busy
        # moment of a shared machine cannot make the fractions of peak look better than they are.
        for t in dtypes:
            peaks[np.dtype(t).name].append(gemm_peak(t))
    report["peak_gflops"] = {name: max(v) for name, v in peaks.items()}
    print("matrix-multiply peak, one thread: "
          + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in report["peak_gflops"].items()))
    print(f"{'(m, n, d, k)':>22} {'B':>4} {'levels':>6} {'dtype':>8} {'ms/replica-round':>17} {'GFLOP/s':>8} "
          f"{'of peak':>8} {'naive ms':>9} {'speed-up':>9}")
    for row in rows:
        row["fraction_of_peak"] = row["gflops"] / report["peak_gflops"][row["dtype"]]
        report["ifca"].append(row)
        size = (row["m"], row["n"], row["d"], row["k"])
        print(f"{str(size):>22} {row['B']:>4} {row['levels']:>6} {row['dtype']:>8} "
              f"{1e3 * row['seconds_per_replica_round']:>17.3f} "
              f"{row['gflops']:>8.1f} {row['fraction_of_peak']:>8.0%} "
              f"{1e3 * row['naive_seconds_per_replica_round']:>9.2f} {row['speedup_vs_naive']:>8.1f}x")
    args.out.mkdir(parents=True, exist_ok=True)
    eng = bench_engine(args.out / "engine", trials=2 if args.quick else 12)
    report["engine"] = eng
    print(f"engine: {eng['tasks']} tasks, 1 worker {eng['seconds_1_worker']:.1f} s, 2 workers "
          f"{eng['seconds_2_workers']:.1f} s -> parallel efficiency {eng['parallel_efficiency']:.0%}; "
          f"overhead {1e3 * eng['overhead_per_task_1_worker']:.0f} ms per task "
          f"({eng['overhead_fraction_1_worker']:.1%} of the 1-worker run)")
    (args.out / "bench_ifca.json").write_text(json.dumps(report, indent=2, default=str))
    print(f"wrote {args.out / 'bench_ifca.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
