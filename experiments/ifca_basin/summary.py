"""The basin study's tables: success rates per ``(k, direction, alpha)`` and the measured edges."""

from __future__ import annotations

import numpy as np

from mixreg.stats import wilson_interval

from ..ifca_mechanism import ok_records

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "VARIANTS", "NOTIONS", "summarise", "basin_edge"]

NAME = "ifca_basin"
TABLES = ("rates", "edges")
DEFAULT_SEED = 20200612  # any fixed integer
VARIANTS = ("rs", "fb")  # resampling (Theorem 1's scheme), full batch
NOTIONS = ("success", "same_success")


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
    records = ok_records(records)
    rates = _rates(config, records)
    return {"rates": rates, "edges": _edges(config, rates, records)}
