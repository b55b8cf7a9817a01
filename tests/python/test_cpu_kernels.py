"""The CPU backend's kernel paths on lazy:0, each against NumPy: permutes
of many shapes (block copies and cache-tiled transposes), transposes folded
into matrix products, reductions over leading axes, the multi-tensor
optimizer update and the single-pass row kernels."""
import re
import warnings

import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm
from lazyscope.debug import metrics as met
from runtime_util import run_graph

DEV = "lazy:0"


PERMUTES = [
    ((7,), (0,)),
    ((5, 3), (1, 0)),
    ((1, 9), (1, 0)),
    ((33, 65), (1, 0)),          # tiles with ragged edges
    ((128, 96), (1, 0)),
    ((200, 17), (1, 0)),
    ((3, 40, 70), (0, 2, 1)),     # a batch of transposes
    ((4, 6, 5), (2, 0, 1)),
    ((4, 6, 5), (1, 2, 0)),
    ((2, 3, 4, 5), (0, 2, 1, 3)),  # [B,T,H,D] -> [B,H,T,D]: contiguous rows
    ((2, 3, 4, 5), (3, 2, 1, 0)),
    ((2, 1, 4, 5), (2, 0, 3, 1)),  # a unit dim
    ((3, 4, 1), (2, 1, 0)),
    ((6, 7, 8, 9), (1, 3, 0, 2)),
    ((2, 3, 4, 5, 6), (4, 1, 3, 0, 2)),
]


@pytest.mark.parametrize("shape,dims", PERMUTES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.bool_])
def test_permutes_of_many_shapes_match_numpy(shape, dims, dtype):
    rng = np.random.default_rng(sum(shape) + len(dims))
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    got, _ = run_graph(lambda: lazyscope.tensor(a, device=DEV).permute(*dims))
    np.testing.assert_array_equal(got, np.transpose(a, dims))


def test_a_large_transpose_is_threaded_and_exact():
    a = np.arange(1000 * 1500, dtype=np.float32).reshape(1000, 1500)
    got, _ = run_graph(lambda: (lazyscope.tensor(a, device=DEV) + 0.0).t() * 1.0)
    np.testing.assert_array_equal(got, a.T)


def test_a_linear_layers_transposes_are_blas_flags_not_copies():
    # y = x @ w.t(): its backward reads w.t().t() (a transpose of a
    # transpose) and makes w's gradient as (x.t() @ dy).t(), which becomes
    # the product of the swapped operands.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((32, 48)).astype(np.float32)
    w = rng.standard_normal((24, 48)).astype(np.float32)
    dy = rng.standard_normal((32, 24)).astype(np.float32)

    def run():
        X = lazyscope.tensor(x, device=DEV, requires_grad=True)
        W = lazyscope.tensor(w, device=DEV, requires_grad=True)
        y = X @ W.t()
        (y * lazyscope.tensor(dy, device=DEV)).sum().backward()
        return y, X.grad, W.grad

    (y, dx, dw), program = run_graph(run)
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, dy @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw, dy.T @ x, rtol=1e-5, atol=1e-5)
    assert program and "permute" not in program, program


def test_a_transposed_matmul_read_elsewhere_too_is_still_computed_once_and_right():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((16, 8)).astype(np.float32)
    b = rng.standard_normal((16, 12)).astype(np.float32)

    def run():
        A, B = lazyscope.tensor(a, device=DEV), lazyscope.tensor(b, device=DEV)
        m = A.t() @ B                    # [8, 12], read by the transpose and the sum
        return m.t() * 2.0, m.sum()

    (mt, s), _ = run_graph(run)
    np.testing.assert_allclose(mt, (a.T @ b).T * 2, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s, (a.T @ b).sum(), rtol=1e-4, atol=1e-4)


def test_a_batched_weight_gradient_is_the_product_of_the_swapped_operands():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    w = rng.standard_normal((3, 4, 7)).astype(np.float32)
    dy = rng.standard_normal((3, 5, 4)).astype(np.float32)

    def run():
        X = lazyscope.tensor(x, device=DEV)
        W = lazyscope.tensor(w, device=DEV, requires_grad=True)
        y = X @ W.transpose(1, 2)
        (y * lazyscope.tensor(dy, device=DEV)).sum().backward()
        return y, W.grad

    (y, dw), program = run_graph(run)
    np.testing.assert_allclose(y, x @ np.swapaxes(w, 1, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dw, np.swapaxes(dy, 1, 2) @ x, rtol=1e-5, atol=1e-5)
    assert program and "permute" not in program, program


SUMS = [
    ((128, 512), (0,), False),
    ((127, 33), (0,), True),      # odd sizes
    ((1, 17), (0,), False),
    ((5, 1, 300), (0,), False),
    ((16, 64, 256), (0, 1), False),  # a transformer's bias gradient
    ((7, 3, 5), (0, 1), True),
    ((3000, 3), (0,), False),
    ((2, 300, 1), (0,), True),
    ((9, 1000), (0,), False),
    ((64, 95), (0,), False),      # column blocks of 32 in registers and a tail of 31
    ((3, 2, 64), (0, 1), True),   # exactly two blocks
    # rows of 4 KiB and up, summed in bands of 16 rows: the MLP up-projection's
    # bias gradient; a band and a group of 512 columns cut short, a tail of 12
    ((16, 64, 1024), (0, 1), False),
    ((37, 1100), (0,), False),
    ((19, 1600), (0,), True),
    # trailing and middle: row sums (a layer norm's), a conv bias gradient
    ((64, 256), (1,), False),
    ((5, 7, 13), (2,), True),
    ((3, 4, 37), (1, 2), False),
    ((8, 6, 5, 5), (0, 2, 3), False),
    ((2, 3, 1, 9), (0, 3), True),
    ((1, 1, 17), (2,), False),
    ((4, 5), (0, 1), False),
    ((0, 5), (0,), False),
]


@pytest.mark.parametrize("shape,dims,keepdim", SUMS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_and_means_over_leading_trailing_and_outer_axes_match_numpy(shape, dims, keepdim, dtype):
    rng = np.random.default_rng(len(shape) * 100 + shape[-1] + len(dims))
    a = rng.standard_normal(shape).astype(dtype)

    def run():
        x = lazyscope.tensor(a, device=DEV)
        return x.sum(dim=dims, keepdim=keepdim), x.mean(dim=dims, keepdim=keepdim)

    (s, m), _ = run_graph(run)
    want_s = a.astype(np.float64).sum(axis=dims, keepdims=keepdim)
    with warnings.catch_warnings():  # the empty case: NaN means, as expected
        warnings.simplefilter("ignore", RuntimeWarning)
        want_m = a.astype(np.float64).mean(axis=dims, keepdims=keepdim)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    assert s.shape == want_s.shape and s.dtype == dtype
    np.testing.assert_allclose(s, want_s.astype(dtype), rtol=tol, atol=tol * max(1, shape[0]))
    np.testing.assert_allclose(m, want_m.astype(dtype), rtol=tol, atol=tol)


@pytest.mark.parametrize("m,k,n", [(128, 64, 96), (4, 32, 1000), (1, 7, 5), (37, 19, 23)])
def test_a_bias_and_relu_after_a_matmul_run_as_its_epilogue_and_match_numpy(m, k, n):
    # (4, 32, 1000): too few rows to share, the GEMM splits by columns and
    # the epilogue runs after it.
    rng = np.random.default_rng(m * 1000 + n)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)

    def run():
        X, W, B = (lazyscope.tensor(v, device=DEV) for v in (x, w, b))
        return ((X @ W.t() + B).relu() * 2.0).sum(dim=1) * 1.0

    got, program = run_graph(run)
    want = (np.maximum(x @ w.T + b, 0) * 2).sum(axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert program and "the epilogue of the matmul above" in program, program


def test_an_epilogue_of_a_batched_matmul_matches_numpy():
    rng = np.random.default_rng(21)
    x = rng.standard_normal((6, 9, 16)).astype(np.float32)
    w = rng.standard_normal((6, 16, 12)).astype(np.float32)
    b = rng.standard_normal(12).astype(np.float32)

    def run():
        X, W, B = (lazyscope.tensor(v, device=DEV) for v in (x, w, b))
        return ((X @ W) - B).tanh().sum(dim=2)

    got, program = run_graph(run)
    np.testing.assert_allclose(got, np.tanh(x @ w - b).sum(axis=2), rtol=1e-4, atol=1e-4)
    assert program and "the epilogue of the matmul above" in program, program


def test_a_product_read_elsewhere_too_gets_no_epilogue_and_both_values_are_right():
    rng = np.random.default_rng(22)
    x = rng.standard_normal((20, 8)).astype(np.float32)
    w = rng.standard_normal((8, 30)).astype(np.float32)

    def run():
        X, W = lazyscope.tensor(x, device=DEV), lazyscope.tensor(w, device=DEV)
        p = X @ W
        return (p * 3.0).relu().sum(dim=0), p.sum(dim=1)

    (a, s), program = run_graph(run)
    np.testing.assert_allclose(a, np.maximum((x @ w) * 3, 0).sum(axis=0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(s, (x @ w).sum(axis=1), rtol=1e-4, atol=1e-4)
    assert program and "epilogue" not in program, program


def test_independent_parameter_updates_share_one_parallel_region_and_match_numpy():
    # Sizes from one element to past several tiles, none a multiple of a tile.
    rng = np.random.default_rng(23)
    shapes = [(1,), (37,), (300, 7), (2049,), (5, 1000)]
    params = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    bufs = [rng.standard_normal(s).astype(np.float32) for s in shapes]

    def run():
        out = []
        for p, g, v in zip(params, grads, bufs):
            P, G, V = (lazyscope.tensor(a, device=DEV) for a in (p, g, v))
            v2 = V * 0.9 + G
            out += [P - v2 * 0.01, v2]
        return tuple(out)

    got, program = run_graph(run)
    for i, (p, g, v) in enumerate(zip(params, grads, bufs)):
        v2 = v * np.float32(0.9) + g
        np.testing.assert_allclose(got[2 * i + 1], v2, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got[2 * i], p - v2 * np.float32(0.01), rtol=1e-6, atol=1e-6)
    assert program and f"kernel {len(shapes)} of {len(shapes)} sharing one parallel region" in program, program


def test_sgd_momentum_steps_of_an_mlp_match_a_numpy_reference():
    # Forward, backward (transposes folded, epilogues, leading-axis bias
    # sums) and the multi-tensor update, three steps, against NumPy.
    rng = np.random.default_rng(24)
    sizes = [(33, 20), (20, 11)]
    ws = [rng.standard_normal((o, i)).astype(np.float32) * 0.3 for i, o in sizes]
    bs = [rng.standard_normal(o).astype(np.float32) * 0.1 for _, o in sizes]
    xs = [rng.standard_normal((17, 33)).astype(np.float32) for _ in range(3)]
    W = [lazyscope.tensor(w, device=DEV, requires_grad=True) for w in ws]
    B = [lazyscope.tensor(b, device=DEV, requires_grad=True) for b in bs]
    opt = lazyscope.optim.SGD(W + B, lr=0.05, momentum=0.9)
    mw = [np.zeros_like(w) for w in ws]
    mb = [np.zeros_like(b) for b in bs]
    for x in xs:
        opt.zero_grad()
        h = (lazyscope.tensor(x, device=DEV) @ W[0].t() + B[0]).relu()
        loss = ((h @ W[1].t() + B[1]) ** 2).mean()
        loss.backward()
        opt.step()
        lm.mark_step()
        # NumPy: the same step.
        a1 = x @ ws[0].T + bs[0]
        h1 = np.maximum(a1, 0)
        y = h1 @ ws[1].T + bs[1]
        dy = 2 * y / y.size
        gw1, gb1 = dy.T @ h1, dy.sum(axis=0)
        da1 = (dy @ ws[1]) * (a1 > 0)
        gw0, gb0 = da1.T @ x, da1.sum(axis=0)
        for j, (gw, gb) in enumerate([(gw0, gb0), (gw1, gb1)]):
            mw[j] = 0.9 * mw[j] + gw
            mb[j] = 0.9 * mb[j] + gb
            ws[j] = ws[j] - 0.05 * mw[j]
            bs[j] = bs[j] - 0.05 * mb[j]
    for j in range(2):
        np.testing.assert_allclose(W[j].numpy(), ws[j], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(B[j].numpy(), bs[j], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (64, 64), (5, 4, 65), (2, 1000), (300, 9), (128, 10), (700, 31),
                                   (130, 1), (2, 32)])
def test_softmax_and_log_softmax_rows_match_numpy(shape):
    rng = np.random.default_rng(shape[-1] * 7 + len(shape))
    a = (rng.standard_normal(shape) * 20).astype(np.float32)
    a.reshape(-1, shape[-1])[0, 0] = -np.inf          # a masked position
    a.reshape(-1, shape[-1])[-1, :] += np.float32(5000)  # large values: shifted by the max

    def run():
        x = lazyscope.tensor(a, device=DEV)
        return x.softmax(-1), x.log_softmax(-1)

    (sm, lsm), _ = run_graph(run)
    x = a.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):  # the fully masked row: NaN, as expected
        shifted = x - x.max(axis=-1, keepdims=True)
        log_s = np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    np.testing.assert_allclose(sm, np.exp(shifted - log_s), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(lsm, shifted - log_s, rtol=1e-5, atol=1e-5)


def test_a_fully_masked_softmax_row_is_nan_as_in_numpy():
    a = np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, 2.0]], dtype=np.float32)
    got, _ = run_graph(lambda: lazyscope.tensor(a, device=DEV).softmax(-1))
    assert np.isnan(got[0]).all()
    e = np.exp(a[1] - 2.0)
    np.testing.assert_allclose(got[1], e / e.sum(), rtol=1e-6)


@pytest.mark.parametrize("shape", [(3, 5, 7, 11), (64, 10, 24, 24), (2, 1, 513), (1030,)])
def test_broadcast_operands_of_a_fused_chain_match_numpy(shape):
    # Runs of broadcast values (a conv bias [C, 1, 1]), strided runs, bool
    # masks and scalars, over tiles that split the runs anywhere.
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape).astype(np.float32)
    ones = [1] * len(shape)
    bias_shape = tuple(s if i == 1 % len(shape) else 1 for i, s in enumerate(shape))[-3:] if len(shape) > 1 else (1,)
    bias = rng.standard_normal(bias_shape).astype(np.float32)
    col_shape = tuple(ones[:-1]) + (shape[-1],)
    col = rng.standard_normal(col_shape).astype(np.float32)
    mask = rng.random(tuple([shape[0]] + ones[1:])) > 0.5

    def run():
        x = lazyscope.tensor(a, device=DEV)
        b, c = lazyscope.tensor(bias, device=DEV), lazyscope.tensor(col, device=DEV)
        m = lazyscope.tensor(mask, device=DEV)
        return ((x + b) * c - 0.5).relu() * m.float() + b.expand(*shape) * 0.25

    got, _ = run_graph(run)
    want = np.maximum((a + bias) * col - np.float32(0.5), 0) * mask.astype(np.float32) \
        + np.broadcast_to(bias, shape) * np.float32(0.25)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def max_pool_grad_reference(x, k, s, p, dy):
    """NumPy: each output's gradient to its window's first maximum."""
    n, c, h, w = x.shape
    oh, ow = dy.shape[2:]
    dx = np.zeros_like(x)
    for b in range(n):
        for ch in range(c):
            for oy in range(oh):
                for ox in range(ow):
                    best, at = None, None
                    for i in range(k):
                        for j in range(k):
                            y, xx = oy * s - p + i, ox * s - p + j
                            if not (0 <= y < h and 0 <= xx < w):
                                continue
                            v = x[b, ch, y, xx]  # NaN wins; the first maximum on ties
                            if best is None or (not np.isnan(best) and (v > best or np.isnan(v))):
                                best, at = v, (y, xx)
                    dx[b, ch, at[0], at[1]] += dy[b, ch, oy, ox]
    return dx


@pytest.mark.parametrize("k,s,p,hw", [(2, 2, 0, 8), (2, 2, 0, 7), (3, 2, 1, 9)])
def test_max_pool_backward_routes_gradients_to_the_first_maximum_like_numpy(k, s, p, hw):
    rng = np.random.default_rng(k * 10 + hw)
    x = rng.integers(0, 4, (3, 4, hw, hw)).astype(np.float32)  # many ties
    import lazyscope.nn.functional as F

    def run():
        X = lazyscope.tensor(x, device=DEV, requires_grad=True)
        y = F.max_pool2d(X, k, stride=s, padding=p)
        dy = lazyscope.tensor(np.arange(y.numel(), dtype=np.float32).reshape(tuple(y.shape)) % 7, device=DEV)
        (y * dy).sum().backward()
        return X.grad, dy

    (dx, dy), _ = run_graph(run)
    np.testing.assert_array_equal(dx, max_pool_grad_reference(x, k, s, p, dy))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_linear_layers_weight_gradient_on_3d_inputs_is_one_stacked_gemm(dtype):
    # x [B, T, K] @ w.t(): w's gradient is the sum over B of x_b^T dy_b,
    # which the compiler makes one GEMM over the B*T stacked rows (no
    # [B, K, N] product, no sum, no copies for the reshape and transpose).
    rng = np.random.default_rng(31)
    x = rng.standard_normal((5, 7, 12)).astype(dtype)
    w = rng.standard_normal((9, 12)).astype(dtype)
    dy = rng.standard_normal((5, 7, 9)).astype(dtype)

    def run():
        W = lazyscope.tensor(w, device=DEV, requires_grad=True)
        y = lazyscope.tensor(x, device=DEV) @ W.t()
        (y * lazyscope.tensor(dy, device=DEV)).sum().backward()
        return y, W.grad

    (y, dw), program = run_graph(run)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y, x @ w.T, rtol=tol, atol=tol)
    np.testing.assert_allclose(dw, dy.reshape(-1, 9).T @ x.reshape(-1, 12), rtol=tol, atol=tol)
    assert program and "[5, 12, 9]" not in program and "permute" not in program, program
    # its estimate: 2 * (9 * 12) * (5 * 7) multiply-adds
    assert re.search(r"= matmul\(.*float(32|64)\[9, 12\] .* flops=7560 ", program), program


def test_a_batched_product_summed_over_a_broadcast_batch_is_not_stacked_and_is_right():
    # b broadcast over the batch: not a stacked-rows product; the general path.
    rng = np.random.default_rng(32)
    a = rng.standard_normal((4, 6, 3)).astype(np.float32)
    b = rng.standard_normal((1, 6, 5)).astype(np.float32)
    got, _ = run_graph(lambda: (lazyscope.tensor(a, device=DEV).transpose(1, 2)
                                @ lazyscope.tensor(b, device=DEV)).sum(dim=0))
    np.testing.assert_allclose(got, (np.swapaxes(a, 1, 2) @ b).sum(axis=0), rtol=1e-5, atol=1e-5)


def test_a_fused_chain_with_outputs_past_the_caches_streams_them_and_matches_numpy():
    # 2^22 + 5 elements: the non-temporal store path, with an unaligned tail;
    # a bool output (never streamed) beside a float one.
    n = (1 << 22) + 5
    a = np.linspace(-3, 3, n, dtype=np.float32)

    def run():
        x = lazyscope.tensor(a, device=DEV)
        y = (x * 2.0 + 1.0).relu()
        return y, y > 2.5

    (y, mask), program = run_graph(run)
    want = np.maximum(a * np.float32(2) + np.float32(1), 0)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(mask, want > np.float32(2.5))


def test_max_pool_2x2_with_nans_infinities_and_signed_zeros_matches_numpy():
    import lazyscope.nn.functional as F
    rng = np.random.default_rng(41)
    x = rng.integers(-2, 3, (2, 3, 6, 5)).astype(np.float32)
    x[0, 0, 0, 0] = np.nan
    x[0, 1, 2, 3] = -np.inf
    x[1, 2, 4, 1] = np.inf
    x[1, 0, 0:2, 0:2] = [[-0.0, 0.0], [0.0, -0.0]]

    def run():
        X = lazyscope.tensor(x, device=DEV, requires_grad=True)
        y = F.max_pool2d(X, 2)
        (y * lazyscope.tensor(np.arange(6, dtype=np.float32).reshape(1, 1, 3, 2) + 1, device=DEV)).sum().backward()
        return y, X.grad

    (y, dx), _ = run_graph(run)
    dy = np.broadcast_to(np.arange(6, dtype=np.float32).reshape(1, 1, 3, 2) + 1, (2, 3, 3, 2))
    np.testing.assert_array_equal(dx, max_pool_grad_reference(x, 2, 2, 0, dy))
    assert np.isnan(y[0, 0, 0, 0]) and y[1, 2, 2, 0] == np.inf
    assert np.signbit(y[1, 0, 0, 0])  # the first of the tied zeros, -0.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("hw", [(8, 16), (24, 24), (9, 27), (10, 30)])
def test_max_pool_2x2_four_windows_at_a_time_match_numpy_with_special_values(dtype, hw):
    # Rows of 4, 12, 13 and 15 windows: the float32 kernels take four windows
    # at a time (SSE) and the rest one at a time; special values and ties
    # land in both parts and at every position of a window.
    import lazyscope.nn.functional as F
    rng = np.random.default_rng(hw[0] * 100 + hw[1])
    x = rng.integers(-2, 3, (2, 3) + hw).astype(dtype)  # many ties
    where = rng.random(x.shape)
    x[where < 0.04] = np.nan
    x[(where >= 0.04) & (where < 0.08)] = -np.inf
    x[(where >= 0.08) & (where < 0.1)] = np.inf
    x[(where >= 0.1) & (where < 0.2)] = -0.0
    x[0, 0, 0:2, 0:8] = [[-0.0, 0.0, 0.0, -0.0, np.nan, np.nan, -np.inf, -np.inf],
                         [0.0, -0.0, -0.0, 0.0, 1.0, np.nan, -np.inf, -np.inf]]
    oh, ow = hw[0] // 2, hw[1] // 2
    dy = (np.arange(2 * 3 * oh * ow, dtype=dtype).reshape(2, 3, oh, ow) % 11) + 1

    def run():
        X = lazyscope.tensor(x, device=DEV, requires_grad=True)
        y = F.max_pool2d(X, 2)
        (y * lazyscope.tensor(dy, device=DEV)).sum().backward()
        return y, X.grad

    (y, dx), _ = run_graph(run)
    # The forward's values are where the gradient goes: the first maximum
    # (-0.0 or 0.0, whichever comes first among tied zeros), NaN wins.
    want = np.full(y.shape, np.nan, dtype=dtype)
    routed = max_pool_grad_reference(x, 2, 2, 0, np.ones_like(dy))
    for b, ch, i, j in zip(*np.nonzero(routed)):
        want[b, ch, i // 2, j // 2] = x[b, ch, i, j]
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(np.signbit(y), np.signbit(want))
    np.testing.assert_array_equal(dx, max_pool_grad_reference(x, 2, 2, 0, dy))
    assert np.signbit(y[0, 0, 0, 0]) and not np.signbit(y[0, 0, 0, 1])
    assert np.isnan(y[0, 0, 0, 2]) and y[0, 0, 0, 3] == -np.inf


def test_an_update_reading_a_returned_gradient_moves_up_to_be_its_gemms_epilogue():
    # g = x.t() @ dy is returned and read by one fused update, which sits
    # after another product: the update moves up to g's GEMM (its other
    # operands are all there from the start) and both values are right.
    rng = np.random.default_rng(51)
    x = rng.standard_normal((16, 24)).astype(np.float32)
    dy = rng.standard_normal((16, 8)).astype(np.float32)
    p = rng.standard_normal((24, 8)).astype(np.float32)
    v = rng.standard_normal((24, 8)).astype(np.float32)
    w = rng.standard_normal((8, 5)).astype(np.float32)

    def run():
        X, DY, P, V, W = (lazyscope.tensor(a, device=DEV) for a in (x, dy, p, v, w))
        g = X.t() @ DY
        other = DY @ W                       # between the product and its reader
        v2 = V * 0.9 + g
        return g, other, P - v2 * 0.1, v2

    (g, other, p2, v2), program = run_graph(run)
    want_g = x.T @ dy
    np.testing.assert_allclose(g, want_g, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(other, dy @ w, rtol=1e-5, atol=1e-5)
    want_v = v * np.float32(0.9) + want_g
    np.testing.assert_allclose(v2, want_v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(p2, p - want_v * np.float32(0.1), rtol=1e-5, atol=1e-5)
    assert program.count("the epilogue of the matmul above") == 1, program


def test_an_update_of_a_weight_gradient_over_a_batch_of_sequences_is_its_stacked_gemms_epilogue():
    # A linear layer on [B, S, C] (a transformer's): its weight gradient sums
    # the batch's products dy_b^T x_b as one GEMM over stacked rows, and the
    # SGD-momentum update reading it runs as that GEMM's epilogue, once per
    # part as the GEMM writes it. Values against NumPy in float64.
    rng = np.random.default_rng(52)
    x = rng.standard_normal((4, 24, 40)).astype(np.float32)
    dy = rng.standard_normal((4, 24, 33)).astype(np.float32)
    p = rng.standard_normal((33, 40)).astype(np.float32)
    v = rng.standard_normal((33, 40)).astype(np.float32)

    def run():
        X, DY, P, V = (lazyscope.tensor(a, device=DEV) for a in (x, dy, p, v))
        g = (DY.transpose(1, 2) @ X).sum(0)  # [33, 40]
        v2 = V * 0.9 + g
        return g, P - v2 * 0.1, v2

    (g, p2, v2), program = run_graph(run)
    want_g = np.einsum("bso,bsi->oi", dy.astype(np.float64), x.astype(np.float64))
    np.testing.assert_allclose(g, want_g, rtol=1e-5, atol=1e-4)
    want_v = v * 0.9 + want_g
    np.testing.assert_allclose(v2, want_v, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(p2, p - want_v * 0.1, rtol=1e-5, atol=1e-4)
    lines = program.splitlines()
    matmul = next(i for i, line in enumerate(lines) if "= matmul(" in line)
    assert "float32[33, 40]" in lines[matmul], program  # the stacked product, not a batch of [24, 24]
    assert "the epilogue of the matmul above" in lines[matmul + 3], program


def sgd_momentum_reference(w, x, steps, lr=0.1, momentum=0.9):
    """NumPy: the parameter before and after each step of SGD with momentum
    (PyTorch's rule: the first step's buffer is the gradient) on
    loss = sum((x @ w)^2), whose gradient is 2 x^T (x @ w)."""
    w = w.astype(np.float64)
    buf, out = None, []
    for _ in range(steps):
        g = 2 * x.T @ (x @ w)
        buf = g if buf is None else momentum * buf + g
        out.append((w, w - lr * buf))
        w = w - lr * buf
    return out


def sgd_steps(w0, x0, keep=None):
    """Three SGD-momentum steps on lazy:0; what keep(w) returned before each
    step, read after it; and the CpuDonatedBuffers count of each step."""
    from lazyscope import nn, optim
    w = nn.Parameter(lazyscope.tensor(w0, device=DEV))
    x = lazyscope.tensor(x0, device=DEV)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    lm.mark_step()
    kept, donated, values = [], [], []
    for _ in range(3):
        opt.zero_grad()
        (x @ w).square().sum().backward()
        k = keep(w) if keep else None
        before = met.counter_value("CpuDonatedBuffers") or 0
        opt.step()
        lm.mark_step()
        donated.append((met.counter_value("CpuDonatedBuffers") or 0) - before)
        kept.append(None if k is None else (k if isinstance(k, np.ndarray) else k.numpy()).copy())
        values.append(w.numpy().copy())
    return values, kept, donated


def test_an_sgd_momentum_update_writes_parameter_and_momentum_in_place():
    rng = np.random.default_rng(31)
    w0 = rng.standard_normal((40, 24)).astype(np.float32) * 0.2
    x0 = rng.standard_normal((16, 40)).astype(np.float32) * 0.2
    values, _, donated = sgd_steps(w0, x0)
    for got, (_, want) in zip(values, sgd_momentum_reference(w0, x0, 3)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    # From the second step on the parameter and its momentum buffer are the
    # previous step's outputs, held by nothing else: both are written over.
    assert donated[1:] == [2, 2], donated


# What a user may keep of a parameter before an in-place step, and what it
# must show afterwards: detach() and slices are views of the same data (as in
# PyTorch: they see the update); a clone, a copy on the eager device and a
# NumPy array are values of their own and keep the old one.
KEEPERS = {
    "detach": (lambda w: w.detach(), "new"),
    "slice": (lambda w: w[2:5], "new"),
    "clone": (lambda w: w.clone(), "old"),
    "to_cpu": (lambda w: w.to("cpu"), "old"),
    "numpy": (lambda w: w.numpy(), "old"),
    "detached_cpu_copy": (lambda w: w.detach().cpu(), "old"),
}


@pytest.mark.parametrize("kind", sorted(KEEPERS))
def test_what_the_user_kept_of_a_parameter_updated_in_place_is_intact(kind):
    keep, shows = KEEPERS[kind]
    rng = np.random.default_rng(32)
    w0 = rng.standard_normal((40, 24)).astype(np.float32) * 0.2
    x0 = rng.standard_normal((16, 40)).astype(np.float32) * 0.2
    values, kept, _ = sgd_steps(w0, x0, keep)
    for step, (old, new) in enumerate(sgd_momentum_reference(w0, x0, 3)):
        want = new if shows == "new" else old
        if kind == "slice":
            want = want[2:5]
        np.testing.assert_allclose(kept[step], want, rtol=1e-4, atol=1e-5, err_msg=f"step {step}")
        np.testing.assert_allclose(values[step], new, rtol=1e-4, atol=1e-5, err_msg=f"step {step}")


def test_a_bias_sliced_from_a_packed_parameter_after_the_product_is_still_its_epilogue():
    # The attention's q/k/v projections: x @ w_q.t() + in_proj_bias[d:2d].
    # The slice comes after the matmul in the program; it moves up so the
    # add can be the GEMM's epilogue instead of one more pass.
    rng = np.random.default_rng(31)
    x = rng.standard_normal((4, 24, 32)).astype(np.float32)
    w = rng.standard_normal((3 * 40, 32)).astype(np.float32)
    b = rng.standard_normal(3 * 40).astype(np.float32)

    def run():
        X, W, B = (lazyscope.tensor(v, device=DEV) for v in (x, w, b))
        return (X @ W[40:80].t() + B[40:80]).relu()

    got, program = run_graph(run)
    np.testing.assert_allclose(got, np.maximum(x @ w[40:80].T + b[40:80], 0), rtol=1e-4, atol=1e-4)
    assert program and "the epilogue of the matmul above" in program, program
    lines = program.splitlines()
    matmul = next(i for i, line in enumerate(lines) if "= matmul(" in line)
    assert sum("= slice(" in line for line in lines[:matmul]) == 2, program  # both slices before the product
