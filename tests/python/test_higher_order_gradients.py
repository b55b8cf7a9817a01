"""Higher-order gradients (create_graph=True) against NumPy: second
derivatives of elementwise functions in closed form, Hessian-vector
products of a tanh MLP and a gradient penalty (WGAN-GP) against central
differences of gradients written in NumPy, cross-entropy, layer_norm,
conv2d and average pooling twice differentiated, .grad keeping its graph
under backward(create_graph=True), both devices; and a clear error where a
gradient kernel has no derivative of its own (max pooling)."""
import numpy as np
import pytest

import lazyscope
from lazyscope import autograd
from lazyscope.nn import functional as F

DEVICES = ["cpu", "lazy:0"]


def t(a, dev, grad=False):
    out = lazyscope.tensor(np.asarray(a, dtype=np.float64), device=dev)
    return out.requires_grad_() if grad else out


def fd(f, a, eps=1e-6):
    """Central differences of the NumPy function f (scalar or array valued) at a: d f / d a[i] stacked last."""
    base = np.asarray(f(a))
    out = np.zeros(base.shape + a.shape)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        out[(Ellipsis,) + i] = (np.asarray(f(up)) - np.asarray(f(down))) / (2 * eps)
    return out


@pytest.mark.parametrize("dev", DEVICES)
def test_second_derivative_of_an_elementwise_function_in_closed_form(dev):
    x0 = np.linspace(-2.0, 2.0, 7)
    x = t(x0, dev, grad=True)
    y = (x ** 3 * x.sin()).sum()
    (g,) = autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * x0 ** 2 * np.sin(x0) + x0 ** 3 * np.cos(x0), rtol=1e-12)
    (h,) = autograd.grad(g.sum(), x)
    want = 6 * x0 * np.sin(x0) + 6 * x0 ** 2 * np.cos(x0) - x0 ** 3 * np.sin(x0)
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-10, atol=1e-12)
    # retain_graph=False frees each node's saved values as the pass leaves
    # it, so tanh's rule reads its output from the node's own saved copy
    # (nothing else holds it). That copy carries the node's history: the
    # second pass reaches the freed node and says so, as PyTorch does,
    # instead of a gradient silently missing tanh's second derivative.
    x = t(x0, dev, grad=True)
    (g,) = autograd.grad((x * 1.5).tanh().sum(), x, create_graph=True, retain_graph=False)
    with pytest.raises(Exception, match="backward through the graph a second time"):
        autograd.grad(g.sum(), x)
    x = t(x0, dev, grad=True)
    (g,) = autograd.grad((x * 1.5).tanh().sum(), x, create_graph=True)  # retains by default
    (h,) = autograd.grad(g.sum(), x)
    th = np.tanh(1.5 * x0)
    np.testing.assert_allclose(h.numpy(), -2 * 1.5 ** 2 * th * (1 - th ** 2), rtol=1e-12, atol=1e-14)
    # Third order, through exp.
    x = t(x0, dev, grad=True)
    (g1,) = autograd.grad((x * 0.5).exp().sum(), x, create_graph=True)
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    np.testing.assert_allclose(g3.numpy(), 0.125 * np.exp(0.5 * x0), rtol=1e-12)


def mlp_gradient_np(x, w1, b1, w2):
    """d/dx of sum(w2 * tanh(x @ w1.T + b1)), row by row."""
    h = np.tanh(x @ w1.T + b1)
    return ((1 - h ** 2) * w2) @ w1


@pytest.mark.parametrize("dev", DEVICES)
def test_hessian_vector_product_of_a_tanh_mlp(dev):
    r = np.random.default_rng(0)
    x0, w1, b1, w2 = r.standard_normal((3, 4)), r.standard_normal((5, 4)), r.standard_normal(5), r.standard_normal(5)
    v = r.standard_normal((3, 4))
    x = t(x0, dev, grad=True)
    # The tanh's output is dropped at once: its rule reads the saved output,
    # which must keep its history for the second derivative.
    y = (F.linear(x, t(w1, dev), t(b1, dev)).tanh() * t(w2, dev)).sum()
    (g,) = autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), mlp_gradient_np(x0, w1, b1, w2), rtol=1e-12)
    (hv,) = autograd.grad((g * t(v, dev)).sum(), x)
    jac = fd(lambda a: mlp_gradient_np(a, w1, b1, w2), x0)  # [3, 4, 3, 4]
    np.testing.assert_allclose(hv.numpy(), np.einsum("ij,ijkl->kl", v, jac), rtol=1e-6, atol=1e-8)


def critic_np(x, w, b, u):
    return np.log1p(np.exp(x @ w.T + b)) @ u  # softplus layer, linear head: [N]


def penalty_np(x, w, b, u):
    """WGAN-GP: mean over samples of (|d critic / d x| - 1)^2."""
    s = 1 / (1 + np.exp(-(x @ w.T + b)))  # softplus' = sigmoid
    grads = (s * u) @ w  # [N, D]
    return ((np.sqrt((grads ** 2).sum(1)) - 1) ** 2).mean()


@pytest.mark.parametrize("dev", DEVICES)
def test_gradient_penalty_trains_the_critic_through_its_input_gradient(dev):
    r = np.random.default_rng(1)
    x0, w0, b0, u0 = r.standard_normal((4, 3)), r.standard_normal((6, 3)), r.standard_normal(6), r.standard_normal(6)
    x = t(x0, dev, grad=True)
    w, b, u = t(w0, dev, grad=True), t(b0, dev, grad=True), t(u0, dev, grad=True)
    score = F.softplus(F.linear(x, w, b)) @ u
    np.testing.assert_allclose(score.detach().numpy(), critic_np(x0, w0, b0, u0), rtol=1e-12)
    (gx,) = autograd.grad(score.sum(), x, create_graph=True)
    penalty = ((gx.norm(2, dim=1) - 1) ** 2).mean()
    np.testing.assert_allclose(penalty.item(), penalty_np(x0, w0, b0, u0), rtol=1e-12)
    penalty.backward()
    for got, arg in ((w.grad, 1), (b.grad, 2), (u.grad, 3)):
        args = [x0, w0, b0, u0]

        def f(a, arg=arg, args=args):
            call = list(args)
            call[arg] = a
            return penalty_np(*call)
        np.testing.assert_allclose(got.numpy(), fd(f, args[arg]), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("dev", DEVICES)
def test_backward_create_graph_leaves_grads_with_a_graph(dev):
    """x.grad from backward(create_graph=True) differentiates again (its square's gradient)."""
    x0 = np.array([0.3, -1.2, 2.0])
    x = t(x0, dev, grad=True)
    (x.exp() * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    g = x.grad
    np.testing.assert_allclose(g.detach().numpy(), np.exp(x0) * (1 + x0), rtol=1e-12)
    (second,) = autograd.grad((g ** 2).sum(), x)
    want = 2 * np.exp(x0) * (1 + x0) * np.exp(x0) * (2 + x0)
    np.testing.assert_allclose(second.numpy(), want, rtol=1e-12)


def ce_grad_norm_np(w, x, y):
    """|d CE(x @ w, y) / d w|^2, CE the mean cross-entropy."""
    z = x @ w
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    return ((x.T @ p / len(y)) ** 2).sum()


@pytest.mark.parametrize("dev", DEVICES)
def test_cross_entropy_and_layer_norm_differentiate_twice(dev):
    r = np.random.default_rng(2)
    x0, w0 = r.standard_normal((5, 4)), r.standard_normal((4, 3))
    y0 = np.array([0, 2, 1, 1, 0])
    w = t(w0, dev, grad=True)
    loss = F.cross_entropy(t(x0, dev) @ w, lazyscope.tensor(y0, device=dev))
    (gw,) = autograd.grad(loss, w, create_graph=True)
    (gw ** 2).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), fd(lambda a: ce_grad_norm_np(a, x0, y0), w0), rtol=1e-6, atol=1e-9)

    # layer_norm with weight and bias: the gradient's norm with respect to x, differentiated by x and weight.
    def ln_np(a, weight, bias):
        m = a.mean(1, keepdims=True)
        v = ((a - m) ** 2).mean(1, keepdims=True)
        return (a - m) / np.sqrt(v + 1e-5) * weight + bias

    c = r.standard_normal((5, 4))
    lw0, lb0 = r.standard_normal(4), r.standard_normal(4)

    def gx_np(a, weight):  # d sum(c * tanh(ln(a))) / d a, by differences of the NumPy forward
        return fd(lambda q: (c * np.tanh(ln_np(q, weight, lb0))).sum(), a, eps=1e-5)

    x = t(x0, dev, grad=True)
    lw = t(lw0, dev, grad=True)
    out = (t(c, dev) * F.layer_norm(x, (4,), lw, t(lb0, dev)).tanh()).sum()
    (gx,) = autograd.grad(out, x, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), gx_np(x0, lw0), rtol=1e-6, atol=1e-8)
    (gx ** 2).sum().backward()
    np.testing.assert_allclose(lw.grad.numpy(), fd(lambda q: (gx_np(x0, q) ** 2).sum(), lw0, eps=1e-4),
                               rtol=1e-4, atol=1e-6)


def conv_np(x, w):
    """Valid 2-D cross-correlation, stride 1: x [N, C, H, W], w [O, C, kh, kw]."""
    kh, kw = w.shape[2:]
    patches = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))  # N C H' W' kh kw
    return np.einsum("nchwij,ocij->nohw", patches, w)


def pooled_energy_np(x, w):
    y = conv_np(x, w)
    n, o, h, ww = y.shape
    pooled = y[:, :, :h // 2 * 2, :ww // 2 * 2].reshape(n, o, h // 2, 2, ww // 2, 2).mean((3, 5))
    return (pooled ** 2).sum()


def gw_np(x, w):
    """d pooled_energy / d w in closed form: the pooled values' gradient
    spread back over each 2x2 window (a quarter each), correlated with x."""
    y = conv_np(x, w)
    n, o, h, ww = y.shape
    hp, wp = h // 2, ww // 2
    pooled = y[:, :, :hp * 2, :wp * 2].reshape(n, o, hp, 2, wp, 2).mean((3, 5))
    dy = np.zeros_like(y)
    dy[:, :, :hp * 2, :wp * 2] = np.repeat(np.repeat(2 * pooled / 4, 2, axis=2), 2, axis=3)
    patches = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,nohw->ocij", patches, dy)


@pytest.mark.parametrize("dev", DEVICES)
def test_conv2d_and_average_pooling_differentiate_twice(dev):
    r = np.random.default_rng(3)
    x0, w0 = r.standard_normal((2, 2, 6, 6)), r.standard_normal((3, 2, 3, 3))
    v = r.standard_normal(w0.shape)
    x, w = t(x0, dev, grad=True), t(w0, dev, grad=True)
    energy = (F.avg_pool2d(F.conv2d(x, w), 2) ** 2).sum()
    np.testing.assert_allclose(energy.item(), pooled_energy_np(x0, w0), rtol=1e-12)
    (gw,) = autograd.grad(energy, w, create_graph=True)
    (gw * t(v, dev)).sum().backward()

    np.testing.assert_allclose(gw.detach().numpy(), gw_np(x0, w0), rtol=1e-12)
    np.testing.assert_allclose(gw_np(x0, w0), fd(lambda q: pooled_energy_np(x0, q), w0), rtol=1e-6)
    # d <gW, v> / d x and / d w, by differences of the NumPy gradient.
    np.testing.assert_allclose(x.grad.numpy(), fd(lambda a: (gw_np(a, w0) * v).sum(), x0), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(w.grad.numpy(), fd(lambda b: (gw_np(x0, b) * v).sum(), w0), rtol=1e-7, atol=1e-8)


def maxpool_energy_np(x, w):
    y = conv_np(x, w)
    n, o, h, ww = y.shape
    pooled = y[:, :, :h // 2 * 2, :ww // 2 * 2].reshape(n, o, h // 2, 2, ww // 2, 2).max((3, 5))
    return (pooled ** 2).sum()


@pytest.mark.parametrize("dev", DEVICES)
def test_max_pooling_differentiates_twice_over_windows_that_do_not_overlap(dev):
    r = np.random.default_rng(6)
    x0, w0 = r.standard_normal((2, 2, 6, 6)), r.standard_normal((3, 2, 3, 3))
    v = r.standard_normal(w0.shape)
    x, w = t(x0, dev, grad=True), t(w0, dev, grad=True)
    energy = (F.max_pool2d(F.conv2d(x, w), 2) ** 2).sum()
    (gw,) = autograd.grad(energy, w, create_graph=True)
    np.testing.assert_allclose(gw.detach().numpy(), fd(lambda q: maxpool_energy_np(x0, q), w0), rtol=1e-6,
                               atol=1e-8)
    (gw * t(v, dev)).sum().backward()

    def gwv(a, b):  # <d energy / d w, v> = the directional derivative along v, by differences
        return (maxpool_energy_np(a, b + 1e-5 * v) - maxpool_energy_np(a, b - 1e-5 * v)) / 2e-5

    np.testing.assert_allclose(x.grad.numpy(), fd(lambda a: gwv(a, w0), x0, eps=1e-4), rtol=1e-4, atol=1e-5)


def test_overlapping_max_pooling_has_no_second_derivative_and_says_so():
    x = lazyscope.tensor(np.random.default_rng(4).standard_normal((1, 1, 5, 5))).requires_grad_()
    y = F.max_pool2d(x, 3, stride=1).pow(2).sum()
    (g,) = autograd.grad(y, x, create_graph=True)
    with pytest.raises(Exception, match="max_pool2d_backward over overlapping or dilated windows"):
        autograd.grad(g.sum(), x)
    # Without create_graph nothing changed: first-order gradients as before.
    x2 = lazyscope.tensor(np.arange(16.0).reshape(1, 1, 4, 4)).requires_grad_()
    F.max_pool2d(x2, 2).sum().backward()
    assert x2.grad.numpy().sum() == 4 and not x2.grad.requires_grad
