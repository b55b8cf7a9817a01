"""The MNIST CNN step's kernels on lazy:0, from the engine's sampled
per-kernel profile, for one or more builds side by side, processes
alternated (A B A B ...).

Kernel times rather than step times: on a shared machine a whole step
swings more than the change being measured; each kernel's time says where
the step goes. Each build runs in a process of its own (its `_C` and its
libraries: LD_LIBRARY_PATH points at BUILD/lib, which the extension's
RUNPATH gives way to), so a copy of an earlier build is the "before".

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/cnn_kernels.py
    /usr/bin/python3 benchmarks/cnn_kernels.py --builds /tmp/before,build/release --rounds 5

Prints, per build, the median per-step time of each kernel (in program
order), their sum, and the median wall time of a whole step.
"""
import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import setup_env  # noqa: E402

# As vs_pytorch.py and the package: OpenMP threads (oneDNN's) sleep when idle.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BUILD = Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release"))


def child(steps):
    """Trains the CNN; prints one line per kernel (index, name, us per step)
    and the median step time."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_models import LazyTrainer, kernel_times

    rows, times = kernel_times(LazyTrainer("cnn").step, 10, steps)
    for k, us in rows:
        print(f"KERNEL {k['index']} {k['name']} {len(k.get('nodes', []))} {us:.1f}")
    print(f"STEP {statistics.median(times) * 1e3:.3f}")


def run_child(setup, steps):
    env = setup_env(setup)
    out = subprocess.run([sys.executable, __file__, "--child", "--steps", str(steps)], env=env,
                         capture_output=True, text=True, check=True).stdout
    kernels, step_ms = [], None
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == "KERNEL":
            kernels.append((int(parts[1]), parts[2], int(parts[3]), float(parts[4])))
        elif parts and parts[0] == "STEP":
            step_ms = float(parts[1])
    return kernels, step_ms


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builds", default=str(DEFAULT_BUILD),
                        help="comma-separated set-ups, each a build directory, optionally with environment "
                             "variables for its processes: DIR[:VAR=VALUE[:VAR=VALUE...]]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=640, help="steps per process (every 64th is profiled)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.steps)
        return
    builds = args.builds.split(",")
    runs = {b: [] for b in builds}
    for r in range(args.rounds):
        for b in builds:  # A B A B ...
            kernels, step_ms = run_child(b, args.steps)
            runs[b].append((kernels, step_ms))
            print(f"round {r} {b}: kernels {sum(k[3] for k in kernels):.0f} us, step {step_ms:.2f} ms", flush=True)
    for b in builds:
        print(f"\n{b}: median over {args.rounds} processes")
        per_kernel = {}
        for kernels, _ in runs[b]:
            for index, name, nodes, us in kernels:
                per_kernel.setdefault((index, name, nodes), []).append(us)
        print(f"  {'#':>3s} {'kernel':24s} {'nodes':>5s} {'us/step':>9s}")
        for (index, name, nodes), v in sorted(per_kernel.items()):
            print(f"  {index:3d} {name:24s} {nodes:5d} {statistics.median(v):9.1f}")
        total = statistics.median(sum(k[3] for k in kernels) for kernels, _ in runs[b])
        step = statistics.median(s for _, s in runs[b])
        print(f"  kernels total {total:.0f} us/step; step {step:.2f} ms (median of medians)")


if __name__ == "__main__":
    main()
