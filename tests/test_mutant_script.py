"""The mutation script of paper_checks/ stays runnable: every test a mutant names exists, and every
mutant's original line is in the file it mutates (a file moved or a line rewritten would otherwise
break the slow mutation checks unseen until they run)."""

import ast
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from paper_checks.ifca_mutants import MUTANTS  # noqa: E402


def _tests_in(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_every_mutant_names_existing_tests_and_an_existing_line(mutant):
    assert mutant.caught_by, mutant.name
    for node_id in mutant.caught_by:
        file, _, name = node_id.partition("::")
        path = ROOT / file
        assert path.is_file(), f"{mutant.name}: {file} does not exist"
        assert name.split("[")[0] in _tests_in(path), f"{mutant.name}: {file} has no test {name}"
    assert mutant.old in (ROOT / mutant.path).read_text(encoding="utf-8"), f"{mutant.name}: its line is not in {mutant.path}"
