"""conv2d, the 2-D pools, layer_norm and batch_norm on both devices. Values
are checked against direct NumPy loops written from PyTorch's documented
formulas (never the engine), gradients against central finite differences
of those NumPy forwards in float64 (test_autograd.check), and lazy results
against eager ones bit for bit."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(2024)


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


# --- NumPy references ---------------------------------------------------------

def conv2d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    (sh, sw), (ph, pw), (dh, dw) = pair(stride), pair(padding), pair(dilation)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.zeros((n, o, oh, ow), dtype=np.result_type(x, w))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out = out + b[None, :, None, None]
    return out


def pooled_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def max_pool2d_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    (kh, kw), (ph, pw), (dh, dw) = pair(kernel_size), pair(padding), pair(dilation)
    sh, sw = pair(stride if stride is not None else kernel_size)
    n, c, h, w = x.shape
    oh, ow = pooled_size(h, kh, sh, ph, dh, ceil_mode), pooled_size(w, kw, sw, pw, dw, ceil_mode)
    out = np.empty((n, c, oh, ow), dtype=x.dtype)
    for y in range(oh):
        for z in range(ow):
            rows = [y * sh - ph + i * dh for i in range(kh) if 0 <= y * sh - ph + i * dh < h]
            cols = [z * sw - pw + j * dw for j in range(kw) if 0 <= z * sw - pw + j * dw < w]
            out[:, :, y, z] = x[:, :, rows][:, :, :, cols].max(axis=(2, 3))
    return out


def avg_pool2d_ref(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                   divisor_override=None):
    """The mean of each window; the divisor counts the window's positions
    inside the padded image (count_include_pad) or inside the image."""
    (kh, kw), (ph, pw) = pair(kernel_size), pair(padding)
    sh, sw = pair(stride if stride is not None else kernel_size)
    n, c, h, w = x.shape
    oh, ow = pooled_size(h, kh, sh, ph, 1, ceil_mode), pooled_size(w, kw, sw, pw, 1, ceil_mode)
    out = np.empty((n, c, oh, ow), dtype=x.dtype)
    for y in range(oh):
        for z in range(ow):
            window_r = range(y * sh - ph, y * sh - ph + kh)
            window_c = range(z * sw - pw, z * sw - pw + kw)
            rows = [r for r in window_r if 0 <= r < h]
            cols = [q for q in window_c if 0 <= q < w]
            total = x[:, :, rows][:, :, :, cols].sum(axis=(2, 3))
            if divisor_override:
                count = divisor_override
            elif count_include_pad:
                count = sum(-ph <= r < h + ph for r in window_r) * sum(-pw <= q < w + pw for q in window_c)
            else:
                count = len(rows) * len(cols)
            out[:, :, y, z] = total / count
    return out


def adaptive_avg_pool2d_ref(x, output_size):
    oh, ow = pair(output_size)
    n, c, h, w = x.shape
    out = np.empty((n, c, oh, ow), dtype=x.dtype)
    for y in range(oh):
        for z in range(ow):
            r0, r1 = (y * h) // oh, math.ceil((y + 1) * h / oh)
            c0, c1 = (z * w) // ow, math.ceil((z + 1) * w / ow)
            out[:, :, y, z] = x[:, :, r0:r1, c0:c1].mean(axis=(2, 3))
    return out


def layer_norm_ref(x, k, weight=None, bias=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    out = (x - mu) / np.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def batch_norm_ref(x, mean, var, weight=None, bias=None, eps=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def batch_stats(x):
    axes = (0,) + tuple(range(2, x.ndim))
    return x.mean(axis=axes), x.var(axis=axes), x.var(axis=axes, ddof=1)


def both_devices(fn, *arrays):
    """fn on cpu and on lazy:0; asserts the two agree exactly and returns the cpu result."""
    results = [fn(*[lazyscope.tensor(a, device=d) for a in arrays]).numpy() for d in DEVICES]
    np.testing.assert_array_equal(results[0], results[1])
    return results[0]


# --- conv2d -------------------------------------------------------------------

CONV_CASES = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1)),
    dict(padding=2, dilation=2),
    dict(groups=2),
    dict(stride=2, padding=1, groups=4),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", CONV_CASES)
def test_conv2d_matches_numpy(dtype, kw):
    groups = kw.get("groups", 1)
    x = rng.standard_normal((2, 4, 9, 8)).astype(dtype)
    w = rng.standard_normal((8, 4 // groups, 3, 3)).astype(dtype)
    b = rng.standard_normal(8).astype(dtype)
    got = both_devices(lambda t, k, c: lazyscope.conv2d(t, k, c, **kw), x, w, b)
    want = conv2d_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **kw)
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_conv2d_1x1_unbatched_and_padding_strings(device):
    x = rng.standard_normal((3, 5, 6))
    w1 = rng.standard_normal((4, 3, 1, 1))
    got = lazyscope.conv2d(lazyscope.tensor(x, device=device), lazyscope.tensor(w1, device=device))
    assert got.shape == (4, 5, 6)
    np.testing.assert_allclose(got.numpy(), conv2d_ref(x[None], w1)[0], rtol=1e-12)
    w3 = rng.standard_normal((2, 3, 3, 5))
    tx, tw = lazyscope.tensor(x[None], device=device), lazyscope.tensor(w3, device=device)
    same = lazyscope.conv2d(tx, tw, padding="same")
    assert same.shape == (1, 2, 5, 6)
    np.testing.assert_allclose(same.numpy(), conv2d_ref(x[None], w3, padding=(1, 2)), rtol=1e-12)
    assert lazyscope.conv2d(tx, tw, padding="valid").shape == (1, 2, 3, 2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(padding=1, dilation=2, groups=2),
                                dict(stride=(1, 2), padding=(0, 1))])
def test_conv2d_gradients_match_finite_differences(device, kw):
    groups = kw.get("groups", 1)
    x = rng.standard_normal((2, 2, 5, 6))
    w = rng.standard_normal((4, 2 // groups, 3, 2))
    b = rng.standard_normal(4)
    check(lambda t, k, c: lazyscope.conv2d(t, k, c, **kw), lambda a, k, c: conv2d_ref(a, k, c, **kw), [x, w, b],
          device, rtol=1e-6, atol=1e-7)


def test_conv2d_1x1_gradients_match_finite_differences():
    check(lambda t, k: lazyscope.conv2d(t, k), lambda a, k: conv2d_ref(a, k),
          [rng.standard_normal((2, 3, 3, 4)), rng.standard_normal((2, 3, 1, 1))], "lazy:0")


def test_conv2d_lazy_gradients_equal_eager_and_stay_in_the_graph():
    x = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    grads = {}
    for device in DEVICES:
        tx = lazyscope.tensor(x, device=device, requires_grad=True)
        tw = lazyscope.tensor(w, device=device, requires_grad=True)
        lazyscope.conv2d(tx, tw, padding=1, stride=2).relu().sum().backward()
        grads[device] = (tx.grad.numpy(), tw.grad.numpy())
    for got, want in zip(grads["lazy:0"], grads["cpu"]):
        np.testing.assert_array_equal(got, want)


def test_a_lazy_conv_training_step_compiles_once():
    _C.clear_compile_cache()
    _C.reset_metrics()
    dev = lm.lazy_device()
    w = lazyscope.randn(4, 3, 3, 3, device=dev) * 0.1
    lm.mark_step()  # w's initialisation is its own graph
    _C.reset_metrics()
    for _ in range(4):
        x = lazyscope.randn(2, 3, 8, 8, device=dev)
        w.requires_grad_()
        loss = lazyscope.max_pool2d(lazyscope.conv2d(x, w, padding=1), 2).sum()
        loss.backward()
        w = (w - w.grad * 0.01).detach()
        lm.mark_step()
    counters = lm.counters()
    assert counters["UncachedCompile"] == 1
    assert counters["CachedCompile"] == 3


@pytest.mark.parametrize("call, message", [
    (lambda x, w: lazyscope.conv2d(x, w[:, :2]), "channels"),
    (lambda x, w: lazyscope.conv2d(x, w, groups=3), "groups"),
    (lambda x, w: lazyscope.conv2d(x[0, 0], w), "4-D"),
    (lambda x, w: lazyscope.conv2d(x, w, lazyscope.zeros(3)), "bias"),
    (lambda x, w: lazyscope.conv2d(x[:, :, :2, :2], w), "larger than the padded input"),
    (lambda x, w: lazyscope.conv2d(x, w, stride=0), "stride"),
])
def test_conv2d_bad_shapes_name_the_op_shapes_and_line(call, message):
    x = lazyscope.zeros(1, 4, 5, 5)
    w = lazyscope.zeros(6, 4, 3, 3)
    with pytest.raises(lazyscope.ShapeError) as info:
        call(x, w)
    text = str(info.value)
    assert "conv2d" in text and message in text and "test_conv_pool_norm.py:" in text


def test_conv2d_of_integers_is_refused():
    with pytest.raises(lazyscope.EngineError, match="conv2d: expected a floating point input"):
        lazyscope.conv2d(lazyscope.zeros(1, 1, 3, 3, dtype=lazyscope.int64),
                         lazyscope.zeros(1, 1, 2, 2, dtype=lazyscope.int64))


# --- pooling ------------------------------------------------------------------

MAX_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", MAX_CASES)
def test_max_pool2d_matches_numpy(dtype, kw):
    x = rng.standard_normal((2, 3, 7, 8)).astype(dtype)
    got = both_devices(lambda t: lazyscope.max_pool2d(t, **kw), x)
    want = max_pool2d_ref(x, **kw)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


def test_max_pool2d_known_values_and_nan():
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    np.testing.assert_array_equal(lazyscope.max_pool2d(lazyscope.tensor(x), 2).numpy(), [[[[5, 7], [13, 15]]]])
    # ceil_mode keeps a last, partial window: 5x5 -> 3x3 instead of 2x2.
    y = lazyscope.max_pool2d(lazyscope.tensor(np.arange(25.0).reshape(1, 1, 5, 5)), 2, ceil_mode=True)
    np.testing.assert_array_equal(y.numpy(), [[[[6, 8, 9], [16, 18, 19], [21, 23, 24]]]])
    x[0, 0, 0, 0] = np.nan
    assert np.isnan(lazyscope.max_pool2d(lazyscope.tensor(x), 2).numpy()[0, 0, 0, 0])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", MAX_CASES)
def test_max_pool2d_gradients_match_finite_differences(device, kw):
    # Distinct values a step apart, shuffled: finite differences never cross a tie.
    x = rng.permutation(2 * 2 * 7 * 8).reshape(2, 2, 7, 8) * 0.01
    check(lambda t: lazyscope.max_pool2d(t, **kw), lambda a: max_pool2d_ref(a, **kw), [x], device)


def test_max_pool2d_gradient_goes_to_the_first_of_tied_maxima():
    t = lazyscope.ones(1, 1, 2, 2, requires_grad=True)
    lazyscope.max_pool2d(t, 2).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [[[[1, 0], [0, 0]]]])


AVG_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, stride=1, divisor_override=3),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", AVG_CASES)
def test_avg_pool2d_matches_numpy(dtype, kw):
    x = rng.standard_normal((2, 3, 7, 8)).astype(dtype)
    got = both_devices(lambda t: lazyscope.avg_pool2d(t, **kw), x)
    want = avg_pool2d_ref(x.astype(np.float64), **kw)
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_avg_pool2d_padding_counts_as_pytorch_documents():
    ones = lazyscope.ones(1, 1, 3, 3)
    # The corner window of a 3x3 kernel with padding 1 holds 4 of 9 real ones.
    np.testing.assert_allclose(lazyscope.avg_pool2d(ones, 3, 1, 1).numpy()[0, 0, 0, 0], 4 / 9, rtol=1e-6)
    assert lazyscope.avg_pool2d(ones, 3, 1, 1, count_include_pad=False).numpy()[0, 0, 0, 0] == 1.0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", AVG_CASES)
def test_avg_pool2d_gradients_match_finite_differences(device, kw):
    x = rng.standard_normal((1, 2, 7, 6))
    check(lambda t: lazyscope.avg_pool2d(t, **kw), lambda a: avg_pool2d_ref(a, **kw), [x], device)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [1, (2, 3), (3, 5), (7, 8), (4, None)])
def test_adaptive_avg_pool2d_matches_numpy(dtype, size):
    x = rng.standard_normal((2, 3, 7, 8)).astype(dtype)
    got = both_devices(lambda t: lazyscope.adaptive_avg_pool2d(t, size), x)
    full = (size[0], 8) if isinstance(size, tuple) and size[1] is None else size
    want = adaptive_avg_pool2d_ref(x.astype(np.float64), full)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    if size == 1:  # global average pooling
        np.testing.assert_allclose(got[:, :, 0, 0], x.astype(np.float64).mean(axis=(2, 3)), rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", [1, (3, 4), (4, 5)])
def test_adaptive_avg_pool2d_gradients_match_finite_differences(device, size):
    x = rng.standard_normal((2, 2, 6, 7))
    check(lambda t: lazyscope.adaptive_avg_pool2d(t, size), lambda a: adaptive_avg_pool2d_ref(a, size), [x], device)


@pytest.mark.parametrize("device", DEVICES)
def test_pools_accept_unbatched_inputs(device):
    x = rng.standard_normal((3, 6, 5))
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_array_equal(lazyscope.max_pool2d(t, 2).numpy(), max_pool2d_ref(x[None], 2)[0])
    np.testing.assert_allclose(lazyscope.avg_pool2d(t, 2, 1).numpy(), avg_pool2d_ref(x[None], 2, 1)[0], rtol=1e-13)
    np.testing.assert_allclose(lazyscope.adaptive_avg_pool2d(t, 2).numpy(), adaptive_avg_pool2d_ref(x[None], 2)[0],
                               rtol=1e-13)


@pytest.mark.parametrize("call, error, message", [
    (lambda t: lazyscope.max_pool2d(t, 2, padding=2), lazyscope.ShapeError, "at most half of the kernel size"),
    (lambda t: lazyscope.max_pool2d(t, 7), lazyscope.ShapeError, "larger than the padded input"),
    (lambda t: lazyscope.avg_pool2d(t[0, 0], 2), lazyscope.ShapeError, "4-D"),
    (lambda t: lazyscope.avg_pool2d(t, 0), lazyscope.ShapeError, "kernel_size"),
    (lambda t: lazyscope.adaptive_avg_pool2d(t, 0), lazyscope.ShapeError, "output_size"),
])
def test_pool_errors_name_the_op_and_values(call, error, message):
    with pytest.raises(error) as info:
        call(lazyscope.zeros(1, 1, 4, 4))
    assert message in str(info.value)


# --- layer_norm / batch_norm --------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, k", [((4, 6), 1), ((2, 3, 5), 2), ((3, 4), 2)])
def test_layer_norm_matches_numpy(device, dtype, shape, k):
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(shape[-k:]).astype(dtype)
    b = rng.standard_normal(shape[-k:]).astype(dtype)
    t = lazyscope.tensor(x, device=device)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    got = lazyscope.layer_norm(t, list(shape[-k:]), lazyscope.tensor(w, device=device), lazyscope.tensor(b, device=device))
    assert got.dtype == t.dtype
    np.testing.assert_allclose(got.numpy(), layer_norm_ref(x64, k, w64, b64), rtol=tol, atol=tol)
    plain = lazyscope.layer_norm(t, shape[-1], eps=0.1)
    np.testing.assert_allclose(plain.numpy(), layer_norm_ref(x64, 1, eps=0.1), rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_layer_norm_gradients_match_finite_differences(device):
    x = rng.standard_normal((3, 2, 4))
    w = rng.standard_normal((2, 4))
    b = rng.standard_normal((2, 4))
    check(lambda t, g, c: lazyscope.layer_norm(t, [2, 4], g, c), lambda a, g, c: layer_norm_ref(a, 2, g, c),
          [x, w, b], device, rtol=1e-5, atol=1e-7)


# The layer_norm op's kernels (float64 here: finite differences) run rows in
# lanes of 32 with a tail: n = 3 (tail only), 32, 70 (two lanes of 32 and a
# tail of 6); weight and bias each there or not (the op's operand flags).
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n", [3, 32, 70])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_layer_norm_op_gradients_with_and_without_weight_and_bias(device, n, affine):
    x = rng.standard_normal((2, 3, n)) * 2 + 0.5
    params = [rng.standard_normal(n) for _ in range(affine.count("weight") + affine.count("bias") + 2 * (affine == "both"))]
    w = params[0] if affine in ("weight", "both") else None
    b = params[-1] if affine in ("bias", "both") else None

    def split(rest):
        it = iter(rest)
        return (next(it) if w is not None else None), (next(it) if b is not None else None)

    check(lambda t, *rest: lazyscope.layer_norm(t, [n], *split(rest)),
          lambda a, *rest: layer_norm_ref(a, 1, *split(rest)),
          [x] + [p for p in (w, b) if p is not None], device, rtol=1e-6, atol=1e-8)


# float32 rows summed in blocks of 256 (T lanes, then double): rows over
# several blocks with a tail, and a mean far from zero (1e3 with a spread
# of 1: the variance comes from the shifted values, not E[x^2] - mean^2).
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("n, offset", [(300, 0.0), (600, 1e3), (64, -50.0)])
def test_layer_norm_float32_long_and_offset_rows_match_float64(device, n, offset):
    x = (rng.standard_normal((5, n)) + offset).astype(np.float32)
    g = rng.standard_normal((5, n)).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    t = lazyscope.tensor(x, device=device, requires_grad=True)
    W = lazyscope.tensor(w, device=device, requires_grad=True)
    y = lazyscope.layer_norm(t, [n], W)
    (y * lazyscope.tensor(g, device=device)).sum().backward()
    x64 = x.astype(np.float64)
    mu, var = x64.mean(-1, keepdims=True), x64.var(-1, keepdims=True)
    xhat = (x64 - mu) / np.sqrt(var + 1e-5)
    # x - mean in float32 is off by up to half an ulp of the offset: that
    # much of xhat (the spread is 1), as in any float32 layer_norm.
    shift = 2 * float(np.spacing(np.float32(abs(offset))))
    np.testing.assert_allclose(y.numpy(), xhat * w, rtol=1e-4, atol=2e-5 + shift * np.abs(w).max())
    gw = g * w.astype(np.float64)
    dx = (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True)) / np.sqrt(var + 1e-5)
    np.testing.assert_allclose(t.grad.numpy(), dx, rtol=1e-3, atol=2e-4 + shift * np.abs(gw).max())
    np.testing.assert_allclose(W.grad.numpy(), (g * xhat).sum(0), rtol=1e-4, atol=2e-5 + shift * np.abs(g).sum(0).max())


def test_layer_norm_is_one_op_forward_and_one_backward_on_the_lazy_device():
    # The listing of the step: one layer_norm and one layer_norm_backward,
    # no mean/var composite (which gives the same values, slower).
    x = lazyscope.tensor(rng.standard_normal((4, 40)).astype(np.float32), device="lazy:0", requires_grad=True)
    w = lazyscope.tensor(rng.standard_normal(40).astype(np.float32), device="lazy:0", requires_grad=True)
    lazyscope.layer_norm(x, [40], w).sum().backward()
    text = lazyscope.debug.dump_graph([x.grad, w.grad])
    assert "layer_norm_backward" in text and "layer_norm_param_grads" in text and "var" not in text, text


def test_layer_norm_bad_normalized_shape_names_both_shapes():
    with pytest.raises(lazyscope.ShapeError, match=r"layer_norm: normalized_shape \[5\] does not match .*\[2, 4\]"):
        lazyscope.layer_norm(lazyscope.zeros(2, 4), [5])
    with pytest.raises(lazyscope.ShapeError, match="layer_norm: weight of shape"):
        lazyscope.layer_norm(lazyscope.zeros(2, 4), [4], lazyscope.ones(3))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5)])
def test_batch_norm_training_uses_batch_stats_and_updates_running_stats(device, shape):
    x = rng.standard_normal(shape) * 2 + 0.5
    w, b = rng.standard_normal(3), rng.standard_normal(3)
    rm0, rv0 = rng.standard_normal(3), np.abs(rng.standard_normal(3)) + 0.5
    rm, rv = lazyscope.tensor(rm0, device=device), lazyscope.tensor(rv0, device=device)
    keep_mean = rm  # another reference to the same tensor sees the update, as a module buffer does
    out = lazyscope.batch_norm(lazyscope.tensor(x, device=device), rm, rv, lazyscope.tensor(w, device=device),
                               lazyscope.tensor(b, device=device), training=True, momentum=0.3, eps=1e-3)
    mean, biased, unbiased = batch_stats(x)
    np.testing.assert_allclose(out.numpy(), batch_norm_ref(x, mean, biased, w, b, 1e-3), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(keep_mean.numpy(), 0.7 * rm0 + 0.3 * mean, rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.7 * rv0 + 0.3 * unbiased, rtol=1e-12)
    # Eval mode normalizes with the (updated) running stats.
    ev = lazyscope.batch_norm(lazyscope.tensor(x, device=device), rm, rv, training=False)
    np.testing.assert_allclose(ev.numpy(), batch_norm_ref(x, 0.7 * rm0 + 0.3 * mean, 0.7 * rv0 + 0.3 * unbiased),
                               rtol=1e-10, atol=1e-12)


def test_batch_norm_running_stats_update_lazily_across_steps_without_recompiling():
    _C.clear_compile_cache()
    _C.reset_metrics()
    dev = "lazy:0"
    rm, rv = lazyscope.zeros(3, device=dev, dtype=lazyscope.float64), lazyscope.ones(3, device=dev, dtype=lazyscope.float64)
    want_m, want_v = np.zeros(3), np.ones(3)
    for _ in range(4):
        x = rng.standard_normal((5, 3, 2))
        lazyscope.batch_norm(lazyscope.tensor(x, device=dev), rm, rv, training=True)
        lm.mark_step()
        mean, _, unbiased = batch_stats(x)
        want_m, want_v = 0.9 * want_m + 0.1 * mean, 0.9 * want_v + 0.1 * unbiased
    np.testing.assert_allclose(rm.numpy(), want_m, rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), want_v, rtol=1e-12)
    assert lm.counters()["UncachedCompile"] == 1


@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_without_running_stats_uses_batch_stats(device):
    x = rng.standard_normal((4, 2, 3))
    mean, biased, _ = batch_stats(x)
    got = lazyscope.batch_norm(lazyscope.tensor(x, device=device), None, None, training=False)
    np.testing.assert_allclose(got.numpy(), batch_norm_ref(x, mean, biased), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradients_match_finite_differences(device, training):
    x = rng.standard_normal((3, 2, 2, 2))
    w, b = rng.standard_normal(2), rng.standard_normal(2)
    rm, rv = rng.standard_normal(2), np.abs(rng.standard_normal(2)) + 0.5

    def ref(a, g, c):
        mean, var = (batch_stats(a)[:2]) if training else (rm, rv)
        return batch_norm_ref(a, mean, var, g, c)

    check(lambda t, g, c: lazyscope.batch_norm(t, lazyscope.tensor(rm, device=device), lazyscope.tensor(rv, device=device),
                                               g, c, training=training),
          ref, [x, w, b], device, rtol=1e-5, atol=1e-7)


def test_batch_norm_errors():
    with pytest.raises(lazyscope.ShapeError, match=r"batch_norm: running_mean of shape \[4\] does not match \[3\]"):
        lazyscope.batch_norm(lazyscope.zeros(2, 3), lazyscope.zeros(4), lazyscope.ones(4))
    with pytest.raises(lazyscope.EngineError, match="more than 1 value per channel"):
        lazyscope.batch_norm(lazyscope.zeros(1, 3), lazyscope.zeros(3), lazyscope.ones(3), training=True)
    with pytest.raises(lazyscope.ShapeError, match="at least 2 dims"):
        lazyscope.batch_norm(lazyscope.zeros(3), None, None)


# --- embedding's padding_idx (the op lives in test_nn_ops; these cover the edges) ---

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("padding_idx", [2, -1])
def test_embedding_padding_row_keeps_its_value_but_gets_no_gradient(device, padding_idx):
    w = rng.standard_normal((5, 3))
    idx = np.array([[0, 4, 2], [4, 4, 1]])
    pad = padding_idx % 5
    weight = lazyscope.tensor(w, device=device, requires_grad=True)
    out = lazyscope.embedding(lazyscope.tensor(idx, device=device), weight, padding_idx=padding_idx)
    np.testing.assert_array_equal(out.numpy(), w[idx])  # the forward reads the padding row as is
    g = rng.standard_normal((2, 3, 3))
    (out * lazyscope.tensor(g, device=device)).sum().backward()
    want = np.zeros_like(w)
    np.add.at(want, idx.ravel(), g.reshape(-1, 3))
    want[pad] = 0
    np.testing.assert_allclose(weight.grad.numpy(), want, rtol=1e-12, atol=1e-15)


def test_embedding_max_norm_is_refused_by_name():
    with pytest.raises(lazyscope.EngineError, match="embedding: max_norm"):
        lazyscope.embedding(lazyscope.tensor([0]), lazyscope.zeros(2, 2), max_norm=1.0)
