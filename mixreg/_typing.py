"""The type aliases of mixreg's annotations (shapes and dtypes are in the docstrings)."""

import numpy as np
import numpy.typing as npt

__all__ = ["ArrayLike", "DTypeLike", "FloatArray", "IntArray", "BoolArray", "FloatOrArray"]

ArrayLike = npt.ArrayLike
DTypeLike = npt.DTypeLike
FloatArray = npt.NDArray[np.floating]
IntArray = npt.NDArray[np.integer]
BoolArray = npt.NDArray[np.bool_]
#: a float, or an array of them where a formula broadcasts over its arguments
FloatOrArray = float | np.ndarray
