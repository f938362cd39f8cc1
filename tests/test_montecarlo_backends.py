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
    assert reference.manifest["runs"][-1]["kernel_threads"] is None


def test_thread_limits_per_backend(tmp_path):
    from threadpoolctl import threadpool_info

    cells = [{"k": 0}, {"k": 1}]
    sweep = toy_sweep(trial_fn=toys.thread_probe_trial, cells=cells, n_trials=2)
    parallel = run_sweep(sweep, tmp_path / "jobs2", jobs=2, progress=False)
    assert set(parallel.column("blas_threads")) == {1}
    assert set(parallel.column("numba_threads")) == {1}

    before = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    serial = run_sweep(sweep, tmp_path / "jobs1", progress=False)
    assert set(serial.column("blas_threads")) == {before}  # jobs=1: kernels not limited

    forced = run_sweep(sweep, tmp_path / "forced", kernel_threads=1, progress=False)
    assert set(forced.column("blas_threads")) == {1}
    after = max(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas")
    assert after == before  # in-process limits are restored


def test_kernel_threads_1_matches_parallel_for_long_reductions(tmp_path):
    """Long BLAS reductions may round differently with 2 threads; kernel_threads=1 fixes it."""
    sweep = toy_sweep(trial_fn=toys.long_reduction_trial, cells=[{"length": 200_000}], n_trials=4)
    serial = run_sweep(sweep, tmp_path / "serial", kernel_threads=1, progress=False)
    parallel = run_sweep(sweep, tmp_path / "parallel", jobs=2, progress=False)
    assert records_json(serial) == records_json(parallel)


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
