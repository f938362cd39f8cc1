"""IFCA against its theorems, mechanism by mechanism: the basin of the initialisation, the
misclustering probability of one identity estimate and the one-round contraction
(``experiments/ifca_basin.py``, ``experiments/ifca_misclustering.py``,
``experiments/ifca_contraction.py``).

Every function reads tidy tables (lists of dicts, as the experiments' ``summarise`` writes them)
and draws; theory values come in the tables.
"""

from __future__ import annotations

import matplotlib.lines
import matplotlib.patches
import matplotlib.ticker
import numpy as np

from ._common import _plain, plt

__all__ = ["plot_ifca_basin", "plot_misclustering_exponent", "plot_one_round_contraction"]

#: Colours of the initial directions of the basin figure.
DIRECTION_COLOURS = {"random": "tab:blue", "adversarial": "tab:red", "shifted": "tab:orange"}
#: Line styles of the two IFCA variants: the theorem's resampling scheme and full batch.
VARIANT_STYLES = {"rs": ("-", "o", "resampling (Thm 1's scheme)"), "fb": ("--", "s", "full batch (no resampling)")}


def _floats(rows, key):
    return np.array([np.nan if r.get(key) is None else float(r[key]) for r in rows], dtype=float)


def _finish(fig, handles, *, title, footnote, ncol=3, legend_height=0.06):
    bottom = 0.07 if footnote else 0.0
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=ncol, frameon=False,
               bbox_to_anchor=(0.5, bottom))
    if title:
        fig.suptitle(title, fontsize=11)
    if footnote:
        fig.text(0.01, 0.005, footnote, fontsize=7, va="bottom", ha="left", wrap=True)
    rows = (len(handles) + ncol - 1) // ncol
    fig.tight_layout(rect=(0, bottom + 0.01 + legend_height * rows / 3, 1, 1))
    return fig


def _log_alpha_axis(ax):
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator([0.1, 0.25, 0.5, 1.0, 2.0, 3.0]))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def plot_ifca_basin(rates, edges, *, title=None, footnote=None):
    """Success probability and final error of IFCA against the initial closeness ``alpha``.

    Parameters
    ----------
    rates : list of dict
        One row per ``(k, direction, alpha)`` with, for each variant ``v`` in ``rs``
        (resampling) and ``fb`` (full batch): ``<v>_success_rate/_low/_high`` (matched
        distance below the threshold, Wilson interval), ``<v>_same_success_rate/_low/_high``
        (the same without permutation), ``<v>_err_median/_q25/_q75`` (final matched max
        distance over ``Delta``) and ``<v>_threshold_rel`` (threshold over ``Delta``).
    edges : list of dict
        One row per ``(k, direction, variant, notion)`` with ``edge`` (measured) and
        ``population_edge`` (median over the trials of the population edge).

    Returns
    -------
    matplotlib.figure.Figure
        Rows: success (matched), success (no permutation), final error; one column per ``k``.
    """
    ks = sorted({int(r["k"]) for r in rates})
    directions = [d for d in DIRECTION_COLOURS if any(r["direction"] == d for r in rates)]
    fig, axes = plt.subplots(3, len(ks), figsize=(6.4 * len(ks), 11.5), sharex=True, squeeze=False)
    notions = (("success", "success: matched max distance < threshold"),
               ("same_success", "success without permutation (θ_j → θ*_j, Thm 1's notion)"))
    n_series = len(directions) * len(VARIANT_STYLES)
    for col, k in enumerate(ks):
        for i_dir, direction in enumerate(directions):
            rows = sorted((r for r in rates if int(r["k"]) == k and r["direction"] == direction),
                          key=lambda r: float(r["alpha"]))
            alpha = _floats(rows, "alpha")
            colour = DIRECTION_COLOURS[direction]
            for i_var, (v, (ls, marker, _)) in enumerate(VARIANT_STYLES.items()):
                # the Wilson intervals as thin bars, the series shifted side by side on the log axis
                jitter = np.exp(0.018 * (i_dir * len(VARIANT_STYLES) + i_var - (n_series - 1) / 2))
                for row_index, (notion, _) in enumerate(notions):
                    ax = axes[row_index][col]
                    y = _floats(rows, f"{v}_{notion}_rate")
                    lo, hi = _floats(rows, f"{v}_{notion}_low"), _floats(rows, f"{v}_{notion}_high")
                    ax.plot(alpha, y, ls=ls, marker=marker, ms=3.5, color=colour, lw=1.5)
                    ax.errorbar(alpha * jitter, y, yerr=np.clip([y - lo, hi - y], 0, None), fmt="none",
                                ecolor=colour, elinewidth=0.8, alpha=0.55, capsize=0)
                ax = axes[2][col]
                med = _floats(rows, f"{v}_err_median")
                ax.plot(alpha, med, ls=ls, marker=marker, ms=3.5, color=colour, lw=1.5)
                ax.fill_between(alpha, _floats(rows, f"{v}_err_q25"), _floats(rows, f"{v}_err_q75"),
                                color=colour, alpha=0.08 if v == "fb" else 0.15, lw=0)
            pop = [float(e["population_edge"]) for e in edges
                   if int(e["k"]) == k and e["direction"] == direction and e["variant"] == "rs"]
            if direction == "random" and pop and np.isfinite(pop[0]):
                for ax in axes[:, col]:
                    ax.axvline(pop[0], color=colour, ls=(0, (1, 1.5)), lw=1.6)
        thresholds = {v: np.nanmedian(_floats([r for r in rates if int(r["k"]) == k], f"{v}_threshold_rel"))
                      for v in VARIANT_STYLES}
        for v, (ls, _, _) in VARIANT_STYLES.items():
            axes[2][col].axhline(thresholds[v], color="0.3", ls=ls, lw=0.9)
        for ax in axes[:, col]:
            ax.axvspan(1e-3, 0.25, color="0.85", alpha=0.6, lw=0, zorder=0)
            ax.axvline(0.5, color="0.2", ls="-.", lw=1.2)
            _log_alpha_axis(ax)
            ax.grid(True, which="both", alpha=0.25)
        for row_index in range(2):
            axes[row_index][col].set_ylim(-0.03, 1.03)
            axes[row_index][col].set_title(f"k = {k}: {notions[row_index][1]}", fontsize=9.5)
        axes[2][col].set_yscale("log")
        axes[2][col].set_title(f"k = {k}: final error (median, quartile band)", fontsize=9.5)
        axes[2][col].set_xlabel("initial closeness α:  ‖θ_j⁽⁰⁾ − θ*_j‖ = α Δ")
        top = axes[0][col].secondary_xaxis("top", functions=(lambda x: x, lambda x: x))
        top.xaxis.set_major_locator(matplotlib.ticker.FixedLocator([0.1, 0.25, 0.5]))
        top.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _p: f"{0.5 - x:g}"))
        top.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        top.set_xlabel("arXiv closeness α' = 1/2 − α  (Assumption 1: ‖θ_j⁽⁰⁾ − θ*_j‖ ≤ (1/2 − α')Δ)",
                       fontsize=8)
        axes[0][col].set_xlim(min(_floats(rates, "alpha")) / 1.3, max(_floats(rates, "alpha")) * 1.3)
    axes[0][0].set_ylabel("success probability (bars: 95% Wilson)")
    axes[1][0].set_ylabel("success probability (bars: 95% Wilson)")
    axes[2][0].set_ylabel("final matched max distance / Δ")
    handles = [matplotlib.lines.Line2D([], [], color=DIRECTION_COLOURS[d], lw=2, label=f"{d} direction")
               for d in directions]
    handles += [matplotlib.lines.Line2D([], [], color="0.3", ls=ls, marker=mk, ms=4, label=label)
                for ls, mk, label in VARIANT_STYLES.values()]
    handles += [
        matplotlib.patches.Patch(color="0.85", label="NeurIPS Assumption 1 / Thm 1's ball: α ≤ 1/4"),
        matplotlib.lines.Line2D([], [], color="0.2", ls="-.", label="α = 1/2: arXiv Assumption 1 limit (α' → 0); "
                                "population edge of the adversarial and shifted directions"),
        matplotlib.lines.Line2D([], [], color=DIRECTION_COLOURS["random"], ls=(0, (1, 1.5)), lw=1.6,
                                label="population edge of the random directions (median over trials)"),
        matplotlib.lines.Line2D([], [], color="0.3", lw=0.9, label="success thresholds (bottom row; by line style)"),
    ]
    return _finish(fig, handles, title=title, footnote=footnote, ncol=3, legend_height=0.08)


def plot_misclustering_exponent(rates, curves, exponents, *, title=None, footnote=None):
    """The misclustering probability of one identity estimate against ``n'``, and its exponent.

    Parameters
    ----------
    rates : list of dict
        One row per ``(rho, n_prime)``: ``rate``, ``low``, ``high`` (Wilson interval of the
        measured fraction of misclustered workers).
    curves : list of dict
        One row per ``(rho, n_prime)`` on a dense grid: ``exact`` (the exact probability) and
        ``chernoff`` (``exp(-I n')``).
    exponents : list of dict
        One row per ``rho``: ``fitted``, ``fitted_low``, ``fitted_high`` (decay exponent from
        the measured rates, bootstrap interval), ``exact_slope`` (the exact probability's slope
        on the same grid), ``chernoff`` (exact asymptotic exponent), ``lemma1_fitted``
        (``c4 (rho/(rho+1))^2`` with the fitted ``c4``), ``lemma1_bound`` (with the bound's
        ``c4``), ``role`` (``"fit"`` or ``"held out"``), ``c4_fitted``, ``c4_bound``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    rhos = sorted({float(r["rho"]) for r in rates})
    colours = plt.get_cmap("viridis")(np.linspace(0.0, 0.85, max(len(rhos), 1)))
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13.5, 6.0), gridspec_kw={"width_ratios": [1.25, 1.0]})
    for colour, rho in zip(colours, rhos):
        rows = sorted((r for r in rates if float(r["rho"]) == rho), key=lambda r: float(r["n_prime"]))
        x, y = _floats(rows, "n_prime"), _floats(rows, "rate")
        lo, hi = _floats(rows, "low"), _floats(rows, "high")
        shown = y > 0
        ax.errorbar(x[shown], y[shown], yerr=[y[shown] - lo[shown], hi[shown] - y[shown]], fmt="o", ms=4,
                    color=colour, capsize=2, lw=1.1)
        zero = ~shown
        if zero.any():  # no misclustered worker: the interval's top, as a downward triangle
            ax.plot(x[zero], hi[zero], "v", ms=5, color=colour)
        dense = sorted((r for r in curves if float(r["rho"]) == rho), key=lambda r: float(r["n_prime"]))
        dx, dy = _floats(dense, "n_prime"), _floats(dense, "exact")
        ax.plot(dx, dy, "-", color=colour, lw=1.6)
        ax.plot(dx, _floats(dense, "chernoff"), ":", color=colour, lw=1.1)
        ax.annotate(f"ρ = {rho:g}", (dx[-1], dy[-1]), xytext=(3, 0), textcoords="offset points", color=colour,
                    fontsize=8, va="center", ha="left")
    ax.set_yscale("log")
    ax.set_xlim(left=0)
    ax.set_xlabel("n' (points of the identity estimate)")
    ax.set_ylabel("fraction of workers misclustered (95% Wilson)")
    ax.set_title("(a) P(S₂ < S₁) at θ = θ*, k = 2, against n' (semi-log)", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)

    ex = sorted(exponents, key=lambda r: float(r["rho"]))
    rho = _floats(ex, "rho")
    grid = np.geomspace(rho.min() / 1.5, rho.max() * 1.5, 200)
    bx.plot(grid, 0.5 * np.log1p(grid / 4.0), "-", color="k", lw=1.6,
            label="exact Chernoff exponent ½ log(1 + ρ/4) (n' → ∞)")
    fit = ex[0]
    shape = (grid / (grid + 1.0)) ** 2
    bx.plot(grid, float(fit["c4_fitted"]) * shape, "--", color="tab:red", lw=1.4,
            label=f"Lemma 1 shape c4 (ρ/(ρ+1))², c4 = {float(fit['c4_fitted']):.3g} fitted to the filled points")
    bx.plot(grid, float(fit["c4_bound"]) * shape, ":", color="tab:red", lw=1.4,
            label=f"Lemma 1 shape with c4 = {float(fit['c4_bound']):.3g}: below the exact exponent at every ρ "
                  "and every geometry of Assumption 1")
    measured = _floats(ex, "fitted")
    lo, hi = _floats(ex, "fitted_low"), _floats(ex, "fitted_high")
    held = np.array([r["role"] != "fit" for r in ex])
    for mask, face, label in ((~held, None, "measured exponent (fit set), 95% bootstrap"),
                              (held, "white", "measured exponent (held out), 95% bootstrap")):
        if mask.any():
            bx.errorbar(rho[mask], measured[mask], yerr=[measured[mask] - lo[mask], hi[mask] - measured[mask]],
                        fmt="o", ms=6, color=colours[len(colours) // 2], mfc=face, capsize=3, lw=1.2, label=label)
    bx.plot(rho, _floats(ex, "exact_slope"), "x", ms=8, mew=1.6, color="k",
            label="exact probability's slope on the measured n' grid")
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain))
    bx.set_xlabel("ρ = Δ² / σ²")
    bx.set_ylabel("decay exponent  −d log P / dn'")
    bx.set_title("(b) exponent: measured, exact and Lemma 1's shape", fontsize=10)
    bx.grid(True, which="both", alpha=0.25)
    grey = "0.3"
    handles = [
        matplotlib.lines.Line2D([], [], color=grey, marker="o", ls="none", label="measured (IFCA's identity estimate)"),
        matplotlib.lines.Line2D([], [], color=grey, ls="-", label="exact probability (prediction, no fitted constant)"),
        matplotlib.lines.Line2D([], [], color=grey, ls=":", label="Chernoff bound exp(−I n'), exact I"),
    ]
    handles += bx.get_legend_handles_labels()[0]
    return _finish(fig, handles, title=title, footnote=footnote, ncol=2, legend_height=0.11)


def plot_one_round_contraction(ratios, *, title=None, footnote=None):
    """One IFCA round's contraction ratio against ``n'``, per ``alpha``, with Theorem 1's bound.

    Parameters
    ----------
    ratios : list of dict
        One row per ``(rho, alpha, n_prime)``: quantiles ``q05, q25, q50, q75, q95`` of
        ``||theta+ - theta*|| / ||theta - theta*||`` over draws (trials x clusters),
        ``bound_ratio`` (Theorem 1's right-hand side over the current distance),
        ``noise_ratio`` (the same without the misclustering term), ``wrong_mean`` and
        ``exact_wrong_mean`` (measured and exact misclustering), ``in_assumption1``.

    Returns
    -------
    matplotlib.figure.Figure
        Top: ratios (median, 25-75% and 5-95% bands); bottom: misclustered fraction.
    """
    rhos = sorted({float(r["rho"]) for r in ratios})
    alphas = sorted({float(r["alpha"]) for r in ratios})
    colours = plt.get_cmap("plasma")(np.linspace(0.05, 0.8, max(len(alphas), 1)))
    fig, axes = plt.subplots(2, len(rhos), figsize=(6.3 * len(rhos), 9.5), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": [1.6, 1.0]})
    ymax = 2.0
    for col, rho in enumerate(rhos):
        ax, bx = axes[0][col], axes[1][col]
        for colour, alpha in zip(colours, alphas):
            rows = sorted((r for r in ratios if float(r["rho"]) == rho and float(r["alpha"]) == alpha),
                          key=lambda r: float(r["n_prime"]))
            x = _floats(rows, "n_prime")
            ax.plot(x, _floats(rows, "q50"), "-o", ms=3.5, color=colour, lw=1.6)
            ax.fill_between(x, _floats(rows, "q25"), _floats(rows, "q75"), color=colour, alpha=0.25, lw=0)
            ax.fill_between(x, _floats(rows, "q05"), _floats(rows, "q95"), color=colour, alpha=0.1, lw=0)
            covered = bool(rows[0]["in_assumption1"])
            bound = _floats(rows, "bound_ratio")
            ax.plot(x, np.minimum(bound, 10 * ymax), ls="--" if covered else (0, (6, 3, 1, 3)), color=colour, lw=1.2)
            ax.plot(x, _floats(rows, "noise_ratio"), ":", color=colour, lw=1.4)
            ax.plot(x, _floats(rows, "max_ratio"), "^", ms=4, color=colour, mfc="none")
            bx.plot(x, _floats(rows, "wrong_mean"), "o", ms=4, color=colour)
            bx.plot(x, _floats(rows, "exact_wrong_mean"), "-", color=colour, lw=1.3)
        ax.axhline(0.5, color="0.2", lw=1.0)
        ax.set_ylim(0.0, ymax)
        bounds = _floats([r for r in ratios if float(r["rho"]) == rho], "bound_ratio")
        if np.nanmin(bounds) > ymax:
            ax.text(0.98, 0.97, f"Thm 1 RHS / distance, test-suite constants:\n{np.nanmin(bounds):.3g} to "
                    f"{np.nanmax(bounds):.3g} here (off the scale)", transform=ax.transAxes, ha="right", va="top",
                    fontsize=8, color="0.25")
        ax.set_title(f"ρ = {rho:g}: ‖θ⁺_j − θ*_j‖ / ‖θ_j − θ*_j‖ after one round", fontsize=9.5)
        bx.set_yscale("log")
        bx.set_title(f"ρ = {rho:g}: workers misclustered in that round", fontsize=9.5)
        bx.set_xlabel("n' (points per worker in each of the round's two subsets)")
        n_primes = sorted({float(r["n_prime"]) for r in ratios})
        for a in (ax, bx):
            a.set_xscale("log")
            a.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(n_primes))
            a.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain))
            a.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            a.grid(True, which="both", alpha=0.25)
    axes[0][0].set_ylabel("contraction ratio (median, 25–75%, 5–95%)")
    axes[1][0].set_ylabel("fraction misclustered")
    handles = [matplotlib.lines.Line2D([], [], color=c, lw=2, label=f"α = {a:g}" + ("" if a <= 0.25 else
                                                                                     " (outside Assumption 1)"))
               for c, a in zip(colours, alphas)]
    handles += [
        matplotlib.lines.Line2D([], [], color="0.3", ls="--", label="Thm 1 RHS formula / distance, test-suite "
                                "constants, α ≤ 1/4 (a theorem only where Assumption 2 holds: footnote)"),
        matplotlib.lines.Line2D([], [], color="0.3", ls=(0, (6, 3, 1, 3)), label="the same formula for α > 1/4 "
                                "(not covered by Thm 1)"),
        matplotlib.lines.Line2D([], [], color="0.3", ls=":", label="½ + noise term / distance (RHS without the "
                                "misclustering term)"),
        matplotlib.lines.Line2D([], [], color="0.2", lw=1.0, label="½ (Thm 1's contraction factor)"),
        matplotlib.lines.Line2D([], [], color="0.3", marker="^", mfc="none", ls="none",
                                label="largest ratio of the cell"),
        matplotlib.lines.Line2D([], [], color="0.3", marker="o", ls="none", label="misclustered: measured (mean)"),
        matplotlib.lines.Line2D([], [], color="0.3", ls="-", label="misclustered: exact probability of the drawn "
                                "geometry (mean)"),
    ]
    return _finish(fig, handles, title=title, footnote=footnote, ncol=2, legend_height=0.075)
