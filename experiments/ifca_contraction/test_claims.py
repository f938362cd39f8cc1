"""ifca_contraction's claims (:mod:`.claims`) on synthetic one-round draws: fast, no trial run.

Each record has the study's own columns; its distances are set so that the draw sits just
inside or just outside a bound, so that a table or check whose bound moves (the mutants of
``paper_checks/mutants_ifca_studies.py``) turns a verdict.
"""

from __future__ import annotations

from experiments import ifca_contraction
from experiments.ifca_contraction import claims
from mixreg.study import claim_status


class _Run:
    def __init__(self, config, records):
        self.config, self.records = config, records
        self.tables = ifca_contraction.summarise(config, records)


def _config():
    return ifca_contraction.Config(**{**ifca_contraction.PRESETS["quick"], "preset": "quick", "trials": 4,
                                      "rhos": (4.0,), "alphas": (0.1,), "n_primes": (6, 48)})


def _record(n_prime, *, after, wrong, m=1000, alpha=0.1, noise=0.02, c1=0.375):
    """One trial: both clusters at distance ``alpha``; cluster j ends at ``after[j]``; exact
    misclustering probabilities ``wrong[j]`` (cluster j's workers picking the other model)."""
    rec = dict(m=m, k=2, n=2 * n_prime, d=10, sigma=0.5, delta=1.0, rho=4.0, alpha=alpha, c1=c1, c2=1.0,
               c3=60.0, c4=1 / 9, n_prime=n_prime, snr=4.0, noise_term=noise, miscl_term=1.0,
               wrong_fraction=(wrong[0] + wrong[1]) / 2, error="")
    for j in range(2):
        rec.update({f"ratio_{j}": after[j] / alpha, f"bound_ratio_{j}": 0.5 + (noise + 1.0) / alpha,
                    f"noise_ratio_{j}": 0.5 + noise / alpha, f"c3_needed_{j}": 0.0, f"wrong_{j}": wrong[j],
                    f"exact_wrong_{j}": wrong[j]})
    return rec


def _claim(name):
    return next(c for c in claims.CLAIMS if c.id == name)


def _records(*, clean_after=0.06, exposed_after=(0.09, 0.05)):
    """n' = 48: negligible misclustering (1e-4); n' = 6: 20% of cluster 1's workers pick model 0,
    0.1% of cluster 0's pick model 1, so only model 0 is pulled (2 c1 Delta 0.2 = 0.15)."""
    recs = [_record(48, after=(clean_after, clean_after), wrong=(1e-4, 1e-4)) for _ in range(4)]
    recs += [_record(6, after=exposed_after, wrong=(0.001, 0.2)) for _ in range(4)]
    return recs


def test_round_claim_holds_inside_the_bound_and_turns_red_above_it():
    """Bound at n' = 48: 1/2 * 0.1 + 0.02 = 0.07."""
    config = _config()
    assert _claim("ifca-thm1-round").check(_Run(config, _records(clean_after=0.069))).status == "consistent"
    red = _claim("ifca-thm1-round").check(_Run(config, _records(clean_after=0.075)))
    assert red.status == "contradicts" and red.numbers["violations"] == 8


def test_misclustering_term_uses_the_other_clusters_exact_probability():
    """Model 0 ends at 0.09 > 0.07 (the noise bound): the excess 0.02 is within 2 c1 Delta P = 0.15
    with P = 0.2 the other cluster's probability, not within 2 c1 Delta 0.001 = 0.00075."""
    config = _config()
    bound, tracked = _claim("ifca-thm1-misclustering-term").check(_Run(config, _records()))
    assert bound.status == "consistent", bound.why
    assert bound.numbers["noise_only_violations"] == 4 and 0 < bound.numbers["excess_share_max"] < 1
    assert tracked.status == "consistent"


def test_misclustering_term_turns_red_beyond_the_exact_term():
    config = _config()
    verdicts = _claim("ifca-thm1-misclustering-term").check(_Run(config, _records(exposed_after=(0.25, 0.05))))
    assert claim_status(verdicts) == "contradicts" and verdicts[0].numbers["violations"] == 4
