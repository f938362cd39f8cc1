"""The mutation script of paper_checks/ stays runnable: every test a mutant names exists, every
mutant's original text is in the file it mutates exactly once, and every mutant names a
theorem-level test of its own family (a file moved or a line rewritten would otherwise break the
slow mutation checks unseen until they run).  The families collected from
``paper_checks/mutants_<family>.py`` are checked here too, and so is the collection itself."""

import ast
import pathlib
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from paper_checks import ifca_mutants  # noqa: E402
from paper_checks.ifca_mutants import FAMILIES, MUTANTS, THEOREM_LEVELS  # noqa: E402


def _tests_in(path):
    """Test names of a file: ``test_x`` and ``TestClass::test_x``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names |= {f"{node.name}::{f.name}" for f in node.body
                      if isinstance(f, ast.FunctionDef) and f.name.startswith("test_")}
    return names


def _assert_exists(node_id, who):
    file, _, name = node_id.partition("::")
    path = ROOT / file
    assert path.is_file(), f"{who}: {file} does not exist"
    assert name.split("[")[0] in _tests_in(path), f"{who}: {file} has no test {name}"


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_every_mutant_names_existing_tests_and_its_target_occurs_once(mutant):
    assert mutant.caught_by, mutant.name
    for node_id in mutant.caught_by:
        _assert_exists(node_id, mutant.name)
    assert pathlib.PurePosixPath(mutant.path).parts[0] in ("mixreg", "experiments"), mutant.path
    count = (ROOT / mutant.path).read_text(encoding="utf-8").count(mutant.old)
    assert count == 1, f"{mutant.name}: its target text occurs {count} times in {mutant.path}, not once"
    assert set(mutant.caught_by) & set(THEOREM_LEVELS[mutant.family]), (
        f"{mutant.name} names no theorem-level test of its family {mutant.family}")


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_has_existing_theorem_level_tests_and_unique_names(family):
    assert FAMILIES[family] and THEOREM_LEVELS[family]
    for node_id in THEOREM_LEVELS[family]:
        _assert_exists(node_id, family)
    for mutant in FAMILIES[family]:
        assert mutant.family == family, mutant.name
    names = [m.name for m in MUTANTS]
    assert len(names) == len(set(names))


def test_the_families_of_paper_checks_are_collected():
    files = sorted(p.name for p in (ROOT / "paper_checks").glob("mutants_*.py"))
    assert set(FAMILIES) == {"ifca", "fedx", "ls"} | {f[len("mutants_"):-len(".py")] for f in files}


def test_the_command_line_collects_the_families_run_from_the_root():
    """``python -m paper_checks.ifca_mutants`` (not on pytest's path) sees the same families."""
    proc = subprocess.run([sys.executable, "-m", "paper_checks.ifca_mutants", "--list"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    listed = [line.split()[:2] for line in proc.stdout.splitlines()]
    assert listed == [[m.family, m.name] for m in MUTANTS]


def _family_file(directory, name, body):
    (directory / f"mutants_{name}.py").write_text(textwrap.dedent(body))


_GOOD = """
    from ifca_mutants import MARK, Mutant

    FAMILY = "{name}"
    THEOREM_LEVEL = ("tests/test_metrics.py::test_a",)
    MUTANTS = (Mutant("{name}-one", "a demo", "x = 1\\n", f"x = 2  {{MARK}}\\n", {caught},
                      path="mixreg/metrics.py", family={family}),)
"""


@pytest.mark.parametrize(
    "caught,family,message",
    [
        ('("tests/test_metrics.py::test_a",)', "FAMILY", None),
        ('("tests/test_metrics.py::test_b",)', "FAMILY", "names no theorem-level test of its family"),
        ('("tests/test_metrics.py::test_a",)', '"ifca"', "must be family=FAMILY"),
    ],
)
def test_a_family_file_is_collected_and_a_malformed_one_refused(tmp_path, monkeypatch, caught, family, message):
    name = f"probe{len(message or '')}"
    _family_file(tmp_path, name, _GOOD.format(name=name, caught=caught, family=family))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "ifca_mutants", ifca_mutants)
    try:
        if message is None:
            families = ifca_mutants.collect_families(tmp_path)
            assert [m.name for m in families[name].mutants] == [f"{name}-one"]
            assert families[name].candidates == families[name].theorem_level == ("tests/test_metrics.py::test_a",)
            assert list(families)[:3] == ["ifca", "fedx", "ls"]
        else:
            with pytest.raises(ValueError, match=message):
                ifca_mutants.collect_families(tmp_path)
    finally:
        sys.modules.pop(f"mutants_{name}", None)


def test_a_family_reusing_a_mutant_name_is_refused(tmp_path, monkeypatch):
    _family_file(tmp_path, "probedup", _GOOD.format(name="probedup", caught='("tests/test_metrics.py::test_a",)',
                                                    family="FAMILY").replace('"probedup-one"', '"true-labels"'))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "ifca_mutants", ifca_mutants)
    try:
        with pytest.raises(ValueError, match="'true-labels' is taken"):
            ifca_mutants.collect_families(tmp_path)
    finally:
        sys.modules.pop("mutants_probedup", None)


def test_a_copy_holds_the_studies_and_imports_a_mutated_experiments_module_from_itself(tmp_path):
    """A mutant of a file under ``experiments/``: the copy has ``experiments/`` and
    ``paper_checks/``, and the sanity check imports the mutated module from the copy (here the
    package's ``__init__``, imported in a blink; a study's module imports the whole library)."""
    path = "experiments/__init__.py"
    text = (ROOT / path).read_text(encoding="utf-8")
    probe = ifca_mutants.Mutant("probe", "a comment appended", text, text, ("x::y",),
                                append=f"\n{ifca_mutants.MARK}\n", path=path, family="probe")
    copy = tmp_path / "copy"
    ifca_mutants._copy_package(ROOT, copy)
    assert (copy / "paper_checks" / "ifca_mutants.py").is_file() and (copy / "experiments" / "__init__.py").is_file()
    ifca_mutants._check_imported_copy(copy, None, path)
    probe.apply(copy)
    ifca_mutants._check_imported_copy(copy, "probe", path)
    with pytest.raises(RuntimeError, match="mutated lines"):
        ifca_mutants._check_imported_copy(copy, None, path)
