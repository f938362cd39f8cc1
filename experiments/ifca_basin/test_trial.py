"""Tests for :func:`experiments.ifca_basin.trial.ifca_basin_trial`."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.ifca_basin.trial import BasinSpec, ifca_basin_trial


def _cell(**kw):
    base = dict(m=40, k=2, n=40, d=5, sigma=0.5, delta=1.0, c1=0.375)
    return {**base, **kw}


def test_basin_trial_inside_and_beyond_the_adversarial_edge():
    """Inside Assumption 1 both variants succeed; at alpha = 0.7 in the adversarial direction
    (k = 2) the two estimates have crossed the midpoint: IFCA converges to the swapped truth, a
    success up to permutation but not for Theorem 1's notion."""
    base = _cell(m=40, n=2 * 8 * 20, d=5, sigma=0.2, n_rounds=8, floor_factor=2.0)
    inside = ifca_basin_trial(BasinSpec.from_cell({**base, "alpha": 0.2, "direction": "random"}), np.random.SeedSequence(6))
    assert inside["rs_success"] and inside["fb_success"] and inside["rs_same_success"]
    assert inside["n_prime"] == 20 and inside["rs_threshold"] > inside["fb_threshold"] > 0
    swapped = ifca_basin_trial(BasinSpec.from_cell({**base, "alpha": 0.7, "direction": "adversarial"}), np.random.SeedSequence(6))
    assert swapped["population_edge"] == pytest.approx(0.5)
    assert swapped["fb_success"] and not swapped["fb_same_success"]
    assert swapped["fb_same_dist"] > 0.9  # each estimate ended at the other centre
