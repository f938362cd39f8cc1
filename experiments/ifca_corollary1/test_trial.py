"""Tests of the Corollary 1 study's trial, its statistics helpers and its claims' checks (fast, no sweep)."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
from scipy import optimize

from experiments.ifca_corollary1 import claims
from experiments.ifca_corollary1.summary import (
    cochran_armitage,
    derived_failure,
    exponent_variable,
    logistic_slope,
    paired_linear_fit,
    rounds_to,
)
from experiments.ifca_corollary1.trial import Corollary1Spec, corollary1_trial, known_label_run, lemma2_draw


def _cell(**kw):
    base = dict(part="rounds", m=40, k=2, n=2 * 10 * 20, d=5, sigma=1e-3, delta=1.0, rho=1e6, alpha=0.25,
                c1=0.375, rounds=10, last=1)
    return {**base, **kw}


def test_rounds_to_first_round_and_log_interpolation():
    assert rounds_to([0.25, 0.1, 0.04], 0.25) == (0.0, 0.0)
    t, frac = rounds_to([0.25, 0.1, 0.04], 0.05)
    assert t == 2.0 and frac == pytest.approx(1 + math.log(0.1 / 0.05) / math.log(0.1 / 0.04))
    assert all(math.isnan(v) for v in rounds_to([0.25, 0.2], 0.01))


def test_rounds_part_reaches_every_eps_above_the_floor_within_corollary1s_T():
    """Corollary 1 with c1 = 3/8 from ||theta_j - theta*_j|| = Delta/4: every eps_h = (Delta/4) 2^-h at least twice
    the noise term is reached within T = h rounds (the distance falls by about 1/4 a round).  A step half as
    large (factor about 5/8) needs more than h rounds."""
    for seed in range(3):
        spec = Corollary1Spec.from_cell(_cell())
        rec = corollary1_trial(spec, np.random.SeedSequence(seed))
        assert rec["dist_0"] == pytest.approx(0.25, rel=1e-9)
        dist = [rec[f"dist_{t}"] for t in range(11)]
        floor = 2 * rec["noise_term"]
        assert rec["noise_term"] == pytest.approx((1e-3 / 0.5) * math.sqrt(5 / (40 * 20)))
        levels = [h for h in range(1, 12) if 0.25 * 2.0**-h >= floor]
        assert len(levels) >= 6
        for h in levels:
            needed, interpolated = rounds_to(dist, 0.25 * 2.0**-h)
            assert needed <= h and interpolated <= needed, (seed, h, dist)
        assert rec["final_miscl"] == 0.0


def test_exponential_part_records_the_known_label_run_and_misclustering():
    cell = _cell(part="exponential", m=60, n=2 * 8 * 4, sigma=1.0, rho=1.0, rounds=8, last=3)
    rec = corollary1_trial(Corollary1Spec.from_cell(cell), np.random.SeedSequence(1))
    assert rec["excess"] == pytest.approx(rec["final_err"] - rec["known_err"])
    assert 0.05 < rec["final_miscl"] < 0.6   # rho = 1, n' = 4: many clients misclustered at the end
    assert rec["final_miscl"] == pytest.approx(np.mean([rec[f"miscl_{t}"] for t in (5, 6, 7)]))


def test_known_label_run_contracts_by_one_minus_two_c1():
    """The known-label run is IFCA's option I with the true labels: with gamma = c1 / p and no noise, one round
    maps the error e to (I - 2 c1 H) e, H the round's sample covariance (about I), so the ratio is about
    |1 - 2 c1| = 1/4 (the step without the m_j / m rescaling would give about 1/2)."""
    spec = Corollary1Spec.from_cell(_cell(m=200, n=2 * 1 * 50, d=5, sigma=1e-12, rounds=1))
    rng = np.random.default_rng(3)
    problem = spec.problem.generate(rng)
    start = problem.theta_star + 0.25 * rng.standard_normal(problem.theta_star.shape) / math.sqrt(5)
    errors = known_label_run(problem, start, 0.375 / 0.5, 1, rng)
    before = np.linalg.norm(start - problem.theta_star, axis=1)
    assert np.all((errors / before > 0.15) & (errors / before < 0.35)), errors / before


def test_lemma2_draw_is_exact_on_an_orthogonal_design_and_unbiased_in_the_noise():
    N, d = 50, 5
    q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((N, d)))
    out = lemma2_draw(math.sqrt(N) * q, np.ones(N), 1.0)
    assert out["op_dev"] == pytest.approx(0.0, abs=1e-12) and out["sv_dev"] == pytest.approx(0.0, abs=1e-12)
    rng = np.random.default_rng(1)
    ratios = [lemma2_draw(rng.standard_normal((N, d)), 0.3 * rng.standard_normal(N), 0.3)["noise_ratio_sq"]
              for _ in range(400)]
    assert abs(np.mean(ratios) - 1.0) < 0.15   # E ||X^T eps||^2 = sigma^2 N d exactly


def test_lemma2_cell_is_one_client_of_one_cluster():
    cell = _cell(part="lemma2", m=1, k=1, n=400, d=8, sigma=1.0, rounds=1)
    rec = corollary1_trial(Corollary1Spec.from_cell(cell), np.random.SeedSequence(0))
    assert rec["N"] == 400 and rec["sv_dev"] == max(rec["smax_dev"], rec["smin_dev"]) > 0
    with pytest.raises(ValueError, match="m = k = 1"):
        Corollary1Spec.from_cell(_cell(part="lemma2", n=400, rounds=1))


@pytest.mark.parametrize("cell,message", [
    (_cell(k=3, m=30), "k = 2 clusters"),
    (_cell(n=2 * 10 * 20 + 1), "multiple of 2 \\* rounds"),
])
def test_spec_refuses_bad_cells(cell, message):
    with pytest.raises(ValueError, match=message):
        Corollary1Spec.from_cell(cell)


def test_paired_linear_fit_resamples_trials_jointly():
    rng = np.random.default_rng(0)
    x = np.arange(1.0, 7.0)
    shift = rng.normal(0, 1.0, (200, 1))   # a per-trial offset shared by every level: paired data
    Y = 0.5 * x + shift + rng.normal(0, 0.01, (200, 6))
    fit = paired_linear_fit(x, Y, n_boot=300, level=0.95, rng=rng)
    assert fit.low < 0.5 < fit.high and fit.high - fit.low < 0.01   # the offset cancels in the slope


def test_cochran_armitage_matches_the_hand_computation():
    events, trials, scores = np.array([10, 5, 1]), np.array([50, 50, 50]), np.array([0.0, 1.0, 2.0])
    pbar = events.sum() / trials.sum()
    stat = np.sum(scores * (events - trials * pbar))
    var = pbar * (1 - pbar) * (np.sum(trials * scores**2) - np.sum(trials * scores) ** 2 / trials.sum())
    z, p_down, p_up = cochran_armitage(events, trials, scores)
    assert z == pytest.approx(stat / math.sqrt(var)) and z < 0
    assert p_down == pytest.approx(0.5 * math.erfc(-z / math.sqrt(2))) and p_down + p_up == pytest.approx(1.0)
    assert all(math.isnan(v) for v in cochran_armitage([0, 0], [10, 10], [0, 1]))


def test_logistic_slope_is_the_maximum_likelihood_slope():
    events, trials, x = np.array([12, 7, 3, 1]), np.array([60, 60, 60, 60]), np.log([25.0, 50, 100, 200])

    def nll(beta):
        eta = beta[0] + beta[1] * x
        return -np.sum(events * eta - trials * np.log1p(np.exp(eta)))

    best = optimize.minimize(nll, np.zeros(2), method="Nelder-Mead", options=dict(xatol=1e-9, fatol=1e-12)).x
    b, low, high = logistic_slope(events, trials, x)
    assert b == pytest.approx(best[1], abs=1e-4) and low < b < high < 0


def test_derived_failure_and_the_exponent_variable():
    kw = dict(c1=0.375, sigma=1e-3, d=10, m=100, n_prime=20)
    assert derived_failure(1e-5, **kw) > 0.99 > derived_failure(1e-4, **kw) > derived_failure(2e-4, **kw)
    assert exponent_variable(1.0, 8) == pytest.approx(2.0)


def _run(tables, **config):
    base = dict(c1_theorem=0.375, margin=2.0, level=0.95, kappa=0.75, held_out_rhos=(1.0,))
    return types.SimpleNamespace(tables=tables, config=types.SimpleNamespace(**{**base, **config}))


def test_rounds_check_can_fail():
    fits = [dict(c1=0.375, m=26, theorem_c1=True, pairs=96, exceed=0, slope=0.55, low=0.53, high=0.57)]
    rows = [dict(c1=0.375, m=26, T=3, max_rounds=2.0)]
    assert [v.status for v in claims.check_rounds(_run(dict(rounds_fits=fits, rounds=rows)))] == ["consistent"] * 2
    bad = [dict(fits[0], exceed=4, slope=1.4, low=1.2, high=1.6)]
    assert [v.status for v in claims.check_rounds(_run(dict(rounds_fits=bad, rounds=rows)))] == ["contradicts"] * 2


def test_success_check_reads_the_trend_test():
    row = dict(series="fixed", groups=5, trials=1500, failures=30, z=-4.0, p_decrease=3e-5, p_increase=1.0, slope=-1.0,
               slope_low=-1.5, slope_high=-0.5, degree=1.0, degree_low=0.5, degree_high=1.5)
    statuses = [claims.check_success(_run(dict(success_trend=[r])))[0].status for r in (
        row, dict(row, z=4.0, p_decrease=1.0, p_increase=3e-5), dict(row, z=0.1, p_decrease=0.46, p_increase=0.54),
        dict(row, z=math.nan, failures=0))]
    assert statuses == ["consistent", "contradicts", "not tested", "not tested"]


def test_exponential_check_uses_the_held_out_residuals():
    fit = dict(target="miscl", slope=-0.5, intercept=0.0, low=-0.6, high=-0.4, level=0.95, fit_cells=6, n_boot=100,
               c4=0.5, c4_low=0.4, c4_high=0.6)
    cell = dict(x=2.0, trials=50, held_out=True, miscl=0.3, miscl_fitted=0.37, miscl_residual=-0.09,
                miscl_residual_low=-0.12, miscl_residual_high=0.02)
    assert claims.check_exponential(_run(dict(exponential=[cell], exponential_fit=[fit])))[0].status == "consistent"
    off = dict(cell, miscl_residual_high=-0.05)
    assert claims.check_exponential(_run(dict(exponential=[off], exponential_fit=[fit])))[0].status == "contradicts"


def test_lemma2_check_can_fail():
    fits = [dict(quantity="sv_dev", axis="N", at=20, points=3, slope=-0.5, intercept=0, low=-0.52, high=-0.48,
                 level=0.95, n_boot=100, predicted=-0.5),
            dict(quantity="sv_dev", axis="d", at=4000, points=3, slope=0.7, intercept=0, low=0.65, high=0.75,
                 level=0.95, n_boot=100, predicted=0.5)]
    rows = [dict(sqrt_d_over_N=0.1, smax_dev=0.09, smax_dev_low=0.085, smin_dev=0.11, smin_dev_low=0.105)]
    noise = [dict(low=0.97, high=1.02)]
    statuses = [v.status for v in claims.check_lemma2(_run(dict(lemma2_fits=fits, lemma2=rows, lemma2_noise=noise)))]
    assert statuses == ["consistent", "contradicts", "consistent", "contradicts", "consistent"]
