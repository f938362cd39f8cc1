"""The one registry of the methods and success rules that figures, tables and trials name.

:data:`REGISTRY` holds every method's name, label, colour, marker and line style, once per study
that draws it; every figure of :mod:`mixreg.plotting` and every script and table that names a
method reads it through the views below, so a method is renamed or recoloured in this file only.
The module holds data only (it imports neither matplotlib nor the algorithms), so trial
functions and tables can name methods with it too.

"Oracle" means one thing in mixreg's code: **known-label least squares**, the estimator that
knows every row's cluster (:func:`mixreg.baselines.known_label_least_squares`; the success rule
``oracle``, :func:`mixreg.metrics.oracle_ls_floor`, :mod:`mixreg.theory` ``ls_oracle_*``).  IFCA
started at :math:`\\theta^*` is ``ifca_truth``.  The two-phase experiment recorded it before
this was settled, as the columns ``oracle_*`` and ``oracle_data_*`` of its tables (part of its
committed records and of its sweep's identity, so they stay): its styles are named
``ifca_truth`` and ``ifca_truth_data`` and carry the recorded prefix in :attr:`MethodStyle.column`.

The views, each keyed by the names the study's records use (:attr:`MethodStyle.key`):

* :data:`METHODS`: the algorithms of the two-phase study (``experiments/two_phase/``):
  ``ifca``, ``oracle`` (= ``ifca_truth``), both with Algorithm 2's client weights;
  ``ifca_data``, ``oracle_data`` (= ``ifca_truth_data``) the same with data weights
  :math:`n_i/N`, a control; ``fedavg``, ``fedprox``; ``ls`` = known-label least squares,
  ``cwls`` = client-weighted least squares;
* :data:`RULES`: the success rules of the IFCA success experiment
  (``experiments.success_vs_R.trial.SUCCESS_RULES``: ``official``, ``honest``, ``oracle`` = known-label least
  squares as a ceiling), whose labels are the panel titles of
  the study's ``plot_success_vs_separation``.  Their colour is ``None``: that figure
  colours its curves by noise level;
* :data:`COMPARE`: the methods of the head-to-head comparison (the study ``experiments/compare/``),
  in table order; their :attr:`MethodStyle.kind` says which are registered algorithms, variants
  and reference points (the study's ``VARIANTS`` and ``REFERENCES``, in
  ``experiments/compare/trial.py``, are read from it).

A label may be a template with ``{name}`` fields for the method's parameters (FedAvg's number
of local steps ``s``); :func:`method_label` fills them in.

The built-in views are read-only.  A user's method gets its style in one of two ways:

* :func:`register_style` gives it one (its label, colour, marker and line style), for every
  figure drawn afterwards in the process;
* every other key gets an **automatic style** from :func:`styles_for`: the ``i``-th of the
  distinct unregistered keys of a figure, **in sorted order** (so the style depends on the key
  and on the set of keys drawn, not on the order of the table's rows), gets colour
  ``i mod 11`` of the Okabe-Ito palette and three of Paul Tol's (:data:`AUTO_COLORS`, safe for the
  common colour-vision deficiencies), marker ``i mod 7`` (:data:`AUTO_MARKERS`) and line style
  ``i mod 3`` (:data:`AUTO_LINESTYLES`): as 11, 7 and 3 are pairwise coprime, the first 231
  unregistered keys of a figure have distinct (colour, marker, line style) triples
  (:func:`auto_style`).  The colours close to those of the registered styles the figure draws
  are skipped, so a user's method never looks like a built-in (neighbours then still differ in
  colour, not always in marker or line style).  Figures that draw the same keys draw them alike.

Examples
--------
>>> from mixreg.methods import METHODS, method_label
>>> method_label("fedavg", s=3)
'FMD → FedAvg(3)'
>>> METHODS["fedavg"].params
('s',)
>>> METHODS["oracle"].name, METHODS["oracle"].column
('ifca_truth', 'oracle')
"""

from __future__ import annotations

import dataclasses
import math
import string
from collections.abc import Iterable, Mapping
from types import MappingProxyType

__all__ = ["MethodStyle", "REGISTRY", "METHODS", "RULES", "COMPARE", "STUDIES", "KINDS", "method_label",
           "rule_title", "register_style", "registered_style", "auto_style", "styles_for", "AUTO_COLORS",
           "AUTO_MARKERS", "AUTO_LINESTYLES"]

#: The studies whose methods the registry styles, each with its own view.
STUDIES = ("two_phase", "success_rules", "compare")
#: What a registered style is: a method that runs (``algorithm``), a second way of running one
#: (``variant``), a reference point (``reference``) or a success rule (``rule``).
KINDS = ("algorithm", "variant", "reference", "rule")


@dataclasses.dataclass(frozen=True)
class MethodStyle:
    """How figures and tables name and draw one method (or one success rule).

    Parameters
    ----------
    name : str
        What the method is (``"fedavg"``, ``"ifca_truth"``); "oracle" only for known-label
        least squares.
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
    study : str, optional
        The study (one of :data:`~mixreg.methods.STUDIES`) whose view holds the style; ``None``
        for a style made outside the registry.
    kind : str, default ``"algorithm"``
        One of :data:`~mixreg.methods.KINDS`.
    column : str, optional
        The prefix of the method's columns in the study's records when it is not ``name``
        (the two-phase experiment's ``oracle``); the view is keyed by it.
    """

    name: str
    label: str
    color: str | None
    marker: str | None
    linestyle: str
    short: str | None = None
    study: str | None = None
    kind: str = "algorithm"
    column: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.study is not None and self.study not in STUDIES:
            raise ValueError(f"study must be one of {', '.join(STUDIES)}, got {self.study!r}")

    @property
    def key(self) -> str:
        """The method's name in its study's records: :attr:`column`, else :attr:`name`."""
        return self.column or self.name

    @property
    def params(self) -> tuple[str, ...]:
        """Names of the template fields of ``label``, in order of appearance."""
        return tuple(dict.fromkeys(field for _, field, _, _ in string.Formatter().parse(self.label) if field))


def _study(study, *styles):
    return tuple(dataclasses.replace(style, study=study) for style in styles)


#: Every registered style, study by study; each study's styles in the order its legends and
#: tables list them.
REGISTRY = (
    # the algorithms of the two-phase experiment
    *_study(
        "two_phase",
        MethodStyle("ifca", "IFCA (Algorithm 2, client weights 1/m), random init (best of restarts by training "
                    "loss)", "#c51b7d", "v", "-", short="IFCA"),
        MethodStyle("ifca_truth", "IFCA (Algorithm 2, client weights 1/m) started at θ* (oracle)", "#e08214", "^",
                    "-", short="IFCA from θ*", column="oracle"),
        MethodStyle("fedavg", "FMD → FedAvg({s})", "#1b7837", "o", "-", short="FedAvg({s})"),
        MethodStyle("fedprox", "FMD → FedProx", "#5aae61", "s", "-", short="FedProx"),
        MethodStyle("ls", "known-label least squares", "0.35", "D", "-", short="known-label LS", kind="reference"),
        MethodStyle("ifca_data", "IFCA with data weights n_i/N (control), random init (best of restarts by training "
                    "loss)", "#542788", "<", "--", short="IFCA (data weights)"),
        MethodStyle("ifca_truth_data", "IFCA with data weights n_i/N (control), started at θ*", "#b35806", ">", "--",
                    short="IFCA (data weights) from θ*", column="oracle_data"),
        MethodStyle("cwls", "client-weighted least squares (IFCA's fixed point with the true labels)", "0.6", "P",
                    "-", short="client-weighted LS", kind="reference"),
    ),
    # the success rules of the IFCA success experiment: ``label`` is the panel title (and, for
    # the oracle, drawn in every panel as a ceiling, its legend text); ``marker`` and
    # ``linestyle`` draw the curve of the success rate under the rule
    *_study(
        "success_rules",
        MethodStyle("official", "official rule: best of all runs by distance to truth", None, "o", "-",
                    short="official", kind="rule"),
        MethodStyle("honest", "honest rule: run with lowest training loss, matched distance", None, "o", "-",
                    short="honest", kind="rule"),
        MethodStyle("oracle", "known-label LS oracle (ceiling)", None, "o", "-", short="oracle", kind="rule"),
    ),
    # the head-to-head comparison: the algorithms of COMPARED (experiments/compare/trial.py), then the
    # reference points, in table order.  Grey for the reference points; IFCA's family in
    # purples, Su-Xu-Yang's Phase 2 in greens, the one-shot clusterers in oranges, the
    # point-level methods in blues
    *_study(
        "compare",
        MethodStyle("ifca", "IFCA, option I (gradient averaging, weights 1/m)", "#c51b7d", "v", "-", short="IFCA"),
        MethodStyle("ifca_data", "IFCA, option I with data weights n_i/N", "#8e0152", "<", "-",
                    short="IFCA (data w.)"),
        MethodStyle("ifca_model", "IFCA, option II (model averaging, 2 local steps)", "#de77ae", ">", "-",
                    short="IFCA (model avg.)"),
        MethodStyle("fedavg", "FedX: FedAvg(2) with the ML decoder (Su-Xu-Yang Phase 2), random init", "#1b7837",
                    "o", "-", short="FedX-FedAvg"),
        MethodStyle("fedprox", "FedX: FedProx with the ML decoder (Su-Xu-Yang Phase 2), random init", "#5aae61",
                    "s", "-", short="FedX-FedProx"),
        MethodStyle("oneshot", "one-shot: local LS, k-means, FedAvg per cluster (IFCA Alg. 1)", "#e08214", "D", "-",
                    short="one-shot"),
        MethodStyle("fesem", "FeSEM (multi-center FL, Alg. 1)", "#b35806", "h", "-", short="FeSEM"),
        MethodStyle("fesem_paper", "FeSEM from its paper's start (best of 20 k-means of the local models)",
                    "#b35806", "H", "--", short="FeSEM (k-means start)", kind="variant"),
        MethodStyle("pacfl", "PACFL, joint (x, y) signatures (Alg. 1)", "#fdb863", "p", "-", short="PACFL (x, y)"),
        MethodStyle("pacfl_x", "PACFL, x-only signatures (Alg. 1)", "#8c510a", "P", "--", short="PACFL (x)"),
        MethodStyle("ifca_points", "point-level IFCA (UIFCA scheme, thesis Alg. 3)", "#2166ac", "*", "-",
                    short="point IFCA"),
        MethodStyle("kfed", "k-FED with local regressions (thesis Alg. 2)", "#67a9cf", "X", "-", short="k-FED"),
        MethodStyle("global_fedavg", "reference: global FedAvg(2), one model (k = 1)", "0.55", "o", ":",
                    short="global FedAvg", kind="reference"),
        MethodStyle("local_only", "reference: local-only least squares", "0.7", "s", ":", short="local only",
                    kind="reference"),
        MethodStyle("known_label_ls", "reference: known-label least squares (oracle)", "0.2", "D", ":",
                    short="known-label LS", kind="reference"),
        MethodStyle("ifca_truth", "reference: IFCA started at θ*", "0.4", "^", ":", short="IFCA from θ*",
                    kind="reference"),
    ),
)


def _view(study):
    return MappingProxyType({style.key: style for style in REGISTRY if style.study == study})


#: The algorithms of the two-phase experiment, keyed by their records' names, in the order
#: their legends list them.
METHODS = _view("two_phase")
#: The success rules of the IFCA success experiment.
RULES = _view("success_rules")
#: The methods of the head-to-head comparison, in table order.
COMPARE = _view("compare")
# the two-phase styles by what they are (``ifca_truth``), for method_label
_BY_NAME = {style.name: style for style in METHODS.values()}


def method_label(name: str, *, short: bool = False, **params: object) -> str:
    """The legend label of method ``name`` (a key of :data:`METHODS`), its parameters filled in.

    Parameters
    ----------
    name : str
        A key of :data:`METHODS` (a name of its records, e.g. ``"oracle"``) or the
        :attr:`MethodStyle.name` of one (``"ifca_truth"``).
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
    >>> method_label("ifca_truth", short=True) == method_label("oracle", short=True)
    True
    """
    style = METHODS.get(name) or _BY_NAME.get(name)
    if style is None:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {name!r}")
    unknown = sorted(set(params) - set(style.params))
    if unknown:
        raise ValueError(f"the label of method {name!r} takes parameters {list(style.params)}, got {unknown}")
    template = style.label if not short or style.short is None else style.short
    return template.format_map({field: params.get(field, field) for field in style.params})


def rule_title(rule: str) -> str:
    """Panel title of success rule ``rule``: its label in :data:`RULES`, else ``rule`` itself.

    >>> rule_title("honest")
    'honest rule: run with lowest training loss, matched distance'
    """
    return RULES[rule].label if rule in RULES else rule



# --------------------------------------------------------------------------------------------
# A user's methods: registered styles and automatic ones
# --------------------------------------------------------------------------------------------

#: The Okabe-Ito palette (Okabe and Ito, *Color Universal Design*, 2002), distinguishable under
#: the common colour-vision deficiencies: orange, sky blue, bluish green, yellow, blue,
#: vermillion, reddish purple, black; then Paul Tol's indigo, olive and dark red (his "muted" and
#: "dark" schemes), far from the registered styles' colours, so that a figure with the built-in
#: methods still has automatic colours of its own.
AUTO_COLORS = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000",
               "#332288", "#999933", "#661100")
#: The markers of automatic styles (7: coprime with the 11 colours and the 3 line styles).
AUTO_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
#: The line styles of automatic styles (3).
AUTO_LINESTYLES = ("-", "--", "-.")
# how many automatic styles differ (11, 7 and 3 are pairwise coprime)
_N_AUTO = len(AUTO_COLORS) * len(AUTO_MARKERS) * len(AUTO_LINESTYLES)

# the styles registered by register_style, by key; read through registered_style and styles_for
_USER: dict[str, MethodStyle] = {}


def register_style(style: MethodStyle | str, *, label: str | None = None, color: str | None = None,
                   marker: str | None = None, linestyle: str | None = None, short: str | None = None,
                   kind: str = "algorithm", replace: bool = False) -> MethodStyle:
    """Give a user's method a style for every figure drawn afterwards in this process.

    Parameters
    ----------
    style : MethodStyle or str
        The style, or the method's name (its key in the tables) with the fields below.
    label : str, optional
        Legend text; defaults to the name.  Ignored when ``style`` is a :class:`MethodStyle`
        (as are the other fields).
    color, marker, linestyle : str, optional
        A matplotlib colour, marker and line style.  Each one not given is that of the
        :func:`auto_style` with index ``230 - n`` for the ``n``-th style registered (counting
        from 0): automatic styles counted from the end, so that they differ from those of a
        figure's first unregistered keys and from each other.
    short : str, optional
        Short name (tick labels, running text); defaults to ``label``.
    kind : str, default ``"algorithm"``
        One of :data:`~mixreg.methods.KINDS`.
    replace : bool, default False
        Replace a style this function registered before under the same key (else that is an error).

    Returns
    -------
    MethodStyle
        The registered style; its key is :attr:`MethodStyle.key`.

    Raises
    ------
    ValueError
        If the key is a built-in method of a view (:data:`METHODS`, :data:`RULES`,
        :data:`COMPARE`: their styles are fixed, the committed figures draw them), or was
        registered before and ``replace`` is false.
    TypeError
        If ``style`` is neither a MethodStyle nor a non-empty string.

    Examples
    --------
    >>> style = register_style("ifca_sched", label="IFCA II, γ_t = γ_0/(1 + t/10)", color="tab:red")
    >>> styles_for(["ifca", "ifca_sched"])["ifca_sched"].color
    'tab:red'
    >>> _ = _USER.pop("ifca_sched")
    """
    if isinstance(style, str) and style:
        name = style
        label = name if label is None else label
        auto = auto_style(name, _N_AUTO - 1 - len(_USER) % _N_AUTO)
        style = MethodStyle(name, label, auto.color if color is None else color,
                            auto.marker if marker is None else marker,
                            auto.linestyle if linestyle is None else linestyle,
                            short=label if short is None else short, kind=kind)
    elif not isinstance(style, MethodStyle):
        raise TypeError(f"style must be a MethodStyle or a method's name, got {style!r}")
    builtin = [study for study, view in zip(STUDIES, (METHODS, RULES, COMPARE)) if style.key in view]
    if builtin:
        raise ValueError(f"style {style.key!r} is a built-in method of the {builtin[0]} view; register the "
                         "user's method under another name")
    if style.key in _USER and not replace:
        raise ValueError(f"style {style.key!r} is registered already; pass replace=True to replace it")
    _USER[style.key] = style
    return style


def registered_style(key: str) -> MethodStyle | None:
    """The style :func:`register_style` registered for ``key``, or ``None``.

    >>> registered_style("no such method") is None
    True
    """
    return _USER.get(key)


def auto_style(key: str, index: int) -> MethodStyle:
    """The automatic style of the ``index``-th unregistered key of a figure.

    Colour ``index mod 11`` of :data:`~mixreg.methods.AUTO_COLORS`, marker ``index mod 7`` of
    :data:`~mixreg.methods.AUTO_MARKERS`, line style ``index mod 3`` of
    :data:`~mixreg.methods.AUTO_LINESTYLES`; by the Chinese
    remainder theorem, indices ``0, ..., 230`` give distinct triples.  Label and short name are
    ``str(key)``.

    Parameters
    ----------
    key : str
        The method's name in the table.
    index : int >= 0
        Its position among the figure's unregistered keys (:func:`styles_for`: in sorted order).

    Returns
    -------
    MethodStyle

    Raises
    ------
    ValueError
        If ``index`` is not an integer >= 0.

    Examples
    --------
    >>> s = auto_style("mine", 9)
    >>> s.label, s.color, s.marker, s.linestyle
    ('mine', '#999933', '^', '-')
    """
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index must be an integer >= 0, got {index!r}")
    return MethodStyle(str(key), str(key), AUTO_COLORS[index % len(AUTO_COLORS)],
                       AUTO_MARKERS[index % len(AUTO_MARKERS)], AUTO_LINESTYLES[index % len(AUTO_LINESTYLES)])


def styles_for(keys: Iterable[str], *, view: Mapping[str, MethodStyle] = COMPARE) -> dict[str, MethodStyle]:
    """The style of every method a figure draws: the view's, else a registered one, else automatic.

    Parameters
    ----------
    keys : iterable of str
        The methods the figure draws (repeats allowed: a table's column).
    view : mapping, default :data:`COMPARE`
        The built-in view consulted first (:data:`COMPARE` names every registered algorithm
        under its name in :mod:`mixreg.algorithms`; :data:`METHODS` is the two-phase study's).

    Returns
    -------
    dict
        Key to :class:`MethodStyle`, in order of first appearance.  The unregistered keys (in
        neither ``view`` nor :func:`register_style`'s registry) get :func:`auto_style` by their
        position in the sorted list of the distinct unregistered keys, skipping the automatic
        colours close to a registered style's colour in the same figure (``_clear_indices``):
        the style of a key depends on the key and the set of keys drawn, never on the rows' order.

    Examples
    --------
    >>> styles = styles_for(["mine", "ifca", "yours", "mine"])
    >>> list(styles), styles["ifca"] is COMPARE["ifca"]
    (['mine', 'ifca', 'yours'], True)
    >>> styles["mine"] == auto_style("mine", 0), styles["yours"] == auto_style("yours", 1)
    (True, True)
    """
    keys = list(dict.fromkeys(keys))
    unregistered = sorted((key for key in keys if key not in view and key not in _USER), key=str)
    registered = [view[key] if key in view else _USER[key] for key in keys if key not in unregistered]
    index = dict(zip(unregistered, _clear_indices(len(unregistered), [s.color for s in registered])))
    return {key: view[key] if key in view else _USER[key] if key in _USER else auto_style(key, index[key])
            for key in keys}


def _rgb(color):
    from matplotlib.colors import to_rgb

    try:
        return to_rgb(color)
    except ValueError:
        return None


def _clear_indices(n, taken, distance=0.25):
    """``n`` indices of :func:`auto_style`, in increasing order, skipping those whose colour is
    within ``distance`` (RGB, in [0, 1]^3) of a colour in ``taken`` (the registered styles the
    figure draws), so that a user's method is not drawn in a built-in's colour; every index is
    used when every colour is that close."""
    near = [rgb for rgb in map(_rgb, (c for c in taken if c is not None)) if rgb is not None]
    clear = [i for i, colour in enumerate(map(_rgb, AUTO_COLORS))
             if all(math.dist(colour, c) > distance for c in near)] or list(range(len(AUTO_COLORS)))
    # the clear colours' indices, cycle after cycle
    return [len(AUTO_COLORS) * (j // len(clear)) + clear[j % len(clear)] for j in range(n)]
