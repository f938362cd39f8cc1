"""Mutation check of the IFCA driver (slow; a few minutes): every mutant of
``paper_checks/ifca_mutants.py`` is caught by the tests its table names, at least one of them
theorem-level, and those tests pass on the unmutated package.

    python -m pytest -m slow paper_checks/test_ifca_mutants.py
"""

import pytest

# paper_checks is not a package: pytest puts this directory on sys.path, as tests/ does for
# its helper modules
import ifca_mutants

pytestmark = pytest.mark.slow


def test_every_mutant_is_caught_and_the_original_passes():
    mutants = ifca_mutants.IFCA_MUTANTS  # the FedX and LS mutants: test_family_mutants.py
    outcomes = ifca_mutants.check([m.name for m in mutants])  # raises, listing every survivor
    original, *mutated = outcomes
    assert original.mutant == "original" and original.passed
    assert [o.mutant for o in mutated] == [m.name for m in mutants]
    for mutant, out in zip(mutants, mutated):
        assert all(out.fails(t) for t in mutant.caught_by), (mutant.name, sorted(out.failing))
        assert any(out.fails(t) for t in ifca_mutants.THEOREM_LEVEL), f"{mutant.name}: no theorem-level test fails"


def test_a_refactored_driver_makes_the_script_fail_loudly(tmp_path):
    """A mutant whose target text is missing raises instead of testing nothing."""
    (tmp_path / "mixreg" / "algorithms").mkdir(parents=True)
    (tmp_path / "mixreg" / "algorithms" / "ifca.py").write_text("theta = theta - rate * grad\n")
    with pytest.raises(RuntimeError, match="refactored"):
        ifca_mutants.MUTANTS[2].apply(tmp_path)
