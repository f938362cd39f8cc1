"""IFCA success probability against separation (IFCA paper, Fig. 3(a)/(b)), with the theory on it.

Run ``python -m experiments.success_vs_R`` for the quick default (k = 2, a few minutes on two
cores), or ``--preset paper-a`` / ``--preset paper-b`` for the official code's grids.  Writes into
the results directory (default ``results/success_vs_R/<preset>``):

* ``trials.csv``: one row per trial (cell parameters, seed, every rule's outcome, distances);
* ``rates.csv``: success rate per (sigma, r) under each rule with 95% Wilson intervals;
* ``theory.csv``: the theory checked against the data, one statement per row (see
  :func:`summarise`): PREDICTIONS fixed by the config before any run (the known-label
  least-squares error against the threshold and the oracle's success probability; the scale
  suggested by Theorem 1's separation condition with unit constants), the observed
  1/2-crossings with intervals, whether the noise levels' curves collapse on each scale,
  held-out checks of fitted constants (fitted on the other noise levels, residual on the
  held-out one) and an exact test of whether the noise levels differ at all; a statement the
  grid cannot support (a crossing with one r value or k = 1, a collapse or a fit with one noise
  level) has blank numbers and its ``reason``, naming the flag;
* ``manifest.json``: config, root seed, package versions, git commit, times;
* ``success_vs_R.png`` and ``.pdf``: success against the separation per rule (the oracle
  ceiling only where it is not 1 everywhere); ``success_vs_R_collapse.png`` and ``.pdf``: the
  curves of every noise level on the two predicted scales, and the 1/2-crossings against sigma
  with the held-out predictions.  Both are drawn from ``rates.csv`` and ``theory.csv`` alone;
  ``--redraw DIR`` redraws them from a results directory without running anything.  A figure
  the grid cannot give is named in one line (``success_vs_R_collapse not drawn: ...`` with one
  r value; both with k = 1, which has no separation) and the run still exits 0 with its tables.

The runs use random initialisation and no resampling, as the paper's experiment: Theorem 1's
Assumption 1 (initialisation within Delta/4) and its fresh samples do not hold, so no line on the
figures is labelled as the theorem's; its separation condition only suggests a scale, which is
tested.  The paper presets also write the figures to ``figures/success_vs_R*_<preset>.{png,pdf}``
(when the run is the unchanged preset); quick runs never touch ``figures/``.

Flags: one per field of :class:`Config`, named as the field (``--n-inits``, ``--n-rounds``,
``--sigmas``, ``--rs``, ``--step-sizes``, ...), see ``--help``.  The flags of earlier versions
``--inits``, ``--rounds``, ``--sigma`` and ``--r`` are removed: they exit with a message naming
the new flag.
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

from mixreg.algorithms.ifca import INIT_METHODS
from mixreg.problems import THETA_PROTOCOLS, ProblemSpec
from mixreg.study import Spec, Study, param

from .figures import draw, plot_success_collapse, plot_success_vs_separation
from .summary import CHECKED_RULES, DEFAULT_SEED, NAME, TABLES, THEORY_COLUMNS, predictions, summarise
from .trial import (
    COLUMNS,
    SUCCESS_RULES,
    IfcaSuccessSpec,
    ifca_success_levels_trial,
    ifca_success_trial,
    unpack_levels,
)

__all__ = ["STUDY", "IFCA_SUCCESS_RUNS", "Config", "PRESETS", "IfcaSuccessSpec", "cells_of", "ifca_cell",
           "trial_flops", "trial_memory", "summarise", "predictions", "draw", "NAME", "TABLES", "DEFAULT_SEED",
           "COLUMNS", "SUCCESS_RULES", "THEORY_COLUMNS", "CHECKED_RULES", "ifca_success_trial",
           "ifca_success_levels_trial", "unpack_levels", "plot_success_vs_separation", "plot_success_collapse"]

REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, kw_only=True)
class IfcaProtocol(Spec):
    """IFCA's settings shared by the success studies (``success_vs_R``, ``success_vs_mn``): what
    :func:`.trial.ifca_success_trial` reads besides the problem.  Each field is a flag, named
    as the field (``n_inits`` -> ``--n-inits``), defaulting to the preset's value."""

    trials: int = param("trials per cell", low=1)
    n_inits: int = param("random initialisations per trial", low=1, renamed_from="--inits")
    step_sizes: tuple[float, ...] = param("IFCA step sizes, each run from every initialisation", low=0,
                                          low_open=True)
    n_rounds: int = param("IFCA rounds T", low=1, renamed_from="--rounds")
    dtype: str = param("floating-point type of the data and the runs", choices=("float32", "float64"))
    protocol: str = param("theta* protocol", default="official", choices=THETA_PROTOCOLS)
    init: str = param("initialisation", default="official", choices=INIT_METHODS)
    init_scale: float = param("scale of the random initialisation", default=1.0, low=0, low_open=True)
    threshold_offset: float = param("success threshold: distance < 0.6 sigma + this offset", default=0.001,
                                    low=0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(IfcaProtocol):
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag of the command line, named as the field
    (``n_inits`` -> ``--n-inits``), defaulting to the preset's value.
    """

    preset: str = param("quick (default, minutes), paper-a (Fig. 3a, k=2), paper-b (Fig. 3b, k=4)")
    k: int = param("clusters", low=1, at_most="m", why="every cluster needs a client")
    m: int = param("clients", low=1)
    n: int = param("samples per client", low=1)
    d: int = param("dimension", low=1)
    sigmas: tuple[float, ...] = param("noise levels sigma", low=0, distinct=True, renamed_from="--sigma")
    rs: tuple[float, ...] = param("separation scales r of the theta* protocol", low=0, low_open=True,
                                  distinct=True, renamed_from="--r")
    shared_draws: bool = param("run the noise levels of a trial on ONE draw of X, theta* and the noise (the noise "
                               "scaled by each sigma), as one batch: the official code's protocol and the paper "
                               "presets' (the sigma curves are then paired); off: an independent draw per sigma",
                               default=False)


# The official grids (run_p2_r_noise.py and run_p4_r_noise.py of the official code) and our quick
# default: the official protocol (theta* coordinates 0 or r, Bernoulli{0,1} inits, step sizes
# {1, 0.1, 0.01}, 300 rounds, best of 10 inits) on a smaller problem with few points per client
# (n = 20 < d = 200), where random initialisation fails at small separation and succeeds at large
# separation within the grid.  The known-label floor is 0.5 sigma there, as in the paper's panel (a).
PRESETS = {
    "quick": dict(k=2, m=100, n=20, d=200, sigmas=(0.0, 0.5, 1.0), rs=(0.03, 0.1, 0.2, 0.3, 0.5),
                  trials=16, n_inits=10, step_sizes=(1.0, 0.1, 0.01), n_rounds=300, dtype="float64"),
    "paper-a": dict(k=2, m=100, n=100, d=1000, sigmas=(0.0, 0.1, 0.2, 0.4), rs=(0.1, 0.25, 0.5, 0.75, 1.0),
                    trials=40, n_inits=10, step_sizes=(1.0, 0.1, 0.01), n_rounds=300, dtype="float32",
                    shared_draws=True),
    "paper-b": dict(k=4, m=400, n=100, d=1000, sigmas=(0.0, 0.1, 0.2, 0.4), rs=(0.1, 0.25, 0.5, 0.75, 1.0),
                    trials=40, n_inits=10, step_sizes=(2.0, 1.0, 0.5), n_rounds=300, dtype="float32",
                    shared_draws=True),
}


def cells_of(config):
    """Grid cells: the problem of every (sigma, r) and IFCA's settings, as :class:`IfcaSuccessSpec`;
    with ``shared_draws``, one cell per r holding every sigma (``sigma_levels``)."""
    def spec(sigma, r):
        return ProblemSpec(m=config.m, k=config.k, n=config.n, d=config.d, sigma=float(sigma), scale=float(r),
                           protocol=config.protocol, dtype=config.dtype)

    if config.shared_draws:
        return tuple(ifca_cell(config, spec(0.0, r), sigma_levels=config.sigmas) for r in config.rs)
    return tuple(ifca_cell(config, spec(sigma, r)) for sigma in config.sigmas for r in config.rs)


def ifca_cell(config, problem, **levels):
    """One cell of an IFCA success study (also ``success_vs_mn``'s): the ``problem`` and IFCA's
    settings from ``config``; ``sigma_levels=`` or ``r_levels=`` for levels sharing one draw."""
    levels = {key: tuple(float(v) for v in values) for key, values in levels.items()}
    return IfcaSuccessSpec(problem=problem, n_rounds=config.n_rounds, n_inits=config.n_inits,
                           step_sizes=tuple(float(g) for g in config.step_sizes), init=config.init,
                           init_scale=float(config.init_scale), threshold_offset=float(config.threshold_offset),
                           **levels)


def trial_flops(spec):
    """IFCA's own flop count for one trial: (k + 1) 2 N d per replica-round."""
    pb = spec.problem
    return float((pb.k + 1) * 2 * pb.m * pb.n * pb.d * spec.batch * spec.n_rounds)


def trial_memory(spec):
    """Upper estimate of one trial's peak bytes besides :data:`mixreg.study.TRIAL_OVERHEAD`, from
    its sizes: the draw (``X`` in float64, a cluster's rows copied for the responses, ``X`` in the
    run's dtype: ``(16 + s) N d`` with ``s`` the dtype's size), IFCA's buffers (the predictions
    ``B k N``, the residuals ``B N`` and the per-client gradients ``m B d``, in the dtype; option I
    holds the last two for a block of clients at a time, so they are bounded here).  Measured
    peaks of first trials in fresh processes at d = 1000 (N from 2.5e3 to 1.6e5, k = 2 and 4,
    float32 and float64, compilation included, the overhead included) were 0.4 to 0.7 times the
    total."""
    pb, B = spec.problem, spec.batch
    N = pb.m * pb.n
    size = np.dtype(pb.dtype).itemsize
    return float((16 + size) * N * pb.d + size * (B * pb.k * N + B * N + pb.m * B * pb.d))


#: Flop/s of one single-threaded worker running IFCA trials, per dtype, for the time estimate:
#: the benchmark's replica-round at the official sizes in the paper presets' batches under
#: OpenBLAS's Haswell (AVX2) kernels (``python -m experiments.bench_ifca``: 65 to 81 GFLOP/s in
#: float32 at B = 60 and 120, 45 to 61 at B = 30; 34 to 37 in float64 at B = 30).  Under the
#: SkylakeX (AVX-512) kernels the same benchmark gives 118 to 160 GFLOP/s at B = 60 and 120, and
#: paper-a's timed rerun ran at 1.5e11 per worker counting every replica's rounds (compaction
#: drops the diverged ones), so there the estimate is about twice too long.  Small problems run
#: slower (the quick presets at d = 50 to 200 take about 3 times their estimate): an order of
#: magnitude.
FLOP_RATE = {"float32": 6e10, "float64": 3e10}


def _trial_of(config):
    return ifca_success_levels_trial if config.shared_draws else ifca_success_trial


#: What the IFCA success studies (this one and ``success_vs_mn``) share of their :class:`Study`:
#: the trial (levels of one draw with ``shared_draws``), its typed cell, flops, memory and speed.
IFCA_SUCCESS_RUNS = dict(trial_of=_trial_of, spec_type=IfcaSuccessSpec, cost=trial_flops, memory=trial_memory,
                         flop_rate=lambda config: FLOP_RATE[config.dtype])

STUDY = Study(
    name=NAME,
    command="python -m experiments.success_vs_R",
    description="IFCA success probability against separation, with the theory drawn on it.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    **IFCA_SUCCESS_RUNS,
    size_flags=("--m", "--n", "--d", "--k", "--n-inits", "--step-sizes"),
    record=lambda config: {**dataclasses.asdict(config), "success_rules": SUCCESS_RULES},
    paper_presets=("paper-a", "paper-b"),
    figures_dir=REPO / "figures",
    algorithms=(),  # its trial calls its drivers directly (fingerprinted as imports)
)
