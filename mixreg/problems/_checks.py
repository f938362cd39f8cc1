"""Checks of the problems package: the random generator, the data arrays of a :class:`Problem`,
and the warning for degenerate problems.

Every message is one line naming the parameter, the value received and what is allowed.
"""

from __future__ import annotations

import pathlib
import sys
import warnings

import numpy as np

__all__ = ["DegenerateProblemWarning", "check_rng"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_PACKAGE_DIR = str(pathlib.Path(__file__).resolve().parents[1])


class DegenerateProblemWarning(UserWarning):
    """A problem is legal but degenerate: two clusters share ``theta*`` (separation 0), a cluster
    has no client, or the separation is not finite.  :attr:`Problem.degenerate` says which."""


def short_repr(value: object, limit: int = 60) -> str:
    """``repr(value)`` when it is one short line, else the type name."""
    text = repr(value)
    if "\n" in text or len(text) > limit:
        return f"<{type(value).__name__} object>"
    return text


def check_rng(rng: object, name: str = "rng") -> np.random.Generator:
    """``rng`` itself, or ``TypeError`` unless it is a :class:`numpy.random.Generator`."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), "
                        f"got {short_repr(rng)} ({type(rng).__name__})")
    return rng


def as_array(name, value):
    """``np.asarray(value)`` (no copy of an array), or ``ValueError`` naming ``name``."""
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array, got {type(value).__name__}: {exc}") from None


def check_float_data(name, value, ndim):
    """``value`` as a C-contiguous float32/float64 array of ``ndim`` dimensions.

    Only lossless conversions are made (a non-contiguous or byte-swapped float array is copied);
    integer, boolean, float16 and complex data are refused, because the kernels compute in the
    data's own dtype.
    """
    arr = as_array(name, value)
    dt = arr.dtype
    if dt.kind == "f" and dt.itemsize in (4, 8) and not dt.isnative:
        arr = arr.astype(dt.newbyteorder("="))
        dt = arr.dtype
    if dt not in _FLOATS:
        if dt.kind in "biu":
            why = "the kernels compute in the data's dtype, so integer data would give integer parameters"
            cast = "float64"
        elif dt == np.float16:
            why = "the kernels compute in the data's dtype and do not support float16"
            cast = "float32"
        else:
            why = "the kernels compute in float32 or float64"
            cast = "float64"
        raise TypeError(f"{name} must be float32 or float64, got {dt}: cast it with "
                        f"{name}.astype(numpy.{cast}) ({why})")
    if arr.ndim != ndim:
        want = "(N, d)" if ndim == 2 else "(N,)"
        raise ValueError(f"{name} must be {ndim}-D of shape {want}, got shape {arr.shape}")
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return arr


def check_finite(name, arr):
    """``ValueError`` naming the first non-finite entry of ``arr``, if any.

    One pass: the sum of a finite array is finite unless it overflows, which only then costs a
    second, exact pass.
    """
    with np.errstate(all="ignore"):
        if np.isfinite(arr.sum()):
            return
    bad = ~np.isfinite(arr)
    if not bad.any():
        return
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    index = ", ".join(map(str, where))
    raise ValueError(f"{name} must contain only finite values, got {float(arr[where])!r} at {name}[{index}] "
                     f"({int(bad.sum())} non-finite entries)")


def check_int_array(name, value, ndim=1):
    """``value`` as an int64 array; only integer input (no bool, no float) is accepted."""
    arr = as_array(name, value)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D integer array, got shape {arr.shape}")
    if arr.size == 0:
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    out = arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "u" and arr.dtype.itemsize >= 8 and np.any(arr > np.iinfo(np.int64).max):
        raise ValueError(f"{name} must fit in int64, got a value {int(arr.max())}")
    return out


def check_real_array(name, value, shape):
    """``value`` as a finite float64 array of ``shape`` (``None`` = free axis); integer and float
    input is converted, anything else refused."""
    arr = as_array(name, value)
    if arr.dtype.kind not in "iuf" or (arr.dtype.kind == "f" and arr.dtype.itemsize > 8):
        raise TypeError(f"{name} must be a real float64 array, got dtype {arr.dtype}")
    if arr.ndim != len(shape) or any(s is not None and s != a for s, a in zip(shape, arr.shape)):
        want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    check_finite(name, arr)
    return arr


def warn_degenerate(reason):
    """Emit :class:`DegenerateProblemWarning` attributed to the first caller outside mixreg."""
    frame, level = sys._getframe(1), 2
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE_DIR)
                                 or frame.f_code.co_filename == "<string>"):  # dataclass __init__
        frame, level = frame.f_back, level + 1
    warnings.warn(f"degenerate problem: {reason}", DegenerateProblemWarning, stacklevel=level)
