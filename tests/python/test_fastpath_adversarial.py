"""Adversarial tests of session 5's fast paths, each against an independent
oracle (NumPy float64, finite differences), never the engine against itself:
- trace replay (LAZYSCOPE_REUSE_IR): a previous step's node handed back to an
  op that looks like it, while the leaves, attributes, step shape, threads
  and modes around it change;
- layout folds (LAZYSCOPE_FOLD_LAYOUTS): matmul operands and products read
  and written through permutes of every axis order, shared permutes and
  products, sliced sources, float64 and integer products, gradients; slice
  gradients of a packed parameter with overlaps and gaps; repeated
  reductions whose attributes differ;
- the GEMM parts: shapes at the split thresholds, NaN and infinity, K = 0
  and empty products, in a fresh process per thread count."""
import itertools
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from runtime_util import capture_events, run_graph

DEV = "lazy:0"


@pytest.fixture(autouse=True)
def _reuse_on():
    _C.set_reuse_ir_nodes(True)
    lm.mark_step()
    yield
    _C.set_reuse_ir_nodes(True)
    lm.mark_step()


def lazy(a, **kw):
    return lazyscope.tensor(a, device=DEV, **kw)


# ---------------------------------------------------------------- trace replay

def test_a_signed_zero_attribute_is_not_the_other_zero_of_the_step_before():
    # 0.0 == -0.0 as doubles, but clamp(-1, min=-0.0) is -0.0 and
    # leaky_relu(-1, slope=0.0) is +0.0: a node reused for the other zero
    # would give the other sign (1/x: -inf instead of +inf).
    a = np.array([-1.0, -3.0, 2.0], dtype=np.float32)
    x = lazy(a)
    for step, zero in enumerate([0.0, -0.0, 0.0, -0.0, -0.0, 0.0]):
        c = x.clamp(min=zero)
        r = lazyscope.nn.functional.leaky_relu(x, zero)
        lm.mark_step()
        want_c = np.maximum(a, np.float32(zero))
        want_r = np.where(a > 0, a, a * np.float32(zero))
        got_c, got_r = c.numpy(), r.numpy()
        np.testing.assert_array_equal(got_c, want_c)
        np.testing.assert_array_equal(np.signbit(got_c), np.signbit(want_c), err_msg=f"clamp step {step} min={zero}")
        np.testing.assert_array_equal(np.signbit(got_r), np.signbit(want_r), err_msg=f"leaky step {step} {zero}")


def test_a_leaf_updated_in_place_between_steps_is_read_with_its_new_value():
    # copy_, +=, zero_ and mul_ each rebind x: the ops reading x must
    # read the new value, never the previous step's node on the old one.
    rng = np.random.default_rng(1)
    base = rng.standard_normal((5, 4)).astype(np.float32)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    x, W = lazy(base.copy()), lazy(w)
    cur = base.astype(np.float64)
    for step in range(8):
        out = ((x @ W) * x.sum()).tanh()
        lm.mark_step()
        np.testing.assert_allclose(out.numpy(), np.tanh((cur @ w) * cur.sum()), rtol=1e-5, atol=1e-6,
                                   err_msg=f"step {step}")
        kind = step % 4
        new = rng.standard_normal((5, 4)).astype(np.float32)
        with lazyscope.no_grad():
            if kind == 0:
                x.copy_(lazy(new))
                cur = new.astype(np.float64)
            elif kind == 1:
                x += 1.0
                cur = cur + 1
            elif kind == 2:
                x.zero_()
                x.add_(lazy(new))
                cur = new.astype(np.float64)
            else:
                x.mul_(lazy(new))
                cur = cur * new
        lm.mark_step()


def test_an_sgd_loop_on_plain_tensors_matches_numpy_every_step():
    # The optimizer update under no_grad is all direct-path ops on the
    # parameters' leaves; each step's leaves are the last step's outputs.
    rng = np.random.default_rng(2)
    xs = rng.standard_normal((16, 6)).astype(np.float32)
    ys = rng.standard_normal((16, 2)).astype(np.float32)
    w0 = rng.standard_normal((6, 2)).astype(np.float32) * 0.1
    W = lazy(w0.copy(), requires_grad=True)
    X, Y = lazy(xs), lazy(ys)
    w = w0.astype(np.float64)
    for step in range(10):
        loss = ((X @ W - Y) ** 2).mean()
        loss.backward()
        with lazyscope.no_grad():
            W -= 0.1 * W.grad
            W.grad = None
        lm.mark_step()
        grad = 2 * xs.T.astype(np.float64) @ (xs @ w - ys) / ys.size
        want_loss = ((xs @ w - ys) ** 2).mean()
        w = w - 0.1 * grad
        np.testing.assert_allclose(loss.item(), want_loss, rtol=1e-5, err_msg=f"step {step}")
        np.testing.assert_allclose(W.detach().numpy(), w, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")


def test_steps_of_different_lengths_values_read_mid_step_and_kept_across_steps():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 4)).astype(np.float32)
    x = lazy(a)
    kept = []
    A = a.astype(np.float64)
    for step in range(9):
        n = [3, 1, 5, 3, 0, 3, 2, 6, 3][step]
        y = x
        want = A
        for i in range(n):
            y = (y @ x).tanh()
            want = np.tanh(want @ A)
            if i == 1 and step % 2:
                # a sync inside the step: the value so far, as NumPy has it
                np.testing.assert_allclose(y.sum().item(), want.sum(), rtol=1e-4, atol=1e-5)
        kept.append((y, want))
        lm.mark_step()
    # every step's result read after later steps ran
    for i, (y, want) in enumerate(kept):
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-5, err_msg=f"step {i}")


def test_a_leaf_replaced_by_a_new_tensor_of_the_same_shape_is_read_anew():
    # A new tensor each step, the old one freed first: its node may be made
    # at the freed node's address; the previous step's nodes must not match.
    rng = np.random.default_rng(4)
    w = rng.standard_normal((3, 3)).astype(np.float32)
    W = lazy(w)
    for step in range(12):
        a = rng.standard_normal((2, 3)).astype(np.float32)
        x = lazy(a)
        out = (x @ W).relu() + x.sum()
        lm.mark_step()
        np.testing.assert_allclose(out.numpy(), np.maximum(a.astype(np.float64) @ w, 0) + a.sum(), rtol=1e-5,
                                   atol=1e-5, err_msg=f"step {step}")
        del x, out


def test_the_same_ops_on_another_dtype_and_with_requires_grad_toggled():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 5))
    x32, x64 = lazy(a.astype(np.float32)), lazy(a)
    for step in range(6):
        x = x64 if step % 2 else x32
        if step == 3:
            x32.requires_grad = True
        y = (x * x).exp().sum(dim=1)
        lm.mark_step()
        got = y.detach().numpy()
        assert got.dtype == (np.float64 if step % 2 else np.float32)
        np.testing.assert_allclose(got, np.exp(a * a).sum(1), rtol=1e-5 if got.dtype == np.float32 else 1e-12)


def test_threads_tracing_on_one_device_get_their_own_values():
    # Two threads trace interleaved on one device: slots are taken in
    # whatever order the threads come, so a slot may hold the other
    # thread's op. Each thread's results must be its own.
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2)]
    leaves = [lazy(a) for a in arrays]
    errors = []
    barrier = threading.Barrier(2)

    def work(i):
        try:
            x = leaves[i]
            a = arrays[i].astype(np.float64)
            for step in range(30):
                y = x
                for _ in range(3):
                    y = (y @ x).tanh() * (i + 1)
                got = y.numpy()  # a sync: whatever the other thread traced too
                want = a
                for _ in range(3):
                    want = np.tanh(want @ a) * (i + 1)
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=f"thread {i} step {step}")
                if step % 5 == 0:
                    barrier.wait(timeout=60)
                    if i == 0:
                        lm.mark_step()
                    barrier.wait(timeout=60)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_graph_hashes_and_compiles_are_the_same_with_reuse_on_and_off():
    rng = np.random.default_rng(7)
    a, w = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((4, 4)).astype(np.float32)

    def run(reuse):
        _C.set_reuse_ir_nodes(reuse)
        x, W = lazy(a), lazy(w)
        lm.mark_step()
        values = []
        with capture_events() as events:
            for step in range(6):
                y = (x @ W).relu()
                if step % 3 == 1:
                    y = y.softmax(1)  # another graph every third step
                values.append(y)
                lm.mark_step()
        return ([e["graph_hash"] for e in events.of("execute")], len(events.of("compile")),
                [v.numpy() for v in values])

    on_hashes, _, on_values = run(True)
    off_hashes, off_compiles, off_values = run(False)
    assert on_hashes == off_hashes
    h = np.maximum(a.astype(np.float64) @ w, 0)
    e = np.exp(h - h.max(1, keepdims=True))
    for step, (got_on, got_off) in enumerate(zip(on_values, off_values)):
        want = e / e.sum(1, keepdims=True) if step % 3 == 1 else h
        np.testing.assert_allclose(got_on, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_off, want, rtol=1e-5, atol=1e-6)
    assert off_compiles == 0  # both graphs were compiled by the first run


def test_a_thousand_steps_keep_the_live_buffers_flat():
    # A weight kept, a new batch each step, a value read mid-step every 7th:
    # the lists may keep one step's nodes on the weight, never the batches.
    from lazyscope.debug import metrics as met
    rng = np.random.default_rng(8)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    W = lazy(w)
    live = {}
    for step in range(1000):
        batch = np.full((3, 4), step % 5, dtype=np.float32)
        y = ((lazy(batch) @ W).tanh() + (W @ W).sum()).sum(dim=0)
        if step % 7 == 0:
            np.testing.assert_allclose(y.sum().item(), (np.tanh(batch.astype(np.float64) @ w) + (w @ w).sum()).sum(),
                                       rtol=1e-4)
        lm.mark_step()
        if step in (20, 999):
            del y
            live[step] = (met.counter_value("LiveDeviceBuffers"), met.counter_value("LiveDeviceBufferBytes"))
    assert live[999] == live[20], live


def test_a_tensor_dropped_after_the_last_barrier_is_freed_by_reads_without_one():
    # Training, then an evaluation loop that reads values and never calls
    # mark_step: the previous step's nodes on a tensor the script dropped
    # must not keep its buffer alive until a barrier that never comes.
    from lazyscope.debug import metrics as met
    big = lazy(np.ones(1 << 20, np.float32))  # 4 MiB
    small = lazy(np.eye(4, dtype=np.float32) * 0.5)
    total = big.relu().sum()
    lm.mark_step()
    assert total.item() == 1 << 20
    before = met.counter_value("LiveDeviceBufferBytes")
    del big
    for _ in range(3):
        np.testing.assert_allclose((small @ small).tanh().numpy(), np.tanh(np.eye(4) * 0.25), rtol=1e-6)
    freed = before - met.counter_value("LiveDeviceBufferBytes")
    assert freed >= (4 << 20) - 4096, freed  # the loop's own few small values live meanwhile


# ---------------------------------------------------------------- layout folds

def _perm_matmul(a_shape, a_perm, b_shape, b_perm, out_perm, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        a = rng.integers(-4, 5, a_shape).astype(dtype)
        b = rng.integers(-4, 5, b_shape).astype(dtype)
    else:
        a = rng.standard_normal(a_shape).astype(dtype)
        b = rng.standard_normal(b_shape).astype(dtype)

    def run():
        p = lazy(a).permute(*a_perm) @ lazy(b).permute(*b_perm)
        return p.permute(*out_perm) * 1 if out_perm else p * 1

    got, _ = run_graph(run)
    p = np.transpose(a, a_perm).astype(np.float64) @ np.transpose(b, b_perm).astype(np.float64)
    want = np.transpose(p, out_perm) if out_perm else p
    assert got.shape == want.shape
    if np.issubdtype(dtype, np.integer):
        np.testing.assert_array_equal(got, want.astype(dtype))
    else:
        tol = 1e-4 if dtype == np.float32 else 1e-11
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


PERMS4 = list(itertools.permutations(range(4)))


@pytest.mark.parametrize("perm", PERMS4, ids=["".join(map(str, p)) for p in PERMS4])
def test_every_axis_order_of_a_4d_left_operand_and_product(perm):
    # a [2,3,4,5] permuted to any order, times a matching right operand, the
    # product permuted by the same order again.
    shape = (2, 3, 4, 5)
    ps = [shape[i] for i in perm]
    b_shape = (ps[0], ps[1], ps[3], 3)
    out_perm = tuple(perm)  # any permutation of the product's 4 dims
    _perm_matmul(shape, perm, b_shape, (0, 1, 2, 3), out_perm, np.float32, sum(perm))


@pytest.mark.parametrize("perm", PERMS4, ids=["".join(map(str, p)) for p in PERMS4])
def test_every_axis_order_of_a_4d_right_operand(perm):
    shape = (2, 3, 4, 5)
    ps = [shape[i] for i in perm]
    a_shape = (ps[0], ps[1], 3, ps[2])
    _perm_matmul(a_shape, (0, 1, 2, 3), shape, perm, None, np.float64, 7 + sum(perm))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.int32])
def test_head_split_products_in_float64_and_integers(dtype):
    split = (0, 2, 1, 3)
    _perm_matmul((2, 5, 3, 4), split, (2, 6, 3, 4), (0, 2, 3, 1), split, dtype, 3)


def test_broadcast_batches_with_permuted_operands():
    rng = np.random.default_rng(9)
    a = rng.standard_normal((2, 5, 3, 4)).astype(np.float32)   # [B, S, H, D]
    w = rng.standard_normal((4, 6)).astype(np.float32)          # 2-d: broadcast over [B, H]
    m = rng.standard_normal((1, 3, 6, 4)).astype(np.float32)    # batch broadcast on dim 0

    def run():
        A = lazy(a).permute(0, 2, 1, 3)  # [B, H, S, D]
        p1 = (A @ lazy(w)).permute(0, 2, 1, 3) * 1.0
        p2 = (lazy(m) @ A.transpose(-1, -2).transpose(-1, -2).permute(0, 1, 3, 2)) * 1.0  # [1,H,6,D]@[B,H,D,S]
        p3 = (lazy(m) * 1.0 @ (A * 1.0).transpose(-1, -2)).permute(0, 2, 1, 3) * 1.0  # a broadcast batch, merged
        p4 = (lazy(w).t() @ A.transpose(-1, -2)).permute(0, 2, 3, 1) * 1.0  # a 2-d left operand, merged
        return p1, p2, p3, p4

    (p1, p2, p3, p4), _ = run_graph(run)
    A = np.transpose(a, (0, 2, 1, 3)).astype(np.float64)
    m64 = m.astype(np.float64)
    np.testing.assert_allclose(p1, np.transpose(A @ w, (0, 2, 1, 3)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(p2, m64 @ np.swapaxes(A, -1, -2), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(p3, np.transpose(m64 @ np.swapaxes(A, -1, -2), (0, 2, 1, 3)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(p4, np.transpose(w.T.astype(np.float64) @ np.swapaxes(A, -1, -2), (0, 2, 3, 1)),
                               rtol=1e-4, atol=1e-4)


def test_a_permute_and_a_product_each_read_by_two_consumers():
    rng = np.random.default_rng(10)
    a = rng.standard_normal((2, 6, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 6, 3, 4)).astype(np.float32)

    def run():
        q = lazy(a).permute(0, 2, 1, 3)           # read by the matmul and by exp
        k = lazy(b).permute(0, 2, 3, 1)
        s = q @ k                                  # read by the permute and by a sum
        merged = s.permute(0, 2, 1, 3) * 1.0
        return merged, q.exp() + 0.0, s.sum(dim=-1)

    (merged, e, ssum), _ = run_graph(run)
    q = np.transpose(a, (0, 2, 1, 3)).astype(np.float64)
    s = q @ np.transpose(b, (0, 2, 3, 1)).astype(np.float64)
    np.testing.assert_allclose(merged, np.transpose(s, (0, 2, 1, 3)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(e, np.exp(q), rtol=1e-5)
    np.testing.assert_allclose(ssum, s.sum(-1), rtol=1e-4, atol=1e-4)


def test_permutes_of_sliced_sources_feed_matmuls():
    rng = np.random.default_rng(11)
    big = rng.standard_normal((3, 8, 4, 10)).astype(np.float32)

    def run():
        src = lazy(big)[:, 1:7, :, 2:7]              # [3, 6, 4, 5], not contiguous
        q = src.permute(0, 2, 1, 3)                   # [3, 4, 6, 5]
        k = lazy(big)[:, ::2, :, :5].permute(0, 2, 3, 1)  # [3, 4, 5, 4]
        return ((q @ k).permute(0, 2, 1, 3) * 1.0,)

    (got,), _ = run_graph(run)
    b = big.astype(np.float64)
    q = np.transpose(b[:, 1:7, :, 2:7], (0, 2, 1, 3))
    k = np.transpose(b[:, ::2, :, :5], (0, 2, 3, 1))
    np.testing.assert_allclose(got, np.transpose(q @ k, (0, 2, 1, 3)), rtol=1e-4, atol=1e-4)


def test_gradients_of_permuted_products_match_finite_differences():
    rng = np.random.default_rng(12)
    a = rng.standard_normal((2, 4, 3, 5))
    b = rng.standard_normal((2, 3, 4, 5))
    g = rng.standard_normal((2, 4, 3, 4))

    def f(a_, b_):  # float64 NumPy: the oracle's loss
        p = np.transpose(a_, (0, 2, 1, 3)) @ np.transpose(b_, (0, 1, 3, 2))
        return (np.transpose(p, (0, 2, 1, 3)) * g).sum()

    def run():
        A, B = lazy(a, requires_grad=True), lazy(b, requires_grad=True)
        p = A.permute(0, 2, 1, 3) @ B.permute(0, 1, 3, 2)
        (p.permute(0, 2, 1, 3) * lazy(g)).sum().backward()
        return A.grad, B.grad

    (ga, gb), _ = run_graph(run)
    eps = 1e-6
    for arr, got, which in ((a, ga, 0), (b, gb, 1)):
        num = np.zeros_like(arr)
        for idx in np.ndindex(arr.shape):
            plus, minus = arr.copy(), arr.copy()
            plus[idx] += eps
            minus[idx] -= eps
            args_p = (plus, b) if which == 0 else (a, plus)
            args_m = (minus, b) if which == 0 else (a, minus)
            num[idx] = (f(*args_p) - f(*args_m)) / (2 * eps)
        np.testing.assert_allclose(got, num, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("cuts", [
    [(0, 3), (2, 5), (5, 8)],        # overlap
    [(0, 2), (3, 5), (5, 8)],        # a gap
    [(0, 4), (0, 4), (4, 8)],        # the same slice twice
    [(4, 8), (0, 4)],                # in reverse order
    [(0, 8, 2), (1, 8, 2)],          # strided slices that interleave
    [(1, 4), (4, 8)],                # tiling all but the first row
    [(-8, -5), (-5, None)],          # negative bounds that tile
], ids=["overlap", "gap", "twice", "reversed", "strided", "offset", "negative"])
def test_slice_gradients_that_do_not_tile_simply_sum_right(cuts):
    rng = np.random.default_rng(len(cuts))
    w = rng.standard_normal((8, 5)).astype(np.float32)
    xs = [rng.standard_normal((3, np.arange(8)[slice(*c)].size)).astype(np.float32) for c in cuts]

    def run():
        W = lazy(w, requires_grad=True)
        loss = sum(((lazy(x) @ W[slice(*c)]) * (i + 1)).sum() for i, (x, c) in enumerate(zip(xs, cuts)))
        loss.backward()
        return W.grad

    got, _ = run_graph(run)
    want = np.zeros((8, 5))
    for i, (x, c) in enumerate(zip(xs, cuts)):
        want[slice(*c)] += (i + 1) * x.astype(np.float64).sum(0)[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_slice_gradients_along_the_second_dim_and_through_a_cast():
    rng = np.random.default_rng(13)
    w = rng.standard_normal((4, 9)).astype(np.float32)
    x = rng.standard_normal((4, 3)).astype(np.float32)

    def run():
        W = lazy(w, requires_grad=True)
        parts = [W[:, 0:3], W[:, 3:6].double(), W[:, 6:9]]
        loss = sum((p * lazy(x).to(p.dtype) * (i + 1)).sum().float() for i, p in enumerate(parts))
        loss.backward()
        return W.grad

    got, _ = run_graph(run)
    want = np.concatenate([x * 1, x * 2, x * 3], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_repeated_reductions_with_other_attributes_are_not_merged():
    # Reductions of one computed operand: some the same again (a view is
    # fine), most differing only in keepdim, dims, the kind or correction
    # (each must be its own). None is returned, so each may fold.
    rng = np.random.default_rng(14)
    a = rng.standard_normal((5, 6, 7)).astype(np.float32)

    def run():
        x = lazy(a) * 2.0
        over1 = [x.mean(dim=1), x.mean(dim=1, keepdim=True).squeeze(1), x.sum(dim=1), x.mean(dim=(1,)),
                 x.var(dim=1, correction=1), x.var(dim=1, correction=0),
                 x.var(dim=1, keepdim=True, correction=1).squeeze(1), x.sum(dim=1, keepdim=True).squeeze(1)]
        over2 = [x.mean(dim=2), x.var(dim=2, correction=0), x.var(dim=2, correction=1), x.var(dim=2, correction=2),
                 x.sum(dim=2), x.mean(dim=2)]
        return (sum(v * (i + 1) for i, v in enumerate(over1)), sum(v * (i + 1) for i, v in enumerate(over2)),
                x.sum(dim=(1, 2)) + x.mean(dim=(1, 2)) * 10)

    (r1, r2, r3), _ = run_graph(run)
    x = a.astype(np.float64) * 2
    over1 = [x.mean(1), x.mean(1), x.sum(1), x.mean(1), x.var(1, ddof=1), x.var(1), x.var(1, ddof=1), x.sum(1)]
    over2 = [x.mean(2), x.var(2), x.var(2, ddof=1), x.var(2, ddof=2), x.sum(2), x.mean(2)]
    np.testing.assert_allclose(r1, sum(v * (i + 1) for i, v in enumerate(over1)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(r2, sum(v * (i + 1) for i, v in enumerate(over2)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(r3, x.sum((1, 2)) + x.mean((1, 2)) * 10, rtol=1e-4, atol=1e-3)


# ---------------------------------------------------------------- GEMM parts

GEMM_SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import lazyscope
from lazyscope import _C
from runtime_util import run_graph
DEV = "lazy:0"
rng = np.random.default_rng(0)
fails = []
sizes = [1, 63, 64, 65, 127, 128, 129, 255, 256, 257]
shapes = [(m, 128, 128) for m in sizes] + [(128, k, 128) for k in sizes] + [(128, 128, n) for n in sizes]
shapes += [(512, 129, 511), (129, 513, 127), (64, 128, 512), (62, 128, 512), (66, 128, 511), (66, 128, 513),
           (256, 128, 127), (300, 0, 7), (0, 5, 7), (5, 7, 0), (0, 0, 0)]  # 256x128x128: 2^22, one call
for mode in sys.argv[2].split(","):
    _C.set_gemm_split(mode)
    for m, k, n in shapes:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        if m > 3 and k > 3 and n > 3:
            a[1, 2] = np.nan
            a[3, :] = np.inf      # row 3 of the product: inf, or NaN where b's column sums mixed signs
            b[:, 2] = -np.inf
        bias = rng.standard_normal(n).astype(np.float32)
        transposed = (m + k + n) % 2 == 1  # b read through the BLAS flag, from [n, k]
        bt = np.ascontiguousarray(b.T)

        def product():
            B = lazyscope.tensor(bt, device=DEV).t() if transposed else lazyscope.tensor(b, device=DEV)
            return ((lazyscope.tensor(a, device=DEV) @ B) + lazyscope.tensor(bias, device=DEV)) * 1.0  # an epilogue

        got, _ = run_graph(product)
        with np.errstate(invalid="ignore", over="ignore"):
            want = a.astype(np.float64) @ b.astype(np.float64) + bias
        what = f"{mode} {m}x{k}x{n}" + (" b^T" if transposed else "")
        if got.shape != want.shape:
            fails.append(what + f" shape {got.shape}")
            continue
        if not np.array_equal(np.isnan(got), np.isnan(want)):
            fails.append(what + " NaN where NumPy has " + str(np.argwhere(np.isnan(got) != np.isnan(want))[:3].tolist()))
            continue
        fin = ~np.isnan(want)
        if not np.array_equal(np.isinf(got[fin]), np.isinf(want[fin])) or not np.array_equal(
                np.sign(got[np.isinf(want)]), np.sign(want[np.isinf(want)])):
            fails.append(what + " infinities differ")
            continue
        ok = np.isfinite(want)
        if not np.allclose(got[ok], want[ok], rtol=3e-4, atol=3e-4):
            fails.append(what + " values")
    # Strided products (head split and merge, leading dims != k) at the same
    # thresholds: 128-wide heads, 129 rows, a 512-wide head, 2^22 per batch.
    for b_, s_, h_, d_ in [(1, 256, 2, 128), (2, 129, 3, 128), (1, 64, 2, 512), (1, 300, 1, 129)]:
        y, z, v = (rng.standard_normal((b_, s_, h_, d_)).astype(np.float32) for _ in range(3))

        def attention():
            Y, Z, V = (lazyscope.tensor(t, device=DEV) for t in (y, z, v))
            scores = Y.permute(0, 2, 1, 3) @ Z.permute(0, 2, 3, 1)
            return ((scores * 0.01) @ V.permute(0, 2, 1, 3)).permute(0, 2, 1, 3) * 1.0

        got, _ = run_graph(attention)
        q, k_, w_ = (np.transpose(t.astype(np.float64), (0, 2, 1, 3)) for t in (y, z, v))
        want = np.transpose(((q @ np.swapaxes(k_, -1, -2)) * 0.01) @ w_, (0, 2, 1, 3))
        if not np.allclose(got, want, rtol=2e-3, atol=2e-3):
            fails.append(f"{mode} strided {b_}x{s_}x{h_}x{d_}")
print("\n".join(fails) if fails else "ok")
"""


@pytest.mark.parametrize("threads", ["1", "2"])
def test_gemm_parts_at_the_thresholds_with_nan_inf_and_empty_shapes(threads, build_dir):
    env = dict(os.environ, PYTHONPATH=str(build_dir / "python"), LAZYSCOPE_NUM_THREADS=threads)
    env.pop("LAZYSCOPE_GEMM_SPLIT", None)
    here = os.path.dirname(os.path.abspath(__file__))
    proc = subprocess.run([sys.executable, "-c", GEMM_SCRIPT, here,
                           "auto,rows,columns,blas,legacy,dnnl,dnnl-rows,openblas"],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok", proc.stdout


# ------------------------------------------- random layouts and other processes

def _random_layout_case(seed):
    """Operands [batch..., m, k] and [batch..., k, n] made as permutes of
    sources stored in another order (size-1 dims, ranks 3 to 5, batches the
    right operand may broadcast), the product permuted again."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(3, 6))
    batch = [int(v) for v in rng.choice([1, 2, 3], rank - 2)]
    m, k, n = (int(v) for v in rng.choice([1, 2, 5, 7], 3))
    a_shape, b_shape = batch + [m, k], batch + [k, n]
    if seed % 4 == 3:  # a broadcast batch on the right
        b_shape = [1] * (rank - 2) + [k, n] if seed % 8 == 3 else [k, n]
    pa, pb, po = (tuple(int(v) for v in rng.permutation(len(s))) for s in (a_shape, b_shape, batch + [m, n]))
    inv = lambda p: tuple(int(v) for v in np.argsort(p))  # noqa: E731
    # sources whose permute by p is the logical operand
    a_src = rng.standard_normal([a_shape[i] for i in inv(pa)])
    b_src = rng.standard_normal([b_shape[i] for i in inv(pb)])
    return a_src, pa, b_src, pb, po


@pytest.mark.parametrize("seed", range(32))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_permuted_operands_and_products_with_gradients_match_numpy(seed, dtype):
    a_src, pa, b_src, pb, po = _random_layout_case(seed)
    a_src, b_src = a_src.astype(dtype), b_src.astype(dtype)
    rng = np.random.default_rng(1000 + seed)
    a64, b64 = np.transpose(a_src.astype(np.float64), pa), np.transpose(b_src.astype(np.float64), pb)
    p = a64 @ b64
    out = np.transpose(p, po)
    g = rng.standard_normal(out.shape)

    def run():
        A = lazy(a_src, requires_grad=True)
        B = lazy(b_src, requires_grad=True)
        o = (A.permute(*pa) @ B.permute(*pb)).permute(*po)
        (o * lazy(g.astype(dtype))).sum().backward()
        return o * 1.0, A.grad, B.grad

    (got, ga, gb), _ = run_graph(run)
    dp = np.transpose(g, np.argsort(po))
    da, db = dp @ np.swapaxes(b64, -1, -2), np.swapaxes(a64, -1, -2) @ dp
    # reduce broadcast batch dims of b's gradient, then undo the source permute
    while db.ndim > b64.ndim:
        db = db.sum(0)
    db = db.sum(axis=tuple(i for i in range(b64.ndim - 2) if b64.shape[i] == 1 and db.shape[i] != 1), keepdims=True)
    tol = 1e-4 if dtype == np.float32 else 1e-11
    np.testing.assert_allclose(got, out, rtol=tol, atol=tol)
    np.testing.assert_allclose(ga, np.transpose(da, np.argsort(pa)), rtol=tol, atol=tol)
    np.testing.assert_allclose(gb, np.transpose(db, np.argsort(pb)), rtol=tol, atol=tol)


SPLIT_SCRIPT = r"""
import sys
import numpy as np
import lazyscope
from lazyscope.core import lazy_model as lm
# Plain tensors updated in place each step (every op on the direct path,
# the old values donatable), graphs cut by a node limit of a few nodes
# mid-step, a value read mid-step: every step's values against NumPy.
rng = np.random.default_rng(0)
w0 = rng.standard_normal((6, 6)) * 0.3
x0 = rng.standard_normal((4, 6))
W = lazyscope.tensor(w0.astype(np.float32), device="lazy:0")
X = lazyscope.tensor(x0.astype(np.float32), device="lazy:0")
M = lazyscope.tensor(np.zeros((6, 6), np.float32), device="lazy:0")
w, m = w0.copy(), np.zeros((6, 6))
for step in range(40):
    h = (X @ W).tanh()
    g = X.t() @ (h * h)
    M.mul_(0.9)
    M.add_(g)
    W.sub_(M * 0.01)
    hw = np.tanh(x0 @ w)
    m = 0.9 * m + x0.T @ (hw * hw)
    w = w - 0.01 * m
    if step % 3 == 0:
        got = float(h.sum().item())
        assert abs(got - hw.sum()) < 1e-3 * max(1, abs(hw.sum())), (step, got, hw.sum())
    lm.mark_step()
    np.testing.assert_allclose(W.numpy(), w, rtol=2e-4, atol=2e-5, err_msg=f"step {step}")
    np.testing.assert_allclose(M.numpy(), m, rtol=2e-4, atol=2e-4, err_msg=f"step {step}")
# a second device traces the same lines on its own leaves
V = lazyscope.tensor(w0.astype(np.float32), device="lazy:1")
for step in range(4):
    a = (X.to("lazy:1") @ V).tanh()
    b = (X @ W).tanh()
    lm.mark_step()
    np.testing.assert_allclose(a.numpy(), np.tanh(x0 @ w0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.numpy(), np.tanh(x0 @ w), rtol=1e-5, atol=1e-5)
print("ok")
"""


@pytest.mark.parametrize("limit", ["100000", "7", "3"])
@pytest.mark.parametrize("reuse", ["1", "0"])
def test_in_place_updates_cut_by_the_graph_limit_match_numpy(limit, reuse, build_dir):
    env = dict(os.environ, PYTHONPATH=str(build_dir / "python"), LAZYSCOPE_GRAPH_NODE_LIMIT=limit,
               LAZYSCOPE_REUSE_IR=reuse, LAZYSCOPE_DEVICE_COUNT="2")
    proc = subprocess.run([sys.executable, "-c", SPLIT_SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "ok", proc.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_traces_the_parents_lines_on_its_own_values():
    rng = np.random.default_rng(15)
    a = rng.standard_normal((3, 3)).astype(np.float32)
    x = lazy(a)
    for _ in range(3):  # the parent's lists hold these nodes
        y = (x @ x).relu()
        lm.mark_step()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the same lines on the same leaf, then a new one
        code = 1
        try:
            os.close(read)
            ok = True
            for step in range(3):
                src = a if step < 2 else a * 2
                leaf = x if step < 2 else lazy(src)
                y = (leaf @ leaf).relu()
                lm.mark_step()
                ok = ok and np.allclose(y.numpy(), np.maximum(src.astype(np.float64) @ src, 0), rtol=1e-5, atol=1e-5)
            os.write(write, b"ok" if ok else b"wrong")
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        said = f.read()
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0 and said == b"ok", (status, said)
    np.testing.assert_allclose(y.numpy(), np.maximum(a.astype(np.float64) @ a, 0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_single_row_and_single_column_matrices_read_and_written_through_permutes(dtype):
    # A size-1 dim of a permute may have stride 1: the GEMM's leading
    # dimension of a one-row matrix must still be at least its row.
    rng = np.random.default_rng(16)
    a = rng.standard_normal((3, 1, 2, 1)).astype(dtype)   # permuted to [2, 3, 1, 1]: one-row, one-column
    b = rng.standard_normal((2, 3, 1, 5)).astype(dtype)
    c = rng.standard_normal((7, 1, 1)).astype(dtype)       # [1, 1, 7] through a permute

    def run():
        p = (lazy(a).permute(2, 0, 3, 1) @ lazy(b)).permute(0, 1, 3, 2) * 1.0  # [2, 3, 5, 1]
        q = (lazy(c).permute(1, 2, 0) @ lazy(c).permute(1, 0, 2)).permute(2, 0, 1) * 1.0  # [1, 1, 1]
        r = (lazy(c).permute(2, 1, 0).transpose(-1, -2) @ lazy(c).permute(1, 2, 0)).permute(0, 2, 1) * 1.0
        return p, q, r

    (p, q, r), _ = run_graph(run)
    a64, b64, c64 = (v.astype(np.float64) for v in (a, b, c))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(p, np.transpose(np.transpose(a64, (2, 0, 3, 1)) @ b64, (0, 1, 3, 2)), rtol=tol, atol=tol)
    np.testing.assert_allclose(q, np.transpose(np.transpose(c64, (1, 2, 0)) @ np.transpose(c64, (1, 0, 2)), (2, 0, 1)),
                               rtol=tol, atol=tol)
    want_r = np.swapaxes(np.transpose(c64, (2, 1, 0)), -1, -2) @ np.transpose(c64, (1, 2, 0))
    np.testing.assert_allclose(r, np.transpose(want_r, (0, 2, 1)), rtol=tol, atol=tol)


def test_reuse_switched_every_step_and_barriers_from_another_thread_keep_values_right():
    # The switch flips between steps and mid-step; another thread ends
    # steps (mark_step) while this one traces and reads: values as NumPy's.
    rng = np.random.default_rng(17)
    a = rng.standard_normal((6, 6)).astype(np.float32) * 0.5
    x = lazy(a)
    a64 = a.astype(np.float64)
    stop = threading.Event()
    errors = []

    def barriers():
        try:
            while not stop.is_set():
                lm.mark_step()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    other = threading.Thread(target=barriers)
    other.start()
    try:
        for step in range(300):
            _C.set_reuse_ir_nodes(step % 3 != 1)
            y, want = x, a64
            for i in range(4):
                y = (y @ x).tanh()
                want = np.tanh(want @ a64)
                if i == 2 and step % 5 == 0:
                    _C.set_reuse_ir_nodes(step % 2 == 0)
            np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-5, err_msg=f"step {step}")
    finally:
        stop.set()
        other.join()
    assert not errors, errors


BROADCASTS = r"""
import sys
import numpy as np
import lazyscope
from lazyscope.core import lazy_model as lm
sys.path.insert(0, sys.argv[5])
from runtime_util import capture_events
# Inputs of one fused chain over [B, H, S, T] broadcast every way: per
# element, scalar, per row ([..., 1]), a trailing block ([S, T], [T]), and
# ones that are neither: a middle dim ([H, 1, 1]), [B, 1, S, 1], [1, H, 1, T],
# [S, 1]. Each chain compiled (JIT forced) or interpreted, against NumPy.
B, H, S, T = (int(v) for v in sys.argv[1:5])
rng = np.random.default_rng(B * 1000 + H * 100 + S * 10 + T)
shapes = [(B, H, S, T), (), (B, H, S, 1), (S, T), (T,), (H, 1, 1), (B, 1, S, 1), (1, H, 1, T), (S, 1)]
arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
arrays[0][0, 0, 0, ::3] = np.nan
lz = [lazyscope.tensor(a, device="lazy:0") for a in arrays]
lm.mark_step()
fails, compiled = [], 0
x = arrays[0]


def run(y):
    # each chain a graph of its own: one fused kernel, compiled when it can be
    global compiled
    with capture_events() as events:
        lm.mark_step()
    compiled += sum(c["program_text"].count(" compiled:") for c in events.of("compile"))
    return y.numpy()


for i in range(1, len(shapes)):
    a = arrays[i]
    got = run(lazyscope.where(lz[0] > lz[i], lz[0] * lz[i] + 1.0, lz[i] - lz[0]))
    if not np.array_equal(got, np.where(x > a, x * a + np.float32(1.0), a - x), equal_nan=True):
        fails.append(f"input {i} {shapes[i]}")
got = run((lz[0] - lz[5]) * lz[6] + lz[7] * lz[3] - lz[2] / (lz[8] * lz[8] + 1.0))
want = (x - arrays[5]) * arrays[6] + arrays[7] * arrays[3] - arrays[2] / (arrays[8] * arrays[8] + np.float32(1.0))
if not np.allclose(got, want, rtol=1e-6, atol=1e-6, equal_nan=True):
    fails.append("mixed")
print("compiled", compiled)
print("\n".join(fails) if fails else "ok")
"""


@pytest.mark.parametrize("dims", [(2, 3, 5, 7), (1, 4, 16, 16), (3, 1, 1, 33), (2, 2, 9, 1)],
                         ids=lambda d: "x".join(map(str, d)))
@pytest.mark.parametrize("jit", ["1", "0"])
def test_fused_chains_reading_broadcasts_of_every_kind_match_numpy(dims, jit, build_dir, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(build_dir / "python"), LAZYSCOPE_NUM_THREADS="2", LAZYSCOPE_FUSION_JIT=jit,
               LAZYSCOPE_FUSION_JIT_MIN_ELEMENTS="1", LAZYSCOPE_FUSION_JIT_SYNC="1", LAZYSCOPE_KERNEL_CACHE_DIR=str(tmp_path / "kernels"))
    proc = subprocess.run([sys.executable, "-c", BROADCASTS, *map(str, dims), os.path.dirname(__file__)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    compiled, *rest = proc.stdout.strip().splitlines()
    assert rest == ["ok"], proc.stdout
    # per element, scalar, row and block reads compile; the JIT off, none
    assert (int(compiled.split()[1]) >= 4) == (jit == "1"), proc.stdout


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_slice_gradients_that_tile_plus_a_gradient_of_the_whole_parameter(dtype):
    # The packed weight read whole too: its gradient is the slices' cat
    # plus the direct term, which the cat must not drop.
    rng = np.random.default_rng(18)
    w = rng.standard_normal((6, 4)).astype(dtype)
    xs = [rng.standard_normal((3, 2)).astype(dtype) for _ in range(3)]
    z = rng.standard_normal((5, 6)).astype(dtype)

    def run():
        W = lazy(w, requires_grad=True)
        loss = sum(((lazy(x) @ W[2 * i:2 * i + 2]) * (i + 1)).sum() for i, x in enumerate(xs))
        loss = loss + (lazy(z) @ W).tanh().sum()
        loss.backward()
        return W.grad

    got, _ = run_graph(run)
    z64, w64 = z.astype(np.float64), w.astype(np.float64)
    want = z64.T @ (1 - np.tanh(z64 @ w64) ** 2)
    for i, x in enumerate(xs):
        want[2 * i:2 * i + 2] += (i + 1) * x.astype(np.float64).sum(0)[:, None]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_self_products_and_permutes_of_permuted_products_match_numpy(dtype):
    rng = np.random.default_rng(19)
    y, c = rng.standard_normal((2, 5, 3, 4)), rng.standard_normal((2, 3, 5, 6))

    def run():
        Y, C = lazy(y.astype(dtype)), lazy(c.astype(dtype))
        s = Y.permute(0, 2, 1, 3) @ Y.permute(0, 2, 3, 1)  # both operands strided reads of one buffer
        m = s.permute(0, 2, 1, 3).permute(0, 2, 1, 3) @ C  # a product written strided, read strided
        t = (Y.permute(0, 2, 1, 3) @ Y.permute(0, 2, 1, 3).transpose(-1, -2)).transpose(-1, -2).permute(0, 2, 1, 3)
        return m * 1.0, t * 1.0

    (m, t), _ = run_graph(run)
    q = np.transpose(y, (0, 2, 1, 3))
    s = q @ np.swapaxes(q, -1, -2)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(m, s @ c, rtol=tol, atol=tol)
    np.testing.assert_allclose(t, np.transpose(np.swapaxes(s, -1, -2), (0, 2, 1, 3)), rtol=tol, atol=tol)


@pytest.mark.parametrize("shape,dims", [((5, 1), (-1,)), ((5, 2), (-1,)), ((3, 4, 2), (1,)), ((3, 1, 2), (1,)),
                                        ((4, 3), (0, 1)), ((2, 3, 5), (0, 2)), ((6, 64), (-1,)), ((2, 3, 17), (-1,))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_variance_rows_with_corrections_up_to_and_past_their_length_match_numpy(shape, dims, dtype):
    # Rows of one element, corrections that leave no degree of freedom (inf
    # or NaN as NumPy's), a NaN in the first row.
    rng = np.random.default_rng(sum(shape))
    for correction in (0, 1, 2, 3, 64):
        a = rng.standard_normal(shape).astype(dtype)
        if correction == 2:
            a.flat[0] = np.nan
        got, _ = run_graph(lambda: lazy(a).var(dim=dims, correction=correction) * 1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy warns of the degrees of freedom it has not
            want = np.var(a.astype(np.float64), axis=dims, ddof=correction)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"correction {correction}")
        np.testing.assert_array_equal(np.isinf(got), np.isinf(want), err_msg=f"correction {correction}")
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"correction {correction}")



def test_a_repeated_reduction_viewed_after_its_first_readers_ran_keeps_its_value():
    # The first mean's only reader so far could write over it in place; the
    # second mean, a view of the first, is read after: it must still be the mean.
    rng = np.random.default_rng(20)
    a = rng.standard_normal((6, 40)).astype(np.float32)

    def run():
        x = lazy(a) * 2.0
        m1 = x.mean(dim=-1, keepdim=True)
        big = (x * (m1 * 3.0).exp()).tanh()
        m2 = x.mean(dim=-1, keepdim=True)
        v1 = x.var(dim=0)
        f = (v1 * 2.0).sqrt()
        v2 = x.var(dim=0)
        return big + m2, f + v2 * 1.0

    (r1, r2), program = run_graph(run, require_compile=True)
    x = a.astype(np.float64) * 2
    m, v = x.mean(-1, keepdims=True), x.var(0, ddof=1)
    np.testing.assert_allclose(r1, np.tanh(x * np.exp(3 * m)) + m, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(r2, np.sqrt(2 * v) + v, rtol=1e-5, atol=1e-5)
    assert program.count("a view of %") >= 2, program  # both repeats folded: the case under test


SLICE_SETS = {
    "dim0_and_dim1_tiles": [(slice(0, 2), slice(None)), (slice(2, 4), slice(None)), (slice(None), slice(0, 3)),
                            (slice(None), slice(3, 6))],
    "dims_mixed": [(slice(0, 2), slice(None)), (slice(None), slice(0, 6)), (slice(2, 4), slice(None))],
    "blocks": [(slice(0, 2), slice(0, 3)), (slice(0, 2), slice(3, 6)), (slice(2, 4), slice(0, 3)),
               (slice(2, 4), slice(3, 6))],
}


@pytest.mark.parametrize("name", list(SLICE_SETS))
def test_slice_gradients_along_two_dims_of_one_parameter_sum_right(name):
    # Two sets of slices tiling the parameter along different dims (two
    # cats at most), or 2-d blocks: the gradient is every slice's, summed.
    cuts = SLICE_SETS[name]
    rng = np.random.default_rng(len(name))
    w = rng.standard_normal((4, 6)).astype(np.float32)
    gs = [rng.standard_normal(np.empty((4, 6))[c].shape).astype(np.float32) for c in cuts]

    def run():
        W = lazy(w, requires_grad=True)
        sum((W[c] * lazy(g)).sum() for c, g in zip(cuts, gs)).backward()
        return W.grad

    got, _ = run_graph(run)
    want = np.zeros((4, 6))
    for c, g in zip(cuts, gs):
        want[c] += g
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
