"""The cost each paper preset's pages state, against what its committed run records.

Every study with a committed paper-scale run states its cost in worker-hours on its page
(``docs/studies/<study>.md``) and in the table of ``figures/README.md``. The CPU time was measured
when the run was made and is not in the run's files; what is in them, each trial's own wall time
in ``trials.csv``, must agree with the summed worker-hours and the number of trials the pages give,
so a recomputed run with a stale cost line fails here.
"""

from __future__ import annotations

import csv
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNS = sorted(path.parent.parent.name for path in (ROOT / "figures" / "data").glob("*/paper/trials.csv"))
PAGE_COST = re.compile(r"\*\*Cost of the paper preset\*\* \(`--preset paper`, committed in "
                       r"`figures/data/(\w+)/paper/`\): \*\*([\d.]+) worker-hours\*\* of CPU measured \((\d+) s on "
                       r"one worker[^)]*\); the ([\d,]+) trials' own wall times in its `trials.csv` sum to ([\d.]+) "
                       r"worker-hours on that machine\.")
TABLE_COST = re.compile(r"`python -m experiments\.(\w+) --preset paper` \| \*\*([\d.]+) worker-hours measured\*\* "
                        r"\((\d+) s of CPU[^|]*; the ([\d,]+) trials' own wall times sum to ([\d.]+) worker-hours\) \|")


def _recorded(study):
    """The number of trials of the committed run and their own wall times summed, in hours."""
    with open(ROOT / "figures" / "data" / study / "paper" / "trials.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return len(rows), sum(float(row["wall_time"]) for row in rows) / 3600.0


def _check(study, hours, cpu_seconds, trials, wall_hours):
    n, recorded = _recorded(study)
    assert int(trials.replace(",", "")) == n, f"{study}: {trials} trials stated, {n} recorded"
    assert float(wall_hours) == pytest.approx(recorded, abs=0.005), \
        f"{study}: {wall_hours} h stated, {recorded:.3f} h recorded"
    assert float(hours) == pytest.approx(int(cpu_seconds) / 3600.0, abs=0.005), \
        f"{study}: {hours} h is not {cpu_seconds} s"


def test_the_committed_paper_runs_are_the_ten_studies_with_a_paper_preset():
    assert RUNS == ["compare", "error_floor", "ifca_basin", "ifca_contraction", "ifca_corollary1",
                    "ifca_misclustering", "ifca_strongly_convex", "two_phase", "two_phase_nu", "two_phase_phase1"]


@pytest.mark.parametrize("study", RUNS)
def test_each_study_page_states_its_paper_cost_as_its_run_records_it(study):
    text = (ROOT / "docs" / "studies" / f"{study}.md").read_text(encoding="utf-8")
    found = PAGE_COST.findall(text)
    assert len(found) == 1, f"docs/studies/{study}.md: no single cost line of its paper preset"
    named, *numbers = found[0]
    assert named == study
    _check(study, *numbers)


def test_the_figures_table_states_every_paper_cost_as_its_run_records_it():
    found = {row[0]: row[1:] for row in TABLE_COST.findall((ROOT / "figures" / "README.md").read_text(encoding="utf-8"))}
    assert sorted(found) == RUNS
    for study, numbers in found.items():
        _check(study, *numbers)
