"""The server's update and the step-size schedule of a round: the seam shared by the drivers.

Every driver that trains the ``k`` models round by round ends a round with a *server update*
that turns the current models :math:`\\theta_t` and what the clients sent into proposed models.
It comes in two forms:

* **gradient form** (IFCA option I, point-level IFCA with one local step): the server holds an
  aggregated gradient :math:`g_t` and a step :math:`\\gamma` and proposes
  :math:`\\theta_t - \\gamma g_t` (:meth:`ServerStep.gradient`);
* **model form** (IFCA option II, FedX, FeSEM's M-step, point-level IFCA with local steps and the
  fixed-label FedAvg of one-shot, PACFL and k-FED): the server aggregates the clients' models
  into a proposal :math:`\\bar\\theta_t` and takes it (:meth:`ServerStep.average`).

A :class:`ServerStep` decides what the server does with them.  The base class *is* the plain
step, bit for bit the drivers' arithmetic: ``theta - step * grad`` in the model's dtype, and the
proposal itself.  A variant subclasses it and overrides :meth:`~ServerStep.gradient` (and, for
state, :meth:`~ServerStep.start`); the model form then follows as the pseudo-gradient step of
FedOpt (Reddi et al. 2021): :math:`\\theta_t - 1 \\cdot (\\theta_t - \\bar\\theta_t)`, so a
server momentum written once serves both forms (FedAvgM, Hsu et al. 2019, in model form).  Two
are built in: :class:`HeavyBall` (Polyak's momentum) and :class:`Nesterov` (the look-ahead form).

What a variant gets:

* ``state``: whatever :meth:`~ServerStep.start` returned for the driver's initial parameters
  (shape (B, k, d)), once per run, e.g. a zero velocity of shape (B, k, d) for heavy-ball
  momentum.  It is the variant's to update in place;
* ``rows``: the replicas of the batch that ``theta`` holds, an index into the ``B`` of
  :meth:`~ServerStep.start` (``slice(None)``: all of them).  IFCA drops diverged replicas from
  its products (:data:`mixreg.algorithms.ifca.COMPACT`), so ``theta`` may be a subset of the
  batch: a per-replica state is read and written as ``state[rows]``;
* ``t``: the index of the server update in the run, from 0.  It is the round, except for
  point-level IFCA with ``inner_rounds = tau``, whose round ``t`` makes ``tau`` server updates
  ``t * tau + u``; a step-size schedule :math:`\\gamma_t` reads it.

A replica that diverges is frozen by :class:`mixreg.algorithms.Replicas` after the step; its
state is then never read again.

**Schedules.**  A :class:`Schedule` ``s`` multiplies every replica's step size: at server
update ``t`` replica ``b`` uses :math:`\\gamma_{b,t} = \\gamma_b\\, s(t)` wherever its driver
uses the step (the ``step_size`` argument), computed as ``step_size * s(t)`` in float64 and then
exactly as the driver treats ``step_size``, so a run equals one-round-at-a-time calls with the
scaled steps (for a step without state).  Built in: :class:`Constant` (the default, ``None``:
the drivers then never multiply, today's bits), :class:`InverseTime`
(:math:`\\gamma_0 / (1 + t / t_0)`), :class:`PiecewiseConstant`; any callable of the round is
wrapped by :func:`check_schedule`.  Where each driver uses the step:

* :func:`mixreg.algorithms.ifca`: option I's server step :math:`\\gamma_t / m`; option II's
  ``tau`` local steps of round ``t``;
* :func:`~mixreg.algorithms.fedx` (and Phase 2 of :func:`~mixreg.algorithms.two_phase`): the
  local solver's :math:`\\eta_t` (FedAvg's local step, FedProx's proximal parameter); the
  local-update operators are rebuilt for every new value of the multiplier;
* :func:`~mixreg.algorithms.fesem`: the ``s`` local steps of round ``t`` (a ``"gradient"`` warm
  start, before round 0, uses :math:`\\gamma_b` itself);
* :func:`~mixreg.algorithms.ifca_points`: at server update ``t * tau + u``, the gradient step
  (``s = 1``) or the ``s`` local steps;
* the fixed-label FedAvg of :func:`~mixreg.algorithms.oneshot`, :func:`~mixreg.algorithms.pacfl`
  and :func:`~mixreg.algorithms.kfed`: the local steps of round ``t``.

The model form's server step stays 1 (FedOpt's server learning rate is the momentum's business,
not the schedule's).

Which drivers honour the seam (their ``server_step`` and ``schedule`` keywords):
:func:`mixreg.algorithms.ifca` (both options), :func:`~mixreg.algorithms.ifca_points`,
:func:`~mixreg.algorithms.fedx`, :func:`~mixreg.algorithms.two_phase` (Phase 2),
:func:`~mixreg.algorithms.fesem`, and through the fixed-label trainer
:func:`~mixreg.algorithms.oneshot`, :func:`~mixreg.algorithms.pacfl` and
:func:`~mixreg.algorithms.kfed`.  None of these updates lives in a Numba kernel (the kernels
compute the gradients and the averages, :func:`mixreg.kernels.cluster_gradients` and
:func:`mixreg.kernels.cluster_average`; the step itself is NumPy), so routing them through the
seam keeps every bit.  Not honoured: :func:`~mixreg.algorithms.moment_descent` (Phase 1 moves
each anchor's own estimate along a spectral direction with a step set by the eigenvalue, a
per-anchor power-method update, not an aggregate the server steps along), and the one-shot
methods' exact finish (``finish="exact"``: a closed-form solve, no rounds).

Registering a variant is one call: ``register(variant(get_algorithm("ifca_model"),
server_step=HeavyBall(0.9), schedule=InverseTime(10)))`` (:func:`mixreg.algorithms.variant`).

Examples
--------
>>> theta, grad = np.ones((1, 2, 3)), np.full((1, 2, 3), 0.5)
>>> plain = ServerStep()
>>> plain.gradient(theta, grad, 0.1, t=0, state=plain.start(theta), rows=slice(None))[0, 0]
array([0.95, 0.95, 0.95])
>>> class Doubled(ServerStep):  # a toy variant: twice the step
...     def gradient(self, theta, grad, step, *, t, state, rows):
...         return theta - (2 * step) * grad
>>> Doubled().average(theta, np.zeros((1, 2, 3)), t=0, state=None, rows=slice(None))[0, 0]
array([-1., -1., -1.])
>>> momentum = HeavyBall(0.5)
>>> v = momentum.start(theta)
>>> for t in range(2):  # v = g, then v = 0.5 g + g: theta - 0.1 (g + 1.5 g)
...     theta = momentum.gradient(theta, grad, 0.1, t=t, state=v, rows=slice(None))
>>> theta[0, 0]
array([0.875, 0.875, 0.875])
>>> [InverseTime(10)(t) for t in (0, 10, 30)]
[1.0, 0.5, 0.25]
"""

from __future__ import annotations

import bisect
import math
import numbers
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

__all__ = [
    "ServerStep",
    "HeavyBall",
    "Nesterov",
    "PLAIN",
    "check_server_step",
    "Schedule",
    "Constant",
    "InverseTime",
    "PiecewiseConstant",
    "CONSTANT",
    "check_schedule",
    "is_constant",
    "per_factor",
]


class ServerStep:
    """The server's update of a driver's round; this base class is the plain step.

    Subclass it for a server-side variant (momentum, Nesterov, a step-size schedule): override
    :meth:`gradient`, and :meth:`start` for a state; :meth:`average` then follows (the
    pseudo-gradient form).  See the module docstring for ``t``, ``state`` and ``rows``.

    Attributes
    ----------
    name : str
        Shown in ``repr`` and in a registry entry's options.
    """

    name = "plain"

    def start(self, theta: np.ndarray) -> object:
        """The step's state for a run from ``theta`` (B, k, d); the plain step has none.

        Parameters
        ----------
        theta : ndarray of shape (B, k, d)
            IN: the initial parameters (not to be modified).

        Returns
        -------
        object
            Passed back as ``state`` to every :meth:`gradient` / :meth:`average` of the run.
        """
        return None

    def gradient(self, theta: np.ndarray, grad: np.ndarray, step: np.ndarray | float, *, t: int, state: Any,
                 rows: np.ndarray) -> np.ndarray:
        """The proposed parameters of a gradient-form update: ``theta - step * grad``.

        Parameters
        ----------
        theta : ndarray of shape (B', k, d)
            IN: the current parameters of the replicas ``rows`` (not to be modified).
        grad : ndarray of shape (B', k, d)
            IN: the aggregated gradient, in ``theta``'s dtype.
        step : ndarray broadcastable to (B', k, d) or float
            The driver's step (``gamma / m`` of IFCA option I, ``eta / N_l`` of point-level IFCA),
            in ``theta``'s dtype.
        t : int
            Index of this server update in the run (module docstring).
        state : object
            What :meth:`start` returned.
        rows : index
            The replicas of the batch that ``theta`` holds.

        Returns
        -------
        ndarray of shape (B', k, d)
            New parameters, in ``theta``'s dtype; ``theta`` itself is left as it is.
        """
        return theta - step * grad

    def average(self, theta: np.ndarray, proposal: np.ndarray, *, t: int, state: Any,
                rows: np.ndarray) -> np.ndarray:
        """The parameters after a model-form update whose aggregate is ``proposal``.

        The plain step takes ``proposal`` as it is.  A subclass that overrides only
        :meth:`gradient` gets the pseudo-gradient step ``gradient(theta, theta - proposal, 1)``.

        Parameters
        ----------
        theta : ndarray of shape (B', k, d)
            IN: the current parameters of the replicas ``rows`` (not to be modified).
        proposal : ndarray of shape (B', k, d)
            IN/OUT: the server's aggregate (a model nobody chose keeps its value); may be returned.
        t, state, rows
            As for :meth:`gradient`.

        Returns
        -------
        ndarray of shape (B', k, d)
        """
        if type(self).gradient is ServerStep.gradient:
            return proposal
        return self.gradient(theta, theta - proposal, 1, t=t, state=state, rows=rows)

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


#: The plain step, the drivers' default.
PLAIN = ServerStep()


def check_server_step(server_step: ServerStep | None) -> ServerStep:
    """``server_step`` as a :class:`ServerStep`: ``None`` is :data:`PLAIN`; else ``TypeError``."""
    if server_step is None:
        return PLAIN
    if not isinstance(server_step, ServerStep):
        raise TypeError(f"server_step must be a mixreg ServerStep (mixreg.algorithms.ServerStep), got "
                        f"{type(server_step).__name__}")
    return server_step


def _check_beta(beta):
    """``beta`` as a float in [0, 1); one-line ``ValueError`` / ``TypeError`` otherwise."""
    if isinstance(beta, bool) or not isinstance(beta, numbers.Real):
        raise TypeError(f"beta must be a real number in [0, 1), got {type(beta).__name__}")
    beta = float(beta)
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"beta must be in [0, 1), got {beta!r}")
    return beta


class HeavyBall(ServerStep):
    r"""Polyak's heavy-ball server momentum (FedAvgM in the model form).

    .. math::

        v_{t+1} = \beta v_t + g_t, \qquad \theta_{t+1} = \theta_t - \gamma_t v_{t+1},
        \qquad v_0 = 0,

    with :math:`g_t` the driver's aggregated gradient and :math:`\gamma_t` its step (gradient
    form), or the pseudo-gradient :math:`g_t = \theta_t - \bar\theta_t` and :math:`\gamma_t = 1`
    (model form: FedAvgM, Hsu, Qi, Brown 2019, Algorithm 1, with server learning rate 1).  One
    velocity per replica and model, in the models' dtype.  ``beta = 0`` is the plain step, with
    its arithmetic (bit for bit).

    Parameters
    ----------
    beta : float in [0, 1)
        The momentum.

    Examples
    --------
    >>> theta = np.zeros((1, 1, 2))
    >>> step = HeavyBall(0.9)
    >>> v = step.start(theta)
    >>> for t in range(3):  # the proposal 1 each round: the pseudo-gradient is theta - 1
    ...     theta = step.average(theta, theta + 1.0, t=t, state=v, rows=slice(None))
    >>> theta[0, 0].round(6).tolist()  # 1 + 1.9 + 2.71
    [5.61, 5.61]
    """

    def __init__(self, beta: float) -> None:
        self.beta = _check_beta(beta)

    @property
    def name(self) -> str:  # type: ignore[override]
        """``"heavy_ball_<beta>"``."""
        return f"heavy_ball_{self.beta:g}"

    def start(self, theta: np.ndarray) -> object:
        """A zero velocity shaped and typed like ``theta`` (B, k, d); none when ``beta = 0``."""
        return None if self.beta == 0 else np.zeros_like(theta)

    def gradient(self, theta: np.ndarray, grad: np.ndarray, step: np.ndarray | float, *, t: int, state: Any,
                 rows: np.ndarray) -> np.ndarray:
        """:math:`v \\leftarrow \\beta v + g`, then ``theta - step * v`` (see :class:`HeavyBall`)."""
        if self.beta == 0:
            return theta - step * grad
        v = self.beta * state[rows] + grad
        state[rows] = v
        return theta - step * v

    def average(self, theta: np.ndarray, proposal: np.ndarray, *, t: int, state: Any,
                rows: np.ndarray) -> np.ndarray:
        """The pseudo-gradient step ``gradient(theta, theta - proposal, 1)``; the proposal itself
        when ``beta = 0``."""
        if self.beta == 0:
            return proposal
        return self.gradient(theta, theta - proposal, 1, t=t, state=state, rows=rows)

    def __repr__(self):
        return f"HeavyBall(beta={self.beta!r})"


class Nesterov(HeavyBall):
    r"""Nesterov's accelerated server momentum, with the gradient at the current point.

    .. math::

        v_{t+1} = \beta v_t + g_t, \qquad
        \theta_{t+1} = \theta_t - \gamma_t \left(g_t + \beta v_{t+1}\right), \qquad v_0 = 0,

    the look-ahead form of Sutskever et al. (2013) rewritten at the current iterate (as
    PyTorch's ``SGD(nesterov=True)`` and optax's ``sgd(nesterov=True)``); model form as for
    :class:`HeavyBall`.  ``beta = 0`` is the plain step, bit for bit.

    Parameters
    ----------
    beta : float in [0, 1)
        The momentum.

    Examples
    --------
    >>> theta, grad = np.zeros((1, 1, 1)), np.ones((1, 1, 1))
    >>> step = Nesterov(0.5)
    >>> v = step.start(theta)
    >>> [float(step.gradient(theta, grad, 1.0, t=t, state=v, rows=slice(None))[0, 0, 0]) for t in range(2)]
    [-1.5, -1.75]
    """

    @property
    def name(self) -> str:  # type: ignore[override]
        """``"nesterov_<beta>"``."""
        return f"nesterov_{self.beta:g}"

    def gradient(self, theta: np.ndarray, grad: np.ndarray, step: np.ndarray | float, *, t: int, state: Any,
                 rows: np.ndarray) -> np.ndarray:
        """:math:`v \\leftarrow \\beta v + g`, then ``theta - step * (g + beta v)`` (see
        :class:`Nesterov`)."""
        if self.beta == 0:
            return theta - step * grad
        v = self.beta * state[rows] + grad
        state[rows] = v
        return theta - step * (grad + self.beta * v)

    def __repr__(self):
        return f"Nesterov(beta={self.beta!r})"


# --------------------------------------------------------------------------------------------
# Step-size schedules
# --------------------------------------------------------------------------------------------


class Schedule:
    """A step-size schedule: ``schedule(t)`` multiplies every replica's step at server update ``t``.

    Subclass it and define :meth:`__call__` (and a :attr:`name`); or pass any callable of the
    round to a driver, which wraps it with :func:`check_schedule`.  A driver reads the value
    through :meth:`factor`, which checks it.  See the module docstring for where each driver
    uses the step.

    Attributes
    ----------
    name : str
        Shown in ``repr`` and in a registry entry's options.
    """

    name = "schedule"

    def __call__(self, t: int) -> float:
        """The multiplier (a float, finite and > 0) of the step sizes at server update ``t`` (int >= 0)."""
        raise NotImplementedError(f"{type(self).__name__} must define __call__(t)")

    def factor(self, t: int) -> float:
        """``self(t)`` as a float, checked finite and > 0; ``ValueError`` naming the schedule and ``t``."""
        value = self(t)
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"schedule {self.name!r} must return a real number at server update t={t}, got "
                             f"{type(value).__name__}") from None
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"schedule {self.name!r} must return a finite multiplier > 0, got {value!r} at server "
                             f"update t={t}")
        return value

    def __repr__(self):
        return f"{type(self).__name__}({self.name!r})"


class Constant(Schedule):
    """The constant schedule, 1 at every round: the drivers' default, which they never multiply by.

    Examples
    --------
    >>> Constant()(100)
    1.0
    """

    name = "constant"

    def __call__(self, t: int) -> float:
        return 1.0

    def __repr__(self):
        return "Constant()"


class InverseTime(Schedule):
    r"""The inverse-time decay :math:`\gamma_t = \gamma_0 / (1 + t / t_0)`: the multiplier
    :math:`1 / (1 + t / t_0)`, halved at :math:`t = t_0` (the Robbins-Monro rate
    :math:`\gamma_t \propto 1/t` for large ``t``).

    Parameters
    ----------
    t0 : float > 0
        The server update at which the step has halved.

    Examples
    --------
    >>> s = InverseTime(4)
    >>> s.name, [s(t) for t in (0, 4, 12)]
    ('inverse_time_4', [1.0, 0.5, 0.25])
    """

    def __init__(self, t0: float) -> None:
        if isinstance(t0, bool) or not isinstance(t0, numbers.Real):
            raise TypeError(f"t0 must be a real number > 0, got {type(t0).__name__}")
        if not (math.isfinite(t0) and t0 > 0):
            raise ValueError(f"t0 must be finite and > 0, got {t0!r}")
        self.t0: float = float(t0)

    @property
    def name(self) -> str:  # type: ignore[override]
        """``"inverse_time_<t0>"``."""
        return f"inverse_time_{self.t0:g}"

    def __call__(self, t: int) -> float:
        return 1.0 / (1.0 + t / self.t0)

    def __repr__(self):
        return f"InverseTime(t0={self.t0:g})"


class PiecewiseConstant(Schedule):
    """A piecewise-constant multiplier: ``factors[j]`` from server update ``boundaries[j - 1]`` on.

    ``factors[0]`` applies for ``t < boundaries[0]``, ``factors[j]`` for
    ``boundaries[j - 1] <= t < boundaries[j]`` and ``factors[-1]`` from ``boundaries[-1]`` on
    (optax's ``piecewise_constant_schedule`` with absolute rather than cumulative factors).

    Parameters
    ----------
    boundaries : sequence of int >= 1, strictly increasing
    factors : sequence of float > 0, finite, of length ``len(boundaries) + 1``

    Examples
    --------
    >>> s = PiecewiseConstant([10, 20], [1.0, 0.1, 0.01])
    >>> [s(t) for t in (0, 9, 10, 19, 20, 1000)]
    [1.0, 1.0, 0.1, 0.1, 0.01, 0.01]
    """

    name = "piecewise_constant"

    def __init__(self, boundaries: Iterable[int], factors: Iterable[float]) -> None:
        boundaries, factors = list(boundaries), list(factors)
        if not all(isinstance(b, numbers.Integral) and not isinstance(b, bool) and b >= 1 for b in boundaries):
            raise ValueError(f"boundaries must be integers >= 1 (server updates), got {boundaries!r}")
        if any(b >= c for b, c in zip(boundaries, boundaries[1:])):
            raise ValueError(f"boundaries must be strictly increasing, got {boundaries!r}")
        if len(factors) != len(boundaries) + 1:
            raise ValueError(f"factors must have len(boundaries) + 1 = {len(boundaries) + 1} values, got "
                             f"{len(factors)}")
        if not all(isinstance(f, numbers.Real) and math.isfinite(f) and f > 0 for f in factors):
            raise ValueError(f"factors must be finite and > 0, got {factors!r}")
        self.boundaries = tuple(int(b) for b in boundaries)
        self.factors = tuple(float(f) for f in factors)

    def __call__(self, t: int) -> float:
        return self.factors[bisect.bisect_right(self.boundaries, t)]

    def __repr__(self):
        return f"PiecewiseConstant(boundaries={list(self.boundaries)}, factors={list(self.factors)})"


class _Callable(Schedule):
    """A user's callable of the round as a :class:`Schedule` (its values checked by :meth:`factor`)."""

    def __init__(self, function):
        self.function = function
        given = getattr(function, "__name__", "")
        self.name = given if given.isidentifier() else "callable"

    def __call__(self, t: int) -> float:
        return self.function(t)

    def __repr__(self):
        return f"check_schedule({self.function!r})"


#: The constant schedule, the drivers' default.
CONSTANT = Constant()


def check_schedule(schedule: Schedule | Callable[[int], float] | None) -> Schedule:
    """``schedule`` as a :class:`Schedule`: ``None`` is a :class:`Constant` (of 1), a
    :class:`Schedule` is kept, any other callable of the server update ``t`` is wrapped (its
    values are checked finite and > 0 when a driver reads them, :meth:`Schedule.factor`); else
    ``TypeError``.

    Examples
    --------
    >>> check_schedule(None)
    Constant()
    >>> def halving(t):
    ...     return 0.5 ** (t // 100)
    >>> s = check_schedule(halving)
    >>> s.name, s.factor(250)
    ('halving', 0.25)
    """
    if schedule is None:
        return CONSTANT
    if isinstance(schedule, Schedule):
        return schedule
    if callable(schedule):
        return _Callable(schedule)
    raise TypeError(f"schedule must be a mixreg Schedule or a callable of the server update t, got "
                    f"{type(schedule).__name__}")


def is_constant(schedule: Schedule) -> bool:
    """The schedule is :class:`Constant`: a driver then keeps its step as it is (no multiplication)."""
    return isinstance(schedule, Constant)


def per_factor(schedule: Schedule, build: Callable[[float], Any], keep: int = 4) -> Callable[[int], Any]:
    """``operators(t) = build(schedule.factor(t))`` with the last ``keep`` builds kept by value.

    For a driver whose step enters a precomputed operator (FedX, the fixed-label FedAvg): a
    piecewise-constant schedule builds each piece's operators once, a decaying one every round.
    """
    kept: dict[float, Any] = {}

    def operators(t):
        f = schedule.factor(t)
        if f not in kept:
            if len(kept) >= keep:
                kept.pop(next(iter(kept)))
            kept[f] = build(f)
        return kept[f]

    return operators
