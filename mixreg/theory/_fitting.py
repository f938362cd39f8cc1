"""Fitting the constants the papers do not give, and checking theory lines against the data.

A theory curve drawn with a fitted constant must say so on the figure ("fitted"), and must be
validated on data it was not fitted to (:func:`held_out_constant`).  The checks: where a
success curve crosses 1/2 (:func:`half_crossing`) and how uncertain that is
(:func:`crossing_draws`, :func:`draws_interval`), and whether groups of success rates differ at
all (:func:`stratified_homogeneity_test`).
"""

from __future__ import annotations

import numpy as np

from .._typing import ArrayLike
from ..validation import check_int, check_real

__all__ = [
    "fit_log_constant",
    "fit_separation_constant",
    "half_crossing",
    "crossing_draws",
    "draws_interval",
    "leave_group_out_constant",
    "held_out_constant",
    "stratified_homogeneity_test",
]


def fit_log_constant(observed: ArrayLike, reference: ArrayLike) -> float:
    """Least-squares fit of ``C`` in ``observed = C * reference`` on the log scale.

    ``C = exp(mean(log(observed / reference)))`` over the pairs where both are finite and
    positive; ``nan`` when there is no such pair.  Used to draw a theory curve whose constant
    the paper does not give (the figure must say "fitted").
    """
    obs = np.asarray(observed, dtype=np.float64).ravel()
    ref = np.asarray(reference, dtype=np.float64).ravel()
    if obs.shape != ref.shape:
        raise ValueError(f"observed and reference must have the same size, got {obs.size} and {ref.size}")
    ok = np.isfinite(obs) & np.isfinite(ref) & (obs > 0) & (ref > 0)
    if not ok.any():
        return float("nan")
    return float(np.exp(np.mean(np.log(obs[ok] / ref[ok]))))


def fit_separation_constant(observed_delta: ArrayLike, sigma: ArrayLike, p: ArrayLike, d: ArrayLike, m: ArrayLike,
                            n_prime: ArrayLike) -> float:
    """Fit ``C`` in ``Delta_50 = C (sigma / p) sqrt(d / (m n'))`` by least squares in log space.

    ``observed_delta`` are the empirical separations at which success crosses 1/2, one per noise
    level in ``sigma`` (same length; points with ``sigma = 0`` or a non-finite or non-positive
    separation are skipped, and the exponential term is dropped, being negligible at the ``n'``
    of the experiments).  Returns ``nan`` when no point is left to fit.  A constant fitted on
    every level cannot disagree with them: validate it on a level left out of the fit
    (:func:`held_out_constant`).
    """
    obs = np.atleast_1d(np.asarray(observed_delta, dtype=float))
    sig = np.atleast_1d(np.asarray(sigma, dtype=float))
    if obs.ndim != 1 or sig.shape != obs.shape:
        raise ValueError(f"observed_delta and sigma must be 1-D of the same length, got shapes {obs.shape} and {sig.shape}")
    if np.any(~np.isfinite(sig)) or np.any(sig < 0):
        raise ValueError(f"sigma must be finite and >= 0, got {sig.tolist()}")
    p = check_real("p", p, low=0.0, high=1.0, low_inclusive=False)
    d = check_int("d", d, low=1)
    m = check_int("m", m, low=1)
    n_prime = check_int("n_prime", n_prime, low=1)
    return fit_log_constant(obs, (sig / p) * np.sqrt(d / (m * n_prime)))  # sigma = 0: reference 0, skipped


# --------------------------------------------------------------------------------------------
# Checking a theory line against the data: where a success curve crosses 1/2, held-out
# validation of a fitted constant, and whether groups of success rates differ at all.
# --------------------------------------------------------------------------------------------


def _check_grid(x):
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or (x.size and (np.any(~np.isfinite(x)) or np.any(x <= 0) or np.any(np.diff(x) <= 0))):
        raise ValueError(f"x must be a 1-D finite, positive and increasing grid, got {x.tolist()}")
    return x


def _first_rise(x, curves, level, below_grid, beyond_grid):
    """Crossing of each row of ``curves`` (shape (B, G)), log-interpolated; see :func:`half_crossing`."""
    curves = np.atleast_2d(np.asarray(curves, dtype=float))
    out = np.full(curves.shape[0], beyond_grid)
    if x.size == 0:
        return out
    if x.size == 1:  # no pair of grid values to rise between: at or above the level, below the grid
        return np.where(curves[:, 0] >= level, below_grid, out)
    rise = (curves[:, :-1] < level) & (curves[:, 1:] >= level)
    has = rise.any(axis=1)
    i = np.argmax(rise, axis=1)  # first rise (0 where none; masked by has)
    rows = np.arange(curves.shape[0])
    y0, y1 = curves[rows, i], curves[rows, np.minimum(i + 1, x.size - 1)]
    lx = np.log(x)
    with np.errstate(all="ignore"):  # rows without a rise compute garbage, masked below
        t = (level - y0) / (y1 - y0)
        value = np.exp(lx[i] + t * (lx[np.minimum(i + 1, x.size - 1)] - lx[i]))
    out = np.where(has, value, out)
    return np.where(curves[:, 0] >= level, below_grid, out)


def half_crossing(x: ArrayLike, rate: ArrayLike, level: float = 0.5) -> float:
    """Where a success curve first rises through ``level`` (log-interpolated in ``x``).

    Parameters
    ----------
    x : array of shape (G,)
        Increasing positive grid.
    rate : array of shape (G,)
        Success rate at each grid value.
    level : float

    Returns
    -------
    float
        The first ``x`` where ``rate`` goes from below ``level`` to at least ``level``, with
        ``log x`` interpolated linearly between the two grid values; ``nan`` when that does not
        happen within the grid (also when ``rate[0] >= level``: the crossing is below the grid).

    Examples
    --------
    >>> round(half_crossing([1, 2, 4], [0, 0.25, 1]), 3)
    2.52
    """
    x = _check_grid(x)
    rate = np.asarray(rate, dtype=float)
    if rate.shape != x.shape:
        raise ValueError(f"rate must have the shape of x {x.shape}, got {rate.shape}")
    return float(_first_rise(x, rate, level, np.nan, np.nan)[0]) if x.size else float("nan")


def crossing_draws(x: ArrayLike, successes: ArrayLike, trials: ArrayLike, *, level: float = 0.5, n_draws: int = 4000,
                   seed: int = 0) -> np.ndarray:
    """Draws of where the success curve crosses ``level``, from the cells' binomial uncertainty.

    Each cell's success probability is drawn from its Jeffreys posterior
    ``Beta(S + 1/2, T - S + 1/2)`` (independent cells), and the crossing of each drawn curve is
    computed as in :func:`half_crossing`; its quantiles give an interval for the crossing that,
    unlike the pointwise band of each cell, accounts for a 0/T or T/T cell's own uncertainty.

    Parameters
    ----------
    x : array of shape (G,)
        Increasing positive grid.
    successes, trials : int arrays of shape (G,)
    level : float
    n_draws : int
    seed : int
        Seed of the draws (reproducible tables).

    Returns
    -------
    ndarray of shape (n_draws,)
        A crossing per draw: 0 when the drawn curve starts at or above ``level`` (below the
        grid), ``inf`` when it never reaches it (beyond the grid).

    Examples
    --------
    >>> draws = crossing_draws([1, 2, 4, 8], [0, 2, 18, 20], [20, 20, 20, 20])
    >>> bool(2 < np.median(draws) < 4)
    True
    """
    x = _check_grid(x)
    s, t = np.asarray(successes), np.asarray(trials)
    if s.shape != x.shape or t.shape != x.shape or np.any(s < 0) or np.any(s > t):
        raise ValueError("successes and trials must have the shape of x, with 0 <= successes <= trials")
    n_draws = check_int("n_draws", n_draws, low=1)
    rng = np.random.default_rng(check_int("seed", seed, low=0))
    curves = rng.beta(s + 0.5, t - s + 0.5, size=(n_draws, x.size))
    return _first_rise(x, curves, level, 0.0, np.inf)


def draws_interval(draws: ArrayLike, level: float = 0.95) -> tuple[float, float]:
    """Central interval of draws that may hold 0 and ``inf`` (taken at observed values, no interpolation)."""
    level = check_real("level", level, low=0.0, high=1.0, low_inclusive=False)
    draws = np.asarray(draws, dtype=float)
    draws = draws[~np.isnan(draws)]
    if draws.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(low), float(high)


def leave_group_out_constant(observed: ArrayLike, reference: ArrayLike,
                             in_group: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    r"""Fit ``C`` in ``observed = C * reference`` without each group, and its residual on the group.

    For group ``g``, :math:`C_{-g}` is :func:`fit_log_constant` over the cells
    *not* in ``g`` (a cell may belong to several groups: it is left out whenever one of them is
    held out), and the residual of a cell ``j`` of ``g`` is
    :math:`r_j = \text{observed}_j / (C_{-g}\, \text{reference}_j)`: 1 where the bound's shape,
    levelled on the other groups, predicts the cell exactly.

    Parameters
    ----------
    observed, reference : array_like of shape (n,)
        E.g. the median final error of each cell and its
        :func:`mixreg.theory.sxy_bound_shape`.
    in_group : bool array_like of shape (G, n)
        ``in_group[g, j]``: cell ``j`` belongs to group ``g``.

    Returns
    -------
    C : ndarray of shape (G,)
        ``nan`` when no usable cell lies outside the group.
    residual : ndarray of shape (G, n)
        ``nan`` outside the group.

    Examples
    --------
    >>> obs = np.array([1.0, 2.0, 4.0, 8.0])
    >>> C, r = leave_group_out_constant(obs, obs / 2, [[1, 1, 0, 0], [0, 0, 1, 1]])
    >>> C.tolist(), r[0, :2].tolist()
    ([2.0, 2.0], [1.0, 1.0])
    """
    obs = np.asarray(observed, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    member = np.asarray(in_group, dtype=bool)
    if obs.ndim != 1 or ref.shape != obs.shape or member.ndim != 2 or member.shape[1] != obs.size:
        raise ValueError(f"observed and reference must have shape (n,) and in_group (G, n); got {obs.shape}, "
                         f"{ref.shape} and {member.shape}")
    C = np.array([fit_log_constant(obs[~g], ref[~g]) if (~g).any() else np.nan for g in member])
    with np.errstate(invalid="ignore", divide="ignore"):
        residual = np.where(member, obs[None, :] / (C[:, None] * ref[None, :]), np.nan)
    return C, residual


def held_out_constant(observed: ArrayLike, draws: ArrayLike, reference: ArrayLike, *,
                      level: float = 0.95) -> list[dict]:
    """Leave-one-out validation of ``observed = C * reference`` across levels, with an interval.

    For each level ``h``, ``C`` is fitted (:func:`fit_log_constant`, via
    :func:`leave_group_out_constant`) on the *other* levels whose observation
    and reference are finite and positive, and the level is predicted as ``C * reference[h]``.
    The residual ``log10(predicted / observed)`` gets an interval by refitting on every draw
    (``draws[:, b]``, e.g. :func:`crossing_draws` of each level): the prediction and the
    held-out observation are both uncertain.  A constant fitted on every level could not
    disagree with them; this can.

    Parameters
    ----------
    observed : array of shape (L,)
        Point observation per level (``nan``: none).
    draws : array of shape (L, B)
        Draws of each level's observation (0 and ``inf`` allowed: beyond the grid).
    reference : array of shape (L,)
        The predicted scale up to the constant (``>= 0``; a level whose reference is 0 is
        predicted as 0 and never used in a fit).
    level : float
        Of the residual's interval.

    Returns
    -------
    list of dict, one per level
        ``C`` (fitted without the level; ``nan`` if no other level is usable), ``fitted_on``
        (indices of the levels used), ``predicted``, ``residual`` (``-inf`` for a zero
        prediction, ``nan`` without an observation), ``residual_low``, ``residual_high`` and
        ``verdict``: ``"consistent"`` (the interval holds 0), ``"contradicts"``, or
        ``"undetermined"`` (no fit, or an interval that is infinite on both sides).

    Examples
    --------
    >>> obs = np.array([1.0, 2.0, 4.0])
    >>> draws = obs[:, None] * np.exp(np.random.default_rng(0).normal(0, 0.1, (3, 500)))
    >>> rows = held_out_constant(obs, draws, [1.0, 2.0, 4.0])
    >>> [round(row["C"], 6) for row in rows], [row["verdict"] for row in rows]
    ([1.0, 1.0, 1.0], ['consistent', 'consistent', 'consistent'])
    """
    obs, ref = (np.asarray(a, dtype=float).ravel() for a in (observed, reference))
    draws = np.asarray(draws, dtype=float)
    if obs.shape != ref.shape or draws.ndim != 2 or draws.shape[0] != obs.size:
        raise ValueError(f"observed and reference must have shape (L,) and draws (L, B); got {obs.shape}, "
                         f"{ref.shape} and {draws.shape}")
    if np.any(ref < 0):
        raise ValueError(f"reference must be >= 0, got {ref.tolist()}")
    usable = np.isfinite(obs) & np.isfinite(ref) & (obs > 0) & (ref > 0)
    others = ~np.eye(obs.size, dtype=bool)
    constants, _ = leave_group_out_constant(obs, ref, ~others)
    rows = []
    with np.errstate(divide="ignore", invalid="ignore"):
        log_draws = np.log(draws)
        for h, c in enumerate(constants):
            c = float(c)
            train = others[h] & usable
            predicted = c * float(ref[h]) if np.isfinite(c) else float("nan")
            if not (np.isfinite(predicted) and np.isfinite(obs[h]) and obs[h] > 0):
                residual = float("nan")
            else:
                residual = float(np.log10(predicted / obs[h])) if predicted > 0 else float("-inf")
            low = high = float("nan")
            if train.any() and np.isfinite(predicted):
                # per draw: log C_b = mean over the training levels of log(draw / reference)
                log_c = np.mean(log_draws[train] - np.log(ref[train])[:, None], axis=0)
                log_pred = log_c + np.log(ref[h]) if ref[h] > 0 else np.full_like(log_c, -np.inf)
                res = (log_pred - log_draws[h]) / np.log(10.0)
                low, high = draws_interval(res, level)
            if np.isnan(low) or np.isnan(high) or (low == -np.inf and high == np.inf):
                verdict = "undetermined"
            else:
                verdict = "consistent" if low <= 0.0 <= high else "contradicts"
            rows.append(dict(C=c, fitted_on=tuple(int(i) for i in np.flatnonzero(train)), predicted=predicted,
                             residual=residual, residual_low=low, residual_high=high, verdict=verdict))
    return rows


def stratified_homogeneity_test(successes: ArrayLike, trials: ArrayLike, *, n_permutations: int = 20000,
                                seed: int = 0) -> dict:
    r"""Do success probabilities differ across groups?  An exact conditional test, per stratum.

    Rows are strata (e.g. the separation ``r``), columns groups (e.g. the noise level
    ``sigma``).  Null hypothesis: within every stratum all groups share one success
    probability (which may differ between strata).  Statistic: the likelihood-ratio
    (G) statistic summed over strata,

    .. math:: G = 2 \sum_{r, s} \Big[ S_{rs} \log\frac{S_{rs}}{E_{rs}} +
              F_{rs} \log\frac{F_{rs}}{T_{rs} - E_{rs}} \Big],
              \qquad E_{rs} = T_{rs} \frac{\sum_s S_{rs}}{\sum_s T_{rs}},

    with ``S`` successes, ``F`` failures and ``T`` trials.  Its p-value is computed exactly
    under the null by conditioning on each stratum's total successes, which are then spread
    over the groups as a multivariate hypergeometric draw (a Monte Carlo permutation test,
    ``n_permutations`` draws from a fixed seed, so the result is reproducible); the
    chi-square approximation (``df`` = sum over strata with both outcomes of groups - 1) is
    returned too but is poor for small counts.

    Parameters
    ----------
    successes, trials : int arrays of shape (R, S)
    n_permutations : int
    seed : int
        Seed of the permutation draws.

    Returns
    -------
    dict
        ``G``, ``df``, ``p_value`` (permutation, ``(1 + #{G* >= G}) / (1 + n_permutations)``)
        and ``p_chi2``.

    Examples
    --------
    >>> out = stratified_homogeneity_test([[5, 5], [1, 9]], [[10, 10], [10, 10]], n_permutations=2000)
    >>> out["df"], out["p_value"] < 0.01
    (2, True)
    """
    from scipy.stats import chi2

    s = np.atleast_2d(np.asarray(successes))
    t = np.atleast_2d(np.asarray(trials))
    if s.shape != t.shape or s.ndim != 2:
        raise ValueError(f"successes and trials must be 2-D of one shape, got {s.shape} and {t.shape}")
    if s.dtype.kind not in "iu" or t.dtype.kind not in "iu" or np.any(s < 0) or np.any(s > t):
        raise ValueError("successes and trials must be integers with 0 <= successes <= trials")
    n_permutations = check_int("n_permutations", n_permutations, low=1)

    def g_stat(succ):
        succ = np.asarray(succ, dtype=float)
        tot = np.maximum(t.sum(axis=-1, keepdims=True), 1).astype(float)  # an empty stratum adds 0
        rate = succ.sum(axis=-1, keepdims=True) / tot
        expected_s, expected_f = t * rate, t * (1.0 - rate)
        fail = t - succ
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = (np.where(succ > 0, succ * np.log(succ / expected_s), 0.0)
                     + np.where(fail > 0, fail * np.log(fail / expected_f), 0.0))
        return 2.0 * terms.sum(axis=(-2, -1))

    g_obs = float(g_stat(s))
    rng = np.random.default_rng(check_int("seed", seed, low=0))
    draws = np.empty((n_permutations,) + s.shape, dtype=np.int64)
    for r in range(s.shape[0]):
        draws[:, r, :] = rng.multivariate_hypergeometric(t[r].astype(np.int64), int(s[r].sum()),
                                                          size=n_permutations)
    g_perm = g_stat(draws)
    informative = [(row_s.sum() > 0) and (row_s.sum() < row_t.sum()) for row_s, row_t in zip(s, t)]
    df = int(sum(np.count_nonzero(row_t) - 1 for row_t, ok in zip(t, informative) if ok))
    p_value = float((1 + np.count_nonzero(g_perm >= g_obs - 1e-9 * max(1.0, g_obs))) / (1 + n_permutations))
    p_chi2 = float(chi2.sf(g_obs, df)) if df > 0 else 1.0
    return dict(G=g_obs, df=df, p_value=p_value, p_chi2=p_chi2)
