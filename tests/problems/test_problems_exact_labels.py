"""Labels of exact proportions: :func:`mixreg.problems.exact_labels` and :func:`~mixreg.problems.exact_counts`."""

from __future__ import annotations

import numpy as np
import pytest

from mixreg.problems import exact_counts, exact_labels, make_labels


def test_exact_proportions_and_never_empty():
    assert np.bincount(exact_labels(100, 2, 0.1)).tolist() == [10, 90]
    assert np.bincount(exact_labels(100, 3, 0.1)).tolist() == [10, 45, 45]
    assert np.bincount(exact_labels(10, 3, 0.01)).tolist() == [1, 5, 4]  # never empty
    assert np.bincount(exact_labels(9, 3, 1 / 3)).tolist() == [3, 3, 3]


@pytest.mark.parametrize("m,k,p", [(2, 2, 0.5), (7, 3, 0.2), (100, 4, 0.05), (101, 2, 0.37), (50, 5, 0.2)])
def test_counts_sum_to_m_with_cluster_0_smallest(m, k, p):
    counts = exact_counts(m, k, p)
    assert len(counts) == k and sum(counts) == m and all(isinstance(c, int) for c in counts)
    assert counts[0] == min(counts) >= 1
    assert max(counts[1:]) - min(counts[1:]) <= 1
    labels = exact_labels(m, k, p)
    assert labels.dtype == np.int64 and np.all(np.diff(labels) >= 0)  # contiguous
    assert np.bincount(labels, minlength=k).tolist() == counts


def test_balanced_is_make_labels_when_k_divides_m():
    np.testing.assert_array_equal(exact_labels(12, 3, 1 / 3), make_labels(12, 3))


@pytest.mark.parametrize("args,match", [((10, 2, 0.7), "p_min"), ((10, 2, 0.0), "p_min"), ((1, 2, 0.5), "m"),
                                        ((10, 1, 0.5), "k"), ((3, 4, 0.2), "k")])
def test_bad_arguments_are_named(args, match):
    with pytest.raises(ValueError, match=match):
        exact_counts(*args)
