"""Shared by every test folder: ``tests/`` on the import path, for the helpers ``_toy_trials``,
``_toy_experiment`` and ``_fuzz`` that tests in the subfolders (``algorithms/``, ``montecarlo/``,
``problems/``, ``theory/``, mirroring the library's subpackages) import by name."""

import pathlib
import sys

TESTS = str(pathlib.Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
