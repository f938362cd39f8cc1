"""Figures drawn from tidy result tables, with the theory on them.

Plotting reads summaries (lists of dicts, see :func:`mixreg.stats.group_rates`) and theory
values computed by the caller; it never runs an algorithm or a sweep.  Uses matplotlib's
object-oriented API only, so it works under any backend (``Agg`` in scripts and CI).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg", force=False)  # a no-op when a backend was already chosen
import matplotlib.lines  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["plot_success_vs_separation", "save_figure", "plot_error_vs_rounds", "plot_two_phase_scaling"]

_RULE_TITLES = {
    "official": "official rule: best of all runs by distance to truth",
    "honest": "honest rule: run with lowest training loss, matched distance",
}


def plot_success_vs_separation(
    summary,
    *,
    rules=("official", "honest"),
    separation_lines=None,
    r_per_delta=None,
    title=None,
    footnote=None,
):
    """Success probability against realised separation, one curve per noise level.

    Parameters
    ----------
    summary : list of dict
        One row per (sigma, r) cell with ``sigma``, ``separation_mean`` and, for each rule and
        for ``"oracle"``, ``<rule>_success_rate/_low/_high`` (95% Wilson intervals).
    rules : sequence of str
        One panel per rule.
    separation_lines : dict, optional
        ``{sigma: {label: delta}}``: theory thresholds drawn as vertical lines in the colour of
        that sigma, one line style per label (e.g. Theorem 1's separation condition with unit
        and with fitted constants); each label appears once in the legend, in grey.
    r_per_delta : float, optional
        ``Delta / r`` of the protocol; adds a top axis in the official code's ``r``.
    title, footnote : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    sigmas = sorted({row["sigma"] for row in summary})
    colours = plt.get_cmap("viridis")(np.linspace(0.0, 0.85, max(len(sigmas), 1)))
    fig, axes = plt.subplots(1, len(rules), figsize=(6.2 * len(rules), 5.6), sharey=True, squeeze=False)
    styles = ["--", ":", "-."]
    labels = list(dict.fromkeys(lab for lines in (separation_lines or {}).values() for lab in lines))
    for ax, rule in zip(axes[0], rules):
        for colour, sigma in zip(colours, sigmas):
            rows = sorted((r for r in summary if r["sigma"] == sigma), key=lambda r: r["separation_mean"])
            x = np.array([r["separation_mean"] for r in rows])
            y = np.array([r[f"{rule}_success_rate"] for r in rows])
            lo = np.array([r[f"{rule}_success_low"] for r in rows])
            hi = np.array([r[f"{rule}_success_high"] for r in rows])
            ax.plot(x, y, "o-", color=colour, lw=1.8, ms=4, label=f"IFCA, σ = {sigma:g}")
            ax.fill_between(x, lo, hi, color=colour, alpha=0.18, lw=0)
            oracle = np.array([r["oracle_success_rate"] for r in rows])
            ax.plot(x, oracle, color=colour, lw=3.5, alpha=0.3, solid_capstyle="butt",
                    label="known-label LS oracle (ceiling)" if sigma == sigmas[0] else None)
            for label, delta in (separation_lines or {}).get(sigma, {}).items():
                if np.isfinite(delta) and delta > 0:
                    ax.axvline(delta, color=colour, ls=styles[labels.index(label) % len(styles)], lw=1.0, alpha=0.8)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("realised separation Δ = min ‖θ*ᵢ − θ*ⱼ‖")
        ax.set_title(_RULE_TITLES.get(rule, rule), fontsize=10)
        ax.grid(True, which="both", alpha=0.25)
        if r_per_delta:
            top = ax.secondary_xaxis("top", functions=(lambda d: d / r_per_delta, lambda r: r * r_per_delta))
            top.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            top.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain))
            top.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            top.set_xlabel(f"official per-coordinate scale r  (Δ ≈ {r_per_delta:.1f} r)", fontsize=9)
    axes[0][0].set_ylabel("success probability (95% Wilson interval)")
    handles, _ = axes[0][-1].get_legend_handles_labels()
    for label in labels:
        handles.append(matplotlib.lines.Line2D([], [], color="0.35", lw=1.0,
                                               ls=styles[labels.index(label) % len(styles)], label=label))
    bottom = 0.07 if footnote else 0.0
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=3, frameon=False,
               bbox_to_anchor=(0.5, bottom))
    if title:
        fig.suptitle(title, fontsize=11)
    if footnote:
        fig.text(0.01, 0.005, footnote, fontsize=7, va="bottom", ha="left", wrap=True)
    fig.tight_layout(rect=(0, bottom + 0.04 + 0.035 * ((len(handles) + 2) // 3), 1, 1))
    return fig


def _plain(value, _pos=None):
    """Tick label without scientific notation: 0.03, 0.1, 2, 40."""
    return f"{value:g}"


def save_figure(fig, path_without_suffix, *more_paths):
    """Write ``<path>.png`` (150 dpi) and ``<path>.pdf`` for each path given, then close ``fig``.

    Returns the written paths, PNG then PDF for each path in order.
    """
    from pathlib import Path

    written = []
    for base in (path_without_suffix, *more_paths):
        base = Path(base)
        base.parent.mkdir(parents=True, exist_ok=True)
        png, pdf = base.with_suffix(".png"), base.with_suffix(".pdf")
        fig.savefig(png, dpi=150)
        fig.savefig(pdf)
        written += [png, pdf]
    plt.close(fig)
    return written


# --------------------------------------------------------------------------------------------
# Su, Xu and Yang's two-phase algorithm (experiments/two_phase.py)
# --------------------------------------------------------------------------------------------

_METHOD_STYLES = {
    "fedavg": dict(color="#1b7837", marker="o"),
    "fedprox": dict(color="#5aae61", marker="s"),
    "ifca": dict(color="#c51b7d", marker="v"),
    "oracle": dict(color="#e08214", marker="^"),
    "ls": dict(color="0.35", marker="D"),
}


def plot_error_vs_rounds(curves, *, floor=None, switch_round=None, theory=None, title=None, footnote=None):
    """``log d(theta_t, theta*)`` against communication rounds, median and quartile band per method.

    Parameters
    ----------
    curves : list of dict
        One per method: ``key`` (for the style: "fedavg", "fedprox", "ifca", "oracle"),
        ``label``, ``rounds`` (array), ``median``, ``low``, ``high`` (arrays, e.g. quartiles).
        Values <= 0 (e.g. the oracle's exact start) cannot be drawn on the log scale and are
        left out.
    floor : tuple (value, label), optional
        A horizontal reference line (the known-label least-squares error).
    switch_round : int, optional
        Round where Phase 1 hands over to Phase 2 (dotted vertical line).
    theory : tuple (rounds, values, label), optional
        A theory curve (dashed black).
    title, footnote : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, ax = plt.subplots(figsize=(9.0, 7.4))
    for c in curves:
        style = _METHOD_STYLES.get(c.get("key"), {})
        colour = style.get("color")
        med, lo, hi = (np.asarray(c[key], dtype=float) for key in ("median", "low", "high"))
        show = med > 0
        ax.plot(np.asarray(c["rounds"])[show], med[show], "-", color=colour, marker=style.get("marker"), ms=3.5,
                lw=1.8, label=c["label"])
        band = show & (lo > 0)
        ax.fill_between(np.asarray(c["rounds"])[band], lo[band], hi[band], color=colour, alpha=0.15, lw=0)
    if floor is not None and np.isfinite(floor[0]) and floor[0] > 0:
        ax.axhline(floor[0], color=_METHOD_STYLES["ls"]["color"], ls="-.", lw=1.2, label=floor[1])
    if theory is not None:
        ax.plot(theory[0], theory[1], "k--", lw=1.3, label=theory[2])
    if switch_round is not None:
        ax.axvline(switch_round, color="0.5", ls=":", lw=1.0)
        ax.text(switch_round, 0.99, "Phase 1 | Phase 2", transform=ax.get_xaxis_transform(), fontsize=8,
                va="top", ha="center", color="0.3", backgroundcolor="white")
    ax.set_yscale("log")
    ax.set_xlabel("communication round t")
    ax.set_ylabel("d(θ_t, θ*) = min_π max_l ‖θ_π(l) − θ*_l‖")
    ax.grid(True, which="both", alpha=0.25)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.07 if footnote else 0.0), ncol=1,
               fontsize=8, frameon=False, title="median over trials, band = quartiles", title_fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    if footnote:
        fig.text(0.01, 0.005, footnote, fontsize=7, va="bottom", ha="left", wrap=True)
    fig.tight_layout(rect=(0, 0.31 if footnote else 0.25, 1, 1))
    return fig


def _errorbars(ax, x, series, *, spread=0.0):
    """Median markers with quartile bars for each ``(key, label, median, low, high)``.

    With ``spread > 0`` the series are shifted side by side on a linear x axis and drawn
    without connecting lines.
    """
    n = len(series)
    for j, (key, label, med, lo, hi) in enumerate(series):
        style = _METHOD_STYLES.get(key, {})
        shift = spread * (j - (n - 1) / 2)
        xs = np.asarray(x, dtype=float) + shift
        med, lo, hi = (np.asarray(v, dtype=float) for v in (med, lo, hi))
        ax.errorbar(xs, med, yerr=[med - lo, hi - med], marker=style.get("marker", "o"), ms=5,
                    ls="-" if spread == 0 else "none", color=style.get("color"), lw=1.4, capsize=2,
                    label=label)


def plot_two_phase_scaling(by_M, by_law, rates, *, title=None, footnote=None):
    """Final error against ``M`` and against the client-size law, and the Phase-2 contraction.

    Parameters
    ----------
    by_M : dict
        ``M`` (array), ``series`` (list of ``(key, label, median, low, high)``), ``theory``
        (``(values, label)`` drawn as a dashed line over ``M``).
    by_law : dict
        ``laws`` (list of str), ``chi2`` (list of float, shown under the law names), ``series``
        as above, ``theory`` (``(values, label)`` drawn as black crosses).
    rates : list of dict
        One per local solver: ``key``, ``label``, ``p`` (per-trial realised ``p_min``),
        ``measured`` (per-trial ``1 - rate``), ``linear`` (per-trial ``1 - exact linear rate``),
        ``C1`` and ``C1_label`` (the line ``1 - rate = C1 p_min`` and its legend text).
    title, footnote : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = plt.subplots(1, 3, figsize=(17.0, 6.0))
    ax = axes[0]
    _errorbars(ax, by_M["M"], by_M["series"])
    handles, labels = ax.get_legend_handles_labels()  # the methods: one shared legend
    if by_M.get("theory") is not None:
        line, = ax.plot(by_M["M"], by_M["theory"][0], "k--", lw=1.3)
        ax.legend([line], [by_M["theory"][1]], fontsize=7.5, loc="upper right", framealpha=0.9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(by_M["M"])
    ax.set_xticklabels([str(int(m)) for m in by_M["M"]])
    ax.minorticks_off()
    ax.set_xlabel("number of clients M")
    ax.set_ylabel("final d(θ_T, θ*)  (median, quartile bars)")
    ax.set_title("final error against M", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)

    ax = axes[1]
    x = np.arange(1, len(by_law["laws"]) + 1, dtype=float)
    _errorbars(ax, x, by_law["series"], spread=0.08)
    if by_law.get("theory") is not None:
        cross, = ax.plot(x, by_law["theory"][0], "kx", ms=9, mew=2)
        ax.legend([cross], [by_law["theory"][1]], fontsize=7.5, loc="upper left", framealpha=0.9)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{law}\nχ²(w) = {c:.2g}" for law, c in zip(by_law["laws"], by_law["chi2"])],
                       fontsize=8.5)
    ax.set_xlim(0.5, len(x) + 0.5)
    ax.set_yscale("log")
    ax.set_xlabel("client-size law (same mean size), ordered by χ²(w)")
    ax.set_ylabel("final d(θ_T, θ*)  (median, quartile bars)")
    ax.set_title("final error against the client-size law", fontsize=10)
    ax.grid(True, which="both", alpha=0.25)

    ax = axes[2]
    p_max = 0.0
    for r in rates:
        p = np.asarray(r["p"], dtype=float)
        if np.isfinite(p).any():
            p_max = max(p_max, float(np.nanmax(p)))
    for r in rates:
        style = _METHOD_STYLES.get(r["key"], {})
        p = np.asarray(r["p"], dtype=float)
        ax.scatter(p, r["measured"], s=14, color=style.get("color"), marker=style.get("marker", "o"),
                   alpha=0.7, label=f"{r['label']}: measured 1 − ρ")
        ax.scatter(p, r["linear"], s=24, facecolors="none", edgecolors=style.get("color"),
                   marker=style.get("marker", "o"), alpha=0.6, label=f"{r['label']}: exact linear rate")
        if np.isfinite(r["C1"]):
            grid = np.linspace(0.0, 1.1 * max(p_max, 1e-3), 50)
            ax.plot(grid, r["C1"] * grid, "--", color=style.get("color"), lw=1.3, label=r.get("C1_label", "C₁ p_min"))
    ax.set_xlim(left=0.0)
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("realised p_min (fraction of clients in the smallest cluster)")
    ax.set_ylabel("1 − ρ, ρ = per-round contraction factor of Phase 2")
    ax.set_title("Phase-2 contraction against the theorem's 1 − C₁ p_min", fontsize=10)
    ax.legend(fontsize=7, framealpha=0.9, loc="lower right")
    ax.grid(True, alpha=0.25)
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 0.075 if footnote else 0.0))
    if title:
        fig.suptitle(title, fontsize=11)
    if footnote:
        fig.text(0.01, 0.005, footnote, fontsize=7, va="bottom", ha="left", wrap=True)
    fig.tight_layout(rect=(0, 0.13 if footnote else 0.06, 1, 1))
    return fig
