"""float32 conv2d, its two backward ops and max pooling run on oneDNN
(float64 keeps the im2col and loop kernels, which test_conv_pool_norm.py's
float64 gradient checks cover). Here the float32 gradients, computed by the
engine on both devices, are checked against central finite differences of
the NumPy references in float64, and max pooling's special values (NaN,
-inf, ties), which oneDNN does not treat as PyTorch does, against NumPy."""
import numpy as np
import pytest

import lazyscope
from test_autograd import numeric_grads
from test_conv_pool_norm import CONV_CASES, DEVICES, MAX_CASES, conv2d_ref, max_pool2d_ref

rng = np.random.default_rng(11)


def float32_grads(fn, arrays, weights, device):
    leaves = [lazyscope.tensor(a.astype(np.float32), device=device, requires_grad=True) for a in arrays]
    out = fn(*leaves)
    (out * lazyscope.tensor(weights.astype(np.float32), device=device)).sum().backward()
    return [leaf.grad.numpy() for leaf in leaves]


def check_float32(fn, ref, arrays, device):
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    weights = rng.standard_normal(np.shape(ref(*arrays)))
    for got, want in zip(float32_grads(fn, arrays, weights, device), numeric_grads(ref, arrays, weights)):
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", CONV_CASES)
def test_float32_conv2d_gradients_match_finite_differences(device, kw):
    # Four input channels per group: fewer take the im2col path backward.
    groups = kw.get("groups", 1)
    x = rng.standard_normal((2, 4 * groups, 7, 6))
    w = rng.standard_normal((4, 4, 3, 2))
    check_float32(lambda a, b: lazyscope.conv2d(a, b, **kw), lambda a, b: conv2d_ref(a, b, **kw), [x, w], device)


def test_float32_conv2d_of_a_real_size_matches_numpy():
    # Big enough for oneDNN's blocked, threaded kernels (channels past one vector).
    x = rng.standard_normal((8, 16, 14, 14)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    got = lazyscope.conv2d(lazyscope.tensor(x), lazyscope.tensor(w), padding=1).numpy()
    want = conv2d_ref(x.astype(np.float64), w.astype(np.float64), padding=1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", MAX_CASES)
def test_float32_max_pool2d_gradients_match_finite_differences(device, kw):
    # Distinct values a step apart, shuffled: finite differences never cross a tie.
    x = rng.permutation(2 * 2 * 7 * 8).reshape(2, 2, 7, 8) * 0.01
    check_float32(lambda t: lazyscope.max_pool2d(t, **kw), lambda a: max_pool2d_ref(a, **kw), [x], device)


@pytest.mark.parametrize("device", DEVICES)
def test_float32_max_pool2d_keeps_pytorchs_nan_and_minus_inf(device):
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    x[0, 0, :2, :2] = -np.inf       # a window of -inf pools to -inf, not to the lowest finite float
    x[0, 1, 2, 3] = np.nan          # NaN wins its window
    got = lazyscope.max_pool2d(lazyscope.tensor(x, device=device), 2).numpy()
    np.testing.assert_array_equal(got, max_pool2d_ref(x, 2))
    assert got[0, 0, 0, 0] == -np.inf and np.isnan(got[0, 1, 1, 1])
    # Enough channels for oneDNN's blocked kernels, which drop NaN where it
    # is not the first element of its window: these inputs take the loops.
    x = rng.standard_normal((2, 16, 6, 6)).astype(np.float32)
    where = rng.random(x.shape)
    x[where < 0.1] = np.nan
    x[(where >= 0.1) & (where < 0.2)] = -np.inf
    got = lazyscope.max_pool2d(lazyscope.tensor(x, device=device), 2).numpy()
    np.testing.assert_array_equal(got, max_pool2d_ref(x, 2))  # NaN where NumPy has NaN


@pytest.mark.parametrize("device", DEVICES)
def test_float32_max_pool2d_gradient_goes_to_the_first_of_tied_maxima(device):
    x = np.zeros((1, 1, 4, 4), dtype=np.float32)
    x[0, 0, 1, 0] = x[0, 0, 1, 1] = 1.0        # a tie in the first window: the first (row-major) wins
    t = lazyscope.tensor(x, device=device, requires_grad=True)
    lazyscope.max_pool2d(t, 2).sum().backward()
    want = np.zeros_like(x)
    want[0, 0, 1, 0] = want[0, 0, 0, 2] = want[0, 0, 2, 0] = want[0, 0, 2, 2] = 1.0
    np.testing.assert_array_equal(t.grad.numpy(), want)


@pytest.mark.parametrize("device", DEVICES)
def test_float32_max_pool2d_ties_in_oneDNNs_blocked_kernels_go_to_the_first(device):
    # Values from {0, 1, 2} over 16 channels: most windows hold ties.
    x = rng.integers(0, 3, (2, 16, 6, 6)).astype(np.float32)
    t = lazyscope.tensor(x, device=device, requires_grad=True)
    lazyscope.max_pool2d(t, 2).sum().backward()
    want = np.zeros_like(x)
    for n, c, i, j in np.ndindex(2, 16, 3, 3):
        k = int(np.argmax(x[n, c, 2 * i:2 * i + 2, 2 * j:2 * j + 2]))  # the first maximum, row-major
        want[n, c, 2 * i + k // 2, 2 * j + k % 2] = 1.0
    np.testing.assert_array_equal(t.grad.numpy(), want)
