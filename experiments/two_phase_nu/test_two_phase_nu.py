"""The nu-terms experiment end to end on a reduced grid: the tables, what they show, the command line."""

import csv

import numpy as np
import pytest

from experiments import two_phase_nu

pytestmark = pytest.mark.study

# A reduced grid (about half a minute on one core): the reference cell is 300 clients of 8 points,
# M at fixed n_i spans 16x in M, M at fixed N spans n_i = 24 .. 4.
REDUCED = ["--M-ref", "300", "--n-ref", "8", "--p-ref", "0.2", "--tiny-fractions", "0", "0.5",
           "--chi2s", "0", "1", "--Ms-fixed-n", "150", "600", "2400", "--Ms-fixed-N", "300", "900", "1800",
           "--N-fixed", "7200", "--p-mins", "0.1", "0.3", "--trials", "6", "--d", "5", "--k", "3",
           "--n-boot", "400", "--fx-rounds", "400", "--no-progress", "--jobs", "1"]


def _read(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("two_phase_nu") / "run"
    status = two_phase_nu.STUDY.main(REDUCED + ["--out", str(out)])
    return status, out


def test_run_writes_everything(run):
    status, out = run
    assert status == 0
    for name in ("trials.csv", "summary.csv", "manifest.json", "axes.csv", "exponents.csv", "holdout.csv",
                 "constants.csv", "region.csv", "two_phase_nu.png", "two_phase_nu.pdf", "two_phase_nu_constants.png",
                 "two_phase_nu_constants.pdf"):
        assert (out / name).is_file(), name
    trials = _read(out / "trials.csv")
    assert all(row["error"] == "" for row in trials)
    # distinct cells: the reference, tiny 0.5, chi2 1, M 150/600/2400, M at fixed N 300/900/1800, p_min 0.1/0.3
    assert len(trials) == 6 * 11
    assert two_phase_nu.STUDY.main(["--redraw", str(out)]) == 0


def test_exponents_table_answers_every_sweep(run):
    _, out = run
    rows = _read(out / "exponents.csv")
    assert [(r["axis"], r["method"]) for r in rows] == \
        [(a, m) for a in two_phase_nu.AXIS_NAMES for m in ("fedavg", "fedprox", "ls")]
    for r in rows:
        assert r["verdict"] in ("consistent", "contradicts", "not tested")
        assert r["verdict_ls"] in ("consistent", "contradicts", "not tested")
        assert float(r["low"]) <= float(r["fitted"]) <= float(r["high"])
    by = {(r["axis"], r["method"]): r for r in rows}
    # the chi2 sweep is answered, whatever the data say
    chi2 = by[("chi2", "fedavg")]
    assert float(chi2["predicted"]) > 0.2 and chi2["verdict"] in ("consistent", "contradicts")
    # the bound's 1/p_min at fixed nu: exactly -1
    assert float(by[("p_min", "fedavg")]["predicted"]) == pytest.approx(-1.0)


def test_least_squares_separates_the_two_M_sweeps(run):
    """Known-label LS: flat along M at fixed N (N_l fixed), like M^-1/2 along M at fixed n_i --
    while nu's M^-1/2 is predicted on both sweeps."""
    _, out = run
    by = {(r["axis"], r["method"]): r for r in _read(out / "exponents.csv")}
    fixed_N, fixed_n = by[("M_fixed_N", "ls")], by[("M_fixed_n", "ls")]
    assert float(fixed_N["low"]) <= 0.0 <= float(fixed_N["high"])
    assert abs(float(fixed_N["ls_rate"])) < 1e-9
    # the design's LS exponent is -1/2 up to the anchors' fixed points (-0.47 here)
    assert -0.55 < float(fixed_n["ls_rate"]) < -0.45
    assert float(fixed_n["low"]) <= float(fixed_n["ls_rate"]) <= float(fixed_n["high"]) < -0.25
    assert fixed_N["verdict_ls"] == fixed_n["verdict_ls"] == "consistent"
    assert float(fixed_N["predicted"]) < -0.1 and float(fixed_n["predicted"]) < -0.4  # nu falls on both


def test_axes_and_holdout_tables(run):
    _, out = run
    rows = _read(out / "axes.csv")
    by_axis = {}
    for r in rows:
        by_axis.setdefault(r["axis"], []).append(r)
    assert [len(by_axis[a]) for a in two_phase_nu.AXIS_NAMES] == [2, 2, 3, 3, 2]
    for axis in ("tiny", "chi2", "p_min"):
        assert len({r["N_total"] for r in by_axis[axis]}) == 1 and len({r["M_total"] for r in by_axis[axis]}) == 1
    assert len({r["N_total"] for r in by_axis["M_fixed_N"]}) == 1
    assert len({r["nu"] for r in by_axis["p_min"]}) == 1
    for r in rows:
        assert int(r["trials"]) == 6
        med, theory = float(r["fedavg_median"]), float(r["fedavg_theory"])
        assert float(r["fedavg_residual"]) == pytest.approx(med / theory)
        assert float(r["bound"]) == pytest.approx(float(r["nu"]) / float(r["p_min"]))
    holdout = _read(out / "holdout.csv")
    cells = len({r["cell"] for r in rows})
    assert len(holdout) == 2 * 5
    for h in holdout:
        assert np.isfinite(float(h["C_without_axis"])) and float(h["C_without_axis"]) > 0
        assert int(h["train_cells"]) + int(h["test_cells"]) == cells
        assert float(h["residual_min"]) <= float(h["residual_max"])
        assert float(h["ratio_min_all"]) < float(h["ratio_max_all"])
    # the line on a sweep is never fitted to it: its constant differs from the all-cells fit
    assert len({h["C_without_axis"] for h in holdout if h["method"] == "fedavg"}) > 1


def test_statement_says_plainly_what_contradicts():
    rows = [dict(axis="chi2", method=m, predicted=0.5, fitted=0.02, low=-0.1, high=0.15, verdict="contradicts",
                 verdict_ls="consistent", ls_rate=0.0, log_x="True") for m in ("fedavg", "fedprox", "ls")]
    text = two_phase_nu.statement("chi2", rows)
    assert "CONTRADICTS" in text and "no visible effect" in text and "+0.50" in text
    rows[0].update(verdict="consistent", fitted=0.45, low=0.3, high=0.6, verdict_ls="contradicts")
    text = two_phase_nu.statement("chi2", rows)
    assert "consistent with the +0.50 of ν/p_min" in text and "departs from the LS rate" in text


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--p-mins", "0.5", "0.1"], "p_mins and p_ref must be at most 1/k"),
        (["--chi2s", "1"], "chi2s needs at least 2 values"),
        (["--tiny-fractions", "0", "1"], "tiny_fractions must be finite and in [0, 1)"),
        (["--Ms-fixed-N", "300", "9000"], "Ms_fixed_N must be at most N_fixed"),
        (["--n-low", "8"], "n_low must be below n_ref"),
        (["--tiny-fractions", "0", "0.95", "--n-tiny", "20"], "tiny clients"),
        (["--fx-tol", "-1"], "fx_tol must be finite and >= 0"),
    ],
)
def test_bad_options_are_parser_errors(extra, message, capsys):
    with pytest.raises(SystemExit) as exc:
        two_phase_nu.STUDY.main(REDUCED + extra + ["--dry-run"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_dry_run_prints_the_grid(capsys):
    assert two_phase_nu.STUDY.main(REDUCED + ["--dry-run"]) == 0
    assert "Grid: 11 cells x 6 trials" in capsys.readouterr().out


def test_presets_are_valid():
    for name, values in two_phase_nu.PRESETS.items():
        config = two_phase_nu.Config(preset=name, **values).validate()
        assert len(two_phase_nu.cells_of(config)) >= 15


def test_figures_draw_into_given_axes_and_write_captions(run, tmp_path):
    """Each plot function draws into the axes it is given and returns what it drew; ``draw``
    writes a caption file beside each figure."""
    from experiments.ifca_mechanism.testing import check_figures

    check_figures(two_phase_nu, run[1], tmp_path, ["plot_nu_sweeps", "plot_nu_constants"])
