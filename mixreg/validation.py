"""Input validation at the public boundary, public so that a user's own trial or driver refuses bad
input as mixreg does.

Every public function validates its arguments once, here, with messages that name the
parameter, the value received and the allowed range.  Kernels trust their inputs.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection
from typing import Any

import numpy as np

__all__ = [
    "check_int",
    "check_real",
    "check_choice",
    "check_array",
    "check_dtype",
    "check_covariance",
]


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as a Python int, or raise ``ValueError``/``TypeError`` naming ``name``.

    ``low`` and ``high`` are inclusive bounds (``None`` = unbounded).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    _check_range(name, value, low, high, True, True)
    return value


def check_real(name: str, value: Any, *, low: float | None = None, high: float | None = None,
               low_inclusive: bool = True, high_inclusive: bool = True) -> float:
    """Return ``value`` as a finite Python float within the given bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    _check_range(name, value, low, high, low_inclusive, high_inclusive)
    return value


def _check_range(name, value, low, high, low_inclusive, high_inclusive):
    too_low = low is not None and (value < low if low_inclusive else value <= low)
    too_high = high is not None and (value > high if high_inclusive else value >= high)
    if too_low or too_high:
        lo = "(-inf" if low is None else ("[" if low_inclusive else "(") + repr(low)
        hi = "inf)" if high is None else repr(high) + ("]" if high_inclusive else ")")
        raise ValueError(f"{name} must be in {lo}, {hi}, got {value!r}")


def check_choice(name: str, value: Any, choices: Collection[Any]) -> Any:
    """Raise ``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    return value


def check_dtype(name: str, dtype: Any) -> np.dtype:
    """Return ``np.dtype(dtype)``, which must be float32 or float64."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise ValueError(f"{name} must be float32 or float64, got {dtype!r}") from exc
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{name} must be float32 or float64, got {dt}")
    return dt


def check_array(name: str, value: Any, *, ndim: int | None = None, shape: tuple[int | None, ...] | None = None,
                dtype: Any = None, finite: bool = True) -> np.ndarray:
    """Return ``value`` as an ndarray after checking its dimension, shape and finiteness.

    ``shape`` may contain ``None`` for free axes.
    """
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        want = "an array" if dtype is None else f"an array of {np.dtype(dtype).name}"
        raise ValueError(f"{name} must be {want}, got {type(value).__name__}: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if finite and arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values")
    return arr


def check_covariance(matrix: Any, d: int, *, name: str = "matrix") -> np.ndarray:
    """Return ``matrix`` as a float64 array if it is a covariance of dimension ``d``, or raise.

    A covariance here is a real ``(d, d)`` matrix that is finite, symmetric to rounding
    (:math:`\\max_{ij} |M_{ij} - M_{ji}| \\le \\sqrt{\\varepsilon} \\max_{ij} |M_{ij}|`, with
    :math:`\\varepsilon` the float64 machine epsilon) and positive definite to working
    precision (smallest eigenvalue :math:`> d\\, \\varepsilon\\, \\lambda_{max}`, so that its
    Cholesky factor exists).  The matrix itself is returned (converted to float64, not
    symmetrised): a valid float64 matrix is not copied.

    Parameters
    ----------
    matrix : array_like of shape (d, d)
    d : int >= 1
        The dimension the matrix must have.
    name : str, default="matrix"
        The parameter named in the error messages.

    Returns
    -------
    ndarray of shape (d, d), float64

    Raises
    ------
    ValueError
        One line naming ``name`` and why: not a real array, not of shape ``(d, d)``, a
        non-finite entry, not symmetric (the largest asymmetry), not positive definite (the
        smallest eigenvalue).

    Examples
    --------
    >>> check_covariance([[2.0, 0.5], [0.5, 1.0]], 2).tolist()
    [[2.0, 0.5], [0.5, 1.0]]
    >>> check_covariance([[1.0, 2.0], [2.0, 1.0]], 2)
    Traceback (most recent call last):
    ...
    ValueError: matrix must be positive definite, got smallest eigenvalue -1 (largest 3)
    """
    d = check_int("d", d, low=1)
    try:
        arr = np.asarray(matrix)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real (d, d) array, got {type(matrix).__name__}: {exc}") from None
    if arr.dtype.kind not in "iuf" or (arr.dtype.kind == "f" and arr.dtype.itemsize > 8):
        raise ValueError(f"{name} must be a real (d, d) array, got dtype {arr.dtype}")
    if arr.shape != (d, d):
        raise ValueError(f"{name} must have shape (d, d) = ({d}, {d}), got {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        i, j = (int(v) for v in np.argwhere(~np.isfinite(arr))[0])
        raise ValueError(f"{name} must contain only finite values, got {float(arr[i, j])!r} at {name}[{i}, {j}]")
    size = float(np.abs(arr).max())
    asym = float(np.abs(arr - arr.T).max())
    if asym > np.sqrt(np.finfo(np.float64).eps) * size:
        i, j = (int(v) for v in np.unravel_index(np.argmax(np.abs(arr - arr.T)), arr.shape))
        raise ValueError(f"{name} must be symmetric, got {name}[{i}, {j}] = {float(arr[i, j])!r} but "
                         f"{name}[{j}, {i}] = {float(arr[j, i])!r}")
    eig = np.linalg.eigvalsh(arr)
    if not eig[0] > d * np.finfo(np.float64).eps * eig[-1]:
        raise ValueError(f"{name} must be positive definite, got smallest eigenvalue {eig[0]:.3g} "
                         f"(largest {eig[-1]:.3g})")
    return arr
