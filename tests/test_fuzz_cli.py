"""Bad and edge command lines of both experiments: every fault ends in one clear line.

A committed table of command lines, each run through the experiment's ``main(argv)`` in this
process (the exit status is ``main``'s return value or its ``SystemExit`` code), a few through
``python -m`` where the process's own exit status and stderr matter.  For every case:

* the exit status is among the case's: 2 for a usage error (a bad or conflicting flag, a
  value out of range, a directory holding something else, a sweep too large to fit), 1 for a
  runtime fault (a directory that cannot be written or is held by another run, a scheduler
  that does not answer, failed trials) and 0 for a run that finished;
* a usage error or a runtime fault prints exactly ONE line on stderr, naming the parameter
  or the fault (the case's fragment);
* nothing prints "Traceback" unless ``--debug`` is given.

Runs that do start use tiny settings (a second or two each).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import socket
import subprocess
import sys

import pytest

from _toy_trials import HANG, REPO_DIR, subprocess_env
from experiments import success_vs_R, two_phase

#: Dask's distributed scheduler is an optional extra: without it, --scheduler is refused in one line.
DASK = importlib.util.find_spec("distributed") is not None

EXPERIMENTS = {"S": success_vs_R, "T": two_phase}
PROG = {"S": "python -m experiments.success_vs_R", "T": "python -m experiments.two_phase"}
TINY = {
    "S": ["--m", "8", "--k", "2", "--n", "10", "--d", "5", "--sigmas", "0.5", "--rs", "0.3", "1.0",
          "--trials", "2", "--n-inits", "2", "--n-rounds", "10"],
    "T": ["--Ms", "60", "--M-ref", "60", "--laws", "zipf", "--law-ref", "zipf", "--p-mins", "0.2",
          "--p-ref", "0.2", "--trials", "2", "--d", "4", "--k", "2", "--n-max", "20", "--size-mean", "4",
          "--fmd-rounds", "3", "--fx-rounds", "6", "--checkpoint-every", "2", "--ifca-restarts", "1",
          "--anchor-points", "30"],
}
USAGE, RUNTIME, OK = {2}, {1}, {0}

# (id, experiment, argv, allowed exit statuses, fragment of the one error line (or of a warning))
# "{out}" is a fresh results directory; "{file}" a regular file; "{foreign}" a non-empty directory
# that is not a results directory; "{other}" a results directory of another sweep; "{empty}" an
# empty directory; "{badmanifest}" a directory whose manifest.json is not JSON; "{port}" a
# loopback port with nothing listening.  "tiny" prepends the experiment's tiny settings.
CASES = [
    # ---- success_vs_R: numeric flags, zero, negative, huge, not numbers
    ("S-k-0", "S", ["--k", "0"], USAGE, "k must be an integer >= 1, got 0"),
    ("S-k-neg", "S", ["--k", "-3"], USAGE, "k must be an integer >= 1, got -3"),
    ("S-k-word", "S", ["--k", "two"], USAGE, "argument --k: invalid int value: 'two'"),
    ("S-m-0", "S", ["--m", "0"], USAGE, "m must be an integer >= 1"),
    ("S-m-float", "S", ["--m", "1e3"], USAGE, "argument --m: invalid int value: '1e3'"),
    ("S-m-huge", "S", ["--m", "1000000000"], USAGE, "TB of memory, more than this machine"),
    ("S-n-neg", "S", ["--n", "-1"], USAGE, "n must be an integer >= 1"),
    ("S-d-0", "S", ["--d", "0"], USAGE, "d must be an integer >= 1"),
    ("S-d-huge", "S", ["--d", "1000000000000"], USAGE, "one trial of sweep 'success_vs_R' needs about"),
    ("S-trials-0", "S", ["--trials", "0"], USAGE, "trials must be an integer >= 1"),
    ("S-trials-huge", "S", ["--trials", "1000000000"], USAGE, "15 cells x 1000000000 trials"),
    ("S-trials-huge-dry", "S", ["--trials", "1000000000", "--dry-run"], USAGE, "more than the engine's limit"),
    ("S-inits-0", "S", ["--n-inits", "0"], USAGE, "n_inits must be an integer >= 1"),
    ("S-inits-huge", "S", ["--n-inits", "1000000000"], USAGE, "lower --m, --n, --d, --k, --n-inits or"),
    ("S-rounds-0", "S", ["--n-rounds", "0"], USAGE, "n_rounds must be an integer >= 1"),
    ("S-rounds-huge", "S", ["--n-rounds", "1000000000"], USAGE, "would take about"),
    ("S-sigmas-empty", "S", ["--sigmas"], USAGE, "argument --sigmas: expected at least one argument"),
    ("S-sigmas-neg", "S", ["--sigmas", "-1"], USAGE, "sigmas must be finite and >= 0"),
    ("S-sigmas-nan", "S", ["--sigmas", "0.1", "nan"], USAGE, "sigmas must be finite and >= 0"),
    ("S-rs-empty", "S", ["--rs"], USAGE, "argument --rs: expected at least one argument"),
    ("S-rs-0", "S", ["--rs", "0"], USAGE, "rs must be finite and > 0"),
    ("S-rs-overflow", "S", ["--rs", "1e309"], USAGE, "rs must be finite and > 0, got [inf]"),
    ("S-rs-word", "S", ["--rs", "far"], USAGE, "argument --rs: invalid float value: 'far'"),
    ("S-steps-0", "S", ["--step-sizes", "0"], USAGE, "step_sizes must be finite and > 0"),
    ("S-init-scale-0", "S", ["--init-scale", "0"], USAGE, "init_scale must be finite and > 0"),
    ("S-offset-neg", "S", ["--threshold-offset", "-1"], USAGE, "threshold_offset must be finite and >= 0"),
    ("S-k-above-m", "S", ["--k", "5", "--m", "3"], USAGE, "k must be at most m"),
    # ---- unknown choices and flags
    ("S-dtype", "S", ["--dtype", "float16"], USAGE, "argument --dtype: invalid choice: 'float16'"),
    ("S-protocol", "S", ["--protocol", "bogus"], USAGE, "argument --protocol: invalid choice"),
    ("S-preset", "S", ["--preset", "nope"], USAGE, "argument --preset: invalid choice: 'nope'"),
    ("S-unknown", "S", ["--frobnicate"], USAGE, "unrecognized arguments: --frobnicate"),
    ("S-renamed", "S", ["--inits", "3"], USAGE, "--inits is now --n-inits"),
    # ---- engine flags: bad values and conflicts
    ("S-jobs-0", "S", ["--jobs", "0"], USAGE, "argument --jobs: expected a positive integer, got 0"),
    ("S-jobs-neg", "S", ["--jobs", "-2"], USAGE, "argument --jobs"),
    ("S-jobs-word", "S", ["--jobs", "all"], USAGE, "argument --jobs: expected a positive integer, got 'all'"),
    ("S-dask-0", "S", ["--dask-local", "0"], USAGE, "argument --dask-local"),
    ("S-kthreads-0", "S", ["--kernel-threads", "0"], USAGE, "argument --kernel-threads"),
    ("S-chunk-0", "S", ["--chunk-size", "0"], USAGE, "argument --chunk-size"),
    ("S-timeout-0", "S", ["--connect-timeout", "0"], USAGE, "argument --connect-timeout"),
    ("S-timeout-nan", "S", ["--connect-timeout", "nan"], USAGE, "argument --connect-timeout"),
    ("S-seed-neg", "S", ["--seed", "-1"], USAGE, "argument --seed: expected a non-negative integer"),
    ("S-seed-word", "S", ["--seed", "lucky"], USAGE, "argument --seed"),
    ("S-scheduler-bad", "S", ["--scheduler", "localhost:8786"], USAGE, "expected a Dask scheduler address"),
    ("S-scheduler-and-dask", "S", ["--scheduler", "tcp://127.0.0.1:1", "--dask-local", "2"], USAGE,
     "not allowed with argument"),
    ("S-jobs-and-dask", "S", ["--jobs", "2", "--dask-local", "2", "--dry-run"], USAGE,
     "--jobs applies to local processes"),
    ("S-overwrite-new-dir", "S", ["--overwrite", "--new-dir"], USAGE, "not allowed with argument"),
    # ---- results directories
    ("S-out-file", "S", ["tiny", "--out", "{file}"], USAGE, "exists and is not a directory"),
    ("S-out-under-file", "S", ["tiny", "--out", "{file}/out"], RUNTIME, "cannot create the results directory"),
    ("S-out-foreign", "S", ["tiny", "--out", "{foreign}"], USAGE, "is not a mixreg sweep directory"),
    ("S-out-other", "S", ["tiny", "--out", "{other}"], USAGE, "holds a different sweep"),
    ("S-out-locked", "S", ["tiny", "--out", "{locked}"], RUNTIME, "another process"),
    ("S-redraw-absent", "S", ["--redraw", "{out}"], USAGE, "is not a directory"),
    ("S-redraw-file", "S", ["--redraw", "{file}"], USAGE, "is not a directory"),
    ("S-redraw-empty", "S", ["--redraw", "{empty}"], USAGE, "has no manifest.json"),
    ("S-redraw-bad-manifest", "S", ["--redraw", "{badmanifest}"], USAGE, "is not the manifest"),
    ("S-redraw-extra", "S", ["--redraw", "{empty}", "--k", "3"], USAGE, "drop --k"),
    ("S-redraw-missing", "S", ["--redraw"], USAGE, "argument --redraw: expected one argument"),
    # ---- runs that start: capped workers, an unreachable scheduler, extreme values
    ("S-jobs-huge", "S", ["tiny", "--jobs", "10000", "--out", "{out}"], OK, "warning: jobs=10000 is more than"),
    ("S-dask-huge-dry", "S", ["--dask-local", "10000", "--dry-run"], OK, "warning: workers=10000 is more than"),
    ("S-scheduler-silent", "S", ["tiny", "--scheduler", "tcp://127.0.0.1:{port}", "--connect-timeout", "0.5",
                                 "--out", "{out}"], RUNTIME,
     "could not connect to the Dask scheduler" if DASK else "need dask.distributed, which is not installed"),
    ("S-r-1e300", "S", ["tiny", "--rs", "1e300", "--out", "{out}"], OK | RUNTIME, None),
    ("S-sigma-1e300", "S", ["tiny", "--sigmas", "1e300", "--out", "{out}"], OK | RUNTIME, None),
    # ---- two_phase
    ("T-k-0", "T", ["--k", "0"], USAGE, "k must be an integer >= 1"),
    ("T-d-0", "T", ["--d", "0"], USAGE, "d must be an integer >= 1"),
    ("T-d-1-k-2", "T", ["tiny", "--d", "1", "--k", "2", "--out", "{out}"], OK | RUNTIME | USAGE, None),
    ("T-Ms-0", "T", ["--Ms", "0"], USAGE, "Ms"),
    ("T-Ms-empty", "T", ["--Ms"], USAGE, "argument --Ms: expected at least one argument"),
    ("T-Ms-word", "T", ["--Ms", "100", "x"], USAGE, "argument --Ms: invalid int value: 'x'"),
    ("T-Ms-huge", "T", ["--Ms", "1000000000000"], USAGE, "lower --M-ref, --Ms,"),
    ("T-M-ref-1", "T", ["--M-ref", "1"], USAGE, "M_ref"),
    ("T-k-above-M", "T", ["--k", "40", "--d", "50", "--Ms", "60", "--M-ref", "60"], USAGE, "M_ref"),
    ("T-p-ref-big", "T", ["--p-ref", "0.9"], USAGE, "p_ref"),
    ("T-p-mins-0", "T", ["--p-mins", "0"], USAGE, "p_mins"),
    ("T-p-mins-nan", "T", ["--p-mins", "nan"], USAGE, "p_mins"),
    ("T-sigma-neg", "T", ["--sigma", "-1"], USAGE, "sigma must be finite and >= 0"),
    ("T-separation-0", "T", ["--separation", "0"], USAGE, "separation must be finite and > 0"),
    ("T-separation-1e300", "T", ["tiny", "--separation", "1e300", "--out", "{out}"], OK | RUNTIME, None),
    ("T-laws-bogus", "T", ["--laws", "bogus"], USAGE, "argument --laws: invalid choice: 'bogus'"),
    ("T-n-max-0", "T", ["--n-max", "0"], USAGE, "n_max must be an integer >= 2"),
    ("T-trials-huge", "T", ["--trials", "1000000000"], USAGE, "more than the engine's limit"),
    ("T-fx-rounds-huge", "T", ["--fx-rounds", "1000000000"], USAGE, "--fx-rounds, --ifca-restarts or --steps"),
    ("T-anchor-points-1", "T", ["--anchor-points", "1"], USAGE, "anchor_points must be an integer >= 2"),
    ("T-checkpoint-huge", "T", ["--checkpoint-every", "100000"], USAGE, "checkpoint_every"),
    ("T-anchors-random-0", "T", ["--anchor-mode", "random", "--n-anchors", "0"], USAGE, "n_anchors"),
    ("T-renamed", "T", ["--p-min", "0.1"], USAGE, "--p-min is now --p-mins"),
    ("T-jobs-huge", "T", ["tiny", "--jobs", "10000", "--out", "{out}"], OK, "warning: jobs=10000 is more than"),
    ("T-out-file", "T", ["tiny", "--out", "{file}"], USAGE, "exists and is not a directory"),
    ("T-out-locked", "T", ["tiny", "--out", "{locked}"], RUNTIME, "another process"),
    ("T-redraw-empty", "T", ["--redraw", "{empty}"], USAGE, "has no manifest.json"),
    ("T-overwrite-new-dir", "T", ["--overwrite", "--new-dir"], USAGE, "not allowed with argument"),
]


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def places(tmp_path):
    """The directories and files the table's placeholders stand for (and a held lock)."""
    fcntl = pytest.importorskip("fcntl")
    file = tmp_path / "a_file"
    file.write_text("not a directory\n")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.json").write_text('{"format": "mixreg.montecarlo/1", "sweep": {"name": "other"}}\n')
    empty = tmp_path / "empty"
    empty.mkdir()
    badmanifest = tmp_path / "badmanifest"
    badmanifest.mkdir()
    (badmanifest / "manifest.json").write_text("{not json")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / ".lock").write_text("1\n")
    with open(locked / ".lock") as held:
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running sweep holds it
        yield {"out": tmp_path / "out", "file": file, "foreign": foreign, "other": other, "empty": empty,
               "badmanifest": badmanifest, "locked": locked, "port": _free_port()}


def _argv(exp, argv, places):
    args = []
    for item in argv:
        args += TINY[exp] if item == "tiny" else [item.format(**places)]
    if "--redraw" not in args:
        args += ["--no-progress"]
        if not {"--jobs", "--dask-local", "--scheduler"} & set(args):
            args += ["--jobs", "1"]
        if "--out" not in args:
            args += ["--out", str(places["out"])]
    return args


def _main(module, argv):
    try:
        return getattr(module, "STUDY", module).main(argv)  # a study, or a script
    except SystemExit as exc:
        return exc.code


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_bad_or_edge_command_line_ends_in_one_clear_line(case, places, capsys):
    _, exp, argv, statuses, fragment = case
    code = _main(EXPERIMENTS[exp], _argv(exp, argv, places))
    out, err = capsys.readouterr()
    assert code in statuses, (code, err)
    assert "Traceback" not in out + err
    lines = err.strip().splitlines()
    if code == 2 or (code == 1 and fragment):
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"{PROG[exp]}: error: "), lines
    if code == 1 and not fragment:  # trials failed: a count, then one line each
        assert any("trials failed" in line for line in lines) or any("figures not drawn" in line for line in lines)
    if fragment:
        assert fragment in err, err
    if code == 0:
        assert all(": warning: " in line for line in lines), lines
        assert "wrote" in out or "Grid:" in out


def test_the_case_table_covers_both_experiments():
    assert len(CASES) >= 40
    assert {c[1] for c in CASES} == {"S", "T"} and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_results_directory_is_one_line(tmp_path, capsys):
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    readonly.chmod(0o555)
    try:
        for out, message in ((readonly, "cannot write into the results directory"),
                             (readonly / "sub", "cannot create the results directory")):
            assert _main(success_vs_R, TINY["S"] + ["--jobs", "1", "--no-progress", "--out", str(out)]) == 1
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and message in err and "Permission denied" in err
    finally:
        readonly.chmod(0o755)


def _unwritable(directory):
    probe = pathlib.Path(directory) / ".mixreg-write-probe"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except OSError:
        return pathlib.Path(directory).is_dir()
    probe.unlink()
    return False


@pytest.mark.skipif(not _unwritable("/sys"), reason="needs a directory nobody may write into")
def test_a_directory_not_even_root_may_write_into_is_one_line(capsys):
    assert _main(two_phase, TINY["T"] + ["--jobs", "1", "--no-progress", "--out", "/sys"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write into the results directory '/sys'" in err


# --------------------------------------------------------------------------- as a user runs them


def _python_m(module, argv, cwd):
    return subprocess.run([sys.executable, "-m", module, *argv], cwd=cwd, env=subprocess_env(),
                          capture_output=True, text=True, timeout=HANG)  # a deadlock guard only


def test_the_process_exits_2_with_one_line_for_a_sweep_too_large(tmp_path):
    run = _python_m("experiments.success_vs_R", ["--trials", "1000000000", "--out", str(tmp_path / "o")],
                    REPO_DIR)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and "1000000000 trials" in run.stderr
    assert not (tmp_path / "o").exists()


def test_debug_shows_the_traceback_the_one_line_replaces(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    argv = TINY["T"] + ["--jobs", "1", "--no-progress", "--out", str(blocker / "out")]
    quiet = _python_m("experiments.two_phase", argv, REPO_DIR)
    assert quiet.returncode == 1 and quiet.stderr.count("\n") == 1 and "Traceback" not in quiet.stderr
    loud = _python_m("experiments.two_phase", argv + ["--debug"], REPO_DIR)
    assert loud.returncode == 1 and "Traceback (most recent call last)" in loud.stderr
    assert "cannot create the results directory" in loud.stderr.splitlines()[-1]
