"""The registry of algorithms: what the contract test suite and the experiments iterate over.

Every entry names a *replica driver*: a function

    run(problem, init, step_size, *, n_rounds, rng=None, tol=None, history=False) -> DriverResult

that runs ``B`` replicas (``init`` of shape (B, k, d), one step size each) on one problem and
returns a result with the common fields of :class:`mixreg.algorithms.DriverResult`.  Entries
adapt the drivers' own keyword arguments (IFCA's option, FedX's local solver) to that signature.
Registering an algorithm puts it under the contract suite (``tests/algorithms/test_algorithms_contract.py``):
batching, divergence, bad input and determinism are then checked for it with no new test code;
:func:`mixreg.algorithms.check_algorithm` runs the same checks on an entry before it is registered.

A driver that takes a ``server_step`` (:class:`mixreg.algorithms.ServerStep`, the server's
update) or a ``schedule`` (:class:`mixreg.algorithms.Schedule`, the step size's multiplier by
round) gets a variant as one more entry, under the contract suite like any other:
``register(variant(get_algorithm("ifca_model"), server_step=HeavyBall(0.9), schedule=InverseTime(10)))``.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ._server import Schedule, ServerStep, check_schedule, check_server_step

if TYPE_CHECKING:
    from ..problems import Problem

__all__ = ["Algorithm", "ALGORITHMS", "Unmet", "register", "get_algorithm", "unmet_precondition",
           "variant", "with_server_step", "registered_by", "builtin_algorithms"]


@dataclass(frozen=True, kw_only=True)
class Algorithm:
    """One registered algorithm.

    Attributes
    ----------
    name : str
        Registry key (also its name in tables and figures).
    run : callable
        The replica driver::

            run(problem, init, step_size, *, n_rounds, rng=None, tol=None, history=False)

        ``problem`` a :class:`mixreg.problems.Problem`, ``init`` of shape (B, k, d) or (k, d)
        (never modified), ``step_size`` a float or an array of shape (B,), ``rng`` a
        :class:`numpy.random.Generator` (ignored if ``uses_rng`` is false); it returns a frozen
        :class:`mixreg.algorithms.DriverResult` (see "Writing your own driver" in
        :mod:`mixreg.algorithms`).  It may take more keywords (``blowup``, ``server_step``,
        ``schedule``, ...); a bare driver function whose signature is this one is an entry's
        ``run`` as it is: ``Algorithm(name="mine", run=my_driver, source=..., sends=...)``;
        check it with :func:`mixreg.algorithms.check_algorithm` before :func:`register`.
    source : str
        The paper and algorithm box it implements.
    sends : str
        What a client sends the server per round (the protocol's communication).
    uses_rng : bool
        The driver draws random numbers (it then needs ``rng``; the same Generator state must
        give the same result).
    options : dict
        The driver keyword arguments this entry fixes (documentation; already bound in ``run``).
    communication : callable, optional
        ``communication(problem, result, replica) -> (upload, download)``: the floats an average
        client sends to the server and receives from it in replica ``replica`` of the run
        ``result`` (its ``n_rounds`` rounds, its ``k`` models and, for the point-level methods,
        its estimated point labels), counted from the protocol in :attr:`sends` (an index or a
        count is one float).  ``None`` when not stated.
    precondition : callable, optional
        ``precondition(d=, k=, n_min=) -> Unmet or None``: what this entry's fixed options
        require of a problem's dimension ``d``, clusters ``k`` and smallest client size
        ``n_min`` (the driver raises ``ValueError`` on such a problem).  A comparison checks it
        before running the method and records the refusal (:func:`unmet_precondition`); ``None``:
        no requirement beyond a valid problem.
    base : str, optional
        The registered entry this one is a :func:`variant` of (its server step or schedule
        changed), e.g. ``"ifca_model"``; ``None`` for an entry of its own.  The contract checks
        (:func:`mixreg.algorithms.check_algorithm`) use the base's settings for a variant.
    """

    name: str
    run: Callable
    source: str
    sends: str
    uses_rng: bool = False
    options: dict = field(default_factory=dict)
    communication: Callable | None = None
    precondition: Callable | None = None
    base: str | None = None

    @property
    def takes_server_step(self) -> bool:
        """The driver takes a ``server_step`` keyword (:class:`mixreg.algorithms.ServerStep`) that
        this entry leaves free, so :func:`variant` can set it."""
        return self._leaves_free("server_step")

    @property
    def takes_schedule(self) -> bool:
        """The driver takes a ``schedule`` keyword (:class:`mixreg.algorithms.Schedule`) that this
        entry leaves free, so :func:`variant` can set it."""
        return self._leaves_free("schedule")

    def _leaves_free(self, keyword):
        params = inspect.signature(self.run).parameters  # follows _bind's __wrapped__ to the driver
        return keyword in params and keyword not in self.options


@dataclass(frozen=True)
class Unmet:
    """A requirement of a method's settings that a problem's sizes do not meet.

    Attributes
    ----------
    size : {"d", "k", "n_min"}
        The size that falls short: the dimension, the clusters or the smallest client size.
    value : int
        Its value in the problem.
    needs : str
        The requirement and why, e.g. ``"d >= 4 for p = 3 signature vectors"``.
    """

    size: str
    value: int
    needs: str

    def __str__(self):
        return f"needs {self.needs}; got {_SIZE_NAMES[self.size]} = {self.value}"


_SIZE_NAMES = {"d": "d", "k": "k", "n_min": "min n_i"}


def unmet_precondition(name: str, *, d: int, k: int, n_min: int) -> Unmet | None:
    """The :class:`Unmet` requirement of algorithm ``name`` on a problem of dimension ``d``, ``k``
    clusters and smallest client size ``n_min``, or ``None`` when it can run (or states none)."""
    check = get_algorithm(name).precondition
    return None if check is None else check(d=int(d), k=int(k), n_min=int(n_min))


ALGORITHMS: dict[str, Algorithm] = {}
# the module whose code called register() for each entry: what a worker process imports to get it
_REGISTERED_BY: dict[str, str] = {}
_BUILTIN: frozenset = frozenset()


def register(algorithm: Algorithm, *, module: str | None = None) -> Algorithm:
    """Add ``algorithm`` (an :class:`Algorithm`) to :data:`ALGORITHMS`; its name must be new.

    Parameters
    ----------
    algorithm : Algorithm
    module : str, optional
        The module that registers it (default: the caller's ``__name__``), recorded by
        :func:`registered_by`.  A Monte Carlo sweep that runs the entry on worker processes
        (:func:`mixreg.montecarlo.run_sweep` with ``jobs > 1`` or Dask) imports that module on
        every worker before its first trial, and, for an entry registered in a script
        (``__main__``), ships the entry itself; see :attr:`mixreg.montecarlo.Sweep.algorithms`.
    """
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"algorithm must be an Algorithm, got {type(algorithm).__name__}")
    if algorithm.name in ALGORITHMS:
        raise ValueError(f"an algorithm named {algorithm.name!r} is already registered")
    if module is None:
        module = sys._getframe(1).f_globals.get("__name__", "__main__")
    ALGORITHMS[algorithm.name] = algorithm
    _REGISTERED_BY[algorithm.name] = str(module)
    return algorithm


def registered_by(name: str) -> str:
    """The module that registered algorithm ``name`` (``"__main__"`` for a script's entry).

    Raises ``ValueError`` listing the names for an unknown ``name`` (as :func:`get_algorithm`).
    """
    get_algorithm(name)
    return _REGISTERED_BY[name]


def builtin_algorithms() -> frozenset:
    """The names of the entries this package registers itself on import (a frozenset): the rest
    of :data:`ALGORITHMS` was registered by a user's code."""
    return _BUILTIN


def get_algorithm(name: str) -> Algorithm:
    """The registered :class:`Algorithm` called ``name``; ``ValueError`` listing the names otherwise."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; registered: {', '.join(sorted(ALGORITHMS))}") from None


def variant(algorithm: Algorithm, *, server_step: ServerStep | None = None,
            schedule: Schedule | Callable[[int], float] | None = None, name: str | None = None) -> Algorithm:
    """``algorithm`` (an :class:`Algorithm`) with its server update and/or step-size schedule set.

    The new entry runs the same driver with ``server_step=`` and/or ``schedule=`` fixed and keeps
    the rest of the entry (source, protocol, communication, precondition); its ``options``
    record their names.  Register it with :func:`register`; the contract suite then checks it.

    Parameters
    ----------
    algorithm : Algorithm
        An entry whose driver takes the keyword(s) given and does not fix them
        (:attr:`Algorithm.takes_server_step`, :attr:`Algorithm.takes_schedule`).
    server_step : mixreg.algorithms.ServerStep, optional
        E.g. :class:`~mixreg.algorithms.HeavyBall` or :class:`~mixreg.algorithms.Nesterov`.
    schedule : mixreg.algorithms.Schedule or callable, optional
        E.g. :class:`~mixreg.algorithms.InverseTime`; a callable of the round is wrapped
        (:func:`mixreg.algorithms.check_schedule`).
    name : str, optional
        The new entry's name; default ``"<algorithm.name>_<server_step.name>_<schedule.name>"``
        (the parts given).

    Returns
    -------
    Algorithm

    Raises
    ------
    ValueError
        Neither ``server_step`` nor ``schedule`` given, or the entry does not leave one of them free.

    Examples
    --------
    >>> from mixreg.algorithms import HeavyBall, InverseTime, get_algorithm
    >>> entry = variant(get_algorithm("ifca_model"), server_step=HeavyBall(0.9), schedule=InverseTime(10))
    >>> entry.name
    'ifca_model_heavy_ball_0.9_inverse_time_10'
    >>> entry.options
    {'option': 'model', 'local_steps': 2, 'server_step': 'heavy_ball_0.9', 'schedule': 'inverse_time_10'}
    """
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"algorithm must be an Algorithm, got {type(algorithm).__name__}")
    if server_step is None and schedule is None:
        raise ValueError(f"variant of {algorithm.name!r} needs a server_step or a schedule, got neither")
    fixed: dict[str, ServerStep | Schedule] = {}
    if server_step is not None:
        fixed["server_step"] = check_server_step(server_step)
    if schedule is not None:
        fixed["schedule"] = check_schedule(schedule)
    for keyword in fixed:
        if not algorithm._leaves_free(keyword):
            raise ValueError(f"algorithm {algorithm.name!r} takes no {keyword} (its driver has none, or the entry "
                             f"fixes it)")
    run = algorithm.run

    @functools.wraps(run)
    def varied(problem, init, step_size, **kwargs):
        return run(problem, init, step_size, **fixed, **kwargs)

    names = {keyword: value.name for keyword, value in fixed.items()}
    return dataclasses.replace(algorithm, name=name or "_".join([algorithm.name, *names.values()]), run=varied,
                               options={**algorithm.options, **names}, base=algorithm.base or algorithm.name)


def with_server_step(algorithm: Algorithm, server_step: ServerStep, *, name: str | None = None) -> Algorithm:
    """``algorithm`` with its server update replaced by ``server_step``:
    ``variant(algorithm, server_step=server_step, name=name)`` (:func:`variant`).

    Parameters
    ----------
    algorithm : Algorithm
        An entry whose driver takes a server step it leaves free (:attr:`Algorithm.takes_server_step`).
    server_step : mixreg.algorithms.ServerStep or None
        ``None`` is the plain step (``ServerStep()``).
    name : str, optional
        The new entry's name; default ``"<algorithm.name>_<server_step.name>"``.

    Returns
    -------
    Algorithm

    Examples
    --------
    >>> from mixreg.algorithms import ServerStep, get_algorithm
    >>> class Mine(ServerStep):  # the plain step under another name
    ...     name = "mine"
    >>> with_server_step(get_algorithm("fedavg"), Mine()).options
    {'local_solver': 'fedavg', 'local_steps': 2, 'server_step': 'mine'}
    """
    if not isinstance(algorithm, Algorithm):
        raise TypeError(f"algorithm must be an Algorithm, got {type(algorithm).__name__}")
    return variant(algorithm, server_step=check_server_step(server_step), name=name)


def _bind(driver, *, uses_rng, **options):
    """``driver`` with ``options`` fixed, taking (and, if it draws nothing, ignoring) ``rng``."""

    @functools.wraps(driver)
    def run(problem, init, step_size, *, rng=None, **kwargs):
        if uses_rng:
            kwargs["rng"] = rng
        return driver(problem, init, step_size, **options, **kwargs)

    return run


def per_round(upload: Callable[[Problem, int], float], download: Callable[[Problem, int], float]) -> Callable:
    """A :attr:`Algorithm.communication` for a protocol that moves the same floats every round:
    ``upload(problem, k)`` and ``download(problem, k)`` floats per client per round."""

    def communication(problem, result, replica):
        k, n_rounds = result.theta.shape[1], result.n_rounds
        return float(upload(problem, k)) * n_rounds, float(download(problem, k)) * n_rounds

    return communication


#: IFCA and FedX: the server broadcasts k models; a client sends its identity and one d-vector.
_K_MODELS_DOWN_ONE_UP = per_round(lambda pb, k: pb.d + 1, lambda pb, k: k * pb.d)


def register_builtin():
    """Register the drivers of this package (called once on import)."""
    from .fedx import fedx
    from .ifca import ifca

    register(Algorithm(
        name="ifca", run=_bind(ifca, uses_rng=True, option="gradient"), uses_rng=True, options={"option": "gradient"},
        communication=_K_MODELS_DOWN_ONE_UP,
        source="Ghosh et al. 2020, Algorithm 2 (arXiv) / Algorithm 1 (NeurIPS), option I",
        sends="its identity (the argmin of its k local losses) and one d-vector gradient; receives k models"))
    register(Algorithm(
        name="ifca_data", run=_bind(ifca, uses_rng=True, option="gradient", aggregation="data"), uses_rng=True,
        options={"option": "gradient", "aggregation": "data"}, communication=per_round(
            lambda pb, k: pb.d + 2, lambda pb, k: k * pb.d),
        source="Ghosh et al. 2020, Algorithm 2, option I with data-proportional weights n_i / N (a control)",
        sends="its identity, one d-vector gradient and n_i; receives k models"))
    register(Algorithm(
        name="ifca_model", run=_bind(ifca, uses_rng=True, option="model", local_steps=2), uses_rng=True,
        options={"option": "model", "local_steps": 2}, communication=_K_MODELS_DOWN_ONE_UP,
        source="Ghosh et al. 2020, Algorithm 2 (arXiv), option II (model averaging, tau local steps)",
        sends="its identity and one d-vector local model; receives k models"))
    register(Algorithm(
        name="fedavg", run=_bind(fedx, uses_rng=False, local_solver="fedavg", local_steps=2),
        options={"local_solver": "fedavg", "local_steps": 2}, communication=_K_MODELS_DOWN_ONE_UP,
        source="Su, Xu, Yang 2022, Phase 2 (slides 'FedX + Clustering in Action'), FedAvg(s)",
        sends="its decoded label and one d-vector local model; receives k models"))
    register(Algorithm(
        name="fedprox", run=_bind(fedx, uses_rng=False, local_solver="fedprox"), options={"local_solver": "fedprox"},
        communication=_K_MODELS_DOWN_ONE_UP,
        source="Su, Xu, Yang 2022, Phase 2 (slides 'FedX + Clustering in Action'), FedProx",
        sends="its decoded label and one d-vector local model; receives k models"))

    # the seed papers' other methods, then the composed two-phase method: each module lists its own
    # entries in ``registrations()``
    for module in SEED_METHOD_MODULES + COMPOSED_METHOD_MODULES:
        for algorithm in importlib.import_module(f".{module}", __package__).registrations():
            register(algorithm)
    global _BUILTIN
    _BUILTIN = frozenset(ALGORITHMS)


#: Modules of the seed papers' other methods (one-shot, FeSEM, PACFL, and on clients that mix
#: clusters, point-level IFCA and k-FED), registered after the built-in drivers.
SEED_METHOD_MODULES = ("oneshot", "fesem", "pacfl", "ifca_points", "kfed")
#: Modules of methods composed of registered drivers (Su-Xu-Yang's Phase 1 then Phase 2),
#: registered last.
COMPOSED_METHOD_MODULES = ("two_phase",)
