"""Tests of mixreg.montecarlo._store: chunk files, resume, the manifest, the directory."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

import pytest

import _toy_trials as toys
from _toy_trials import CELLS, HANG, csv_rows, records_json, subprocess_env, toy_sweep
from mixreg import provenance
from mixreg.montecarlo import (
    MANIFEST_NAME,
    ConfigMismatchError,
    DirectoryBusyError,
    ResultsDirectoryError,
    SweepWarning,
    run_sweep,
    write_table,
)
from mixreg.montecarlo._store import _directory_lock

TUPLE_CELLS = [{"steps": (1.0, 0.1), "k": 2}, {"steps": (1, 2, 3), "k": 2},
               {"steps": (True, 0.5), "k": 3}]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The least-squares sweep run in-process (jobs=1), the reference for bit identity."""
    return run_sweep(toy_sweep(), tmp_path_factory.mktemp("reference") / "out", progress=False)


# --------------------------------------------------------------------------- chunk files and resume


def test_kill_and_resume_recomputes_only_missing_chunks(tmp_path):
    """SIGKILL after two chunks (its third trial blocks until then, however fast the machine)."""
    outdir = tmp_path / "killed"
    chunk_dir = outdir / "chunks"
    code = ("import sys, _toy_trials; from mixreg.montecarlo import run_sweep; "
            "run_sweep(_toy_trials.stoppable_sweep(), sys.argv[1], progress=False)")
    env = dict(subprocess_env(), **{toys.STOP_ENV: "block", toys.STOP_AT_ENV: "2"})
    proc = subprocess.Popen([sys.executable, "-c", code, str(outdir)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    total = 8
    try:
        deadline = time.monotonic() + HANG
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
    assert len(before) == 2
    assert json.loads((outdir / "manifest.json").read_text())["status"] == "running"
    assert (outdir / ".lock").exists()  # left by the killed run, no longer flocked

    resumed = run_sweep(toys.stoppable_sweep(), outdir, progress=False)
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in chunk_dir.glob("cell*.json")}
    assert len(after) == total
    assert all(after[name] == stat for name, stat in before.items())  # not rewritten
    run = resumed.manifest["runs"][-1]
    assert run["chunks_loaded"] == len(before)
    assert run["chunks_computed"] == total - len(before)
    assert len(resumed.manifest["runs"]) == 2
    assert not list(chunk_dir.glob(".*.tmp"))
    assert not (outdir / ".lock").exists()  # taken over, then removed by its new owner

    fresh = run_sweep(toys.stoppable_sweep(), tmp_path / "uninterrupted", progress=False)
    assert csv_rows(resumed.trials_csv) == csv_rows(fresh.trials_csv)
    assert records_json(resumed) == records_json(fresh)


def test_rerun_of_a_finished_sweep_computes_nothing(reference, tmp_path):
    again = run_sweep(toy_sweep(), reference.outdir, progress=False)
    run = again.manifest["runs"][-1]
    assert run["chunks_computed"] == 0 and run["tasks_planned"] == 0
    assert records_json(again, drop=()) == json.dumps(reference.records)  # loaded, not rerun


@pytest.mark.parametrize("damage", ["truncate", "tamper", "drop_record"])
def test_damaged_chunk_is_detected_and_recomputed(tmp_path, damage):
    sweep = toy_sweep(n_trials=4, chunk_size=2)
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
    assert records_json(second) == records_json(first)


def test_resume_with_another_thread_setting_warns(tmp_path):
    sweep = toy_sweep(n_trials=4, chunk_size=2)
    first = run_sweep(sweep, tmp_path / "out", jobs=2, progress=False)
    (first.outdir / "chunks" / "cell00000_t000000-000002.json").unlink()
    with pytest.warns(SweepWarning, match="different kernel thread settings"):
        second = run_sweep(sweep, tmp_path / "out", kernel_threads=2, progress=False)
    assert second.manifest["kernel_thread_settings"] == [1, 2]


def test_resume_with_other_blas_kernels_warns_and_says_how_to_keep_them(tmp_path):
    """Kernels for another CPU round differently: a resume on them must not pass unnoticed."""
    if not provenance.blas_kernels():
        pytest.skip("this process's BLAS does not name its kernels")
    sweep = toy_sweep(n_trials=4, chunk_size=2)
    first = run_sweep(sweep, tmp_path / "out", progress=False)
    manifest = json.loads((first.outdir / "manifest.json").read_text(encoding="utf-8"))
    for lib in manifest["runs"][-1]["environment"]["blas"]:
        lib["architecture"] = "Zen" if lib.get("user_api") == "blas" else lib.get("architecture")
    (first.outdir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    (first.outdir / "chunks" / "cell00000_t000000-000002.json").unlink()
    now = "+".join(provenance.blas_kernels())
    with pytest.warns(SweepWarning, match=rf"BLAS kernels Zen -> {now} \(set OPENBLAS_CORETYPE=Zen to keep them\)"):
        run_sweep(sweep, tmp_path / "out", progress=False)
    with warnings.catch_warnings():  # the same kernels again: nothing to say
        warnings.simplefilter("error", SweepWarning)
        (first.outdir / "chunks" / "cell00000_t000000-000002.json").unlink()
        run_sweep(sweep, tmp_path / "out", progress=False)


def test_resume_with_another_chunk_size_reuses_every_finished_trial(reference, tmp_path):
    first = run_sweep(toy_sweep(chunk_size=4), tmp_path / "out", progress=False)
    (first.outdir / "chunks" / "cell00002_t000000-000004.json").unlink()
    second = run_sweep(toy_sweep(chunk_size=3), tmp_path / "out", progress=False)
    run = second.manifest["runs"][-1]
    assert run["trials_loaded"] == len(CELLS) * 6 - 4
    assert sorted(p.name for p in (second.outdir / "chunks").glob("cell00002_*")) == [
        "cell00002_t000000-000003.json", "cell00002_t000003-000004.json",
        "cell00002_t000004-000006.json"]
    assert records_json(second) == records_json(reference)


def test_tuple_cells_are_tuples_again_after_resume(tmp_path):
    sweep = toy_sweep(trial_fn=toys.step_sizes_trial, cells=TUPLE_CELLS, n_trials=4, chunk_size=2)
    first = run_sweep(sweep, tmp_path / "out", progress=False)
    chunk = json.loads((first.outdir / "chunks" / "cell00001_t000000-000002.json").read_text())
    assert chunk["cell"]["steps"] == [1, 2, 3] and chunk["records"][0]["steps"] == [1, 2, 3]

    (first.outdir / "chunks" / "cell00001_t000002-000004.json").unlink()
    second = run_sweep(sweep, tmp_path / "out", progress=False)
    assert second.manifest["runs"][-1]["chunks_loaded"] == 5
    assert second.manifest["runs"][-1]["chunks_computed"] == 1
    assert [r["steps"] for r in second.records] == [c["steps"] for c in TUPLE_CELLS for _ in range(4)]
    assert all(type(r["steps"]) is tuple for r in second.records)
    assert records_json(second) == records_json(first)
    assert second.trials_csv.read_text().splitlines()[1].startswith('"1.0,0.1",2,0,0,')


def test_a_directory_written_with_comma_text_resumes_with_tuples(tmp_path):
    """An experiment moving a list from comma text to a tuple keeps its results directories."""
    text_cells = [{"steps": "1.0,0.1", "k": 2}, {"steps": "0.5", "k": 3}]
    tuple_cells = [{"steps": (1.0, 0.1), "k": 2}, {"steps": (0.5,), "k": 3}]
    old = run_sweep(toy_sweep(trial_fn=toys.step_sizes_trial, cells=text_cells, n_trials=3),
                    tmp_path / "out", progress=False)
    old_csv = old.trials_csv.read_text()
    sweep = toy_sweep(trial_fn=toys.step_sizes_trial, cells=tuple_cells, n_trials=3)
    assert sweep.key == old.manifest["sweep_key"]

    resumed = run_sweep(sweep, tmp_path / "out", progress=False)
    run = resumed.manifest["runs"][-1]
    assert run["chunks_computed"] == 0 and run["trials_loaded"] == 6
    assert [r["steps"] for r in resumed.records] == [(1.0, 0.1)] * 3 + [(0.5,)] * 3
    assert resumed.trials_csv.read_text() == old_csv  # loaded wall times included
    fresh = run_sweep(sweep, tmp_path / "fresh", progress=False)
    assert csv_rows(fresh.trials_csv) == csv_rows(old.trials_csv)
    drop = ("mean_wall_time",)
    assert csv_rows(fresh.summary_csv, drop=drop) == csv_rows(old.summary_csv, drop=drop)


# --------------------------------------------------------------------------- manifest


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


def test_manifest_tells_tuple_keys_and_column_types(tmp_path):
    sweep = toy_sweep(trial_fn=toys.step_sizes_trial, cells=TUPLE_CELLS, n_trials=2)
    result = run_sweep(sweep, tmp_path / "out", progress=False)
    manifest = json.loads((result.outdir / "manifest.json").read_text())
    assert manifest["format"] == "mixreg.montecarlo/1"
    assert manifest["tuple_keys"] == ["steps"]
    assert [c["steps"] for c in manifest["sweep"]["cells"]] == ["1.0,0.1", "1,2,3", "True,0.5"]
    assert manifest["column_types"] == {"n_steps": ["int"], "last_step": ["float"],
                                        "draw": ["float"], "label": ["str"]}
    scalar = run_sweep(toy_sweep(n_trials=1), tmp_path / "scalar", progress=False)
    assert scalar.manifest["tuple_keys"] == []
    assert scalar.manifest["sweep"]["cells"] == CELLS


# --------------------------------------------------------------------------- directories


def test_config_mismatch_is_refused(reference):
    changed = toy_sweep(config={"experiment": "toy", "lr": 0.2}, n_trials=7)
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
    run_sweep(toy_sweep(n_trials=2), base, progress=False)
    second = run_sweep(toy_sweep(n_trials=2, root_seed=1), base, new_dir=True, progress=False)
    third = run_sweep(toy_sweep(n_trials=2, root_seed=2), base, new_dir=True, progress=False)
    assert second.outdir == tmp_path / "out-2" and third.outdir == tmp_path / "out-3"
    assert json.loads((base / "manifest.json").read_text())["sweep"]["root_seed"] == 2024
    assert second.manifest["sweep"]["root_seed"] == 1


def test_overwrite_starts_fresh(tmp_path):
    out = tmp_path / "out"
    run_sweep(toy_sweep(n_trials=4, chunk_size=2), out, progress=False)
    (out / "figure.txt").write_text("a file the engine does not own")
    result = run_sweep(toy_sweep(n_trials=3, chunk_size=3), out, overwrite=True, progress=False)
    assert sorted(p.name for p in (out / "chunks").iterdir()) == [
        f"cell{i:05d}_t000000-000003.json" for i in range(len(CELLS))]
    assert len(result.manifest["runs"]) == 1 and result.manifest["sweep"]["n_trials"] == 3
    assert (out / "figure.txt").exists()


def test_foreign_directory_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("not a sweep")
    with pytest.raises(ValueError, match="not a mixreg sweep directory"):
        run_sweep(toy_sweep(n_trials=1), tmp_path, progress=False)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_concurrent_run_into_the_same_directory_is_refused(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    tmp_path.joinpath(".lock").touch()
    with open(tmp_path / ".lock") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(RuntimeError, match="another process"):
            run_sweep(toy_sweep(n_trials=1), tmp_path, progress=False)


def test_the_loser_of_a_race_leaves_the_winners_lock_alone(tmp_path):
    lock = tmp_path / ".lock"
    with _directory_lock(tmp_path):
        inode = lock.stat().st_ino
        with pytest.raises(DirectoryBusyError, match=f"process {os.getpid()}"):
            with _directory_lock(tmp_path):
                pass
        assert lock.stat().st_ino == inode and lock.read_text() == f"{os.getpid()}\n"
    assert not lock.exists()


def test_a_stale_lock_is_taken_over(tmp_path):
    (tmp_path / ".lock").write_text("999999999\n")  # a run that died without removing it
    result = run_sweep(toy_sweep(n_trials=1), tmp_path, overwrite=True, progress=False)
    assert len(result.records) == len(CELLS) and not (tmp_path / ".lock").exists()


def test_the_lock_admits_one_owner_among_many_threads(tmp_path):
    """flock is per open file, so threads of one process contend as processes do."""
    holders, most, wins, errors = [0], [0], [0], []
    guard = threading.Lock()

    def contend():
        for _ in range(40):
            try:
                with _directory_lock(tmp_path):
                    with guard:
                        holders[0] += 1
                        most[0] = max(most[0], holders[0])
                        wins[0] += 1
                    time.sleep(0.0005)
                    with guard:
                        holders[0] -= 1
            except DirectoryBusyError:
                pass
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    threads = [threading.Thread(target=contend) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and most[0] == 1 and wins[0] > 0
    assert not (tmp_path / ".lock").exists()


def test_simultaneous_starts_run_once_and_refuse_the_others(tmp_path):
    """Several processes start the same sweep into one directory at the same instant.  The one that
    takes the lock blocks in its first trial until the others have given up, however slow they are."""
    outdir, n = tmp_path / "out", 4
    code = ("import pathlib, sys, time, _toy_trials\n"
            "from mixreg.montecarlo import DirectoryBusyError, run_sweep\n"
            "flag = pathlib.Path(sys.argv[2])\n"
            "pathlib.Path(sys.argv[3]).touch()\n"
            "while not flag.exists():\n"
            "    time.sleep(0.001)\n"
            "try:\n"
            "    run_sweep(_toy_trials.stoppable_sweep(), sys.argv[1], progress=False)\n"
            "except DirectoryBusyError as exc:\n"
            "    print(exc, file=sys.stderr)\n"
            "    sys.exit(3)\n")
    go, release = tmp_path / "go", tmp_path / "release"
    env = dict(subprocess_env(), **{toys.STOP_ENV: "block", toys.STOP_AT_ENV: "0", toys.RELEASE_ENV: str(release)})
    procs = [subprocess.Popen([sys.executable, "-c", code, str(outdir), str(go), str(tmp_path / f"ready{i}")],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for i in range(n)]
    try:
        deadline = time.monotonic() + HANG
        while len(list(tmp_path.glob("ready*"))) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()
        deadline = time.monotonic() + HANG
        while sum(p.poll() is not None for p in procs) < n - 1 and time.monotonic() < deadline:
            time.sleep(0.01)  # the others give up while the first holds the lock
        release.touch()
        codes = [p.wait(timeout=HANG) for p in procs]
        errors = [p.stderr.read().decode() for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.stderr.close()
    assert sorted(codes) == [0] + [3] * (n - 1), errors
    assert all("another process" in e and e.count("\n") == 1 for e, c in zip(errors, codes) if c == 3)
    assert not (outdir / ".lock").exists()
    result = run_sweep(toys.stoppable_sweep(), outdir, progress=False)
    assert result.manifest["runs"][-1]["chunks_computed"] == 0 and len(result.manifest["runs"]) == 2


def test_a_directory_that_cannot_be_created_or_written_is_one_clear_error(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(ResultsDirectoryError, match="cannot create the results directory .*a_file/out"):
        run_sweep(toy_sweep(n_trials=1), blocker / "out", progress=False)
    with pytest.raises(ValueError, match="exists and is not a directory"):
        run_sweep(toy_sweep(n_trials=1), blocker, progress=False)
    if os.name == "posix" and os.geteuid() != 0:  # root writes anywhere
        readonly = tmp_path / "readonly"
        readonly.mkdir()
        readonly.chmod(0o555)
        try:
            with pytest.raises(ResultsDirectoryError, match="cannot write into the results directory"):
                run_sweep(toy_sweep(n_trials=1), readonly, progress=False)
            with pytest.raises(ResultsDirectoryError, match="cannot create"):
                run_sweep(toy_sweep(n_trials=1), readonly / "sub", progress=False)
        finally:
            readonly.chmod(0o755)


def test_a_resumed_run_keeps_no_checksum_of_the_tables_it_has_not_rewritten(tmp_path):
    """The manifest records the sha256 of the tables written into the directory; a resume rewrites
    trials.csv and summary.csv, so an experiment's table of the previous run is no longer vouched for
    until it is written again."""
    sweep = toy_sweep(n_trials=2)
    first = run_sweep(sweep, tmp_path, progress=False)
    write_table(tmp_path / "rates.csv", [{"rate": 0.5}], record=True)
    checksums = json.loads((tmp_path / MANIFEST_NAME).read_text())["checksums"]
    assert set(checksums) == {"sweep.config", "trials.csv", "summary.csv", "rates.csv"}
    assert checksums["trials.csv"] == hashlib.sha256(first.trials_csv.read_bytes()).hexdigest()
    run_sweep(sweep, tmp_path, progress=False)
    assert set(json.loads((tmp_path / MANIFEST_NAME).read_text())["checksums"]) == {
        "sweep.config", "trials.csv", "summary.csv"}
    with pytest.raises(ValueError, match="record=True needs a results directory"):
        write_table(tmp_path / "chunks" / "x.csv", [{"a": 1}], record=True)
