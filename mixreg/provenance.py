"""Provenance of a result: package versions, the project's git commit, the machine.

Every saved result should say what produced it.  The Monte Carlo engine writes
:func:`environment_record` into each results directory's manifest; experiment scripts can
store it next to figures.  Nothing here raises for a missing package, a missing ``git`` or a
tree that is not a checkout: such fields read ``"unknown"`` (or ``None`` for a package that
is not installed), because provenance must never be the reason a run fails.

Examples
--------
>>> from mixreg.provenance import environment_record
>>> rec = environment_record()
>>> sorted(rec)[:3]
['blas', 'cpu_count', 'git']
"""

from __future__ import annotations

import datetime
import importlib
import importlib.metadata
import os
import pathlib
import platform
import subprocess
import sys

__all__ = ["package_versions", "git_commit", "environment_record", "blas_kernels", "run_blas_kernels",
           "openblas_coretype", "cpu_flags", "OPENBLAS_KERNEL_FLAGS"]

#: OpenBLAS kernel sets (``OPENBLAS_CORETYPE`` names) and the CPU flag each needs: forced on a
#: CPU without it, a process would die of an illegal instruction.
OPENBLAS_KERNEL_FLAGS = {"Haswell": "avx2", "SkylakeX": "avx512f"}

# (distribution name, import name); the import name is the fallback when the distribution
# metadata is missing (e.g. a source checkout on sys.path that was never pip-installed).
_PACKAGES = (
    ("numpy", "numpy"),
    ("scipy", "scipy"),
    ("numba", "numba"),
    ("joblib", "joblib"),
    ("threadpoolctl", "threadpoolctl"),
    ("tqdm", "tqdm"),
    ("matplotlib", "matplotlib"),
    ("dask", "dask"),
    ("distributed", "distributed"),
    ("mixreg", "mixreg"),
)

_GIT_TIMEOUT = 10.0  # seconds; a hung network filesystem must not hang a sweep


def package_versions():
    """Return the versions of the packages a mixreg result depends on.

    Returns
    -------
    versions : dict of str to str or None
        ``{"python": "3.11.7", "numpy": "2.1.0", ...}``.  A package that is not installed
        maps to ``None``.  Optional packages (matplotlib, dask, distributed) are listed too.
    """
    versions = {"python": platform.python_version()}
    for dist, module in _PACKAGES:
        versions[dist] = _version_of(dist, module)
    return versions


def _version_of(dist, module):
    # A module already imported reports what actually runs; otherwise read the installed
    # metadata, which avoids importing heavy optional packages (distributed, matplotlib)
    # just to name their version.
    mod = sys.modules.get(module)
    if getattr(mod, "__version__", None) is not None:
        return str(mod.__version__)
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:  # a source tree on sys.path without distribution metadata
        mod = importlib.import_module(module)
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return None
    version = getattr(mod, "__version__", None)
    return None if version is None else str(version)


def git_commit(path=None, *, exclude=()):
    """Return the git commit of the checkout holding ``path`` and whether it is dirty.

    Parameters
    ----------
    path : str or path-like, optional
        A file or directory inside the checkout.  Defaults to the installed ``mixreg``
        package, which gives the project's commit for an editable install or a source tree,
        and ``"unknown"`` for a wheel installed into site-packages.
    exclude : sequence of path-like
        Paths whose changes do not make the checkout dirty: the results directory a run writes
        into (a committed one, such as ``figures/data/...``, is data, not code; its own
        manifest is rewritten before this check).  Paths outside the checkout are ignored.

    Returns
    -------
    info : dict
        ``{"commit": "<40 hex digits>" or "unknown", "dirty": bool or "unknown"}``.
        ``dirty`` is true when tracked files differ from the commit (untracked files, such
        as results, do not count).  When ``path`` defaults to the package, its
        ``__init__.py`` must be tracked by the repository found, so a package installed
        inside some unrelated repository (a virtualenv in a checkout) reads ``"unknown"``.
    """
    unknown = {"commit": "unknown", "dirty": "unknown"}
    tracked_file = None
    if path is None:
        import mixreg

        tracked_file = pathlib.Path(mixreg.__file__).resolve()
        path = tracked_file.parent
    path = pathlib.Path(path).resolve()
    cwd = path if path.is_dir() else path.parent
    if not cwd.is_dir():
        return unknown
    commit = _git(cwd, "rev-parse", "--verify", "HEAD")
    if commit is None:
        return unknown
    if tracked_file is not None and _git(cwd, "ls-files", "--error-unmatch", str(tracked_file)) is None:
        return unknown
    # --no-optional-locks: a read-only query must not rewrite the index of a checkout.
    status = _git(cwd, "--no-optional-locks", "status", "--porcelain", "--untracked-files=no",
                  *_excluding(cwd, exclude))
    return {"commit": commit, "dirty": "unknown" if status is None else bool(status)}


def _excluding(cwd, exclude):
    """Pathspec arguments: the whole checkout but the paths of ``exclude`` inside it."""
    if not exclude:
        return ()
    top = _git(cwd, "rev-parse", "--show-toplevel")
    if top is None:
        return ()
    top = pathlib.Path(top).resolve()
    specs = []
    for path in exclude:
        try:
            rel = pathlib.Path(path).resolve().relative_to(top)
        except ValueError:  # outside the checkout
            continue
        specs.append(f":(top,exclude,literal){rel.as_posix()}")  # literal: no glob in a directory name
    return ("--", ":(top)", *specs) if specs else ()


def _git(cwd, *args):
    """Output of ``git args`` run in ``cwd`` (stripped), or None on any failure."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip()


def environment_record(*, exclude=()):
    """Return everything needed to tell where and with what a result was computed.

    Parameters
    ----------
    exclude : sequence of path-like
        Passed to :func:`git_commit`: paths (a run's results directory) whose changes do not
        make the checkout dirty.

    Returns
    -------
    record : dict
        Keys ``time`` (UTC, ISO 8601), ``python`` (full version string),
        ``implementation``, ``platform``, ``machine``, ``cpu_count``, ``packages``
        (:func:`package_versions`), ``git`` (:func:`git_commit`) and ``blas`` (the BLAS /
        OpenMP libraries loaded in this process with their thread counts, from
        threadpoolctl).  JSON-serialisable.
    """
    return {
        "time": utc_now(),
        "python": sys.version,
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "packages": package_versions(),
        "git": git_commit(exclude=exclude),
        "blas": _thread_libraries(),
    }


def utc_now():
    """Current time in UTC as an ISO 8601 string with seconds precision."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def blas_kernels(blas=None):
    """The kernels of the BLAS libraries loaded, as a sorted tuple of names (``("SkylakeX",)``).

    OpenBLAS picks its kernels for the CPU when it loads, unless ``OPENBLAS_CORETYPE`` in the
    environment names them, and kernels for different CPUs sum in different orders: the same code
    and packages give other last bits under other kernels (on one AVX-512 CPU, the SkylakeX
    kernels it is detected as and the Haswell ones an environment forced differ in the 7th digit
    of a float32 distance, the 15th of a float64 one).  Results are bit-identical for one set of
    kernels; ``OPENBLAS_CORETYPE=<name>`` set before a process starts chooses them (on a CPU that
    has the instructions they use).

    Parameters
    ----------
    blas : list of dict, optional
        An ``environment_record()["blas"]`` entry, as a manifest keeps it; default: this process.

    Returns
    -------
    tuple of str
        Empty when unknown (threadpoolctl missing, or a library that does not say).
    """
    if blas is None:
        blas = _thread_libraries()
    if not isinstance(blas, list):
        return ()
    return tuple(sorted({lib["architecture"] for lib in blas
                         if isinstance(lib, dict) and lib.get("user_api") == "blas" and lib.get("architecture")}))


def run_blas_kernels(run):
    """:func:`blas_kernels` of a run as a results directory's manifest keeps it (an entry of its
    ``runs``, whose ``environment`` is an :func:`environment_record`); ``()`` when unrecorded."""
    blas = ((run or {}).get("environment") or {}).get("blas")
    return () if blas is None else blas_kernels(blas)  # None would mean this process's


def openblas_coretype(kernels):
    """The ``OPENBLAS_CORETYPE`` value that makes OpenBLAS run ``kernels`` (a :func:`blas_kernels`
    tuple): its one name, or ``None`` when it names none or several, which no one setting gives."""
    return kernels[0] if len(kernels) == 1 else None


def cpu_flags():
    """The CPU's feature flags (``/proc/cpuinfo``), as a set; empty where that cannot be read."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return next((set(line.split(":", 1)[1].split()) for line in text.splitlines() if line.startswith("flags")),
                set())


def _thread_libraries():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown"
    keep = ("user_api", "internal_api", "version", "num_threads", "threading_layer", "architecture")
    return [{k: info.get(k) for k in keep} for info in threadpool_info()]
