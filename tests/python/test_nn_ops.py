"""Softmax, losses, joins/splits, gathers and indexing on both devices:
values against NumPy, gradients against central finite differences of an
independent NumPy forward in float64 (the helpers of test_autograd)."""
import numpy as np
import pytest

import lazyscope
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(33)


def softmax_ref(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax_ref(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax_match_numpy(device, dtype, dim):
    x = (rng.standard_normal((3, 4, 5)) * 3).astype(dtype)
    t = lazyscope.tensor(x, device=device)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    for got, ref in [(t.softmax(dim), softmax_ref), (lazyscope.log_softmax(t, dim), log_softmax_ref)]:
        assert got.dtype == t.dtype and got.shape == x.shape
        np.testing.assert_allclose(got.numpy(), ref(x.astype(np.float64), dim), rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_softmax_is_stable_for_large_inputs(device):
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -999.0]], dtype=np.float32)
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_allclose(t.softmax(-1).numpy(), softmax_ref(x.astype(np.float64), -1), rtol=1e-6)
    np.testing.assert_allclose(t.log_softmax(1).numpy(), log_softmax_ref(x.astype(np.float64), 1), rtol=1e-6)
    assert np.isfinite(t.log_softmax(1).numpy()).all()


@pytest.mark.parametrize("device", DEVICES)
def test_softmax_of_integers_is_float32_and_dtype_argument_casts(device):
    t = lazyscope.tensor([[1, 2, 3]], device=device)
    assert t.softmax(1).dtype == lazyscope.float32
    assert lazyscope.softmax(t, 1, dtype=lazyscope.float64).dtype == lazyscope.float64


def test_softmax_bad_dim_names_the_op_and_line():
    with pytest.raises(lazyscope.ShapeError) as info:
        lazyscope.tensor([[1.0, 2.0]]).softmax(2)
    assert "softmax" in str(info.value) and "test_nn_ops.py:" in str(info.value)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_gradients_match_finite_differences(device, dim):
    x = rng.standard_normal((3, 4, 2))
    check(lambda t: t.softmax(dim), lambda a: softmax_ref(a, dim), [x], device)
    check(lambda t: t.log_softmax(dim), lambda a: log_softmax_ref(a, dim), [x], device)
