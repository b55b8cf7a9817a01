"""The direct float32 convolution kernels (kernels_conv.cpp, conv_direct.inc):
the forward of every stride-1, one-group convolution (any padding), and the
weight and input gradients where there is no padding and output rows are a
whole number of 8-float vectors. Checked against NumPy in float64 on shapes that
reach each part of them — rows ending mid-vector, output channels not a
multiple of the register block (one, two and three blocks), an odd number of
output or input channels (the gradients' last pair is a single), kernels 1
to 7 wide — on one and two threads and on every instruction set (AVX-512VL
where the CPU has it, for the weight gradient's 4-channel groups; AVX2 +
FMA under LAZYSCOPE_CPU_ISA=avx2; x86-64's SSE2 under
LAZYSCOPE_CPU_ISA=x86-64), each a process of its own since the settings
are read once."""
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(__file__)

# (x shape, w shape, padding)
CASES = [
    ((3, 1, 28, 28), (10, 1, 5, 5), (0, 0)),    # the MNIST CNN's first layer: 24-wide rows
    ((2, 10, 12, 12), (20, 10, 5, 5), (0, 0)),  # its second: 8-wide rows, two blocks of 10
    ((2, 3, 11, 29), (13, 3, 3, 2), (2, 1)),    # padded; rows of 30 (a 6-lane tail); blocks of 7
    ((2, 4, 9, 22), (5, 4, 2, 7), (0, 0)),      # 7 wide, 16-wide rows; 5 outputs (a single pair)
    ((1, 2, 6, 9), (25, 2, 3, 2), (0, 0)),      # three blocks of 9; 25 outputs
    ((2, 3, 5, 5), (4, 3, 1, 1), (1, 1)),       # 1x1, padded
    ((2, 5, 10, 11), (6, 5, 3, 4), (0, 0)),     # 5 input channels: two pairs and a single
    ((1, 3, 6, 12), (4, 3, 5, 5), (0, 0)),      # 2 output rows for a 5-row kernel
    ((3, 3, 9, 12), (7, 3, 3, 5), (0, 0)),      # 7 outputs: weight-gradient groups of 4 and 3 (AVX-512)
]


def references(x, w, g, padding):
    """float64 NumPy: the convolution and the weight and input gradients of
    sum(conv * g)."""
    ph, pw = padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    kh, kw = w.shape[2:]
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))  # n c y x i j
    out = np.einsum("ncyxij,ocij->noyx", windows, w)
    dw = np.einsum("noyx,ncyxij->ocij", g, windows)
    # Each output's gradient back to the pixels of its window.
    dxp = np.zeros_like(xp)
    oh, ow = g.shape[2:]
    for i in range(kh):
        for j in range(kw):
            dxp[:, :, i:i + oh, j:j + ow] += np.einsum("noyx,oc->ncyx", g, w[:, :, i, j])
    return out, dw, dxp[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]]


SCRIPT = r"""
import sys
import numpy as np
import lazyscope
sys.path.insert(0, sys.argv[1])
from test_direct_conv import CASES, references
rng = np.random.default_rng(5)
for xs, ws, padding in CASES:
    x = rng.standard_normal(xs)
    w = rng.standard_normal(ws)
    X = lazyscope.tensor(x.astype(np.float32), device="lazy:0", requires_grad=True)
    W = lazyscope.tensor(w.astype(np.float32), device="lazy:0", requires_grad=True)
    y = lazyscope.conv2d(X, W, padding=padding)
    g = rng.standard_normal(tuple(y.shape))
    (y * lazyscope.tensor(g.astype(np.float32), device="lazy:0")).sum().backward()
    want_y, want_dw, want_dx = references(x, w, g, padding)
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-4, atol=1e-4, err_msg=str((xs, ws, padding)))
    np.testing.assert_allclose(W.grad.numpy(), want_dw, rtol=1e-4, atol=1e-3, err_msg=str((xs, ws, padding)))
    np.testing.assert_allclose(X.grad.numpy(), want_dx, rtol=1e-4, atol=1e-4, err_msg=str((xs, ws, padding)))
print("ok", len(CASES))
"""


@pytest.mark.parametrize("threads,isa", [("1", ""), ("2", ""), ("2", "avx2"), ("2", "x86-64"), ("1", "x86-64")])
def test_direct_convolutions_match_numpy(threads, isa, build_dir):
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS=threads, LAZYSCOPE_CPU_ISA=isa,
               PYTHONPATH=str(build_dir / "python"))
    out = subprocess.run([sys.executable, "-c", SCRIPT, HERE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and f"ok {len(CASES)}" in out.stdout, out.stderr


def test_the_direct_forward_propagates_nan_and_inf_where_numpy_does():
    # A NaN or inf pixel reaches exactly the outputs whose windows hold it:
    # the vector tails read past a row's end but never store those lanes.
    import lazyscope
    x = np.ones((1, 1, 6, 13), np.float32)
    x[0, 0, 2, 12] = np.nan   # the last column: only the last outputs' windows
    x[0, 0, 5, 0] = np.inf
    w = np.ones((3, 1, 3, 3), np.float32)
    got = lazyscope.conv2d(lazyscope.tensor(x, device="lazy:0"), lazyscope.tensor(w, device="lazy:0")).numpy()
    want, _, _ = references(x.astype(np.float64), w.astype(np.float64), np.zeros((1, 3, 4, 11)), (0, 0))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-6)
