"""Mutants of the seed baselines: k-FED, one-shot clustering, PACFL and FeSEM.

    python -m paper_checks.ifca_mutants --family baselines              # check every mutant below
    python -m paper_checks.ifca_mutants --mutant fesem-e-step-argmax    # one of them

Each mutant is a one-line change a real bug would make to the step that defines the baseline in
its paper, in ``mixreg/algorithms/<baseline>.py``; each is caught by fast default tests of
``tests/algorithms/`` (the survey columns below).  The baselines have no theorem of their own in
the two papers: their *theorem-level* tests (``THEOREM_LEVEL``) are those that check the paper's
defining statement of the algorithm directly against an independent computation (Algorithm 2's
step 4 of the IFCA thesis for k-FED, Eqs. 1-3 and line 10 of PACFL, Eqs. 7-8 of FeSEM, step 2 and
the exact answers without noise of one-shot clustering), as opposed to the reference-level tests
that compare the batched driver with a plain loop written from the same algorithm box.

=========================  ===================================================================
mutant                     change (paper, step)
=========================  ===================================================================
kfed-client-labels         k-FED (IFCA thesis, Algorithm 2, step 4): every point takes the
                           server cluster of its client's *first* local centroid instead of its
                           own local group's (clients treated as single-cluster)
kfed-first-restart         k-FED local regressions: restart 0 kept instead of the one of least
                           local residual sum of squares
kfed-unshuffled-start      k-FED local seeding: every restart starts from the same partition by
                           row position (the uniform draws ignored)
kfed-points-without-y      literal k-FED (``local="points"``): local k-means on ``(x, 0)``, the
                           response dropped
oneshot-labels-misaligned  one-shot (Ghosh et al., Algorithm 1, step 2): k-means run on the local
                           models in reverse client order, so labels land on the wrong clients
oneshot-one-init           one-shot step 2: ``n_init`` ignored, a single k-means++ run
oneshot-exact-unpermuted   one-shot ``finish="exact"``: the pooled least squares of each cluster
                           on rows not grouped by their label
pacfl-cosines              PACFL Eq. 1: the cosines ``sigma_r(U_i^T U_j)`` used as the angles
pacfl-threshold-degrees    PACFL line 10: the threshold beta read in degrees (the public code's
                           unit), so HC cuts 57 times higher
pacfl-largest-angle        PACFL Eq. 2: the largest principal angle instead of the smallest
fesem-e-step-argmax        FeSEM Eq. 7: each client to the *farthest* centre (argmax)
fesem-weights-swapped      FeSEM Eq. 8: weights ``n_i`` where uniform ones are asked, and back
fesem-start-from-local     FeSEM Algorithm 2: local steps from the client's last local model
                           instead of from its centre
=========================  ===================================================================

Which tests fail (``x``: named below and checked by every run of the mutation script; ``.``:
passes; from a survey of every test of the baseline's file and of
``tests/algorithms/test_baselines_teeth.py``).  k-FED, in test_algorithms_kfed.py: LABELS
``test_point_labels_are_the_server_cluster_of_the_nearest_local_centroid``, FIXED
``test_local_points_are_kmeans_fixed_points_of_each_client``, EXACT ``test_sigma_zero_exact_recovery``,
MIXED ``test_local_regressions_recover_mixed_points_and_raw_points_do_not``, UNDER
``test_underdetermined_local_regressions_break_down``; REF ``test_local_regressions_match_a_per_client_loop``.

=====================  ======  =====  =====  =====  =====  ===
mutant                 LABELS  FIXED  EXACT  MIXED  UNDER  REF
=====================  ======  =====  =====  =====  =====  ===
kfed-client-labels       x       .      x      x      x     x
kfed-first-restart       .       .      x      .      x     x
kfed-unshuffled-start    .       .      .      x      x     x
kfed-points-without-y    .       x      .      .      .     .
=====================  ======  =====  =====  =====  =====  ===

One-shot, in test_algorithms_oneshot.py: RECOVER ``test_exact_recovery_without_noise``, POOLED
``test_exact_finish_is_the_known_label_least_squares_when_the_clustering_is_right``, NINIT
``test_the_clustering_depends_on_the_generator_and_n_init``; STEP2
``test_baselines_teeth.py::test_oneshot_labels_are_kmeans_of_the_clients_own_local_models``; REF
``test_matches_the_reference_loop``.

=========================  =======  ======  =====  =====  ===
mutant                     RECOVER  POOLED  NINIT  STEP2  REF
=========================  =======  ======  =====  =====  ===
oneshot-labels-misaligned     x       x       x      x     x
oneshot-one-init              .       .       x      x     .
oneshot-exact-unpermuted      .       x       .      .     .
=========================  =======  ======  =====  =====  ===

PACFL, in test_algorithms_pacfl.py: ANGLES ``test_principal_angles_match_scipy``, EQ3
``test_eq3_with_p_equal_d_is_the_angle_between_regression_directions``, PROX
``test_proximity_matrix_matches_a_pairwise_loop``, ONE
``test_a_threshold_with_one_starting_model_gives_every_cluster_that_model``, RECOVER
``test_exact_recovery_without_noise``; BETA
``test_baselines_teeth.py::test_pacfl_threshold_is_in_radians_and_makes_the_number_of_clusters``;
REF ``test_driver_matches_a_plain_loop``.

=======================  ======  ===  ====  ===  =======  ====  ===
mutant                   ANGLES  EQ3  PROX  ONE  RECOVER  BETA  REF
=======================  ======  ===  ====  ===  =======  ====  ===
pacfl-cosines              x      x    x     .     x       x     x
pacfl-threshold-degrees    .      .    .     x     .       x     .
pacfl-largest-angle        .      x    x     .     x       .     x
=======================  ======  ===  ====  ===  =======  ====  ===

FeSEM, in test_algorithms_fesem.py: DIST ``test_e_step_is_by_parameter_distance_not_by_loss``,
TIES ``test_e_step_ties_go_to_the_lowest_index``, LLOYD
``test_unit_step_with_isotropic_designs_is_lloyd_on_local_least_squares``, WEIGHTS
``test_weights_differ_with_unequal_sizes`` (Eq. 8's two averages against NumPy), RECOVER
``test_exact_recovery_without_noise``, LOCK ``test_small_local_steps_lock_the_first_assignments``;
REF ``test_batched_driver_matches_plain_loop``.

======================  ====  ====  =====  =======  =======  ====  ===
mutant                  DIST  TIES  LLOYD  WEIGHTS  RECOVER  LOCK  REF
======================  ====  ====  =====  =======  =======  ====  ===
fesem-e-step-argmax      x     x     x       x        x       x     x
fesem-weights-swapped    .     .     .       x        .       .     x
fesem-start-from-local   .     .     .       .        x       x     x
======================  ====  ====  =====  =======  =======  ====  ===

kfed-points-without-y is seen by the fixed-point check only: the thesis's literal k-FED is near
chance on mixed linear regression with or without the response (the module docstring of
``mixreg/algorithms/kfed.py`` says why), so no recovery test can tell them apart.
oneshot-exact-unpermuted is seen by the exact-finish test only (the default finish is FedAvg).
"""

from ifca_mutants import MARK, Mutant

FAMILY = "baselines"

_K = "tests/algorithms/test_algorithms_kfed.py::"
_O = "tests/algorithms/test_algorithms_oneshot.py::"
_P = "tests/algorithms/test_algorithms_pacfl.py::"
_F = "tests/algorithms/test_algorithms_fesem.py::"
_T = "tests/algorithms/test_baselines_teeth.py::"

K_LABELS = _K + "test_point_labels_are_the_server_cluster_of_the_nearest_local_centroid"
K_FIXED = _K + "test_local_points_are_kmeans_fixed_points_of_each_client"
K_EXACT = _K + "test_sigma_zero_exact_recovery"
K_MIXED = _K + "test_local_regressions_recover_mixed_points_and_raw_points_do_not"
K_UNDER = _K + "test_underdetermined_local_regressions_break_down"
K_REF = _K + "test_local_regressions_match_a_per_client_loop"

O_RECOVER = _O + "test_exact_recovery_without_noise"
O_POOLED = _O + "test_exact_finish_is_the_known_label_least_squares_when_the_clustering_is_right"
O_NINIT = _O + "test_the_clustering_depends_on_the_generator_and_n_init"
O_STEP2 = _T + "test_oneshot_labels_are_kmeans_of_the_clients_own_local_models"
O_REF = _O + "test_matches_the_reference_loop"

P_ANGLES = _P + "test_principal_angles_match_scipy"
P_EQ3 = _P + "test_eq3_with_p_equal_d_is_the_angle_between_regression_directions"
P_PROX = _P + "test_proximity_matrix_matches_a_pairwise_loop"
P_ONE = _P + "test_a_threshold_with_one_starting_model_gives_every_cluster_that_model"
P_RECOVER = _P + "test_exact_recovery_without_noise"
P_BETA = _T + "test_pacfl_threshold_is_in_radians_and_makes_the_number_of_clusters"
P_REF = _P + "test_driver_matches_a_plain_loop"

F_DIST = _F + "test_e_step_is_by_parameter_distance_not_by_loss"
F_TIES = _F + "test_e_step_ties_go_to_the_lowest_index"
F_LLOYD = _F + "test_unit_step_with_isotropic_designs_is_lloyd_on_local_least_squares"
F_WEIGHTS = _F + "test_weights_differ_with_unequal_sizes"
F_RECOVER = _F + "test_exact_recovery_without_noise"
F_LOCK = _F + "test_small_local_steps_lock_the_first_assignments"
F_REF = _F + "test_batched_driver_matches_plain_loop"

#: The tests of each baseline's defining steps against an independent computation.
THEOREM_LEVEL = (K_LABELS, K_FIXED, K_EXACT, K_MIXED, K_UNDER, O_RECOVER, O_POOLED, O_NINIT, O_STEP2,
                 P_ANGLES, P_EQ3, P_PROX, P_ONE, P_RECOVER, P_BETA, F_DIST, F_TIES, F_LLOYD, F_WEIGHTS, F_RECOVER,
                 F_LOCK)
#: What a ``--survey`` runs on every mutant.
CANDIDATES = THEOREM_LEVEL + (K_REF, O_REF, P_REF, F_REF)

_KFED, _ONESHOT = "mixreg/algorithms/kfed.py", "mixreg/algorithms/oneshot.py"
_PACFL, _FESEM = "mixreg/algorithms/pacfl.py", "mixreg/algorithms/fesem.py"
_KMEANS = "    clustering = kmeans(local_models, k, n_init=n_init, rng=rng)\n"

MUTANTS = (
    Mutant(
        "kfed-client-labels",
        "k-FED step 4: every point takes its client's first local centroid's cluster",
        "    row_labels = centroid_labels[client, groups]\n",
        f"    row_labels = centroid_labels[client, 0]  {MARK}\n",
        (K_LABELS, K_EXACT, K_MIXED, K_UNDER, K_REF),
        path=_KFED,
        family=FAMILY,
    ),
    Mutant(
        "kfed-first-restart",
        "k-FED local regressions: restart 0 kept, not the least residual sum of squares",
        "    best = np.argmax(sse <= sse.min(axis=0) + slack, axis=0)  # (m,)\n",
        f"    best = np.zeros(m, dtype=np.int64)  {MARK}\n",
        (K_EXACT, K_UNDER, K_REF),
        path=_KFED,
        family=FAMILY,
    ),
    Mutant(
        "kfed-unshuffled-start",
        "k-FED local seeding: every restart starts from the same partition (the draws ignored)",
        "        np.put_along_axis(start, np.argsort(u[:, rows], axis=2, kind=\"stable\"), np.arange(n) % kl, axis=2)\n",
        f"        np.put_along_axis(start, np.argsort(0 * u[:, rows], axis=2, kind=\"stable\"), np.arange(n) % kl, "
        f"axis=2)  {MARK}\n",
        (K_MIXED, K_UNDER, K_REF),
        path=_KFED,
        family=FAMILY,
    ),
    Mutant(
        "kfed-points-without-y",
        "literal k-FED: local k-means on (x, 0), the response dropped",
        "    Z = np.concatenate([problem.X, problem.y[:, None]], axis=1).astype(np.float64)\n",
        f"    Z = np.concatenate([problem.X, 0 * problem.y[:, None]], axis=1).astype(np.float64)  {MARK}\n",
        (K_FIXED,),
        path=_KFED,
        family=FAMILY,
    ),
    Mutant(
        "oneshot-labels-misaligned",
        "one-shot step 2: k-means on the local models in reverse client order",
        _KMEANS,
        f"    clustering = kmeans(local_models[::-1], k, n_init=n_init, rng=rng)  {MARK}\n",
        (O_RECOVER, O_POOLED, O_NINIT, O_STEP2, O_REF),
        path=_ONESHOT,
        family=FAMILY,
    ),
    Mutant(
        "oneshot-one-init",
        "one-shot step 2: n_init ignored (one k-means++ run)",
        _KMEANS,
        f"    clustering = kmeans(local_models, k, n_init=1, rng=rng)  {MARK}\n",
        (O_NINIT, O_STEP2),
        path=_ONESHOT,
        family=FAMILY,
    ),
    Mutant(
        "oneshot-exact-unpermuted",
        "one-shot exact finish: the rows not grouped by label before the pooled solve",
        '    new[:, present] = local_least_squares(problem.X[order], problem.y[order], offsets, method="min_norm")\n',
        f'    new[:, present] = local_least_squares(problem.X, problem.y, offsets, method="min_norm")  {MARK}\n',
        (O_POOLED,),
        path=_ONESHOT,
        family=FAMILY,
    ),
    Mutant(
        "pacfl-cosines",
        "PACFL Eq. 1: the cosines sigma_r in place of the angles arccos sigma_r",
        "    angles = np.arccos(np.clip(s, 0.0, 1.0))\n",
        f"    angles = np.clip(s, 0.0, 1.0)  {MARK}\n",
        (P_ANGLES, P_EQ3, P_PROX, P_RECOVER, P_BETA, P_REF),
        path=_PACFL,
        family=FAMILY,
    ),
    Mutant(
        "pacfl-threshold-degrees",
        "PACFL line 10: the threshold beta read in degrees",
        '        threshold = check_real("threshold", threshold, low=0.0)\n',
        f'        threshold = np.degrees(check_real("threshold", threshold, low=0.0))  {MARK}\n',
        (P_ONE, P_BETA),
        path=_PACFL,
        family=FAMILY,
    ),
    Mutant(
        "pacfl-largest-angle",
        "PACFL Eq. 2: the largest principal angle instead of the smallest",
        '        out[lo:lo + rows, first:] = angles[..., 0] if measure == "smallest" else np.nansum(angles, axis=-1)\n',
        '        out[lo:lo + rows, first:] = (np.nanmax(angles, axis=-1) if measure == "smallest"'
        f' else np.nansum(angles, axis=-1))  {MARK}\n',
        (P_EQ3, P_PROX, P_RECOVER, P_REF),
        path=_PACFL,
        family=FAMILY,
    ),
    Mutant(
        "fesem-e-step-argmax",
        "FeSEM Eq. 7: each client to the farthest centre",
        "    kernels.assign_clients(sq, np.ones(m, dtype=np.bool_), assign, dist)\n",
        f"    kernels.assign_clients(-sq, np.ones(m, dtype=np.bool_), assign, dist)  {MARK}\n",
        (F_DIST, F_TIES, F_LLOYD, F_WEIGHTS, F_RECOVER, F_LOCK, F_REF),
        path=_FESEM,
        family=FAMILY,
    ),
    Mutant(
        "fesem-weights-swapped",
        "FeSEM Eq. 8: data weights where uniform ones are asked, and back",
        '    omega = np.ones(problem.m) if weights == "uniform" else problem.sizes.astype(np.float64)\n',
        f'    omega = np.ones(problem.m) if weights != "uniform" else problem.sizes.astype(np.float64)  {MARK}\n',
        (F_WEIGHTS, F_REF),
        path=_FESEM,
        family=FAMILY,
    ),
    Mutant(
        "fesem-start-from-local",
        "FeSEM Algorithm 2: local steps from the last local model, not from the centre",
        "            kernels.gather_selected(new, assign, new_local)  # Algorithm 2: start from the centre,\n",
        f"            new_local[:] = local  {MARK}\n",
        (F_RECOVER, F_LOCK, F_REF),
        path=_FESEM,
        family=FAMILY,
    ),
)
