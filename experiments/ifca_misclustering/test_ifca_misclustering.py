"""The misclustering study end to end on its quick preset: the exact law in the measured intervals, the exponents.

The quick preset runs once per module (two worker processes) into a temporary directory, its
figures directory redirected there so that nothing is written to ``figures/``.
"""

from __future__ import annotations

import json
import math

import pytest

from experiments import ifca_misclustering as study
from experiments.ifca_mechanism.testing import check_paper_plan, check_refused, run_quick
from experiments.ifca_mechanism.testing import table as _table

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def misclustering(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    yield run_quick(study, tmp_path_factory.mktemp(study.NAME), mp)
    mp.undo()


def test_exact_probability_lies_in_the_measured_intervals(misclustering):
    """The exact probability (no fitted constant) lies in the simultaneous 95% Wilson interval
    of the measured rate at every (rho, n') of the quick grid except at most one, and in the
    per-cell intervals about as often as their level says."""
    rows = _table(misclustering / "rates.csv")
    assert len(rows) >= 20
    assert sum(row["inside_sim"] != "True" for row in rows) <= 1
    assert sum(row["inside"] != "True" for row in rows) <= 4
    for row in rows:  # the measurement is IFCA's: every worker of every trial is counted
        assert int(row["workers"]) == int(row["trials"]) * study.PRESETS["quick"]["m"]


def test_the_exact_law_is_registered_before_the_first_trial(misclustering):
    """The manifest registers the exact probability and its exponent, with their hashes, before
    the first trial, and the tables' ``exact`` and ``chernoff`` columns are their values."""
    registered = json.loads((misclustering / "manifest.json").read_text())["predictions"]
    assert [(p["name"], p["sha256"]) for p in registered] == [(p.name, p.sha256) for p in study.PREDICTIONS]
    assert all(p["registered"]["trials_before"] == 0 and p["fixed_before_data"] for p in registered)
    probability, exponent = study.PREDICTIONS
    for row in _table(misclustering / "rates.csv"):
        cell = dict(rho=float(row["rho"]), n_prime=int(row["n_prime"]))
        assert float(row["exact"]) == probability.predict([cell])[0], row
    for row in _table(misclustering / "exponents.csv"):
        assert float(row["chernoff"]) == exponent.predict([dict(rho=float(row["rho"]))])[0], row
        assert float(row["chernoff"]) == pytest.approx(0.5 * math.log1p(float(row["rho"]) / 4), rel=1e-12)


def test_fitted_exponent_against_the_exact_exponents(misclustering):
    """The verdicts say whether the exponents lie in the bootstrap interval widened by the
    widening its simulated coverage needs (stated beside it); the measured decay over the grid is
    steeper than the asymptotic Chernoff exponent at every rho (the n'^(-1/2) prefactor of the
    probability), while the exact probability's own slope on the same grid is inside the
    interval for most rho."""
    rows = _table(misclustering / "exponents.csv")
    for row in rows:
        low, high, chernoff = float(row["fitted_low"]), float(row["fitted_high"]), float(row["chernoff"])
        w = float(row["widening"])
        assert 0 <= w < 0.05 and float(row["coverage_widened"]) >= 0.95
        assert row["verdict_chernoff"] == ("consistent" if low - w <= chernoff <= high + w else "contradicts")
        slope = float(row["exact_slope"])
        assert row["verdict_exact_slope"] == ("consistent" if low - w <= slope <= high + w else "contradicts")
        assert chernoff < low, row
        assert chernoff < slope
    assert sum(row["verdict_exact_slope"] == "consistent" for row in rows) >= len(rows) - 2


def test_lemma1_shape_fitted_on_some_rho_misses_the_held_out_ones(misclustering):
    """One c4 fitted on the middle rho; the held-out residual at the largest rho is large and
    positive: (rho/(rho+1))^2 saturates while the exponent keeps growing like (1/2) log rho."""
    rows = _table(misclustering / "exponents.csv")
    c4 = {float(row["c4_fitted"]) for row in rows}
    assert len(c4) == 1 and 0.3 < c4.pop() < 0.8
    held = [row for row in rows if row["role"] == "held out"]
    assert held and all(math.isfinite(float(row["residual"])) for row in held)
    top = max(held, key=lambda row: float(row["rho"]))
    assert float(top["residual"]) > 0.25
    for row in rows:
        assert float(row["lemma1_bound"]) < float(row["chernoff"])  # c4 = 1/9 stays a bound


@pytest.mark.parametrize("argv,message", [
    (["--fit-rhos", "3"], "fit_rhos must be a non-empty subset"),
    (["--targets", "0"], "targets must be finite and > 0"),
])
def test_bad_options_exit_with_a_clear_message(argv, message, capsys, tmp_path):
    check_refused(study, argv, message, capsys, tmp_path)


def test_paper_preset_plans(capsys, tmp_path):
    check_paper_plan(study, capsys, tmp_path)


def test_figures_draw_into_given_axes_and_write_captions(misclustering, tmp_path):
    """Each plot function draws into the axes it is given and returns what it drew; ``draw``
    writes a caption file beside each figure."""
    from experiments.ifca_mechanism.testing import check_figures

    check_figures(study, misclustering, tmp_path, ["plot_misclustering_exponent"])
