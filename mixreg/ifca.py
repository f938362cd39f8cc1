"""Moved to :mod:`mixreg.algorithms.ifca`; this name keeps existing imports working."""

from .algorithms.ifca import *  # noqa: F401,F403
from .algorithms.ifca import __all__  # noqa: F401
