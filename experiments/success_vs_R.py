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
import sys

import numpy as np

from experiments import _cli
from experiments._cli import param
from mixreg.montecarlo import Sweep
from mixreg.metrics import oracle_ls_floor
from mixreg.plotting import not_drawn, plot_success_collapse, plot_success_vs_separation, save_figure
from mixreg.problems import THETA_PROTOCOLS, ProblemSpec, make_labels
from mixreg.algorithms import TRIAL_OVERHEAD
from mixreg.algorithms.ifca import INIT_METHODS
from mixreg.stats import group_rates, wilson_interval
from mixreg.theory import (
    crossing_draws,
    draws_interval,
    half_crossing,
    held_out_constant,
    ifca_separation_threshold,
    ls_oracle_success_probability,
    stratified_homogeneity_test,
)
from mixreg.trials import (
    IFCA_LEVELS_CELLS,
    IFCA_SCALE_LEVELS_CELLS,
    IFCA_SUCCESS_CELLS,
    SUCCESS_RULES,
    ifca_success_levels_trial,
    ifca_success_trial,
    unpack_levels,
)

NAME = "success_vs_R"
TABLES = ("rates", "theory")  # written as <name>.csv; the figure is drawn from them alone
DEFAULT_SEED = 20200604  # IFCA's arXiv submission date; any fixed integer would do
REPO = pathlib.Path(__file__).resolve().parent.parent


def check_ifca_protocol(config):
    """Raise ``ValueError`` naming the first bad field of the IFCA protocol shared by the success
    experiments (``step_sizes``, ``dtype``, ``protocol``, ``init``, ``init_scale``,
    ``threshold_offset``: what :func:`mixreg.trials.ifca_success_trial` reads besides the problem)."""
    if any(not np.isfinite(g) or g <= 0 for g in config.step_sizes):
        raise ValueError(f"step_sizes must be finite and > 0, got {list(config.step_sizes)}")
    if config.dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {config.dtype!r}")
    if config.protocol not in THETA_PROTOCOLS:
        raise ValueError(f"protocol must be one of {', '.join(THETA_PROTOCOLS)}; got {config.protocol!r}")
    if config.init not in INIT_METHODS:
        raise ValueError(f"init must be one of {', '.join(INIT_METHODS)}; got {config.init!r}")
    if not np.isfinite(config.init_scale) or config.init_scale <= 0:
        raise ValueError(f"init_scale must be finite and > 0, got {config.init_scale!r}")
    if not np.isfinite(config.threshold_offset) or config.threshold_offset < 0:
        raise ValueError(f"threshold_offset must be finite and >= 0, got {config.threshold_offset!r}")


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything that defines the sweep (what the manifest records and a resume compares).

    Each field but ``preset`` is a flag of the command line, named as the field
    (``n_inits`` -> ``--n-inits``), defaulting to the preset's value.
    """

    preset: str = param("quick (default, minutes), paper-a (Fig. 3a, k=2), paper-b (Fig. 3b, k=4)")
    k: int = param("clusters")
    m: int = param("clients")
    n: int = param("samples per client")
    d: int = param("dimension")
    sigmas: tuple[float, ...] = param("noise levels sigma", renamed_from="--sigma")
    rs: tuple[float, ...] = param("separation scales r of the theta* protocol", renamed_from="--r")
    trials: int = param("trials per (sigma, r) cell")
    n_inits: int = param("random initialisations per trial", renamed_from="--inits")
    step_sizes: tuple[float, ...] = param("IFCA step sizes, each run from every initialisation")
    n_rounds: int = param("IFCA rounds T", renamed_from="--rounds")
    dtype: str = param("floating-point type of the data and the runs", choices=("float32", "float64"))
    protocol: str = param("theta* protocol", default="official", choices=THETA_PROTOCOLS)
    init: str = param("initialisation", default="official", choices=INIT_METHODS)
    init_scale: float = param("scale of the random initialisation", default=1.0)
    threshold_offset: float = param("success threshold: distance < 0.6 sigma + this offset", default=0.001)
    shared_draws: bool = param("run the noise levels of a trial on ONE draw of X, theta* and the noise (the noise "
                               "scaled by each sigma), as one batch: the official code's protocol and the paper "
                               "presets' (the sigma curves are then paired); off: an independent draw per sigma",
                               default=False)

    def validate(self):
        """Raise ``ValueError`` naming the first bad option and its allowed range."""
        for name in ("k", "m", "n", "d", "trials", "n_inits", "n_rounds"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.k > self.m:
            raise ValueError(f"k must be at most m (every cluster needs a client); got k={self.k}, m={self.m}")
        if not self.sigmas:
            raise ValueError("sigmas is empty: give at least one noise level")
        if not self.rs:
            raise ValueError("rs is empty: give at least one separation scale")
        if not self.step_sizes:
            raise ValueError("step_sizes is empty: give at least one step size")
        if any(not np.isfinite(s) or s < 0 for s in self.sigmas):
            raise ValueError(f"sigmas must be finite and >= 0, got {list(self.sigmas)}")
        if self.shared_draws and len(set(self.sigmas)) < len(self.sigmas):
            raise ValueError(f"sigmas must be distinct with shared_draws, got {list(self.sigmas)}")
        if any(not np.isfinite(r) or r <= 0 for r in self.rs):
            raise ValueError(f"rs must be finite and > 0, got {list(self.rs)}")
        for name in ("sigmas", "rs"):  # a repeated value would be a repeated cell
            values = getattr(self, name)
            if len(set(values)) < len(values):
                raise ValueError(f"{name} must be distinct, got {list(values)}")
        check_ifca_protocol(self)
        return self


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


#: trials.csv's column order of the cell parameters (the order results directories were written in).
COLUMNS = ("k", "m", "n", "d", "protocol", "n_rounds", "n_inits", "step_sizes", "init", "init_scale",
           "threshold_offset", "dtype", "sigma", "r")


def cells_of(config):
    """Grid cells: the problem of every (sigma, r) (a :class:`ProblemSpec`) and IFCA's settings;
    with ``shared_draws``, one cell per r holding every sigma (``sigma_levels``)."""
    def spec(sigma, r):
        return ProblemSpec(m=config.m, k=config.k, n=config.n, d=config.d, sigma=float(sigma), scale=float(r),
                           protocol=config.protocol, dtype=config.dtype)

    if config.shared_draws:
        return tuple(ifca_cell(config, spec(0.0, r), levels=("sigma", config.sigmas)) for r in config.rs)
    return tuple(ifca_cell(config, spec(sigma, r)) for sigma in config.sigmas for r in config.rs)


#: The problem schema of a cell whose levels of this parameter share one draw.
_LEVEL_SCHEMAS = {"sigma": IFCA_LEVELS_CELLS, "r": IFCA_SCALE_LEVELS_CELLS}


def ifca_cell(config, spec, levels=None):
    """One cell of an IFCA success sweep (also :mod:`experiments.success_vs_mn`'s): the problem
    ``spec`` and IFCA's settings from ``config``, keyed in ``trials.csv``'s column order
    (:data:`COLUMNS`).  ``levels=(key, values)``, ``key`` ``"sigma"`` or ``"r"``: a cell whose
    levels of that parameter share one draw, holding ``<key>_levels`` in place of ``key``."""
    cell = {**spec.to_cell(IFCA_SUCCESS_CELLS if levels is None else _LEVEL_SCHEMAS[levels[0]]),
            "n_rounds": config.n_rounds, "n_inits": config.n_inits,
            "step_sizes": tuple(float(g) for g in config.step_sizes), "init": config.init,
            "init_scale": float(config.init_scale), "threshold_offset": float(config.threshold_offset)}
    columns = COLUMNS
    if levels is not None:
        key, values = levels
        cell[f"{key}_levels"] = tuple(float(v) for v in values)
        columns = tuple(column for column in COLUMNS if column != key) + (f"{key}_levels",)
    return {column: cell[column] for column in columns}


def _batch(cell):
    """Replicas of one trial's batch: inits x step sizes x the levels of its one draw."""
    levels = cell.get("sigma_levels", cell.get("r_levels", (None,)))
    return cell["n_inits"] * len(cell["step_sizes"]) * len(levels)


def trial_flops(cell):
    """IFCA's own flop count for one trial: (k + 1) 2 N d per replica-round."""
    return float((cell["k"] + 1) * 2 * cell["m"] * cell["n"] * cell["d"] * _batch(cell) * cell["n_rounds"])


def trial_memory(cell):
    """Upper estimate of one trial's peak bytes, from its sizes: the draw (``X`` in float64, a
    cluster's rows copied for the responses, ``X`` in the run's dtype: ``(16 + s) N d`` with
    ``s`` the dtype's size), IFCA's buffers (the predictions ``B k N``, the residuals ``B N``
    and the per-client gradients ``m B d``, in the dtype; option I holds the last two for a
    block of clients at a time, so they are bounded here) and :data:`TRIAL_OVERHEAD`.
    Measured peaks of first trials in fresh processes at d = 1000 (N from 2.5e3 to 1.6e5,
    k = 2 and 4, float32 and float64, compilation included) were 0.4 to 0.7 times this."""
    N, d, B = cell["m"] * cell["n"], cell["d"], _batch(cell)
    size = np.dtype(cell["dtype"]).itemsize
    return TRIAL_OVERHEAD + float((16 + size) * N * d + size * (B * cell["k"] * N + B * N + cell["m"] * B * d))




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


#: The flags that set a trial's memory (a refusal for memory names them).
SIZE_FLAGS = _cli.config_flags("m", "n", "d", "k", "n_inits", "step_sizes")


def build_sweep(config, root_seed=DEFAULT_SEED):
    config.validate()
    return Sweep(
        name=NAME,
        trial_fn=ifca_success_levels_trial if config.shared_draws else ifca_success_trial,
        cells=cells_of(config),
        n_trials=config.trials,
        root_seed=root_seed,
        config=dict(dataclasses.asdict(config), success_rules=SUCCESS_RULES),
        cost_fn=trial_flops,
        memory_fn=trial_memory,
        size_names=SIZE_FLAGS,
        flop_rate=FLOP_RATE[config.dtype],
    )


#: theory.csv: one row per statement, in long form (every row has these columns).
THEORY_COLUMNS = ("kind", "quantity", "rule", "sigma", "r", "value", "low", "high", "residual", "p_value",
                  "verdict", "label", "reason")
CHECKED_RULES = ("official", "honest")  # the rules whose curves are tested and drawn
N_PERMUTATIONS = 20000  # draws of the exact test that the noise levels differ (fixed seed)
N_DRAWS = 4000  # posterior draws per curve for the crossings' intervals (fixed seeds)
SEPARATION_SCALE_LABEL = ("scale suggested by Thm 1's separation condition, unit constants, n' = n "
                          "(outside its assumptions: random init, no resampling)")


def _row(kind, quantity, value, **fields):
    """One row of theory.csv; numbers as plain floats (a NumPy scalar would be written as its repr).

    A row with a ``reason`` is a statement the run cannot support (one separation, one cluster,
    one noise level): its numbers that could not be computed are blank, and ``reason`` says why,
    naming the flag.
    """
    row = dict.fromkeys(THEORY_COLUMNS)
    row.update(kind=kind, quantity=quantity, value=value, label="")
    row.update(fields)
    for key in ("sigma", "r", "value", "low", "high", "residual", "p_value"):
        if row[key] is not None:
            row[key] = float(row[key])
            if row["reason"] and np.isnan(row[key]):
                row[key] = None
    return row


def _flag(name, values):
    """The flag that gave ``values``, as the user typed it: ``--rs 0.3 1``."""
    return f"--{name} " + " ".join(f"{v:g}" for v in values)


def _no_crossing_reason(config, n_separations):
    """Why no 1/2-crossing can be located on a curve with ``n_separations`` points of Δ > 0 (None: one can)."""
    if n_separations >= 2:
        return None
    if config.k == 1:
        return "--k 1: one cluster has no separation Δ, so no crossing in Δ"
    if len(config.rs) < 2:
        return f"a 1/2-crossing needs the rate at two separations or more; got {_flag('rs', config.rs)}"
    return (f"a 1/2-crossing needs the rate at two separations or more; {n_separations} r of "
            f"{_flag('rs', config.rs)} recorded a separation Δ > 0")


def _cluster_sizes(config):
    """Pooled points per cluster: the library's balanced contiguous labels times n."""
    return np.bincount(make_labels(config.m, config.k), minlength=config.k) * config.n


def predictions(config):
    """What the theory says before any run, per noise level (rows of theory.csv, kind "prediction").

    * ``ls_rms_over_threshold``: the known-label least-squares RMS error
      ``sigma sqrt(d / (N - d - 1))`` over the threshold ``0.6 sigma + offset`` (above 1: success
      unlikely for any method, see :func:`mixreg.theory.ls_points_needed`);
    * ``oracle_success_probability``: the oracle rule's success probability,
      :func:`mixreg.theory.ls_oracle_success_probability`;
    * ``separation_scale``: the root of Theorem 1's separation condition with unit constants and
      ``n' = n`` (:func:`mixreg.theory.ifca_separation_threshold`), the x-scale of the collapse
      panel.  The runs use random initialisation and no resampling, so Theorem 1's Assumption 1
      fails: the scale is a candidate to test, not a consequence of the theorem.
    """
    sizes = _cluster_sizes(config)
    p = float(sizes.min()) / (config.m * config.n)
    rows = []
    for sigma in sorted(config.sigmas):
        threshold = 0.6 * sigma + config.threshold_offset
        rms = float(np.mean(oracle_ls_floor(sigma, config.d, sizes)))
        rows.append(_row("prediction", "ls_rms_over_threshold", rms / threshold, rule="oracle", sigma=sigma,
                         label=f"known-label LS RMS error σ√(d/(N−d−1)) = {rms:.3g} (N = {int(sizes.min())} per "
                               f"cluster) over the threshold 0.6σ + {config.threshold_offset:g}; fixed by the "
                               "sizes before the runs"))
        prob = ls_oracle_success_probability(sigma, config.d, sizes, threshold)
        rows.append(_row("prediction", "oracle_success_probability", prob, rule="oracle", sigma=sigma,
                         label="known-label LS meets the threshold: probability from the exact error moments, "
                               "fixed by the sizes before the runs"))
        sep = ifca_separation_threshold(sigma, p, config.d, config.m, config.n)
        rows.append(_row("prediction", "separation_scale", sep, sigma=sigma, label=SEPARATION_SCALE_LABEL))
    return rows


def _verdict_of_collapse(crossings):
    """Whether the 1/2-crossings of all noise levels can be one point: their intervals meet."""
    if not crossings:
        return float("nan"), float("nan"), float("nan"), "undetermined"
    values = [c[0] for c in crossings if np.isfinite(c[0]) and c[0] > 0]
    common_low = max(c[1] for c in crossings)
    common_high = min(c[2] for c in crossings)
    spread = max(values) / min(values) if len(values) >= 2 else float("nan")
    if any(np.isnan(c[1]) or np.isnan(c[2]) for c in crossings) or len(crossings) < 2:
        verdict = "undetermined"
    elif not values:  # every level crosses below (or beyond) the grid: nothing to compare
        verdict = "undetermined (no crossing in the grid)"
    elif common_low <= common_high:
        verdict = "consistent with one curve"
    else:
        verdict = "does not collapse"
    return spread, common_low, common_high, verdict


def summarise(config, records):
    """The figure's tables: success rates per (sigma, r), and the theory checked against them.

    Returns
    -------
    dict
        ``rates``: one row per (sigma, r), see :func:`mixreg.stats.group_rates`.
        ``theory``: one row per statement, columns :data:`THEORY_COLUMNS`; ``kind`` says what
        it is:

        * ``prediction`` (fixed by the config before any run, see :func:`predictions`);
        * ``observation``: ``oracle_success_rate`` per sigma (pooled over r, Wilson interval);
          ``half_crossing`` per rule and sigma (the separation where the rate rises through
          1/2, log-interpolated, with a 95% interval from Jeffreys-posterior draws of every
          cell, :func:`mixreg.theory.crossing_draws`);
          ``half_crossing_scaled`` (the same on the separation-condition scale);
          ``delta_per_r`` (mean realised separation over ``r``, the top axis);
        * ``test``: ``collapse_delta`` and ``collapse_separation_scale`` per rule (``value``
          the spread max/min of the crossings on that scale, ``low``/``high`` the range common
          to all their intervals, ``verdict``: do the curves collapse), and the same over the
          noise levels ``sigma > 0`` only (``..._noisy``: at ``sigma = 0`` the separation
          condition's scale is its exponential term alone);
          ``sigma_homogeneity`` per rule and r, and pooled over r (``r`` empty): the exact
          conditional test that the noise levels share one success probability (``value`` G,
          ``p_value``; with one noise level, one row per rule saying there is nothing to test);
        * ``held_out``: ``noise_term_crossing`` and ``sigma_free_crossing`` per rule and sigma:
          the crossing predicted from a constant fitted on the *other* sigma levels, for the
          model ``Delta_50 = C (sigma/p) sqrt(d/(m n))`` and the model ``Delta_50 = C``
          (``value`` the predicted crossing, ``residual`` ``log10(predicted / observed)``,
          ``low``/``high`` its 95% interval over the draws, ``verdict``: consistent when the
          interval holds 0).

        Every legal run gives both tables: a statement its grid cannot support (a crossing with
        one separation or with ``k = 1``, a collapse or a fit with one noise level) is a row
        whose numbers are blank and whose ``reason`` says why, naming the flag; ``reason`` is
        empty otherwise.

    With ``shared_draws`` each record holds every noise level of its draw; it is unpacked into
    one record per (trial, sigma) first (:func:`mixreg.trials.unpack_levels`).
    """
    if config.shared_draws:
        records = unpack_levels(records, config.sigmas)
    flags = [f"{rule}_success" for rule in ("official", "honest", "oracle")]
    rates = group_rates(records, ("sigma", "r"), flags, mean_of=("separation", "oracle_floor", "n_diverged"))
    good = [rec for rec in records if not rec.get("error")]
    sigmas = sorted({row["sigma"] for row in rates})
    rs = sorted({row["r"] for row in rates})
    theory = [row for row in predictions(config) if row["sigma"] in sigmas]
    scale = {row["sigma"]: row["value"] for row in theory if row["quantity"] == "separation_scale"}
    p = float(_cluster_sizes(config).min()) / (config.m * config.n)

    for sigma in sigmas:  # the oracle, pooled over r: its prediction does not depend on the separation
        hits = [bool(rec["oracle_success"]) for rec in good if rec["sigma"] == sigma]
        lo, hi = wilson_interval(sum(hits), len(hits))
        theory.append(_row("observation", "oracle_success_rate", sum(hits) / len(hits), rule="oracle", sigma=sigma,
                           low=lo, high=hi, label=f"known-label LS met the threshold in {sum(hits)}/{len(hits)} "
                                                  "trials (all r)"))
    for rule in CHECKED_RULES:
        successes = np.array([[sum(bool(rec[f"{rule}_success"]) for rec in good if rec["sigma"] == s and rec["r"] == r)
                               for s in sigmas] for r in rs], dtype=np.int64)
        trials = np.array([[sum(1 for rec in good if rec["sigma"] == s and rec["r"] == r) for s in sigmas]
                           for r in rs], dtype=np.int64)
        crossings, draws, no_crossing = {}, {}, {}
        for j, sigma in enumerate(sigmas):
            rows = {r["r"]: r for r in rates if r["sigma"] == sigma}
            cells = sorted((rows[r]["separation_mean"], i) for i, r in enumerate(rs)
                           if r in rows and _given(rows[r]["separation_mean"]) and rows[r]["separation_mean"] > 0)
            x = np.array([c[0] for c in cells], dtype=float)
            idx = [c[1] for c in cells]
            no_crossing[sigma] = _no_crossing_reason(config, len(cells))
            if no_crossing[sigma]:
                crossings[sigma], draws[sigma] = (np.nan,) * 3, np.full(N_DRAWS, np.nan)
                continue
            value = half_crossing(x, [rows[rs[i]][f"{rule}_success_rate"] for i in idx])
            draws[sigma] = crossing_draws(x, successes[idx, j], trials[idx, j], n_draws=N_DRAWS, seed=DEFAULT_SEED + j)
            crossings[sigma] = (value, *draws_interval(draws[sigma]))
        scaled = {s: tuple(v / scale[s] for v in crossings[s]) for s in sigmas}
        for sigma in sigmas:
            for quantity, (value, low, high) in (("half_crossing", crossings[sigma]),
                                                 ("half_crossing_scaled", scaled[sigma])):
                theory.append(_row("observation", quantity, value, rule=rule, sigma=sigma, low=low, high=high,
                                   reason=no_crossing[sigma], label="separation where the success rate rises through 1/2 (log-interpolated); "
                                         "95% interval from Jeffreys-posterior draws of every cell (0: below the "
                                         "grid, inf: beyond it)" + ("; divided by the separation-condition scale"
                                                                    if quantity == "half_crossing_scaled" else "")))
        for quantity, values, label in (("collapse_delta", crossings, "separation Δ (no σ in the scale)"),
                                        ("collapse_separation_scale", scaled, "Δ / " + SEPARATION_SCALE_LABEL)):
            for suffix, levels, which in (("", sigmas, "all σ"), ("_noisy", [s for s in sigmas if s > 0], "σ > 0")):
                spread, low, high, verdict = _verdict_of_collapse([values[s] for s in levels])
                if not levels:
                    reason = f"no σ > 0 among {_flag('sigmas', config.sigmas)}: nothing to collapse"
                elif len(levels) < 2:
                    reason = f"one noise level ({which}: {_flag('sigmas', config.sigmas)}): nothing to collapse"
                else:
                    reason = next((no_crossing[s] for s in levels if no_crossing[s]), None)
                theory.append(_row("test", quantity + suffix, spread, rule=rule, low=low, high=high, verdict=verdict,
                                   reason=reason, label=f"do the 1/2-crossings of {which} share a point on the scale {label}? value: "
                                         "max/min of the crossings; low-high: the range common to their 95% "
                                         "intervals"))
        observed = np.array([crossings[s][0] for s in sigmas])
        noise_ref = np.array([(s / p) * np.sqrt(config.d / (config.m * config.n)) for s in sigmas])
        for quantity, reference, model in (
            ("noise_term_crossing", noise_ref, "Δ½ = C (σ/p)√(d/(m n)) (the noise term's scale)"),
            ("sigma_free_crossing", np.ones(len(sigmas)), "Δ½ = C (no σ dependence)"),
        ):
            fits = held_out_constant(observed, np.array([draws[s] for s in sigmas]), reference)
            for sigma, fit in zip(sigmas, fits):
                used = ", ".join(f"{sigmas[i]:g}" for i in fit["fitted_on"]) or "none"
                reason = no_crossing[sigma]
                if not fit["fitted_on"]:
                    reason = (f"one noise level ({_flag('sigmas', config.sigmas)}): no other σ to fit C on"
                              if len(sigmas) < 2 else reason or "no other σ has a 1/2-crossing in the grid to fit C on")
                theory.append(_row("held_out", quantity, fit["predicted"], rule=rule, sigma=sigma,
                                   low=fit["residual_low"], high=fit["residual_high"], residual=fit["residual"],
                                   verdict=fit["verdict"], reason=reason,
                                   label=f"{model}, C = {fit['C']:.3g} fitted on σ ∈ {{{used}}}, predicting the "
                                         f"held-out σ = {sigma:g}; value: the predicted crossing; residual "
                                         "log10(predicted/observed), low-high its 95% interval over the draws"))
        if len(sigmas) < 2:
            theory.append(_row("test", "sigma_homogeneity", None, rule=rule, verdict="not tested",
                               label="exact conditional test that all σ share one success probability",
                               reason=f"one noise level ({_flag('sigmas', config.sigmas)}): nothing to compare"))
            continue
        strata = [(r_value, successes[i:i + 1], trials[i:i + 1]) for i, r_value in enumerate(rs)]
        for r_value, succ, tri in [(None, successes, trials)] + strata:
            test = stratified_homogeneity_test(succ, tri, n_permutations=N_PERMUTATIONS, seed=DEFAULT_SEED)
            theory.append(_row("test", "sigma_homogeneity", test["G"], rule=rule, r=r_value, p_value=test["p_value"],
                               verdict="differ at 5%" if test["p_value"] < 0.05 else "indistinguishable at 5%",
                               label=f"exact conditional test that all σ share one success probability "
                                     f"{'at this r' if r_value is not None else 'at every r (stratified by r)'}: "
                                     f"G = {test['G']:.3g}, df = {test['df']}, chi-square p = {test['p_chi2']:.3g}, "
                                     f"{N_PERMUTATIONS} hypergeometric draws"))
    ratios = [rec["separation"] / rec["r"] for rec in good]
    if ratios and config.protocol == "official":
        theory.append(_row("observation", "delta_per_r", float(np.mean(ratios)) if config.k > 1 else None,
                           label="mean realised separation over r (the top axis)",
                           reason="--k 1: one cluster has no separation Δ" if config.k == 1 else None))
    return {"rates": rates, "theory": theory}


def _given(value):
    """Whether a table's field holds a number (an empty field reads as nan, or None)."""
    return value is not None and bool(np.isfinite(value))


def _number(value):
    """A table's number for a figure: a blank field (``None``) is ``nan``."""
    return float("nan") if value is None else value


def _fmt(value):
    if value is None or np.isnan(value):
        return "–"
    return ("∞" if value > 0 else "−∞") if np.isinf(value) else f"{value:.3g}"


def _theory_rows(theory):
    """``select(quantity, rule=...)`` over theory.csv; refuses a table of an earlier version."""
    if not theory or "quantity" not in theory[0]:
        raise ValueError("theory.csv was written by an earlier version of this experiment; run its command "
                         "again: it resumes without recomputing a trial and rewrites the tables")

    def select(quantity, **match):
        return [row for row in theory if row["quantity"] == quantity
                and all(row.get(key) == value for key, value in match.items())]
    return select


def draw(config, tables, outdir):
    """The two figures, from the tables of :func:`summarise` only; returns the paths written.

    ``success_vs_R``: success against the separation per rule, the oracle ceiling only where it
    says something.  ``success_vs_R_collapse``: the official rule's curves on the separation
    condition's scale and on the separation itself, and the 1/2-crossings against sigma with
    the held-out predictions.  A figure the tables cannot give is not drawn, and
    :func:`mixreg.plotting.not_drawn` says why: both need a realised separation (none with
    ``--k 1``), the collapse needs it at two r values or more.
    """
    rates, select = tables["rates"], _theory_rows(tables["theory"])
    separations = {row["r"] for row in rates if _given(row["separation_mean"]) and row["separation_mean"] > 0}
    if not separations:
        reason = ("--k 1: one cluster has no separation Δ to draw the success against" if config.k == 1
                  else "no trial recorded a separation Δ > 0 to draw the success against")
        for figure in (NAME, f"{NAME}_collapse"):
            not_drawn(figure, reason)
        return []
    delta_per_r = select("delta_per_r")
    r_per_delta = delta_per_r[0]["value"] if delta_per_r else None
    predicted = {row["sigma"]: row["value"] for row in select("oracle_success_probability")}
    ratio = {row["sigma"]: row["value"] for row in select("ls_rms_over_threshold")}
    observed = select("oracle_success_rate")
    hits = [f"{round(sum(r['oracle_success_rate'] * r['trials'] for r in rates if r['sigma'] == row['sigma']))}/"
            f"{sum(r['trials'] for r in rates if r['sigma'] == row['sigma'])}" for row in observed]
    trivial = all(row["value"] == 1.0 for row in observed) and all(v >= 0.99 for v in predicted.values())
    if trivial:
        oracle_text = (f"Known-label LS (oracle): RMS error / threshold = {', '.join(_fmt(v) for v in ratio.values())} "
                       f"(σ = {', '.join(f'{s:g}' for s in ratio)}), predicted success probability ≥ "
                       f"{np.floor(min(predicted.values()) * 1e4) / 1e4:.4f} before the runs; observed "
                       f"{', '.join(hits)} successes: the ceiling is 1 everywhere and is not drawn.")
    else:
        oracle_text = ("Oracle ceiling: observed known-label LS success (thick) and its probability predicted from the "
                       "sizes before the runs (dash-dot).")
    tests = {row["rule"]: row for row in select("sigma_homogeneity") if row["r"] is None and row["p_value"] is not None}
    test_text = "; ".join(f"{rule}: p = {_fmt(row['p_value'])}" for rule, row in tests.items())
    test_text = (f"Do the noise levels differ? Exact test stratified by r ({test_text}): "
                 f"{'; '.join(sorted({row['verdict'] for row in tests.values()}))}." if tests else "")
    setup = (f"{config.preset}: k={config.k}, m={config.m}, n={config.n}, d={config.d}, T={config.n_rounds}, "
             f"{config.n_inits} inits x step sizes {list(config.step_sizes)}, {config.trials} trials per point, "
             f"{config.dtype}; theta* protocol '{config.protocol}', init '{config.init}' (random, no resampling: "
             f"outside Theorem 1's assumptions). Success: distance < 0.6 sigma + {config.threshold_offset:g}.")
    fig = plot_success_vs_separation(
        rates, rules=CHECKED_RULES,
        r_per_delta=r_per_delta if _given(r_per_delta) else None,
        ceiling=not trivial,
        predicted_ceiling=None if trivial else ("known-label LS success probability, predicted before the runs",
                                                predicted),
        title=f"IFCA success probability vs separation (k = {config.k}, m = {config.m}, n = {config.n}, "
              f"d = {config.d})",
        footnote=" ".join(t for t in (setup, oracle_text, test_text,
                                      f"Scales and held-out checks: {NAME}_collapse.png." if len(separations) > 1
                                      else "") if t),
    )
    paths = save_figure(fig, pathlib.Path(outdir) / NAME)
    if len(separations) < 2:
        not_drawn(f"{NAME}_collapse", "the collapse panels and the 1/2-crossings need the success rate at two "
                                      f"separations or more; got {_flag('rs', sorted(separations))}")
        return paths

    rule = "official"

    def verdict(name):
        every, noisy = select(f"collapse_{name}", rule=rule)[0], select(f"collapse_{name}_noisy", rule=rule)
        crossings = select("half_crossing" if name == "delta" else "half_crossing_scaled", rule=rule)
        values = ", ".join(f"σ={row_['sigma']:g}: {_fmt(row_['value'])}" for row_ in crossings)
        text = (f"1/2-crossings {values}\nall σ: {every['verdict']} (spread ×{_fmt(every['value'])}, common range "
                f"[{_fmt(every['low'])}, {_fmt(every['high'])}])")
        if noisy and any(row_["sigma"] == 0 for row_ in crossings):
            text += (f"\nσ > 0: {noisy[0]['verdict']} (spread ×{_fmt(noisy[0]['value'])}, common range "
                     f"[{_fmt(noisy[0]['low'])}, {_fmt(noisy[0]['high'])}])")
        return text

    scale = {row["sigma"]: row["value"] for row in select("separation_scale")}
    scales = [
        dict(divisor=scale, xlabel="Δ / Δ_sep(σ)   (Δ_sep: root of the separation condition, unit constants)",
             title="scale suggested by Thm 1's separation condition\n(unit constants, n' = n; outside its "
                   "assumptions: random init, no resampling)",
             verdict=verdict("separation_scale")),
        dict(divisor={s: 1.0 for s in scale}, xlabel="realised separation Δ",
             title="σ-free scale Δ (prediction: σ² adds alike to every model's loss,\nand σ ≪ initial "
                   "distance ≈ √(d/2), so σ should not matter)", verdict=verdict("delta")),
    ]
    crossings = {row["sigma"]: tuple(_number(row[key]) for key in ("value", "low", "high"))
                 for row in select("half_crossing", rule=rule)}
    held = {}
    residuals = []
    for quantity, label in (
        ("noise_term_crossing", "held-out prediction, C (σ/p)√(d/(mn)), C fitted on the other σ"),
        ("sigma_free_crossing", "held-out prediction, σ-free constant fitted on the other σ"),
    ):
        rows = select(quantity, rule=rule)
        held[label] = {row["sigma"]: _number(row["value"]) for row in rows}
        residuals.append(f"{'noise term' if quantity.startswith('noise') else 'σ-free'}: "
                         + ", ".join(f"σ={row['sigma']:g} {_fmt(row['residual'])} [{_fmt(row['low'])}, "
                                     f"{_fmt(row['high'])}] {row['verdict']}" for row in rows))
    footnote = (f"{setup} Official rule. Both x-scales are fixed before the runs. Crossing intervals: 95%, from "
                f"Jeffreys-posterior draws of every cell. Held-out residuals log10(predicted/observed crossing) "
                f"[95% interval]: {'; '.join(residuals)}. {test_text}")
    fig = plot_success_collapse(
        rates, scales, rule=rule, crossings=crossings, held_out=held,
        title=f"Do the noise levels collapse on a predicted scale? (k = {config.k}, m = {config.m}, n = {config.n}, "
              f"d = {config.d})",
        footnote=footnote,
    )
    return paths + save_figure(fig, pathlib.Path(outdir) / f"{NAME}_collapse")


build_parser, config_from_args, main = _cli.entry_points(
    __name__, paper_presets=("paper-a", "paper-b"),
    description="IFCA success probability against separation, with the theory drawn on it.")


if __name__ == "__main__":
    sys.exit(main())
