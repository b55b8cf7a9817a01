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
"""
import argparse
import os
import re
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default="build/release/bin/overhead_bench")
    parser.add_argument("--out", default="/tmp/step.callgrind")
    args = parser.parse_args()
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
