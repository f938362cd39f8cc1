"""Studies as objects: typed specs, the :class:`~mixreg.study.Study`, and what your study reuses.

* :func:`param` and :class:`Spec`: parameters declared once with their constraints (a range, a
  choice, a relation to another field), validated when a spec is made;
* :class:`TrialSpec`: one cell of a grid, a :class:`mixreg.problems.ProblemSpec` plus the
  method's fields, round-tripping exactly to the engine's cell (and so to its seeds);
* :class:`Study`: a grid, its trial, its cost and memory estimates, tables, figures and command
  line (``mixreg.cli``);
* :class:`Claim`: a statement of a paper (or an observation of ours) with its source and its
  check on a committed run; :func:`check_claims` checks them and :func:`claims_report` writes the
  claims report (markdown, or one self-contained HTML page).

The built-in studies of the repository (``experiments/<study>/``) are made of these parts only.
"""

from ._claims import CLAIM_KINDS, Claim, ClaimResult, ClaimRun, check_claims, claim_status, claims_report, find_claims
from ._params import Spec, param, spec_fields
from ._study import TRIAL_OVERHEAD, Study
from ._trial_spec import TrialSpec

__all__ = ["Spec", "param", "spec_fields", "TrialSpec", "Study", "TRIAL_OVERHEAD", "Claim", "ClaimRun", "ClaimResult",
           "CLAIM_KINDS", "check_claims", "claim_status", "claims_report", "find_claims"]
