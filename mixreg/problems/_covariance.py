r"""Full feature covariances: AR(1) and Toeplitz matrices, user matrices, and their text form.

The model's rows are :math:`x_{ij} \sim N(0, \Sigma_{z_i})` (Su, Xu and Yang 2022 let the
covariance depend on the cluster).  Besides the random diagonal covariances of
:func:`diagonal_covariances`, a :class:`ProblemSpec` takes a full covariance in one of two
forms:

* text, which a Monte Carlo cell can hold (so a sweep varies it over a grid):
  ``"ar1:RHO"`` or ``"ar1:RHO,SCALE"`` (:func:`ar1_covariance`) and
  ``"toeplitz:C0,C1,..."`` (:func:`toeplitz_covariance`, the first column, padded with zeros
  to length ``d``: a banded matrix), one matrix for every cluster;
* matrices, for in-process use: one ``(d, d)`` matrix for every cluster or ``(k, d, d)``, each
  validated by :func:`check_covariance`.
"""

from __future__ import annotations

import functools

import numpy as np

from .._typing import ArrayLike, FloatArray
from ..validation import check_covariance, check_int, check_real

__all__ = ["ar1_covariance", "toeplitz_covariance", "check_covariance", "covariance_from_text",
           "COVARIANCE_KINDS"]

#: The kinds of a covariance given as text (``"KIND:NUMBERS"``), see :func:`covariance_from_text`.
COVARIANCE_KINDS = ("ar1", "toeplitz")


def ar1_covariance(d: int, rho: float, scale: float = 1.0) -> FloatArray:
    r"""The covariance of a stationary AR(1) process: :math:`\Sigma_{ij} = s\, \rho^{|i - j|}`.

    Positive definite for :math:`|\rho| < 1`: its inverse is tridiagonal,
    :math:`\Sigma^{-1} = \frac{1}{s (1 - \rho^2)} \operatorname{tridiag}(-\rho,\ (1, 1 + \rho^2,
    \dots, 1 + \rho^2, 1),\ -\rho)`, so :math:`\operatorname{tr} \Sigma^{-1} = (d + (d - 2)
    \rho^2) / (s (1 - \rho^2))` for :math:`d \ge 2`.

    Parameters
    ----------
    d : int >= 1
        Dimension.
    rho : float in (-1, 1)
        Correlation of neighbouring coordinates.
    scale : float > 0, default=1.0
        Every coordinate's variance :math:`s`.

    Returns
    -------
    ndarray of shape (d, d), float64

    Examples
    --------
    >>> ar1_covariance(3, 0.5).tolist()
    [[1.0, 0.5, 0.25], [0.5, 1.0, 0.5], [0.25, 0.5, 1.0]]
    """
    d = check_int("d", d, low=1)
    rho = check_real("rho", rho)
    if not -1.0 < rho < 1.0:
        raise ValueError(f"rho must be in (-1, 1) (an AR(1) covariance is positive definite only there), "
                         f"got {rho!r}")
    scale = check_real("scale", scale, low=0.0, low_inclusive=False)
    if not np.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale!r}")
    lag = np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
    return scale * float(rho) ** lag


def toeplitz_covariance(first_column: ArrayLike) -> FloatArray:
    r"""The symmetric Toeplitz matrix :math:`\Sigma_{ij} = c_{|i - j|}` of a first column ``c``,
    validated positive definite.

    Parameters
    ----------
    first_column : array_like of shape (d,)
        :math:`c_0, \dots, c_{d-1}`: the variance, then the covariances at lags ``1..d-1``.

    Returns
    -------
    ndarray of shape (d, d), float64

    Raises
    ------
    ValueError
        If ``first_column`` is not a non-empty finite 1-D real array, or the matrix is not
        positive definite (the message gives its smallest eigenvalue).

    Examples
    --------
    >>> toeplitz_covariance([2.0, 1.0, 0.0]).tolist()
    [[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]]
    >>> toeplitz_covariance([1.0, 0.9, 0.0])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: first_column must give a positive definite Toeplitz matrix, got smallest eigenvalue -0.273 ...
    """
    try:
        c = np.asarray(first_column)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"first_column must be a 1-D real array, got {type(first_column).__name__}: {exc}") from None
    if c.ndim != 1 or c.size == 0 or c.dtype.kind not in "iuf":
        raise ValueError(f"first_column must be a non-empty 1-D real array, got shape {c.shape} and dtype {c.dtype}")
    c = c.astype(np.float64, copy=False)
    if not np.all(np.isfinite(c)):
        raise ValueError(f"first_column must contain only finite values, got {c.tolist()}")
    d = c.size
    matrix = c[np.abs(np.subtract.outer(np.arange(d), np.arange(d)))]
    eig = np.linalg.eigvalsh(matrix)
    if not eig[0] > d * np.finfo(np.float64).eps * eig[-1]:
        raise ValueError(f"first_column must give a positive definite Toeplitz matrix, got smallest eigenvalue "
                         f"{eig[0]:.3g} (largest {eig[-1]:.3g})")
    return matrix


def covariance_from_text(text: str, d: int) -> FloatArray:
    """The ``(d, d)`` covariance a text form stands for (see the module text).

    Parameters
    ----------
    text : str
        ``"ar1:RHO"``, ``"ar1:RHO,SCALE"`` or ``"toeplitz:C0,C1,..."`` (at most ``d`` numbers,
        padded with zeros).
    d : int >= 1

    Returns
    -------
    ndarray of shape (d, d), float64, read-only
        The same array for the same arguments (cached: a trial rebuilding its spec from its
        cell does not factor the matrix again).

    Raises
    ------
    ValueError
        One line naming ``covariance``: an unknown kind, numbers that do not parse, the wrong
        count, or a matrix that is not positive definite.

    Examples
    --------
    >>> covariance_from_text("toeplitz:1,0.5", 3).tolist()
    [[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]]
    >>> covariance_from_text("ar1:0.5,2", 2).tolist()
    [[2.0, 1.0], [1.0, 2.0]]
    """
    if not isinstance(text, str):
        raise TypeError(f"covariance must be a str such as 'ar1:0.5' or 'toeplitz:1,0.5', got {type(text).__name__}")
    return _from_text(text, check_int("d", d, low=1))


@functools.lru_cache(maxsize=64)
def _from_text(text, d):
    kind, sep, numbers = text.partition(":")
    kind = kind.strip()
    if not sep or kind not in COVARIANCE_KINDS:
        raise ValueError(f"covariance must read 'ar1:RHO[,SCALE]' or 'toeplitz:C0,C1,...', got {text!r}")
    try:
        values = [float(v) for v in numbers.split(",")]
    except ValueError:
        raise ValueError(f"covariance must hold comma-separated numbers after '{kind}:', got {text!r}") from None
    if kind == "ar1":
        if len(values) not in (1, 2):
            raise ValueError(f"covariance 'ar1:RHO[,SCALE]' takes one or two numbers, got {text!r}")
        try:
            matrix = ar1_covariance(d, *values)
        except ValueError as exc:
            raise ValueError(f"covariance {text!r}: {exc}") from None
    else:
        if len(values) > d:
            raise ValueError(f"covariance {text!r} gives {len(values)} lags, more than d = {d}")
        try:
            matrix = toeplitz_covariance(values + [0.0] * (d - len(values)))
        except ValueError as exc:
            raise ValueError(f"covariance {text!r} (padded to d = {d}): {exc}") from None
    matrix.setflags(write=False)
    return matrix


def cluster_covariances(covariance: str | ArrayLike, k: int, d: int) -> FloatArray:
    """``covariance`` (text, a ``(d, d)`` matrix or ``(k, d, d)`` matrices) as a read-only
    ``(k, d, d)`` float64 array, each matrix validated (one line naming ``covariance`` if not)."""
    if isinstance(covariance, str):
        return np.broadcast_to(_from_text(covariance, d), (k, d, d))
    try:
        arr = np.asarray(covariance)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"covariance must be text or an array, got {type(covariance).__name__}: {exc}") from None
    if arr.ndim == 2:
        matrix = np.array(check_covariance(arr, d, name="covariance"))  # a copy: the caller's array may change
        matrix.setflags(write=False)
        out = np.broadcast_to(matrix, (k, d, d))
    elif arr.ndim == 3 and arr.shape[0] == k:
        out = np.stack([check_covariance(arr[l], d, name=f"covariance[{l}]") for l in range(k)])
        out.setflags(write=False)
    else:
        raise ValueError(f"covariance must have shape (d, d) = ({d}, {d}) or (k, d, d) = ({k}, {d}, {d}), "
                         f"got {arr.shape}")
    return out
