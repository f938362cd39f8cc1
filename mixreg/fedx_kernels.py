"""Numba kernels of the FedX-with-clustering driver (:mod:`mixreg.fedx`).

Layout conventions are those of :mod:`mixreg.kernels`: ``B`` replicas, parameters ``(B, k, d)``,
stacked data with ``offsets``, predictions ``P`` of shape ``(B*k, N)`` from one GEMM (row
``b*k + l`` holds ``<x_r, theta_{b,l}>``).  Kernels trust their inputs and are serial (see
:mod:`mixreg.kernels` for why).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["decode_and_residuals"]


@njit(cache=True)
def decode_and_residuals(P, y, offsets, B, k, frozen, assign, best, R):
    """ML decoder of every client and the residual matrix of the decoded models, in one pass.

    For replica ``b`` and client ``i`` (rows ``offsets[i]:offsets[i+1]``):

    * ``L[l] = sum_r (y_r - P[b*k + l, r])^2`` (Su-Xu-Yang's ``L_i(theta, l)``, a plain sum,
      accumulated in float64);
    * ``assign[b, i] = argmin_l L[l]``, ties to the lowest index; ``nan`` losses are skipped
      (all ``nan``: model 0); ``best[b, i] = L[assign]``;
    * ``R[b*k + l, r] = y_r - P[b*k + l, r]`` for the decoded ``l = assign[b, i]`` and 0 for the
      other models, so that ``R @ K`` sums, per model, the local updates of the clients that chose
      it.  A frozen replica (``frozen[b]``) gets all-zero rows.
    """
    m = offsets.shape[0] - 1
    losses = np.empty(k)
    for b in range(B):
        for i in range(m):
            lo = offsets[i]
            hi = offsets[i + 1]
            for l in range(k):
                row = P[b * k + l]
                s = 0.0
                for r in range(lo, hi):
                    e = np.float64(y[r]) - np.float64(row[r])
                    s += e * e
                losses[l] = s
            a = 0
            v = losses[0]
            for l in range(1, k):
                w = losses[l]
                if w < v or (v != v and w == w):  # strict: ties to the lowest index; skip nan
                    a = l
                    v = w
            assign[b, i] = a
            best[b, i] = v
            for l in range(k):
                out = R[b * k + l]
                if l == a and not frozen[b]:
                    row = P[b * k + l]
                    for r in range(lo, hi):
                        out[r] = y[r] - row[r]
                else:
                    for r in range(lo, hi):
                        out[r] = 0.0
