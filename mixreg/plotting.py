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

__all__ = ["plot_success_vs_separation", "save_figure"]

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


def save_figure(fig, path_without_suffix):
    """Write ``<path>.png`` (150 dpi) and ``<path>.pdf``; return both paths."""
    from pathlib import Path

    base = Path(path_without_suffix)
    base.parent.mkdir(parents=True, exist_ok=True)
    png, pdf = base.with_suffix(".png"), base.with_suffix(".pdf")
    fig.savefig(png, dpi=150)
    fig.savefig(pdf)
    plt.close(fig)
    return png, pdf
