"""IFCA's clustering step against its exact law, and the one-round update against its exact form.

The Theorem 1 property test of ``tests/theory/test_theory_ifca.py`` lives in a regime where a worker is
misclustered with probability at most ``(k - 1) m^-3``: its third term is never exercised, and
it passes with the true labels in place of the identity estimate (random mis-assignments it
sees only through the displacement of a single wrong worker, when ``p m`` is small).  The tests
here look at the clustering step where it matters, a few percent of misclustered workers (small
``n'``, moderate ``rho``), and at the exact linear map of a round:

* :func:`test_driver_misclustering_rate_matches_the_exact_law`: the per-worker misclustering
  rate of the driver's own identity estimate (read off its update, see :func:`decode_identities`)
  agrees with the exact probability of the two residual sums (:func:`misclustering_probability`,
  computed here from the F distribution, independently of the package) and lies under Lemma 1's
  bound.  This test and the next are the ones that catch an identity estimate replaced by the
  true labels: true labels only *help* a contraction bound, so no bound on the error can.
* :func:`test_theorem1_one_round_mean_with_misclustering`: Theorem 1's one-round update in
  expectation, misclustering term included at its exact value (property test, k = 2).
* :func:`test_one_round_factor_is_one_minus_two_gamma_p_lambda`: the linear part of Theorem 1,
  ``theta_j^+ - theta*_j = (1 - 2 gamma p_j lambda) (theta_j - theta*_j)`` along an eigenvector
  of the cluster's empirical Hessian, to rounding (catches a wrong step size or normalisation).

``paper_checks/ifca_mutants.py`` checks that each of these fails on a mutated driver.

Conventions: ``Delta = ||theta*_1 - theta*_0||``, ``rho = Delta^2 / sigma^2``, ``n'`` points per
worker in each of the round's two fresh subsets (identity estimate, gradient), ``p_j = m_j / m``
and ``gamma = c1 / min_j p_j`` with ``c1 = 3/8`` (``mixreg.theory.ifca_step_size``).
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

import numpy as np
import pytest
from scipy import stats

from mixreg import theory
from mixreg.algorithms.ifca import ifca
from mixreg.problems import make_problem_from_parameters, make_theta_star

# the driver's module (the package exports a function of the same name); only its split of a
# client's rows into the round's subsets is used, to know which rows fed the gradient
ifca_mod = importlib.import_module("mixreg.algorithms.ifca")

#: Theorem 1's c4 (derived in tests/theory/test_theory_ifca.py, test_theorem1_one_round_contraction).
C4 = 1 / 9
#: Two-sided level of the binomial (Clopper-Pearson) intervals.
CONFIDENCE = 0.999
#: Probability of mis-assignment added by the "random mis-assignment" alternative.
RANDOM_FLIP = 0.03

# --------------------------------------------------------------------------------------------
# The exact law of the identity estimate (k = 2), written here, independently of mixreg.theory
# --------------------------------------------------------------------------------------------


def residual_covariance(theta_star_own, theta_own, theta_other, sigma):
    """Covariance ``(a, b, c)`` of the residuals of one point of a worker of a cluster.

    For ``y = <x, theta*> + eps`` with ``x ~ N(0, I)``, ``eps ~ N(0, sigma^2)``, the residuals
    under its own model and the other model are ``U = <x, w> + eps`` and ``V = <x, v> + eps``
    with ``w = theta* - theta_own`` and ``v = theta* - theta_other``: a centred Gaussian pair with
    ``a = Var U = |w|^2 + sigma^2``, ``b = Var V = |v|^2 + sigma^2``, ``c = <w, v> + sigma^2``.
    """
    w = np.asarray(theta_star_own) - np.asarray(theta_own)
    v = np.asarray(theta_star_own) - np.asarray(theta_other)
    s2 = float(sigma) ** 2
    return float(w @ w) + s2, float(v @ v) + s2, float(w @ v) + s2


def _eigenvalues(a, b, c):
    """``(lam_plus, lam_minus) >= 0`` with ``V^2 - U^2 = lam_plus g1^2 - lam_minus g2^2``."""
    det = max(a * b - c * c, 0.0)
    s = math.sqrt((b - a) ** 2 + 4.0 * det)
    return (s + (b - a)) / 2.0, (s - (b - a)) / 2.0


def misclustering_probability(a, b, c, n_prime):
    """Exact probability that the worker prefers the other model on ``n'`` fresh points.

    .. math::

        P\\Big(\\sum_{r=1}^{n'} V_r^2 < \\sum_{r=1}^{n'} U_r^2\\Big)
        = F_{n', n'}\\big(\\lambda_- / \\lambda_+\\big),

    because ``(U, V) = Sigma^{1/2} g`` with ``g ~ N(0, I_2)`` turns ``V^2 - U^2`` into
    ``g' Sigma^{1/2} diag(-1, 1) Sigma^{1/2} g``, whose matrix has the eigenvalues of
    ``diag(-1, 1) Sigma``: ``lam_+- = (s +- (b - a)) / 2`` with
    ``s = sqrt((b - a)^2 + 4 (ab - c^2))``.  Summed over the ``n'`` i.i.d. points this is
    ``lam_+ chi2_{n'} - lam_- chi2'_{n'}`` with independent chi-squares, negative exactly when
    the ratio of the two chi-squares (an ``F(n', n')`` variable) is below ``lam_- / lam_+``.
    Ties have probability 0 unless ``lam_- = 0`` (then the probability is 0).
    """
    lam_plus, lam_minus = _eigenvalues(a, b, c)
    if lam_minus == 0.0:
        return 0.0
    if lam_plus == 0.0:
        return 1.0
    return float(stats.f.cdf(lam_minus / lam_plus, n_prime, n_prime))


def chernoff_bound(a, b, c, n_prime):
    """Lemma 1's bound before its simplification: ``(1 + (b - a)^2 / (4 (ab - c^2)))^(-n'/2)``.

    The Chernoff bound ``min_t E exp(-t sum (V^2 - U^2))`` with the exact Gaussian moment
    generating function, ``[(1 + 2 t lam_+)(1 - 2 t lam_-)]^(-n'/2)``, minimal at
    ``t = (lam_+ - lam_-) / (4 lam_+ lam_-)``.
    """
    det = a * b - c * c
    return 0.0 if det <= 0.0 and b > a else (1.0 + (b - a) ** 2 / (4.0 * det)) ** (-n_prime / 2)


def lemma1_bound(rho, n_prime, c4=C4):
    """``exp(-c4 (rho / (rho + 1))^2 n')``: the Chernoff bound's worst case over Assumption 1's
    ball ``||theta_j - theta*_j|| <= Delta/4`` for k = 2 (derivation of ``c4 = 1/9`` in
    ``test_theorem1_one_round_contraction``)."""
    return math.exp(-c4 * (rho / (rho + 1.0)) ** 2 * n_prime)


def cluster_probabilities(theta_star, theta, sigma, n_prime):
    """``P[c]``: probability that a worker of cluster ``c`` (k = 2) picks the other model."""
    return np.array(
        [
            misclustering_probability(*residual_covariance(theta_star[c], theta[c], theta[1 - c], sigma), n_prime)
            for c in range(2)
        ]
    )


def test_exact_law_matches_a_plain_monte_carlo_of_the_residual_sums():
    """The F-distribution formula against 200,000 direct draws of the two residual sums (x and
    eps drawn, residuals summed, compared), in three geometries; and the Chernoff bound above it."""
    rng = np.random.default_rng(2024)
    d, draws = 3, 200_000
    theta_star = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    geometries = {
        "truth": (theta_star.copy(), 1.0, 8),
        "lemma1-worst": (theta_star + np.array([[-0.25, 0, 0], [-0.25, 0, 0]]), 0.5, 12),
        "oblique": (theta_star + np.array([[0.0, 0.2, 0.1], [0.1, -0.15, 0.0]]), 0.7, 6),
    }
    for name, (theta, sigma, n_prime) in geometries.items():
        x = rng.standard_normal((draws, n_prime, d))
        eps = sigma * rng.standard_normal((draws, n_prime))
        y = x @ theta_star[0] + eps
        own = ((y - x @ theta[0]) ** 2).sum(axis=1)
        other = ((y - x @ theta[1]) ** 2).sum(axis=1)
        count = int(np.sum(other < own))
        a, b, c = residual_covariance(theta_star[0], theta[0], theta[1], sigma)
        exact = misclustering_probability(a, b, c, n_prime)
        ci = stats.binomtest(count, draws).proportion_ci(confidence_level=CONFIDENCE, method="exact")
        assert ci.low <= exact <= ci.high, (name, count / draws, exact)
        assert exact <= chernoff_bound(a, b, c, n_prime)


# --------------------------------------------------------------------------------------------
# Observing the driver's own identity estimate
# --------------------------------------------------------------------------------------------


def round_gradients(problem, theta, split_seed, n_prime):
    """``G[j][:, i] = grad F_i(theta_j; Z_i)`` on the gradient subset of the driver's round 0.

    The driver splits the rows with its private ``_resampled_rounds`` from the generator it is
    given; the same split is replayed here from a generator with the same seed (the split itself
    is tested in tests/algorithms/test_algorithms_ifca.py).  Returns ``G`` of shape ``(k, d, m)`` and the
    identity subset ``(X, y)`` of shapes ``(m, n', d)`` and ``(m, n')``.
    """
    m, d = problem.m, problem.d
    Xr, yr, offr = ifca_mod._resampled_rounds(problem, 1, np.random.default_rng(split_seed))
    assert np.all(np.diff(offr) == n_prime)
    Xi, yi = Xr[0].reshape(m, n_prime, d), yr[0].reshape(m, n_prime)
    Xg, yg = Xr[1].reshape(m, n_prime, d), yr[1].reshape(m, n_prime)
    resid = Xg @ np.asarray(theta).T - yg[:, :, None]  # (m, n', k)
    G = (2.0 / n_prime) * np.einsum("ird,irj->jdi", Xg, resid)
    return G, (Xi, yi)


def decode_identities(G, theta, theta_new, rtol=1e-8):
    """The driver's identity estimate, read off its option-I update.

    The update of model ``j`` is ``theta_j - theta_j^+ = (gamma/m) sum_{i: j_hat_i = j} G[j][:, i]``,
    linear in the assignment.  With ``d >= m`` the ``m`` columns of ``G[j]`` (each in the span of
    one client's own Gaussian rows) are linearly independent, so the least-squares solution
    ``w`` of ``G[j] w = theta_j - theta_j^+`` is unique and equals the scale times the indicator
    of the clients that chose ``j``.  The decoding is *scale-free* (it does not assume
    ``gamma / m``): a driver with a wrong step size or normalisation is still decoded, and this
    observable measures the clustering alone.  It asserts that the update has this form
    (constant weight on the support, zero off it, every client in exactly one cluster).

    Returns
    -------
    identities : ndarray of shape (m,), int
    scales : ndarray of shape (k,)
        The common weight of each cluster's clients (``gamma / m`` for Algorithm 2), ``nan`` for
        a cluster that no client chose.
    """
    k, d, m = G.shape
    assert d >= m, "decoding needs d >= m"
    chosen = np.zeros((k, m), dtype=bool)
    scales = np.full(k, np.nan)
    for j in range(k):
        rhs = np.asarray(theta[j], dtype=np.float64) - np.asarray(theta_new[j], dtype=np.float64)
        if not np.any(rhs):
            continue
        w = np.linalg.lstsq(G[j], rhs, rcond=None)[0]
        top = np.max(np.abs(w))
        on = np.abs(w) > top / 2
        scale = float(np.mean(w[on]))
        assert np.all(np.abs(w[on] / scale - 1.0) <= rtol), f"model {j}: unequal client weights {w[on]}"
        assert np.all(np.abs(w[~on]) <= rtol * abs(scale)), f"model {j}: partial weights {w[~on]}"
        assert np.linalg.norm(G[j] @ w - rhs) <= rtol * np.linalg.norm(rhs), f"model {j}: not a sum of gradients"
        chosen[j], scales[j] = on, scale
    assert np.all(chosen.sum(axis=0) == 1), "every client must be decoded into exactly one model"
    return np.argmax(chosen, axis=0), scales


def one_round_identities(theta_star, labels, theta, sigma, n_prime, seed):
    """One IFCA round (option I, resampling scheme, n_rounds = 1) on fresh data; the identities
    decoded from the driver's update, and the round's identity subset (replayed)."""
    data_rng = np.random.default_rng([*seed, 0])
    problem = make_problem_from_parameters(theta_star, labels, 2 * n_prime, sigma, rng=data_rng)
    gamma = theory.ifca_step_size(float(np.bincount(labels).min() / labels.size))
    res = ifca(problem, theta[None], gamma, n_rounds=1, resample=True, rng=np.random.default_rng([*seed, 1]))
    G, identity_data = round_gradients(problem, theta, [*seed, 1], n_prime)
    identities, scales = decode_identities(G, theta, res.theta[0])
    return identities, scales, gamma / problem.m, identity_data


def test_decoded_identities_are_the_argmin_on_the_identity_subset():
    """The decoder reads the driver exactly: on an unmutated driver the decoded identities are
    ``argmin_j F_i(theta_j; Z^_i)`` on the round's identity subset (computed here in plain
    NumPy), and every client's weight is ``gamma / m``.  Validates :func:`decode_identities`
    before it is used to measure a rate, in a cell where ~10% of the workers are misclustered."""
    d, m, n_prime, sigma = 56, 40, 6, 1.0
    labels = np.repeat([0, 1], m // 2)
    theta_star = make_theta_star(2, d, 1.0, protocol="gaussian", rng=np.random.default_rng(7))
    wrong = 0
    for r in range(5):
        identities, scales, gamma_over_m, (Xi, yi) = one_round_identities(
            theta_star, labels, theta_star, sigma, n_prime, [8, r]
        )
        losses = np.mean((yi[:, :, None] - Xi @ theta_star.T) ** 2, axis=1)  # (m, k)
        np.testing.assert_array_equal(identities, np.argmin(losses, axis=1))
        np.testing.assert_allclose(scales[~np.isnan(scales)], gamma_over_m, rtol=1e-10)
        wrong += int(np.sum(identities != labels))
    assert wrong > 0  # the cell does exercise misclustering


# --------------------------------------------------------------------------------------------
# The driver's measured misclustering rate against the exact law and Lemma 1's bound
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """k = 2 balanced, ``m = 40``, ``d = 56 >= m`` (the law does not depend on d), Delta = 1."""

    name: str
    rho: float
    n_prime: int
    geometry: str  # "truth", "lemma1-worst" or "oblique"
    seed: int
    reps: int = 300

    def setup(self):
        """``theta*`` (fixed), the current estimates ``theta`` (fixed, within Delta/4), sigma."""
        d, delta = 56, 1.0
        rng = np.random.default_rng([self.seed, 99])
        theta_star = make_theta_star(2, d, delta, protocol="gaussian", rng=rng)
        e = (theta_star[1] - theta_star[0]) / delta
        if self.geometry == "truth":
            theta = theta_star.copy()
        elif self.geometry == "lemma1-worst":  # theta_0 pushed away from theta*_1, theta_1 towards theta*_0
            theta = theta_star - delta / 4 * e
        else:  # both at Delta/4 in uniform directions
            u = rng.standard_normal((2, d))
            theta = theta_star + delta / 4 * u / np.linalg.norm(u, axis=1, keepdims=True)
        return theta_star, theta, delta / math.sqrt(self.rho)


CELLS = [
    Cell("truth", rho=1.0, n_prime=16, geometry="truth", seed=1),
    Cell("lemma1-worst", rho=4.0, n_prime=16, geometry="lemma1-worst", seed=2),
    Cell("oblique", rho=2.0, n_prime=10, geometry="oblique", seed=3),
]


@pytest.mark.parametrize("cell", CELLS, ids=[c.name for c in CELLS])
def test_driver_misclustering_rate_matches_the_exact_law(cell):
    """Lemma 1 (IFCA, linear model) measured on the driver: per-worker misclustering rate of one
    round's identity estimate, in cells where it is a few percent.

    Observable: one round of ``ifca(..., n_rounds=1, resample=True)`` from fixed estimates
    ``theta`` on fresh data; the identities are decoded from the driver's own update
    (:func:`decode_identities`), so a change anywhere in the driver's identity estimate shows.

    Prediction, computed independently here: a worker of cluster ``c`` is wrong with the exact
    probability :func:`misclustering_probability` of its two residual sums on its ``n'`` identity
    points; given ``theta`` the workers of the ``reps`` independent data sets are independent, so
    the count of wrong workers of cluster ``c`` is Binomial(reps m_c, P_c) and its 99.9%
    Clopper-Pearson interval must contain ``P_c``.

    Bound: Lemma 1 (our sharpened form, k = 2): in Assumption 1's ball
    ``P_c <= (1 + (b - a)^2 / (4 (ab - c^2)))^(-n'/2) <= exp(-c4 (rho/(rho+1))^2 n')`` with
    ``c4 = 1/9``; the measured rate must lie under both.

    Cells (m = 40, 20 per cluster, reps = 300, so 6,000 worker-rounds per cluster): at the truth
    with rho = 1, n' = 16 (P = 3.1%); Lemma 1's worst geometry with rho = 4, n' = 16 (P_0 = 3.1%,
    P_1 = 1e-5); both estimates at Delta/4 in uniform directions with rho = 2, n' = 10 (P = 3.3%
    and 4.4%).  True labels in place of the estimate give a rate of 0, and 3% random
    mis-assignment about ``P + 3%``: both far outside the intervals (half-width about 0.7% at
    P = 3%).
    """
    theta_star, theta, sigma = cell.setup()
    m = 40
    labels = np.repeat([0, 1], m // 2)
    P = cluster_probabilities(theta_star, theta, sigma, cell.n_prime)
    wrong = np.zeros(2, dtype=np.int64)
    for r in range(cell.reps):
        identities, _, _, _ = one_round_identities(theta_star, labels, theta, sigma, cell.n_prime, [cell.seed, r])
        wrong += np.bincount(labels[identities != labels], minlength=2)
    trials = cell.reps * np.bincount(labels)
    rho_bound = lemma1_bound(cell.rho, cell.n_prime)
    for c in range(2):
        rate = wrong[c] / trials[c]
        ci = stats.binomtest(int(wrong[c]), int(trials[c])).proportion_ci(
            confidence_level=CONFIDENCE, method="exact"
        )
        a, b, cov = residual_covariance(theta_star[c], theta[c], theta[1 - c], sigma)
        detail = (cell.name, c, rate, P[c], (ci.low, ci.high))
        assert ci.low <= P[c] <= ci.high, detail
        assert rate <= chernoff_bound(a, b, cov, cell.n_prime) <= rho_bound, detail
    assert P.max() >= 0.02  # the cell is one where misclustering is not negligible


# --------------------------------------------------------------------------------------------
# Theorem 1 in expectation, misclustering term at its exact value (property test)
# --------------------------------------------------------------------------------------------

R_MEAN = 600  # independent data sets per example
T2_LEVEL = 1e-6  # significance level of the Hotelling test


@dataclass(frozen=True)
class MeanExample:
    """k = 2 clusters of ``m0, m1`` workers, Delta = 1, estimates at ``alpha_j Delta`` from the
    truth in directions fixed by ``seed``, and the largest ``n'`` at which a worker of some
    cluster is misclustered with probability at least ``target``."""

    m0: int
    m1: int
    d: int
    rho: float
    alpha0: float
    alpha1: float
    target: float
    seed: int

    def setup(self):
        rng = np.random.default_rng([self.seed, 5])
        theta_star = make_theta_star(2, self.d, 1.0, protocol="gaussian", rng=rng)
        u = rng.standard_normal((2, self.d))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        theta = theta_star + np.array([[self.alpha0], [self.alpha1]]) * u
        sigma = 1.0 / math.sqrt(self.rho)
        n_prime = 2
        while cluster_probabilities(theta_star, theta, sigma, n_prime + 1).max() >= self.target:
            n_prime += 1
        return theta_star, theta, sigma, n_prime


def expected_update(theta_star, theta, p, P, gamma):
    """``E theta_j^+ - theta*_j`` of one round (option I, resampling scheme), k = 2.

    ``theta_j^+ = theta_j - (gamma/m) sum_{i: j_hat_i = j} grad F_i(theta_j; Z_i)`` with the
    gradient subset ``Z_i`` independent of the identity estimate (the point of the scheme), and
    ``E grad F_i(theta; Z_i) = 2 (theta - theta*_{c(i)})`` for ``x ~ N(0, I)``.  A worker of
    cluster ``c`` chooses the other model with probability ``P[c]``, hence

    .. math::

        E\\theta_j^+ - \\theta^*_j = \\big(1 - 2\\gamma p_j (1 - P_j)\\big)(\\theta_j - \\theta^*_j)
        - 2\\gamma p_l P_l (\\theta_j - \\theta^*_l), \\qquad l \\ne j.
    """
    out = np.empty_like(theta)
    for j in range(2):
        l = 1 - j
        e = theta[j] - theta_star[j]
        out[j] = (1 - 2 * gamma * p[j] * (1 - P[j])) * e - 2 * gamma * p[l] * P[l] * (theta[j] - theta_star[l])
    return out


def hotelling_t2(samples, mean):
    """``R (xbar - mean)' S^-1 (xbar - mean)`` and its level-``T2_LEVEL`` critical value."""
    R, q = samples.shape
    diff = samples.mean(axis=0) - mean
    S = np.cov(samples, rowvar=False)
    t2 = R * diff @ np.linalg.solve(S, diff)
    critical = q * (R - 1) / (R - q) * stats.f.ppf(1 - T2_LEVEL, q, R - q)
    return t2, critical


#: The seed of the examples of :func:`test_theorem1_one_round_mean_with_misclustering`, fixed
#: before they were drawn.
MEAN_EXAMPLES_SEED = 20261126


def drawn_mean_examples(n, seed=MEAN_EXAMPLES_SEED):
    """``n`` examples drawn uniformly by NumPy from ``seed``: k = 2, 25 to 45 workers per cluster,
    d in [2, 5], rho in [0.5, 4], estimates anywhere in Assumption 1's ball (alpha_j in [0, 1/4]),
    and n' set so that some cluster's misclustering probability is between ``target`` in
    [3%, 10%] and the next n' up.

    Not drawn by Hypothesis: its generation mixes in literal constants it collects from the
    local source code, so an edit anywhere in the package (a docstring) changed which examples
    this test ran, and a boundary example (``alpha0 = 2.3e-263``, ``target = 0.1``, every worker
    nearly at the truth) where the power check has too little power (the Hotelling statistic of
    the 3%-flip alternative 30.4 against the critical 39.7) came and went with them.
    """
    rng = np.random.default_rng(seed)
    return [MeanExample(m0=int(rng.integers(25, 46)), m1=int(rng.integers(25, 46)), d=int(rng.integers(2, 6)),
                        rho=float(rng.uniform(0.5, 4.0)), alpha0=float(rng.uniform(0.0, 0.25)),
                        alpha1=float(rng.uniform(0.0, 0.25)), target=float(rng.uniform(0.03, 0.10)),
                        seed=int(rng.integers(0, 2**32))) for _ in range(n)]


@pytest.mark.parametrize("ex", drawn_mean_examples(10), ids=lambda ex: f"m{ex.m0}-{ex.m1}-d{ex.d}")
def test_theorem1_one_round_mean_with_misclustering(ex):
    """Theorem 1 (IFCA, linear model, resampling scheme), one round, in expectation, with the
    misclustering term at its exact value.

    Theorem 1's bound is the norm of the decomposition
    ``theta_j^+ - theta*_j = contraction + noise + misclustering``; its expectation is exact
    (:func:`expected_update`):
    ``(1 - 2 gamma p_j (1 - P_j)) e_j - 2 gamma p_l P_l (theta_j - theta*_l)``, where
    ``P_c <= exp(-c4 (rho/(rho+1))^2 n')`` (Lemma 1) is what becomes the theorem's third term.
    The theorem's third term ``c3 exp(...)`` is at least ``c3 P`` (Lemma 1), i.e. above 1.8 =
    1.8 Delta when P >= 3% with ``c3 = 60``: the inequality itself cannot fail in this regime;
    the identity can.

    Check: over R = 600 independent data sets (``theta`` fixed), the mean of
    ``(theta_0^+ - theta*_0, theta_1^+ - theta*_1)`` agrees with the prediction (Hotelling T^2
    below its 1 - 1e-6 quantile).  Power, asserted in every example: the same sample rejects the
    prediction without misclustering (``P = 0``, what true labels in place of the estimate
    give) and with 3% random mis-assignment added (``P -> 0.97 P + 0.03 (1 - P)``).  A step
    size or normalisation off by 25% moves the contraction coefficient and is rejected too.
    The identity also needs the gradient subset to be independent of the identity subset: a
    gradient on the data that chose the model is biased.
    """
    theta_star, theta, sigma, n_prime = ex.setup()
    labels = np.repeat([0, 1], [ex.m0, ex.m1])
    m = ex.m0 + ex.m1
    p = np.array([ex.m0, ex.m1]) / m
    gamma = theory.ifca_step_size(float(p.min()))
    P = cluster_probabilities(theta_star, theta, sigma, n_prime)
    assert P.max() >= ex.target  # a few percent of the workers are misclustered
    after = np.empty((R_MEAN, 2 * ex.d))
    for r in range(R_MEAN):
        problem = make_problem_from_parameters(
            theta_star, labels, 2 * n_prime, sigma, rng=np.random.default_rng([ex.seed, 6, r])
        )
        driver_rng = np.random.default_rng([ex.seed, 7, r])
        res = ifca(problem, theta[None], gamma, n_rounds=1, resample=True, rng=driver_rng)
        after[r] = (res.theta[0] - theta_star).ravel()
    t2, critical = hotelling_t2(after, expected_update(theta_star, theta, p, P, gamma).ravel())
    assert t2 <= critical, (ex, n_prime, P, t2, critical)
    flipped = (1 - RANDOM_FLIP) * P + RANDOM_FLIP * (1 - P)
    for name, alt in [("true labels", np.zeros(2)), ("3% random mis-assignment", flipped)]:
        t2_alt, _ = hotelling_t2(after, expected_update(theta_star, theta, p, alt, gamma).ravel())
        assert t2_alt > critical, (f"no power against {name}", ex, n_prime, P, t2_alt, critical)


# --------------------------------------------------------------------------------------------
# The linear part of Theorem 1, exactly
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("resample", [True, False], ids=["resample", "all-data"])
def test_one_round_factor_is_one_minus_two_gamma_p_lambda(resample, seed):
    """Theorem 1's contraction, exactly: with sigma = 0 and every worker clustered correctly,

    .. math::

        \\theta_j^+ - \\theta^*_j = (I - 2\\gamma p_j \\hat H_j)(\\theta_j - \\theta^*_j),
        \\qquad \\hat H_j = \\frac{1}{m_j n'} \\sum_{i \\in S^*_j} X_i^\\top X_i

    (per-client mean loss, server step ``gamma / m``), ``X_i`` the gradient rows of client ``i``.
    Starting each ``theta_j`` at ``Delta/4`` along the eigenvector of ``H_j`` with the smallest
    (replica 0) or largest (replica 1) eigenvalue ``lambda``, the measured one-round factor
    ``||theta_j^+ - theta*_j|| / ||theta_j - theta*_j||`` must be ``|1 - 2 gamma p_j lambda|``
    and the vector ``(1 - 2 gamma p_j lambda) (theta_j - theta*_j)``, to rounding.

    Unbalanced clusters (12 and 18 workers, ``p = 0.4, 0.6``, ``gamma = c1 / 0.4``), so that the
    normalisation by ``m`` is distinguishable from one by the cluster size for both models; the
    Hessian is computed here from the data the round used (the replayed gradient subset, or all
    the data without resampling).  A step size or normalisation off by any factor breaks the
    equality; so does a mis-assigned worker (the test asserts first, in plain NumPy, that the
    identity estimate on the round's identity data is the true labels).  The factors are at
    most 1/2, Theorem 1's contraction with c1 = 3/8.
    """
    m0, m1, d, n_prime = 12, 18, 8, 40
    m = m0 + m1
    labels = np.repeat([0, 1], [m0, m1])
    p = np.array([m0, m1]) / m
    gamma = theory.ifca_step_size(float(p.min()))
    theta_star = make_theta_star(2, d, 1.0, protocol="gaussian", rng=np.random.default_rng([seed, 51]))
    data_rng = np.random.default_rng([seed, 52])
    problem = make_problem_from_parameters(theta_star, labels, 2 * n_prime, 0.0, rng=data_rng)
    if resample:
        Xr, yr, _ = ifca_mod._resampled_rounds(problem, 1, np.random.default_rng([seed, 53]))
        (Xi, yi), (Xg, n) = (Xr[0], yr[0]), (Xr[1], n_prime)
    else:
        (Xi, yi), (Xg, n) = (problem.X, problem.y), (problem.X, 2 * n_prime)
    Xg = Xg.reshape(m, n, d)
    theta0 = np.empty((2, 2, d))
    factors = np.empty((2, 2))
    for j in range(2):
        H = np.einsum("ird,ire->de", Xg[labels == j], Xg[labels == j]) / (np.sum(labels == j) * n)
        lam, V = np.linalg.eigh(H)
        for b, idx in enumerate([0, d - 1]):
            theta0[b, j] = theta_star[j] + 0.25 * V[:, idx]
            factors[b, j] = 1 - 2 * gamma * p[j] * lam[idx]
    # losses[b, i, j] = F_i(theta_bj) on the round's identity data
    pred = Xi.reshape(m, -1, d) @ theta0.transpose(0, 2, 1)[:, None]  # (B, m, n, k)
    losses = np.mean((yi.reshape(m, -1)[None, :, :, None] - pred) ** 2, axis=2)
    assert np.all(np.argmin(losses, axis=2) == labels), "precondition: no misclustering in this example"
    driver_rng = np.random.default_rng([seed, 53]) if resample else None
    res = ifca(problem, theta0, gamma, n_rounds=1, resample=resample, rng=driver_rng)
    before = theta0 - theta_star
    after = res.theta - theta_star
    np.testing.assert_allclose(after, factors[:, :, None] * before, rtol=1e-9, atol=1e-12)
    measured = np.linalg.norm(after, axis=2) / np.linalg.norm(before, axis=2)
    np.testing.assert_allclose(measured, np.abs(factors), rtol=1e-9)
    assert np.all(np.abs(factors) <= 0.5)
