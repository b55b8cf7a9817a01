"""nn.init.orthogonal_, eye_, dirac_ and sparse_ against their definitions, checked in NumPy:
orthogonality with the gain (both orientations and conv-shaped), Haar-uniform signs (the
sign correction by R's diagonal), the identity, a convolution by dirac_'s weight passing its
input through, and sparse_'s zero count per column; on both devices."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import nn

DEVICES = ["cpu", "lazy:0"]


def _host(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(6, 6), (4, 10), (10, 4), (8, 4, 3, 3), (40, 2, 3)])
def test_orthogonal_rows_or_columns_are_orthonormal_times_the_gain(device, shape):
    lazyscope.manual_seed(0)
    w = lazyscope.zeros(*shape, device=device, dtype=lazyscope.float64)
    out = nn.init.orthogonal_(w, gain=2.5)
    assert out is w and tuple(w.shape) == shape
    m = _host(w).reshape(shape[0], -1)
    rows, cols = m.shape
    gram = m @ m.T if rows <= cols else m.T @ m
    np.testing.assert_allclose(gram, 2.5 ** 2 * np.eye(min(rows, cols)), atol=1e-5)


def test_orthogonal_float32_and_errors():
    w = lazyscope.zeros(5, 3)
    nn.init.orthogonal_(w)
    np.testing.assert_allclose(_host(w).T @ _host(w), np.eye(3), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        nn.init.orthogonal_(lazyscope.zeros(4))
    assert nn.init.orthogonal_(lazyscope.zeros(0, 3)).shape == (0, 3)


def test_orthogonal_is_haar_uniform_its_signs_corrected():
    # Without the correction by sign(diag(R)), the QR's first column is -x/|x| sign-fixed by
    # LAPACK: W[0, 0] is then always negative. Haar-uniform: its mean is 0 (variance 1/3).
    lazyscope.manual_seed(1)
    n = 3000
    corner = np.empty(n)
    for i in range(n):
        w = lazyscope.zeros(3, 3, dtype=lazyscope.float64)
        nn.init.orthogonal_(w)
        corner[i] = _host(w)[0, 0]
    assert abs(corner.mean()) < 5 * math.sqrt(1 / 3 / n)
    assert abs(corner.var() - 1 / 3) < 0.03


def test_generator_argument_reproduces_draws():
    a, b = lazyscope.zeros(4, 6), lazyscope.zeros(4, 6)
    nn.init.orthogonal_(a, generator=lazyscope.Generator().manual_seed(3))
    nn.init.orthogonal_(b, generator=lazyscope.Generator().manual_seed(3))
    assert np.array_equal(_host(a), _host(b))
    c, d = lazyscope.zeros(3, 3), lazyscope.zeros(3, 3)
    nn.init.uniform_(c, generator=lazyscope.Generator().manual_seed(5))
    nn.init.uniform_(d, generator=lazyscope.Generator().manual_seed(5))
    assert np.array_equal(_host(c), _host(d))


@pytest.mark.parametrize("device", DEVICES)
def test_eye(device):
    for shape in ((3, 3), (2, 5), (4, 2)):
        w = lazyscope.ones(*shape, device=device)
        nn.init.eye_(w)
        np.testing.assert_array_equal(_host(w), np.eye(*shape))
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.eye_(lazyscope.zeros(2, 2, 2))


@pytest.mark.parametrize("device", DEVICES)
def test_dirac_weight_makes_a_convolution_the_identity(device):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4, 7, 7))
    w = lazyscope.ones(4, 4, 3, 3, device=device, dtype=lazyscope.float64)
    nn.init.dirac_(w)
    y = nn.functional.conv2d(lazyscope.tensor(x, device=device), w, padding=1)
    np.testing.assert_allclose(_host(y), x, atol=1e-12)
    # groups=2 on a [6, 2, 3] conv1d weight: each group's first two outputs copy its inputs.
    w = lazyscope.ones(6, 2, 3)
    nn.init.dirac_(w, groups=2)
    want = np.zeros((6, 2, 3))
    for g in range(2):
        for d in range(2):
            want[g * 3 + d, d, 1] = 1
    np.testing.assert_array_equal(_host(w), want)
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        nn.init.dirac_(lazyscope.zeros(3, 3))
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.init.dirac_(lazyscope.zeros(5, 2, 3), groups=2)


@pytest.mark.parametrize("device", DEVICES)
def test_sparse(device):
    lazyscope.manual_seed(4)
    w = lazyscope.ones(50, 200, device=device, dtype=lazyscope.float64)
    nn.init.sparse_(w, sparsity=0.3, std=0.02)
    m = _host(w)
    assert np.all((m == 0).sum(0) == 15)  # ceil(0.3 * 50) per column
    nonzero = m[m != 0]
    assert abs(nonzero.std() - 0.02) < 5 * 0.02 / math.sqrt(2 * nonzero.size)
    assert abs(nonzero.mean()) < 5 * 0.02 / math.sqrt(nonzero.size)
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.sparse_(lazyscope.zeros(3), 0.1)
