"""Tests for :func:`experiments.ifca_contraction.trial.ifca_contraction_trial`."""

from __future__ import annotations

import numpy as np
import pytest

from mixreg import theory

from experiments.ifca_contraction.trial import ContractionSpec, ifca_contraction_trial


def _cell(**kw):
    base = dict(m=40, k=2, n=40, d=5, sigma=0.5, delta=1.0, c1=0.375)
    return {**base, **kw}


def test_contraction_trial_ratios_and_bound():
    cell = _cell(m=200, n=2 * 10, sigma=0.7, rho=1 / 0.49, alpha=0.25, c2=1.0, c3=60.0, c4=1 / 9)
    rec = ifca_contraction_trial(ContractionSpec.from_cell(cell), np.random.SeedSequence(5))
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


def test_contraction_spec_refuses_k_other_than_2():
    with pytest.raises(ValueError, match="k = 2 clusters, got k=3"):  # refused by the spec, before any trial
        ContractionSpec.from_cell(_cell(k=3, m=30, rho=4.0, alpha=0.25, c2=1.0, c3=1.0, c4=1.0))
