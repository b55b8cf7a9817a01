"""Every elementwise op on both devices against NumPy (math.erf for erf and
gelu), with broadcasting and dtype promotion, plus lazy == eager bit for bit."""
import math

import numpy as np
import pytest

import lazyscope

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(11)
erf = np.vectorize(math.erf, otypes=[np.float64])


def softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


# name, lazyscope function, NumPy reference (computed in float64), input domain
UNARY = [
    ("neg", lambda t: -t, lambda x: -x, "any"),
    ("neg_method", lambda t: t.neg(), lambda x: -x, "any"),
    ("abs", abs, np.abs, "any"),
    ("abs_fn", lazyscope.abs, np.abs, "any"),
    ("exp", lambda t: t.exp(), np.exp, "any"),
    ("log", lambda t: t.log(), np.log, "positive"),
    ("log1p", lazyscope.log1p, np.log1p, "above-1"),
    ("sqrt", lambda t: t.sqrt(), np.sqrt, "positive"),
    ("rsqrt", lambda t: t.rsqrt(), lambda x: 1 / np.sqrt(x), "positive"),
    ("sin", lambda t: t.sin(), np.sin, "any"),
    ("cos", lazyscope.cos, np.cos, "any"),
    ("tanh", lambda t: t.tanh(), np.tanh, "any"),
    ("erf", lambda t: t.erf(), erf, "any"),
    ("sigmoid", lambda t: t.sigmoid(), lambda x: 1 / (1 + np.exp(-x)), "any"),
    ("relu", lambda t: t.relu(), lambda x: np.maximum(x, 0), "any"),
    ("gelu", lazyscope._C.gelu, lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), "any"),
    ("silu", lazyscope._C.silu, lambda x: x / (1 + np.exp(-x)), "any"),
    ("softplus", lazyscope._C.softplus, softplus_ref, "any"),
    ("softplus_beta", lambda t: lazyscope._C.softplus(t, beta=2.0, threshold=3.0),
     lambda x: softplus_ref(x, 2.0, 3.0), "any"),
    ("leaky_relu", lambda t: lazyscope._C.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x), "any"),
    ("clamp", lambda t: t.clamp(-0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), "any"),
    ("clamp_min", lambda t: t.clamp(min=0.1), lambda x: np.maximum(x, 0.1), "any"),
    ("clip_max", lambda t: lazyscope.clip(t, max=-0.2), lambda x: np.minimum(x, -0.2), "any"),
]


def sample(shape, domain, dtype=np.float32):
    x = rng.standard_normal(shape) * 2
    if domain == "positive":
        x = np.abs(x) + 0.1
    elif domain == "above-1":
        x = np.abs(x) - 0.9
    return x.astype(dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,ref,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_matches_numpy(device, dtype, name, fn, ref, domain):
    x = sample((3, 5), domain, dtype)
    out = fn(lazyscope.tensor(x, device=device))
    assert out.dtype == lazyscope.tensor(x).dtype
    tol = 2e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), ref(x.astype(np.float64)), rtol=tol, atol=tol)


FLOAT_ONLY = ["exp", "log", "sqrt", "sin", "tanh", "erf", "sigmoid", "gelu", "silu", "softplus", "rsqrt"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref,domain", [u for u in UNARY if u[0] in FLOAT_ONLY], ids=FLOAT_ONLY)
def test_floating_ops_compute_integers_in_float32(device, name, fn, ref, domain):
    x = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
    out = fn(lazyscope.tensor(x, device=device))
    assert out.dtype == lazyscope.float32
    np.testing.assert_allclose(out.numpy(), ref(x.astype(np.float64)), rtol=2e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_integer_unary_ops_stay_integer(device):
    x = np.array([-3, 0, 4, -7], dtype=np.int64)
    t = lazyscope.tensor(x, device=device)
    assert (-t).tolist() == (-x).tolist() and (-t).dtype == lazyscope.int64
    assert abs(t).tolist() == np.abs(x).tolist()
    assert t.relu().tolist() == np.maximum(x, 0).tolist()
    assert t.clamp(-2, 3).tolist() == np.clip(x, -2, 3).tolist() and t.clamp(-2, 3).dtype == lazyscope.int64
    assert t.clamp(min=0.5).dtype == lazyscope.float32
    np.testing.assert_array_equal(t.clamp(min=0.5).numpy(), np.maximum(x, 0.5).astype(np.float32))


ARITH = [
    ("add", lambda a, b: a + b, np.add),
    ("sub", lambda a, b: a - b, np.subtract),
    ("mul", lambda a, b: a * b, np.multiply),
    ("div", lambda a, b: a / b, np.divide),
    ("div_fn", lazyscope.div, np.divide),
    ("maximum", lazyscope.maximum, np.maximum),
    ("minimum", lambda a, b: a.minimum(b), np.minimum),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,fn,ref", ARITH, ids=[a[0] for a in ARITH])
def test_binary_with_broadcasting_matches_numpy(device, dtype, name, fn, ref):
    a, b = sample((3, 1, 4), "any", dtype), sample((5, 4), "any", dtype)
    out = fn(lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device))
    assert out.shape == (3, 5, 4)
    tol = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(out.numpy(), ref(a, b), rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_pow_tensor_and_scalar_exponents(device):
    a, b = sample((4, 3), "positive"), sample((3,), "any")
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    np.testing.assert_allclose((ta ** tb).numpy(), a.astype(np.float64) ** b, rtol=1e-5)
    np.testing.assert_allclose((ta ** 2).numpy(), a ** 2, rtol=1e-6)
    np.testing.assert_allclose((ta ** 0.5).numpy(), np.sqrt(a), rtol=1e-6)
    np.testing.assert_allclose((2 ** tb).numpy(), 2.0 ** b, rtol=1e-6)
    np.testing.assert_allclose(lazyscope.pow(ta, 3).numpy(), a.astype(np.float64) ** 3, rtol=1e-6)
    i = lazyscope.tensor(np.array([-2, 0, 3, 5]), device=device)
    assert (i ** 3).dtype == lazyscope.int64 and (i ** 3).tolist() == [-8, 0, 27, 125]
    assert (i ** 0.5).dtype == lazyscope.float32
    with pytest.raises(RuntimeError, match="negative integer powers"):
        (i ** -1).tolist()


@pytest.mark.parametrize("device", DEVICES)
def test_true_division_of_integers_gives_float32(device):
    a, b = np.array([7, -7, 1, 9]), np.array([2, 2, 3, 4])
    out = lazyscope.tensor(a, device=device) / lazyscope.tensor(b, device=device)
    assert out.dtype == lazyscope.float32
    np.testing.assert_allclose(out.numpy(), (a / b).astype(np.float32))
    assert (lazyscope.tensor(a, device=device) / 2).tolist() == [3.5, -3.5, 0.5, 4.5]
    np.testing.assert_allclose((1 / lazyscope.tensor(b, device=device)).numpy(), (1 / b).astype(np.float32))


@pytest.mark.parametrize("device", DEVICES)
def test_maximum_and_minimum_propagate_nan(device):
    a = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    b = np.array([np.nan, 2.0, 1.0], dtype=np.float32)
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    np.testing.assert_array_equal(lazyscope.maximum(ta, tb).numpy(), np.maximum(a, b))
    np.testing.assert_array_equal(lazyscope.minimum(ta, tb).numpy(), np.minimum(a, b))


COMPARE = [
    ("eq", lambda a, b: a == b, np.equal),
    ("ne", lambda a, b: a != b, np.not_equal),
    ("lt", lambda a, b: a < b, np.less),
    ("le", lambda a, b: a <= b, np.less_equal),
    ("gt", lambda a, b: a > b, np.greater),
    ("ge", lambda a, b: a >= b, np.greater_equal),
    ("ge_method", lambda a, b: a.ge(b) if isinstance(a, lazyscope.Tensor) else b.le(a), np.greater_equal),
    ("lt_fn", lazyscope.lt, np.less),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref", COMPARE, ids=[c[0] for c in COMPARE])
def test_comparisons_give_bool_and_promote(device, name, fn, ref):
    a = rng.integers(-3, 3, (4, 1)).astype(np.int32)
    b = (rng.integers(-6, 6, (5,)) / 2).astype(np.float64)  # ties with a happen
    out = fn(lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device))
    assert out.dtype == lazyscope.bool
    np.testing.assert_array_equal(out.numpy(), ref(a, b))
    scalar = fn(lazyscope.tensor(a, device=device), 1)
    np.testing.assert_array_equal(scalar.numpy(), ref(a, 1))
    reflected = fn(0.5, lazyscope.tensor(b, device=device))
    np.testing.assert_array_equal(reflected.numpy(), ref(0.5, b))


@pytest.mark.parametrize("device", DEVICES)
def test_logical_ops_take_any_dtype(device):
    a = np.array([[0, 1, 2, 0]], dtype=np.int64)
    b = np.array([[0.0], [0.5]], dtype=np.float32)
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    np.testing.assert_array_equal(lazyscope.logical_and(ta, tb).numpy(), np.logical_and(a, b))
    np.testing.assert_array_equal(ta.logical_or(tb).numpy(), np.logical_or(a, b))
    np.testing.assert_array_equal(ta.logical_not().numpy(), np.logical_not(a))
    assert lazyscope.logical_not(tb).dtype == lazyscope.bool


@pytest.mark.parametrize("device", DEVICES)
def test_where_broadcasts_and_promotes(device):
    c = rng.random((3, 1)) > 0.5
    x, y = sample((3, 4), "any"), np.arange(4, dtype=np.int64)
    tc = lazyscope.tensor(c, device=device)
    out = lazyscope.where(tc, lazyscope.tensor(x, device=device), lazyscope.tensor(y, device=device))
    assert out.dtype == lazyscope.float32
    np.testing.assert_array_equal(out.numpy(), np.where(c, x, y.astype(np.float32)))
    np.testing.assert_array_equal(lazyscope.where(tc, lazyscope.tensor(x, device=device), 0.0).numpy(),
                                  np.where(c, x, np.float32(0)))
    ints = lazyscope.where(lazyscope.tensor(y, device=device) > 1, lazyscope.tensor(y, device=device), -1)
    assert ints.dtype == lazyscope.int64 and ints.tolist() == [-1, -1, 2, 3]
    np.testing.assert_array_equal(lazyscope.tensor(x, device=device).where(tc, 1.5).numpy(),
                                  np.where(c, x, np.float32(1.5)))


@pytest.mark.parametrize("device", DEVICES)
def test_mixed_dtype_binary_ops(device):
    a = rng.integers(-5, 5, (2, 3)).astype(np.int32)
    b = sample((3,), "any", np.float64)
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    for out, ref in [(ta * tb, a * b), (ta / tb, a / b), (lazyscope.maximum(ta, tb), np.maximum(a, b))]:
        assert out.dtype == lazyscope.float64
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-14)


def test_equality_with_other_types_is_false_and_tensors_hash():
    t = lazyscope.ones(2)
    assert (t == None) is False  # noqa: E711
    assert t != "x"
    assert len({t: 1, lazyscope.ones(2): 2}) == 2


def test_lazy_equals_eager_for_every_elementwise_op():
    x = sample((4, 6), "any")
    p = sample((4, 6), "positive")
    results = []
    for device in DEVICES:
        t, tp = lazyscope.tensor(x, device=device), lazyscope.tensor(p, device=device)
        outs = [fn(tp if domain != "any" else t) for name, fn, ref, domain in UNARY]
        outs += [fn(t, tp) for name, fn, ref in ARITH + COMPARE]
        outs += [tp ** t, lazyscope.where(t > 0, t, tp), lazyscope.logical_and(t > 0, tp < 1)]
        results.append([o.numpy() for o in outs])
    for eager, lazy in zip(*results):
        np.testing.assert_array_equal(eager, lazy)
