"""Will a sweep fit?  Its cost, memory and time estimated before anything runs.

The checks :func:`mixreg.montecarlo.run_sweep` makes before writing anything, and the two
public ways to make them in advance: :func:`check_fits` (refuse or warn) and :func:`dry_run`
(describe the grid, the tasks and the estimate).  A sweep is refused with
:class:`SweepTooLargeError` when it has more than :data:`MAX_TRIALS` trials, needs more memory
than the machine has or would take more than a year; warned (:class:`SweepWarning`) above half
the memory or a day.  The automatic chunk size, which depends on the same costs, is chosen here
too.
"""

from __future__ import annotations

import dataclasses
from typing import Any
import math
import os
import warnings

import numpy as np

from mixreg.validation import check_int
from mixreg.montecarlo._errors import SweepTooLargeError, SweepWarning
from mixreg.montecarlo._spec import Sweep, _function_name

__all__ = ["MAX_TRIALS", "check_fits", "dry_run"]

_MAX_AUTO_CHUNK = 50  # trials per task at most when chosen automatically (checkpoint grain)
_TASKS_PER_WORKER = 8  # automatic chunking aims for at least this many tasks per worker
#: Estimated seconds of a task at most when the chunk size is chosen automatically and the sweep
#: has a cost_fn: an interrupted run loses at most about this much of each worker's work.
_MAX_CHUNK_SECONDS = 300.0


# --------------------------------------------------------------------------- costs and chunks


def _auto_chunk_size(n_cells, n_trials, workers, trial_seconds=None):
    """Trials per task: enough tasks per worker to balance the load, at most
    :data:`_MAX_AUTO_CHUNK`, and, given the estimated seconds of the heaviest trial, at most
    :data:`_MAX_CHUNK_SECONDS` of work (the work an interruption can lose)."""
    per_task = math.ceil(n_cells * n_trials / (_TASKS_PER_WORKER * workers))
    size = max(1, min(per_task, n_trials, _MAX_AUTO_CHUNK))
    if trial_seconds:
        size = max(1, min(size, int(_MAX_CHUNK_SECONDS // trial_seconds)))
    pieces = math.ceil(n_trials / size)
    return math.ceil(n_trials / pieces)  # balance the chunks of a cell


def _heaviest_trial_seconds(sweep, costs):
    """Estimated seconds of the sweep's heaviest trial (its cost at its flop rate), or None."""
    if not costs:
        return None
    return max(costs) / _flop_rate(sweep)


def _flop_rate(sweep):
    """Flop/s per worker of the sweep's time estimates: its own, or :data:`_FLOPS_PER_WORKER`."""
    return sweep.flop_rate or _FLOPS_PER_WORKER


def _cell_costs(sweep, name="cost_fn"):
    fn = sweep.function(name)
    if fn is None:
        return None
    costs = []
    for i, cell in enumerate(sweep.cells):
        try:
            cost = float(fn(dict(cell)))
        except Exception as exc:  # noqa: BLE001 - re-raised with the cell named
            raise ValueError(f"{name} failed for cells[{i}] = {cell}: {exc}") from exc
        if not (math.isfinite(cost) and cost >= 0):
            raise ValueError(f"{name} must return a finite value >= 0, got {cost!r} "
                             f"for cells[{i}] = {cell}")
        costs.append(cost)
    return costs


# --------------------------------------------------------------------------- will it fit?

#: Most trials a sweep may have: every record is held in memory until ``trials.csv`` is written.
MAX_TRIALS = 10_000_000
#: Memory per trial assumed by the estimate: a record in memory (a few kB for 30 to 80
#: columns), its copy in column order and its line of CSV text at the end of the run.
_BYTES_PER_TRIAL = 10_000
#: Speed assumed by the time estimate, per single-threaded worker, for a sweep that does not
#: give its own ``flop_rate``: a cautious round figure (the IFCA kernels reach 3e10 to 8e10 on
#: one core at the official sizes, see docs/benchmark.md); the estimate is an order of
#: magnitude.
_FLOPS_PER_WORKER = 1e10
_WARN_SECONDS = 86_400.0  # warn above a day
_MAX_SECONDS = 365 * 86_400.0  # refuse above a year
_WARN_MEMORY_FRACTION = 0.5  # warn above half the physical memory; refuse above all of it


def _available_cores():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _physical_memory():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _cap_workers(name, value):
    """``value`` capped at the machine's cores, with a one-line warning when it was above."""
    if value is None:
        return None
    cores = _available_cores()
    if value > cores:
        warnings.warn(f"{name}={value} is more than the {cores} cores of this machine; using "
                      f"{cores} (the results do not depend on the number of workers, only the "
                      "speed does)", SweepWarning, stacklevel=4)
        return cores
    return value


def _size(n):
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def _duration(seconds):
    for unit, scale in (("years", 365 * 86400.0), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.2g} s"


@dataclasses.dataclass(frozen=True)
class _Estimate:
    """What a sweep will cost, and whether it fits (:func:`_estimate`)."""

    trials: int
    flops: float | None
    memory_bytes: float
    seconds: float | None
    workers: int | None
    warnings: tuple
    refusal: str | None
    trial_bytes: float | None = None
    rate: float = _FLOPS_PER_WORKER

    def lines(self):
        mem = _physical_memory()
        text = [f"Estimated memory: {_size(self.memory_bytes)} in all: the records, about "
                f"{_size(_BYTES_PER_TRIAL)} per trial, in the process that runs the command"
                + ("" if self.trial_bytes is None else
                   f", and up to {_size(self.trial_bytes)} per worker for the heaviest trial")
                + ("" if mem is None else f"; this machine has {_size(mem)}")]
        if self.seconds is not None:
            text.append(f"Estimated time: {_duration(self.seconds)} with {self.workers} "
                        f"worker(s), at an assumed {self.rate:.2g} flop/s per worker "
                        "(an order of magnitude)")
        text += [f"Warning: {w}" for w in self.warnings]
        if self.refusal:
            text.append(f"Refused: {self.refusal}")
        return text

    def as_dict(self):
        return {"trials": self.trials, "flops": self.flops, "memory_bytes": self.memory_bytes,
                "seconds": self.seconds, "workers": self.workers, "trial_bytes": self.trial_bytes}

    def enforce(self, stacklevel=3):
        """Raise :class:`SweepTooLargeError` for a refusal; warn (one line each) otherwise."""
        if self.refusal:
            raise SweepTooLargeError(self.refusal, self.as_dict())
        for text in self.warnings:
            warnings.warn(text, SweepWarning, stacklevel=stacklevel + 1)


def _smaller(sweep):
    """The advice of a refusal for memory: lower what sets a trial's size, as the sweep names
    it (``size_names``), or "smaller problems" when it names nothing."""
    names = sweep.size_names
    if not names:
        return "smaller problems"
    return "lower " + (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1])


def _estimate(sweep, workers, costs=None, *, time=True, other=True):
    """The work, memory and time of a sweep, and whether it fits.

    Refused: more than :data:`MAX_TRIALS` trials; an estimated memory above the machine's
    physical memory (the records, plus the heaviest trial per worker with ``memory_fn``); an
    estimated time above a year.  Warned: memory above half the physical memory; time above
    a day.  ``workers=None`` (a scheduler not yet reached) or no
    ``cost_fn`` gives no time estimate.  ``time`` / ``other`` select which checks are made.
    """
    n_cells, n_trials = len(sweep.cells), sweep.n_trials
    total = n_cells * n_trials
    name = f"sweep {sweep.name!r}"
    records_memory = float(total) * _BYTES_PER_TRIAL
    trial_memory = _cell_costs(sweep, "memory_fn")
    trial_bytes = None if trial_memory is None else max(trial_memory)
    local_trials = trial_bytes is not None and workers is not None  # not a remote cluster's
    memory = records_memory + (trial_bytes * workers if local_trials else 0.0)
    if costs is None:
        costs = _cell_costs(sweep)
    flops = None if costs is None else float(sum(costs)) * n_trials
    seconds = None
    rate = _flop_rate(sweep)
    if flops is not None and workers:
        seconds = flops / (rate * workers)
    notes, refusal = [], None
    if other:
        physical = _physical_memory()
        what = (f"its {total} trials' records" if not local_trials else
                f"its {total} trials' records and {workers} worker(s) running a trial of up "
                f"to {_size(trial_bytes)}")
        if total > MAX_TRIALS:
            refusal = (f"{name} has {n_cells} cells x {n_trials} trials = {total:.3g} trials, "
                       f"more than the engine's limit of {MAX_TRIALS:.0e} (every record is "
                       f"held in memory: about {_size(records_memory)}); use fewer trials or cells")
        elif physical and local_trials and trial_bytes > physical:
            refusal = (f"one trial of {name} needs about {_size(trial_bytes)} of memory, more than "
                       f"this machine's {_size(physical)}; "
                       + (_smaller(sweep) if sweep.size_names else "use smaller problems"))
        elif physical and memory > physical:
            refusal = (f"{name} needs about {_size(memory)} of memory for {what}, more than "
                       f"this machine's {_size(physical)}; use fewer trials, cells, workers or "
                       + (_smaller(sweep) if local_trials else "smaller problems"))
        elif physical and memory > _WARN_MEMORY_FRACTION * physical:
            notes.append(f"{name} needs about {_size(memory)} of memory for {what}, more than "
                         f"half of this machine's {_size(physical)}")
    if time and refusal is None and seconds is not None:
        if seconds > _MAX_SECONDS:
            refusal = (f"{name} would take about {_duration(seconds)} with {workers} worker(s) "
                       f"({flops:.3g} flops at an assumed {rate:.2g} flop/s per "
                       "worker); reduce the trials, the grid or the problem sizes")
        elif seconds > _WARN_SECONDS:
            notes.append(f"{name} may take about {_duration(seconds)} with {workers} worker(s) "
                         f"({flops:.3g} flops at an assumed {rate:.2g} flop/s per "
                         "worker); finished chunks are kept if it is interrupted")
    return _Estimate(trials=total, flops=flops, memory_bytes=memory, seconds=seconds,
                     workers=workers, warnings=tuple(notes), refusal=refusal,
                     trial_bytes=trial_bytes, rate=rate)


# --------------------------------------------------------------------------- in advance


def _dry_run_workers(jobs, warn=True):
    if jobs is None:
        return None
    jobs = check_int("jobs", jobs, low=1)
    return _cap_workers("workers", jobs) if warn else min(jobs, _available_cores())


def check_fits(sweep: Sweep, *, jobs: int | None = 1) -> list[str]:
    """Refuse a sweep that cannot fit; return the warnings about one that may not.

    The checks :func:`run_sweep` makes before writing anything (see its ``Raises``): more
    than :data:`MAX_TRIALS` trials or an estimated memory above the machine's is refused; an
    estimated time above a year (from ``cost_fn``, at an assumed speed per worker) is
    refused; memory above half the machine's or time above a day is a warning.

    Parameters
    ----------
    sweep : Sweep
    jobs : int or None, default=1
        Workers the run will have (capped at the machine's cores); ``None`` when unknown (a
        Dask scheduler), which skips the time estimate.

    Returns
    -------
    warnings : list of str
        One line each; empty when the sweep fits comfortably.

    Raises
    ------
    SweepTooLargeError
        With a one-line message giving the estimate.
    """
    if not isinstance(sweep, Sweep):
        raise TypeError(f"sweep must be a mixreg.montecarlo.Sweep, got {type(sweep).__name__}")
    estimate = _estimate(sweep, _dry_run_workers(jobs, warn=False))
    if estimate.refusal:
        raise SweepTooLargeError(estimate.refusal, estimate.as_dict())
    return list(estimate.warnings)


def dry_run(sweep: Sweep, *, jobs: int | None = 1) -> str:
    """Describe a sweep without running it: grid, tasks, and an estimate of work, memory, time.

    Parameters
    ----------
    sweep : Sweep
    jobs : int or None, default=1
        Number of workers assumed for the automatic chunk size, the work per worker and the
        time (capped at the machine's cores); ``None`` when unknown (a Dask scheduler).

    Returns
    -------
    text : str
        Human-readable description; mentions the number of tasks, the estimated memory and
        time, and a ``Warning:`` or ``Refused:`` line when :func:`check_fits` would warn or
        refuse.  The grid is described per parameter, without listing a large grid's cells.
    """
    if not isinstance(sweep, Sweep):
        raise TypeError(f"sweep must be a mixreg.montecarlo.Sweep, got {type(sweep).__name__}")
    workers = _dry_run_workers(jobs)
    n_cells, n_trials = len(sweep.cells), sweep.n_trials
    per_worker = workers or 1
    costs = _cell_costs(sweep)
    chunk_size = sweep.chunk_size or _auto_chunk_size(n_cells, n_trials, per_worker,
                                                      _heaviest_trial_seconds(sweep, costs))
    chunk_source = ("set by the sweep" if sweep.chunk_size
                    else f"automatic for {per_worker} worker(s)")
    tasks_per_cell = math.ceil(n_trials / chunk_size)
    lines = [
        f"Sweep {sweep.name!r} ({_function_name(sweep.trial_fn)}), root seed {sweep.root_seed}",
        f"Grid: {n_cells} cells x {n_trials} trials = {n_cells * n_trials} trials",
    ]
    for key in sweep.cells[0]:
        distinct: dict[Any, None] = {}
        for cell in sweep.cells:
            distinct.setdefault((type(cell[key]).__name__, repr(cell[key])), cell[key])
        values = list(distinct.values())
        shown = ", ".join(repr(v) for v in values[:12]) + (", ..." if len(values) > 12 else "")
        lines.append(f"  {key}: {len(values)} value(s): {shown}")
    lines.append(f"Chunks: {chunk_size} trials per task ({chunk_source}) -> "
                 f"{tasks_per_cell * n_cells} tasks")
    if costs is None:
        lines.append("Estimated work: unknown (the sweep has no cost_fn)")
    else:
        total = sum(costs) * n_trials
        heaviest = int(np.argmax(costs))
        split = ("" if workers is None else
                 f", {total / workers:.3g} per worker with {workers} worker(s)")
        lines.append(f"Estimated work: {total:.3g} flops in total{split}; heaviest cell "
                     f"{heaviest} {sweep.cells[heaviest]}: {costs[heaviest]:.3g} flops per trial")
    lines += _estimate(sweep, workers, costs).lines()
    if n_cells <= 50:
        lines.append("Cells:")
        for i, cell in enumerate(sweep.cells):
            cost = "" if costs is None else f"  ({costs[i] * n_trials:.3g} flops)"
            lines.append(f"  {i:5d}  {cell}{cost}")
    return "\n".join(lines)
