"""error_floor's claims (:mod:`.claims`) on synthetic trials with known exponents: fast, no trial run.

Each test builds records of the study's own shape from a known law, summarises them with the
study's ``summarise`` and runs a claim's check on them, so that a broken table or check (the
mutants of ``paper_checks/mutants_ifca_studies.py``) turns a verdict.  The coverage simulation
runs with fewer replicates here (it is exercised, not measured).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments import error_floor
from experiments.error_floor import claims, coverage
from mixreg.study import claim_status


class _Run:
    """What a claim's check reads of a run: its config, records and recomputed tables."""

    def __init__(self, config, records):
        self.config, self.records = config, records
        self.tables = error_floor.summarise(config, records)


def _config(**changes):
    return error_floor.Config(**{**error_floor.PRESETS["quick"], "preset": "quick", "trials": 16, "n_boot": 200,
                                 **changes})


def _records(config, *, d_exponent=0.5, lift_at_half=1.0, ls_growth=0.0, noise=0.05, seed=0):
    """Trials whose theorem-setting error is exactly (sigma / p) d^d_exponent / sqrt(m n') times a
    lognormal; known-label LS on n' points sigma sqrt(d / (p m n')), times ``lift_at_half`` at
    p = 1/k and ``m^ls_growth``; LS on all 2 T n' points the theorem's error over 4."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in error_floor.cells_of(config):
        pb = spec.problem
        m, n, d, sigma, p = pb.m, pb.n, pb.d, pb.sigma, spec.p_min
        for t in range(config.trials):
            wobble = rng.lognormal(0.0, noise)
            thm = sigma / p * d ** d_exponent / math.sqrt(m * n) * wobble
            ls = sigma * math.sqrt(d / (p * m * n)) * rng.lognormal(0.0, noise) * m ** ls_growth
            ls *= lift_at_half if p >= 1 / pb.k - 1e-12 else 1.0
            out.append(dict(
                m=m, k=pb.k, d=d, sigma=sigma, separation=1.0, n_prime=n, p_min=p, cell=0, trial=t, p=p, p_max=1 - p,
                delta=1.0, rho=1 / sigma ** 2, theory_rounds=14, init_dist=0.25, thm_err=thm, safe_err=thm,
                thm_diverged=False, thm_contracted=True, thm_misclustering=0.0, safe_diverged=False,
                safe_contracted=True, safe_misclustering=0.0, practical_err=ls, practical_step=0.5,
                practical_misclustering=0.0, practical_diverged=0, ls_err=ls, ls_rms=ls,
                ls_full_err=thm / 4.0 * rng.lognormal(0.0, noise / 2), error=""))
    return out


@pytest.fixture(autouse=True)
def _small_coverage(monkeypatch):
    monkeypatch.setattr(coverage, "COVERAGE_REPS", 40)
    monkeypatch.setattr(coverage, "COVERAGE_BOOT", 60)


@pytest.fixture(scope="module")
def exact_run():
    config = _config()
    return _Run(config, _records(config))


def _claim(name):
    return next(c for c in claims.CLAIMS if c.id == name)


def test_floor_claim_holds_on_data_with_corollary_1_exponents(exact_run):
    verdicts = _claim("ifca-cor1-floor").check(exact_run)
    assert [v.numbers["predicted"] for v in verdicts] == [-0.5, -0.5, 0.5, 1.0]
    assert [v.status for v in verdicts] == ["consistent"] * 4, [v.why for v in verdicts]


def test_floor_claim_rejects_a_slope_003_off_with_tight_intervals():
    """d^0.53 with 5% noise: the raw interval (+- about 0.01) excludes 0.5, and the measured
    widening is far below the 0.03 a hand-picked +-0.05 would have hidden."""
    config = _config()
    run = _Run(config, _records(config, d_exponent=0.53))
    by_axis = dict(zip(("m", "n_prime", "d", "sigma"), _claim("ifca-cor1-floor").check(run)))
    assert by_axis["d"].status == "contradicts", by_axis["d"].why
    assert by_axis["d"].numbers["tolerance"] < 0.02
    assert by_axis["m"].status == "consistent"


def test_exponent_rows_state_the_measured_widening_and_coverage(exact_run):
    for row in exact_run.tables["exponents"]:
        assert row["tolerance"] == row["widening"] >= 0
        assert 0 < row["coverage_raw"] <= 1 and row["coverage_widened"] >= 0.95 - 1e-12


def test_one_over_p_claim_holds_on_data_with_a_one_over_p_factor(exact_run):
    verdicts = _claim("ifca-cor1-one-over-p").check(exact_run)
    assert [v.status for v in verdicts][:2] == ["consistent", "consistent"], [v.why for v in verdicts]
    # the practical series follows the known-label rate p^-1/2: Corollary 1's bound, -1 as p falls,
    # holds there without being reached (not tight), which does not contradict it
    assert verdicts[2].status == "not tight" and verdicts[2].numbers["slack"] == "above"


def test_p_half_observation_fits_only_where_the_smallest_cluster_is_unique():
    """A 30% lift at p = 1/2 (the maximum of two equal errors) flattens the all-p slope; the fit
    over p < 1/k still finds -1/2."""
    config = _config()
    run = _Run(config, _records(config, lift_at_half=1.3))
    ls = next(r for r in run.tables["exponents"] if r["axis"] == "p" and r["setting"] == "known_label_ls")
    assert ls["n_points_unique"] == len(config.ps) - 1
    assert ls["fitted"] > -0.45 and ls["verdict"] == "contradicts"
    verdicts = _claim("ifca-p-half-observation").check(run)
    assert claim_status(verdicts) == "consistent", [v.why for v in verdicts]


def test_optimality_claim_reads_the_ratio_to_least_squares_on_the_same_data():
    """The theorem's error is 4 times the oracle's on the same 2 T n' points; the oracle on n'
    points grows like m^0.3 here, and must not enter the ratio."""
    config = _config()
    run = _Run(config, _records(config, ls_growth=0.3, seed=1))
    verdicts = _claim("ifca-optimality").check(run)
    assert [v.status for v in verdicts] == ["consistent"] * 4, [v.why for v in verdicts]
    for row in run.tables["optimality"]:
        assert 3.8 < row["ratio_min"] <= row["ratio_max"] < 4.2, row
        assert row["ratio_derived"] == pytest.approx(math.sqrt(28 * 0.375 / 0.625))


def test_optimality_claim_turns_red_when_the_ratio_grows():
    config = _config()
    records = _records(config)
    for r in records:
        r["ls_full_err"] /= r["m"] ** 0.2
    verdicts = _claim("ifca-optimality").check(_Run(config, records))
    assert verdicts[0].status == "contradicts" and verdicts[0].numbers["fitted"] == pytest.approx(0.2, abs=0.05)
