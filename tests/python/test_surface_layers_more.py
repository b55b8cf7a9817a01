"""RMSNorm, gumbel_softmax, alpha_dropout, dropout3d, rrelu,
local_response_norm, lp_pool1d/2d, pdist, channel_shuffle, LazyLinear,
Softmax2d and the circular pads against NumPy written from PyTorch's
definitions, gradients by finite differences, both devices; random ones by
their distributions (moments, shapes, one-hot-ness)."""
import numpy as np
import pytest

import lazyscope
from lazyscope import nn
from lazyscope.nn import functional as F

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(7)


def t(a, dev, grad=False):
    out = lazyscope.tensor(np.asarray(a, dtype=np.float64), device=dev)
    return out.requires_grad_() if grad else out


def fd(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def check_grad(fn, np_fn, x, dev, tol=1e-7):
    w = rng.standard_normal(np.asarray(np_fn(x)).shape)
    xt = t(x, dev, grad=True)
    (fn(xt) * t(w, dev)).sum().backward()
    np.testing.assert_allclose(xt.grad.numpy(), fd(lambda a: (np_fn(a) * w).sum(), x), rtol=1e-6, atol=tol)


def rms_np(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


@pytest.mark.parametrize("dev", DEVICES)
def test_rms_norm_matches_numpy(dev):
    x = rng.standard_normal((3, 5))
    m = nn.RMSNorm(5, eps=1e-6, dtype=lazyscope.float64).to(dev)
    w = rng.standard_normal(5)
    with lazyscope.no_grad():
        m.weight.copy_(t(w, dev))
    np.testing.assert_allclose(m(t(x, dev)).detach().numpy(), rms_np(x, w, 1e-6), rtol=1e-12)
    check_grad(lambda a: F.rms_norm(a, (5,), t(w, dev), 1e-6), lambda a: rms_np(a, w, 1e-6), x, dev)
    # Default eps: float32's machine epsilon for float32.
    x32 = x.astype(np.float32)
    got = F.rms_norm(lazyscope.tensor(x32, device=dev), [5]).numpy()
    np.testing.assert_allclose(got, x32 / np.sqrt((x32 * x32).mean(-1, keepdims=True) + np.finfo(np.float32).eps),
                               rtol=1e-5)
    with pytest.raises(lazyscope.ShapeError, match="do not end with normalized_shape \\[4\\]"):
        F.rms_norm(t(x, dev), 4)


def lrn_np(x, size, alpha, beta, k):
    c = x.shape[1]
    sq = np.pad(x * x, [(0, 0), (size // 2, (size - 1) // 2)] + [(0, 0)] * (x.ndim - 2))
    window = sum(sq[:, j:j + c] for j in range(size))
    return x / (k + alpha / size * window) ** beta


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_local_response_norm_matches_numpy(dev, size):
    x = rng.standard_normal((2, 5, 3, 2))
    np.testing.assert_allclose(nn.LocalResponseNorm(size, 0.3, 0.6, 2.0)(t(x, dev)).numpy(),
                               lrn_np(x, size, 0.3, 0.6, 2.0), rtol=1e-12)
    check_grad(lambda a: F.local_response_norm(a, size, 0.3, 0.6, 2.0), lambda a: lrn_np(a, size, 0.3, 0.6, 2.0),
               x, dev)


def lp_pool2d_np(x, p, k):
    n, c, h, w = x.shape
    out = np.zeros((n, c, h // k, w // k))
    for i in range(h // k):
        for j in range(w // k):
            out[:, :, i, j] = ((x[:, :, i * k:(i + 1) * k, j * k:(j + 1) * k] ** p).sum((2, 3))) ** (1 / p)
    return out


@pytest.mark.parametrize("dev", DEVICES)
def test_lp_pooling_matches_numpy(dev):
    x = np.abs(rng.standard_normal((1, 2, 4, 6))) + 0.1
    for p in (1.0, 2.0, 3.0):
        np.testing.assert_allclose(nn.LPPool2d(p, 2)(t(x, dev)).numpy(), lp_pool2d_np(x, p, 2), rtol=1e-12)
    check_grad(lambda a: F.lp_pool2d(a, 2.0, 2), lambda a: lp_pool2d_np(a, 2.0, 2), x, dev)
    x1 = np.abs(rng.standard_normal((2, 3, 6))) + 0.1
    want = ((x1.reshape(2, 3, 3, 2) ** 3).sum(-1)) ** (1 / 3)
    np.testing.assert_allclose(nn.LPPool1d(3.0, 2)(t(x1, dev)).numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
def test_pdist_and_channel_shuffle_match_numpy(dev):
    x = rng.standard_normal((5, 3))
    i, j = np.triu_indices(5, 1)
    for p in (1.0, 2.0, 3.0):
        np.testing.assert_allclose(F.pdist(t(x, dev), p).numpy(),
                                   (np.abs(x[i] - x[j]) ** p).sum(1) ** (1 / p), rtol=1e-12)
    check_grad(lambda a: F.pdist(a), lambda a: np.sqrt(((a[i] - a[j]) ** 2).sum(1)), x, dev)
    c = rng.standard_normal((2, 6, 2, 2))
    want = c.reshape(2, 3, 2, 2, 2).transpose(0, 2, 1, 3, 4).reshape(2, 6, 2, 2)
    np.testing.assert_array_equal(nn.ChannelShuffle(3)(t(c, dev)).numpy(), want)
    with pytest.raises(ValueError, match="not divisible by groups=4"):
        F.channel_shuffle(t(c, dev), 4)


@pytest.mark.parametrize("dev", DEVICES)
def test_softmax2d_circular_pads_and_rrelu_in_eval(dev):
    x = rng.standard_normal((2, 3, 2, 2))
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(nn.Softmax2d()(t(x, dev)).numpy(), e / e.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(nn.CircularPad2d((1, 2, 0, 1))(t(x, dev)).numpy(),
                                  np.pad(x, [(0, 0), (0, 0), (0, 1), (1, 2)], mode="wrap"))
    np.testing.assert_array_equal(nn.CircularPad1d(1)(t(x[:, :, 0], dev)).numpy(),
                                  np.pad(x[:, :, 0], [(0, 0), (0, 0), (1, 1)], mode="wrap"))
    r = nn.RReLU(0.1, 0.3).eval()
    np.testing.assert_allclose(r(t(x, dev)).numpy(), np.where(x >= 0, x, 0.2 * x), rtol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
def test_random_layers_follow_their_distributions(dev):
    lazyscope.manual_seed(0)
    n = 200000
    # rrelu (training): negative inputs times a slope uniform on [lower, upper].
    slopes = (F.rrelu(t(-np.ones(n), dev), 0.1, 0.3, training=True).numpy() / -1.0)
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert abs(slopes.mean() - 0.2) < 5 * (0.2 / np.sqrt(12)) / np.sqrt(n)
    # alpha_dropout keeps zero mean and unit variance of a standard normal input.
    x = rng.standard_normal(n)
    y = F.alpha_dropout(t(x, dev), 0.3, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.var() - 1.0) < 0.03
    assert np.allclose(F.alpha_dropout(t(x, dev), 0.3, training=False).numpy(), x)
    # dropout3d zeroes whole channels, scales the rest by 1 / (1 - p).
    v = F.dropout3d(t(np.ones((4, 50, 2, 2, 2)), dev), 0.4, training=True).numpy()
    per_channel = v.reshape(4, 50, -1)
    assert np.all((per_channel == 0).all(-1) | np.isclose(per_channel, 1 / 0.6).all(-1))
    assert 0.2 < (per_channel[..., 0] == 0).mean() < 0.6


@pytest.mark.parametrize("dev", DEVICES)
def test_gumbel_softmax_samples_the_categorical_and_hard_is_straight_through(dev):
    lazyscope.manual_seed(1)
    logits = np.log(np.array([0.2, 0.5, 0.3]))
    n = 40000
    y = F.gumbel_softmax(t(np.tile(logits, (n, 1)), dev), tau=0.5, hard=True).numpy()
    assert np.all(y.sum(1) == 1) and set(np.unique(y)) <= {0.0, 1.0}
    freq = y.mean(0)
    np.testing.assert_allclose(freq, [0.2, 0.5, 0.3], atol=5 * np.sqrt(0.25 / n))
    soft = F.gumbel_softmax(t(np.tile(logits, (4, 1)), dev), tau=2.0).numpy()
    np.testing.assert_allclose(soft.sum(1), 1.0, rtol=1e-12)
    lt = t(logits, dev, grad=True)
    out = F.gumbel_softmax(lt.unsqueeze(0).expand(3, 3), hard=True)
    (out * t(np.arange(3.0), dev)).sum().backward()
    assert np.isfinite(lt.grad.numpy()).all() and np.abs(lt.grad.numpy()).sum() > 0  # the soft sample's gradient


@pytest.mark.parametrize("dev", DEVICES)
def test_lazy_linear_takes_its_in_features_from_the_first_input(dev):
    lazyscope.manual_seed(2)
    m = nn.LazyLinear(4).to(dev)
    assert m.has_uninitialized_params() and list(m.parameters()) == []
    x = rng.standard_normal((2, 7)).astype(np.float32)
    y = m(lazyscope.tensor(x, device=dev))
    assert tuple(m.weight.shape) == (4, 7) and tuple(y.shape) == (2, 4) and m.in_features == 7
    np.testing.assert_allclose(y.detach().numpy(), x @ m.weight.detach().numpy().T + m.bias.detach().numpy(),
                               rtol=1e-5)
    assert np.abs(m.weight.detach().numpy()).max() <= 1 / np.sqrt(7)
