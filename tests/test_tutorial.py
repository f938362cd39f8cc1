"""The tutorial (docs/tutorial.md): its script runs as a user runs it, on two worker processes, and
shows what the page says it shows."""

from __future__ import annotations

import ast
import io
import json
import pathlib
import subprocess
import sys
import tokenize

import numpy as np
import pytest

from mixreg.algorithms import ALGORITHMS
from mixreg.montecarlo import read_results
from mixreg.predictions import level_verdict
from mixreg.stats import bootstrap_mean_interval

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "docs" / "tutorial" / "your_theorem.py"
MS = (10, 20, 40, 80)


def code_lines(path):
    """Lines holding code: not blank, not only a comment, not a docstring."""
    source = path.read_text(encoding="utf-8")
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node) is not None:
            first = node.body[0]
            docstrings.update(range(first.lineno, first.end_lineno + 1))
    lines = set()
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in skipped:
            lines.update(line for line in range(tok.start[0], tok.end[0] + 1) if line not in docstrings)
    return len(lines)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tutorial") / "your_theorem"
    done = subprocess.run([sys.executable, str(SCRIPT), str(out)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path_factory.getbasetemp())
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done.stdout


def test_the_tutorial_is_at_most_60_lines_of_code():
    assert code_lines(SCRIPT) <= 60


def test_every_registered_method_and_the_variant_ran_on_the_workers(run):
    out, _ = run
    results = read_results(out)
    records = results.records
    assert len(records) == len(MS) * 12 and all(r["error"] == "" for r in records)
    columns = set(records[0])
    # the variant was registered in the script (__main__): the two loky workers got it
    assert {f"{name}_sq" for name in ALGORITHMS} | {"ifca_ii_decay_sq", "ls_sq"} <= columns
    manifest = results.manifest
    assert manifest["runs"][-1]["workers"] == 2
    assert "ifca_ii_decay" in manifest["code"]["algorithms"]
    (prediction,) = manifest["predictions"]
    assert prediction["name"] == "ls_mse" and prediction["fixed_before_data"] is True
    assert len(prediction["sha256"]) == 64 and "commit" in prediction["registered"]


def test_known_label_least_squares_meets_its_exact_floor(run):
    out, stdout = run
    claims = {row["claim"]: row for row in read_results(out).table("claims.csv")}
    assert claims["known-label LS meets its exact floor"]["status"] == "consistent"
    assert "consistent: known-label LS meets its exact floor" in stdout
    # the mutant the claim catches: the identity's floor (tr Sigma^-1 = d) at the same intervals
    records = read_results(out).records
    rng = np.random.default_rng(0)
    intervals = np.array([bootstrap_mean_interval([r["ls_sq"] for r in records if r["m"] == m], rng, 2000,
                                                  level=1 - 0.05 / 4) for m in MS])
    identity_floor = [0.5**2 * 5 / (m * 20 / 2 - 5 - 1) for m in MS]
    assert level_verdict("identity", identity_floor, intervals[:, 1], intervals[:, 2]).status == "contradicts"


def _successes(records, name):
    return [sum(r[f"{name}_sq"] < 0.25 for r in records if r["m"] == m) for m in MS]


def test_no_trial_is_near_the_success_threshold(run):
    # so the counts asserted below cannot flip with the last bits of another CPU's kernels
    records = read_results(run[0]).records
    values = np.array([v for r in records for k, v in r.items() if k.endswith("_sq") and np.isfinite(v)])
    assert np.min(np.abs(np.log(values / 0.25))) > 0.01


def test_the_variant_reaches_the_floor_only_once_it_clusters(run):
    out, stdout = run
    results = read_results(out)
    records = results.records
    assert _successes(records, "ifca_ii_decay") == [9, 10, 12, 12]  # fails to cluster at small m, never at 40, 80
    for m in (40, 80):  # where it always clusters, its mean squared error is on the floor
        mean = np.mean([r["ifca_ii_decay_sq"] for r in records if r["m"] == m])
        assert abs(mean / (0.5**2 * 7.666666666666667 / (m * 10 - 6)) - 1) < 0.1
    claims = {row["claim"]: row for row in results.table("claims.csv")}
    steep = claims["the variant's mean squared error ~ m^-1, as the floor"]
    assert steep["status"] == "contradicts"  # the failures make the mean fall faster
    assert [round(float(steep[key]), 2) for key in ("fitted", "low", "high")] == [-4.11, -4.73, -1.40]
    assert claims["the variant's fitted line predicts m = 80"]["status"] == "consistent"
    assert stdout.splitlines()[1].startswith("contradicts: the variant's mean squared error ~ m^-1")


def test_random_starts_fail_where_phase_1_does_not(run):
    out, _ = run
    records = read_results(out).records
    assert _successes(records, "ifca") == [8, 7, 9, 10]
    assert _successes(records, "fedavg") == [7, 6, 5, 9]
    assert _successes(records, "fedprox") == [7, 5, 5, 8]
    assert _successes(records, "two_phase") == [12, 12, 12, 12]
    assert sum(_successes(records, "pacfl_x")) <= 1  # x-only signatures: the clusters differ in y alone


def test_the_figures_draw_every_method(run):
    import matplotlib.pyplot as plt

    from mixreg.plotting import error_plot, success_plot

    out, _ = run
    for name in ("success", "error"):
        for suffix in (".png", ".pdf"):
            assert (out / f"{name}{suffix}").stat().st_size > 10_000
    # the script's figures, drawn again from its table: every method, nothing left out silently
    records = read_results(out).records
    names = [c[:-3] for c in records[0] if c.endswith("_sq")]
    tidy = [{"m": r["m"], "method": n, "sq": r[f"{n}_sq"], "ok": r[f"{n}_sq"] < 0.25} for r in records for n in names]
    success = success_plot(tidy, "m", success="ok", logx=True)
    error = error_plot(tidy, "m", "sq", prediction=lambda m: m)
    assert list(success["lines"]) == names and list(error["errorbars"]) == names and success["note"] == ""
    diverged = sum(not np.isfinite(r[f"{n}_sq"]) for r in records for n in names)
    assert (error["note"] == "") == (diverged == 0)  # a diverged run is excluded and said, never drawn
    plt.close("all")


def test_the_variant_keeps_the_contract():
    code = ("import runpy; runpy.run_path({script!r}); "
            "from mixreg.algorithms import check_algorithm, get_algorithm; "
            "report = check_algorithm(get_algorithm('ifca_ii_decay'), skip={{'tolerance_stops': "
            "'a step decaying as 1 / t converges sublinearly'}}); "
            "print(len(report), sorted(report.skipped))").format(script=str(SCRIPT))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    passed, skipped = done.stdout.split(" ", 1)
    assert int(passed) >= 12 and "tolerance_stops" in skipped
