"""The claims report of the committed runs: every claim of the papers, and every observation of
ours, checked on the paper-scale runs under ``figures/data/``, running no trial.

    python -m experiments.claims_report            # writes figures/claims_report.md and .html
    python -m experiments.claims_report --check    # exit 1 if the committed report is not current

Each study declares its claims in ``experiments/<study>/claims.py`` (:class:`mixreg.study.Claim`);
this command finds them (:func:`mixreg.study.find_claims`), checks each on its committed run
(:func:`mixreg.study.check_claims`: the tables recomputed from the committed trials by the study's
own ``summarise``) and writes the report twice: markdown, read on the repository's pages, and one
self-contained HTML page with the figures embedded, to attach to a paper as an appendix.  The
report holds no time stamp, so that the same runs and code give the same bytes (``--check``
compares).  Exit status: 0, 1 when a check raised (listed, and in the report) or ``--check``
found the committed report stale, 2 on bad input.
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import sys

from mixreg.study import check_claims, claims_report, find_claims

REPO = pathlib.Path(__file__).resolve().parent.parent
DATA = REPO / "figures" / "data"
FIGURES = REPO / "figures"
NAME = "claims_report"
TITLE = "mixreg claims report"
INTRO = ("Every claim of the IFCA paper (Ghosh, Chung, Yin, Ramchandran) and of Su, Xu and Yang's "
         "two-phase method that mixreg checks, and every observation of ours, checked on the committed "
         "paper-scale runs under figures/data/ by `python -m experiments.claims_report` (no trial is "
         "run: the tables are recomputed from the committed trials). Where a prediction compares with a "
         "formula, the formula and its constants were registered in the run's manifest, and the commit "
         "that registered it is given; a prediction that is a shape or a sign (a rate rises, a bound holds) "
         "has none and says so. An observation was stated after seeing data; whether it has been re-tested "
         "on a later run is said with it. Where a paper states a bound, a check of its shape or rate "
         "tests whether the bound is tight: its claim then says so, and a fitted exponent wholly on the "
         "bound's safe side (the measured quantity grows more slowly than the bound in the theorem's limit) "
         "is 'not tight': a weaker dependence than the bound's contradicts its tightness, not the bound "
         "(whether the bound's level holds is a part of its own where the claim checks it). A "
         "contradicted prediction is a result, reported as such.")


def fresh_notes(results, package="experiments"):
    """``{claim id: note}`` for the claims whose fresh run disagrees with the committed one: each
    study's ``FRESH_DIFFERS`` in its ``claims.py`` (id -> the fresh verdict and its numbers), which
    ``paper_checks/test_claims_fresh.py`` asserts on the fresh runs."""
    notes = {}
    for r in results:
        differs = getattr(importlib.import_module(f"{package}.{r.claim.study_name}.claims"), "FRESH_DIFFERS", {})
        if r.claim.id in differs:
            status, why = differs[r.claim.id]
            notes[r.claim.id] = (f"A fresh run (the study's FRESH sizes, another root seed; the slow test "
                                 f"paper_checks/test_claims_fresh.py) gives '{status}', not this run's "
                                 f"'{r.status}': {why}")
    return notes


def build(data=DATA, figures=FIGURES, package="experiments"):
    """``(results, markdown, html)`` of the claims of ``package`` on the runs under ``data``."""
    results = check_claims(find_claims(package), data)
    notes = fresh_notes(results, package)
    intro = INTRO
    if notes:
        intro += (f" On a fresh run of its study (another seed), {len(notes)} claim{'s' if len(notes) != 1 else ''} "
                  f"get{'' if len(notes) != 1 else 's'} another verdict than on the committed run "
                  f"({', '.join(sorted(notes))}): {'each says' if len(notes) != 1 else 'it says'} so in a note.")
    markdown = claims_report(results, title=TITLE, intro=intro, fmt="markdown", figures_link="", notes=notes)
    page = claims_report(results, title=TITLE, intro=intro, fmt="html", figures_dir=figures, notes=notes)
    return results, markdown, page


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m experiments.claims_report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=pathlib.Path, default=DATA, metavar="DIR",
                        help="the committed runs, DIR/<study>/<preset>/ (default: figures/data)")
    parser.add_argument("--out", type=pathlib.Path, default=FIGURES, metavar="DIR",
                        help="where the report is written, and the figures it embeds are read (default: figures)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if DIR's report differs from the one the runs give now")
    args = parser.parse_args(argv)
    prog = parser.prog
    if not args.data.is_dir():
        parser.exit(2, f"{prog}: error: --data: {args.data} is not a directory\n")
    if not args.out.is_dir():
        parser.exit(2, f"{prog}: error: --out: {args.out} is not a directory\n")
    results, markdown, page = build(args.data, args.out)
    status = 0
    for r in results:
        if r.error:
            print(f"{prog}: claim {r.claim.id}: the check raised {r.error}", file=sys.stderr)
            status = 1
    md_path, html_path = args.out / f"{NAME}.md", args.out / f"{NAME}.html"
    if args.check:
        stale = [p.name for p, text in ((md_path, markdown), (html_path, page))
                 if not p.is_file() or p.read_text(encoding="utf-8") != text]
        if stale:
            print(f"{prog}: {', '.join(stale)} in {args.out} not current: run python -m experiments.claims_report",
                  file=sys.stderr)
            return 1
        print(f"{prog}: {md_path.name} and {html_path.name} are current")
        return status
    md_path.write_text(markdown, encoding="utf-8")
    html_path.write_text(page, encoding="utf-8")
    counts = {}
    for r in results:
        counts[(r.claim.kind, r.status)] = counts.get((r.claim.kind, r.status), 0) + 1
    print(f"wrote {md_path} and {html_path}: " + ", ".join(f"{n} {kind} {status}" for (kind, status), n in
                                                           sorted(counts.items())))
    return status


if __name__ == "__main__":
    sys.exit(main())
