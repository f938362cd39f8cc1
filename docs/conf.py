"""Sphinx configuration of the mixreg documentation site.

Build from the repository root, warnings as errors (as CI does):

    python -m pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

then open ``docs/_build/html/index.html``.  Neither the build nor the site needs a network:
intersphinx is off, MathJax is copied into the site (sphinx-mathjax-offline) instead of loaded from
a CDN, and the gallery's examples draw the committed figures from ``figures/data/`` without
recomputing.
"""

import dataclasses
import importlib
import inspect
import os
import pathlib
import pkgutil
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))          # mixreg and experiments from the checkout, installed or not

os.environ.setdefault("MPLBACKEND", "Agg")

import mixreg  # noqa: E402  (after the path)
from numpydoc.docscrape import NumpyDocString  # noqa: E402

project = "mixreg"
author = "the mixreg authors"
copyright = "the mixreg authors, BSD-3-Clause"
version = release = mixreg.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",       # MathJax 3 copied into _static/ (no CDN): the maths renders offline
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.codeobj.json", "examples/README.txt"]
templates_path = ["_templates"]
# Every cross-reference must resolve (warnings are errors).  Only names of other projects are let
# through: their inventories (objects.inv) come from the network through intersphinx, and the build
# has none (CI runs offline), so ``numpy.random.Generator`` or ``functools.wraps`` cannot resolve.
# Every ``mixreg`` name must resolve: none is ignored here.
nitpicky = True
_EXTERNAL = r"(numpy|scipy|matplotlib|pandas|xarray|dask|distributed|joblib|numba|tqdm" \
            r"|builtins|typing|collections|functools|itertools|os|pathlib|platform|time|json|argparse)"
nitpick_ignore_regex = [(r"py:.*", _EXTERNAL + r"(\..+)?")]

# MyST: the markdown pages are read as they are on GitHub; headings get anchors (GitHub's slugs)
# down to level 4, so the links "page.md#a-heading" written for GitHub resolve here too.
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath"]

# API reference: one page per public module, from its __all__ (templates in _templates/).
autosummary_generate = True
autosummary_ignore_module_all = False
autosummary_imported_members = True
autodoc_typehints = "none"              # the numpydoc Parameters sections carry the types

numpydoc_show_class_members = False     # a class's methods are listed by the class template instead
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# No network in the build: no intersphinx inventories to fetch.
intersphinx_mapping = {}

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "reference_url": {},                # no links to other sites' docs (no network)
    "backreferences_dir": None,
    "within_subsection_order": "FileNameSortKey",
    "remove_config_comments": True,
    "show_memory": False,
    "plot_gallery": "True",
    "matplotlib_animations": False,
}

html_theme = "pydata_sphinx_theme"
html_title = f"mixreg {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 5,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
# The theme reads its light/dark mode from the browser's storage, or from this default on a first
# visit: without it the theme logs "Got invalid theme mode" as a console error on every first visit.
html_context = {"default_mode": "auto"}
html_static_path = ["_static"]
html_css_files = ["mixreg.css"]
# No left sidebar on the pages without sub-pages (it would be empty).
html_sidebars = {page: [] for page in ("index", "getting_started", "tutorial", "studies", "decisions", "engine",
                                       "benchmark", "tests", "claims", "figures")}
html_show_sourcelink = False


def _drop_builtin_docstrings(app, what, name, obj, options, lines):
    """A module constant without a ``#:`` comment would show the docstring of its type ("Built-in
    immutable sequence.", "str(object='') -> str"): show nothing rather than that."""
    inherited = inspect.getdoc(type(obj)) or ""
    if what in ("data", "attribute") and inherited and " ".join(lines).split()[:6] == inherited.split()[:6]:
        lines.clear()


def _undocumented_attributes(cls):
    """``(name, text)`` of each public attribute of ``cls`` that has no docstring of its own: the
    fields of a dataclass and the plain attributes its numpydoc ``Attributes`` section describes;
    the text is that section's (or, for a field, the ``Parameters`` section's) type and description."""
    sections = NumpyDocString(inspect.getdoc(cls) or "")
    described = {}
    for section in ("Attributes", "Parameters"):
        for entry in sections[section]:
            emphasis = "" if "`" in entry.type else "*"          # no inline markup inside emphasis
            kind = [emphasis + entry.type.replace("*", r"\*") + emphasis, ""] if entry.type else []
            text = "\n".join(kind + entry.desc)
            for name in entry.name.split(","):
                described.setdefault(name.strip(), text)
    names = [field.name for field in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) else []
    for entry in sections["Attributes"]:
        names += [name.strip() for name in entry.name.split(",") if name.strip() not in names]
    return [(name, described.get(name, "")) for name in names
            if name.isidentifier() and not name.startswith("_") and not _has_own_docs(cls, name)]


def _has_own_docs(cls, name):
    """Whether autodoc documents ``cls.name`` itself (a method or property, from its docstring)."""
    member = getattr(cls, name, None)
    return callable(member) or inspect.isdatadescriptor(member)


def _attribute_table():
    """``{"module.Class": [(name, description), ...]}`` over the public classes of every public
    mixreg module, for the class template (``docs/_templates/class.rst``): autodoc lists an
    attribute without a docstring bare or not at all, so the template declares each one with its
    text from the class docstring, and ``:attr:`Class.field``` resolves."""
    table = {}
    for info in pkgutil.walk_packages(mixreg.__path__, "mixreg."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if inspect.isclass(obj):
                table[f"{info.name}.{name}"] = _undocumented_attributes(obj)
    return table


autosummary_context = {"undocumented_attributes": _attribute_table()}


def _drop_declared_attributes_section(app, what, name, obj, options, lines):
    """The class template declares every attribute of a class's ``Attributes`` section with its
    type and description (:func:`_undocumented_attributes`), or autodoc documents it (a property):
    the section itself would say it all a second time, so it goes."""
    if what != "class" or not inspect.isclass(obj):
        return
    declared = {attr for attr, _ in _undocumented_attributes(obj)}
    for start in range(len(lines) - 1):
        if lines[start].strip() == "Attributes" and set(lines[start + 1].strip()) == {"-"}:
            break
    else:
        return
    end = next((i for i in range(start + 2, len(lines) - 1)
                if lines[i].strip() and set(lines[i + 1].strip()) == {"-"} and not lines[i].startswith(" ")),
               len(lines))
    names = {part.strip() for line in lines[start + 2:end] if line.strip() and not line.startswith(" ")
             for part in line.split(":")[0].split(",")}
    if all(attr in declared or _has_own_docs(obj, attr) for attr in names):
        del lines[start:end]


def setup(app):
    app.connect("autodoc-process-docstring", _drop_builtin_docstrings, priority=100)   # before numpydoc's
    app.connect("autodoc-process-docstring", _drop_declared_attributes_section, priority=100)
