"""Tests for :func:`experiments.ifca_misclustering.trial.ifca_misclustering_trial`."""

from __future__ import annotations

import numpy as np
import pytest

from mixreg import theory

from experiments.ifca_misclustering.trial import MisclusteringSpec, ifca_misclustering_trial


def _cell(**kw):
    base = dict(m=40, k=2, n=40, d=5, sigma=0.5, delta=1.0, c1=0.375, rho=4.0)
    return {**base, **kw}


def test_misclustering_trial_counts_and_exact_probability():
    cell = _cell(m=400, n=2 * 6, sigma=1.0, rho=1.0)
    rec = ifca_misclustering_trial(MisclusteringSpec.from_cell(cell), np.random.SeedSequence(4))
    assert rec["n_prime"] == 6 and rec["n_workers"] == 400 and 0 <= rec["n_wrong"] <= 400
    assert rec["snr"] == pytest.approx(1.0)
    assert rec["exact_probability"] == pytest.approx(
        float(theory.misclustering_probability(6, theory.ResidualPair.at_truth(1.0))), rel=1e-9)
    assert rec["wrong_fraction"] == rec["n_wrong"] / 400
    assert rec == ifca_misclustering_trial(MisclusteringSpec.from_cell(cell), np.random.SeedSequence(4))  # deterministic
    with pytest.raises(ValueError, match="k = 2"):  # refused by the spec, before any trial
        MisclusteringSpec.from_cell(_cell(k=3, m=30))
