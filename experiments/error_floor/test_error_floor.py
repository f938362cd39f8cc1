"""The error-floor experiment end to end: the quick preset, run once, and what it shows.

The module's fixture runs ``python -m experiments.error_floor`` (the quick preset, unchanged)
into a temporary directory; every test reads its tables.  About a minute and a half on two
cores.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments import error_floor
from mixreg.montecarlo.reader import read_results

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("error_floor") / "quick"
    assert error_floor.STUDY.main(["--out", str(out), "--no-progress"]) == 0
    results = read_results(out)
    return dict(out=out, points=results.table("points.csv"), exponents=results.table("exponents.csv"),
                records=results.records)


def _row(run, axis, setting):
    rows = [r for r in run["exponents"] if r["axis"] == axis and r["setting"] == setting]
    assert len(rows) == 1, (axis, setting)
    return rows[0]


def test_files_and_one_exponent_row_per_axis_and_setting(run):
    out = run["out"]
    for name in ("trials.csv", "summary.csv", "manifest.json", "points.csv", "exponents.csv", "error_floor.png",
                 "error_floor.pdf"):
        assert (out / name).is_file(), name
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sweep"]["config"]["preset"] == "quick"
    # the predicted exponents, registered with their hashes before the first trial, are the table's
    assert [(p["name"], p["sha256"]) for p in manifest["predictions"]] == [(p.name, p.sha256) for p in
                                                                          error_floor.PREDICTIONS]
    assert all(p["registered"]["trials_before"] == 0 for p in manifest["predictions"])
    corollary, known_label = ({axis: c["value"] for axis, c in p["constants"].items()} for p in manifest["predictions"])
    assert all("Corollary 1" in c["source"] for c in manifest["predictions"][0]["constants"].values())
    for r in run["exponents"]:
        assert r["predicted"] == (known_label if r["setting"] == "known_label_ls" else corollary)[r["axis"]], r
    assert corollary["p"] == -1.0 and known_label["p"] == -0.5
    pairs = [(r["axis"], r["setting"]) for r in run["exponents"]]
    settings = ("theorem", "practical", "known_label_ls")
    expected = [(axis, s) for axis in ("m", "n_prime", "d", "sigma") for s in settings]
    expected += [("p", s) for s in ("theorem", "theorem_safe_step", "practical", "known_label_ls")]
    assert sorted(pairs) == sorted(expected)
    assert all(not r["error"] for r in run["records"])
    # "Thm 1" covers the theorem's setting only
    assert {(r["setting"], r["covered"]) for r in run["exponents"]} == {
        ("theorem", True), ("theorem_safe_step", False), ("practical", False), ("known_label_ls", False)}


@pytest.mark.parametrize("axis,predicted,within", [("n_prime", -0.5, 0.15), ("m", -0.5, 0.15), ("d", 0.5, 0.2),
                                                   ("sigma", 1.0, 0.15)])
def test_theorem_setting_has_corollary_1_exponents_where_it_holds(run, axis, predicted, within):
    row = _row(run, axis, "theorem")
    assert row["predicted"] == predicted
    assert abs(row["fitted"] - predicted) <= within, row
    assert row["low"] <= row["fitted"] <= row["high"] and row["high"] - row["low"] < 0.2, row
    assert row["verdict"] == "consistent"


def test_known_label_ls_has_the_minimax_p_exponent(run):
    row = _row(run, "p", "known_label_ls")
    assert row["predicted"] == -0.5
    assert abs(row["fitted"] + 0.5) <= 0.15, row


def test_unsafe_step_fails_on_unbalanced_clusters_and_the_safe_step_does_not(run):
    """Theorem 1's step c1/p diverges (or ends worse than the safe step c1/p_max) at every
    unbalanced p of the axis, diverges outright at p <= 0.2 (p_max / p >= 4), and the table says so."""
    pts = {(r["series"], r["value"]): r for r in run["points"] if r["axis"] == "p"}
    unbalanced = sorted(v for s, v in pts if s == "theorem" and v < 0.5)
    assert unbalanced
    for p in unbalanced:
        thm, safe = pts[("theorem", p)], pts[("theorem_safe_step", p)]
        assert safe["diverged"] == 0 and safe["not_contracting"] == 0
        assert thm["diverged"] > 0 or thm["mean"] > safe["mean"], (p, thm, safe)
    for p in (v for v in unbalanced if v <= 0.2):
        assert pts[("theorem", p)]["diverged"] == pts[("theorem", p)]["trials"]
    row = _row(run, "p", "theorem")
    assert row["verdict"].startswith("fails") and "diverged" in row["note"]
    # the safe step removes the 1/p altogether: its error does not grow as p shrinks (at fixed n')
    safe = _row(run, "p", "theorem_safe_step")
    assert safe["verdict"] == "contradicts" and safe["fitted"] > -0.25


def test_practical_setting_lands_on_known_label_least_squares(run):
    """With the right identities, full-batch IFCA converges to known-label least squares on the same data."""
    for r in (r for r in run["points"] if r["series"] == "practical"):
        ls = next(q for q in run["points"] if q["series"] == "known_label_ls" and q["axis"] == r["axis"]
                  and q["value"] == r["value"])
        assert r["mean"] == pytest.approx(ls["mean"], rel=0.02), (r, ls)
        assert r["misclustering"] == 0.0


def test_realised_regime(run):
    """rho >= 6 everywhere, T = 14 on balanced cells, exact proportions on the p axis."""
    assert min(r["rho"] for r in run["points"]) >= 6
    assert {r["theory_rounds"] for r in run["points"] if r["axis"] != "p"} == {14}
    assert all(r["x"] == pytest.approx(r["value"]) for r in run["points"] if r["axis"] == "p")
    assert all(np.isfinite(r["derived"]) for r in run["points"] if r["series"] != "theorem" or r["axis"] != "p")


def test_redraw_works_on_the_directory(run, capsys):
    png = run["out"] / "error_floor.png"
    png.unlink()
    assert error_floor.STUDY.main(["--redraw", str(run["out"])]) == 0
    assert png.is_file() and "wrote" in capsys.readouterr().out


def test_figures_draw_into_given_axes_and_write_captions(run, tmp_path):
    """Each plot function draws into the axes it is given and returns what it drew; ``draw``
    writes a caption file beside each figure."""
    from experiments.ifca_mechanism.testing import check_figures

    check_figures(error_floor, run["out"], tmp_path, ["plot_error_floor"])
