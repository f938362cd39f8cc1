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


def check_figures(study, results, tmp_path, plots, *, figures=None):
    """Every plot function of ``plots`` draws into the axes it is given, and ``draw`` writes captions.

    ``study`` is a study's package (its ``STUDY``), ``results`` a finished results directory of it,
    ``plots`` the names of the plot functions its ``draw`` calls (in its ``figures`` module).  The
    study's ``draw`` runs twice from the directory's tables: as it is (each figure gets a caption
    file), and with each plot function given fresh axes of one figure (as many as it draws
    without them): it must draw into those (no new figure, no size change, no title over the
    figure, no footnote) and return ``figure``, ``axes`` and ``legend``.
    """
    import importlib
    import json
    import pathlib

    import matplotlib.pyplot as plt
    import pytest

    from mixreg.cli import _read_tables, config_from_record

    results = pathlib.Path(results)
    manifest = json.loads((results / "manifest.json").read_text(encoding="utf-8"))
    config = config_from_record(study.STUDY.config, manifest["sweep"].get("config"))
    tables = _read_tables(results, study.STUDY.tables)
    written = [pathlib.Path(p) for p in study.STUDY.draw(config, tables, tmp_path / "own")]
    pngs = [p for p in written if p.suffix == ".png"]
    assert pngs
    for png in pngs:
        caption = png.with_name(png.stem + ".caption.txt")
        assert caption in written and caption.read_text(encoding="utf-8").strip(), caption

    module = figures or importlib.import_module(f"{study.__name__}.figures")
    calls = []
    with pytest.MonkeyPatch.context() as mp:
        for name in plots:
            original = getattr(module, name)

            def given_axes(*args, _original=original, _name=name, **kwargs):
                alone = _original(*args, **kwargs)
                assert {"figure", "axes", "legend"} <= set(alone), _name
                n = len(alone["axes"])
                plt.close(alone["figure"])
                fig, axes = plt.subplots(1, n, squeeze=False)
                size = tuple(fig.get_size_inches())
                before = set(plt.get_fignums())
                out = _original(*args, ax=axes[0] if n > 1 else axes[0][0], **kwargs)
                assert set(plt.get_fignums()) == before, f"{_name} made a figure of its own"
                assert out["figure"] is fig and list(out["axes"]) == list(axes[0]), _name
                assert tuple(fig.get_size_inches()) == size and fig._suptitle is None and not fig.texts, _name
                assert not fig.legends, f"{_name}: a figure legend on the caller's figure"
                calls.append(_name)
                return out

            mp.setattr(module, name, given_axes)
        study.STUDY.draw(config, tables, tmp_path / "given")
    assert set(calls) == set(plots), calls
