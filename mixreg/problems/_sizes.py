"""Unbalanced clients and per-cluster covariances (Su, Xu and Yang 2022): size laws, ``Sigma_l``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._typing import IntArray
from ..validation import check_choice, check_int, check_real
from ._checks import check_rng


#: Named laws of the client sizes ``n_i`` understood by :func:`size_law` / :func:`client_sizes`.
SIZE_LAWS = ("equal", "zipf", "pareto", "lognormal")

# the parameter of each law that ``mean=`` calibrates, and the law's other parameters
_SIZE_SHAPE = {"equal": "n", "zipf": "a", "pareto": "alpha", "lognormal": "median"}
_SIZE_OTHER = {"equal": (), "zipf": (), "pareto": (), "lognormal": ("s",)}
_MAX_SUPPORT = 10**7  # the law is an explicit table over n_min..n_max: at most this many sizes
_SIZE_DEFAULTS = {"zipf": {"a": 2.0}, "pareto": {"alpha": 1.0}, "lognormal": {"median": 4.0, "s": 1.0}}


@dataclass(frozen=True, kw_only=True, eq=False)
class SizeLaw:
    """A law of client sizes on the integers ``n_min..n_max``, as an explicit probability table.

    Attributes
    ----------
    law : str
        One of :data:`SIZE_LAWS`.
    n_min, n_max : int
        Support bounds (inclusive).
    params : dict
        The law's parameters after calibration (see :func:`size_law`).
    support : ndarray of shape (n_max - n_min + 1,), int64
    pmf : ndarray of shape (n_max - n_min + 1,), float64
        Probabilities, summing to 1.
    """

    law: str
    n_min: int
    n_max: int
    params: dict
    support: np.ndarray
    pmf: np.ndarray

    @property
    def mean(self) -> float:
        """Expected client size ``E[n_i]``."""
        return float(self.pmf @ self.support)

    @property
    def second_moment(self) -> float:
        """``E[n_i^2]``; ``E[n^2] / E[n]^2 - 1`` is the large-``M`` limit of ``chi2(w)``."""
        return float(self.pmf @ self.support.astype(np.float64) ** 2)

    def sample(self, m: int, *, rng: np.random.Generator) -> IntArray:
        """``m`` i.i.d. sizes, int64 array of shape (m,)."""
        m = check_int("m", m, low=1)
        check_rng(rng)
        return rng.choice(self.support, size=m, p=self.pmf).astype(np.int64)


def _size_pmf(law, support, value, other):
    """Unnormalised probability table of ``law`` with shape/scale parameter ``value``."""
    n = support.astype(np.float64)
    if law == "equal":
        return (support == value).astype(np.float64)
    if law == "zipf":  # P(n) proportional to n^-a, computed in log space for large |a|
        logw = -value * np.log(n)
        return np.exp(logw - logw.max())
    if law == "pareto":  # floor of a continuous Pareto(alpha) with scale n_min, truncated
        return (n / n[0]) ** -value - ((n + 1.0) / n[0]) ** -value
    # lognormal: nearest integer of exp(N(log median, s^2)), truncated to the support
    from scipy.stats import norm

    mu, s = np.log(value), other["s"]
    upper = norm.cdf((np.log(n + 0.5) - mu) / s)
    lower = norm.cdf((np.log(n - 0.5) - mu) / s)  # n >= 1, so n - 1/2 > 0
    return np.clip(upper - lower, 0.0, None)


def _table_mean(law, support, value, other):
    w = _size_pmf(law, support, value, other)
    total = w.sum()
    return float(w @ support / total) if total > 0 else float("nan")


def size_law(law: str = "zipf", *, n_min: int = 1, n_max: int = 1000, mean: float | None = None,
             **params: float) -> SizeLaw:
    r"""A named law of client sizes ``n_i`` on ``{n_min, ..., n_max}``.

    Su, Xu and Yang allow arbitrarily unbalanced sizes, some clients holding O(1) points, and
    motivate this by heavy-tailed local data sizes (abstract and introduction of
    arXiv:2206.07279); they do not name a law.  These are ours, each an exact probability table
    so that means and :math:`\chi^2(w)` limits are computable:

    ``"equal"`` (parameter ``n``)
        Every client has ``n`` points.
    ``"zipf"`` (parameter ``a``, default 2)
        :math:`P(n) \propto n^{-a}` (discrete power law, truncated).
    ``"pareto"`` (parameter ``alpha``, default 1)
        :math:`n = \lfloor X \rfloor` with :math:`X` Pareto of scale ``n_min`` and tail index
        ``alpha``, truncated to :math:`[n_{min}, n_{max} + 1)`:
        :math:`P(n) \propto (n/n_{min})^{-\alpha} - ((n+1)/n_{min})^{-\alpha}`.
    ``"lognormal"`` (parameters ``median``, default 4, and ``s``, default 1)
        :math:`n` is the nearest integer to :math:`\exp(N(\log \text{median}, s^2))`,
        truncated to the support.

    Parameters
    ----------
    law : {"equal", "zipf", "pareto", "lognormal"}
    n_min : int >= 1
        Smallest size (``1`` lets single-point clients exist).
    n_max : int in [n_min, n_min + 10**7 - 1]
        Largest size (the law is an explicit table over the support).
    mean : float, optional
        Calibrate the law's main parameter (``n``, ``a``, ``alpha`` or ``median``) so that
        :math:`E[n_i]` equals ``mean`` (bisection; the mean is monotone in each of them).  That
        parameter must then not be given.  For ``"equal"``, ``mean`` must be an integer.
    **params
        The law's parameters (see above); unknown names raise.

    Returns
    -------
    SizeLaw

    Examples
    --------
    >>> law = size_law("zipf", n_min=1, n_max=200, mean=6.0)
    >>> round(law.mean, 6), bool(law.pmf[0] > 0.5)
    (6.0, True)
    """
    check_choice("law", law, SIZE_LAWS)
    n_min = check_int("n_min", n_min, low=1)
    n_max = check_int("n_max", n_max, low=n_min, high=n_min + _MAX_SUPPORT - 1)
    shape = _SIZE_SHAPE[law]
    allowed = (shape, *_SIZE_OTHER[law])
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown} for law={law!r}; allowed: {list(allowed)}")
    other = {name: check_real(name, params.get(name, _SIZE_DEFAULTS[law][name]), low=0.0,
                              low_inclusive=False) for name in _SIZE_OTHER[law]}
    support = np.arange(n_min, n_max + 1, dtype=np.int64)
    value: float  # the law's shape parameter (an int for law='equal')
    if mean is not None:
        if shape in params:
            raise ValueError(f"give either mean or {shape} for law={law!r}, not both")
        mean = check_real("mean", mean, low=float(n_min), high=float(n_max))
        if law == "equal":
            if mean != int(mean):
                raise ValueError(f"mean must be an integer for law='equal', got {mean!r}")
            value = int(mean)
        else:
            value = _calibrate_size_parameter(law, support, mean, other)
    elif law == "equal":
        if "n" not in params:
            raise ValueError("law='equal' needs n (the common size) or mean")
        value = check_int("n", params["n"], low=n_min, high=n_max)
    else:
        default = _SIZE_DEFAULTS[law][shape]
        if law == "zipf":
            value = check_real("a", params.get("a", default))
        else:
            value = check_real(shape, params.get(shape, default), low=0.0, low_inclusive=False)
    w = _size_pmf(law, support, value, other)
    if not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError(f"law={law!r} with {shape}={value!r} puts no mass on [{n_min}, {n_max}]")
    return SizeLaw(law=law, n_min=n_min, n_max=n_max, params={shape: value, **other},
                   support=support, pmf=w / w.sum())


def _calibrate_size_parameter(law, support, target, other):
    """Bisection for the main parameter giving mean ``target`` (mean is monotone in it)."""
    if law == "zipf":
        lo, hi, increasing, logscale = -60.0, 60.0, False, False
    elif law == "pareto":
        lo, hi, increasing, logscale = 1e-6, 60.0, False, True
    else:  # lognormal median
        lo, hi, increasing, logscale = 1e-3 * support[0], 1e3 * support[-1], True, True
    means = [_table_mean(law, support, v, other) for v in (lo, hi)]
    reach = (min(means), max(means))
    if not reach[0] <= target <= reach[1]:
        raise ValueError(
            f"mean={target!r} is not reachable by law={law!r} on [{support[0]}, {support[-1]}]; "
            f"reachable means lie in [{reach[0]:.4g}, {reach[1]:.4g}]")
    for _ in range(200):
        mid = np.sqrt(lo * hi) if logscale else 0.5 * (lo + hi)
        if (_table_mean(law, support, mid, other) < target) == increasing:
            lo = mid
        else:
            hi = mid
    return float(np.sqrt(lo * hi) if logscale else 0.5 * (lo + hi))


def client_sizes(m: int, law: str = "zipf", *, rng: np.random.Generator, n_min: int = 1, n_max: int = 1000,
                 mean: float | None = None, **params: float) -> IntArray:
    """Draw ``m`` client sizes i.i.d. from :func:`size_law` ``(law, n_min, n_max, mean, **params)``.

    Parameters
    ----------
    m : int >= 1
        Number of clients.
    law, n_min, n_max, mean, **params
        See :func:`size_law`.
    rng : numpy.random.Generator

    Returns
    -------
    sizes : ndarray of shape (m,), int64
        Pass it as ``n`` to :func:`make_problem` or :func:`make_problem_from_parameters`.

    Examples
    --------
    >>> n = client_sizes(1000, "zipf", rng=np.random.default_rng(0), n_max=100, a=2.0)
    >>> int(n.min()), bool((n == 1).mean() > 0.5)
    (1, True)
    """
    m = check_int("m", m, low=1)
    check_rng(rng)
    return size_law(law, n_min=n_min, n_max=n_max, mean=mean, **params).sample(m, rng=rng)


def diagonal_covariances(k: int, d: int, *, rng: np.random.Generator, low: float = 0.5,
                         high: float = 2.0) -> np.ndarray:
    """Random diagonal per-cluster covariances ``Sigma_l`` with spectrum in ``[low, high]``.

    Each diagonal entry is drawn independently and log-uniformly on ``[low, high]``, so every
    ``Sigma_l`` has condition number at most ``high / low`` (Su-Xu-Yang's model lets the
    feature covariance depend on the cluster, ``E[x x^T] = Sigma_l``; the law is ours).

    Parameters
    ----------
    k, d : int >= 1
    rng : numpy.random.Generator
    low, high : float, 0 < low <= high

    Returns
    -------
    covariances : ndarray of shape (k, d, d), float64
    """
    k = check_int("k", k, low=1)
    d = check_int("d", d, low=1)
    low = check_real("low", low, low=0.0, low_inclusive=False)
    high = check_real("high", high, low=low)
    check_rng(rng)
    diag = np.exp(rng.uniform(np.log(low), np.log(high), size=(k, d)))
    cov = np.zeros((k, d, d))
    idx = np.arange(d)
    cov[:, idx, idx] = diag
    return cov
