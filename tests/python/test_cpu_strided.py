"""Kernels of the transformer step's non-GEMM work on lazy:0, each against
NumPy in float64: batched matrix products reading their operands and
writing their products in place through permutes (attention's head split
and merge, no copy), the variance over trailing dims in vector lanes, and
fused chains reading broadcast rows."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import lazyscope
from runtime_util import run_graph

DEV = "lazy:0"


def attention_like(y, z, v, g, y_dims, z_dims, v_dims, out_dims, dtype):
    """out = permute((permute(y) @ permute(z)^T) @ permute(v)), and the
    gradients of sum(out * g) for y, z, v: lazily, and in NumPy float64."""
    def run():
        Y, Z, V = (lazyscope.tensor(a, device=DEV, requires_grad=True) for a in (y, z, v))
        s = Y.permute(*y_dims) @ Z.permute(*z_dims).transpose(-1, -2)
        out = (s @ V.permute(*v_dims)).permute(*out_dims)
        (out * lazyscope.tensor(g, device=DEV)).sum().backward()
        return out, Y.grad, Z.grad, V.grad

    got, program = run_graph(run, require_compile=True)
    y64, z64, v64, g64 = (a.astype(np.float64) for a in (y, z, v, g))
    q, k, w = np.transpose(y64, y_dims), np.transpose(z64, z_dims), np.transpose(v64, v_dims)
    s = q @ np.swapaxes(k, -1, -2)
    p = s @ w
    out = np.transpose(p, out_dims)
    dp = np.transpose(g64, np.argsort(out_dims))
    ds, dw = dp @ np.swapaxes(w, -1, -2), np.swapaxes(s, -1, -2) @ dp
    dq, dk = ds @ k, np.swapaxes(ds, -1, -2) @ q
    want = (out, np.transpose(dq, np.argsort(y_dims)), np.transpose(dk, np.argsort(z_dims)),
            np.transpose(dw, np.argsort(v_dims)))
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for name, a, b in zip(("out", "dy", "dz", "dv"), got, want):
        assert a.dtype == dtype and a.shape == b.shape, name
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=name)
    return program


# (B, S, H, D) of y, z, v as [B, S, H, D] heads read as [B, H, S, D], odd sizes included.
HEADS = [(2, 5, 3, 4), (1, 7, 1, 3), (3, 9, 4, 16), (2, 64, 4, 64)]


@pytest.mark.parametrize("b,s,h,d", HEADS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_head_split_and_merge_read_and_write_in_place_and_match_numpy(b, s, h, d, dtype):
    rng = np.random.default_rng(b * 1000 + s * 10 + h + d)
    y, z, v, g = (rng.standard_normal((b, s, h, d)).astype(dtype) for _ in range(4))
    split = (0, 2, 1, 3)
    program = attention_like(y, z, v, g, split, split, split, split, dtype)
    # Every head split, and every merge of the backward, is a GEMM's
    # strides: all six products. The forward's product is returned too
    # (the engine keeps it for the gradient), so its merge stays a copy.
    assert program.count("through strides") == 6, program
    assert program.count("its product") == 3 and program.count("= permute(") == 1, program


def test_permutes_mixing_batch_dims_and_a_transposed_layout_match_numpy():
    rng = np.random.default_rng(5)
    # y [S, B, H, D] -> [B, H, S, D]; z [D, B, H, S] -> [B, H, S, D] (its
    # rows are strided, its columns contiguous: read through the transpose
    # flag); v [B, H, S, D] read as is; out merged to [S, B, H, D].
    y = rng.standard_normal((6, 2, 3, 5)).astype(np.float32)
    z = rng.standard_normal((5, 2, 3, 6)).astype(np.float32)
    v = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    g = rng.standard_normal((6, 2, 3, 5)).astype(np.float32)
    program = attention_like(y, z, v, g, (1, 2, 0, 3), (1, 2, 3, 0), (0, 1, 2, 3), (2, 0, 1, 3), np.float32)
    assert "through strides" in program, program


def test_a_permute_with_neither_last_dim_contiguous_is_still_copied_and_right():
    rng = np.random.default_rng(6)
    # y [S, D, B] -> [B, S, D]: neither of the last two dims has stride 1.
    y = rng.standard_normal((7, 5, 3)).astype(np.float32)
    w = rng.standard_normal((3, 5, 4)).astype(np.float32)

    def run():
        return lazyscope.tensor(y, device=DEV).permute(2, 0, 1) @ lazyscope.tensor(w, device=DEV)

    got, program = run_graph(run, require_compile=True)
    np.testing.assert_allclose(got, np.transpose(y, (2, 0, 1)).astype(np.float64) @ w, rtol=1e-5, atol=1e-5)
    assert "permute" in program, program


@pytest.mark.parametrize("threads", ["1", "2"])
def test_strided_products_match_numpy_on_one_and_two_threads_and_switch_off(threads, build_dir):
    script = r"""
import os, numpy as np, lazyscope
rng = np.random.default_rng(7)
y, z = rng.standard_normal((2, 2, 33, 3, 8)).astype(np.float32)
x, w = lazyscope.tensor(y, device="lazy:0"), lazyscope.tensor(z, device="lazy:0")
got = (x.permute(0, 2, 1, 3) @ w.permute(0, 2, 3, 1)).permute(0, 2, 1, 3).numpy()
want = np.transpose(np.transpose(y, (0, 2, 1, 3)).astype(np.float64) @ np.transpose(z, (0, 2, 3, 1)), (0, 2, 1, 3))
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
print("ok")
"""
    for strided in ("1", "0"):
        env = dict(os.environ, LAZYSCOPE_NUM_THREADS=threads, LAZYSCOPE_FOLD_LAYOUTS=strided,
                   PYTHONPATH=str(build_dir / "python"))
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0 and "ok" in out.stdout, out.stderr


VARS = [
    ((1024, 256), (1,)),       # a layer norm's rows
    ((16, 64, 256), (-1,)),
    ((5, 7, 13), (2,)),        # odd row lengths: lanes and a tail
    ((3, 4, 37), (1, 2)),
    ((8, 6, 5, 5), (0, 2, 3)),  # a batch norm's planes: [R1, C, R2]
    ((2, 9, 3), (0, 2)),
    ((4, 1, 7), (2,)),
    ((6, 3), (1,)),
]


@pytest.mark.parametrize("shape,dims", VARS)
@pytest.mark.parametrize("correction", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_variance_over_trailing_and_outer_dims_matches_numpy(shape, dims, correction, dtype):
    rng = np.random.default_rng(sum(shape) + len(dims) + correction)
    a = (rng.standard_normal(shape) * 3 + 100).astype(dtype)  # an offset: a one-pass formula would lose digits

    got, _ = run_graph(lambda: lazyscope.tensor(a, device=DEV).var(dim=dims, correction=correction, keepdim=True))
    want = a.astype(np.float64).var(axis=tuple(d % len(shape) for d in dims), ddof=correction, keepdims=True)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert got.shape == want.shape and got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_variance_of_rows_with_nan_and_infinity_is_nan_as_in_numpy():
    a = np.arange(4 * 19, dtype=np.float32).reshape(4, 19)
    a[1, 3] = np.nan
    a[2, 17] = np.inf  # inf - inf: NaN
    got, _ = run_graph(lambda: lazyscope.tensor(a, device=DEV).var(dim=1, correction=0))
    with np.errstate(invalid="ignore"):
        want = a.astype(np.float64).var(axis=1)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[[0, 3]], want[[0, 3]], rtol=1e-6)


@pytest.mark.parametrize("weight", [True, False])
def test_a_residual_gradient_is_added_inside_the_layer_norm_backward(weight):
    # x + f(layer_norm(x)) (a pre-norm block): x's gradient is g plus the
    # layer norm's input gradient; the add runs inside layer_norm_backward
    # (a fourth operand), not as one more pass.
    rng = np.random.default_rng(7 + weight)
    x = rng.standard_normal((3, 5, 40)).astype(np.float32)
    w = rng.standard_normal(40).astype(np.float32)
    g = rng.standard_normal((3, 5, 40)).astype(np.float32)
    m = rng.standard_normal((40, 40)).astype(np.float32) * 0.2

    def run():
        X = lazyscope.tensor(x, device=DEV, requires_grad=True)
        W = lazyscope.tensor(w, device=DEV) if weight else None
        y = X + lazyscope.nn.functional.layer_norm(X, (40,), W) @ lazyscope.tensor(m, device=DEV)
        (y * lazyscope.tensor(g, device=DEV)).sum().backward()
        return (X.grad,)

    (dx,), program = run_graph(run)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    rstd = 1 / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    xhat = (x64 - x64.mean(-1, keepdims=True)) * rstd
    dxhat = (g64 @ m.T.astype(np.float64)) * (w if weight else 1.0)
    want = g64 + rstd * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    np.testing.assert_allclose(dx, want, rtol=1e-4, atol=1e-4)
    operands = 4 if weight else 3
    assert re.search(r"= layer_norm_backward\(" + ", ".join([r"%\d+"] * operands) + r"\)", program), program


@pytest.mark.parametrize("rows,n", [(64, 256), (7, 33), (3, 1)])
def test_a_layer_norm_and_its_gradients_match_numpy(rows, n):
    # Its fused kernels read the [n] weight and bias as runs of each row.
    rng = np.random.default_rng(rows + n)
    x = rng.standard_normal((2, rows, n)).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    g = rng.standard_normal((2, rows, n)).astype(np.float32)

    def run():
        X, W, B = (lazyscope.tensor(a, device=DEV, requires_grad=True) for a in (x, w, b))
        y = lazyscope.nn.functional.layer_norm(X, (n,), W, B)
        (y * lazyscope.tensor(g, device=DEV)).sum().backward()
        return y, X.grad, W.grad, B.grad

    (y, dx, dw, db), _ = run_graph(run)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    rstd = 1 / np.sqrt(x64.var(-1, keepdims=True) + 1e-5)
    xhat = (x64 - mu) * rstd
    dxhat = g64 * w
    want_dx = rstd * (dxhat - dxhat.mean(-1, keepdims=True) - xhat * (dxhat * xhat).mean(-1, keepdims=True))
    np.testing.assert_allclose(y, xhat * w + b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(dw, (g64 * xhat).sum((0, 1)), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(db, g64.sum((0, 1)), rtol=1e-4, atol=1e-4)



# A chain over rows [2, R, C] reading a value per row (float and bool), a
# value per column (as a layer norm's kernels do) and a bool block [R, C]
# repeated over the leading dim (as an attention's mask): compiled at run
# time (fusion_jit) with the broadcasts read per row, or on the interpreter.
ROWS = r"""
import sys, numpy as np, lazyscope
sys.path.insert(0, sys.argv[1])
from runtime_util import run_graph
r, c, out = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rng = np.random.default_rng(11)
x = rng.standard_normal((2, r, c)).astype(np.float32)
x[0, 1, ::7] = np.nan
mu = rng.standard_normal((2, r, 1)).astype(np.float32)
keep = rng.random((2, r, 1)) < 0.5
w = rng.standard_normal(c).astype(np.float32)
mask = rng.random((r, c)) < 0.3

def chain():
    X, M, K, W, B = (lazyscope.tensor(a, device="lazy:0") for a in (x, mu, keep, w, mask))
    t = (X - M) * W + 0.5
    return lazyscope.where(B, 0.25, lazyscope.where(K, t, -t) * 2.0), (t > M)

(got, above), program = run_graph(chain, require_compile=True)
np.save(out + "_got.npy", got)
np.save(out + "_above.npy", above)
print(program)
"""


@pytest.mark.parametrize("r,c", [(33, 257), (5, 8), (64, 3)])
@pytest.mark.parametrize("isa", ["x86-64", "avx512f"])
def test_a_chain_reading_row_and_column_broadcasts_compiles_and_matches_numpy_and_the_interpreter(
        r, c, isa, build_dir, tmp_path):
    runs = {}
    for jit in ("1", "0"):
        env = dict(os.environ, PYTHONPATH=str(build_dir / "python"), LAZYSCOPE_NUM_THREADS="2",
                   LAZYSCOPE_CPU_ISA=isa, LAZYSCOPE_FUSION_JIT=jit, LAZYSCOPE_FUSION_JIT_MIN_ELEMENTS="16",
                   LAZYSCOPE_FUSION_JIT_SYNC="1", LAZYSCOPE_KERNEL_CACHE_DIR=str(tmp_path / "kernels"))
        out = str(tmp_path / jit)
        proc = subprocess.run([sys.executable, "-c", ROWS, os.path.dirname(__file__), str(r), str(c), out],
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs[jit] = (np.load(out + "_got.npy"), np.load(out + "_above.npy"), proc.stdout)
    assert " compiled:" in runs["1"][2] and " compiled:" not in runs["0"][2], runs["1"][2]
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, r, c)).astype(np.float32)
    x[0, 1, ::7] = np.nan
    mu = rng.standard_normal((2, r, 1)).astype(np.float32)
    keep = rng.random((2, r, 1)) < 0.5
    w = rng.standard_normal(c).astype(np.float32)
    mask = rng.random((r, c)) < 0.3
    t = (x - mu) * w + np.float32(0.5)
    want = np.where(mask, np.float32(0.25), np.where(keep, t, -t) * np.float32(2.0))
    for got, above, _ in runs.values():
        np.testing.assert_array_equal(got, want)  # float32 arithmetic: exact, NaNs included
        np.testing.assert_array_equal(above, t > mu)
    np.testing.assert_array_equal(runs["1"][0].view(np.uint32), runs["0"][0].view(np.uint32))


@pytest.mark.parametrize("cuts,covered", [((0, 2, 5, 8), True), ((0, 3, 8), True), ((0, 2, 6), False)],
                         ids=["three_parts", "two_parts", "a_gap"])
def test_gradients_of_slices_of_a_packed_parameter_are_one_concatenation_and_match_numpy(cuts, covered):
    # As an attention's packed in_proj weight: q, k, v cut from one [8, 5]
    # parameter by rows, each used once; its gradient is their gradients
    # side by side (zeros where no slice reads it).
    rng = np.random.default_rng(len(cuts))
    w = rng.standard_normal((8, 5)).astype(np.float32)
    xs = [rng.standard_normal((4, b - a)).astype(np.float32) for a, b in zip(cuts, cuts[1:])]

    def run():
        W = lazyscope.tensor(w, device=DEV, requires_grad=True)
        loss = sum(((lazyscope.tensor(x, device=DEV) @ W[a:b]) * (i + 1)).sum()
                   for i, (x, a, b) in enumerate(zip(xs, cuts, cuts[1:])))
        loss.backward()
        return W.grad

    got, program = run_graph(run, require_compile=True)
    want = np.zeros((8, 5))
    for i, (x, a, b) in enumerate(zip(xs, cuts, cuts[1:])):
        want[a:b] = (i + 1) * x.astype(np.float64).sum(0)[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert ("slice_backward" not in program and "= cat(" in program) == covered, program


@pytest.mark.parametrize("n", [1, 3, 17, 64, 100])
@pytest.mark.parametrize("isa", ["x86-64", "avx2", "avx512f"])
def test_softmax_rows_with_nan_and_infinite_values_match_numpy_on_every_instruction_set(n, isa, build_dir, tmp_path):
    # The row max runs in vector lanes as wide as the instruction set, the
    # rest of the row one at a time: lengths below, at and past a vector.
    script = r"""
import sys, numpy as np, lazyscope
n = int(sys.argv[1])
rng = np.random.default_rng(n)
a = (rng.standard_normal((6, n)) * 30).astype(np.float32)
a[1, -1] = np.nan                  # NaN in the tail (or the only element)
a[2, 0] = -np.inf                  # a masked position
a[3, :] = -np.inf                  # a fully masked row
a[4, n // 2] = np.inf
a[5, :] += np.float32(4000)
np.save(sys.argv[2], lazyscope.tensor(a, device="lazy:0").softmax(-1).numpy())
np.save(sys.argv[3], a)
"""
    env = dict(os.environ, PYTHONPATH=str(build_dir / "python"), LAZYSCOPE_CPU_ISA=isa)
    got_path, a_path = str(tmp_path / "got.npy"), str(tmp_path / "a.npy")
    proc = subprocess.run([sys.executable, "-c", script, str(n), got_path, a_path], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got, a = np.load(got_path), np.load(a_path).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        finite_max = np.where(np.isnan(a), -np.inf, a).max(axis=-1, keepdims=True)  # NaNs ignored by the max
        shift = np.where(np.isinf(finite_max), 0.0, finite_max)
        e = np.exp(a - shift)
        want = e / e.sum(axis=-1, keepdims=True)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)


def test_a_reduction_computed_again_from_the_same_operand_is_a_view_of_the_first():
    # A layer norm's gradient recomputes the forward's mean: one pass over x.
    rng = np.random.default_rng(12)
    a = rng.standard_normal((6, 40)).astype(np.float32)

    def run():
        x = lazyscope.tensor(a, device=DEV) * 2.0
        m1 = x.mean(dim=-1, keepdim=True)
        m2 = x.mean(dim=-1, keepdim=True)  # the same again: a view
        m3 = x.mean(dim=0, keepdim=True)   # other dims: its own pass
        v1, v2 = x.var(dim=-1, correction=0), x.var(dim=-1, correction=1)  # other attributes: two passes
        return (x - m1) * (x - m2).sum() + m3, v1 + v2

    (got, v), program = run_graph(run, require_compile=True)
    x = a.astype(np.float64) * 2
    m = x.mean(-1, keepdims=True)
    np.testing.assert_allclose(got, (x - m) * (x - m).sum() + x.mean(0, keepdims=True), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(v, x.var(-1) + x.var(-1, ddof=1), rtol=1e-5, atol=1e-5)
    lines = program.splitlines()
    notes = [lines[i + 1] for i, line in enumerate(lines[:-1]) if " = mean(" in line]
    views = [note for note in notes if "a view of" in note]
    assert len(notes) == 3 and len(views) == 1 and program.count("= var(") == 2, program
    first = re.search(r"%(\d+) = mean\(", program).group(1)
    assert f"a view of %{first} " in views[0], program
