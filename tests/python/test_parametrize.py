"""nn.utils.parametrize and the weight_norm / spectral_norm
parametrizations (and the older hook-based nn.utils.weight_norm /
spectral_norm) against NumPy: g * v / |v| over every dim but `dim`,
W / sigma_max(W) from NumPy's SVD, gradients by finite differences of the
NumPy forward, PyTorch's state_dict names, assignment through right_inverse,
removal, and a lazy training step equal to the cpu one."""
import numpy as np
import pytest

import lazyscope
from lazyscope import nn
from lazyscope.nn.utils import parametrize, parametrizations

DEVICES = ["cpu", "lazy:0"]


def np_weight_norm(g, v, dim):
    others = tuple(d for d in range(v.ndim) if d != dim) if dim is not None else tuple(range(v.ndim))
    return v * (g / np.sqrt((v * v).sum(axis=others, keepdims=True)))


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("legacy", [False, True])
def test_weight_norm_matches_numpy_with_gradients(dev, legacy):
    lazyscope.manual_seed(0)
    lin = nn.Linear(3, 2, dtype=lazyscope.float64)
    w0 = lin.weight.detach().numpy().copy()
    lin = (nn.utils.weight_norm(lin) if legacy else parametrizations.weight_norm(lin)).to(dev)
    g_name, v_name = (("weight_g", "weight_v") if legacy else
                      ("parametrizations.weight.original0", "parametrizations.weight.original1"))
    params = dict(lin.named_parameters())
    assert sorted(params) == sorted(["bias", g_name, v_name])
    g, v = params[g_name], params[v_name]
    np.testing.assert_allclose(g.detach().numpy(), np.sqrt((w0 ** 2).sum(1, keepdims=True)), rtol=1e-12)
    np.testing.assert_allclose(v.detach().numpy(), w0, rtol=1e-12)
    x = np.random.default_rng(1).standard_normal((4, 3))
    c = np.random.default_rng(2).standard_normal((4, 2))
    out = lin(lazyscope.tensor(x, device=dev))
    b = lin.bias.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), x @ np_weight_norm(g.detach().numpy(), w0, 0).T + b, rtol=1e-12)
    (out * lazyscope.tensor(c, device=dev)).sum().backward()

    def loss(gg, vv):
        return ((x @ np_weight_norm(gg, vv, 0).T + b) * c).sum()

    g0, v0 = g.detach().numpy().copy(), w0.copy()
    for got, base, which in ((g.grad, g0, 0), (v.grad, v0, 1)):
        fd = np.zeros_like(base)
        for i in np.ndindex(base.shape):
            up, down = base.copy(), base.copy()
            up[i] += 1e-6
            down[i] -= 1e-6
            args_up = (up, v0) if which == 0 else (g0, up)
            args_down = (down, v0) if which == 0 else (g0, down)
            fd[i] = (loss(*args_up) - loss(*args_down)) / 2e-6
        np.testing.assert_allclose(got.numpy(), fd, rtol=1e-6, atol=1e-9)


def test_weight_norm_over_a_conv_weight_and_removal():
    conv = nn.Conv2d(2, 3, 3, dtype=lazyscope.float64)
    w0 = conv.weight.detach().numpy().copy()
    parametrizations.weight_norm(conv, dim=1)
    g = conv.parametrizations.weight.original0.detach().numpy()
    np.testing.assert_allclose(g, np.sqrt((w0 ** 2).sum(axis=(0, 2, 3), keepdims=True)), rtol=1e-12)
    np.testing.assert_allclose(conv.weight.detach().numpy(), w0, rtol=1e-12)
    parametrize.remove_parametrizations(conv, "weight")
    assert type(conv) is nn.Conv2d and "weight" in dict(conv.named_parameters())
    np.testing.assert_allclose(conv.weight.detach().numpy(), w0, rtol=1e-12)
    lin = nn.utils.weight_norm(nn.Linear(2, 2))
    nn.utils.remove_weight_norm(lin)
    assert sorted(dict(lin.named_parameters())) == ["bias", "weight"]


@pytest.mark.parametrize("legacy", [False, True])
def test_spectral_norm_divides_by_the_largest_singular_value(legacy):
    lazyscope.manual_seed(3)
    lin = nn.Linear(5, 4, dtype=lazyscope.float64)
    w0 = lin.weight.detach().numpy().copy()
    sigma = np.linalg.svd(w0, compute_uv=False)[0]
    lin = nn.utils.spectral_norm(lin, n_power_iterations=3) if legacy else \
        parametrizations.spectral_norm(lin, n_power_iterations=3)
    for _ in range(20):
        lin(lazyscope.ones(1, 5, dtype=lazyscope.float64))  # training mode: power iterations
    np.testing.assert_allclose(lin.weight.detach().numpy(), w0 / sigma, rtol=1e-8)
    np.testing.assert_allclose(np.linalg.svd(lin.weight.detach().numpy(), compute_uv=False)[0], 1.0, rtol=1e-8)
    keys = sorted(lin.state_dict())
    assert keys == (["bias", "weight_orig", "weight_u", "weight_v"] if legacy else
                    ["bias", "parametrizations.weight.0._u", "parametrizations.weight.0._v",
                     "parametrizations.weight.original"])
    # eval: u and v are not updated by a call.
    lin.eval()
    u = (lin.weight_u if legacy else lin.parametrizations.weight[0]._u).detach().numpy().copy()
    lin(lazyscope.ones(1, 5, dtype=lazyscope.float64))
    np.testing.assert_array_equal((lin.weight_u if legacy else lin.parametrizations.weight[0]._u).numpy(), u)


def test_a_spectral_norm_conv_trains_the_same_on_both_devices():
    losses = {}
    for dev in DEVICES:
        lazyscope.manual_seed(4)
        conv = parametrizations.spectral_norm(nn.Conv2d(1, 2, 3)).to(dev)
        opt = lazyscope.optim.SGD(conv.parameters(), lr=0.1)
        x = lazyscope.tensor(np.random.default_rng(5).standard_normal((2, 1, 6, 6)).astype(np.float32), device=dev)
        out = []
        for _ in range(3):
            opt.zero_grad()
            loss = conv(x).pow(2).mean()
            loss.backward()
            opt.step()
            if dev != "cpu":
                from lazyscope.core import lazy_model as lm
                lm.mark_step()
            out.append(loss.item())
        losses[dev] = out
    np.testing.assert_allclose(losses["lazy:0"], losses["cpu"], rtol=1e-5)
    assert losses["cpu"][2] < losses["cpu"][0]


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT

    def right_inverse(self, a):
        return a.triu()


def test_a_custom_parametrization_with_right_inverse_and_assignment():
    lin = nn.Linear(3, 3, dtype=lazyscope.float64)
    parametrize.register_parametrization(lin, "weight", Symmetric())
    w = lin.weight.detach().numpy()
    np.testing.assert_allclose(w, w.T)
    assert parametrize.is_parametrized(lin, "weight") and not parametrize.is_parametrized(lin, "bias")
    target = np.arange(9.0).reshape(3, 3)
    target = target + target.T
    lin.weight = lazyscope.tensor(target)
    np.testing.assert_allclose(lin.weight.detach().numpy(), target)
    np.testing.assert_allclose(lin.parametrizations.weight.original.detach().numpy(), np.triu(target))
    parametrize.remove_parametrizations(lin, "weight", leave_parametrized=False)
    np.testing.assert_allclose(lin.weight.detach().numpy(), np.triu(target))
    with pytest.raises(ValueError, match="has no parameter or buffer named 'gamma'"):
        parametrize.register_parametrization(lin, "gamma", Symmetric())
    with pytest.raises(ValueError, match="has no parametrization on 'weight'"):
        parametrize.remove_parametrizations(lin, "weight")
