"""The basin study's figure: success and final error against the initial closeness ``alpha``."""

from __future__ import annotations

import pathlib

import matplotlib as mpl
import matplotlib.lines
import matplotlib.patches
import matplotlib.ticker
import numpy as np

from mixreg.plotting import plain_tick, save_figure

from ..ifca_mechanism import assumption2_unit
from ..ifca_mechanism.figures import finish, floats, panels, result
from .summary import NAME

__all__ = ["draw", "plot_ifca_basin"]


def _assumption2(config, k):
    """Assumption 2 with unit constants at the preset's setting (``m = k m_per``, ``p = 1/k``)."""
    return assumption2_unit(m=k * config.m_per, p=1.0 / k, n_prime=config.n_prime, d=config.d, sigma=config.sigma,
                            rho=1.0 / config.sigma**2)


def draw(config, tables, outdir):
    """The figure, from the tables only; returns the paths written (the figure, its caption)."""
    edges = tables["edges"]

    def show(e):
        return "none in grid" if e == float("inf") else ("< grid" if e == 0 else f"{e:.2f}")

    edge = {(e["k"], e["direction"], e["variant"], e["notion"]): e["edge"] for e in edges}
    summary = "; ".join(f"k={k} " + ", ".join(f"{d}: {show(edge[(k, d, 'rs', 'same_success')])}"
                                              for d in config.directions) for k in config.ks)
    regime = ", ".join(f"k={k}: {'yes' if _assumption2(config, k) else 'no'}" for k in config.ks)
    n = 2 * config.n_rounds * config.n_prime
    title = "IFCA's basin: success against the initial closeness α"
    caption = (
        f"{title}. Rows: success (matched max distance below the threshold), success without permutation "
        "(θ_j → θ*_j, Theorem 1's notion), final matched max distance over Δ (median, quartile band); one "
        "column per k. Bars: 95% Wilson intervals. Grey band: NeurIPS Assumption 1 / Theorem 1's ball α ≤ 1/4; "
        "dash-dot line: α = 1/2, the arXiv Assumption 1 limit (α' → 0) and the population edge of the "
        "adversarial and shifted directions; dotted line: population edge of the random directions (median over "
        "trials); bottom row, grey lines: success thresholds (by line style). Top axis: the arXiv closeness "
        "α' = 1/2 − α (Assumption 1: ‖θ_j⁽⁰⁾ − θ*_j‖ ≤ (1/2 − α')Δ).\n"
        f"{config.preset}: m = k·{config.m_per}, d = {config.d}, Δ = 1, σ = {config.sigma:g} "
        f"(ρ = {1 / config.sigma**2:.3g}), T = {config.n_rounds} rounds, n' = {config.n_prime} (n = {n}), "
        f"γ = {config.c1:g}/p, {config.trials} trials per point. Success: final distance < {config.floor_factor:g} × "
        f"the known-label LS RMS floor of the points one round's update uses (n' resampled, n full batch). "
        f"Assumption 2 with unit constants: {regime}. Measured edges (resampling, no permutation): {summary}. "
        f"Theorem 1 covers α ≤ 1/4 (NeurIPS) and α < 1/2 (arXiv) only."
    )
    drawn = plot_ifca_basin(tables["rates"], edges, title=title,
                            footnote=f"{config.preset} preset, {config.trials} trials per point")
    return save_figure(drawn["figure"], pathlib.Path(outdir) / NAME, caption=caption)


#: Colours of the initial directions of the basin figure.
DIRECTION_COLOURS = {"random": "tab:blue", "adversarial": "tab:red", "shifted": "tab:orange"}
#: Line styles of the two IFCA variants: the theorem's resampling scheme and full batch.
VARIANT_STYLES = {"rs": ("-", "o", "resampling (Thm 1)"), "fb": ("--", "s", "full batch")}

def _log_alpha_axis(ax):
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator([0.1, 0.25, 0.5, 1.0, 2.0, 3.0]))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def plot_ifca_basin(rates, edges, *, ax=None, title=None, footnote=None):
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
    ax : sequence of 3 n_k Axes, optional
        The panels, row by row: success (matched), success without permutation, final error,
        one column per ``k`` (``n_k`` values); default: a new figure.
    title, footnote : str, optional
        Drawn on a new figure only.

    Returns
    -------
    dict
        ``figure``, ``axes`` (row by row), ``legend``, ``handles`` (the legend's entries).
    """
    ks = sorted({int(r["k"]) for r in rates})
    directions = [d for d in DIRECTION_COLOURS if any(r["direction"] == d for r in rates)]
    fig, flat, own = panels(ax, 3 * len(ks), aspect=0.62, max_cols=len(ks), sharex=True)
    axes = flat.reshape(3, len(ks))
    notions = (("success", "matched\nsuccess"), ("same_success", "no-perm.\nsuccess"))
    n_series = len(directions) * len(VARIANT_STYLES)
    for col, k in enumerate(ks):
        for i_dir, direction in enumerate(directions):
            rows = sorted((r for r in rates if int(r["k"]) == k and r["direction"] == direction),
                          key=lambda r: float(r["alpha"]))
            alpha = floats(rows, "alpha")
            colour = DIRECTION_COLOURS[direction]
            for i_var, (v, (ls, marker, _)) in enumerate(VARIANT_STYLES.items()):
                # the Wilson intervals as thin bars, the series shifted side by side on the log axis
                jitter = np.exp(0.018 * (i_dir * len(VARIANT_STYLES) + i_var - (n_series - 1) / 2))
                for row_index, (notion, _) in enumerate(notions):
                    a = axes[row_index][col]
                    y = floats(rows, f"{v}_{notion}_rate")
                    lo, hi = floats(rows, f"{v}_{notion}_low"), floats(rows, f"{v}_{notion}_high")
                    a.plot(alpha, y, ls=ls, marker=marker, ms=0.8 * mpl.rcParams["lines.markersize"], color=colour)
                    a.errorbar(alpha * jitter, y, yerr=np.clip([y - lo, hi - y], 0, None), fmt="none",
                               ecolor=colour, elinewidth=0.6, alpha=0.55, capsize=0)
                a = axes[2][col]
                med = floats(rows, f"{v}_err_median")
                a.plot(alpha, med, ls=ls, marker=marker, ms=0.8 * mpl.rcParams["lines.markersize"], color=colour)
                a.fill_between(alpha, floats(rows, f"{v}_err_q25"), floats(rows, f"{v}_err_q75"),
                               color=colour, alpha=0.08 if v == "fb" else 0.15, lw=0)
            pop = [float(e["population_edge"]) for e in edges
                   if int(e["k"]) == k and e["direction"] == direction and e["variant"] == "rs"]
            if direction == "random" and pop and np.isfinite(pop[0]):
                for a in axes[:, col]:
                    a.axvline(pop[0], color=colour, ls=(0, (1, 1.5)))
        thresholds = {v: np.nanmedian(floats([r for r in rates if int(r["k"]) == k], f"{v}_threshold_rel"))
                      for v in VARIANT_STYLES}
        for v, (ls, _, _) in VARIANT_STYLES.items():
            axes[2][col].axhline(thresholds[v], color="0.3", ls=ls, lw=0.7)
        for a in axes[:, col]:
            a.axvspan(1e-3, 0.25, color="0.85", alpha=0.6, lw=0, zorder=0)
            a.axvline(0.5, color="0.2", ls="-.", lw=0.9)
            _log_alpha_axis(a)
            a.grid(True, which="both", alpha=0.25)
        for row_index in range(2):
            axes[row_index][col].set_ylim(-0.03, 1.03)
        axes[2][col].set_yscale("log")
        axes[0][col].set_title(f"k = {k}")
        axes[2][col].set_xlabel("initial closeness α")
        top = axes[0][col].secondary_xaxis("top", functions=(lambda x: x, lambda x: x))
        top.xaxis.set_major_locator(matplotlib.ticker.FixedLocator([0.1, 0.25, 0.5]))
        top.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _p: f"{0.5 - x:g}"))
        top.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        top.tick_params(labelsize="small")
        top.set_xlabel("α' = 1/2 − α (arXiv)", fontsize="small")
        axes[0][col].set_xlim(min(floats(rates, "alpha")) / 1.3, max(floats(rates, "alpha")) * 1.3)
        if col:
            for a in axes[:, col]:
                a.tick_params(labelleft=a.get_yscale() == "log")
    axes[0][0].set_ylabel(notions[0][1])
    axes[1][0].set_ylabel(notions[1][1])
    axes[2][0].set_ylabel("final error / Δ")
    handles = [matplotlib.lines.Line2D([], [], color=DIRECTION_COLOURS[d], label=f"{d} direction")
               for d in directions]
    handles += [matplotlib.lines.Line2D([], [], color="0.3", ls=ls, marker=mk, label=label)
                for ls, mk, label in VARIANT_STYLES.values()]
    handles += [
        matplotlib.patches.Patch(color="0.85", label="α ≤ 1/4: Thm 1's ball"),
        matplotlib.lines.Line2D([], [], color="0.2", ls="-.", label="α = 1/2: arXiv limit"),
        matplotlib.lines.Line2D([], [], color=DIRECTION_COLOURS["random"], ls=(0, (1, 1.5)),
                                label="population edge, random"),
        matplotlib.lines.Line2D([], [], color="0.3", lw=0.7, label="success thresholds"),
    ]
    legend = finish(fig, flat, handles, own=own, title=title, footnote=footnote, legend_ax=axes[2][0])
    return result(fig, flat, legend, handles=handles)
