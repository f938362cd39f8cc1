"""The source's text: no docstring holds a control character.

A docstring that is not a raw string reads ``:math:`\\theta``` as a tab and ``heta``, and
``\\beta`` as a backspace: the help text and the API reference then show neither the symbol nor
the letters.  Checked on the docstrings as Python reads them (two studies' docstrings had a
``\\theta`` read as a tab and a third a ``\\rho`` read as a carriage return; this test
failed on all three).
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = ("mixreg", "experiments", "paper_checks", "tests")


def _docstrings(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node, clean=False)
            if text:
                yield getattr(node, "name", "module"), node, text


def test_no_docstring_holds_a_control_character():
    found = []
    for folder in SOURCES:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for name, node, text in _docstrings(path):
                bad = sorted({repr(c) for c in text if ord(c) < 32 and c != "\n"})
                if bad:
                    found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 1)} {name}: {', '.join(bad)}")
    assert not found, "docstrings with control characters (make them raw strings):\n" + "\n".join(found)
