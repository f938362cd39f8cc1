"""Mutation check of every family of ``paper_checks/ifca_mutants.py`` but IFCA's (slow; about a
minute a family): the FedX (Phase 2) driver, the known-label least-squares theory under a
covariance, and every family collected from a ``paper_checks/mutants_<family>.py``.  Every mutant
is caught by each test it names, at least one of them a theorem-level test of its own family, and
those tests pass on the unmutated package.  (The IFCA family: ``test_ifca_mutants.py``.)

    python -m pytest -m slow paper_checks/test_family_mutants.py
    python -m pytest -m slow paper_checks/test_family_mutants.py -k baselines   # one family

The fast default test ``tests/test_mutant_script.py`` checks that every mutant's target text is
in the current tree exactly once and that every test it names exists.
"""

import pytest

# paper_checks is not a package: pytest puts this directory on sys.path
import ifca_mutants

pytestmark = pytest.mark.slow

#: Each family checked here (IFCA's: test_ifca_mutants.py).
FAMILIES = [name for name in ifca_mutants.FAMILIES if name != "ifca"]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_mutant_of_the_family_is_caught_and_the_original_passes(family):
    mutants = ifca_mutants.FAMILIES[family]
    theorem_level = ifca_mutants.THEOREM_LEVELS[family]
    outcomes = ifca_mutants.check([m.name for m in mutants])  # raises, listing every survivor
    original, *mutated = outcomes
    assert original.mutant == "original" and original.passed
    assert [o.mutant for o in mutated] == [m.name for m in mutants]
    for mutant, out in zip(mutants, mutated):
        assert all(out.fails(t) for t in mutant.caught_by), (mutant.name, sorted(out.failing))
        assert any(out.fails(t) for t in theorem_level), f"{mutant.name}: no theorem-level test of {family} fails"


@pytest.mark.parametrize("mutant", ifca_mutants.MUTANTS, ids=lambda m: m.name)
def test_each_mutant_finds_its_target_in_the_package(mutant, tmp_path):
    """The target text is in the current package exactly once, and once replaced it is gone, so
    applying the mutant again (as to a refactored driver) raises instead of testing nothing."""
    target = tmp_path / mutant.path
    target.parent.mkdir(parents=True)
    target.write_text((ifca_mutants.ROOT / mutant.path).read_text())
    mutant.apply(tmp_path)
    assert ifca_mutants.MARK in target.read_text()
    with pytest.raises(RuntimeError, match="refactored"):
        mutant.apply(tmp_path)
