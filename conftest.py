"""The docstring examples of mixreg and of the studies assume ``import numpy as np``, as NumPy's
and SciPy's do (the numpydoc convention): pytest's doctest run gets ``np`` here."""

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _numpy_as_np(doctest_namespace):
    doctest_namespace["np"] = np
