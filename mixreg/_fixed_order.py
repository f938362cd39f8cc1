"""Floating-point reductions whose order is written out, so that no CPU target changes a bit.

A Numba kernel compiled with ``fastmath={"reassoc"}`` lets LLVM split a sum over as many
vector lanes and unrolled accumulators as the CPU it compiles for suggests: 8 lanes x 4 on
``znver4``, 4 lanes x 4 on ``skylake-avx512`` and ``emeraldrapids``, 2 lanes on ``generic``.
Each order rounds differently, so the same kernel gave records that differed in the last bit
from one CPU to another.  With ``contract`` the product and the sum fuse into one FMA where the
target has one and round twice where it has not.

The kernels here fix both choices in the source: the partial sums are explicit, and every
multiply-add is :func:`fma`, LLVM's ``llvm.fma.f64``, rounded once on every target (a hardware
FMA where the CPU has one, the C library's exact ``fma`` where it has not).  Without
``reassoc`` LLVM may still vectorise the independent lanes, never reorder a sum, so the result
is the same bit for bit on every x86-64 target.

The order chosen is the one LLVM 22 (llvmlite 0.50, Numba 0.68) gave on ``znver4``, the CPU the committed paper runs
were computed on, so those runs and the pinned records keep every bit.  It is checked against
the reassociating loop compiled for ``znver4`` in ``tests/test_fixed_order.py``.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["fma", "LANES", "sum_sq_diff"]

LANES = 32
"""Partial sums of the main loop of :func:`sum_sq_diff`: 8 vector lanes x 4 accumulators."""


@intrinsic
def fma(typingctx, a, b, c):
    """``a * b + c`` rounded once (IEEE 754 fusedMultiplyAdd), in float64, on every target."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        double = ir.DoubleType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(double, [double] * 3),
                                            "llvm.fma.f64")
        return builder.call(fn, args)

    return sig, codegen


@njit(cache=True)
def _square_into(u, v, scale, i, acc):
    t = u[i] * scale - v[i] * scale
    return fma(t, t, acc)


@njit(cache=True)
def sum_sq_diff(u, v, scale, lanes):
    """``sum_i ((u_i - v_i) * scale)^2`` in a fixed order, the same bits on every CPU.

    Parameters
    ----------
    u, v : ndarray of float64, shape (n,)
        The two vectors.
    scale : float
        A power of two (so ``u_i * scale`` is exact unless it underflows).
    lanes : ndarray of float64, shape (LANES,)
        Scratch space, overwritten.

    Returns
    -------
    float
        The sum.  NaN and inf propagate as in IEEE arithmetic.

    Notes
    -----
    The order, for ``n`` terms ``s_i = ((u_i - v_i) scale)^2`` each added with one rounding:

    1. if ``n >= 32``: 32 partial sums, term ``i`` of the first ``n - n % 32`` into sum ``i % 32``;
       the sums ``w, w + 8, w + 16, w + 24`` added left to right for each ``w < 8``; those eight
       added as a tree, ``(a_0 + a_4) + (a_2 + a_6)`` plus ``(a_1 + a_5) + (a_3 + a_7)``;
    2. if at least 4 terms remain: 4 partial sums, the first starting from step 1's total, over
       the next multiple of 4 terms, added as ``(e_0 + e_2) + (e_1 + e_3)``;
    3. the last ``n % 4`` terms (or all, if ``n < 4``) added one by one.
    """
    n = u.shape[0]
    total = 0.0
    i = 0
    if n >= 4:
        if n >= LANES:
            for j in range(LANES):
                lanes[j] = 0.0
            main = n - n % LANES
            while i < main:
                for j in range(LANES):
                    lanes[j] = _square_into(u, v, scale, i + j, lanes[j])
                i += LANES
            for w in range(8):
                lanes[w] = ((lanes[w] + lanes[8 + w]) + lanes[16 + w]) + lanes[24 + w]
            total = (((lanes[0] + lanes[4]) + (lanes[2] + lanes[6]))
                     + ((lanes[1] + lanes[5]) + (lanes[3] + lanes[7])))
        if n - i >= 4:
            e0, e1, e2, e3 = total, 0.0, 0.0, 0.0
            quad = n - n % 4
            while i < quad:
                e0 = _square_into(u, v, scale, i, e0)
                e1 = _square_into(u, v, scale, i + 1, e1)
                e2 = _square_into(u, v, scale, i + 2, e2)
                e3 = _square_into(u, v, scale, i + 3, e3)
                i += 4
            total = (e0 + e2) + (e1 + e3)
    while i < n:
        total = _square_into(u, v, scale, i, total)
        i += 1
    return total
