"""The contraction study's tables: the ratio's distribution per ``(rho, alpha, n')`` and the bounds' violations."""

from __future__ import annotations

import math

import numpy as np

from mixreg.stats import wilson_interval

from ..ifca_mechanism import assumption2_unit as assumption2_unit_at
from ..ifca_mechanism import ok_records

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "K", "NEGLIGIBLE", "assumption2_unit", "summarise"]

NAME = "ifca_contraction"
TABLES = ("ratios", "violations")
DEFAULT_SEED = 20200613  # any fixed integer
K = 2  # the exact misclustering probability is for two models


def assumption2_unit(config, rho, n_prime):
    """Assumption 2 with unit constants (our reading of its ``>~``) at ``(rho, n')``, and ``sigma <= Delta``
    (:func:`experiments.ifca_mechanism.assumption2_unit`)."""
    sigma = 1.0 / math.sqrt(rho)
    return (assumption2_unit_at(m=config.m, p=1.0 / K, n_prime=n_prime, d=config.d, sigma=sigma, rho=rho)
            and sigma <= 1.0)


#: Misclustering is negligible in a cell where the exact per-worker probability, averaged over its
#: draws, is at most this (the scope of the one-round check of Theorem 1's first two terms).
NEGLIGIBLE = 0.01


def _draws(recs, key):
    return np.array([float(r[f"{key}_{j}"]) for r in recs for j in range(K)])


def _exact_term(recs):
    """Per draw (trial x cluster ``j``): the current distance ``||theta_j - theta*_j||``, the distance
    after the round, the noise term, and Theorem 1's third term at its exact value
    ``2 c1 Delta P_j'`` (our derivation, in the module docstring of :mod:`experiments.ifca_contraction`:
    the expected pull of the other cluster's workers that the round assigns to ``j``, ``P_j'`` the
    exact probability that a worker of the other cluster ``j'`` picks model ``j``)."""
    noise = np.array([float(r["noise_term"]) for r in recs for _ in range(K)])
    before = noise / (_draws(recs, "noise_ratio") - 0.5)
    after = _draws(recs, "ratio") * before
    other = np.array([float(r[f"exact_wrong_{1 - j}"]) for r in recs for j in range(K)])
    scale = np.array([2.0 * float(r["c1"]) * float(r["delta"]) for r in recs for _ in range(K)])
    return before, after, noise, scale * other


def _ratios(config, records):
    rows = []
    for rho in config.rhos:
        for alpha in config.alphas:
            for n_prime in config.n_primes:
                recs = [r for r in records if r["rho"] == rho and r["alpha"] == alpha and r["n"] == 2 * n_prime]
                if not recs:
                    continue
                ratio, bound, noise = _draws(recs, "ratio"), _draws(recs, "bound_ratio"), _draws(recs, "noise_ratio")
                q = np.quantile(ratio, [0.05, 0.25, 0.5, 0.75, 0.95])
                per_trial = np.array([[float(r[f"ratio_{j}"]) > float(r[f"bound_ratio_{j}"]) for j in range(K)]
                                      for r in recs])
                before, after, noise_term, exact_term = _exact_term(recs)
                excess = after - 0.5 * before - noise_term
                with np.errstate(divide="ignore", invalid="ignore"):
                    share = np.where(excess > 0, excess / exact_term, 0.0)
                workers = sum(int(r["m"]) for r in recs)  # k = 2 balanced clusters: every worker once
                wrong = int(round(sum(float(r["wrong_fraction"]) * int(r["m"]) for r in recs)))
                rows.append(dict(
                    rho=float(rho), alpha=float(alpha), n_prime=n_prime, trials=len(recs), draws=ratio.size,
                    q05=float(q[0]), q25=float(q[1]), q50=float(q[2]), q75=float(q[3]), q95=float(q[4]),
                    max_ratio=float(ratio.max()), bound_ratio=float(np.median(bound)),
                    noise_ratio=float(np.median(noise)),
                    violations=int(np.sum(ratio > bound)), violation_fraction=float(np.mean(ratio > bound)),
                    trial_violation_fraction=float(np.mean(per_trial.any(axis=1))),
                    noise_violations=int(np.sum(ratio > noise)), noise_violation_fraction=float(np.mean(ratio > noise)),
                    c3_needed_max=float(_draws(recs, "c3_needed").max()),
                    wrong_mean=float(np.mean(_draws(recs, "wrong"))),
                    exact_wrong_mean=float(np.mean(_draws(recs, "exact_wrong"))),
                    in_assumption1=bool(alpha <= 0.25), assumption2_unit=assumption2_unit(config, rho, n_prime),
                    negligible=bool(np.mean(_draws(recs, "exact_wrong")) <= NEGLIGIBLE),
                    exact_term_ratio=float(np.median(0.5 + (noise_term + exact_term) / before)),
                    exact_term_violations=int(np.sum(excess > exact_term)),
                    excess_share_max=float(np.max(share)) if share.size else float("nan"),
                    workers=workers, wrong=wrong))
    return rows


def _violations(config, ratios):
    rows = []
    scopes = (("alpha <= 1/4 (Assumption 1)", lambda r: r["in_assumption1"]),
              ("alpha <= 1/4 and Assumption 2 (unit constants)",
               lambda r: r["in_assumption1"] and r["assumption2_unit"]),
              ("all cells", lambda r: True))
    for scope, keep in scopes:
        cells = [r for r in ratios if keep(r)]
        draws = sum(r["draws"] for r in cells)
        for bound, key in (("Thm 1 RHS, test-suite constants", "violations"),
                           ("1/2 + noise term (no misclustering term)", "noise_violations"),
                           ("1/2 + noise term + exact misclustering term 2 c1 Delta P", "exact_term_violations")):
            count = sum(r[key] for r in cells)
            low, high = wilson_interval(count, draws, config.level) if draws else (np.nan, np.nan)
            rows.append(dict(scope=scope, bound=bound, cells=len(cells), draws=draws, violations=count,
                             fraction=count / draws if draws else float("nan"), low=float(low), high=float(high),
                             c3_needed_max=max((r["c3_needed_max"] for r in cells), default=float("nan"))))
    return rows


def summarise(config, records):
    """The tables ``ratios`` and ``violations`` (see the module docstring).

    ``ratios`` has, besides the quantiles and the bounds' violation counts, ``negligible`` (the
    cell's mean exact misclustering probability is at most :data:`NEGLIGIBLE`),
    ``exact_term_ratio`` (median over draws of ``1/2 + (noise term + 2 c1 Delta P_j') /
    distance``: Theorem 1's right-hand side with its third term at its exact value),
    ``exact_term_violations`` (draws above it), ``excess_share_max`` (the largest share of that
    exact term that a draw's excess over ``1/2`` distance + noise term uses; at most 1 where it
    accounts for every draw), ``workers`` and ``wrong`` (workers assigned in the round, and
    misclustered).  ``violations`` counts each bound's violations per scope.
    """
    ratios = _ratios(config, ok_records(records))
    return {"ratios": ratios, "violations": _violations(config, ratios)}
