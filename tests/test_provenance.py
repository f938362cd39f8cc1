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


def test_the_record_says_what_fixes_the_last_bits():
    record = provenance.environment_record()
    assert record["cpu_model"] == provenance.cpu_model() and record["cpu_model"]
    assert record["numba_target"] == provenance.numba_target() != "unknown"
    assert record["numpy_simd"] == provenance.numpy_simd() != "unknown"
    assert provenance.signature(record) == provenance.signature()
    assert provenance.signature_differences(record, record) == {}


def test_the_numba_target_is_the_one_numba_compiles_for(monkeypatch):
    from numba.core import config

    monkeypatch.setattr(config, "CPU_NAME", "haswell")
    assert provenance.numba_target() == "haswell"


def test_numpy_simd_level_follows_what_numpy_enables(monkeypatch):
    from numpy._core import _multiarray_umath as umath

    features = dict(umath.__cpu_features__)
    monkeypatch.setattr(provenance.platform, "machine", lambda: "x86_64")
    for enabled, level in ((("X86_V2", "X86_V3", "X86_V4"), "X86_V4"), (("X86_V2", "X86_V3"), "X86_V3"),
                           (("X86_V2",), "X86_V2"), ((), "baseline")):
        monkeypatch.setattr(umath, "__cpu_features__", {**features, **{key: key in enabled for key in
                                                                       ("X86_V2", "X86_V3", "X86_V4")}})
        assert provenance.numpy_simd() == level


def test_signature_differences_name_the_fields_that_differ():
    here = {"blas": [{"user_api": "blas", "architecture": "SkylakeX"}], "numpy_simd": "X86_V4",
            "cpu_model": "A", "numba_target": "emeraldrapids", "packages": {"numpy": "2.4.6", "numba": "0.68.1"}}
    run = {"blas": [{"user_api": "blas", "architecture": "Haswell"}], "numpy_simd": "X86_V3",
           "cpu_model": "B", "numba_target": "znver3", "packages": {"numpy": "2.4.6", "numba": "0.67.0"}}
    assert provenance.signature_differences(run, here) == {
        "blas_kernels": ("Haswell", "SkylakeX"), "numpy_simd": ("X86_V3", "X86_V4"), "cpu_model": ("B", "A"),
        "numba_target": ("znver3", "emeraldrapids"), "packages.numba": ("0.67.0", "0.68.1")}
    old = {"blas": here["blas"], "packages": here["packages"]}  # a manifest written before these fields
    assert provenance.signature_differences(old, here) == {"numpy_simd": ("not recorded", "X86_V4")}
    assert provenance.signature(old) == {"blas_kernels": "SkylakeX", "numpy_simd": "not recorded"}


def test_numerics_changes_are_registered_in_order_and_recorded():
    versions = [change.version for change in provenance.NUMERIC_CHANGES]
    assert versions == list(range(1, len(versions) + 1)) and provenance.NUMERICS == versions[-1]
    from mixreg.algorithms import ALGORITHMS
    for change in provenance.NUMERIC_CHANGES:  # each names registered drivers, fields, and says why
        assert change.algorithms and set(change.algorithms) <= set(ALGORITHMS)
        assert change.fields and all(prefix.endswith("_") for prefix in change.fields)
        assert change.summary and change.reason
    assert provenance.environment_record()["numerics"] == provenance.NUMERICS
    assert provenance.run_numerics({}) == 0  # a record made before the field
    assert provenance.signature_differences({"numerics": 0}, {"numerics": 1}) == {"numerics": (0, 1)}
    assert provenance.numerics_changes_since(0) == provenance.NUMERIC_CHANGES


def test_only_registered_changes_explain_a_replays_differences():
    first = provenance.NUMERIC_CHANGES[0]
    before, now = {"numerics": first.version - 1}, {"numerics": provenance.NUMERICS}
    name = first.fields[0].rstrip("_")
    assert provenance.explaining_changes([f"{name}_err_mean"], [before]) == provenance.numerics_changes_since(0)
    assert provenance.explaining_changes([f"{name}_err_mean"], [before, now]) == ()  # a run after it
    assert provenance.explaining_changes([f"{name}_err_mean", "ifca_err_mean"], [before]) == ()  # a field left over
    assert provenance.explaining_changes([f"{name}err_mean"], [before]) == ()  # not the driver's prefix
    assert provenance.explaining_changes([], [before]) == ()
