"""The matrix products of a training step on lazy:0, from the engine's own
kernel profile, against the same shapes called directly through OpenBLAS
(NumPy, same library, same process), per GEMM split (LAZYSCOPE_GEMM_SPLIT).

Each set-up trains the model in a process of its own (the profile is
cumulative per graph), processes alternated (A B A B ...). For each `gemm`
kernel of the step's program: its shape and transpose flags (from the
program listing), its microseconds per step (epilogue included) and
GFLOP/s, and NumPy's `a @ b` on the same shapes and flags, timed in the
same process after training, on one OpenBLAS thread and on all.

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/gemm_kernels.py --model mlp --splits openblas,auto,dnnl-rows
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release"))

MATMUL = re.compile(r"^\s*%\d+ = matmul\(.*\) : float32\[([\d, ]+)\].*flops=(\d+)")
NODES = re.compile(r"; nodes ([\d,]+)")


def products(program_text):
    """{nodes tuple: (batch, m, k, n, ta, tb)} of the listing's matmuls."""
    out, lines = {}, program_text.splitlines()
    for i, line in enumerate(lines):
        hit = MATMUL.match(line)
        if not hit or i + 1 >= len(lines):
            continue
        dims = [int(d) for d in hit.group(1).split(",")]
        m, n = dims[-2], dims[-1]
        batch = 1
        for d in dims[:-2]:
            batch *= d
        k = int(hit.group(2)) // (2 * m * n * batch) if m * n * batch else 0
        note = lines[i + 1]
        nodes = NODES.search(note)
        if nodes:
            out[tuple(int(x) for x in nodes.group(1).split(",") if x)] = (
                batch, m, k, n, "reads a transposed" in note, "reads b transposed" in note)
    return out


def numpy_rate(np, shape, threads, blas, reps=20):
    batch, m, k, n, ta, tb = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((batch, k, m) if ta else (batch, m, k), dtype=np.float32)
    b = rng.standard_normal((batch, n, k) if tb else (batch, k, n), dtype=np.float32)
    a = a.transpose(0, 2, 1) if ta else a
    b = b.transpose(0, 2, 1) if tb else b
    if batch == 1:
        a, b = a[0], b[0]
    blas.openblas_set_num_threads(threads)
    a @ b
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    blas.openblas_set_num_threads(1)
    time.sleep(0.2)  # OpenBLAS's threads spin ~0.1 s after a threaded call
    return statistics.median(times) * 1e6


def child(model, split, steps, warmup):
    sys.path.insert(0, str(BUILD / "python"))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import numpy as np
    from lazyscope import _C
    from bench_models import LazyTrainer, openblas

    _C.set_gemm_split(split)
    step = LazyTrainer(model).step

    capture = _C._EventCapture()
    capture.start()
    for i in range(warmup):
        step(i)

    def events():
        return [json.loads(text) for text in capture.json()]

    def profiles():
        return [e["kernel_profile"] for e in events() if "kernel_profile" in e]

    # The step's graph: the one with the most kernels.
    def main_graph(ps):
        return max(ps, key=lambda p: len(p["kernels"]))["graph_hash"]

    start = {}
    if warmup:
        graph = main_graph(profiles())
        start = {k["index"]: k for k in [p for p in profiles() if p["graph_hash"] == graph][-1]["kernels"]}
    for i in range(steps):
        step(i)
    evs = events()
    graph = main_graph([e["kernel_profile"] for e in evs if "kernel_profile" in e])
    capture.stop()
    end = [e["kernel_profile"] for e in evs if "kernel_profile" in e and e["kernel_profile"]["graph_hash"] == graph][-1]
    texts = [v["program_text"] for e in evs for v in e.values() if isinstance(v, dict) and "program_text" in v]
    shapes = {}
    for text in texts:
        shapes.update(products(text))
    total, rows, kinds = 0.0, [], {}
    for k in end["kernels"]:
        k0 = start.get(k["index"], {"samples": 0, "total_ns": 0})
        samples = int(k["samples"]) - int(k0["samples"])
        us = (int(k["total_ns"]) - int(k0["total_ns"])) / max(1, samples) / 1e3
        total += us
        if k["name"] == "gemm" and tuple(k["nodes"]) in shapes:
            rows.append((us, shapes[tuple(k["nodes"])]))
        kinds.setdefault(k["name"], [0.0, 0])
        kinds[k["name"]][0] += us
        kinds[k["name"]][1] += 1
    blas = openblas()
    if blas is None:
        sys.exit("gemm_kernels.py needs OpenBLAS (found no libopenblas)")
    print("TOTAL", json.dumps(total))
    print("KINDS", json.dumps(kinds))
    for us, shape in rows:
        batch, m, kk, n, ta, tb = shape
        direct = [numpy_rate(np, shape, t, blas) for t in (1, os.cpu_count() or 1)]
        print("GEMM", json.dumps({"shape": shape, "us": us, "direct1": direct[0], "directN": direct[1],
                                  "gflop": 2 * batch * m * kk * n / 1e9}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mlp", choices=["mlp", "transformer"])
    parser.add_argument("--splits", default="openblas,auto")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=640, help="steps per process (every 64th is profiled)")
    parser.add_argument("--warmup", type=int, default=10,
                        help="steps before the profile is read (0: from the first, whose 3 are all sampled)")
    parser.add_argument("--top", type=int, default=12, help="heaviest kernels listed per split")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.model, args.child, args.steps, args.warmup)
        return
    splits = args.splits.split(",")
    totals = {s: [] for s in splits}
    gemms = {s: {} for s in splits}
    for _ in range(args.rounds):
        for split in splits:  # A B A B ...
            out = subprocess.run([sys.executable, __file__, "--model", args.model, "--child", split,
                                  "--steps", str(args.steps), "--warmup", str(args.warmup)], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                tag, _, body = line.partition(" ")
                if tag == "KINDS":
                    top = sorted(json.loads(body).items(), key=lambda kv: -kv[1][0])[:args.top]
                    print("    by kind (us/step, kernels): " + ", ".join(f"{n} {v[0]:.0f} ({v[1]})" for n, v in top))
                if tag == "TOTAL":
                    totals[split].append(json.loads(body))
                elif tag == "GEMM":
                    g = json.loads(body)
                    gemms[split].setdefault(tuple(g["shape"]), []).append(g)
            print(f"{split:8s} kernels {totals[split][-1]:8.1f} us/step", flush=True)
    print(f"\n{args.model}: kernels' median us per step over {args.rounds} processes per split")
    for split in splits:
        print(f"  {split:8s} {statistics.median(totals[split]):8.1f} us")
    print("\nper GEMM kernel (epilogue included): us per step, GFLOP/s; direct OpenBLAS (NumPy) on 1 / all threads")
    for split in splits:
        print(f"  split {split}")
        for shape, gs in gemms[split].items():
            us = statistics.median(g["us"] for g in gs)
            d1 = statistics.median(g["direct1"] for g in gs)
            dn = statistics.median(g["directN"] for g in gs)
            gflop = gs[0]["gflop"]
            batch, m, k, n, ta, tb = shape
            name = f"{batch}x" if batch > 1 else ""
            name += f"[{m}x{k}]{'T' if ta else ''} [{k}x{n}]{'T' if tb else ''}"
            print(f"    {name:32s} {us:8.1f} us {gflop / us * 1e6:6.1f} GFLOP/s | direct 1: {d1:8.1f} us "
                  f"{gflop / d1 * 1e6:6.1f} | all: {dn:8.1f} us {gflop / dn * 1e6:6.1f} | engine / best direct "
                  f"{us / min(d1, dn):.2f}x")


if __name__ == "__main__":
    main()
