"""The nu-terms study's figure: the sweeps, the exponents against the bound's, the held-out residuals.

:func:`draw` makes it from the tables of :func:`.summary.summarise` alone (``--redraw``);
:func:`plot_nu_sweeps` draws it from the panels :func:`draw` prepares.
"""

from __future__ import annotations

import pathlib

import numpy as np
from matplotlib.ticker import FuncFormatter, NullLocator

from mixreg.methods import method_label
from mixreg.plotting import median_errorbars, method_style, plain_tick, save_figure, series_label

from ..ifca_mechanism.figures import finish, result
from ..ifca_mechanism.figures import panels as panels_for
from .summary import AXES, AXIS_NAMES, METHOD_KEYS, NAME

__all__ = ["draw", "statement", "plot_nu_sweeps"]


# The sweeps' short names on the figure (panel title, x label); the caption has the long ones
_SHORT = {"tiny": ("ν₁: tiny share", "share of tiny clients"), "chi2": ("ν₂: χ²(w)", "1 + χ²(w)"),
          "M_fixed_n": ("ν₂: M, fixed n_i", "clients M"), "M_fixed_N": ("ν₂: M, fixed N", "clients M"),
          "p_min": ("1/p_min", "realised p_min")}


def _sparse(value, _pos=None):
    """Log-axis label at 1, 2, 3 and 5 times a power of ten only (the others stay unlabelled)."""
    if value <= 0:
        return ""
    lead = value / 10 ** np.floor(np.log10(value))
    return plain_tick(value) if abs(lead - round(lead)) < 0.01 and int(round(lead)) in (1, 2, 3, 5) else ""


def _tick(value):
    """A sweep value as a tick label: integers in full (16000), others to 3 digits (0.0304)."""
    return str(int(value)) if float(value).is_integer() else f"{value:.3g}"


def _sweep_panel(ax, panel):
    x = np.asarray(panel["x"], dtype=float)
    median_errorbars(ax, x, panel["series"])
    theory = None
    if panel.get("theory") is not None:
        values, label = panel["theory"]
        values = np.asarray(values, dtype=float)
        ok = np.isfinite(values) & (values > 0)
        theory, = ax.plot(x[ok], values[ok], "k--", lw=1.0, label=label)
    if panel["log_x"]:
        ax.set_xscale("log")
        ax.minorticks_off()
    ax.set_xticks(x)
    ax.set_xticklabels([_tick(v) for v in x], fontsize="small", rotation=30 if x.size > 4 else 0)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(_sparse))
    ax.yaxis.set_minor_formatter(FuncFormatter(_sparse))
    ax.tick_params(axis="y", which="both", labelsize="small")
    top = ax.secondary_xaxis("top")
    top.set_xticks(x)
    top.set_xticklabels([f"{v:.2g}" for v in panel["nu"]], fontsize="x-small", rotation=30 if x.size > 4 else 0)
    top.xaxis.set_minor_locator(NullLocator())
    top.tick_params(length=2, pad=1)
    top.set_xlabel("ν", fontsize="small", labelpad=1)
    ax.set_xlabel(panel["xlabel"])
    ax.set_title(panel["title"], color="#b2182b" if panel.get("contradicts") else "black")
    ax.grid(True, which="both", alpha=0.25)
    return theory


def _forest_panel(ax, forest):
    n = len(forest["axes"])
    keys = list(dict.fromkeys(r["key"] for r in forest["rows"]))
    offsets = {key: 0.22 * (j - (len(keys) - 1) / 2) for j, key in enumerate(keys)}
    bars = []
    for r in forest["rows"]:
        y = r["axis"] + offsets[r["key"]]
        style = method_style(r["key"], among=keys)
        if np.isfinite(r["fitted"]):
            err = [[r["fitted"] - r["low"]], [r["high"] - r["fitted"]]] if np.isfinite(r["low"]) else None
            ax.errorbar([r["fitted"]], [y], xerr=err, fmt=style.marker or "o", color=style.color, capsize=1.5,
                        lw=0.9)
    predicted = {r["axis"]: r for r in forest["rows"]}
    for a, r in predicted.items():
        line, = ax.plot([r["predicted"]] * 2, [a - 0.4, a + 0.4], "k-", lw=1.8,
                        label="exponent of ν/p_min (unit constants)")
        dotted, = ax.plot([r["ls_rate"]] * 2, [a - 0.4, a + 0.4], ":", color="0.45", lw=1.6,
                          label="exponent of the known-label LS scale")
        bars = [line, dotted]
    ax.axvline(0.0, color="0.7", lw=0.7)
    ax.set_yticks(np.arange(n))
    ax.set_yticklabels(forest["axes"], fontsize="small")
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlabel("exponent")
    ax.set_title("fitted vs predicted")
    ax.grid(True, axis="x", alpha=0.25)
    return bars


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
        ax.scatter(xs[ok], ys[ok], s=10, color=style.color, marker=style.marker or "o", alpha=0.8,
                   label=series_label(key, pts[0].get("label")))
    ax.axhline(1.0, color="k", lw=0.8)
    for level in (0.5, 2.0):
        ax.axhline(level, color="0.6", lw=0.7, ls=":")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(_sparse))
    ax.yaxis.set_minor_formatter(FuncFormatter(_sparse))
    ax.tick_params(axis="y", which="both", labelsize="small")
    ax.set_xticks(np.arange(n))
    ax.set_xticklabels(holdout["axes"], fontsize="x-small", rotation=40, ha="right", rotation_mode="anchor")
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylabel("observed / predicted")
    ax.set_title("held-out residual")
    ax.grid(True, which="both", axis="y", alpha=0.25)


def plot_nu_sweeps(panels, forest, holdout, *, ax=None, title=None, footnote=None):
    """One-dimensional sweeps of the terms of Su-Xu-Yang's :math:`\\nu`, their exponents and a
    held-out check of the bound's level.

    Parameters
    ----------
    panels : list of dict
        One per sweep: ``title``, ``xlabel``, ``log_x`` (bool), ``x`` (the sweep's
        values), ``nu`` (:math:`\\nu` of each cell, shown on the top axis), ``series`` (list of
        ``(key, label, median, low, high)``; ``label=None`` takes the registry's label of
        ``key``), ``theory`` (``(values, label)``, a dashed black line, or ``None``),
        ``contradicts`` (bool: the panel's title in red); ``note`` and ``statement`` (texts
        for the caption) are not drawn.
    forest : dict
        ``axes`` (the sweeps' labels, top to bottom) and ``rows``: dicts with ``axis`` (index),
        ``key``, ``label``, ``fitted``, ``low``, ``high``, ``predicted`` (black bar),
        ``ls_rate`` (grey dotted bar).
    holdout : dict
        ``axes`` (labels), ``points``: dicts with ``axis`` (index), ``key``, ``label``,
        ``residual`` (observed / held-out prediction); ``text`` is for the caption.
    ax : sequence of len(panels) + 2 Axes, optional
        The sweeps, then the exponents and the held-out residuals; default: a new figure.
    title, footnote : str, optional
        Drawn on a new figure only.

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend``, ``handles``.
    """
    fig, axes, own = panels_for(ax, len(panels) + 2, aspect=0.9)
    theory = None
    for a, panel in zip(axes, panels):
        theory = _sweep_panel(a, panel) or theory
    axes[0].set_ylabel("final d(θ̂, θ*)")
    handles = [h for h in axes[0].get_legend_handles_labels()[0]
               if theory is None or h.get_label() != theory.get_label()]
    if theory is not None:
        handles.append(theory)
    handles += _forest_panel(axes[-2], forest)
    _holdout_panel(axes[-1], holdout)
    legend = finish(fig, axes, handles, own=own, title=title, footnote=footnote, legend_ax=axes[-2], loc="lower right")
    return result(fig, axes, legend, handles=handles)


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
            title=_SHORT.get(axis, (moves,))[0], fixed=held, long_title=moves,
            xlabel=_SHORT[axis][1] if axis in _SHORT else xlabel.format(n_tiny=config.n_tiny),
            long_xlabel=xlabel.format(n_tiny=config.n_tiny), log_x=bool(_truthy(log_x)),
            x=[r["x"] for r in sel], nu=[r["nu"] for r in sel], series=series,
            theory=([r["fedavg_theory"] for r in sel], "C·ν/p_min, C fitted on the other sweeps (FedAvg)"),
            C=C,
            note=note, statement=statement(axis, exponents),
            contradicts=next(r["verdict"] for r in exponents if r["axis"] == axis and r["method"] == "fedavg")
            == "contradicts"))
    forest = dict(axes=[_SHORT.get(a[0], (a[1],))[0] for a in AXES],
                  rows=[dict(axis=AXIS_NAMES.index(r["axis"]), key=r["method"], label=labels[r["method"]],
                             fitted=r["fitted"], low=r["low"], high=r["high"], predicted=r["predicted"],
                             ls_rate=r["ls_rate"]) for r in exponents])
    ratio = {h["method"]: (h["ratio_min_all"], h["ratio_max_all"], h["C_all_cells"]) for h in holdout}
    held = dict(axes=[_SHORT.get(a[0], (a[1],))[0] for a in AXES],
                points=[dict(axis=AXIS_NAMES.index(r["axis"]), key=m, label=labels[m], residual=r[f"{m}_residual"])
                        for r in rows for m in ("fedavg", "fedprox")],
                text="\n".join(f"{labels[m].replace('FMD → ', '')}: final/(ν/p_min) ranges {lo:.3g} to {hi:.3g} "
                               f"over the cells ({hi / lo:.1f}x)" for m, (lo, hi, _) in ratio.items()))
    title = ("Su-Xu-Yang's ν one term at a time: fitted exponents of the final error against those of the "
             "bound ν/p_min (unit constants)")
    drawn = plot_nu_sweeps(panels, forest, held, title=title,
                           footnote=f"{config.preset} preset, {config.trials} trials per cell")
    sweeps = " ".join(f"{p['long_title']} ({p['fixed']}; x axis: {p['long_xlabel']}): {p['statement']} Fitted: "
                      f"{p['note'].replace(chr(10), '; ')}; C = {p['C']:.3g} fitted on the other sweeps' cells."
                      for p in panels)
    caption = (
        f"{title}. One panel per sweep: the final error (median, quartile bars) of each method against the swept "
        "value, ν of each cell on the top axis (unit constants), and C·ν/p_min with C fitted on the other sweeps' "
        "cells (FedAvg, dashed); a red title: the sweep contradicts the bound's shape. Exponent panel: fitted "
        "exponents (95% bootstrap) against the exponent of ν/p_min (black bar) and of the known-label LS scale "
        "σ√(d/(N_min−d−1)) (grey dotted); tiny sweep: log-slope per unit fraction. Held-out panel: observed / "
        "(C₋ₛ ν/p_min) (observed / predicted), C fitted without the sweep s and checked on the sweep's own cells "
        "(dotted: x2 and /2). "
        + sweeps + " " + held["text"].replace("\n", "; ") + ". " + _footnote(config))
    return save_figure(drawn["figure"], pathlib.Path(outdir) / NAME, caption=caption)
