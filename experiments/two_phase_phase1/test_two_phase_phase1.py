"""The Phase-1 study end to end on a reduced quick config: what its tables and figures show."""

import csv
import json

import numpy as np
import pytest

from experiments import two_phase_phase1 as phase1

pytestmark = pytest.mark.study

# The quick preset with fewer trials and shorter grids (about a minute on two busy cores).
REDUCED = ["--trials", "6", "--d-ref", "16", "--nA-grid", "3", "12", "48", "--nA-ref", "12",
           "--d-grid", "8", "16", "32", "--need-ds", "6", "24", "--need-p-mins", "0.2", "0.3333333333333333",
           "--need-cs", "1", "4", "16", "--n-boot", "300", "--no-progress",
           "--rates-ds", "6", "12", "--rates-ks", "2", "3", "--rates-p-mins", "0.2", "0.3", "--rates-d-ref", "12",
           "--rates-k-ref", "3", "--rates-p-ref", "0.3", "--rates-c", "8", "--rates-nA-grid", "4", "8", "32",
           "--rates-divisor", "2"]


def _table(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("phase1") / "run"
    assert phase1.STUDY.main(REDUCED + ["--out", str(out)]) == 0
    return out


def test_files_and_table_columns(run):
    for name in ("trials.csv", "manifest.json", "errors.csv", "exponents.csv", "needed.csv", "rates.csv",
                 "part_c.csv", "nA_success.csv", "exponents_c.csv", "phase1_error.png", "phase1_error.pdf",
                 "phase1_clients.png", "phase1_clients.pdf", "phase1_rates.png", "phase1_rates.pdf"):
        assert (run / name).is_file(), name
    exponents = _table(run / "exponents.csv")
    assert {"axis", "setting", "predicted", "fitted", "low", "high", "verdict"} <= set(exponents[0])
    assert {r["verdict"] for r in exponents} <= {"consistent", "contradicts", "not tested", "reference"}
    claims = [(r["axis"], float(r["predicted"])) for r in exponents if r["verdict"] != "reference"]
    assert ("d", 0.0) in claims and ("d", 1.0) in claims and ("p_min", -2.0) in claims
    # the predicted exponents, registered with their hashes before the first trial
    registered = json.loads((run / "manifest.json").read_text())["predictions"]
    assert [(p["name"], p["sha256"]) for p in registered] == [(p.name, p.sha256) for p in phase1.PREDICTIONS]
    assert all(p["registered"]["trials_before"] == 0 for p in registered)
    assert {p["name"]: {a: c["value"] for a, c in p["constants"].items()} for p in registered} == {
        "phase1_error_exponent": {"d": 0.0}, "clients_needed_exponent": {"d": 1.0, "p_min": -2.0},
        "phase1_rounds_exponent": {"d": 0.0, "k": 0.0, "p_min": 0.0},
        "phase1_nA_exponent": {"d": 0.0, "k": 1.0, "p_min": 0.0}}
    trials = _table(run / "trials.csv")
    assert all(r["error"] == "" for r in trials)
    assert all(float(r["init_distance"]) >= 5.0 for r in trials)  # the start is at least 5 Delta from every truth
    rates = _table(run / "rates.csv")
    assert len(rates) == 2 * 2 * 3  # (d, p_min) x grid
    needed = _table(run / "needed.csv")
    assert len(needed) == 3 * 2 * 2 and {r["status"] for r in needed} <= {"found", "below_grid", "above_grid"}


def test_anchor_least_squares_fails_below_d_while_phase1_reaches_a_constant_accuracy(run):
    errors = _table(run / "errors.csv")
    small = [r for r in errors if int(r["n_A"]) < int(r["d"])]
    assert small
    for r in small:  # min-norm least squares on n_A < d points: error comparable to ||theta*||
        assert float(r["ls_err_median"]) > 0.6 * float(r["theta_norm_median"]), r
    for r in errors:
        if r["anchor_mode"] == "per_cluster" and int(r["n_A"]) == 12:  # n_A = 4k, every d
            assert float(r["fmd_err_median"]) < 0.8  # Delta = 1, started at 5 Delta
            if int(r["d"]) > 12:
                assert float(r["fmd_err_median"]) < float(r["ls_err_median"])
    by_nA = {int(r["n_A"]): float(r["fmd_err_median"]) for r in errors
             if r["axis"] == "n_A" and r["anchor_mode"] == "per_cluster"}
    assert by_nA[48] < 0.5 and by_nA[48] < by_nA[12] < by_nA[3]  # more anchor points help; n_A = k fails


def test_phase1_error_against_d_is_fitted_and_below_the_start(run):
    """The error's exponent in d at M of order d / p_min^2 and n_A = 4k is fitted with an interval (the
    theorem predicts 0; on 6 trials of 20 rounds the verdict is the run's, not asserted), and Phase 1's
    median error is below half the start's distance at every d."""
    exponents = _table(run / "exponents.csv")
    fmd = [r for r in exponents if r["axis"] == "d" and r["setting"].startswith("Phase-1 error")
           and "per_cluster" in r["setting"]]
    assert len(fmd) == 1
    fit = fmd[0]
    assert float(fit["low"]) <= float(fit["fitted"]) <= float(fit["high"])
    assert fit["verdict"] in ("consistent", "contradicts") and float(fit["predicted"]) == 0.0
    errors = _table(run / "errors.csv")
    for r in errors:
        if r["axis"] == "d":
            assert float(r["fmd_err_median"]) < 0.5 * 5.0, r  # started at 5 Delta, Delta = 1


def test_part_c_rounds_and_anchor_size_needed(run):
    """Part (c): from 5 Delta, Phase 1 with anchors of 32 points reaches Delta/2 in most trials of every cell
    with rounds to spare (mean at most 15 of the 20), a larger n_A never does worse in success, and each
    exponent row has its verdict and its held-out residual."""
    part_c = _table(run / "part_c.csv")
    assert len(part_c) == 4
    for r in part_c:
        assert int(r["rounds_never"]) <= 1, r
        assert float(r["rounds_mean"]) <= 15, r  # of the 20 rounds run
        assert float(r["nA_needed_median"]) <= 32, r
    success = _table(run / "nA_success.csv")
    for cell in {(r["d"], r["k"], r["p_min"]) for r in success}:
        rate = {int(r["n_A"]): float(r["success"]) for r in success if (r["d"], r["k"], r["p_min"]) == cell}
        assert rate[32] >= 0.5 and rate[32] >= rate[4], (cell, rate)
    exps = _table(run / "exponents_c.csv")
    assert {(r["quantity"], r["axis"]) for r in exps} == {(q, a) for q in ("rounds", "n_A") for a in ("d", "k", "p_min")}
    assert {r["verdict"] for r in exps} <= {"consistent", "contradicts", "not tested"}
    assert all(r["heldout_verdict"] in ("consistent", "contradicts", "not tested") for r in exps)
    pred = {(r["quantity"], r["axis"]): float(r["predicted"]) for r in exps}
    assert pred[("n_A", "k")] == 1.0 and pred[("rounds", "k")] == 0.0 and pred[("n_A", "d")] == 0.0


def test_the_claims_check_this_run(run):
    """Every claim's check runs on a quick run and returns verdicts (the committed paper run is the report's)."""
    from experiments.two_phase_phase1.claims import CLAIMS
    from mixreg.study import ClaimRun

    claim_run = ClaimRun(phase1.STUDY, run)
    for claim in CLAIMS:
        verdicts = claim.check(claim_run)
        verdicts = verdicts if isinstance(verdicts, list) else [verdicts]
        assert verdicts and all(v.status in ("consistent", "contradicts", "not tested") for v in verdicts), claim.id
    ids = [c.id for c in CLAIMS]
    assert ids == ["sxy-phase1-constant-accuracy", "sxy-phase1-rounds-o1", "sxy-phase1-na", "sxy-phase1-clients"]


def test_redraw_repeats_the_figures(run, capsys):
    assert phase1.STUDY.main(["--redraw", str(run)]) == 0
    assert "phase1_clients.png" in capsys.readouterr().out


@pytest.mark.parametrize("extra,message", [
    (["--need-p-mins", "0.5", "0.2"], "must be increasing"),
    (["--need-p-mins", "0.2", "0.5"], "need_p_mins and p_ref must be in"),
    (["--d-grid", "3", "8"], "must exceed k"),
    (["--main-divisor", "5"], "main_divisor must be one of"),
    (["--need-ds", "8"], "at least 2 values"),
    (["--anchor-modes", "labels"], "invalid choice"),
])
def test_bad_options_are_usage_errors(extra, message, capsys):
    with pytest.raises(SystemExit) as exc:
        phase1.STUDY.main(REDUCED + extra + ["--dry-run"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_dry_run_counts_the_cells(capsys):
    assert phase1.STUDY.main(REDUCED + ["--dry-run"]) == 0
    # (a): 2 versions x (3 n_A + 3 d, less the shared (d, n_A) = (16, 12)); (b): 2 d x 2 p_min
    # (c): the d, k and p_min sweeps through (12, 3, 0.3), two values each: 4 cells
    assert "Grid: 18 cells x 6 trials" in capsys.readouterr().out


def test_cells_follow_the_theorems_unit():
    config = phase1.STUDY.config_from_args(phase1.STUDY.parser().parse_args(REDUCED))
    for spec in phase1.cells_of(config):
        cell = spec.to_cell()
        anchors = cell["k"] if cell["anchor_mode"] == "per_cluster" else cell["n_anchors"]
        assert cell["m"] == phase1.clients_for(max(cell["cs"]), cell["d"], cell["p_min"]) + anchors
        assert np.all(np.diff(cell["cs"]) > 0)


def test_figures_draw_into_given_axes_and_write_captions(run, tmp_path):
    """Each plot function draws into the axes it is given and returns what it drew; ``draw``
    writes a caption file beside each figure."""
    from experiments.ifca_mechanism.testing import check_figures

    check_figures(phase1, run, tmp_path, ["plot_phase1_error", "plot_clients_needed", "plot_phase1_rates"])
