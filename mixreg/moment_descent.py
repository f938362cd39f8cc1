"""Moved to :mod:`mixreg.algorithms.moment_descent`; this name keeps existing imports working."""

from .algorithms.moment_descent import *  # noqa: F401,F403
from .algorithms.moment_descent import __all__  # noqa: F401
