"""What a user installs: the wheel holds ``mixreg`` only (with its licence, citation file and
``py.typed``), ``import mixreg`` is fast and gives the public face lazily, and the citation file,
changelog and metadata agree on the version."""

import ast
import importlib
import importlib.util
import json
import pathlib
import re
import shutil
import subprocess
import sys
import time
import zipfile

import pytest

import mixreg

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "numba", "scipy", "matplotlib", "joblib", "pandas", "xarray", "dask")


def _setuptools_builds_pep639():
    """True when the running environment's setuptools reads ``license-files`` (77 or later), so
    the wheel can be built without an isolated build environment (no download)."""
    if importlib.util.find_spec("setuptools") is None:
        return False
    from importlib.metadata import version
    return int(version("setuptools").split(".")[0]) >= 77


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel ``pip wheel .`` builds, from a copy of the checkout (an in-tree build would
    leave build/ and *.egg-info behind)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", "LICENSE", "CITATION.cff"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "mixreg", src / "mixreg", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--quiet", "-w", str(out)]
    if _setuptools_builds_pep639():
        command.append("--no-build-isolation")
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    print(f"pip wheel: {time.perf_counter() - started:.1f} s ({' '.join(command[3:])})")
    (path,) = out.glob("mixreg-*.whl")
    return path


def test_the_wheel_installs_mixreg_only(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert top == {"mixreg", f"mixreg-{mixreg.__version__}.dist-info"}, top
    assert not any(name.startswith("experiments") for name in names)
    assert "mixreg/py.typed" in names and "mixreg/__init__.pyi" in names
    assert "mixreg/montecarlo/__init__.py" in names and "mixreg/plotting/__init__.py" in names


def test_the_wheel_carries_licence_citation_and_metadata(wheel):
    archive = zipfile.ZipFile(wheel)
    info = f"mixreg-{mixreg.__version__}.dist-info"
    names = set(archive.namelist())
    assert f"{info}/licenses/LICENSE" in names and f"{info}/licenses/CITATION.cff" in names
    assert archive.read(f"{info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
    metadata = archive.read(f"{info}/METADATA").decode()
    assert "License-Expression: BSD-3-Clause" in metadata
    assert "Author: The mixreg developers" in metadata
    assert "Project-URL" not in metadata  # no public address yet, and none invented
    # the test extra leaves Dask out; the dask extra brings it
    assert not re.search(r"^Requires-Dist: dask.*extra == \"test\"", metadata, re.M)
    assert re.search(r"^Requires-Dist: dask\[distributed\].*extra == \"dask\"", metadata, re.M)
    for extra in ("test", "dask", "frames", "docs", "typing"):
        assert f"Provides-Extra: {extra}" in metadata


def test_licence_is_the_declared_bsd_3_clause():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "Copyright (c) 2026, the mixreg developers" in text
    assert "Neither the name of the copyright holder" in text


IMPORT_ALONE = """
import json, sys, time
started = time.perf_counter()
import mixreg
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "modules": sorted(sys.modules)}))
"""


def test_import_mixreg_is_fast_and_loads_no_heavy_module():
    done = subprocess.run([sys.executable, "-c", IMPORT_ALONE], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, check=True)
    report = json.loads(done.stdout)
    loaded = {name.split(".")[0] for name in report["modules"]}
    assert not loaded & set(HEAVY), loaded & set(HEAVY)
    assert [name for name in report["modules"] if name.startswith("mixreg.")] == []
    assert report["seconds"] < 0.5, report["seconds"]  # about 5 ms alone; generous on a busy machine


def test_the_public_face_is_the_subpackages_objects():
    for name in mixreg.__all__:
        if name == "__version__":
            continue
        module = importlib.import_module(mixreg._FACE[name])
        assert getattr(mixreg, name) is getattr(module, name), name
    assert set(mixreg.__all__) <= set(dir(mixreg))
    assert {"Problem", "make_problem", "run_sweep", "read_results", "use_style", "check_algorithm"} <= set(
        mixreg.__all__)
    assert mixreg.theory is importlib.import_module("mixreg.theory")


def test_the_stub_names_the_face_for_type_checkers():
    """``mixreg/__init__.pyi`` (what mypy and editors read) re-exports exactly the lazy names, each
    from the module the lazy ``__getattr__`` imports it from."""
    tree = ast.parse((ROOT / "mixreg" / "__init__.pyi").read_text())
    stub = {alias.asname: node.module for node in tree.body if isinstance(node, ast.ImportFrom)
            for alias in node.names if alias.asname}
    assert stub == mixreg._FACE


def test_an_unknown_name_raises_as_python_does():
    with pytest.raises(AttributeError, match=r"^module 'mixreg' has no attribute 'Problme'$"):
        mixreg.Problme  # noqa: B018
    assert not hasattr(mixreg, "experiments")


def test_star_import_gives_the_face():
    namespace = {}
    exec("from mixreg import *", namespace)
    assert {"ProblemSpec", "Sweep", "Study", "Prediction"} <= set(namespace)


def test_citation_file_is_valid_cff():
    yaml = pytest.importorskip("yaml", reason="PyYAML reads CITATION.cff (installed with the docs extra)")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    required = {"cff-version", "message", "title", "authors"}
    assert required <= set(cff), required - set(cff)
    assert cff["cff-version"] == "1.2.0"
    assert cff["type"] == "software"
    assert str(cff["version"]) == mixreg.__version__
    assert cff["license"] == "BSD-3-Clause"
    assert "repository-code" not in cff and "url" not in cff  # no public address yet, and none invented
    assert isinstance(cff["abstract"], str) and len(cff["abstract"]) > 100
    (author,) = cff["authors"]
    assert author == {"name": "The mixreg developers"}  # an entity: a name, no given/family names


def test_version_agrees_across_pyproject_citation_and_changelog():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{mixreg.__version__}"' in pyproject
    assert re.search(rf"^version: {re.escape(mixreg.__version__)}$", (ROOT / "CITATION.cff").read_text(), re.M)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(r"^## Unreleased$", changelog, re.M)
    assert re.search(rf"^## {re.escape(mixreg.__version__)}$", changelog, re.M)
