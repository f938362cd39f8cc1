"""Tests of mixreg.montecarlo._spec, _fits and _sweep (the sweep, will it fit, its run and its
result), of the engine's command-line options (mixreg.cli) and of mixreg.provenance.
"""

import argparse
import csv
import dataclasses
import json

import numpy as np
import pytest

import _toy_trials as toys
from _toy_trials import CELLS, records_json, toy_sweep
from mixreg.cli import add_engine_arguments, run_engine_from_args
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


def test_a_replay_runs_with_the_engines_thread_limits_and_equals_the_record(tmp_path):
    """Multi-threaded BLAS rounds a long reduction differently; the replay limits it as the run did."""
    from threadpoolctl import threadpool_limits

    cell = {"length": 2_000_000}
    seed = trial_seed(2024, cell, 0)
    with threadpool_limits(limits=1):
        one = toys.long_reduction_trial(dict(cell), seed)
    with threadpool_limits(limits=2):
        two = toys.long_reduction_trial(dict(cell), seed)
    if one == two:
        pytest.skip("this machine's BLAS rounds the reduction alike with 1 and 2 threads")
    sweep = toy_sweep(trial_fn=toys.long_reduction_trial, cells=[cell], n_trials=1)
    recorded = run_sweep(sweep, tmp_path / "out", progress=False).records[0]
    with threadpool_limits(limits=2):  # the caller's setting does not leak into the replay...
        replayed = replay_trial(sweep, 0, 0)
        assert toys.long_reduction_trial(dict(cell), seed) == two  # ...and is restored after it
    assert replayed == one and replayed["sq_norm"] == recorded["sq_norm"]
    with threadpool_limits(limits=2):
        assert replay_trial(sweep, 0, 0, kernel_threads=None) == two  # None: the caller's limits
    with pytest.raises(ValueError, match="kernel_threads"):
        replay_trial(sweep, 0, 0, kernel_threads=0)


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
    assert "tasks" in dry_run(toy_sweep(), jobs=1)


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


def test_a_runs_own_results_directory_does_not_make_the_checkout_dirty(tmp_path):
    """A committed results directory (figures/data/...) is rewritten by its own rerun: that is
    data, not code, so the run's git record stays clean; any other change is dirty."""
    import subprocess

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "manifest.json").write_text("{}\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    assert provenance.git_commit(tmp_path)["dirty"] is False
    (tmp_path / "results" / "manifest.json").write_text('{"status": "running"}\n')
    assert provenance.git_commit(tmp_path)["dirty"] is True
    assert provenance.git_commit(tmp_path, exclude=[tmp_path / "results"])["dirty"] is False
    assert provenance.git_commit(tmp_path / "results", exclude=[tmp_path / "results"])["dirty"] is False
    assert provenance.git_commit(tmp_path, exclude=["/somewhere/else"])["dirty"] is True
    (tmp_path / "code.py").write_text("x = 2\n")
    assert provenance.git_commit(tmp_path, exclude=[tmp_path / "results"])["dirty"] is True
    git("checkout", "-q", "--", "code.py")
    (tmp_path / "res*x").mkdir()  # a directory name is not a pattern: it hides no other path
    (tmp_path / "resAx").write_text("tracked\n")
    git("add", "resAx")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "more")
    excluded = [tmp_path / "results", tmp_path / "res*x"]
    assert provenance.git_commit(tmp_path, exclude=excluded)["dirty"] is False
    (tmp_path / "resAx").write_text("changed\n")
    assert provenance.git_commit(tmp_path, exclude=excluded)["dirty"] is True


# --------------------------------------------------------------------------- planning and fitting


def test_tasks_are_planned_lazily_for_a_huge_grid(monkeypatch):
    """A billion trials are planned without building a list: counting generates no task, and the
    first two tasks are the only ones generated (counted, not timed: a busy machine is slow)."""
    import itertools

    from mixreg.montecarlo._sweep import _Plan

    generated = []
    cell_tasks = _Plan._cell_tasks

    def counted(self, ci):
        for task in cell_tasks(self, ci):
            generated.append(task)
            if len(generated) > 2:  # a plan that lists the grid fails here, at once
                raise AssertionError("the plan generated more tasks than were asked for")
            yield task

    monkeypatch.setattr(_Plan, "_cell_tasks", counted)
    sweep = toy_sweep(cells=CELLS[:2], n_trials=10**9)
    plan = _Plan(sweep, {}, 50, costs=[1.0, 2.0])
    assert len(plan) == 2 * 10**9 // 50
    assert generated == []
    assert list(itertools.islice(plan, 2)) == [(1, 0, 50), (1, 50, 100)]  # the expensive cell first
    assert generated == [(1, 0, 50), (1, 50, 100)]


def test_lazy_plan_covers_exactly_the_missing_trials():
    from mixreg.montecarlo._sweep import _Plan

    sweep = toy_sweep(cells=CELLS[:2], n_trials=7)
    done = {(0, t): None for t in (0, 1, 4)} | {(1, t): None for t in range(7)}
    plan = _Plan(sweep, done, 3, costs=None)
    assert list(plan) == [(0, 2, 3), (0, 3, 4), (0, 5, 6), (0, 6, 7)]
    assert len(plan) == 4


def test_too_many_trials_are_refused_before_anything_is_written(tmp_path):
    from mixreg.montecarlo import MAX_TRIALS, SweepTooLargeError, check_fits

    sweep = toy_sweep(cells=CELLS[:2], n_trials=10**9)
    with pytest.raises(SweepTooLargeError, match=r"2 cells x 1000000000 trials = 2e\+09 trials"):
        run_sweep(sweep, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()
    with pytest.raises(SweepTooLargeError, match="limit"):
        check_fits(sweep)
    text = dry_run(sweep)
    assert "Estimated memory:" in text and "Refused:" in text
    assert check_fits(toy_sweep(n_trials=100)) == []
    assert MAX_TRIALS == 10_000_000


def test_long_or_memory_hungry_sweeps_are_warned_or_refused(tmp_path, monkeypatch):
    from mixreg.montecarlo import SweepTooLargeError, check_fits
    from mixreg.montecarlo import _fits

    day = toy_sweep(n_trials=2, cost_fn=lambda cell: 1e14)  # 1.2e15 flops: ~1.4 days at 1e10 flop/s
    assert any("may take about 1.39 days" in w for w in check_fits(day, jobs=1))
    assert "Warning:" in dry_run(day, jobs=1) and "Estimated time: 1.39 days" in dry_run(day, jobs=1)
    assert check_fits(day, jobs=None) == []  # a scheduler: workers unknown, no time estimate
    with pytest.warns(SweepWarning, match="may take about 1.39 days"):  # the cost is made up: it is quick
        run_sweep(day, tmp_path / "day", jobs=1, progress=False)

    years = toy_sweep(n_trials=2, cost_fn=lambda cell: 1e18)
    with pytest.raises(SweepTooLargeError, match=r"would take about .* years with 1 worker"):
        run_sweep(years, tmp_path / "years", progress=False)
    assert not (tmp_path / "years").exists()

    monkeypatch.setattr(_fits, "_physical_memory", lambda: 300_000)  # 6 x 4 trials need ~240 kB
    with pytest.warns(SweepWarning, match="more than half of this machine's"):
        run_sweep(toy_sweep(n_trials=4), tmp_path / "half", progress=False)
    monkeypatch.setattr(_fits, "_physical_memory", lambda: 100_000)
    with pytest.raises(SweepTooLargeError, match="of memory"):
        run_sweep(toy_sweep(n_trials=4), tmp_path / "full", progress=False)


def test_jobs_above_the_cores_are_capped_with_a_warning(tmp_path, monkeypatch):
    from mixreg.montecarlo import _fits

    monkeypatch.setattr(_fits, "_available_cores", lambda: 1)
    with pytest.warns(SweepWarning, match=r"jobs=10000 is more than the 1 cores .* using 1") as record:
        result = run_sweep(toy_sweep(n_trials=2), tmp_path / "out", jobs=10000, progress=False)
    assert len(record) == 1
    assert result.manifest["runs"][-1]["jobs"] == 1 and result.manifest["backend"].startswith("serial")
    with pytest.warns(SweepWarning, match="workers=8"):
        assert "automatic for 1 worker(s)" in dry_run(toy_sweep(), jobs=8)


def test_connect_timeout_is_validated(tmp_path):
    for bad in (0, -1.0, float("nan"), float("inf"), "5", True):
        with pytest.raises(ValueError, match="connect_timeout"):
            run_sweep(toy_sweep(n_trials=1), tmp_path / "out", connect_timeout=bad, progress=False)


# --------------------------------------------------------------------------- interruption and progress


def test_an_interrupted_run_says_what_it_kept_and_resumes_exactly(tmp_path, monkeypatch):
    from mixreg.montecarlo import SweepInterrupted

    cells = [{"k": 0}, {"k": 1}]
    sweep = toy_sweep(trial_fn=toys.interrupting_trial, cells=cells, n_trials=4, chunk_size=1)
    monkeypatch.setenv(toys.INTERRUPT_ENV, "1,2")
    with pytest.raises(SweepInterrupted) as info:
        run_sweep(sweep, tmp_path / "out", progress=False)
    assert isinstance(info.value, KeyboardInterrupt)
    assert (info.value.kept, info.value.total) == (6, 8)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted"
    assert not (tmp_path / "out" / ".lock").exists()

    monkeypatch.delenv(toys.INTERRUPT_ENV)
    resumed = run_sweep(sweep, tmp_path / "out", progress=False)
    assert resumed.manifest["runs"][-1]["trials_loaded"] == 6
    assert records_json(resumed) == records_json(run_sweep(sweep, tmp_path / "fresh", progress=False))


def test_a_signal_right_after_a_chunk_is_written_counts_that_chunk_as_kept(tmp_path, monkeypatch):
    """Ctrl-C between a chunk's atomic rename and the run's bookkeeping of it: the chunk is on disk
    and the rerun loads it, so the interrupt counts it (it once said one chunk fewer)."""
    from mixreg.montecarlo import SweepInterrupted, _sweep

    written = []

    def write_then_interrupt(*args, **kwargs):
        real_write_chunk(*args, **kwargs)
        written.append(args[3:5])
        if len(written) == 3:
            raise KeyboardInterrupt  # as if SIGINT arrived just after the rename

    real_write_chunk = _sweep._write_chunk
    monkeypatch.setattr(_sweep, "_write_chunk", write_then_interrupt)
    sweep = toy_sweep(cells=CELLS[:2], n_trials=4, chunk_size=2)
    with pytest.raises(SweepInterrupted) as info:
        run_sweep(sweep, tmp_path / "out", progress=False)
    assert len(written) == 3 and (info.value.kept, info.value.total) == (6, 8)
    assert "6 of 8 trials kept" in str(info.value)

    monkeypatch.setattr(_sweep, "_write_chunk", real_write_chunk)
    resumed = run_sweep(sweep, tmp_path / "out", progress=False)
    assert resumed.manifest["runs"][-1]["trials_loaded"] == 6
    assert not resumed.failures
    assert records_json(resumed) == records_json(run_sweep(sweep, tmp_path / "fresh", progress=False))


def test_sigterm_stops_a_run_as_ctrl_c_does_and_the_rerun_resumes(tmp_path, monkeypatch):
    """SIGTERM (kill, a batch scheduler) during a run raises SweepTerminated with what is kept, after
    the manifest is written, instead of killing the process with a manifest left "running"."""
    import signal

    from mixreg.montecarlo import SweepInterrupted, SweepTerminated, Terminated

    monkeypatch.setenv(toys.STOP_ENV, "sigterm")
    monkeypatch.setenv(toys.STOP_AT_ENV, "2")
    sweep = toy_sweep(trial_fn=toys.stoppable_trial, cells=[{"k": 0}], n_trials=4, chunk_size=1)
    with pytest.raises(SweepTerminated) as info:
        run_sweep(sweep, tmp_path / "out", progress=False)
    assert isinstance(info.value, SweepInterrupted) and isinstance(info.value, Terminated)
    assert (info.value.kept, info.value.total) == (2, 4)
    assert str(info.value).startswith("terminated: 2 of 4 trials kept in ")
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["status"] == "interrupted" and manifest["runs"][-1]["error"].startswith("Terminated")
    assert not (tmp_path / "out" / ".lock").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored after the run

    monkeypatch.delenv(toys.STOP_ENV)
    resumed = run_sweep(sweep, tmp_path / "out", progress=False)
    assert resumed.manifest["runs"][-1]["trials_loaded"] == 2
    assert records_json(resumed) == records_json(run_sweep(sweep, tmp_path / "fresh", progress=False))


def test_raise_on_sigterm_raises_once_and_leaves_other_handlers_alone():
    import signal
    import threading

    from mixreg.montecarlo import Terminated, raise_on_sigterm

    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        pytest.skip("this test process handles SIGTERM itself")
    with raise_on_sigterm():
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL, "SIGTERM would kill the test run"
        with pytest.raises(Terminated):
            signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)  # a second one, while the run stops: ignored
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    received = []
    signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:
        with raise_on_sigterm():  # the caller's handler stays (an enclosing block's, say)
            signal.raise_signal(signal.SIGTERM)
        assert received == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    errors = []

    def in_a_thread():  # Python cannot set a handler there: nothing to do, no error
        try:
            with raise_on_sigterm():
                pass
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert errors == [] and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_trial_too_large_for_the_machine_is_refused(tmp_path, monkeypatch):
    from mixreg.montecarlo import SweepTooLargeError, check_fits
    from mixreg.montecarlo import _fits

    monkeypatch.setattr(_fits, "_physical_memory", lambda: 10**9)
    monkeypatch.setattr(_fits, "_available_cores", lambda: 2)
    sweep = toy_sweep(n_trials=2, memory_fn=lambda cell: 3e8 * cell["R"])  # 600 MB at R = 2
    assert check_fits(sweep, jobs=1) and "more than half" in check_fits(sweep, jobs=1)[0]
    assert "up to 600 MB per worker for the heaviest trial" in dry_run(sweep, jobs=1)
    with pytest.raises(SweepTooLargeError, match=r"2 worker\(s\) running a trial of up to 600 MB"):
        run_sweep(sweep, tmp_path / "out", jobs=2, progress=False)
    assert check_fits(sweep, jobs=None) == []  # a remote cluster's memory is not this machine's
    with pytest.raises(ValueError, match="memory_fn must return a finite value"):
        check_fits(toy_sweep(memory_fn=lambda cell: -1.0))


def test_one_trial_above_the_machine_is_refused_naming_what_sets_its_size(tmp_path, monkeypatch):
    """A trial that alone exceeds the machine's memory is refused with its estimate and the
    names the sweep gives for what sets its size (an experiment's flags), before anything is
    written; the names are not part of the sweep's identity."""
    from mixreg.montecarlo import SweepTooLargeError, check_fits
    from mixreg.montecarlo import _fits

    monkeypatch.setattr(_fits, "_physical_memory", lambda: 10**9)
    sweep = toy_sweep(n_trials=2, memory_fn=lambda cell: 1e12 * cell["R"], size_names=("--m", "--n", "--d"))
    message = (r"^one trial of sweep 'toy' needs about 2 TB of memory, more than this machine's 1 GB; "
               r"lower --m, --n or --d$")
    with pytest.raises(SweepTooLargeError, match=message):
        check_fits(sweep, jobs=1)
    with pytest.raises(SweepTooLargeError, match=message):
        run_sweep(sweep, tmp_path / "out", jobs=1, progress=False)
    assert not (tmp_path / "out").exists()
    assert "Refused: one trial of sweep 'toy' needs about 2 TB" in dry_run(sweep, jobs=1)
    with pytest.raises(SweepTooLargeError, match="; use smaller problems$"):
        check_fits(dataclasses.replace(sweep, size_names=()), jobs=1)
    assert dataclasses.replace(sweep, size_names=()).key == sweep.key
    with pytest.raises(TypeError, match="size_names must be a tuple of strings"):
        toy_sweep(size_names="--m")


def test_a_sweeps_own_flop_rate_sets_its_time_estimate(tmp_path):
    """flop_rate (what the trials' kernels reach per worker) replaces the engine's cautious
    default in the time estimate; it is not part of the sweep's identity."""
    from mixreg.montecarlo import SweepTooLargeError, dry_run

    slow = toy_sweep(n_trials=2, cost_fn=lambda cell: 3e17)  # about 2 years at the default 1e10
    fast = dataclasses.replace(slow, flop_rate=1e11)  # about 70 days
    assert fast.key == slow.key
    with pytest.raises(SweepTooLargeError, match="years"):
        run_sweep(slow, tmp_path / "slow", progress=False)
    assert "at an assumed 1e+11 flop/s per worker" in dry_run(fast)
    with pytest.raises(ValueError, match="flop_rate"):
        dataclasses.replace(slow, flop_rate=0.0)


def test_automatic_chunks_hold_at_most_five_minutes_of_estimated_work():
    """An interrupted run loses at most the chunks in flight: with a cost_fn, the automatic
    chunk size keeps a task's estimated work under five minutes (one trial at the least)."""
    from mixreg.montecarlo import dry_run

    cheap = toy_sweep(n_trials=400, cost_fn=lambda cell: 1e9)  # 0.1 s per trial at 1e10 flop/s
    slow = dataclasses.replace(cheap, cost_fn=lambda cell: 1e12)  # 100 s per trial
    assert "50 trials per task" in dry_run(cheap, jobs=1)
    assert "3 trials per task" in dry_run(slow, jobs=1)
    assert "1 trials per task" in dry_run(dataclasses.replace(slow, cost_fn=lambda cell: 1e13), jobs=1)
    # 10 s per trial: at most 30, balanced over the cell's 400 trials (14 tasks of 29 or fewer)
    assert "29 trials per task" in dry_run(dataclasses.replace(slow, flop_rate=1e11), jobs=1)
