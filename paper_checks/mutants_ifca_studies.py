"""Mutants of the four IFCA mechanism studies' summaries and claim checks (error_floor,
ifca_misclustering, ifca_contraction, ifca_basin): each is a one-line bug a real edit could make
to a table or a check, and the fast claim tests beside the study must catch it (collected by
``paper_checks/ifca_mutants.py``; one mutant: ``python -m paper_checks.ifca_mutants --mutant <name>``).

=================================  ===========================================================
mutant                             change
=================================  ===========================================================
ef-prediction-wrong-axis           error_floor: every exponent row reads Corollary 1's exponent
                                   of the m axis (the prediction looked up on the wrong axis)
ef-handpicked-widening             error_floor: the verdicts' widening is a hand-picked 0.05
                                   instead of the one the coverage simulation measures
ef-optimality-wrong-oracle         error_floor: the optimality ratio divides by known-label LS
                                   on n' points instead of on the same 2 T n' points
ef-unique-p-includes-balanced      error_floor: the p < 1/k fit keeps p = 1/k (where the error is
                                   a maximum of k equal errors)
mc-exact-slope-is-chernoff         ifca_misclustering: the exact law's slope column holds the
                                   Chernoff exponent (the asymptotic rate for the grid's slope)
mc-steepening-any-overlap          ifca_misclustering: the steepening observation passes when
                                   the interval merely overlaps the region above I(rho)
ct-half-replaced                   ifca_contraction: the noise bound's 1/2 becomes 3/4
ct-exact-term-own-cluster          ifca_contraction: the exact misclustering term uses the own
                                   cluster's probability instead of the other cluster's
bs-alpha-comparison-flipped        ifca_basin: Assumption 1's scope alpha <= 1/4 flipped to >=
bs-half-inclusive                  ifca_basin: the near-random scope alpha < 1/2 includes 1/2
=================================  ===========================================================
"""

from ifca_mutants import MARK, Mutant  # paper_checks is on sys.path

FAMILY = "ifca_studies"

_EF = "experiments/error_floor/"
_MC = "experiments/ifca_misclustering/"
_CT = "experiments/ifca_contraction/"
_BS = "experiments/ifca_basin/"

_EF_T = _EF + "test_claims.py::"
EF_FLOOR = _EF_T + "test_floor_claim_holds_on_data_with_corollary_1_exponents"
EF_TIGHT = _EF_T + "test_floor_claim_rejects_a_slope_003_off_with_tight_intervals"
EF_ONE_OVER_P = _EF_T + "test_one_over_p_claim_holds_on_data_with_a_one_over_p_factor"
EF_P_HALF = _EF_T + "test_p_half_observation_fits_only_where_the_smallest_cluster_is_unique"
EF_OPTIMALITY = _EF_T + "test_optimality_claim_reads_the_ratio_to_least_squares_on_the_same_data"
MC_LEMMA1 = _MC + "test_claims.py::test_lemma1_holds_on_the_exact_law_with_the_chernoff_exponent_only_recorded"
MC_STEEP = _MC + "test_claims.py::test_steepening_observation_turns_red_on_a_pure_chernoff_law"
CT_ROUND = _CT + "test_claims.py::test_round_claim_holds_inside_the_bound_and_turns_red_above_it"
CT_TERM = _CT + "test_claims.py::test_misclustering_term_uses_the_other_clusters_exact_probability"
BS_HOLD = _BS + "test_claims.py::test_basin_claims_hold_when_every_start_below_one_half_converges"

#: The tests that check the claims themselves (each mutant names at least one).
THEOREM_LEVEL = (EF_FLOOR, EF_TIGHT, EF_ONE_OVER_P, EF_P_HALF, EF_OPTIMALITY, MC_LEMMA1, MC_STEEP, CT_ROUND, CT_TERM, BS_HOLD)

MUTANTS = (
    Mutant("ef-prediction-wrong-axis", "error_floor: the predicted exponent read on the m axis for every axis",
           'predicted = float(prediction.predict([dict(axis=axis)])[0])',
           f'predicted = float(prediction.predict([dict(axis="m")])[0])  {MARK}',
           (EF_FLOOR, EF_ONE_OVER_P), path=_EF + "summary.py", family=FAMILY),
    Mutant("ef-handpicked-widening", "error_floor: a hand-picked widening 0.05 instead of the measured one",
           "    return float(coverage.widening) if np.isfinite(coverage.widening) else 0.0",
           f"    return 0.05  {MARK}",
           (EF_TIGHT,), path=_EF + "summary.py", family=FAMILY),
    Mutant("ef-optimality-wrong-oracle", "error_floor: the optimality ratio over known-label LS on n' points",
           'thm, full = _values(records, "thm_err"), _values(records, "ls_full_err")',
           f'thm, full = _values(records, "thm_err"), _values(records, "ls_err")  {MARK}',
           (EF_OPTIMALITY,), path=_EF + "summary.py", family=FAMILY),
    Mutant("ef-unique-p-includes-balanced", "error_floor: the p < 1/k fit keeps p = 1/k",
           'kept = [r for r in used if r["x"] < 1.0 / config.k - 1e-9]',
           f'kept = [r for r in used if r["x"] <= 1.0 / config.k + 1e-9]  {MARK}',
           (EF_P_HALF,), path=_EF + "summary.py", family=FAMILY),
    Mutant("mc-exact-slope-is-chernoff", "ifca_misclustering: the exact slope column holds the Chernoff exponent",
           "exact_slope=-exact_slope, chernoff=chernoff,",
           f"exact_slope=chernoff, chernoff=chernoff,  {MARK}",
           (MC_LEMMA1,), path=_MC + "summary.py", family=FAMILY),
    Mutant("mc-steepening-any-overlap", "ifca_misclustering: 'above the Chernoff exponent' read as any overlap",
           'above = row["fitted_low"] - widening > row["chernoff"]',
           f'above = row["fitted_high"] + widening > row["chernoff"]  {MARK}',
           (MC_STEEP,), path=_MC + "claims.py", family=FAMILY),
    Mutant("ct-half-replaced", "ifca_contraction: the noise bound's 1/2 replaced by 3/4",
           "noise_violations=int(np.sum(ratio > noise)),",
           f"noise_violations=int(np.sum(ratio > noise + 0.25)),  {MARK}\n                   ",
           (CT_ROUND,), path=_CT + "summary.py", family=FAMILY),
    Mutant("ct-exact-term-own-cluster", "ifca_contraction: the exact term with the own cluster's probability",
           'other = np.array([float(r[f"exact_wrong_{1 - j}"]) for r in recs for j in range(K)])',
           f'other = np.array([float(r[f"exact_wrong_{{j}}"]) for r in recs for j in range(K)])  {MARK}',
           (CT_TERM,), path=_CT + "summary.py", family=FAMILY),
    Mutant("bs-alpha-comparison-flipped", "ifca_basin: Assumption 1's scope alpha <= 1/4 flipped",
           'rows = [r for r in run.tables["rates"] if r["alpha"] <= 0.25 + 1e-12]',
           f'rows = [r for r in run.tables["rates"] if r["alpha"] >= 0.25 - 1e-12]  {MARK}',
           (BS_HOLD,), path=_BS + "claims.py", family=FAMILY),
    Mutant("bs-half-inclusive", "ifca_basin: the near-random scope alpha < 1/2 includes alpha = 1/2",
           'rows = [r for r in run.tables["rates"] if r["k"] == k and r["alpha"] < 0.5 - 1e-12]',
           f'rows = [r for r in run.tables["rates"] if r["k"] == k and r["alpha"] <= 0.5 + 1e-12]  {MARK}',
           (BS_HOLD,), path=_BS + "claims.py", family=FAMILY),
)
