"""Every committed paper-scale run is reproduced by the code as it is now.

``figures/data/<experiment>/<preset>/`` keeps the trials a committed figure was drawn from.  A
change that alters what a trial computes (another summation order in float32, a different
draw) would leave those figures describing code that no longer exists.  Each check rebuilds the
run's sweep from its manifest (the key must match, so the grid and the seeds are the same),
replays trial 0 of its cheapest cell in this process, and requires every field the trial returns
to equal the committed one exactly, under the BLAS kernels the run used (in a child process with
``OPENBLAS_CORETYPE`` set to them when this one runs others: other kernels round differently, see
``mixreg.provenance.blas_kernels``).  It prints the level it reached: bit for bit, or rounding with
the largest relative difference and the provenance fields (:func:`mixreg.provenance.signature_differences`:
the signature, the package versions, the CPU model, the Numba target) that differ between the run
and this process.  Rounding passes, with a warning, only where a recorded signature field differs
(the numpy SIMD level of an AVX2 machine, say); under the run's signature anything but bit for bit
fails, except in the fields of a registered numerics change made after the run
(:data:`mixreg.provenance.NUMERIC_CHANGES`, :func:`mixreg.provenance.explaining_changes`: a faster
product or solve that rounds otherwise, in the fields it names), where rounding passes with a
warning that names the change, every discrete field (labels, flags, counts, rounds, the steps
tuning chose) equal.  The CPU model and the Numba target do not decide: the kernels give the same
bits on every target (``tests/test_numba_targets.py``).  Of an unfinished run, kept to be resumed,
it replays the first trial kept of the cheapest cell begun; a run visits its cells from the most
costly down, so that trial is one of the grid's costlier ones (paper-c committed with 264 trials:
its cell (m, n) = (400, 50), 23 s; a trial at (400, 200) takes 70 s).

A second check replays the first trial of *every* cell of the runs whose trials are cheap (all
but paper-a to paper-d; 87 s for the ten): a change that moves the bits only in some regimes is
seen there.  It showed numerics change 1 (the minimum-norm Gram solve), made at an earlier version
whose changelog named two of the comparison run's cells and which registered nothing: the
comparison run's ``small_n`` and ``unbalanced`` cells and 9 of the Phase 1 run's 33 cells replay
at rounding in its fields; without its registration the Phase 1 check fails (checked).

What it catches, checked: the server step computed as ``(gamma grad) / m`` instead of
``(gamma / m) grad`` (equal in exact arithmetic) moves paper-a's distances in the 9th digit; so
did a replay that ran with the caller's two BLAS threads instead of the run's one (fixed in
``replay_trial``, which now takes the run's ``kernel_threads``).  What it does not: running
without compaction (``ifca.COMPACT = False``) gives the same bits on this trial, since a single
thread rounds each column of a product alike whatever the batch's width.  Measured alone, each
in a child process under the runs' SkylakeX kernels: 15 s for paper-a's run, 70 s for paper-b's
(141 s beside a run at nice 19), 23 s for paper-c's.
"""

from __future__ import annotations

import importlib
import math
import re
import os
import subprocess
import sys
import warnings

import pytest

from experiments import redraw_figures
from mixreg.cli import config_from_record
from mixreg.montecarlo import replay_trial
from mixreg.montecarlo import plain_scalar
from mixreg.montecarlo.reader import read_results
from mixreg.provenance import (OPENBLAS_KERNEL_FLAGS, blas_kernels, cpu_flags, explaining_changes, openblas_coretype,
                               run_blas_kernels, signature_differences)

pytestmark = pytest.mark.slow

RUNS = redraw_figures.results_directories()


def _same(committed, replayed):
    replayed = plain_scalar(replayed)  # as the engine stores it (numpy scalars to Python ones)
    if isinstance(replayed, float) and isinstance(committed, float):
        return committed == replayed or (math.isnan(committed) and math.isnan(replayed))
    return committed == replayed


#: The runs whose every cell is replayed too (trial 0 of each, ``test_every_cell_...``): all but
#: the IFCA success grids of paper-a to paper-d, whose trials take 15-70 s each (their cheapest
#: cell is replayed, and their code path is that of the pinned success grids).
EVERY_CELL = [(name, run) for name, run in RUNS if name not in ("success_vs_R", "success_vs_mn")]


@pytest.mark.skipif(not RUNS, reason="no committed results directory")
@pytest.mark.parametrize("name, run", RUNS, ids=[f"{name}/{run.name}" for name, run in RUNS])
def test_a_committed_trial_replays_bit_identically(name, run):
    _check_replay(name, run, "test_a_committed_trial_replays_bit_identically", every_cell=False)


@pytest.mark.skipif(not EVERY_CELL, reason="no committed results directory")
@pytest.mark.parametrize("name, run", EVERY_CELL, ids=[f"{name}/{run.name}" for name, run in EVERY_CELL])
def test_every_cell_of_a_committed_run_replays(name, run):
    """The first committed trial of every cell: a change that moves the bits only in some regimes
    (the minimum-norm Gram solve of numerics change 1 moved the comparison run's ``small_n`` and
    ``unbalanced`` regimes and 9 of Phase 1's 33 cells, not their cheapest cells) is seen."""
    _check_replay(name, run, "test_every_cell_of_a_committed_run_replays", every_cell=True)


def _check_replay(name, run, test, every_cell):
    """Replay the run's cheapest cell's first trial (or every cell's) and hold it to the rules of
    the module's docstring; under other BLAS kernels than the run's, in a child process."""
    results = read_results(run)
    kernels = {run_blas_kernels(run_) for run_ in results.manifest["runs"]}
    assert len(kernels) == 1, f"the runs used different BLAS kernels {kernels}"
    kernels = kernels.pop()
    if kernels and kernels != blas_kernels():
        coretype = openblas_coretype(kernels)
        needs = OPENBLAS_KERNEL_FLAGS.get(coretype)
        if needs is not None and needs not in cpu_flags():  # forcing them would kill the child
            pytest.skip(f"{name}/{run.name} was computed with the {coretype} kernels, which need "
                        f"{needs}: this CPU cannot replay it bit for bit")
        if os.environ.get("_MIXREG_REPLAY_CHILD") or coretype is None:
            pytest.skip(f"{name}/{run.name} was computed with the {kernels} kernels, which OPENBLAS_CORETYPE "
                        f"does not give this machine (it runs {blas_kernels()})")
        child = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-m", "slow", "-p", "no:cacheprovider", "-rs",
             f"{__file__}::{test}[{name}/{run.name}]"],
            env={**os.environ, "OPENBLAS_CORETYPE": coretype, "_MIXREG_REPLAY_CHILD": "1"},
            capture_output=True, text=True, check=False)
        assert child.returncode == 0, (f"replayed under OPENBLAS_CORETYPE={coretype}, exit {child.returncode}:\n"
                                       f"{child.stdout[-3000:]}\n{child.stderr[-2000:]}")
        assert "1 passed" in child.stdout, child.stdout[-3000:]  # not skipped
        return
    module = importlib.import_module(f"experiments.{name}")
    config = config_from_record(module.Config, results.config)
    sweep = module.STUDY.sweep(config, root_seed=results.manifest["sweep"]["root_seed"])
    assert sweep.key == results.manifest["sweep_key"], "the committed run's grid or seeds are no longer built"

    cost = sweep.function("cost_fn")  # with a typed spec, the cost of the spec the cell stands for
    costs = [cost(cell) if cost else 1.0 for cell in sweep.cells]
    first = {}  # cell -> its first committed trial (an unfinished run: the cells begun)
    for record in results.records:
        first.setdefault(record["cell"], record)
    if not first:
        pytest.skip(f"{name}/{run.name} is unfinished and keeps no trial yet")
    threads = {run_["kernel_threads"] for run_ in results.manifest["runs"]}
    assert len(threads) == 1, f"the runs used different kernel threads {threads}"
    kernel_threads = threads.pop()
    provenance = signature_differences(results.manifest["runs"][-1].get("environment") or {})
    decisive = {key: pair for key, pair in provenance.items()  # a signature field that differs
                if key in ("blas_kernels", "numpy_simd") and pair[0] != "not recorded"}
    environments = [run_.get("environment") or {} for run_ in results.manifest["runs"]]
    failures, notes, exact = [], [], 0
    for cell in sorted(first) if every_cell else [min(first, key=lambda c: costs[c])]:
        committed = first[cell]
        replayed = replay_trial(sweep, cell, committed["trial"], kernel_threads=kernel_threads)  # as its workers did
        assert replayed
        differing = {key: (committed.get(key), plain_scalar(value)) for key, value in replayed.items()
                     if not _same(committed.get(key), value) and not WALL_TIME.search(key)}
        where = f"{name}/{run.name} cell {cell} trial {committed['trial']}"
        if not differing:
            exact += 1
            continue
        level = _rounding_level(differing)
        changes = explaining_changes(differing, environments)
        message = (f"{where}: not bit for bit; {level}; provenance differing: {provenance or 'none'}; "
                   f"registered numerics changes since the run: {[c.version for c in changes] or 'none'}; "
                   f"committed vs replayed {differing}")
        (notes if (decisive or changes) and not level.startswith("beyond") else failures).append(message)
    print(f"{name}/{run.name}: {exact} of {exact + len(notes) + len(failures)} replayed trials bit for bit; "
          f"provenance differing: {provenance or 'none'}")
    assert not failures, "\n".join(failures)
    for message in notes:
        print(message)
        warnings.warn(message, stacklevel=1)


#: Fields a trial fills with its own wall-clock time (``ifca_time``, ``fmd_time_c16``): a measurement of
#: the machine at that moment, never replayed, so left out of the comparison.
WALL_TIME = re.compile(r"(^|_)time(_|$)")


def _rounding_level(differing):
    """"rounding, largest relative difference X" or "beyond rounding: ..." for the differing fields."""
    worst, beyond = 0.0, []
    for key, (committed, replayed) in differing.items():
        if isinstance(committed, float) and isinstance(replayed, float) and math.isfinite(committed) \
                and math.isfinite(replayed):
            relative = abs(committed - replayed) / max(abs(committed), abs(replayed))
            worst = max(worst, relative)
            if relative > 1e-9:
                beyond.append(key)
        else:
            beyond.append(key)
    return f"beyond rounding in {beyond}" if beyond else f"rounding, largest relative difference {worst:.2e}"
