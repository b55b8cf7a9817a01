"""Creation functions and conversions: empty, arange, linspace, eye,
randint, *_like, new_*, tolist/item for every dtype, on both devices."""
import numpy as np
import pytest

import lazyscope

DEVICES = ["cpu", "lazy:0"]


@pytest.mark.parametrize("device", DEVICES)
def test_arange_linspace_eye(device):
    a = lazyscope.arange(5, device=device)
    assert a.dtype == lazyscope.int64 and a.tolist() == [0, 1, 2, 3, 4] and a.device == lazyscope.device(device)
    np.testing.assert_allclose(lazyscope.arange(1, 2, 0.25).numpy(), np.arange(1, 2, 0.25, dtype=np.float32))
    assert lazyscope.arange(1, 2, 0.25).dtype == lazyscope.float32
    assert lazyscope.arange(10, 0, -3, dtype=lazyscope.float64, device=device).tolist() == [10.0, 7.0, 4.0, 1.0]
    with pytest.raises(ValueError, match="step must be nonzero"):
        lazyscope.arange(0, 3, 0)
    with pytest.raises(ValueError, match="inconsistent with step sign"):
        lazyscope.arange(0, 3, -1)
    np.testing.assert_allclose(lazyscope.linspace(-1, 1, 5, device=device).numpy(), np.linspace(-1, 1, 5), rtol=1e-7)
    np.testing.assert_array_equal(lazyscope.eye(3, 4, dtype=lazyscope.int32, device=device).numpy(), np.eye(3, 4))
    assert lazyscope.eye(2).dtype == lazyscope.float32


@pytest.mark.parametrize("device", DEVICES)
def test_empty_randint_and_likes(device):
    e = lazyscope.empty(2, 3, dtype=lazyscope.float64, device=device)
    assert tuple(e.shape) == (2, 3) and e.dtype == lazyscope.float64
    r = lazyscope.randint(3, 7, (100,), device=device)
    assert r.dtype == lazyscope.int64 and 3 <= r.numpy().min() and r.numpy().max() < 7
    assert lazyscope.randint(4, (2, 2)).numpy().max() < 4
    with pytest.raises(ValueError, match="low < high"):
        lazyscope.randint(5, 5, (2,))
    x = lazyscope.ones(2, 3, dtype=lazyscope.float64, device=device)
    for fn in (lazyscope.zeros_like, lazyscope.ones_like, lazyscope.empty_like, lazyscope.rand_like, lazyscope.randn_like):
        y = fn(x)
        assert tuple(y.shape) == (2, 3) and y.dtype == lazyscope.float64 and y.device == x.device
    assert lazyscope.full_like(x, 7).numpy().tolist() == [[7.0] * 3] * 2
    assert lazyscope.zeros_like(x, dtype=lazyscope.int32).dtype == lazyscope.int32
    assert lazyscope.rand_like(x, requires_grad=True).requires_grad
    with pytest.raises(TypeError, match="floating point"):
        lazyscope.randn_like(lazyscope.tensor([1, 2]))
    assert x.new_zeros(4).tolist() == [0.0] * 4 and x.new_zeros(4).dtype == lazyscope.float64
    assert x.new_ones((2,), dtype=lazyscope.int64).tolist() == [1, 1]
    assert x.new_full((2,), 2.5).tolist() == [2.5, 2.5]
    assert x.new_tensor([1, 2]).dtype == lazyscope.float64 and x.new_tensor([1, 2]).device == x.device
    assert lazyscope.full((2,), 3).dtype == lazyscope.int64 and lazyscope.full((2,), True).dtype == lazyscope.bool


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype,value", [
    (lazyscope.bool, True), (lazyscope.uint8, 200), (lazyscope.int32, -7), (lazyscope.int64, 2**40),
    (lazyscope.float16, 1.5), (lazyscope.bfloat16, 2.5), (lazyscope.float32, 0.25), (lazyscope.float64, 1e-300),
])
def test_item_and_tolist_for_every_dtype(device, dtype, value):
    t = lazyscope.full((2,), value, dtype=dtype, device=device)
    assert t.dtype == dtype
    assert t[0].item() == value and type(t[0].item()) is type(value)
    assert t.tolist() == [value, value]
