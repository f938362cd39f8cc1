"""Shared by every test folder: ``tests/`` on the import path, for the helpers ``_toy_trials``,
``_toy_experiment`` and ``_fuzz`` that tests in the subfolders (``algorithms/``, ``montecarlo/``,
``problems/``, ``theory/``, mirroring the library's subpackages) import by name."""

import pathlib
import sys

TESTS = str(pathlib.Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)


def _keep_hypothesis_examples_independent_of_our_source():
    """Hypothesis (6.1xx) mixes literal constants it collects from every loaded local module into
    its draws, so the examples of a ``derandomize=True`` property test changed with any edit of
    the package (a docstring) and with which modules earlier tests had loaded: a test that passed
    in the full suite failed alone, on a boundary example it had never met.  The property tests
    here are derandomized to be reproducible, so the local pool is kept empty (Hypothesis's own
    constants still apply).  A private hook of Hypothesis: if it moves, nothing is patched."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - hypothesis is a test dependency
        return
    if callable(getattr(providers, "_get_local_constants", None)) and hasattr(providers, "_local_constants"):
        providers._get_local_constants = lambda: providers._local_constants  # never filled


_keep_hypothesis_examples_independent_of_our_source()
