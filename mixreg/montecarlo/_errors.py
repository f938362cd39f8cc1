"""The engine's exception and warning types, and SIGTERM as an exception.

Every fault of the engine's environment is one of these (or an ``OSError`` whose message
names the file or the directory), with a message that fits on one line, so that a command
line can report it in one line.

A run is stopped by Ctrl-C (SIGINT, which Python raises as :class:`KeyboardInterrupt`) or by
SIGTERM (what ``kill`` and batch schedulers send, whose default action ends the process on the
spot, leaving no word, a ``running`` manifest and worker processes behind).  Within
:func:`raise_on_sigterm` SIGTERM raises :class:`Terminated`, a ``KeyboardInterrupt``, so both
take one path: the backends stop their workers, the manifest says ``interrupted`` and the
run raises :class:`SweepInterrupted` or its subclass :class:`SweepTerminated`.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
import signal
import threading


class ConfigMismatchError(ValueError):
    """The results directory holds a sweep whose identity differs from the one requested.

    Attributes
    ----------
    directory : pathlib.Path
    keys : list of str
        Dotted paths of the differing entries (``"n_trials"``, ``"config.R_grid"``, ...).
    """

    def __init__(self, directory: str | os.PathLike[str], keys: Sequence[str]) -> None:
        self.directory = pathlib.Path(directory)
        self.keys = list(keys)
        super().__init__(
            f"results directory '{self.directory}' holds a different sweep "
            f"(differing keys: {', '.join(self.keys)}); refusing to mix results of two "
            "configurations. Pass overwrite=True (--overwrite) to discard the old results, "
            "or new_dir=True (--new-dir) to write into a fresh sibling directory."
        )


class CodeChangedError(ConfigMismatchError):
    """The results directory was computed by other code than the sweep would run now.

    The manifest's ``code`` (:func:`mixreg.montecarlo.code_fingerprint`: the source digests of
    the trial function's module, the modules it imports from and the algorithms the sweep runs)
    differs from this process's: the records on disk may not be what the code computes today.

    Attributes
    ----------
    directory : pathlib.Path
    changes : list of str
        What changed, e.g. ``"the trial function's module mystudy.trial"``,
        ``"algorithm 'ifca_sched' (module mystudy.variants)"``.
    """

    def __init__(self, directory: str | os.PathLike[str], changes: Sequence[str]) -> None:
        self.directory = pathlib.Path(directory)
        self.changes = self.keys = list(changes)
        ValueError.__init__(
            self,
            f"results directory '{self.directory}' was computed by other code (changed since: "
            f"{'; '.join(self.changes)}); refusing to mix results of two versions of the code. Pass "
            "overwrite=True (--overwrite) to recompute, or new_dir=True (--new-dir) to write into a fresh "
            "sibling directory."
        )


class AlgorithmUnavailableError(RuntimeError):
    """A worker process cannot get a registered algorithm the sweep runs.

    Raised before the worker's first trial (never recorded as a diverged or failed trial), by
    :func:`mixreg.montecarlo.run_sweep` with worker processes.

    Attributes
    ----------
    name : str
        The algorithm.
    module : str
        The module that registered it in the parent process.
    reason : str
    """

    def __init__(self, name: str, module: str | None, reason: str) -> None:
        self.name, self.module, self.reason = name, module, reason
        super().__init__(f"a worker process cannot get algorithm {name!r} (registered by module {module}): {reason}; "
                         "register it at the top level of a module the workers can import")

    def __reduce__(self):  # raised in a worker, re-raised in the parent: pickled with its arguments
        return type(self), (self.name, self.module, self.reason)


class SweepTooLargeError(ValueError):
    """The sweep cannot fit: too many trials, too much memory or too much time (estimated).

    Raised by :func:`~mixreg.montecarlo.run_sweep` before anything is written.

    Attributes
    ----------
    estimate : dict
        What was estimated: ``trials``, ``flops`` (or None), ``memory_bytes``, ``seconds``
        (or None), ``workers`` (or None).
    """

    def __init__(self, message: str, estimate: Mapping[str, Any]) -> None:
        self.estimate = dict(estimate)
        super().__init__(message)


class DirectoryBusyError(RuntimeError):
    """Another live run holds the results directory's lock.

    Attributes
    ----------
    directory : pathlib.Path
    """

    def __init__(self, directory: str | os.PathLike[str], holder: str | None = None) -> None:
        self.directory = pathlib.Path(directory)
        who = f" (process {holder})" if holder else ""
        super().__init__(f"another process{who} is running a sweep into '{self.directory}'; "
                         "wait for it to finish or choose another directory")


class ResultsDirectoryError(OSError):
    """The results directory cannot be created or written (read-only, a parent is a file, ...)."""


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM inside :func:`raise_on_sigterm`.

    A :class:`KeyboardInterrupt`, so that it stops what Ctrl-C stops (joblib aborts its
    workers on one) and passes every ``except Exception``; tell the two apart with
    ``isinstance(exc, Terminated)``.
    """


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

    #: The first word of the message: what stopped the run.
    stopped_by = "interrupted"

    def __init__(self, outdir: str | os.PathLike[str], kept: int, total: int) -> None:
        self.outdir = pathlib.Path(outdir)
        self.kept, self.total = int(kept), int(total)
        super().__init__(f"{self.stopped_by}: {self.kept} of {self.total} trials kept in "
                         f"'{self.outdir}'; rerun the same call to resume")


class SweepTerminated(SweepInterrupted, Terminated):
    """A run was stopped by SIGTERM; the finished chunks are on disk and a rerun resumes.

    Both a :class:`SweepInterrupted` (with its attributes ``outdir``, ``kept`` and ``total``)
    and a :class:`Terminated`.
    """

    stopped_by = "terminated"


@contextlib.contextmanager
def raise_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` in the main thread (as Ctrl-C raises
    ``KeyboardInterrupt``); the previous handler is restored on exit.

    The first SIGTERM raises; later ones, while the run stops its workers and writes its
    manifest, are ignored, so that the stop is not itself interrupted (SIGKILL still ends
    the process).  Outside the main thread (Python runs signal handlers there only), or when
    SIGTERM already has a handler of its own or is ignored (an enclosing block, a caller's
    choice), it does nothing.
    """
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return

    def stop(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated("SIGTERM")

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


class EditedFileError(ValueError):
    """A file of a results directory differs from what its run wrote (its sha256 is not the one
    that ``manifest.json`` records), or the manifest's own sweep section was changed.

    Raised by :func:`mixreg.montecarlo.read_results` and :meth:`Results.table
    <mixreg.montecarlo.reader.Results.table>`; ``accept_edited=(name,)`` reads a table edited
    on purpose (with a :class:`SweepWarning`).
    """

    def __init__(self, directory: str | os.PathLike[str], name: str, message: str) -> None:
        self.directory, self.name = directory, name
        super().__init__(f"results directory '{directory}': {message}")


class SweepWarning(UserWarning):
    """Something in a sweep needs the user's attention but did not stop it."""


class TrialsFailedWarning(SweepWarning):
    """Some trials raised; their records have an ``error`` and the manifest lists them."""
