"""The type aliases of mixreg's annotations (shapes and dtypes are in the docstrings)."""

from collections.abc import Callable, Iterable

import numpy as np
import numpy.typing as npt

__all__ = ["ArrayLike", "DTypeLike", "FloatArray", "IntArray", "BoolArray", "FloatOrArray", "HistoryRequest",
           "ScheduleLike"]

ArrayLike = npt.ArrayLike
DTypeLike = npt.DTypeLike
FloatArray = npt.NDArray[np.floating]
IntArray = npt.NDArray[np.integer]
BoolArray = npt.NDArray[np.bool_]
#: a float, or an array of them where a formula broadcasts over its arguments
FloatOrArray = float | np.ndarray
#: a driver's ``history=``: False, True, "all", or names among HISTORY_FIELDS
HistoryRequest = bool | str | Iterable[str]
#: a driver's ``schedule=``: a Schedule or any callable of the server update t giving the step's factor
ScheduleLike = Callable[[int], float]
