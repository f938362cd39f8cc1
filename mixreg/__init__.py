"""mixreg: exact, fast, reproducible theory checks for clustered federated learning
under mixed linear regression.

The names a user starts from are here, grouped by what they do; each is imported from its
subpackage on first use (PEP 562), so ``import mixreg`` loads neither NumPy nor Numba, SciPy or
matplotlib.

- problems: :class:`~mixreg.problems.ProblemSpec`, :class:`~mixreg.problems.Problem`,
  :func:`~mixreg.problems.make_problem`
- algorithms: :data:`~mixreg.algorithms.ALGORITHMS`, :func:`~mixreg.algorithms.register`,
  :func:`~mixreg.algorithms.variant`, :func:`~mixreg.algorithms.check_algorithm`,
  :class:`~mixreg.algorithms.HeavyBall`, :class:`~mixreg.algorithms.Nesterov`
- sweeps and results: :class:`~mixreg.montecarlo.Sweep`, :func:`~mixreg.montecarlo.run_sweep`,
  :func:`~mixreg.montecarlo.read_results`, :func:`~mixreg.stats.group_rates`
- studies: :class:`~mixreg.study.Study`, :class:`~mixreg.study.Spec`, :func:`~mixreg.study.param`
- claims: :class:`~mixreg.study.Claim`, :func:`~mixreg.study.check_claims`,
  :func:`~mixreg.study.claims_report`
- predictions: :class:`~mixreg.predictions.Prediction`, :class:`~mixreg.predictions.Constant`,
  :func:`~mixreg.predictions.fit_exponent`
- figures: :func:`~mixreg.plotting.use_style`, :func:`~mixreg.plotting.success_plot`,
  :func:`~mixreg.plotting.error_plot`, :func:`~mixreg.plotting.save_figure`

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
    "Claim": "mixreg.study",
    "check_claims": "mixreg.study",
    "claims_report": "mixreg.study",
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
