#!/usr/bin/env python3
"""Instructions per step of overhead_bench's 1,000-node case, under callgrind.

Instruction counts do not move with the machine's load, so a change to the
tracer or the executor can be measured on a busy machine: this runs
`overhead_bench` (step_1000_nodes, 64 floats, one thread) under
`valgrind --tool=callgrind` and divides the inclusive counts of its measured
phases (measured_trace, measured_sync, measured_eager: functions of their
own, called only by the timed loops) by their calls.

    benchmarks/callgrind_step.py [--bench build/release/bin/overhead_bench] [--out /tmp/step.callgrind]

Prints instructions per step of the trace, the sync and the eager step, and
lazy (trace + sync) / eager. Needs valgrind (callgrind_annotate).

    benchmarks/callgrind_step.py --bench <before>/bin/overhead_bench --against build/release/bin/overhead_bench

runs each phase of both binaries with callgrind collecting inside that
phase only (--toggle-collect) and prints, per phase, the instructions per
step of each and the functions whose own (exclusive) instructions per step
moved most: what grew or shrank between two builds. Each binary runs on the
library in the lib/ beside its bin/ (a build's bin/ and lib/ copied aside
work).

    benchmarks/callgrind_step.py --mlp [--build build/release]

runs instead the MLP training step of vs_pytorch.py (784-512-256-10, batch
128, SGD with momentum, a barrier per step) from Python under callgrind, 2
and 6 steps after 3 warm-up steps, and prints per step (the difference over
4): all instructions, those inside the compiled program
(`CpuExecutable::execute`, inclusive) and the rest (the step outside its
program: Python, tracing, autograd, the executor), and the engine library's
own (exclusive) share of the rest. Python's allocator and garbage collector
move the total by a few percent between runs; the engine's share does not.
"""
import argparse
import os
import re
import subprocess
import sys


MLP_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[2] + "/python")
sys.path.insert(0, sys.argv[3])
import numpy as np
import lazyscope
from lazyscope import nn
from lazyscope.core import lazy_model as lm
from bench_models import make_mlp
F = nn.functional
dev = lm.lazy_device()
net = make_mlp(nn, F).to(dev)
opt = lazyscope.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
rng = np.random.default_rng(0)
x = lazyscope.tensor(rng.standard_normal((128, 784)).astype(np.float32), device=dev)
y = lazyscope.tensor(rng.integers(0, 10, 128), device=dev)
for _ in range(3 + int(sys.argv[1])):
    opt.zero_grad()
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    lm.mark_step()
    loss.item()
"""


def mlp(args):
    import tempfile
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS="1")
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "mlp.py")
        with open(script, "w") as f:
            f.write(MLP_SCRIPT)
        for steps in (2, 6):
            out = os.path.join(tmp, f"mlp{steps}.callgrind")
            subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "/usr/bin/python3", script,
                            str(steps), os.path.abspath(args.build), here],
                           env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            flat = subprocess.run(["callgrind_annotate", "--threshold=100", out], check=True, capture_output=True,
                                  text=True).stdout
            inclusive = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out], check=True,
                                       capture_output=True, text=True).stdout
            total = int(re.search(r"([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", flat).group(1).replace(",", ""))
            program = next(int(line.split()[0].replace(",", "")) for line in inclusive.splitlines()
                           if "CpuExecutable::execute" in line)
            engine = sum(int(m.group(1).replace(",", "")) for m in
                         re.finditer(r"^\s*([\d,]+) \(.*liblazyscope_engine\.so", flat, re.M))
            counts[steps] = (total, program, engine)
    per = [(counts[6][i] - counts[2][i]) / 4 for i in range(3)]
    print(f"per MLP step: {per[0]:,.0f} instructions, {per[1]:,.0f} in the program, "
          f"{per[0] - per[1]:,.0f} outside it; the engine library's own {per[2]:,.0f} (its kernels included: compare "
          "two set-ups by it)")


def calls_to(tree_lines, phase):
    """The calls of measured_<phase> in a `--tree=caller` listing: the counts
    on its callers' lines, above the function's own line."""
    for i, line in enumerate(tree_lines):
        if re.match(rf"\s*([\d,]+) .*\*  .*measured_{phase}\(", line):
            calls, j = 0, i - 1
            while j >= 0 and "<" in tree_lines[j]:
                calls += sum(int(c.replace(",", "")) for c in re.findall(r"\(([\d,]+)x\)", tree_lines[j]))
                j -= 1
            return calls
    return 0


def phase_functions(bench, phase, out):
    """(calls of the phase, {function: exclusive instructions}) with callgrind
    collecting only inside measured_<phase>."""
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS="1")
    # Its own build's library: a copy of a build tree's bin/ and lib/ kept
    # aside would otherwise load the library its RUNPATH names.
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(bench))), "lib")
    if os.path.isdir(lib):
        env["LD_LIBRARY_PATH"] = lib + os.pathsep + env.get("LD_LIBRARY_PATH", "")
    subprocess.run(["valgrind", "--tool=callgrind", f"--toggle-collect=*measured_{phase}*",
                    f"--callgrind-out-file={out}", bench, "--benchmark_filter=step_1000_nodes/",
                    "--benchmark_min_time=0.05"], env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    tree = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=caller", out], check=True,
                          capture_output=True, text=True).stdout.splitlines()
    flat = subprocess.run(["callgrind_annotate", "--threshold=100", out], check=True, capture_output=True,
                          text=True).stdout
    functions = {}
    for m in re.finditer(r"^\s*([\d,]+) \([^)]*\)\s+\S*?:(.*?)(?: \[.*\])?$", flat, re.M):
        name = m.group(2)[:120]
        functions[name] = functions.get(name, 0) + int(m.group(1).replace(",", ""))
    return calls_to(tree, phase), functions


def against(args):
    """Per phase, the functions whose instructions per step moved most
    between --bench (before) and --against (after)."""
    for phase in ("trace", "sync", "eager"):
        calls_a, a = phase_functions(args.bench, phase, args.out + ".a")
        calls_b, b = phase_functions(args.against, phase, args.out + ".b")
        if not calls_a or not calls_b:
            sys.exit(f"measured_{phase} not found: are both benchmarks built from trees with it?")
        print(f"{phase}: {sum(a.values()) / calls_a:,.0f} -> {sum(b.values()) / calls_b:,.0f} instructions per step")
        moved = sorted(set(a) | set(b), key=lambda f: -abs(b.get(f, 0) / calls_b - a.get(f, 0) / calls_a))
        for f in moved[:args.top]:
            before, after = a.get(f, 0) / calls_a, b.get(f, 0) / calls_b
            if round(before) == round(after):
                break
            print(f"  {before:>10,.0f} {after:>10,.0f} {after - before:>+9,.0f}  {f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default="build/release/bin/overhead_bench")
    parser.add_argument("--out", default="/tmp/step.callgrind")
    parser.add_argument("--mlp", action="store_true", help="the MLP training step from Python instead")
    parser.add_argument("--build", default="build/release", help="the build tree whose Python package --mlp runs")
    parser.add_argument("--against", help="a second overhead_bench: per-function differences from --bench")
    parser.add_argument("--top", type=int, default=8, help="functions listed per phase with --against")
    args = parser.parse_args()
    if args.mlp:
        mlp(args)
        return
    if args.against:
        against(args)
        return
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS="1")
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={args.out}", args.bench,
                    "--benchmark_filter=step_1000_nodes/", "--benchmark_min_time=0.05"],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tree = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=caller", args.out],
                          check=True, capture_output=True, text=True).stdout.splitlines()
    per_step = {}
    for i, line in enumerate(tree):
        m = re.match(r"\s*([\d,]+) .*\*  .*measured_(\w+)\(", line)
        if not m:
            continue
        total = int(m.group(1).replace(",", ""))
        calls, j = 0, i - 1
        while j >= 0 and "<" in tree[j]:  # the callers' lines above the function's own
            calls += sum(int(c.replace(",", "")) for c in re.findall(r"\(([\d,]+)x\)", tree[j]))
            j -= 1
        per_step[m.group(2)] = total / max(calls, 1)
        print(f"{m.group(2):6s} {total:>12,d} instructions / {calls} calls = {total / max(calls, 1):>12,.0f} per step")
    if not all(k in per_step for k in ("trace", "sync", "eager")):
        sys.exit("measured_trace/sync/eager not found: is the benchmark built from this tree?")
    lazy = per_step["trace"] + per_step["sync"]
    print(f"lazy (trace + sync) / eager = {lazy / per_step['eager']:.3f}")


if __name__ == "__main__":
    main()
