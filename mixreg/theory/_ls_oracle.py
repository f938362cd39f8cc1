r"""Known-label least squares (the oracle of the IFCA success experiments), as predictions.

Once the clusters are known, the best any method can do on cluster ``l`` is least squares on
its ``N_l`` pooled points.  With Gaussian design :math:`x \sim N(0, I_d)` and noise
:math:`N(0, \sigma^2)`, the error :math:`e_l = \hat\theta^{LS}_l - \theta^*_l` satisfies

.. math::

    \lVert e_l \rVert^2 = \sigma^2\, g^\top W^{-1} g, \qquad
    g \sim N(0, I_d), \quad W = X^\top X \sim W_d(N_l, I_d)\ \text{independent of } g,

so its first two moments are exact (inverse-Wishart moments, e.g. Press (1982), or the
``Inverse-Wishart`` covariance formula), with :math:`q = N_l - d`:

.. math::

    E \lVert e_l\rVert^2 / \sigma^2 = \frac{d}{q - 1}, \qquad
    \operatorname{Var} \lVert e_l\rVert^2 / \sigma^4 = 2\, E \operatorname{tr} W^{-2}
    + \operatorname{Var} \operatorname{tr} W^{-1},

    E \operatorname{tr} W^{-2} = \frac{2d + (q - 1)(d^2 + d)}{q (q-1)^2 (q-3)} + \frac{d}{(q-1)^2},
    \qquad
    \operatorname{Var} \operatorname{tr} W^{-1} = \frac{2 d^2 + 2 (q - 1) d}{q (q-1)^2 (q-3)} .

The success rules compare the mean over clusters of :math:`\lVert e_l\rVert` with a
threshold ``t`` (``0.6 sigma + offset``).  These functions turn that into predictions that
depend on the problem's sizes only, so they are fixed before any run:

* :func:`ls_error_moments`: the two exact moments above;
* :func:`ls_oracle_success_probability`: :math:`P(\frac1k \sum_l \lVert e_l\rVert < t)`,
  approximating each :math:`\lVert e_l\rVert^2` by the gamma law with the exact two moments
  and the mean over clusters by a normal law (checked against simulation to within 0.01 at
  ``d = 50``; the approximation is ours);
* :func:`ls_points_needed`: the smallest pooled size ``N`` per cluster at which the RMS
  error :math:`\sigma \sqrt{d / (N - d - 1)}` (:func:`mixreg.metrics.oracle_ls_floor`) is at
  most ``t``: below it the typical known-label error exceeds the threshold, and success is
  unlikely for any method (impossible in the limit of large ``d``, where the error
  concentrates at its RMS).

General covariance (every function's ``covariance=``).  With rows :math:`x \sim N(0, \Sigma)`,
:math:`X = Z \Sigma^{1/2}` with :math:`Z` standard, so
:math:`\lVert e_l\rVert^2 = \sigma^2\, h^\top V^{-1} h` with :math:`V = Z^\top Z \sim W_d(N_l,
I_d)` and :math:`h = \Sigma^{-1/2} g \sim N(0, A)`, :math:`A = \Sigma^{-1}`.  The same
inverse-Wishart moments (:math:`\operatorname{Cov}(U_{ij}, U_{kl}) = [2 \delta_{ij}\delta_{kl}
+ (q - 1)(\delta_{ik}\delta_{jl} + \delta_{il}\delta_{jk})] / [q (q-1)^2 (q-3)]` for
:math:`U = V^{-1}`, Press (1982)) give, with :math:`t_1 = \operatorname{tr} A` and
:math:`t_2 = \operatorname{tr} A^2` (sums of the inverse eigenvalues of :math:`\Sigma` and
of their squares),

.. math::

    E \lVert e_l\rVert^2 / \sigma^2 = \frac{t_1}{q - 1}, \qquad
    \operatorname{Var} \lVert e_l\rVert^2 / \sigma^4 = 2\, E \operatorname{tr} (A U)^2
    + \operatorname{Var} \operatorname{tr} A U,

    E \operatorname{tr} (A U)^2 = \frac{2 t_2 + (q - 1)(t_1^2 + t_2)}{q (q-1)^2 (q-3)}
    + \frac{t_2}{(q-1)^2},
    \qquad
    \operatorname{Var} \operatorname{tr} A U = \frac{2 t_1^2 + 2 (q - 1) t_2}{q (q-1)^2 (q-3)},

which are the formulas above at :math:`\Sigma = I` (:math:`t_1 = t_2 = d`); the success
probability uses them in the same gamma and normal approximation.  ``covariance=None`` is the
identity, computed by the formulas above as before.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln
from scipy.stats import norm

from .._typing import ArrayLike
from ..validation import check_covariance, check_int, check_real

__all__ = ["ls_error_moments", "ls_oracle_success_probability", "ls_points_needed"]


def ls_error_moments(d: int, N: int, *, covariance: ArrayLike | None = None) -> tuple[float, float]:
    r"""Exact mean and variance of :math:`\lVert\hat\theta^{LS} - \theta^*\rVert^2 / \sigma^2`.

    Parameters
    ----------
    d : int
        Dimension, ``>= 1``.
    N : int
        Pooled points of the cluster, ``>= 0``.
    covariance : array_like of shape (d, d), optional
        The rows' covariance :math:`\Sigma` (symmetric positive definite); the identity when
        omitted.

    Returns
    -------
    mean, var : float
        ``tr(Sigma^-1) / (N - d - 1)`` (``d / (N - d - 1)`` for the identity) and the variance
        of the module's formulas; ``inf`` where a moment does not exist (``N <= d + 1`` for the
        mean, ``N <= d + 3`` for the variance).

    Examples
    --------
    >>> mean, var = ls_error_moments(50, 150)
    >>> round(mean, 4), round(var, 4)
    (0.5051, 0.0157)
    >>> round(ls_error_moments(2, 13, covariance=[[2.0, 0.0], [0.0, 0.5]])[0], 4)  # (1/2 + 2) / 10
    0.25
    """
    d = check_int("d", d, low=1)
    N = check_int("N", N, low=0)
    if covariance is not None:
        return _moments(d, N, _inverse_traces(check_covariance(covariance, d, name="covariance")))
    return _moments(d, N, (d, d))  # Sigma = I: tr Sigma^-1 = tr Sigma^-2 = d, in exact integer arithmetic


def _inverse_traces(covariance):
    """``(tr Sigma^-1, tr Sigma^-2)`` of a valid covariance, from its eigenvalues."""
    inverse = 1.0 / np.linalg.eigvalsh(covariance)
    return float(inverse.sum()), float(inverse @ inverse)


def _moments(d, N, traces):
    """:func:`ls_error_moments` under a covariance of inverse traces ``traces = (t1, t2)``."""
    t1, t2 = traces
    q = N - d
    if q <= 1:
        return math.inf, math.inf
    mean = t1 / (q - 1)
    if q <= 3:
        return mean, math.inf
    denom = q * (q - 1) ** 2 * (q - 3)
    e_tr_sq = (2 * t2 + (q - 1) * (t1 * t1 + t2)) / denom + t2 / (q - 1) ** 2
    var_tr = (2 * t1 * t1 + 2 * (q - 1) * t2) / denom
    return mean, 2.0 * e_tr_sq + var_tr


def _norm_moments(d, N, traces=None):
    """Mean and variance of ``||e|| / sigma`` under the gamma law with the exact two moments
    (under a covariance of inverse traces ``traces``; the identity for ``None``)."""
    mean_sq, var_sq = ls_error_moments(d, N) if traces is None else _moments(d, N, traces)
    if not math.isfinite(var_sq):
        return math.inf, math.inf
    shape, scale = mean_sq**2 / var_sq, var_sq / mean_sq
    mean = math.sqrt(scale) * math.exp(gammaln(shape + 0.5) - gammaln(shape))
    return mean, max(shape * scale - mean**2, 0.0)


def ls_oracle_success_probability(sigma: float, d: int, cluster_sizes: ArrayLike, threshold: float, *,
                                  covariance: ArrayLike | None = None) -> float:
    r"""Predicted probability that known-label least squares meets the success threshold.

    :math:`P\big(\frac1k \sum_l \lVert\hat\theta^{LS}_l - \theta^*_l\rVert < t\big)` for
    independent clusters of ``cluster_sizes`` pooled Gaussian points (see the module text for
    the approximation).  Depends on the sizes only: a prediction fixed before any run.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, ``>= 0``.
    d : int
        Dimension.
    cluster_sizes : array_like of int, shape (k,)
        Pooled points ``N_l`` per cluster.
    threshold : float
        ``t >= 0`` (``0.6 sigma + offset`` in the IFCA experiments; success is ``dist < t``,
        so ``t = 0`` gives 0).
    covariance : array_like of shape (d, d) or (k, d, d), optional
        The rows' covariance :math:`\Sigma_l` (symmetric positive definite), one for every
        cluster or one per cluster; the identity when omitted.

    Returns
    -------
    float in [0, 1]
        0 when a cluster has ``N_l <= d + 3`` (our choice: the error then has no variance and
        is typically many times ``sigma``, or least squares is not unique); for ``sigma = 0``
        (our choice, as :func:`mixreg.metrics.oracle_ls_floor`): 1 when every ``N_l >= d``
        (solved exactly) and ``t > 0``, else 0.

    Examples
    --------
    >>> round(ls_oracle_success_probability(0.1, 50, [200, 200], 0.06), 2)
    0.7
    >>> ls_oracle_success_probability(0.1, 1000, [5000, 5000], 0.06)
    1.0
    >>> round(ls_oracle_success_probability(0.1, 50, [200, 200], 0.06, covariance=2 * np.eye(50)), 2)
    1.0
    """
    sigma = check_real("sigma", sigma, low=0.0)
    d = check_int("d", d, low=1)
    threshold = check_real("threshold", threshold, low=0.0)
    sizes = np.asarray(cluster_sizes)
    if sizes.ndim != 1 or sizes.size == 0 or sizes.dtype.kind not in "iu" or np.any(sizes < 0):
        raise ValueError(f"cluster_sizes must be a non-empty 1-D array of integers >= 0, got {cluster_sizes!r}")
    traces = [None] * sizes.size if covariance is None else _cluster_traces(covariance, d, sizes.size)
    if threshold == 0.0:
        return 0.0
    if sigma == 0.0:
        return float(np.all(sizes >= d))
    moments = [_norm_moments(d, int(N), t) for N, t in zip(sizes, traces)]
    if any(not math.isfinite(v) for _, v in moments):
        return 0.0
    k = sizes.size
    mean = sum(m for m, _ in moments) / k
    sd = math.sqrt(sum(v for _, v in moments)) / k
    return float(norm.cdf((threshold / sigma - mean) / sd))


def _cluster_traces(covariance, d, k):
    """:func:`_inverse_traces` of each of ``k`` clusters, from one ``(d, d)`` covariance or
    ``(k, d, d)`` (each validated)."""
    arr = np.asarray(covariance)
    if arr.ndim == 2:
        return [_inverse_traces(check_covariance(arr, d, name="covariance"))] * k
    if arr.ndim != 3 or arr.shape[0] != k:
        raise ValueError(f"covariance must have shape (d, d) = ({d}, {d}) or (k, d, d) = ({k}, {d}, {d}) "
                         f"with k = len(cluster_sizes), got {arr.shape}")
    return [_inverse_traces(check_covariance(arr[l], d, name=f"covariance[{l}]")) for l in range(k)]


def ls_points_needed(sigma: float, d: int, threshold: float, *, covariance: ArrayLike | None = None) -> float:
    r"""Smallest pooled size ``N`` per cluster whose known-label RMS error is at most ``threshold``.

    Solves :math:`\sigma \sqrt{d / (N - d - 1)} \le t`, i.e. :math:`N \ge d + 1 + d \sigma^2 / t^2`
    (real-valued; ``d`` when ``sigma = 0``, where least squares is exact once ``N >= d``;
    ``inf`` when ``threshold = 0``, which no error meets).
    With ``N = m n / k`` (balanced clusters) the boundary in the ``(m, n)`` plane is
    ``m n = k N``.

    Examples
    --------
    >>> round(ls_points_needed(0.1, 1000, 0.06), 1)  # the official m-n sweeps' rule
    3778.8

    With ``covariance`` :math:`\Sigma` (``(d, d)``, symmetric positive definite) the RMS error
    is :math:`\sigma \sqrt{\operatorname{tr} \Sigma^{-1} / (N - d - 1)}` and ``d`` in the
    bound's ``d sigma^2 / t^2`` becomes :math:`\operatorname{tr} \Sigma^{-1}`.
    """
    sigma = check_real("sigma", sigma, low=0.0)
    d = check_int("d", d, low=1)
    threshold = check_real("threshold", threshold, low=0.0)
    if covariance is not None:
        t1, _ = _inverse_traces(check_covariance(covariance, d, name="covariance"))
        if threshold == 0.0:
            return math.inf
        if sigma == 0.0:
            return float(d)
        ratio = sigma / threshold
        return float(d + 1 + t1 * ratio * ratio)
    if threshold == 0.0:
        return math.inf
    if sigma == 0.0:
        return float(d)
    try:
        return float(d + 1 + d * sigma**2 / threshold**2)
    except (OverflowError, ZeroDivisionError):  # a square outside the float range: the same number as a ratio
        ratio = sigma / threshold
        return float(d + 1 + d * ratio * ratio)
