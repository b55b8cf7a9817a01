"""conv_transpose2d / conv_transpose1d and their modules on both devices.
Values against a direct NumPy scatter written from PyTorch's documented
definition (every input element adds its weight-scaled kernel into the
output at stride-spaced, dilated positions, then the padding is cropped),
never against the engine's own conv2d; gradients against central finite
differences of that NumPy forward in float64 (test_autograd.check)."""
import numpy as np
import pytest

import lazyscope
from lazyscope import nn
from lazyscope.nn import functional as F
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(77)


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv_transpose2d_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = pair(stride), pair(padding), pair(output_padding), pair(dilation)
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    full_h = (h - 1) * sh + dh * (kh - 1) + 1 + oph
    full_w = (wd - 1) * sw + dw * (kw - 1) + 1 + opw
    full = np.zeros((n, og * groups, full_h + ph, full_w + pw), dtype=np.result_type(x, w))
    cg = c // groups
    for g in range(groups):
        for ci in range(g * cg, (g + 1) * cg):
            for i in range(kh):
                for j in range(kw):
                    # out[:, g*og:(g+1)*og, y*sh + i*dh, x*sw + j*dw] += x[:, ci, y, x] * w[ci, :, i, j]
                    contrib = np.einsum("nhw,o->nohw", x[:, ci], w[ci, :, i, j])
                    full[:, g * og:(g + 1) * og, i * dh:i * dh + sh * (h - 1) + 1:sh,
                         j * dw:j * dw + sw * (wd - 1) + 1:sw] += contrib
    out = full[:, :, ph:ph + full_h - 2 * ph, pw:pw + full_w - 2 * pw]
    if b is not None:
        out = out + b[None, :, None, None]
    return out


CASES = [
    dict(),
    dict(stride=2),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2)),
    dict(dilation=2, padding=1),
    dict(stride=2, groups=2),
    dict(stride=3, padding=2, dilation=(1, 2), output_padding=(2, 1), groups=2),
]


def to(a, device):
    return lazyscope.tensor(a, device=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", CASES)
def test_conv_transpose2d_matches_numpy(device, dtype, kw):
    groups = kw.get("groups", 1)
    x = rng.standard_normal((2, 4, 5, 6)).astype(dtype)
    w = rng.standard_normal((4, 6 // groups, 3, 2)).astype(dtype)
    b = rng.standard_normal(6).astype(dtype)
    got = F.conv_transpose2d(to(x, device), to(w, device), to(b, device), **kw).numpy()
    want = conv_transpose2d_ref(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **kw)
    assert got.dtype == dtype and got.shape == want.shape
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1),
                                dict(stride=(1, 2), dilation=2, groups=2)])
def test_conv_transpose2d_gradients_match_finite_differences(device, kw):
    groups = kw.get("groups", 1)
    x = rng.standard_normal((2, 2, 3, 4))
    w = rng.standard_normal((2, 4 // groups, 3, 2))
    b = rng.standard_normal(4)
    check(lambda t, k, c: F.conv_transpose2d(t, k, c, **kw), lambda a, k, c: conv_transpose2d_ref(a, k, c, **kw),
          [x, w, b], device, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_conv_transpose1d_matches_numpy_and_unbatched_input(device):
    x = rng.standard_normal((3, 4, 7))
    w = rng.standard_normal((4, 5, 3))
    b = rng.standard_normal(5)
    got = F.conv_transpose1d(to(x, device), to(w, device), to(b, device), stride=2, padding=1, output_padding=1)
    want = conv_transpose2d_ref(x[:, :, None], w[:, :, None], b, stride=(1, 2), padding=(0, 1),
                                output_padding=(0, 1))[:, :, 0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    one = F.conv_transpose2d(to(x[0][:, None], device), to(w[:, :, None], device))  # [C, H, W] in, [O, H', W'] out
    assert one.shape == (5, 1, 9)
    np.testing.assert_allclose(one.numpy(), conv_transpose2d_ref(x[:1, :, None], w[:, :, None])[0], rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_conv_transpose2d_module_parameters_output_size_and_training(device):
    lazyscope.manual_seed(3)
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, groups=2).to(device)
    assert tuple(m.weight.shape) == (4, 3, 3, 3) and tuple(m.bias.shape) == (6,)
    bound = 1 / np.sqrt(3 * 3 * 3)  # PyTorch's fan_in of a transposed weight: out/groups * kH * kW
    assert np.abs(m.bias.numpy()).max() <= bound and np.abs(m.weight.numpy()).max() <= bound
    x = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    assert m(to(x, device)).shape == (2, 6, 9, 9)
    y = m(to(x, device), output_size=[10, 10])  # the other size a stride of 2 maps back to 5
    want = conv_transpose2d_ref(x.astype(np.float64), m.weight.numpy().astype(np.float64),
                                m.bias.numpy().astype(np.float64), stride=2, padding=1, output_padding=1, groups=2)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"ConvTranspose2d: requested an output size of \(12, 12\), but valid "
                                         r"sizes range from 9 to 10"):
        m(to(x, device), output_size=(12, 12))
    # One SGD step moves the weight by -lr * its gradient (the gradient: NumPy's adjoint of the output sum).
    opt = lazyscope.optim.SGD(m.parameters(), lr=0.1)
    before = m.weight.numpy().copy()
    m(to(x, device)).sum().backward()
    opt.step()
    if device != "cpu":
        lazyscope.core.lazy_model.mark_step()
    # d sum(out) / d w[ci, oc, i, j]: the sum of x[:, ci, y, x] over the input positions whose tap (i, j)
    # lands inside the cropped 9 x 9 output (at 2y - 1 + i, 2x - 1 + j), for every oc of ci's group.
    grad = np.zeros(before.shape)
    for i in range(3):
        ys = [y for y in range(5) if 0 <= 2 * y - 1 + i < 9]
        for j in range(3):
            xs = [v for v in range(5) if 0 <= 2 * v - 1 + j < 9]
            grad[:, :, i, j] = x[:, :, ys][:, :, :, xs].sum(axis=(0, 2, 3))[:, None]
    np.testing.assert_allclose(m.weight.numpy(), before - 0.1 * grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("call, message", [
    (lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=2),
     r"conv_transpose2d: output_padding \[2, 2\] must be smaller than either stride \[2, 2\] or dilation"),
    (lambda x, w: F.conv_transpose2d(x, w[:, :, :, :, None]), r"conv_transpose2d: expected a 4-D weight"),
    (lambda x, w: F.conv_transpose2d(x[:, :3], w), r"conv_transpose2d: input \[2, 3, 5, 5\] has 3 channels, but "
                                                    r"weight \[4, 6, 3, 3\] expects 4"),
    (lambda x, w: F.conv_transpose2d(x, w, groups=3), r"conv_transpose2d: groups=3 must be positive and divide"),
    (lambda x, w: F.conv_transpose2d(x, w, padding=4), r"conv_transpose2d: .* gives an empty output"),
    (lambda x, w: F.conv_transpose2d(x, w, bias=lazyscope.zeros(5)), r"conv_transpose2d: bias of shape \[5\]"),
])
def test_conv_transpose2d_bad_arguments_name_the_op_and_line(call, message):
    x, w = lazyscope.zeros(2, 4, 5, 5), lazyscope.zeros(4, 6, 3, 3)
    with pytest.raises((lazyscope.ShapeError, ValueError), match=message) as err:
        call(x, w)
    assert "test_conv_transpose.py" in str(err.value)


def test_conv_transpose2d_of_integers_is_refused():
    with pytest.raises(lazyscope.EngineError, match="conv_transpose2d: expected a floating point input, got int64"):
        F.conv_transpose2d(lazyscope.zeros(1, 2, 3, 3, dtype=lazyscope.int64), lazyscope.zeros(2, 2, 1, 1))
