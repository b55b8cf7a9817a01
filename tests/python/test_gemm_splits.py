"""Every way the CPU backend shares a matrix product among threads
(`_C.set_gemm_split`: auto, rows, columns, OpenBLAS's threads, legacy,
oneDNN's sgemm on OpenMP threads or in the pool's parts), on
one and two threads, against NumPy: plain products, transposed operands,
epilogues on row and column parts, and a batch of rows times one matrix
(a linear layer on a 3-d input) run as one stacked product."""
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import ctypes, ctypes.util, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import lazyscope
from lazyscope import _C
from runtime_util import run_graph

DEV = "lazy:0"
rng = np.random.default_rng(0)


def check(got, want, what):
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4, err_msg=what)


# (m, k, n): rows >= columns (a row split), fewer rows than columns (auto
# splits by columns, packing the smaller operand again), very few rows, a
# product too small to split.
SHAPES = [(300, 64, 96), (128, 200, 512), (8, 64, 1000), (3, 5, 7)]
for mode in ["auto", "rows", "columns", "blas", "legacy", "dnnl", "dnnl-rows", "openblas"]:
    _C.set_gemm_split(mode)
    for m, k, n in SHAPES:
        x = rng.standard_normal((m, k)).astype(np.float32)
        w = rng.standard_normal((n, k)).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        what = f"{mode} {m}x{k}x{n}"

        def linear():
            X, W, B = (lazyscope.tensor(v, device=DEV) for v in (x, w, b))
            return ((X @ W.t() + B).relu() * 2.0).sum(dim=1) * 1.0

        got, program = run_graph(linear)
        check(got, (np.maximum(x @ w.T + b, 0) * 2).sum(axis=1), what + " x @ w.t() + b, relu (epilogue)")
        if mode == "auto" and m * n > 100:  # compiled once, cached for the other modes
            assert "the epilogue of the matmul above" in program, program

        def weight_grad():
            X, W = lazyscope.tensor(x, device=DEV), lazyscope.tensor(w, device=DEV)
            return (X.t() @ (X @ W.t())).tanh()

        got, _ = run_graph(weight_grad)
        check(got, np.tanh(x.T @ (x @ w.T)), what + " x.t() @ y")

    # A linear layer on [B, T, C]: one product of B*T rows, with its epilogue.
    x3 = rng.standard_normal((6, 40, 48)).astype(np.float32)
    w3 = rng.standard_normal((72, 48)).astype(np.float32)
    b3 = rng.standard_normal(72).astype(np.float32)

    def linear3():
        X, W, B = (lazyscope.tensor(v, device=DEV) for v in (x3, w3, b3))
        return (X @ W.t() + B).relu() - 1.0

    got, _ = run_graph(linear3)
    check(got, np.maximum(x3 @ w3.T + b3, 0) - 1, mode + " [6,40,48] @ w.t() + b, relu")
    w4 = rng.standard_normal((48, 30)).astype(np.float32)
    got, _ = run_graph(lambda: lazyscope.tensor(x3, device=DEV) @ lazyscope.tensor(w4, device=DEV))
    check(got, x3 @ w4, mode + " [6,40,48] @ [48,30]")
    # Broadcast the other way (one matrix times a batch) and a batch of
    # transposed left operands: not stacked, still right.
    got, _ = run_graph(lambda: lazyscope.tensor(w4.T.copy(), device=DEV) @ lazyscope.tensor(x3.transpose(0, 2, 1).copy(), device=DEV))
    check(got, w4.T @ x3.transpose(0, 2, 1), mode + " [30,48] @ [6,48,40]")
    got, _ = run_graph(lambda: lazyscope.tensor(x3, device=DEV).transpose(1, 2) @ lazyscope.tensor(x3, device=DEV))
    check(got, x3.transpose(0, 2, 1) @ x3, mode + " [6,48,40] @ [6,40,48]")

# OpenBLAS's thread count is process-wide: a library beside the engine may
# raise it; a product on the pool's threads sets it back to one (each part
# would otherwise start OpenBLAS's threads too).
blas = None
for name in ("openblas", "blas"):
    path = ctypes.util.find_library(name)
    if path and hasattr(ctypes.CDLL(path), "openblas_set_num_threads"):
        blas = ctypes.CDLL(path)
        break
if blas is not None:
    _C.set_gemm_split("auto")
    blas.openblas_set_num_threads(2)
    a = rng.standard_normal((256, 256)).astype(np.float32)
    got, _ = run_graph(lambda: lazyscope.tensor(a, device=DEV) @ lazyscope.tensor(a, device=DEV))
    check(got, a @ a, "auto after OpenBLAS was raised")
    assert blas.openblas_get_num_threads() == 1, blas.openblas_get_num_threads()

try:
    _C.set_gemm_split("diagonal")
except Exception as e:
    assert "diagonal" in str(e) and "auto, rows, columns, blas, legacy, dnnl, dnnl-rows or openblas" in str(e), e
else:
    raise AssertionError("an unknown split was accepted")
print("ok")
"""


@pytest.mark.parametrize("threads", ["1", "2"])
def test_every_gemm_split_matches_numpy(threads, build_dir):
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS=threads, PYTHONPATH=str(build_dir / "python"))
    env.pop("LAZYSCOPE_GEMM_SPLIT", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT, tests_dir], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, out.stdout + out.stderr


# The shapes of the benchmark models' products and odd ones (1, 3, 17 rows
# or columns, K=1), each with every transpose of its operands, a batch, and
# an epilogue, per split; against NumPy in float64 with a float32 tolerance.
# Then the same products after another library raised OpenMP's and
# OpenBLAS's thread counts on the calling thread (oneDNN reads OpenMP's per
# call; a pool part must still run single-threaded and right).
SHAPES_SCRIPT = r"""
import ctypes, ctypes.util, os, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import lazyscope
from lazyscope import _C
from runtime_util import run_graph

DEV = "lazy:0"
rng = np.random.default_rng(1)
modes = sys.argv[2].split(",")


def check(got, want, k, what):
    # float32 accumulation over k terms of unit-variance products: error
    # grows like sqrt(k) times the result's scale (also ~sqrt(k)).
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * k, err_msg=what)


def f64(*vs):
    return [v.astype(np.float64) for v in vs]


SHAPES = [(128, 784, 512), (128, 512, 256), (128, 256, 10), (10, 128, 256), (512, 128, 784), (1024, 256, 768),
          (1024, 1024, 256), (1, 64, 33), (3, 17, 5), (17, 3, 1), (33, 1, 17), (1, 1, 1), (17, 200, 3), (3, 300, 130)]


def products(mode):
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        A, B, AT, BT, BIAS = f64(a, b, a.T.copy(), b.T.copy(), bias)
        what = f"{mode} {m}x{k}x{n}"
        for ta in (False, True):
            for tb in (False, True):
                x = a.T.copy() if ta else a  # stored [k, m] when transposed
                y = b.T.copy() if tb else b

                def product():
                    X, Y = lazyscope.tensor(x, device=DEV), lazyscope.tensor(y, device=DEV)
                    return (X.t() if ta else X) @ (Y.t() if tb else Y)

                got, _ = run_graph(product)
                check(got, A @ B, k, f"{what} ta={ta} tb={tb}")

        def with_epilogue():
            X, W, Bi = lazyscope.tensor(a, device=DEV), lazyscope.tensor(b.T.copy(), device=DEV), lazyscope.tensor(bias, device=DEV)
            return (X @ W.t() + Bi).relu() * 0.5 - 1.0

        got, _ = run_graph(with_epilogue)
        check(got, np.maximum(A @ B + BIAS, 0) * 0.5 - 1.0, k, what + " x @ w.t() + b, relu (epilogue)")
    # Batched: a [B, T, C] input times one matrix (stacked), broadcast the
    # other way, and a batch of small products (attention heads).
    for bsz, t, c, n in [(16, 64, 256, 768), (3, 17, 5, 1), (64, 64, 64, 64)]:
        x = rng.standard_normal((bsz, t, c)).astype(np.float32)
        w = rng.standard_normal((n, c)).astype(np.float32)
        X64, W64 = f64(x, w)
        got, _ = run_graph(lambda: (lazyscope.tensor(x, device=DEV) @ lazyscope.tensor(w, device=DEV).t()).tanh())
        check(got, np.tanh(X64 @ W64.T), c, f"{mode} [{bsz},{t},{c}] @ w.t(), tanh")
        y = rng.standard_normal((bsz, n, t)).astype(np.float32)
        Y64 = y.astype(np.float64)
        got, _ = run_graph(lambda: lazyscope.tensor(w, device=DEV) @ lazyscope.tensor(x, device=DEV).transpose(1, 2))
        check(got, W64 @ X64.transpose(0, 2, 1), c, f"{mode} w @ [{bsz},{c},{t}]")
        got, _ = run_graph(lambda: lazyscope.tensor(y, device=DEV) @ lazyscope.tensor(x, device=DEV))
        check(got, Y64 @ X64, t, f"{mode} [{bsz},{n},{t}] @ [{bsz},{t},{c}]")


gomp = ctypes.CDLL(ctypes.util.find_library("gomp"))
blas = None
for name in ("openblas", "blas"):
    path = ctypes.util.find_library(name)
    if path and hasattr(ctypes.CDLL(path), "openblas_set_num_threads"):
        blas = ctypes.CDLL(path)
        break
def threads():
    return len(os.listdir("/proc/self/task"))


for mode in modes:
    _C.set_gemm_split(mode)
    products(mode)
    # Another library raised OpenMP's and OpenBLAS's thread counts.
    gomp.omp_set_num_threads(4)
    if blas is not None:
        blas.openblas_set_num_threads(3)
    before = threads()
    products(mode + " (OpenMP 4, OpenBLAS 3 threads)")
    assert gomp.omp_get_max_threads() == 4, gomp.omp_get_max_threads()  # the caller's setting is left as it was
    if mode not in ("dnnl", "blas"):
        # Single-threaded library calls in the pool's parts: no thread
        # started an OpenMP team (or OpenBLAS's threads) of its own.
        assert threads() == before, (mode, before, threads())
    gomp.omp_set_num_threads(2)
print("ok")
"""


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("modes", ["auto", "auto avx2", "dnnl", "dnnl-rows", "openblas,blas"])
def test_model_and_odd_shapes_match_numpy(modes, threads, build_dir):
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS=threads, PYTHONPATH=str(build_dir / "python"))
    if modes.endswith(" avx2"):  # the engine's kernels and oneDNN's limited to AVX2: auto's other choice
        modes = modes[:-5]
        env.update(LAZYSCOPE_CPU_ISA="avx2", DNNL_MAX_CPU_ISA="AVX2")
    env.pop("LAZYSCOPE_GEMM_SPLIT", None)
    out = subprocess.run([sys.executable, "-c", SHAPES_SCRIPT, tests_dir, modes], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0 and "ok" in out.stdout, out.stdout + out.stderr


def test_an_unknown_gemm_split_in_the_environment_is_named(build_dir):
    env = dict(os.environ, LAZYSCOPE_GEMM_SPLIT="diagonal", PYTHONPATH=str(build_dir / "python"))
    script = ("import numpy as np, lazyscope\n"
              "x = lazyscope.tensor(np.ones((64, 64), np.float32), device='lazy:0')\n"
              "try:\n    (x @ x).numpy()\nexcept Exception as e:\n    print('error:', e)\n")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert "LAZYSCOPE_GEMM_SPLIT=diagonal" in out.stdout + out.stderr, out.stdout + out.stderr
