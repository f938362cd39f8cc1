"""Predictions registered before the data, exponent fits checked on held-out cells, and verdicts.

The layer every study's theory lines and claims go through, so that a user's study gets the same
rules as the built-in ones:

* a theory line is either a **prediction** whose constants were fixed before the data
  (:class:`Prediction`: a formula in a cell's fields, its :class:`Constant` values each with
  where it comes from, hashed with :attr:`Prediction.sha256` so a manifest can register it before
  the first trial), or a **fit validated on cells it was not fitted to** (:func:`fit_exponent`
  with ``held_out=``: the residuals there are part of its result); never a line pinned to the
  data at both ends;
* a **verdict** compares a predicted value with a fit's interval as it is (no widening but a
  ``tolerance`` declared with the claim): ``"consistent"``, ``"contradicts"``, or ``"not
  tested"`` with the reason when the data cannot decide (:func:`exponent_verdict`,
  :func:`level_verdict`, :func:`held_out_verdict`); where the prediction is the exponent of a
  *bound* (a sufficient number of rounds or clients, an upper bound on an error), a fitted
  exponent wholly on the bound's safe side is ``"not tight"``: the data do not reach the bound's
  dependence, which contradicts its tightness and not its truth (``slack=`` of
  :func:`exponent_verdict`, :func:`bound_exponent_verdict`); each verdict is a row of a claims
  report (:meth:`Verdict.verdict_row`, :func:`claims_table`).

Examples
--------
Known-label least squares on the pooled points of a cluster (Gaussian rows, ``Sigma = I``) has
RMS error ``sigma sqrt(d / (N - d - 1))``, ``N = m n / k``: exact, no constant to fit.

>>> floor = Prediction("ls_floor", _example_floor, "sigma sqrt(d / (m n / k - d - 1))",
...                    fields=("m", "n", "k", "d", "sigma"))
>>> floor.predict([dict(m=40, n=10, k=2, d=5, sigma=0.1)]).round(4).tolist()
[0.0161]
>>> len(floor.sha256), floor.to_json()["fixed_before_data"]
(64, True)
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import inspect
import io
import json
import math
import textwrap
import tokenize
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._typing import ArrayLike
from .stats import SlopeFit, _bootstrap_lines, _line
from .validation import check_int, check_real

__all__ = ["Constant", "Prediction", "ExponentFit", "fit_exponent", "Verdict", "VERDICT_STATUSES",
           "exponent_verdict", "bound_exponent_verdict", "level_verdict", "held_out_verdict", "claims_table"]

#: What a verdict can say: ``"not tight"`` is a bound's exponent the data do not reach (their
#: dependence is weaker than the bound's: the bound is not contradicted, a claim that it is tight is).
VERDICT_STATUSES = ("consistent", "not tight", "contradicts", "not tested")

#: The sides of a predicted exponent on which a bound holds without being tight (``slack=``).
SLACK_SIDES = ("below", "above")


def _example_floor(cell):
    """The module docstring's example formula (module level: a formula's source must be readable)."""
    return cell["sigma"] * math.sqrt(cell["d"] / (cell["m"] * cell["n"] / cell["k"] - cell["d"] - 1))


def _example_regime(cell):
    """The class docstring's example regime: more pooled points than ``d + 1``."""
    return cell["m"] * cell["n"] / cell["k"] > cell["d"] + 1


# --------------------------------------------------------------------------------------------
# Predictions
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Constant:
    """A constant of a prediction and where it comes from.

    Parameters
    ----------
    value : float
        Finite.
    source : str
        Where the value comes from: a paper's equation (``"IFCA, Corollary 1"``), ``"exact"`` (a
        calculation gives it), or ``"assumed: paper gives none"`` (a universal constant the paper
        does not give, fixed by us before the data).

    Examples
    --------
    >>> Constant(0.5, "exact")
    Constant(value=0.5, source='exact')
    """

    value: float
    source: str

    def __post_init__(self):
        object.__setattr__(self, "value", check_real("Constant value", self.value))
        if not isinstance(self.source, str) or not self.source.strip():
            raise ValueError(f"Constant source must be a non-empty string saying where the value comes from "
                             f"(a paper's equation, 'exact', 'assumed: paper gives none'), got {self.source!r}")


def _function_source(func, what):
    """``func``'s source, normalised: parsed and unparsed (layout and comments do not count; a
    ``def``'s docstring neither), the ``lambda`` expression alone for a lambda."""
    try:
        lines, first = inspect.getsourcelines(func)
    except (OSError, TypeError) as exc:
        raise TypeError(f"{what}'s source cannot be read ({exc}): define it in a module or script file so its "
                        f"text can be registered") from None
    if func.__name__ == "<lambda>":
        return _lambda_source(func, lines, first)
    source = textwrap.dedent("".join(lines))
    node = next((n for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        return source.strip()
    body = node.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        node.body = body[1:]
    return ast.unparse(node)


def _lambda_source(func, lines, first):
    """The lambda expression of ``func`` in its ``lines`` (the first is line ``first`` of its file):
    the longest text from a ``lambda`` keyword that parses as a lambda with ``func``'s arguments and
    holds its code's positions; the lines themselves when no single such text is found."""
    code = func.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    source = "".join(lines)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(row, col):  # a code position (file line, UTF-8 byte column) as an offset in ``source``
        text = lines[row - first] if 0 <= row - first < len(lines) else ""
        return offsets[min(max(row - first, 0), len(lines))] + len(text.encode()[:col].decode(errors="ignore"))

    spans = [(offset(r, c), offset(er, ec)) for r, er, c, ec in code.co_positions()
             if None not in (r, er, c, ec) and (r, c) != (er, ec)]
    body = (min(a for a, _ in spans), max(b for _, b in spans)) if spans else None
    tokens = []
    try:  # the lines may end inside a call: keep the tokens met before the tokenizer gives up
        for t in tokenize.generate_tokens(io.StringIO(source).readline):
            if t.type == tokenize.NAME and t.string == "lambda":
                tokens.append(t)
    except (tokenize.TokenError, SyntaxError):
        pass
    found = set()
    for token in tokens:
        start = offsets[token.start[0] - 1] + token.start[1]
        text = source[start:]
        for end in range(len(text), 0, -1):
            try:
                node = ast.parse(text[:end].strip(), mode="eval").body
            except SyntaxError:
                continue
            if isinstance(node, ast.Lambda):
                args = node.args
                same_args = tuple(a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)) == names
                if same_args and (body is None or start <= body[0] and body[1] <= start + end):
                    found.add(ast.unparse(node))
                break
    return found.pop() if len(found) == 1 else textwrap.dedent(source).strip()


_PLAIN = (bool, int, float, str, type(None))


def _references(func):
    """The values ``func`` reads besides its arguments, by name: plain data (numbers, strings,
    tuples of them) as their ``repr``, arrays by their dtype, shape and hash, modules by their name and functions by their qualified name
    (not their module's: a script's functions live in ``__main__`` when it runs and in its own
    module when a worker imports it); nested code (comprehensions, inner lambdas) included."""
    refs = {}
    closure = dict(zip(func.__code__.co_freevars, (c.cell_contents for c in func.__closure__ or ())))

    def walk(code):
        for name in (*code.co_names, *code.co_freevars):
            if name in closure:
                value = closure[name]
            elif name in func.__globals__:
                value = func.__globals__[name]
            else:
                continue
            if isinstance(value, _PLAIN) or (isinstance(value, tuple) and all(isinstance(v, _PLAIN) for v in value)):
                refs[name] = repr(value)
            elif isinstance(value, np.ndarray):
                digest = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
                refs[name] = f"array {value.dtype} {list(value.shape)} sha256 {digest}"
            elif isinstance(value, types.ModuleType):
                refs[name] = f"module {value.__name__}"
            elif callable(value):
                refs[name] = f"function {getattr(value, '__qualname__', type(value).__name__)}"
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                walk(const)

    walk(func.__code__)
    return dict(sorted(refs.items()))


def _has(cell, field):
    return field in cell if isinstance(cell, Mapping) else hasattr(cell, field)


@dataclasses.dataclass(frozen=True, eq=False)
class Prediction:
    """A formula in a cell's fields whose constants were fixed before the data.

    Parameters
    ----------
    name : str
        Its name in tables and in the manifest.
    formula : callable ``formula(cell, **constants) -> float``
        The predicted value at a cell, a ``dict`` of the cell's fields or a spec object (whichever
        the study's cells are), with the constants' values as keyword arguments.  Defined in a
        file (its source is registered).
    text : str
        The formula as a reader writes it (``"sigma sqrt(d / (N - d - 1))"``).
    constants : mapping of str to Constant, optional
        The formula's constants, each with its source.
    fields : sequence of str, optional
        The cell fields the formula reads; :meth:`predict` checks every cell has them.
    regime : callable ``regime(cell) -> bool``, optional
        Where the theorem applies (:meth:`applies`); ``None``: wherever the formula is defined.
    regime_text : str, optional
        The regime as a reader writes it (``"rho >= 4, n' >= d log m"``).

    Notes
    -----
    :meth:`to_json` is what a manifest registers and :attr:`sha256` its hash: the name, text,
    constants with their sources, fields, the normalised source of the formula and of the regime
    (parsed and unparsed: layout and comments do not count), the plain values they read from
    their module or closure, and ``fixed_before_data: True``.  The code of the functions the
    formula calls is not part of it (a sweep's code hash covers their modules).

    Examples
    --------
    A formula with a constant the paper does not give, and an exact one with its regime:

    >>> scaled = Prediction("scaled_floor",
    ...                     lambda cell, c: c * _example_floor(cell),  # the lambda alone is registered
    ...                     "c sigma sqrt(d / (N - d - 1))",
    ...                     constants={"c": Constant(2.0, "assumed: paper gives none")})
    >>> scaled.to_json()["formula"], scaled.to_json()["constants"]
    ('lambda cell, c: c * _example_floor(cell)', {'c': {'value': 2.0, 'source': 'assumed: paper gives none'}})
    >>> floor = Prediction("floor", _example_floor, "sigma sqrt(d / (N - d - 1))", regime=_example_regime,
    ...                    regime_text="N > d + 1")
    >>> cells = [dict(m=40, n=10, k=2, d=5, sigma=0.1), dict(m=2, n=3, k=2, d=5, sigma=0.1)]
    >>> floor.applies(cells).tolist(), floor.predict(cells[:1]).round(4).tolist()
    ([True, False], [0.0161])
    """

    name: str
    formula: Callable
    text: str
    constants: Mapping = dataclasses.field(default_factory=dict)
    fields: tuple = ()
    regime: Callable | None = None
    regime_text: str = ""
    if TYPE_CHECKING:  # set once when made (not a field)
        _json: dict[str, Any] = dataclasses.field(init=False)

    def __post_init__(self):
        for label in ("name", "text"):
            value = getattr(self, label)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"Prediction {label} must be a non-empty string, got {value!r}")
        if not callable(self.formula):
            raise TypeError(f"Prediction formula must be callable as formula(cell, **constants), got "
                            f"{type(self.formula).__name__}")
        if not isinstance(self.constants, Mapping):
            raise TypeError(f"Prediction constants must be a mapping of names to Constant, got "
                            f"{type(self.constants).__name__}")
        for key, constant in self.constants.items():
            if not (isinstance(key, str) and key.isidentifier()):
                raise ValueError(f"Prediction constant names must be identifiers, got {key!r}")
            if not isinstance(constant, Constant):
                raise TypeError(f"Prediction constant {key!r} must be a Constant(value, source), got {constant!r}")
        try:
            inspect.signature(self.formula).bind(None, **self.constants)
        except TypeError:
            raise TypeError(f"Prediction {self.name!r}: formula{inspect.signature(self.formula)} cannot be called "
                            f"as formula(cell, {', '.join(f'{k}=...' for k in self.constants)})") from None
        except ValueError:  # no signature (a builtin): called as it is
            pass
        fields = (self.fields,) if isinstance(self.fields, str) else tuple(self.fields)
        if not all(isinstance(f, str) and f for f in fields):
            raise ValueError(f"Prediction fields must be field names (strings), got {self.fields!r}")
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "constants", dict(sorted(self.constants.items())))
        if self.regime is not None and not callable(self.regime):
            raise TypeError(f"Prediction regime must be a callable regime(cell) -> bool or None, got "
                            f"{type(self.regime).__name__} (describe it in regime_text)")
        if not isinstance(self.regime_text, str):
            raise TypeError(f"Prediction regime_text must be a string, got {type(self.regime_text).__name__}")
        object.__setattr__(self, "_json", self._make_json())

    def _make_json(self):
        out = dict(name=self.name, text=self.text,
                   constants={k: dict(value=c.value, source=c.source) for k, c in self.constants.items()},
                   fields=list(self.fields), formula=_function_source(self.formula, "formula"),
                   references=_references(self.formula), regime=None, regime_text=self.regime_text,
                   fixed_before_data=True)
        if self.regime is not None:
            out["regime"] = _function_source(self.regime, "regime")
            out["regime_references"] = _references(self.regime)
        return out

    def to_json(self) -> dict[str, Any]:
        """What a manifest registers: a JSON-serialisable ``dict`` (see the class's Notes)."""
        return json.loads(json.dumps(self._json))

    @property
    def sha256(self) -> str:
        """SHA-256 of :meth:`to_json` as canonical JSON (sorted keys, no spaces): the same on every run
        and machine for the same prediction, another as soon as a constant, the text or the
        formula changes."""
        canonical = json.dumps(self._json, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def _cells(self, cells):
        if isinstance(cells, (Mapping, str)) or not hasattr(cells, "__iter__"):
            raise TypeError(f"cells must be a sequence of cells (dicts or specs), got {type(cells).__name__}; "
                            f"wrap one cell in a list")
        cells = list(cells)
        for i, cell in enumerate(cells):
            missing = [f for f in self.fields if not _has(cell, f)]
            if missing:
                raise ValueError(f"Prediction {self.name!r} reads field(s) {', '.join(map(repr, missing))} that "
                                 f"cells[{i}] does not have")
        return cells

    def predict(self, cells: Sequence[Mapping[str, Any]], *, only_in_regime: bool = False) -> np.ndarray:
        """The predicted value at each cell.

        Parameters
        ----------
        cells : sequence of dict or spec
        only_in_regime : bool
            ``nan`` at the cells outside :attr:`regime`.

        Returns
        -------
        ndarray of shape (len(cells),)
        """
        cells = self._cells(cells)
        values = {k: c.value for k, c in self.constants.items()}
        out = np.empty(len(cells))
        for i, cell in enumerate(cells):
            value = self.formula(cell, **values)
            try:
                out[i] = float(value)
            except (TypeError, ValueError):
                raise TypeError(f"Prediction {self.name!r}: formula must return a real number, got {value!r} at "
                                f"cells[{i}]") from None
        if only_in_regime:
            out[~self.applies(cells)] = np.nan
        return out

    def applies(self, cells: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """Whether each cell lies in the theorem's regime (``True`` everywhere without a regime).

        Returns
        -------
        ndarray of bool, shape (len(cells),)
        """
        cells = self._cells(cells)
        if self.regime is None:
            return np.ones(len(cells), dtype=bool)
        return np.array([bool(self.regime(cell)) for cell in cells], dtype=bool)


# --------------------------------------------------------------------------------------------
# Exponent fits with held-out cells
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExponentFit(SlopeFit):
    """A log-log exponent fit with its bootstrap interval and its residuals on held-out cells.

    Attributes
    ----------
    slope, intercept, low, high, level, n_points, n_boot
        As :class:`mixreg.stats.SlopeFit`, over the cells used in the fit: the line is
        ``log statistic = intercept + slope log x``.
    statistic : {"mean", "median"}
    x, observed : tuple of float
        The fitted cells' ``x`` and statistic (``nan`` where no trial is finite).
    held_out : tuple of dict
        One per held-out cell: ``x``, ``trials`` (finite outcomes), ``observed`` (the statistic),
        ``fitted`` (``exp(intercept) x^slope``), ``residual`` (``log10(observed / fitted)``) and
        ``residual_low``/``residual_high`` (its interval at ``level``: the line refitted on each
        bootstrap replicate against the held-out trials resampled).
    """

    statistic: str = "mean"
    x: tuple = ()
    observed: tuple = ()
    held_out: tuple = ()

    def fitted(self, x: ArrayLike) -> np.ndarray:
        """The fitted line ``exp(intercept) x^slope`` at ``x`` (array-like)."""
        return np.exp(self.intercept) * np.asarray(x, dtype=float) ** self.slope


def _cells_of(x, y):
    """``(x (G,), [trials at each x])`` from per-cell data (``y`` one array per ``x``) or from
    trial-level data (``x``, ``y`` of one length; a cell per distinct ``x``)."""
    per_cell = len(y) == np.size(x) and len(y) > 0 and all(np.ndim(v) >= 1 for v in y)
    if per_cell:
        xs = np.asarray(x, dtype=float)
        if xs.ndim != 1:
            raise ValueError(f"x must be 1-D, got shape {xs.shape}")
        if np.unique(xs).size != xs.size:
            raise ValueError(f"x must hold distinct cell values with y one array of trials per cell, got "
                             f"{xs.tolist()} (pass trial-level x and y of one length to pool cells)")
        return xs, [np.asarray(v, dtype=float).ravel() for v in y]
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xs.ndim != 1 or ys.shape != xs.shape:
        raise ValueError(f"y must be one array of trials per value of x, or trial-level values of x's shape; got "
                         f"x of shape {xs.shape} and y of length {len(y)}")
    cells = np.unique(xs[np.isfinite(xs)])
    return cells, [ys[xs == c] for c in cells]


def fit_exponent(x: ArrayLike, y: Sequence[ArrayLike] | np.ndarray, *, held_out: Sequence[float] = (), statistic: str = "mean",
                 n_boot: int = 2000, level: float = 0.95, rng: np.random.Generator) -> ExponentFit:
    r"""The exponent ``a`` of ``statistic(y) ~ C x^a`` with a bootstrap interval and held-out residuals.

    The point estimate is the least-squares slope of :math:`\log s_g` on :math:`\log x_g` over
    the cells not held out, :math:`s_g` the mean (or median) of the finite trial outcomes at
    :math:`x_g`; the interval resamples the trials within each cell and refits (a stratified
    nonparametric bootstrap, as :func:`mixreg.stats.fit_slope`, which gives the same slope and
    interval from the same ``rng``).  At each held-out cell the line predicts
    :math:`\hat s_h = e^{b} x_h^{a}` and the residual is :math:`\log_{10}(s_h / \hat s_h)`, with
    an interval from the bootstrap lines against the held-out trials resampled: a fit is
    validated where it was not fitted.

    Parameters
    ----------
    x : array of shape (G,) or (n,)
        Cell values (> 0), or each trial's value.
    y : sequence of G arrays, or array of shape (n,)
        The trial outcomes at each cell, or each trial's outcome (trial-level data: a cell per
        distinct ``x``).  Non-finite outcomes (diverged runs) are dropped.
    held_out : sequence of float
        The ``x`` of the cells kept out of the fit (each must be a cell's ``x``).
    statistic : {"mean", "median"}
    n_boot : int >= 1
    level : float in (0, 1)
    rng : numpy.random.Generator

    Returns
    -------
    ExponentFit
        ``nan`` slope and interval when fewer than two fitted cells have a finite positive
        statistic.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = np.array([10.0, 20, 40, 80, 160])
    >>> ys = [v ** -0.5 * rng.lognormal(0, 0.1, 50) for v in x]
    >>> fit = fit_exponent(x, ys, held_out=[160.0], n_boot=500, rng=rng)
    >>> round(fit.slope, 1), fit.n_points, bool(fit.low < -0.5 < fit.high)
    (-0.5, 4, True)
    >>> row = fit.held_out[0]
    >>> row["x"], bool(row["residual_low"] < 0 < row["residual_high"])
    (160.0, True)
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if statistic not in ("mean", "median"):
        raise ValueError(f"statistic must be 'mean' or 'median', got {statistic!r}")
    level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False, high_inclusive=False)
    n_boot = check_int("n_boot", n_boot, low=1)
    try:
        y = list(y)
    except TypeError:
        raise TypeError(f"y must be a sequence of trial outcomes, got {type(y).__name__}") from None
    xs, groups = _cells_of(x, y)
    if np.any(~np.isfinite(xs)) or np.any(xs <= 0):
        raise ValueError(f"x must be finite and > 0 for a log-log fit, got {xs.tolist()}")
    held = np.atleast_1d(np.asarray(held_out, dtype=float))
    unknown = held[~np.isin(held, xs)]
    if unknown.size:
        raise ValueError(f"held_out value(s) {unknown.tolist()} are not cells' x (cells: {xs.tolist()})")
    out_mask = np.isin(xs, held)
    stat = np.mean if statistic == "mean" else np.median
    clean = [g[np.isfinite(g)] for g in groups]
    train = [g for g, out in zip(clean, out_mask) if not out]
    u = np.log(xs[~out_mask])
    slope, intercept, n_points = _line(u, train, stat)
    lines = _bootstrap_lines(u, train, stat, n_boot, rng)
    finite = np.isfinite(lines[:, 0])
    if finite.any() and np.isfinite(slope):
        low, high = np.quantile(lines[finite, 0], [(1 - level) / 2, (1 + level) / 2])
    else:
        low = high = np.nan
    rows = []
    for x_h, g in zip(xs[out_mask], (g for g, out in zip(clean, out_mask) if out)):
        observed = float(stat(g)) if g.size else np.nan
        fitted = float(np.exp(intercept + slope * np.log(x_h)))
        with np.errstate(divide="ignore", invalid="ignore"):
            residual = float(np.log10(observed / fitted)) if observed > 0 and np.isfinite(fitted) else np.nan
            r_low = r_high = np.nan
            if g.size and finite.any() and np.isfinite(residual):
                resampled = stat(g[rng.integers(0, g.size, (n_boot, g.size))], axis=1)
                res = (np.log(resampled) - lines[:, 1] - lines[:, 0] * np.log(x_h)) / np.log(10.0)
                res = res[np.isfinite(res)]
                if res.size:
                    r_low, r_high = (float(q) for q in np.quantile(res, [(1 - level) / 2, (1 + level) / 2]))
        rows.append(dict(x=float(x_h), trials=int(g.size), observed=observed, fitted=fitted, residual=residual,
                         residual_low=r_low, residual_high=r_high))
    observed_fit = tuple(float(stat(g)) if g.size else math.nan for g in train)
    return ExponentFit(slope=slope, intercept=intercept, low=float(low), high=float(high), level=level,
                       n_points=n_points, n_boot=n_boot, statistic=statistic,
                       x=tuple(float(v) for v in xs[~out_mask]), observed=observed_fit, held_out=tuple(rows))


# --------------------------------------------------------------------------------------------
# Verdicts
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What the data say of a claim.

    Parameters
    ----------
    claim : str
        The claim, as a report states it (``"final error ~ m^-1/2 (Corollary 1)"``).
    status : {"consistent", "not tight", "contradicts", "not tested"}
        ``"not tight"``: the prediction is a bound's exponent and the fitted interval lies wholly
        on the side where the bound holds without being reached (:func:`bound_exponent_verdict`).
    numbers : dict
        The numbers it rests on (predicted, fitted, interval, ...).
    why : str
        The comparison in words; for ``"not tested"``, why the data cannot decide.
    """

    claim: str
    status: str
    numbers: dict = dataclasses.field(default_factory=dict)
    why: str = ""

    def __post_init__(self):
        if not isinstance(self.claim, str) or not self.claim.strip():
            raise ValueError(f"Verdict claim must be a non-empty string, got {self.claim!r}")
        if self.status not in VERDICT_STATUSES:
            raise ValueError(f"Verdict status must be one of {', '.join(VERDICT_STATUSES)}, got {self.status!r}")
        if not isinstance(self.numbers, Mapping):
            raise TypeError(f"Verdict numbers must be a dict, got {type(self.numbers).__name__}")
        reserved = {"claim", "status", "why"} & set(self.numbers)
        if reserved:
            raise ValueError(f"Verdict numbers cannot be named {', '.join(sorted(reserved))} (columns of the row)")
        if self.status == "not tested" and not (isinstance(self.why, str) and self.why.strip()):
            raise ValueError("Verdict why must say why the claim is 'not tested'")
        object.__setattr__(self, "numbers", dict(self.numbers))

    def verdict_row(self) -> dict[str, Any]:
        """The verdict as a row of a claims report: ``claim``, ``status``, the numbers, ``why``."""
        return {"claim": self.claim, "status": self.status, **self.numbers, "why": self.why}


def _fmt(value):
    return f"{value:+.3g}"


def exponent_verdict(claim: str, predicted: float, fit: SlopeFit, *, tolerance: float = 0.0,
                     slack: str | None = None) -> Verdict:
    """Is a predicted exponent inside a fit's interval?

    Parameters
    ----------
    claim : str
    predicted : float
        The exponent the theory predicts (fixed before the data).
    fit : mixreg.stats.SlopeFit or ExponentFit
        From :func:`fit_exponent` (or :func:`mixreg.stats.fit_slope`).
    tolerance : float >= 0
        Declared with the claim, never chosen after seeing the fit: the interval is widened by it
        on both sides (``0``: as it is).
    slack : {"below", "above"}, optional
        Declared with the claim when ``predicted`` is the exponent of a bound: the side of it on
        which the measured quantity stays within the bound in the theorem's limit (``"below"``
        for ``x -> infinity``, ``"above"`` for ``x -> 0``).  See :func:`bound_exponent_verdict`.

    Returns
    -------
    Verdict
        ``"consistent"`` if ``low - tolerance <= predicted <= high + tolerance``, ``"contradicts"``
        if not (``"not tight"`` if the interval lies on the ``slack`` side), ``"not tested"``
        when fewer than two cells could be fitted (e.g. every run diverged) or the interval is
        undefined.  ``numbers``: ``predicted``, ``fitted``, ``low``, ``high``, ``level``,
        ``n_points``, ``tolerance`` (and ``slack`` when given).

    Examples
    --------
    >>> from mixreg.stats import SlopeFit
    >>> fit = SlopeFit(slope=-0.48, intercept=0.0, low=-0.53, high=-0.44, level=0.95, n_points=5, n_boot=1000)
    >>> exponent_verdict("error ~ m^-1/2", -0.5, fit).status, exponent_verdict("error ~ m^-1", -1.0, fit).status
    ('consistent', 'contradicts')
    >>> exponent_verdict("error <~ m^-1", -1.0, fit, slack="above").status
    'not tight'
    """
    if not isinstance(fit, SlopeFit):
        raise TypeError(f"fit must be a SlopeFit or ExponentFit (from fit_exponent), got {type(fit).__name__}")
    predicted = check_real("predicted", predicted)
    tolerance = check_real("tolerance", tolerance, low=0.0)
    numbers = dict(predicted=predicted, fitted=fit.slope, low=fit.low, high=fit.high, level=fit.level,
                   n_points=fit.n_points, tolerance=tolerance)
    if fit.n_points < 2 or not np.isfinite(fit.slope):
        return Verdict(claim, "not tested", numbers,
                       f"fewer than 2 cells with a finite positive statistic ({fit.n_points}): no slope to compare")
    if not (np.isfinite(fit.low) and np.isfinite(fit.high)):
        return Verdict(claim, "not tested", numbers, "the fit's bootstrap interval is undefined")
    widened = f" widened by {tolerance:g}" if tolerance else ""
    interval = f"[{_fmt(fit.low)}, {_fmt(fit.high)}] ({fit.level:.0%}{widened})"
    if fit.low - tolerance <= predicted <= fit.high + tolerance:
        verdict = Verdict(claim, "consistent", numbers, f"predicted {_fmt(predicted)} lies in the fitted {interval}")
    else:
        verdict = Verdict(claim, "contradicts", numbers,
                          f"predicted {_fmt(predicted)} lies outside the fitted {interval}")
    return verdict if slack is None else bound_exponent_verdict(verdict, slack)


def bound_exponent_verdict(verdict: Verdict, slack: str) -> Verdict:
    """An exponent verdict read as the check of a bound's exponent: ``"not tight"`` on its slack side.

    A theorem's sufficient condition or upper bound (``T`` rounds suffice, ``M >= C d / p^2``
    clients suffice, an error at most ``C / p``) predicts an exponent the measured quantity must
    not exceed in the long run.  A fitted interval wholly on the side where the measured quantity
    grows more slowly (or decays faster) than the bound does not contradict the bound; it
    contradicts only the claim that the bound is tight.  Whether the bound itself holds at the
    measured cells is a separate check (a level against the bound, e.g. every run within ``T``).

    Parameters
    ----------
    verdict : Verdict
        From :func:`exponent_verdict` (or read from a table): ``numbers`` hold ``predicted``,
        ``low`` and ``high`` (and ``tolerance``, 0 if absent).
    slack : {"below", "above"}
        The side of ``predicted`` on which the measured quantity stays within the bound in the
        limit the theorem is about: ``"below"`` where that limit is ``x -> infinity`` (rounds
        against ``L / (p lambda)``, clients against ``d``: a fitted exponent below the bound's
        grows more slowly), ``"above"`` where it is ``x -> 0`` (an error bound ``C / p`` or the
        clients ``C / p_min^2`` as ``p -> 0``: a fitted exponent above the bound's negative one
        grows more slowly as ``x`` falls).

    Returns
    -------
    Verdict
        ``verdict`` itself unless it ``"contradicts"`` with the whole interval (widened by the
        declared tolerance) on the ``slack`` side; then the same numbers with ``slack`` and the
        status ``"not tight"``.

    Examples
    --------
    >>> v = Verdict("rounds ~ x^1", "contradicts", dict(predicted=1.0, fitted=0.83, low=0.80, high=0.86))
    >>> bound_exponent_verdict(v, "below").status, bound_exponent_verdict(v, "above").status
    ('not tight', 'contradicts')
    """
    if slack not in SLACK_SIDES:
        raise ValueError(f"slack must be one of {', '.join(SLACK_SIDES)}, got {slack!r}")
    if verdict.status != "contradicts":
        return verdict
    numbers = verdict.numbers
    try:
        predicted, low, high = (float(numbers[key]) for key in ("predicted", "low", "high"))
    except (KeyError, TypeError, ValueError):
        return verdict  # not an exponent comparison (e.g. a run that diverged): it stays contradicted
    tolerance = float(numbers.get("tolerance") or 0.0)
    loose = high + tolerance < predicted if slack == "below" else low - tolerance > predicted
    if not loose:
        return verdict
    return Verdict(verdict.claim, "not tight", dict(numbers, slack=slack),
                   f"{verdict.why}; the whole interval lies {slack} the bound's exponent: a weaker dependence "
                   f"than the bound's, which contradicts its tightness, not the bound")


def level_verdict(claim: str, predicted: ArrayLike, low: ArrayLike, high: ArrayLike, *,
                  tolerance: float = 0.0) -> Verdict:
    """Are predicted levels inside the observed intervals, cell by cell?

    Parameters
    ----------
    claim : str
    predicted, low, high : array_like of shape (G,) (or scalars, broadcast)
        The predicted value at each cell (e.g. :meth:`Prediction.predict`) and the interval of
        the observed statistic there (e.g. :func:`mixreg.stats.bootstrap_mean_interval`).
    tolerance : float >= 0
        Declared with the claim: the intervals are widened by it on both sides.

    Returns
    -------
    Verdict
        ``"consistent"`` if every cell with a finite prediction and interval holds its
        prediction, ``"contradicts"`` if one does not, ``"not tested"`` without such a cell.
        ``numbers``: ``cells`` (compared), ``outside`` (cells whose interval misses the
        prediction), ``worst_cell`` (index of the cell furthest outside, relative to its
        interval's width; ``None`` when none is), ``tolerance``.

    Examples
    --------
    >>> level_verdict("floor", [1.0, 2.0], [0.9, 1.8], [1.1, 2.1]).status
    'consistent'
    >>> v = level_verdict("floor", [1.0, 2.0], [0.9, 2.2], [1.1, 2.4])
    >>> v.status, v.numbers["outside"]
    ('contradicts', 1)
    """
    tolerance = check_real("tolerance", tolerance, low=0.0)
    try:
        p, lo, hi = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (predicted, low, high)))
    except ValueError:
        raise ValueError(f"predicted, low and high must have one shape, got {np.shape(predicted)}, "
                         f"{np.shape(low)} and {np.shape(high)}") from None
    p, lo, hi = p.ravel(), lo.ravel(), hi.ravel()
    ok = np.isfinite(p) & np.isfinite(lo) & np.isfinite(hi)
    outside = ok & ((p < lo - tolerance) | (p > hi + tolerance))
    numbers = dict(cells=int(ok.sum()), outside=int(outside.sum()), worst_cell=None, tolerance=tolerance)
    if not ok.any():
        return Verdict(claim, "not tested", numbers, "no cell has both a finite prediction and a finite interval")
    if not outside.any():
        return Verdict(claim, "consistent", numbers, f"the prediction lies in the interval at all {ok.sum()} cells")
    with np.errstate(divide="ignore", invalid="ignore"):
        miss = np.where(outside, np.maximum(lo - tolerance - p, p - hi - tolerance) / np.maximum(hi - lo, 1e-300),
                        -np.inf)
    worst = int(np.argmax(miss))
    numbers["worst_cell"] = worst
    return Verdict(claim, "contradicts", numbers,
                   f"the prediction lies outside the interval at {outside.sum()} of {ok.sum()} cells (furthest at "
                   f"cell {worst}: {p[worst]:.4g} vs [{lo[worst]:.4g}, {hi[worst]:.4g}])")


def held_out_verdict(claim: str, fit: ExponentFit) -> Verdict:
    """Does a fitted line predict the cells it was not fitted to?

    ``"consistent"`` if every held-out residual interval of ``fit`` (:func:`fit_exponent` with
    ``held_out=``) holds 0, ``"contradicts"`` if one does not, ``"not tested"`` without a
    held-out cell with a finite interval.  ``numbers``: ``cells``, ``outside``, ``worst_x`` (the
    ``x`` of the held-out cell furthest outside, ``None`` when none is) and ``max_abs_residual``
    (``log10``).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> x = np.array([10.0, 20, 40, 80])
    >>> fit = fit_exponent(x, [v ** 0.5 * rng.lognormal(0, 0.05, 40) for v in x], held_out=[80.0], n_boot=300, rng=rng)
    >>> held_out_verdict("error ~ d^1/2 beyond the fitted cells", fit).status
    'consistent'
    """
    if not isinstance(fit, ExponentFit):
        raise TypeError(f"fit must be an ExponentFit (from fit_exponent), got {type(fit).__name__}")
    rows = fit.held_out
    if not rows:
        return Verdict(claim, "not tested", dict(cells=0, outside=0, worst_x=None, max_abs_residual=math.nan),
                       "no cell was held out of the fit")
    verdict = level_verdict(claim, 0.0, [r["residual_low"] for r in rows], [r["residual_high"] for r in rows])
    worst = verdict.numbers["worst_cell"]
    numbers = dict(cells=verdict.numbers["cells"], outside=verdict.numbers["outside"],
                   worst_x=None if worst is None else rows[worst]["x"])
    residuals = np.array([r["residual"] for r in rows], dtype=float)
    numbers["max_abs_residual"] = float(np.nanmax(np.abs(residuals))) if np.isfinite(residuals).any() else math.nan
    why = {"consistent": f"the log10 residual's interval holds 0 at all {numbers['cells']} held-out cells",
           "contradicts": f"the log10 residual's interval misses 0 at {numbers['outside']} of {numbers['cells']} "
                          f"held-out cells (furthest at x = {numbers['worst_x']})",
           "not tested": "no held-out cell has a finite residual interval"}[verdict.status]
    return Verdict(claim, verdict.status, numbers, why)


def claims_table(verdicts: Iterable[Verdict], *, as_frame: bool = False) -> Any:
    """The claims report: one row per verdict (:meth:`Verdict.verdict_row`).

    Parameters
    ----------
    verdicts : sequence of Verdict
    as_frame : bool
        A ``pandas.DataFrame`` instead of a list (pandas must be installed).

    Returns
    -------
    list of dict or pandas.DataFrame
        Every row has every column (``None`` where its verdict has no such number): ``claim``,
        ``status``, the numbers in the order first met, ``why``.

    Examples
    --------
    >>> rows = claims_table([Verdict("a", "consistent", dict(fitted=0.5)), Verdict("b", "not tested", why="one x")])
    >>> [(r["claim"], r["status"], r["fitted"]) for r in rows]
    [('a', 'consistent', 0.5), ('b', 'not tested', None)]
    """
    verdicts = list(verdicts)
    for i, v in enumerate(verdicts):
        if not isinstance(v, Verdict):
            raise TypeError(f"verdicts must be Verdict objects, got verdicts[{i}] = {type(v).__name__}")
    numbers = list(dict.fromkeys(k for v in verdicts for k in v.numbers))
    columns = ["claim", "status", *numbers, "why"]
    rows = [{c: v.verdict_row().get(c) for c in columns} for v in verdicts]
    if not as_frame:
        return rows
    try:
        import pandas
    except ImportError:
        raise ImportError("claims_table(as_frame=True) needs pandas; install it or use the list of dicts") from None
    return pandas.DataFrame(rows, columns=columns)
