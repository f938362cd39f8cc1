"""The constants of nu settled, on synthetic records whose shape is known: the grid of exponents
against the scalar formula, the bootstrap against :func:`mixreg.stats.fit_slope`, the region on
data drawn from the bound itself (it must hold the constants they were drawn with) and on data
whose p_min exponent is off (no constants may fit), the exact median interval, the sign-pattern
bound of the proof device, the claims' checks (:mod:`.claims`) on such data, and the study page's
results against the committed paper run."""

import pathlib
from types import SimpleNamespace

import numpy as np
import pytest

from experiments import two_phase_nu
from experiments.two_phase_nu import claims
from experiments.two_phase_nu.figures import level_statement, results_markdown
from experiments.two_phase_nu.summary import (
    AXIS_NAMES,
    C3_GRID,
    C4_GRID,
    JOINT_LEVEL,
    _Bootstrap,
    median_interval,
)
from experiments.two_phase_nu.trial import DESIGN_KEYS, design_quantities
from mixreg.stats import fit_slope
from mixreg.theory import (
    sxy_assignment_patterns,
    sxy_axis_exponent,
    sxy_bound_shape,
    sxy_constants_exponents,
    sxy_nu_terms,
    sxy_sign_pattern_bound,
)

REPO = pathlib.Path(__file__).resolve().parents[2]
PAPER = REPO / "figures" / "data" / "two_phase_nu" / "paper"

# the reduced grid of the end-to-end test (11 distinct cells), with 30 synthetic trials per cell
SMALL = dict(k=3, d=5, sigma=1.5, separation=2.0, M_ref=300, n_ref=8, p_ref=0.2, tiny_fractions=(0.0, 0.25, 0.5),
             chi2s=(0.0, 1.0, 3.0), Ms_fixed_n=(150, 600, 2400), Ms_fixed_N=(300, 900, 1800), N_fixed=7200,
             p_mins=(0.1, 0.2, 0.3), trials=30, n_boot=400)

#: The constants the synthetic data are drawn with (on the grid: 10^-0.5 and 10^0.5).
TRUE_C3, TRUE_C4 = float(C3_GRID[15]), float(C4_GRID[25])


@pytest.fixture(scope="module")
def config():
    return two_phase_nu.Config(preset="quick", **SMALL).validate()


def _records(config, *, p_power=1.0, noise=0.05, seed=0):
    """Synthetic trials: every method's final error is ``0.1 nu(C3, C4) / p_min^p_power`` (the
    bound's shape with the true constants) times log-normal noise."""
    rng = np.random.default_rng(seed)
    records = []
    for spec in two_phase_nu.cells_of(config):
        design = spec.design
        sizes = design.labels_and_sizes()[1]
        q = design_quantities(design, d=config.d, sigma=config.sigma)
        nu = sum(sxy_nu_terms(sizes, config.d, config.k, C3=TRUE_C3, C4=TRUE_C4))
        level = 0.1 * nu / q["p_min_realised"] ** p_power
        cell = design.to_cell()
        for t in range(config.trials):
            rec = {key: cell[key] for key in DESIGN_KEYS}
            rec.update(error="", trial=t, fmd_err=0.5, ls_err=q["ls_floor"] * rng.lognormal(0, noise))
            for m in ("fedavg", "fedprox"):
                rec.update({f"{m}_final": level * rng.lognormal(0, noise), f"{m}_misclustered_data": 0.05,
                            f"{m}_converged": True})
            records.append(rec)
    return records


@pytest.fixture(scope="module")
def truth(config):
    return two_phase_nu.summarise(config, _records(config))


@pytest.fixture(scope="module")
def off(config):
    return two_phase_nu.summarise(config, _records(config, p_power=0.5, seed=1))


def _region(tables, method, variant, test):
    return next(r for r in tables["region"] if (r["method"], r["variant"], r["test"]) == (method, variant, test))


def _row(tables, variant, C3, C4):
    return next(r for r in tables["constants"] if r["variant"] == variant and r["C3"] == C3 and r["C4"] == C4)


def test_grid_exponents_are_the_scalar_formulas(config):
    """At every pair, the grid's exponent is sxy_axis_exponent of nu from sxy_nu_terms with those
    constants (chi2(w) included): checked on the chi2 and tiny sweeps, with and without log(1/nu)."""
    designs = two_phase_nu.axis_designs(config)
    for axis, log_x in (("chi2", True), ("tiny", False)):
        sizes = [d.labels_and_sizes()[1] for d in designs[axis]]
        qs = [design_quantities(d, d=config.d, sigma=config.sigma) for d in designs[axis]]
        x = ([1 + q["chi2"] for q in qs] if log_x else [d.tiny_counts.sum() / d.M for d in designs[axis]])
        p = [q["p_min_realised"] for q in qs]
        for log_factor in (False, True):
            grid = sxy_constants_exponents(x, sizes, p, config.d, config.k, C3_GRID[::10], C4_GRID[::8],
                                           log_x=log_x, log_factor=log_factor)
            for i, C3 in enumerate(C3_GRID[::10]):
                for j, C4 in enumerate(C4_GRID[::8]):
                    nu = [sum(sxy_nu_terms(s, config.d, config.k, C3=C3, C4=C4)) for s in sizes]
                    if log_factor and max(nu) >= 1:
                        assert np.isnan(grid[i, j])
                        continue
                    assert grid[i, j] == pytest.approx(
                        sxy_axis_exponent(x, nu, p, log_x=log_x, log_factor=log_factor), abs=1e-9), (axis, C3, C4)
    # the chi2 sweep at a large C3: nu is the uniform deviation alone, sqrt(chi2 + 1) exactly
    x = [1 + design_quantities(d, d=config.d, sigma=config.sigma)["chi2"] for d in designs["chi2"]]
    grid = sxy_constants_exponents(x, [d.labels_and_sizes()[1] for d in designs["chi2"]], [0.2] * len(x),
                                   config.d, config.k, [10.0], [1.0])
    assert grid[0, 0] == pytest.approx(0.5, abs=1e-3)


def test_bootstrap_replicates_are_fit_slopes():
    """The vectorised bootstrap draws what mixreg.stats.fit_slope draws: same slope, same interval."""
    rng = np.random.default_rng(3)
    x = np.array([1.0, 2.0, 4.0, 8.0])
    samples = [v ** -0.4 * rng.lognormal(0, 0.3, 25) for v in x]
    for log_x in (True, False):
        fit = fit_slope(x, samples, log_x=log_x, statistic="median", n_boot=300, level=0.9,
                        rng=np.random.default_rng(11))
        mine = _Bootstrap(x, samples, log_x, 300, 11).fit(0.9)
        assert (mine.slope, mine.n_points) == (pytest.approx(fit.slope, abs=1e-12), fit.n_points)
        assert (mine.low, mine.high) == (pytest.approx(fit.low, abs=1e-12), pytest.approx(fit.high, abs=1e-12))


def test_median_interval_is_exact():
    assert median_interval(np.arange(1.0, 11.0), 0.95) == (2.0, 9.0)  # 1 - 2 P(B <= 1) = 0.979 for n = 10
    assert median_interval(np.arange(1.0, 11.0), 0.999) == (0.0, np.inf)  # 10 values cannot reach 99.9%
    assert median_interval([], 0.9) == (0.0, np.inf)
    rng = np.random.default_rng(5)  # coverage of the true median of a lognormal (1.0) over 2000 draws
    hits = np.mean([lo <= 1.0 <= hi for lo, hi in (median_interval(rng.lognormal(0, 1, 30), 0.9)
                                                   for _ in range(2000))])
    assert hits >= 0.9 - 3 * np.sqrt(0.9 * 0.1 / 2000)


def test_region_holds_the_constants_the_data_were_drawn_with(truth):
    """Data drawn from 0.1 nu(C3*, C4*) / p_min: every sweep, the four nu sweeps and all five
    hold (C3*, C4*), as does one level constant; the p_min sweep needs no constant."""
    for m in ("fedavg", "fedprox"):
        row = _row(truth, "nu", TRUE_C3, TRUE_C4)
        assert set(row[f"{m}_consistent"].split("+")) == set(AXIS_NAMES), row
        assert row[f"{m}_level"]
        assert row[f"{m}_C_min"] == pytest.approx(0.1, rel=0.2)
        every = _region(truth, m, "nu", "all sweeps")
        assert every["verdict"] == "region" and every["pairs"] >= 1
        assert every["C3_min"] <= TRUE_C3 <= every["C3_max"] and every["C4_min"] <= TRUE_C4 <= every["C4_max"]
        pmin = _region(truth, m, "nu", "p_min")
        assert pmin["constant_free"] and pmin["predicted_min"] == pytest.approx(-1.0)
        assert pmin["verdict"] == "every pair fits"
        assert _region(truth, m, "nu", "one level")["verdict"] == "region"
        single = _region(truth, m, "nu", "M_fixed_n")
        assert single["level"] == JOINT_LEVEL and single["low"] < single["high"]


def test_no_constants_fit_when_the_p_min_exponent_is_off(off):
    """Data falling like p_min^-1/2 at fixed nu: the p_min sweep alone, needing no constant,
    excludes every pair; the nu sweeps still hold the true constants."""
    for m in ("fedavg", "fedprox"):
        assert _region(off, m, "nu", "p_min")["verdict"] == "no constants fit"
        assert _region(off, m, "nu", "all sweeps")["verdict"] == "no constants fit"
        assert _region(off, m, "nu_log", "all sweeps")["verdict"] in ("no constants fit", "not tested")
        nu = _region(off, m, "nu", "nu sweeps")
        assert nu["C3_min"] <= TRUE_C3 <= nu["C3_max"] and nu["C4_min"] <= TRUE_C4 <= nu["C4_max"]


def test_joint_intervals_are_bonferroni_over_the_sweeps(truth):
    """Each sweep's interval in the joint test is at 1 - 0.05/5 (the five together at >= 95%),
    from the same bootstrap replicates as exponents.csv's 95% interval, so strictly wider."""
    assert JOINT_LEVEL == pytest.approx(1 - 0.05 / len(AXIS_NAMES))
    by = {(r["axis"], r["method"]): r for r in truth["exponents"]}
    for axis in AXIS_NAMES:
        for m in ("fedavg", "fedprox"):
            joint = _region(truth, m, "nu", axis)
            assert joint["level"] == JOINT_LEVEL
            assert joint["low"] < by[axis, m]["low"] and by[axis, m]["high"] < joint["high"]


def test_sign_patterns_stay_under_the_milnor_thom_bound():
    """The proof device's numeric content (slide "Sign Patterns of Polynomials"): the label vectors
    realised by random parameters, a lower bound of their number over R^{dk}, stay under
    (50 D m / N)^N with D = 2, m = M k (k - 1) / 2, N = d k; a bound without its power would not."""
    rng = np.random.default_rng(2)
    d, k, n = 2, 2, 5
    for M in (8, 16):
        X = rng.normal(size=(M * n, d))
        client = np.repeat(np.arange(M), n)
        theta = rng.normal(size=(k, d))
        y = X @ theta.T[:, 0] * (client % 2) + X @ theta.T[:, 1] * (1 - client % 2) + 0.5 * rng.normal(size=M * n)
        count = sxy_assignment_patterns(X, y, client, k, 2 * rng.normal(size=(20000, k, d)))
        bound = sxy_sign_pattern_bound(M * k * (k - 1) // 2, d * k)
        assert 2 <= count <= k ** M and np.log10(count) <= bound
        assert bound == pytest.approx(d * k * np.log10(50 * 2 * M / (d * k)))
    assert np.log10(count) > np.log10(50 * 2 * M / (d * k))  # the power is what keeps the count under


def _shaped_records(config, seed=4):
    """Synthetic trials shaped as the paper run's FedAvg: flat along the tiny share and chi2(w),
    falling with M at fixed n_i, rising with M at fixed N, falling with p_min."""
    rng = np.random.default_rng(seed)
    records = []
    for spec in two_phase_nu.cells_of(config):
        design = spec.design
        q = design_quantities(design, d=config.d, sigma=config.sigma)
        level = 0.1 * design.M ** -0.4 * (design.N / design.M) ** -1.0 * q["p_min_realised"] ** -0.8
        cell = design.to_cell()
        for t in range(config.trials):
            rec = {key: cell[key] for key in DESIGN_KEYS}
            rec.update(error="", trial=t, fmd_err=0.5, ls_err=q["ls_floor"] * rng.lognormal(0, 0.05))
            for m in ("fedavg", "fedprox"):
                rec.update({f"{m}_final": level * rng.lognormal(0, 0.05), f"{m}_misclustered_data": 0.05,
                            f"{m}_converged": True})
            records.append(rec)
    return records


def test_the_floor_claim_reads_the_region(truth, off):
    """sxy-floor-nu: consistent on data drawn from the bound, contradicts where the p_min exponent is
    off (one verdict per method and shape of the bound)."""
    assert [v.status for v in claims.floor_nu(SimpleNamespace(tables=truth))][::2] == ["consistent"] * 2
    verdicts = claims.floor_nu(SimpleNamespace(tables=off))
    assert len(verdicts) == 4 and {v.status for v in verdicts} <= {"contradicts", "not tested"}
    assert verdicts[0].status == "contradicts" and "outside" in verdicts[0].why


def test_the_data_shape_observation_on_data_of_that_shape_and_on_the_bound(config, truth):
    shaped = two_phase_nu.summarise(config, _shaped_records(config))
    assert [v.status for v in claims.floor_data_shape(SimpleNamespace(tables=shaped))] == ["consistent"] * 5
    # data shaped as the bound: nu1, so the error, grows with the tiny share
    statuses = {v.claim.split(":")[0]: v.status for v in claims.floor_data_shape(SimpleNamespace(tables=truth))}
    assert statuses["tiny"] == "contradicts"


def test_the_proof_device_claim_holds_and_can_fail(monkeypatch):
    verdicts = claims.vc_proof_device()
    assert [v.status for v in verdicts] == ["consistent"] * len(claims.VC_INSTANCE["Ms"])
    assert all(v.numbers["patterns"] >= 100 for v in verdicts)
    # a bound one power of ten too small is exceeded: the check can fail
    monkeypatch.setattr(claims, "sxy_sign_pattern_bound", lambda m, n, degree=2: 2.0)
    assert "contradicts" in {v.status for v in claims.vc_proof_device()}


def test_level_statement_reads_the_holdout_table():
    rows = [dict(method="fedavg", ratio_min_all=0.054, ratio_max_all=0.231),
            dict(method="fedprox", ratio_min_all=0.07, ratio_max_all=0.32)]
    text = level_statement(rows)
    assert "3.1 to 19 times above the medians" in text and "0.32" in text


@pytest.mark.skipif(not (PAPER / "region.csv").is_file(), reason="the paper run's tables are not committed")
def test_the_pages_results_are_the_committed_runs():
    """docs/studies/two_phase_nu.md's results section is results_markdown of the committed paper
    tables, word for word (no number on the page that the tables do not give)."""
    from mixreg.cli import config_from_record
    from mixreg.montecarlo import read_results

    results = read_results(PAPER)
    config = config_from_record(two_phase_nu.Config, results.manifest["sweep"]["config"])
    tables = {name: results.table(f"{name}.csv") for name in two_phase_nu.TABLES}
    page = (REPO / "docs" / "studies" / "two_phase_nu.md").read_text(encoding="utf-8")
    start, end = "<!-- results: begin -->\n", "<!-- results: end -->"
    assert page.count(start) == 1 and page.count(end) == 1
    block = page[page.index(start) + len(start):page.index(end)]
    assert block.strip() == results_markdown(config, tables).strip()
