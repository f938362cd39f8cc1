"""The shared trainer of the one-shot methods: FedAvg(s) within clusters of fixed row labels."""

import numpy as np
import pytest

from mixreg.algorithms._fixed_labels import majority_labels, train_on_labels
from mixreg.baselines import known_label_least_squares
from mixreg.problems import make_problem


def _problem():
    return make_problem(m=6, k=2, n=np.array([5, 9, 7, 12, 6, 8]), d=3, sigma=0.3, scale=1.5,
                        protocol="gaussian", rng=np.random.default_rng(7))


def _reference(pb, row_labels, theta, eta, s, T):
    """A plain loop from the definition: every (client, cluster) pair with rows takes s local
    gradient steps from its cluster's model; the server averages with weights n_{i,l} / N_l."""
    theta = np.array(theta, dtype=float)
    for _ in range(T):
        new = np.zeros_like(theta)
        for l in range(theta.shape[0]):
            N_l = np.sum(row_labels == l)
            if N_l == 0:
                new[l] = theta[l]
                continue
            for i in range(pb.m):
                rows = np.arange(pb.offsets[i], pb.offsets[i + 1])
                rows = rows[row_labels[rows] == l]
                if rows.size == 0:
                    continue
                Xi, yi = pb.X[rows], pb.y[rows]
                w = theta[l].copy()
                for _ in range(s):
                    w = w - eta / rows.size * Xi.T @ (Xi @ w - yi)
                new[l] += rows.size / N_l * w
        theta = new
    return theta


@pytest.mark.parametrize("s", [1, 3])
def test_matches_a_plain_loop_with_clients_that_mix_clusters(s):
    pb = _problem()
    rng = np.random.default_rng(1)
    row_labels = rng.integers(0, 2, pb.N)  # every client holds rows of both clusters
    init = rng.standard_normal((2, 2, 3))
    eta = np.array([0.05, 0.1])
    res = train_on_labels(pb, row_labels, init, eta, local_steps=s, n_rounds=7)
    for b in range(2):
        np.testing.assert_allclose(res.theta[b], _reference(pb, row_labels, init[b], eta[b], s, 7), rtol=1e-10)
    resid = pb.y - np.einsum("nd,bnd->bn", pb.X, res.theta[:, row_labels])
    np.testing.assert_allclose(res.train_loss, (resid ** 2).sum(axis=1) / (2 * pb.N), rtol=1e-12)
    assert res.assignments.shape == (2, pb.m)


def test_converges_to_the_pooled_least_squares_of_each_cluster():
    pb = _problem()
    res = train_on_labels(pb, np.repeat(pb.labels, pb.sizes), np.zeros((1, 2, 3)), np.array([0.5]),
                          n_rounds=400, tol=1e-13)
    np.testing.assert_allclose(res.theta[0], known_label_least_squares(pb), atol=1e-10)
    assert res.replicas.reason.startswith("converged")


def test_a_cluster_without_rows_keeps_its_model_and_a_huge_step_diverges():
    pb = _problem()
    init = np.ones((2, 3, 3))
    res = train_on_labels(pb, np.repeat(pb.labels, pb.sizes), init, np.array([0.2, 1e6]), n_rounds=50)
    np.testing.assert_array_equal(res.theta[:, 2], init[:, 2])
    assert res.replicas.diverged.tolist() == [False, True] and np.isnan(res.train_loss[1])


def test_majority_labels_ties_to_the_lowest():
    offsets = np.array([0, 4, 7])
    assert majority_labels(np.array([1, 1, 0, 0, 2, 2, 1]), offsets, 3).tolist() == [0, 2]
