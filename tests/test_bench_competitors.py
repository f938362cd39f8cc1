"""The competitors of ``experiments.bench_competitors`` (IFCA written directly in NumPy, PyTorch and
JAX) compute what mixreg's ``ifca`` computes, to rounding, in float64 and float32; the check that
says so can fail; the one-thread helpers' settings.  PyTorch and JAX tests skip without them."""

import numpy as np
import pytest

from experiments import bench_competitors as bc
from mixreg.algorithms.ifca import ifca, initial_parameters, training_loss
from mixreg.problems import ProblemSpec

M, N_PER, D, K, B, T = 20, 10, 30, 2, 6, 5
COMPETITORS = ("numpy", "torch", "jax", "jax-clients")


@pytest.fixture
def restore_x64():
    """JAX's float64 flag is global: put it back after a test that may set it."""
    jax = pytest.importorskip("jax", reason="the bench extra is not installed (no jax)")
    before = bool(jax.config.jax_enable_x64)
    yield
    jax.config.update("jax_enable_x64", before)


def _case(dtype):
    spec = ProblemSpec(m=M, k=K, n=N_PER, d=D, sigma=0.1, scale=0.25, dtype=dtype)
    problem = spec.generate(np.random.default_rng(0))
    theta0 = initial_parameters(problem, B, "official", rng=np.random.default_rng(1))
    gamma = np.geomspace(0.01, 0.3, B)  # below the stable limit (about 0.5 at this size)
    return problem, theta0, gamma


def _competitor(name):
    if name == "numpy":
        return bc.numpy_ifca
    if name == "torch":
        pytest.importorskip("torch", reason="the bench extra is not installed (no torch)")
        return bc.torch_ifca
    pytest.importorskip("jax", reason="the bench extra is not installed (no jax)")
    form = "clients" if name == "jax-clients" else "dense"
    return lambda *args: bc.jax_ifca(*args, form=form)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", COMPETITORS)
def test_competitor_agrees_with_mixreg(name, dtype, request):
    if name.startswith("jax"):
        request.getfixturevalue("restore_x64")
    run = _competitor(name)
    problem, theta0, gamma = _case(dtype)
    ref = ifca(problem, theta0, gamma, n_rounds=T, history=["assignments"])
    assert not ref.diverged.any()
    theta, assign = run(problem.X, problem.y, N_PER, theta0, gamma, T)
    assert theta.shape == (B, K, D) and theta.dtype == problem.dtype
    assert assign.shape == (B, M) and assign.dtype.kind == "i"
    # like with like: the last round's identity estimates (the ones its update used) ...
    last = bc.check_equal(ref.theta, ref.history.assignments[-1], theta, assign, problem.dtype, n_rounds=T)
    assert last["ok"], last
    # ... and the final ones, on all data at the final parameters, mixreg's `assignments`
    final = bc.check_equal(ref.theta, ref.assignments, theta, training_loss(problem, theta)[1], problem.dtype,
                           n_rounds=T)
    assert final["ok"], final
    assert final["max_rel_param_diff"] <= final["tolerance"] / 10  # measured: at most 0.35 eps (T + 1)
    moved = np.linalg.norm((ref.theta - theta0).reshape(B, -1), axis=1) / np.linalg.norm(theta0.reshape(B, -1), axis=1)
    assert moved.min() > 100 * final["tolerance"]  # the runs went somewhere: the agreement says something


@pytest.mark.parametrize("name", ["numpy", "torch", "jax"])
def test_prepared_run_restarts_from_theta0_and_equals_the_function(name, request):
    maker = {"numpy": bc.make_numpy_ifca, "torch": bc.make_torch_ifca, "jax": bc.make_jax_ifca}[name]
    if name != "numpy":
        pytest.importorskip(name, reason=f"the bench extra is not installed (no {name})")
    if name == "jax":
        request.getfixturevalue("restore_x64")
    problem, theta0, gamma = _case("float64")
    kept = theta0.copy()
    run = maker(problem.X, problem.y, N_PER, theta0, gamma)
    first = [np.asarray(a) for a in run(3)]
    run(1)
    again = [np.asarray(a) for a in run(3)]
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    np.testing.assert_array_equal(theta0, kept)  # the caller's array is not modified
    once = _competitor(name)(problem.X, problem.y, N_PER, theta0, gamma, 3)
    np.testing.assert_array_equal(first[0], once[0])


def test_one_round_is_the_formula():
    """One round by hand, one replica, float64: the loss, argmin and step of the brief."""
    problem, theta0, gamma = _case("float64")
    theta, assign = bc.numpy_ifca(problem.X, problem.y, N_PER, theta0, gamma, 1)
    Xc, yc = problem.X.reshape(M, N_PER, D), problem.y.reshape(M, N_PER)
    for b in range(B):
        losses = np.array([[np.mean((Xc[i] @ theta0[b, j] - yc[i]) ** 2) for j in range(K)] for i in range(M)])
        a = losses.argmin(axis=1)
        np.testing.assert_array_equal(assign[b], a)
        grad = np.zeros((K, D))
        for i in range(M):
            grad[a[i]] += (2.0 / N_PER) * Xc[i].T @ (Xc[i] @ theta0[b, a[i]] - yc[i])
        np.testing.assert_allclose(theta[b], theta0[b] - gamma[b] / M * grad, rtol=1e-12, atol=1e-12)


def test_check_equal_rejects_a_perturbed_assignment_and_a_perturbed_theta():
    problem, theta0, gamma = _case("float32")
    ref = ifca(problem, theta0, gamma, n_rounds=T)
    theta, assign = ref.theta.copy(), ref.assignments.copy()
    same = bc.check_equal(ref.theta, ref.assignments, theta, assign, problem.dtype, n_rounds=T)
    assert same == {"assign_identical": True, "max_rel_param_diff": 0.0, "tolerance": same["tolerance"], "ok": True}

    flipped = assign.copy()
    flipped[2, 7] = 1 - flipped[2, 7]
    bad = bc.check_equal(ref.theta, ref.assignments, theta, flipped, problem.dtype, n_rounds=T)
    assert bad["assign_identical"] is False and bad["ok"] is False and bad["max_rel_param_diff"] == 0.0

    tol = same["tolerance"]
    direction = np.zeros_like(ref.theta, dtype=np.float64)
    direction[4, 1, 3] = 1.0
    scale = np.linalg.norm(ref.theta[4].astype(np.float64))
    for factor, ok in ((0.5, True), (2.0, False)):
        nudged = ref.theta.astype(np.float64) + factor * tol * scale * direction
        res = bc.check_equal(ref.theta, ref.assignments, nudged, assign, np.float32, n_rounds=T)
        assert res["assign_identical"] is True and res["ok"] is ok, (factor, res)
        assert res["max_rel_param_diff"] == pytest.approx(factor * tol, rel=1e-6)

    broken = theta.copy()
    broken[0, 0, 0] = np.nan
    assert bc.check_equal(ref.theta, ref.assignments, broken, assign, problem.dtype)["ok"] is False
    wrong_shape = bc.check_equal(ref.theta, ref.assignments, theta[:-1], assign[:-1], problem.dtype)
    assert wrong_shape["ok"] is False and wrong_shape["max_rel_param_diff"] == np.inf
    assert wrong_shape["assign_identical"] is False


def test_tolerance_grows_with_rounds_and_epsilon():
    assert bc.rounding_tolerance(np.float32, 0) == bc.TOLERANCE_FACTOR * float(np.finfo(np.float32).eps)
    assert bc.rounding_tolerance(np.float32, 19) == 20 * bc.rounding_tolerance(np.float32, 0)
    assert bc.rounding_tolerance(np.float64, 5) < 1e-12 < bc.rounding_tolerance(np.float32, 5) < 1e-4


def test_inputs_are_checked():
    problem, theta0, gamma = _case("float64")
    with pytest.raises(ValueError, match="n must divide"):
        bc.numpy_ifca(problem.X, problem.y, 7, theta0, gamma, 1)
    with pytest.raises(ValueError, match="gamma"):
        bc.numpy_ifca(problem.X, problem.y, N_PER, theta0, gamma[:-1], 1)
    with pytest.raises(ValueError, match="n_rounds"):
        bc.numpy_ifca(problem.X, problem.y, N_PER, theta0, gamma, 0)
    with pytest.raises(ValueError, match="float32 or float64"):
        bc.numpy_ifca(problem.X.astype(np.float16), problem.y, N_PER, theta0, gamma, 1)


def test_jax_one_thread_env_adds_the_flags_once():
    flags = bc.JAX_ONE_THREAD_FLAGS
    assert bc.jax_one_thread_env({}) == {"XLA_FLAGS": flags}
    assert bc.jax_one_thread_env({"XLA_FLAGS": "--a=1"}) == {"XLA_FLAGS": f"--a=1 {flags}"}
    assert bc.jax_one_thread_env({"XLA_FLAGS": f"--a=1 {flags}"}) == {"XLA_FLAGS": f"--a=1 {flags}"}
    assert "--xla_cpu_multi_thread_eigen=false" in flags and "intra_op_parallelism_threads=1" in flags


def test_thread_usage_of_pinned_numpy_is_one_thread():
    """A child pinned to one CPU does its products on one thread (process CPU time <= wall)."""
    row = bc.thread_usage("numpy", "pin", seconds=0.5)
    assert row["products"] >= 1 and row["ratio"] < 1.2
    assert row["busiest"][0] > 0.8 * row["cpu"]


@pytest.mark.parametrize("argv,flag", [(["--rounds", "0"], "--rounds"), (["--repeats", "0"], "--repeats"),
                                       (["--programs", "numpy,foo"], "--programs"),
                                       (["--programs", "numpy"], "--programs")])
def test_bad_input_is_one_line_naming_the_flag_exit_2(argv, flag, capsys):
    with pytest.raises(SystemExit) as stop:
        bc.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0]
