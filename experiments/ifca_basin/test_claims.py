"""ifca_basin's claims (:mod:`.claims`) on synthetic rates: fast, no trial run.

Every start with alpha < 1/2 succeeds, alpha = 1/2 is a coin flip in the adversarial direction
(the two models meet halfway) and alpha > 1/2 fails: the claims must hold, and a check whose
alpha comparison moves (the mutants of ``paper_checks/mutants_ifca_studies.py``) must turn red.
"""

from __future__ import annotations

from experiments import ifca_basin
from experiments.ifca_basin import claims
from mixreg.study import claim_status


class _Run:
    def __init__(self, config, records):
        self.config, self.records = config, records
        self.tables = ifca_basin.summarise(config, records)


def _config():
    return ifca_basin.Config(**{**ifca_basin.PRESETS["quick"], "preset": "quick", "trials": 6,
                                "alphas": (0.1, 0.25, 0.4, 0.45, 0.5, 0.6, 1.0)})


def _records(config, *, fail_at=None):
    out = []
    for k in config.ks:
        for direction in config.directions:
            for alpha in config.alphas:
                for t in range(config.trials):
                    ok = alpha < 0.5 or (alpha == 0.5 and (direction != "adversarial" or t % 2 == 0))
                    if fail_at is not None and (k, direction, alpha, t) == fail_at:
                        ok = False
                    rec = dict(k=k, direction=direction, alpha=alpha, trial=t, separation=1.0, population_edge=0.5,
                               error="")
                    for v in ("rs", "fb"):
                        rec.update({f"{v}_success": ok, f"{v}_same_success": ok, f"{v}_dist": 0.01 if ok else 1.0,
                                    f"{v}_threshold": 0.05, f"{v}_diverged": False})
                    out.append(rec)
    return out


def _claim(name):
    return next(c for c in claims.CLAIMS if c.id == name)


def test_basin_claims_hold_when_every_start_below_one_half_converges():
    config = _config()
    run = _Run(config, _records(config))
    for name in ("ifca-assumption1-basin", "ifca-alpha-near-random", "ifca-basin-k4-near-half"):
        verdicts = _claim(name).check(run)
        assert claim_status(verdicts) == "consistent", (name, [v.why for v in verdicts])
    near = _claim("ifca-alpha-near-random").check(run)
    assert [v.numbers["alphas"] for v in near] == [[0.1, 0.25, 0.4, 0.45]] * 3


def test_one_failure_inside_delta_over_four_turns_assumption1_red():
    config = _config()
    run = _Run(config, _records(config, fail_at=(4, "random", 0.25, 3)))
    verdicts = _claim("ifca-assumption1-basin").check(run)
    assert [v.status for v in verdicts] == ["consistent", "contradicts"]


def test_one_failure_just_below_one_half_turns_the_k2_claim_red():
    config = _config()
    run = _Run(config, _records(config, fail_at=(2, "adversarial", 0.45, 0)))
    assert claim_status(_claim("ifca-alpha-near-random").check(run)) == "contradicts"
    assert claim_status(_claim("ifca-basin-k4-near-half").check(run)) == "consistent"
