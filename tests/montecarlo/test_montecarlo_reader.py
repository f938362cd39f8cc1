"""Tests of mixreg.montecarlo.reader: reading a results directory back, exactly, read-only."""

import dataclasses
import json
import math
import shutil

import pytest

import _toy_trials as toys
from _toy_trials import records_json, toy_sweep
import mixreg.montecarlo
from mixreg.montecarlo import EditedFileError, SweepWarning, run_sweep, write_table
from mixreg.montecarlo.reader import Results, read_results

AWKWARD_CELLS = [{"steps": (1.0, 0.1), "k": 0}, {"steps": (1, 2), "k": 1}]


@pytest.fixture(scope="module")
def awkward(tmp_path_factory):
    """A sweep whose records hold values hard to read back from CSV, and one failed trial."""
    sweep = toy_sweep(trial_fn=toys.awkward_values_trial, cells=AWKWARD_CELLS, n_trials=3,
                      chunk_size=2)
    with pytest.warns(SweepWarning, match="1 of 6 trials"):
        return run_sweep(sweep, tmp_path_factory.mktemp("awkward") / "out", progress=False)


def _snapshot(directory):
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(directory.rglob("*"))}


def _assert_same_records(back, records):
    assert records_json(back, drop=()) == records_json(records, drop=())
    for got, want in zip(back, records):
        assert [type(v) for v in got.values()] == [type(v) for v in want.values()]


def test_reader_gives_back_the_records_of_a_run(tmp_path):
    result = run_sweep(toy_sweep(n_trials=3), tmp_path / "out", progress=False)
    back = read_results(tmp_path / "out")
    assert isinstance(back, Results) and back.outdir == tmp_path / "out"
    assert back.records == result.records  # wall times too: floats are written exactly
    assert back.manifest == result.manifest
    assert back.config == {"experiment": "toy", "lr": 0.1}
    assert back.cells == toy_sweep().cells
    assert back.failures == []
    with pytest.raises(dataclasses.FrozenInstanceError):
        back.records = []


def test_awkward_values_and_tuples_round_trip_through_trials_csv(awkward):
    back = read_results(awkward.outdir)
    _assert_same_records(back.records, awkward.records)
    assert back.cells == ({"steps": (1.0, 0.1), "k": 0}, {"steps": (1, 2), "k": 1})
    first, failed = back.records[0], back.records[4]
    assert first["steps"] == (1.0, 0.1) and back.records[3]["steps"] == (1, 2)
    assert first["tiny"] == 5e-324 and math.copysign(1.0, first["neg_zero"]) == -1.0
    assert first["big_int"] == 2**62 + 1 and math.isnan(first["nan"])
    assert (first["digits"], first["true_text"], first["empty"]) == ("0123", "True", "")
    assert failed["error"].startswith("ArithmeticError") and failed["third"] is None
    assert failed["empty"] is None and failed["digits"] is None
    assert back.failures == awkward.failures
    assert back.failures[0]["params"] == {"steps": (1, 2), "k": 1}


def test_records_come_from_the_chunks_without_trials_csv(awkward, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(awkward.outdir, copy)
    (copy / "trials.csv").unlink()
    back = read_results(copy)
    _assert_same_records(back.records, awkward.records)
    assert back.failures == awkward.failures

    (copy / "chunks" / "cell00001_t000000-000002.json").unlink()
    with pytest.warns(SweepWarning, match="2 of 6 records"):  # of a complete run: named
        read_results(copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    partial = read_results(copy)  # a run still going: its missing trials are still to come
    assert [(r["cell"], r["trial"]) for r in partial.records] == [(0, 0), (0, 1), (0, 2), (1, 2)]
    _assert_same_records(partial.records, awkward.records[:3] + awkward.records[5:])
    assert partial.failures == []


def test_from_chunks_reads_what_a_resume_would_load_even_beside_trials_csv(awkward, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(awkward.outdir, copy)
    _assert_same_records(read_results(copy, from_chunks=True).records, awkward.records)
    (copy / "chunks" / "cell00001_t000000-000002.json").unlink()  # removed from a complete run
    assert len(read_results(copy).records) == 6  # trials.csv, as the completed run wrote it
    with pytest.warns(SweepWarning, match="2 of 6 records") as caught:
        back = read_results(copy, from_chunks=True)
    assert [(r["cell"], r["trial"]) for r in back.records] == [(0, 0), (0, 1), (0, 2), (1, 2)]
    assert len(caught) == 1 and "chunks/cell00001_t000000-000002.json" in str(caught[0].message)
    shutil.rmtree(copy / "chunks")
    with pytest.raises(FileNotFoundError, match="holds no chunks/$"):
        read_results(copy, from_chunks=True)


def test_a_manifest_without_column_types_is_read_by_inference(tmp_path):
    """Directories written before the manifest recorded column types read back too."""
    result = run_sweep(toy_sweep(n_trials=2), tmp_path / "out", progress=False)
    path = tmp_path / "out" / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest["column_types"], manifest["tuple_keys"]
    path.write_text(json.dumps(manifest))
    assert read_results(tmp_path / "out").records == result.records


def test_reader_never_writes_nor_takes_the_lock(awkward):
    fcntl = pytest.importorskip("fcntl")
    lock = awkward.outdir / ".lock"
    lock.write_text("1\n")  # as a running sweep would: its lock file, flocked
    before = _snapshot(awkward.outdir)
    with open(lock) as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        back = read_results(awkward.outdir)
        back.table("summary.csv")
    assert _snapshot(awkward.outdir) == before
    lock.unlink()


def test_table_round_trips_write_table_rows(awkward):
    rows = [
        {"steps": (1.0, 0.1), "rate": 0.1 + 0.2, "n": 3, "ok": True, "name": "a", "gap": None,
         "mixed": 1, "edge": float("inf")},
        {"steps": (1, 2), "rate": 1e-300, "n": -4, "ok": False, "name": "12", "gap": None,
         "mixed": 2.5, "edge": -0.0},
    ]
    write_table(awkward.outdir / "rates.csv", rows)
    try:
        back = read_results(awkward.outdir).table("rates.csv")
    finally:
        (awkward.outdir / "rates.csv").unlink()
    assert json.dumps(back) == json.dumps(rows)
    assert [[type(v) for v in r.values()] for r in back] == [[type(v) for v in r.values()]
                                                             for r in rows]


def test_table_reads_the_summary_back(tmp_path):
    sweep = toy_sweep(trial_fn=toys.step_sizes_trial, n_trials=2,
                      cells=[{"steps": (1.0, 0.1), "k": 2}, {"steps": (0.5,), "k": 3}])
    result = run_sweep(sweep, tmp_path / "out", progress=False)
    assert read_results(result.outdir).table("summary.csv") == result.summary


def _one_line(info):
    message = str(info.value)
    assert "\n" not in message
    return message


def test_missing_and_malformed_directories_raise_one_line_errors(awkward, tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        read_results(tmp_path / "nowhere")
    assert "nowhere" in _one_line(info) and "does not exist" in _one_line(info)

    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError) as info:
        read_results(tmp_path / "empty")
    assert "'" + str(tmp_path / "empty") + "' holds no manifest.json" in _one_line(info)

    copy = tmp_path / "copy"
    shutil.copytree(awkward.outdir, copy)
    manifest_text = (copy / "manifest.json").read_text()
    (copy / "manifest.json").write_text(manifest_text[:100])
    with pytest.raises(ValueError, match="manifest.json is malformed") as info:
        read_results(copy)
    assert str(copy) in _one_line(info)
    (copy / "manifest.json").write_text(json.dumps({**json.loads(manifest_text), "format": "x/9"}))
    with pytest.raises(ValueError, match="has format 'x/9', expected 'mixreg.montecarlo/1'"):
        read_results(copy)
    (copy / "manifest.json").write_text(manifest_text)

    trials = (copy / "trials.csv").read_text().splitlines(keepends=True)
    (copy / "trials.csv").write_text("".join(trials[:2] + [trials[2].replace(",0,1,", ",0,x,", 1)]))
    with pytest.raises(EditedFileError, match="trials.csv was changed after the run wrote it") as info:
        read_results(copy)
    _one_line(info)
    with pytest.warns(SweepWarning, match="trials.csv was changed"), \
            pytest.raises(ValueError, match="trials.csv line 3") as info:
        read_results(copy, accept_edited=("trials.csv",))
    _one_line(info)
    (copy / "trials.csv").unlink()
    chunk = copy / "chunks" / "cell00000_t000002-000003.json"
    chunk.write_text(chunk.read_text()[:50])
    with pytest.raises(ValueError, match="chunk file chunks/cell00000_t000002-000003.json is "
                                         "unreadable") as info:
        read_results(copy)
    _one_line(info)
    shutil.rmtree(copy / "chunks")
    with pytest.raises(FileNotFoundError, match="holds neither trials.csv nor chunks/"):
        read_results(copy)

    back = read_results(awkward.outdir)
    with pytest.raises(FileNotFoundError, match="holds no rates.csv"):
        back.table("rates.csv")
    with pytest.raises(ValueError, match="must be a file name"):
        back.table("../manifest.json")


def test_read_results_is_exported_and_refuses_a_file_as_not_a_directory(awkward):
    assert mixreg.montecarlo.read_results is read_results and "read_results" in mixreg.montecarlo.__all__
    with pytest.raises(NotADirectoryError, match="is not a directory") as info:
        read_results(awkward.outdir / "trials.csv")
    assert "does not exist" not in _one_line(info)


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_table_edited_after_the_run_is_named_not_read(awkward, tmp_path):
    """The manifest records the sha256 of trials.csv, summary.csv and every table written with
    ``record=True``; a value edited by hand is refused naming the file, or read with a warning
    when accepted by name."""
    copy = tmp_path / "copy"
    shutil.copytree(awkward.outdir, copy)
    write_table(copy / "rates.csv", [{"steps": (1.0, 0.1), "rate": 0.25}], record=True)
    assert read_results(copy).table("rates.csv") == [{"steps": (1.0, 0.1), "rate": 0.25}]
    assert {"trials.csv", "summary.csv", "rates.csv", "sweep.config"} <= set(
        json.loads((copy / "manifest.json").read_text())["checksums"])

    _edit(copy / "rates.csv", "0.25", "0.75")
    results = read_results(copy)
    with pytest.raises(EditedFileError, match="rates.csv was changed after the run wrote it") as info:
        results.table("rates.csv")
    assert str(copy) in _one_line(info) and info.value.name == "rates.csv"
    with pytest.warns(SweepWarning, match="rates.csv was changed"):
        assert read_results(copy, accept_edited="rates.csv").table("rates.csv")[0]["rate"] == 0.75

    _edit(copy / "summary.csv", "n_errors", "n_fixed")
    with pytest.raises(EditedFileError, match="summary.csv was changed"):
        results.table("summary.csv")
    wall_time = awkward.records[0]["wall_time"]
    _edit(copy / "trials.csv", repr(wall_time), repr(wall_time * 2))
    with pytest.raises(EditedFileError, match="trials.csv was changed"):
        read_results(copy)


def test_an_edited_config_in_the_manifest_is_named(awkward, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(awkward.outdir, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    edited = {**manifest, "sweep": {**manifest["sweep"], "config": {**manifest["sweep"]["config"], "lr": 0.5}}}
    (copy / "manifest.json").write_text(json.dumps(edited))
    with pytest.raises(EditedFileError, match=r"the config in manifest.json \(sweep.config\) was changed") as info:
        read_results(copy)
    _one_line(info)
    with pytest.warns(SweepWarning, match="sweep.config"):
        assert read_results(copy, accept_edited=("manifest.json",)).config["lr"] == 0.5
    # a manifest of an earlier version has no checksums: its sweep_key still tells an edit
    del edited["checksums"]
    (copy / "manifest.json").write_text(json.dumps(edited))
    with pytest.raises(EditedFileError, match="no longer hashes to its sweep_key"):
        read_results(copy)
    cells = {**manifest, "sweep": {**manifest["sweep"], "root_seed": 7}}
    (copy / "manifest.json").write_text(json.dumps(cells))
    with pytest.raises(EditedFileError, match="sweep section of manifest.json"):
        read_results(copy)


def test_a_directory_without_checksums_reads_unverified(awkward, tmp_path):
    """Directories written before the manifest held checksums read and redraw as before."""
    copy = tmp_path / "copy"
    shutil.copytree(awkward.outdir, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["checksums"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    _edit(copy / "summary.csv", "n_errors", "n_fixed")
    back = read_results(copy)
    assert not back.recorded("trials.csv") and not back.recorded("summary.csv")
    _assert_same_records(back.records, awkward.records)
    assert "n_fixed" in back.table("summary.csv")[0]
