"""The contraction trial: one resampled IFCA round of Theorem 1 from ``alpha Delta``.

:class:`ContractionSpec` is one cell of ``ifca_contraction`` (the problem at ``k = 2``,
``n = 2 n'``, its ``rho``, the closeness ``alpha`` and the constants ``c1`` to ``c4``);
:func:`ifca_contraction_trial` runs it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mixreg.algorithms.ifca import closeness_init, identity_round
from mixreg.study import param
from mixreg.theory import ResidualPair, ifca_step_size, lemma1_exponent, misclustering_probability

from ..ifca_mechanism import MechanismSpec

__all__ = ["ContractionSpec", "ifca_contraction_trial", "COLUMNS"]

#: trials.csv's column order of the cell parameters (the order results directories were written in).
COLUMNS = ("m", "k", "n", "d", "sigma", "delta", "rho", "alpha", "c1", "c2", "c3", "c4")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ContractionSpec(MechanismSpec):
    """One cell of the contraction study: the problem, the current closeness and Theorem 1's constants."""

    COLUMNS = COLUMNS

    rho: float = param("signal-to-noise ratio rho = Delta^2 / sigma^2 of the cell (its label)", low=0,
                       low_open=True)
    alpha: float = param("current closeness: ||theta_j - theta*_j|| = alpha Delta", low=0, low_open=True)
    c2: float = param("Theorem 1's noise-term constant", low=0, low_open=True)
    c3: float = param("Theorem 1's misclustering-term constant", low=0)
    c4: float = param("its exponent's constant", low=0, low_open=True)

    def check(self):
        """Two clusters: the exact misclustering probability the trial reports is for ``k = 2``."""
        super().check()
        if self.problem.k != 2:
            raise ValueError(f"the exact misclustering probability is for k = 2 clusters, got k={self.problem.k}")


def ifca_contraction_trial(spec, seed):
    """One trial of the contraction experiment: one resampled round of Theorem 1.

    From ``theta_j = theta*_j + alpha Delta u_j`` (``u_j`` uniform on the sphere), one round
    with ``gamma = c1 / p``.  Theorem 1's right-hand side with the constants of the cell:

    ``bound_j = 1/2 ||theta_j - theta*_j|| + c2 (sigma/p) sqrt(d/(m n')) + c3 exp(-c4 (rho/(rho+1))^2 n')``.

    Parameters
    ----------
    spec : ContractionSpec
        The problem (:data:`MECHANISM_CELLS`, ``k = 2``, ``n = 2 n'``), ``alpha``, ``c1``,
        ``c2``, ``c3``, ``c4``.
    seed : numpy.random.SeedSequence

    Returns
    -------
    dict of scalars
        Per cluster ``j``: ``ratio_j`` (``||theta_j^+ - theta*_j|| / ||theta_j - theta*_j||``),
        ``bound_ratio_j`` (``bound_j / ||theta_j - theta*_j||``), ``noise_ratio_j``
        (``1/2 + c2 (...) / ||theta_j - theta*_j||``: the bound without its misclustering
        term), ``c3_needed_j`` (the smallest ``c3`` that would cover this draw, 0 if the
        rest of the bound does), ``wrong_j`` (fraction of cluster ``j``'s workers misclustered
        in the round) and ``exact_wrong_j`` (the exact per-worker probability of that geometry);
        ``wrong_fraction`` over all workers, ``noise_term``, ``miscl_term``, ``n_prime``, ``snr`` (realised ``rho``).
    """
    data_ss, init_ss, split_ss = seed.spawn(3)
    problem = spec.problem.generate(np.random.default_rng(data_ss))
    theta0, _ = closeness_init(problem, spec.alpha, "random", np.random.default_rng(init_ss))
    p = problem.p_min
    gamma = ifca_step_size(p, c1=spec.c1)
    rnd = identity_round(problem, theta0, gamma, np.random.default_rng(split_ss))
    n_prime, star, sigma = rnd.n_prime, problem.theta_star, problem.sigma
    theta = theta0[0].astype(np.float64)
    after = np.linalg.norm(rnd.result.theta[0].astype(np.float64) - star, axis=1)
    before = np.linalg.norm(theta - star, axis=1)
    noise = spec.c2 * (sigma / p) * np.sqrt(problem.d / (problem.m * n_prime))
    decay = float(np.exp(-lemma1_exponent(problem.snr, spec.c4) * n_prime))
    miscl = spec.c3 * decay
    record = {"n_prime": n_prime, "snr": problem.snr, "noise_term": noise, "miscl_term": miscl,
              "wrong_fraction": float(np.mean(rnd.assignments != problem.labels))}
    for j in range(2):
        other = 1 - j
        pair = ResidualPair.from_parameters(star[j], theta[j], theta[other], sigma)
        mine = problem.labels == j
        record.update({
            f"ratio_{j}": float(after[j] / before[j]),
            f"bound_ratio_{j}": float(0.5 + (noise + miscl) / before[j]),
            f"noise_ratio_{j}": float(0.5 + noise / before[j]),
            f"c3_needed_{j}": float(max(0.0, after[j] - 0.5 * before[j] - noise) / decay),
            f"wrong_{j}": float(np.mean(rnd.assignments[mine] != j)),
            f"exact_wrong_{j}": float(misclustering_probability(n_prime, pair, own_first=j < other)),
        })
    return record
