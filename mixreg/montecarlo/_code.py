"""What code computes a sweep's records: the fingerprint compared on resume, and the registered
algorithms every worker process must hold.

The fingerprint (:func:`code_fingerprint`, the manifest's ``code``) has, for the trial function
and for each algorithm the sweep runs (:attr:`Sweep.algorithms`; by default every registered
one: its ``run`` and the functions it wraps, its options),

* the digest of its own code: its source, the source of every function and class of its own
  module it reaches by name (transitively), and the plain values it reads (module constants,
  closure cells, a schedule's parameters);
* the whole-module digest of every module of ``mixreg`` (or of its own top-level package) it
  takes anything else from (a driver, a kernel module, a problem class).

Sources enter without comments and layout (tokens), so a comment edit keeps the fingerprint, an
edit of the figure code of a one-file study keeps it (the trial does not reach that code), and
any other edit the trial or an algorithm reaches changes it; it does not depend on the Python
version.  What is beyond one module away (a kernel that a driver's module calls through another
module, NumPy) is not in the fingerprint: the manifest's git commit and package versions change,
which a resumed run reports with a :class:`SweepWarning`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import io
import os
import sys
import textwrap
import threading
import tokenize
import types
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from mixreg.montecarlo._errors import AlgorithmUnavailableError

if TYPE_CHECKING:
    from mixreg.montecarlo._spec import Sweep

__all__ = ["module_digest", "code_fingerprint", "code_changes", "algorithm_payloads", "install_algorithms"]

_DIGESTS: dict[tuple[str, object], str] = {}  # (path, (mtime_ns, size)) -> digest
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


def module_digest(name: str) -> str | None:
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
    key = (path, _file_stamp(path))
    if key[1] is None:
        return None
    if key not in _DIGESTS:
        try:
            with open(path, "rb") as fh:
                _DIGESTS[key] = _source_digest(fh.read())
        except (OSError, SyntaxError, tokenize.TokenError):
            return None
    return _DIGESTS[key]


_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def _top(name):
    return (name or "").split(".")[0]


class _CodeDigest:
    """The digest of a function's code as a sweep runs it: its normalised source, the source of the
    functions and classes of its own module it reaches by name (transitively), the plain values
    it reads (module constants, closure cells, an entry's options), and the whole-module digests
    of the modules of ``tops`` (mixreg, the study's own package) it takes anything else from.

    So an edit of the figure code of a one-file study, or of a comment, leaves the trial's digest
    as it was, and an edit of any code the trial reaches changes it.
    """

    def __init__(self, tops):
        self.tops = set(tops)
        self.parts, self.modules, self.seen = [], set(), set()

    def _user(self, module):
        """``module`` is a user's own code, digested function by function wherever it is reached:
        a script (``__main__``) or a module outside every installed package (a helper beside a
        script), neither of which a whole-module digest of ``tops`` would cover."""
        if module == "__main__":
            return True
        loaded = sys.modules.get(module or "")
        path = getattr(loaded, "__file__", None)
        return bool(path) and _top(module) not in self.tops and not _installed(path)

    def digest(self):
        return hashlib.sha256("\n".join(self.parts).encode("utf-8")).hexdigest()[:16]

    def function(self, fn):
        if id(fn) in self.seen:
            return
        self.seen.add(id(fn))
        module = getattr(fn, "__module__", None)
        if isinstance(fn, functools.partial):  # the function and its bound arguments
            self.parts.append(f"partial args={len(fn.args)} keywords={sorted(fn.keywords)}")
            self.function(fn.func)
            for i, arg in enumerate(fn.args):
                self.value(f"<partial {i}>", arg, module)
            for key in sorted(fn.keywords):
                self.value(f"<partial {key}>", fn.keywords[key], module)
            return
        code = getattr(fn, "__code__", None)
        if code is None:  # a callable object: its class
            self.value("<callable>", fn, module)
            return
        # by its qualified name only: a script's trial keeps its digest imported as a module
        self.parts.append(f"def {fn.__qualname__}\n{_object_source(fn)}")
        names = set()
        stack = [code]
        while stack:
            c = stack.pop()
            names.update(c.co_names)
            stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        scope = getattr(fn, "__globals__", {})
        for name in sorted(names):
            if name in scope:
                self.value(name, scope[name], module)
        for i, default in enumerate(getattr(fn, "__defaults__", None) or ()):  # def trial(cell, seed, g=G)
            self.value(f"<default {i}>", default, module)
        for key, default in sorted((getattr(fn, "__kwdefaults__", None) or {}).items()):
            self.value(f"<default {key}>", default, module)
        for i, cell in enumerate(getattr(fn, "__closure__", None) or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            self.value(f"<closure {i}>", contents, module)
        if getattr(fn, "__wrapped__", None) is not None:
            self.function(fn.__wrapped__)

    def value(self, name, value, home):
        if isinstance(value, _PLAIN):
            self.parts.append(f"{name}={value!r}")
        elif isinstance(value, types.ModuleType):
            if _top(value.__name__) in self.tops or self._user(value.__name__):
                self.modules.add(value.__name__)
        elif isinstance(value, (types.FunctionType, type)):
            module = getattr(value, "__module__", None)
            if id(value) in self.seen:
                return
            own = module == home or self._user(module)  # digested here, not as a whole module
            if own and isinstance(value, types.FunctionType):
                self.function(value)
            elif own:  # a class of the same module: its source and methods
                self.seen.add(id(value))
                self.parts.append(f"class {value.__qualname__}\n{_object_source(value)}")
                for member in vars(value).values():
                    member = getattr(member, "__func__", member)  # staticmethod, classmethod
                    if isinstance(member, types.FunctionType):
                        self.function(member)
            elif _top(module) in self.tops:
                self.modules.add(module)
        elif isinstance(value, (tuple, list, set, frozenset, dict)) and id(value) in self.seen:
            self.parts.append(f"{name}=<seen>")  # a container that holds itself, or met before
        elif isinstance(value, (tuple, list, set, frozenset)):
            self.seen.add(id(value))
            items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
            self.parts.append(f"{name}={type(value).__name__}[{len(items)}]")
            for i, item in enumerate(items):
                self.value(f"{name}[{i}]", item, home)
        elif isinstance(value, dict):
            self.seen.add(id(value))
            self.parts.append(f"{name}=dict[{len(value)}]")
            for key in sorted(value, key=repr):
                self.value(f"{name}[{key!r}]", value[key], home)
        elif hasattr(value, "dtype") and hasattr(value, "tobytes"):  # an array or a NumPy scalar
            self.parts.append(f"{name}=array {value.dtype} {getattr(value, 'shape', ())} "
                              f"{hashlib.sha256(value.tobytes()).hexdigest()[:16]}")
        elif isinstance(value, functools.partial):
            self.function(value)
        else:  # any other object: its type, and its plain attributes (a schedule's t0, a spec's fields)
            self.value(f"{name}.__class__", type(value), home)
            attributes = getattr(value, "__dict__", None)
            if isinstance(attributes, dict) and len(attributes) <= 64:
                for key in sorted(attributes):
                    if isinstance(attributes[key], (*_PLAIN, types.FunctionType)):  # e.g. an entry's run
                        self.value(f"{name}.{key}", attributes[key], home)


@functools.lru_cache(maxsize=None)
def _installed(path):
    """``path`` lies in an installed package's directory (site-packages) or the standard library."""
    path = os.path.realpath(path)
    return any(path.startswith(root + os.sep) for root in _library_roots())


@functools.lru_cache(maxsize=1)
def _library_roots():
    import sysconfig

    return tuple({os.path.realpath(sysconfig.get_paths()[key]) for key in ("purelib", "platlib", "stdlib",
                                                                           "platstdlib")})


# id(obj) -> (obj, its file's stamp, digest): a sweep's start digests each function once
_SOURCES: dict[int, tuple[object, object, str]] = {}


def _file_stamp(path):
    try:
        stat = os.stat(path)
    except (OSError, TypeError, ValueError):
        return None
    return stat.st_mtime_ns, stat.st_size


def _object_source(obj):
    """The source of a function or class without comments or layout (its bytecode when it has
    no source file, e.g. typed at a prompt); computed once per object and version of its file."""
    try:
        path = inspect.getsourcefile(obj)
    except TypeError:
        path = None
    stamp = _file_stamp(path) if path else None
    hit = _SOURCES.get(id(obj))
    if hit is not None and hit[0] is obj and hit[1] == stamp and stamp is not None:
        return hit[2]
    try:
        if path:
            import linecache

            linecache.checkcache(path)  # an edited file is read again
        source = textwrap.dedent(inspect.getsource(obj))
        digest = _source_digest(source.encode("utf-8"))
    except (OSError, TypeError, SyntaxError, tokenize.TokenError, IndentationError):
        code = getattr(obj, "__code__", None)
        digest = "bytecode " + (hashlib.sha256(code.co_code).hexdigest()[:16] if code is not None else "?")
    _SOURCES[id(obj)] = (obj, stamp, digest)  # holding obj: its id is not reused while cached
    return digest


def _code_record(fns, tops, extra=()):
    digest = _CodeDigest(tops)
    for part in extra:
        digest.parts.append(part)
    for fn in fns:
        digest.function(fn)
    return {"sha256": digest.digest(), "modules": {name: module_digest(name) for name in sorted(digest.modules)}}


def _algorithm_record(name):
    from mixreg.algorithms import get_algorithm, registered_by

    entry = get_algorithm(name)
    tops = {"mixreg", _top(registered_by(name)), _top(getattr(inspect.unwrap(entry.run), "__module__", None))}
    tops.discard("__main__")
    options = sorted((key, repr(value)) for key, value in entry.options.items())
    return _code_record([entry.run], tops, extra=[f"algorithm {name} uses_rng={entry.uses_rng} options={options}"])


def sweep_algorithms(sweep: Sweep) -> list[str]:
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


def _spec_modules(spec_type, tops):
    import typing

    try:
        hints = list(typing.get_type_hints(spec_type).values())
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: the bases only
        hints = []
    classes = list(spec_type.__mro__[1:]) + [h for h in hints if isinstance(h, type)]
    return {c.__module__ for c in classes if _top(c.__module__) in tops}


def code_fingerprint(sweep: Sweep) -> dict[str, Any]:
    """The manifest's ``code``: digests of the code that computes ``sweep``'s records.

    Returns
    -------
    dict
        ``{"trial_fn": {"name", "module", "sha256", "modules"}, "algorithms": {name: {"sha256",
        "modules"}}}``: for the trial function and each algorithm the sweep runs, the digest of
        its own code (``_CodeDigest``) and the whole-module digests of the mixreg (or
        same-package) modules it takes names from; ``None`` for a module without source.
    """
    fn = sweep.trial_fn
    module_name = getattr(fn, "__module__", None) or "__main__"
    tops = {"mixreg", _top(module_name)} - {"__main__"}
    extra = []
    if sweep.spec_type is not None:  # the cells reach the trial through its spec type
        extra.append(f"spec {sweep.spec_type.__qualname__}")
    trial = _code_record([fn] + ([sweep.spec_type] if sweep.spec_type is not None else []), tops, extra)
    if sweep.spec_type is not None:  # what the spec is made of: its bases and its fields' types (a ProblemSpec)
        trial["modules"].update({name: module_digest(name) for name in _spec_modules(sweep.spec_type, tops)})
        trial["modules"] = dict(sorted(trial["modules"].items()))
    record = {
        "trial_fn": {"name": getattr(fn, "__qualname__", repr(fn)), "module": module_name, **trial},
        "algorithms": {name: _algorithm_record(name) for name in sweep_algorithms(sweep)},
    }
    if sweep.predictions:  # what a prediction's formula calls (its own source is in its sha256)
        record["predictions"] = {
            prediction.to_json()["name"]: _code_record(
                [f for f in (getattr(prediction, "formula", None), getattr(prediction, "regime", None)) if callable(f)],
                {"mixreg", _top(getattr(getattr(prediction, "formula", None), "__module__", None))} - {"__main__"})
            for prediction in sweep.predictions}
    return record


def _record_changes(what, old, new):
    changes = [what] if old.get("sha256") != new["sha256"] else []
    old_modules, new_modules = old.get("modules") or {}, new["modules"]
    for name in sorted(set(old_modules) | set(new_modules)):
        if name not in new_modules:
            changes.append(f"{what}: module {name} (no longer used)")
        elif name not in old_modules:
            changes.append(f"{what}: module {name} (newly used)")
        elif old_modules[name] != new_modules[name]:
            changes.append(f"{what}: module {name}")
    return changes


def code_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What differs between two fingerprints (:func:`code_fingerprint`), one phrase per change
    (empty when the same), e.g. ``"the trial function mystudy:trial"``, ``"algorithm 'mine':
    module mixreg.kernels"``."""
    trial = new["trial_fn"]
    changes = _record_changes(f"the trial function {trial['module']}:{trial['name']}", old.get("trial_fn") or {},
                              trial)
    old_predictions, new_predictions = old.get("predictions") or {}, new.get("predictions") or {}
    for name in sorted(set(old_predictions) & set(new_predictions)):  # one added or dropped is refused apart
        changes += _record_changes(f"prediction {name!r}", old_predictions[name], new_predictions[name])
    old_algorithms = old.get("algorithms") or {}
    for name in sorted(set(old_algorithms) | set(new["algorithms"])):
        if name not in new["algorithms"]:
            changes.append(f"algorithm {name!r} (no longer run)")
        elif name not in old_algorithms:
            changes.append(f"algorithm {name!r} (newly run)")
        else:
            changes += _record_changes(f"algorithm {name!r}", old_algorithms[name], new["algorithms"][name])
    return changes


def algorithm_payloads(code: Mapping[str, Any]) -> tuple[tuple[str, str, bytes, str], ...]:
    """What a worker needs to hold the user-registered algorithms a sweep runs, from its code
    fingerprint ``code`` (:func:`code_fingerprint`, which names them and holds their digests): a
    tuple of ``(name, registering module, pickled entry, code digest)``, the entries not built
    into mixreg.

    Sent with every task (a few kilobytes), so a worker that joins a Dask cluster mid-run gets
    them too.  ``RuntimeError`` (one line) for an entry that cannot be pickled.
    """
    import cloudpickle

    from mixreg.algorithms import builtin_algorithms, get_algorithm, registered_by

    payloads = []
    for name, record in code["algorithms"].items():
        if name in builtin_algorithms():
            continue
        try:
            blob = cloudpickle.dumps(get_algorithm(name))
        except Exception as exc:  # noqa: BLE001 - any pickling fault, said in one line
            raise RuntimeError(f"algorithm {name!r} cannot be sent to worker processes ({type(exc).__name__}: "
                               f"{_first_line(exc)}); register it at the top level of an importable module") from None
        payloads.append((name, registered_by(name), blob, record["sha256"]))
    return tuple(payloads)


_INSTALL_LOCK = threading.Lock()  # a Dask worker runs tasks on threads
_INSTALLED: dict[str, str] = {}  # name -> the code digest of the entry this worker was given


def _first_line(exc):
    return (str(exc).strip().splitlines() or [""])[0]


def install_algorithms(payloads: Iterable[tuple[str, str, bytes, str]]) -> None:
    """In a worker, before its trials: make every algorithm of ``payloads`` registered.

    An entry the worker holds already (registered when it imported the entry's module, or given
    by an earlier task with the same code digest) is left as it is; one given before with another
    digest (the parent registered new code under the name, e.g. a script edited between two
    runs on a long-lived Dask worker) is replaced.  Otherwise the registering module is imported
    (which registers it, as in the parent process); failing that, the pickled entry is
    registered.  :class:`AlgorithmUnavailableError` names an entry that neither gives.

    A worker keeps the modules it imported: after an edit of an algorithm's module, restart
    long-lived Dask workers (loky's are replaced by the engine when the code changed).
    """
    import pickle

    from mixreg.algorithms import ALGORITHMS, register

    with _INSTALL_LOCK:
        for name, module, blob, digest in payloads:
            stale = name in _INSTALLED and _INSTALLED[name] != digest
            if name in ALGORITHMS and not stale:
                continue
            reasons = []
            if module != "__main__" and not stale:
                try:
                    importlib.import_module(module)
                except Exception as exc:  # noqa: BLE001 - said below, with the other way's reason
                    reasons.append(f"import {module}: {type(exc).__name__}: {_first_line(exc)}")
                if name in ALGORITHMS:
                    continue
            try:
                entry = pickle.loads(blob)
            except Exception as exc:  # noqa: BLE001
                reasons.append(f"unpickling the entry: {type(exc).__name__}: {_first_line(exc)}")
            else:
                if stale:
                    ALGORITHMS.pop(name, None)
                if name not in ALGORITHMS:  # unpickling may have imported the module that registers it
                    register(entry, module=module)
                _INSTALLED[name] = digest
                continue
            raise AlgorithmUnavailableError(name, module, "; ".join(reasons))
