"""Every pinned grid, compiled for every Numba target this CPU can run, gives this process's records.

The slow counterpart of ``tests/test_numba_targets.py`` (which runs one grid under four targets):
the three pinned grids (IFCA float64 and float32, the two-phase method) under ``generic``,
``haswell``, ``skylake-avx512``, ``icelake-server``, ``sapphirerapids``, ``znver3`` and
``znver4``, each in a child process that compiles every kernel afresh.  About 15 s of CPU a target.
"""

from __future__ import annotations

import pathlib
import sys
import warnings

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from test_numba_targets import TARGETS, compare_targets  # noqa: E402
from test_pinned_records import SWEEPS  # noqa: E402

pytestmark = pytest.mark.slow


def test_every_grid_is_the_same_for_every_numba_target(tmp_path):
    differing, skipped = compare_targets(tuple(sorted(SWEEPS)), TARGETS, tmp_path)
    ran = [t for t in TARGETS if t not in skipped]
    print(f"compared bit for bit under {ran}; skipped {skipped}")
    assert not differing, f"records depend on the Numba target: {sorted(differing)}"
    assert len(ran) >= 2, f"too few targets ran here to compare: {skipped}"
    if skipped:
        warnings.warn(f"Numba targets not compared on this CPU: {skipped}", stacklevel=1)
