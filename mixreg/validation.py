"""Input validation at the public boundary, public so that a user's own trial or driver refuses bad
input as mixreg does.

Every public function validates its arguments once, here, with messages that name the
parameter, the value received and the allowed range.  Kernels trust their inputs.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "check_int",
    "check_real",
    "check_choice",
    "check_array",
    "check_dtype",
]


def check_int(name, value, *, low=None, high=None):
    """Return ``value`` as a Python int, or raise ``ValueError``/``TypeError`` naming ``name``.

    ``low`` and ``high`` are inclusive bounds (``None`` = unbounded).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    value = int(value)
    _check_range(name, value, low, high, True, True)
    return value


def check_real(name, value, *, low=None, high=None, low_inclusive=True, high_inclusive=True):
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


def check_choice(name, value, choices):
    """Raise ``ValueError`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    return value


def check_dtype(name, dtype):
    """Return ``np.dtype(dtype)``, which must be float32 or float64."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise ValueError(f"{name} must be float32 or float64, got {dtype!r}") from exc
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{name} must be float32 or float64, got {dt}")
    return dt


def check_array(name, value, *, ndim=None, shape=None, dtype=None, finite=True):
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
