"""Storage of a results directory: atomic writes, chunk files, the manifest, the lock."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pathlib
import re
import warnings

from mixreg import provenance
from mixreg.montecarlo._cells import _canonical_cell, _json_default, _tuple_keys
from mixreg.montecarlo._code import code_changes
from mixreg.montecarlo._errors import (
    CodeChangedError,
    ConfigMismatchError,
    DirectoryBusyError,
    ResultsDirectoryError,
    SweepWarning,
)

FORMAT = "mixreg.montecarlo/1"
MANIFEST_NAME = "manifest.json"
TRIALS_CSV_NAME = "trials.csv"
SUMMARY_CSV_NAME = "summary.csv"
CHUNK_DIR_NAME = "chunks"
LOCK_NAME = ".lock"

_CHUNK_RE = re.compile(r"^cell(\d+)_t(\d+)-(\d+)\.json$")
_TMP_RE = re.compile(r"^\.cell\d+_t\d+-\d+\.json\.\d+\.tmp$")


# --------------------------------------------------------------------------- checksums

#: The key of ``manifest["checksums"]`` that holds the sha256 of the sweep's config section.
CONFIG_CHECKSUM = "sweep.config"


def file_checksum(path):
    """The sha256 (hex) of the bytes of ``path``: what the manifest records of each table it wrote."""
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def _json_checksum(obj):
    """The sha256 (hex) of ``obj``'s canonical JSON text (sorted keys, no spaces)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sweep_key_of(identity):
    """The sweep's key: the first 16 hex digits of its identity's sha256 (:attr:`Sweep.key`)."""
    return _json_checksum(identity)[:16]


def record_checksums(outdir, paths):
    """Record the sha256 of each file of ``paths`` (inside ``outdir``) in ``outdir``'s manifest,
    under ``manifest["checksums"][<file name>]``, so that a reader can tell a file edited after
    the run from the one it wrote.  Rewrites the manifest atomically."""
    path = outdir / MANIFEST_NAME
    manifest = json.loads(path.read_text(encoding="utf-8"))
    checksums = manifest.setdefault("checksums", {})
    for table in paths:
        checksums[pathlib.Path(table).name] = file_checksum(table)
    _write_manifest(outdir, manifest)


# --------------------------------------------------------------------------- chunk files


def _chunk_name(cell_index, start, stop):
    return f"cell{cell_index:05d}_t{start:06d}-{stop:06d}.json"


def _checksum(records, failures):
    text = json.dumps({"records": records, "failures": failures}, sort_keys=True,
                      separators=(",", ":"), allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write_atomic(path, text):
    """Write ``text`` to ``path`` so that readers see the old file, or all of the new one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _write_chunk(chunk_dir, sweep_key, cell_index, cell, start, stop, results, kernel_threads):
    records = [r for r, _ in results]
    failures = [f for _, f in results if f is not None]
    payload = {
        "format": FORMAT,
        "sweep_key": sweep_key,
        "cell_index": cell_index,
        "cell": cell,
        "trial_start": start,
        "trial_stop": stop,
        "n_records": len(records),
        "kernel_threads": kernel_threads,
        "written": provenance.utc_now(),
        "checksum": _checksum(records, failures),
        "records": records,
        "failures": failures,
    }
    _write_atomic(chunk_dir / _chunk_name(cell_index, start, stop), json.dumps(payload))


def _read_chunk(path, sweep_key, cells, n_trials):
    """Return ``(cell_index, records, failures, kernel_threads)`` or raise ValueError(reason).

    ``cells`` are the sweep's cells: the records' parameters and the failures' ``params``
    are set to the cell's own values, so tuple values, stored as JSON lists (or, in
    directories written before cells held tuples, as comma text), are tuples again.
    """
    match = _CHUNK_RE.match(path.name)
    cell_index, start, stop = (int(g) for g in match.groups())
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable ({type(exc).__name__}: {exc}); truncated or corrupted")
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError("not a chunk file of this format")
    if payload.get("sweep_key") != sweep_key:
        raise ValueError("written by a different sweep")
    if not (0 <= cell_index < len(cells)) or payload.get("cell_index") != cell_index:
        raise ValueError("cell index out of the grid or inconsistent with the file name")
    if _canonical_cell(payload.get("cell", {})) != _canonical_cell(cells[cell_index]):
        raise ValueError("cell parameters differ from the grid's")
    if (payload.get("trial_start"), payload.get("trial_stop")) != (start, stop) or not (
        0 <= start < stop <= n_trials
    ):
        raise ValueError("trial range out of bounds or inconsistent with the file name")
    records, failures = payload.get("records"), payload.get("failures")
    if not isinstance(records, list) or not isinstance(failures, list):
        raise ValueError("records or failures missing")
    if payload.get("n_records") != stop - start or len(records) != stop - start:
        raise ValueError(f"holds {len(records)} records, expected {stop - start}")
    if payload.get("checksum") != _checksum(records, failures):
        raise ValueError("checksum mismatch; corrupted")
    if [r.get("trial") for r in records] != list(range(start, stop)):
        raise ValueError("trial indices do not match the file's range")
    cell = cells[cell_index]
    for record in records:
        record.update(cell)
    for failure in failures:
        failure["params"] = dict(cell)
    return cell_index, records, failures, payload.get("kernel_threads")


def _load_chunks(chunk_dir, sweep):
    """Load every valid chunk file; warn about and delete the invalid ones."""
    done, failures, thread_settings, n_files = {}, {}, set(), 0
    if not chunk_dir.is_dir():
        return done, failures, thread_settings, n_files
    for path in sorted(chunk_dir.iterdir()):
        if _TMP_RE.match(path.name):  # left by a run killed mid-write
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        if not _CHUNK_RE.match(path.name):
            continue
        try:
            cell_index, records, chunk_failures, threads = _read_chunk(
                path, sweep.key, sweep.cells, sweep.n_trials)
        except ValueError as exc:
            warnings.warn(f"chunk file '{path}' is {exc}; its trials will be recomputed",
                          SweepWarning, stacklevel=3)
            with contextlib.suppress(OSError):
                path.unlink()
            continue
        n_files += 1
        thread_settings.add(threads)
        merge_chunk(done, failures, cell_index, records, chunk_failures)
    return done, failures, thread_settings, n_files


def merge_chunk(done, failures, cell_index, records, chunk_failures):
    """Add one chunk's records and failures to ``done`` and ``failures`` (keyed by (cell, trial)).

    Chunks may overlap when the chunk size changed between runs: the first record of a trial is
    kept.
    """
    failure_of = {f.get("trial"): f for f in chunk_failures}
    for record in records:
        key = (cell_index, record["trial"])
        if key in done:
            continue
        done[key] = record
        if record["trial"] in failure_of:
            failures[key] = failure_of[record["trial"]]


# --------------------------------------------------------------------------- directory


def _resolve_outdir(outdir, new_dir) -> pathlib.Path:
    if not isinstance(outdir, (str, os.PathLike)):
        raise TypeError(f"outdir must be a path (a str or os.PathLike), got {type(outdir).__name__}")
    outdir = pathlib.Path(os.path.expanduser(os.fspath(outdir)))
    if not new_dir or not outdir.exists() or (outdir.is_dir() and not any(outdir.iterdir())):
        return outdir
    k = 2
    while True:
        candidate = outdir.with_name(f"{outdir.name}-{k}")
        if not candidate.exists():
            return candidate
        k += 1


def _make_outdir(outdir):
    """Create ``outdir`` (and its parents); a clear error when it cannot be."""
    if outdir.exists() and not outdir.is_dir():
        raise ValueError(f"outdir '{outdir}' exists and is not a directory")
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsDirectoryError(
            exc.errno, f"cannot create the results directory '{outdir}': "
                       f"{exc.strerror or exc}") from exc


def _same_file(fd, path):
    try:
        st, here = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino)


def _lock_holder(fd):
    """The process id written in a lock file, or None."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        return int(text) if text.isdigit() else None
    except (OSError, ValueError):
        return None


def _alive(pid):
    if pid is None or pid == os.getpid():
        return pid is not None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but another user's
        return True
    return True


def _try_flock(fd):
    """True if this process now holds an exclusive flock on ``fd``, False if another does,
    None where the platform or filesystem has no flock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # filesystem without locks
        return None
    return True


def _acquire_lock(outdir):
    """Create or take over ``outdir/.lock``; return its open descriptor, now owned.

    The file is created with ``O_CREAT | O_EXCL``.  When it exists, it was left by a run
    that died (SIGKILL, power loss) or belongs to a live run: a live run holds an flock on
    it, a dead one does not, so the file is taken over only if its flock can be taken and it
    is still the file at that path (not removed and re-created by its owner meanwhile).
    Where flock is missing, the process id written in the file decides.
    """
    path = outdir / LOCK_NAME
    for _ in range(1000):
        created = True
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            created = False
            try:
                fd = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                continue  # its owner removed it just now: try to create it again
            except OSError as exc:
                raise ResultsDirectoryError(
                    exc.errno, f"cannot write into the results directory '{outdir}': "
                               f"{exc.strerror or exc}") from exc
        except OSError as exc:
            raise ResultsDirectoryError(
                exc.errno, f"cannot write into the results directory '{outdir}': "
                           f"{exc.strerror or exc}") from exc
        try:
            locked = _try_flock(fd)
            if locked is False:
                raise DirectoryBusyError(outdir, _lock_holder(fd))
            if not _same_file(fd, path):
                os.close(fd)  # removed or replaced since we opened it: start again
                continue
            if locked is None and not created and _alive(_lock_holder(fd)):
                raise DirectoryBusyError(outdir, _lock_holder(fd))
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            return fd
        except BaseException:
            os.close(fd)
            raise
    raise DirectoryBusyError(outdir)  # pragma: no cover - a thousand lost races


@contextlib.contextmanager
def _directory_lock(outdir):
    """Own ``outdir/.lock`` while the block runs (see :func:`_acquire_lock`).

    Only the owner removes the file, while it still holds the flock, so a process that
    lost the race (and was refused) never removes the winner's lock.  The OS releases the
    flock of a killed owner; the next run takes the file over.
    """
    fd = _acquire_lock(outdir)
    try:
        yield
    finally:
        try:
            if _same_file(fd, outdir / LOCK_NAME):
                with contextlib.suppress(OSError):
                    (outdir / LOCK_NAME).unlink()
        finally:
            os.close(fd)


def _remove_own_files(outdir):
    for name in (MANIFEST_NAME, TRIALS_CSV_NAME, SUMMARY_CSV_NAME):
        with contextlib.suppress(FileNotFoundError):
            (outdir / name).unlink()
    chunk_dir = outdir / CHUNK_DIR_NAME
    if chunk_dir.is_dir():
        for path in chunk_dir.iterdir():
            if _CHUNK_RE.match(path.name) or _TMP_RE.match(path.name):
                path.unlink()


def _diff_keys(old, new, prefix=""):
    if isinstance(old, dict) and isinstance(new, dict):
        keys = []
        for key in list(old) + [k for k in new if k not in old]:
            path = f"{prefix}{key}"
            if key not in old or key not in new:
                keys.append(path)
            else:
                keys.extend(_diff_keys(old[key], new[key], path + "."))
        return keys
    same = json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True)
    return [] if same else [prefix.rstrip(".") or "(root)"]


def _prepare_directory(outdir, sweep, overwrite, code):
    """Check or reset ``outdir``; return the previous manifest (None when starting fresh).

    ``code`` is the sweep's code fingerprint now (:func:`code_fingerprint`); a previous manifest
    that records another one raises :class:`CodeChangedError` (one without one, written before
    fingerprints, warns)."""
    manifest_path = outdir / MANIFEST_NAME
    entries = [p for p in outdir.iterdir() if p.name != LOCK_NAME]
    if overwrite:
        _remove_own_files(outdir)
        return None
    if not manifest_path.exists():
        if entries:
            raise ValueError(
                f"results directory '{outdir}' is not empty and holds no {MANIFEST_NAME}, so "
                "it is not a mixreg sweep directory; choose another directory, or pass "
                "overwrite=True (--overwrite) to write the sweep into it anyway"
            )
        return None
    try:
        previous = json.loads(manifest_path.read_text(encoding="utf-8"))
        old_identity = previous["sweep"]
    except (OSError, ValueError, KeyError, TypeError):
        raise ConfigMismatchError(outdir, [f"{MANIFEST_NAME} (unreadable)"]) from None
    keys = _diff_keys(old_identity, sweep.identity)
    if previous.get("format") != FORMAT:
        keys.insert(0, "format")
    new_predictions = {p["name"]: p["sha256"] for p in sweep.registered_predictions()}
    if "predictions" in previous or not new_predictions:
        old_predictions = {p.get("name"): p.get("sha256") for p in previous.get("predictions") or []}
        keys += [f"predictions.{name}" for name in sorted(set(old_predictions) | set(new_predictions), key=str)
                 if old_predictions.get(name) != new_predictions.get(name)]
    else:  # written by an earlier version, which registered none: said, and registered from this run on
        warnings.warn(f"results directory '{outdir}' registers no predictions (written by an earlier version of "
                      f"mixreg): {', '.join(sorted(new_predictions))} are registered now, after its first trials",
                      SweepWarning, stacklevel=5)
    if keys:
        raise ConfigMismatchError(outdir, keys)
    if previous.get("code") is None:
        warnings.warn(f"results directory '{outdir}' records no code fingerprint (written by an earlier "
                      "version of mixreg): whether its records come from today's code cannot be checked",
                      SweepWarning, stacklevel=5)
    else:
        changes = code_changes(previous["code"], code)
        if changes:
            raise CodeChangedError(outdir, changes)
    return previous


# --------------------------------------------------------------------------- manifest


def _new_manifest(sweep, previous, run_info, code):
    """The manifest of a run.

    ``sweep.cells`` hold tuple values as their comma text (see :attr:`Sweep.identity`);
    ``tuple_keys`` lists the cell keys whose values are tuples, so that a reader can restore
    them.  Manifests written before cells held tuples have no ``tuple_keys`` (none are).
    """
    runs = list(previous.get("runs", [])) if previous else []
    runs.append(run_info)
    # the sha256 of every table written into the directory is added as it is written; a resumed
    # run rewrites them all, so none of the previous run's is kept
    checksums = {CONFIG_CHECKSUM: _json_checksum(sweep.identity["config"])}
    environment = run_info["environment"]
    if previous and previous.get("predictions"):  # registered by the run that first wrote the directory
        predictions = previous["predictions"]
    else:
        registered = {"commit": (environment.get("git") or {}).get("commit"), "time": run_info["started"],
                      "trials_before": run_info.get("trials_loaded", 0)}  # 0: before the data
        predictions = [{**p, "registered": registered} for p in sweep.registered_predictions()]
    return {
        "format": FORMAT,
        "sweep": sweep.identity,
        "sweep_key": sweep.key,
        "tuple_keys": _tuple_keys(sweep.cells),
        "status": "running",
        "started": previous.get("started", run_info["started"]) if previous else run_info["started"],
        "finished": None,
        "backend": run_info["backend"],
        "jobs": run_info["jobs"],
        "packages": environment["packages"],
        "git": environment["git"],
        "n_cells": len(sweep.cells),
        "n_trials_per_cell": sweep.n_trials,
        "runs": runs,
        "n_failures": None,
        "failures": [],
        "checksums": checksums,
        "code": code,
        "predictions": predictions,
    }


def _write_manifest(outdir, manifest):
    text = json.dumps(manifest, indent=2, default=_json_default)
    _write_atomic(outdir / MANIFEST_NAME, text + "\n")


def _warn_version_change(previous, environment):
    """Warn when a resumed run's code, packages or BLAS kernels differ from the previous run's."""
    old = previous.get("packages") or {}
    new = environment["packages"]
    changes = [f"{k} {old[k]} -> {new[k]}" for k in new if k in old and old[k] != new[k]]
    old_git, new_git = previous.get("git") or {}, environment["git"]
    if old_git.get("commit") != new_git["commit"] and "unknown" not in (
            old_git.get("commit", "unknown"), new_git["commit"]):
        changes.append(f"git commit {old_git['commit'][:12]} -> {new_git['commit'][:12]}")
    old_kernels = provenance.run_blas_kernels((previous.get("runs") or [None])[-1])
    new_kernels = provenance.blas_kernels(environment["blas"])
    if old_kernels and new_kernels and old_kernels != new_kernels:  # same code, other last bits
        coretype = provenance.openblas_coretype(old_kernels)
        keep = f" (set OPENBLAS_CORETYPE={coretype} to keep them)" if coretype else ""
        changes.append(f"BLAS kernels {'+'.join(old_kernels)} -> {'+'.join(new_kernels)}{keep}")
    if changes:
        warnings.warn(f"resuming with different code, package versions or BLAS kernels ({', '.join(changes)});"
                      " new trials may differ from the earlier ones", SweepWarning, stacklevel=4)
