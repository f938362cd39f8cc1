"""The sweep: a grid of cells times trials, and the function that runs one trial."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mixreg.validation import check_int, check_real
from mixreg.montecarlo._cells import _check_cells, _normalise_json, _text_cell
from mixreg.montecarlo._store import sweep_key_of

__all__ = ["Sweep"]


def _function_name(fn):
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


@dataclasses.dataclass(frozen=True)
class OnSpec:
    """``fn`` called with ``spec_type.from_cell(cell)`` in place of the engine's cell dict."""

    fn: Callable
    spec_type: type

    def __call__(self, cell, *args):
        return self.fn(self.spec_type.from_cell(cell), *args)


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A grid of cells times trials, and the function that runs one trial.

    Parameters
    ----------
    name : str
        Short name, shown in progress bars and stored in the manifest.
    trial_fn : callable ``(cell: dict, seed: numpy.random.SeedSequence) -> dict``
        Runs one trial.  Must be a module-level function (worker processes import it by
        name) and a deterministic function of its arguments; returns a dict of scalars
        (int, float, bool, str; numpy scalars are converted).  It may not return the engine
        columns ``cell, trial, wall_time, seed_entropy, error`` nor the cell's parameter names.
    cells : sequence of dict
        Grid cells, dicts with identical keys whose values are int, float, bool or str
        scalars, or non-empty tuples of int/float/bool scalars (a list is taken as a tuple;
        a key holds tuples in every cell or in none).  Stored as a tuple of dicts with plain
        Python values, every cell in the key order of the first.  A tuple is hashed, written
        to ``trials.csv`` and stored in the manifest as its comma text
        ``",".join(repr(v) for v in value)`` (see :func:`trial_seed`), but the trial function
        and :attr:`SweepResult.records` see the tuple.
    n_trials : int
        Trials per cell, >= 1.
    root_seed : int
        Root seed, >= 0; see :func:`trial_seed`.
    config : dict
        JSON-serialisable full configuration of the experiment.  Compared (after a JSON
        round trip) when a run resumes in an existing directory.
    chunk_size : int, optional
        Trials per task.  ``None`` chooses automatically from the grid and the number of
        workers (at most 50).  Not part of the sweep's identity: a resumed run may use another
        chunk size and still reuses every finished trial.
    cost_fn : callable ``(cell: dict) -> float``, optional
        Estimated flops of one trial of a cell, for :func:`dry_run`, the time estimate that
        refuses a sweep taking more than a year (see :func:`run_sweep`) and to start the most
        expensive tasks first.
    memory_fn : callable ``(cell: dict) -> float``, optional
        Estimated peak bytes of one trial of a cell (its data and buffers).  With it, a sweep
        whose heaviest trial times the number of workers exceeds the machine's memory is
        refused before it starts (above half of it, warned).  Neither function is part of
        the sweep's identity.
    size_names : tuple of str, optional
        What sets a trial's size, in the caller's terms (an experiment gives its flags, e.g.
        ``("--m", "--n", "--d")``): a refusal for memory names them.  Not part of the sweep's
        identity.
    flop_rate : float, optional
        Flop/s one single-threaded worker reaches on this sweep's trials (as measured by a
        benchmark of its kernels), for the time estimate; default ``_FLOPS_PER_WORKER``.
        Not part of the sweep's identity.
    spec_type : type, optional
        A typed trial spec (:class:`mixreg.study.TrialSpec`): a class whose instances have
        ``to_cell()`` and whose ``from_cell(cell)`` rebuilds the instance.  With it, ``cells``
        may be given as spec instances (stored as their cells, so seeds and files are those of
        the dicts), and ``trial_fn``, ``cost_fn`` and ``memory_fn`` receive
        ``spec_type.from_cell(cell)`` instead of the dict.  Not part of the sweep's identity
        (the cells are).
    algorithms : sequence of str, optional
        The registered algorithms (:data:`mixreg.algorithms.ALGORITHMS` names) the trials run;
        ``None`` (default): every algorithm registered when the run starts.  Two things follow:
        worker processes (``jobs > 1``, Dask) get every one of them that a user registered,
        before their first trial (they import the module that registered it, or receive the
        entry itself when a script registered it), so a trial never misses one (a worker that
        cannot get one stops the run with :class:`AlgorithmUnavailableError`); and their
        modules enter the code fingerprint (:func:`code_fingerprint`) compared on resume.  An
        unknown name is refused when the run starts.  Not part of the sweep's identity.
    predictions : sequence, optional
        Predictions fixed before the data (:class:`mixreg.predictions.Prediction`: objects with
        ``to_json()`` and ``sha256``), registered in the manifest, with the commit and time of
        the run that first wrote it, before the first trial.  A resumed run whose predictions
        differ from the registered ones is refused (:class:`ConfigMismatchError` naming
        ``predictions.<name>``): a prediction changed after the data is not one.  Not part of
        the sweep's key.

    Raises
    ------
    ValueError, TypeError
        For an empty grid, cells with differing keys or values that are neither scalars nor
        tuples of numbers, a key holding tuples in some cells only, duplicate cells,
        ``n_trials < 1``, a negative root seed or a config that is not JSON-serialisable.
    """

    name: str
    trial_fn: Callable[[dict, np.random.SeedSequence], dict]
    cells: tuple
    n_trials: int
    root_seed: int
    config: dict
    chunk_size: int | None = None
    cost_fn: Callable[[dict], float] | None = None
    memory_fn: Callable[[dict], float] | None = None
    flop_rate: float | None = None
    size_names: tuple = ()
    spec_type: type | None = None
    algorithms: tuple | None = None
    predictions: tuple = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        if not callable(self.trial_fn):
            raise TypeError(f"trial_fn must be callable, got {type(self.trial_fn).__name__}")
        if self.spec_type is not None:
            if not (isinstance(self.spec_type, type) and callable(getattr(self.spec_type, "from_cell", None))):
                raise TypeError(f"spec_type must be a class with a from_cell classmethod, got {self.spec_type!r}")
            cells = self.cells if isinstance(self.cells, (list, tuple)) else tuple(self.cells)
            object.__setattr__(self, "cells", tuple(
                c.to_cell() if isinstance(c, self.spec_type) else c for c in cells))
        object.__setattr__(self, "cells", _check_cells(self.cells))
        object.__setattr__(self, "n_trials", check_int("n_trials", self.n_trials, low=1))
        object.__setattr__(self, "root_seed", check_int("root_seed", self.root_seed, low=0))
        if not isinstance(self.config, Mapping):
            raise TypeError(f"config must be a dict, got {type(self.config).__name__}")
        _normalise_json("config", self.config)
        if self.chunk_size is not None:
            object.__setattr__(self, "chunk_size", check_int("chunk_size", self.chunk_size, low=1))
        if self.cost_fn is not None and not callable(self.cost_fn):
            raise TypeError(f"cost_fn must be callable or None, got {type(self.cost_fn).__name__}")
        if self.memory_fn is not None and not callable(self.memory_fn):
            raise TypeError(f"memory_fn must be callable or None, got {type(self.memory_fn).__name__}")
        if isinstance(self.size_names, str):
            raise TypeError(f"size_names must be a tuple of strings, got the string {self.size_names!r}")
        object.__setattr__(self, "size_names", tuple(self.size_names))
        if not all(isinstance(text, str) and text for text in self.size_names):
            raise TypeError(f"size_names must be non-empty strings, got {self.size_names!r}")
        if self.algorithms is not None:
            if isinstance(self.algorithms, str):
                raise TypeError(f"algorithms must be a sequence of algorithm names, got the string "
                                f"{self.algorithms!r}")
            object.__setattr__(self, "algorithms", tuple(self.algorithms))
            if not all(isinstance(name, str) and name for name in self.algorithms):
                raise TypeError(f"algorithms must be algorithm names (strings), got {self.algorithms!r}")
        object.__setattr__(self, "predictions", tuple(self.predictions))
        names = []
        for prediction in self.predictions:
            if not (callable(getattr(prediction, "to_json", None)) and isinstance(getattr(prediction, "sha256", None),
                                                                                  str)):
                raise TypeError(f"predictions must be mixreg.predictions.Prediction objects (with to_json() and "
                                f"sha256), got {type(prediction).__name__}")
            names.append(prediction.to_json().get("name"))
        if len(set(names)) != len(names):
            raise ValueError(f"predictions must have distinct names, got {names}")
        if self.flop_rate is not None:
            object.__setattr__(self, "flop_rate", check_real("flop_rate", self.flop_rate, low=0.0,
                                                             low_inclusive=False))

    @property
    def identity(self) -> dict[str, Any]:
        """The JSON-normalised dict compared on resume (everything that defines the results).

        The trial function enters by its qualified name only, not its module, so that a
        script's trial function keeps its identity whether the script runs as ``__main__``
        or is imported (``python -m``, tests).  A tuple cell value enters as its comma text,
        as in its seed hash: an experiment that moves a list from comma text to a tuple
        keeps its identity and resumes in the results directories it wrote before.  The
        manifest's ``tuple_keys`` says which keys hold tuples.

        The code that computes the records is compared on resume too, but apart
        (:meth:`code`, :class:`CodeChangedError`), and so are the predictions: neither enters
        :attr:`key`, which stamps the chunk files.
        """
        return {
            "name": self.name,
            "trial_fn": getattr(self.trial_fn, "__qualname__", repr(self.trial_fn)),
            "root_seed": self.root_seed,
            "n_trials": self.n_trials,
            "cells": [_text_cell(c) for c in self.cells],
            "config": _normalise_json("config", self.config),
        }

    def function(self, name: str = "trial_fn") -> Callable | None:
        """``trial_fn`` (or ``cost_fn``, ``memory_fn``) as the engine calls it, with a cell dict:
        the function itself, or, with :attr:`spec_type`, the function of the spec rebuilt from the
        cell (a picklable wrapper that workers import by the names of both)."""
        fn = getattr(self, name)
        if fn is None or self.spec_type is None:
            return fn
        return OnSpec(fn, self.spec_type)

    def code(self) -> dict[str, Any]:
        """The fingerprint of the code that computes this sweep's records now
        (:func:`mixreg.montecarlo.code_fingerprint`), recorded in the manifest and compared on resume."""
        from mixreg.montecarlo._code import code_fingerprint

        return code_fingerprint(self)

    def registered_predictions(self) -> list[dict[str, Any]]:
        """The manifest's entries of :attr:`predictions`: ``to_json()`` plus ``sha256``."""
        return [{**prediction.to_json(), "sha256": prediction.sha256} for prediction in self.predictions]

    @functools.cached_property
    def key(self) -> str:
        """Short hash of :attr:`identity`; stamped into every chunk file."""
        return sweep_key_of(self.identity)
