"""Tests of experiments.success_vs_mn (IFCA Fig. 3(c)/(d)): options, presets, and what the figures show."""

import csv
import dataclasses
import json

import numpy as np
import pytest

from experiments import success_vs_mn as exp
from mixreg.theory import ls_oracle_success_probability
from experiments.success_vs_R.trial import ifca_success_levels_trial

pytestmark = pytest.mark.study  # the study's end-to-end test

# A reduced quick preset (one r, two n, four m, 8 trials; d = 50 as the quick preset): a few
# seconds of work, and it crosses the predicted boundary for both n.
REDUCED = ["--ms", "20", "40", "80", "120", "--ns", "5", "20", "--rs", "0.25", "--trials", "8", "--no-progress"]


def _read(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--ms", "1", "10"], "every value of ms must be at least k"),
        (["--ns", "0"], "ns must be an integer >= 1"),
        (["--ms", "10", "10"], "ms must be distinct"),
        (["--sigma", "-1"], "sigma must be finite and >= 0"),
        (["--rs", "0"], "rs must be finite and > 0"),
        (["--threshold-offset", "-1"], "threshold_offset must be finite and >= 0"),
        (["--preset", "paper-a"], "invalid choice"),
    ],
)
def test_bad_options_exit_with_a_clear_message(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        exp.STUDY.main(argv + ["--out", str(tmp_path / "o"), "--dry-run"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_presets_are_the_official_grids():
    c = exp.STUDY.config_from_args(exp.STUDY.parser().parse_args(["--preset", "paper-c"]))
    assert (c.k, c.d, c.sigma, c.trials, c.n_inits, c.n_rounds, c.dtype) == (2, 1000, 0.1, 40, 10, 300, "float32")
    assert c.ms == (50, 70, 100, 150, 200, 300, 400) and c.ns == (50, 100, 200) and c.rs == (0.1, 0.25)
    assert c.step_sizes == (1.0, 0.1, 0.01) and c.threshold_offset == 0.0 and c.protocol == "official"
    d = exp.STUDY.config_from_args(exp.STUDY.parser().parse_args(["--preset", "paper-d"]))
    assert (d.k, d.ms, d.ns, d.rs, d.step_sizes) == (4, (100, 200, 300, 400, 800), (50, 100, 200), (0.5, 0.75),
                                                     (2.0, 1.0, 0.5))
    # the official protocol: the two r of a trial share one draw (theta* = r b), one cell per (n, m)
    assert c.shared_draws and d.shared_draws
    cells = exp.cells_of(d)
    assert len(cells) == 3 * 5 and all(cell.r_levels == (0.5, 0.75) for cell in cells) and "r" not in cells[0].to_cell()
    independent = exp.cells_of(dataclasses.replace(d, shared_draws=False))
    assert len(independent) == 2 * 3 * 5 and exp.STUDY.cost(cells[0]) == 2 * exp.STUDY.cost(independent[0])
    assert exp.STUDY.sweep(c).trial_fn is ifca_success_levels_trial


def test_shared_draws_run_end_to_end_and_give_one_rate_per_r(tmp_path, monkeypatch):
    monkeypatch.setattr(exp, "STUDY", dataclasses.replace(exp.STUDY, figures_dir=tmp_path / "figures"))
    out = tmp_path / "run"
    argv = ["--ms", "10", "20", "--ns", "5", "--rs", "0.1", "0.5", "--trials", "3", "--n-rounds", "20",
            "--no-progress", "--shared-draws", "--out", str(out), "--jobs", "1"]
    assert exp.STUDY.main(argv) == 0
    assert len(_read(out / "trials.csv")) == 2 * 3  # one record per (m, trial) holding both r
    rates = _read(out / "rates.csv")
    assert sorted((float(row["r"]), int(row["m"])) for row in rates) == [(0.1, 10), (0.1, 20), (0.5, 10), (0.5, 20)]
    assert all(int(row["trials"]) == 3 for row in rates)
    separation = {float(row["r"]): float(row["separation_mean"]) for row in rates if row["m"] == "10"}
    assert separation[0.5] == pytest.approx(5 * separation[0.1])  # one pattern b per draw, theta* = r b
    assert not (tmp_path / "figures").exists()  # not a paper preset


def test_the_prediction_is_the_papers_floor_table():
    """papers_spec 3.8: for (c) the floor / sigma is 0.82 at (n, m) = (50, 100), 0.60 at (50, 150), 0.50 at
    (100, 100); success must be ~0 for (n = 50, m <= 100) and (n = 100, m <= 70)."""
    config = exp.STUDY.config_from_args(exp.STUDY.parser().parse_args(["--preset", "paper-c"]))
    rows = {(row["n"], row["m"]): row for row in exp.predictions(config)}
    assert rows[50, 100]["ls_rms_over_threshold"] * 0.6 == pytest.approx(0.82, abs=0.005)
    assert rows[100, 100]["ls_rms_over_threshold"] * 0.6 == pytest.approx(0.50, abs=0.005)
    unlikely = {key for key, row in rows.items() if row["ls_unlikely"]}
    assert {(50, 50), (50, 70), (50, 100), (100, 50), (100, 70)} <= unlikely
    assert (50, 150) in unlikely and rows[50, 150]["ls_rms_over_threshold"] < 1.01  # the borderline cell
    assert all(m < rows[n, m]["m_needed"] for n, m in unlikely)
    assert rows[200, 50]["oracle_success_probability"] > 0.999  # 0.50 sigma against 0.6 sigma at d = 1000


def test_oracle_prediction_matches_a_direct_simulation():
    """The predicted probability that known-label LS meets 0.6 sigma, against 2000 direct draws (d = 20)."""
    rng = np.random.default_rng(3)
    d, N, sigma = 20, 75, 1.0
    mean_dist = []
    for _ in range(2000):
        errs = []
        for _ in range(2):
            X = rng.standard_normal((N, d))
            errs.append(np.linalg.norm(np.linalg.lstsq(X, sigma * rng.standard_normal(N), rcond=None)[0]))
        mean_dist.append(np.mean(errs))
    observed = np.mean(np.array(mean_dist) < 0.6 * sigma)
    assert ls_oracle_success_probability(sigma, d, [N, N], 0.6 * sigma) == pytest.approx(observed, abs=0.04)


def test_dry_run_prints_the_plan(capsys, tmp_path):
    assert exp.STUDY.main(["--preset", "paper-c", "--dry-run", "--out", str(tmp_path / "o")]) == 0
    assert "tasks" in capsys.readouterr().out
    assert not (tmp_path / "o").exists()


def test_reduced_run_shows_the_predicted_structure(tmp_path, monkeypatch):
    figures = tmp_path / "figures"
    monkeypatch.setattr(exp, "STUDY", dataclasses.replace(exp.STUDY, figures_dir=tmp_path / "figures"))
    out = tmp_path / "run"
    assert exp.STUDY.main(REDUCED + ["--out", str(out), "--jobs", "2"]) == 0
    names = ["trials.csv", "rates.csv", "theory.csv", "crossings.csv", "manifest.json",
             "success_vs_mn.png", "success_vs_mn.pdf", "success_vs_mn_heatmap.png", "success_vs_mn_heatmap.pdf"]
    for name in names:
        assert (out / name).stat().st_size > 0, name
    assert not figures.exists()  # not a paper preset

    rates = {(int(r["n"]), int(r["m"])): r for r in _read(out / "rates.csv")}
    theory = {(int(r["n"]), int(r["m"])): r for r in _read(out / "theory.csv")}
    assert set(rates) == set(theory) and len(rates) == 8
    assert all(row["status"].startswith("prediction") for row in theory.values())
    rules = ("official", "honest", "oracle")
    for key, pred in theory.items():
        rate = {rule: float(rates[key][f"{rule}_success_rate"]) for rule in rules}
        p_oracle = float(pred["oracle_success_probability"])
        if pred["ls_unlikely"] == "True" and p_oracle < 1e-3:  # deep inside the predicted region
            assert all(v == 0.0 for v in rate.values()), (key, rate)
        if float(pred["ls_rms_over_threshold"]) < 0.8:  # the floor far below the threshold
            assert rate["oracle"] == 1.0, (key, rate)
    assert {key for key, pred in theory.items() if pred["ls_unlikely"] == "True"} == {(5, 20), (5, 40)}

    # success is non-decreasing in m for the largest n, within the Wilson intervals
    big = sorted((r for r in _read(out / "rates.csv") if r["n"] == "20"), key=lambda r: int(r["m"]))
    for rule in rules:
        for a, b in zip(big, big[1:]):
            assert float(b[f"{rule}_success_high"]) >= float(a[f"{rule}_success_low"]), (rule, a["m"], b["m"])
    # once clustered, IFCA converges to the known-label LS solution: it never meets the threshold
    # in a trial where known-label LS does not
    for row in _read(out / "trials.csv"):
        if row["official_success"] == "True":
            assert row["oracle_success"] == "True", row

    crossings = _read(out / "crossings.csv")
    assert len(crossings) == 3 * 2
    for row in crossings:
        if row["m_half"]:
            assert float(row["m_half_low"]) <= float(row["m_half"]) <= float(row["m_half_high"])
            # no rule crosses 1/2 well inside the predicted region
            assert float(row["m_half"]) >= 0.7 * float(row["m_needed"]), row

    manifest = json.loads((out / "manifest.json").read_text())
    registered = manifest["sweep"]["config"]["predictions"]
    assert "before any run" in registered["rule"]
    assert {(c["n"], c["m"]) for c in registered["cells"] if c["ls_unlikely"]} == {(5, 20), (5, 40)}
    # the prediction objects themselves, registered with their hashes before the first trial
    assert [(p["name"], p["sha256"]) for p in manifest["predictions"]] == [(p.name, p.sha256) for p in
                                                                          exp.PREDICTIONS]
    assert all(p["registered"]["trials_before"] == 0 for p in manifest["predictions"])

    before = (out / "success_vs_mn.png").read_bytes()
    (out / "success_vs_mn.png").unlink()
    assert exp.STUDY.main(["--redraw", str(out)]) == 0
    assert (out / "success_vs_mn.png").read_bytes() == before
    assert not figures.exists()


def test_the_predictions_are_registered_objects_fixed_by_the_sizes():
    """Each number of theory.csv is one of the study's registered predictions at its cell, with the
    threshold's factor 0.6 sourced from the success rule; known-label least squares at m = 40,
    n = 5, k = 2, d = 50: N = 100 pooled points, RMS 0.1 sqrt(50 / 49) over the threshold 0.06."""
    config = exp.Config(preset="t", k=2, ms=(10, 40), ns=(5, 20), d=50, sigma=0.1, rs=(0.25,), trials=2, n_inits=1,
                        step_sizes=(0.1,), n_rounds=5, dtype="float64")
    row = next(r for r in exp.predictions(config) if (r["m"], r["n"]) == (40, 5))
    cell = dict(k=2, m=40, n=5, d=50, sigma=0.1, threshold_offset=0.0)
    ratio, probability, needed = (p.predict([cell])[0] for p in exp.PREDICTIONS)
    assert (ratio, probability, needed) == (row["ls_rms_over_threshold"], row["oracle_success_probability"],
                                            row["m_needed"])
    assert ratio == pytest.approx(0.1 * np.sqrt(50 / 49) / 0.06, rel=1e-12) and row["points_per_cluster"] == 100
    records = [p.to_json() for p in exp.PREDICTIONS]
    assert all(r["fixed_before_data"] and r["constants"]["factor"]["value"] == 0.6 for r in records)
    assert all("success rule" in r["constants"]["factor"]["source"] for r in records)
    assert len({p.sha256 for p in exp.PREDICTIONS}) == 3


def test_figure_says_the_region_is_a_prediction(tmp_path):
    """Legend and footnote of both figures name the shaded region a prediction made before the runs."""
    import matplotlib.pyplot as plt

    config = exp.Config(preset="t", k=2, ms=(10, 40), ns=(5, 20), d=50, sigma=0.1, rs=(0.25,), trials=2, n_inits=1,
                        step_sizes=(0.1,), n_rounds=5, dtype="float64")
    rates = []
    for pred in exp.predictions(config):
        row = dict(r=0.25, n=pred["n"], m=pred["m"], trials=2, separation_mean=1.2)
        for rule in exp.RULES_DRAWN:
            rate = 0.0 if pred["ls_unlikely"] else 1.0
            row.update({f"{rule}_success_rate": rate, f"{rule}_success_low": 0.0, f"{rule}_success_high": 1.0})
        rates.append(row)
    theory = exp.predictions(config)
    for drawn in (exp.plot_success_vs_m(rates, theory), exp.plot_success_heatmap(rates, theory)):
        fig = drawn["figure"]
        texts = [t.get_text().replace("\n", " ") for legend in fig.legends for t in legend.get_texts()]
        assert any("prediction, before the runs" in t for t in texts)
        plt.close(fig)


def test_shared_draws_off_is_not_part_of_the_identity():
    """Off, the option is not recorded, so it never changes a sweep's key, and a manifest without
    the field reads back with its default (results directories written before the option redraw).
    The quick key is pinned: it changes only with the registered predictions (their text and
    the oracle's success probabilities were added to them after 691ca527b8e1a218)."""
    from mixreg.cli import config_from_record

    quick = exp.STUDY.config_from_args(exp.STUDY.parser().parse_args([]))
    sweep = exp.STUDY.sweep(quick)
    assert sweep.key == "69badef56e1a8b86" and "shared_draws" not in sweep.config
    record = json.loads(json.dumps(sweep.config))
    assert config_from_record(exp.Config, record) == quick
    paired = exp.STUDY.sweep(dataclasses.replace(quick, shared_draws=True))
    assert paired.config["shared_draws"] is True and paired.key != sweep.key
    with pytest.raises(ValueError, match="k missing"):
        config_from_record(exp.Config, {key: value for key, value in record.items() if key != "k"})


def _paper_c_tables(rate_of):
    """paper-c's predictions and made-up rates ``rate_of(r, prediction row)`` for every rule."""
    config = exp.Config(preset="paper-c", **exp.PRESETS["paper-c"]).validate()
    theory = exp.predictions(config)
    rates = []
    for r in config.rs:
        for pred in theory:
            rate = rate_of(r, pred)
            row = dict(r=r, n=pred["n"], m=pred["m"], trials=40, separation_mean=22.4 * r)
            row.update({f"{rule}_success_{part}": rate for rule in exp.RULES_DRAWN for part in ("rate", "low", "high")})
            rates.append(row)
    return config, theory, rates


def test_the_region_check_reports_the_edge_cells_apart_and_the_papers_r_first():
    """(m, n) = (150, 50) has an LS RMS error just above the threshold but a predicted oracle
    success probability of 0.40: it is reported beside that prediction, not as 'unlikely'."""
    config, theory, rates = _paper_c_tables(lambda r, pred: 0.5 if (pred["m"], pred["n"]) == (150, 50)
                                            else (0.01 if r == 0.1 else 0.02) if pred["ls_unlikely"] else 1.0)
    edge = [pred for pred in theory if pred["ls_unlikely"] and pred["oracle_success_probability"] >= exp.EDGE_PROBABILITY]
    assert [(pred["m"], pred["n"]) for pred in edge] == [(150, 50)]
    assert edge[0]["oracle_success_probability"] == pytest.approx(0.396, abs=0.01)
    text = exp.figures._prediction_check(rates, theory, paper_r=0.25)
    assert text.index("r = 0.25 (the paper's)") < text.index("r = 0.1:")
    assert "5 cells deep inside (predicted oracle success < 0.05), highest official 0.01, honest 0.01, oracle 0.01" in text
    assert "5 cells deep inside (predicted oracle success < 0.05), highest official 0.02" in text
    assert text.count("edge cell (m, n) = (150, 50), predicted oracle 0.4: official 0.5, honest 0.5, oracle 0.5") == 2


def test_a_crossing_outside_the_grid_says_on_which_side():
    config, theory, rates = _paper_c_tables(lambda r, pred: 1.0 if pred["n"] == 200 else 0.0 if pred["n"] == 50 else
                                            float(pred["m"] >= 100))
    row = dict(r=0.1, m_half=None)
    assert exp.figures._crossing_text(dict(row, n=200), rates) == "below the grid (rate 1 at m = 50)"
    assert exp.figures._crossing_text(dict(row, n=50), rates) == "beyond the grid (rate 0 at m = 400)"
    assert exp.figures._crossing_text(dict(row, n=100, m_half=83.7), rates) == "83.7"


def test_the_papers_r_is_named_in_its_panels_titles():
    import matplotlib.pyplot as plt

    config, theory, rates = _paper_c_tables(lambda r, pred: float(not pred["ls_unlikely"]))
    for plot in (exp.plot_success_vs_m, exp.plot_success_heatmap):
        fig = plot(rates, theory, paper_r=exp.PAPER_R["paper-c"])["figure"]
        titles = [ax.get_title().replace("\n", " ") for ax in fig.axes if ax.get_title()]
        assert len(titles) == 6
        assert all(("the paper's panel" in t) == ("r = 0.1 " in t) for t in titles)
        plt.close(fig)


@pytest.mark.parametrize("style, across", [("two-column", "rules"), ("one-column", "r")])
def test_the_rules_are_columns_and_the_r_values_rows_when_three_columns_fit(style, across):
    """At 6.9 in the three rules side by side, one row per r, the figure at most 6 in tall (a
    journal's text block is 9.25 in and needs room for the caption); at 3.3 in the grid is
    transposed (three 1.1 in columns would not be readable).  ``axes`` are in (r, rule) order
    either way, and the heatmap's cell numbers are "small" where the cells allow it."""
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    from mixreg.plotting import use_style

    config, theory, rates = _paper_c_tables(lambda r, pred: 0.55 if pred["ls_unlikely"] else 1.0)
    with use_style(style):
        small = mpl.font_manager.FontProperties(size="small").get_size_in_points()
        for plot in (exp.plot_success_vs_m, exp.plot_success_heatmap):
            drawn = plot(rates, theory, rules=exp.RULES_DRAWN, paper_r=0.1, title="t", footnote="f")
            fig, axes = drawn["figure"], drawn["axes"]
            order = [(r, rule) for r in config.rs for rule in exp.RULES_DRAWN]
            for ax, (r, rule) in zip(axes, order):
                assert ax.get_title().startswith("known-label LS" if rule == "oracle" else f"{rule} rule")
                assert f"r = {r:g} " in ax.get_title().replace("\n", " ")
            grid = {(ax.get_subplotspec().rowspan.start, ax.get_subplotspec().colspan.start): key
                    for ax, key in zip(axes, order)}
            columns = {col for _, col in grid}
            if across == "rules":
                assert len(columns) == 3 and all(grid[row, col][1] == exp.RULES_DRAWN[col] for row, col in grid)
                assert fig.get_figheight() <= 6.0
            else:
                assert len(columns) == 2 and all(grid[row, col][1] == exp.RULES_DRAWN[row] for row, col in grid)
            if plot is exp.plot_success_heatmap and across == "rules":
                sizes = {text.get_fontsize() for ax in axes for text in ax.texts}
                assert sorted(sizes) == pytest.approx([small])
            plt.close(fig)


def test_paired_table_compares_the_r_of_a_draw_by_mcnemar():
    """With shared draws the two r of a cell are compared trial by trial (exact McNemar on the trials where
    they disagree); without, the table says why nothing is tested."""
    from experiments.success_vs_mn.summary import _paired_rows

    config = exp.Config(preset="t", **{**exp.PRESETS["quick"], "ms": (10,), "ns": (5,), "shared_draws": True})
    records = [dict(r=r, n=5, m=10, cell=0, trial=t, error="", official_success=(t < 30 if r == 0.25 else t < 20),
                    honest_success=True, oracle_success=True)
               for t in range(40) for r in (0.1, 0.25)]
    rows = {row["rule"]: row for row in _paired_rows(config, records)}
    assert rows["official"]["test"].startswith("exact McNemar") and rows["official"]["discordant"] == 10
    assert rows["official"]["p_value"] == pytest.approx(2 * 0.5**10) and rows["official"]["verdict"] == "differ at 5%"
    assert rows["honest"]["p_value"] == 1.0
    unpaired = _paired_rows(dataclasses.replace(config, shared_draws=False), records)
    assert {row["test"] for row in unpaired} == {"not tested"} and "no --shared-draws" in unpaired[0]["reason"]


def test_paired_table_of_failed_trials_says_why():
    from experiments.success_vs_mn.summary import _paired_rows

    config = exp.Config(preset="t", **{**exp.PRESETS["quick"], "ms": (10,), "ns": (5,), "shared_draws": True})
    rows = _paired_rows(config, [dict(r=0.1, n=5, m=10, cell=0, trial=0, error="ValueError: boom")])
    assert [row["test"] for row in rows] == ["not tested"] * 3 and "error" in rows[0]["reason"]
