"""Tests of mixreg.kernels against plain NumPy."""

import numpy as np
import pytest

from mixreg import kernels
from mixreg.local_solvers import gradient_steps


def _ragged(sizes, d, B, seed=0):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    X = rng.standard_normal((offsets[-1], d))
    R = rng.standard_normal(B * offsets[-1])
    theta_sel = rng.standard_normal((len(sizes), B, d))
    return offsets, X, R, theta_sel


@pytest.mark.parametrize("small_work", [0, 10**9, 16384])  # all BLAS, all Numba, mixed
def test_per_client_products_match_numpy(small_work):
    sizes = [1, 2, 300, 5, 1200, 1, 40]
    d, B = 8, 2
    offsets, X, R, theta_sel = _ragged(sizes, d, B)
    layout = kernels.ClientLayout(offsets, d, B, small_work=small_work)
    if small_work == 16384:
        assert layout.small.size and layout.large.size  # both paths are exercised
    out = np.empty((len(sizes), B, d))
    kernels.client_gradients(R, X, layout, out)
    pred = np.empty(B * offsets[-1])
    kernels.client_predictions(theta_sel, X, layout, pred)
    for i in range(len(sizes)):
        lo, hi = offsets[i], offsets[i + 1]
        Ri = R[B * lo : B * hi].reshape(B, hi - lo)
        np.testing.assert_allclose(out[i], Ri @ X[lo:hi], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(pred[B * lo : B * hi].reshape(B, hi - lo), theta_sel[i] @ X[lo:hi].T,
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sizes", [[1, 2, 300, 5, 1200, 1, 40], [50] * 6])  # unequal (both paths), equal
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_predictions_from_the_transposed_data_are_each_clients_plain_product(sizes, dtype):
    d, B = 8, 3
    offsets, X, _, theta_sel = _ragged(sizes, d, B)
    X, theta_sel = X.astype(dtype), theta_sel.astype(dtype)
    XT = kernels.client_transposed(X, offsets)
    assert XT.shape == (X.size,) and XT.dtype == dtype
    layout = kernels.ClientLayout(offsets, d, B)
    plain, transposed = np.empty(B * offsets[-1], dtype=dtype), np.empty(B * offsets[-1], dtype=dtype)
    kernels.client_predictions(theta_sel, X, layout, transposed)
    kernels.client_predictions(theta_sel, X, layout, plain, XT)
    for i in range(len(sizes)):
        lo, hi = offsets[i], offsets[i + 1]
        XTi = XT[d * lo : d * hi].reshape(d, hi - lo)
        assert np.array_equal(XTi, X[lo:hi].T)  # the layout
        if i in layout.small:  # the Numba loop reads X either way
            expected = transposed[B * lo : B * hi]
        else:  # the same BLAS product as computing it alone
            expected = np.matmul(theta_sel[i], np.ascontiguousarray(XTi)).ravel()
        assert np.array_equal(plain[B * lo : B * hi], expected)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(plain, transposed, rtol=tol, atol=tol)  # the two forms: rounding apart


def test_equal_sizes_use_one_batched_product():
    offsets, X, R, theta_sel = _ragged([4, 4, 4], 3, 2)
    layout = kernels.ClientLayout(offsets, 3, 2)
    assert layout.n_equal == 4
    out = np.empty((3, 2, 3))
    kernels.client_gradients(R, X, layout, out)
    np.testing.assert_allclose(out[1], R[8:16].reshape(2, 4) @ X[4:8], rtol=1e-12)


def test_losses_assignment_and_scatter():
    rng = np.random.default_rng(1)
    offsets = np.array([0, 2, 5, 6], dtype=np.int64)
    B, k, N = 2, 3, 6
    P = rng.standard_normal((B * k, N))
    y = rng.standard_normal(N)
    losses = np.empty((B, 3, k))
    kernels.client_losses(P, y[None], np.zeros(B, dtype=np.int64), offsets, B, k, losses)
    for b in range(B):
        for i in range(3):
            for j in range(k):
                lo, hi = offsets[i], offsets[i + 1]
                assert losses[b, i, j] == pytest.approx(np.mean((P[b * k + j, lo:hi] - y[lo:hi]) ** 2))
    # replicas with their own responses (one draw of X at several noise levels)
    Y = np.stack([y, 2 * y + 1])
    grouped = np.empty((B, 3, k))
    kernels.client_losses(P, Y, np.array([1, 0]), offsets, B, k, grouped)
    np.testing.assert_array_equal(grouped[1], losses[1])
    for i in range(3):
        lo, hi = offsets[i], offsets[i + 1]
        assert grouped[0, i, 0] == pytest.approx(np.mean((P[0, lo:hi] - Y[1, lo:hi]) ** 2))
    losses[0, 1] = [1.0, 1.0, 2.0]  # a tie goes to the lowest index
    assign = np.empty((B, 3), dtype=np.int64)
    best = np.empty((B, 3))
    kernels.assign_clients(losses, np.array([True, True, False]), assign, best)
    assert assign[0, 1] == 0 and assign[0, 2] == -1 and assign[1, 2] == -1
    C = rng.standard_normal((3, B, 4))
    out = np.empty((B, k, 4))
    kernels.scatter_add(C, assign, out)
    for b in range(B):
        for j in range(k):
            np.testing.assert_allclose(out[b, j], C[assign[b] == j, b].sum(axis=0) if (assign[b] == j).any() else 0.0)


def _three_passes(P, Y, group, offsets, assign, k, weights, X, d):
    """IFCA's gradient sums the way the driver computed them before the blocks: all clients'
    residuals, then all per-client products, then the sums."""
    B, m = assign.shape
    R = np.empty(B * offsets[-1], dtype=X.dtype)
    C = np.empty((m, B, d), dtype=X.dtype)
    out = np.empty((B, k, d), dtype=X.dtype)
    kernels.weighted_residuals(P, Y, group, offsets, assign, k, weights, R)
    kernels.client_gradients(R, X, kernels.ClientLayout(offsets, d, B), C)
    kernels.scatter_add(C, assign, out)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("sizes", [[50] * 13, [1, 2, 300, 5, 120, 1, 40, 40, 40, 3]],
                         ids=["equal", "unequal, small and large clients"])
@pytest.mark.parametrize("block_bytes", [1, 5000, 10**9], ids=["one client", "a few", "all"])
def test_cluster_gradients_in_blocks_equal_the_three_passes_bit_for_bit(monkeypatch, dtype, sizes, block_bytes):
    """The blocked gradient sums (what IFCA's option I runs) are the same numbers, to the last bit,
    as residuals, per-client products and sums over all clients; inactive clients (-1) add
    nothing.  Caught mutants: a block summed out of client order, a block's clients computed in a
    batch where the full layout computes them one by one (the Numba loop for small clients)."""
    monkeypatch.setattr(kernels, "BLOCK_BYTES", block_bytes)
    rng = np.random.default_rng(3)
    d, B, k = 16, 6, 3
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    m, N = len(sizes), int(offsets[-1])
    X = rng.standard_normal((N, d)).astype(dtype)
    Y = rng.standard_normal((2, N)).astype(dtype)
    group = np.array([0, 1, 0, 1, 0, 1])
    P = rng.standard_normal((B * k, N)).astype(dtype)
    assign = rng.integers(-1, k, size=(B, m))
    weights = (2.0 / np.diff(offsets)).astype(dtype)
    blocks = kernels.ClientBlocks(offsets, d, B, dtype)
    expected_blocks = {1: m, 5000: -(-m // max(1, 5000 // (B * d * np.dtype(dtype).itemsize))), 10**9: 1}
    assert len(blocks.blocks) == expected_blocks[block_bytes]
    out = kernels.cluster_gradients(P, Y, group, assign, k, weights, X, blocks, np.full((B, k, d), np.nan, dtype))
    expected = _three_passes(P, Y, group, offsets, assign, k, weights, X, d)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, expected)
    for b in range(B):  # and they are the gradients
        for j in range(k):
            total = np.zeros(d)
            for i in np.flatnonzero(assign[b] == j):
                lo, hi = offsets[i], offsets[i + 1]
                total += weights[i] * (P[b * k + j, lo:hi].astype(float) - Y[group[b], lo:hi]) @ X[lo:hi]
            np.testing.assert_allclose(out[b, j], total, rtol=1e-4, atol=1e-4)


def test_a_block_of_equal_clients_from_an_unequal_layout_is_computed_per_client(monkeypatch):
    d, B = 40, 2
    monkeypatch.setattr(kernels, "BLOCK_BYTES", 3 * B * d * 8)  # blocks of three clients
    offsets = np.array([0, 1, 2, 3, 503, 1003, 1503], dtype=np.int64)  # one-point clients, then large ones
    whole = kernels.ClientLayout(offsets, d, B)
    (_, _, _, _, _, first), (_, _, _, _, _, second) = kernels.ClientBlocks(offsets, d, B, np.float64).blocks
    assert whole.n_equal is None and list(whole.small) == [0, 1, 2] and list(whole.large) == [3, 4, 5]
    assert first.n_equal is None and list(first.small) == [0, 1, 2]  # the Numba loop, as in the whole layout
    assert second.n_equal is None and list(second.large) == [0, 1, 2]
    equal = kernels.ClientBlocks(np.arange(0, 70, 10), d, B, np.float64).blocks
    assert [layout.n_equal for *_, layout in equal] == [10, 10]  # equal sizes: one batched product per block


def test_combine_rows_adds_the_rows_in_order():
    X = np.array([[1.0, 2.0], [3.0, 4.0], [1e16, 0.0], [-1e16, 0.0]])
    theta = np.empty((2, 2))
    ok = np.empty(2, dtype=np.bool_)
    kernels.combine_rows(X, np.array([1, 0, 2, 3, 0]), np.array([0, 2, 5]), np.array([2.0, -1.0, 1.0, 1.0, 1.0]),
                 np.array([0, 1]), theta, ok)
    assert theta.tolist() == [[5.0, 6.0], [1.0, 2.0]]  # (1e16 - 1e16) + 1 in order; 1 first would be lost
    assert ok.tolist() == [True, True]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_column_step_is_numpys_update_bit_for_bit(dtype):
    """One pass of ``local -= step * G`` per column: every product rounded to the dtype before
    the subtraction, as NumPy's two operations round it.  A fused multiply-add (one rounding)
    gives other bits on this data, which the last check shows, so an FMA-contracted kernel fails."""
    rng = np.random.default_rng(3)
    m, C, d = 7, 5, 33
    local = rng.standard_normal((m, C, d)).astype(dtype)
    G = (1e3 * rng.standard_normal((m, C, d))).astype(dtype)
    step = (10.0 ** rng.uniform(-3, 0, C)).astype(dtype)
    step[1] = 0.0
    G[2, 3, 4], G[3, 0, 0] = np.nan, np.inf  # non-finite gradients stay non-finite
    expected = local - step[None, :, None] * G
    out = local.copy()
    with np.errstate(invalid="ignore"):
        kernels.column_step(out, step, G)
    assert np.array_equal(out, expected, equal_nan=True)
    assert np.isnan(out[2, 3, 4]) and out[3, 0, 0] == -np.inf and np.array_equal(out[:, 1], local[:, 1])
    # a fused multiply-add rounds once: the product and difference in a wider type, then rounded
    wide = np.float64 if dtype == np.float32 else np.longdouble
    if np.finfo(wide).nmant > np.finfo(dtype).nmant:  # (a platform's long double may be a double)
        fused = (local.astype(wide) - step[None, :, None].astype(wide) * G.astype(wide)).astype(dtype)
        finite = np.isfinite(fused)
        assert not np.array_equal(fused[finite], expected[finite])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_stepped_cluster_average_is_the_three_passes_bit_for_bit(dtype):
    """IFCA option II's average taken straight from the gradients equals gathering each client's
    model, stepping it (column_step) and averaging (cluster_average): inactive clients (-1) left
    out, a cluster nobody chose kept, non-finite gradients carried, per-replica steps; and each
    local model is rounded to the dtype before it is summed, so a float32 kernel that adds the
    float64 difference instead (one rounding fewer) fails on this data, which the last check
    shows."""
    rng = np.random.default_rng(5)
    m, B, k, d = 23, 6, 3, 17
    start = rng.standard_normal((B, k, d)).astype(dtype)
    G = (1e3 * rng.standard_normal((m, B, d))).astype(dtype)
    step = (10.0 ** rng.uniform(-3, 0, B)).astype(dtype)
    assign = rng.integers(-1, k, (B, m)).astype(np.int64)
    assign[2] = np.where(assign[2] == 1, 0, assign[2])  # replica 2: nobody chose model 1
    assign[4] = -1  # replica 4: no active client, every model kept
    G[3, 1, 2], G[5, 0, 0] = np.nan, np.inf
    assign[1, 3], assign[0, 5] = 2, 0  # their clients are active
    local = np.empty((m, B, d), dtype=dtype)
    kernels.gather_selected(start, assign, local)
    with np.errstate(invalid="ignore"):
        kernels.column_step(local, step, G)
    expected = start.copy()
    kernels.cluster_average(local, assign, expected)
    out = start.copy()
    with np.errstate(invalid="ignore"):
        kernels.stepped_cluster_average(start, step, G, assign, out)
    assert np.array_equal(out, expected, equal_nan=True)
    assert np.array_equal(out[2, 1], start[2, 1]) and np.array_equal(out[4], start[4])
    assert np.isnan(out[1, 2, 2]) and np.isnan(out[1]).sum() == 1 and out[0, 0, 0] == -np.inf
    if dtype == np.float32:  # the difference summed in float64 unrounded: other bits on this data
        wide = np.zeros((B, k, d))
        counts = np.zeros((B, k))
        for b in range(B):
            for i in np.flatnonzero(assign[b] >= 0):
                a = assign[b, i]
                wide[b, a] += start[b, a].astype(np.float64) - (step[b] * G[i, b]).astype(np.float64)
                counts[b, a] += 1
        chosen = counts > 0
        unrounded = (wide[chosen] / counts[chosen][:, None]).astype(dtype)
        finite = np.isfinite(unrounded)
        assert not np.array_equal(unrounded[finite], expected[chosen][finite])


def test_argmin_skip_nan_rule():
    """Strict comparison (ties to the lowest index), nan never wins against a number, all nan 0."""
    nan, inf = np.nan, np.inf
    cases = [([3.0, 1.0, 1.0, 2.0], 1), ([nan, 2.0, nan, 1.0], 3), ([nan, nan], 0), ([1.0], 0),
             ([inf, inf], 0), ([nan, inf], 1), ([-0.0, 0.0], 0), ([0.0, -0.0], 0), ([2.0, nan, 2.0], 0)]
    for values, expected in cases:
        assert kernels.argmin_skip_nan(np.array(values)) == expected, values
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = rng.integers(0, 4, 6).astype(float)
        v[rng.random(6) < 0.3] = nan
        numbers = ~np.isnan(v)
        assert kernels.argmin_skip_nan(v) == (np.flatnonzero(v == v[numbers].min())[0] if numbers.any() else 0)


@pytest.mark.parametrize("sizes", [[1, 2, 300, 5, 40], [6, 6, 6]])
def test_gather_predictions_takes_each_clients_selected_row(sizes):
    B, k, d = 3, 4, 5
    offsets, X, _, _ = _ragged(sizes, d, B)
    rng = np.random.default_rng(1)
    theta = rng.standard_normal((B, k, d))
    P = kernels.predict(theta, X, out=np.empty((B * k, offsets[-1])))
    assign = rng.integers(0, k, size=(B, len(sizes)))
    assign[0, 1] = -1  # an inactive client: model 0, as gather_selected
    out = np.full(B * offsets[-1], np.nan)
    kernels.gather_predictions(P, offsets, assign, out)
    selected = np.empty((len(sizes), B, d))
    kernels.gather_selected(theta, assign, selected)
    direct = np.empty(B * offsets[-1])
    kernels.client_predictions(selected, X, kernels.ClientLayout(offsets, d, B), direct)
    for i in range(len(sizes)):
        lo, hi = offsets[i], offsets[i + 1]
        for b in range(B):  # exactly the round's row, and the selected model's predictions to rounding
            row = b * k + max(assign[b, i], 0)
            assert np.array_equal(out[B * lo + b * (hi - lo) : B * lo + (b + 1) * (hi - lo)], P[row, lo:hi])
    np.testing.assert_allclose(out, direct, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sizes", [[1, 2, 300, 5, 1200, 1, 40], [30] * 7])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("B", [1, 4])
def test_predictions_of_some_clients_are_those_of_the_whole_call_bit_for_bit(sizes, transposed, B):
    d = 9
    offsets, X, _, theta_sel = _ragged(sizes, d, B)
    XT = kernels.client_transposed(X, offsets) if transposed else None
    layout = kernels.ClientLayout(offsets, d, B)
    whole = kernels.client_predictions(theta_sel, X, layout, np.empty(B * offsets[-1]), XT)
    some = np.array([0, 2, 3, 6])
    part = np.full(B * offsets[-1], np.nan)
    kernels.client_predictions(theta_sel, X, layout, part, XT, clients=some)
    for i in range(len(sizes)):
        block = slice(B * offsets[i], B * offsets[i + 1])
        if i in some:
            assert np.array_equal(part[block], whole[block])
        else:  # left as it was
            assert np.isnan(part[block]).all()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_ml_decoder_sums_every_row_in_order_and_keeps_the_argmin_rule(dtype):
    """``decode_clients``: ``L_i(theta, l)``, the float64 squares of ``y - P`` summed left to right
    over the client's rows (``np.cumsum`` is sequential), argmin by ``argmin_skip_nan`` (ties to the
    lowest model, NaN never wins); ``decode_and_residuals`` gives the same decoding and the decoded
    model's residuals ``y - P`` (0 elsewhere and for a frozen replica)."""
    rng = np.random.default_rng(11)
    B, k = 3, 3
    sizes = np.array([1, 6, 40, 3])
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    N, m = offsets[-1], sizes.size
    y = (10.0 ** rng.uniform(-2, 2, N) * rng.standard_normal(N)).astype(dtype)
    P = (y + 10.0 ** rng.uniform(-3, 1, (B * k, N)) * rng.standard_normal((B * k, N))).astype(dtype)
    P[1 * k + 2] = P[1 * k + 0]  # replica 1: models 0 and 2 tie on every client
    P[2 * k + 0, offsets[1]] = np.nan  # replica 2, client 1: model 0's loss is NaN
    expected = np.empty((B, m, k))
    for b in range(B):
        for i in range(m):
            rows = slice(offsets[i], offsets[i + 1])
            for l in range(k):
                e = y[rows].astype(np.float64) - P[b * k + l, rows].astype(np.float64)
                expected[b, i, l] = np.cumsum(e * e)[-1]
    assign, best = np.empty((B, m), dtype=np.int64), np.empty((B, m))
    kernels.decode_clients(P, y, offsets, B, k, assign, best)
    want = np.array([[kernels.argmin_skip_nan(expected[b, i]) for i in range(m)] for b in range(B)])
    assert np.array_equal(assign, want) and np.array_equal(best, np.take_along_axis(expected, want[..., None], 2)[..., 0])
    assert not (assign[1] == 2).any() and assign[2, 1] != 0  # the tie to the lowest index; NaN never wins
    frozen = np.array([False, True, False])
    assign2, best2, R = np.empty_like(assign), np.empty_like(best), np.full((B * k, N), np.nan, dtype=dtype)
    kernels.decode_and_residuals(P, y, offsets, B, k, frozen, assign2, best2, R)
    assert np.array_equal(assign2, assign) and np.array_equal(best2, best)
    for b in range(B):
        for i in range(m):
            rows = slice(offsets[i], offsets[i + 1])
            for l in range(k):
                live = l == assign[b, i] and not frozen[b]
                assert np.array_equal(R[b * k + l, rows], y[rows] - P[b * k + l, rows] if live else 0 * y[rows])


@pytest.mark.parametrize("sizes,d", [((5, 5, 5, 5), 8), ((9, 9, 9, 9), 3), ((1, 2, 5, 9, 30, 3), 6),
                                     ((4, 4, 20, 1), 4)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unrolled_local_steps_are_the_steps_one_after_another(sizes, d, dtype):
    """LocalStepGrams: n_i <= d clients through X_i X_i^T, larger ones through X_i^T X_i (both forms
    mixed when the sizes are unequal), every column with its own step; the residuals are not
    modified, and one step is client_gradients bit for bit."""
    rng = np.random.default_rng(0)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    m, N, C = len(sizes), int(offsets[-1]), 3
    X, y = rng.standard_normal((N, d)).astype(dtype), rng.standard_normal(N).astype(dtype)
    w0 = rng.standard_normal((m, C, d)).astype(dtype)
    eta, omega = np.array([0.01, 0.03, 0.05]), 2.0 / np.asarray(sizes)
    R = np.concatenate([(omega[i] * (w0[i] @ X[offsets[i] : offsets[i + 1]].T - y[offsets[i] : offsets[i + 1]]))
                        .astype(dtype).ravel() for i in range(m)])
    kept = R.copy()
    grams, layout = kernels.LocalStepGrams(X, offsets), kernels.ClientLayout(offsets, d, C)
    coef = (omega[:, None] * eta[None, :]).astype(dtype)
    tol = 1e-13 if dtype == np.float64 else 3e-6
    for n_steps in (1, 2, 3, 6):
        G = grams.unrolled_gradients(R, X, layout, coef, n_steps, np.empty((m, C, d), dtype=dtype))
        # the textbook loop, column by column: omega_i = 2 / n_i is gradient_steps' 1 / n_i at twice the step
        want = np.stack([gradient_steps(X, y, offsets, w0[:, c], 2 * eta[c], n_steps) for c in range(C)], axis=1)
        got = w0 - eta.astype(dtype)[None, :, None] * G
        assert np.abs(got - want).max() <= tol * np.abs(want).max(), n_steps
        np.testing.assert_array_equal(R, kept)
    one = kernels.client_gradients(R, X, layout, np.empty((m, C, d), dtype=dtype))
    np.testing.assert_array_equal(grams.unrolled_gradients(R, X, layout, coef, 1, np.empty_like(one)), one)
    assert grams.grams[0].dtype == dtype if isinstance(grams.grams, list) else grams.grams.dtype == dtype
