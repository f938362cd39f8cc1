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

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from mixreg.methods import COMPARE, styles_for
from mixreg.plotting import save_figure

from .summary import NAME
from .trial import REGIMES, STEPS, TOL, spec_of

__all__ = ["draw", "plot_comparison"]

# (column of the summary, x label, log scale) of each panel; a panel may draw two columns
_PANELS = (
    (("err_mean", "err_max"), "permutation-matched error\n● mean over clusters, × max", True),
    (("mis_clients", "mis_points"), "misclustering\n● clients, × points", False),
    (("rounds",), "rounds run (to tol or the cap)", False),
    (("floats",), "floats per client, up + down", True),
    (("time",), "wall time of the batched call (s)", True),
)


def plot_comparison(rows, *, title, footnote=""):
    """One row of panels for one regime: every method's error, misclustering, rounds,
    communication and wall time, from the study's summary table.

    Parameters
    ----------
    rows : list of dict
        One per method (the regime's rows of ``summary.csv``), each drawn: ``method`` and, for each column
        ``c`` of the panels, ``c_mean`` with ``c_low`` / ``c_high`` (95% interval of the mean;
        drawn as a bar when present).  ``floats`` is ``upload_mean + download_mean``.
        ``refused`` (trials the method refused, noted on its row) and ``refusal`` (the reason,
        added to the footnote) when present.
    title, footnote : str

    Returns
    -------
    matplotlib.figure.Figure
    """
    order = {method: i for i, method in enumerate(COMPARE)}
    rows = sorted(rows, key=lambda row: order.get(row["method"], len(order)))  # stable: others in table order
    styles = styles_for([row["method"] for row in rows], view=COMPARE)
    y = np.arange(len(rows))[::-1]
    fig, axes = plt.subplots(1, len(_PANELS), figsize=(17, 0.42 * len(rows) + 2.3), sharey=True)
    for ax, (columns, xlabel, log) in zip(axes, _PANELS):
        for j, column in enumerate(columns):
            for yi, row in zip(y, rows):
                style = styles[row["method"]]
                value = _value(row, column)
                if not np.isfinite(value) or (log and value <= 0):
                    continue
                low, high = row.get(f"{column}_low"), row.get(f"{column}_high")
                if low is not None and high is not None and np.isfinite(low) and np.isfinite(high):
                    low = max(low, value / 10) if log else low  # a normal interval may reach below 0
                    ax.plot([low, high], [yi + 0.15 * j, yi + 0.15 * j], color=style.color, lw=1.2)
                ax.plot(value, yi + 0.15 * j, marker="o" if j == 0 else "x", color=style.color, ms=6, mew=1.6,
                        ls="none")
        if columns[0] == "err_mean":  # say why a method has no point
            for yi, row in zip(y, rows):
                refused, diverged = int(float(row.get("refused") or 0)), int(float(row.get("all_diverged") or 0))
                note = ", ".join(text for count, text in ((refused, "refused"), (diverged, "all runs diverged"))
                                 if count)
                if note:
                    below = " (why: below)" if refused and row.get("refusal") else ""
                    ax.annotate(f"{note} in {max(refused, diverged)}/{row['trials']} trials{below}", (0.02, yi),
                                xycoords=("axes fraction", "data"), fontsize=7, va="center", color="0.3")
        ax.set_xlabel(xlabel, fontsize=9)
        if log:
            ax.set_xscale("log")
            lo, hi = ax.get_xlim()
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if hi / lo < 300 else (1.0,)))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(y)
    names = {method: style.short or style.label for method, style in styles.items()}
    axes[0].set_yticklabels([names[row["method"]] for row in rows], fontsize=9)
    for tick, row in zip(axes[0].get_yticklabels(), rows):
        style = styles[row["method"]]
        tick.set_color("0.3" if style.kind == "reference" else style.color)
    axes[1].set_xlim(-0.02, 0.62)
    axes[1].axvline(0.5, color="0.6", ls=":", lw=1)
    fig.suptitle(title, fontsize=11)
    reasons = [f"{names[row['method']]} refused: {row['refusal']}." for row in rows
               if int(float(row.get("refused") or 0)) and row.get("refusal")]
    footnote = " ".join([footnote, *reasons]).strip()
    if footnote:
        fig.text(0.01, 0.01, footnote, fontsize=7.5, wrap=True, va="bottom")
    fig.tight_layout(rect=(0, 0.12 if footnote else 0, 1, 0.95))
    return fig


def _value(row, column):
    if column == "floats":
        up, down = row.get("upload_mean"), row.get("download_mean")
        if up is None or down is None:
            return float("nan")
        return float(up) + float(down)
    value = row.get(f"{column}_mean")
    return float("nan") if value is None else float(value)


def draw(config, tables, outdir):
    """One figure per regime, from ``summary`` alone; returns the paths written."""
    paths = []
    for regime in config.regimes:
        rows = [row for row in tables["summary"] if row["regime"] == regime]
        if not rows:
            continue
        spec = spec_of(regime, m=config.m, n=config.n, d=config.d, k=config.k, sigma=config.sigma,
                       separation=config.separation)
        title = (f"{regime}: {REGIMES[regime][0]}  (m = {spec.m}, k = {spec.k}, d = {spec.d}, σ = {spec.sigma:g}, "
                 f"Δ = {config.separation:g}; {rows[0]['trials']} trials)")
        footnote = (f"Every method: {config.n_inits} random starts (FeSEM (k-means start): {config.n_inits} of its paper's "
                    f"best-of-20 k-means starts) x steps {list(STEPS)}, the replica with the lowest "
                    f"final training objective (never the distance to θ*); at most {config.n_rounds} rounds, stop when no "
                    f"coordinate moves more than {TOL:g} x the data's parameter scale. Bars: 95% intervals of the mean. "
                    f"Floats: per client, counted from each protocol. Misclustering at 0.5 (dotted) is chance for k = 2. "
                    f"Grey: reference points (known-label LS knows every point's cluster; local only has no clustering).")
        fig = plot_comparison(rows, title=title, footnote=footnote)
        paths += save_figure(fig, pathlib.Path(outdir) / f"{NAME}_{regime}")
    return paths
