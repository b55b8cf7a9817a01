"""Reductions (and row sorts) on `lazy:0` against NumPy, side by side in one run.

A sum or mean of every element (a loss, a gradient norm as
clip_grad_norm_ computes it: (g.abs() ** 2).sum() per parameter) has a
single output: kernels_reduce.cpp sums fixed 16,384-element chunks in
8 double lanes on the pool, then the chunks' sums in order. Before,
every element went down one chain of dependent adds on one thread.
max/min and argmax/argmin run on vector lanes (the argmax: the extreme,
then the first index holding it), and every reduction walks reduced dims
around the kept ones in place instead of through per-call offset tables.

Each case is one graph per step: the elementwise producer (fused) and the
reduction, read back to the host (`.numpy()`), against NumPy computing the
same (which writes its temporaries). Rounds alternate lazy, NumPy, lazy,
... and the ratio is of the medians (lazy / NumPy: below 1 is faster).

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/reduce_vs_numpy.py
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release")) / "python"))
import lazyscope  # noqa: E402
from lazyscope.core import lazy_model as lm  # noqa: E402


def softmax0(a):
    e = np.exp(a - a.max(0, keepdims=True))
    return e / e.sum(0, keepdims=True)


def logsumexp1(a):
    m = a.max(1, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(1, keepdims=True)))[:, 0]


def cases(n):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    x, y = (lazyscope.tensor(v, device="lazy:0") for v in (a, b))
    ar = a[: n // 1000 * 1000].reshape(-1, 1000)
    xr = lazyscope.tensor(ar, device="lazy:0")
    lm.mark_step()
    return {
        "sum(a + b)": (lambda: (x + y).sum().numpy(), lambda: (a + b).sum()),
        "mean(a)": (lambda: x.mean().numpy(), lambda: a.mean()),
        "sum(|a| ** 2)": (lambda: (x.abs() ** 2.0).sum().numpy(), lambda: (np.abs(a) ** 2.0).sum()),
        "amax(a)": (lambda: x.amax().numpy(), lambda: a.max()),
        "argmax(a)": (lambda: x.argmax().numpy(), lambda: a.argmax()),
        "var(a)": (lambda: x.var().numpy(), lambda: a.var(ddof=1)),
        # [rows, 1000]: each row's class (accuracy), and the max down the columns.
        "argmax(r, 1)": (lambda: xr.argmax(1).numpy(), lambda: ar.argmax(1)),
        "amax(r, 0)": (lambda: xr.amax(0).numpy(), lambda: ar.max(0)),
        # A softmax down the columns (a dim that is not the last), summed so
        # that only a scalar comes back.
        "softmax(r, 0)": (lambda: xr.softmax(0).sum().numpy(), lambda: softmax0(ar).sum()),
        "logsumexp(r, 1)": (lambda: xr.logsumexp(1).numpy(), lambda: logsumexp1(ar)),
        # Sorting each row (and top 5, which sorts): argsort on the pool.
        "sort(r, 1)": (lambda: xr.sort(1)[0].sum().numpy(), lambda: np.sort(ar, 1).sum()),
        "topk(r, 5)": (lambda: xr.topk(5, 1)[0].sum().numpy(), lambda: np.sort(ar, 1)[:, -5:].sum()),
    }


def per_call(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="65536,1048576,16777216")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"threads {os.environ.get('LAZYSCOPE_NUM_THREADS', 'default')}, load {os.getloadavg()[0]:.1f}")
    print(f"{'case':16s} {'elements':>10s} {'lazy':>10s} {'NumPy':>10s} {'lazy/NumPy':>10s}")
    for n in (int(s) for s in args.sizes.split(",")):
        calls = max(3, int(2e7 // n))
        for name, (lazy, ref) in cases(n).items():
            for fn in (lazy, ref):
                per_call(fn, 2)  # warm: compile, caches
            times = {"lazy": [], "numpy": []}
            for _ in range(args.rounds):
                times["lazy"].append(per_call(lazy, calls))
                times["numpy"].append(per_call(ref, calls))
            lz, np_ = statistics.median(times["lazy"]), statistics.median(times["numpy"])
            print(f"{name:16s} {n:10d} {lz * 1e6:8.0f}us {np_ * 1e6:8.0f}us {lz / np_:10.2f}")


if __name__ == "__main__":
    main()
