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
>>> sorted(rec)[:4]
['blas', 'cpu_count', 'cpu_model', 'git']
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["package_versions", "git_commit", "environment_record", "blas_kernels", "run_blas_kernels",
           "openblas_coretype", "cpu_flags", "cpu_model", "numba_target", "numpy_simd", "signature",
           "signature_differences", "OPENBLAS_KERNEL_FLAGS", "NumericsChange", "NUMERIC_CHANGES", "NUMERICS",
           "run_numerics", "numerics_changes_since", "explaining_changes"]

#: OpenBLAS kernel sets (``OPENBLAS_CORETYPE`` names) and the CPU flag each needs: forced on a
#: CPU without it, a process would die of an illegal instruction.
OPENBLAS_KERNEL_FLAGS = {"Haswell": "avx2", "SkylakeX": "avx512f"}


@dataclass(frozen=True)
class NumericsChange:
    """A deliberate change of the last bits a computation gives (a faster product or solve that
    rounds otherwise), registered so that results computed before it stay checkable.

    Attributes
    ----------
    version : int
        The numerics version the change starts; a result records the version it was computed
        at (:func:`environment_record`'s ``numerics``; a record without it is version 0).
    algorithms : tuple of str
        The registered drivers (:data:`mixreg.algorithms.ALGORITHMS` names) whose results it
        changes.
    fields : tuple of str
        The prefixes of the record fields it changes in the built-in studies (``"fesem_"``: the
        comparison study's FeSEM fields, ``fesem_paper_...`` included).
    summary : str
        What changed and where.
    reason : str
        Why, with the measurement.
    """

    version: int
    algorithms: tuple[str, ...]
    fields: tuple[str, ...]
    summary: str
    reason: str


#: The registered numerics changes, oldest first.  A result computed before a change replays at
#: rounding, not bit for bit, in the fields the change names: the replay check accepts that
#: there only, with every discrete field (labels, flags, counts, rounds, the steps tuning chose)
#: identical, and reports the level (:func:`explaining_changes`,
#: ``paper_checks/test_committed_runs_replay.py``).  Pinned test records that move are re-pinned
#: with the change (``tests/test_pinned_records.py``).
NUMERIC_CHANGES: tuple[NumericsChange, ...] = (
    NumericsChange(
        version=1,
        algorithms=("oneshot", "kfed", "fesem"),
        fields=("oneshot_", "kfed_", "fesem_", "local_only_", "ls_"),
        summary="the minimum-norm local least squares (mixreg.local_solvers.local_least_squares, "
                "method='min_norm') of a client certified well conditioned solve its n_i x n_i Gram "
                "system instead of taking the SVD pseudo-inverse (rank-deficient, ill-conditioned "
                "and tall clients keep the SVD); registered after the fact (the version that made it "
                "noted two cells of the comparison run in its changelog, nothing else): the "
                "comparison and Phase 1 paper runs, computed before it, replay at rounding in "
                "these fields",
        reason="k-FED's set-up least squares about 10x faster (docs/benchmark.md); the largest "
               "relative difference in the committed runs' replayed fields 2.6e-14"),
    NumericsChange(
        version=2,
        algorithms=("ifca_model", "fesem", "ifca_points"),
        fields=("ifca_model_", "fesem_", "ifca_points_"),
        summary="the local steps' per-client predictions theta_i X_i^T are computed from a "
                "client-major transposed copy of the data (mixreg.kernels.client_transposed): a "
                "plain product instead of one with a transposed operand, which OpenBLAS computes "
                "with another kernel (FeSEM, IFCA's option II without resampling, point-level "
                "IFCA with s > 1 local steps); and IFCA's option II takes its first local step's "
                "predictions from the round's predictions of every model "
                "(mixreg.kernels.gather_predictions) instead of computing them again",
        reason="whole runs at (m, n, d, k) = (100, 50, 200, 2), B = 30, one thread, against the "
               "version before (with this version's faster divergence checks): ifca_model 1.23x, "
               "fesem 1.15x, ifca_points (3 local steps) 1.05x faster in float64, 1.38x, 1.27x "
               "and 1.10x in float32 (docs/benchmark.md)"),
    NumericsChange(
        version=3,
        algorithms=("fedavg", "fedprox", "two_phase"),
        fields=("fedavg_", "fedprox_", "global_fedavg_", "reuse_", "split_"),
        summary="FedX's Phase 2 update sum_{i: z_i = l} w_i K_i (y_i - X_i theta_l) is computed per "
                "client, each client's residuals of its decoded model times its stacked operator, "
                "added up per model in client order (mixreg.kernels.cluster_gradients with the "
                "operators in the place of the data), instead of one product of the (B k, N) "
                "residuals, zero outside each client's decoded model, with all the operators "
                "(k times the flops); the decoder alone is mixreg.kernels.decode_clients",
        reason="a round at (m, n, d, k) = (100, 50, 200, 2), B = 30, one thread, against the "
               "version before, six alternations: fedavg 1.13x, fedprox 1.22x, two_phase 1.18x "
               "faster in float64, 1.08x, 1.15x and 1.08x in float32 (docs/benchmark.md); the same "
               "assignments, the parameters within 2e-16 (float64) and 7e-8 (float32) relative; "
               "the two-phase study's Phase 2 runs (fedavg_, fedprox_, and its reuse_ and split_ "
               "ablations) and the comparison study's global FedAvg (global_fedavg_) move"),
    NumericsChange(
        version=4,
        algorithms=("ifca_model",),
        fields=("ifca_model_",),
        summary="IFCA's option II without resampling unrolls its tau > 1 local steps through the "
                "clients' Gram matrices (mixreg.kernels.LocalStepGrams: the first step's residuals, "
                "tau - 1 products with X_i X_i^T, or X_i^T X_i when n_i > d, and one gradient, "
                "then one step) instead of a prediction and a gradient per step; one local step "
                "is unchanged, bit for bit",
        reason="a round at (m, n, d, k) = (100, 50, 200, 2), B = 30, tau = 2, one thread, against "
               "the version before (medians of three alternations): 1.47x faster in float64, "
               "1.37x in float32, 1.62x at (100, 100, 1000, 2) in float32, 2.49x with tau = 5 "
               "(docs/benchmark.md); the same assignments and divergence flags, the parameters "
               "within 2.2e-15 (float64) and 2.8e-7 (float32) relative after 30 rounds"),
)

#: The numerics version of this code: the last registered change's.
NUMERICS: int = NUMERIC_CHANGES[-1].version


def run_numerics(environment: Mapping[str, Any]) -> int:
    """The numerics version a run was computed at: its environment record's ``numerics``, 0 for
    a record made before the field existed."""
    return int(environment.get("numerics", 0))


def numerics_changes_since(version: int) -> tuple[NumericsChange, ...]:
    """The registered changes after numerics ``version`` (those a result of that version predates).

    Examples
    --------
    >>> [change.version for change in numerics_changes_since(0)][:1]
    [1]
    >>> numerics_changes_since(NUMERICS)
    ()
    """
    return tuple(change for change in NUMERIC_CHANGES if change.version > version)


def explaining_changes(fields: Iterable[str], environments: Iterable[Mapping[str, Any]]) -> tuple[NumericsChange, ...]:
    """The registered numerics changes that account for a replay's differing ``fields``.

    Parameters
    ----------
    fields : iterable of str
        The record fields whose replayed values differ from the stored ones.
    environments : iterable of dict
        The environment records of the runs that made the stored values (a manifest's
        ``runs[i]["environment"]``).

    Returns
    -------
    tuple of NumericsChange
        The changes made after the newest of those runs (:func:`numerics_changes_since`) if
        every field is one they name (its name begins with one of their ``fields``); empty if a
        field is left over, or if there are no fields or no such changes.  A field
        accounted for still has to differ at rounding only: that is the caller's check.

    Examples
    --------
    >>> [c.version for c in explaining_changes(["fesem_err_mean"], [{}])]  # a run before the field
    [1, 2, 3, 4]
    >>> explaining_changes(["fesem_err_mean", "ifca_err_mean"], [{}])  # IFCA's option I is not concerned
    ()
    >>> explaining_changes(["fesem_err_mean"], [{"numerics": NUMERICS}])
    ()
    """
    fields = list(fields)
    since = numerics_changes_since(max((run_numerics(env) for env in environments), default=0))
    prefixes = tuple(prefix for change in since for prefix in change.fields)
    return since if fields and prefixes and all(field.startswith(prefixes) for field in fields) else ()


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


def package_versions() -> dict[str, str | None]:
    """Return the versions of the packages a mixreg result depends on.

    Returns
    -------
    versions : dict of str to str or None
        ``{"python": "3.11.7", "numpy": "2.1.0", ...}``.  A package that is not installed
        maps to ``None``.  Optional packages (matplotlib, dask, distributed) are listed too.
    """
    versions: dict[str, str | None] = {"python": platform.python_version()}
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


def git_commit(path: str | os.PathLike[str] | None = None, *,
               exclude: Sequence[str | os.PathLike[str]] = ()) -> dict[str, Any]:
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


def environment_record(*, exclude: Sequence[str | os.PathLike[str]] = ()) -> dict[str, Any]:
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
        ``implementation``, ``platform``, ``machine``, ``cpu_count``, ``cpu_model``
        (:func:`cpu_model`), ``numba_target`` (:func:`numba_target`), ``numpy_simd``
        (:func:`numpy_simd`), ``numerics`` (:data:`NUMERICS`), ``packages``
        (:func:`package_versions`), ``git``
        (:func:`git_commit`) and ``blas`` (the BLAS / OpenMP libraries loaded in this process
        with their kernels and thread counts, from threadpoolctl).  JSON-serialisable.
        :func:`signature` reads from it what fixes a result's last bits.
    """
    return {
        "time": utc_now(),
        "python": sys.version,
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "numba_target": numba_target(),
        "numpy_simd": numpy_simd(),
        "numerics": NUMERICS,
        "packages": package_versions(),
        "git": git_commit(exclude=exclude),
        "blas": _thread_libraries(),
    }


def utc_now() -> str:
    """Current time in UTC as an ISO 8601 string with seconds precision."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def blas_kernels(blas: list[dict[str, Any]] | None = None) -> tuple[str, ...]:
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


def run_blas_kernels(run: Mapping[str, Any]) -> tuple[str, ...]:
    """:func:`blas_kernels` of a run as a results directory's manifest keeps it (an entry of its
    ``runs``, whose ``environment`` is an :func:`environment_record`); ``()`` when unrecorded."""
    blas = ((run or {}).get("environment") or {}).get("blas")
    return () if blas is None else blas_kernels(blas)  # None would mean this process's


def openblas_coretype(kernels: Sequence[str]) -> str | None:
    """The ``OPENBLAS_CORETYPE`` value that makes OpenBLAS run ``kernels`` (a :func:`blas_kernels`
    tuple): its one name, or ``None`` when it names none or several, which no one setting gives."""
    return kernels[0] if len(kernels) == 1 else None


def cpu_flags() -> set[str]:
    """The CPU's feature flags (``/proc/cpuinfo``), as a set; empty where that cannot be read."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return next((set(line.split(":", 1)[1].split()) for line in text.splitlines() if line.startswith("flags")),
                set())


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), or :func:`platform.processor`, or ``"unknown"``."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")),
                "")
    return name or platform.processor() or "unknown"


def numba_target() -> str:
    """The CPU Numba compiles its kernels for: ``NUMBA_CPU_NAME`` if set, else the host's.

    Recorded for provenance only: mixreg's kernels give the same bits for every target (their
    sums have a written order and their multiply-adds are exact FMAs, see
    ``mixreg._fixed_order``), so the target is not part of :func:`signature`.
    """
    try:
        from numba.core import config
        import llvmlite.binding as llvm

        return config.CPU_NAME or llvm.get_host_cpu_name()  # type: ignore[attr-defined]  # set at run time
    except Exception:  # noqa: BLE001 - provenance never fails a run
        return "unknown"


#: numpy's dispatch targets (x86-64 microarchitecture levels) that change the last bits of its
#: float64 ``exp``, ``log``, ``power``, ``expm1``, ``log1p``, ``arctan`` and ``cbrt``: numpy 2 has
#: AVX-512 versions of them (``X86_V4``) that round differently from the ones below it.
#: Measured on numpy 2.4 by disabling targets one at a time (``NPY_DISABLE_CPU_FEATURES``):
#: ``AVX512_ICL`` and ``AVX512_SPR`` above ``X86_V4`` change none of these, nor do sums, dot
#: products or norms at any level.
_NUMPY_LEVELS = ("X86_V4", "X86_V3", "X86_V2")


def numpy_simd() -> str:
    """The highest x86-64 level numpy's float64 math runs at here: ``"X86_V4"`` (AVX-512),
    ``"X86_V3"`` (AVX2 + FMA), ``"X86_V2"``; on another architecture the highest numpy dispatch
    target this CPU enables, or ``"baseline"``; ``"unknown"`` when numpy does not say.

    Part of :func:`signature`: numpy's transcendental functions (a Zipf law's ``log`` and
    ``exp``, say) give other last bits on a CPU without AVX-512, whatever the BLAS kernels.
    ``NPY_DISABLE_CPU_FEATURES`` set before numpy loads lowers it (``"X86_V4"`` there gives the
    results of an AVX2 machine on an AVX-512 one).
    """
    try:
        from numpy._core import _multiarray_umath as umath  # type: ignore[attr-defined]  # private, untyped
    except ImportError:  # numpy < 2
        try:
            from numpy.core import _multiarray_umath as umath
        except ImportError:
            return "unknown"
    features = getattr(umath, "__cpu_features__", None)
    if not isinstance(features, dict):
        return "unknown"
    if platform.machine().lower() in ("x86_64", "amd64"):
        return next((level for level in _NUMPY_LEVELS if features.get(level)), "baseline")
    enabled = [target for target in getattr(umath, "__cpu_dispatch__", ()) if features.get(target)]
    return enabled[-1] if enabled else "baseline"


def signature(environment: Mapping[str, Any] | None = None) -> dict[str, str]:
    """What fixes the last bits of a result beside the code, the seeds and the packages.

    Parameters
    ----------
    environment : dict, optional
        An :func:`environment_record` as a manifest keeps it; default: this process.

    Returns
    -------
    dict
        ``{"blas_kernels": "SkylakeX", "numpy_simd": "X86_V4"}``; a field a record does not
        hold (an older manifest) reads ``"not recorded"``.  For one signature, one set of
        package versions and one commit, a trial's record is the same bit for bit whatever the
        CPU model, the Numba target, the backend and the number of workers (with one kernel
        thread per worker, the engine's default).
    """
    if environment is None:
        kernels, simd = blas_kernels(), numpy_simd()
    else:
        blas = environment.get("blas")
        kernels = "not recorded" if blas is None else blas_kernels(blas)
        simd = environment.get("numpy_simd", "not recorded")
    if isinstance(kernels, tuple):
        kernels = "+".join(kernels) or "unknown"
    return {"blas_kernels": kernels, "numpy_simd": simd}


def signature_differences(environment: Mapping[str, Any],
                          here: Mapping[str, Any] | None = None) -> dict[str, tuple[Any, Any]]:
    """The fields of provenance that differ between a run's environment and this process.

    Parameters
    ----------
    environment : dict
        The run's :func:`environment_record` (a manifest's ``runs[i]["environment"]``).
    here : dict, optional
        Another environment record; default: this process's.

    Returns
    -------
    dict of str to tuple
        ``{field: (run's value, this value)}`` for each of the :func:`signature` fields, the
        package versions, ``cpu_model``, ``numba_target`` and ``numerics`` (:func:`run_numerics`)
        that differ; a field the run did not
        record is listed only for the signature (as ``"not recorded"``).
    """
    here = environment_record() if here is None else here
    here_signature = signature(here)
    out: dict[str, tuple[Any, Any]] = {key: (value, here_signature[key]) for key, value in signature(environment).items()
           if value != here_signature[key]}
    for key in ("cpu_model", "numba_target"):
        if key in environment and environment[key] != here.get(key):
            out[key] = (environment[key], here.get(key))
    if run_numerics(environment) != run_numerics(here):
        out["numerics"] = (run_numerics(environment), run_numerics(here))
    theirs, ours = environment.get("packages") or {}, here.get("packages") or {}
    for name in sorted(set(theirs) & set(ours)):
        if theirs[name] != ours[name]:
            out[f"packages.{name}"] = (theirs[name], ours[name])
    return out


def _thread_libraries():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown"
    keep = ("user_api", "internal_api", "version", "num_threads", "threading_layer", "architecture")
    return [{k: info.get(k) for k in keep} for info in threadpool_info()]
