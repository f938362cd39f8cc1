"""IFCA success probability against the number of clients m and points per client n (IFCA paper,
Fig. 3(c)/(d)), with the known-label least-squares prediction of where success is out of reach.

Run ``python -m experiments.success_vs_mn`` for the quick default (k = 2, d = 50, about a minute and
a half on two cores), or ``--preset paper-c`` / ``--preset paper-d`` for the official code's grids
(``run_p2_m_n.py`` and ``run_p4_m_n.py``: d = 1000, sigma = 0.1, 40 trials, best of 10 inits x 3
step sizes, 300 rounds, float32, success ``distance < 0.6 sigma`` strictly, no offset), which pair
the two r of a trial on one draw as the official code does (``--shared-draws``: X, the pattern b of
theta* = r b and the noise drawn once, both r run as one batch).  Writes into the results
directory (default ``results/success_vs_mn/<preset>``):

* ``trials.csv``: one row per trial (cell parameters, seed, every rule's outcome, distances);
* ``rates.csv``: success rate per (r, n, m) under each rule with 95% Wilson intervals;
* ``theory.csv``: per (m, n), the PREDICTION made from the sizes alone before any run: the
  known-label least-squares RMS error ``sigma sqrt(d / (N - d - 1))`` (``N`` pooled points of the
  smallest cluster, ``m n / k`` when balanced) over the threshold, whether it exceeds it (success
  improbable even with the true labels, except at the edge; impossible as ``d`` grows, where the
  error concentrates at its RMS), the oracle's predicted success probability (the edge cells'
  figure), and for each n the m where the RMS error meets the threshold (the same prediction is
  in the manifest's config, ``predictions``);
* ``crossings.csv``: per (rule, r, n), the m where the success rate rises through 1/2, with the
  interval where its Wilson band's edges reach 1/2, against the predicted ``m_needed``;
* ``manifest.json``: config (with the predictions), root seed, package versions, git commit, times;
* ``success_vs_mn.png`` / ``.pdf``: success against m, one curve per n, one panel per (rule, r),
  the predicted region shaded; ``success_vs_mn_heatmap.png`` / ``.pdf``: the same rates over the
  (m, n) grid, the predicted region hatched.  Both are drawn from the tables alone; ``--redraw
  DIR`` redraws them from a results directory without running anything.

The paper presets also write the figures to ``figures/success_vs_mn*_<preset>.{png,pdf}`` (when the
run is the unchanged preset); quick runs never touch ``figures/``.  Flags: one per field of
:class:`Config`, named as the field (``--ms``, ``--ns``, ``--rs``, ``--n-inits``, ...), see ``--help``.
"""

from __future__ import annotations

import dataclasses
import pathlib

from mixreg.problems import ProblemSpec
from mixreg.study import Study, param

from experiments.success_vs_R import IFCA_SUCCESS_RUNS, IfcaProtocol, ifca_cell
from experiments.success_vs_R.trial import SUCCESS_RULES

from .figures import draw, plot_success_heatmap, plot_success_vs_m
from .summary import (
    DEFAULT_SEED,
    EDGE_PROBABILITY,
    NAME,
    PAPER_R,
    PREDICTION_TEXT,
    PREDICTIONS,
    RULES_DRAWN,
    TABLES,
    predictions,
    summarise,
)

__all__ = ["STUDY", "Config", "PRESETS", "cells_of", "predictions", "summarise", "draw", "NAME", "TABLES",
           "DEFAULT_SEED", "RULES_DRAWN", "PAPER_R", "EDGE_PROBABILITY", "PREDICTION_TEXT", "PREDICTIONS",
           "plot_success_vs_m", "plot_success_heatmap"]

REPO = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(IfcaProtocol):
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag of the command line, named as the field
    (``n_inits`` -> ``--n-inits``), defaulting to the preset's value.
    """

    preset: str = param("quick (default, about 90 s), paper-c (Fig. 3c, k=2), paper-d (Fig. 3d, k=4)")
    k: int = param("clusters", low=1)
    ms: tuple[int, ...] = param("numbers of clients m", low=1, distinct=True, at_least="k",
                                why="every cluster needs a client")
    ns: tuple[int, ...] = param("samples per client n", low=1, distinct=True)
    d: int = param("dimension", low=1)
    sigma: float = param("noise level sigma", low=0)
    rs: tuple[float, ...] = param("separation scales r of the theta* protocol", low=0, low_open=True, distinct=True)
    threshold_offset: float = param("success threshold: distance < 0.6 sigma + this offset (0 in the official "
                                    "m-n sweeps)", default=0.0, low=0)
    shared_draws: bool = param("run the separation scales r of a trial on ONE draw of X, the Bernoulli pattern b "
                               "of theta* = r b and the noise, as one batch: the official code's protocol and the "
                               "paper presets' (the r curves are then paired); off: an independent draw per r",
                               default=False)


# The official grids (run_p2_m_n.py and run_p4_m_n.py of the official code) and our quick default:
# the official protocol on a problem 20 times smaller in d (d = 50, n = 5..20 points per client),
# where the known-label floor crosses the threshold inside the grid for every n, as in panel (c).
PRESETS = {
    "quick": dict(k=2, ms=(10, 20, 30, 40, 60, 80, 120), ns=(5, 10, 20), d=50, sigma=0.1, rs=(0.1, 0.25),
                  trials=16, n_inits=10, step_sizes=(1.0, 0.1, 0.01), n_rounds=300, dtype="float32"),
    "paper-c": dict(k=2, ms=(50, 70, 100, 150, 200, 300, 400), ns=(50, 100, 200), d=1000, sigma=0.1,
                    rs=(0.1, 0.25), trials=40, n_inits=10, step_sizes=(1.0, 0.1, 0.01), n_rounds=300,
                    dtype="float32", shared_draws=True),
    "paper-d": dict(k=4, ms=(100, 200, 300, 400, 800), ns=(50, 100, 200), d=1000, sigma=0.1, rs=(0.5, 0.75),
                    trials=40, n_inits=10, step_sizes=(2.0, 1.0, 0.5), n_rounds=300, dtype="float32",
                    shared_draws=True),
}


def cells_of(config):
    """Grid cells: the problem of every (r, n, m) and IFCA's settings, as
    :class:`~experiments.success_vs_R.trial.IfcaSuccessSpec`; with ``shared_draws``, one cell per
    (n, m) holding every r (``r_levels``)."""
    def spec(m, n, r):
        return ProblemSpec(m=m, k=config.k, n=n, d=config.d, sigma=float(config.sigma), scale=float(r),
                           protocol=config.protocol, dtype=config.dtype)

    if config.shared_draws:
        return tuple(ifca_cell(config, spec(m, n, 1.0), r_levels=config.rs) for n in config.ns for m in config.ms)
    return tuple(ifca_cell(config, spec(m, n, r)) for r in config.rs for n in config.ns for m in config.ms)


def record(config):
    """The config as the manifest records it, with the success rules and the predictions registered
    before any run; without ``shared_draws`` when it is off, so that a sweep run before the option
    existed keeps its identity (its results directory resumes and redraws; a missing field takes
    its default when read back)."""
    values = dataclasses.asdict(config)
    if not config.shared_draws:
        del values["shared_draws"]
    registered = [dict(m=row["m"], n=row["n"], ls_rms_over_threshold=round(row["ls_rms_over_threshold"], 4),
                       ls_unlikely=row["ls_unlikely"],
                       oracle_success_probability=round(row["oracle_success_probability"], 4))
                  for row in predictions(config)]
    return dict(values, success_rules=SUCCESS_RULES, predictions=dict(rule=PREDICTION_TEXT, cells=registered))


STUDY = Study(
    name=NAME,
    command="python -m experiments.success_vs_mn",
    description="IFCA success probability against the number of clients and points per client, with the "
                "known-label least-squares prediction of where success is out of reach.",
    config=Config,
    presets=PRESETS,
    cells=cells_of,
    tables=TABLES,
    summarise=summarise,
    draw=draw,
    root_seed=DEFAULT_SEED,
    **IFCA_SUCCESS_RUNS,
    size_flags=("--ms", "--ns", "--d", "--k", "--n-inits", "--step-sizes"),
    record=record,
    paper_presets=("paper-c", "paper-d"),
    figures_dir=REPO / "figures",
    algorithms=(),  # its trial calls its drivers directly (fingerprinted as imports)
    predictions=PREDICTIONS,  # registered in the manifest before the first trial
)
