"""Generators of clustered mixed linear regression problems: theta*, labels, data."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np

from .._typing import ArrayLike, DTypeLike, IntArray
from ..validation import check_array, check_choice, check_dtype, check_int, check_real
from ._checks import check_rng
from ._problem import THETA_PROTOCOLS, Problem, min_separation


def make_theta_star(k: int, d: int, scale: float, *, protocol: str = "official",
                    rng: np.random.Generator) -> np.ndarray:
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

    Raises
    ------
    ValueError
        If ``scale`` is so large that ``theta_star`` would not be finite (``"gaussian"`` divides
        by the drawn separation).  A finite ``theta_star`` whose separation overflows, or two
        equal rows (``"official"`` and ``"paper"`` at small ``d``), are legal: the problem built
        from it is degenerate (see :attr:`Problem.degenerate`).
    """
    k = check_int("k", k, low=1)
    d = check_int("d", d, low=1)
    scale = check_real("scale", scale, low=0.0)
    check_choice("protocol", protocol, THETA_PROTOCOLS)
    check_rng(rng)
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
    with np.errstate(over="ignore", invalid="ignore"):
        if k == 1:
            theta = theta * (scale / np.linalg.norm(theta))
        else:
            theta = theta * (scale / min_separation(theta))
    if not np.isfinite(theta).all():
        raise ValueError(f"scale={scale!r} is too large for protocol='gaussian': theta_star would not be finite")
    return theta


def make_labels(m: int, k: int, *, proportions: ArrayLike | None = None,
                rng: np.random.Generator | None = None) -> IntArray:
    """Cluster labels of ``m`` clients.

    With ``proportions=None`` the labels are balanced and contiguous as in the official IFCA code:
    client ``i`` is in cluster ``floor(i k / m)`` (``i // (m / k)`` when ``k`` divides ``m``).
    Otherwise each label is drawn i.i.d. from ``proportions`` (Su-Xu-Yang: ``z_i = l`` w.p.
    ``p_l``) with ``rng`` (a ``numpy.random.Generator``, then required).  A zero proportion, or
    bad luck, leaves a cluster without clients: a problem with these labels is degenerate
    (:attr:`Problem.degenerate`).
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
    return check_rng(rng).choice(k, size=m, p=p).astype(np.int64)


def exact_counts(m: int, k: int, p_min: float) -> list[int]:
    """Cluster sizes with exactly ``round(p_min m)`` clients in cluster 0 and the rest shared evenly.

    Cluster 0 is the smallest (ties included) and never empty: its size is clipped to
    ``[1, m // k]``; the other ``m - size`` clients go to clusters ``1..k-1`` as evenly as
    possible, the first ones taking one more.  A list of ``k`` ints summing to ``m``.

    Examples
    --------
    >>> exact_counts(100, 3, 0.1), exact_counts(10, 3, 0.01)
    ([10, 45, 45], [1, 5, 4])
    """
    m = check_int("m", m, low=2)
    k = check_int("k", k, low=2, high=m)
    p_min = check_real("p_min", p_min, low=0.0, high=1.0 / k + 1e-12, low_inclusive=False)
    small = min(max(1, int(round(p_min * m))), m // k)
    rest = m - small
    return [small] + [rest // (k - 1) + (1 if j < rest % (k - 1) else 0) for j in range(k - 1)]


def exact_labels(m: int, k: int, p_min: float) -> IntArray:
    """Labels with exactly ``round(p_min m)`` clients in cluster 0 and the rest shared evenly
    (the sizes of :func:`exact_counts`).

    Contiguous, as :func:`make_labels`'s balanced labels; unlike its i.i.d. labels from
    ``proportions``, whose realised smallest proportion spreads by ``sqrt(p / m)`` and may leave a
    cluster empty, the realised proportions are exact (to the nearest client).

    Examples
    --------
    >>> np.bincount(exact_labels(100, 3, 0.1)).tolist()
    [10, 45, 45]
    >>> np.bincount(exact_labels(10, 2, 0.5)).tolist()
    [5, 5]
    """
    return np.repeat(np.arange(k, dtype=np.int64), exact_counts(m, k, p_min))


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


def _draw_data(theta_star, labels, sizes, sigma, chol, dt, rng, row_labels=None):
    """``(X, y, offsets)`` of clients with ``labels`` and ``sizes`` (arguments already valid);
    each row's cluster is ``row_labels`` (N,) when given, its client's label otherwise.

    Draws, in this order, ``X`` (N, d) then the noise (N,), in float64, then casts to ``dt``.
    Levels: ``sigma`` may be a tuple of noise levels, or ``theta_star`` a tuple of (k, d) arrays
    (at most one of the two); ``y`` is then a list, one response vector per level on the same
    ``X`` and noise, each equal to the ``y`` of a draw at that level alone (its signal is
    computed from its own ``theta_star``, not rescaled from another level's).
    """
    several = isinstance(theta_star, tuple) or isinstance(sigma, tuple)
    thetas = theta_star if isinstance(theta_star, tuple) else (theta_star,)
    sigmas = sigma if isinstance(sigma, tuple) else (sigma,)
    k, d = thetas[0].shape
    m = labels.shape[0]
    offsets = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    N = int(offsets[-1])
    X = rng.standard_normal((N, d))
    row_label = np.repeat(labels, sizes) if row_labels is None else row_labels
    with np.errstate(over="ignore", invalid="ignore"):  # non-finite data are refused below
        if chol is not None:
            for l in range(k):
                rows = row_label == l
                X[rows] = X[rows] @ chol[l].T
        noise = rng.standard_normal(N)
        ys = []
        for theta in thetas:
            # y_ij = <x_ij, theta*_{z_i}> + sigma * noise, computed per cluster with one GEMV each
            signal = np.empty(N)
            for l in range(k):
                rows = row_label == l
                signal[rows] = X[rows] @ theta[l]
            for level in sigmas:
                y = signal.copy()
                y += level * noise
                y = y.astype(dt, copy=False)
                if not (np.isfinite(y.sum()) or np.isfinite(y).all()):
                    raise ValueError(f"theta_star (max |entry| {np.abs(theta).max():.3g}) is too large: the "
                                     f"responses y = X theta* + noise are not finite in {dt}")
                ys.append(y)
        X = X.astype(dt, copy=False)
    return X, (ys if several else ys[0]), offsets


def mixed_point_labels(labels: np.ndarray, sizes: np.ndarray, main_fraction: float, *,
                       proportions: Sequence[float] | np.ndarray | None = None, rng: np.random.Generator) -> IntArray:
    """Row clusters of clients that mix clusters (the IFCA thesis, section 4.1, its ``p``).

    Of client ``i``'s ``n_i`` rows the first :math:`\\lfloor p\\, n_i \\rfloor` belong to its
    main cluster ``labels[i]`` and the rest are drawn i.i.d. from the mixture of all clusters
    (with ``proportions``, uniform when omitted; so a mixed row may also fall in the main
    cluster).  ``p = 1`` is the usual one-cluster client, ``p = 0`` an i.i.d. client.

    Parameters
    ----------
    labels : int array of shape (m,)
    sizes : int array of shape (m,)
    main_fraction : float in [0, 1]
        ``p``.
    proportions : array of shape (k,), optional
    rng : numpy.random.Generator
        Draws one integer per mixed row, in row order.

    Returns
    -------
    point_labels : int64 array of shape (N,)

    Examples
    --------
    >>> mixed_point_labels(np.array([0, 1]), np.array([4, 4]), 0.5, rng=np.random.default_rng(0),
    ...                    proportions=np.array([0.0, 1.0])).tolist()
    [0, 0, 1, 1, 1, 1, 1, 1]
    """
    p = check_real("main_fraction", main_fraction, low=0.0, high=1.0)
    labels = np.asarray(labels, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    k = int(labels.max()) + 1 if proportions is None else len(proportions)
    probs = np.full(k, 1.0 / k) if proportions is None else np.asarray(proportions, dtype=np.float64)
    main = np.floor(p * sizes + 1e-9).astype(np.int64)
    rows = np.repeat(labels, sizes)
    position = np.arange(rows.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    mixed = position >= np.repeat(main, sizes)
    rows[mixed] = rng.choice(k, size=int(mixed.sum()), p=probs)
    return rows


def make_problem_from_parameters(
    theta_star: ArrayLike | tuple[ArrayLike, ...], labels: ArrayLike, n: int | ArrayLike,
    sigma: float | tuple[float, ...], *, rng: np.random.Generator, covariances: ArrayLike | None = None,
    dtype: DTypeLike = np.float64, protocol: str = "given", point_labels: ArrayLike | None = None,
) -> Problem | list[Problem]:
    """Generate data for given true parameters and labels.

    Parameters
    ----------
    theta_star : array of shape (k, d), or tuple of such arrays
        A tuple of separation levels gives a list of problems, one per level, sharing ``X``,
        the labels and the noise vector, each equal to the problem drawn with that
        ``theta_star`` alone from the same generator state.
    labels : int array of shape (m,) with values in [0, k)
    n : int or int array of shape (m,)
        Samples per client.
    sigma : float >= 0, or tuple of floats
        Noise standard deviation; a tuple of levels gives a list of problems, one per level,
        sharing ``X``, theta* and the noise vector (the official IFCA code's protocol), each
        equal to the problem drawn at that level alone from the same generator state.  At most
        one of ``theta_star`` and ``sigma`` may be a tuple.
    rng : numpy.random.Generator
    covariances : array of shape (k, d, d), optional
        Per-cluster feature covariance ``Sigma_l``; identity when omitted.
    dtype : float32 or float64
        Storage type of ``X`` and ``y``.  Data are always drawn in float64 and then cast, so a
        float32 problem is the rounding of the float64 problem with the same generator state.
    protocol : str
        Recorded in the problem (``"given"`` unless ``theta_star`` came from a protocol).
    point_labels : int array of shape (N,), optional
        Each row's cluster, for clients that mix clusters (:func:`mixed_point_labels`).

    Returns
    -------
    Problem, or list of Problem (``theta_star`` or ``sigma`` a tuple)

    Raises
    ------
    ValueError
        Besides bad arguments, when the drawn responses are not finite in ``dtype``
        (``theta_star`` or ``covariances`` too large).
    """
    check_rng(rng)
    thetas = _check_theta_levels(theta_star)
    if len(thetas) > 1 and isinstance(sigma, tuple):
        raise ValueError("at most one of theta_star and sigma may be a tuple of levels")
    k, d = thetas[0].shape
    labels = np.asarray(labels)
    if labels.ndim != 1 or (labels.dtype.kind not in "iu" and labels.size):
        raise ValueError(f"labels must be a 1-D integer array, got shape {labels.shape} and dtype {labels.dtype}")
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        raise ValueError(f"labels must lie in [0, k) = [0, {k}), got range [{labels.min()}, {labels.max()}]")
    m = labels.shape[0]
    if m < 1:
        raise ValueError("labels must hold at least one client (m >= 1)")
    sizes = _check_sizes(m, n)
    levels = tuple(check_real("sigma", s, low=0.0) for s in sigma) if isinstance(sigma, tuple) else None
    sigma = levels if levels is not None else check_real("sigma", sigma, low=0.0)
    dt = check_dtype("dtype", dtype)
    cov, chol = _check_covariances(covariances, k, d)

    if point_labels is not None:
        point_labels = np.asarray(point_labels)
        if point_labels.shape != (int(sizes.sum()),) or point_labels.dtype.kind not in "iu":
            raise ValueError(f"point_labels must be an integer array of shape (N,) = ({int(sizes.sum())},), "
                             f"got shape {point_labels.shape} and dtype {point_labels.dtype}")
        if point_labels.min() < 0 or point_labels.max() >= k:
            raise ValueError(f"point_labels must lie in [0, k) = [0, {k})")
        point_labels = point_labels.astype(np.int64)
    several = isinstance(theta_star, tuple)
    X, y, offsets = _draw_data(thetas if several else thetas[0], labels, sizes, sigma, chol, dt, rng, point_labels)
    pairs = [(theta, level) for theta in thetas for level in (levels or (cast(float, sigma),))]
    problems = [Problem(X=X, y=y_level, offsets=offsets, labels=labels.astype(np.int64), theta_star=theta,
                        sigma=level, covariances=cov, protocol=protocol, point_labels=point_labels)
                for (theta, level), y_level in zip(pairs, y if (levels or several) else (y,))]
    return problems if (levels or several) else problems[0]


def _check_theta_levels(theta_star):
    """``theta_star`` (one (k, d) array, or a non-empty tuple of arrays of one shape) as a tuple
    of float64 arrays."""
    several = isinstance(theta_star, tuple)
    if several and not theta_star:
        raise ValueError("theta_star must hold at least one level when given as a tuple")
    thetas = tuple(check_array("theta_star", theta, ndim=2, dtype=np.float64)
                   for theta in (theta_star if several else (theta_star,)))
    k, d = thetas[0].shape
    if k < 1 or d < 1:
        raise ValueError(f"theta_star must have k >= 1 rows and d >= 1 columns, got {thetas[0].shape}")
    if any(theta.shape != (k, d) for theta in thetas):
        raise ValueError(f"the levels of theta_star must share one shape, got {[theta.shape for theta in thetas]}")
    return thetas


def make_problem(
    m: int,
    k: int,
    n: int | ArrayLike,
    d: int,
    sigma: float,
    scale: float,
    *,
    rng: np.random.Generator,
    protocol: str = "official",
    proportions: ArrayLike | None = None,
    covariances: ArrayLike | None = None,
    dtype: DTypeLike = np.float64,
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
    >>> from mixreg.problems import make_problem
    >>> pb = make_problem(m=100, k=2, n=100, d=1000, sigma=0.1, scale=0.25,
    ...                   rng=np.random.default_rng(0))
    >>> pb.X.shape, pb.labels[:3], round(pb.separation, 1)
    ((10000, 1000), array([0, 0, 0]), 5.6)
    """
    check_rng(rng)
    m = check_int("m", m, low=1)
    k = check_int("k", k, low=1)
    d = check_int("d", d, low=1)
    if k > m:
        raise ValueError(f"k must be at most m (every cluster needs a client); got k={k}, m={m}")
    _check_sizes(m, n)
    check_real("sigma", sigma, low=0.0)
    theta_star = make_theta_star(k, d, scale, protocol=protocol, rng=rng)
    labels = make_labels(m, k, proportions=proportions, rng=rng)
    problem = make_problem_from_parameters(
        theta_star, labels, n, sigma, rng=rng, covariances=covariances, dtype=dtype, protocol=protocol
    )
    assert isinstance(problem, Problem)  # one theta* and one sigma: one problem
    return problem
