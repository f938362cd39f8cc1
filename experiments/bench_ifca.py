"""Benchmark: IFCA kernels against the machine's GEMM peak, a naive per-client loop and the batched
NumPy, PyTorch and JAX programs a user would write instead; every registered driver against its
floor; the Monte Carlo engine's overhead and parallel efficiency.

Run ``python -m experiments.bench_ifca`` (about 20-30 minutes on 2 cores with PyTorch and JAX
installed; ``--quick`` for a smoke run).  Everything is measured in one run and reported as
ratios, because absolute times on a shared machine are noisy, and every time is the process's
CPU time (the wall clock kept beside it): on a busy machine the wall clock counts the time other
processes held the core.  The load average before and after the run is reported with it.

* ``peak``: best of several ``n x n`` matrix products (``n = 2000``), per dtype, on one thread
  (the engine runs one single-threaded worker per core, so a core's peak is the yardstick);
* ``ifca``: the batched driver at ``(m, n, d, k) = (100, 100, 1000, 2)`` and
  ``(400, 100, 1000, 4)`` with ``B = 30`` replicas, and in float32 with the paper presets'
  levels of one draw as one batch (the m-n presets' two r, ``B = 60``; the r-sigma presets'
  four noise levels, ``B = 120``): seconds per replica-round (a round's cost, from runs of two
  lengths), achieved GFLOP/s counting the algorithm's ``(k + 1) 2 N d`` flops per
  replica-round, and that as a fraction of the peak; the prediction product alone (``(B k, d)``
  by ``(d, N)``, the round's ``k`` products of ``k + 1``) as a fraction of the peak, and the
  bound it sets: the round's fraction of peak were the rest done at the peak; the fixed cost of
  a run (checks, floors, the final training loss) and the fraction of peak of a whole run of the
  paper presets' 300 rounds, that cost included;
* ``drivers``: every built-in driver (:func:`mixreg.algorithms.builtin_algorithms`) at
  :data:`DRIVER_SIZE`, float64, ``B = 30``: a round's cost and the fixed part of a run (set-up:
  local fits, clustering, Phase 1) in seconds and in rounds' worth, against the driver's floor
  flop count (:data:`DRIVER_FLOORS`) as a fraction of the float64 peak, measured between the
  drivers' passes (the best of those: the machine's speed drifts within a run, and the drivers'
  times are best-of times from the same minutes; the peaks just before and just after the
  section are reported beside it);
* ``competitors``: IFCA against batched NumPy, PyTorch and JAX (jit + vmap) programs of the
  same algorithm (:mod:`experiments.bench_competitors`, in a child process pinned to one CPU),
  each checked equal to mixreg before it is timed, at both official sizes;
* ``naive``: a per-client NumPy loop in the style of the official code (one product per client
  and model, one replica at a time), seconds per replica-round, and our speed-up over it;
* ``engine``: a sweep of realistic IFCA cells run with 1 and with 2 worker processes (one
  thread each): parallel efficiency ``t1 / (2 t2)`` and the engine's overhead per task
  (elapsed time not spent inside trials);
* ``kernels``: the OpenBLAS kernel sets this CPU can run (Haswell: AVX2; SkylakeX: AVX-512),
  each in a child process with ``OPENBLAS_CORETYPE`` set (OpenBLAS picks its kernels when it
  loads): the GEMM peaks and IFCA's float32 replica-round at the first size, as ratios to the
  Haswell kernels.  An environment that sets ``OPENBLAS_CORETYPE`` to older kernels than the CPU
  has costs that much; the kernels also fix the last bits of every result (see
  ``mixreg.provenance.blas_kernels``);
* ``placement``: where to put the threads on 2 cores.  The same few IFCA trials of the paper-a
  size (``(m, n, d, k) = (100, 100, 1000, 2)``, float32, 30 runs, fewer rounds) run with
  (a) 2 workers x 1 BLAS thread (the engine's default), (b) 1 worker x 2 threads, (c) 2 workers
  x 2 threads (oversubscribed) and (d) 1 worker x 1 thread: each placement's throughput relative
  to (a), and whether its records are bit-identical to (d)'s (they must be for (a));
* ``paper_floors``: the paper presets' flops at IFCA's own count against both cores' float32
  peak measured at once (:mod:`experiments.bench_floors`): each preset's floor on this machine,
  and the fraction of that peak the project's time targets for them would need throughout.

Results are printed and written to ``results/bench/bench_ifca.json`` with the provenance record
(``--out DIR``: ``DIR/bench_ifca.json``).  The arguments and the results directory are checked
before anything is measured; every fault ends in one line, exit status 2 for bad input (a flag,
an ``--out`` that is not a directory) and 1 for a runtime fault (a directory that cannot be
created or written, a measurement that fails); ``--debug`` shows the traceback instead.  Run as a
command, Ctrl-C exits 130 and SIGTERM 143 with one line, and no report is written.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np
from threadpoolctl import threadpool_limits

from mixreg import cli as _cli
from mixreg.algorithms.ifca import ifca, initial_parameters
from mixreg.kernels import predict
from mixreg.montecarlo import Sweep, Terminated, raise_on_sigterm, run_sweep
from mixreg.problems import ProblemSpec
from mixreg.provenance import OPENBLAS_KERNEL_FLAGS, blas_kernels, cpu_flags, environment_record
from experiments.bench_floors import paper_floors, print_floors
from experiments.success_vs_R.trial import IfcaSuccessSpec, ifca_success_trial

SIZES = ((100, 100, 1000, 2), (400, 100, 1000, 4))
#: Rounds of an IFCA run in the paper presets (the official code's 300).
PAPER_ROUNDS = 300
PROG = "python -m experiments.bench_ifca"
#: The report's file name in the results directory (``--out``).
REPORT_NAME = "bench_ifca.json"


def gemm_peak(dtype, n=2000, repeats=5):
    """Best GFLOP/s of an ``n x n`` by ``n x n`` product, by process CPU time (as every time of
    the benchmark, see :func:`_timed`)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    a @ b
    best = min(_timed(lambda: a @ b)[0] for _ in range(repeats))
    return 2.0 * n**3 / best / 1e9


def _timed(fn):
    """``(cpu, wall)`` seconds of ``fn()``: the process's CPU time (all its threads; one BLAS
    thread here, so a core's work) and the wall clock.  The benchmark's ratios and fractions use
    the CPU time: on a shared machine the wall clock also counts the time other processes held
    the core, the CPU time does not (it still counts the slowdown a neighbour causes through the
    shared caches and memory, which is why the load average is reported too)."""
    cpu, start = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - start


def round_costs(runs, rounds, repeats=2, probe=None):
    """The cost of a round of each program in ``runs``, measured interleaved.

    ``runs`` maps a name to ``run(T)``, which runs ``T`` rounds.  Runs of ``rounds`` and
    ``2 rounds`` are timed alternately, ``repeats`` times, the programs one after the other in
    each (A, B, C, A, B, C, ...: a slow moment of the machine falls on all of them); ``probe``
    (optional, no arguments) is called after each pass over the programs, ``2 repeats`` times,
    to measure something interleaved with them (the benchmark's drivers section: the GEMM peak
    their fractions divide by, so that both come from the same moments of the machine); a round's
    cost is the difference of the two lengths' best times over ``rounds`` (``marginal``; if noise
    makes that difference vanish, the longer run's average, fixed part included, ``marginal``
    ``False``, fixed part 0), and the fixed part of a run (set-up, checks, the final loss) what is
    left of the shorter run.  Returns per name ``cpu`` and ``wall`` (seconds per round), ``fixed``
    and ``fixed_wall`` (seconds per run), ``marginal`` and ``wall_marginal`` (each clock's), and
    ``samples`` (``{T: [(cpu, wall), ...]}``, every timed run in order, for other statistics).
    """
    times = {name: {rounds: [], 2 * rounds: []} for name in runs}
    for _ in range(repeats):
        for T in (rounds, 2 * rounds):
            for name, run in runs.items():
                times[name][T].append(_timed(lambda run=run, T=T: run(T)))
            if probe is not None:
                probe()
    out = {}
    for name, by_length in times.items():
        row = {}
        for clock, key in ((0, "cpu"), (1, "wall")):
            short = min(t[clock] for t in by_length[rounds])
            long = min(t[clock] for t in by_length[2 * rounds])
            marginal = long > short
            per = (long - short) / rounds if marginal else long / (2 * rounds)
            row[key] = per
            row["fixed" if clock == 0 else "fixed_wall"] = max(0.0, short - rounds * per) if marginal else 0.0
            row["marginal" if clock == 0 else "wall_marginal"] = marginal
        row["samples"] = by_length
        out[name] = row
    return out


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


def bench_ifca(dtype, size, B=30, rounds=20, naive_rounds=3, levels=1, repeats=2):
    """IFCA's seconds per replica-round with ``B`` replicas per level and ``levels`` levels of
    one draw run as one batch (``responses``; 4 noise levels in the r-sigma presets and 2
    separation scales in the m-n presets, so ``4 B`` and ``2 B`` replicas; the levels here are
    noise levels, which costs the same).  The step sizes are small enough that no replica
    diverges (the timing is of full-width rounds).

    A run's time is a fixed part (checks, the divergence floors, the workspace, the final
    training loss: one prediction product and the losses) plus ``T`` rounds, separated by
    :func:`round_costs` (process CPU time; the wall clock is kept beside it).  The paper
    presets run :data:`PAPER_ROUNDS` rounds, so a whole run there is the fixed part plus that
    many rounds (``seconds_per_replica_round_paper``)."""
    m, n, d, k = size
    spec = ProblemSpec(m=m, k=k, n=n, d=d, sigma=0.1, scale=0.25, dtype=np.dtype(dtype).name)
    problems = spec.generate_levels(np.random.default_rng(0), (0.0, 0.1, 0.2, 0.4)[:levels])
    problem = problems[0]
    theta0 = np.tile(initial_parameters(problem, B, "official", rng=np.random.default_rng(1)), (levels, 1, 1))
    gammas = np.tile([0.1, 0.03, 0.01], levels * B // 3 + 1)[: levels * B]
    shared = {} if levels == 1 else dict(responses=np.stack([pb.y for pb in problems]),
                                         response_of=np.repeat(np.arange(levels), B))
    ifca(problem, theta0, gammas, n_rounds=2, **shared)  # compile and warm up
    cost = round_costs({"ifca": lambda T: ifca(problem, theta0, gammas, n_rounds=T, **shared)}, rounds,
                       repeats)["ifca"]
    round_seconds, fixed, marginal = cost["cpu"], cost["fixed"], cost["marginal"]
    replicas = levels * B
    per = round_seconds / replicas
    per_paper = (fixed + PAPER_ROUNDS * round_seconds) / (PAPER_ROUNDS * replicas)
    flops = (k + 1) * 2.0 * problem.N * d
    # the round's prediction product alone (mixreg.kernels.predict: the (B k, d) models by the
    # (d, N) data), best of 10: the share of the round that the BLAS's speed at this shape fixes
    P = np.empty((replicas * k, problem.N), dtype=problem.dtype)
    prediction = min(_timed(lambda: predict(theta0, problem.X, out=P))[0] for _ in range(10)) / replicas
    th = theta0[0].copy()
    naive = min(_timed(lambda: naive_round(problem, th, 0.1))[0] for _ in range(naive_rounds))
    return {"m": m, "n": n, "d": d, "k": k, "B": replicas, "levels": levels, "dtype": np.dtype(dtype).name,
            "seconds_per_replica_round": per, "wall_seconds_per_replica_round": cost["wall"] / replicas,
            "marginal": marginal, "flops_per_replica_round": flops, "gflops": flops / per / 1e9,
            "prediction_seconds_per_replica_round": prediction, "prediction_flops": k * 2.0 * problem.N * d,
            "fixed_seconds_per_run": fixed, "seconds_per_replica_round_paper": per_paper,
            "gflops_paper": flops / per_paper / 1e9,
            "naive_seconds_per_replica_round": naive, "speedup_vs_naive": naive / per}


#: The benchmark's size for every registered driver: (m, n, d, k), float64, B = 30 replicas.
DRIVER_SIZE = (100, 50, 200, 2)


def _local_steps(options, default=1):
    return int(options.get("local_steps", default))


#: The floor of a round: the flops per replica-round an algorithm cannot do without, as a
#: function of ``(N, d, k, options, sizes)`` (the registry entry's fixed options, the clients'
#: sizes), with its reason.  A product of ``C`` rows by the ``N x d`` data costs ``2 C N d``.  The
#: floors count each needed product once: a prediction already computed (the identity estimate's
#: prediction of the chosen model is the first local step's) is not counted again, and an update
#: that touches only the rows of the chosen model counts those rows once, not once per model.
DRIVER_FLOORS = {
    "ifca": (lambda N, d, k, o, sizes: (k + 1) * 2.0 * N * d,
             "k predictions + the gradient of the chosen model: (k + 1) 2 N d"),
    "ifca_data": (lambda N, d, k, o, sizes: (k + 1) * 2.0 * N * d, "as ifca: (k + 1) 2 N d"),
    "ifca_model": (lambda N, d, k, o, sizes: (k + 1) * 2.0 * N * d
                   + (_local_steps(o) - 1) * 2.0 * float(np.sum(np.minimum(sizes, d) ** 2.0)),
                   "k predictions, then tau local steps unrolled: one gradient of the chosen model "
                   "and tau - 1 products with each client's Gram matrix (n_i x n_i, or d x d when "
                   "n_i > d), the first prediction already made: (k + 1) 2 N d + (tau - 1) 2 "
                   "sum_i min(n_i, d)^2"),
    "fedavg": (lambda N, d, k, o, sizes: (k + 1) * 2.0 * N * d,
               "the decoder's k predictions + one product for the update (the local steps are "
               "affine, folded into precomputed operators): (k + 1) 2 N d"),
    "fedprox": (lambda N, d, k, o, sizes: (k + 1) * 2.0 * N * d, "as fedavg: (k + 1) 2 N d"),
    "oneshot": (lambda N, d, k, o, sizes: 4.0 * N * d,
                "fixed labels: a prediction and an update product on each row's cluster: 4 N d"),
    "pacfl": (lambda N, d, k, o, sizes: 4.0 * N * d, "as oneshot: 4 N d"),
    "pacfl_x": (lambda N, d, k, o, sizes: 4.0 * N * d, "as oneshot: 4 N d"),
    "kfed": (lambda N, d, k, o, sizes: 4.0 * N * d, "as oneshot: 4 N d"),
    "fesem": (lambda N, d, k, o, sizes: (1 + 2 * _local_steps(o)) * 2.0 * N * d,
              "the objective's prediction of the centres, then s local steps of a prediction and a "
              "gradient: (1 + 2 s) 2 N d"),
    "ifca_points": (lambda N, d, k, o, sizes: (k + 1) * 2.0 * N * d,
                    "k predictions + the update on each row's chosen model: (k + 1) 2 N d"),
    "two_phase": (lambda N, d, k, o, sizes: (k + 1) * 2.0 * N * d,
                  "Phase 2 as fedavg: (k + 1) 2 N d (Phase 1 is in the fixed part)"),
}


def bench_drivers(dtype=np.float64, size=DRIVER_SIZE, B=30, rounds=20, repeats=5, names=None, peak_n=2000,
                  peaks=None):
    """Every built-in driver (or the registered ones in ``names``) on one problem: the cost of a
    round and of the fixed part (set-up: local fits, clustering, Phase 1), against the driver's floor
    (:data:`DRIVER_FLOORS`; ``None`` for a driver registered without one, e.g. a user's), as a
    fraction of the GEMM peak measured interleaved with the drivers.

    The peak (:func:`gemm_peak` of ``peak_n x peak_n`` matrices, best of 2) is measured after
    every pass over the drivers, ``3 repeats`` times through the section, and the fractions
    divide by the best of these (``peak_gflops`` of every row; the measurements in order are
    appended to ``peaks``, a list, if given): the drivers' times are best-of times too, so both
    come from the fastest moments of the same minutes.  A peak measured once before and once after
    the section moved from 74 to 87 GFLOP/s within it on the benchmark's machine.  Beside it,
    ``fraction_of_peak_paired``: each repeat's own round cost (its run of ``2 rounds`` rounds less
    its run of ``rounds``) against the mean of the two peaks measured around those runs, the
    median over the repeats (0 for a repeat whose two runs noise reversed), which follows the
    machine's drift instead of taking both sides' best moments.

    Each driver runs ``B`` replicas from the same Gaussian initial parameters with its contract
    suite's stable step size (:data:`mixreg.algorithms.CHECK_SETTINGS`), divided by 4 until no
    replica diverges in ``2 rounds`` rounds (a diverged replica leaves the products, which would
    make the rounds look cheap; ``step_size`` is the one used, ``diverged`` how many still did
    after 8 tries); the drivers are timed interleaved (:func:`round_costs`).  The set-up
    (``setup_seconds``) is the best of ``repeats`` runs of one round (interleaved too) less a
    round's cost, and ``setup_rounds`` that in rounds' worth: the difference of one short run and
    a round is steadier than ``fixed_seconds_per_run``, :func:`round_costs`' intercept, which
    subtracts ``rounds`` rounds (twice the short runs' noise plus the long ones').
    """
    from mixreg.algorithms import ALGORITHMS, CHECK_SETTINGS, builtin_algorithms

    m, n, d, k = size
    problem = ProblemSpec(m=m, k=k, n=n, d=d, sigma=0.1, scale=0.25, dtype=np.dtype(dtype).name).generate(
        np.random.default_rng(0))
    init = initial_parameters(problem, B, "gaussian", rng=np.random.default_rng(1), scale=0.25)
    names = [name for name in ALGORITHMS if name in builtin_algorithms()] if names is None else list(names)
    runs, diverged, steps = {}, {}, {}
    for name in names:
        algorithm = ALGORITHMS[name]
        step = CHECK_SETTINGS.get(name, {}).get("step_size", 0.1)
        for _ in range(8):  # the contract's step is stable on its small problem; here a quarter
            def run(T, algorithm=algorithm, step=step):  # of it until no replica diverges
                return algorithm.run(problem, init, step, n_rounds=T, rng=np.random.default_rng(2))

            diverged[name] = int(np.sum(run(2 * rounds).diverged))  # compiles, and checks the step
            if not diverged[name]:
                break
            step /= 4
        runs[name], steps[name] = run, step
    measured = [] if peaks is None else peaks

    def probe():
        measured.append(gemm_peak(dtype, n=peak_n, repeats=2))

    costs = round_costs(runs, rounds, repeats, probe=probe)
    one = {name: [] for name in names}  # runs of one round: the set-up plus a round
    for _ in range(repeats):
        for name in names:
            one[name].append(_timed(lambda run=runs[name]: run(1))[0])
        probe()
    section = measured[-3 * repeats:]
    peak = max(section)
    # the peak of each repeat: the mean of the two probes around its runs of 2 rounds rounds
    repeat_peaks = [(section[2 * r] + section[2 * r + 1]) / 2 for r in range(repeats)]
    rows = []
    for name in names:
        cost, floor = costs[name], DRIVER_FLOORS.get(name)
        flops = None if floor is None else floor[0](problem.N, d, k, ALGORITHMS[name].options, problem.sizes)
        per = cost["cpu"] / B
        paired = None
        if flops is not None:  # each repeat's own round cost (its two runs) against its own peak
            runs_of = cost["samples"]
            fractions = [flops * rounds * B / (long[0] - short[0]) / 1e9 / p if long[0] > short[0] else 0.0
                         for short, long, p in zip(runs_of[rounds], runs_of[2 * rounds], repeat_peaks)]
            paired = float(np.median(fractions))
        setup = max(0.0, min(one[name]) - cost["cpu"])
        rows.append({"driver": name, "m": m, "n": n, "d": d, "k": k, "B": B, "dtype": np.dtype(dtype).name,
                     "seconds_per_replica_round": per, "wall_seconds_per_replica_round": cost["wall"] / B,
                     "marginal": cost["marginal"], "fixed_seconds_per_run": cost["fixed"],
                     "setup_seconds": setup, "setup_rounds": setup / cost["cpu"] if cost["cpu"] > 0 else None,
                     "floor_flops_per_replica_round": flops, "floor": None if floor is None else floor[1],
                     "floor_gflops": None if flops is None else flops / per / 1e9,
                     "peak_gflops": peak, "fraction_of_peak": None if flops is None else flops / per / 1e9 / peak,
                     "fraction_of_peak_paired": paired,
                     "diverged": diverged[name], "step_size": steps[name]})
    return rows


_KERNEL_CHILD = """
import json, sys
import numpy as np
from threadpoolctl import threadpool_limits
from experiments.bench_ifca import SIZES, bench_ifca, gemm_peak
from mixreg.provenance import blas_kernels
with threadpool_limits(limits=1):
    row = bench_ifca(np.float32, SIZES[0], rounds=int(sys.argv[1]), naive_rounds=1)
    print(json.dumps({"kernels": list(blas_kernels()), "peak_float32": gemm_peak(np.float32),
                      "peak_float64": gemm_peak(np.float64),
                      "ifca_seconds_per_replica_round": row["seconds_per_replica_round"]}))
"""


def bench_kernels(rounds=20):
    """The ``kernels`` section: each OpenBLAS kernel set of
    :data:`mixreg.provenance.OPENBLAS_KERNEL_FLAGS` this CPU can run, in a
    child process with ``OPENBLAS_CORETYPE`` set; ``[]`` when the BLAS is not OpenBLAS or the CPU
    has none of them (the kernels each child reports are kept, to show the setting took)."""
    from threadpoolctl import threadpool_info

    if not any(lib.get("internal_api") == "openblas" for lib in threadpool_info()):
        return []
    flags, rows = cpu_flags(), []
    for name, flag in OPENBLAS_KERNEL_FLAGS.items():
        if flag not in flags:
            continue
        child = subprocess.run([sys.executable, "-c", _KERNEL_CHILD, str(rounds)],
                               env={**os.environ, "OPENBLAS_CORETYPE": name},
                               cwd=pathlib.Path(__file__).resolve().parent.parent,
                               capture_output=True, text=True, check=False)
        if child.returncode != 0:
            raise RuntimeError(f"the {name} kernels' benchmark failed: {child.stderr.strip().splitlines()[-1:]}")
        rows.append({"requested": name, **json.loads(child.stdout.strip().splitlines()[-1])})
    for row in rows:
        row["vs_first"] = {key: (row[key] / rows[0][key] if key.startswith("peak") else
                                 rows[0][key] / row[key])  # speed ratios: > 1 is faster
                           for key in ("peak_float32", "peak_float64", "ifca_seconds_per_replica_round")}
    return rows


#: Programs the competitor section compares IFCA with (see experiments.bench_competitors):
#: the batched PyTorch and JAX programs are timed when those libraries are installed
#: (``pip install -e ".[bench]"``), batched NumPy always.
COMPETITORS = ("numpy", "torch", "jax", "jax-clients")


def bench_competitors(out, quick=False, rounds=10, repeats=3):
    """IFCA against the batched programs a theorist would write instead
    (:mod:`experiments.bench_competitors`), in a child process: it pins itself to one CPU and
    sets XLA's threads before JAX starts (the only way found to keep JAX on one thread), which
    must not touch this process, whose engine and placement sections use both cores.  In the
    child, every program runs on the same problem, initial parameters and step sizes, interleaved
    with mixreg's IFCA, and is checked equal to it (identical final assignments, parameters to
    rounding) before its times count.  Returns the child's report, with per case
    ``best_competitor`` (the fastest of PyTorch and JAX by process CPU time, ``None`` if neither
    is installed), ``speedup_vs_best`` (its CPU time per replica-round over mixreg's) and
    ``speedup_vs_best_paired`` (the smallest over PyTorch and JAX of the median, over the repeats,
    of a repeat's own CPU-time ratio to mixreg's: each repeat's runs are seconds apart, so a
    machine whose speed drifts during the section moves it less)."""
    path = pathlib.Path(out) / "competitors.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "experiments.bench_competitors", "--json", str(path), "--no-probes",
           "--rounds", str(rounds), "--repeats", str(repeats)] + (["--quick"] if quick else [])
    child = subprocess.run(cmd, cwd=pathlib.Path(__file__).resolve().parent.parent, capture_output=True, text=True,
                           check=False)
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise RuntimeError(f"the competitor benchmark failed: {last}")
    report = json.loads(path.read_text())
    for case in report["cases"]:
        programs = case["programs"]
        disagree = [name for name, row in programs.items() if not row.get("agreement", {"ok": True})["ok"]]
        if disagree:
            raise RuntimeError(f"the competitor programs {disagree} disagree with mixreg at (m, n, d, k, B) = "
                               f"({case['m']}, {case['n']}, {case['d']}, {case['k']}, {case['B']}), {case['dtype']}")
        batched = {name: row["cpu_ms_per_replica_round"] for name, row in programs.items()
                   if name in ("torch", "jax", "jax-clients")}
        best = min(batched, key=batched.get) if batched else None
        case["best_competitor"] = best
        case["speedup_vs_best"] = (None if best is None else
                                   batched[best] / programs["mixreg"]["cpu_ms_per_replica_round"])
        case["speedup_vs_best_paired"] = (None if best is None else
                                          min(programs[name]["cpu_vs_mixreg_paired"] for name in batched))
    return report


def bench_engine(tmp, trials=8):
    """Parallel efficiency and overhead per task on a realistic IFCA cell (k = 2, d = 200)."""
    cell = dict(m=100, k=2, n=20, d=200, sigma=0.5, r=0.2, protocol="official", n_rounds=300, n_inits=10,
                step_sizes=(1.0, 0.1, 0.01), init="official", init_scale=1.0, threshold_offset=0.001,
                dtype="float64")
    cells = tuple(dict(cell, r=r) for r in (0.1, 0.2))
    sweep = Sweep(name="bench", trial_fn=ifca_success_trial, spec_type=IfcaSuccessSpec, cells=cells, n_trials=trials, root_seed=1,
                  config={"bench": True}, chunk_size=1)
    out = {}
    # start the worker processes first (loky reuses them), so the timing is of the sweep only
    warm = Sweep(name="warm", trial_fn=ifca_success_trial, spec_type=IfcaSuccessSpec, cells=(dict(cell, d=10, m=10, n_rounds=2),),
                 n_trials=2, root_seed=0, config={"warm": True}, chunk_size=1)
    run_sweep(warm, pathlib.Path(tmp) / "warm", jobs=2, kernel_threads=1, progress=False, overwrite=True)
    for jobs in (1, 2):
        cpu, start = _cpu_seconds(), time.perf_counter()
        res = run_sweep(sweep, pathlib.Path(tmp) / f"jobs{jobs}", jobs=jobs, kernel_threads=1,
                        progress=False, overwrite=True)
        elapsed = time.perf_counter() - start
        foreign = _foreign_load(cpu, _cpu_seconds(), elapsed)
        if res.failures:  # a failed trial takes no time: the ratios would mean nothing
            raise RuntimeError(f"the engine benchmark's trials failed: {res.failures[0]}")
        inside = sum(r["wall_time"] for r in res.records)
        out[jobs] = {"elapsed": elapsed, "trial_seconds": inside, "tasks": len(res.records), "other": foreign}
    t1, t2 = out[1]["elapsed"], out[2]["elapsed"]
    return {
        "tasks": out[1]["tasks"],
        "seconds_1_worker": t1,
        "seconds_2_workers": t2,
        "parallel_efficiency": t1 / (2 * t2),
        "overhead_per_task_1_worker": (t1 - out[1]["trial_seconds"]) / out[1]["tasks"],
        "overhead_fraction_1_worker": (t1 - out[1]["trial_seconds"]) / t1,
        # cores other processes took meanwhile (see bench_placement): above ~0.1 the efficiency is understated
        "other_load_cores_1_worker": out[1]["other"],
        "other_load_cores_2_workers": out[2]["other"],
    }


#: The placements of :func:`bench_placement`: (label, worker processes, BLAS threads per worker).
PLACEMENTS = (("a", 2, 1), ("b", 1, 2), ("c", 2, 2), ("d", 1, 1))


def _cpu_seconds():
    """``(busy, ours, steal)``: CPU seconds the whole machine has spent busy, those of this
    process and its live descendants (the engine's workers), and those the hypervisor took
    (steal), from ``/proc``; ``None`` where there is no ``/proc`` (not Linux)."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        with open("/proc/stat") as f:
            user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in f.readline().split()[1:9])
        parent, times = {}, {}
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:  # the process ended meanwhile
                continue
            pid = int(entry.name)
            parent[pid] = int(fields[1])
            times[pid] = int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, ValueError, AttributeError):
        return None
    me, ours = os.getpid(), 0
    for pid, t in times.items():
        p, seen = pid, 0
        while p > 1 and p != me and seen < 64:
            p, seen = parent.get(p, 0), seen + 1
        ours += t if p == me else 0
    return (user + nice + system + irq + softirq) / ticks, ours / ticks, steal / ticks


def _foreign_load(before, after, elapsed):
    """Average number of cores that other processes (and the hypervisor's steal) took between
    two :func:`_cpu_seconds` readings ``elapsed`` seconds apart; ``None`` if unknown."""
    if before is None or after is None or elapsed <= 0:
        return None
    busy, ours, steal = (a - b for a, b in zip(after, before))
    return max(0.0, busy - ours + steal) / elapsed


def _record_key(record):
    """A record without its timing, floats as hex so that NaN equals NaN and any bit counts."""
    return tuple((key, value.hex() if isinstance(value, float) else value)
                 for key, value in record.items() if key != "wall_time")


def bench_placement(tmp, quick=False, repeats=2):
    """Where to put the threads on 2 cores: the same IFCA trials under each of :data:`PLACEMENTS`.

    Four tasks (two cells x two trials, one trial per task) of the paper-a size, float32, 30 runs
    (10 initialisations x 3 step sizes) of 40 rounds; ``quick`` shrinks them to ``d = 50``.
    Before each timed run the placement's own worker processes are started by a tiny sweep
    with the same settings (loky starts new workers when the thread limit changes), so process
    start-up is not timed; each placement is timed ``repeats`` times and the best is kept.
    Returns per placement the seconds, the throughput relative to placement ``a``, whether
    the records (all fields but ``wall_time``) are bit-identical to placement ``d``'s, and the
    average number of cores that other processes took meanwhile (``other_load_cores``, from
    ``/proc``; threaded BLAS suffers most from a shared core, so read the ratios with it).
    """
    if quick:
        size = dict(m=20, k=2, n=20, d=50, n_rounds=3)
    else:
        size = dict(m=100, k=2, n=100, d=1000, n_rounds=40)
    cell = dict(size, sigma=0.1, r=0.25, protocol="official", n_inits=10, step_sizes=(1.0, 0.1, 0.01),
                init="official", init_scale=1.0, threshold_offset=0.001, dtype="float32")
    cells = tuple(dict(cell, r=r) for r in (0.25, 0.5))
    sweep = Sweep(name="bench-placement", trial_fn=ifca_success_trial, spec_type=IfcaSuccessSpec, cells=cells, n_trials=2, root_seed=2,
                  config={"bench": "placement"}, chunk_size=1)
    warm = Sweep(name="warm", trial_fn=ifca_success_trial, spec_type=IfcaSuccessSpec, cells=(dict(cell, d=10, m=10, n=10, n_rounds=2),),
                 n_trials=4, root_seed=0, config={"warm": True}, chunk_size=1)
    tmp = pathlib.Path(tmp)
    seconds, records = {}, {}
    for _ in range(repeats):
        for label, jobs, threads in PLACEMENTS:
            run_sweep(warm, tmp / "warm", jobs=jobs, kernel_threads=threads, progress=False, overwrite=True)
            cpu, start = _cpu_seconds(), time.perf_counter()
            res = run_sweep(sweep, tmp / f"placement-{label}", jobs=jobs, kernel_threads=threads,
                            progress=False, overwrite=True)
            elapsed = time.perf_counter() - start
            foreign = _foreign_load(cpu, _cpu_seconds(), elapsed)
            if res.failures:  # a failed trial takes no time: the ratios would mean nothing
                raise RuntimeError(f"the placement benchmark's trials failed ({label}: {jobs} workers x "
                                   f"{threads} threads): {res.failures[0]['error']}")
            keys = sorted(_record_key(r) for r in res.records)
            if label in records and keys != records[label] and threads == 1:
                raise RuntimeError(f"placement {label} (one thread per worker) gave different records "
                                   "in two runs of the same sweep")
            records.setdefault(label, keys)
            if elapsed < seconds.get(label, (float("inf"), None))[0]:
                seconds[label] = (elapsed, foreign)
    tasks = len(records["a"])
    out = {"tasks": tasks, "cell": {key: cell[key] for key in ("m", "n", "d", "k", "n_rounds", "dtype")},
           "runs_per_trial": cell["n_inits"] * len(cell["step_sizes"]), "repeats": repeats, "placements": {}}
    for label, jobs, threads in PLACEMENTS:
        elapsed, foreign = seconds[label]
        out["placements"][label] = {
            "jobs": jobs, "kernel_threads": threads, "seconds": elapsed,
            "tasks_per_second": tasks / elapsed,
            "throughput_vs_a": seconds["a"][0] / elapsed,
            "records_identical_to_d": records[label] == records["d"],
            "other_load_cores": foreign,
        }
    return out


def build_parser():
    """The benchmark's command line; a usage error is one line (exit 2)."""
    parser = _cli.OneLineParser(prog=PROG, description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--quick", action="store_true", help="smaller rounds, first size only (smoke test)")
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path("results") / "bench", metavar="DIR",
                        help=f"results directory; the report is DIR/{REPORT_NAME} (default: results/bench)")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of a fault instead of its one-line message")
    return parser


def prepare_out(out):
    """Create the results directory ``out`` and check that the report can be written there.

    Done before anything is measured, so that a bad ``--out`` costs nothing.

    Returns
    -------
    pathlib.Path
        The report's path, ``out / REPORT_NAME`` (not written yet).

    Raises
    ------
    ValueError
        ``out`` exists and is not a directory, or the report's path is a directory.
    OSError
        ``out`` cannot be created or written (one line naming it).
    """
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out '{out}' exists and is not a directory")
    report = out / REPORT_NAME
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot create the results directory '{out}': {exc.strerror or exc}") from None
    if report.is_dir():
        raise ValueError(f"--out '{out}': '{report}' is a directory; the report would be written there")
    try:
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise OSError(exc.errno, f"cannot write into the results directory '{out}': {exc.strerror or exc}") from None
    return report


def main(argv=None):
    """Check the arguments and ``--out``, measure, print the tables, write the report; the exit status.

    0: the report is written.  2: bad input (a flag, an ``--out`` that is not a directory), one
    line, before anything is measured.  1: a runtime fault (a directory that cannot be created or
    written, a measurement that fails), one line.  ``--debug``: the traceback instead of the line.
    Ctrl-C and SIGTERM: run as a command (``python -m``), one line and the exit status 130 or 143;
    called in-process, ``main`` raises them (``KeyboardInterrupt``, a
    :class:`mixreg.montecarlo.Terminated` from a sweep), so they stop the caller too.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        report_path = prepare_out(args.out)
    except (ValueError, OSError) as exc:
        if args.debug:
            raise
        if isinstance(exc, ValueError):
            parser.exit(2, f"{PROG}: error: {_cli.first_line(exc)}\n")
        _cli.say(PROG, f"error: {_cli.describe_fault(exc)}")
        return 1
    command_line = __name__ == "__main__"
    with raise_on_sigterm() if command_line else contextlib.nullcontext():
        try:
            report = measure(args.quick, args.out)
            report_path.write_text(json.dumps(report, indent=2, default=str))
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (a Terminated)
            if args.debug or not command_line:
                raise
            terminated = isinstance(exc, Terminated)
            _cli.say(PROG, f"{'terminated' if terminated else 'interrupted'}; no report written")
            return 143 if terminated else 130
        except Exception as exc:  # noqa: BLE001 - every fault ends in one line (--debug: the traceback)
            if args.debug:
                raise
            _cli.say(PROG, f"error: {_cli.describe_fault(exc)}")
            return 1
    print(f"wrote {report_path}")
    return 0


def measure(quick, out):
    """Every section of the benchmark (``quick``: the smoke run), printed as it is measured; the
    report (a dict).  The engine's and the placement's sweeps write under ``out``."""
    out = pathlib.Path(out)
    sizes = SIZES[:1] if quick else SIZES
    rounds = 3 if quick else 20
    dtypes = (np.float32, np.float64)
    report = {"environment": environment_record(), "load_average_before": _load_average(), "peak_gflops": {},
              "ifca": []}
    # One BLAS thread throughout, peak included: the engine runs one single-threaded worker per
    # core (bit-identical records; faster per trial than threaded kernels, see docs/benchmark.md), so a
    # core's own peak is the yardstick.
    with threadpool_limits(limits=1):
        peaks = {np.dtype(t).name: [gemm_peak(t)] for t in dtypes}
        # B = 30 alone; then the paper presets' batches in float32: the two r of the m-n presets
        # (B = 60) and the four sigma of the r-sigma presets (B = 120), one draw each
        plan = ([(t, size, 1) for size in sizes for t in dtypes]
                + [(np.float32, size, levels) for levels in (2, 4) for size in sizes])
        rows = [bench_ifca(t, size, rounds=rounds, naive_rounds=1 if quick else 3, levels=levels)
                for t, size, levels in plan]
        # The peak is measured before and after the runs and the best is kept, so that a busy
        # moment of a shared machine cannot make the fractions of peak look better than they are.
        for t in dtypes:
            peaks[np.dtype(t).name].append(gemm_peak(t))
    report["peak_gflops"] = {name: max(v) for name, v in peaks.items()}
    print("matrix-multiply peak, one thread: "
          + ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in report["peak_gflops"].items()))
    print(f"{'(m, n, d, k)':>22} {'B':>4} {'levels':>6} {'dtype':>8} {'ms/replica-round':>17} {'GFLOP/s':>8} "
          f"{'of peak':>8} {'prediction':>11} {'bound':>6} {'fixed s/run':>12} {f'{PAPER_ROUNDS}-round run':>14} "
          f"{'naive ms':>9} {'speed-up':>9}")
    for row in rows:
        peak = report["peak_gflops"][row["dtype"]]
        row["fraction_of_peak"] = row["gflops"] / peak
        row["fraction_of_peak_paper"] = row["gflops_paper"] / peak
        pred, pred_flops = row["prediction_seconds_per_replica_round"], row["prediction_flops"]
        row["prediction_fraction_of_peak"] = pred_flops / pred / 1e9 / peak
        # the round's fraction of peak if all but the prediction product ran at the peak
        flops = row["flops_per_replica_round"]
        row["bound_fraction_of_peak"] = flops / (pred * peak * 1e9 + flops - pred_flops)
        report["ifca"].append(row)
        size = (row["m"], row["n"], row["d"], row["k"])
        print(f"{str(size):>22} {row['B']:>4} {row['levels']:>6} {row['dtype']:>8} "
              f"{1e3 * row['seconds_per_replica_round']:>16.3f}{' ' if row['marginal'] else '*'} "
              f"{row['gflops']:>8.1f} {row['fraction_of_peak']:>8.0%} {row['prediction_fraction_of_peak']:>11.0%} "
              f"{row['bound_fraction_of_peak']:>6.0%} {row['fixed_seconds_per_run']:>12.3f} "
              f"{row['fraction_of_peak_paper']:>14.0%} "
              f"{1e3 * row['naive_seconds_per_replica_round']:>9.2f} {row['speedup_vs_naive']:>8.1f}x")
    print(f"ms/replica-round: a round's cost (runs of {rounds} and {2 * rounds} rounds; * where noise hid the "
          f"difference: the longer run's average); prediction: the round's prediction product alone (its k of "
          f"the (k + 1) products), as a fraction of the peak; bound: the round's fraction of peak were everything "
          f"else done at the peak; {PAPER_ROUNDS}-round run: the fraction of peak of a whole run of the paper "
          "presets' length, its fixed cost included")
    kernels = bench_kernels(rounds=rounds)
    report["kernels"] = {"this_process": list(blas_kernels()), "rows": kernels}
    if kernels:
        print(f"BLAS kernels (each in a child process with OPENBLAS_CORETYPE set; this process runs "
              f"{'+'.join(blas_kernels()) or 'unknown'}; ratios are speeds against {kernels[0]['requested']}):")
        print(f"{'kernels':>10} {'peak GFLOP/s f32':>17} {'f64':>5} {'IFCA ms/replica-round':>22} "
              f"{'speed: f32 peak':>16} {'f64 peak':>9} {'IFCA':>6}")
        for row in kernels:
            ratio = row["vs_first"]
            print(f"{'+'.join(row['kernels']):>10} {row['peak_float32']:>17.0f} {row['peak_float64']:>5.0f} "
                  f"{1e3 * row['ifca_seconds_per_replica_round']:>22.3f} {ratio['peak_float32']:>15.2f}x "
                  f"{ratio['peak_float64']:>8.2f}x {ratio['ifca_seconds_per_replica_round']:>5.2f}x")
    interleaved = []
    with threadpool_limits(limits=1):  # the peak within the section: the machine's speed drifts within a run
        before = gemm_peak(np.float64)
        drivers = bench_drivers(size=(20, 10, 30, 2) if quick else DRIVER_SIZE, B=6 if quick else 30,
                                rounds=2 if quick else 20, repeats=2 if quick else 5,
                                peak_n=1000 if quick else 2000, peaks=interleaved)
        after = gemm_peak(np.float64)
    report["drivers"] = drivers
    peak64 = drivers[0]["peak_gflops"]  # the best of the peaks measured between the drivers' passes
    report["drivers_peak_gflops"] = {"before": before, "after": after, "interleaved": interleaved, "used": peak64}
    m, n, d, k = DRIVER_SIZE if not quick else (20, 10, 30, 2)
    print(f"every built-in driver at (m, n, d, k) = ({m}, {n}, {d}, {k}), float64, B = {drivers[0]['B']}, "
          f"one thread (process CPU time; the floor is the flops a round cannot do without; float64 peak "
          f"{before:.0f} GFLOP/s before the section, {after:.0f} after, {min(interleaved):.0f}-{peak64:.0f} "
          f"between the drivers' passes, fractions of {peak64:.0f}):")
    print(f"{'driver':>12} {'ms/replica-round':>17} {'wall':>7} {'floor flops':>12} {'of peak':>8} {'paired':>7} "
          f"{'set-up s':>9} {'set-up rounds':>14} {'diverged':>9}")
    for row in drivers:
        frac = "-" if row["fraction_of_peak"] is None else f"{row['fraction_of_peak']:.0%}"
        paired = "-" if row["fraction_of_peak_paired"] is None else f"{row['fraction_of_peak_paired']:.0%}"
        flops = "-" if row["floor_flops_per_replica_round"] is None else f"{row['floor_flops_per_replica_round']:.3g}"
        setup = "-" if row["setup_rounds"] is None else f"{row['setup_rounds']:.1f}"
        print(f"{row['driver']:>12} {1e3 * row['seconds_per_replica_round']:>16.3f}"
              f"{' ' if row['marginal'] else '*'} {1e3 * row['wall_seconds_per_replica_round']:>7.3f} "
              f"{flops:>12} {frac:>8} {paired:>7} {row['setup_seconds']:>9.3f} {setup:>14} {row['diverged']:>9}")
    print("of peak: the round's best cost against the best peak of the section; paired: each repeat's round "
          "cost against the peak measured around it, the median")
    comp = bench_competitors(out, quick=quick)
    report["competitors"] = comp
    print("IFCA against the batched programs a user would write instead (one thread, one process, interleaved; "
          "ms per replica-round by process CPU time; each checked equal to mixreg first):")
    print(f"{'(m, n, d, k)':>22} {'B':>4} {'dtype':>8} " + " ".join(f"{name:>11}" for name in ("mixreg",) + COMPETITORS)
          + f" {'best batched':>13} {'mixreg faster by':>17} {'paired':>7}")
    for case in comp["cases"]:
        cells = [f"{case['programs'][name]['cpu_ms_per_replica_round']:>11.3f}" if name in case["programs"]
                 else f"{'-':>11}" for name in ("mixreg",) + COMPETITORS]
        speed = "-" if case["speedup_vs_best"] is None else f"{case['speedup_vs_best']:.2f}x"
        paired = "-" if case["speedup_vs_best_paired"] is None else f"{case['speedup_vs_best_paired']:.2f}x"
        print(f"{str((case['m'], case['n'], case['d'], case['k'])):>22} {case['B']:>4} {case['dtype']:>8} "
              + " ".join(cells) + f" {case['best_competitor'] or '-':>13} {speed:>17} {paired:>7}")
    eng = bench_engine(out / "engine", trials=2 if quick else 12)
    report["engine"] = eng
    print(f"engine: {eng['tasks']} tasks, 1 worker {eng['seconds_1_worker']:.1f} s, 2 workers "
          f"{eng['seconds_2_workers']:.1f} s -> parallel efficiency {eng['parallel_efficiency']:.0%}; "
          f"overhead {1e3 * eng['overhead_per_task_1_worker']:.0f} ms per task "
          f"({eng['overhead_fraction_1_worker']:.1%} of the 1-worker run); other processes took "
          + " and ".join("?" if v is None else f"{v:.2f}" for v in
                         (eng["other_load_cores_1_worker"], eng["other_load_cores_2_workers"]))
          + " cores meanwhile")
    place = bench_placement(out / "placement", quick=quick, repeats=1 if quick else 2)
    report["placement"] = place
    c = place["cell"]
    print(f"thread placement on 2 cores: {place['tasks']} IFCA trials at (m, n, d, k) = "
          f"({c['m']}, {c['n']}, {c['d']}, {c['k']}), {c['dtype']}, {place['runs_per_trial']} runs x "
          f"{c['n_rounds']} rounds, best of {place['repeats']}")
    print(f"{'placement':>10} {'workers':>8} {'threads':>8} {'seconds':>8} {'tasks/s':>8} {'vs (a)':>7} "
          f"{'records = (d)':>14} {'other load':>11}")
    for label, row in place["placements"].items():
        other = "?" if row["other_load_cores"] is None else f"{row['other_load_cores']:.2f} cores"
        print(f"{'(' + label + ')':>10} {row['jobs']:>8} {row['kernel_threads']:>8} {row['seconds']:>8.2f} "
              f"{row['tasks_per_second']:>8.3f} {row['throughput_vs_a']:>6.2f}x "
              f"{'yes' if row['records_identical_to_d'] else 'no':>14} {other:>11}")
    floors = paper_floors(seconds=0.5 if quick else 3.0, n=1000 if quick else 2000)
    report["paper_floors"] = floors
    print_floors(floors)
    report["load_average_after"] = _load_average()
    print("load average (1, 5, 15 min) before: " + _format_load(report["load_average_before"])
          + "; after: " + _format_load(report["load_average_after"]))
    return report


def _load_average():
    """The system's load average over 1, 5 and 15 minutes (``None`` where the OS has none)."""
    try:
        return list(os.getloadavg())
    except (OSError, AttributeError):
        return None


def _format_load(load):
    return "unknown" if load is None else ", ".join(f"{v:.2f}" for v in load)


if __name__ == "__main__":
    raise SystemExit(main())
