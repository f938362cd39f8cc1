"""Studies as objects: typed specs, the :class:`~mixreg.study.Study`, and what your study reuses.

* :func:`param` and :class:`Spec`: parameters declared once with their constraints (a range, a
  choice, a relation to another field), validated when a spec is made;
* :class:`TrialSpec`: one cell of a grid, a :class:`mixreg.problems.ProblemSpec` plus the
  method's fields, round-tripping exactly to the engine's cell (and so to its seeds);
* :class:`Study`: a grid, its trial, its cost and memory estimates, tables, figures and command
  line (``mixreg.cli``).

The built-in studies of the repository (``experiments/<study>/``) are made of these parts only.
"""

from ._params import Spec, param, spec_fields
from ._study import TRIAL_OVERHEAD, Study
from ._trial_spec import TrialSpec

__all__ = ["Spec", "param", "spec_fields", "TrialSpec", "Study", "TRIAL_OVERHEAD"]
