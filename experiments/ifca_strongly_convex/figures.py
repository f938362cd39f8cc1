"""The strongly convex study's figure: Theorem 2's factor and ``T``, the final error, Lemma 3.

:func:`draw` makes it from the tables of :func:`.summary.summarise` alone (``--redraw`` repeats
it); :func:`plot_strongly_convex` draws its five panels.
"""

from __future__ import annotations

import pathlib

import matplotlib
import matplotlib.lines
import matplotlib.ticker
import numpy as np

from mixreg.plotting import plain_tick, save_figure

from ..ifca_mechanism.figures import finish, floats, panels, result
from .summary import NAME

__all__ = ["draw", "plot_strongly_convex"]

_P_MARKERS = {0.5: "o", 0.2: "s"}


def _marker(p):
    return _P_MARKERS.get(round(float(p), 3), "D")


def draw(config, tables, outdir):
    """The figure, from the tables only; returns the paths written (the figure, its caption)."""
    fits = {r["axis"]: r for r in tables["floor_exponents"]}
    rfit = tables["rounds_fit"][0] if tables["rounds_fit"] else None
    factors = tables["factors"]
    loose = floats(factors, "looseness")
    fit_text = "; ".join(f"{'m' if a == 'm' else 'n′'}: {float(r['fitted']):+.2f} [{float(r['low']):+.2f}, "
                         f"{float(r['high']):+.2f}]" for a, r in fits.items())
    title = "IFCA, Theorem 2 and Lemma 3 on linear regression with features N(0, Σ), cond(Σ) = κ"
    caption = (
        f"{title}. λ = 2 λmin(Σ), L = 2 λmax(Σ) (the squared loss's Hessian is 2Σ), so L/λ = κ; step γ = 1/L "
        "(Theorem 2), resampling, k = 2, Δ = 1. "
        "(a) Per-round factor of the RMS distance over the rounds whose exact RMS is at least "
        f"{config.far:g}× the floor's, per κ, p and cluster (filled: the smallest cluster), with its "
        f"{config.level:.0%} bootstrap interval; dashed: Theorem 2's bound 1 − pλ/(8L); crosses: the exact second "
        "moments' factor (derived: right identities, Gaussian rows; no constant fitted). Theorem 2's rate "
        f"(1 − bound) is {np.nanmin(loose):.2g}–{np.nanmax(loose):.2g} times slower than the measured one. "
        f"(b) Rounds until max_j ‖θ_j − θ*_j‖ ≤ ε = {config.eps:g} (mean and largest over trials) against "
        "Theorem 2's T = (8L/(pλ)) log(Δ/(2ε)) (dashed) and the exact second moments' rounds (dotted); "
        + (f"fitted exponent in L/(pλ): {float(rfit['fitted']):.2f} [{float(rfit['low']):.2f}, "
           f"{float(rfit['high']):.2f}] (Theorem 2's T: 1). " if rfit else "")
        + f"(c, d) Final RMS error over the clusters after the run (to within 2% of the exact floor) against m "
        f"(n′ = {config.n_prime_ref}) and n′ (m = {config.m_ref}) at κ = {config.kappa_ref:g}, p = 1/2, with the "
        "exact second moments (line; no constant fitted); fitted exponents (largest value held out, "
        f"open marker): {fit_text}; Theorem 2's rate O~(1/√(mn′) + 1/n′) gives −1/2 where its 1/n′ term is "
        "negligible. "
        f"(e) Lemma 3: misclustered workers per worker-round in one round from Assumption 6's boundary "
        f"(1/4)√(λ/L)Δ, σ = {config.lemma_sigma:g}, m = {config.lemma_m} (dots with Wilson intervals; open "
        "triangle: no worker misclustered, drawn at the interval's upper end), the exact probability (solid), the proof's Chebyshev step with the exact variances "
        "(dashed), Lemma 3's bound 128 η²/(λ²Δ⁴n′) with η² the exact loss variance at the two models (dotted).\n"
        f"{config.preset}: d = {config.d}, σ = {config.sigma:g} (rate and floor cells), m = {config.m_ref}, "
        f"n′ = {config.n_prime_ref} (rate cells), {config.trials} trials per cell."
    )
    drawn = plot_strongly_convex(tables, title=title, footnote=f"{config.preset} preset, {config.trials} trials per "
                                 "cell")
    return save_figure(drawn["figure"], pathlib.Path(outdir) / NAME, caption=caption)


def _logx(ax, values):
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(sorted(set(values))))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.grid(True, which="both", alpha=0.25)


def plot_strongly_convex(tables, *, ax=None, title=None, footnote=None):
    """Theorem 2's factor and ``T``, the final error against ``m`` and ``n'``, and Lemma 3.

    Parameters
    ----------
    tables : dict of list of dict
        ``factors``, ``rounds``, ``floor_points``, ``floor_exponents`` and ``lemma`` of
        :func:`.summary.summarise`.
    ax : sequence of 5 Axes, optional
        (a) factor, (b) rounds, (c) final error vs m, (d) vs n', (e) Lemma 3; default a new figure.
    title, footnote : str, optional
        Drawn on a new figure only.

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend``, ``handles``.
    """
    fig, axes, own = panels(ax, 5, aspect=0.8, max_cols=3)
    a, b, c, d, e = axes
    kappas = sorted({float(r["kappa"]) for r in tables["factors"]} | {float(r["kappa"]) for r in tables["lemma"]})
    colours = dict(zip(kappas, matplotlib.colormaps["viridis"](np.linspace(0.05, 0.8, max(len(kappas), 1)))))

    # (a) factor against L / (p lambda)
    for r in tables["factors"]:
        x, col = float(r["ratio"]), colours[float(r["kappa"])]
        small = int(r["cluster"]) == 0
        f, lo, hi = float(r["factor"]), float(r["low"]), float(r["high"])
        a.errorbar([x], [1 - f], yerr=[[max(1 - f - (1 - hi), 0)], [max((1 - lo) - (1 - f), 0)]],
                   fmt=_marker(r["p"]), color=col, mfc=col if small else "none", capsize=2)
        a.plot([x], [1 - float(r["exact"])], "x", color="0.2")
    rows = sorted({(float(r["ratio"]), float(r["bound"])) for r in tables["factors"]})
    a.plot([x for x, _ in rows], [1 - y for _, y in rows], "--", color="0.2")
    a.set_yscale("log")
    a.set_xlabel("L / (pλ)")
    a.set_ylabel("1 − factor (per round)")
    a.set_title("(a) contraction", loc="left")
    _logx(a, [x for x, _ in rows])

    # (b) rounds against L / (p lambda)
    rr = sorted(tables["rounds"], key=lambda r: float(r["ratio"]))
    x = floats(rr, "ratio")
    for r in rr:
        col = colours[float(r["kappa"])]
        m, lo, hi = float(r["mean"]), float(r["low"]), float(r["high"])
        b.errorbar([float(r["ratio"])], [m], yerr=[[m - lo], [hi - m]], fmt=_marker(r["p"]), color=col, capsize=2)
        b.plot([float(r["ratio"])], [float(r["max"])], "^", color=col, mfc="none")
    b.plot(x, floats(rr, "thm2_T"), "--", color="0.2")
    b.plot(x, floats(rr, "exact_rounds"), ":", color="0.2")
    b.set_yscale("log")
    b.set_xlabel("L / (pλ)")
    b.set_ylabel(f"rounds to ε = {float(rr[0]['eps']):g}" if rr else "rounds")
    b.set_title("(b) rounds", loc="left")
    _logx(b, x)

    # (c, d) final error against m and n'
    fits = {r["axis"]: r for r in tables["floor_exponents"]}
    for axis, target, label in (("m", c, "m"), ("n_prime", d, "n′")):
        pts = sorted((r for r in tables["floor_points"] if r["axis"] == axis), key=lambda r: float(r["x"]))
        if not pts:
            continue
        xs = floats(pts, "x")
        held = float(fits[axis]["held_out_x"]) if axis in fits else np.nan
        for r in pts:
            m, lo, hi = float(r["rms"]), float(r["rms_low"]), float(r["rms_high"])
            out = float(r["x"]) == held
            target.errorbar([float(r["x"])], [m], yerr=[[m - lo], [hi - m]], fmt="o", color="C0",
                            mfc="none" if out else "C0", capsize=2)
        target.plot(xs, np.sqrt(floats(pts, "exact_ms")), "-", color="0.2")
        if axis in fits and np.isfinite(float(fits[axis]["fitted"])):
            f = fits[axis]
            target.plot(xs, np.exp(float(f["intercept"])) * xs ** float(f["fitted"]), "--", color="C0", lw=0.8)
        target.set_yscale("log")
        target.set_xlabel(label)
        target.set_ylabel("final RMS error")
        target.set_title(f"({'c' if axis == 'm' else 'd'}) final error vs {label}", loc="left")
        _logx(target, xs)

    # (e) Lemma 3
    lem = tables["lemma"]
    for kappa in sorted({float(r["kappa"]) for r in lem}):
        rows = sorted((r for r in lem if float(r["kappa"]) == kappa), key=lambda r: float(r["n_prime"]))
        xs, col = floats(rows, "n_prime"), colours[kappa]
        meas, lo, hi = floats(rows, "measured"), floats(rows, "low"), floats(rows, "high")
        seen = meas > 0
        e.errorbar(xs[seen], meas[seen], yerr=[meas[seen] - lo[seen], hi[seen] - meas[seen]], fmt="o", color=col,
                   capsize=2, ms=4)
        e.plot(xs[~seen], hi[~seen], "v", color=col, mfc="none", ms=5)  # no worker misclustered: the upper end
        e.plot(xs, floats(rows, "exact"), "-", color=col)
        e.plot(xs, floats(rows, "chebyshev"), "--", color=col, lw=0.8)
        e.plot(xs, floats(rows, "lemma"), ":", color=col, lw=0.8)
    e.set_yscale("log")
    e.set_ylim(top=2 * max([float(r["lemma"]) for r in lem] + [1.0]))
    e.axhline(1.0, color="0.6", lw=0.6)
    e.set_xlabel("n′")
    e.set_ylabel("P(misclustered)")
    e.set_title("(e) Lemma 3", loc="left")
    _logx(e, [float(r["n_prime"]) for r in lem])

    handles = [matplotlib.lines.Line2D([], [], color=colours[k], marker="o", ls="none", label=f"κ = {k:g}")
               for k in kappas]
    handles += [
        matplotlib.lines.Line2D([], [], color="0.3", marker="o", ls="none", label="p = 1/2"),
        matplotlib.lines.Line2D([], [], color="0.3", marker="s", ls="none", label="p = 0.2 (filled: smallest "
                                "cluster, open: the other)"),
        matplotlib.lines.Line2D([], [], color="0.2", ls="--", label="Theorem 2 (bound, T) / Lemma 3's proof step"),
        matplotlib.lines.Line2D([], [], color="0.2", marker="x", ls="none", label="exact second moments (derived)"),
        matplotlib.lines.Line2D([], [], color="0.2", ls=":", label="exact rounds (b) / Lemma 3's bound (e)"),
        matplotlib.lines.Line2D([], [], color="0.3", marker="^", mfc="none", ls="none", label="largest rounds"),
        matplotlib.lines.Line2D([], [], color="0.3", marker="v", mfc="none", ls="none",
                                label="no worker misclustered: upper end of the interval"),
        matplotlib.lines.Line2D([], [], color="0.2", ls="-", label="exact: floor (c, d), probability (e)"),
        matplotlib.lines.Line2D([], [], color="C0", ls="--", lw=0.8, label="fitted exponent (open: held out)"),
    ]
    legend = finish(fig, axes, handles, own=own, title=title, footnote=footnote, legend_ax=e)
    return result(fig, axes, legend, handles=handles)
