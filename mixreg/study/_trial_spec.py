"""One cell of a study's grid, typed: :class:`TrialSpec` = a :class:`ProblemSpec` + the method's fields.

A study's trial receives its cell as a ``TrialSpec`` subclass instead of a dict::

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class IfcaRun(TrialSpec):
        schema: ClassVar[CellSchema] = CellSchema(keys={"m": "m", ..., "scale": "r"})
        n_rounds: int = param("IFCA rounds T", low=1)
        step_sizes: tuple[float, ...] = param("step sizes", low=0, low_open=True)

    def trial(spec, seed):
        problem = spec.problem.generate(np.random.default_rng(seed))
        ...

:meth:`TrialSpec.to_cell` writes the problem under the class's :class:`CellSchema` (the keys an
experiment's results directories were written under) and the method's fields under their names,
in :meth:`TrialSpec.columns` order; a trial's seed is a hash of that dict, so the spec keeps
every seed of the dict it replaces.  :meth:`TrialSpec.from_cell` is its inverse, which the engine
applies before calling the trial (``Sweep(spec_type=...)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar

from ..problems import CellSchema, ProblemSpec
from ._params import Spec

__all__ = ["TrialSpec"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrialSpec(Spec):
    """A problem and a method's settings: what one trial of a study runs.

    Attributes
    ----------
    problem : mixreg.problems.ProblemSpec
        The problem to draw (validated by itself).
    schema : CellSchema (class attribute)
        How the problem is stored in a cell; override :meth:`cell_schema` and
        :meth:`schema_of` where it depends on the cell (a cell of noise levels sharing a draw).

    Method fields are the subclass's other fields, declared with :func:`mixreg.study.param`;
    a field whose value is ``None`` is left out of the cell.
    """

    problem: ProblemSpec
    schema: ClassVar[CellSchema] = CellSchema()

    # ------------------------------------------------------------------ cells

    def cell_schema(self):
        """The schema this instance's problem is stored under (default: the class's)."""
        return type(self).schema

    @classmethod
    def schema_of(cls, cell):
        """The schema a cell's problem was stored under (default: the class's)."""
        return cls.schema

    def columns(self):
        """The cell's key order, or ``None`` for the problem's keys then the method's."""
        return None

    @classmethod
    def method_names(cls):
        """The method's fields (every field but ``problem``)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "problem")

    def method(self):
        """``{name: value}`` of the method's fields that are not ``None``."""
        values = ((name, getattr(self, name)) for name in self.method_names())
        return {name: value for name, value in values if value is not None}

    def to_cell(self):
        """The engine cell of this spec (a dict of scalars and tuples), in :meth:`columns` order."""
        cell = {**self.problem.to_cell(self.cell_schema()), **self.method()}
        order = self.columns()
        if order is None:
            return cell
        missing = sorted(set(cell) - set(order))
        if missing:
            raise ValueError(f"{type(self).__name__}.columns() leaves out the cell keys {missing}")
        return {key: cell[key] for key in order if key in cell}

    @classmethod
    def from_cell(cls, cell):
        """The spec a cell made by :meth:`to_cell` stands for; a key that is neither the problem's
        (under the schema) nor a method field is refused."""
        if not isinstance(cell, Mapping):
            raise TypeError(f"cell must be a dict (an engine cell), got {type(cell).__name__}")
        schema = cls.schema_of(cell)
        problem_keys = set(schema.keys.values()) if schema.keys else {f.name for f in dataclasses.fields(ProblemSpec)}
        unknown = sorted(set(cell) - problem_keys - set(cls.method_names()))
        if unknown:  # a misspelt key would otherwise leave its field at its default, unseen
            raise ValueError(f"cell holds the key(s) {unknown}, which are neither the problem's nor a field of "
                             f"{cls.__name__}")
        problem = ProblemSpec.from_cell(cell, schema)
        return cls(problem=problem, **{name: cell[name] for name in cls.method_names() if name in cell})
