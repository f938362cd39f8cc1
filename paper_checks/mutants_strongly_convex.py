"""Mutants of the strongly convex study (IFCA, Theorem 2 and Lemma 3; ``experiments/ifca_strongly_convex``).

Each is a one-line change a real bug would make, in the study's trial, its registered
predictions or its theory (:mod:`mixreg.theory._ifca_sc`), and each is caught by a fast test of
``experiments/ifca_strongly_convex/`` that checks the claim named:

========================  ===================  ===========================================================
mutant                    claim                what breaks
========================  ===================  ===========================================================
sc-step-x2                ifca-thm2-factor     the trial's step 2/L instead of Theorem 2's 1/L (a loss
                                               without the squared loss's factor 2): the distance after
                                               the window is far below the exact second moments'
sc-factor-kappa-inverted  ifca-thm2-factor     Theorem 2's factor with lambda and L swapped
                                               (1 - p L / (8 lambda)): the measured factor lies above it
sc-rounds-kappa-inverted  ifca-cor2-rounds     Theorem 2's T with lambda and L swapped: runs need more
                                               rounds than that T
sc-half-data              ifca-thm2-floor      the trial draws T n' points per worker instead of 2 T n'
                                               (each round's subsets hold n'/2): the final mean square
                                               is twice the exact one
sc-pair-without-sigma     ifca-lemma3          the exact misclustering probability in the identity
                                               geometry instead of Sigma's: the measured rate differs
sc-variance-missing-2     ifca-lemma3          Assumption 4's eta^2 without the chi-square's 2: the
                                               Monte Carlo variance of the loss differs
========================  ===================  ===========================================================

    python -m paper_checks.ifca_mutants --mutant sc-step-x2
"""

from ifca_mutants import MARK, Mutant  # paper_checks is on sys.path

FAMILY = "strongly_convex"

_TESTS = "experiments/ifca_strongly_convex/"
FACTOR = _TESTS + "test_checks.py::test_factor_is_within_theorem2_bound_and_equals_the_exact_second_moments"
ROUNDS = _TESTS + "test_checks.py::test_rounds_are_within_theorem2_T_and_grow_with_kappa_over_p"
FLOOR = _TESTS + "test_checks.py::test_final_error_exponents_and_the_exact_floor"
LEMMA3 = _TESTS + "test_checks.py::test_lemma3_bounds_hold_and_the_measured_rate_is_the_exact_probability"
VARIANCE = _TESTS + "test_trial.py::test_squared_loss_variance_is_the_monte_carlo_variance"

#: The tests that check the claims themselves.
THEOREM_LEVEL = (FACTOR, ROUNDS, FLOOR, LEMMA3, VARIANCE)

_TRIAL = "experiments/ifca_strongly_convex/trial.py"
_SUMMARY = "experiments/ifca_strongly_convex/summary.py"
_THEORY = "mixreg/theory/_ifca_sc.py"

MUTANTS = (
    Mutant("sc-step-x2", "the trial's step 2/L instead of Theorem 2's 1/L",
           "step = 1.0 / L  # Theorem 2's step size", f"step = 2.0 / L  {MARK}",
           (FACTOR,), path=_TRIAL, family=FAMILY),
    Mutant("sc-factor-kappa-inverted", "Theorem 2's factor 1 - p L / (8 lambda) (lambda and L swapped)",
           'return 1.0 - cell["p"] / (c * cell["kappa"])', f'return 1.0 - cell["p"] * cell["kappa"] / c  {MARK}',
           (FACTOR,), path=_SUMMARY, family=FAMILY),
    Mutant("sc-rounds-kappa-inverted", "Theorem 2's T with lambda and L swapped",
           'return c * cell["kappa"] / cell["p"] * math.log(cell["delta"] / (2.0 * cell["eps"]))',
           f'return c / (cell["kappa"] * cell["p"]) * math.log(cell["delta"] / (2.0 * cell["eps"]))  {MARK}',
           (ROUNDS,), path=_SUMMARY, family=FAMILY),
    Mutant("sc-half-data", "T n' points per worker instead of 2 T n' (each subset n'/2)",
           "labels, 2 * T * n_prime, pb.sigma, rng=rng,\n",
           f"labels, T * n_prime, pb.sigma, rng=rng,  {MARK}\n",
           (FLOOR,), path=_TRIAL, family=FAMILY),
    Mutant("sc-pair-without-sigma", "the exact misclustering probability in the identity geometry",
           "root = (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T", f"root = np.eye(star.size)  {MARK}",
           (LEMMA3,), path=_THEORY, family=FAMILY),
    Mutant("sc-variance-missing-2", "Assumption 4's eta^2 = s^4 instead of 2 s^4",
           "return 2.0 * s2 * s2", f"return s2 * s2  {MARK}",
           (VARIANCE,), path=_THEORY, family=FAMILY),
)
