"""What code a sweep runs: user-registered algorithms reach every worker, the manifest's code
fingerprint refuses a resume after an edit, predictions are registered before the first trial."""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys
import textwrap
import types

import pytest

from mixreg.algorithms import ALGORITHMS, get_algorithm, register
from mixreg.montecarlo import (
    AlgorithmUnavailableError,
    CodeChangedError,
    ConfigMismatchError,
    Sweep,
    SweepWarning,
    module_digest,
    run_sweep,
)
from mixreg.montecarlo._code import code_changes

TRIAL = '''
import numpy as np
from mixreg.algorithms import ALGORITHMS, get_algorithm
from mixreg.problems import make_problem


def trial(cell, seed):
    """Every registered algorithm on one small problem: its best training loss."""
    rng = np.random.default_rng(seed)
    pb = make_problem(m=8, k=2, n=12, d=3, sigma=0.1, scale=2.0, protocol="gaussian", rng=rng)
    init = rng.normal(size=(2, 2, 3))
    out = {{}}
    for name in {names}:
        res = get_algorithm(name).run(pb, init, 0.1, n_rounds=4, rng=np.random.default_rng(1))
        out[name] = float(np.nanmin(res.train_loss)) * {factor}
    return out
'''

PLUGIN = '''
import dataclasses
from mixreg.algorithms import get_algorithm, register

# a user's variant: FedAvg at half the step
_base = get_algorithm("fedavg")


def run(problem, init, step_size, **kwargs):
    return _base.run(problem, init, {factor} * step_size, **kwargs)


register(dataclasses.replace(_base, name="{name}", run=run, source="a test's variant"))
'''


def _write(path, text):
    path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A directory on sys.path (loky workers inherit it) for a study's modules; the modules and
    registry entries it adds are removed afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))  # the engine starts fresh loky workers for a new sys.path
    before_modules, before_algorithms = set(sys.modules), dict(ALGORITHMS)
    yield tmp_path
    for name in set(sys.modules) - before_modules:
        if name.startswith(("usr_", "ghost_")):
            del sys.modules[name]
    for name in set(ALGORITHMS) - set(before_algorithms):
        del ALGORITHMS[name]


def _as_an_earlier_version_wrote_it(outdir, key):
    """Remove ``key`` from ``outdir``'s manifest: what a version before it existed wrote."""
    path = outdir / "manifest.json"
    manifest = json.loads(path.read_text())
    del manifest[key]
    path.write_text(json.dumps(manifest))


def _sweep(trial_fn, algorithms=None, predictions=()):
    return Sweep("code", trial_fn, [{"a": 1}, {"a": 2}], n_trials=2, root_seed=3, config={},
                 algorithms=algorithms, predictions=predictions)


def test_a_plugin_algorithm_runs_on_two_loky_workers_as_in_process(package, tmp_path):
    # the trap: registered in the user's module, never imported by the workers, the
    # method had no column and read as "diverged"
    _write(package / "usr_plugin_a.py", PLUGIN.format(name="usr_half", factor=0.5))
    _write(package / "usr_trial_a.py", TRIAL.format(names='["fedavg", "usr_half"]', factor=1))
    importlib.import_module("usr_plugin_a")
    trial = importlib.import_module("usr_trial_a").trial
    sweep = _sweep(trial, algorithms=["fedavg", "usr_half"])
    two = run_sweep(sweep, tmp_path / "two", jobs=2)
    one = run_sweep(sweep, tmp_path / "one", jobs=1)
    assert [r["error"] for r in two.records] == [""] * 4
    assert [r["usr_half"] for r in two.records] == [r["usr_half"] for r in one.records]
    assert all(r["usr_half"] != r["fedavg"] for r in two.records)  # it ran, at its own step
    assert set(two.manifest["code"]["algorithms"]) == {"fedavg", "usr_half"}
    assert "mixreg.kernels" in two.manifest["code"]["algorithms"]["fedavg"]["modules"]  # what its driver calls


def test_an_algorithm_registered_in_a_script_reaches_the_workers(tmp_path):
    script = tmp_path / "study.py"
    _write(script, '''
        import dataclasses, sys
        import numpy as np
        from mixreg.algorithms import get_algorithm, register
        from mixreg.montecarlo import Sweep, run_sweep
        from mixreg.problems import make_problem

        base = get_algorithm("fedavg")

        def run(problem, init, step_size, **kwargs):  # defined in __main__: shipped by value
            return base.run(problem, init, 0.5 * step_size, **kwargs)

        register(dataclasses.replace(base, name="script_half", run=run))

        def trial(cell, seed):
            rng = np.random.default_rng(seed)
            pb = make_problem(m=8, k=2, n=12, d=3, sigma=0.1, scale=2.0, protocol="gaussian", rng=rng)
            res = get_algorithm("script_half").run(pb, rng.normal(size=(2, 2, 3)), 0.1, n_rounds=3)
            return {"loss": float(np.nanmin(res.train_loss))}

        if __name__ == "__main__":
            sweep = Sweep("script", trial, [{"a": 1}, {"a": 2}], n_trials=2, root_seed=0, config={})
            result = run_sweep(sweep, sys.argv[1], jobs=2)
            print([r["error"] for r in result.records])
    ''')
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "['', '', '', '']"


def test_an_algorithm_a_worker_cannot_get_stops_the_run_naming_it(package, tmp_path):
    # its driver lives in a module that exists in this process only: the workers cannot import it
    ghost = types.ModuleType("ghost_drivers")
    base = get_algorithm("fedavg")

    def run(problem, init, step_size, **kwargs):
        return base.run(problem, init, step_size, **kwargs)

    run.__module__, run.__qualname__ = ghost.__name__, "run"  # found there by name: pickled by reference
    ghost.run = run
    sys.modules[ghost.__name__] = ghost
    register(dataclasses.replace(base, name="ghost_alg", run=run), module="ghost_drivers")
    _write(package / "usr_trial_g.py", TRIAL.format(names='["ghost_alg"]', factor=1))
    trial = importlib.import_module("usr_trial_g").trial
    with pytest.raises(AlgorithmUnavailableError, match=r"algorithm 'ghost_alg' \(registered by module "
                                                        r"ghost_drivers\).*No module named 'ghost_drivers'"):
        run_sweep(_sweep(trial, algorithms=["ghost_alg"]), tmp_path / "out", jobs=2)
    assert len(str(AlgorithmUnavailableError("a", "b", "c")).splitlines()) == 1


def test_an_unknown_algorithm_is_refused_when_the_run_starts(package, tmp_path):
    _write(package / "usr_trial_u.py", TRIAL.format(names='["fedavg"]', factor=1))
    trial = importlib.import_module("usr_trial_u").trial
    with pytest.raises(ValueError, match=r"^algorithms: unknown algorithm 'nope'"):
        run_sweep(_sweep(trial, algorithms=["fedavg", "nope"]), tmp_path / "out")
    with pytest.raises(TypeError, match="algorithms must be a sequence"):
        _sweep(trial, algorithms="fedavg")


def test_a_rerun_after_editing_the_trial_refuses_naming_it(package, tmp_path):
    _write(package / "usr_trial_e.py", TRIAL.format(names='["fedavg"]', factor=1))
    module = importlib.import_module("usr_trial_e")
    first = run_sweep(_sweep(module.trial, algorithms=["fedavg"]), tmp_path / "out", jobs=2)
    # a comment is not code: the same fingerprint, the rerun loads every record
    _write(package / "usr_trial_e.py", "# a comment\n" + TRIAL.format(names='["fedavg"]', factor=1))
    module = importlib.reload(module)
    again = run_sweep(_sweep(module.trial, algorithms=["fedavg"]), tmp_path / "out", jobs=2)
    assert again.manifest["runs"][-1]["chunks_computed"] == 0
    # the trap: an edited trial returned the old records without a word
    _write(package / "usr_trial_e.py", TRIAL.format(names='["fedavg"]', factor=2))
    module = importlib.reload(module)
    with pytest.raises(CodeChangedError, match=r"other code \(changed since: the trial function "
                                               r"usr_trial_e:trial\).*--overwrite"):
        run_sweep(_sweep(module.trial, algorithms=["fedavg"]), tmp_path / "out", jobs=2)
    redone = run_sweep(_sweep(module.trial, algorithms=["fedavg"]), tmp_path / "out", jobs=2, overwrite=True)
    assert [r["fedavg"] for r in redone.records] == [2 * r["fedavg"] for r in first.records]


def test_a_rerun_after_editing_an_algorithm_refuses_naming_it(package, tmp_path):
    _write(package / "usr_plugin_e.py", PLUGIN.format(name="usr_edited", factor=0.5))
    _write(package / "usr_trial_p.py", TRIAL.format(names='["usr_edited"]', factor=1))
    importlib.import_module("usr_plugin_e")
    trial = importlib.import_module("usr_trial_p").trial
    run_sweep(_sweep(trial, algorithms=["usr_edited"]), tmp_path / "out", jobs=2)
    _write(package / "usr_plugin_e.py", PLUGIN.format(name="usr_edited", factor=0.25))
    with pytest.raises(CodeChangedError, match=r"changed since: algorithm 'usr_edited'\)"):
        run_sweep(_sweep(trial, algorithms=["usr_edited"]), tmp_path / "out", jobs=2)


def test_a_manifest_without_a_fingerprint_warns(package, tmp_path):
    _write(package / "usr_trial_o.py", TRIAL.format(names='["fedavg"]', factor=1))
    trial = importlib.import_module("usr_trial_o").trial
    run_sweep(_sweep(trial, algorithms=["fedavg"]), tmp_path / "out")
    _as_an_earlier_version_wrote_it(tmp_path / "out", "code")
    with pytest.warns(SweepWarning, match="records no code fingerprint"):
        run_sweep(_sweep(trial, algorithms=["fedavg"]), tmp_path / "out")


def test_module_digest_ignores_comments_only(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    digests = []
    for i, text in enumerate(["x = 1\n", "x = 1  # one\n\n", "x = 2\n", "'''doc'''\nx = 1\n"]):
        _write(tmp_path / f"usr_digest_{i}.py", text)
        digests.append(module_digest(importlib.import_module(f"usr_digest_{i}").__name__))
        del sys.modules[f"usr_digest_{i}"]
    assert digests[0] == digests[1] and len({digests[0], digests[2], digests[3]}) == 3


STUDY_FILE = """
import numpy as np
from mixreg.metrics import matched_mean_distance

SCALE = {scale}


def helper(x):
    return SCALE * x


def trial(cell, seed):
    return {{"v": helper(cell["a"])}}


def draw(records):  # figure code: the trial never reaches it
    return {draw}
"""


def _trial_digest(package, text, name):
    _write(package / f"{name}.py", text)
    module = importlib.import_module(name)
    return _sweep(module.trial, algorithms=[]).code()["trial_fn"]


def test_the_trial_digest_covers_what_the_trial_reaches_and_nothing_else(package):
    base = _trial_digest(package, STUDY_FILE.format(scale=2, draw=1), "usr_fp_0")
    figure_edit = _trial_digest(package, STUDY_FILE.format(scale=2, draw=2), "usr_fp_1")
    constant_edit = _trial_digest(package, STUDY_FILE.format(scale=3, draw=1), "usr_fp_2")
    helper_edit = _trial_digest(package, STUDY_FILE.format(scale=2, draw=1).replace("SCALE * x", "SCALE + x"),
                                "usr_fp_3")
    assert figure_edit["sha256"] == base["sha256"]  # a one-file study's figure code is not the trial's
    assert constant_edit["sha256"] != base["sha256"] and helper_edit["sha256"] != base["sha256"]
    assert base["modules"] == {}  # it imports matched_mean_distance from mixreg.metrics but never calls it
    uses = STUDY_FILE.format(scale=2, draw=1).replace('helper(cell["a"])',
                                                      'matched_mean_distance(np.ones((1, 2)), np.ones((1, 2)))')
    assert list(_trial_digest(package, uses, "usr_fp_4")["modules"]) == ["mixreg.metrics"]


def test_code_changes_names_each_change():
    old = {"trial_fn": {"module": "t", "name": "trial", "sha256": "a", "modules": {"m": "1", "gone": "2"}},
           "algorithms": {"x": {"sha256": "1", "modules": {"p": "1"}}, "y": {"sha256": "1", "modules": {}}}}
    new = {"trial_fn": {"module": "t", "name": "trial", "sha256": "b", "modules": {"m": "9", "fresh": "3"}},
           "algorithms": {"x": {"sha256": "1", "modules": {"p": "2"}}, "z": {"sha256": "1", "modules": {}}}}
    assert code_changes(old, new) == [
        "the trial function t:trial", "the trial function t:trial: module fresh (newly used)",
        "the trial function t:trial: module gone (no longer used)", "the trial function t:trial: module m",
        "algorithm 'x': module p", "algorithm 'y' (no longer run)", "algorithm 'z' (newly run)"]
    assert code_changes(new, new) == []


@dataclasses.dataclass(frozen=True)
class _Prediction:
    name: str
    value: float

    def to_json(self):
        return {"name": self.name, "value": self.value}

    @property
    def sha256(self):
        return f"{self.name}-{self.value}"


def test_predictions_are_registered_before_the_data_and_cannot_change_after(package, tmp_path):
    _write(package / "usr_trial_r.py", TRIAL.format(names='["fedavg"]', factor=1))
    trial = importlib.import_module("usr_trial_r").trial
    result = run_sweep(_sweep(trial, algorithms=["fedavg"], predictions=[_Prediction("floor", 1.0)]), tmp_path / "out")
    (entry,) = result.manifest["predictions"]
    assert entry["name"] == "floor" and entry["sha256"] == "floor-1.0"
    assert entry["registered"]["time"] == result.manifest["runs"][0]["started"]
    assert entry["registered"]["trials_before"] == 0  # before the data
    again = run_sweep(_sweep(trial, algorithms=["fedavg"], predictions=[_Prediction("floor", 1.0)]), tmp_path / "out")
    assert again.manifest["predictions"] == result.manifest["predictions"]  # still the first run's registration
    with pytest.raises(ConfigMismatchError, match=r"differing keys: predictions\.floor"):
        run_sweep(_sweep(trial, algorithms=["fedavg"], predictions=[_Prediction("floor", 2.0)]), tmp_path / "out")
    with pytest.raises(ValueError, match="distinct names"):
        _sweep(trial, predictions=[_Prediction("a", 1.0), _Prediction("a", 2.0)])


@pytest.mark.dask
def test_a_plugin_algorithm_runs_on_dask_workers(package, tmp_path, monkeypatch):
    # Dask's workers are separate programs: the study's directory reaches them through PYTHONPATH
    monkeypatch.setenv("PYTHONPATH", str(package))
    _write(package / "usr_plugin_d.py", PLUGIN.format(name="usr_dask_half", factor=0.5))
    _write(package / "usr_trial_d.py", TRIAL.format(names='["usr_dask_half"]', factor=1))
    importlib.import_module("usr_plugin_d")
    trial = importlib.import_module("usr_trial_d").trial
    sweep = _sweep(trial, algorithms=["usr_dask_half"])
    dask = run_sweep(sweep, tmp_path / "dask", dask_local=2, progress=False)
    one = run_sweep(sweep, tmp_path / "one")
    assert [r["error"] for r in dask.records] == [""] * 4
    assert [r["usr_dask_half"] for r in dask.records] == [r["usr_dask_half"] for r in one.records]


def test_a_directory_of_an_earlier_version_gets_its_predictions_registered_late_and_says_so(package, tmp_path):
    _write(package / "usr_trial_l.py", TRIAL.format(names='["fedavg"]', factor=1))
    trial = importlib.import_module("usr_trial_l").trial
    run_sweep(_sweep(trial, algorithms=["fedavg"]), tmp_path / "out")
    _as_an_earlier_version_wrote_it(tmp_path / "out", "predictions")
    with pytest.warns(SweepWarning, match="registers no predictions.*floor are registered now, after its first"):
        result = run_sweep(_sweep(trial, algorithms=["fedavg"], predictions=[_Prediction("floor", 1.0)]),
                           tmp_path / "out")
    assert result.manifest["predictions"][0]["registered"]["trials_before"] == 4


DEFAULTS_FILE = """
import functools

G = {g}


def helper(x, scale):
    return scale * x + {body}


def trial(cell, seed, g=G):
    return {{"v": helper(cell["a"], g)}}


partial_trial = functools.partial(trial, g={p})
"""


def test_a_default_a_partial_and_a_helper_beside_the_script_are_in_the_digest(package):
    def digests(name, **values):
        text = DEFAULTS_FILE.format(**{"g": 2, "body": 0, "p": 5, **values})
        _write(package / f"{name}.py", text)
        module = importlib.import_module(name)
        return (_sweep(module.trial, algorithms=[]).code()["trial_fn"]["sha256"],
                _sweep(module.partial_trial, algorithms=[]).code()["trial_fn"]["sha256"])

    base = digests("usr_df_0")
    assert digests("usr_df_1", g=3)[0] != base[0]  # def trial(cell, seed, g=G): G is read through the default
    assert digests("usr_df_2", p=6)[1] != base[1]  # functools.partial(trial, g=5): its bound argument
    assert digests("usr_df_3", body=1)[1] != base[1]  # and the function it wraps
    # a helper module beside a script (no package, not installed) is the user's code: digested too
    _write(package / "usr_helper_b.py", "def helper(x):\n    return 2 * x\n")
    _write(package / "usr_fp_b.py", "from usr_helper_b import helper\n\n\ndef trial(cell, seed):\n"
                                     "    return {'v': helper(cell['a'])}\n")
    first = _sweep(importlib.import_module("usr_fp_b").trial, algorithms=[]).code()["trial_fn"]
    _write(package / "usr_helper_b.py", "def helper(x):\n    return 3 * x\n")
    for name in ("usr_helper_b", "usr_fp_b"):
        del sys.modules[name]
    second = _sweep(importlib.import_module("usr_fp_b").trial, algorithms=[]).code()["trial_fn"]
    assert first["sha256"] != second["sha256"]


def test_what_a_prediction_calls_is_in_the_fingerprint(package):
    from mixreg.predictions import Prediction

    _write(package / "usr_pred.py", "from mixreg.metrics import oracle_ls_floor\n\n\n"
                                     "def floor(cell):\n    return oracle_ls_floor(1.0, 2, [cell['a'] * 10])\n")
    floor = Prediction("floor", importlib.import_module("usr_pred").floor, "sigma sqrt(d / (N - d - 1))")
    _write(package / "usr_trial_q.py", TRIAL.format(names='["fedavg"]', factor=1))
    trial = importlib.import_module("usr_trial_q").trial
    code = _sweep(trial, algorithms=[], predictions=[floor]).code()
    assert list(code["predictions"]["floor"]["modules"]) == ["mixreg.metrics"]
    edited = json.loads(json.dumps(code))
    edited["predictions"]["floor"]["modules"]["mixreg.metrics"] = "0" * 16
    assert code_changes(edited, code) == ["prediction 'floor': module mixreg.metrics"]
