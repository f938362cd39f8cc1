"""success_vs_R's figures: success against the separation, and the collapse on predicted scales.

:func:`draw` makes them from the tables of :func:`.summary.summarise` alone (so ``--redraw``
repeats them exactly); :func:`plot_success_vs_separation` and :func:`plot_success_collapse` draw
from a rates table.
"""

from __future__ import annotations

import pathlib

import matplotlib.lines
import matplotlib.ticker
import numpy as np

from mixreg.methods import RULES, method_label, rule_title
from mixreg.plotting import not_drawn, plain_tick, save_figure
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


def plot_success_vs_separation(
    summary,
    *,
    rules=("official", "honest"),
    separation_lines=None,
    r_per_delta=None,
    ceiling=True,
    predicted_ceiling=None,
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
        when it is 1 in every cell and say so in the footnote instead.
    predicted_ceiling : tuple (label, dict), optional
        ``(label, {sigma: probability})``: the oracle's success probability predicted before
        the runs (constant in the separation), a thin dash-dot line per sigma.
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
    oracle_style = RULES["oracle"]
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
            if ceiling:
                oracle = np.array([r["oracle_success_rate"] for r in rows])
                ax.plot(x, oracle, ls=oracle_style.linestyle, color=colour, lw=3.5, alpha=0.3,
                        solid_capstyle="butt", label=oracle_style.label if sigma == sigmas[0] else None)
            if predicted_ceiling is not None and sigma in predicted_ceiling[1]:
                first = min(s for s in predicted_ceiling[1] if s in sigmas)
                ax.axhline(predicted_ceiling[1][sigma], color=colour, ls="-.", lw=1.0, alpha=0.9,
                           label=predicted_ceiling[0] if sigma == first else None)
            for label, delta in (separation_lines or {}).get(sigma, {}).items():
                if np.isfinite(delta) and delta > 0:
                    ax.axvline(delta, color=colour, ls=styles[labels.index(label) % len(styles)], lw=1.0, alpha=0.8)
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("realised separation Δ = min ‖θ*ᵢ − θ*ⱼ‖")
        ax.set_title(rule_title(rule), fontsize=10)
        ax.grid(True, which="both", alpha=0.25)
        if r_per_delta:
            top = ax.secondary_xaxis("top", functions=(lambda d: d / r_per_delta, lambda r: r * r_per_delta))
            top.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            top.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
            top.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            top.set_xlabel(f"official per-coordinate scale r  (Δ ≈ {r_per_delta:.1f} r)", fontsize=9)
    axes[0][0].set_ylabel("success probability (95% Wilson interval)")
    handles, _ = axes[0][-1].get_legend_handles_labels()
    for label in labels:  # the theory lines, in a neutral grey (not a method's colour)
        handles.append(matplotlib.lines.Line2D([], [], color="0.35", lw=1.0,
                                               ls=styles[labels.index(label) % len(styles)], label=label))
    bottom = 0.07 if footnote else 0.0
    _legend_title_footnote(fig, handles, bottom, title, footnote)
    fig.tight_layout(rect=(0, bottom + 0.04 + 0.035 * ((len(handles) + 2) // 3), 1, 1))
    return fig


def plot_success_collapse(summary, scales, *, rule="official", crossings=None, held_out=None, title=None,
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
        ``separation_mean / s(sigma)``), ``xlabel``, ``title`` (what the scale is and whether it
        is a prediction), ``verdict`` (optional text shown in the panel, e.g. whether the
        curves collapse, with the numbers).
    rule : str
        The success rule drawn (a key of :data:`mixreg.plotting.RULES`).
    crossings : dict, optional
        ``{sigma: (value, low, high)}``: the observed 1/2-crossing in Delta with its 95% interval
        (e.g. :func:`mixreg.theory.crossing_draws`; ``low = 0`` or ``high = inf`` when it reaches
        beyond the grid; drawn to the axis edge, with an arrow head for ``inf``).
    held_out : dict, optional
        ``{label: {sigma: predicted crossing}}``: predictions of fitted models for a sigma
        level the fit did not use, drawn as markers on the crossings panel.
    title, footnote : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    sigmas = sorted({row["sigma"] for row in summary})
    colours = dict(zip(sigmas, plt.get_cmap("viridis")(np.linspace(0.0, 0.85, max(len(sigmas), 1)))))
    n_panels = len(scales) + (1 if crossings else 0)
    fig, axes = plt.subplots(1, n_panels, figsize=(5.2 * n_panels, 5.6), squeeze=False)
    axes = axes[0]
    style = RULES.get(rule, RULES["official"])
    ifca = method_label("ifca", short=True)
    for ax, scale in zip(axes, scales):
        curves = {}
        for sigma in sigmas:
            divisor = scale["divisor"].get(sigma, np.nan)
            rows = sorted((r for r in summary if r["sigma"] == sigma), key=lambda r: r["separation_mean"])
            x = np.array([r["separation_mean"] for r in rows], dtype=float) / divisor
            keep = np.isfinite(x) & (x > 0)
            if keep.any():
                curves[sigma] = (x[keep], *(np.array([r[f"{rule}_success_{part}"] for r in rows], dtype=float)[keep]
                                            for part in ("rate", "low", "high")))
        far = _far_curves({sigma: curve[0] for sigma, curve in curves.items()})
        for sigma, (x, y, lo, hi) in curves.items():
            line = dict(marker=style.marker, ls=style.linestyle, color=colours[sigma], lw=1.8, ms=4,
                        label=f"{ifca}, σ = {sigma:g}")
            if sigma in far:  # keep its legend entry; say where it is instead of crushing the others
                ax.plot([], [], **line)
                continue
            ax.plot(x, y, **line)
            ax.fill_between(x, lo, hi, color=colours[sigma], alpha=0.15, lw=0)
        for j, sigma in enumerate(sorted(far)):
            x = curves[sigma][0]
            side = far[sigma]
            ax.text(0.98 if side > 0 else 0.02, 0.06 + 0.07 * j,
                    f"{'' if side > 0 else '← '}σ = {sigma:g} off this axis: x from {x.min():.2g} to {x.max():.2g}"
                    f"{' →' if side > 0 else ''}", transform=ax.transAxes, ha="right" if side > 0 else "left",
                    va="bottom", fontsize=8, color=colours[sigma])
        ax.axhline(0.5, color="0.6", lw=0.8, ls=":")
        ax.set_xscale("log")
        drawn = [v for line in ax.get_lines() for v in np.asarray(line.get_xdata(), dtype=float) if v > 0]
        wide = bool(drawn) and max(drawn) / min(drawn) > 1e3
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(numticks=7) if wide
                                   else matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_log_tick))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel(scale["xlabel"])
        ax.set_title(scale["title"] + (f"\n{scale['verdict']}" if scale.get("verdict") else ""), fontsize=8.5)
        ax.grid(True, which="major", alpha=0.25)
    axes[0].set_ylabel(f"success probability, {style.short} rule (95% Wilson band)")
    if crossings:
        ax = axes[-1]
        finite = [v for c in crossings.values() for v in c if np.isfinite(v) and v > 0]
        finite += [v for p in (held_out or {}).values() for v in p.values() if np.isfinite(v) and v > 0]
        top = 1.15 * max(finite) if finite else 1.0
        for sigma, (value, low, high) in sorted(crossings.items()):
            colour = colours.get(sigma, "0.3")
            lo = 0.0 if not np.isfinite(low) else min(low, top)
            hi = top if not np.isfinite(high) else min(high, top)
            ax.plot([sigma, sigma], [lo, hi], color=colour, lw=2.0, alpha=0.7)
            if not np.isfinite(high) or high > top:
                ax.plot(sigma, top, marker="^", color=colour, ms=6)
            if np.isfinite(value):
                ax.plot(sigma, value, marker="D", color=colour, ms=7, ls="none")
        if not any(np.isfinite(value) for value, _, _ in crossings.values()):
            below = all(np.isfinite(high) and high <= 0 for _, _, high in crossings.values())
            ax.text(0.5, 0.5, "no noise level crosses 1/2 inside the grid:\n"
                    + ("success is above 1/2 already at its smallest separation" if below
                       else "the crossings lie outside it"), transform=ax.transAxes, ha="center", va="center",
                    fontsize=8.5, color="0.3")
        ax.plot([], [], marker="D", color="0.3", ls="-", lw=2.0,
                label="observed 1/2-crossing and its 95% interval (▲: no upper end in the grid)")
        markers = ["x", "+", "1", "2"]
        for j, (label, predicted) in enumerate((held_out or {}).items()):
            xs = sorted(predicted)
            ax.plot(xs, [min(predicted[s], top) for s in xs], marker=markers[j % len(markers)], ms=10, mew=2.0,
                    ls="none", color="0.15", label=label)
        ax.set_ylim(-0.04 * top, top * 1.05)
        span = max(sigmas) - min(sigmas) if len(sigmas) > 1 else 1.0
        ax.set_xlim(min(sigmas) - 0.1 * span, max(sigmas) + 0.1 * span)
        ax.set_xlabel("noise level σ")
        ax.set_ylabel("separation Δ where success crosses 1/2")
        ax.set_title("1/2-crossing against σ, and held-out predictions", fontsize=9)
        ax.grid(True, alpha=0.25)
    handles, _ = axes[0].get_legend_handles_labels()
    if crossings:
        handles += axes[-1].get_legend_handles_labels()[0]
    bottom = 0.09 if footnote else 0.0
    _legend_title_footnote(fig, handles, bottom, title, footnote)
    fig.tight_layout(rect=(0, bottom + 0.035 * ((len(handles) + 2) // 3) + 0.01, 1, 1))
    return fig


def _legend_title_footnote(fig, handles, bottom, title, footnote):
    """The figure legend (three columns, from ``bottom`` up), the title and the footnote."""
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=3, frameon=False,
               bbox_to_anchor=(0.5, bottom))
    if title:
        fig.suptitle(title, fontsize=11)
    if footnote:
        fig.text(0.01, 0.005, footnote, fontsize=7, va="bottom", ha="left", wrap=True)


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


def draw(config, tables, outdir):
    """The two figures, from the tables of :func:`summarise` only; returns the paths written.

    ``success_vs_R``: success against the separation per rule, the oracle ceiling only where it
    says something.  ``success_vs_R_collapse``: the official rule's curves on the separation
    condition's scale and on the separation itself, and the 1/2-crossings against sigma with
    the held-out predictions.  A figure the tables cannot give is not drawn, and
    :func:`mixreg.plotting.not_drawn` says why: both need a realised separation (none with
    ``--k 1``), the collapse needs it at two r values or more.
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
    test_text = (f"Do the noise levels differ? Exact test stratified by r ({test_text}): "
                 f"{'; '.join(sorted({row['verdict'] for row in tests.values()}))}." if tests else "")
    setup = (f"{config.preset}: k={config.k}, m={config.m}, n={config.n}, d={config.d}, T={config.n_rounds}, "
             f"{config.n_inits} inits x step sizes {list(config.step_sizes)}, {config.trials} trials per point, "
             f"{config.dtype}; theta* protocol '{config.protocol}', init '{config.init}' (random, no resampling: "
             f"outside Theorem 1's assumptions). Success: distance < 0.6 sigma + {config.threshold_offset:g}.")
    fig = plot_success_vs_separation(
        rates, rules=CHECKED_RULES,
        r_per_delta=r_per_delta if _given(r_per_delta) else None,
        ceiling=not trivial,
        predicted_ceiling=None if trivial else ("known-label LS success probability, predicted before the runs",
                                                predicted),
        title=f"IFCA success probability vs separation (k = {config.k}, m = {config.m}, n = {config.n}, "
              f"d = {config.d})",
        footnote=" ".join(t for t in (setup, oracle_text, test_text,
                                      f"Scales and held-out checks: {NAME}_collapse.png." if len(separations) > 1
                                      else "") if t),
    )
    paths = save_figure(fig, pathlib.Path(outdir) / NAME)
    if len(separations) < 2:
        not_drawn(f"{NAME}_collapse", "the collapse panels and the 1/2-crossings need the success rate at two "
                                      f"separations or more; got {_flag('rs', sorted(separations))}")
        return paths

    rule = "official"

    def verdict(name):
        every, noisy = select(f"collapse_{name}", rule=rule)[0], select(f"collapse_{name}_noisy", rule=rule)
        crossings = select("half_crossing" if name == "delta" else "half_crossing_scaled", rule=rule)
        values = ", ".join(f"σ={row_['sigma']:g}: {_fmt(row_['value'])}" for row_ in crossings)
        text = (f"1/2-crossings {values}\nall σ: {every['verdict']} (spread ×{_fmt(every['value'])}, common range "
                f"[{_fmt(every['low'])}, {_fmt(every['high'])}])")
        if noisy and any(row_["sigma"] == 0 for row_ in crossings):
            text += (f"\nσ > 0: {noisy[0]['verdict']} (spread ×{_fmt(noisy[0]['value'])}, common range "
                     f"[{_fmt(noisy[0]['low'])}, {_fmt(noisy[0]['high'])}])")
        return text

    scale = {row["sigma"]: row["value"] for row in select("separation_scale")}
    scales = [
        dict(divisor=scale, xlabel="Δ / Δ_sep(σ)   (Δ_sep: root of the separation condition, unit constants)",
             title="scale suggested by Thm 1's separation condition\n(unit constants, n' = n; outside its "
                   "assumptions: random init, no resampling)",
             verdict=verdict("separation_scale")),
        dict(divisor={s: 1.0 for s in scale}, xlabel="realised separation Δ",
             title="σ-free scale Δ (prediction: σ² adds alike to every model's loss,\nand σ ≪ initial "
                   "distance ≈ √(d/2), so σ should not matter)", verdict=verdict("delta")),
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
                         + ", ".join(f"σ={row['sigma']:g} {_fmt(row['residual'])} [{_fmt(row['low'])}, "
                                     f"{_fmt(row['high'])}] {row['verdict']}" for row in rows))
    footnote = (f"{setup} Official rule. Both x-scales are fixed before the runs. Crossing intervals: 95%, from "
                f"Jeffreys-posterior draws of every cell. Held-out residuals log10(predicted/observed crossing) "
                f"[95% interval]: {'; '.join(residuals)}. {test_text}")
    fig = plot_success_collapse(
        rates, scales, rule=rule, crossings=crossings, held_out=held,
        title=f"Do the noise levels collapse on a predicted scale? (k = {config.k}, m = {config.m}, n = {config.n}, "
              f"d = {config.d})",
        footnote=footnote,
    )
    return paths + save_figure(fig, pathlib.Path(outdir) / f"{NAME}_collapse")
