"""Tests of mixreg.montecarlo (the Monte Carlo engine), mixreg.provenance and experiments._cli.

Toy trial functions live in tests/_toy_trials.py so that worker processes can import them.
"""

import argparse
import csv
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import _toy_trials as toys
from experiments._cli import add_engine_arguments, run_engine_from_args
from mixreg import provenance
from mixreg.montecarlo import (
    ConfigMismatchError,
    Sweep,
    SweepWarning,
    dry_run,
    replay_trial,
    run_sweep,
    seed_from_record,
    trial_seed,
)

TESTS_DIR = pathlib.Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent

CELLS = [{"R": r, "noise": s} for r in (0.5, 1.0, 2.0) for s in (0.1, 1.0)]


def _sweep(trial_fn=toys.least_squares_trial, cells=CELLS, n_trials=6, root_seed=2024,
           config=None, **kwargs):
    config = {"experiment": "toy", "lr": 0.1} if config is None else config
    return Sweep(name="toy", trial_fn=trial_fn, cells=cells, n_trials=n_trials,
                 root_seed=root_seed, config=config, **kwargs)


def _table(path, drop=("wall_time",)):
    """trials.csv as a list of rows (strings), without the run-dependent columns."""
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    keep = [i for i, name in enumerate(rows[0]) if name not in drop]
    return [[row[i] for i in keep] for row in rows]


def _records(result, drop=("wall_time",)):
    return json.dumps([{k: v for k, v in r.items() if k not in drop} for r in result.records])


def _subprocess_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_DIR), str(TESTS_DIR), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The least-squares sweep run in-process (jobs=1), the reference for bit identity."""
    return run_sweep(_sweep(), tmp_path_factory.mktemp("reference") / "out", progress=False)


# --------------------------------------------------------------------------- seeds


def test_trial_seed_is_stable_in_a_fresh_process():
    cell = {"R": 0.1, "m": 10, "algo": "ifca", "warm": True}
    here = trial_seed(5, cell, 3).generate_state(8).tolist()
    code = ("import sys, json; from mixreg.montecarlo import trial_seed; "
            "cell = {'warm': True, 'algo': 'ifca', 'm': 10, 'R': 0.1}; "
            "print(json.dumps(trial_seed(5, cell, 3).generate_state(8).tolist()))")
    env = dict(_subprocess_env(), PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout) == here


def test_trial_seed_separates_trials_cells_types_and_roots():
    def state(root, cell, trial):
        return tuple(trial_seed(root, cell, trial).generate_state(4))

    base = state(0, {"R": 1.0, "m": 4}, 0)
    assert state(0, {"m": 4, "R": 1.0}, 0) == base  # key order does not matter
    others = [
        state(0, {"R": 1.0, "m": 4}, 1),
        state(0, {"R": 1.0000000000000002, "m": 4}, 0),  # next float: exact encoding
        state(0, {"R": 1, "m": 4}, 0),  # int vs float
        state(0, {"R": True, "m": 4}, 0),  # bool vs int
        state(1, {"R": 1.0, "m": 4}, 0),
        state(0, {"R": 1.0, "m": 4, "d": 2}, 0),
    ]
    assert len({base, *others}) == len(others) + 1
    assert trial_seed(0, {"R": np.float64(1.0), "m": np.int64(4)}, 0).entropy == trial_seed(
        0, {"R": 1.0, "m": 4}, 0).entropy


def test_adding_a_cell_leaves_existing_records_unchanged(tmp_path):
    cells = [{"R": 0.5, "noise": 1.0}, {"R": 2.0, "noise": 1.0}]
    grown = [cells[0], {"R": 1.0, "noise": 1.0}, cells[1]]  # inserted in the middle
    small = run_sweep(_sweep(cells=cells, n_trials=3), tmp_path / "a", progress=False)
    large = run_sweep(_sweep(cells=grown, n_trials=3), tmp_path / "b", progress=False)

    def by_params(result):
        return {(r["R"], r["noise"], r["trial"]): {k: v for k, v in r.items()
                                                    if k not in ("cell", "wall_time")}
                for r in result.records}

    small_recs, large_recs = by_params(small), by_params(large)
    assert all(json.dumps(small_recs[k]) == json.dumps(large_recs[k]) for k in small_recs)
    assert large.records[3]["cell"] == 1 and large.records[3]["R"] == 1.0


# --------------------------------------------------------------------------- backends


def test_jobs_2_is_bit_identical_to_jobs_1(reference, tmp_path):
    result = run_sweep(_sweep(chunk_size=4), tmp_path / "out", jobs=2, progress=False)
    assert _records(result) == _records(reference)
    assert _table(result.trials_csv) == _table(reference.trials_csv)
    assert result.manifest["runs"][-1]["kernel_threads"] == 1
    assert reference.manifest["runs"][-1]["kernel_threads"] is None


def test_thread_limits_per_backend(tmp_path):
    from threadpoolctl import threadpool_info

    cells = [{"k": 0}, {"k": 1}]
    sweep = _sweep(trial_fn=toys.thread_probe_trial, cells=cells, n_trials=2)
    parallel = run_sweep(sweep, tmp_path / "jobs2", jobs=2, progress=False)
    assert set(parallel.column("blas_threads")) == {1}
    assert set(parallel.column("numba_threads")) == {1}

    before = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    serial = run_sweep(sweep, tmp_path / "jobs1", progress=False)
    assert set(serial.column("blas_threads")) == {before}  # jobs=1: kernels not limited

    forced = run_sweep(sweep, tmp_path / "forced", kernel_threads=1, progress=False)
    assert set(forced.column("blas_threads")) == {1}
    after = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    assert after == before  # in-process limits are restored


def test_kernel_threads_1_matches_parallel_for_long_reductions(tmp_path):
    """Long BLAS reductions may round differently with 2 threads; kernel_threads=1 fixes it."""
    sweep = _sweep(trial_fn=toys.long_reduction_trial, cells=[{"length": 200_000}], n_trials=4)
    serial = run_sweep(sweep, tmp_path / "serial", kernel_threads=1, progress=False)
    parallel = run_sweep(sweep, tmp_path / "parallel", jobs=2, progress=False)
    assert _records(serial) == _records(parallel)


@pytest.mark.dask
def test_dask_is_bit_identical_to_local(reference, tmp_path):
    from distributed import LocalCluster

    local = run_sweep(_sweep(), tmp_path / "dask_local", dask_local=2, progress=False)
    assert _records(local) == _records(reference)
    assert _table(local.trials_csv) == _table(reference.trials_csv)
    assert local.manifest["backend"].startswith("dask LocalCluster")

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        remote = run_sweep(_sweep(), tmp_path / "dask_tcp", scheduler=cluster.scheduler_address,
                           progress=False)
        probe = run_sweep(_sweep(trial_fn=toys.thread_probe_trial, cells=[{"k": 0}], n_trials=2),
                          tmp_path / "probe", scheduler=cluster.scheduler_address, progress=False)
    assert _records(remote) == _records(reference)
    assert set(probe.column("blas_threads")) == {1}
    assert set(probe.column("numba_threads")) == {1}


# --------------------------------------------------------------------------- storage


def test_kill_and_resume_recomputes_only_missing_chunks(tmp_path):
    outdir = tmp_path / "killed"
    chunk_dir = outdir / "chunks"
    code = ("import sys, _toy_trials; from mixreg.montecarlo import run_sweep; "
            "run_sweep(_toy_trials.sleepy_sweep(), sys.argv[1], progress=False)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(outdir)], env=_subprocess_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    total = 8
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            names = list(chunk_dir.glob("cell*.json")) if chunk_dir.is_dir() else []
            if len(names) >= 2 or proc.poll() is not None:
                break
            time.sleep(0.005)
        assert proc.poll() is None, proc.stderr.read().decode()
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        proc.stderr.close()
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in chunk_dir.glob("cell*.json")}
    assert 2 <= len(before) < total
    assert json.loads((outdir / "manifest.json").read_text())["status"] == "running"

    resumed = run_sweep(toys.sleepy_sweep(), outdir, progress=False)
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in chunk_dir.glob("cell*.json")}
    assert len(after) == total
    assert all(after[name] == stat for name, stat in before.items())  # not rewritten
    run = resumed.manifest["runs"][-1]
    assert run["chunks_loaded"] == len(before)
    assert run["chunks_computed"] == total - len(before)
    assert len(resumed.manifest["runs"]) == 2
    assert not list(chunk_dir.glob(".*.tmp"))

    fresh = run_sweep(toys.sleepy_sweep(), tmp_path / "uninterrupted", progress=False)
    assert _table(resumed.trials_csv) == _table(fresh.trials_csv)
    assert _records(resumed) == _records(fresh)


def test_rerun_of_a_finished_sweep_computes_nothing(reference, tmp_path):
    again = run_sweep(_sweep(), reference.outdir, progress=False)
    run = again.manifest["runs"][-1]
    assert run["chunks_computed"] == 0 and run["tasks_planned"] == 0
    assert _records(again, drop=()) == json.dumps(reference.records)  # loaded, not rerun


@pytest.mark.parametrize("damage", ["truncate", "tamper", "drop_record"])
def test_damaged_chunk_is_detected_and_recomputed(tmp_path, damage):
    sweep = _sweep(n_trials=4, chunk_size=2)
    first = run_sweep(sweep, tmp_path / "out", progress=False)
    victim = first.outdir / "chunks" / "cell00001_t000002-000004.json"
    text = victim.read_text()
    if damage == "truncate":
        victim.write_text(text[: len(text) // 2])
    else:
        payload = json.loads(text)
        if damage == "tamper":
            payload["records"][0]["dist"] += 1.0
        else:
            payload["records"].pop()
        victim.write_text(json.dumps(payload))
    untouched = first.outdir / "chunks" / "cell00000_t000000-000002.json"
    stat = untouched.stat().st_mtime_ns

    with pytest.warns(SweepWarning, match="cell00001_t000002-000004.json.*recomputed"):
        second = run_sweep(sweep, tmp_path / "out", progress=False)
    assert second.manifest["runs"][-1]["chunks_computed"] == 1
    assert untouched.stat().st_mtime_ns == stat
    assert _records(second) == _records(first)


def test_csv_floats_round_trip_exactly(reference):
    with open(reference.trials_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(reference.records) == len(CELLS) * 6
    for row, record in zip(rows, reference.records):
        assert float(row["dist"]) == record["dist"]
        assert float(row["wall_time"]) == record["wall_time"]
        assert row["success"] == str(record["success"])
    with open(reference.summary_csv, newline="") as fh:
        summary = list(csv.DictReader(fh))
    assert len(summary) == len(CELLS)
    dist = reference.column("dist").reshape(len(CELLS), 6)
    success = reference.column("success").reshape(len(CELLS), 6)
    for i, row in enumerate(summary):
        assert float(row["mean_dist"]) == float(np.mean(dist[i]))
        assert float(row["mean_success"]) == float(np.mean(success[i]))
        assert row["n_trials"] == "6" and row["n_errors"] == "0"


def test_manifest_records_provenance(reference):
    manifest = json.loads((reference.outdir / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert manifest["sweep"]["config"] == {"experiment": "toy", "lr": 0.1}
    assert manifest["sweep"]["root_seed"] == 2024
    for name in ("python", "numpy", "scipy", "numba", "joblib", "mixreg"):
        assert manifest["packages"][name]
    assert set(manifest["git"]) == {"commit", "dirty"}
    assert manifest["runs"][0]["started"] and manifest["finished"]
    assert manifest["failures"] == []


# --------------------------------------------------------------------------- directories


def test_config_mismatch_is_refused(reference):
    changed = _sweep(config={"experiment": "toy", "lr": 0.2}, n_trials=7)
    with pytest.raises(ConfigMismatchError) as info:
        run_sweep(changed, reference.outdir, progress=False)
    message = str(info.value)
    assert str(reference.outdir) in message
    assert "config.lr" in message and "n_trials" in message
    assert "overwrite" in message and "new_dir" in message
    assert info.value.keys == ["n_trials", "config.lr"]
    assert json.loads((reference.outdir / "manifest.json").read_text())["sweep"]["n_trials"] == 6


def test_new_dir_writes_into_a_fresh_sibling(tmp_path):
    base = tmp_path / "out"
    run_sweep(_sweep(n_trials=2), base, progress=False)
    second = run_sweep(_sweep(n_trials=2, root_seed=1), base, new_dir=True, progress=False)
    third = run_sweep(_sweep(n_trials=2, root_seed=2), base, new_dir=True, progress=False)
    assert second.outdir == tmp_path / "out-2" and third.outdir == tmp_path / "out-3"
    assert json.loads((base / "manifest.json").read_text())["sweep"]["root_seed"] == 2024
    assert second.manifest["sweep"]["root_seed"] == 1


def test_overwrite_starts_fresh(tmp_path):
    out = tmp_path / "out"
    run_sweep(_sweep(n_trials=4, chunk_size=2), out, progress=False)
    (out / "figure.txt").write_text("a file the engine does not own")
    result = run_sweep(_sweep(n_trials=3, chunk_size=3), out, overwrite=True, progress=False)
    assert sorted(p.name for p in (out / "chunks").iterdir()) == [
        f"cell{i:05d}_t000000-000003.json" for i in range(len(CELLS))]
    assert len(result.manifest["runs"]) == 1 and result.manifest["sweep"]["n_trials"] == 3
    assert (out / "figure.txt").exists()


def test_foreign_directory_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("not a sweep")
    with pytest.raises(ValueError, match="not a mixreg sweep directory"):
        run_sweep(_sweep(n_trials=1), tmp_path, progress=False)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_concurrent_run_into_the_same_directory_is_refused(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    tmp_path.joinpath(".lock").touch()
    with open(tmp_path / ".lock") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(RuntimeError, match="another process"):
            run_sweep(_sweep(n_trials=1), tmp_path, progress=False)


# --------------------------------------------------------------------------- failures


def test_failing_trial_is_reported_and_the_rest_completes(tmp_path):
    sweep = _sweep(trial_fn=toys.failing_trial, n_trials=4)
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
        result = run_sweep(_sweep(trial_fn=toys.bad_output_trial, cells=CELLS[:1], n_trials=2),
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
        ({"cells": [{"R": [1.0, 2.0]}]}, TypeError, r"cells\[0\]\['R'\]"),
        ({"cells": [{"R": 1.0}, {"R": 1.0}]}, ValueError, "duplicates"),
        ({"cells": [{"trial": 1}]}, ValueError, "reserved"),
        ({"config": {"f": object()}}, TypeError, "config must be JSON-serialisable"),
        ({"chunk_size": 0}, ValueError, "chunk_size"),
    ],
)
def test_bad_sweep_raises_clear_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        _sweep(**kwargs)


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
        run_sweep(_sweep(n_trials=1), tmp_path / "out", progress=False, **kwargs)
    assert not (tmp_path / "out").exists()


def test_dry_run_describes_grid_tasks_and_work():
    sweep = _sweep(n_trials=10, chunk_size=4, cost_fn=lambda cell: 1e6 * cell["R"])
    text = dry_run(sweep, jobs=2)
    assert "6 cells x 10 trials = 60 trials" in text
    assert "18 tasks" in text
    assert "R: 3 value(s): 0.5, 1.0, 2.0" in text
    assert "7e+07 flops in total" in text
    assert "tasks" in dry_run(_sweep(), jobs=4)


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
    sweep = _sweep(n_trials=2)
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


def test_resume_with_another_thread_setting_warns(tmp_path):
    sweep = _sweep(n_trials=4, chunk_size=2)
    first = run_sweep(sweep, tmp_path / "out", jobs=2, progress=False)
    (first.outdir / "chunks" / "cell00000_t000000-000002.json").unlink()
    with pytest.warns(SweepWarning, match="different kernel thread settings"):
        second = run_sweep(sweep, tmp_path / "out", progress=False)
    assert second.manifest["kernel_thread_settings"] == [None, 1]


def test_resume_with_another_chunk_size_reuses_every_finished_trial(reference, tmp_path):
    first = run_sweep(_sweep(chunk_size=4), tmp_path / "out", progress=False)
    (first.outdir / "chunks" / "cell00002_t000000-000004.json").unlink()
    second = run_sweep(_sweep(chunk_size=3), tmp_path / "out", progress=False)
    run = second.manifest["runs"][-1]
    assert run["trials_loaded"] == len(CELLS) * 6 - 4
    assert sorted(p.name for p in (second.outdir / "chunks").glob("cell00002_*")) == [
        "cell00002_t000000-000003.json", "cell00002_t000003-000004.json",
        "cell00002_t000004-000006.json"]
    assert _records(second) == _records(reference)


def test_write_table_round_trips_floats_and_refuses_no_rows(tmp_path):
    import csv as _csv

    from mixreg.montecarlo import write_table

    rows = [{"a": 0.1 + 0.2, "b": "x", "c": None}, {"a": 1e-300, "b": "y", "c": 3}]
    path = write_table(tmp_path / "t.csv", rows)
    with open(path, newline="") as fh:
        back = list(_csv.DictReader(fh))
    assert [float(r["a"]) for r in back] == [0.1 + 0.2, 1e-300]
    assert back[0]["c"] == "" and back[1]["b"] == "y"
    with pytest.raises(ValueError, match="rows must hold at least one row"):
        write_table(tmp_path / "empty.csv", [])
