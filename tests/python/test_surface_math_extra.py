"""gcd, lcm, nextafter, frexp, special.i0/i0e/i1/i1e, polygamma, special.zeta, mode and nanmedian
against independent oracles: Python's math.gcd/lcm, NumPy's nextafter and frexp, power series and
Euler-Maclaurin sums in 50-digit decimal arithmetic written here, closed forms (zeta(2) = pi^2/6,
...), NumPy sorts; gradients by finite differences."""
import decimal
import math
from fractions import Fraction

import numpy as np
import pytest

import lazyscope
from lazyscope import special
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
D = decimal.Decimal
decimal.getcontext().prec = 50


def t(a, device, dtype=None):
    return lazyscope.tensor(np.asarray(a, dtype=dtype), device=device)


# --- high-precision oracles ---------------------------------------------------------------------

def bessel_i(order, x, scaled=False):
    """I_order(x) (order 0 or 1) by its power series in 50-digit decimals; times e^-|x| if scaled."""
    ax = abs(D(x))
    y = ax * ax / 4
    term = D(1) if order == 0 else ax / 2
    total, k = D(0), 0
    while True:
        total += term
        k += 1
        term = term * y / (k * (k + order))
        if term <= total * D("1e-45"):  # (at 0, i1's terms are all 0)
            break
    if scaled:
        total *= (-ax).exp()
    return float(-total if (order == 1 and x < 0) else total)


def bernoulli(n_max):
    b = [Fraction(1)]
    for m in range(1, n_max + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


B = bernoulli(60)


def hurwitz(s, q, shift=40, terms=25):
    """zeta(s, q) for q > 0: 40 terms, then Euler-Maclaurin with 25 Bernoulli terms at q + 40."""
    s, q = D(s), D(q)
    power = lambda base, e: (-e * base.ln()).exp()  # base^-e  # noqa: E731
    total = sum(power(q + k, s) for k in range(shift))
    a = q + shift
    tail = (a ** (1 - s) if s == int(s) else (-(s - 1) * a.ln()).exp()) / (s - 1) + power(a, s) / 2
    rising = s
    for j in range(1, terms + 1):
        bj = B[2 * j]
        tail += D(bj.numerator) / D(bj.denominator) / math.factorial(2 * j) * rising * power(a, s + 2 * j - 1)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    return total + tail


def polygamma_ref(n, x):
    """(-1)^(n+1) n! zeta(n + 1, x), moved right of 0 by the recurrence
    psi_n(x) = psi_n(x + m) - (-1)^n n! sum_k<m (x + k)^-(n+1)."""
    m = 0 if x > 0 else int(math.floor(-x)) + 1
    xd = D(x)
    value = (-1) ** (n + 1) * math.factorial(n) * hurwitz(n + 1, xd + m)
    value -= (-1) ** n * math.factorial(n) * sum(1 / (xd + k) ** (n + 1) for k in range(m))
    return float(value)


# --- gcd, lcm, nextafter, frexp ------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_gcd_and_lcm_match_python_math(device):
    a = np.array([0, 0, 12, -12, 18, 7, -35, 1 << 40, 2 ** 62, -(2 ** 63)], dtype=np.int64)
    b = np.array([0, 5, 18, 18, -24, 13, -21, 3 << 20, 6, 0], dtype=np.int64)
    got = lazyscope.gcd(t(a, device), t(b, device))
    assert got.dtype == lazyscope.int64
    # math.gcd(-2^63, 0) = 2^63, which wraps to -2^63 in int64 (PyTorch's abs wraps the same way).
    want = np.array([math.gcd(int(x), int(y)) for x, y in zip(a, b)], dtype=object)
    want = np.array([(w + 2 ** 63) % 2 ** 64 - 2 ** 63 for w in want], dtype=np.int64)
    np.testing.assert_array_equal(got.numpy(), want)
    small_a, small_b = a[:8], b[:8]
    want_lcm = np.array([math.lcm(int(x), int(y)) for x, y in zip(small_a, small_b)], dtype=np.int64)
    np.testing.assert_array_equal(t(small_a, device).lcm(t(small_b, device)).numpy(), want_lcm)
    # int32 with broadcasting and uint8; an int32 and an int64 operand promote to int64.
    x32 = np.array([[4, 6, 9], [-15, 25, 0]], dtype=np.int32)
    y32 = np.array([6, -10, 12], dtype=np.int32)
    g32 = lazyscope.gcd(t(x32, device), t(y32, device))
    assert g32.dtype == lazyscope.int32
    np.testing.assert_array_equal(g32.numpy(), np.gcd(x32, y32))
    np.testing.assert_array_equal(lazyscope.lcm(t(x32, device), t(y32, device)).numpy(), np.lcm(x32, y32))
    u8 = np.array([200, 9, 0], dtype=np.uint8)
    np.testing.assert_array_equal(lazyscope.gcd(t(u8, device), t(np.array([150, 6, 7], np.uint8), device)).numpy(),
                                  [50, 3, 7])
    assert lazyscope.gcd(t(x32, device), t(y32.astype(np.int64), device)).dtype == lazyscope.int64
    z = t(x32.copy(), device)
    z.gcd_(t(y32, device))
    np.testing.assert_array_equal(z.numpy(), np.gcd(x32, y32))


@pytest.mark.parametrize("device", DEVICES)
def test_gcd_lcm_refuse_floats_and_nextafter_frexp_refuse_integers(device):
    with pytest.raises(RuntimeError, match="gcd: expected integer tensors, got .*float"):
        lazyscope.gcd(t([1.0], device), t([2], device))
    with pytest.raises(RuntimeError, match="lcm: expected integer"):
        lazyscope.lcm(t([True], device), t([2], device))
    with pytest.raises(RuntimeError, match="nextafter: expected floating"):
        lazyscope.nextafter(t([1], device), t([2.0], device))
    with pytest.raises(RuntimeError, match="frexp: only supports floating-point"):
        lazyscope.frexp(t([3], device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nextafter_matches_numpy(device, dtype):
    info = np.finfo(dtype)
    x = np.array([0.0, 0.0, 1.0, 1.0, -1.0, info.max, info.max, info.tiny, 3.5, np.inf, np.nan, 2.0], dtype=dtype)
    y = np.array([1.0, -1.0, 2.0, 0.0, 0.0, np.inf, 0.0, 0.0, 3.5, 0.0, 1.0, np.nan], dtype=dtype)
    with np.errstate(over="ignore"):  # max toward inf is inf
        want = np.nextafter(x, y)
    got = lazyscope.nextafter(t(x, device), t(y, device))
    assert got.dtype == (lazyscope.float32 if dtype == np.float32 else lazyscope.float64)
    np.testing.assert_array_equal(got.numpy(), want)
    assert got.numpy()[0] == np.array(info.smallest_subnormal, dtype=dtype)
    np.testing.assert_array_equal(t(x, device).nextafter(t(y, device)).numpy(), want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_frexp_matches_numpy_and_recomposes_exactly(device, dtype):
    info = np.finfo(dtype)
    x = np.array([0.0, -0.0, 1.0, 0.5, 0.75, -3.0, 1024.0, 1e-3, info.max, info.tiny, info.smallest_subnormal,
                  -7.3e-3, np.inf, -np.inf, np.nan], dtype=dtype)
    m, e = lazyscope.frexp(t(x, device))
    assert e.dtype == lazyscope.int32 and m.dtype == (lazyscope.float32 if dtype == np.float32 else lazyscope.float64)
    want_m, want_e = np.frexp(x)
    finite = np.isfinite(x)
    np.testing.assert_array_equal(m.numpy()[finite], want_m[finite])
    np.testing.assert_array_equal(e.numpy()[finite], want_e[finite])
    # Infinities and NaN: the value itself with exponent 0, as C's frexp (PyTorch's).
    np.testing.assert_array_equal(m.numpy()[~finite], x[~finite])
    np.testing.assert_array_equal(e.numpy()[~finite], 0)
    for xv, mv, ev in zip(x[finite], m.numpy()[finite], e.numpy()[finite]):
        assert math.ldexp(float(mv), int(ev)) == float(xv)
        assert xv == 0 or 0.5 <= abs(float(mv)) < 1
    named = t(x, device).frexp()
    np.testing.assert_array_equal(named.exponent.numpy(), e.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_frexp_mantissa_gradient_is_grad_over_two_to_the_exponent(device):
    check(lambda a: lazyscope.frexp(a).mantissa, lambda a: np.frexp(a)[0],
          [np.array([0.3, -5.1, 700.0, 1.3e-3])], device, rtol=1e-6)


# --- Bessel functions ----------------------------------------------------------------------------

BESSEL_X = [0.0, 1e-8, -0.3, 1.0, 2.5, -7.9, 8.0, 8.1, 15.0, 24.9, 25.0, -25.1, 30.0, 60.0, 200.0, 700.0]


@pytest.mark.parametrize("device", DEVICES)
def test_bessel_functions_match_a_fifty_digit_power_series_in_float64(device):
    x = np.array(BESSEL_X)
    for fn, order, scaled in ((special.i0, 0, False), (special.i0e, 0, True), (special.i1, 1, False),
                              (special.i1e, 1, True)):
        got = fn(t(x, device)).numpy()
        want = np.array([bessel_i(order, v, scaled) for v in x])
        np.testing.assert_allclose(got, want, rtol=2e-14, atol=0, err_msg=fn.__name__)
    big = special.i0(t([710.0, -800.0], device)).numpy()
    assert np.all(big == np.inf)  # overflows, as e^x
    np.testing.assert_allclose(special.i0e(t([1e5], device)).numpy(), [bessel_i(0, 1e5, True)], rtol=1e-14)
    assert np.isnan(special.i1(t([np.nan], device)).numpy()[0])


@pytest.mark.parametrize("device", DEVICES)
def test_bessel_functions_in_float32_and_on_the_top_level(device):
    x = np.array([0.0, 0.7, -3.3, 9.0, 24.0, 31.0, 80.0], dtype=np.float32)
    for fn, order, scaled in ((special.i0, 0, False), (special.i0e, 0, True), (special.i1, 1, False),
                              (special.i1e, 1, True)):
        got = fn(t(x, device))
        assert got.dtype == lazyscope.float32
        want = np.array([bessel_i(order, float(v), scaled) for v in x])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=0, err_msg=fn.__name__)
    np.testing.assert_allclose(lazyscope.i0(t([2.0], device)).numpy(), [bessel_i(0, 2.0)], rtol=1e-14)
    np.testing.assert_allclose(t([2.0], device).i0().numpy(), [bessel_i(0, 2.0)], rtol=1e-14)
    ints = special.i0(t([1, 2], device))  # integers compute in the default float dtype
    assert ints.dtype == lazyscope.float32


@pytest.mark.parametrize("device", DEVICES)
def test_bessel_gradients_match_finite_differences(device):
    # Each magnitude apart: finite differences of a sum mixing 1e11 and 1 lose the small ones.
    for x in (np.array([-4.2, -0.6, 0.4, 3.1]), np.array([-30.0]), np.array([26.0])):
        for fn, order, scaled in ((special.i0, 0, False), (special.i0e, 0, True), (special.i1, 1, False),
                                  (special.i1e, 1, True)):
            check(fn, lambda a, order=order, scaled=scaled: np.array([bessel_i(order, v, scaled) for v in a]),
                  [x], device, rtol=1e-6)
    # At 0: i1'(0) = i1e'(0) = 1/2 (PyTorch's special case).
    z = lazyscope.zeros(1, dtype=lazyscope.float64, device=device).requires_grad_()
    special.i1(z).sum().backward()
    assert z.grad.numpy()[0] == 0.5


# --- polygamma and zeta --------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_polygamma_matches_the_decimal_series_and_closed_forms(device):
    x = np.array([1e-3, 0.25, 0.5, 1.0, 2.7, 9.5, 31.0, 1000.0])
    for n in (1, 2, 3, 6):
        got = lazyscope.polygamma(n, t(x, device)).numpy()
        want = np.array([polygamma_ref(n, v) for v in x])
        np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=f"n={n}")
    one = t([1.0], device)
    np.testing.assert_allclose(lazyscope.polygamma(1, one).numpy(), [math.pi ** 2 / 6], rtol=1e-15)
    np.testing.assert_allclose(special.polygamma(3, one).numpy(), [math.pi ** 4 / 15], rtol=1e-15)
    np.testing.assert_allclose(t([0.5], device).polygamma(1).numpy(), [math.pi ** 2 / 2], rtol=1e-15)
    np.testing.assert_allclose(lazyscope.polygamma(0, one).numpy(), [-0.5772156649015329], rtol=1e-13)


@pytest.mark.parametrize("device", DEVICES)
def test_polygamma_left_of_zero_and_at_its_poles(device):
    x = np.array([-0.5, -1.3, -2.5, -7.6])
    for n in (1, 2, 3):
        got = lazyscope.polygamma(n, t(x, device)).numpy()
        want = np.array([polygamma_ref(n, v) for v in x])
        np.testing.assert_allclose(got, want, rtol=1e-11, err_msg=f"n={n}")
    poles = t([0.0, -1.0, -4.0], device)
    assert np.all(lazyscope.polygamma(1, poles).numpy() == np.inf)
    assert np.all(lazyscope.polygamma(2, poles).numpy() == -np.inf)
    with pytest.raises(ValueError, match="polygamma: n must be a non-negative integer"):
        lazyscope.polygamma(-1, poles)


@pytest.mark.parametrize("device", DEVICES)
def test_polygamma_in_float32_and_its_gradient_is_the_next_order(device):
    x = np.array([0.3, 1.7, 12.0], dtype=np.float32)
    got = lazyscope.polygamma(2, t(x, device))
    assert got.dtype == lazyscope.float32
    np.testing.assert_allclose(got.numpy(), [polygamma_ref(2, float(v)) for v in x], rtol=1e-6)
    for n in (1, 2):
        check(lambda a, n=n: lazyscope.polygamma(n, a), lambda a, n=n: np.array([polygamma_ref(n, v) for v in a]),
              [np.array([0.6, 2.2, 7.0, -1.4])], device, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_zeta_matches_the_decimal_series(device):
    s = np.array([2.0, 2.0, 3.0, 1.5, 4.5, 10.0, 30.0, 1.01, 2.0])
    q = np.array([1.0, 0.5, 2.5, 0.1, 3.0, 1.0, 0.7, 5.0, 1e4])
    got = special.zeta(t(s, device), t(q, device)).numpy()
    want = np.array([float(hurwitz(a, b)) for a, b in zip(s, q)])
    np.testing.assert_allclose(got, want, rtol=1e-13)
    np.testing.assert_allclose(got[0], math.pi ** 2 / 6, rtol=1e-15)
    edge = special.zeta(t([1.0, 0.5, 2.0, 2.0, 2.5], device), t([1.0, 1.0, 0.0, -3.0, -0.5], device)).numpy()
    assert edge[0] == np.inf and np.isnan(edge[1]) and edge[2] == np.inf and edge[3] == np.inf
    assert np.isnan(edge[4])
    # A number for either operand, and float32.
    f32 = special.zeta(3.0, t(np.array([1.0, 2.0], np.float32), device))
    assert f32.dtype == lazyscope.float32
    np.testing.assert_allclose(f32.numpy(), [float(hurwitz(3, 1)), float(hurwitz(3, 2))], rtol=1e-6)
    check(lambda b: special.zeta(t(np.array([2.5, 3.0]), device), b),
          lambda b: np.array([float(hurwitz(2.5, b[0])), float(hurwitz(3.0, b[1]))]),
          [np.array([0.8, 2.0])], device, rtol=1e-6)


# --- mode and nanmedian --------------------------------------------------------------------------

def mode_ref(row):
    values, counts = np.unique(row, return_counts=True)  # sorted: the first maximum is the smallest value
    v = values[np.argmax(counts)]
    return v, np.nonzero(row == v)[0][-1]


@pytest.mark.parametrize("device", DEVICES)
def test_mode_is_the_smallest_most_frequent_value_at_its_last_occurrence(device):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, size=(5, 9)).astype(np.float64)
    for dim in (0, 1, -1):
        got = lazyscope.mode(t(x, device), dim)
        moved = np.moveaxis(x, dim, -1)
        want = np.array([mode_ref(r) for r in moved.reshape(-1, moved.shape[-1])])
        np.testing.assert_array_equal(got.values.numpy(), want[:, 0])
        np.testing.assert_array_equal(got.indices.numpy(), want[:, 1].astype(np.int64))
    kept = t(x, device).mode(1, keepdim=True)
    assert tuple(kept.values.shape) == (5, 1) and tuple(kept.indices.shape) == (5, 1)
    ints = lazyscope.mode(t(np.array([[3, 1, 3, 1, 2]], np.int64), device))
    assert ints.values.numpy().tolist() == [1] and ints.indices.numpy().tolist() == [3]
    # The value's gradient goes to the chosen element.
    w = t(x, device).requires_grad_()
    lazyscope.mode(w, 1).values.sum().backward()
    grad = np.zeros_like(x)
    grad[np.arange(5), [mode_ref(r)[1] for r in x]] = 1
    np.testing.assert_array_equal(w.grad.numpy(), grad)
    with pytest.raises(IndexError, match="mode"):
        lazyscope.mode(lazyscope.zeros(2, 0, device=device), 1)


def lower_nanmedian_ref(row):
    kept = np.sort(row[~np.isnan(row)])
    return np.nan if kept.size == 0 else kept[(kept.size - 1) // 2]


@pytest.mark.parametrize("device", DEVICES)
def test_nanmedian_is_the_lower_median_of_the_non_nan_values(device):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 7))
    x[rng.random((6, 7)) < 0.3] = np.nan
    x[2] = np.nan  # an all-NaN row
    for dim in (0, 1):
        got = lazyscope.nanmedian(t(x, device), dim)
        moved = np.moveaxis(x, dim, -1)
        want = np.array([lower_nanmedian_ref(r) for r in moved])
        np.testing.assert_array_equal(got.values.numpy(), want)
        # The index points at the value (an all-NaN row: at a NaN).
        picked = np.take_along_axis(moved, got.indices.numpy()[:, None], 1)[:, 0]
        np.testing.assert_array_equal(picked, want)
    np.testing.assert_array_equal(lazyscope.nanmedian(t(x, device)).numpy(), lower_nanmedian_ref(x.ravel()))
    np.testing.assert_array_equal(t(x, device).nanmedian(1, keepdim=True).values.numpy()[:, 0],
                                  [lower_nanmedian_ref(r) for r in x])
    # Without NaN: the lower of the two middle values of an even count.
    y = rng.standard_normal((3, 8))
    np.testing.assert_array_equal(lazyscope.nanmedian(t(y, device), 1).values.numpy(), np.sort(y, 1)[:, 3])
    assert np.isnan(lazyscope.nanmedian(t([np.nan, np.nan], device)).numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_reach_the_input_when_the_output_is_dropped_at_once(device):
    # f(x).sum().backward(), the result never held by the caller: each gradient against finite
    # differences of the oracle (a hook on a dropped output would never run).
    x = np.array([0.7, 2.4])
    h = 1e-6
    cases = [(special.i0, lambda v: bessel_i(0, v)), (special.i1e, lambda v: bessel_i(1, v, True)),
             (lambda a: lazyscope.polygamma(2, a), lambda v: polygamma_ref(2, v)),
             (lambda a: lazyscope.frexp(a).mantissa, lambda v: math.frexp(v)[0])]
    for fn, ref in cases:
        leaf = t(x, device).requires_grad_()
        fn(leaf).sum().backward()
        want = [(ref(v + h) - ref(v - h)) / (2 * h) for v in x]
        np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-6)
