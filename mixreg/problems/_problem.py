"""The :class:`Problem` record: stacked data of all clients, their labels and the truth."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._typing import ArrayLike, DTypeLike
from ..validation import check_choice, check_dtype, check_int, check_real
from ._checks import (
    check_finite,
    check_float_data,
    check_int_array,
    check_real_array,
    warn_degenerate,
)

THETA_PROTOCOLS = ("official", "paper", "gaussian")


@dataclass(frozen=True, eq=False)
class Problem:
    """A clustered mixed-regression data set: stacked data, client offsets, labels and truth.

    The constructor validates every field once (the drivers and their compiled kernels trust a
    :class:`Problem`) and converts only what converts losslessly: array-likes to arrays, integer
    ``offsets`` and ``labels`` to int64, ``theta_star`` and ``covariances`` to float64, and a
    non-contiguous ``X`` to a C-ordered copy.  Integer or float16 ``X``/``y`` are refused rather
    than cast, because the kernels compute in the data's own dtype.  Arrays that are already
    valid are not copied.  For data given as per-client sizes, see :meth:`from_arrays`.

    A legal but *degenerate* problem (two equal rows of ``theta_star``, a cluster without
    clients, a separation that overflows) is accepted with a
    :class:`DegenerateProblemWarning`; :attr:`degenerate` says what is degenerate.

    Attributes
    ----------
    X : ndarray of shape (N, d), float32 or float64, C-contiguous, finite
        Stacked features of all clients.
    y : ndarray of shape (N,), same dtype as ``X``, finite
        Stacked responses.
    offsets : ndarray of shape (m + 1,), int64
        Client ``i`` owns rows ``offsets[i]:offsets[i + 1]``: ``offsets[0] = 0``, strictly
        increasing (every client has at least one row), ``offsets[m] = N``.
    labels : ndarray of shape (m,), int64
        True cluster of each client, in ``[0, k)``; ``m >= 1``.
    theta_star : ndarray of shape (k, d), float64, finite
        True regression vectors.
    sigma : float >= 0
        Noise standard deviation.
    covariances : ndarray of shape (k, d, d), float64, or None
        Per-cluster feature covariances; ``None`` means the identity for every cluster.
    protocol : str
        How ``theta_star`` was made (one of :data:`THETA_PROTOCOLS` or ``"given"``).
    point_labels : ndarray of shape (N,), int64, or None
        True cluster of every row, for clients that mix clusters (the IFCA thesis, section
        4.1); ``labels`` is then each client's *main* cluster.  ``None``: every row belongs to
        its client's cluster.  :attr:`row_labels` gives the rows' clusters in both cases.

    Raises
    ------
    TypeError
        A field of the wrong type or dtype (integer or float16 data, float labels, ...).
    ValueError
        A field of the wrong shape, a non-finite value, offsets that do not partition
        ``0..N`` into non-empty clients, labels outside ``[0, k)``, ``sigma < 0``.
    """

    X: np.ndarray
    y: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray
    theta_star: np.ndarray
    sigma: float
    covariances: np.ndarray | None = None
    protocol: str = "given"
    point_labels: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        X = check_float_data("X", self.X, 2)
        N, d = X.shape
        if d < 1:
            raise ValueError(f"X must have at least one column (d >= 1), got shape {X.shape}")
        y = check_float_data("y", self.y, 1)
        if y.dtype != X.dtype:
            raise TypeError(f"y must have the dtype of X ({X.dtype}), got {y.dtype}: cast both to float32 or "
                            "float64 (the kernels compute in the data's dtype)")
        if y.shape[0] != N:
            raise ValueError(f"y must have length N = X.shape[0] = {N}, got {y.shape[0]}")
        labels = check_int_array("labels", self.labels)
        m = labels.shape[0]
        if m < 1:
            raise ValueError("labels must hold at least one client (m >= 1), got length 0")
        theta_star = check_real_array("theta_star", self.theta_star, (None, None))
        k = theta_star.shape[0]
        if k < 1 or theta_star.shape[1] != d:
            raise ValueError(f"theta_star must have shape (k, d) with k >= 1 and d = X.shape[1] = {d}, "
                             f"got {theta_star.shape}")
        lo, hi = int(labels.min()), int(labels.max())
        if lo < 0 or hi >= k:
            raise ValueError(f"labels must lie in [0, k) = [0, {k}), got values in [{lo}, {hi}]")
        offsets = _check_offsets("offsets", self.offsets, m, N)
        sigma = check_real("sigma", self.sigma, low=0.0)
        covariances = self.covariances
        if covariances is not None:
            covariances = check_real_array("covariances", covariances, (k, d, d))
        check_choice("protocol", self.protocol, (*THETA_PROTOCOLS, "given"))
        point_labels = self.point_labels
        if point_labels is not None:
            point_labels = check_int_array("point_labels", point_labels)
            if point_labels.shape != (N,):
                raise ValueError(f"point_labels must have shape (N,) = ({N},), got {point_labels.shape}")
            if point_labels.min() < 0 or point_labels.max() >= k:
                raise ValueError(f"point_labels must lie in [0, k) = [0, {k}), got values in "
                                 f"[{int(point_labels.min())}, {int(point_labels.max())}]")
        check_finite("X", X)
        check_finite("y", y)
        for name, value in (("X", X), ("y", y), ("offsets", offsets), ("labels", labels),
                            ("theta_star", theta_star), ("sigma", sigma), ("covariances", covariances),
                            ("point_labels", point_labels)):
            if value is not getattr(self, name):
                object.__setattr__(self, name, value)  # frozen: converted fields are set once, here
        # A Problem derived from a valid one with the very same truth and labels (astype,
        # add_anchors) keeps its cache and is not warned about twice; any other cache passed in
        # (dataclasses.replace) is dropped, never shared.
        cache = self._cache
        inherited = cache.get("truth") == (id(theta_star), id(labels)) and "degenerate" in cache
        object.__setattr__(self, "_cache", dict(cache) if inherited else {"truth": (id(theta_star), id(labels))})
        if not inherited:
            self._cache["degenerate"] = reason = _degenerate_reason(self)
            if reason:
                warn_degenerate(reason)

    @classmethod
    def from_arrays(cls, X: ArrayLike, y: ArrayLike, offsets_or_sizes: ArrayLike, labels: ArrayLike,
                    theta_star: ArrayLike, *, sigma: float, covariances: ArrayLike | None = None,
                    protocol: str = "given") -> Problem:
        """A :class:`Problem` on your own stacked data, with clients given by sizes or offsets.

        Parameters
        ----------
        X : array of shape (N, d), float32 or float64
            Stacked features, client after client.
        y : array of shape (N,), same dtype as ``X``
        offsets_or_sizes : int array of shape (m,) or (m + 1,)
            Either the sizes ``n_i >= 1`` of the ``m`` clients (length ``m = len(labels)``) or
            the offsets ``0 = o_0 < o_1 < ... < o_m = N`` (length ``m + 1``).
        labels : int array of shape (m,) with values in [0, k)
        theta_star : array of shape (k, d)
        sigma : float >= 0
            Noise standard deviation (only reported: ``snr``, theory formulas).
        covariances : array of shape (k, d, d), optional
        protocol : str
            ``"given"`` unless ``theta_star`` was drawn under one of :data:`THETA_PROTOCOLS`.

        Returns
        -------
        Problem

        Examples
        --------
        >>> from mixreg.problems import Problem
        >>> rng = np.random.default_rng(0)
        >>> theta_star = np.array([[1.0, 0.0], [0.0, 1.0]])
        >>> labels = [0, 0, 1]                 # three clients, two clusters
        >>> X = rng.standard_normal((9, 2))    # clients of 4, 2 and 3 rows, stacked
        >>> y = np.concatenate([X[:6] @ theta_star[0], X[6:] @ theta_star[1]])
        >>> pb = Problem.from_arrays(X, y, [4, 2, 3], labels, theta_star, sigma=0.0)
        >>> pb.offsets.tolist(), (pb.m, pb.k, pb.d), round(pb.separation, 4), pb.degenerate
        ([0, 4, 6, 9], (3, 2, 2), 1.4142, '')
        """
        lab = check_int_array("labels", labels)
        m = lab.shape[0]
        arr = check_int_array("offsets_or_sizes", offsets_or_sizes)
        if arr.shape[0] == m:
            if m and arr.min() < 1:
                i = int(np.argmax(arr < 1))
                raise ValueError(f"offsets_or_sizes (client sizes) must be >= 1, got {int(arr[i])} for client {i}")
            offsets = np.zeros(m + 1, dtype=np.int64)
            np.cumsum(arr, out=offsets[1:])
        elif arr.shape[0] == m + 1:
            offsets = arr
        else:
            raise ValueError(f"offsets_or_sizes must have length m = len(labels) = {m} (sizes) or m + 1 = {m + 1} "
                             f"(offsets), got {arr.shape[0]}")
        # the constructor converts and validates the array-likes
        return cls(X=X, y=y, offsets=offsets, labels=lab, theta_star=theta_star,  # type: ignore[arg-type]
                   sigma=sigma, covariances=covariances, protocol=protocol)  # type: ignore[arg-type]

    @property
    def degenerate(self) -> str:
        """Why the problem is degenerate, or ``""``: ``"duplicate theta* (separation 0)"``,
        ``"empty cluster l"`` / ``"empty clusters l, l'"``, ``"non-finite separation"``
        (several reasons are joined by ``"; "``)."""
        return self._cache["degenerate"]

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
    def feature_mean_square(self) -> float:
        """Mean of the squared features over all entries of ``X``, ``mean(X**2)`` in float64
        (the drivers' divergence floors; computed once per problem, like :attr:`separation`)."""
        if "feature_mean_square" not in self._cache:
            self._cache["feature_mean_square"] = float(np.mean(np.square(self.X, dtype=np.float64)))
        return self._cache["feature_mean_square"]

    @property
    def separation(self) -> float:
        """Realised minimum separation ``Delta = min_{l != l'} ||theta*_l - theta*_l'||``."""
        if "separation" not in self._cache:
            self._cache["separation"] = min_separation(self.theta_star)
        return self._cache["separation"]

    @property
    def snr(self) -> float:
        """``Delta^2 / sigma^2`` (IFCA's rho); ``inf`` when ``sigma = 0`` or when it overflows."""
        if self.sigma == 0:
            return np.inf
        try:
            return self.separation**2 / self.sigma**2
        except (OverflowError, ZeroDivisionError):  # Python floats raise instead of giving inf
            return np.inf

    @property
    def row_labels(self) -> np.ndarray:
        """True cluster of every row, shape (N,): :attr:`point_labels`, or each client's label
        repeated over its rows."""
        if self.point_labels is not None:
            return self.point_labels
        return np.repeat(self.labels, self.sizes)

    @property
    def mixed(self) -> bool:
        """Some client holds rows of a cluster other than its own."""
        return self.point_labels is not None and bool(np.any(self.point_labels != np.repeat(self.labels, self.sizes)))

    def client(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Views ``(X_i, y_i)`` of client ``i``'s data, ``0 <= i < m``."""
        i = check_int("i", i, low=0, high=self.m - 1)
        lo, hi = self.offsets[i], self.offsets[i + 1]
        return self.X[lo:hi], self.y[lo:hi]

    def astype(self, dtype: DTypeLike) -> Problem:
        """The same problem with ``X`` and ``y`` cast to ``dtype`` (float32 or float64)."""
        dt = check_dtype("dtype", dtype)
        with np.errstate(over="ignore"):
            X, y = self.X.astype(dt), self.y.astype(dt)
        try:
            check_finite("X", X)
            check_finite("y", y)
        except ValueError as exc:  # float64 data beyond float32's range
            raise ValueError(f"dtype={dt} cannot hold this problem's data: {exc}") from None
        return Problem(
            X=X,
            y=y,
            offsets=self.offsets,
            labels=self.labels,
            theta_star=self.theta_star,
            sigma=self.sigma,
            covariances=self.covariances,
            protocol=self.protocol,
            point_labels=self.point_labels,
            _cache=self.inherited_cache(),
        )

    def inherited_cache(self) -> dict:
        """The cache entries of quantities that depend on ``theta_star`` and ``labels`` only,
        for a Problem derived from this one with the same truth and labels."""
        return {key: self._cache[key] for key in ("truth", "separation", "degenerate") if key in self._cache}

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


def min_separation(theta_star: ArrayLike) -> float:
    """Minimum pairwise Euclidean distance between the rows of ``theta_star`` (k, d).

    Returns ``inf`` for ``k = 1``, and ``inf`` when the squared distances overflow float64.
    """
    t = np.asarray(theta_star, dtype=np.float64)
    k = t.shape[0]
    if k < 2:
        return float("inf")
    with np.errstate(over="ignore", invalid="ignore"):
        diff = t[:, None, :] - t[None, :, :]
        dist = np.sqrt(np.einsum("ijd,ijd->ij", diff, diff))
    return float(dist[np.triu_indices(k, 1)].min())


def _check_offsets(name, value, m, N):
    """``value`` as int64 offsets of ``m`` non-empty clients partitioning rows ``0..N``."""
    offsets = check_int_array(name, value)
    if offsets.shape[0] != m + 1:
        raise ValueError(f"{name} must have length m + 1 = {m + 1} (m = len(labels) = {m}), got {offsets.shape[0]}")
    if offsets[0] != 0:
        raise ValueError(f"{name} must start at 0, got {name}[0] = {int(offsets[0])}")
    if offsets[-1] != N:
        raise ValueError(f"{name} must end at N = X.shape[0] = {N}, got {name}[{m}] = {int(offsets[-1])}")
    sizes = np.diff(offsets)
    if sizes.min() < 1:
        i = int(np.argmax(sizes < 1))
        raise ValueError(f"{name} must be strictly increasing (every client needs >= 1 row), got client {i} with "
                         f"{int(sizes[i])} rows ({name}[{i}] = {int(offsets[i])}, {name}[{i + 1}] = {int(offsets[i + 1])})")
    return offsets


def _degenerate_reason(problem) -> str:
    """What makes a valid problem degenerate ("" if nothing)."""
    reasons = []
    if problem.k >= 2:
        separation = problem.separation
        if separation == 0:
            reasons.append("duplicate theta* (separation 0)")
        elif not np.isfinite(separation):
            reasons.append("non-finite separation")
    empty = np.flatnonzero(np.bincount(problem.labels, minlength=problem.k) == 0)
    if empty.size:
        reasons.append(f"empty cluster{'s' if empty.size > 1 else ''} {', '.join(map(str, empty.tolist()))}")
    return "; ".join(reasons)
