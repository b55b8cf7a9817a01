"""The fused attention op (`_C.attention`, its gradient `attention_backward`)
against NumPy float64: softmax(q k^T * scale + mask) v over [N, L, H, D]
operands, boolean (True = attend), float, causal and padding masks, odd
lengths and head sizes, batch 1, both devices, float32 and float64;
gradients against NumPy's closed form and finite differences; 1 and 2
threads; F.scaled_dot_product_attention and nn.MultiheadAttention on it;
the lazy step's program running it as two kernels (no softmax, no
attention products)."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.nn import functional as F
from runtime_util import run_graph

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(2024)


def ref_forward(q, k, v, mask, scale, causal):
    """NumPy float64: (out [N, Lq, H, Dv], P [N, H, Lq, Lk], which scores were masked out)."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    s = np.einsum("nlhd,nmhd->nhlm", q, k) * scale
    out_mask = np.zeros(s.shape, dtype=bool)
    if causal:
        out_mask |= ~np.tril(np.ones(s.shape[-2:], dtype=bool))
    if mask is not None:
        if mask.dtype == bool:
            out_mask |= ~np.broadcast_to(mask, s.shape)
        else:
            s = s + mask.astype(np.float64)
    s = np.where(out_mask, -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("nhlm,nmhd->nlhd", p, v), p, out_mask


def ref_backward(q, k, v, mask, scale, causal, dout):
    """NumPy float64 closed form of (dq, dk, dv) for the upstream gradient dout."""
    q, k, v, dout = (np.asarray(x, np.float64) for x in (q, k, v, dout))
    _, p, out_mask = ref_forward(q, k, v, mask, scale, causal)
    dp = np.einsum("nlhd,nmhd->nhlm", dout, v)
    ds = p * (dp - (p * dp).sum(-1, keepdims=True))
    ds = np.where(out_mask, 0.0, ds) * scale
    return (np.einsum("nhlm,nmhd->nlhd", ds, k), np.einsum("nhlm,nlhd->nmhd", ds, q),
            np.einsum("nhlm,nlhd->nmhd", p, dout))


def make_mask(kind, n, h, lq, lk):
    if kind is None:
        return None
    if kind == "bool":
        m = rng.random((lq, lk)) > 0.4
        m[:, 0] = True  # every row keeps a key (a fully masked row is NaN, as PyTorch)
        return m
    if kind == "float":
        return (rng.standard_normal((n, h, lq, lk)) * 2).astype(np.float32)
    if kind == "padding":  # [N, 1, 1, Lk]: the last keys of some sequences not attended
        m = np.ones((n, 1, 1, lk), dtype=bool)
        m[-1, ..., lk // 2:] = False
        return m
    raise ValueError(kind)


SHAPES = [  # N, Lq, Lk, H, D, Dv
    (2, 5, 7, 3, 8, 8),
    (1, 70, 130, 2, 32, 80),  # batch 1, lengths not multiples of 16, query rows in two blocks
    (3, 64, 64, 4, 64, 64),   # the benchmark's heads
    (2, 17, 17, 1, 80, 32),
]


def run(device, dtype, shape, mask_kind, causal, scale=None):
    n, lq, lk, h, d, dv = shape
    q = rng.standard_normal((n, lq, h, d)).astype(dtype)
    k = rng.standard_normal((n, lk, h, d)).astype(dtype)
    v = rng.standard_normal((n, lk, h, dv)).astype(dtype)
    dout = rng.standard_normal((n, lq, h, dv)).astype(dtype)
    mask = make_mask(mask_kind, n, h, lq, lk)
    if mask is not None and mask.dtype != bool:
        mask = mask.astype(dtype)
    scale = scale if scale is not None else 1.0 / math.sqrt(d)
    tq, tk, tv = (lazyscope.tensor(x, device=device, requires_grad=True) for x in (q, k, v))
    tm = None if mask is None else lazyscope.tensor(mask, device=device)
    out = _C.attention(tq, tk, tv, tm, scale, causal)
    (out * lazyscope.tensor(dout, device=device)).sum().backward()
    return (q, k, v, mask, scale, dout), out.numpy(), (tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mask_kind,causal", [(None, False), ("bool", False), ("float", False), (None, True),
                                              ("padding", True)])
def test_attention_and_its_gradients_match_numpy(device, shape, mask_kind, causal):
    (q, k, v, mask, scale, dout), got, grads = run(device, np.float32, shape, mask_kind, causal)
    want, _, _ = ref_forward(q, k, v, mask, scale, causal)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)
    for name, g, w in zip("qkv", grads, ref_backward(q, k, v, mask, scale, causal, dout)):
        assert g.shape == w.shape, name
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4, err_msg=f"d{name}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(2, 5, 3, 8), (1, 70, 2, 32), (3, 64, 4, 64)])  # N, L, H, D
@pytest.mark.parametrize("mask_kind,causal", [(None, False), ("bool", False), ("float", False), ("padding", True)])
def test_packed_self_attention_matches_numpy(device, shape, mask_kind, causal):
    """q, k, v as the heads of one [N, L, 3, H, D] projection: the output, and the packed gradient whose
    three parts are dq, dk, dv."""
    n, length, h, d = shape
    qkv = rng.standard_normal((n, length, 3, h, d)).astype(np.float32)
    dout = rng.standard_normal((n, length, h, d)).astype(np.float32)
    mask = make_mask(mask_kind, n, h, length, length)
    t = lazyscope.tensor(qkv, device=device, requires_grad=True)
    tm = None if mask is None else lazyscope.tensor(mask, device=device)
    out = _C.attention(t, None, None, tm, 0.3, causal)
    (out * lazyscope.tensor(dout, device=device)).sum().backward()
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    np.testing.assert_allclose(out.numpy(), ref_forward(q, k, v, mask, 0.3, causal)[0], rtol=1e-4, atol=2e-5)
    grad = t.grad.numpy()
    assert grad.shape == qkv.shape
    for i, w in enumerate(ref_backward(q, k, v, mask, 0.3, causal, dout)):
        np.testing.assert_allclose(grad[:, :, i], w, rtol=1e-3, atol=1e-4, err_msg="dqkv"[i + 1])


@pytest.mark.parametrize("device", DEVICES)
def test_float64_attention_matches_numpy_closely(device):
    shape = (2, 9, 11, 2, 8, 5)
    (q, k, v, mask, scale, dout), got, grads = run(device, np.float64, shape, "bool", True, scale=0.7)
    want, _, _ = ref_forward(q, k, v, mask, scale, True)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)
    for g, w in zip(grads, ref_backward(q, k, v, mask, scale, True, dout)):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_match_finite_differences(device):
    """The engine's float64 gradients against central differences of its own forward (which the test
    above ties to NumPy): checks the closed form used as the oracle too."""
    n, lq, lk, h, d, dv = 1, 4, 5, 2, 3, 2
    q, k, v = (rng.standard_normal(s) for s in ((n, lq, h, d), (n, lk, h, d), (n, lk, h, dv)))
    mask = (rng.standard_normal((lq, lk)) * 0.5)
    w = rng.standard_normal((n, lq, h, dv))

    def loss(q_, k_, v_):
        out, _, _ = ref_forward(q_, k_, v_, mask, 0.8, False)
        return (out * w).sum()

    tq, tk, tv = (lazyscope.tensor(x, device=device, requires_grad=True) for x in (q, k, v))
    (_C.attention(tq, tk, tv, lazyscope.tensor(mask, device=device), 0.8, False)
     * lazyscope.tensor(w, device=device)).sum().backward()
    for i, (x, t) in enumerate(((q, tq), (k, tk), (v, tv))):
        fd = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            args = [q, k, v]
            hi, lo = x.copy(), x.copy()
            hi[idx] += 1e-6
            lo[idx] -= 1e-6
            args[i] = hi
            f_hi = loss(*args)
            args[i] = lo
            fd[idx] = (f_hi - loss(*args)) / 2e-6
        np.testing.assert_allclose(t.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("device", DEVICES)
def test_the_devices_agree_bit_for_bit(device):
    local = np.random.default_rng(5)
    q, k, v = (local.standard_normal((2, l, 2, 16)).astype(np.float32) for l in (33, 40, 40))
    mask = local.random((33, 40)) > 0.3
    outs = []
    for dev in ("cpu", device):
        tq, tk, tv = (lazyscope.tensor(x, device=dev, requires_grad=True) for x in (q, k, v))
        out = _C.attention(tq, tk, tv, lazyscope.tensor(mask, device=dev), 0.25, False)
        out.sum().backward()
        outs.append([out.numpy(), tq.grad.numpy(), tk.grad.numpy(), tv.grad.numpy()])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def test_bad_operands_are_named():
    with pytest.raises(lazyscope.ShapeError, match=r"attention: expected a packed q/k/v \[N, L, 3, H, D\]"):
        _C.attention(lazyscope.ones(2, 5, 2, 2, 8), None, None, None, 1.0)
    with pytest.raises(ValueError, match="give both k and v"):
        _C.attention(lazyscope.ones(2, 5, 3, 2, 8), lazyscope.ones(2, 5, 2, 8), None, None, 1.0)
    q = lazyscope.ones(2, 5, 2, 8)
    with pytest.raises(lazyscope.ShapeError, match=r"attention: expected q \[N, Lq, H, D\]"):
        _C.attention(q, lazyscope.ones(2, 5, 3, 8), lazyscope.ones(2, 5, 3, 8), None, 1.0)
    with pytest.raises(lazyscope.ShapeError, match=r"attention: the mask \[3, 5\] does not broadcast"):
        _C.attention(q, q, q, lazyscope.ones(3, 5, dtype=lazyscope.bool), 1.0)
    with pytest.raises(Exception, match="float32 or float64"):
        _C.attention(q.to(lazyscope.int64), q.to(lazyscope.int64), q.to(lazyscope.int64), None, 1.0)


# --- The front ends on the op.

def sdpa_ref(q, k, v, mask, scale, causal):
    """[N, H, L, D] or [N, L, D] operands, SDPA's convention (bool mask: True attends)."""
    heads = q.ndim == 4
    tr = (lambda x: x.transpose(0, 2, 1, 3)) if heads else (lambda x: x[:, :, None, :])
    if mask is not None and not heads and mask.ndim == 3:
        mask = mask[:, None]
    out, _, _ = ref_forward(tr(q), tr(k), tr(v), mask, scale, causal)
    return out.transpose(0, 2, 1, 3) if heads else out[:, :, 0, :]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rank", [3, 4])
@pytest.mark.parametrize("mask_kind,causal", [(None, True), ("bool", False), ("float", False)])
def test_scaled_dot_product_attention_runs_the_op_and_matches_numpy(device, rank, mask_kind, causal):
    shape = (2, 3, 6, 8) if rank == 4 else (2, 6, 8)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for _ in range(3))
    mask = None
    if mask_kind == "bool":
        mask = rng.random(shape[:-2] + (6, 6)) > 0.3
        mask[..., 0] = True
    elif mask_kind == "float":
        mask = rng.standard_normal((6, 6)).astype(np.float32)
    tq, tk, tv = (lazyscope.tensor(x, device=device, requires_grad=True) for x in (q, k, v))
    tm = None if mask is None else lazyscope.tensor(mask, device=device)
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, is_causal=causal)
    np.testing.assert_allclose(out.numpy(), sdpa_ref(q, k, v, mask, 1 / math.sqrt(8), causal), rtol=1e-4,
                               atol=2e-5)
    out.sum().backward()
    assert tq.grad is not None and tk.grad is not None and tv.grad is not None


def mha_ref(x, mha, attn_mask=None, key_padding_mask=None, causal=False):
    """NumPy float64 MultiheadAttention (batch_first) of a self-attention over x [N, L, E]."""
    w_in, b_in = mha.in_proj_weight.numpy().astype(np.float64), mha.in_proj_bias.numpy().astype(np.float64)
    w_out, b_out = (mha.out_proj.weight.numpy().astype(np.float64), mha.out_proj.bias.numpy().astype(np.float64))
    n, length, e = x.shape
    h = mha.num_heads
    d = e // h
    q, k, v = ((x @ w.T + b).reshape(n, length, h, d) for w, b in zip(np.split(w_in, 3), np.split(b_in, 3)))
    mask = None
    if attn_mask is not None:
        mask = ~attn_mask if attn_mask.dtype == bool else attn_mask
    if key_padding_mask is not None:
        pad = ~key_padding_mask[:, None, None, :]
        mask = pad if mask is None else (mask & pad if mask.dtype == bool else np.where(pad, mask, -np.inf))
    out, _, _ = ref_forward(q, k, v, mask, 1 / math.sqrt(d), causal)
    return out.reshape(n, length, e) @ w_out.T + b_out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("masks", ["causal_bool", "float", "padding", "both", "is_causal"])
def test_multihead_attention_on_the_op_matches_numpy(device, masks):
    lazyscope.manual_seed(3)
    mha = lazyscope.nn.MultiheadAttention(16, 4, batch_first=True)
    lazyscope.nn.init.normal_(mha.in_proj_bias, 0, 0.2)
    mha = mha.to(device)
    x = rng.standard_normal((3, 7, 16)).astype(np.float32)
    attn_mask = key_padding_mask = None
    if masks in ("causal_bool", "both"):
        attn_mask = np.triu(np.ones((7, 7), dtype=bool), 1)
    if masks == "float":
        attn_mask = rng.standard_normal((7, 7)).astype(np.float32)
    if masks in ("padding", "both"):
        key_padding_mask = np.zeros((3, 7), dtype=bool)
        key_padding_mask[1, 5:] = True
    t = lazyscope.tensor(x, device=device, requires_grad=True)
    dev = lambda a: None if a is None else lazyscope.tensor(a, device=device)  # noqa: E731
    out, weights = mha(t, t, t, attn_mask=dev(attn_mask), key_padding_mask=dev(key_padding_mask),
                       need_weights=False, is_causal=masks == "is_causal")
    assert weights is None
    want = mha_ref(x, mha, attn_mask, key_padding_mask, causal=masks == "is_causal")
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=2e-5)
    out.sum().backward()
    assert t.grad is not None and mha.in_proj_weight.grad is not None


@pytest.mark.parametrize("device", DEVICES)
def test_multihead_cross_attention_on_the_op_matches_numpy(device):
    """query, key and value different tensors (keys longer than queries): three in-projections."""
    lazyscope.manual_seed(6)
    mha = lazyscope.nn.MultiheadAttention(16, 2, batch_first=True)
    lazyscope.nn.init.normal_(mha.in_proj_bias, 0, 0.2)
    mha = mha.to(device)
    xq, xk, xv = (rng.standard_normal((2, length, 16)).astype(np.float32) for length in (5, 9, 9))
    pad = np.zeros((2, 9), dtype=bool)
    pad[0, 6:] = True
    tq, tk, tv = (lazyscope.tensor(x, device=device) for x in (xq, xk, xv))
    out, _ = mha(tq, tk, tv, key_padding_mask=lazyscope.tensor(pad, device=device), need_weights=False)
    w_in, b_in = mha.in_proj_weight.numpy().astype(np.float64), mha.in_proj_bias.numpy().astype(np.float64)
    q, k, v = ((x @ w.T + b).reshape(2, -1, 2, 8) for x, w, b in zip((xq, xk, xv), np.split(w_in, 3),
                                                                     np.split(b_in, 3)))
    att, _, _ = ref_forward(q, k, v, ~pad[:, None, None, :], 1 / math.sqrt(8), False)
    want = att.reshape(2, 5, 16) @ mha.out_proj.weight.numpy().T + mha.out_proj.bias.numpy()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=2e-5)


def test_multihead_attention_gradients_match_finite_differences():
    """float64: the fused path's input and parameter gradients against central differences of the
    NumPy reference (a few coordinates each)."""
    lazyscope.manual_seed(4)
    mha = lazyscope.nn.MultiheadAttention(8, 2, batch_first=True).to(dtype=lazyscope.float64)
    lazyscope.nn.init.normal_(mha.in_proj_bias, 0, 0.2)
    x = rng.standard_normal((2, 5, 8))
    mask = np.triu(np.ones((5, 5), dtype=bool), 1)
    w = rng.standard_normal((2, 5, 8))
    t = lazyscope.tensor(x, requires_grad=True)
    out, _ = mha(t, t, t, attn_mask=lazyscope.tensor(mask), need_weights=False)
    (out * lazyscope.tensor(w)).sum().backward()
    base_w = mha.in_proj_weight.numpy().copy()

    class View:  # mha_ref reads .numpy() of its parameters
        def __init__(self, **kw):
            self.__dict__.update(kw)

    def loss(x_, w_in):
        fake = View(in_proj_weight=View(numpy=lambda: w_in), in_proj_bias=mha.in_proj_bias,
                    out_proj=mha.out_proj, num_heads=2)
        return (mha_ref(x_, fake, attn_mask=mask) * w).sum()

    for idx in [(0, 0, 0), (1, 3, 5), (0, 4, 7)]:
        hi, lo = x.copy(), x.copy()
        hi[idx] += 1e-6
        lo[idx] -= 1e-6
        np.testing.assert_allclose(t.grad.numpy()[idx], (loss(hi, base_w) - loss(lo, base_w)) / 2e-6, rtol=1e-6)
    for idx in [(0, 0), (9, 3), (20, 7)]:  # a q, a k and a v row of in_proj
        hi, lo = base_w.copy(), base_w.copy()
        hi[idx] += 1e-6
        lo[idx] -= 1e-6
        np.testing.assert_allclose(mha.in_proj_weight.grad.numpy()[idx], (loss(x, hi) - loss(x, lo)) / 2e-6,
                                   rtol=1e-6)


def test_the_lazy_step_runs_attention_as_two_kernels():
    from lazyscope.core import lazy_model as lm

    dev = lm.lazy_device()
    lazyscope.manual_seed(5)
    mha = lazyscope.nn.MultiheadAttention(16, 2, batch_first=True).to(dev)
    x = rng.standard_normal((2, 8, 16)).astype(np.float32)
    mask = np.triu(np.ones((8, 8), dtype=bool), 1)

    def step():
        t = lazyscope.tensor(x, device=dev, requires_grad=True)
        out, _ = mha(t, t, t, attn_mask=lazyscope.tensor(mask, device=dev), need_weights=False)
        out.sum().backward()
        return out, t.grad

    (out, grad), program = run_graph(step, require_compile=True)
    kernels = [line.split("= ")[1].split("(")[0] for line in program.splitlines() if line.startswith("  %")
               and "parameter" not in line]
    assert kernels.count("attention") == 1 and kernels.count("attention_backward") == 1, program
    for gone in ("softmax", "permute", "cat"):  # cat: in_proj's gradient is one product of the packed q/k/v's
        assert gone not in kernels, program
    np.testing.assert_allclose(out, mha_ref(x, mha, attn_mask=mask), rtol=1e-4, atol=2e-5)


CHILD = r"""
import sys, numpy as np, lazyscope
from lazyscope import _C
r = np.random.default_rng(9)
q, k, v = (r.standard_normal((3, 70, 2, 24)).astype(np.float32) for _ in range(3))
mask = r.random((70, 70)) > 0.3
mask[:, 0] = True
res = {}
for dev in ("cpu", "lazy:0"):
    t = [lazyscope.tensor(x, device=dev, requires_grad=True) for x in (q, k, v)]
    out = _C.attention(*t, lazyscope.tensor(mask, device=dev), 0.3, True)
    out.sum().backward()
    res[dev] = [out.numpy().tolist()] + [x.grad.numpy().tolist() for x in t]
np.savez(sys.argv[1], q=q, k=k, v=v, mask=mask, **{f"{d}_{i}": np.array(a, np.float32)
                                                     for d in res for i, a in enumerate(res[d])})
"""


@pytest.mark.parametrize("threads", ["1", "2"])
def test_one_and_two_threads_match_numpy(threads, build_dir, tmp_path):
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS=threads, PYTHONPATH=str(build_dir / "python"))
    path = tmp_path / "out.npz"
    subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, check=True, timeout=120)
    z = np.load(path)
    q, k, v, mask = z["q"], z["k"], z["v"], z["mask"]
    want = [ref_forward(q, k, v, mask, 0.3, True)[0]]
    want += list(ref_backward(q, k, v, mask, 0.3, True, np.ones_like(want[0])))
    for dev in ("cpu", "lazy:0"):
        for i, w in enumerate(want):
            np.testing.assert_allclose(z[f"{dev}_{i}"], w, rtol=1e-3, atol=1e-4, err_msg=f"{dev} output {i}")
