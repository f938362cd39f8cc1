"""Tests of mixreg.provenance: what a result records of the machine that computed it."""

from mixreg import provenance


def test_blas_kernels_are_read_from_a_manifest_record():
    blas = [{"user_api": "blas", "internal_api": "openblas", "architecture": "SkylakeX"},
            {"user_api": "openmp", "internal_api": "openmp", "architecture": None},
            {"user_api": "blas", "internal_api": "openblas", "architecture": "SkylakeX"},
            {"user_api": "blas", "internal_api": "openblas", "architecture": "Haswell"}]
    assert provenance.blas_kernels(blas) == ("Haswell", "SkylakeX")
    assert provenance.blas_kernels("unknown") == ()  # threadpoolctl was missing
    assert provenance.blas_kernels([{"user_api": "blas", "internal_api": "mkl"}]) == ()  # says none
    assert provenance.run_blas_kernels({"environment": {"blas": blas}}) == ("Haswell", "SkylakeX")
    assert provenance.run_blas_kernels({"status": "running"}) == provenance.run_blas_kernels(None) == ()
    assert provenance.openblas_coretype(("SkylakeX",)) == "SkylakeX"
    assert provenance.openblas_coretype(("Haswell", "SkylakeX")) is None  # no one setting gives both
    assert provenance.openblas_coretype(()) is None


def test_this_process_names_its_kernels_as_its_record_does():
    record = provenance.environment_record()
    assert provenance.blas_kernels() == provenance.blas_kernels(record["blas"])
    assert all(isinstance(name, str) and name for name in provenance.blas_kernels())


def test_cpu_flags_hold_what_the_kernels_this_process_runs_need():
    flags = provenance.cpu_flags()
    for name in provenance.blas_kernels():
        needs = provenance.OPENBLAS_KERNEL_FLAGS.get(name)
        if flags and needs:  # a kernel set running here needs a flag this CPU has
            assert needs in flags
