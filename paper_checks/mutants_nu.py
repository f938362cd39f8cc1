"""Mutants of the nu-terms study's claims (``experiments/two_phase_nu/claims.py``): the constants'
region of Su-Xu-Yang's nu, the sign-pattern bound of the proof device, and the exponents the
observation reads.  Each is a one-line change a real bug could make; the fast tests beside the
study (``experiments/two_phase_nu/test_constants.py``) catch it.

=======================  ==================================================================
mutant                   change
=======================  ==================================================================
nu-chi2-dropped          nu's uniform deviation without its (chi2(w) + 1) factor on the grid
nu-wrong-sweep-interval  every sweep's prediction compared with the M-at-fixed-n_i interval
nu-joint-level-95        each sweep at 95% in the joint test (no Bonferroni over five)
nu-bootstrap-uncentred   the bootstrap slopes from uncentred log x (not least squares)
nu-vc-bound-power        the sign-pattern bound (50 D m / N)^N without its power N
nu-x-of-M-sweeps         the M sweeps' x read as N (constant along M at fixed N)
=======================  ==================================================================
"""

from ifca_mutants import MARK, Mutant  # paper_checks is on sys.path

FAMILY = "nu"

_T = "experiments/two_phase_nu/test_constants.py::"
GRID = _T + "test_grid_exponents_are_the_scalar_formulas"
TRUTH = _T + "test_region_holds_the_constants_the_data_were_drawn_with"
BONFERRONI = _T + "test_joint_intervals_are_bonferroni_over_the_sweeps"
BOOTSTRAP = _T + "test_bootstrap_replicates_are_fit_slopes"
SIGNS = _T + "test_sign_patterns_stay_under_the_milnor_thom_bound"
VC_CLAIM = _T + "test_the_proof_device_claim_holds_and_can_fail"
FLOOR_CLAIM = _T + "test_the_floor_claim_reads_the_region"
SHAPE = _T + "test_the_data_shape_observation_on_data_of_that_shape_and_on_the_bound"

#: The tests that check the theorem's statements themselves: the region on data drawn from the
#: bound (and the claim's verdict on it), nu on the grid against the theorem's formula, the joint
#: test's coverage (Bonferroni over the sweeps), the proof device's bound.
THEOREM_LEVEL = (TRUTH, FLOOR_CLAIM, GRID, BONFERRONI, SIGNS)

_THEORY = "mixreg/theory/_sxy_nu.py"
_SUMMARY = "experiments/two_phase_nu/summary.py"

MUTANTS = (
    Mutant(
        "nu-chi2-dropped",
        "nu's uniform deviation on the constants' grid without its (chi2(w) + 1) factor",
        "    nu2 = C4 * np.sqrt(d * k * np.log(k) / n.size * (chi2 + 1.0))\n",
        f"    nu2 = C4 * np.sqrt(d * k * np.log(k) / n.size)  {MARK}\n",
        (GRID, TRUTH),
        path=_THEORY,
        family=FAMILY,
    ),
    Mutant(
        "nu-wrong-sweep-interval",
        "every sweep's predicted exponent compared with the interval of the M-at-fixed-n_i sweep",
        "                fit = joint[axis, m]\n",
        f'                fit = joint["M_fixed_n", m]  {MARK}\n',
        (TRUTH, FLOOR_CLAIM),
        path=_SUMMARY,
        family=FAMILY,
    ),
    Mutant(
        "nu-joint-level-95",
        "each sweep's interval at 95% in the joint test instead of 1 - 0.05/5",
        "JOINT_LEVEL = 1 - 0.05 / 5\n",
        f"JOINT_LEVEL = 0.95  {MARK}\n",
        (BONFERRONI,),
        path=_SUMMARY,
        family=FAMILY,
    ),
    Mutant(
        "nu-bootstrap-uncentred",
        "the bootstrap replicates' slopes from the uncentred log x",
        "        boots = np.log(medians[:, ok]) @ centred / float(centred @ centred)\n",
        f"        boots = np.log(medians[:, ok]) @ u[ok] / float(centred @ centred)  {MARK}\n",
        (BOOTSTRAP, TRUTH),
        path=_SUMMARY,
        family=FAMILY,
    ),
    Mutant(
        "nu-vc-bound-power",
        "the sign-pattern bound (50 D m / N)^N without its power N",
        "    return float(n_vars * np.log10(50.0 * degree * m / n_vars))\n",
        f"    return float(np.log10(50.0 * degree * m / n_vars))  {MARK}\n",
        (SIGNS, VC_CLAIM),
        path=_THEORY,
        family=FAMILY,
    ),
    Mutant(
        "nu-x-of-M-sweeps",
        "the M sweeps' coordinate read as N (constant along M at fixed N)",
        "        return float(design.M)\n",
        f"        return float(design.N)  {MARK}\n",
        (TRUTH, SHAPE),
        path=_SUMMARY,
        family=FAMILY,
    ),
)
