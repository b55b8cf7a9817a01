"""Tensor.norm / lazyscope.norm / linalg.vector_norm against NumPy, on cpu and
lazy, with gradients, and without a host sync on the lazy device."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope.core import lazy_model as lm

DEVICES = ["cpu", "lazy:0"]
X = np.random.default_rng(3).standard_normal((3, 4, 5)).astype(np.float32)
X[0, 0, :2] = 0.0  # zeros for the 0-"norm"


def np_norm(x, p, dim, keepdim):
    axis = None if dim is None else (dim if isinstance(dim, int) else tuple(dim))
    a = np.abs(x.astype(np.float64))
    if p in ("fro", 2):
        out = np.sqrt((a ** 2).sum(axis=axis, keepdims=keepdim))
    elif p == math.inf:
        out = a.max(axis=axis, keepdims=keepdim)
    elif p == -math.inf:
        out = a.min(axis=axis, keepdims=keepdim)
    elif p == 0:
        out = (a != 0).sum(axis=axis, keepdims=keepdim).astype(np.float64)
    else:
        out = (a ** p).sum(axis=axis, keepdims=keepdim) ** (1.0 / p)
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", ["fro", 2, 1, math.inf, -math.inf, 0, 3.0, 0.5])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (1, False), (-1, True), ((0, 2), False),
                                         ([0, 1], True)])
def test_norm_matches_numpy(device, p, dim, keepdim):
    x = lazyscope.tensor(X, device=device)
    got = x.norm(p, dim=dim, keepdim=keepdim)
    want = np_norm(X, p, dim, keepdim)
    assert tuple(got.shape) == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lazyscope.norm(x, p, dim, keepdim).numpy(), want, rtol=1e-5, atol=1e-6)
    if p != "fro":
        v = lazyscope.linalg.vector_norm(x, p, dim=dim, keepdim=keepdim)
        np.testing.assert_allclose(v.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_norm_gradient_is_x_over_the_norm(device):
    x = lazyscope.tensor(X, device=device, requires_grad=True)
    x.norm().backward()
    np.testing.assert_allclose(x.grad.numpy(), X / np.sqrt((X.astype(np.float64) ** 2).sum()), rtol=1e-5, atol=1e-7)


def test_norm_on_lazy_does_not_sync():
    x = lazyscope.tensor(X, device="lazy:0")
    lm.mark_step()
    lazyscope._C.reset_metrics()
    norms = [x.norm(), x.norm(math.inf), x.norm(1, dim=0), lazyscope.linalg.vector_norm(x, 3)]
    syncs = {k: v for k, v in lm.counters().items() if k.startswith("SyncCause.") and v}
    assert not syncs
    assert all(str(n.device) == "lazy:0" for n in norms)


def test_norm_errors_are_clear():
    with pytest.raises(TypeError, match="floating point"):
        lazyscope.ones(3, dtype=lazyscope.int64).norm()
    with pytest.raises(ValueError, match="'bogus' is not a norm"):
        lazyscope.ones(2, 2).norm("bogus")
    with pytest.raises(ValueError, match="nuc"):
        lazyscope.ones(2, 2, 2).norm("nuc")  # which two dims: not said
    # 'nuc' is the nuclear norm (the SVD's values summed), as NumPy's.
    m = np.array([[3.0, 1.0], [2.0, -4.0]])
    np.testing.assert_allclose(lazyscope.tensor(m).norm("nuc").numpy(), np.linalg.norm(m, "nuc"), rtol=1e-12)
    with pytest.raises(IndexError, match="out of range"):
        lazyscope.ones(2, 2).norm(dim=2)
    # dtype= converts first, as PyTorch
    np.testing.assert_allclose(lazyscope.ones(4, dtype=lazyscope.int64).norm(dtype=lazyscope.float32).numpy(), 2.0)
