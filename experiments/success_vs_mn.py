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
import sys

import numpy as np

from experiments import _cli
from experiments._cli import param
from experiments.success_vs_R import FLOP_RATE, check_ifca_protocol, ifca_cell, trial_flops, trial_memory
from mixreg.algorithms.ifca import INIT_METHODS
from mixreg.metrics import oracle_ls_floor
from mixreg.montecarlo import Sweep
from mixreg.plotting import plot_success_heatmap, plot_success_vs_m, save_figure
from mixreg.problems import THETA_PROTOCOLS, ProblemSpec, make_labels
from mixreg.stats import group_rates
from mixreg.theory import (
    crossing_draws,
    draws_interval,
    half_crossing,
    ls_oracle_success_probability,
    ls_points_needed,
)
from mixreg.trials import (
    SUCCESS_RULES,
    ifca_success_levels_trial,
    ifca_success_trial,
    unpack_levels,
)

NAME = "success_vs_mn"
TABLES = ("rates", "theory", "crossings")  # written as <name>.csv; the figures are drawn from them alone
RULES_DRAWN = ("official", "honest", "oracle")
DEFAULT_SEED = 20200604  # IFCA's arXiv submission date, as success_vs_R
REPO = pathlib.Path(__file__).resolve().parent.parent

PREDICTION_TEXT = (
    "known-label least squares on the N pooled points of the smallest cluster (N = m n / k when balanced) "
    "has RMS error sigma sqrt(d / (N - d - 1)) (mixreg.metrics.oracle_ls_floor); where it exceeds the "
    "threshold 0.6 sigma + offset (ls_unlikely), success is improbable even with the true labels, except at "
    "the edge: its probability there is oracle_success_probability (mixreg.theory.ls_oracle_success_probability; "
    "IFCA converges to least squares on its clusters, so it should not do better); as d grows the error "
    "concentrates at its RMS and the edge closes; fixed by (k, m, n, d, sigma, offset) before any run"
)


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag of the command line, named as the field
    (``n_inits`` -> ``--n-inits``), defaulting to the preset's value.
    """

    preset: str = param("quick (default, about 90 s), paper-c (Fig. 3c, k=2), paper-d (Fig. 3d, k=4)")
    k: int = param("clusters")
    ms: tuple[int, ...] = param("numbers of clients m")
    ns: tuple[int, ...] = param("samples per client n")
    d: int = param("dimension")
    sigma: float = param("noise level sigma")
    rs: tuple[float, ...] = param("separation scales r of the theta* protocol")
    trials: int = param("trials per (r, n, m) cell")
    n_inits: int = param("random initialisations per trial")
    step_sizes: tuple[float, ...] = param("IFCA step sizes, each run from every initialisation")
    n_rounds: int = param("IFCA rounds T")
    dtype: str = param("floating-point type of the data and the runs", choices=("float32", "float64"))
    protocol: str = param("theta* protocol", default="official", choices=THETA_PROTOCOLS)
    init: str = param("initialisation", default="official", choices=INIT_METHODS)
    init_scale: float = param("scale of the random initialisation", default=1.0)
    threshold_offset: float = param("success threshold: distance < 0.6 sigma + this offset (0 in the official "
                                    "m-n sweeps)", default=0.0)
    shared_draws: bool = param("run the separation scales r of a trial on ONE draw of X, the Bernoulli pattern b "
                               "of theta* = r b and the noise, as one batch: the official code's protocol and the "
                               "paper presets' (the r curves are then paired); off: an independent draw per r",
                               default=False)

    def validate(self):
        """Raise ``ValueError`` naming the first bad option and its allowed range."""
        for name in ("k", "d", "trials", "n_inits", "n_rounds"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("ms", "ns", "rs", "step_sizes"):
            if not getattr(self, name):
                raise ValueError(f"{name} is empty: give at least one value")
        for name in ("ms", "ns"):
            values = getattr(self, name)
            if any(not isinstance(v, (int, np.integer)) or v < 1 for v in values) or len(set(values)) < len(values):
                raise ValueError(f"{name} must be distinct integers >= 1, got {list(values)}")
        if min(self.ms) < self.k:
            raise ValueError(f"every m must be at least k (every cluster needs a client); got k={self.k}, "
                             f"ms={list(self.ms)}")
        if not np.isfinite(self.sigma) or self.sigma < 0:
            raise ValueError(f"sigma must be finite and >= 0, got {self.sigma!r}")
        if any(not np.isfinite(r) or r <= 0 for r in self.rs) or len(set(self.rs)) < len(self.rs):
            raise ValueError(f"rs must be distinct, finite and > 0, got {list(self.rs)}")
        check_ifca_protocol(self)
        return self


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

#: The r each paper preset's figure plots (the paper's Fig. 3(c) at R = 0.1, 3(d) at R = 0.5; the
#: official scripts also run 0.25 and 0.75): its panels are titled as the paper's.
PAPER_R = {"paper-c": 0.1, "paper-d": 0.5}

#: Inside the predicted region, a cell whose predicted oracle success probability is at least this
#: is an edge cell, reported apart from the cells deep inside (where success should be ~0).
EDGE_PROBABILITY = 0.05


def cells_of(config):
    """Grid cells: the problem of every (r, n, m) (a :class:`ProblemSpec`) and IFCA's settings;
    with ``shared_draws``, one cell per (n, m) holding every r (``r_levels``)."""
    def spec(m, n, r):
        return ProblemSpec(m=m, k=config.k, n=n, d=config.d, sigma=float(config.sigma), scale=float(r),
                           protocol=config.protocol, dtype=config.dtype)

    if config.shared_draws:
        return tuple(ifca_cell(config, spec(m, n, 1.0), levels=("r", config.rs)) for n in config.ns for m in config.ms)
    return tuple(ifca_cell(config, spec(m, n, r)) for r in config.rs for n in config.ns for m in config.ms)


def _threshold(config):
    return 0.6 * config.sigma + config.threshold_offset


def predictions(config):
    """The known-label least-squares prediction per (m, n), from the sizes alone (theory.csv).

    Returns
    -------
    list of dict, one per (n, m)
        ``n``, ``m``, ``points_per_cluster`` (``N`` of the smallest cluster),
        ``ls_rms_over_threshold`` (:func:`mixreg.metrics.oracle_ls_floor` over ``0.6 sigma +
        offset``), ``ls_unlikely`` (that ratio exceeds 1: the shaded region),
        ``oracle_success_probability`` (:func:`mixreg.theory.ls_oracle_success_probability`),
        ``m_needed`` (for this n, the m at which the RMS error meets the threshold with
        ``N = m n / k``, :func:`mixreg.theory.ls_points_needed`) and ``status``.
    """
    threshold = _threshold(config)
    rows = []
    for n in sorted(config.ns):
        m_needed = config.k * ls_points_needed(config.sigma, config.d, threshold) / n
        for m in sorted(config.ms):
            sizes = np.bincount(make_labels(m, config.k), minlength=config.k) * n
            rms = float(np.max(oracle_ls_floor(config.sigma, config.d, sizes)))
            ratio = rms / threshold if threshold > 0 else float("inf")
            rows.append(dict(n=int(n), m=int(m), points_per_cluster=int(sizes.min()),
                             ls_rms_over_threshold=float(ratio), ls_unlikely=bool(ratio > 1.0),
                             oracle_success_probability=float(
                                 ls_oracle_success_probability(config.sigma, config.d, sizes, threshold)),
                             m_needed=float(m_needed), status="prediction, fixed before the runs"))
    return rows


def build_sweep(config, root_seed=DEFAULT_SEED):
    config.validate()
    registered = [dict(m=row["m"], n=row["n"], ls_rms_over_threshold=round(row["ls_rms_over_threshold"], 4),
                       ls_unlikely=row["ls_unlikely"],
                       oracle_success_probability=round(row["oracle_success_probability"], 4))
                  for row in predictions(config)]
    return Sweep(
        name=NAME,
        trial_fn=ifca_success_levels_trial if config.shared_draws else ifca_success_trial,
        cells=cells_of(config),
        n_trials=config.trials,
        root_seed=root_seed,
        config=dict(_recorded(config), success_rules=SUCCESS_RULES,
                    predictions=dict(rule=PREDICTION_TEXT, cells=registered)),
        cost_fn=trial_flops,
        memory_fn=trial_memory,
        size_names=_cli.config_flags("ms", "ns", "d", "k", "n_inits", "step_sizes"),
        flop_rate=FLOP_RATE[config.dtype],
    )


def _recorded(config):
    """The config as the manifest records it: without ``shared_draws`` when it is off, so that a
    sweep run before the option existed keeps its identity (its results directory resumes and
    redraws; a missing field takes its default when read back)."""
    values = dataclasses.asdict(config)
    if not config.shared_draws:
        del values["shared_draws"]
    return values


def summarise(config, records):
    """The figures' tables: rates per (r, n, m), the predictions per (m, n), the 1/2-crossings in m.

    Returns
    -------
    dict
        ``rates``: one row per (r, n, m), see :func:`mixreg.stats.group_rates`.
        ``theory``: :func:`predictions` (no data enter it).
        ``crossings``: one row per (rule, r, n): ``m_half`` (where the rate rises through 1/2,
        log-interpolated in m; empty if it never does within the grid), ``m_half_low`` and
        ``m_half_high`` (its 95% interval from Jeffreys-posterior draws of every cell,
        :func:`mixreg.theory.crossing_draws`: 0 or inf when beyond the grid), ``m_needed``
        (predicted) and ``m_half_over_needed``.

    With ``shared_draws`` each record holds every r of its draw; it is unpacked into one record
    per (trial, r) first (:func:`mixreg.trials.unpack_levels`).
    """
    if config.shared_draws:
        records = unpack_levels(records, config.rs, key="r")
    flags = [f"{rule}_success" for rule in RULES_DRAWN]
    rates = group_rates(records, ("r", "n", "m"), flags, mean_of=("separation", "oracle_floor", "n_diverged"))
    theory = predictions(config)
    needed = {row["n"]: row["m_needed"] for row in theory}
    crossings = []
    for rule in RULES_DRAWN:
        for r in sorted({row["r"] for row in rates}):
            for n in sorted({row["n"] for row in rates}):
                rows = sorted((row for row in rates if row["r"] == r and row["n"] == n), key=lambda row: row["m"])
                m = np.array([row["m"] for row in rows], dtype=float)
                value = half_crossing(m, [row[f"{rule}_success_rate"] for row in rows])
                hits = [round(row[f"{rule}_success_rate"] * row["trials"]) for row in rows]
                draws = crossing_draws(m, hits, [row["trials"] for row in rows], seed=DEFAULT_SEED)
                low, high = draws_interval(draws)
                crossings.append(dict(rule=rule, r=float(r), n=int(n), m_half=None if np.isnan(value) else value,
                                      m_half_low=low, m_half_high=high, m_needed=needed[n],
                                      m_half_over_needed=None if np.isnan(value) else value / needed[n]))
    return {"rates": rates, "theory": theory, "crossings": crossings}


def _prediction_check(rates, theory, paper_r=None):
    """Text: the success rates seen inside the predicted region, per r (the paper's first): the
    highest over the cells deep inside (predicted oracle success probability below
    :data:`EDGE_PROBABILITY`), and each edge cell's rates beside its predicted probability."""
    region = {(row["m"], row["n"]): row["oracle_success_probability"] for row in theory if row["ls_unlikely"]}
    if not region:
        return "The predicted region is empty on this grid."
    deep = {key for key, p in region.items() if p < EDGE_PROBABILITY}
    edge = sorted((key for key in region if key not in deep), key=lambda key: (key[1], key[0]))
    rs = sorted({row["r"] for row in rates}, key=lambda r: (paper_r is None or not np.isclose(r, paper_r), r))

    def seen(row):
        return ", ".join(f"{rule} {row[f'{rule}_success_rate']:.2g}" for rule in RULES_DRAWN)

    parts = []
    for r in rs:
        at = {(row["m"], row["n"]): row for row in rates if row["r"] == r}
        pieces = []
        inside = [at[key] for key in deep if key in at]
        if inside:
            highest = {f"{rule}_success_rate": max(row[f"{rule}_success_rate"] for row in inside) for rule in RULES_DRAWN}
            pieces.append(f"{len(inside)} cells deep inside (predicted oracle success < {EDGE_PROBABILITY:g}), "
                          f"highest {seen(highest)}")
        pieces += [f"edge cell (m, n) = ({m}, {n}), predicted oracle {region[m, n]:.2g}: {seen(at[m, n])}"
                   for m, n in edge if (m, n) in at]
        mark = " (the paper's)" if paper_r is not None and np.isclose(r, paper_r) else ""
        parts.append(f"r = {r:g}{mark}: " + "; ".join(pieces))
    return "Seen inside it: " + ". ".join(parts) + "."


def _crossing_text(row, rates):
    """The official rule's 1/2-crossing in m, or where it lies when the grid does not hold it."""
    if row["m_half"] is not None and np.isfinite(row["m_half"]):
        return _fmt(row["m_half"])
    curve = sorted((r_ for r_ in rates if r_["r"] == row["r"] and r_["n"] == row["n"]), key=lambda r_: r_["m"])
    if curve and curve[0]["official_success_rate"] >= 0.5:
        return f"below the grid (rate {curve[0]['official_success_rate']:.2g} at m = {curve[0]['m']})"
    return f"beyond the grid (rate {curve[-1]['official_success_rate']:.2g} at m = {curve[-1]['m']})" if curve else "–"


def _fmt(value):
    return "–" if value is None or not np.isfinite(value) else f"{value:.3g}"


def draw(config, tables, outdir):
    """The two figures, from the tables of :func:`summarise` only; returns the paths written."""
    rates, theory, crossings = tables["rates"], tables["theory"], tables["crossings"]
    setup = (f"{config.preset}: k={config.k}, d={config.d}, sigma={config.sigma:g}, T={config.n_rounds}, "
             f"{config.n_inits} inits x step sizes {list(config.step_sizes)}, {config.trials} trials per point, "
             f"{config.dtype}; theta* protocol '{config.protocol}' (r per coordinate, Δ ≈ r √(d/2)), init "
             f"'{config.init}'. Success: distance < 0.6 sigma"
             + (f" + {config.threshold_offset:g}." if config.threshold_offset else " (strict, no offset: the official "
                                                                               "m-n sweeps)."))
    offset = f" + {config.threshold_offset:g}" if config.threshold_offset else ""
    paper_r = PAPER_R.get(config.preset)
    shading = (f"Shaded / hatched: PREDICTION made from the sizes before the runs: known-label LS RMS error "
               f"σ√(d/(N−d−1)) > 0.6σ{offset} with N = "
               f"m n / k, i.e. m below m_needed(n) = k (d + 1 + d σ²/t²) / n (dotted). "
               + _prediction_check(rates, theory, paper_r))
    official = [row for row in crossings if row["rule"] == "official"]
    half = "; ".join(f"r={row['r']:g}, n={row['n']}: {_crossing_text(row, rates)} (needed {row['m_needed']:.3g})"
                     for row in official)
    footnote = f"{setup} {shading} Official rule crosses 1/2 at m = {half}."
    title = (f"IFCA success probability vs clients m and points per client n (k = {config.k}, d = {config.d}, "
             f"σ = {config.sigma:g})")
    fig = plot_success_vs_m(rates, theory, rules=RULES_DRAWN, paper_r=paper_r, title=title, footnote=footnote)
    paths = save_figure(fig, pathlib.Path(outdir) / NAME)
    fig = plot_success_heatmap(rates, theory, rules=RULES_DRAWN, paper_r=paper_r, title=title,
                               footnote=f"{setup} {shading}")
    return paths + save_figure(fig, pathlib.Path(outdir) / f"{NAME}_heatmap")


build_parser, config_from_args, main = _cli.entry_points(
    __name__, paper_presets=("paper-c", "paper-d"),
    description="IFCA success probability against the number of clients and points per client, with the "
                "known-label least-squares prediction of where success is out of reach.")


if __name__ == "__main__":
    sys.exit(main())
