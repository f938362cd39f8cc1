"""The three IFCA mechanism experiments end to end on their quick presets, with assertions on what
their tables show (``experiments/ifca_basin.py``, ``ifca_misclustering.py``, ``ifca_contraction.py``).

Each quick preset runs once per session (module-scoped fixtures, two worker processes) into a
temporary directory; ``REPO`` is redirected so that nothing is written to ``figures/``.
"""

from __future__ import annotations

import csv
import math

import pytest

from experiments import ifca_basin, ifca_contraction, ifca_misclustering


def _table(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _run(module, tmp_path_factory, monkeypatch_module):
    root = tmp_path_factory.mktemp(module.NAME)
    monkeypatch_module.setattr(module, "REPO", root)  # a quick run must never write into figures/
    out = root / "run"
    assert module.main(["--out", str(out), "--jobs", "2", "--no-progress"]) == 0
    for name in (*module.TABLES, "trials", "manifest"):
        suffix = ".json" if name == "manifest" else ".csv"
        assert (out / f"{name}{suffix}").stat().st_size > 0, name
    for suffix in (".png", ".pdf"):
        assert (out / f"{module.NAME}{suffix}").stat().st_size > 10_000
    assert not (root / "figures").exists()
    return out


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.fixture(scope="module")
def misclustering(tmp_path_factory, monkeypatch_module):
    return _run(ifca_misclustering, tmp_path_factory, monkeypatch_module)


@pytest.fixture(scope="module")
def basin(tmp_path_factory, monkeypatch_module):
    return _run(ifca_basin, tmp_path_factory, monkeypatch_module)


@pytest.fixture(scope="module")
def contraction(tmp_path_factory, monkeypatch_module):
    return _run(ifca_contraction, tmp_path_factory, monkeypatch_module)


# ------------------------------------------------------------------------------ misclustering


def test_exact_probability_lies_in_the_measured_intervals(misclustering):
    """The exact probability (no fitted constant) lies in the simultaneous 95% Wilson interval
    of the measured rate at every (rho, n') of the quick grid except at most one, and in the
    per-cell intervals about as often as their level says."""
    rows = _table(misclustering / "rates.csv")
    assert len(rows) >= 20
    assert sum(row["inside_sim"] != "True" for row in rows) <= 1
    assert sum(row["inside"] != "True" for row in rows) <= 4
    for row in rows:  # the measurement is IFCA's: every worker of every trial is counted
        assert int(row["workers"]) == int(row["trials"]) * ifca_misclustering.PRESETS["quick"]["m"]


def test_fitted_exponent_against_the_exact_exponents(misclustering):
    """The verdicts say whether the exponents lie in the bootstrap interval; the measured decay
    over the grid is steeper than the asymptotic Chernoff exponent at every rho (the n'^(-1/2)
    prefactor of the probability), while the exact probability's own slope on the same grid is
    inside the interval for most rho."""
    rows = _table(misclustering / "exponents.csv")
    for row in rows:
        low, high, chernoff = float(row["fitted_low"]), float(row["fitted_high"]), float(row["chernoff"])
        assert row["verdict_chernoff"] == ("consistent" if low <= chernoff <= high else "contradicts")
        slope = float(row["exact_slope"])
        assert row["verdict_exact_slope"] == ("consistent" if low <= slope <= high else "contradicts")
        assert chernoff < low, row
        assert chernoff < slope
    assert sum(row["verdict_exact_slope"] == "consistent" for row in rows) >= len(rows) - 2


def test_lemma1_shape_fitted_on_some_rho_misses_the_held_out_ones(misclustering):
    """One c4 fitted on the middle rho; the held-out residual at the largest rho is large and
    positive: (rho/(rho+1))^2 saturates while the exponent keeps growing like (1/2) log rho."""
    rows = _table(misclustering / "exponents.csv")
    c4 = {float(row["c4_fitted"]) for row in rows}
    assert len(c4) == 1 and 0.3 < c4.pop() < 0.8
    held = [row for row in rows if row["role"] == "held out"]
    assert held and all(math.isfinite(float(row["residual"])) for row in held)
    top = max(held, key=lambda row: float(row["rho"]))
    assert float(top["residual"]) > 0.25
    for row in rows:
        assert float(row["lemma1_bound"]) < float(row["chernoff"])  # c4 = 1/9 stays a bound


# ------------------------------------------------------------------------------ basin


def _edges(basin):
    return {(int(r["k"]), r["direction"], r["variant"], r["notion"]): float(r["edge"])
            for r in _table(basin / "edges.csv")}


def test_inside_assumption1_every_start_converges(basin):
    for row in _table(basin / "rates.csv"):
        if float(row["alpha"]) <= 0.25:
            for v in ("rs", "fb"):
                assert float(row[f"{v}_success_rate"]) == 1.0, row
                assert float(row[f"{v}_same_success_rate"]) == 1.0, row


def test_adversarial_and_shifted_edges_are_below_the_random_edge(basin):
    """Theorem 1's notion (every estimate to its own centre): the adversarial edge sits at the
    population edge 1/2 and below the random directions' edge; the shifted direction (a model
    taking two clusters) fails earlier than the random directions even up to permutation."""
    edges = _edges(basin)
    for k in ifca_basin.PRESETS["quick"]["ks"]:
        for v in ("rs", "fb"):
            adv = edges[(k, "adversarial", v, "same_success")]
            assert 0.4 < adv < 0.6
            assert adv < edges[(k, "random", v, "same_success")]
            assert edges[(k, "shifted", v, "success")] < edges[(k, "random", v, "success")]
            assert edges[(k, "shifted", v, "success")] > 0.5  # finite n' moves it past the population edge


def test_k2_adversarial_start_beyond_one_half_converges_to_the_swapped_truth(basin):
    rows = [r for r in _table(basin / "rates.csv") if r["k"] == "2" and r["direction"] == "adversarial"
            and float(r["alpha"]) >= 0.6]
    assert rows
    for row in rows:
        assert float(row["rs_success_rate"]) >= 0.9 and float(row["rs_same_success_rate"]) == 0.0


# ------------------------------------------------------------------------------ contraction


def _violations(contraction):
    return {(r["scope"], r["bound"]): r for r in _table(contraction / "violations.csv")}


def test_theorem1_rhs_with_the_test_constants_is_never_violated_inside_assumption1(contraction):
    rows = _violations(contraction)
    assert int(rows[("alpha <= 1/4 (Assumption 1)", "Thm 1 RHS, test-suite constants")]["violations"]) == 0
    assert float(rows[("all cells", "Thm 1 RHS, test-suite constants")]["c3_needed_max"]) < 1.0  # << c3 = 60


def test_misclustering_breaks_the_bound_without_its_third_term(contraction):
    """Where a few percent of the workers are misclustered (small n', outside Assumption 2) the
    bound without its misclustering term fails in some draws; inside Assumptions 1 and 2 (unit
    constants) it never does."""
    rows = _violations(contraction)
    assert int(rows[("alpha <= 1/4 (Assumption 1)", "1/2 + noise term (no misclustering term)")]["violations"]) > 0
    inside = rows[("alpha <= 1/4 and Assumption 2 (unit constants)", "1/2 + noise term (no misclustering term)")]
    assert int(inside["draws"]) > 0 and int(inside["violations"]) == 0
    cells = _table(contraction / "ratios.csv")
    broken = [c for c in cells if int(c["noise_violations"]) > 0 and c["in_assumption1"] == "True"]
    assert broken and all(float(c["wrong_mean"]) > 0.02 and c["assumption2_unit"] == "False" for c in broken)


def test_measured_misclustering_matches_the_exact_probability(contraction):
    m = ifca_contraction.PRESETS["quick"]["m"]
    for c in _table(contraction / "ratios.csv"):
        exact, measured = float(c["exact_wrong_mean"]), float(c["wrong_mean"])
        if exact >= 0.01:
            se = math.sqrt(exact * (1 - exact) / (int(c["trials"]) * m))
            assert abs(measured - exact) <= 5 * se + 0.1 * exact, c


def test_redraw_reproduces_the_figure_from_the_tables(contraction, capsys):
    assert ifca_contraction.main(["--redraw", str(contraction)]) == 0
    assert "ifca_contraction.png" in capsys.readouterr().out


@pytest.mark.parametrize(
    "module,argv,message",
    [
        (ifca_misclustering, ["--fit-rhos", "3"], "fit_rhos must be a non-empty subset"),
        (ifca_misclustering, ["--targets", "0"], "targets must be finite and > 0"),
        (ifca_basin, ["--directions", "up"], "invalid choice"),
        (ifca_basin, ["--sigma", "0"], "sigma must be finite and > 0"),
        (ifca_basin, ["--m-per", "1", "--n-prime", "2"], "m_per * n_prime must exceed"),
        (ifca_contraction, ["--c3", "-1"], "c3 must be finite and >= 0"),
        (ifca_contraction, ["--n-primes", "0"], "n_primes must be integers >= 1"),
    ],
)
def test_bad_options_exit_with_a_clear_message(module, argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        module.main(argv + ["--out", str(tmp_path / "o"), "--dry-run"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("module", [ifca_basin, ifca_misclustering, ifca_contraction])
def test_paper_preset_plans(module, capsys, tmp_path):
    assert module.main(["--preset", "paper", "--dry-run", "--out", str(tmp_path / "o")]) == 0
    assert "tasks" in capsys.readouterr().out
