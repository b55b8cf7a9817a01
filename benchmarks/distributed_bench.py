#!/usr/bin/env python3
"""Multi-process benchmarks, each against its reference in one run:

  - all-reduce bandwidth between 2 worker processes (`lazyscope run
    --nproc-per-node 2`) for 1 KiB ... 64 MiB of float32: one all_reduce op
    per step graph through Gloo, against a plain memcpy (numpy.copyto) of
    the same bytes in the same worker; ratio = all_reduce time / memcpy time;
  - the same all-reduces as they ran before the small-message tuning
    (LAZYSCOPE_GLOO_TUNING=0: Nagle's algorithm left on Gloo's sockets, a
    header exchange before the data) against now (TCP_NODELAY, a small
    all_reduce in one exchange), launches alternated, the median of each;
    with the process wake-ups (context switches, every thread) per
    all_reduce, which on a loaded machine is what a small one costs;
  - the data-parallel MLP's steps per second with 2 processes against 1
    process at the same per-rank batch (weak scaling: ideal is 1.0; on a
    2-core machine the ranks share the cores).

    /usr/bin/python3 benchmarks/distributed_bench.py [--build build/release] [--quick]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import textwrap

ALLREDUCE_WORKER = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    import lazyscope
    from lazyscope.core import lazy_model as lm
    import lazyscope.distributed as dist

    dist.init_process_group()
    out, quick = sys.argv[1], sys.argv[2] == "1"
    results = []

    def switches():
        total = 0
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/status") as f:
                total += sum(int(line.split()[1]) for line in f if "ctxt_switches" in line)
        return total

    for kib in [1, 16, 256, 4096, 16384, 65536]:
        n = kib * 1024 // 4
        host = np.random.default_rng(dist.get_rank()).standard_normal(n).astype(np.float32)
        x = lazyscope.from_numpy(host).to("lazy:0")
        lm.mark_step()
        reps = 3 if quick else max(5, min(200, 4096 // kib))
        for _ in range(2):  # warm-up: compile, connect
            y = lm.all_reduce(lm.REDUCE_SUM, x)
            lm.mark_step()
        dist.barrier()
        start, woken = time.perf_counter(), switches()
        for _ in range(reps):
            y = lm.all_reduce(lm.REDUCE_SUM, x)
            lm.mark_step()
        reduce_s = (time.perf_counter() - start) / reps
        wakeups = (switches() - woken) / reps
        dst = np.empty_like(host)
        start = time.perf_counter()
        for _ in range(reps):
            np.copyto(dst, host)
        copy_s = (time.perf_counter() - start) / reps
        results.append({"bytes": n * 4, "all_reduce_s": reduce_s, "memcpy_s": copy_s, "wakeups": wakeups})
    if dist.get_rank() == 0:
        with open(out, "w") as f:
            json.dump(results, f)
""")

MLP_WORKER = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import lazyscope
    from lazyscope import nn, optim
    from lazyscope.core import lazy_model as lm
    import lazyscope.distributed as dist

    dist.init_process_group()
    out, steps = sys.argv[1], int(sys.argv[2])
    device = lm.lazy_device()
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
    opt = optim.SGD(model.parameters(), lr=0.01)
    rng = np.random.default_rng(dist.get_rank())
    x = lazyscope.from_numpy(rng.standard_normal((64, 784)).astype(np.float32)).to(device)
    y = lazyscope.from_numpy(rng.integers(0, 10, 64)).to(device)

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        lm.optimizer_step(opt)
        lm.mark_step()

    for _ in range(3):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    elapsed = time.perf_counter() - start
    if dist.get_rank() == 0:
        with open(out, "w") as f:
            json.dump({"steps_per_s": steps / elapsed}, f)
""")


def launch(build, nproc, script, *args, env=None):
    history = pathlib.Path(tempfile.mkdtemp()) / "bench.sqlite"
    cmd = [str(build / "bin" / "lazyscope"), "run", "--nproc-per-node", str(nproc), "--quiet", "--history",
           str(history), str(script), *map(str, args)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ, **(env or {})))
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{result.stdout}\n{result.stderr}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.environ.get("LAZYSCOPE_BUILD_DIR", "build/release"))
    parser.add_argument("--quick", action="store_true", help="few repetitions (a smoke run)")
    args = parser.parse_args()
    build = pathlib.Path(args.build).resolve()
    work = pathlib.Path(tempfile.mkdtemp())
    (work / "allreduce.py").write_text(ALLREDUCE_WORKER)
    (work / "mlp.py").write_text(MLP_WORKER)

    # Alternate the two socket settings so that both see the same load.
    runs = {"0": [], "1": []}
    for _ in range(1 if args.quick else 3):
        for tuning in ("0", "1"):
            out = work / f"allreduce{tuning}.json"
            launch(build, 2, work / "allreduce.py", out, int(args.quick), env={"LAZYSCOPE_GLOO_TUNING": tuning})
            runs[tuning].append(json.loads(out.read_text()))

    def median(tuning, i, key):
        return statistics.median(run[i][key] for run in runs[tuning])

    print("all_reduce(sum) of float32 between 2 processes (Gloo, loopback) vs memcpy of the same bytes;")
    print("before: LAZYSCOPE_GLOO_TUNING=0 (Nagle on, header exchange apart), launches alternated; medians")
    print(f"{'bytes':>10} {'all_reduce':>12} {'memcpy':>12} {'GB/s':>8} {'ratio':>9} {'wakeups':>8} | "
          f"{'before':>12} {'wakeups':>8} {'speed-up':>9}")
    for i, r in enumerate(runs["1"][0]):
        now, before, copy = median("1", i, "all_reduce_s"), median("0", i, "all_reduce_s"), median("1", i, "memcpy_s")
        print(f"{r['bytes']:>10} {now * 1e6:>10.1f}us {copy * 1e6:>10.1f}us {r['bytes'] / now / 1e9:>8.3f} "
              f"{now / copy:>9.1f} {median('1', i, 'wakeups'):>8.1f} | {before * 1e6:>10.1f}us "
              f"{median('0', i, 'wakeups'):>8.1f} {before / now:>8.2f}x")

    steps = 20 if args.quick else 200
    rates = {}
    for nproc in (1, 2):
        out = work / f"mlp{nproc}.json"
        launch(build, nproc, work / "mlp.py", out, steps)
        rates[nproc] = json.loads(out.read_text())["steps_per_s"]
    print("\ndata-parallel MLP (784-256-10, batch 64 per rank), steps/s per rank")
    print(f"  1 process: {rates[1]:.1f}   2 processes: {rates[2]:.1f}   "
          f"ratio 2/1: {rates[2] / rates[1]:.2f} (weak scaling; ideal 1.00)")


if __name__ == "__main__":
    main()
