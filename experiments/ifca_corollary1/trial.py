"""The Corollary 1 trial: a full resampled IFCA run of the linear model, or one draw of Lemma 2's design.

:class:`Corollary1Spec` is one cell of ``ifca_corollary1``: the problem (balanced, ``theta*`` of
the Gaussian protocol at exact separation ``Delta``, :data:`experiments.ifca_mechanism.MECHANISM_CELLS`)
and a ``part``:

* ``"rounds"`` and ``"exponential"``: :func:`corollary1_trial` runs ``rounds`` resampled rounds of
  IFCA option I (the analysis scheme of Sec. 3.3 of the thesis: ``2 T`` fresh subsets of ``n'``
  points per client, full participation, ``gamma = c1 / p``) from
  ``theta_j = theta*_j + alpha Delta u_j`` and records the whole distance history; the
  ``"exponential"`` part also runs, on the same data, the same resampled gradient steps with the
  true labels (the known-label run: one model per cluster, started at the same point);
* ``"lemma2"``: one draw of the pooled design of a cluster, ``X`` of shape ``(N, d)`` with i.i.d.
  ``N(0, 1)`` entries and noise ``eps ~ N(0, sigma^2 I_N)`` (the problem of one client holding
  ``N = n`` points), and the quantities of Lemma 2 (arXiv App. A.2: Vershynin 2010, Thm 5.39, and
  the Hanson-Wright inequality).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from mixreg.algorithms import RunSizes, trial_bytes
from mixreg.algorithms.ifca import closeness_init, ifca
from mixreg.problems import Problem
from mixreg.study import param
from mixreg.theory import ifca_step_size

from ..ifca_mechanism import MechanismSpec

__all__ = ["PARTS", "COLUMNS", "Corollary1Spec", "corollary1_trial", "corollary1_memory", "lemma2_draw",
           "distance_history", "known_label_run"]

#: The three kinds of cell.
PARTS = ("rounds", "exponential", "lemma2")

#: trials.csv's column order of the cell parameters.
COLUMNS = ("part", "m", "k", "n", "d", "sigma", "delta", "rho", "alpha", "c1", "rounds", "last")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Corollary1Spec(MechanismSpec):
    """One cell of the Corollary 1 study: the problem, the part, and the run's settings.

    For ``part="lemma2"`` the problem is one client (``m = 1``, ``k = 1``) of ``n = N`` points:
    the pooled design of a cluster; ``alpha``, ``c1``, ``rounds`` and ``last`` are not used.
    """

    COLUMNS = COLUMNS

    part: str = param("what the trial measures", choices=PARTS)
    rho: float = param("signal-to-noise ratio rho = Delta^2 / sigma^2 of the cell (its label)", low=0,
                       low_open=True)
    alpha: float = param("initial distance alpha Delta (Assumption 1: alpha <= 1/4)", low=0, high=0.5, low_open=True,
                         high_open=True)
    rounds: int = param("rounds T of the run (each client holds n = 2 T n' points)", low=1)
    last: int = param("final rounds whose misclustered fraction is averaged", low=1, at_most="rounds")

    def check(self):
        """Two clusters for a run, one client and one cluster for a Lemma 2 draw, and ``n = 2 T n'``."""
        super().check()
        pb = self.problem
        if self.part == "lemma2":
            if pb.m != 1 or pb.k != 1:
                raise ValueError(f"a lemma2 cell is one client of one cluster (m = k = 1), got m={pb.m}, k={pb.k}")
            return
        if pb.k != 2:
            raise ValueError(f"a run cell has k = 2 clusters, got k={pb.k}")
        if pb.n % (2 * self.rounds):
            raise ValueError(f"n must be a multiple of 2 * rounds = {2 * self.rounds} (n = 2 T n'), got n={pb.n}")

    @property
    def n_prime(self):
        """Points per client in each of a round's two subsets (``n / (2 T)``)."""
        return self.problem.n // (2 * self.rounds)


def corollary1_memory(spec):
    """Upper estimate of a trial's peak bytes from its sizes (nothing allocated): the problem, one IFCA
    replica with resampling and its iterate history, and the known-label run's copy of the data."""
    pb = spec.problem
    if spec.part == "lemma2":
        return 3.0 * 8 * pb.n * (pb.d + 1)
    sizes = RunSizes.of(pb, replicas=1, resample=True, history_rounds=spec.rounds)
    rows = 8.0 * pb.max_rows * (pb.d + 1)
    return trial_bytes([pb], [("ifca", sizes), ("ifca", sizes)]) + 2 * rows


def distance_history(theta, theta_star):
    """``max_j ||theta_j^(t) - theta*_j||`` for every round ``t`` (the theorem's labelling: model ``j``
    started next to ``theta*_j``; no matching).

    Parameters
    ----------
    theta : ndarray of shape (T + 1, k, d)
    theta_star : ndarray of shape (k, d)

    Returns
    -------
    ndarray of shape (T + 1,)
    """
    return np.linalg.norm(np.asarray(theta, dtype=np.float64) - theta_star, axis=2).max(axis=1)


def known_label_run(problem, start, step, n_rounds, rng):
    """The resampled gradient steps of IFCA's option I with the true labels (the known-label run).

    One :func:`mixreg.algorithms.ifca.ifca` run per cluster on the clients of that cluster alone
    (``k = 1``: no identity to estimate), with the step rescaled so that the update is IFCA's
    ``theta_j -= (gamma / m) sum_{i in S*_j} grad F_i(theta_j)``: ``gamma m_j / m`` over the
    ``m_j`` clients of the sub-problem.

    Parameters
    ----------
    problem : Problem
    start : ndarray of shape (k, d)
    step : float
        IFCA's ``gamma``.
    n_rounds : int
    rng : numpy.random.Generator
        The subsets' draws.

    Returns
    -------
    ndarray of shape (k,)
        ``||theta_j^(T) - theta*_j||`` of each cluster (``nan`` if its run diverged).
    """
    errors = np.full(problem.k, np.nan)
    for j in range(problem.k):
        clients = np.flatnonzero(problem.labels == j)
        rows = np.concatenate([np.arange(problem.offsets[i], problem.offsets[i + 1]) for i in clients])
        sub = Problem.from_arrays(problem.X[rows], problem.y[rows], problem.sizes[clients],
                                  np.zeros(clients.size, dtype=np.int64), problem.theta_star[j:j + 1],
                                  sigma=problem.sigma)
        res = ifca(sub, start[j:j + 1][None], step * clients.size / problem.m, n_rounds=n_rounds, resample=True,
                   rng=rng)
        if not res.diverged[0]:
            errors[j] = float(np.linalg.norm(res.theta[0, 0].astype(np.float64) - problem.theta_star[j]))
    return errors


def lemma2_draw(X, eps, sigma):
    """Lemma 2's quantities for one Gaussian design ``X`` (N, d) and noise ``eps`` (N,).

    Returns
    -------
    dict
        ``op_dev``: ``||X^T X / N - I||_op``; ``smax_dev`` and ``smin_dev``: ``s_max(X)/sqrt(N) - 1``
        and ``1 - s_min(X)/sqrt(N)`` (Vershynin 2010, Thm 5.39 / Cor. 5.35: at most
        ``sqrt(d/N) + t/sqrt(N)`` w.p. ``1 - 2 exp(-t^2/2)``); ``sv_dev``: the larger of the two;
        ``noise_ratio``: ``||X^T eps|| / (sigma sqrt(N d))`` and ``noise_ratio_sq`` its square
        (expectation exactly 1).
    """
    N, d = X.shape
    s = np.linalg.svd(X, compute_uv=False)
    root = math.sqrt(N)
    smax_dev, smin_dev = float(s[0] / root - 1.0), float(1.0 - s[-1] / root)
    eig = (s**2) / N - 1.0
    ratio = float(np.linalg.norm(X.T @ eps) / (sigma * math.sqrt(N * d)))
    return dict(op_dev=float(np.max(np.abs(eig))), smax_dev=smax_dev, smin_dev=smin_dev,
                sv_dev=max(smax_dev, smin_dev), noise_ratio=ratio, noise_ratio_sq=ratio**2)


def corollary1_trial(spec, seed):
    """One trial of the Corollary 1 study (see the module docstring).

    Parameters
    ----------
    spec : Corollary1Spec
    seed : numpy.random.SeedSequence
        Spawns the problem's, the initial point's and the subsets' streams (and the known-label
        run's subsets).

    Returns
    -------
    dict of scalars
        Part ``"lemma2"``: ``N``, the quantities of :func:`lemma2_draw`.  Runs: ``n_prime``, ``p``,
        ``snr`` (realised ``rho``), ``noise_term`` (``(sigma / p) sqrt(d / (m n'))``), ``diverged``,
        ``dist_<t>`` for ``t = 0..T`` (``max_j ||theta_j^(t) - theta*_j||``), ``miscl_<t>`` for
        ``t = 0..T-1`` (fraction of clients whose round-``t`` identity estimate is not their true
        cluster's model), ``final_err`` (``dist_T``), ``final_miscl`` (the mean of the last ``last``
        rounds' ``miscl_<t>``); part ``"exponential"`` also ``known_err`` (the known-label run's
        ``max_j ||theta_j^(T) - theta*_j||``) and ``excess`` (``final_err - known_err``).
    """
    data_ss, init_ss, split_ss, known_ss = seed.spawn(4)
    problem = spec.problem.generate(np.random.default_rng(data_ss))
    if spec.part == "lemma2":
        X = problem.X.astype(np.float64)
        eps = problem.y.astype(np.float64) - X @ problem.theta_star[0]
        return dict(N=int(X.shape[0]), **lemma2_draw(X, eps, problem.sigma))
    theta0, _ = closeness_init(problem, spec.alpha, "random", np.random.default_rng(init_ss))
    p = problem.p_min
    gamma = ifca_step_size(p, c1=spec.c1)
    T, n_prime = spec.rounds, spec.n_prime
    res = ifca(problem, theta0, gamma, n_rounds=T, resample=True, rng=np.random.default_rng(split_ss),
               history=("theta", "assignments"))
    star = problem.theta_star
    record = dict(n_prime=n_prime, p=p, snr=float(problem.snr),
                  noise_term=float((problem.sigma / p) * math.sqrt(problem.d / (problem.m * n_prime))),
                  diverged=bool(res.diverged[0]))
    dist = distance_history(res.history.theta[:, 0], star)
    wrong = np.mean(res.history.assignments[:, 0, :] != problem.labels, axis=1)  # (T,): model j is cluster j
    record.update({f"dist_{t}": float(dist[t]) for t in range(T + 1)})
    record.update({f"miscl_{t}": float(wrong[t]) for t in range(T)})
    record.update(final_err=float(dist[T]), final_miscl=float(np.mean(wrong[T - spec.last:])))
    if spec.part == "exponential":
        known = known_label_run(problem, theta0[0], gamma, T, np.random.default_rng(known_ss))
        record.update(known_err=float(np.max(known)), excess=float(dist[T] - np.max(known)))
    return record
