"""A study as one object: :class:`Study`, from its config to its sweep, tables, figures and command line.

A study is a grid of trials and what is made of their records.  It declares:

* its ``config``: a :class:`mixreg.study.Spec` whose fields are the command line's flags
  (``preset`` first), and ``presets``, the values a flag not given takes;
* its ``cells``: ``config -> sequence of TrialSpec`` (or of dicts), the grid;
* its ``trial``: the function run per (cell, seed), importable by worker processes;
  ``trial_of`` when the config chooses among several;
* ``cost`` and ``memory``: per-trial flops and peak bytes from a cell, for the time estimate and
  the refusal of a sweep that cannot fit (the study's own arrays: :data:`TRIAL_OVERHEAD` is added);
* ``summarise``: ``(config, records) -> {table: rows}`` and ``draw``: ``(config, tables, outdir)
  -> figure paths`` from the tables alone (so ``--redraw`` repeats a figure exactly).

``Study.sweep(config)`` is the :class:`mixreg.montecarlo.Sweep` it runs and ``Study.main(argv)``
its command line (``mixreg.cli``): the config's flags, the engine's, ``--redraw``,
``--dry-run``, one-line faults.  A study is one folder: its spec, trial, summary and figures, a
``__main__.py`` of two lines::

    import sys
    from . import STUDY
    sys.exit(STUDY.main(command_line=True))
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import cli
from ..algorithms import TRIAL_OVERHEAD
from ..montecarlo import Sweep
from ._params import Spec

__all__ = ["Study", "TRIAL_OVERHEAD"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Study:
    """A Monte Carlo study: grid, trial, estimates, tables, figures and command line.

    Parameters
    ----------
    name : str
        The study's (and its sweep's) name; results go to ``results/<name>/<preset>``.
    command : str
        How it is run, for ``--help`` and messages: ``"python -m experiments.success_vs_R"``.
    description : str
        The ``--help`` text.
    config : type
        A frozen keyword-only :class:`mixreg.study.Spec` with a ``preset: str`` field and a
        ``trials: int`` field (trials per cell), then one :func:`mixreg.study.param` field per
        flag.
    presets : mapping of str to dict
        Preset name -> field values (``"quick"`` is the default preset when present); a key
        that is not a field of ``config`` is refused when the study is made.
    cells : callable
        ``config -> sequence of TrialSpec or dict``: the grid.
    trial : callable, optional
        ``(spec, seed) -> dict of scalars``, a module-level function.
    trial_of : callable, optional
        ``config -> trial function``, when the config chooses it (exactly one of ``trial`` and
        ``trial_of``).
    spec_type : type, optional
        The :class:`mixreg.study.TrialSpec` subclass of the cells; the trial, ``cost`` and
        ``memory`` then receive it instead of the dict.  ``None``: they receive the dict.
    tables : tuple of str
        The tables ``summarise`` returns, written as ``<outdir>/<name>.csv``.
    summarise, draw : callable
        See the module docstring.
    root_seed : int
        The sweep's root seed (``--seed`` replaces it).
    cost : callable, optional
        Flops of one trial of a cell.
    memory : callable, optional
        Peak bytes of one trial's own arrays; the sweep's estimate adds ``overhead``.
    overhead : float, default=TRIAL_OVERHEAD
        Bytes a trial holds besides its arrays (the interpreter's, compiled kernels).
    flop_rate : float or callable, optional
        Flop/s of one worker on these trials, or ``config -> flop/s``.
    size_flags : tuple of str
        The flags that set a trial's size (named by a refusal for memory).
    record : callable, optional
        ``config -> dict``: the config as the manifest records it and a resume compares (part of
        the sweep's identity); default ``dataclasses.asdict(config)``.  A study adds what its
        tables depend on (definitions of success, registered predictions) or leaves out an
        option at its default that an earlier version did not have, so that its results
        directories keep their identity.
    paper_presets : tuple of str
        Presets whose figures are also copied to ``figures_dir`` when the run is the unchanged
        preset.
    figures_dir : path-like, optional
    chunk_size : int, optional
        Trials per task (the checkpoint grain), default automatic; ``--chunk-size`` replaces it.
    algorithms : sequence of str or callable, optional
        The registered algorithms the trials run by name (:attr:`mixreg.montecarlo.Sweep.algorithms`;
        a callable of the config gives them): worker processes get each, and their modules enter
        the code fingerprint.  ``None`` (default): every registered algorithm.  A study that calls
        its drivers directly gives ``()``: the modules its trial imports are fingerprinted anyway.
    predictions : sequence or callable, optional
        Predictions fixed before the data (:class:`mixreg.predictions.Prediction`), or a callable
        of the config giving them: registered in the results directory's manifest before the
        first trial (:attr:`mixreg.montecarlo.Sweep.predictions`).
    """

    name: str
    command: str
    description: str
    config: type
    presets: Mapping
    cells: Callable
    tables: tuple
    summarise: Callable
    draw: Callable
    root_seed: int
    trial: Callable | None = None
    trial_of: Callable | None = None
    spec_type: type | None = None
    cost: Callable | None = None
    memory: Callable | None = None
    overhead: float = TRIAL_OVERHEAD
    flop_rate: float | Callable | None = None
    size_flags: tuple = ()
    record: Callable | None = None
    paper_presets: tuple = ()
    figures_dir: pathlib.Path | None = None
    chunk_size: int | None = None
    algorithms: tuple | Callable | None = None
    predictions: tuple | Callable = ()

    def __post_init__(self):
        if (self.trial is None) == (self.trial_of is None):
            raise TypeError(f"study {self.name!r}: give exactly one of trial and trial_of")
        if not (isinstance(self.config, type) and issubclass(self.config, Spec)):
            raise TypeError(f"study {self.name!r}: its config must be a mixreg.study.Spec subclass (validated when "
                            f"made), got {self.config!r}")
        fields = {f.name for f in dataclasses.fields(self.config)}
        for needed in ("preset", "trials"):
            if needed not in fields:
                raise TypeError(f"study {self.name!r}: its config {self.config.__name__} has no {needed} field")
        if not self.presets:
            raise ValueError(f"study {self.name!r} has no preset")
        for preset, values in self.presets.items():  # a misspelt key would fail only when its preset runs
            unknown = sorted(set(values) - fields)
            if unknown:
                raise TypeError(f"study {self.name!r}: preset {preset!r} sets {unknown}, which are not fields "
                                f"of {self.config.__name__}")
        object.__setattr__(self, "tables", tuple(self.tables))
        object.__setattr__(self, "size_flags", tuple(self.size_flags))
        object.__setattr__(self, "paper_presets", tuple(self.paper_presets))

    # ------------------------------------------------------------------ configs and sweeps

    def preset(self, name: str = "quick", **changes: Any) -> Spec:
        """The validated config of preset ``name`` with ``changes``."""
        if name not in self.presets:
            raise ValueError(f"preset must be one of {', '.join(map(repr, self.presets))}; got {name!r}")
        return self.config(preset=name, **{**self.presets[name], **changes})

    def trial_function(self, config: Any) -> Callable:
        """The trial function the config runs."""
        trial = self.trial if self.trial_of is None else self.trial_of(config)
        assert trial is not None  # a Study has a trial or a trial_of (checked when made)
        return trial

    def sweep(self, config: Any, root_seed: int | None = None) -> Sweep:
        """The :class:`mixreg.montecarlo.Sweep` of ``config`` (its identity: name, trial, cells,
        trials, root seed and the recorded config)."""
        record = dataclasses.asdict(config) if self.record is None else self.record(config)
        rate = self.flop_rate(config) if callable(self.flop_rate) else self.flop_rate
        return Sweep(
            name=self.name,
            trial_fn=self.trial_function(config),
            cells=tuple(self.cells(config)),
            n_trials=config.trials,
            root_seed=self.root_seed if root_seed is None else root_seed,
            config=record,
            cost_fn=self.cost,
            memory_fn=None if self.memory is None else _Plus(self.memory, float(self.overhead)),
            size_names=self.size_flags,
            flop_rate=rate,
            spec_type=self.spec_type,
            chunk_size=self.chunk_size,
            algorithms=self.algorithms(config) if callable(self.algorithms) else self.algorithms,
            predictions=self.predictions(config) if callable(self.predictions) else self.predictions,
        )

    # ------------------------------------------------------------------ the command line

    def parser(self) -> argparse.ArgumentParser:
        """The study's ``argparse`` parser (``mixreg.cli.parser_from_config``)."""
        return cli.parser_from_config(self.config, self.presets, prog=self.command, description=self.description,
                                      name=self.name, root_seed=self.root_seed)

    def config_from_args(self, args: argparse.Namespace) -> Spec:
        """The validated config of parsed arguments (the preset's values replaced by the flags given)."""
        return cli.config_from_args(self.config, self.presets, args)

    def main(self, argv: Sequence[str] | None = None, *, command_line: bool = False) -> int:
        """Run the study's command line; return the exit status (``mixreg.cli.experiment_main``).

        ``command_line=True`` (its ``__main__``): Ctrl-C and SIGTERM end in one line and the
        exit status 130 or 143; otherwise (in-process, a test) they are raised.
        """
        return cli.experiment_main(
            self.parser(), argv, name=self.name, config_cls=self.config, presets=self.presets,
            build_sweep=self.sweep, summarise=self.summarise, draw=self.draw, tables=self.tables,
            paper_presets=self.paper_presets,
            figures_dir=self.figures_dir if self.paper_presets else None, command_line=command_line)


@dataclasses.dataclass(frozen=True)
class _Plus:
    """``fn(cell) + constant``, picklable."""

    fn: Callable
    constant: float

    def __call__(self, cell):
        return self.constant + float(self.fn(cell))
