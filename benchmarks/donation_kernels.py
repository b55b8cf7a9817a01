"""The MLP step's kernel times on lazy:0 with and without buffer donation
(the optimizer update written over the old parameters and momentum), from
the engine's sampled kernel profile, processes alternated (A B A B ...).

Kernel times rather than step times: the update is ~10% of the step, less
than a loaded machine's noise on whole steps. Both set-ups run the same
compiled program (donation is decided per execution), so each runs in a
process of its own, which keeps the profiles apart.

    LAZYSCOPE_NUM_THREADS=1 LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/donation_kernels.py
"""
import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release"))


def child(donation, steps):
    """Trains the MLP; prints the kernels' microseconds per step (the
    profile's samples after warm-up), heaviest first."""
    sys.path.insert(0, str(BUILD / "python"))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from lazyscope import _C
    from bench_models import LazyTrainer, kernel_times

    _C.set_buffer_donation(donation)
    kernels, _ = kernel_times(LazyTrainer("mlp").step, 10, steps)
    rows = [(us, k["name"], len(k["nodes"])) for k, us in kernels]
    rows.sort(reverse=True)
    print("KERNELS", f"{sum(r[0] for r in rows):.1f}", " ".join(f"{n}/{c}:{us:.1f}" for us, n, c in rows[:5]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=640, help="steps per process (every 64th is profiled)")
    parser.add_argument("--child", choices=["0", "1"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child == "1", args.steps)
        return
    results = {"donation": [], "no donation": []}
    for _ in range(args.rounds):
        for name, flag in (("donation", "1"), ("no donation", "0")):  # A B A B ...
            out = subprocess.run([sys.executable, __file__, "--child", flag, "--steps", str(args.steps)],
                                 capture_output=True, text=True, check=True).stdout
            line = next(l for l in out.splitlines() if l.startswith("KERNELS"))
            results[name].append(float(line.split()[1]))
            print(f"{name:12s} {line[8:]}")
    print("median kernel time per step: " + ", ".join(
        f"{name} {statistics.median(v):.0f} us" for name, v in results.items()))
    print(f"no donation / donation: {statistics.median(results['no donation']) / statistics.median(results['donation']):.3f}x")


if __name__ == "__main__":
    main()
