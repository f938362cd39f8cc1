"""Tests of mixreg.montecarlo._progress: what a running sweep shows (a bar, a notebook widget, a log
line a minute where stderr is not a terminal) and the notice of a cold Numba cache."""

import dataclasses
import io
import os
import re
import subprocess
import sys
import time

import pytest

from _toy_trials import HANG, REPO_DIR, records_json, toy_sweep
from mixreg.montecarlo import _progress, run_sweep
from mixreg.montecarlo._progress import COLD_KERNELS_NOTICE

#: A progress line between the first and the last (the lines' format is the module docstring's).
MIDDLE = re.compile(r"^toy: \d+/24 trials \(\d+%\), [\d.,]+ trials/(s|min|h), ETA (< 1 s|\d+ (s|min))$")


@pytest.fixture
def every_chunk(monkeypatch):
    """A line for every finished chunk (the interval is a minute in a real run)."""
    monkeypatch.setattr(_progress, "LOG_INTERVAL", 0.0)


def _lines(text):
    return text.strip().splitlines()


@pytest.mark.parametrize("engine", [{"jobs": 1}, {"jobs": 2}, {"dask_local": 1}],
                         ids=["in-process", "loky", "dask"])
def test_without_a_terminal_a_run_writes_lines_and_the_same_records(engine, every_chunk, tmp_path, capsys):
    if "dask_local" in engine:
        pytest.importorskip("distributed")
    sweep = toy_sweep(n_trials=4, chunk_size=2)  # 6 cells: 12 chunks of 2 trials
    shown = run_sweep(sweep, tmp_path / "shown", **engine)
    lines = _lines(capsys.readouterr().err)
    assert lines[0] == "toy: 0/24 trials (0%), starting"
    assert len(lines) == 1 + 12 and all(MIDDLE.match(line) for line in lines[1:-1]), lines
    assert re.match(r"^toy: 24/24 trials \(100%\), [\d.,]+ trials/(s|min), done in (< 1|\d+) s$", lines[-1])
    quiet = run_sweep(sweep, tmp_path / "quiet", progress=False, **engine)
    assert capsys.readouterr().err == ""
    assert records_json(shown) == records_json(quiet)


def test_a_line_at_most_once_per_interval_and_one_at_the_end(tmp_path, capsys):
    run_sweep(toy_sweep(n_trials=4, chunk_size=2), tmp_path / "out")
    lines = _lines(capsys.readouterr().err)
    assert len(lines) == 2 and lines[0].endswith("starting") and "24/24 trials (100%)" in lines[1]


def test_a_resumed_run_says_so_and_its_rate_counts_only_its_own_trials(every_chunk, capsys):
    clock = iter([0.0, 2.0, 4.0, 6.0]).__next__
    with _progress._LogLines(total=12, initial=4, label="toy", clock=clock) as display:
        display.update(4, 1, 3)  # 4 trials in 2 s: 2 trials/s, 4 left
        display.update(4, 3, 3)
    assert _lines(capsys.readouterr().err) == [
        "toy: 4/12 trials (33%), resuming",
        "toy: 8/12 trials (66%), 2.0 trials/s, ETA 2 s",
        "toy: 12/12 trials (100%), 1.3 trials/s, done in 6 s",
    ]


def test_lines_name_the_preset_of_a_study_and_an_interrupted_run_has_no_last_line(every_chunk, tmp_path, capsys):
    sweep = toy_sweep(n_trials=2, config={"preset": "quick"})
    run_sweep(sweep, tmp_path / "out")
    assert _lines(capsys.readouterr().err)[-1].startswith("toy quick: 12/12 trials (100%), ")
    with pytest.raises(KeyboardInterrupt):
        with _progress._LogLines(total=10, initial=0, label="toy") as display:
            display.update(5, 0, 2)
            raise KeyboardInterrupt
    assert [line.split(",")[0] for line in _lines(capsys.readouterr().err)] == ["toy: 0/10 trials (0%)",
                                                                                "toy: 5/10 trials (50%)"]


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
