"""The committed claims report, checked in the default suite (fast: no trial is run).

``figures/claims_report.{md,html}`` is what ``python -m experiments.claims_report`` writes from the
committed runs under ``figures/data/``; these tests rebuild it from those runs with today's code
and assert that it is current, that every claim's verdict is the one recorded below (a changed
verdict is a result to look at, not a drift to accept silently), that the papers' 27 claims each
have a check, a source and a mutant of the mutation script, and that every prediction was
registered before its data.  The same checks on fresh runs: ``test_claims_fresh.py`` (slow).
"""

from __future__ import annotations

import math
import re

import pytest

from experiments import claims_report
from ifca_mutants import MUTANTS  # paper_checks is on sys.path (see test_ifca_mutants.py)

#: The verdict of every claim on the committed runs.  Contradicted predictions are results.
EXPECTED: dict[str, str] = {
    "ifca-cor1-floor": "consistent",
    "ifca-cor1-one-over-p": "contradicts",
    "ifca-optimality": "consistent",
    "ifca-assumption1-basin": "consistent",
    "ifca-alpha-near-random": "consistent",
    "ifca-thm1-round": "consistent",
    "ifca-thm1-misclustering-term": "consistent",
    "ifca-cor1-rounds": "consistent",
    "ifca-cor1-success-vs-m": "consistent",
    "ifca-cor1-exponential-term": "contradicts",
    "ifca-lemma2": "contradicts",
    "ifca-lemma1": "consistent",
    "ifca-thm2-factor": "consistent",
    "ifca-cor2-rounds": "not tight",
    "ifca-thm2-floor": "consistent",
    "ifca-lemma3": "not tested",
    "ifca-fig3-r": "consistent",
    "ifca-random-init-restarts": "consistent",
    "ifca-fig3-mn": "consistent",
    "sxy-phase2-factor": "consistent",
    "sxy-data-reuse": "consistent",
    "sxy-floor-nu": "contradicts",
    "sxy-vc-proof-device": "consistent",
    "sxy-phase1-constant-accuracy": "not tested",
    "sxy-phase1-rounds-o1": "contradicts",
    "sxy-phase1-na": "not tested",
    "sxy-phase1-clients": "not tight",
    "ifca-p-half-observation": "consistent",
    "ifca-basin-k4-near-half": "consistent",
    "ifca-misclustering-steepening": "consistent",
    "ifca-sigma-no-effect-paired": "consistent",
    "ifca-sigma-free-collapse": "not tested",
    "ifca-ls-impossible-zero": "consistent",
    "sxy-floor-data-shape": "consistent",
}

#: The papers whose claims are counted.
PAPERS = ("IFCA", "Su-Xu-Yang")


@pytest.fixture(scope="module")
def built():
    return claims_report.build()


#: A number of the report (a hash or a commit is split into several, equal on both sides).
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _same_report(committed, fresh):
    """The text equal once its numbers are masked, and every number equal to 1e-3 relative: the
    tables are recomputed from the committed trials by NumPy, whose sums may round differently on
    another CPU in the last bits, which a printed 4-digit number can show."""
    if NUMBER.sub("#", committed) != NUMBER.sub("#", fresh):
        return False
    pairs = zip(NUMBER.findall(committed), NUMBER.findall(fresh))
    return all(a == b or math.isclose(float(a), float(b), rel_tol=1e-3, abs_tol=1e-12) for a, b in pairs)


def test_the_committed_report_is_the_one_the_committed_runs_give(built):
    _, markdown, page = built
    for name, text in (("claims_report.md", markdown), ("claims_report.html", page)):
        committed = (claims_report.FIGURES / name).read_text(encoding="utf-8")
        assert _same_report(committed, text), f"figures/{name} is not current: run python -m experiments.claims_report"


def test_the_report_comparison_sees_a_changed_verdict_or_number():
    text = "#### a: consistent\n| m | consistent | fitted = -0.5019, low = -0.5148 |"
    assert _same_report(text, text.replace("-0.5019", "-0.5020"))
    assert not _same_report(text, text.replace("-0.5019", "-0.4019"))
    assert not _same_report(text, text.replace("a: consistent", "a: contradicts"))


def test_no_check_raised_and_every_claim_has_its_run(built):
    results, _, _ = built
    assert [r.claim.id for r in results if r.error] == []
    assert [r.claim.id for r in results if not r.run] == []


def test_every_verdict_is_the_recorded_one(built):
    results, _, _ = built
    assert {r.claim.id: r.status for r in results} == EXPECTED


def test_the_papers_27_claims_each_have_a_check(built):
    results, _, _ = built
    papers = [r for r in results if r.claim.kind == "prediction" and r.claim.paper in PAPERS]
    assert len(papers) == 27, sorted(r.claim.id for r in papers)
    assert all(r.claim.source and r.claim.statement for r in papers)


def test_every_claim_names_a_mutant_of_the_mutation_script(built):
    results, _, _ = built
    known = {m.name for m in MUTANTS}
    assert [r.claim.id for r in results if not r.claim.mutants] == []
    assert {r.claim.id: sorted(set(r.claim.mutants) - known) for r in results if set(r.claim.mutants) - known} == {}


#: The predictions that compare with no registered formula: a shape or a sign, or constants the
#: check computes or fits itself (each claim's ``constants`` says which).
UNREGISTERED = {
    "ifca-fig3-r", "ifca-random-init-restarts", "ifca-fig3-mn", "ifca-optimality", "ifca-assumption1-basin",
    "ifca-alpha-near-random", "ifca-thm1-round", "ifca-thm1-misclustering-term", "sxy-floor-nu",
    "sxy-vc-proof-device", "sxy-phase1-constant-accuracy",
}


def test_every_registered_prediction_was_registered_before_its_data(built):
    results, _, _ = built
    predictions = [r for r in results if r.claim.kind == "prediction"]
    assert {r.claim.id: r.registrations for r in predictions if r.registered_before_data is False} == {}
    assert {r.claim.id for r in predictions if r.registered_before_data is None} == UNREGISTERED


def test_every_figure_a_claim_names_is_committed(built):
    results, _, _ = built
    missing = {r.claim.id: f for r in results for f in r.claim.figures if not (claims_report.FIGURES / f).is_file()}
    assert missing == {}
