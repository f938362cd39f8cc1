"""Clustering building blocks shared by the clustered-FL algorithms: k-means and agglomerative.

Several algorithms cluster vectors on the server: one-shot clustering of the clients' local
least-squares estimates (Ghosh et al. 2020, Algorithm 1 [5]_), k-FED, FeSEM, the anchor clustering of
step 7 of federated moment descent (:func:`mixreg.algorithms.cluster_anchors`), and PACFL,
which clusters a proximity matrix of principal angles.  This module gives them one
implementation of each rule:

* :func:`kmeans`: Lloyd's algorithm [1]_ from a k-means++ start [2]_ (best of ``n_init`` restarts),
  from the deterministic farthest-point start [3]_ of the anchor clustering, or from given centres;
* :func:`agglomerative`: single, average or complete linkage on points or on a precomputed
  distance matrix, cut into a number of groups or at a distance threshold (SciPy's
  :func:`scipy.cluster.hierarchy.linkage` and :func:`~scipy.cluster.hierarchy.fcluster`);
* :func:`single_linkage_cut`: the default threshold of the anchor clustering, the middle of
  the largest gap of the minimum spanning tree [4]_ that leaves ``k`` groups;
* :func:`number_groups`: the one labelling convention of the package, groups numbered by their
  lowest member, so that labels do not depend on the internal order of the algorithm.

Squared distances are computed from explicit differences, :math:`\\sum_j (x_j - c_j)^2`, never
through the expansion :math:`\\lVert x\\rVert^2 - 2\\langle x, c\\rangle + \\lVert c\\rVert^2`, which
loses all accuracy when the points lie far from the origin compared with their spread (client
estimates crowding around a large :math:`\\theta^*_l`).  The ``(n, k, d)`` differences are formed
in blocks of rows to bound memory.

Fewer groups than asked for (duplicated points, a tied cut, an emptied centre) is not an error:
it is reported in the result and by a :class:`ClusteringWarning`.

References
----------
.. [1] S. Lloyd, "Least squares quantization in PCM", IEEE Trans. Inf. Theory 28(2), 1982.
.. [2] D. Arthur, S. Vassilvitskii, "k-means++: the advantages of careful seeding", SODA 2007.
.. [3] T. F. Gonzalez, "Clustering to minimize the maximum intercluster distance", Theoret.
   Comput. Sci. 38, 1985 (the farthest-point start).
.. [4] J. C. Gower, G. J. S. Ross, "Minimum spanning trees and single linkage cluster
   analysis", J. R. Stat. Soc. C 18(1), 1969.
.. [5] A. Ghosh, J. Chung, D. Yin, K. Ramchandran, "An Efficient Framework for Clustered
   Federated Learning", NeurIPS 2020 (one-shot baseline, Algorithm 1).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.cluster import hierarchy
from scipy.spatial.distance import pdist, squareform

from ._typing import ArrayLike
from .validation import check_array, check_choice, check_int, check_real

__all__ = [
    "ClusteringWarning",
    "KMeansResult",
    "AgglomerativeResult",
    "number_groups",
    "kmeans",
    "agglomerative",
    "single_linkage_cut",
    "squared_distances",
    "KMEANS_INITS",
    "LINKAGES",
]

KMEANS_INITS = ("k-means++", "farthest")
LINKAGES = ("single", "average", "complete")

# Largest number of float64 entries of one block of the (n, k, d) differences (32 MiB).
_DISTANCE_BLOCK = 1 << 22


class ClusteringWarning(UserWarning):
    """A clustering produced fewer groups than asked for, or Lloyd's loop did not converge."""


# --------------------------------------------------------------------------------------------
# Result records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class KMeansResult:
    """Outcome of :func:`kmeans` (the best restart).

    Attributes
    ----------
    centres : ndarray of shape (k, d), float64
        Row ``j`` is the centre of group ``j``: the mean of its members.  The centres of empty
        groups (``n_distinct < k``) come last and keep the position they had when they emptied.
    labels : ndarray of shape (n,), int64
        Group of every point in ``[0, n_distinct)``, numbered by their lowest member
        (:func:`number_groups`).
    inertia : float
        :math:`\\sum_i \\lVert x_i - c_{\\text{labels}_i} \\rVert^2`.
    n_iter : int
        Assignment steps of Lloyd's loop (the last one confirms convergence when ``converged``).
    n_distinct : int
        Number of non-empty groups.
    converged : bool
        The labels stopped changing within ``max_iter`` iterations.
    init : str
        ``"k-means++"``, ``"farthest"`` or ``"explicit"``.
    n_init : int
        Restarts run (1 unless ``init="k-means++"``).
    initial_centres : ndarray of shape (k, d), float64
        The start of the returned restart, in the order of the start (not renumbered).
    stop_reason : str
    """

    centres: np.ndarray
    labels: np.ndarray
    inertia: float
    n_iter: int
    n_distinct: int
    converged: bool
    init: str
    n_init: int
    initial_centres: np.ndarray
    stop_reason: str


@dataclass(frozen=True, kw_only=True)
class AgglomerativeResult:
    """Outcome of :func:`agglomerative`.

    Attributes
    ----------
    labels : ndarray of shape (n,), int64
        Group of every point in ``[0, n_groups)``, numbered by their lowest member.
    n_groups : int
    threshold : float
        The cut height: the given ``threshold``, or, with ``n_clusters``, the midpoint of the
        last merge made and the first merge not made (``inf`` for a single group, see
        :func:`single_linkage_cut` for the conventions).  Cutting the tree at this height gives
        ``labels``, except when ``n_clusters`` splits points at distance 0 (the first merge not
        made has height 0): no threshold separates them, and 0 is reported.
    linkage : str
    """

    labels: np.ndarray
    n_groups: int
    threshold: float
    linkage: str


# --------------------------------------------------------------------------------------------
# Common kernels (trust their inputs)
# --------------------------------------------------------------------------------------------


def number_groups(labels: ArrayLike) -> np.ndarray:
    """Renumber group labels by their lowest member.

    Parameters
    ----------
    labels : int array of shape (n,)
        Any integer group identifiers.

    Returns
    -------
    labels : ndarray of shape (n,), int64
        The same partition with values in ``[0, G)``; group ``g`` is the ``g``-th group met when
        reading the points in order.  Two labellings of the same partition give the same result.

    Examples
    --------
    >>> number_groups([7, 7, 2, 9, 2]).tolist()
    [0, 0, 1, 2, 1]
    """
    labels = np.asarray(labels)
    if labels.ndim != 1 or (labels.size and labels.dtype.kind not in "iu"):
        raise ValueError(f"labels must be a 1-D integer array, got shape {labels.shape} and dtype {labels.dtype}")
    if labels.size == 0:
        return np.zeros(0, dtype=np.int64)
    return _number_groups(labels)


def _number_groups(labels):
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[np.unique(labels, return_inverse=True)[1]].astype(np.int64)


#: Terms summed in one block by NumPy's pairwise summation (``PW_BLOCKSIZE``).
_PAIRWISE_BLOCK = 128


@njit(cache=True)
def _pairwise_plan(n):
    """NumPy's pairwise summation of ``n`` terms as a postfix program of blocks.

    ``np.add.reduce`` over a contiguous axis (``pairwise_sum`` of NumPy's ``loops_utils.h.src``)
    sums up to 128 terms as one block (:func:`_block_sum_sq_diff`); more, as the sum of the first
    ``n // 2`` terms rounded down to a multiple of 8 plus the sum of the others, each split again
    the same way.  Returns ``lo, size`` (int64 arrays): entry ``p`` sums the block of ``size[p]``
    terms from ``lo[p]`` (left to right over the terms), or, where ``size[p] < 0``, replaces the
    last two sums by their sum (left plus right).  The recursion is unrolled on an explicit stack.
    """
    cap = 2 * (n // 64) + 4  # the halves of a split have at least 64 terms: n // 64 blocks at most
    lo_out = np.empty(cap, dtype=np.int64)
    size_out = np.empty(cap, dtype=np.int64)
    pending = np.empty((2, 192), dtype=np.int64)  # the halving depth is below 64
    pending[0, 0] = 0
    pending[1, 0] = n
    top = 1
    p = 0
    while top > 0:
        top -= 1
        lo = pending[0, top]
        size = pending[1, top]
        if size <= _PAIRWISE_BLOCK:  # a block, or (size -1) the addition of two halves
            lo_out[p] = lo
            size_out[p] = size
            p += 1
        else:  # the left half first, then the right one, then their sum
            half = size // 2
            half -= half % 8
            pending[0, top] = 0
            pending[1, top] = -1
            pending[0, top + 1] = lo + half
            pending[1, top + 1] = size - half
            pending[0, top + 2] = lo
            pending[1, top + 2] = half
            top += 3
    return lo_out[:p], size_out[:p]


@njit(cache=True, inline="always")
def _block_sum_sq_diff(u, v, lo, n):
    """``sum_{c = lo}^{lo + n - 1} (u_c - v_c)^2`` for ``n <= 128`` terms, in float64, in the order
    of one block of NumPy's pairwise sum: fewer than 8 terms left to right from 0; else 8 partial
    sums (term ``c`` into sum ``(c - lo) % 8`` over the first multiple of 8 terms), added as
    ``((r_0 + r_1) + (r_2 + r_3)) + ((r_4 + r_5) + (r_6 + r_7))``, then the rest left to right.
    Every term is the square of the float64 difference, rounded before it is added.

    The main loop indexes with unsigned integers, which Numba does not wrap around: twice as fast
    (the order of the sums is written out, so this changes no bit).
    """
    if n < 8:
        res = 0.0
        for c in range(lo, lo + n):
            t = np.float64(u[c]) - np.float64(v[c])
            res += t * t
        return res
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    five, six, seven, eight = np.uint64(5), np.uint64(6), np.uint64(7), np.uint64(8)
    c = np.uint64(lo)
    t = np.float64(u[c]) - np.float64(v[c])
    r0 = t * t
    t = np.float64(u[c + one]) - np.float64(v[c + one])
    r1 = t * t
    t = np.float64(u[c + two]) - np.float64(v[c + two])
    r2 = t * t
    t = np.float64(u[c + three]) - np.float64(v[c + three])
    r3 = t * t
    t = np.float64(u[c + four]) - np.float64(v[c + four])
    r4 = t * t
    t = np.float64(u[c + five]) - np.float64(v[c + five])
    r5 = t * t
    t = np.float64(u[c + six]) - np.float64(v[c + six])
    r6 = t * t
    t = np.float64(u[c + seven]) - np.float64(v[c + seven])
    r7 = t * t
    stop = np.uint64(lo + n - n % 8)
    c += eight
    while c < stop:
        t = np.float64(u[c]) - np.float64(v[c])
        r0 += t * t
        t = np.float64(u[c + one]) - np.float64(v[c + one])
        r1 += t * t
        t = np.float64(u[c + two]) - np.float64(v[c + two])
        r2 += t * t
        t = np.float64(u[c + three]) - np.float64(v[c + three])
        r3 += t * t
        t = np.float64(u[c + four]) - np.float64(v[c + four])
        r4 += t * t
        t = np.float64(u[c + five]) - np.float64(v[c + five])
        r5 += t * t
        t = np.float64(u[c + six]) - np.float64(v[c + six])
        r6 += t * t
        t = np.float64(u[c + seven]) - np.float64(v[c + seven])
        r7 += t * t
        c += eight
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    for c in range(lo + n - n % 8, lo + n):
        t = np.float64(u[c]) - np.float64(v[c])
        res += t * t
    return res


@njit(cache=True)
def _pairwise_squared_distances(points, centres, out):
    """``out[i, j] = ||points[i] - centres[j]||^2`` (float64 arrays), in NumPy's pairwise order
    (:func:`_pairwise_plan`, :func:`_block_sum_sq_diff`), added to 0 as ``np.add.reduce`` starts
    from its identity."""
    n = points.shape[0]
    k = centres.shape[0]
    lo, size = _pairwise_plan(points.shape[1])
    sums = np.empty(64)
    for i in range(n):
        for j in range(k):
            out[i, j] = _pairwise_sq_distance(points[i], centres[j], lo, size, sums)


@njit(cache=True, inline="always")
def _pairwise_sq_distance(u, v, lo, size, sums):
    """``||u - v||^2`` summed by the program ``(lo, size)`` of :func:`_pairwise_plan` (``sums``:
    work space for the partial sums waiting for their right half) and added to 0, as
    ``np.add.reduce`` starts from its identity."""
    top = 0
    for p in range(lo.shape[0]):
        if size[p] < 0:
            top -= 1
            sums[top - 1] = sums[top - 1] + sums[top]
        else:
            sums[top] = _block_sum_sq_diff(u, v, lo[p], size[p])
            top += 1
    return 0.0 + sums[0]


def squared_distances(points: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Squared distances ``(n, k)`` from explicit differences.

    IN: ``points`` (n, d), ``centres`` (k, d).  Every entry is ``((x - c) ** 2).sum()`` with the
    reduction over the contiguous last axis (NumPy's pairwise summation), to the last bit.  Two
    float64 inputs take one Numba pass that sums in that very order
    (``_pairwise_squared_distances``, no (n, k, d) temporary); other dtypes the NumPy
    expression itself, in blocks of rows (the blocking does not change a bit).
    """
    n, d = points.shape
    k = centres.shape[0]
    if points.dtype == np.float64 and centres.dtype == np.float64:
        out = np.empty((n, k))
        _pairwise_squared_distances(np.ascontiguousarray(points), np.ascontiguousarray(centres), out)
        return out
    rows = max(1, _DISTANCE_BLOCK // max(1, k * d))
    if rows >= n:
        return ((points[:, None, :] - centres[None]) ** 2).sum(axis=2)
    out = np.empty((n, k))
    for lo in range(0, n, rows):
        out[lo:lo + rows] = ((points[lo:lo + rows, None, :] - centres[None]) ** 2).sum(axis=2)
    return out


def _farthest_start(points, k):
    """First centre: the point nearest to the mean; each next: farthest from those chosen."""
    dist_to_mean = np.linalg.norm(points - points.mean(axis=0), axis=1)
    centres = [points[int(np.argmin(dist_to_mean))]]
    nearest = np.linalg.norm(points - centres[0], axis=1)
    for _ in range(1, k):
        j = int(np.argmax(nearest))
        centres.append(points[j])
        nearest = np.minimum(nearest, np.linalg.norm(points - points[j], axis=1))
    return np.array(centres)


def _n_local_trials(k):
    return 2 + int(np.log(k))


def _kmeans_plusplus(points, k, rng):
    """Greedy k-means++ seeding (D^2 sampling, best of ``2 + floor(ln k)`` candidates)."""
    n = points.shape[0]
    trials = _n_local_trials(k)
    centres = np.empty((k, points.shape[1]))
    first = int(rng.integers(n))
    centres[0] = points[first]
    closest = squared_distances(points, centres[:1])[:, 0]
    for c in range(1, k):
        cumulative = np.cumsum(closest)
        # u * total with u in [0, 1) and side="right": the index found has D^2 weight > 0 whenever
        # the total is > 0, with probability D^2 / total (all points are duplicates otherwise).
        targets = rng.random(trials) * cumulative[-1]
        candidates = np.minimum(np.searchsorted(cumulative, targets, side="right"), n - 1)
        to_candidates = np.minimum(closest[None], squared_distances(points[candidates], points))
        potentials = to_candidates.sum(axis=1)
        best = int(np.argmin(potentials))
        closest = to_candidates[best]
        centres[c] = points[candidates[best]]
    return centres


def _lloyd(points, centres, max_iter):
    """Lloyd's iterations from ``centres`` until the labels stop changing (driver, one start).

    Ties of the assignment go to the lowest centre index; an emptied centre keeps its position.
    Returns (labels in the start's numbering, centres, n_iter, converged).  Float64 points of two
    columns or more run in one Numba pass (:func:`_lloyd_float64`), bit for bit the NumPy loop
    below (with one column, ``mean(axis=0)`` is NumPy's pairwise sum of a contiguous vector).
    """
    centres = np.array(centres, dtype=np.float64)
    k = centres.shape[0]
    labels = np.full(points.shape[0], -1)
    if points.dtype == np.float64 and points.shape[1] >= 2:  # one column: NumPy sums the rows pairwise
        points = np.ascontiguousarray(points)
        n_iter, converged = _lloyd_float64(points, centres, max_iter, labels, np.empty((points.shape[0], k)),
                                           np.empty(points.shape[1]))
        return labels, centres, int(n_iter), bool(converged)
    converged = False
    n_iter = 0
    for _ in range(max_iter):
        new = np.argmin(squared_distances(points, centres), axis=1)
        n_iter += 1
        if np.array_equal(new, labels):
            converged = True
            break
        labels = new
        for j in range(k):
            members = labels == j
            if np.any(members):  # an emptied centre keeps its position
                centres[j] = points[members].mean(axis=0)
    return labels, centres, n_iter, converged


@njit(cache=True)
def _lloyd_float64(points, centres, max_iter, labels, dist, total):
    """:func:`_lloyd`'s loop on float64 arrays, in place (``labels`` starts at -1; ``dist`` and
    ``total`` are work arrays).  Each step is the NumPy loop's: the distances of
    :func:`squared_distances`, ``np.argmin``'s rule (the lowest index of the least value, the
    first nan if any), and every non-empty centre the mean of its points as ``np.mean(axis=0)``
    computes it (the rows added one after the other in index order, then divided by their
    number).  Returns ``(n_iter, converged)``."""
    n, d = points.shape
    k = centres.shape[0]
    n_iter = 0
    for _ in range(max_iter):
        _pairwise_squared_distances(points, centres, dist)
        n_iter += 1
        changed = False
        for i in range(n):
            best = 0
            for j in range(1, k):
                if np.isnan(dist[i, best]):
                    break
                if dist[i, j] < dist[i, best] or np.isnan(dist[i, j]):
                    best = j
            if best != labels[i]:
                changed = True
            labels[i] = best
        if not changed:
            return n_iter, True
        for j in range(k):
            count = 0
            for i in range(n):
                if labels[i] == j:
                    if count == 0:
                        for c in range(d):
                            total[c] = points[i, c]
                    else:
                        for c in range(d):
                            total[c] = total[c] + points[i, c]
                    count += 1
            if count > 0:  # an emptied centre keeps its position
                for c in range(d):
                    centres[j, c] = total[c] / count
    return n_iter, False


def _inertia(points, centres, labels):
    return float(((points - centres[labels]) ** 2).sum())


# --------------------------------------------------------------------------------------------
# k-means
# --------------------------------------------------------------------------------------------


def kmeans(points: ArrayLike, k: int, *, init: str | ArrayLike = "k-means++", n_init: int = 10, max_iter: int = 100,
           rng: np.random.Generator | None = None) -> KMeansResult:
    """Lloyd's k-means: best of ``n_init`` restarts by inertia.

    Minimises, over centres :math:`c_1, \\dots, c_k` and labels :math:`z_i`, the inertia

    .. math::

        \\sum_{i=1}^{n} \\lVert x_i - c_{z_i} \\rVert_2^2

    by Lloyd's alternation [1]_: assign every point to its nearest centre (ties to the lowest
    centre index of the current numbering), move every non-empty centre to the mean of its
    points, until the labels stop changing or ``max_iter`` assignment steps were made.  An
    emptied centre keeps its position (scikit-learn would relocate it; ours, so that the
    farthest-point start reproduces the anchor clustering exactly).

    Parameters
    ----------
    points : array of shape (n, d)
        Finite; computed in float64.
    k : int in [1, n]
        Number of centres.
    init : {"k-means++", "farthest"} or array of shape (k, d)
        The start.

        * ``"k-means++"`` (default) [2]_: first centre uniform among the points, each next
          one drawn with probability proportional to :math:`D^2(x)`, the squared distance to
          the nearest centre chosen so far.  As scikit-learn's ``_kmeans_plusplus`` we use the
          *greedy* variant: ``2 + floor(ln k)`` candidates are drawn by :math:`D^2` sampling and
          the one giving the lowest potential :math:`\\sum_x D^2(x)` is kept (plain k-means++ is
          the one-candidate case).  Needs ``rng``; the restarts draw from it one after another.
        * ``"farthest"``: deterministic farthest-point start [3]_, the step-7 fallback of
          :func:`mixreg.algorithms.cluster_anchors`: first centre = the point nearest to the
          mean of all points, each next one = the point farthest from the centres chosen so far
          (first index on ties).
        * an array ``(k, d)``: explicit initial centres.
    n_init : int >= 1
        Restarts with ``"k-means++"``; the start with the smallest inertia is returned (the
        first on ties).  Ignored (one run) for the deterministic starts.
    max_iter : int >= 1
        Most assignment steps of one run.
    rng : numpy.random.Generator, optional
        Required by ``"k-means++"`` (results are a function of its state); unused otherwise.

    Returns
    -------
    KMeansResult
        Labels numbered by their lowest member, centres in that numbering.

    Warns
    -----
    ClusteringWarning
        When fewer than ``k`` groups are non-empty (e.g. fewer than ``k`` distinct points), or
        when the returned run did not converge within ``max_iter``.

    Raises
    ------
    ValueError, TypeError
        Naming the parameter: non-finite or badly shaped ``points``, ``k`` outside ``[1, n]``,
        an unknown ``init``, an initial array of the wrong shape, ``rng`` not a Generator, ...

    See Also
    --------
    agglomerative : hierarchical clustering, on points or distances.

    References
    ----------
    .. [1] S. Lloyd, "Least squares quantization in PCM", IEEE Trans. Inf. Theory 28(2), 1982.
    .. [2] D. Arthur, S. Vassilvitskii, "k-means++: the advantages of careful seeding", SODA 2007.
    .. [3] T. F. Gonzalez, "Clustering to minimize the maximum intercluster distance", Theoret.
       Comput. Sci. 38, 1985.

    Examples
    --------
    >>> pts = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 0.0], [10.0, 1.0], [0.0, 0.5]])
    >>> res = kmeans(pts, 2, rng=np.random.default_rng(0))
    >>> res.labels.tolist(), res.centres.tolist(), res.inertia
    ([0, 0, 1, 1, 0], [[0.0, 0.5], [10.0, 0.5]], 1.0)
    >>> kmeans(pts, 2, init="farthest").labels.tolist()
    [0, 0, 1, 1, 0]
    """
    # validate
    points = check_array("points", points, ndim=2, dtype=np.float64)
    n, d = points.shape
    if n == 0 or d == 0:
        raise ValueError(f"points must have at least one row and one column, got shape {points.shape}")
    k = check_int("k", k, low=1, high=n)
    n_init = check_int("n_init", n_init, low=1)
    max_iter = check_int("max_iter", max_iter, low=1)
    if isinstance(init, str):
        check_choice("init", init, KMEANS_INITS)
        name = init
    else:
        start = check_array("init", init, shape=(k, d), dtype=np.float64)
        name = "explicit"
    if name == "k-means++" and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator for init='k-means++', got {type(rng).__name__}")

    # plan and run
    runs = n_init if name == "k-means++" else 1
    best = None
    for _ in range(runs):
        if name == "k-means++":
            start = _kmeans_plusplus(points, k, rng)
        elif name == "farthest":
            start = _farthest_start(points, k)
        labels, centres, n_iter, converged = _lloyd(points, start, max_iter)
        inertia = _inertia(points, centres, labels)
        if best is None or inertia < best[0]:
            best = (inertia, labels, centres, n_iter, converged, start)
    assert best is not None  # runs >= 1
    inertia, labels, centres, n_iter, converged, start = best

    # build the result
    present, first = np.unique(labels, return_index=True)
    empty = np.setdiff1d(np.arange(k), present)
    order = np.concatenate([present[np.argsort(first)], empty])  # new group g = old order[g]
    n_distinct = int(present.size)
    stop_reason = (f"labels stable after {n_iter} assignment steps" if converged
                   else f"max_iter={max_iter} reached with labels still changing")
    if n_distinct < k:
        warnings.warn(f"k-means with k={k} produced only {n_distinct} non-empty groups "
                      f"(init={name!r}); fewer than k distinct points or an emptied centre",
                      ClusteringWarning, stacklevel=2)
    if not converged:
        warnings.warn(f"k-means (k={k}, init={name!r}) did not converge within max_iter={max_iter}",
                      ClusteringWarning, stacklevel=2)
    return KMeansResult(
        centres=centres[order],
        labels=_number_groups(labels),
        inertia=inertia,
        n_iter=n_iter,
        n_distinct=n_distinct,
        converged=converged,
        init=name,
        n_init=runs,
        initial_centres=np.array(start, dtype=np.float64),
        stop_reason=stop_reason,
    )


# --------------------------------------------------------------------------------------------
# Agglomerative clustering
# --------------------------------------------------------------------------------------------


def _cut_height(heights, n_groups):
    """Midpoint of the last merge made and the first one not made, leaving ``n_groups`` groups.

    ``heights`` are the ``n - 1`` merge heights in ascending order (monotone linkages).
    Conventions of :func:`mixreg.algorithms.cluster_anchors`: ``inf`` for one group; half
    the first merge not made when no merge is made or the last one made is at height 0.
    """
    n = heights.size + 1
    if n_groups <= 1 or n == 1:
        return float("inf")
    desc = heights[::-1]
    upper = desc[n_groups - 2]
    lower = desc[n_groups - 1] if n_groups - 1 < desc.size else 0.0
    return float(0.5 * (upper + lower)) if lower > 0 else float(0.5 * upper)


def single_linkage_cut(points: ArrayLike, k: int) -> float:
    """The distance threshold that cuts the single-linkage tree of ``points`` into ``k`` groups.

    :math:`\\tau` is the midpoint of the ``(k-1)``-th and ``k``-th largest edges of the
    Euclidean minimum spanning tree [1]_, i.e. of the largest :math:`\\tau` at which the graph
    :math:`\\{\\lVert x_i - x_j \\rVert \\le \\tau\\}` still has ``k`` connected components and the
    smallest at which it has fewer.  This is the default threshold of step 7 of federated moment
    descent (:func:`mixreg.algorithms.cluster_anchors`), with its special cases:
    ``inf`` when ``k = 1`` or ``n = 1``; half the ``(k-1)``-th largest edge when ``k = n`` or
    the ``k``-th largest edge is 0 (duplicated points).  With tied edges the components at
    :math:`\\tau` may number fewer than ``k``.

    Parameters
    ----------
    points : array of shape (n, d)
        Finite.
    k : int in [1, n]

    Returns
    -------
    tau : float

    References
    ----------
    .. [1] J. C. Gower, G. J. S. Ross, "Minimum spanning trees and single linkage cluster
       analysis", J. R. Stat. Soc. C 18(1), 1969.

    Examples
    --------
    >>> single_linkage_cut(np.array([[0.0], [1.0], [5.0], [6.0]]), 2)  # MST edges 1, 4, 1
    2.5
    """
    points = check_array("points", points, ndim=2, dtype=np.float64)
    n = points.shape[0]
    if n == 0:
        raise ValueError("points must have at least one row, got shape (0, d)")
    k = check_int("k", k, low=1, high=n)
    if k == 1 or n == 1:
        return float("inf")
    edges = np.sort(hierarchy.linkage(points, method="single")[:, 2])[::-1]  # MST edges, descending
    upper = edges[k - 2]
    lower = edges[k - 1] if k - 1 < edges.size else 0.0
    return float(0.5 * (upper + lower)) if lower > 0 else float(0.5 * upper)


def agglomerative(points: ArrayLike | None = None, *, distances: ArrayLike | None = None, n_clusters: int | None = None,
                  threshold: float | None = None, linkage: str = "single") -> AgglomerativeResult:
    """Hierarchical agglomerative clustering cut into ``n_clusters`` groups or at ``threshold``.

    Starting from singletons, the two closest groups are merged repeatedly; the distance between
    groups ``A`` and ``B`` is

    .. math::

        D(A, B) = \\min_{a, b} \\delta_{ab} \\ (\\text{single}), \\quad
        \\frac{1}{|A||B|} \\sum_{a, b} \\delta_{ab} \\ (\\text{average}), \\quad
        \\max_{a, b} \\delta_{ab} \\ (\\text{complete}),

    with :math:`\\delta` the Euclidean distance between points or the given matrix.  The tree is
    built by :func:`scipy.cluster.hierarchy.linkage` on the condensed distances and cut by
    :func:`scipy.cluster.hierarchy.fcluster` (``criterion="maxclust"`` for ``n_clusters``,
    ``"distance"`` for ``threshold``: points whose merge height is ``<= threshold`` share a
    group).  For single linkage the merge height of two points is the largest edge on their
    path in the minimum spanning tree, so cutting at ``threshold`` gives exactly the connected
    components of the graph joining points at distance ``<= threshold`` (the rule of step 7 of
    federated moment descent).

    Parameters
    ----------
    points : array of shape (n, d), optional
        Finite points (Euclidean distances).  Exactly one of ``points`` and ``distances``.
    distances : array of shape (n, n), optional
        A precomputed dissimilarity matrix, e.g. PACFL's matrix of principal angles between the
        clients' subspaces: finite, non-negative, symmetric up to a relative ``1e-10`` (it is
        symmetrised); the diagonal is ignored.
    n_clusters : int in [1, n], optional
        Number of groups.  With tied merge heights the cut can give fewer (warned).
    threshold : float >= 0, optional
        Cut height.  Exactly one of ``n_clusters`` and ``threshold``.
    linkage : {"single", "average", "complete"}

    Returns
    -------
    AgglomerativeResult
        Labels numbered by their lowest member and the cut height used.

    Warns
    -----
    ClusteringWarning
        When ``n_clusters`` is given and fewer groups come out (tied merge heights).

    Raises
    ------
    ValueError, TypeError
        Naming the parameter.

    See Also
    --------
    single_linkage_cut : the threshold of ``n_clusters`` groups under single linkage.
    kmeans

    Examples
    --------
    >>> pts = np.array([[0.0], [1.0], [5.0], [6.0], [20.0]])
    >>> res = agglomerative(pts, n_clusters=2)
    >>> res.labels.tolist(), res.threshold
    ([0, 0, 0, 0, 1], 9.0)
    >>> agglomerative(pts, threshold=1.0).labels.tolist()
    [0, 0, 1, 1, 2]
    >>> D = np.abs(pts - pts.T)  # a precomputed distance matrix
    >>> agglomerative(distances=D, n_clusters=3, linkage="complete").labels.tolist()
    [0, 0, 1, 1, 2]
    """
    # validate
    if (points is None) == (distances is None):
        raise ValueError("give exactly one of points (n, d) and distances (n, n)")
    if (n_clusters is None) == (threshold is None):
        raise ValueError("give exactly one of n_clusters and threshold")
    check_choice("linkage", linkage, LINKAGES)
    if points is not None:
        points = check_array("points", points, ndim=2, dtype=np.float64)
        n = points.shape[0]
        if n == 0:
            raise ValueError("points must have at least one row, got shape (0, d)")
    else:
        distances = check_array("distances", distances, ndim=2, dtype=np.float64)
        n = distances.shape[0]
        if distances.shape != (n, n) or n == 0:
            raise ValueError(f"distances must be a non-empty square matrix (n, n), got shape {distances.shape}")
        if np.any(distances < 0):
            raise ValueError("distances must be non-negative")
        scale = np.abs(distances).max() if n else 0.0
        if np.abs(distances - distances.T).max(initial=0.0) > 1e-10 * scale:
            raise ValueError("distances must be symmetric (up to a relative 1e-10)")
    if n_clusters is not None:
        n_clusters = check_int("n_clusters", n_clusters, low=1, high=n)
    else:
        threshold = check_real("threshold", threshold, low=0.0)

    # run
    if n == 1:
        labels = np.zeros(1, dtype=np.int64)
        cut = float("inf") if threshold is None else threshold  # n_clusters given: no threshold
        return AgglomerativeResult(labels=labels, n_groups=1, threshold=cut, linkage=linkage)
    if points is not None:
        condensed = pdist(points)
    else:
        assert isinstance(distances, np.ndarray)  # exactly one of points and distances, checked above
        condensed = squareform(0.5 * (distances + distances.T), checks=False)
    tree = hierarchy.linkage(condensed, method=linkage)
    if n_clusters is not None:
        raw = hierarchy.fcluster(tree, t=n_clusters, criterion="maxclust")
    else:
        raw = hierarchy.fcluster(tree, t=threshold, criterion="distance")
    labels = _number_groups(raw)
    n_groups = int(labels.max()) + 1

    # build the result
    if n_clusters is not None:
        cut = _cut_height(np.sort(tree[:, 2]), n_groups)
        if n_groups < n_clusters:
            warnings.warn(f"agglomerative ({linkage} linkage) with n_clusters={n_clusters} produced only "
                          f"{n_groups} groups (tied merge heights)", ClusteringWarning, stacklevel=2)
    else:
        assert threshold is not None  # exactly one of n_clusters and threshold
        cut = threshold
    return AgglomerativeResult(labels=labels, n_groups=n_groups, threshold=cut, linkage=linkage)
