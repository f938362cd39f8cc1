"""ifca_misclustering's claims (:mod:`.claims`) on synthetic trials drawn from the exact law: fast.

The records have the study's own shape, with every worker misclustered independently with the
exact probability of its cell (:func:`mixreg.theory.misclustering_probability`), so Lemma 1's
check must hold, and a table or check that reads the wrong exponent must turn it.
"""

from __future__ import annotations

import numpy as np
import pytest

from experiments import ifca_misclustering
from experiments.error_floor import coverage
from experiments.ifca_misclustering import claims
from mixreg.study import claim_status


class _Run:
    def __init__(self, config, records):
        self.config, self.records = config, records
        self.tables = ifca_misclustering.summarise(config, records)


def _config():
    return ifca_misclustering.Config(**{**ifca_misclustering.PRESETS["quick"], "preset": "quick", "trials": 20,
                                        "n_boot": 200})


def _records(config, *, law=1.0, seed=0):
    """``law``: the probability drawn is the exact one raised to this power (1: the exact law)."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in ifca_misclustering.cells_of(config):
        n_prime = spec.problem.n // 2
        p = float(ifca_misclustering.PREDICTIONS[0].predict([dict(rho=spec.rho, n_prime=n_prime)])[0]) ** law
        for t in range(config.trials):
            wrong = int(rng.binomial(config.m, p))
            out.append(dict(m=config.m, k=2, n=2 * n_prime, d=config.d, rho=spec.rho, n_prime=n_prime, trial=t,
                            n_workers=config.m, n_wrong=wrong, wrong_fraction=wrong / config.m, error=""))
    return out


@pytest.fixture(autouse=True)
def _small_coverage(monkeypatch):
    monkeypatch.setattr(coverage, "COVERAGE_REPS", 40)
    monkeypatch.setattr(coverage, "COVERAGE_BOOT", 60)


def _claim(name):
    return next(c for c in claims.CLAIMS if c.id == name)


def test_lemma1_holds_on_the_exact_law_with_the_chernoff_exponent_only_recorded():
    config = _config()
    run = _Run(config, _records(config))
    verdicts = _claim("ifca-lemma1").check(run)
    assert claim_status(verdicts) == "consistent", [v.why for v in verdicts]
    slopes = verdicts[:-1]
    assert len(slopes) == len(config.rhos)
    for v in slopes:  # the Chernoff exponent lies below the finite-grid slope: recorded, not asserted
        assert v.numbers["chernoff"] < v.numbers["predicted"] and not v.numbers["chernoff_inside"]
    assert claim_status(_claim("ifca-misclustering-steepening").check(run)) == "consistent"


def test_lemma1_turns_red_on_a_law_with_another_exponent():
    config = _config()
    verdicts = _claim("ifca-lemma1").check(_Run(config, _records(config, law=1.3)))
    assert claim_status(verdicts) == "contradicts"
    assert verdicts[-1].status == "contradicts"   # the cell-by-cell law too


def test_steepening_observation_turns_red_on_a_pure_chernoff_law():
    """With P = exp(-I(rho) n') / 2 exactly, the fitted exponent is I(rho): not above it."""
    config = _config()
    rng = np.random.default_rng(3)
    records = []
    for spec in ifca_misclustering.cells_of(config):
        n_prime = spec.problem.n // 2
        p = 0.5 * float(np.exp(-ifca_misclustering.PREDICTIONS[1].predict([dict(rho=spec.rho)])[0] * n_prime))
        for t in range(config.trials):
            wrong = int(rng.binomial(config.m, p))
            records.append(dict(m=config.m, k=2, n=2 * n_prime, d=config.d, rho=spec.rho, n_prime=n_prime, trial=t,
                                n_workers=config.m, n_wrong=wrong, wrong_fraction=wrong / config.m, error=""))
    verdicts = _claim("ifca-misclustering-steepening").check(_Run(config, records))
    assert sum(v.status == "contradicts" for v in verdicts) >= len(verdicts) - 1, [v.why for v in verdicts]
