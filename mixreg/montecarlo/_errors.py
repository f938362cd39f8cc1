"""The engine's exception and warning types."""

from __future__ import annotations

import pathlib


class ConfigMismatchError(ValueError):
    """The results directory holds a sweep whose identity differs from the one requested.

    Attributes
    ----------
    directory : pathlib.Path
    keys : list of str
        Dotted paths of the differing entries (``"n_trials"``, ``"config.R_grid"``, ...).
    """

    def __init__(self, directory, keys):
        self.directory = pathlib.Path(directory)
        self.keys = list(keys)
        super().__init__(
            f"results directory '{self.directory}' holds a different sweep "
            f"(differing keys: {', '.join(self.keys)}); refusing to mix results of two "
            "configurations. Pass overwrite=True (--overwrite) to discard the old results, "
            "or new_dir=True (--new-dir) to write into a fresh sibling directory."
        )


class SweepWarning(UserWarning):
    """Something in a sweep needs the user's attention but did not stop it."""
