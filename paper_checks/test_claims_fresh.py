"""Every claim of the claims report checked again on fresh runs (slow: tens of minutes on 2 cores).

    python -m pytest -m slow paper_checks/test_claims_fresh.py

For each study with claims, its quick preset with the study's ``FRESH`` overrides (declared in
its ``claims.py``, sized so that its claims can be decided; default: none) is run with another
root seed than any committed run (:data:`FRESH_SEED`), into the paper checks' results directory
(``--paper-checks-dir``, reused by a second session), and each claim's check is applied to it.
The verdict must be the committed report's (``test_claims_report.EXPECTED``), except for the
claims a study lists in ``FRESH_UNDECIDED`` (id -> why its fresh size cannot decide it), which
must then be ``not tested`` or the committed verdict, and the claims a study lists in
``FRESH_DIFFERS`` (id -> the fresh run's verdict and its numbers): a replication that disagrees
with the committed run is a result, stated there and in the claims report, and the fresh verdict
must then be the one stated.  Every row goes into the session's report (``paper_checks_report.md``).
"""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from mixreg.montecarlo import ConfigMismatchError, run_sweep
from mixreg.study import check_claims, find_claims

from test_claims_report import EXPECTED

pytestmark = pytest.mark.slow

#: The root seed of the fresh runs (no committed run uses it).
FRESH_SEED = 20261127

CLAIMS = find_claims("experiments")
STUDIES = sorted({c.study_name for c in CLAIMS})


def _module(study):
    return importlib.import_module(f"experiments.{study}.claims")


@pytest.fixture(scope="module")
def fresh_root(paper_checks_dir):
    return paper_checks_dir / "fresh"


def _fresh_run(study_name, root):
    """Run the study's fresh sweep into ``root/<study>/fresh`` (resumed when it is there)."""
    module = _module(study_name)
    study = importlib.import_module(f"experiments.{study_name}").STUDY
    config = study.preset("quick", **getattr(module, "FRESH", {}))
    outdir = root / study_name / "fresh"
    sweep = study.sweep(config, root_seed=FRESH_SEED)
    try:
        run_sweep(sweep, outdir, jobs=2, progress=False)
    except ConfigMismatchError:
        run_sweep(sweep, outdir, jobs=2, progress=False, overwrite=True)


@pytest.mark.parametrize("study_name", STUDIES)
def test_the_claims_hold_on_a_fresh_run(study_name, fresh_root, claim_report):
    _fresh_run(study_name, fresh_root)
    undecided = getattr(_module(study_name), "FRESH_UNDECIDED", {})
    differs = getattr(_module(study_name), "FRESH_DIFFERS", {})
    # the claims as the report checks them, on the fresh run instead of the committed one
    claims = [dataclasses.replace(c, preset="fresh") for c in CLAIMS if c.study_name == study_name]
    results = check_claims(claims, fresh_root)
    assert {r.claim.id: r.error for r in results if r.error} == {}
    wrong = []
    for result in results:
        for v in result.verdicts:
            claim_report.add(claim=f"{result.claim.id}: {v.claim}", source=result.claim.source,
                             predicted=result.claim.kind,
                             measured="; ".join(f"{k}={v.numbers[k]}" for k in list(v.numbers)[:6]),
                             interval="", tolerance="", verdict=v.status)
        expected = EXPECTED.get(result.claim.id)
        if result.claim.id in differs:
            allowed = {differs[result.claim.id][0]}
        else:
            allowed = {expected, "not tested"} if result.claim.id in undecided else {expected}
        if result.status not in allowed:
            wrong.append((result.claim.id, result.status, expected))
    assert wrong == []
