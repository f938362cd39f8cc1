"""Benchmark: the paper presets' flop floors on this machine, and what a time target asks of it.

A paper preset's *floor* is its flops at IFCA's own count (``(k + 1) 2 N d`` per replica-round,
every replica for all its rounds: the sweep's ``cost_fn``, the count ``--dry-run`` uses) divided
by both cores' float32 matrix-multiply peak measured at once, one single-threaded process per core
(:func:`concurrent_peak`), which is how the engine runs a paper preset (two workers, one BLAS
thread each).  No program computes a preset's products faster on this machine; only the rounds
of replicas that diverged, which the driver drops, come off the count.  So a time target for a
preset asks for ``floor / target`` of the peak throughout the run, and one below the floor
cannot be met here at all.

:func:`paper_floors` is the ``paper_floors`` section of ``python -m experiments.bench_ifca``
(:mod:`experiments.bench_ifca`), printed by :func:`print_floors`.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time

#: The paper presets, as ``(study, preset)``: Fig. 3(a) to 3(d) of the IFCA paper.
PRESETS = (("success_vs_R", "paper-a"), ("success_vs_R", "paper-b"),
           ("success_vs_mn", "paper-c"), ("success_vs_mn", "paper-d"))

#: The end-to-end targets (seconds on 2 idle cores) the project set for the paper presets:
#: paper-a alone, and the four panels of Fig. 3 one after the other.
TARGETS = (("paper-a", ("paper-a",), 18 * 60.0),
           ("all four panels", tuple(preset for _, preset in PRESETS), 6 * 3600.0))

_PEAK_CHILD = """
import json, sys, time
import numpy as np
start, seconds, n, dtype = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n)).astype(dtype)
b = rng.standard_normal((n, n)).astype(dtype)
a @ b
ready = time.time()
while time.time() < start:
    time.sleep(0.001)
first, best, stop = time.time(), float("inf"), start + seconds
while True:
    cpu = time.process_time()
    a @ b
    cpu = time.process_time() - cpu
    if time.time() > stop:  # a product that ended after the window may have run alone
        break
    best = min(best, cpu)
print(json.dumps({"gflops": 2.0 * n ** 3 / best / 1e9 if best < float("inf") else None,
                  "late_seconds": first - start, "ready_before_start": ready <= start}))
"""


def preset_flops(study: str, preset: str) -> float:
    """The flops of a paper preset at IFCA's own count: its sweep's ``cost_fn`` summed over the
    cells, times the trials per cell (``experiments.<study>.STUDY``)."""
    spec = importlib.import_module(f"experiments.{study}").STUDY
    sweep = spec.sweep(spec.preset(preset))
    cost = sweep.function("cost_fn")
    return float(sweep.n_trials) * sum(float(cost(dict(cell))) for cell in sweep.cells)


def concurrent_peak(workers: int = 2, seconds: float = 3.0, n: int = 2000, dtype: str = "float32",
                    lead: float = 2.0) -> dict:
    """Both cores' matrix-multiply peak measured at once: ``workers`` child processes with one
    BLAS thread each start ``n x n`` products at the same moment (``lead`` seconds after launch,
    time to import NumPy and warm up) and time them for ``seconds`` by process CPU time; each
    keeps its best product among those that ended within the window (so none ran alone).

    Returns ``{"gflops": sum of the workers' best GFLOP/s, "each": [...], "late_seconds": [...],
    "ready_before_start": [...]}``: a worker not ready before the start, or late to its first
    product, measured part of the window alone (reported, not hidden).
    """
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    start = time.time() + lead
    children = [subprocess.Popen([sys.executable, "-c", _PEAK_CHILD, repr(start), repr(seconds), str(n), dtype],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
                for _ in range(workers)]
    outputs = [child.communicate() for child in children]  # every child ended before any is judged
    results = []
    for child, (out, err) in zip(children, outputs):
        if child.returncode != 0:
            last = err.strip().splitlines()[-1] if err.strip() else f"exit status {child.returncode}"
            raise RuntimeError(f"the peak's child process failed: {last}")
        results.append(json.loads(out))
    each = [r["gflops"] for r in results]
    if any(g is None for g in each):
        raise RuntimeError(f"a peak's child process timed no product within its {seconds} s window")
    return {"gflops": float(sum(each)), "each": each, "dtype": dtype, "n": n, "window_seconds": seconds,
            "late_seconds": [r["late_seconds"] for r in results],
            "ready_before_start": [r["ready_before_start"] for r in results]}


def paper_floors(peak: dict | None = None, **peak_options) -> dict:
    """Every paper preset's flops and floor at the measured two-core float32 peak, and each
    target's demand on it (``needs_fraction_of_peak``: floor / target; above 1, the target is
    below the floor).  ``peak``: a :func:`concurrent_peak` result to use instead of measuring."""
    peak = concurrent_peak(**peak_options) if peak is None else peak
    rate = peak["gflops"] * 1e9
    presets = [{"study": study, "preset": name, "flops": flops, "floor_seconds": flops / rate}
               for study, name in PRESETS for flops in [preset_flops(study, name)]]
    floor = {row["preset"]: row["floor_seconds"] for row in presets}
    targets = []
    for label, names, seconds in TARGETS:
        need = sum(floor[name] for name in names)
        targets.append({"target": label, "presets": list(names), "seconds": seconds, "floor_seconds": need,
                        "needs_fraction_of_peak": need / seconds})
    return {"peak": peak, "presets": presets, "targets": targets}


def print_floors(report: dict) -> None:
    """The section's table."""
    peak = report["peak"]
    print(f"paper presets against this machine's floor (IFCA's flops, every replica every round, at both "
          f"cores' {peak['dtype']} peak measured at once: "
          + " + ".join(f"{g:.0f}" for g in peak["each"]) + f" = {peak['gflops']:.0f} GFLOP/s):")
    print(f"{'preset':>16} {'flops':>9} {'floor':>10}")
    for row in report["presets"]:
        print(f"{row['preset']:>16} {row['flops']:>9.3g} {_duration(row['floor_seconds']):>10}")
    for row in report["targets"]:
        verdict = "below the floor: not possible here" if row["needs_fraction_of_peak"] > 1 else "possible"
        print(f"target {row['target']} in {_duration(row['seconds'])}: floor {_duration(row['floor_seconds'])}, "
              f"needs {row['needs_fraction_of_peak']:.0%} of the peak throughout ({verdict})")


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.2f} h"
