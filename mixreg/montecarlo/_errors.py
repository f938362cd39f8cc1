"""The engine's exception and warning types.

Every fault of the engine's environment is one of these (or an ``OSError`` whose message
names the file or the directory), with a message that fits on one line, so that a command
line can report it in one line.
"""

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


class SweepTooLargeError(ValueError):
    """The sweep cannot fit: too many trials, too much memory or too much time (estimated).

    Raised by :func:`~mixreg.montecarlo.run_sweep` before anything is written.

    Attributes
    ----------
    estimate : dict
        What was estimated: ``trials``, ``flops`` (or None), ``memory_bytes``, ``seconds``
        (or None), ``workers`` (or None).
    """

    def __init__(self, message, estimate):
        self.estimate = dict(estimate)
        super().__init__(message)


class DirectoryBusyError(RuntimeError):
    """Another live run holds the results directory's lock.

    Attributes
    ----------
    directory : pathlib.Path
    """

    def __init__(self, directory, holder=None):
        self.directory = pathlib.Path(directory)
        who = f" (process {holder})" if holder else ""
        super().__init__(f"another process{who} is running a sweep into '{self.directory}'; "
                         "wait for it to finish or choose another directory")


class ResultsDirectoryError(OSError):
    """The results directory cannot be created or written (read-only, a parent is a file, ...)."""


class SweepInterrupted(KeyboardInterrupt):
    """A run was interrupted (Ctrl-C); the finished chunks are on disk and a rerun resumes.

    A :class:`KeyboardInterrupt`, so ``except KeyboardInterrupt`` still catches it.

    Attributes
    ----------
    outdir : pathlib.Path
    kept : int
        Trials whose records are on disk (loaded or computed before the interrupt).
    total : int
        Trials of the sweep.
    """

    def __init__(self, outdir, kept, total):
        self.outdir = pathlib.Path(outdir)
        self.kept, self.total = int(kept), int(total)
        super().__init__(f"interrupted: {self.kept} of {self.total} trials kept in "
                         f"'{self.outdir}'; rerun the same call to resume")


class EditedFileError(ValueError):
    """A file of a results directory differs from what its run wrote (its sha256 is not the one
    that ``manifest.json`` records), or the manifest's own sweep section was changed.

    Raised by :func:`mixreg.montecarlo.read_results` and :meth:`Results.table
    <mixreg.montecarlo.reader.Results.table>`; ``accept_edited=(name,)`` reads a table edited
    on purpose (with a :class:`SweepWarning`).
    """

    def __init__(self, directory, name, message):
        self.directory, self.name = directory, name
        super().__init__(f"results directory '{directory}': {message}")


class SweepWarning(UserWarning):
    """Something in a sweep needs the user's attention but did not stop it."""


class TrialsFailedWarning(SweepWarning):
    """Some trials raised; their records have an ``error`` and the manifest lists them."""
