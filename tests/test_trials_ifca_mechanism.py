"""Tests for the three trial functions of :mod:`mixreg.trials_ifca_mechanism`."""

from __future__ import annotations

import numpy as np
import pytest

from mixreg import theory
from mixreg.trials_ifca_mechanism import ifca_basin_trial, ifca_contraction_trial, ifca_misclustering_trial


def _cell(**kw):
    base = dict(m=40, k=2, n=40, d=5, sigma=0.5, delta=1.0, c1=0.375)
    return {**base, **kw}


def test_misclustering_trial_counts_and_exact_probability():
    cell = _cell(m=400, n=2 * 6, sigma=1.0)
    rec = ifca_misclustering_trial(cell, np.random.SeedSequence(4))
    assert rec["n_prime"] == 6 and rec["n_workers"] == 400 and 0 <= rec["n_wrong"] <= 400
    assert rec["snr"] == pytest.approx(1.0)
    assert rec["exact_probability"] == pytest.approx(
        float(theory.misclustering_probability(6, theory.ResidualPair.at_truth(1.0))), rel=1e-9)
    assert rec["wrong_fraction"] == rec["n_wrong"] / 400
    assert rec == ifca_misclustering_trial(cell, np.random.SeedSequence(4))  # deterministic
    with pytest.raises(ValueError, match="k = 2"):
        ifca_misclustering_trial(_cell(k=3, m=30), np.random.SeedSequence(0))


def test_contraction_trial_ratios_and_bound():
    cell = _cell(m=200, n=2 * 10, sigma=0.7, alpha=0.25, c2=1.0, c3=60.0, c4=1 / 9)
    rec = ifca_contraction_trial(cell, np.random.SeedSequence(5))
    rho, p, n_prime, d, m = rec["snr"], 0.5, 10, 5, 200
    for j in range(2):
        before = 0.25
        rhs = theory.ifca_one_round_bound(before, 0.7, p, d, m, n_prime, 1.0, c2=1.0, c3=60.0, c4=1 / 9)
        assert rec[f"bound_ratio_{j}"] == pytest.approx(rhs / before, rel=1e-10)
        assert rec[f"noise_ratio_{j}"] == pytest.approx(0.5 + theory.ifca_error_floor(
            0.7, p, d, m, n_prime, 1.0, c2=1.0, c3=0.0) / before, rel=1e-10)
        assert 0 <= rec[f"wrong_{j}"] <= 1 and 0 <= rec[f"exact_wrong_{j}"] <= 1
        assert rec[f"ratio_{j}"] > 0 and rec[f"c3_needed_{j}"] >= 0
    assert rho == pytest.approx(1 / 0.49)


def test_basin_trial_inside_and_beyond_the_adversarial_edge():
    """Inside Assumption 1 both variants succeed; at alpha = 0.7 in the adversarial direction
    (k = 2) the two estimates have crossed the midpoint: IFCA converges to the swapped truth, a
    success up to permutation but not for Theorem 1's notion."""
    base = _cell(m=40, n=2 * 8 * 20, d=5, sigma=0.2, n_rounds=8, floor_factor=2.0)
    inside = ifca_basin_trial({**base, "alpha": 0.2, "direction": "random"}, np.random.SeedSequence(6))
    assert inside["rs_success"] and inside["fb_success"] and inside["rs_same_success"]
    assert inside["n_prime"] == 20 and inside["rs_threshold"] > inside["fb_threshold"] > 0
    swapped = ifca_basin_trial({**base, "alpha": 0.7, "direction": "adversarial"}, np.random.SeedSequence(6))
    assert swapped["population_edge"] == pytest.approx(0.5)
    assert swapped["fb_success"] and not swapped["fb_same_success"]
    assert swapped["fb_same_dist"] > 0.9  # each estimate ended at the other centre
