"""The architecture, as a test: the import graph of mixreg has no cycle, runs only downwards through
its layers, and never reaches a study; every study is one folder run through its Study object."""

from __future__ import annotations

import ast
import collections
import importlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mixreg"

#: The library's layers, lowest first.  A unit (a top-level module or subpackage of mixreg) imports
#: only units of a lower layer; within a unit, modules may import each other (without a cycle).
LAYERS = (
    ("mixreg", "mixreg.validation", "mixreg._fixed_order", "mixreg._gram_kernels", "mixreg.methods", "mixreg._typing"),
    ("mixreg.kernels", "mixreg.problems", "mixreg.metrics", "mixreg.stats", "mixreg.theory", "mixreg.clustering",
     "mixreg.provenance"),
    ("mixreg.baselines", "mixreg.local_solvers", "mixreg.trajectories", "mixreg.predictions"),
    ("mixreg.algorithms",),
    ("mixreg.montecarlo", "mixreg.plotting"),
    ("mixreg.cli",),
    ("mixreg.study",),
)
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path, *, top_level_only):
    """The modules ``path`` imports (absolute names), at module level only or anywhere in it."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else ast.walk(tree)
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                found.add(target)
                if node.module is None:  # from . import x: x may be a module
                    found.update(f"{target}.{alias.name}" for alias in node.names)
            elif node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _modules():
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _unit(name):
    parts = name.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else name


def test_the_library_never_imports_a_study_a_test_or_a_check():
    for name, path in _modules().items():
        outside = {m for m in _imports(path, top_level_only=False)
                   if m.split(".")[0] in ("experiments", "tests", "paper_checks")}
        assert not outside, f"{name} imports {sorted(outside)}"


def test_every_unit_of_the_library_has_a_layer():
    units = {_unit(name) for name in _modules()}
    assert units <= set(RANK), f"units without a layer: {sorted(units - set(RANK))}"


def test_imports_run_only_downwards_through_the_layers():
    wrong = []
    for name, path in _modules().items():
        unit = _unit(name)
        for target in _imports(path, top_level_only=False):
            other = _unit(target)
            if other in RANK and other != unit and RANK[other] >= RANK[unit]:
                wrong.append(f"{name} -> {target} (layer {RANK[unit]} imports layer {RANK[other]})")
    assert not wrong, "\n".join(sorted(wrong))


def test_the_module_import_graph_has_no_cycle():
    modules = _modules()
    graph = collections.defaultdict(set)
    for name, path in modules.items():
        for target in _imports(path, top_level_only=True):
            while target and target not in modules:  # mixreg.x.name -> the module mixreg.x
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):  # a package's own __init__
                graph[name].add(target)
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(modules):
        if node not in state:
            visit(node)


def test_no_module_is_over_900_lines():
    long = {str(p.relative_to(ROOT)): n for p in (*PACKAGE.rglob("*.py"), *(ROOT / "experiments").rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 900}
    assert not long, long


STUDIES = sorted(path.parent.name for path in (ROOT / "experiments").glob("*/__main__.py"))


def test_there_is_no_trials_module_or_shim_left_in_the_library():
    assert not list(PACKAGE.glob("trials*.py"))
    for shim in ("ifca", "fedx", "moment_descent"):
        assert not (PACKAGE / f"{shim}.py").exists()


@pytest.mark.parametrize("name", STUDIES)
def test_every_study_is_one_folder_around_its_study_object(name):
    from mixreg.study import Study

    module = importlib.import_module(f"experiments.{name}")
    assert isinstance(module.STUDY, Study) and module.STUDY.name == name
    folder = ROOT / "experiments" / name
    assert (folder / "__main__.py").read_text().count("STUDY.main(command_line=True)") == 1


def test_the_package_face_imports_nothing_and_names_only_public_names_of_the_layers():
    """``mixreg/__init__.py`` sits in the lowest layer because it imports no unit at import time
    (PEP 562: its names are imported on first access); the units it names are the library's own,
    and each name it gives is public API of that unit (in the unit's ``__all__``)."""
    path = PACKAGE / "__init__.py"
    assert {m for m in _imports(path, top_level_only=False) if m.startswith("mixreg")} == set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    face = next(ast.literal_eval(node.value) for node in tree.body
                if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["_FACE"])
    assert face, "mixreg/__init__.py keeps its public names in _FACE"
    for name, unit in face.items():
        assert unit in RANK, f"{name} comes from {unit}, which has no layer"
        assert name in importlib.import_module(unit).__all__, f"{name} is not in {unit}.__all__"
