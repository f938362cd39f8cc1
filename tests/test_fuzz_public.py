"""Bad and edge inputs of the rest of the public API: theory, statistics, metrics, problem specs
and the Monte Carlo engine, as one table per family.

Every bad input must raise a ``TypeError`` or ``ValueError`` whose message is one line naming the
argument, raised by mixreg's own validation (the last traceback frame is in the mixreg package),
never an error from inside numpy or Python (``OverflowError``, ``KeyError``, ``AttributeError``).
Every legal edge input (a threshold of 0, ``k = 1``, ``d = 1``, one point, values at the ends of
the float range) must give the right value: an exact one where it is known.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from _fuzz import check_refusal
from _toy_trials import least_squares_trial
from mixreg.metrics import matched_mean_distance, misclustering_rate, oracle_ls_floor, pairwise_distances
from mixreg.montecarlo import Sweep, check_fits, dry_run, run_sweep
from mixreg.montecarlo.reader import read_results
from mixreg.problems import ProblemSpec, make_problem
from mixreg.stats import SlopeFit, fit_slope, group_rates, slope_verdict, wilson_interval
from mixreg.theory import (
    chi_square_from_uniform,
    crossing_draws,
    draws_interval,
    fit_log_constant,
    half_crossing,
    ifca_contraction_factors,
    ifca_error_floor,
    ifca_one_round_bound,
    ifca_safe_step_size,
    ifca_separation_threshold,
    ifca_stationary_error,
    ifca_step_size,
    lemma1_exponent,
    ls_error_moments,
    ls_oracle_success_probability,
    ls_points_needed,
    misclustering_exponent,
    misclustering_exponent_at_truth,
    misclustering_probability,
    population_basin_edge,
    stratified_homogeneity_test,
    sxy_axis_exponent,
    sxy_bound_shape,
    sxy_contraction_constant,
    sxy_floor_term,
    sxy_nu,
    sxy_nu_terms,
    sxy_phase2_bound,
    sxy_phase2_fixed_point,
    sxy_phase2_recursion,
    sxy_predicted_contraction,
    sxy_rounds_to_floor,
)

NAN = float("nan")
CELLS = ({"R": 1.0, "noise": 0.1},)
FIT = SlopeFit(slope=1.0, intercept=0.0, low=0.5, high=1.5, level=0.95, n_points=3, n_boot=10)


def rng(seed=0):
    return np.random.default_rng(seed)


def sweep(**change):
    args = dict(name="fuzz", trial_fn=least_squares_trial, cells=CELLS, n_trials=2, root_seed=1, config={})
    return Sweep(**{**args, **change})


def spec(**change):
    return ProblemSpec(**{**dict(m=4, k=2, n=3, d=2, sigma=0.1, scale=1.0), **change})


def bad(id, call, exc, match):
    return pytest.param(call, exc, match, id=id)


BAD = [
    # ------------------------------------------------------------- theory: IFCA
    bad("ifca_step_size-p-0", lambda: ifca_step_size(0), ValueError, r"p must be in \(0\.0, 1\.0\], got 0\.0"),
    bad("ifca_step_size-p-nan", lambda: ifca_step_size(NAN), ValueError, r"p must be finite, got nan"),
    bad("ifca_step_size-p-above-1", lambda: ifca_step_size(2.0), ValueError, r"p must be in \(0\.0, 1\.0\], got 2\.0"),
    bad("ifca_step_size-p-text", lambda: ifca_step_size("a"), TypeError, r"p must be a real number, got 'a' \(str\)"),
    bad("ifca_step_size-c1-0", lambda: ifca_step_size(0.5, 0), ValueError, r"c1 must be in \(0\.0, inf\), got 0\.0"),
    bad("ifca_safe_step_size-p_max-0", lambda: ifca_safe_step_size(0), ValueError, r"p_max must be in \(0\.0, 1\.0\]"),
    bad("contraction-step-0", lambda: ifca_contraction_factors(0, [0.5, 0.5]), ValueError,
        r"step_size must be in \(0\.0, inf\), got 0\.0"),
    bad("contraction-proportions-negative", lambda: ifca_contraction_factors(0.5, [-0.5, 1.5]), ValueError,
        r"proportions must lie in \(0, 1\], got \[-0\.5, 1\.5\]"),
    bad("contraction-proportions-empty", lambda: ifca_contraction_factors(0.5, []), ValueError,
        r"proportions must be a non-empty 1-d array"),
    bad("stationary-sigma-negative", lambda: ifca_stationary_error(0.5, [0.5, 0.5], -1, 3, 10, 5), ValueError,
        r"sigma must be in \[0\.0, inf\), got -1\.0"),
    bad("stationary-d-0", lambda: ifca_stationary_error(0.5, [0.5, 0.5], 1, 0, 10, 5), ValueError,
        r"d must be in \[1, inf\), got 0"),
    bad("error_floor-m-0", lambda: ifca_error_floor(1, 0.5, 3, 0, 5, 1), ValueError, r"m must be in \[1, inf\), got 0"),
    bad("error_floor-p-nan", lambda: ifca_error_floor(1, NAN, 3, 10, 5, 1), ValueError, r"p must be finite, got nan"),
    bad("separation_threshold-n_prime-0", lambda: ifca_separation_threshold(1, 0.5, 3, 10, 0), ValueError,
        r"n_prime must be in \[1, inf\), got 0"),
    bad("separation_threshold-C-negative", lambda: ifca_separation_threshold(1, 0.5, 3, 10, 5, C=-1), ValueError,
        r"C must be in \(0\.0, inf\), got -1\.0"),
    bad("one_round-dist-negative", lambda: ifca_one_round_bound(-1, 1, 0.5, 3, 10, 5, 1), ValueError,
        r"dist must be in \[0\.0, inf\), got -1\.0"),
    bad("one_round-dist-nan", lambda: ifca_one_round_bound(NAN, 1, 0.5, 3, 10, 5, 1), ValueError,
        r"dist must be finite, got nan"),
    bad("exponent_at_truth-rho-negative", lambda: misclustering_exponent_at_truth(-1), ValueError,
        r"rho must be >= 0, got -1"),
    bad("lemma1-rho-nan", lambda: lemma1_exponent(NAN), ValueError, r"rho must be >= 0, got nan"),
    bad("basin_edge-theta-1d", lambda: population_basin_edge(np.zeros(3), np.zeros((1, 3))), ValueError,
        r"theta_star must have 2 dimension\(s\), got shape \(3,\)"),
    bad("basin_edge-directions-shape", lambda: population_basin_edge(np.eye(2, 3), np.zeros((1, 4))), ValueError,
        r"directions must have shape \(2, 3\), got \(1, 4\)"),
    bad("basin_edge-theta-nan", lambda: population_basin_edge(np.full((2, 3), NAN), np.ones((2, 3))), ValueError,
        r"theta_star must contain only finite values"),
    bad("misclustering_probability-pair-None", lambda: misclustering_probability(5, None), TypeError,
        r"pair must be a ResidualPair, got NoneType"),
    bad("misclustering_exponent-pair-text", lambda: misclustering_exponent("x"), TypeError,
        r"pair must be a ResidualPair, got str"),
    # ------------------------------------------------------------- theory: Su-Xu-Yang
    bad("chi_square-empty", lambda: chi_square_from_uniform([]), ValueError, r"weights must have shape \(M,\) with M >= 1"),
    bad("chi_square-negative", lambda: chi_square_from_uniform([-1, 2]), ValueError,
        r"weights must be finite, non-negative and sum to 1"),
    bad("chi_square-nan", lambda: chi_square_from_uniform([NAN, 1]), ValueError, r"weights must be finite"),
    bad("chi_square-2d", lambda: chi_square_from_uniform([[0.5, 0.5]]), ValueError,
        r"weights must have shape \(M,\) with M >= 1, got shape \(1, 2\)"),
    bad("chi_square-not-summing-to-1", lambda: chi_square_from_uniform([2, 2]), ValueError, r"sum to 1"),
    bad("nu_terms-sizes-empty", lambda: sxy_nu_terms([], 3, 2), ValueError, r"sizes must be a non-empty 1-D array"),
    bad("nu_terms-sizes-0", lambda: sxy_nu_terms([0, 3], 3, 2), ValueError, r"sizes must be .* integers >= 1, got \[0, 3\]"),
    bad("nu_terms-sizes-fraction", lambda: sxy_nu_terms([2.5, 3], 3, 2), ValueError, r"sizes must be .*got \[2\.5, 3\]"),
    bad("nu_terms-k-0", lambda: sxy_nu_terms([3, 3], 3, 0), ValueError, r"k must be in \[1, inf\), got 0"),
    bad("nu-d-0", lambda: sxy_nu([3, 3], 0, 2), ValueError, r"d must be in \[1, inf\), got 0"),
    bad("floor_term-nu-negative", lambda: sxy_floor_term(-1), ValueError, r"nu must be in \[0\.0, inf\), got -1\.0"),
    bad("floor_term-nu-nan", lambda: sxy_floor_term(NAN), ValueError, r"nu must be finite, got nan"),
    bad("phase2_bound-p_min-0", lambda: sxy_phase2_bound(1, 0, 0.1), ValueError, r"p_min must be in \(0\.0, 1\.0\]"),
    bad("phase2_bound-dist-negative", lambda: sxy_phase2_bound(-1, 0.5, 0.1), ValueError,
        r"dist must be in \[0\.0, inf\), got -1\.0"),
    bad("recursion-n_rounds-negative", lambda: sxy_phase2_recursion(1, 0.5, 0.1, -1), ValueError,
        r"n_rounds must be in \[0, inf\), got -1"),
    bad("recursion-n_rounds-fraction", lambda: sxy_phase2_recursion(1, 0.5, 0.1, 2.5), TypeError,
        r"n_rounds must be an integer, got 2\.5 \(float\)"),
    bad("fixed_point-C1-0", lambda: sxy_phase2_fixed_point(0.5, 0.1, C1=0), ValueError, r"C1 must be in \(0\.0, inf\)"),
    bad("contraction_constant-step-0", lambda: sxy_contraction_constant(0, 0.5), ValueError,
        r"step_size must be in \(0\.0, inf\)"),
    bad("contraction_constant-solver", lambda: sxy_contraction_constant(0.1, 0.5, "sgd"), ValueError,
        r"local_solver must be one of 'fedavg', 'fedprox'; got 'sgd'"),
    bad("contraction_constant-cov_low-0", lambda: sxy_contraction_constant(0.1, 0), ValueError,
        r"cov_low must be in \(0\.0, inf\), got 0\.0"),
    bad("predicted_contraction-cov_high-below-low", lambda: sxy_predicted_contraction(0.1, [0.5, 0.5], 2, 1), ValueError,
        r"cov_high must be in \[2\.0, inf\), got 1\.0"),
    bad("predicted_contraction-fractions-negative", lambda: sxy_predicted_contraction(0.1, [-0.5, 1.5], 1, 2),
        ValueError, r"fractions must be a non-empty 1-D array of values in \[0, 1\]"),
    bad("rounds_to_floor-rate-1", lambda: sxy_rounds_to_floor(1.0, 0.1), ValueError, r"rate must be in \(0\.0, 1\.0\)"),
    bad("rounds_to_floor-rate-0", lambda: sxy_rounds_to_floor(0.0, 0.1), ValueError, r"rate must be in \(0\.0, 1\.0\)"),
    bad("bound_shape-p_min-0", lambda: sxy_bound_shape(0.1, 0), ValueError, r"p_min must be in \(0, 1\], got 0\.0"),
    bad("bound_shape-nu-negative", lambda: sxy_bound_shape(-0.1, 0.5), ValueError, r"nu must be finite and > 0"),
    bad("axis_exponent-x-0-log", lambda: sxy_axis_exponent([0, 1], [0.1, 0.2], [0.5, 0.5]), ValueError,
        r"x must be > 0 for an exponent \(log_x=True\)"),
    # ------------------------------------------------------------- theory: fitting and least squares
    bad("fit_log_constant-sizes", lambda: fit_log_constant([1, 2], [1]), ValueError,
        r"observed and reference must have the same size, got 2 and 1"),
    bad("half_crossing-shapes", lambda: half_crossing([1, 2, 3], [0.1, 0.9]), ValueError,
        r"rate must have the shape of x \(3,\), got \(2,\)"),
    bad("half_crossing-x-nan", lambda: half_crossing([NAN, 2], [0.1, 0.9]), ValueError,
        r"x must be a 1-D finite, positive and increasing grid"),
    bad("crossing_draws-successes-above-trials", lambda: crossing_draws([1, 2], [5, 3], [4, 4]), ValueError,
        r"successes and trials must have the shape of x, with 0 <= successes <= trials"),
    bad("crossing_draws-n_draws-0", lambda: crossing_draws([1, 2], [1, 3], [4, 4], n_draws=0), ValueError,
        r"n_draws must be in \[1, inf\), got 0"),
    bad("crossing_draws-seed-negative", lambda: crossing_draws([1, 2], [1, 3], [4, 4], seed=-1), ValueError,
        r"seed must be in \[0, inf\), got -1"),
    bad("crossing_draws-seed-generator", lambda: crossing_draws([1, 2], [1, 3], [4, 4], seed=rng()), TypeError,
        r"seed must be an integer, got Generator"),
    bad("draws_interval-level-nan", lambda: draws_interval([1, 2], level=NAN), ValueError, r"level must be finite, got nan"),
    bad("draws_interval-level-above-1", lambda: draws_interval([1, 2], level=1.5), ValueError,
        r"level must be in \(0\.0, 1\.0\], got 1\.5"),
    bad("draws_interval-level-0", lambda: draws_interval([1, 2], level=0), ValueError,
        r"level must be in \(0\.0, 1\.0\], got 0\.0"),
    bad("homogeneity-successes-above-trials", lambda: stratified_homogeneity_test([[5]], [[4]]), ValueError,
        r"successes and trials must be integers with 0 <= successes <= trials"),
    bad("homogeneity-n_permutations-0", lambda: stratified_homogeneity_test([[1, 2]], [[4, 4]], n_permutations=0),
        ValueError, r"n_permutations must be in \[1, inf\), got 0"),
    bad("homogeneity-shapes", lambda: stratified_homogeneity_test([[1, 2]], [[4, 4, 4]]), ValueError,
        r"successes and trials must be 2-D of one shape, got \(1, 2\) and \(1, 3\)"),
    bad("homogeneity-seed-negative", lambda: stratified_homogeneity_test([[1, 2]], [[4, 4]], seed=-1), ValueError,
        r"seed must be in \[0, inf\), got -1"),
    bad("homogeneity-seed-fraction", lambda: stratified_homogeneity_test([[1, 2]], [[4, 4]], seed=0.5), TypeError,
        r"seed must be an integer, got 0\.5 \(float\)"),
    bad("ls_moments-d-0", lambda: ls_error_moments(0, 10), ValueError, r"d must be in \[1, inf\), got 0"),
    bad("ls_oracle-threshold-negative", lambda: ls_oracle_success_probability(1, 3, [10, 10], -1), ValueError,
        r"threshold must be in \[0\.0, inf\), got -1\.0"),
    bad("ls_oracle-sizes-empty", lambda: ls_oracle_success_probability(1, 3, [], 1), ValueError,
        r"cluster_sizes must be a non-empty 1-D array"),
    bad("ls_points_needed-sigma-negative", lambda: ls_points_needed(-1, 3, 1), ValueError,
        r"sigma must be in \[0\.0, inf\), got -1\.0"),
    bad("ls_points_needed-threshold-inf", lambda: ls_points_needed(1, 3, math.inf), ValueError,
        r"threshold must be finite, got inf"),
    # ------------------------------------------------------------- statistics
    bad("wilson-successes-above-trials", lambda: wilson_interval(5, 4), ValueError, r"successes must lie in \[0, trials\]"),
    bad("wilson-successes-negative", lambda: wilson_interval(-1, 4), ValueError, r"successes must lie in \[0, trials\]"),
    bad("wilson-level-1", lambda: wilson_interval(1, 4, level=1.0), ValueError, r"level must be in \(0, 1\), got 1\.0"),
    bad("group_rates-records-int", lambda: group_rates(5, ["a"], ["s"]), TypeError,
        r"records must be a list of dicts or a pandas DataFrame, got int"),
    bad("group_rates-record-not-dict", lambda: group_rates([("a", 1)], ["a"], ["s"]), TypeError,
        r"records must be a list of dicts, got records\[0\] = \('a', 1\) \(tuple\)"),
    bad("group_rates-key-missing", lambda: group_rates([{"a": 1, "s": True}], ["b"], ["s"]), ValueError,
        r"records\[0\] has no column 'b' \(named in keys, flags or mean_of\); it has \['a', 's'\]"),
    bad("group_rates-flag-missing", lambda: group_rates([{"a": 1, "s": True}], ["a"], ["t"]), ValueError,
        r"records\[0\] has no column 't'"),
    bad("group_rates-mean_of-missing", lambda: group_rates([{"a": 1, "s": True}], ["a"], ["s"], mean_of=["x"]),
        ValueError, r"records\[0\] has no column 'x'"),
    bad("group_rates-level-0", lambda: group_rates([{"a": 1, "s": True}], ["a"], ["s"], level=0), ValueError,
        r"level must be in \(0, 1\), got 0"),
    bad("fit_slope-rng-None", lambda: fit_slope([1, 2], [[1], [2]], rng=None), TypeError,
        r"rng must be a numpy\.random\.Generator, got NoneType"),
    bad("fit_slope-x-negative", lambda: fit_slope([-1, 2], [[1], [2]], rng=rng()), ValueError,
        r"x must be > 0 for a log-log fit"),
    bad("fit_slope-statistic", lambda: fit_slope([1, 2], [[1], [2]], statistic="mode", rng=rng()), ValueError,
        r"statistic must be 'mean' or 'median', got 'mode'"),
    bad("fit_slope-samples-length", lambda: fit_slope([1, 2, 3], [[1], [2]], rng=rng()), ValueError,
        r"samples must hold one array per grid value of x \(3\), got 2"),
    bad("slope_verdict-fit-None", lambda: slope_verdict(1.0, None), TypeError,
        r"fit must be a SlopeFit \(from fit_slope\), got NoneType"),
    bad("slope_verdict-fit-dict", lambda: slope_verdict(1.0, {"low": 0, "high": 2}), TypeError,
        r"fit must be a SlopeFit \(from fit_slope\), got dict"),
    bad("slope_verdict-tolerance-negative", lambda: slope_verdict(1.0, FIT, tolerance=-1), ValueError,
        r"tolerance must be in \[0\.0, inf\), got -1\.0"),
    bad("slope_verdict-tolerance-nan", lambda: slope_verdict(1.0, FIT, tolerance=NAN), ValueError,
        r"tolerance must be finite, got nan"),
    # ------------------------------------------------------------- metrics
    bad("oracle_floor-sizes-empty", lambda: oracle_ls_floor(1.0, 3, []), ValueError,
        r"cluster_sizes must have shape \(k,\) with k >= 1, got shape \(0,\)"),
    bad("oracle_floor-sizes-fraction", lambda: oracle_ls_floor(1.0, 3, [10.5]), ValueError,
        r"cluster_sizes must be an integer array, got dtype float64"),
    bad("pairwise-1d", lambda: pairwise_distances(np.zeros(3), np.eye(2, 3)), ValueError,
        r"theta_hat must have shape \(B, k, d\) or \(k, d\) with k >= 1, got shape \(3,\)"),
    bad("misclustering-k-negative", lambda: misclustering_rate([0], [0], -1), ValueError, r"k must be in \[1, inf\)"),
    bad("misclustering-label-k", lambda: misclustering_rate([0, 3], [0, 1], 2), ValueError,
        r"assignments must take values in \[0, k\) = \[0, 2\) or -1"),
    bad("misclustering-fractions", lambda: misclustering_rate([0.5, 1], [0, 1], 2), ValueError,
        r"assignments must be an integer array, got dtype float64"),
    bad("misclustering-empty", lambda: misclustering_rate([], [], 2), ValueError,
        r"labels must have shape \(m,\) with m >= 1, got shape \(0,\)"),
    # ------------------------------------------------------------- problem specs and make_problem
    bad("spec-m-0", lambda: spec(m=0), ValueError, r"m must be in \[1, inf\), got 0"),
    bad("spec-d-float", lambda: spec(d=2.0), TypeError, r"d must be an integer, got 2\.0 \(float\)"),
    bad("spec-sigma-negative", lambda: spec(sigma=-0.1), ValueError, r"sigma must be in \[0\.0, inf\), got -0\.1"),
    bad("spec-sigma-inf", lambda: spec(sigma=math.inf), ValueError, r"sigma must be finite, got inf"),
    bad("spec-protocol", lambda: spec(protocol="nope"), ValueError, r"protocol must be one of 'official', 'paper'"),
    bad("spec-size_law", lambda: spec(n=None, size_law="nope"), ValueError, r"size_law must be one of 'equal', 'zipf'"),
    bad("spec-n-0", lambda: spec(n=0), ValueError, r"n must be in \[1, inf\), got 0"),
    bad("spec-anchor_mode", lambda: spec(anchor_mode="x"), ValueError, r"anchor_mode must be one of 'random'"),
    bad("spec-anchor_points-1", lambda: spec(anchor_mode="per_cluster", anchor_points=1), ValueError,
        r"anchor_points must be in \[2, inf\), got 1"),
    bad("spec-from_cell-int", lambda: ProblemSpec.from_cell(5), TypeError,
        r"cell must be a dict \(an engine cell\), got int"),
    bad("spec-from_cell-schema", lambda: ProblemSpec.from_cell(spec().to_cell(), ("m",)), TypeError,
        r"schema must be a CellSchema, got tuple"),
    bad("spec-to_cell-schema", lambda: spec().to_cell(("nope",)), TypeError, r"schema must be a CellSchema, got tuple"),
    bad("make_problem-k-above-m", lambda: make_problem(2, 3, 2, 2, 0.1, 1.0, rng=rng()), ValueError,
        r"k must be at most m \(every cluster needs a client\); got k=3, m=2"),
    bad("make_problem-proportions-sum", lambda: make_problem(4, 2, 2, 2, 0.1, 1.0, rng=rng(), proportions=[0.5, 0.6]),
        ValueError, r"proportions must be non-negative and sum to 1, got \[0\.5, 0\.6\]"),
    bad("make_problem-proportions-length", lambda: make_problem(4, 2, 2, 2, 0.1, 1.0, rng=rng(), proportions=[1.0]),
        ValueError, r"proportions must have length k=2, got 1"),
    bad("make_problem-sizes-0", lambda: make_problem(3, 1, [1, 0, 3], 2, 0.1, 1.0, rng=rng()), ValueError,
        r"n must hold integers >= 1 \(samples per client\)"),
    bad("make_problem-sizes-length", lambda: make_problem(3, 1, [1, 2], 2, 0.1, 1.0, rng=rng()), ValueError,
        r"n must be an integer or an array of shape \(m,\)=\(3,\), got shape \(2,\)"),
    bad("make_problem-dtype", lambda: make_problem(3, 1, 2, 2, 0.1, 1.0, rng=rng(), dtype="int32"), ValueError,
        r"dtype must be float32 or float64, got int32"),
    # ------------------------------------------------------------- the Monte Carlo engine
    bad("sweep-name-empty", lambda: sweep(name=""), ValueError, r"name must be a non-empty string, got ''"),
    bad("sweep-trial_fn-None", lambda: sweep(trial_fn=None), TypeError, r"trial_fn must be callable, got NoneType"),
    bad("sweep-cells-empty", lambda: sweep(cells=()), ValueError, r"cells must contain at least one cell"),
    bad("sweep-cell-not-dict", lambda: sweep(cells=(1,)), TypeError, r"cells\[0\] must be a dict of scalars, got int"),
    bad("sweep-cells-keys", lambda: sweep(cells=({"R": 1.0}, {"S": 2.0})), ValueError,
        r"cells must all have the same keys: cells\[1\] has \['S'\] but cells\[0\] has \['R'\]"),
    bad("sweep-cell-None", lambda: sweep(cells=({"R": None},)), TypeError, r"cells\[0\]\['R'\] must be an int, float"),
    bad("sweep-cells-repeated", lambda: sweep(cells=({"R": 1.0}, {"R": 1.0})), ValueError,
        r"cells\[1\] duplicates cells\[0\]"),
    bad("sweep-n_trials-0", lambda: sweep(n_trials=0), ValueError, r"n_trials must be in \[1, inf\), got 0"),
    bad("sweep-n_trials-bool", lambda: sweep(n_trials=True), TypeError, r"n_trials must be an integer, got True"),
    bad("sweep-root_seed-negative", lambda: sweep(root_seed=-1), ValueError, r"root_seed must be in \[0, inf\)"),
    bad("sweep-config-list", lambda: sweep(config=[]), TypeError, r"config must be a dict, got list"),
    bad("sweep-config-not-json", lambda: sweep(config={"f": object()}), TypeError, r"config must be JSON-serialisable"),
    bad("sweep-chunk_size-0", lambda: sweep(chunk_size=0), ValueError, r"chunk_size must be in \[1, inf\), got 0"),
    bad("sweep-cost_fn-int", lambda: sweep(cost_fn=3), TypeError, r"cost_fn must be callable or None, got int"),
    bad("sweep-flop_rate-nan", lambda: sweep(flop_rate=NAN), ValueError, r"flop_rate must be finite, got nan"),
    bad("run_sweep-not-a-sweep", lambda: run_sweep({}, "out"), TypeError,
        r"sweep must be a mixreg\.montecarlo\.Sweep, got dict"),
    bad("run_sweep-outdir-None", lambda: run_sweep(sweep(), None), TypeError,
        r"outdir must be a path \(a str or os\.PathLike\), got NoneType"),
    bad("run_sweep-outdir-int", lambda: run_sweep(sweep(), 3), TypeError, r"outdir must be a path .*got int"),
    bad("run_sweep-jobs-0", lambda: run_sweep(sweep(), "out", jobs=0), ValueError, r"jobs must be in \[1, inf\), got 0"),
    bad("run_sweep-kernel_threads-0", lambda: run_sweep(sweep(), "out", kernel_threads=0), ValueError,
        r"kernel_threads must be in \[1, inf\), got 0"),
    bad("run_sweep-scheduler-and-dask", lambda: run_sweep(sweep(), "out", scheduler="tcp://x:1", dask_local=2),
        ValueError, r"give at most one of scheduler .* and dask_local"),
    bad("run_sweep-overwrite-and-new_dir", lambda: run_sweep(sweep(), "out", overwrite=True, new_dir=True), ValueError,
        r"give at most one of overwrite=True .* and new_dir=True"),
    bad("run_sweep-connect_timeout-0", lambda: run_sweep(sweep(), "out", connect_timeout=0), ValueError,
        r"connect_timeout must be a finite number of seconds > 0, got 0"),
    bad("run_sweep-progress-text", lambda: run_sweep(sweep(), "out", progress="yes"), TypeError,
        r"progress must be None, True or False, got 'yes'"),
    bad("dry_run-not-a-sweep", lambda: dry_run({}), TypeError, r"sweep must be a mixreg\.montecarlo\.Sweep, got dict"),
    bad("dry_run-jobs-0", lambda: dry_run(sweep(), jobs=0), ValueError, r"jobs must be in \[1, inf\), got 0"),
    bad("check_fits-jobs-negative", lambda: check_fits(sweep(), jobs=-1), ValueError, r"jobs must be in \[1, inf\)"),
]


@pytest.mark.parametrize("call,exc,match", BAD)
def test_bad_input_raises_a_one_line_error_naming_the_argument(call, exc, match, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a run_sweep that wrongly started would write here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises((TypeError, ValueError)) as info:
            call()
    check_refusal(info, exc, match)
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- legal edges, exact values


def edge(id, call, expected):
    return pytest.param(call, expected, id=id)


SQRT2 = math.sqrt(2.0)
EDGES = [
    # theory: values that follow from the formulas
    edge("ifca_step_size-c1-over-p", lambda: ifca_step_size(0.5), 0.75),
    edge("ifca_safe_step_size-p_max-1", lambda: ifca_safe_step_size(1.0), 0.375),
    edge("contraction-k-1", lambda: ifca_contraction_factors(0.5, [1.0]).tolist(), [0.0]),
    edge("exponent_at_truth-rho-0", lambda: misclustering_exponent_at_truth(0), 0.0),
    edge("recursion-no-round", lambda: sxy_phase2_recursion(1.0, 0.5, 0.1, 0).tolist(), [1.0]),
    edge("chi_square-uniform", lambda: chi_square_from_uniform([1 / 4] * 4), 0.0),
    edge("chi_square-one-client", lambda: chi_square_from_uniform([1.0]), 0.0),
    edge("ls_moments-too-few-points", lambda: ls_error_moments(3, 4), (math.inf, math.inf)),
    edge("ls_oracle-sigma-0", lambda: ls_oracle_success_probability(0, 3, [10, 10], 1), 1.0),
    edge("ls_oracle-threshold-0", lambda: ls_oracle_success_probability(1, 3, [10, 10], 0), 0.0),
    edge("ls_points_needed-sigma-0", lambda: ls_points_needed(0, 3, 1), 3.0),
    edge("ls_points_needed-threshold-0", lambda: ls_points_needed(1, 3, 0), math.inf),
    edge("ls_points_needed-unit-ratio", lambda: ls_points_needed(0.5, 3, 0.5), 7.0),
    # the squares leave the float range, the ratio does not: the same number as at ordinary scales
    edge("ls_points_needed-huge-sigma", lambda: ls_points_needed(1e300, 3, 1e300), 7.0),
    edge("ls_points_needed-tiny-both", lambda: ls_points_needed(1e-200, 3, 1e-200), 7.0),
    edge("ls_points_needed-tiny-threshold", lambda: ls_points_needed(1.0, 3, 1e-200), math.inf),
    edge("ls_points_needed-huge-ratio", lambda: ls_points_needed(1e200, 3, 1e-200), math.inf),
    edge("half_crossing-geometric-midpoint", lambda: half_crossing([1, 2], [0.0, 1.0]), SQRT2),
    edge("draws_interval-level-1", lambda: draws_interval([1, 2], level=1.0), (1.0, 2.0)),
    edge("draws_interval-only-nan", lambda: draws_interval([NAN]), "nan"),
    # statistics
    edge("wilson-all-successes", lambda: float(wilson_interval(4, 4)[1]), 1.0),
    edge("wilson-no-successes", lambda: float(wilson_interval(0, 4)[0]), 0.0),
    edge("group_rates-one-group", lambda: group_rates([{"a": 1, "s": True}, {"a": 1, "s": False}], ["a"], ["s"])[0]["s_rate"],
         0.5),
    edge("group_rates-failed-record-lacks-columns", lambda: group_rates([{"error": "boom"}, {"a": 2, "s": True}], ["a"],
                                                                         ["s"])[0]["trials"], 1),
    edge("group_rates-no-records", lambda: group_rates([], ["a"], ["s"]), []),
    edge("fit_slope-exact-line", lambda: fit_slope([1, 2, 4], [[1.0], [2.0], [4.0]], n_boot=10, rng=rng()).slope, 1.0),
    edge("slope_verdict-inside", lambda: slope_verdict(1.0, FIT), "consistent"),
    edge("slope_verdict-outside", lambda: slope_verdict(2.0, FIT), "contradicts"),
    edge("slope_verdict-widened", lambda: slope_verdict(2.0, FIT, tolerance=0.5), "consistent"),
    edge("slope_verdict-no-interval", lambda: slope_verdict(1.0, SlopeFit(slope=NAN, intercept=NAN, low=NAN, high=NAN,
                                                                          level=0.95, n_points=1, n_boot=0)),
         "undetermined"),
    # metrics
    edge("pairwise-d-1", lambda: pairwise_distances(np.array([[1.0], [2.0]]), np.array([[0.0], [3.0]])).tolist(),
         [[1.0, 2.0], [2.0, 1.0]]),
    edge("matched_mean-k-1", lambda: matched_mean_distance(np.array([[1.0, 2.0]]), np.array([[1.0, 0.0]])), 2.0),
    edge("misclustering-label-swap", lambda: misclustering_rate([1, 0], [0, 1], 2), 0.0),
    edge("misclustering-k-1", lambda: misclustering_rate([0, 0, 0], [0, 0, 0], 1), 0.0),
    edge("oracle_floor-too-few-points", lambda: oracle_ls_floor(1.0, 3, [4]).tolist(), [math.inf]),
    # problems
    edge("spec-m-1-k-1-n-1-d-1", lambda: {key: spec(m=1, k=1, n=1, d=1, sigma=0.0).generate(rng()).summary()[key]
                                          for key in ("m", "k", "d", "N", "separation", "p_min")},
         {"m": 1, "k": 1, "d": 1, "N": 1, "separation": math.inf, "p_min": 1.0}),
    edge("spec-cell-round-trip", lambda: ProblemSpec.from_cell(spec(k=1, d=1).to_cell()) == spec(k=1, d=1), True),
    edge("make_problem-sizes-array", lambda: make_problem(3, 1, [1, 2, 3], 2, 0.1, 1.0, rng=rng()).offsets.tolist(),
         [0, 1, 3, 6]),
]


@pytest.mark.parametrize("call,expected", EDGES)
def test_a_legal_edge_gives_the_exact_value(call, expected):
    value = call()
    if expected == "nan":
        assert all(math.isnan(v) for v in value), value
    elif isinstance(expected, float):
        assert value == pytest.approx(expected, rel=1e-12, abs=0.0) if math.isfinite(expected) else value == expected
    else:
        assert value == expected


def test_a_one_cell_one_trial_sweep_runs_and_reads_back(tmp_path):
    result = run_sweep(sweep(n_trials=1), tmp_path / "out", progress=False)
    assert len(result.records) == 1 and result.failures == []
    back = read_results(tmp_path / "out")
    assert len(back.records) == 1
    assert back.records[0]["dist"] == result.records[0]["dist"] and np.isfinite(back.records[0]["dist"])
