"""Tests of mixreg.problems._covariance and of ProblemSpec's ``covariance``: AR(1) and Toeplitz
matrices, user matrices validated symmetric positive definite, a text form a sweep cell holds, and
generated rows whose sample covariance is the requested one."""

import dataclasses
import math

import numpy as np
import pytest

from mixreg.problems import (
    COVARIANCE_KINDS,
    CellSchema,
    ProblemSpec,
    ar1_covariance,
    check_covariance,
    covariance_from_text,
    toeplitz_covariance,
)

BASE = dict(m=20, k=2, n=50, d=4, sigma=0.5, scale=1.0)


def _one_line_error(call, pattern, kind=ValueError):
    with pytest.raises(kind, match=pattern) as info:
        call()
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------------------------- helpers


def test_ar1_covariance_is_scale_rho_to_the_lag_with_the_closed_form_inverse_trace():
    d, rho, scale = 6, -0.3, 2.0
    cov = ar1_covariance(d, rho, scale)
    want = [[scale * rho ** abs(i - j) for j in range(d)] for i in range(d)]
    np.testing.assert_allclose(cov, want, rtol=1e-15)
    assert cov.dtype == np.float64 and cov.shape == (d, d)
    trace = (d + (d - 2) * rho ** 2) / (scale * (1 - rho ** 2))
    assert np.trace(np.linalg.inv(cov)) == pytest.approx(trace, rel=1e-12)
    np.testing.assert_array_equal(ar1_covariance(3, 0.0), np.eye(3))
    np.testing.assert_array_equal(ar1_covariance(1, 0.9, 3.0), [[3.0]])


@pytest.mark.parametrize("rho", [1.0, -1.0, 1.5, math.nan])
def test_ar1_rho_outside_the_open_unit_interval_is_refused(rho):
    _one_line_error(lambda: ar1_covariance(4, rho), r"^rho must be (in \(-1, 1\)|finite)")


@pytest.mark.parametrize("scale", [0.0, -1.0, math.inf])
def test_ar1_scale_must_be_positive_and_finite(scale):
    _one_line_error(lambda: ar1_covariance(4, 0.5, scale), r"^scale must be")


def test_toeplitz_covariance_reads_the_first_column_at_every_lag():
    c = [3.0, 1.0, -0.5, 0.25]
    cov = toeplitz_covariance(c)
    for i in range(4):
        for j in range(4):
            assert cov[i, j] == c[abs(i - j)]
    np.testing.assert_array_equal(toeplitz_covariance([1, 0.5, 0.25]), ar1_covariance(3, 0.5))


def test_toeplitz_that_is_not_positive_definite_names_the_smallest_eigenvalue():
    c = [1.0, 0.9, 0.0, 0.0]  # tridiagonal 1 + 1.8 cos(j pi / 5): negative for j = 4
    smallest = np.linalg.eigvalsh(c[0] * np.eye(4) + 0.9 * (np.eye(4, k=1) + np.eye(4, k=-1)))[0]
    assert smallest < 0
    _one_line_error(lambda: toeplitz_covariance(c),
                    rf"^first_column must give a positive definite Toeplitz matrix, got smallest eigenvalue "
                    rf"{smallest:.3g} ")


@pytest.mark.parametrize("bad, pattern", [([], "non-empty 1-D"), ([[1.0]], "non-empty 1-D"),
                                          ([1.0, math.inf], "finite"), (["a"], "real array")])
def test_toeplitz_first_column_is_validated(bad, pattern):
    _one_line_error(lambda: toeplitz_covariance(bad), rf"^first_column must .*{pattern}")


def test_check_covariance_returns_a_valid_float64_matrix_itself():
    cov = ar1_covariance(3, 0.2)
    assert check_covariance(cov, 3) is cov
    got = check_covariance([[2, 1], [1, 2]], 2)
    assert got.dtype == np.float64 and got.tolist() == [[2.0, 1.0], [1.0, 2.0]]
    # symmetric to rounding: an asymmetry of one ulp passes
    nudged = cov.copy()
    nudged[0, 1] = np.nextafter(nudged[0, 1], 1.0)
    check_covariance(nudged, 3)


@pytest.mark.parametrize("matrix, pattern", [
    (np.eye(3), r"must have shape \(d, d\) = \(2, 2\), got \(3, 3\)"),
    (np.ones(2), r"must have shape \(d, d\) = \(2, 2\), got \(2,\)"),
    ([[1.0, np.nan], [np.nan, 1.0]], r"must contain only finite values, got nan at matrix\[0, 1\]"),
    ([[1.0, 0.5], [0.5 + 1e-6, 1.0]], r"must be symmetric, got matrix\[0, 1\] = 0.5 but matrix\[1, 0\] = 0.500001"),
    ([[1.0, 2.0], [2.0, 1.0]], r"must be positive definite, got smallest eigenvalue -1 \(largest 3\)"),
    ([[1.0, 1.0], [1.0, 1.0]], r"must be positive definite, got smallest eigenvalue"),
    (np.eye(2, dtype=complex), r"must be a real \(d, d\) array, got dtype complex128"),
])
def test_check_covariance_refuses_in_one_line_naming_the_argument(matrix, pattern):
    _one_line_error(lambda: check_covariance(matrix, 2), r"^matrix " + pattern)
    _one_line_error(lambda: check_covariance(matrix, 2, name="S"), r"^S must")


def test_covariance_from_text():
    assert COVARIANCE_KINDS == ("ar1", "toeplitz")
    np.testing.assert_array_equal(covariance_from_text("ar1:0.5", 4), ar1_covariance(4, 0.5))
    np.testing.assert_array_equal(covariance_from_text("ar1:-0.5,3", 4), ar1_covariance(4, -0.5, 3.0))
    np.testing.assert_array_equal(covariance_from_text("toeplitz:2,0.5", 4), toeplitz_covariance([2, 0.5, 0, 0]))
    assert not covariance_from_text("ar1:0.5", 4).flags.writeable  # cached: nobody may change it


@pytest.mark.parametrize("text, pattern", [
    ("ar2:0.5", r"must read 'ar1:RHO\[,SCALE\]' or 'toeplitz:C0,C1,...', got 'ar2:0.5'"),
    ("0.5", "must read"),
    ("ar1:half", "comma-separated numbers"),
    ("ar1:0.5,1,2", "one or two numbers"),
    ("ar1:1", r"rho must be in \(-1, 1\)"),
    ("toeplitz:1,0,0,0,0", "gives 5 lags, more than d = 4"),
    ("toeplitz:1,0.9", "smallest eigenvalue"),
])
def test_bad_text_is_refused_in_one_line(text, pattern):
    _one_line_error(lambda: covariance_from_text(text, 4), r"^covariance.*" + pattern)


# ------------------------------------------------------------------------ ProblemSpec cells


def test_a_default_spec_has_exactly_todays_cell_keys():
    keys = ["m", "k", "d", "sigma", "scale", "protocol", "n", "n_min", "cov_low", "cov_high", "dtype", "n_anchors",
            "anchor_points"]
    assert list(ProblemSpec(**BASE).to_cell()) == keys
    assert ProblemSpec(**BASE).covariance_matrices is None and ProblemSpec(**BASE).identity_covariance


def test_text_covariance_is_a_plain_cell_value_that_a_sweep_varies_over_a_grid():
    specs = [ProblemSpec(**BASE, covariance=f"ar1:{rho}") for rho in (0.0, 0.5, 0.9)]
    cells = [spec.to_cell() for spec in specs]
    assert [cell["covariance"] for cell in cells] == ["ar1:0.0", "ar1:0.5", "ar1:0.9"]
    for spec, cell, rho in zip(specs, cells, (0.0, 0.5, 0.9)):
        assert type(cell["covariance"]) is str
        back = ProblemSpec.from_cell(cell)
        assert back == spec and hash(back) == hash(spec)
        np.testing.assert_array_equal(back.covariance_matrices, np.stack([ar1_covariance(4, rho)] * 2))
        assert not back.identity_covariance
    assert len({spec.to_cell()["covariance"] for spec in specs}) == 3
    kept = CellSchema(keys={"m": "m", "d": "d", "covariance": "cov"}, fixed=dict(k=2, n=50, sigma=0.5, scale=1.0))
    assert specs[1].to_cell(kept) == {"m": 20, "d": 4, "cov": "ar1:0.5"}
    assert ProblemSpec.from_cell(specs[1].to_cell(kept), kept) == specs[1]
    fixed = CellSchema(keys={"m": "m"}, fixed=dict(k=2, d=4, n=50, sigma=0.5, scale=1.0, covariance="ar1:0.5"))
    assert ProblemSpec.from_cell(specs[1].to_cell(fixed), fixed) == specs[1]
    _one_line_error(lambda: specs[2].to_cell(fixed), r"^covariance='ar1:0.9' cannot be stored in this experiment's "
                    r"cells, which fix covariance='ar1:0.5'")
    no_key = CellSchema(keys={"m": "m"}, fixed=dict(k=2, d=4, n=50, sigma=0.5, scale=1.0))
    _one_line_error(lambda: specs[1].to_cell(no_key),
                    r"^covariance='ar1:0.5' cannot be stored in this experiment's cells")


def test_a_covariance_with_cov_low_or_cov_high_is_refused():
    for extra in (dict(cov_low=0.5), dict(cov_high=2.0), dict(cov_low=0.5, cov_high=2.0)):
        _one_line_error(lambda: ProblemSpec(**BASE, **extra, covariance="ar1:0.5"),
                        r"^give either covariance or cov_low/cov_high, not both")
    _one_line_error(lambda: ProblemSpec(**BASE, cov_high=2.0, covariance=np.eye(4)),
                    r"covariance=<array of shape \(4, 4\)> with cov_low=1.0, cov_high=2.0")


def test_matrices_are_kept_as_a_read_only_copy_and_never_enter_a_cell():
    cov = ar1_covariance(4, 0.3)
    spec = ProblemSpec(**BASE, covariance=cov)
    cov[0, 0] = 9.0  # the caller's array changes; the spec's does not
    assert spec.covariance[0, 0] == 1.0 and not spec.covariance.flags.writeable
    assert spec.covariance_matrices.shape == (2, 4, 4)
    assert spec == ProblemSpec(**BASE, covariance=ar1_covariance(4, 0.3))
    assert hash(spec) == hash(ProblemSpec(**BASE, covariance=ar1_covariance(4, 0.3)))
    assert spec != ProblemSpec(**BASE, covariance=ar1_covariance(4, 0.4))
    assert spec != ProblemSpec(**BASE, covariance="ar1:0.3")
    assert spec != ProblemSpec(**BASE)
    assert dataclasses.replace(spec, sigma=1.0).covariance_matrices.shape == (2, 4, 4)
    _one_line_error(spec.to_cell, r"^covariance given as matrices cannot be stored in a cell")
    per_cluster = np.stack([ar1_covariance(4, 0.3), toeplitz_covariance([2.0, 0.5, 0.0, 0.0])])
    np.testing.assert_array_equal(ProblemSpec(**BASE, covariance=per_cluster).covariance_matrices, per_cluster)


@pytest.mark.parametrize("covariance, pattern", [
    (np.eye(3), r"^covariance must have shape \(d, d\) = \(4, 4\), got \(3, 3\)"),
    (np.stack([np.eye(4)] * 3), r"^covariance must have shape \(d, d\) = \(4, 4\) or \(k, d, d\) = \(2, 4, 4\)"),
    (np.stack([np.eye(4), -np.eye(4)]), r"^covariance\[1\] must be positive definite"),
    ("ar1:1.2", r"^covariance 'ar1:1.2': rho must be in"),
])
def test_bad_covariances_of_a_spec_are_refused_in_one_line(covariance, pattern):
    _one_line_error(lambda: ProblemSpec(**BASE, covariance=covariance), pattern)


# ------------------------------------------------------------------------ generated rows


def test_generated_rows_have_the_requested_covariance_per_cluster():
    """Each cluster's sample covariance X_l^T X_l / N_l (known mean 0) is within 5 standard errors
    sqrt((S_ii S_jj + S_ij^2) / N_l) of S_l at every entry (a Gaussian's), 2 x 10 entries, and the
    other cluster's matrix is not (so a covariance applied to the wrong rows fails)."""
    covs = np.stack([ar1_covariance(4, 0.5), toeplitz_covariance([2.0, -0.6, 0.3, 0.0])])
    spec = ProblemSpec(m=20, k=2, n=1000, d=4, sigma=0.5, scale=1.0, covariance=covs)
    pb = spec.generate(np.random.default_rng(3))
    np.testing.assert_array_equal(pb.covariances, covs)
    for l in range(2):
        X = pb.X[pb.row_labels == l]
        sample = X.T @ X / X.shape[0]
        diag = np.diag(covs[l])
        se = np.sqrt((np.outer(diag, diag) + covs[l] ** 2) / X.shape[0])
        assert np.all(np.abs(sample - covs[l]) < 5 * se)
        assert np.any(np.abs(sample - covs[1 - l]) > 5 * se)


def test_text_covariance_transforms_the_default_draw_and_the_identity_reproduces_it():
    """Draw order unchanged: with "toeplitz:1" (the identity through the Cholesky path) the problem
    is the default one bit for bit, and with "ar1:0.5" X is the default X times the Cholesky
    factor's transpose, theta*, labels and noise the same."""
    base = ProblemSpec(**BASE).generate(np.random.default_rng(7))
    same = ProblemSpec(**BASE, covariance="toeplitz:1").generate(np.random.default_rng(7))
    for name in ("X", "y", "offsets", "labels", "theta_star"):
        np.testing.assert_array_equal(getattr(same, name), getattr(base, name))
    ar1 = ProblemSpec(**BASE, covariance="ar1:0.5").generate(np.random.default_rng(7))
    chol = np.linalg.cholesky(ar1_covariance(4, 0.5))
    np.testing.assert_allclose(ar1.X, base.X @ chol.T, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(ar1.theta_star, base.theta_star)
    signal = np.einsum("nd,nd->n", ar1.X, ar1.theta_star[ar1.row_labels])
    np.testing.assert_allclose(ar1.y - signal, base.y - np.einsum("nd,nd->n", base.X, base.theta_star[base.row_labels]),
                               atol=1e-12)


def test_anchors_and_memory_follow_the_covariance():
    spec = ProblemSpec(**BASE, covariance="ar1:0.5", anchor_mode="per_cluster", anchor_points=80)
    pb, anchors = spec.with_anchors(spec.generate(np.random.default_rng(0)), np.random.default_rng(1))
    np.testing.assert_array_equal(pb.covariances, spec.covariance_matrices)
    assert pb.sizes[anchors].min() >= 80
    default = dataclasses.replace(spec, covariance=None)
    assert spec.memory_bytes() - default.memory_bytes() == 24 * 2 * 4 * 4
