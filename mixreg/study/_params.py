"""Parameters declared once, with their constraints: :func:`param` and :class:`Spec`.

A study's ``Config`` (the command line) and its trial spec (one cell of the grid) are frozen,
keyword-only dataclasses whose fields are made with :func:`param`: the help text, the allowed
range or choices, and the relation to another field stand next to the field, and
:meth:`Spec.validate` checks them all, in the order of the fields, with one message per fault
naming the field, its allowed range and the value received::

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Config(Spec):
        preset: str = param("quick or paper")
        m: int = param("clients", low=1)
        k: int = param("clusters", low=1, at_most="m", why="every cluster needs a client")
        sigmas: tuple[float, ...] = param("noise levels", low=0, distinct=True)
        step_sizes: tuple[float, ...] = param("step sizes", low=0, low_open=True)
        dtype: str = param("floating-point type", default="float64", choices=("float32", "float64"))

A constraint across fields that no keyword says ("a slope needs two points") is a method
``check(self)`` raising ``ValueError``; it runs after the fields' own checks and their relations.
A spec is validated when it is made (``__post_init__``), so every instance is a valid one; the
first fault found is raised, in one line.  A field not made with :func:`param` is not checked.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import typing
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np

__all__ = ["param", "Spec", "spec_fields"]

_SCALARS = (bool, int, float, str)


_S = TypeVar("_S", bound="Spec")


def param(help: str, *, default: Any = dataclasses.MISSING, choices: Sequence[Any] | None = None,
          low: float | None = None, high: float | None = None, low_open: bool = False, high_open: bool = False,
          distinct: bool = False, allow_empty: bool = False, at_most: str | None = None,
          at_least: str | None = None, why: str | None = None, renamed_from: str | Sequence[str] = (),
          flag: bool = True) -> Any:
    """A spec field with its help text and constraints (also a command-line flag of a ``Config``).

    Parameters
    ----------
    help : str
        What the parameter is (the flag's help; argparse's ``%`` is written ``%%``).
    default : optional
        Default when no preset sets it (immutable: a tuple, not a list).
    choices : sequence, optional
        Allowed values (of every element, for a tuple field).
    low, high : number, optional
        Bounds of a number (of every element, for a tuple field); inclusive unless ``low_open``
        / ``high_open``.  A float field must also be finite.
    distinct : bool, default=False
        A tuple field's values must be distinct (a repeated value would be a repeated cell).
    allow_empty : bool, default=False
        A tuple field may be empty.
    at_most, at_least : str, optional
        The name of another field this one must not exceed (``at_most``) or fall below.
    why : str, optional
        The reason of the relation, appended to its message.
    renamed_from : str or sequence of str
        Flags of earlier versions (``"--inits"``); the command line refuses them, naming the new one.
    flag : bool, default=True
        Whether the field is a flag of a study's command line.

    Returns
    -------
    dataclasses.Field
        Its ``metadata`` holds ``help``, ``choices``, ``renamed_from``, ``flag`` and ``check``
        (the constraints).
    """
    if isinstance(renamed_from, str):
        renamed_from = (renamed_from,)
    check = dict(low=low, high=high, low_open=low_open, high_open=high_open, distinct=distinct,
                 allow_empty=allow_empty, at_most=at_most, at_least=at_least, why=why,
                 choices=None if choices is None else tuple(choices))
    metadata = {"help": help, "choices": check["choices"], "renamed_from": tuple(renamed_from),
                "flag": bool(flag), "check": check}
    return dataclasses.field(default=default, metadata=metadata)


@functools.cache
def spec_fields(cls):
    """``((field, resolved annotation), ...)`` of a spec class, in declaration order (resolved once
    per class: every spec made, every cell a worker rebuilds, reads them)."""
    hints = typing.get_type_hints(cls)
    return tuple((f, hints[f.name]) for f in dataclasses.fields(cls))


def _kind(hint):
    """``(element type, is a tuple, may be None)`` of ``T``, ``tuple[T, ...]`` or either ``| None``."""
    optional = False
    args = typing.get_args(hint)
    if type(None) in args and len(args) == 2:  # T | None
        optional, hint = True, next(a for a in args if a is not type(None))
        args = typing.get_args(hint)
    if typing.get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return args[0], True, optional
    return hint, False, optional


def _is(kind, value):
    if kind is bool:
        return isinstance(value, (bool, np.bool_))
    if kind is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    if kind is float:
        return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    return isinstance(value, kind)


def _range_text(kind, check):
    """``"an integer >= 1"``, ``"finite and > 0"``, ``"in (0, 0.5]"``: the allowed range in words."""
    low, high = check["low"], check["high"]
    if low is not None and high is not None:
        text = f"in {'(' if check['low_open'] else '['}{low:g}, {high:g}{')' if check['high_open'] else ']'}"
    elif low is not None:
        text = f"{'>' if check['low_open'] else '>='} {low:g}"
    elif high is not None:
        text = f"{'<' if check['high_open'] else '<='} {high:g}"
    else:
        text = ""
    if kind is int:
        return "an integer" + (f" {text}" if text else "")
    if kind is float:
        return "finite" + (f" and {text}" if text else "")
    return text


def _in_range(value, check):
    low, high = check["low"], check["high"]
    if isinstance(value, numbers.Real) and not math.isfinite(float(value)):  # NumPy's nan too
        return False
    if low is not None and (value <= low if check["low_open"] else value < low):
        return False
    return not (high is not None and (value >= high if check["high_open"] else value > high))


def _check_field(name, value, hint, check):
    kind, is_tuple, optional = _kind(hint)
    if value is None and optional:
        return
    if kind not in _SCALARS:  # a nested spec (a ProblemSpec) validates itself
        if not isinstance(kind, type) or typing.get_origin(kind) is not None:
            raise TypeError(f"{name}: a param field is annotated int, float, str, bool, tuple[T, ...] (of one of "
                            f"these), either | None, or a class; got {kind!r}")
        if not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
        return
    values = value if is_tuple else (value,)
    if is_tuple and not isinstance(value, tuple):
        raise TypeError(f"{name} must be a tuple, got {value!r}")
    shown = list(value) if is_tuple else repr(value)
    if is_tuple and not value and not check["allow_empty"]:
        raise ValueError(f"{name} is empty: give at least one value")
    numeric = kind in (int, float)
    for item in values:
        if not _is(kind, item):
            what = _range_text(kind, check) if numeric else f"of type {kind.__name__}"
            raise (ValueError if numeric else TypeError)(f"{name} must be {what}, got {shown}")
        if check["choices"] is not None and item not in check["choices"]:
            allowed = ", ".join(repr(c) for c in check["choices"])
            raise ValueError(f"{name} must be one of {allowed}; got {shown}")
        if numeric and not _in_range(item, check):
            raise ValueError(f"{name} must be {_range_text(kind, check)}, got {shown}")
    if is_tuple and check["distinct"] and len(set(value)) < len(value):
        raise ValueError(f"{name} must be distinct, got {shown}")


def _as_float(value):
    """``float(value)`` for an integer (not a bool), the value itself otherwise (validation judges it)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return float(value)
    return value


class Spec:
    """Base of a frozen, keyword-only dataclass of :func:`param` fields, validated when made.

    Subclasses are declared ``@dataclasses.dataclass(frozen=True, kw_only=True)``.  Lists given
    for tuple fields are stored as tuples, and an integer given for a ``float`` field as a float
    (``1`` and ``1.0`` are one spec, so one cell and one seed).
    """

    if TYPE_CHECKING:  # every Spec is a dataclass: its subclasses are declared as ones
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __post_init__(self):
        for field, hint in spec_fields(type(self)):
            value = getattr(self, field.name)
            if isinstance(value, list):
                value = tuple(value)
            kind, is_tuple, _ = _kind(hint)
            if kind is float:  # an integer given for a float is that float: equal specs, equal cells, equal seeds
                value = tuple(_as_float(v) for v in value) if is_tuple and isinstance(value, tuple) else _as_float(value)
            object.__setattr__(self, field.name, value)
        self.validate()

    def validate(self: _S) -> _S:
        """Check every field's own constraints (in field order), then the relations between
        fields, then :meth:`check`; return ``self``.

        Raises
        ------
        ValueError
            Naming the first bad field, its allowed range and the value: for a number out of
            range, not finite, or not a number at all (as a command line reads it), a choice
            not allowed, an empty or repeated tuple, a broken relation.
        TypeError
            For a ``str`` or ``bool`` field holding another type, a field whose annotation
            :func:`param` does not support, or a relation naming no field.
        """
        klass: type = type(self)
        declared = [(field, hint, field.metadata["check"]) for field, hint in spec_fields(klass)
                    if field.metadata.get("check") is not None]
        for field, hint, check in declared:  # each field's own range first, then the relations
            _check_field(field.name, getattr(self, field.name), hint, check)
        for field, hint, check in declared:
            value = getattr(self, field.name)
            for other, bound in (("at_most", "at most"), ("at_least", "at least")):
                name = check[other]
                if name is None or value is None:
                    continue
                if not hasattr(self, name):
                    raise TypeError(f"{field.name}: {other}={name!r} names no field of {type(self).__name__}")
                if getattr(self, name) is None:
                    continue
                limit = getattr(self, name)
                items = value if isinstance(value, tuple) else (value,)  # a tuple: every value
                if any((item > limit) if other == "at_most" else (item < limit) for item in items):
                    reason = f" ({check['why']})" if check["why"] else ""
                    shown = list(value) if isinstance(value, tuple) else repr(value)
                    every = "every value of " if isinstance(value, tuple) else ""
                    raise ValueError(f"{every}{field.name} must be {bound} {name}{reason}; got {field.name}={shown}, "
                                     f"{name}={limit!r}")
        self.check()
        return self

    def check(self) -> None:
        """Constraints across fields that :func:`param` cannot say; raise ``ValueError``."""

    # ------------------------------------------------------------------ a flat spec as a cell

    def to_cell(self) -> dict[str, Any]:
        """The spec as an engine cell: every field under its own name, in declaration order (a
        flat spec of scalars and tuples; :class:`mixreg.study.TrialSpec` stores its problem under
        a schema instead)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_cell(cls: type[_S], cell: Mapping[str, Any]) -> _S:
        """The spec a cell made by :meth:`to_cell` stands for (other keys of the cell are left to
        whoever composes this spec with more fields)."""
        names = [f.name for f in dataclasses.fields(cls)]
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in cell
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ValueError(f"cell must hold the key(s) {missing} of {cls.__name__}, got keys {sorted(cell)}")
        return cls(**{name: cell[name] for name in names if name in cell})

    def replace(self: _S, **changes: Any) -> _S:
        """A copy with ``changes`` (validated)."""
        return dataclasses.replace(self, **changes)
