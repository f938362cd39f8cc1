"""Sphinx configuration of the mixreg documentation site.

Build from the repository root, warnings as errors (as CI does):

    python -m pip install -e ".[docs]"
    python -m sphinx -W --keep-going -b html docs docs/_build/html

then open ``docs/_build/html/index.html``.  The build needs no network: intersphinx is off, and
the gallery's examples draw the committed figures from ``figures/data/`` without recomputing.
"""

import inspect
import os
import pathlib
import sys

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))          # mixreg and experiments from the checkout, installed or not

os.environ.setdefault("MPLBACKEND", "Agg")

import mixreg  # noqa: E402  (after the path)

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
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",
                    "auto_examples/*.md5", "auto_examples/*.codeobj.json", "examples/README.txt"]
templates_path = ["_templates"]
nitpicky = False

# MyST: the markdown pages are read as they are on GitHub; headings get anchors (GitHub's slugs)
# down to level 4, so the links "page.md#a-heading" written for GitHub resolve here too.
myst_heading_anchors = 4
myst_enable_extensions = ["dollarmath"]

# API reference: one page per public module, from its __all__ (templates in _templates/).
autosummary_generate = True
autosummary_ignore_module_all = False
autosummary_imported_members = True
autodoc_default_options = {"members": False}
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


def setup(app):
    app.connect("autodoc-process-docstring", _drop_builtin_docstrings, priority=100)   # before numpydoc's
