"""The basin study end to end on its quick preset: the edges against Assumption 1 and the population edge.

The quick preset runs once per module (two worker processes) into a temporary directory, its
figures directory redirected there so that nothing is written to ``figures/``.
"""

from __future__ import annotations

import pytest

from experiments import ifca_basin as study
from experiments.ifca_mechanism.testing import check_paper_plan, check_refused, run_quick
from experiments.ifca_mechanism.testing import table as _table

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def basin(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    yield run_quick(study, tmp_path_factory.mktemp(study.NAME), mp)
    mp.undo()


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
    for k in study.PRESETS["quick"]["ks"]:
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


@pytest.mark.parametrize("argv,message", [
    (["--directions", "up"], "invalid choice"),
    (["--sigma", "0"], "sigma must be finite and > 0"),
    (["--m-per", "1", "--n-prime", "2"], "m_per * n_prime must exceed"),
])
def test_bad_options_exit_with_a_clear_message(argv, message, capsys, tmp_path):
    check_refused(study, argv, message, capsys, tmp_path)


def test_paper_preset_plans(capsys, tmp_path):
    check_paper_plan(study, capsys, tmp_path)


def test_figures_draw_into_given_axes_and_write_captions(basin, tmp_path):
    """Each plot function draws into the axes it is given and returns what it drew; ``draw``
    writes a caption file beside each figure."""
    from experiments.ifca_mechanism.testing import check_figures

    check_figures(study, basin, tmp_path, ["plot_ifca_basin"])
