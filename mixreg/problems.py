"""Clustered mixed linear regression problems.

Model (IFCA, Ghosh et al. 2020, Sec. 5.1; Su, Xu and Yang 2022, "model" slide): ``m`` clients,
``k`` clusters, client ``i`` has a hidden label ``z_i`` and ``n_i`` samples

.. math::

    y_{ij} = \\langle x_{ij}, \\theta^*_{z_i} \\rangle + \\zeta_{ij},
    \\qquad x_{ij} \\sim N(0, \\Sigma_{z_i}),\\ \\zeta_{ij} \\sim N(0, \\sigma^2).

The data of all clients are stored stacked: ``X`` has shape ``(N, d)`` with ``N = sum_i n_i``
and client ``i`` owns rows ``offsets[i]:offsets[i + 1]``.  Never a list of per-client arrays.

Three protocols for the true parameters ``theta_star`` are provided, because the IFCA paper text
and the official IFCA code disagree (see README, "Which problem is the IFCA figure?"):

``"official"``
    Each coordinate is 0 or ``scale`` with probability 1/2 (official IFCA code,
    ``generate_synthetic_dataset.py``).  ``scale`` is the per-coordinate ``r`` of the code's grids;
    the separation is about ``r * sqrt(d / 2)``.
``"paper"``
    Bernoulli(1/2) coordinates, then each vector rescaled to Euclidean norm ``scale`` (the IFCA
    paper text, Sec. 6.1: "rescale their l2 norm to R").  An all-zero draw is redrawn.
``"gaussian"``
    Gaussian directions, the whole set rescaled so that the minimum pairwise separation is exactly
    ``scale``.

Every problem reports its realised minimum separation ``separation`` (Delta), the realised cluster
proportions, ``p_min`` and ``snr = Delta^2 / sigma^2`` (IFCA's rho).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._validation import check_array, check_choice, check_dtype, check_int, check_real

__all__ = [
    "Problem",
    "make_problem",
    "make_theta_star",
    "make_labels",
    "make_problem_from_parameters",
    "THETA_PROTOCOLS",
    "min_separation",
    "SIZE_LAWS",
    "SizeLaw",
    "size_law",
    "client_sizes",
    "diagonal_covariances",
    "ANCHOR_MODES",
    "add_anchors",
]

THETA_PROTOCOLS = ("official", "paper", "gaussian")


@dataclass(frozen=True, eq=False)
class Problem:
    """A generated clustered mixed-regression data set.

    Attributes
    ----------
    X : ndarray of shape (N, d)
        Stacked features of all clients.
    y : ndarray of shape (N,)
        Stacked responses.
    offsets : ndarray of shape (m + 1,), int64
        Client ``i`` owns rows ``offsets[i]:offsets[i + 1]``.
    labels : ndarray of shape (m,), int64
        True cluster of each client.
    theta_star : ndarray of shape (k, d), float64
        True regression vectors.
    sigma : float
        Noise standard deviation.
    covariances : ndarray of shape (k, d, d) or None
        Per-cluster feature covariances; ``None`` means the identity for every cluster.
    protocol : str
        How ``theta_star`` was made (one of :data:`THETA_PROTOCOLS` or ``"given"``).
    """

    X: np.ndarray
    y: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray
    theta_star: np.ndarray
    sigma: float
    covariances: np.ndarray | None = None
    protocol: str = "given"
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def m(self) -> int:
        """Number of clients."""
        return self.labels.shape[0]

    @property
    def k(self) -> int:
        """Number of clusters."""
        return self.theta_star.shape[0]

    @property
    def d(self) -> int:
        """Dimension."""
        return self.theta_star.shape[1]

    @property
    def N(self) -> int:
        """Total number of samples."""
        return self.X.shape[0]

    @property
    def dtype(self) -> np.dtype:
        return self.X.dtype

    @property
    def sizes(self) -> np.ndarray:
        """Per-client sample counts ``n_i``, shape (m,)."""
        return np.diff(self.offsets)

    @property
    def cluster_sizes(self) -> np.ndarray:
        """Pooled samples per cluster ``N_l``, shape (k,)."""
        return np.bincount(self.labels, weights=self.sizes, minlength=self.k).astype(np.int64)

    @property
    def proportions(self) -> np.ndarray:
        """Realised fraction of clients in each cluster ``p_l``, shape (k,)."""
        return np.bincount(self.labels, minlength=self.k) / self.m

    @property
    def p_min(self) -> float:
        """Smallest realised cluster proportion (IFCA's ``p``)."""
        return float(self.proportions.min())

    @property
    def separation(self) -> float:
        """Realised minimum separation ``Delta = min_{l != l'} ||theta*_l - theta*_l'||``."""
        if "separation" not in self._cache:
            self._cache["separation"] = min_separation(self.theta_star)
        return self._cache["separation"]

    @property
    def snr(self) -> float:
        """``Delta^2 / sigma^2`` (IFCA's rho); ``inf`` when ``sigma = 0``."""
        return np.inf if self.sigma == 0 else self.separation**2 / self.sigma**2

    def client(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Views ``(X_i, y_i)`` of client ``i``'s data."""
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return self.X[lo:hi], self.y[lo:hi]

    def astype(self, dtype) -> "Problem":
        """The same problem with ``X`` and ``y`` cast to ``dtype`` (float32 or float64)."""
        dt = check_dtype("dtype", dtype)
        return Problem(
            X=self.X.astype(dt),
            y=self.y.astype(dt),
            offsets=self.offsets,
            labels=self.labels,
            theta_star=self.theta_star,
            sigma=self.sigma,
            covariances=self.covariances,
            protocol=self.protocol,
        )

    def summary(self) -> dict:
        """Scalar description used in result records."""
        return {
            "m": self.m,
            "k": self.k,
            "d": self.d,
            "N": self.N,
            "sigma": self.sigma,
            "separation": self.separation,
            "p_min": self.p_min,
            "snr": self.snr,
            "n_min": int(self.sizes.min()),
            "n_max": int(self.sizes.max()),
        }


def min_separation(theta_star) -> float:
    """Minimum pairwise Euclidean distance between the rows of ``theta_star`` (k, d).

    Returns ``inf`` for ``k = 1``.
    """
    t = np.asarray(theta_star, dtype=np.float64)
    k = t.shape[0]
    if k < 2:
        return float("inf")
    diff = t[:, None, :] - t[None, :, :]
    dist = np.sqrt(np.einsum("ijd,ijd->ij", diff, diff))
    return float(dist[np.triu_indices(k, 1)].min())


def make_theta_star(k, d, scale, *, protocol="official", rng) -> np.ndarray:
    """Draw true parameters under a named protocol.

    Parameters
    ----------
    k, d : int
        Number of clusters and dimension.
    scale : float
        ``r`` (per-coordinate value, ``"official"``), ``R`` (norm of each vector, ``"paper"``) or
        the target minimum separation ``Delta`` (``"gaussian"``).
    protocol : {"official", "paper", "gaussian"}
    rng : numpy.random.Generator

    Returns
    -------
    theta_star : ndarray of shape (k, d), float64
    """
    k = check_int("k", k, low=1)
    d = check_int("d", d, low=1)
    scale = check_real("scale", scale, low=0.0)
    check_choice("protocol", protocol, THETA_PROTOCOLS)
    if protocol == "official":
        # official code: np.random.binomial(1, 0.5, size=d) * r for each cluster
        return rng.binomial(1, 0.5, size=(k, d)).astype(np.float64) * scale
    if protocol == "paper":
        theta = rng.binomial(1, 0.5, size=(k, d)).astype(np.float64)
        for l in range(k):
            while not theta[l].any():  # probability 2^-d: redraw rather than divide by zero
                theta[l] = rng.binomial(1, 0.5, size=d)
        return theta * (scale / np.linalg.norm(theta, axis=1, keepdims=True))
    theta = rng.standard_normal((k, d))
    if k == 1:
        return theta * (scale / np.linalg.norm(theta))
    return theta * (scale / min_separation(theta))


def make_labels(m, k, *, proportions=None, rng=None) -> np.ndarray:
    """Cluster labels of ``m`` clients.

    With ``proportions=None`` the labels are balanced and contiguous as in the official IFCA code:
    client ``i`` is in cluster ``floor(i k / m)`` (``i // (m / k)`` when ``k`` divides ``m``).
    Otherwise each label is drawn i.i.d. from ``proportions`` (Su-Xu-Yang: ``z_i = l`` w.p.
    ``p_l``) with ``rng``.
    """
    m = check_int("m", m, low=1)
    k = check_int("k", k, low=1)
    if k > m:
        raise ValueError(f"k must be at most m (every cluster needs a client); got k={k}, m={m}")
    if proportions is None:
        return (np.arange(m, dtype=np.int64) * k) // m
    p = check_array("proportions", proportions, ndim=1, dtype=np.float64)
    if p.shape[0] != k:
        raise ValueError(f"proportions must have length k={k}, got {p.shape[0]}")
    if np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise ValueError(f"proportions must be non-negative and sum to 1, got {p.tolist()}")
    if rng is None:
        raise ValueError("rng is required when proportions are given")
    return rng.choice(k, size=m, p=p).astype(np.int64)


def _check_sizes(m, n) -> np.ndarray:
    if np.ndim(n) == 0:
        n = check_int("n", n, low=1)
        return np.full(m, n, dtype=np.int64)
    sizes = np.asarray(n)
    if sizes.shape != (m,):
        raise ValueError(f"n must be an integer or an array of shape (m,)=({m},), got shape {sizes.shape}")
    if sizes.dtype.kind not in "iu" or np.any(sizes < 1):
        raise ValueError("n must hold integers >= 1 (samples per client)")
    return sizes.astype(np.int64)


def _check_covariances(covariances, k, d):
    if covariances is None:
        return None, None
    cov = check_array("covariances", covariances, shape=(k, d, d), dtype=np.float64)
    if not np.allclose(cov, np.swapaxes(cov, 1, 2)):
        raise ValueError("covariances must be symmetric matrices of shape (k, d, d)")
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError as exc:
        raise ValueError("covariances must be positive definite") from exc
    return cov, chol


def make_problem_from_parameters(
    theta_star, labels, n, sigma, *, rng, covariances=None, dtype=np.float64, protocol="given"
) -> Problem:
    """Generate data for given true parameters and labels.

    Parameters
    ----------
    theta_star : array of shape (k, d)
    labels : int array of shape (m,) with values in [0, k)
    n : int or int array of shape (m,)
        Samples per client.
    sigma : float >= 0
        Noise standard deviation.
    rng : numpy.random.Generator
    covariances : array of shape (k, d, d), optional
        Per-cluster feature covariance ``Sigma_l``; identity when omitted.
    dtype : float32 or float64
        Storage type of ``X`` and ``y``.  Data are always drawn in float64 and then cast, so a
        float32 problem is the rounding of the float64 problem with the same generator state.
    """
    theta_star = check_array("theta_star", theta_star, ndim=2, dtype=np.float64)
    k, d = theta_star.shape
    if k < 1 or d < 1:
        raise ValueError(f"theta_star must have k >= 1 rows and d >= 1 columns, got {theta_star.shape}")
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValueError("labels must be a 1-D integer array")
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        raise ValueError(f"labels must lie in [0, k) = [0, {k}), got range [{labels.min()}, {labels.max()}]")
    m = labels.shape[0]
    if m < 1:
        raise ValueError("labels must hold at least one client (m >= 1)")
    sizes = _check_sizes(m, n)
    sigma = check_real("sigma", sigma, low=0.0)
    dt = check_dtype("dtype", dtype)
    cov, chol = _check_covariances(covariances, k, d)

    offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    N = int(offsets[-1])
    X = rng.standard_normal((N, d))
    row_label = np.repeat(labels, sizes)
    if chol is not None:
        for l in range(k):
            rows = row_label == l
            X[rows] = X[rows] @ chol[l].T
    noise = rng.standard_normal(N)
    # y_ij = <x_ij, theta*_{z_i}> + sigma * noise, computed per cluster with one GEMV each
    y = np.empty(N)
    for l in range(k):
        rows = row_label == l
        y[rows] = X[rows] @ theta_star[l]
    y += sigma * noise
    return Problem(
        X=X.astype(dt, copy=False),
        y=y.astype(dt, copy=False),
        offsets=offsets,
        labels=labels.astype(np.int64),
        theta_star=theta_star,
        sigma=sigma,
        covariances=cov,
        protocol=protocol,
    )


def make_problem(
    m,
    k,
    n,
    d,
    sigma,
    scale,
    *,
    rng,
    protocol="official",
    proportions=None,
    covariances=None,
    dtype=np.float64,
) -> Problem:
    """Generate a clustered mixed linear regression problem.

    Parameters
    ----------
    m : int >= 1
        Number of clients.
    k : int in [1, m]
        Number of clusters.
    n : int >= 1 or int array of shape (m,)
        Samples per client (one ``n`` for all, or ``n_i``).
    d : int >= 1
        Dimension.
    sigma : float >= 0
        Noise standard deviation.
    scale : float >= 0
        Scale of ``theta_star`` under ``protocol`` (see :func:`make_theta_star`).
    rng : numpy.random.Generator
        The only source of randomness; draws happen in the order theta*, labels, X, noise.
    protocol : {"official", "paper", "gaussian"}
    proportions : array of shape (k,), optional
        Draw labels i.i.d. with these probabilities; balanced contiguous labels when omitted.
    covariances : array of shape (k, d, d), optional
        Per-cluster feature covariances.
    dtype : float32 or float64

    Returns
    -------
    Problem

    Examples
    --------
    >>> import numpy as np
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=100, k=2, n=100, d=1000, sigma=0.1, scale=0.25,
    ...                   rng=np.random.default_rng(0))
    >>> pb.X.shape, pb.labels[:3], round(pb.separation, 1)
    ((10000, 1000), array([0, 0, 0]), 5.6)
    """
    m = check_int("m", m, low=1)
    k = check_int("k", k, low=1)
    d = check_int("d", d, low=1)
    if k > m:
        raise ValueError(f"k must be at most m (every cluster needs a client); got k={k}, m={m}")
    _check_sizes(m, n)
    check_real("sigma", sigma, low=0.0)
    theta_star = make_theta_star(k, d, scale, protocol=protocol, rng=rng)
    labels = make_labels(m, k, proportions=proportions, rng=rng)
    return make_problem_from_parameters(
        theta_star, labels, n, sigma, rng=rng, covariances=covariances, dtype=dtype, protocol=protocol
    )


# --------------------------------------------------------------------------------------------
# Unbalanced clients, per-cluster covariances and anchor clients (Su, Xu and Yang 2022)
# --------------------------------------------------------------------------------------------

#: Named laws of the client sizes ``n_i`` understood by :func:`size_law` / :func:`client_sizes`.
SIZE_LAWS = ("equal", "zipf", "pareto", "lognormal")

# the parameter of each law that ``mean=`` calibrates, and the law's other parameters
_SIZE_SHAPE = {"equal": "n", "zipf": "a", "pareto": "alpha", "lognormal": "median"}
_SIZE_OTHER = {"equal": (), "zipf": (), "pareto": (), "lognormal": ("s",)}
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

    def sample(self, m, *, rng) -> np.ndarray:
        """``m`` i.i.d. sizes, int64 array of shape (m,)."""
        m = check_int("m", m, low=1)
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


def size_law(law="zipf", *, n_min=1, n_max=1000, mean=None, **params) -> SizeLaw:
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
    n_max : int >= n_min
        Largest size.
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
    n_max = check_int("n_max", n_max, low=n_min)
    shape = _SIZE_SHAPE[law]
    allowed = (shape, *_SIZE_OTHER[law])
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"unknown parameter(s) {unknown} for law={law!r}; allowed: {list(allowed)}")
    other = {name: check_real(name, params.get(name, _SIZE_DEFAULTS[law][name]), low=0.0,
                              low_inclusive=False) for name in _SIZE_OTHER[law]}
    support = np.arange(n_min, n_max + 1, dtype=np.int64)
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


def client_sizes(m, law="zipf", *, rng, n_min=1, n_max=1000, mean=None, **params) -> np.ndarray:
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
    >>> import numpy as np
    >>> n = client_sizes(1000, "zipf", rng=np.random.default_rng(0), n_max=100, a=2.0)
    >>> int(n.min()), bool((n == 1).mean() > 0.5)
    (1, True)
    """
    m = check_int("m", m, low=1)
    return size_law(law, n_min=n_min, n_max=n_max, mean=mean, **params).sample(m, rng=rng)


def diagonal_covariances(k, d, *, rng, low=0.5, high=2.0) -> np.ndarray:
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
    diag = np.exp(rng.uniform(np.log(low), np.log(high), size=(k, d)))
    cov = np.zeros((k, d, d))
    idx = np.arange(d)
    cov[:, idx, idx] = diag
    return cov


ANCHOR_MODES = ("random", "per_cluster")


def add_anchors(problem, n_points, *, mode="random", n_anchors=None, rng):
    """Make some clients anchor clients holding at least ``n_points`` samples.

    Su, Xu and Yang's Phase 1 needs a few *anchor* clients with :math:`\\tilde\\Omega(k)` points
    each.  Two versions exist:

    ``mode="random"`` (NeurIPS 2022 version, slide "Federated Moment Descent in Action", step 1)
        a uniformly random set of ``n_anchors`` distinct clients is chosen;
    ``mode="per_cluster"`` (journal version: the server "recruits one client per cluster")
        one client of each cluster is chosen uniformly among that cluster's clients, and
        ``anchors[l]`` is the anchor of cluster ``l``.

    Our construction (the papers do not say how anchors arise in a simulation): the chosen
    clients keep their identity, label and data, and a client with fewer than ``n_points``
    samples is topped up with fresh samples of its own cluster (same ``theta_star``, ``sigma``
    and covariance), appended after its existing rows.  ``m``, the labels and every other
    client's data are unchanged.

    Parameters
    ----------
    problem : Problem
    n_points : int >= 2
        ``n_A``, the minimum number of samples of an anchor (Phase 1 uses them in pairs).
    mode : {"random", "per_cluster"}
    n_anchors : int in [1, m], optional
        ``M_A``; required for ``"random"``; for ``"per_cluster"`` it must be omitted or ``k``.
    rng : numpy.random.Generator

    Returns
    -------
    problem : Problem
        The problem with the anchors' data topped up.
    anchors : ndarray of shape (M_A,), int64
        Client indices of the anchors (sorted for ``"random"``, by cluster for ``"per_cluster"``).
    """
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be a mixreg Problem, got {type(problem).__name__}")
    n_points = check_int("n_points", n_points, low=2)
    check_choice("mode", mode, ANCHOR_MODES)
    m, k = problem.m, problem.k
    if mode == "random":
        if n_anchors is None:
            raise ValueError("n_anchors is required for mode='random'")
        n_anchors = check_int("n_anchors", n_anchors, low=1, high=m)
        anchors = np.sort(rng.choice(m, size=n_anchors, replace=False)).astype(np.int64)
    else:
        if n_anchors is not None and check_int("n_anchors", n_anchors) != k:
            raise ValueError(f"n_anchors must be omitted or equal k={k} for mode='per_cluster', got {n_anchors}")
        anchors = np.empty(k, dtype=np.int64)
        for l in range(k):
            members = np.flatnonzero(problem.labels == l)
            if members.size == 0:
                raise ValueError(f"cluster {l} has no client, so it cannot get an anchor (mode='per_cluster')")
            anchors[l] = rng.choice(members)
    sizes = problem.sizes
    extra = np.maximum(n_points - sizes[anchors], 0)
    grow = extra > 0
    if not grow.any():
        return problem, anchors
    fresh = make_problem_from_parameters(
        problem.theta_star, problem.labels[anchors[grow]], extra[grow], problem.sigma, rng=rng,
        covariances=problem.covariances, dtype=problem.dtype)
    order = np.argsort(anchors[grow], kind="stable")  # np.insert needs positions in order
    grown = anchors[grow][order]
    fresh_rows = np.concatenate([np.arange(fresh.offsets[j], fresh.offsets[j + 1]) for j in order])
    positions = np.repeat(problem.offsets[grown + 1], extra[grow][order])
    new_sizes = sizes.copy()
    new_sizes[grown] += extra[grow][order]
    offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(new_sizes, out=offsets[1:])
    grown_problem = Problem(
        X=np.insert(problem.X, positions, fresh.X[fresh_rows], axis=0),
        y=np.insert(problem.y, positions, fresh.y[fresh_rows]),
        offsets=offsets,
        labels=problem.labels,
        theta_star=problem.theta_star,
        sigma=problem.sigma,
        covariances=problem.covariances,
        protocol=problem.protocol,
    )
    return grown_problem, anchors
