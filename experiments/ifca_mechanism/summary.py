"""Summary helpers shared by the IFCA mechanism studies."""

from __future__ import annotations

import math

__all__ = ["ok_records", "assumption2_unit"]


def ok_records(records):
    """The records of the trials that did not fail."""
    return [r for r in records if not r.get("error")]


def assumption2_unit(*, m, p, n_prime, d, sigma, rho):
    """Assumption 2 of IFCA's Theorem 1 with unit constants (our reading of its ``>~``), ``Delta = 1``:
    ``n' >= log(m) / (rho/(rho+1))^2``, ``p m n' >= d``, ``d >= log m`` and the separation
    ``1 >= (sigma/p) sqrt(d/(m n')) + exp(-(rho/(rho+1))^2 n')``; ``rho = Delta^2 / sigma^2`` is given
    with ``sigma`` (as the caller computed it, so that no rounding moves a boundary).

    Examples
    --------
    >>> assumption2_unit(m=40, p=0.5, n_prime=20, d=10, sigma=0.3, rho=1 / 0.3**2)
    True
    >>> assumption2_unit(m=40, p=0.5, n_prime=2, d=10, sigma=0.3, rho=1 / 0.3**2)
    False
    """
    ratio = rho / (rho + 1.0)
    sep = (sigma / p) * math.sqrt(d / (m * n_prime)) + math.exp(-ratio**2 * n_prime)
    return n_prime >= math.log(m) / ratio**2 and p * m * n_prime >= d and d >= math.log(m) and 1.0 >= sep
