"""two_phase_phase1's figures: Phase 1's error against the anchors' size and the dimension, and the
clients it needs against d and p_min.

:func:`draw` makes them from the tables of :func:`.summary.summarise` alone (so ``--redraw``
repeats them exactly); :func:`plot_phase1_error` and :func:`plot_clients_needed` draw from the
series they are given.
"""

from __future__ import annotations

import pathlib

import matplotlib as mpl
import matplotlib.lines
import matplotlib.ticker
import numpy as np

from mixreg.plotting import plain_tick, save_figure
from mixreg.stats import SlopeFit

from ..ifca_mechanism.figures import finish, result, shared_legend
from ..ifca_mechanism.figures import panels as axes_for

from .summary import CENSORED_FACTOR, _num
from .trial import clients_for

__all__ = ["draw", "plot_phase1_error", "plot_clients_needed", "plot_phase1_rates"]

# The anchor versions are told apart by colour, the estimators by line style and marker.  (These
# two methods are not in the registry of :mod:`mixreg.methods`, whose keys name the
# algorithms of the two-phase experiment.)
_MODE_COLOURS = {"random": "#762a83", "per_cluster": "#2166ac"}
_METHOD_STYLES = {"fmd": ("-", "o"), "anchor": (":", "x"), "ls": ("--", "s")}
_D_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02")
_P_MARKERS = ("o", "s", "^", "D", "v", "P")
_TARGET_STYLES = (":", (0, (5, 2, 1, 2)), (0, (1, 3)), "-.")


def _arrays(*values):
    return (np.asarray([np.nan if v is None else float(v) for v in vals], dtype=float) for vals in values)


def _targets(ax, targets):
    """Horizontal accuracy lines, one line style each, named in the legend."""
    for j, (value, label) in enumerate(targets):
        if np.isfinite(value) and value > 0:
            ax.axhline(value, color="0.45", lw=0.8, ls=_TARGET_STYLES[j % len(_TARGET_STYLES)],
                       label=f"target {label}")


def _plain_log_axis(axis):
    """Plain tick labels (0.3, 2, 500) on a log axis, as many as its length holds, minor ticks unlabelled."""
    axis.axes.autoscale_view()
    low, high = sorted(axis.get_view_interval())
    decades = np.log10(high / low) if low > 0 and high > low else 1.0
    box = axis.axes.get_position()
    fig = axis.axes.figure
    length = box.width * fig.get_figwidth() if axis is axis.axes.xaxis else box.height * fig.get_figheight()
    size = mpl.font_manager.FontProperties(size=mpl.rcParams["xtick.labelsize"]).get_size_in_points() / 72.0
    per_label = 4.5 * 0.6 * size if axis is axis.axes.xaxis else 1.6 * size
    for subs in ((1.0, 2.0, 3.0, 5.0), (1.0, 2.0, 5.0), (1.0,)):
        if decades * len(subs) * per_label <= length:
            break
    axis.set_major_locator(matplotlib.ticker.LogLocator(base=10.0, subs=subs))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def plot_phase1_error(panels, *, targets=(), ax=None, title=None, footnote=None):
    """Phase 1's error beside the anchors' own least squares, one log-log panel per swept axis.

    Parameters
    ----------
    panels : list of dict
        ``series`` (list of dict: ``mode`` ("random" or "per_cluster": the colour), ``method``
        ("fmd", "anchor" or "ls": line style and marker), ``x``, ``median``, ``low``, ``high``, ``label``);
        ``reference`` (``(value, label)``: a horizontal dash-dot line, e.g. the error of the
        estimate 0); ``start`` (``(value, label)``: the distance of the start, dashed red;
        medians more than 3 times above the higher of the two are drawn as a triangle at the top
        edge with their value); ``diagonal`` (x of a vertical line, e.g. ``n_A = d``) and
        ``diagonal_label``; ``title``, ``xlabel``; ``note`` (for the caption, not drawn).
    targets : sequence of (value, label)
        Horizontal accuracy lines (grey, one style each).
    ax : sequence of len(panels) Axes, optional
        Where to draw; default: a new figure.
    title, footnote : str, optional
        Drawn on a new figure only.

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend`` (the figure's, every label once; on the caller's axes
        the first panel's), ``legends`` (one per panel on the caller's axes).
    """
    fig, flat, own = axes_for(ax, len(panels), aspect=0.9)
    ms = mpl.rcParams["lines.markersize"]
    for ax, panel in zip(flat, panels):
        for s in panel["series"]:
            x, med, lo, hi = _arrays(s["x"], s["median"], s["low"], s["high"])
            ls, marker = _METHOD_STYLES.get(s["method"], ("-", "o"))
            colour = _MODE_COLOURS.get(s["mode"], None)
            show = np.isfinite(med) & (med > 0)
            ax.errorbar(x[show], med[show], yerr=[np.clip(med - lo, 0, None)[show], np.clip(hi - med, 0, None)[show]],
                        ls=ls, marker=marker, color=colour, capsize=1.5,
                        mfc="white" if s["method"] == "ls" else colour, label=s["label"])
        value, label = panel.get("reference", (np.nan, ""))
        if value is not None and np.isfinite(value) and value > 0:
            ax.axhline(value, color="k", ls="-.", lw=0.9, label=label)
        start, start_label = panel.get("start", (np.nan, ""))
        if start is not None and np.isfinite(start) and start > 0:
            ax.axhline(start, color="#b2182b", ls=(0, (6, 3)), lw=0.9, label=start_label)
        _targets(ax, targets)
        finite = [float(v) for s in panel["series"] for v in s["median"] if v is not None and np.isfinite(v) and v > 0]
        tops = [v for v in (value, start) if v is not None and np.isfinite(v) and v > 0]
        if finite:
            top = 3.0 * max(tops + [min(finite)])
            bottom = min(min(finite), *(t[0] for t in targets if np.isfinite(t[0]) and t[0] > 0)) / 1.6
            ax.set_ylim(bottom, top)
            stacked = {}
            for s in panel["series"]:  # medians above the panel: a marker at the edge with the value
                x, med = _arrays(s["x"], s["median"])
                for xi, mi in zip(x, med):
                    if np.isfinite(mi) and mi > top:
                        row = stacked.setdefault(xi, 0)
                        stacked[xi] += 1
                        colour = _MODE_COLOURS.get(s["mode"])
                        ax.plot([xi], [top / 1.15], marker="^", ms=1.2 * ms, color=colour,
                                mfc="white" if s["method"] == "ls" else colour)
                        ax.annotate(f"{mi:.3g}", (xi, top / 1.15), textcoords="offset points",
                                    xytext=(5, -3 - 8 * row), fontsize="x-small", color=colour)
        if panel.get("diagonal") is not None:
            ax.axvline(panel["diagonal"], color="0.6", lw=0.8, ls="--")
            ax.text(panel["diagonal"], 0.02, " " + panel.get("diagonal_label", ""), transform=ax.get_xaxis_transform(),
                    fontsize="x-small", va="bottom", ha="left", color="0.35")
        ax.set_xscale("log")
        ax.set_yscale("log")
        xs = sorted({float(v) for s in panel["series"] for v in s["x"]})
        ax.set_xticks(xs)
        ax.set_xticklabels([plain_tick(v) for v in xs])
        ax.minorticks_off()
        _plain_log_axis(ax.yaxis)
        ax.set_xlabel(panel.get("xlabel", ""))
        ax.set_title(panel.get("title", ""))
        ax.grid(True, which="both", alpha=0.25)
    flat[0].set_ylabel("error d(θ̂, θ*)")
    legend, legends = shared_legend(fig, flat, own=own, title=title, footnote=footnote)
    return result(fig, flat, legend, legends=legends)


def plot_clients_needed(cells, crossings, *, main_target, targets=(), ax=None, title=None, footnote=None):
    """Phase 1's error and success against the number of clients, and the clients needed.

    Three panels: (1) the median error against ``M`` for each ``(d, p_min)`` cell, with the
    accuracy targets; (2) the success rate at ``main_target`` against
    :math:`M p_{\\min}^2 / d`, on which the cells' curves coincide if :math:`M^* \\propto d /
    p_{\\min}^2`; (3) the clients needed :math:`M^*` against :math:`d / p_{\\min}^2`, one marker
    series per target, with a line of slope 1 (the prediction) through each target's points.
    A cell whose crossing lies above its grid is drawn as an open marker with an upward arrow
    at its largest ``M``.

    Parameters
    ----------
    cells : list of dict
        ``d``, ``p_min``, ``M``, ``err`` / ``err_low`` / ``err_high`` (median and quartiles),
        ``rate`` / ``rate_low`` / ``rate_high`` (success at ``main_target``, Wilson interval).
    crossings : list of dict
        One per target: ``divisor`` (the ``q`` of ``Delta/q``), ``d``, ``p_min``, ``M``
        (interpolated crossing), ``status`` (``"found"``, ``"below_grid"``, ``"above_grid"``),
        ``M_grid_max``, ``label``.
    main_target : (value, label)
    targets : sequence of (value, label)
    ax : sequence of 3 Axes, optional
        Where to draw; default: a new figure.
    title, footnote : str, optional
        Drawn on a new figure only.

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend``, ``handles``.
    """
    fig, axes, own = axes_for(ax, 3, aspect=0.9)
    ms = mpl.rcParams["lines.markersize"]
    ds = sorted({c["d"] for c in cells})
    ps = sorted({float(c["p_min"]) for c in cells})
    colour = {d: _D_COLOURS[j % len(_D_COLOURS)] for j, d in enumerate(ds)}
    marker = {p: _P_MARKERS[j % len(_P_MARKERS)] for j, p in enumerate(ps)}

    ax = axes[0]
    for c in cells:
        M, med, lo, hi = _arrays(c["M"], c["err"], c["err_low"], c["err_high"])
        ax.errorbar(M, med, yerr=[np.clip(med - lo, 0, None), np.clip(hi - med, 0, None)], color=colour[c["d"]],
                    marker=marker[float(c["p_min"])], capsize=1.5)
    _targets(ax, targets)
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_axis(ax.xaxis)
    _plain_log_axis(ax.yaxis)
    ax.set_xlabel("non-anchor clients M")
    ax.set_ylabel("Phase-1 error d(θ̂, θ*)")
    ax.set_title("error against M")
    ax.grid(True, which="both", alpha=0.25)

    ax = axes[1]
    for c in cells:
        M, rate, lo, hi = _arrays(c["M"], c["rate"], c["rate_low"], c["rate_high"])
        x = M * float(c["p_min"]) ** 2 / c["d"]
        ax.errorbar(x, rate, yerr=[np.clip(rate - lo, 0, None), np.clip(hi - rate, 0, None)], color=colour[c["d"]],
                    marker=marker[float(c["p_min"])], capsize=1.5, alpha=0.9)
    ax.axhline(0.5, color="0.45", lw=0.9, ls=":")
    ax.set_xscale("log")
    _plain_log_axis(ax.xaxis)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("M p_min² / d")
    ax.set_ylabel(f"success rate (< {main_target[1]})")
    ax.set_title("success (Thm unit)")
    ax.grid(True, which="both", alpha=0.25)

    ax = axes[2]
    for j, cr in enumerate(crossings):
        d, p, M, top = _arrays(cr["d"], cr["p_min"], cr["M"], cr["M_grid_max"])
        x = d / p ** 2
        status = np.asarray(cr["status"])
        found = status == "found"
        shade = str(0.15 + 0.55 * j / max(len(crossings) - 1, 1))
        ax.plot(x[found], M[found], ls="none", marker=_P_MARKERS[j % len(_P_MARKERS)], ms=1.3 * ms, color=shade,
                label=f"M* for Δ/{cr['divisor']}")
        above = status == "above_grid"
        if above.any():
            ax.plot(x[above], top[above], ls="none", marker=_P_MARKERS[j % len(_P_MARKERS)], ms=1.3 * ms,
                    mfc="white", color=shade)
            for xi, ti in zip(x[above], top[above]):
                ax.annotate("", xy=(xi, ti * 1.6), xytext=(xi, ti), arrowprops=dict(arrowstyle="->", color=shade))
        below = status == "below_grid"
        if below.any():
            ax.plot(x[below], M[below], ls="none", marker=_P_MARKERS[j % len(_P_MARKERS)], ms=1.3 * ms,
                    mfc="white", color=shade)
            for xi, mi in zip(x[below], M[below]):
                ax.annotate("", xy=(xi, mi / 1.6), xytext=(xi, mi), arrowprops=dict(arrowstyle="->", color=shade))
        if found.sum() >= 1:
            grid = np.array([x.min() / 1.3, x.max() * 1.3])
            scale = np.exp(np.mean(np.log(M[found] / x[found])))
            ax.plot(grid, scale * grid, color=shade, lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log_axis(ax.xaxis)
    _plain_log_axis(ax.yaxis)
    ax.set_xlabel("d / p_min²")
    ax.set_ylabel("clients needed M*")
    ax.set_title("clients needed")
    ax.grid(True, which="both", alpha=0.25)
    line = matplotlib.lines.Line2D
    handles = [line([], [], color=colour[d], label=f"d = {d}") for d in ds]
    handles += [line([], [], color="0.3", marker=marker[p], ls="none", label=f"p_min = {p:.3g}") for p in ps]
    handles += list(axes[0].get_legend_handles_labels()[0]) + list(axes[2].get_legend_handles_labels()[0])
    handles += [line([], [], color="0.4", lw=0.8, ls="--", label="slope 1 (M* ∝ d / p_min²)"),
                line([], [], color="0.4", ls="none", marker="o", mfc="white", label="crossing outside the grid")]
    legend = finish(fig, axes, handles, own=own, title=title, footnote=footnote, legend_ax=axes[0], loc="lower left")
    return result(fig, axes, legend, handles=handles)


# --------------------------------------------------------------------------------------------
# The study's figures, from its tables
# --------------------------------------------------------------------------------------------


def _run_name(config):
    """The preset's name, or that it was changed by flags."""
    from . import STUDY  # the study's presets (imported when drawing: the package imports this module)

    return config.preset if STUDY.preset(config.preset) == config else f"{config.preset} preset with changed flags"


def _footnote(config):
    return (f"{_run_name(config)} (our stand-in protocol): k={config.k}, Δ={config.separation:g}, "
            f"σ={config.sigma:g}, x ~ N(0, I), non-anchor clients of 2 points, start θ₀ at {config.far:g}Δ from "
            f"every θ*_l (outside their span), {config.fmd_rounds} Phase-1 rounds, "
            f"step c={config.fmd_step_constant:g}, S_t = "
            f"{'all non-anchor clients' if config.fmd_sampling == 'reuse' else 'fresh pairs'} each round, anchors "
            f"reuse their n_A points; {config.trials} trials per cell; median and quartiles.")


def _short_footnote(config):
    return f"{_run_name(config)}, {config.trials} trials per cell"


def _fit_of(rows, axis, prefix):
    row = next((r for r in rows if r["axis"] == axis and str(r["setting"]).startswith(prefix)), None)
    if row is None:
        return None
    return SlopeFit(slope=_num(row["fitted"]), intercept=float("nan"), low=_num(row["low"]), high=_num(row["high"]),
                    level=0.95, n_points=int(row["n_points"]), n_boot=0), row["verdict"]


def _error_figure(config, tables):
    errors, exponents = tables["errors"], tables["exponents"]
    panels, slopes = [], []
    for axis, fixed in (("n_A", f"d = {config.d_ref}"), ("d", f"n_A = {config.nA_ref}")):
        series = []
        for mode in config.anchor_modes:
            rows = sorted((r for r in errors if r["axis"] == axis and r["anchor_mode"] == mode), key=lambda r: r[axis])
            x = [r[axis] for r in rows]
            if axis == "d":
                fit = _fit_of([e for e in exponents if f"{mode} anchors" in e["setting"]], "d", "Phase-1 error")
                if fit is not None:
                    slopes.append(f"Phase 1 (FMD), {mode.replace('_', ' ')} anchors: slope in d {fit[0].slope:+.2f} "
                                  f"[{fit[0].low:+.2f}, {fit[0].high:+.2f}] ({fit[1]})")
            series.append(dict(key=f"fmd_{mode}", mode=mode, method="fmd", x=x,
                               median=[r["fmd_err_median"] for r in rows], low=[r["fmd_err_q25"] for r in rows],
                               high=[r["fmd_err_q75"] for r in rows],
                               label=f"Phase 1 (FMD), {mode.replace('_', ' ')} anchors"))
            if mode == "random":  # with one anchor per cluster the output is the anchors themselves
                series.append(dict(key=f"anchor_{mode}", mode=mode, method="anchor", x=x,
                                   median=[r["anchor_err_max_median"] for r in rows],
                                   low=[r["anchor_err_max_q25"] for r in rows],
                                   high=[r["anchor_err_max_q75"] for r in rows],
                                   label="worst single anchor, random anchors"))
            series.append(dict(key=f"ls_{mode}", mode=mode, method="ls", x=x,
                               median=[r["ls_err_median"] for r in rows], low=[r["ls_err_q25"] for r in rows],
                               high=[r["ls_err_q75"] for r in rows],
                               label=f"LS on each anchor, {mode.replace('_', ' ')} anchors"))
        rows = [r for r in errors if r["axis"] == axis]
        covered = {m: min((r["covered_rate"] for r in rows if r["anchor_mode"] == m), default=float("nan"))
                   for m in config.anchor_modes}
        panels.append(dict(
            axis=axis, series=series,
            reference=(float(np.nanmedian([_num(r["theta_norm_median"]) for r in rows])),
                       "error of the estimate 0"),
            start=(float(np.nanmin([_num(r["init_distance_min"]) for r in rows])) * config.separation,
                   "the start's distance"),
            diagonal=(config.d_ref if axis == "n_A" else config.nA_ref),
            diagonal_label=("n_A = d" if axis == "n_A" else "d = n_A"),
            title=f"against n_A ({fixed})" if axis == "n_A" else f"against d ({fixed})",
            long_title=(f"error against n_A ({fixed}, M = {clients_for(config.c_ref, config.d_ref, config.p_ref)})"
                        if axis == "n_A" else f"error against d ({fixed}, M = {config.c_ref:g} d / p_min² = "
                        f"{config.c_ref / config.p_ref ** 2:.0f} d)"),
            xlabel="points per anchor n_A" if axis == "n_A" else "dimension d",
            note=("random anchors covered every cluster in ≥ "
                  f"{covered.get('random', float('nan')):.0%} of the trials of each point"
                  if "random" in covered else ""),
        ))
    targets = [(config.separation / q, f"Δ/{q}") for q in config.target_divisors]
    title = (f"Phase 1 with small anchors from a far start (θ₀ at {config.far:g}Δ): k = {config.k}, "
             f"p_min = {config.p_ref:.3g}, Δ = {config.separation:g}")
    drawn = plot_phase1_error(panels, targets=targets, title=title, footnote=_short_footnote(config))
    caption = (f"{title}. Panels: " + "; ".join(p["long_title"] for p in panels) + ". Error: matched max distance "
               "min_π max_l ‖θ̂_π(l) − θ*_l‖, median over trials with quartile bars. Series: Phase 1 (FMD) for each "
               "anchor version (colour); the worst single anchor max_a ‖θ_a,T − θ*_z_a‖ with random anchors (with "
               "one anchor per cluster it equals the output); least squares on each anchor (open markers). Lines: "
               "the error of the estimate 0 (max ‖θ*_l‖, median; dash-dot), the start's distance min_l ‖θ₀ − θ*_l‖ "
               f"(≥ {config.far:g}Δ; red dashed), the accuracy targets (grey), n_A = d (vertical). "
               "Medians far above the panel: a triangle at its top edge with the value. "
               + "; ".join(slopes + [p["note"] for p in panels if p.get("note")]) + ". " + _footnote(config))
    return drawn, caption


def _clients_figure(config, tables):
    rates, needed, exponents = tables["rates"], tables["needed"], tables["exponents"]
    q = config.main_divisor
    cells = []
    for d in config.need_ds:
        for p in config.need_p_mins:
            rows = sorted((r for r in rates if r["d"] == d and abs(_num(r["p_min"]) - p) < 1e-12), key=lambda r: r["M"])
            cells.append(dict(d=d, p_min=p, M=[r["M"] for r in rows], err=[r["err_median"] for r in rows],
                              err_low=[r["err_q25"] for r in rows], err_high=[r["err_q75"] for r in rows],
                              rate=[r[f"success_D{q}"] for r in rows], rate_low=[r[f"success_D{q}_low"] for r in rows],
                              rate_high=[r[f"success_D{q}_high"] for r in rows]))
    crossings = []
    for qq in config.target_divisors:
        rows = [r for r in needed if r["target_divisor"] == qq]
        fits = {axis: _fit_of([e for e in exponents if f"Delta/{qq} " in e["setting"]], axis, "clients")
                for axis in ("d", "p_min")}
        text = "; ".join(f"{axis}: {fit[0].slope:+.2f} [{fit[0].low:+.2f}, {fit[0].high:+.2f}] {fit[1]}"
                         for axis, fit in fits.items() if fit is not None and np.isfinite(fit[0].slope))
        if not text:
            found = sum(r["status"] == "found" for r in rows)
            text = f"not fitted ({found} of {len(rows)} cells cross 1/2 inside their grid; 3 needed)"
        crossings.append(dict(divisor=qq, d=[r["d"] for r in rows], p_min=[_num(r["p_min"]) for r in rows],
                              M=[_num(r["M_interpolated"]) for r in rows], status=[r["status"] for r in rows],
                              M_grid_max=[_num(r["M_grid_max"]) for r in rows],
                              label=f"Δ/{qq}: exponents {text}"))
    title = (f"Clients needed by Phase 1 against d and p_min (predicted M ∝ d / p_min²): k = {config.k}, "
             f"{config.need_anchor_mode.replace('_', ' ')} anchors of n_A = {config.need_nA} points")
    drawn = plot_clients_needed(cells, crossings, main_target=(config.separation / q, f"Δ/{q}"),
                                targets=[(config.separation / qq, f"Δ/{qq}") for qq in config.target_divisors],
                                title=title, footnote=_short_footnote(config))
    caption = (f"{title}. Left: the median Phase-1 error against the number of non-anchor clients M for each "
               "(d, p_min) cell (colour: d, marker: p_min; quartile bars), with the accuracy targets. Middle: the "
               f"success rate d(θ̂, θ*) < Δ/{q} (95% Wilson bars) against M p_min² / d, the theorem's unit, on which "
               "the cells' curves coincide if M* ∝ d / p_min². Right: the clients M* needed for success in half the "
               "trials (log-interpolated) against d / p_min², one marker series per target, with a line of slope 1 "
               "(the claim) through each target's points; an open marker with an arrow: the crossing lies outside "
               "the cell's grid (above its largest M, or below its smallest). Fitted exponents of d and p_min (95% "
               "bootstrap): " + "; ".join(cr["label"] for cr in crossings) + ". " + _footnote(config))
    return drawn, caption


def draw(config, tables, outdir):
    """The three figures, from the tables of :func:`summarise` only; returns the paths written."""
    outdir, paths = pathlib.Path(outdir), []
    for name, figure in (("phase1_error", _error_figure), ("phase1_clients", _clients_figure),
                         ("phase1_rates", _rates_figure)):
        drawn, caption = figure(config, tables)
        paths += save_figure(drawn["figure"], outdir / name, caption=caption)
    return paths


# --------------------------------------------------------------------------------------------
# Part (c): rounds and anchor size needed against d, k and p_min
# --------------------------------------------------------------------------------------------

_AXIS_STYLES = {"d": ("#1b9e77", "o"), "k": ("#d95f02", "s"), "p_min": ("#7570b3", "^")}
_K_COLOURS = ("#9ecae1", "#4292c6", "#08519c", "#08306b", "#000000")  # light to dark blue: k increasing


def plot_phase1_rates(success, sweeps, *, target, ax=None, title=None, footnote=None):
    """Phase 1's rounds and anchor size needed for one accuracy, against d, k and p_min.

    Three panels: (1) the success rate at ``target`` against :math:`n_A / k` for each ``k`` (the
    curves coincide if the ``n_A`` needed is proportional to ``k``); (2) the ``n_A`` needed
    (median over trials, quartile bars) and (3) the rounds needed (mean over the trials that
    reach the target, 95% bootstrap bars) against each sweep's value divided by its reference
    value, one series per swept axis, labelled with its fitted exponent.

    Parameters
    ----------
    success : list of dict
        One per ``k``: ``k``, ``x`` (``n_A / k``), ``rate``, ``rate_low``, ``rate_high``.
    sweeps : list of dict
        One per axis: ``axis`` ("d", "k" or "p_min"), ``x`` (value / reference), ``nA``, ``nA_low``,
        ``nA_high``, ``rounds``, ``rounds_low``, ``rounds_high``, ``nA_label``, ``rounds_label``.
    target : str
        The accuracy, for the axis label (``"Δ/2"``).
    ax : sequence of 3 Axes, optional
    title, footnote : str, optional
        Drawn on a new figure only.

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend``, ``handles``.
    """
    fig, axes, own = axes_for(ax, 3, aspect=0.9)
    ks = sorted({s["k"] for s in success})
    line = matplotlib.lines.Line2D
    handles = []
    ax = axes[0]
    for j, s in enumerate(sorted(success, key=lambda s: s["k"])):
        x, rate, lo, hi = _arrays(s["x"], s["rate"], s["rate_low"], s["rate_high"])
        colour = _K_COLOURS[j % len(_K_COLOURS)]
        ax.errorbar(x, rate, yerr=[np.clip(rate - lo, 0, None), np.clip(hi - rate, 0, None)], color=colour,
                    marker=_P_MARKERS[j % len(_P_MARKERS)], capsize=1.5)
        handles.append(line([], [], color=colour, marker=_P_MARKERS[j % len(_P_MARKERS)], label=f"k = {s['k']}"))
    ax.axhline(0.5, color="0.45", lw=0.9, ls=":")
    ax.set_xscale("log")
    _plain_log_axis(ax.xaxis)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("points per anchor / k  (n_A / k)")
    ax.set_ylabel(f"success rate (< {target})")
    ax.set_title("success against n_A / k" if ks else "")
    ax.grid(True, which="both", alpha=0.25)
    for ax, (key, ylabel, panel_title) in zip(axes[1:], (("nA", "n_A needed (median)", "anchor size needed"),
                                                          ("rounds", "rounds needed (mean)", "rounds needed"))):
        for s in sweeps:
            colour, marker = _AXIS_STYLES.get(s["axis"], ("0.3", "o"))
            x, y, lo, hi = _arrays(s["x"], s[key], s[f"{key}_low"], s[f"{key}_high"])
            show = np.isfinite(y) & (y > 0)
            ax.errorbar(x[show], y[show], yerr=[np.clip(y - lo, 0, None)[show], np.clip(hi - y, 0, None)[show]],
                        color=colour, marker=marker, capsize=1.5, mfc="white" if key == "rounds" else colour)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_axis(ax.xaxis)
        _plain_log_axis(ax.yaxis)
        ax.set_xlabel("swept value / reference value")
        ax.set_ylabel(ylabel)
        ax.set_title(panel_title)
        ax.grid(True, which="both", alpha=0.25)
        low, high = ax.get_ylim()
        ax.set_ylim(low, high * 2.5)  # room for the exponents' text
    for ax, key in zip(axes[1:], ("nA_label", "rounds_label")):  # each sweep's fitted exponent, in the panel
        text = "\n".join(s[key] for s in sweeps)
        ax.text(0.02, 0.98, "exponents (95%):\n" + text, transform=ax.transAxes, va="top", ha="left",
                fontsize="xx-small", color="0.2")
    for s in sweeps:
        colour, marker = _AXIS_STYLES.get(s["axis"], ("0.3", "o"))
        handles.append(line([], [], color=colour, marker=marker, label=f"{s['axis']} sweep"))
    legend = finish(fig, axes, handles, own=own, title=title, footnote=footnote, legend_ax=axes[0], loc="lower right")
    return result(fig, axes, legend, handles=handles)


def _rates_figure(config, tables):
    part_c, nA_success, exps = tables["part_c"], tables["nA_success"], tables["exponents_c"]
    q = config.rates_divisor
    d0, k0, p0 = config.rates_d_ref, config.rates_k_ref, float(config.rates_p_ref)
    success = []
    for k in config.rates_ks:
        rows = sorted((r for r in nA_success if r["k"] == k and r["d"] == d0 and abs(_num(r["p_min"]) - p0) < 1e-12),
                      key=lambda r: r["n_A"])
        success.append(dict(k=k, x=[r["nA_over_k"] for r in rows], rate=[r["success"] for r in rows],
                            rate_low=[r["success_low"] for r in rows], rate_high=[r["success_high"] for r in rows]))
    refs = {"d": d0, "k": k0, "p_min": p0}
    sweeps, notes = [], []
    for axis, values in (("d", config.rates_ds), ("k", config.rates_ks), ("p_min", config.rates_p_mins)):
        rows = []
        for v in values:
            key = {"d": (v, k0, p0), "k": (d0, v, p0), "p_min": (d0, k0, float(v))}[axis]
            rows += [r for r in part_c if (r["d"], r["k"]) == key[:2] and abs(_num(r["p_min"]) - key[2]) < 1e-12]
        label = {}
        for quantity in ("n_A", "rounds"):
            e = next((e for e in exps if e["quantity"] == quantity and e["axis"] == axis), None)
            if e is None:
                label[quantity] = axis
                continue
            label[quantity] = (f"{axis}: {_num(e['fitted']):+.2f} [{_num(e['low']):+.2f}, {_num(e['high']):+.2f}] "
                               f"vs {_num(e['predicted']):+g}: {e['verdict']}")
            notes.append(f"{quantity} against {axis}: exponent {_num(e['fitted']):+.2f} [{_num(e['low']):+.2f}, "
                         f"{_num(e['high']):+.2f}], predicted {_num(e['predicted']):+g}, {e['verdict']}; refitted "
                         f"without {axis} = {_num(e['heldout_x']):g}, the held-out log10 residual "
                         f"{_num(e['heldout_residual']):+.2f} [{_num(e['heldout_low']):+.2f}, "
                         f"{_num(e['heldout_high']):+.2f}] ({e['heldout_verdict']})"
                         + (f"; left out of the fit (drawn): {axis} = {e['left_out']} trials never reaching the target"
                            if e.get("left_out") else ""))
        sweeps.append(dict(axis=axis, x=[_num(r["p_min"] if axis == "p_min" else r[axis]) / refs[axis] for r in rows],
                           nA=[r["nA_needed_median"] for r in rows], nA_low=[r["nA_needed_q25"] for r in rows],
                           nA_high=[r["nA_needed_q75"] for r in rows], rounds=[r["rounds_mean"] for r in rows],
                           rounds_low=[r["rounds_mean_low"] for r in rows],
                           rounds_high=[r["rounds_mean_high"] for r in rows],
                           nA_label=label["n_A"], rounds_label=label["rounds"]))
    never = sum(int(r["rounds_never"]) for r in part_c)
    censored = sum(int(r["nA_censored"]) for r in part_c)
    title = (f"Rounds and anchor size Phase 1 needs for Δ/{q} (predicted: rounds ∝ d⁰k⁰p_min⁰, n_A ∝ k¹d⁰p_min⁰), "
             f"M = {config.rates_c:g} d / p_min²; filled: n_A needed, open: rounds")
    drawn = plot_phase1_rates(success, sweeps, target=f"Δ/{q}", title=title, footnote=_short_footnote(config))
    caption = (f"{title}. One anchor per cluster, its points cut to each n_A of {list(config.rates_nA_grid)} (nested, "
               f"common data); sweeps through the reference d = {d0}, k = {k0}, p_min = {p0:.3g}: d in "
               f"{list(config.rates_ds)}, k in {list(config.rates_ks)}, p_min in "
               f"{[round(float(p), 3) for p in config.rates_p_mins]}. Left: success rate d(θ̂, θ*) < Δ/{q} (95% Wilson "
               "bars) against n_A / k for each k of the k sweep; the curves coincide if the n_A needed is ∝ k. "
               "Middle: n_A needed per trial = the smallest grid n_A from which every larger grid n_A succeeds "
               f"(median, quartile bars; a trial failing at the largest n_A counts as {CENSORED_FACTOR:g} x the "
               f"largest, {censored} trial(s) in all). Right: rounds needed per trial = the first round from which the "
               "error stays below the target, at the largest n_A (mean over the trials that get there, 95% bootstrap "
               f"bars; {never} trial(s) never got there). x: the swept value over its reference value. Exponents: "
               "log-log slopes over each sweep's cells, 95% bootstrap over trials; "
               + "; ".join(notes) + ". " + _footnote(config))
    return drawn, caption
