"""Session-wide report of the paper claims checked in ``paper_checks/``.

Every claim check appends one row (claim, source, predicted, measured, interval, tolerance,
verdict) through the ``claim_report`` fixture; at the end of the session the rows are written as
a markdown table to ``paper_checks_report.md`` in the results directory, whether the checks passed
or not (a failed claim is a result).  The directory is ``results/paper_checks/`` by default; set
it with ``--paper-checks-dir DIR`` or the environment variable ``MIXREG_PAPER_CHECKS_DIR``.
"""

from __future__ import annotations

import datetime
import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
REPORT_NAME = "paper_checks_report.md"
COLUMNS = ("claim", "source", "predicted", "measured", "interval", "tolerance", "verdict")

_ROWS: list[dict] = []


def pytest_addoption(parser):
    parser.addoption("--paper-checks-dir", default=None,
                     help="directory of paper_checks_report.md and of the sweeps' results "
                          "(default: $MIXREG_PAPER_CHECKS_DIR or results/paper_checks)")


def results_dir(config) -> pathlib.Path:
    chosen = config.getoption("--paper-checks-dir") or os.environ.get("MIXREG_PAPER_CHECKS_DIR")
    return pathlib.Path(chosen) if chosen else REPO / "results" / "paper_checks"


@pytest.fixture(scope="session")
def paper_checks_dir(request) -> pathlib.Path:
    path = results_dir(request.config)
    path.mkdir(parents=True, exist_ok=True)
    return path


def _cell(value):
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(v, (int, float)) for v in value):
        return f"[{value[0]:.4g}, {value[1]:.4g}]"
    return str(value).replace("|", "\\|").replace("\n", " ")


class ClaimReport:
    """Collects rows; ``add`` returns the row so a check can assert on its verdict."""

    def add(self, *, claim, source, predicted, measured, interval="", tolerance="", verdict):
        row = dict(claim=claim, source=source, predicted=predicted, measured=measured, interval=interval,
                   tolerance=tolerance, verdict=verdict)
        _ROWS.append(row)
        return row


@pytest.fixture(scope="session")
def claim_report(paper_checks_dir):
    report = ClaimReport()
    yield report
    write_report(paper_checks_dir / REPORT_NAME)


def write_report(path: pathlib.Path):
    lines = ["# Paper claims: numerical checks", "",
             f"Written {datetime.datetime.now().isoformat(timespec='seconds')} by `pytest -m slow paper_checks/`. "
             "One row per claim; a contradicted prediction is a result, recorded here, not hidden.", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_cell(row[c]) for c in COLUMNS) + " |" for row in _ROWS]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def pytest_sessionfinish(session, exitstatus):
    # Also written here so that the report exists when the fixture's teardown did not run.
    if _ROWS:
        write_report(results_dir(session.config) / REPORT_NAME)


def run_experiment(module, outdir, *, jobs=None, **overrides):
    """Run ``module``'s sweep on its quick preset with ``overrides`` into ``outdir``; return
    ``(config, tables)`` from the module's own ``summarise``.  A finished directory of the same
    sweep is reused (the engine resumes); a directory of another configuration is overwritten."""
    from mixreg.montecarlo import ConfigMismatchError, run_sweep

    config = module.Config(preset="quick", **{**module.PRESETS["quick"], **overrides})
    jobs = jobs or min(2, os.cpu_count() or 1)
    sweep = module.STUDY.sweep(config)
    try:
        result = run_sweep(sweep, outdir, jobs=jobs, progress=False)
    except ConfigMismatchError:
        result = run_sweep(sweep, outdir, jobs=jobs, progress=False, overwrite=True)
    return config, module.summarise(config, result.records)
