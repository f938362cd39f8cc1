"""Mutation check of the IFCA and FedX drivers, the known-label LS theory and every paper_checks/mutants_<family>.py:
the theorem-level tests must fail on a broken driver or formula.

    python -m paper_checks.ifca_mutants                      # check every mutant (a few minutes)
    python -m paper_checks.ifca_mutants --mutant true-labels # one mutant
    python -m paper_checks.ifca_mutants --survey             # which candidate tests fail, per mutant
    python -m paper_checks.ifca_mutants --family fedx        # the FedX (Phase 2) mutants only (ls: the LS theory)
    python -m paper_checks.ifca_mutants --list               # every family and mutant, with its tests

For every mutant, the repository's code, tests and committed data (``mixreg/``, ``tests/``,
``experiments/``, ``paper_checks/``, ``figures/``, ``docs/``, ``pyproject.toml``, the root
``conftest.py`` and ``README.md``; see ``COPIED``) are copied into a scratch directory, one
exact text replacement is applied to the copy's ``mixreg/algorithms/ifca.py`` (FedX mutants:
``mixreg/algorithms/fedx.py`` or ``mixreg/kernels.py``; a family file's: the mutant's ``path``,
under ``mixreg/`` or ``experiments/``) (the script stops if the target text is not there exactly once, so
a refactor of the driver makes it fail loudly instead of silently testing nothing), and the
tests that the table below says catch the mutant are run against the copy with
``python -m pytest <tests> -q -p no:cacheprovider -rfE`` (``cwd`` and ``PYTHONPATH`` the copy;
a sanity run checks that the copy's ``mixreg`` and, for a mutant of a study, ``experiments``,
mutated, are the ones imported).  Each of them
must FAIL: the run must exit with code 1 and its summary must list every named test as failed
(so no ``-x`` here: with it, only the first failure would be seen).  All of them must PASS on an
unmutated copy (one run, with ``-x``).  One pytest process per copy (its start-up, about 3 s of
CPU, is most of the cost); ``--jobs`` copies run at a time.

Mutants (``m`` clients, ``k`` models, ``gamma`` the step size; the driver's option I update is
``theta_j -= (gamma / m) sum_{i: j_hat_i = j} grad F_i(theta_j)``):

=================  ==========================================================================
mutant             change
=================  ==========================================================================
true-labels        (a) identity estimate replaced by the true labels after the argmin
random-3pct        (b) 3% of the clients moved to a uniformly drawn wrong model every round
                   (a fixed-seed generator at module level of the mutated driver)
step-x1.25         (c) step ``1.25 gamma / m``
step-x0.75         (c) step ``0.75 gamma / m``
cluster-size       (d) ``gamma / |S_j|`` (estimated cluster size) instead of ``gamma / m``
identity-gradient  (e, ours) the gradient computed on the identity subset of the round instead
                   of the fresh gradient subset (the resampling scheme broken)
=================  ==========================================================================

Which tests fail on each mutant (``x``: fails, checked by every run of this script; ``.``:
passes, from a ``--survey`` run).  Theorem-level tests, in tests/algorithms/test_ifca_clustering_step.py
unless marked: RATE ``test_driver_misclustering_rate_matches_the_exact_law`` (the driver's
misclustering rate against the exact law of the two residual sums), MEAN
``test_theorem1_one_round_mean_with_misclustering`` (Theorem 1's round in expectation, the
misclustering term at its exact value), FACTOR
``test_one_round_factor_is_one_minus_two_gamma_p_lambda`` (the exact one-round factor), THM1
``tests/theory/test_theory_ifca.py::test_theorem1_one_round_contraction``.  Reference-level: ARGMIN
``test_decoded_identities_are_the_argmin_on_the_identity_subset`` (identities and weights read
off the update against a plain argmin), REF and REF-RS ``tests/algorithms/test_algorithms_ifca.py::``
``test_matches_reference`` and ``test_resampled_run_matches_reference``.

=================  ====  ====  ======  ====  ======  ===  ======
mutant             RATE  MEAN  FACTOR  THM1  ARGMIN  REF  REF-RS
=================  ====  ====  ======  ====  ======  ===  ======
true-labels         x     x      .      .      x      x     .
random-3pct         x     x      x      ~      x      x     ~
step-x1.25          .     x      x      .      x      x     x
step-x0.75          .     x      x      ~      x      x     x
cluster-size        .     x      x      x      x      x     x
identity-gradient   x     x      x      .      x      .     x
=================  ====  ====  ======  ====  ======  ===  ======

By design RATE does not see a wrong step or normalisation (its decoding of the identities is
scale-free), so that its failure points at the clustering step.  Of the theorem-level tests,
only RATE and MEAN catch true labels (a contraction bound cannot: true labels only help).  THM1
(a regime without misclustering) misses true labels and a step 25% too large (with c1 = 3/8 the
one-round factor stays below 1/2 for c1 in about [0.35, 0.56]).  ``~``: failed in the runs we
made, but not relied upon.  For random-3pct, whether the mis-assignments hit the test's few
client-rounds depends on the state of the mutant's module-level generator when the test runs,
i.e. on the tests run before it in the same process: THM1 failed in both orders we tried (one
wrong worker moves a model by about (2 c1 / (p m)) ||theta_j - theta*_l||, more than the
bound's slack when p m is small); REF-RS sees only 24 client-rounds (m = 6, T = 4).  For
step-x0.75 (c1 = 0.28, a worst one-round factor just above 1/2), whether THM1 fails depends on
the examples Hypothesis draws, which change with the test's source (derandomised draws are
seeded by a digest of the test function): it failed before the test's docstring was edited,
and passed after.  REF
starts far from the truth, where misclustering is common; REF-RS starts close, where it is not,
so it misses true labels.

FedX mutants (Phase 2 of Su-Xu-Yang, ``mixreg/algorithms/fedx.py``; the server step is
``theta_l += sum_{i: z_i = l} w_i K_i (y_i - X_i theta_l)`` with ``w_i = n_i / N``):

=====================  ======================================================================
mutant                 change
=====================  ======================================================================
fedx-uniform-weights   ``w_i = 1 / M`` (the operators built unweighted, divided by ``M``)
fedx-renormalised      ``w_i = n_i / N_l``, ``N_l`` the data of the clients that chose model
                       ``l`` this round (renormalisation within a cluster)
fedx-zero-step         the server step multiplied by 0 (a driver that does not move)
fedx-first-sample      the ML decoder (``mixreg/kernels.py``, ``decode_and_residuals``) sums the
                       squared residuals over the client's first sample only
=====================  ======================================================================

Which tests fail (``x``: checked by every run; ``.``: passes, from a ``--survey`` run).  In
tests/algorithms/test_fedx_phase2_teeth.py: ROUND ``test_one_round_with_true_labels_is_the_n_over_N_``
``weighted_average`` (one round against plain NumPy), RHO ``test_per_round_factor_is_the_``
``spectral_radius_of_the_data_weighted_map``, DECODE ``test_the_decoder_uses_all_of_a_clients_``
``data``, DECR ``test_error_to_the_fixed_point_strictly_decreases_near_the_truth``; PROP
``tests/theory/test_theory_sxy.py::test_phase2_contracts_to_a_floor`` (the Phase-2 property test).
Reference-level: REF ``tests/algorithms/test_algorithms_fedx.py::test_matches_reference_with_single_``
``point_clients``.

====================  =====  ===  ======  ====  ====  ===
mutant                ROUND  RHO  DECODE  DECR  PROP  REF
====================  =====  ===  ======  ====  ====  ===
fedx-uniform-weights    x     x     .      .     .    x
fedx-renormalised       x     x     x      .     x    x
fedx-zero-step          x     x     x      x     x    x
fedx-first-sample       x     x     x      .     x    x
====================  =====  ===  ======  ====  ====  ===

Uniform weights are seen only by the exact tests (ROUND, RHO, REF): with sizes drawn
independently of the labels, a cluster's client fraction and data fraction agree on average, so
no bound with slack sees them.  PROP catches renormalisation by its lower bound
``||e_{l,t+1}|| >= sigma_min(A_l) ||e_{l,t}|| - 2 floor`` (renormalised, the map is about
``I - eta H_l``, nearly 0 at ``eta = 1``), a zero step by requiring the error to fall below a
quarter of epsilon, and first-sample decoding by the misclustering it causes.  DECR misses
renormalisation and first-sample decoding (both still contract near the truth).

Known-label least-squares theory under a feature covariance (``--family ls``; the formulas
``E||theta_LS - theta*||^2 = sigma^2 tr(Sigma^-1) / (N - d - 1)`` and its variance, from the
inverse-Wishart moments), each caught by a Monte Carlo or closed-form test:

====================  =========================================================================
mutant                change
====================  =========================================================================
ls-sigma-not-inverse  ``mixreg/theory/_ls_oracle.py``: the traces of Sigma in place of Sigma^-1
                      (for AR(1) tr Sigma = d: the identity's value); MOMENTS
                      ``tests/theory/test_theory_ls_oracle.py::test_mean_and_variance_match_``
                      ``simulation_under_ar1_and_not_the_identity_formula`` fails
ls-floor-identity     ``mixreg/metrics.py``: the floor's ``tr(Sigma^-1)`` replaced by ``d`` (the
                      covariance ignored); FLOOR ``tests/test_metrics.py::test_oracle_floor_with_``
                      ``a_covariance_uses_the_trace_of_its_inverse`` fails
====================  =========================================================================

Other families live in their own files, one per family: every ``paper_checks/mutants_<family>.py``
is collected (imported as the top-level module ``mutants_<family>``, ``paper_checks/`` put on
``sys.path``) and joins ``MUTANTS`` and ``FAMILIES``.  Such a file defines::

    from ifca_mutants import MARK, Mutant

    FAMILY = "<family>"                  # the file's name after ``mutants_``
    THEOREM_LEVEL = ("tests/...::test_...",)   # the family's theorem-level tests (node ids)
    MUTANTS = (Mutant(name, summary, old, new, caught_by, path="mixreg/..." or "experiments/...",
                      family=FAMILY), ...)
    CANDIDATES = (...)                   # optional: the tests a ``--survey`` runs (default THEOREM_LEVEL)

and documents its mutants and which tests catch each in its own docstring.  Every mutant must
name at least one theorem-level test of its own family; mutant names are unique across families.
A malformed family file stops the import of this module with a message naming the file (so the
default test ``tests/test_mutant_script.py`` fails instead of the mutants being skipped).

The copy takes the working tree as it is (uncommitted changes included).  Numba's on-disk cache
is copied with the package (file times preserved), so the copy does not recompile the kernels
(except those of a mutated ``mixreg/kernels.py``: fedx-first-sample recompiles, about 20 s).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Mutant",
    "Outcome",
    "MUTANTS",
    "IFCA_MUTANTS",
    "FEDX_MUTANTS",
    "LS_MUTANTS",
    "CANDIDATES",
    "FEDX_CANDIDATES",
    "THEOREM_LEVEL",
    "THEOREM_LEVELS",
    "FAMILIES",
    "COPIED",
    "collect_families",
    "check",
    "survey",
    "main",
    "ROOT",
]

logger = logging.getLogger(__name__)

#: The project root (the directory holding ``mixreg/`` and ``tests/``).
ROOT = Path(__file__).resolve().parents[1]
DRIVER = "mixreg/algorithms/ifca.py"
MARK = "# MUTANT"

_T = "tests/algorithms/test_ifca_clustering_step.py::"
RATE = _T + "test_driver_misclustering_rate_matches_the_exact_law"
MEAN = _T + "test_theorem1_one_round_mean_with_misclustering"
FACTOR = _T + "test_one_round_factor_is_one_minus_two_gamma_p_lambda"
ARGMIN = _T + "test_decoded_identities_are_the_argmin_on_the_identity_subset"
THEOREM1 = "tests/theory/test_theory_ifca.py::test_theorem1_one_round_contraction"
REFERENCE = "tests/algorithms/test_algorithms_ifca.py::test_matches_reference"
REFERENCE_RESAMPLED = "tests/algorithms/test_algorithms_ifca.py::test_resampled_run_matches_reference"
IFCA_THEOREM_LEVEL = (RATE, MEAN, FACTOR, THEOREM1)

FEDX_DRIVER = "mixreg/algorithms/fedx.py"
KERNELS = "mixreg/kernels.py"
_F = "tests/algorithms/test_fedx_phase2_teeth.py::"
FX_ROUND = _F + "test_one_round_with_true_labels_is_the_n_over_N_weighted_average"
FX_RHO = _F + "test_per_round_factor_is_the_spectral_radius_of_the_data_weighted_map"
FX_DECODE = _F + "test_the_decoder_uses_all_of_a_clients_data"
FX_DECREASE = _F + "test_error_to_the_fixed_point_strictly_decreases_near_the_truth"
FX_PROPERTY = "tests/theory/test_theory_sxy.py::test_phase2_contracts_to_a_floor"
FX_REFERENCE = "tests/algorithms/test_algorithms_fedx.py::test_matches_reference_with_single_point_clients"
FEDX_THEOREM_LEVEL = (FX_ROUND, FX_RHO, FX_DECODE, FX_DECREASE, FX_PROPERTY)

LS_MOMENTS = ("tests/theory/test_theory_ls_oracle.py::"
              "test_mean_and_variance_match_simulation_under_ar1_and_not_the_identity_formula")
LS_FLOOR = "tests/test_metrics.py::test_oracle_floor_with_a_covariance_uses_the_trace_of_its_inverse"
LS_THEOREM_LEVEL = (LS_MOMENTS, LS_FLOOR)

#: Every test the survey runs against every mutant.
CANDIDATES = (RATE, MEAN, FACTOR, ARGMIN, THEOREM1, REFERENCE, REFERENCE_RESAMPLED)
FEDX_CANDIDATES = (FX_ROUND, FX_RHO, FX_DECODE, FX_DECREASE, FX_PROPERTY, FX_REFERENCE)

_ASSIGN = "kernels.assign_clients(ws.losses, active, assign, best)\n"
_UPDATE = "new = server_step.gradient(th, grad, step, t=t, state=state, rows=rows)\n"


@dataclass(frozen=True)
class Mutant:
    """One exact text replacement in the copy of one file, and the tests that must catch it.

    ``old`` must occur exactly once in ``path`` (relative to the repository root: a file under
    ``mixreg/`` or ``experiments/``); ``append`` is added at the end of the file (helpers of the
    mutant).  ``caught_by`` lists pytest node ids relative to the root.  ``family`` (``"ifca"``,
    ``"fedx"``, ``"ls"`` or a collected ``mutants_<family>.py``'s ``FAMILY``) selects the
    theorem-level tests one of which it must name, and the candidate tests of a survey.
    """

    name: str
    summary: str
    old: str
    new: str
    caught_by: tuple
    append: str = ""
    path: str = DRIVER
    family: str = "ifca"

    def apply(self, root):
        """Apply to the copy under ``root``; raises ``RuntimeError`` if the target text is gone."""
        file = Path(root) / self.path
        text = file.read_text()
        count = text.count(self.old)
        if count != 1:
            raise RuntimeError(
                f"mutant {self.name!r}: the target text {self.old!r} occurs {count} times in {self.path} "
                "(expected exactly once); the driver was refactored, update the mutant"
            )
        file.write_text(text.replace(self.old, self.new) + self.append)


_RANDOM_HELPER = f'''

_MUTANT_RNG = np.random.default_rng(20261123)  {MARK}: fixed seed, module level


def _mutant_misassign(assign, k):  {MARK}: 3% of the participating clients to a wrong model
    if k < 2:
        return
    flip = (_MUTANT_RNG.random(assign.shape) < 0.03) & (assign >= 0)
    assign[flip] = (assign[flip] + _MUTANT_RNG.integers(1, k, size=int(flip.sum()))) % k
'''

_CLUSTER_SIZE = "np.maximum(1, (assign[:, :, None] == np.arange(k)).sum(axis=1))[:, :, None]"

IFCA_MUTANTS = (
    Mutant(
        "true-labels",
        "(a) identity estimate replaced by the true labels",
        _ASSIGN,
        _ASSIGN[:-1] + f"; assign[:, active] = problem.labels[active]  {MARK}\n",
        (RATE, MEAN, ARGMIN, REFERENCE),
    ),
    Mutant(
        "random-3pct",
        "(b) 3% random mis-assignment every round",
        _ASSIGN,
        _ASSIGN[:-1] + f"; _mutant_misassign(assign, k)  {MARK}\n",
        (RATE, MEAN, FACTOR, ARGMIN, REFERENCE),
        append=_RANDOM_HELPER,
    ),
    Mutant(
        "step-x1.25",
        "(c) step size 25% too large",
        _UPDATE,
        f"new = server_step.gradient(th, grad, 1.25 * step, t=t, state=state, rows=rows)  {MARK}\n",
        (MEAN, FACTOR, ARGMIN, REFERENCE, REFERENCE_RESAMPLED),
    ),
    Mutant(
        "step-x0.75",
        "(c) step size 25% too small",
        _UPDATE,
        f"new = server_step.gradient(th, grad, 0.75 * step, t=t, state=state, rows=rows)  {MARK}\n",
        (MEAN, FACTOR, ARGMIN, REFERENCE, REFERENCE_RESAMPLED),
    ),
    Mutant(
        "cluster-size",
        "(d) gradient average divided by the cluster size instead of m",
        _UPDATE,
        f"new = server_step.gradient(th, grad, step * m / {_CLUSTER_SIZE}, t=t, state=state, rows=rows)  {MARK}\n",
        (MEAN, FACTOR, THEOREM1, ARGMIN, REFERENCE, REFERENCE_RESAMPLED),
    ),
    Mutant(
        "identity-gradient",
        "(e) gradient on the identity subset instead of the fresh gradient subset",
        "gX, gY = Xr[2 * t + 1], yr[2 * t + 1][None]\n",
        f"gX, gY = Xr[2 * t], yr[2 * t][None]  {MARK}\n",
        (RATE, MEAN, FACTOR, ARGMIN, REFERENCE_RESAMPLED),
    ),
)

_FX_OPERATORS = "operators = [stacked_update_operators(problem, v, solver, s).astype(problem.dtype) for v in values]\n"
_FX_STEP = "new[g] += kernels.cluster_gradients(P[rows], Y, response[g], chosen[g], k, sign, KT, gb, out)\n"
_FX_DECODER = "for r in range(lo, hi):\n                    e = np.float64(y[r])"

_RENORMALISE_HELPER = f'''

def _mutant_renormalise(assign, sizes, k):  {MARK}: N / N_l, N_l the data that chose model l
    chose = assign[:, :, None] == np.arange(k)  # (B, m, k)
    N_l = (sizes[None, :, None] * chose).sum(axis=1)  # (B, k)
    return (sizes.sum() / np.maximum(N_l, 1))[:, :, None]
'''

FEDX_MUTANTS = (
    Mutant(
        "fedx-uniform-weights",
        "uniform weights w_i = 1/M instead of n_i/N",
        _FX_OPERATORS,
        "operators = [(stacked_update_operators(problem, v, solver, s, weighted=False) / problem.m)"
        f".astype(problem.dtype) for v in values]  {MARK}\n",
        (FX_ROUND, FX_RHO, FX_REFERENCE),
        path=FEDX_DRIVER,
        family="fedx",
    ),
    Mutant(
        "fedx-renormalised",
        "weights renormalised within each (estimated) cluster: n_i / N_l",
        _FX_STEP,
        _FX_STEP[:-1] + f" * _mutant_renormalise(assign[g], problem.sizes, k)  {MARK}\n",
        (FX_ROUND, FX_RHO, FX_DECODE, FX_PROPERTY, FX_REFERENCE),
        append=_RENORMALISE_HELPER,
        path=FEDX_DRIVER,
        family="fedx",
    ),
    Mutant(
        "fedx-zero-step",
        "a driver that does not move: the server step times 0",
        _FX_STEP,
        f"new[g] += 0.0 * kernels.cluster_gradients(P[rows], Y, response[g], chosen[g], k, sign, KT, gb, out)  {MARK}\n",
        (FX_ROUND, FX_RHO, FX_DECODE, FX_DECREASE, FX_PROPERTY, FX_REFERENCE),
        path=FEDX_DRIVER,
        family="fedx",
    ),
    Mutant(
        "fedx-first-sample",
        "the ML decoder reads each client's first sample only",
        _FX_DECODER,
        f"for r in range(lo, lo + 1):  {MARK}\n                    e = np.float64(y[r])",
        (FX_ROUND, FX_RHO, FX_DECODE, FX_PROPERTY, FX_REFERENCE),
        path=KERNELS,
        family="fedx",
    ),
)

LS_MUTANTS = (
    Mutant(
        "ls-sigma-not-inverse",
        "the traces of Sigma in place of those of Sigma^-1 in the LS error moments",
        "    inverse = 1.0 / np.linalg.eigvalsh(covariance)\n",
        f"    inverse = np.linalg.eigvalsh(covariance)  {MARK}\n",
        (LS_MOMENTS,),
        path="mixreg/theory/_ls_oracle.py",
        family="ls",
    ),
    Mutant(
        "ls-floor-identity",
        "the LS floor's tr(Sigma^-1) replaced by d: the covariance ignored",
        "        return np.full(k, np.sum(1.0 / np.linalg.eigvalsh(check_covariance(arr, d, name=\"covariance\"))))\n",
        f"        return np.full(k, float(d))  {MARK}\n",
        (LS_FLOOR,),
        path="mixreg/metrics.py",
        family="ls",
    ),
)

_BUILT_IN = {"ifca": IFCA_MUTANTS, "fedx": FEDX_MUTANTS, "ls": LS_MUTANTS}
_BUILT_IN_LEVELS = {"ifca": IFCA_THEOREM_LEVEL, "fedx": FEDX_THEOREM_LEVEL, "ls": LS_THEOREM_LEVEL}
_BUILT_IN_CANDIDATES = {"ifca": CANDIDATES, "fedx": FEDX_CANDIDATES, "ls": LS_THEOREM_LEVEL}
_FAMILY_FILE = re.compile(r"^mutants_([a-z0-9][a-z0-9_]*)\.py$")


@dataclass(frozen=True)
class Family:
    """One family of mutants: its name, theorem-level tests, mutants, survey candidates, source file."""

    name: str
    theorem_level: tuple
    mutants: tuple
    candidates: tuple
    source: str


def _family_from_module(module, name, source):
    """Validate a ``mutants_<family>`` module's names; raise ``ValueError`` naming ``source``."""
    def fail(message):
        raise ValueError(f"{source}: {message}")

    if getattr(module, "FAMILY", None) != name:
        fail(f"FAMILY must be {name!r} (the file's name after 'mutants_'), not {getattr(module, 'FAMILY', None)!r}")
    level = getattr(module, "THEOREM_LEVEL", None)
    if not isinstance(level, tuple) or not level or not all(isinstance(t, str) and "::" in t for t in level):
        fail("THEOREM_LEVEL must be a non-empty tuple of pytest node ids ('path::test')")
    mutants = getattr(module, "MUTANTS", None)
    if not isinstance(mutants, tuple) or not mutants:
        fail("MUTANTS must be a non-empty tuple of Mutant")
    for mutant in mutants:
        if not all(hasattr(mutant, a) for a in ("name", "old", "new", "caught_by", "path", "family", "apply")):
            fail(f"{mutant!r} is not a Mutant (from ifca_mutants import Mutant)")
        if mutant.family != name:
            fail(f"mutant {mutant.name!r} has family={mutant.family!r}; it must be family=FAMILY ({name!r})")
        if not isinstance(mutant.caught_by, tuple) or not mutant.caught_by:
            fail(f"mutant {mutant.name!r}: caught_by must be a non-empty tuple of node ids")
        if not set(mutant.caught_by) & set(level):
            fail(f"mutant {mutant.name!r} names no theorem-level test of its family (THEOREM_LEVEL)")
        if Path(mutant.path).is_absolute() or ".." in Path(mutant.path).parts:
            fail(f"mutant {mutant.name!r}: path {mutant.path!r} must be relative to the repository root")
    candidates = getattr(module, "CANDIDATES", level)
    if not isinstance(candidates, tuple) or not candidates:
        fail("CANDIDATES, when given, must be a non-empty tuple of node ids")
    return Family(name, level, mutants, candidates, source)


def collect_families(directory=None):
    """Every family: the three of this file, then each ``mutants_<family>.py`` of ``directory``
    (default: this file's directory, ``paper_checks/``) in sorted order, as ``{name: Family}``.

    A family file is imported as the top-level module ``mutants_<family>`` with ``directory`` on
    ``sys.path`` (appended, as pytest imports it from ``paper_checks/``); raises ``ValueError`` for a
    malformed file, a family named twice, or a mutant name already taken.
    """
    directory = Path(directory or Path(__file__).resolve().parent)
    families = {
        name: Family(name, _BUILT_IN_LEVELS[name], mutants, _BUILT_IN_CANDIDATES[name], __file__)
        for name, mutants in _BUILT_IN.items()
    }
    if str(directory) not in sys.path:
        sys.path.append(str(directory))  # last: nothing of paper_checks/ shadows another module
    for file in sorted(directory.glob("mutants_*.py")):
        hit = _FAMILY_FILE.match(file.name)
        if not hit:
            raise ValueError(f"{file}: a family file is named mutants_<family>.py, <family> in [a-z0-9_]")
        name = hit.group(1)
        if name in families:
            raise ValueError(f"{file}: family {name!r} is already defined (in {families[name].source})")
        module = importlib.import_module(f"mutants_{name}")
        if Path(module.__file__).resolve() != file.resolve():
            raise ValueError(f"mutants_{name} was imported from {module.__file__}, not {file}")
        families[name] = _family_from_module(module, name, str(file.relative_to(directory.parent)))
    seen = {}
    for family in families.values():
        for mutant in family.mutants:
            if mutant.name in seen:
                raise ValueError(f"{family.source}: mutant name {mutant.name!r} is taken "
                                 f"(family {seen[mutant.name]!r})")
            seen[mutant.name] = family.name
    return families


# A family file imports this module as ``ifca_mutants``: run as ``python -m paper_checks.ifca_mutants``
# (or imported as ``paper_checks.ifca_mutants``), this module is that one, so that Mutant is one class.
sys.modules.setdefault("ifca_mutants", sys.modules[__name__])

#: ``{family: Family}``: the built-in families and every ``paper_checks/mutants_<family>.py``.
FAMILY_INFO = collect_families()
#: ``{family: mutants}``.
FAMILIES = {name: family.mutants for name, family in FAMILY_INFO.items()}
#: ``{family: theorem-level tests}``: a mutant must name at least one of its own family's.
THEOREM_LEVELS = {name: family.theorem_level for name, family in FAMILY_INFO.items()}
MUTANTS = tuple(m for mutants in FAMILIES.values() for m in mutants)
#: Every family's theorem-level tests (a mutant must name one of its own family's: ``THEOREM_LEVELS``).
THEOREM_LEVEL = tuple(dict.fromkeys(t for level in THEOREM_LEVELS.values() for t in level))


@dataclass(frozen=True)
class Outcome:
    """One pytest run on one copy: exit code, the node ids reported FAILED or ERROR, output tail."""

    mutant: str
    tests: tuple
    returncode: int
    failing: frozenset
    errors: frozenset
    seconds: float
    tail: str

    @property
    def passed(self):
        return self.returncode == 0

    def fails(self, test):
        """``test`` (a node id; its parametrised cases count) failed in this run."""
        return any(n == test or n.startswith(test + "[") for n in self.failing)


#: What a copy holds (those present in the root): the package, every test (``tests/``, the
#: studies' own beside their code, ``paper_checks/``), the committed runs the claim checks read
#: (``figures/``), the pages the documentation tests read, and the pytest configuration.
COPIED = ("mixreg", "tests", "experiments", "paper_checks", "figures", "docs",
          "pyproject.toml", "conftest.py", "README.md")


def _copy_package(root, dest):
    """Copy what the tests need; keep numba's cache (file times preserved), drop bytecode."""
    dest.mkdir(parents=True)
    for name in COPIED:
        source = root / name
        if source.is_dir():
            # mixreg/__pycache__ holds numba's cache (index and data files) beside the bytecode
            skip = ("*.pyc",) if name == "mixreg" else ("__pycache__", ".hypothesis")
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns(*skip))
        elif source.is_file():
            shutil.copy2(source, dest / name)


def _env(copy):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _check_imported_copy(copy, mutant, path=DRIVER):
    """The copy's packages are the ones imported, and its file ``path`` is mutated iff ``mutant``.

    A ``.py`` file is imported as its module (``experiments/<study>/trial.py`` as
    ``experiments.<study>.trial``, with the copy's ``experiments`` package); any other file (a
    style sheet, a data file) is read from the copy.
    """
    top = Path(path).parts[0]
    if path.endswith(".py"):
        module = path[: -len(".py")].replace("/", ".").removesuffix(".__init__")
        code = (
            "import importlib, pathlib\n"
            f"top = importlib.import_module({top!r})\n"
            f"m = importlib.import_module({module!r})\n"
            "print(pathlib.Path(top.__path__[0]).resolve())\n"
            "print(pathlib.Path(m.__file__).resolve())\n"
            f"print(pathlib.Path(m.__file__).read_text().count({MARK!r}))\n"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code], cwd=copy, env=_env(copy), capture_output=True, text=True, timeout=300
        )
        if proc.returncode != 0:
            raise RuntimeError(f"importing the copy failed:\n{proc.stderr}")
        pkg, driver, marks = proc.stdout.split()
    else:
        pkg, driver = Path(copy) / top, Path(copy) / path
        marks = str(driver.read_text().count(MARK))
    copy = Path(copy).resolve()
    if not (Path(pkg).resolve().is_relative_to(copy) and Path(driver).resolve().is_relative_to(copy)):
        raise RuntimeError(f"the tests would import {pkg}, not the copy under {copy}")
    if (int(marks) > 0) != (mutant is not None):
        raise RuntimeError(f"the imported file {driver} has {marks} mutated lines (mutant {mutant})")
    logger.info("%-20s imports %s (%s mutated lines in %s)", mutant or "original", pkg, marks, path)


_SUMMARY = re.compile(r"^(FAILED|ERROR) (\S+)")


def _pytest(copy, tests, label, *, first_failure):
    """``python -m pytest <tests> -q -p no:cacheprovider -rfE [-x]`` in the copy."""
    start = time.perf_counter()
    cmd = [sys.executable, "-m", "pytest", *tests, "-q", "-p", "no:cacheprovider", "-rfE"]
    proc = subprocess.run(
        cmd + (["-x"] if first_failure else []),
        cwd=copy,
        env=_env(copy),
        capture_output=True,
        text=True,
        timeout=3600,
    )
    found = {"FAILED": set(), "ERROR": set()}
    for line in proc.stdout.splitlines():
        hit = _SUMMARY.match(line)
        if hit:
            found[hit.group(1)].add(hit.group(2))
    out = Outcome(
        mutant=label,
        tests=tuple(tests),
        returncode=proc.returncode,
        failing=frozenset(found["FAILED"]),
        errors=frozenset(found["ERROR"]),
        seconds=time.perf_counter() - start,
        tail="\n".join((proc.stdout + proc.stderr).strip().splitlines()[-20:]),
    )
    logger.info("%-20s exit %d, %d failing node(s), %.1f s", label, out.returncode, len(out.failing), out.seconds)
    return out


def _prepared_copy(scratch, mutant, root, paths=None):
    """A copy of ``root`` with ``mutant`` applied (``None``: unmutated; then each of ``paths``,
    default every mutant's, is checked to import from the copy unmutated)."""
    copy = Path(scratch) / ("original" if mutant is None else mutant.name)
    _copy_package(root, copy)
    if mutant is not None:
        mutant.apply(copy)
    if mutant is None:
        for path in sorted(paths or {m.path for m in MUTANTS}):
            _check_imported_copy(copy, None, path)
    else:
        _check_imported_copy(copy, mutant.name, mutant.path)
    return copy


def _candidates(mutant):
    family = FAMILY_INFO.get(mutant.family)
    return family.candidates if family is not None else CANDIDATES


def _select(names):
    if not names:
        return MUTANTS
    known = {m.name: m for m in MUTANTS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown mutant(s) {unknown}; known: {sorted(known)}")
    return tuple(known[n] for n in names)


def _run_all(runs, jobs):
    """``runs``: ``(copy, tests, label, first_failure)`` tuples; outcomes in the same order."""
    with ThreadPoolExecutor(max_workers=max(1, int(jobs))) as pool:
        return list(pool.map(lambda r: _pytest(r[0], r[1], r[2], first_failure=r[3]), runs))


def check(names=None, *, root=ROOT, keep=False, jobs=2):
    """Run the check; return the outcomes (original first), raise ``AssertionError`` listing
    every violation.

    All tests named by the selected mutants must pass on the unmutated copy (one run, ``-x``);
    on each mutant, one run of its tests (without ``-x``) must report every one of them failing.
    Every mutant must name at least one theorem-level test of its own family (``THEOREM_LEVELS``).
    """
    mutants = _select(names)
    for mutant in mutants:
        if not set(mutant.caught_by) & set(THEOREM_LEVELS.get(mutant.family, ())):
            raise AssertionError(f"mutant {mutant.name} names no theorem-level test of its family {mutant.family!r}")
    scratch = tempfile.mkdtemp(prefix="ifca-mutants-")
    try:
        tests = sorted({t for m in mutants for t in m.caught_by})
        paths = {m.path for m in mutants}
        runs = [(_prepared_copy(scratch, None, Path(root), paths), tests, "original", True)]
        runs += [(_prepared_copy(scratch, m, Path(root)), list(m.caught_by), m.name, False) for m in mutants]
        outcomes = _run_all(runs, jobs)
    finally:
        if keep:
            logger.warning("scratch copies kept in %s", scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    problems = []
    base = outcomes[0]
    if not base.passed:
        problems.append(f"the tests do not pass on the unmutated copy (exit {base.returncode}):\n{base.tail}")
    for mutant, out in zip(mutants, outcomes[1:]):
        survivors = [t for t in mutant.caught_by if not out.fails(t)]
        if out.returncode != 1 or out.errors or survivors:
            problems.append(
                f"mutant {mutant.name}: exit {out.returncode}, errors {sorted(out.errors)}, "
                f"not caught by {survivors}:\n{out.tail}"
            )
    if problems:
        raise AssertionError("\n\n".join(problems))
    return outcomes


def survey(names=None, *, tests=None, root=ROOT, jobs=2):
    """Which of ``tests`` (default: the candidates of each mutant's family) fail on each mutant
    (no assertion): ``{mutant: {test: failed}}``, ``None`` for a test whose run errored."""
    with tempfile.TemporaryDirectory(prefix="ifca-mutants-") as scratch:
        mutants = _select(names)
        runs = [
            (_prepared_copy(scratch, m, Path(root)), list(tests or _candidates(m)), m.name, False) for m in mutants
        ]
        outcomes = _run_all(runs, jobs)
    return {
        out.mutant: {
            t: None if any(e.startswith(t.split("::")[0]) for e in out.errors) else out.fails(t)
            for t in out.tests
        }
        for out in outcomes
    }


def main(argv=None):
    """Command line: ``--mutant NAME`` (repeatable), ``--family NAME``, ``--survey``, ``--list``,
    ``--keep``, ``--jobs N``;
    exit status 0 when every mutant is caught and the original passes."""
    parser = argparse.ArgumentParser(
        prog="python -m paper_checks.ifca_mutants", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--mutant", action="append", default=[], help="check only this mutant (repeatable)")
    parser.add_argument("--family", choices=sorted(FAMILIES), help="check only this family's mutants")
    parser.add_argument("--survey", action="store_true", help="run every candidate test on each mutant, report")
    parser.add_argument("--list", action="store_true", help="list every family and mutant with its tests, run nothing")
    parser.add_argument("--keep", action="store_true", help="keep the scratch copies (check mode)")
    parser.add_argument("--jobs", type=int, default=2, help="pytest runs at a time (default 2)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    start = time.perf_counter()
    if args.family:
        args.mutant = args.mutant + [m.name for m in FAMILIES[args.family]]
    if args.list:
        for mutant in _select(args.mutant):
            level = set(THEOREM_LEVELS[mutant.family])
            tests = ", ".join(t.split("::")[-1] + (" (theorem)" if t in level else "") for t in mutant.caught_by)
            print(f"{mutant.family:12s} {mutant.name:24s} {mutant.path}: {tests}")
        return 0
    if args.survey:
        for name, verdicts in survey(args.mutant, jobs=args.jobs).items():
            caught = [t.split("::")[-1] for t, v in verdicts.items() if v]
            errored = [t.split("::")[-1] for t, v in verdicts.items() if v is None]
            errors = f"; ERRORS: {errored}" if errored else ""
            print(f"{name:20s} fails: {', '.join(caught) or 'NOTHING'}{errors}")
        return 0
    try:
        outcomes = check(args.mutant, keep=args.keep, jobs=args.jobs)
    except AssertionError as exc:
        print(f"FAILED:\n{exc}", file=sys.stderr)
        return 1
    for out in outcomes:
        names = [t.split("::")[-1] for t in out.tests]
        verdict = "all pass" if out.passed else "caught by " + ", ".join(names)
        print(f"{out.mutant:20s} {out.seconds:6.1f} s  {verdict}")
    print(f"every mutant caught by each test named for it, all of which pass on the original; "
          f"{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
