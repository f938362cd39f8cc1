"""The records of a small grid of each experiment, pinned.

Refactoring the layers under an experiment (problem generation, drivers, kernels, the engine)
must not change one bit of what a trial returns, nor a trial's seed: results directories made
before a change stay valid after it.  Each test runs a small grid of an experiment through the
engine in-process with single-threaded kernels and compares its ``trials.csv``, less the
wall-time columns, with the copy in ``tests/data`` written when the grid was pinned.

The last bits depend on two things beside the code, both read by
:func:`mixreg.provenance.signature`: the BLAS kernels (OpenBLAS picks kernels for the CPU it sees,
and those for another CPU sum in another order: the same records differ in the 7th digit in
float32 and the 15th in float64 between the SkylakeX and the Haswell kernels) and the level of
numpy's own SIMD code (its float64 ``exp`` and ``log`` round differently with AVX-512 than
without: the two-phase grid's Zipf sizes).  They do not depend on the CPU model or on the target
Numba compiles for (``tests/test_numba_targets.py`` shows it).  So there is one pin per
signature, ``pinned_<grid>.<kernels>.<numpy level>.csv``, and the test compares bit for bit with
the pin of this process's signature.  Under a signature that has no pin it can only check the
discrete fields (labels, flags) exactly and the numbers to 1e-4 relative plus 1e-6, which catches
a changed algorithm but not a changed summation order; it warns that it did so.

The pins: SkylakeX and Haswell kernels with numpy at ``X86_V4`` (an AVX-512 CPU, the Haswell
kernels forced), and Haswell with ``X86_V3`` (an AVX2 CPU).  To re-pin after a change that is
*meant* to change the numbers, run this file as a script under each of them and say why in the
commit::

    python tests/test_pinned_records.py
    OPENBLAS_CORETYPE=Haswell python tests/test_pinned_records.py
    OPENBLAS_CORETYPE=Haswell NPY_DISABLE_CPU_FEATURES="AVX512_SPR AVX512_ICL X86_V4" \
        python tests/test_pinned_records.py
"""

from __future__ import annotations

import csv
import io
import pathlib
import sys
import warnings

import pytest

from mixreg.montecarlo import run_sweep
from mixreg.provenance import signature

DATA = pathlib.Path(__file__).resolve().parent / "data"


def _success_vs_R_sweep():
    from experiments import success_vs_R as exp

    config = exp.Config(preset="quick", k=2, m=20, n=10, d=20, sigmas=(0.0, 0.5), rs=(0.1, 0.5), trials=2,
                        n_inits=2, step_sizes=(1.0, 0.1), n_rounds=30, dtype="float64")
    return exp.STUDY.sweep(config)


def _success_vs_R_float32_sweep():
    from experiments import success_vs_R as exp

    config = exp.Config(preset="quick", k=4, m=24, n=8, d=16, sigmas=(0.1,), rs=(0.5,), trials=2,
                        n_inits=2, step_sizes=(2.0, 0.5), n_rounds=20, dtype="float32")
    return exp.STUDY.sweep(config)


def _two_phase_sweep():
    from experiments import two_phase as exp

    config = exp.Config(preset="quick", k=2, d=5, sigma=0.5, separation=2.0, Ms=(60,), M_ref=60,
                        laws=("zipf", "equal"), law_ref="zipf", p_mins=(0.2,), p_ref=0.2, size_mean=4.0,
                        n_max=40, trials=2, fmd_rounds=4, fx_rounds=10, ifca_restarts=2, anchor_points=20,
                        checkpoint_every=5)
    return exp.STUDY.sweep(config)


SWEEPS = {
    "success_vs_R": _success_vs_R_sweep,
    "success_vs_R_float32": _success_vs_R_float32_sweep,
    "two_phase": _two_phase_sweep,
}


def _without_times(text):
    """``trials.csv`` text without the columns that measure wall time."""
    rows = list(csv.reader(io.StringIO(text)))
    keep = [j for j, name in enumerate(rows[0]) if not (name == "wall_time" or name.endswith("_time"))]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([row[j] for j in keep])
    return out.getvalue()


def _records_text(name, outdir):
    result = run_sweep(SWEEPS[name](), outdir, jobs=1, progress=False, kernel_threads=1)
    assert not result.failures
    return _without_times(result.trials_csv.read_text())


def _signature():
    """This process's signature as a file-name part: ``SkylakeX.X86_V4``."""
    here = signature()
    return f"{here['blas_kernels']}.{here['numpy_simd']}"


def _pin(name, signature_):
    return DATA / f"pinned_{name}.{signature_}.csv"


def _differences(text, expected, rtol=1e-4, atol=1e-6):
    """Fields of ``text`` that differ from ``expected`` beyond rounding: a discrete field (it does
    not parse as a number: a label list, a flag) that differs at all, a number by more than
    ``rtol`` relative plus ``atol`` (float32 rounding of a quantity of order 1; a distance that is
    rounding error, 1e-16 at sigma = 0, differs by 30% between kernels).  The counts of these grids
    are at most 272, so a count that changes by 1 changes by more than that."""
    rows, pinned = list(csv.reader(io.StringIO(text))), list(csv.reader(io.StringIO(expected)))
    if len(rows) != len(pinned) or rows[0] != pinned[0]:
        return [("shape or header", len(rows), len(pinned))]
    out = []
    for i, (row, pin) in enumerate(zip(rows[1:], pinned[1:])):
        for column, a, b in zip(rows[0], row, pin):
            if a == b:
                continue
            try:
                x, y = float(a), float(b)
            except ValueError:
                out.append((i, column, a, b))
                continue
            if not abs(x - y) <= rtol * max(abs(x), abs(y)) + atol:  # nan against a number fails too
                out.append((i, column, a, b))
    return out


@pytest.mark.parametrize("name", sorted(SWEEPS))
def test_records_are_pinned(name, tmp_path):
    text, here = _records_text(name, tmp_path / name), _signature()
    pin = _pin(name, here)
    if pin.is_file():
        assert text == pin.read_text(), f"{name}: records differ from their pin under the signature {here}"
        return
    pins = sorted(DATA.glob(f"pinned_{name}.*.csv"))
    assert pins, f"{name} has no pin"
    kernels = here.split(".")[0]
    nearest = next((p for p in pins if p.name.startswith(f"pinned_{name}.{kernels}.")), pins[0])
    differing = _differences(text, nearest.read_text())
    assert not differing, (f"{name}: no pin for the signature {here}; against {nearest.name} "
                           f"beyond rounding: {differing[:5]}")
    warnings.warn(f"{name}: no pin for the signature {here} (BLAS kernels.numpy SIMD level); compared with "
                  f"{nearest.name} up to rounding only (a changed summation order would pass)", stacklevel=1)


def test_every_grid_has_the_three_pins():
    """The signatures pinned: an AVX-512 CPU (SkylakeX kernels, numpy at X86_V4) and an AVX2 one
    (Haswell, X86_V3), plus Haswell forced on AVX-512 (Haswell, X86_V4); every grid has all three."""
    for name in SWEEPS:
        for signature_ in ("SkylakeX.X86_V4", "Haswell.X86_V4", "Haswell.X86_V3"):
            assert _pin(name, signature_).is_file(), f"{name} lacks its {signature_} pin"


if __name__ == "__main__":  # re-pin
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(SWEEPS):
            _pin(name, _signature()).write_text(_records_text(name, pathlib.Path(tmp) / name))
            print(f"pinned {name} under the signature {_signature()}", file=sys.stderr)
