"""Bad and edge inputs through the public Python API, as one table.

Every bad input must raise a ``TypeError`` or ``ValueError`` whose message is one line naming
the parameter, raised by mixreg's own validation (the last traceback frame is in the mixreg
package), never an error from inside numpy, numba or scipy.  Every legal edge input (``k = 1``,
``n_i = 1``, ``sigma = 0``, ``d = 1``, ...) must run and give finite results, and a degenerate
problem must be built with a :class:`DegenerateProblemWarning` that names what is degenerate.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from _fuzz import check_refusal
from mixreg.algorithms import fedx, ifca, initial_parameters, moment_descent
from mixreg.baselines import known_label_least_squares
from mixreg.metrics import (
    best_permutation,
    matched_max_distance,
    matched_mean_distance,
    misclustering_rate,
    nearest_truth_distance,
    oracle_ls_floor,
    pairwise_distances,
)
from mixreg.problems import (
    DegenerateProblemWarning,
    Problem,
    ProblemSpec,
    add_anchors,
    client_sizes,
    diagonal_covariances,
    make_labels,
    make_problem,
    make_problem_from_parameters,
    make_theta_star,
    size_law,
)



def rng(seed=0):
    return np.random.default_rng(seed)


# a small valid hand-built problem: 3 clients of 2 rows each, 2 clusters, d = 2
X0 = rng(0).standard_normal((6, 2))
THETA0 = np.array([[1.0, 0.0], [0.0, 1.0]])
LABELS0 = np.array([0, 0, 1])
Y0 = np.concatenate([X0[:4] @ THETA0[0], X0[4:] @ THETA0[1]])
BASE = dict(X=X0, y=Y0, offsets=np.array([0, 2, 4, 6]), labels=LABELS0, theta_star=THETA0, sigma=0.1)


def problem(**change):
    return Problem(**{**BASE, **change})


def with_nan(a, index):
    a = np.array(a, dtype=float)
    a[index] = np.nan
    return a


PB = make_problem(m=12, k=2, n=6, d=3, sigma=0.1, scale=2.0, protocol="gaussian", rng=rng(1))
ANCHOR_SPEC = ProblemSpec(m=60, k=2, d=3, sigma=0.1, scale=3.0, protocol="gaussian", n=4,
                          anchor_mode="per_cluster", anchor_points=40)
APB, ANCHORS = ANCHOR_SPEC.with_anchors(ANCHOR_SPEC.generate(rng(2)), rng(3))
HAT = np.zeros((4, 2, 3))
STAR = np.eye(2, 3)
GEN = dict(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0)  # make_problem without rng


def bad(id, call, exc, match, xfail=None):
    marks = () if xfail is None else pytest.mark.xfail(strict=True, reason=xfail)
    return pytest.param(call, exc, match, id=id, marks=marks)


BAD = [
    # ------------------------------------------------------------- Problem constructor: X
    bad("X-int", lambda: problem(X=np.arange(12).reshape(6, 2)), TypeError, r"X must be float32 or float64, got int64.*cast"),
    bad("X-float16", lambda: problem(X=X0.astype(np.float16)), TypeError, r"X must be float32 or float64, got float16"),
    bad("X-complex", lambda: problem(X=X0.astype(complex)), TypeError, r"X must be float32 or float64, got complex128"),
    bad("X-bool", lambda: problem(X=X0 > 0), TypeError, r"X must be float32 or float64, got bool"),
    bad("X-object", lambda: problem(X=None), TypeError, r"X must be float32 or float64, got object"),
    bad("X-ragged", lambda: problem(X=[[1.0, 2.0], [3.0]]), ValueError, r"X must be an array"),
    bad("X-1d", lambda: problem(X=X0.ravel()), ValueError, r"X must be 2-D of shape \(N, d\), got shape \(12,\)"),
    bad("X-3d", lambda: problem(X=X0[:, :, None]), ValueError, r"X must be 2-D"),
    bad("X-no-columns", lambda: problem(X=np.zeros((6, 0))), ValueError, r"X must have at least one column"),
    bad("X-nan", lambda: problem(X=with_nan(X0, (3, 1))), ValueError, r"X must contain only finite values, got nan at X\[3, 1\]"),
    bad("X-inf", lambda: problem(X=np.where(X0 > 1, np.inf, X0)), ValueError, r"X must contain only finite values, got inf"),
    bad("X-wrong-d", lambda: problem(X=np.ones((6, 3))), ValueError, r"theta_star must have shape \(k, d\) .*d = X.shape\[1\] = 3"),
    # ------------------------------------------------------------- Problem constructor: y
    bad("y-int", lambda: problem(y=np.arange(6)), TypeError, r"y must be float32 or float64, got int64"),
    bad("y-float16", lambda: problem(y=Y0.astype(np.float16)), TypeError, r"y must be float32 or float64, got float16"),
    bad("y-other-dtype", lambda: problem(y=Y0.astype(np.float32)), TypeError, r"y must have the dtype of X \(float64\), got float32"),
    bad("y-2d", lambda: problem(y=Y0[:, None]), ValueError, r"y must be 1-D"),
    bad("y-short", lambda: problem(y=Y0[:5]), ValueError, r"y must have length N = X.shape\[0\] = 6, got 5"),
    bad("y-nan", lambda: problem(y=with_nan(Y0, 5)), ValueError, r"y must contain only finite values, got nan at y\[5\]"),
    bad("y-inf", lambda: problem(y=np.full(6, -np.inf)), ValueError, r"y must contain only finite values, got -inf"),
    # ------------------------------------------------------------- Problem constructor: offsets
    bad("offsets-past-end", lambda: problem(offsets=[0, 2, 4, 9]), ValueError, r"offsets must end at N = X.shape\[0\] = 6, got offsets\[3\] = 9"),
    bad("offsets-short-of-end", lambda: problem(offsets=[0, 2, 4, 5]), ValueError, r"offsets must end at N"),
    bad("offsets-not-from-0", lambda: problem(offsets=[1, 2, 4, 6]), ValueError, r"offsets must start at 0, got offsets\[0\] = 1"),
    bad("offsets-empty-client", lambda: problem(offsets=[0, 3, 3, 6]), ValueError, r"offsets must be strictly increasing .*client 1 with 0 rows"),
    bad("offsets-decreasing", lambda: problem(offsets=[0, 4, 2, 6]), ValueError, r"offsets must be strictly increasing .*client 1 with -2 rows"),
    bad("offsets-float", lambda: problem(offsets=[0.0, 2.0, 4.0, 6.0]), TypeError, r"offsets must hold integers, got dtype float64"),
    bad("offsets-wrong-length", lambda: problem(offsets=[0, 6]), ValueError, r"offsets must have length m \+ 1 = 4 \(m = len\(labels\) = 3\), got 2"),
    bad("offsets-2d", lambda: problem(offsets=[[0, 2, 4, 6]]), ValueError, r"offsets must be a 1-D integer array"),
    # ------------------------------------------------------------- Problem constructor: labels
    bad("labels-too-large", lambda: problem(labels=[0, 1, 2]), ValueError, r"labels must lie in \[0, k\) = \[0, 2\), got values in \[0, 2\]"),
    bad("labels-negative", lambda: problem(labels=[0, -1, 1]), ValueError, r"labels must lie in \[0, k\)"),
    bad("labels-float", lambda: problem(labels=[0.0, 0.0, 1.0]), TypeError, r"labels must hold integers, got dtype float64"),
    bad("labels-empty", lambda: problem(labels=[]), ValueError, r"labels must hold at least one client"),
    bad("labels-2d", lambda: problem(labels=[[0, 0, 1]]), ValueError, r"labels must be a 1-D integer array"),
    # ------------------------------------------------------------- Problem constructor: truth, sigma, ...
    bad("theta-nan", lambda: problem(theta_star=with_nan(THETA0, (1, 0))), ValueError, r"theta_star must contain only finite values"),
    bad("theta-1d", lambda: problem(theta_star=np.ones(2)), ValueError, r"theta_star must have shape \(\*, \*\)"),
    bad("theta-no-rows", lambda: problem(theta_star=np.zeros((0, 2))), ValueError, r"theta_star must have shape \(k, d\) with k >= 1"),
    bad("theta-complex", lambda: problem(theta_star=THETA0 + 0j), TypeError, r"theta_star must be a real float64 array"),
    bad("sigma-negative", lambda: problem(sigma=-0.1), ValueError, r"sigma must be in \[0.0, inf\), got -0.1"),
    bad("sigma-nan", lambda: problem(sigma=float("nan")), ValueError, r"sigma must be finite, got nan"),
    bad("sigma-str", lambda: problem(sigma="0.1"), TypeError, r"sigma must be a real number"),
    bad("covariances-shape", lambda: problem(covariances=np.eye(2)), ValueError, r"covariances must have shape \(2, 2, 2\)"),
    bad("covariances-nan", lambda: problem(covariances=with_nan(np.stack([np.eye(2)] * 2), (0, 0, 0))), ValueError, r"covariances must contain only finite"),
    bad("protocol-unknown", lambda: problem(protocol="mine"), ValueError, r"protocol must be one of .*'given'; got 'mine'"),
    bad("client-index", lambda: problem().client(3), ValueError, r"i must be in \[0, 2\], got 3"),
    bad("astype-int", lambda: problem().astype(int), ValueError, r"dtype must be float32 or float64, got int64"),
    bad("astype-float32-overflow", lambda: problem(X=X0 * 1e300, y=Y0 * 1e300).astype(np.float32), ValueError,
        r"dtype=float32 cannot hold this problem's data: X must contain only finite values"),
    # ------------------------------------------------------------- Problem.from_arrays
    bad("from_arrays-zero-size", lambda: Problem.from_arrays(X0, Y0, [3, 0, 3], LABELS0, THETA0, sigma=0.1), ValueError, r"offsets_or_sizes \(client sizes\) must be >= 1, got 0 for client 1"),
    bad("from_arrays-wrong-length", lambda: Problem.from_arrays(X0, Y0, [6], LABELS0, THETA0, sigma=0.1), ValueError, r"offsets_or_sizes must have length m = len\(labels\) = 3 \(sizes\) or m \+ 1 = 4"),
    bad("from_arrays-sizes-sum", lambda: Problem.from_arrays(X0, Y0, [2, 2, 3], LABELS0, THETA0, sigma=0.1), ValueError, r"offsets must end at N = X.shape\[0\] = 6, got offsets\[3\] = 7"),
    bad("from_arrays-float-sizes", lambda: Problem.from_arrays(X0, Y0, [2.0, 2.0, 2.0], LABELS0, THETA0, sigma=0.1), TypeError, r"offsets_or_sizes must hold integers"),
    bad("from_arrays-int-X", lambda: Problem.from_arrays(np.ones((6, 2), int), Y0, [2, 2, 2], LABELS0, THETA0, sigma=0.1), TypeError, r"X must be float32 or float64, got int64"),
    bad("from_arrays-labels-float", lambda: Problem.from_arrays(X0, Y0, [2, 2, 2], [0.5, 0, 1], THETA0, sigma=0.1), TypeError, r"labels must hold integers"),
    # ------------------------------------------------------------- generators
    bad("make_problem-rng-None", lambda: make_problem(**GEN, rng=None), TypeError, r"rng must be a numpy.random.Generator \(e.g. numpy.random.default_rng\(seed\)\), got None"),
    bad("make_problem-rng-int", lambda: make_problem(**GEN, rng=0), TypeError, r"rng must be a numpy.random.Generator .*got 0 \(int\)"),
    bad("make_problem-rng-RandomState", lambda: make_problem(**GEN, rng=np.random.RandomState(0)), TypeError, r"rng must be a numpy.random.Generator .*RandomState"),
    bad("make_problem-m-float", lambda: make_problem(**{**GEN, "m": 4.0}, rng=rng()), TypeError, r"m must be an integer, got 4.0"),
    bad("make_problem-m-bool", lambda: make_problem(**{**GEN, "m": True}, rng=rng()), TypeError, r"m must be an integer"),
    bad("make_problem-d-zero", lambda: make_problem(**{**GEN, "d": np.int64(0)}, rng=rng()), ValueError, r"d must be in \[1, inf\), got 0"),
    bad("make_problem-k-over-m", lambda: make_problem(**{**GEN, "k": 5}, rng=rng()), ValueError, r"k must be at most m"),
    bad("make_problem-dtype-float16", lambda: make_problem(**GEN, rng=rng(), dtype=np.float16), ValueError, r"dtype must be float32 or float64, got float16"),
    bad("make_problem-sigma-inf", lambda: make_problem(**{**GEN, "sigma": np.inf}, rng=rng()), ValueError, r"sigma must be finite"),
    bad("make_problem-n-float-array", lambda: make_problem(**{**GEN, "n": np.array([1.0, 2, 3, 4])}, rng=rng()), ValueError, r"n must hold integers >= 1"),
    bad("make_problem-cov-not-pd", lambda: make_problem(**GEN, rng=rng(), covariances=np.stack([np.diag([1.0, -1.0])] * 2)), ValueError, r"covariances must be positive definite"),
    bad("make_theta_star-rng-None", lambda: make_theta_star(2, 3, 1.0, rng=None), TypeError, r"rng must be a numpy.random.Generator"),
    bad("make_theta_star-scale-inf", lambda: make_theta_star(2, 3, np.inf, rng=rng()), ValueError, r"scale must be finite, got inf"),
    bad("make_theta_star-scale-nan", lambda: make_theta_star(2, 3, np.nan, rng=rng()), ValueError, r"scale must be finite, got nan"),
    bad("make_theta_star-scale-overflow", lambda: make_theta_star(5, 1, 1e308, protocol="gaussian", rng=rng()), ValueError, r"scale=1e\+308 is too large for protocol='gaussian'"),
    bad("make_theta_star-protocol", lambda: make_theta_star(2, 3, 1.0, protocol="ifca", rng=rng()), ValueError, r"protocol must be one of"),
    bad("make_labels-rng-None", lambda: make_labels(4, 2, proportions=[0.5, 0.5]), TypeError, r"rng must be a numpy.random.Generator"),
    bad("make_labels-rng-int", lambda: make_labels(4, 2, proportions=[0.5, 0.5], rng=7), TypeError, r"rng must be .*got 7 \(int\)"),
    bad("make_labels-negative-proportion", lambda: make_labels(4, 2, proportions=[-0.5, 1.5], rng=rng()), ValueError, r"proportions must be non-negative and sum to 1"),
    bad("make_labels-proportions-nan", lambda: make_labels(4, 2, proportions=[np.nan, 1.0], rng=rng()), ValueError, r"proportions must contain only finite"),
    bad("from_parameters-rng-int", lambda: make_problem_from_parameters(THETA0, LABELS0, 2, 0.1, rng=1), TypeError, r"rng must be a numpy.random.Generator"),
    bad("from_parameters-labels-float", lambda: make_problem_from_parameters(THETA0, [0.0, 1.0], 2, 0.1, rng=rng()), ValueError, r"labels must be a 1-D integer array"),
    bad("from_parameters-theta-nan", lambda: make_problem_from_parameters(with_nan(THETA0, 0), LABELS0, 2, 0.1, rng=rng()), ValueError, r"theta_star must contain only finite"),
    bad("from_parameters-theta-huge", lambda: make_problem_from_parameters(np.full((1, 200), 1e308), [0], 4, 0.1, rng=rng()), ValueError, r"theta_star \(max \|entry\| 1e\+308\) is too large"),
    bad("from_parameters-float32-overflow", lambda: make_problem_from_parameters(np.full((1, 2), 1e39), [0], 4, 0.1, rng=rng(), dtype="float32"), ValueError, r"theta_star .* is too large: .*not finite in float32"),
    bad("client_sizes-rng-None", lambda: client_sizes(5, "zipf", rng=None, n_max=10), TypeError, r"rng must be a numpy.random.Generator"),
    bad("client_sizes-law", lambda: client_sizes(5, "uniform", rng=rng()), ValueError, r"law must be one of"),
    bad("diagonal_covariances-rng-int", lambda: diagonal_covariances(2, 3, rng=3), TypeError, r"rng must be a numpy.random.Generator"),
    bad("diagonal_covariances-low-zero", lambda: diagonal_covariances(2, 3, rng=rng(), low=0.0), ValueError, r"low must be in \(0.0, inf\)"),
    bad("size_law-unreachable-mean", lambda: size_law("pareto", n_max=10, mean=9.9), ValueError, r"mean=9.9 is not reachable by law='pareto'"),
    bad("size_law-unknown-parameter", lambda: size_law("zipf", alpha=2.0), ValueError, r"unknown parameter\(s\) \['alpha'\] for law='zipf'"),
    bad("size_law-n_max-below-n_min", lambda: size_law("zipf", n_min=5, n_max=2), ValueError, r"n_max must be in \[5, 10000004\], got 2"),
    bad("size_law-support-too-large", lambda: size_law("zipf", n_max=10**12), ValueError, r"n_max must be in \[1, 10000000\], got 1000000000000"),
    bad("size_law-sample-rng-None", lambda: size_law("zipf", n_max=10).sample(3, rng=None), TypeError, r"rng must be a numpy.random.Generator"),
    # ------------------------------------------------------------- ProblemSpec, anchors
    bad("spec-k-over-m", lambda: ProblemSpec(m=2, k=3, n=2, d=2, sigma=0.1, scale=1.0), ValueError, r"k must be in \[1, 2\], got 3"),
    bad("spec-n-and-law", lambda: ProblemSpec(m=2, k=1, n=2, d=2, sigma=0.1, scale=1.0, size_law="zipf"), ValueError, r"give exactly one of n .* and size_law"),
    bad("spec-dtype", lambda: ProblemSpec(m=2, k=1, n=2, d=2, sigma=0.1, scale=1.0, dtype="float16"), ValueError, r"dtype must be float32 or float64"),
    bad("spec-scale-nan", lambda: ProblemSpec(m=2, k=1, n=2, d=2, sigma=0.1, scale=float("nan")), ValueError, r"scale must be finite"),
    bad("spec-p_min-str", lambda: ProblemSpec(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0, p_min="0.1"), TypeError, r"p_min must be a real number, got '0.1'"),
    bad("spec-p_min-too-large", lambda: ProblemSpec(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0, p_min=0.9), ValueError, r"p_min must be in \(0, 1/k\] = \(0, 0.5\], got 0.9"),
    bad("spec-from_cell-missing-keys", lambda: ProblemSpec.from_cell({"m": 4, "n": 2}), ValueError, r"cell must hold the key\(s\) \[.*'k'.*\] of a ProblemSpec"),
    bad("spec-generate-rng-int", lambda: ProblemSpec(m=2, k=1, n=2, d=2, sigma=0.1, scale=1.0).generate(0), TypeError, r"rng must be a numpy.random.Generator .*got 0 \(int\)"),
    bad("add_anchors-rng-None", lambda: add_anchors(PB, 5, mode="per_cluster", rng=None), TypeError, r"rng must be a numpy.random.Generator"),
    bad("add_anchors-not-a-problem", lambda: add_anchors(BASE, 5, mode="per_cluster", rng=rng()), TypeError, r"problem must be a mixreg Problem, got dict"),
    bad("add_anchors-mode", lambda: add_anchors(PB, 5, mode="all", rng=rng()), ValueError, r"mode must be one of"),
    bad("add_anchors-n_points", lambda: add_anchors(PB, 1, mode="per_cluster", rng=rng()), ValueError, r"n_points must be in \[2, inf\), got 1"),
    # ------------------------------------------------------------- initial_parameters, drivers
    bad("init-rng-int", lambda: initial_parameters(PB, 2, "gaussian", rng=0), TypeError, r"rng must be a numpy.random.Generator .*got 0 \(int\)"),
    bad("init-rng-None", lambda: initial_parameters(PB, 2, "official"), ValueError, r"rng is required for method='official'"),
    bad("init-method", lambda: initial_parameters(PB, 2, "kmeans", rng=rng()), ValueError, r"method must be one of"),
    bad("init-close-k1", lambda: initial_parameters(make_problem(4, 1, 3, 2, 0.1, 1.0, rng=rng()), 2, "close", rng=rng()), ValueError, r"method='close' needs a finite separation .*k=1"),
    bad("init-scale-negative", lambda: initial_parameters(PB, 2, "gaussian", rng=rng(), scale=-1.0), ValueError, r"scale must be in \[0.0, inf\)"),
    bad("init-n_replicas-zero", lambda: initial_parameters(PB, 0, "truth"), ValueError, r"n_replicas must be in \[1, inf\), got 0"),
    bad("ifca-not-a-problem", lambda: ifca(BASE, HAT, 0.1), TypeError, r"problem must be a mixreg Problem"),
    bad("ifca-init-shape", lambda: ifca(PB, np.zeros((2, 2, 4)), 0.1), ValueError, r"init must have shape \(B, k, d\) or \(k, d\) with d=3"),
    bad("ifca-init-nan", lambda: ifca(PB, with_nan(HAT, 0), 0.1), ValueError, r"init must contain only finite"),
    bad("ifca-step-zero", lambda: ifca(PB, HAT, 0.0), ValueError, r"step_size must be finite and > 0"),
    bad("ifca-step-nan", lambda: ifca(PB, HAT, np.nan), ValueError, r"step_size must be finite and > 0"),
    bad("ifca-step-shape", lambda: ifca(PB, HAT, [0.1, 0.2]), ValueError, r"step_size must be a scalar or an array of shape \(B,\)=\(4,\)"),
    bad("ifca-n_rounds-zero", lambda: ifca(PB, HAT, 0.1, n_rounds=0), ValueError, r"n_rounds must be in \[1, inf\)"),
    bad("ifca-option", lambda: ifca(PB, HAT, 0.1, option="median"), ValueError, r"option must be one of"),
    bad("ifca-participation-zero", lambda: ifca(PB, HAT, 0.1, participation=0.0, rng=rng()), ValueError, r"participation must be in \(0.0, 1.0\]"),
    bad("ifca-participation-rng-int", lambda: ifca(PB, HAT, 0.1, participation=0.5, rng=0), TypeError, r"rng must be a numpy.random.Generator"),
    bad("ifca-resample-rng-int", lambda: ifca(PB, HAT, 0.1, n_rounds=1, resample=True, rng=3), TypeError, r"rng must be a numpy.random.Generator"),
    bad("fedx-local_solver", lambda: fedx(PB, HAT, 0.1, local_solver="sgd"), ValueError, r"local_solver must be one of"),
    bad("fedx-step-negative", lambda: fedx(PB, HAT, -0.1), ValueError, r"step_size must be finite and > 0"),
    bad("fedx-local_steps-zero", lambda: fedx(PB, HAT, 0.1, local_steps=0), ValueError, r"local_steps must be in \[1, inf\)"),
    bad("moment_descent-anchor-out-of-range", lambda: moment_descent(APB, [0, APB.m], 2, rng=rng()), ValueError, r"anchors"),
    bad("moment_descent-k-over-anchors", lambda: moment_descent(APB, ANCHORS, 3, rng=rng()), ValueError, r"k must be"),
    bad("moment_descent-rng-None", lambda: moment_descent(APB, ANCHORS, 2, rng=None), TypeError, r"rng must be a numpy.random.Generator"),
    bad("moment_descent-rng-int", lambda: moment_descent(APB, ANCHORS, 2, rng=5), TypeError, r"rng must be a numpy.random.Generator"),
    bad("known_label_ls-not-a-problem", lambda: known_label_least_squares(BASE), TypeError, r"problem must be a mixreg Problem"),
    # ------------------------------------------------------------- metrics
    bad("pairwise-d-mismatch", lambda: pairwise_distances(np.zeros((2, 4)), STAR), ValueError, r"theta_hat must have d = 3 columns"),
    bad("nearest-theta_star-nan", lambda: nearest_truth_distance(HAT, with_nan(STAR, 0)), ValueError, r"theta_star must contain only finite"),
    bad("matched_mean-k-mismatch", lambda: matched_mean_distance(np.zeros((3, 3)), STAR), ValueError, r"theta_hat must have k = 2 estimates"),
    bad("matched_max-str", lambda: matched_max_distance("a", STAR), ValueError, r"theta_hat must be a real-valued array"),
    bad("best_permutation-objective", lambda: best_permutation(HAT, STAR, objective="median"), ValueError, r"objective must be one of"),
    bad("misclustering-length", lambda: misclustering_rate([0, 1, 1], [0, 1], 2), ValueError, r"assignments|labels"),
    bad("misclustering-k-zero", lambda: misclustering_rate([0, 0], [0, 0], 0), ValueError, r"k must be"),
    bad("oracle_floor-sigma-negative", lambda: oracle_ls_floor(-1.0, 3, [10, 10]), ValueError, r"sigma"),
    bad("oracle_floor-d-zero", lambda: oracle_ls_floor(1.0, 0, [10, 10]), ValueError, r"d must be"),
]


@pytest.mark.parametrize("call,exc,match", BAD)
def test_bad_input_raises_a_one_line_error_naming_the_parameter(call, exc, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateProblemWarning)
        with pytest.raises((TypeError, ValueError)) as info:
            call()
    check_refusal(info, exc, match)


# ---------------------------------------------------------------------------------- degenerate


def degenerate(id, build, reason):
    return pytest.param(build, reason, id=id)


DEGENERATE = [
    degenerate("duplicate-theta", lambda: problem(theta_star=np.ones((2, 2))), r"^duplicate theta\* \(separation 0\)$"),
    degenerate("official-d1-k3", lambda: make_problem(m=6, k=3, n=2, d=1, sigma=0.1, scale=1.0, rng=rng()),
               r"^duplicate theta\* \(separation 0\)"),
    degenerate("empty-cluster", lambda: make_problem(m=6, k=2, n=2, d=2, sigma=0.1, scale=1.0, rng=rng(),
                                                     proportions=[0.0, 1.0]), r"^empty cluster 0$"),
    degenerate("empty-clusters", lambda: problem(theta_star=np.eye(4, 2) + np.arange(4)[:, None], labels=[1, 1, 1]),
               r"^empty clusters 0, 2, 3$"),
    degenerate("overflowing-separation", lambda: make_problem(m=4, k=2, n=2, d=2, sigma=0.1, scale=1e300, rng=rng(3)),
               r"non-finite separation"),
]


@pytest.mark.parametrize("build,reason", DEGENERATE)
def test_a_degenerate_problem_warns_and_says_why(build, reason):
    with pytest.warns(DegenerateProblemWarning, match="degenerate problem: ") as record:
        pb = build()
    assert re.search(reason, pb.degenerate), pb.degenerate
    assert len([w for w in record if issubclass(w.category, DegenerateProblemWarning)]) == 1
    assert record[0].filename == __file__  # attributed to the caller, not to mixreg
    pb.summary()  # every reported quantity can be computed (snr may be inf or 0)


def test_derived_problems_are_not_warned_about_twice():
    with pytest.warns(DegenerateProblemWarning):
        pb = make_problem(m=6, k=2, n=2, d=2, sigma=0.1, scale=1.0, rng=rng(), proportions=[0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateProblemWarning)
        assert pb.astype(np.float32).degenerate == "empty cluster 0"
        grown, _ = add_anchors(pb, 5, mode="random", n_anchors=2, rng=rng())
        assert grown.degenerate == "empty cluster 0"
        # a sound problem whose anchors all fall in one cluster is not degenerate either
        add_anchors(PB, 9, mode="random", n_anchors=1, rng=rng())


def test_known_label_least_squares_returns_nan_for_an_empty_cluster():
    with pytest.warns(DegenerateProblemWarning, match="empty cluster 0"):
        pb = make_problem(m=6, k=2, n=5, d=2, sigma=0.1, scale=1.0, rng=rng(), proportions=[0.0, 1.0])
    theta = known_label_least_squares(pb)
    assert np.isnan(theta[0]).all() and np.isfinite(theta[1]).all()


# ---------------------------------------------------------------------------------- legal edges


def _finite(*values):
    for v in values:
        assert np.all(np.isfinite(np.asarray(v, dtype=float))), v


def _run_all_algorithms(pb):
    r = rng(5)
    res = ifca(pb, initial_parameters(pb, 2, "gaussian", rng=r), 0.1, n_rounds=5)
    _finite(res.theta, res.train_loss)
    assert not res.diverged.any()
    res = fedx(pb, initial_parameters(pb, 2, "truth"), 0.1, n_rounds=5)
    _finite(res.theta, res.train_loss)
    _finite(matched_mean_distance(res.theta, pb.theta_star), matched_max_distance(res.theta, pb.theta_star),
            nearest_truth_distance(res.theta, pb.theta_star),
            misclustering_rate(res.assignments, pb.labels, pb.k))
    _finite(known_label_least_squares(pb))
    return res


EDGES = [
    pytest.param(lambda: make_problem(m=5, k=1, n=4, d=3, sigma=0.1, scale=1.0, rng=rng()), id="k=1"),
    pytest.param(lambda: make_problem(m=1, k=1, n=1, d=1, sigma=0.1, scale=1.0, rng=rng()), id="m=1-n=1-d=1"),
    pytest.param(lambda: make_problem(m=8, k=2, n=1, d=3, sigma=0.1, scale=2.0, protocol="gaussian", rng=rng()),
                 id="n_i=1"),
    pytest.param(lambda: make_problem(m=8, k=2, n=4, d=3, sigma=0.0, scale=2.0, protocol="gaussian", rng=rng()),
                 id="sigma=0"),
    pytest.param(lambda: make_problem(m=8, k=2, n=4, d=1, sigma=0.1, scale=2.0, protocol="gaussian", rng=rng()),
                 id="d=1"),
    pytest.param(lambda: make_problem(m=8, k=2, n=4, d=3, sigma=0.1, scale=2.0, protocol="paper", rng=rng(),
                                      dtype="float32"), id="float32"),
    pytest.param(lambda: make_problem(m=8, k=2, n=4, d=3, sigma=0.1, scale=0.0, protocol="gaussian", rng=rng()),
                 id="scale=0", marks=pytest.mark.filterwarnings("ignore::mixreg.problems.DegenerateProblemWarning")),
    pytest.param(lambda: ProblemSpec(m=20, k=2, d=2, sigma=0.1, scale=1.0, size_law="zipf", size_mean=2.0, n_max=10)
                 .generate(rng()), id="spec-zipf-sizes"),
    pytest.param(lambda: Problem.from_arrays(X0, Y0, [0, 1, 4, 6], LABELS0, THETA0, sigma=0.0), id="from_arrays-offsets"),
    pytest.param(lambda: Problem.from_arrays(X0.tolist(), Y0.tolist(), np.array([2, 2, 2], np.uint8), LABELS0.astype(np.int8),
                                             THETA0.astype(int), sigma=np.float32(0.1)), id="from_arrays-lists"),
    pytest.param(lambda: problem(X=np.asfortranarray(X0)), id="X-fortran-order"),
    pytest.param(lambda: problem(X=X0.astype(">f8"), y=Y0.astype(">f8")), id="big-endian"),
]


@pytest.mark.parametrize("build", EDGES)
def test_legal_edge_inputs_run_and_give_finite_results(build):
    pb = build()
    assert pb.X.flags.c_contiguous and pb.X.dtype.isnative and pb.X.dtype == pb.y.dtype
    assert pb.offsets.dtype == pb.labels.dtype == np.int64 and pb.theta_star.dtype == np.float64
    s = pb.summary()
    assert s["separation"] > 0 or pb.degenerate
    _run_all_algorithms(pb)
    if pb.k == 1:
        _finite(initial_parameters(pb, 2, "official", rng=rng()))
    else:
        _finite(initial_parameters(pb, 2, "close", rng=rng()))


def test_moment_descent_on_a_legal_problem_runs_and_is_finite():
    res = moment_descent(APB, ANCHORS, 2, rng=rng(), anchor_sampling="reuse")
    _finite(res.centres)
