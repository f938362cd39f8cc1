"""The misclustering trial: one resampled IFCA round from ``theta = theta*`` and its identity estimates.

:class:`MisclusteringSpec` is one cell of ``ifca_misclustering`` (the problem at ``k = 2``,
``n = 2 n'``, its ``rho`` and the step size); :func:`ifca_misclustering_trial` runs it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mixreg.algorithms.ifca import identity_round
from mixreg.study import param
from mixreg.theory import ResidualPair, ifca_step_size, misclustering_probability

from ..ifca_mechanism import MechanismSpec

__all__ = ["MisclusteringSpec", "ifca_misclustering_trial", "COLUMNS"]

#: trials.csv's column order of the cell parameters (the order results directories were written in).
COLUMNS = ("m", "k", "n", "d", "sigma", "delta", "rho", "c1")


@dataclasses.dataclass(frozen=True, kw_only=True)
class MisclusteringSpec(MechanismSpec):
    """One cell of the misclustering study: the problem (``sigma = rho^(-1/2)``) and its ``rho``."""

    COLUMNS = COLUMNS

    rho: float = param("signal-to-noise ratio rho = Delta^2 / sigma^2 of the cell (its label)", low=0,
                       low_open=True)

    def check(self):
        """Two clusters: the exact misclustering probability the trial reports is for ``k = 2``."""
        super().check()
        if self.problem.k != 2:
            raise ValueError(f"the exact misclustering probability is for k = 2 clusters, got k={self.problem.k}")


def ifca_misclustering_trial(spec, seed):
    """One trial of the misclustering experiment: one resampled round from ``theta = theta*``.

    Parameters
    ----------
    spec : MisclusteringSpec
        The problem (:data:`MECHANISM_CELLS`, ``k = 2``, ``n = 2 n'``) and ``c1``.
    seed : numpy.random.SeedSequence
        Spawns the problem and the resampling streams.

    Returns
    -------
    dict of scalars
        ``n_workers``, ``n_wrong`` (workers whose identity estimate is not their own cluster's
        model), ``wrong_fraction``, ``exact_probability``
        (:func:`mixreg.theory.misclustering_probability` at the truth, the same for every
        worker), ``snr`` (realised ``Delta^2 / sigma^2``), ``n_prime``.
    """
    data_ss, split_ss = seed.spawn(2)
    problem = spec.problem.generate(np.random.default_rng(data_ss))
    gamma = ifca_step_size(problem.p_min, c1=spec.c1)
    rnd = identity_round(problem, problem.theta_star, gamma, np.random.default_rng(split_ss))
    wrong = int(np.sum(rnd.assignments != problem.labels))
    pair = ResidualPair.at_truth(problem.snr)
    return {
        "n_prime": rnd.n_prime,
        "snr": problem.snr,
        "n_workers": problem.m,
        "n_wrong": wrong,
        "wrong_fraction": wrong / problem.m,
        "exact_probability": float(misclustering_probability(rnd.n_prime, pair)),
    }
