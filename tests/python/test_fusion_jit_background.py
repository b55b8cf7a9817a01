"""Fused chains compiled on the background thread (engine/backend/cpu/fusion_jit.h):
the step runs on the interpreter until the compiled loop is ready, then switches
between executions with the same results (against NumPy, bit for bit); a failing
compiler, a process exiting, killed or forking while a compile runs, and
LAZYSCOPE_FUSION_JIT_SYNC=1. The compiler is a wrapper script that waits before
it compiles, so the compile is still running when the test looks.

Each case runs in a child process: the settings are read once per process."""

import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from test_fusion_jit import oracle  # the chain's NumPy result, shared with the synchronous tests

# Runs the chain of test_fusion_jit.py as one graph per step until the
# compiled loop ran (FusionJitRuns) or the step limit; saves the first and the
# last step's values and prints the first listing, the steps run on the
# interpreter and the counters. "fork": forks after the first step (the
# compile running) and does the same in the child.
STEPS = r"""
import os, sys, time, numpy as np, lazyscope
sys.path.insert(0, sys.argv[1])
from runtime_util import capture_events, run_graph
from lazyscope.debug import metrics as met
everything = capture_events()  # the kernel profiles of all steps, printed at the end
events = everything.__enter__()
n, out, mode, limit = int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
rng = np.random.default_rng(7)
a = rng.standard_normal(n).astype(np.float32)
b = rng.standard_normal(n).astype(np.float32)
a[::97] = np.nan
keep = rng.random(n) < 0.5

def chain():
    x, y = lazyscope.tensor(a, device="lazy:0"), lazyscope.tensor(b, device="lazy:0")
    k = lazyscope.tensor(keep, device="lazy:0")
    t = ((x * y + x) - y).relu()
    m = lazyscope.maximum(x, t * 0.75)
    u = lazyscope.where(x > y, (t + x) * m, -m) / 1.5 + k.float()
    return -(u - y), (u < y)

def runs():
    return met.counter_value("FusionJitRuns") or 0

(first, first_below), program = run_graph(chain, require_compile=True)
interpreted = 1 if runs() == 0 else 0
print(program)
if mode in ("exit", "kill"):
    # Waits for the compiler to start, then leaves with it running: "exit"
    # through the exit handlers, "kill" killed outright (none run).
    while not os.path.exists(out + "_compiler_pid") and limit > 0:
        time.sleep(0.05)
        limit -= 0.05
    if mode == "kill":
        os.kill(os.getpid(), 9)
    sys.exit(0)
if mode == "fork":
    child = os.fork()
    if child:
        _, status = os.waitpid(child, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
    out += "_forked"
last, last_below = first, first_below
deadline = time.monotonic() + limit
while runs() == 0 and time.monotonic() < deadline:
    time.sleep(0.05)
    (last, last_below), _ = run_graph(chain)
    interpreted += runs() == 0
np.save(out + "_first.npy", first)
np.save(out + "_first_below.npy", first_below)
np.save(out + "_last.npy", last)
np.save(out + "_last_below.npy", last_below)
print("interpreted", interpreted)
for p in events.of("kernel_profile"):
    for k in p["kernels"]:
        if k["name"] == "fused_elementwise":
            print("profile", p["executions"], k["samples"], k.get("code", ""))
for name in ("FusionJitCompiles", "FusionJitFailures", "FusionJitRuns", "FusionJitSwitches"):
    print(name, met.counter_value(name) or 0)
sys.stdout.flush()
os._exit(0)  # a forked child skips its parent's exit handlers
"""

N = 5 * 1024 + 37


def compiler(tmp_path, body):
    """A compiler wrapper: writes its pid and nice value, then runs `body` (a shell line)."""
    path = tmp_path / "cxx"
    path.write_text(f'#!/bin/sh\necho $$ > "{tmp_path}/out_compiler_pid"\n'
                    f'ps -o ni= -p $$ > "{tmp_path}/out_compiler_nice"\n{body}\n')
    path.chmod(0o755)
    return str(path)


def run_steps(build_dir, tmp_path, mode, cxx, limit=120, timeout=300, **env):
    child_env = dict(
        os.environ,
        PYTHONPATH=str(build_dir / "python"),
        LAZYSCOPE_NUM_THREADS="2",
        LAZYSCOPE_FUSION_JIT_MIN_ELEMENTS="1000",
        LAZYSCOPE_KERNEL_CACHE_DIR=str(tmp_path / "kernels"),
        LAZYSCOPE_CXX=cxx,
        # Not the default 19: on a loaded machine a compile at 19 can take
        # minutes; the wrapper's nice value is checked instead.
        LAZYSCOPE_FUSION_JIT_NICE="7",
    )
    child_env.pop("LAZYSCOPE_FUSION_JIT_SYNC", None)
    child_env.update(env)
    here = os.path.dirname(__file__)
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", STEPS, here, str(N), str(tmp_path / "out"), mode, str(limit)],
        env=child_env, capture_output=True, text=True, timeout=timeout
    )
    counters = {k: int(v) for k, v in re.findall(r"^(\w+) (\d+)$", proc.stdout, re.M)}
    return proc, counters, time.monotonic() - start


def load(tmp_path, tag):
    return tuple(np.load(tmp_path / f"{tag}_{part}.npy") for part in ("first", "first_below", "last", "last_below"))


def fused_line(program):
    lines = [line for line in program.splitlines() if " ops, " in line]
    assert len(lines) == 1, program
    return lines[0]


def assert_matches_numpy(values):
    want, want_below = oracle(N)
    first, first_below, last, last_below = values
    for got, below in ((first, first_below), (last, last_below)):
        np.testing.assert_array_equal(got, want)  # exact, NaNs where NumPy has them
        np.testing.assert_array_equal(below, want_below)
    np.testing.assert_array_equal(first.view(np.uint32), last.view(np.uint32))


def test_a_chain_runs_on_the_interpreter_until_its_background_compile_is_done_then_switches_with_the_same_results(
    build_dir, tmp_path
):
    proc, counters, _ = run_steps(build_dir, tmp_path, "switch", compiler(tmp_path, 'sleep 1\nexec c++ "$@"'))
    assert proc.returncode == 0, proc.stderr
    line = fused_line(proc.stdout)
    assert " tiles: " in line and "compiling in the background" in line, line
    # The first step did not wait for the compiler (it sleeps 1 s first).
    assert counters["interpreted"] >= 1, counters
    assert counters["FusionJitCompiles"] == 1 and counters["FusionJitSwitches"] == 1, counters
    assert counters["FusionJitRuns"] >= 1 and counters["FusionJitFailures"] == 0, counters
    assert_matches_numpy(load(tmp_path, "out"))
    assert [p.suffix for p in (tmp_path / "kernels").iterdir()] == [".so"]  # no temporary file left
    # The kernel profile names the code that ran: the interpreter's tiles
    # until the switch; the execution that switched is sampled (off the
    # 1-4, 64th schedule) and its timings replace the interpreter's.
    profiles = [(int(e), int(s), code) for e, s, code in re.findall(r"^profile (\d+) (\d+) (.*)$", proc.stdout, re.M)]
    codes = [code.split(" ")[-1] for _, _, code in profiles]
    assert codes and codes[0] == "tiles" and codes[-1] == "compiled", profiles
    switch = codes.index("compiled")
    assert set(codes[:switch]) == {"tiles"} and set(codes[switch:]) == {"compiled"}, profiles
    assert profiles[switch][1] == 1, profiles  # the interpreter's samples dropped
    assert profiles[switch][0] == counters["interpreted"] + 1, (profiles, counters)
    # The background thread's nice value, inherited by the compiler it ran.
    assert int((tmp_path / "out_compiler_nice").read_text()) == max(7, os.nice(0))


def test_with_jit_sync_the_first_step_waits_for_the_compile_and_runs_compiled(build_dir, tmp_path):
    proc, counters, _ = run_steps(
        build_dir, tmp_path, "sync", compiler(tmp_path, 'sleep 1\nexec c++ "$@"'), LAZYSCOPE_FUSION_JIT_SYNC="1"
    )
    assert proc.returncode == 0, proc.stderr
    line = fused_line(proc.stdout)
    assert " compiled: " in line and "background" not in line, line
    assert counters["interpreted"] == 0 and counters["FusionJitRuns"] >= 1, counters
    assert counters["FusionJitCompiles"] == 1 and counters["FusionJitSwitches"] == 0, counters
    assert_matches_numpy(load(tmp_path, "out"))
    # Compiled on the step's own thread, not niced.
    assert int((tmp_path / "out_compiler_nice").read_text()) == os.nice(0)


def test_a_failing_background_compile_leaves_the_chain_on_the_interpreter_and_says_so_once(build_dir, tmp_path):
    cxx = compiler(tmp_path, "sleep 0.5\necho 'broken compiler' >&2\nexit 1")
    # Runs steps until the limit: the compiled loop never runs.
    proc, counters, _ = run_steps(build_dir, tmp_path, "fail", cxx, limit=4)
    assert proc.returncode == 0, proc.stderr
    assert "compiling in the background" in fused_line(proc.stdout)
    assert counters["FusionJitFailures"] == 1 and counters["FusionJitRuns"] == 0, counters
    assert counters["FusionJitCompiles"] == 0 and counters["FusionJitSwitches"] == 0, counters
    assert counters["interpreted"] >= 2, counters
    assert proc.stderr.count("stay on the interpreter") == 1 and "broken compiler" in proc.stderr, proc.stderr
    assert_matches_numpy(load(tmp_path, "out"))
    assert not list((tmp_path / "kernels").iterdir())


def test_a_process_exiting_while_a_compile_runs_stops_the_compiler_and_leaves_no_file(build_dir, tmp_path):
    cxx = compiler(tmp_path, 'sleep 60\nexec c++ "$@"')
    proc, _, took = run_steps(build_dir, tmp_path, "exit", cxx, limit=60)
    assert proc.returncode == 0, proc.stderr
    assert "compiling in the background" in fused_line(proc.stdout)
    assert took < 30, took  # did not wait for the compiler's 60 s
    pid = int((tmp_path / "out_compiler_pid").read_text())
    for _ in range(100):  # reaped before the exit, but allow the kernel a moment
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the compiler (pid {pid}) outlived the process")
    assert not list((tmp_path / "kernels").iterdir())  # no object, no temporary source or log
    assert "stay on the interpreter" not in proc.stderr, proc.stderr


def test_a_forked_child_compiles_what_its_parent_was_compiling_and_switches(build_dir, tmp_path):
    proc, counters, _ = run_steps(build_dir, tmp_path, "fork", compiler(tmp_path, 'sleep 1\nexec c++ "$@"'))
    assert proc.returncode == 0, proc.stderr
    # The counters are the child's (the parent printed only the listing).
    assert counters["FusionJitRuns"] >= 1 and counters["FusionJitSwitches"] == 1, counters
    assert counters["interpreted"] >= 1, counters
    assert_matches_numpy(load(tmp_path, "out_forked"))


def test_a_compile_cut_short_by_sigkill_leaves_files_that_the_next_process_removes_keeping_live_ones(
    build_dir, tmp_path
):
    proc, _, _ = run_steps(build_dir, tmp_path, "kill", compiler(tmp_path, 'sleep 60\nexec c++ "$@"'), limit=60)
    assert proc.returncode == -9, (proc.returncode, proc.stderr)
    compiler_pid = int((tmp_path / "out_compiler_pid").read_text())
    os.killpg(compiler_pid, 9)  # the orphaned compiler, in its own process group
    kernels = tmp_path / "kernels"
    left = sorted(p.name for p in kernels.iterdir())
    # No exit handler ran: the killed process's source and log stay behind.
    assert [n.rsplit(".", 1)[1] for n in left] == ["cpp", "log"], left
    # Files of a process that still runs (this test's) and finished objects
    # are not the sweep's to remove.
    live = kernels / f"{'b' * 16}.{os.getpid()}.1.cpp"
    live.write_text("// another process compiling now")
    other_object = kernels / f"{'c' * 16}.so"
    other_object.write_bytes(b"")
    unrelated = kernels / "notes.txt"
    unrelated.write_text("kept")

    proc, counters, _ = run_steps(
        build_dir, tmp_path, "sync", compiler(tmp_path, 'exec c++ "$@"'), LAZYSCOPE_FUSION_JIT_SYNC="1"
    )
    assert proc.returncode == 0, proc.stderr
    assert counters["FusionJitCompiles"] == 1, counters
    now = sorted(p.name for p in kernels.iterdir())
    assert not set(left) & set(now), now
    assert live.name in now and other_object.name in now and unrelated.name in now, now
    assert len([n for n in now if re.fullmatch(r"[0-9a-f]{16}\.so", n)]) == 2, now  # the new kernel's object too
    assert_matches_numpy(load(tmp_path, "out"))
