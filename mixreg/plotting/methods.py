"""The one registry of the methods and success rules that figures and tables name.

Every figure of :mod:`mixreg.plotting` takes its method labels, colours, markers and line styles
from here, and so should every script and table that names a method: a method is renamed or
recoloured in this file only.  The module itself holds data only (it imports no matplotlib),
so tables can name methods with it too.

Two mappings, because the two experiments use the word "oracle" for different things:

* :data:`METHODS`: the algorithms of the two-phase experiment (``experiments/two_phase.py``),
  keyed by the method names of its records (``ifca``, ``oracle`` = IFCA started at
  :math:`\\theta^*`, both with Algorithm 2's client weights; ``ifca_data``, ``oracle_data`` =
  the same with data weights :math:`n_i/N`, a control; ``fedavg``, ``fedprox``; ``ls`` =
  known-label least squares, ``cwls`` = client-weighted least squares);
* :data:`RULES`: the success rules of the IFCA success experiment
  (:data:`mixreg.trials.SUCCESS_RULES`: ``official``, ``honest``, ``oracle`` = known-label least
  squares as a ceiling), whose labels are the panel titles of
  :func:`mixreg.plotting.plot_success_vs_separation`.  Their colour is ``None``: that figure
  colours its curves by noise level.

A label may be a template with ``{name}`` fields for the method's parameters (FedAvg's number
of local steps ``s``); :func:`method_label` fills them in.

Examples
--------
>>> from mixreg.plotting.methods import METHODS, method_label
>>> method_label("fedavg", s=3)
'FMD → FedAvg(3)'
>>> METHODS["fedavg"].params
('s',)
"""

from __future__ import annotations

import dataclasses
import string
from types import MappingProxyType

__all__ = ["MethodStyle", "METHODS", "RULES", "COMPARE", "method_label", "rule_title"]


@dataclasses.dataclass(frozen=True)
class MethodStyle:
    """How figures and tables name and draw one method (or one success rule).

    Parameters
    ----------
    name : str
        The key in the records (``"fedavg"`` for the columns ``fedavg_final``, ...).
    label : str
        Legend text (panel title for a success rule); may hold ``{param}`` fields, filled in
        by :func:`method_label`.
    color : str or None
        A matplotlib colour; ``None`` = chosen by the figure (e.g. by noise level).
    marker : str or None
        A matplotlib marker; ``None`` = no marker.
    linestyle : str
        A matplotlib line style for the method's curves and error-bar lines.
    short : str, optional
        Short name for running text and compound labels (``"IFCA"`` in ``"IFCA, σ = 0.5"``);
        the same template fields as ``label``.  Defaults to ``label``.
    """

    name: str
    label: str
    color: str | None
    marker: str | None
    linestyle: str
    short: str | None = None

    @property
    def params(self):
        """Names of the template fields of ``label``, in order of appearance."""
        return tuple(dict.fromkeys(field for _, field, _, _ in string.Formatter().parse(self.label) if field))


def _registry(*styles):
    return MappingProxyType({style.name: style for style in styles})


#: The algorithms of the two-phase experiment, in the order their legends list them.
METHODS = _registry(
    MethodStyle("ifca", "IFCA (Algorithm 2, client weights 1/m), random init (best of restarts by training loss)",
                "#c51b7d", "v", "-", short="IFCA"),
    MethodStyle("oracle", "IFCA (Algorithm 2, client weights 1/m) started at θ* (oracle)", "#e08214", "^", "-",
                short="IFCA from θ*"),
    MethodStyle("fedavg", "FMD → FedAvg({s})", "#1b7837", "o", "-", short="FedAvg({s})"),
    MethodStyle("fedprox", "FMD → FedProx", "#5aae61", "s", "-", short="FedProx"),
    MethodStyle("ls", "known-label least squares", "0.35", "D", "-", short="known-label LS"),
    MethodStyle("ifca_data", "IFCA with data weights n_i/N (control), random init (best of restarts by training "
                "loss)", "#542788", "<", "--", short="IFCA (data weights)"),
    MethodStyle("oracle_data", "IFCA with data weights n_i/N (control), started at θ*", "#b35806", ">", "--",
                short="IFCA (data weights) from θ*"),
    MethodStyle("cwls", "client-weighted least squares (IFCA's fixed point with the true labels)", "0.6", "P", "-",
                short="client-weighted LS"),
)

#: The success rules of the IFCA success experiment; ``label`` is the panel title (and, for the
#: oracle, drawn in every panel as a ceiling, its legend text); ``marker`` and ``linestyle`` draw
#: the curve of the success rate under the rule.
RULES = _registry(
    MethodStyle("official", "official rule: best of all runs by distance to truth", None, "o", "-",
                short="official"),
    MethodStyle("honest", "honest rule: run with lowest training loss, matched distance", None, "o", "-",
                short="honest"),
    MethodStyle("oracle", "known-label LS oracle (ceiling)", None, "o", "-", short="oracle"),
)


#: The methods of the head-to-head comparison (``experiments/compare.py``): the algorithms of
#: :data:`mixreg.trials_compare.COMPARED`, then the reference points, in table order.  Grey for the
#: reference points; IFCA's family in purples, Su-Xu-Yang's Phase 2 in greens, the one-shot
#: clusterers in oranges, the point-level methods in blues.
COMPARE = _registry(
    MethodStyle("ifca", "IFCA, option I (gradient averaging, weights 1/m)", "#c51b7d", "v", "-", short="IFCA"),
    MethodStyle("ifca_data", "IFCA, option I with data weights n_i/N", "#8e0152", "<", "-", short="IFCA (data w.)"),
    MethodStyle("ifca_model", "IFCA, option II (model averaging, 2 local steps)", "#de77ae", ">", "-",
                short="IFCA (model avg.)"),
    MethodStyle("fedavg", "FedX: FedAvg(2) with the ML decoder (Su-Xu-Yang Phase 2), random init", "#1b7837", "o",
                "-", short="FedX-FedAvg"),
    MethodStyle("fedprox", "FedX: FedProx with the ML decoder (Su-Xu-Yang Phase 2), random init", "#5aae61", "s",
                "-", short="FedX-FedProx"),
    MethodStyle("oneshot", "one-shot: local LS, k-means, FedAvg per cluster (IFCA Alg. 1)", "#e08214", "D", "-",
                short="one-shot"),
    MethodStyle("fesem", "FeSEM (multi-center FL, Alg. 1)", "#b35806", "h", "-", short="FeSEM"),
    MethodStyle("fesem_paper", "FeSEM from its paper's start (best of 20 k-means of the local models)", "#b35806",
                "H", "--", short="FeSEM (k-means start)"),
    MethodStyle("pacfl", "PACFL, joint (x, y) signatures (Alg. 1)", "#fdb863", "p", "-", short="PACFL (x, y)"),
    MethodStyle("pacfl_x", "PACFL, x-only signatures (Alg. 1)", "#8c510a", "P", "--", short="PACFL (x)"),
    MethodStyle("ifca_points", "point-level IFCA (UIFCA scheme, thesis Alg. 3)", "#2166ac", "*", "-",
                short="point IFCA"),
    MethodStyle("kfed", "k-FED with local regressions (thesis Alg. 2)", "#67a9cf", "X", "-", short="k-FED"),
    MethodStyle("global_fedavg", "reference: global FedAvg(2), one model (k = 1)", "0.55", "o", ":",
                short="global FedAvg"),
    MethodStyle("local_only", "reference: local-only least squares", "0.7", "s", ":", short="local only"),
    MethodStyle("known_label_ls", "reference: known-label least squares (oracle)", "0.2", "D", ":",
                short="known-label LS"),
    MethodStyle("ifca_truth", "reference: IFCA started at θ*", "0.4", "^", ":", short="IFCA from θ*"),
)


def method_label(name, *, short=False, **params):
    """The legend label of method ``name`` (a key of :data:`METHODS`), its parameters filled in.

    Parameters
    ----------
    name : str
        A key of :data:`METHODS`.
    short : bool, default False
        Return the short name instead of the full label.
    **params
        Values of the label's template fields (``s`` for ``"fedavg"``); a field not given is
        left as its name, so ``method_label("fedavg")`` is ``"FMD → FedAvg(s)"``.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``name`` is not registered or a parameter is not a field of its label.

    Examples
    --------
    >>> method_label("fedavg")
    'FMD → FedAvg(s)'
    >>> method_label("fedavg", s=1)
    'FMD → FedAvg(1)'
    >>> method_label("ifca", short=True)
    'IFCA'
    """
    if name not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {name!r}")
    style = METHODS[name]
    unknown = sorted(set(params) - set(style.params))
    if unknown:
        raise ValueError(f"the label of method {name!r} takes parameters {list(style.params)}, got {unknown}")
    template = style.label if not short or style.short is None else style.short
    return template.format_map({field: params.get(field, field) for field in style.params})


def rule_title(rule):
    """Panel title of success rule ``rule``: its label in :data:`RULES`, else ``rule`` itself.

    >>> rule_title("honest")
    'honest rule: run with lowest training loss, matched distance'
    """
    return RULES[rule].label if rule in RULES else rule
