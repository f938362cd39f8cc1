"""Su, Xu and Yang (NeurIPS 2022), Phase 2: FedX + clustering.

Theorem (slide "Theoretical guarantee for Phase 2"): if ``d(theta_T, theta*) <= epsilon``, then
w.h.p. for all ``t >= T``::

    d(theta_{t+1}, theta*) <= (1 - C1 p_min) d(theta_t, theta*) + C2 nu log(1/nu),
    nu = sum_i k w_i exp(-C3 n_i) + C4 sqrt(d k log k / M * (chi2(w) + 1)),

with ``w_i = n_i / sum_i' n_i'`` and ``chi2(w)`` the chi-square divergence of ``w`` from uniform
on ``[M]``.  Global theorem: Phase 2 for ``Theta(rho^-1 log(1/nu))`` rounds reaches
``d <~ nu log(1/nu) / p_min``.  The constants ``C1..C4`` are universal but unstated; every
function takes them as arguments with unit defaults ("unit constants"), and a figure must say
whether it used unit or fitted ones.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_real

__all__ = [
    "chi_square_from_uniform",
    "sxy_nu_terms",
    "sxy_nu",
    "sxy_floor_term",
    "sxy_phase2_bound",
    "sxy_phase2_recursion",
    "sxy_phase2_fixed_point",
]


def chi_square_from_uniform(weights):
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


def sxy_nu_terms(sizes, d, k, *, C3=1.0, C4=1.0):
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


def sxy_nu(sizes, d, k, *, C3=1.0, C4=1.0):
    """Su-Xu-Yang's :math:`\\nu = \\nu_1 + \\nu_2` (see :func:`sxy_nu_terms`)."""
    nu1, nu2 = sxy_nu_terms(sizes, d, k, C3=C3, C4=C4)
    return nu1 + nu2


def sxy_floor_term(nu, *, C2=1.0):
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


def sxy_phase2_bound(dist, p_min, nu, *, C1=1.0, C2=1.0):
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


def sxy_phase2_recursion(dist0, p_min, nu, n_rounds, *, C1=1.0, C2=1.0):
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


def sxy_phase2_fixed_point(p_min, nu, *, C1=1.0, C2=1.0):
    r"""Fixed point :math:`C_2 \nu \log(1/\nu) / (C_1 p_{min})` of the Phase-2 recursion.

    This is the final error of the global theorem, :math:`d(\hat\theta, \theta^*) \lesssim
    \nu \log(1/\nu) / p_{min}` (``+inf`` if ``nu >= 1``).
    """
    rate = _contraction(p_min, C1)
    return sxy_floor_term(nu, C2=C2) / (1.0 - rate)
