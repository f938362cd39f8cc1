"""Tests of mixreg.montecarlo._sweep (the sweep, its run and its result), of the engine's
command-line options (experiments._cli) and of mixreg.provenance.
"""

import argparse
import csv
import json

import numpy as np
import pytest

import _toy_trials as toys
from _toy_trials import CELLS, records_json, toy_sweep
from experiments._cli import add_engine_arguments, run_engine_from_args
from mixreg import provenance
from mixreg.montecarlo import (
    SweepWarning,
    dry_run,
    replay_trial,
    run_sweep,
    seed_from_record,
    trial_seed,
)


# --------------------------------------------------------------------------- grids


def test_adding_a_cell_leaves_existing_records_unchanged(tmp_path):
    cells = [{"R": 0.5, "noise": 1.0}, {"R": 2.0, "noise": 1.0}]
    grown = [cells[0], {"R": 1.0, "noise": 1.0}, cells[1]]  # inserted in the middle
    small = run_sweep(toy_sweep(cells=cells, n_trials=3), tmp_path / "a", progress=False)
    large = run_sweep(toy_sweep(cells=grown, n_trials=3), tmp_path / "b", progress=False)

    def by_params(result):
        return {(r["R"], r["noise"], r["trial"]): {k: v for k, v in r.items()
                                                    if k not in ("cell", "wall_time")}
                for r in result.records}

    small_recs, large_recs = by_params(small), by_params(large)
    assert all(json.dumps(small_recs[k]) == json.dumps(large_recs[k]) for k in small_recs)
    assert large.records[3]["cell"] == 1 and large.records[3]["R"] == 1.0


def test_records_hold_the_tuples_the_trial_function_received(tmp_path):
    cells = [{"steps": (1.0, 0.1), "k": 2}, {"steps": [1, 2, 3], "k": 2}, {"steps": (0.5,), "k": 3}]
    sweep = toy_sweep(trial_fn=toys.step_sizes_trial, cells=cells, n_trials=3)
    serial = run_sweep(sweep, tmp_path / "serial", progress=False)
    parallel = run_sweep(sweep, tmp_path / "parallel", jobs=2, progress=False)
    assert [r["steps"] for r in serial.records[::3]] == [(1.0, 0.1), (1, 2, 3), (0.5,)]
    assert all(type(r["steps"]) is tuple for r in serial.records + parallel.records)
    assert [r["n_steps"] for r in serial.records[::3]] == [2, 3, 1]
    assert records_json(parallel) == records_json(serial)
    assert [r["steps"] for r in serial.summary] == [(1.0, 0.1), (1, 2, 3), (0.5,)]

    column = serial.column("steps")
    assert column.dtype == object and column.shape == (9,) and column[3] == (1, 2, 3)
    assert serial.column("n_steps").dtype == np.int64
    assert replay_trial(sweep, 1, 2)["draw"] == serial.records[5]["draw"]
    assert "steps: 3 value(s): (1.0, 0.1), (1, 2, 3), (0.5,)" in dry_run(sweep)


# --------------------------------------------------------------------------- failures


def test_failing_trial_is_reported_and_the_rest_completes(tmp_path):
    sweep = toy_sweep(trial_fn=toys.failing_trial, n_trials=4)
    with pytest.warns(SweepWarning, match=r"6 of 24 trials .* raised"):
        result = run_sweep(sweep, tmp_path / "out", jobs=2, progress=False)
    assert len(result.records) == 24
    failed = [r for r in result.records if r["error"]]
    assert [(r["cell"], r["trial"]) for r in failed] == [(c, 2) for c in range(len(CELLS))]
    assert all(r["error"].startswith("FloatingPointError: diverged") for r in failed)
    assert all(r["dist"] is None for r in failed)
    assert np.isnan(result.column("dist")[2]) and np.isfinite(result.column("dist")[3])

    failure = result.failures[0]
    assert (failure["cell"], failure["trial"], failure["params"]) == (0, 2, CELLS[0])
    assert failure["seed_entropy"] == list(trial_seed(2024, CELLS[0], 2).entropy)
    assert failure["spawn_key"] == [2] and "Traceback" in failure["traceback"]
    assert result.manifest["n_failures"] == 6 and len(result.manifest["failures"]) == 6
    assert seed_from_record(failed[0]).entropy == trial_seed(2024, CELLS[0], 2).entropy
    with pytest.raises(FloatingPointError, match="diverged"):
        replay_trial(sweep, 0, 2)
    ok = replay_trial(sweep, 0, 1)
    assert ok["dist"] == result.records[1]["dist"]
    with open(result.summary_csv, newline="") as fh:
        assert next(csv.DictReader(fh))["n_errors"] == "1"


def test_non_scalar_trial_output_is_a_failure(tmp_path):
    with pytest.warns(SweepWarning, match="raised"):
        result = run_sweep(toy_sweep(trial_fn=toys.bad_output_trial, cells=CELLS[:1], n_trials=2),
                           tmp_path / "out", progress=False)
    assert all("values must be int, float, bool or str" in r["error"] for r in result.records)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"cells": []}, ValueError, "cells must contain at least one cell"),
        ({"n_trials": 0}, ValueError, "n_trials"),
        ({"root_seed": -1}, ValueError, "root_seed"),
        ({"cells": [{"R": 1.0}, {"R": 2.0, "m": 3}]}, ValueError, r"cells\[1\] has"),
        ({"cells": [{"R": [[1.0, 2.0]]}]}, TypeError, r"cells\[0\]\['R'\]"),
        ({"cells": [{"R": {"a": 1.0}}]}, TypeError, r"cells\[0\]\['R'\]"),
        ({"cells": [{"R": 1.0}, {"R": 1.0}]}, ValueError, "duplicates"),
        ({"cells": [{"trial": 1}]}, ValueError, "reserved"),
        ({"config": {"f": object()}}, TypeError, "config must be JSON-serialisable"),
        ({"chunk_size": 0}, ValueError, "chunk_size"),
    ],
)
def test_bad_sweep_raises_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        toy_sweep(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"jobs": 0}, ValueError, "jobs"),
        ({"jobs": 1.5}, TypeError, "jobs"),
        ({"scheduler": "tcp://127.0.0.1:8786", "dask_local": 2}, ValueError, "scheduler.*dask_local"),
        ({"scheduler": "localhost"}, ValueError, "scheduler must be a Dask scheduler address"),
        ({"dask_local": 0}, ValueError, "dask_local"),
        ({"dask_local": 2, "jobs": 2}, ValueError, "jobs=2"),
        ({"overwrite": True, "new_dir": True}, ValueError, "overwrite.*new_dir"),
        ({"kernel_threads": 0}, ValueError, "kernel_threads"),
    ],
)
def test_bad_run_arguments_raise_clear_errors(tmp_path, kwargs, error, match):
    with pytest.raises(error, match=match):
        run_sweep(toy_sweep(n_trials=1), tmp_path / "out", progress=False, **kwargs)
    assert not (tmp_path / "out").exists()


def test_dry_run_describes_grid_tasks_and_work():
    sweep = toy_sweep(n_trials=10, chunk_size=4, cost_fn=lambda cell: 1e6 * cell["R"])
    text = dry_run(sweep, jobs=2)
    assert "6 cells x 10 trials = 60 trials" in text
    assert "18 tasks" in text
    assert "R: 3 value(s): 0.5, 1.0, 2.0" in text
    assert "7e+07 flops in total" in text
    assert "tasks" in dry_run(toy_sweep(), jobs=4)


# --------------------------------------------------------------------------- CLI and provenance


def _parser():
    parser = argparse.ArgumentParser(prog="toy")
    add_engine_arguments(parser)
    return parser


@pytest.mark.parametrize(
    "argv",
    [["--jobs", "0"], ["--jobs", "two"], ["--scheduler", "tcp://h:1", "--dask-local", "2"],
     ["--overwrite", "--new-dir"], ["--seed", "-3"], ["--scheduler", "h:1"]],
)
def test_cli_rejects_bad_flags_with_a_usage_message(argv, capsys):
    with pytest.raises(SystemExit) as info:
        _parser().parse_args(argv)
    assert info.value.code == 2
    assert "toy: error:" in capsys.readouterr().err


def test_cli_dry_run_and_run(tmp_path, capsys):
    sweep = toy_sweep(n_trials=2)
    args = _parser().parse_args(["--dry-run", "--jobs", "2"])
    assert run_engine_from_args(sweep, args, tmp_path / "default") is None
    assert "tasks" in capsys.readouterr().out
    assert not (tmp_path / "default").exists()

    args = _parser().parse_args(["--seed", "9", "--no-progress", "--out", str(tmp_path / "o")])
    result = run_engine_from_args(sweep, args, tmp_path / "default")
    assert result.outdir == tmp_path / "o" and result.manifest["sweep"]["root_seed"] == 9

    args = _parser().parse_args(["--dask-local", "2", "--jobs", "3"])
    with pytest.raises(ValueError, match="--jobs"):
        run_engine_from_args(sweep, args, tmp_path / "default")


def test_provenance_records(tmp_path):
    versions = provenance.package_versions()
    assert versions["numpy"] == np.__version__ and versions["mixreg"]
    assert provenance.git_commit(tmp_path) == {"commit": "unknown", "dirty": "unknown"}
    record = provenance.environment_record()
    json.dumps(record)
    assert {"time", "python", "platform", "packages", "git"} <= set(record)
