"""Helpers of the IFCA mechanism studies' end-to-end tests (``experiments/ifca_*/test_ifca_*.py``)."""

from __future__ import annotations

import csv
import dataclasses


def table(path):
    """The rows of a CSV table, as dicts of strings."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def run_quick(module, root, monkeypatch):
    """Run ``module``'s quick preset (two worker processes) into ``root / "run"`` with its figures
    directory under ``root`` (a quick run must never write into figures/); check its outputs and
    return the run's directory."""
    monkeypatch.setattr(module, "STUDY", dataclasses.replace(module.STUDY, figures_dir=root / "figures"))
    out = root / "run"
    assert module.STUDY.main(["--out", str(out), "--jobs", "2", "--no-progress"]) == 0
    for name in (*module.TABLES, "trials", "manifest"):
        suffix = ".json" if name == "manifest" else ".csv"
        assert (out / f"{name}{suffix}").stat().st_size > 0, name
    for suffix in (".png", ".pdf"):
        assert (out / f"{module.NAME}{suffix}").stat().st_size > 10_000
    assert not (root / "figures").exists()
    return out


def check_refused(module, argv, message, capsys, tmp_path):
    """``argv`` exits with status 2 and ``message`` on stderr (nothing run)."""
    import pytest

    with pytest.raises(SystemExit) as exc:
        module.STUDY.main(argv + ["--out", str(tmp_path / "o"), "--dry-run"])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def check_paper_plan(module, capsys, tmp_path):
    """The paper preset's plan prints (a dry run)."""
    assert module.STUDY.main(["--preset", "paper", "--dry-run", "--out", str(tmp_path / "o")]) == 0
    assert "tasks" in capsys.readouterr().out
