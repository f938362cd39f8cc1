"""The two-phase study: trial function, its measurements, summaries and the command line.

The end-to-end test runs a reduced grid (k = 2, d = 5, M = 600, Zipf sizes of mean 6 on [1, 100],
4 trials per cell) and asserts what the experiment shows on unequal client sizes.
"""

import csv
import dataclasses
import json

import numpy as np
import pytest

from experiments import two_phase
from experiments.two_phase.summary import GAP_TOLERANCE
from experiments.two_phase.trial import (
    LabelMapFixedPoints,
    curve_columns,
    design_trace,
    phase2_split,
    split_rounds,
    two_phase_trial,
)
from mixreg.algorithms.fedx import fedx, fedx_linear_rates
from mixreg.algorithms.ifca import ifca
from mixreg.baselines import client_weighted_least_squares, known_label_least_squares
from mixreg.metrics import matched_max_distance
from mixreg.problems import client_sizes, cluster_proportions, make_problem, make_problem_from_parameters
from mixreg.theory import sxy_predicted_contraction
from mixreg.trajectories import decoded_labels, labels_window, measured_contraction

pytestmark = pytest.mark.study

TINY = ["--Ms", "60", "120", "--M-ref", "120", "--laws", "equal", "zipf", "--law-ref", "zipf", "--p-mins", "0.2",
        "--p-ref", "0.2", "--trials", "2", "--d", "4", "--k", "2", "--n-max", "20", "--size-mean", "4",
        "--fmd-rounds", "3", "--fx-rounds", "6", "--checkpoint-every", "2", "--ifca-restarts", "1",
        "--steps", "0.5", "1", "--anchor-points", "30", "--no-progress"]

# The reduced grid of the end-to-end check: the reference cell has Zipf sizes (half the clients hold
# one point), the other equal sizes (but for the two anchors).
REDUCED = ["--Ms", "600", "--M-ref", "600", "--laws", "equal", "--law-ref", "zipf", "--p-mins", "0.2",
           "--p-ref", "0.2", "--trials", "4", "--k", "2", "--d", "5", "--n-max", "100", "--size-mean", "6",
           "--fmd-rounds", "5", "--fx-rounds", "60", "--ifca-restarts", "1", "--anchor-points", "40",
           "--no-progress", "--jobs", "1"]


def tiny_cell(**change):
    args = two_phase.STUDY.parser().parse_args(TINY)
    config = two_phase.STUDY.config_from_args(args)
    return dataclasses.replace(two_phase.cells_of(config)[0], **change)


def _rows(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def test_split_rounds_deals_every_point_to_one_round_evenly():
    rng = np.random.default_rng(0)
    sizes = client_sizes(300, "zipf", rng=rng, n_max=40, mean=4.0)
    pb = make_problem(300, 2, sizes, 3, 0.1, 1.0, rng=rng, protocol="gaussian")
    T = 10
    r = split_rounds(pb, T, np.random.default_rng(1))
    assert r.shape == (pb.N,) and r.min() >= 0 and r.max() < T
    for i in range(pb.m):
        counts = np.bincount(r[pb.offsets[i]:pb.offsets[i + 1]], minlength=T)
        assert counts.max() - counts.min() <= 1  # a client's points spread over the rounds evenly
        assert counts.sum() == pb.sizes[i]
    per_round = np.bincount(r, minlength=T)
    assert per_round.min() > 0.6 * pb.N / T  # random first rounds: no round is starved


def test_phase2_split_uses_each_point_once_and_ends_further_than_reuse():
    """The data-reuse ablation: from the same start and step, Phase 2 with sample splitting across
    rounds (every point used in one round) ends further from theta* than Phase 2 reusing every point
    every round, on data-scarce clients (Zipf sizes of mean 3), in each of 3 draws."""
    for seed in range(3):
        rng = np.random.default_rng(seed)
        sizes = client_sizes(800, "zipf", rng=rng, n_max=50, mean=3.0)
        pb = make_problem(800, 2, sizes, 5, 0.5, 2.0, rng=rng, protocol="gaussian")
        start = pb.theta_star + 0.3 * rng.standard_normal(pb.theta_star.shape)
        reuse = fedx(pb, start, 1.0, n_rounds=40)
        split, step, diverged = phase2_split(pb, start, np.array([1.0]), 40, np.random.default_rng(seed))
        assert step == 1.0 and diverged == 0
        err_reuse = matched_max_distance(reuse.theta, pb.theta_star)
        err_split = matched_max_distance(split, pb.theta_star)
        assert err_split > 1.5 * err_reuse, (seed, err_split, err_reuse)


def test_helpers():
    np.testing.assert_allclose(cluster_proportions(3, 0.1), [0.1, 0.45, 0.45])
    with pytest.raises(ValueError, match="p_min"):
        cluster_proportions(3, 0.5)
    cell = tiny_cell()
    assert curve_columns(cell, "fedavg")[-1] == (9, "fedavg_err_t009")
    assert design_trace(10, 1.0, 1.0) == 10.0
    assert design_trace(10, 0.5, 2.0) == pytest.approx(10 * 1.5 / np.log(4))  # mean of the log-uniform law


def test_the_cell_is_the_old_dict():
    """The typed cell writes exactly the dict the trials were seeded from (keys, order, types), with the
    ablation's field last (added with the data-reuse ablation: it changed every seed once)."""
    cell = tiny_cell().to_cell()
    assert list(cell) == ["M", "k", "d", "sigma", "separation", "p_min", "size_law", "size_mean", "n_max", "cov_low",
                          "cov_high", "anchor_mode", "n_anchors", "anchor_points", "fmd_rounds", "fmd_sampling",
                          "fmd_anchor_sampling", "fmd_step_constant", "fmd_clients", "fx_rounds", "fedavg_steps",
                          "steps", "ifca_restarts", "checkpoint_every", "ablation_data"]
    assert type(cell["M"]) is int and type(cell["p_min"]) is float and cell["steps"] == (0.5, 1.0)
    assert two_phase.TwoPhaseSpec.from_cell(cell) == tiny_cell()


def test_client_weighted_least_squares_is_ifcas_true_label_fixed_point():
    """IFCA with client weights (Algorithm 2), started at the truth with identities that stay right,
    converges to the client-weighted least squares; with data weights to the known-label one."""
    rng = np.random.default_rng(6)
    sizes = rng.integers(1, 30, size=40)
    pb = make_problem_from_parameters(np.array([[3.0, 0, 0], [0, 3.0, 0]]), np.arange(40) % 2, sizes, 0.5, rng=rng)
    clients = ifca(pb, pb.theta_star, 0.2, n_rounds=3000)
    assert (clients.assignments[0] == pb.labels).all()
    np.testing.assert_allclose(clients.theta[0], client_weighted_least_squares(pb), atol=1e-8)
    data = ifca(pb, pb.theta_star, 0.2, n_rounds=3000, aggregation="data")
    np.testing.assert_allclose(data.theta[0], known_label_least_squares(pb), atol=1e-8)
    equal = make_problem_from_parameters(pb.theta_star, pb.labels, np.full(40, 7), 0.5, rng=rng)
    np.testing.assert_allclose(client_weighted_least_squares(equal), known_label_least_squares(equal), atol=1e-10)


def test_label_map_fixed_points_are_the_limits_of_fedx():
    """With labels that stay right, FedX converges to the fixed point of its true-label map:
    known-label least squares for FedAvg(1), something else for FedProx."""
    pb = make_problem(60, 2, 12, 3, 0.1, 4.0, rng=np.random.default_rng(1), protocol="gaussian")
    for solver, eta in (("fedavg", 1.0), ("fedprox", 2.0)):
        res = fedx(pb, pb.theta_star, eta, local_solver=solver, n_rounds=400)
        assert (res.assignments[0] == pb.labels).all()
        fixed = LabelMapFixedPoints(pb, eta, solver)(pb.labels, np.full((2, 3), np.nan))
        np.testing.assert_allclose(res.theta[0], fixed, atol=1e-9)
        if solver == "fedavg":
            np.testing.assert_allclose(fixed, known_label_least_squares(pb), atol=1e-9)


def test_measured_factor_is_the_exact_one_and_the_predicted_worst_case():
    """Sigma = I, large clusters: the measured factor is the exact linear rate of the map (fedx_linear_rates,
    up to the faster directions averaged into the window) and 1 - eta p_min within 10% of it."""
    pb = make_problem(400, 2, 20, 4, 0.1, 4.0, rng=np.random.default_rng(2), protocol="gaussian",
                      proportions=[0.2, 0.8])
    res = fedx(pb, pb.theta_star + 0.5, 1.0, n_rounds=120, history=True)
    path = res.history.theta[:, 0].astype(float)
    labels = decoded_labels(pb, path)
    t0, _ = labels_window(pb, labels)
    fixed = LabelMapFixedPoints(pb, 1.0)
    per_round = np.array([fixed(z, p) for z, p in zip(labels[:-1], path[:-1])])
    factor, window = measured_contraction(path, per_round, t0)
    exact = np.nanmax(fedx_linear_rates(pb, 1.0))
    predicted = sxy_predicted_contraction(1.0, pb.cluster_sizes / pb.N, 1.0, 1.0)
    assert window >= 50
    assert factor == pytest.approx(exact, abs=0.01) and factor <= exact + 1e-9
    assert (1 - exact) / (1 - predicted) == pytest.approx(1.0, abs=0.1)


def test_trial_record_is_scalars_and_consistent():
    cell = tiny_cell()
    rec = two_phase_trial(cell, np.random.SeedSequence(1))
    assert all(isinstance(v, (bool, int, float, str, np.integer, np.floating, np.bool_)) for v in rec.values())
    T1 = cell.fmd_rounds
    for method in ("ifca", "oracle", "ifca_data", "oracle_data", "fedavg", "fedprox"):
        assert [c for _, c in curve_columns(cell, method)] == sorted(c for c in rec if c.startswith(f"{method}_err_t"))
        assert rec[f"{method}_step"] in ((0.5, 1.0) if method in ("fedavg", "fedprox") else (0.25, 0.5))
    # the two-phase curves share Phase 1 and end at the Phase-2 output; the oracles start at theta*
    assert rec["fedavg_err_t000"] == rec["fedprox_err_t000"]
    assert rec["oracle_err_t000"] == 0.0 and rec["oracle_data_err_t000"] == 0.0
    last = max(t for t, _ in curve_columns(cell, "fedavg"))
    assert rec[f"fedavg_err_t{last:03d}"] == rec["fedavg_final"]
    assert rec["fmd_clients_per_round"] >= 2 and rec["fmd_anchor_pairs"] >= 1 and T1 == 3
    assert rec["chi2"] >= 0 and rec["nu1"] > 0 and rec["nu2"] > 0 and rec["cwls_err"] > 0
    assert rec["fedavg_C1_predicted"] == 0.5 * rec["fedavg_step"]  # eta cov_low
    assert 0 < rec["fedprox_C1_predicted"] < 1
    again = two_phase_trial(cell, np.random.SeedSequence(1))

    def same(u, v):
        return u == v or (isinstance(u, float) and isinstance(v, float) and np.isnan(u) and np.isnan(v))

    assert again.keys() == rec.keys()
    assert all(same(again[k], rec[k]) for k in rec if not k.endswith("_time"))


def test_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    assert two_phase.STUDY.main(TINY + ["--out", str(out)]) == 0
    for name in ("trials.csv", "manifest.json", "summary.csv", "curves.csv", "controls.csv", "contraction.csv",
                 "theory.csv", "checks.csv", "two_phase_rounds.png", "two_phase_rounds.pdf",
                 "two_phase_contraction.png", "two_phase_contraction.pdf", "factor.csv", "factor_fit.csv",
                 "ablation.csv", "pairs.csv", "two_phase_factor_reuse.png", "two_phase_factor_reuse.pdf"):
        assert (out / name).is_file(), name
    assert not (out / "scaling.csv").exists() and not (out / "two_phase_scaling.png").exists()
    rows = _rows(out / "trials.csv")
    assert len(rows) == 3 * 2  # cells (120, zipf) = reference, (60, zipf), (120, equal)
    assert all(row["error"] == "" for row in rows)
    assert "fedprox_err_t009" in rows[0] and "ls_err" in rows[0] and "cwls_err" in rows[0]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["sweep"]["config"]["fmd_rounds"] == 3
    theory = _rows(out / "theory.csv")
    assert [int(row["round"]) for row in theory if row["solver"] == "fedavg"] == list(range(3, 10))
    assert {"unit", "fitted", "C2_fitted", "heldout_ratio", "fit_worst_ratio"} <= set(theory[0])
    contraction = _rows(out / "contraction.csv")
    assert len(contraction) == 2 * len(rows) and all(row["failed"] == "False" for row in contraction)
    controls = _rows(out / "controls.csv")
    assert len(controls) == 3 * len(two_phase.CONTROL_METHODS)
    assert {row["verdict"] for row in _rows(out / "checks.csv")} <= {"holds", "fails", "not measured"}
    assert "wrote" in capsys.readouterr().out
    # redrawn from the tables alone
    assert two_phase.STUDY.main(["--redraw", str(out)]) == 0
    # each plot function draws into the axes it is given; draw writes the captions
    from experiments.ifca_mechanism.testing import check_figures

    check_figures(two_phase, out, tmp_path / "figures", ["plot_two_phase_rounds", "plot_two_phase_contraction",
                                                         "plot_factor_and_reuse"])
    # the predictions, registered before the first trial
    registered = {p["name"]: {a: c["value"] for a, c in p["constants"].items()} for p in manifest["predictions"]}
    assert registered == {"phase2_gap_exponent": {"p_min": 1.0}, "data_reuse_sign": {"sign": 1.0}}


def test_what_the_experiment_shows_on_unequal_sizes(tmp_path):
    """On Zipf sizes (half the clients hold one point): IFCA's true-label limit with client weights, the
    client-weighted LS, is far from the known-label LS, and IFCA with data weights ends closer to it than
    the client-weighted IFCA (from theta* and from random starts).  With equal sizes the two weightings agree.  The
    measured Phase-2 factor never exceeds the predicted worst factor 1 - C1 p_min and is faster by less
    than x2 in 1 - rho; the theorem's recursion with unit constants misses the floor by more than x10."""
    out = tmp_path / "reduced"
    assert two_phase.STUDY.main(REDUCED + ["--out", str(out)]) == 0
    controls = {(row["size_law"], row["method"]): row for row in _rows(out / "controls.csv")}

    def ratio(law, method):
        return float(controls[(law, method)]["ratio_to_ls"])

    assert ratio("zipf", "cwls") > 1.3
    # data weights end closer to the known-label LS than client weights, from theta* and from random starts
    assert ratio("zipf", "oracle_data") < ratio("zipf", "oracle") and ratio("zipf", "ifca_data") < ratio("zipf", "ifca")
    assert ratio("zipf", "oracle") > 1.10 and ratio("zipf", "ifca") > 1.10
    assert ratio("equal", "cwls") == pytest.approx(1.0, abs=0.1)  # equal sizes but for the anchors
    assert ratio("equal", "oracle") == pytest.approx(ratio("equal", "oracle_data"), rel=0.1)
    checks = _rows(out / "checks.csv")

    def check(start, cell="reference"):
        (row,) = [r for r in checks if r["check"].startswith(start) and r["cell"] == cell]
        return row

    for s in ("fedavg", "fedprox"):
        for cell in ("reference", "M=600 equal p_min=0.2"):
            assert check(f"{s}: trials whose measured factor is at most", cell)["verdict"] == "holds"
            gap = check(f"{s}: measured 1 - rho / predicted C1 p_min", cell)
            assert 1.0 <= float(gap["measured"]) <= 2.0
            assert gap["verdict"] == ("holds" if abs(float(gap["measured"]) - 1) <= GAP_TOLERANCE
                                      else "fails")
        unit = check(f"{s}: recursion fixed point with C2 = C3 = C4 = 1")
        assert float(unit["measured"]) > 10 and unit["verdict"] == "fails"
    # the data-reuse ablation: splitting the data across rounds ends further from theta* in most pairs
    ablation = {row["cell"]: row for row in _rows(out / "ablation.csv")}
    pooled = ablation["all cells"]
    assert int(pooled["pairs"]) == 8 and int(pooled["split_worse"]) >= 6
    assert float(pooled["log_ratio_low"]) > 0
    assert len(_rows(out / "pairs.csv")) == 8
    # the factor's fit: two p_min values, none held out, every measured gap positive
    fits = {row["solver"]: row for row in _rows(out / "factor_fit.csv")}
    assert set(fits) == {"fedavg", "fedprox"} and all(row["held_out_p"] == "" for row in fits.values())
    assert all(float(row["gap_median"]) > 0 for row in _rows(out / "factor.csv") if row["gap_median"])
    # and the claims' checks run on this run
    from experiments.two_phase.claims import CLAIMS
    from mixreg.study import ClaimRun

    claim_run = ClaimRun(two_phase.STUDY, out)
    verdicts = {c.id: c.check(claim_run) for c in CLAIMS}
    expected = "consistent" if float(pooled["wilcoxon_p_greater"]) < 0.05 else "contradicts"
    assert verdicts["sxy-data-reuse"][0].status == expected
    assert len(verdicts["sxy-phase2-factor"]) == 4


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--p-mins", "0.7"], "p_mins and p_ref must be in"),
        (["--Ms", "2"], "Ms and M_ref must be at least 2k"),
        (["--p-min", "0.2"], "--p-min is now --p-mins"),
        (["--M", "60"], "--M is now --M-ref"),
        (["--ifca-steps", "0.5"], "--ifca-steps is now --steps"),
        (["--fedavg-step", "1"], "--fedavg-step is now --steps"),
        (["--laws", "uniform"], "argument --laws: invalid choice"),
        (["--fmd-step-constant", "0"], "fmd_step_constant must be finite and > 0"),
        (["--cov-low", "3"], "cov_high must be at least cov_low"),
        (["--trials", "0"], "trials must be an integer >= 1"),
        (["--steps", "-1"], "steps must be finite and > 0"),
        (["--anchor-mode", "random", "--n-anchors", "1"], "n_anchors must be in"),
        (["--size-mean", "50"], "mean"),
        (["--checkpoint-every", "100"], "checkpoint_every"),
    ],
)
def test_bad_options_are_parser_errors(extra, message, capsys):
    with pytest.raises(SystemExit) as exc:
        two_phase.STUDY.main(TINY + extra + ["--dry-run"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_dry_run_prints_the_grid(capsys):
    assert two_phase.STUDY.main(TINY + ["--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "Grid: 3 cells x 2 trials" in text
