"""The fixed-order reductions of :mod:`mixreg._fixed_order` and the rule that keeps kernels free of
target-dependent arithmetic.

What these catch: a kernel compiled with ``fastmath`` (reassociation lets LLVM pick the order of a
sum for the CPU it compiles for: the success_vs_R pin failed on an Emerald Rapids CPU by one ulp),
``parallel=True`` (its reductions round with the thread count), and a change of
:func:`~mixreg._fixed_order.sum_sq_diff`'s order (the committed paper runs would no longer replay).
"""

from __future__ import annotations

import ast
import math
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mixreg
from mixreg._fixed_order import LANES, fma, sum_sq_diff

PACKAGE = pathlib.Path(mixreg.__file__).resolve().parent


def _reference(u, v, scale):
    """The order :func:`sum_sq_diff` documents, in Python, each multiply-add rounded once (exact
    rational arithmetic, then one rounding to float64)."""
    from fractions import Fraction

    def fused(t, acc):
        return float(Fraction(t) * Fraction(t) + Fraction(acc)) if math.isfinite(t) and math.isfinite(acc) \
            else t * t + acc

    n, i, total = len(u), 0, 0.0
    terms = [u[j] * scale - v[j] * scale for j in range(n)]
    if n >= 4:
        if n >= LANES:
            lanes = [0.0] * LANES
            while i < n - n % LANES:
                for j in range(LANES):
                    lanes[j] = fused(terms[i + j], lanes[j])
                i += LANES
            a = [((lanes[w] + lanes[8 + w]) + lanes[16 + w]) + lanes[24 + w] for w in range(8)]
            total = ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
        if n - i >= 4:
            e = [total, 0.0, 0.0, 0.0]
            while i < n - n % 4:
                for j in range(4):
                    e[j] = fused(terms[i + j], e[j])
                i += 4
            total = (e[0] + e[2]) + (e[1] + e[3])
    while i < n:
        total = fused(terms[i], total)
        i += 1
    return total


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 31, 32, 33, 35, 36, 63, 64, 100, 131])
def test_sum_sq_diff_follows_its_documented_order(n):
    rng = np.random.default_rng(n)
    u, v = rng.standard_normal(n) * 3.0, rng.standard_normal(n)
    for scale in (1.0, 2.0**-20):
        assert sum_sq_diff(u, v, scale, np.empty(LANES)) == _reference(u, v, scale)


def test_fma_rounds_once():
    # (1 + 2^-30)^2 - 1 = 2^-29 + 2^-60: a separate product rounds the 2^-60 away.
    x = 1.0 + 2.0**-30
    from numba import njit

    fused = njit(lambda a, b, c: fma(a, b, c))
    assert fused(x, x, -1.0) == 2.0**-29 + 2.0**-60
    assert x * x - 1.0 == 2.0**-29


def test_sum_sq_diff_propagates_non_finite_values():
    u = np.ones(40)
    u[37] = np.nan
    assert math.isnan(sum_sq_diff(u, np.zeros(40), 1.0, np.empty(LANES)))
    u[37] = np.inf
    assert sum_sq_diff(u, np.zeros(40), 1.0, np.empty(LANES)) == math.inf


def _njit_keywords():
    """(file, line, keyword) of every keyword of a ``@njit(...)``/``@jit(...)`` decorator in mixreg."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in (
                    "njit", "jit", "vectorize", "guvectorize"):
                found += [(path.relative_to(PACKAGE).as_posix(), node.lineno, kw.arg) for kw in node.keywords]
    return found


def test_no_kernel_lets_the_compiler_pick_an_order():
    keywords = _njit_keywords()
    assert keywords, "no njit decorator found: the scan is broken"
    assert {kw for _, _, kw in keywords} >= {"cache"}
    offending = [entry for entry in keywords if entry[2] in ("fastmath", "parallel")]
    assert not offending, f"target- or thread-dependent arithmetic in a kernel: {offending}"


_AGAINST_ZNVER4 = textwrap.dedent("""
    import sys
    import numpy as np
    from numba import njit
    from mixreg._fixed_order import LANES, sum_sq_diff

    @njit(fastmath={"reassoc", "contract"})
    def reassociated(u, v, scale):  # the kernel the committed runs were computed with
        acc = 0.0
        for i in range(u.shape[0]):
            t = u[i] * scale - v[i] * scale
            acc += t * t
        return acc

    rng = np.random.default_rng(0)
    lanes = np.empty(LANES)
    checked = 0
    for n in list(range(0, 140)) + [1000, 1001, 1023, 1029, 4099]:
        for _ in range(5):
            u = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)
            v = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3)
            for scale in (1.0, 2.0**-10):
                a, b = reassociated(u, v, scale), sum_sq_diff(u, v, scale, lanes)
                assert a == b, (n, a, b)
                checked += 1
    print(checked)
""")


def test_sum_sq_diff_is_the_order_the_committed_runs_used(tmp_path):
    """The committed paper runs were computed on a ``znver4`` target with a reassociating loop;
    :func:`sum_sq_diff` must give its bits for every length (main loop, 4-lane epilogue, tail)."""
    env = {"NUMBA_CPU_NAME": "znver4", "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", _AGAINST_ZNVER4], capture_output=True, text=True,
                          env={**os.environ, **env}, check=False)
    if proc.returncode == -signal.SIGILL:  # this CPU cannot run AVX-512 code
        pytest.skip("this CPU cannot run code compiled for znver4 (AVX-512)")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.split()[-1]) == 145 * 5 * 2
