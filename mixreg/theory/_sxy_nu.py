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

The paper gives no value of ``C3`` and ``C4``.  :func:`sxy_constants_exponents` computes the
exponent the bound predicts along a sweep for every pair of a grid of ``(C3, C4)`` at once, so a
study can ask which constants, if any, make the bound's shape agree with every sweep together.

The global theorem's proof bounds the misclustered data uniformly over :math:`\\theta \\in
\\mathbb{R}^{dk}` through the number of sign patterns of the clients' label comparisons, which are
quadratic polynomials in :math:`\\theta` (a Milnor-Thom bound, slides "Uniform Bounds on
Clustering Errors" and "Sign Patterns of Polynomials":
at most :math:`(50 D m / N)^N` patterns of ``m`` polynomials of degree ``D`` in ``N``
variables): :func:`sxy_sign_pattern_bound` is that bound and :func:`sxy_assignment_patterns`
counts the label vectors that random parameters realise, a lower bound of the true number.
"""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike
from ..validation import check_int, check_real
from ._sxy import _size_weights

__all__ = ["sxy_bound_shape", "sxy_axis_exponent", "sxy_constants_exponents", "sxy_sign_pattern_bound",
           "sxy_assignment_patterns"]


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


def _nu_grid(sizes, d, k, C3, C4):
    """:math:`\\nu(C_3, C_4)` of one cell on the grid, shape ``(len(C3), len(C4))``: the
    small-client term depends on ``C3`` alone and the uniform deviation is linear in ``C4``."""
    n, w = _size_weights(sizes)
    chi2 = n.size * float(np.dot(w, w)) - 1.0
    values, index = np.unique(n, return_inverse=True)
    weight = np.bincount(index, weights=w)  # the clients' weights grouped by size
    nu1 = k * np.exp(-np.outer(C3, values)) @ weight
    nu2 = C4 * np.sqrt(d * k * np.log(k) / n.size * (chi2 + 1.0))
    return nu1[:, None] + nu2[None, :]


def sxy_constants_exponents(x: ArrayLike, sizes, p_min: ArrayLike, d: int, k: int, C3: ArrayLike, C4: ArrayLike, *,
                            log_x: bool = True, log_factor: bool = False) -> np.ndarray:
    r"""The exponent the bound predicts along one sweep, for every pair of constants of a grid.

    For each :math:`(C_3, C_4)`, :math:`\nu` of every cell is recomputed from its client sizes
    (:func:`mixreg.theory.sxy_nu_terms` with those constants) and the exponent is the
    least-squares slope of :math:`\log b` on :math:`\log x` (or on ``x``), :math:`b` the bound's
    shape of :func:`sxy_bound_shape`: what :func:`sxy_axis_exponent` computes at one pair.  The
    level constant (``C2``, or any ``C`` in ``C b``) does not move an exponent.

    Parameters
    ----------
    x : array_like of shape (G,)
        The sweep's values (> 0 when ``log_x``).
    sizes : sequence of G int arrays
        The client sizes of each cell (every client, anchors included).
    p_min : array_like of shape (G,)
        :math:`p_{min}` of each cell.
    d, k : int
    C3, C4 : array_like of shape (A,) and (B,), > 0
        The grid.
    log_x, log_factor : bool
        As :func:`sxy_axis_exponent`; with ``log_factor`` a pair where some cell has
        :math:`\nu \ge 1` gives ``nan`` (the theorem says nothing there).

    Returns
    -------
    ndarray of shape (A, B)

    Examples
    --------
    Along ``M`` at a fixed client size, a large ``C3`` silences the small-client term and the
    uniform deviation's :math:`M^{-1/2}` is left; a tiny ``C3`` makes :math:`\nu_1 \approx k`
    dominate and the exponent goes to 0:

    >>> M = [100, 400, 1600]
    >>> e = sxy_constants_exponents(M, [np.full(m, 8) for m in M], [0.2] * 3, 10, 3, [1e-3, 10.0], [1.0])
    >>> np.round(e[:, 0], 2).tolist()
    [-0.05, -0.5]
    """
    x = np.asarray(x, dtype=np.float64)
    p = np.asarray(p_min, dtype=np.float64)
    C3 = np.atleast_1d(np.asarray(C3, dtype=np.float64))
    C4 = np.atleast_1d(np.asarray(C4, dtype=np.float64))
    d = check_int("d", d, low=1)
    k = check_int("k", k, low=1)
    if x.ndim != 1 or p.shape != x.shape or len(sizes) != x.size:
        raise ValueError(f"x, sizes and p_min must have one length G, got {x.shape}, {len(sizes)} and {p.shape}")
    for name, grid in (("C3", C3), ("C4", C4)):
        if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
            raise ValueError(f"{name} must be a non-empty 1-D array of finite values > 0, got {grid.tolist()}")
    if np.any(~np.isfinite(p)) or np.any(p <= 0) or np.any(p > 1):
        raise ValueError(f"p_min must be in (0, 1], got {p.tolist()}")
    if log_x and np.any(x <= 0):
        raise ValueError(f"x must be > 0 for an exponent (log_x=True), got {x.tolist()}")
    u = np.log(x) if log_x else x
    if np.unique(u).size < 2:
        return np.full((C3.size, C4.size), np.nan)
    nu = np.stack([_nu_grid(s, d, k, C3, C4) for s in sizes], axis=-1)  # (A, B, G)
    log_b = np.log(nu) - np.log(p)
    if log_factor:
        with np.errstate(invalid="ignore", divide="ignore"):
            log_b = np.where(nu < 1, log_b + np.log(np.log(1.0 / np.minimum(nu, 1.0))), np.nan)
    centred = u - u.mean()
    return (log_b - log_b.mean(axis=-1, keepdims=True)) @ centred / float(centred @ centred)


def sxy_sign_pattern_bound(m: int, n_vars: int, *, degree: int = 2) -> float:
    r"""The slide's bound on the sign patterns of ``m`` polynomials of degree ``degree`` in
    ``n_vars`` variables (Su-Xu-Yang, slide "Sign Patterns of Polynomials", the Milnor-Thom theorem):

    .. math::

        \#\{(\operatorname{sign} f_1(\theta), \dots, \operatorname{sign} f_m(\theta)) :
        \theta \in \mathbb{R}^N\} \le \left(\frac{50\, D\, m}{N}\right)^N .

    Returns its ``log10`` (the value overflows a float for the sizes of a study).

    Examples
    --------
    >>> round(sxy_sign_pattern_bound(100, 4), 6)  # (50 * 2 * 100 / 4)^4 = 2500^4
    13.59176
    """
    m = check_int("m", m, low=1)
    n_vars = check_int("n_vars", n_vars, low=1)
    degree = check_int("degree", degree, low=1)
    return float(n_vars * np.log10(50.0 * degree * m / n_vars))


def sxy_assignment_patterns(X, y, client, k: int, thetas) -> int:
    r"""How many distinct label vectors :math:`(z_1(\theta), \dots, z_M(\theta))` of the ML
    decoder the given parameters realise on one data set.

    :math:`z_i(\theta) = \arg\min_\ell \sum_j (y_{ij} - \langle x_{ij}, \theta_\ell\rangle)^2`
    is fixed by the signs of the :math:`M k (k-1)/2` differences of the clients' losses, each a
    polynomial of degree 2 in :math:`\theta \in \mathbb{R}^{dk}`; so the number of label
    vectors over all :math:`\theta` is at most :func:`sxy_sign_pattern_bound` of
    ``m = M k (k-1) / 2``, ``n_vars = d k``, ``degree = 2`` (ties to the lowest index).  The count
    over a finite set of parameters is a lower bound of the number over all of them.

    Parameters
    ----------
    X : ndarray of shape (N, d)
    y : ndarray of shape (N,)
    client : int ndarray of shape (N,)
        The client of each point, ``0 .. M-1``.
    k : int
    thetas : ndarray of shape (T, k, d)

    Returns
    -------
    int

    Examples
    --------
    One client, two models in dimension 1: the label is 0 or 1, whatever the parameters.

    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5, 1)); y = X[:, 0]
    >>> sxy_assignment_patterns(X, y, np.zeros(5, dtype=int), 2, rng.normal(size=(50, 2, 1)))
    2
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    client = np.asarray(client)
    thetas = np.asarray(thetas, dtype=np.float64)
    k = check_int("k", k, low=1)
    if X.ndim != 2 or y.shape != (X.shape[0],) or client.shape != y.shape:
        raise ValueError(f"X must be (N, d) with y and client of shape (N,), got {X.shape}, {y.shape}, {client.shape}")
    if thetas.ndim != 3 or thetas.shape[1:] != (k, X.shape[1]):
        raise ValueError(f"thetas must have shape (T, k={k}, d={X.shape[1]}), got {thetas.shape}")
    order = np.argsort(client, kind="stable")
    X, y, client = X[order], y[order], client[order]
    starts = np.flatnonzero(np.r_[True, client[1:] != client[:-1]])  # each client's first point
    patterns: set[bytes] = set()
    for start in range(0, thetas.shape[0], 1024):
        block = thetas[start:start + 1024]                       # (b, k, d)
        residual = y[:, None, None] - np.einsum("nd,bkd->nbk", X, block)
        losses = np.add.reduceat(residual ** 2, starts, axis=0)  # (M, b, k): per client and model
        labels = np.argmin(losses, axis=2).T.astype(np.int8)    # ties to the lowest index
        patterns.update(row.tobytes() for row in np.ascontiguousarray(labels))
    return len(patterns)
