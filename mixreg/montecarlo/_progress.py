"""What a running sweep tells its user: a progress bar, a log line a minute, a compilation notice.

Where the run is shown (:func:`open_progress`, ``run_sweep(progress=...)``):

* in Jupyter with ``ipywidgets`` installed, a notebook progress widget (``tqdm.auto``);
* on a terminal (stderr is a TTY), a tqdm bar on stderr;
* anywhere else (a notebook without ``ipywidgets``, ``> log 2>&1``, a batch job), one plain line
  on stderr when the run starts, then one every :data:`LOG_INTERVAL` seconds while it runs, and
  one at the end::

      success_vs_R quick: 0/4,800 trials (0%), starting
      success_vs_R quick: 0/4,800 trials (0%), no results yet after 1 min
      success_vs_R quick: 1,200/4,800 trials (25%), 3.1 trials/s, ETA 19 min
      success_vs_R quick: 4,800/4,800 trials (100%), 3.0 trials/s, done in 27 min

  A timer writes the lines in between, so they come on time even while no chunk finishes (a
  chunk may hold minutes of work).

The display only counts finished chunks: it never touches seeds, tasks or their order, so the
records are the same with any display or none.

Before the workers start, :func:`cold_kernels_notice` says ``compiling kernels (first run only)
...`` on stderr when the Numba kernels the run reaches have no compilation in Numba's cache yet
(a first run, or the first after mixreg or Numba changed): each worker then compiles them,
20-60 s of apparent silence otherwise.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
import types
import warnings

__all__ = ["LOG_INTERVAL", "COLD_KERNELS_NOTICE", "open_progress", "cold_kernels_notice"]

#: Seconds between two progress lines when stderr is not a terminal (the first and last lines
#: are written whatever the interval).  Read when a run starts.
LOG_INTERVAL = 60.0

#: The line written on stderr when the run's Numba kernels are not in Numba's cache yet.
COLD_KERNELS_NOTICE = "compiling kernels (first run only) ..."

_NOTICE_SHOWN = {"done": False}  # once per process
logger = logging.getLogger("mixreg.montecarlo")


# --------------------------------------------------------------------------- choosing the display


def open_progress(total, initial, label, progress):
    """The display of a run of ``total`` trials of which ``initial`` are already done.

    Parameters
    ----------
    total, initial : int
    label : str
        The sweep's name (and preset), first on every line or bar.
    progress : bool or None
        ``None``: a notebook widget where ``tqdm.auto`` gives one, a bar on a terminal, else log
        lines (see the module docstring).  ``True``: a bar even where stderr is not a terminal
        (the widget in a notebook).  ``False``: nothing.

    Returns
    -------
    context manager
        With ``update(n_trials, cells_done, n_cells)``, called once per finished chunk.
    """
    if progress is False:
        return _Silent()
    widget = _notebook_tqdm()
    if widget is not None:
        return _Bar(widget(total=total, initial=initial, unit="trial", desc=label))
    if progress or _is_terminal(sys.stderr):
        return _Bar(_terminal_bar(total, initial, label))
    return _LogLines(total, initial, label)


def _is_terminal(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _notebook_tqdm():
    """``tqdm.auto``'s class when it is the notebook widget (Jupyter with ipywidgets), else None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "IProgress not found": without ipywidgets we write lines
        from tqdm.auto import tqdm
    return tqdm if any(cls.__module__ == "tqdm.notebook" for cls in tqdm.__mro__) else None


def _progress_columns(fp):
    """``(columns, rows)`` for tqdm: the terminal's, or 80 x 24 when it reports none (0)."""
    try:
        size = os.get_terminal_size(fp.fileno())
        columns, rows = size.columns, size.lines
    except (AttributeError, OSError, ValueError):
        columns, rows = 0, 0
    if columns <= 1:
        try:
            columns = int(os.environ.get("COLUMNS", ""))
        except ValueError:
            columns = 0
        columns = columns if columns > 1 else 80
    return columns - 1, max(rows - 1, 1) if rows > 1 else 23


def _terminal_bar(total, initial, label):
    from tqdm import tqdm

    ncols, nrows = _progress_columns(sys.stderr)
    bar = tqdm(total=total, initial=initial, unit="trial", desc=label, file=sys.stderr, ncols=ncols,
               nrows=nrows, mininterval=0.5)
    bar.dynamic_ncols = _progress_columns  # follows resizes; never 0 columns
    return bar


# --------------------------------------------------------------------------- the displays


class _Silent:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def update(self, n, cells_done, n_cells):
        pass


class _Bar(_Silent):
    """A tqdm bar (terminal or notebook widget) with the cells done as its postfix."""

    def __init__(self, bar):
        self.bar = bar

    def __exit__(self, *exc):
        self.bar.close()
        return False

    def update(self, n, cells_done, n_cells):
        self.bar.set_postfix_str(f"cells {cells_done}/{n_cells}", refresh=False)
        self.bar.update(n)


class _LogLines(_Silent):
    """One line on stderr at the start, one every ``interval`` s while the run lasts, one at the end.

    A daemon timer thread writes the lines in between, from the count :meth:`update` keeps, so
    they come on time however long a chunk takes.  The timer stops before the last line, or at
    an interruption (which writes no last line): under the lock, no timer line can follow.

    The rate is the trials computed by this run over its time so far (the trials loaded from an
    earlier run do not count), and the ETA the trials left at that rate.

    Parameters
    ----------
    total, initial : int
        Trials of the run, and of them the trials already done (loaded) when it starts.
    label : str
        First on every line.
    clock : callable, default=time.monotonic
        Seconds, for the rate and the durations written.
    interval : float, optional
        Seconds between two lines of the timer, :data:`LOG_INTERVAL` by default.
    """

    def __init__(self, total, initial, label, clock=time.monotonic, interval=None):
        self.total, self.initial, self.label, self.clock = total, initial, label, clock
        self.interval = LOG_INTERVAL if interval is None else interval
        self.done = initial  # written by the run's thread only, read by the timer
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._timer = threading.Thread(target=self._every_interval, name="mixreg progress lines", daemon=True)

    def __enter__(self):
        self.start = self.clock()
        self._write(f"{self._count(self.done)}, {'resuming' if self.initial else 'starting'}")
        self._timer.start()
        return self

    def update(self, n, cells_done, n_cells):
        self.done += n

    def _every_interval(self):
        while not self._stopped.wait(self.interval):
            self.tick()

    def tick(self):
        """Write the line of the run so far (the timer's line), unless the run has ended."""
        with self._lock:
            done = self.done
            if self._stopped.is_set() or done >= self.total:
                return  # the last line (if any) is the end's
            now = self.clock()
            if done == self.initial:
                new = "new " if self.initial else ""
                self._write(f"{self._count(done)}, no {new}results yet after {_duration_text(now - self.start)}")
            else:
                rate = self._rate(done, now)
                self._write(f"{self._count(done)}, {_rate_text(rate)}, "
                            f"ETA {_duration_text((self.total - done) / rate)}")

    def __exit__(self, exc_type, exc, tb):
        with self._lock:
            self._stopped.set()
        self._timer.join()  # at once: it waits on the event, or for the lock just released
        if exc_type is None and self.done > self.initial:
            now = self.clock()
            self._write(f"{self._count(self.done)}, {_rate_text(self._rate(self.done, now))}, "
                        f"done in {_duration_text(now - self.start)}")
        return False

    def _rate(self, done, now):
        """Trials per second of this run so far (> 0 once a chunk is done)."""
        return (done - self.initial) / max(now - self.start, 1e-6)

    def _count(self, done):
        return f"{done:,}/{self.total:,} trials ({100 * done // self.total}%)"

    def _write(self, text):
        print(f"{self.label}: {text}", file=sys.stderr, flush=True)


def _rate_text(per_second):
    """``3.1 trials/s``, ``12 trials/min`` or ``0.5 trials/h``: the first unit giving at least 1."""
    for value, unit in ((per_second, "s"), (per_second * 60, "min"), (per_second * 3600, "h")):
        if value >= 1 or unit == "h":
            shown = f"{value:,.0f}" if value >= 10 else f"{value:.1f}" if value >= 1 else f"{value:.2g}"
            return f"{shown} trials/{unit}"
    raise AssertionError("unreachable")


def _duration_text(seconds):
    """``< 1 s``, ``40 s``, ``19 min``, ``3 h 05 min`` or ``2 d 7 h``."""
    if not math.isfinite(seconds):
        return "unknown"
    if seconds < 1:
        return "< 1 s"
    seconds = round(seconds)
    if seconds < 90:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


# --------------------------------------------------------------------------- the compilation notice


def cold_kernels_notice(sweep, code):
    """Write :data:`COLD_KERNELS_NOTICE` on stderr (once per process) if the run's kernels are cold.

    Parameters
    ----------
    sweep : Sweep
    code : dict
        Its code fingerprint (:func:`~mixreg.montecarlo.code_fingerprint`): the modules the trial
        function and the algorithms take names from.

    Returns
    -------
    bool
        Whether the notice was written.
    """
    if _NOTICE_SHOWN["done"]:
        return False
    try:
        cold = cold_kernel_modules(code, declared=sweep.algorithms is not None)
    except Exception as exc:  # noqa: BLE001 - Numba's cache layout is private: if it changed, say nothing
        logger.debug("cannot tell whether the Numba cache is cold: %s: %s", type(exc).__name__, exc)
        return False
    if not cold:
        return False
    _NOTICE_SHOWN["done"] = True
    print(COLD_KERNELS_NOTICE, file=sys.stderr, flush=True)
    return True


def cold_kernel_modules(code, declared=True):
    """The modules of the run's Numba kernels that have no compilation in Numba's cache.

    The run reaches the modules its code fingerprint names (those of the trial function, and of
    the algorithms the sweep declares it runs if ``declared``: a sweep that declares none has
    every registered one in its fingerprint) and the modules of the same top-level packages these
    import from (a driver's kernel module, the metrics' helpers).  Of those, a
    module defining ``cache=True`` kernels (an ``inline="always"`` one aside: it is compiled into
    its callers) is cold when none of its kernels has a cached compilation for this source file,
    this Numba and this CPU: a first run, or the first after an upgrade or an edit of that module.
    A module of which some kernels are cached is taken as warm, so a run that needs a kernel no
    earlier run compiled may compile it without a notice.  Only index files are read: nothing is
    compiled.
    """
    if "numba" not in sys.modules:  # nothing imported Numba: no kernel anywhere
        return []
    from numba.core import config
    from numba.core.dispatcher import Dispatcher

    if config.DISABLE_JIT:
        return []
    named = set(code["trial_fn"]["modules"])
    for record in code.get("algorithms", {}).values() if declared else ():
        named.update(record["modules"])
    tops = {name.split(".")[0] for name in named}
    reached = set(named)
    for name in named:
        reached.update(_imported_modules(sys.modules.get(name), tops))
    magic = None
    cold = []
    for name in sorted(reached):
        module = sys.modules.get(name)
        kernels = [value for value in vars(module).values()
                   if isinstance(value, Dispatcher) and value.__module__ == name
                   and getattr(value, "_cache", None) is not None and hasattr(value._cache, "_cache_file")
                   and value.targetoptions.get("inline", "never") == "never"] if module else []
        if not kernels:
            continue
        if magic is None:
            from numba.core.registry import cpu_target

            magic = cpu_target.target_context.codegen().magic_tuple()
        if not any(key[1] == magic for kernel in kernels for key in kernel._cache._cache_file._load_index()):
            cold.append(name)
    return cold


def _imported_modules(module, tops):
    """The modules of ``tops`` that ``module`` imports, or imports names from."""
    found = set()
    for value in vars(module).values() if module is not None else ():
        name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if isinstance(name, str) and name.split(".")[0] in tops and name in sys.modules:
            found.add(name)
    return found
