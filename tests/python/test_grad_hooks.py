"""Tensor.register_hook and retain_grad on both devices: hooks see the
gradient that reaches their tensor (checked against the analytic gradient
in NumPy), may replace it (the change flows on to earlier tensors and into
a leaf's .grad), run in registration order, can be removed; retain_grad
keeps a non-leaf's gradient; errors name the problem."""
import numpy as np
import pytest

import lazyscope

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(19)


@pytest.mark.parametrize("device", DEVICES)
def test_hooks_see_and_replace_gradients(device):
    a = rng.standard_normal((3, 4))
    x = lazyscope.tensor(a, device=device, requires_grad=True)
    y = x * x          # dy/dx = 2x
    z = (y * 3).sum()  # dz/dy = 3
    seen = {}

    def record(name):
        def hook(g):
            seen[name] = g.numpy().copy()  # returns None: the gradient flows on unchanged
        return hook

    y.register_hook(record("y"))
    y.register_hook(lambda g: g * 10)  # replaces: x's gradient becomes 2x * 30
    y.register_hook(record("y_after"))
    x.register_hook(record("x"))
    z.backward()
    np.testing.assert_allclose(seen["y"], np.full((3, 4), 3.0))
    np.testing.assert_allclose(seen["y_after"], np.full((3, 4), 30.0))  # hooks chain in order
    np.testing.assert_allclose(seen["x"], 60 * a)
    np.testing.assert_allclose(x.grad.numpy(), 60 * a)


@pytest.mark.parametrize("device", DEVICES)
def test_a_leaf_hook_changes_what_is_accumulated_and_can_be_removed(device):
    a = rng.standard_normal(5)
    x = lazyscope.tensor(a, device=device, requires_grad=True)
    handle = x.register_hook(lambda g: g.clamp(-0.5, 0.5))  # gradient clipping by hook
    (x * lazyscope.tensor(np.arange(5.0) - 2, device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.clip(np.arange(5.0) - 2, -0.5, 0.5))
    handle.remove()
    x.grad = None
    (x * lazyscope.tensor(np.arange(5.0) - 2, device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.arange(5.0) - 2)


@pytest.mark.parametrize("device", DEVICES)
def test_retain_grad_keeps_a_non_leaf_gradient(device):
    a = rng.standard_normal((2, 3))
    x = lazyscope.tensor(a, device=device, requires_grad=True)
    h = x.exp()
    h.retain_grad()
    assert h.retains_grad and not x.retains_grad
    w = lazyscope.tensor(np.array([1.0, -2.0, 0.5]), device=device)
    (h * w).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), np.broadcast_to([1.0, -2.0, 0.5], (2, 3)))
    np.testing.assert_allclose(x.grad.numpy(), np.exp(a) * [1.0, -2.0, 0.5])
    other = x.sin()
    (other * 2).sum().backward()
    assert other.grad is None  # not retained


def test_hook_errors_name_the_problem():
    x = lazyscope.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(lazyscope.EngineError, match="register_hook: cannot register a hook on a tensor that "
                                                    "doesn't require gradient"):
        lazyscope.ones(3).register_hook(lambda g: g)
    y = x * 2
    y.register_hook(lambda g: g.sum())
    with pytest.raises(lazyscope.ShapeError, match=r"a hook returned a gradient of shape \[\] for a tensor of "
                                                   r"shape \[3\]"):
        y.sum().backward()
    z = x * 3
    z.register_hook(lambda g: "nope")
    with pytest.raises(lazyscope.EngineError, match="a hook must return a Tensor or None, got str"):
        z.sum().backward()
    w = x * 4
    w.register_hook(lambda g: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        w.sum().backward()
    with pytest.raises(lazyscope.EngineError, match="retain_grad: can't retain_grad on Tensor that has "
                                                    "requires_grad=False"):
        lazyscope.ones(2).retain_grad()
