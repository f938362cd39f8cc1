"""IFCA success probability against separation (IFCA paper, Fig. 3(a)/(b)), with the theory on it.

Run ``python -m experiments.success_vs_R`` for the quick default (k = 2, a few minutes on two
cores), or ``--preset paper-a`` / ``--preset paper-b`` for the official code's grids.  Writes into
the results directory (default ``results/success_vs_R/<preset>``):

* ``trials.csv``: one row per trial (cell parameters, seed, every rule's outcome, distances);
* ``rates.csv``: success rate per (sigma, r) under each rule with 95% Wilson intervals;
* ``theory.csv``: per sigma, the theory lines drawn on the figure and the fitted constant;
* ``manifest.json``: config, root seed, package versions, git commit, times;
* ``success_vs_R.png`` and ``.pdf``: the figure, drawn from ``rates.csv`` and ``theory.csv``
  alone; ``--redraw DIR`` redraws it from a results directory without running anything.

The paper presets also write the figure to ``figures/success_vs_R_<preset>.{png,pdf}`` (when the
run is the unchanged preset); quick runs never touch ``figures/``.

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
from experiments._cli import experiment_main, param, parser_from_config
from mixreg.montecarlo import Sweep
from mixreg.plotting import plot_success_vs_separation, save_figure
from mixreg.problems import THETA_PROTOCOLS, ProblemSpec
from mixreg.algorithms.ifca import INIT_METHODS
from mixreg.stats import group_rates
from mixreg.theory import fit_separation_constant, ifca_separation_threshold
from mixreg.trials import IFCA_SUCCESS_CELLS, SUCCESS_RULES, ifca_success_trial

NAME = "success_vs_R"
TABLES = ("rates", "theory")  # written as <name>.csv; the figure is drawn from them alone
DEFAULT_SEED = 20200604  # IFCA's arXiv submission date; any fixed integer would do
REPO = pathlib.Path(__file__).resolve().parent.parent


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
        if any(not np.isfinite(r) or r <= 0 for r in self.rs):
            raise ValueError(f"rs must be finite and > 0, got {list(self.rs)}")
        if any(not np.isfinite(g) or g <= 0 for g in self.step_sizes):
            raise ValueError(f"step_sizes must be finite and > 0, got {list(self.step_sizes)}")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")
        if self.protocol not in THETA_PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(THETA_PROTOCOLS)}; got {self.protocol!r}")
        if self.init not in INIT_METHODS:
            raise ValueError(f"init must be one of {', '.join(INIT_METHODS)}; got {self.init!r}")
        if not np.isfinite(self.init_scale) or self.init_scale <= 0:
            raise ValueError(f"init_scale must be finite and > 0, got {self.init_scale!r}")
        if not np.isfinite(self.threshold_offset) or self.threshold_offset < 0:
            raise ValueError(f"threshold_offset must be finite and >= 0, got {self.threshold_offset!r}")
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
                    trials=40, n_inits=10, step_sizes=(1.0, 0.1, 0.01), n_rounds=300, dtype="float32"),
    "paper-b": dict(k=4, m=400, n=100, d=1000, sigmas=(0.0, 0.1, 0.2, 0.4), rs=(0.1, 0.25, 0.5, 0.75, 1.0),
                    trials=40, n_inits=10, step_sizes=(2.0, 1.0, 0.5), n_rounds=300, dtype="float32"),
}


#: trials.csv's column order of the cell parameters (the order results directories were written in).
COLUMNS = ("k", "m", "n", "d", "protocol", "n_rounds", "n_inits", "step_sizes", "init", "init_scale",
           "threshold_offset", "dtype", "sigma", "r")


def cells_of(config):
    """Grid cells: the problem of every (sigma, r) (a :class:`ProblemSpec`) and IFCA's settings."""
    method = dict(n_rounds=config.n_rounds, n_inits=config.n_inits,
                  step_sizes=tuple(float(g) for g in config.step_sizes), init=config.init,
                  init_scale=float(config.init_scale), threshold_offset=float(config.threshold_offset))
    cells = []
    for sigma in config.sigmas:
        for r in config.rs:
            spec = ProblemSpec(m=config.m, k=config.k, n=config.n, d=config.d, sigma=float(sigma), scale=float(r),
                               protocol=config.protocol, dtype=config.dtype)
            cell = {**spec.to_cell(IFCA_SUCCESS_CELLS), **method}
            cells.append({key: cell[key] for key in COLUMNS})
    return tuple(cells)


def trial_flops(cell):
    """IFCA's own flop count for one trial: (k + 1) 2 N d per replica-round."""
    B = cell["n_inits"] * len(cell["step_sizes"])
    return float((cell["k"] + 1) * 2 * cell["m"] * cell["n"] * cell["d"] * B * cell["n_rounds"])


def build_sweep(config, root_seed=DEFAULT_SEED):
    config.validate()
    return Sweep(
        name=NAME,
        trial_fn=ifca_success_trial,
        cells=cells_of(config),
        n_trials=config.trials,
        root_seed=root_seed,
        config=dict(dataclasses.asdict(config), success_rules=SUCCESS_RULES),
        cost_fn=trial_flops,
    )


def _crossing(x, y, level=0.5):
    """First x (log-interpolated) where y rises through ``level``; nan if it never does."""
    for i in range(1, len(x)):
        if y[i - 1] < level <= y[i]:
            t = (level - y[i - 1]) / (y[i] - y[i - 1])
            return float(np.exp(np.log(x[i - 1]) + t * (np.log(x[i]) - np.log(x[i - 1]))))
    return float("nan")


def summarise(config, records):
    """The figure's tables: success rates per (sigma, r), and the theory lines per sigma.

    Returns
    -------
    dict
        ``rates``: one row per (sigma, r), see :func:`mixreg.stats.group_rates`.
        ``theory``: one row per sigma: ``half_crossing`` (realised separation where the
        official rule's rate rises through 1/2, log-interpolated; nan if it never does),
        ``unit_separation`` (Theorem 1's separation condition with unit constants, n' = n) and
        ``unit_drawn`` (whether it lies within the plotted separations), ``fitted_separation``
        (the noise term ``C (sigma/p) sqrt(d/(m n))``; empty for sigma = 0 or without a fit),
        ``C_fitted`` (``C`` fitted to the half crossings) and ``r_per_delta`` (mean realised
        separation over ``r``, the top axis; empty unless the protocol is the official one).
    """
    flags = [f"{rule}_success" for rule in ("official", "honest", "oracle")]
    rates = group_rates(records, ("sigma", "r"), flags, mean_of=("separation", "oracle_floor", "n_diverged"))
    p = 1.0 / config.k  # balanced clusters
    half = {}
    for sigma in sorted({row["sigma"] for row in rates}):
        rows = sorted((r for r in rates if r["sigma"] == sigma), key=lambda r: r["separation_mean"])
        half[sigma] = _crossing([r["separation_mean"] for r in rows], [r["official_success_rate"] for r in rows])
    positive = [s for s in half if s > 0]
    c_fit = float(fit_separation_constant([half[s] for s in positive], positive, p, config.d, config.m, config.n))
    # a degenerate cell (separation 0, k = 1: inf) or a cell whose trials all failed has no place
    # on the log axis; the theory lines span the cells that have one
    xs = [x for x in (row["separation_mean"] for row in rates) if x is not None and 0 < x < np.inf]
    lo, hi = (min(xs) / 3.0, max(xs) * 3.0) if xs else (np.nan, np.nan)
    ratios = [rec["separation"] / rec["r"] for rec in records if not rec.get("error")]
    r_per_delta = float(np.mean(ratios)) if ratios and config.protocol == "official" else None
    theory = []
    for sigma in half:
        unit = float(ifca_separation_threshold(sigma, p, config.d, config.m, config.n))
        fitted = None
        if np.isfinite(c_fit) and sigma > 0:
            fitted = float(c_fit * (sigma / p) * np.sqrt(config.d / (config.m * config.n)))
        theory.append(dict(sigma=sigma, half_crossing=half[sigma], unit_separation=unit,
                           unit_drawn=bool(lo <= unit <= hi),  # for sigma = 0 it is exp(-n), far left
                           fitted_separation=fitted, C_fitted=c_fit, r_per_delta=r_per_delta))
    return {"rates": rates, "theory": theory}


def _given(value):
    """Whether a table's field holds a number (an empty field reads as nan, or None)."""
    return value is not None and bool(np.isfinite(value))


def draw(config, tables, outdir):
    """The figure, from the tables of :func:`summarise` only; returns the paths written."""
    rates, theory = tables["rates"], tables["theory"]
    unit_label = "Thm 1 separation condition, unit constants (n' = n)"
    fit_label = f"Thm 1 noise term (sigma/p) sqrt(d/(m n)), fitted C = {theory[0]['C_fitted']:.3g}"
    lines = {}
    for row in theory:
        entries = {}
        if row["unit_drawn"]:
            entries[unit_label] = row["unit_separation"]
        if _given(row["fitted_separation"]):
            entries[fit_label] = row["fitted_separation"]
        lines[row["sigma"]] = entries
    r_per_delta = theory[0]["r_per_delta"]
    footnote = (
        f"{config.preset}: k={config.k}, m={config.m}, n={config.n}, d={config.d}, T={config.n_rounds}, "
        f"{config.n_inits} inits x step sizes {list(config.step_sizes)}, {config.trials} trials per point, "
        f"{config.dtype}; theta* protocol '{config.protocol}', init '{config.init}'. Success: distance < 0.6 sigma "
        f"+ {config.threshold_offset:g}. Theorem 1 assumes init within Delta/4 and resampling; these runs use "
        "random init and full batch, as the paper's experiment, so the theory lines locate scales, not guarantees."
    )
    fig = plot_success_vs_separation(
        rates,
        separation_lines=lines,
        r_per_delta=r_per_delta if _given(r_per_delta) else None,
        title=f"IFCA success probability vs separation (k = {config.k}, m = {config.m}, n = {config.n}, d = {config.d})",
        footnote=footnote,
    )
    return save_figure(fig, pathlib.Path(outdir) / NAME)


def build_parser():
    return parser_from_config(
        Config, PRESETS, prog="python -m experiments.success_vs_R",
        description="IFCA success probability against separation, with the theory drawn on it.",
    )


def config_from_args(args):
    return _cli.config_from_args(Config, PRESETS, args)


def main(argv=None):
    return experiment_main(build_parser(), argv, name=NAME, config_cls=Config, presets=PRESETS,
                           build_sweep=build_sweep, summarise=summarise, draw=draw, tables=TABLES,
                           paper_presets=("paper-a", "paper-b"), figures_dir=REPO / "figures")


if __name__ == "__main__":
    sys.exit(main())
