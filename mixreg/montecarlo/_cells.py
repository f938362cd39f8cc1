"""Cells: their values, their canonical encoding and the seeds derived from it.

A cell is a dict of parameters.  A value is an int, float, bool or str scalar, or a
non-empty tuple of int/float/bool scalars (a list is accepted and stored as a tuple; numpy
scalars become Python ones).  The canonical encoding of a cell (:func:`_canonical_cell`) is
the input of its seed hash and decides which cells are duplicates.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from mixreg.validation import check_int

#: Columns the engine adds to every record; a trial function may not return these names.
ENGINE_COLUMNS = ("cell", "trial", "wall_time", "seed_entropy", "error")

_SEED_DOMAIN = b"mixreg.trial_seed/1\n"
_CELL_VALUE_RULE = ("an int, float, str or bool scalar, or a non-empty tuple of "
                    "int/float/bool scalars")
_INT_RE = re.compile(r"-?[0-9]+")


def plain_scalar(value: object) -> bool | int | float | str:
    """``value`` as the engine stores a trial's field: a plain Python bool, int, float or str (NumPy
    scalars and 0-d arrays converted), or raise TypeError."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, str):
        return str(value)
    raise TypeError(f"expected an int, float, bool or str scalar, got {type(value).__name__}")


def _cell_value(value):
    """``value`` as a plain scalar (see :func:`plain_scalar`) or a tuple of int/float/bool.

    A list is normalised to a tuple.  Raises TypeError whose message says what ``value`` is
    ("a dict", "an empty tuple", "a tuple whose element 1 is a str").
    """
    if not isinstance(value, (tuple, list)):
        try:
            return plain_scalar(value)
        except TypeError:
            raise TypeError(f"a {type(value).__name__}") from None
    kind = type(value).__name__
    if not value:
        raise TypeError(f"an empty {kind}")
    items = []
    for i, item in enumerate(value):
        try:
            plain = plain_scalar(item)
        except TypeError:
            plain = None
        if plain is None or isinstance(plain, str):
            raise TypeError(f"a {kind} whose element {i} is a {type(item).__name__}")
        items.append(plain)
    return tuple(items)


def _tuple_text(value):
    """The comma text of a tuple cell value: ``",".join(repr(v) for v in value)``.

    >>> _tuple_text((1.0, 0.1, 2, True))
    '1.0,0.1,2,True'
    """
    return ",".join(repr(v) for v in value)


def _parse_tuple_text(text):
    """Inverse of :func:`_tuple_text`: the tuple of int/float/bool a comma text stands for.

    ``True``/``False`` read as bools, digits with an optional minus sign as ints, anything
    else as a float (``repr`` of a float always has a ``.``, an exponent, ``nan`` or ``inf``),
    so the round trip is exact.  Raises ValueError for an element that is none of these.

    >>> _parse_tuple_text("1.0,0.1,2,True")
    (1.0, 0.1, 2, True)
    """
    items = []
    for part in str(text).split(","):
        if part in ("True", "False"):
            items.append(part == "True")
        elif _INT_RE.fullmatch(part):
            items.append(int(part))
        else:
            try:
                items.append(float(part))
            except ValueError:
                raise ValueError(f"{text!r} is not the comma text of a tuple of numbers "
                                 f"(element {part!r})") from None
    return tuple(items)


def _text_cell(cell):
    """The cell with every tuple value replaced by its comma text (:func:`_tuple_text`)."""
    return {k: _tuple_text(v) if isinstance(v, tuple) else v for k, v in cell.items()}


def _tuple_keys(cells):
    """The keys whose values are tuples (the same in every cell, see :func:`_check_cells`)."""
    return [k for k, v in cells[0].items() if isinstance(v, tuple)] if cells else []


def _canonical_cell(cell):
    """Exact, type-tagged, key-sorted JSON text of a cell (the input of its seed hash).

    Floats are encoded with ``float.hex`` (exact), and the type is part of the encoding, so
    ``1``, ``1.0`` and ``True`` are different cells.

    A tuple is encoded as the string it replaced in experiments that passed lists as comma
    text, ``["str", ",".join(repr(v) for v in value)]``: ``(1.0, 0.1)`` is encoded exactly
    as ``"1.0,0.1"``.  This keeps the seeds, and so the records, of results directories
    written before cells could hold tuples when an experiment moves from text to a tuple.
    ``repr`` of a float is exact and ``repr`` of an int has no decimal point, so ``(1, 2)``
    and ``(1.0, 2.0)`` stay different cells.  The consequence: a tuple and the equal comma
    text under the same key are the same cell (same seeds), and a grid holding both is
    refused as holding duplicate cells.
    """
    items = []
    for key in sorted(cell):
        try:
            value = _cell_value(cell[key])
        except TypeError as exc:
            raise TypeError(f"cell value {key!r} must be {_CELL_VALUE_RULE}, got {exc}") from None
        if isinstance(value, tuple):
            encoded = ["str", _tuple_text(value)]
        elif isinstance(value, bool):
            encoded = ["bool", value]
        elif isinstance(value, int):
            encoded = ["int", str(value)]
        elif isinstance(value, float):
            encoded = ["float", value.hex()]
        else:
            encoded = ["str", value]
        items.append([str(key), encoded])
    return json.dumps(items, ensure_ascii=True, separators=(",", ":"))


def _cell_entropy(root_seed, cell):
    digest = hashlib.sha256(_SEED_DOMAIN + _canonical_cell(cell).encode("ascii")).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, len(digest), 4)]
    return [int(root_seed), *words]


def trial_seed(root_seed: int, cell: Mapping[str, Any], trial: int) -> np.random.SeedSequence:
    """Return the seed sequence of one trial of one cell.

    .. math::

        \\text{seed}(r, c, t) = \\mathrm{SeedSequence}(\\text{entropy}=[r, w_0, \\dots, w_7],
        \\ \\text{spawn\\_key}=(t,))

    where :math:`w_0, \\dots, w_7` are the eight little-endian 32-bit words of the SHA-256
    of a canonical encoding of the cell (keys sorted, each value tagged with its type,
    floats written exactly with ``float.hex``).

    A tuple value is hashed as its comma text ``",".join(repr(v) for v in value)``, the
    string that experiments passed before cells could hold tuples: results directories
    written then keep their seeds when an experiment moves from the text to a tuple.  Hence
    ``(1.0, 0.1)`` and ``"1.0,0.1"`` under the same key are the same cell, with the same
    seeds (a grid holding both is refused as holding duplicate cells), while ``(1, 2)`` and
    ``(1.0, 2.0)`` differ (``repr`` of an int has no decimal point).

    Parameters
    ----------
    root_seed : int
        Non-negative root seed of the sweep.
    cell : mapping of str to int, float, str, bool or tuple
        The cell's parameters: scalars, or non-empty tuples (or lists) of int/float/bool.
        Key order does not matter; value types do (``1`` and ``1.0`` are different cells).
    trial : int
        Non-negative trial index.

    Returns
    -------
    seed : numpy.random.SeedSequence
        Independent of the cell's position in a grid, of other cells, of the process and of
        the Python hash seed.

    Examples
    --------
    >>> a = trial_seed(1, {"R": 2.0, "m": 4}, 0)
    >>> b = trial_seed(1, {"m": 4, "R": 2.0}, 0)
    >>> bool((a.generate_state(4) == b.generate_state(4)).all())
    True
    >>> trial_seed(1, {"steps": (1.0, 0.1)}, 0).entropy == trial_seed(
    ...     1, {"steps": "1.0,0.1"}, 0).entropy
    True
    """
    root_seed = check_int("root_seed", root_seed, low=0)
    trial = check_int("trial", trial, low=0)
    cell = _check_cell("cell", cell)
    return np.random.SeedSequence(_cell_entropy(root_seed, cell), spawn_key=(trial,))


def seed_from_record(record: Mapping[str, Any]) -> np.random.SeedSequence:
    """Return the seed sequence a record's trial ran with (from its ``seed_entropy``)."""
    entropy = json.loads(record["seed_entropy"])
    return np.random.SeedSequence(entropy, spawn_key=(int(record["trial"]),))


# --------------------------------------------------------------------------- checking


def _check_cell(name, cell):
    if not isinstance(cell, Mapping):
        raise TypeError(f"{name} must be a dict of scalars, got {type(cell).__name__}")
    out = {}
    for key, value in cell.items():
        if not isinstance(key, str):
            raise TypeError(f"{name} keys must be strings, got {key!r}")
        try:
            out[key] = _cell_value(value)
        except TypeError as exc:
            raise TypeError(f"{name}[{key!r}] must be {_CELL_VALUE_RULE}, "
                            f"got {value!r} ({exc})") from None
    return out


def _check_cells(cells):
    if isinstance(cells, Mapping) or isinstance(cells, (str, bytes)):
        raise TypeError("cells must be a sequence of dicts (one per grid cell), got a single "
                        f"{type(cells).__name__}")
    try:
        cells = list(cells)
    except TypeError:
        raise TypeError(f"cells must be a sequence of dicts, got {type(cells).__name__}") from None
    if not cells:
        raise ValueError("cells must contain at least one cell; the grid is empty")
    checked = [_check_cell(f"cells[{i}]", c) for i, c in enumerate(cells)]
    keys = list(checked[0])
    if not keys:
        raise ValueError("cells[0] has no parameters; a cell needs at least one key")
    clash = sorted(set(keys) & set(ENGINE_COLUMNS))
    if clash:
        raise ValueError(f"cell parameter names {clash} are reserved for engine columns "
                         f"{list(ENGINE_COLUMNS)}; rename them")
    seen = {}
    for i, cell in enumerate(checked):
        if set(cell) != set(keys):
            raise ValueError(f"cells must all have the same keys: cells[{i}] has "
                             f"{sorted(cell)} but cells[0] has {sorted(keys)}")
        canon = _canonical_cell(cell)
        if canon in seen:
            raise ValueError(f"cells[{i}] duplicates cells[{seen[canon]}] ({cell}); "
                             "identical cells would repeat the same random trials")
        seen[canon] = i
    for key in keys:
        first = isinstance(checked[0][key], tuple)
        for i, cell in enumerate(checked):
            if isinstance(cell[key], tuple) != first:
                raise ValueError(
                    f"cells[{i}][{key!r}] is {cell[key]!r} but cells[0][{key!r}] is "
                    f"{checked[0][key]!r}; a key must hold tuples in every cell or in none "
                    "(write a single value as a 1-tuple)")
    return tuple({k: cell[k] for k in keys} for cell in checked)


def _json_default(obj):
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"object of type {type(obj).__name__} is not JSON serialisable")


def _normalise_json(name, obj):
    """``obj`` after a JSON round trip (tuples -> lists, numpy scalars -> Python)."""
    try:
        text = json.dumps(obj, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be JSON-serialisable: {exc}") from None
    return json.loads(text)
