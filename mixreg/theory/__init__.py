"""The theorems' formulas, made executable.

One private module per paper, every public name re-exported here (``from mixreg.theory import
...`` is the only import users need):

* ``_ifca``: IFCA (Ghosh, Chung, Yin, Ramchandran, NeurIPS 2020 version, linear
  model, Sec. 5.1): Theorem 1's step size, one-round bound and error floor, and Assumption 2's
  separation threshold; the per-cluster contraction factors that make Theorem 1's step fail on
  unbalanced clusters, the safe step and the derived stationary error;
* ``_ifca_clustering``: IFCA's identity estimate exactly (linear model, k = 2
  models compared): the misclustering probability, its Chernoff exponent against Lemma 1's
  shape, and the population edge of the basin;
* ``_ifca_sc``: IFCA Theorem 2 and Lemma 3 (the strongly convex analysis) for squared loss under a
  feature covariance: the constants lambda and L, the per-round factor and rounds T, the exact second
  moments of the resampled run, Lemma 3's Chebyshev bound;
* ``_sxy``: Su, Xu and Yang (NeurIPS 2022), Phase 2 of the two-phase algorithm
  (FedX + clustering): the chi-square divergence of the client weights, :math:`\\nu` and the
  Phase-2 recursion, its bound and its fixed point; the contraction constant :math:`C_1` derived
  in advance from the step size and the covariances, and the rounds to the floor;
* ``_sxy_nu``: Su-Xu-Yang's final-error bound along one-dimensional sweeps
  (its shape :math:`\\nu / p_{min}`, the exponent it predicts along a sweep);
* ``_fitting``: the least-squares fit, on the log scale, of a constant the
  papers do not give (``fit_log_constant``) and of the constant of IFCA's separation condition
  (``fit_separation_constant``); checks of a theory line against data: half-crossings and their
  uncertainty (``half_crossing``, ``crossing_draws``, ``draws_interval``), a constant fitted
  with each group held out (``leave_group_out_constant``), leave-one-level-out validation of a
  fitted constant (``held_out_constant``), an exact test that success rates differ across groups
  (``stratified_homogeneity_test``);
* ``_ls_oracle``: known-label least squares as predictions fixed by the
  problem's sizes: the exact moments of its error, its probability of meeting a success
  threshold, the pooled points it needs (rows N(0, I), or N(0, Sigma) with ``covariance=``:
  :math:`E\\lVert\\hat\\theta^{LS} - \\theta^*\\rVert^2 = \\sigma^2 \\operatorname{tr}(\\Sigma^{-1})
  / (N - d - 1)`).

The theorems hold for *some* universal constants that the papers do not give.  Every function
here takes them as arguments; the defaults are 1 ("unit constants") except where a short
calculation gives a natural value, which is then stated.  A figure that draws one of these must
say which constants it used (unit or fitted).
"""

from __future__ import annotations

from . import _fitting, _ifca, _ifca_clustering, _ifca_sc, _ls_oracle, _sxy, _sxy_nu
from ._fitting import *  # noqa: F401,F403
from ._ifca import *  # noqa: F401,F403
from ._ifca_clustering import *  # noqa: F401,F403
from ._ifca_sc import *  # noqa: F401,F403
from ._ls_oracle import *  # noqa: F401,F403
from ._sxy import *  # noqa: F401,F403
from ._sxy_nu import *  # noqa: F401,F403

# every public name of the private modules, listed once (in each module's own ``__all__``)
__all__ = [*_ifca.__all__, *_ifca_clustering.__all__, *_ifca_sc.__all__, *_sxy.__all__, *_sxy_nu.__all__, *_fitting.__all__,
           *_ls_oracle.__all__]
