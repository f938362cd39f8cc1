"""Tests of mixreg.montecarlo._tables: the CSV format of trials.csv, summary.csv, write_table."""

import csv

import numpy as np
import pytest

from _toy_trials import CELLS, toy_sweep
from mixreg.montecarlo import run_sweep
from mixreg.montecarlo._tables import _format_value


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The least-squares sweep run in-process (jobs=1), the reference for bit identity."""
    return run_sweep(toy_sweep(), tmp_path_factory.mktemp("reference") / "out", progress=False)


def test_csv_floats_round_trip_exactly(reference):
    with open(reference.trials_csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(reference.records) == len(CELLS) * 6
    for row, record in zip(rows, reference.records):
        assert float(row["dist"]) == record["dist"]
        assert float(row["wall_time"]) == record["wall_time"]
        assert row["success"] == str(record["success"])
    with open(reference.summary_csv, newline="") as fh:
        summary = list(csv.DictReader(fh))
    assert len(summary) == len(CELLS)
    dist = reference.column("dist").reshape(len(CELLS), 6)
    success = reference.column("success").reshape(len(CELLS), 6)
    for i, row in enumerate(summary):
        assert float(row["mean_dist"]) == float(np.mean(dist[i]))
        assert float(row["mean_success"]) == float(np.mean(success[i]))
        assert row["n_trials"] == "6" and row["n_errors"] == "0"


def test_write_table_round_trips_floats_and_refuses_no_rows(tmp_path):
    import csv as _csv

    from mixreg.montecarlo import write_table

    rows = [{"a": 0.1 + 0.2, "b": "x", "c": None}, {"a": 1e-300, "b": "y", "c": 3}]
    path = write_table(tmp_path / "t.csv", rows)
    with open(path, newline="") as fh:
        back = list(_csv.DictReader(fh))
    assert [float(r["a"]) for r in back] == [0.1 + 0.2, 1e-300]
    assert back[0]["c"] == "" and back[1]["b"] == "y"
    with pytest.raises(ValueError, match="rows must hold at least one row"):
        write_table(tmp_path / "empty.csv", [])


def test_a_tuple_is_written_as_its_comma_text(tmp_path):
    from mixreg.montecarlo import write_table

    assert _format_value((1.0, 0.1, 3, True)) == "1.0,0.1,3,True"
    assert _format_value((1e-300, -0.0, float("inf"))) == "1e-300,-0.0,inf"
    path = write_table(tmp_path / "t.csv", [{"steps": (1.0, 0.1), "n": 2}, {"steps": (5,), "n": 1}])
    assert path.read_text() == 'steps,n\n"1.0,0.1",2\n5,1\n'
