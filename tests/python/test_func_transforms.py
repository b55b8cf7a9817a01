"""torch.func (grad, grad_and_value, vjp, jacrev, hessian, vmap) and
torch.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp) against
closed forms and NumPy finite differences, both devices; per-sample
gradients by vmap(grad(loss)) against NumPy."""
import numpy as np
import pytest

import lazyscope
from lazyscope import func
from lazyscope.autograd import functional as AF

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(21)


def t(a, dev):
    return lazyscope.tensor(np.asarray(a, dtype=np.float64), device=dev)


def np_jacobian(f, x, eps=1e-6):
    y0 = np.asarray(f(x))
    jac = np.zeros(y0.shape + x.shape)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        jac[(Ellipsis,) + i] = (np.asarray(f(up)) - np.asarray(f(down))) / (2 * eps)
    return jac


@pytest.mark.parametrize("dev", DEVICES)
def test_grad_nests_and_carries_aux(dev):
    x0 = np.array([0.5, -1.0, 2.0])
    f = lambda x: (x.sin() * x ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(func.grad(f)(t(x0, dev)).detach().numpy(),
                               np.cos(x0) * x0 ** 2 + 2 * x0 * np.sin(x0), rtol=1e-12)
    second = func.grad(lambda x: func.grad(f)(x).sum())(t(x0, dev))
    np.testing.assert_allclose(second.detach().numpy(),
                               -np.sin(x0) * x0 ** 2 + 4 * x0 * np.cos(x0) + 2 * np.sin(x0), rtol=1e-12)
    g, (value, aux) = func.grad_and_value(lambda x, y: ((x * y).sum(), y.sum()), argnums=1, has_aux=True)(
        t(x0, dev), t(x0 * 2, dev))
    np.testing.assert_allclose(g.detach().numpy(), x0)
    assert value.item() == pytest.approx((x0 * x0 * 2).sum()) and aux.item() == pytest.approx(x0.sum() * 2)
    with pytest.raises(RuntimeError, match="single-element tensor"):
        func.grad(lambda x: x * 2)(t(x0, dev))


@pytest.mark.parametrize("dev", DEVICES)
def test_jacobians_hessians_and_products_match_numpy(dev):
    w = rng.standard_normal((3, 3))

    def np_f(x):
        return np.tanh(w @ x) * x

    def f(x):
        return (t(w, dev) @ x).tanh() * x

    x0 = rng.standard_normal(3)
    want = np_jacobian(np_f, x0)
    np.testing.assert_allclose(AF.jacobian(f, t(x0, dev)).numpy(), want, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(func.jacrev(f)(t(x0, dev)).detach().numpy(), want, rtol=1e-7, atol=1e-9)
    v = rng.standard_normal(3)
    out, jv = AF.jvp(f, t(x0, dev), t(v, dev))
    np.testing.assert_allclose(out.numpy(), np_f(x0), rtol=1e-12)
    np.testing.assert_allclose(jv.numpy(), want @ v, rtol=1e-7, atol=1e-9)
    _, vj = AF.vjp(f, t(x0, dev), t(v, dev))
    np.testing.assert_allclose(vj.numpy(), v @ want, rtol=1e-7, atol=1e-9)
    # A scalar function's Hessian, and Hessian-vector products.

    def np_s(x):
        return float((np_f(x) ** 2).sum())

    def s(x):
        return (f(x) ** 2).sum()

    hess = np_jacobian(lambda x: np_jacobian(np_s, x, 1e-5), x0, 1e-5)
    np.testing.assert_allclose(AF.hessian(s, t(x0, dev)).numpy(), hess, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(func.hessian(s)(t(x0, dev)).detach().numpy(), hess, rtol=1e-5, atol=1e-6)
    _, hv = AF.hvp(s, t(x0, dev), t(v, dev))
    np.testing.assert_allclose(hv.numpy(), hess @ v, rtol=1e-5, atol=1e-6)
    _, vh = AF.vhp(s, t(x0, dev), t(v, dev))
    np.testing.assert_allclose(vh.numpy(), v @ hess, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dev", DEVICES)
def test_jacobian_of_several_inputs_and_outputs(dev):
    a0, b0 = rng.standard_normal(2), rng.standard_normal(3)
    jac = AF.jacobian(lambda a, b: (a.sum() * b, a * b[:2]), (t(a0, dev), t(b0, dev)))
    (d1a, d1b), (d2a, d2b) = jac
    np.testing.assert_allclose(d1a.numpy(), np.outer(b0, np.ones(2)))
    np.testing.assert_allclose(d1b.numpy(), a0.sum() * np.eye(3))
    np.testing.assert_allclose(d2a.numpy(), np.diag(b0[:2]))
    np.testing.assert_allclose(d2b.numpy(), np.hstack([np.diag(a0), np.zeros((2, 1))]))


@pytest.mark.parametrize("dev", DEVICES)
def test_vmap_maps_dims_and_gives_per_sample_gradients(dev):
    x = rng.standard_normal((4, 3))
    y = rng.standard_normal(4)
    w0 = rng.standard_normal(3)
    np.testing.assert_allclose(lazyscope.vmap(lambda r: (r * r).sum())(t(x, dev)).numpy(), (x * x).sum(1))
    np.testing.assert_allclose(lazyscope.vmap(lambda c, s: c * s, in_dims=(1, None))(t(x, dev), t(2.0, dev)).numpy(),
                               (x * 2).T)
    first, second = lazyscope.vmap(lambda r: (r.sum(), r * 2), out_dims=(0, 1))(t(x, dev))
    np.testing.assert_allclose(first.numpy(), x.sum(1))
    np.testing.assert_allclose(second.numpy(), (x * 2).T)
    with pytest.raises(ValueError, match="different sizes"):
        lazyscope.vmap(lambda a, b: a + b)(t(x, dev), t(np.ones((3, 3)), dev))

    # Per-sample gradients of a squared error: vmap(grad(loss)) over (x_i, y_i).
    def loss(w, xi, yi):
        return ((xi * w).sum() - yi) ** 2

    per_sample = lazyscope.vmap(func.grad(loss), in_dims=(None, 0, 0))(t(w0, dev), t(x, dev), t(y, dev))
    want = 2 * ((x @ w0) - y)[:, None] * x
    np.testing.assert_allclose(per_sample.detach().numpy(), want, rtol=1e-12)
