"""The theorems' formulas, made executable.

One private module per paper, every public name re-exported here (``from mixreg.theory import
...`` is the only import users need):

* :mod:`mixreg.theory._ifca`: IFCA (Ghosh, Chung, Yin, Ramchandran, NeurIPS 2020 version, linear
  model, Sec. 5.1): Theorem 1's step size, one-round bound and error floor, and Assumption 2's
  separation threshold; the per-cluster contraction factors that make Theorem 1's step fail on
  unbalanced clusters, the safe step and the derived stationary error;
* :mod:`mixreg.theory._ifca_clustering`: IFCA's identity estimate exactly (linear model, k = 2
  models compared): the misclustering probability, its Chernoff exponent against Lemma 1's
  shape, and the population edge of the basin;
* :mod:`mixreg.theory._sxy`: Su, Xu and Yang (NeurIPS 2022), Phase 2 of the two-phase algorithm
  (FedX + clustering): the chi-square divergence of the client weights, :math:`\\nu` and the
  Phase-2 recursion, its bound and its fixed point; the contraction constant :math:`C_1` derived
  in advance from the step size and the covariances, and the rounds to the floor;
* :mod:`mixreg.theory._sxy_nu`: Su-Xu-Yang's final-error bound along one-dimensional sweeps
  (its shape :math:`\\nu / p_{min}`, the exponent it predicts along a sweep) and a level
  constant fitted with each sweep held out;
* :mod:`mixreg.theory._fitting`: the least-squares fit, on the log scale, of a constant the
  papers do not give (``fit_log_constant``) and of the constant of IFCA's separation condition
  (``fit_separation_constant``); checks of a theory line against data: half-crossings and their
  uncertainty (``half_crossing``, ``crossing_draws``, ``draws_interval``), leave-one-level-out validation of a fitted constant
  (``held_out_constant``), an exact test that success rates differ across groups
  (``stratified_homogeneity_test``);
* :mod:`mixreg.theory._ls_oracle`: known-label least squares as predictions fixed by the
  problem's sizes: the exact moments of its error, its probability of meeting a success
  threshold, the pooled points it needs.

The theorems hold for *some* universal constants that the papers do not give.  Every function
here takes them as arguments; the defaults are 1 ("unit constants") except where a short
calculation gives a natural value, which is then stated.  A figure that draws one of these must
say which constants it used (unit or fitted).
"""

from __future__ import annotations

from ._fitting import (
    crossing_draws,
    draws_interval,
    fit_log_constant,
    fit_separation_constant,
    half_crossing,
    held_out_constant,
    stratified_homogeneity_test,
)
from ._ifca import (
    ifca_contraction_factors,
    ifca_error_floor,
    ifca_one_round_bound,
    ifca_safe_step_size,
    ifca_separation_threshold,
    ifca_stationary_error,
    ifca_step_size,
)
from ._ifca_clustering import (
    ResidualPair,
    lemma1_exponent,
    misclustering_exponent,
    misclustering_exponent_at_truth,
    misclustering_probability,
    population_basin_edge,
)
from ._sxy import (
    chi_square_from_uniform,
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
from ._ls_oracle import ls_error_moments, ls_oracle_success_probability, ls_points_needed
from ._sxy_nu import leave_group_out_constant, sxy_axis_exponent, sxy_bound_shape

__all__ = [
    "ifca_step_size",
    "ifca_safe_step_size",
    "ifca_contraction_factors",
    "ifca_stationary_error",
    "ifca_error_floor",
    "ifca_separation_threshold",
    "ifca_one_round_bound",
    "ResidualPair",
    "misclustering_probability",
    "misclustering_exponent",
    "misclustering_exponent_at_truth",
    "lemma1_exponent",
    "population_basin_edge",
    "fit_separation_constant",
    "chi_square_from_uniform",
    "sxy_nu_terms",
    "sxy_nu",
    "sxy_floor_term",
    "sxy_phase2_bound",
    "sxy_phase2_recursion",
    "sxy_phase2_fixed_point",
    "sxy_contraction_constant",
    "sxy_predicted_contraction",
    "sxy_rounds_to_floor",
    "fit_log_constant",
    "sxy_bound_shape",
    "sxy_axis_exponent",
    "leave_group_out_constant",
    "half_crossing",
    "crossing_draws",
    "draws_interval",
    "held_out_constant",
    "stratified_homogeneity_test",
    "ls_error_moments",
    "ls_oracle_success_probability",
    "ls_points_needed",
]
