"""IFCA's basin of attraction against the initial closeness alpha, with Assumption 1's predictions.

Assumption 1 asks for ``||theta_j^(0) - theta*_j|| <= Delta/4`` (NeurIPS version; ``alpha = 1/4``
in our convention ``||theta_j^(0) - theta*_j|| = alpha Delta``) or ``<= (1/2 - alpha') Delta``
(arXiv version, closeness ``alpha' in (0, 1/2)``; ``alpha = 1/2 - alpha'``).  This experiment
starts IFCA (option I, ``gamma = c1 / p``) at ``theta*_j + alpha Delta u_j`` for a grid of
``alpha`` and three directions ``u`` (:func:`mixreg.trials_ifca_mechanism.closeness_init`):

* ``random``: independent uniform directions;
* ``adversarial``: each estimate towards its nearest other centre (the worst direction for
  every worker's identity estimate; for ``k = 2`` the two estimates move towards each other);
* ``shifted``: every estimate moved by the same vector, from the closest pair's first centre
  towards its second (one model approaches a second cluster while that cluster's model leaves).

Each trial runs IFCA twice on the same problem and start: with the resampling scheme of
Theorem 1 (``T`` rounds, ``n'`` fresh points per subset, ``n = 2 T n'``) and without it (full
batch, all ``n`` points every round), and scores both (:func:`mixreg.trials_ifca_mechanism.
ifca_basin_trial`):

* **success**: final permutation-matched max distance below ``floor_factor`` times the largest
  known-label least-squares RMS error of the points the variant's update uses per round
  (``sigma sqrt(d / (p m n' - d - 1))`` with resampling, ``n`` instead of ``n'`` without;
  :func:`mixreg.metrics.oracle_ls_floor`), a stated choice tied to each variant's error floor;
* **success without permutation**: the same for ``max_j ||theta_j - theta*_j||`` (Theorem 1's
  notion: every estimate converges to the centre it started near).

Predictions drawn: Assumption 1's ``alpha <= 1/4`` (NeurIPS), the arXiv limit ``alpha -> 1/2``,
and the population edge (:func:`mixreg.theory.population_basin_edge`): the ``alpha`` at which a
worker's *expected* loss first prefers another model, exactly 1/2 for the adversarial and
shifted directions.  The measured edge is where the success rate first falls through 1/2
(interpolated in ``log alpha``).

Run ``python -m experiments.ifca_basin`` (quick, well under a minute on two cores) or
``--preset paper``.  Writes into ``results/ifca_basin/<preset>``: ``trials.csv``, ``rates.csv``
(per ``(k, direction, alpha)``: success rates with Wilson intervals for both variants and both
notions, final-error quartiles over ``Delta``, thresholds), ``edges.csv`` (per ``(k, direction,
variant, notion)``: measured edge and its bracketing grid values, population edge, Assumption
1's values), ``manifest.json`` and ``ifca_basin.{png,pdf}``; ``--redraw DIR`` redraws.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import sys

import numpy as np

from mixreg import cli as _cli
from mixreg.cli import param
from mixreg.montecarlo import Sweep
from mixreg.plotting import plot_ifca_basin, save_figure
from mixreg.problems import ProblemSpec
from mixreg.stats import wilson_interval
from mixreg.algorithms import TRIAL_OVERHEAD
from mixreg.trials_ifca_mechanism import DIRECTIONS, MECHANISM_CELLS, ifca_basin_trial, mechanism_memory

NAME = "ifca_basin"
TABLES = ("rates", "edges")
DEFAULT_SEED = 20200612  # any fixed integer
REPO = pathlib.Path(__file__).resolve().parent.parent
VARIANTS = ("rs", "fb")  # resampling (Theorem 1's scheme), full batch
NOTIONS = ("success", "same_success")


@dataclasses.dataclass(frozen=True)
class Config:
    """The sweep; every field but ``preset`` is a flag named as the field."""

    preset: str = param("quick (default, < 1 min) or paper")
    ks: tuple[int, ...] = param("numbers of clusters k")
    m_per: int = param("workers per cluster (m = k m_per, balanced, p = 1/k)")
    n_prime: int = param("points per worker in each subset of a resampled round (n = 2 T n')")
    n_rounds: int = param("IFCA rounds T")
    d: int = param("dimension")
    sigma: float = param("noise standard deviation (Delta = 1)")
    alphas: tuple[float, ...] = param("initial closeness alpha: ||theta_j - theta*_j|| = alpha Delta")
    directions: tuple[str, ...] = param("initial directions", choices=DIRECTIONS)
    trials: int = param("trials per (k, direction, alpha) cell")
    c1: float = param("step size gamma = c1 / p (Theorem 1; 3/8 as in the theory's default)", default=0.375)
    floor_factor: float = param("success threshold: this times the known-label LS RMS error floor", default=2.0)
    level: float = param("level of the Wilson intervals", default=0.95)

    def validate(self):
        """Raise ``ValueError`` naming the first bad option and its allowed range."""
        for name in ("m_per", "n_prime", "n_rounds", "d", "trials"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not self.ks or any(not isinstance(k, (int, np.integer)) or k < 2 for k in self.ks):
            raise ValueError(f"ks must be integers >= 2 (at least one), got {list(self.ks)}")
        if not self.alphas or any(not np.isfinite(a) or a <= 0 for a in self.alphas):
            raise ValueError(f"alphas must be finite and > 0 (at least one), got {list(self.alphas)}")
        if not self.directions or any(d not in DIRECTIONS for d in self.directions):
            raise ValueError(f"directions must be among {', '.join(DIRECTIONS)}, got {list(self.directions)}")
        for name in ("ks", "alphas", "directions"):  # a repeated value would be a repeated cell
            values = getattr(self, name)
            if len(set(values)) < len(values):
                raise ValueError(f"{name} must be distinct, got {list(values)}")
        if not np.isfinite(self.sigma) or self.sigma <= 0:
            raise ValueError(f"sigma must be finite and > 0 (the threshold is tied to the noise floor), "
                             f"got {self.sigma!r}")
        if self.m_per * self.n_prime <= self.d + 1:
            raise ValueError(f"m_per * n_prime must exceed d + 1 = {self.d + 1} (the known-label floor of one "
                             f"round's points is infinite otherwise), got {self.m_per * self.n_prime}")
        for name in ("c1", "floor_factor"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        if not 0 < self.level < 1:
            raise ValueError(f"level must be in (0, 1), got {self.level!r}")
        return self


_ALPHAS_QUICK = (0.1, 0.25, 0.4, 0.45, 0.5, 0.55, 0.6, 0.75, 1.0, 1.5, 2.0, 3.0)
_ALPHAS_PAPER = (0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.475, 0.5, 0.525, 0.55, 0.6, 0.7, 0.8, 1.0, 1.25, 1.5, 2.0,
                 2.5, 3.0, 4.0)
PRESETS = {
    "quick": dict(ks=(2, 4), m_per=20, n_prime=20, n_rounds=10, d=10, sigma=0.3, alphas=_ALPHAS_QUICK,
                  directions=DIRECTIONS, trials=12),
    "paper": dict(ks=(2, 4), m_per=50, n_prime=50, n_rounds=12, d=20, sigma=0.3, alphas=_ALPHAS_PAPER,
                  directions=DIRECTIONS, trials=60),
}

COLUMNS = ("m", "k", "n", "d", "sigma", "delta", "direction", "alpha", "n_rounds", "c1", "floor_factor")


def cells_of(config):
    """One cell per ``(k, direction, alpha)``: a :class:`ProblemSpec` (``Delta = 1``) and the method."""
    cells = []
    for k in config.ks:
        spec = ProblemSpec(m=k * config.m_per, k=k, n=2 * config.n_rounds * config.n_prime, d=config.d,
                           sigma=float(config.sigma), scale=1.0, protocol="gaussian")
        for direction in config.directions:
            for alpha in config.alphas:
                cell = {**spec.to_cell(MECHANISM_CELLS), "direction": direction, "alpha": float(alpha),
                        "n_rounds": config.n_rounds, "c1": float(config.c1), "floor_factor": float(config.floor_factor)}
                cells.append({key: cell[key] for key in COLUMNS})
    return tuple(cells)


def trial_flops(cell):
    """Flop-equivalents of a trial: two runs of ``T`` rounds, ``(k + 1) 2 N d`` per full-batch round
    and a ``1/(2T)`` of it resampled, plus drawing the ``N d`` Gaussians (about 100 each)."""
    Nd = cell["m"] * cell["n"] * cell["d"]
    return float((cell["k"] + 1) * 2 * Nd * cell["n_rounds"] * 1.1 + 100 * Nd)


#: The flags that set a trial's memory (a refusal for memory names them).
SIZE_FLAGS = _cli.config_flags("ks", "m_per", "n_prime", "n_rounds", "d")


def trial_memory(cell):
    """Upper estimate of one trial's peak bytes: its arrays
    (:func:`mixreg.trials_ifca_mechanism.mechanism_memory`) and :data:`TRIAL_OVERHEAD`."""
    return TRIAL_OVERHEAD + mechanism_memory(cell)


def build_sweep(config, root_seed=DEFAULT_SEED):
    config.validate()
    return Sweep(name=NAME, trial_fn=ifca_basin_trial, cells=cells_of(config), n_trials=config.trials,
                 root_seed=root_seed, config=dataclasses.asdict(config), cost_fn=trial_flops,
                 memory_fn=trial_memory, size_names=SIZE_FLAGS)


def _ok(records):
    return [r for r in records if not r.get("error")]


def _quantiles(values):
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return np.quantile(v, [0.25, 0.5, 0.75]) if v.size else np.full(3, np.nan)


def _rates(config, records):
    rows = []
    for k in config.ks:
        for direction in config.directions:
            for alpha in config.alphas:
                recs = [r for r in records if r["k"] == k and r["direction"] == direction and r["alpha"] == alpha]
                row = dict(k=k, direction=direction, alpha=float(alpha), trials=len(recs))
                for v in VARIANTS:
                    for notion in NOTIONS:
                        s = sum(bool(r[f"{v}_{notion}"]) for r in recs)
                        low, high = wilson_interval(s, len(recs), config.level) if recs else (np.nan, np.nan)
                        row.update({f"{v}_{notion}_rate": s / len(recs) if recs else float("nan"),
                                    f"{v}_{notion}_low": float(low), f"{v}_{notion}_high": float(high)})
                    q25, q50, q75 = (float(q) for q in _quantiles([r[f"{v}_dist"] / r["separation"] for r in recs]))
                    row.update({f"{v}_err_q25": q25, f"{v}_err_median": q50, f"{v}_err_q75": q75,
                                f"{v}_threshold_rel": float(np.median([r[f"{v}_threshold"] / r["separation"]
                                                                       for r in recs])) if recs else float("nan"),
                                f"{v}_diverged": sum(bool(r[f"{v}_diverged"]) for r in recs)})
                row["population_edge_median"] = float(np.median([r["population_edge"] for r in recs])) if recs else None
                rows.append(row)
    return rows


def basin_edge(alphas, rates, level=0.5):
    """``(edge, below, above)``: where the rate first falls through ``level`` (interpolated in
    ``log alpha``) and the grid values around it; ``edge = 0`` if it starts below, ``inf`` if it
    never falls."""
    for i, rate in enumerate(rates):
        if rate < level:
            if i == 0:
                return 0.0, float("nan"), float(alphas[0])
            a0, a1, r0, r1 = alphas[i - 1], alphas[i], rates[i - 1], rate
            t = (r0 - level) / (r0 - r1)
            return float(np.exp(np.log(a0) + t * (np.log(a1) - np.log(a0)))), float(a0), float(a1)
    return float("inf"), float(alphas[-1]), float("nan")


def _edges(config, rates, records):
    rows = []
    for k in config.ks:
        for direction in config.directions:
            sub = sorted((r for r in rates if r["k"] == k and r["direction"] == direction), key=lambda r: r["alpha"])
            pops = [r["population_edge"] for r in records if r["k"] == k and r["direction"] == direction]
            pop = float(np.median(pops)) if pops else float("nan")
            for v in VARIANTS:
                for notion in NOTIONS:
                    edge, below, above = basin_edge([r["alpha"] for r in sub], [r[f"{v}_{notion}_rate"] for r in sub])
                    rows.append(dict(k=k, direction=direction, variant=v, notion=notion, edge=edge,
                                     last_above=below, first_below=above, population_edge=pop,
                                     population_edge_q10=float(np.quantile(pops, 0.1)) if pops else float("nan"),
                                     neurips_assumption1=0.25, arxiv_limit=0.5))
    return rows


def summarise(config, records):
    """The tables ``rates`` and ``edges`` (see the module docstring)."""
    records = _ok(records)
    rates = _rates(config, records)
    return {"rates": rates, "edges": _edges(config, rates, records)}


def _assumption2_unit(config, k):
    """Assumption 2 with unit constants (our reading of its ``>~``), at the preset's setting."""
    m, p, n = k * config.m_per, 1.0 / k, config.n_prime
    rho = 1.0 / config.sigma**2
    ratio = rho / (rho + 1.0)
    sep = (config.sigma / p) * math.sqrt(config.d / (m * n)) + math.exp(-ratio**2 * n)
    return n >= math.log(m) / ratio**2 and p * m * n >= config.d and config.d >= math.log(m) and 1.0 >= sep


def draw(config, tables, outdir):
    """The figure, from the tables only; returns the paths written."""
    edges = tables["edges"]

    def show(e):
        return "none in grid" if e == float("inf") else ("< grid" if e == 0 else f"{e:.2f}")

    edge = {(e["k"], e["direction"], e["variant"], e["notion"]): e["edge"] for e in edges}
    summary = "; ".join(f"k={k} " + ", ".join(f"{d}: {show(edge[(k, d, 'rs', 'same_success')])}"
                                              for d in config.directions) for k in config.ks)
    regime = ", ".join(f"k={k}: {'yes' if _assumption2_unit(config, k) else 'no'}" for k in config.ks)
    n = 2 * config.n_rounds * config.n_prime
    footnote = (
        f"{config.preset}: m = k·{config.m_per}, d = {config.d}, Δ = 1, σ = {config.sigma:g} "
        f"(ρ = {1 / config.sigma**2:.3g}), T = {config.n_rounds} rounds, n' = {config.n_prime} (n = {n}), "
        f"γ = {config.c1:g}/p, {config.trials} trials per point. Success: final distance < {config.floor_factor:g} × "
        f"the known-label LS RMS floor of the points one round's update uses (n' resampled, n full batch). "
        f"Assumption 2 with unit constants: {regime}. Measured edges (resampling, no permutation): {summary}. "
        f"Theorem 1 covers α ≤ 1/4 (NeurIPS) and α < 1/2 (arXiv) only."
    )
    fig = plot_ifca_basin(tables["rates"], edges, title="IFCA's basin: success against the initial closeness α",
                          footnote=footnote)
    return save_figure(fig, pathlib.Path(outdir) / NAME)


build_parser, config_from_args, main = _cli.entry_points(
    __name__, paper_presets=("paper",),
    description="IFCA's basin of attraction against the initial closeness alpha, "
                "random and adversarial directions, with and without resampling.")


if __name__ == "__main__":
    sys.exit(main())
