# What type checkers and editors see of the lazy public face (mixreg/__init__.py imports each
# name on first use); tests/test_packaging.py checks that both name the same.
from typing import Any

from mixreg.algorithms import ALGORITHMS as ALGORITHMS
from mixreg.algorithms import HeavyBall as HeavyBall
from mixreg.algorithms import Nesterov as Nesterov
from mixreg.algorithms import check_algorithm as check_algorithm
from mixreg.algorithms import register as register
from mixreg.algorithms import variant as variant
from mixreg.montecarlo import Sweep as Sweep
from mixreg.montecarlo import read_results as read_results
from mixreg.montecarlo import run_sweep as run_sweep
from mixreg.plotting import error_plot as error_plot
from mixreg.plotting import save_figure as save_figure
from mixreg.plotting import success_plot as success_plot
from mixreg.plotting import use_style as use_style
from mixreg.predictions import Constant as Constant
from mixreg.predictions import Prediction as Prediction
from mixreg.predictions import fit_exponent as fit_exponent
from mixreg.problems import Problem as Problem
from mixreg.problems import ProblemSpec as ProblemSpec
from mixreg.problems import make_problem as make_problem
from mixreg.stats import group_rates as group_rates
from mixreg.study import Claim as Claim
from mixreg.study import Spec as Spec
from mixreg.study import Study as Study
from mixreg.study import check_claims as check_claims
from mixreg.study import claims_report as claims_report
from mixreg.study import param as param

__version__: str
__all__: list[str]

def __getattr__(name: str) -> Any: ...
def __dir__() -> list[str]: ...
