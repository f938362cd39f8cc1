"""Tests of the paired tests of mixreg.stats: :func:`mcnemar_exact` and :func:`cochran_q`.

Checked against textbook numbers (Agresti's presidential-approval table; mlxtend's Cochran's Q
example), against scipy's exact binomial test, against brute-force enumeration of the
within-block permutations, and against the identities the tests obey (Q with two levels is
McNemar's chi-square; concordant blocks change nothing; relabelling success and failure changes
nothing).
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest, chi2

from mixreg.stats import PairedTest, cochran_q, mcnemar_exact


def _pairs(both, only_first, only_second, neither):
    first = [1] * both + [1] * only_first + [0] * only_second + [0] * neither
    second = [1] * both + [0] * only_first + [1] * only_second + [0] * neither
    return np.array(first), np.array(second)


def test_mcnemar_agresti_presidential_approval():
    """Agresti, Categorical Data Analysis (3rd ed., Table 11.1): 794, 150, 86, 570; z = -4.17,
    z^2 = 17.36 (uncorrected McNemar), chi-square p < 0.0001."""
    test = mcnemar_exact(*_pairs(794, 150, 86, 570))
    assert isinstance(test, PairedTest)
    assert test.statistic == pytest.approx(64**2 / 236)
    assert round(test.statistic, 2) == 17.36
    assert test.p_chi2 == pytest.approx(chi2.sf(64**2 / 236, 1))
    assert test.n_discordant == 236 and test.n_blocks == 1600 and test.successes == (944, 880)
    assert test.p_value == pytest.approx(binomtest(86, 236, 0.5).pvalue, rel=1e-12)
    assert test.p_value < 1e-4 and test.method == "exact McNemar"


@settings(max_examples=60, deadline=None)
@given(both=st.integers(0, 30), b=st.integers(0, 40), c=st.integers(0, 40), neither=st.integers(0, 30))
def test_mcnemar_is_the_exact_binomial_test_on_the_discordant_pairs(both, b, c, neither):
    """Given b + c discordant pairs, b ~ Bin(b + c, 1/2) under the null: the two-sided exact p is
    scipy's binomtest; the concordant pairs (both, neither) do not enter."""
    test = mcnemar_exact(*_pairs(both, b, c, neither))
    expected = binomtest(b, b + c, 0.5).pvalue if b + c else 1.0
    assert test.p_value == pytest.approx(expected, rel=1e-10, abs=1e-300)
    assert test.p_value == mcnemar_exact(*_pairs(0, b, c, 0)).p_value
    assert test.statistic == pytest.approx((b - c) ** 2 / (b + c) if b + c else 0.0)


def test_mcnemar_ignores_the_total_number_of_trials():
    """The same discordant pairs among 10 or 10,000 trials give the same answer (a test built on
    the total would not)."""
    few, many = mcnemar_exact(*_pairs(2, 7, 1, 0)), mcnemar_exact(*_pairs(5000, 7, 1, 4992))
    assert few.p_value == many.p_value == pytest.approx(0.0703125)
    assert few.statistic == many.statistic == pytest.approx(4.5)


def test_mlxtend_cochran_q_example():
    """mlxtend's ``cochrans_q`` user-guide example: q = 7.529411764705882, p = 0.023174427241061245."""
    wrong = np.zeros((100, 3), dtype=int)
    wrong[:16, 0] = 1
    wrong[[0, 1, 2, 3, 4, 5, 20, 21], 1] = 1
    wrong[[0, 1, 2, 6, 20, 21, 98, 99], 2] = 1
    test = cochran_q(1 - wrong)
    assert test.statistic == pytest.approx(7.529411764705882, rel=1e-12)
    assert test.p_chi2 == pytest.approx(0.023174427241061245, rel=1e-10)
    assert test.df == 2 and test.n_discordant == 17 and test.successes == (84, 92, 92)
    assert test.method == "Cochran's Q, exact" and 0 < test.p_value < 0.1
    assert cochran_q(wrong).statistic == pytest.approx(test.statistic)  # relabelling 0 and 1


def _brute_force_p(x):
    """P(Q* >= Q) by enumerating every within-block permutation of every block."""
    x = np.asarray(x)
    per_block = [sorted(set(itertools.permutations(row))) for row in x]
    observed = np.sum(x.sum(axis=0) ** 2)
    hits = total = 0
    for combo in itertools.product(*per_block):
        total += 1
        hits += np.sum(np.sum(combo, axis=0) ** 2) >= observed
    return hits / total


outcome_tables = st.integers(2, 4).flatmap(
    lambda k: st.lists(st.lists(st.integers(0, 1), min_size=k, max_size=k), min_size=1, max_size=5))


@settings(max_examples=60, deadline=None)
@given(outcome_tables)
def test_cochran_exact_p_is_the_permutation_distribution_enumerated(rows):
    """Cochran's conditional null: each block's successes fall on a uniformly random set of levels;
    the exact p-value is P(Q* >= Q) over every such arrangement, enumerated here."""
    test = cochran_q(rows, exact=True)
    assert test.p_value == pytest.approx(_brute_force_p(rows), rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(outcome_tables)
def test_cochran_q_formula_and_invariances(rows):
    """Q = k (k-1) sum_j (C_j - mean C)^2 / (k N - sum_i R_i^2) (Conover's form); adding
    concordant blocks changes neither Q nor p."""
    x = np.array(rows)
    k = x.shape[1]
    C, R = x.sum(axis=0), x.sum(axis=1)
    test = cochran_q(x)
    denominator = k * R.sum() - np.sum(R**2)
    expected = k * (k - 1) * np.sum((C - C.mean()) ** 2) / denominator if denominator else 0.0
    assert test.statistic == pytest.approx(expected, abs=1e-12)
    padded = cochran_q(np.vstack([x, np.ones((3, k), int), np.zeros((2, k), int)]))
    assert padded.statistic == pytest.approx(test.statistic, abs=1e-12)
    assert padded.p_value == pytest.approx(test.p_value, abs=1e-12)
    assert test.p_chi2 == (pytest.approx(chi2.sf(expected, k - 1)) if denominator else 1.0)


@settings(max_examples=60, deadline=None)
@given(both=st.integers(0, 10), b=st.integers(0, 25), c=st.integers(0, 25), neither=st.integers(0, 10))
def test_cochran_with_two_levels_is_mcnemar(both, b, c, neither):
    first, second = _pairs(both, b, c, neither)
    q, m = cochran_q(np.column_stack([first, second])), mcnemar_exact(first, second)
    assert q.statistic == pytest.approx(m.statistic)
    assert q.p_value == pytest.approx(m.p_value, rel=1e-9)
    assert q.p_chi2 == pytest.approx(m.p_chi2)


def test_cochran_permutation_p_agrees_with_exact():
    rng = np.random.default_rng(3)
    x = (rng.random((60, 4)) < [0.5, 0.55, 0.6, 0.75]).astype(int)
    exact = cochran_q(x, exact=True)
    perm = cochran_q(x, exact=False, n_permutations=20000, seed=1)
    assert perm.method == "Cochran's Q, permutation (20000 draws)"
    assert perm.statistic == exact.statistic
    assert perm.p_value == pytest.approx(exact.p_value, abs=4 * np.sqrt(exact.p_value * (1 - exact.p_value) / 20000) + 1e-4)
    assert cochran_q(x, max_states=5).method.startswith("Cochran's Q, permutation")
    with pytest.raises(ValueError, match="max_states=5"):
        cochran_q(x, exact=True, max_states=5)


def test_cochran_exact_p_controls_the_level_under_the_null():
    """Paired outcomes that share a trial effect (as on one draw) but no level effect: the exact
    test rejects at 5% in at most 5% of 400 simulated tables (plus binomial error)."""
    rng = np.random.default_rng(7)
    rejections = 0
    for _ in range(400):
        trial = rng.random((40, 1))  # the draw's difficulty, shared by the levels
        x = (rng.random((40, 3)) < 0.15 + 0.7 * trial).astype(int)
        rejections += cochran_q(x).p_value <= 0.05
    assert rejections / 400 <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 400)


def test_cochran_detects_a_level_effect():
    x = np.zeros((40, 3), dtype=int)
    x[:, 2] = 1
    x[:5, 0] = 1
    test = cochran_q(x)
    assert test.p_value < 1e-6 and test.statistic > 40


def test_no_discordant_block_is_p_one():
    test = cochran_q(np.ones((10, 4), dtype=bool))
    assert (test.statistic, test.p_value, test.p_chi2, test.n_discordant) == (0.0, 1.0, 1.0, 0)
    assert mcnemar_exact([True, False], [True, False]).p_value == 1.0
    assert mcnemar_exact([], []).n_blocks == 0


@pytest.mark.parametrize("call, message", [
    (lambda: cochran_q([[0, 1, 2]]), "0/1 or booleans"),
    (lambda: cochran_q([[0], [1]]), r"levels >= 2, got shape \(2, 1\)"),
    (lambda: cochran_q([0, 1]), "2-D array"),
    (lambda: cochran_q([[0, 1]], n_permutations=0), "n_permutations"),
    (lambda: cochran_q([[0, 1]], exact="yes"), "exact must be"),
    (lambda: mcnemar_exact([0, 1], [1]), "one length"),
    (lambda: mcnemar_exact([0, 3], [1, 0]), "0/1 or booleans"),
])
def test_bad_input_names_the_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()
