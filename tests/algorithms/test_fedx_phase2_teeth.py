"""Phase-2 (FedX with clustering) tests with teeth: exact values, computed here in plain NumPy from
the client data, that a wrong aggregation weight, a renormalisation within a cluster, a driver
that does not move, or a decoder that reads only part of a client's data cannot reproduce.

The property test of tests/theory/test_theory_sxy.py checks an upper bound (a contraction to a floor),
which an algorithm that contracts faster, or differently weighted, also satisfies.  Here:

* one round with the true labels is exactly
  :math:`\\theta_l + \\sum_{i \\in S_l} (n_i/N) (\\theta^{(i)} - \\theta_l)`, the local models
  :math:`\\theta^{(i)}` computed by literal local steps (uniform weights :math:`1/M` and
  :math:`n_i / N_l` give other values when the sizes are unequal and ``k >= 2``);
* the per-round factor with the true labels is the spectral radius of
  :math:`I - \\eta (N_l/N) H_l`, :math:`H_l = X_{S_l}^\\top X_{S_l} / N_l` (renormalising gives
  :math:`I - \\eta H_l`, a zero step gives 1);
* the decoder uses all of a client's data: clients whose first sample points to the wrong model
  and whose full data point to the right one are decoded right;
* started near the truth, the error to the fixed point strictly decreases every round.

Every problem is drawn from a fixed seed; the whole file runs in well under a second.
"""

import numpy as np
import pytest

from mixreg.algorithms.fedx import fedx
from mixreg.problems import Problem, make_problem_from_parameters

#: unequal sizes, all above d, with the two clusters' data fractions far from their client fractions
SIZES = np.array([3, 40, 7, 25, 5, 60, 9, 12, 4, 30, 6, 18])
LABELS = np.array([0, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1])


def _problem(sigma, seed=0, d=4):
    rng = np.random.default_rng(seed)
    theta_star = np.array([[3.0, 0.0, 1.0, -1.0], [-2.0, 2.0, 0.0, 1.0]])[:, :d]
    return make_problem_from_parameters(theta_star, LABELS, SIZES, sigma, rng=rng)


def _decode(problem, theta):
    """ML decoder in plain NumPy: argmin_l sum_j (y_ij - <x_ij, theta_l>)^2 over all of client i's data."""
    out = []
    for i in range(problem.m):
        X, y = problem.client(i)
        out.append(int(np.argmin([np.sum((y - X @ t) ** 2) for t in theta])))
    return np.array(out)


def _local_model(X, y, theta, eta, solver, s):
    """Literal local solver: s gradient steps on (1/(2n))||X v - y||^2, or the proximal minimiser."""
    n, d = X.shape
    if solver == "fedavg":
        v = theta.copy()
        for _ in range(s):
            v = v - eta * X.T @ (X @ v - y) / n
        return v
    return np.linalg.solve(X.T @ X / n + np.eye(d) / eta, X.T @ y / n + theta / eta)


def _one_round_true_labels(problem, theta, eta, solver="fedavg", s=1):
    """theta_l + sum_{i in S_l} (n_i / N) (theta^(i) - theta_l), with S_l the true cluster."""
    new = theta.copy()
    for i in range(problem.m):
        X, y = problem.client(i)
        l = problem.labels[i]
        new[l] += (len(y) / problem.N) * (_local_model(X, y, theta[l], eta, solver, s) - theta[l])
    return new


@pytest.mark.parametrize("solver,s", [("fedavg", 1), ("fedavg", 3), ("fedprox", 1)])
def test_one_round_with_true_labels_is_the_n_over_N_weighted_average(solver, s):
    pb = _problem(sigma=0.2)
    theta0 = pb.theta_star + np.array([[0.4, -0.3, 0.2, 0.1], [-0.2, 0.3, 0.4, -0.1]])
    assert np.array_equal(_decode(pb, theta0), pb.labels)  # precondition: the decoder is right
    eta = 0.1
    expected = _one_round_true_labels(pb, theta0, eta, solver, s)
    res = fedx(pb, theta0, eta, local_solver=solver, local_steps=s, n_rounds=1)
    np.testing.assert_allclose(res.theta[0], expected, rtol=1e-12, atol=1e-12)
    # the weights matter here: uniform weights and per-cluster renormalisation give other values
    for weights in (np.full(pb.m, 1 / pb.m), pb.sizes / pb.cluster_sizes[pb.labels]):
        other = theta0.copy()
        for i in range(pb.m):
            X, y = pb.client(i)
            l = pb.labels[i]
            other[l] += weights[i] * (_local_model(X, y, theta0[l], eta, solver, s) - theta0[l])
        assert np.abs(other - expected).max() > 1e-3


def test_per_round_factor_is_the_spectral_radius_of_the_data_weighted_map():
    """Noise-free, so theta* is the fixed point; started along the slowest eigenvector of
    A_l = I - eta (N_l/N) H_l, the error shrinks by exactly rho(A_l) every round."""
    pb = _problem(sigma=0.0)
    eta = 1.0
    N = pb.N
    theta0 = pb.theta_star.copy()
    rho = np.empty(pb.k)
    for l in range(pb.k):
        rows = np.repeat(pb.labels, pb.sizes) == l
        Xl = pb.X[rows]
        N_l = int(rows.sum())
        H_l = Xl.T @ Xl / N_l
        A_l = np.eye(pb.d) - eta * (N_l / N) * H_l
        lam, vec = np.linalg.eigh(A_l)
        top = int(np.argmax(np.abs(lam)))
        rho[l] = abs(lam[top])
        theta0[l] += 0.5 * vec[:, top]
        # the factors the mutants would give differ: renormalised I - eta H_l, a zero step 1
        assert abs(np.abs(np.linalg.eigvalsh(np.eye(pb.d) - eta * H_l)).max() - rho[l]) > 0.05
        assert rho[l] < 0.95
    assert np.array_equal(_decode(pb, theta0), pb.labels)
    T = 4
    res = fedx(pb, theta0, eta, n_rounds=T, history=True)
    err = np.linalg.norm(res.history.theta[:, 0] - pb.theta_star, axis=2)  # (T + 1, k)
    np.testing.assert_allclose(err[1:] / err[:-1], np.broadcast_to(rho, (T, pb.k)), rtol=1e-9)


def _first_sample_misleads(seed=3, m=10, n=6, d=3):
    """Noise-free clients whose first sample is generated by the other model."""
    rng = np.random.default_rng(seed)
    theta_star = np.array([[2.0, 0.0, 1.0], [0.0, 2.0, -1.0]])
    labels = np.arange(m) % 2
    X = rng.standard_normal((m * n, d))
    y = np.empty(m * n)
    X[::n] *= 0.3  # a small first sample: it misleads alone, not against the rest
    for i, l in enumerate(labels):
        rows = slice(i * n, (i + 1) * n)
        y[rows] = X[rows] @ theta_star[l]
        y[i * n] = X[i * n] @ theta_star[1 - l]  # the first sample points to the wrong model
    return Problem.from_arrays(X, y, np.full(m, n), labels, theta_star, sigma=0.0)


def test_the_decoder_uses_all_of_a_clients_data():
    pb = _first_sample_misleads()
    theta0 = pb.theta_star.copy()
    # precondition: on the first sample alone every client would pick the other model
    first = np.array([int(np.argmin([(pb.y[o] - pb.X[o] @ t) ** 2 for t in theta0])) for o in pb.offsets[:-1]])
    assert np.all(first != pb.labels)
    assert np.array_equal(_decode(pb, theta0), pb.labels)
    eta = 0.2
    res = fedx(pb, theta0, eta, n_rounds=1)
    np.testing.assert_allclose(res.theta[0], _one_round_true_labels(pb, theta0, eta), rtol=1e-12, atol=1e-12)
    assert np.array_equal(_decode(pb, res.theta[0]), pb.labels)  # so the final decoding is right too
    np.testing.assert_array_equal(res.assignments[0], pb.labels)


@pytest.mark.parametrize("solver", ["fedavg", "fedprox"])
def test_error_to_the_fixed_point_strictly_decreases_near_the_truth(solver):
    """With the decoder right, model l's fixed point is the least-squares fit on its cluster's data
    (for both solvers); the error to it must shrink every round, and by a real amount overall."""
    pb = _problem(sigma=0.3, seed=1)
    rows = np.repeat(pb.labels, pb.sizes)
    fixed = np.array([np.linalg.lstsq(pb.X[rows == l], pb.y[rows == l], rcond=None)[0] for l in range(pb.k)])
    theta0 = pb.theta_star + np.array([[0.3, 0.3, -0.3, 0.3], [-0.3, 0.3, 0.3, 0.3]])
    assert np.array_equal(_decode(pb, theta0), pb.labels)
    T = 15
    res = fedx(pb, theta0, 0.5, local_solver=solver, n_rounds=T, history=True)
    err = np.linalg.norm(res.history.theta[:, 0] - fixed, axis=2).max(axis=1)  # (T + 1,)
    assert np.all(err[1:] < err[:-1] * (1 - 1e-3)), err
    assert err[-1] < 0.5 * err[0], err
