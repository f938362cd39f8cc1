r"""Su, Xu and Yang (NeurIPS 2022), Phase 2: FedX + clustering.

Theorem (slide "Theoretical guarantee for Phase 2"): if ``d(theta_T, theta*) <= epsilon``, then
w.h.p. for all ``t >= T``::

    d(theta_{t+1}, theta*) <= (1 - C1 p_min) d(theta_t, theta*) + C2 nu log(1/nu),
    nu = sum_i k w_i exp(-C3 n_i) + C4 sqrt(d k log k / M * (chi2(w) + 1)),

with ``w_i = n_i / sum_i' n_i'`` and ``chi2(w)`` the chi-square divergence of ``w`` from uniform
on ``[M]``.  Global theorem: Phase 2 for ``Theta(rho^-1 log(1/nu))`` rounds reaches
``d <~ nu log(1/nu) / p_min``.  The constants ``C1..C4`` are universal but unstated; every
function takes them as arguments with unit defaults ("unit constants"), and a figure must say
whether it used unit or fitted ones.

The contraction constant, derived in advance
--------------------------------------------
:math:`C_1` is not fitted: it follows from the step size and the feature covariances before
any data is seen (:func:`sxy_contraction_constant`, :func:`sxy_predicted_contraction`).

*FedAvg(1).* With weights :math:`w_i = n_i / N` and the labels right, the clients of cluster
``l`` move its model by :math:`-\eta \sum_{i \in S_l} w_i \nabla \ell_i(\theta_l)`, whose
linear part is :math:`\eta \sum_{i \in S_l} w_i H_i = \eta (N_l / N) \hat H_l`
(:math:`H_i = X_i^\top X_i / n_i`, :math:`\hat H_l` the pooled covariance of the cluster's
:math:`N_l` points).  So the error to the fixed point
(the known-label least squares) moves by :math:`I - \eta (N_l/N) \hat H_l` per round, and
with :math:`\hat H_l \approx \Sigma_l` the factor is
:math:`\max_l \max_{\lambda \in \operatorname{spec}(\Sigma_l)} |1 - \eta (N_l/N) \lambda|`.
With :math:`\operatorname{spec}(\Sigma_l) \subset [\lambda_-, \lambda_+]` (``cov_low``,
``cov_high``) the extremes of :math:`|1 - a\lambda|` sit at the ends of the interval, so the
predicted worst factor is :math:`\max_l \max(|1 - \eta p_l \lambda_-|, |1 - \eta p_l
\lambda_+|)`, :math:`p_l = N_l/N`.  When no cluster overshoots,
:math:`\eta\, p_{max} \lambda_+ \le 2 - \eta\, p_{min} \lambda_-` (always true for
:math:`\eta \le 1 / \lambda_+`), it is the slow end of the smallest cluster,

.. math:: 1 - C_1 p_{min}, \qquad C_1 = \eta \lambda_- ,

with :math:`p_{min}` the smallest data fraction :math:`N_l / N`.  The approximation
:math:`\hat H_l \approx \Sigma_l` is the only one (finite :math:`N_l` moves
:math:`\lambda_{min}(\hat H_l)` by about a factor :math:`(1 \pm \sqrt{d/N_l})^2`), and
:math:`\lambda_{min}(\Sigma_l) \ge \lambda_-` makes the prediction the *worst* factor
allowed by the design, not the realised one.

*FedProx.* The local step is :math:`(H_i + I/\eta)^{-1} H_i` applied to the error, a spectral
function of :math:`H_i` with values in :math:`[0, 1)`, so no cluster ever overshoots.  Along an
eigen-direction of :math:`\Sigma_l` with eigenvalue :math:`\lambda`, a client of :math:`n` points
moves the error by about :math:`\eta\lambda / (1 + \eta(\lambda + \operatorname{tr}\Sigma / n))`:
exact as :math:`n \to \infty` (:math:`H_i \to \Sigma`, giving
:math:`\eta\lambda/(1 + \eta\lambda)`), and for :math:`n = 1` up to
:math:`\lVert x\rVert^2 \approx \operatorname{tr}\Sigma` (the step of a one-point client
is :math:`\eta\, x x^\top / (1 + \eta \lVert x\rVert^2)`); in between an interpolation (the
:math:`n` rows of :math:`X_i` are nearly orthogonal, :math:`X_i X_i^\top \approx
\operatorname{tr}\Sigma\, I`, while :math:`n \ll d`).  Summed with weights :math:`w_i` over the
clients of cluster ``l`` (client sizes independent of the labels, so the cluster's size mix is
the population's), the slowest direction gives

.. math:: 1 - C_1 p_{min}, \qquad C_1 = \sum_i w_i \frac{\eta \lambda_-}
          {1 + \eta(\lambda_- + \operatorname{tr}\Sigma / n_i)} < 1 ,

so FedProx never contracts faster than :math:`1 - p_{min}` however large :math:`\eta`, and
clients much smaller than :math:`\eta \operatorname{tr}\Sigma` barely move the models.

*Rounds to the floor.* The global theorem runs Phase 2 for :math:`\Theta(\rho^{-1}
\log(1/\nu))` rounds; we read :math:`\rho = C_1 p_{min}` (one minus the contraction factor,
the slides leave :math:`\rho` undefined) and the floor as the recursion's fixed point
:math:`C_2 \nu \log(1/\nu) / \rho` (:func:`sxy_rounds_to_floor`).
"""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike, FloatOrArray
from ..validation import check_choice, check_int, check_real

__all__ = [
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
]


def chi_square_from_uniform(weights: ArrayLike) -> float:
    r"""Chi-square divergence of ``weights`` from the uniform distribution on ``M`` points.

    .. math::

        \chi^2(w) = \sum_{i=1}^M \frac{(w_i - 1/M)^2}{1/M} = M \sum_{i=1}^M w_i^2 - 1 ,

    0 for equal client sizes; for ``w_i = n_i / sum n`` with i.i.d. sizes it tends to
    ``Var(n) / E[n]^2`` as ``M`` grows.

    Parameters
    ----------
    weights : array_like of shape (M,)
        Non-negative, summing to 1.

    Returns
    -------
    float
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise ValueError(f"weights must have shape (M,) with M >= 1, got shape {w.shape}")
    if not np.isfinite(w).all() or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise ValueError("weights must be finite, non-negative and sum to 1")
    return float(w.size * np.dot(w, w) - 1.0)


def _size_weights(sizes):
    n = np.asarray(sizes)
    if n.ndim != 1 or n.size == 0 or n.dtype.kind not in "iu" or n.min() < 1:
        raise ValueError(f"sizes must be a non-empty 1-D array of integers >= 1, got {sizes!r}")
    return n.astype(np.float64), n / n.sum()


def sxy_nu_terms(sizes: ArrayLike, d: int, k: int, *, C3: float = 1.0, C4: float = 1.0) -> tuple[float, float]:
    r"""The two terms of Su-Xu-Yang's :math:`\nu` ("avg clustering error", "uniform deviation").

    .. math::

        \nu_1 = \sum_{i=1}^M k\, w_i\, e^{-C_3 n_i}, \qquad
        \nu_2 = C_4 \sqrt{\frac{d k \log k}{M} (\chi^2(w) + 1)}, \qquad w_i = n_i / \textstyle\sum n .

    (The slide remarks that :math:`\nu_2 = \tilde O(dk/M)` when :math:`\chi^2(w) = O(1)`; by
    the displayed formula it is :math:`\tilde O(\sqrt{dk/M})`, which is what is computed.)

    Parameters
    ----------
    sizes : int array of shape (M,)
        Client sizes :math:`n_i \ge 1`.
    d, k : int >= 1
    C3, C4 : float > 0, default 1 (unit constants; the paper does not give them)

    Returns
    -------
    nu1, nu2 : float
    """
    n, w = _size_weights(sizes)
    d = check_int("d", d, low=1)
    k = check_int("k", k, low=1)
    C3 = check_real("C3", C3, low=0.0, low_inclusive=False)
    C4 = check_real("C4", C4, low=0.0, low_inclusive=False)
    chi2 = n.size * float(np.dot(w, w)) - 1.0
    nu1 = float(k * np.dot(w, np.exp(-C3 * n)))
    nu2 = float(C4 * np.sqrt(d * k * np.log(k) / n.size * (chi2 + 1.0)))
    return nu1, nu2


def sxy_nu(sizes: ArrayLike, d: int, k: int, *, C3: float = 1.0, C4: float = 1.0) -> float:
    """Su-Xu-Yang's :math:`\\nu = \\nu_1 + \\nu_2` (see :func:`sxy_nu_terms`)."""
    nu1, nu2 = sxy_nu_terms(sizes, d, k, C3=C3, C4=C4)
    return nu1 + nu2


def sxy_floor_term(nu: float, *, C2: float = 1.0) -> float:
    r"""The additive term :math:`C_2 \nu \log(1/\nu)` of the Phase-2 recursion.

    Returns ``+inf`` when :math:`\nu \ge 1`: the theorem is an asymptotic statement for small
    :math:`\nu` and says nothing there (our convention; the formula itself would give a
    meaningless value :math:`\le 0`).  Note that :math:`\nu \log(1/\nu)` increases only on
    :math:`(0, 1/e)`.
    """
    nu = check_real("nu", nu, low=0.0)
    C2 = check_real("C2", C2, low=0.0, low_inclusive=False)
    if nu == 0.0:
        return 0.0
    if nu >= 1.0:
        return float("inf")
    return float(C2 * nu * np.log(1.0 / nu))


def sxy_phase2_bound(dist: FloatOrArray, p_min: float, nu: float, *, C1: float = 1.0, C2: float = 1.0) -> FloatOrArray:
    """Right-hand side of the Phase-2 theorem: ``(1 - C1 p_min) dist + C2 nu log(1/nu)``.

    ``C1 p_min`` must lie in ``(0, 1]``.
    """
    dist = check_real("dist", dist, low=0.0)
    rate = _contraction(p_min, C1)
    return rate * dist + sxy_floor_term(nu, C2=C2)


def _contraction(p_min, C1):
    p_min = check_real("p_min", p_min, low=0.0, high=1.0, low_inclusive=False)
    C1 = check_real("C1", C1, low=0.0, low_inclusive=False)
    if C1 * p_min > 1.0:
        raise ValueError(f"C1 * p_min must be in (0, 1], got C1={C1!r}, p_min={p_min!r}")
    return 1.0 - C1 * p_min


def sxy_phase2_recursion(dist0: float, p_min: float, nu: float, n_rounds: int, *, C1: float = 1.0,
                         C2: float = 1.0) -> np.ndarray:
    r"""Iterate the Phase-2 bound :math:`d_{t+1} = (1 - C_1 p_{min}) d_t + C_2 \nu \log(1/\nu)`.

    Parameters
    ----------
    dist0 : float >= 0
        :math:`d(\theta_T, \theta^*)` at the start of Phase 2 (the theorem needs it below a
        small constant :math:`\epsilon`).
    p_min : float in (0, 1]
    nu : float >= 0
    n_rounds : int >= 0
    C1, C2 : float > 0, default 1 (unit constants)

    Returns
    -------
    dist : ndarray of shape (n_rounds + 1,)
        ``dist[t]`` is the bound after ``t`` rounds; it decreases geometrically to
        :func:`sxy_phase2_fixed_point` (``+inf`` throughout if ``nu >= 1``).
    """
    dist0 = check_real("dist0", dist0, low=0.0)
    n_rounds = check_int("n_rounds", n_rounds, low=0)
    rate = _contraction(p_min, C1)
    floor = sxy_floor_term(nu, C2=C2)
    out = np.empty(n_rounds + 1)
    out[0] = dist0
    for t in range(n_rounds):
        out[t + 1] = rate * out[t] + floor
    return out


def sxy_phase2_fixed_point(p_min: float, nu: float, *, C1: float = 1.0, C2: float = 1.0) -> float:
    r"""Fixed point :math:`C_2 \nu \log(1/\nu) / (C_1 p_{min})` of the Phase-2 recursion.

    This is the final error of the global theorem, :math:`d(\hat\theta, \theta^*) \lesssim
    \nu \log(1/\nu) / p_{min}` (``+inf`` if ``nu >= 1``).
    """
    rate = _contraction(p_min, C1)
    return sxy_floor_term(nu, C2=C2) / (1.0 - rate)


def _step_per_direction(step_size, lam, local_solver, sizes, cov_trace):
    """Data-weighted move of the error along an eigen-direction ``lam`` of Sigma, per unit of data."""
    if local_solver == "fedavg":
        return step_size * lam
    n, w = _size_weights(sizes)
    return float(np.dot(w, step_size * lam / (1.0 + step_size * (lam + cov_trace / n))))


def _contraction_inputs(step_size, cov_low, local_solver, sizes, cov_trace):
    step_size = check_real("step_size", step_size, low=0.0, low_inclusive=False)
    cov_low = check_real("cov_low", cov_low, low=0.0, low_inclusive=False)
    check_choice("local_solver", local_solver, ("fedavg", "fedprox"))
    if local_solver == "fedprox":
        if sizes is None or cov_trace is None:
            raise ValueError("local_solver='fedprox' needs the client sizes and cov_trace = tr(Sigma)")
        cov_trace = check_real("cov_trace", cov_trace, low=0.0, low_inclusive=False)
    return step_size, cov_low, cov_trace


def sxy_contraction_constant(step_size: float, cov_low: float, local_solver: str = "fedavg", *,
                             sizes: ArrayLike | None = None, cov_trace: float | None = None) -> float:
    r"""The constant :math:`C_1` of the Phase-2 contraction :math:`1 - C_1 p_{min}`, derived in advance.

    See the module docstring for the derivation.

    .. math::

        C_1^{\text{FedAvg(1)}} = \eta \lambda_-, \qquad
        C_1^{\text{FedProx}} = \sum_i w_i \frac{\eta \lambda_-}{1 + \eta(\lambda_- + \operatorname{tr}\Sigma / n_i)},
        \quad w_i = n_i / \textstyle\sum n .

    Parameters
    ----------
    step_size : float > 0
        :math:`\eta` of the local solver (FedAvg's gradient step on
        :math:`\ell_i = \frac{1}{2n_i}\lVert X_i\theta - y_i\rVert^2`, or FedProx's proximal
        parameter), as in :func:`mixreg.algorithms.fedx`.
    cov_low : float > 0
        :math:`\lambda_-`, a lower bound on the eigenvalues of every :math:`\Sigma_l`.
    local_solver : {"fedavg", "fedprox"}
        FedAvg with one local step (the derivation for ``s > 1`` steps is not made: with
        one-point clients their local steps are unstable for :math:`\eta > 2/\lVert x\rVert^2`).
    sizes : int array of shape (M,), optional
        Client sizes; needed by FedProx.
    cov_trace : float > 0, optional
        :math:`\operatorname{tr}\Sigma` (e.g. ``d`` times the mean eigenvalue of the design);
        needed by FedProx.

    Returns
    -------
    float

    Examples
    --------
    >>> sxy_contraction_constant(1.0, 0.5)
    0.5
    >>> c = sxy_contraction_constant(1.0, 0.5, "fedprox", sizes=[1, 1000], cov_trace=10.0)
    >>> round(c, 4)  # the 1000-point client dominates: about 0.5 / 1.51
    0.3308
    """
    step_size, cov_low, cov_trace = _contraction_inputs(step_size, cov_low, local_solver, sizes, cov_trace)
    return float(_step_per_direction(step_size, cov_low, local_solver, sizes, cov_trace))


def sxy_predicted_contraction(step_size: float, fractions: ArrayLike, cov_low: float, cov_high: float,
                              local_solver: str = "fedavg", *, sizes: ArrayLike | None = None,
                              cov_trace: float | None = None) -> float:
    r"""Predicted worst per-round factor of Phase 2 with the labels right, from the design alone.

    .. math::

        \max_l \max_{\lambda \in \{\lambda_-, \lambda_+\}} |1 - p_l\, g(\lambda)|,
        \qquad g(\lambda) = \eta\lambda \ \text{(FedAvg(1))}, \quad
        g(\lambda) = \sum_i w_i \frac{\eta\lambda}{1 + \eta(\lambda + \operatorname{tr}\Sigma/n_i)}
        \ \text{(FedProx)},

    with :math:`p_l = N_l / N` the data fractions.  It equals :math:`1 - C_1 p_{min}`
    (:func:`sxy_contraction_constant`) unless a large cluster overshoots
    (:math:`\eta\, p_{max} \lambda_+ > 2 - \eta\, p_{min}\lambda_-`, FedAvg only).

    Parameters
    ----------
    step_size : float > 0
    fractions : array_like of shape (k,)
        Data fractions :math:`N_l / N` of the clusters (empty clusters, 0, are ignored).
    cov_low, cov_high : float, 0 < cov_low <= cov_high
        Bounds on the spectra of the :math:`\Sigma_l`.
    local_solver, sizes, cov_trace
        As for :func:`sxy_contraction_constant`.

    Returns
    -------
    float
        ``>= 1`` means the prediction is divergence (FedAvg with too large a step).

    Examples
    --------
    >>> sxy_predicted_contraction(1.0, [0.1, 0.45, 0.45], 0.5, 2.0)  # 1 - (1 * 0.5) * 0.1
    0.95
    >>> round(sxy_predicted_contraction(2.0, [0.1, 0.9], 0.5, 2.0), 2)  # the large cluster overshoots
    2.6
    """
    step_size, cov_low, cov_trace = _contraction_inputs(step_size, cov_low, local_solver, sizes, cov_trace)
    cov_high = check_real("cov_high", cov_high, low=cov_low)
    p = np.asarray(fractions, dtype=np.float64)
    if p.ndim != 1 or p.size == 0 or not np.isfinite(p).all() or np.any(p < 0) or np.any(p > 1):
        raise ValueError(f"fractions must be a non-empty 1-D array of values in [0, 1], got {fractions!r}")
    p = p[p > 0]
    g = np.array([_step_per_direction(step_size, lam, local_solver, sizes, cov_trace) for lam in (cov_low, cov_high)])
    return float(np.abs(1.0 - p[:, None] * g[None, :]).max())


def sxy_rounds_to_floor(rate: float, nu: float) -> float:
    r"""The global theorem's number of Phase-2 rounds, :math:`\rho^{-1} \log(1/\nu)` (unit constant).

    Parameters
    ----------
    rate : float in (0, 1)
        Per-round contraction factor; :math:`\rho = 1 - \text{rate}` (:math:`= C_1 p_{min}`).
    nu : float >= 0

    Returns
    -------
    float
        ``nan`` when :math:`\nu \ge 1` (the theorem says nothing there) or :math:`\nu = 0`.

    Examples
    --------
    >>> round(sxy_rounds_to_floor(0.9, 0.01), 2)  # log(100) / 0.1
    46.05
    """
    rate = check_real("rate", rate, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    nu = check_real("nu", nu, low=0.0)
    if nu == 0.0 or nu >= 1.0:
        return float("nan")
    return float(np.log(1.0 / nu) / (1.0 - rate))
