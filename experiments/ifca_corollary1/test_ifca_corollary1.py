"""The Corollary 1 study end to end on its quick preset, and its claims' checks on that run.

The quick preset runs once per module (two worker processes) into a temporary directory, its
figures directory redirected there so that nothing is written to ``figures/``.
"""

from __future__ import annotations

import pytest

from mixreg.predictions import VERDICT_STATUSES
from mixreg.study import ClaimRun

from experiments import ifca_corollary1 as study
from experiments.ifca_corollary1 import claims
from experiments.ifca_mechanism.testing import check_figures, check_paper_plan, check_refused, run_quick
from experiments.ifca_mechanism.testing import table as _table

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    yield run_quick(study, tmp_path_factory.mktemp(study.NAME), mp)
    mp.undo()


def test_rounds_follow_the_contraction_of_the_step(quick):
    """At c1 = 3/8 no run needs more than Corollary 1's T = log2(Delta/(4 eps)) rounds and the rounds grow at
    about half of log2(Delta/(4 eps)) (the distance falls by about |1 - 2 c1| = 1/4 a round); at c1 = 1/4
    (factor 1/2 on average) they grow at about slope 1 and often exceed T by one."""
    fits = _table(quick / "rounds_fits.csv")
    for r in fits:
        slope = float(r["slope"])
        if r["theorem_c1"] == "True":
            assert int(r["exceed"]) == 0 and 0.45 < slope < 0.65, r
        else:
            assert 0.95 < slope < 1.1 and int(r["exceed"]) > 0, r


def test_clients_stay_misclustered_where_n_prime_and_rho_are_small(quick):
    """The exponential regime: the misclustered fraction at the end falls with n' at every rho, and at the
    smallest n' the final error exceeds the known-label run's (the excess's interval lies above 0)."""
    cells = _table(quick / "exponential.csv")
    for rho in {c["rho"] for c in cells}:
        row = sorted((c for c in cells if c["rho"] == rho), key=lambda c: int(c["n_prime"]))
        miscl = [float(c["miscl"]) for c in row]
        assert miscl == sorted(miscl, reverse=True) and miscl[0] > 0.1, (rho, miscl)
        assert float(row[0]["excess_low"]) > 0, row[0]


def test_lemma2_quantities_at_the_run_sizes(quick):
    rows = _table(quick / "lemma2.csv")
    assert all(float(r["smax_dev"]) < float(r["sqrt_d_over_N"]) for r in rows)   # Gordon, C = 1
    noise = _table(quick / "lemma2_noise.csv")[0]
    assert float(noise["low"]) < 1.0 < float(noise["high"])


def test_claims_check_the_quick_run(quick):
    """Every claim's check runs on a quick run (no preset's cell values in it) and returns verdicts; the
    rounds bound and Gordon's bound hold there."""
    run = ClaimRun(study.STUDY, quick)
    ids = set()
    for claim in claims.CLAIMS:
        verdicts = claim.check(run)
        assert verdicts and all(v.status in VERDICT_STATUSES for v in verdicts), claim.id
        assert claim.study.name == study.NAME and claim.mutants and claim.predictions
        assert set(claim.predictions) <= {p.name for p in study.PREDICTIONS}
        ids.add(claim.id)
    assert ids == {"ifca-cor1-rounds", "ifca-cor1-success-vs-m", "ifca-cor1-exponential-term", "ifca-lemma2"}
    assert [v.status for v in claims.check_rounds(run)] == ["consistent", "consistent"]
    assert [v.status for v in claims.check_lemma2(run)][2:] == ["consistent"] * 3


def test_redraw_reproduces_the_figure_from_the_tables(quick, capsys):
    assert study.STUDY.main(["--redraw", str(quick)]) == 0
    assert "ifca_corollary1.png" in capsys.readouterr().out


@pytest.mark.parametrize("argv,message", [
    (["--c1s", "0.25"], "c1s must include c1_theorem"),
    (["--ms", "25"], "must be even"),
    (["--held-out-rhos", "3"], "held_out_rhos must be among rhos"),
])
def test_bad_options_exit_with_a_clear_message(argv, message, capsys, tmp_path):
    check_refused(study, argv, message, capsys, tmp_path)


def test_paper_preset_plans(capsys, tmp_path):
    check_paper_plan(study, capsys, tmp_path)


def test_figures_draw_into_given_axes_and_write_captions(quick, tmp_path):
    check_figures(study, quick, tmp_path, ["plot_corollary1"])
