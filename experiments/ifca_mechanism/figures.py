"""Figure helpers shared by the IFCA mechanism studies (``experiments/ifca_basin``,
``experiments/ifca_misclustering``, ``experiments/ifca_contraction``): each study's
``figures.py`` draws its figure from its tidy tables (lists of dicts, as its ``summarise``
writes them) with these.
"""

from __future__ import annotations

import numpy as np

__all__ = ["floats", "finish"]


def floats(rows, key):
    """The column ``key`` of ``rows`` as floats, ``None`` as nan."""
    return np.array([np.nan if r.get(key) is None else float(r[key]) for r in rows], dtype=float)


def finish(fig, handles, *, title, footnote, ncol=3, legend_height=0.06):
    """The legend of ``handles`` below the panels, the title and the footnote; returns ``fig``."""
    bottom = 0.07 if footnote else 0.0
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=ncol, frameon=False,
               bbox_to_anchor=(0.5, bottom))
    if title:
        fig.suptitle(title, fontsize=11)
    if footnote:
        fig.text(0.01, 0.005, footnote, fontsize=7, va="bottom", ha="left", wrap=True)
    rows = (len(handles) + ncol - 1) // ncol
    fig.tight_layout(rect=(0, bottom + 0.01 + legend_height * rows / 3, 1, 1))
    return fig
