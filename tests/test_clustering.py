"""Tests of mixreg.clustering against reference implementations written here and SciPy."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import pdist, squareform

from mixreg import clustering
from mixreg.clustering import (
    AgglomerativeResult,
    ClusteringWarning,
    KMeansResult,
    agglomerative,
    kmeans,
    number_groups,
    single_linkage_cut,
)
from mixreg.algorithms.moment_descent import cluster_anchors

FAST = settings(derandomize=True, max_examples=60, deadline=None)


# --------------------------------------------------------------------------------------------
# Reference implementations: verbatim copies of the step-7 code of mixreg.algorithms.moment_descent
# (before it moved here), kept so that the comparison survives the deletion of the originals.
# --------------------------------------------------------------------------------------------


def _number_groups(labels):
    """Renumber component labels by their lowest member."""
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return rank[np.unique(labels, return_inverse=True)[1]].astype(np.int64)


def _kmeans(points, k, n_iter=100):
    """Lloyd's algorithm from a deterministic farthest-point start (no randomness needed).

    The first centre is the point closest to the overall mean, each next one the point
    farthest from the centres chosen so far.  Returns labels numbered by their lowest member.
    """
    dist_to_mean = np.linalg.norm(points - points.mean(axis=0), axis=1)
    centres = [points[int(np.argmin(dist_to_mean))]]
    nearest = np.linalg.norm(points - centres[0], axis=1)
    for _ in range(1, k):
        j = int(np.argmax(nearest))
        centres.append(points[j])
        nearest = np.minimum(nearest, np.linalg.norm(points - points[j], axis=1))
    centres = np.array(centres)
    labels = np.full(points.shape[0], -1)
    for _ in range(n_iter):
        new = np.argmin(((points[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(k):
            if np.any(labels == j):  # an emptied centre keeps its position
                centres[j] = points[labels == j].mean(axis=0)
    return _number_groups(labels)


def _reference_tau(pts, k):
    """The default threshold of cluster_anchors (verbatim)."""
    if k == 1 or pts.shape[0] == 1:
        tau = float("inf")
    else:
        edges = np.sort(linkage(pts, method="single")[:, 2])[::-1]  # MST edges, descending
        upper = edges[k - 2] if k >= 2 else np.inf
        lower = edges[k - 1] if k - 1 < edges.size else 0.0
        tau = float(0.5 * (upper + lower)) if lower > 0 else float(0.5 * upper)
    return tau


def _reference_lloyd(points, centres, max_iter):
    """Textbook Lloyd loop, one point and one centre at a time."""
    centres = np.array(centres, dtype=float)
    n, k = len(points), len(centres)
    labels = [-1] * n
    for _ in range(max_iter):
        new = [min(range(k), key=lambda j: (float(np.sum((points[i] - centres[j]) ** 2)), j)) for i in range(n)]
        if new == labels:
            break
        labels = new
        for j in range(k):
            members = [points[i] for i in range(n) if labels[i] == j]
            if members:
                centres[j] = np.mean(members, axis=0)
    return np.array(labels)


# --------------------------------------------------------------------------------------------
# Strategies: small point clouds, some on a coarse grid (ties and duplicated points)
# --------------------------------------------------------------------------------------------


@st.composite
def point_clouds(draw, max_n=25, max_d=4):
    n = draw(st.integers(1, max_n))
    d = draw(st.integers(1, max_d))
    seed = draw(st.integers(0, 2**32 - 1))
    kind = draw(st.sampled_from(["grid", "gaussian", "blobs", "duplicates"]))
    rng = np.random.default_rng(seed)
    if kind == "grid":  # many exact ties of distances, duplicated points
        pts = rng.integers(-2, 3, size=(n, d)).astype(float)
    elif kind == "gaussian":
        pts = rng.standard_normal((n, d))
    elif kind == "blobs":
        centres = 5 * rng.standard_normal((3, d))
        pts = centres[rng.integers(0, 3, n)] + 0.3 * rng.standard_normal((n, d))
    else:  # few distinct points, each repeated
        base = rng.standard_normal((max(1, n // 3), d))
        pts = base[rng.integers(0, base.shape[0], n)]
    k = draw(st.integers(1, n))
    return pts, k


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ClusteringWarning)
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------------------------
# number_groups and the farthest-point start
# --------------------------------------------------------------------------------------------


@FAST
@given(st.lists(st.integers(-5, 5), min_size=1, max_size=30))
def test_number_groups_matches_reference_and_is_canonical(values):
    """Same partition -> same labels; group g is the g-th group met in reading order."""
    labels = np.array(values)
    out = number_groups(labels)
    np.testing.assert_array_equal(out, _number_groups(labels))
    assert out.dtype == np.int64 and out[0] == 0
    np.testing.assert_array_equal(number_groups(3 * labels + 100), out)
    seen = np.maximum.accumulate(out)
    assert np.all(out <= np.concatenate([[0], seen[:-1] + 1]))


@settings(derandomize=True, max_examples=200, deadline=None)
@given(point_clouds(), st.sampled_from([1, 2, 3, 100]))
def test_farthest_start_is_bit_identical_to_the_old_kmeans(cloud, max_iter):
    """init='farthest' reproduces moment_descent._kmeans exactly, ties and duplicates included."""
    pts, k = cloud
    res = _quiet(kmeans, pts, k, init="farthest", max_iter=max_iter)
    old = _kmeans(pts, k, n_iter=max_iter)
    assert res.labels.dtype == old.dtype
    np.testing.assert_array_equal(res.labels, old)
    assert res.n_init == 1 and res.init == "farthest"


def test_blocked_distances_do_not_change_a_bit(monkeypatch):
    """float32 inputs take NumPy's expression in blocks of rows; the blocks change no bit."""
    rng = np.random.default_rng(0)
    pts = (rng.standard_normal((300, 7)) * 1e3 + 1e6).astype(np.float32)
    centres = (rng.standard_normal((5, 7)) * 1e3 + 1e6).astype(np.float32)
    full = clustering.squared_distances(pts, centres)
    monkeypatch.setattr(clustering, "_DISTANCE_BLOCK", 37)  # one row per block, then 1-row tail
    blocked = clustering.squared_distances(pts, centres)
    np.testing.assert_array_equal(blocked, full)
    np.testing.assert_array_equal(full, ((pts[:, None, :] - centres[None]) ** 2).sum(axis=2))
    pts64 = pts.astype(np.float64)
    np.testing.assert_array_equal(kmeans(pts64, 5, init="farthest").labels, _kmeans(pts64, 5))


def _numpy_lloyd(points, centres, max_iter):
    """Lloyd's loop in NumPy, as the library wrote it before its Numba pass."""
    centres = np.array(centres, dtype=np.float64)
    labels = np.full(points.shape[0], -1)
    for n_iter in range(1, max_iter + 1):
        new = np.argmin(((points[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
        if np.array_equal(new, labels):
            return labels, centres, n_iter, True
        labels = new
        for j in range(centres.shape[0]):
            if np.any(labels == j):
                centres[j] = points[labels == j].mean(axis=0)
    return labels, centres, max_iter, False


@pytest.mark.parametrize("d", [1, 2, 3, 8, 17, 200])
def test_lloyd_equals_the_numpy_loop_bit_for_bit(d):
    """The Numba Lloyd pass (float64, two columns or more) gives the NumPy loop's labels, centres,
    steps and convergence to the last bit: means of the rows added in order, argmin ties to the
    lowest index (duplicated points, equal starting centres), a centre emptied; d = 1 takes
    NumPy's loop itself (its column mean is a pairwise sum)."""
    rng = np.random.default_rng(d)
    for case in range(40):
        n, k = int(rng.integers(2, 120)), int(rng.integers(1, 6))
        k = min(k, n)
        points = (rng.standard_normal((n, d)) + 3.0 * rng.integers(0, 3, (n, 1))) * 10.0 ** rng.uniform(-6, 6)
        if case % 4 == 0:
            points[rng.integers(0, n, n // 2)] = points[0]
        start = points[rng.choice(n, k, replace=False)].copy()
        if case % 5 == 0 and k > 1:
            start[1] = start[0]  # equal centres: ties, and centre 1 empties
        max_iter = int(rng.integers(1, 20))
        got, want = clustering._lloyd(points, start, max_iter), _numpy_lloyd(points, start, max_iter)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[2:] == want[2:]


@pytest.mark.parametrize("d", [1, 7, 8, 9, 64, 127, 128, 129, 200, 256, 257, 513, 1031])
def test_float64_distances_are_numpys_expression_bit_for_bit(d):
    """The Numba pass of float64 inputs sums in NumPy's pairwise order: blocks of 8 partial sums
    up to 128 terms, halves rounded to multiples of 8 beyond, for every d; nan and inf as NumPy.
    Far from the origin next to each other, where a left-to-right sum or the expansion
    ||x||^2 - 2 <x, c> + ||c||^2 give other bits (checked for the larger d)."""
    rng = np.random.default_rng(d)
    pts = rng.standard_normal((40, d)) * 1e2 + 1e6
    centres = pts[rng.integers(0, 40, 4)] + rng.standard_normal((4, d))
    pts[3, d // 2] = np.nan
    centres[1, 0] = np.inf
    with np.errstate(invalid="ignore"):
        expected = ((pts[:, None, :] - centres[None]) ** 2).sum(axis=2)
        got = clustering.squared_distances(pts, centres)
        assert np.array_equal(got, expected, equal_nan=True)
        assert np.array_equal(clustering.squared_distances(np.asfortranarray(pts), centres), expected,
                              equal_nan=True)
    if d >= 64:
        finite = np.isfinite(expected)
        serial = np.cumsum((pts[:, None, :] - centres[None]) ** 2, axis=2)[..., -1]
        assert not np.array_equal(serial[finite], expected[finite])


# --------------------------------------------------------------------------------------------
# Lloyd's algorithm and k-means++
# --------------------------------------------------------------------------------------------


@FAST
@given(point_clouds(), st.integers(0, 2**16))
def test_result_is_a_lloyd_fixed_point(cloud, seed):
    """At convergence every point is at a nearest centre and every centre is its group's mean;
    the inertia is the sum of squared distances to the assigned centres."""
    pts, k = cloud
    res = _quiet(kmeans, pts, k, n_init=2, rng=np.random.default_rng(seed))
    assert isinstance(res, KMeansResult) and res.converged
    assert res.centres.shape == (k, pts.shape[1]) and res.labels.shape == (pts.shape[0],)
    np.testing.assert_array_equal(res.labels, number_groups(res.labels))
    assert res.n_distinct == np.unique(res.labels).size
    sq = ((pts[:, None, :] - res.centres[None]) ** 2).sum(axis=2)
    assert np.all(sq[np.arange(len(pts)), res.labels] <= sq.min(axis=1) * (1 + 1e-12) + 1e-12)
    for j in range(res.n_distinct):
        np.testing.assert_array_equal(res.centres[j], pts[res.labels == j].mean(axis=0))
    assert res.inertia == pytest.approx(sq[np.arange(len(pts)), res.labels].sum(), rel=1e-12, abs=1e-12)


@FAST
@given(point_clouds(max_n=15, max_d=3), st.integers(0, 2**16))
def test_explicit_start_matches_a_plain_lloyd_loop(cloud, seed):
    pts, k = cloud
    start = pts[np.random.default_rng(seed).choice(len(pts), size=k, replace=False)]
    res = _quiet(kmeans, pts, k, init=start, max_iter=50)
    np.testing.assert_array_equal(res.labels, _number_groups(_reference_lloyd(pts, start, 50)))
    np.testing.assert_array_equal(res.initial_centres, start)
    assert res.init == "explicit"


def test_kmeanspp_is_deterministic_under_a_generator_and_varies_with_the_seed():
    pts = np.random.default_rng(1).uniform(size=(200, 2))  # no cluster structure: seeds matter
    a = kmeans(pts, 6, n_init=1, rng=np.random.default_rng(7))
    b = kmeans(pts, 6, n_init=1, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.centres, b.centres)
    assert a.inertia == b.inertia
    others = [kmeans(pts, 6, n_init=1, rng=np.random.default_rng(s)) for s in range(8, 13)]
    assert all(not np.array_equal(o.initial_centres, a.initial_centres) for o in others)
    assert len({o.inertia for o in others} | {a.inertia}) > 1


def test_best_restart_by_inertia_first_on_ties():
    """n_init restarts draw from the Generator one after another; the lowest inertia wins."""
    pts = np.random.default_rng(2).uniform(size=(150, 2))
    best = kmeans(pts, 5, n_init=6, rng=np.random.default_rng(3))
    g = np.random.default_rng(3)
    singles = [kmeans(pts, 5, n_init=1, rng=g) for _ in range(6)]
    inertias = [r.inertia for r in singles]
    first = int(np.argmin(inertias))
    assert best.inertia == min(inertias) and best.n_init == 6
    np.testing.assert_array_equal(best.labels, singles[first].labels)
    np.testing.assert_array_equal(best.initial_centres, singles[first].initial_centres)
    assert len(set(inertias)) > 1  # the restarts did differ


def test_kmeanspp_finds_the_right_groups_of_separated_blobs():
    rng = np.random.default_rng(4)
    truth = np.repeat(np.arange(4), 30)
    pts = 20 * rng.standard_normal((4, 3))[truth] + rng.standard_normal((120, 3))
    res = kmeans(pts, 4, rng=rng)
    np.testing.assert_array_equal(res.labels, number_groups(truth))


@FAST
@given(st.integers(1, 6), st.integers(1, 4), st.integers(0, 2**16))
def test_kmeanspp_seeds_every_distinct_point_when_there_are_exactly_k(k, reps, seed):
    """D^2 sampling never picks a point of zero weight while some weight is left, so k distinct
    points (each repeated) are all seeded: k groups, zero inertia."""
    rng = np.random.default_rng(seed)
    base = rng.standard_normal((k, 2))
    pts = base[rng.permutation(np.repeat(np.arange(k), reps))]
    res = kmeans(pts, k, n_init=1, rng=rng)
    assert res.n_distinct == k and res.inertia < 1e-24  # means of equal values may round


@pytest.mark.parametrize("init", ["k-means++", "farthest", "explicit"])
def test_fewer_groups_than_k_warns(init):
    pts = np.ones((6, 3))
    start = np.zeros((3, 3)) if init == "explicit" else init
    with pytest.warns(ClusteringWarning, match=r"k=3 produced only 1 non-empty"):
        res = kmeans(pts, 3, init=start, rng=np.random.default_rng(0))
    assert res.n_distinct == 1 and res.inertia == 0.0
    np.testing.assert_array_equal(res.labels, np.zeros(6, dtype=np.int64))
    np.testing.assert_array_equal(res.centres[0], np.ones(3))


def test_non_convergence_warns_and_is_recorded():
    pts = np.random.default_rng(5).uniform(size=(200, 2))
    with pytest.warns(ClusteringWarning, match="did not converge"):
        res = kmeans(pts, 8, init="farthest", max_iter=1)
    assert not res.converged and res.n_iter == 1 and "max_iter" in res.stop_reason


def test_k_equal_to_n_and_one_point():
    pts = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    res = kmeans(pts, 3, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(res.labels, [0, 1, 2])
    np.testing.assert_array_equal(res.centres, pts)
    one = kmeans(pts[:1], 1, init="farthest")
    assert one.labels.tolist() == [0] and one.inertia == 0.0


# --------------------------------------------------------------------------------------------
# Agglomerative clustering and the single-linkage cut
# --------------------------------------------------------------------------------------------


@FAST
@given(point_clouds(), st.sampled_from(["single", "average", "complete"]), st.floats(0.0, 3.0))
def test_agglomerative_matches_scipy(cloud, method, threshold):
    pts, k = cloud
    if len(pts) < 2:
        return
    Z = linkage(pdist(pts), method=method)
    by_k = _quiet(agglomerative, pts, n_clusters=k, linkage=method)
    assert isinstance(by_k, AgglomerativeResult) and by_k.linkage == method
    np.testing.assert_array_equal(by_k.labels, _number_groups(fcluster(Z, k, criterion="maxclust")))
    assert by_k.n_groups == by_k.labels.max() + 1 <= k
    by_t = agglomerative(pts, threshold=threshold, linkage=method)
    np.testing.assert_array_equal(by_t.labels, _number_groups(fcluster(Z, threshold, criterion="distance")))
    assert by_t.threshold == threshold
    # the reported cut height reproduces the n_clusters groups (unless maxclust split duplicated
    # points, which no threshold >= 0 does: then 0 is reported)
    if np.isfinite(by_k.threshold) and by_k.threshold > 0:
        again = agglomerative(pts, threshold=by_k.threshold, linkage=method)
        np.testing.assert_array_equal(again.labels, by_k.labels)
    # a precomputed distance matrix gives the same tree
    D = squareform(pdist(pts))
    np.testing.assert_array_equal(_quiet(agglomerative, distances=D, n_clusters=k, linkage=method).labels,
                                  by_k.labels)


@FAST
@given(point_clouds(), st.floats(0.0, 4.0))
def test_single_linkage_threshold_is_connected_components(cloud, threshold):
    """Single linkage cut at tau = components of the graph {||x_i - x_j|| <= tau} (Gower-Ross)."""
    pts, _ = cloud
    res = agglomerative(pts, threshold=threshold)
    adjacency = squareform(pdist(pts)) <= threshold
    expected = _number_groups(connected_components(adjacency, directed=False)[1])
    np.testing.assert_array_equal(res.labels, expected)


@pytest.mark.filterwarnings("ignore::mixreg.clustering.ClusteringWarning")  # duplicated points
@FAST
@given(point_clouds())
def test_single_linkage_cut_is_the_anchor_clustering_threshold(cloud):
    pts, k = cloud
    tau = single_linkage_cut(pts, k)
    assert tau == _reference_tau(pts, k)
    assert tau == cluster_anchors(pts, k).threshold
    by_k = _quiet(agglomerative, pts, n_clusters=k)
    if by_k.n_groups == k:  # no tie at the cut
        assert by_k.threshold == tau


def test_single_linkage_cut_special_cases():
    pts = np.array([[0.0], [0.0], [1.0], [3.0]])
    assert single_linkage_cut(pts, 1) == np.inf
    assert single_linkage_cut(pts[:1], 1) == np.inf
    # MST edges, descending: 2, 1, 0 (the duplicated pair)
    assert single_linkage_cut(pts, 2) == 1.5  # midpoint of the 1st and 2nd largest edges
    assert single_linkage_cut(pts, 3) == 0.5  # the 3rd largest edge is 0: half the 2nd
    assert single_linkage_cut(pts, 4) == 0.0  # k = n: half the smallest edge, here 0


def test_agglomerative_ties_warn_and_precomputed_distances():
    pts = np.array([[0.0], [1.0], [2.0], [3.0]])  # every MST edge equals 1
    with pytest.warns(ClusteringWarning, match="n_clusters=2 produced only 1 groups"):
        res = agglomerative(pts, n_clusters=2)
    assert res.n_groups == 1
    D = np.array([[0.0, 0.1, 0.9], [0.1, 1e-9, 0.8], [0.9, 0.8, 0.0]])  # diagonal ignored
    assert agglomerative(distances=D, n_clusters=2).labels.tolist() == [0, 0, 1]
    assert agglomerative(distances=[[0.0]], threshold=1.0).labels.tolist() == [0]


# --------------------------------------------------------------------------------------------
# Validation at the boundary
# --------------------------------------------------------------------------------------------


PTS = np.arange(12.0).reshape(6, 2)


@pytest.mark.parametrize(
    "kwargs, exc, name",
    [
        (dict(points=np.arange(6.0), k=2), ValueError, "points"),
        (dict(points=np.array([[0.0, np.nan]]), k=1), ValueError, "points"),
        (dict(points=PTS, k=0), ValueError, "k"),
        (dict(points=PTS, k=7), ValueError, "k"),
        (dict(points=PTS, k=2.0), TypeError, "k"),
        (dict(points=PTS, k=2, init="random"), ValueError, "init"),
        (dict(points=PTS, k=2, init=np.zeros((3, 2))), ValueError, "init"),
        (dict(points=PTS, k=2, n_init=0), ValueError, "n_init"),
        (dict(points=PTS, k=2, max_iter=0), ValueError, "max_iter"),
        (dict(points=PTS, k=2), TypeError, "rng"),
        (dict(points=PTS, k=2, rng=np.random.RandomState(0)), TypeError, "rng"),
    ],
)
def test_kmeans_bad_inputs(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        kmeans(**kwargs)


@pytest.mark.parametrize(
    "kwargs, exc, name",
    [
        (dict(n_clusters=2), ValueError, "points"),
        (dict(points=PTS, distances=squareform(pdist(PTS)), n_clusters=2), ValueError, "points"),
        (dict(points=PTS), ValueError, "n_clusters"),
        (dict(points=PTS, n_clusters=2, threshold=1.0), ValueError, "n_clusters"),
        (dict(points=PTS, n_clusters=7), ValueError, "n_clusters"),
        (dict(points=PTS, threshold=-1.0), ValueError, "threshold"),
        (dict(points=PTS, threshold="1"), TypeError, "threshold"),
        (dict(points=PTS, n_clusters=2, linkage="ward"), ValueError, "linkage"),
        (dict(distances=np.ones((2, 3)), n_clusters=1), ValueError, "distances"),
        (dict(distances=np.array([[0.0, 1.0], [2.0, 0.0]]), n_clusters=1), ValueError, "distances"),
        (dict(distances=-np.ones((2, 2)), n_clusters=1), ValueError, "distances"),
    ],
)
def test_agglomerative_bad_inputs(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        agglomerative(**kwargs)


def test_other_bad_inputs():
    with pytest.raises(ValueError, match="k"):
        single_linkage_cut(PTS, 7)
    with pytest.raises(ValueError, match="points"):
        single_linkage_cut(np.arange(3.0), 1)
    with pytest.raises(ValueError, match="labels"):
        number_groups(np.array([0.5, 1.0]))
