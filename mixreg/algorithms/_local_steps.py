"""The local gradient steps of the drivers that train one local model per client and column.

FeSEM's Local_update (Xie et al. 2020, Algorithm 2), point-level IFCA's ModelUpdate (the IFCA
thesis, Algorithm 5) and IFCA's option II with resampling (its ``tau`` local steps, Algorithm 2
of the arXiv text; without resampling it unrolls them, :class:`mixreg.kernels.LocalStepGrams`)
all run ``s`` full-batch gradient steps of many local models at once: a model per client
and *column*, a column being a replica (FeSEM, IFCA) or a (replica, model) pair (point-level
IFCA).  The loop is the same; what differs is which rows a step uses and how they are weighted,
and that is the caller's ``residuals``: all of client ``i``'s rows with weight :math:`1/n_i`
(FeSEM, IFCA), or only the rows of the sub-client :math:`S_{i,l}` with weight
:math:`1/|S_{i,l}|` (point-level IFCA).  :func:`mixreg.local_solvers.gradient_steps` is the same
update for one model per client, with validation.
"""

from __future__ import annotations

import numpy as np

from .. import kernels

__all__ = ["local_gradient_steps"]


def local_gradient_steps(local, X, layout, step, n_steps, residuals, R, G, XT=None, predicted=False):
    r"""``n_steps`` full-batch gradient steps of every client's local models, in place on ``local``.

    For client ``i`` and column ``c``, with :math:`\eta_c` the column's step size:

    .. math::

        w_{i,c} \leftarrow w_{i,c} - \eta_c X_i^\top r_{i,c}, \qquad
        r_{i,c} = \operatorname{residuals}(X_i w_{i,c}),

    where ``residuals`` turns the predictions into the gradient weights of the rows, e.g.
    :math:`(X_i w - y_i) / n_i` for the gradient of :math:`\frac{1}{2 n_i}\lVert X_i w -
    y_i\rVert^2`, with 0 on the rows the local loss leaves out.  Each step costs a prediction and
    a gradient pass, ``4 C N d`` flops (:func:`mixreg.kernels.client_predictions`,
    :func:`mixreg.kernels.client_gradients`).  Inputs are trusted.

    Parameters
    ----------
    local : ndarray of shape (m, C, d)
        IN/OUT: the local models, client-major; diverging models become non-finite silently.
    X : ndarray of shape (N, d)
    layout : mixreg.kernels.ClientLayout
        The clients' rows, for ``C`` columns.
    step : ndarray broadcastable to (m, C, d)
        :math:`\eta_c`, e.g. of shape ``(1, C, 1)``, in ``local``'s dtype.
    n_steps : int >= 0
        ``s``.
    residuals : callable
        ``residuals(R)`` rewrites, in place, the client-major predictions ``R`` (client ``i``'s
        block ``(C, n_i)`` at ``C * offsets[i]``) into the gradient weights of the rows.
    R : ndarray of shape (C * N,)
        Buffer of the predictions, then the weights.
    G : ndarray of shape (m, C, d)
        Buffer of the per-client gradients :math:`X_i^\top r_{i,c}`.
    XT : ndarray of shape (N d,), optional
        :func:`mixreg.kernels.client_transposed` of ``X``: the predictions' faster form, which
        rounds otherwise (:func:`mixreg.kernels.client_predictions`).
    predicted : bool
        ``R`` already holds the first step's predictions of ``local`` (FeSEM makes them first to
        keep a copy for its next objective; or gathered from a round's predictions of every
        model, :func:`mixreg.kernels.gather_predictions`): the first step skips its prediction.

    Examples
    --------
    >>> from mixreg.kernels import ClientLayout, selected_residuals
    >>> from mixreg.local_solvers import gradient_steps
    >>> rng = np.random.default_rng(0)
    >>> X, y, offsets = rng.standard_normal((7, 3)), rng.standard_normal(7), np.array([0, 2, 7])
    >>> local = np.zeros((2, 1, 3))  # two clients, one column
    >>> inv_sizes, everyone = 1.0 / np.diff(offsets), np.zeros((1, 2), dtype=np.int64)
    >>> def per_client_loss(R):  # (X_i w - y_i) / n_i on every row
    ...     selected_residuals(R, y, offsets, everyone, inv_sizes, R)
    >>> local_gradient_steps(local, X, ClientLayout(offsets, 3, 1), 0.1, 4, per_client_loss,
    ...                      np.empty(7), np.empty((2, 1, 3)))
    >>> bool(np.allclose(local[:, 0], gradient_steps(X, y, offsets, np.zeros(3), 0.1, 4)))
    True
    """
    per_column = None  # a step per column that keeps G's dtype in step * G: one pass, the same bits
    if n_steps > 0 and np.result_type(step, G) == G.dtype and np.ndim(step) == 3 and np.shape(step)[::2] == (1, 1):
        per_column = np.ascontiguousarray(np.broadcast_to(np.asarray(step), (1, local.shape[1], 1)).ravel())
    for step_index in range(n_steps):
        if step_index or not predicted:
            kernels.client_predictions(local, X, layout, R, XT)
        residuals(R)
        kernels.client_gradients(R, X, layout, G)
        if per_column is not None:
            kernels.column_step(local, per_column, G)
        else:
            local -= step * G
