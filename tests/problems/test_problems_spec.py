"""Tests of mixreg.problems.spec: one frozen specification, validated once, that generates a
problem from a Generator and round-trips exactly to an engine cell."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mixreg.montecarlo import trial_seed
from mixreg.problems import (
    CellSchema,
    Problem,
    ProblemSpec,
    add_anchors,
    client_sizes,
    cluster_proportions,
    diagonal_covariances,
    make_labels,
    make_problem,
    make_problem_from_parameters,
    make_theta_star,
)
from experiments.success_vs_R.trial import IFCA_SUCCESS_CELLS
from experiments.two_phase.trial import TWO_PHASE_CELLS

TWO_PHASE = dict(m=60, k=2, d=5, sigma=0.5, scale=2.0, protocol="gaussian", size_law="zipf", size_mean=4.0,
                 n_max=40, p_min=0.2, cov_low=0.5, cov_high=2.0, anchor_mode="per_cluster", anchor_points=20)


def _same(a, b):
    for name in ("X", "y", "offsets", "labels", "theta_star"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.X.dtype == b.X.dtype and a.sigma == b.sigma and a.protocol == b.protocol


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("protocol", ["official", "paper", "gaussian"])
def test_generate_is_make_problem(protocol, dtype):
    spec = ProblemSpec(m=12, k=3, n=7, d=6, sigma=0.3, scale=0.8, protocol=protocol, dtype=dtype)
    _same(spec.generate(np.random.default_rng(5)),
          make_problem(12, 3, 7, 6, 0.3, 0.8, protocol=protocol, dtype=dtype, rng=np.random.default_rng(5)))


def test_generate_with_anchors_is_the_two_phase_draw():
    """Draw order theta*, labels, sizes, covariances, data; anchors from their own stream."""
    spec = ProblemSpec(**TWO_PHASE)
    got, anchors = spec.with_anchors(spec.generate(np.random.default_rng(1)), np.random.default_rng(2))
    rng = np.random.default_rng(1)
    theta = make_theta_star(2, 5, 2.0, protocol="gaussian", rng=rng)
    labels = make_labels(60, 2, proportions=cluster_proportions(2, 0.2), rng=rng)
    sizes = client_sizes(60, "zipf", rng=rng, n_min=1, n_max=40, mean=4.0)
    cov = diagonal_covariances(2, 5, rng=rng, low=0.5, high=2.0)
    base = make_problem_from_parameters(theta, labels, sizes, 0.5, rng=rng, covariances=cov, protocol="gaussian")
    want, want_anchors = add_anchors(base, 20, mode="per_cluster", rng=np.random.default_rng(2))
    _same(got, want)
    np.testing.assert_array_equal(anchors, want_anchors)


specs = st.builds(
    lambda m, k, d, sigma, scale, sizes, p, dtype: ProblemSpec(
        m=m, k=min(k, m), d=d, sigma=sigma, scale=scale, dtype=dtype,
        p_min=None if p is None else p / min(k, m), **sizes),
    m=st.integers(1, 50), k=st.integers(1, 4), d=st.integers(1, 30),
    sigma=st.floats(0, 3, allow_nan=False), scale=st.floats(0, 10, allow_nan=False),
    sizes=st.one_of(st.builds(lambda n: {"n": n}, st.integers(1, 20)),
                    st.builds(lambda law: {"size_law": law, "size_mean": 5.0, "n_max": 50},
                              st.sampled_from(["zipf", "pareto", "lognormal"]))),
    p=st.one_of(st.none(), st.floats(0.05, 1.0)),
    dtype=st.sampled_from(["float64", "float32"]))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(specs)
def test_cell_round_trip_is_exact(spec):
    cell = spec.to_cell()
    assert ProblemSpec.from_cell(cell) == spec
    # a cell of scalars only, hashable into a seed
    assert all(isinstance(v, (bool, int, float, str)) for v in cell.values())
    trial_seed(0, cell, 0)


def test_schema_renames_and_fixes_fields():
    spec = ProblemSpec(**TWO_PHASE)
    cell = spec.to_cell(TWO_PHASE_CELLS)
    assert list(cell)[:5] == ["M", "k", "d", "sigma", "separation"]
    assert "protocol" not in cell and "m" not in cell and "scale" not in cell
    assert ProblemSpec.from_cell({**cell, "fx_rounds": 80}, TWO_PHASE_CELLS) == spec
    with pytest.raises(ValueError, match=r"protocol='official' cannot be stored in this experiment's cells"):
        dataclasses.replace(spec, protocol="official").to_cell(TWO_PHASE_CELLS)
    ifca_spec = ProblemSpec(m=10, k=2, n=5, d=3, sigma=0.1, scale=0.5)
    assert ifca_spec.to_cell(IFCA_SUCCESS_CELLS) == dict(m=10, k=2, n=5, d=3, sigma=0.1, r=0.5,
                                                         protocol="official", dtype="float64")
    with pytest.raises(ValueError, match="unknown ProblemSpec fields"):
        CellSchema(keys={"M": "M"})


@pytest.mark.parametrize(
    "change, pattern",
    [
        (dict(m=0), "m must be"),
        (dict(k=5), "k must be"),
        (dict(d=0), "d must be"),
        (dict(sigma=-1.0), "sigma must be"),
        (dict(scale=float("inf")), "scale must be finite"),
        (dict(protocol="nope"), "protocol must be one of"),
        (dict(n=None), "give exactly one of n"),
        (dict(n=0), "n must be"),
        (dict(p_min=0.9), r"p_min must be in \(0, 1/k\]"),
        (dict(cov_low=0.0), "cov_low must be"),
        (dict(cov_low=2.0, cov_high=1.0), "cov_high must be"),
        (dict(dtype="float16"), "dtype"),
        (dict(anchor_mode="random", anchor_points=5, n_anchors=0), "n_anchors must be"),
        (dict(anchor_mode="per_cluster", anchor_points=1), "anchor_points must be"),
    ],
)
def test_bad_fields_are_named(change, pattern):
    base = dict(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0)
    with pytest.raises((ValueError, TypeError), match=pattern):
        ProblemSpec(**{**base, **change})


def test_size_law_is_validated_once_and_needs_its_parameters():
    with pytest.raises(ValueError, match="needs size_mean and n_max"):
        ProblemSpec(m=4, k=2, d=2, sigma=0.1, scale=1.0, size_law="zipf")
    with pytest.raises(ValueError, match=r"size_mean must be in \[1.0, 50.0\], got 90.0"):
        ProblemSpec(m=4, k=2, d=2, sigma=0.1, scale=1.0, size_law="zipf", size_mean=90.0, n_max=50)
    with pytest.raises(ValueError, match="n_max must be"):
        ProblemSpec(m=4, k=2, d=2, sigma=0.1, scale=1.0, size_law="zipf", size_mean=3.0, n_max=0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        ProblemSpec(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0).generate(0)
    with pytest.raises(ValueError, match="no anchors"):
        spec = ProblemSpec(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0)
        spec.with_anchors(spec.generate(np.random.default_rng(0)), np.random.default_rng(0))


# ------------------------------------------------------------------ clients that mix clusters


def test_mixed_clients_keep_the_true_row_labels_and_draw_rows_from_them():
    spec = ProblemSpec(m=40, k=2, n=50, d=3, sigma=0.0, scale=3.0, protocol="gaussian", main_fraction=0.6)
    pb = spec.generate(np.random.default_rng(0))
    assert pb.point_labels.shape == (pb.N,) and pb.mixed
    # the first 30 rows of every client are from its main cluster; of the other 20 about half
    main = np.tile(np.arange(50) < 30, 40)
    np.testing.assert_array_equal(pb.point_labels[main], np.repeat(pb.labels, 30))
    foreign = (pb.point_labels != np.repeat(pb.labels, 50))[~main].mean()
    assert 0.4 < foreign < 0.6
    # sigma = 0: every row is exactly explained by the model of its own cluster, not its client's
    np.testing.assert_allclose(pb.y, np.einsum("nd,nd->n", pb.X, pb.theta_star[pb.point_labels]), atol=1e-12)
    assert ProblemSpec.from_cell(spec.to_cell()) == spec


def test_main_fraction_one_is_the_usual_client_and_omitted_changes_nothing():
    base = ProblemSpec(m=10, k=2, n=8, d=3, sigma=0.1, scale=1.0)
    assert "main_fraction" not in base.to_cell()  # old cells, hence old seeds, are unchanged
    plain = base.generate(np.random.default_rng(1))
    assert plain.point_labels is None and not plain.mixed
    np.testing.assert_array_equal(plain.row_labels, np.repeat(plain.labels, 8))
    full = ProblemSpec(m=10, k=2, n=8, d=3, sigma=0.1, scale=1.0, main_fraction=1.0).generate(np.random.default_rng(1))
    np.testing.assert_array_equal(full.point_labels, plain.row_labels)
    np.testing.assert_array_equal(full.X, plain.X)  # p = 1 draws no mixture label


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_main_fraction_out_of_range_names_the_parameter(bad):
    with pytest.raises(ValueError, match="main_fraction"):
        ProblemSpec(m=10, k=2, n=8, d=3, sigma=0.1, scale=1.0, main_fraction=bad)


def test_point_labels_are_validated_and_survive_astype_and_anchors():
    pb = ProblemSpec(m=6, k=2, n=4, d=2, sigma=0.1, scale=1.0, main_fraction=0.5).generate(np.random.default_rng(2))
    np.testing.assert_array_equal(pb.astype(np.float32).point_labels, pb.point_labels)
    with pytest.raises(ValueError, match="point_labels must have shape"):
        Problem(X=pb.X, y=pb.y, offsets=pb.offsets, labels=pb.labels, theta_star=pb.theta_star, sigma=0.1,
                point_labels=pb.point_labels[:-1])
    with pytest.raises(ValueError, match=r"point_labels must lie in \[0, k\)"):
        Problem(X=pb.X, y=pb.y, offsets=pb.offsets, labels=pb.labels, theta_star=pb.theta_star, sigma=0.1,
                point_labels=pb.point_labels + 2)
    grown, anchors = add_anchors(pb, 7, mode="per_cluster", rng=np.random.default_rng(3))
    assert grown.point_labels.shape == (grown.N,)
    for a in anchors:  # the anchor's 3 fresh rows are from its main cluster, at the end of its block
        assert (grown.point_labels[grown.offsets[a + 1] - 3 : grown.offsets[a + 1]] == grown.labels[a]).all()


# ------------------------------------------------------------------ one draw at several noise levels


def test_levels_share_one_draw_and_equal_separate_draws():
    spec = ProblemSpec(m=12, k=2, n=9, d=4, sigma=0.3, scale=1.0, dtype="float32")
    levels = spec.generate_levels(np.random.default_rng(5), (0.0, 0.1, 0.4))
    assert [pb.sigma for pb in levels] == [0.0, 0.1, 0.4]
    assert all(pb.X is levels[0].X for pb in levels)  # one X in memory
    for pb in levels:
        alone = dataclasses.replace(spec, sigma=pb.sigma).generate(np.random.default_rng(5))
        np.testing.assert_array_equal(pb.X, alone.X)
        np.testing.assert_array_equal(pb.y, alone.y)
        np.testing.assert_array_equal(pb.labels, alone.labels)
    # the noise is one vector scaled by sigma
    base = levels[0].y.astype(np.float64)
    np.testing.assert_allclose((levels[2].y - base) / 0.4, (levels[1].y - base) / 0.1, rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="sigmas"):
        spec.generate_levels(np.random.default_rng(0), (0.1, -1.0))
    with pytest.raises(ValueError, match="at least one"):
        spec.generate_levels(np.random.default_rng(0), ())


# ------------------------------------------------------------------ one draw at several separation scales


@pytest.mark.parametrize("protocol", ["official", "paper", "gaussian"])
@pytest.mark.parametrize("extra", [{}, dict(cov_low=0.5, cov_high=2.0), dict(main_fraction=0.6)])
def test_scale_levels_share_one_draw_and_equal_separate_draws(protocol, extra):
    spec = ProblemSpec(m=12, k=3, n=9, d=5, sigma=0.3, scale=7.0, protocol=protocol, dtype="float32", **extra)
    rng = np.random.default_rng(5)
    levels = spec.generate_levels(rng, scales=(0.1, 0.25, 1.0))
    after = rng.standard_normal(3)  # the generator ends where a single draw leaves it
    assert [pb.sigma for pb in levels] == [0.3] * 3
    assert all(pb.X is levels[0].X for pb in levels)  # one X in memory
    for pb, scale in zip(levels, (0.1, 0.25, 1.0)):
        rng = np.random.default_rng(5)
        alone = dataclasses.replace(spec, scale=scale).generate(rng)
        np.testing.assert_array_equal(pb.theta_star, alone.theta_star)
        np.testing.assert_array_equal(pb.X, alone.X)
        np.testing.assert_array_equal(pb.y, alone.y)
        np.testing.assert_array_equal(pb.labels, alone.labels)
        np.testing.assert_array_equal(rng.standard_normal(3), after)
    if protocol == "official":  # one Bernoulli pattern b, theta* = r b
        np.testing.assert_array_equal(levels[0].theta_star / 0.1 != 0, levels[2].theta_star != 0)
    assert levels[0].separation < levels[1].separation < levels[2].separation


def test_scale_levels_refuse_bad_arguments():
    spec = ProblemSpec(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0)
    with pytest.raises(ValueError, match="exactly one"):
        spec.generate_levels(np.random.default_rng(0), (0.1,), scales=(1.0,))
    with pytest.raises(ValueError, match="exactly one"):
        spec.generate_levels(np.random.default_rng(0))
    with pytest.raises(ValueError, match="scales"):
        spec.generate_levels(np.random.default_rng(0), scales=(1.0, -1.0))
    with pytest.raises(ValueError, match="at least one"):
        spec.generate_levels(np.random.default_rng(0), scales=())


def test_theta_levels_of_make_problem_from_parameters():
    theta = np.array([[1.0, 0.0], [0.0, 1.0]])
    labels = np.array([0, 1, 1])
    pbs = make_problem_from_parameters((theta, 2 * theta), labels, 4, 0.1, rng=np.random.default_rng(1))
    alone = make_problem_from_parameters(2 * theta, labels, 4, 0.1, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(pbs[1].y, alone.y)
    np.testing.assert_array_equal(pbs[1].theta_star, 2 * theta)
    with pytest.raises(ValueError, match="at most one"):
        make_problem_from_parameters((theta, theta), labels, 4, (0.1, 0.2), rng=np.random.default_rng(1))
    with pytest.raises(ValueError, match="one shape"):
        make_problem_from_parameters((theta, theta[:, :1]), labels, 4, 0.1, rng=np.random.default_rng(1))
    with pytest.raises(ValueError, match="at least one level"):
        make_problem_from_parameters((), labels, 4, 0.1, rng=np.random.default_rng(1))


def test_max_rows_bounds_the_rows_drawn_and_memory_bytes_the_arrays():
    """max_rows bounds N (anchors included) without the worst case m n_max of a heavy-tailed
    law; memory_bytes is at least the bytes of X, y and the offsets the problem holds."""
    rng = np.random.default_rng(0)
    base = dict(d=3, sigma=0.1, scale=1.0, protocol="gaussian")
    heavy = ProblemSpec(m=400, k=3, size_law="zipf", size_mean=6.0, n_max=200, **base)
    for spec in (ProblemSpec(m=50, k=2, n=7, **base), heavy,
                 ProblemSpec(m=400, k=3, size_law="lognormal", size_mean=20.0, n_max=200, n_min=2, dtype="float32",
                             **base),
                 ProblemSpec(m=60, k=3, n=4, anchor_mode="per_cluster", anchor_points=50, **base)):
        for seed in range(5):
            problem = spec.generate(np.random.default_rng(seed))
            if spec.anchor_mode is not None:
                problem, _ = spec.with_anchors(problem, rng)
            assert problem.N <= spec.max_rows
            assert spec.memory_bytes() >= problem.X.nbytes + problem.y.nbytes + problem.offsets.nbytes
    assert heavy.max_rows < 400 * 200 / 4
    assert dataclasses.replace(heavy, d=300).memory_bytes() > 60 * heavy.memory_bytes()  # (24 d + 32) N: N d dominates
