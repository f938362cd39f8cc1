"""Claims of a paper, each checked on a committed run, and the claims report.

A :class:`Claim` is one statement of a paper (a theorem's rate, a lemma's bound, a figure's trend)
or one observation of ours, with where it comes from, the committed results directory it is
checked on, and the check: a function of that run (:class:`ClaimRun`) returning one or more
:class:`mixreg.predictions.Verdict`.  :func:`check_claims` runs every check on the committed
runs, recomputing nothing but the tables (from the committed trials, with the study's own
``summarise``), and :func:`claims_report` writes what it found: per claim its source, the
prediction with its constants and the commit that registered it, the measurement with its
interval, the verdict, the figure and the mutants its check catches.  Claims of the papers and
observations (made after seeing data, and re-tested on a later run) are kept in separate sections.

The built-in studies declare theirs in ``experiments/<study>/claims.py`` (``CLAIMS``), found by
:func:`find_claims`; ``python -m experiments.claims_report`` writes the repository's report.  A
user's study declares its claims the same way and calls :func:`check_claims` and
:func:`claims_report` on its own results directories.

Examples
--------
>>> from mixreg.predictions import Verdict
>>> def check(run):
...     return Verdict("rate", "consistent", dict(fitted=-0.49), "inside its interval")
>>> claim = Claim(id="my-rate", paper="Mine", source="Theorem 1", statement="error ~ n^-1/2",
...               kind="prediction", study=None, check=check, preset="paper")
>>> claim.kind, claim.id
('prediction', 'my-rate')
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import html
import importlib
import json
import pathlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from mixreg.cli import config_from_record
from mixreg.montecarlo.reader import read_results
from mixreg.predictions import VERDICT_STATUSES, Verdict

__all__ = ["CLAIM_KINDS", "Claim", "ClaimRun", "ClaimResult", "check_claims", "find_claims", "claims_report",
           "claim_status"]

#: What a claim can be: a **prediction** (a statement of a paper, or ours, whose constants were
#: fixed before the data) or an **observation** (a pattern seen in data, stated after seeing them,
#: and re-tested on a later run).
CLAIM_KINDS = ("prediction", "observation")

_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim and its check on a committed run.

    Parameters
    ----------
    id : str
        Unique, lowercase letters, digits and hyphens (``"ifca-thm1-round"``).
    paper : str
        The paper (or ``"mixreg"`` for our own claims); the report groups by it.
    source : str
        Where the paper states it: section, theorem, equation, figure or slide.
    statement : str
        The claim as checked, in words, with the setting.
    kind : {"prediction", "observation"}
        See :data:`CLAIM_KINDS`.  An observation needs ``observed``.
    study : mixreg.study.Study
        The study whose committed run the claim is checked on (``None`` only in examples).
    check : callable
        ``check(run) -> Verdict or sequence of Verdict``, with ``run`` a :class:`ClaimRun`.  It
        must not depend on the preset's cell values, so that it runs on any run of the study.
    preset : str, default="paper"
        The run checked: ``<data root>/<study name>/<preset>/``.
    predictions : tuple of str
        Names of the study's registered :class:`mixreg.predictions.Prediction` objects the check
        compares with; the report gives each one's hash and the commit that registered it, read
        from the run's manifest.
    constants : str
        The constants of the prediction and where they come from (``""``: none).
    figures : tuple of str
        File names of the figures that show it (in the figures directory).
    mutants : tuple of str
        Names of the mutation script's mutants that the tests of this claim's check catch.
    observed : str
        For an observation: where it was first seen (run, commit).
    proof_lemma : bool
        The claim is a lemma of a proof; ``statement`` says which numeric content is checked.
    """

    id: str
    paper: str
    source: str
    statement: str
    kind: str
    study: Any
    check: Callable[["ClaimRun"], Verdict | Sequence[Verdict]]
    preset: str = "paper"
    predictions: tuple[str, ...] = ()
    constants: str = ""
    figures: tuple[str, ...] = ()
    mutants: tuple[str, ...] = ()
    observed: str = ""
    proof_lemma: bool = False

    def __post_init__(self):
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ValueError(f"Claim id must be lowercase letters, digits and hyphens, got {self.id!r}")
        for name in ("paper", "source", "statement", "preset"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"Claim {self.id}: {name} must be a non-empty string, got {value!r}")
        if self.kind not in CLAIM_KINDS:
            raise ValueError(f"Claim {self.id}: kind must be one of {', '.join(CLAIM_KINDS)}, got {self.kind!r}")
        if self.kind == "observation" and not (isinstance(self.observed, str) and self.observed.strip()):
            raise ValueError(f"Claim {self.id}: an observation must say where it was first seen (observed=)")
        if not callable(self.check):
            raise TypeError(f"Claim {self.id}: check must be callable, got {type(self.check).__name__}")
        for name in ("predictions", "figures", "mutants"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise TypeError(f"Claim {self.id}: {name} must be a tuple of strings, got {value!r}")
            object.__setattr__(self, name, tuple(value))

    @property
    def study_name(self) -> str:
        """The study's name (the folder of its runs under the data root)."""
        return getattr(self.study, "name", str(self.study))


class ClaimRun:
    """A committed results directory, as a claim's check sees it.

    Parameters
    ----------
    study : mixreg.study.Study
    path : path-like
        The results directory (``manifest.json``, ``trials.csv``, tables).

    Attributes
    ----------
    path : pathlib.Path
    manifest : dict
    config : Spec
        The study's config, rebuilt from the manifest.
    records : list of dict
        The committed trials (checked against the sha256 the run recorded).
    failures : list of dict
        The trials that raised (:attr:`mixreg.montecarlo.reader.Results.failures`); the report
        counts them.
    """

    def __init__(self, study: Any, path: str | pathlib.Path):
        self.study = study
        self.path = pathlib.Path(path)
        self._results = read_results(self.path)
        self.manifest = self._results.manifest
        self.config = config_from_record(study.config, self._results.config)
        self.records = self._results.records
        self.failures = self._results.failures

    @functools.cached_property
    def tables(self) -> dict[str, Any]:
        """The study's tables recomputed from the committed trials by its ``summarise``
        (so a table added after the run is there too)."""
        return self.study.summarise(self.config, self.records)

    def table(self, name: str) -> list[dict[str, Any]]:
        """The committed table ``<name>.csv`` as the run wrote it."""
        return self._results.table(name if name.endswith(".csv") else f"{name}.csv")

    def registered(self, name: str) -> dict[str, Any] | None:
        """The manifest's registration of prediction ``name`` (``sha256``, ``registered``), or None."""
        for entry in self.manifest.get("predictions") or []:
            if entry.get("name") == name:
                return entry
        return None

    @property
    def commits(self) -> list[str]:
        """The commits at which the run's trials were computed: those of its parts (``runs`` in the
        manifest) that computed chunks, in order.  A later part that only loaded them (a resume
        that rewrote the tables) is not one."""
        out = []
        for part in self.manifest.get("runs") or []:
            commit = ((part.get("environment") or {}).get("git") or {}).get("commit")
            if part.get("chunks_computed") and commit and commit not in out:
                out.append(commit)
        return out

    @property
    def commit(self) -> str | None:
        """The first commit the run's trials were computed at (:attr:`commits`); the manifest's own
        commit when it records no part."""
        commits = self.commits
        return commits[0] if commits else (self.manifest.get("git") or {}).get("commit")


def claim_status(verdicts: Sequence[Verdict]) -> str:
    """A claim's verdict from its parts: ``"contradicts"`` if one part contradicts, ``"not tested"``
    if none is tested or one part is not, ``"not tight"`` if one part is a bound that holds without
    being reached (:func:`mixreg.predictions.bound_exponent_verdict`), else ``"consistent"``.

    Examples
    --------
    >>> v = [Verdict("a", "consistent"), Verdict("b", "not tested", why="one cell"), Verdict("c", "not tight")]
    >>> claim_status(v), claim_status(v[:1]), claim_status([v[0], v[2]]), claim_status([])
    ('not tested', 'consistent', 'not tight', 'not tested')
    """
    statuses = {v.status for v in verdicts}
    if "contradicts" in statuses:
        return "contradicts"
    if not statuses or "not tested" in statuses:
        return "not tested"
    if "not tight" in statuses:
        return "not tight"
    return "consistent"


@dataclasses.dataclass(frozen=True)
class ClaimResult:
    """What :func:`check_claims` found for one claim.

    Attributes
    ----------
    claim : Claim
    status : str
        :func:`claim_status` of ``verdicts``.
    verdicts : tuple of Verdict
    run : dict
        The run checked: ``path`` (relative to the data root), ``commit`` and ``commits``
        (:attr:`ClaimRun.commits`), ``trials``, ``failures``, ``status``;
        empty when there is none.
    registrations : tuple of dict
        Per name of ``claim.predictions``: ``name``, ``sha256``, ``commit``, ``before_data``
        (registered before the first trial), or ``missing`` when the manifest does not register it.
    error : str
        The first line of the exception the check raised ("" when it did not).
    """

    claim: Claim
    status: str
    verdicts: tuple
    run: dict
    registrations: tuple = ()
    error: str = ""

    @property
    def registered_before_data(self) -> bool | None:
        """Every named prediction is registered in the manifest before the first trial; ``None``
        when the claim names none (a shape or a sign: nothing to register)."""
        if not self.registrations:
            return None
        return all(r.get("before_data") for r in self.registrations)


def _registration(run, name):
    entry = run.registered(name)
    if entry is None:
        return dict(name=name, missing=True, before_data=False)
    registered = entry.get("registered") or {}
    return dict(name=name, sha256=entry.get("sha256"), commit=registered.get("commit"),
                before_data=registered.get("trials_before") == 0)


def check_claims(claims: Iterable[Claim], data_root: str | pathlib.Path) -> list[ClaimResult]:
    """Check every claim on its committed run under ``data_root``.

    Parameters
    ----------
    claims : iterable of Claim
    data_root : path-like
        The directory of the runs: claim ``c`` is checked on ``data_root/<c.study.name>/<c.preset>/``.

    Returns
    -------
    list of ClaimResult
        In the order given.  A claim without a complete run is ``"not tested"`` with the reason;
        a check that raises is ``"not tested"`` with ``error`` set (a bug of the check: the
        report lists it and ``python -m experiments.claims_report`` exits 1).
    """
    root = pathlib.Path(data_root)
    runs: dict[tuple[str, str], ClaimRun | str] = {}
    results = []
    seen = set()
    for claim in claims:
        if not isinstance(claim, Claim):
            raise TypeError(f"claims must be Claim objects, got {type(claim).__name__}")
        if claim.id in seen:
            raise ValueError(f"two claims have the id {claim.id!r}")
        seen.add(claim.id)
        key = (claim.study_name, claim.preset)
        if key not in runs:
            runs[key] = _open_run(claim.study, root / key[0] / key[1])
        run = runs[key]
        if isinstance(run, str):
            results.append(ClaimResult(claim, "not tested", (Verdict(claim.statement, "not tested", why=run),), {}))
            continue
        info = dict(path=f"{key[0]}/{key[1]}", commit=run.commit, commits=run.commits, trials=len(run.records),
                    failures=len(run.failures), status=run.manifest.get("status"))
        registrations = tuple(_registration(run, name) for name in claim.predictions)
        try:
            out = claim.check(run)
        except Exception as exc:  # noqa: BLE001 - recorded, reported, and the command fails
            text = str(exc).strip().splitlines()
            error = f"{type(exc).__name__}: {text[0] if text else ''}"
            verdict = Verdict(claim.statement, "not tested", why=f"the check raised {error}")
            results.append(ClaimResult(claim, "not tested", (verdict,), info, registrations, error))
            continue
        verdicts = (out,) if isinstance(out, Verdict) else tuple(out)
        for v in verdicts:
            if not isinstance(v, Verdict):
                raise TypeError(f"claim {claim.id}: its check returned {type(v).__name__}, not a Verdict")
        results.append(ClaimResult(claim, claim_status(verdicts), verdicts, info, registrations))
    return results


def _open_run(study, path):
    """The run at ``path``, or the reason it cannot be checked (a string)."""
    if not (path / "manifest.json").is_file():
        return f"no committed run at {path.parent.name}/{path.name}"
    try:
        status = json.loads((path / "manifest.json").read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        return f"the manifest of {path.parent.name}/{path.name} cannot be read"
    if status != "complete":
        return f"the run {path.parent.name}/{path.name} is unfinished (status {status!r})"
    return ClaimRun(study, path)


def find_claims(package: str) -> list[Claim]:
    """The ``CLAIMS`` of every ``<package>.<study>.claims`` module, studies in name order.

    Parameters
    ----------
    package : str
        An importable package whose subpackages are studies (``"experiments"``).
    """
    pkg = importlib.import_module(package)
    claims: list[Claim] = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        try:
            module = importlib.import_module(f"{package}.{info.name}.claims")
        except ModuleNotFoundError as exc:
            if exc.name == f"{package}.{info.name}.claims":
                continue
            raise
        claims.extend(module.CLAIMS)
    return claims


# --------------------------------------------------------------------------------- the report

def _number(value):
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_number(v) for v in value) + "]"
    return str(value)


def _numbers(numbers: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {_number(v)}" for k, v in numbers.items())


def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _commits(run, quote="`"):
    commits = run.get("commits") or [run.get("commit") or "?"]
    return ("commit " if len(commits) == 1 else "commits ") + ", ".join(f"{quote}{c[:10]}{quote}" for c in commits)


def _failed(run):
    n = run.get("failures", 0)
    return "none failed" if not n else f"{n} failed (listed in its manifest)"


def _registration_text(r):
    if r.get("missing"):
        return f"`{r['name']}`: NOT registered in the run's manifest"
    when = "before the first trial" if r["before_data"] else "AFTER trials had been computed"
    return f"`{r['name']}` (sha256 `{(r.get('sha256') or '')[:12]}`) registered at commit `{(r.get('commit') or '?')[:10]}`, {when}"


def _summary(results):
    counts: dict[str, dict[str, int]] = {}
    for r in results:
        counts.setdefault(r.claim.kind, dict.fromkeys(VERDICT_STATUSES, 0))[r.status] += 1
    return counts


def _overview(results):
    """The results in the order of the report's sections: each section's papers in first-seen order."""
    return [r for _, papers in _groups(results) for _, rows in papers for r in rows]


def _groups(results):
    """``(heading, [(paper, [results])])`` for the two sections, papers in first-seen order."""
    sections = []
    for kind, heading in (("prediction", "Claims of the papers"),
                          ("observation", "Observations (stated after seeing data, re-tested on a later run)")):
        papers: dict[str, list] = {}
        for r in results:
            if r.claim.kind == kind:
                papers.setdefault(r.claim.paper, []).append(r)
        sections.append((heading, list(papers.items())))
    return sections


def _markdown(results, title, intro, figures_link, notes):
    lines = [f"# {title}", ""]
    if intro:
        lines += [intro, ""]
    for kind, counts in _summary(results).items():
        total = sum(counts.values())
        lines.append(f"- {total} {kind}{'s' if total != 1 else ''}: "
                     + ", ".join(f"{n} {status}" for status, n in counts.items()))
    lines += ["", "| claim | paper | source | kind | verdict | run |", "|---|---|---|---|---|---|"]
    for r in _overview(results):
        lines.append(f"| [{r.claim.id}](#{r.claim.id}) | {_md(r.claim.paper)} | {_md(r.claim.source)} | "
                     f"{r.claim.kind}{' (proof lemma)' if r.claim.proof_lemma else ''} | **{r.status}** | "
                     f"{_md(r.run.get('path', 'none'))} |")
    for heading, papers in _groups(results):
        lines += ["", f"## {heading}"]
        if not papers:
            lines += ["", "None."]
        for paper, rows in papers:
            lines += ["", f"### {paper}"]
            for r in rows:
                lines += _markdown_claim(r, figures_link, notes.get(r.claim.id))
    return "\n".join(lines) + "\n"


def _claim_items(r, code, name, escape, quote, note=None):
    """The labelled items of a claim's section shared by both formats, ``(head, tail)``: the items
    before its measurement (statement, source, prediction or first observation, data) and after it
    (a note, mutants, a failed check), each ``(label, text)`` with ``text`` already in the format
    (``escape`` for text, ``code`` for a path, ``name`` for a mutant, ``quote`` around a commit)."""
    c = r.claim
    head = [("Statement.", escape(c.statement)), ("Source.", escape(c.source))]
    if c.proof_lemma:
        head.append(("A lemma of a proof:", "the statement says which of its numeric content is checked."))
    if c.kind == "prediction":
        regs = "; ".join(_registration_text(x) for x in r.registrations) or "no registered formula (a shape or sign)"
        head.append(("Prediction.", escape(f"{c.constants or 'no constant'}. Registered: {regs}.")))
    else:
        head.append(("Observed first.", escape(c.observed)))
    if r.run:
        head.append(("Data.", f"{code(r.run['path'])}: {r.run['trials']} trials ({_failed(r.run)}), computed at "
                              f"{escape(_commits(r.run, quote=quote))}."))
    tail = [("Note.", escape(note))] if note else []
    tail.append(("Mutants its tests catch.", ", ".join(name(m) for m in c.mutants) or "none"))
    if r.error:
        tail.append(("The check failed:", escape(r.error)))
    return head, tail


def _markdown_claim(r, figures_link, note=None):
    c = r.claim
    head, tail = _claim_items(r, code=lambda text: f"`{text}`", name=lambda text: f"`{text}`", escape=str, quote="`",
                              note=note)
    out = ["", f'<a id="{c.id}"></a>', "", f"#### {c.id}: {r.status}", ""]
    out += [f"- **{label}** {text}" for label, text in head]
    out += ["- **Measurement.**", "", "  | part | verdict | numbers | why |", "  |---|---|---|---|"]
    for v in r.verdicts:
        out.append(f"  | {_md(v.claim)} | {v.status} | {_md(_numbers(v.numbers))} | {_md(v.why)} |")
    out.append("")
    if c.figures:
        out.append("- **Figure.** " + ", ".join(f"[{f}]({figures_link}{f})" for f in c.figures))
    out += [f"- **{label}** {text}" for label, text in tail]
    return out


_CSS = """body{font-family:Georgia,serif;max-width:60em;margin:2em auto;padding:0 1em;line-height:1.45;color:#111}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}td,th{border:1px solid #bbb;padding:.2em .45em;
vertical-align:top}th{background:#eee}h4{margin-bottom:.3em}.consistent{color:#05734b}.contradicts{color:#b00020}
.not-tight{color:#1f5fa8}.not-tested{color:#8a5a00}img{max-width:100%;border:1px solid #ddd}code{font-size:.92em}"""


def _html(results, title, intro, figures_dir, notes):
    e = html.escape
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{e(title)}</h1>"]
    if intro:
        parts.append(f"<p>{e(intro)}</p>")
    parts.append("<ul>")
    for kind, counts in _summary(results).items():
        total = sum(counts.values())
        parts.append(f"<li>{total} {kind}{'s' if total != 1 else ''}: "
                     + ", ".join(f"{n} {status}" for status, n in counts.items()) + "</li>")
    parts.append("</ul><table><tr><th>claim</th><th>paper</th><th>source</th><th>kind</th><th>verdict</th></tr>")
    for r in _overview(results):
        parts.append(f"<tr><td><a href='#{r.claim.id}'>{e(r.claim.id)}</a></td><td>{e(r.claim.paper)}</td>"
                     f"<td>{e(r.claim.source)}</td><td>{r.claim.kind}</td>"
                     f"<td class='{r.status.replace(' ', '-')}'><b>{r.status}</b></td></tr>")
    parts.append("</table>")
    embedded: set[str] = set()
    for heading, papers in _groups(results):
        parts.append(f"<h2>{e(heading)}</h2>")
        if not papers:
            parts.append("<p>None.</p>")
        for paper, rows in papers:
            parts.append(f"<h3>{e(paper)}</h3>")
            for r in rows:
                parts.append(_html_claim(r, figures_dir, embedded, notes.get(r.claim.id)))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _html_claim(r, figures_dir, embedded, note=None):
    e = html.escape
    c = r.claim
    head, tail = _claim_items(r, code=lambda text: f"<code>{e(text)}</code>", name=e, escape=e, quote="", note=note)
    out = [f"<h4 id='{c.id}'>{e(c.id)}: <span class='{r.status.replace(' ', '-')}'>{r.status}</span></h4><ul>"]
    out += [f"<li><b>{label}</b> {text}</li>" for label, text in head]
    out.append("<li><b>Measurement.</b><table><tr><th>part</th><th>verdict</th><th>numbers</th><th>why</th></tr>")
    for v in r.verdicts:
        out.append(f"<tr><td>{e(v.claim)}</td><td class='{v.status.replace(' ', '-')}'>{v.status}</td>"
                   f"<td>{e(_numbers(v.numbers))}</td><td>{e(v.why)}</td></tr>")
    out.append("</table></li>")
    out += [f"<li><b>{label}</b> {text}</li>" for label, text in tail]
    out.append("</ul>")
    for name in c.figures:
        path = pathlib.Path(figures_dir) / name if figures_dir is not None else None
        if path is not None and path.suffix == ".png" and path.is_file():
            if name in embedded:  # drawn once, with the first claim that shows it
                out.append(f"<p>Figure: {e(name)} (shown above).</p>")
                continue
            embedded.add(name)
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            out.append(f"<figure><img alt='{e(name)}' src='data:image/png;base64,{data}'>"
                       f"<figcaption>{e(name)}</figcaption></figure>")
        else:
            out.append(f"<p>Figure: {e(name)} (not found)</p>")
    return "\n".join(out)


def claims_report(results: Sequence[ClaimResult], *, title: str = "Claims report", intro: str = "",
                  fmt: str = "markdown", figures_dir: str | pathlib.Path | None = None,
                  figures_link: str = "", notes: Mapping[str, str] | None = None) -> str:
    """The claims report of :func:`check_claims`'s results.

    Parameters
    ----------
    results : sequence of ClaimResult
    title, intro : str
        The heading, and a paragraph under it (say how it was produced).
    fmt : {"markdown", "html"}
        Markdown (figures linked as ``figures_link + name``), or one self-contained HTML page with
        the PNG figures embedded (read from ``figures_dir``), to attach to a paper.
    figures_dir : path-like, optional
        Where the figures are (``fmt="html"``).
    figures_link : str
        Prefix of the figures' links in markdown (``"figures/"`` from the repository root).
    notes : mapping of str to str, optional
        ``{claim id: text}``: a note shown in that claim's section after its measurement (e.g. a
        fresh run that disagrees with the committed one).  An id no result has is refused.

    Returns
    -------
    str
        Deterministic: the same results give the same text (no time stamp), so a committed report
        can be compared with a fresh one.
    """
    notes = dict(notes or {})
    unknown = sorted(set(notes) - {r.claim.id for r in results})
    if unknown:
        raise ValueError(f"notes name claims the results do not hold: {', '.join(unknown)}")
    if fmt == "markdown":
        return _markdown(results, title, intro, figures_link, notes)
    if fmt == "html":
        return _html(results, title, intro, figures_dir, notes)
    raise ValueError(f"fmt must be 'markdown' or 'html', got {fmt!r}")
