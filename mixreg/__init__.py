"""mixreg: exact, fast, reproducible theory checks for clustered federated learning
under mixed linear regression."""

__version__ = "0.1.0"
