"""Point-level IFCA (UIFCA, the IFCA thesis, Algorithms 3-5) with linear regression models."""

import numpy as np
import pytest

from mixreg.algorithms import ALGORITHMS, ifca
from mixreg.algorithms.ifca_points import ifca_points, point_labels
from mixreg.metrics import matched_max_distance, misclustering_rate
from mixreg.problems import Problem, ProblemSpec, make_problem_from_parameters, mixed_point_labels


def _mixed_problem(sizes, k=3, d=3, sigma=0.3, seed=7):
    """Clients of the given sizes whose second half of rows is drawn from all clusters."""
    rng = np.random.default_rng(seed)
    theta_star = 1.5 * rng.standard_normal((k, d))
    labels = np.arange(len(sizes)) % k
    rows = mixed_point_labels(labels, sizes, 0.5, rng=rng)
    return make_problem_from_parameters(theta_star, labels, sizes, sigma, rng=rng, point_labels=rows)


def _reference(pb, theta, eta, T, s, tau):
    """A plain loop straight from the boxes, one client and one point at a time.

    Algorithm 3, line 8: every client labels each of its points by its least squared residual
    (ties to the lowest index).  Algorithm 4: per cluster, tau FedAvg rounds, each client with
    points of the cluster running Algorithm 5 (s full-batch gradient steps on
    (1/(2|S_il|)) ||y_S - X_S theta||^2) from the cluster's model, averaged with |S_il| / |S_*l|.
    Returns the final models, the final point labels and the final objective."""
    theta = np.array(theta, dtype=float)
    k = theta.shape[0]

    def label_points(theta):
        labels, loss = np.empty(pb.N, dtype=int), 0.0
        for i in range(pb.m):
            for r in range(pb.offsets[i], pb.offsets[i + 1]):
                losses = [(pb.y[r] - pb.X[r] @ theta[l]) ** 2 for l in range(k)]
                labels[r] = int(np.argmin(losses))
                loss += min(losses)
        return labels, loss / (2 * pb.N)

    for _ in range(T):
        labels, _ = label_points(theta)
        for l in range(k):
            S = [np.arange(pb.offsets[i], pb.offsets[i + 1]) for i in range(pb.m)]
            S = [rows[labels[rows] == l] for rows in S]
            total = sum(rows.size for rows in S)
            if total == 0:
                continue  # a model with no point keeps its value
            for _ in range(tau):
                average = np.zeros_like(theta[l])
                for rows in S:
                    if rows.size == 0:
                        continue
                    w = theta[l].copy()
                    for _ in range(s):
                        w = w - eta / rows.size * pb.X[rows].T @ (pb.X[rows] @ w - pb.y[rows])
                    average += rows.size / total * w
                theta[l] = average
    labels, loss = label_points(theta)
    return theta, labels, loss


@pytest.mark.parametrize("s, tau", [(1, 1), (3, 1), (1, 2), (3, 2)])
@pytest.mark.parametrize("sizes", [[5, 9, 7, 12, 6, 8, 1], [8] * 6], ids=["unequal", "equal"])
def test_matches_a_plain_loop_from_the_boxes(s, tau, sizes):
    pb = _mixed_problem(np.array(sizes))
    rng = np.random.default_rng(1)
    init = pb.theta_star[None] + 0.8 * rng.standard_normal((3, 3, 3))
    eta = np.array([0.05, 0.15, 0.3])
    res = ifca_points(pb, init, eta, n_rounds=6, local_steps=s, inner_rounds=tau)
    assert not res.diverged.any()
    for b in range(3):
        theta, labels, loss = _reference(pb, init[b], eta[b], 6, s, tau)
        np.testing.assert_allclose(res.theta[b], theta, rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(res.point_assignments[b], labels)
        assert res.train_loss[b] == pytest.approx(loss, rel=1e-10)
        counts = np.zeros((pb.m, 3), dtype=int)
        np.add.at(counts, (np.repeat(np.arange(pb.m), pb.sizes), labels), 1)
        np.testing.assert_array_equal(res.assignments[b], counts.argmax(axis=1))  # majority, ties lowest
    assert res.point_assignments.dtype == np.int64 and res.assignments.dtype == np.int64


def test_with_one_local_step_the_clients_do_not_matter():
    """With s = 1 a round is one gradient step on each cluster's pooled loss
    (1/(2 N_l)) ||X_{S_l} theta_l - y_{S_l}||^2: regrouping the same rows into other clients
    changes nothing (point-level hard EM with a gradient M-step)."""
    pb = _mixed_problem(np.array([5, 9, 7, 12, 6, 8, 1]))
    regrouped = Problem.from_arrays(pb.X, pb.y, [20, 16, 12], [0, 1, 2], pb.theta_star, sigma=pb.sigma)
    init = pb.theta_star[None] + 0.8 * np.random.default_rng(1).standard_normal((2, 3, 3))
    a = ifca_points(pb, init, [0.1, 0.4], n_rounds=8, inner_rounds=2)
    b = ifca_points(regrouped, init, [0.1, 0.4], n_rounds=8, inner_rounds=2)
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(a.point_assignments, b.point_assignments)
    # with s > 1 they do: the local steps run on each client's own points
    c = ifca_points(pb, init, [0.1, 0.4], n_rounds=8, local_steps=3)
    d = ifca_points(regrouped, init, [0.1, 0.4], n_rounds=8, local_steps=3)
    assert np.abs(c.theta - d.theta).max() > 1e-6


@pytest.mark.parametrize("s", [1, 3])
def test_ties_go_to_the_lowest_model_and_a_model_without_points_keeps_its_value(s):
    pb = _mixed_problem(np.array([6, 6, 6]))
    init = np.zeros((1, 3, 3))
    init[0, 2] = [50.0, -50.0, 50.0]  # far from every point: never the least residual
    res = ifca_points(pb, init, 0.2, n_rounds=1, local_steps=s)  # models 0 and 1 tie on every point
    np.testing.assert_array_equal(res.theta[0, 1:], init[0, 1:])
    assert np.abs(res.theta[0, 0]).max() > 0


def test_recovers_the_point_labels_where_client_level_ifca_cannot():
    """Clients that mix clusters (main_fraction p = 1/2, k = 2): started near the truth,
    point-level IFCA labels almost every point right and fits the truth, while client-level
    IFCA, whose every client takes one label, misassigns the foreign points, about
    (1 - p)(1 - 1/k) = 1/4 of them, and fits models biased towards the other cluster."""
    pb = ProblemSpec(m=20, k=2, n=100, d=5, sigma=0.05, scale=6.0, protocol="gaussian",
                     main_fraction=0.5).generate(np.random.default_rng(1))
    init = pb.theta_star[None] + 0.5 * np.random.default_rng(2).standard_normal((3, 2, 5))
    points = ifca_points(pb, init, 0.5, n_rounds=40, history=True)
    clients = ifca(pb, init, 0.5, n_rounds=40)

    # what one label per client can achieve at best: every client right on its majority
    counts = np.zeros((pb.m, pb.k))
    np.add.at(counts, (np.repeat(np.arange(pb.m), pb.sizes), pb.row_labels), 1)
    foreign = 1 - counts.max(axis=1).sum() / pb.N
    assert 0.2 < foreign < 0.3  # measured 0.241

    client_points = misclustering_rate(np.repeat(clients.assignments, pb.sizes, axis=1), pb.row_labels, 2)
    assert (misclustering_rate(clients.assignments, pb.labels, 2) == 0).all()  # clients right...
    np.testing.assert_allclose(client_points, foreign)  # ...and every foreign point wrong (0.241)
    assert (points.point_misclustering < 0.02).all()  # measured 0.0065 (sigma > 0: boundary points)
    assert (points.assignments == pb.labels).all()  # the majority labels are the clients' clusters
    assert (matched_max_distance(points.theta, pb.theta_star) < 0.02).all()  # measured 0.0044
    assert (matched_max_distance(clients.theta, pb.theta_star) > 1.0).all()  # measured 1.43
    # the per-round record ends at the final labelling's rate
    h = points.point_misclustering_history
    assert h.shape == (40, 3) and h[0, 0] > h[-1, 0]
    np.testing.assert_allclose(h[-1], points.point_misclustering, atol=0.005)


def test_on_an_ordinary_problem_it_recovers_the_truth():
    """main_fraction None, sigma = 0: the truth is a fixed point with every point labelled by
    its client's cluster; started near it, point-level IFCA converges to it exactly."""
    pb = ProblemSpec(m=20, k=2, n=30, d=5, sigma=0.0, scale=4.0,
                     protocol="gaussian").generate(np.random.default_rng(3))
    init = pb.theta_star[None] + 0.5 * np.random.default_rng(4).standard_normal((2, 2, 5))
    res = ifca_points(pb, init, [0.5, 1.0], n_rounds=200, tol=1e-13)
    assert res.stop_reason.startswith("converged")
    assert (matched_max_distance(res.theta, pb.theta_star) < 1e-10).all()
    assert (res.point_misclustering == 0).all() and (res.assignments == pb.labels).all()
    assert (res.train_loss < 1e-20).all()


def test_history_records_the_objective_at_every_iterate():
    pb = _mixed_problem(np.array([5, 9, 7, 12, 6, 8, 1]))
    init = pb.theta_star[None] + 0.8 * np.random.default_rng(1).standard_normal((2, 3, 3))
    res = ifca_points(pb, init, [0.1, 0.3], n_rounds=5, history=True, local_steps=2)
    h = res.history
    assert h.theta.shape == (6, 2, 3, 3) and h.misclustered_clients.shape == (5, 2)
    for t in range(5):
        labels, loss = point_labels(pb, h.theta[t])
        np.testing.assert_allclose(h.loss[t], loss, rtol=1e-12)
        np.testing.assert_allclose(res.point_misclustering_history[t],
                                   misclustering_rate(labels, pb.row_labels, 3))
    np.testing.assert_array_equal(h.theta[-1], res.theta)


def test_a_diverged_replica_reports_no_point_misclustering():
    pb = _mixed_problem(np.array([8] * 6))
    res = ifca_points(pb, np.zeros((2, 3, 3)), [0.1, 1e6], n_rounds=20, history=True)
    assert res.diverged.tolist() == [False, True]
    assert np.isnan(res.point_misclustering[1]) and np.isfinite(res.point_misclustering[0])
    # round t's labels are those of theta_t, the last finite models in the round it diverged
    t = res.diverged_round[1]
    assert np.isfinite(res.point_misclustering_history[t, 1])
    assert np.isnan(res.point_misclustering_history[t + 1:, 1]).all() and np.isnan(res.history.loss[t + 1:, 1]).all()


@pytest.mark.parametrize("kwargs, pattern", [(dict(local_steps=0), "local_steps must be in"),
                                             (dict(inner_rounds=0), "inner_rounds must be in"),
                                             (dict(local_steps=1.5), "local_steps must be an integer")])
def test_bad_options_name_the_parameter(kwargs, pattern):
    pb = _mixed_problem(np.array([8] * 6))
    with pytest.raises((ValueError, TypeError), match=pattern):
        ifca_points(pb, np.zeros((3, 3)), 0.1, n_rounds=2, **kwargs)


@pytest.mark.parametrize("tau", [1, 2])
def test_registry_entry_counts_the_protocol_round_by_round(tau):
    """Uploads follow each round's point labels (at theta_t), not the final ones."""
    pb = _mixed_problem(np.array([8] * 6))
    alg = ALGORITHMS["ifca_points"]
    assert not alg.uses_rng and alg.options == {"local_steps": 1, "inner_rounds": 1}
    init = np.zeros((1, 3, 3))
    init[0, 1, 0], init[0, 2, 1] = 1.0, -1.0
    res = ifca_points(pb, init, 0.1, n_rounds=10, inner_rounds=tau)
    client = np.repeat(np.arange(pb.m), pb.sizes)

    def held(theta):  # clusters held by an average client under the labels at theta
        labels = point_labels(pb, theta[None])[0][0]
        return np.mean([np.unique(labels[client == i]).size for i in range(pb.m)])

    thetas = [init[0]] + [ifca_points(pb, init, 0.1, n_rounds=t, inner_rounds=tau).theta[0] for t in range(1, 10)]
    per_round = [held(theta) for theta in thetas]
    assert len(set(per_round)) > 1  # the labels change along the run: the final ones would miscount
    upload, download = alg.communication(pb, res, 0)
    assert upload == pytest.approx(tau * (3 + 1) * sum(per_round))
    assert download == tau * 10 * 3 * 3
    if tau == 1:  # the registry's entry runs the same driver
        assert alg.communication(pb, alg.run(pb, init, 0.1, n_rounds=10), 0) == (upload, download)


def test_a_diverged_replica_communicates_up_to_its_divergence_only():
    pb = _mixed_problem(np.array([8] * 6))
    init = np.zeros((2, 3, 3))
    init[:, 1, 0], init[:, 2, 1] = 1.0, -1.0
    res = ifca_points(pb, init, [0.1, 50.0], n_rounds=10)
    assert res.diverged.tolist() == [False, True] and 0 <= res.diverged_round[1] < 9
    live_rounds = res.diverged_round[1] + 1  # it communicated in the round it diverged in
    alone = ifca_points(pb, init[1:], 50.0, n_rounds=int(live_rounds))  # the same rounds, then stop
    up, down = ALGORITHMS["ifca_points"].communication(pb, res, 1)
    assert down == live_rounds * 3 * 3
    assert up == pytest.approx(ALGORITHMS["ifca_points"].communication(pb, alone, 0)[0])
    assert up < ALGORITHMS["ifca_points"].communication(pb, res, 0)[0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_point_labelling_kernel_equals_the_per_point_rule_bit_for_bit(dtype):
    """The labelling pass against a per-point loop of the rule it implements: ``argmin_l (y_r -
    P_l)^2`` in float64 (ties to the lowest model, nan never chosen, all nan model 0), the best
    square, and the residual ``P - y`` in the data's dtype on the chosen model's row, 0 elsewhere;
    with ``relabel=False`` the labels stay and only the squares and residuals follow them."""
    from mixreg.algorithms.ifca_points import _label_points

    rng = np.random.default_rng(11)
    B, k, N = 3, 3, 50
    y = rng.standard_normal(N).astype(dtype)
    P = (y[None] + rng.integers(-2, 3, (B * k, N))).astype(dtype)  # many exact ties
    P[0, 5], P[1, 5], P[2, 5] = np.nan, np.nan, np.nan  # replica 0, row 5: every model nan
    P[3, 7] = np.nan  # replica 1, row 7: model 0 nan, never chosen
    labels, best, R = np.full((B, N), -1), np.full((B, N), -1.0), np.full((B * k, N), 7.0, dtype=dtype)
    _label_points(P, y, k, True, labels, best, R)

    def reference(labels_in=None):
        lab, bst, res = np.empty((B, N), dtype=np.int64), np.empty((B, N)), np.zeros((B * k, N), dtype=dtype)
        for b in range(B):
            for r in range(N):
                sq = [(np.float64(y[r]) - np.float64(P[b * k + l, r])) ** 2 for l in range(k)]
                numbers = [l for l in range(k) if not np.isnan(sq[l])]
                a = min(numbers, key=lambda l: (sq[l], l)) if labels_in is None and numbers else 0
                a = labels_in[b, r] if labels_in is not None else a
                lab[b, r], bst[b, r] = a, sq[a]
                res[b * k + a, r] = P[b * k + a, r] - y[r]
        return lab, bst, res

    ref_labels, ref_best, ref_R = reference()
    np.testing.assert_array_equal(labels, ref_labels)
    assert np.array_equal(best, ref_best, equal_nan=True) and np.array_equal(R, ref_R, equal_nan=True)
    assert labels[0, 5] == 0 and labels[1, 7] != 0 and (labels == 1).any() and (labels == 2).any()
    fixed = rng.integers(0, k, (B, N))
    _label_points(P, y, k, False, fixed, best, R)
    ref_labels, ref_best, ref_R = reference(fixed)
    assert np.array_equal(best, ref_best, equal_nan=True) and np.array_equal(R, ref_R, equal_nan=True)
