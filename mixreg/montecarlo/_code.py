"""What code computes a sweep's records: the fingerprint compared on resume, and the registered
algorithms every worker process must hold.

The fingerprint (:func:`code_fingerprint`, the manifest's ``code``) is a digest of the source of

* the trial function's module;
* every module of ``mixreg`` or of the trial module's own top-level package that the trial
  module imports names from (its globals: the drivers, problems and helpers it calls);
* for each algorithm the sweep runs (:attr:`Sweep.algorithms`; by default every registered
  one), the module of its driver function (through ``functools.wraps`` wrappers) and the module
  that registered it.

A module's digest is the sha256 of its source's tokens without comments and blank lines, so an
edit of a comment keeps it and any other edit (code, a string, a docstring) changes it; the
digest does not depend on the Python version.  An edit elsewhere (a kernel the driver calls,
NumPy) is not in the fingerprint: the manifest's git commit and package versions change, which a
resumed run reports with a :class:`SweepWarning`.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import io
import os
import sys
import tokenize
import types

from mixreg.montecarlo._errors import AlgorithmUnavailableError

__all__ = ["module_digest", "code_fingerprint", "code_changes", "algorithm_payloads", "install_algorithms"]

_DIGESTS = {}  # (path, mtime_ns, size) -> digest
_SKIPPED_TOKENS = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING}


def _source_digest(source):
    tokens = []
    for tok in tokenize.tokenize(io.BytesIO(source).readline):
        if tok.type in _SKIPPED_TOKENS:
            continue
        # indentation counts as its structure (INDENT/DEDENT), not as its width
        text = "" if tok.type in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE) else tok.string
        tokens.append(f"{tok.type}:{text}")
    return hashlib.sha256("\n".join(tokens).encode("utf-8")).hexdigest()[:16]


def module_digest(name):
    """The digest of module ``name``'s source (16 hex digits), or ``None`` when it has no source
    file (a built-in module, an interactive session's ``__main__``).

    Comments and blank lines do not enter it (module docstring).  Computed once per file version.
    """
    module = sys.modules.get(name)
    if module is None:
        module = importlib.import_module(name)
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return None
    try:
        stat = os.stat(path)
        key = (path, stat.st_mtime_ns, stat.st_size)
        if key not in _DIGESTS:
            with open(path, "rb") as fh:
                _DIGESTS[key] = _source_digest(fh.read())
        return _DIGESTS[key]
    except (OSError, SyntaxError, tokenize.TokenError):
        return None


def _imported_modules(module, own):
    """Modules of mixreg and of package ``own`` that ``module``'s globals come from."""
    tops = {"mixreg"} | ({own} if own and own != "__main__" else set())
    found = set()
    for value in vars(module).values():
        if isinstance(value, types.ModuleType):
            name = value.__name__
        elif isinstance(value, (type, types.FunctionType)):
            name = getattr(value, "__module__", None)
        else:
            continue
        if name and name.split(".")[0] in tops and name != module.__name__:
            found.add(name)
    return sorted(found)


def _algorithm_modules(name):
    from mixreg.algorithms import get_algorithm, registered_by

    run = inspect.unwrap(get_algorithm(name).run)
    return sorted({registered_by(name), getattr(run, "__module__", None) or "?"})


def sweep_algorithms(sweep):
    """The names of the algorithms ``sweep`` runs: :attr:`Sweep.algorithms`, or every registered
    one when it is ``None``.  ``ValueError`` names an unknown one."""
    from mixreg.algorithms import ALGORITHMS, get_algorithm

    if sweep.algorithms is None:
        return sorted(ALGORITHMS)
    for name in sweep.algorithms:
        try:
            get_algorithm(name)
        except ValueError as exc:
            raise ValueError(f"algorithms: {exc}") from None
    return list(sweep.algorithms)


def code_fingerprint(sweep):
    """The manifest's ``code``: digests of the modules that compute ``sweep``'s records.

    Returns
    -------
    dict
        ``{"trial_fn": {"module", "sha256"}, "modules": {name: sha256}, "algorithms": {name:
        {module: sha256}}}`` (see the module docstring); ``None`` for a module without source.
    """
    fn = sweep.trial_fn
    module_name = getattr(fn, "__module__", None) or "__main__"
    module = sys.modules.get(module_name)
    own = module_name.split(".")[0]
    imported = _imported_modules(module, own) if module is not None else []
    return {
        "trial_fn": {"module": module_name, "sha256": module_digest(module_name) if module else None},
        "modules": {name: module_digest(name) for name in imported},
        "algorithms": {name: {m: module_digest(m) for m in _algorithm_modules(name)}
                       for name in sweep_algorithms(sweep)},
    }


def code_changes(old, new):
    """What differs between two fingerprints, one phrase per change (empty when the same)."""
    changes = []
    if (old.get("trial_fn") or {}).get("sha256") != new["trial_fn"]["sha256"]:
        changes.append(f"the trial function's module {new['trial_fn']['module']}")
    old_modules = old.get("modules") or {}
    for name in sorted(set(old_modules) | set(new["modules"])):
        if name not in new["modules"]:
            changes.append(f"module {name} (no longer imported)")
        elif name not in old_modules:
            changes.append(f"module {name} (newly imported)")
        elif old_modules[name] != new["modules"][name]:
            changes.append(f"module {name}")
    old_algorithms = old.get("algorithms") or {}
    for name in sorted(set(old_algorithms) | set(new["algorithms"])):
        if name not in new["algorithms"]:
            changes.append(f"algorithm {name!r} (no longer run)")
        elif name not in old_algorithms:
            changes.append(f"algorithm {name!r} (newly run)")
        elif old_algorithms[name] != new["algorithms"][name]:
            edited = [m for m in new["algorithms"][name] if old_algorithms[name].get(m) != new["algorithms"][name][m]]
            changes.append(f"algorithm {name!r} (module {', '.join(edited) or 'list'})")
    return changes


def algorithm_payloads(sweep):
    """What a worker needs to hold the user-registered algorithms ``sweep`` runs: a tuple of
    ``(name, registering module, pickled entry)``, the entries not built into mixreg.

    ``RuntimeError`` (one line) for an entry that cannot be pickled.
    """
    import cloudpickle

    from mixreg.algorithms import builtin_algorithms, get_algorithm, registered_by

    payloads = []
    for name in sweep_algorithms(sweep):
        if name in builtin_algorithms():
            continue
        try:
            blob = cloudpickle.dumps(get_algorithm(name))
        except Exception as exc:  # noqa: BLE001 - any pickling fault, said in one line
            raise RuntimeError(f"algorithm {name!r} cannot be sent to worker processes ({type(exc).__name__}: "
                               f"{exc}); register it at the top level of an importable module") from None
        payloads.append((name, registered_by(name), blob))
    return tuple(payloads)


def install_algorithms(payloads):
    """In a worker, before its trials: make every algorithm of ``payloads`` registered.

    An entry the worker holds already is left as it is.  Otherwise its registering module is
    imported (which registers it, as in the parent process); failing that, the pickled entry is
    registered.  :class:`AlgorithmUnavailableError` names an entry that neither gives.
    """
    import pickle

    from mixreg.algorithms import ALGORITHMS, register

    for name, module, blob in payloads:
        if name in ALGORITHMS:
            continue
        reasons = []
        if module != "__main__":
            try:
                importlib.import_module(module)
            except Exception as exc:  # noqa: BLE001 - said below, with the other way's reason
                reasons.append(f"import {module}: {type(exc).__name__}: {exc}")
            if name in ALGORITHMS:
                continue
        try:
            entry = pickle.loads(blob)
        except Exception as exc:  # noqa: BLE001
            reasons.append(f"unpickling the entry: {type(exc).__name__}: {exc}")
        else:
            if name not in ALGORITHMS:  # unpickling may have imported the module that registers it
                register(entry, module=module)
            continue
        raise AlgorithmUnavailableError(name, module, "; ".join(reasons))
