"""IFCA's theory (Ghosh, Chung, Yin, Ramchandran, NeurIPS 2020 version, linear model, Sec. 5.1).

With ``p = min_j |S*_j| / m``, ``Delta = min_{j != j'} ||theta*_j - theta*_j'||``,
``rho = Delta^2 / sigma^2`` and ``n'`` fresh points per round for each of the identity estimate
and the gradient,

* Assumption 1: ``||theta_j^(0) - theta*_j|| <= Delta / 4``;
* Assumption 2 (separation part): ``Delta >~ (sigma / p) sqrt(d / (m n')) +
  exp(-c (rho / (rho + 1))^2 n')``;
* Theorem 1: with ``gamma = c1 / p``, one round gives
  ``||theta_j^+ - theta*_j|| <= 1/2 ||theta_j - theta*_j|| + c2 (sigma / p) sqrt(d / (m n')) +
  c3 exp(-c4 (rho / (rho + 1))^2 n')``.

The constants ``c1..c4`` and ``C, c`` are universal but unstated; see :mod:`mixreg.theory`.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_real

__all__ = ["ifca_step_size", "ifca_error_floor", "ifca_one_round_bound", "ifca_separation_threshold"]


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
