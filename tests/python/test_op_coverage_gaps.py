"""The gaps test_op_coverage.py's audit found, filled: 16-bit float inputs
(float16, bfloat16) for every op family, and index_add's values and gradient.

16-bit oracle: the inputs rounded to the 16-bit type (NumPy float16, or
bf16_round), the op in float64 by NumPy, the result rounded to the 16-bit
type; the engine computes in float32 and rounds once, so the two agree to
one unit in the last place of the 16-bit type. Lazy results equal eager ones
bit for bit."""
import numpy as np
import pytest

import lazyscope
from runtime_util import bf16_round
from test_autograd import check, erf, numeric_grads
from test_conv_pool_norm import adaptive_avg_pool2d_ref, avg_pool2d_ref, conv2d_ref, max_pool2d_ref

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(5)

# dtype -> (round float64 values to it, as float64; one unit in the last place at 1)
HALF = {
    "float16": (lambda x: np.asarray(x, np.float64).astype(np.float16).astype(np.float64), 2.0 ** -10),
    "bfloat16": (lambda x: bf16_round(np.asarray(x, np.float32)).astype(np.float64), 2.0 ** -7),
}


def engine_half(dtype_name, *arrays, device):
    """The arrays as tensors of the 16-bit type, and the float64 values they hold."""
    rnd, _ = HALF[dtype_name]
    dtype = getattr(lazyscope, dtype_name)
    tensors = [lazyscope.tensor(np.asarray(a, np.float32), device=device).to(dtype) for a in arrays]
    return tensors, [rnd(a) for a in arrays]


def check_half(dtype_name, fn, ref, arrays, ulps=1.0):
    """fn on both devices against round(ref(rounded inputs)); lazy == eager bit for bit."""
    rnd, eps = HALF[dtype_name]
    results = []
    for device in DEVICES:
        tensors, rounded = engine_half(dtype_name, *arrays, device=device)
        out = fn(*tensors)
        assert out.dtype == getattr(lazyscope, dtype_name)
        results.append(out.float().numpy())
    np.testing.assert_array_equal(results[0], results[1])
    want = rnd(ref(*rounded))
    np.testing.assert_allclose(results[0], want, rtol=ulps * eps, atol=ulps * eps * 1e-2)


HALF_DTYPES = list(HALF)

UNARY = [
    ("neg", lambda t: -t, lambda x: -x, "any"),
    ("abs", abs, np.abs, "any"),
    ("relu", lambda t: t.relu(), lambda x: np.maximum(x, 0), "any"),
    ("leaky_relu", lambda t: lazyscope._C.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x), "any"),
    ("clamp", lambda t: t.clamp(-0.5, 0.7), lambda x: np.clip(x, -0.5, 0.7), "any"),
    ("exp", lambda t: t.exp(), np.exp, "any"),
    ("log", lambda t: t.log(), np.log, "positive"),
    ("log1p", lambda t: t.log1p(), np.log1p, "positive"),
    ("sqrt", lambda t: t.sqrt(), np.sqrt, "positive"),
    ("rsqrt", lambda t: t.rsqrt(), lambda x: 1 / np.sqrt(x), "positive"),
    ("sin", lambda t: t.sin(), np.sin, "any"),
    ("cos", lambda t: t.cos(), np.cos, "any"),
    ("tanh", lambda t: t.tanh(), np.tanh, "any"),
    ("erf", lambda t: t.erf(), erf, "any"),
    ("sigmoid", lambda t: t.sigmoid(), lambda x: 1 / (1 + np.exp(-x)), "any"),
    ("gelu", lazyscope._C.gelu, lambda x: 0.5 * x * (1 + erf(x / np.sqrt(2))), "any"),
    ("silu", lazyscope._C.silu, lambda x: x / (1 + np.exp(-x)), "any"),
    ("softplus", lazyscope._C.softplus, lambda x: np.log1p(np.exp(x)), "any"),
]


@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize("name,fn,ref,domain", UNARY, ids=[u[0] for u in UNARY])
def test_unary_ops_on_16_bit_floats_match_numpy(dtype, name, fn, ref, domain):
    x = rng.standard_normal((3, 5)) * 2
    if domain == "positive":
        x = np.abs(x) + 0.1
    check_half(dtype, fn, ref, [x])


BINARY = [
    ("add", lambda a, b: a + b, np.add),
    ("sub", lambda a, b: a - b, np.subtract),
    ("mul", lambda a, b: a * b, np.multiply),
    ("div", lambda a, b: a / b, np.divide),
    ("maximum", lazyscope.maximum, np.maximum),
    ("minimum", lazyscope.minimum, np.minimum),
]


@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1, 4), (5, 4))], ids=str)
@pytest.mark.parametrize("name,fn,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_ops_on_16_bit_floats_match_numpy(dtype, shapes, name, fn, ref):
    a, b = rng.standard_normal(shapes[0]), np.abs(rng.standard_normal(shapes[1])) + 0.5
    check_half(dtype, fn, ref, [a, b])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_16_bit_floats_promote_with_other_dtypes(device, dtype):
    half = getattr(lazyscope, dtype)
    h = lazyscope.tensor([1.5, -2.0], device=device).to(half)
    assert (h + lazyscope.tensor([1, 2], device=device)).dtype == half  # int: the float wins
    assert (h + lazyscope.tensor([True, False], device=device)).dtype == half
    assert (h + lazyscope.tensor([1.0, 2.0], device=device)).dtype == lazyscope.float32
    assert (h * 2.5).dtype == half  # a Python float does not widen
    np.testing.assert_array_equal((h + lazyscope.tensor([1, 2], device=device)).float().numpy(), [2.5, 0.0])
    assert (h > 0).tolist() == [True, False] and (h == h).tolist() == [True, True]


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_matmul_on_16_bit_floats_matches_numpy(dtype):
    # Sums of products accumulate in float32 and round once: within 2 ulps of float64.
    check_half(dtype, lambda a, b: a @ b, np.matmul, [rng.standard_normal((2, 3, 8)), rng.standard_normal((8, 4))],
               ulps=2)


@pytest.mark.parametrize("dtype", HALF_DTYPES)
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "var", "logsumexp", "softmax", "log_softmax"])
def test_reductions_on_16_bit_floats_match_numpy(dtype, name):
    fns = {
        "sum": (lambda t: t.sum(1), lambda x: x.sum(1)),
        "mean": (lambda t: t.mean(1), lambda x: x.mean(1)),
        "amax": (lambda t: t.amax(1), lambda x: x.max(1)),
        "var": (lambda t: t.var(1), lambda x: x.var(1, ddof=1)),
        "logsumexp": (lambda t: t.logsumexp(1), lambda x: np.log(np.exp(x).sum(1))),
        "softmax": (lambda t: t.softmax(1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
        "log_softmax": (lambda t: t.log_softmax(1), lambda x: x - np.log(np.exp(x).sum(1, keepdims=True))),
    }
    fn, ref = fns[name]
    check_half(dtype, fn, ref, [rng.standard_normal((3, 6))], ulps=2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_argmax_argmin_of_16_bit_floats(device, dtype):
    x = rng.permutation(12).reshape(3, 4).astype(np.float64)  # distinct, exact in 16 bits
    t, _ = engine_half(dtype, x, device=device)
    np.testing.assert_array_equal(t[0].argmax(1).numpy(), x.argmax(1))
    np.testing.assert_array_equal(t[0].argmin(0).numpy(), x.argmin(0))


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_conv_and_pools_on_16_bit_floats_match_numpy(dtype):
    x = rng.standard_normal((2, 2, 6, 7))
    w = rng.standard_normal((3, 2, 3, 3))
    check_half(dtype, lambda t, k: lazyscope.conv2d(t, k, padding=1), lambda a, k: conv2d_ref(a, k, padding=1), [x, w],
               ulps=2)
    check_half(dtype, lambda t: lazyscope.max_pool2d(t, 2), lambda a: max_pool2d_ref(a, 2), [x])
    check_half(dtype, lambda t: lazyscope.avg_pool2d(t, 3, 2, 1), lambda a: avg_pool2d_ref(a, 3, 2, 1), [x])
    check_half(dtype, lambda t: lazyscope.adaptive_avg_pool2d(t, (2, 3)),
               lambda a: adaptive_avg_pool2d_ref(a, (2, 3)), [x])


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_scans_on_16_bit_floats_match_numpy(dtype):
    x = rng.uniform(0.5, 1.5, (3, 5))
    check_half(dtype, lambda t: t.cumsum(1), lambda a: np.cumsum(a, 1), [x], ulps=2)
    check_half(dtype, lambda t: lazyscope.cumprod(t, 1), lambda a: np.cumprod(a, 1), [x], ulps=2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_index_put_accumulate_on_16_bit_floats(device, dtype):
    rnd, eps = HALF[dtype]
    base, values = rng.standard_normal(6), rng.standard_normal(4)
    idx = np.array([1, 3, 1, 5])
    (t, v), (base16, values16) = engine_half(dtype, base, values, device=device)
    got = t.index_put([lazyscope.tensor(idx, device=device)], v, accumulate=True).float().numpy()
    want = base16.copy()
    np.add.at(want, idx, values16)
    np.testing.assert_allclose(got, rnd(want), rtol=2 * eps, atol=2 * eps)


def index_add_ref(a, index, src, dim):
    out = np.array(a, copy=True)
    for k, i in enumerate(index):
        out[(slice(None),) * dim + (i,)] += np.take(src, k, axis=dim)
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1])
def test_index_add_and_scatter_add_match_numpy(device, dim):
    a = rng.standard_normal((4, 5))
    index = np.array([2, 0, 2])  # a repeat adds twice
    src = rng.standard_normal((3, 5) if dim == 0 else (4, 3))
    ti = lazyscope.tensor(index, device=device)
    got = lazyscope.tensor(a, device=device).index_add(dim, ti, lazyscope.tensor(src, device=device))
    np.testing.assert_allclose(got.numpy(), index_add_ref(a, index, src, dim), rtol=1e-12)
    check(lambda t, s: t.index_add(dim, lazyscope.tensor(index, device=device), s),
          lambda t, s: index_add_ref(t, index, s, dim), [a, src], device)
    # scatter_add with repeated positions, in every dtype it accepts.
    positions = np.array([[0, 1, 0, 3, 3]])
    for dtype in (np.int32, np.int64, np.float32, np.float64):
        base = np.arange(4 * 5).reshape(4, 5).astype(dtype)
        ones = np.ones((1, 5), dtype)
        got = lazyscope.tensor(base, device=device).scatter_add(0, lazyscope.tensor(positions, device=device),
                                                                lazyscope.tensor(ones, device=device))
        want = base.copy()
        np.add.at(want, (positions[0], np.arange(5)), 1)
        assert got.numpy().dtype == dtype
        np.testing.assert_array_equal(got.numpy(), want)
    for dtype in HALF_DTYPES:
        (t, s), (t16, s16) = engine_half(dtype, a, src[:1] if dim == 0 else src[:, :1], device=device)
        pos = np.zeros((1, 5) if dim == 0 else (4, 1), np.int64)
        got = t.scatter_add(dim, lazyscope.tensor(pos, device=device), s).float().numpy()
        want = t16.copy()
        if dim == 0:
            want[0] += s16[0]
        else:
            want[:, 0] += s16[:, 0]
        rnd, eps = HALF[dtype]
        np.testing.assert_allclose(got, rnd(want), rtol=eps, atol=eps)


@pytest.mark.parametrize("dtype", HALF_DTYPES)
def test_16_bit_gradients_match_float64_finite_differences(dtype):
    # The backward ops (conv2d_backward_input/weight, avg_pool2d_backward)
    # run in 16 bits too, each rounding its result: the oracle is the float64
    # finite-difference gradient at the rounded inputs, to a few ulps of the
    # gradient's largest magnitude.
    _, eps = HALF[dtype]
    x = rng.standard_normal((1, 2, 5, 5))
    w = rng.standard_normal((2, 2, 3, 3))
    grads = []
    for device in DEVICES:
        (t, k), (x16, w16) = engine_half(dtype, x, w, device=device)
        t.requires_grad_(True)
        k.requires_grad_(True)
        lazyscope.avg_pool2d(lazyscope.conv2d(t, k, padding=1), 2).sum().backward()
        grads.append([t.grad.float().numpy(), k.grad.float().numpy()])
    np.testing.assert_array_equal(grads[0][0], grads[1][0])
    np.testing.assert_array_equal(grads[0][1], grads[1][1])
    ref = lambda a, k: avg_pool2d_ref(conv2d_ref(a, k, padding=1), 2)  # noqa: E731
    want = numeric_grads(ref, [x16, w16], np.ones(ref(x16, w16).shape))
    for got, expected in zip(grads[0], want):
        np.testing.assert_allclose(got, expected, atol=8 * eps * np.abs(expected).max())
