"""Tensor ops from Python on both devices, checked against NumPy."""
import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(42)


def arr(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("device", DEVICES)
def test_elementwise_with_broadcasting_matches_numpy(device):
    a, b = arr(4, 1, 3), arr(5, 3)
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    np.testing.assert_allclose((ta + tb).numpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose((ta * tb).numpy(), a * b, rtol=1e-6)
    np.testing.assert_allclose((ta - tb).numpy(), a - b, rtol=1e-6)
    np.testing.assert_allclose((2.5 * ta - 1.0).numpy(), 2.5 * a - 1.0, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_relu_sum_match_numpy(device):
    a, b = arr(8, 5), arr(5, 6)
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    out = (ta @ tb).relu()
    np.testing.assert_allclose(out.numpy(), np.maximum(a @ b, 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.sum().item(), np.maximum(a @ b, 0).sum(), rtol=1e-5)
    np.testing.assert_allclose(out.sum(dim=0).numpy(), np.maximum(a @ b, 0).sum(axis=0), rtol=1e-5)
    np.testing.assert_allclose(out.sum(dim=1, keepdim=True).numpy(),
                               np.maximum(a @ b, 0).sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(ta.t().numpy(), a.T)


def test_lazy_equals_eager_bit_for_bit():
    a, b = arr(16, 9), arr(9, 4)
    results = []
    for device in DEVICES:
        ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
        results.append(((ta @ tb).relu() * 0.5 + ta.sum()).numpy())
    np.testing.assert_array_equal(results[0], results[1])


def test_tensor_metadata_and_printing():
    t = lazyscope.tensor([[1.0, 2.0], [3.0, 4.0]], device="lazy:0")
    assert t.shape == (2, 2)
    assert t.dtype == lazyscope.float32
    assert str(t.device) == "lazy:0"
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert "device='lazy:0'" in repr(t)
    assert lazyscope.tensor([1, 2, 3]).dtype == lazyscope.int64


def test_shape_error_names_shapes_and_the_callers_line():
    a = lazyscope.zeros(2, 3, device="lazy:0")
    with pytest.raises(lazyscope.ShapeError) as info:
        a @ a
    message = str(info.value)
    assert "[2, 3] and [2, 3]" in message
    assert "test_tensor_ops.py:" in message  # the user's line, not the engine's


def test_device_mix_names_both_devices():
    with pytest.raises(lazyscope.DeviceMismatchError) as info:
        lazyscope.zeros(3) + lazyscope.zeros(3, device="lazy:0")
    assert "cpu" in str(info.value) and "lazy:0" in str(info.value)
    assert isinstance(info.value, RuntimeError)


def test_unknown_device_is_refused():
    with pytest.raises(RuntimeError, match="unknown device"):
        lazyscope.zeros(3, device="cuda:0")
