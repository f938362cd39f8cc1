"""What every batched algorithm driver does with its replicas, in one place.

A driver runs ``B`` independent replicas (restarts x step sizes) on one data set with
parameters of shape ``(B, k, d)``.  It validates them and their per-replica step sizes once at
its public boundary, and after every round accepts the new parameters of the replicas that
stayed finite while freezing, and flagging, those that did not.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_array

__all__ = ["check_initial_parameters", "check_step_sizes", "accept_finite"]


def check_initial_parameters(init, d, dtype):
    """``init`` of shape (B, k, d) or (k, d) as a new C-ordered (B, k, d) array of ``dtype``.

    Always a copy: a driver updates it in place and never modifies the caller's array.
    """
    theta = check_array("init", init, dtype=np.float64)
    if theta.ndim == 2:
        theta = theta[None]
    if theta.ndim != 3 or theta.shape[2] != d or theta.shape[1] < 1 or theta.shape[0] < 1:
        raise ValueError(f"init must have shape (B, k, d) or (k, d) with d={d}, got {np.shape(init)}")
    return np.array(theta, dtype=dtype, order="C")


def check_step_sizes(step_size, B):
    """A scalar or an array of shape (B,), finite and > 0, as a new float64 array of shape (B,)."""
    eta = np.asarray(step_size, dtype=np.float64)
    eta = np.broadcast_to(eta, (B,)).copy() if eta.ndim == 0 else eta.copy()
    if eta.shape != (B,):
        raise ValueError(f"step_size must be a scalar or an array of shape (B,)=({B},), got shape {eta.shape}")
    if not np.all(np.isfinite(eta)) or np.any(eta <= 0):
        raise ValueError(f"step_size must be finite and > 0, got {eta.tolist()}")
    return eta


def accept_finite(theta, new, objective, diverged, diverged_round, t):
    """One round's bookkeeping of non-finite replicas, in place.

    A replica whose ``new`` parameters (B, k, d) or ``objective`` values (B, ...) of round ``t``
    are not all finite is flagged (``diverged``, ``diverged_round = t``) and frozen at its last
    finite parameters; every other replica takes its ``new`` parameters.
    """
    ok = np.isfinite(new).all(axis=(1, 2)) & np.isfinite(objective).reshape(len(theta), -1).all(axis=1)
    newly = ~ok & ~diverged
    diverged_round[newly] = t
    diverged |= newly
    keep = ~diverged
    theta[keep] = new[keep]
