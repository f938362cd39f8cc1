"""Tests of mixreg.algorithms.fesem (FeSEM, Xie et al., Algorithms 1 and 2) against plain per-client
NumPy written here from the paper's boxes."""

import numpy as np
import pytest

from mixreg.algorithms import get_algorithm
from mixreg.algorithms.fesem import _e_step, fesem, initial_centres, warm_start_models
from mixreg.clustering import kmeans, number_groups
from mixreg.problems import Problem, make_problem, make_problem_from_parameters


def reference_fesem(problem, centres0, eta, T, *, s=1, weights="uniform", warm_start="least_squares"):
    """Algorithm 1 (E-step Eq. 7, M-step Eq. 8) and Algorithm 2, one replica, one client at a time.

    Local loss (1/(2 n_i)) ||y_i - X_i w||^2; local training before the first E-step: the
    min-norm least squares, or s gradient steps from zero.  Returns the final centres, local
    models, E-step labels, the per-round objectives (1/2N) sum_i ||y_i - X_i C_{z_i}||^2, the
    final objective and the final Eq.-6 MD-loss.
    """
    clients = [tuple(a.astype(np.float64) for a in problem.client(i)) for i in range(problem.m)]
    C = np.array(centres0, dtype=np.float64)
    k = C.shape[0]
    N = problem.N

    def local_steps(w, Xi, yi):
        for _ in range(s):
            w = w - eta * Xi.T @ (Xi @ w - yi) / len(yi)
        return w

    if warm_start == "least_squares":
        W = [np.linalg.lstsq(Xi, yi, rcond=None)[0] for Xi, yi in clients]
    else:
        W = [local_steps(np.zeros(problem.d), Xi, yi) for Xi, yi in clients]

    def e_step():
        return [int(np.argmin([np.sum((W[i] - C[j]) ** 2) for j in range(k)])) for i in range(problem.m)]

    def objective(z):
        return sum(np.sum((yi - Xi @ C[z[i]]) ** 2) for i, (Xi, yi) in enumerate(clients)) / (2 * N)

    losses = []
    for _ in range(T):
        z = e_step()
        losses.append(objective(z))
        new = C.copy()
        for j in range(k):
            members = [i for i in range(problem.m) if z[i] == j]
            if members:
                omega = [1.0 if weights == "uniform" else float(len(clients[i][1])) for i in members]
                new[j] = sum(o * W[i] for o, i in zip(omega, members)) / sum(omega)
        C = new
        W = [local_steps(C[z[i]].copy(), Xi, yi) for i, (Xi, yi) in enumerate(clients)]
    z = e_step()
    md = np.mean([np.sum((W[i] - C[z[i]]) ** 2) for i in range(problem.m)])
    return C, np.array(W), np.array(z), np.array(losses), objective(z), md


@pytest.fixture(scope="module")
def unbalanced():
    # sizes on both sides of d = 4 (min-norm local models when n_i < d)
    rng = np.random.default_rng(0)
    theta_star = 2.0 * rng.standard_normal((3, 4))
    sizes = np.array([3, 8, 12, 20, 5, 9, 30, 6, 15, 4, 11, 25])
    labels = np.arange(12) % 3
    return make_problem_from_parameters(theta_star, labels, sizes, 0.3, rng=rng)


@pytest.mark.parametrize("weights", ["uniform", "data"])
@pytest.mark.parametrize("s, warm_start", [(1, "least_squares"), (3, "gradient")])
def test_batched_driver_matches_plain_loop(unbalanced, weights, s, warm_start):
    pb = unbalanced
    rng = np.random.default_rng(1)
    init = pb.theta_star[None] + 0.8 * rng.standard_normal((3, pb.k, pb.d))
    steps = np.array([0.05, 0.1, 0.2])
    T = 25
    res = fesem(pb, init, steps, n_rounds=T, local_steps=s, weights=weights, warm_start=warm_start, history=True)
    assert res.weights == weights and res.local_steps == s and res.warm_start == warm_start
    for b in range(3):
        C, W, z, losses, loss, md = reference_fesem(pb, init[b], steps[b], T, s=s, weights=weights,
                                                    warm_start=warm_start)
        np.testing.assert_allclose(res.theta[b], C, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(res.local_models[b], W, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(res.assignments[b], z)
        np.testing.assert_allclose(res.history.loss[:, b], losses, rtol=1e-10)
        assert res.train_loss[b] == pytest.approx(loss, rel=1e-10)
        assert res.md_loss[b] == pytest.approx(md, rel=1e-10)
    # the replicas really differ (different steps), so the comparison is not trivial
    assert np.abs(res.theta[0] - res.theta[2]).max() > 1e-3


def test_weights_differ_with_unequal_sizes(unbalanced):
    """Eq. 8's macro average and the micro average n_i / N_j give different centres."""
    init = unbalanced.theta_star + 0.3
    uni = fesem(unbalanced, init, 0.1, n_rounds=1)
    data = fesem(unbalanced, init, 0.1, n_rounds=1, weights="data")
    W0 = warm_start_models(unbalanced)
    members = uni.assignments[0] == 0  # the first E-step: both runs share it (same W0 and centres)
    sizes = unbalanced.sizes[members]
    np.testing.assert_allclose(uni.theta[0, 0], W0[members].mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(data.theta[0, 0], sizes @ W0[members] / sizes.sum(), rtol=1e-12)
    assert np.abs(uni.theta - data.theta).max() > 1e-3


def test_exact_recovery_without_noise():
    """sigma = 0, well separated, n_i >> d, centres started near the truth: the least-squares warm
    start is theta* exactly, the first M-step lands on theta*, and nothing moves after that."""
    pb = make_problem(m=30, k=3, n=40, d=6, sigma=0.0, scale=3.0, protocol="gaussian", rng=np.random.default_rng(2))
    init = pb.theta_star[None] + 0.2 * np.random.default_rng(3).standard_normal((2, 3, 6))
    res = fesem(pb, init, [0.5, 1.0], n_rounds=10)
    np.testing.assert_allclose(res.theta, np.broadcast_to(pb.theta_star, res.theta.shape), rtol=0, atol=1e-12)
    assert (res.assignments == pb.labels).all()
    assert res.train_loss.max() < 1e-24 and res.md_loss.max() < 1e-24
    # from the gradient warm start (local models far from theta*) it converges geometrically
    res = fesem(pb, init, 1.0, n_rounds=200, warm_start="gradient")
    np.testing.assert_allclose(res.theta[0], pb.theta_star, rtol=0, atol=1e-10)
    assert (res.assignments[0] == pb.labels).all()


def _two_client_problem():
    """Client 0 sees only the first coordinate (rank-1 design), client 1 sees both."""
    X = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, 1.0, 0.0, 3.0])
    return Problem.from_arrays(X, y, [2, 2], [0, 1], np.array([[1.0, 0.0], [0.0, 3.0]]), sigma=0.0)


def test_e_step_is_by_parameter_distance_not_by_loss():
    """A hand-made case where the two decoders disagree, and FeSEM follows the distance (Eq. 7).

    Client 0's min-norm local model is (1, 0).  Centre 0 = (1, 5) fits its data exactly (loss 0,
    the loss-based decoder of IFCA / Su-Xu-Yang picks it) but is at squared distance 25;
    centre 1 = (0.5, 0) has loss > 0 but distance 0.25.  FeSEM assigns client 0 to centre 1.
    """
    pb = _two_client_problem()
    centres = np.array([[1.0, 5.0], [0.5, 0.0]])
    W0 = warm_start_models(pb)
    np.testing.assert_allclose(W0, [[1.0, 0.0], [0.0, 3.0]], atol=1e-15)
    X0, y0 = pb.client(0)
    losses = [np.sum((y0 - X0 @ c) ** 2) for c in centres]
    assert losses[0] == 0.0 < losses[1]  # the loss-based decoder picks centre 0
    res = fesem(pb, centres, 0.1, n_rounds=1, history=True)
    # the M-step moved centre 1 onto client 0's local model and centre 0 onto client 1's:
    # client 0 went to centre 1 (distance), client 1 to centre 0 (distance 5 < 9.25)
    np.testing.assert_allclose(res.theta[0], [[0.0, 3.0], [1.0, 0.0]], atol=1e-15)
    assert res.history.loss[0, 0] == pytest.approx((np.sum((y0 - X0 @ centres[1]) ** 2) + 1.0 + 4.0) / 8)


def test_e_step_ties_go_to_the_lowest_index():
    """Client 0's local model (1, 0) is at squared distance 1 from both centres: it joins centre 0."""
    pb = _two_client_problem()
    centres = np.array([[1.0, 1.0], [1.0, -1.0]])
    res = fesem(pb, centres, 0.1, n_rounds=1)
    np.testing.assert_allclose(res.theta[0], [[0.5, 1.5], [1.0, -1.0]], atol=1e-15)  # centre 1 empty


def _numpy_squared_distances(points, centres):
    """NumPy's expression of the squared distances (float64 differences summed over the last
    axis by ``np.add.reduce``), written out so that the check does not run the code it checks."""
    return ((points[:, None, :] - centres[None]) ** 2).sum(axis=2)


def _reference_e_step(local, centres):
    """Eq. 7 one replica at a time: NumPy's squared distances of the float64 copies, then the
    first of the smallest non-nan distances (centre 0 when all are nan)."""
    m, B, d = local.shape
    assign = np.zeros((B, m), dtype=np.int64)
    dist = np.empty((B, m))
    for b in range(B):
        sq = _numpy_squared_distances(local[:, b].astype(np.float64), centres[b].astype(np.float64))
        for i in range(m):
            numbers = ~np.isnan(sq[i])
            if numbers.any():
                assign[b, i] = np.flatnonzero(sq[i] == sq[i][numbers].min())[0]
            dist[b, i] = sq[i, assign[b, i]]
    return assign, dist


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_batched_e_step_equals_per_replica_squared_distances_bit_for_bit(dtype):
    """The E-step's one pass over all replicas gives the bits of squared_distances run replica by
    replica (explicit float64 differences summed in NumPy's pairwise order: d < 8, 8 <= d <= 128
    and the halved sums of d > 128) and Eq. 7's rule: ties to the lowest index, nan never chosen.

    The centres sit far from the origin next to their clients, where the expansion
    ||w||^2 - 2 <w, c> + ||c||^2 and a left-to-right sum both change bits: the last checks show
    that this data tells them apart, so either change fails the test."""
    rng = np.random.default_rng(7)
    m, B, k = 9, 5, 3
    expansion_differs = serial_differs = False
    for d in (1, 5, 8, 13, 64, 128, 129, 200, 300):
        centres = 50.0 + rng.standard_normal((B, k, d))
        centres[0, 2] = centres[0, 0]  # replica 0: a duplicated centre, ties between 0 and 2
        centres[1, 1] *= 3.0  # replica 1: client 1 at 0, as far from centre 0 as from centre 2 = -centre 0
        centres[1, 2] = -centres[1, 0]
        centres = centres.astype(dtype)
        local = centres[:, rng.integers(0, k, m)].transpose(1, 0, 2) + 0.01 * rng.standard_normal((m, B, d))
        local = np.ascontiguousarray(local, dtype=dtype)
        local[0, 1] = centres[1, 1]  # a client on a centre: distance 0
        local[1, 1] = 0.0
        local[:, 2, d // 2] = np.nan  # replica 2 diverged: every distance nan, centre 0
        centres[3, 1, 0] = np.nan  # replica 3: centre 1 is nan and must never be chosen
        local[4, 3, d - 1] = np.inf  # infinite distances tie: the lowest of the other centres
        assign = np.full((B, m), -1, dtype=np.int64)
        dist = np.full((B, m), -1.0)
        with np.errstate(invalid="ignore", over="ignore"):
            _e_step(local, centres, assign, dist)
            ref_assign, ref_dist = _reference_e_step(local, centres)
        np.testing.assert_array_equal(assign, ref_assign)
        assert np.array_equal(dist, ref_dist, equal_nan=True)
        # the ties, the nan and the inf above are really there
        assert (assign[0] == 0).any() and (assign[0] != 2).all()
        assert assign[1, 0] == 1 and dist[1, 0] == 0.0
        assert assign[1, 1] == 0 and 0.0 < dist[1, 1] < np.inf
        assert (assign[2] == 0).all() and np.isnan(dist[2]).all()
        assert (assign[3] != 1).all() and assign[3, 4] == 0 and dist[3, 4] == np.inf
        # a distance by the expansion, or summed left to right, would give other bits here
        w, c = local[:, :2].astype(np.float64), centres[:2].astype(np.float64)  # finite replicas
        exact = np.stack([_numpy_squared_distances(w[:, b], c[b]) for b in range(2)])
        expanded = ((w * w).sum(axis=2)[:, :, None] - 2.0 * np.einsum("ibd,bjd->ibj", w, c)
                    + (c * c).sum(axis=2)[None]).transpose(1, 0, 2)
        serial = np.cumsum((w[:, :, None] - c[None]) ** 2, axis=3)[..., -1].transpose(1, 0, 2)
        expansion_differs |= not np.array_equal(expanded, exact)
        serial_differs |= not np.array_equal(serial, exact)
    assert expansion_differs and serial_differs


def _orthogonal_design_problem(sigma, seed=0, m_per=12, n=20, d=3):
    """Two clusters +-2 e_1 with X_i^T X_i = n_i I exactly (scaled orthonormal columns)."""
    rng = np.random.default_rng(seed)
    theta_star = np.zeros((2, d))
    theta_star[:, 0] = [2.0, -2.0]
    labels = np.repeat([0, 1], m_per)
    blocks = [np.sqrt(n) * np.linalg.qr(rng.standard_normal((n, d)))[0] for _ in labels]
    X = np.concatenate(blocks)
    y = np.concatenate([Xi @ theta_star[l] for Xi, l in zip(blocks, labels)]) + sigma * rng.standard_normal(len(X))
    return Problem.from_arrays(X, y, np.full(len(labels), n), labels, theta_star, sigma=sigma)


def test_unit_step_with_isotropic_designs_is_lloyd_on_local_least_squares():
    """With H_i = I, eta = 1 and one local step, G_i(w) = X_i^T y_i / n_i = W_i^0 whatever w: every
    local model is its least-squares estimate forever, and FeSEM is Lloyd's k-means on them."""
    pb = _orthogonal_design_problem(sigma=1.5)
    init = np.array([[1.0, 0.0, 0.0], [-5.0, 0.0, 0.0]])
    res = fesem(pb, init, 1.0, n_rounds=30)
    km = kmeans(warm_start_models(pb), 2, init=init)
    assert km.n_iter >= 3  # Lloyd changed labels on the way
    np.testing.assert_array_equal(number_groups(res.assignments[0]), km.labels)
    order = [int(res.assignments[0][np.flatnonzero(km.labels == g)[0]]) for g in range(2)]
    np.testing.assert_allclose(res.theta[0][order], km.centres, rtol=1e-10)
    np.testing.assert_allclose(res.local_models[0], warm_start_models(pb), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("eta, locked", [(0.2, True), (0.4, True), (0.6, False), (1.0, False)])
def test_small_local_steps_lock_the_first_assignments(eta, locked):
    """The failure regime of one small local step: with H_i = I the local model
    W_i = (1 - eta) C_{z_i} + eta W_i^0 stays next to the centre it came from, so a client
    switches only if eta > 1/2 (half-way to its own centre).  Below, the first E-step (bad
    centres here) is never corrected; above, FeSEM recovers the clusters."""
    pb = _orthogonal_design_problem(sigma=0.5)
    init = np.array([[1.0, 0.0, 0.0], [-5.0, 0.0, 0.0]])  # boundary at x_1 = -2: half of cluster 1 in cell 0
    W0 = warm_start_models(pb)
    first = np.argmin(((W0[:, None] - init[None]) ** 2).sum(axis=2), axis=1)
    first_error = np.mean(first != pb.labels)
    assert 0.15 < first_error < 0.5
    res = fesem(pb, init, eta, n_rounds=100, history=True)
    if locked:
        np.testing.assert_array_equal(res.assignments[0], first)
        np.testing.assert_allclose(res.history.misclustered_clients[:, 0], first_error)
    else:
        assert (res.assignments[0] == pb.labels).all()


def test_distance_e_step_fails_when_clients_see_fewer_directions_than_d():
    """n_i < d / 2, sigma = 0, centres at the truth: the min-norm local model is the projection of
    theta*_l on an n_i-dimensional subspace, closer to a short centre than to its own; the
    loss-based decoder is exact on the same data.  With n_i >> d both are exact."""
    d = 20
    theta_star = np.zeros((2, d))
    theta_star[0, 0], theta_star[1, 1] = 0.5, 3.0
    labels = np.repeat([0, 1], 20)
    errors = {}
    for n in (4, 60):
        pb = make_problem_from_parameters(theta_star, labels, n, 0.0, rng=np.random.default_rng(n))
        res = fesem(pb, theta_star, 0.1, n_rounds=1, history=True)
        errors[n] = float(res.history.misclustered_clients[0, 0])
        P = pb.X @ theta_star.T  # loss-based decoder: argmin_j ||y_i - X_i theta*_j||^2
        loss = np.add.reduceat((pb.y[:, None] - P) ** 2, pb.offsets[:-1], axis=0)
        assert (np.argmin(loss, axis=1) == labels).all()
    assert errors[4] >= 0.45 and errors[60] == 0.0


def test_empty_centre_keeps_its_value(unbalanced):
    far = np.concatenate([unbalanced.theta_star, 100.0 + np.zeros((1, unbalanced.d))])
    res = fesem(unbalanced, far, 0.1, n_rounds=5)
    np.testing.assert_array_equal(res.theta[0, 3], far[3])
    assert not (res.assignments == 3).any()


def test_diverged_replica_is_frozen_with_its_local_models(unbalanced):
    init = np.stack([unbalanced.theta_star] * 2)
    res = fesem(unbalanced, init, [0.1, 5.0], n_rounds=60)
    assert res.diverged.tolist() == [False, True]
    t = int(res.diverged_round[1])
    assert t >= 2
    before = fesem(unbalanced, init[1], 5.0, n_rounds=t)  # the state before the offending round
    np.testing.assert_allclose(res.theta[1], before.theta[0], rtol=1e-12)
    np.testing.assert_allclose(res.local_models[1], before.local_models[0], rtol=1e-12)
    assert np.isnan(res.train_loss[1]) and np.isnan(res.md_loss[1]) and np.isfinite(res.md_loss[0])
    # local models that blow up within one round (40 unstable local steps) freeze the replica at
    # once, though the new centres (the average of the warm-start models) are still fine
    res = fesem(unbalanced, init, [0.1, 1e6], n_rounds=5, local_steps=40)
    assert res.diverged.tolist() == [False, True] and res.diverged_round[1] == 0
    np.testing.assert_array_equal(res.theta[1], init[1])
    np.testing.assert_allclose(res.local_models[1], warm_start_models(unbalanced), rtol=1e-12)


def test_float32_close_to_float64(unbalanced):
    init = unbalanced.theta_star + 0.3
    a = fesem(unbalanced, init, 0.1, n_rounds=20)
    b = fesem(unbalanced.astype(np.float32), init, 0.1, n_rounds=20)
    assert b.theta.dtype == np.float32 and b.local_models.dtype == np.float32
    np.testing.assert_array_equal(a.assignments, b.assignments)
    np.testing.assert_allclose(b.theta, a.theta, rtol=1e-4, atol=1e-4)


def test_initial_centres_are_kmeans_of_the_local_models():
    pb = make_problem(m=30, k=3, n=30, d=4, sigma=0.1, scale=3.0, protocol="gaussian", rng=np.random.default_rng(5))
    init = initial_centres(pb, 2, rng=np.random.default_rng(6))
    again = kmeans(warm_start_models(pb), 3, n_init=20, rng=np.random.default_rng(6)).centres
    np.testing.assert_allclose(init[0], again)
    # well separated: the best of 20 k-means runs finds the clusters, and FeSEM keeps them
    res = fesem(pb, init, 0.5, n_rounds=30)
    assert all((number_groups(a) == number_groups(pb.labels)).all() for a in res.assignments)


def test_gradient_warm_start_is_local_steps_from_zero(unbalanced):
    W = warm_start_models(unbalanced, "gradient", step_size=0.1, local_steps=3)
    for i in range(unbalanced.m):
        Xi, yi = unbalanced.client(i)
        w = np.zeros(unbalanced.d)
        for _ in range(3):
            w = w - 0.1 * Xi.T @ (Xi @ w - yi) / len(yi)
        np.testing.assert_allclose(W[i], w, rtol=1e-12)
    with pytest.raises(ValueError, match="step_size is required"):
        warm_start_models(unbalanced, "gradient")


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        (dict(weights="n_i"), "weights must be one of 'uniform', 'data'"),
        (dict(warm_start="zero"), "warm_start must be one of 'least_squares', 'ridge', 'gradient'"),
        (dict(local_steps=0), r"local_steps must be in \[1, inf\)"),
        (dict(rng=3), "rng"),
    ],
)
def test_bad_options_name_the_parameter(unbalanced, kwargs, pattern):
    with pytest.raises((ValueError, TypeError), match=pattern):
        fesem(unbalanced, unbalanced.theta_star, 0.1, n_rounds=2, **kwargs)


def test_registration_and_communication(unbalanced):
    alg = get_algorithm("fesem")
    assert alg.options == {"weights": "uniform", "local_steps": 1, "warm_start": "least_squares"}
    assert not alg.uses_rng
    res = alg.run(unbalanced, unbalanced.theta_star, 0.1, n_rounds=3, rng=np.random.default_rng(0))
    assert alg.communication(unbalanced, res, 0) == (4.0 * 4, 4.0 * 3)
    direct = fesem(unbalanced, unbalanced.theta_star, 0.1, n_rounds=3)
    np.testing.assert_array_equal(res.theta, direct.theta)


def test_the_tolerance_stops_only_when_the_local_models_rest_too(unbalanced):
    """From the paper's k-means start the first M-step repeats the k-means centres (they move by
    0 in round 1) while the local models move: that round is not convergence.  With a tolerance
    the run must end where the full run ends, not after one round."""
    init = initial_centres(unbalanced, 2, rng=np.random.default_rng(3))
    full = fesem(unbalanced, init, 0.3, n_rounds=400)
    early = fesem(unbalanced, init, 0.3, n_rounds=400, tol=1e-10)
    assert early.stop_reason.startswith("converged") and early.n_rounds > 5
    np.testing.assert_allclose(early.theta, full.theta, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_m_step_and_loss_kernels_equal_the_numpy_expressions_bit_for_bit(dtype):
    """Eq. 8's one pass gives the bits of ``scatter_add`` of ``omega * local`` in float64, divided by
    the mass, rounded to the dtype (an empty centre keeps its value); the objective's pass gives
    the bits of ``np.bincount`` of the float64 squares of the residuals, in buffer order."""
    from mixreg import kernels
    from mixreg.algorithms.fesem import _m_step, _residual_squares

    rng = np.random.default_rng(5)
    m, B, k, d = 11, 4, 3, 9
    local = (1e2 * rng.standard_normal((m, B, d))).astype(dtype)
    local[3, 2, 1] = np.nan
    centres = rng.standard_normal((B, k, d)).astype(dtype)
    assign = rng.integers(0, k, (B, m))
    assign[1] = np.where(assign[1] == 2, 0, assign[1])  # replica 1: centre 2 empty
    omega = rng.integers(1, 50, m).astype(np.float64)
    sums, mass = np.empty(centres.shape), np.empty((B, k, 1))
    kernels.scatter_add(omega[:, None, None] * local.astype(np.float64), assign, sums)
    kernels.scatter_add(np.ascontiguousarray(np.broadcast_to(omega[:, None, None], (m, B, 1))), assign, mass)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.where(mass > 0, sums / mass, centres).astype(dtype)
    new = _m_step(local, assign, omega, centres)
    assert new.dtype == dtype and np.array_equal(new, expected, equal_nan=True)
    assert np.array_equal(new[1, 2], centres[1, 2]) and np.isnan(new[2, assign[2, 3]]).any()

    sizes = np.array([1, 7, 130, 3, 40])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    N = offsets[-1]
    # magnitudes over six decades: in float32 most residuals Q - y round, so a residual taken in
    # float64 instead of the data's dtype gives other bits (checked below)
    y = (10.0 ** rng.uniform(-3, 3, N) * rng.choice([-1.0, 1.0], N)).astype(dtype)
    Q = (10.0 ** rng.uniform(-3, 3, (B, N)) * rng.choice([-1.0, 1.0], (B, N))).astype(dtype)
    flat = np.concatenate([Q[:, offsets[i]:offsets[i + 1]].ravel() for i in range(sizes.size)])
    replica = np.concatenate([np.repeat(np.arange(B), n) for n in sizes])
    residual = flat - np.concatenate([np.tile(y[offsets[i]:offsets[i + 1]], B) for i in range(sizes.size)])
    expected = np.bincount(replica, weights=np.square(residual, dtype=np.float64), minlength=B)
    out = np.full(B, np.nan)
    _residual_squares(flat, y, offsets, out)
    assert np.array_equal(out, expected)
    if dtype == np.float32:
        wide = flat.astype(np.float64) - np.concatenate([np.tile(y[offsets[i]:offsets[i + 1]], B)
                                                         for i in range(sizes.size)]).astype(np.float64)
        assert not np.array_equal(np.bincount(replica, weights=wide * wide, minlength=B), expected)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("size_law", [None, "zipf"])
def test_the_objective_reuses_the_local_updates_predictions_bit_for_bit(monkeypatch, dtype, size_law):
    """The objective's predictions of the clients whose centre stayed are the last local update's
    first predictions: the run equals one that computes every prediction, field by field, and the
    reuse happens (only the clients whose assignment changed are predicted again)."""
    import importlib
    from mixreg import kernels
    from mixreg.algorithms.ifca import initial_parameters
    from mixreg.problems import ProblemSpec

    sizes = {"n": 20} if size_law is None else {"size_law": "zipf", "n_min": 1, "n_max": 200, "size_mean": 20}
    problem = ProblemSpec(m=30, k=3, d=12, sigma=0.3, scale=0.5, dtype=dtype, **sizes).generate(np.random.default_rng(3))
    init = initial_parameters(problem, 8, "gaussian", rng=np.random.default_rng(4), scale=0.5)
    steps = np.array([0.01, 0.05, 0.2, 0.5, 0.01, 0.05, 0.2, 40.0])  # the last replica diverges
    partial = []
    predictions = kernels.client_predictions

    def counting(*args, clients=None, **kwargs):
        if clients is not None:
            partial.append(len(clients))
        return predictions(*args, clients=clients, **kwargs)

    monkeypatch.setattr(kernels, "client_predictions", counting)
    reused = [fesem(problem, init, eta, n_rounds=25, history=True) for eta in (0.05, steps, 40.0)]
    assert partial and min(partial) < problem.m  # some rounds predicted only some clients again

    fesem_module = importlib.import_module("mixreg.algorithms.fesem")  # the module, not the function

    class EveryPrediction(fesem_module._Workspace):
        kept_valid = property(lambda self: False, lambda self, value: None)

    monkeypatch.setattr(fesem_module, "_Workspace", EveryPrediction)
    computed = [fesem(problem, init, eta, n_rounds=25, history=True) for eta in (0.05, steps, 40.0)]
    assert computed[1].diverged.sum() == 1 and computed[2].diverged.all()  # its stale rows are never read
    for a, b in zip(reused, computed):
        for field in ("theta", "assignments", "train_loss", "md_loss", "local_models", "diverged_round"):
            assert np.array_equal(getattr(a, field), getattr(b, field), equal_nan=True), field
        assert np.array_equal(a.history.loss, b.history.loss, equal_nan=True)  # every round's objective


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_largest_change_is_numpys_expression(dtype):
    """The tolerance's measure of the local models' move, ``np.abs(new - old).max(axis=(0, 2))``,
    in one pass: the same values, NaN wherever a difference is NaN (a pass that skips NaN fails
    on replicas 1 and 2), inf where one is infinite."""
    from mixreg.algorithms.fesem import _largest_change

    rng = np.random.default_rng(8)
    m, B, d = 7, 5, 13
    old = rng.standard_normal((m, B, d)).astype(dtype)
    new = (old + 10.0 ** rng.uniform(-9, 2, (m, B, d))).astype(dtype)
    new[4, 1, 3] = np.nan
    old[0, 2, 12] = np.nan  # the first client: a NaN before any larger change
    new[2, 3, 5] = np.inf
    new[:, 4] = old[:, 4]  # a replica that did not move: 0
    with np.errstate(invalid="ignore"):
        expected = np.abs(new - old).max(axis=(0, 2))
    got = _largest_change(new, old)
    assert got.dtype == dtype and np.array_equal(got, expected, equal_nan=True)
    assert np.isnan(got[1]) and np.isnan(got[2]) and got[3] == np.inf and got[4] == 0
