"""mixreg: exact, fast, reproducible theory checks for clustered federated learning
under mixed linear regression.

The examples in the docstrings assume ``import numpy as np``, as NumPy's and SciPy's do.
"""

__version__ = "0.1.0"
