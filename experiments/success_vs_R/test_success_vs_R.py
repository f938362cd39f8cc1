"""Tests of experiments.success_vs_R: options, outputs, presets and backend-independent results."""

import csv
import dataclasses
import json

import numpy as np
import pytest

from experiments import success_vs_R as exp
from mixreg.montecarlo import run_sweep
from mixreg.montecarlo.reader import read_results

pytestmark = pytest.mark.study  # the study's end-to-end test

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
        exp.STUDY.main(argv + ["--out", str(tmp_path / "o"), "--dry-run"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("grid,message", [("sigmas", "sigmas is empty"), ("rs", "rs is empty"),
                                          ("step_sizes", "step_sizes is empty")])
def test_an_empty_grid_is_refused(grid, message):
    config = exp.Config(preset="quick", **exp.PRESETS["quick"])
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(config, **{grid: ()}).validate()


def test_presets_are_the_official_grids():
    args = exp.STUDY.parser().parse_args(["--preset", "paper-a"])
    a = exp.STUDY.config_from_args(args)
    assert (a.k, a.m, a.n, a.d, a.trials, a.n_inits, a.n_rounds) == (2, 100, 100, 1000, 40, 10, 300)
    assert a.sigmas == (0.0, 0.1, 0.2, 0.4) and a.rs == (0.1, 0.25, 0.5, 0.75, 1.0)
    assert a.step_sizes == (1.0, 0.1, 0.01) and a.dtype == "float32" and a.threshold_offset == 0.001
    b = exp.STUDY.config_from_args(exp.STUDY.parser().parse_args(["--preset", "paper-b"]))
    assert (b.k, b.m, b.step_sizes) == (4, 400, (2.0, 1.0, 0.5))
    # the official protocol: the four noise levels of a trial share one draw, one cell per r
    assert a.shared_draws and b.shared_draws
    cells = exp.cells_of(b)
    assert len(cells) == 5 and all(cell.sigma_levels == (0.0, 0.1, 0.2, 0.4) for cell in cells)
    assert "sigma" not in cells[0].to_cell()
    independent = exp.cells_of(dataclasses.replace(b, shared_draws=False))
    assert len(independent) == 20 and exp.trial_flops(cells[0]) == 4 * exp.trial_flops(independent[0])


def test_shared_draws_run_end_to_end_and_give_one_rate_per_sigma(tmp_path, monkeypatch):
    monkeypatch.setattr(exp, "STUDY", dataclasses.replace(exp.STUDY, figures_dir=tmp_path / "figures"))
    out = tmp_path / "run"
    assert exp.STUDY.main(TINY + ["--shared-draws", "--out", str(out), "--jobs", "1"]) == 0
    rates = read_results(out).table("rates.csv")
    config = exp.STUDY.config_from_args(exp.STUDY.parser().parse_args(TINY + ["--shared-draws"]))
    assert sorted({(row["sigma"], row["r"]) for row in rates}) == sorted(
        (float(s), float(r)) for s in config.sigmas for r in config.rs)
    assert all(row["trials"] == config.trials for row in rates)


def test_dry_run_prints_the_plan(capsys, tmp_path):
    assert exp.STUDY.main(["--preset", "paper-a", "--dry-run", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "tasks" in out
    assert not (tmp_path / "o").exists()


def test_end_to_end_writes_table_manifest_and_figure(tmp_path, monkeypatch):
    figures = tmp_path / "figures"
    monkeypatch.setattr(exp, "STUDY", dataclasses.replace(exp.STUDY, figures_dir=tmp_path / "figures"))  # a quick run must never write into figures/
    out = tmp_path / "run"
    assert exp.STUDY.main(TINY + ["--out", str(out), "--jobs", "1"]) == 0
    for name in ("trials.csv", "rates.csv", "theory.csv", "manifest.json", "success_vs_R.png", "success_vs_R.pdf",
                 "success_vs_R_collapse.png", "success_vs_R_collapse.pdf"):
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
    assert list(theory[0]) == list(exp.THEORY_COLUMNS)
    kinds = {row["kind"] for row in theory}
    assert kinds == {"prediction", "observation", "test", "held_out"}
    for sigma in ("0.0", "0.5"):  # the predictions exist for every noise level, whatever the data
        got = {row["quantity"] for row in theory if row["kind"] == "prediction" and row["sigma"] == sigma}
        assert got == {"ls_rms_over_threshold", "oracle_success_probability", "separation_scale"}
    held = [row for row in theory if row["kind"] == "held_out"]
    assert {row["quantity"] for row in held} == {"noise_term_crossing", "sigma_free_crossing"}
    for row in held:  # a fitted constant is never validated on a level it was fitted to
        assert f"held-out σ = {float(row['sigma']):g}" in row["label"]
        fitted_on = row["label"].split("fitted on σ ∈ {")[1].split("}")[0]
        assert f"{float(row['sigma']):g}" not in fitted_on.split(", ")
        assert row["verdict"] in ("consistent", "contradicts", "undetermined")
        assert "residual" in row["label"]
    noise_at_zero = [row for row in held if row["quantity"] == "noise_term_crossing" and row["sigma"] == "0.0"]
    for row in noise_at_zero:  # the noise term vanishes at sigma = 0 (blank: no other level had a crossing)
        assert (row["value"] != "" and float(row["value"]) == 0.0) or (
            row["value"] == "" and row["verdict"] == "undetermined" and "to fit C on" in row["reason"])
    tests = [row for row in theory if row["quantity"] == "sigma_homogeneity"]
    assert {row["rule"] for row in tests} == set(exp.CHECKED_RULES)
    assert all(0.0 < float(row["p_value"]) <= 1.0 for row in tests)
    assert any(row["r"] == "" for row in tests)  # the test stratified over r
    for row in theory:
        if "Thm 1" in row["label"]:
            assert "outside its assumptions" in row["label"], row["label"]
    manifest = json.loads((out / "manifest.json").read_text())
    text = json.dumps(manifest)
    for key in ("numpy", "numba", "success_rules", "commit"):
        assert key in text
    # re-running resumes: nothing recomputed, same table
    before = (out / "trials.csv").read_text()
    assert exp.STUDY.main(TINY + ["--out", str(out), "--jobs", "1"]) == 0
    assert (out / "trials.csv").read_text() == before


def _synthetic_records(config, crossing, seed=0):
    """Records whose success probability is a logistic in log(separation / crossing(sigma))."""
    rng = np.random.default_rng(seed)
    records = []
    for sigma in config.sigmas:
        for r in config.rs:
            delta = 10.0 * r
            prob = 1.0 / (1.0 + (crossing(sigma) / delta) ** 4)
            for trial in range(config.trials):
                hit = bool(rng.random() < prob)
                records.append(dict(sigma=sigma, r=r, trial=trial, error="", separation=delta, oracle_floor=0.5 * sigma,
                                    n_diverged=0, official_success=hit, honest_success=hit, oracle_success=True))
    return records


SYNTHETIC = exp.Config(preset="t", k=2, m=100, n=20, d=200, sigmas=(0.5, 1.0, 2.0),
                       rs=(0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2), trials=40, n_inits=1, step_sizes=(0.1,),
                       n_rounds=1, dtype="float64")


def _select(theory, quantity, rule="official"):
    return [row for row in theory if row["quantity"] == quantity and row["rule"] == rule]


def test_theory_checks_can_disagree_with_the_data():
    """Data whose 1/2-crossing is proportional to sigma: the noise levels differ, the sigma-free scale does
    not collapse them, and the noise-term model predicts each held-out level within its interval."""
    theory = exp.summarise(SYNTHETIC, _synthetic_records(SYNTHETIC, lambda s: 2.8 * s))["theory"]
    pooled = [row for row in _select(theory, "sigma_homogeneity") if row["r"] is None][0]
    assert pooled["p_value"] < 0.01 and pooled["verdict"] == "differ at 5%"
    assert _select(theory, "collapse_delta")[0]["verdict"] == "does not collapse"
    assert [row["verdict"] for row in _select(theory, "noise_term_crossing")] == ["consistent"] * 3
    assert all(abs(row["residual"]) < 0.3 for row in _select(theory, "noise_term_crossing"))
    assert "contradicts" in [row["verdict"] for row in _select(theory, "sigma_free_crossing")]


def test_theory_checks_can_agree_with_sigma_free_data():
    """Data that ignore sigma: the exact test finds nothing and the sigma-free scale collapses the curves."""
    theory = exp.summarise(SYNTHETIC, _synthetic_records(SYNTHETIC, lambda s: 2.8))["theory"]
    pooled = [row for row in _select(theory, "sigma_homogeneity") if row["r"] is None][0]
    assert pooled["p_value"] > 0.05
    assert _select(theory, "collapse_delta")[0]["verdict"] == "consistent with one curve"
    assert [row["verdict"] for row in _select(theory, "sigma_free_crossing")] == ["consistent"] * 3


def test_figures_never_credit_theorem_1_outside_its_regime(tmp_path, monkeypatch):
    """Every text of both figures that names Theorem 1 says the runs are outside its assumptions."""
    texts = []
    from experiments.success_vs_R import figures

    real_save = figures.save_figure

    def capture(fig, *paths, caption=None):
        for artist in fig.findobj(lambda a: hasattr(a, "get_text")):
            texts.append(artist.get_text().replace("\n", " "))
        texts.extend(sentence for sentence in (caption or "").split(". "))  # the caption's sentences
        return real_save(fig, *paths, caption=caption)

    monkeypatch.setattr(figures, "save_figure", capture)
    records = _synthetic_records(SYNTHETIC, lambda s: 2.8)
    paths = exp.draw(SYNTHETIC, exp.summarise(SYNTHETIC, records), tmp_path)
    assert [p.name for p in paths] == ["success_vs_R.png", "success_vs_R.pdf", "success_vs_R.caption.txt",
                                       "success_vs_R_collapse.png", "success_vs_R_collapse.pdf",
                                       "success_vs_R_collapse.caption.txt"]
    named = [t for t in texts if "Thm 1" in t or "Theorem 1" in t]
    assert named and all("outside" in t for t in named), named
    # the oracle met the threshold everywhere and was predicted to: said in the caption, not drawn
    assert any("is not drawn" in t for t in texts)
    assert not any(t == "known-label LS oracle (ceiling)" for t in texts)


def test_official_rule_never_counts_a_fully_diverged_trial():
    spec = exp.cells_of(exp.Config(preset="t", k=2, m=6, n=8, d=4, sigmas=(0.1,), rs=(1.0,), trials=1,
                                   n_inits=2, step_sizes=(1e9,), n_rounds=60, dtype="float64"))[0]
    rec = exp.ifca_success_trial(spec, np.random.SeedSequence(1))
    assert rec["n_diverged"] == rec["n_runs"] == 2
    assert rec["official_success"] is False and rec["honest_success"] is False
    assert np.isnan(rec["official_best_dist"]) and np.isnan(rec["honest_dist"])


@pytest.mark.dask
def test_ifca_sweep_is_bit_identical_across_backends(tmp_path):
    """jobs=1 (BLAS may use both cores), jobs=2 (one thread each) and a Dask LocalCluster."""
    config = exp.Config(preset="test", k=2, m=40, n=20, d=120, sigmas=(0.0, 0.5), rs=(0.1, 0.5), trials=2,
                        n_inits=3, step_sizes=(1.0, 0.1), n_rounds=40, dtype="float64")
    sweep = exp.STUDY.sweep(config, root_seed=7)
    one = run_sweep(sweep, tmp_path / "one", jobs=1, progress=False)
    two = run_sweep(sweep, tmp_path / "two", jobs=2, progress=False)
    dask = run_sweep(sweep, tmp_path / "dask", dask_local=2, progress=False)
    assert _records_without_time(one) == _records_without_time(two) == _records_without_time(dask)
    assert len(one.records) == 8 and not one.failures


MEASURE = """
import sys, numpy as np
from threadpoolctl import threadpool_limits
from experiments.success_vs_R.trial import IfcaSuccessSpec, ifca_success_levels_trial

def high_water():  # this process's peak resident memory (ru_maxrss would include a parent's)
    with open("/proc/self/status") as fh:
        return next(1024 * int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))

cell = dict(m=200, k=2, n=50, d=1000, protocol="official", n_rounds=2, n_inits=10, step_sizes=(1.0, 0.1, 0.01),
            init="official", init_scale=1.0, threshold_offset=0.0, dtype=sys.argv[1], sigma=0.1, r_levels=(0.1, 0.25))
base = high_water()
with threadpool_limits(1):
    ifca_success_levels_trial(IfcaSuccessSpec.from_cell(cell), np.random.SeedSequence(1))
print(high_water() - base)
"""


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_trial_memory_bounds_a_measured_trial_peak(dtype):
    """The engine refuses a sweep whose workers' trials exceed the machine's memory from this
    estimate, so it must not be below a real trial's peak (measured in a fresh process)."""
    import os
    import subprocess
    import sys

    if not os.path.exists("/proc/self/status"):
        pytest.skip("measures the peak through /proc (Linux)")
    cell = exp.IfcaSuccessSpec.from_cell(dict(
        m=200, k=2, n=50, d=1000, protocol="official", n_rounds=2, n_inits=10, step_sizes=(1.0, 0.1, 0.01),
        init="official", init_scale=1.0, threshold_offset=0.0, dtype=dtype, sigma=0.1, r_levels=(0.1, 0.25)))
    out = subprocess.run([sys.executable, "-c", MEASURE, dtype], capture_output=True, text=True, check=True)
    peak = float(out.stdout.split()[-1])
    estimate = exp.STUDY.overhead + exp.trial_memory(cell)
    assert 0.3 * estimate <= peak <= estimate, (peak, estimate)


# Legal grids the tables must survive: (flags replacing TINY's, figures not drawn with the words
# of their one line, the theory rows blank with the words of their reason).  At 1603bac each
# ended in exit 1 with no rates.csv or theory.csv (one r, only sigma = 0) or no figure (k = 1).
DEGENERATE_GRIDS = {
    "one r": (["--rs", "1.0"],
              {"success_vs_R_collapse": "need the success rate at two separations or more; got --rs 1"},
              {"half_crossing": "needs the rate at two separations or more; got --rs 1",
               "collapse_delta": "got --rs 1"}),
    "only sigma 0": (["--sigmas", "0"], {},
                     {"collapse_delta_noisy": "no σ > 0 among --sigmas 0",
                      "sigma_homogeneity": "one noise level (--sigmas 0)",
                      "noise_term_crossing": "one noise level (--sigmas 0): no other σ to fit C on"}),
    "one cluster": (["--k", "1"],
                    {"success_vs_R": "--k 1: one cluster has no separation Δ",
                     "success_vs_R_collapse": "--k 1: one cluster has no separation Δ"},
                    {"half_crossing": "--k 1: one cluster has no separation Δ",
                     "delta_per_r": "--k 1"}),
}


def _with(argv, flags):
    """``argv`` with each flag of ``flags`` given the values that follow it there."""
    out, i = list(argv), 0
    while i < len(flags):
        j = i + 1
        while j < len(flags) and not flags[j].startswith("--"):
            j += 1
        at = out.index(flags[i])
        k = at + 1
        while k < len(out) and not out[k].startswith("--"):
            k += 1
        out[at:k] = flags[i:j]
        i = j
    return out


@pytest.mark.parametrize("grid", list(DEGENERATE_GRIDS))
def test_a_legal_grid_always_writes_its_tables(grid, tmp_path, monkeypatch, capsys):
    """One r value, only sigma = 0, or k = 1: exit 0, rates.csv and theory.csv written, what the
    grid cannot support a blank with its reason, what cannot be drawn one line naming the flag,
    and ``--redraw`` on the directory says the same."""
    flags, not_drawn, reasons = DEGENERATE_GRIDS[grid]
    monkeypatch.setattr(exp, "STUDY", dataclasses.replace(exp.STUDY, figures_dir=tmp_path / "figures"))
    out = tmp_path / "run"
    assert exp.STUDY.main(_with(TINY, flags) + ["--out", str(out), "--jobs", "1"]) == 0
    err = capsys.readouterr().err
    results = read_results(out)
    assert results.table("rates.csv")
    theory = results.table("theory.csv")
    for quantity, words in reasons.items():
        rows = [row for row in theory if row["quantity"] == quantity]
        assert rows and all(words in (row["reason"] or "") for row in rows), (quantity, rows)
        assert all(row["value"] is None for row in rows), quantity
    for figure in ("success_vs_R", "success_vs_R_collapse"):
        line = f"{figure} not drawn: "
        if figure in not_drawn:
            assert f"python -m experiments.success_vs_R: {line}" in err
            assert not_drawn[figure] in err.split(line)[1].splitlines()[0]
            assert not (out / f"{figure}.png").exists()
        else:
            assert line not in err
            assert (out / f"{figure}.png").stat().st_size > 0
    assert "error" not in err and "Traceback" not in err
    assert exp.STUDY.main(["--redraw", str(out)]) == 0
    again = capsys.readouterr().err
    assert sorted(line for line in again.splitlines() if "not drawn" in line) == sorted(
        line for line in err.splitlines() if "not drawn" in line)


def _paired_records(config, crossing, seed=0):
    """Packed records of the levels of one draw (as ``ifca_success_levels_trial`` writes them): one
    latent difficulty per trial shared by every sigma, so the sigma curves are paired."""
    rng = np.random.default_rng(seed)
    records = []
    for i, r in enumerate(config.rs):
        delta = 10.0 * r
        for trial in range(config.trials):
            u = rng.random()  # the draw's difficulty, shared by the levels
            rec = dict(r=r, cell=i, trial=trial, error="")
            for g, sigma in enumerate(config.sigmas):
                hit = bool(u < 1.0 / (1.0 + (crossing(sigma) / delta) ** 4))
                rec.update({f"L{g}_sigma": sigma, f"L{g}_separation": delta, f"L{g}_oracle_floor": 0.5 * sigma,
                            f"L{g}_n_diverged": 0, f"L{g}_official_success": hit, f"L{g}_honest_success": hit,
                            f"L{g}_oracle_success": True})
            records.append(rec)
    return records


def test_paired_levels_get_cochrans_q_and_the_table_says_so():
    """With shared draws the sigma levels are compared trial by trial (Cochran's Q, exact), and the
    row's label names the test and why; a sigma effect is found, no effect is not."""
    config = dataclasses.replace(SYNTHETIC, shared_draws=True)
    same = exp.summarise(config, _paired_records(config, lambda s: 2.8))["theory"]
    pooled = [row for row in _select(same, "sigma_homogeneity") if row["r"] is None][0]
    assert pooled["label"].startswith("Cochran's Q, exact") and "paired" in pooled["label"]
    assert pooled["value"] == 0.0 and pooled["p_value"] == 1.0  # one latent draw: the levels never disagree
    shifted = exp.summarise(config, _paired_records(config, lambda s: 2.8 * s))["theory"]
    pooled = [row for row in _select(shifted, "sigma_homogeneity") if row["r"] is None][0]
    assert pooled["p_value"] < 1e-6 and pooled["verdict"] == "differ at 5%"
    two = dataclasses.replace(config, sigmas=(0.5, 1.0))
    row = [row for row in _select(exp.summarise(two, _paired_records(two, lambda s: 2.8 * s))["theory"],
                                  "sigma_homogeneity") if row["r"] is None][0]
    assert row["label"].startswith("exact McNemar") and row["p_value"] < 0.05


def test_paired_outcomes_and_test():
    records = [dict(r=0.1, cell=0, trial=t, sigma=s, error="", ok=(t + j) % 2 == 0)
               for t in range(4) for j, s in enumerate((0.0, 0.5, 1.0))]
    records.append(dict(r=0.1, cell=0, trial=9, sigma=0.0, error="", ok=True))  # a trial missing two levels
    blocks = exp.summary.paired_outcomes(records, "sigma", (0.0, 0.5, 1.0), "ok", "r")
    assert blocks[0.1].tolist() == [[1, 0, 1], [0, 1, 0], [1, 0, 1], [0, 1, 0]]
    assert exp.summary.paired_test(blocks[0.1]).method == "Cochran's Q, exact"
    assert exp.summary.paired_test(blocks[0.1][:, :2]).method == "exact McNemar"


def test_a_crossing_on_one_grid_cell_leaves_the_collapse_undetermined():
    """Curves that cross 1/2 on one grid cell each (0, 20/40, 40/40): the crossings agree as the rates at
    that cell do, so the collapse and the held-out sigma-free predictions are undetermined, not consistent;
    the separation scale's failure through sigma = 0 alone is said to be that."""
    config = dataclasses.replace(SYNTHETIC, rs=(0.1, 0.2, 0.4), sigmas=(0.0, 0.5, 0.52))
    records = [dict(sigma=s, r=r, trial=t, error="", separation=10.0 * r, oracle_floor=0.0, n_diverged=0,
                    official_success=(r > 0.3) or (r > 0.15 and t % 2 == 0), honest_success=True, oracle_success=True)
               for s in config.sigmas for r in config.rs for t in range(40)]
    theory = exp.summarise(config, records)["theory"]
    assert [row["value"] for row in _select(theory, "crossing_cells")] == [1.0, 1.0, 1.0]
    assert _select(theory, "collapse_delta")[0]["verdict"].startswith("undetermined (3 of 3 curves cross 1/2 on one")
    assert all(row["verdict"].startswith("undetermined") for row in _select(theory, "sigma_free_crossing"))
    assert _select(theory, "collapse_separation_scale")[0]["verdict"].startswith("does not collapse only through σ = 0")
