"""The nu-terms study's figure: the sweeps, the exponents against the bound's, the held-out residuals.

:func:`draw` makes it from the tables of :func:`.summary.summarise` alone (``--redraw``);
:func:`plot_nu_sweeps` draws it from the panels :func:`draw` prepares.
"""

from __future__ import annotations

import pathlib
import textwrap

import numpy as np
from matplotlib.ticker import FuncFormatter, NullLocator

from mixreg.methods import method_label
from mixreg.plotting import median_errorbars, method_style, plain_tick, save_figure, series_label
import matplotlib.pyplot as plt

from .summary import AXES, AXIS_NAMES, METHOD_KEYS, NAME

__all__ = ["draw", "statement", "plot_nu_sweeps"]


def _sparse(value, _pos=None):
    """Log-axis label at 1, 2, 3 and 5 times a power of ten only (the others stay unlabelled)."""
    if value <= 0:
        return ""
    lead = value / 10 ** np.floor(np.log10(value))
    return plain_tick(value) if int(round(lead)) in (1, 2, 3, 5) else ""


def _tick(value):
    """A sweep value as a tick label: integers in full (16000), others to 3 digits (0.0304)."""
    return str(int(value)) if float(value).is_integer() else f"{value:.3g}"


def _sweep_panel(ax, panel):
    x = np.asarray(panel["x"], dtype=float)
    median_errorbars(ax, x, panel["series"])
    if panel.get("theory") is not None:
        values, label = panel["theory"]
        values = np.asarray(values, dtype=float)
        ok = np.isfinite(values) & (values > 0)
        line, = ax.plot(x[ok], values[ok], "k--", lw=1.3)
        ax.legend([line], [label], fontsize=6.5, loc="upper left", framealpha=0.85, handlelength=2.5)
    if panel["log_x"]:
        ax.set_xscale("log")
        ax.minorticks_off()
    ax.set_xticks(x)
    ax.set_xticklabels([_tick(v) for v in x], fontsize=7.5, rotation=30 if x.size > 5 else 0)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(_sparse))
    ax.yaxis.set_minor_formatter(FuncFormatter(_sparse))
    ax.tick_params(axis="y", which="both", labelsize=7)
    top = ax.secondary_xaxis("top")
    top.set_xticks(x)
    top.set_xticklabels([f"{v:.2g}" for v in panel["nu"]], fontsize=6.5)
    top.xaxis.set_minor_locator(NullLocator())
    top.tick_params(length=2, pad=1)
    top.set_xlabel("ν (unit constants)", fontsize=7, labelpad=2)
    ax.set_xlabel(panel["xlabel"], fontsize=8)
    ax.set_ylabel("final d(θ̂, θ*)  (median, quartile bars)", fontsize=8)
    ax.set_title(panel["title"], fontsize=9.5)
    ax.grid(True, which="both", alpha=0.25)
    ax.text(0.98, 0.02, panel["note"], transform=ax.transAxes, fontsize=6.5, ha="right", va="bottom",
            family="monospace", bbox=dict(boxstyle="round", fc="white", ec="0.7", alpha=0.9))
    ax.text(0.5, -0.2, textwrap.fill(panel["statement"], 62), transform=ax.transAxes, fontsize=7.2, ha="center",
            va="top", color="#b2182b" if panel.get("contradicts") else "0.15",
            fontweight="bold" if panel.get("contradicts") else "normal")


def _forest_panel(ax, forest):
    n = len(forest["axes"])
    keys = list(dict.fromkeys(r["key"] for r in forest["rows"]))
    offsets = {key: 0.22 * (j - (len(keys) - 1) / 2) for j, key in enumerate(keys)}
    seen = set()
    for r in forest["rows"]:
        y = r["axis"] + offsets[r["key"]]
        style = method_style(r["key"], among=keys)
        if np.isfinite(r["fitted"]):
            err = [[r["fitted"] - r["low"]], [r["high"] - r["fitted"]]] if np.isfinite(r["low"]) else None
            ax.errorbar([r["fitted"]], [y], xerr=err, fmt=style.marker or "o", color=style.color, ms=5, capsize=2,
                        lw=1.3, label=None if r["key"] in seen else series_label(r["key"], r.get("label")))
            seen.add(r["key"])
    predicted = {r["axis"]: r for r in forest["rows"]}
    for a, r in predicted.items():
        ax.plot([r["predicted"]] * 2, [a - 0.4, a + 0.4], "k-", lw=2.2,
                label="exponent of ν/p_min (unit constants), computed in advance" if a == 0 else None)
        ax.plot([r["ls_rate"]] * 2, [a - 0.4, a + 0.4], ":", color="0.45", lw=2.0,
                label="exponent of the known-label LS scale σ√(d/(N_min−d−1))" if a == 0 else None)
    ax.axvline(0.0, color="0.7", lw=0.8)
    ax.set_yticks(np.arange(n))
    ax.set_yticklabels(forest["axes"], fontsize=7)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlabel("exponent of the final error along the sweep\n(tiny sweep: log-slope per unit fraction)",
                  fontsize=8)
    ax.set_title("fitted exponent (95% bootstrap) vs predicted", fontsize=9.5)
    ax.grid(True, axis="x", alpha=0.25)


def _holdout_panel(ax, holdout):
    n = len(holdout["axes"])
    keys = list(dict.fromkeys(p["key"] for p in holdout["points"]))
    for j, key in enumerate(keys):
        pts = [p for p in holdout["points"] if p["key"] == key]
        style = method_style(key, among=keys)
        shift = 0.15 * (j - (len(keys) - 1) / 2)
        xs = np.array([p["axis"] for p in pts], dtype=float) + shift
        ys = np.array([p["residual"] for p in pts], dtype=float)
        ok = np.isfinite(ys) & (ys > 0)
        ax.scatter(xs[ok], ys[ok], s=18, color=style.color, marker=style.marker or "o", alpha=0.8,
                   label=series_label(key, pts[0].get("label")))
    ax.axhline(1.0, color="k", lw=1.0)
    for level in (0.5, 2.0):
        ax.axhline(level, color="0.6", lw=0.8, ls=":")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(_sparse))
    ax.yaxis.set_minor_formatter(FuncFormatter(_sparse))
    ax.tick_params(axis="y", which="both", labelsize=7)
    ax.set_xticks(np.arange(n))
    ax.set_xticklabels(holdout["axes"], fontsize=7, rotation=20)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylabel("observed / (C₋ₛ ν/p_min)", fontsize=8)
    ax.set_title("held-out residual: C fitted without the sweep s,\nchecked on the sweep's own cells", fontsize=9)
    ax.grid(True, which="both", axis="y", alpha=0.25)
    ax.legend(fontsize=6.5, loc="upper left", framealpha=0.9)


def plot_nu_sweeps(panels, forest, holdout, *, title=None, footnote=None):
    """One-dimensional sweeps of the terms of Su-Xu-Yang's :math:`\\nu`, their exponents and a
    held-out check of the bound's level.

    Parameters
    ----------
    panels : list of dict
        One per sweep (at most 5): ``title``, ``xlabel``, ``log_x`` (bool), ``x`` (the sweep's
        values), ``nu`` (:math:`\\nu` of each cell, shown on the top axis), ``series`` (list of
        ``(key, label, median, low, high)``; ``label=None`` takes the registry's label of
        ``key``), ``theory`` (``(values, label)``, a dashed black line, or ``None``), ``note``
        (text box of the fitted exponents), ``statement`` (one sentence under the panel) and
        ``contradicts`` (bool: the statement in red bold).
    forest : dict
        ``axes`` (the sweeps' labels, top to bottom) and ``rows``: dicts with ``axis`` (index),
        ``key``, ``label``, ``fitted``, ``low``, ``high``, ``predicted`` (black bar),
        ``ls_rate`` (grey dotted bar).
    holdout : dict
        ``axes`` (labels), ``points``: dicts with ``axis`` (index), ``key``, ``label``,
        ``residual`` (observed / held-out prediction), and ``text`` (shown under the legends).
    title, footnote : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    fig, axes = plt.subplots(2, 4, figsize=(21.0, 11.5))
    flat = axes.ravel()
    for ax, panel in zip(flat, panels):
        _sweep_panel(ax, panel)
    handles, labels = flat[0].get_legend_handles_labels()
    _forest_panel(flat[5], forest)
    _holdout_panel(flat[6], holdout)
    legend_ax = flat[7]
    legend_ax.axis("off")
    first = legend_ax.legend(handles, labels, loc="upper left", fontsize=8, frameon=False,
                             title="methods (median, quartile bars)", title_fontsize=8)
    legend_ax.add_artist(first)
    bars = [h for h, lab in zip(*flat[5].get_legend_handles_labels()) if lab.startswith("exponent")]
    legend_ax.legend(bars, [h.get_label() for h in bars], loc="upper left", bbox_to_anchor=(0.0, 0.72),
                     fontsize=7.5, frameon=False, title="exponent panel", title_fontsize=8)
    text = "\n".join(textwrap.fill(line, 75) for line in holdout["text"].splitlines())
    legend_ax.text(0.0, 0.45, text, transform=legend_ax.transAxes, fontsize=7.5, va="top", ha="left")
    for ax in flat[len(panels):5]:
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=12)
    if footnote:
        fig.text(0.01, 0.005, footnote, fontsize=7, va="bottom", ha="left", wrap=True)
    fig.tight_layout(rect=(0, 0.05 if footnote else 0.0, 1, 0.97), h_pad=3.0)
    return fig


def _labels(config):
    return {m: method_label(m, **({"s": config.fedavg_steps} if m == "fedavg" else {})) for m in METHOD_KEYS}


def _fmt(value):
    return f"{value:+.2f}" if np.isfinite(value) else "n/a"


def statement(axis, exponents):
    """One plain sentence on what a sweep shows, from its rows of ``exponents.csv``."""
    rows = {r["method"]: r for r in exponents if r["axis"] == axis}
    avg, ls = rows["fedavg"], rows["ls"]
    unit = "log-slope" if not _truthy(avg["log_x"]) else "exponent"
    fitted = f"{unit} {_fmt(avg['fitted'])} [{_fmt(avg['low'])}, {_fmt(avg['high'])}]"
    if avg["verdict"] == "consistent":
        shape = f"{fitted}, consistent with the {_fmt(avg['predicted'])} of ν/p_min"
    elif avg["verdict"] == "contradicts":
        flat = avg["low"] <= 0 <= avg["high"]
        shape = (f"CONTRADICTS the bound's shape{': no visible effect' if flat else ''}, {fitted} where ν/p_min "
                 f"predicts {_fmt(avg['predicted'])}")
    else:
        shape = "not tested (no interval)"
    if ls["verdict_ls"] == "consistent" and avg["verdict_ls"] == "consistent":
        floor = f"; FedAvg follows known-label LS ({_fmt(ls['fitted'])})"
    elif avg["verdict_ls"] == "contradicts":
        floor = f"; FedAvg departs from the LS rate {_fmt(avg['ls_rate'])}"
    else:
        floor = ""
    return f"FMD → FedAvg: {shape}{floor}."


def _truthy(value):
    return value is True or str(value).lower() == "true"


def _footnote(config):
    return (
        f"{config.preset}: k={config.k}, d={config.d}, Δ={config.separation:g}, σ={config.sigma:g}, Σ_l diagonal in "
        f"[{config.cov_low:g}, {config.cov_high:g}], reference M={config.M_ref} clients of {config.n_ref} points, "
        f"p_min={config.p_ref:g}, + {config.k} anchors of {config.anchor_points} points; sizes designed, not drawn "
        f"(N, M, χ², ν identical in every trial of a cell); {config.trials} trials per cell. "
        f"FMD {config.fmd_rounds} rounds; Phase 2 until no coordinate moves more than {config.fx_tol:g} "
        f"(at most {config.fx_rounds} rounds), "
        f"FedAvg({config.fedavg_steps}) η={config.fedavg_step:g}, FedProx η={config.fedprox_step:g}. ν with unit "
        "constants C₃ = C₄ = 1; exponents from medians, 95% stratified bootstrap; predicted = exponent of ν/p_min "
        "(log factor left out)."
    )


def draw(config, tables, outdir):
    """The figure, from the tables of :func:`summarise` only; returns the paths written."""
    rows, exponents, holdout = tables["axes"], tables["exponents"], tables["holdout"]
    labels = _labels(config)
    panels = []
    for axis, moves, held, xlabel, log_x in AXES:
        sel = [r for r in rows if r["axis"] == axis]
        series = [(m, labels[m], [r[f"{m}_median"] for r in sel], [r[f"{m}_q25"] for r in sel],
                   [r[f"{m}_q75"] for r in sel]) for m in METHOD_KEYS]
        C = next(h["C_without_axis"] for h in holdout if h["axis"] == axis and h["method"] == "fedavg")
        fits = {r["method"]: r for r in exponents if r["axis"] == axis}
        note = "\n".join(
            f"{labels[m].replace('FMD → ', '')}: {_fmt(fits[m]['fitted'])} [{_fmt(fits[m]['low'])}, "
            f"{_fmt(fits[m]['high'])}]" for m in METHOD_KEYS)
        note += (f"\nν/p_min predicts {_fmt(fits['fedavg']['predicted'])} (with log(1/ν): "
                 f"{_fmt(fits['fedavg']['predicted_log'])}); LS rate {_fmt(fits['fedavg']['ls_rate'])}")
        panels.append(dict(
            title=f"{moves}\n({held})", xlabel=xlabel.format(n_tiny=config.n_tiny), log_x=bool(_truthy(log_x)),
            x=[r["x"] for r in sel], nu=[r["nu"] for r in sel], series=series,
            theory=([r["fedavg_theory"] for r in sel],
                    f"C·ν/p_min, C = {C:.3g} fitted on the other sweeps' cells (FedAvg)"),
            note=note, statement=statement(axis, exponents),
            contradicts=next(r["verdict"] for r in exponents if r["axis"] == axis and r["method"] == "fedavg")
            == "contradicts"))
    forest = dict(axes=[a[1].replace(" through ", "\nthrough ") for a in AXES],
                  rows=[dict(axis=AXIS_NAMES.index(r["axis"]), key=r["method"], label=labels[r["method"]],
                             fitted=r["fitted"], low=r["low"], high=r["high"], predicted=r["predicted"],
                             ls_rate=r["ls_rate"]) for r in exponents])
    ratio = {h["method"]: (h["ratio_min_all"], h["ratio_max_all"], h["C_all_cells"]) for h in holdout}
    held = dict(axes=[a[1] for a in AXES],
                points=[dict(axis=AXIS_NAMES.index(r["axis"]), key=m, label=labels[m], residual=r[f"{m}_residual"])
                        for r in rows for m in ("fedavg", "fedprox")],
                text="\n".join(f"{labels[m].replace('FMD → ', '')}: final/(ν/p_min) ranges {lo:.3g} to {hi:.3g} "
                               f"over the cells ({hi / lo:.1f}x)" for m, (lo, hi, _) in ratio.items()))
    title = ("Su-Xu-Yang's ν one term at a time: fitted exponents of the final error against those of the "
             "bound ν/p_min (unit constants)")
    fig = plot_nu_sweeps(panels, forest, held, title=title, footnote=_footnote(config))
    return save_figure(fig, pathlib.Path(outdir) / NAME)
