"""Tables: the CSV format of ``trials.csv``, ``summary.csv`` and experiments' derived tables.

A field is the value's ``repr`` for a float (exact: it reads back to the same float), its
``str`` for an int, a bool or a str, the comma text ``",".join(repr(v) for v in value)`` for
a tuple, and empty for ``None``.  :mod:`mixreg.montecarlo.reader` parses them back.
"""

from __future__ import annotations

import csv
import io
import math
import os
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mixreg.montecarlo._cells import _tuple_text
from mixreg.montecarlo._store import MANIFEST_NAME, _write_atomic, record_checksums


def _columns(cell_keys, records):
    head = list(cell_keys) + ["cell", "trial"]
    tail = ["wall_time", "seed_entropy", "error"]
    middle = []
    seen = set(head) | set(tail)
    for record in records:
        for key in record:
            if key not in seen:
                seen.add(key)
                middle.append(key)
    return head, middle, tail


def _column_types(records, columns):
    """``{column: sorted type names of its non-missing values}``, e.g. ``{"dist": ["float"]}``.

    Stored in the manifest so that a reader parses each field of ``trials.csv`` back to the
    type the trial function returned (``"1"`` the str and ``1`` the int look alike in CSV).
    """
    return {c: sorted({type(r[c]).__name__ for r in records if r.get(c) is not None})
            for c in columns}


def _format_value(value):
    if value is None:
        return ""
    if isinstance(value, float):  # numpy's float64 too, whose repr is "np.float64(0.5)" since NumPy 2
        return repr(float(value))
    if isinstance(value, np.generic):  # a NumPy integer or bool: its Python value's text
        return str(value.item())
    if isinstance(value, tuple):
        return _tuple_text(value)
    return str(value)


def _csv_text(columns, rows):
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_format_value(row.get(c)) for c in columns])
    return buffer.getvalue()


def write_table(path: str | os.PathLike[str], rows: Sequence[Mapping[str, Any]], *,
                record: bool = False) -> pathlib.Path:
    """Write ``rows`` (dicts with the keys of the first row) as CSV, atomically.

    Floats are written with ``repr`` so they read back exactly; ``None`` is an empty field;
    a tuple is its comma text ``",".join(repr(v) for v in value)``.  The format of the
    engine's own ``trials.csv`` and ``summary.csv``, for an experiment's derived tables;
    read one back with :meth:`mixreg.montecarlo.reader.Results.table`.

    Parameters
    ----------
    path : path-like
    rows : iterable of dict
    record : bool, default False
        Also record the file's sha256 in the ``manifest.json`` of its directory (a results
        directory), as the engine does for ``trials.csv`` and ``summary.csv``: readers then
        refuse the table if it is edited afterwards (:class:`mixreg.montecarlo.EditedFileError`).

    Returns
    -------
    pathlib.Path
    """
    rows = list(rows)
    if not rows:
        raise ValueError(f"rows must hold at least one row to write {path}")
    path = pathlib.Path(path)
    if record and not (path.parent / MANIFEST_NAME).is_file():
        raise ValueError(f"record=True needs a results directory: {path.parent} holds no {MANIFEST_NAME}")
    _write_atomic(path, _csv_text(list(rows[0]), rows))
    if record:
        record_checksums(path.parent, [path])
    return path


def _summarise(sweep, records, param_cols, middle):
    numeric = [c for c in middle + ["wall_time"]
               if all(isinstance(r.get(c), (int, float)) or r.get(c) is None for r in records)]
    rows = []
    n = sweep.n_trials
    for ci, cell in enumerate(sweep.cells):
        block = records[ci * n : (ci + 1) * n]
        row = {**cell, "cell": ci, "n_trials": len(block),
               "n_errors": sum(1 for r in block if r["error"])}
        for col in numeric:
            values = [float(r[col]) for r in block if r.get(col) is not None and not r["error"]]
            row[f"mean_{col}"] = float(np.mean(values)) if values else math.nan
        rows.append(row)
    columns = list(param_cols) + ["cell", "n_trials", "n_errors"] + [f"mean_{c}" for c in numeric]
    return columns, rows
