"""The :class:`Problem` record: stacked data of all clients, their labels and the truth."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import check_dtype

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
