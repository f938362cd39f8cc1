"""Su, Xu and Yang's final-error bound along one-dimensional sweeps, and its constant held out.

The global theorem bounds the final error by :math:`\\nu \\log(1/\\nu) / p_{min}` up to a
universal constant (:func:`mixreg.theory.sxy_phase2_fixed_point`).  Along a sweep that moves one
quantity ``x`` and holds the rest, the bound predicts the exponent of the final error in ``x``;
:func:`sxy_axis_exponent` computes it from the cells' own :math:`\\nu` and :math:`p_{min}` (unit
constants ``C3 = C4 = 1`` inside :math:`\\nu`, see :func:`mixreg.theory.sxy_nu_terms`).

A level constant ``C`` in ``error = C * bound`` is never read off the cells it is drawn on:
:func:`mixreg.theory.leave_group_out_constant` fits it on the cells *outside* a group (a sweep)
and returns the residual on the group's own cells, which is then an honest test of the bound's
level there.
"""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike

__all__ = ["sxy_bound_shape", "sxy_axis_exponent"]


def sxy_bound_shape(nu: ArrayLike, p_min: ArrayLike, *, log_factor: bool = False) -> np.ndarray:
    r"""The shape of the global theorem's final error, without its constant.

    .. math::

        b = \frac{\nu}{p_{min}} \quad\text{or, with ``log_factor``,}\quad
        b = \frac{\nu \log(1/\nu)}{p_{min}} .

    The log factor is slowly varying and its size depends on the unknown constants inside
    :math:`\nu`; with unit constants :math:`\nu` is of order 0.1-0.5, where
    :math:`\nu \log(1/\nu)` is far from linear in :math:`\nu` (it peaks at :math:`1/e`), so the
    default leaves it out and :func:`sxy_axis_exponent` reports both.

    Parameters
    ----------
    nu : array_like, > 0
    p_min : array_like in (0, 1]
    log_factor : bool

    Returns
    -------
    ndarray
        ``nan`` where ``nu >= 1`` with ``log_factor`` (the theorem says nothing there).
    """
    nu = np.asarray(nu, dtype=np.float64)
    p = np.asarray(p_min, dtype=np.float64)
    if np.any(~np.isfinite(nu)) or np.any(nu <= 0):
        raise ValueError(f"nu must be finite and > 0, got {nu.tolist()}")
    if np.any(~np.isfinite(p)) or np.any(p <= 0) or np.any(p > 1):
        raise ValueError(f"p_min must be in (0, 1], got {p.tolist()}")
    if not log_factor:
        return nu / p
    with np.errstate(invalid="ignore"):
        return np.where(nu < 1, nu * np.log(1.0 / np.minimum(nu, 1.0)), np.nan) / p


def sxy_axis_exponent(x: ArrayLike, nu: ArrayLike, p_min: ArrayLike, *, log_x: bool = True,
                      log_factor: bool = False) -> float:
    r"""The exponent of the theorem's final error along a sweep: the least-squares slope of
    :math:`\log b` on :math:`\log x` (or on ``x``), with :math:`b` of :func:`sxy_bound_shape`.

    It is what the bound predicts for the fitted slope of the final error along the same sweep
    (:func:`mixreg.stats.fit_slope`), computed in advance from the cells' sizes: e.g. ``-1/2``
    along ``M`` when only the uniform-deviation term moves, ``-1`` along :math:`p_{min}` at fixed
    :math:`\nu`.

    Parameters
    ----------
    x : array_like of shape (G,)
        The sweep's values (> 0 when ``log_x``).
    nu, p_min : array_like of shape (G,)
        :math:`\nu` and :math:`p_{min}` of each cell.
    log_x : bool
        Slope on :math:`\log x` (an exponent) or on ``x`` (a log-slope).
    log_factor : bool
        Include :math:`\log(1/\nu)` (see :func:`sxy_bound_shape`).

    Returns
    -------
    float
        ``nan`` with fewer than two distinct ``x`` or a ``nan`` bound.

    Examples
    --------
    >>> M = np.array([500.0, 1000, 2000, 4000])
    >>> round(sxy_axis_exponent(M, np.sqrt(30 / M), np.full(4, 0.2)), 6)
    -0.5
    >>> round(sxy_axis_exponent([0.05, 0.1, 0.2], [0.2, 0.2, 0.2], [0.05, 0.1, 0.2]), 6)
    -1.0
    """
    x = np.asarray(x, dtype=np.float64)
    b = sxy_bound_shape(nu, p_min, log_factor=log_factor)
    if x.ndim != 1 or b.shape != x.shape:
        raise ValueError(f"x, nu and p_min must have the same shape (G,), got {x.shape} and {b.shape}")
    if log_x and np.any(x <= 0):
        raise ValueError(f"x must be > 0 for an exponent (log_x=True), got {x.tolist()}")
    u = np.log(x) if log_x else x
    if np.unique(u).size < 2 or not np.isfinite(b).all():
        return float("nan")
    return float(np.polyfit(u, np.log(b), 1)[0])
