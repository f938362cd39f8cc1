"""Predictions, exponent fits and verdicts: :mod:`mixreg.predictions`."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binom

from mixreg.predictions import (
    Constant,
    ExponentFit,
    Prediction,
    Verdict,
    bound_exponent_verdict,
    claims_table,
    exponent_verdict,
    fit_exponent,
    held_out_verdict,
    level_verdict,
)
from mixreg.stats import SlopeFit, fit_slope

MODULE = '''
import math

import numpy as np

from mixreg.predictions import Constant, Prediction

K = {k}
TABLE = np.array({table})


def floor(cell, c5):
    """Corollary 1's noise term (docstrings do not count)."""
    return c5 * cell["sigma"] / cell["p"] * math.sqrt(cell["d"] / (cell["m"] * cell["n_prime"])){tail}


PREDICTION = Prediction("ifca_floor", floor, "c5 (sigma / p) sqrt(d / (m n'))",
                        constants={{"c5": Constant({c5}, "{source}")}}, fields=("sigma", "p", "d", "m", "n_prime"),
                        regime=lambda cell: cell["m"] >= K, regime_text="m >= K")
'''
DEFAULT = dict(k=4, c5=1.0, source="assumed: paper gives none", tail="", table="[1.0]")


def _load(tmp_path, name, **changes):
    """A prediction defined in a module file ``name`` (a formula needs a source to register)."""
    path = tmp_path / f"{name}.py"
    path.write_text(MODULE.format(**{**DEFAULT, **changes}))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PREDICTION


CELL = dict(sigma=0.1, p=0.5, d=10, m=100, n_prime=20)


# --------------------------------------------------------------------------------------------
# Constant and Prediction
# --------------------------------------------------------------------------------------------


def test_a_prediction_evaluates_its_formula_with_its_constants_and_marks_its_regime(tmp_path):
    pred = _load(tmp_path, "pred_eval", c5=2.0)
    cells = [CELL, {**CELL, "m": 2}]
    expected = 2.0 * 0.1 / 0.5 * np.sqrt(10 / (np.array([100, 2]) * 20))
    np.testing.assert_allclose(pred.predict(cells), expected, rtol=1e-15)
    assert pred.applies(cells).tolist() == [True, False]
    out = pred.predict(cells, only_in_regime=True)
    assert out[0] == pytest.approx(expected[0]) and math.isnan(out[1])
    spec = type("Spec", (), {})()  # a spec object: fields read as attributes, the formula gets it as it is
    for key, value in CELL.items():
        setattr(spec, key, value)
    assert Prediction("by_attribute", _attribute_floor, "sigma", fields=("sigma",)).predict([spec]).tolist() == [0.1]


def _attribute_floor(spec):
    return spec.sigma


def test_a_prediction_refuses_cells_without_its_fields_and_a_single_cell_not_in_a_list(tmp_path):
    pred = _load(tmp_path, "pred_fields")
    with pytest.raises(ValueError, match=r"field\(s\) 'n_prime' that cells\[1\] does not have"):
        pred.predict([CELL, {k: v for k, v in CELL.items() if k != "n_prime"}])
    with pytest.raises(TypeError, match="wrap one cell in a list"):
        pred.predict(CELL)


def test_to_json_registers_the_text_constants_sources_normalised_formula_and_fixed_before_data(tmp_path):
    record = _load(tmp_path, "pred_json", c5=0.5, source="IFCA, Corollary 1").to_json()
    assert record["name"] == "ifca_floor" and record["text"] == "c5 (sigma / p) sqrt(d / (m n'))"
    assert record["constants"] == {"c5": {"value": 0.5, "source": "IFCA, Corollary 1"}}
    assert record["fixed_before_data"] is True and record["fields"] == ["sigma", "p", "d", "m", "n_prime"]
    assert record["formula"].startswith("def floor(cell, c5):\n    return c5 * cell['sigma']")
    assert "docstrings" not in record["formula"]
    assert record["regime"] == "lambda cell: cell['m'] >= K" and record["regime_text"] == "m >= K"
    assert record["regime_references"] == {"K": "4"} and record["references"] == {"math": "module math"}
    arrays = _load(tmp_path, "pred_json_table", tail=" * TABLE[0]").to_json()["references"]
    assert arrays["TABLE"].startswith("array float64 [1] sha256 ")


def test_each_lambda_of_a_line_registers_its_own_text(tmp_path):
    """Two lambdas with the same arguments on one line: each is found by its code's positions."""
    path = tmp_path / "pred_lambdas.py"
    path.write_text("from mixreg.predictions import Prediction\n"
                    "P = Prediction('a', lambda cell: cell['m'] * 2, 't', regime=lambda cell: cell['m'] > 2)\n")
    spec = importlib.util.spec_from_file_location("pred_lambdas", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    record = module.P.to_json()
    assert (record["formula"], record["regime"]) == ("lambda cell: cell['m'] * 2", "lambda cell: cell['m'] > 2")


def test_the_hash_changes_with_a_constant_its_source_the_formula_or_a_value_it_reads(tmp_path):
    base = _load(tmp_path, "pred_base").sha256
    assert len(base) == 64 and base == _load(tmp_path, "pred_same").sha256  # another module, same text
    assert _load(tmp_path, "pred_layout", tail="  # a comment").sha256 == base  # layout and comments do not count
    changed = {"constant": _load(tmp_path, "pred_c5", c5=1.5), "source": _load(tmp_path, "pred_src", source="exact"),
               "formula": _load(tmp_path, "pred_formula", tail=" * 2"),
               "regime's global": _load(tmp_path, "pred_k", k=5)}
    for what, pred in changed.items():
        assert pred.sha256 != base, what
    table = _load(tmp_path, "pred_table", tail=" * float(TABLE[0])").sha256  # a module-level array it reads
    assert table != base and _load(tmp_path, "pred_table2", tail=" * float(TABLE[0])", table="[2.0]").sha256 != table
    pred = _load(tmp_path, "pred_replace")
    assert dataclasses.replace(pred, text="c5 sigma/p sqrt(d/(m n'))").sha256 != base
    assert dataclasses.replace(pred, regime_text="m >= 4").sha256 != base


def test_the_hash_is_the_same_in_a_fresh_interpreter(tmp_path):
    """Stable across runs: another process, another hash seed, the module imported by its name."""
    here = _load(tmp_path, "pred_fresh")
    code = "import pred_fresh; print(pred_fresh.PREDICTION.sha256)"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == here.sha256


def test_the_constructor_refuses_unsourced_or_unusable_constants_and_formulas(tmp_path):
    with pytest.raises(ValueError, match="Constant source must be a non-empty string"):
        Constant(1.0, "")
    with pytest.raises(ValueError, match="Constant value must be finite"):
        Constant(float("nan"), "exact")
    with pytest.raises(TypeError, match="constant 'c5' must be a Constant"):
        Prediction("p", _attribute_floor, "t", constants={"c5": 1.0})
    with pytest.raises(TypeError, match=r"cannot be called as formula\(cell, c5=...\)"):
        Prediction("p", _attribute_floor, "t", constants={"c5": Constant(1.0, "exact")})
    with pytest.raises(TypeError, match="source cannot be read"):
        Prediction("p", eval("lambda cell: 1.0"), "t")  # no file holds its text
    with pytest.raises(TypeError, match="regime must be a callable"):
        Prediction("p", _attribute_floor, "t", regime="m >= 4")


# --------------------------------------------------------------------------------------------
# fit_exponent
# --------------------------------------------------------------------------------------------

X = np.array([10.0, 20.0, 40.0, 80.0, 160.0])


def _power_law(rng, a, trials=30, noise=0.2, x=X):
    return [3.0 * v ** a * rng.lognormal(0.0, noise, trials) for v in x]


def test_fit_exponent_gives_fit_slope_s_slope_and_interval_from_the_same_generator():
    """The studies' tables stay the same when they move from stats.fit_slope to fit_exponent."""
    samples = _power_law(np.random.default_rng(0), -0.5)
    samples[1][3] = np.nan  # a diverged run is dropped by both
    fit = fit_exponent(X, samples, n_boot=200, rng=np.random.default_rng(7))
    ref = fit_slope(X, samples, n_boot=200, rng=np.random.default_rng(7))
    assert (fit.slope, fit.intercept, fit.low, fit.high, fit.n_points) == (ref.slope, ref.intercept, ref.low,
                                                                          ref.high, ref.n_points)
    assert isinstance(fit, SlopeFit) and fit.held_out == () and fit.x == tuple(X)


def test_the_interval_covers_the_true_exponent_about_95_percent_of_the_time():
    """Theorem (bootstrap consistency): the stratified percentile interval of the log-log slope of
    cell means covers the true exponent with probability -> 0.95; 200 synthetic experiments must
    cover it a number of times inside the central 99.9% of Binomial(200, 0.95)."""
    rng = np.random.default_rng(2024)
    hits = 0
    for _ in range(200):
        fit = fit_exponent(X, _power_law(rng, 0.7), n_boot=200, rng=rng)
        hits += fit.low <= 0.7 <= fit.high
    low, high = binom.ppf([0.0005, 0.9995], 200, 0.95)
    assert low <= hits <= high, hits


def test_trial_level_data_are_pooled_into_a_cell_per_distinct_x():
    rng = np.random.default_rng(1)
    samples = _power_law(rng, 1.0, trials=8)
    flat_x = np.repeat(X, 8)
    flat_y = np.concatenate(samples)
    a = fit_exponent(X, samples, n_boot=100, rng=np.random.default_rng(3))
    b = fit_exponent(flat_x, flat_y, n_boot=100, rng=np.random.default_rng(3))
    assert (a.slope, a.low, a.high) == (b.slope, b.low, b.high)
    with pytest.raises(ValueError, match="distinct cell values"):
        fit_exponent([1.0, 1.0], [[1.0], [2.0]], rng=rng)


def test_held_out_residuals_are_computed_on_the_held_out_cells_only():
    """The last cell is ten times off the law: the fit must not see it, and its residual must say
    log10(10) = 1, while a held-out cell on the law has residual ~0."""
    rng = np.random.default_rng(5)
    samples = _power_law(rng, -0.5, trials=200, noise=0.05)
    samples[-1] = samples[-1] * 10.0
    fit = fit_exponent(X, samples, held_out=[160.0, 10.0], n_boot=300, rng=np.random.default_rng(9))
    train = fit_exponent(X[1:-1], samples[1:-1], n_boot=300, rng=np.random.default_rng(9))
    assert (fit.slope, fit.intercept, fit.low, fit.high) == (train.slope, train.intercept, train.low, train.high)
    assert fit.n_points == 3 and fit.x == (20.0, 40.0, 80.0)
    rows = {row["x"]: row for row in fit.held_out}
    assert sorted(rows) == [10.0, 160.0]
    assert rows[160.0]["residual"] == pytest.approx(1.0, abs=0.03)
    assert rows[160.0]["fitted"] == pytest.approx(fit.fitted(160.0)) and rows[160.0]["trials"] == 200
    assert abs(rows[10.0]["residual"]) < 0.03
    assert rows[10.0]["residual_low"] <= 0 <= rows[10.0]["residual_high"]
    assert not rows[160.0]["residual_low"] <= 0 <= rows[160.0]["residual_high"]
    verdict = held_out_verdict("off at 160", fit)
    assert verdict.status == "contradicts" and verdict.numbers["worst_x"] == 160.0 and verdict.numbers["outside"] == 1
    fine = fit_exponent(X, samples[:-1] + [samples[-1] / 10], held_out=[160.0], n_boot=300, rng=rng)
    assert held_out_verdict("on the law", fine).status == "consistent"
    with pytest.raises(ValueError, match=r"held_out value\(s\) \[30.0\] are not cells' x"):
        fit_exponent(X, samples, held_out=[30.0], rng=rng)


# --------------------------------------------------------------------------------------------
# Verdicts and the claims table
# --------------------------------------------------------------------------------------------


def test_exponent_verdicts_say_consistent_contradicts_and_not_tested_with_the_numbers():
    rng = np.random.default_rng(11)
    fit = fit_exponent(X, _power_law(rng, -0.5, trials=100, noise=0.1), n_boot=400, rng=rng)
    right = exponent_verdict("error ~ m^-1/2", -0.5, fit)
    wrong = exponent_verdict("error ~ m^-1", -1.0, fit)
    assert right.status == "consistent" and wrong.status == "contradicts"
    assert wrong.numbers["predicted"] == -1.0 and wrong.numbers["fitted"] == fit.slope
    assert "outside" in wrong.why and "[" in wrong.why
    just_outside = fit.high + 0.01
    assert exponent_verdict("c", just_outside, fit).status == "contradicts"
    assert exponent_verdict("c", just_outside, fit, tolerance=0.02).status == "consistent"
    one_x = fit_exponent(np.full(20, 10.0), rng.lognormal(0, 0.1, 20), n_boot=50, rng=rng)
    assert exponent_verdict("c", -0.5, one_x).status == "not tested" and one_x.n_points == 1
    diverged = fit_exponent(X, [np.full(5, np.nan)] * 5, n_boot=50, rng=rng)
    verdict = exponent_verdict("c", -0.5, diverged)
    assert verdict.status == "not tested" and "fewer than 2 cells" in verdict.why
    no_interval = SlopeFit(slope=-0.5, intercept=0.0, low=np.nan, high=np.nan, level=0.95, n_points=3, n_boot=0)
    assert exponent_verdict("c", -0.5, no_interval).status == "not tested"


def test_a_bound_exponent_is_not_tight_only_wholly_on_its_slack_side():
    """A sufficient number of rounds growing like x^1: a fitted exponent wholly below 1 keeps within
    it ('not tight'), wholly above 1 contradicts it; an interval holding 1 stays consistent; an error
    bound like p^-1 as p falls: a fitted exponent above -1 is 'not tight', below it contradicts."""
    below = SlopeFit(slope=0.83, intercept=0.0, low=0.80, high=0.86, level=0.95, n_points=6, n_boot=1000)
    above = SlopeFit(slope=1.20, intercept=0.0, low=1.10, high=1.30, level=0.95, n_points=6, n_boot=1000)
    holds = SlopeFit(slope=0.95, intercept=0.0, low=0.85, high=1.05, level=0.95, n_points=6, n_boot=1000)
    rounds = [exponent_verdict("rounds ~ x", 1.0, fit, slack="below") for fit in (below, above, holds)]
    assert [v.status for v in rounds] == ["not tight", "contradicts", "consistent"]
    assert rounds[0].numbers["slack"] == "below" and "contradicts its tightness, not the bound" in rounds[0].why
    assert "slack" not in rounds[1].numbers and "slack" not in exponent_verdict("r", 1.0, below).numbers
    errors = [exponent_verdict("error ~ p^-1", -1.0, SlopeFit(slope=s, intercept=0.0, low=s - 0.05, high=s + 0.05,
                                                              level=0.95, n_points=7, n_boot=1000), slack="above")
              for s in (-0.48, -2.0)]
    assert [v.status for v in errors] == ["not tight", "contradicts"]
    # the declared tolerance widens the interval first: inside it, consistent; the slack side is strict
    assert exponent_verdict("r", 1.0, below, tolerance=0.2, slack="below").status == "consistent"
    edge = Verdict("r", "contradicts", dict(predicted=1.0, low=0.9, high=1.0 - 1e-12))
    assert bound_exponent_verdict(edge, "below").status == "not tight"
    assert bound_exponent_verdict(edge, "above").status == "contradicts"
    # a verdict without an interval (a run that diverged) stays as it is; so does every other status
    diverged = Verdict("r", "contradicts", dict(predicted=1.0, fitted="diverged"), "the run diverged")
    assert bound_exponent_verdict(diverged, "below") is diverged
    consistent = Verdict("r", "consistent", dict(predicted=1.0, low=0.5, high=0.6))
    assert bound_exponent_verdict(consistent, "below") is consistent
    with pytest.raises(ValueError, match="slack must be one of below, above"):
        bound_exponent_verdict(edge, "under")
    assert Verdict("r", "not tight").status == "not tight"


def test_level_verdicts_compare_each_cell_and_name_the_furthest_miss():
    assert level_verdict("floor", [1.0, 2.0, 3.0], [0.9, 1.9, 2.9], [1.1, 2.1, 3.1]).status == "consistent"
    v = level_verdict("floor", [1.0, 2.0, 3.0], [0.9, 2.05, 3.5], [1.1, 2.2, 3.6])
    assert v.status == "contradicts" and v.numbers["outside"] == 2 and v.numbers["worst_cell"] == 2
    v = level_verdict("floor", [1.0, np.nan], [np.nan, 1.0], [np.nan, 2.0])
    assert v.status == "not tested" and v.numbers["cells"] == 0


def test_a_verdict_is_one_of_four_statuses_and_says_why_it_is_not_tested():
    with pytest.raises(ValueError, match="status must be one of consistent, not tight, contradicts, not tested"):
        Verdict("c", "undetermined")
    with pytest.raises(ValueError, match="why must say why"):
        Verdict("c", "not tested")
    with pytest.raises(ValueError, match="cannot be named status"):
        Verdict("c", "consistent", {"status": 1})
    row = Verdict("c", "consistent", {"fitted": 0.5}, "inside").verdict_row()
    assert list(row) == ["claim", "status", "fitted", "why"] and row["fitted"] == 0.5


def test_the_claims_table_has_every_column_in_every_row(monkeypatch):
    verdicts = [Verdict("a", "consistent", {"fitted": 0.5}), Verdict("b", "not tested", {"cells": 0}, "one x")]
    rows = claims_table(verdicts)
    assert [list(r) for r in rows] == [["claim", "status", "fitted", "cells", "why"]] * 2
    assert rows[1]["fitted"] is None and rows[0]["cells"] is None and rows[1]["why"] == "one x"
    with pytest.raises(TypeError, match=r"verdicts\[1\] = dict"):
        claims_table([verdicts[0], {}])
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="needs pandas"):
        claims_table(verdicts, as_frame=True)


def test_the_claims_table_as_a_data_frame():
    pandas = pytest.importorskip("pandas")
    frame = claims_table([Verdict("a", "contradicts", {"fitted": 1.0}, "outside")], as_frame=True)
    assert isinstance(frame, pandas.DataFrame) and list(frame.columns) == ["claim", "status", "fitted", "why"]


def test_an_exponent_fit_draws_its_line():
    fit = ExponentFit(slope=-0.5, intercept=math.log(3.0), low=-0.6, high=-0.4, level=0.95, n_points=2, n_boot=1)
    np.testing.assert_allclose(fit.fitted([1.0, 4.0]), [3.0, 1.5])
