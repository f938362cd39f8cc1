"""success_vs_mn's figures: success against m per n, and the (m, n) heatmap, with the prediction shaded.

:func:`draw` makes them from the tables of :func:`.summary.summarise` alone (so ``--redraw``
repeats them exactly), each with its caption file (``<figure>.caption.txt``: the setup, what is
predicted and what the predicted region holds); :func:`plot_success_vs_m` and
:func:`plot_success_heatmap` draw in the current style (:func:`mixreg.plotting.use_style`), into
the axes given or a figure of their own.
"""

from __future__ import annotations

import pathlib

import matplotlib as mpl
import matplotlib.lines
import matplotlib.patches
import matplotlib.ticker
import numpy as np

from mixreg.methods import RULES, method_label, rule_title
from mixreg.plotting import (MIN_PANEL_WIDTH, axes_for, axes_width, figure_width, finish_panels, legend_above,
                             plain_tick, save_figure)
import matplotlib.pyplot as plt

from .summary import EDGE_PROBABILITY, NAME, PAPER_R, RULES_DRAWN

__all__ = ["draw", "plot_success_vs_m", "plot_success_heatmap"]

_REGION = "LS RMS error > threshold (prediction, before the runs)"

NBSP = "\u00a0"  # a space a title is not broken at (mixreg.plotting.wrap_text)

#: Each panel's height over its width, titles and labels apart.
_ASPECT = 0.7


def _grid(summary):
    return (sorted({row["r"] for row in summary}), sorted({row["n"] for row in summary}),
            sorted({row["m"] for row in summary}))


def _colours(ns):
    return dict(zip(ns, plt.get_cmap("viridis")(np.linspace(0.0, 0.8, max(len(ns), 1)))))


def _separation(summary, r):
    values = [row["separation_mean"] for row in summary if row["r"] == r and row.get("separation_mean") is not None]
    return float(np.mean(values)) if values else float("nan")


def _panel_title(rule, r, summary, paper_r=None):
    """``official rule`` / ``r = 0.1 (Δ ≈ 2.24)`` / ``the paper's panel``, one line each: the
    rule's short name (its full description is in the caption; the oracle's names whose success
    it is, known-label LS, the other rules' being IFCA's), the r value and its separation, and
    whether it is the paper's."""
    delta = _separation(summary, r)
    name = RULES[rule].short if rule in RULES else rule
    who = f"{method_label('ls', short=True)} ({name})" if rule == "oracle" else f"{name} rule"
    scale = f"r = {r:g}" + (f" (Δ{NBSP}≈{NBSP}{delta:.3g})" if np.isfinite(delta) else "")
    paper = f"\nthe{NBSP}paper's{NBSP}panel" if paper_r is not None and np.isclose(r, paper_r) else ""
    return f"{who}\n{scale}{paper}"


def _x_rotation(panel, positions, labels):
    """90 when the tick labels at ``positions`` (in axes fractions) would touch each other side by
    side, else 0."""
    size = mpl.font_manager.FontProperties(size=mpl.rcParams["xtick.labelsize"]).get_size_in_points()
    gap = np.min(np.diff(np.sort(positions))) * axes_width(panel) * 72.0 if len(positions) > 1 else np.inf
    return 90 if gap < 0.62 * size * max(len(label) for label in labels) + 2.0 else 0


def _rate(value):
    """A cell's rate in at most three characters: ``0``, ``.55``, ``1``."""
    return f"{value:.0f}" if value in (0.0, 1.0) else f"{value:.2f}".lstrip("0")


def _edges(ax, axes):
    """Whether ``ax`` is in the bottom row and in the first column of its grid (both when the
    caller's axes have no grid)."""
    spec = ax.get_subplotspec()
    if spec is None:
        return True, True
    return spec.is_last_row() or _nothing_below(ax, axes), spec.is_first_col()


def _nothing_below(ax, axes):
    spec = ax.get_subplotspec()
    return not any(other.get_subplotspec() is not None
                   and other.get_subplotspec().rowspan.start > spec.rowspan.start
                   and other.get_subplotspec().colspan.start == spec.colspan.start for other in axes)


def _panels(ax, rules, rs, *, name, **new_figure_kw):
    """The figure and its panels, one per (r, rule) in the order of ``[(r, rule) for r in rs for
    rule in rules]``: the caller's axes in that order, or a figure made here with the rules as
    columns and the r values as rows; when the rules' columns would be narrower than
    :data:`mixreg.plotting.MIN_PANEL_WIDTH` (a one-column figure), the grid is transposed: the
    rules as rows, the r values as columns."""
    n = len(rules) * len(rs)
    across = len(rules) if ax is not None or figure_width() // MIN_PANEL_WIDTH >= len(rules) else len(rs)
    fig, axes, own = axes_for(ax, n, name=name, max_cols=across, **new_figure_kw)
    if own and across != len(rules):  # reading order is (rule, r): put it in (r, rule) order
        axes = [axes[len(rs) * i + j] for j in range(len(rs)) for i in range(len(rules))]
    return fig, axes, own


def _finish(fig, axes, own, title, footnote, ticks):
    """A figure made here: laid out once (so that the panels' widths are the layout's), the
    panels' titles wrapped, ``title`` above, the panels kept at their aspect, the one-line
    ``footnote``.  The caller's axes: their titles wrapped, nothing else.  Either way, the x tick
    labels upright when they fit side by side (``ticks``: each panel's tick positions in axes
    fractions and labels)."""
    if own:
        fig.draw_without_rendering()
    for ax in axes:
        ax.tick_params(axis="x", labelrotation=_x_rotation(ax, *ticks))
    finish_panels(fig, axes, own=own, title=title, footnote=footnote, aspect=_ASPECT)


def plot_success_vs_m(summary, predictions, *, rules=("official", "honest", "oracle"), paper_r=None, ax=None,
                      title=None, footnote=None):
    """Success probability against ``m``, one curve per ``n``, one panel per (r, rule).

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
        One column of panels per rule (one row on a figure too narrow for them side by side,
        such as the ``"one-column"`` style's), titled by the rule's short name (its full
        description, :func:`mixreg.plotting.rule_title`, belongs in the caption); one row per
        r value.
    paper_r : float, optional
        The r the paper's figure plots; its panels' titles say so.
    ax : sequence of Axes, optional
        ``len(r values) * len(rules)`` Axes in the order ``(r, rule) for r in r values for rule
        in rules`` (a grid of one row per r value and one column per rule, in reading order);
        ``None``: a figure of its own in the current style
        (:func:`mixreg.plotting.new_figure`), its legend above the panels.
    title : str, optional
        The figure's title (a figure made here only).
    footnote : str, optional
        A one-line footnote (a figure made here only); long notes belong in the caption file.

    Returns
    -------
    dict
        ``figure``, ``axes`` (in the order of ``ax``), ``legend`` (above the panels, or in the
        last of the caller's axes); ``lines`` and ``bands``: ``(rule, r, n)`` to its Line2D and
        band; ``edges``: ``(rule, r, n)`` to the dotted line at ``m_needed(n)``; ``predicted``:
        ``(r, n)`` to the line of the predicted oracle probability.
    """
    rs, ns, ms = _grid(summary)
    colours = _colours(ns)
    needed = {row["n"]: row["m_needed"] for row in predictions}
    fig, axes, own = _panels(ax, rules, rs, name="plot_success_vs_m", sharex=True, sharey=True, aspect=_ASPECT)
    width = mpl.rcParams["lines.linewidth"]
    drawn = dict(figure=fig, axes=axes, lines={}, bands={}, edges={}, predicted={})
    lo_x, hi_x = min(ms) / 1.15, max(ms) * 1.15
    for panel, (r, rule) in zip(axes, [(r, rule) for r in rs for rule in rules]):
        style = RULES.get(rule, RULES["official"])
        for n in ns:
            rows = sorted((row for row in summary if row["r"] == r and row["n"] == n), key=lambda row: row["m"])
            x = np.array([row["m"] for row in rows], dtype=float)
            y, lo, hi = (np.array([row[f"{rule}_success_{part}"] for row in rows], dtype=float)
                         for part in ("rate", "low", "high"))
            drawn["lines"][rule, r, n], = panel.plot(x, y, marker=style.marker, ls=style.linestyle,
                                                     color=colours[n])
            drawn["bands"][rule, r, n] = panel.fill_between(x, lo, hi, color=colours[n], alpha=0.15, lw=0)
            edge = needed.get(n, np.nan)
            if np.isfinite(edge) and edge > lo_x:
                panel.axvspan(lo_x, min(edge, hi_x), color=colours[n], alpha=0.07, lw=0)
                if edge < hi_x:
                    drawn["edges"][rule, r, n] = panel.axvline(edge, color=colours[n], ls=":")
            if rule == "oracle":
                pred = sorted((row["m"], row["oracle_success_probability"]) for row in predictions if row["n"] == n)
                drawn["predicted"][r, n], = panel.plot([p[0] for p in pred], [p[1] for p in pred], ls="--",
                                                       lw=0.6 * width, marker="o", mfc="none", color=colours[n])
        panel.set_xscale("log")
        panel.set_xlim(lo_x, hi_x)
        panel.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(ms))
        panel.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
        panel.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        panel.set_ylim(-0.03, 1.03)
        panel.grid(True, alpha=0.25)
        panel.set_title(_panel_title(rule, r, summary, paper_r))
        bottom, left = _edges(panel, axes)
        if bottom:
            panel.set_xlabel("number of clients m")
        if left:
            panel.set_ylabel("success probability")
    handles = [matplotlib.lines.Line2D([], [], color=colours[n], marker="o", label=f"n = {n} points per client")
               for n in ns]
    handles.append(matplotlib.patches.Patch(color="0.5", alpha=0.2, label=f"{_REGION}, left of m_needed(n)"))
    handles.append(matplotlib.lines.Line2D([], [], color="0.3", ls=":", label="m_needed(n): LS RMS error = threshold"))
    if "oracle" in rules:
        handles.append(matplotlib.lines.Line2D([], [], color="0.3", ls="--", lw=0.6 * width, marker="o", mfc="none",
                                               label="oracle success probability (prediction, before the runs)"))
    drawn["legend"] = (legend_above(fig, handles, max_cols=2) if own
                       else axes[-1].legend(handles=handles, loc="lower right", fontsize="x-small"))
    ticks = np.log(np.asarray(ms, dtype=float) / lo_x) / np.log(hi_x / lo_x)
    _finish(fig, axes, own, title, footnote, (ticks, [plain_tick(m) for m in ms]))
    return drawn


def plot_success_heatmap(summary, predictions, *, rules=("official", "honest", "oracle"), paper_r=None, ax=None,
                         title=None, footnote=None):
    """Success rate over the (m, n) grid, one panel per (r, rule), the predicted region hatched.

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
    ax : sequence of Axes, optional
        As :func:`plot_success_vs_m` (one row per r value, one column per rule).  With the
        caller's axes the function adds no colour bar and no hatch legend: the caller adds
        them from the ``"image"`` and ``"handles"`` returned (see Notes).
    title, footnote : str, optional
        As :func:`plot_success_vs_m`.

    Returns
    -------
    dict
        ``figure``, ``axes`` (in the order of ``ax``), ``legend``: the hatch legend above the
        panels, ``None`` with the caller's axes; ``colorbar``: beside the panels (under them on
        a figure narrower than 5 in), ``None`` with the caller's axes; ``image``: the last
        panel's image (its colour scale is every panel's, 0 to 1); ``images``: ``(rule, r)`` to
        its image; ``handles``: the hatch legend's handles.

    Notes
    -----
    Each cell shows its rate in at most three characters (``0``, ``.55``, ``1``), in the
    ``"small"`` font size, smaller only where a cell is too narrow for it.

    Drawn into the caller's axes, the panels carry no colour scale and no key to the hatching;
    add them, for instance, with ``fig.colorbar(drawn["image"], ax=axes, label="success
    rate")`` and ``fig.legend(handles=drawn["handles"], loc="outside upper center")``.
    """
    rs, ns, ms = _grid(summary)
    unlikely = {(row["m"], row["n"]) for row in predictions if row["ls_unlikely"]}
    fig, axes, own = _panels(ax, rules, rs, name="plot_success_heatmap", aspect=_ASPECT)
    drawn = dict(figure=fig, axes=axes, images={}, image=None, legend=None, colorbar=None)
    numbers = {}  # panel: its cells' texts, sized to the cells once the panels are laid out
    for panel, (r, rule) in zip(axes, [(r, rule) for r in rs for rule in rules]):
        grid = np.full((len(ns), len(ms)), np.nan)
        for row in summary:
            if row["r"] == r:
                grid[ns.index(row["n"]), ms.index(row["m"])] = row[f"{rule}_success_rate"]
        drawn["images"][rule, r] = drawn["image"] = panel.imshow(
            grid, origin="lower", cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        for a, n in enumerate(ns):
            for b, m in enumerate(ms):
                value = grid[a, b]
                if np.isfinite(value):
                    numbers.setdefault(panel, []).append(panel.text(b, a, _rate(value), ha="center", va="center",
                                                                    color="black" if value > 0.6 else "white"))
                if (m, n) in unlikely:
                    panel.add_patch(matplotlib.patches.Rectangle((b - 0.5, a - 0.5), 1, 1, fill=False,
                                                                 hatch="//", edgecolor=(1, 1, 1, 0.45), lw=0))
        panel.set_xticks(range(len(ms)), [str(m) for m in ms])
        panel.set_yticks(range(len(ns)), [str(n) for n in ns])
        panel.set_title(_panel_title(rule, r, summary, paper_r))
        bottom, left = _edges(panel, axes)
        if bottom:
            panel.set_xlabel("number of clients m")
        if left:
            panel.set_ylabel("points per client n")
    drawn["handles"] = [matplotlib.patches.Patch(facecolor="none", edgecolor="0.4", hatch="///", label=_REGION)]
    if own:
        drawn["legend"] = legend_above(fig, drawn["handles"])
        if drawn["image"] is not None:
            beside = fig.get_figwidth() >= 5.0  # on a narrow figure, under the panels: they keep the width
            drawn["colorbar"] = fig.colorbar(drawn["image"], ax=axes, label="success rate", shrink=0.9 if beside else 0.7,
                                             location="right" if beside else "bottom", aspect=20 if beside else 30)
    _finish(fig, axes, own, title, footnote, ((np.arange(len(ms)) + 0.5) / len(ms), [str(m) for m in ms]))
    small = mpl.font_manager.FontProperties(size="small").get_size_in_points()
    for panel, texts in numbers.items():
        cell = axes_width(panel) * 72.0 / len(ms) * (1.0 if own else 0.85)  # points across a cell
        for text in texts:
            text.set_fontsize(min(small, cell / 2.0))  # ".55": 1.6 em, and a margin
    return drawn


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
    """The two figures, from the tables of :func:`summarise` only; returns the paths written.

    Each keeps a one-line footnote; its full notes (the setup, the prediction and what the
    predicted region holds, the crossings of 1/2) are its caption file (``<figure>.caption.txt``,
    :func:`mixreg.plotting.save_figure`).
    """
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
               f"m n / k, i.e. m below m_needed(n) = k (d + 1 + d σ²/t²) / n (dotted): success is improbable there "
               f"even with the true labels. " + _prediction_check(rates, theory, paper_r))
    official = [row for row in crossings if row["rule"] == "official"]
    half = "; ".join(f"r={row['r']:g}, n={row['n']}: {_crossing_text(row, rates)} (needed {row['m_needed']:.3g})"
                     for row in official)
    rules = "; ".join(f"{RULES[rule].short}: {rule_title(rule)}" for rule in RULES_DRAWN if rule in RULES)
    title = f"IFCA success probability vs clients m and points per client n (k = {config.k}, d = {config.d}, " \
            f"σ = {config.sigma:g})"
    shown = (f"{title}. One panel per success rule ({rules}) and separation scale r"
             + (f" (r = {paper_r:g} is the paper's panel)" if paper_r is not None else "") + ". ")
    footnote = f"{config.trials} trials per point; shaded: predicted before the runs; bands: 95% Wilson intervals"
    drawn = plot_success_vs_m(rates, theory, rules=RULES_DRAWN, paper_r=paper_r, title=title, footnote=footnote)
    caption = (f"{shown}Curves: success rate against the number of clients m, one per points per client n, "
               f"with 95% Wilson bands; hollow markers in the oracle's panels: its success probability predicted "
               f"from the sizes before the runs. {setup} {shading} Official rule crosses 1/2 at m = {half}.")
    paths = save_figure(drawn["figure"], pathlib.Path(outdir) / NAME, caption=caption)
    drawn = plot_success_heatmap(rates, theory, rules=RULES_DRAWN, paper_r=paper_r, title=title,
                                 footnote=f"{config.trials} trials per cell; hatched: predicted before the runs")
    caption = f"{shown}Cells: the success rate at each (m, n). {setup} {shading}"
    return paths + save_figure(drawn["figure"], pathlib.Path(outdir) / f"{NAME}_heatmap", caption=caption)
