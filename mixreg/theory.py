"""The theorems' formulas, made executable.

IFCA (Ghosh, Chung, Yin, Ramchandran, NeurIPS 2020 version, linear model, Sec. 5.1): with
``p = min_j |S*_j| / m``, ``Delta = min_{j != j'} ||theta*_j - theta*_j'||``,
``rho = Delta^2 / sigma^2`` and ``n'`` fresh points per round for each of the identity estimate
and the gradient,

* Assumption 1: ``||theta_j^(0) - theta*_j|| <= Delta / 4``;
* Assumption 2 (separation part): ``Delta >~ (sigma / p) sqrt(d / (m n')) +
  exp(-c (rho / (rho + 1))^2 n')``;
* Theorem 1: with ``gamma = c1 / p``, one round gives
  ``||theta_j^+ - theta*_j|| <= 1/2 ||theta_j - theta*_j|| + c2 (sigma / p) sqrt(d / (m n')) +
  c3 exp(-c4 (rho / (rho + 1))^2 n')``.

The theorems hold for *some* universal constants that the papers do not give.  Every function
here takes them as arguments; the defaults are 1 ("unit constants") except where a short
calculation gives a natural value, which is then stated.  A figure that draws one of these must
say which constants it used (unit or fitted).
"""

from __future__ import annotations

import numpy as np

from ._validation import check_int, check_real

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


def ifca_step_size(p, c1=0.375):
    """Theorem 1's step size ``gamma = c1 / p``.

    With IFCA's per-client mean squared loss and ``x ~ N(0, I)``, a correctly clustered model
    moves as ``theta - theta* -> (I - 2 gamma H)(theta - theta*)`` plus noise, where the
    empirical Hessian ``H`` of its ``p m n'`` fresh points has eigenvalues in
    ``p_j [(1 - eta)^2, (1 + eta)^2]``, ``eta = sqrt(d / (p m n'))``.  For balanced clusters
    (``p_j = p``) the factor is ``|1 - 2 c1 lambda|``: ``c1 = 1/4`` gives 1/2 only on average
    (the worst case is about ``1/2 + eta``), while any ``c1`` in
    ``[1 / (4 (1 - eta)^2), 3 / (4 (1 + eta)^2)]`` keeps it at most 1/2; the default
    ``c1 = 3/8`` does so for ``eta <= 0.16`` (``p m n' >= 40 d``) and averages 1/4.  The paper
    leaves ``c1`` unspecified (derived here and checked in the property test of Theorem 1).
    """
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False)
    c1 = check_real("c1", c1, low=0.0, low_inclusive=False)
    return c1 / p


def ifca_error_floor(sigma, p, d, m, n_prime, delta, *, c2=1.0, c3=1.0, c4=1.0):
    """Additive term of Theorem 1 / Corollary 1.

    ``c2 (sigma / p) sqrt(d / (m n')) + c3 exp(-c4 (rho / (rho + 1))^2 n')`` with
    ``rho = delta^2 / sigma^2`` (``rho / (rho + 1) = 1`` when ``sigma = 0``).
    """
    sigma = check_real("sigma", sigma, low=0.0)
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False)
    d = check_int("d", d, low=1)
    m = check_int("m", m, low=1)
    n_prime = check_int("n_prime", n_prime, low=1)
    delta = check_real("delta", delta, low=0.0)
    ratio = 1.0 if sigma == 0 else delta**2 / (delta**2 + sigma**2)
    return c2 * (sigma / p) * np.sqrt(d / (m * n_prime)) + c3 * np.exp(-c4 * ratio**2 * n_prime)


def ifca_one_round_bound(dist, sigma, p, d, m, n_prime, delta, *, c2=1.0, c3=1.0, c4=1.0):
    """Right-hand side of Theorem 1: ``dist / 2 + ifca_error_floor(...)``."""
    dist = check_real("dist", dist, low=0.0)
    return 0.5 * dist + ifca_error_floor(sigma, p, d, m, n_prime, delta, c2=c2, c3=c3, c4=c4)


def ifca_separation_threshold(sigma, p, d, m, n_prime, *, C=1.0, c=1.0):
    """Smallest ``Delta`` satisfying Assumption 2's separation condition with constants ``C, c``.

    Solves ``Delta = C [(sigma / p) sqrt(d / (m n')) + exp(-c (rho / (rho + 1))^2 n')]`` with
    ``rho = Delta^2 / sigma^2`` by bisection (the left side increases and the right side
    decreases in ``Delta``, so the root is unique).
    """
    sigma = check_real("sigma", sigma, low=0.0)
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False)
    d = check_int("d", d, low=1)
    m = check_int("m", m, low=1)
    n_prime = check_int("n_prime", n_prime, low=1)
    C = check_real("C", C, low=0.0, low_inclusive=False)
    c = check_real("c", c, low=0.0, low_inclusive=False)
    a = (sigma / p) * np.sqrt(d / (m * n_prime))

    if sigma == 0:  # rho = inf: the condition is explicit
        return C * (a + np.exp(-c * n_prime))

    def rhs(delta):
        ratio = delta**2 / (delta**2 + sigma**2)
        return C * (a + np.exp(-c * ratio**2 * n_prime))

    lo, hi = C * a, C * (a + 1.0)  # the root is at least C a > 0, so 200 halvings resolve it
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid < rhs(mid):
            lo = mid
        else:
            hi = mid
    return hi


def fit_log_constant(observed, reference):
    """Least-squares fit of ``C`` in ``observed = C * reference`` on the log scale.

    ``C = exp(mean(log(observed / reference)))`` over the pairs where both are finite and
    positive; ``nan`` when there is no such pair.  Used to draw a theory curve whose constant
    the paper does not give (the figure must say "fitted").
    """
    obs = np.asarray(observed, dtype=np.float64).ravel()
    ref = np.asarray(reference, dtype=np.float64).ravel()
    if obs.shape != ref.shape:
        raise ValueError(f"observed and reference must have the same size, got {obs.size} and {ref.size}")
    ok = np.isfinite(obs) & np.isfinite(ref) & (obs > 0) & (ref > 0)
    if not ok.any():
        return float("nan")
    return float(np.exp(np.mean(np.log(obs[ok] / ref[ok]))))


def fit_separation_constant(observed_delta, sigma, p, d, m, n_prime):
    """Fit ``C`` in ``Delta_50 = C (sigma / p) sqrt(d / (m n'))`` by least squares in log space.

    ``observed_delta`` are the empirical separations at which success crosses 1/2, one per noise
    level in ``sigma`` (same length; points with ``sigma = 0`` or a non-finite or non-positive
    separation are skipped, and the exponential term is dropped, being negligible at the ``n'``
    of the experiments).  Returns ``nan`` when no point is left to fit.
    """
    obs = np.atleast_1d(np.asarray(observed_delta, dtype=float))
    sig = np.atleast_1d(np.asarray(sigma, dtype=float))
    if obs.ndim != 1 or sig.shape != obs.shape:
        raise ValueError(f"observed_delta and sigma must be 1-D of the same length, got shapes {obs.shape} and {sig.shape}")
    if np.any(~np.isfinite(sig)) or np.any(sig < 0):
        raise ValueError(f"sigma must be finite and >= 0, got {sig.tolist()}")
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False)
    d = check_int("d", d, low=1)
    m = check_int("m", m, low=1)
    n_prime = check_int("n_prime", n_prime, low=1)
    return fit_log_constant(obs, (sig / p) * np.sqrt(d / (m * n_prime)))  # sigma = 0: reference 0, skipped


# --------------------------------------------------------------------------------------------
# Su, Xu and Yang (NeurIPS 2022), Phase 2: FedX + clustering
# --------------------------------------------------------------------------------------------
# Theorem (slide "Theoretical guarantee for Phase 2"): if d(theta_T, theta*) <= epsilon, then
# w.h.p. for all t >= T
#     d(theta_{t+1}, theta*) <= (1 - C1 p_min) d(theta_t, theta*) + C2 nu log(1/nu),
#     nu = sum_i k w_i exp(-C3 n_i) + C4 sqrt(d k log k / M * (chi2(w) + 1)),
# with w_i = n_i / sum_i' n_i' and chi2(w) the chi-square divergence of w from uniform on [M].
# Global theorem: Phase 2 for Theta(rho^-1 log(1/nu)) rounds reaches d <~ nu log(1/nu) / p_min.
# The constants C1..C4 are universal but unstated; every function takes them as arguments with
# unit defaults ("unit constants"), and a figure must say whether it used unit or fitted ones.


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
