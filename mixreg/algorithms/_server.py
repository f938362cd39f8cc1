"""The server's update, one seam shared by the drivers: today the plain step.

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
step, bit for bit today's arithmetic: ``theta - step * grad`` in the model's dtype, and the
proposal itself.  A variant subclasses it and overrides :meth:`~ServerStep.gradient` (and, for
state, :meth:`~ServerStep.start`); the model form then follows as the pseudo-gradient step of
FedOpt (Reddi et al. 2021): :math:`\\theta_t - 1 \\cdot (\\theta_t - \\bar\\theta_t)`, so a
server momentum written once serves both forms (FedAvgM, Hsu et al. 2019, in model form).

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

Which drivers honour it (their ``server_step`` keyword): :func:`mixreg.algorithms.ifca` (both
options), :func:`~mixreg.algorithms.ifca_points`, :func:`~mixreg.algorithms.fedx`,
:func:`~mixreg.algorithms.fesem`, and through the fixed-label trainer
:func:`~mixreg.algorithms.oneshot`, :func:`~mixreg.algorithms.pacfl` and
:func:`~mixreg.algorithms.kfed`.  None of these updates lives in a Numba kernel (the kernels
compute the gradients and the averages, :func:`mixreg.kernels.cluster_gradients` and
:func:`mixreg.kernels.cluster_average`; the step itself is NumPy), so routing them through the
seam keeps every bit.  Not honoured: :func:`~mixreg.algorithms.moment_descent` (Phase 1 moves
each anchor's own estimate along a spectral direction with a step set by the eigenvalue, a
per-anchor power-method update, not an aggregate the server steps along), and the one-shot
methods' exact finish (``finish="exact"``: a closed-form solve, no rounds).

Registering a variant is one call: ``register(with_server_step(get_algorithm("ifca"),
HeavyBall(0.9), name="ifca_momentum"))`` (:func:`mixreg.algorithms.with_server_step`).

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
"""

from __future__ import annotations

__all__ = ["ServerStep", "PLAIN", "check_server_step"]


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

    def start(self, theta):
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

    def gradient(self, theta, grad, step, *, t, state, rows):
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

    def average(self, theta, proposal, *, t, state, rows):
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


def check_server_step(server_step):
    """``server_step`` as a :class:`ServerStep`: ``None`` is :data:`PLAIN`; else ``TypeError``."""
    if server_step is None:
        return PLAIN
    if not isinstance(server_step, ServerStep):
        raise TypeError(f"server_step must be a mixreg ServerStep (mixreg.algorithms.ServerStep), got "
                        f"{type(server_step).__name__}")
    return server_step
