"""The error-floor trial (:class:`ErrorFloorSpec`): IFCA's final error in two settings, and the oracle.

:func:`error_floor_trial` draws one clustered linear-regression problem (``theta*`` of the
Gaussian protocol at exact minimum separation ``Delta``, ``x ~ N(0, I_d)``, noise
``N(0, sigma^2)``) and returns, as scalars, the final error of

* **the theorem's setting** (IFCA paper, Theorem 1 / Corollary 1, linear model): option I,
  full participation, the resampling scheme (each client holds ``n = 2 T n'`` points, split
  into ``2T`` fresh subsets of ``n'``: identity estimate and gradient of each round), started on
  the sphere ``||theta_j - theta*_j|| = alpha Delta`` (Assumption 1's boundary for
  ``alpha = 1/4``), run twice on the same data and subsets:

  - ``thm_*``: Theorem 1's step ``gamma = c1 / p`` (:func:`mixreg.theory.ifca_step_size`, ``p``
    the realised smallest proportion);
  - ``safe_*``: the safe step ``gamma = c1 / p_max`` (:func:`mixreg.theory.ifca_safe_step_size`);
    equal to the above on balanced clusters;

* **the paper's practical setting** (its synthetic experiment): option I on a data set of ``n'``
  points per client with no resampling (``n' := n``, all data every round), random Gaussian
  initialisations ``N(0, Delta^2 / (2d) I)`` (the law of the Gaussian protocol's ``theta*``
  itself), ``restarts`` of them times every step size of a fixed grid, the run kept being the
  one with the lowest final **training loss** (never the distance to the truth;
  :meth:`mixreg.algorithms.DriverResult.best_replica`);

* **known-label least squares** on the practical data set (``n'`` points per client): the
  oracle that knows every client's cluster.  Its error is the minimax rate of linear
  regression with the labels known, ``sigma sqrt(d / (p m n'))`` for the smallest cluster; it is
  not a floor no estimator can beat (shrinkage does better for ``d >= 3``).

The error is the permutation-matched distance per cluster, **maximum** over clusters
(:func:`mixreg.metrics.matched_max_distance`), since Theorem 1 and Corollary 1 hold "for all
j"; in the theorem's setting, whose models start labelled by their truths, it equals
``max_j ||theta_j - theta*_j||`` whenever the run contracts.

Rounds of the theorem's setting: Corollary 1 runs ``T = log2(Delta / (4 eps))`` rounds of a 1/2
contraction; we run ``T = ceil(halvings / log2(1 / f))`` with ``f = max(1/2, 1 - 2 c1 p / p_max)``,
the population factor of the slowest cluster under the safe step (``T = halvings`` on balanced
clusters), so that both runs of a trial share one data set and the safe step's smallest cluster
also reaches its floor.

Labels, and what :class:`~mixreg.problems.ProblemSpec` draws: the spec draws ``theta*`` and a
problem with the official code's balanced contiguous labels (``p = 1/k`` exactly), which a cell
with ``p_min = 1/k`` uses as it is.  A cell with ``p_min < 1/k`` keeps that ``theta*`` and draws
the data again for **exact** proportions (:func:`mixreg.problems.exact_labels`: ``round(p_min m)`` clients in
cluster 0, the others shared as evenly as possible): the spec's own ``p_min`` draws i.i.d.
labels, whose realised ``p`` spreads by ``sqrt(p / m)`` (0.03 at ``p = 0.1, m = 100``, and an
empty cluster now and then), too much for an axis whose value is ``p``.  The realised
proportions are recorded either way.
"""

from __future__ import annotations

import dataclasses
import math
from typing import ClassVar

import numpy as np

from mixreg.validation import check_int
from mixreg.algorithms import RunSizes, trial_bytes
from mixreg.algorithms.ifca import ifca, initial_parameters
from mixreg.baselines import known_label_least_squares
from mixreg.metrics import matched_max_distance, misclustering_rate, oracle_ls_floor
from mixreg.problems import CellSchema, exact_counts, exact_labels, make_problem_from_parameters
from mixreg.study import TrialSpec, param
from mixreg.theory import ifca_safe_step_size, ifca_step_size

__all__ = ["ErrorFloorSpec", "error_floor_trial", "error_floor_memory", "theory_rounds", "ERROR_FLOOR_CELLS",
           "METHOD_KEYS"]

#: How :func:`error_floor_trial` reads its problem from a cell: ``n_prime`` is the practical data
#: set's points per client (the theorem's setting holds ``2 T n'``), ``separation`` the exact
#: minimum distance of the Gaussian-protocol ``theta*``.  Changing a key would change the seeds
#: of every trial.
ERROR_FLOOR_CELLS = CellSchema(
    keys={"m": "m", "k": "k", "d": "d", "sigma": "sigma", "scale": "separation", "n": "n_prime"},
    fixed={"protocol": "gaussian", "dtype": "float64"})


@dataclasses.dataclass(frozen=True, kw_only=True)
class ErrorFloorSpec(TrialSpec):
    """One cell of the error-floor study: the problem (a :class:`mixreg.problems.ProblemSpec`
    stored under :data:`ERROR_FLOOR_CELLS`: Gaussian ``theta*`` at exact minimum separation, float64)
    and the method's settings of the theorem's and the practical setting.

    The cell keeps the problem's keys (``m, k, d, sigma, separation, n_prime``) then the
    method's fields in declaration order, the order of the dicts it replaces (so every seed).
    """

    schema: ClassVar[CellSchema] = ERROR_FLOOR_CELLS

    p_min: float = param("smallest cluster's proportion (1/k: balanced labels; below: exact proportions)",
                         low=0, low_open=True)
    alpha: float = param("initial distance alpha Delta of the theorem's setting", low=0, high=0.5, low_open=True,
                         high_open=True)
    c1: float = param("Theorem 1's step constant: gamma = c1 / p", low=0, low_open=True)
    halvings: int = param("rounds of the theorem's setting on balanced clusters (see theory_rounds)", low=1)
    restarts: int = param("practical setting: random initialisations", low=1)
    step_sizes: tuple[float, ...] = param("practical setting: step sizes run from every initialisation", low=0,
                                          low_open=True)
    practical_rounds: int = param("practical setting: most rounds", low=1)
    practical_tol: float = param("practical setting: stop once every run moves less than this (0: never)", low=0)

    def check(self):
        k = self.problem.k
        if k < 2:
            raise ValueError(f"k must be an integer >= 2 (Delta and Assumption 1 need two clusters), got {k}")
        if not self.problem.scale > 0:
            raise ValueError(f"separation must be finite and > 0, got {self.problem.scale!r}")
        if self.p_min > 1.0 / k + 1e-12:
            raise ValueError(f"p_min must be at most 1/k = {1.0 / k:.4g}; got p_min={self.p_min!r}, k={k}")

    @property
    def unbalanced(self):
        """Whether the cell's labels are exact unbalanced proportions (``p_min < 1/k``)."""
        return self.p_min < 1.0 / self.problem.k - 1e-12


#: The method's keys of a cell, besides the problem's.
METHOD_KEYS = ErrorFloorSpec.method_names()


def theory_rounds(halvings, c1, p, p_max):
    """Rounds of the theorem's setting: ``ceil(halvings / log2(1 / f))``, ``f = max(1/2, 1 - 2 c1 p / p_max)``.

    ``f`` is the population contraction of the slowest cluster under the safe step ``c1 / p_max``
    (at most Theorem 1's 1/2, so balanced clusters run ``halvings`` rounds, Corollary 1's
    ``log2(Delta / (4 eps))`` for ``eps = 2^-halvings Delta / 4``).

    Examples
    --------
    >>> theory_rounds(14, 0.375, 0.5, 0.5), theory_rounds(14, 0.375, 0.2, 0.8)
    (14, 47)
    """
    halvings = check_int("halvings", halvings, low=1)
    f = max(0.5, 1.0 - 2.0 * c1 * p / p_max)
    return int(math.ceil(halvings / math.log2(1.0 / f) - 1e-9))


def _cluster_errors(theta, theta_star, index):
    """``||theta_index - theta*_index||`` of every replica (the theorem's labelling, no matching)."""
    return np.linalg.norm(theta[:, index, :] - theta_star[index], axis=1)


def error_floor_memory(spec):
    """Upper estimate of :func:`error_floor_trial`'s peak bytes from the spec's sizes (nothing is
    allocated; :func:`mixreg.algorithms.trial_bytes`), without the trial's fixed overhead.

    The trial holds the practical problem (twice while the unbalanced one replaces it) and the
    theorem's problem of ``2 T n'`` points per client (``T`` from :func:`theory_rounds`, with the
    resampling's row indices ``8 N d / d``), and runs IFCA with two replicas on the latter,
    ``restarts x len(step_sizes)`` replicas on the former, and known-label least squares.

    Parameters
    ----------
    spec : ErrorFloorSpec

    Returns
    -------
    float
        Bytes.
    """
    problem, k = spec.problem, spec.problem.k
    unbalanced = spec.unbalanced
    counts = np.array(exact_counts(problem.m, k, spec.p_min) if unbalanced else  # balanced: as make_labels
                      [problem.m // k + (j < problem.m % k) for j in range(k)])
    props = counts / counts.sum()
    T = theory_rounds(spec.halvings, spec.c1, float(props.min()), float(props.max()))
    theory = dataclasses.replace(problem, n=2 * T * problem.n)
    replicas = spec.restarts * len(spec.step_sizes)
    runs = [("ifca", RunSizes.of(theory, replicas=2)), ("ifca", RunSizes.of(problem, replicas=replicas)),
            ("least_squares", RunSizes.of(theory))]
    return trial_bytes([problem] * (2 if unbalanced else 1) + [theory], runs) + 8.0 * theory.max_rows


def error_floor_trial(spec, seed):
    """One trial of the error-floor experiment (see the module docstring).

    Parameters
    ----------
    spec : ErrorFloorSpec
        The problem (``spec.problem``, stored under :data:`ERROR_FLOOR_CELLS`: ``m, k, d,
        sigma, separation, n_prime``), and the method (:data:`METHOD_KEYS`):
        ``p_min`` (smallest cluster's proportion, ``1/k`` = balanced), ``alpha`` (initial
        distance ``alpha Delta`` of the theorem's setting), ``c1`` (``gamma = c1 / p``),
        ``halvings`` (see :func:`theory_rounds`), ``restarts`` and ``step_sizes`` (the
        practical setting's random starts and step grid), ``practical_rounds`` (at most) and
        ``practical_tol`` (stop once every run moved less; 0 runs every round).
    seed : numpy.random.SeedSequence
        Spawns three streams: the problem (``theta*``, labels and the practical data), the
        theorem's setting (its data, initial point and subsets), the practical starts.

    Returns
    -------
    dict of scalars
        Realised problem: ``p`` and ``p_max`` (proportions), ``delta`` (``Delta``), ``rho``
        (``Delta^2 / sigma^2``), ``eta`` (``sqrt(d / (p m n'))``).  Theorem's setting:
        ``theory_rounds`` (``T``), ``theory_n`` (``2 T n'``), ``init_dist`` (``alpha Delta``),
        and for each run ``<run> in (thm, safe)``: ``<run>_step``, ``<run>_err`` (matched max
        distance; ``nan`` if it diverged), ``<run>_err_small`` / ``<run>_err_large`` (error of the
        smallest / largest true cluster), ``<run>_diverged``, ``<run>_contracted`` (final error
        below ``init_dist``), ``<run>_misclustering`` (final identities on all the client's data).
        Practical setting: ``practical_err``, ``practical_step`` (chosen), ``practical_misclustering``,
        ``practical_diverged`` (runs that diverged), ``practical_runs``, ``practical_rounds_run``.
        Oracle: ``ls_err`` (known-label least squares on the ``n'`` points per client),
        ``ls_rms`` (its expected RMS ``sigma sqrt(d / (N_j - d - 1))``, max over clusters),
        ``ls_full_err`` (known-label least squares on the theorem's ``2 T n'`` points per client).

    A bad cell is refused when its spec is made (:meth:`ErrorFloorSpec.from_cell` raises
    ``ValueError`` naming the field and its allowed range).
    """
    problem_spec = spec.problem
    k = problem_spec.k
    data_ss, theory_ss, init_ss = seed.spawn(3)

    # --- the problem and the practical data set (n' points per client)
    data_rng = np.random.default_rng(data_ss)
    problem = problem_spec.generate(data_rng)
    if spec.unbalanced:  # same theta*, exact unbalanced proportions
        problem = make_problem_from_parameters(problem.theta_star, exact_labels(problem_spec.m, k, spec.p_min),
                                               problem_spec.n, problem_spec.sigma, rng=data_rng,
                                               dtype=problem_spec.dtype, protocol=problem_spec.protocol)
    counts = np.bincount(problem.labels, minlength=k)
    props = counts / problem_spec.m
    p, p_max = float(props.min()), float(props.max())
    small, large = int(np.argmin(counts)), int(np.argmax(counts))
    n_prime, d, m, sigma = problem_spec.n, problem_spec.d, problem_spec.m, problem_spec.sigma
    truth = problem.theta_star
    delta = float(problem.separation)

    # --- the theorem's setting: 2 T n' points per client, resampled, from alpha Delta
    c1 = spec.c1
    T = theory_rounds(spec.halvings, c1, p, p_max)
    theory_rng = np.random.default_rng(theory_ss)
    theory_problem = make_problem_from_parameters(truth, problem.labels, 2 * T * n_prime, sigma, rng=theory_rng,
                                                  dtype=problem.dtype, protocol=problem.protocol)
    start = initial_parameters(theory_problem, 1, "close", rng=theory_rng, alpha=spec.alpha)
    steps = np.array([ifca_step_size(p, c1), ifca_safe_step_size(p_max, c1)])
    res = ifca(theory_problem, np.repeat(start, 2, axis=0), steps, n_rounds=T, resample=True, rng=theory_rng)
    init_dist = float(spec.alpha * delta)
    finite = ~res.diverged
    err = np.where(finite, matched_max_distance(res.theta, truth), np.nan)
    err_small = np.where(finite, _cluster_errors(res.theta, truth, small), np.nan)
    err_large = np.where(finite, _cluster_errors(res.theta, truth, large), np.nan)
    miscl = np.where(finite, misclustering_rate(res.assignments, problem.labels, k), np.nan)
    record = dict(
        p=p, p_max=p_max, delta=delta, rho=float(problem.snr), eta=math.sqrt(d / (p * m * n_prime)),
        theory_rounds=T, theory_n=2 * T * n_prime,
        init_dist=init_dist,
    )
    for b, run in enumerate(("thm", "safe")):
        record.update({
            f"{run}_step": float(steps[b]),
            f"{run}_err": float(err[b]),
            f"{run}_err_small": float(err_small[b]),
            f"{run}_err_large": float(err_large[b]),
            f"{run}_diverged": bool(res.diverged[b]),
            f"{run}_contracted": bool(finite[b] and err[b] < init_dist),
            f"{run}_misclustering": float(miscl[b]),
        })

    # --- the practical setting: random starts x step grid, no resampling, chosen by training loss
    grid = np.array(spec.step_sizes)
    restarts = spec.restarts
    starts = initial_parameters(problem, restarts, "gaussian", rng=np.random.default_rng(init_ss),
                                scale=delta / math.sqrt(2 * d))
    # replica b = (start b // L, step size b % L)
    tol = spec.practical_tol if spec.practical_tol > 0 else None
    run = ifca(problem, np.repeat(starts, grid.size, axis=0), np.tile(grid, restarts),
               n_rounds=spec.practical_rounds, tol=tol)
    chosen = run.best_replica()
    if chosen is None:
        practical = dict(practical_err=math.nan, practical_step=math.nan, practical_misclustering=math.nan)
    else:
        practical = dict(
            practical_err=float(matched_max_distance(run.theta[chosen], truth)),
            practical_step=float(run.step_sizes[chosen]),
            practical_misclustering=float(misclustering_rate(run.assignments[chosen], problem.labels, k)),
        )
    record.update(practical, practical_diverged=int(run.diverged.sum()), practical_runs=int(run.theta.shape[0]),
                  practical_rounds_run=int(run.n_rounds))

    # --- the oracle: known-label least squares
    record.update(
        ls_err=float(matched_max_distance(known_label_least_squares(problem), truth)),
        ls_rms=float(np.max(oracle_ls_floor(sigma, d, problem.cluster_sizes))),
        ls_full_err=float(matched_max_distance(known_label_least_squares(theory_problem), truth)),
    )
    return record
