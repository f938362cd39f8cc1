"""The contraction study end to end on its quick preset: Theorem 1's bound with the test suite's constants.

The quick preset runs once per module (two worker processes) into a temporary directory, its
figures directory redirected there so that nothing is written to ``figures/``.
"""

from __future__ import annotations

import math

import pytest

from experiments import ifca_contraction as study
from experiments.ifca_mechanism.testing import check_paper_plan, check_refused, run_quick
from experiments.ifca_mechanism.testing import table as _table

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def contraction(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    yield run_quick(study, tmp_path_factory.mktemp(study.NAME), mp)
    mp.undo()


def _violations(contraction):
    return {(r["scope"], r["bound"]): r for r in _table(contraction / "violations.csv")}


def test_theorem1_rhs_with_the_test_constants_is_never_violated_inside_assumption1(contraction):
    rows = _violations(contraction)
    assert int(rows[("alpha <= 1/4 (Assumption 1)", "Thm 1 RHS, test-suite constants")]["violations"]) == 0
    assert float(rows[("all cells", "Thm 1 RHS, test-suite constants")]["c3_needed_max"]) < 1.0  # << c3 = 60


def test_misclustering_breaks_the_bound_without_its_third_term(contraction):
    """Where a few percent of the workers are misclustered (small n', outside Assumption 2) the
    bound without its misclustering term fails in some draws; inside Assumptions 1 and 2 (unit
    constants) it never does."""
    rows = _violations(contraction)
    assert int(rows[("alpha <= 1/4 (Assumption 1)", "1/2 + noise term (no misclustering term)")]["violations"]) > 0
    inside = rows[("alpha <= 1/4 and Assumption 2 (unit constants)", "1/2 + noise term (no misclustering term)")]
    assert int(inside["draws"]) > 0 and int(inside["violations"]) == 0
    cells = _table(contraction / "ratios.csv")
    broken = [c for c in cells if int(c["noise_violations"]) > 0 and c["in_assumption1"] == "True"]
    assert broken and all(float(c["wrong_mean"]) > 0.02 and c["assumption2_unit"] == "False" for c in broken)


def test_measured_misclustering_matches_the_exact_probability(contraction):
    m = study.PRESETS["quick"]["m"]
    for c in _table(contraction / "ratios.csv"):
        exact, measured = float(c["exact_wrong_mean"]), float(c["wrong_mean"])
        if exact >= 0.01:
            se = math.sqrt(exact * (1 - exact) / (int(c["trials"]) * m))
            assert abs(measured - exact) <= 5 * se + 0.1 * exact, c


def test_redraw_reproduces_the_figure_from_the_tables(contraction, capsys):
    assert study.STUDY.main(["--redraw", str(contraction)]) == 0
    assert "ifca_contraction.png" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["--c3", "-1"], "c3 must be finite and >= 0"),
    (["--n-primes", "0"], "n_primes must be an integer >= 1"),
])
def test_bad_options_exit_with_a_clear_message(argv, message, capsys, tmp_path):
    check_refused(study, argv, message, capsys, tmp_path)


def test_paper_preset_plans(capsys, tmp_path):
    check_paper_plan(study, capsys, tmp_path)


def test_figures_draw_into_given_axes_and_write_captions(contraction, tmp_path):
    """Each plot function draws into the axes it is given and returns what it drew; ``draw``
    writes a caption file beside each figure."""
    from experiments.ifca_mechanism.testing import check_figures

    check_figures(study, contraction, tmp_path, ["plot_one_round_contraction"])
