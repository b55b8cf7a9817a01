"""Activations, padding, resampling, 1-D and adaptive max pooling, instance
norm and parameter containers added to the PyTorch surface as compositions
(nn/functional.py, nn/layers.py, nn/layers_spatial.py,
nn/parameter_containers.py). Values against NumPy written from PyTorch's
documented definitions (explicit loops where the engine's own composition
would otherwise be mirrored), gradients against central differences of the
NumPy forward, and the errors for bad arguments."""
import math

import numpy as np
import pytest

import lazyscope
import lazyscope.nn as nn
import lazyscope.nn.functional as F
from lazyscope.core import lazy_model as lm
from test_autograd import away_from, check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(31)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def to(a, device):
    return lazyscope.tensor(a, device=device)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


ACTIVATIONS = [
    ("hardswish", F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6, nn.Hardswish()),
    ("hardsigmoid", F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6, nn.Hardsigmoid()),
    ("selu", F.selu, lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), nn.SELU()),
    ("celu", lambda t: F.celu(t, 0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x / 0.5)), nn.CELU(0.5)),
    ("softsign", F.softsign, lambda x: x / (1 + np.abs(x)), nn.Softsign()),
    ("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), nn.Tanhshrink()),
    ("softmin", lambda t: F.softmin(t, 1), lambda x: softmax(-x, 1), nn.Softmin(1)),
    ("threshold", lambda t: F.threshold(t, 0.3, -2.0), lambda x: np.where(x > 0.3, x, -2.0), nn.Threshold(0.3, -2.0)),
    ("softshrink", lambda t: F.softshrink(t, 0.5),
     lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0.0)), nn.Softshrink(0.5)),
    ("hardshrink", F.hardshrink, lambda x: np.where(np.abs(x) > 0.5, x, 0.0), nn.Hardshrink()),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref,module", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations_match_numpy_and_their_modules(device, name, fn, ref, module):
    x = away_from(rng.standard_normal((4, 6)) * 3, [0.0, 0.3, 0.5, -0.5, 3.0, -3.0])
    t = to(x.astype(np.float32), device)
    np.testing.assert_allclose(fn(t).numpy(), ref(x), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(module(t).numpy(), ref(x), rtol=2e-6, atol=2e-6)
    check(fn, ref, [x[1:]], device)


@pytest.mark.parametrize("device", DEVICES)
def test_prelu_per_channel_and_shared_slopes_with_gradients(device):
    x = away_from(rng.standard_normal((2, 3, 4)), [0.0])
    w = np.array([0.1, -0.3, 2.0])

    def ref(a, k):
        return np.where(a > 0, a, a * k[None, :, None])

    check(F.prelu, ref, [x, w], device)
    m = nn.PReLU(3).to(device)
    assert m.weight.shape == (3,) and np.all(m.weight.numpy() == np.float32(0.25))
    got = m(to(x.astype(np.float32), device)).numpy()
    np.testing.assert_allclose(got, np.where(x > 0, x, 0.25 * x), rtol=1e-6)
    shared = F.prelu(to(x, device), to(np.array([0.5]), device)).numpy()
    np.testing.assert_allclose(shared, np.where(x > 0, x, 0.5 * x), rtol=1e-12)
    with pytest.raises(lazyscope.ShapeError, match=r"prelu: weight of shape \[2\] must be \[1\] or \[3\]"):
        F.prelu(to(x, device), to(np.ones(2), device))


def pixel_shuffle_ref(x, r):
    n, c, h, w = x.shape
    out = np.empty((n, c // (r * r), h * r, w * r))
    for ch in range(c // (r * r)):
        for i in range(r):
            for j in range(r):
                out[:, ch, i::r, j::r] = x[:, ch * r * r + i * r + j]
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_pixel_shuffle_and_unshuffle_match_the_index_rule_and_invert(device):
    x = rng.standard_normal((2, 8, 3, 5))
    got = nn.PixelShuffle(2)(to(x, device))
    np.testing.assert_array_equal(got.numpy(), pixel_shuffle_ref(x, 2))
    np.testing.assert_array_equal(nn.PixelUnshuffle(2)(got).numpy(), x)
    unbatched = F.pixel_shuffle(to(x[0], device), 2).numpy()
    np.testing.assert_array_equal(unbatched, pixel_shuffle_ref(x[:1], 2)[0])
    check(lambda t: F.pixel_shuffle(t, 2), lambda a: pixel_shuffle_ref(a, 2), [x[:1, :, :2, :2]], device)
    with pytest.raises(lazyscope.ShapeError, match=r"pixel_shuffle: expected an input \[\*, C·r², H, W\] with r=3"):
        F.pixel_shuffle(to(x, device), 3)


PADS = [
    (nn.ZeroPad2d((1, 2, 0, 3)), dict(pad_width=((0, 0), (0, 0), (0, 3), (1, 2)), mode="constant")),
    (nn.ConstantPad1d(2, 1.5), dict(pad_width=((0, 0), (0, 0), (0, 0), (2, 2)), mode="constant",
                                    constant_values=1.5)),
    (nn.ReflectionPad2d(2), dict(pad_width=((0, 0), (0, 0), (2, 2), (2, 2)), mode="reflect")),
    (nn.ReflectionPad1d((1, 3)), dict(pad_width=((0, 0), (0, 0), (0, 0), (1, 3)), mode="reflect")),
    (nn.ReplicationPad2d((0, 1, 2, 3)), dict(pad_width=((0, 0), (0, 0), (2, 3), (0, 1)), mode="edge")),
    (nn.ConstantPad3d(1, -1.0), dict(pad_width=((0, 0), (1, 1), (1, 1), (1, 1)), mode="constant",
                                     constant_values=-1.0)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("module,np_args", PADS, ids=[type(p[0]).__name__ for p in PADS])
def test_padding_layers_match_numpy_pad(device, module, np_args):
    x = rng.standard_normal((2, 3, 4, 5))
    np.testing.assert_array_equal(module(to(x, device)).numpy(), np.pad(x, **np_args))


def test_padding_layer_with_a_wrong_tuple_names_the_layer():
    with pytest.raises(ValueError, match=r"ReflectionPad2d: padding must be an int or a 4-tuple, got \(1, 2\)"):
        nn.ReflectionPad2d((1, 2))


def pools_1d_ref(x, k, s, p, kind):
    n, c, length = x.shape
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (p, p)), constant_values=fill)
    out_len = (length + 2 * p - k) // s + 1
    out = np.empty((n, c, out_len))
    for i in range(out_len):
        window = xp[:, :, i * s:i * s + k]
        out[:, :, i] = window.max(-1) if kind == "max" else window.sum(-1) / k
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_1d_pools_match_numpy_windows(device):
    x = rng.standard_normal((2, 3, 11))
    np.testing.assert_allclose(nn.MaxPool1d(3, 2, 1)(to(x, device)).numpy(), pools_1d_ref(x, 3, 2, 1, "max"))
    np.testing.assert_allclose(nn.AvgPool1d(4, 3, 2)(to(x, device)).numpy(), pools_1d_ref(x, 4, 3, 2, "avg"),
                               rtol=1e-12)
    unbatched = F.max_pool1d(to(x[0], device), 2).numpy()
    np.testing.assert_allclose(unbatched, pools_1d_ref(x[:1], 2, 2, 0, "max")[0])
    check(lambda t: F.avg_pool1d(t, 3, 2, 1), lambda a: pools_1d_ref(a, 3, 2, 1, "avg"), [x[:1, :2]], device)
    with pytest.raises(lazyscope.ShapeError, match=r"max_pool1d: expected a 2-D \[C, L\] or 3-D \[N, C, L\] input"):
        F.max_pool1d(to(x[None], device), 2)


def adaptive_windows(size, out):
    return [(i * size // out, math.ceil((i + 1) * size / out)) for i in range(out)]


def adaptive_ref(x, out_sizes, reduce):
    """PyTorch's adaptive pooling: window i over [floor(i·L/out), ceil((i+1)·L/out)) along each spatial dim."""
    spatial = x.shape[2:]
    out = np.empty(x.shape[:2] + tuple(out_sizes))
    for idx in np.ndindex(*out_sizes):
        box = tuple(slice(*adaptive_windows(spatial[d], out_sizes[d])[idx[d]]) for d in range(len(idx)))
        out[(slice(None), slice(None)) + idx] = reduce(x[(slice(None), slice(None)) + box],
                                                       axis=tuple(range(2, x.ndim)))
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("out", [(1, 1), (3, 2), (5, 7), (7, 7)])
def test_adaptive_max_pool2d_matches_pytorch_windows(device, out):
    x = rng.standard_normal((2, 3, 7, 10))
    got = nn.AdaptiveMaxPool2d(out)(to(x, device)).numpy()
    np.testing.assert_array_equal(got, adaptive_ref(x, out, np.max))


@pytest.mark.parametrize("device", DEVICES)
def test_adaptive_1d_pools_and_max_gradient(device):
    x = rng.standard_normal((2, 3, 10))
    np.testing.assert_array_equal(nn.AdaptiveMaxPool1d(4)(to(x, device)).numpy(), adaptive_ref(x, (4,), np.max))
    np.testing.assert_allclose(nn.AdaptiveAvgPool1d(3)(to(x, device)).numpy(), adaptive_ref(x, (3,), np.mean),
                               rtol=1e-12)
    check(lambda t: F.adaptive_max_pool2d(t, (2, 3)), lambda a: adaptive_ref(a, (2, 3), np.max),
          [rng.standard_normal((1, 2, 5, 4))], device)


@pytest.mark.parametrize("device", DEVICES)
def test_upsampling_layers(device):
    x = rng.standard_normal((1, 2, 3, 4))
    np.testing.assert_array_equal(nn.Upsample(scale_factor=2)(to(x, device)).numpy(),
                                  x.repeat(2, axis=2).repeat(2, axis=3))
    np.testing.assert_array_equal(nn.UpsamplingNearest2d(size=(6, 4))(to(x, device)).numpy(), x.repeat(2, axis=2))
    # Bilinear with align_corners=True: output position i samples the input at i·(in − 1)/(out − 1).
    out_h, out_w = 5, 7
    ys, xs = np.arange(out_h) * (3 - 1) / (out_h - 1), np.arange(out_w) * (4 - 1) / (out_w - 1)
    want = np.empty((1, 2, out_h, out_w))
    for i, yy in enumerate(ys):
        y0 = min(int(math.floor(yy)), 1)
        for j, xx in enumerate(xs):
            x0 = min(int(math.floor(xx)), 2)
            dy, dx = yy - y0, xx - x0
            want[:, :, i, j] = ((1 - dy) * (1 - dx) * x[:, :, y0, x0] + (1 - dy) * dx * x[:, :, y0, x0 + 1]
                                + dy * (1 - dx) * x[:, :, y0 + 1, x0] + dy * dx * x[:, :, y0 + 1, x0 + 1])
    got = nn.UpsamplingBilinear2d(size=(out_h, out_w))(to(x, device)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_instance_norm_normalizes_each_instance_and_tracks_running_stats(device):
    x = rng.standard_normal((3, 4, 5, 6)) * 2 + 1
    mean = x.mean(axis=(2, 3), keepdims=True)
    var = x.var(axis=(2, 3), keepdims=True)
    m = nn.InstanceNorm2d(4, affine=True, track_running_stats=True, momentum=0.2).to(device)
    assert np.all(m.weight.numpy() == 1) and np.all(m.bias.numpy() == 0)
    got = m(to(x, device)).numpy()
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-5), rtol=1e-6, atol=1e-6)
    lm.mark_step()
    unbiased = x.var(axis=(2, 3), ddof=1).mean(0)
    np.testing.assert_allclose(m.running_mean.numpy(), 0.2 * mean.mean(axis=(0, 2, 3)), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(m.running_var.numpy(), 0.8 + 0.2 * unbiased, rtol=1e-6)
    m.eval()  # now the running statistics normalize
    rm, rv = m.running_mean.numpy(), m.running_var.numpy()
    got = m(to(x, device)).numpy()
    np.testing.assert_allclose(got, (x - rm[None, :, None, None]) / np.sqrt(rv[None, :, None, None] + 1e-5),
                               rtol=1e-6, atol=1e-6)
    plain = nn.InstanceNorm1d(4)(to(x[0, :, 0], device)).numpy()  # unbatched [C, L]
    row = x[0, :, 0]
    np.testing.assert_allclose(plain, (row - row.mean(-1, keepdims=True)) / np.sqrt(row.var(-1, keepdims=True) + 1e-5),
                               rtol=1e-6, atol=1e-6)

    def ref(a):
        mu = a.mean(axis=2, keepdims=True)
        return (a - mu) / np.sqrt(((a - mu) ** 2).mean(axis=2, keepdims=True) + 1e-5)

    check(lambda t: F.instance_norm(t), ref, [rng.standard_normal((2, 2, 5))], device, rtol=1e-5, atol=1e-6)
    with pytest.raises(lazyscope.ShapeError, match=r"InstanceNorm2d: expected a 3-D \(unbatched\) or 4-D input"):
        nn.InstanceNorm2d(4)(to(x[0, 0, 0], device))


@pytest.mark.parametrize("device", DEVICES)
def test_dropout1d_zeroes_whole_channels_and_scales_the_rest(device):
    lazyscope.manual_seed(5)
    x = np.ones((8, 16, 10), dtype=np.float32)
    got = nn.Dropout1d(0.5)(to(x, device)).numpy()
    per_channel = got.reshape(8 * 16, 10)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert np.all(per_channel.min(1) == per_channel.max(1))  # a channel is all dropped or all kept
    dropped = np.mean(per_channel[:, 0] == 0)
    assert 0.3 < dropped < 0.7
    assert np.array_equal(nn.Dropout1d(0.5).eval()(to(x, device)).numpy(), x)


@pytest.mark.parametrize("device", DEVICES)
def test_parameter_containers_register_train_and_move(device):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = nn.ParameterList([lazyscope.ones(3), nn.Parameter(lazyscope.zeros(3))])
            self.extra = nn.ParameterDict({"shift": lazyscope.full((3,), 2.0)})

        def forward(self, x):
            return (x * self.scales[0] + self.scales[1] + self.extra["shift"]).sum()

    net = Net().to(device)
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scales.0", "scales.1", "extra.shift"]
    assert set(net.state_dict()) == set(names)
    assert all(isinstance(p, nn.Parameter) for p in net.parameters())
    opt = lazyscope.optim.SGD(net.parameters(), lr=0.5)
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    net(to(x, device)).backward()
    opt.step()
    lm.mark_step()
    np.testing.assert_allclose(net.scales[0].numpy(), 1 - 0.5 * x)
    np.testing.assert_allclose(net.scales[1].numpy(), [-0.5] * 3)
    np.testing.assert_allclose(net.extra["shift"].numpy(), [1.5] * 3)
    net.scales.append(lazyscope.ones(1))
    assert len(net.scales) == 3 and len(list(net.parameters())) == 4
    with pytest.raises(TypeError, match="ParameterList: expected a Tensor .* got str"):
        net.scales.append("not a tensor")


@pytest.mark.parametrize("device", DEVICES)
def test_unflatten_layer(device):
    x = rng.standard_normal((2, 12))
    got = nn.Unflatten(1, (3, 4))(to(x, device))
    np.testing.assert_array_equal(got.numpy(), x.reshape(2, 3, 4))
