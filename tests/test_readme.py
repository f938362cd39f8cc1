"""The README and the documentation pages: the example runs, every relative link resolves, every
study has its page in ``docs/studies/`` (and none is left in its folder), the README's study index
and the site's studies page link each, and the README stays short."""

import contextlib
import io
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

STUDIES = ("success_vs_R", "success_vs_mn", "error_floor", "ifca_basin", "ifca_misclustering",
           "ifca_contraction", "ifca_corollary1", "ifca_strongly_convex", "two_phase", "two_phase_phase1", "two_phase_nu",
           "compare")

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _markdown_files():
    return [README, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "studies").glob("*.md")),
            ROOT / "figures" / "README.md"]


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
    site_index = ROOT / "docs" / "studies" / "index.md"
    on_site = set(_links_in(site_index.read_text(encoding="utf-8")))
    for name in STUDIES:
        assert (ROOT / "docs" / "studies" / f"{name}.md").is_file(), f"docs/studies/{name}.md is missing"
        assert f"docs/studies/{name}.md" in linked, f"README.md's study index does not link {name}"
        assert f"{name}.md" in on_site, f"docs/studies/index.md does not link {name}"


def test_no_study_page_is_left_in_its_folder():
    stale = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "experiments").glob("*/README.md"))
    assert not stale, f"study pages live in docs/studies/, found stale copies {stale}"


def test_every_study_folder_is_a_study_with_a_page():
    folders = {p.parent.name for p in (ROOT / "experiments").glob("*/__main__.py")}
    assert folders == set(STUDIES), f"studies without a page or pages without a study: {folders ^ set(STUDIES)}"


def _links_in(text):
    return LINK.findall(FENCE.sub("", text))


def test_readme_is_short():
    n_lines = len(README.read_text(encoding="utf-8").splitlines())
    assert n_lines <= 200, f"README.md has {n_lines} lines, at most 200 allowed"


def test_readme_names_the_public_face():
    """Every name ``import mixreg`` gives is in the README's "Where to start" table, and exists."""
    import mixreg

    section = _section(README.read_text(encoding="utf-8"), "Where to start: the public API")
    missing = [name for name in mixreg.__all__ if name != "__version__" and f"`{name}" not in section
               and f"{name}(" not in section and f", {name}" not in section]
    assert not missing, f"README's public API section does not name {missing}"
    for name in mixreg.__all__:
        assert getattr(mixreg, name) is not None
