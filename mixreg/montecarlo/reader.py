"""Read a results directory written by :func:`mixreg.montecarlo.run_sweep`, without writing.

:func:`read_results` never writes into the directory and never takes its lock, so it may
read a directory while a run is writing into it (it then sees the chunks finished so far).
Values come back with the types the trial function returned: ``trials.csv`` writes floats
with ``repr`` (exact), and the manifest's ``column_types`` says which type each column of
the trial function holds; tuple-valued cell parameters (the manifest's ``tuple_keys``) are
tuples again.  :meth:`Results.frame` gives any table as a pandas DataFrame with these types, and
:meth:`Results.dataset` an xarray Dataset over the swept axes (the ``frames`` extra:
``pip install "mixreg[frames]"``).

What is read is checked against what the run wrote, as the chunk files are: the manifest
records the sha256 of every table written into the directory (``trials.csv``,
``summary.csv`` and an experiment's tables written with ``write_table(..., record=True)``)
and of its own config section, and its ``sweep_key`` hashes its whole sweep section.  A
table or a config changed afterwards raises :class:`~mixreg.montecarlo.EditedFileError`
naming the file; ``accept_edited=("rates.csv",)`` reads a table edited on purpose, with a
warning.  Directories written before the manifest held checksums read as before: their
tables' checksums are *not recorded* (:meth:`Results.recorded` says which), so they are not
verified.

Examples
--------
>>> import tempfile
>>> from mixreg.montecarlo import Sweep, run_sweep
>>> from mixreg.montecarlo.reader import read_results
>>> def draw(cell, seed):
...     return {"x": float(np.random.default_rng(seed).normal(cell["mu"][0]))}
>>> sweep = Sweep(name="demo", trial_fn=draw, cells=[{"mu": (0.0, 1.0)}], n_trials=2,
...               root_seed=0, config={})
>>> with tempfile.TemporaryDirectory() as tmp:
...     result = run_sweep(sweep, tmp, progress=False)
...     back = read_results(tmp)
>>> back.records == result.records
True
>>> back.records[0]["mu"]
(0.0, 1.0)
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import json
import math
import os
import pathlib
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mixreg.montecarlo._cells import _INT_RE, _cell_value, _parse_tuple_text
from mixreg.montecarlo._errors import EditedFileError, SweepWarning
from mixreg.montecarlo._store import (
    _CHUNK_RE,
    CHUNK_DIR_NAME,
    CONFIG_CHECKSUM,
    FORMAT,
    MANIFEST_NAME,
    TRIALS_CSV_NAME,
    _chunk_name,
    _json_checksum,
    _read_chunk,
    file_checksum,
    merge_chunk,
    sweep_key_of,
)
from mixreg.montecarlo._tables import _columns, _format_value
from mixreg.stats import _frame, _import_extra

if TYPE_CHECKING:  # the frames extra, imported only by the methods that need it
    import pandas
    import xarray

__all__ = ["Results", "read_results"]


@dataclasses.dataclass(frozen=True)
class Results:
    """The contents of a results directory, as :func:`read_results` returns them.

    Attributes
    ----------
    outdir : pathlib.Path
        The directory read.
    manifest : dict
        Contents of ``manifest.json``.
    config : dict
        The experiment's configuration (``manifest["sweep"]["config"]``).
    cells : tuple of dict
        The grid's cells, tuple-valued parameters as tuples.
    records : list of dict
        One record per finished (cell, trial), ordered by cell then trial, with the keys of
        :attr:`mixreg.montecarlo.SweepResult.records` and the types the trial function
        returned (``None`` where a trial failed).  From ``trials.csv``, or from the chunk
        files when there is no ``trials.csv`` yet (a run still going or interrupted).
    failures : list of dict
        One entry per failed trial (``cell``, ``trial``, ``params``, ``seed_entropy``,
        ``spawn_key``, ``error``, ``traceback``).
    accept_edited : tuple of str
        File names read even if they differ from what the run wrote (see :func:`read_results`).
    """

    outdir: pathlib.Path
    manifest: dict[str, Any]
    config: dict[str, Any]
    cells: tuple[dict[str, Any], ...]
    records: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    accept_edited: tuple[str, ...] = ()

    def recorded(self, name: str) -> bool:
        """Whether the manifest records the sha256 of file ``name``, so that reading it checks
        it (``False``: written by an earlier version, or never written; not verified)."""
        return name in (self.manifest.get("checksums") or {})

    def table(self, name: str | os.PathLike[str]) -> list[dict[str, Any]]:
        """Return the rows of the CSV file ``name`` of the directory (``"rates.csv"``, say).

        The inverse of :func:`mixreg.montecarlo.write_table`: an empty field is ``None``;
        a column whose fields all read as ``True``/``False`` gives bools; a column whose
        fields all read as numbers gives ints (digits only) and floats (exactly the float
        written); a column named after a tuple-valued cell parameter gives tuples; any
        other column stays str.

        Parameters
        ----------
        name : str
            File name inside :attr:`outdir`.

        Returns
        -------
        rows : list of dict

        Raises
        ------
        FileNotFoundError
            No such file in the directory.
        mixreg.montecarlo.EditedFileError
            The file differs from what the run wrote (its sha256 is not the one recorded in the
            manifest), unless ``name`` is in :attr:`accept_edited` (then a warning).
        """
        return self._table(name)[1]

    def _table(self, name):
        """``(columns, rows)`` of the CSV file ``name`` (see :meth:`table`), the columns as written."""
        name = os.fspath(name)
        if not name or pathlib.PurePath(name).name != name or name in (".", ".."):
            raise ValueError(f"table name must be a file name inside '{self.outdir}', "
                             f"got {name!r}")
        path = self.outdir / name
        if not path.is_file():
            tables = sorted(p.stem for p in self.outdir.glob("*.csv"))
            raise FileNotFoundError(f"results directory '{self.outdir}' holds no {name} (its tables: "
                                    f"{', '.join(tables) or 'none'})")
        _verify_file(self.outdir, self.manifest, path, self.accept_edited)
        header, rows = _read_csv(path, self.outdir)
        tuple_keys = set(self.manifest.get("tuple_keys") or [])
        parsed = {c: _parse_table_column(c in tuple_keys, [row[j] for row in rows])
                  for j, c in enumerate(header)}
        return header, [{c: parsed[c][i] for c in header} for i in range(len(rows))]

    def _rows(self, table):
        """``(columns, rows)`` of ``table``: ``"trials"`` is :attr:`records`, another name its CSV file."""
        table = os.fspath(table)
        if table in ("trials", TRIALS_CSV_NAME):
            columns = list(self.records[0]) if self.records else self._trial_columns()
            return columns, self.records
        return self._table(table if table.endswith(".csv") else f"{table}.csv")

    def _trial_columns(self):
        """The columns of the records when there is none yet (a run whose first chunk is not written)."""
        head, _, tail = _columns(self.cells[0], [])
        return head + list(self.manifest.get("column_types") or {}) + tail

    def frame(self, table: str = "trials") -> pandas.DataFrame:
        """A table of the directory as a pandas DataFrame, every value of the type :attr:`records`
        or :meth:`table` gives it.

        One row per record (per row of the table), the columns in the order written, a
        ``RangeIndex``.  A column whose values are of one type has its dtype: ``bool``,
        ``int64``, ``float64``; where a failed trial left a value missing, pandas' nullable
        ``boolean`` and ``Int64`` (``pandas.NA`` there) and ``nan`` in a ``float64`` column; a
        column of str has pandas' string dtype (its missing value where one is missing).  Any
        other column is ``object`` and holds the values themselves: a tuple-valued cell parameter
        holds tuples (not their text), a column of ints and floats holds each as the trial
        function returned it.  Two values keep the records' form rather than the trial
        function's: a list-valued parameter comes back as a tuple (a cell's values are hashable,
        so that they can be a grid coordinate), and ``seed_entropy`` stays text (an integer wider
        than 64 bits).

        Parameters
        ----------
        table : str, default ``"trials"``
            ``"trials"``: the :attr:`records` (from ``trials.csv``, or from the chunk files of a
            run still going); another name: that CSV file of the directory, with or without
            ``.csv`` (``"summary"``, ``"rates"``, a study's ``"theory"``), read by :meth:`table`.

        Returns
        -------
        pandas.DataFrame
            One row per record or row of the table, its columns in the order written.

        Raises
        ------
        ImportError
            pandas is not installed (``pip install "mixreg[frames]"``).
        FileNotFoundError
            The directory holds no such table (the message lists those it holds).
        mixreg.montecarlo.EditedFileError
            The table differs from what the run wrote (see :meth:`table`).

        See Also
        --------
        mixreg.montecarlo.reader.Results.dataset : The same values over the grid's axes, as an xarray Dataset.
        mixreg.stats.group_rates : Success rates per group; a DataFrame in, a DataFrame out.

        Examples
        --------
        >>> import tempfile
        >>> import pandas as pd
        >>> from mixreg.montecarlo import Sweep, run_sweep
        >>> from mixreg.stats import group_rates
        >>> def draw(cell, seed):
        ...     x = np.random.default_rng(seed).normal(cell["mu"][0])
        ...     return {"x": float(x), "ok": bool(x > 0)}
        >>> sweep = Sweep(name="demo", trial_fn=draw, n_trials=4, root_seed=0, config={},
        ...               cells=[{"mu": (m, 1.0), "n": n} for m in (-1.0, 1.0) for n in (10, 20)])
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     _ = run_sweep(sweep, tmp, progress=False)
        ...     frame = read_results(tmp).frame()
        >>> list(frame.columns)
        ['mu', 'n', 'cell', 'trial', 'x', 'ok', 'wall_time', 'seed_entropy', 'error']
        >>> frame.loc[0, "mu"], frame["n"].dtype, frame["ok"].dtype
        ((-1.0, 1.0), dtype('int64'), dtype('bool'))
        >>> rates = group_rates(frame, ["mu"], ["ok"])
        >>> isinstance(rates, pd.DataFrame), rates["trials"].tolist()
        (True, [8, 8])
        """
        _import_extra("pandas", "Results.frame()")  # before reading: a missing extra fails at once
        columns, rows = self._rows(table)
        return _frame(columns, rows, needed_by="Results.frame()")

    def dataset(self, table: str = "trials", *, dims: str | Sequence[str] | None = None) -> xarray.Dataset:
        """A table of the directory as an xarray Dataset over the swept axes, where its grid is full.

        Each column of ``dims`` is a dimension whose coordinate holds its distinct values (sorted,
        when they compare); each other column is a variable over all of ``dims``.  For the trials,
        the dimensions are the grid's fields that take more than one value and ``trial``; the
        outcomes (and ``wall_time``, ``seed_entropy``, ``error``) are the variables; ``cell``, the
        grid's cell index, is a coordinate over the grid's dimensions, and a field of the grid with
        one value in the whole table is a scalar coordinate.  Values have the types of :meth:`frame`'s
        columns in numpy dtypes: ``bool``, ``int64``, ``float64`` (``nan`` where missing), and
        ``object`` for the others (tuples, str; an int or bool column with a value missing, which
        holds ``None`` there).  ``attrs`` holds the sweep's name, the table, the directory and the
        config (as JSON text).

        Parameters
        ----------
        table : str, default ``"trials"``
            As for :meth:`frame`.
        dims : str or sequence of str, optional
            The table's columns to use as dimensions, in order.  Default: for ``"trials"``, the
            grid's fields that vary and ``"trial"``; for another table, the grid's fields it holds
            that vary in it (and ``"trial"`` if it has that column).

        Returns
        -------
        xarray.Dataset
            The table's columns other than ``dims`` as variables over ``dims``.

        Raises
        ------
        ImportError
            pandas or xarray is not installed (``pip install "mixreg[frames]"``).
        ValueError
            The grid is not full: some combination of the values of ``dims`` has no row (a grid
            that is not a product of its fields' values; a run still going: for the trials, every
            value of the sweep's cells and every trial counts, recorded yet or not); the message
            counts them and names the first (use :meth:`frame`, which takes any rows).  Or two
            rows share a combination (``dims`` misses a column that tells them apart), or ``dims``
            names no column.

        See Also
        --------
        mixreg.montecarlo.reader.Results.frame : The same rows as a pandas DataFrame, for any grid.

        Examples
        --------
        >>> import tempfile
        >>> import xarray as xr
        >>> from mixreg.montecarlo import Sweep, run_sweep
        >>> def draw(cell, seed):
        ...     return {"x": float(np.random.default_rng(seed).normal(cell["mu"], cell["sd"]))}
        >>> sweep = Sweep(name="demo", trial_fn=draw, n_trials=5, root_seed=0, config={},
        ...               cells=[{"mu": m, "sd": s} for m in (0.0, 1.0, 2.0) for s in (0.5, 1.0)])
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     _ = run_sweep(sweep, tmp, progress=False)
        ...     ds = read_results(tmp).dataset()
        >>> dict(ds.sizes)
        {'mu': 3, 'sd': 2, 'trial': 5}
        >>> ds["x"].mean("trial").dims, ds["cell"].values.tolist()
        (('mu', 'sd'), [[0, 1], [2, 3], [4, 5]])
        """
        _import_extra("pandas", "Results.dataset()")
        xarray = _import_extra("xarray", "Results.dataset()")
        columns, rows = self._rows(table)
        is_trials = os.fspath(table) in ("trials", TRIALS_CSV_NAME)
        grid_keys = list(self.cells[0])
        varying = [k for k in grid_keys if len(set(_value_keys([c[k] for c in self.cells]))) > 1]
        if dims is None:
            dims = [k for k in varying if k in columns] + (["trial"] if "trial" in columns else [])
            if not dims:
                raise ValueError(f"results directory '{self.outdir}': table {table!r} holds none of the grid's "
                                 f"varying fields {varying} nor 'trial'; name its dimensions with dims=")
        dims = [dims] if isinstance(dims, str) else list(dims)
        if any(d not in columns for d in dims) or len(set(dims)) != len(dims):
            raise ValueError(f"dims must name distinct columns of table {table!r}, got {dims}; its columns are "
                             f"{columns}")
        expected: dict[str, Any] = {}  # the trials' grid is known: a cell or trial without a record is missing, not absent
        if is_trials:
            expected = {d: [cell[d] for cell in self.cells] for d in dims if d in grid_keys}
            expected["trial"] = range(self.manifest["sweep"].get("n_trials", 0))
        coords, order = _place(self.outdir, table, rows, dims, expected)
        shape = tuple(len(coords[d]) for d in dims)
        constant = [k for k in grid_keys if k in columns and k not in dims and len(set(_value_keys([r[k] for r in rows]))) == 1]
        cell_dims = [d for d in dims if d != "trial"] if is_trials else dims
        coordinates: dict[str, tuple[Any, Any]] = {d: (d, _variable(coords[d], (len(coords[d]),))) for d in dims}
        for k in constant:
            coordinates[k] = ((), _variable([rows[0][k]], ()))
        variables = {}
        for c in columns:
            if c in dims or c in constant:
                continue
            values = _variable([rows[i][c] for i in order], shape)
            if c == "cell" and is_trials:
                coordinates[c] = (cell_dims, values[tuple(slice(None) if d in cell_dims else 0 for d in dims)])
            else:
                variables[c] = (dims, values)
        attrs = {"sweep": str(self.manifest["sweep"].get("name", "")), "table": os.fspath(table),
                 "results_directory": str(self.outdir), "config": json.dumps(self.config, sort_keys=True)}
        return xarray.Dataset(variables, coords=coordinates, attrs=attrs)


def read_results(outdir: str | os.PathLike[str], *, from_chunks: bool = False,
                 accept_edited: str | Sequence[str] = ()) -> Results:
    """Read a results directory written by :func:`mixreg.montecarlo.run_sweep`.

    Parameters
    ----------
    outdir : str or path-like
    from_chunks : bool
        Read the chunk files even when ``trials.csv`` exists: the trials a resumed run would
        load (``trials.csv`` is written by a run that completed, and a directory can keep it
        after a later run into it was cut short; its chunk files may also have been removed).
        For a complete run, trials missing from the chunk files are named with a
        :class:`~mixreg.montecarlo.SweepWarning` (the chunk files that would hold them and the
        number of records missing): a resume would recompute them.
    accept_edited : str or sequence of str
        File names (``"rates.csv"``, ``"manifest.json"``) to read even though they differ from
        what the run wrote, for a table edited on purpose; each is read with a
        :class:`~mixreg.montecarlo.SweepWarning` instead of an error.

    Returns
    -------
    Results

    Raises
    ------
    FileNotFoundError
        ``outdir`` does not exist, or holds no ``manifest.json``, or neither ``trials.csv``
        nor ``chunks/`` (no ``chunks/``, with ``from_chunks``).
    NotADirectoryError
        ``outdir`` is a file.
    mixreg.montecarlo.EditedFileError
        ``trials.csv`` or the manifest's sweep section differs from what the run wrote (a
        ``ValueError``); the message names the file.
    ValueError
        A file is malformed (not JSON, another format, a row that does not parse, a damaged
        chunk file); the message names the directory and the file.
    """
    outdir = pathlib.Path(os.path.expanduser(os.fspath(outdir)))
    if not outdir.is_dir():
        if outdir.exists():
            raise NotADirectoryError(f"'{outdir}' is not a directory: read_results takes a results directory")
        raise FileNotFoundError(f"results directory '{outdir}' does not exist")
    accept_edited = (accept_edited,) if isinstance(accept_edited, str) else tuple(accept_edited)
    manifest = _read_manifest(outdir)
    _verify_sweep(outdir, manifest, accept_edited)
    sweep = manifest["sweep"]
    cells = _manifest_cells(outdir, sweep["cells"], manifest.get("tuple_keys") or [])
    trials_csv, chunk_dir = outdir / TRIALS_CSV_NAME, outdir / CHUNK_DIR_NAME
    if trials_csv.is_file() and not from_chunks:
        _verify_file(outdir, manifest, trials_csv, accept_edited)
        records = _records_from_csv(trials_csv, outdir, cells, manifest.get("column_types"))
        failures = [_with_params(f, cells) for f in manifest.get("failures") or []]
    elif chunk_dir.is_dir():
        records, failures = _records_from_chunks(chunk_dir, outdir, manifest, cells)
    else:
        raise FileNotFoundError(f"results directory '{outdir}' holds no {CHUNK_DIR_NAME}/" if from_chunks else
                                f"results directory '{outdir}' holds neither "
                                f"{TRIALS_CSV_NAME} nor {CHUNK_DIR_NAME}/")
    return Results(outdir=outdir, manifest=manifest, config=sweep["config"], cells=cells,
                   records=records, failures=failures, accept_edited=accept_edited)


# --------------------------------------------------------------------------- checksums


def _verify_file(outdir, manifest, path, accept_edited):
    """Raise :class:`EditedFileError` if ``path`` differs from the sha256 the manifest records
    (a warning if its name is in ``accept_edited``); nothing when none is recorded."""
    recorded = (manifest.get("checksums") or {}).get(path.name)
    if recorded is None or file_checksum(path) == recorded:
        return
    message = (f"{path.name} was changed after the run wrote it (its sha256 differs from the one "
               f"{MANIFEST_NAME} records)")
    if path.name in accept_edited:
        warnings.warn(f"results directory '{outdir}': {message}; read as edited", SweepWarning, stacklevel=3)
        return
    raise EditedFileError(outdir, path.name, f"{message}; run its command again to rewrite it, or accept the "
                                             f"edit with accept_edited=('{path.name}',) (--accept-edited "
                                             f"{path.name} with --redraw)")


def _verify_sweep(outdir, manifest, accept_edited):
    """Raise :class:`EditedFileError` if the manifest's sweep section is not the one its run
    recorded: its ``config`` against the recorded sha256 (when recorded), all of it against
    ``sweep_key``.  The chunk files are stamped with that key, so an edited sweep section would
    also disown them."""
    sweep = manifest["sweep"]
    recorded = (manifest.get("checksums") or {}).get(CONFIG_CHECKSUM)
    if recorded is not None and _json_checksum(sweep["config"]) != recorded:
        what = "the config in manifest.json (sweep.config) was changed after the run"
    elif manifest.get("sweep_key") is not None and sweep_key_of(sweep) != manifest["sweep_key"]:
        what = ("the sweep section of manifest.json (name, trial function, root seed, trials, cells or "
                "config) was changed after the run: it no longer hashes to its sweep_key")
    else:
        return
    if MANIFEST_NAME in accept_edited:
        warnings.warn(f"results directory '{outdir}': {what}; read as edited", SweepWarning, stacklevel=3)
        return
    raise EditedFileError(outdir, MANIFEST_NAME, f"{what}; restore it (the tables are those of the run's own "
                                                 f"config), or accept the edit with accept_edited=('{MANIFEST_NAME}',) "
                                                 f"(--accept-edited {MANIFEST_NAME} with --redraw)")


# --------------------------------------------------------------------------- manifest


def _read_manifest(outdir):
    path = outdir / MANIFEST_NAME
    if not path.is_file():
        raise FileNotFoundError(f"results directory '{outdir}' holds no {MANIFEST_NAME}; it "
                                "is not a mixreg sweep directory")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"results directory '{outdir}': {MANIFEST_NAME} is malformed "
                         f"({type(exc).__name__}: {exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise ValueError(f"results directory '{outdir}': {MANIFEST_NAME} has format "
                         f"{found!r}, expected {FORMAT!r}")
    sweep = manifest.get("sweep")
    for key in ("cells", "config", "n_trials"):
        if not isinstance(sweep, dict) or key not in sweep:
            raise ValueError(f"results directory '{outdir}': {MANIFEST_NAME} lacks "
                             f"sweep.{key}")
    if not isinstance(sweep["cells"], list) or not sweep["cells"]:
        raise ValueError(f"results directory '{outdir}': {MANIFEST_NAME} holds no cells")
    return manifest


def _manifest_cells(outdir, cells, tuple_keys):
    """The manifest's cells with the tuple-valued keys (stored as comma text) as tuples."""
    out = []
    for i, cell in enumerate(cells):
        try:
            if not isinstance(cell, dict):
                raise TypeError(f"a {type(cell).__name__}")
            restored = {}
            for key, value in cell.items():
                if key in tuple_keys and isinstance(value, str):
                    value = _parse_tuple_text(value)
                restored[key] = _cell_value(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"results directory '{outdir}': {MANIFEST_NAME} sweep.cells[{i}] "
                             f"is malformed ({exc})") from None
        out.append(restored)
    return tuple(out)


def _with_params(failure, cells):
    cell = failure.get("cell")
    if isinstance(cell, int) and 0 <= cell < len(cells):
        return {**failure, "params": dict(cells[cell])}
    return dict(failure)


# --------------------------------------------------------------------------- records


def _records_from_chunks(chunk_dir, outdir, manifest, cells):
    done, failures = {}, {}
    n_trials = manifest["sweep"]["n_trials"]
    for path in sorted(chunk_dir.iterdir()):
        if not _CHUNK_RE.match(path.name):
            continue  # temporary files of a write in progress, foreign files
        try:
            ci, records, chunk_failures, _ = _read_chunk(path, manifest.get("sweep_key"), cells,
                                                         n_trials)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"results directory '{outdir}': chunk file "
                             f"{CHUNK_DIR_NAME}/{path.name} is {exc}") from None
        merge_chunk(done, failures, ci, records, chunk_failures)
    if manifest.get("status") == "complete":
        _warn_missing_chunks(outdir, done, len(cells), n_trials)
    ordered = [done[k] for k in sorted(done)]
    head, middle, tail = _columns(cells[0], ordered)
    columns = head + middle + tail
    return [{c: r.get(c) for c in columns} for r in ordered], [failures[k] for k in sorted(failures)]


_MAX_NAMED_CHUNKS = 5  # missing chunk files named one by one, then "and N more"


def _warn_missing_chunks(outdir, done, n_cells, n_trials):
    """Name the chunk files a complete run's directory lacks (each missing run of trials of a
    cell, as the file that held it when the chunk size did not change) and the records missing."""
    missing = []
    for cell in range(n_cells):
        trial = 0
        while trial < n_trials:
            if (cell, trial) in done:
                trial += 1
                continue
            start = trial
            while trial < n_trials and (cell, trial) not in done:
                trial += 1
            missing.append((cell, start, trial))
    if not missing:
        return
    n_missing = sum(stop - start for _, start, stop in missing)
    names = [f"{CHUNK_DIR_NAME}/{_chunk_name(*chunk)}" for chunk in missing[:_MAX_NAMED_CHUNKS]]
    more = f" and {len(missing) - _MAX_NAMED_CHUNKS} more" if len(missing) > _MAX_NAMED_CHUNKS else ""
    warnings.warn(f"results directory '{outdir}': {n_missing} of {n_cells * n_trials} records of this complete "
                  f"run are missing from its chunk files: no {', '.join(names)}{more} (removed?); a resume "
                  "would recompute them", SweepWarning, stacklevel=4)


def _records_from_csv(path, outdir, cells, column_types):
    """Typed records of ``trials.csv``; ``column_types`` from the manifest, else inferred."""
    header, rows = _read_csv(path, outdir)
    keys = list(cells[0])
    head, tail = keys + ["cell", "trial"], ["wall_time", "seed_entropy", "error"]
    if header[: len(head)] != head or header[-len(tail):] != tail or len(header) < len(head) + 3:
        raise ValueError(f"results directory '{outdir}': {path.name} has columns {header}, "
                         f"expected {head} + the trial function's + {tail}")
    middle = header[len(head) : -len(tail)]
    if column_types is None:
        column_types = {c: _infer_types([row[len(head) + j] for row in rows])
                        for j, c in enumerate(middle)}
    records = []
    for n, row in enumerate(rows, start=2):
        fields = dict(zip(header, row))
        where = f"results directory '{outdir}': {path.name} line {n}"
        try:
            ci, trial = int(fields["cell"]), int(fields["trial"])
            wall_time = float(fields["wall_time"])
        except ValueError:
            raise ValueError(f"{where}: cell, trial or wall_time does not parse") from None
        if not 0 <= ci < len(cells):
            raise ValueError(f"{where}: cell {ci} is not in the grid of {len(cells)} cells")
        cell = cells[ci]
        for key in keys:
            if fields[key] != _format_value(cell[key]):
                raise ValueError(f"{where}: {key}={fields[key]!r} but cell {ci} has "
                                 f"{key}={_format_value(cell[key])!r}")
        failed = bool(fields["error"])
        record = {**cell, "cell": ci, "trial": trial}
        for column in middle:
            types = column_types.get(column, ["str"])
            try:
                record[column] = _parse_field(fields[column], types, failed)
            except ValueError:
                raise ValueError(f"{where}: column {column!r} holds {fields[column]!r}, not "
                                 f"a value of type {'/'.join(types) or 'None'}") from None
        record.update(wall_time=wall_time, seed_entropy=fields["seed_entropy"],
                      error=fields["error"])
        records.append(record)
    return records


def _read_csv(path, outdir):
    try:
        rows = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"results directory '{outdir}': {path.name} is malformed "
                         f"({type(exc).__name__}: {exc})") from None
    if not rows:
        raise ValueError(f"results directory '{outdir}': {path.name} is empty (no header)")
    header, body = rows[0], rows[1:]
    for n, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise ValueError(f"results directory '{outdir}': {path.name} line {n} has "
                             f"{len(row)} fields, the header {len(header)}")
    return header, body


# --------------------------------------------------------------------------- fields


def _kind(text):
    """The type a non-empty CSV field reads as: ``"bool"``, ``"int"``, ``"float"`` or ``"str"``."""
    if text in ("True", "False"):
        return "bool"
    if _INT_RE.fullmatch(text):
        return "int"
    try:
        float(text)
    except ValueError:
        return "str"
    return "float"


def _infer_types(texts):
    """Types of a trials.csv column written without ``column_types`` (an older manifest)."""
    kinds = {_kind(t) for t in texts if t != ""}
    return ["str"] if "str" in kinds else sorted(kinds)


def _parse_field(text, types, failed):
    """One field of the trial function's columns of ``trials.csv``, of one of ``types``."""
    if text == "" and (failed or "str" not in types):
        return None
    if "bool" in types and text in ("True", "False"):
        return text == "True"
    if "int" in types and _INT_RE.fullmatch(text):
        return int(text)
    if "float" in types and _kind(text) in ("float", "int"):
        return float(text)
    if "str" in types:
        return text
    raise ValueError(text)


def _parse_table_column(is_tuple, texts):
    present = [t for t in texts if t != ""]
    kinds = {_kind(t) for t in present}
    if is_tuple:
        try:
            return [None if t == "" else _parse_tuple_text(t) for t in texts]
        except ValueError:
            pass
    if kinds == {"bool"}:
        return [None if t == "" else t == "True" for t in texts]
    if kinds and kinds <= {"int", "float"}:
        return [None if t == "" else int(t) if _INT_RE.fullmatch(t) else float(t) for t in texts]
    return [None if t == "" else t for t in texts]


# --------------------------------------------------------------------------- datasets


def _place(outdir, table, rows, dims, expected):
    """Where each row of ``table`` goes in the grid over ``dims``: the distinct values of each dimension
    (``coords``: those of the rows and those ``expected[d]`` lists, if any) and the rows in C order of
    the grid (``order``); ValueError if two rows share a place or a place has no row."""
    coords, positions = {}, []
    for d in dims:
        given = list(expected.get(d, ()))
        values = given + [row[d] for row in rows]
        keys = _value_keys(values)
        distinct = _sorted_items(dict(zip(keys, values)))
        coords[d] = [value for _, value in distinct]
        index = {key: i for i, (key, _) in enumerate(distinct)}
        positions.append([index[key] for key in keys[len(given):]])
    shape = tuple(len(coords[d]) for d in dims)
    at = {}  # place in the grid: row
    for n, place in enumerate(zip(*positions)):
        if place in at:
            same = ", ".join(f"{d}={rows[n][d]!r}" for d in dims)
            raise ValueError(f"results directory '{outdir}': rows {at[place]} and {n} of table {table!r} share "
                             f"{same}: dims={dims} do not tell its rows apart; add the column that does")
        at[place] = n
    if len(at) < math.prod(shape):
        raise ValueError(f"results directory '{outdir}': {_missing_rows(table, dims, coords, at)}; a Dataset "
                         "needs a full grid: use .frame() for the rows as they are")
    return coords, [at[place] for place in itertools.product(*map(range, shape))]


def _missing_rows(table, dims, coords, at):
    """The sentence saying which combinations of ``dims`` hold no row: cells of the grid (over the
    dimensions other than ``trial``) when some have none at all, else the trials missing."""
    cell_dims = [d for d in dims if d != "trial"]
    axes = [range(len(coords[d])) for d in dims]
    seen = {tuple(i for d, i in zip(dims, p) if d != "trial") for p in at}
    if "trial" in dims and cell_dims:
        empty = [p for p in itertools.product(*(range(len(coords[d])) for d in cell_dims)) if p not in seen]
        if empty:
            first = ", ".join(f"{d}={coords[d][i]!r}" for d, i in zip(cell_dims, empty[0]))
            return (f"the grid over ({', '.join(cell_dims)}) is not full: {len(empty)} of its {len(seen) + len(empty)} "
                    f"cells have no row (the first: {first})")
    missing = [p for p in itertools.product(*axes) if p not in at]
    first = ", ".join(f"{d}={coords[d][i]!r}" for d, i in zip(dims, missing[0]))
    what = "trials" if "trial" in dims else "cells"
    return (f"the grid of table {os.fspath(table)!r} over ({', '.join(dims)}) is not full: {len(missing)} of its "
            f"{len(missing) + len(at)} {what} have no row (the first: {first})")


def _value_keys(values):
    """What tells the values of a column apart: ``1``, ``1.0``, ``True`` and ``"1"`` differ, and a ``nan``
    is one value.  The values themselves when they are of one type other than float and tuple, or floats
    without ``nan`` (the fast path of a grid's fields), else their types and exact texts."""
    kinds = set(map(type, values))
    if len(kinds) == 1 and not kinds & {float, tuple} or kinds == {float} and all(v == v for v in values):
        return values
    return [(type(v), repr(v) if isinstance(v, (float, tuple)) else v) for v in values]


def _sorted_items(distinct):
    """The items of ``{key: value}`` sorted by value when the values compare, else in the order first met."""
    items = list(distinct.items())
    try:
        items.sort(key=lambda item: item[1])
    except TypeError:
        pass  # values of types that do not compare
    return items


def _object_array(values, shape):
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value  # one by one: a list of tuples given at once would make a 2-d array
    return out.reshape(shape)


def _variable(values, shape):
    """``values`` (in C order of ``shape``) as an array of ``shape``: bool, int64 or float64 when all are
    of that one type (floats with ``None`` as ``nan``), else ``object`` holding the values themselves."""
    kinds = set(map(type, values))
    if kinds <= {float, type(None)} and float in kinds:
        return np.array([math.nan if v is None else v for v in values], dtype=float).reshape(shape)
    if kinds == {bool}:
        return np.array(values, dtype=bool).reshape(shape)
    if kinds == {int} and -2**63 <= min(values) and max(values) < 2**63:
        return np.array(values, dtype=np.int64).reshape(shape)
    return _object_array(values, shape)
