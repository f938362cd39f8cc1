"""error_floor's figure: IFCA's final error against m, n', d, sigma and p, with Corollary 1's exponents.

:func:`draw` makes it from the tables of :func:`.summary.summarise` alone (so ``--redraw``
repeats it exactly); :func:`plot_error_floor` draws from the ``points`` and ``exponents`` tables.
"""

from __future__ import annotations

import pathlib

import matplotlib as mpl
import matplotlib.lines
import matplotlib.ticker
import numpy as np

from mixreg.methods import METHODS, MethodStyle
from mixreg.plotting import plain_tick, save_figure

from ..ifca_mechanism.figures import finish, panels, result
from .summary import NAME

__all__ = ["draw", "plot_error_floor", "ERROR_FLOOR_SERIES"]

#: The series of the figure.  The practical setting and the oracle take the registry's labels,
#: colours and markers of ``ifca`` (random init, best run by training loss) and ``ls``.
#: "Thm 1" names only the setting the theorem covers.
ERROR_FLOOR_SERIES = {
    "theorem": MethodStyle(
        "theorem", "Theorem 1's setting: init at distance αΔ, resampling (n' fresh points per round), "
        "γ = c1/p (covered by Thm 1)", "#2166ac", "o", "-", short="Thm-1 setting, γ = c1/p"),
    "theorem_safe_step": MethodStyle(
        "theorem_safe_step", "Theorem 1's setting with the safe step γ = c1/p_max (a step Thm 1 does not "
        "consider)", "#35978f", "s", "-", short="safe step γ = c1/p_max"),
    "practical": MethodStyle(
        "practical", METHODS["ifca"].label + ", no resampling (n = n'): the paper's practical setting, "
        "NOT covered by Thm 1", METHODS["ifca"].color, METHODS["ifca"].marker, "-",
        short="practical IFCA (not Thm 1)"),
    "known_label_ls": MethodStyle(
        "known_label_ls", METHODS["ls"].label + " on the practical data: the oracle that knows the labels "
        "(minimax rate, not a floor: shrinkage beats it for d ≥ 3)", METHODS["ls"].color, METHODS["ls"].marker,
        "-", short=METHODS["ls"].short),
}

_AXES = {
    "m": ("clients m", "m"),
    "n_prime": ("points n' per round", "n'"),
    "d": ("dimension d", "d"),
    "sigma": ("noise σ", "σ"),
    "p": ("smallest proportion p", "p"),
}
# The settings' names on the exponent panel's rows
_FOREST_NAMES = {"theorem": "Thm 1", "theorem_safe_step": "safe step", "practical": "practical",
                 "known_label_ls": "LS"}
# Markers of the series are drawn side by side on the log x axis, so that equal values stay visible.
_SHIFT = {"theorem": 1.0, "theorem_safe_step": 1.0, "practical": 0.965, "known_label_ls": 1.035}


def _fraction(value):
    """``-1/2``, ``+1``: an exponent as the paper writes it."""
    for den in (1, 2, 4):
        if abs(value * den - round(value * den)) < 1e-9:
            num = int(round(value * den))
            return f"{num:+d}" if den == 1 else f"{num:+d}/{den}"
    return f"{value:+.3g}"


def _tick_inches():
    size = mpl.font_manager.FontProperties(size=mpl.rcParams["xtick.labelsize"]).get_size_in_points()
    return size / 72.0


def _finite(value):
    return value is not None and bool(np.isfinite(value))


def _row(exponents, axis, series):
    for row in exponents:
        if row["axis"] == axis and row["setting"] == series:
            return row
    return None


def _slope_text(row, failing_x=()):
    if row is None:
        return "slope undetermined"
    text = "slope undetermined"
    if _finite(row["fitted"]):
        text = f"slope {row['fitted']:+.2f} [{row['low']:+.2f}, {row['high']:+.2f}]"
    if failing_x:
        where = ", ".join(f"{x:g}" for x in failing_x)
        return f"NOT contracting at {_AXES[row['axis']][1]} = {where}; {text} on the others"
    return f"{text}, predicted {_fraction(row['predicted'])}: {row['verdict']}"


def _panel(ax, axis, points, exponents):
    label, short_axis = _AXES[axis]
    rows = [r for r in points if r["axis"] == axis]
    series = list(dict.fromkeys(r["series"] for r in rows))
    ok_highs = [r["high"] for r in rows if _finite(r["high"]) and not (r["diverged"] or r["not_contracting"])]
    ok_lows = [r["low"] for r in rows if _finite(r["low"]) and r["low"] > 0]
    init = [r.get("init_dist") for r in rows if r["series"] == "theorem" and _finite(r.get("init_dist"))]
    failures = any(r["diverged"] or r["not_contracting"] for r in rows if r["series"].startswith("theorem"))
    top = max(ok_highs) * 2.5 if ok_highs else 1.0
    if failures and init:  # the initial distance, the failures just above it, room for the legend on top
        top = max(top, float(np.mean(init)) * 12)
    bottom = min(ok_lows) / 1.6 if ok_lows else top / 1e3
    xs_all, failed, slopes = [], {}, []
    for name in series:
        style = ERROR_FLOOR_SERIES[name]
        sel = sorted((r for r in rows if r["series"] == name), key=lambda r: r["x"])
        x = np.array([r["x"] for r in sel], dtype=float) * _SHIFT[name]
        xs_all += [r["x"] for r in sel]
        mean, low, high = (np.array([np.nan if r[c] is None else r[c] for r in sel], dtype=float)
                           for c in ("mean", "low", "high"))
        failing = np.array([bool(r["diverged"] or r["not_contracting"]) for r in sel]) & name.startswith("theorem")
        good = ~failing & np.isfinite(mean)
        exp_row = _row(exponents, axis, name)
        slopes.append(f"{style.short}: {_slope_text(exp_row, [float(f'{r:.3g}') for r in x[failing]])}")
        ax.errorbar(x[good], mean[good], yerr=[mean[good] - low[good], high[good] - mean[good]],
                    marker=style.marker, ls="none", color=style.color, capsize=1.5, lw=0.9,
                    label=f"{style.short}: {_slope_text(exp_row, [float(f'{r:.3g}') for r in x[failing]])}")
        if exp_row is not None and _finite(exp_row["fitted"]) and good.any():
            grid = np.geomspace(x[good].min(), x[good].max(), 20)
            ax.plot(grid, np.exp(exp_row["intercept"]) * (grid / _SHIFT[name]) ** exp_row["fitted"], ls="-",
                    color=style.color, lw=0.8, alpha=0.8)
        derived = np.array([np.nan if r.get("derived") is None else r["derived"] for r in sel], dtype=float)
        shown = np.isfinite(derived) & (derived > 0)
        if shown.sum() >= 2:
            ax.plot(x[shown], derived[shown], ls=":", color=style.color, lw=0.9, alpha=0.9)
        for xi, m, r in zip(x[failing], mean[failing], [r for r, f in zip(sel, failing) if f]):
            off = not (np.isfinite(m) and (not init or m < float(np.mean(init))))
            y = float(np.mean(init)) * 1.6 if off and init else (top / 1.35 if off else m)
            ax.plot([xi], [y], marker="^" if y != m else style.marker, ms=1.3 * mpl.rcParams["lines.markersize"],
                    color=style.color, mfc="white", mew=1.2)
            what = "diverged" if r["diverged"] else "not contracting"
            failed.setdefault((what, style.color), []).append(f"{r['x']:g}")
    # The predictions: slopes fixed in advance, drawn through the centre of the points they compare with.
    xs = np.array(sorted(set(xs_all)), dtype=float)
    theorem = _row(exponents, axis, "theorem")
    if theorem is not None and _finite(theorem["anchor_x"]) and xs.size:
        grid = np.geomspace(xs.min(), xs.max(), 20)
        ax.plot(grid, theorem["anchor_y"] * (grid / theorem["anchor_x"]) ** theorem["predicted"], "k--", lw=1.0,
                label=f"Corollary 1's slope {_fraction(theorem['predicted'])}, through the Thm-1 points' centre "
                      "(slope comparison)")
    ls = _row(exponents, axis, "known_label_ls")
    if (ls is not None and theorem is not None and _finite(ls["anchor_x"])
            and abs(ls["predicted"] - theorem["predicted"]) > 1e-12):
        grid = np.geomspace(xs.min(), xs.max(), 20)
        ax.plot(grid, ls["anchor_y"] * (grid / ls["anchor_x"]) ** ls["predicted"], ls=(0, (1, 1)), color="0.2",
                label=f"minimax slope {_fraction(ls['predicted'])} with known labels, through the LS points' centre")
    if failures and init and np.mean(init) < top:
        ax.axhline(float(np.mean(init)), color="0.5", ls="-.", lw=0.8)
        ax.text(0.98, float(np.mean(init)) / 1.1, "initial distance αΔ", fontsize="x-small", color="0.35",
                transform=ax.get_yaxis_transform(), ha="right", va="top")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(bottom, top)
    if xs.size:
        ax.set_xlim(xs.min() / 1.25, xs.max() * 1.25)
        ax.set_xticks(xs)
    width = ax.get_position().width * ax.figure.get_figwidth()
    chars = sum(len(plain_tick(x)) + 2 for x in xs) * 0.6 * _tick_inches()
    step = 2 if chars > width else 1      # every other value named where they would touch
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
        lambda value, pos: plain_tick(value) if pos is None or pos % step == 0 else ""))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    decades = np.log10(top / bottom)
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0) if decades < 2.5 else (1.0,)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(plain_tick))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel(label)
    pred = theorem["predicted"] if theorem is not None else np.nan
    ax.set_title(f"{short_axis} (Cor. 1: {short_axis}^{_fraction(pred)})")
    ax.grid(True, which="both", alpha=0.25)
    for j, ((what, colour), where) in enumerate(failed.items()):   # the failures, said in the panel's top
        text = ax.text(0.03, 0.97 - 0.15 * j, f"{what} at\n{short_axis} = " + ", ".join(where), transform=ax.transAxes,
                       fontsize="x-small", color=colour, va="top", ha="left")
        text.set_in_layout(False)
    return slopes


def _forest(ax, exponents):
    """Fitted exponents with their intervals against the predicted ones, one row per axis and setting."""
    rows = list(exponents)
    y = np.arange(len(rows))[::-1].astype(float)
    for yi, row in zip(y, rows):
        style = ERROR_FLOOR_SERIES[row["setting"]]
        if _finite(row["fitted"]):
            lo = row["fitted"] - row["low"] if _finite(row["low"]) else 0.0
            hi = row["high"] - row["fitted"] if _finite(row["high"]) else 0.0
            ax.errorbar([row["fitted"]], [yi], xerr=[[lo], [hi]], marker=style.marker, color=style.color,
                        capsize=1.5, lw=0.9)
        ax.plot([row["predicted"]], [yi], marker="|", color="k", ms=1.6 * mpl.rcParams["lines.markersize"], mew=1.3)
        if str(row["verdict"]) != "consistent":     # a red mark at the right edge (the caption says)
            ax.annotate("✗" if str(row["verdict"]) == "contradicts" else "?", (1.0, yi),
                        xycoords=("axes fraction", "data"), xytext=(-2, 0), textcoords="offset points",
                        ha="right", va="center", fontsize="small", color="#b2182b")
    # one label per swept axis, the settings told apart by their markers (the legend's)
    groups = list(dict.fromkeys(row["axis"] for row in rows))
    centres = [float(np.mean([yi for yi, row in zip(y, rows) if row["axis"] == g])) for g in groups]
    ax.set_yticks(centres)
    ax.set_yticklabels([_AXES[g][1] for g in groups])
    for g in groups[1:]:
        ax.axhline(max(yi for yi, row in zip(y, rows) if row["axis"] == g) + 0.5, color="0.8", lw=0.5)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.axvline(0.0, color="0.7", lw=0.7)
    ax.set_xlabel("exponent")
    ax.set_title("exponents (|: predicted)")
    ax.grid(True, axis="x", alpha=0.25)


def plot_error_floor(points, exponents, *, ax=None, title=None, footnote=None):
    """Final error against each axis on log-log axes, one panel per axis, and the exponents.

    Parameters
    ----------
    points : list of dict
        One row per axis, axis value and series: ``axis`` (``m``, ``n_prime``, ``d``,
        ``sigma``, ``p``), ``series`` (a key of :data:`ERROR_FLOOR_SERIES`), ``x``, ``mean``,
        ``low``, ``high`` (the interval drawn), ``trials``, ``diverged``, ``not_contracting``
        (theorem's setting: a point with either is drawn hollow, at the top with an arrow when it
        is off the scale, and annotated), optional ``init_dist`` (the theorem's initial distance,
        drawn on the p panel).
    exponents : list of dict
        One row per axis and setting: ``axis``, ``setting``, ``predicted``, ``fitted``, ``low``,
        ``high``, ``verdict``, ``intercept`` (the fitted line is ``exp(intercept) x^fitted``) and
        ``anchor_x``/``anchor_y`` (the predicted slope is drawn through this point; for the
        ``theorem`` row, and for ``known_label_ls`` where its prediction differs).
    ax : sequence of n + 1 Axes, optional
        One panel per swept axis of ``points`` (``n`` of them, in the order m, n', d, σ, p), then
        the exponents; default: a new figure.
    title, footnote : str, optional
        Drawn on a new figure only.

    Returns
    -------
    dict
        ``figure``, ``axes``, ``legend``, ``handles`` and ``slopes`` (per swept axis, one line per
        series: its fitted slope, interval, prediction and verdict, for the caption).
    """
    order = [a for a in _AXES if any(r["axis"] == a for r in points)]
    fig, axes, own = panels(ax, len(order) + 1, aspect=0.85)
    slopes = {}
    for a, axis in zip(axes, order):
        slopes[axis] = _panel(a, axis, points, exponents)
    axes[0].set_ylabel("final error (mean)")
    _forest(axes[-1], exponents)
    ms = mpl.rcParams["lines.markersize"]
    handles = [matplotlib.lines.Line2D([], [], color=s.color, marker=s.marker, ls="none", ms=ms, label=s.short)
               for key, s in ERROR_FLOOR_SERIES.items() if any(r["series"] == key for r in points)]
    handles += [
        matplotlib.lines.Line2D([], [], color="0.3", ls="-", lw=0.8, label="fitted slope"),
        matplotlib.lines.Line2D([], [], color="k", ls="--", lw=1.0, label="predicted slope (Cor. 1)"),
        matplotlib.lines.Line2D([], [], color="0.2", ls=(0, (1, 1)), label="minimax slope, known labels"),
        matplotlib.lines.Line2D([], [], color="0.3", ls=":", lw=0.9, label="our derivation, no fitted constant"),
        matplotlib.lines.Line2D([], [], color="0.3", marker="^", mfc="white", ls="none",
                                label="not contracting (hollow; ▲ off the scale)"),
    ]
    legend = finish(fig, axes, handles, own=own, title=title, footnote=footnote, ncol=None if own else 1)
    return result(fig, axes, legend, handles=handles, slopes=slopes)


def _footnote(config, points):
    rounds = [r["theory_rounds"] for r in points if r["theory_rounds"]]
    T = f"T = {config.halvings} rounds on balanced cells, up to {max(rounds)} on the p axis" if rounds else ""
    return (
        f"{config.preset}: k={config.k}, Δ={config.separation:g} (θ* Gaussian, exact separation), x ~ N(0, I); "
        f"reference m={config.m_ref}, n'={config.n_prime_ref}, d={config.d_ref}, σ={config.sigma_ref:g}, "
        f"p={config.p_ref:g}; {config.trials} trials per point. Error: permutation-matched distance per "
        "cluster, max over clusters; points = mean over trials with 95% bootstrap intervals; slopes = least "
        "squares of log mean on log x with 95% stratified bootstrap intervals. Theorem's setting: init at "
        f"distance {config.alpha:g}Δ, resampling (2T subsets of n' per client), option I, γ = {config.c1:g}/p, "
        f"{T} (the safe step's slow cluster). Practical setting: {config.restarts} Gaussian inits "
        f"N(0, Δ²/(2d) I) x steps {list(config.step_sizes)}, no resampling (n = n'), up to "
        f"{config.practical_rounds} rounds, run chosen by training loss; it lands on known-label LS (same data, "
        "right identities, converged). "
        "Predicted lines have their slope fixed in advance and pass through the centre of the points they "
        "compare with: they compare slopes only (the constants c5, c6 are unknown)."
    )


def _widening_text(tables):
    """How the verdicts' intervals were widened: by the simulated coverage's need only (the range)."""
    rows = [r for r in tables["exponents"] if _finite(r.get("widening"))]
    if not rows:
        return "Verdicts: the raw 95% intervals."
    cover = [float(r["coverage_raw"]) for r in rows if _finite(r.get("coverage_raw"))]
    widen = [float(r["widening"]) for r in rows]
    return ("Verdicts: the raw 95% interval, widened only by what a simulation of its coverage at the row's own "
            f"sizes needs (simulated raw coverage {min(cover):.2f} to {max(cover):.2f}; widenings {min(widen):.3g} "
            f"to {max(widen):.3g}; exponents.csv)." if cover else "Verdicts: the raw 95% intervals.")


def draw(config, tables, outdir):
    """The figure, from the tables of :func:`summarise` only; returns the paths written (figure, caption)."""
    title = (f"IFCA's final error against m, n', d, σ and p (k = {config.k}): Corollary 1's exponents "
             "against fitted slopes")
    drawn = plot_error_floor(tables["points"], tables["exponents"], title=title,
                             footnote=f"{config.preset} preset, {config.trials} trials per point")
    series = "; ".join(f"{style.short}: {style.label}" for key, style in ERROR_FLOOR_SERIES.items()
                       if any(r["series"] == key for r in tables["points"]))
    slopes = " ".join(f"Against {_AXES[axis][1]}: " + "; ".join(lines) + "." for axis, lines in drawn["slopes"].items())
    caption = (
        f"{title}. Series: {series}. Lines: fitted slope (least squares on the points); predicted slope, fixed in "
        "advance, drawn through the centre of the points it is compared with (constants unknown); the minimax "
        "slope with known labels through the LS points' centre where it differs; dotted, our derivation with no "
        "fitted constant (Thm-1 setting: max_j stationary RMS σ√(γd / (m n' (1 − γ p_j))); practical and LS: "
        "max_j σ√(d / (N_j − d − 1))). Hollow markers: the theorem's setting not contracting (a triangle at the "
        "top: off the scale), left out of the fit. Last panel: fitted exponents (95% bootstrap) against the "
        "predicted ones (black bars), one group of rows per swept axis in the legend's order of settings; a red "
        "✗ at the right edge: the row contradicts its prediction (? : not tested). " + _widening_text(tables)
        + " On the p axis the proportions are exact; the practical setting has n = n'. " + slopes + "\n"
        + _footnote(config, tables["points"])
    )
    return save_figure(drawn["figure"], pathlib.Path(outdir) / NAME, caption=caption)
