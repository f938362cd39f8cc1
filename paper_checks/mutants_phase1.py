"""Mutants of Su-Xu-Yang's Phase 1 (federated moment descent) and of the two Su-Xu-Yang studies'
ablation, for the mutation script (``python -m paper_checks.ifca_mutants --family phase1``).

Each mutant is a one-line change a real bug could make; ``caught_by`` lists the fast default-suite
tests that fail on it (and pass on the original).  The claims that name them:

====================  =========================================  =====================================
mutant                change                                     claim
====================  =========================================  =====================================
fmd-moment-sign       eps = (<x, theta> - y) x: the anchor        sxy-phase1-constant-accuracy
                      moves away from its truth
fmd-step-lambda       eta = c lambda_1 instead of                 sxy-phase1-rounds-o1
                      c sqrt(lambda_1): the step's scale lost
fmd-anchor-pairs-     each anchor uses n_A // 4 pairs under       sxy-phase1-na
halved                reuse (half its points)
fmd-clients-eighth    S_t holds 1/8 of the clients it may         sxy-phase1-clients
                      (the server pools fewer pairs)
split-reuses-all      the ablation's "no reuse" run decodes and    sxy-data-reuse
                      updates on every point every round
====================  =========================================  =====================================

(``sxy-phase2-factor`` names the FedX family's ``fedx-renormalised``: weights renormalised within a
cluster make the per-round factor independent of p_min.)
"""

from ifca_mutants import MARK, Mutant

FAMILY = "phase1"

MD = "mixreg/algorithms/moment_descent.py"
TWO_PHASE_TRIAL = "experiments/two_phase/trial.py"

_MD_TESTS = "tests/algorithms/test_algorithms_moment_descent.py::"
_P1 = "experiments/two_phase_phase1/test_trial.py::"
_TP = "experiments/two_phase/test_two_phase.py::"

ONE_STEP = _MD_TESTS + "test_one_step_decreases_the_residual_variance_of_every_anchor"
FROM_ZERO = _MD_TESTS + "test_phase1_from_zero_reaches_epsilon"
FAR_START = _P1 + "test_phase1_from_5_delta_reaches_constant_accuracy_in_few_rounds"
ALL_PAIRS = _P1 + "test_part_c_runs_phase1_with_all_clients_and_all_anchor_pairs"
SPLIT = _TP + "test_phase2_split_uses_each_point_once_and_ends_further_than_reuse"

#: The tests that check Phase 1's mathematics or the study's claims (one of them must catch each mutant).
THEOREM_LEVEL = (ONE_STEP, FROM_ZERO, FAR_START, ALL_PAIRS, SPLIT)

MUTANTS = (
    Mutant(
        "fmd-moment-sign",
        "residual moment eps = (<x, theta> - y) x: the first-moment sign rule then steps away from theta*",
        "    return resid[..., None] * X\n",
        f"    return -resid[..., None] * X  {MARK}\n",
        (ONE_STEP, FAR_START),
        path=MD,
        family=FAMILY,
    ),
    Mutant(
        "fmd-step-lambda",
        "step eta = c lambda_1(Z) instead of c sqrt(lambda_1(Z)): too long far away, too short near theta*",
        "            eta = c * np.sqrt(np.maximum(lam, 0.0))\n",
        f"            eta = c * np.maximum(lam, 0.0)  {MARK}\n",
        (ONE_STEP, FAR_START),
        path=MD,
        family=FAMILY,
    ),
    Mutant(
        "fmd-anchor-pairs-halved",
        "under anchor reuse each anchor uses n_A // 4 pairs (half its points) instead of n_A // 2",
        "        most = int(n_anchor.min()) // 2\n",
        f"        most = int(n_anchor.min()) // 4  {MARK}\n",
        (ALL_PAIRS,),
        path=MD,
        family=FAMILY,
    ),
    Mutant(
        "fmd-clients-eighth",
        "the default S_t holds an eighth of the clients available (the server pools fewer pairs)",
        "        s = available\n",
        f"        s = max(k, available // 8)  {MARK}\n",
        (FROM_ZERO, ALL_PAIRS),
        path=MD,
        family=FAMILY,
    ),
    Mutant(
        "split-reuses-all",
        "the no-reuse ablation's round t decodes and updates on every point (data reused after all)",
        "        rows = np.flatnonzero(rnd == t)  # client after client: rows are stored by client\n",
        f"        rows = np.arange(problem.N)  {MARK}\n",
        (SPLIT,),
        path=TWO_PHASE_TRIAL,
        family=FAMILY,
    ),
)
