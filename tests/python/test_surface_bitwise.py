"""The engine's inverse trigonometric ops (atan, asin, acos, atan2) and
integer bitwise ops (&, |, ^, <<, >> and their functions) on both devices,
against NumPy; gradients against central differences of NumPy's forward;
floats refused by the bitwise ops with the op and the line named."""
import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(83)


def to(a, device):
    return lazyscope.tensor(a, device=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_inverse_trigonometry_matches_numpy(device, dtype):
    x = np.concatenate([rng.uniform(-1, 1, 40), [-1.0, 1.0, 0.0, -0.0, 1.5, np.nan]]).astype(dtype)
    wide = np.concatenate([rng.standard_normal(40) * 10, [np.inf, -np.inf, 0.0, -0.0, np.nan, 1e30]]).astype(dtype)
    tol = dict(rtol=2e-6, atol=1e-7) if dtype == np.float32 else dict(rtol=1e-14, atol=0)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(lazyscope.asin(to(x, device)).numpy(), np.arcsin(x), **tol)
        np.testing.assert_allclose(to(x, device).acos().numpy(), np.arccos(x), **tol)
        np.testing.assert_allclose(lazyscope.arcsin(to(x, device)).numpy(), np.arcsin(x), **tol)
    np.testing.assert_allclose(lazyscope.atan(to(wide, device)).numpy(), np.arctan(wide), **tol)
    y = np.concatenate([wide[:6], [0.0, -0.0, 0.0, -0.0, np.inf, -np.inf]]).astype(dtype)
    xs = np.concatenate([wide[6:12], [0.0, 0.0, -0.0, -0.0, np.inf, -np.inf]]).astype(dtype)
    np.testing.assert_allclose(lazyscope.atan2(to(y, device), to(xs, device)).numpy(), np.arctan2(y, xs), **tol)
    assert lazyscope.arctan2(to(y, device), to(xs, device)).numpy().dtype == y.dtype


@pytest.mark.parametrize("device", DEVICES)
def test_inverse_trigonometry_fuses_into_a_chain_and_promotes_integers(device):
    x = rng.uniform(-0.9, 0.9, 1000).astype(np.float32)
    got = ((to(x, device) * 0.5).asin() + to(x, device).atan() * to(x, device).acos()).numpy()
    want = np.arcsin(x * 0.5) + np.arctan(x) * np.arccos(x)
    np.testing.assert_allclose(got, want, rtol=5e-6, atol=5e-7)
    ints = lazyscope.atan(to(np.array([0, 1, -3]), device))
    assert ints.dtype == lazyscope.float32
    np.testing.assert_allclose(ints.numpy(), np.arctan([0.0, 1.0, -3.0]), rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_inverse_trigonometry_gradients(device):
    x = rng.uniform(-0.8, 0.8, (2, 3))
    check(lambda t: t.asin(), np.arcsin, [x], device)
    check(lambda t: t.acos(), np.arccos, [x], device)
    check(lambda t: t.atan(), np.arctan, [x * 4], device)
    check(lazyscope.atan2, np.arctan2, [rng.standard_normal((2, 3)), rng.standard_normal((1, 3))], device)


INT_DTYPES = [np.uint8, np.int32, np.int64]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_integer_bitwise_ops_match_numpy(device, dtype):
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, 64, dtype=dtype, endpoint=True)
    ta, tb = to(a, device), to(b, device)
    for got, want in [(ta & tb, a & b), (ta | tb, a | b), (ta ^ tb, a ^ b), (~ta, ~a),
                      (lazyscope.bitwise_and(ta, tb), a & b), (ta.bitwise_or(tb), a | b),
                      (lazyscope.bitwise_xor(ta, 5), a ^ dtype(5)), (3 & ta, dtype(3) & a)]:
        assert got.dtype == ta.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    m = ta.clone()
    m &= tb
    m |= 6
    m ^= tb
    np.testing.assert_array_equal(m.numpy(), ((a & b) | dtype(6)) ^ b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_shifts_match_numpy_including_counts_past_the_width(device, dtype):
    bits = np.iinfo(dtype).bits
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, 40, dtype=dtype, endpoint=True)
    n = rng.integers(0, bits + 4, 40).astype(dtype)  # some counts >= the width
    ta, tn = to(a, device), to(n, device)
    np.testing.assert_array_equal((ta << tn).numpy(), np.left_shift(a, n))
    np.testing.assert_array_equal((ta >> tn).numpy(), np.right_shift(a, n))
    np.testing.assert_array_equal(lazyscope.bitwise_left_shift(ta, 2).numpy(), np.left_shift(a, dtype(2)))
    np.testing.assert_array_equal(ta.bitwise_right_shift(1).numpy(), np.right_shift(a, dtype(1)))
    s = ta.clone()
    s <<= 1
    s >>= 2
    np.testing.assert_array_equal(s.numpy(), np.right_shift(np.left_shift(a, dtype(1)), dtype(2)))


@pytest.mark.parametrize("device", DEVICES)
def test_mixed_operands_promote_and_floats_are_refused(device):
    i32 = to(np.array([1, 2, 12], dtype=np.int32), device)
    i64 = to(np.array([3, 3, 10]), device)
    mixed = i32 & i64
    assert mixed.dtype == lazyscope.int64
    np.testing.assert_array_equal(mixed.numpy(), [1, 2, 8])
    mask = to(np.array([True, False, True]), device)
    np.testing.assert_array_equal((mask ^ i32).numpy(), np.array([True, False, True]) ^ np.array([1, 2, 12]))
    x = to(np.array([1.0, 2.0], dtype=np.float32), device)
    with pytest.raises(lazyscope.EngineError, match=r"bitwise_xor: expected integer or bool operands, got float32 "
                                                    r"and int64 .*test_surface_bitwise.py:"):
        x ^ to(np.array([1, 2]), device)
    with pytest.raises(lazyscope.EngineError, match=r"bitwise_left_shift: expected integer or bool operands"):
        x << 1
    if device != "cpu":
        lm.mark_step()  # nothing was left pending by the refused ops
