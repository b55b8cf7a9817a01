"""sort/argsort/topk, cumsum/cumprod, tril/triu and prod's exact gradient on
both devices, against NumPy; gradients against finite differences."""
import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(13)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_is_stable_and_matches_numpy(device, dim, descending):
    x = rng.integers(0, 4, size=(5, 6)).astype(np.float32)  # many ties
    t = lazyscope.tensor(x, device=device)
    values, indices = t.sort(dim=dim, descending=descending, stable=True)
    if descending:  # a stable descending sort: sort the negation stably
        order = np.argsort(-x, axis=dim, kind="stable")
    else:
        order = np.argsort(x, axis=dim, kind="stable")
    np.testing.assert_array_equal(indices.numpy(), order)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, order, axis=dim))
    np.testing.assert_array_equal(lazyscope.argsort(t, dim, descending).numpy(), order)
    assert indices.dtype == lazyscope.int64


@pytest.mark.parametrize("device", DEVICES)
def test_sort_nan_is_largest_and_integers_are_exact(device):
    x = np.array([3.0, np.nan, -1.0, 2.0])
    v, i = lazyscope.tensor(x, device=device).sort()
    assert i.tolist() == [2, 3, 0, 1]
    big = np.array([2**62 + 1, 2**62, -5], dtype=np.int64)
    assert lazyscope.tensor(big, device=device).argsort().tolist() == [2, 1, 0]


def stable_order(line, descending):
    """The order PyTorch's stable sort gives, from Python's stable sorted():
    values by <, -0 equal to +0, NaNs equal and after every number (before
    them, descending); ties keep their positions both ways."""
    values = line.tolist()  # Python numbers: an int64's negation does not overflow

    def key(j):
        v = values[j]
        nan = v != v
        if descending:
            return (not nan, 0 if nan else -v)
        return (nan, 0 if nan else v)

    return sorted(range(len(values)), key=key)


# Lines long enough to split over the pool, a dim that is not the last, ties,
# NaNs, +-inf and signed zeros, float32, float64 and int64 extremes.
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim", [1, -1])
def test_long_lines_sort_stably_with_nans_infinities_and_signed_zeros(device, dtype, descending, dim):
    shape = (3, 9, 700)
    if dtype == np.int64:
        x = rng.integers(-3, 3, shape).astype(np.int64)
        x[0, 0, :4] = [np.iinfo(np.int64).max, np.iinfo(np.int64).min, -1, 0]
    else:
        x = rng.integers(-3, 3, shape).astype(dtype)
        x[..., ::37] = np.nan
        x[..., 5::41] = -0.0
        x[..., 7::53] = np.inf
        x[..., 11::59] = -np.inf
    got = lazyscope.argsort(lazyscope.tensor(x, device=device), dim, descending).numpy()
    lines = np.moveaxis(x, dim, -1).reshape(-1, x.shape[dim])
    want = np.array([stable_order(line, descending) for line in lines])
    np.testing.assert_array_equal(np.moveaxis(got, dim, -1).reshape(want.shape), want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_numpy(device, largest):
    x = rng.standard_normal((4, 7))
    t = lazyscope.tensor(x, device=device)
    values, indices = lazyscope.topk(t, 3, dim=1, largest=largest)
    order = np.argsort(-x if largest else x, axis=1)[:, :3]
    np.testing.assert_array_equal(indices.numpy(), order)
    np.testing.assert_array_equal(values.numpy(), np.take_along_axis(x, order, axis=1))
    named = t.topk(2)
    assert named.values is named[0] and named.indices is named[1]
    with pytest.raises(IndexError, match="topk: k = 8 is out of range for dimension 1 of size 7"):
        t.topk(8)


@pytest.mark.parametrize("device", DEVICES)
def test_sort_and_topk_gradients(device):
    check(lambda x: x.sort(1)[0], lambda x: np.sort(x, axis=1), [rng.standard_normal((3, 4))], device)
    check(lambda x: x.topk(2, dim=0).values, lambda x: -np.sort(-x, axis=0)[:2], [rng.standard_normal((4, 3))], device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1])
def test_cumsum_cumprod_match_numpy(device, dim):
    x = rng.standard_normal((4, 5))
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_allclose(t.cumsum(dim).numpy(), np.cumsum(x, axis=dim), rtol=1e-12)
    np.testing.assert_allclose(lazyscope.cumprod(t, dim).numpy(), np.cumprod(x, axis=dim), rtol=1e-12)
    i = lazyscope.tensor([[1, 2], [3, 4]], dtype=lazyscope.int32, device=device)
    assert i.cumsum(1).dtype == lazyscope.int64 and i.cumsum(1).tolist() == [[1, 3], [3, 7]]
    assert i.cumsum(0, dtype=lazyscope.float64).dtype == lazyscope.float64


@pytest.mark.parametrize("device", DEVICES)
def test_scan_gradients_including_zeros(device):
    check(lambda x: x.cumsum(1), lambda x: np.cumsum(x, axis=1), [rng.standard_normal((3, 4))], device)
    x = rng.standard_normal((3, 5))
    x[0, 1] = 0.0
    x[1, 2] = x[1, 4] = 0.0
    check(lambda a: a.cumprod(1), lambda a: np.cumprod(a, axis=1), [x], device)
    check(lambda a: a.cumprod(0), lambda a: np.cumprod(a, axis=0), [x], device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
def test_tril_triu(device, diagonal):
    x = rng.standard_normal((2, 3, 4))
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_array_equal(t.tril(diagonal).numpy(), np.tril(x, diagonal))
    np.testing.assert_array_equal(lazyscope.triu(t, diagonal).numpy(), np.triu(x, diagonal))
    check(lambda a: a.triu(diagonal), lambda a: np.triu(a, diagonal), [x[0]], device)
    with pytest.raises(lazyscope.ShapeError, match="tril: expected a tensor of at least 2 dimensions"):
        lazyscope.tensor([1.0, 2.0], device=device).tril()


@pytest.mark.parametrize("device", DEVICES)
def test_prod_gradient_is_exact_with_zeros(device):
    for zeros in ([], [(0, 1)], [(0, 1), (0, 3)]):
        x = rng.standard_normal((2, 4))
        for z in zeros:
            x[z] = 0.0
        check(lambda a: a.prod(1), lambda a: np.prod(a, axis=1), [x], device)
        check(lambda a: a.prod(), lambda a: np.prod(a), [x], device)
    lm.mark_step()


def test_backward_with_create_graph_leaves_a_differentiable_grad():
    w = lazyscope.tensor([1.0, 2.0], requires_grad=True)
    (w * w * w).sum().backward(create_graph=True)
    g = w.grad  # 3 w^2, with a graph
    (g * g).sum().backward()  # adds d(9 w^4)/dw = 36 w^3 to the 3 w^2 there
    np.testing.assert_allclose(w.grad.detach().numpy(), [3 + 36, 12 + 288])
