"""The transformer step's kernels on lazy:0 (bench_models' 4 layers, width
256, sequence 64, batch 16), from the engine's sampled per-kernel profile,
for set-ups side by side, processes alternated (A B A B ...).

A set-up is a build directory, optionally with environment variables for its
processes (a run-time switch): DIR[:VAR=VALUE[:VAR=VALUE...]]. Each process
trains two warm-up steps, then --steps timed ones; the engine times every
kernel of a graph's first four executions, so a process gives the kernels
of executions 3 and 4 (warm) and the wall time of every timed step.
Kernels are grouped by what they run (op, fused ops, output shape: the
program listing's label), with the bytes they move (the compiler's
estimate) per microsecond: GB/s, to set against `engine_bench
--benchmark_filter=triad`.

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/xfmr_kernels.py --rounds 3
    /usr/bin/python3 benchmarks/xfmr_kernels.py --setups build/release:LAZYSCOPE_ROW_KERNELS=0,build/release --rounds 5

With --first-steps N each process instead starts on an empty kernel cache
(LAZYSCOPE_KERNEL_CACHE_DIR, a new temporary directory) and times its first
N steps, the first with the trace and compile: what a fresh machine pays
for the fused kernels compiled at run time (in the background by default,
before the step with LAZYSCOPE_FUSION_JIT_SYNC=1):

    /usr/bin/python3 benchmarks/xfmr_kernels.py --first-steps 12 --rounds 4 --setups \
        build/release:LAZYSCOPE_FUSION_JIT_SYNC=1:LAZYSCOPE_FUSION_JIT_MIN_ELEMENTS=1048576,build/release

Prints, per set-up, the median per-step time of each group (and their
count and GB/s), the GEMMs' and the other kernels' totals, and the median
wall time of a step, and the other kernels' time over the GEMMs' (the
median of each process's ratio: steadier than either under load). The
fused attention's kernels (attention, attention_backward) count as GEMMs:
they are the attention's products, with its softmax between them.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import setup_env  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BUILD = Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release"))


def child(steps):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_models import LazyTrainer, kernel_times

    # Two warm-up steps, then the timed ones: the engine times every kernel
    # of the graph's first four executions (then every 64th), and drops the
    # first execution's timings when the second comes, so a profile read
    # after one warm-up step held the first's time, which the second's then
    # replaced: each kernel came out as (t1 + t2 - t0) / 2, short by the
    # first (slow) execution's share. After two, the differences are the
    # timed executions' own.
    rows, times = kernel_times(LazyTrainer("transformer").step, 2, steps)
    groups = {}
    for k, us in rows:
        g = groups.setdefault(k["label"], [0, 0.0, 0, k["name"]])
        g[0] += 1
        g[1] += us
        g[2] += int(k.get("bytes", 0))
    print("GROUPS " + json.dumps(groups))
    print("STEP " + json.dumps(statistics.median(times) * 1e3))


def first_steps_child(n):
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_models import LazyTrainer
    from lazyscope.debug import metrics as met

    trainer = LazyTrainer("transformer")
    times = []
    for i in range(n):
        t = time.perf_counter()
        trainer.step(i)
        times.append((time.perf_counter() - t) * 1e3)
    print("FIRST " + json.dumps(times))
    print("COUNTERS " + json.dumps({k: met.counter_value(k) or 0 for k in (
        "FusionJitCompiles", "FusionJitCacheHits", "FusionJitSwitches", "FusionJitRuns")}))


def run_first_steps(setup, n):
    with tempfile.TemporaryDirectory() as cache:
        env = setup_env(setup)
        env["LAZYSCOPE_KERNEL_CACHE_DIR"] = cache
        out = subprocess.run([sys.executable, __file__, "--first-steps-child", str(n)], env=env,
                             capture_output=True, text=True, check=True).stdout
    found = dict(line.split(" ", 1) for line in out.splitlines() if line.startswith(("FIRST ", "COUNTERS ")))
    return json.loads(found["FIRST"]), json.loads(found["COUNTERS"])


def first_steps(setups, rounds, n):
    runs = {s: [] for s in setups}
    for r in range(rounds):
        for s in setups:  # A B A B ...
            times, counters = run_first_steps(s, n)
            runs[s].append(times)
            print(f"round {r} {s}: first step {times[0]:.0f} ms, steps 1-{n - 1} "
                  f"{sum(times[1:]):.0f} ms ({' '.join(f'{t:.0f}' for t in times[1:])}); {counters}", flush=True)
    print(f"(load average {os.getloadavg()[0]:.1f})")
    for s in setups:
        med = [statistics.median(t[i] for t in runs[s]) for i in range(n)]
        total = statistics.median(sum(t) for t in runs[s])
        print(f"\n{s}: median over {rounds} processes, ms per step from the first: "
              f"{' '.join(f'{t:.0f}' for t in med)}; first {n} steps in all {total:.0f} ms")


# Kernels counted as products: GEMMs, and the fused attention (its kernels
# are the attention's products with their softmax between).
PRODUCTS = ("gemm", "attention", "attention_backward")


def is_product(kind):
    return kind in PRODUCTS


def run_child(setup, steps):
    env = setup_env(setup)
    out = subprocess.run([sys.executable, __file__, "--child", "--steps", str(steps)], env=env,
                         capture_output=True, text=True, check=True).stdout
    groups, step = {}, None
    for line in out.splitlines():
        tag, _, body = line.partition(" ")
        if tag == "GROUPS":
            groups = json.loads(body)
        elif tag == "STEP":
            step = json.loads(body)
    return groups, step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setups", default=str(DEFAULT_BUILD),
                        help="comma-separated set-ups: DIR[:VAR=VALUE[:VAR=VALUE...]]")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=30, help="groups listed per set-up")
    parser.add_argument("--steps", type=int, default=2,
                        help="timed steps per process (kernels: from the first three executions only)")
    parser.add_argument("--first-steps", type=int, default=0, metavar="N",
                        help="time each process's first N steps on an empty kernel cache instead")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first-steps-child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.steps)
        return
    if args.first_steps_child:
        first_steps_child(args.first_steps_child)
        return
    setups = args.setups.split(",")
    if args.first_steps:
        first_steps(setups, args.rounds, args.first_steps)
        return
    runs = {s: [] for s in setups}
    for r in range(args.rounds):
        for s in setups:  # A B A B ...
            groups, step = run_child(s, args.steps)
            runs[s].append((groups, step))
            gemm = sum(g[1] for g in groups.values() if is_product(g[3]))
            other = sum(g[1] for g in groups.values() if not is_product(g[3]))
            print(f"round {r} {s}: gemm {gemm / 1e3:.1f} ms, other kernels {other / 1e3:.1f} ms, "
                  f"step {step:.1f} ms", flush=True)
    print(f"(load average {os.getloadavg()[0]:.1f})")
    for s in setups:
        print(f"\n{s}: median over {args.rounds} processes of each group's us per step")
        labels = {}
        for groups, _ in runs[s]:
            for label, (count, us, nbytes, name) in groups.items():
                labels.setdefault(label, []).append((count, us, nbytes, name))
        table = []
        for label, v in labels.items():
            us = statistics.median(x[1] for x in v)
            table.append((us, v[0][0], v[0][2] / max(us, 1e-9) / 1e3, v[0][3], label))
        table.sort(reverse=True)
        print(f"  {'us/step':>9s} {'n':>4s} {'GB/s':>6s}  kernel")
        for us, count, gbs, name, label in table[:args.top]:
            print(f"  {us:9.1f} {count:4d} {gbs:6.1f}  {label}")
        for what, keep in (("gemm", is_product), ("other", lambda n: not is_product(n))):
            total = statistics.median(sum(g[1] for g in groups.values() if keep(g[3])) for groups, _ in runs[s])
            print(f"  {what} kernels {total / 1e3:.2f} ms/step")
        # Load slows every kernel of a process alike, GEMMs included: the
        # other kernels' time as a share of the GEMMs' in the same process
        # compares set-ups across a loaded run's swings.
        share = statistics.median(
            sum(g[1] for g in groups.values() if not is_product(g[3])) / max(1e-9, sum(
                g[1] for g in groups.values() if is_product(g[3]))) for groups, _ in runs[s])
        print(f"  other kernels / gemm kernels, per process: median {share:.4f}")
        print(f"  step {statistics.median(step for _, step in runs[s]):.1f} ms (median)")


if __name__ == "__main__":
    main()
