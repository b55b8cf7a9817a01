"""The in-place shape ops (squeeze_, unsqueeze_, t_, transpose_, swapaxes_,
swapdims_): the tensor itself takes the new shape, its data shared (views
taken before see its writes and it sees theirs), gradients flow through a
non-leaf, and a leaf that requires grad is refused, as in PyTorch."""
import numpy as np
import pytest

import lazyscope

DEVICES = ["cpu", "lazy:0"]
CASES = [
    ("squeeze_", (), (1, 3, 1, 2), lambda a: np.squeeze(a)),
    ("squeeze_", (2,), (1, 3, 1, 2), lambda a: np.squeeze(a, 2)),
    ("unsqueeze_", (1,), (3, 2), lambda a: np.expand_dims(a, 1)),
    ("unsqueeze_", (-1,), (3, 2), lambda a: np.expand_dims(a, -1)),
    ("t_", (), (3, 2), lambda a: a.T),
    ("transpose_", (0, 2), (2, 3, 4), lambda a: np.swapaxes(a, 0, 2)),
    ("swapaxes_", (1, 0), (2, 3), lambda a: a.T),
    ("swapdims_", (0, 1), (2, 3), lambda a: a.T),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name, args, shape, ref", CASES)
def test_the_tensor_takes_the_new_shape_and_keeps_its_data(device, name, args, shape, ref):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    x = lazyscope.tensor(a, device=device)
    before = x.reshape(-1)  # a view of the same data
    out = getattr(x, name)(*args)
    assert out is x
    want = ref(a)
    assert tuple(x.shape) == want.shape
    np.testing.assert_array_equal(x.numpy(), want)
    # A write through the reshaped tensor reaches the earlier view, and back.
    x.mul_(2.0)
    np.testing.assert_array_equal(before.numpy(), a.reshape(-1) * 2)
    before.add_(1.0)
    np.testing.assert_array_equal(x.numpy(), want * 2 + 1)


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_flow_through_a_reshaped_non_leaf_and_a_leaf_is_refused(device):
    a = np.arange(6, dtype=np.float64).reshape(2, 3)
    x = lazyscope.tensor(a, device=device, requires_grad=True)
    y = x * 3.0
    y.t_()
    y.unsqueeze_(0)
    w = lazyscope.tensor(np.arange(6, dtype=np.float64).reshape(1, 3, 2), device=device)
    (y * w).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * np.arange(6, dtype=np.float64).reshape(3, 2).T)
    with pytest.raises(RuntimeError, match="t_: a leaf Variable that requires grad"):
        x.t_()
    assert tuple(x.shape) == (2, 3)
    with lazyscope.no_grad():
        x.t_()
    assert tuple(x.shape) == (3, 2)


def test_a_bad_dim_is_refused_and_the_tensor_is_unchanged():
    x = lazyscope.ones(2, 3)
    with pytest.raises(lazyscope.ShapeError, match="transpose: dimension 5 is out of range"):
        x.transpose_(0, 5)
    assert tuple(x.shape) == (2, 3)
