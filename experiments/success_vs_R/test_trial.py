"""The IFCA success trials (experiments.success_vs_R.trial): one draw at several noise levels as one batch."""

import dataclasses

import numpy as np
import pytest

from mixreg.algorithms.ifca import ifca
from mixreg.problems import ProblemSpec
from experiments.success_vs_R.trial import (
    IfcaSuccessSpec,
    IFCA_LEVELS_CELLS,
    IFCA_SCALE_LEVELS_CELLS,
    IFCA_SUCCESS_CELLS,
    ifca_success_levels_trial,
    ifca_success_trial,
    unpack_levels,
)

METHOD = dict(n_rounds=60, n_inits=3, step_sizes=(1.0, 0.1), init="official", init_scale=1.0, threshold_offset=0.001)
LEVELS = (0.0, 0.1, 0.4)


def _spec(dtype="float64"):
    return ProblemSpec(m=20, k=2, n=15, d=12, sigma=0.0, scale=0.4, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_shared_draw_batch_equals_separate_runs_on_the_same_draw(dtype):
    problems = _spec(dtype).generate_levels(np.random.default_rng(3), LEVELS)
    rng = np.random.default_rng(4)
    init = rng.binomial(1, 0.5, size=(4, 2, 12)).astype(dtype)
    steps = np.array([1.0, 0.1, 1.0, 0.1])
    G, B = len(LEVELS), init.shape[0]
    shared = ifca(problems[0], np.tile(init, (G, 1, 1)), np.tile(steps, G), n_rounds=60,
                  responses=np.stack([pb.y for pb in problems]), response_of=np.repeat(np.arange(G), B))
    tol = dict(rtol=1e-9, atol=1e-12) if dtype == "float64" else dict(rtol=2e-4, atol=2e-5)
    for g, pb in enumerate(problems):
        alone = ifca(pb, init, steps, n_rounds=60)
        part = slice(g * B, (g + 1) * B)
        np.testing.assert_array_equal(shared.diverged[part], alone.diverged)
        live = ~alone.diverged
        np.testing.assert_allclose(shared.theta[part][live], alone.theta[live], **tol)
        np.testing.assert_allclose(shared.train_loss[part][live], alone.train_loss[live], **tol)
        np.testing.assert_array_equal(shared.assignments[part], alone.assignments)


def test_the_levels_trial_scores_every_level_as_a_separate_trial_on_its_draw():
    cell = {**_spec().to_cell(IFCA_LEVELS_CELLS), "sigma_levels": LEVELS, **METHOD}
    seed = np.random.SeedSequence(11)
    record = ifca_success_levels_trial(IfcaSuccessSpec.from_cell(cell), seed)
    rows = unpack_levels([dict(record, r=cell["r"], trial=0)], LEVELS)
    assert [row["sigma"] for row in rows] == list(LEVELS) and all(row["trial"] == 0 for row in rows)
    for row, sigma in zip(rows, LEVELS):
        _assert_scored_as_alone(row, dataclasses.replace(_spec(), sigma=sigma), METHOD, 11)


def _assert_scored_as_alone(row, spec, method, entropy):
    """``row`` (one level of a levels trial of seed ``entropy``) equals the single-level trial
    of ``spec`` on the same draw: the same problem and starts, scored alike."""
    data_ss, init_ss = np.random.SeedSequence(entropy).spawn(2)

    class Same(np.random.SeedSequence):
        def spawn(self, n):
            return [data_ss, init_ss]

    alone = ifca_success_trial(IfcaSuccessSpec.from_cell({**spec.to_cell(IFCA_SUCCESS_CELLS), **method}), Same(0))
    for key in ("official_success", "honest_success", "oracle_success", "n_diverged", "threshold"):
        assert row[key] == alone[key], key
    for key in ("official_best_dist", "honest_dist", "oracle_dist", "separation"):
        assert row[key] == pytest.approx(alone[key], rel=1e-9, nan_ok=True), key


def test_levels_cells_refuse_a_sigma():
    with pytest.raises(ValueError, match="sigma"):
        dataclasses.replace(_spec(), sigma=0.1).to_cell(IFCA_LEVELS_CELLS)


SCALES = (0.1, 0.4, 1.0)


@pytest.mark.parametrize("init", ["official", "close"])
def test_the_scale_levels_trial_scores_every_r_as_a_separate_trial_on_its_draw(init):
    """r levels (the m-n presets' protocol): one X, one pattern b and one noise vector per seed,
    theta* = r b; each level scored as the single-r trial on the same draw and starts."""
    method = dict(METHOD, init=init)
    spec = dataclasses.replace(_spec(), sigma=0.1, scale=1.0)
    cell = {**spec.to_cell(IFCA_SCALE_LEVELS_CELLS), "r_levels": SCALES, **method}
    assert "r" not in cell
    record = ifca_success_levels_trial(IfcaSuccessSpec.from_cell(cell), np.random.SeedSequence(11))
    rows = unpack_levels([dict(record, sigma=0.1, trial=0)], SCALES, key="r")
    assert [row["r"] for row in rows] == list(SCALES)
    assert rows[0]["separation"] < rows[1]["separation"] < rows[2]["separation"]
    for row, r in zip(rows, SCALES):
        _assert_scored_as_alone(row, dataclasses.replace(spec, scale=r), method, 11)


def test_a_levels_cell_holds_one_kind_of_level():
    cell = {**dataclasses.replace(_spec(), scale=1.0).to_cell(IFCA_SCALE_LEVELS_CELLS), "r_levels": SCALES,
            "sigma_levels": LEVELS, **METHOD}
    with pytest.raises(ValueError, match="exactly one"):
        ifca_success_levels_trial(IfcaSuccessSpec.from_cell(cell), np.random.SeedSequence(0))
