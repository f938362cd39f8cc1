"""Tests of mixreg.cli: an experiment's Config is its command line; --redraw draws from tables; every
fault of a command ends in one line (failed trials, figures, directories, Ctrl-C, SIGTERM)."""

import argparse
import dataclasses
import importlib
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time
import typing

import matplotlib.image
import numpy as np
import pytest

import _toy_experiment as toy
import _toy_trials as toys
from _toy_trials import HANG, REPO_DIR, subprocess_env
from experiments import success_vs_R, two_phase
from mixreg import cli as _cli
from mixreg.cli import config_flag, parser_from_config
from mixreg.study import param
from mixreg.montecarlo import Sweep, SweepInterrupted, SweepTerminated

EXPERIMENTS = {"success_vs_R": success_vs_R, "two_phase": two_phase}
TINY = {
    "success_vs_R": ["--m", "8", "--k", "2", "--n", "10", "--d", "5", "--sigmas", "0", "0.5", "--rs", "0.3", "1.0",
                     "--trials", "2", "--n-inits", "2", "--n-rounds", "10"],
    "two_phase": ["--Ms", "60", "--M-ref", "60", "--laws", "zipf", "--law-ref", "zipf", "--p-mins", "0.2",
                  "--p-ref", "0.2", "--trials", "2", "--d", "4", "--k", "2", "--n-max", "20", "--size-mean", "4",
                  "--fmd-rounds", "3", "--fx-rounds", "6", "--checkpoint-every", "2", "--ifca-restarts", "1",
                  "--steps", "0.5", "--anchor-points", "30"],
}
QUIET = ["--no-progress", "--jobs", "1"]


def _fields(exp):
    hints = typing.get_type_hints(exp.Config)
    return [(f, hints[f.name]) for f in dataclasses.fields(exp.Config) if f.name != "preset"]


def _one_line_error(capsys):
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# --------------------------------------------------------------------------- flags from a Config


def test_flag_names():
    assert [config_flag(n) for n in ("k", "n_inits", "Ms", "M_ref", "p_mins")] == \
        ["--k", "--n-inits", "--Ms", "--M-ref", "--p-mins"]


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_field_has_exactly_one_flag_named_after_it(name):
    exp = EXPERIMENTS[name]
    parser = exp.STUDY.parser()
    actions = parser._actions  # argparse keeps its arguments there
    fields = {f.name for f, _ in _fields(exp)}
    for field in fields:
        owners = [a for a in actions if a.dest == field]
        flag = config_flag(field)
        booleans = ([flag], [flag, "--no-" + flag[2:]])  # a bool field is --<field> / --no-<field>
        assert len(owners) == 1 and owners[0].option_strings in booleans, field
    engine = {a.dest for a in _cli.add_engine_arguments(argparse.ArgumentParser())._actions}
    named = {a.dest for a in actions if a.dest != argparse.SUPPRESS}  # renamed flags only refuse
    assert named == fields | {"preset", "redraw", "accept_edited", "style"} | engine


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_help_lists_every_field_with_its_help_and_the_preset_default(name, capsys):
    exp = EXPERIMENTS[name]
    with pytest.raises(SystemExit) as exc:
        exp.STUDY.main(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for field, _ in _fields(exp):
        assert config_flag(field.name) in text
        assert " ".join(field.metadata["help"].split()) in text, field.name
    configs = {preset: exp.Config(preset=preset, **values) for preset, values in exp.PRESETS.items()}
    for field, _ in _fields(exp):  # the default preset's actual value, as the user would type it
        shown = {preset: _cli._shown(getattr(config, field.name)) for preset, config in configs.items()}
        if len(set(shown.values())) == 1:
            assert f"(default: {shown['quick']})" in text, field.name
        else:  # every preset's, equal values together, the default's first: (default quick, paper-a: 2; paper-b: 4)
            assert re.search(rf"\(default quick(, [\w-]+)*: {re.escape(shown['quick'])};", text), field.name
            for preset, value in shown.items():
                assert re.search(rf"(\(default |[;,] ){re.escape(preset)}(, [\w-]+)*: {re.escape(value)}[;)]", text), \
                    (field.name, preset)
    assert "the preset's" not in text
    assert f"root seed of the sweep (default: {exp.STUDY.root_seed}, the experiment's)" in text
    assert f"re-running resumes it (default: {pathlib.Path('results', exp.STUDY.name, 'PRESET')})" in text
    assert f"(default: {_cli.default_jobs()} here, the number of cores, at most 8;" in text


def test_help_shows_the_default_preset_value_and_the_others_where_they_differ(capsys):
    """``python -m experiments.success_vs_R --help``, read as a user would."""
    with pytest.raises(SystemExit):
        success_vs_R.STUDY.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--trials N trials per cell (default quick: 16; paper-a, paper-b: 40)" in text
    assert "--n-inits N random initialisations per trial (default: 10)" in text
    assert "--k N clusters (default quick, paper-a: 2; paper-b: 4)" in text  # every preset named
    assert "(default quick, paper-a: 1 0.1 0.01; paper-b: 2 1 0.5)" in text


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_presets_values_are_the_defaults(name):
    exp = EXPERIMENTS[name]
    assert exp.STUDY.parser().parse_args([]).preset == "quick"
    for preset, values in exp.PRESETS.items():
        config = exp.STUDY.config_from_args(exp.STUDY.parser().parse_args(["--preset", preset]))
        assert config == exp.Config(preset=preset, **values)


def _other_value(kind, value, choices):
    """A value of type ``kind`` different from ``value`` (among ``choices`` if any)."""
    if choices:
        return next(c for c in choices if c != value)
    if kind is str:
        return value + "x"
    return value + (1 if kind is int else 0.25)


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_flag_sets_its_field(name):
    exp = EXPERIMENTS[name]
    quick = exp.Config(preset="quick", **exp.PRESETS["quick"])
    parser = exp.STUDY.parser()
    for field, hint in _fields(exp):
        current = getattr(quick, field.name)
        choices = field.metadata.get("choices")
        if hint is bool:  # --<field> / --no-<field>
            flag = config_flag(field.name)
            argv = [flag if not current else "--no-" + flag[2:]]
            assert getattr(parser.parse_args(argv), field.name) is (not current), field.name
            continue
        if typing.get_origin(hint) is tuple:
            new = (_other_value(typing.get_args(hint)[0], current[0], choices),)
        else:
            new = _other_value(hint, current, choices)
        argv = [config_flag(field.name), *map(str, new if isinstance(new, tuple) else (new,))]
        parsed = getattr(parser.parse_args(argv), field.name)
        assert (tuple(parsed) if isinstance(parsed, list) else parsed) == new != current, field.name


@pytest.mark.parametrize(
    "name,argv,changes",
    [
        ("success_vs_R", ["--preset", "paper-a", "--n-inits", "3", "--sigmas", "0.1", "0.2", "--init-scale", "2"],
         dict(n_inits=3, sigmas=(0.1, 0.2), init_scale=2.0)),
        ("two_phase", ["--preset", "paper", "--Ms", "1000", "2000", "--fmd-step-constant", "0.25", "--laws", "zipf"],
         dict(Ms=(1000, 2000), fmd_step_constant=0.25, laws=("zipf",))),
    ],
)
def test_a_flag_overrides_the_preset(name, argv, changes):
    exp = EXPERIMENTS[name]
    preset = argv[1]
    config = exp.STUDY.config_from_args(exp.STUDY.parser().parse_args(argv))
    assert config == dataclasses.replace(exp.Config(preset=preset, **exp.PRESETS[preset]), **changes)


@pytest.mark.parametrize(
    "name,argv,message",
    [
        ("success_vs_R", ["--n-inits", "0"], "n_inits must be an integer >= 1, got 0"),
        ("success_vs_R", ["--sigmas", "0.1", "nan"], "sigmas must be finite and >= 0"),
        ("success_vs_R", ["--k", "two"], "argument --k: invalid int value: 'two'"),
        ("success_vs_R", ["--dtype", "float16"], "argument --dtype: invalid choice"),
        ("success_vs_R", ["--n-init", "2"], "unrecognized arguments: --n-init"),  # no abbreviations
        ("two_phase", ["--p-ref", "0.9"], "p_mins and p_ref must be in (0, 1/k]"),
        ("two_phase", ["--anchor-points", "1"], "anchor_points must be an integer >= 2"),
        ("two_phase", ["--Ms", "100", "x"], "argument --Ms: invalid int value: 'x'"),
    ],
)
def test_bad_values_exit_2_naming_the_field(name, argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exc:
        EXPERIMENTS[name].STUDY.main(argv + ["--dry-run", "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@dataclasses.dataclass(frozen=True)
class Toy:
    preset: str = param("a or b")
    count: int = param("how many")
    scale: float = param("how large", default=1.0)
    names: tuple[str, ...] = param("which ones", default=("x",), choices=("x", "y"))
    loud: bool = param("whether to shout", default=False, renamed_from="--shout")

    def validate(self):
        if self.count < 0:
            raise ValueError(f"count must be >= 0, got {self.count}")
        return self


TOY_PRESETS = {"a": dict(count=1), "b": dict(count=2, loud=True)}


def test_a_config_of_every_flag_type():
    parser = parser_from_config(Toy, TOY_PRESETS, prog="toy", description="a toy")
    assert _cli.config_from_args(Toy, TOY_PRESETS, parser.parse_args([])) == Toy(preset="a", count=1)
    args = parser.parse_args(["--preset", "b", "--no-loud", "--names", "y", "x", "--scale", "3"])
    assert _cli.config_from_args(Toy, TOY_PRESETS, args) == Toy("b", 2, 3.0, ("y", "x"), False)
    for argv in (["--names", "z"], ["--count", "1.5"], ["--shout"]):
        with pytest.raises(SystemExit):
            parser.parse_args(argv)


def test_a_field_that_cannot_be_a_flag_is_a_type_error():
    @dataclasses.dataclass(frozen=True)
    class NoHelp:
        preset: str
        count: int

    @dataclasses.dataclass(frozen=True)
    class ListField:
        preset: str
        values: list = param("values")

    with pytest.raises(TypeError, match="NoHelp.count has no help text"):
        parser_from_config(NoHelp, {"a": {}}, prog="p", description="")
    with pytest.raises(TypeError, match="ListField.values: a flag needs the annotation"):
        parser_from_config(ListField, {"a": {}}, prog="p", description="")


# --------------------------------------------------------------------------- a script's entry points

SCRIPTS = ("compare", "error_floor", "ifca_basin", "ifca_contraction", "ifca_misclustering", "success_vs_R",
           "success_vs_mn", "two_phase", "two_phase_nu", "two_phase_phase1")
PAPER_PRESETS = {"success_vs_R": ("paper-a", "paper-b"), "success_vs_mn": ("paper-c", "paper-d")}


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_study_is_run_through_its_study_object(name, monkeypatch, tmp_path):
    """``python -m experiments.<name>`` is ``STUDY.main(command_line=True)`` (its ``__main__``), and
    ``STUDY`` is read when the command runs, so a test may replace it (its figures directory, say)."""
    exp = importlib.import_module(f"experiments.{name}")
    assert exp.STUDY.name == name and exp.STUDY.command == f"python -m experiments.{name}"
    assert exp.STUDY.parser().prog == exp.STUDY.command
    main_file = pathlib.Path(exp.__file__).with_name("__main__.py")
    assert "STUDY.main(command_line=True)" in main_file.read_text()
    assert exp.STUDY.paper_presets == PAPER_PRESETS.get(name, ("paper",))
    calls = []
    monkeypatch.setattr(exp, "STUDY", dataclasses.replace(exp.STUDY, figures_dir=tmp_path / "figures"))
    monkeypatch.setattr(_cli, "experiment_main", lambda *args, **kwargs: calls.append((args, kwargs)) or 7)
    assert exp.STUDY.main(["--dry-run"]) == 7
    (_, argv), kwargs = calls[0]
    assert argv == ["--dry-run"] and kwargs["name"] == name and kwargs["config_cls"] is exp.Config
    assert kwargs["figures_dir"] == (tmp_path / "figures" if exp.STUDY.paper_presets else None)


# --------------------------------------------------------------------------- --redraw


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A small finished run of each experiment (quick presets never write into figures/)."""
    out = {}
    for name, exp in EXPERIMENTS.items():
        out[name] = tmp_path_factory.mktemp(name)
        assert exp.STUDY.main(TINY[name] + QUIET + ["--out", str(out[name])]) == 0
    return out


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_redraw_reproduces_the_figures_without_running_a_trial(name, runs, monkeypatch, capsys):
    out = runs[name]
    first = {png.name: matplotlib.image.imread(png) for png in out.glob("*.png")}
    assert first  # every figure the run drew is redrawn below
    for figure in [*out.glob("*.png"), *out.glob("*.pdf")]:
        figure.unlink()
    trials_mtime = (out / "trials.csv").stat().st_mtime_ns

    def no_sweep(*args, **kwargs):
        raise AssertionError("--redraw ran the sweep")

    monkeypatch.setattr(_cli, "run_sweep", no_sweep)
    assert EXPERIMENTS[name].STUDY.main(["--redraw", str(out)]) == 0
    assert (out / "trials.csv").stat().st_mtime_ns == trials_mtime
    for png, pixels in first.items():
        assert np.array_equal(matplotlib.image.imread(out / png), pixels), png
        assert (out / png).with_suffix(".pdf").stat().st_size > 0
    captions = len(list(out.glob("*.caption.txt")))  # a figure's caption file, when it has one
    assert capsys.readouterr().out.count("wrote") == 2 * len(first) + captions


def _copy_run(runs, tmp_path, name="success_vs_R"):
    copy = tmp_path / "copy"
    shutil.copytree(runs[name], copy)
    return copy


def _set_status(runs, tmp_path):
    copy = _copy_run(runs, tmp_path)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["status"] = "interrupted"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


def _drop_theory(runs, tmp_path):
    copy = _copy_run(runs, tmp_path)
    (copy / "theory.csv").unlink()
    return copy


def _bad_manifest(runs, tmp_path):
    copy = _copy_run(runs, tmp_path)
    (copy / "manifest.json").write_text("{not json")
    return copy


def _edit_manifest(copy, change):
    manifest = json.loads((copy / "manifest.json").read_text())
    change(manifest)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


def _theory_never_written(runs, tmp_path):
    """As a run whose summary failed leaves it: no theory.csv, and no checksum of it."""
    copy = _drop_theory(runs, tmp_path)
    return _edit_manifest(copy, lambda manifest: manifest["checksums"].pop("theory.csv"))


def _theory_gone_from_an_earlier_version(runs, tmp_path):
    copy = _drop_theory(runs, tmp_path)
    return _edit_manifest(copy, lambda manifest: manifest.pop("checksums"))


def _edit_rates(runs, tmp_path):
    copy = _copy_run(runs, tmp_path)
    lines = (copy / "rates.csv").read_text().splitlines(keepends=True)
    fields = lines[1].split(",")
    fields[3] = "0.5" if fields[3] != "0.5" else "0.25"  # official_success_rate, by hand
    (copy / "rates.csv").write_text("".join([lines[0], ",".join(fields), *lines[2:]]))
    return copy


def _edit_config(runs, tmp_path):
    return _edit_manifest(_copy_run(runs, tmp_path), lambda manifest: manifest["sweep"]["config"].update(trials=9))


@pytest.mark.parametrize(
    "directory,extra,message",
    [
        (lambda runs, tmp: tmp, [], "is not a results directory (it has no manifest.json)"),
        (lambda runs, tmp: tmp / "absent", [], "is not a directory"),
        (lambda runs, tmp: runs["two_phase"], [], "holds results of 'two_phase', not of 'success_vs_R'"),
        (_bad_manifest, [], "is not the manifest of a Monte Carlo sweep"),
        (_set_status, [], "holds an unfinished run (status 'interrupted')"),
        (_drop_theory, [], "has no theory.csv (deleted or moved: its run wrote it"),
        (_theory_never_written, [], "has no theory.csv (never written: its run did not make its tables)"),
        (_theory_gone_from_an_earlier_version, [], "has no theory.csv (deleted, or never written: manifest.json "
                                                   "records no tables)"),
        (_edit_rates, [], "rates.csv was changed after the run wrote it"),
        (_edit_config, [], "the config in manifest.json (sweep.config) was changed after the run"),
        (lambda runs, tmp: runs["success_vs_R"], ["--k", "3", "--jobs", "2"], "drop --k, --jobs"),
    ],
)
def test_redraw_refuses_anything_but_a_finished_results_directory_in_one_line(
        directory, extra, message, runs, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        success_vs_R.STUDY.main(["--redraw", str(directory(runs, tmp_path)), *extra])
    assert exc.value.code == 2
    line = _one_line_error(capsys)
    assert "error:" in line and message in line


def test_redraw_accepts_an_edited_table_only_by_name(runs, tmp_path, capsys):
    """``--accept-edited FILE`` draws from a table edited on purpose, saying so in one line; it is
    refused outside ``--redraw`` (a run rewrites its tables)."""
    copy = _edit_rates(runs, tmp_path)
    assert success_vs_R.STUDY.main(["--redraw", str(copy), "--accept-edited", "rates.csv"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "warning:" in err[0] and "rates.csv was changed after the run wrote it" in err[0]
    with pytest.raises(SystemExit) as exc:
        success_vs_R.STUDY.main(["--redraw", str(copy), "--accept-edited", "theory.csv"])
    assert exc.value.code == 2 and "rates.csv was changed" in _one_line_error(capsys)
    with pytest.raises(SystemExit) as exc:
        success_vs_R.STUDY.main(TINY["success_vs_R"] + QUIET + ["--out", str(copy), "--accept-edited", "rates.csv"])
    assert exc.value.code == 2 and "--accept-edited applies to --redraw only" in _one_line_error(capsys)


def test_redraw_of_a_directory_without_checksums_says_it_is_unverified(runs, tmp_path, capsys):
    copy = _edit_manifest(_copy_run(runs, tmp_path), lambda manifest: manifest.pop("checksums"))
    assert success_vs_R.STUDY.main(["--redraw", str(copy)]) == 0
    line = _one_line_error(capsys)
    assert "note:" in line and "records no checksum of trials.csv, rates.csv, theory.csv" in line


def test_paper_preset_figures_are_copied_only_for_the_unchanged_preset(monkeypatch, tmp_path):
    """A complete run of a paper preset (here shrunk) writes and redraws figures/; a changed one does not."""
    tiny = dict(k=2, m=8, n=10, d=5, sigmas=(0.0, 0.5), rs=(0.3, 1.0), trials=2, n_inits=2, step_sizes=(1.0, 0.1),
                n_rounds=10, dtype="float64")
    presets = {**success_vs_R.PRESETS, "paper-a": tiny}
    monkeypatch.setattr(success_vs_R, "STUDY", dataclasses.replace(success_vs_R.STUDY, presets=presets,
                                                                   figures_dir=tmp_path / "figures"))
    figures = tmp_path / "figures"
    copies = [figures / "success_vs_R_paper-a.png", figures / "success_vs_R_paper-a.pdf"]
    out = tmp_path / "paper-a"
    assert success_vs_R.STUDY.main(["--preset", "paper-a", "--out", str(out)] + QUIET) == 0
    assert (out / "success_vs_R.png").read_bytes() == copies[0].read_bytes() and copies[1].is_file()
    shutil.rmtree(figures)
    assert success_vs_R.STUDY.main(["--redraw", str(out)]) == 0
    assert all(path.is_file() for path in copies)
    shutil.rmtree(figures)
    for changed in (["--trials", "1"], ["--seed", "5"]):
        assert success_vs_R.STUDY.main(["--preset", "paper-a", "--out", str(tmp_path / "changed"), "--overwrite",
                                  *changed] + QUIET) == 0
        assert success_vs_R.STUDY.main(["--redraw", str(tmp_path / "changed")]) == 0
        assert not figures.exists()


# --------------------------------------------------------------------------- faults end in one line

@dataclasses.dataclass(frozen=True)
class Broken:
    preset: str = param("the preset")
    trials: int = param("trials per cell")

    def validate(self):
        return self


def _broken_main(argv, *, summarise, draw=None, trial_fn=toys.bad_output_trial):
    def build_sweep(config, root_seed=1):
        return Sweep(name="broken", trial_fn=trial_fn, cells=toys.CELLS, n_trials=config.trials,
                     root_seed=root_seed, config=dataclasses.asdict(config))

    def no_figures(config, tables, outdir):
        return []

    parser = parser_from_config(Broken, {"quick": dict(trials=3)}, prog="broken", description="")
    return _cli.experiment_main(parser, argv, name="broken", config_cls=Broken, presets={"quick": dict(trials=3)},
                                build_sweep=build_sweep, summarise=summarise, draw=draw or no_figures,
                                tables=("rates",))


def _empty_min(config, records):
    return {"rates": [{"best": min(r["dist"] for r in records if not r["error"])}]}


def test_a_sweep_whose_trials_failed_is_written_listed_and_exits_1(tmp_path, capsys):
    assert _broken_main(["--out", str(tmp_path / "o")] + QUIET, summarise=_empty_min) == 1
    out, err = capsys.readouterr()
    assert f"wrote {tmp_path / 'o' / 'trials.csv'}" in out and "manifest.json" in out
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    assert lines[0] == "broken: figures not drawn: ValueError: min() arg is an empty sequence"
    assert lines[1].startswith("broken: 18 of 18 trials failed (tracebacks in ")
    assert len(lines) == 2 + 10 + 1 and lines[-1] == "  ... and 8 more"
    assert lines[2] == ("  cell 0 (R=0.5, noise=0.1) trial 0: TypeError: trial_fn returned vector=array([0., 0., 0.]) "
                        "(ndarray); values must be int, float, bool or str scalars")


def test_a_figure_that_cannot_be_drawn_is_one_line(tmp_path, capsys):
    def refuse_log_scale(config, tables, outdir):
        raise ValueError("Data has no positive values, and therefore cannot be log-scaled.\nsecond line")

    def fine(config, records):
        return {"rates": [{"n": len(records)}]}

    argv = ["--out", str(tmp_path / "o")] + QUIET
    assert _broken_main(argv, summarise=fine, draw=refuse_log_scale, trial_fn=toys.least_squares_trial) == 1
    out, err = capsys.readouterr()
    assert err == "broken: figures not drawn: ValueError: Data has no positive values, and therefore cannot be log-scaled.\n"
    assert "rates.csv" in out
    with pytest.raises(ValueError, match="log-scaled"):  # --debug: the traceback
        _broken_main(argv + ["--debug"], summarise=fine, draw=refuse_log_scale, trial_fn=toys.least_squares_trial)


def test_debug_shows_the_traceback_of_a_fault(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    argv = TINY["success_vs_R"] + QUIET + ["--out", str(blocker / "out")]
    assert success_vs_R.STUDY.main(argv) == 1
    assert "cannot create the results directory" in _one_line_error(capsys)
    with pytest.raises(OSError, match="cannot create the results directory"):
        success_vs_R.STUDY.main(argv + ["--debug"])


# --------------------------------------------------------------------------- stopping a run: Ctrl-C and SIGTERM

PROG = "python -m _toy_experiment"
#: Seconds for a stopped run's processes to be gone: a deadlock guard, under loky's idle timeout (300 s)
#: so that a worker left behind, which lives that long, fails the test.
GONE = 120.0


def _toy_argv(out, *engine):
    return ["--out", str(out), "--no-progress", *(engine or ("--jobs", "1"))]


def _toy_command(argv):
    """The toy experiment as its command line (``python -m``) runs it, in this process."""
    return toy.STUDY.main(argv, command_line=True)


def _runs(out):
    return [(run["status"], run["trials_loaded"]) for run in json.loads((out / "manifest.json").read_text())["runs"]]


@pytest.mark.parametrize("stop,stopped", [("ctrl-c", SweepInterrupted), ("sigterm", SweepTerminated)])
def test_called_in_process_a_stopped_run_raises_after_writing_its_manifest(stop, stopped, tmp_path, monkeypatch,
                                                                           capsys):
    """main() called in-process (pytest) re-raises Ctrl-C, so that it stops the caller, and SIGTERM as a
    SweepTerminated; the one line and the exit status belong to the command line."""
    monkeypatch.setenv(toys.STOP_ENV, stop)
    monkeypatch.setenv(toys.STOP_AT_ENV, "2")
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt) as info:
        toy.STUDY.main(_toy_argv(out))
    assert type(info.value) is stopped and (info.value.kept, info.value.total) == (2, 4)
    assert _runs(out) == [("interrupted", 0)]
    assert capsys.readouterr().err == ""
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the run's handler is gone
    monkeypatch.delenv(toys.STOP_ENV)
    assert toy.STUDY.main(_toy_argv(out)) == 0
    assert _runs(out) == [("interrupted", 0), ("complete", 2)]


def _loky_workers():
    """This process's live loky workers (pids), from /proc."""
    pids = []
    for entry in pathlib.Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):  # not a process, or it ended meanwhile
            continue
        if int(stat[1]) == os.getpid() and stat[0] != "Z" and b"popen_loky_posix" in command:
            pids.append(int(entry.name))
    return pids


@pytest.mark.skipif(signal.getsignal(signal.SIGINT) is not signal.default_int_handler,
                    reason="this test run does not turn SIGINT into KeyboardInterrupt")
def test_ctrl_c_during_an_in_process_run_reaches_the_caller_and_stops_the_workers(tmp_path, monkeypatch):
    """Ctrl-C while pytest runs an experiment's main() on loky workers: main() raises, so pytest stops,
    and no worker is left (trial 0 returns, the later ones block until killed)."""
    import threading

    from joblib.externals.loky import get_reusable_executor

    # Workers that an earlier test left in joblib's reusable pool kept the environment they started
    # with, so they would not see the variables set here and the trials would not block.
    get_reusable_executor().shutdown(wait=True)
    monkeypatch.setenv(toys.STOP_ENV, "block")
    monkeypatch.setenv(toys.STOP_AT_ENV, "1")
    out = tmp_path / "out"
    returned = threading.Event()  # main() is over: no Ctrl-C may then reach the rest of the test run

    def ctrl_c_after_the_first_chunk():
        deadline = time.monotonic() + HANG
        while not list(out.glob("chunks/cell*.json")) and not returned.is_set() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not returned.is_set():
            os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C, to this process

    presser = threading.Thread(target=ctrl_c_after_the_first_chunk, daemon=True)
    presser.start()
    try:
        with pytest.raises(SweepInterrupted) as info:
            toy.STUDY.main(_toy_argv(out, "--jobs", "2"))
    finally:
        returned.set()
        presser.join()
    assert (info.value.kept, info.value.total) == (1, 4)
    assert _runs(out) == [("interrupted", 0)]
    deadline = time.monotonic() + GONE  # a deadlock guard: SIGKILLed workers go at once
    while _loky_workers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _loky_workers() == []


@pytest.mark.parametrize("stop,status,word", [("ctrl-c", 130, "interrupted"), ("sigterm", 143, "terminated")])
def test_on_the_command_line_a_stopped_run_is_one_line_and_its_exit_status(stop, status, word, tmp_path,
                                                                           monkeypatch, capsys):
    monkeypatch.setenv(toys.STOP_ENV, stop)
    monkeypatch.setenv(toys.STOP_AT_ENV, "2")
    out = tmp_path / "out"
    assert _toy_command(_toy_argv(out)) == status
    assert capsys.readouterr().err == f"{PROG}: {word}: 2 of 4 trials kept; rerun the same command to resume\n"
    assert _runs(out) == [("interrupted", 0)]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    monkeypatch.delenv(toys.STOP_ENV)
    assert _toy_command(_toy_argv(out)) == 0
    assert _runs(out) == [("interrupted", 0), ("complete", 2)]


def test_sigterm_before_the_run_starts_is_one_line_too(tmp_path, monkeypatch, capsys):
    def cells(config):  # the grid is made before the run starts
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL, "SIGTERM would kill the test run"
        signal.raise_signal(signal.SIGTERM)  # the command's handler turns it into an exception

    monkeypatch.setattr(toy, "STUDY", dataclasses.replace(toy.STUDY, cells=cells))
    assert _toy_command(_toy_argv(tmp_path / "out")) == 143
    assert capsys.readouterr().err == f"{PROG}: terminated\n"


def _group_empties(pgid, timeout=GONE):
    """Whether every process of group ``pgid`` has exited (a deadlock guard of ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


STOPS = [  # (signal, to the whole process group or the run's process alone, backend)
    pytest.param(signal.SIGINT, "group", ["--jobs", "2"], id="ctrl-c"),  # in a terminal
    pytest.param(signal.SIGINT, "process", ["--jobs", "2"], id="kill-INT"),
    pytest.param(signal.SIGTERM, "group", ["--jobs", "2"], id="sigterm-group"),  # a batch scheduler
    pytest.param(signal.SIGTERM, "process", ["--jobs", "2"], id="kill"),
    # the Dask local cluster has a session of its own: a signal to the group reaches the run alone
    pytest.param(signal.SIGINT, "group", ["--dask-local", "2"], marks=pytest.mark.dask, id="ctrl-c-dask"),
    pytest.param(signal.SIGTERM, "group", ["--dask-local", "2"], marks=pytest.mark.dask, id="sigterm-dask"),
]


@pytest.mark.parametrize("signum,target,engine", STOPS)
def test_a_signal_to_a_run_is_one_line_leaves_no_process_and_the_rerun_resumes(signum, target, engine, tmp_path):
    """Ctrl-C (exit 130) or SIGTERM (exit 143) to a running command: one line, whatever the backend's workers
    do; the manifest says interrupted; no worker or resource tracker outlives the run; the rerun resumes.

    Trial 0 returns at once and every later trial blocks until its process is killed, so the run can only end
    by the signal and keeps exactly one trial, however fast or busy the machine."""
    out = tmp_path / "out"
    env = dict(subprocess_env(), **{toys.STOP_ENV: "block", toys.STOP_AT_ENV: "1"})
    # its own group with Ctrl-C's default action, as a terminal's foreground job (a test run that
    # was itself started in the background inherits SIGINT ignored, which exec keeps)
    proc = subprocess.Popen([sys.executable, "-m", "_toy_experiment", *_toy_argv(out, *engine)], cwd=REPO_DIR,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + HANG
        while time.monotonic() < deadline and proc.poll() is None and not list(out.glob("chunks/cell*.json")):
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()
        if target == "group":
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
        stdout, stderr = proc.communicate(timeout=GONE)  # its workers hold the pipes too
        # loky's workers and resource trackers share the run's group and ignore both signals: the run must
        # stop them (the Dask local cluster has a session of its own, which the run closes; not checked here)
        assert _group_empties(proc.pid), "a worker or resource tracker outlived the stopped run"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left, the run or its workers
        except ProcessLookupError:
            pass
        if proc.poll() is None:
            proc.communicate()
    word, status = ("interrupted", 130) if signum == signal.SIGINT else ("terminated", 143)
    assert (proc.returncode, stderr.decode()) == \
        (status, f"{PROG}: {word}: 1 of 4 trials kept; rerun the same command to resume\n")
    assert _runs(out) == [("interrupted", 0)]
    assert toy.STUDY.main(_toy_argv(out)) == 0  # the same command, the trials no longer blocking
    assert _runs(out) == [("interrupted", 0), ("complete", 1)]
