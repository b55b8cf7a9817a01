"""conv3d (+ max_pool3d) forward and backward on LazyScope's eager cpu
device against PyTorch's CPU ops, float32, alternated in one process
(A B A B ...) on the same thread count, and against the workaround the
refusal of Conv3d used to suggest (conv2d over each depth tap, summed);
then max_pool3d alone against PyTorch's.

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/conv3d_vs_pytorch.py --rounds 7

Prints per shape the median time of each side (ms per forward + backward)
and the ratios PyTorch / LazyScope and slices / conv3d (above 1: LazyScope's
conv3d faster).
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release")) / "python"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import lazyscope  # noqa: E402

# (name, N, C_in, C_out, D, H, W, kernel, padding, pool)
SHAPES = [
    ("video 8->16 8x28x28 k3", 2, 8, 16, 8, 28, 28, 3, 1, 2),
    ("volume 16->32 16x32x32 k3", 1, 16, 32, 16, 32, 32, 3, 1, 2),
]


def ours(x, w, k, p, pool):
    tx = lazyscope.tensor(x, requires_grad=True)
    tw = lazyscope.tensor(w, requires_grad=True)
    lazyscope.max_pool3d(lazyscope.conv3d(tx, tw, padding=p), pool).sum().backward()
    return tw.grad.numpy()


def slices(x, w, k, p, pool):
    """conv3d as a sum over depth taps of conv2d over the depth slices (batch * depth images)."""
    tx = lazyscope.tensor(x, requires_grad=True)
    tw = lazyscope.tensor(w, requires_grad=True)
    n, c, d, h, wd = x.shape
    xp = lazyscope.nn.functional.pad(tx, (0, 0, 0, 0, p, p))
    out = None
    for t in range(k):
        part = xp[:, :, t:t + d].permute(0, 2, 1, 3, 4).reshape(n * d, c, h, wd)
        y = lazyscope.conv2d(part, tw[:, :, t], padding=p)
        out = y if out is None else out + y
    out = out.reshape(n, d, w.shape[0], h, wd).permute(0, 2, 1, 3, 4)
    lazyscope.max_pool3d(out, pool).sum().backward()
    return tw.grad.numpy()


def ours_pool(x, k, s, p):
    tx = lazyscope.tensor(x, requires_grad=True)
    lazyscope.max_pool3d(tx, k, stride=s, padding=p).sum().backward()
    return tx.grad.numpy()


def theirs_pool(x, k, s, p):
    tx = torch.from_numpy(x).requires_grad_()
    torch.nn.functional.max_pool3d(tx, k, stride=s, padding=p).sum().backward()
    return tx.grad.numpy()


def theirs(x, w, k, p, pool):
    tx = torch.from_numpy(x).requires_grad_()
    tw = torch.from_numpy(w).requires_grad_()
    torch.nn.functional.max_pool3d(torch.nn.functional.conv3d(tx, tw, padding=p), pool).sum().backward()
    return tw.grad.numpy()


def timed(fn, args, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        fn(*args)
    return (time.perf_counter() - t0) / reps * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="PyTorch's; the engine's pool is sized at start-up")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    for name, n, ci, co, d, h, wd, k, p, pool in SHAPES:
        x = rng.standard_normal((n, ci, d, h, wd)).astype(np.float32)
        w = (rng.standard_normal((co, ci, k, k, k)) * 0.1).astype(np.float32)
        call = (x, w, k, p, pool)
        # The three compute the same weight gradient (a check, not a timing).
        ref = theirs(*call)
        for fn in (ours, slices):
            np.testing.assert_allclose(fn(*call), ref, rtol=1e-3, atol=1e-3)
            fn(*call)  # warm: plans created
        times = {"lazyscope": [], "pytorch": [], "slices": []}
        for _ in range(args.rounds):
            times["lazyscope"].append(timed(ours, call, args.reps))
            times["pytorch"].append(timed(theirs, call, args.reps))
            times["slices"].append(timed(slices, call, args.reps))
        med = {key: statistics.median(v) for key, v in times.items()}
        print(f"{name}: lazyscope {med['lazyscope']:.2f} ms, pytorch {med['pytorch']:.2f} ms, "
              f"slices {med['slices']:.2f} ms; pytorch/lazyscope {med['pytorch'] / med['lazyscope']:.2f}x, "
              f"slices/conv3d {med['slices'] / med['lazyscope']:.2f}x  (each round: "
              + ", ".join(f"{t / o:.2f}" for t, o in zip(times["pytorch"], times["lazyscope"])) + ")")
    # max_pool3d alone (forward and backward): overlapping 3x3x3 windows at
    # stride 2, and the common 2x2x2 at stride 2.
    x = rng.standard_normal((4, 16, 16, 32, 32)).astype(np.float32)
    for k, s, p in ((3, 2, 1), (2, 2, 0)):
        np.testing.assert_array_equal(ours_pool(x, k, s, p), theirs_pool(x, k, s, p))
        times = {"lazyscope": [], "pytorch": []}
        for _ in range(args.rounds):
            times["lazyscope"].append(timed(ours_pool, (x, k, s, p), args.reps))
            times["pytorch"].append(timed(theirs_pool, (x, k, s, p), args.reps))
        med = {key: statistics.median(v) for key, v in times.items()}
        print(f"max_pool3d {k}x{k}x{k}/{s} pad {p} [4, 16, 16, 32, 32]: lazyscope {med['lazyscope']:.2f} ms, "
              f"pytorch {med['pytorch']:.2f} ms; pytorch/lazyscope {med['pytorch'] / med['lazyscope']:.2f}x")
    print("load average:", " ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()
