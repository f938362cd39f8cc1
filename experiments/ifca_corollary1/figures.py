"""The Corollary 1 study's figure: rounds to eps, failure against m, the exponential term, Lemma 2."""

from __future__ import annotations

import pathlib

import matplotlib
import matplotlib.lines
import matplotlib.ticker
import numpy as np

from mixreg.plotting import plain_tick, save_figure

from ..ifca_mechanism.figures import finish, floats, panels, result
from .summary import NAME

__all__ = ["draw", "plot_corollary1"]

_PANELS = 6


def _frac(c1):
    return {0.25: "1/4", 0.375: "3/8"}.get(float(c1), f"{float(c1):g}")


def draw(config, tables, outdir):
    """The figure, from the tables only; returns the paths written (the figure, its caption)."""
    fits = {r["target"]: r for r in tables["exponential_fit"]}
    trend = {r["series"]: r for r in tables["success_trend"]}
    bound = [r for r in tables["rounds_fits"] if str(r["theorem_c1"]) == "True"]
    exceed = sum(int(r["exceed"]) for r in bound)
    pairs = sum(int(r["pairs"]) for r in bound)
    title = "IFCA, Corollary 1 and Lemma 2 (linear model)"

    def fit_text(target):
        r = fits.get(target)
        if not r:
            return "not fitted"
        return (f"c4 = {float(r['c4']):.3g} [{float(r['c4_low']):.3g}, {float(r['c4_high']):.3g}] on "
                f"{r['fit_cells']} cells; held-out residual interval misses 0 at {r['held_out_outside']} of "
                f"{r['held_out_compared']} held-out cells")

    def trend_text(series):
        r = trend.get(series)
        if not r:
            return "no trend test"
        text = f"Cochran-Armitage z = {float(r['z']):.3g} (one-sided p of a decrease {float(r['p_decrease']):.3g})"
        if np.isfinite(float(r["slope"])):
            return text + (f", logistic slope in log m {float(r['slope']):.3g} [{float(r['slope_low']):.3g}, "
                           f"{float(r['slope_high']):.3g}]")
        return text + ", no logistic fit (the failures are separated in m)"

    caption = (
        f"{title}. k = 2 balanced clusters, Δ = {config.separation:g}, d = {config.d}, resampled IFCA "
        f"(option I, full participation, 2T fresh subsets of n' points per client), γ = c1/p, models started at "
        f"θ*_j + {config.alpha:g}Δ u_j (Assumption 1's boundary). "
        f"(a) Rounds needed to reach ε = (Δ/4) 2^-h against log2(Δ/(4ε)) = h, mean over {config.trials} runs "
        f"(interpolated between rounds in log distance), per m (colour) and c1 (solid 3/8, dashed 1/4), for the ε "
        f"at least {config.margin:g}× the noise term (σ/p)√(d/(mn')); n' = {config.n_prime}, σ = {config.sigma:g} "
        f"(ρ = {config.separation**2 / config.sigma**2:.3g}). "
        f"Black: Corollary 1's T = log2(Δ/(4ε)) (base 2 from Theorem 1's factor 1/2; registered, not fitted). "
        f"Integer rounds above T at c1 = 3/8: {exceed} of {pairs} (run, ε) pairs. "
        f"(b) Fraction of the c1 = 3/8 runs not within ε after T = ⌈log2(Δ/(4ε))⌉ rounds, "
        f"with {config.level:.0%} "
        f"Wilson intervals; ε = {config.kappa:g}× the noise term at the smallest m (fixed: {trend_text('fixed')}) "
        f"or at each m (scaled, Corollary 1's ε with c5 = {config.kappa:g}: {trend_text('scaled')}); lines: our "
        "stationary-error law of that probability (derived, not the paper's). "
        f"(c) Misclustered fraction of the last {config.last} of {config.rounds_exp} rounds, m = {config.m_exp}, "
        f"against x = (ρ/(ρ+1))² n', mean with bootstrap interval; filled: cells of the fit, open: held out "
        f"(ρ in {list(config.held_out_rhos)}) or left out (mean above {config.miscl_max:g} or 0). Line: "
        f"A exp(-c4 x) fitted on the filled cells ({fit_text('miscl')}), dotted beyond them. "
        f"(d) The same cells' final error minus the known-label run's (the same resampled steps with the true labels "
        f"on the same data; {fit_text('excess')}); cells with a mean excess ≤ 0 are not drawn. "
        f"(e) Lemma 2 (a proof lemma; Vershynin 2010 Thm 5.39): the pooled N × d Gaussian design's largest deviation "
        f"of a singular value from √N over √N (filled) and ||XᵀX/N − I||_op (open), "
        f"mean over {config.trials} draws, "
        f"against √(d/N); line: Gordon's bound √(d/N) on each singular value's mean deviation (exact constant 1). "
        f"(f) ||Xᵀε||² / (σ² N d), mean with bootstrap interval; its expectation is exactly 1."
    )
    drawn = plot_corollary1(tables, title=title,
                            footnote=f"{config.preset} preset, {config.trials} trials per cell")
    return save_figure(drawn["figure"], pathlib.Path(outdir) / NAME, caption=caption)


def _yerr(y, low, high):
    """Error bars of an interval ``[low, high]`` around ``y`` (clipped at 0 where it does not hold ``y``)."""
    return [np.clip(y - low, 0, None), np.clip(high - y, 0, None)]


def _log_ticks(axis, values):
    """A log axis ticked at ``values``, plainly written, without minor labels."""
    axis.set_major_locator(matplotlib.ticker.FixedLocator(sorted(values)))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _colours(n, cmap="viridis"):
    return matplotlib.colormaps[cmap](np.linspace(0.05, 0.85, max(n, 1)))


def _rounds_panel(a, rows):
    c1s = sorted({float(r["c1"]) for r in rows})
    ms = sorted({int(r["m"]) for r in rows})
    colours = dict(zip(ms, _colours(len(ms))))
    top = 0.0
    for c1 in c1s:
        for m in ms:
            cell = sorted((r for r in rows if float(r["c1"]) == c1 and int(r["m"]) == m), key=lambda r: int(r["h"]))
            if not cell:
                continue
            x = floats(cell, "log2_ratio")
            y = floats(cell, "mean_interp")
            top = max(top, float(np.nanmax(x)))
            a.errorbar(x, y, yerr=_yerr(y, floats(cell, "interp_low"), floats(cell, "interp_high")),
                       ls="-" if c1 == max(c1s) else "--", marker="o" if c1 == max(c1s) else "none", ms=3,
                       color=colours[m], lw=1.0, capsize=0)
    line = np.array([0.0, top + 0.5])
    a.plot(line, line, color="k", lw=1.0)
    a.set_ylim(-0.3, 1.7 * (top + 0.5))   # room for the legend above the lines
    a.set_xlabel("log2(Δ / (4ε))")
    a.set_ylabel("rounds to reach ε")
    a.set_title("(a) rounds to ε")
    handles = [matplotlib.lines.Line2D([], [], color=colours[m], label=f"m = {m}") for m in ms]
    handles += [matplotlib.lines.Line2D([], [], color="0.3", ls="-" if c1 == max(c1s) else "--",
                                        marker="o" if c1 == max(c1s) else None, ms=3, label=f"c1 = {_frac(c1)}")
                for c1 in sorted(c1s, reverse=True)]
    handles.append(matplotlib.lines.Line2D([], [], color="k", lw=1.0, label="Cor. 1: T = log2(Δ/(4ε))"))
    return handles


def _success_panel(a, rows):
    handles = []
    for series, marker, colour, shift in (("fixed", "o", "C0", 0.95), ("scaled", "s", "C3", 1.05)):
        cell = sorted((r for r in rows if r["series"] == series), key=lambda r: int(r["m"]))
        if not cell:
            continue
        m = floats(cell, "m") * shift   # side by side
        f = floats(cell, "failure")
        a.errorbar(m, f, yerr=_yerr(f, floats(cell, "failure_low"), floats(cell, "failure_high")), ls="none",
                   marker=marker, ms=4, color=colour, capsize=2)
        a.plot(m, floats(cell, "derived_failure"), color=colour, lw=0.8)
        label = "ε fixed (smallest m)" if series == "fixed" else "ε = κ × noise term at each m"
        handles.append(matplotlib.lines.Line2D([], [], color=colour, marker=marker, ls="none", ms=4, label=label))
    handles.append(matplotlib.lines.Line2D([], [], color="0.3", lw=0.8, label="our stationary-error law"))
    a.set_xscale("log")
    _log_ticks(a.xaxis, {int(r["m"]) for r in rows})
    top = np.nanmax(floats(rows, "failure_high")) if rows else 1.0
    a.set_ylim(-0.02, 1.8 * top)   # room for the legend above the bars
    a.set_xlabel("m")
    a.set_ylabel("failure proportion")
    a.set_title("(b) failure against m")
    return handles


def _exponential_panel(a, cells, fit, target, ylabel, panel_title):
    rhos = sorted({float(c["rho"]) for c in cells})
    colours = dict(zip(rhos, _colours(len(rhos), "plasma")))
    for rho in rhos:
        cell = sorted((c for c in cells if float(c["rho"]) == rho), key=lambda c: float(c["x"]))
        y = floats(cell, target)
        x = floats(cell, "x")
        keep = y > 0
        lo, hi = floats(cell, f"{target}_low"), floats(cell, f"{target}_high")
        used = np.array([str(c["held_out"]) != "True" and (target != "miscl" or str(c["fit_miscl"]) == "True")
                         for c in cell])
        for mask, face in ((keep & used, colours[rho]), (keep & ~used, "none")):
            if mask.any():
                a.errorbar(x[mask], y[mask], yerr=_yerr(y[mask], np.maximum(lo[mask], y[mask] * 1e-3), hi[mask]),
                           ls="none", marker="o", ms=4, color=colours[rho], mfc=face, capsize=0)
    handles = [matplotlib.lines.Line2D([], [], color=colours[r], marker="o", ls="none", ms=4, label=f"ρ = {r:g}")
               for r in rhos]
    if fit and np.isfinite(float(fit["slope"])):
        used_x = [float(c["x"]) for c in cells if float(c[target]) > 0 and str(c["held_out"]) != "True"
                  and (target != "miscl" or str(c["fit_miscl"]) == "True")]
        all_x = [float(c["x"]) for c in cells if float(c[target]) > 0]
        if used_x:
            inside = np.linspace(min(used_x), max(used_x), 50)
            outside = np.linspace(min(all_x), max(all_x), 100)
            line = lambda v: np.exp(float(fit["intercept"]) + float(fit["slope"]) * v)  # noqa: E731
            a.plot(outside, line(outside), color="0.3", ls=":", lw=0.8)
            a.plot(inside, line(inside), color="0.3", lw=1.0)
            handles.append(matplotlib.lines.Line2D([], [], color="0.3", lw=1.0,
                                                   label=f"A exp(−c4 x), c4 = {float(fit['c4']):.2g}"))
    handles.append(matplotlib.lines.Line2D([], [], color="0.3", marker="o", mfc="none", ls="none", ms=4,
                                           label="held out / left out"))
    a.set_yscale("log")
    a.set_xlabel("x = (ρ/(ρ+1))² n'")
    a.set_ylabel(ylabel)
    a.set_title(panel_title)
    return handles


def _lemma2_panel(a, rows):
    ds = sorted({int(r["d"]) for r in rows})
    colours = dict(zip(ds, _colours(len(ds), "cividis")))
    for d in ds:
        cell = sorted((r for r in rows if int(r["d"]) == d), key=lambda r: int(r["N"]))
        x = floats(cell, "sqrt_d_over_N")
        a.plot(x, floats(cell, "sv_dev"), "o", ms=4, color=colours[d])
        a.plot(x, floats(cell, "op_dev"), "o", ms=4, color=colours[d], mfc="none")
    xs = floats(rows, "sqrt_d_over_N")
    line = np.array([np.nanmin(xs) / 1.3, np.nanmax(xs) * 1.3])
    a.plot(line, line, color="k", lw=1.0)
    a.set_ylim(np.nanmin(floats(rows, "sv_dev")) / 1.5, 20 * np.nanmax(floats(rows, "op_dev")))  # legend room
    a.set_xscale("log")
    a.set_yscale("log")
    a.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    a.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    a.set_xlabel("√(d/N)")
    a.set_ylabel("deviation")
    a.set_title("(e) Lemma 2: design")
    handles = [matplotlib.lines.Line2D([], [], color=colours[d], marker="o", ls="none", ms=4, label=f"d = {d}")
               for d in ds]
    handles += [matplotlib.lines.Line2D([], [], color="0.3", marker="o", ls="none", ms=4,
                                        label="max |s/√N − 1|"),
                matplotlib.lines.Line2D([], [], color="0.3", marker="o", mfc="none", ls="none", ms=4,
                                        label="||XᵀX/N − I||"),
                matplotlib.lines.Line2D([], [], color="k", lw=1.0, label="√(d/N) (Gordon, C = 1)")]
    return handles


def _noise_panel(a, rows):
    ds = sorted({int(r["d"]) for r in rows})
    colours = dict(zip(ds, _colours(len(ds), "cividis")))
    for i, d in enumerate(ds):
        cell = sorted((r for r in rows if int(r["d"]) == d), key=lambda r: int(r["N"]))
        N = floats(cell, "N") * (1 + 0.04 * (i - (len(ds) - 1) / 2))   # side by side
        y = floats(cell, "noise_ratio_sq")
        a.errorbar(N, y, yerr=_yerr(y, floats(cell, "noise_ratio_sq_low"), floats(cell, "noise_ratio_sq_high")),
                   ls="none", marker="o", ms=4, color=colours[d], capsize=2)
    a.axhline(1.0, color="k", lw=1.0)
    low, high = a.get_ylim()
    a.set_ylim(low, high + 0.8 * (high - low))   # room for the legend above the bars
    a.set_xscale("log")
    _log_ticks(a.xaxis, {int(r["N"]) for r in rows})
    a.set_xlabel("N")
    a.set_ylabel("||Xᵀε||² / (σ² N d)")
    a.set_title("(f) Lemma 2: noise")
    return [matplotlib.lines.Line2D([], [], color=colours[d], marker="o", ls="none", ms=4, label=f"d = {d}")
            for d in ds] + [matplotlib.lines.Line2D([], [], color="k", lw=1.0, label="1 (exact mean)")]


def plot_corollary1(tables, *, ax=None, title=None, footnote=None):
    """The study's six panels from its tables.

    Parameters
    ----------
    tables : dict of list of dict
        The tables ``rounds``, ``success``, ``exponential``, ``exponential_fit`` and ``lemma2`` of
        :func:`experiments.ifca_corollary1.summarise` (or read back from their CSV files).
    ax : sequence of 6 Axes, optional
        (a) rounds to eps against ``log2(Delta / (4 eps))``, (b) failure against m, (c) misclustered
        fraction and (d) excess error against ``(rho/(rho+1))^2 n'``, (e) Lemma 2's design deviation
        against ``sqrt(d/N)``, (f) Lemma 2's noise ratio against ``N``; default: a new figure.
    title, footnote : str, optional
        Drawn on a new figure only.

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend`` (the first panel's), ``legends`` (one per panel).
    """
    fig, axes, own = panels(ax, _PANELS, aspect=0.62, max_cols=2)
    fits = {r["target"]: r for r in tables["exponential_fit"]}
    groups = [
        _rounds_panel(axes[0], tables["rounds"]),
        _success_panel(axes[1], tables["success"]),
        _exponential_panel(axes[2], tables["exponential"], fits.get("miscl"), "miscl", "misclustered at the end",
                           "(c) misclustered fraction"),
        _exponential_panel(axes[3], tables["exponential"], fits.get("excess"), "excess",
                           "final error − known-label error", "(d) excess error"),
        _lemma2_panel(axes[4], tables["lemma2"]),
        _noise_panel(axes[5], tables["lemma2"]),
    ]
    places = (("upper left", 2), ("upper right", 1), ("lower left", 1), ("lower left", 1), ("upper left", 2),
              ("upper center", 3))
    legends = [a.legend(handles=h, fontsize="x-small", loc=loc, ncol=ncol)
               for a, h, (loc, ncol) in zip(axes, groups, places)]
    finish(fig, axes, [], own=own, title=title, footnote=footnote)
    for a in axes:
        a.grid(True, which="major", alpha=0.25)
    return result(fig, axes, legends[0], legends=legends)
