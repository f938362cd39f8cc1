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


def test_the_variant_reaches_the_floor_only_once_it_clusters(run):
    out, stdout = run
    results = read_results(out)
    success = {m: sum(r["ifca_ii_decay_sq"] < 0.25 for r in results.records if r["m"] == m) for m in MS}
    assert success[10] < 12 and success[80] == 12  # it fails to cluster at small m, never at m = 80
    claims = {row["claim"]: row for row in results.table("claims.csv")}
    steep = claims["the variant's mean squared error ~ m^-1, as the floor"]
    assert steep["status"] == "contradicts" and float(steep["high"]) < -1.0  # failures make the mean fall faster
    assert claims["the variant's fitted line predicts m = 80"]["status"] in ("consistent", "contradicts")
    assert len(stdout.strip().splitlines()) == 3


def test_the_figures_are_drawn_with_every_method(run):
    out, _ = run
    for name in ("success", "error"):
        for suffix in (".png", ".pdf"):
            assert (out / f"{name}{suffix}").stat().st_size > 10_000


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
