"""Tests of mixreg.algorithms.pacfl (Vahidian et al., PACFL) against plain loops written here.

The references use NumPy's SVD per client, SciPy's ``subspace_angles`` (an independent
computation of the principal angles, Bjorck-Golub with the sine formula near 0) and SciPy's
hierarchical clustering directly, and run FedAvg one client at a time from Algorithm 1.
"""

import warnings

import numpy as np
import pytest
from scipy.cluster import hierarchy
from scipy.linalg import subspace_angles
from scipy.spatial.distance import squareform

from mixreg.algorithms import ProblemRefused, get_algorithm
from mixreg.algorithms.pacfl import (
    assign_new_clients,
    client_signatures,
    pacfl,
    pacfl_clusters,
    pme,
    principal_angles,
    proximity_matrix,
)
from mixreg.problems import Problem, make_problem, make_problem_from_parameters

# --------------------------------------------------------------------------------------------
# References, written from the paper
# --------------------------------------------------------------------------------------------


def reference_signatures(pb, p, matrix="joint"):
    """Line 8: the p leading left singular vectors of each client's D x n_i data matrix."""
    out = []
    for i in range(pb.m):
        Xi, yi = (a.astype(np.float64) for a in pb.client(i))
        Di = np.column_stack([Xi, yi]).T if matrix == "joint" else Xi.T
        out.append(np.linalg.svd(Di)[0][:, :p])
    return out


def reference_reduced_signatures(pb, p, matrix="joint"):
    """Line 8 for clients whose data span fewer than p directions (ours): the min(p, rank D_i)
    leading left singular vectors, the rank from NumPy's matrix_rank."""
    out = []
    for i in range(pb.m):
        Xi, yi = (a.astype(np.float64) for a in pb.client(i))
        Di = np.column_stack([Xi, yi]).T if matrix == "joint" else Xi.T
        out.append(np.linalg.svd(Di)[0][:, :min(p, np.linalg.matrix_rank(Di))])
    return out


def reference_proximity(Us, measure):
    """Eq. 2 / Eq. 3 pair by pair, the true principal angles from SciPy (min(r_i, r_j) of them
    between bases of r_i and r_j columns)."""
    m = len(Us)
    A = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            if i != j:
                angles = subspace_angles(Us[i], Us[j])
                A[i, j] = angles.min() if measure == "smallest" else angles.sum()
    return A


def reference_hc(A, n_clusters, linkage):
    """Line 11 with SciPy, groups renumbered in order of first appearance."""
    raw = hierarchy.fcluster(hierarchy.linkage(squareform(A, checks=False), method=linkage), n_clusters,
                             criterion="maxclust")
    names = {}
    return np.array([names.setdefault(r, len(names)) for r in raw])


def reference_fedavg(pb, labels, theta0, eta, T, s):
    """Lines 21-24, one replica, one client at a time: s local gradient steps on
    (1/(2 n_i)) ||X_i theta - y_i||^2 from the cluster model, then the n_i / N_z average."""
    theta = np.array(theta0, dtype=np.float64)
    for _ in range(T):
        new = theta.copy()
        for z in range(theta.shape[0]):
            members = np.flatnonzero(labels == z)
            if members.size == 0:
                continue
            N_z = pb.sizes[members].sum()
            new[z] = 0.0
            for i in members:
                Xi, yi = pb.client(i)
                w = theta[z].copy()
                for _ in range(s):
                    w = w - eta / len(yi) * Xi.T @ (Xi @ w - yi)
                new[z] += len(yi) / N_z * w
        theta = new
    return theta


def _lines(phi):
    """Unit vectors of the plane at angles phi, as signatures (m, 2, 1) of lines."""
    phi = np.asarray(phi, dtype=float)
    return np.stack([np.cos(phi), np.sin(phi)], axis=1)[:, :, None]


def _misclustering(labels, truth):
    """k = 2: the fraction of clients on the wrong side, under the better of the two matchings."""
    e = np.mean(labels != truth)
    return min(e, 1 - e)


def _sent(U):
    """The number of vectors in each signature (m, D, p): its nonzero columns."""
    return (U != 0).any(axis=1).sum(axis=1)


def _with_small_clients(seed=0, d=4, sigma=0.2):
    """Clients of 1 and 2 points (below p = 3) among larger ones."""
    rng = np.random.default_rng(seed)
    theta_star = 3.0 * rng.standard_normal((2, d))
    labels = np.array([0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0])
    sizes = np.array([12, 30, 1, 2, 40, 9, 2, 8, 1, 60, 3, 2])
    return make_problem_from_parameters(theta_star, labels, sizes, sigma, rng=rng)


def _hyperplane_clusters(seed, sizes, scale=4.0):
    """d = 3, sigma = 0, clusters alternating: every sample (x, theta_z^T x) lies in the hyperplane
    of R^4 orthogonal to (theta_z, -1)."""
    rng = np.random.default_rng(seed)
    theta_star = scale * rng.standard_normal((2, 3)) / np.sqrt(3)
    return make_problem_from_parameters(theta_star, np.arange(len(sizes)) % 2, np.asarray(sizes), 0.0, rng=rng)


def _unbalanced(seed=0, d=4, sigma=0.2):
    rng = np.random.default_rng(seed)
    theta_star = 3.0 * rng.standard_normal((2, d))
    labels = np.array([0, 1, 0, 1, 1, 0, 0, 1, 1, 0])
    sizes = np.array([12, 30, 8, 15, 40, 9, 25, 8, 11, 60])
    return make_problem_from_parameters(theta_star, labels, sizes, sigma, rng=rng)


# --------------------------------------------------------------------------------------------
# Signatures, angles, proximity
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("matrix", ["joint", "x"])
def test_signatures_are_the_leading_singular_vectors_of_each_client(matrix):
    pb = _unbalanced()
    U = client_signatures(pb, 3, matrix=matrix)
    D = pb.d + (matrix == "joint")
    assert U.shape == (pb.m, D, 3)
    for i, ref in enumerate(reference_signatures(pb, 3, matrix)):
        # the same vectors up to sign; the sign is fixed by the largest entry
        np.testing.assert_allclose(np.abs(U[i].T @ ref), np.eye(3), atol=1e-10)
        big = np.abs(U[i]).argmax(axis=0)
        assert (U[i][big, np.arange(3)] > 0).all()


def test_principal_angles_match_scipy():
    rng = np.random.default_rng(0)
    for p, q in [(1, 1), (2, 3), (3, 2), (4, 4)]:
        Ui = np.linalg.qr(rng.standard_normal((7, p)))[0]
        Uj = np.linalg.qr(rng.standard_normal((7, q)))[0]
        ours = principal_angles(Ui, Uj)
        assert ours.shape == (min(p, q),) and np.all(np.diff(ours) >= 0)
        np.testing.assert_allclose(ours, np.sort(subspace_angles(Ui, Uj)), atol=1e-12)
    # broadcasting over leading axes
    stack = np.linalg.qr(rng.standard_normal((5, 7, 2)))[0]
    np.testing.assert_allclose(principal_angles(stack[:, None], stack[None]),
                               [[np.sort(subspace_angles(a, b)) for b in stack] for a in stack], atol=1e-7)


def test_true_angles_are_basis_free_unlike_the_entrywise_arccos():
    """One subspace, two bases (rotated by 0.5 rad and sign-flipped): every principal angle is 0,
    while the paper's literal Eq. 3, tr(arccos(U^T V)), and the public code's Eq. 2, the
    smallest entrywise arccos, are not."""
    rng = np.random.default_rng(1)
    U = np.linalg.qr(rng.standard_normal((6, 2)))[0]
    c, s = np.cos(0.5), np.sin(0.5)
    V = U @ np.array([[c, -s], [s, c]]) @ np.diag([1.0, -1.0])
    np.testing.assert_allclose(principal_angles(U, V), 0.0, atol=1e-7)
    for measure in ("smallest", "sum"):
        np.testing.assert_allclose(proximity_matrix(np.stack([U, V]), measure), 0.0, atol=1e-7)
    gram = np.clip(U.T @ V, -1, 1)
    assert np.trace(np.arccos(gram)) == pytest.approx(0.5 + (np.pi - 0.5))  # literal Eq. 3: pi
    assert np.arccos(gram).min() == pytest.approx(0.5)                       # public code's Eq. 2


@pytest.mark.parametrize("measure", ["smallest", "sum"])
def test_proximity_matrix_matches_a_pairwise_loop(measure):
    pb = _unbalanced()
    U = client_signatures(pb, 2)
    A = proximity_matrix(U, measure)
    np.testing.assert_allclose(A, reference_proximity(reference_signatures(pb, 2), measure), atol=1e-7)
    np.testing.assert_array_equal(A, A.T)
    assert (np.diag(A) == 0).all()


def test_eq3_with_p_equal_d_is_the_angle_between_regression_directions():
    """sigma = 0: the joint matrix has rank d with left null vector (theta*, -1), so its top-d
    subspace is the hyperplane orthogonal to it and Eq. 3 is the angle between the normals."""
    pb = make_problem(m=4, k=2, n=12, d=3, sigma=0.0, scale=2.0, protocol="gaussian", rng=np.random.default_rng(2))
    A = proximity_matrix(client_signatures(pb, pb.d), "sum")
    normals = np.column_stack([pb.theta_star, -np.ones(2)])
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    between = np.arccos(abs(normals[0] @ normals[1]))
    expected = np.where(pb.labels[:, None] == pb.labels[None], 0.0, between)
    np.testing.assert_allclose(A, expected, atol=1e-6)
    # Eq. 2 sees nothing: two hyperplanes of R^4 share a plane
    np.testing.assert_allclose(proximity_matrix(client_signatures(pb, pb.d), "smallest"), 0.0, atol=1e-6)


# --------------------------------------------------------------------------------------------
# HC, PME, newcomers
# --------------------------------------------------------------------------------------------


def test_threshold_makes_the_number_of_clusters_an_output():
    A = proximity_matrix(_lines([0.0, 0.1, 0.2, 1.0, 1.1, 1.8]))
    assert pacfl_clusters(A, threshold=0.3).labels.tolist() == [0, 0, 0, 1, 1, 2]
    assert pacfl_clusters(A, threshold=0.05).n_groups == 6
    assert pacfl_clusters(A, n_clusters=2).labels.tolist() == [0, 0, 0, 1, 1, 1]


def test_pme_equals_recomputing_the_whole_matrix():
    pb = _unbalanced()
    U = client_signatures(pb, 2)
    for measure in ("smallest", "sum"):
        A_ext, U_ext = pme(proximity_matrix(U[:6], measure), U[:6], U[6:], measure)
        np.testing.assert_allclose(A_ext, proximity_matrix(U, measure), rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(U_ext, U)
    # the old block is copied as given, not recomputed
    old = np.full((6, 6), 7.0)
    np.testing.assert_array_equal(pme(old, U[:6], U[6:])[0][:6, :6], old)
    with pytest.raises(ValueError, match="new_signatures must have shape"):
        pme(proximity_matrix(U[:6]), U[:6], client_signatures(pb, 1)[6:])


def test_newcomers_get_hc_labels_when_the_old_partition_is_kept():
    U = _lines([0.0, 0.1, 1.0, 1.1])
    A = proximity_matrix(U)
    old = pacfl_clusters(A, threshold=0.3)
    new = _lines([2.5, 0.05, 2.6, 1.15])  # a new cluster, cluster 0, the same new cluster, cluster 1
    res = assign_new_clients(A, U, old.labels, new, threshold=old.threshold)
    assert res.old_partition_kept and res.n_clusters == 3
    assert res.labels.tolist() == [2, 0, 2, 1]
    hc = pacfl_clusters(res.proximity, threshold=0.3)
    assert hc.labels[:4].tolist() == old.labels.tolist() and hc.labels[4:].tolist() == res.labels.tolist()


@pytest.mark.parametrize("linkage, expected, kept", [("single", 0, False), ("average", 1, False),
                                                    ("complete", 0, True)])
def test_a_bridging_newcomer_joins_the_nearest_old_cluster_under_the_linkage(linkage, expected, kept):
    """Old clusters {0, 0.3} and {0.8, 0.85} (lines at these angles); a newcomer at 0.52, HC at
    threshold 0.6.  Single and average linkage merge all five: the newcomer joins the old cluster
    nearest under the linkage, cluster 0 for single (0.22 < 0.28), cluster 1 for average (mean
    0.305 < 0.37), and the old clients keep their labels.  Complete linkage keeps the old
    partition and puts the newcomer with cluster 0 (HC's decision, though cluster 1 is nearer
    by the max: only the clusters met in its HC group are candidates)."""
    U = _lines([0.0, 0.3, 0.8, 0.85])
    A = proximity_matrix(U)
    old = pacfl_clusters(A, threshold=0.32, linkage="single")
    assert old.labels.tolist() == [0, 0, 1, 1]
    res = assign_new_clients(A, U, old.labels, _lines([0.52]), threshold=0.6, linkage=linkage)
    assert res.old_partition_kept == kept
    assert res.labels.tolist() == [expected] and res.n_clusters == 2


def test_newcomers_from_a_run_join_their_true_clusters():
    pb = make_problem(m=24, k=2, n=60, d=6, sigma=0.1, scale=4.0, protocol="gaussian", rng=np.random.default_rng(5))
    res = pacfl(pb, np.zeros((2, 6)), 0.5, n_rounds=2)
    assert res.assignments[0].tolist() == pb.labels.tolist()
    # fresh clients of both clusters, from the same theta*
    fresh = make_problem_from_parameters(pb.theta_star, np.array([1, 0, 1]), 60, 0.1, rng=np.random.default_rng(6))
    new = assign_new_clients(res.proximity, client_signatures(pb, res.p), res.assignments[0],
                             client_signatures(fresh, res.p), threshold=res.threshold, linkage=res.linkage)
    assert new.labels.tolist() == [1, 0, 1] and new.old_partition_kept


# --------------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("s, measure, linkage", [(1, "smallest", "average"), (3, "sum", "complete")])
def test_driver_matches_a_plain_loop(s, measure, linkage):
    pb = _unbalanced()
    rng = np.random.default_rng(3)
    init = rng.standard_normal((3, 2, pb.d))
    eta = np.array([0.05, 0.1, 0.2])
    res = pacfl(pb, init, eta, n_rounds=6, p=2, measure=measure, linkage=linkage, local_steps=s)
    A = reference_proximity(reference_signatures(pb, 2), measure)
    labels = reference_hc(A, 2, linkage)
    assert (res.assignments == labels).all()
    for b in range(3):
        np.testing.assert_allclose(res.theta[b], reference_fedavg(pb, labels, init[b], eta[b], 6, s), rtol=1e-10)
    pred = np.einsum("nd,bnd->bn", pb.X, res.theta[:, np.repeat(labels, pb.sizes)])
    np.testing.assert_allclose(res.train_loss, ((pb.y - pred) ** 2).sum(axis=1) / (2 * pb.N), rtol=1e-12)
    np.testing.assert_allclose(res.proximity, A, atol=1e-7)
    assert (res.n_clusters_found, res.p, res.matrix, res.measure, res.linkage) == (2, 2, "joint", measure, linkage)


def test_exact_recovery_without_noise():
    """sigma = 0, well separated: every client is clustered right and FedAvg converges to theta*."""
    pb = make_problem(m=20, k=2, n=40, d=8, sigma=0.0, scale=4.0, protocol="gaussian", rng=np.random.default_rng(4))
    res = pacfl(pb, np.zeros((2, 8)), 1.0, n_rounds=500, tol=1e-14)
    assert res.assignments[0].tolist() == pb.labels.tolist()
    np.testing.assert_allclose(res.theta[0], pb.theta_star, atol=1e-9)
    assert res.train_loss[0] < 1e-20


def _mean_misclustering(matrix, covariances=None, seeds=range(4), p=3, scale=4.0):
    errors = []
    for seed in seeds:
        pb = make_problem(m=40, k=2, n=50, d=8, sigma=0.1, scale=scale, protocol="gaussian",
                          rng=np.random.default_rng(seed), covariances=covariances)
        A = proximity_matrix(client_signatures(pb, p, matrix=matrix))
        errors.append(_misclustering(pacfl_clusters(A, n_clusters=2).labels, pb.labels))
    return float(np.mean(errors))


def test_features_alone_cluster_at_chance_when_covariances_are_equal():
    """The failure regime: x ~ N(0, I) in both clusters, so X_i's subspace is noise."""
    assert _mean_misclustering("x") > 0.35          # measured 0.47 (random labels: 0.44)
    assert _mean_misclustering("joint") < 0.05      # measured 0.0


def test_features_alone_work_when_covariances_differ():
    """Variances 4 on coordinates 0-2 in cluster 0 and on 3-5 in cluster 1: the top-3 feature
    subspaces of the two clusters are orthogonal."""
    a, b = np.ones(8), np.ones(8)
    a[:3], b[3:6] = 4.0, 4.0
    covs = np.array([np.diag(a), np.diag(b)])
    assert _mean_misclustering("x", covs, scale=1.0) < 0.05   # measured 0.0


def test_a_threshold_with_one_starting_model_gives_every_cluster_that_model():
    """Line 12: theta_{g,z}^0 = theta_g^0 for every cluster when init has one model."""
    pb = make_problem(m=12, k=3, n=40, d=5, sigma=0.1, scale=4.0, protocol="gaussian", rng=np.random.default_rng(8))
    A = proximity_matrix(client_signatures(pb, 3))
    beta = float(pacfl_clusters(A, n_clusters=3).threshold)
    init = np.ones((2, 1, 5))
    res = pacfl(pb, init, 0.5, n_rounds=3, threshold=beta)
    assert res.n_clusters_found == 3 and res.theta.shape == (2, 3, 5)
    labels = res.assignments[0]
    np.testing.assert_allclose(res.theta[1], reference_fedavg(pb, labels, np.ones((3, 5)), 0.5, 3, 1), rtol=1e-10)
    with pytest.raises(ValueError, match="HC formed Z=3 clusters but init has k=2 models"):
        pacfl(pb, np.ones((2, 5)), 0.5, n_rounds=3, threshold=beta)
    # more models than clusters: the extra ones hold no client and keep their start
    res = pacfl(pb, np.ones((5, 5)), 0.5, n_rounds=3, threshold=beta)
    np.testing.assert_array_equal(res.theta[0, 3:], 1.0)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(p=0), "p must be in"),
        (dict(p=5), r"p must be in \[1, 4\]"),           # D - 1 = d for the joint matrix
        (dict(matrix="y"), "matrix must be one of"),
        (dict(measure="max"), "measure must be one of"),
        (dict(linkage="ward"), "linkage must be one of"),
        (dict(n_clusters=2, threshold=0.1), "at most one of n_clusters and threshold"),
        (dict(n_clusters=99), "n_clusters must be in"),
        (dict(threshold=-1.0), "threshold must be in"),
        (dict(local_steps=0), "local_steps must be in"),
    ],
)
def test_bad_options_name_the_parameter(kwargs, pattern):
    pb = _unbalanced()
    with pytest.raises(ValueError, match=pattern):
        pacfl(pb, np.zeros((2, 4)), 0.1, n_rounds=2, **kwargs)


def test_refuse_keeps_p_at_most_the_smallest_client_size():
    pb = make_problem_from_parameters(np.eye(2, 6), np.array([0, 1, 0]), np.array([5, 2, 5]), 0.1,
                                      rng=np.random.default_rng(0))
    with pytest.raises(ProblemRefused, match="p must be at most the smallest client size min n_i = 2 .*got p=3"):
        client_signatures(pb, 3, small_clients="refuse")
    with pytest.raises(ProblemRefused, match="p must be at most the smallest client size min n_i = 2 .*got p=3"):
        pacfl(pb, np.zeros((2, 6)), 0.1, n_rounds=2, small_clients="refuse")
    assert _sent(client_signatures(pb, 3)).tolist() == [3, 2, 3]  # the default reduces
    with pytest.raises(ValueError, match="small_clients must be one of"):
        pacfl(pb, np.zeros((2, 6)), 0.1, n_rounds=2, small_clients="pad")
    with pytest.raises(ValueError, match="orthonormal"):
        proximity_matrix(np.ones((2, 3, 1)))


# --------------------------------------------------------------------------------------------
# Clients with fewer points than p
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("matrix", ["joint", "x"])
def test_small_clients_send_the_vectors_that_span_their_data(matrix):
    """r_i = min(p, n_i) orthonormal columns, then zero columns; below p they span the client's
    whole data matrix, and from p points on they are the p leading vectors as before."""
    pb = _with_small_clients()
    U = client_signatures(pb, 3, matrix=matrix)
    D = pb.d + (matrix == "joint")
    assert U.shape == (pb.m, D, 3)
    np.testing.assert_array_equal(_sent(U), np.minimum(3, pb.sizes))
    for i, ref in enumerate(reference_reduced_signatures(pb, 3, matrix)):
        r = ref.shape[1]
        np.testing.assert_array_equal(U[i][:, r:], 0.0)
        np.testing.assert_allclose(np.abs(U[i][:, :r].T @ ref), np.eye(r), atol=1e-10)
        Xi, yi = pb.client(i)
        Di = np.column_stack([Xi, yi]).T if matrix == "joint" else Xi.T
        if pb.sizes[i] < 3:
            np.testing.assert_allclose(U[i] @ (U[i].T @ Di), Di, atol=1e-10)


@pytest.mark.parametrize("measure", ["smallest", "sum"])
def test_proximity_with_small_clients_uses_their_min_ri_rj_angles(measure):
    """Between signatures of r_i and r_j vectors: the smallest, or the sum, of the min(r_i, r_j)
    principal angles SciPy computes on the same bases (its subspace_angles, an independent
    algorithm)."""
    pb = _with_small_clients()
    U = client_signatures(pb, 3)
    bases = [U[i][:, :r] for i, r in enumerate(_sent(U))]
    A = proximity_matrix(U, measure)
    np.testing.assert_allclose(A, reference_proximity(bases, measure), atol=1e-7)
    small = np.flatnonzero(pb.sizes < 3)
    for i in small:
        for j in small:
            if i != j:
                angles = subspace_angles(bases[i], bases[j])
                assert angles.size == min(pb.sizes[i], pb.sizes[j])
                assert A[i, j] == pytest.approx(angles.min() if measure == "smallest" else angles.sum(), abs=1e-7)
    # the angles themselves: min(r_i, r_j) of them, NaN after
    one, two = np.flatnonzero(pb.sizes == 1)[0], np.flatnonzero(pb.sizes == 2)[0]
    got = principal_angles(U[one], U[two])
    assert np.isnan(got[1:]).all()
    np.testing.assert_allclose(got[:1], subspace_angles(bases[one], bases[two]), atol=1e-7)
    np.testing.assert_allclose(np.sort(principal_angles(U[two], U[0])[:2]), np.sort(subspace_angles(bases[two], U[0])),
                               atol=1e-7)


@pytest.mark.parametrize("name", ["pacfl", "pacfl_x"])
def test_driver_takes_clients_of_one_and_two_points(name):
    pb = _with_small_clients()
    alg = get_algorithm(name)
    res = alg.run(pb, np.zeros((2, pb.d)), 0.1, n_rounds=4)
    assert res.assignments.shape == (1, pb.m) and set(res.assignments[0]) == {0, 1}
    np.testing.assert_array_equal(res.ranks, np.minimum(3, pb.sizes))
    matrix = "joint" if name == "pacfl" else "x"
    bases = reference_reduced_signatures(pb, 3, matrix)
    A = reference_proximity(bases, "smallest")
    np.testing.assert_allclose(res.proximity, A, atol=1e-7)
    assert (res.assignments[0] == reference_hc(A, 2, "average")).all()
    np.testing.assert_allclose(res.theta[0], reference_fedavg(pb, res.assignments[0], np.zeros((2, pb.d)), 0.1, 4, 1),
                               rtol=1e-10)
    # the signature counts what is sent: D r_i floats, averaged over the clients
    D = pb.d + (name == "pacfl")
    upload, download = alg.communication(pb, res, 0)
    assert upload == pytest.approx(D * np.minimum(3, pb.sizes).mean() + pb.d * 4) and download == pb.d * 4
    assert upload < D * 3 + pb.d * 4


def test_rank_deficient_and_zero_clients():
    """A client of 3 points on one line sends 1 vector (its rank), "refuse" names it; a client
    whose data are all zero has nothing to send and is refused either way."""
    rng = np.random.default_rng(0)
    theta_star = np.array([[1.0, 0.0, 2.0, 0.0], [0.0, 1.0, 0.0, -1.0]])
    X = rng.standard_normal((20, 4))
    X[10:13] = X[10] * np.array([[1.0], [2.0], [-0.5]])  # client 2: three collinear points
    y = np.einsum("nd,nd->n", X, theta_star[np.repeat([0, 1, 0, 1], [5, 5, 3, 7])])
    pb = Problem.from_arrays(X, y, [5, 5, 3, 7], [0, 1, 0, 1], theta_star, sigma=0.0)
    U = client_signatures(pb, 3)
    assert _sent(U).tolist() == [3, 3, 1, 3]
    line = np.append(X[10], y[10])
    np.testing.assert_allclose(np.abs(U[2][:, 0]), np.abs(line) / np.linalg.norm(line), atol=1e-12)
    with pytest.raises(ProblemRefused, match=r"client 2's data matrix has rank 1 < p=3"):
        client_signatures(pb, 3, small_clients="refuse")
    X[10:13], y[10:13] = 0.0, 0.0
    zero = Problem.from_arrays(X, y, [5, 5, 3, 7], [0, 1, 0, 1], theta_star, sigma=0.0)
    for small_clients in ("reduce", "refuse"):
        with pytest.raises(ProblemRefused, match="client 2's data matrix is zero"):
            client_signatures(zero, 3, small_clients=small_clients)


def test_signatures_must_put_their_zero_columns_last():
    e = np.eye(3)
    with pytest.raises(ValueError, match="zero columns .* must come last"):
        proximity_matrix(np.stack([e[:, :2], np.column_stack([np.zeros(3), e[:, 1]])]))
    with pytest.raises(ValueError, match="zero columns .* must come last"):
        principal_angles(np.zeros((3, 1)), e[:, :1])
    with pytest.raises(ValueError, match="orthonormal"):
        proximity_matrix(np.stack([e[:, :2], np.column_stack([e[:, 0], 2 * e[:, 1]])]))


def test_small_clients_have_eq3_distance_zero_to_their_own_cluster():
    """sigma = 0, p = d = 3, Eq. 3: a client of n_i >= 3 points spans the hyperplane orthogonal
    to (theta_z, -1), and a client of 1 or 2 points spans a subspace of it, so the sum of their
    min(r_i, r_j) angles is 0 within a cluster and the angle between the small subspace and the
    other hyperplane across clusters; HC then puts every client in its cluster.  (Signatures
    padded with arbitrary orthonormal vectors, or a sum over p angles with pi/2 for the missing
    ones, are not 0 within a cluster.)"""
    pb = _hyperplane_clusters(0, [20] * 12 + [1, 2, 1, 2, 1, 2])
    res = pacfl(pb, np.zeros((2, 3)), 0.5, n_rounds=2, p=3, measure="sum")
    assert res.assignments[0].tolist() == pb.labels.tolist()
    small, full = np.flatnonzero(pb.sizes < 3), np.flatnonzero(pb.sizes >= 3)
    same = pb.labels[small][:, None] == pb.labels[full][None]
    between = res.proximity[np.ix_(small, full)]
    np.testing.assert_allclose(between[same], 0.0, atol=1e-6)
    assert between[~same].min() > 0.2                                  # measured 0.25


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_small_clients_cluster_by_their_feature_subspace_under_eq2(seed):
    """matrix="x", Eq. 2 (the defaults but the matrix): variances 25 on coordinates 0-2 in cluster
    0 and on 3-5 in cluster 1, so even one point lies near its cluster's top-3 feature subspace.
    Every client, of 1, 2 or 20 points, is clustered right."""
    rng = np.random.default_rng(seed)
    a, b = np.ones(8), np.ones(8)
    a[:3], b[3:6] = 25.0, 25.0
    sizes = np.array([20] * 12 + [1, 2, 1, 2, 1, 2])
    pb = make_problem_from_parameters(rng.standard_normal((2, 8)), np.arange(18) % 2, sizes, 0.1, rng=rng,
                                      covariances=np.array([np.diag(a), np.diag(b)]))
    res = pacfl(pb, np.zeros((2, 8)), 0.1, n_rounds=2, matrix="x")
    assert res.assignments[0].tolist() == pb.labels.tolist()
    np.testing.assert_array_equal(res.ranks, np.minimum(3, sizes))


def test_small_newcomers_join_their_true_clusters():
    """Algorithm 3 with late clients of 1 and 2 points (sigma = 0, p = d, Eq. 3): each lies in its
    cluster's hyperplane, at distance 0 from its old clients."""
    pb = _hyperplane_clusters(3, [20] * 12)
    res = pacfl(pb, np.zeros((2, 3)), 0.5, n_rounds=2, p=3, measure="sum")
    assert res.assignments[0].tolist() == pb.labels.tolist()
    fresh = make_problem_from_parameters(pb.theta_star, np.array([1, 0, 0, 1]), np.array([1, 2, 1, 2]), 0.0,
                                         rng=np.random.default_rng(4))
    U_new = client_signatures(fresh, 3)
    assert _sent(U_new).tolist() == [1, 2, 1, 2]
    new = assign_new_clients(res.proximity, client_signatures(pb, 3), res.assignments[0], U_new,
                             threshold=res.threshold, linkage=res.linkage, measure="sum")
    assert new.labels.tolist() == [1, 0, 0, 1] and new.old_partition_kept
    np.testing.assert_allclose(new.proximity, reference_proximity(
        reference_reduced_signatures(pb, 3) + reference_reduced_signatures(fresh, 3), "sum"), atol=1e-7)


def test_registry_entries():
    pb = _unbalanced()
    for name, D in (("pacfl", pb.d + 1), ("pacfl_x", pb.d)):
        alg = get_algorithm(name)
        assert not alg.uses_rng and alg.options["p"] == 3
        res = alg.run(pb, np.zeros((2, pb.d)), 0.1, n_rounds=10)
        assert alg.communication(pb, res, 0) == (D * 3 + pb.d * 10, pb.d * 10)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = alg.run(pb, np.zeros((2, pb.d)), 0.3, n_rounds=2, rng=None)
        assert res.matrix == ("joint" if name == "pacfl" else "x") and res.n_clusters_found == 2
