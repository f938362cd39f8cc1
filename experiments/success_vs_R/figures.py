"""success_vs_R's figures: success against the separation, and the collapse on predicted scales.

:func:`draw` makes them from the tables of :func:`.summary.summarise` alone (so ``--redraw``
repeats them exactly), each with its caption file (``<figure>.caption.txt``: the setup, the
tests' numbers, what is predicted); :func:`plot_success_vs_separation` and
:func:`plot_success_collapse` draw from a rates table, in the current style
(:func:`mixreg.plotting.use_style`), into the axes given or a figure of their own.
"""

from __future__ import annotations

import pathlib

import matplotlib as mpl
import matplotlib.lines
import matplotlib.ticker
import numpy as np

from mixreg.methods import RULES, method_label, rule_title
from mixreg.plotting import (axes_for, axes_width, finish_panels, legend_above, not_drawn, plain_tick, save_figure,
                             wrap_text)
import matplotlib.pyplot as plt

from .summary import CHECKED_RULES, NAME, _flag, _given

__all__ = ["draw", "plot_success_vs_separation", "plot_success_collapse"]


def _log_tick(value, _pos=None):
    """A log-axis tick: plain between 0.01 and 1000 (0.3, 2, 50), else a power of ten (1e+08)."""
    return plain_tick(value) if 0.01 <= value <= 1000 else f"{value:.0e}"


_FAR_DECADES = 6.0  # a curve this many decades from the others' is named, not drawn


def _far_curves(xs):
    """``{sigma: +1 or -1}`` for the curves lying over :data:`_FAR_DECADES` decades above (+1) or
    below (-1) the main group, whose x-values are ``xs[sigma]`` (finite, > 0) on a log axis.

    A curve's centre is the median of its log10 x.  The main group is the curves within
    :data:`_FAR_DECADES` decades of a reference curve, the one with the most such neighbours
    (the first on ties); only when it holds a strict majority of the curves are the others named
    (never half or more of them, so two curves are always drawn).  A scale that degenerates for
    one noise level (the separation condition's root at sigma = 0 is ``C exp(-c n')``, 1e-44 at
    n' = 100) puts that curve dozens of decades from the rest, and one axis spanning them all
    leaves every other curve a vertical stroke.
    """
    centres = {sigma: float(np.median(np.log10(x))) for sigma, x in xs.items()}
    if not centres:
        return {}
    near = {a: [b for b in centres if abs(centres[a] - centres[b]) <= _FAR_DECADES] for a in centres}
    reference = max(centres, key=lambda a: len(near[a]))  # max keeps the first of equals
    if 2 * len(near[reference]) <= len(centres):
        return {}
    return {sigma: int(np.sign(c - centres[reference])) for sigma, c in centres.items()
            if sigma not in near[reference]}


#: Each panel's height over its width, titles and labels apart.
_ASPECT = 0.75


def _sigma_colours(sigmas):
    """One colour per noise level, in order, from a sequential colour-blind-safe map (viridis)."""
    return dict(zip(sigmas, plt.get_cmap("viridis")(np.linspace(0.0, 0.85, max(len(sigmas), 1)))))


def _titles(fig, axes, own, title, footnote, aspect):
    """Panel titles wrapped to their panels; a figure made here gets ``title`` and ``footnote``,
    and is made taller by them (its panels keep ``aspect``)."""
    finish_panels(fig, axes, own=own, title=title, footnote=footnote, aspect=aspect)


def _log_ticks(axis, ax, wide=False):
    """Log ticks at 1, 2, 5 per decade on a panel wide enough for them, at 1 and 3 otherwise."""
    if wide:
        locator = matplotlib.ticker.LogLocator(numticks=7)
    else:
        locator = matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0) if axes_width(ax) >= 2.6 else (1.0, 3.0))
    axis.set_major_locator(locator)
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _legend(fig, axes, own, handles):
    """Above the panels of a figure made here; in the last of the caller's axes otherwise."""
    if own:
        return legend_above(fig, handles)
    return axes[-1].legend(handles=handles, loc="lower right", fontsize="small")


def plot_success_vs_separation(
    summary,
    *,
    rules=("official", "honest"),
    separation_lines=None,
    r_per_delta=None,
    ceiling=True,
    predicted_ceiling=None,
    ax=None,
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
        that sigma, one line style per label; each label appears once in the legend, in grey.
        The label must say whether the line is a prediction (constants fixed before the data)
        or a fit validated on held-out data, and in which regime the theory holds.
    r_per_delta : float, optional
        ``Delta / r`` of the protocol; adds a top axis in the official code's ``r``.
    ceiling : bool, default True
        Draw the oracle's observed success rate in every panel (a ceiling).  Turn it off
        when it is 1 in every cell and say so in the caption instead.
    predicted_ceiling : tuple (label, dict), optional
        ``(label, {sigma: probability})``: the oracle's success probability predicted before
        the runs (constant in the separation), a thin dash-dot line per sigma.
    ax : sequence of ``len(rules)`` Axes, optional
        Where to draw, one per rule (the legend then goes into the last); ``None``: a figure of
        its own in the current style (:func:`mixreg.plotting.new_figure`), its legend above the
        panels.
    title : str, optional
        The figure's title (a figure made here only).
    footnote : str, optional
        A one-line footnote (a figure made here only); long notes belong in the caption file.

    Returns
    -------
    dict
        ``figure``, ``axes`` (one per rule), ``legend``; ``lines`` and ``bands``:
        ``(rule, sigma)`` to its Line2D and band; ``ceilings``: ``(rule, sigma)`` to the
        oracle's Line2D (with ``ceiling``); ``thresholds``: ``(rule, sigma, label)`` to the
        vertical line of ``separation_lines``.
    """
    sigmas = sorted({row["sigma"] for row in summary})
    colours = _sigma_colours(sigmas)
    fig, axes, own = axes_for(ax, len(rules), name="plot_success_vs_separation", sharey=True, aspect=_ASPECT)
    styles = ["--", ":", "-."]
    labels = list(dict.fromkeys(lab for lines in (separation_lines or {}).values() for lab in lines))
    ifca = method_label("ifca", short=True)
    oracle_style = RULES["oracle"]
    width = mpl.rcParams["lines.linewidth"]
    drawn = dict(figure=fig, axes=axes, lines={}, bands={}, ceilings={}, thresholds={})
    for panel, rule in zip(axes, rules):
        curve = RULES.get(rule, RULES["official"])  # an unregistered rule is drawn as the official one
        for sigma in sigmas:
            colour = colours[sigma]
            rows = sorted((r for r in summary if r["sigma"] == sigma), key=lambda r: r["separation_mean"])
            x = np.array([r["separation_mean"] for r in rows])
            y, lo, hi = (np.array([r[f"{rule}_success_{part}"] for r in rows]) for part in ("rate", "low", "high"))
            drawn["lines"][rule, sigma], = panel.plot(x, y, marker=curve.marker, ls=curve.linestyle, color=colour,
                                                      label=f"{ifca}, σ = {sigma:g}")
            drawn["bands"][rule, sigma] = panel.fill_between(x, lo, hi, color=colour, alpha=0.18, lw=0)
            if ceiling:
                oracle = np.array([r["oracle_success_rate"] for r in rows])
                drawn["ceilings"][rule, sigma], = panel.plot(
                    x, oracle, ls=oracle_style.linestyle, color=colour, lw=2.5 * width, alpha=0.3,
                    solid_capstyle="butt", label=oracle_style.label if sigma == sigmas[0] else None)
            if predicted_ceiling is not None and sigma in predicted_ceiling[1]:
                first = min(s for s in predicted_ceiling[1] if s in sigmas)
                panel.axhline(predicted_ceiling[1][sigma], color=colour, ls="-.", lw=0.7 * width, alpha=0.9,
                              label=predicted_ceiling[0] if sigma == first else None)
            for label, delta in (separation_lines or {}).get(sigma, {}).items():
                if np.isfinite(delta) and delta > 0:
                    drawn["thresholds"][rule, sigma, label] = panel.axvline(
                        delta, color=colour, ls=styles[labels.index(label) % len(styles)], lw=0.7 * width, alpha=0.8)
        panel.set_xscale("log")
        _log_ticks(panel.xaxis, panel)
        panel.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
        panel.set_ylim(-0.03, 1.03)
        panel.set_xlabel("realised separation Δ")
        panel.set_title(rule_title(rule))
        panel.grid(True, which="both", alpha=0.25)
        if r_per_delta:
            top = panel.secondary_xaxis("top", functions=(lambda d: d / r_per_delta, lambda r: r * r_per_delta))
            _log_ticks(top.xaxis, panel)
            top.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
            top.set_xlabel(f"r (Δ ≈ {r_per_delta:.1f} r)")
    axes[0].set_ylabel("success probability")
    handles, _ = axes[-1].get_legend_handles_labels()
    for label in labels:  # the theory lines, in a neutral grey (not a method's colour)
        handles.append(matplotlib.lines.Line2D([], [], color="0.35", lw=0.7 * width,
                                               ls=styles[labels.index(label) % len(styles)], label=label))
    drawn["legend"] = _legend(fig, axes, own, handles)
    _titles(fig, axes, own, title, footnote, _ASPECT)
    return drawn


def plot_success_collapse(summary, scales, *, rule="official", crossings=None, held_out=None, ax=None, title=None,
                          footnote=None):
    """Success against predicted scales (a data collapse), and the 1/2-crossings against sigma.

    If success depends on the separation and the noise only through a scale ``Delta / s(sigma)``,
    the curves of all noise levels fall on one curve when drawn against it.  One panel per
    candidate scale, with the curves of every sigma; then, optionally, a panel of the observed
    1/2-crossings against sigma with the held-out predictions of fitted models.

    Parameters
    ----------
    summary : list of dict
        Rows of :func:`mixreg.stats.group_rates` per (sigma, r): ``sigma``,
        ``separation_mean``, ``<rule>_success_rate/_low/_high``.
    scales : sequence of dict
        One per panel: ``divisor`` (``{sigma: s(sigma)}``; the panel's x is
        ``separation_mean / s(sigma)``), ``xlabel``, ``title`` (a short name of the scale),
        ``verdict`` (optional, one short line shown under the title, e.g. whether the curves
        collapse).
    rule : str
        The success rule drawn (a key of :data:`mixreg.plotting.RULES`).
    crossings : dict, optional
        ``{sigma: (value, low, high)}``: the observed 1/2-crossing in Delta with its 95% interval
        (e.g. :func:`mixreg.theory.crossing_draws`; ``low = 0`` or ``high = inf`` when it reaches
        beyond the grid; drawn to the axis edge, with an arrow head for ``inf``).  A crossing
        with neither a value nor an interval above 0 is not drawn, and the legend names only
        what is drawn.
    held_out : dict, optional
        ``{label: {sigma: predicted crossing}}``: predictions of fitted models for a sigma
        level the fit did not use, drawn as markers on the crossings panel (a model with no
        finite prediction is neither drawn nor in the legend).
    ax : sequence of Axes, optional
        ``len(scales)`` Axes, one more with ``crossings``; ``None``: a figure of its own in the
        current style, its legend above the panels.
    title, footnote : str, optional
        As in :func:`plot_success_vs_separation`.

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend``; ``curves``: ``(panel index, sigma)`` to its Line2D;
        ``far``: panel index to ``{sigma: +1 or -1}``, the curves named off the axis (under the
        x label) instead of drawn; ``crossings``: sigma to the Line2D of its interval; ``held_out``: label to the
        Line2D of its markers (only the models drawn).
    """
    sigmas = sorted({row["sigma"] for row in summary})
    colours = _sigma_colours(sigmas)
    n_panels = len(scales) + (1 if crossings else 0)
    fig, axes, own = axes_for(ax, n_panels, name="plot_success_collapse", aspect=_ASPECT)
    style = RULES.get(rule, RULES["official"])
    ifca = method_label("ifca", short=True)
    drawn = dict(figure=fig, axes=axes, curves={}, far={}, crossings={}, held_out={})
    for index, (panel, scale) in enumerate(zip(axes, scales)):
        curves = {}
        for sigma in sigmas:
            divisor = scale["divisor"].get(sigma, np.nan)
            rows = sorted((r for r in summary if r["sigma"] == sigma), key=lambda r: r["separation_mean"])
            x = np.array([r["separation_mean"] for r in rows], dtype=float) / divisor
            keep = np.isfinite(x) & (x > 0)
            if keep.any():
                curves[sigma] = (x[keep], *(np.array([r[f"{rule}_success_{part}"] for r in rows], dtype=float)[keep]
                                            for part in ("rate", "low", "high")))
        far = drawn["far"][index] = _far_curves({sigma: curve[0] for sigma, curve in curves.items()})
        for sigma, (x, y, lo, hi) in curves.items():
            line = dict(marker=style.marker, ls=style.linestyle, color=colours[sigma], label=f"{ifca}, σ = {sigma:g}")
            if sigma in far:  # keep its legend entry; say where it is instead of crushing the others
                panel.plot([], [], **line)
                continue
            drawn["curves"][index, sigma], = panel.plot(x, y, **line)
            panel.fill_between(x, lo, hi, color=colours[sigma], alpha=0.15, lw=0)
        notes = [f"{'' if far[sigma] > 0 else '← '}σ = {sigma:g} off this axis: x from {curves[sigma][0].min():.2g} "
                 f"to {curves[sigma][0].max():.2g}{' →' if far[sigma] > 0 else ''}" for sigma in sorted(far)]
        panel.axhline(0.5, color="0.6", lw=0.6 * mpl.rcParams["lines.linewidth"], ls=":")
        panel.set_xscale("log")
        shown = [v for line in panel.get_lines() for v in np.asarray(line.get_xdata(), dtype=float) if v > 0]
        wide = bool(shown) and max(shown) / min(shown) > 1e3
        _log_ticks(panel.xaxis, panel, wide)
        panel.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_log_tick))
        panel.set_ylim(-0.03, 1.03)
        panel.set_xlabel("\n".join([scale["xlabel"], *(wrap_text(note, axes_width(panel), size="axes.labelsize")
                                                         for note in notes)]))  # below the data, never over it
        panel.set_title(scale["title"] + (f"\n{scale['verdict']}" if scale.get("verdict") else ""))
        panel.grid(True, which="major", alpha=0.25)
    axes[0].set_ylabel(f"success probability ({style.short})")
    handles, _ = axes[0].get_legend_handles_labels()
    if crossings:
        handles += _crossings_panel(axes[-1], crossings, held_out or {}, sigmas, colours, drawn)
    drawn["legend"] = _legend(fig, axes, own, handles)
    _titles(fig, axes, own, title, footnote, _ASPECT)
    return drawn


def _crossings_panel(ax, crossings, held_out, sigmas, colours, drawn):
    """The 1/2-crossings against sigma and the held-out predictions; the legend handles of what
    is drawn (a crossing or a model with nothing to show has no entry)."""
    finite = [v for c in crossings.values() for v in c if np.isfinite(v) and v > 0]
    finite += [v for p in held_out.values() for v in p.values() if np.isfinite(v) and v > 0]
    top = 1.15 * max(finite) if finite else 1.0
    size = mpl.rcParams["lines.markersize"]
    handles = []
    shown = False
    for sigma, (value, low, high) in sorted(crossings.items()):
        colour = colours.get(sigma, "0.3")
        lo = 0.0 if not np.isfinite(low) else min(low, top)
        hi = top if not np.isfinite(high) else min(high, top)
        if not np.isfinite(value) and not hi > lo:  # undetermined: nothing to draw
            continue
        shown = True
        drawn["crossings"][sigma], = ax.plot([sigma, sigma], [lo, hi], color=colour, lw=1.5 * mpl.rcParams[
            "lines.linewidth"], alpha=0.7)
        if not np.isfinite(high) or high > top:
            ax.plot(sigma, top, marker="^", color=colour)
        if np.isfinite(value):
            ax.plot(sigma, value, marker="D", color=colour, ls="none", ms=1.3 * size)
    if shown:
        handles.append(matplotlib.lines.Line2D([], [], marker="D", color="0.3", ls="-",
                                               label="observed 1/2-crossing, 95% interval (▲: open above)"))
    else:
        below = all(np.isfinite(high) and high <= 0 for _, _, high in crossings.values())
        text = ("undetermined: no noise level crosses 1/2 inside the grid; "
                + ("success is above 1/2 already at the smallest separation" if below
                   else "the crossings lie outside it"))
        ax.text(0.5, 0.5, wrap_text(text, 0.9 * axes_width(ax), size="font.size"), transform=ax.transAxes,
                ha="center", va="center", fontsize="small", color="0.3")
    markers = ["x", "+", "1", "2"]
    for j, (label, predicted) in enumerate(held_out.items()):
        xs = [s for s in sorted(predicted) if np.isfinite(predicted[s]) and predicted[s] > 0]
        if not xs:
            continue
        drawn["held_out"][label], = ax.plot(xs, [min(predicted[s], top) for s in xs], marker=markers[j % len(markers)],
                                            ms=1.6 * size, mew=1.5 * mpl.rcParams["lines.linewidth"], ls="none",
                                            color="0.15", label=label)
        handles.append(drawn["held_out"][label])
    ax.set_ylim(-0.04 * top, top * 1.05)
    span = max(sigmas) - min(sigmas) if len(sigmas) > 1 else 1.0
    ax.set_xlim(min(sigmas) - 0.1 * span, max(sigmas) + 0.1 * span)
    ax.set_xlabel("noise level σ")
    ax.set_ylabel("1/2-crossing Δ")
    ax.set_title("1/2-crossings and held-out predictions")
    ax.grid(True, alpha=0.25)
    return handles


def _number(value):
    """A table's number for a figure: a blank field (``None``) is ``nan``."""
    return float("nan") if value is None else value


def _fmt(value):
    if value is None or np.isnan(value):
        return "–"
    return ("∞" if value > 0 else "−∞") if np.isinf(value) else f"{value:.3g}"


def _theory_rows(theory):
    """``select(quantity, rule=...)`` over theory.csv; refuses a table of an earlier version."""
    if not theory or "quantity" not in theory[0]:
        raise ValueError("theory.csv was written by an earlier version of this experiment; run its command "
                         "again: it resumes without recomputing a trial and rewrites the tables")

    def select(quantity, **match):
        return [row for row in theory if row["quantity"] == quantity
                and all(row.get(key) == value for key, value in match.items())]
    return select


def _range(low, high):
    """The range common to the crossings' intervals, in words."""
    if not (np.isfinite(_number(low)) and np.isfinite(_number(high))):
        return ""
    return (f", common range [{_fmt(low)}, {_fmt(high)}]" if low <= high
            else ", no range common to their intervals")


def _test_name(row):
    """Which homogeneity test a ``sigma_homogeneity`` row holds, from its label: paired over the trials when
    the noise levels share each trial's draw, stratified by r for independent draws."""
    if row["label"].startswith("exact conditional"):
        return "Exact test stratified by r (independent draws per σ)"
    return f"{row['label'].split(', at every r')[0]} over the trials (the σ levels share each trial's draw: paired)"


def _collapse_text(row):
    """A collapse test's verdict, with its spread and common range only where they were determined."""
    if row["verdict"].startswith("undetermined") or not np.isfinite(_number(row["value"])):
        return row["verdict"]
    return f"{row['verdict']} (spread ×{_fmt(row['value'])}{_range(row['low'], row['high'])})"


def draw(config, tables, outdir):
    """The two figures, from the tables of :func:`summarise` only; returns the paths written.

    ``success_vs_R``: success against the separation per rule, the oracle ceiling only where it
    says something.  ``success_vs_R_collapse``: the official rule's curves on the separation
    condition's scale and on the separation itself, and the 1/2-crossings against sigma with
    the held-out predictions.  Each figure keeps a one-line footnote; its full notes (setup,
    the oracle's prediction, the tests' numbers) are its caption file
    (``<figure>.caption.txt``, :func:`mixreg.plotting.save_figure`).  A figure the tables
    cannot give is not drawn, and :func:`mixreg.plotting.not_drawn` says why: both need a
    realised separation (none with ``--k 1``), the collapse needs it at two r values or more.
    """
    rates, select = tables["rates"], _theory_rows(tables["theory"])
    separations = {row["r"] for row in rates if _given(row["separation_mean"]) and row["separation_mean"] > 0}
    if not separations:
        reason = ("--k 1: one cluster has no separation Δ to draw the success against" if config.k == 1
                  else "no trial recorded a separation Δ > 0 to draw the success against")
        for figure in (NAME, f"{NAME}_collapse"):
            not_drawn(figure, reason)
        return []
    delta_per_r = select("delta_per_r")
    r_per_delta = delta_per_r[0]["value"] if delta_per_r else None
    predicted = {row["sigma"]: row["value"] for row in select("oracle_success_probability")}
    ratio = {row["sigma"]: row["value"] for row in select("ls_rms_over_threshold")}
    observed = select("oracle_success_rate")
    hits = [f"{round(sum(r['oracle_success_rate'] * r['trials'] for r in rates if r['sigma'] == row['sigma']))}/"
            f"{sum(r['trials'] for r in rates if r['sigma'] == row['sigma'])}" for row in observed]
    trivial = all(row["value"] == 1.0 for row in observed) and all(v >= 0.99 for v in predicted.values())
    if trivial:
        oracle_text = (f"Known-label LS (oracle): RMS error / threshold = {', '.join(_fmt(v) for v in ratio.values())} "
                       f"(σ = {', '.join(f'{s:g}' for s in ratio)}), predicted success probability ≥ "
                       f"{np.floor(min(predicted.values()) * 1e4) / 1e4:.4f} before the runs; observed "
                       f"{', '.join(hits)} successes: the ceiling is 1 everywhere and is not drawn.")
    else:
        oracle_text = ("Oracle ceiling: observed known-label LS success (thick) and its probability predicted from the "
                       "sizes before the runs (dash-dot).")
    tests = {row["rule"]: row for row in select("sigma_homogeneity") if row["r"] is None and row["p_value"] is not None}
    test_text = "; ".join(f"{rule}: p = {_fmt(row['p_value'])}" for rule, row in tests.items())
    test_text = (f"Do the noise levels differ? {_test_name(next(iter(tests.values())))} ({test_text}): "
                 f"{'; '.join(sorted({row['verdict'] for row in tests.values()}))}." if tests else "")
    setup = (f"{config.preset}: k={config.k}, m={config.m}, n={config.n}, d={config.d}, T={config.n_rounds}, "
             f"{config.n_inits} inits x step sizes {list(config.step_sizes)}, {config.trials} trials per point, "
             f"{config.dtype}; theta* protocol '{config.protocol}', init '{config.init}' (random, no resampling: "
             f"outside Theorem 1's assumptions). Success: distance < 0.6 sigma + {config.threshold_offset:g}.")
    sizes = f"k = {config.k}, m = {config.m}, n = {config.n}, d = {config.d}"
    top = (f" Top axis: the official code's per-coordinate scale r (Δ ≈ {r_per_delta:.1f} r)."
           if _given(r_per_delta) else "")
    caption = " ".join(t for t in (
        f"IFCA success probability against the realised separation Δ = min ‖θ*ᵢ − θ*ⱼ‖ ({sizes}), one curve per "
        f"noise level σ, one panel per success rule ({'; '.join(rule_title(rule) for rule in CHECKED_RULES)}). "
        f"Bands: 95% Wilson intervals.{top}",
        setup, oracle_text, test_text,
        f"Scales and held-out checks: {NAME}_collapse." if len(separations) > 1 else "") if t)
    drawn = plot_success_vs_separation(
        rates, rules=CHECKED_RULES,
        r_per_delta=r_per_delta if _given(r_per_delta) else None,
        ceiling=not trivial,
        predicted_ceiling=None if trivial else ("known-label LS success probability, predicted before the runs",
                                                predicted),
        title=f"IFCA success probability vs separation ({sizes})",
        footnote=(f"{config.trials} trials per point, bands: 95% Wilson intervals; random init, no resampling "
                  "(outside Theorem 1's assumptions)"),
    )
    paths = save_figure(drawn["figure"], pathlib.Path(outdir) / NAME, caption=caption)
    if len(separations) < 2:
        not_drawn(f"{NAME}_collapse", "the collapse panels and the 1/2-crossings need the success rate at two "
                                      f"separations or more; got {_flag('rs', sorted(separations))}")
        return paths

    rule = "official"

    def verdict(name, *, detail):
        """The collapse test on scale ``name``: one short line for the panel, or the caption's sentence."""
        every, noisy = select(f"collapse_{name}", rule=rule)[0], select(f"collapse_{name}_noisy", rule=rule)
        crossings = select("half_crossing" if name == "delta" else "half_crossing_scaled", rule=rule)
        with_zero = bool(noisy) and any(row_["sigma"] == 0 for row_ in crossings)
        if not detail:  # one short line: the verdicts without their reasons
            short = [every["verdict"].split(" (")[0]]
            if with_zero and noisy[0]["verdict"].split(" (")[0] != short[0]:
                short = [f"all σ: {short[0]}", f"σ > 0: {noisy[0]['verdict'].split(' (')[0]}"]
            return "verdict: " + "; ".join(short)
        values = ", ".join(f"σ = {row_['sigma']:g}: {_fmt(row_['value'])}" for row_ in crossings)
        if not any(np.isfinite(_number(row_["value"])) for row_ in crossings):
            values = "undetermined: no σ crosses 1/2 inside the grid"
        return (f"1/2-crossings {values}; all σ: {_collapse_text(every)}"
                + (f"; σ > 0: {_collapse_text(noisy[0])}" if with_zero else "") + ".")

    scale = {row["sigma"]: row["value"] for row in select("separation_scale")}
    scales = [
        dict(divisor=scale, xlabel="Δ / Δ_sep(σ)",
             title="Thm 1's separation scale (outside its assumptions)",
             verdict=verdict("separation_scale", detail=False)),
        dict(divisor={s: 1.0 for s in scale}, xlabel="realised separation Δ",
             title="σ-free scale Δ", verdict=verdict("delta", detail=False)),
    ]
    crossings = {row["sigma"]: tuple(_number(row[key]) for key in ("value", "low", "high"))
                 for row in select("half_crossing", rule=rule)}
    held = {}
    residuals = []
    for quantity, label in (
        ("noise_term_crossing", "held-out prediction, C (σ/p)√(d/(mn)), C fitted on the other σ"),
        ("sigma_free_crossing", "held-out prediction, σ-free constant fitted on the other σ"),
    ):
        rows = select(quantity, rule=rule)
        held[label] = {row["sigma"]: _number(row["value"]) for row in rows}
        residuals.append(f"{'noise term' if quantity.startswith('noise') else 'σ-free'}: "
                         + ", ".join(f"σ={row['sigma']:g} " + (f"{_fmt(row['residual'])} [{_fmt(row['low'])}, "
                                                               f"{_fmt(row['high'])}] {row['verdict']}"
                                                               if np.isfinite(_number(row["residual"]))
                                                               else row["verdict"]) for row in rows))
    drawn = plot_success_collapse(
        rates, scales, rule=rule, crossings=crossings, held_out=held,
        title=f"Do the noise levels collapse on a predicted scale? ({sizes})",
        footnote="Official rule; bands: 95% Wilson intervals; both x-scales fixed before the runs",
    )
    caption = (
        f"Do the noise levels collapse on a predicted scale? ({sizes}) The official rule's success "
        f"probability (bands: 95% Wilson intervals) against two scales fixed before the runs: left, Δ / Δ_sep(σ), "
        f"where Δ_sep is the root of the separation condition of Theorem 1 with unit constants and n' = n (the runs "
        f"are outside its assumptions: random init, no resampling), "
        f"{verdict('separation_scale', detail=True)} Middle, the σ-free scale Δ (prediction: σ² adds alike to "
        f"every model's loss, and σ ≪ initial distance ≈ √(d/2), so σ should not matter), "
        f"{verdict('delta', detail=True)} Right: the observed 1/2-crossings against σ (95% intervals from "
        f"Jeffreys-posterior draws of every cell) and the held-out predictions of two fitted models, each fitted on "
        f"the other noise levels; only crossings and predictions that exist are drawn. Held-out residuals "
        f"log10(predicted/observed crossing) [95% interval]: {'; '.join(residuals)}. {setup} {test_text}")
    return paths + save_figure(drawn["figure"], pathlib.Path(outdir) / f"{NAME}_collapse", caption=caption)
