"""The docstring examples of mixreg and of the studies assume ``import numpy as np``, as NumPy's
and SciPy's do (the numpydoc convention): pytest's doctest run gets ``np`` here.  An example that
imports pandas or xarray (the ``frames`` extra) is skipped where that module is not installed.

Tests marked ``dask`` start a ``dask.distributed`` cluster; they skip, with the reason, where the
optional ``dask`` extra is not installed (``pip install -e ".[test]"`` leaves it out)."""

import importlib.util
import re

import numpy as np
import pytest

# The conftest files are plugins, not modules of examples: collecting them for doctests too would
# import two modules named ``conftest`` (tests/ and paper_checks/ are not packages), whichever first
collect_ignore = ["tests/conftest.py", "paper_checks/conftest.py"]

DASK_MISSING = [name for name in ("dask", "distributed") if importlib.util.find_spec(name) is None]


def pytest_collection_modifyitems(config, items):
    if not DASK_MISSING:
        return
    skip = pytest.mark.skip(reason=f"{' and '.join(DASK_MISSING)} not installed: "
                                   'pip install -e ".[dask]" runs the Dask tests')
    for item in items:
        if item.get_closest_marker("dask") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _numpy_as_np(doctest_namespace):
    doctest_namespace["np"] = np


#: The optional modules a docstring example may import: it runs only where they are installed.
_OPTIONAL_IMPORT = re.compile(r"^\s*(?:import|from)\s+(pandas|xarray)\b", re.MULTILINE)


@pytest.fixture(autouse=True)
def _skip_examples_needing_a_missing_extra(request):
    examples = getattr(getattr(request.node, "dtest", None), "examples", ())
    for module in sorted({m for example in examples for m in _OPTIONAL_IMPORT.findall(example.source)}):
        pytest.importorskip(module, reason=f'this example needs {module}: pip install "mixreg[frames]"')
