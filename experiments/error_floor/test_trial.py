"""The error-floor trial (:mod:`experiments.error_floor.trial`) on tiny cells."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.error_floor import trial as tef
from experiments.error_floor.trial import ErrorFloorSpec, theory_rounds
from mixreg.algorithms.ifca import ifca as real_ifca

TINY = dict(m=12, k=2, d=3, sigma=0.1, separation=1.0, n_prime=4, p_min=0.5, alpha=0.25, c1=0.375, halvings=3,
            restarts=2, step_sizes=(0.5, 1.0), practical_rounds=20, practical_tol=0.0)


def error_floor_trial(cell, seed):
    """The trial on the spec of an engine cell (as the engine calls it)."""
    return tef.error_floor_trial(ErrorFloorSpec.from_cell(cell), seed)


def test_spec_round_trips_to_the_cell():
    spec = ErrorFloorSpec.from_cell(TINY)
    assert spec.to_cell() == TINY and list(spec.to_cell()) == list(TINY)  # same keys, same order: same seeds
    assert spec.problem.n == 4 and spec.problem.scale == 1.0 and not spec.unbalanced


def test_record_is_scalars_and_deterministic():
    rec = error_floor_trial(TINY, np.random.SeedSequence(7))
    assert all(isinstance(v, (bool, int, float, str)) for v in rec.values()), rec
    assert rec == error_floor_trial(TINY, np.random.SeedSequence(7))  # bit for bit, float64 throughout
    assert rec != error_floor_trial(TINY, np.random.SeedSequence(8))
    for key in ("thm_err", "safe_err", "practical_err", "ls_err", "ls_full_err", "ls_rms", "rho", "p", "p_max",
                "theory_rounds", "theory_n", "practical_step", "practical_misclustering", "practical_diverged",
                "thm_diverged", "safe_contracted", "init_dist"):
        assert key in rec, key
    # balanced cell: both runs of the theorem's setting use gamma = c1 / p = 0.75 and are identical
    assert rec["p"] == rec["p_max"] == 0.5
    assert rec["thm_step"] == rec["safe_step"] == pytest.approx(0.75)
    assert rec["thm_err"] == rec["safe_err"]
    assert rec["theory_rounds"] == 3 and rec["theory_n"] == 2 * 3 * 4
    assert rec["init_dist"] == pytest.approx(0.25 * rec["delta"], rel=1e-12)
    assert rec["delta"] == pytest.approx(1.0, rel=1e-12)  # Gaussian protocol: exact separation
    assert rec["practical_runs"] == 4  # restarts x step sizes
    assert rec["practical_step"] in (0.5, 1.0)


def test_theorem_setting_resamples_and_starts_at_alpha_delta(monkeypatch):
    """Spy on the two IFCA calls: the theorem's run resamples 2T subsets of n' from a data set of
    2 T n' points per client, starting at distance alpha Delta from every theta*_j with the steps
    (c1/p, c1/p_max); the practical run uses n' points per client, no resampling, the step grid."""
    calls = []

    def spy(problem, init, step_size, **kw):
        calls.append(dict(problem=problem, init=np.array(init), step=np.array(step_size), **kw))
        return real_ifca(problem, init, step_size, **kw)

    monkeypatch.setattr(tef, "ifca", spy)
    cell = dict(TINY, m=20, p_min=0.25, alpha=0.2)
    rec = error_floor_trial(cell, np.random.SeedSequence(3))
    theorem, practical = calls
    T = rec["theory_rounds"]
    assert T == theory_rounds(3, 0.375, 0.25, 0.75) and theorem["n_rounds"] == T
    assert theorem["resample"] is True and theorem["rng"] is not None
    assert np.all(theorem["problem"].sizes == 2 * T * 4)
    truth = theorem["problem"].theta_star
    dist = np.linalg.norm(theorem["init"] - truth, axis=2)
    np.testing.assert_allclose(dist, 0.2 * theorem["problem"].separation, rtol=1e-12)
    np.testing.assert_allclose(theorem["step"], [0.375 / 0.25, 0.375 / 0.75])
    assert practical.get("resample", False) is False
    assert np.all(practical["problem"].sizes == 4)
    np.testing.assert_array_equal(practical["step"], [0.5, 1.0, 0.5, 1.0])
    # both data sets share theta* and the exact labels
    np.testing.assert_array_equal(practical["problem"].theta_star, truth)
    np.testing.assert_array_equal(np.bincount(practical["problem"].labels), [5, 15])
    assert rec["p"] == 0.25 and rec["p_max"] == 0.75


def test_unbalanced_theorem_step_fails_and_the_safe_step_contracts():
    """p = 0.2, p_max = 0.8: gamma = c1/p gives the large cluster the factor |1 - 2 c1 * 4| = 2."""
    cell = dict(TINY, m=40, d=3, n_prime=20, p_min=0.2, halvings=6, sigma=0.05)
    rec = error_floor_trial(cell, np.random.SeedSequence(11))
    assert rec["p"] == pytest.approx(0.2) and rec["p_max"] == pytest.approx(0.8)
    assert not rec["thm_contracted"]
    assert rec["thm_diverged"] or rec["thm_err_large"] > rec["init_dist"]
    assert rec["safe_contracted"] and not rec["safe_diverged"]
    assert rec["safe_err"] < 0.1 * rec["init_dist"]


def test_theory_rounds():
    assert theory_rounds(14, 0.375, 0.5, 0.5) == 14  # Theorem 1's 1/2 contraction
    assert theory_rounds(14, 0.375, 0.1, 0.9) == 112  # 1 - 0.75/9 per round


@pytest.mark.parametrize(
    "change,message",
    [
        (dict(p_min=0.6), r"p_min must be at most 1/k = 0.5; got p_min=0.6, k=2"),
        (dict(p_min=0.0), r"p_min must be finite and > 0, got 0.0"),
        (dict(alpha=0.5), r"alpha must be finite and in \(0, 0.5\), got 0.5"),
        (dict(c1=0.0), "c1 must be finite and > 0, got 0.0"),
        (dict(k=1), "k must be an integer >= 2"),
        (dict(step_sizes=()), "step_sizes is empty"),
        (dict(step_sizes=(0.5, -1.0)), r"step_sizes must be finite and > 0, got \[0.5, -1.0\]"),
        (dict(halvings=0), "halvings must be an integer >= 1, got 0"),
        (dict(n_prime=0), "n must be in"),  # the problem's own check (ProblemSpec: n is n_prime)
        (dict(separation=0.0), "separation must be finite and > 0, got 0.0"),
        (dict(sigma=-1.0), "sigma must be in"),
    ],
)
def test_bad_cells_fail_with_a_clear_message(change, message):
    with pytest.raises(ValueError, match=message):
        error_floor_trial(dict(TINY, **change), np.random.SeedSequence(0))


def test_missing_method_key_is_named():
    cell = dict(TINY)
    del cell["halvings"]
    with pytest.raises(TypeError, match="halvings"):
        error_floor_trial(cell, np.random.SeedSequence(0))
