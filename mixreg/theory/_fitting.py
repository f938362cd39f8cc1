"""Fitting the constants the papers do not give, by least squares on the log scale.

A theory curve drawn with a fitted constant must say so on the figure ("fitted").
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_real

__all__ = ["fit_log_constant", "fit_separation_constant"]


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
