"""IFCA's identity estimate, exactly: the misclustering probability behind Lemma 1 and the basin.

Setting (IFCA, linear model, Sec. 5.1, resampling scheme): a worker of cluster ``j`` holds
``n'`` fresh points ``y = <x, theta*_j> + eps``, ``x ~ N(0, I_d)``, ``eps ~ N(0, sigma^2)``,
and compares the residual sums of two current models ``theta_own`` (its own cluster's) and
``theta_other``:

.. math::

    S_{own} = \\sum_{r=1}^{n'} (y_r - \\langle x_r, \\theta_{own} \\rangle)^2, \\qquad
    S_{other} = \\sum_{r=1}^{n'} (y_r - \\langle x_r, \\theta_{other} \\rangle)^2 .

It is misclustered (against that model) when ``S_other < S_own`` (``<=`` when the other model has
the lower index: IFCA's argmin breaks ties to the lowest index).

**Exact law** (derived here).  With ``w = theta*_j - theta`` the residuals of one point,
``(U, V) = (<x, w_own> + eps, <x, w_other> + eps)``, are jointly Gaussian with covariance

.. math::

    \\Sigma = \\begin{pmatrix} a & c \\\\ c & b \\end{pmatrix}, \\quad
    a = \\sigma^2 + \\lVert w_{own} \\rVert^2,\\ b = \\sigma^2 + \\lVert w_{other} \\rVert^2,\\
    c = \\sigma^2 + \\langle w_{own}, w_{other} \\rangle,

    \\det \\Sigma = \\lVert w_{own} \\rVert^2 \\lVert w_{other} \\rVert^2
    - \\langle w_{own}, w_{other} \\rangle^2 + \\sigma^2 \\lVert \\theta_{own} - \\theta_{other} \\rVert^2 .

``U^2 - V^2`` is the quadratic form of ``diag(1, -1)``; its eigenvalues are those of
``Sigma diag(1, -1)``, ``lambda > 0 > -mu`` with ``lambda + mu = s = sqrt((a - b)^2 + 4 det)``
and ``lambda mu = det``.  Summing ``n'`` i.i.d. points, ``S_own - S_other = lambda A - mu B``
with ``A, B`` independent ``chi^2(n')``, so

.. math::

    P(S_{other} < S_{own}) = P\\Big(\\frac{B}{A + B} < \\frac{\\lambda}{s}\\Big)
    = I_{\\lambda / s}\\big(\\tfrac{n'}{2}, \\tfrac{n'}{2}\\big),

the regularized incomplete beta function (``B / (A + B) ~ Beta(n'/2, n'/2)``); for ``n' = 1``
this is the arcsine law ``1/2 + arcsin((a - b)/s) / pi``, for ``c = 0`` the F law
``P(F(n', n') > b / a)``.

**Exact Chernoff exponent.**  ``E exp(t (U^2 - V^2)) = (1 + 2t(b - a) - 4t^2 det)^(-1/2)``;
minimising over ``t`` (at ``t = (b - a) / (4 det)``) gives, for ``b > a``,

.. math::

    I = -\\lim_{n' \\to \\infty} \\frac{1}{n'} \\log P
      = \\frac12 \\log\\Big(1 + \\frac{(b - a)^2}{4 \\det \\Sigma}\\Big),

and ``P <= exp(-I n')`` for every ``n'`` (Chernoff; Cramer's theorem makes the exponent exact).
At the truth (``theta_own = theta*_j``, ``||theta*_j - theta_other|| = Delta``):
``I = (1/2) log(1 + rho / 4)`` with ``rho = Delta^2 / sigma^2``.  Lemma 1 of the IFCA proof
(arXiv v2+, App. A) bounds the probability by ``c3 exp(-c4 (rho / (rho + 1))^2 n')`` with
unstated constants: the shape ``(rho / (rho + 1))^2`` grows like ``rho^2`` at small ``rho``
(the exact exponent like ``rho / 8``) and saturates at 1 at large ``rho`` (the exact exponent
grows like ``(1/2) log rho``), so no single ``c4`` matches the exponent over a wide range of
``rho``; ``c4 = 1/9`` makes it a bound at every ``rho`` and every geometry of Assumption 1
(derivation in ``tests/theory/test_theory_ifca.py``).

**Population basin edge** (derived here).  With ``theta_l = theta*_l + alpha Delta u_l``
(unit ``u_l``), a worker of cluster ``j`` prefers model ``l`` in expectation iff
``||theta*_j - theta_l|| <= alpha Delta``, i.e. iff
``alpha >= D_jl^2 / (2 Delta <theta*_j - theta*_l, u_l>)`` (``D_jl = ||theta*_j - theta*_l||``,
the own model's distance ``alpha Delta`` cancels).  The smallest such ``alpha`` over ``(j, l)``
is where the first round's identity estimates stop being all right as ``n' -> infinity``;
for an estimate moved straight towards its nearest other centre it is exactly 1/2, the
boundary of the arXiv version's Assumption 1 (``(1/2 - alpha') Delta``, ``alpha' -> 0``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betainc

from .._typing import ArrayLike, FloatOrArray
from ..validation import check_array, check_real

__all__ = [
    "ResidualPair",
    "misclustering_probability",
    "misclustering_exponent",
    "misclustering_exponent_at_truth",
    "lemma1_exponent",
    "population_basin_edge",
]


@dataclass(frozen=True, kw_only=True)
class ResidualPair:
    """Covariance of one point's residuals under a worker's own model and another model.

    Attributes
    ----------
    own : float
        ``a = sigma^2 + ||theta*_j - theta_own||^2``, variance of the own model's residual.
    other : float
        ``b = sigma^2 + ||theta*_j - theta_other||^2``.
    cross : float
        ``c = sigma^2 + <theta*_j - theta_own, theta*_j - theta_other>``.
    det : float
        ``a b - c^2`` (>= 0), stored because :meth:`from_parameters` computes it without the
        cancellation of ``a b - c^2`` (it decides the probability when it is small).

    Examples
    --------
    >>> pair = ResidualPair.at_truth(4.0)  # estimates at the truth, rho = 4
    >>> pair.own, pair.other, pair.cross, pair.det
    (1.0, 5.0, 1.0, 4.0)
    """

    own: float
    other: float
    cross: float
    det: float

    def __post_init__(self):
        for name in ("own", "other", "det"):
            check_real(name, getattr(self, name), low=0.0)
        check_real("cross", self.cross)

    @classmethod
    def from_parameters(cls, theta_star: ArrayLike, theta_own: ArrayLike, theta_other: ArrayLike,
                        sigma: float) -> ResidualPair:
        """The pair of a worker whose true parameter is ``theta_star``.

        Parameters
        ----------
        theta_star, theta_own, theta_other : array of shape (d,)
        sigma : float >= 0
            Noise standard deviation.
        """
        sigma = check_real("sigma", sigma, low=0.0)
        star = check_array("theta_star", theta_star, ndim=1, dtype=np.float64)
        own = check_array("theta_own", theta_own, shape=star.shape, dtype=np.float64)
        other = check_array("theta_other", theta_other, shape=star.shape, dtype=np.float64)
        w1, w2 = star - own, star - other
        n1, n2 = float(w1 @ w1), float(w2 @ w2)
        inner = float(w1 @ w2)
        # ||w1||^2 ||w2||^2 - <w1, w2>^2 = ||w1||^2 ||w2 - proj_w1 w2||^2, without cancellation
        perp = w2 - (inner / n1) * w1 if n1 > 0 else w2
        gram = n1 * float(perp @ perp)
        diff = own - other
        det = gram + sigma**2 * float(diff @ diff)
        s2 = sigma**2
        return cls(own=s2 + n1, other=s2 + n2, cross=s2 + inner, det=det)

    @classmethod
    def at_truth(cls, rho: float) -> ResidualPair:
        """Both estimates at the truth, in units of the noise (``sigma = 1``, ``Delta^2 = rho``).

        The misclustering probability depends on ``rho = Delta^2 / sigma^2`` only:
        ``a = 1``, ``b = 1 + rho``, ``c = 1``, ``det = rho``.
        """
        rho = check_real("rho", rho, low=0.0)
        return cls(own=1.0, other=1.0 + rho, cross=1.0, det=rho)

    @property
    def covariance(self) -> np.ndarray:
        """``[[a, c], [c, b]]``, ndarray of shape (2, 2)."""
        return np.array([[self.own, self.cross], [self.cross, self.other]])


def _check_pair(pair):
    if not isinstance(pair, ResidualPair):
        raise TypeError(f"pair must be a ResidualPair, got {type(pair).__name__}")
    return pair


def misclustering_probability(n_prime: int | ArrayLike, pair: ResidualPair, *, own_first: bool = True) -> np.ndarray:
    r"""Exact probability that a worker's identity estimate prefers the other model.

    .. math::

        P(S_{other} < S_{own}) = I_{\lambda/s}\big(\tfrac{n'}{2}, \tfrac{n'}{2}\big),\qquad
        s = \sqrt{(a - b)^2 + 4 \det\Sigma},\quad \lambda = \tfrac{s + a - b}{2}

    (see the module docstring for the derivation).

    Parameters
    ----------
    n_prime : int or array of int >= 1
        Points of the identity estimate (the resampling scheme's ``n'``).
    pair : ResidualPair
    own_first : bool
        The own model has the lower index, so a tie goes to it (IFCA's argmin); ties have
        probability 0 unless ``det = 0``.

    Returns
    -------
    ndarray of the shape of ``n_prime``, float64

    Examples
    --------
    >>> p = misclustering_probability(np.array([1, 10, 100]), ResidualPair.at_truth(1.0))
    >>> [f"{v:.4g}" for v in p]
    ['0.3524', '0.07246', '1.225e-06']
    """
    pair = _check_pair(pair)
    n = np.asarray(n_prime)
    if n.dtype.kind not in "iu" or np.any(n < 1):
        raise ValueError(f"n_prime must be integers >= 1, got {n_prime!r}")
    a, b, det = pair.own, pair.other, pair.det
    if det == 0.0:  # U and V proportional: V^2 = (b / a) U^2, a deterministic comparison
        if a == b:
            value = 0.0 if own_first else 1.0
        else:
            value = 1.0 if b < a else 0.0
        return np.full(n.shape, value)
    s = np.sqrt((a - b) ** 2 + 4.0 * det)
    # lambda = (s + a - b) / 2 = 2 det / (s + b - a): the second form keeps its digits when b >> a
    lam = 2.0 * det / (s + b - a) if b >= a else 0.5 * (s + a - b)
    return betainc(n / 2.0, n / 2.0, min(lam / s, 1.0))


def misclustering_exponent(pair: ResidualPair) -> float:
    r"""Exact Chernoff exponent ``-lim (1/n') log P(S_other < S_own)``.

    .. math:: I = \tfrac12 \log\Big(1 + \frac{(b - a)^2}{4 \det\Sigma}\Big) \quad (b > a),

    ``0`` when ``b <= a`` (the probability does not decay), ``inf`` when ``b > a`` and
    ``det = 0`` (it is 0).  ``exp(-I n')`` bounds the probability at every ``n'``.

    Examples
    --------
    >>> round(misclustering_exponent(ResidualPair.at_truth(4.0)), 6)  # (1/2) log(1 + 4/4)
    0.346574
    """
    pair = _check_pair(pair)
    a, b, det = pair.own, pair.other, pair.det
    if b <= a:
        return 0.0
    if det == 0.0:
        return float("inf")
    # (1/2) log(1 + (b - a)^2 / (4 det)) on the log scale: a tiny det must not overflow the ratio
    return 0.5 * float(np.logaddexp(0.0, 2.0 * np.log(b - a) - np.log(4.0 * det)))


def misclustering_exponent_at_truth(rho: FloatOrArray) -> FloatOrArray:
    """``(1/2) log(1 + rho/4)``: the exact exponent when both estimates are at the truth.

    Parameters
    ----------
    rho : float or array >= 0
        ``Delta^2 / sigma^2`` (``inf`` for ``sigma = 0``, where the probability is 0).
    """
    r = np.asarray(rho, dtype=np.float64)
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise ValueError(f"rho must be >= 0, got {rho!r}")
    return 0.5 * np.log1p(r / 4.0)


def lemma1_exponent(rho: FloatOrArray, c4: float = 1.0) -> FloatOrArray:
    """The exponent of Lemma 1 / Theorem 1's third term: ``c4 (rho / (rho + 1))^2``.

    ``c4`` is unstated in the papers (1 by default: the shape alone).  ``rho = inf`` gives ``c4``.
    """
    c4 = check_real("c4", c4, low=0.0)
    r = np.asarray(rho, dtype=np.float64)
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise ValueError(f"rho must be >= 0, got {rho!r}")
    with np.errstate(invalid="ignore"):
        ratio = np.where(np.isinf(r), 1.0, r / (r + 1.0))
    return c4 * ratio**2


def population_basin_edge(theta_star: ArrayLike, directions: ArrayLike) -> float:
    r"""The closeness ``alpha`` at which the first round's population identity estimate fails.

    Initial models ``theta_l = theta*_l + alpha Delta u_l``; a worker of cluster ``j`` prefers
    model ``l`` as ``n' -> infinity`` iff

    .. math:: \alpha \ge \frac{\lVert \theta^*_j - \theta^*_l \rVert^2}
              {2 \Delta \langle \theta^*_j - \theta^*_l, u_l \rangle}
              \quad (\langle \theta^*_j - \theta^*_l, u_l \rangle > 0),

    and this returns the smallest such ``alpha`` over ``j != l`` (``inf`` if none): below it
    every worker's expected loss is smallest at its own model.  It says nothing about later
    rounds nor finite ``n'``.

    Parameters
    ----------
    theta_star : array of shape (k, d), k >= 2
    directions : array of shape (k, d)
        The ``u_l`` (normalised here).

    Examples
    --------
    >>> star = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> float(population_basin_edge(star, star[::-1] - star))  # each towards the other centre
    0.5
    """
    star = check_array("theta_star", theta_star, ndim=2, dtype=np.float64)
    u = check_array("directions", directions, shape=star.shape, dtype=np.float64)
    k = star.shape[0]
    if k < 2:
        raise ValueError(f"theta_star must have k >= 2 rows, got {k}")
    norms = np.linalg.norm(u, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("directions must be non-zero")
    u = u / norms
    delta_pairs = star[:, None, :] - star[None, :, :]  # [j, l] = theta*_j - theta*_l
    sq = np.einsum("jld,jld->jl", delta_pairs, delta_pairs)
    sep = float(np.sqrt(sq[~np.eye(k, dtype=bool)].min()))
    if sep == 0:
        raise ValueError("theta_star has two equal rows: the separation is 0")
    proj = np.einsum("jld,ld->jl", delta_pairs, u)
    off = ~np.eye(k, dtype=bool) & (proj > 0)
    if not off.any():
        return float("inf")
    return float(np.min(sq[off] / (2.0 * sep * proj[off])))
