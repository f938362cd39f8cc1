"""The records of a small grid of each experiment, pinned.

Refactoring the layers under an experiment (problem generation, drivers, kernels, the engine)
must not change one bit of what a trial returns, nor a trial's seed: results directories made
before a change stay valid after it.  Each test runs a small grid of an experiment through the
engine in-process with single-threaded kernels and compares its ``trials.csv``, less the
wall-time columns, with the copy in ``tests/data`` written when the grid was pinned.

To re-pin after a change that is *meant* to change the numbers, run this file as a script
(``python tests/test_pinned_records.py``) and say why in the commit.
"""

from __future__ import annotations

import csv
import io
import pathlib
import sys

import pytest

from mixreg.montecarlo import run_sweep

DATA = pathlib.Path(__file__).resolve().parent / "data"


def _success_vs_R_sweep():
    from experiments import success_vs_R as exp

    config = exp.Config(preset="quick", k=2, m=20, n=10, d=20, sigmas=(0.0, 0.5), rs=(0.1, 0.5), trials=2,
                        n_inits=2, step_sizes=(1.0, 0.1), n_rounds=30, dtype="float64")
    return exp.build_sweep(config)


def _success_vs_R_float32_sweep():
    from experiments import success_vs_R as exp

    config = exp.Config(preset="quick", k=4, m=24, n=8, d=16, sigmas=(0.1,), rs=(0.5,), trials=2,
                        n_inits=2, step_sizes=(2.0, 0.5), n_rounds=20, dtype="float32")
    return exp.build_sweep(config)


def _two_phase_sweep():
    from experiments import two_phase as exp

    config = exp.Config(preset="quick", k=2, d=5, sigma=0.5, separation=2.0, Ms=(60,), M_ref=60,
                        laws=("zipf", "equal"), law_ref="zipf", p_mins=(0.2,), p_ref=0.2, size_mean=4.0,
                        n_max=40, trials=2, fmd_rounds=4, fx_rounds=10, ifca_restarts=2, anchor_points=20,
                        checkpoint_every=5)
    return exp.build_sweep(config)


SWEEPS = {
    "success_vs_R": _success_vs_R_sweep,
    "success_vs_R_float32": _success_vs_R_float32_sweep,
    "two_phase": _two_phase_sweep,
}


def _without_times(text):
    """``trials.csv`` text without the columns that measure wall time."""
    rows = list(csv.reader(io.StringIO(text)))
    keep = [j for j, name in enumerate(rows[0]) if not (name == "wall_time" or name.endswith("_time"))]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([row[j] for j in keep])
    return out.getvalue()


def _records_text(name, outdir):
    result = run_sweep(SWEEPS[name](), outdir, jobs=1, progress=False, kernel_threads=1)
    assert not result.failures
    return _without_times(result.trials_csv.read_text())


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_records_are_pinned(name, tmp_path):
    expected = (DATA / f"pinned_{name}.csv").read_text()
    assert _records_text(name, tmp_path / name) == expected


if __name__ == "__main__":  # re-pin
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(SWEEPS):
            (DATA / f"pinned_{name}.csv").write_text(_records_text(name, pathlib.Path(tmp) / name))
            print(f"pinned {name}", file=sys.stderr)
