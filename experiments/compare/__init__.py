"""The registered methods of :data:`mixreg.trials_compare.COMPARED`, head to head, on a suite of regimes.

Run ``python -m experiments.compare`` for the quick default (eight regimes, k = 2, d = 10,
m = 40, 8 trials each, about a minute on two cores) or ``--preset full`` (40 trials, m = 100).

Methods (:mod:`mixreg.trials_compare`): IFCA (options I and II, two aggregations), Su-Xu-Yang's
Phase 2 (FedAvg(2), FedProx with the ML decoder) from random starts, the one-shot method, FeSEM,
PACFL (joint and x-only signatures), point-level IFCA and k-FED (an explicit list: the two-phase
method, registered as ``two_phase``, needs anchor clients and is not compared); and the reference
points global FedAvg (k = 1), local-only least squares, known-label least squares and IFCA from the
truth.
Every method is tuned the same way: the replica (random start x step size of one grid) with the
lowest final value of its own training objective, never a distance to the truth.

Regimes (:data:`mixreg.trials_compare.REGIMES`), each a change of one thing from ``balanced``:

``balanced``        n_i = n for every client, identity covariances, clusters of equal size
``small_n``         n_i = d / 5 < d: local least squares is underdetermined
``unbalanced``      log-normal client sizes from 2 to 10 n, mean n (some n_i < d)
``covariances``     cluster-specific diagonal covariances, spectra log-uniform on [0.1, 10]
``low_snr``         sigma three times larger
``high_snr``        sigma ten times smaller
``unequal_p``       labels i.i.d., cluster 0 with probability 0.2
``mixed``           clients that mix clusters: 60% of a client's points from its main cluster, the
                    rest from the mixture (the IFCA thesis, chapter 4)

Writes into the results directory (default ``results/compare/<preset>``): ``trials.csv`` (one row
per trial, ``<method>_<metric>`` columns), ``summary.csv`` (one row per regime and method: the
mean of every metric, with 95% intervals for the errors and the misclustering, and how many
trials had every replica diverge, which never enter a mean), ``manifest.json``, and one figure
per regime, ``compare_<regime>.png`` / ``.pdf``, drawn from ``summary.csv`` alone (``--redraw
DIR`` redraws them).
"""

from __future__ import annotations

import dataclasses
import pathlib
import sys
import warnings

import numpy as np

from mixreg import cli as _cli
from mixreg.cli import param
from mixreg.algorithms import TRIAL_OVERHEAD, unmet_precondition
from mixreg.montecarlo import Sweep, SweepWarning
from mixreg.plotting import plot_comparison, save_figure
from mixreg.trials_compare import (
    COMPARED,
    METHODS,
    METRICS,
    REGIMES,
    STEPS,
    TOL,
    compare_memory,
    compare_trial,
    spec_of,
)

NAME = "compare"
TABLES = ("summary",)
DEFAULT_SEED = 20221128  # NeurIPS 2022, where Su, Xu and Yang presented the two-phase method
REPO = pathlib.Path(__file__).resolve().parent.parent

@dataclasses.dataclass(frozen=True)
class Config:
    """Everything that defines the comparison (what the manifest records and a resume compares)."""

    preset: str = param("quick (default, about a minute) or full")
    regimes: tuple[str, ...] = param("regimes to run (mixreg.trials_compare.REGIMES)", choices=tuple(REGIMES))
    m: int = param("clients")
    n: int = param("points per client (the mean, in the unbalanced regime)")
    d: int = param("dimension")
    k: int = param("clusters")
    sigma: float = param("noise level sigma (x 3 and / 10 in the SNR regimes)")
    separation: float = param("minimum distance between the theta*_l (Gaussian protocol)")
    trials: int = param("trials per regime")
    n_inits: int = param("random starts per method, each run with every step size of the grid")
    n_rounds: int = param("most rounds of every iterative phase")

    def validate(self):
        """Raise ``ValueError`` naming the first bad option and its allowed range."""
        for name in ("m", "n", "d", "k", "trials", "n_inits", "n_rounds"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not 2 <= self.k <= self.m:
            raise ValueError(f"k must be in [2, m] = [2, {self.m}], got {self.k}")
        if not self.regimes or len(set(self.regimes)) < len(self.regimes):
            raise ValueError(f"regimes must be distinct names among {list(REGIMES)}, got {list(self.regimes)}")
        if "unequal_p" in self.regimes and 0.2 > 1 / self.k:
            raise ValueError(f"the unequal_p regime gives cluster 0 probability 0.2, which needs k <= 5, got k={self.k}")
        for name in ("sigma", "separation"):
            value = getattr(self, name)
            if not np.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
        for regime in self.regimes:
            _spec(self, regime)  # raises naming the ProblemSpec field
        return self


PRESETS = {
    "quick": dict(regimes=tuple(REGIMES), m=40, n=40, d=10, k=2, sigma=0.5, separation=2.0, trials=8, n_inits=3,
                  n_rounds=200),
    "full": dict(regimes=tuple(REGIMES), m=100, n=40, d=10, k=2, sigma=0.5, separation=2.0, trials=40, n_inits=5,
                 n_rounds=300),
}


def cells_of(config):
    """One cell per regime: the regime's name and the base problem (see :func:`spec_of`)."""
    return tuple(dict(regime=regime, m=config.m, n=config.n, d=config.d, k=config.k, sigma=float(config.sigma),
                      separation=float(config.separation), n_rounds=config.n_rounds, n_inits=config.n_inits)
                 for regime in config.regimes)


def _spec(config, regime):
    return spec_of(regime, m=config.m, n=config.n, d=config.d, k=config.k, sigma=config.sigma,
                   separation=config.separation)


def _given(config, regime, unmet):
    """What the flags make of the size ``unmet`` falls short on, in the user's terms."""
    if unmet.size == "d":
        return f"--d {config.d}"
    if unmet.size == "k":
        return f"--k {config.k}"
    if regime == "small_n":
        return f"n_i = d/5 = {unmet.value} in the small_n regime (--d {config.d})"
    return f"--n {config.n}"


def method_refusals(config):
    """The methods each regime's problems refuse whatever the draw, from the flags alone.

    A method of the registry whose precondition
    (:attr:`mixreg.algorithms.Algorithm.precondition`) fails on a regime's sizes is recorded as
    refused in every trial of that regime (``<method>_refused``, the ``refused`` and
    ``refusal`` columns of ``summary.csv``, a note on the figure) while the other methods run.
    Under a size law (``unbalanced``) the smallest client is random: only what fails at every
    client size is listed.

    Returns
    -------
    list of str
        One line per (regime, method): ``regime small_n: kfed needs ...; got n_i = d/5 = 1 in
        the small_n regime (--d 7)``.
    """
    lines = []
    for regime in config.regimes:
        spec = _spec(config, regime)
        n_min = spec.n if spec.size_law is None else spec.n_max
        for name in COMPARED:
            unmet = unmet_precondition(name, d=spec.d, k=spec.k, n_min=n_min)
            if unmet is not None:
                lines.append(f"regime {regime}: {name} needs {unmet.needs}; got {_given(config, regime, unmet)} "
                             "(recorded as refused; the other methods run)")
    return lines


#: The flags that set a trial's memory (a refusal for memory names them).
SIZE_FLAGS = _cli.config_flags("m", "n", "d", "k", "n_inits")


def trial_memory(cell):
    """Upper estimate of one trial's peak bytes: its arrays
    (:func:`mixreg.trials_compare.compare_memory`) and :data:`TRIAL_OVERHEAD`."""
    return TRIAL_OVERHEAD + compare_memory(cell)


def build_sweep(config, root_seed=DEFAULT_SEED):
    """The comparison's sweep; a :class:`SweepWarning` per method a regime refuses
    (:func:`method_refusals`)."""
    config.validate()
    for line in method_refusals(config):
        warnings.warn(line, SweepWarning, stacklevel=2)
    return Sweep(
        name=NAME,
        trial_fn=compare_trial,
        cells=cells_of(config),
        n_trials=config.trials,
        root_seed=root_seed,
        config=dict(dataclasses.asdict(config), methods=list(METHODS), steps=list(STEPS), tol_relative=TOL,
                    tuning="per method, the replica (start x step) with the lowest final training objective",
                    regimes={name: REGIMES[name][0] for name in config.regimes}),
        memory_fn=trial_memory,
        size_names=SIZE_FLAGS,
    )


#: Metrics summarised with a 95% interval of the mean (normal approximation).
_WITH_INTERVAL = ("err_mean", "err_max", "mis_clients", "mis_points")


def summarise(config, records):
    """``summary``: one row per (regime, method), in the order of :data:`METHODS`.

    Columns: ``regime``, ``method``, ``trials`` (without failed trials), ``refused`` (trials
    where the method refused the problem) and the first ``refusal`` reason, ``all_diverged``
    (trials where every replica of the method diverged: no estimate, left out of every mean),
    ``<metric>_mean`` for every metric of :data:`mixreg.trials_compare.METRICS` (``nan``
    ignored), ``<metric>_low`` / ``_high`` for the errors and misclustering.
    """
    ok = [rec for rec in records if not rec.get("error")]
    rows = []
    for regime in config.regimes:
        recs = [rec for rec in ok if rec["regime"] == regime]
        for method in METHODS:
            refused = [rec.get(f"{method}_refused") or "" for rec in recs]
            row = dict(regime=regime, method=method, trials=len(recs),
                       refused=sum(1 for reason in refused if reason),
                       refusal=next((reason for reason in refused if reason), ""),
                       all_diverged=sum(1 for rec, reason in zip(recs, refused)
                                        if not reason and not np.isfinite(_num(rec, f"{method}_err_mean"))))
            for metric in METRICS:
                values = np.array([_num(rec, f"{method}_{metric}") for rec in recs], dtype=float)
                values = values[np.isfinite(values)]
                row[f"{metric}_mean"] = float(values.mean()) if values.size else float("nan")
                if metric in _WITH_INTERVAL:
                    half = float(1.96 * values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else float("nan")
                    row[f"{metric}_low"] = float(row[f"{metric}_mean"] - half)
                    row[f"{metric}_high"] = float(row[f"{metric}_mean"] + half)
            rows.append(row)
    return {"summary": rows}


def _num(rec, key):
    value = rec.get(key)
    if value is None or value == "":
        return float("nan")
    return float(value)


def draw(config, tables, outdir):
    """One figure per regime, from ``summary`` alone; returns the paths written."""
    paths = []
    for regime in config.regimes:
        rows = [row for row in tables["summary"] if row["regime"] == regime]
        if not rows:
            continue
        spec = _spec(config, regime)
        title = (f"{regime}: {REGIMES[regime][0]}  (m = {spec.m}, k = {spec.k}, d = {spec.d}, σ = {spec.sigma:g}, "
                 f"Δ = {config.separation:g}; {rows[0]['trials']} trials)")
        footnote = (f"Every method: {config.n_inits} random starts (FeSEM (k-means start): {config.n_inits} of its paper's "
                    f"best-of-20 k-means starts) x steps {list(STEPS)}, the replica with the lowest "
                    f"final training objective (never the distance to θ*); at most {config.n_rounds} rounds, stop when no "
                    f"coordinate moves more than {TOL:g} x the data's parameter scale. Bars: 95% intervals of the mean. "
                    f"Floats: per client, counted from each protocol. Misclustering at 0.5 (dotted) is chance for k = 2. "
                    f"Grey: reference points (known-label LS knows every point's cluster; local only has no clustering).")
        fig = plot_comparison(rows, title=title, footnote=footnote)
        paths += save_figure(fig, pathlib.Path(outdir) / f"{NAME}_{regime}")
    return paths


build_parser, config_from_args, main = _cli.entry_points(
    __name__,
    description="Every registered method and the reference points, head to head, on a suite of regimes.")


if __name__ == "__main__":
    sys.exit(main())
