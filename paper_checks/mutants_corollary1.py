"""Mutants of the Corollary 1 study (``experiments/ifca_corollary1``): one per claim, each a one-line
change a real bug would make, each caught by a fast test beside the study.

=======================  ===================================================================  ====================
mutant                   change                                                               claim
=======================  ===================================================================  ====================
cor1-step-halved         the run's step ``c1 / (2 p)`` instead of Theorem 1's ``c1 / p``      ifca-cor1-rounds
                         (the distance then falls by about 5/8 a round: more than T rounds)
cor1-trend-sign          the Cochran-Armitage statistic's sign flipped (a falling failure     ifca-cor1-success-vs-m
                         proportion read as a rising one)
cor1-known-label-step    the known-label run's step ``gamma`` over its ``m_j`` clients        ifca-cor1-exponential-term
                         instead of ``gamma m_j / m`` (IFCA divides by the total m): the
                         floor the excess error is measured from is wrong
cor1-lemma2-noise-norm   ``||X^T eps|| / (sigma sqrt(N))`` instead of ``sigma sqrt(N d)``     ifca-lemma2
=======================  ===================================================================  ====================
"""

from ifca_mutants import MARK, Mutant  # paper_checks is on sys.path

FAMILY = "corollary1"

_TESTS = "experiments/ifca_corollary1/test_trial.py::"
_TRIAL = "experiments/ifca_corollary1/trial.py"
_SUMMARY = "experiments/ifca_corollary1/summary.py"

#: The study's tests of the theorem's statements (a survey's candidates).
THEOREM_LEVEL = (
    _TESTS + "test_rounds_part_reaches_every_eps_above_the_floor_within_corollary1s_T",
    _TESTS + "test_cochran_armitage_matches_the_hand_computation",
    _TESTS + "test_known_label_run_contracts_by_one_minus_two_c1",
    _TESTS + "test_lemma2_draw_is_exact_on_an_orthogonal_design_and_unbiased_in_the_noise",
)

MUTANTS = (
    Mutant("cor1-step-halved", "the run's step c1 / (2p) instead of c1 / p",
           "gamma = ifca_step_size(p, c1=spec.c1)", f"gamma = ifca_step_size(p, c1=spec.c1 / 2)  {MARK}",
           (THEOREM_LEVEL[0],), path=_TRIAL, family=FAMILY),
    Mutant("cor1-trend-sign", "the Cochran-Armitage statistic's sign flipped",
           "stat = float(np.sum(s * (e - n * pbar)))", f"stat = float(np.sum(s * (n * pbar - e)))  {MARK}",
           (THEOREM_LEVEL[1],), path=_SUMMARY, family=FAMILY),
    Mutant("cor1-known-label-step", "the known-label run's step not rescaled by m_j / m",
           "step * clients.size / problem.m, n_rounds=n_rounds, resample=True,",
           f"step, n_rounds=n_rounds, resample=True,  {MARK}",
           (THEOREM_LEVEL[2],), path=_TRIAL, family=FAMILY),
    Mutant("cor1-lemma2-noise-norm", "||X^T eps|| normalised by sigma sqrt(N) instead of sigma sqrt(N d)",
           "(sigma * math.sqrt(N * d)))", f"(sigma * math.sqrt(N)))  {MARK}",
           (THEOREM_LEVEL[3],), path=_TRIAL, family=FAMILY),
)
