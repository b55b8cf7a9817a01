"""gather/scatter/scatter_add, advanced indexing, index_put and __setitem__,
masked_fill on both devices: values against NumPy, gradients against
central finite differences of a NumPy forward in float64, lazy == eager."""
import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(71)


def np_gather(x, dim, idx):
    return np.take_along_axis(x, idx, axis=dim)


def np_scatter(x, dim, idx, src, add=False):
    out = x.copy()
    for p in np.ndindex(idx.shape):
        q = list(p)
        q[dim] = idx[p]
        if add:
            out[tuple(q)] += src[p]
        else:
            out[tuple(q)] = src[p]
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_matches_numpy(device, dim):
    x = rng.standard_normal((4, 5)).astype(np.float32)
    size = x.shape[dim]
    idx = rng.integers(0, size, size=(3, 2) if dim in (1, -1) else (2, 5))
    got = lazyscope.tensor(x, device=device).gather(dim, lazyscope.tensor(idx, device=device))
    np.testing.assert_array_equal(got.numpy(), np_gather(x, dim, idx) if idx.shape[1 - (dim % 2)] == x.shape[1 - (dim % 2)]
                                  else np.array([[x[i, idx[i, j]] if dim != 0 else x[idx[i, j], j]
                                                  for j in range(idx.shape[1])] for i in range(idx.shape[0])]))


@pytest.mark.parametrize("device", DEVICES)
def test_scatter_and_scatter_add_match_numpy(device):
    x = rng.standard_normal((3, 5))
    idx = np.array([[0, 1, 2, 0], [4, 3, 3, 1], [2, 2, 2, 2]])
    src = rng.standard_normal((3, 4))
    t, i, s = (lazyscope.tensor(a, device=device) for a in (x, idx, src))
    np.testing.assert_allclose(t.scatter_add(1, i, s).numpy(), np_scatter(x, 1, idx, src, add=True), rtol=1e-12)
    # scatter with distinct indices per row (repeats are unordered, as in PyTorch)
    idx2 = np.array([[0, 1, 2, 4], [4, 3, 0, 1], [1, 2, 3, 0]])
    got = lazyscope.scatter(t, 1, lazyscope.tensor(idx2, device=device), s)
    np.testing.assert_allclose(got.numpy(), np_scatter(x, 1, idx2, src), rtol=1e-12)
    filled = t.scatter(1, lazyscope.tensor(idx2, device=device), 7.0)
    np.testing.assert_allclose(filled.numpy(), np_scatter(x, 1, idx2, np.full(idx2.shape, 7.0)))


@pytest.mark.parametrize("device", DEVICES)
def test_gather_scatter_gradients(device):
    idx = np.array([[0, 2], [1, 1], [2, 0]])
    ti = lazyscope.tensor(idx, device=device)
    check(lambda x: x.gather(1, ti), lambda x: np_gather(x, 1, idx), [rng.standard_normal((3, 3))], device)
    idx2 = np.array([[0, 2], [1, 0], [2, 1]])
    ti2 = lazyscope.tensor(idx2, device=device)
    check(lambda x, s: x.scatter(1, ti2, s), lambda x, s: np_scatter(x, 1, idx2, s),
          [rng.standard_normal((3, 3)), rng.standard_normal((3, 2))], device)
    check(lambda x, s: x.scatter_add(1, ti, s), lambda x, s: np_scatter(x, 1, idx, s, add=True),
          [rng.standard_normal((3, 3)), rng.standard_normal((3, 2))], device)


@pytest.mark.parametrize("device", DEVICES)
def test_gather_out_of_range_is_an_index_error(device):
    t = lazyscope.zeros(2, 3, device=device)
    with pytest.raises(IndexError, match="gather: index 3 is out of bounds for dimension 1 with size 3"):
        t.gather(1, lazyscope.tensor([[0, 3]], device=device)).numpy()
    with pytest.raises(lazyscope.EngineError, match="gather: expected an int64 index"):
        t.gather(1, lazyscope.tensor([[0.0]], device=device))
    with pytest.raises(lazyscope.ShapeError, match="same number of dimensions"):
        t.gather(1, lazyscope.tensor([0], device=device))
    lm.mark_step()


ADVANCED = [
    lambda a, L: (a[[0, 2]], L([0, 2])),
    lambda a, L: (a[:, [1, 3, 1]], (slice(None), L([1, 3, 1]))),
    lambda a, L: (a[[0, -1], [2, 3]], (L([0, -1]), L([2, 3]))),
    lambda a, L: (a[np.array([[0, 1], [2, 2]])], L(np.array([[0, 1], [2, 2]]))),
    lambda a, L: (a[1:, [0, 2]], (slice(1, None), L([0, 2]))),
    lambda a, L: (a[:, None, [3, 0]], (slice(None), None, L([3, 0]))),
    lambda a, L: (a[..., [1]], (Ellipsis, L([1]))),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", range(len(ADVANCED)))
def test_advanced_getitem_matches_numpy(device, case):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    t = lazyscope.tensor(x, device=device)
    expected, key = ADVANCED[case](x, lambda v: lazyscope.tensor(np.asarray(v), device=device))
    got = t[key]
    assert tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(got.numpy(), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_advanced_getitem_non_adjacent_indices_go_first(device):
    x = rng.standard_normal((2, 3, 4, 5))
    t = lazyscope.tensor(x, device=device)
    i, j = np.array([0, 1, 1]), np.array([4, 0, 2])
    got = t[i.tolist(), :, :, j.tolist()]
    np.testing.assert_array_equal(got.numpy(), x[i, :, :, j])
    adjacent = t[:, [0, 2], [1, 3]]
    np.testing.assert_array_equal(adjacent.numpy(), x[:, [0, 2], [1, 3]])


@pytest.mark.parametrize("device", DEVICES)
def test_advanced_getitem_gradient_adds_up_repeats(device):
    idx = [0, 2, 0, 0]
    check(lambda x: x[idx], lambda x: x[idx], [rng.standard_normal((3, 2))], device)
    check(lambda x: x[:, [1, 1]][[0, 2]], lambda x: x[:, [1, 1]][[0, 2]], [rng.standard_normal((3, 2))], device)


@pytest.mark.parametrize("device", DEVICES)
def test_advanced_getitem_errors(device):
    t = lazyscope.zeros(3, 4, device=device)
    with pytest.raises(IndexError, match="index: index 5 is out of bounds for dimension 1 with size 4"):
        t[:, [0, 5]].numpy()
    with pytest.raises(IndexError, match="shape mismatch: indexing tensors could not be broadcast"):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="boolean-mask indexing combined with other indices"):
        t[t[:, 0] > 0, 0]
    with pytest.raises(IndexError, match="must be integer or bool"):
        t[lazyscope.tensor([0.0])]
    lm.mark_step()


SETITEM = [
    ((1,), 5.0),
    ((slice(None), 2), -1.0),
    ((slice(0, 3, 2), slice(1, None, 2)), "tensor"),
    ((Ellipsis, 0), "row"),
    (([0, 2],), "row"),
    (([0, 2, 1], [3, 0, 0]), "vector"),
    ((slice(None), [1, 2]), 9.0),
]


def _value(kind, expected_shape):
    if isinstance(kind, float):
        return kind, kind
    if kind == "row":
        v = rng.standard_normal(expected_shape[-1:])
    else:
        v = rng.standard_normal(expected_shape)
    return v, v


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", range(len(SETITEM)))
def test_setitem_matches_numpy(device, case):
    key, kind = SETITEM[case]
    x = rng.standard_normal((3, 4))
    expected = x.copy()
    value, np_value = _value(kind, expected[key].shape)
    expected[key] = np_value
    t = lazyscope.tensor(x, device=device)
    t_value = value if isinstance(value, float) else lazyscope.tensor(value, device=device)
    t[key] = t_value
    np.testing.assert_array_equal(t.numpy(), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_setitem_with_mask_is_masked_fill(device):
    x = rng.standard_normal((3, 4))
    t = lazyscope.tensor(x, device=device)
    t[t > 0] = 0.0
    np.testing.assert_array_equal(t.numpy(), np.where(x > 0, 0.0, x))
    rows = lazyscope.tensor([True, False, True], device=device)
    row_value = rng.standard_normal(4)
    t[rows] = lazyscope.tensor(row_value, device=device)
    expected = np.where(x > 0, 0.0, x)
    expected[[0, 2]] = row_value
    np.testing.assert_array_equal(t.numpy(), expected)
    with pytest.raises(lazyscope.ShapeError, match="data dependent"):
        t[rows] = lazyscope.zeros(2, 4, device=device)
    with pytest.raises(IndexError, match="does not match the shape of the indexed tensor"):
        t[lazyscope.tensor([True, False], device=device)] = 1.0


@pytest.mark.parametrize("device", DEVICES)
def test_setitem_accumulate_and_index_put(device):
    x = rng.standard_normal((4, 3))
    t = lazyscope.tensor(x, device=device)
    idx = lazyscope.tensor([0, 0, 3], device=device)
    src = rng.standard_normal((3, 3))
    got = t.index_put((idx,), lazyscope.tensor(src, device=device), accumulate=True)
    expected = x.copy()
    np.add.at(expected, [0, 0, 3], src)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    t.index_put_((idx,), lazyscope.tensor(src, device=device), accumulate=True)
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_setitem_gradients(device):
    def fn(x, v):
        y = x * 1.0
        y[1:, [0, 2]] = v
        return y

    def ref(x, v):
        y = x.copy()
        y[1:, [0, 2]] = v
        return y
    check(fn, ref, [rng.standard_normal((3, 3)), rng.standard_normal((2, 2))], device)

    def fn2(x, v):
        y = x * 1.0
        y[0, ::2] = v
        return y * y

    def ref2(x, v):
        y = x.copy()
        y[0, ::2] = v
        return y * y
    check(fn2, ref2, [rng.standard_normal((2, 5)), rng.standard_normal(3)], device)


@pytest.mark.parametrize("device", DEVICES)
def test_setitem_errors(device):
    t = lazyscope.zeros(3, 4, device=device)
    with pytest.raises(lazyscope.ShapeError, match="cannot be broadcast to indexing result of shape"):
        t[0] = lazyscope.zeros(3, device=device)
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 3"):
        t[3] = 1.0
    with pytest.raises(IndexError, match="index_put: index -7 is out of bounds"):
        t[[-7]] = 1.0
        t.numpy()
    lm.mark_step()


@pytest.mark.parametrize("device", DEVICES)
def test_masked_fill(device):
    x = rng.standard_normal((3, 4))
    t = lazyscope.tensor(x, device=device)
    mask = x > 0.5
    got = t.masked_fill(lazyscope.tensor(mask[0], device=device), -2.0)
    np.testing.assert_array_equal(got.numpy(), np.where(mask[0], -2.0, x))
    t.masked_fill_(lazyscope.tensor(mask, device=device), 3.0)
    np.testing.assert_array_equal(t.numpy(), np.where(mask, 3.0, x))
    check(lambda a: a.masked_fill(lazyscope.tensor(mask, device=device), 0.0), lambda a: np.where(mask, 0.0, a), [x],
          device)
    with pytest.raises(lazyscope.EngineError, match="masked_fill: expected a bool mask"):
        t.masked_fill(lazyscope.tensor([1, 0, 1, 0], device=device), 1.0)
    with pytest.raises(lazyscope.ShapeError, match="does not broadcast"):
        t.masked_fill(lazyscope.tensor([True, False], device=device), 1.0)


def test_lazy_indexing_equals_eager():
    x = rng.standard_normal((4, 5)).astype(np.float32)
    results = []
    for device in DEVICES:
        t = lazyscope.tensor(x, device=device)
        t[[1, 3], 2:] = 0.5
        t[:, 0] += 1
        y = t[[0, 2, 2]].gather(1, lazyscope.tensor([[4], [0], [1]], device=device))
        results.append((t.numpy(), y.numpy()))
    for a, b in zip(results[0], results[1]):
        np.testing.assert_array_equal(a, b)


# Slices large enough to split their rows over the pool (kernel_util.h's
# for_each_sliced): steps in several dims, a start offset, a last dim of
# one, read (slice), written (setitem: slice_scatter) and the gradient
# (slice_backward), against NumPy.
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("key", [np.s_[:, ::2], np.s_[3:, 1::3, ::5], np.s_[1::2, :, 7:8], np.s_[1, 5:]])
def test_large_strided_slices_read_write_and_differentiate_like_numpy(device, key):
    x = rng.standard_normal((64, 48, 40)).astype(np.float32)
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_array_equal(t[key].numpy(), x[key])
    patch = rng.standard_normal(x[key].shape).astype(np.float32)
    want = x.copy()
    want[key] = patch
    u = lazyscope.tensor(x, device=device)
    u[key] = lazyscope.tensor(patch, device=device)
    np.testing.assert_array_equal(u.numpy(), want)
    leaf = lazyscope.tensor(x, device=device, requires_grad=True)
    weight = rng.standard_normal(x[key].shape).astype(np.float32)
    (leaf[key] * lazyscope.tensor(weight, device=device)).sum().backward()
    grad = np.zeros_like(x)
    grad[key] = weight
    np.testing.assert_array_equal(leaf.grad.numpy(), grad)
