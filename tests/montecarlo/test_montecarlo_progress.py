"""Tests of mixreg.montecarlo._progress: what a running sweep shows (a bar, a notebook widget, a log
line a minute where stderr is not a terminal) and the notice of a cold Numba cache."""

import dataclasses
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from _toy_trials import HANG, REPO_DIR, records_json, sleepy_trial, toy_sweep
from mixreg.montecarlo import Sweep, SweepInterrupted, _progress, run_sweep
from mixreg.montecarlo._progress import COLD_KERNELS_NOTICE

#: A progress line between the first and the last (the lines' format is the module docstring's):
#: with trials done, or before the first chunk finishes.
MIDDLE = re.compile(r"^(toy|sleepy): \d+/\d+ trials \(\d+%\), "
                    r"([\d.,]+ trials/(s|min|h), ETA (< 1 s|\d+ (s|min))|no results yet after (< 1|\d+) s)$")
LAST = re.compile(r"^(toy|sleepy): (\d+)/\2 trials \(100%\), [\d.,]+ trials/(s|min), done in (< 1|\d+) s$")
TIMER = "mixreg progress lines"  # the name of the thread writing the lines in between


@pytest.fixture
def tiny_interval(monkeypatch):
    """A line every 0.1 s (a minute in a real run)."""
    monkeypatch.setattr(_progress, "LOG_INTERVAL", 0.1)


def _lines(text):
    return text.strip().splitlines()


def _counts(lines):
    return [int(line.split(": ")[1].split("/")[0].replace(",", "")) for line in lines]


def _timer_alive():
    return any(thread.name == TIMER for thread in threading.enumerate())


def sleepy_sweep(sleep=0.3, n_trials=4, **kwargs):
    """Two cells of one chunk of ``n_trials`` trials of ``sleep`` s each: no chunk finishes for a while."""
    return Sweep(name="sleepy", trial_fn=sleepy_trial, cells=[{"sleep": sleep, "c": c} for c in (0, 1)],
                 n_trials=n_trials, root_seed=7, config={}, chunk_size=n_trials, **kwargs)


@pytest.mark.parametrize("engine", [{"jobs": 1}, {"jobs": 2}, {"dask_local": 1}],
                         ids=["in-process", "loky", "dask"])
def test_without_a_terminal_a_run_writes_lines_and_the_same_records(engine, tiny_interval, tmp_path, capsys):
    if "dask_local" in engine:
        pytest.importorskip("distributed")
    sweep = toy_sweep(trial_fn=sleepy_trial, cells=[{"sleep": 0.05, "c": c} for c in range(3)], n_trials=4,
                      chunk_size=2)  # 6 chunks of 0.1 s
    shown = run_sweep(sweep, tmp_path / "shown", **engine)
    lines = _lines(capsys.readouterr().err)
    assert lines[0] == "toy: 0/12 trials (0%), starting"
    assert all(MIDDLE.match(line) for line in lines[1:-1]), lines
    assert LAST.match(lines[-1]) and lines[-1].startswith("toy: 12/12 "), lines
    assert _counts(lines) == sorted(_counts(lines)) and not _timer_alive()
    quiet = run_sweep(sweep, tmp_path / "quiet", progress=False, **engine)
    assert capsys.readouterr().err == ""
    assert records_json(shown) == records_json(quiet)


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_line_every_interval_even_while_no_chunk_finishes(jobs, monkeypatch, tmp_path, capsys):
    """Chunks of 1.2 s and a line every 0.25 s: lines come before the first chunk finishes and
    between, none after the last; the records are those of a run without lines."""
    monkeypatch.setattr(_progress, "LOG_INTERVAL", 0.25)
    sweep = sleepy_sweep()
    shown = run_sweep(sweep, tmp_path / "shown", jobs=jobs)
    err = capsys.readouterr().err
    sys.__stdout__.write(f"\n[jobs={jobs}]\n{err}")  # the lines, for a reader of `pytest -s`
    lines = _lines(err)
    assert lines[0] == "sleepy: 0/8 trials (0%), starting" and LAST.match(lines[-1]), lines
    waiting = [line for line in lines if "no results yet after" in line]
    assert len(waiting) >= 3 and all(MIDDLE.match(line) for line in lines[1:-1]), lines
    assert _counts(lines) == sorted(_counts(lines)) and not _timer_alive()
    time.sleep(0.3)
    assert capsys.readouterr().err == ""  # nothing after the last line
    assert records_json(shown) == records_json(run_sweep(sweep, tmp_path / "quiet", jobs=jobs, progress=False))


def test_a_line_at_most_once_per_interval_and_one_at_the_end(tmp_path, capsys):
    run_sweep(toy_sweep(n_trials=4, chunk_size=2), tmp_path / "out")
    lines = _lines(capsys.readouterr().err)
    assert len(lines) == 2 and lines[0].endswith("starting") and "24/24 trials (100%)" in lines[1]


def test_a_resumed_run_says_so_and_its_rate_counts_only_its_own_trials(capsys):
    clock = iter([0.0, 1.0, 2.0, 6.0]).__next__
    with _progress._LogLines(total=12, initial=4, label="toy", clock=clock, interval=3600) as display:
        display.tick()  # the timer's line, written here
        display.update(4, 1, 3)  # 4 trials in 2 s: 2 trials/s, 4 left
        display.tick()
        display.update(4, 3, 3)
        display.tick()  # all done: the last line is the end's
    assert _lines(capsys.readouterr().err) == [
        "toy: 4/12 trials (33%), resuming",
        "toy: 4/12 trials (33%), no new results yet after 1 s",
        "toy: 8/12 trials (66%), 2.0 trials/s, ETA 2 s",
        "toy: 12/12 trials (100%), 1.3 trials/s, done in 6 s",
    ]


def test_lines_name_the_preset_of_a_study_and_an_interrupted_run_has_no_last_line(tmp_path, capsys):
    sweep = toy_sweep(n_trials=2, config={"preset": "quick"})
    run_sweep(sweep, tmp_path / "out")
    assert _lines(capsys.readouterr().err)[-1].startswith("toy quick: 12/12 trials (100%), ")
    with pytest.raises(KeyboardInterrupt):
        with _progress._LogLines(total=10, initial=0, label="toy", interval=3600) as display:
            display.update(5, 0, 2)
            display.tick()
            raise KeyboardInterrupt
    assert [line.split(",")[0] for line in _lines(capsys.readouterr().err)] == ["toy: 0/10 trials (0%)",
                                                                                "toy: 5/10 trials (50%)"]
    assert not _timer_alive()


def sleepy_stopping_trial(cell, seed):
    """Sleep ``cell['sleep']`` s, then at trial 2 stop as ``cell['stop']`` says (``ctrl-c`` or ``sigterm``)."""
    time.sleep(cell["sleep"])
    if seed.spawn_key[-1] == 2:
        if cell["stop"] == "ctrl-c":
            raise KeyboardInterrupt
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            raise RuntimeError("SIGTERM has its default action here: sending it would kill the process")
        signal.raise_signal(signal.SIGTERM)
    return {"draw": float(np.random.default_rng(seed).standard_normal())}


@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_a_stopped_run_stops_its_lines_at_once(stop, tiny_interval, tmp_path, capsys):
    """Ctrl-C or SIGTERM while lines come: the run stops at once, with no last line, and no line
    comes after."""
    sweep = toy_sweep(trial_fn=sleepy_stopping_trial, cells=[{"sleep": 0.25, "stop": stop}], n_trials=4,
                      chunk_size=1)
    start = time.perf_counter()
    with pytest.raises(SweepInterrupted):
        run_sweep(sweep, tmp_path / "out", jobs=1)
    assert time.perf_counter() - start < HANG and not _timer_alive()
    lines = _lines(capsys.readouterr().err)
    assert lines[0] == "toy: 0/4 trials (0%), starting" and all(MIDDLE.match(line) for line in lines[1:]), lines
    assert any("no results yet" in line for line in lines) and any("trials/s" in line for line in lines), lines
    time.sleep(0.3)
    assert capsys.readouterr().err == ""


def test_rates_and_durations_read_as_a_person_would_say_them():
    assert [_progress._rate_text(r) for r in (3.14, 250.0, 0.05, 1 / 600, 1e-5)] == [
        "3.1 trials/s", "250 trials/s", "3.0 trials/min", "6.0 trials/h", "0.036 trials/h"]
    assert [_progress._duration_text(s) for s in (0.2, 40, 19 * 60, 3 * 3600 + 300, 55 * 3600, float("inf"))] == [
        "< 1 s", "40 s", "19 min", "3 h 05 min", "2 d 7 h", "unknown"]


def test_a_forced_bar_is_a_terminal_bar_on_any_stream(monkeypatch, tmp_path):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    run_sweep(toy_sweep(n_trials=2), tmp_path / "out", progress=True)
    text = stream.getvalue().replace("\r", "\n")
    assert "toy: 100%|" in text and "12/12" in text and "cells 6/6" in text and "starting" not in text


def test_progress_bar_has_a_width_when_the_terminal_reports_none(monkeypatch):
    monkeypatch.setattr(os, "get_terminal_size", lambda *args: os.terminal_size((0, 0)))
    monkeypatch.delenv("COLUMNS", raising=False)
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    bar = _progress._terminal_bar(total=10, initial=0, label="toy")
    with bar:
        bar.update(5)
        bar.refresh()
    text = stream.getvalue().replace("\r", "\n").strip().splitlines()[-1]
    assert "toy:  50%|" in text and "5/10" in text and 60 <= len(text) <= 80


def test_in_a_notebook_with_widgets_the_run_shows_the_widget(monkeypatch, tmp_path, capsys):
    made = []

    @dataclasses.dataclass
    class Widget:  # stands for tqdm.notebook.tqdm (ipywidgets is not a dependency)
        total: int
        initial: int
        unit: str
        desc: str
        n: int = 0

        def __post_init__(self):
            made.append(self)

        def set_postfix_str(self, text, refresh=True):
            self.postfix = text

        def update(self, n):
            self.n += n

        def close(self):
            self.closed = True

    monkeypatch.setattr(_progress, "_notebook_tqdm", lambda: Widget)
    run_sweep(toy_sweep(n_trials=2), tmp_path / "auto")
    run_sweep(toy_sweep(n_trials=2), tmp_path / "forced", progress=True)
    run_sweep(toy_sweep(n_trials=2), tmp_path / "off", progress=False)
    assert [(w.desc, w.total, w.n, w.postfix, w.closed) for w in made] == [("toy", 12, 12, "cells 6/6", True)] * 2
    assert capsys.readouterr().err == ""


def test_outside_a_notebook_tqdm_auto_is_not_the_widget():
    assert _progress._notebook_tqdm() is None


# --------------------------------------------------------------------------- the compilation notice


def test_the_notice_once_per_process_where_kernels_are_cold_and_never_with_progress_off(monkeypatch, tmp_path,
                                                                                          capsys):
    monkeypatch.setattr(_progress, "_NOTICE_SHOWN", {"done": False})
    monkeypatch.setattr(_progress, "cold_kernel_modules", lambda code, declared: ["mixreg.kernels"])
    run_sweep(toy_sweep(n_trials=1), tmp_path / "off", progress=False)
    assert capsys.readouterr().err == ""
    run_sweep(toy_sweep(n_trials=1), tmp_path / "first")
    assert _lines(capsys.readouterr().err)[0] == COLD_KERNELS_NOTICE
    run_sweep(toy_sweep(n_trials=1), tmp_path / "second")
    assert COLD_KERNELS_NOTICE not in capsys.readouterr().err


def test_a_sweep_without_numba_kernels_has_no_cold_kernels(tmp_path):
    """Not even for the registered algorithms, which the fingerprint of a sweep that declares none
    names (its trial function may run any of them, or none)."""
    assert _progress.cold_kernel_modules(toy_sweep().code(), declared=False) == []


KERNEL_SCRIPT = '''
import sys

import numpy as np

from mixreg._fixed_order import sum_sq_diff
from mixreg.montecarlo import Sweep, run_sweep


def kernel_trial(cell, seed):
    """One small kernel of mixreg (two Numba functions): a few seconds to compile."""
    rng = np.random.default_rng(seed)
    u, v = rng.standard_normal(8), rng.standard_normal(8)
    return {"sq": float(sum_sq_diff(u, v, 1.0, np.empty(4)))}


if __name__ == "__main__":
    sweep = Sweep(name="kernel", trial_fn=kernel_trial, cells=[{"a": 1}], n_trials=1, root_seed=1, config={})
    run_sweep(sweep, sys.argv[1], overwrite=True, jobs=1)
'''


def test_the_notice_appears_with_a_cold_numba_cache_and_not_once_it_is_warm(tmp_path):
    """Two processes on a fresh ``NUMBA_CACHE_DIR``: the first compiles (and says so first), the
    second loads the cached kernels (and says nothing of compiling)."""
    script = tmp_path / "kernel_sweep.py"
    script.write_text(KERNEL_SCRIPT, encoding="utf-8")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               PYTHONPATH=os.pathsep.join([str(REPO_DIR), os.environ.get("PYTHONPATH", "")]))
    runs = []
    for _ in range(2):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], env=env, capture_output=True,
                              text=True, timeout=HANG, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        runs.append((_lines(done.stderr), time.perf_counter() - start))
    (cold, _), (warm, _) = runs
    assert cold[0] == COLD_KERNELS_NOTICE and cold[1] == "kernel: 0/1 trials (0%), starting", cold
    assert COLD_KERNELS_NOTICE not in warm and warm[0] == "kernel: 0/1 trials (0%), starting", warm
