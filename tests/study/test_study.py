"""mixreg.study: parameters declared with their constraints, typed trial specs, and a study as one folder."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import re
from typing import ClassVar

import numpy as np
import pytest

from _toy_trials import REPO_DIR
from mixreg.problems import CellSchema, ProblemSpec
from mixreg.study import Spec, Study, TrialSpec, param


@dataclasses.dataclass(frozen=True, kw_only=True)
class Grid(Spec):
    preset: str = param("the preset")
    m: int = param("clients", low=1)
    k: int = param("clusters", low=1, at_most="m", why="every cluster needs a client")
    ms: tuple[int, ...] = param("client counts", default=(4,), low=1, distinct=True, at_least="k")
    sigma: float = param("noise", default=0.0, low=0)
    steps: tuple[float, ...] = param("step sizes", default=(1.0,), low=0, low_open=True)
    p: float = param("a proportion", default=0.5, low=0, high=1, low_open=True)
    dtype: str = param("type", default="float64", choices=("float32", "float64"))
    shared: bool = param("share draws", default=False)

    def check(self):
        if self.shared and len(self.ms) < 2:
            raise ValueError("shared needs two ms or more (a slope needs two points)")


GOOD = dict(preset="q", m=4, k=2)


@pytest.mark.parametrize("changes,message", [
    (dict(m=0), "m must be an integer >= 1, got 0"),
    (dict(m=2.0), "m must be an integer >= 1, got 2.0"),
    (dict(m=True), "m must be an integer >= 1, got True"),
    (dict(k=5), "k must be at most m (every cluster needs a client); got k=5, m=4"),
    (dict(ms=(4, 4)), "ms must be distinct, got [4, 4]"),
    (dict(ms=()), "ms is empty: give at least one value"),
    (dict(ms=(1, 4)), "every value of ms must be at least k; got ms=[1, 4], k=2"),
    (dict(sigma=float("nan")), "sigma must be finite and >= 0, got nan"),
    (dict(sigma=-1.0), "sigma must be finite and >= 0, got -1.0"),
    (dict(steps=(1.0, 0.0)), "steps must be finite and > 0, got [1.0, 0.0]"),
    (dict(p=0.0), "p must be finite and in (0, 1], got 0.0"),
    (dict(p=1.5), "p must be finite and in (0, 1], got 1.5"),
    (dict(dtype="float16"), "dtype must be one of 'float32', 'float64'; got 'float16'"),
    (dict(shared=True), "a slope needs two points"),
])
def test_each_declared_constraint_refuses_its_value_in_one_line_naming_the_field(changes, message):
    with pytest.raises(ValueError) as info:
        Grid(**{**GOOD, **changes})
    assert str(info.value) == message or message in str(info.value), str(info.value)
    assert "\n" not in str(info.value)


def test_a_valid_spec_keeps_its_values_and_types():
    grid = Grid(**GOOD, ms=[4, 8], sigma=0, shared=True)
    assert grid.ms == (4, 8)  # a list becomes a tuple
    assert grid.sigma == 0.0 and type(grid.sigma) is float  # an integer for a float field is that float
    assert grid.validate() is grid
    with pytest.raises(dataclasses.FrozenInstanceError):
        grid.m = 3
    with pytest.raises(TypeError):
        Grid("q", 4, 2)  # keyword-only
    assert grid.replace(m=6).m == 6
    with pytest.raises(ValueError, match="k must be at most m"):
        grid.replace(m=1)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Run(TrialSpec):
    schema: ClassVar[CellSchema] = CellSchema(keys={"m": "m", "k": "k", "n": "n", "d": "d", "sigma": "sigma",
                                                    "scale": "r"})
    n_rounds: int = param("rounds", low=1)
    steps: tuple[float, ...] = param("step sizes", low=0, low_open=True)
    levels: tuple[float, ...] | None = param("levels", default=None, low=0)

    def columns(self):
        return ("n_rounds", "m", "k", "n", "d", "sigma", "r", "steps", "levels")


def test_a_trial_spec_round_trips_to_the_cell_the_dict_was_and_keeps_its_seed():
    from mixreg.montecarlo import trial_seed

    problem = ProblemSpec(m=10, k=2, n=5, d=3, sigma=0.5, scale=0.25)
    spec = Run(problem=problem, n_rounds=7, steps=(1.0, 0.1))
    cell = spec.to_cell()
    hand = {"n_rounds": 7, "m": 10, "k": 2, "n": 5, "d": 3, "sigma": 0.5, "r": 0.25, "steps": (1.0, 0.1)}
    assert cell == hand and list(cell) == list(hand)  # None fields left out, in columns() order
    assert Run.from_cell(cell) == spec
    assert trial_seed(1, cell, 0).entropy == trial_seed(1, hand, 0).entropy
    with pytest.raises(ValueError, match="n_rounds must be an integer >= 1"):
        Run.from_cell({**cell, "n_rounds": 0})
    with pytest.raises(ValueError, match="cell must hold the key"):
        Run.from_cell({key: value for key, value in cell.items() if key != "r"})


def _double(spec, seed):
    return {"twice": 2 * spec.n_rounds, "draw": float(np.random.default_rng(seed).random())}


def test_a_sweep_of_specs_hands_the_trial_a_spec_and_keeps_the_dicts_identity(tmp_path):
    from mixreg.montecarlo import Sweep, replay_trial, run_sweep

    problem = ProblemSpec(m=10, k=2, n=5, d=3, sigma=0.5, scale=0.25)
    specs = [Run(problem=problem, n_rounds=t, steps=(1.0,)) for t in (1, 2)]
    typed = Sweep(name="s", trial_fn=_double, cells=specs, n_trials=2, root_seed=3, config={}, spec_type=Run,
                  cost_fn=lambda spec: spec.n_rounds * 1.0)
    plain = Sweep(name="s", trial_fn=_double, cells=[s.to_cell() for s in specs], n_trials=2, root_seed=3, config={})
    assert typed.key == plain.key and typed.cells == plain.cells
    result = run_sweep(typed, tmp_path / "out", jobs=2, progress=False)
    assert [r["twice"] for r in result.records] == [2, 2, 4, 4]
    assert replay_trial(typed, 1, 1) == {k: v for k, v in result.records[3].items() if k in ("twice", "draw")}


# --------------------------------------------------------------------------- a new study is one folder

def _toy_files():
    """The two files of the toy study, as docs/studies.md shows them (so the page is run, not just read)."""
    page = (REPO_DIR / "docs" / "studies.md").read_text(encoding="utf-8")
    init, main = re.findall(r"```python\n(.*?)```", page, flags=re.S)[:2]
    return init, main


def _toy_folder(root):
    folder = root / "toy_mean"
    folder.mkdir()
    init, main = _toy_files()
    (folder / "__init__.py").write_text(init)
    (folder / "__main__.py").write_text(main)
    return folder


def _run(root, *argv):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_DIR), os.environ.get("PYTHONPATH", "")]),
               MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-m", "toy_mean", *argv], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_new_study_is_one_folder_of_two_files_run_through_the_command_line(tmp_path):
    """The proof that a study needs nothing of mixreg but its public API: a folder of two files (the
    study and its two-line ``__main__``) gets the flags, presets, validation, the two-worker engine,
    the tables, the figure, resume and the one-line faults."""
    folder = _toy_folder(tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == ["__init__.py", "__main__.py"]

    shown = _run(tmp_path, "--help")
    assert shown.returncode == 0, shown.stderr
    assert "--ns N [N ...]" in shown.stdout and "(default: 4 16 64)" in " ".join(shown.stdout.split())

    bad = _run(tmp_path, "--sigma", "0", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "python -m toy_mean: error: --sigma: sigma must be finite and > 0, got 0.0 (see --help)"
        if "(see --help)" in bad.stderr else "python -m toy_mean: error: --sigma: sigma must be finite and > 0, got 0.0"]
    assert not (tmp_path / "bad").exists()

    out = tmp_path / "out"
    done = _run(tmp_path, "--out", str(out), "--jobs", "2", "--no-progress")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["jobs"] == 2 and manifest["n_records"] == 9
    rows = {int(float(r["n"])): r for r in _csv(out / "errors.csv")}
    for n, row in rows.items():  # the measured error is the predicted one (200 means a trial, 3 trials)
        assert abs(float(row["rms"]) / float(row["predicted"]) - 1) < 0.2, (n, row)
    assert (out / "errors.png").is_file() and (out / "errors.pdf").is_file()

    again = _run(tmp_path, "--out", str(out), "--jobs", "2", "--no-progress")  # resumes: nothing to recompute
    assert again.returncode == 0 and (out / "trials.csv").read_text() == (out / "trials.csv").read_text()
    redrawn = _run(tmp_path, "--redraw", str(out))
    assert redrawn.returncode == 0, redrawn.stderr


def _csv(path):
    import csv

    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_a_study_refuses_an_inconsistent_declaration():
    def trial(spec, seed):
        return {}

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class NoPreset(Spec):
        trials: int = param("trials", low=1)

    common = dict(name="x", command="python -m x", description="x", presets={"quick": {}}, cells=lambda c: [],
                  tables=(), summarise=lambda c, r: {}, draw=lambda c, t, o: [], root_seed=1)
    with pytest.raises(TypeError, match="no preset field"):
        Study(config=NoPreset, trial=trial, **common)
    with pytest.raises(TypeError, match="exactly one of trial and trial_of"):
        Study(config=Grid, **common)

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class WithTrials(Spec):
        preset: str = param("the preset")
        trials: int = param("trials", low=1)

    with pytest.raises(TypeError, match=r"preset 'quick' sets \['trails'\], which are not fields"):
        Study(config=WithTrials, trial=trial, **{**common, "presets": {"quick": {"trails": 3}}})


def test_a_cell_with_a_key_of_no_field_is_refused_naming_it():
    cell = Run(problem=ProblemSpec(m=10, k=2, n=5, d=3, sigma=0.5, scale=0.25), n_rounds=7, steps=(1.0,)).to_cell()
    with pytest.raises(ValueError, match=r"\['n_round'\]"):
        Run.from_cell({**{k: v for k, v in cell.items() if k != "n_rounds"}, "n_round": 7, "n_rounds": 7})


def test_an_integer_for_a_real_is_that_real_so_equal_specs_have_one_seed():
    from mixreg.montecarlo import trial_seed

    a = Run(problem=ProblemSpec(m=10, k=2, n=5, d=3, sigma=0, scale=1), n_rounds=7, steps=(1, 2))
    b = Run(problem=ProblemSpec(m=10, k=2, n=5, d=3, sigma=0.0, scale=1.0), n_rounds=7, steps=(1.0, 2.0))
    assert a == b and a.to_cell() == b.to_cell() and a.steps == (1.0, 2.0) and type(a.problem.sigma) is float
    assert trial_seed(1, a.to_cell(), 0).entropy == trial_seed(1, b.to_cell(), 0).entropy
    assert repr(a.to_cell()) == repr(b.to_cell())


def test_numpy_nan_an_unsupported_annotation_and_a_relation_to_no_field_are_refused():
    with pytest.raises(ValueError, match="p must be finite"):
        Grid(**{**GOOD, "p": np.float32("nan")})

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Loose(Spec):
        x: int | float = param("either", low=0)

    with pytest.raises(TypeError, match="x: a param field is annotated"):
        Loose(x=-1)

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Typo(Spec):
        k: int = param("clusters", low=1, at_most="mm")

    with pytest.raises(TypeError, match="k: at_most='mm' names no field"):
        Typo(k=2)


def test_a_flat_spec_is_a_cell_and_back():
    grid = Grid(**GOOD, ms=(4, 8))
    cell = grid.to_cell()
    assert list(cell) == [f.name for f in dataclasses.fields(Grid)] and cell["ms"] == (4, 8)
    assert Grid.from_cell({**cell, "other": 1}) == grid  # keys of fields composed beside it are left alone
    with pytest.raises(ValueError, match=r"cell must hold the key\(s\) \['m'\] of Grid"):
        Grid.from_cell({key: value for key, value in cell.items() if key != "m"})
