"""Autograd on both devices. Every gradient is checked against central finite
differences of an independent NumPy forward, in float64; the engine's own
forward is never the oracle. Lazy gradients must equal eager ones bit for bit."""
import math
import threading

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(21)
erf = np.vectorize(math.erf, otypes=[np.float64])


def numeric_grads(ref, arrays, weights, eps=1e-6):
    """d/dx_i of sum(ref(*arrays) * weights), by central differences."""
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            plus = [x.copy() for x in arrays]
            minus = [x.copy() for x in arrays]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            g[idx] = (np.sum(ref(*plus) * weights) - np.sum(ref(*minus) * weights)) / (2 * eps)
        grads.append(g)
    return grads


def engine_grads(fn, arrays, weights, device):
    leaves = [lazyscope.tensor(a, device=device, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    (out * lazyscope.tensor(weights, device=device)).sum().backward()
    return [leaf.grad.numpy() for leaf in leaves], out


def check(fn, ref, arrays, device, rtol=1e-6, atol=1e-7):
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    expected = ref(*arrays)
    weights = rng.standard_normal(np.shape(expected))
    grads, out = engine_grads(fn, arrays, weights, device)
    assert out.shape == np.shape(expected)
    for got, want in zip(grads, numeric_grads(ref, arrays, weights)):
        assert got.dtype == np.float64 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def away_from(x, points, gap=0.05):
    """Moves values off the kinks of non-smooth ops, where differences are meaningless."""
    for p in points:
        x = np.where(np.abs(x - p) < gap, p + gap * np.sign(x - p + 1e-12) * 2, x)
    return x


def sample(*shape, domain="any"):
    x = rng.standard_normal(shape)
    if domain == "positive":
        return np.abs(x) + 0.2
    if domain == "above-1":
        return np.abs(x) - 0.8
    return away_from(x, [0.0])


def softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


UNARY = [
    ("neg", lambda t: -t, lambda x: -x, "any"),
    ("abs", abs, np.abs, "any"),
    ("exp", lambda t: t.exp(), np.exp, "any"),
    ("log", lambda t: t.log(), np.log, "positive"),
    ("log1p", lambda t: t.log1p(), np.log1p, "above-1"),
    ("sqrt", lambda t: t.sqrt(), np.sqrt, "positive"),
    ("rsqrt", lambda t: t.rsqrt(), lambda x: 1 / np.sqrt(x), "positive"),
    ("sin", lambda t: t.sin(), np.sin, "any"),
    ("cos", lambda t: t.cos(), np.cos, "any"),
    ("tanh", lambda t: t.tanh(), np.tanh, "any"),
    ("erf", lambda t: t.erf(), erf, "any"),
    ("sigmoid", lambda t: t.sigmoid(), lambda x: 1 / (1 + np.exp(-x)), "any"),
    ("relu", lambda t: t.relu(), lambda x: np.maximum(x, 0), "any"),
    ("leaky_relu", lambda t: _C.leaky_relu(t, 0.1), lambda x: np.where(x > 0, x, 0.1 * x), "any"),
    ("gelu", _C.gelu, lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), "any"),
    ("silu", _C.silu, lambda x: x / (1 + np.exp(-x)), "any"),
    ("softplus", _C.softplus, softplus_ref, "any"),
    ("softplus_threshold", lambda t: _C.softplus(t, beta=2.0, threshold=1.0),
     lambda x: softplus_ref(x, 2.0, 1.0), "any"),
    ("clamp", lambda t: t.clamp(-0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), "any"),
    ("clamp_min", lambda t: t.clamp(min=0.3), lambda x: np.maximum(x, 0.3), "any"),
    ("pow_scalar", lambda t: t ** 3, lambda x: x ** 3, "any"),
    ("pow_fractional", lambda t: t ** 1.5, lambda x: x ** 1.5, "positive"),
    ("rpow", lambda t: 2.0 ** t, lambda x: 2.0 ** x, "any"),
    ("scalar_arith", lambda t: (3 - t) / 4 + 2.5 * t, lambda x: (3 - x) / 4 + 2.5 * x, "any"),
    ("rdiv", lambda t: 1.5 / t, lambda x: 1.5 / x, "positive"),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_gradients_match_finite_differences(device, name, fn, ref, domain):
    x = sample(3, 4, domain=domain)
    if name.startswith("clamp") or name.startswith("softplus_threshold"):
        x = away_from(x, [-0.5, 0.7, 0.3, 0.5])
    check(fn, ref, [x], device)


BINARY = [
    ("add", lambda a, b: a + b, np.add, "any"),
    ("sub", lambda a, b: a - b, np.subtract, "any"),
    ("mul", lambda a, b: a * b, np.multiply, "any"),
    ("div", lambda a, b: a / b, np.divide, "positive"),
    ("pow", lambda a, b: a ** b, np.power, "positive"),
    ("maximum", lazyscope.maximum, np.maximum, "any"),
    ("minimum", lazyscope.minimum, np.minimum, "any"),
    ("where", lambda a, b: lazyscope.where(a > 0.1, a * 2, b), lambda a, b: np.where(a > 0.1, a * 2, b), "any"),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1, 4), (5, 4)), ((4,), (2, 3, 1))], ids=str)
@pytest.mark.parametrize("name,fn,ref,domain", BINARY, ids=[b[0] for b in BINARY])
def test_binary_gradients_sum_broadcast_dims(device, shapes, name, fn, ref, domain):
    a, b = sample(*shapes[0], domain=domain), sample(*shapes[1], domain=domain)
    if name == "where":
        a = away_from(a, [0.1])
    check(fn, ref, [a, b], device)


def vals(t):
    return t[0] if isinstance(t, tuple) else t


REDUCTIONS = [
    ("sum", lambda t, d, k: t.sum(d, k), lambda x, d, k: np.sum(x, axis=d, keepdims=k)),
    ("mean", lambda t, d, k: t.mean(d, k), lambda x, d, k: np.mean(x, axis=d, keepdims=k)),
    ("prod", lambda t, d, k: t.prod(d, k), lambda x, d, k: np.prod(x, axis=d, keepdims=k)),
    ("amax", lambda t, d, k: t.amax(d, k), lambda x, d, k: np.max(x, axis=d, keepdims=k)),
    ("amin", lambda t, d, k: t.amin(d, k), lambda x, d, k: np.min(x, axis=d, keepdims=k)),
    ("var", lambda t, d, k: t.var(d, keepdim=k), lambda x, d, k: np.var(x, axis=d, keepdims=k, ddof=1)),
    ("var_pop", lambda t, d, k: t.var(d, keepdim=k, correction=0), lambda x, d, k: np.var(x, axis=d, keepdims=k)),
    ("std", lambda t, d, k: t.std(d, keepdim=k), lambda x, d, k: np.std(x, axis=d, keepdims=k, ddof=1)),
    ("logsumexp", lambda t, d, k: t.logsumexp(d, k),
     lambda x, d, k: np.log(np.sum(np.exp(x), axis=d, keepdims=k))),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, 1, (0, 2)], ids=str)
@pytest.mark.parametrize("name,fn,ref", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_reduction_gradients(device, keepdim, dim, name, fn, ref):
    if name == "prod" and isinstance(dim, tuple):
        dim = 2
    x = rng.permutation(np.linspace(0.5, 2.0, 24)).reshape(2, 3, 4)  # distinct, non-zero values
    check(lambda t: fn(t, dim, keepdim), lambda a: ref(a, dim, keepdim), [x], device, rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_max_min_with_dim_gradients_flow_through_values(device):
    x = rng.permutation(np.arange(12.0)).reshape(3, 4)
    check(lambda t: t.max(1).values, lambda a: np.max(a, axis=1), [x], device)
    check(lambda t: lazyscope.min(t, 0, True)[0], lambda a: np.min(a, axis=0, keepdims=True), [x], device)
    check(lambda t: t.max(), lambda a: np.max(a), [x], device)


LAYOUT = [
    ("reshape", lambda t: t.reshape(4, 6), lambda x: x.reshape(4, 6)),
    ("view_infer", lambda t: t.view(-1, 2), lambda x: x.reshape(-1, 2)),
    ("permute", lambda t: t.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1)),
    ("transpose", lambda t: t.transpose(-1, 0), lambda x: np.swapaxes(x, -1, 0)),
    ("T", lambda t: t.T, lambda x: x.T),
    ("expand", lambda t: t.reshape(2, 1, 12).expand(2, 5, 12), lambda x: np.broadcast_to(x.reshape(2, 1, 12), (2, 5, 12))),
    ("expand_lead", lambda t: t.expand(3, 2, 3, 4), lambda x: np.broadcast_to(x, (3, 2, 3, 4))),
    ("unsqueeze", lambda t: t.unsqueeze(1), lambda x: x[:, None]),
    ("squeeze", lambda t: t.reshape(2, 1, 12).squeeze(1), lambda x: x.reshape(2, 12)),
    ("flatten", lambda t: t.flatten(1), lambda x: x.reshape(2, 12)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref", LAYOUT, ids=[entry[0] for entry in LAYOUT])
def test_layout_gradients(device, name, fn, ref):
    check(fn, ref, [sample(2, 3, 4)], device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shapes", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (5, 4, 2)),
                                    ((4,), (4,)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,))], ids=str)
def test_matmul_gradients(device, shapes):
    check(lambda a, b: a @ b, np.matmul, [sample(*shapes[0]), sample(*shapes[1])], device)


@pytest.mark.parametrize("device", DEVICES)
def test_composite_model_gradient(device):
    """A small MLP with a log-softmax loss: many rules chained, shared inputs."""
    def forward(x, w1, w2):
        h = _C.gelu(x @ w1)
        logits = h @ w2
        return -(logits - logits.logsumexp(1, True)).mean() + (w1 * w1).sum() * 0.01

    def reference(x, w1, w2):
        h = 0.5 * (x @ w1) * (1 + erf((x @ w1) / np.sqrt(2)))
        logits = h @ w2
        lse = np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
        return -(logits - lse).mean() + (w1 * w1).sum() * 0.01

    check(forward, reference, [sample(5, 3), sample(3, 4), sample(4, 2)], device, rtol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_of_promoted_operands_come_back_in_their_dtype(device):
    x = lazyscope.tensor(np.array([1.0, 2.0, 3.0], dtype=np.float32), device=device, requires_grad=True)
    w = lazyscope.tensor(np.array([0.5, -1.0, 2.0]), dtype=lazyscope.float64, device=device, requires_grad=True)
    (x * w).sum().backward()
    assert x.grad.dtype == lazyscope.float32 and w.grad.dtype == lazyscope.float64
    np.testing.assert_array_equal(x.grad.numpy(), np.array([0.5, -1.0, 2.0], dtype=np.float32))
    np.testing.assert_array_equal(w.grad.numpy(), np.array([1.0, 2.0, 3.0]))
    y = lazyscope.tensor([1.0, 4.0], device=device, requires_grad=True)
    (y.double() ** 2).sum().backward()
    assert y.grad.dtype == lazyscope.float32 and y.grad.tolist() == [2.0, 8.0]


@pytest.mark.parametrize("device", DEVICES)
def test_grad_accumulates_and_retain_graph(device):
    x = lazyscope.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]  # 2 * 2x, accumulated
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("device", DEVICES)
def test_backward_with_a_gradient_argument(device):
    a = rng.standard_normal((2, 3))
    x = lazyscope.tensor(a, device=device, requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError, match="one element"):
        y.backward()
    v = rng.standard_normal((2, 3))
    y.backward(lazyscope.tensor(v, device=device))
    np.testing.assert_allclose(x.grad.numpy(), 2 * a * v, rtol=1e-6)
    with pytest.raises(lazyscope.ShapeError, match="gradient of shape"):
        (x * 2).backward(lazyscope.ones(3, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_shared_subexpressions_run_once_each_in_topological_order(device):
    x = lazyscope.tensor([0.5, -1.0], device=device, requires_grad=True)
    h = x.exp()
    y = (h * h + h.sin() * 3 + h).sum()  # h reaches y three ways
    y.backward()
    e = np.exp(np.array([0.5, -1.0]))
    np.testing.assert_allclose(x.grad.numpy(), (2 * e + 3 * np.cos(e) + 1) * e, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_a_long_chain_does_not_recurse(device):
    x = lazyscope.tensor([1.0], dtype=lazyscope.float64, device=device, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0001 ** 3000], rtol=1e-9)


@pytest.mark.parametrize("device", DEVICES)
def test_no_grad_detach_and_requires_grad_flags(device):
    x = lazyscope.ones(2, device=device, requires_grad=True)
    assert x.is_leaf and x.grad_fn is None and x.grad is None
    y = x * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn == "mul_backward"
    with lazyscope.no_grad():
        z = x * 2
        assert not lazyscope.is_grad_enabled()
        with lazyscope.enable_grad():
            assert (x * 2).requires_grad
    assert lazyscope.is_grad_enabled()
    assert not z.requires_grad and z.is_leaf

    @lazyscope.no_grad()
    def step():
        return x * 3
    assert not step().requires_grad
    d = y.detach()
    assert not d.requires_grad and d.tolist() == [2.0, 2.0]
    assert not (d * x).detach().requires_grad
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_()
    with pytest.raises(RuntimeError, match="floating point"):
        lazyscope.tensor([1, 2], device=device).requires_grad_()
    with pytest.raises(RuntimeError, match="does not require grad"):
        (d * 2).sum().backward()
    assert x.requires_grad_(False) is x and not x.requires_grad
    # Comparisons and argmax are not differentiable: no graph behind them.
    w = lazyscope.ones(2, device=device, requires_grad=True)
    assert not (w > 0).requires_grad and not w.argmax().requires_grad


def test_grad_mode_is_per_thread():
    seen = []
    with lazyscope.no_grad():
        thread = threading.Thread(target=lambda: seen.append(lazyscope.is_grad_enabled()))
        thread.start()
        thread.join()
    assert seen == [True]


def test_lazy_gradients_equal_eager_bit_for_bit():
    x, w1, w2 = sample(6, 5), sample(5, 4), sample(4, 3)
    results = []
    for device in DEVICES:
        leaves = [lazyscope.tensor(a.astype(np.float32), device=device, requires_grad=True) for a in (x, w1, w2)]
        h = (leaves[0] @ leaves[1]).tanh()
        loss = ((h @ leaves[2]).logsumexp(1) - h.amax(1)).mean() + leaves[2].var()
        loss.backward()
        results.append([t.grad.numpy() for t in leaves] + [loss.numpy()])
    for eager, lazy in zip(*results):
        np.testing.assert_array_equal(eager, lazy)


def test_a_lazy_training_step_with_backward_compiles_once_then_hits_the_cache():
    lm.mark_step()  # an earlier test's pending lazy values are not this loop's first graph
    _C.clear_compile_cache()
    _C.reset_metrics()
    device = lm.lazy_device()
    x = lazyscope.tensor(sample(16, 4), dtype=lazyscope.float32, device=device)
    y = lazyscope.tensor(sample(16, 1), dtype=lazyscope.float32, device=device)
    w = lazyscope.zeros(4, 1, device=device, requires_grad=True)
    losses = []
    for lr in (0.1, 0.1, 0.05, 0.05, 0.1):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with lazyscope.no_grad():
            w = (w - w.grad * lr).detach().requires_grad_()
        lm.mark_step()
        losses.append(loss.item())
    counters = lm.counters()
    assert counters["UncachedCompile"] == 1
    assert counters["CachedCompile"] == 4
    assert losses[-1] < losses[0]
