"""mixreg: exact, fast, reproducible theory checks for clustered federated learning
under mixed linear regression.

The names a user starts from are here, grouped by what they do; each is imported from its
subpackage on first use (PEP 562), so ``import mixreg`` loads neither NumPy nor Numba, SciPy or
matplotlib.

==========================  =================================================================
problems                    :class:`ProblemSpec`, :class:`Problem`, :func:`make_problem`
algorithms                  :data:`ALGORITHMS`, :func:`register`, :func:`variant`,
                            :func:`check_algorithm`, :class:`HeavyBall`, :class:`Nesterov`
sweeps and results          :class:`Sweep`, :func:`run_sweep`, :func:`read_results`,
                            :func:`group_rates`
studies                     :class:`Study`, :class:`Spec`, :func:`param`
predictions                 :class:`Prediction`, :class:`Constant`, :func:`fit_exponent`
figures                     :func:`use_style`, :func:`success_plot`, :func:`error_plot`,
                            :func:`save_figure`
==========================  =================================================================

The subpackages themselves (``mixreg.problems``, ``mixreg.algorithms``, ``mixreg.montecarlo``,
``mixreg.study``, ``mixreg.theory``, ``mixreg.plotting``, ...) hold everything else and are
reached the same way, as attributes or by import.

The examples in the docstrings assume ``import numpy as np``, as NumPy's and SciPy's do.
"""

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> the subpackage or module it is imported from
_FACE = {
    "ProblemSpec": "mixreg.problems",
    "Problem": "mixreg.problems",
    "make_problem": "mixreg.problems",
    "ALGORITHMS": "mixreg.algorithms",
    "register": "mixreg.algorithms",
    "variant": "mixreg.algorithms",
    "check_algorithm": "mixreg.algorithms",
    "HeavyBall": "mixreg.algorithms",
    "Nesterov": "mixreg.algorithms",
    "Sweep": "mixreg.montecarlo",
    "run_sweep": "mixreg.montecarlo",
    "read_results": "mixreg.montecarlo",
    "group_rates": "mixreg.stats",
    "Study": "mixreg.study",
    "Spec": "mixreg.study",
    "param": "mixreg.study",
    "Prediction": "mixreg.predictions",
    "Constant": "mixreg.predictions",
    "fit_exponent": "mixreg.predictions",
    "use_style": "mixreg.plotting",
    "success_plot": "mixreg.plotting",
    "error_plot": "mixreg.plotting",
    "save_figure": "mixreg.plotting",
}

_SUBMODULES = frozenset({
    "algorithms", "baselines", "cli", "clustering", "kernels", "local_solvers", "methods", "metrics",
    "montecarlo", "plotting", "predictions", "problems", "provenance", "stats", "study", "theory",
    "trajectories", "validation",
})

__all__ = ["__version__", *_FACE]  # the stub __init__.pyi names the same, for type checkers


def __getattr__(name: str) -> Any:
    if name in _FACE:
        value = getattr(importlib.import_module(_FACE[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})
