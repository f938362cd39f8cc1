"""Benchmark: IFCA as a theorist would write it without mixreg, in NumPy, PyTorch and JAX.

IFCA (Ghosh, Chung, Yin, Ramchandran 2020, Algorithm 2), option I *gradient averaging*, full
batch, no resampling, every client in every round, ``B`` replicas run as one batch, exactly the
semantics of :func:`mixreg.algorithms.ifca.ifca` with its defaults.  The data are ``X`` of shape
``(N, d)`` and ``y`` of shape ``(N,)`` stacked, ``m = N / n`` clients of ``n`` rows each (client
``i`` owns rows ``i n : (i + 1) n``); ``theta0`` of shape ``(B, k, d)``; one step size per
replica.  Each round, for every replica,

* ``F_i(theta_j) = (1/n) sum_{r in client i} (<x_r, theta_j> - y_r)^2``;
* ``a_i = argmin_j F_i(theta_j)``, ties to the lowest index;
* ``theta_j <- theta_j - (gamma / m) sum_{i : a_i = j} (2/n) X_i^T (X_i theta_j - y_i)``.

Everything is computed in the data's dtype as mixreg does: the residuals are scaled by the
weight ``2/n`` rounded to the dtype (``w * (P - y)``), the step ``gamma / m`` is computed in
float64 and then rounded to the dtype, and the update is ``theta - step * grad`` in the dtype.
The one difference is the loss of the identity estimate, which mixreg accumulates in float64
from the dtype's predictions and these programs compute in the dtype (what a user writes): the
assignments can differ only where two models' losses are within rounding of each other, which
:func:`check_equal` reports.

The competitors, each a function taking NumPy arrays and returning ``(theta, assign)``
(``assign`` of shape ``(B, m)``, the identity estimates of the last round, the ones its update
used), and a ``make_*`` form that converts the inputs once and returns ``run(n_rounds)`` whose
time is the rounds only:

* :func:`numpy_ifca`: one product for all predictions, the losses by a reshape to
  ``(B, k, m, n)``, the residuals of each client's chosen model, the per-client gradients as one
  batched product ``(m, B, n) @ (m, n, d)`` and their sums per model by a one-hot ``einsum``
  (``(k + 1) 2 N d`` flops per replica-round, mixreg's count);
* :func:`torch_ifca`: the masked dense form, ``P = theta.reshape(B k, d) @ X.T``, a one-hot
  mask ``(B, k, m)`` expanded to the rows, and the gradient as one product of the masked
  residuals ``(B k, N)`` with ``X`` (``2k 2 N d`` flops per replica-round: the gradient product
  does ``k`` times the necessary work, in exchange for one large GEMM);
* :func:`jax_ifca`: a function of one replica, ``jax.vmap`` over the replicas, the rounds in
  ``jax.lax.fori_loop``, all under ``jax.jit``; its gradient in the masked dense form
  (``form="dense"``, as PyTorch's) or per client (``form="clients"``, as NumPy's).

:func:`check_equal` compares a competitor's result with mixreg's.  Run
``python -m experiments.bench_competitors`` to time them against mixreg on one thread each
(``--quick`` for a smoke run): the table of milliseconds per replica-round, the ratio to mixreg,
each program's process CPU time over wall time, and the agreement of every result with mixreg's.

One thread.  :func:`set_one_thread` limits OpenBLAS and OpenMP (threadpoolctl) and PyTorch
(``torch.set_num_threads(1)``), puts :func:`jax_one_thread_env`'s ``XLA_FLAGS`` in the
environment (they must be there before JAX starts its CPU backend, so the benchmark calls it
before importing ``jax``) and pins every thread of the process to one CPU.  The pinning is what
actually limits JAX: with jax 0.10 the XLA flags ``--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1`` alone still let a large product run on two threads (process CPU
time twice its wall time on 2 cores, two threads busy), while a process pinned to one CPU
before JAX starts sizes XLA's pool to it and does all the work on one thread.
:func:`thread_usage` measures this in a child process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

__all__ = [
    "numpy_ifca",
    "make_numpy_ifca",
    "torch_ifca",
    "make_torch_ifca",
    "jax_ifca",
    "make_jax_ifca",
    "JAX_FORMS",
    "set_one_thread",
    "jax_one_thread_env",
    "JAX_ONE_THREAD_FLAGS",
    "pin_to_one_cpu",
    "thread_usage",
    "check_equal",
    "rounding_tolerance",
    "TOLERANCE_FACTOR",
    "CASES",
    "bench_case",
    "main",
]

#: The gradient forms of :func:`jax_ifca`.
JAX_FORMS = ("dense", "clients")

#: The XLA flags usually given to run JAX's CPU backend on one thread.
JAX_ONE_THREAD_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"

#: ``(m, n, d, k, B)`` of the benchmark: the official IFCA sizes of mixreg's presets.
CASES = ((100, 100, 1000, 2, 30), (100, 100, 1000, 2, 120), (400, 100, 1000, 4, 30), (400, 100, 1000, 4, 120))

#: :func:`rounding_tolerance` allows ``TOLERANCE_FACTOR * eps * (T + 1)`` (see there).
TOLERANCE_FACTOR = 10.0


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def _inputs(X, y, n, theta0, gamma):
    """Checked inputs: ``X, y, theta0`` in ``X``'s dtype, ``(m, w, step)``.

    ``w = 2/n`` and ``step = gamma / m`` rounded to the dtype as mixreg rounds them.
    """
    X = np.ascontiguousarray(X)
    if X.ndim != 2 or X.dtype not in (np.float32, np.float64):
        raise ValueError(f"X must be a float32 or float64 array of shape (N, d), got {X.dtype} {X.shape}")
    dtype = X.dtype
    N, d = X.shape
    y = np.ascontiguousarray(y, dtype=dtype)
    if y.shape != (N,):
        raise ValueError(f"y must have shape (N,) = ({N},), got {y.shape}")
    n = int(n)
    if n < 1 or N % n:
        raise ValueError(f"n must divide N = {N}, got {n}")
    m = N // n
    theta0 = np.array(theta0, dtype=dtype)  # a copy, in the data's dtype
    if theta0.ndim != 3 or theta0.shape[2] != d:
        raise ValueError(f"theta0 must have shape (B, k, d) with d = {d}, got {theta0.shape}")
    gamma = np.asarray(gamma, dtype=np.float64)
    if gamma.shape != (theta0.shape[0],) or not np.all(gamma > 0):
        raise ValueError(f"gamma must hold one positive step size per replica, shape ({theta0.shape[0]},), got "
                         f"{gamma.shape}")
    w = np.asarray(2.0 / n).astype(dtype)  # mixreg: (2.0 / n_i).astype(dtype)
    step = (gamma / m).astype(dtype)  # mixreg: (gamma / m).astype(dtype)
    return X, y, theta0, m, w, step


def _check_rounds(n_rounds):
    n_rounds = int(n_rounds)
    if n_rounds < 1:
        raise ValueError(f"n_rounds must be >= 1, got {n_rounds}")
    return n_rounds


# --------------------------------------------------------------------------------------------
# NumPy
# --------------------------------------------------------------------------------------------


def make_numpy_ifca(X, y, n, theta0, gamma):
    """Batched NumPy IFCA, prepared: ``run(n_rounds) -> (theta, assign)``.

    Parameters
    ----------
    X : ndarray of shape (N, d), float32 or float64
        The stacked data; its dtype is the computation's.
    y : ndarray of shape (N,)
    n : int
        Rows per client (``m = N / n`` clients of consecutive rows).
    theta0 : ndarray of shape (B, k, d)
        Initial parameters (copied, cast to ``X``'s dtype).
    gamma : ndarray of shape (B,)
        Step size of each replica.

    Returns
    -------
    callable
        ``run(n_rounds)``: runs ``n_rounds >= 1`` rounds from ``theta0`` and returns ``theta``
        of shape ``(B, k, d)`` and ``assign`` of shape ``(B, m)``, int64, the last round's
        identity estimates.
    """
    X, y, theta0, m, w, step = _inputs(X, y, n, theta0, gamma)
    B, k, d = theta0.shape
    Xc, yc = X.reshape(m, n, d), y.reshape(m, n)
    step = step[:, None, None]
    models = np.arange(k)

    def run(n_rounds):
        theta, assign = theta0, None
        for _ in range(_check_rounds(n_rounds)):
            R = (theta.reshape(B * k, d) @ X.T).reshape(B, k, m, n) - yc  # residuals of every model
            assign = np.mean(R * R, axis=3).argmin(axis=1)  # (B, m): argmin_j F_i, ties to the lowest j
            chosen = np.take_along_axis(R, assign[:, None, :, None], axis=1)[:, 0]  # (B, m, n)
            G = (w * chosen).transpose(1, 0, 2) @ Xc  # (m, B, d): grad F_i at the chosen model
            onehot = (assign[:, :, None] == models).astype(X.dtype)  # (B, m, k)
            theta = theta - step * np.einsum("bmk,mbd->bkd", onehot, G)  # sum per model, then step
        return theta, assign

    return run


def numpy_ifca(X, y, n, theta0, gamma, n_rounds):
    """IFCA option I in batched NumPy (see the module docstring).

    Parameters
    ----------
    X, y, n, theta0, gamma
        As :func:`make_numpy_ifca`.
    n_rounds : int >= 1

    Returns
    -------
    theta : ndarray of shape (B, k, d), ``X``'s dtype
    assign : ndarray of shape (B, m), int64
        The identity estimates of the last round.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((12, 3)), rng.standard_normal(12)
    >>> theta, assign = numpy_ifca(X, y, 4, rng.standard_normal((2, 2, 3)), np.full(2, 0.1), 3)
    >>> theta.shape, assign.shape
    ((2, 2, 3), (2, 3))
    """
    return make_numpy_ifca(X, y, n, theta0, gamma)(n_rounds)


# --------------------------------------------------------------------------------------------
# PyTorch
# --------------------------------------------------------------------------------------------


def make_torch_ifca(X, y, n, theta0, gamma):
    """Batched PyTorch (CPU) IFCA in the masked dense form, prepared.

    The inputs are converted to tensors once (``torch.from_numpy``, no copy of ``X``); the
    returned ``run(n_rounds)`` runs the rounds under ``torch.inference_mode`` and returns the
    tensors ``theta`` (B, k, d) and ``assign`` (B, m), int64.  A round: ``P = theta.reshape(B k,
    d) @ X.T``; the losses from ``P - y`` viewed as ``(B, k, m, n)``; ``assign = argmin`` over the
    models (PyTorch returns the first minimum); a one-hot mask ``(B, k, m)`` broadcast over each
    client's rows zeroes the residuals of the models a client did not choose; the gradient is
    the one product ``(w R masked).reshape(B k, N) @ X``.

    Parameters
    ----------
    X, y, n, theta0, gamma
        As :func:`make_numpy_ifca`.

    Returns
    -------
    callable

    Raises
    ------
    ImportError
        Without PyTorch.
    """
    import torch

    X, y, theta0, m, w, step = _inputs(X, y, n, theta0, gamma)
    B, k, d = theta0.shape
    N = X.shape[0]
    Xt, yt = torch.from_numpy(X), torch.from_numpy(y)
    th0 = torch.from_numpy(theta0)
    wt = torch.from_numpy(w)  # a 0-d tensor of the dtype
    st = torch.from_numpy(step)[:, None, None]

    def run(n_rounds):
        n_rounds = _check_rounds(n_rounds)
        with torch.inference_mode():
            theta, assign = th0, None
            for _ in range(n_rounds):
                R = ((theta.reshape(B * k, d) @ Xt.T) - yt).reshape(B, k, m, n)
                assign = (R * R).mean(dim=3).argmin(dim=1)  # (B, m)
                mask = torch.nn.functional.one_hot(assign, k).transpose(1, 2).to(Xt.dtype)  # (B, k, m)
                masked = (wt * R) * mask[..., None]  # zero rows of the models not chosen
                theta = theta - st * (masked.reshape(B * k, N) @ Xt).reshape(B, k, d)
        return theta, assign

    return run


def torch_ifca(X, y, n, theta0, gamma, n_rounds):
    """IFCA option I in PyTorch on the CPU, masked dense gradient (see :func:`make_torch_ifca`).

    Parameters
    ----------
    X, y, n, theta0, gamma
        As :func:`make_numpy_ifca`.
    n_rounds : int >= 1

    Returns
    -------
    theta : ndarray of shape (B, k, d), ``X``'s dtype
    assign : ndarray of shape (B, m), int64
    """
    theta, assign = make_torch_ifca(X, y, n, theta0, gamma)(n_rounds)
    return theta.numpy(), assign.numpy()


# --------------------------------------------------------------------------------------------
# JAX
# --------------------------------------------------------------------------------------------


def make_jax_ifca(X, y, n, theta0, gamma, *, form="dense"):
    """IFCA in JAX: a jitted function of one replica, vmapped, the rounds in a ``fori_loop``.

    For float64 data this calls ``jax.config.update("jax_enable_x64", True)`` before creating
    any array (without it JAX silently computes in float32).  The flag is global to the
    process and stays set; float32 programs are unaffected by it (their arrays keep their
    dtype; only the assignments' integer type widens to int64).

    The number of rounds is an argument of the compiled function (the loop is a ``while``), so
    one compilation serves every ``n_rounds``; the first call compiles.  The returned
    ``run(n_rounds)`` blocks until the results are computed and returns JAX arrays ``theta``
    (B, k, d) and ``assign`` (B, m).

    Parameters
    ----------
    X, y, n, theta0, gamma
        As :func:`make_numpy_ifca`.
    form : {"dense", "clients"}
        The gradient of one replica: ``"dense"``, the masked residuals ``(k, N)`` times ``X``
        (as :func:`make_torch_ifca`); ``"clients"``, each client's gradient at its chosen model,
        ``(m, n) x (m, n, d)``, summed per model by a one-hot product (as
        :func:`make_numpy_ifca`).

    Returns
    -------
    callable

    Raises
    ------
    ImportError
        Without JAX.
    """
    import jax

    if form not in JAX_FORMS:
        raise ValueError(f"form must be one of {JAX_FORMS}, got {form!r}")
    X, y, theta0, m, w, step = _inputs(X, y, n, theta0, gamma)
    if X.dtype == np.float64:
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    B, k, d = theta0.shape
    N = X.shape[0]
    dtype = X.dtype

    def one_replica(theta, step, X, y, w):  # theta (k, d), step a scalar
        R = (theta @ X.T - y).reshape(k, m, n)
        assign = jnp.argmin(jnp.mean(R * R, axis=2), axis=0)  # (m,), the first minimum
        onehot = (assign[None, :] == jnp.arange(k)[:, None]).astype(dtype)  # (k, m)
        if form == "dense":
            grad = ((w * R) * onehot[:, :, None]).reshape(k, N) @ X
        else:
            chosen = jnp.take_along_axis(R, assign[None, :, None], axis=0)[0]  # (m, n)
            grad = onehot @ jnp.einsum("mr,mrd->md", w * chosen, X.reshape(m, n, d))
        return theta - step * grad, assign

    batched = jax.vmap(one_replica, in_axes=(0, 0, None, None, None))

    @jax.jit
    def rounds(theta, step, X, y, w, n_rounds):
        assign = jnp.zeros((B, m), dtype=jnp.argmin(jnp.zeros(2)).dtype)
        return jax.lax.fori_loop(0, n_rounds, lambda t, carry: batched(carry[0], step, X, y, w), (theta, assign))

    Xj, yj, th0 = jnp.asarray(X), jnp.asarray(y), jnp.asarray(theta0)
    sj, wj = jnp.asarray(step), jnp.asarray(w)

    def run(n_rounds):
        theta, assign = rounds(th0, sj, Xj, yj, wj, _check_rounds(n_rounds))
        return theta.block_until_ready(), assign.block_until_ready()

    return run


def jax_ifca(X, y, n, theta0, gamma, n_rounds, *, form="dense"):
    """IFCA option I in JAX (see :func:`make_jax_ifca`; float64 enables ``jax_enable_x64``).

    Parameters
    ----------
    X, y, n, theta0, gamma
        As :func:`make_numpy_ifca`.
    n_rounds : int >= 1
    form : {"dense", "clients"}

    Returns
    -------
    theta : ndarray of shape (B, k, d), ``X``'s dtype
    assign : ndarray of shape (B, m), int64
    """
    theta, assign = make_jax_ifca(X, y, n, theta0, gamma, form=form)(n_rounds)
    return np.asarray(theta), np.asarray(assign).astype(np.int64)


# --------------------------------------------------------------------------------------------
# One thread
# --------------------------------------------------------------------------------------------


def jax_one_thread_env(environ=None):
    """The ``XLA_FLAGS`` setting for one XLA CPU thread, added to the flags already set.

    The flags take effect only if they are in the environment before JAX starts its CPU
    backend (in practice: before ``import jax``); :func:`set_one_thread` puts them there.  They
    do not suffice with jax 0.10: see the module docstring and :func:`thread_usage`.

    Parameters
    ----------
    environ : mapping, optional
        The environment to extend (default ``os.environ``).

    Returns
    -------
    dict
        ``{"XLA_FLAGS": flags}``, to update an environment with.

    Examples
    --------
    >>> jax_one_thread_env({"XLA_FLAGS": "--xla_dump_to=dumps"})["XLA_FLAGS"]
    '--xla_dump_to=dumps --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1'
    """
    environ = os.environ if environ is None else environ
    old = environ.get("XLA_FLAGS", "").strip()
    if JAX_ONE_THREAD_FLAGS in old:
        return {"XLA_FLAGS": old}
    return {"XLA_FLAGS": f"{old} {JAX_ONE_THREAD_FLAGS}".strip()}


def pin_to_one_cpu(cpu=None):
    """Pin every thread of this process to one CPU (Linux); return the CPU, or ``None``.

    Threads created afterwards inherit the affinity, and XLA sizes its CPU thread pool from it
    when JAX's backend starts; pinned, the process cannot use more than one core whatever its
    libraries' thread settings.

    Parameters
    ----------
    cpu : int, optional
        Default: the last CPU of the current affinity.
    """
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpu = max(os.sched_getaffinity(0)) if cpu is None else int(cpu)
    tasks = os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else ["0"]
    for tid in tasks:
        try:
            os.sched_setaffinity(int(tid), {cpu})
        except (ProcessLookupError, PermissionError):  # a thread that ended meanwhile
            pass
    return cpu


def set_one_thread(*, pin=True):
    """Run every competitor and mixreg on one thread, in this process.

    * OpenBLAS (NumPy, mixreg) and OpenMP (PyTorch's) pools limited to one thread with
      threadpoolctl (mixreg's Numba kernels are serial);
    * ``torch.set_num_threads(1)`` if PyTorch is installed;
    * :func:`jax_one_thread_env` put in ``os.environ``: effective only if JAX's backend has not
      started yet, so call this before ``import jax`` (the benchmark does);
    * with ``pin`` (default), :func:`pin_to_one_cpu`, which is what limits JAX 0.10 to one
      thread (the XLA flags alone do not: measured by :func:`thread_usage`).

    Parameters
    ----------
    pin : bool

    Returns
    -------
    dict
        What was done: ``threadpoolctl`` (the limiter object, keep it alive), ``torch_threads``,
        ``xla_flags``, ``jax_was_imported`` (True: the XLA flags came too late), ``cpu``.
    """
    import importlib.util

    from threadpoolctl import threadpool_limits

    done = {"jax_was_imported": "jax" in sys.modules}
    os.environ.update(jax_one_thread_env())
    done["xla_flags"] = os.environ["XLA_FLAGS"]
    done["cpu"] = pin_to_one_cpu() if pin else None
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.set_num_threads(1)
        done["torch_threads"] = torch.get_num_threads()
    done["threadpoolctl"] = threadpool_limits(limits=1)  # after torch: its OpenMP library is loaded
    return done


_USAGE_CHILD = r"""
import json, os, sys, time
framework, mode, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
if mode == "flags":
    os.environ["XLA_FLAGS"] = sys.argv[4]
if mode == "pin":
    os.sched_setaffinity(0, {int(sys.argv[5])})
else:  # every CPU, whatever the parent's pinning
    os.sched_setaffinity(0, set(range(os.cpu_count())))

def per_thread():
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as fh:
                f = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[tid] = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    return out

import numpy as np
a = np.random.default_rng(0).standard_normal((1500, 1500)).astype(np.float32)
if framework == "jax":
    import jax
    f = jax.jit(lambda x: x @ x)
    x = jax.numpy.asarray(a)
    step = lambda: f(x).block_until_ready()
elif framework == "torch":
    import torch
    if mode == "flags":
        torch.set_num_threads(1)
    x = torch.from_numpy(a)
    step = lambda: x @ x
else:
    from threadpoolctl import threadpool_limits
    if mode == "flags":
        threadpool_limits(limits=1)
    step = lambda: a @ a
step()
before, w0, c0 = per_thread(), time.perf_counter(), time.process_time()
count = 0
while time.perf_counter() - w0 < seconds:
    step()
    count += 1
wall, cpu, after = time.perf_counter() - w0, time.process_time() - c0, per_thread()
busy = sorted((after[t] - before.get(t, 0.0) for t in after), reverse=True)
print(json.dumps({"wall": wall, "cpu": cpu, "products": count, "threads": len(after), "busiest": busy[:4]}))
"""


def thread_usage(framework, mode, seconds=4.0):
    """Process CPU time over wall time of a large product loop, in a child process.

    The child multiplies two ``1500 x 1500`` float32 matrices repeatedly for ``seconds``
    (``jax.jit``, ``torch`` or ``numpy``).  A ratio near 1 means one thread at work (or two
    threads sharing one core with another process: the per-thread CPU times tell them apart).

    Parameters
    ----------
    framework : {"jax", "torch", "numpy"}
    mode : {"default", "flags", "pin"}
        ``"default"``: no setting; ``"flags"``: the framework's own setting (JAX:
        :func:`jax_one_thread_env` before ``import jax``; PyTorch: ``torch.set_num_threads(1)``;
        NumPy: threadpoolctl's limit of 1); ``"pin"``: the process pinned to one CPU before the
        framework is imported, nothing else.  The child otherwise may use every CPU, even if
        this process is pinned.
    seconds : float

    Returns
    -------
    dict
        ``wall``, ``cpu`` (seconds), ``ratio`` (cpu / wall), ``products``, ``gflops``,
        ``threads`` (of the process), ``busiest`` (CPU seconds of the four busiest threads).
    """
    if mode not in ("default", "flags", "pin"):
        raise ValueError(f"mode must be 'default', 'flags' or 'pin', got {mode!r}")
    env = {key: value for key, value in os.environ.items() if key != "XLA_FLAGS"}
    flags = jax_one_thread_env({})["XLA_FLAGS"]
    cpu = str(max(range(os.cpu_count() or 1)))
    child = subprocess.run([sys.executable, "-c", _USAGE_CHILD, framework, mode, str(seconds), flags, cpu],
                           env=env, capture_output=True, text=True, check=False)
    if child.returncode != 0:
        raise RuntimeError(f"the {framework} thread probe failed: {child.stderr.strip().splitlines()[-1:]}")
    row = json.loads(child.stdout.strip().splitlines()[-1])
    row.update(framework=framework, mode=mode, ratio=row["cpu"] / row["wall"],
               gflops=row["products"] * 2 * 1500.0**3 / row["wall"] / 1e9)
    return row


# --------------------------------------------------------------------------------------------
# Agreement with mixreg
# --------------------------------------------------------------------------------------------


def rounding_tolerance(dtype, n_rounds):
    """Largest relative parameter difference of two correct programs after ``n_rounds``.

    ``TOLERANCE_FACTOR * eps * (n_rounds + 1)`` with ``eps`` the dtype's machine epsilon
    (float32 ``1.2e-7``, float64 ``2.2e-16``) and ``TOLERANCE_FACTOR = 10``.  Why: two correct
    programs differ in the order of their sums (a GEMM's blocking, per-client against dense
    gradients), which perturbs a round's update by about one rounding of the parameters; small
    steps barely contract such perturbations, so they may add up over the rounds, at worst
    linearly, hence ``T + 1``.  Measured against mixreg, in both dtypes, at the test size
    ``(m, n, d, k) = (20, 10, 30, 2)`` (1 to 60 rounds) and at ``(100, 100, 1000, 2)`` (1 to 20
    rounds): 0 for :func:`numpy_ifca` (bit-identical) and at most ``0.35 eps (T + 1)`` for the
    PyTorch and JAX programs, so the factor 10 leaves a margin of about 30.  An error of the
    semantics moves the parameters far more: measured in float32 at the same two sizes, a step
    1% too large by ``9e-4`` to ``6e-3`` relative and one client left out by ``5e-3`` to ``0.3``,
    in 1 and 10 rounds, at least 390 times the tolerance (``2.4e-6`` and ``1.3e-5``).

    Parameters
    ----------
    dtype : numpy dtype (float32 or float64)
    n_rounds : int >= 0

    Returns
    -------
    float

    Examples
    --------
    >>> rounding_tolerance(np.float32, 9)
    1.1920928955078125e-05
    """
    return TOLERANCE_FACTOR * float(np.finfo(dtype).eps) * (int(n_rounds) + 1)


def check_equal(reference_theta, reference_assign, theta, assign, dtype, *, n_rounds=1):
    """Does a result agree with a reference (mixreg's) to rounding?

    Parameters
    ----------
    reference_theta, theta : array of shape (B, k, d)
    reference_assign, assign : int array of shape (B, m)
        Assignments computed the same way for both (e.g. the last round's, or the final ones of
        both parameters on all data).
    dtype : numpy dtype
        The computation's dtype (sets the tolerance).
    n_rounds : int
        Rounds the results ran (sets the tolerance, :func:`rounding_tolerance`).

    Returns
    -------
    dict
        ``assign_identical`` (bool: same shape and values), ``max_rel_param_diff`` (float: the
        largest over replicas of ``||theta_b - ref_b|| / ||ref_b||``, Frobenius norms over the
        ``k`` models, ``inf`` for a shape mismatch or a non-finite value), ``tolerance``
        (:func:`rounding_tolerance`) and ``ok`` (assignments identical and the difference
        within the tolerance).

    Examples
    --------
    >>> ref = np.ones((1, 2, 3))
    >>> check_equal(ref, np.zeros((1, 4), int), ref * (1 + 1e-9), np.zeros((1, 4), int), np.float64)["ok"]
    False
    >>> check_equal(ref, np.zeros((1, 4), int), ref * (1 + 1e-15), np.zeros((1, 4), int), np.float64)["ok"]
    True
    """
    ref, th = np.asarray(reference_theta, dtype=np.float64), np.asarray(theta, dtype=np.float64)
    ref_a, a = np.asarray(reference_assign), np.asarray(assign)
    identical = bool(ref_a.shape == a.shape and np.array_equal(ref_a, a))
    if ref.shape != th.shape or ref.ndim != 3 or not (np.isfinite(ref).all() and np.isfinite(th).all()):
        rel = float("inf")
    else:
        B = ref.shape[0]
        diff = np.linalg.norm((th - ref).reshape(B, -1), axis=1)
        scale = np.maximum(np.linalg.norm(ref.reshape(B, -1), axis=1), np.finfo(np.float64).tiny)
        rel = float(np.max(diff / scale)) if B else 0.0
    tol = rounding_tolerance(dtype, n_rounds)
    return {"assign_identical": identical, "max_rel_param_diff": rel, "tolerance": tol,
            "ok": bool(identical and rel <= tol)}


# --------------------------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------------------------


def _problem(m, n, d, k, B, dtype):
    from mixreg.algorithms.ifca import initial_parameters
    from mixreg.problems import ProblemSpec

    spec = ProblemSpec(m=m, k=k, n=n, d=d, sigma=0.1, scale=0.25, dtype=np.dtype(dtype).name)
    problem = spec.generate(np.random.default_rng(0))
    theta0 = initial_parameters(problem, B, "official", rng=np.random.default_rng(1))
    gamma = np.tile([0.1, 0.03, 0.01], B // 3 + 1)[:B]
    return problem, theta0, gamma


def _runners(problem, theta0, gamma, names):
    """``{name: run(n_rounds) -> (theta, assign)}``, NumPy arrays out of the timed part."""
    from mixreg.algorithms.ifca import ifca

    n = int(problem.sizes[0])
    args = (problem.X, problem.y, n, theta0, gamma)
    make = {
        "mixreg": lambda: (lambda T: ifca(problem, theta0, gamma, n_rounds=T)),
        "numpy": lambda: make_numpy_ifca(*args),
        "torch": lambda: make_torch_ifca(*args),
        "jax": lambda: make_jax_ifca(*args, form="dense"),
        "jax-clients": lambda: make_jax_ifca(*args, form="clients"),
    }
    return {name: make[name]() for name in names}


def _as_numpy(name, out):
    if name == "mixreg":
        if out.diverged.any():
            raise RuntimeError(f"mixreg: {int(out.diverged.sum())} replicas diverged; lower the step sizes")
        return out.theta, out.assignments
    theta, assign = out
    theta = theta.numpy() if hasattr(theta, "numpy") and not isinstance(theta, np.ndarray) else np.asarray(theta)
    return theta, np.asarray(assign)


def bench_case(m, n, d, k, B, dtype, *, names=("mixreg", "numpy", "torch", "jax"), rounds=10, repeats=3):
    """Time every program of ``names`` on one problem, interleaved, on the current threads.

    First each program runs ``2 rounds`` rounds (a warm-up, which also compiles JAX's program)
    and its result is checked against mixreg's with :func:`check_equal`, the assignments
    recomputed on all data from each program's parameters by mixreg's ``training_loss`` (so both
    are the final ones); a program that disagrees stops the benchmark (``RuntimeError``) before
    anything is timed.  Then each runs ``rounds`` and ``2 rounds`` rounds, ``repeats`` times, in
    the order ``A(T) B(T) C(T) A(2T) B(2T) C(2T) A(T) ...``.  A round's cost is the difference of
    the best wall times of the two lengths over ``rounds`` (the *marginal* cost: a run's fixed
    part, mixreg's checks and final training loss, the competitors' nothing, cancels; where noise
    hides the difference, the longer run's average, ``marginal`` False); the same for the process
    CPU time.

    Returns
    -------
    dict
        The case and, per program, ``ms_per_replica_round`` (marginal), ``ms_per_replica_round_run``
        (best ``rounds``-round run, fixed part included, over its rounds), ``cpu_ms_per_replica_round``,
        ``cpu_over_wall`` (summed over all timed runs), ``vs_mixreg`` (ratio of the marginal costs,
        > 1: slower than mixreg), ``vs_mixreg_run`` (ratio of the ``rounds``-round runs' costs),
        ``vs_mixreg_paired`` (median over the repeats of the ratio of each repeat's own marginal
        costs: the programs of one repeat run within seconds of each other, so a machine whose
        speed drifts over minutes biases it less than the ratio of best times),
        ``cpu_vs_mixreg_paired`` (the same of the process CPU time), ``samples`` (every timed run's
        ``[cpu, wall]`` seconds in order, by its number of rounds: ``{"T": [...], "2T": [...]}``) and
        ``agreement`` (:func:`check_equal`); the machine's
        one-minute load average before and after (``load_before``, ``load_after``: other
        processes share the cores).
    """
    from mixreg.algorithms.ifca import training_loss
    from experiments.bench_ifca import round_costs

    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    problem, theta0, gamma = _problem(m, n, d, k, B, dtype)
    runs = _runners(problem, theta0, gamma, names)
    # Checked before timed: each program's run of 2 rounds (which also warms it up and compiles
    # JAX's program) against mixreg's, the final assignments recomputed on all data from each
    # program's parameters by mixreg's ``training_loss`` (so both are the final ones).
    results = {name: _as_numpy(name, run(2 * rounds)) for name, run in runs.items()}
    agreement = {}
    if "mixreg" in results:
        ref_theta = results["mixreg"][0]
        with np.errstate(over="ignore", invalid="ignore"):
            ref_final = training_loss(problem, ref_theta)[1]
            for name in names:
                theta = results[name][0]
                agreement[name] = check_equal(ref_theta, ref_final, theta, training_loss(problem, theta)[1],
                                              problem.dtype, n_rounds=2 * rounds)
        wrong = [name for name, row in agreement.items() if not row["ok"]]
        if wrong:
            raise RuntimeError(f"{', '.join(wrong)} disagree with mixreg at (m, n, d, k, B) = ({m}, {n}, {d}, {k}, "
                               f"{B}), {np.dtype(dtype).name}: {[agreement[name] for name in wrong]}")
    costs = round_costs(runs, rounds, repeats)  # interleaved; (cpu, wall) samples
    row = {"m": m, "n": n, "d": d, "k": k, "B": B, "dtype": np.dtype(dtype).name, "rounds": rounds,
           "repeats": repeats, "load_before": load_before,
           "load_after": os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan"), "programs": {}}
    for name in names:
        cost, samples = costs[name], costs[name]["samples"]
        entry = {"ms_per_replica_round": 1e3 * cost["wall"] / B, "marginal": cost["wall_marginal"],
                 "cpu_ms_per_replica_round": 1e3 * cost["cpu"] / B, "cpu_marginal": cost["marginal"],
                 "ms_per_replica_round_run": 1e3 * min(w for _, w in samples[rounds]) / (rounds * B),
                 "cpu_over_wall": (sum(c for T in samples for c, _ in samples[T])
                                   / sum(w for T in samples for _, w in samples[T])),
                 "samples": {"T": [list(t) for t in samples[rounds]], "2T": [list(t) for t in samples[2 * rounds]]}}
        if name in agreement:
            entry["agreement"] = agreement[name]
        row["programs"][name] = entry
    if "mixreg" in names:
        base = row["programs"]["mixreg"]

        def marginals(name, clock=1):  # repeat r's own marginal time (1: wall, 0: CPU), from its two runs
            samples = costs[name]["samples"]  # (run close in time)
            return np.array([t2[clock] - t1[clock] for t1, t2 in zip(samples[rounds], samples[2 * rounds])])

        for name, entry in row["programs"].items():
            entry["vs_mixreg"] = entry["ms_per_replica_round"] / base["ms_per_replica_round"]
            entry["vs_mixreg_run"] = entry["ms_per_replica_round_run"] / base["ms_per_replica_round_run"]
            entry["vs_mixreg_paired"] = float(np.median(marginals(name) / marginals("mixreg")))
            entry["cpu_vs_mixreg_paired"] = float(np.median(marginals(name, 0) / marginals("mixreg", 0)))
    return row


def _table(rows):
    lines = ["| (m, n, d, k) | B | dtype | program | ms per replica-round | vs mixreg | "
             "vs mixreg, paired | ms per replica-round, T-round run | vs mixreg | CPU ms per replica-round | "
             "CPU vs mixreg, paired | CPU / wall | agrees (max rel. diff) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        for name, e in row["programs"].items():
            agree = e.get("agreement")
            agreed = "" if agree is None else f"{'yes' if agree['ok'] else 'NO'} ({agree['max_rel_param_diff']:.1e})"
            lines.append(f"| ({row['m']}, {row['n']}, {row['d']}, {row['k']}) | {row['B']} | {row['dtype']} | "
                         f"{name} | {e['ms_per_replica_round']:.3f} | {e.get('vs_mixreg', float('nan')):.2f} | "
                         f"{e.get('vs_mixreg_paired', float('nan')):.2f} | "
                         f"{e['ms_per_replica_round_run']:.3f} | {e.get('vs_mixreg_run', float('nan')):.2f} | "
                         f"{e['cpu_ms_per_replica_round']:.3f} | {e.get('cpu_vs_mixreg_paired', float('nan')):.2f} | "
                         f"{e['cpu_over_wall']:.2f} | {agreed} |")
    return "\n".join(lines)


def main(argv=None):
    """``python -m experiments.bench_competitors [--quick] [--rounds T] [--repeats R] [--json FILE]``.

    Sets one thread (:func:`set_one_thread`) before importing PyTorch or JAX, measures the
    thread probes (:func:`thread_usage`, in child processes) unless ``--no-probes``, times
    every case of :data:`CASES` in float32 and float64 (:func:`bench_case`), prints a markdown
    table and optionally writes everything as JSON.
    """
    import importlib.util

    from mixreg.cli import OneLineParser

    parser = OneLineParser(prog="python -m experiments.bench_competitors", description=__doc__.split("\n")[0],
                           allow_abbrev=False)
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--rounds", type=int, default=10, help="T: runs of T and 2T rounds (default 10)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each length (default 3)")
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--no-probes", action="store_true", help="skip the thread probes")
    parser.add_argument("--programs", default="mixreg,numpy,torch,jax,jax-clients",
                        help="comma-separated (default: mixreg,numpy,torch,jax,jax-clients)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.repeats < 1:
        parser.error(f"--{'rounds' if args.rounds < 1 else 'repeats'} must be an integer >= 1")
    names = [name for name in args.programs.split(",") if name]
    unknown = sorted(set(names) - {"mixreg", "numpy", "torch", "jax", "jax-clients"})
    if unknown or "mixreg" not in names:
        parser.error(f"--programs: {', '.join(unknown) or 'mixreg is missing'}; allowed: mixreg (required), "
                     "numpy, torch, jax, jax-clients")
    setting = set_one_thread()
    missing = {"torch": "torch", "jax": "jax", "jax-clients": "jax"}
    names = [name for name in names if importlib.util.find_spec(missing.get(name, "numpy")) is not None]
    report = {"one_thread": {key: value for key, value in setting.items() if key != "threadpoolctl"}}
    print(f"one thread: {report['one_thread']}", flush=True)
    if not args.no_probes:
        probes = []
        for framework in ("jax", "torch", "numpy"):
            if importlib.util.find_spec(framework) is None:
                continue
            for mode in ("default", "flags", "pin"):
                row = thread_usage(framework, mode, seconds=1.0 if args.quick else 4.0)
                probes.append(row)
                print(f"probe {framework:6s} {mode:8s} cpu/wall {row['ratio']:.2f}  {row['gflops']:.0f} GFLOP/s  "
                      f"{row['threads']} threads, busiest (cpu s) {[round(b, 2) for b in row['busiest']]}", flush=True)
        report["probes"] = probes
    cases = [(8, 10, 20, 2, 6)] if args.quick else CASES
    rows = []
    for m, n, d, k, B in cases:
        for dtype in ("float32", "float64"):
            # about the same work per run as the first case's T rounds ((k + 1) m B flops per
            # round, up to a factor), at least 5 rounds: with 3, a round's cost at the largest
            # size came out 0.53 of a direct measurement once (the runs' fixed part is a round's
            # worth there, and the best of 3 short runs is noisy)
            rounds = 2 if args.quick else max(5, round(args.rounds * 100 * 30 * 3 / (m * B * (k + 1))))
            row = bench_case(m, n, d, k, B, dtype, names=names, rounds=rounds,
                             repeats=1 if args.quick else args.repeats)
            rows.append(row)
            print(_table([row]).split("\n", 2)[2], flush=True)
    report["cases"] = rows
    print(_table(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
