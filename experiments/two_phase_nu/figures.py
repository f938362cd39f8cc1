"""The nu-terms study's figures: the sweeps, the exponents against the bound's, the held-out
residuals (``two_phase_nu``); the constants ``(C3, C4)`` consistent with the sweeps
(``two_phase_nu_constants``).

:func:`draw` makes them from the tables of :func:`.summary.summarise` alone (``--redraw``);
:func:`plot_nu_sweeps` and :func:`plot_nu_constants` draw them from the panels :func:`draw`
prepares.
"""

from __future__ import annotations

import pathlib

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullLocator

from mixreg.methods import method_label
from mixreg.plotting import median_errorbars, method_style, plain_tick, save_figure, series_label

from ..ifca_mechanism.figures import finish, result
from ..ifca_mechanism.figures import panels as panels_for
from .summary import AXES, AXIS_NAMES, C3_GRID, C4_GRID, JOINT_LEVEL, METHOD_KEYS, NAME, NU_SWEEPS, VARIANTS

__all__ = ["draw", "statement", "level_statement", "region_statement", "results_markdown", "plot_nu_sweeps",
           "plot_nu_constants"]


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


def _thinned(x, labels, log_x, gap=0.16):
    """``labels`` with those closer than ``gap`` of the axis span to the last one kept left blank
    (the first and the last always kept), so that crowded tick labels do not overlap."""
    u = np.log(np.asarray(x, dtype=float)) if log_x else np.asarray(x, dtype=float)
    span = float(u.max() - u.min()) or 1.0
    keep, last = [], None
    for j, v in enumerate(u):
        ok = last is None or (v - last) >= gap * span
        if j == len(u) - 1 and not ok and keep:  # the last value replaces the previous one kept
            keep[-1] = False
            ok = True
        keep.append(ok)
        last = v if ok else last
    return [label if k else "" for label, k in zip(labels, keep)]


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
    ax.set_xticklabels(_thinned(x, [_tick(v) for v in x], panel["log_x"]), fontsize="small",
                       rotation=30 if x.size > 4 else 0)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(_sparse))
    ax.yaxis.set_minor_formatter(FuncFormatter(_sparse))
    ax.tick_params(axis="y", which="both", labelsize="small")
    top = ax.secondary_xaxis("top")
    top.set_xticks(x)
    top.set_xticklabels(_thinned(x, [f"{v:.2g}" for v in panel["nu"]], panel["log_x"]), fontsize="x-small",
                        rotation=30 if x.size > 4 else 0)
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
    # tall panels: each carries a top axis of nu, rotated ticks and a title over its own plot
    fig, axes, own = panels_for(ax, len(panels) + 2, aspect=1.55)
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


def level_statement(holdout, labels=None):
    """The bound's level against the data, from ``holdout.csv``: the range of the median final
    error over ``nu / p_min`` (unit constants) per method, and how far above the medians the bound
    lies (a statement about the cells' medians: the tables hold no per-trial maximum).

    Examples
    --------
    >>> rows = [dict(method="fedavg", ratio_min_all=0.05, ratio_max_all=0.25),
    ...         dict(method="fedprox", ratio_min_all=0.08, ratio_max_all=0.32)]
    >>> level_statement(rows).split(': ')[-1]
    'ν/p_min lies 3.1 to 20 times above the medians.'
    """
    labels = labels or {}
    ratio = {}
    for h in holdout:
        ratio.setdefault(h["method"], (float(h["ratio_min_all"]), float(h["ratio_max_all"])))
    parts = [f"{lo:.2g} to {hi:.2g} times{' ν/p_min' if j == 0 else ''} for "
             f"{labels.get(m, m).replace('FMD → ', '')}" for j, (m, (lo, hi)) in enumerate(ratio.items())]
    low = min(lo for lo, _ in ratio.values())
    high = max(hi for _, hi in ratio.values())
    return (f"With unit constants the median final error is {' and '.join(parts)} over the cells: ν/p_min lies "
            f"{1 / high:.2g} to {1 / low:.2g} times above the medians.")


def _c(value):
    """A constant of the grid to two digits (100, not 1e+02)."""
    return f"{value:.2g}" if value < 10 else f"{value:.0f}"


def _range(lo, hi):
    return f"= {_c(lo)}" if np.isclose(lo, hi) else f"in [{_c(lo)}, {_c(hi)}]"


def region_statement(region, method, variant, label=None):
    """One sentence per method and variant from ``region.csv``: the constants consistent with the
    four ν sweeps at once, what the constant-free p_min sweep says, and the verdict on all five."""
    rows = {r["test"]: r for r in region if r["method"] == method and r["variant"] == variant}
    nu, every, pmin = rows["nu sweeps"], rows["all sweeps"], rows["p_min"]
    head = f"{label or method}, {VARIANTS[variant]}"
    if int(nu["of"]) == 0:
        return f"{head}: not tested (ν ≥ 1 at some cell for every pair of the grid)."
    if int(nu["pairs"]):
        four = (f"the four ν sweeps at once fit C₃ {_range(nu['C3_min'], nu['C3_max'])}, C₄ "
                f"{_range(nu['C4_min'], nu['C4_max'])} ({nu['pairs']} of {nu['of']} grid pairs)")
    else:
        four = f"no pair of the grid fits the four ν sweeps at once (of {nu['of']})"
    free = "needs no constant: " if _truthy(pmin["constant_free"]) else ""
    inside = int(pmin["pairs"]) > 0
    p_text = (f"the p_min sweep's prediction {float(pmin['predicted_min']):+.2f} {free}"
              f"{'inside' if inside else 'outside'} [{float(pmin['low']):+.2f}, {float(pmin['high']):+.2f}]")
    if every["verdict"] == "no constants fit":
        verdict = "no constants fit all five sweeps"
    else:
        verdict = (f"all five fit C₃ {_range(every['C3_min'], every['C3_max'])}, C₄ "
                   f"{_range(every['C4_min'], every['C4_max'])} ({every['pairs']} pairs)")
    return f"{head}: {four}; {p_text}; {verdict}."


#: The colour of each ν sweep's region on the constants figure.
_SWEEP_COLOURS = {"tiny": "#1b9e77", "chi2": "#d95f02", "M_fixed_n": "#7570b3", "M_fixed_N": "#e7298a",
                  "p_min": "#666666"}


def _constants_panel(ax, panel):
    C3, C4 = np.asarray(panel["C3"], dtype=float), np.asarray(panel["C4"], dtype=float)
    drawn = {}
    defined = np.asarray(panel["defined"], dtype=bool)
    if not defined.all():
        ax.pcolormesh(C3, C4, np.where(defined, np.nan, 1.0).T, shading="nearest", cmap="Greys", vmin=0, vmax=6.5,
                      rasterized=True)
        drawn["undefined"] = True
    joint = np.asarray(panel["joint"], dtype=bool)
    if joint.any():
        ax.pcolormesh(C3, C4, np.where(joint, 1.0, np.nan).T, shading="nearest", cmap="Greys", vmin=0, vmax=1,
                      rasterized=True)
        drawn["joint"] = True
    for sweep, mask in panel["masks"].items():
        mask = np.asarray(mask, dtype=bool)
        if mask.any():
            ax.pcolormesh(C3, C4, np.where(mask, 1.0, np.nan).T, shading="nearest", alpha=0.13, rasterized=True,
                          cmap=ListedColormap([_SWEEP_COLOURS[sweep]]))
            if not mask.all():
                ax.contour(C3, C4, mask.T.astype(float), levels=[0.5], colors=_SWEEP_COLOURS[sweep], linewidths=1.2)
            drawn[sweep] = True
    ax.plot([1.0], [1.0], marker="*", color="#b2182b", ms=9, ls="none", mec="white", mew=0.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(C3[0] / 1.15, C3[-1] * 1.5)  # room for the last decade's label
    ax.set_ylim(C4[0] / 1.15, C4[-1] * 1.15)
    ax.set_xlabel("C₃\n" + panel["verdict"], fontsize="x-small", linespacing=1.3)
    ax.set_ylabel("C₄")
    ax.set_title(panel["title"], fontsize="medium")
    return drawn


def plot_nu_constants(panels, *, ax=None, title=None, footnote=None):
    """Which constants ``(C3, C4)`` of Su-Xu-Yang's :math:`\\nu` make the bound's exponents agree
    with the fitted exponents of the sweeps, one panel per method and shape of the bound.

    Parameters
    ----------
    panels : list of dict
        One per panel: ``title``; ``C3`` (A,) and ``C4`` (B,) (the grid); ``masks`` (``{sweep:
        bool array (A, B)}``: the pairs whose predicted exponent lies in the sweep's interval,
        each drawn as its boundary); ``joint`` (bool (A, B): the pairs consistent with the ν
        sweeps at once, filled black); ``defined`` (bool (A, B): the pairs where the shape is
        defined at every cell; the others grey); ``verdict`` (a short text drawn in the panel);
        ``statement`` (for the caption, not drawn).
    ax : sequence of len(panels) Axes, optional
        Default: a new figure.
    title, footnote : str, optional
        Drawn on a new figure only.

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend``, ``handles`` (only of what is drawn on some panel).
    """
    fig, axes, own = panels_for(ax, len(panels), aspect=0.85, max_cols=2)
    drawn = {}
    for a, panel in zip(axes, panels):
        drawn.update(_constants_panel(a, panel))
    handles = [Patch(fc=_SWEEP_COLOURS[s], ec=_SWEEP_COLOURS[s], alpha=0.45, label=name)
               for s, name in _SHORT_SWEEPS.items() if s in drawn]
    if "joint" in drawn:
        handles.append(Patch(color="black", label="all four ν sweeps"))
    if "undefined" in drawn:
        handles.append(Patch(color="0.85", label="ν ≥ 1 at a cell"))
    handles.append(Line2D([], [], marker="*", color="#b2182b", ls="none", ms=9, label="C₃ = C₄ = 1"))
    legend = finish(fig, axes, handles, own=own, title=title, footnote=footnote)
    return result(fig, axes, legend, handles=handles)


_SHORT_SWEEPS = {"tiny": "tiny sweep", "chi2": "χ² sweep", "M_fixed_n": "M, fixed n_i", "M_fixed_N": "M, fixed N"}


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
        shape = (f"CONTRADICTS the exponent of ν/p_min at unit constants{': no visible effect' if flat else ''}, "
                 f"{fitted} where it predicts {_fmt(avg['predicted'])}")
    else:
        shape = "not tested (no interval)"
    if ls["verdict_ls"] == "consistent" and avg["verdict_ls"] == "consistent":
        floor = f"; its interval holds the known-label LS rate {_fmt(avg['ls_rate'])}"
    elif avg["verdict_ls"] == "contradicts":
        floor = f"; FedAvg departs from the LS rate {_fmt(avg['ls_rate'])}"
    else:
        floor = ""
    return f"FMD → FedAvg: {shape}{floor}."


def _truthy(value):
    return value is True or str(value).lower() == "true"


def _footnote(config, *, unit=True):
    return (
        f"{config.preset}: k={config.k}, d={config.d}, Δ={config.separation:g}, σ={config.sigma:g}, Σ_l diagonal in "
        f"[{config.cov_low:g}, {config.cov_high:g}], reference M={config.M_ref} clients of {config.n_ref} points, "
        f"p_min={config.p_ref:g}, + {config.k} anchors of {config.anchor_points} points; sizes designed, not drawn "
        f"(N, M, χ², ν identical in every trial of a cell); {config.trials} trials per cell. "
        f"FMD {config.fmd_rounds} rounds; Phase 2 until no coordinate moves more than {config.fx_tol:g} "
        f"(at most {config.fx_rounds} rounds), "
        f"FedAvg({config.fedavg_steps}) η={config.fedavg_step:g}, FedProx η={config.fedprox_step:g}."
        + (" ν with unit constants C₃ = C₄ = 1; exponents from medians, 95% stratified bootstrap; predicted = "
           "exponent of ν/p_min (log factor left out)." if unit else "")
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
                text="\n".join(f"{labels[m].replace('FMD → ', '')}: median final error / (ν/p_min) ranges {lo:.3g} "
                               f"to {hi:.3g} over the cells ({hi / lo:.1f}x)" for m, (lo, hi, _) in ratio.items()))
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
        "cells (FedAvg, dashed); a red title: FedAvg's interval excludes the exponent of ν/p_min with unit constants "
        "(other constants: two_phase_nu_constants). Exponent panel: fitted "
        "exponents (95% bootstrap) against the exponent of ν/p_min (black bar) and of the known-label LS scale "
        "σ√(d/(N_min−d−1)) (grey dotted); tiny sweep: log-slope per unit fraction. Held-out panel: observed / "
        "(C₋ₛ ν/p_min) (observed / predicted), C fitted without the sweep s and checked on the sweep's own cells "
        "(dotted: x2 and /2). "
        + sweeps + " " + held["text"].replace("\n", "; ") + ". " + level_statement(holdout, labels) + " "
        + _footnote(config))
    paths = save_figure(drawn["figure"], pathlib.Path(outdir) / NAME, caption=caption)
    return paths + _draw_constants(config, tables, outdir, labels)


def _flag(value):
    """A boolean cell of a table, as written (``True``) or read back (``"True"``, ``1``)."""
    return _truthy(value) or value == 1


def _members(value):
    """The sweeps of a ``<method>_consistent`` cell (``"tiny+chi2"``; empty when none)."""
    return set(value.split("+")) if isinstance(value, str) and value else set()


def _short_verdict(region, method, variant):
    rows = {r["test"]: r for r in region if r["method"] == method and r["variant"] == variant}
    nu, every, pmin = rows["nu sweeps"], rows["all sweeps"], rows["p_min"]
    lines = [f"ν sweeps: C₃ {_range(nu['C3_min'], nu['C3_max'])}, C₄ {_range(nu['C4_min'], nu['C4_max'])}"
             if int(nu["pairs"]) else "ν sweeps: no pair"]
    lines.append(f"p_min ({float(pmin['predicted_min']):+.2g}, no constant): "
                 f"{'in' if int(pmin['pairs']) else 'outside'} [{float(pmin['low']):+.2f}, {float(pmin['high']):+.2f}]")
    lines.append("all five: " + ("no constants fit" if every["verdict"] == "no constants fit" else
                                 f"C₃ {_range(every['C3_min'], every['C3_max'])}, "
                                 f"C₄ {_range(every['C4_min'], every['C4_max'])}"))
    return "\n".join(lines)


def _draw_constants(config, tables, outdir, labels):
    """The constants figure, from ``constants.csv`` and ``region.csv``."""
    constants, region = tables["constants"], tables["region"]
    panels = []
    for m in ("fedavg", "fedprox"):
        for variant in VARIANTS:
            rows = [r for r in constants if r["variant"] == variant]
            C3 = np.unique([float(r["C3"]) for r in rows])
            C4 = np.unique([float(r["C4"]) for r in rows])
            masks = {s: np.zeros((C3.size, C4.size), dtype=bool) for s in AXIS_NAMES}
            defined = np.zeros((C3.size, C4.size), dtype=bool)
            for r in rows:
                i, j = np.searchsorted(C3, float(r["C3"])), np.searchsorted(C4, float(r["C4"]))
                defined[i, j] = _flag(r["defined"])
                for sweep in _members(r[f"{m}_consistent"]):
                    masks[sweep][i, j] = True
            joint = np.logical_and.reduce([masks[s] for s in NU_SWEEPS])
            panels.append(dict(title=f"{labels[m].replace('FMD → ', '')}: {VARIANTS[variant]}", C3=C3, C4=C4,
                               masks={s: masks[s] for s in NU_SWEEPS}, joint=joint, defined=defined,
                               verdict=_short_verdict(region, m, variant),
                               statement=region_statement(region, m, variant, labels[m])))
    title = "Which constants (C₃, C₄) of ν make the bound's exponents fit the sweeps?"
    drawn = plot_nu_constants(panels, title=title, footnote=f"{config.preset} preset, {config.trials} trials per cell; "
                                                          f"intervals at {JOINT_LEVEL:.0%} per sweep")
    level = {r["method"]: r for r in region if r["test"] == "one level" and r["variant"] == "nu"}
    one_level = "; ".join(
        f"{labels[m].replace('FMD → ', '')}: "
        + (f"one level constant fits every cell for {r['pairs']} of {r['of']} pairs" if int(r["pairs"])
           else "no pair of the grid admits one level constant for every cell")
        for m, r in level.items())
    caption = (
        f"{title} For every pair of a grid of C₃ in [{C3[0]:g}, {C3[-1]:g}] and C₄ in [{C4[0]:g}, {C4[-1]:g}] "
        f"(log-spaced, {C3.size} x {C4.size}), ν of every cell is recomputed from its client sizes and the exponent "
        "of the bound's shape along each sweep is set against the sweep's fitted exponent of the median final "
        f"error, with a {JOINT_LEVEL:.0%} stratified bootstrap interval per sweep (Bonferroni over the five sweeps: "
        "the true constants, if the bound's shape were right, pass all five at once with probability at least 95%). "
        "Left column: ν/p_min (the study's exponents); right: the theorem's ν log(1/ν)/p_min, defined where every "
        "cell has ν < 1 (grey elsewhere). Coloured lines: the edge of the pairs consistent with each ν sweep; black: "
        "the pairs consistent with the four at once; star: the unit constants of the study's verdicts. The p_min "
        "sweep holds ν fixed, so its prediction (−1) is the same at every pair: it needs no constant and is not "
        "drawn. A level constant (C₂ of the theorem, or C of C·ν/p_min) moves no exponent. "
        + " ".join(p["statement"] for p in panels)
        + f" Level (ν/p_min): is there one constant C with C·ν/p_min inside every cell's median interval "
        f"(order statistics, exact, Bonferroni over the cells)? {one_level}. " + _footnote(config, unit=False))
    return save_figure(drawn["figure"], pathlib.Path(outdir) / f"{NAME}_constants", caption=caption)


def _interval(row):
    return f"{_fmt(float(row['fitted']))} [{_fmt(float(row['low']))}, {_fmt(float(row['high']))}]"


def results_markdown(config, tables):
    """The results section of the study's page (``docs/studies/two_phase_nu.md``), from the tables
    alone: every number of it is read off ``exponents``, ``axes``, ``holdout`` and ``region``,
    so the page says what the committed run shows (a test compares the page with this text)."""
    labels = _labels(config)
    exponents, rows, holdout, region = tables["exponents"], tables["axes"], tables["holdout"], tables["region"]
    by = {(r["axis"], r["method"]): r for r in exponents}
    lines = [f"| sweep | ν/p_min predicts (C₃ = C₄ = 1) | {labels['fedavg']} [95%] | {labels['fedprox']} [95%] | "
             "known-label LS [95%] (its rate) | verdict (FedAvg, FedProx) |", "|---|---|---|---|---|---|"]
    for axis, moves, *_ in AXES:
        avg, prox, ls = by[axis, "fedavg"], by[axis, "fedprox"], by[axis, "ls"]
        lines.append(f"| {_SHORT[axis][0]} | {_fmt(float(avg['predicted']))} | {_interval(avg)} | {_interval(prox)} | "
                     f"{_interval(ls)} ({_fmt(float(avg['ls_rate']))}) | {avg['verdict']}, {prox['verdict']} |")
    lines.append("")
    share = []
    for axis, *_ in AXES:
        values = [100 * float(r["fedavg_misclustered_median"]) for r in rows if r["axis"] == axis]
        share.append(f"{_SHORT[axis][0]} {values[0]:.2g}% → {values[-1]:.2g}%")
    lines.append("Misclustered share of the data (FedAvg, median over the trials), first to last cell of each sweep: "
                 + "; ".join(share) + ".")
    lines.append("")
    residual = {}
    for h in holdout:
        lo, hi = residual.get(h["method"], (np.inf, -np.inf))
        residual[h["method"]] = (min(lo, float(h["residual_min"])), max(hi, float(h["residual_max"])))
    lines.append(level_statement(holdout, labels) + " With C fitted on the other sweeps, the held-out residuals "
                 "(median / (C₋ₛ ν/p_min)) range " + " and ".join(
                     f"{lo:.2g} to {hi:.2g} ({labels[m].replace('FMD → ', '')})" for m, (lo, hi) in residual.items())
                 + ".")
    lines.append("")
    lines.append(f"Constants (grid C₃ in [{float(C3_GRID[0]):g}, {float(C3_GRID[-1]):g}], C₄ in "
                 f"[{float(C4_GRID[0]):g}, {float(C4_GRID[-1]):g}], intervals at {JOINT_LEVEL:.0%} per sweep): the "
                 "grid pairs whose predicted exponent lies in each sweep's interval (`region.csv`), and their extent.")
    lines.append("")
    columns = [(m, v) for m in ("fedavg", "fedprox") for v in VARIANTS]
    lines.append("| test | " + " | ".join(f"{labels[m].replace('FMD → ', '')}, {VARIANTS[v]}" for m, v in columns)
                 + " |")
    lines.append("|---" * (len(columns) + 1) + "|")
    cells = {(r["method"], r["variant"], r["test"]): r for r in region}
    for test in (*AXIS_NAMES, "nu sweeps", "all sweeps", "one level"):
        entries = []
        for m, v in columns:
            r = cells[m, v, test]
            text = f"{r['pairs']} of {r['of']}"
            if int(r["pairs"]) and r["verdict"] != "every pair fits":
                text += f" (C₃ {_range(r['C3_min'], r['C3_max'])}, C₄ {_range(r['C4_min'], r['C4_max'])})"
            entries.append(text)
        name = _SHORT[test][0] if test in _SHORT else {"nu sweeps": "the four ν sweeps", "all sweeps": "all five",
                                                         "one level": "one level constant (every cell)"}[test]
        lines.append(f"| {name} | " + " | ".join(entries) + " |")
    lines.append("")
    for m in ("fedavg", "fedprox"):
        for variant in VARIANTS:
            lines.append(f"- {region_statement(region, m, variant, labels[m])}")
    for m in ("fedavg", "fedprox"):
        r = next(r for r in region if r["method"] == m and r["variant"] == "nu" and r["test"] == "one level")
        lines.append(f"- {labels[m]}, one level constant C with C·ν/p_min inside every cell's median interval "
                     f"(exact, {float(r['level']):.2%} per cell): "
                     + (f"{r['pairs']} of {r['of']} pairs" if int(r["pairs"]) else "no pair of the grid") + ".")
    return "\n".join(lines) + "\n"
