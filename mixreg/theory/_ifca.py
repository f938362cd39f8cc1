"""IFCA's theory (Ghosh, Chung, Yin, Ramchandran, NeurIPS 2020 version, linear model, Sec. 5.1).

With ``p = min_j |S*_j| / m``, ``Delta = min_{j != j'} ||theta*_j - theta*_j'||``,
``rho = Delta^2 / sigma^2`` and ``n'`` fresh points per round for each of the identity estimate
and the gradient,

* Assumption 1: ``||theta_j^(0) - theta*_j|| <= Delta / 4``;
* Assumption 2 (separation part): ``Delta >~ (sigma / p) sqrt(d / (m n')) +
  exp(-c (rho / (rho + 1))^2 n')``;
* Theorem 1: with ``gamma = c1 / p``, one round gives
  ``||theta_j^+ - theta*_j|| <= 1/2 ||theta_j - theta*_j|| + c2 (sigma / p) sqrt(d / (m n')) +
  c3 exp(-c4 (rho / (rho + 1))^2 n')``.

The constants ``c1..c4`` and ``C, c`` are universal but unstated; see :mod:`mixreg.theory`.

Restriction: Theorem 1 is false for unbalanced clusters
-------------------------------------------------------
IFCA's server step (Algorithm 2, option I) is ``theta_j -= (gamma / m) sum_{i in S_j} grad F_i``
with the per-client mean loss, ``grad F_i(theta) = (2 / n') X_i^T (X_i theta - y_i)``.  With the
right identities, cluster ``j`` (``p_j m`` clients, ``p_j m n'`` fresh gradient points) moves as

    theta_j^+ - theta*_j = (I - 2 gamma p_j H_j)(theta_j - theta*_j) + noise,
    H_j = X_j^T X_j / (p_j m n'),

whose spectrum lies in about ``[(1 - eta_j)_+^2, (1 + eta_j)^2]``, ``eta_j = sqrt(d / (p_j m n'))``
(population: ``H_j = I``).  The factor ``2`` comes from the squared loss, the ``p_j`` from dividing
by the total ``m``.  One step size serves every cluster, so with ``gamma = c1 / p`` the cluster of
proportion ``p_j`` contracts by ``|1 - 2 c1 (p_j / p) lambda|``: at ``p = 0.2`` (``k = 2``) and
``c1 = 3/8`` the large cluster (``p_j = 0.8``) has factor ``|1 - 0.75 * 4| = 2`` and its error
doubles every round.  Exactly (:func:`ifca_contraction_factors`), every cluster contracts by at
most 1/2 iff

    2 c1 (1 - eta_p)_+^2 >= 1/2    and    2 c1 (p_max / p) (1 + eta_max)^2 <= 3/2,

(the smallest cluster is the slowest, the largest the least stable), which some ``c1`` satisfies
iff ``p_max / p <= 3 (1 - eta_p)^2 / (1 + eta_max)^2`` (at most 3, population).  Beyond that no
single step size gives Theorem 1's 1/2 contraction for all clusters.  :func:`ifca_step_size`
refuses such a step when given ``p_max``; :func:`ifca_safe_step_size` gives ``c1 / p_max``,
under which the largest cluster contracts as a balanced one (``|1 - 2 c1 lambda|``) and the
smallest by ``1 - 2 c1 (p / p_max) lambda``, more slowly: Corollary 1's ``log(Delta / (4 eps))``
rounds become about ``(p_max / (2 c1 p)) log(Delta / (4 eps))``.

The noise term, derived (not in the paper)
------------------------------------------
With fresh data every round (the resampling scheme), right identities and the population
Hessian, the error of cluster ``j`` is a stationary linear recursion whose root-mean-square
error is ``sigma sqrt(gamma d / (m n' (1 - gamma p_j)))`` (:func:`ifca_stationary_error`).  With
Theorem 1's ``gamma = c1 / p`` and balanced clusters this is ``sigma sqrt(c1 / (1 - c1))
sqrt(d / (p m n'))``: the exponents ``-1/2`` in ``m`` and ``n'``, ``+1/2`` in ``d``, ``+1`` in
``sigma`` of Corollary 1, but ``-1/2`` in ``p``, not the ``-1`` of its ``1/p``.
"""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike, FloatOrArray
from ..validation import check_int, check_real

__all__ = [
    "ifca_step_size",
    "ifca_safe_step_size",
    "ifca_contraction_factors",
    "ifca_stationary_error",
    "ifca_error_floor",
    "ifca_one_round_bound",
    "ifca_separation_threshold",
]


def _sample_shape(d, m, n_prime):
    """``d / (m n')`` for the spectrum edges, or ``None`` (population Hessian) when none is given."""
    given = [v is not None for v in (d, m, n_prime)]
    if not any(given):
        return None
    if not all(given):
        raise ValueError("give all of d, m and n_prime (the empirical Hessian's spectrum) or none of them "
                         "(the population Hessian I)")
    d = check_int("d", d, low=1)
    m = check_int("m", m, low=1)
    n_prime = check_int("n_prime", n_prime, low=1)
    return d / (m * n_prime)


def _proportions(proportions):
    props = np.atleast_1d(np.asarray(proportions, dtype=np.float64))
    if props.ndim != 1 or props.size == 0 or not np.all(np.isfinite(props)):
        raise ValueError(f"proportions must be a non-empty 1-d array of finite numbers, got {proportions!r}")
    if np.any(props <= 0) or np.any(props > 1):
        raise ValueError(f"proportions must lie in (0, 1], got {props.tolist()}")
    return props


def ifca_contraction_factors(step_size: float, proportions: ArrayLike, *, d: int | None = None, m: int | None = None,
                             n_prime: int | None = None) -> np.ndarray:
    r"""Worst linear factor of each cluster in one IFCA round (option I, right identities).

    IFCA's server step ``theta_j -= (gamma / m) sum_{i in S_j} grad F_i`` with the per-client
    mean squared loss moves a correctly clustered model as

    .. math::

        \theta_j^+ - \theta^*_j = (I - 2 \gamma p_j \hat H_j)(\theta_j - \theta^*_j)
        + \text{noise}, \qquad \hat H_j = \frac{X_j^\top X_j}{p_j m n'},

    and the factor returned is the largest :math:`|1 - 2 \gamma p_j \lambda|` over
    :math:`\lambda \in [(1 - \eta_j)_+^2, (1 + \eta_j)^2]`, the approximate spectrum of
    :math:`\hat H_j` for ``x ~ N(0, I)`` with :math:`\eta_j = \sqrt{d / (p_j m n')}`
    (Bai-Yin edges; :math:`\lambda = 1` when ``d, m, n_prime`` are not given).

    Parameters
    ----------
    step_size : float > 0
        ``gamma`` of Algorithm 2 (the server divides by the total ``m``).
    proportions : array_like of shape (k,)
        ``p_j = |S*_j| / m``, each in ``(0, 1]``.
    d, m, n_prime : int, optional
        Dimension, clients and gradient points per client per round; all or none.

    Returns
    -------
    factors : ndarray of shape (k,)
        Above 1/2: Theorem 1's contraction fails for that cluster; above 1: it diverges.

    Examples
    --------
    >>> ifca_contraction_factors(0.375 / 0.2, [0.2, 0.8]).round(12).tolist()  # gamma = c1 / p
    [0.25, 2.0]
    >>> ifca_contraction_factors(0.375 / 0.8, [0.2, 0.8]).round(12).tolist()  # gamma = c1 / p_max
    [0.8125, 0.25]
    """
    gamma = check_real("step_size", step_size, low=0.0, low_inclusive=False)
    low, high = _edges(gamma, _proportions(proportions), _sample_shape(d, m, n_prime))
    return np.maximum(np.abs(1.0 - low), np.abs(1.0 - high))


def _edges(gamma, props, shape):
    """``2 gamma p_j (1 -+ eta_j)^2``: the ends of the spectrum of ``2 gamma p_j H_j`` per cluster."""
    eta = np.zeros_like(props) if shape is None else np.sqrt(shape / props)
    return 2.0 * gamma * props * np.maximum(1.0 - eta, 0.0) ** 2, 2.0 * gamma * props * (1.0 + eta) ** 2


def ifca_step_size(p: float, c1: float = 0.375, *, p_max: float | None = None, d: int | None = None,
                   m: int | None = None, n_prime: int | None = None) -> float:
    """Theorem 1's step size ``gamma = c1 / p``, refused when it cannot contract every cluster by 1/2.

    With IFCA's per-client mean squared loss and ``x ~ N(0, I)``, a correctly clustered model
    moves as ``theta - theta* -> (I - 2 gamma p_j H_j)(theta - theta*)`` plus noise, where the
    empirical Hessian ``H_j`` of its ``p_j m n'`` fresh points has eigenvalues in about
    ``[(1 - eta_j)^2, (1 + eta_j)^2]``, ``eta_j = sqrt(d / (p_j m n'))`` (see
    :func:`ifca_contraction_factors`).  For balanced clusters (``p_j = p``) the factor is
    ``|1 - 2 c1 lambda|``: ``c1 = 1/4`` gives 1/2 only on average (the worst case is about
    ``1/2 + eta``), while any ``c1`` in ``[1 / (4 (1 - eta)^2), 3 / (4 (1 + eta)^2)]`` keeps it at
    most 1/2; the default ``c1 = 3/8`` does so for ``eta <= 0.16`` (``p m n' >= 40 d``) and
    averages 1/4.  The paper leaves ``c1`` unspecified (derived here and checked in the property
    test of Theorem 1).

    Unbalanced clusters (see the module docstring): the same ``gamma`` gives the cluster of
    proportion ``p_j`` the factor ``|1 - 2 c1 (p_j / p) lambda|``, so every cluster contracts by at
    most 1/2 iff

    * ``2 c1 (1 - eta_p)_+^2 >= 1/2`` (the smallest cluster, ``eta_p = sqrt(d / (p m n'))``), and
    * ``2 c1 (p_max / p) (1 + eta_max)^2 <= 3/2`` (the largest, ``eta_max = sqrt(d / (p_max m n'))``);

    intermediate clusters lie between the two.  With ``c1 = 3/8`` and the population Hessian the
    second reads ``p_max / p <= 2``; no ``c1`` works once ``p_max / p > 3 (1 - eta_p)^2 /
    (1 + eta_max)^2``.  Use :func:`ifca_safe_step_size` there.

    Parameters
    ----------
    p : float in (0, 1]
        Smallest cluster proportion.
    c1 : float > 0
    p_max : float in [p, 1], optional
        Largest cluster proportion.  Given, the step is checked against the conditions above
        (our choice: refuse, rather than warn, a step whose premise is false); omitted, no check
        is made (Theorem 1's step as stated, which presumes comparable cluster sizes).
    d, m, n_prime : int, optional
        For the empirical Hessian's spectrum edges (all or none; none = population, ``eta = 0``).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        With ``p_max``: when the worst factor of :func:`ifca_contraction_factors` over the
        smallest and the largest cluster exceeds 1/2, naming the cluster, its factor and the
        safe step.

    Examples
    --------
    >>> ifca_step_size(0.5)
    0.75
    >>> ifca_step_size(0.4, p_max=0.6)  # p_max / p = 1.5 <= 2
    0.9375
    >>> ifca_step_size(0.2, p_max=0.8)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: gamma = c1 / p = 1.875 does not contract every cluster by 1/2 ...
    """
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False)
    c1 = check_real("c1", c1, low=0.0, low_inclusive=False)
    gamma = c1 / p
    if p_max is None:
        _sample_shape(d, m, n_prime)  # validates them all the same
        return gamma
    p_max = check_real("p_max", p_max, low=p, high=1.0)
    shape = _sample_shape(d, m, n_prime)
    # the union of the clusters' spectra of 2 gamma p_j H_j is [low of the smallest, high of the largest]
    low = _edges(gamma, np.array([p]), shape)[0][0]
    high = _edges(gamma, np.array([p_max]), shape)[1][0]
    if high > 1.5:
        fate = "diverges" if high > 2 else "contracts more slowly"
        raise ValueError(
            f"gamma = c1 / p = {gamma:.6g} does not contract every cluster by 1/2 (Theorem 1): the largest "
            f"cluster (p_max = {p_max:.6g}, p_max / p = {p_max / p:.4g}) has linear factor up to {high - 1:.6g} and "
            f"{fate}; Theorem 1's step needs 2 c1 (p_max / p) (1 + eta_max)^2 <= 3/2; use "
            f"ifca_safe_step_size(p_max) = c1 / p_max = {c1 / p_max:.6g}, under which the smallest cluster "
            f"contracts by about 1 - 2 c1 p / p_max = {1 - 2 * c1 * p / p_max:.4g} per round")
    if low < 0.5:
        edge = low / (2.0 * c1)  # (1 - eta_p)_+^2
        need = f"c1 >= {1 / (4 * edge):.4g}" if edge > 0 else "more points per round (eta_p < 1)"
        raise ValueError(
            f"gamma = c1 / p = {gamma:.6g} does not contract every cluster by 1/2 (Theorem 1): the smallest "
            f"cluster (p = {p:.6g}) has linear factor up to {1 - low:.6g}; Theorem 1's step needs "
            f"2 c1 (1 - eta_p)_+^2 >= 1/2, here {need}")
    return gamma


def ifca_safe_step_size(p_max: float, c1: float = 0.375) -> float:
    """A step size that contracts every cluster, balanced or not: ``gamma = c1 / p_max``.

    The largest cluster then contracts as a balanced one, by ``|1 - 2 c1 lambda|`` (at most 1/2
    for ``c1`` in ``[1 / (4 (1 - eta_max)^2), 3 / (4 (1 + eta_max)^2)]``), and the cluster of
    proportion ``p_j`` by ``1 - 2 c1 (p_j / p_max) lambda``: the smallest, ``1 - 2 c1 p / p_max``
    in the population, is slower than Theorem 1's 1/2 (e.g. 0.8125 for ``p = 0.2, p_max = 0.8``),
    so reaching an accuracy ``eps`` takes about ``(p_max / (2 c1 p)) log(Delta / (4 eps))`` rounds
    instead of Corollary 1's ``log(Delta / (4 eps))``, with ``2 n'`` fresh points per client in
    each (our derivation; not a statement of the paper).

    Parameters
    ----------
    p_max : float in (0, 1]
        Largest cluster proportion.
    c1 : float > 0

    Returns
    -------
    float

    Examples
    --------
    >>> ifca_safe_step_size(0.8)
    0.46875
    """
    p_max = check_real("p_max", p_max, low=0.0, high=1.0, low_inclusive=False)
    c1 = check_real("c1", c1, low=0.0, low_inclusive=False)
    return c1 / p_max


def ifca_stationary_error(step_size: float, proportions: ArrayLike, sigma: float, d: int, m: int,
                          n_prime: int) -> np.ndarray:
    r"""Root-mean-square error of each cluster at stationarity, fresh data every round (derived).

    With the resampling scheme, right identities and the population Hessian, one round maps the
    error of cluster ``j`` to :math:`e^+ = (1 - a_j) e + \xi`, :math:`a_j = 2 \gamma p_j`, with
    fresh noise :math:`\xi = (2 \gamma / (m n')) X_j^\top \epsilon_j`,
    :math:`E \lVert \xi \rVert^2 = 4 \gamma^2 \sigma^2 p_j d / (m n')`.  Its stationary mean
    square is :math:`E \lVert \xi \rVert^2 / (1 - (1 - a_j)^2)`, i.e.

    .. math::

        \sqrt{E \lVert e_j \rVert^2} = \sigma \sqrt{\frac{\gamma d}{m n' (1 - \gamma p_j)}},
        \qquad 0 < \gamma p_j < 1,

    and ``inf`` where the recursion is unstable (:math:`\gamma p_j \ge 1`).  Our derivation (not
    in the paper); it neglects the Hessian's fluctuation (relative corrections of order
    :math:`d / (p_j m n')`) and the misclustered clients (the exponential term).

    Parameters
    ----------
    step_size : float > 0
    proportions : array_like of shape (k,)
    sigma : float >= 0
    d, m, n_prime : int >= 1

    Returns
    -------
    ndarray of shape (k,)

    Examples
    --------
    >>> e = ifca_stationary_error(0.75, [0.5, 0.5], sigma=1.0, d=10, m=100, n_prime=40)
    >>> bool(np.allclose(e, np.sqrt(0.375 / 0.625 * 10 / (0.5 * 100 * 40))))  # sqrt(c1/(1-c1)) sqrt(d/(pmn'))
    True
    """
    gamma = check_real("step_size", step_size, low=0.0, low_inclusive=False)
    props = _proportions(proportions)
    sigma = check_real("sigma", sigma, low=0.0)
    d = check_int("d", d, low=1)
    m = check_int("m", m, low=1)
    n_prime = check_int("n_prime", n_prime, low=1)
    stable = gamma * props < 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        value = sigma * np.sqrt(gamma * d / (m * n_prime * (1.0 - gamma * props)))
    return np.where(stable, value, np.inf)


def ifca_error_floor(sigma: FloatOrArray, p: FloatOrArray, d: FloatOrArray, m: FloatOrArray, n_prime: FloatOrArray,
                     delta: FloatOrArray, *, c2: float = 1.0, c3: float = 1.0, c4: float = 1.0) -> FloatOrArray:
    """Additive term of Theorem 1 / Corollary 1.

    ``c2 (sigma / p) sqrt(d / (m n')) + c3 exp(-c4 (rho / (rho + 1))^2 n')`` with
    ``rho = delta^2 / sigma^2`` (``rho / (rho + 1) = 1`` when ``sigma = 0``).
    """
    sigma = check_real("sigma", sigma, low=0.0)
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False)
    d = check_int("d", d, low=1)
    m = check_int("m", m, low=1)
    n_prime = check_int("n_prime", n_prime, low=1)
    delta = check_real("delta", delta, low=0.0)
    ratio = 1.0 if sigma == 0 else delta**2 / (delta**2 + sigma**2)
    return c2 * (sigma / p) * np.sqrt(d / (m * n_prime)) + c3 * np.exp(-c4 * ratio**2 * n_prime)


def ifca_one_round_bound(dist: FloatOrArray, sigma: FloatOrArray, p: FloatOrArray, d: FloatOrArray, m: FloatOrArray,
                         n_prime: FloatOrArray, delta: FloatOrArray, *, c2: float = 1.0, c3: float = 1.0,
                         c4: float = 1.0) -> FloatOrArray:
    """Right-hand side of Theorem 1: ``dist / 2 + ifca_error_floor(...)``."""
    dist = check_real("dist", dist, low=0.0)
    return 0.5 * dist + ifca_error_floor(sigma, p, d, m, n_prime, delta, c2=c2, c3=c3, c4=c4)


def ifca_separation_threshold(sigma: FloatOrArray, p: FloatOrArray, d: FloatOrArray, m: FloatOrArray,
                              n_prime: FloatOrArray, *, C: float = 1.0, c: float = 1.0) -> FloatOrArray:
    """Smallest ``Delta`` satisfying Assumption 2's separation condition with constants ``C, c``.

    Solves ``Delta = C [(sigma / p) sqrt(d / (m n')) + exp(-c (rho / (rho + 1))^2 n')]`` with
    ``rho = Delta^2 / sigma^2`` by bisection (the left side increases and the right side
    decreases in ``Delta``, so the root is unique).
    """
    sigma = check_real("sigma", sigma, low=0.0)
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False)
    d = check_int("d", d, low=1)
    m = check_int("m", m, low=1)
    n_prime = check_int("n_prime", n_prime, low=1)
    C = check_real("C", C, low=0.0, low_inclusive=False)
    c = check_real("c", c, low=0.0, low_inclusive=False)
    a = (sigma / p) * np.sqrt(d / (m * n_prime))

    if sigma == 0:  # rho = inf: the condition is explicit
        return C * (a + np.exp(-c * n_prime))

    def rhs(delta):
        ratio = delta**2 / (delta**2 + sigma**2)
        return C * (a + np.exp(-c * ratio**2 * n_prime))

    lo, hi = C * a, C * (a + 1.0)  # the root is at least C a > 0, so 200 halvings resolve it
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid < rhs(mid):
            lo = mid
        else:
            hi = mid
    return hi
