"""The README and the documentation pages: the example runs, every relative link resolves, every
study has its page and is in the README's study index, and the README stays short."""

import contextlib
import io
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

STUDIES = ("success_vs_R", "success_vs_mn", "error_floor", "ifca_basin", "ifca_misclustering",
           "ifca_contraction", "two_phase", "two_phase_phase1", "two_phase_nu", "compare")

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _markdown_files():
    return [README, *sorted((ROOT / "docs").glob("*.md")),
            *sorted((ROOT / "experiments").glob("*/README.md")), ROOT / "figures" / "README.md"]


def _links(path):
    """The link targets of a markdown file, outside its code blocks and inline code."""
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


def _section(text, title):
    """The text of the level-2 section ``title`` up to the next level-2 heading."""
    match = re.search(rf"^## {re.escape(title)}[ \t]*\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README.md has no section '## {title}'"
    return match.group(1)


def test_readme_example_runs():
    example = _section(README.read_text(encoding="utf-8"), "A short example")
    blocks = re.findall(r"^```python\n(.*?)^```", example, re.M | re.S)
    assert len(blocks) == 1, "the example section should hold exactly one python block"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md example", "exec"), {"__name__": "readme_example"})
    printed = out.getvalue()
    assert "runs diverged" in printed
    assert "separation" in printed


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    assert path.is_file(), f"{path.relative_to(ROOT)} is missing"
    broken = []
    for target in _links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue                                  # a URL, mailto or an anchor in the same page
        file_part = target.split("#", 1)[0]
        if not (path.parent / file_part).exists():
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)}: broken relative links {broken}"


def test_every_study_has_a_page_in_the_index():
    index = _section(README.read_text(encoding="utf-8"), "Studies")
    linked = set(_links_in(index))
    for name in STUDIES:
        assert (ROOT / "experiments" / name / "README.md").is_file(), f"experiments/{name}/README.md is missing"
        assert f"experiments/{name}/README.md" in linked, f"README.md's study index does not link {name}"


def _links_in(text):
    return LINK.findall(FENCE.sub("", text))


def test_readme_is_short():
    n_lines = len(README.read_text(encoding="utf-8").splitlines())
    assert n_lines <= 200, f"README.md has {n_lines} lines, at most 200 allowed"
