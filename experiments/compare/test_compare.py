"""The head-to-head comparison end to end: the quick preset, run once, and what it must show.

The module's fixture runs ``python -m experiments.compare`` (the quick preset, unchanged) into a
temporary directory; every test reads its tables.  About a minute on two cores.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments import compare
from experiments.compare.trial import COMPARED, METHODS, REFERENCES, REGIMES, VARIANTS, spec_of
from mixreg.algorithms import ALGORITHMS
from mixreg.montecarlo.reader import read_results

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare") / "quick"
    assert compare.STUDY.main(["--out", str(out), "--no-progress"]) == 0
    results = read_results(out)
    return dict(out=out, summary=results.table("summary.csv"), records=results.records,
                manifest=json.loads((out / "manifest.json").read_text()))


def _row(run, regime, method):
    rows = [r for r in run["summary"] if r["regime"] == regime and r["method"] == method]
    assert len(rows) == 1, (regime, method)
    return rows[0]


def test_every_method_on_every_regime_with_a_figure_each(run):
    assert METHODS == COMPARED + VARIANTS + REFERENCES and set(COMPARED) <= set(ALGORITHMS)
    assert {(r["regime"], r["method"]) for r in run["summary"]} == {(g, m) for g in REGIMES for m in METHODS}
    for regime in REGIMES:
        for suffix in ("png", "pdf"):
            assert (run["out"] / f"compare_{regime}.{suffix}").is_file()
    config = run["manifest"]["sweep"]["config"]
    assert "lowest final training objective" in config["tuning"] and config["steps"] == list(compare.STEPS)
    assert all(not r["error"] for r in run["records"])


def test_one_shot_breaks_down_when_clients_hold_fewer_points_than_dimensions(run):
    assert spec_of("small_n", m=40, n=40, d=10, k=2, sigma=0.5, separation=2.0).n < 10
    assert _row(run, "small_n", "oneshot")["mis_clients_mean"] >= 0.2
    assert _row(run, "balanced", "oneshot")["mis_clients_mean"] <= 0.02
    assert _row(run, "balanced", "oneshot")["err_max_mean"] < 1.5 * _row(run, "balanced", "known_label_ls")["err_max_mean"]


def test_pacfl_on_x_alone_is_at_chance_unless_the_covariances_differ(run):
    for regime in ("balanced", "high_snr", "low_snr"):
        assert _row(run, regime, "pacfl_x")["mis_clients_mean"] >= 0.35, regime  # 1/2 is chance at k = 2
    assert _row(run, "covariances", "pacfl_x")["mis_clients_mean"] <= 0.25
    # the joint (x, y) signature sees the clusters where x alone cannot
    assert _row(run, "balanced", "pacfl")["mis_clients_mean"] <= 0.15
    # clients of 2 points (p = 3) send the 2 vectors their data span; accepted, but near chance
    row = _row(run, "small_n", "pacfl")
    assert row["refused"] == 0 and row["mis_clients_mean"] >= 0.3


def test_fesem_from_its_papers_start(run):
    """FeSEM as published (k-means of the local models, best of 20) against FeSEM from the shared
    random starts: the k-means start clusters at least as well where the local models are good,
    and its runs take more than the one round a stop rule blind to the local models gave them."""
    for regime in ("high_snr", "covariances"):
        paper, shared = _row(run, regime, "fesem_paper"), _row(run, regime, "fesem")
        assert paper["mis_clients_mean"] <= 0.02 < shared["mis_clients_mean"], regime
    assert all(_row(run, regime, "fesem_paper")["rounds_mean"] > 5 for regime in REGIMES)


def test_point_level_methods_win_on_clients_that_mix_clusters(run):
    ifca, points = _row(run, "mixed", "ifca"), _row(run, "mixed", "ifca_points")
    # a client-level method labels a whole client: the foreign points (about 20%) stay wrong
    assert 0.15 <= ifca["mis_points_mean"] <= 0.25 and ifca["mis_clients_mean"] <= 0.02
    assert points["err_max_mean"] < 0.3 * ifca["err_max_mean"]
    assert points["mis_points_mean"] < ifca["mis_points_mean"]
    # on ordinary clients, labelling points one by one costs a floor of mislabelled points
    assert _row(run, "balanced", "ifca_points")["mis_points_mean"] > _row(run, "balanced", "ifca")["mis_points_mean"]


def test_reference_points_bracket_the_methods(run):
    for regime in REGIMES:
        oracle = _row(run, regime, "known_label_ls")
        assert oracle["mis_points_mean"] == 0 and oracle["refused"] == 0
        glob = _row(run, regime, "global_fedavg")
        assert glob["err_max_mean"] > 2 * oracle["err_max_mean"], regime  # one model cannot fit two clusters
    # IFCA from the truth reaches the oracle's error where the clusters are easy
    for regime in ("balanced", "high_snr", "unequal_p"):
        assert _row(run, regime, "ifca_truth")["err_max_mean"] == pytest.approx(
            _row(run, regime, "known_label_ls")["err_max_mean"], rel=0.05)


def test_communication_is_counted_from_each_protocol(run):
    d = 10
    for rec in run["records"]:
        rounds = rec["ifca_rounds"]
        assert rec["ifca_upload"] == (d + 1) * rounds and rec["ifca_download"] == 2 * d * rounds
        assert rec["local_only_upload"] == 0
        if not rec["oneshot_refused"]:
            assert rec["oneshot_upload"] == d + d * rec["oneshot_rounds"]
    assert all(np.isfinite(r["time_mean"]) for r in run["summary"] if r["refused"] < r["trials"])


def test_redraw_from_the_tables_alone(run, tmp_path):
    assert compare.STUDY.main(["--redraw", str(run["out"])]) == 0


# --------------------------------------------------------------------------- refusals per method


def _tiny(tmp_path, *flags):
    """A one-trial comparison at tiny sizes; its exit status and summary table."""
    out = tmp_path / "tiny"
    status = compare.STUDY.main(["--out", str(out), "--no-progress", "--trials", "1", "--m", "10", "--n", "10",
                           "--n-inits", "1", "--n-rounds", "5", *flags])
    return status, read_results(out)


def _refused_alone(results, regime, method, reason):
    """``method`` is recorded as refused for ``reason`` in every trial; every other method ran."""
    assert all(not r["error"] for r in results.records)
    summary = {row["method"]: row for row in results.table("summary.csv") if row["regime"] == regime}
    assert set(summary) == set(METHODS)
    row = summary[method]
    assert (row["trials"], row["refused"], row["refusal"]) == (1, 1, reason)
    assert np.isnan(row["err_mean_mean"])
    assert all(row["refused"] == 0 for name, row in summary.items() if name != method)
    assert all(np.isfinite(row["err_mean_mean"]) for name, row in summary.items()
               if name != method and not row["all_diverged"])


def test_pacfl_x_refused_in_dimension_3_while_the_others_run(tmp_path, capsys):
    status, results = _tiny(tmp_path, "--d", "3", "--regimes", "balanced")
    err = capsys.readouterr().err
    assert status == 0, err
    assert ("warning: regime balanced: pacfl_x needs d >= 4 for p = 3 signature vectors; got --d 3 "
            "(recorded as refused; the other methods run)") in err
    assert "pacfl needs" not in err  # the joint (x, y) signature has d + 1 = 4 dimensions
    _refused_alone(results, "balanced", "pacfl_x", "needs d >= 4 for p = 3 signature vectors; got d = 3")
    caption = (tmp_path / "tiny" / "compare_balanced.caption.txt").read_text()  # the reason: in the caption
    assert "PACFL (x) refused: needs d >= 4 for p = 3 signature vectors; got d = 3." in caption


def test_kfed_refused_on_clients_of_one_point_while_the_others_run(tmp_path, capsys):
    status, results = _tiny(tmp_path, "--d", "7", "--regimes", "small_n")
    err = capsys.readouterr().err
    assert status == 0, err
    assert ("warning: regime small_n: kfed needs every client to hold at least k' = k = 2 points (it splits its "
            "points into k' local groups); got n_i = d/5 = 1 in the small_n regime (--d 7)") in err
    assert "local_clusters" not in err  # no internal default named
    _refused_alone(results, "small_n", "kfed", "needs every client to hold at least k' = k = 2 points (it splits "
                                               "its points into k' local groups); got min n_i = 1")


def test_no_refusal_warned_at_the_quick_presets_sizes():
    config = compare.Config(preset="quick", **compare.PRESETS["quick"])
    assert compare.method_refusals(config) == []


def test_a_method_that_did_not_run_is_an_error_not_divergence(run):
    # the trap: a method whose column is missing (its worker never had it) was summarised as
    # "all_diverged" with NaN metrics, exit 0
    from experiments.compare.summary import summarise

    config = compare.STUDY.preset("quick")
    records = [{key: value for key, value in rec.items() if not key.startswith("kfed_")} for rec in run["records"]]
    with pytest.raises(RuntimeError, match=r"no record of 'kfed': those methods did not run, which is not divergence"):
        summarise(config, records)


def test_figures_draw_into_given_axes_and_write_captions(run, tmp_path):
    """Each plot function draws into the axes it is given and returns what it drew; ``draw``
    writes a caption file beside each figure."""
    from experiments.ifca_mechanism.testing import check_figures

    check_figures(compare, run["out"], tmp_path, ["plot_comparison"])
