"""Training steps of a benchmark model on lazy:0 under several GEMM splits
(`_C.set_gemm_split`), alternated step by step in one process (one compiled
program: the split is chosen at run time), with each step's wall time and
the process CPU time it used (all threads). On a loaded machine, where a
second thread's share of the cores says little, the CPU time still shows
which set-up does less work.

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/gemm_split_steps.py --model mlp --splits openblas,auto,dnnl --rounds 40 --steps 5
    [LAZYSCOPE_NUM_THREADS=1] ...
"""
import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release"))
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lazyscope import _C  # noqa: E402
from bench_models import MAKERS, LazyTrainer  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="transformer", choices=sorted(MAKERS))
    parser.add_argument("--splits", default="openblas,auto")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=1, help="steps per split and round")
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    step = LazyTrainer(args.model, upload_each_step=True).step

    splits = args.splits.split(",")
    for i in range(args.warmup):
        step(i)
    wall = {s: [] for s in splits}
    cpu = {s: [] for s in splits}
    for r in range(args.rounds):
        for split in splits:  # A B A B ...
            _C.set_gemm_split(split)
            for _ in range(args.steps):
                c, t = time.process_time(), time.perf_counter()
                step(r)
                wall[split].append((time.perf_counter() - t) * 1e3)
                cpu[split].append((time.process_time() - c) * 1e3)
    print(f"{args.model}: median per step over {args.rounds} rounds x {args.steps} steps, "
          f"{os.environ.get('LAZYSCOPE_NUM_THREADS', 'all')} threads, load {os.getloadavg()[0]:.1f}")
    for split in splits:
        print(f"  {split:8s} wall {statistics.median(wall[split]):8.2f} ms   cpu {statistics.median(cpu[split]):8.2f} ms")
    base = splits[0]
    for split in splits[1:]:
        print(f"  {split} / {base}: wall {statistics.median(wall[split]) / statistics.median(wall[base]):.3f}x, "
              f"cpu {statistics.median(cpu[split]) / statistics.median(cpu[base]):.3f}x")


if __name__ == "__main__":
    main()
