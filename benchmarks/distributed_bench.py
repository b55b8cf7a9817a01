#!/usr/bin/env python3
"""Multi-process benchmarks, each against its reference in one run:

  - all-reduce bandwidth between 2 worker processes (`lazyscope run
    --nproc-per-node 2`) for 1 KiB ... 64 MiB of float32: one all_reduce op
    per step graph through Gloo, against a plain memcpy (numpy.copyto) of
    the same bytes in the same worker; ratio = all_reduce time / memcpy time;
  - the data-parallel MLP's steps per second with 2 processes against 1
    process at the same per-rank batch (weak scaling: ideal is 1.0; on a
    2-core machine the ranks share the cores).

    /usr/bin/python3 benchmarks/distributed_bench.py [--build build/release] [--quick]
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

ALLREDUCE_WORKER = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    import lazyscope
    from lazyscope.core import lazy_model as lm
    import lazyscope.distributed as dist

    dist.init_process_group()
    out, quick = sys.argv[1], sys.argv[2] == "1"
    results = []
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
        start = time.perf_counter()
        for _ in range(reps):
            y = lm.all_reduce(lm.REDUCE_SUM, x)
            lm.mark_step()
        reduce_s = (time.perf_counter() - start) / reps
        dst = np.empty_like(host)
        start = time.perf_counter()
        for _ in range(reps):
            np.copyto(dst, host)
        copy_s = (time.perf_counter() - start) / reps
        results.append({"bytes": n * 4, "all_reduce_s": reduce_s, "memcpy_s": copy_s})
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


def launch(build, nproc, script, *args):
    history = pathlib.Path(tempfile.mkdtemp()) / "bench.sqlite"
    cmd = [str(build / "bin" / "lazyscope"), "run", "--nproc-per-node", str(nproc), "--quiet", "--history",
           str(history), str(script), *map(str, args)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
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

    launch(build, 2, work / "allreduce.py", work / "allreduce.json", int(args.quick))
    print("all_reduce(sum) of float32 between 2 processes (Gloo, loopback) vs memcpy of the same bytes")
    print(f"{'bytes':>10} {'all_reduce':>12} {'memcpy':>12} {'GB/s':>8} {'ratio':>8}")
    for r in json.loads((work / "allreduce.json").read_text()):
        gbps = r["bytes"] / r["all_reduce_s"] / 1e9
        print(f"{r['bytes']:>10} {r['all_reduce_s'] * 1e6:>10.1f}us {r['memcpy_s'] * 1e6:>10.1f}us {gbps:>8.3f} "
              f"{r['all_reduce_s'] / r['memcpy_s']:>8.1f}")

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
