"""mixreg.study's claims: a claim checked on a committed run, and the claims report."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mixreg.montecarlo import run_sweep
from mixreg.predictions import Constant, Prediction, Verdict, exponent_verdict, fit_exponent
from mixreg.study import Claim, Spec, Study, check_claims, claim_status, claims_report, param


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config(Spec):
    preset: str = param("the preset")
    trials: int = param("trials per cell", low=1)
    ns: tuple[int, ...] = param("sample sizes", default=(20, 40, 80, 160), low=2)


def trial(cell, seed):
    """The mean of n standard normals: error ~ n^-1/2."""
    rng = np.random.default_rng(seed)
    return {"abs_mean": float(abs(rng.standard_normal(cell["n"]).mean()))}


def summarise(config, records):
    by_n = {}
    for r in records:
        by_n.setdefault(r["n"], []).append(r["abs_mean"])
    return {"rates": [{"n": n, "mean": float(np.mean(v))} for n, v in sorted(by_n.items())],
            "raw": by_n}


def _rate(cell, c):
    return c * cell["n"] ** -0.5


RATE = Prediction("mean_rate", _rate, "sqrt(2/pi) n^-1/2", fields=("n",),
                  constants={"c": Constant(math.sqrt(2 / math.pi), "E|N(0,1)|")})

STUDY = Study(name="toy_claims", command="python -m toy", description="toy", config=Config,
              presets={"quick": dict(trials=30)}, cells=lambda c: [{"n": n} for n in c.ns], trial=trial,
              tables=("rates",), summarise=summarise, draw=lambda c, t, o: [], root_seed=5, algorithms=(),
              predictions=(RATE,))


def _exponent(predicted):
    def check(run):
        raw = run.tables["raw"]
        ns = sorted(raw)
        fit = fit_exponent(ns, [raw[n] for n in ns], n_boot=200, rng=np.random.default_rng(0))
        return exponent_verdict(f"mean ~ n^{predicted}", predicted, fit)
    return check


def _claim(**changes):
    values = dict(id="toy-rate", paper="Toy", source="Thm 1", statement="|mean| ~ n^-1/2", kind="prediction",
                  study=STUDY, check=_exponent(-0.5), preset="quick", predictions=("mean_rate",),
                  constants="c = sqrt(2/pi)", mutants=("toy-mutant",))
    return Claim(**{**values, **changes})


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    config = STUDY.preset("quick")
    run_sweep(STUDY.sweep(config), root / STUDY.name / "quick", jobs=1, progress=False)
    return root


def test_a_claim_is_checked_on_its_committed_run_with_its_registration(data_root):
    good, bad = check_claims([_claim(), _claim(id="toy-wrong", check=_exponent(-1.0))], data_root)
    assert good.status == "consistent" and bad.status == "contradicts"
    assert good.run["trials"] == 120 and good.run["path"] == "toy_claims/quick" and good.run["commits"] == [good.run["commit"]]
    (reg,) = good.registrations
    assert reg["name"] == "mean_rate" and reg["sha256"] == RATE.sha256 and reg["before_data"]
    assert good.registered_before_data
    (none,) = check_claims([_claim(predictions=())], data_root)
    assert none.registered_before_data is None  # nothing registered: not "registered before its data"


def test_no_run_an_unregistered_prediction_and_a_raising_check_are_said(data_root):
    def boom(run):
        raise KeyError("no such table")
    missing, unregistered, raised = check_claims([
        _claim(id="a", preset="paper"), _claim(id="b", predictions=("nothing",)), _claim(id="c", check=boom)],
        data_root)
    assert missing.status == "not tested" and "no committed run at toy_claims/paper" in missing.verdicts[0].why
    assert unregistered.registrations[0]["missing"] and not unregistered.registered_before_data
    assert raised.status == "not tested" and raised.error.startswith("KeyError")


def test_the_report_separates_predictions_from_observations_and_is_deterministic(data_root, tmp_path):
    claims = [_claim(), _claim(id="toy-seen", kind="observation", observed="quick run at abc123",
                               predictions=())]
    first = check_claims(claims, data_root)
    text = claims_report(first, title="T")
    assert text == claims_report(check_claims(claims, data_root), title="T")
    predictions, observations = text.split("## Claims of the papers")[1].split("## Observations")
    assert "#### toy-rate: consistent" in predictions and "toy-seen" not in predictions
    assert "#### toy-seen: consistent" in observations and "quick run at abc123" in observations
    assert "registered at commit" in predictions and "before the first trial" in predictions
    assert "`toy-mutant`" in predictions


def test_the_html_report_embeds_its_figures_once(data_root, tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(1, 1))
    fig.savefig(tmp_path / "toy.png")
    plt.close(fig)
    results = check_claims([_claim(figures=("toy.png",)), _claim(id="toy-2", figures=("toy.png", "gone.png"))],
                           data_root)
    page = claims_report(results, fmt="html", figures_dir=tmp_path)
    assert page.count("data:image/png;base64,") == 1 and "gone.png (not found)" in page
    assert page.startswith("<!DOCTYPE html>") and "http" not in page.split("<body>")[1][:2000]


def test_a_note_is_shown_in_its_claims_section_in_both_formats(data_root):
    results = check_claims([_claim(), _claim(id="toy-2")], data_root)
    note = "a fresh run (seed 7) gives -0.56 [-0.59, -0.52] < & >"
    text = claims_report(results, notes={"toy-2": note})
    first, second = text.split("#### toy-2")
    assert "- **Note.** " + note in second and "Note." not in first
    assert second.index("**Note.**") < second.index("**Mutants its tests catch.**")
    page = claims_report(results, fmt="html", notes={"toy-2": note})
    assert "<li><b>Note.</b> a fresh run (seed 7) gives -0.56 [-0.59, -0.52] &lt; &amp; &gt;</li>" in page
    assert claims_report(results) == claims_report(results, notes={})
    with pytest.raises(ValueError, match="notes name claims the results do not hold: toy-3"):
        claims_report(results, notes={"toy-3": "x"})


@pytest.mark.parametrize("changes,message", [
    (dict(id="Bad Id"), "Claim id must be lowercase"),
    (dict(kind="guess"), "kind must be one of prediction, observation"),
    (dict(kind="observation"), "must say where it was first seen"),
    (dict(source=""), "source must be a non-empty string"),
    (dict(mutants="m1"), "mutants must be a tuple of strings"),
])
def test_a_malformed_claim_is_refused_in_one_line(changes, message):
    with pytest.raises((ValueError, TypeError), match=message):
        _claim(**changes)


def test_two_claims_with_one_id_are_refused(data_root):
    with pytest.raises(ValueError, match="two claims have the id"):
        check_claims([_claim(), _claim()], data_root)


def test_claim_status_is_the_worst_part():
    ok, no, nt = Verdict("a", "consistent"), Verdict("b", "contradicts"), Verdict("c", "not tested", why="x")
    assert claim_status([ok, no, nt]) == "contradicts"
    assert claim_status([ok, nt]) == "not tested"
    assert claim_status([ok, ok]) == "consistent"
    loose = Verdict("d", "not tight")
    assert claim_status([ok, loose]) == "not tight" and claim_status([loose, nt]) == "not tested"
    assert claim_status([loose, no]) == "contradicts"
