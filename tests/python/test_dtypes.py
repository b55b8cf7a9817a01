"""dtype conversion and PyTorch's promotion, on both devices, against NumPy.

Expected result dtypes are PyTorch's (torch.result_type); values come from
NumPy computing in that dtype.
"""
import numpy as np
import pytest

import lazyscope

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(3)

NP = {lazyscope.bool: np.bool_, lazyscope.uint8: np.uint8, lazyscope.int32: np.int32,
      lazyscope.int64: np.int64, lazyscope.float16: np.float16, lazyscope.float32: np.float32,
      lazyscope.float64: np.float64}
ALL = list(NP)


def sample(dtype, shape=(3, 4)):
    if dtype == lazyscope.bool:
        return rng.random(shape) > 0.5
    if dtype in (lazyscope.uint8,):
        return rng.integers(0, 10, shape).astype(np.uint8)
    if dtype in (lazyscope.int32, lazyscope.int64):
        return rng.integers(-50, 50, shape).astype(NP[dtype])
    return (rng.standard_normal(shape) * 4).astype(NP[dtype])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("src", ALL, ids=str)
@pytest.mark.parametrize("dst", ALL, ids=str)
def test_to_dtype_matches_numpy_astype(device, src, dst):
    a = sample(src)
    out = lazyscope.tensor(a, device=device).to(dst)
    assert out.dtype == dst
    with np.errstate(invalid="ignore"):
        expected = a.astype(NP[dst])
    np.testing.assert_array_equal(out.numpy(), expected)


def bfloat16_round(x):
    """float32 -> bfloat16 -> float32, round to nearest even, in NumPy bit operations."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("device", DEVICES)
def test_bfloat16_storage_rounds_to_nearest_even(device):
    a = np.concatenate([sample(lazyscope.float32, (200,)),
                        np.float32(1) + np.float32(2.0 ** -8) * np.arange(8, dtype=np.float32)])
    t = lazyscope.tensor(a, device=device).to(lazyscope.bfloat16)
    assert t.dtype == lazyscope.bfloat16
    np.testing.assert_array_equal(t.float().numpy(), bfloat16_round(a))


@pytest.mark.parametrize("device", DEVICES)
def test_conversion_methods(device):
    a = np.array([-1.5, 0.0, 2.7], dtype=np.float32)
    t = lazyscope.tensor(a, device=device)
    assert t.long().tolist() == [-1, 0, 2]
    assert t.int().dtype == lazyscope.int32
    assert t.bool().tolist() == [True, False, True]
    np.testing.assert_array_equal(t.double().numpy(), a.astype(np.float64))
    np.testing.assert_array_equal(t.half().numpy(), a.astype(np.float16))
    assert t.long().float().dtype == lazyscope.float32
    assert t.to(dtype=lazyscope.float64).dtype == lazyscope.float64
    moved = t.to("cpu", lazyscope.int64)
    assert str(moved.device) == "cpu" and moved.dtype == lazyscope.int64
    assert t.to(t.long()).dtype == lazyscope.int64


# (left dtype, right dtype, PyTorch's result dtype)
TENSOR_PAIRS = [
    (lazyscope.int32, lazyscope.float32, lazyscope.float32),
    (lazyscope.int64, lazyscope.int32, lazyscope.int64),
    (lazyscope.uint8, lazyscope.int32, lazyscope.int32),
    (lazyscope.bool, lazyscope.int64, lazyscope.int64),
    (lazyscope.float32, lazyscope.float64, lazyscope.float64),
    (lazyscope.bool, lazyscope.float32, lazyscope.float32),
    (lazyscope.float16, lazyscope.float32, lazyscope.float32),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("left,right,result", TENSOR_PAIRS, ids=str)
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_tensor_tensor_promotion_with_broadcasting(device, left, right, result, op):
    if op == "sub" and lazyscope.bool in (left, right):
        pytest.skip("PyTorch refuses sub on bool tensors")
    a, b = sample(left, (3, 1)), sample(right, (4,))
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    out = getattr(ta, op)(tb)
    assert out.dtype == result
    dt = NP[result]
    expected = getattr(np, {"add": "add", "sub": "subtract", "mul": "multiply"}[op])(a.astype(dt), b.astype(dt))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-3 if result == lazyscope.float16 else 1e-6)


# (tensor dtype, Python number, PyTorch's result dtype)
SCALAR_CASES = [
    (lazyscope.int32, 5, lazyscope.int32),
    (lazyscope.int64, 2.5, lazyscope.float32),
    (lazyscope.int32, 2.5, lazyscope.float32),
    (lazyscope.uint8, 3, lazyscope.uint8),
    (lazyscope.bool, 2, lazyscope.int64),
    (lazyscope.bool, 1.5, lazyscope.float32),
    (lazyscope.bool, True, lazyscope.bool),
    (lazyscope.float64, 0.1, lazyscope.float64),
    (lazyscope.float32, 3, lazyscope.float32),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype,number,result", SCALAR_CASES, ids=str)
def test_python_numbers_promote_like_pytorch(device, dtype, number, result):
    a = sample(dtype)
    t = lazyscope.tensor(a, device=device)
    dt = NP[result]
    for out, expected in [(t * number, a.astype(dt) * dt(number)),
                          (number * t, dt(number) * a.astype(dt)),
                          (t + number, a.astype(dt) + dt(number))]:
        assert out.dtype == result
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_zero_dim_tensor_does_not_widen_a_dimensioned_one(device):
    a = sample(lazyscope.int32)
    t = lazyscope.tensor(a, device=device)
    z = lazyscope.tensor(np.array(7, dtype=np.int64), device=device)
    assert (t + z).dtype == lazyscope.int32
    np.testing.assert_array_equal((t + z).numpy(), a + np.int32(7))
    zf = lazyscope.tensor(np.array(0.5, dtype=np.float64), device=device)
    assert (t * zf).dtype == lazyscope.float64
    np.testing.assert_allclose((t * zf).numpy(), a * 0.5)


def test_lazy_promotion_equals_eager():
    a, b = sample(lazyscope.int32), sample(lazyscope.float32)
    results = []
    for device in DEVICES:
        ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
        results.append(((ta * 2.5 + tb) * ta).numpy())
    np.testing.assert_array_equal(results[0], results[1])


def test_bfloat16_has_no_numpy_dtype():
    with pytest.raises(RuntimeError, match="bfloat16"):
        lazyscope.ones(2).to(lazyscope.bfloat16).numpy()
