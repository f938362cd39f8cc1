"""Small statistics on tidy tables of trial records (lists of dicts)."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

__all__ = ["wilson_interval", "group_rates"]


def wilson_interval(successes, trials, level=0.95):
    """Wilson score interval for a binomial proportion.

    Parameters
    ----------
    successes, trials : int or array of int
    level : float in (0, 1)

    Returns
    -------
    low, high : ndarray
        ``nan`` where ``trials == 0``.
    """
    s = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    if np.any(s < 0) or np.any(s > n):
        raise ValueError("successes must lie in [0, trials]")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    z = norm.ppf(0.5 + level / 2.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s / n
        denom = 1.0 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    return low, high


def group_rates(records, keys, flags, *, mean_of=(), level=0.95):
    """Success rates per group of records.

    Parameters
    ----------
    records : list of dict
        Tidy per-trial records.  Records with a non-empty ``"error"`` field are excluded (a
        trial that raised is not a failure of the algorithm, and never a success).
    keys : sequence of str
        Grouping columns; groups come out sorted by these.
    flags : sequence of str
        Boolean columns; for each, ``<flag>_rate``, ``<flag>_low`` and ``<flag>_high`` (Wilson
        interval at ``level``) are returned.
    mean_of : sequence of str
        Numeric columns to average per group (``nan`` ignored) as ``<col>_mean``.

    Returns
    -------
    list of dict, one per group, with the keys, ``trials`` and the rates.
    """
    groups = {}
    for rec in records:
        if rec.get("error"):
            continue
        groups.setdefault(tuple(rec[k] for k in keys), []).append(rec)
    out = []
    for key in sorted(groups):
        rows = groups[key]
        row = dict(zip(keys, key))
        row["trials"] = len(rows)
        for f in flags:
            s = sum(bool(r[f]) for r in rows)
            lo, hi = wilson_interval(s, len(rows), level)
            row[f + "_rate"] = s / len(rows)
            row[f + "_low"] = float(lo)
            row[f + "_high"] = float(hi)
        for c in mean_of:
            vals = np.array([float(r[c]) for r in rows])
            row[c + "_mean"] = float(np.nanmean(vals)) if np.isfinite(vals).any() else float("nan")
        out.append(row)
    return out
