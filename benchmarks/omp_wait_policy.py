"""The MNIST CNN's step on lazy:0 under `lazyscope run`, with and without
OMP_WAIT_POLICY=PASSIVE, alternated (A B A B ...) in one run.

`lazyscope run` sets OMP_WAIT_POLICY=PASSIVE when the user has not set it
(runner/main.cpp), so oneDNN's OpenMP threads sleep after each convolution
instead of spinning beside the engine's pool. "libgomp default" runs the
runner with the variable set but empty, which the runner leaves alone and
libgomp reads as unset: the behaviour before.

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/omp_wait_policy.py --rounds 4
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release"))


def child(steps, warmup):
    """Runs inside `lazyscope run`: CNN steps on lazy:0, prints ms per step."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_models import LazyTrainer

    step = LazyTrainer("cnn").step
    times = []
    for i in range(warmup + steps):
        t = time.perf_counter()
        step(i)
        if i >= warmup:
            times.append((time.perf_counter() - t) * 1e3)
    print(f"MS_PER_STEP {statistics.median(times):.3f} OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')!r}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.steps, args.warmup)
        return
    runner = BUILD / "bin" / "lazyscope"
    setups = {"PASSIVE (runner's default now)": None, "libgomp default (before)": ""}
    results = {name: [] for name in setups}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for name, policy in setups.items():  # A B A B ...
                env = dict(os.environ)
                env.pop("OMP_WAIT_POLICY", None)
                if policy is not None:
                    env["OMP_WAIT_POLICY"] = policy
                out = subprocess.run(
                    [str(runner), "run", __file__, "--history", str(Path(tmp) / "h.lzh"), "--",
                     "--child", "--steps", str(args.steps), "--warmup", str(args.warmup)],
                    env=env, capture_output=True, text=True, check=True).stdout
                line = next(l for l in out.splitlines() if l.startswith("MS_PER_STEP"))
                results[name].append(float(line.split()[1]))
    for name, values in results.items():
        print(f"{name:32s} median {statistics.median(values):7.2f} ms/step  runs: "
              + ", ".join(f"{v:.2f}" for v in values))
    before = statistics.median(results["libgomp default (before)"])
    after = statistics.median(results["PASSIVE (runner's default now)"])
    print(f"speed-up of the step: {before / after:.2f}x")


if __name__ == "__main__":
    main()
