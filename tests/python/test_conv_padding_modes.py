"""Conv1d and Conv2d with padding_mode reflect, replicate and circular
against NumPy: np.pad's reflect, edge and wrap modes, then a valid
cross-correlation written in the test; explicit, 'same' and 'valid'
padding; gradients by finite differences; both devices."""
import numpy as np
import pytest

import lazyscope
from lazyscope import nn

DEVICES = ["cpu", "lazy:0"]
NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


def corr2d(x, w, stride=1, dilation=1):
    """x [N, C, H, W] (already padded), w [O, C, kh, kw]: valid cross-correlation."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh = (h - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride:i * stride + dilation * (kh - 1) + 1:dilation,
                      j * stride:j * stride + dilation * (kw - 1) + 1:dilation]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out


def params(conv):
    return conv.weight.detach().numpy().astype(np.float64), conv.bias.detach().numpy().astype(np.float64)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding,dilation,stride", [((1, 2), 1, 1), ("same", 2, 1), (1, 1, 2), ("valid", 1, 1)])
def test_conv2d_padding_modes_match_numpy(dev, mode, padding, dilation, stride):
    lazyscope.manual_seed(0)
    conv = nn.Conv2d(2, 3, (3, 3), stride=stride, padding=padding, dilation=dilation, padding_mode=mode,
                     dtype=lazyscope.float64).to(dev)
    x = np.random.default_rng(1).standard_normal((2, 2, 7, 6))
    w, b = params(conv)
    if padding == "valid":
        pads = [(0, 0), (0, 0)]
    elif padding == "same":
        total = dilation * 2
        pads = [(total // 2, total - total // 2)] * 2
    else:
        pads = [(padding[0], padding[0]), (padding[1], padding[1])] if isinstance(padding, tuple) else [(padding,) * 2] * 2
    xp = np.pad(x, [(0, 0), (0, 0), *pads], mode=NP_MODE[mode])
    want = corr2d(xp, w, stride, dilation) + b[None, :, None, None]
    xt = lazyscope.tensor(x, device=dev).requires_grad_()
    out = conv(xt)
    np.testing.assert_allclose(out.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    g = np.random.default_rng(2).standard_normal(want.shape)
    (out * lazyscope.tensor(g, device=dev)).sum().backward()
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        f = lambda a: (corr2d(np.pad(a, [(0, 0), (0, 0), *pads], mode=NP_MODE[mode]), w, stride, dilation) * g).sum()  # noqa: E731
        fd[i] = (f(up) - f(down)) / 2e-6
    np.testing.assert_allclose(xt.grad.numpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv1d_padding_modes_match_numpy(dev, mode):
    lazyscope.manual_seed(3)
    conv = nn.Conv1d(2, 2, 3, padding=2, padding_mode=mode, dtype=lazyscope.float64).to(dev)
    x = np.random.default_rng(4).standard_normal((1, 2, 5))
    w, b = params(conv)
    xp = np.pad(x, [(0, 0), (0, 0), (2, 2)], mode=NP_MODE[mode])
    want = corr2d(xp[:, :, None, :], w[:, :, None, :]) [:, :, 0, :] + b[None, :, None]
    np.testing.assert_allclose(conv(lazyscope.tensor(x, device=dev)).detach().numpy(), want, rtol=1e-12, atol=1e-12)


def test_an_unknown_padding_mode_is_a_clear_error():
    with pytest.raises(ValueError, match="padding_mode must be one of \\['zeros', 'reflect', 'replicate', "
                                         "'circular'\\], got 'mirror'"):
        nn.Conv2d(1, 1, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="should be less than the dimension size"):
        nn.Conv2d(1, 1, 3, padding=4, padding_mode="reflect")(lazyscope.ones(1, 1, 3, 3))
