"""The two-phase experiment: trial function, summaries and the command line (tiny grids)."""

import csv
import json

import numpy as np
import pytest

from experiments import two_phase
from mixreg.trials_two_phase import (
    checkpoint_rounds,
    cluster_proportions,
    curve_columns,
    geometric_rate,
    two_phase_trial,
)

TINY = ["--Ms", "60", "120", "--M-ref", "120", "--laws", "equal", "zipf", "--law-ref", "zipf", "--p-mins", "0.2",
        "--p-ref", "0.2", "--trials", "2", "--d", "4", "--k", "2", "--n-max", "20", "--size-mean", "4",
        "--fmd-rounds", "3", "--fx-rounds", "6", "--checkpoint-every", "2", "--ifca-restarts", "1",
        "--ifca-steps", "0.5", "--anchor-points", "30", "--no-progress"]


def tiny_cell(**change):
    args = two_phase.build_parser().parse_args(TINY)
    config = two_phase.config_from_args(args)
    cell = two_phase.cells_of(config)[0]
    cell.update(change)
    return cell


def test_helpers():
    np.testing.assert_array_equal(checkpoint_rounds(10, 4), [0, 4, 8, 10])
    np.testing.assert_array_equal(checkpoint_rounds(8, 4), [0, 4, 8])
    np.testing.assert_allclose(cluster_proportions(3, 0.1), [0.1, 0.45, 0.45])
    with pytest.raises(ValueError, match="p_min"):
        cluster_proportions(3, 0.5)
    cell = tiny_cell()
    assert curve_columns(cell, "fedavg")[-1] == (9, "fedavg_err_t009")
    # a path converging geometrically at rate 0.8 to a fixed point
    path = 3.0 + 0.8 ** np.arange(60)[:, None, None] * np.ones((60, 2, 3))
    assert geometric_rate(path) == pytest.approx(0.8, rel=1e-3)  # e_t measured to the last iterate
    assert np.isnan(geometric_rate(path[:3]))


def test_trial_record_is_scalars_and_consistent():
    cell = tiny_cell()
    rec = two_phase_trial(cell, np.random.SeedSequence(1))
    assert all(isinstance(v, (bool, int, float, str, np.integer, np.floating, np.bool_)) for v in rec.values())
    T1 = cell["fmd_rounds"]
    for method in ("ifca", "oracle", "fedavg", "fedprox"):
        assert [c for _, c in curve_columns(cell, method)] == sorted(c for c in rec if c.startswith(f"{method}_err_t"))
    # the two-phase curves share Phase 1 and end at the Phase-2 output
    assert rec["fedavg_err_t000"] == rec["fedprox_err_t000"]
    assert rec["oracle_err_t000"] == 0.0
    last = max(t for t, _ in curve_columns(cell, "fedavg"))
    assert rec[f"fedavg_err_t{last:03d}"] == rec["fedavg_final"]
    assert rec["fmd_clients_per_round"] >= 2 and rec["fmd_anchor_pairs"] >= 1 and T1 == 3
    assert rec["chi2"] >= 0 and rec["nu1"] > 0 and rec["nu2"] > 0
    again = two_phase_trial(cell, np.random.SeedSequence(1))
    assert {k: v for k, v in again.items() if not k.endswith("_time")} == \
        {k: v for k, v in rec.items() if not k.endswith("_time")}


def test_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    assert two_phase.main(TINY + ["--out", str(out)]) == 0
    for name in ("trials.csv", "manifest.json", "summary.csv", "curves.csv", "scaling.csv", "theory.csv",
                 "contraction.csv",
                 "two_phase_rounds.png", "two_phase_rounds.pdf", "two_phase_scaling.png", "two_phase_scaling.pdf"):
        assert (out / name).is_file(), name
    with open(out / "trials.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 * 2  # cells (60, zipf), (120, zipf) = reference, (120, equal)
    assert all(row["error"] == "" for row in rows)
    assert "fedprox_err_t009" in rows[0] and "ls_err" in rows[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sweep"]["config"]["fmd_rounds"] == 3
    with open(out / "scaling.csv") as fh:
        scaling = list(csv.DictReader(fh))
    assert {"C_nu_fitted", "C1_fedavg_envelope", "nu_median", "C_nu_line"} <= set(scaling[0])
    with open(out / "theory.csv") as fh:
        theory = list(csv.DictReader(fh))
    assert [int(row["round"]) for row in theory] == list(range(3, 10))  # Phase 2: rounds T1 .. T1 + T2
    with open(out / "contraction.csv") as fh:
        contraction = list(csv.DictReader(fh))
    assert len(contraction) == len(rows) and all(row["failed"] == "False" for row in contraction)
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--p-mins", "0.7"], "p_mins and p_ref must be in"),
        (["--Ms", "2"], "Ms and M_ref must be at least 2k"),
        (["--p-min", "0.2"], "--p-min is now --p-mins"),
        (["--M", "60"], "--M is now --Ms"),
        (["--laws", "uniform"], "argument --laws: invalid choice"),
        (["--fmd-step-constant", "0"], "fmd_step_constant must be finite and > 0"),
        (["--cov-low", "3"], "cov_high must be >= cov_low"),
        (["--trials", "0"], "trials must be an integer >= 1"),
        (["--fedavg-step", "-1"], "fedavg_step must be finite and > 0"),
        (["--anchor-mode", "random", "--n-anchors", "1"], "n_anchors must be in"),
        (["--size-mean", "50"], "mean"),
        (["--checkpoint-every", "100"], "checkpoint_every"),
    ],
)
def test_bad_options_are_parser_errors(extra, message, capsys):
    with pytest.raises(SystemExit) as exc:
        two_phase.main(TINY + extra + ["--dry-run"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_dry_run_prints_the_grid(capsys):
    assert two_phase.main(TINY + ["--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "Grid: 3 cells x 2 trials" in text
