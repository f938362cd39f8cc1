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
]


def ifca_step_size(p, c1=0.25):
    """Theorem 1's step size ``gamma = c1 / p``.

    With IFCA's per-client mean squared loss and ``x ~ N(0, I)``, the expected update of a
    correctly clustered model is ``theta - theta* -> (1 - 2 gamma p_j)(theta - theta*)``, so
    ``c1 = 1/4`` gives exactly the theorem's contraction factor 1/2 for the smallest cluster
    (derived here; the paper leaves ``c1`` unspecified).
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

    def rhs(delta):
        ratio = 1.0 if sigma == 0 else delta**2 / (delta**2 + sigma**2)
        return C * (a + np.exp(-c * ratio**2 * n_prime))

    lo, hi = 0.0, C * (a + 1.0)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid < rhs(mid):
            lo = mid
        else:
            hi = mid
    return hi


def fit_separation_constant(observed_delta, sigma, p, d, m, n_prime):
    """Fit ``C`` in ``Delta_50 = C (sigma / p) sqrt(d / (m n'))`` by least squares in log space.

    ``observed_delta`` are the empirical separations at which success crosses 1/2, one per noise
    level ``sigma`` (``sigma > 0``; the exponential term is negligible at the ``n'`` of the
    experiments and is dropped).  Returns ``nan`` when there is nothing to fit.
    """
    obs = np.asarray(observed_delta, dtype=float)
    sig = np.asarray(sigma, dtype=float)
    ok = np.isfinite(obs) & (obs > 0) & (sig > 0)
    if not ok.any():
        return float("nan")
    base = (sig[ok] / p) * np.sqrt(d / (m * n_prime))
    return float(np.exp(np.mean(np.log(obs[ok] / base))))
