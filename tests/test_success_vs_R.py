"""Tests of experiments.success_vs_R: options, outputs, presets and backend-independent results."""

import csv
import dataclasses
import json

import numpy as np
import pytest

from experiments import success_vs_R as exp
from mixreg.montecarlo import run_sweep

TINY = ["--m", "8", "--k", "2", "--n", "10", "--d", "5", "--sigmas", "0", "0.5", "--rs", "0.3", "1.0",
        "--trials", "3", "--n-inits", "2", "--n-rounds", "20", "--no-progress"]


def _records_without_time(result):
    return [{k: v for k, v in r.items() if k != "wall_time"} for r in result.records]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--k", "5", "--m", "3"], "k must be at most m"),
        (["--n", "0"], "n must be an integer >= 1"),
        (["--d", "0"], "d must be an integer >= 1"),
        (["--sigmas", "-1"], "sigmas must be finite and >= 0"),
        (["--sigmas"], "argument --sigmas: expected at least one argument"),
        (["--rs"], "argument --rs: expected at least one argument"),
        (["--rs", "0"], "rs must be finite and > 0"),
        (["--step-sizes", "0.1", "0"], "step_sizes must be finite and > 0"),
        (["--trials", "0"], "trials must be an integer >= 1"),
        (["--n-inits", "0"], "n_inits must be an integer >= 1"),
        (["--init-scale", "0"], "init_scale must be finite and > 0"),
        (["--threshold-offset", "-1"], "threshold_offset must be finite and >= 0"),
        (["--sigma", "0.5"], "--sigma is now --sigmas"),
        (["--r", "0.5"], "--r is now --rs"),
        (["--inits", "2"], "--inits is now --n-inits"),
        (["--rounds", "2"], "--rounds is now --n-rounds"),
        (["--preset", "paper-c"], "invalid choice"),
        (["--protocol", "norm"], "invalid choice"),
        (["--jobs", "0"], "positive integer"),
    ],
)
def test_bad_options_exit_with_a_clear_message(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        exp.main(argv + ["--out", str(tmp_path / "o"), "--dry-run"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("grid,message", [("sigmas", "sigmas is empty"), ("rs", "rs is empty"),
                                          ("step_sizes", "step_sizes is empty")])
def test_an_empty_grid_is_refused(grid, message):
    config = exp.Config(preset="quick", **exp.PRESETS["quick"])
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(config, **{grid: ()}).validate()


def test_presets_are_the_official_grids():
    args = exp.build_parser().parse_args(["--preset", "paper-a"])
    a = exp.config_from_args(args)
    assert (a.k, a.m, a.n, a.d, a.trials, a.n_inits, a.n_rounds) == (2, 100, 100, 1000, 40, 10, 300)
    assert a.sigmas == (0.0, 0.1, 0.2, 0.4) and a.rs == (0.1, 0.25, 0.5, 0.75, 1.0)
    assert a.step_sizes == (1.0, 0.1, 0.01) and a.dtype == "float32" and a.threshold_offset == 0.001
    b = exp.config_from_args(exp.build_parser().parse_args(["--preset", "paper-b"]))
    assert (b.k, b.m, b.step_sizes) == (4, 400, (2.0, 1.0, 0.5))
    assert len(exp.cells_of(b)) == 20


def test_dry_run_prints_the_plan(capsys, tmp_path):
    assert exp.main(["--preset", "paper-a", "--dry-run", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "tasks" in out
    assert not (tmp_path / "o").exists()


def test_end_to_end_writes_table_manifest_and_figure(tmp_path, monkeypatch):
    figures = tmp_path / "figures"
    monkeypatch.setattr(exp, "REPO", tmp_path)  # a quick run must never write into figures/
    out = tmp_path / "run"
    assert exp.main(TINY + ["--out", str(out), "--jobs", "1"]) == 0
    for name in ("trials.csv", "rates.csv", "theory.csv", "manifest.json", "success_vs_R.png", "success_vs_R.pdf"):
        assert (out / name).stat().st_size > 0, name
    assert not figures.exists()
    with open(out / "trials.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 2 * 3
    for row in rows:
        assert row["error"] == ""
        # a success under the official rule needs the best run to be under the threshold
        if row["official_success"] == "True":
            assert float(row["official_best_dist"]) < float(row["threshold"])
    with open(out / "rates.csv") as fh:
        rates = list(csv.DictReader(fh))
    assert len(rates) == 4 and {"official_success_rate", "honest_success_low", "oracle_success_high"} <= set(rates[0])
    with open(out / "theory.csv") as fh:
        theory = list(csv.DictReader(fh))
    assert [float(row["sigma"]) for row in theory] == [0.0, 0.5]
    assert {"unit_separation", "unit_drawn", "fitted_separation", "C_fitted", "r_per_delta"} <= set(theory[0])
    assert theory[0]["fitted_separation"] == ""  # no noise term at sigma = 0
    manifest = json.loads((out / "manifest.json").read_text())
    text = json.dumps(manifest)
    for key in ("numpy", "numba", "success_rules", "commit"):
        assert key in text
    # re-running resumes: nothing recomputed, same table
    before = (out / "trials.csv").read_text()
    assert exp.main(TINY + ["--out", str(out), "--jobs", "1"]) == 0
    assert (out / "trials.csv").read_text() == before


def test_official_rule_never_counts_a_fully_diverged_trial():
    cell = dict(exp.cells_of(exp.Config(preset="t", k=2, m=6, n=8, d=4, sigmas=(0.1,), rs=(1.0,), trials=1,
                                        n_inits=2, step_sizes=(1e9,), n_rounds=60, dtype="float64"))[0])
    from mixreg.trials import ifca_success_trial

    rec = ifca_success_trial(cell, np.random.SeedSequence(1))
    assert rec["n_diverged"] == rec["n_runs"] == 2
    assert rec["official_success"] is False and rec["honest_success"] is False
    assert np.isnan(rec["official_best_dist"]) and np.isnan(rec["honest_dist"])


@pytest.mark.dask
def test_ifca_sweep_is_bit_identical_across_backends(tmp_path):
    """jobs=1 (BLAS may use both cores), jobs=2 (one thread each) and a Dask LocalCluster."""
    config = exp.Config(preset="test", k=2, m=40, n=20, d=120, sigmas=(0.0, 0.5), rs=(0.1, 0.5), trials=2,
                        n_inits=3, step_sizes=(1.0, 0.1), n_rounds=40, dtype="float64")
    sweep = exp.build_sweep(config, root_seed=7)
    one = run_sweep(sweep, tmp_path / "one", jobs=1, progress=False)
    two = run_sweep(sweep, tmp_path / "two", jobs=2, progress=False)
    dask = run_sweep(sweep, tmp_path / "dask", dask_local=2, progress=False)
    assert _records_without_time(one) == _records_without_time(two) == _records_without_time(dask)
    assert len(one.records) == 8 and not one.failures
