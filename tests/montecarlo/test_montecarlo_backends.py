"""Tests of mixreg.montecarlo._backends: in-process, loky and Dask runs, kernel threads."""

import pytest

import _toy_trials as toys
from _toy_trials import csv_rows, records_json, toy_sweep
from mixreg.montecarlo import run_sweep


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The least-squares sweep run in-process (jobs=1), the reference for bit identity."""
    return run_sweep(toy_sweep(), tmp_path_factory.mktemp("reference") / "out", progress=False)


def test_jobs_2_is_bit_identical_to_jobs_1(reference, tmp_path):
    result = run_sweep(toy_sweep(chunk_size=4), tmp_path / "out", jobs=2, progress=False)
    assert records_json(result) == records_json(reference)
    assert csv_rows(result.trials_csv) == csv_rows(reference.trials_csv)
    assert result.manifest["runs"][-1]["kernel_threads"] == 1
    assert reference.manifest["runs"][-1]["kernel_threads"] == 1  # in-process too, by default


def _blas_threads():
    from threadpoolctl import threadpool_info

    return max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")


def test_thread_limits_per_backend(tmp_path):
    cells = [{"k": 0}, {"k": 1}]
    sweep = toy_sweep(trial_fn=toys.thread_probe_trial, cells=cells, n_trials=2)
    parallel = run_sweep(sweep, tmp_path / "jobs2", jobs=2, progress=False)
    assert set(parallel.column("blas_threads")) == {1}
    assert set(parallel.column("numba_threads")) == {1}

    before = _blas_threads()
    serial = run_sweep(sweep, tmp_path / "jobs1", progress=False)
    assert set(serial.column("blas_threads")) == {1}  # jobs=1: single-threaded by default too
    assert set(serial.column("numba_threads")) == {1}
    assert _blas_threads() == before  # in-process limits are restored

    opted_out = run_sweep(sweep, tmp_path / "opt_out", kernel_threads=2, progress=False)
    assert set(opted_out.column("blas_threads")) == {min(2, before)}
    assert opted_out.manifest["runs"][-1]["kernel_threads"] == 2
    assert _blas_threads() == before


def test_loky_workers_leave_ctrl_c_and_sigterm_to_the_parent(tmp_path):
    """Workers ignore SIGINT and SIGTERM (the parent stops them); the in-process backend ignores neither
    (unless this process does): the run's own process reacts to both."""
    import signal

    sweep = toy_sweep(trial_fn=toys.sigint_probe_trial, cells=[{"k": 0}, {"k": 1}], n_trials=2)
    parallel = run_sweep(sweep, tmp_path / "jobs2", jobs=2, progress=False)
    assert set(parallel.column("sigint_ignored")) == {True}
    assert set(parallel.column("sigterm_ignored")) == {True}
    serial = run_sweep(sweep, tmp_path / "jobs1", progress=False)
    assert set(serial.column("sigint_ignored")) == {signal.getsignal(signal.SIGINT) is signal.SIG_IGN}
    assert set(serial.column("sigterm_ignored")) == {signal.getsignal(signal.SIGTERM) is signal.SIG_IGN}


def test_a_run_stopped_early_passes_on_no_joblib_warning():
    """Ctrl-C while the engine writes a chunk closes the backend's results with tasks in flight:
    joblib's warning about them would be a second line after the run's one line."""
    import warnings

    from mixreg.montecarlo._backends import _open_backend

    sweep = toys.slow_sweep(sleep=0.5, n_trials=6)
    with _open_backend(2, None, None, None) as backend, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outputs = backend.run(sweep, [(0, t, t + 1) for t in range(6)])
        next(outputs)  # one chunk back, others running or waiting
        outputs.close()
    assert [str(w.message) for w in caught if "tasks" in str(w.message)] == []  # joblib's begin "<n> tasks"


def test_default_jobs_1_matches_parallel_for_long_reductions(tmp_path):
    """Long BLAS reductions may round differently with 2 threads; the default is one thread."""
    sweep = toy_sweep(trial_fn=toys.long_reduction_trial, cells=[{"length": 200_000}], n_trials=4)
    serial = run_sweep(sweep, tmp_path / "serial", progress=False)
    parallel = run_sweep(sweep, tmp_path / "parallel", jobs=2, progress=False)
    assert records_json(serial) == records_json(parallel)


# --------------------------------------------------------------------------- an experiment's trials


def _ifca_sweep():
    """success_vs_R's trial function at d = 600, where 2-thread OpenBLAS rounds differently."""
    from experiments import success_vs_R

    config = success_vs_R.Config(preset="quick", k=2, m=8, n=64, d=600, sigmas=(0.5,), rs=(0.3, 1.0),
                                 trials=2, n_inits=2, step_sizes=(0.1,), n_rounds=20, dtype="float64")
    return success_vs_R.STUDY.sweep(config)


@pytest.fixture(scope="module")
def ifca_reference(tmp_path_factory):
    """The IFCA sweep in-process with the default (single-threaded) kernels."""
    return run_sweep(_ifca_sweep(), tmp_path_factory.mktemp("ifca") / "jobs1", jobs=1, progress=False)


def test_ifca_records_are_bit_identical_under_jobs_1_and_2(ifca_reference, tmp_path):
    """Bit-identity by construction: ``jobs=1`` runs one BLAS thread as the workers do.

    Before, ``jobs=1`` let BLAS use every core, and at d = 600 its records differed in the last
    bits from ``jobs=2``'s.
    """
    parallel = run_sweep(_ifca_sweep(), tmp_path / "jobs2", jobs=2, progress=False)
    assert len(ifca_reference.records) == 4 and not ifca_reference.failures
    assert records_json(parallel) == records_json(ifca_reference)
    assert csv_rows(parallel.trials_csv) == csv_rows(ifca_reference.trials_csv)


@pytest.mark.dask
def test_ifca_records_are_bit_identical_on_dask(ifca_reference, tmp_path):
    pytest.importorskip("distributed")
    local = run_sweep(_ifca_sweep(), tmp_path / "dask", dask_local=2, progress=False)
    assert records_json(local) == records_json(ifca_reference)
    assert csv_rows(local.trials_csv) == csv_rows(ifca_reference.trials_csv)


@pytest.mark.dask
def test_dask_is_bit_identical_to_local(reference, tmp_path):
    from distributed import LocalCluster

    local = run_sweep(toy_sweep(), tmp_path / "dask_local", dask_local=2, progress=False)
    assert records_json(local) == records_json(reference)
    assert csv_rows(local.trials_csv) == csv_rows(reference.trials_csv)
    assert local.manifest["backend"].startswith("dask LocalCluster")

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        remote = run_sweep(toy_sweep(), tmp_path / "dask_tcp", scheduler=cluster.scheduler_address,
                           progress=False)
        probe = run_sweep(toy_sweep(trial_fn=toys.thread_probe_trial, cells=[{"k": 0}], n_trials=2),
                          tmp_path / "probe", scheduler=cluster.scheduler_address, progress=False)
    assert records_json(remote) == records_json(reference)
    assert set(probe.column("blas_threads")) == {1}
    assert set(probe.column("numba_threads")) == {1}
