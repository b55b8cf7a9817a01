"""In-place ops and views on both devices: in-place ops rebind the tensor,
writes through views reach their base (and sibling views see them),
expanded views refuse writes, and autograd follows PyTorch's rules (leaf
errors, version counters). NumPy is the oracle for values, central finite
differences for gradients."""
import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(5)

INPLACE = [
    ("add_", lambda t: t.add_(2.0), lambda x: x + 2.0),
    ("add_ alpha", lambda t: t.add_(t, alpha=0.5), lambda x: x + 0.5 * x),
    ("sub_", lambda t: t.sub_(1.5), lambda x: x - 1.5),
    ("mul_", lambda t: t.mul_(t), lambda x: x * x),
    ("div_", lambda t: t.div_(4.0), lambda x: x / 4.0),
    ("pow_", lambda t: t.pow_(2), lambda x: x ** 2),
    ("neg_", lambda t: t.neg_(), lambda x: -x),
    ("abs_", lambda t: t.abs_(), np.abs),
    ("exp_", lambda t: t.exp_(), np.exp),
    ("relu_", lambda t: t.relu_(), lambda x: np.maximum(x, 0)),
    ("sigmoid_", lambda t: t.sigmoid_(), lambda x: 1 / (1 + np.exp(-x))),
    ("tanh_", lambda t: t.tanh_(), np.tanh),
    ("clamp_", lambda t: t.clamp_(-0.5, 0.5), lambda x: np.clip(x, -0.5, 0.5)),
    ("zero_", lambda t: t.zero_(), np.zeros_like),
    ("fill_", lambda t: t.fill_(3.25), lambda x: np.full_like(x, 3.25)),
    ("copy_", lambda t: t.copy_(lazyscope.tensor(np.arange(4.0), device=t.device)),
     lambda x: np.broadcast_to(np.arange(4.0), x.shape)),
    ("+=", None, lambda x: x + 1.0),
    ("addcmul_", lambda t: t.addcmul_(t, t, value=0.5), lambda x: x + 0.5 * x * x),
    ("tril_", lambda t: t.tril_(), np.tril),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,op,ref", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_ops_match_numpy_and_return_self(device, name, op, ref):
    x = rng.standard_normal((3, 4))
    t = lazyscope.tensor(x, device=device)
    version = t._version
    if op is None:
        alias = t
        t += 1.0
        assert t is alias
    else:
        assert op(t) is t
    assert t._version == version + 1
    np.testing.assert_allclose(t.numpy(), ref(x), rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_dtype_and_shape_rules(device):
    i = lazyscope.tensor([1, 2, 3], device=device)
    with pytest.raises(lazyscope.EngineError, match="add_: result type float32 can't be cast to the desired output type int64"):
        i.add_(1.5)
    i.mul_(2)
    assert i.dtype == lazyscope.int64 and i.tolist() == [2, 4, 6]
    f = lazyscope.zeros(3, device=device)
    f.add_(lazyscope.tensor([1, 2, 3], device=device))  # int into float is fine
    assert f.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(lazyscope.ShapeError, match=r"add_: output with shape \[3\] doesn't match the broadcast shape \[2, 3\]"):
        f.add_(lazyscope.zeros(2, 3, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_writes_through_views_reach_the_base(device):
    x = rng.standard_normal((3, 4))
    t = lazyscope.tensor(x, device=device)
    expected = x.copy()
    row = t[0]
    row.add_(1.0)
    expected[0] += 1.0
    t.view(12).mul_(2.0)
    expected *= 2.0
    t.t()[1].sub_(3.0)
    expected[:, 1] -= 3.0
    t[:, ::2][1:].fill_(0.0)
    expected[1:, ::2] = 0.0
    first, _ = t.split(2)
    first.neg_()
    expected[:2] *= -1
    t.unsqueeze(0).squeeze(0).flatten()[5:7].zero_()
    expected.reshape(-1)[5:7] = 0
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-12)
    # the views see the later writes to the base and to each other
    np.testing.assert_allclose(row.numpy(), expected[0], rtol=1e-12)
    np.testing.assert_allclose(first.numpy(), expected[:2], rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_sibling_views_and_chains_stay_consistent(device):
    t = lazyscope.zeros(2, 3, device=device)
    a, b = t[0], t[:, 1]
    a.fill_(1.0)
    b.add_(5.0)
    expected = np.array([[1.0, 6.0, 1.0], [0.0, 5.0, 0.0]])
    np.testing.assert_array_equal(t.numpy(), expected)
    np.testing.assert_array_equal(a.numpy(), expected[0])
    np.testing.assert_array_equal(b.numpy(), expected[:, 1])
    d = t.detach()
    d.mul_(2.0)  # detach() shares the data, as in PyTorch
    np.testing.assert_array_equal(t.numpy(), expected * 2)


@pytest.mark.parametrize("device", DEVICES)
def test_expanded_views_refuse_writes(device):
    t = lazyscope.zeros(3, device=device)
    e = t.expand(2, 3)
    with pytest.raises(lazyscope.EngineError, match="cannot write into an expanded view.*clone"):
        e.add_(1.0)
    assert t.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_autograd_rules(device):
    w = lazyscope.ones(3, device=device, requires_grad=True)
    with pytest.raises(lazyscope.EngineError, match="a leaf Variable that requires grad is being used in an in-place"):
        w.add_(1.0)
    with pytest.raises(lazyscope.EngineError, match="a view of a leaf Variable"):
        w[0].mul_(2.0)
    with lazyscope.no_grad():
        w.sub_(0.5)  # an optimizer step
    assert w.is_leaf and w.requires_grad and w.tolist() == [0.5, 0.5, 0.5]
    w.data.mul_(2.0)
    assert w.tolist() == [1.0, 1.0, 1.0] and w.is_leaf


@pytest.mark.parametrize("device", DEVICES)
def test_modified_saved_tensor_makes_backward_raise(device):
    w = lazyscope.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = w * 3.0
    z = y * y  # saves y
    y.add_(1.0)
    with pytest.raises(lazyscope.EngineError, match="modified by an inplace operation.*version 1; expected version 0"):
        z.sum().backward()
    out = w.exp()
    s = out.sum()
    out.mul_(2.0)  # exp saves its output
    with pytest.raises(lazyscope.EngineError, match="output 0 of exp"):
        s.backward()
    # add does not save its inputs: changing them later is no error
    a = w * 1.0
    b = a + 1.0
    a.zero_()
    b.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0])


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_gradients_match_finite_differences(device):
    def fn(x, v):
        y = x * 1.0
        y.mul_(v)
        y[0].add_(v)
        y.relu_()
        return y.exp()

    def ref(x, v):
        y = x * v
        y[0] += v
        return np.exp(np.maximum(y, 0))
    check(fn, ref, [rng.standard_normal((2, 3)) + 0.05, rng.standard_normal(3)], device)

    def through_view(x):
        y = x * 2.0
        y.t()[1].mul_(x[:, 1])
        return y

    def ref_view(x):
        y = x * 2.0
        y[:, 1] *= x[:, 1]
        return y
    check(through_view, ref_view, [rng.standard_normal((3, 2))], device)


def test_lazy_inplace_equals_eager_and_traces_one_graph():
    x = rng.standard_normal((4, 4)).astype(np.float32)
    outs = []
    for device in DEVICES:
        t = lazyscope.tensor(x, device=device)
        v = t[1:3]
        for _ in range(3):
            v.mul_(1.5)
            t.add_(0.25)
        outs.append(t.numpy())
    np.testing.assert_array_equal(outs[0], outs[1])
    lm.mark_step()


def test_grad_zero_and_optimizer_step_pattern():
    device = "lazy:0"
    w = lazyscope.tensor(rng.standard_normal(3), device=device, requires_grad=True)
    x = lazyscope.tensor(rng.standard_normal(3), device=device)
    for _ in range(2):
        (w * x).sum().backward()
        with lazyscope.no_grad():
            w.sub_(w.grad, alpha=0.1)
            w.grad.zero_()
        lm.mark_step()
    assert w.grad.tolist() == [0.0, 0.0, 0.0]


def test_inplace_training_loop_hits_the_compile_cache():
    """A rebound tensor is listed once among a graph's outputs, in a stable
    order: after the first two steps (without, then with a .grad to add to)
    every step is a cache hit."""
    device = lm.lazy_device()
    w = lazyscope.tensor(rng.standard_normal((4, 2)), device=device, requires_grad=True)
    compiles = []
    for _ in range(6):
        x = lazyscope.tensor(rng.standard_normal((8, 4)), device=device)
        loss = ((x @ w) ** 2).mean()
        loss.backward()
        with lazyscope.no_grad():
            w.sub_(w.grad, alpha=0.1)
            w.grad.zero_()
        lm.mark_step()
        compiles.append(lm.counters().get("UncachedCompile", 0))
    assert compiles[2:] == [compiles[1]] * 4
