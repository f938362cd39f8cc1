"""Mutants of the statistics (``mixreg/stats.py``, a bound's verdict in ``mixreg/predictions.py``) and
of the Fig. 3 studies' claim checks.

Each mutant is a one-line change a real bug would make; ``caught_by`` are fast tests that fail
on it and pass on the original.  Collected by ``paper_checks/ifca_mutants.py``
(``python -m paper_checks.ifca_mutants --mutant <name>``).
"""

from ifca_mutants import MARK, Mutant

FAMILY = "stats"

_PAIRED = "tests/test_stats_paired.py"
_R = "experiments/success_vs_R/test_success_vs_R.py"
_R_CLAIMS = "experiments/success_vs_R/test_claims.py"
_MN_CLAIMS = "experiments/success_vs_mn/test_claims.py"

#: The tests that state the laws: the paired tests' (exact binomial, enumerated permutations, Cochran's
#: formula, textbook numbers), the Wilson interval's (scipy), and what each claim's check must decide
#: (a paired test on paired draws, a one-cell crossing undetermined, a drop only outside the intervals).
THEOREM_LEVEL = (
    f"{_PAIRED}::test_mcnemar_agresti_presidential_approval",
    f"{_PAIRED}::test_mcnemar_is_the_exact_binomial_test_on_the_discordant_pairs",
    f"{_PAIRED}::test_mlxtend_cochran_q_example",
    f"{_PAIRED}::test_cochran_exact_p_is_the_permutation_distribution_enumerated",
    f"{_PAIRED}::test_cochran_q_formula_and_invariances",
    "tests/test_stats.py::test_wilson_matches_scipy[3-10]",
    f"{_R}::test_paired_levels_get_cochrans_q_and_the_table_says_so",
    f"{_R}::test_a_crossing_on_one_grid_cell_leaves_the_collapse_undetermined",
    f"{_R_CLAIMS}::test_fig3_r_contradicted_only_by_a_significant_drop",
    f"{_R_CLAIMS}::test_restarts_needs_the_interval_above_the_level",
    f"{_R_CLAIMS}::test_sigma_effect_reads_the_pooled_paired_test",
    f"{_R_CLAIMS}::test_collapse_undetermined_is_not_tested",
    f"{_MN_CLAIMS}::test_fig3_mn_contradicted_only_by_a_significant_drop_in_m_or_n",
    f"{_MN_CLAIMS}::test_impossible_region_counts_only_the_deep_cells",
    "tests/test_predictions.py::test_a_bound_exponent_is_not_tight_only_wholly_on_its_slack_side",
)

MUTANTS = (
    Mutant("stats-mcnemar-total-n",
           "exact McNemar's binomial over every trial instead of the discordant pairs",
           "float(binom.cdf(min(only_first, only_second), discordant, 0.5))) if discordant else 1.0\n",
           f"float(binom.cdf(min(only_first, only_second), x.shape[0], 0.5))) if discordant else 1.0  {MARK}\n",
           (f"{_PAIRED}::test_mcnemar_agresti_presidential_approval",
            f"{_PAIRED}::test_mcnemar_ignores_the_total_number_of_trials"),
           path="mixreg/stats.py", family=FAMILY),
    Mutant("stats-cochran-denominator",
           "Cochran's Q divided by (k - 1) N instead of k N - sum_i R_i^2",
           "/ (k * total - row_squares)\n",
           f"/ (k * total - total)  {MARK}\n",
           (f"{_PAIRED}::test_mlxtend_cochran_q_example", f"{_PAIRED}::test_cochran_q_formula_and_invariances"),
           path="mixreg/stats.py", family=FAMILY),
    Mutant("stats-cochran-exact-strict-tail",
           "Cochran's exact p-value counts only arrangements strictly more extreme than the observed one",
           "tail = math.fsum(prob for state, prob in states.items() if sum(v * v for v in state) >= observed)\n",
           f"tail = math.fsum(prob for state, prob in states.items() if sum(v * v for v in state) > observed)  {MARK}\n",
           (f"{_PAIRED}::test_cochran_exact_p_is_the_permutation_distribution_enumerated",
            f"{_PAIRED}::test_cochran_with_two_levels_is_mcnemar"),
           path="mixreg/stats.py", family=FAMILY),
    Mutant("stats-wilson-z",
           "the Wilson interval's z is the one-sided quantile norm.ppf(level) (1.64 at 95%) instead of 1.96",
           "z = norm.ppf(0.5 + level / 2.0)\n",
           f"z = norm.ppf(level)  {MARK}\n",
           ("tests/test_stats.py::test_wilson_matches_scipy[3-10]",
            f"{_R_CLAIMS}::test_restarts_needs_the_interval_above_the_level",
            f"{_R_CLAIMS}::test_fig3_r_contradicted_only_by_a_significant_drop",
            f"{_MN_CLAIMS}::test_fig3_mn_contradicted_only_by_a_significant_drop_in_m_or_n"),
           path="mixreg/stats.py", family=FAMILY),
    Mutant("stats-paired-as-unpaired",
           "success_vs_R tests the sigma levels of one draw as independent samples again",
           "paired = config.shared_draws and len(sigmas) >= 2\n",
           f"paired = False  {MARK}\n",
           (f"{_R}::test_paired_levels_get_cochrans_q_and_the_table_says_so",),
           path="experiments/success_vs_R/summary.py", family=FAMILY),
    Mutant("stats-one-cell-crossing-consistent",
           "a crossing resting on one grid cell near 1/2 still lets a collapse be 'consistent'",
           "ONE_CELL = 1\n",
           f"ONE_CELL = -1  {MARK}\n",
           (f"{_R}::test_a_crossing_on_one_grid_cell_leaves_the_collapse_undetermined",),
           path="experiments/success_vs_R/summary.py", family=FAMILY),
    Mutant("stats-monotone-no-lower-bound",
           "the monotonicity check compares the later cell's upper end with the earlier's upper end, never "
           "looking at the lower bound (any drop of the rate counts)",
           'if late[f"{flag}_high"] < early[f"{flag}_low"]:\n',
           'if late[f"{flag}_high"] < early[f"{flag}_high"]:  ' + MARK + '\n',
           (f"{_R_CLAIMS}::test_fig3_r_contradicted_only_by_a_significant_drop",
            f"{_MN_CLAIMS}::test_fig3_mn_contradicted_only_by_a_significant_drop_in_m_or_n"),
           path="experiments/success_vs_R/claims.py", family=FAMILY),
    Mutant("stats-restarts-upper-end",
           "'reaches success' read off the Wilson interval's upper end instead of its lower end",
           "if low >= SUCCESS_LEVEL:\n",
           f"if high >= SUCCESS_LEVEL:  {MARK}\n",
           (f"{_R_CLAIMS}::test_restarts_needs_the_interval_above_the_level",),
           path="experiments/success_vs_R/claims.py", family=FAMILY),
    Mutant("stats-sigma-effect-alpha",
           "the sigma-effect check never looks at the p-value (any statistic >= 0 is 'consistent')",
           '"consistent" if row["p_value"] >= ALPHA else "contradicts", numbers,\n',
           '"consistent" if row["value"] >= 0 else "contradicts", numbers,  ' + MARK + '\n',
           (f"{_R_CLAIMS}::test_sigma_effect_reads_the_pooled_paired_test",),
           path="experiments/success_vs_R/claims.py", family=FAMILY),
    Mutant("stats-collapse-undetermined-as-consistent",
           "an undetermined collapse or held-out fit counted as consistent",
           'if row["verdict"].startswith("consistent"):\n',
           'if not row["verdict"].startswith(("does not collapse", "contradicts")):  ' + MARK + '\n',
           (f"{_R_CLAIMS}::test_collapse_undetermined_is_not_tested",),
           path="experiments/success_vs_R/claims.py", family=FAMILY),
    Mutant("stats-impossible-region-edge",
           "the zero-success region taken as every LS-unlikely cell, the edge cells (registered probability "
           ">= 0.01) included",
           'if row["ls_unlikely"] and row["oracle_success_probability"] < IMPOSSIBLE}\n',
           'if row["ls_unlikely"]}  ' + MARK + '\n',
           (f"{_MN_CLAIMS}::test_impossible_region_counts_only_the_deep_cells",),
           path="experiments/success_vs_mn/claims.py", family=FAMILY),
    Mutant("stats-bound-slack-side-flipped",
           "a bound's exponent read as 'not tight' on the wrong side: rounds growing faster than a sufficient T "
           "would pass as a loose bound",
           "loose = high + tolerance < predicted if slack == \"below\" else low - tolerance > predicted\n",
           f"loose = low - tolerance > predicted if slack == \"below\" else high + tolerance < predicted  {MARK}\n",
           ("tests/test_predictions.py::test_a_bound_exponent_is_not_tight_only_wholly_on_its_slack_side",),
           path="mixreg/predictions.py", family=FAMILY),
)
