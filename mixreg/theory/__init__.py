"""The theorems' formulas, made executable.

One private module per paper, every public name re-exported here (``from mixreg.theory import
...`` is the only import users need):

* :mod:`mixreg.theory._ifca`: IFCA (Ghosh, Chung, Yin, Ramchandran, NeurIPS 2020 version, linear
  model, Sec. 5.1): Theorem 1's step size, one-round bound and error floor, and Assumption 2's
  separation threshold;
* :mod:`mixreg.theory._sxy`: Su, Xu and Yang (NeurIPS 2022), Phase 2 of the two-phase algorithm
  (FedX + clustering): the chi-square divergence of the client weights, :math:`\\nu` and the
  Phase-2 recursion, its bound and its fixed point;
* :mod:`mixreg.theory._fitting`: the least-squares fit, on the log scale, of a constant the
  papers do not give (``fit_log_constant``) and of the constant of IFCA's separation condition
  (``fit_separation_constant``).

The theorems hold for *some* universal constants that the papers do not give.  Every function
here takes them as arguments; the defaults are 1 ("unit constants") except where a short
calculation gives a natural value, which is then stated.  A figure that draws one of these must
say which constants it used (unit or fitted).
"""

from __future__ import annotations

from ._fitting import fit_log_constant, fit_separation_constant
from ._ifca import ifca_error_floor, ifca_one_round_bound, ifca_separation_threshold, ifca_step_size
from ._sxy import (
    chi_square_from_uniform,
    sxy_floor_term,
    sxy_nu,
    sxy_nu_terms,
    sxy_phase2_bound,
    sxy_phase2_fixed_point,
    sxy_phase2_recursion,
)

__all__ = [
    "ifca_step_size",
    "ifca_error_floor",
    "ifca_separation_threshold",
    "ifca_one_round_bound",
    "fit_separation_constant",
    "chi_square_from_uniform",
    "sxy_nu_terms",
    "sxy_nu",
    "sxy_floor_term",
    "sxy_phase2_bound",
    "sxy_phase2_recursion",
    "sxy_phase2_fixed_point",
    "fit_log_constant",
]
