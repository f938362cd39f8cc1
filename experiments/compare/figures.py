"""The comparison's figures: one per regime, every method's error, misclustering, rounds,
communication and wall time side by side, drawn from ``summary.csv`` alone (:func:`draw`).

:func:`plot_comparison` is this study's figure, not a library one: its panels are the metrics
of :data:`.trial.METRICS` (communication as ``upload + download``, misclustering on the k = 2
chance scale) and its rows every method of the table: those of the registry's comparison view
(:data:`mixreg.methods.COMPARE`) in that view's order, then any other (a user's method) in the
table's order, in its registered or automatic style (:func:`mixreg.methods.styles_for`).
"""

from __future__ import annotations

import pathlib

import matplotlib as mpl
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from mixreg.methods import COMPARE, styles_for
from mixreg.plotting import MIN_PANEL_WIDTH, figure_width, save_figure

from ..ifca_mechanism.figures import finish, panels, result
from .summary import NAME
from .trial import REGIMES, STEPS, TOL, spec_of

__all__ = ["draw", "plot_comparison"]

# (column of the summary, x label, log scale) of each panel; a panel may draw two columns
_PANELS = (
    (("err_mean", "err_max"), "matched error\n● mean, × max", True),
    (("mis_clients", "mis_points"), "misclustering\n● clients, × points", False),
    (("rounds",), "rounds run", False),
    (("floats",), "floats per client", True),
    (("time",), "wall time (s)", True),
)
# What each panel shows, for the caption
_CAPTIONS = ("permutation-matched error (dot: mean over clusters, cross: max)",
             "misclustering (dot: clients, cross: points)", "rounds run (to the tolerance or the cap)",
             "floats per client, upload + download", "wall time of the batched call in seconds")


def plot_comparison(rows, *, ax=None, title=None, footnote=None):
    """One panel per metric for one regime: every method's error, misclustering, rounds,
    communication and wall time, from the study's summary table.

    Parameters
    ----------
    rows : list of dict
        One per method (the regime's rows of ``summary.csv``), each drawn: ``method`` and, for each column
        ``c`` of the panels, ``c_mean`` with ``c_low`` / ``c_high`` (95% interval of the mean;
        drawn as a bar when present).  ``floats`` is ``upload_mean + download_mean``.
        ``refused`` (trials the method refused, noted on its row) and ``refusal`` (the reason,
        returned as ``notes`` for the caption: :func:`draw` writes them into the caption file,
        never into the figure) when present.
    ax : sequence of 5 Axes, optional
        The panels (error, misclustering, rounds, floats, wall time); default: a new figure with
        the methods named on the left of each row of panels.
    title, footnote : str, optional
        Drawn on a new figure only; ``footnote`` is one short line (long notes belong in the
        caption file).

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend`` (None: the methods are named on the y axis),
        ``methods`` (top to bottom) and ``notes`` (one sentence per refusal with its reason).
    """
    order = {method: i for i, method in enumerate(COMPARE)}
    rows = sorted(rows, key=lambda row: order.get(row["method"], len(order)))  # stable: others in table order
    styles = styles_for([row["method"] for row in rows], view=COMPARE)
    y = np.arange(len(rows))[::-1]
    n = len(_PANELS)
    cols = max(1, min(n, int(figure_width() // MIN_PANEL_WIDTH)))
    cols = -(-n // -(-n // cols))               # as few empty cells as the rows allow
    line = mpl.font_manager.FontProperties(size=mpl.rcParams["ytick.labelsize"]).get_size_in_points() / 72.0
    aspect = max(0.5, 1.9 * line * (len(rows) + 1) / (figure_width() / cols))
    fig, axes, own = panels(ax, n, aspect=aspect, sharey=ax is None)
    ms = mpl.rcParams["lines.markersize"]
    for a, (columns, xlabel, log) in zip(axes, _PANELS):
        for j, column in enumerate(columns):
            for yi, row in zip(y, rows):
                style = styles[row["method"]]
                value = _value(row, column)
                if not np.isfinite(value) or (log and value <= 0):
                    continue
                low, high = row.get(f"{column}_low"), row.get(f"{column}_high")
                if low is not None and high is not None and np.isfinite(low) and np.isfinite(high):
                    low = max(low, value / 10) if log else low  # a normal interval may reach below 0
                    a.plot([low, high], [yi + 0.15 * j, yi + 0.15 * j], color=style.color, lw=0.9)
                a.plot(value, yi + 0.15 * j, marker="o" if j == 0 else "x", color=style.color, ms=ms, mew=1.2,
                       ls="none")
        if columns[0] == "err_mean":  # say why a method has no point
            for yi, row in zip(y, rows):
                refused, diverged = int(float(row.get("refused") or 0)), int(float(row.get("all_diverged") or 0))
                note = ", ".join(text for count, text in ((refused, "refused"), (diverged, "all runs diverged"))
                                 if count)
                if note:
                    why = " (reason: in the caption)" if refused and row.get("refusal") else ""
                    a.annotate(f"{note} in {max(refused, diverged)}/{row['trials']} trials{why}", (0.02, yi),
                               xycoords=("axes fraction", "data"), fontsize="x-small", va="center", color="0.3")
        a.set_xlabel(xlabel)
        if log:
            a.set_xscale("log")
            lo, hi = a.get_xlim()
            wide = a.get_position().width * fig.get_figwidth() >= 2.0
            subs = ((1.0, 2.0, 5.0) if wide else (1.0, 3.0)) if hi / lo < 300 else (1.0,)
            if hi / lo < 4:  # a narrow range: a log locator labels every 500 there (3000 3500 ... overlapped)
                a.xaxis.set_major_locator(MaxNLocator(nbins=3, steps=[1, 2, 5, 10]))
            else:
                a.xaxis.set_major_locator(LogLocator(base=10, subs=subs))
            a.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
            a.xaxis.set_minor_formatter(NullFormatter())
        a.grid(axis="x", alpha=0.3)
    names = {method: style.short or style.label for method, style in styles.items()}
    for i, a in enumerate(axes):
        spec = a.get_subplotspec()
        first = spec.is_first_col() if spec is not None else i == 0
        a.set_yticks(y)
        a.set_ylim(y.min() - 0.6, y.max() + 0.6)
        if first:
            a.set_yticklabels([names[row["method"]] for row in rows])
            for tick, row in zip(a.get_yticklabels(), rows):
                style = styles[row["method"]]
                tick.set_color("0.3" if style.kind == "reference" else style.color)
        else:
            a.tick_params(labelleft=False)
    axes[1].set_xlim(-0.02, 0.62)
    axes[1].axvline(0.5, color="0.6", ls=":", lw=0.8)
    notes = [f"{names[row['method']]} refused: {row['refusal']}." for row in rows
             if int(float(row.get("refused") or 0)) and row.get("refusal")]
    if own:  # the refusals' reasons are long: the caller puts ``notes`` into the caption
        finish(fig, axes, [], own=True, title=title, footnote=footnote)
    return result(fig, axes, None, methods=[row["method"] for row in rows], notes=notes)


def _value(row, column):
    if column == "floats":
        up, down = row.get("upload_mean"), row.get("download_mean")
        if up is None or down is None:
            return float("nan")
        return float(up) + float(down)
    value = row.get(f"{column}_mean")
    return float("nan") if value is None else float(value)


def draw(config, tables, outdir):
    """One figure per regime, from ``summary`` alone; returns the paths written (figures, captions)."""
    paths = []
    for regime in config.regimes:
        rows = [row for row in tables["summary"] if row["regime"] == regime]
        if not rows:
            continue
        spec = spec_of(regime, m=config.m, n=config.n, d=config.d, k=config.k, sigma=config.sigma,
                       separation=config.separation)
        title = (f"{regime}: {REGIMES[regime][0]}  (m = {spec.m}, k = {spec.k}, d = {spec.d}, σ = {spec.sigma:g}, "
                 f"Δ = {config.separation:g}; {rows[0]['trials']} trials)")
        notes = (f"Every method: {config.n_inits} random starts (FeSEM (k-means start): {config.n_inits} of its paper's "
                 f"best-of-20 k-means starts) x steps {list(STEPS)}, the replica with the lowest "
                 f"final training objective (never the distance to θ*); at most {config.n_rounds} rounds, stop when no "
                 f"coordinate moves more than {TOL:g} x the data's parameter scale. Bars: 95% intervals of the mean. "
                 f"Floats: per client, counted from each protocol. Misclustering at 0.5 (dotted) is chance for k = 2. "
                 f"Grey: reference points (known-label LS knows every point's cluster; local only has no clustering).")
        drawn = plot_comparison(rows, title=title)
        caption = " ".join([f"{title}. Panels: " + "; ".join(_CAPTIONS)
                            + ".", notes, *drawn["notes"]])
        paths += save_figure(drawn["figure"], pathlib.Path(outdir) / f"{NAME}_{regime}", caption=caption)
    return paths
