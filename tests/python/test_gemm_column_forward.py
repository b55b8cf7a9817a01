"""auto's column split of a float product of few rows times a wide
transposed B (x @ W^T of a linear layer's forward: m < n, k >= 128,
n >= 128 per thread; A transposed or not), and the shapes on each side of those thresholds,
against NumPy in float64: with and without an epilogue (bias + relu, run
after the column parts over flat ranges), NaN and inf in either operand, on one and
two threads, under auto and under `rows` (the split it replaces)."""
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import lazyscope
from lazyscope import _C
from runtime_util import run_graph

DEV = "lazy:0"
rng = np.random.default_rng(7)

# (m, k, n) at 2 threads: the MLP's forward products (columns), n at 256
# and 255 (128 columns per thread, or fewer: rows), k at 128 and 127, m
# one under n (columns) and equal to it (rows), odd sizes that split into
# unequal column parts, one row.
SHAPES = [(128, 784, 512), (128, 512, 256), (128, 128, 256), (128, 128, 255), (128, 127, 256), (255, 130, 256),
          (256, 130, 256), (33, 129, 301), (1, 200, 257), (100, 300, 1000)]


def check(got, want, k, what):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * k, err_msg=what)


for mode in sys.argv[2].split(","):
    _C.set_gemm_split(mode)
    for m, k, n in SHAPES:
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((n, k)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        X, W, B = (v.astype(np.float64) for v in (x, w, bias))
        what = f"{mode} {m}x{k}x{n}"

        got, _ = run_graph(lambda: lazyscope.tensor(x, device=DEV) @ lazyscope.tensor(w, device=DEV).t())
        check(got, X @ W.T, k, what + " x @ w.t()")
        # Both operands transposed (x stored [k, m]): the same split.
        xt = x.T.copy()
        got, _ = run_graph(lambda: lazyscope.tensor(xt, device=DEV).t() @ lazyscope.tensor(w, device=DEV).t())
        check(got, X @ W.T, k, what + " xt.t() @ w.t()")
        got, _ = run_graph(lambda: ((lazyscope.tensor(xt, device=DEV).t() @ lazyscope.tensor(w, device=DEV).t())
                                    + lazyscope.tensor(bias, device=DEV)).tanh())
        check(got, np.tanh(X @ W.T + B), k, what + " xt.t() @ w.t() + b, tanh (epilogue)")

        def linear():
            Xl, Wl, Bl = (lazyscope.tensor(v, device=DEV) for v in (x, w, bias))
            return (Xl @ Wl.t() + Bl).relu() * 0.5 - 1.0

        got, program = run_graph(linear)
        check(got, np.maximum(X @ W.T + B, 0) * 0.5 - 1.0, k, what + " x @ w.t() + b, relu (epilogue)")
        if program is not None and m * n > 100:
            assert "the epilogue of the matmul above" in program, program

        # NaN in a row of x and inf in a row of w reach exactly the outputs
        # they feed, through the epilogue too.
        xs, ws = x.copy(), w.copy()
        xs[m // 2, k // 3] = np.nan
        ws[n - 1, 0] = np.inf
        Xs, Ws = xs.astype(np.float64), ws.astype(np.float64)
        with np.errstate(invalid="ignore"):
            want = Xs @ Ws.T + B
        got, _ = run_graph(lambda: lazyscope.tensor(xs, device=DEV) @ lazyscope.tensor(ws, device=DEV).t()
                           + lazyscope.tensor(bias, device=DEV))
        assert np.array_equal(np.isnan(got), np.isnan(want)), what + " NaN positions"
        assert np.array_equal(np.isinf(got), np.isinf(want)), what + " inf positions"
        finite = np.isfinite(want)
        check(got[finite], want[finite], k, what + " finite part beside NaN/inf")
print("ok")
"""


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("modes", ["auto", "rows", "auto avx2"])
def test_forward_products_split_by_columns_match_numpy(modes, threads, build_dir):
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS=threads, PYTHONPATH=str(build_dir / "python"))
    if modes.endswith(" avx2"):  # oneDNN below AVX-512: OpenBLAS in every part
        modes = modes[:-5]
        env.update(LAZYSCOPE_CPU_ISA="avx2", DNNL_MAX_CPU_ISA="AVX2")
    env.pop("LAZYSCOPE_GEMM_SPLIT", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT, tests_dir, modes], env=env, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0 and "ok" in out.stdout, out.stdout + out.stderr
