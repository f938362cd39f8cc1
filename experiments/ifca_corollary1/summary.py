"""The Corollary 1 study's tables: rounds to eps, success against m, the exponential term, Lemma 2.

Every table is a function of the trials' records and the config alone (the figure and the claims'
checks read nothing else):

* ``rounds``: per ``(c1, m, h)`` with ``eps_h = (Delta / 4) 2^-h`` above the floor
  (``eps_h >= margin (sigma / p) sqrt(d / (m n'))``): Corollary 1's ``T = log2(Delta / (4 eps_h)) = h``,
  the rounds each run needed (integer: the first ``t`` with ``max_j ||theta_j^(t) - theta*_j|| <= eps``;
  interpolated: the same with ``log dist`` linear between rounds) and how many runs needed more
  than ``T``;
* ``rounds_fits``: per ``(c1, m)``, the slope of the mean interpolated rounds against
  ``log2(Delta / (4 eps))`` with a paired bootstrap interval (the trials are resampled jointly
  across the levels, which they share);
* ``success``: per ``(series, m)``, the runs of ``c1_theorem`` whose error after
  ``T = ceil(log2(Delta / (4 eps)))`` rounds is at most ``eps``, with Wilson intervals; series
  ``"fixed"``: one ``eps = kappa`` times the noise term at the smallest ``m``, for every ``m``;
  ``"scaled"``: ``eps = kappa`` times the noise term at each ``m`` (Corollary 1's ``eps`` with
  ``c5 = kappa``); ``derived_failure`` is our stationary-error law of the failure probability;
* ``success_trend``: per series, the Cochran-Armitage test of a trend of the failure proportion in
  ``log2 m`` and the logistic slope of failure on ``log m`` (its Wald interval; ``-slope`` is the
  degree of a ``poly(m)`` decay);
* ``exponential``: per ``(rho, n')``: ``x = (rho / (rho + 1))^2 n'``, the final misclustered
  fraction and the excess of the final error over the known-label run (means with bootstrap
  intervals), whether the cell is held out of the fit, and the held-out residuals;
* ``exponential_fit``: per target (misclustered fraction, excess error), ``c4`` fitted in
  ``target ~ A exp(-c4 x)`` on the cells not held out (:func:`mixreg.predictions.fit_exponent`
  on ``e^x``, whose exponent is ``-c4``) and the held-out verdict's counts;
* ``lemma2`` and ``lemma2_fits``: per ``(N, d)`` the means of Lemma 2's quantities with bootstrap
  intervals, and their exponents in ``N`` (at each ``d``) and in ``d`` (at each ``N``);
  ``lemma2_noise``: ``||X^T eps||^2 / (sigma^2 N d)`` pooled over every cell (its mean is exactly 1 in
  each), with its bootstrap interval: one comparison instead of one per cell.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from mixreg.predictions import Constant, Prediction, fit_exponent
from mixreg.stats import SlopeFit, bootstrap_mean_interval, wilson_interval
from mixreg.theory import ifca_stationary_error, misclustering_exponent_at_truth

from ..ifca_mechanism import ok_records

__all__ = ["NAME", "TABLES", "DEFAULT_SEED", "K", "PREDICTIONS", "summarise", "rounds_to", "paired_linear_fit",
           "cochran_armitage", "logistic_slope", "exponent_variable", "derived_failure"]

NAME = "ifca_corollary1"
TABLES = ("rounds", "rounds_fits", "success", "success_trend", "exponential", "exponential_fit", "lemma2",
          "lemma2_fits", "lemma2_noise")
DEFAULT_SEED = 20201201  # any fixed integer
K = 2


# ------------------------------------------------------------------------------------------------
# Predictions, registered in the manifest before the first trial
# ------------------------------------------------------------------------------------------------


def _rounds_needed(cell, base):
    """Corollary 1's ``T = log_base(Delta / (4 eps))`` at a cell with ``delta`` and ``eps``."""
    return math.log(cell["delta"] / (4.0 * cell["eps"])) / math.log(base)


def _corollary_eps(cell, c5):
    """Corollary 1's ``eps`` without its exponential term: ``c5 (sigma / p) sqrt(d / (m n'))``."""
    return c5 * (cell["sigma"] / cell["p"]) * math.sqrt(cell["d"] / (cell["m"] * cell["n_prime"]))


def _exponential_variable(cell):
    """The variable of Corollary 1's exponential term, ``(rho / (rho + 1))^2 n'``."""
    return (cell["rho"] / (cell["rho"] + 1.0)) ** 2 * cell["n_prime"]


def _lemma2_exponent(cell, N, d):
    """The exponent of ``||X^T X / N - I||`` (and of the singular values' deviation) along ``cell["axis"]``."""
    return {"N": N, "d": d}[cell["axis"]]


def _gordon(cell, C):
    """``C sqrt(d / N)``: the expected deviation of ``s_max / sqrt(N)`` from 1 is at most this with ``C = 1``."""
    return C * math.sqrt(cell["d"] / cell["N"])


def _noise_norm(cell, c):
    """``E ||X^T eps||^2 / (sigma^2 N d)``."""
    return c


#: Fixed before the data (registered in the manifest with the commit before the first trial).
PREDICTIONS = (
    Prediction("cor1_rounds", _rounds_needed, "T = log_2(Delta / (4 eps)) rounds reach eps: at most T rounds, "
               "slope at most 1 against log_2(Delta / (4 eps))",
               constants={"base": Constant(2.0, "IFCA, Theorem 1: the distance at least halves each round "
                                                "(factor 1/2), so Corollary 1's log is log_2")},
               fields=("delta", "eps")),
    Prediction("cor1_eps", _corollary_eps, "eps = c5 (sigma / p) sqrt(d / (m n')) (Corollary 1's eps where its "
               "exponential term is negligible); the failure probability within T rounds decreases in m "
               "(Corollary 1: at most log(Delta / (4 eps)) / poly(m))",
               constants={"c5": Constant(0.75, "assumed: paper gives none (our kappa, the success rule's eps)")},
               fields=("sigma", "p", "d", "m", "n_prime")),
    Prediction("cor1_exponential_shape", _exponential_variable,
               "misclustered fraction and excess error ~ A exp(-c4 x), x = (rho / (rho + 1))^2 n' "
               "(c4 and A fitted on the cells not held out, validated on the held-out cells)",
               fields=("rho", "n_prime")),
    Prediction("lemma2_exponents", _lemma2_exponent, "||X^T X / N - I||_op and the singular values' deviation "
               "~ sqrt(d / N): exponent -1/2 in N, +1/2 in d",
               constants={"N": Constant(-0.5, "IFCA, Lemma 2 (App. A.2; Vershynin 2010, Thm 5.39)"),
                          "d": Constant(0.5, "IFCA, Lemma 2 (App. A.2; Vershynin 2010, Thm 5.39)")},
               fields=("axis",)),
    Prediction("lemma2_gordon", _gordon, "E s_max(X) / sqrt(N) - 1 <= C sqrt(d / N) and "
               "E 1 - s_min(X) / sqrt(N) <= C sqrt(d / N)",
               constants={"C": Constant(1.0, "exact: Gordon's inequality for Gaussian matrices "
                                             "(Vershynin 2010, Thm 5.32)")},
               fields=("N", "d")),
    Prediction("lemma2_noise", _noise_norm, "E ||X^T eps||^2 / (sigma^2 N d) = 1 (Lemma 2's second bound, "
               "||X^T eps|| <~ sigma sqrt(N d), is this norm's scale)",
               constants={"c": Constant(1.0, "exact: E eps^T X X^T eps = sigma^2 tr E X X^T = sigma^2 N d")},
               fields=()),
)


# ------------------------------------------------------------------------------------------------
# Helpers (public: the tests and the claims' checks use them)
# ------------------------------------------------------------------------------------------------


def rounds_to(dist, eps):
    """Rounds a run needed to reach ``eps``: ``(integer, interpolated)``.

    Parameters
    ----------
    dist : array of shape (T + 1,)
        ``max_j ||theta_j^(t) - theta*_j||`` for ``t = 0..T``.
    eps : float > 0

    Returns
    -------
    integer : float
        The first ``t`` with ``dist_t <= eps``; ``nan`` if no round reached it (censored).
    interpolated : float
        ``t - 1 + log(dist_{t-1} / eps) / log(dist_{t-1} / dist_t)`` (``log dist`` linear between
        rounds), in ``(t - 1, t]``; ``0`` if ``dist_0 <= eps``, ``nan`` if censored.

    Examples
    --------
    >>> rounds_to([1.0, 0.5, 0.25, 0.125], 0.3)
    (2.0, 1.736965594166206)
    >>> rounds_to([1.0, 0.5], 0.1)
    (nan, nan)
    """
    dist = np.asarray(dist, dtype=float)
    hit = np.flatnonzero(dist <= eps)
    if hit.size == 0:
        return math.nan, math.nan
    t = int(hit[0])
    if t == 0:
        return 0.0, 0.0
    before, after = dist[t - 1], dist[t]
    frac = math.log(before / eps) / math.log(before / after) if after > 0 else 1.0
    return float(t), float(t - 1 + frac)


def paired_linear_fit(x, samples, *, n_boot, level, rng):
    """Least-squares slope of the column means of ``samples`` on ``x``, with a paired bootstrap interval.

    Parameters
    ----------
    x : array of shape (L,)
    samples : array of shape (n, L)
        Row ``i`` is trial ``i``'s outcome at every ``x`` (paired: the bootstrap resamples rows).
        ``nan`` entries are left out of their column's mean.
    n_boot : int
    level : float in (0, 1)
    rng : numpy.random.Generator

    Returns
    -------
    mixreg.stats.SlopeFit
        ``nan`` slope and interval with fewer than two levels or no trial.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> fit = paired_linear_fit([1, 2, 3], np.array([[1.0, 2.0, 3.0], [1.2, 2.2, 3.2]]), n_boot=200, level=0.95,
    ...                         rng=rng)
    >>> round(fit.slope, 6), fit.n_points
    (1.0, 3)
    """
    x = np.asarray(x, dtype=float)
    Y = np.asarray(samples, dtype=float).reshape(-1, x.size)
    if x.size < 2 or Y.shape[0] == 0:
        return SlopeFit(slope=math.nan, intercept=math.nan, low=math.nan, high=math.nan, level=level,
                        n_points=int(x.size), n_boot=n_boot)

    def line(rows):
        with np.errstate(invalid="ignore"):
            means = np.nanmean(rows, axis=0) if np.isfinite(rows).any(axis=0).all() else None
        if means is None:
            return math.nan, math.nan
        slope, intercept = np.polyfit(x, means, 1)
        return float(slope), float(intercept)

    slope, intercept = line(Y)
    boots = np.array([line(Y[rng.integers(0, Y.shape[0], Y.shape[0])])[0] for _ in range(n_boot)])
    boots = boots[np.isfinite(boots)]
    low, high = (np.quantile(boots, [(1 - level) / 2, (1 + level) / 2]) if boots.size and np.isfinite(slope)
                 else (math.nan, math.nan))
    return SlopeFit(slope=slope, intercept=intercept, low=float(low), high=float(high), level=level,
                    n_points=int(x.size), n_boot=n_boot)


def cochran_armitage(events, trials, scores):
    """The Cochran-Armitage test of a linear trend of a proportion in ``scores``.

    Parameters
    ----------
    events, trials : array of int, shape (G,)
        Events (here: failures) and trials of each group (independent groups).
    scores : array of shape (G,)

    Returns
    -------
    z : float
        ``sum_g s_g (e_g - n_g pbar) / sqrt(pbar (1 - pbar) (sum n_g s_g^2 - (sum n_g s_g)^2 / N))``:
        negative when the proportion falls with the score; ``nan`` when no or every trial is an event.
    p_decrease, p_increase : float
        One-sided p-values (normal approximation) of a falling and of a rising proportion.

    Examples
    --------
    >>> z, p_down, p_up = cochran_armitage([10, 5, 1], [50, 50, 50], [0, 1, 2])
    >>> round(z, 3), p_down < 0.01 < p_up
    (-2.916, True)
    """
    e = np.asarray(events, dtype=float)
    n = np.asarray(trials, dtype=float)
    s = np.asarray(scores, dtype=float)
    N = n.sum()
    pbar = e.sum() / N if N else math.nan
    if not (0.0 < pbar < 1.0):
        return math.nan, math.nan, math.nan
    stat = float(np.sum(s * (e - n * pbar)))
    var = pbar * (1 - pbar) * (np.sum(n * s**2) - np.sum(n * s) ** 2 / N)
    if not var > 0:
        return math.nan, math.nan, math.nan
    z = stat / math.sqrt(var)
    return z, float(sps.norm.cdf(z)), float(sps.norm.sf(z))


def logistic_slope(events, trials, x, *, level=0.95, iterations=100):
    """Maximum-likelihood slope ``b`` of ``logit P(event) = a + b x`` on grouped binomial data, with its
    Wald interval.

    Returns
    -------
    slope, low, high : float
        ``nan`` when the fit does not converge (no event, every trial an event, or a separation).

    Examples
    --------
    >>> b, lo, hi = logistic_slope([10, 5, 1], [50, 50, 50], [0.0, 1.0, 2.0])
    >>> round(b, 3), lo < b < hi < 0
    (-1.088, True)
    """
    e = np.asarray(events, dtype=float)
    n = np.asarray(trials, dtype=float)
    X = np.column_stack([np.ones_like(np.asarray(x, dtype=float)), np.asarray(x, dtype=float)])
    if e.sum() == 0 or e.sum() == n.sum():
        return math.nan, math.nan, math.nan
    beta = np.zeros(2)
    for _ in range(iterations):
        prob = 1.0 / (1.0 + np.exp(-X @ beta))
        w = n * prob * (1 - prob)
        info = X.T @ (w[:, None] * X)
        try:
            step = np.linalg.solve(info, X.T @ (e - n * prob))
        except np.linalg.LinAlgError:
            return math.nan, math.nan, math.nan
        beta = beta + step
        if np.max(np.abs(step)) < 1e-10:
            break
    else:
        return math.nan, math.nan, math.nan
    if np.max(np.abs(beta)) > 50:  # a separation: the likelihood has no finite maximum
        return math.nan, math.nan, math.nan
    prob = 1.0 / (1.0 + np.exp(-X @ beta))
    cov = np.linalg.inv(X.T @ ((n * prob * (1 - prob))[:, None] * X))
    half = sps.norm.ppf(0.5 + level / 2) * math.sqrt(cov[1, 1])
    return float(beta[1]), float(beta[1] - half), float(beta[1] + half)


def exponent_variable(rho, n_prime):
    """``(rho / (rho + 1))^2 n'``, the variable of Corollary 1's exponential term."""
    return _exponential_variable(dict(rho=float(rho), n_prime=float(n_prime)))


def derived_failure(eps, *, c1, sigma, d, m, n_prime, k=K, rounds=None, start=None):
    """Our law of ``P(max_j ||theta_j^(T) - theta*_j|| > eps)`` for balanced clusters (derived, not the paper's).

    At stationarity each cluster's error is ``e_j ~ s N(0, I_d / d)``-like with mean square
    ``s^2`` from :func:`mixreg.theory.ifca_stationary_error` (the population Hessian, no misclustering), so
    ``||e_j||^2 d / s^2 ~ chi^2_d`` independently for the ``k`` clusters; the transient
    ``start (1 - 2 c1)^T`` (``rounds``, ``start`` given) is added to ``eps``'s side as a shift.

    Returns
    -------
    float
    """
    p = 1.0 / k
    s = float(ifca_stationary_error(c1 / p, [p] * k, sigma, d, m, n_prime)[0])
    room = eps
    if rounds is not None and start is not None:
        room = eps - start * abs(1 - 2 * c1) ** rounds
    if room <= 0:
        return 1.0
    return float(1.0 - sps.chi2.cdf(room**2 * d / s**2, d) ** k)


# ------------------------------------------------------------------------------------------------
# Tables
# ------------------------------------------------------------------------------------------------


def _noise_term(config, m, n_prime, sigma):
    return (sigma * K) * math.sqrt(config.d / (m * n_prime))


def _runs(records, part):
    return [r for r in ok_records(records) if r["part"] == part and not r.get("diverged")]


def _dist(record, rounds):
    return np.array([float(record[f"dist_{t}"]) for t in range(rounds + 1)])


def _eps_levels(config, m):
    """``(h, eps_h)`` above the floor at ``m`` for the rounds part."""
    floor = config.margin * _noise_term(config, m, config.n_prime, config.sigma)
    delta = config.separation
    return [(h, delta / 4.0 * 2.0**-h) for h in range(1, config.levels + 1) if delta / 4.0 * 2.0**-h >= floor]


def _rounds_tables(config, records):
    runs = _runs(records, "rounds")
    rows, fits = [], []
    for ci, c1 in enumerate(config.c1s):
        for m in config.ms:
            recs = [r for r in runs if r["c1"] == c1 and r["m"] == m]
            levels = _eps_levels(config, m)
            if not recs or not levels:
                continue
            ints = np.full((len(recs), len(levels)), np.nan)
            interp = np.full_like(ints, np.nan)
            for i, r in enumerate(recs):
                dist = _dist(r, config.rounds)
                for j, (_, eps) in enumerate(levels):
                    ints[i, j], interp[i, j] = rounds_to(dist, eps)
            for j, (h, eps) in enumerate(levels):
                col, icol = ints[:, j], interp[:, j]
                done = np.isfinite(col)
                _, low, high = bootstrap_mean_interval(icol, np.random.default_rng([DEFAULT_SEED, 1, ci, m, h]),
                                                       config.n_boot, config.level)
                rows.append(dict(
                    c1=float(c1), m=int(m), h=h, eps=eps, log2_ratio=float(h), T=h, trials=len(recs),
                    noise_term=_noise_term(config, m, config.n_prime, config.sigma),
                    mean_rounds=float(np.mean(col[done])) if done.any() else math.nan,
                    max_rounds=float(np.max(col[done])) if done.any() else math.nan,
                    mean_interp=float(np.mean(icol[done])) if done.any() else math.nan,
                    interp_low=float(low), interp_high=float(high),
                    exceed=int(np.sum(col[done] > h)), censored=int(np.sum(~done))))
            xs = np.array([float(h) for h, _ in levels])
            fit = paired_linear_fit(xs, interp, n_boot=config.n_boot, level=config.level,
                                    rng=np.random.default_rng([DEFAULT_SEED, 2, ci, m]))
            fit_int = paired_linear_fit(xs, ints, n_boot=config.n_boot, level=config.level,
                                        rng=np.random.default_rng([DEFAULT_SEED, 3, ci, m]))
            fits.append(dict(c1=float(c1), m=int(m), levels=len(levels), h_min=int(xs.min()), h_max=int(xs.max()),
                             trials=len(recs), slope=fit.slope, intercept=fit.intercept, low=fit.low, high=fit.high,
                             level=fit.level, n_boot=fit.n_boot, slope_integer=fit_int.slope,
                             low_integer=fit_int.low, high_integer=fit_int.high,
                             population_slope=math.log(2) / -math.log(abs(1 - 2 * c1)),
                             exceed=int(np.nansum(ints > xs)), pairs=int(np.isfinite(ints).sum()),
                             theorem_c1=bool(math.isclose(c1, config.c1_theorem))))
    return rows, fits


def _success_tables(config, records):
    runs = [r for r in _runs(records, "rounds") if math.isclose(r["c1"], config.c1_theorem)]
    rows, trends = [], []
    m_min = min(config.ms)
    for series in ("fixed", "scaled"):
        groups = []
        for m in config.ms:
            recs = [r for r in runs if r["m"] == m]
            if not recs:
                continue
            at = m_min if series == "fixed" else m
            eps = config.kappa * _noise_term(config, at, config.n_prime, config.sigma)
            T = int(math.ceil(math.log2(config.separation / (4 * eps)) - 1e-12))
            if T > config.rounds:
                raise ValueError(f"the success rule needs T = {T} rounds at m={m}, the runs have rounds="
                                 f"{config.rounds}")
            ok = [float(r[f"dist_{T}"]) <= eps for r in recs]
            succ, n = int(np.sum(ok)), len(ok)
            low, high = wilson_interval(n - succ, n, config.level)
            derived = derived_failure(eps, c1=config.c1_theorem, sigma=config.sigma, d=config.d, m=m,
                                      n_prime=config.n_prime, rounds=T,
                                      start=config.alpha * config.separation)
            rows.append(dict(series=series, m=int(m), eps=eps, eps_over_noise=eps / _noise_term(
                config, m, config.n_prime, config.sigma), T=T, trials=n, successes=succ, failures=n - succ,
                failure=(n - succ) / n, failure_low=float(low), failure_high=float(high),
                derived_failure=derived))
            groups.append((m, n - succ, n))
        if len(groups) < 2:
            continue
        ms, fails, ns = (np.array(v, dtype=float) for v in zip(*groups))
        z, p_down, p_up = cochran_armitage(fails, ns, np.log2(ms))
        b, b_low, b_high = logistic_slope(fails, ns, np.log(ms), level=config.level)
        trends.append(dict(series=series, groups=len(groups), trials=int(ns.sum()), failures=int(fails.sum()),
                           z=z, p_decrease=p_down, p_increase=p_up, slope=b, slope_low=b_low, slope_high=b_high,
                           degree=-b, degree_low=-b_high, degree_high=-b_low, level=config.level))
    return rows, trends


def _exponential_tables(config, records):
    runs = _runs(records, "exponential")
    cells, trial_x, trial_m, trial_e = [], [], [], []
    for rho in config.rhos:
        for n_prime in config.n_primes_exp:
            recs = [r for r in runs if r["rho"] == rho and int(r["n_prime"]) == n_prime]
            if not recs:
                continue
            x = exponent_variable(rho, n_prime)
            miscl = np.array([float(r["final_miscl"]) for r in recs])
            excess = np.array([float(r["excess"]) for r in recs])
            final = np.array([float(r["final_err"]) for r in recs])
            known = np.array([float(r["known_err"]) for r in recs])
            rng = np.random.default_rng([DEFAULT_SEED, 4, int(round(1000 * rho)), n_prime])
            _, m_low, m_high = bootstrap_mean_interval(miscl, rng, config.n_boot, config.level)
            _, e_low, e_high = bootstrap_mean_interval(excess, rng, config.n_boot, config.level)
            sigma = config.separation / math.sqrt(rho)
            cells.append(dict(
                rho=float(rho), n_prime=int(n_prime), x=x, trials=len(recs), held_out=bool(rho in config.held_out_rhos),
                miscl=float(miscl.mean()), miscl_low=float(m_low), miscl_high=float(m_high),
                final_err=float(final.mean()), known_err=float(known.mean()),
                excess=float(excess.mean()), excess_low=float(e_low), excess_high=float(e_high),
                noise_term=_noise_term(config, config.m_exp, n_prime, sigma),
                exact_exponent=float(misclustering_exponent_at_truth(rho) * n_prime),
                fit_miscl=bool(0 < miscl.mean() <= config.miscl_max)))
            trial_x += [x] * len(recs)
            trial_m.append(miscl)
            trial_e.append(excess)
    fits = []
    if not cells:
        return cells, fits
    xs = np.array(trial_x)
    for ti, (target, values) in enumerate((("miscl", np.concatenate(trial_m)), ("excess", np.concatenate(trial_e)))):
        # the fit's cells: the target's mean positive (a log), and for the misclustered fraction at most miscl_max
        keep_x = {c["x"] for c in cells if c[target] > 0 and (target != "miscl" or c["fit_miscl"])}
        use = np.isin(xs, list(keep_x))
        held = sorted(c["x"] for c in cells if c["held_out"] and c["x"] in keep_x)
        fit = fit_exponent(np.exp(xs[use]), values[use], held_out=[math.exp(v) for v in held], statistic="mean",
                           n_boot=config.n_boot, level=config.level, rng=np.random.default_rng([DEFAULT_SEED, 5, ti]))
        by_x = {round(math.log(r["x"]), 9): r for r in fit.held_out}
        for c in cells:
            r = by_x.get(round(c["x"], 9))
            c[f"{target}_fitted"] = (float(np.exp(fit.intercept + fit.slope * c["x"])) if np.isfinite(fit.slope)
                                     else math.nan)
            c[f"{target}_residual"] = r["residual"] if r else math.nan
            c[f"{target}_residual_low"] = r["residual_low"] if r else math.nan
            c[f"{target}_residual_high"] = r["residual_high"] if r else math.nan
        residuals = [(r["residual_low"], r["residual_high"], r["residual"]) for r in fit.held_out]
        finite = [(lo, hi, res) for lo, hi, res in residuals if np.isfinite(lo) and np.isfinite(hi)]
        fits.append(dict(target=target, c4=-fit.slope, c4_low=-fit.high, c4_high=-fit.low, log_A=fit.intercept,
                         level=fit.level, n_boot=fit.n_boot, fit_cells=fit.n_points, held_out_cells=len(fit.held_out),
                         held_out_compared=len(finite),
                         held_out_outside=sum(not (lo <= 0 <= hi) for lo, hi, _ in finite),
                         max_abs_residual=max((abs(res) for _, _, res in finite), default=math.nan),
                         slope=fit.slope, low=fit.low, high=fit.high, intercept=fit.intercept))
    return cells, fits


def _lemma2_tables(config, records):
    recs = [r for r in ok_records(records) if r["part"] == "lemma2"]
    rows, fits = [], []
    quantities = ("op_dev", "sv_dev", "smax_dev", "smin_dev", "noise_ratio", "noise_ratio_sq")
    samples = {}
    for N in config.lemma2_ns:
        for d in config.lemma2_ds:
            cell = [r for r in recs if int(r["n"]) == N and int(r["d"]) == d]
            if not cell:
                continue
            row = dict(N=int(N), d=int(d), trials=len(cell), sqrt_d_over_N=math.sqrt(d / N))
            for qi, q in enumerate(quantities):
                v = np.array([float(r[q]) for r in cell])
                samples[(q, N, d)] = v
                _, low, high = bootstrap_mean_interval(v, np.random.default_rng([DEFAULT_SEED, 6, qi, N, d]),
                                                    config.n_boot, config.level)
                row.update({q: float(v.mean()), f"{q}_low": float(low), f"{q}_high": float(high)})
            rows.append(row)
    for qi, q in enumerate(("sv_dev", "op_dev")):
        for axis, at_values, along in (("N", config.lemma2_ds, config.lemma2_ns), ("d", config.lemma2_ns,
                                                                                   config.lemma2_ds)):
            for at in at_values:
                keys = [(q, v, at) if axis == "N" else (q, at, v) for v in along]
                xs = [v for v, key in zip(along, keys) if key in samples]
                if len(xs) < 2:
                    continue
                fit = fit_exponent(np.array(xs, dtype=float), [samples[key] for key in keys if key in samples],
                                   n_boot=config.n_boot, level=config.level,
                                   rng=np.random.default_rng([DEFAULT_SEED, 7, qi, int(axis == "N"), at]))
                fits.append(dict(quantity=q, axis=axis, at=int(at), points=fit.n_points, slope=fit.slope,
                                 intercept=fit.intercept, low=fit.low, high=fit.high, level=fit.level,
                                 n_boot=fit.n_boot, predicted=-0.5 if axis == "N" else 0.5))
    pooled = np.array([float(r["noise_ratio_sq"]) for r in recs])
    mean, low, high = bootstrap_mean_interval(pooled, np.random.default_rng([DEFAULT_SEED, 8]), config.n_boot,
                                              config.level)
    noise = [dict(draws=int(np.isfinite(pooled).sum()), cells=len(rows), mean=mean, low=low, high=high,
                  level=config.level)]
    return rows, fits, noise


def summarise(config, records):
    """The tables of :data:`TABLES` (see the module docstring)."""
    rounds, rounds_fits = _rounds_tables(config, records)
    success, trend = _success_tables(config, records)
    exponential, exponential_fit = _exponential_tables(config, records)
    lemma2, lemma2_fits, lemma2_noise = _lemma2_tables(config, records)
    return dict(rounds=rounds, rounds_fits=rounds_fits, success=success, success_trend=trend,
                exponential=exponential, exponential_fit=exponential_fit, lemma2=lemma2, lemma2_fits=lemma2_fits,
                lemma2_noise=lemma2_noise)
