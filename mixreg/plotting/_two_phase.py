"""Su, Xu and Yang's two-phase algorithm (``experiments/two_phase.py``): error curves and scaling."""

from __future__ import annotations

import numpy as np

from ._common import _errorbars, _label, _style, plt
from .methods import METHODS

__all__ = ["plot_error_vs_rounds", "plot_two_phase_scaling"]


def plot_error_vs_rounds(curves, *, floor=None, switch_round=None, theory=None, title=None, footnote=None):
    """``log d(theta_t, theta*)`` against communication rounds, median and quartile band per method.

    Parameters
    ----------
    curves : list of dict
        One per method: ``key`` (a key of :data:`mixreg.plotting.METHODS`: "fedavg",
        "fedprox", "ifca", "oracle"; it gives the colour and marker), ``label`` (optional:
        default the registry's, see :func:`mixreg.plotting.method_label`), ``rounds`` (array),
        ``median``, ``low``, ``high`` (arrays, e.g. quartiles).
        Values <= 0 (e.g. the oracle's exact start) cannot be drawn on the log scale and are
        left out.
    floor : tuple (value, label), optional
        A horizontal reference line (the known-label least-squares error) in the colour of
        method ``"ls"``; ``label=None`` takes the registry's label of ``"ls"``.
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
        style = _style(c.get("key"))
        med, lo, hi = (np.asarray(c[key], dtype=float) for key in ("median", "low", "high"))
        show = med > 0
        ax.plot(np.asarray(c["rounds"])[show], med[show], ls=style.linestyle, color=style.color,
                marker=style.marker, ms=3.5, lw=1.8, label=_label(c.get("key"), c.get("label")))
        band = show & (lo > 0)
        ax.fill_between(np.asarray(c["rounds"])[band], lo[band], hi[band], color=style.color, alpha=0.15, lw=0)
    if floor is not None and np.isfinite(floor[0]) and floor[0] > 0:
        ax.axhline(floor[0], color=METHODS["ls"].color, ls="-.", lw=1.2, label=_label("ls", floor[1]))
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


def plot_two_phase_scaling(by_M, by_law, rates, *, title=None, footnote=None):
    """Final error against ``M`` and against the client-size law, and the Phase-2 contraction.

    Parameters
    ----------
    by_M : dict
        ``M`` (array), ``series`` (list of ``(key, label, median, low, high)``; ``label=None``
        takes the registry's label of ``key``), ``theory`` (``(values, label)`` drawn as a
        dashed line over ``M``).
    by_law : dict
        ``laws`` (list of str), ``chi2`` (list of float, shown under the law names), ``series``
        as above, ``theory`` (``(values, label)`` drawn as black crosses).
    rates : list of dict
        One per local solver: ``key``, ``label`` (optional, default the registry's), ``p``
        (per-trial realised ``p_min``), ``measured`` (per-trial ``1 - rate``), ``linear``
        (per-trial ``1 - exact linear rate``), ``C1`` and ``C1_label`` (the line
        ``1 - rate = C1 p_min`` and its legend text).
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
        style = _style(r["key"])
        label = _label(r["key"], r.get("label"))
        p = np.asarray(r["p"], dtype=float)
        ax.scatter(p, r["measured"], s=14, color=style.color, marker=style.marker or "o",
                   alpha=0.7, label=f"{label}: measured 1 − ρ")
        ax.scatter(p, r["linear"], s=24, facecolors="none", edgecolors=style.color,
                   marker=style.marker or "o", alpha=0.6, label=f"{label}: exact linear rate")
        if np.isfinite(r["C1"]):
            grid = np.linspace(0.0, 1.1 * max(p_max, 1e-3), 50)
            ax.plot(grid, r["C1"] * grid, "--", color=style.color, lw=1.3, label=r.get("C1_label", "C₁ p_min"))
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
