"""Every committed paper-scale figure is redrawn from its committed tables, and looks the same."""

import importlib
import shutil

import numpy as np
import pytest
from matplotlib.image import imread

from experiments import redraw_figures

COMMITTED = redraw_figures.DATA


@pytest.mark.skipif(not redraw_figures.results_directories(), reason="no committed results directory")
def test_committed_figures_are_redrawn_from_their_committed_tables(tmp_path, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(COMMITTED, data)
    for name, _ in redraw_figures.results_directories(data):  # redraws land in tmp_path/figures
        monkeypatch.setattr(importlib.import_module(f"experiments.{name}"), "REPO", tmp_path)
    assert redraw_figures.main(["--data", str(data)]) == 0
    redrawn = sorted((tmp_path / "figures").glob("*.png"))
    assert redrawn, "a complete paper-preset run must redraw its figures into figures/"
    for path in redrawn:
        committed = imread(COMMITTED.parent / path.name)
        fresh = imread(path)
        assert fresh.shape == committed.shape, path.name
        assert np.abs(fresh - committed).mean() < 0.01, path.name


def test_no_results_directory_is_one_line_and_exit_1(tmp_path, capsys):
    assert redraw_figures.main(["--data", str(tmp_path)]) == 1
    assert "no results directory" in capsys.readouterr().err
