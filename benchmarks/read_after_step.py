"""The cost of reading a value right after a training step's sync.

Runs the MLP step of vs_pytorch.py (784-512-256-10, batch 128, SGD with
momentum, a barrier per step) on `lazy:0` and times, after each sync, a
first read (`item()` of another one-element lazy tensor) and then the
loss's `item()`; prints the medians over the steps after a warm-up. The
first read after a step runs code the step's products evicted from the
caches; the second shows the same path warm. Compare builds by running it
with each one's LAZYSCOPE_BUILD_DIR, alternated (A B A B ...).

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/read_after_step.py [--steps 150] [--sleep-ms 0]

--sleep-ms sleeps that long between the sync and the first read (an idle
gap, as a data loader's wait would be).
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

import lazyscope  # noqa: E402
from lazyscope import nn  # noqa: E402
from lazyscope.core import lazy_model as lm  # noqa: E402

from bench_models import make_mlp  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--sleep-ms", type=float, default=0.0)
    args = parser.parse_args()
    F = nn.functional
    dev = lm.lazy_device()
    net = make_mlp(nn, F).to(dev)
    opt = lazyscope.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = lazyscope.tensor(rng.standard_normal((128, 784)).astype(np.float32), device=dev)
    y = lazyscope.tensor(rng.integers(0, 10, 128), device=dev)
    other = lazyscope.tensor(np.ones(1, np.float32), device=dev)
    first, loss_read = [], []
    for i in range(args.warmup + args.steps):
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        lm.mark_step()
        if args.sleep_ms:
            time.sleep(args.sleep_ms / 1e3)
        t0 = time.perf_counter()
        other.item()
        t1 = time.perf_counter()
        loss.item()
        t2 = time.perf_counter()
        if i >= args.warmup:
            first.append(t1 - t0)
            loss_read.append(t2 - t1)
    print(f"first read after the sync {statistics.median(first) * 1e6:7.1f} us, "
          f"the loss's read after it {statistics.median(loss_read) * 1e6:7.1f} us (medians of {args.steps} steps)")


if __name__ == "__main__":
    main()
