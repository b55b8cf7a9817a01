"""MLP 784-512-256-10 (batch 128, SGD momentum, cross-entropy) training step
on lazy:0 vs its matrix-product floor, measured side by side in one run.

The floor is the time of the step's 8 GEMMs alone (3 forward, 3 weight
gradients, 2 input gradients), run eagerly on the cpu device on contiguous
operands of the same shapes: what the step would cost if everything but the
matrix products were free. Rounds alternate (step, floor, step, floor, ...)
and the medians are reported.

    LAZYSCOPE_BUILD_DIR=build/release /usr/bin/python3 benchmarks/mlp_step_bench.py [--rounds 15]
"""
import argparse
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(pathlib.Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release")) / "python"))

import numpy as np  # noqa: E402

import lazyscope  # noqa: E402
from lazyscope import nn, optim  # noqa: E402
from lazyscope.core import lazy_model as lm  # noqa: E402

B, SIZES = 128, (784, 512, 256, 10)


def make_step(rng):
    dev = "lazy:0"
    params = []
    for i, o in zip(SIZES[:-1], SIZES[1:]):
        params.append(nn.Parameter(lazyscope.tensor((rng.standard_normal((i, o)) * 0.05).astype(np.float32), device=dev)))
        params.append(nn.Parameter(lazyscope.tensor(np.zeros(o, dtype=np.float32), device=dev)))
    opt = optim.SGD(params, lr=0.01, momentum=0.9)
    x = lazyscope.tensor(rng.standard_normal((B, SIZES[0])).astype(np.float32), device=dev)
    y = lazyscope.tensor(rng.integers(0, SIZES[-1], B), device=dev)

    def step():
        opt.zero_grad()
        h = x
        for k in range(0, len(params), 2):
            h = h @ params[k] + params[k + 1]
            if k + 2 < len(params):
                h = h.relu()
        loss = nn.functional.cross_entropy(h, y)
        loss.backward()
        opt.step()
        lm.mark_step()
    return step


def gemm_shapes():
    """(m, k, n) of the step's matrix products."""
    shapes = []
    for i, o in zip(SIZES[:-1], SIZES[1:]):
        shapes.append((B, i, o))        # forward
        shapes.append((i, B, o))        # weight gradient: input^T @ grad
    for i, o in list(zip(SIZES[:-1], SIZES[1:]))[1:]:
        shapes.append((B, o, i))        # input gradient: grad @ weight^T
    return shapes


def make_floor(rng):
    pairs = [(lazyscope.tensor(rng.standard_normal((m, k)).astype(np.float32)),
              lazyscope.tensor(rng.standard_normal((k, n)).astype(np.float32))) for m, k, n in gemm_shapes()]

    def floor():
        for a, b in pairs:
            a @ b
    return floor


def timed(fn, repeat):
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    step, floor = make_step(rng), make_floor(rng)
    for _ in range(5):  # compile, fill the arena, warm the caches
        step()
        floor()
    steps, floors = [], []
    for _ in range(args.rounds):
        steps.append(timed(step, args.repeat))
        floors.append(timed(floor, args.repeat))
    flops = sum(2 * m * k * n for m, k, n in gemm_shapes())
    s, f = statistics.median(steps), statistics.median(floors)
    print(f"threads: LAZYSCOPE_NUM_THREADS={os.environ.get('LAZYSCOPE_NUM_THREADS', '(cores)')}")
    print(f"MLP step on lazy:0     {s * 1e3:8.3f} ms (median of {args.rounds} rounds of {args.repeat})")
    print(f"GEMM floor (8 GEMMs)   {f * 1e3:8.3f} ms  = {flops / 1e9:.3f} GFLOP at {flops / f / 1e9:.1f} GFLOP/s")
    print(f"step / floor           {s / f:8.2f}x  (target <= 1.3x)")


if __name__ == "__main__":
    main()
