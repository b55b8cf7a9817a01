"""torch.autograd.Function's contract on both devices: forward without a
graph, the user's backward run by the engine's backward (against finite
differences), saved tensors, needs_input_grad, several outputs (an unused
one's gradient materialized as zeros), non-differentiable outputs, values
left exactly as forward made them, and a clear error for a wrong gradient."""
import numpy as np
import pytest

import lazyscope
from lazyscope.autograd import Function

DEVICES = ["cpu", "lazy:0"]


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x


class ScaledPair(Function):
    """(x * k + y, x - y) with a Python number k between the tensors."""

    @staticmethod
    def forward(ctx, x, k, y):
        ctx.k = k
        ctx.seen = ctx.needs_input_grad
        return x * k + y, x - y

    @staticmethod
    def backward(ctx, ga, gb):
        return ga * ctx.k + gb, None, ga - gb


def numeric(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("device", DEVICES)
def test_a_custom_backward_runs_where_the_engine_would_differentiate(device):
    a = np.array([[0.5, -1.5, 2.0], [1.0, -0.3, 0.7]])
    w = np.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]])
    x = lazyscope.tensor(a, device=device, requires_grad=True)
    y = Cube.apply(x.sin())  # inside a graph: before and after it
    loss = (y * lazyscope.tensor(w, device=device)).sum()
    loss.backward()
    np.testing.assert_allclose(y.numpy(), np.sin(a) ** 3, rtol=1e-15)
    np.testing.assert_allclose(x.grad.numpy(), numeric(lambda v: (np.sin(v) ** 3 * w).sum(), a), rtol=1e-7)
    assert y.grad_fn is not None and not y.is_leaf


@pytest.mark.parametrize("device", DEVICES)
def test_several_outputs_a_number_argument_and_an_unused_output(device):
    a, b = np.array([1.0, 2.0, -3.0]), np.array([0.5, -1.0, 4.0])
    x = lazyscope.tensor(a, device=device, requires_grad=True)
    y = lazyscope.tensor(b, device=device, requires_grad=True)
    p, q = ScaledPair.apply(x, 2.5, y)
    np.testing.assert_array_equal(p.numpy(), a * 2.5 + b)
    np.testing.assert_array_equal(q.numpy(), a - b)
    (p * p).sum().backward()  # q unused: its gradient is zeros in backward
    np.testing.assert_allclose(x.grad.numpy(), 2 * (a * 2.5 + b) * 2.5, rtol=1e-14)
    np.testing.assert_allclose(y.grad.numpy(), 2 * (a * 2.5 + b), rtol=1e-14)
    x.grad = None
    y.grad = None
    p, q = ScaledPair.apply(x, 2.5, lazyscope.tensor(b, device=device))
    (p.sum() + 3.0 * q.sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 2.5 + 3.0), rtol=1e-14)


def test_values_stay_exact_and_no_graph_without_grad():
    a = np.array([-0.0, np.inf, -np.inf, np.nan, 1e-310])
    x = lazyscope.tensor(a, requires_grad=True)

    class Same(Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        def backward(ctx, g):
            return g
    out = Same.apply(x).numpy()
    np.testing.assert_array_equal(out, a)
    assert np.signbit(out[0])
    with lazyscope.no_grad():
        plain = Same.apply(x)
    assert plain.grad_fn is None and not plain.requires_grad


def test_non_differentiable_outputs_and_a_wrong_gradient_shape():
    class ArgmaxAndMax(Function):
        @staticmethod
        def forward(ctx, t):
            i = t.argmax()
            ctx.mark_non_differentiable(i)
            ctx.save_for_backward(t, i)
            return t.max(), i

        @staticmethod
        def backward(ctx, g, _):
            t, i = ctx.saved_tensors
            grad = lazyscope.zeros_like(t)
            grad[i] = g
            return grad
    x = lazyscope.tensor(np.array([1.0, 5.0, 2.0]), requires_grad=True)
    m, i = ArgmaxAndMax.apply(x)
    assert not i.requires_grad and int(i.item()) == 1
    m.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])

    class Wrong(Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2.0

        @staticmethod
        def backward(ctx, g):
            return g.sum()
    with pytest.raises(RuntimeError, match=r"Wrong.backward: the gradient of input 0 has shape \(\), expected \(3,\)"):
        Wrong.apply(lazyscope.ones(3, requires_grad=True)).sum().backward()


def test_autograd_backward_sums_several_roots():
    x = lazyscope.tensor(np.array([1.0, 2.0]), requires_grad=True)
    lazyscope.autograd.backward([(x * x).sum(), (x * 3.0).sum()])
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 7.0])


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_grad_returns_gradients_and_writes_no_grad(device):
    a, b = np.array([[0.5, -1.0], [2.0, 0.3]]), np.array([1.5, -0.5])
    w = lazyscope.tensor(a, device=device, requires_grad=True)
    x = lazyscope.tensor(b, device=device, requires_grad=True)
    h = (w @ x).tanh()                       # a non-leaf input too
    y = (h * h).sum() + (x * 3.0).sum()
    gw, gx, gh = lazyscope.autograd.grad(y, [w, x, h])
    hv = np.tanh(a @ b)
    dh = 2 * hv
    dz = dh * (1 - hv ** 2)
    np.testing.assert_allclose(gh.numpy(), dh, rtol=1e-13)
    np.testing.assert_allclose(gw.numpy(), np.outer(dz, b), rtol=1e-13)
    np.testing.assert_allclose(gx.numpy(), a.T @ dz + 3.0, rtol=1e-13)
    assert w.grad is None and x.grad is None    # nothing accumulated
    # Several outputs with their gradients; the FGSM pattern (the input's gradient only).
    g1 = lazyscope.tensor(np.array([2.0, -1.0]), device=device)
    z = w @ x
    (gx2,) = lazyscope.autograd.grad([z, (x * x).sum()], x, grad_outputs=[g1, None])
    np.testing.assert_allclose(gx2.numpy(), a.T @ np.array([2.0, -1.0]) + 2 * b, rtol=1e-13)


def test_autograd_grad_unused_inputs_and_refusals():
    x = lazyscope.tensor(np.array([1.0, 2.0]), requires_grad=True)
    u = lazyscope.tensor(np.array([5.0]), requires_grad=True)
    with pytest.raises(Exception, match="input 1 of shape \\[1\\] was not used"):
        lazyscope.autograd.grad((x * x).sum(), [x, u])
    gx, gu = lazyscope.autograd.grad((x * x).sum(), [x, u], allow_unused=True)
    np.testing.assert_array_equal(gx.numpy(), [2.0, 4.0])
    assert gu is None
    gx, gu = lazyscope.autograd.grad((x * x).sum(), [x, u], materialize_grads=True)
    np.testing.assert_array_equal(gu.numpy(), [0.0])
    (g,) = lazyscope.autograd.grad((x * x * x).sum(), x, create_graph=True)  # 3x^2, with a graph
    np.testing.assert_array_equal(lazyscope.autograd.grad(g.sum(), x)[0].numpy(), 6 * x.detach().numpy())
    with pytest.raises(Exception, match="does not require grad"):
        lazyscope.autograd.grad((x * x).sum(), lazyscope.ones(2))
    y = (x * x).sum()
    lazyscope.autograd.grad(y, x)
    with pytest.raises(Exception, match="second time"):
        lazyscope.autograd.grad(y, x)  # the graph was freed (retain_graph=False)


@pytest.mark.parametrize("device", ["cpu", "lazy:0"])
def test_a_functions_output_that_nobody_holds_still_runs_its_backward(device):
    """The hooks that route a Function's gradient live on its output's
    node: an output dropped at once (f(x).sum().backward()) still gets the
    user's backward, not zeros; the same for a hooked intermediate."""
    class Triple(lazyscope.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * 2  # deliberately not 3: the user's rule, not the forward's derivative

    z = lazyscope.tensor([0.5, 2.0], dtype=lazyscope.float64, device=device, requires_grad=True)
    Triple.apply(z).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), [2.0, 2.0])
    x = lazyscope.tensor([1.0, -1.0], dtype=lazyscope.float64, device=device, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    total = y.sum()
    del y
    total.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [20.0, 20.0])


@pytest.mark.parametrize("device", ["cpu", "lazy:0"])
def test_two_applications_on_one_input_each_get_their_own_backward(device):
    """Each application's gradient reaches its input through a node of its
    own: with views of the input (which share theirs), the second
    application's hooks replaced the first's and its gradient came back
    zero."""
    class Scale(lazyscope.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = lazyscope.tensor([1.0, 2.0], dtype=lazyscope.float64, device=device, requires_grad=True)
    a, b = Scale.apply(x, 3.0), Scale.apply(x, 5.0)
    (a * b.detach()).sum().backward()  # only a's path: 3 * b
    np.testing.assert_array_equal(x.grad.numpy(), [15.0, 30.0])
    x = lazyscope.tensor([1.0, 2.0], dtype=lazyscope.float64, device=device, requires_grad=True)
    a, b = Scale.apply(x, 3.0), Scale.apply(x, 5.0)
    (a + b).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 8.0])
