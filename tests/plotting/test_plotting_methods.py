"""Tests of mixreg.methods (re-exported by mixreg.plotting): the one registry of method names, labels and colours.

Every figure function is drawn on tiny synthetic inputs and its legend texts, panel titles and
line colours are checked against the registry.
"""

import dataclasses
import pathlib

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors  # noqa: E402
import matplotlib.container  # noqa: E402
import matplotlib.lines  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import mixreg.plotting  # noqa: E402
from mixreg.plotting import (  # noqa: E402
    METHODS,
    RULES,
    MethodStyle,
    method_label,
    rule_title,
)
from experiments.two_phase.figures import (  # noqa: E402
    plot_error_vs_rounds,
    plot_two_phase_contraction,
    plot_two_phase_rounds,
    plot_two_phase_scaling,
)
from experiments.success_vs_R.figures import plot_success_vs_separation  # noqa: E402
from experiments.success_vs_R.trial import SUCCESS_RULES  # noqa: E402
from experiments.two_phase.trial import CURVE_METHODS  # noqa: E402

STYLES = [*METHODS.values(), *RULES.values()]


def test_registry_holds_the_methods_and_rules_the_records_name():
    assert set(CURVE_METHODS) | {"ls", "cwls"} <= set(METHODS)
    assert {"ifca", "oracle", "ifca_data", "oracle_data", "fedavg", "fedprox", "ls", "cwls"} <= set(METHODS)
    assert set(RULES) == set(SUCCESS_RULES) == {"official", "honest", "oracle"}
    assert all(key == style.key for registry in (METHODS, RULES) for key, style in registry.items())


def test_oracle_means_known_label_least_squares_and_the_views_derive_from_the_registry():
    """"oracle" names known-label least squares only; the two-phase records' ``oracle`` columns
    (IFCA started at theta*, recorded before the names were settled) are ``ifca_truth``'s."""
    from mixreg.methods import COMPARE, REGISTRY
    from experiments.compare.trial import COMPARED as ALGORITHMS, METHODS as COMPARED, REFERENCES, VARIANTS

    assert [(s.study, s.kind) for s in REGISTRY if s.name == "oracle"] == [("success_rules", "rule")]
    assert "known-label" in RULES["oracle"].label and "known-label" in COMPARE["known_label_ls"].label
    assert METHODS["oracle"].name == "ifca_truth" and METHODS["oracle_data"].name == "ifca_truth_data"
    assert method_label("ifca_truth") == method_label("oracle")
    assert {key: style for key, style in METHODS.items()} == {s.key: s for s in REGISTRY if s.study == "two_phase"}
    assert list(COMPARED) == [*ALGORITHMS, *VARIANTS, *REFERENCES]
    assert set(COMPARED) == set(COMPARE)
    assert [n for n, s in COMPARE.items() if s.kind == "algorithm"] == list(ALGORITHMS)
    assert REFERENCES == ("global_fedavg", "local_only", "known_label_ls", "ifca_truth")  # columns of committed tables
    assert VARIANTS == ("fesem_paper",)
    with pytest.raises(ValueError, match="kind must be one of"):
        MethodStyle("x", "x", None, None, "-", kind="baseline")


def test_every_method_has_a_distinct_colour_and_marker():
    colours = [matplotlib.colors.to_rgba(style.color) for style in METHODS.values()]
    assert len(set(colours)) == len(METHODS)
    assert len({style.marker for style in METHODS.values()}) == len(METHODS)
    for style in STYLES:
        assert matplotlib.colors.is_color_like(style.color) or (style.color is None and style in RULES.values())


@pytest.mark.parametrize("style", STYLES, ids=[f"{s.name}:{s.label[:12]}" for s in STYLES])
def test_labels_are_non_empty_and_styles_are_drawable(style):
    assert style.label.strip() and style.short.strip()
    assert style.linestyle in ("-", "--", ":", "-.")
    assert style.marker is None or style.marker in matplotlib.lines.Line2D.markers
    assert set(style.params) >= set(MethodStyle("", style.short, None, None, "-").params)


def test_the_current_texts_are_kept():
    assert method_label("fedavg") == "FMD → FedAvg(s)"
    assert method_label("ifca") == ("IFCA (Algorithm 2, client weights 1/m), random init (best of restarts by "
                                    "training loss)")
    assert method_label("oracle") == "IFCA (Algorithm 2, client weights 1/m) started at θ* (oracle)"
    assert method_label("ifca_data", short=True) == "IFCA (data weights)"
    assert method_label("cwls") == "client-weighted least squares (IFCA's fixed point with the true labels)"
    assert method_label("fedprox") == "FMD → FedProx"
    assert method_label("ls") == "known-label least squares"
    assert rule_title("official") == "official rule: best of all runs by distance to truth"
    assert rule_title("honest") == "honest rule: run with lowest training loss, matched distance"
    assert RULES["oracle"].label == "known-label LS oracle (ceiling)"
    assert rule_title("custom") == "custom"  # an unregistered rule is titled by its name


def test_method_label_fills_the_templates():
    assert method_label("fedavg", s=3) == "FMD → FedAvg(3)"
    assert method_label("fedavg", short=True, s=5) == "FedAvg(5)"
    assert method_label("ifca", short=True) == "IFCA"
    assert METHODS["fedavg"].params == ("s",) and METHODS["ifca"].params == ()
    for name, style in METHODS.items():
        if not style.params:
            assert method_label(name) == style.label
    with pytest.raises(ValueError, match=r"takes parameters \['s'\], got \['t'\]"):
        method_label("fedavg", t=3)
    with pytest.raises(ValueError, match=r"takes parameters \[\], got \['s'\]"):
        method_label("ifca", s=3)
    with pytest.raises(ValueError, match="method must be one of ifca, oracle, fedavg, fedprox, ls, ifca_data, "
                                         "oracle_data, cwls, got 'sgd'"):
        method_label("sgd")


def test_registry_is_read_only():
    with pytest.raises(TypeError):
        METHODS["sgd"] = METHODS["ifca"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        METHODS["ifca"].color = "red"


def test_no_registered_label_or_colour_is_spelled_elsewhere_in_plotting():
    """The figures of the library and of every study take labels and colours from the registry."""
    package = pathlib.Path(mixreg.plotting.__file__).parent
    studies = package.parent.parent / "experiments"
    paths = [*package.glob("*.py"), *studies.glob("*/figures.py")]
    assert len(paths) >= 2 + 10, [p.name for p in paths]  # the shared helpers and every study's figures
    for path in paths:
        source = path.read_text(encoding="utf-8")
        for style in STYLES:
            assert style.label not in source, (path.name, style.label)
            if style.color and style.color.startswith("#"):
                assert style.color.lower() not in source.lower(), (path.name, style.color)


# --------------------------------------------------------------------------------------------
# Every figure function on tiny synthetic inputs: legends, titles and colours from the registry
# --------------------------------------------------------------------------------------------


def _legend_texts(fig):
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [" ".join(text.get_text().split()) for legend in legends for text in legend.get_texts()]  # unwrapped


def _line_colours(ax):
    return {line.get_label(): matplotlib.colors.to_rgba(line.get_color()) for line in ax.get_lines()}


def _rgba(key):
    return matplotlib.colors.to_rgba(METHODS[key].color)


def test_success_figure_takes_titles_and_legend_from_the_registry():
    rows = []
    for sigma in (0.0, 0.5):
        for delta, rate in ((0.5, 0.1), (1.0, 0.5), (2.0, 0.9)):
            row = {"sigma": sigma, "separation_mean": delta}
            for rule in RULES:
                row[f"{rule}_success_rate"] = rate
                row[f"{rule}_success_low"] = max(rate - 0.1, 0)
                row[f"{rule}_success_high"] = min(rate + 0.1, 1)
            rows.append(row)
    fig = plot_success_vs_separation(rows, rules=tuple(RULES))["figure"]
    assert [ax.get_title().replace("\n", " ") for ax in fig.axes] == [rule_title(rule) for rule in RULES]
    texts = _legend_texts(fig)
    ifca = method_label("ifca", short=True)
    assert texts == [f"{ifca}, σ = 0", RULES["oracle"].label, f"{ifca}, σ = 0.5"]
    plt.close(fig)


def test_rounds_figure_takes_labels_and_colours_from_the_registry():
    rounds = np.arange(0, 21, 5)
    keys = ("ifca", "oracle", "fedavg", "fedprox")
    curves = [dict(key=key, rounds=rounds, median=np.exp(-rounds / (5.0 + j)), low=0.8 * np.exp(-rounds / (5.0 + j)),
                   high=1.2 * np.exp(-rounds / (5.0 + j))) for j, key in enumerate(keys)]
    curves[2]["label"] = method_label("fedavg", s=2)
    fig = plot_error_vs_rounds(curves, floor=(1e-3, None), switch_round=5)["figure"]
    expected = [method_label("ifca"), method_label("oracle"), "FMD → FedAvg(2)", method_label("fedprox"),
                method_label("ls")]
    assert _legend_texts(fig) == expected
    colours = _line_colours(fig.axes[0])
    for key, label in zip((*keys, "ls"), expected):
        assert colours[label] == _rgba(key), key
    assert [line.get_marker() for line in fig.axes[0].get_lines()[:4]] == [METHODS[k].marker for k in keys]
    plt.close(fig)


def test_scaling_figure_takes_labels_and_colours_from_the_registry():
    keys = ("fedavg", "fedprox", "ifca", "oracle", "ls")

    def series(n):
        return [(key, None, 0.1 * (j + 1) / np.arange(1, n + 1), 0.09 * (j + 1) / np.arange(1, n + 1),
                 0.11 * (j + 1) / np.arange(1, n + 1)) for j, key in enumerate(keys)]

    by_M = dict(M=np.array([100, 200, 400]), series=series(3), theory=(0.2 / np.arange(1, 4), "theory"))
    by_law = dict(laws=["equal", "zipf"], chi2=[0.0, 1.5], series=series(2), theory=None)
    rng = np.random.default_rng(0)
    rates = [dict(key=key, p=rng.uniform(0.05, 0.3, 5), measured=rng.uniform(0.01, 0.1, 5),
                  linear=rng.uniform(0.01, 0.1, 5), C1=0.3, C1_label="line") for key in ("fedavg", "fedprox")]
    fig = plot_two_phase_scaling(by_M, by_law, rates)["figure"]
    texts = _legend_texts(fig)
    assert texts[: len(keys)] == [method_label(key) for key in keys]  # the shared legend
    for key in ("fedavg", "fedprox"):
        assert f"{method_label(key)}: measured 1 − ρ" in texts and f"{method_label(key)}: exact linear rate" in texts
    for ax in fig.axes[:2]:  # error bars: their data line carries the method's colour and marker
        drawn = [c for c in ax.containers if isinstance(c, matplotlib.container.ErrorbarContainer)]
        assert [c.get_label() for c in drawn] == [method_label(key) for key in keys]
        for key, container in zip(keys, drawn):
            assert matplotlib.colors.to_rgba(container.lines[0].get_color()) == _rgba(key)
            assert container.lines[0].get_marker() == METHODS[key].marker
    plt.close(fig)


def test_rounds_panels_take_labels_and_colours_from_the_registry():
    rounds = np.arange(0, 21, 5)
    keys = ("ifca", "oracle", "ifca_data", "oracle_data")
    curves = [dict(key=key, rounds=rounds, median=np.exp(-rounds / (5.0 + j)), low=0.8 * np.exp(-rounds / (5.0 + j)),
                   high=1.2 * np.exp(-rounds / (5.0 + j))) for j, key in enumerate(keys)]
    theory = [dict(key="fedavg", rounds=rounds, values=np.exp(-rounds / 4.0), linestyle="--", label="prediction")]
    panels = [dict(title="left", curves=curves, floors=[("ls", 1e-3, None), ("cwls", 2e-3, None)]),
              dict(title="right", curves=[dict(curves[0], key="fedavg")], theory=theory)]
    fig = plot_two_phase_rounds(panels, switch_round=5, title="t", footnote="f")["figure"]
    left, right = fig.axes
    # a figure of its own: one legend above the panels, each entry once
    assert _legend_texts(fig) == [method_label(k) for k in keys] + [method_label("ls"), method_label("cwls"),
                                                                   method_label("fedavg"), "prediction"]
    colours = _line_colours(left)
    for key in (*keys, "ls", "cwls"):
        assert colours[method_label(key)] == _rgba(key), key
    assert _line_colours(right)["prediction"] == _rgba("fedavg")
    assert [ax.get_title() for ax in fig.axes] == ["left", "right"]
    plt.close(fig)
    fig, axes = plt.subplots(1, 2)  # the caller's axes: a legend in each panel, nothing added to the figure
    plot_two_phase_rounds(panels, switch_round=5, ax=axes)
    assert not fig.legends and [t.get_text() for t in axes[0].get_legend().get_texts()] == \
        [method_label(k) for k in keys] + [method_label("ls"), method_label("cwls")]
    plt.close(fig)


def test_contraction_figure_takes_labels_and_colours_from_the_registry():
    rng = np.random.default_rng(0)
    solvers = [dict(key=key, predicted=rng.uniform(0.9, 0.99, 6), measured=rng.uniform(0.9, 0.99, 6),
                    exact=rng.uniform(0.9, 0.99, 6), p=rng.uniform(0.05, 0.3, 6), C1=np.full(6, 0.5),
                    rounds=rng.uniform(10, 50, 6), rounds_predicted=rng.uniform(10, 50, 6))
               for key in ("fedavg", "fedprox")]
    solvers[1]["measured"][0] = np.nan  # a trial without a measured factor is left out
    drawn = plot_two_phase_contraction(solvers, title="t", footnote="f")
    fig = drawn["figure"]
    texts = _legend_texts(fig)
    for key in ("fedavg", "fedprox"):
        assert method_label(key) in texts
    assert drawn["C1"] == {"fedavg": 0.5, "fedprox": 0.5}  # the median derived C1, drawn as C1 p_min
    assert len(fig.axes) == 3
    plt.close(fig)


# --------------------------------------------------------------------------------------------
# A user's methods: register_style, automatic styles, and the two-phase figures' method_style
# --------------------------------------------------------------------------------------------


@pytest.fixture
def user_styles(monkeypatch):
    """register_style's registry, emptied for the test and restored after it."""
    import mixreg.methods

    monkeypatch.setattr(mixreg.methods, "_USER", {})


def _look(style):
    return matplotlib.colors.to_hex(style.color), style.marker, style.linestyle


@pytest.mark.parametrize("n", [12, 40, 231])
def test_unregistered_methods_of_a_figure_never_share_colour_marker_and_line_style(n):
    from mixreg.methods import AUTO_COLORS, styles_for

    keys = [f"user method {i}" for i in range(n)]
    styles = styles_for(keys)
    assert len({_look(style) for style in styles.values()}) == n
    assert list(styles) == keys and all(styles[key].label == key for key in keys)
    assert {style.color for style in styles.values()} <= set(AUTO_COLORS)
    # the style depends on the key and the set drawn: any order of the keys, the same styles
    assert styles_for(keys[::-1]) == styles


def test_automatic_styles_skip_registered_keys_and_neighbours_differ_in_everything():
    from mixreg.methods import COMPARE, auto_style, styles_for

    styles = styles_for(["b", "ifca", "a", "known_label_ls"])
    assert styles["ifca"] is COMPARE["ifca"] and styles["known_label_ls"] is COMPARE["known_label_ls"]
    assert styles["a"] == auto_style("a", 0) and styles["b"] == auto_style("b", 1)  # sorted among the unregistered
    for i in range(40):
        first, second = auto_style("x", i), auto_style("x", i + 1)
        assert all(u != v for u, v in zip(_look(first), _look(second)))
    with pytest.raises(ValueError, match="index must be an integer >= 0, got -1"):
        auto_style("x", -1)


def test_register_style_gives_a_users_method_its_style_and_refuses_built_in_names(user_styles):
    from mixreg.methods import registered_style, register_style, styles_for

    mine = register_style("mine", label="IFCA II, γ_t = γ_0/(1 + t/10)", color="tab:red")
    assert registered_style("mine") is mine and styles_for(["mine", "other"])["mine"] is mine
    assert mine.short == mine.label and mine.kind == "algorithm" and mine.study is None
    # without colour, marker or line style: automatic ones, distinct for each registration and
    # from the automatic styles of a figure's first unregistered keys
    a, b = register_style("a"), register_style("b")
    assert _look(a) != _look(b) and a.label == "a"
    unregistered = styles_for([f"u{i}" for i in range(40)]).values()
    assert not {_look(a), _look(b)} & {_look(style) for style in unregistered}
    for name in ("ifca", "known_label_ls", "honest"):
        with pytest.raises(ValueError, match=f"style {name!r} is a built-in method"):
            register_style(name)
    with pytest.raises(ValueError, match="'mine' is registered already; pass replace=True"):
        register_style("mine")
    again = register_style(MethodStyle("mine", "mine, again", "k", "o", "-"), replace=True)
    assert registered_style("mine") is again
    with pytest.raises(TypeError, match="style must be a MethodStyle or a method's name"):
        register_style(3)
    assert "mine" not in METHODS and "mine" not in mixreg.methods.COMPARE  # the built-in views stay as they were


def test_method_style_of_the_two_phase_figures_styles_every_key(user_styles):
    from mixreg.plotting import method_style, series_label

    assert method_style("fedavg") is METHODS["fedavg"]
    assert method_style(None).color is None and method_style(None).marker is None  # a line that is no method
    keys = ["fedavg", "mine", "yours", None]
    mine, yours = method_style("mine", among=keys), method_style("yours", among=keys)
    assert _look(mine) != _look(yours)
    assert series_label("mine", None) == "mine" and series_label("fedavg", None) == method_label("fedavg")
    with pytest.raises(ValueError, match="method must be one of"):
        series_label(None, None)


def test_the_scaling_figure_draws_unregistered_methods_apart():
    series = [(key, None, [1.0, 0.5], [0.8, 0.4], [1.2, 0.6]) for key in ("ifca", "mine", "yours")]
    by_M = dict(M=np.array([10.0, 20.0]), series=series, theory=None)
    by_law = dict(laws=["equal", "zipf"], chi2=[0.0, 1.5], series=series, theory=None)
    rates = [dict(key="mine", p=[0.1, 0.2], measured=[0.05, 0.1], linear=[0.05, 0.1], C1=0.5)]
    fig = plot_two_phase_scaling(by_M, by_law, rates, title="t")["figure"]
    drawn = [c for c in fig.axes[0].containers if isinstance(c, matplotlib.container.ErrorbarContainer)]
    assert len(drawn) == 3
    assert len({matplotlib.colors.to_hex(c.lines[0].get_color()) for c in drawn}) == 3
    assert len({c.lines[0].get_marker() for c in drawn}) == 3  # not one marker for every unregistered method
    assert {"mine", "yours"} <= set(_legend_texts(fig))
    plt.close(fig)


def test_a_users_methods_beside_the_builtins_get_colours_of_their_own():
    # the figure: every registered method and a few of the user's; before, the user's
    # took the Okabe-Ito colours nearest the built-ins' (k-FED's blue, one-shot's orange) and
    # two of three shared one colour
    from matplotlib.colors import to_rgb

    from mixreg.methods import COMPARE, styles_for

    builtins = [key for key, style in COMPARE.items() if style.kind != "reference"]
    mine = ["ifca_ii_decay", "ls", "two_phase"]
    styles = styles_for(builtins + mine)
    colours = [to_rgb(styles[key].color) for key in mine]
    assert len(set(colours)) == 3
    for colour in colours:
        nearest = min(sum((a - b) ** 2 for a, b in zip(colour, to_rgb(COMPARE[key].color))) ** 0.5 for key in builtins)
        assert nearest > 0.25
