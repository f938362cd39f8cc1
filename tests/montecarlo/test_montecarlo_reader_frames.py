"""Tests of Results.frame and Results.dataset (mixreg.montecarlo.reader) and of group_rates on a DataFrame:
a results directory's tables as pandas and xarray objects, every value of the type the list-of-dicts
path gives it; pandas and xarray needed only there, and named by a one-line error where absent."""

import json
import math
import shutil
import subprocess
import sys

import numpy as np
import pytest

import _toy_trials as toys
from _toy_trials import CELLS, toy_sweep
from mixreg.montecarlo import SweepWarning, run_sweep, write_table
from mixreg.montecarlo.reader import read_results
from mixreg.stats import group_rates

AWKWARD_CELLS = [{"steps": (1.0, 0.1), "k": 0}, {"steps": (1, 2), "k": 1}]
#: A full grid over a tuple-valued field and an int one (step_sizes_trial's fields).
STEP_CELLS = [{"steps": s, "k": k} for s in ((1.0, 0.1), (0.5,)) for k in (1, 2, 3)]


@pytest.fixture
def pd():
    return pytest.importorskip("pandas")


@pytest.fixture
def xr():
    pytest.importorskip("pandas")
    return pytest.importorskip("xarray")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """The least-squares toy sweep: a full 3 x 2 grid over (R, noise), 4 trials, bools, ints, floats."""
    return run_sweep(toy_sweep(n_trials=4), tmp_path_factory.mktemp("toy") / "out", progress=False)


@pytest.fixture(scope="module")
def awkward(tmp_path_factory):
    """Values hard to read back (tuples, huge ints, -0.0, nan, digit strings, ints and floats in one
    column) and one failed trial, whose outcomes are missing."""
    sweep = toy_sweep(trial_fn=toys.awkward_values_trial, cells=AWKWARD_CELLS, n_trials=3, chunk_size=2)
    with pytest.warns(SweepWarning, match="1 of 6 trials"):
        return run_sweep(sweep, tmp_path_factory.mktemp("awkward") / "out", progress=False)


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    sweep = toy_sweep(trial_fn=toys.step_sizes_trial, cells=STEP_CELLS, n_trials=2)
    return run_sweep(sweep, tmp_path_factory.mktemp("steps") / "out", progress=False)


def _same(got, want):
    """``got`` (from a frame or a dataset) is ``want`` (from the list of dicts): the same type and value,
    ``nan`` for ``nan`` and the sign of a zero; a missing value (pandas' ``NA``, ``nan``) for ``None``."""
    if want is None:
        import pandas
        return got is None or bool(pandas.isna(got))
    if isinstance(got, np.generic):
        got = got.item()
    if type(got) is not type(want):
        return False
    if isinstance(want, float):
        return (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want))
    return got == want


def _assert_frame_is_rows(frame, rows, columns):
    assert list(frame.columns) == columns
    assert list(frame.index) == list(range(len(rows)))
    for c in columns:
        got = frame[c].tolist()
        bad = [(i, got[i], row[c]) for i, row in enumerate(rows) if not _same(got[i], row[c])]
        assert not bad, f"column {c!r} (dtype {frame[c].dtype}): rows (index, frame, records) {bad[:3]}"


# --------------------------------------------------------------------------- frame


def test_frame_gives_every_record_value_by_value_with_its_type(pd, awkward):
    back = read_results(awkward.outdir)
    frame = back.frame()
    _assert_frame_is_rows(frame, back.records, list(back.records[0]))
    assert frame["big_int"].dtype == "Int64" and frame["flag"].dtype == "boolean"  # a failed trial: missing
    assert frame["third"].dtype == np.float64 and frame["mixed"].dtype == object
    assert frame["digits"].tolist()[0] == "0123" and frame["true_text"].tolist()[0] == "True"
    assert frame["error"].tolist()[4].startswith("ArithmeticError")


def test_a_tuple_valued_field_comes_back_as_tuples(pd, awkward):
    frame = read_results(awkward.outdir).frame()
    assert frame["steps"].dtype == object
    assert frame["steps"].tolist() == [(1.0, 0.1)] * 3 + [(1, 2)] * 3
    assert all(type(v) is tuple for v in frame["steps"])
    assert [type(v) for v in frame.loc[3, "steps"]] == [int, int]  # (1, 2) is not (1.0, 2.0), nor "1,2"


def test_booleans_ints_and_floats_have_numpy_dtypes_without_missing_values(pd, toy):
    back = read_results(toy.outdir)
    frame = back.frame("trials")
    _assert_frame_is_rows(frame, back.records, list(back.records[0]))
    dtypes = frame.dtypes.astype(str).to_dict()
    assert {c: dtypes[c] for c in ("R", "cell", "trial", "dist", "success", "iterations", "nonfinite")} == {
        "R": "float64", "cell": "int64", "trial": "int64", "dist": "float64", "success": "bool",
        "iterations": "int64", "nonfinite": "bool"}
    assert frame["success"].sum() == sum(r["success"] for r in back.records)


def test_frame_reads_the_chunks_of_a_run_still_going(pd, awkward, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(awkward.outdir, copy)
    (copy / "trials.csv").unlink()
    back = read_results(copy)
    _assert_frame_is_rows(back.frame(), back.records, list(back.records[0]))


def test_frame_of_the_other_tables_is_their_table_with_columns_as_written(pd, awkward):
    rows = [{"steps": (1.0, 0.1), "rate": 0.1 + 0.2, "n": 3, "ok": True, "name": "a", "gap": None, "edge": -0.0},
            {"steps": (1, 2), "rate": 1e-300, "n": -4, "ok": False, "name": "12", "gap": None, "edge": math.inf}]
    write_table(awkward.outdir / "rates.csv", rows)
    try:
        back = read_results(awkward.outdir)
        frame = back.frame("rates")
        _assert_frame_is_rows(frame, back.table("rates.csv"), list(rows[0]))
        assert frame.equals(back.frame("rates.csv"))
        _assert_frame_is_rows(back.frame("summary"), back.table("summary.csv"), list(back.table("summary.csv")[0]))
        with pytest.raises(FileNotFoundError, match=r"holds no theory.csv \(its tables: rates, summary, trials\)"):
            back.frame("theory")
    finally:
        (awkward.outdir / "rates.csv").unlink()


# --------------------------------------------------------------------------- dataset


def test_dataset_has_the_grid_as_dimensions_and_the_outcomes_as_variables(xr, toy):
    back = read_results(toy.outdir)
    ds = back.dataset()
    assert isinstance(ds, xr.Dataset)
    assert dict(ds.sizes) == {"R": 3, "noise": 2, "trial": 4}
    assert ds["R"].values.tolist() == [0.5, 1.0, 2.0] and ds["noise"].values.tolist() == [0.1, 1.0]
    assert ds["trial"].values.tolist() == [0, 1, 2, 3]
    assert set(ds.data_vars) == {"dist", "gram_trace", "first", "success", "iterations", "nonfinite", "wall_time",
                                 "seed_entropy", "error"}
    assert ds["cell"].dims == ("R", "noise") and ds["cell"].values.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert (ds["success"].dtype, ds["iterations"].dtype, ds["dist"].dtype) == (bool, np.int64, np.float64)
    for record in back.records:
        at = ds.sel(R=record["R"], noise=record["noise"], trial=record["trial"])
        assert all(_same(at[v].values[()], record[v]) for v in ds.data_vars)
        assert at["cell"].item() == record["cell"]
    assert json.loads(ds.attrs["config"]) == back.config and ds.attrs["sweep"] == "toy"


def test_a_tuple_valued_field_is_a_dimension_of_tuples(xr, steps):
    back = read_results(steps.outdir)
    ds = back.dataset()
    assert dict(ds.sizes) == {"steps": 2, "k": 3, "trial": 2}
    assert ds["steps"].values.tolist() == [(0.5,), (1.0, 0.1)]  # sorted
    assert ds["k"].dtype == np.int64 and ds["label"].dtype == object
    for record in back.records:
        i = ds["steps"].values.tolist().index(record["steps"])
        at = ds.isel(steps=i).sel(k=record["k"], trial=record["trial"])
        assert (at["n_steps"].item(), at["draw"].item(), at["label"].item()) == (
            record["n_steps"], record["draw"], record["label"])


def test_a_field_with_one_value_is_a_scalar_coordinate(xr, tmp_path):
    cells = [{"R": r, "noise": 0.1, "steps": (1, 2)} for r in (0.5, 1.0)]
    back = read_results(run_sweep(toy_sweep(cells=cells, n_trials=2), tmp_path / "out", progress=False).outdir)
    ds = back.dataset()
    assert dict(ds.sizes) == {"R": 2, "trial": 2}
    assert ds["noise"].dims == () and ds["noise"].item() == 0.1
    assert ds["steps"].dims == () and ds["steps"].item() == (1, 2)


def test_dataset_of_the_summary_is_over_the_grid(xr, toy):
    ds = read_results(toy.outdir).dataset("summary")
    assert dict(ds.sizes) == {"R": 3, "noise": 2}
    assert ds["n_trials"].values.tolist() == [[4, 4]] * 3
    summary = read_results(toy.outdir).table("summary.csv")
    assert ds["mean_dist"].sel(R=2.0, noise=1.0).item() == next(
        r["mean_dist"] for r in summary if (r["R"], r["noise"]) == (2.0, 1.0))


def test_a_grid_that_is_not_full_is_one_clear_error_pointing_to_frame(xr, tmp_path):
    back = read_results(run_sweep(toy_sweep(cells=CELLS[:-1], n_trials=2), tmp_path / "out", progress=False).outdir)
    with pytest.raises(ValueError) as info:
        back.dataset()
    message = str(info.value)
    assert "\n" not in message
    assert "the grid over (R, noise) is not full: 1 of its 6 cells have no row (the first: R=2.0, noise=1.0)" in message
    assert "use .frame()" in message
    assert len(back.frame()) == 10  # the rows as they are


def _still_going(outdir, copy, remove):
    """A copy of ``outdir`` as a run still going would leave it: no trials.csv, the chunk files ``remove``
    (glob patterns) not written yet."""
    shutil.copytree(outdir, copy)
    (copy / "trials.csv").unlink()
    for pattern in remove:
        for chunk in (copy / "chunks").glob(pattern):
            chunk.unlink()
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))
    return read_results(copy)


def test_the_trials_missing_from_a_run_still_going_are_counted(xr, toy, tmp_path):
    back = _still_going(toy.outdir, tmp_path / "copy", ["cell00005_t000002-000004.json"])
    assert len(back.records) == 22
    with pytest.raises(ValueError, match=r"over \(R, noise, trial\) is not full: 2 of its 24 trials have no row "
                                         r"\(the first: R=2.0, noise=1.0, trial=2\).*use \.frame\(\)"):
        back.dataset()


def test_a_grid_value_no_record_holds_yet_is_missing_not_absent(xr, toy, tmp_path):
    back = _still_going(toy.outdir, tmp_path / "copy", ["cell00004_*", "cell00005_*"])  # R = 2.0
    assert {r["R"] for r in back.records} == {0.5, 1.0}
    with pytest.raises(ValueError, match=r"the grid over \(R, noise\) is not full: 2 of its 6 cells have no row "
                                         r"\(the first: R=2.0, noise=0.1\)"):
        back.dataset()
    with pytest.raises(ValueError, match=r"the grid over \(R, noise\) is not full: 6 of its 6 cells"):
        _still_going(toy.outdir, tmp_path / "empty", ["*"]).dataset()


def test_dims_choose_the_axes_and_must_tell_the_rows_apart(xr, awkward):
    back = read_results(awkward.outdir)
    with pytest.raises(ValueError, match=r"the grid over \(steps, k\) is not full: 2 of its 4 cells"):
        back.dataset()  # steps and k vary together: not a product
    ds = back.dataset(dims=["k", "trial"])
    assert dict(ds.sizes) == {"k": 2, "trial": 3} and ds["steps"].dims == ("k", "trial")
    assert ds["steps"].values[1, 0] == (1, 2)
    assert ds["big_int"].dtype == object and ds["big_int"].values[1, 1] is None  # the failed trial
    assert ds["flag"].dtype == object and ds["third"].dtype == np.float64 and math.isnan(ds["third"].values[1, 1])
    with pytest.raises(ValueError, match="rows 0 and 1 of table 'trials' share k=0: dims=\\['k'\\] do not tell"):
        back.dataset(dims=["k"])
    with pytest.raises(ValueError, match="dims must name distinct columns of table 'trials', got \\['nope'\\]"):
        back.dataset(dims=["nope"])


# --------------------------------------------------------------------------- group_rates


def test_group_rates_on_a_frame_gives_the_frame_of_its_rates_on_the_records(pd, toy, awkward):
    for result, keys, flags, mean_of in ((toy, ["R", "noise"], ["success", "nonfinite"], ["dist", "iterations"]),
                                         (awkward, ["steps"], ["flag"], ["third", "big_int"])):
        back = read_results(result.outdir)
        on_records = group_rates(back.records, keys, flags, mean_of=mean_of)
        on_frame = group_rates(back.frame(), keys, flags, mean_of=mean_of)
        assert isinstance(on_records, list) and isinstance(on_frame, pd.DataFrame)
        _assert_frame_is_rows(on_frame, on_records, list(on_records[0]))
    assert on_frame["steps"].tolist() == [(1.0, 0.1), (1, 2)] and on_frame["trials"].tolist() == [3, 2]
    assert on_frame["trials"].dtype == np.int64 and on_frame["flag_rate"].dtype == np.float64


# --------------------------------------------------------------------------- without the frames extra


def test_without_pandas_frame_and_dataset_say_how_to_install_it_in_one_line(toy, monkeypatch):
    back = read_results(toy.outdir)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    for call, name in ((back.frame, "Results.frame()"), (back.dataset, "Results.dataset()")):
        with pytest.raises(ImportError) as info:
            call()
        assert str(info.value) == f'{name} needs pandas: pip install "mixreg[frames]"'
        assert info.value.__cause__ is None and info.value.__suppress_context__
    assert group_rates(back.records, ["R"], ["success"])[0]["trials"] == 8  # lists need no pandas


def test_without_xarray_dataset_says_how_to_install_it(pd, toy, monkeypatch):
    monkeypatch.setitem(sys.modules, "xarray", None)
    with pytest.raises(ImportError, match=r'^Results.dataset\(\) needs xarray: pip install "mixreg\[frames\]"$'):
        read_results(toy.outdir).dataset()


def test_importing_the_reader_and_stats_imports_neither_pandas_nor_xarray():
    code = ("import sys, mixreg.stats, mixreg.montecarlo.reader; "
            "print(sorted(m for m in ('pandas', 'xarray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=toys.subprocess_env(), timeout=toys.HANG)
    assert out.stdout.strip() == "[]"


def test_a_dimension_tells_1_from_1_0_and_holds_nan_once(xr, toy):
    rows = [{"m": m, "method": method, "rate": 0.25 * i} for i, (m, method) in
            enumerate((m, method) for m in (1, 1.0, math.nan) for method in ("a", "b"))]
    write_table(toy.outdir / "odd.csv", rows)
    try:
        ds = read_results(toy.outdir).dataset("odd", dims=["m", "method"])
    finally:
        (toy.outdir / "odd.csv").unlink()
    assert dict(ds.sizes) == {"m": 3, "method": 2} and ds["m"].dtype == object
    assert [type(v) for v in ds["m"].values[:2]] == [int, float] and math.isnan(ds["m"].values[2])
    assert ds["rate"].values.tolist() == [[0.0, 0.25], [0.5, 0.75], [1.0, 1.25]]
