"""The claims' checks (:mod:`experiments.ifca_strongly_convex.checks`) on a small in-process run.

Each test names the mutants of ``paper_checks/mutants_strongly_convex.py`` it catches: on the
unmutated code the verdicts below hold; on the mutant the test fails.
"""

from __future__ import annotations

import pytest

from experiments.ifca_strongly_convex import checks
from experiments.ifca_strongly_convex.testing import mini_run


@pytest.fixture(scope="module")
def run():
    return mini_run()[2]


def _status(verdicts):
    return [v.status for v in verdicts]


def test_factor_is_within_theorem2_bound_and_equals_the_exact_second_moments(run):
    """Catches sc-step-x2 (the exact part) and sc-factor-kappa-inverted (the bound part)."""
    bound, exact = checks.check_factor(run)
    assert bound.status == "consistent" and bound.numbers["cells"] >= 5, bound
    assert bound.numbers["looseness_min"] > 4  # Theorem 2's 8 against the population's 1 (or faster)
    assert exact.status == "consistent", exact


def test_rounds_are_within_theorem2_T_and_grow_with_kappa_over_p(run):
    """Catches sc-rounds-kappa-inverted; the exponent's verdict is a result (reported, not asserted)."""
    within, shape = checks.check_rounds(run)
    assert within.status == "consistent", within
    assert 0 < within.numbers["largest_fraction_of_T"] < 0.5
    # T suffices: rounds growing more slowly than T's exponent 1 are 'not tight', never 'contradicts'
    assert shape.status in ("consistent", "not tight") and 0.5 < shape.numbers["fitted"] < 1.1


def test_final_error_exponents_and_the_exact_floor(run):
    """Catches sc-half-data (the final mean square against the exact second moments)."""
    verdicts = checks.check_floor(run)
    assert _status(verdicts) == ["consistent"] * len(verdicts), verdicts
    assert len(verdicts) == 3  # two exponents (no held-out cell with three values per axis) and the level


def test_lemma3_bounds_hold_and_the_measured_rate_is_the_exact_probability(run):
    """Catches sc-pair-without-sigma (the paired comparison with the exact probability)."""
    lemma, cheb, exact = checks.check_lemma3(run)
    # a bound at least 1 everywhere cannot fail: "not tested", never "consistent"
    for bound in (lemma, cheb):
        live = bound.numbers.get("cells", 0) - bound.numbers["vacuous_cells"] if bound.status == "not tested" else 1
        assert bound.status == ("not tested" if live == 0 else "consistent"), bound
    assert exact.status == "consistent", exact
    assert lemma.numbers["vacuous_cells"] >= cheb.numbers["vacuous_cells"]


def test_a_bound_vacuous_at_every_cell_is_not_tested():
    rows = [dict(fw_low=0.2, lemma=1.5), dict(fw_low=0.0, lemma=3.0)]
    verdict = checks._informative_bound("P <= bound", rows, "lemma")
    assert verdict.status == "not tested" and verdict.numbers["vacuous_cells"] == 2
    rows.append(dict(fw_low=0.5, lemma=0.1))  # a live cell the data break
    assert checks._informative_bound("P <= bound", rows, "lemma").status == "contradicts"
