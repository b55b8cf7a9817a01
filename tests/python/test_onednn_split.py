"""float32 convolutions and max pools left to oneDNN run split over the
engine's pool: the images (the pools' planes) divided among the threads,
each part one single-threaded primitive over its share (kernels_conv.cpp,
kernels_pool.cpp), the weight gradient summed over the parts. Checked
against NumPy in float64 on 1, 2 and 3 threads (each a process of its own:
the pool's size is read once), on batches that do not divide among them,
batch 1, groups, strides, padding, dilation and odd sizes: the forward,
the input gradient and the weight gradient of sum(conv * g)."""
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(__file__)

# (x shape, w shape, stride, padding, dilation, groups): every one on oneDNN
# (16 channels and more on both sides, or strides, dilation, groups; at
# least 4 input channels per group, which its backward passes need here).
CONV_CASES = [
    ((5, 16, 9, 7), (32, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),   # 5 images among 2 and 3 threads
    ((1, 16, 8, 8), (16, 16, 3, 3), (1, 1), (0, 0), (1, 1), 1),   # batch 1: one part
    ((3, 8, 11, 10), (8, 4, 3, 3), (2, 2), (1, 1), (1, 1), 2),    # groups, stride 2, odd height
    ((4, 6, 13, 9), (5, 6, 3, 2), (2, 1), (1, 2), (2, 1), 1),     # stride, padding, dilation per side
    ((7, 20, 5, 5), (24, 20, 1, 1), (1, 1), (0, 0), (1, 1), 1),   # 1x1, 7 images
    ((2, 16, 7, 9), (16, 4, 5, 3), (1, 2), (2, 0), (1, 2), 4),    # 4 groups, dilation 2 on the width
]

# (x shape, kernel, stride, padding): windows other than the plain 2x2 one,
# which take oneDNN when the input holds no NaN or -inf.
POOL_CASES = [
    ((5, 3, 11, 9), (3, 3), (2, 2), (1, 1)),
    ((1, 16, 7, 7), (2, 2), (1, 1), (0, 0)),
    ((3, 1, 10, 13), (3, 2), (2, 3), (1, 0)),
]


def conv_references(x, w, g, stride, padding, dilation, groups):
    """float64 NumPy: the convolution, and the input and weight gradients of
    sum(conv * g), tap by tap."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.zeros((n, o, oh, ow))
    dxp = np.zeros_like(xp)
    dwt = np.zeros_like(w)
    for gi in range(groups):
        cs, os_ = slice(gi * cg, (gi + 1) * cg), slice(gi * og, (gi + 1) * og)
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dh, i * dh + sh * (oh - 1) + 1, sh)
                cols = slice(j * dw, j * dw + sw * (ow - 1) + 1, sw)
                patch = xp[:, cs, rows, cols]
                out[:, os_] += np.einsum("nchw,oc->nohw", patch, w[os_, :, i, j])
                dwt[os_, :, i, j] += np.einsum("nohw,nchw->oc", g[:, os_], patch)
                dxp[:, cs, rows, cols] += np.einsum("nohw,oc->nchw", g[:, os_], w[os_, :, i, j])
    return out, dxp[:, :, ph:ph + h, pw:pw + wd], dwt


SCRIPT = r"""
import sys
import numpy as np
import lazyscope
sys.path.insert(0, sys.argv[1])
from test_onednn_split import CONV_CASES, POOL_CASES, conv_references
from test_conv_pool_norm import max_pool2d_ref
rng = np.random.default_rng(17)
for xs, ws, stride, padding, dilation, groups in CONV_CASES:
    case = str((xs, ws, stride, padding, dilation, groups))
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    X = lazyscope.tensor(x.astype(np.float32), device="lazy:0", requires_grad=True)
    W = lazyscope.tensor(w.astype(np.float32), device="lazy:0", requires_grad=True)
    y = lazyscope.conv2d(X, W, stride=stride, padding=padding, dilation=dilation, groups=groups)
    g = rng.standard_normal(tuple(y.shape))
    (y * lazyscope.tensor(g.astype(np.float32), device="lazy:0")).sum().backward()
    want_y, want_dx, want_dw = conv_references(x, w, g, stride, padding, dilation, groups)
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-4, atol=1e-4, err_msg=case)
    np.testing.assert_allclose(X.grad.numpy(), want_dx, rtol=1e-4, atol=1e-4, err_msg=case)
    np.testing.assert_allclose(W.grad.numpy(), want_dw, rtol=1e-4, atol=1e-3, err_msg=case)
for xs, kernel, stride, padding in POOL_CASES:
    x = rng.standard_normal(xs).astype(np.float32)
    got = lazyscope.max_pool2d(lazyscope.tensor(x, device="lazy:0"), kernel, stride, padding).numpy()
    np.testing.assert_array_equal(got, max_pool2d_ref(x, kernel, stride, padding), err_msg=str((xs, kernel)))
print("ok", len(CONV_CASES), len(POOL_CASES))
"""


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_onednn_passes_split_over_the_pool_match_numpy(threads, build_dir):
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS=threads, PYTHONPATH=str(build_dir / "python"))
    out = subprocess.run([sys.executable, "-c", SCRIPT, HERE], env=env, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0 and f"ok {len(CONV_CASES)} {len(POOL_CASES)}" in out.stdout, out.stderr


def test_the_reference_is_the_convolutions_adjoint():
    # The oracle checked on its own: the gradients are the adjoints of the
    # convolution, <conv(x, w), g> = <x, dx> = <w, dw> (it is bilinear), and
    # its forward agrees with test_conv_pool_norm's conv2d_ref.
    from test_conv_pool_norm import conv2d_ref
    rng = np.random.default_rng(3)
    for xs, ws, stride, padding, dilation, groups in CONV_CASES:
        x, w = rng.standard_normal(xs), rng.standard_normal(ws)
        want = conv2d_ref(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
        g = rng.standard_normal(want.shape)
        y, dx, dw = conv_references(x, w, g, stride, padding, dilation, groups)
        np.testing.assert_allclose(y, want, rtol=1e-12, atol=1e-12)
        assert np.isclose(np.sum(y * g), np.sum(x * dx), rtol=1e-10)
        assert np.isclose(np.sum(y * g), np.sum(w * dw), rtol=1e-10)
