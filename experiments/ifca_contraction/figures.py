"""The contraction study's figure: the one-round contraction ratio against n', with Theorem 1's bound."""

from __future__ import annotations

import pathlib

import matplotlib.lines
import matplotlib.ticker
import numpy as np

from mixreg.plotting import plain_tick, save_figure
import matplotlib.pyplot as plt

from ..ifca_mechanism.figures import finish, floats
from .summary import NAME

__all__ = ["draw", "plot_one_round_contraction"]


def draw(config, tables, outdir):
    """The figure, from the tables only; returns the paths written."""
    viol = {(r["scope"], r["bound"]): r for r in tables["violations"]}
    inside = viol[("alpha <= 1/4 (Assumption 1)", "Thm 1 RHS, test-suite constants")]
    noise = viol[("all cells", "1/2 + noise term (no misclustering term)")]
    a2 = sorted({(r["rho"], r["n_prime"]) for r in tables["ratios"] if r["assumption2_unit"]})
    a2_text = ", ".join(f"ρ={rho:g}: n'≥{min(n for r_, n in a2 if r_ == rho)}" for rho in sorted({r for r, _ in a2}))
    footnote = (
        f"{config.preset}: k = 2, m = {config.m}, d = {config.d}, Δ = 1, σ = ρ^(-1/2), one round with resampling, "
        f"γ = {config.c1:g}/p; {config.trials} trials per point, draws = trials × 2 clusters. Constants of "
        f"tests/theory/test_theory_ifca.py: c2 = {config.c2:g}, c3 = {config.c3:g}, c4 = {config.c4:.3g}. Violations of the "
        f"Thm 1 RHS for α ≤ 1/4: {inside['violations']}/{inside['draws']}; of ½ + noise term (all cells): "
        f"{noise['violations']}/{noise['draws']}; largest c3 any draw needs: {noise['c3_needed_max']:.3g}. "
        f"Assumption 2 (unit constants) holds at {a2_text or 'no cell'}; with the test suite's constant 36, at none."
    )
    fig = plot_one_round_contraction(tables["ratios"], title="IFCA, one round of Theorem 1: contraction ratio "
                                     "against n'", footnote=footnote)
    return save_figure(fig, pathlib.Path(outdir) / NAME)


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
            x = floats(rows, "n_prime")
            ax.plot(x, floats(rows, "q50"), "-o", ms=3.5, color=colour, lw=1.6)
            ax.fill_between(x, floats(rows, "q25"), floats(rows, "q75"), color=colour, alpha=0.25, lw=0)
            ax.fill_between(x, floats(rows, "q05"), floats(rows, "q95"), color=colour, alpha=0.1, lw=0)
            covered = bool(rows[0]["in_assumption1"])
            bound = floats(rows, "bound_ratio")
            ax.plot(x, np.minimum(bound, 10 * ymax), ls="--" if covered else (0, (6, 3, 1, 3)), color=colour, lw=1.2)
            ax.plot(x, floats(rows, "noise_ratio"), ":", color=colour, lw=1.4)
            ax.plot(x, floats(rows, "max_ratio"), "^", ms=4, color=colour, mfc="none")
            bx.plot(x, floats(rows, "wrong_mean"), "o", ms=4, color=colour)
            bx.plot(x, floats(rows, "exact_wrong_mean"), "-", color=colour, lw=1.3)
        ax.axhline(0.5, color="0.2", lw=1.0)
        ax.set_ylim(0.0, ymax)
        bounds = floats([r for r in ratios if float(r["rho"]) == rho], "bound_ratio")
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
            a.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
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
    return finish(fig, handles, title=title, footnote=footnote, ncol=2, legend_height=0.075)
