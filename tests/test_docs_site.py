"""The documentation site: ``docs/`` builds with warnings as errors (as CI builds it), the pages a
user opens first are there with their figures, the built index page opens in headless Chromium
without a console error, and a page of maths typesets offline (MathJax served from the site).

The build executes every gallery example, changed or not: sphinx-gallery skips an example whose
source is unchanged since the last build in the checkout (its MD5 in ``docs/auto_examples/``), so
an example broken by a change elsewhere (the library, the committed data) would pass unseen;
``-D sphinx_gallery_conf.run_stale_examples=1`` runs them all, and a build of a minimal site shows
that a broken example then fails the build.

The build is skipped where the ``docs`` extra is not installed, and the browser check where
Chromium is not (Debian's package: ``apt-get install chromium``). The browser is driven through
the DevTools protocol on a pipe (``--remote-debugging-pipe``), so no port is opened and nothing
but the standard library is needed; the check is shown to catch a page with a console error, an
uncaught exception and a missing script.
"""

from __future__ import annotations

import fcntl
import json
import os
import pathlib
import queue
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
DOCS_EXTRA = ("sphinx", "myst_parser", "numpydoc", "pydata_sphinx_theme", "sphinx_gallery")
# sphinx-build, warnings as errors, every gallery example executed (not only those changed since the last build)
SPHINX = (sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
          "-D", "sphinx_gallery_conf.run_stale_examples=1")
BUILD_TIMEOUT = 900          # seconds: a deadlock guard, not a speed limit
BROWSER_TIMEOUT = 60
STUDIES = ("success_vs_R", "success_vs_mn", "error_floor", "ifca_basin", "ifca_misclustering",
           "ifca_contraction", "ifca_corollary1", "ifca_strongly_convex", "two_phase", "two_phase_phase1", "two_phase_nu",
           "compare")


def _chromium():
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the site once for this module: ``python -m sphinx -W --keep-going -b html docs OUT``, every
    gallery example executed."""
    for module in DOCS_EXTRA:
        pytest.importorskip(module, reason=f"the docs extra is not installed (no {module}): "
                                           'python -m pip install -e ".[docs]"')
    out = tmp_path_factory.mktemp("site") / "html"
    env = dict(os.environ, MPLBACKEND="Agg")
    started = time.monotonic()
    done = subprocess.run([*SPHINX, "docs", str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT)
    return dict(out=out, returncode=done.returncode, stderr=done.stderr, stdout=done.stdout,
                seconds=time.monotonic() - started)


def test_docs_build_with_warnings_as_errors(site):
    assert site["returncode"] == 0, f"the docs build failed (warnings are errors):\n{site['stderr'][-6000:]}"
    out = site["out"]
    pages = ["index", "getting_started", "tutorial", "studies/index", "studies", "decisions", "engine", "benchmark",
             "tests", "claims", "figures", "api", "auto_examples/index",
             *(f"studies/{name}" for name in STUDIES)]
    missing = [page for page in pages if not (out / f"{page}.html").is_file()]
    assert not missing, f"pages missing from the site: {missing}"
    for module in ("mixreg.problems", "mixreg.algorithms", "mixreg.montecarlo.reader", "mixreg.plotting"):
        assert (out / "generated" / f"{module}.html").is_file(), f"no API page for {module}"


def test_the_tutorial_and_the_gallery_show_their_figures(site):
    assert site["returncode"] == 0, "the docs build failed (see the build test)"
    out = site["out"]
    tutorial = (out / "tutorial.html").read_text(encoding="utf-8")
    for n in (1, 2):
        image = f"sphx_glr_plot_tutorial_00{n}.png"
        assert image in tutorial, f"the tutorial page does not show {image}"
        assert (out / "_images" / image).is_file(), f"{image} is not in the built site"
    examples = sorted(p.stem for p in (DOCS / "examples").glob("plot_*.py"))
    assert examples, "the gallery has no example"
    for name in examples:
        page = (out / "auto_examples" / f"{name}.html").read_text(encoding="utf-8")
        assert f"sphx_glr_{name}_001.png" in page, f"gallery example {name} shows no figure"


def test_the_gallery_draws_every_committed_figure(site):
    """Every figure committed in ``figures/`` is drawn by a gallery example from its tables in
    ``figures/data/``: the example names it (``figures/<name>.png``) and shows at least as many
    figures as it names."""
    assert site["returncode"] == 0, "the docs build failed (see the build test)"
    committed = sorted(path.name for path in (ROOT / "figures").glob("*.png"))
    assert committed, "no committed figure in figures/"
    pages = {path.stem: path.read_text(encoding="utf-8")
             for path in (site["out"] / "auto_examples").glob("plot_*.html")}
    drawn = set()
    for name, page in pages.items():
        named = {figure for figure in committed if f"figures/{figure}" in page}
        shown = set(re.findall(rf"sphx_glr_{re.escape(name)}_(\d+)\.png", page))
        assert len(shown) >= len(named), f"{name} names {sorted(named)} but shows {len(shown)} figures"
        drawn |= named
    assert sorted(drawn) == committed, f"committed figures no gallery example draws: {sorted(set(committed) - drawn)}"


def test_the_api_reference_starts_from_the_package(site):
    """The API page shows ``mixreg``'s own docstring and links every name ``import mixreg`` gives to
    its documentation in the module it comes from."""
    assert site["returncode"] == 0, "the docs build failed (see the build test)"
    import mixreg

    api = (site["out"] / "api.html").read_text(encoding="utf-8")
    assert 'id="module-mixreg"' in api, "the API page does not document the package mixreg"
    names = [name for name in mixreg.__all__ if not name.startswith("_")]
    unlinked = [name for name in names
                if not re.search(rf'href="generated/mixreg[\w.]*\.html#mixreg[\w.]*\.{name}"', api)]
    assert not unlinked, f"names of mixreg.__all__ the API page does not link to their documentation: {unlinked}"


def _minimal_gallery(root):
    """A site of one gallery example that checks a data file beside the site (as the real examples
    read ``figures/data/``): a change to the data, not to the example, can break it."""
    (root / "examples").mkdir(parents=True)
    (root / "conf.py").write_text(
        'extensions = ["sphinx_gallery.gen_gallery"]\n'
        'sphinx_gallery_conf = {"examples_dirs": "examples", "gallery_dirs": "auto_examples",\n'
        '                       "filename_pattern": "/plot_", "download_all_examples": False}\n'
        'exclude_patterns = ["auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip",\n'
        '                    "auto_examples/*.md5", "auto_examples/*.codeobj.json"]\n', encoding="utf-8")
    (root / "index.rst").write_text("Site\n====\n\n.. toctree::\n\n   auto_examples/index\n", encoding="utf-8")
    (root / "examples" / "README.txt").write_text("Gallery\n=======\n", encoding="utf-8")
    (root / "examples" / "plot_check.py").write_text(
        '"""\nChecks its data\n===============\n"""\n\nimport pathlib\n\n'
        'value = (pathlib.Path.cwd().parent / "data.txt").read_text(encoding="utf-8")\n'
        'assert value == "good", f"deliberately broken: the data say {value!r}"\n', encoding="utf-8")
    (root / "data.txt").write_text("good", encoding="utf-8")


def test_the_build_fails_on_a_broken_example_even_when_it_is_unchanged(tmp_path):
    for module in DOCS_EXTRA:
        pytest.importorskip(module, reason=f"the docs extra is not installed (no {module})")
    site = tmp_path / "site"
    _minimal_gallery(site)
    env = dict(os.environ, MPLBACKEND="Agg")

    def build(command, out):
        return subprocess.run([*command, str(site), str(tmp_path / out)], env=env, capture_output=True, text=True,
                              timeout=BUILD_TIMEOUT)

    first = build(SPHINX, "first")
    assert first.returncode == 0, f"the minimal site does not build:\n{first.stderr[-3000:]}"
    (site / "data.txt").write_text("broken", encoding="utf-8")  # the example's source is unchanged
    stale = build([arg for arg in SPHINX if arg not in ("-D", "sphinx_gallery_conf.run_stale_examples=1")], "stale")
    assert stale.returncode == 0, "sphinx-gallery re-ran an unchanged example by default: the -D flag may go"
    again = build(SPHINX, "again")
    assert again.returncode != 0, "a broken example did not fail the build"
    assert "plot_check.py" in again.stderr and "deliberately broken" in again.stderr, again.stderr[-3000:]


# --------------------------------------------------------------------------- the browser check

class _DevTools:
    """Chromium driven through the DevTools protocol on a pipe (fd 3: commands in, fd 4: replies out,
    each message a JSON text ended by a NUL byte)."""

    def __init__(self, chromium, profile):
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def plumb():  # in the child: the pipe ends on fds 3 and 4, where the browser expects them
            high_r = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--disable-extensions", "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"]
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, pass_fds=(3, 4), preexec_fn=plumb)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._messages = queue.Queue()
        self._next_id = 0
        self.events = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buffer = b""
        with os.fdopen(self._from_browser, "rb", buffering=0) as pipe:
            while chunk := pipe.read(65536):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for message in messages:
                    self._messages.put(json.loads(message))
        self._messages.put(None)

    def send(self, method, params=None, session=None, timeout=BROWSER_TIMEOUT):
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        command = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = session
        os.write(self._to_browser, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._next(deadline, f"no reply to {method}")
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_for(self, method, timeout=BROWSER_TIMEOUT):
        deadline = time.monotonic() + timeout
        while not any(event.get("method") == method for event in self.events):
            self.events.append(self._next(deadline, f"no {method} event"))

    def settle(self, seconds):
        """Keep the events of the next ``seconds`` (scripts that run after the load event)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self._messages.get(timeout=left)
            except queue.Empty:
                return
            if message is None:
                return
            self.events.append(message)

    def _next(self, deadline, what):
        try:
            message = self._messages.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError(f"Chromium: {what} within {BROWSER_TIMEOUT} s") from None
        if message is None:
            raise RuntimeError(f"Chromium closed its DevTools pipe ({what}); exit status {self.process.poll()}")
        return message

    def close(self):
        try:
            self.send("Browser.close", timeout=10)
        except (OSError, RuntimeError, TimeoutError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)


def visit(url, chromium, profile, *, until=None, wait=BROWSER_TIMEOUT):
    """Open ``url`` in headless Chromium; return ``{"errors": [...], "value": ...}``: the console
    errors, uncaught exceptions and error-level log entries (a resource that failed to load, say),
    one line each, after the load event and a second more; and the value of the JavaScript
    expression ``until`` once it is truthy (polled up to ``wait`` seconds; ``None`` without it)."""
    browser = _DevTools(chromium, profile)
    value = None
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            browser.send(f"{domain}.enable", session=session)
        browser.events.clear()                                   # what about:blank said does not count
        browser.send("Page.navigate", {"url": url}, session=session)
        browser.wait_for("Page.loadEventFired")
        browser.settle(1.0)
        state = browser.send("Runtime.evaluate", {"expression": "document.readyState"}, session=session)
        deadline = time.monotonic() + wait
        while until is not None:
            value = browser.send("Runtime.evaluate", {"expression": until, "returnByValue": True},
                                 session=session)["result"].get("value")
            if value or time.monotonic() > deadline:
                break
            browser.settle(0.25)
        browser.settle(0.5)                                      # errors of the work ``until`` waited for
    finally:
        browser.close()
    assert state["result"]["value"] == "complete", f"{url} did not finish loading: {state}"
    errors = []
    for event in browser.events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append("console.error: " + " ".join(str(arg.get("value", arg.get("description", "")))
                                                         for arg in params.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            errors.append("uncaught: " + details.get("exception", {}).get("description", details.get("text", "")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            errors.append(f"log: {entry.get('text', '')} {entry.get('url', '')}".strip())
    return {"errors": errors, "value": value}


def console_errors(url, chromium, profile):
    """The console errors of the page ``url`` (see :func:`visit`), one line each."""
    return visit(url, chromium, profile)["errors"]


@pytest.fixture
def chromium():
    path = _chromium()
    if path is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    return path


def test_the_index_page_opens_in_chromium_without_a_console_error(site, chromium, tmp_path):
    assert site["returncode"] == 0, "the docs build failed (see the build test)"
    index = site["out"] / "index.html"
    errors = console_errors(index.as_uri(), chromium, tmp_path / "profile")
    assert not errors, f"{index.name} logs errors in Chromium:\n" + "\n".join(errors)


# A page whose docstrings hold maths (inline :math: roles and a display block).
MATH_PAGE = "generated/mixreg.theory.html"
# Once MathJax typeset the page: its formulas (CommonHTML ``mjx-container`` elements) and whether
# any raw TeX delimiter ``\(`` is still shown.
TYPESET = ("(() => { const n = document.querySelectorAll('mjx-container').length;"
           " return n ? {formulas: n, raw_tex: document.body.innerText.includes('\\\\(')} : null; })()")


def test_the_maths_renders_offline_in_chromium(site, chromium, tmp_path):
    """MathJax is served from the site itself (no CDN), so a page of maths typesets offline:
    formulas become ``mjx-container`` elements, no raw TeX delimiters stay, nothing logs an error."""
    assert site["returncode"] == 0, "the docs build failed (see the build test)"
    out = site["out"]
    page = out / MATH_PAGE
    html = page.read_text(encoding="utf-8")
    assert '<span class="math notranslate nohighlight">' in html, f"{MATH_PAGE} has no maths to typeset"
    scripts = [line for line in html.splitlines() if "mathjax" in line.lower() and "<script" in line]
    assert scripts and not any("://" in line for line in scripts), f"MathJax is not served locally: {scripts}"
    assert (out / "_static" / "mathjax" / "tex-chtml.js").is_file(), "MathJax is not copied into the site"
    seen = visit(page.as_uri(), chromium, tmp_path / "profile", until=TYPESET)
    assert not seen["errors"], f"{MATH_PAGE} logs errors in Chromium:\n" + "\n".join(seen["errors"])
    assert seen["value"], f"MathJax typeset nothing on {MATH_PAGE} (no mjx-container element)"
    assert not seen["value"]["raw_tex"], f"raw TeX left on {MATH_PAGE}: {seen['value']}"


def test_the_browser_check_catches_console_errors(chromium, tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><head><title>broken</title>"
                    '<script src="missing.js"></script></head><body><p>broken</p>'
                    '<script>console.error("deliberate console error");</script>'
                    '<script>throw new Error("deliberate uncaught error");</script>'
                    "</body></html>", encoding="utf-8")
    errors = console_errors(page.as_uri(), chromium, tmp_path / "profile")
    assert any("deliberate console error" in e for e in errors), errors
    assert any("deliberate uncaught error" in e for e in errors), errors
    assert any("missing.js" in e for e in errors), errors
    clean = tmp_path / "clean.html"
    clean.write_text("<!DOCTYPE html><html><head><title>clean</title></head><body>"
                     '<script>console.log("fine");</script></body></html>', encoding="utf-8")
    assert console_errors(clean.as_uri(), chromium, tmp_path / "profile2") == []
