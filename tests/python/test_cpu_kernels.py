"""The CPU backend's kernel paths on lazy:0, each against NumPy: permutes
of many shapes (block copies and cache-tiled transposes), transposes folded
into matrix products, reductions over leading axes, the multi-tensor
optimizer update and the single-pass row kernels."""
import re

import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm
from runtime_util import capture_events

DEV = "lazy:0"


def run_graph(fn):
    """Runs fn() as one graph on lazy:0; its values (NumPy) and program text."""
    lm.mark_step()
    with capture_events() as events:
        result = fn()
        lm.mark_step()
    result = tuple(t.numpy() for t in result) if isinstance(result, tuple) else result.numpy()
    programs = [c["program_text"] for c in events.of("compile")]
    return result, (programs[-1] if programs else None)


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


LEADING = [
    ((128, 512), (0,), False),
    ((127, 33), (0,), True),      # odd sizes
    ((1, 17), (0,), False),
    ((5, 1, 300), (0,), False),
    ((16, 64, 256), (0, 1), False),  # a transformer's bias gradient
    ((7, 3, 5), (0, 1), True),
    ((3000, 3), (0,), False),
    ((2, 300, 1), (0,), True),
    ((9, 1000), (0,), False),
]


@pytest.mark.parametrize("shape,dims,keepdim", LEADING)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_and_means_over_leading_axes_match_numpy(shape, dims, keepdim, dtype):
    rng = np.random.default_rng(len(shape) * 100 + shape[-1])
    a = rng.standard_normal(shape).astype(dtype)

    def run():
        x = lazyscope.tensor(a, device=DEV)
        return x.sum(dim=dims, keepdim=keepdim), x.mean(dim=dims, keepdim=keepdim)

    (s, m), _ = run_graph(run)
    want_s = a.astype(np.float64).sum(axis=dims, keepdims=keepdim)
    want_m = a.astype(np.float64).mean(axis=dims, keepdims=keepdim)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    assert s.shape == want_s.shape and s.dtype == dtype
    np.testing.assert_allclose(s, want_s.astype(dtype), rtol=tol, atol=tol * shape[0])
    np.testing.assert_allclose(m, want_m.astype(dtype), rtol=tol, atol=tol)
