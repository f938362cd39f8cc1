"""Moved to :mod:`mixreg.algorithms.fedx`; this name keeps existing imports working."""

from .algorithms.fedx import *  # noqa: F401,F403
from .algorithms.fedx import __all__  # noqa: F401
