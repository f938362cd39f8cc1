"""Records do not depend on the CPU Numba compiles for.

Each target of ``DEFAULT_TARGETS`` compiles every kernel afresh in a child process (``NUMBA_CPU_NAME``, its own
cache) and runs the pinned success_vs_R grid (``tests/test_pinned_records.py``): its records must
equal this process's bit for bit.  Before the kernels' sums had a written order
(:mod:`mixreg._fixed_order`) the grid's distances differed in the last bit between ``znver4``, on
which the pins were made, and ``emeraldrapids``, ``generic`` or ``skylake-avx512``.  A target this
CPU cannot run (AVX-512 code on an AVX2 CPU dies of SIGILL) or that the installed LLVM does not know
is skipped, saying so.  The four targets span the choices LLVM makes: no FMA and 2 lanes
(``generic``), AVX2 (``haswell``), AVX-512 preferring 4 lanes (``skylake-avx512``) and 8 lanes
(``znver4``).  Every grid under every target of ``TARGETS`` is ``paper_checks``' slow check
(``paper_checks/test_numba_targets_all.py``); each child costs about 5 s of CPU.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

TESTS = pathlib.Path(__file__).resolve().parent
TARGETS = ("generic", "haswell", "skylake-avx512", "icelake-server", "sapphirerapids", "znver3", "znver4")
DEFAULT_TARGETS = ("generic", "haswell", "skylake-avx512", "znver4")

_CHILD = """
import pathlib, sys, tempfile
sys.path.insert(0, {tests!r})
import test_pinned_records as pins
with tempfile.TemporaryDirectory() as tmp:
    for name in {grids!r}:
        pathlib.Path({out!r}, name + ".csv").write_text(pins._records_text(name, pathlib.Path(tmp) / name))
"""


def records_under(target, grids, workdir):
    """Run the pinned ``grids`` in a child whose kernels Numba compiles for ``target``.

    Returns ``{grid: trials.csv text}``, or a string saying why the target cannot run here.
    """
    out = workdir / target
    out.mkdir(parents=True)
    env = {**os.environ, "NUMBA_CPU_NAME": target, "NUMBA_CACHE_DIR": str(workdir / f"cache-{target}")}
    proc = subprocess.run([sys.executable, "-c", _CHILD.format(tests=str(TESTS), grids=list(grids), out=str(out))],
                          env=env, capture_output=True, text=True, check=False)
    if "is not a recognized processor" in proc.stderr:
        return f"the installed LLVM does not know {target}"
    if proc.returncode == -signal.SIGILL:
        return f"this CPU cannot run code compiled for {target}"
    assert proc.returncode == 0, f"{target}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return {name: (out / f"{name}.csv").read_text() for name in grids}


def compare_targets(grids, targets, workdir):
    """Records of ``grids`` in this process against each target's; returns (differences, skipped)."""
    sys.path.insert(0, str(TESTS))
    try:
        import test_pinned_records as pins
    finally:
        sys.path.remove(str(TESTS))
    here = {name: pins._records_text(name, workdir / "here" / name) for name in grids}
    with ThreadPoolExecutor(max_workers=2) as pool:  # children are single-threaded
        results = dict(zip(targets, pool.map(lambda t: records_under(t, grids, workdir), targets)))
    skipped = {t: why for t, why in results.items() if isinstance(why, str)}
    differing = {(t, name) for t, got in results.items() if not isinstance(got, str)
                 for name in grids if got[name] != here[name]}
    return differing, skipped


def test_records_are_the_same_for_every_numba_target(tmp_path):
    differing, skipped = compare_targets(("success_vs_R",), DEFAULT_TARGETS, tmp_path)
    assert not differing, f"records depend on the Numba target: {sorted(differing)}"
    assert len(skipped) < len(DEFAULT_TARGETS) - 1, f"too few targets ran here to compare: {skipped}"
    if skipped:
        import warnings

        warnings.warn(f"Numba targets not compared on this CPU: {skipped}", stacklevel=1)
