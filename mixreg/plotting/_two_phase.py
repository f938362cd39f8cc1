"""Su, Xu and Yang's two-phase algorithm (``experiments/two_phase.py``): error curves, the Phase-2
contraction, and the scaling in ``M``, the size law and ``p_min``."""

from __future__ import annotations

import textwrap

import numpy as np

from ._common import _errorbars, _label, _style, plt
from ..methods import METHODS

__all__ = ["plot_error_vs_rounds", "plot_two_phase_rounds", "plot_two_phase_contraction", "plot_two_phase_scaling"]


def plot_error_vs_rounds(curves, *, floor=None, switch_round=None, theory=None, title=None, footnote=None):
    """``log d(theta_t, theta*)`` against communication rounds, median and quartile band per method.

    Parameters
    ----------
    curves : list of dict
        One per method: ``key`` (a key of :data:`mixreg.plotting.METHODS`: "fedavg",
        "fedprox", "ifca", "oracle"; it gives the colour and marker), ``label`` (optional:
        default the registry's, see :func:`mixreg.plotting.method_label`), ``rounds`` (array),
        ``median``, ``low``, ``high`` (arrays, e.g. quartiles).
        Values <= 0 (e.g. the exact start of IFCA from θ*, ``oracle`` in the records) cannot be
        drawn on the log scale and are left out.
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
    _rounds_axis(ax, switch_round)
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


def _wrap(text, width=95):
    return "\n".join(textwrap.wrap(text, width)) if text else text


def _draw_curves(ax, curves):
    """Median line and quartile band per curve (values <= 0 left out of the log scale)."""
    for c in curves:
        style = _style(c.get("key"))
        med, lo, hi = (np.asarray(c[key], dtype=float) for key in ("median", "low", "high"))
        rounds = np.asarray(c["rounds"])
        show = np.isfinite(med) & (med > 0)
        ax.plot(rounds[show], med[show], ls=style.linestyle, color=style.color, marker=style.marker, ms=3.5,
                lw=1.8, label=_wrap(_label(c.get("key"), c.get("label"))))
        band = show & np.isfinite(lo) & (lo > 0) & np.isfinite(hi)
        ax.fill_between(rounds[band], lo[band], hi[band], color=style.color, alpha=0.15, lw=0)


def plot_two_phase_rounds(panels, *, switch_round=None, title=None, footnote=None):
    """``log d(theta_t, theta*)`` against rounds, one panel per group of methods, each with its legend.

    Parameters
    ----------
    panels : list of dict
        One per panel: ``title``; ``curves`` (list of dict as for :func:`plot_error_vs_rounds`:
        ``key``, optional ``label``, ``rounds``, ``median``, ``low``, ``high``); optional
        ``floors``, a list of ``(key, value, label)`` horizontal lines in the colour of method
        ``key`` (``label=None``: the registry's); optional ``theory``, a list of dict with
        ``key`` (colour), ``rounds``, ``values``, ``linestyle`` and ``label``, drawn thin.
        Non-finite and non-positive values are left out.
    switch_round : int, optional
        Round where Phase 1 hands over to Phase 2 (dotted vertical line in every panel).
    title, footnote : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    n = len(panels)
    fig, axes = plt.subplots(1, n, figsize=(7.6 * n, 9.0), sharey=True, squeeze=False)
    for ax, panel in zip(axes[0], panels):
        _draw_curves(ax, panel["curves"])
        for key, value, label in panel.get("floors", ()):
            if value is not None and np.isfinite(value) and value > 0:
                ax.axhline(value, color=_style(key).color, ls="-.", lw=1.2, label=_wrap(_label(key, label)))
        for line in panel.get("theory", ()):
            values = np.asarray(line["values"], dtype=float)
            show = np.isfinite(values) & (values > 0)
            if show.any():
                ax.plot(np.asarray(line["rounds"])[show], values[show], ls=line.get("linestyle", "--"),
                        color=_style(line.get("key")).color, lw=1.3, alpha=0.9, label=_wrap(line["label"]))
        _rounds_axis(ax, switch_round)
        ax.grid(True, which="both", alpha=0.25)
        ax.set_title(panel.get("title", ""), fontsize=10)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize=7.5, frameon=False, ncol=1)
    axes[0][0].set_ylabel("d(θ_t, θ*) = min_π max_l ‖θ_π(l) − θ*_l‖")
    if title:
        fig.suptitle(title, fontsize=11)
    if footnote:
        fig.text(0.01, 0.005, _wrap(footnote, 115 * n), fontsize=7, va="bottom", ha="left")
    fig.subplots_adjust(left=0.07 / n * 2, right=0.99, top=0.91, bottom=0.45, wspace=0.06)
    return fig


def plot_two_phase_contraction(solvers, *, title=None, footnote=None):
    r"""Phase 2's measured contraction against the prediction, and the rounds to the floor.

    Three panels: (a) measured per-round factor against the predicted :math:`1 - C_1 p_{min}`
    (filled markers; open markers: the exact factor of the settled map computed from the data),
    with the diagonal; (b) :math:`1 - \rho` against the realised :math:`p_{min}` (measured,
    filled; predicted per trial, bars) with the line :math:`C_1 p_{min}` at the median derived
    :math:`C_1`; (c) the rounds to the floor against :math:`\rho^{-1}\log(1/\nu)`.

    Parameters
    ----------
    solvers : list of dict
        One per local solver: ``key`` (registry key: colour and marker), optional ``label``,
        and per-trial lists ``predicted``, ``measured``, ``exact`` (factors), ``p`` (realised
        :math:`p_{min}`), ``C1`` (derived), ``rounds`` and ``rounds_predicted``.  Non-finite
        values are left out.
    title, footnote : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = plt.subplots(1, 3, figsize=(18.0, 8.0))
    lows, highs = [], []
    p_max, r_max = 0.0, 0.0
    for s in solvers:
        style = _style(s["key"])
        label = _label(s["key"], s.get("label"))
        pred, meas, exact, p = (np.asarray(s[key], dtype=float) for key in ("predicted", "measured", "exact", "p"))
        ok = np.isfinite(pred) & np.isfinite(meas)
        axes[0].scatter(pred[ok], meas[ok], s=18, color=style.color, marker=style.marker or "o", alpha=0.8,
                        label=f"{label}: measured")
        okx = np.isfinite(pred) & np.isfinite(exact)
        axes[0].scatter(pred[okx], exact[okx], s=34, facecolors="none", edgecolors=style.color,
                        marker=style.marker or "o", alpha=0.6, label=f"{label}: exact factor of the settled map")
        for v in (pred[ok], meas[ok], exact[okx]):
            if v.size:
                lows.append(v.min())
                highs.append(v.max())
        okp = np.isfinite(p) & np.isfinite(meas)
        axes[1].scatter(p[okp], 1 - meas[okp], s=18, color=style.color, marker=style.marker or "o", alpha=0.8,
                        label=f"{label}: measured 1 − ρ")
        okq = np.isfinite(p) & np.isfinite(pred)
        axes[1].scatter(p[okq], 1 - pred[okq], s=90, color=style.color, marker="_", alpha=0.8,
                        label=f"{label}: predicted 1 − ρ, per trial")
        if okq.any():
            p_max = max(p_max, float(p[okq].max()))
        C1 = np.asarray(s["C1"], dtype=float)
        C1 = C1[np.isfinite(C1)]
        if C1.size:
            grid = np.linspace(0.0, 1.15 * max(p_max, 1e-3), 50)
            axes[1].plot(grid, float(np.median(C1)) * grid, "--", color=style.color, lw=1.1,
                         label=f"{label}: C₁ p_min, C₁ = {float(np.median(C1)):.3g} (median derived)")
        rounds, rpred = np.asarray(s["rounds"], dtype=float), np.asarray(s["rounds_predicted"], dtype=float)
        okr = np.isfinite(rounds) & np.isfinite(rpred)
        axes[2].scatter(rpred[okr], rounds[okr], s=18, color=style.color, marker=style.marker or "o", alpha=0.8,
                        label=f"{label}: {int(okr.sum())} of {rounds.size} trials reached 2x the floor")
        if okr.any():
            r_max = max(r_max, float(rpred[okr].max()), float(rounds[okr].max()))
    ax = axes[0]
    if lows:
        lo, hi = min(lows), max(highs)
        pad = 0.05 * max(hi - lo, 1e-3)
        ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], "k-", lw=0.8, label="measured = predicted")
        ax.set_xlim(lo - pad, hi + pad)
        ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlabel("predicted worst factor 1 − C₁ p_min (C₁ from η and cov_low, p_min = min data fraction)")
    ax.set_ylabel("per-round factor ρ from the round the labels settle")
    ax.set_title("(a) measured factor against the prediction", fontsize=10)
    ax = axes[1]
    ax.set_xlim(left=0.0)
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("realised p_min = smallest data fraction N_l / N")
    ax.set_ylabel("1 − ρ")
    ax.set_title("(b) 1 − ρ against p_min", fontsize=10)
    ax = axes[2]
    if r_max > 0:
        ax.plot([0, 1.05 * r_max], [0, 1.05 * r_max], "k-", lw=0.8, label="measured = ρ⁻¹ log(1/ν)")
        ax.set_xlim(0, 1.05 * r_max)
        ax.set_ylim(0, 1.05 * r_max)
    ax.set_xlabel("ρ⁻¹ log(1/ν), ρ = C₁ p_min predicted, ν with C₃ = C₄ = 1")
    ax.set_ylabel("Phase-2 rounds until d(θ_t, θ*) stays ≤ 2 d(θ^∞, θ*)")
    ax.set_title("(c) rounds to the floor against the global theorem's", fontsize=10)
    for ax in axes:
        ax.grid(True, alpha=0.25)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=7.5, frameon=False)
    if title:
        fig.suptitle(title, fontsize=11)
    if footnote:
        fig.text(0.01, 0.005, _wrap(footnote, 300), fontsize=7, va="bottom", ha="left")
    fig.subplots_adjust(left=0.05, right=0.99, top=0.9, bottom=0.42, wspace=0.22)
    return fig


def _rounds_axis(ax, switch_round):
    """A log error axis against the communication rounds, the phase switch marked (if any)."""
    if switch_round is not None:
        ax.axvline(switch_round, color="0.5", ls=":", lw=1.0)
        ax.text(switch_round, 0.99, "Phase 1 | Phase 2", transform=ax.get_xaxis_transform(), fontsize=8,
                va="top", ha="center", color="0.3", backgroundcolor="white")
    ax.set_yscale("log")
    ax.set_xlabel("communication round t")
