"""The misclustering study's figure: the measured probability against n', the exact law and the exponents."""

from __future__ import annotations

import pathlib

import matplotlib
import matplotlib as mpl
import matplotlib.lines
import matplotlib.ticker
import numpy as np

from mixreg.plotting import figure_width, plain_tick, save_figure

from ..ifca_mechanism.figures import finish, floats, panels, result
from .summary import NAME

__all__ = ["draw", "plot_misclustering_exponent"]


def draw(config, tables, outdir):
    """The figure, from the tables only; returns the paths written (the figure, its caption)."""
    ex = tables["exponents"]
    held = ", ".join(f"ρ={r['rho']:g}: {100 * r['residual']:+.0f}%" for r in ex if r["role"] != "fit")
    title = "IFCA: misclustering probability of one identity estimate (k = 2, θ = θ*)"
    fit = ex[0]
    caption = (
        f"{title}. (a) P(S₂ < S₁) at θ = θ* against n' (semi-log): measured fraction of workers misclustered "
        "(dots, 95% Wilson bars; a downward triangle: none misclustered, at the interval's top), the exact "
        "probability (line, a prediction with no fitted constant; colour: ρ) and the Chernoff bound exp(−I n') "
        "with the "
        "exact I (dotted). (b) The decay exponent −d log P / dn' against ρ = Δ²/σ²: the exact Chernoff exponent "
        "½ log(1 + ρ/4) (n' → ∞, black line), Lemma 1's shape c4 (ρ/(ρ+1))² with c4 = "
        f"{float(fit['c4_fitted']):.3g} fitted to the filled points (dashed) and with c4 = "
        f"{float(fit['c4_bound']):.3g} (dotted: below the exact exponent at every ρ and every geometry of "
        "Assumption 1), the measured exponents with 95% bootstrap intervals (filled: fit set, open: held out) "
        "and the exact probability's slope on the measured n' grid (crosses).\n"
        f"{config.preset}: k = 2, m = {config.m} workers per trial, {config.trials} trials per point, d = {config.d}, "
        f"Δ = 1, σ = ρ^(-1/2); both estimates at the truth. Measured: the workers misclustered by IFCA's own "
        f"identity estimate in one resampled round (driver's kernels, lowest-index ties). Exponent fits: "
        f"least squares of log(rate) on n', stratified bootstrap. c4 = {fit['c4_fitted']:.3g} fitted on "
        f"ρ in {list(config.fit_rhos)}; held-out residuals (measured/predicted − 1): {held or 'none'}. "
        f"Lemma 1 covers this regime (estimates within Δ/4, any n'); its c3, c4 are unstated."
    )
    drawn = plot_misclustering_exponent(tables["rates"], tables["curves"], ex, title=title,
                                        footnote=f"{config.preset} preset, {config.trials} trials per point")
    return save_figure(drawn["figure"], pathlib.Path(outdir) / NAME, caption=caption)


def plot_misclustering_exponent(rates, curves, exponents, *, ax=None, title=None, footnote=None):
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
    ax : sequence of 2 Axes, optional
        (a) the probability against ``n'``, (b) the exponent against ``rho``; default: a new figure.
    title, footnote : str, optional
        Drawn on a new figure only.

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend``, ``handles``.
    """
    rhos = sorted({float(r["rho"]) for r in rates})
    colours = matplotlib.colormaps["viridis"](np.linspace(0.0, 0.85, max(len(rhos), 1)))
    fig, axes, own = panels(ax, 2, aspect=0.8, max_cols=1 if figure_width() < 5 else 2)
    a, bx = axes
    ms = mpl.rcParams["lines.markersize"]
    for colour, rho in zip(colours, rhos):
        rows = sorted((r for r in rates if float(r["rho"]) == rho), key=lambda r: float(r["n_prime"]))
        x, y = floats(rows, "n_prime"), floats(rows, "rate")
        lo, hi = floats(rows, "low"), floats(rows, "high")
        shown = y > 0
        a.errorbar(x[shown], y[shown], yerr=[y[shown] - lo[shown], hi[shown] - y[shown]], fmt="o", ms=0.8 * ms,
                   color=colour, capsize=1.5, lw=0.8)
        zero = ~shown
        if zero.any():  # no misclustered worker: the interval's top, as a downward triangle
            a.plot(x[zero], hi[zero], "v", ms=ms, color=colour)
        dense = sorted((r for r in curves if float(r["rho"]) == rho), key=lambda r: float(r["n_prime"]))
        dx, dy = floats(dense, "n_prime"), floats(dense, "exact")
        a.plot(dx, dy, "-", color=colour)
        a.plot(dx, floats(dense, "chernoff"), ":", color=colour, lw=0.8)
    a.set_yscale("log")
    a.set_xlim(left=0)
    a.set_xlabel("n' (points of the identity estimate)")
    a.set_ylabel("fraction misclustered")
    a.set_title("(a) P(S₂ < S₁) against n'")
    a.grid(True, which="both", alpha=0.25)

    ex = sorted(exponents, key=lambda r: float(r["rho"]))
    rho = floats(ex, "rho")
    grid = np.geomspace(rho.min() / 1.5, rho.max() * 1.5, 200)
    bx.plot(grid, 0.5 * np.log1p(grid / 4.0), "-", color="k", label="exact Chernoff exponent")
    fit = ex[0]
    shape = (grid / (grid + 1.0)) ** 2
    bx.plot(grid, float(fit["c4_fitted"]) * shape, "--", color="#D55E00",
            label=f"Lemma 1 shape, c4 = {float(fit['c4_fitted']):.3g} (fitted)")
    bx.plot(grid, float(fit["c4_bound"]) * shape, ":", color="#D55E00",
            label=f"Lemma 1 shape, c4 = {float(fit['c4_bound']):.3g}")
    measured = floats(ex, "fitted")
    lo, hi = floats(ex, "fitted_low"), floats(ex, "fitted_high")
    held = np.array([r["role"] != "fit" for r in ex])
    for mask, face, label in ((~held, None, "measured (fit set)"), (held, "white", "measured (held out)")):
        if mask.any():
            bx.errorbar(rho[mask], measured[mask], yerr=[measured[mask] - lo[mask], hi[mask] - measured[mask]],
                        fmt="o", ms=ms, color=colours[len(colours) // 2], mfc=face, capsize=2, lw=0.9, label=label)
    bx.plot(rho, floats(ex, "exact_slope"), "x", ms=1.4 * ms, color="k", label="exact slope on the n' grid")
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
    bx.set_xlabel("ρ = Δ² / σ²")
    bx.set_ylabel("exponent −d log P / dn'")
    bx.set_title("(b) the exponent")
    bx.grid(True, which="both", alpha=0.25)
    grey = "0.3"
    handles = [matplotlib.lines.Line2D([], [], color=colour, label=f"ρ = {rho:g}")
               for colour, rho in zip(colours, rhos)]
    handles += [
        matplotlib.lines.Line2D([], [], color=grey, marker="o", ls="none", label="measured"),
        matplotlib.lines.Line2D([], [], color=grey, ls="-", label="exact probability"),
        matplotlib.lines.Line2D([], [], color=grey, ls=":", label="Chernoff bound exp(−I n')"),
    ]
    handles += bx.get_legend_handles_labels()[0]
    legend = finish(fig, axes, handles, own=own, title=title, footnote=footnote, legend_ax=bx)
    return result(fig, axes, legend, handles=handles)
