"""Every experiment refuses up front what cannot fit, from a per-trial memory estimate.

Each experiment feeds the engine's memory check (:class:`mixreg.montecarlo.Sweep`'s ``memory_fn``
and ``size_names``) with an estimate built from its problem specification and its algorithms'
work arrays (:func:`mixreg.algorithms.trial_bytes`).  Checked here, for every experiment module:

* a size that cannot fit exits 2 with one line naming the flags and the estimate, writes no
  results directory, and allocates nothing large: it runs in a subprocess whose address space is
  limited to 2 GB, far below the refused trial;
* ``--dry-run`` prints the per-trial estimate;
* the estimate bounds the measured peak of one small trial (tracemalloc, after a warm-up trial
  that compiles the kernels) from above, by at most :data:`FACTOR`.
"""

from __future__ import annotations

import importlib
import os
import pathlib
import re
import resource
import subprocess
import sys
import tracemalloc

import pytest

from mixreg.algorithms import TRIAL_OVERHEAD
from mixreg.montecarlo import trial_seed

REPO = pathlib.Path(__file__).resolve().parent.parent

#: Per experiment: flags whose trial cannot fit on any machine (terabytes).
TOO_LARGE = {
    "success_vs_R": ["--m", "100000", "--n", "1000", "--d", "1000"],
    "success_vs_mn": ["--ms", "100000", "200000", "--ns", "1000", "--d", "1000"],
    "error_floor": ["--m-ref", "100000", "--n-prime-ref", "1000", "--d-ref", "1000"],
    "ifca_basin": ["--m-per", "1000000", "--d", "10000"],
    "ifca_misclustering": ["--m", "1000000", "--d", "10000"],
    "ifca_contraction": ["--m", "1000000", "--d", "10000"],
    "two_phase": ["--M-ref", "10000000", "--d", "1000"],
    "two_phase_phase1": ["--d-ref", "100000"],
    "two_phase_nu": ["--M-ref", "100000000"],
    "compare": ["--m", "1000000", "--n", "1000", "--d", "1000"],
}

#: Per experiment: a small quick-preset variant whose heaviest trial is measured.
SMALL = {
    "success_vs_R": dict(m=40, n=50, d=200, sigmas=(0.5,), rs=(0.5,), trials=1, n_inits=2, n_rounds=10),
    "success_vs_mn": dict(ms=(40, 60), ns=(50,), d=200, rs=(0.5,), trials=1, n_inits=2, n_rounds=10),
    "error_floor": dict(m_ref=100, n_prime_ref=20, d_ref=50, ms=(25, 50), n_primes=(5, 10), ds=(5, 10),
                        sigmas=(0.05, 0.1), ps=(0.4, 0.5), trials=1, restarts=2, practical_rounds=10, halvings=4),
    "ifca_basin": dict(ks=(2,), m_per=50, n_prime=20, n_rounds=5, d=100, alphas=(0.1,), directions=("random",),
                       trials=1),
    "ifca_misclustering": dict(m=1000, d=100, rhos=(1.0, 2.0), targets=(1.75, 3.0), fit_rhos=(1.0,), trials=1),
    "ifca_contraction": dict(m=1000, d=100, rhos=(1.0,), alphas=(0.25,), n_primes=(12,), trials=1),
    "two_phase": dict(Ms=(500,), M_ref=500, d=20, fx_rounds=30, trials=1),
    "two_phase_phase1": dict(d_ref=12, d_grid=(6, 12), nA_grid=(6, 12), need_ds=(6, 8), need_cs=(1.0, 4.0),
                             fmd_rounds=10, trials=1),
    "two_phase_nu": dict(M_ref=500, Ms_fixed_n=(250, 500), Ms_fixed_N=(250, 500), N_fixed=4000, d=20,
                         fx_rounds=100, trials=1),
    "compare": dict(regimes=("balanced",), m=100, n=40, d=20, trials=1, n_inits=1, n_rounds=5),
}

#: The estimate of a trial's arrays lies in [peak, FACTOR x peak] of the measured peak.
FACTOR = 4.0

#: The address space of the subprocess that must refuse: far below any refused trial.
ADDRESS_SPACE = 2 * 1024**3


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def _flags(name):
    return [arg for arg in TOO_LARGE[name] if arg.startswith("--")]


@pytest.mark.parametrize("name", sorted(TOO_LARGE))
def test_too_large_refused_in_one_line_without_allocating(name, tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", f"experiments.{name}", *TOO_LARGE[name], "--out", str(out)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, preexec_fn=_limited)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(lines) == 1, proc.stderr
    assert re.search(r"one trial of sweep '\w+' needs about [\d.]+ (TB|GB) of memory", lines[0]), lines[0]
    assert all(flag in lines[0] for flag in _flags(name)), lines[0]
    assert not out.exists()
    assert proc.stdout == ""


@pytest.mark.parametrize("name", sorted(TOO_LARGE))
def test_dry_run_prints_the_trial_estimate(name, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(f"experiments.{name}")
    with pytest.raises(SystemExit) as exc:
        module.STUDY.main([*TOO_LARGE[name], "--dry-run"])
    assert exc.value.code == 2
    text = capsys.readouterr()
    assert re.search(r"up to [\d.]+ [TG]B per worker for the heaviest trial", text.out), text.out
    assert re.search(r"^Refused: one trial of sweep .* needs about [\d.]+ [TG]B of memory", text.out, re.M), text.out
    assert all(flag in text.err for flag in _flags(name)), text.err
    assert list(tmp_path.iterdir()) == []


def _small_sweep(name):
    module = importlib.import_module(f"experiments.{name}")
    config = module.Config(preset="quick", **{**module.PRESETS["quick"], **SMALL[name]})
    return module.STUDY.sweep(config)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_estimate_bounds_the_measured_peak(name):
    """The arrays' estimate (``memory_fn`` less :data:`TRIAL_OVERHEAD`) of the heaviest cell of a
    small sweep is at least the peak tracemalloc measures in its trial, and at most FACTOR times
    it; a warm-up trial first compiles the kernels, whose memory the overhead covers."""
    sweep = _small_sweep(name)
    memory_fn, trial_fn = sweep.function("memory_fn"), sweep.function("trial_fn")  # with a cell dict
    estimates = [memory_fn(cell) for cell in sweep.cells]
    cell = sweep.cells[max(range(len(estimates)), key=estimates.__getitem__)]
    arrays = max(estimates) - TRIAL_OVERHEAD
    trial_fn(dict(cell), trial_seed(sweep.root_seed, cell, 0))
    tracemalloc.start()
    try:
        trial_fn(dict(cell), trial_seed(sweep.root_seed, cell, 1))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak > 1e6  # the arrays, not Python's small objects, make the peak
    assert peak <= arrays <= FACTOR * peak, (name, peak, arrays)
