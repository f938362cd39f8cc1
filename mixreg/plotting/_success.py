"""IFCA's success probability against the separation, one panel per success rule."""

from __future__ import annotations

import matplotlib.lines
import matplotlib.ticker
import numpy as np

from ._common import _plain, plt
from .methods import RULES, method_label, rule_title

__all__ = ["plot_success_vs_separation"]


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
        One panel per rule, titled by :func:`mixreg.plotting.rule_title`.
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
    ifca = method_label("ifca", short=True)
    ceiling = RULES["oracle"]
    for ax, rule in zip(axes[0], rules):
        curve = RULES.get(rule, RULES["official"])  # an unregistered rule is drawn as the official one
        for colour, sigma in zip(colours, sigmas):
            rows = sorted((r for r in summary if r["sigma"] == sigma), key=lambda r: r["separation_mean"])
            x = np.array([r["separation_mean"] for r in rows])
            y = np.array([r[f"{rule}_success_rate"] for r in rows])
            lo = np.array([r[f"{rule}_success_low"] for r in rows])
            hi = np.array([r[f"{rule}_success_high"] for r in rows])
            ax.plot(x, y, marker=curve.marker, ls=curve.linestyle, color=colour, lw=1.8, ms=4,
                    label=f"{ifca}, σ = {sigma:g}")
            ax.fill_between(x, lo, hi, color=colour, alpha=0.18, lw=0)
            oracle = np.array([r["oracle_success_rate"] for r in rows])
            ax.plot(x, oracle, ls=ceiling.linestyle, color=colour, lw=3.5, alpha=0.3, solid_capstyle="butt",
                    label=ceiling.label if sigma == sigmas[0] else None)
            for label, delta in (separation_lines or {}).get(sigma, {}).items():
                if np.isfinite(delta) and delta > 0:
                    ax.axvline(delta, color=colour, ls=styles[labels.index(label) % len(styles)], lw=1.0, alpha=0.8)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("realised separation Δ = min ‖θ*ᵢ − θ*ⱼ‖")
        ax.set_title(rule_title(rule), fontsize=10)
        ax.grid(True, which="both", alpha=0.25)
        if r_per_delta:
            top = ax.secondary_xaxis("top", functions=(lambda d: d / r_per_delta, lambda r: r * r_per_delta))
            top.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            top.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_plain))
            top.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            top.set_xlabel(f"official per-coordinate scale r  (Δ ≈ {r_per_delta:.1f} r)", fontsize=9)
    axes[0][0].set_ylabel("success probability (95% Wilson interval)")
    handles, _ = axes[0][-1].get_legend_handles_labels()
    for label in labels:  # the theory lines, in a neutral grey (not a method's colour)
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
