"""The strongly convex trial: IFCA with resampling on features ``N(0, Sigma)`` of condition number ``kappa``.

:class:`ScSpec` is one cell (the problem, ``kappa``, the smallest proportion ``p_min``, the initial
distance, the rounds and the target ``eps``); :func:`sc_trial` runs it; :func:`sc_covariance` is
the features' covariance and :func:`plan` what the cell's exact second moments
(:func:`mixreg.theory.ifca_sc_second_moments`) say before any data: the window of rounds far
above the floor over which the per-round factor is measured, and the rounds to the floor.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from mixreg.algorithms import RunSizes, trial_bytes
from mixreg.algorithms.ifca import closeness_init, ifca
from mixreg.problems import CellSchema, exact_labels, make_problem_from_parameters, make_theta_star
from mixreg.study import TrialSpec, param
from mixreg.theory import misclustering_exponent, misclustering_probability
from mixreg.theory._ifca_sc import (
    ifca_sc_conditional_moments,
    ifca_sc_second_moments,
    ifca_sc_stationary,
    lemma3_bound,
    lemma3_chebyshev,
    residual_pair,
    squared_loss_variance,
    strong_convexity_constants,
)

__all__ = ["ScSpec", "sc_trial", "sc_covariance", "plan", "sc_memory", "SC_CELLS", "FAMILIES", "K"]

K = 2  # two clusters: Lemma 3's union bound has one term, the exact probability is for two models
#: The three kinds of cell: ``rate`` (kappa x p at the reference sizes: the factor and the rounds),
#: ``floor`` (m and n' axes: the final error), ``lemma`` (one round from Assumption 6's boundary: Lemma 3).
FAMILIES = ("rate", "floor", "lemma")

#: How the trial reads its problem from a cell: ``n_prime`` the points per round of each subset,
#: ``delta`` the exact minimum separation of the ``"gaussian"`` protocol.
SC_CELLS = CellSchema(keys={"m": "m", "d": "d", "sigma": "sigma", "scale": "delta", "n": "n_prime"},
                      fixed={"protocol": "gaussian", "k": K, "dtype": "float64"})


def sc_covariance(d, kappa):
    """``diag(kappa^(-i/(d-1)))``, ``i = 0..d-1``: eigenvalues from 1 down to ``1/kappa``, geometric.

    So ``lambda_max(Sigma) = 1`` (Theorem 2's ``L = 2``, ``gamma = 1/2`` whatever ``kappa``) and
    ``L / lambda = kappa``.  ``theta*`` is Gaussian (a uniform direction), so the axes are not
    special relative to it.

    Examples
    --------
    >>> sc_covariance(3, 4.0).diagonal().tolist()
    [1.0, 0.5, 0.25]
    """
    if d == 1:
        return np.ones((1, 1))
    return np.diag(float(kappa) ** (-np.arange(d) / (d - 1.0)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScSpec(TrialSpec):
    """One cell: the problem (``n_prime`` points per round in each subset) and the run."""

    schema: ClassVar[CellSchema] = SC_CELLS

    family: str = param("rate, floor or lemma (see FAMILIES)", choices=FAMILIES)
    kappa: float = param("condition number L / lambda of Sigma", low=1)
    p_min: float = param("smallest cluster's proportion (exact; 1/2: balanced)", low=0, high=0.5, low_open=True)
    r0: float = param("initial distance ||theta_j - theta*_j|| / Delta (random direction)", low=0, low_open=True)
    rounds: int = param("rounds T run (resampling: 2 T n' points per worker)", low=1)
    eps: float = param("target accuracy of the rounds count", low=0, low_open=True)
    far: float = param("the factor's window: rounds whose predicted RMS error is >= far x the floor", low=1)


def _eigen(spec):
    return np.linalg.eigvalsh(sc_covariance(spec.problem.d, spec.kappa))


def _proportions(spec):
    counts = np.bincount(exact_labels(spec.problem.m, K, spec.p_min), minlength=K)
    return counts / counts.sum()


def plan(spec, horizon=None):
    """What the exact second moments say of a cell before the data, per cluster ``j``.

    Returns
    -------
    dict
        ``p`` (proportions, cluster 0 the smallest), ``floor2`` (stationary ``E||e||^2``,
        :func:`mixreg.theory.ifca_sc_stationary`), ``window`` (the last round ``t`` whose
        predicted RMS is ``>= far x sqrt(floor2)``, 0 if none), ``moments`` (predicted
        ``E||e_t||^2``, ``t = 0..rounds``), ``to_floor`` (first round with ``E||e_t||^2 <=
        1.02 floor2``, capped at 5000).
    """
    pb = spec.problem
    s = _eigen(spec)
    r0 = spec.r0 * pb.scale
    props = _proportions(spec)
    out = dict(p=props, floor2=[], window=[], moments=[], to_floor=[])
    for pj in props:
        floor2 = ifca_sc_stationary(s, float(pj), pb.m, pb.n, pb.sigma)
        long = ifca_sc_second_moments(s, float(pj), pb.m, pb.n, pb.sigma, r0, horizon or spec.rounds)
        above = np.nonzero(long >= spec.far**2 * floor2)[0]
        window = int(above[np.nonzero(np.diff(np.r_[above, -1]) != 1)[0][0]]) if above.size and above[0] == 0 else 0
        reached = np.nonzero(long <= 1.02 * floor2)[0]
        out["floor2"].append(floor2)
        out["window"].append(window)
        out["moments"].append(long[: spec.rounds + 1])
        out["to_floor"].append(int(reached[0]) if reached.size else long.size - 1)
    return out


def sc_memory(spec):
    """Upper estimate of a trial's peak bytes (the problem of ``2 T n'`` points per worker, one
    replica with resampling and its history)."""
    problem = dataclasses.replace(spec.problem, n=2 * spec.rounds * spec.problem.n)
    sizes = RunSizes.of(problem, replicas=1, resample=True, history_rounds=spec.rounds)
    return trial_bytes([problem], [("ifca", sizes)]) + 16.0 * problem.max_rows


def sc_trial(spec, seed):
    """One trial: ``rounds`` resampled IFCA rounds with Theorem 2's step ``1 / L``.

    The problem: ``theta*`` of the ``"gaussian"`` protocol (minimum separation exactly
    ``Delta``), exact labels (cluster 0 has ``round(p_min m)`` workers), rows
    ``N(0, sc_covariance(d, kappa))``, ``2 rounds n'`` points per worker; start
    ``theta_j = theta*_j + r0 Delta u_j`` (``u_j`` uniform on the sphere), option I, resampling.

    Parameters
    ----------
    spec : ScSpec
    seed : numpy.random.SeedSequence

    Returns
    -------
    dict of scalars
        ``lam``, ``L`` (Assumption 3's constants, :func:`mixreg.theory.strong_convexity_constants`),
        ``step`` (``1/L``), ``separation`` (``Delta``), ``points_per_round`` (``n'``),
        ``rounds_eps`` (first round with ``max_j ||theta_j - theta*_j|| <= eps``; ``nan`` if not
        within the run), and per cluster ``j`` (cluster 0 the smallest): ``p_j``, ``win_j`` (the
        window of :func:`plan`), ``d2win_j`` (``||e_j||^2`` at its end), ``exact2win_j`` (its
        exact mean given the trial's initial error,
        :func:`mixreg.theory.ifca_sc_conditional_moments`), ``final2_j`` (``||e_j||^2`` after
        the last round), ``wrong_j`` (fraction of cluster ``j``'s workers misclustered in the
        first round), ``wrong_all_j`` (in all rounds), ``exact_j`` (exact probability of the
        first round's geometry, :func:`mixreg.theory.residual_pair`), ``chernoff_j`` (its exact
        Chernoff exponent, :func:`mixreg.theory.misclustering_exponent`), ``cheb_j`` (the proof's
        Chebyshev step there, :func:`mixreg.theory.lemma3_chebyshev`), ``eta2_j`` (the larger
        loss variance of the two models, :func:`mixreg.theory.squared_loss_variance`),
        ``lemma_j`` (Lemma 3's bound with that ``eta^2``, :func:`mixreg.theory.lemma3_bound`).
    """
    pb = spec.problem
    data_ss, init_ss, split_ss = seed.spawn(3)
    rng = np.random.default_rng(data_ss)
    cov = sc_covariance(pb.d, spec.kappa)
    star = make_theta_star(K, pb.d, pb.scale, protocol="gaussian", rng=rng)
    labels = exact_labels(pb.m, K, spec.p_min)
    n_prime, T = pb.n, spec.rounds
    problem = make_problem_from_parameters(star, labels, 2 * T * n_prime, pb.sigma, rng=rng,
                                           covariances=np.broadcast_to(cov, (K, pb.d, pb.d)), protocol="gaussian")
    lam, L = strong_convexity_constants(cov)
    step = 1.0 / L  # Theorem 2's step size
    delta = float(problem.separation)
    theta0, _ = closeness_init(problem, spec.r0, "random", np.random.default_rng(init_ss))
    res = ifca(problem, theta0, step, n_rounds=T, resample=True, rng=np.random.default_rng(split_ss),
               history=("theta", "assignments"))
    hist = res.history
    dist = np.linalg.norm(hist.theta[:, 0] - star[None], axis=2)  # (T + 1, k)
    worst = dist.max(axis=1)
    hit = np.nonzero(worst <= spec.eps)[0]
    planned = plan(spec)
    assign = hist.assignments[:, 0]  # (T, m)
    record = dict(lam=lam, L=L, step=step, separation=delta,
                  points_per_round=int(np.diff(problem.offsets).min() // (2 * T)),
                  rounds_eps=float(hit[0]) if hit.size else math.nan, diverged=bool(res.diverged[0]))
    theta = theta0[0].astype(np.float64)
    for j in range(K):
        other = 1 - j
        mine = labels == j
        win = planned["window"][j]
        eta2 = max(squared_loss_variance(theta[j], star[j], cov, pb.sigma),
                   squared_loss_variance(theta[other], star[j], cov, pb.sigma))
        pair = residual_pair(star[j], theta[j], theta[other], cov, pb.sigma)
        exact = ifca_sc_conditional_moments(cov, float(mine.mean()), pb.m, n_prime, pb.sigma,
                                            theta[j] - star[j], win)
        record.update({
            f"p_{j}": float(mine.mean()),
            f"win_{j}": win,
            f"d2win_{j}": float(dist[win, j] ** 2),
            f"exact2win_{j}": float(exact[win]),
            f"final2_{j}": float(dist[-1, j] ** 2),
            f"rounds_eps_{j}": float(np.nonzero(dist[:, j] <= spec.eps)[0][0]) if (dist[:, j] <= spec.eps).any()
            else math.nan,
            f"wrong_{j}": float(np.mean(assign[0, mine] != j)),
            f"wrong_all_{j}": float(np.mean(assign[:, mine] != j)),
            f"exact_{j}": float(misclustering_probability(n_prime, pair, own_first=j < other)),
            f"chernoff_{j}": float(misclustering_exponent(pair)),
            f"cheb_{j}": lemma3_chebyshev(star[j], theta[j], theta[other], cov, pb.sigma, n_prime),
            f"eta2_{j}": eta2,
            f"lemma_{j}": lemma3_bound(eta2, lam, delta, n_prime, k=K),
        })
    return record
