"""success_vs_mn's figures: success against m per n, and the (m, n) heatmap, with the prediction shaded.

:func:`draw` makes them from the tables of :func:`.summary.summarise` alone (so ``--redraw``
repeats them exactly).
"""

from __future__ import annotations

import pathlib

import matplotlib.lines
import matplotlib.patches
import matplotlib.ticker
import numpy as np

from mixreg.methods import RULES, method_label, rule_title
from mixreg.plotting import plain_tick, save_figure
import matplotlib.pyplot as plt

from .summary import EDGE_PROBABILITY, NAME, PAPER_R, RULES_DRAWN

__all__ = ["draw", "plot_success_vs_m", "plot_success_heatmap"]

_REGION = ("known-label LS RMS error > threshold (prediction, before the runs): success improbable "
           "even with the true labels (the edge cells' predicted probability: footnote)")


def _grid(summary):
    return (sorted({row["r"] for row in summary}), sorted({row["n"] for row in summary}),
            sorted({row["m"] for row in summary}))


def _colours(ns):
    return dict(zip(ns, plt.get_cmap("viridis")(np.linspace(0.0, 0.8, max(len(ns), 1)))))


def _separation(summary, r):
    values = [row["separation_mean"] for row in summary if row["r"] == r and row.get("separation_mean") is not None]
    return float(np.mean(values)) if values else float("nan")


def _panel_title(rule, r, summary, paper_r=None):
    delta = _separation(summary, r)
    return (f"{rule_title(rule)}\nr = {r:g}" + (f"  (Δ ≈ {delta:.3g})" if np.isfinite(delta) else "")
            + ("  — the paper's panel" if paper_r is not None and np.isclose(r, paper_r) else ""))


def _layout_bottom(fig, footnote, legend_lines):
    """Figure fractions: where the legend sits (above the footnote) and where the panels start."""
    height = fig.get_figheight()
    note = (0.12 + 0.11 * (len(footnote) // 230 + 1)) / height if footnote else 0.0
    return note, note + (0.16 * legend_lines + 0.15) / height


def plot_success_vs_m(summary, predictions, *, rules=("official", "honest", "oracle"), paper_r=None, title=None,
                      footnote=None):
    """Success probability against ``m``, one curve per ``n``, one panel per (rule, r).

    Parameters
    ----------
    summary : list of dict
        One row per (r, n, m) with ``r``, ``n``, ``m``, ``separation_mean`` and, for each rule,
        ``<rule>_success_rate/_low/_high`` (95% Wilson intervals), see
        :func:`mixreg.stats.group_rates`.
    predictions : list of dict
        One row per (m, n) with ``m``, ``n``, ``m_needed`` (the m below which the known-label
        least-squares RMS error exceeds the threshold, for that n) and
        ``oracle_success_probability``: predictions fixed before the runs.  The region
        ``m < m_needed(n)`` is shaded in the colour of n (a dotted line at its edge), and the
        predicted oracle success probability is drawn (hollow markers) in the oracle's panels.
    rules : sequence of str
        One row of panels per rule, titled by :func:`mixreg.plotting.rule_title`.
    paper_r : float, optional
        The r the paper's figure plots; its panels' titles say so.
    title, footnote : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    rs, ns, ms = _grid(summary)
    colours = _colours(ns)
    needed = {row["n"]: row["m_needed"] for row in predictions}
    fig, axes = plt.subplots(len(rules), len(rs), figsize=(5.6 * len(rs), 3.9 * len(rules)), sharex=True,
                             sharey=True, squeeze=False)
    lo_x, hi_x = min(ms) / 1.15, max(ms) * 1.15
    for i, rule in enumerate(rules):
        style = RULES.get(rule, RULES["official"])
        for j, r in enumerate(rs):
            ax = axes[i][j]
            for n in ns:
                rows = sorted((row for row in summary if row["r"] == r and row["n"] == n), key=lambda row: row["m"])
                x = np.array([row["m"] for row in rows], dtype=float)
                y, lo, hi = (np.array([row[f"{rule}_success_{part}"] for row in rows], dtype=float)
                             for part in ("rate", "low", "high"))
                ax.plot(x, y, marker=style.marker, ls=style.linestyle, color=colours[n], lw=1.8, ms=4)
                ax.fill_between(x, lo, hi, color=colours[n], alpha=0.15, lw=0)
                edge = needed.get(n, np.nan)
                if np.isfinite(edge) and edge > lo_x:
                    ax.axvspan(lo_x, min(edge, hi_x), color=colours[n], alpha=0.07, lw=0)
                    if edge < hi_x:
                        ax.axvline(edge, color=colours[n], ls=":", lw=1.4)
                if rule == "oracle":
                    pred = sorted((row["m"], row["oracle_success_probability"]) for row in predictions if row["n"] == n)
                    ax.plot([p[0] for p in pred], [p[1] for p in pred], ls="--", lw=0.9, marker="o", ms=6,
                            mfc="none", color=colours[n])
            ax.set_xscale("log")
            ax.set_xlim(lo_x, hi_x)
            ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ms))
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
            ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            ax.set_ylim(-0.03, 1.03)
            ax.grid(True, alpha=0.25)
            ax.set_title(_panel_title(rule, r, summary, paper_r), fontsize=9)
            if i == len(rules) - 1:
                ax.set_xlabel("number of clients m")
            if j == 0:
                who = method_label("ls", short=True) if rule == "oracle" else method_label("ifca", short=True)
                ax.set_ylabel(f"{who} success probability\n(95% Wilson band)")
    handles = [matplotlib.lines.Line2D([], [], color=colours[n], marker="o", lw=1.8, ms=4,
                                       label=f"n = {n} points per client") for n in ns]
    handles.append(matplotlib.patches.Patch(color="0.5", alpha=0.2,
                                            label=_REGION.replace(": ", ":\n", 1)
                                            + ";\nshaded in the colour of n, left of its m_needed(n)"))
    handles.append(matplotlib.lines.Line2D([], [], color="0.3", ls=":", lw=1.4,
                                           label="m_needed(n): LS RMS error = threshold"))
    if "oracle" in rules:
        handles.append(matplotlib.lines.Line2D([], [], color="0.3", ls="--", lw=0.9, marker="o", mfc="none",
                                               label="oracle success probability predicted\nfrom the sizes "
                                                     "(before the runs)"))
    ncol = max(len(ns), 3)
    legend_at, bottom = _layout_bottom(fig, footnote, 3 * ((len(handles) + ncol - 1) // ncol))
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=ncol, frameon=False,
               bbox_to_anchor=(0.5, legend_at))
    if title:
        fig.suptitle(title, fontsize=11)
    if footnote:
        fig.text(0.01, 0.005, footnote, fontsize=7, va="bottom", ha="left", wrap=True)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def plot_success_heatmap(summary, predictions, *, rules=("official", "honest", "oracle"), paper_r=None, title=None,
                         footnote=None):
    """Success rate over the (m, n) grid, one panel per (rule, r), the predicted region hatched.

    Parameters
    ----------
    summary : list of dict
        As :func:`plot_success_vs_m`.
    predictions : list of dict
        One row per (m, n) with ``m``, ``n`` and ``ls_unlikely`` (the known-label least-squares
        RMS error exceeds the threshold: a prediction fixed before the runs); those cells are
        hatched.
    rules : sequence of str
    paper_r : float, optional
        As :func:`plot_success_vs_m`.
    title, footnote : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    rs, ns, ms = _grid(summary)
    unlikely = {(row["m"], row["n"]) for row in predictions if row["ls_unlikely"]}
    fig, axes = plt.subplots(len(rules), len(rs), figsize=(0.75 * len(ms) * len(rs) + 2.2, 2.5 * len(rules) + 1.2),
                             squeeze=False)
    image = None
    for i, rule in enumerate(rules):
        for j, r in enumerate(rs):
            ax = axes[i][j]
            grid = np.full((len(ns), len(ms)), np.nan)
            for row in summary:
                if row["r"] == r:
                    grid[ns.index(row["n"]), ms.index(row["m"])] = row[f"{rule}_success_rate"]
            image = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
            for a, n in enumerate(ns):
                for b, m in enumerate(ms):
                    value = grid[a, b]
                    if np.isfinite(value):
                        ax.text(b, a, f"{value:.2f}", ha="center", va="center", fontsize=7,
                                color="black" if value > 0.6 else "white")
                    if (m, n) in unlikely:
                        ax.add_patch(matplotlib.patches.Rectangle((b - 0.5, a - 0.5), 1, 1, fill=False, hatch="//",
                                                                  edgecolor=(1, 1, 1, 0.45), lw=0))
            ax.set_xticks(range(len(ms)), [str(m) for m in ms], fontsize=8)
            ax.set_yticks(range(len(ns)), [str(n) for n in ns], fontsize=8)
            ax.set_title(_panel_title(rule, r, summary, paper_r), fontsize=9)
            if i == len(rules) - 1:
                ax.set_xlabel("number of clients m")
            if j == 0:
                ax.set_ylabel("points per client n")
    handles = [matplotlib.patches.Patch(facecolor="none", edgecolor="0.4", hatch="///", label=_REGION)]
    legend_at, bottom = _layout_bottom(fig, footnote, 1)
    fig.legend(handles=handles, fontsize=8, loc="lower center", frameon=False, bbox_to_anchor=(0.5, legend_at))
    if title:
        fig.suptitle(title, fontsize=10)
    if footnote:
        fig.text(0.01, 0.005, footnote, fontsize=7, va="bottom", ha="left", wrap=True)
    fig.tight_layout(rect=(0, bottom, 0.92, 1))
    if image is not None:
        cax = fig.add_axes((0.93, bottom + 0.05, 0.015, 0.8 - bottom))
        fig.colorbar(image, cax=cax, label="success rate")
    return fig


def _prediction_check(rates, theory, paper_r=None):
    """Text: the success rates seen inside the predicted region, per r (the paper's first): the
    highest over the cells deep inside (predicted oracle success probability below
    :data:`EDGE_PROBABILITY`), and each edge cell's rates beside its predicted probability."""
    region = {(row["m"], row["n"]): row["oracle_success_probability"] for row in theory if row["ls_unlikely"]}
    if not region:
        return "The predicted region is empty on this grid."
    deep = {key for key, p in region.items() if p < EDGE_PROBABILITY}
    edge = sorted((key for key in region if key not in deep), key=lambda key: (key[1], key[0]))
    rs = sorted({row["r"] for row in rates}, key=lambda r: (paper_r is None or not np.isclose(r, paper_r), r))

    def seen(row):
        return ", ".join(f"{rule} {row[f'{rule}_success_rate']:.2g}" for rule in RULES_DRAWN)

    parts = []
    for r in rs:
        at = {(row["m"], row["n"]): row for row in rates if row["r"] == r}
        pieces = []
        inside = [at[key] for key in deep if key in at]
        if inside:
            highest = {f"{rule}_success_rate": max(row[f"{rule}_success_rate"] for row in inside) for rule in RULES_DRAWN}
            pieces.append(f"{len(inside)} cells deep inside (predicted oracle success < {EDGE_PROBABILITY:g}), "
                          f"highest {seen(highest)}")
        pieces += [f"edge cell (m, n) = ({m}, {n}), predicted oracle {region[m, n]:.2g}: {seen(at[m, n])}"
                   for m, n in edge if (m, n) in at]
        mark = " (the paper's)" if paper_r is not None and np.isclose(r, paper_r) else ""
        parts.append(f"r = {r:g}{mark}: " + "; ".join(pieces))
    return "Seen inside it: " + ". ".join(parts) + "."


def _crossing_text(row, rates):
    """The official rule's 1/2-crossing in m, or where it lies when the grid does not hold it."""
    if row["m_half"] is not None and np.isfinite(row["m_half"]):
        return _fmt(row["m_half"])
    curve = sorted((r_ for r_ in rates if r_["r"] == row["r"] and r_["n"] == row["n"]), key=lambda r_: r_["m"])
    if curve and curve[0]["official_success_rate"] >= 0.5:
        return f"below the grid (rate {curve[0]['official_success_rate']:.2g} at m = {curve[0]['m']})"
    return f"beyond the grid (rate {curve[-1]['official_success_rate']:.2g} at m = {curve[-1]['m']})" if curve else "–"


def _fmt(value):
    return "–" if value is None or not np.isfinite(value) else f"{value:.3g}"


def draw(config, tables, outdir):
    """The two figures, from the tables of :func:`summarise` only; returns the paths written."""
    rates, theory, crossings = tables["rates"], tables["theory"], tables["crossings"]
    setup = (f"{config.preset}: k={config.k}, d={config.d}, sigma={config.sigma:g}, T={config.n_rounds}, "
             f"{config.n_inits} inits x step sizes {list(config.step_sizes)}, {config.trials} trials per point, "
             f"{config.dtype}; theta* protocol '{config.protocol}' (r per coordinate, Δ ≈ r √(d/2)), init "
             f"'{config.init}'. Success: distance < 0.6 sigma"
             + (f" + {config.threshold_offset:g}." if config.threshold_offset else " (strict, no offset: the official "
                                                                               "m-n sweeps)."))
    offset = f" + {config.threshold_offset:g}" if config.threshold_offset else ""
    paper_r = PAPER_R.get(config.preset)
    shading = (f"Shaded / hatched: PREDICTION made from the sizes before the runs: known-label LS RMS error "
               f"σ√(d/(N−d−1)) > 0.6σ{offset} with N = "
               f"m n / k, i.e. m below m_needed(n) = k (d + 1 + d σ²/t²) / n (dotted). "
               + _prediction_check(rates, theory, paper_r))
    official = [row for row in crossings if row["rule"] == "official"]
    half = "; ".join(f"r={row['r']:g}, n={row['n']}: {_crossing_text(row, rates)} (needed {row['m_needed']:.3g})"
                     for row in official)
    footnote = f"{setup} {shading} Official rule crosses 1/2 at m = {half}."
    title = (f"IFCA success probability vs clients m and points per client n (k = {config.k}, d = {config.d}, "
             f"σ = {config.sigma:g})")
    fig = plot_success_vs_m(rates, theory, rules=RULES_DRAWN, paper_r=paper_r, title=title, footnote=footnote)
    paths = save_figure(fig, pathlib.Path(outdir) / NAME)
    fig = plot_success_heatmap(rates, theory, rules=RULES_DRAWN, paper_r=paper_r, title=title,
                               footnote=f"{setup} {shading}")
    return paths + save_figure(fig, pathlib.Path(outdir) / f"{NAME}_heatmap")
