"""The contraction study's figure: the one-round contraction ratio against n', with Theorem 1's bound."""

from __future__ import annotations

import pathlib

import matplotlib
import matplotlib as mpl
import matplotlib.lines
import matplotlib.ticker
import numpy as np

from mixreg.plotting import plain_tick, save_figure

from ..ifca_mechanism.figures import finish, floats, panels, result
from .summary import NAME

__all__ = ["draw", "plot_one_round_contraction"]

_EXACT_STYLE = (0, (4, 1.5, 1, 1.5, 1, 1.5))  # dash-dot-dot: Theorem 1's RHS with its third term exact


def draw(config, tables, outdir):
    """The figure, from the tables only; returns the paths written (the figure, its caption)."""
    viol = {(r["scope"], r["bound"]): r for r in tables["violations"]}
    inside = viol[("alpha <= 1/4 (Assumption 1)", "Thm 1 RHS, test-suite constants")]
    noise = viol[("all cells", "1/2 + noise term (no misclustering term)")]
    exact = viol[("all cells", "1/2 + noise term + exact misclustering term 2 c1 Delta P")]
    a2 = sorted({(r["rho"], r["n_prime"]) for r in tables["ratios"] if r["assumption2_unit"]})
    a2_text = ", ".join(f"ρ={rho:g}: n'≥{min(n for r_, n in a2 if r_ == rho)}" for rho in sorted({r for r, _ in a2}))
    title = "IFCA, one round of Theorem 1: contraction ratio against n'"
    caption = (
        f"{title}. n': points per worker in each of the round's two subsets. Top: ‖θ⁺_j − θ*_j‖ / "
        "‖θ_j − θ*_j‖ after one round, per α (median line, 25–75% and 5–95% bands; triangles: the largest ratio "
        "of the cell); dashed: Theorem 1's right-hand side over the current "
        "distance with the test suite's constants for α ≤ 1/4 (a theorem only where Assumption 2 holds), "
        "dash-dot: the same formula for α > 1/4 (not covered by Theorem 1); where it lies above the axis it is "
        "not drawn and its smallest value is written under the panel's title; dotted: ½ + noise term over the "
        "distance (the right-hand side without its misclustering term); dash-dot-dot: ½ + (noise term + "
        "2 c1 Δ P) over the distance, the right-hand side with its misclustering term at its exact value (P the "
        "exact probability that a worker of the other cluster picks the model: their expected pull, our "
        "derivation, median over draws; drawn where it is on the scale); solid black: ½, Theorem 1's contraction "
        "factor. "
        "Bottom: the fraction of workers misclustered in that round, measured (dots, mean) and the exact "
        "probability of the drawn geometry (line, mean).\n"
        f"{config.preset}: k = 2, m = {config.m}, d = {config.d}, Δ = 1, σ = ρ^(-1/2), one round with resampling, "
        f"γ = {config.c1:g}/p; {config.trials} trials per point, draws = trials × 2 clusters. Constants of "
        f"tests/theory/test_theory_ifca.py: c2 = {config.c2:g}, c3 = {config.c3:g}, c4 = {config.c4:.3g}. "
        f"Violations of the Thm 1 RHS for α ≤ 1/4: {inside['violations']}/{inside['draws']}; of ½ + noise term "
        "(all cells): "
        f"{noise['violations']}/{noise['draws']}; of ½ + noise term + exact misclustering term (all cells): "
        f"{exact['violations']}/{exact['draws']}; largest c3 any draw needs: {noise['c3_needed_max']:.3g}. "
        f"Assumption 2 (unit constants) holds at {a2_text or 'no cell'}; with the test suite's constant 36, at none."
    )
    drawn = plot_one_round_contraction(tables["ratios"], title=title,
                                       footnote=f"{config.preset} preset, {config.trials} trials per point")
    return save_figure(drawn["figure"], pathlib.Path(outdir) / NAME, caption=caption)


def plot_one_round_contraction(ratios, *, ax=None, title=None, footnote=None, ymax=2.0):
    """One IFCA round's contraction ratio against ``n'``, per ``alpha``, with Theorem 1's bound.

    Parameters
    ----------
    ratios : list of dict
        One row per ``(rho, alpha, n_prime)``: quantiles ``q05, q25, q50, q75, q95`` of
        ``||theta+ - theta*|| / ||theta - theta*||`` over draws (trials x clusters),
        ``max_ratio``, ``bound_ratio`` (Theorem 1's right-hand side over the current distance),
        ``noise_ratio`` (the same without the misclustering term), optional ``exact_term_ratio``
        (the same with the misclustering term at its exact value), ``wrong_mean`` and
        ``exact_wrong_mean`` (measured and exact misclustering), ``in_assumption1``.
    ax : sequence of 2 n_rho Axes, optional
        The panels, row by row: ratios, then misclustered fractions, one column per ``rho``;
        default: a new figure.
    title, footnote : str, optional
        Drawn on a new figure only.
    ymax : float, default 2.0
        Top of the ratio axis.  A bound above it in every cell of a panel is not drawn (its range
        is written in the panel) and the legend lists it only where some panel draws it.

    Returns
    -------
    dict
        ``figure``, ``axes`` (row by row), ``legend``, ``handles``, ``bound_drawn`` (whether any
        panel shows Theorem 1's bound).
    """
    rhos = sorted({float(r["rho"]) for r in ratios})
    alphas = sorted({float(r["alpha"]) for r in ratios})
    colours = matplotlib.colormaps["plasma"](np.linspace(0.05, 0.8, max(len(alphas), 1)))
    fig, flat, own = panels(ax, 2 * len(rhos), aspect=0.7, max_cols=len(rhos), sharex=True)
    axes = flat.reshape(2, len(rhos))
    drawn_styles = set()
    exact_drawn = False
    for col, rho in enumerate(rhos):
        a, bx = axes[0][col], axes[1][col]
        bounds = floats([r for r in ratios if float(r["rho"]) == rho], "bound_ratio")
        show_bound = bool(np.isfinite(bounds).any() and np.nanmin(bounds) <= ymax)
        for colour, alpha in zip(colours, alphas):
            rows = sorted((r for r in ratios if float(r["rho"]) == rho and float(r["alpha"]) == alpha),
                          key=lambda r: float(r["n_prime"]))
            x = floats(rows, "n_prime")
            a.plot(x, floats(rows, "q50"), "-o", ms=0.7 * mpl.rcParams["lines.markersize"], color=colour)
            a.fill_between(x, floats(rows, "q25"), floats(rows, "q75"), color=colour, alpha=0.25, lw=0)
            a.fill_between(x, floats(rows, "q05"), floats(rows, "q95"), color=colour, alpha=0.1, lw=0)
            covered = bool(rows[0]["in_assumption1"])
            if show_bound:
                style = "--" if covered else (0, (6, 3, 1, 3))
                a.plot(x, floats(rows, "bound_ratio"), ls=style, color=colour, lw=0.8)
                drawn_styles.add(covered)
            a.plot(x, floats(rows, "noise_ratio"), ":", color=colour)
            exact = floats(rows, "exact_term_ratio") if "exact_term_ratio" in rows[0] else np.array([])
            if exact.size and np.nanmin(exact) <= ymax:
                a.plot(x, exact, ls=_EXACT_STYLE, color=colour, lw=0.9)
                exact_drawn = True
            a.plot(x, floats(rows, "max_ratio"), "^", ms=0.8 * mpl.rcParams["lines.markersize"], color=colour,
                   mfc="none")
            bx.plot(x, floats(rows, "wrong_mean"), "o", ms=0.8 * mpl.rcParams["lines.markersize"], color=colour)
            bx.plot(x, floats(rows, "exact_wrong_mean"), "-", color=colour)
        a.axhline(0.5, color="0.2", lw=0.8)
        a.set_ylim(0.0, ymax)
        off = ""
        if not show_bound and np.isfinite(bounds).any():   # said under the title, clear of the data
            off = f"\nThm 1 RHS ≥ {np.nanmin(bounds):.3g}\n(off the scale)"
        a.set_title(f"ρ = {rho:g}{off}")
        bx.set_yscale("log")
        bx.set_xlabel("n'")
        n_primes = sorted({float(r["n_prime"]) for r in ratios})
        for b in (a, bx):
            b.set_xscale("log")
            b.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(n_primes))
            b.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
            b.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            b.grid(True, which="both", alpha=0.25)
    axes[0][0].set_ylabel("ratio")
    axes[1][0].set_ylabel("misclustered")
    handles = [matplotlib.lines.Line2D([], [], color=c, label=f"α = {a:g}" + ("" if a <= 0.25 else " (> 1/4)"))
               for c, a in zip(colours, alphas)]
    if True in drawn_styles:
        handles.append(matplotlib.lines.Line2D([], [], color="0.3", ls="--", lw=0.8, label="Thm 1 RHS / distance"))
    if False in drawn_styles:
        handles.append(matplotlib.lines.Line2D([], [], color="0.3", ls=(0, (6, 3, 1, 3)), lw=0.8,
                                               label="same formula, α > 1/4"))
    if exact_drawn:
        handles.append(matplotlib.lines.Line2D([], [], color="0.3", ls=_EXACT_STYLE, lw=0.9,
                                               label="½ + (noise + exact misclustering term) / distance"))
    handles += [
        matplotlib.lines.Line2D([], [], color="0.3", ls=":", label="½ + noise term / distance"),
        matplotlib.lines.Line2D([], [], color="0.2", lw=0.8, label="½ (Thm 1's factor)"),
        matplotlib.lines.Line2D([], [], color="0.3", marker="^", mfc="none", ls="none", label="largest ratio"),
        matplotlib.lines.Line2D([], [], color="0.3", marker="o", ls="none", label="misclustered: measured"),
        matplotlib.lines.Line2D([], [], color="0.3", ls="-", label="misclustered: exact"),
    ]
    legend = finish(fig, flat, handles, own=own, title=title, footnote=footnote, legend_ax=axes[1][0])
    return result(fig, flat, legend, handles=handles, bound_drawn=bool(drawn_styles))
