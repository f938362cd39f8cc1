"""Trial function of the head-to-head comparison: one problem, the compared registered methods and the
reference points.

:func:`compare_trial` draws one problem of a regime (a :class:`mixreg.problems.ProblemSpec`
stored in the cell), then runs

* **the registered algorithms of** :data:`COMPARED` (an explicit list of
  :data:`mixreg.algorithms.ALGORITHMS` entries, so that registering a new algorithm changes no
  existing comparison): IFCA (options I and II, two aggregations), Su-Xu-Yang's Phase 2
  (FedAvg, FedProx) from random starts, the one-shot method, FeSEM, PACFL (joint and x-only
  signatures), point-level IFCA and k-FED, each from the same ``n_inits`` random starts and over
  the same step-size grid, in one batched call of ``n_inits x len(steps)`` replicas;
* **the variants** (:data:`VARIANTS`): FeSEM from its paper's own start
  (:func:`mixreg.algorithms.fesem.initial_centres`: k-means of the warm-start local models, best
  of 20 by intra-cluster distance, one per start), over the same step grid, so that FeSEM is
  also compared as published and not only from the shared random starts;
* **the reference points**: global FedAvg (the FedAvg(2) driver with ``k = 1``, not a new driver),
  local-only models (each client's minimum-norm least squares), known-label least squares (the
  oracle with every row's true cluster), and IFCA started at the truth.

Tuning, one rule for every method
---------------------------------
Every method keeps, among its replicas (starts x step sizes), the one with the lowest final value
of **its own training objective** (:meth:`mixreg.algorithms.DriverResult.best_replica`), never a
distance to the truth; a diverged replica is never chosen.  The grid is :data:`STEPS` for every
method (the manifest records it).  The random starts are :math:`N(0, s^2 I)` with
:math:`s = \\sqrt{\\overline{y^2} / (d\\, \\overline{x^2})}`, a scale read from the data (a model of
that norm explains the responses' energy), not from :math:`\\theta^*`.

What is recorded per method (columns ``<method>_<what>``)
--------------------------------------------------------
``err_mean`` / ``err_max``
    Permutation-matched mean and max distance :math:`\\lVert\\hat\\theta_{\\pi(l)} - \\theta^*_l\\rVert`
    of the chosen replica (:mod:`mixreg.metrics`).  Reference points without ``k`` models: global
    FedAvg's one model is compared with every :math:`\\theta^*_l`; local-only models with their
    client's cluster, averaged within each cluster.
``mis_clients`` / ``mis_points``
    Misclustering of the clients (their estimated cluster against their, main, cluster) and of the
    points (the point labels of point-level methods; a client-level method gives all of a client's
    points its label) under the best relabelling; ``nan`` where a method has no clustering.
``rounds`` / ``converged``
    Rounds the chosen replica takes when rerun alone with the tolerance: it stops once it moved by
    at most :data:`TOL` times the data's parameter scale in a round (``converged``), or after
    ``n_rounds``.  Every metric but ``time`` and ``diverged`` is read from that rerun, so error,
    labels, rounds and communication belong to one trajectory.
``upload`` / ``download``
    Floats an average client sends / receives over those rounds, counted from the protocol
    (:attr:`mixreg.algorithms.Algorithm.communication`).
``time``
    Wall time of the method's whole batched call (all replicas), seconds.
``diverged``
    Fraction of its replicas that diverged.
``refused``
    Empty, or the one-line reason a method refused the problem: a precondition of its registered
    settings that the problem's sizes do not meet (:attr:`mixreg.algorithms.Algorithm.precondition`,
    e.g. PACFL's ``p = 3`` signature vectors in dimension ``d < 4``, k-FED's ``k' = k`` local
    groups on a client of fewer than ``k`` points; the method is then not run), or a refusal of
    the drawn data (:class:`mixreg.algorithms.ProblemRefused`); its metrics are then ``nan`` and
    the other methods run.  Any other error fails the trial.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from mixreg.algorithms import (
    ProblemRefused,
    RunSizes,
    data_scales,
    get_algorithm,
    trial_bytes,
    unmet_precondition,
)
from mixreg.algorithms.fesem import initial_centres
from mixreg.baselines import known_label_least_squares
from mixreg.local_solvers import local_least_squares
from mixreg.methods import COMPARE
from mixreg.metrics import matched_max_distance, matched_mean_distance, misclustering_rate
from mixreg.problems import ProblemSpec
from mixreg.study import Spec, param

__all__ = ["CompareSpec", "compare_trial", "compare_memory", "spec_of", "REGIMES", "METHODS", "COMPARED", "VARIANTS",
           "REFERENCES", "STEPS", "TOL", "METRICS"]

#: Each regime: its description and the :class:`ProblemSpec` fields it changes from ``balanced``,
#: as a function of the base sizes ``(m, n, d, k, sigma, separation)``.
REGIMES = {
    "balanced": ("n_i = n, identity covariances, equal clusters", lambda b: {}),
    "small_n": ("n_i = d/5 < d (local LS underdetermined)", lambda b: dict(n=max(1, b["d"] // 5))),
    "unbalanced": ("log-normal n_i in [2, 10n], mean n", lambda b: dict(
        n=None, size_law="lognormal", size_mean=float(b["n"]), n_min=2, n_max=10 * b["n"])),
    "covariances": ("cluster-specific diagonal covariances, spectra in [0.1, 10]",
                    lambda b: dict(cov_low=0.1, cov_high=10.0)),
    "low_snr": ("sigma x 3", lambda b: dict(sigma=3 * b["sigma"])),
    "high_snr": ("sigma / 10", lambda b: dict(sigma=b["sigma"] / 10)),
    "unequal_p": ("labels i.i.d., cluster 0 with probability 0.2", lambda b: dict(p_min=0.2)),
    "mixed": ("clients that mix clusters: 60% of points from the main cluster", lambda b: dict(main_fraction=0.6)),
}


def spec_of(regime, *, m, n, d, k, sigma, separation):
    r"""The :class:`ProblemSpec` of ``regime`` around the base problem: ``m`` clients of ``n``
    points, Gaussian-protocol :math:`\theta^*` with minimum separation ``separation``."""
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {', '.join(REGIMES)}, got {regime!r}")
    base = dict(m=int(m), n=int(n), d=int(d), k=int(k), sigma=float(sigma), separation=float(separation))
    fields = dict(m=base["m"], k=base["k"], n=base["n"], d=base["d"], sigma=base["sigma"], scale=base["separation"],
                  protocol="gaussian")
    fields.update(REGIMES[regime][1](base))
    return ProblemSpec(**fields)

#: The step-size grid of every method (its role differs: IFCA's gamma on a mean of squares, FedX's
#: and the trainers' eta on half a mean of squares, FedProx's proximal eta; the rule is the same).
STEPS = (0.01, 0.03, 0.1, 0.3, 1.0)
#: Convergence tolerance, relative to the data's parameter scale (:func:`data_scales`).
TOL = 1e-6
#: The registered algorithms compared, in table order and in the order their random streams are
#: spawned (a trial's seeds depend on it).  An explicit list, not the registry: a newly registered
#: algorithm (e.g. ``two_phase``, which needs anchor clients these problems do not have) joins the
#: comparison only by a deliberate change here, which changes every later method's stream.
COMPARED = ("ifca", "ifca_data", "ifca_model", "fedavg", "fedprox", "oneshot", "fesem", "pacfl", "pacfl_x",
            "ifca_points", "kfed")
#: Registered algorithms run a second way (the variants of :data:`mixreg.methods.COMPARE`):
#: ``fesem_paper`` is FeSEM from its paper's start (Sec. 5.1: the best of 20 k-means of the
#: warm-start local models), the registered ``fesem`` runs from the shared random starts.
VARIANTS = tuple(name for name, style in COMPARE.items() if style.kind == "variant")
#: Reference points (not algorithms of the registry; the references of
#: :data:`mixreg.methods.COMPARE`): ``known_label_ls`` is the oracle, ``ifca_truth`` IFCA started
#: at the truth.
REFERENCES = tuple(name for name, style in COMPARE.items() if style.kind == "reference")
#: What is recorded per method.
METRICS = ("err_mean", "err_max", "mis_clients", "mis_points", "rounds", "converged", "upload", "download",
           "time", "diverged", "step")


def methods():
    """The compared algorithms (:data:`COMPARED`), the variants, then the reference points, in table
    order."""
    return COMPARED + VARIANTS + REFERENCES


METHODS = methods()


@dataclasses.dataclass(frozen=True, kw_only=True)
class CompareSpec(Spec):
    """One cell of the comparison: a regime around the base problem, and the methods' budget.

    Not a :class:`mixreg.study.TrialSpec`: the cell stores the regime's name and the base sizes
    (what the command line sets), and the regime makes the :class:`ProblemSpec` of them
    (:attr:`problem`, :func:`spec_of`), which a cell could not give back.  Its engine cell
    (:meth:`mixreg.study.Spec.to_cell`) is its fields in declaration order.
    """

    regime: str = param("the regime (a key of REGIMES)", choices=tuple(REGIMES))
    m: int = param("clients", low=1)
    n: int = param("points per client (the mean, in the unbalanced regime)", low=1)
    d: int = param("dimension", low=1)
    k: int = param("clusters", low=1)
    sigma: float = param("noise level sigma of the base problem", low=0, low_open=True)
    separation: float = param("minimum distance between the theta*_l", low=0, low_open=True)
    n_rounds: int = param("most rounds of every iterative phase", low=1)
    n_inits: int = param("random starts per method", low=1)

    @property
    def problem(self):
        """The regime's :class:`ProblemSpec` (:func:`spec_of`)."""
        return spec_of(self.regime, m=self.m, n=self.n, d=self.d, k=self.k, sigma=self.sigma,
                       separation=self.separation)


def compare_memory(spec):
    """Upper estimate of :func:`compare_trial`'s peak bytes from the spec's sizes (nothing is
    allocated; :func:`mixreg.algorithms.trial_bytes`): the regime's problem, then the heaviest
    of the methods, each a batched call of ``n_inits x len(STEPS)`` replicas, and the
    least-squares reference points."""
    problem = spec.problem
    sizes = RunSizes.of(problem, replicas=spec.n_inits * len(STEPS))
    return trial_bytes([problem], [(name, sizes) for name in COMPARED] + [("least_squares", RunSizes.of(problem))])


def compare_trial(spec, seed):
    """One trial of the comparison (see the module docstring).

    Parameters
    ----------
    spec : CompareSpec
        ``regime`` (a key of :data:`REGIMES`) and the base problem ``m, n, d, k, sigma,
        separation`` (its :attr:`~CompareSpec.problem`, :func:`spec_of`), ``n_rounds`` (most
        rounds of every iterative phase) and ``n_inits`` (random starts per method).
    seed : numpy.random.SeedSequence
        Spawns three streams: the data, the starts, the methods' own randomness.

    Returns
    -------
    dict of scalars
        ``<method>_<metric>`` for every method of :data:`METHODS` and metric of :data:`METRICS`,
        and the problem's summary (``N``, ``realised_separation``, ``snr``, ``n_min``, ``n_max``,
        ``p_min_realised``, ``foreign_fraction``: the fraction of rows not from their client's
        main cluster).
    """
    data_ss, init_ss, method_ss = seed.spawn(3)
    problem = spec.problem.generate(np.random.default_rng(data_ss))
    T, n_inits = spec.n_rounds, spec.n_inits
    k, d = problem.k, problem.d
    scale = data_scales(problem)[1]
    tol = TOL * scale
    starts = np.random.default_rng(init_ss).standard_normal((n_inits, k, d)) * (scale / np.sqrt(d))
    steps = np.asarray(STEPS)
    init = np.repeat(starts, steps.size, axis=0)  # replica = (start, step), step fastest
    eta = np.tile(steps, n_inits)
    rows = problem.row_labels
    summary = problem.summary()
    out = dict(N=summary["N"], realised_separation=summary["separation"], snr=summary["snr"], n_min=summary["n_min"],
               n_max=summary["n_max"], p_min_realised=summary["p_min"],
               foreign_fraction=float(np.mean(rows != np.repeat(problem.labels, problem.sizes))))

    n_min = int(problem.sizes.min())
    for name in COMPARED:
        unmet = unmet_precondition(name, d=d, k=k, n_min=n_min)
        out.update(_refusable(name, lambda seed_of_method: _run_method(
            name, problem, init, eta, T, tol, seed_of_method), method_ss.spawn(1)[0], unmet=unmet))
    out.update(_references(problem, starts, steps, T, tol, method_ss.spawn(1)[0]))
    # the variants' streams come after every other method's, which are unchanged by them
    out.update(_refusable("fesem_paper", lambda seed_of_method: _fesem_paper(
        problem, n_inits, steps, eta, T, tol, seed_of_method), method_ss.spawn(1)[0]))
    return out


def _refusable(name, run, seed, *, unmet=None):
    """``run(seed)``'s record of method ``name`` with ``<name>_refused`` empty, or blank metrics
    and the one-line reason when the method refuses the problem: a precondition of its settings
    that the problem's sizes do not meet (``unmet``, :func:`mixreg.algorithms.unmet_precondition`;
    then it is not run), or a refusal of the drawn data (e.g. PACFL's p > n_i)."""
    if unmet is not None:
        out = _prefixed(name, _blank())
        out[f"{name}_refused"] = str(unmet)
        return out
    try:
        out = run(seed)
        out[f"{name}_refused"] = ""
    except ProblemRefused as exc:
        out = _prefixed(name, _blank())
        out[f"{name}_refused"] = str(exc).splitlines()[0]
    return out


def _fesem_paper(problem, n_inits, steps, eta, T, tol, seed):
    """FeSEM from its paper's start: ``n_inits`` k-means starts of the warm-start local models
    (:func:`mixreg.algorithms.fesem.initial_centres`, each the best of 20), each run with every
    step size, chosen and rerun as every method is."""
    starts = initial_centres(problem, n_inits, rng=np.random.default_rng(seed))
    init = np.repeat(starts, steps.size, axis=0)  # replica = (start, step), step fastest
    return _run_method("fesem", problem, init, eta, T, tol, seed, label="fesem_paper")


def _run_method(name, problem, init, eta, T, tol, seed, *, errors=None, label=None):
    """Run method ``name`` on every replica for ``T`` rounds, choose by training loss, and rerun
    the chosen replica alone with the tolerance to count its rounds to convergence (the batched
    call runs as long as its slowest replica).  The record's columns are ``<label>_<metric>``,
    ``label`` defaulting to ``name`` (a variant or reference point run by a registered driver)."""
    alg = get_algorithm(name)
    rng = (lambda: np.random.default_rng(seed)) if alg.uses_rng else (lambda: None)
    res = alg.run(problem, init, eta, n_rounds=T, rng=rng())
    b = res.best_replica()
    alone = None if b is None else alg.run(problem, init[b : b + 1], eta[b], n_rounds=T, rng=rng(), tol=tol)
    return _record(label or name, problem, res, alone, alg.communication, errors=errors)


def _prefixed(name, values):
    return {f"{name}_{key}": value for key, value in values.items()}


def _blank():
    return {key: float("nan") for key in METRICS}


def _record(name, problem, res, alone, communication, *, errors=None):
    """The metrics of the replica ``res`` chooses (its lowest training loss), all read from
    ``alone``, that replica rerun by itself with the tolerance: its estimate, labels, rounds and
    communication come from one trajectory.  ``time`` and ``diverged`` are the batched call's."""
    values = _blank()
    values.update(time=float(res.wall_time), diverged=float(res.diverged.mean()))
    b = res.best_replica()
    if b is None or alone.diverged[0]:  # every replica diverged: nothing to report, never a success
        return _prefixed(name, values)
    values.update(rounds=int(alone.n_rounds), converged=bool(alone.stop_reason.startswith("converged")),
                  step=float(res.step_sizes[b]))
    if communication is not None:
        values["upload"], values["download"] = communication(problem, alone, 0)
    res, b = alone, 0
    theta = res.theta[b]
    if errors is not None:
        values["err_mean"], values["err_max"] = errors(theta)
    else:
        values["err_mean"] = float(matched_mean_distance(theta, problem.theta_star))
        values["err_max"] = float(matched_max_distance(theta, problem.theta_star))
    if res.theta.shape[1] == 1:  # one model (global FedAvg): no clustering to score
        return _prefixed(name, values)
    k = max(problem.k, res.theta.shape[1])
    values["mis_clients"] = float(misclustering_rate(res.assignments[b], problem.labels, k))
    points = getattr(res, "point_assignments", None)
    points = np.repeat(res.assignments[b], problem.sizes) if points is None else points[b]
    values["mis_points"] = float(misclustering_rate(points, problem.row_labels, k))
    return _prefixed(name, values)


def _references(problem, starts, steps, T, tol, seed):
    """Global FedAvg, local-only models, known-label least squares, IFCA from the truth."""
    star = problem.theta_star
    out = {}
    eta = np.tile(steps, starts.shape[0])

    # global FedAvg: the Phase-2 FedAvg(2) driver with one model (k = 1)
    def one_model(theta):
        gaps = np.linalg.norm(theta[0] - star, axis=1)
        return float(gaps.mean()), float(gaps.max())

    out.update(_run_method("fedavg", problem, np.repeat(starts[:, :1], steps.size, axis=0), eta, T, tol, seed,
                           errors=one_model, label="global_fedavg"))

    # local-only: every client's minimum-norm least squares, nothing communicated
    start = time.perf_counter()
    local = local_least_squares(problem.X, problem.y, problem.offsets, method="min_norm")
    gaps = np.linalg.norm(local - star[problem.labels], axis=1)
    per_cluster = np.array([gaps[problem.labels == l].mean() for l in range(problem.k) if (problem.labels == l).any()])
    values = _blank()
    values.update(err_mean=float(per_cluster.mean()), err_max=float(per_cluster.max()), rounds=0, converged=True,
                  upload=0.0, download=0.0, time=time.perf_counter() - start, diverged=0.0)
    out.update(_prefixed("local_only", values))

    # known-label least squares: the oracle that knows every row's cluster
    start = time.perf_counter()
    oracle = known_label_least_squares(problem)
    gaps = np.linalg.norm(oracle - star, axis=1)
    values = _blank()
    values.update(err_mean=float(np.mean(gaps)), err_max=float(np.max(gaps)), mis_clients=0.0, mis_points=0.0,
                  rounds=0, converged=True, upload=np.nan, download=np.nan, time=time.perf_counter() - start,
                  diverged=0.0)
    out.update(_prefixed("known_label_ls", values))

    # IFCA started at the truth, the same step grid
    out.update(_run_method("ifca", problem, np.repeat(star[None], steps.size, axis=0), steps, T, tol, seed,
                           label="ifca_truth"))
    return out
