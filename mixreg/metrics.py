"""Distances between estimated and true cluster parameters, batched over replicas.

Every function takes the estimates as ``theta_hat`` of shape ``(B, k, d)`` (``B`` independent
replicas that share one truth, e.g. restarts x step sizes) or ``(k, d)`` (one run), and the
truth as ``theta_star`` of shape ``(k, d)``.  A 3-D ``theta_hat`` gives one value per replica,
an ndarray of shape ``(B,)``; a 2-D one gives a 0-d ``numpy.float64`` (a subclass of ``float``).
All arithmetic is in float64 whatever the input dtype (float32 is accepted).

Cluster indices are identifiable only up to a permutation, so three distances are offered:

=========================  =====================================================  ============
function                   definition                                             source
=========================  =====================================================  ============
nearest_truth_distance     mean_j min_l ||theta_hat_j - theta*_l||                IFCA code
matched_mean_distance      min_pi (1/k) sum_l ||theta_hat_pi(l) - theta*_l||      IFCA paper
matched_max_distance       min_pi max_l ||theta_hat_pi(l) - theta*_l||            Su-Xu-Yang
=========================  =====================================================  ============

The sources: the IFCA paper and its official code [1]_, Su, Xu and Yang [2]_.

Non-finite replicas
-------------------
A replica whose estimates contain any NaN or +-inf gets NaN as its metric (its distance matrix
is all NaN and its permutation is all -1).  The same holds for a finite replica whose
distances overflow float64 (a distance above ~1.8e308).  Nothing raises and nothing returns a
small number for such a replica: ``NaN < threshold`` is False, so a diverged run can never be
counted as a success.  Other replicas of the batch are unaffected.

References
----------
.. [1] A. Ghosh, J. Chung, D. Yin, K. Ramchandran, "An Efficient Framework for Clustered
   Federated Learning", NeurIPS 2020 (arXiv:2006.04088); official code
   github.com/jichan3751/ifca, ``synthetic/train_cluster.py`` (``min_dist``).
.. [2] L. Su, J. Xu, P. Yang, "Global Convergence of Federated Learning for Mixed
   Regression", NeurIPS 2022 (arXiv:2206.07279).
"""

from __future__ import annotations

import math

import numpy as np

from ._typing import ArrayLike
from numba import njit
from scipy.optimize import linear_sum_assignment

from ._fixed_order import LANES, sum_sq_diff
from .validation import check_choice, check_covariance, check_int, check_real

__all__ = [
    "pairwise_distances",
    "nearest_truth_distance",
    "matched_mean_distance",
    "matched_max_distance",
    "best_permutation",
    "misclustering_rate",
    "oracle_ls_floor",
]

_OBJECTIVES = ("mean", "max")


# --------------------------------------------------------------------------------------------
# Kernels (trust their inputs)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _magnitude(u):
    """max_i |u_i|, or NaN if ``u`` holds a non-finite value."""
    m = 0.0
    poison = 0.0
    for i in range(u.shape[0]):
        x = u[i]
        poison += x * 0.0  # NaN as soon as x is NaN or +-inf
        a = abs(x)
        if a > m:
            m = a
    if poison != 0.0 or poison != poison:
        return np.nan
    return m


@njit(cache=True)
def _pairwise_kernel(hat, star, star_mag, out):
    """Fill ``out[b, j, l] = ||hat[b, j] - star[l]||_2``; NaN blocks for non-finite replicas.

    hat (B, k_hat, d), star (k, d), out (B, k_hat, k), all float64.  A row is first computed
    directly.  Only if a squared distance is non-finite (non-finite input, or overflow), above
    1e300, or so small (< 2**-900) that it may have underflowed is the row recomputed after
    an exact power-of-two rescaling of both vectors; a non-finite input then poisons the
    whole replica.  In the common case each entry is computed once, with no extra pass.  Each
    squared distance is summed in :func:`~mixreg._fixed_order.sum_sq_diff`'s fixed order, so the
    distances are the same bit for bit whatever CPU the kernel was compiled for.
    """
    n_rep, k_hat, d = hat.shape
    lanes = np.empty(LANES)
    k = star.shape[0]
    too_big = 2.0**500 / math.sqrt(d)  # 4 d m^2 stays far below the float64 maximum
    too_small = 2.0**-400
    sq_tiny = 2.0**-900
    for b in range(n_rep):
        for j in range(k_hat):
            row = hat[b, j]
            careful = False
            for l in range(k):
                sq = sum_sq_diff(row, star[l], 1.0, lanes)
                if not (sq_tiny <= sq <= 1e300):  # also catches NaN
                    careful = True
                    break
                out[b, j, l] = math.sqrt(sq)
            if not careful:
                continue
            m = _magnitude(row)
            if m != m:  # non-finite estimate: the whole replica is NaN
                out[b, :, :] = np.nan
                break
            m = max(m, star_mag)
            e = 0
            if m > too_big or 0.0 < m < too_small:
                e = max(math.frexp(m)[1], -1000)
            scale = math.ldexp(1.0, -e)
            for l in range(k):
                out[b, j, l] = math.ldexp(math.sqrt(sum_sq_diff(row, star[l], scale, lanes)), e)


@njit(cache=True)
def _has_perfect_matching(cost, tau):
    """True iff the bipartite graph {(r, c): cost[r, c] <= tau} has a perfect matching.

    Augmenting paths found by breadth-first search (Kuhn's algorithm), O(k^3) for (k, k).
    A row that cannot be augmented now never can be, so the search stops at the first one.
    """
    k = cost.shape[0]
    row_of_col = np.full(k, -1, dtype=np.int64)
    col_of_row = np.full(k, -1, dtype=np.int64)
    parent = np.empty(k, dtype=np.int64)  # row from which a column was reached
    queue = np.empty(k, dtype=np.int64)
    for root in range(k):
        parent[:] = -1
        queue[0] = root
        head, tail, free_col = 0, 1, -1
        while head < tail and free_col < 0:
            r = queue[head]
            head += 1
            for c in range(k):
                if parent[c] < 0 and cost[r, c] <= tau:
                    parent[c] = r
                    if row_of_col[c] < 0:
                        free_col = c
                        break
                    queue[tail] = row_of_col[c]
                    tail += 1
        if free_col < 0:
            return False
        c = free_col
        while c >= 0:  # flip the augmenting path root -> ... -> free_col
            r = parent[c]
            previous = col_of_row[r]
            row_of_col[c] = r
            col_of_row[r] = c
            c = previous
    return True


@njit(cache=True)
def _bottleneck_threshold(cost, lower, upper):
    """Smallest cost tau in [lower, upper] such that {cost <= tau} has a perfect matching.

    ``upper`` must be feasible (it is the largest cost of some perfect matching) and ``lower``
    a lower bound; binary search over the distinct costs in [lower, upper).
    """
    flat = cost.ravel()
    candidates = np.unique(flat[(flat >= lower) & (flat < upper)])
    lo, hi = 0, candidates.size  # index candidates.size stands for `upper`
    while lo < hi:
        mid = (lo + hi) // 2
        if _has_perfect_matching(cost, candidates[mid]):
            hi = mid
        else:
            lo = mid + 1
    return candidates[lo] if lo < candidates.size else upper


def _match(dist, objective):
    """Optimal permutations and objective values for a (B, k, k) distance array.

    Returns ``perm`` (B, k) intp with ``perm[b, l]`` the estimate matched to truth ``l`` (-1
    rows for replicas whose distances are not all finite) and ``value`` (B,) float64 (NaN for
    those replicas).  Each replica is solved on its distances divided by a power of two that
    brings them into [0, 1], which is exact and keeps the assignment solver away from overflow.

    "mean": linear assignment per replica.  "max" (bottleneck): the min-sum matching gives an
    upper bound (its largest cost) and every truth and every estimate must use at least its
    cheapest edge, giving a lower bound; when they coincide (the usual case near the truth)
    the min-sum matching is bottleneck-optimal.  Otherwise the optimal threshold tau* is found
    by binary search and the min-sum matching over the edges of cost <= tau* is returned, i.e.
    among bottleneck-optimal permutations the one with the smallest sum.
    """
    n_rep, k, _ = dist.shape
    perm = np.full((n_rep, k), -1, dtype=np.intp)
    value = np.full(n_rep, np.nan)
    ok = np.isfinite(dist).all(axis=(1, 2))
    if not ok.any():
        return perm, value
    good = np.flatnonzero(ok)
    exponent = np.frexp(dist[good].max(axis=(1, 2)))[1]
    cost = np.ldexp(dist[good], -exponent[:, None, None])
    cost = np.ascontiguousarray(cost.transpose(0, 2, 1))  # indexed (replica, truth, estimate)
    solved = np.empty((good.size, k), dtype=np.intp)
    for i in range(good.size):
        solved[i] = linear_sum_assignment(cost[i])[1]
    matched = np.take_along_axis(cost, solved[:, :, None], axis=2)[:, :, 0]  # (n_good, k)
    if objective == "mean":
        scaled = matched.mean(axis=1)
    else:
        upper = matched.max(axis=1)
        lower = np.maximum(cost.min(axis=2).max(axis=1), cost.min(axis=1).max(axis=1))
        for i in np.flatnonzero(lower < upper):
            tau = _bottleneck_threshold(cost[i], lower[i], upper[i])
            if tau < upper[i]:
                solved[i] = linear_sum_assignment(np.where(cost[i] <= tau, cost[i], np.inf))[1]
                upper[i] = tau
        scaled = upper
    perm[good] = solved
    with np.errstate(over="ignore"):
        value[good] = np.ldexp(scaled, exponent)
    return perm, value


# --------------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------------


def _as_array(name, value, kinds, what) -> np.ndarray:
    """``np.asarray(value)`` whose dtype kind is in ``kinds``, else ValueError naming ``name``."""
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must be a rectangular array, got {value!r}") from exc
    if arr.dtype.kind not in kinds and arr.size:  # an empty list has dtype float64
        raise ValueError(f"{name} must be {what} array, got dtype {arr.dtype}")
    return arr


def _check_parameters(theta_hat, theta_star, *, same_k):
    """Validate and return (hat (B, k_hat, d), star (k, d), batched) as C-contiguous float64."""
    star = _as_array("theta_star", theta_star, "iuf", "a real-valued")
    if star.ndim != 2 or 0 in star.shape:
        raise ValueError(
            f"theta_star must have shape (k, d) with k >= 1 and d >= 1, got shape {star.shape}"
        )
    if not np.isfinite(star).all():
        raise ValueError("theta_star must contain only finite values")
    k, d = star.shape
    hat = _as_array("theta_hat", theta_hat, "iuf", "a real-valued")
    if hat.ndim not in (2, 3) or hat.shape[-2] == 0:
        raise ValueError(
            f"theta_hat must have shape (B, k, d) or (k, d) with k >= 1, got shape {hat.shape}"
        )
    if hat.shape[-1] != d:
        raise ValueError(
            f"theta_hat must have d = {d} columns (last axis) like theta_star of shape "
            f"{star.shape}, got shape {hat.shape}"
        )
    if same_k and hat.shape[-2] != k:
        raise ValueError(
            f"theta_hat must have k = {k} estimates (axis -2) like theta_star of shape "
            f"{star.shape}, got shape {hat.shape}"
        )
    batched = hat.ndim == 3
    hat = np.ascontiguousarray(hat if batched else hat[None], dtype=np.float64)
    return hat, np.ascontiguousarray(star, dtype=np.float64), batched


def _pairwise(hat, star):
    """(B, k_hat, k) distances of validated float64 inputs."""
    out = np.empty((hat.shape[0], hat.shape[1], star.shape[0]))
    if out.size:
        _pairwise_kernel(hat, star, float(np.abs(star).max()), out)
    return out


def _unbatch(values, batched):
    """Return ``values`` (B, ...) as is, or its only replica when the input was unbatched."""
    return values if batched else values[0]


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def pairwise_distances(theta_hat: ArrayLike, theta_star: ArrayLike) -> np.ndarray:
    r"""Euclidean distance between every estimate and every true parameter vector.

    .. math::

        D_{b,j,l} = \lVert \hat\theta_{b,j} - \theta^*_l \rVert_2 .

    Computed from the differences directly (a compiled loop over ``d``), not from the
    expansion :math:`\lVert a\rVert^2 + \lVert b\rVert^2 - 2\langle a, b\rangle`, which loses
    all relative precision when an estimate is close to a truth.  Rows that would overflow or
    underflow are recomputed after an exact power-of-two rescaling.

    Parameters
    ----------
    theta_hat : array_like of shape (B, k_hat, d) or (k_hat, d)
        Estimates; ``k_hat`` may differ from ``k``.  Any real dtype, computed in float64.
    theta_star : array_like of shape (k, d)
        True parameters; must be finite.

    Returns
    -------
    dist : ndarray of shape (B, k_hat, k) or (k_hat, k), float64
        A replica with a non-finite estimate gets an all-NaN ``(k_hat, k)`` block.  An entry
        is +inf only if the true distance exceeds the float64 range (~1.8e308).

    Raises
    ------
    ValueError
        If a shape is not as above, ``d`` differs, or ``theta_star`` is not finite.

    Examples
    --------
    >>> pairwise_distances(np.array([[3.0, 4.0]]), np.array([[0.0, 0.0], [3.0, 0.0]]))
    array([[5., 4.]])
    """
    hat, star, batched = _check_parameters(theta_hat, theta_star, same_k=False)
    return _unbatch(_pairwise(hat, star), batched)


def nearest_truth_distance(theta_hat: ArrayLike, theta_star: ArrayLike) -> np.ndarray | np.float64:
    r"""Mean distance from each estimate to its nearest true parameter (IFCA code's ``min_dist``).

    .. math::

        \frac{1}{\hat k} \sum_{j=1}^{\hat k} \min_{l \in [k]}
        \lVert \hat\theta_j - \theta^*_l \rVert_2 .

    This is what the official IFCA code reports after the last round [1]_
    (``synthetic/train_cluster.py``): each estimate is compared with its nearest truth, with no
    matching.  It does **not** penalise two estimates collapsing onto one truth while another
    truth is left without an estimate.  With truths :math:`\theta^*_1 = (0, 0)`,
    :math:`\theta^*_2 = (2, 0)` and both estimates at :math:`(0, 0)` it is 0, although the
    second cluster is not recovered at all; :func:`matched_mean_distance` gives 1 and
    :func:`matched_max_distance` gives 2 on that example.  Log a matched distance alongside
    it to detect collapse.

    Parameters
    ----------
    theta_hat : array_like of shape (B, k_hat, d) or (k_hat, d)
        Estimates; the number ``k_hat`` of estimates may differ from ``k``.
    theta_star : array_like of shape (k, d)
        True parameters; must be finite.

    Returns
    -------
    dist : ndarray of shape (B,) or numpy.float64
        NaN for a replica holding a non-finite value (see the module docstring).

    Raises
    ------
    ValueError
        If a shape is not as above, ``d`` differs, or ``theta_star`` is not finite.

    See Also
    --------
    matched_mean_distance, matched_max_distance

    References
    ----------
    .. [1] A. Ghosh, J. Chung, D. Yin, K. Ramchandran, "An Efficient Framework for Clustered
       Federated Learning", NeurIPS 2020; official code github.com/jichan3751/ifca,
       ``synthetic/train_cluster.py`` (``min_dist``).

    Examples
    --------
    >>> truth = np.array([[0.0, 0.0], [2.0, 0.0]])
    >>> collapsed = np.array([[0.0, 0.0], [0.0, 0.0]])
    >>> float(nearest_truth_distance(collapsed, truth))
    0.0
    >>> float(matched_mean_distance(collapsed, truth))
    1.0
    >>> float(matched_max_distance(collapsed, truth))
    2.0
    """
    hat, star, batched = _check_parameters(theta_hat, theta_star, same_k=False)
    dist = _pairwise(hat, star)
    out = np.full(dist.shape[0], np.nan)
    ok = np.isfinite(dist).all(axis=(1, 2))
    if ok.any():
        nearest = dist[ok].min(axis=2)
        exponent = np.frexp(nearest.max(axis=1))[1]  # exact rescaling: the sum cannot overflow
        with np.errstate(over="ignore"):
            out[ok] = np.ldexp(np.ldexp(nearest, -exponent[:, None]).mean(axis=1), exponent)
    return _unbatch(out, batched)


def best_permutation(theta_hat: ArrayLike, theta_star: ArrayLike, objective: str = "mean") -> np.ndarray:
    r"""Optimal matching of estimates to truths.

    Solves

    .. math::

        \pi^\star \in \arg\min_{\pi \in S_k} \frac{1}{k} \sum_{l=1}^{k}
        \lVert \hat\theta_{\pi(l)} - \theta^*_l \rVert_2
        \quad (\text{objective} = \text{"mean"}), \qquad
        \pi^\star \in \arg\min_{\pi \in S_k} \max_{l \in [k]}
        \lVert \hat\theta_{\pi(l)} - \theta^*_l \rVert_2
        \quad (\text{objective} = \text{"max"}),

    exactly for any ``k`` and without enumerating the :math:`k!` permutations: ``"mean"`` is
    a linear assignment problem (``scipy.optimize.linear_sum_assignment`` on the ``k x k``
    distance matrix); ``"max"`` is a bottleneck assignment, solved by binary search over the
    distinct distances for the smallest threshold :math:`\tau` such that the edges of length
    :math:`\le \tau` contain a perfect matching.

    Parameters
    ----------
    theta_hat : array_like of shape (B, k, d) or (k, d)
        Estimates; same ``k`` as ``theta_star``.
    theta_star : array_like of shape (k, d)
        True parameters; must be finite.
    objective : {"mean", "max"}, default "mean"
        ``"mean"``: the IFCA paper's distance [1]_; ``"max"``: Su-Xu-Yang's
        :math:`d(\hat\theta, \theta^*)` [2]_.

    Returns
    -------
    perm : ndarray of shape (B, k) or (k,), intp
        ``perm[..., l]`` is the index of the estimate matched to truth ``l``, so
        ``theta_hat[..., perm, :]`` is aligned with ``theta_star``.  All entries are -1 for a
        replica holding a non-finite value.

    Notes
    -----
    Ties are broken deterministically.  For ``"max"`` our choice is, among all permutations
    attaining the minimal maximum, one with the smallest sum; hence both objectives return
    the same permutation whenever the min-sum matching is also bottleneck-optimal (e.g.
    whenever every estimate is closest to a distinct truth).

    Raises
    ------
    ValueError
        If a shape is not as above, ``k`` or ``d`` differ, ``theta_star`` is not finite, or
        ``objective`` is not one of ``"mean"``, ``"max"``.

    References
    ----------
    .. [1] A. Ghosh, J. Chung, D. Yin, K. Ramchandran, "An Efficient Framework for Clustered
       Federated Learning", NeurIPS 2020 (arXiv:2006.04088).
    .. [2] L. Su, J. Xu, P. Yang, "Global Convergence of Federated Learning for Mixed
       Regression", NeurIPS 2022 (arXiv:2206.07279).

    Examples
    --------
    >>> truth = np.array([[0.0], [10.0], [20.0]])
    >>> best_permutation(np.array([[19.0], [1.0], [12.0]]), truth)
    array([1, 2, 0])
    """
    check_choice("objective", objective, _OBJECTIVES)
    hat, star, batched = _check_parameters(theta_hat, theta_star, same_k=True)
    perm, _ = _match(_pairwise(hat, star), objective)
    return _unbatch(perm, batched)


#: The Parameters, Returns and Raises of the two matched distances, written once.
_MATCHED_SECTIONS = """Parameters
    ----------
    theta_hat : array_like of shape (B, k, d) or (k, d)
        Estimates; same ``k`` as ``theta_star``.
    theta_star : array_like of shape (k, d)
        True parameters; must be finite.

    Returns
    -------
    dist : ndarray of shape (B,) or numpy.float64
        NaN for a replica holding a non-finite value (see the module docstring).

    Raises
    ------
    ValueError
        If a shape is not as above, ``k`` or ``d`` differ, or ``theta_star`` is not finite."""


def _matched_sections(fn):
    """Fill the ``{sections}`` field of ``fn``'s docstring with :data:`_MATCHED_SECTIONS`."""
    if fn.__doc__:  # None under python -OO
        fn.__doc__ = fn.__doc__.replace("{sections}", _MATCHED_SECTIONS)
    return fn


def _matched_distance(theta_hat, theta_star, objective):
    """The matched distance of :func:`best_permutation`'s ``objective``, per replica."""
    hat, star, batched = _check_parameters(theta_hat, theta_star, same_k=True)
    _, value = _match(_pairwise(hat, star), objective)
    return _unbatch(value, batched)


@_matched_sections
def matched_mean_distance(theta_hat: ArrayLike, theta_star: ArrayLike) -> np.ndarray | np.float64:
    r"""Permutation-matched mean distance (the IFCA paper's ``dist``).

    .. math::

        \min_{\pi \in S_k} \frac{1}{k} \sum_{l=1}^{k}
        \lVert \hat\theta_{\pi(l)} - \theta^*_l \rVert_2 ,

    computed exactly for any ``k`` by linear assignment (see :func:`best_permutation`).

    {sections}

    Examples
    --------
    >>> truth = np.array([[0.0, 0.0], [4.0, 0.0]])
    >>> float(matched_mean_distance(np.array([[4.0, 1.0], [0.0, 3.0]]), truth))
    2.0
    """
    return _matched_distance(theta_hat, theta_star, "mean")


@_matched_sections
def matched_max_distance(theta_hat: ArrayLike, theta_star: ArrayLike) -> np.ndarray | np.float64:
    r"""Permutation-matched maximum distance (Su-Xu-Yang's :math:`d(\hat\theta, \theta^*)`).

    .. math::

        d(\hat\theta, \theta^*) = \min_{\pi \in S_k} \max_{l \in [k]}
        \lVert \hat\theta_{\pi(l)} - \theta^*_l \rVert_2 ,

    computed exactly for any ``k`` as a bottleneck assignment (see :func:`best_permutation`);
    the minimising permutation may differ from that of :func:`matched_mean_distance`.

    {sections}

    Examples
    --------
    >>> truth = np.array([[0.0, 0.0], [4.0, 0.0]])
    >>> float(matched_max_distance(np.array([[4.0, 1.0], [0.0, 3.0]]), truth))
    3.0
    """
    return _matched_distance(theta_hat, theta_star, "max")


def misclustering_rate(assignments: ArrayLike, labels: ArrayLike, k: int) -> np.ndarray | np.float64:
    r"""Fraction of clients misclustered under the best relabelling of the estimated clusters.

    .. math::

        1 - \frac{1}{m} \max_{\sigma \in S_k} \sum_{i=1}^{m}
        \mathbf 1\{\sigma(\hat z_i) = z_i\},

    computed by ``scipy.optimize.linear_sum_assignment`` (maximising agreement) on the
    ``k x k`` confusion matrix of each replica.  An assignment of -1 ("not assigned /
    unknown") never agrees with any label, so it always counts as misclustered.

    Parameters
    ----------
    assignments : array_like of int, shape (B, m) or (m,)
        Estimated cluster of each client, in ``[0, k)``, or -1.
    labels : array_like of int, shape (m,)
        True cluster of each client, in ``[0, k)``.
    k : int
        Number of clusters, ``k >= 1``.

    Returns
    -------
    rate : ndarray of shape (B,) or numpy.float64
        In ``[0, 1]``.

    Raises
    ------
    ValueError
        If an array is not an integer array of the shape above, ``m`` differs, or a value is
        out of range; ``TypeError`` if ``k`` is not an integer.

    Examples
    --------
    >>> float(misclustering_rate([1, 1, 0, 0], [0, 0, 1, 1], k=2))
    0.0
    >>> float(misclustering_rate([1, 1, 0, -1], [0, 0, 1, 1], k=2))
    0.25
    """
    k = check_int("k", k, low=1)
    labels = _as_array("labels", labels, "iu", "an integer")
    if labels.ndim != 1 or labels.size == 0:
        raise ValueError(f"labels must have shape (m,) with m >= 1, got shape {labels.shape}")
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or hi >= k:
        raise ValueError(
            f"labels must take values in [0, k) = [0, {k}), got values in [{lo}, {hi}]"
        )
    m = labels.size
    assignments = _as_array("assignments", assignments, "iu", "an integer")
    if assignments.ndim not in (1, 2) or assignments.shape[-1] != m:
        raise ValueError(
            f"assignments must have shape (B, m) or (m,) with m = {m} = len(labels), "
            f"got shape {assignments.shape}"
        )
    batched = assignments.ndim == 2
    assign = assignments.reshape(-1, m).astype(np.int64)
    if assign.size:
        lo, hi = int(assign.min()), int(assign.max())
        if lo < -1 or hi >= k:
            raise ValueError(
                f"assignments must take values in [0, k) = [0, {k}) or -1 (unassigned), "
                f"got values in [{lo}, {hi}]"
            )
    n_rep = assign.shape[0]
    valid = assign >= 0
    replica = np.broadcast_to(np.arange(n_rep)[:, None], assign.shape)
    truth = np.broadcast_to(labels.astype(np.int64), assign.shape)
    cell = (replica[valid] * k + assign[valid]) * k + truth[valid]
    confusion = np.bincount(cell, minlength=n_rep * k * k).reshape(n_rep, k, k)
    agree = np.empty(n_rep, dtype=np.int64)
    for b in range(n_rep):
        rows, cols = linear_sum_assignment(confusion[b], maximize=True)
        agree[b] = confusion[b][rows, cols].sum()
    return _unbatch((m - agree) / m, batched)


def _inverse_trace(covariance, d, k):
    """``tr(Sigma_l^-1)`` of each of ``k`` clusters, shape (k,), from one ``(d, d)`` covariance or
    ``(k, d, d)`` (each validated)."""
    arr = np.asarray(covariance)
    if arr.ndim == 2:
        return np.full(k, np.sum(1.0 / np.linalg.eigvalsh(check_covariance(arr, d, name="covariance"))))
    if arr.ndim != 3 or arr.shape[0] != k:
        raise ValueError(f"covariance must have shape (d, d) = ({d}, {d}) or (k, d, d) = ({k}, {d}, {d}) "
                         f"with k = len(cluster_sizes), got {arr.shape}")
    return np.array([np.sum(1.0 / np.linalg.eigvalsh(check_covariance(arr[l], d, name=f"covariance[{l}]")))
                     for l in range(k)])


def oracle_ls_floor(sigma: float, d: int, cluster_sizes: ArrayLike, *,
                    covariance: ArrayLike | None = None) -> np.ndarray:
    r"""Root-mean-square error of least squares with known labels (the oracle floor).

    With Gaussian design :math:`x \sim N(0, I_d)`, noise :math:`N(0, \sigma^2)` and
    :math:`N_l` pooled samples in cluster :math:`l`, the least-squares estimate on the true
    cluster satisfies

    .. math::

        \sqrt{E \lVert \hat\theta^{LS}_l - \theta^*_l \rVert_2^2}
        = \sigma \sqrt{\frac{d}{N_l - d - 1}}, \qquad N_l > d + 1 .

    Derivation: :math:`\hat\theta^{LS} - \theta^* = (X^\top X)^{-1} X^\top \zeta`, so
    :math:`E[\lVert\cdot\rVert^2 \mid X] = \sigma^2 \operatorname{tr}((X^\top X)^{-1})`;
    :math:`X^\top X \sim W_d(N, I_d)` is Wishart and
    :math:`E[(X^\top X)^{-1}] = I_d / (N - d - 1)` for :math:`N > d + 1` (mean of the inverse
    Wishart, e.g. Muirhead (1982), *Aspects of Multivariate Statistical Theory*, Sec. 3.2),
    giving :math:`\sigma^2 d / (N - d - 1)`.  No estimator that knows the labels does better
    on average, so no clustering method can beat it; it predicts where IFCA's success rate
    must be 0 (see ``paper_checks/``).

    With rows :math:`x \sim N(0, \Sigma_l)`, :math:`X^\top X = \Sigma_l^{1/2} V \Sigma_l^{1/2}`
    with :math:`V \sim W_d(N_l, I_d)`, so :math:`E[(X^\top X)^{-1}] = \Sigma_l^{-1} / (N_l - d - 1)`
    and the floor is :math:`\sigma \sqrt{\operatorname{tr}(\Sigma_l^{-1}) / (N_l - d - 1)}`.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, ``sigma >= 0``.
    d : int
        Dimension, ``d >= 1``.
    cluster_sizes : array_like of int, shape (k,)
        Pooled sample count :math:`N_l \ge 0` of each cluster.
    covariance : array_like of shape (d, d) or (k, d, d), optional
        The rows' covariance :math:`\Sigma_l` (symmetric positive definite), one for every
        cluster or one per cluster; the identity when omitted.

    Returns
    -------
    floor : ndarray of shape (k,), float64
        ``sigma * sqrt(d / (N_l - d - 1))`` (``d`` replaced by ``tr(Sigma_l^-1)`` with
        ``covariance``), and ``+inf`` where ``N_l <= d + 1`` (the
        expectation is infinite or least squares is not unique).  Our choice for
        ``sigma == 0``, where the formula reads 0 * inf: 0 where ``N_l >= d`` (the noise-free
        system is solved exactly almost surely), ``+inf`` where ``N_l < d``.

    Raises
    ------
    ValueError
        If ``sigma < 0`` or not finite, ``d < 1``, or ``cluster_sizes`` is not a non-empty
        1-D array of non-negative integers.

    Examples
    --------
    >>> oracle_ls_floor(0.1, 1000, [5000, 1001])
    array([0.05000625,        inf])
    >>> oracle_ls_floor(1.0, 2, [13], covariance=[[2.0, 0.0], [0.0, 0.5]])  # sqrt((1/2 + 2) / 10)
    array([0.5])
    """
    sigma = check_real("sigma", sigma, low=0.0)
    d = check_int("d", d, low=1)
    sizes = _as_array("cluster_sizes", cluster_sizes, "iu", "an integer")
    if sizes.ndim != 1 or sizes.size == 0:
        raise ValueError(
            f"cluster_sizes must have shape (k,) with k >= 1, got shape {sizes.shape}"
        )
    if sizes.min() < 0:
        raise ValueError(f"cluster_sizes must be >= 0, got {sizes.tolist()}")
    dof = sizes.astype(np.int64) - (d + 1)
    floor = np.full(sizes.shape, np.inf)
    positive = dof > 0
    if covariance is None:
        floor[positive] = sigma * np.sqrt(d / dof[positive])
    else:
        trace = _inverse_trace(covariance, d, sizes.size)
        floor[positive] = sigma * np.sqrt(trace[positive] / dof[positive])
    if sigma == 0.0:
        floor[sizes >= d] = 0.0
    return floor
