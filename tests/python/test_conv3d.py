"""conv3d, conv_transpose3d and the 3-D pools on both devices. Values are
checked against NumPy float64 references written here from PyTorch's
documented formulas (einsum over strided patches, loops over windows: never
the engine); gradients against central finite differences of those NumPy
forwards in float64 (test_autograd.check), and the float32 gradients (the
oneDNN path) against the references' adjoints written out in NumPy."""
import numpy as np
import pytest

import lazyscope
from lazyscope import nn
from lazyscope.nn import functional as F
from lazyscope.core import lazy_model as lm
from test_autograd import check
from test_op_coverage_gaps import HALF_DTYPES, check_half

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(3003)


def triple(v):
    return (v,) * 3 if isinstance(v, int) else tuple(v)


# --- NumPy references ---------------------------------------------------------

def out_size(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def patch(xp, taps, stride, dilation, out):
    """xp[..., window tap `taps` of every output position]: a strided view of the padded input."""
    sl = [slice(t * d, t * d + s * (o - 1) + 1, s) for t, s, d, o in zip(taps, stride, dilation, out)]
    return xp[(Ellipsis, *sl)]


def conv3d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    stride, padding, dilation = triple(stride), triple(padding), triple(dilation)
    n, c = x.shape[:2]
    o, cg = w.shape[:2]
    k = w.shape[2:]
    out = tuple(out_size(x.shape[2 + i], k[i], stride[i], padding[i], dilation[i]) for i in range(3))
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    y = np.zeros((n, o) + out, dtype=np.result_type(x, w))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for taps in np.ndindex(*k):
            y[:, g * og:(g + 1) * og] += np.einsum("ncdhw,oc->nodhw", patch(xs, taps, stride, dilation, out),
                                                   w[(slice(g * og, (g + 1) * og), slice(None)) + taps])
    return y if b is None else y + b[None, :, None, None, None]


def conv3d_input_adjoint(gy, w, size, stride=1, padding=0, dilation=1, groups=1):
    """The adjoint of conv3d_ref in its input (for an input of spatial `size`): each output gradient
    scattered back onto the window it read. With a larger `size` (output_padding) it is conv_transpose3d."""
    stride, padding, dilation = triple(stride), triple(padding), triple(dilation)
    n, o = gy.shape[:2]
    cg = w.shape[1]
    k = w.shape[2:]
    out = gy.shape[2:]
    dxp = np.zeros((n, cg * groups) + tuple(s + 2 * p for s, p in zip(size, padding)), dtype=np.float64)
    og = o // groups
    for g in range(groups):
        for taps in np.ndindex(*k):
            view = patch(dxp[:, g * cg:(g + 1) * cg], taps, stride, dilation, out)
            view += np.einsum("nodhw,oc->ncdhw", gy[:, g * og:(g + 1) * og],
                              w[(slice(g * og, (g + 1) * og), slice(None)) + taps])
    return dxp[(slice(None), slice(None)) + tuple(slice(p, p + s) for p, s in zip(padding, size))]


def conv3d_weight_adjoint(x, gy, k, stride=1, padding=0, dilation=1, groups=1):
    stride, padding, dilation = triple(stride), triple(padding), triple(dilation)
    o = gy.shape[1]
    cg = x.shape[1] // groups
    og = o // groups
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    dw = np.zeros((o, cg) + tuple(k))
    for g in range(groups):
        for taps in np.ndindex(*k):
            dw[(slice(g * og, (g + 1) * og), slice(None)) + taps] = np.einsum(
                "nodhw,ncdhw->oc", gy[:, g * og:(g + 1) * og],
                patch(xp[:, g * cg:(g + 1) * cg], taps, stride, dilation, gy.shape[2:]))
    return dw


def conv_transpose3d_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    stride, padding, dilation, output_padding = triple(stride), triple(padding), triple(dilation), \
        triple(output_padding)
    size = tuple((x.shape[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w.shape[2 + i] - 1)
                 + output_padding[i] + 1 for i in range(3))
    # conv_transpose3d's weight [C_in, C_out/groups, k...] is the conv3d weight [O, C/groups, k...] whose
    # input gradient it computes: the conv maps size -> x.shape[2:], with O = C_in.
    y = conv3d_input_adjoint(x, w, size, stride, padding, dilation, groups)
    return y if b is None else y + b[None, :, None, None, None]


def pooled_size(size, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def max_pool3d_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    k, p, d = triple(kernel_size), triple(padding), triple(dilation)
    s = triple(stride if stride is not None else kernel_size)
    size = x.shape[2:]
    out = tuple(pooled_size(size[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3))
    y = np.empty(x.shape[:2] + out, dtype=x.dtype)
    for pos in np.ndindex(*out):
        idx = [[pos[i] * s[i] - p[i] + t * d[i] for t in range(k[i]) if 0 <= pos[i] * s[i] - p[i] + t * d[i] < size[i]]
               for i in range(3)]
        y[(slice(None), slice(None)) + pos] = x[np.ix_(range(x.shape[0]), range(x.shape[1]), *idx)].max(axis=(2, 3, 4))
    return y


def avg_pool3d_ref(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                   divisor_override=None):
    """The mean of each window; the divisor counts the window's positions inside the padded input
    (count_include_pad) or inside the input, or is divisor_override."""
    k, p = triple(kernel_size), triple(padding)
    s = triple(stride if stride is not None else kernel_size)
    size = x.shape[2:]
    out = tuple(pooled_size(size[i], k[i], s[i], p[i], 1, ceil_mode) for i in range(3))
    y = np.empty(x.shape[:2] + out, dtype=x.dtype)
    for pos in np.ndindex(*out):
        inside, padded = [], 1
        for i in range(3):
            lo = pos[i] * s[i] - p[i]
            hi = min(lo + k[i], size[i] + p[i])
            padded *= hi - lo
            inside.append(range(max(lo, 0), min(hi, size[i])))
        window = x[np.ix_(range(x.shape[0]), range(x.shape[1]), *inside)]
        count = divisor_override or (padded if count_include_pad else window[0, 0].size)
        y[(slice(None), slice(None)) + pos] = window.sum(axis=(2, 3, 4)) / count
    return y


def adaptive_avg_pool3d_ref(x, output_size):
    out = triple(output_size)
    size = x.shape[2:]
    y = np.empty(x.shape[:2] + out, dtype=x.dtype)
    for pos in np.ndindex(*out):
        win = tuple(slice(pos[i] * size[i] // out[i], -(-(pos[i] + 1) * size[i] // out[i])) for i in range(3))
        y[(slice(None), slice(None)) + pos] = x[(slice(None), slice(None)) + win].mean(axis=(2, 3, 4))
    return y


def both_devices(fn, *arrays):
    """fn on cpu and on lazy:0; asserts the two agree exactly and returns the cpu result."""
    results = [fn(*[lazyscope.tensor(a, device=d) for a in arrays]).numpy() for d in DEVICES]
    np.testing.assert_array_equal(results[0], results[1])
    return results[0]


def test_the_references_agree_with_each_other():
    """The reference adjoints are the adjoints of the reference forward: <conv(x), g> = <x, A g>."""
    x = rng.standard_normal((2, 4, 5, 6, 4))
    w = rng.standard_normal((6, 2, 3, 2, 3))
    kw = dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)
    y = conv3d_ref(x, w, **kw)
    g = rng.standard_normal(y.shape)
    np.testing.assert_allclose(np.vdot(y, g), np.vdot(x, conv3d_input_adjoint(g, w, x.shape[2:], **kw)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.vdot(y, g), np.vdot(w, conv3d_weight_adjoint(x, g, w.shape[2:], **kw)),
                               rtol=1e-12, atol=1e-12)


# --- conv3d -------------------------------------------------------------------

CONV_CASES = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(stride=(2, 1, 2), padding=(1, 2, 0), dilation=(2, 1, 1)),
    dict(padding=2, dilation=2),
    dict(groups=2),
    dict(stride=2, padding=1, groups=4),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", CONV_CASES)
def test_conv3d_matches_numpy(dtype, kw, bias):
    groups = kw.get("groups", 1)
    x = rng.standard_normal((2, 4, 7, 6, 5)).astype(dtype)
    w = rng.standard_normal((8, 4 // groups, 3, 3, 2)).astype(dtype)
    b = rng.standard_normal(8).astype(dtype) if bias else None
    if bias:
        got = both_devices(lambda t, k, c: lazyscope.conv3d(t, k, c, **kw), x, w, b)
    else:
        got = both_devices(lambda t, k: lazyscope.conv3d(t, k, **kw), x, w)
    want = conv3d_ref(x.astype(np.float64), w.astype(np.float64), None if b is None else b.astype(np.float64), **kw)
    assert got.dtype == dtype and got.shape == want.shape
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_conv3d_unbatched_and_padding_strings(device):
    x = rng.standard_normal((3, 5, 6, 4))
    w = rng.standard_normal((2, 3, 3, 5, 1))
    tx, tw = lazyscope.tensor(x, device=device), lazyscope.tensor(w, device=device)
    got = lazyscope.conv3d(tx, tw)
    assert got.shape == (2, 3, 2, 4)
    np.testing.assert_allclose(got.numpy(), conv3d_ref(x[None], w)[0], rtol=1e-12, atol=1e-12)
    same = lazyscope.nn.functional.conv3d(tx, tw, padding="same")
    assert same.shape == (2, 5, 6, 4)
    np.testing.assert_allclose(same.numpy(), conv3d_ref(x[None], w, padding=(1, 2, 0))[0], rtol=1e-12, atol=1e-12)
    assert lazyscope.conv3d(tx, tw, padding="valid").shape == (2, 3, 2, 4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1), dict(padding=1, dilation=2, groups=2),
                                dict(stride=(1, 2, 1), padding=(0, 1, 1))])
def test_conv3d_gradients_match_finite_differences(device, kw):
    groups = kw.get("groups", 1)
    x = rng.standard_normal((2, 2, 5, 4, 5))
    w = rng.standard_normal((4, 2 // groups, 3, 2, 2))
    b = rng.standard_normal(4)
    check(lambda t, k, c: lazyscope.conv3d(t, k, c, **kw), lambda a, k, c: conv3d_ref(a, k, c, **kw), [x, w, b],
          device, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("channels, kw", [
    (4, dict()), (4, dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1), groups=2)),
    (1, dict(padding=1)), (3, dict(stride=2, padding=(0, 1, 2))), (18, dict(padding=1, groups=3))])
def test_conv3d_float32_gradients_match_the_numpy_adjoints(device, channels, kw):
    """The float32 gradients (oneDNN's backward primitives) against the adjoints written out in NumPy."""
    x = rng.standard_normal((3, channels, 6, 7, 5)).astype(np.float32)
    w = rng.standard_normal((6, channels // kw.get("groups", 1), 3, 2, 3)).astype(np.float32)
    tx = lazyscope.tensor(x, device=device, requires_grad=True)
    tw = lazyscope.tensor(w, device=device, requires_grad=True)
    y = lazyscope.conv3d(tx, tw, **kw)
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    (y * lazyscope.tensor(g, device=device)).sum().backward()
    x64, w64, g64 = x.astype(np.float64), w.astype(np.float64), g.astype(np.float64)
    np.testing.assert_allclose(tx.grad.numpy(), conv3d_input_adjoint(g64, w64, x.shape[2:], **kw),
                               rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(tw.grad.numpy(), conv3d_weight_adjoint(x64, g64, w.shape[2:], **kw),
                               rtol=2e-5, atol=1e-4)


def test_conv3d_lazy_gradients_equal_eager():
    x = rng.standard_normal((2, 3, 5, 7, 6)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3, 3)).astype(np.float32)
    grads = {}
    for device in DEVICES:
        tx = lazyscope.tensor(x, device=device, requires_grad=True)
        tw = lazyscope.tensor(w, device=device, requires_grad=True)
        lazyscope.conv3d(tx, tw, padding=1, stride=2).relu().sum().backward()
        grads[device] = (tx.grad.numpy(), tw.grad.numpy())
    for got, want in zip(grads["lazy:0"], grads["cpu"]):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("call, message", [
    (lambda x, w: lazyscope.conv3d(x, w[:, :2]), "channels"),
    (lambda x, w: lazyscope.conv3d(x, w, groups=4), "groups"),
    (lambda x, w: lazyscope.conv3d(x[0, 0], w), "5-D"),
    (lambda x, w: lazyscope.conv3d(x, w[..., 0]), "5-D weight"),
    (lambda x, w: lazyscope.conv3d(x, w, lazyscope.zeros(3)), "bias"),
    (lambda x, w: lazyscope.conv3d(x[:, :, :2], w), "larger than the padded input"),
    (lambda x, w: lazyscope.conv3d(x, w, stride=0), "stride"),
    (lambda x, w: lazyscope.conv3d(x, w, stride=(1, 0, 1)), "stride"),
])
def test_conv3d_bad_shapes_name_the_op_shapes_and_line(call, message):
    x = lazyscope.zeros(1, 4, 5, 5, 5)
    w = lazyscope.zeros(6, 4, 3, 3, 3)
    with pytest.raises(lazyscope.ShapeError) as info:
        call(x, w)
    text = str(info.value)
    assert "conv3d" in text and message in text and "test_conv3d.py:" in text


def test_conv3d_argument_errors():
    x, w = lazyscope.zeros(1, 2, 4, 4, 4), lazyscope.zeros(2, 2, 3, 3, 3)
    with pytest.raises(TypeError, match=r"conv3d: stride must be an int or a triple of ints, got \(1, 2\)"):
        lazyscope.conv3d(x, w, stride=(1, 2))
    with pytest.raises(ValueError, match="conv3d: padding='same' is not supported for strided convolutions"):
        lazyscope.conv3d(x, w, padding="same", stride=2)
    with pytest.raises(ValueError, match="conv3d: invalid padding string 'full'"):
        lazyscope.conv3d(x, w, padding="full")
    with pytest.raises(lazyscope.EngineError, match=r"conv3d: padding='same' with kernel \[3, 3, 2\]"):
        lazyscope.conv3d(x, lazyscope.zeros(2, 2, 3, 3, 2), padding="same")
    with pytest.raises(lazyscope.EngineError, match="conv3d: expected a floating point input"):
        lazyscope.conv3d(lazyscope.zeros(1, 1, 3, 3, 3, dtype=lazyscope.int64),
                         lazyscope.zeros(1, 1, 2, 2, 2, dtype=lazyscope.int64))


# --- conv_transpose3d -----------------------------------------------------------

CONV_T_CASES = [
    dict(),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(2, 1, 3), padding=(0, 1, 1), output_padding=(1, 0, 2), dilation=(1, 2, 1), groups=2),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", CONV_T_CASES)
def test_conv_transpose3d_matches_numpy(dtype, kw):
    x = rng.standard_normal((2, 4, 3, 4, 3)).astype(dtype)
    w = rng.standard_normal((4, 3, 3, 2, 2)).astype(dtype)
    b = rng.standard_normal(3 * kw.get("groups", 1)).astype(dtype)
    got = both_devices(lambda t, k, c: lazyscope.conv_transpose3d(t, k, c, **kw), x, w, b)
    want = conv_transpose3d_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **kw)
    assert got.dtype == dtype and got.shape == want.shape
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", CONV_T_CASES)
def test_conv_transpose3d_gradients_match_finite_differences(device, kw):
    x = rng.standard_normal((1, 2, 3, 2, 3))
    w = rng.standard_normal((2, 2, 2, 3, 2))
    b = rng.standard_normal(2 * kw.get("groups", 1))
    check(lambda t, k, c: lazyscope.conv_transpose3d(t, k, c, **kw),
          lambda a, k, c: conv_transpose3d_ref(a, k, c, **kw), [x, w, b], device, rtol=1e-6, atol=1e-7)


def test_conv_transpose3d_bad_output_padding_names_the_op():
    with pytest.raises(lazyscope.ShapeError, match="conv_transpose3d: output_padding"):
        lazyscope.conv_transpose3d(lazyscope.zeros(1, 2, 3, 3, 3), lazyscope.zeros(2, 2, 2, 2, 2), output_padding=1)


# --- pooling ------------------------------------------------------------------

MAX_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1)),
    dict(kernel_size=2, stride=2, ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", MAX_CASES)
def test_max_pool3d_matches_numpy(dtype, kw):
    x = rng.standard_normal((2, 3, 5, 7, 6)).astype(dtype)
    got = both_devices(lambda t: lazyscope.max_pool3d(t, **kw), x)
    want = max_pool3d_ref(x, **kw)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_max_pool3d_propagates_nan_and_sends_the_gradient_to_the_first_tied_maximum():
    x = np.zeros((1, 1, 2, 2, 2))
    x[0, 0, 1, 0, 1] = np.nan
    assert np.isnan(lazyscope.max_pool3d(lazyscope.tensor(x), 2).numpy()).all()
    t = lazyscope.tensor(np.ones((1, 1, 2, 2, 2)), requires_grad=True)
    lazyscope.max_pool3d(t, 2).sum().backward()
    want = np.zeros((1, 1, 2, 2, 2))
    want[0, 0, 0, 0, 0] = 1
    np.testing.assert_array_equal(t.grad.numpy(), want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", MAX_CASES)
def test_max_pool3d_gradients_match_finite_differences(device, kw):
    check(lambda t: lazyscope.max_pool3d(t, **kw), lambda a: max_pool3d_ref(a, **kw),
          [rng.standard_normal((2, 2, 5, 4, 5))], device)


AVG_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2, 3), stride=(1, 2, 2), padding=(1, 1, 0), ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, stride=1, divisor_override=3),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", AVG_CASES)
def test_avg_pool3d_matches_numpy(dtype, kw):
    x = rng.standard_normal((2, 3, 5, 7, 6)).astype(dtype)
    got = both_devices(lambda t: lazyscope.avg_pool3d(t, **kw), x)
    want = avg_pool3d_ref(x.astype(np.float64), **kw)
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", AVG_CASES)
def test_avg_pool3d_gradients_match_finite_differences(device, kw):
    check(lambda t: lazyscope.avg_pool3d(t, **kw), lambda a: avg_pool3d_ref(a, **kw),
          [rng.standard_normal((2, 2, 5, 4, 5))], device)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [1, (2, 3, 1), (3, 5, 4), (5, 7, 6), (4, 6, 9)])
def test_adaptive_avg_pool3d_matches_numpy(dtype, size):
    x = rng.standard_normal((2, 3, 5, 7, 6)).astype(dtype)
    got = both_devices(lambda t: lazyscope.adaptive_avg_pool3d(t, size), x)
    want = adaptive_avg_pool3d_ref(x.astype(np.float64), size)
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("size", [1, (3, 2, 4), (4, 5, 3)])
def test_adaptive_avg_pool3d_gradients_match_finite_differences(device, size):
    check(lambda t: lazyscope.adaptive_avg_pool3d(t, size), lambda a: adaptive_avg_pool3d_ref(a, size),
          [rng.standard_normal((2, 2, 5, 4, 5))], device)


@pytest.mark.parametrize("device", DEVICES)
def test_pools_accept_unbatched_inputs_and_none_sizes(device):
    x = rng.standard_normal((3, 4, 6, 5))
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_array_equal(lazyscope.max_pool3d(t, 2).numpy(), max_pool3d_ref(x[None], 2)[0])
    np.testing.assert_allclose(lazyscope.avg_pool3d(t, 2).numpy(), avg_pool3d_ref(x[None], 2)[0], rtol=1e-13, atol=1e-13)
    got = lazyscope.adaptive_avg_pool3d(t, (2, None, 3))
    assert got.shape == (3, 2, 6, 3)
    np.testing.assert_allclose(got.numpy(), adaptive_avg_pool3d_ref(x[None], (2, 6, 3))[0], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("call, error, message", [
    (lambda x: lazyscope.max_pool3d(x[0, 0], 2), lazyscope.ShapeError, "max_pool3d: expected a 4-D [C, D, H, W] or "
                                                                       "5-D [N, C, D, H, W] input, got [4, 5, 6]"),
    (lambda x: lazyscope.max_pool3d(x, 2, padding=2), lazyscope.ShapeError,
     "max_pool3d: padding [2, 2, 2] should be at most half of the kernel size [2, 2, 2]"),
    (lambda x: lazyscope.avg_pool3d(x, 7), lazyscope.ShapeError, "avg_pool3d: kernel [7, 7, 7] is larger than the "
                                                                 "padded input of shape [1, 2, 4, 5, 6]"),
    (lambda x: lazyscope.avg_pool3d(x, 2, divisor_override=0), lazyscope.EngineError,
     "avg_pool3d: divisor_override must be non-zero"),
    (lambda x: lazyscope.max_pool3d(x, (2, 2)), TypeError, "max_pool3d: kernel_size must be an int or a triple"),
    (lambda x: lazyscope.adaptive_avg_pool3d(x, (2, 2)), TypeError, "adaptive_avg_pool3d: output_size must be"),
    (lambda x: lazyscope.adaptive_avg_pool3d(x, 0), lazyscope.ShapeError, "adaptive_avg_pool3d: output_size must "
                                                                          "be three values >= 1"),
])
def test_pool3d_errors_name_the_op_and_values(call, error, message):
    x = lazyscope.zeros(1, 2, 4, 5, 6)
    with pytest.raises(error) as info:
        call(x)
    assert message in str(info.value)


# --- modules ------------------------------------------------------------------

def test_conv3d_module_has_pytorchs_parameters_and_init():
    lazyscope.manual_seed(0)
    conv = nn.Conv3d(4, 6, (3, 2, 5), stride=2, padding=1, groups=2)
    assert tuple(conv.weight.shape) == (6, 2, 3, 2, 5) and tuple(conv.bias.shape) == (6,)
    fan_in = 2 * 3 * 2 * 5
    # kaiming_uniform(a=sqrt(5)) gives a bound of 1/sqrt(fan_in), as does the bias's.
    bound = 1 / np.sqrt(fan_in)
    w, b = conv.weight.numpy(), conv.bias.numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(b).max() <= bound
    assert nn.Conv3d(2, 2, 1, bias=False).bias is None
    assert "Conv3d(4, 6, kernel_size=(3, 2, 5), stride=(2, 2, 2), padding=(1, 1, 1), groups=2)" == repr(conv)
    with pytest.raises(ValueError, match="Conv3d: padding_mode must be one of"):
        nn.Conv3d(2, 2, 3, padding_mode="mirror")
    # A padding_mode other than zeros pads with np.pad's mode first.
    reflect = nn.Conv3d(2, 3, 3, padding=1, padding_mode="reflect", dtype=lazyscope.float64)
    x = np.random.default_rng(9).standard_normal((1, 2, 4, 5, 4))
    want = conv3d_ref(np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1), (1, 1)], mode="reflect"),
                      reflect.weight.detach().numpy(), reflect.bias.detach().numpy())
    np.testing.assert_allclose(reflect(lazyscope.tensor(x)).detach().numpy(), want, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="Conv3d: in_channels"):
        nn.Conv3d(3, 2, 3, groups=2)


@pytest.mark.parametrize("device", DEVICES)
def test_3d_modules_match_the_functional_references(device):
    x = rng.standard_normal((2, 3, 6, 5, 7))
    conv = nn.Conv3d(3, 4, 3, padding=1).to(lazyscope.float64).to(device)
    t = lazyscope.tensor(x, device=device)
    want = conv3d_ref(x, conv.weight.numpy(), conv.bias.numpy(), padding=1)
    np.testing.assert_allclose(conv(t).numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(nn.MaxPool3d(2, ceil_mode=True)(t).numpy(), max_pool3d_ref(x, 2, ceil_mode=True))
    np.testing.assert_allclose(nn.AvgPool3d(3, 2, 1, count_include_pad=False)(t).numpy(),
                               avg_pool3d_ref(x, 3, 2, 1, count_include_pad=False), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(nn.AdaptiveAvgPool3d((1, 2, 3))(t).numpy(), adaptive_avg_pool3d_ref(x, (1, 2, 3)),
                               rtol=1e-13, atol=1e-13)
    up = nn.ConvTranspose3d(3, 2, 2, stride=2).to(lazyscope.float64).to(device)
    out = up(t, output_size=(13, 11, 15))
    np.testing.assert_allclose(out.numpy(), conv_transpose3d_ref(x, up.weight.numpy(), up.bias.numpy(), stride=2,
                                                                 output_padding=1), rtol=1e-12, atol=1e-12)


def test_a_lazy_conv3d_training_step_compiles_once():
    lazyscope._C.clear_compile_cache()
    dev = lm.lazy_device()
    w = lazyscope.randn(4, 3, 3, 3, 3, device=dev) * 0.1
    lm.mark_step()  # w's initialisation is its own graph
    lazyscope._C.reset_metrics()
    for _ in range(4):
        x = lazyscope.randn(2, 3, 5, 8, 8, device=dev)
        w.requires_grad_()
        loss = lazyscope.avg_pool3d(lazyscope.max_pool3d(lazyscope.conv3d(x, w, padding=1), 2), 2).sum()
        loss.backward()
        w = (w - w.grad * 0.01).detach()
        lm.mark_step()
    counters = lm.counters()
    assert counters["UncachedCompile"] == 1
    assert counters["CachedCompile"] == 3


def small_cnn():
    return nn.Sequential(
        nn.Conv3d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2),
        nn.Conv3d(4, 6, (3, 2, 2), stride=(1, 2, 1), padding=(1, 0, 1), groups=2), nn.ReLU(),
        nn.AvgPool3d(2, ceil_mode=True), nn.AdaptiveAvgPool3d(1), nn.Flatten(), nn.Linear(6, 3))


def train(device, steps=4):
    lazyscope.manual_seed(11)
    model = small_cnn().to(device)
    opt = lazyscope.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    data = np.random.default_rng(5)
    losses = []
    for _ in range(steps):
        x = lazyscope.tensor(data.standard_normal((4, 2, 6, 8, 7)).astype(np.float32), device=device)
        y = lazyscope.tensor(data.integers(0, 3, 4), device=device)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if device != "cpu":
            lm.mark_step()
        losses.append(float(loss.item()))
    return losses


def test_a_small_3d_cnn_trains_the_same_on_both_devices():
    eager, lazy = train("cpu"), train("lazy:0")
    assert eager == lazy
    assert eager[-1] < eager[0]


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_conv3d_and_pools_on_16_bit_floats_match_numpy(dtype):
    """float16 and bfloat16 run in float32 (as the 2-D ops) and round once."""
    x = rng.standard_normal((2, 2, 5, 6, 4))
    w = rng.standard_normal((3, 2, 3, 3, 2))
    check_half(dtype, lambda t, k: lazyscope.conv3d(t, k, padding=1), lambda a, k: conv3d_ref(a, k, padding=1), [x, w],
               ulps=2)
    check_half(dtype, lambda t: lazyscope.max_pool3d(t, 2), lambda a: max_pool3d_ref(a, 2), [x])
    check_half(dtype, lambda t: lazyscope.avg_pool3d(t, 3, 2, 1), lambda a: avg_pool3d_ref(a, 3, 2, 1), [x])
    check_half(dtype, lambda t: lazyscope.adaptive_avg_pool3d(t, (2, 3, 1)),
               lambda a: adaptive_avg_pool3d_ref(a, (2, 3, 1)), [x])


@pytest.mark.parametrize("device", DEVICES)
def test_conv3d_and_3d_pooling_differentiate_twice(device):
    """create_graph through conv3d and avg/max pooling (windows that do not
    overlap): d/dx <dE/dw, v> against differences of the NumPy references."""
    from lazyscope import autograd
    rng = np.random.default_rng(12)
    x0, w0 = rng.standard_normal((1, 1, 5, 5, 5)), rng.standard_normal((2, 1, 2, 2, 2))
    v = rng.standard_normal(w0.shape)
    for pool_np, pool in ((lambda y: avg_pool3d_ref(y, 2), lambda y: F.avg_pool3d(y, 2)),
                          (lambda y: max_pool3d_ref(y, 2), lambda y: F.max_pool3d(y, 2))):
        def energy_np(a, b):
            return (pool_np(conv3d_ref(a, b)) ** 2).sum()

        x = lazyscope.tensor(x0, device=device).requires_grad_()
        w = lazyscope.tensor(w0, device=device).requires_grad_()
        (gw,) = autograd.grad((pool(F.conv3d(x, w)) ** 2).sum(), w, create_graph=True)
        (gw * lazyscope.tensor(v, device=device)).sum().backward()

        def directional(a):
            return (energy_np(a, w0 + 1e-5 * v) - energy_np(a, w0 - 1e-5 * v)) / 2e-5

        fd = np.zeros_like(x0)
        for i in np.ndindex(x0.shape):
            up, down = x0.copy(), x0.copy()
            up[i] += 1e-4
            down[i] -= 1e-4
            fd[i] = (directional(up) - directional(down)) / 2e-4
        np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-4, atol=1e-5)
