"""Monte Carlo engine: run a grid of cells times trials, resumably and reproducibly.

A *sweep* is a grid of cells (one parameter combination each, a dict of scalars and tuples
of numbers) times ``n_trials`` trials.  A trial is the unit of randomness:
``trial_fn(cell, seed)`` receives its own :class:`numpy.random.SeedSequence` and returns a
small dict of scalars.  Trials of a cell are batched into chunks, the unit of work and of
storage.

Guarantees
----------
Same numbers wherever it runs
    The seed of trial ``t`` of a cell depends only on the root seed, an exact, stable
    encoding of the cell's parameters and ``t`` (:func:`trial_seed`): not on the cell's
    position in the grid, the chunking, the backend or the process.  Adding a value to a grid
    leaves the records of the cells already there unchanged.  Every backend (in-process,
    loky processes, Dask workers) runs its kernels with one BLAS thread and one numba
    thread by default, so the records are bit-identical whatever the backend and the
    number of workers; ``kernel_threads`` above 1 in :func:`run_sweep` is an explicit
    opt-out that gives up this guarantee.
Never loses finished work
    Each finished chunk is written by the coordinating process to its own file under a
    temporary name, flushed to disk and renamed, so a kill at any moment leaves either the
    whole file or none.  Re-running the same call loads the finished chunks and computes
    only the missing trials.  A truncated or corrupted chunk file (checksum or record count)
    is reported with a :class:`SweepWarning` and recomputed.
Says when a file was changed after the run
    The manifest records the sha256 of every table written into the directory and of its own
    config section; :func:`read_results` refuses a table or config edited afterwards with
    :class:`EditedFileError` naming the file (``accept_edited`` reads an edit made on
    purpose), and names the chunk files missing from a complete run's directory.
Never mixes two versions of the code
    The manifest records a fingerprint of the code that computes the records (the source
    digests of the trial function's module, the mixreg modules it imports from and the
    algorithms the sweep runs, :func:`code_fingerprint`); resuming after any of them was
    edited raises :class:`CodeChangedError`, naming what changed.
Gives every worker the algorithms the parent registered
    Worker processes import the module that registered each algorithm a sweep runs (or get
    the entry itself when a script registered it) before their first trial;
    :class:`AlgorithmUnavailableError` names one a worker cannot get.
Never mixes two configurations
    ``manifest.json`` holds the sweep's identity (name, trial function, root seed, number of
    trials, cells, config).  Running a different sweep into the same directory raises
    :class:`ConfigMismatchError`, naming the differing keys, unless ``overwrite=True`` (start
    fresh) or ``new_dir=True`` (write into ``<dir>-2``, ``<dir>-3``, ...).
Refuses what cannot fit, before writing anything
    More than :data:`MAX_TRIALS` trials, an estimated memory above the machine's or an
    estimated time above a year raise :class:`SweepTooLargeError`; :func:`dry_run` shows the
    estimate and :func:`check_fits` makes the same checks.  Tasks are generated lazily.
Every fault in one line
    Environment faults raise :class:`ResultsDirectoryError` (an ``OSError``),
    :class:`DirectoryBusyError`, ``OSError`` (a Dask scheduler that does not answer),
    :class:`SweepInterrupted` (Ctrl-C, with the number of trials kept) or its subclass
    :class:`SweepTerminated` (SIGTERM, which a run turns into an exception with
    :func:`raise_on_sigterm`), each with a one-line message; failed trials are data,
    reported with a :class:`TrialsFailedWarning`.  Interrupted or terminated, a run stops its
    worker processes and marks its manifest ``interrupted``.

Layout of a results directory (read it back with :func:`read_results`)::

    <outdir>/
        manifest.json            identity + provenance + runs + failures + checksums
        trials.csv               one row per (cell, trial), ordered by cell then trial
        summary.csv              one row per cell: counts and per-cell means
        chunks/
            cell00000_t000000-000050.json    records of trials [0, 50) of cell 0
            ...
        .lock                    created (O_EXCL) and flocked by the one run writing into
                                 the directory, which removes it at the end

The engine is split into private modules: ``_cells`` (cell values, canonical encoding,
seeds), ``_store`` (atomic files, chunk files, manifest, directory lock), ``_backends``
(running chunks in-process, on loky or on Dask), ``_tables`` (CSV writing and the summary),
``_spec`` (the sweep), ``_fits`` (will it fit: the estimates, :func:`check_fits`,
:func:`dry_run`), ``_sweep`` (planning and the run), ``_progress`` (what a run shows while it
runs: a bar, a log line a minute without a terminal, the notice of a cold Numba cache);
``reader`` is the public read-only reader.

Examples
--------
>>> from mixreg.montecarlo import trial_seed
>>> ss = trial_seed(0, {"R": 1.5, "m": 10}, trial=3)
>>> ss.spawn_key
(3,)
>>> rng = np.random.default_rng(ss)  # what a trial function does with its seed
"""

from mixreg.montecarlo._backends import SCHEDULER_ADDRESS
from mixreg.montecarlo._cells import ENGINE_COLUMNS, plain_scalar, seed_from_record, trial_seed
from mixreg.montecarlo._code import code_fingerprint, module_digest
from mixreg.montecarlo._errors import (
    AlgorithmUnavailableError,
    CodeChangedError,
    ConfigMismatchError,
    DirectoryBusyError,
    EditedFileError,
    ResultsDirectoryError,
    SweepInterrupted,
    SweepTerminated,
    SweepTooLargeError,
    SweepWarning,
    Terminated,
    TrialsFailedWarning,
    raise_on_sigterm,
)
from mixreg.montecarlo._store import (
    CHUNK_DIR_NAME,
    FORMAT,
    LOCK_NAME,
    MANIFEST_NAME,
    SUMMARY_CSV_NAME,
    TRIALS_CSV_NAME,
)
from mixreg.montecarlo._fits import MAX_TRIALS, check_fits, dry_run
from mixreg.montecarlo._spec import Sweep
from mixreg.montecarlo._sweep import SweepResult, replay_trial, run_sweep
from mixreg.montecarlo._tables import write_table
from mixreg.montecarlo.reader import Results, read_results

__all__ = [
    "trial_seed",
    "plain_scalar",
    "seed_from_record",
    "Sweep",
    "SweepResult",
    "run_sweep",
    "dry_run",
    "check_fits",
    "MAX_TRIALS",
    "SCHEDULER_ADDRESS",
    "write_table",
    "read_results",
    "Results",
    "replay_trial",
    "ConfigMismatchError",
    "CodeChangedError",
    "AlgorithmUnavailableError",
    "code_fingerprint",
    "module_digest",
    "EditedFileError",
    "SweepTooLargeError",
    "DirectoryBusyError",
    "ResultsDirectoryError",
    "SweepInterrupted",
    "SweepTerminated",
    "Terminated",
    "raise_on_sigterm",
    "SweepWarning",
    "TrialsFailedWarning",
    # the layout of a results directory, for readers of one
    "ENGINE_COLUMNS",
    "FORMAT",
    "MANIFEST_NAME",
    "TRIALS_CSV_NAME",
    "SUMMARY_CSV_NAME",
    "CHUNK_DIR_NAME",
    "LOCK_NAME",
]
