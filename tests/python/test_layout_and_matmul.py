"""Layout ops and matmul on both devices against NumPy, plus lazy == eager."""
import numpy as np
import pytest

import lazyscope

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(9)


def arr(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


LAYOUT = [
    ("reshape", lambda t: t.reshape(4, 6), lambda x: x.reshape(4, 6)),
    ("reshape_tuple_infer", lambda t: t.reshape((-1, 3)), lambda x: x.reshape(-1, 3)),
    ("view", lambda t: t.view(2, -1), lambda x: x.reshape(2, -1)),
    ("reshape_fn", lambda t: lazyscope.reshape(t, (24,)), lambda x: x.reshape(24)),
    ("permute", lambda t: t.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1)),
    ("permute_tuple_neg", lambda t: t.permute((-1, 1, 0)), lambda x: x.transpose(2, 1, 0)),
    ("transpose", lambda t: t.transpose(0, 2), lambda x: np.swapaxes(x, 0, 2)),
    ("transpose_neg", lambda t: lazyscope.transpose(t, -1, -2), lambda x: np.swapaxes(x, -1, -2)),
    ("T", lambda t: t.T, lambda x: x.T),
    ("mT", lambda t: t.mT, lambda x: np.swapaxes(x, -1, -2)),
    ("expand", lambda t: t.reshape(2, 1, 12).expand(2, 3, 12),
     lambda x: np.broadcast_to(x.reshape(2, 1, 12), (2, 3, 12))),
    ("expand_new_dims", lambda t: t.expand(5, -1, -1, -1), lambda x: np.broadcast_to(x, (5, 2, 3, 4))),
    ("unsqueeze", lambda t: t.unsqueeze(1), lambda x: x[:, None]),
    ("unsqueeze_neg", lambda t: lazyscope.unsqueeze(t, -1), lambda x: x[..., None]),
    ("squeeze", lambda t: t.reshape(2, 1, 3, 1, 4).squeeze(), lambda x: x),
    ("squeeze_dim", lambda t: t.reshape(2, 1, 3, 1, 4).squeeze(3), lambda x: x.reshape(2, 1, 3, 4)),
    ("squeeze_non_one", lambda t: t.squeeze(0), lambda x: x),
    ("flatten", lambda t: t.flatten(), lambda x: x.reshape(-1)),
    ("flatten_range", lambda t: lazyscope.flatten(t, 1), lambda x: x.reshape(2, 12)),
    ("flatten_mid", lambda t: t.flatten(0, 1), lambda x: x.reshape(6, 4)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_])
@pytest.mark.parametrize("name,fn,ref", LAYOUT, ids=[entry[0] for entry in LAYOUT])
def test_layout_op_matches_numpy(device, dtype, name, fn, ref):
    x = arr(2, 3, 4) > 0 if dtype == np.bool_ else (arr(2, 3, 4) * 10).astype(dtype)
    out = fn(lazyscope.tensor(x, device=device))
    expected = ref(x)
    assert out.shape == expected.shape
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("device", DEVICES)
def test_layout_errors_name_shapes_and_line(device):
    t = lazyscope.zeros(2, 3, device=device)
    with pytest.raises(lazyscope.ShapeError, match=r"reshape.*\[4, -1\].*\[2, 3\].*test_layout_and_matmul.py:"):
        t.reshape(4, -1)
    with pytest.raises(lazyscope.ShapeError, match="expand"):
        t.expand(4, 3)
    with pytest.raises(lazyscope.ShapeError, match="transpose.*out of range.*test_layout_and_matmul.py:"):
        t.transpose(0, 2)
    with pytest.raises(lazyscope.ShapeError, match="t\\(\\)"):
        lazyscope.zeros(1, 2, 3, device=device).t()


MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((4,), (4,)),
    ((4,), (4, 2)),
    ((3, 4), (4,)),
    ((2, 3, 4), (4, 5)),
    ((3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((6,), (2, 6, 3)),
    ((2, 3, 6), (6,)),
    ((1, 3, 0), (0, 2)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul_batches_broadcasts_and_takes_vectors(device, dtype, shapes):
    a = (arr(*shapes[0]) * 4).astype(dtype)
    b = (arr(*shapes[1]) * 4).astype(dtype)
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    expected = np.matmul(a, b)
    for out in (ta @ tb, lazyscope.matmul(ta, tb), ta.matmul(tb)):
        assert out.shape == np.shape(expected)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_promotes_and_checks_shapes(device):
    a, b = arr(3, 4), np.arange(8).reshape(4, 2)
    out = lazyscope.tensor(a, device=device) @ lazyscope.tensor(b, device=device)
    assert out.dtype == lazyscope.float32
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-5)
    with pytest.raises(lazyscope.ShapeError, match=r"\[3, 4\] and \[3, 4\]"):
        lazyscope.tensor(a, device=device) @ lazyscope.tensor(a, device=device)
    with pytest.raises(lazyscope.ShapeError, match="cannot be broadcast"):
        lazyscope.zeros(2, 3, 4, device=device) @ lazyscope.zeros(3, 4, 5, device=device)
    with pytest.raises(ValueError, match="mm"):
        lazyscope.mm(lazyscope.zeros(4, device=device), lazyscope.zeros(4, device=device))
    np.testing.assert_allclose(lazyscope.bmm(lazyscope.ones(2, 3, 4, device=device),
                                             lazyscope.ones(2, 4, 1, device=device)).numpy(), np.full((2, 3, 1), 4.0))


def test_lazy_layout_and_matmul_equal_eager():
    x, w = arr(2, 3, 4), arr(4, 5)
    results = []
    for device in DEVICES:
        t, tw = lazyscope.tensor(x, device=device), lazyscope.tensor(w, device=device)
        outs = [fn(t) for _, fn, _ in LAYOUT] + [t @ tw, (t.transpose(1, 2) @ t).flatten(1), t.mT @ t]
        results.append([o.numpy() for o in outs])
    for eager, lazy in zip(*results):
        np.testing.assert_array_equal(eager, lazy)
