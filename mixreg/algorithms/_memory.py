"""How much memory a run will take, from the problem's sizes alone (nothing is allocated).

:func:`work_bytes` estimates the work arrays of one batched call of a driver: what it allocates
beyond the problem it is given (see :meth:`mixreg.problems.ProblemSpec.memory_bytes` for the
problem itself).  A Monte Carlo study adds the two to bound a trial, and the engine refuses a
sweep whose heaviest trial cannot fit (:class:`mixreg.montecarlo.Sweep`'s ``memory_fn``).

The estimates count the arrays of ``N`` rows (``N = sum_i n_i`` points) and of ``m`` clients
times the ``B`` replicas, which are the ones that grow; each term below names the driver's
array.  They are upper estimates of the large arrays, not of Python's small objects.
:func:`trial_bytes` adds the problems a trial holds to the heaviest of its runs; against the
tracemalloc peak of one small trial of each experiment it was 1.1 (compare) to 2.9 (ifca_misclustering)
times the peak, never below it.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from ..validation import check_dtype, check_int

if TYPE_CHECKING:
    from ..problems import ProblemSpec

__all__ = ["RunSizes", "TRIAL_OVERHEAD", "trial_bytes", "work_bytes", "WORK_ARRAYS", "work_methods"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunSizes:
    """The sizes a run's memory depends on.

    Attributes
    ----------
    m : int >= 1
        Clients.
    N : int >= 1
        Rows of the problem (an upper bound: :attr:`mixreg.problems.ProblemSpec.max_rows`).
    d : int >= 1
        Dimension.
    k : int >= 1
        Models per replica.
    replicas : int >= 1
        ``B``, the replicas of the batched call.
    dtype : {"float64", "float32"}
        The problem's storage type (the drivers' buffers take it).
    history_rounds : int >= 0
        Rounds whose parameters are kept (``history=True``); 0 without a history.
    resample : bool
        IFCA's resampling scheme (``resample=True``): the rows of its ``2T`` subsets are copied.
    """

    m: int
    N: int
    d: int
    k: int
    replicas: int = 1
    dtype: str = "float64"
    history_rounds: int = 0
    resample: bool = False

    def __post_init__(self):
        for name in ("m", "N", "d", "k", "replicas"):
            check_int(name, getattr(self, name), low=1)
        check_int("history_rounds", self.history_rounds, low=0)
        check_dtype("dtype", self.dtype)

    @property
    def itemsize(self) -> int:
        """Bytes of one element of :attr:`dtype`."""
        return np.dtype(self.dtype).itemsize

    @classmethod
    def of(cls, spec: ProblemSpec, *, replicas: int = 1, k: int | None = None, history_rounds: int = 0,
           resample: bool = False) -> RunSizes:
        """The sizes of a run on the problems of ``spec`` (a :class:`mixreg.problems.ProblemSpec`):
        its ``m``, ``d``, ``dtype``, ``N`` = :attr:`~mixreg.problems.ProblemSpec.max_rows` and
        ``k`` models unless given."""
        return cls(m=spec.m, N=spec.max_rows, d=spec.d, k=spec.k if k is None else k, replicas=replicas,
                   dtype=spec.dtype, history_rounds=history_rounds, resample=resample)


def _rounds(z):
    """The client-level round shared by IFCA, FedX, FeSEM and the finishes of the seed methods:
    predictions and residuals ``(B k, N)`` in the dtype, the local models or gradients
    ``(m, B, d)``, the losses ``(B, m, k)`` and the assignments; the kept history
    ``(T + 1, B, k, d)`` in float64."""
    B, s = z.replicas, z.itemsize
    return (2 * s * B * z.k * z.N + s * z.m * B * z.d + 8 * B * z.m * (z.k + 2)
            + 8 * (z.history_rounds + 1) * B * z.k * z.d * 2)


def _local_least_squares(z):
    """Every client's least squares (one-shot, FeSEM's warm start): a size group's rows indexed,
    cast to float64 and factorised with their temporaries (``6 x 8 N d``), the ``m d`` models."""
    return 48 * z.N * z.d + 8 * z.m * z.d


def _ifca(z):
    """IFCA: the client-level round; with resampling, the subsets' rows copied (``s N d``) and
    their indices (``8 N``)."""
    return _rounds(z) + ((z.itemsize * z.d + 16) * z.N if z.resample else 0)


def _ifca_model(z):
    """IFCA option II (model averaging, local steps): the client-level round, the local
    steps' predictions and residuals (``2 s B k N`` more) and, without resampling, the clients'
    Gram matrices of the unrolled steps (:class:`mixreg.kernels.LocalStepGrams`; at most
    ``N d`` values: ``s N d``, computed from a float64 copy of the data in float64, ``16 N d``)
    and the unrolled sums' buffers (``2 s B N`` and ``2 s m B d``).  One local step builds none
    of them: the count is a bound."""
    B, s = z.replicas, z.itemsize
    unrolled = 0 if z.resample else 16 * z.N * z.d + s * z.N * z.d + 2 * s * B * z.N + 2 * s * z.m * B * z.d
    return _ifca(z) + 2 * s * B * z.k * z.N + unrolled


def _fedx(z):
    """FedX adds the local operators of every row in float64 (FedProx's and FedAvg's), built
    from a size group's rows indexed and cast to float64, with their temporaries
    (``6 x 8 N d``)."""
    return _rounds(z) + 48 * z.N * z.d


def _oneshot(z):
    return _rounds(z) + _local_least_squares(z)


def _fesem(z):
    """FeSEM: the client-level round (its residuals and the kept predictions of the last local
    update, ``2 s B N``, are within the round's ``2 s B k N``), the local least squares of its
    warm start, two ``(m, B, d)`` float64 blocks and the transposed copy of the data (``s N d``)."""
    return _rounds(z) + _local_least_squares(z) + 8 * z.m * z.replicas * z.d * 2 + z.itemsize * z.N * z.d


def _pacfl(z):
    """PACFL: the float64 ``(x, y)`` columns, a size group's transposed copy and its SVD factor
    with their temporaries (``6 x 8 N (d + 1)``), and the ``m x m`` proximity matrix with its
    condensed copy and the linkage's distances (``3 x 8 m^2``)."""
    return _rounds(z) + 48 * z.N * (z.d + 1) + 24 * z.m * z.m


def _ifca_points(z):
    """Point-level IFCA: the client-level buffers per point label (``(B k, N)`` three times, the
    per-point labels and losses ``(B, N)``, two ``(m, B k, d)`` blocks) and the transposed copy
    of the data its local steps predict from (``s N d``; counted whatever the steps)."""
    B, s = z.replicas, z.itemsize
    return _rounds(z) + s * B * z.k * z.N + 16 * B * z.N + 2 * s * z.m * B * z.k * z.d + s * z.N * z.d


def _kfed(z):
    """k-FED (``k' = k``, its default ``local_restarts``, 10): the data in float64 (``8 N (d + 1)``);
    its local regressions run a block of ``R`` restarts at once (as many as fit in
    ``kfed._ROW_BLOCK`` elements of ``N d``, at least one), whose ``R N`` rows are tiled, sorted
    by group, factorised (the local least squares) and given their client's ``k'`` models
    (``8 R N d (6 + k')``, and ``64 R N`` in
    indices); every restart's models and groups; then the FedAvg finish."""
    from .kfed import _ROW_BLOCK, kfed

    restarts = inspect.signature(kfed).parameters["local_restarts"].default
    rows = min(restarts, max(1, _ROW_BLOCK // (z.N * z.d))) * z.N
    return (_rounds(z) + 8 * z.N * (z.d + 1) + 8 * rows * z.d * (6 + z.k) + 64 * rows
            + 8 * restarts * (z.m * z.k * z.d + z.N))


def _moment_descent(z):
    """Su-Xu-Yang's Phase 1 (give the anchors as ``m``): per round, the sampled pairs' rows in
    float64 (at most ``2 N`` rows, ``16 N d``) and every anchor's moment vectors of them with
    their products (``16 m N d``); the anchors' parameters over the kept rounds
    (``(T + 1, m, d)``)."""
    return (16 * z.N * z.d * (1 + z.m) + 16 * z.N
            + 8 * (z.history_rounds + 1) * z.m * z.d * (z.k + 1))


def _two_phase(z):
    """The registry's ``two_phase``: Phase 1 with its ``2k`` anchors (:func:`_moment_descent`, no
    history), then Phase 2 (:func:`_fedx`), one after the other."""
    return max(_moment_descent(dataclasses.replace(z, m=2 * z.k, history_rounds=0)), _fedx(z))


def _training_loss(z):
    """IFCA's objective of ``B`` parameter sets (:func:`mixreg.algorithms.ifca.training_loss`,
    e.g. along a run's path): the predictions ``(B k, N)`` in the dtype, the losses ``(B, m, k)``
    and the assignments."""
    return z.itemsize * z.replicas * z.k * z.N + 8 * z.replicas * z.m * (z.k + 2)


def _least_squares(z):
    """Known-label (and client-weighted) least squares: a cluster's rows indexed and cast to
    float64 (at most ``(s + 8) N d``), its ``d x d`` Gram matrix and factor."""
    return (z.itemsize + 8) * z.N * z.d + 16 * z.N + 16 * z.d * z.d * z.k


#: Bytes of a trial beyond its arrays, per worker: compiling the kernels (once per worker), the
#: interpreter's modules and NumPy's and the scoring's temporaries, about 100 MB measured.
TRIAL_OVERHEAD = 1.5e8


#: Work-array estimate per driver: the registered algorithms by their registry names, and the
#: drivers a study calls directly (``moment_descent``, ``least_squares``: the known-label
#: baselines, ``training_loss``: IFCA's objective of a batch of parameters).
#: ``WORK_ARRAYS[name](RunSizes) -> bytes``.
WORK_ARRAYS = {
    "ifca": _ifca, "ifca_data": _ifca, "ifca_model": _ifca_model,
    "fedavg": _fedx, "fedprox": _fedx, "fedx": _fedx,
    "oneshot": _oneshot, "fesem": _fesem, "pacfl": _pacfl, "pacfl_x": _pacfl,
    "ifca_points": _ifca_points, "kfed": _kfed, "two_phase": _two_phase,
    "moment_descent": _moment_descent, "least_squares": _least_squares, "training_loss": _training_loss,
}


def trial_bytes(specs: Iterable[ProblemSpec], runs: Iterable[tuple[str, RunSizes] | float]) -> float:
    """Upper estimate of a trial's peak bytes: the problems it holds at once, plus the heaviest of
    the runs it makes one after the other.

    Parameters
    ----------
    specs : iterable of ProblemSpec
        The problems the trial draws and keeps (:meth:`mixreg.problems.ProblemSpec.memory_bytes`).
    runs : iterable of (str, RunSizes) or float
        The driver calls, by :func:`work_bytes`'s names, with their sizes; or the bytes of a
        step of the trial's own (a float).

    Returns
    -------
    float
        Bytes (without the interpreter's and the compiled kernels' own memory).

    Examples
    --------
    >>> from mixreg.problems import ProblemSpec
    >>> spec = ProblemSpec(m=100, k=2, n=100, d=1000, sigma=0.1, scale=0.25)
    >>> f"{trial_bytes([spec], [('ifca', RunSizes.of(spec, replicas=30))]) / 1e6:.0f} MB"
    '275 MB'
    """
    held = sum(spec.memory_bytes() for spec in specs)
    return float(held + max((float(run) if isinstance(run, (int, float)) else work_bytes(*run) for run in runs),
                            default=0.0))


def work_methods() -> tuple[str, ...]:
    """The names :func:`work_bytes` knows."""
    return tuple(WORK_ARRAYS)


def work_bytes(method: str, sizes: RunSizes) -> float:
    """Upper estimate of the bytes a batched call of ``method`` allocates beyond its problem.

    Parameters
    ----------
    method : str
        A registered algorithm's name (:data:`mixreg.algorithms.ALGORITHMS`) or
        ``"moment_descent"``, ``"fedx"``, ``"least_squares"``, ``"training_loss"`` (see
        :data:`WORK_ARRAYS`).
    sizes : RunSizes

    Returns
    -------
    float
        Bytes of the method's work arrays for one run of ``sizes``.

    Examples
    --------
    >>> z = RunSizes(m=100, N=10_000, d=1000, k=2, replicas=30, dtype="float32")
    >>> f"{work_bytes('ifca', z) / 1e6:.0f} MB"  # (B k N) twice and (m, B, d) in float32
    '18 MB'
    """
    if method not in WORK_ARRAYS:
        raise ValueError(f"method must be one of {', '.join(WORK_ARRAYS)}, got {method!r}")
    if not isinstance(sizes, RunSizes):
        raise TypeError(f"sizes must be a RunSizes, got {type(sizes).__name__}")
    return float(WORK_ARRAYS[method](sizes))
