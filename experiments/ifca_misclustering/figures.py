"""The misclustering study's figure: the measured probability against n', the exact law and the exponents."""

from __future__ import annotations

import pathlib

import matplotlib.lines
import matplotlib.ticker
import numpy as np

from mixreg.plotting import plain_tick, save_figure
import matplotlib.pyplot as plt

from ..ifca_mechanism.figures import finish, floats
from .summary import NAME

__all__ = ["draw", "plot_misclustering_exponent"]


def draw(config, tables, outdir):
    """The figure, from the tables only; returns the paths written."""
    ex = tables["exponents"]
    held = ", ".join(f"ρ={r['rho']:g}: {100 * r['residual']:+.0f}%" for r in ex if r["role"] != "fit")
    footnote = (
        f"{config.preset}: k = 2, m = {config.m} workers per trial, {config.trials} trials per point, d = {config.d}, "
        f"Δ = 1, σ = ρ^(-1/2); both estimates at the truth. Measured: the workers misclustered by IFCA's own "
        f"identity estimate in one resampled round (driver's kernels, lowest-index ties). Exponent fits: "
        f"least squares of log(rate) on n', stratified bootstrap. c4 = {ex[0]['c4_fitted']:.3g} fitted on "
        f"ρ in {list(config.fit_rhos)}; held-out residuals (measured/predicted − 1): {held or 'none'}. "
        f"Lemma 1 covers this regime (estimates within Δ/4, any n'); its c3, c4 are unstated."
    )
    title = "IFCA: misclustering probability of one identity estimate (k = 2, θ = θ*)"
    fig = plot_misclustering_exponent(tables["rates"], tables["curves"], ex, title=title, footnote=footnote)
    return save_figure(fig, pathlib.Path(outdir) / NAME)


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
        x, y = floats(rows, "n_prime"), floats(rows, "rate")
        lo, hi = floats(rows, "low"), floats(rows, "high")
        shown = y > 0
        ax.errorbar(x[shown], y[shown], yerr=[y[shown] - lo[shown], hi[shown] - y[shown]], fmt="o", ms=4,
                    color=colour, capsize=2, lw=1.1)
        zero = ~shown
        if zero.any():  # no misclustered worker: the interval's top, as a downward triangle
            ax.plot(x[zero], hi[zero], "v", ms=5, color=colour)
        dense = sorted((r for r in curves if float(r["rho"]) == rho), key=lambda r: float(r["n_prime"]))
        dx, dy = floats(dense, "n_prime"), floats(dense, "exact")
        ax.plot(dx, dy, "-", color=colour, lw=1.6)
        ax.plot(dx, floats(dense, "chernoff"), ":", color=colour, lw=1.1)
        ax.annotate(f"ρ = {rho:g}", (dx[-1], dy[-1]), xytext=(3, 0), textcoords="offset points", color=colour,
                    fontsize=8, va="center", ha="left")
    ax.set_yscale("log")
    ax.set_xlim(left=0)
    ax.set_xlabel("n' (points of the identity estimate)")
    ax.set_ylabel("fraction of workers misclustered (95% Wilson)")
    ax.set_title("(a) P(S₂ < S₁) at θ = θ*, k = 2, against n' (semi-log)", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)

    ex = sorted(exponents, key=lambda r: float(r["rho"]))
    rho = floats(ex, "rho")
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
    measured = floats(ex, "fitted")
    lo, hi = floats(ex, "fitted_low"), floats(ex, "fitted_high")
    held = np.array([r["role"] != "fit" for r in ex])
    for mask, face, label in ((~held, None, "measured exponent (fit set), 95% bootstrap"),
                              (held, "white", "measured exponent (held out), 95% bootstrap")):
        if mask.any():
            bx.errorbar(rho[mask], measured[mask], yerr=[measured[mask] - lo[mask], hi[mask] - measured[mask]],
                        fmt="o", ms=6, color=colours[len(colours) // 2], mfc=face, capsize=3, lw=1.2, label=label)
    bx.plot(rho, floats(ex, "exact_slope"), "x", ms=8, mew=1.6, color="k",
            label="exact probability's slope on the measured n' grid")
    bx.set_xscale("log")
    bx.set_yscale("log")
    bx.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
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
    return finish(fig, handles, title=title, footnote=footnote, ncol=2, legend_height=0.11)
