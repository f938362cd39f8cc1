"""Bad and edge command lines of every experiment: refused in one line, before anything runs.

One table per family of cases, each run through the experiment's ``main(argv)`` in this process
(the exit status is ``main``'s return value or its ``SystemExit`` code) with ``--dry-run``, so a
command that is wrongly accepted prints its grid instead of running it.  Every refused case must:

* exit 2 (a usage error: a value out of range, not a number, a bad combination, a sweep too large);
* print exactly ONE line on stderr, ``python -m experiments.<name>: error: ...``, and no traceback;
* name the parameter: its flag (``--n-inits``) or the Config field the flag sets (``n_inits``);
* hold the case's fragment of that line (the allowed range and the value received);
* create nothing (the results directory given by ``--out`` does not exist afterwards).

A legal edge case (smallest sizes, one value per axis, sigma = 0, ...) is accepted: the dry run
exits 0 and the sweep it would run has the number of cells the axes give.  ``redraw_figures`` and
``bench_ifca`` are checked for their bad command lines too (without running a benchmark).
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import pathlib
import typing
import warnings

import pytest

from experiments import bench_ifca, redraw_figures

CONFIG_EXPERIMENTS = ("success_vs_R", "success_vs_mn", "error_floor", "ifca_basin", "ifca_misclustering",
                      "ifca_contraction", "ifca_corollary1", "ifca_strongly_convex", "two_phase", "two_phase_phase1",
                      "two_phase_nu", "compare")
EXPERIMENTS = {name: importlib.import_module(f"experiments.{name}") for name in CONFIG_EXPERIMENTS}
ABBREVIATIONS = {"success_vs_R": "SR", "success_vs_mn": "SMN", "error_floor": "EF", "ifca_basin": "IB",
                 "ifca_misclustering": "IM", "ifca_contraction": "IC", "ifca_corollary1": "IC1",
                 "ifca_strongly_convex": "ISC", "two_phase": "TP", "two_phase_phase1": "TP1",
                 "two_phase_nu": "TPN", "compare": "CMP"}
PLACEMENT = {"--jobs", "--dask-local", "--scheduler"}


def _main(module, argv):
    try:
        return getattr(module, "STUDY", module).main(argv)  # a study, or a script
    except SystemExit as exc:
        return exc.code


def _dry(argv, out):
    """``argv`` as a dry run in one process writing (if it wrongly ran) into ``out``."""
    if "--redraw" in argv:
        return list(argv)
    extra = ["--dry-run", "--no-progress", "--out", str(out)]
    return [*argv, *extra] if PLACEMENT & set(argv) else [*argv, *extra, "--jobs", "1"]


def _flag_of(argv):
    """The first flag of ``argv`` and the Config field it sets (``--n-inits`` -> ``n_inits``)."""
    flag = next(item for item in argv if item.startswith("--"))
    return flag, flag[2:].replace("-", "_")


def _check_refused(name, argv, fragment, names, tmp_path, capsys):
    out = tmp_path / "out"
    code = _main(EXPERIMENTS[name], _dry(argv, out))
    stdout, err = capsys.readouterr()
    assert code == 2, (code, err)
    assert "Traceback" not in stdout + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"python -m experiments.{name}: error: "), lines
    assert any(word in lines[0] for word in names), (names, lines[0])
    assert fragment in lines[0], lines[0]
    assert not out.exists()


# --------------------------------------------------------------------------- out-of-range values

def bound(id, name, argv, fragment):
    return pytest.param(name, argv, fragment, id=id)


# One value just outside the allowed range per numeric flag of every experiment (0 or -1 for an
# integer, nan and -1 for a real when they are outside it); a list flag gets the bad value first,
# then legal ones.  The fragment is the whole message after "error: " (its start when long).
BOUNDS = [
    bound("SR-k-0", "success_vs_R", ['--k', '0'], 'k must be an integer >= 1, got 0'),
    bound("SR-m-0", "success_vs_R", ['--m', '0'], 'm must be an integer >= 1, got 0'),
    bound("SR-n-0", "success_vs_R", ['--n', '0'], 'n must be an integer >= 1, got 0'),
    bound("SR-d-0", "success_vs_R", ['--d', '0'], 'd must be an integer >= 1, got 0'),
    bound("SR-sigmas-nan", "success_vs_R", ['--sigmas', 'nan', '0.0', '0.5'], 'sigmas must be finite and >= 0, got [nan, 0.0, 0.5]'),
    bound("SR-sigmas-neg", "success_vs_R", ['--sigmas', '-1', '0.0', '0.5'], 'sigmas must be finite and >= 0, got [-1.0, 0.0, 0.5]'),
    bound("SR-rs-nan", "success_vs_R", ['--rs', 'nan', '0.03', '0.1'], 'rs must be finite and > 0, got [nan, 0.03, 0.1]'),
    bound("SR-rs-neg", "success_vs_R", ['--rs', '-1', '0.03', '0.1'], 'rs must be finite and > 0, got [-1.0, 0.03, 0.1]'),
    bound("SR-trials-0", "success_vs_R", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("SR-n_inits-0", "success_vs_R", ['--n-inits', '0'], 'n_inits must be an integer >= 1, got 0'),
    bound("SR-step_sizes-nan", "success_vs_R", ['--step-sizes', 'nan', '1.0', '0.1'], 'step_sizes must be finite and > 0, got [nan, 1.0, 0.1]'),
    bound("SR-step_sizes-neg", "success_vs_R", ['--step-sizes', '-1', '1.0', '0.1'], 'step_sizes must be finite and > 0, got [-1.0, 1.0, 0.1]'),
    bound("SR-n_rounds-0", "success_vs_R", ['--n-rounds', '0'], 'n_rounds must be an integer >= 1, got 0'),
    bound("SR-init_scale-nan", "success_vs_R", ['--init-scale', 'nan'], 'init_scale must be finite and > 0, got nan'),
    bound("SR-init_scale-neg", "success_vs_R", ['--init-scale', '-1'], 'init_scale must be finite and > 0, got -1.0'),
    bound("SR-threshold_offset-nan", "success_vs_R", ['--threshold-offset', 'nan'], 'threshold_offset must be finite and >= 0, got nan'),
    bound("SR-threshold_offset-neg", "success_vs_R", ['--threshold-offset', '-1'], 'threshold_offset must be finite and >= 0, got -1.0'),
    bound("SMN-k-0", "success_vs_mn", ['--k', '0'], 'k must be an integer >= 1, got 0'),
    bound("SMN-ms-0", "success_vs_mn", ['--ms', '0', '10', '20'], 'ms must be an integer >= 1, got [0, 10, 20]'),
    bound("SMN-ns-0", "success_vs_mn", ['--ns', '0', '5', '10'], 'ns must be an integer >= 1, got [0, 5, 10]'),
    bound("SMN-d-0", "success_vs_mn", ['--d', '0'], 'd must be an integer >= 1, got 0'),
    bound("SMN-sigma-nan", "success_vs_mn", ['--sigma', 'nan'], 'sigma must be finite and >= 0, got nan'),
    bound("SMN-sigma-neg", "success_vs_mn", ['--sigma', '-1'], 'sigma must be finite and >= 0, got -1.0'),
    bound("SMN-rs-nan", "success_vs_mn", ['--rs', 'nan', '0.1', '0.25'], 'rs must be finite and > 0, got [nan, 0.1, 0.25]'),
    bound("SMN-rs-neg", "success_vs_mn", ['--rs', '-1', '0.1', '0.25'], 'rs must be finite and > 0, got [-1.0, 0.1, 0.25]'),
    bound("SMN-trials-0", "success_vs_mn", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("SMN-n_inits-0", "success_vs_mn", ['--n-inits', '0'], 'n_inits must be an integer >= 1, got 0'),
    bound("SMN-step_sizes-nan", "success_vs_mn", ['--step-sizes', 'nan', '1.0', '0.1'], 'step_sizes must be finite and > 0, got [nan, 1.0, 0.1]'),
    bound("SMN-step_sizes-neg", "success_vs_mn", ['--step-sizes', '-1', '1.0', '0.1'], 'step_sizes must be finite and > 0, got [-1.0, 1.0, 0.1]'),
    bound("SMN-n_rounds-0", "success_vs_mn", ['--n-rounds', '0'], 'n_rounds must be an integer >= 1, got 0'),
    bound("SMN-init_scale-nan", "success_vs_mn", ['--init-scale', 'nan'], 'init_scale must be finite and > 0, got nan'),
    bound("SMN-init_scale-neg", "success_vs_mn", ['--init-scale', '-1'], 'init_scale must be finite and > 0, got -1.0'),
    bound("SMN-threshold_offset-nan", "success_vs_mn", ['--threshold-offset', 'nan'], 'threshold_offset must be finite and >= 0, got nan'),
    bound("SMN-threshold_offset-neg", "success_vs_mn", ['--threshold-offset', '-1'], 'threshold_offset must be finite and >= 0, got -1.0'),
    bound("EF-k-0", "error_floor", ['--k', '0'], 'k must be an integer >= 2, got 0'),
    bound("EF-separation-nan", "error_floor", ['--separation', 'nan'], 'separation must be finite and > 0, got nan'),
    bound("EF-separation-neg", "error_floor", ['--separation', '-1'], 'separation must be finite and > 0, got -1.0'),
    bound("EF-m_ref-0", "error_floor", ['--m-ref', '0'], 'm_ref must be an integer >= 1, got 0'),
    bound("EF-n_prime_ref-0", "error_floor", ['--n-prime-ref', '0'], 'n_prime_ref must be an integer >= 1, got 0'),
    bound("EF-d_ref-0", "error_floor", ['--d-ref', '0'], 'd_ref must be an integer >= 1, got 0'),
    bound("EF-sigma_ref-nan", "error_floor", ['--sigma-ref', 'nan'], 'sigma_ref must be finite and > 0, got nan'),
    bound("EF-sigma_ref-neg", "error_floor", ['--sigma-ref', '-1'], 'sigma_ref must be finite and > 0, got -1.0'),
    bound("EF-p_ref-nan", "error_floor", ['--p-ref', 'nan'], 'p_ref must be finite and > 0, got nan'),
    bound("EF-p_ref-neg", "error_floor", ['--p-ref', '-1'], 'p_ref must be finite and > 0, got -1.0'),
    bound("EF-ms-0", "error_floor", ['--ms', '0', '25', '50'], 'ms must be an integer >= 1, got [0, 25, 50]'),
    bound("EF-n_primes-0", "error_floor", ['--n-primes', '0', '5', '10'], 'n_primes must be an integer >= 1, got [0, 5, 10]'),
    bound("EF-ds-0", "error_floor", ['--ds', '0', '5', '10'], 'ds must be an integer >= 1, got [0, 5, 10]'),
    bound("EF-sigmas-nan", "error_floor", ['--sigmas', 'nan', '0.025', '0.05'], 'sigmas must be finite and > 0, got [nan, 0.025, 0.05]'),
    bound("EF-sigmas-neg", "error_floor", ['--sigmas', '-1', '0.025', '0.05'], 'sigmas must be finite and > 0, got [-1.0, 0.025, 0.05]'),
    bound("EF-ps-nan", "error_floor", ['--ps', 'nan', '0.1', '0.2'], 'ps must be finite and > 0, got [nan, 0.1, 0.2]'),
    bound("EF-ps-neg", "error_floor", ['--ps', '-1', '0.1', '0.2'], 'ps must be finite and > 0, got [-1.0, 0.1, 0.2]'),
    bound("EF-trials-0", "error_floor", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("EF-restarts-0", "error_floor", ['--restarts', '0'], 'restarts must be an integer >= 1, got 0'),
    bound("EF-step_sizes-nan", "error_floor", ['--step-sizes', 'nan', '0.5', '1.0'], 'step_sizes must be finite and > 0, got [nan, 0.5, 1.0]'),
    bound("EF-step_sizes-neg", "error_floor", ['--step-sizes', '-1', '0.5', '1.0'], 'step_sizes must be finite and > 0, got [-1.0, 0.5, 1.0]'),
    bound("EF-practical_rounds-0", "error_floor", ['--practical-rounds', '0'], 'practical_rounds must be an integer >= 1, got 0'),
    bound("EF-n_boot-0", "error_floor", ['--n-boot', '0'], 'n_boot must be an integer >= 1, got 0'),
    bound("EF-alpha-nan", "error_floor", ['--alpha', 'nan'], 'alpha must be finite and in (0, 0.5), got nan'),
    bound("EF-alpha-neg", "error_floor", ['--alpha', '-1'], 'alpha must be finite and in (0, 0.5), got -1.0'),
    bound("EF-c1-nan", "error_floor", ['--c1', 'nan'], 'c1 must be finite and > 0, got nan'),
    bound("EF-c1-neg", "error_floor", ['--c1', '-1'], 'c1 must be finite and > 0, got -1.0'),
    bound("EF-halvings-0", "error_floor", ['--halvings', '0'], 'halvings must be an integer >= 1, got 0'),
    bound("EF-practical_tol-nan", "error_floor", ['--practical-tol', 'nan'], 'practical_tol must be finite and >= 0, got nan'),
    bound("EF-practical_tol-neg", "error_floor", ['--practical-tol', '-1'], 'practical_tol must be finite and >= 0, got -1.0'),
    bound("EF-tolerance-nan", "error_floor", ['--tolerance', 'nan'], 'tolerance must be finite and >= 0, got nan'),
    bound("EF-tolerance-neg", "error_floor", ['--tolerance', '-1'], 'tolerance must be finite and >= 0, got -1.0'),
    bound("IB-ks-0", "ifca_basin", ['--ks', '0', '2', '4'], 'ks must be an integer >= 2, got [0, 2, 4]'),
    bound("IB-m_per-0", "ifca_basin", ['--m-per', '0'], 'm_per must be an integer >= 1, got 0'),
    bound("IB-n_prime-0", "ifca_basin", ['--n-prime', '0'], 'n_prime must be an integer >= 1, got 0'),
    bound("IB-n_rounds-0", "ifca_basin", ['--n-rounds', '0'], 'n_rounds must be an integer >= 1, got 0'),
    bound("IB-d-0", "ifca_basin", ['--d', '0'], 'd must be an integer >= 1, got 0'),
    bound("IB-sigma-nan", "ifca_basin", ['--sigma', 'nan'], 'sigma must be finite and > 0, got nan'),
    bound("IB-sigma-neg", "ifca_basin", ['--sigma', '-1'], 'sigma must be finite and > 0, got -1.0'),
    bound("IB-alphas-nan", "ifca_basin", ['--alphas', 'nan', '0.1', '0.25'], 'alphas must be finite and > 0, got [nan, 0.1, 0.25]'),
    bound("IB-alphas-neg", "ifca_basin", ['--alphas', '-1', '0.1', '0.25'], 'alphas must be finite and > 0, got [-1.0, 0.1, 0.25]'),
    bound("IB-trials-0", "ifca_basin", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("IB-c1-nan", "ifca_basin", ['--c1', 'nan'], 'c1 must be finite and > 0, got nan'),
    bound("IB-c1-neg", "ifca_basin", ['--c1', '-1'], 'c1 must be finite and > 0, got -1.0'),
    bound("IB-floor_factor-nan", "ifca_basin", ['--floor-factor', 'nan'], 'floor_factor must be finite and > 0, got nan'),
    bound("IB-floor_factor-neg", "ifca_basin", ['--floor-factor', '-1'], 'floor_factor must be finite and > 0, got -1.0'),
    bound("IB-level-nan", "ifca_basin", ['--level', 'nan'], 'level must be finite and in (0, 1), got nan'),
    bound("IB-level-neg", "ifca_basin", ['--level', '-1'], 'level must be finite and in (0, 1), got -1.0'),
    bound("IM-m-0", "ifca_misclustering", ['--m', '0'], 'm must be an integer >= 2, got 0'),
    bound("IM-d-0", "ifca_misclustering", ['--d', '0'], 'd must be an integer >= 1, got 0'),
    bound("IM-rhos-nan", "ifca_misclustering", ['--rhos', 'nan', '0.5', '1.0'], 'rhos must be finite and > 0, got [nan, 0.5, 1.0]'),
    bound("IM-rhos-neg", "ifca_misclustering", ['--rhos', '-1', '0.5', '1.0'], 'rhos must be finite and > 0, got [-1.0, 0.5, 1.0]'),
    bound("IM-targets-nan", "ifca_misclustering", ['--targets', 'nan', '0.5', '1.75'], 'targets must be finite and > 0, got [nan, 0.5, 1.75]'),
    bound("IM-targets-neg", "ifca_misclustering", ['--targets', '-1', '0.5', '1.75'], 'targets must be finite and > 0, got [-1.0, 0.5, 1.75]'),
    bound("IM-fit_rhos-nan", "ifca_misclustering", ['--fit-rhos', 'nan', '1.0', '2.0'], 'fit_rhos must be finite, got [nan, 1.0, 2.0]'),
    bound("IM-fit_rhos-neg", "ifca_misclustering", ['--fit-rhos', '-1', '1.0', '2.0'], 'fit_rhos must be a non-empty subset of rhos [0.5, 1.0, 2.0, 4.0, 8.0], got [-1.0, 1.0, 2.0]'),
    bound("IM-trials-0", "ifca_misclustering", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("IM-c1-nan", "ifca_misclustering", ['--c1', 'nan'], 'c1 must be finite and > 0, got nan'),
    bound("IM-c1-neg", "ifca_misclustering", ['--c1', '-1'], 'c1 must be finite and > 0, got -1.0'),
    bound("IM-c4_bound-nan", "ifca_misclustering", ['--c4-bound', 'nan'], 'c4_bound must be finite and > 0, got nan'),
    bound("IM-c4_bound-neg", "ifca_misclustering", ['--c4-bound', '-1'], 'c4_bound must be finite and > 0, got -1.0'),
    bound("IM-level-nan", "ifca_misclustering", ['--level', 'nan'], 'level must be finite and in (0, 1), got nan'),
    bound("IM-level-neg", "ifca_misclustering", ['--level', '-1'], 'level must be finite and in (0, 1), got -1.0'),
    bound("IM-n_boot-0", "ifca_misclustering", ['--n-boot', '0'], 'n_boot must be an integer >= 1, got 0'),
    bound("IC-m-0", "ifca_contraction", ['--m', '0'], 'm must be an integer >= 2, got 0'),
    bound("IC-d-0", "ifca_contraction", ['--d', '0'], 'd must be an integer >= 1, got 0'),
    bound("IC-rhos-nan", "ifca_contraction", ['--rhos', 'nan', '1.0', '4.0'], 'rhos must be finite and > 0, got [nan, 1.0, 4.0]'),
    bound("IC-rhos-neg", "ifca_contraction", ['--rhos', '-1', '1.0', '4.0'], 'rhos must be finite and > 0, got [-1.0, 1.0, 4.0]'),
    bound("IC-alphas-nan", "ifca_contraction", ['--alphas', 'nan', '0.1', '0.25'], 'alphas must be finite and > 0, got [nan, 0.1, 0.25]'),
    bound("IC-alphas-neg", "ifca_contraction", ['--alphas', '-1', '0.1', '0.25'], 'alphas must be finite and > 0, got [-1.0, 0.1, 0.25]'),
    bound("IC-n_primes-0", "ifca_contraction", ['--n-primes', '0', '3', '6'], 'n_primes must be an integer >= 1, got [0, 3, 6]'),
    bound("IC-trials-0", "ifca_contraction", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("IC-c1-nan", "ifca_contraction", ['--c1', 'nan'], 'c1 must be finite and > 0, got nan'),
    bound("IC-c1-neg", "ifca_contraction", ['--c1', '-1'], 'c1 must be finite and > 0, got -1.0'),
    bound("IC-c2-nan", "ifca_contraction", ['--c2', 'nan'], 'c2 must be finite and > 0, got nan'),
    bound("IC-c2-neg", "ifca_contraction", ['--c2', '-1'], 'c2 must be finite and > 0, got -1.0'),
    bound("IC-c3-nan", "ifca_contraction", ['--c3', 'nan'], 'c3 must be finite and >= 0, got nan'),
    bound("IC-c3-neg", "ifca_contraction", ['--c3', '-1'], 'c3 must be finite and >= 0, got -1.0'),
    bound("IC-c4-nan", "ifca_contraction", ['--c4', 'nan'], 'c4 must be finite and > 0, got nan'),
    bound("IC-c4-neg", "ifca_contraction", ['--c4', '-1'], 'c4 must be finite and > 0, got -1.0'),
    bound("IC-level-nan", "ifca_contraction", ['--level', 'nan'], 'level must be finite and in (0, 1), got nan'),
    bound("IC-level-neg", "ifca_contraction", ['--level', '-1'], 'level must be finite and in (0, 1), got -1.0'),
    bound("TP-k-0", "two_phase", ['--k', '0'], 'k must be an integer >= 1, got 0'),
    bound("TP-d-0", "two_phase", ['--d', '0'], 'd must be an integer >= 1, got 0'),
    bound("TP-sigma-nan", "two_phase", ['--sigma', 'nan'], 'sigma must be finite and >= 0, got nan'),
    bound("TP-sigma-neg", "two_phase", ['--sigma', '-1'], 'sigma must be finite and >= 0, got -1.0'),
    bound("TP-separation-nan", "two_phase", ['--separation', 'nan'], 'separation must be finite and > 0, got nan'),
    bound("TP-separation-neg", "two_phase", ['--separation', '-1'], 'separation must be finite and > 0, got -1.0'),
    bound("TP-Ms-0", "two_phase", ['--Ms', '0', '2000'], 'Ms must be an integer >= 1, got [0, 2000]'),
    bound("TP-M_ref-0", "two_phase", ['--M-ref', '0'], 'M_ref must be an integer >= 1, got 0'),
    bound("TP-p_mins-nan", "two_phase", ['--p-mins', 'nan', '0.05', '0.2'], 'p_mins must be finite and > 0, got [nan, 0.05, 0.2]'),
    bound("TP-p_mins-neg", "two_phase", ['--p-mins', '-1', '0.05', '0.2'], 'p_mins must be finite and > 0, got [-1.0, 0.05, 0.2]'),
    bound("TP-p_ref-nan", "two_phase", ['--p-ref', 'nan'], 'p_ref must be finite and > 0, got nan'),
    bound("TP-p_ref-neg", "two_phase", ['--p-ref', '-1'], 'p_ref must be finite and > 0, got -1.0'),
    bound("TP-size_mean-nan", "two_phase", ['--size-mean', 'nan'], 'size_mean must be finite and >= 1, got nan'),
    bound("TP-size_mean-neg", "two_phase", ['--size-mean', '-1'], 'size_mean must be finite and >= 1, got -1.0'),
    bound("TP-n_max-0", "two_phase", ['--n-max', '0'], 'n_max must be an integer >= 2, got 0'),
    bound("TP-trials-0", "two_phase", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("TP-fmd_rounds-0", "two_phase", ['--fmd-rounds', '0'], 'fmd_rounds must be an integer >= 1, got 0'),
    bound("TP-fx_rounds-0", "two_phase", ['--fx-rounds', '0'], 'fx_rounds must be an integer >= 1, got 0'),
    bound("TP-fedavg_steps-0", "two_phase", ['--fedavg-steps', '0'], 'fedavg_steps must be an integer >= 1, got 0'),
    bound("TP-steps-nan", "two_phase", ['--steps', 'nan', '0.25', '0.5'], 'steps must be finite and > 0, got [nan, 0.25, 0.5]'),
    bound("TP-steps-neg", "two_phase", ['--steps', '-1', '0.25', '0.5'], 'steps must be finite and > 0, got [-1.0, 0.25, 0.5]'),
    bound("TP-ifca_restarts-0", "two_phase", ['--ifca-restarts', '0'], 'ifca_restarts must be an integer >= 1, got 0'),
    bound("TP-cov_low-nan", "two_phase", ['--cov-low', 'nan'], 'cov_low must be finite and > 0, got nan'),
    bound("TP-cov_low-neg", "two_phase", ['--cov-low', '-1'], 'cov_low must be finite and > 0, got -1.0'),
    bound("TP-cov_high-nan", "two_phase", ['--cov-high', 'nan'], 'cov_high must be finite and > 0, got nan'),
    bound("TP-cov_high-neg", "two_phase", ['--cov-high', '-1'], 'cov_high must be finite and > 0, got -1.0'),
    bound("TP-n_anchors-neg", "two_phase", ['--n-anchors', '-1'], 'n_anchors must be an integer >= 0, got -1'),
    bound("TP-anchor_points-0", "two_phase", ['--anchor-points', '0'], 'anchor_points must be an integer >= 2, got 0'),
    bound("TP-fmd_step_constant-nan", "two_phase", ['--fmd-step-constant', 'nan'], 'fmd_step_constant must be finite and > 0, got nan'),
    bound("TP-fmd_step_constant-neg", "two_phase", ['--fmd-step-constant', '-1'], 'fmd_step_constant must be finite and > 0, got -1.0'),
    bound("TP-fmd_clients-neg", "two_phase", ['--fmd-clients', '-1'], 'fmd_clients must be an integer >= 0, got -1'),
    bound("TP-checkpoint_every-0", "two_phase", ['--checkpoint-every', '0'], 'checkpoint_every must be an integer >= 1, got 0'),
    bound("TP1-k-0", "two_phase_phase1", ['--k', '0'], 'k must be an integer >= 2, got 0'),
    bound("TP1-sigma-nan", "two_phase_phase1", ['--sigma', 'nan'], 'sigma must be finite and >= 0, got nan'),
    bound("TP1-sigma-neg", "two_phase_phase1", ['--sigma', '-1'], 'sigma must be finite and >= 0, got -1.0'),
    bound("TP1-separation-nan", "two_phase_phase1", ['--separation', 'nan'], 'separation must be finite and > 0, got nan'),
    bound("TP1-separation-neg", "two_phase_phase1", ['--separation', '-1'], 'separation must be finite and > 0, got -1.0'),
    bound("TP1-far-nan", "two_phase_phase1", ['--far', 'nan'], 'far must be finite and >= 0, got nan'),
    bound("TP1-far-neg", "two_phase_phase1", ['--far', '-1'], 'far must be finite and >= 0, got -1.0'),
    bound("TP1-fmd_rounds-0", "two_phase_phase1", ['--fmd-rounds', '0'], 'fmd_rounds must be an integer >= 1, got 0'),
    bound("TP1-fmd_step_constant-nan", "two_phase_phase1", ['--fmd-step-constant', 'nan'], 'fmd_step_constant must be finite and > 0, got nan'),
    bound("TP1-fmd_step_constant-neg", "two_phase_phase1", ['--fmd-step-constant', '-1'], 'fmd_step_constant must be finite and > 0, got -1.0'),
    bound("TP1-trials-0", "two_phase_phase1", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("TP1-n_anchors-0", "two_phase_phase1", ['--n-anchors', '0'], 'n_anchors must be an integer >= 1, got 0'),
    bound("TP1-p_ref-nan", "two_phase_phase1", ['--p-ref', 'nan'], 'p_ref must be finite and > 0, got nan'),
    bound("TP1-p_ref-neg", "two_phase_phase1", ['--p-ref', '-1'], 'p_ref must be finite and > 0, got -1.0'),
    bound("TP1-c_ref-nan", "two_phase_phase1", ['--c-ref', 'nan'], 'c_ref must be finite and > 0, got nan'),
    bound("TP1-c_ref-neg", "two_phase_phase1", ['--c-ref', '-1'], 'c_ref must be finite and > 0, got -1.0'),
    bound("TP1-d_ref-0", "two_phase_phase1", ['--d-ref', '0'], 'd_ref must be an integer >= 1, got 0'),
    bound("TP1-nA_grid-0", "two_phase_phase1", ['--nA-grid', '0', '3', '6'], 'nA_grid must be an integer >= 2, got [0, 3, 6]'),
    bound("TP1-nA_ref-0", "two_phase_phase1", ['--nA-ref', '0'], 'nA_ref must be an integer >= 2, got 0'),
    bound("TP1-d_grid-0", "two_phase_phase1", ['--d-grid', '0', '6', '12'], 'd_grid must be an integer >= 1, got [0, 6, 12]'),
    bound("TP1-need_ds-0", "two_phase_phase1", ['--need-ds', '0', '6', '12'], 'need_ds must be an integer >= 1, got [0, 6, 12]'),
    bound("TP1-need_p_mins-nan", "two_phase_phase1", ['--need-p-mins', 'nan', '0.2', '0.3333333333333333'], 'need_p_mins must be finite and > 0, got [nan, 0.2, 0.3333333333333333]'),
    bound("TP1-need_p_mins-neg", "two_phase_phase1", ['--need-p-mins', '-1', '0.2', '0.3333333333333333'], 'need_p_mins must be finite and > 0, got [-1.0, 0.2, 0.3333333333333333]'),
    bound("TP1-need_cs-nan", "two_phase_phase1", ['--need-cs', 'nan', '0.5', '1.0'], 'need_cs must be finite and > 0, got [nan, 0.5, 1.0]'),
    bound("TP1-need_cs-neg", "two_phase_phase1", ['--need-cs', '-1', '0.5', '1.0'], 'need_cs must be finite and > 0, got [-1.0, 0.5, 1.0]'),
    bound("TP1-need_nA-0", "two_phase_phase1", ['--need-nA', '0'], 'need_nA must be an integer >= 2, got 0'),
    bound("TP1-target_divisors-0", "two_phase_phase1", ['--target-divisors', '0', '2', '3'], 'target_divisors must be an integer >= 1, got [0, 2, 3]'),
    bound("TP1-main_divisor-0", "two_phase_phase1", ['--main-divisor', '0'], 'main_divisor must be an integer >= 1, got 0'),
    bound("TP1-n_boot-0", "two_phase_phase1", ['--n-boot', '0'], 'n_boot must be an integer >= 1, got 0'),
    bound("TPN-k-0", "two_phase_nu", ['--k', '0'], 'k must be an integer >= 2, got 0'),
    bound("TPN-d-0", "two_phase_nu", ['--d', '0'], 'd must be an integer >= 1, got 0'),
    bound("TPN-sigma-nan", "two_phase_nu", ['--sigma', 'nan'], 'sigma must be finite and >= 0, got nan'),
    bound("TPN-sigma-neg", "two_phase_nu", ['--sigma', '-1'], 'sigma must be finite and >= 0, got -1.0'),
    bound("TPN-separation-nan", "two_phase_nu", ['--separation', 'nan'], 'separation must be finite and > 0, got nan'),
    bound("TPN-separation-neg", "two_phase_nu", ['--separation', '-1'], 'separation must be finite and > 0, got -1.0'),
    bound("TPN-M_ref-0", "two_phase_nu", ['--M-ref', '0'], 'M_ref must be an integer >= 1, got 0'),
    bound("TPN-n_ref-0", "two_phase_nu", ['--n-ref', '0'], 'n_ref must be an integer >= 1, got 0'),
    bound("TPN-p_ref-nan", "two_phase_nu", ['--p-ref', 'nan'], 'p_ref must be finite and in (0, 0.5], got nan'),
    bound("TPN-p_ref-neg", "two_phase_nu", ['--p-ref', '-1'], 'p_ref must be finite and in (0, 0.5], got -1.0'),
    bound("TPN-tiny_fractions-nan", "two_phase_nu", ['--tiny-fractions', 'nan', '0.0', '0.2'], 'tiny_fractions must be finite and in [0, 1), got [nan, 0.0, 0.2]'),
    bound("TPN-tiny_fractions-neg", "two_phase_nu", ['--tiny-fractions', '-1', '0.0', '0.2'], 'tiny_fractions must be finite and in [0, 1), got [-1.0, 0.0, 0.2]'),
    bound("TPN-chi2s-nan", "two_phase_nu", ['--chi2s', 'nan', '0.0', '0.5'], 'chi2s must be finite and >= 0, got [nan, 0.0, 0.5]'),
    bound("TPN-chi2s-neg", "two_phase_nu", ['--chi2s', '-1', '0.0', '0.5'], 'chi2s must be finite and >= 0, got [-1.0, 0.0, 0.5]'),
    bound("TPN-Ms_fixed_n-0", "two_phase_nu", ['--Ms-fixed-n', '0', '500', '1000'], 'Ms_fixed_n must be an integer >= 1, got [0, 500, 1000]'),
    bound("TPN-Ms_fixed_N-0", "two_phase_nu", ['--Ms-fixed-N', '0', '1000', '2000'], 'Ms_fixed_N must be an integer >= 1, got [0, 1000, 2000]'),
    bound("TPN-N_fixed-0", "two_phase_nu", ['--N-fixed', '0'], 'N_fixed must be an integer >= 1, got 0'),
    bound("TPN-p_mins-nan", "two_phase_nu", ['--p-mins', 'nan', '0.05', '0.1'], 'p_mins must be finite and in (0, 0.5], got [nan, 0.05, 0.1]'),
    bound("TPN-p_mins-neg", "two_phase_nu", ['--p-mins', '-1', '0.05', '0.1'], 'p_mins must be finite and in (0, 0.5], got [-1.0, 0.05, 0.1]'),
    bound("TPN-trials-0", "two_phase_nu", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("TPN-n_tiny-0", "two_phase_nu", ['--n-tiny', '0'], 'n_tiny must be an integer >= 1, got 0'),
    bound("TPN-n_low-neg", "two_phase_nu", ['--n-low', '-1'], 'n_low must be an integer >= 0, got -1'),
    bound("TPN-anchor_points-0", "two_phase_nu", ['--anchor-points', '0'], 'anchor_points must be an integer >= 2, got 0'),
    bound("TPN-cov_low-nan", "two_phase_nu", ['--cov-low', 'nan'], 'cov_low must be finite and > 0, got nan'),
    bound("TPN-cov_low-neg", "two_phase_nu", ['--cov-low', '-1'], 'cov_low must be finite and > 0, got -1.0'),
    bound("TPN-cov_high-nan", "two_phase_nu", ['--cov-high', 'nan'], 'cov_high must be finite and > 0, got nan'),
    bound("TPN-cov_high-neg", "two_phase_nu", ['--cov-high', '-1'], 'cov_high must be finite and > 0, got -1.0'),
    bound("TPN-fmd_rounds-0", "two_phase_nu", ['--fmd-rounds', '0'], 'fmd_rounds must be an integer >= 1, got 0'),
    bound("TPN-fmd_step_constant-nan", "two_phase_nu", ['--fmd-step-constant', 'nan'], 'fmd_step_constant must be finite and > 0, got nan'),
    bound("TPN-fmd_step_constant-neg", "two_phase_nu", ['--fmd-step-constant', '-1'], 'fmd_step_constant must be finite and > 0, got -1.0'),
    bound("TPN-fx_rounds-0", "two_phase_nu", ['--fx-rounds', '0'], 'fx_rounds must be an integer >= 1, got 0'),
    bound("TPN-fx_tol-nan", "two_phase_nu", ['--fx-tol', 'nan'], 'fx_tol must be finite and >= 0, got nan'),
    bound("TPN-fx_tol-neg", "two_phase_nu", ['--fx-tol', '-1'], 'fx_tol must be finite and >= 0, got -1.0'),
    bound("TPN-fedavg_steps-0", "two_phase_nu", ['--fedavg-steps', '0'], 'fedavg_steps must be an integer >= 1, got 0'),
    bound("TPN-fedavg_step-nan", "two_phase_nu", ['--fedavg-step', 'nan'], 'fedavg_step must be finite and > 0, got nan'),
    bound("TPN-fedavg_step-neg", "two_phase_nu", ['--fedavg-step', '-1'], 'fedavg_step must be finite and > 0, got -1.0'),
    bound("TPN-fedprox_step-nan", "two_phase_nu", ['--fedprox-step', 'nan'], 'fedprox_step must be finite and > 0, got nan'),
    bound("TPN-fedprox_step-neg", "two_phase_nu", ['--fedprox-step', '-1'], 'fedprox_step must be finite and > 0, got -1.0'),
    bound("TPN-n_boot-0", "two_phase_nu", ['--n-boot', '0'], 'n_boot must be an integer >= 1, got 0'),
    bound("CMP-m-0", "compare", ['--m', '0'], 'm must be an integer >= 1, got 0'),
    bound("CMP-n-0", "compare", ['--n', '0'], 'n must be an integer >= 1, got 0'),
    bound("CMP-d-0", "compare", ['--d', '0'], 'd must be an integer >= 1, got 0'),
    bound("CMP-k-0", "compare", ['--k', '0'], 'k must be an integer >= 2, got 0'),
    bound("CMP-sigma-nan", "compare", ['--sigma', 'nan'], 'sigma must be finite and > 0, got nan'),
    bound("CMP-sigma-neg", "compare", ['--sigma', '-1'], 'sigma must be finite and > 0, got -1.0'),
    bound("CMP-separation-nan", "compare", ['--separation', 'nan'], 'separation must be finite and > 0, got nan'),
    bound("CMP-separation-neg", "compare", ['--separation', '-1'], 'separation must be finite and > 0, got -1.0'),
    bound("CMP-trials-0", "compare", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("CMP-n_inits-0", "compare", ['--n-inits', '0'], 'n_inits must be an integer >= 1, got 0'),
    bound("CMP-n_rounds-0", "compare", ['--n-rounds', '0'], 'n_rounds must be an integer >= 1, got 0'),    bound("IC1-trials-0", "ifca_corollary1", ['--trials', '0'], 'trials must be an integer >= 1, got 0'),
    bound("IC1-d-0", "ifca_corollary1", ['--d', '0'], 'd must be an integer >= 1, got 0'),
    bound("IC1-separation-nan", "ifca_corollary1", ['--separation', 'nan'], 'separation must be finite and > 0, got nan'),
    bound("IC1-separation-neg", "ifca_corollary1", ['--separation', '-1'], 'separation must be finite and > 0, got -1.0'),
    bound("IC1-alpha-nan", "ifca_corollary1", ['--alpha', 'nan'], 'alpha must be finite and in (0, 0.5), got nan'),
    bound("IC1-alpha-neg", "ifca_corollary1", ['--alpha', '-1'], 'alpha must be finite and in (0, 0.5), got -1.0'),
    bound("IC1-ms-3", "ifca_corollary1", ['--ms', '3', '100', '400'], 'ms must be an integer >= 4, got [3, 100, 400]'),
    bound("IC1-n_prime-0", "ifca_corollary1", ['--n-prime', '0'], 'n_prime must be an integer >= 1, got 0'),
    bound("IC1-sigma-nan", "ifca_corollary1", ['--sigma', 'nan'], 'sigma must be finite and > 0, got nan'),
    bound("IC1-sigma-neg", "ifca_corollary1", ['--sigma', '-1'], 'sigma must be finite and > 0, got -1.0'),
    bound("IC1-c1s-nan", "ifca_corollary1", ['--c1s', 'nan', '0.375'], 'c1s must be finite and > 0, got [nan, 0.375]'),
    bound("IC1-c1s-neg", "ifca_corollary1", ['--c1s', '-1', '0.375'], 'c1s must be finite and > 0, got [-1.0, 0.375]'),
    bound("IC1-c1_theorem-nan", "ifca_corollary1", ['--c1-theorem', 'nan'], 'c1_theorem must be finite and > 0, got nan'),
    bound("IC1-c1_theorem-neg", "ifca_corollary1", ['--c1-theorem', '-1'], 'c1_theorem must be finite and > 0, got -1.0'),
    bound("IC1-rounds-0", "ifca_corollary1", ['--rounds', '0'], 'rounds must be an integer >= 1, got 0'),
    bound("IC1-levels-1", "ifca_corollary1", ['--levels', '1'], 'levels must be an integer >= 2, got 1'),
    bound("IC1-margin-nan", "ifca_corollary1", ['--margin', 'nan'], 'margin must be finite and > 0, got nan'),
    bound("IC1-margin-neg", "ifca_corollary1", ['--margin', '-1'], 'margin must be finite and > 0, got -1.0'),
    bound("IC1-kappa-nan", "ifca_corollary1", ['--kappa', 'nan'], 'kappa must be finite and > 0, got nan'),
    bound("IC1-kappa-neg", "ifca_corollary1", ['--kappa', '-1'], 'kappa must be finite and > 0, got -1.0'),
    bound("IC1-m_exp-3", "ifca_corollary1", ['--m-exp', '3'], 'm_exp must be an integer >= 4, got 3'),
    bound("IC1-rhos-nan", "ifca_corollary1", ['--rhos', 'nan', '2.0', '4.0'], 'rhos must be finite and > 0, got [nan, 2.0, 4.0]'),
    bound("IC1-rhos-neg", "ifca_corollary1", ['--rhos', '-1', '2.0', '4.0'], 'rhos must be finite and > 0, got [-1.0, 2.0, 4.0]'),
    bound("IC1-n_primes_exp-0", "ifca_corollary1", ['--n-primes-exp', '0', '4', '8', '16'], 'n_primes_exp must be an integer >= 1, got [0, 4, 8, 16]'),
    bound("IC1-rounds_exp-0", "ifca_corollary1", ['--rounds-exp', '0'], 'rounds_exp must be an integer >= 1, got 0'),
    bound("IC1-last-0", "ifca_corollary1", ['--last', '0'], 'last must be an integer >= 1, got 0'),
    bound("IC1-held_out_rhos-nan", "ifca_corollary1", ['--held-out-rhos', 'nan'], 'held_out_rhos must be finite and > 0, got [nan]'),
    bound("IC1-held_out_rhos-neg", "ifca_corollary1", ['--held-out-rhos', '-1'], 'held_out_rhos must be finite and > 0, got [-1.0]'),
    bound("IC1-miscl_max-nan", "ifca_corollary1", ['--miscl-max', 'nan'], 'miscl_max must be finite and in (0, 1], got nan'),
    bound("IC1-miscl_max-neg", "ifca_corollary1", ['--miscl-max', '-1'], 'miscl_max must be finite and in (0, 1], got -1.0'),
    bound("IC1-lemma2_ns-1", "ifca_corollary1", ['--lemma2-ns', '1', '1000', '4000'], 'lemma2_ns must be an integer >= 2, got [1, 1000, 4000]'),
    bound("IC1-lemma2_ds-0", "ifca_corollary1", ['--lemma2-ds', '0', '10', '20'], 'lemma2_ds must be an integer >= 1, got [0, 10, 20]'),
    bound("IC1-n_boot-0", "ifca_corollary1", ['--n-boot', '0'], 'n_boot must be an integer >= 1, got 0'),
    bound("IC1-level-nan", "ifca_corollary1", ['--level', 'nan'], 'level must be finite and in (0, 1), got nan'),
    bound("IC1-level-neg", "ifca_corollary1", ['--level', '-1'], 'level must be finite and in (0, 1), got -1.0'),
    bound("ISC-d-1", "ifca_strongly_convex", ['--d', '1'], 'd must be an integer >= 2, got 1'),
    bound("ISC-sigma-nan", "ifca_strongly_convex", ['--sigma', 'nan'], 'sigma must be finite and > 0, got nan'),
    bound("ISC-sigma-neg", "ifca_strongly_convex", ['--sigma', '-1'], 'sigma must be finite and > 0, got -1.0'),
    bound("ISC-kappas-nan", "ifca_strongly_convex", ['--kappas', 'nan', '16.0'], 'kappas must be finite and >= 1, got [nan, 16.0]'),
    bound("ISC-kappas-neg", "ifca_strongly_convex", ['--kappas', '-1', '16.0'], 'kappas must be finite and >= 1, got [-1.0, 16.0]'),
    bound("ISC-ps-nan", "ifca_strongly_convex", ['--ps', 'nan', '0.2'], 'ps must be finite and in (0, 0.5], got [nan, 0.2]'),
    bound("ISC-ps-neg", "ifca_strongly_convex", ['--ps', '-1', '0.2'], 'ps must be finite and in (0, 0.5], got [-1.0, 0.2]'),
    bound("ISC-m_ref-3", "ifca_strongly_convex", ['--m-ref', '3'], 'm_ref must be an integer >= 4, got 3'),
    bound("ISC-n_prime_ref-0", "ifca_strongly_convex", ['--n-prime-ref', '0'], 'n_prime_ref must be an integer >= 1, got 0'),
    bound("ISC-kappa_ref-nan", "ifca_strongly_convex", ['--kappa-ref', 'nan'], 'kappa_ref must be finite and >= 1, got nan'),
    bound("ISC-kappa_ref-neg", "ifca_strongly_convex", ['--kappa-ref', '-1'], 'kappa_ref must be finite and >= 1, got -1.0'),
    bound("ISC-ms-3", "ifca_strongly_convex", ['--ms', '3', '100', '200'], 'ms must be an integer >= 4, got [3, 100, 200]'),
    bound("ISC-n_primes-0", "ifca_strongly_convex", ['--n-primes', '0', '10', '20'], 'n_primes must be an integer >= 1, got [0, 10, 20]'),
    bound("ISC-lemma_m-3", "ifca_strongly_convex", ['--lemma-m', '3'], 'lemma_m must be an integer >= 4, got 3'),
    bound("ISC-lemma_sigma-nan", "ifca_strongly_convex", ['--lemma-sigma', 'nan'], 'lemma_sigma must be finite and > 0, got nan'),
    bound("ISC-lemma_sigma-neg", "ifca_strongly_convex", ['--lemma-sigma', '-1'], 'lemma_sigma must be finite and > 0, got -1.0'),
    bound("ISC-lemma_n_primes-0", "ifca_strongly_convex", ['--lemma-n-primes', '0', '2', '4', '8', '16'], 'lemma_n_primes must be an integer >= 1, got [0, 2, 4, 8, 16]'),
    bound("ISC-trials-1", "ifca_strongly_convex", ['--trials', '1'], 'trials must be an integer >= 2, got 1'),
    bound("ISC-eps-nan", "ifca_strongly_convex", ['--eps', 'nan'], 'eps must be finite and > 0, got nan'),
    bound("ISC-eps-neg", "ifca_strongly_convex", ['--eps', '-1'], 'eps must be finite and > 0, got -1.0'),
    bound("ISC-far-nan", "ifca_strongly_convex", ['--far', 'nan'], 'far must be finite and >= 1, got nan'),
    bound("ISC-far-neg", "ifca_strongly_convex", ['--far', '-1'], 'far must be finite and >= 1, got -1.0'),
    bound("ISC-n_boot-99", "ifca_strongly_convex", ['--n-boot', '99'], 'n_boot must be an integer >= 100, got 99'),
    bound("ISC-level-nan", "ifca_strongly_convex", ['--level', 'nan'], 'level must be finite and in (0, 1), got nan'),
    bound("ISC-level-neg", "ifca_strongly_convex", ['--level', '-1'], 'level must be finite and in (0, 1), got -1.0'),
    bound("TP1-rates_ds-0", "two_phase_phase1", ['--rates-ds', '0', '12', '24'], 'rates_ds must be an integer >= 1, got [0, 12, 24]'),
    bound("TP1-rates_ks-1", "two_phase_phase1", ['--rates-ks', '1', '3', '4'], 'rates_ks must be an integer >= 2, got [1, 3, 4]'),
    bound("TP1-rates_p_mins-nan", "two_phase_phase1", ['--rates-p-mins', 'nan', '0.2', '0.3'], 'rates_p_mins must be finite and > 0, got [nan, 0.2, 0.3]'),
    bound("TP1-rates_p_mins-neg", "two_phase_phase1", ['--rates-p-mins', '-1', '0.2', '0.3'], 'rates_p_mins must be finite and > 0, got [-1.0, 0.2, 0.3]'),
    bound("TP1-rates_d_ref-0", "two_phase_phase1", ['--rates-d-ref', '0'], 'rates_d_ref must be an integer >= 1, got 0'),
    bound("TP1-rates_k_ref-1", "two_phase_phase1", ['--rates-k-ref', '1'], 'rates_k_ref must be an integer >= 2, got 1'),
    bound("TP1-rates_p_ref-nan", "two_phase_phase1", ['--rates-p-ref', 'nan'], 'rates_p_ref must be finite and > 0, got nan'),
    bound("TP1-rates_p_ref-neg", "two_phase_phase1", ['--rates-p-ref', '-1'], 'rates_p_ref must be finite and > 0, got -1.0'),
    bound("TP1-rates_c-nan", "two_phase_phase1", ['--rates-c', 'nan'], 'rates_c must be finite and > 0, got nan'),
    bound("TP1-rates_c-neg", "two_phase_phase1", ['--rates-c', '-1'], 'rates_c must be finite and > 0, got -1.0'),
    bound("TP1-rates_nA_grid-1", "two_phase_phase1", ['--rates-nA-grid', '1', '8', '16', '32', '64'], 'rates_nA_grid must be an integer >= 2, got [1, 8, 16, 32, 64]'),
    bound("TP1-rates_divisor-0", "two_phase_phase1", ['--rates-divisor', '0'], 'rates_divisor must be an integer >= 1, got 0'),
]


@pytest.mark.parametrize("name,argv,fragment", BOUNDS)
def test_a_value_out_of_range_is_refused_naming_its_flag(name, argv, fragment, tmp_path, capsys):
    flag, field = _flag_of(argv)
    _check_refused(name, argv, fragment, (flag,), tmp_path, capsys)


def test_the_bounds_table_covers_every_numeric_flag_of_every_experiment():
    covered = {(name, _flag_of(argv)[1]) for name, argv, _ in (case.values for case in BOUNDS)}
    for name, module in EXPERIMENTS.items():
        for field, (kind, _, choices) in _fields(module).items():
            if kind in (int, float) and not choices:
                assert (name, field) in covered, (name, field)


# --------------------------------------------------------------------------- what argparse refuses

def _fields(module):
    """``{field: (type of one value, is a list, choices)}`` of an experiment's flags."""
    hints = typing.get_type_hints(module.Config)
    fields = {}
    for field in dataclasses.fields(module.Config):
        if field.name == "preset":
            continue
        hint = hints[field.name]
        is_list = typing.get_origin(hint) is tuple
        fields[field.name] = (typing.get_args(hint)[0] if is_list else hint, is_list, field.metadata.get("choices"))
    return fields


def _allows_empty(module, field):
    """Whether a list flag may be given with no value (an empty tuple is legal for it)."""
    return next(f for f in dataclasses.fields(module.Config) if f.name == field).metadata["check"]["allow_empty"]


def _parser_cases():
    """Per flag of every experiment: a word for a number, an empty list, an unknown choice, a
    value given to a switch; the fragment is argparse's message naming the flag."""
    cases = []
    for name, module in EXPERIMENTS.items():
        for field, (kind, is_list, choices) in _fields(module).items():
            flag, tag = "--" + field.replace("_", "-"), f"{ABBREVIATIONS[name]}-{field}"
            if kind is bool:
                cases.append(pytest.param(name, [f"{flag}=yes"], f"argument {flag}/--no-{flag[2:]}: ignored explicit argument 'yes'",
                                          id=f"{tag}-switch-value"))
                continue
            if choices:
                cases.append(pytest.param(name, [flag, "bogus"], f"argument {flag}: invalid choice: 'bogus'",
                                          id=f"{tag}-choice"))
            else:
                cases.append(pytest.param(name, [flag, "many"], f"argument {flag}: invalid {kind.__name__} value: 'many'",
                                          id=f"{tag}-word"))
            if kind is int and not choices:
                cases.append(pytest.param(name, [flag, "2.5"], f"argument {flag}: invalid int value: '2.5'",
                                          id=f"{tag}-fraction"))
            if is_list and not _allows_empty(module, field):
                cases.append(pytest.param(name, [flag], f"argument {flag}: expected at least one argument",
                                          id=f"{tag}-empty"))
    return cases


PARSER_CASES = _parser_cases()


@pytest.mark.parametrize("name,argv,fragment", PARSER_CASES)
def test_a_value_the_parser_cannot_read_is_refused_naming_its_flag(name, argv, fragment, tmp_path, capsys):
    flag = argv[0].split("=")[0]
    _check_refused(name, argv, fragment, (flag,), tmp_path, capsys)


# --------------------------------------------------------------------------- combinations and sizes

def combo(id, name, argv, fragment, names):
    return pytest.param(name, argv, fragment, names, id=id)


# Values legal alone but not together, repeated values (a repeated cell), and sweeps too large
# to run (a count or a time, both independent of the machine).  ``names``: the words, one of
# which the message must hold (the flags or fields concerned).
COMBOS = [
    # ---- success_vs_R
    combo("SR-sigmas-repeated", "success_vs_R", ["--sigmas", "0.5", "0.5"], "sigmas must be distinct, got [0.5, 0.5]",
          ("sigmas",)),
    combo("SR-rs-repeated", "success_vs_R", ["--rs", "1.0", "1.0"], "rs must be distinct, got [1.0, 1.0]", ("rs",)),
    combo("SR-sigmas-repeated-shared", "success_vs_R", ["--sigmas", "0.5", "0.5", "--shared-draws"],
          "sigmas must be distinct, got [0.5, 0.5]", ("sigmas",)),
    combo("SR-too-many-trials", "success_vs_R", ["--trials", "100000000"], "x 100000000 trials = 1.5e+09 trials, "
          "more than the engine's limit of 1e+07", ("trials",)),
    # ---- success_vs_mn
    combo("SMN-k-above-ms", "success_vs_mn", ["--k", "20"], "every value of ms must be at least k", ("k=20",)),
    combo("SMN-ms-repeated", "success_vs_mn", ["--ms", "10", "10"], "ms must be distinct, got [10, 10]",
          ("ms",)),
    combo("SMN-rs-repeated", "success_vs_mn", ["--rs", "0.1", "0.1"], "rs must be distinct, got [0.1, 0.1]", ("rs",)),
    combo("SMN-too-many-trials", "success_vs_mn", ["--trials", "100000000"], "more than the engine's limit of 1e+07",
          ("trials",)),
    combo("SMN-rounds-take-years", "success_vs_mn", ["--n-rounds", "1000000000000"], "would take about 1.92e+03 years",
          ("reduce the trials, the grid or the problem sizes",)),
    # ---- error_floor
    combo("EF-k-1", "error_floor", ["--k", "1"], "k must be an integer >= 2, got 1",
          ("k",)),
    combo("EF-ms-one-point", "error_floor", ["--ms", "25"], "ms must hold at least two values (a slope needs two "
          "points), got [25]", ("ms",)),
    combo("EF-k-above-ms", "error_floor", ["--k", "30"], "ms and m_ref must be at least 2k = 60", ("ms", "m_ref")),
    combo("EF-ps-above-1-over-k", "error_floor", ["--ps", "0.1", "0.6"], "ps and p_ref must be at most "
          "1/k = 0.5, got [0.1, 0.6]", ("ps",)),
    combo("EF-ps-empty-cluster", "error_floor", ["--ps", "0.001", "0.5"], "min(ps) * min(ms) must be >= 1, got "
          "0.001 * 25", ("ps",)),
    combo("EF-alpha-half", "error_floor", ["--alpha", "0.5"], "alpha must be finite and in (0, 0.5), got 0.5",
          ("alpha",)),
    combo("EF-too-many-trials", "error_floor", ["--trials", "100000000"], "more than the engine's limit of 1e+07",
          ("trials",)),
    combo("EF-restarts-no-memory", "error_floor", ["--restarts", "1000000000000"], "of memory, more than this machine's",
          ("--restarts",)),
    # ---- ifca_basin
    combo("IB-ks-1", "ifca_basin", ["--ks", "1"], "ks must be an integer >= 2, got [1]", ("ks",)),
    combo("IB-ks-repeated", "ifca_basin", ["--ks", "2", "2"], "ks must be distinct, got [2, 2]", ("ks",)),
    combo("IB-alphas-repeated", "ifca_basin", ["--alphas", "0.5", "0.5"], "alphas must be distinct, got [0.5, 0.5]",
          ("alphas",)),
    combo("IB-directions-repeated", "ifca_basin", ["--directions", "random", "random"],
          "directions must be distinct, got ['random', 'random']", ("directions",)),
    combo("IB-d-above-points", "ifca_basin", ["--d", "500"], "m_per * n_prime must exceed d + 1 = 501", ("d + 1",)),
    combo("IB-level-1", "ifca_basin", ["--level", "1"], "level must be finite and in (0, 1), got 1.0", ("level",)),
    combo("IB-too-many-trials", "ifca_basin", ["--trials", "100000000"], "more than the engine's limit of 1e+07",
          ("trials",)),
    combo("IB-rounds-no-memory", "ifca_basin", ["--n-rounds", "1000000000000"], "of memory, more than this machine's",
          ("--n-rounds",)),
    # ---- ifca_misclustering
    combo("IM-rhos-repeated", "ifca_misclustering", ["--rhos", "0.5", "0.5"], "rhos must be distinct, got [0.5, 0.5]",
          ("rhos",)),
    combo("IM-fit-rhos-outside-rhos", "ifca_misclustering", ["--fit-rhos", "3.0"],
          "fit_rhos must be a non-empty subset of rhos [0.5, 1.0, 2.0, 4.0, 8.0], got [3.0]", ("fit_rhos",)),
    combo("IM-rhos-drop-fit-rhos", "ifca_misclustering", ["--rhos", "0.5"],
          "fit_rhos must be a non-empty subset of rhos [0.5], got [1.0, 2.0, 4.0]", ("fit_rhos",)),
    combo("IM-level-1", "ifca_misclustering", ["--level", "1"], "level must be finite and in (0, 1), got 1.0", ("level",)),
    combo("IM-m-1", "ifca_misclustering", ["--m", "1"], "m must be an integer >= 2, got 1", ("m",)),
    combo("IM-too-many-trials", "ifca_misclustering", ["--trials", "100000000"], "more than the engine's limit of 1e+07",
          ("trials",)),
    # ---- ifca_contraction
    combo("IC-m-1", "ifca_contraction", ["--m", "1"], "m must be an integer >= 2, got 1", ("m",)),
    combo("IC-rhos-repeated", "ifca_contraction", ["--rhos", "1.0", "1.0"], "rhos must be distinct, got [1.0, 1.0]",
          ("rhos",)),
    combo("IC-alphas-repeated", "ifca_contraction", ["--alphas", "0.1", "0.1"], "alphas must be distinct, got [0.1, 0.1]",
          ("alphas",)),
    combo("IC-n-primes-repeated", "ifca_contraction", ["--n-primes", "3", "3"], "n_primes must be distinct, got [3, 3]",
          ("n_primes",)),
    combo("IC-level-0", "ifca_contraction", ["--level", "0"], "level must be finite and in (0, 1), got 0.0", ("level",)),
    combo("IC-too-many-trials", "ifca_contraction", ["--trials", "100000000"], "more than the engine's limit of 1e+07",
          ("trials",)),
    # ---- two_phase
    combo("TP-size-mean-below-1", "two_phase", ["--size-mean", "0.5"], "size_mean must be finite and >= 1, "
          "got 0.5", ("size_mean",)),
    combo("TP-size-mean-above-n-max", "two_phase", ["--size-mean", "300"], "size_mean must be at most n_max; "
          "got size_mean=300.0, n_max=200", ("size_mean",)),
    combo("TP-size-mean-1e300", "two_phase", ["--size-mean", "1e300"], "size_mean must be at most n_max; "
          "got size_mean=1e+300, n_max=200", ("size_mean",)),
    combo("TP-size-mean-overflow", "two_phase", ["--size-mean", "1e309"], "size_mean must be finite and >= 1, "
          "got inf", ("size_mean",)),
    combo("TP-size-mean-unreachable", "two_phase", ["--laws", "pareto", "--size-mean", "199"],
          "size_mean=199.0 with n_max=200: mean=199.0 is not reachable by law='pareto'", ("size_mean",)),
    combo("TP-size-mean-zipf-top", "two_phase", ["--size-mean", "200"],
          "size_mean=200.0 with n_max=200: mean=200.0 is not reachable by law='zipf'", ("size_mean",)),
    combo("TP-cov-low-above-high", "two_phase", ["--cov-low", "3", "--cov-high", "2"],
          "cov_high must be at least cov_low; got cov_high=2.0, cov_low=3.0", ("cov_high",)),
    combo("TP-checkpoint-above-rounds", "two_phase", ["--checkpoint-every", "1000"],
          "checkpoint_every must be at most the total rounds 160, got 1000", ("checkpoint_every",)),
    combo("TP-random-anchors-below-k", "two_phase", ["--anchor-mode", "random", "--n-anchors", "1"],
          "n_anchors must be in [k, min M] = [3, 2000], got 1", ("n_anchors",)),
    combo("TP-p-ref-above-1-over-k", "two_phase", ["--p-ref", "0.5"], "p_mins and p_ref must be in (0, 1/k] = "
          "(0, 0.3333], got [0.05, 0.2] and p_ref=0.5", ("p_ref",)),
    combo("TP-anchor-points-1", "two_phase", ["--anchor-points", "1"], "anchor_points must be an integer >= 2, got 1",
          ("anchor_points",)),
    combo("TP-d-below-k", "two_phase", ["--k", "3", "--d", "2"], "d must be at least k (Phase 1 estimates k "
          "directions in dimension d); got d=2, k=3", ("d",)),
    combo("TP-n-max-1", "two_phase", ["--n-max", "1", "--size-mean", "1"], "n_max must be an integer >= 2, "
          "got 1", ("n_max",)),
    combo("TP-too-many-trials", "two_phase", ["--trials", "100000000"], "more than the engine's limit of 1e+07",
          ("trials",)),
    # ---- two_phase_phase1
    combo("TP1-main-divisor-not-a-target", "two_phase_phase1", ["--main-divisor", "5"],
          "main_divisor must be one of target_divisors [2, 3, 4], got 5", ("main_divisor",)),
    combo("TP1-nA-grid-decreasing", "two_phase_phase1", ["--nA-grid", "6", "3"],
          "nA_grid must be increasing, got [6, 3]", ("nA_grid",)),
    combo("TP1-nA-grid-one-point", "two_phase_phase1", ["--nA-grid", "1", "3"],
          "nA_grid must be an integer >= 2, got [1, 3]", ("nA_grid",)),
    combo("TP1-k-above-dimensions", "two_phase_phase1", ["--k", "10"], "every dimension must exceed k=10", ("k=10",)),
    combo("TP1-need-ds-one-point", "two_phase_phase1", ["--need-ds", "6"],
          "need_ds and need_p_mins need at least 2 values each to fit exponents, got [6]", ("need_ds",)),
    combo("TP1-need-p-mins-above-1-over-k", "two_phase_phase1", ["--need-p-mins", "0.2", "0.5"],
          "need_p_mins and p_ref must be in (0, 1/k] = (0, 0.3333], got [0.2, 0.5]", ("need_p_mins",)),
    combo("TP1-target-divisors-decreasing", "two_phase_phase1", ["--target-divisors", "3", "2"],
          "target_divisors must be increasing, got [3, 2]", ("target_divisors",)),
    combo("TP1-need-cs-nan-last", "two_phase_phase1", ["--need-cs", "0.5", "1.0", "nan"],
          "need_cs must be finite and > 0, got [0.5, 1.0, nan]", ("need_cs",)),
    combo("TP1-k-1", "two_phase_phase1", ["--k", "1"], "k must be an integer >= 2, "
          "got 1", ("k",)),
    combo("TP1-too-many-trials", "two_phase_phase1", ["--trials", "100000000"], "more than the engine's limit of 1e+07",
          ("trials",)),
    combo("TP1-rounds-no-memory", "two_phase_phase1", ["--fmd-rounds", "1000000000000"],
          "of memory, more than this machine's", ("--fmd-rounds",)),
    combo("TP1-rates-ds-without-ref", "two_phase_phase1", ["--rates-ds", "6", "24"],
          "rates_ds must hold rates_d_ref=12 (the sweeps meet at the reference cell), got [6, 24]", ("rates_ds",)),
    combo("TP1-rates-ds-decreasing", "two_phase_phase1", ["--rates-ds", "24", "12", "6"],
          "rates_ds must be increasing, got [24, 12, 6]", ("rates_ds",)),
    combo("TP1-rates-p-ref-above-1-over-k", "two_phase_phase1", ["--rates-p-ref", "0.5", "--rates-p-mins", "0.1", "0.5"],
          "rates_p_ref must be <= 1/max(rates_ks) and rates_p_mins <= 1/rates_k_ref, got 0.5, [0.1, 0.5]",
          ("rates_p_ref",)),
    # ---- ifca_corollary1
    combo("IC1-ms-odd", "ifca_corollary1", ["--ms", "25", "50"],
          "ms and m_exp must be even (k = 2 balanced clusters), got [25, 50] and m_exp=100", ("--ms",)),
    combo("IC1-c1s-without-theorem", "ifca_corollary1", ["--c1s", "0.5", "2.0"],
          "c1s must include c1_theorem = 0.375, got [0.5, 2.0]", ("--c1s",)),
    combo("IC1-last-above-rounds", "ifca_corollary1", ["--last", "1000"], "last must be at most rounds_exp = 12, got 1000",
          ("--last",)),
    combo("IC1-held-out-not-a-rho", "ifca_corollary1", ["--held-out-rhos", "3.5"],
          "held_out_rhos must be among rhos [1.0, 2.0, 4.0], got [3.5]", ("--held-out-rhos",)),
    combo("IC1-every-rho-held-out", "ifca_corollary1", ["--rhos", "1.0", "2.0", "--held-out-rhos", "1.0", "2.0"],
          "held_out_rhos must leave at least one of rhos [1.0, 2.0] in the fit of c4, got [1.0, 2.0]",
          ("--held-out-rhos",)),
    combo("IC1-lemma2-N-below-2d", "ifca_corollary1", ["--lemma2-ns", "10", "1000", "--lemma2-ds", "10"],
          "lemma2_ns must be at least 2 max(lemma2_ds) = 20", ("--lemma2-ns",)),
    combo("IC1-miscl-max-above-1", "ifca_corollary1", ["--miscl-max", "1.5"], "miscl_max must be finite and in (0, 1], "
          "got 1.5", ("--miscl-max",)),
    combo("IC1-too-many-trials", "ifca_corollary1", ["--trials", "100000000"], "more than the engine's limit of 1e+07",
          ("trials",)),
    # ---- ifca_strongly_convex
    combo("ISC-ps-above-half", "ifca_strongly_convex", ["--ps", "0.2", "0.6"], "ps must be finite and in (0, 0.5], "
          "got [0.2, 0.6]", ("--ps",)),
    combo("ISC-kappas-below-1", "ifca_strongly_convex", ["--kappas", "0.5", "4"], "kappas must be finite and >= 1, "
          "got [0.5, 4.0]", ("--kappas",)),
    combo("ISC-level-1", "ifca_strongly_convex", ["--level", "1"], "level must be finite and in (0, 1), got 1.0",
          ("--level",)),
    combo("ISC-too-many-trials", "ifca_strongly_convex", ["--trials", "100000000"],
          "more than the engine's limit of 1e+07", ("trials",)),
    # ---- two_phase_nu
    combo("TPN-k-1", "two_phase_nu", ["--k", "1"], "k must be an integer >= 2, got 1", ("k",)),
    combo("TPN-d-below-k", "two_phase_nu", ["--d", "2"], "d must be at least k (Phase 1 estimates k directions "
          "in dimension d); got d=2, k=3", ("d",)),
    combo("TPN-n-low-at-n-ref", "two_phase_nu", ["--n-low", "8"], "n_low must be below n_ref (0 = n_ref - 1); got n_low=8, n_ref=8",
          ("n_low",)),
    combo("TPN-Ms-fixed-N-above-N", "two_phase_nu", ["--Ms-fixed-N", "1000", "30000"],
          "every value of Ms_fixed_N must be at most N_fixed (every client needs a point); got "
          "Ms_fixed_N=[1000, 30000], N_fixed=24000", ("Ms_fixed_N",)),
    combo("TPN-n-tiny-above-N", "two_phase_nu", ["--n-tiny", "1000"], "tiny clients of n_tiny=1000 points leave",
          ("n_tiny",)),
    combo("TPN-tiny-fraction-1", "two_phase_nu", ["--tiny-fractions", "0", "1"],
          "tiny_fractions must be finite and in [0, 1), got [0.0, 1.0]", ("tiny_fractions",)),
    combo("TPN-chi2s-one-point", "two_phase_nu", ["--chi2s", "0.5"], "chi2s needs at least 2 values (a slope), got [0.5]",
          ("chi2s",)),
    combo("TPN-p-mins-above-1-over-k", "two_phase_nu", ["--p-mins", "0.1", "0.5"],
          "p_mins and p_ref must be at most 1/k = 0.3333 (the smallest cluster's share); got "
          "p_mins=[0.1, 0.5]", ("p_mins",)),
    combo("TPN-cov-low-above-high", "two_phase_nu", ["--cov-low", "3", "--cov-high", "2"],
          "cov_high must be at least cov_low; got cov_high=2.0, cov_low=3.0", ("cov_high",)),
    combo("TPN-Ms-fixed-n-below-2k", "two_phase_nu", ["--Ms-fixed-n", "4", "500"],
          "every value of Ms_fixed_n must be at least 2k (two clients per cluster); got "
          "Ms_fixed_n=[4, 500], k=3", ("Ms_fixed_n",)),
    combo("TPN-anchor-points-1", "two_phase_nu", ["--anchor-points", "1"], "anchor_points must be an integer >= 2, got 1",
          ("anchor_points",)),
    combo("TPN-too-many-trials", "two_phase_nu", ["--trials", "100000000"], "more than the engine's limit of 1e+07",
          ("trials",)),
    # ---- compare
    combo("CMP-k-1", "compare", ["--k", "1"], "k must be an integer >= 2, got 1", ("k",)),
    combo("CMP-k-above-m", "compare", ["--k", "41"], "k must be at most m (every cluster needs a client); got k=41, m=40", ("k",)),
    combo("CMP-regimes-repeated", "compare", ["--regimes", "balanced", "balanced"],
          "regimes must be distinct, got ['balanced', 'balanced']", ("regimes",)),
    combo("CMP-unequal-p-k-6", "compare", ["--k", "6", "--m", "60"],
          "the unequal_p regime gives cluster 0 probability 0.2, which needs k <= 5, got k=6", ("k=6",)),
    combo("CMP-too-many-trials", "compare", ["--trials", "100000000"], "more than the engine's limit of 1e+07",
          ("trials",)),
]


@pytest.mark.parametrize("name,argv,fragment,names", COMBOS)
def test_a_bad_combination_or_size_is_refused_in_one_line(name, argv, fragment, names, tmp_path, capsys):
    _check_refused(name, argv, fragment, names, tmp_path, capsys)


# --------------------------------------------------------------------------- the shared flags, per experiment

def _shared_cases():
    """The engine's flags and ``--redraw``: the same code for every experiment, so checked for each."""
    cases = []
    for name in CONFIG_EXPERIMENTS:
        tag = ABBREVIATIONS[name]
        cases += [
            pytest.param(name, ["--jobs", "0"], "argument --jobs: expected a positive integer, got 0", ("--jobs",),
                         id=f"{tag}-jobs-0"),
            pytest.param(name, ["--seed", "-1"], "argument --seed: expected a non-negative integer, got -1", ("--seed",),
                         id=f"{tag}-seed-negative"),
            pytest.param(name, ["--chunk-size", "none"], "argument --chunk-size: expected a positive integer, got 'none'",
                         ("--chunk-size",), id=f"{tag}-chunk-size-word"),
            pytest.param(name, ["--connect-timeout", "inf"], "argument --connect-timeout: expected a finite number",
                         ("--connect-timeout",), id=f"{tag}-timeout-inf"),
            pytest.param(name, ["--scheduler", "localhost:8786"], "expected a Dask scheduler address",
                         ("--scheduler",), id=f"{tag}-scheduler-no-scheme"),
            pytest.param(name, ["--jobs", "2", "--dask-local", "2"], "--jobs applies to local processes", ("--jobs",),
                         id=f"{tag}-jobs-with-dask"),
            pytest.param(name, ["--preset", "nope"], "argument --preset: invalid choice: 'nope'", ("--preset",),
                         id=f"{tag}-preset"),
            pytest.param(name, ["--frobnicate"], "unrecognized arguments: --frobnicate", ("--frobnicate",),
                         id=f"{tag}-unknown-flag"),
            pytest.param(name, ["--redraw", "{empty}", "--trials", "3"], "drop --trials", ("--redraw",),
                         id=f"{tag}-redraw-with-a-flag"),
            pytest.param(name, ["--redraw", "{empty}"], "is not a results directory (it has no manifest.json)",
                         ("--redraw",), id=f"{tag}-redraw-empty"),
            pytest.param(name, ["--redraw", "{other}"], "holds results of 'other', not of " + repr(name), ("--redraw",),
                         id=f"{tag}-redraw-other-experiment"),
        ]
    return cases


SHARED_CASES = _shared_cases()


@pytest.fixture
def places(tmp_path):
    """The directories ``{empty}`` and ``{other}`` (a finished run of another experiment) stand for."""
    empty = tmp_path / "empty"
    empty.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.json").write_text(json.dumps({"format": "mixreg.montecarlo/1", "status": "complete",
                                                     "sweep": {"name": "other"}}))
    return {"empty": empty, "other": other}


@pytest.mark.parametrize("name,argv,fragment,names", SHARED_CASES)
def test_a_bad_engine_or_redraw_flag_is_refused_in_one_line(name, argv, fragment, names, places, tmp_path, capsys):
    argv = [item.format(**places) for item in argv]
    _check_refused(name, argv, fragment, names, tmp_path, capsys)


# --------------------------------------------------------------------------- legal edges

def edge(id, name, argv, n_cells, refusals=()):
    """A legal edge; ``refusals`` names the methods compare warns it will record as refused."""
    return pytest.param(name, argv, n_cells, refusals, id=id)


# The smallest legal sizes, one value per axis, zeros where zero is allowed.  ``n_cells``: the
# cells of the sweep, the product of the axes (with the reference cell shared between axes where
# an experiment has one, and both separation scales in one cell with --shared-draws).
EDGES = [
    edge("SR-smallest", "success_vs_R", ["--sigmas", "0", "--rs", "1.0", "--k", "2", "--m", "2", "--n", "1", "--d", "1",
                                         "--trials", "1", "--n-inits", "1", "--n-rounds", "1", "--step-sizes", "0.1"], 1),
    edge("SR-k-equals-m", "success_vs_R", ["--k", "3", "--m", "3", "--sigmas", "0.5", "--rs", "1.0"], 1),
    edge("SR-shared-draws", "success_vs_R", ["--sigmas", "0", "0.5", "--rs", "1.0", "2.0", "--shared-draws"], 2),
    edge("SR-independent-draws", "success_vs_R", ["--sigmas", "0", "0.5", "--rs", "1.0", "2.0", "--no-shared-draws"], 4),
    edge("SR-offset-0", "success_vs_R", ["--threshold-offset", "0", "--sigmas", "0", "--rs", "1.0"], 1),
    edge("SMN-smallest", "success_vs_mn", ["--ms", "2", "--ns", "1", "--rs", "0.5", "--d", "1", "--k", "2", "--trials", "1",
                                           "--n-inits", "1", "--n-rounds", "1", "--step-sizes", "1"], 1),
    edge("SMN-shared-draws", "success_vs_mn", ["--ms", "4", "8", "--ns", "2", "--rs", "0.5", "1.0", "--shared-draws"], 2),
    edge("SMN-sigma-0", "success_vs_mn", ["--sigma", "0", "--threshold-offset", "0.1", "--ms", "4", "--ns", "2",
                                          "--rs", "0.5"], 1),
    # noise or offset at the top of the float range: the known-label prediction stays finite
    edge("SMN-sigma-1e300", "success_vs_mn", ["--sigma", "1e300"], 42),
    edge("SMN-offset-1e300", "success_vs_mn", ["--threshold-offset", "1e300"], 42),
    edge("EF-smallest", "error_floor", ["--k", "2", "--ms", "4", "8", "--n-primes", "1", "2", "--ds", "1", "2",
                                        "--sigmas", "0.1", "0.2", "--ps", "0.25", "0.5", "--m-ref", "4",
                                        "--n-prime-ref", "1", "--d-ref", "1", "--sigma-ref", "0.1", "--p-ref", "0.5",
                                        "--trials", "1", "--restarts", "1", "--step-sizes", "0.5",
                                        "--practical-rounds", "1", "--n-boot", "1", "--halvings", "1"], 6),
    edge("EF-tolerances-0", "error_floor", ["--practical-tol", "0", "--tolerance", "0", "--ms", "50", "100",
                                            "--n-primes", "10", "20", "--ds", "5", "10", "--sigmas", "0.1", "0.2",
                                            "--ps", "0.25", "0.5"], 6),
    edge("IB-smallest", "ifca_basin", ["--ks", "2", "--alphas", "0.5", "--directions", "random", "--m-per", "1",
                                       "--n-prime", "3", "--d", "1", "--n-rounds", "1", "--trials", "1"], 1),
    edge("IB-every-direction", "ifca_basin", ["--ks", "2", "3", "--alphas", "0.5", "--directions", "random",
                                              "adversarial", "shifted"], 6),
    edge("IM-smallest", "ifca_misclustering", ["--rhos", "1.0", "--fit-rhos", "1.0", "--targets", "1.0", "--m", "2",
                                               "--d", "1", "--trials", "1", "--n-boot", "1"], 1),
    edge("IC-smallest", "ifca_contraction", ["--rhos", "1.0", "--alphas", "0.1", "--n-primes", "1", "--m", "2", "--d", "1",
                                             "--trials", "1"], 1),
    edge("IC-c3-0", "ifca_contraction", ["--c3", "0", "--rhos", "1.0", "4.0", "--alphas", "0.1", "--n-primes", "3"], 2),
    edge("TP-smallest", "two_phase", ["--Ms", "6", "--M-ref", "6", "--laws", "equal", "--law-ref", "equal",
                                      "--p-mins", "0.3333333333", "--p-ref", "0.3333333333", "--k", "3", "--d", "3",
                                      "--trials", "1", "--size-mean", "2", "--n-max", "2", "--fmd-rounds", "1",
                                      "--fx-rounds", "1", "--checkpoint-every", "1", "--steps", "0.5",
                                      "--ifca-restarts", "1", "--anchor-points", "2"], 1),
    edge("TP-zeros", "two_phase", ["--sigma", "0", "--fmd-clients", "0", "--n-anchors", "0", "--Ms", "60",
                                   "--M-ref", "60", "--laws", "zipf", "--law-ref", "zipf", "--p-mins", "0.2",
                                   "--p-ref", "0.2"], 1),
    # two anchor modes x (d_ref, nA_ref) = 2 cells, the 2 x 2 (need_ds, need_p_mins) cells, one of them shared,
    # and part (c)'s one reference cell (its d, k and p_min sweeps of one value each meet there)
    edge("TP1-smallest", "two_phase_phase1", ["--k", "2", "--d-grid", "3", "--need-ds", "3", "4", "--d-ref", "3",
                                              "--nA-grid", "2", "--nA-ref", "2", "--need-nA", "2", "--need-p-mins", "0.25",
                                              "0.5", "--p-ref", "0.5", "--need-cs", "1", "--c-ref", "1",
                                              "--target-divisors", "1", "--main-divisor", "1", "--trials", "1",
                                              "--fmd-rounds", "1", "--n-anchors", "2", "--n-boot", "1",
                                              "--rates-ds", "3", "--rates-d-ref", "3", "--rates-ks", "2",
                                              "--rates-k-ref", "2", "--rates-p-mins", "0.5", "--rates-p-ref", "0.5",
                                              "--rates-nA-grid", "2", "--rates-c", "1", "--rates-divisor", "1"], 6),
    # the quick grid: 22 cells of parts (a) and (b), part (c)'s three sweeps of three values meeting in one cell (7)
    edge("TP1-zeros", "two_phase_phase1", ["--sigma", "0", "--far", "0"], 29),
    # one cell of each part: rounds (m x c1), exponential (rho x n'), Lemma 2 (N x d); an empty held-out list
    edge("IC1-smallest", "ifca_corollary1", ["--trials", "1", "--d", "1", "--ms", "4", "--n-prime", "1", "--c1s", "0.375",
                                             "--rounds", "1", "--levels", "2", "--m-exp", "4", "--rhos", "1",
                                             "--held-out-rhos", "--n-primes-exp", "1", "--rounds-exp", "1", "--last",
                                             "1", "--lemma2-ns", "2", "--lemma2-ds", "1", "--n-boot", "1"], 3),
    # 3 m x 2 c1 rounds cells, 3 rho x 4 n' exponential cells, 3 N x 3 d Lemma 2 cells
    edge("IC1-quick", "ifca_corollary1", [], 27),
    # one rate cell (kappa x p), the floor axes' shared reference, one lemma cell (kappa x n')
    edge("ISC-smallest", "ifca_strongly_convex", ["--d", "2", "--kappas", "1", "--ps", "0.5", "--ms", "4", "--n-primes",
                                                  "1", "--m-ref", "4", "--n-prime-ref", "1", "--kappa-ref", "1",
                                                  "--lemma-m", "4", "--lemma-n-primes", "1", "--trials", "2",
                                                  "--n-boot", "100"], 3),
    # 2 kappa x 2 p rate cells, 3 m + 3 n' floor cells sharing (m_ref, n'_ref), 2 kappa x 5 n' lemma cells
    edge("ISC-quick", "ifca_strongly_convex", [], 19),
    edge("TPN-zeros", "two_phase_nu", ["--n-low", "0", "--sigma", "0", "--fx-tol", "0"], 19),
    edge("CMP-smallest", "compare", ["--regimes", "balanced", "--m", "2", "--k", "2", "--n", "1", "--d", "1",
                                     "--trials", "1", "--n-inits", "1", "--n-rounds", "1"], 1,
         refusals=("pacfl needs d >= 3", "pacfl_x needs d >= 4", "kfed needs every client to hold at least")),
    edge("CMP-k-equals-m", "compare", ["--regimes", "balanced", "unequal_p", "--k", "5", "--m", "5"], 2),
]


@pytest.mark.parametrize("name,argv,n_cells,refusals", EDGES)
def test_a_legal_edge_is_accepted_with_the_grid_its_axes_give(name, argv, n_cells, refusals, tmp_path, capsys):
    module = EXPERIMENTS[name]
    code = _main(module, _dry(argv, tmp_path / "out"))
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = err.splitlines()
    assert len(lines) == len(refusals), lines
    for line, refusal in zip(lines, refusals):
        assert line.startswith(f"python -m experiments.{name}: warning: regime ") and refusal in line, line
        assert line.endswith("(recorded as refused; the other methods run)"), line
    assert "Traceback" not in out
    with warnings.catch_warnings(record=True) as caught:  # the refusals again, as SweepWarnings
        warnings.simplefilter("always")
        sweep = module.STUDY.sweep(module.STUDY.config_from_args(module.STUDY.parser().parse_args(argv)))
    assert [str(w.message) for w in caught] == [line.split(": warning: ", 1)[1] for line in lines]
    assert len(sweep.cells) == n_cells
    assert f"Grid: {n_cells} cells x " in out
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- the two other scripts

def test_every_experiment_module_is_in_a_table():
    tabled = {name for table in (BOUNDS, COMBOS, EDGES) for name in (case.values[0] for case in table)}
    assert tabled == set(CONFIG_EXPERIMENTS)
    root = pathlib.Path(__file__).resolve().parents[1] / "experiments"
    studies = {path.parent.name for path in root.glob("*/__init__.py")
               if hasattr(importlib.import_module(f"experiments.{path.parent.name}"), "STUDY")}
    assert studies == set(CONFIG_EXPERIMENTS), f"studies the tables miss or name wrongly: {studies ^ set(CONFIG_EXPERIMENTS)}"
    assert len(BOUNDS) + len(PARSER_CASES) + len(COMBOS) + len(SHARED_CASES) + len(EDGES) >= 500


@pytest.mark.parametrize("module,argv,fragment", [
    pytest.param(bench_ifca, ["--frobnicate"], "unrecognized arguments: --frobnicate", id="bench-unknown-flag"),
    pytest.param(bench_ifca, ["--quick=yes"], "argument --quick: ignored explicit argument 'yes'", id="bench-switch-value"),
    pytest.param(redraw_figures, ["--frobnicate"], "unrecognized arguments: --frobnicate", id="redraw-unknown-flag"),
    pytest.param(redraw_figures, ["--data"], "argument --data: expected one argument", id="redraw-data-missing"),
])
def test_a_bad_flag_of_the_other_scripts_is_one_line(module, argv, fragment, capsys):
    assert _main(module, argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert out == "" and len(lines) == 1, lines
    assert lines[0].startswith(f"python -m experiments.{module.__name__.split('.')[-1]}: error: ") and fragment in lines[0]


def test_redraw_figures_without_results_is_one_line(tmp_path, capsys):
    for data in (tmp_path / "absent", tmp_path):
        assert _main(redraw_figures, ["--data", str(data)]) == 1
        lines = capsys.readouterr().err.strip().splitlines()
        assert lines == [f"python -m experiments.redraw_figures: no results directory under {data}"]


def test_redraw_figures_names_a_directory_of_no_experiment_and_goes_on(tmp_path, capsys):
    names = ("_cli", "a.b", "bench_ifca", "bogus", "redraw_figures")  # in the order they are visited
    for name in names:
        run = tmp_path / name / "quick"
        run.mkdir(parents=True)
        (run / "manifest.json").write_text(json.dumps({"status": "complete", "sweep": {"name": name}}))
    assert _main(redraw_figures, ["--data", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert "Traceback" not in out + err and len(lines) == len(names), lines
    for line, name in zip(lines, names):
        assert line.startswith(f"python -m experiments.redraw_figures: error: {tmp_path / name / 'quick'}: "
                               f"no experiment named {name!r}"), line


# --------------------------------------------------------------------------- smallest legal runs, run

RUNS = [
    pytest.param("ifca_basin", ["--ks", "2", "--alphas", "0.5", "--directions", "random", "--m-per", "1",
                                "--n-prime", "3", "--d", "1", "--n-rounds", "1", "--trials", "2"], id="ifca_basin"),
    pytest.param("ifca_misclustering", ["--rhos", "1.0", "--fit-rhos", "1.0", "--targets", "1.0", "--m", "2", "--d", "1",
                                        "--trials", "2", "--n-boot", "2"], id="ifca_misclustering"),
    pytest.param("ifca_contraction", ["--rhos", "1.0", "--alphas", "0.1", "--n-primes", "1", "--m", "2", "--d", "1",
                                      "--trials", "2"], id="ifca_contraction"),
]


@pytest.mark.parametrize("name,argv", RUNS)
def test_the_smallest_legal_run_finishes_with_every_table(name, argv, tmp_path, capsys):
    """One cell of one client per cluster in d = 1, two trials: every trial succeeds and every
    table and figure is written (the IFCA mechanism studies; the others' smallest runs are in
    their own tests or listed as open faults)."""
    from mixreg.montecarlo.reader import read_results

    module = EXPERIMENTS[name]
    out = tmp_path / "out"
    code = _main(module, [*argv, "--jobs", "1", "--no-progress", "--out", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    assert "Traceback" not in stdout + err and "error" not in err
    results = read_results(out)
    assert len(results.records) == 2 and not any(rec.get("error") for rec in results.records)
    for table in module.TABLES:
        assert results.table(f"{table}.csv"), table
    assert list(out.glob("*.png")) and list(out.glob("*.pdf"))
