r"""IFCA's strongly convex analysis (Theorem 2, Lemma 3) on linear regression with a covariance.

Setting (IFCA, NeurIPS / report version, Sec. 5.2 of the arXiv text, thesis Sec. 3.3
"Strongly convex"): the loss is the squared loss of the driver,
:math:`f(\theta; x, y) = (y - \langle x, \theta \rangle)^2`, and a worker of cluster ``j`` draws
:math:`x \sim N(0, \Sigma)`, :math:`y = \langle x, \theta^*_j \rangle + \epsilon`,
:math:`\epsilon \sim N(0, \sigma^2)`.  Then

.. math::

    F^j(\theta) = E f(\theta; x, y) = \sigma^2 + \lVert \theta - \theta^*_j \rVert_\Sigma^2,
    \qquad \nabla^2 F^j = 2 \Sigma,

so Assumption 3 holds with :math:`\lambda = 2 \lambda_{min}(\Sigma)` and
:math:`L = 2 \lambda_{max}(\Sigma)` (the factor 2 is the squared loss's, the convention of
:func:`mixreg.algorithms.ifca.ifca`, whose per-client loss is the mean of
:math:`(y - \langle x, \theta \rangle)^2` and whose gradient carries the 2).  Theorem 2's step
is :math:`\gamma = 1 / L`.

What is stated (IFCA, thesis Theorem 2 and its per-iteration contraction; arXiv Theorem 2 +
Corollary 2): with :math:`p = \min_j p_j` and Assumption 6's initialisation
:math:`\lVert \theta_j^{(0)} - \theta^*_j \rVert \le \frac14 \sqrt{\lambda / L}\, \Delta`,

* one round: :math:`\lVert \theta_j^+ - \theta^*_j \rVert \le (1 - \frac{p \lambda}{8 L})
  \lVert \theta_j - \theta^*_j \rVert + \tilde O(\frac{1}{\sqrt{m n'}} + \frac{1}{n'})`
  (:func:`ifca_sc_factor`);
* after :math:`T = \frac{8 L}{p \lambda} \log \frac{\Delta}{2 \varepsilon}` rounds the error is
  at most :math:`\varepsilon` (:func:`ifca_sc_rounds`), with the rate
  :math:`\tilde O(1/\sqrt{m n'} + 1/n')`.

What is derived here (not in the paper):

* the **exact second moments** of the error under the resampling scheme with every identity
  right (:func:`ifca_sc_second_moments`, :func:`ifca_sc_stationary`): the contraction and the
  noise floor of the run, with no constant to fit;
* **Lemma 3's Chebyshev bound** with Assumption 4's :math:`\eta^2` computed exactly
  (:func:`squared_loss_variance`, :func:`lemma3_bound`, :func:`lemma3_chebyshev`), and the exact
  misclustering probability in the :math:`\Sigma` geometry (:func:`residual_pair`).
"""

from __future__ import annotations

import math

import numpy as np

from .._typing import ArrayLike
from ..validation import check_array, check_int, check_real
from ._ifca_clustering import ResidualPair

__all__ = ["strong_convexity_constants", "ifca_sc_factor", "ifca_sc_rounds", "ifca_sc_second_moments",
           "ifca_sc_conditional_moments",
           "ifca_sc_stationary", "squared_loss_variance", "lemma3_bound", "lemma3_chebyshev", "residual_pair",
           "LEMMA3_CONSTANT", "THEOREM2_CONSTANT"]

#: The 8 of Theorem 2's contraction factor ``1 - p lambda / (8 L)`` and of its ``T``.
THEOREM2_CONSTANT = 8.0
#: Lemma 3's constant as the proof of App. C.1 gives it (our reconstruction of the stripped
#: formula): ``2 x 64``, see :func:`lemma3_bound`.
LEMMA3_CONSTANT = 128.0


def _eigenvalues(covariance):
    cov = np.asarray(covariance, dtype=np.float64)
    if cov.ndim == 2:
        cov = cov[None]
    if cov.ndim != 3 or cov.shape[1] != cov.shape[2]:
        raise ValueError(f"covariance must have shape (d, d) or (k, d, d), got {np.shape(covariance)}")
    return np.linalg.eigvalsh(cov)


def strong_convexity_constants(covariance: ArrayLike) -> tuple[float, float]:
    r"""Assumption 3's ``(lambda, L)`` of :math:`F^j(\theta) = E (y - \langle x, \theta \rangle)^2`.

    The Hessian of every :math:`F^j` is :math:`2 \Sigma_j`, so
    :math:`\lambda = 2 \min_j \lambda_{min}(\Sigma_j)` and :math:`L = 2 \max_j \lambda_{max}(\Sigma_j)`.

    Parameters
    ----------
    covariance : array of shape (d, d) or (k, d, d)
        The features' covariance (one for every cluster, or one per cluster).

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> strong_convexity_constants(np.diag([0.25, 1.0]))
    (0.5, 2.0)
    """
    eig = _eigenvalues(covariance)
    return 2.0 * float(eig[:, 0].min()), 2.0 * float(eig[:, -1].max())


def ifca_sc_factor(p: float, lam: float, L: float, c: float = THEOREM2_CONSTANT) -> float:
    r"""Theorem 2's per-round contraction factor :math:`1 - p \lambda / (c L)` (``c = 8``).

    Examples
    --------
    >>> ifca_sc_factor(0.5, 1.0, 2.0)
    0.96875
    """
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False)
    lam = check_real("lam", lam, low=0.0, low_inclusive=False)
    L = check_real("L", L, low=lam)
    return 1.0 - p * lam / (c * L)


def ifca_sc_rounds(p: float, lam: float, L: float, delta: float, eps: float, c: float = THEOREM2_CONSTANT) -> float:
    r"""Theorem 2's rounds :math:`T = \frac{c L}{p \lambda} \log \frac{\Delta}{2 \varepsilon}` (``c = 8``).

    Examples
    --------
    >>> round(ifca_sc_rounds(0.5, 1.0, 1.0, 1.0, 0.01), 2)  # 16 log(50)
    62.59
    """
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False)
    lam = check_real("lam", lam, low=0.0, low_inclusive=False)
    L = check_real("L", L, low=lam)
    delta = check_real("delta", delta, low=0.0, low_inclusive=False)
    eps = check_real("eps", eps, low=0.0, low_inclusive=False)
    return c * L / (p * lam) * math.log(delta / (2.0 * eps))


def _moments_step(q, s, c, N, sigma2):
    """One round of the diagonal second-moment recursion (see :func:`ifca_sc_second_moments`)."""
    return (1.0 - c * s) ** 2 * q + (c * c / N) * (s * s * q + s * float(s @ q)) + (c * c * sigma2 / N) * s


def ifca_sc_second_moments(eigenvalues: ArrayLike, p_j: float, m: int, n_prime: int, sigma: float, r0: float,
                           rounds: int, step: float | None = None) -> np.ndarray:
    r"""Exact :math:`E \lVert \theta_j^{(t)} - \theta^*_j \rVert^2`, ``t = 0..rounds``, with every
    identity right (derived; resampling scheme, Gaussian rows and noise).

    With :math:`N = p_j m n'` fresh gradient rows of the cluster, :math:`c = 2 \gamma p_j`,
    :math:`\hat\Sigma` their sample covariance and :math:`g` the mean of :math:`x \epsilon`, one
    round of option I is :math:`e^+ = (I - c \hat\Sigma) e + c g` (the server divides by ``m``).
    Gaussian fourth moments, :math:`E[\hat\Sigma M \hat\Sigma] = \Sigma M \Sigma + (\Sigma M \Sigma
    + \operatorname{tr}(M \Sigma) \Sigma) / N`, give the exact recursion of :math:`P = E[e e^\top]`

    .. math::

        P^+ = (I - c\Sigma) P (I - c\Sigma) + \frac{c^2}{N} \big(\Sigma P \Sigma
        + \operatorname{tr}(P \Sigma) \Sigma\big) + \frac{c^2 \sigma^2}{N} \Sigma .

    From a uniform direction, :math:`P_0 = (r_0^2 / d) I`, ``P`` stays diagonal in
    :math:`\Sigma`'s eigenbasis, so only the eigenvalues ``s`` enter.  Misclustered workers are
    not in it (their effect is the theorem's other terms).

    Parameters
    ----------
    eigenvalues : array of shape (d,)
        :math:`\Sigma`'s eigenvalues, > 0.
    p_j : float in (0, 1]
        The cluster's proportion.
    m, n_prime : int >= 1
    sigma : float >= 0
    r0 : float >= 0
        :math:`\lVert \theta_j^{(0)} - \theta^*_j \rVert`.
    rounds : int >= 0
    step : float > 0, optional
        :math:`\gamma`; default Theorem 2's :math:`1 / L = 1 / (2 \max s)`.

    Returns
    -------
    ndarray of shape (rounds + 1,)

    Examples
    --------
    Identity covariance, no noise and ``N -> infinity``: the factor is ``1 - p_j`` per round.

    >>> v = ifca_sc_second_moments(np.ones(4), 0.5, 10**9, 1, 0.0, 1.0, 2)
    >>> np.round(np.sqrt(v), 6).tolist()
    [1.0, 0.5, 0.25]
    """
    s = check_array("eigenvalues", eigenvalues, ndim=1, dtype=np.float64)
    if not np.all(s > 0):
        raise ValueError(f"eigenvalues must be > 0, got {s.tolist()}")
    p_j = check_real("p_j", p_j, low=0.0, high=1.0, low_inclusive=False)
    N = p_j * check_int("m", m, low=1) * check_int("n_prime", n_prime, low=1)
    sigma2 = check_real("sigma", sigma, low=0.0) ** 2
    r0 = check_real("r0", r0, low=0.0)
    rounds = check_int("rounds", rounds, low=0)
    gamma = 1.0 / (2.0 * float(s.max())) if step is None else check_real("step", step, low=0.0, low_inclusive=False)
    c = 2.0 * gamma * p_j
    q = np.full(s.size, r0 * r0 / s.size)
    out = np.empty(rounds + 1)
    out[0] = q.sum()
    for t in range(rounds):
        q = _moments_step(q, s, c, N, sigma2)
        out[t + 1] = q.sum()
    return out


def ifca_sc_conditional_moments(covariance: ArrayLike, p_j: float, m: int, n_prime: int, sigma: float,
                                e0: ArrayLike, rounds: int) -> np.ndarray:
    r"""Exact :math:`E[\lVert \theta_j^{(t)} - \theta^*_j \rVert^2 \mid e_0]`, ``t = 0..rounds``, from a
    given initial error :math:`e_0` (the recursion of :func:`ifca_sc_second_moments` on the full
    matrix :math:`P`, from :math:`P_0 = e_0 e_0^\top`), with Theorem 2's step :math:`1 / L`.

    A trial's own prediction: its measured distance divided by it has mean 1 whatever the
    initial direction (a paired comparison, free of the direction's spread).

    Parameters
    ----------
    covariance : array of shape (d, d)
    p_j, m, n_prime, sigma
        As :func:`ifca_sc_second_moments`.
    e0 : array of shape (d,)
        :math:`\theta_j^{(0)} - \theta^*_j`.
    rounds : int >= 0

    Returns
    -------
    ndarray of shape (rounds + 1,)

    Examples
    --------
    >>> e0 = np.array([1.0, 0.0])
    >>> v = ifca_sc_conditional_moments(np.diag([1.0, 0.25]), 0.5, 10**9, 1, 0.0, e0, 1)  # (1 - 0.5 * 1)^2
    >>> np.round(v, 6).tolist()
    [1.0, 0.25]
    """
    cov = check_array("covariance", covariance, ndim=2, dtype=np.float64)
    e0 = check_array("e0", e0, shape=(cov.shape[0],), dtype=np.float64)
    p_j = check_real("p_j", p_j, low=0.0, high=1.0, low_inclusive=False)
    N = p_j * check_int("m", m, low=1) * check_int("n_prime", n_prime, low=1)
    sigma2 = check_real("sigma", sigma, low=0.0) ** 2
    rounds = check_int("rounds", rounds, low=0)
    c = 2.0 * p_j / (2.0 * float(np.linalg.eigvalsh(cov)[-1]))
    A = np.eye(cov.shape[0]) - c * cov
    P = np.outer(e0, e0)
    out = np.empty(rounds + 1)
    out[0] = np.trace(P)
    for t in range(rounds):
        P = A @ P @ A + (c * c / N) * (cov @ P @ cov + np.trace(P @ cov) * cov) + (c * c * sigma2 / N) * cov
        out[t + 1] = np.trace(P)
    return out


def ifca_sc_stationary(eigenvalues: ArrayLike, p_j: float, m: int, n_prime: int, sigma: float,
                       step: float | None = None) -> float:
    r"""The fixed point :math:`E \lVert e \rVert^2` of :func:`ifca_sc_second_moments`'s recursion.

    In the eigenbasis, :math:`q_i D_i = \frac{c^2 s_i}{N} (S + \sigma^2)` with
    :math:`D_i = 1 - (1 - c s_i)^2 - c^2 s_i^2 / N` and :math:`S = \sum_l s_l q_l`, so
    :math:`S = \sigma^2 g / (1 - g)`, :math:`g = \sum_i c^2 s_i^2 / (N D_i)`, and
    :math:`E \lVert e \rVert^2 = \sum_i q_i`; ``inf`` if the recursion is unstable.

    Examples
    --------
    >>> e2 = ifca_sc_stationary(np.ones(10), 0.5, 100, 40, 1.0)   # ~ gamma d sigma^2 / (m n' (1 - gamma p))
    >>> round(float(e2), 6), round(0.5 * 10 / (100 * 40 * 0.75), 6)
    (0.00167, 0.001667)
    """
    s = check_array("eigenvalues", eigenvalues, ndim=1, dtype=np.float64)
    p_j = check_real("p_j", p_j, low=0.0, high=1.0, low_inclusive=False)
    N = p_j * check_int("m", m, low=1) * check_int("n_prime", n_prime, low=1)
    sigma2 = check_real("sigma", sigma, low=0.0) ** 2
    gamma = 1.0 / (2.0 * float(s.max())) if step is None else check_real("step", step, low=0.0, low_inclusive=False)
    c = 2.0 * gamma * p_j
    D = 1.0 - (1.0 - c * s) ** 2 - c * c * s * s / N
    if np.any(D <= 0):
        return math.inf
    g = float(np.sum(c * c * s * s / (N * D)))
    if g >= 1.0:
        return math.inf
    S = sigma2 * g / (1.0 - g)
    return float(np.sum(c * c * s * (S + sigma2) / (N * D)))


def _sigma_norm2(v, covariance):
    return float(v @ covariance @ v)


def squared_loss_variance(theta: ArrayLike, theta_star: ArrayLike, covariance: ArrayLike, sigma: float) -> float:
    r"""Assumption 4's variance of :math:`f(\theta; z) = (y - \langle x, \theta \rangle)^2` at one
    :math:`\theta`, exactly, for Gaussian rows and noise.

    The residual :math:`y - \langle x, \theta \rangle = \langle x, \theta^* - \theta \rangle +
    \epsilon` is :math:`N(0, s^2)` with :math:`s^2 = \lVert \theta - \theta^* \rVert_\Sigma^2 +
    \sigma^2`, so :math:`f = s^2 \chi^2_1` and

    .. math:: \operatorname{Var} f(\theta; z) = 2 s^4 = 2 \big(\lVert \theta - \theta^* \rVert_\Sigma^2
              + \sigma^2\big)^2 .

    Its supremum over :math:`\theta \in \mathbb{R}^d` is infinite: Assumption 4 does not hold
    globally for the squared loss with Gaussian rows.  The proof of Lemma 3 (App. C.1) applies
    Chebyshev's inequality at the two models compared only, so :func:`lemma3_bound` takes
    :math:`\eta^2` as the larger of the two variances there (the smallest :math:`\eta^2` for which
    the proof's steps hold at that iterate).

    Examples
    --------
    >>> squared_loss_variance(np.zeros(2), np.array([1.0, 0.0]), np.eye(2), 1.0)  # 2 (1 + 1)^2
    8.0
    """
    theta = check_array("theta", theta, ndim=1, dtype=np.float64)
    star = check_array("theta_star", theta_star, shape=theta.shape, dtype=np.float64)
    cov = check_array("covariance", covariance, shape=(theta.size, theta.size), dtype=np.float64)
    sigma = check_real("sigma", sigma, low=0.0)
    s2 = _sigma_norm2(theta - star, cov) + sigma * sigma
    return 2.0 * s2 * s2


def lemma3_bound(eta2: float, lam: float, delta: float, n_prime: int, k: int = 2,
                 c: float = LEMMA3_CONSTANT) -> float:
    r"""Lemma 3's bound on the probability that a worker is misclustered, union over the
    :math:`k - 1` wrong clusters: :math:`c (k - 1) \eta^2 / (\lambda^2 \Delta^4 n')`, ``c = 128``.

    The constant follows the proof of App. C.1 (the formula itself is stripped from the text; our
    reconstruction): misclustering against :math:`j'` needs
    :math:`F_i(\theta_{j'}) \le F_i(\theta_j)` on the :math:`n'` identity points, so one of the
    two empirical means deviates from its mean by :math:`\delta = (F^j(\theta_{j'}) -
    F^j(\theta_j)) / 2`; Chebyshev gives :math:`\eta^2 / (n' \delta^2)` for each.  With
    Assumption 6's :math:`\lVert \theta_l - \theta^*_l \rVert \le \frac14 \sqrt{\lambda/L} \Delta`,
    strong convexity gives :math:`F^j(\theta_{j'}) - F^j(\theta^*_j) \ge \frac{\lambda}{2}
    (\frac34 \Delta)^2 = \frac{9}{32} \lambda \Delta^2` and smoothness
    :math:`F^j(\theta_j) - F^j(\theta^*_j) \le \frac{L}{2} \frac{\lambda}{16 L} \Delta^2 =
    \frac{1}{32} \lambda \Delta^2`, so :math:`\delta \ge \lambda \Delta^2 / 8` and the sum of
    the two terms is at most :math:`2 \cdot 64\, \eta^2 / (\lambda^2 \Delta^4 n')`.

    Examples
    --------
    >>> lemma3_bound(1.0, 1.0, 1.0, 128)
    1.0
    """
    eta2 = check_real("eta2", eta2, low=0.0)
    lam = check_real("lam", lam, low=0.0, low_inclusive=False)
    delta = check_real("delta", delta, low=0.0, low_inclusive=False)
    n_prime = check_int("n_prime", n_prime, low=1)
    k = check_int("k", k, low=2)
    return c * (k - 1) * eta2 / (lam * lam * delta**4 * n_prime)


def lemma3_chebyshev(theta_star: ArrayLike, theta_own: ArrayLike, theta_other: ArrayLike, covariance: ArrayLike,
                     sigma: float, n_prime: int) -> float:
    r"""The proof's Chebyshev step at the two models themselves (App. C.1, before Assumption 6 is used).

    .. math:: \frac{\operatorname{Var} f(\theta_j) + \operatorname{Var} f(\theta_{j'})}{n' \delta^2},
              \qquad \delta = \frac{F^j(\theta_{j'}) - F^j(\theta_j)}{2},

    with the exact variances of :func:`squared_loss_variance` and
    :math:`F^j(\theta) = \sigma^2 + \lVert \theta - \theta^*_j \rVert_\Sigma^2`; ``inf`` when
    :math:`\delta \le 0` (the step proves nothing).

    Examples
    --------
    >>> lemma3_chebyshev(np.zeros(1), np.zeros(1), np.ones(1), np.eye(1), 0.0, 10)  # (0 + 2) / (10 / 4)
    0.8
    """
    star = check_array("theta_star", theta_star, ndim=1, dtype=np.float64)
    own = check_array("theta_own", theta_own, shape=star.shape, dtype=np.float64)
    other = check_array("theta_other", theta_other, shape=star.shape, dtype=np.float64)
    cov = check_array("covariance", covariance, shape=(star.size, star.size), dtype=np.float64)
    n_prime = check_int("n_prime", n_prime, low=1)
    gap = 0.5 * (_sigma_norm2(other - star, cov) - _sigma_norm2(own - star, cov))
    if gap <= 0:
        return math.inf
    var = squared_loss_variance(own, star, cov, sigma) + squared_loss_variance(other, star, cov, sigma)
    return var / (n_prime * gap * gap)


def residual_pair(theta_star: ArrayLike, theta_own: ArrayLike, theta_other: ArrayLike, covariance: ArrayLike,
                  sigma: float) -> ResidualPair:
    r"""The residual pair of a worker whose rows are :math:`N(0, \Sigma)`
    (:class:`mixreg.theory.ResidualPair` in the geometry of :math:`\Sigma`).

    With :math:`x = \Sigma^{1/2} z`, :math:`\langle x, w \rangle = \langle z, \Sigma^{1/2} w
    \rangle`: the pair of the identity case at :math:`\Sigma^{1/2} \theta`, so
    :func:`mixreg.theory.misclustering_probability` gives the exact probability.

    Examples
    --------
    >>> pair = residual_pair(np.zeros(2), np.zeros(2), np.array([1.0, 0.0]), np.diag([4.0, 1.0]), 1.0)
    >>> pair.own, pair.other, pair.cross
    (1.0, 5.0, 1.0)
    """
    star = check_array("theta_star", theta_star, ndim=1, dtype=np.float64)
    cov = check_array("covariance", covariance, shape=(star.size, star.size), dtype=np.float64)
    w, V = np.linalg.eigh(cov)
    root = (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T
    return ResidualPair.from_parameters(root @ star, root @ np.asarray(theta_own, dtype=np.float64),
                                        root @ np.asarray(theta_other, dtype=np.float64), sigma)
