"""Fused chains compiled at run time (engine/backend/cpu/fusion_jit.h): on every
instruction set, bit for bit against NumPy on arithmetic and against the tiled
interpreter on everything; the on-disk cache; a machine with no compiler.

Each case runs in a child process: the settings (LAZYSCOPE_CPU_ISA, the
compiler, the cache directory) are read once per process."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

# A chain of arithmetic, comparisons, where, casts, maximum (NaNs propagated),
# a bool input, a 0-d scalar input and Python scalars; two outputs (float32
# and bool). Saved for the parent to check; the listing and counters printed.
# Inputs made inside the step die with it, so the output takes one's buffer
# (buffer donation: the kernel writes over an input); "held" keeps them.
CHAIN = r"""
import sys, numpy as np, lazyscope
sys.path.insert(0, sys.argv[1])
from runtime_util import run_graph
from lazyscope.debug import metrics as met
n, out, held = int(sys.argv[2]), sys.argv[3], sys.argv[4] == "held"
rng = np.random.default_rng(7)
a = rng.standard_normal(n).astype(np.float32)
b = rng.standard_normal(n).astype(np.float32)
a[::97] = np.nan
keep = rng.random(n) < 0.5
s = np.array(0.75, np.float32)

kept = [lazyscope.tensor(a, device="lazy:0"), lazyscope.tensor(b, device="lazy:0")] if held else None

def chain():
    x, y = kept if held else (lazyscope.tensor(a, device="lazy:0"), lazyscope.tensor(b, device="lazy:0"))
    k, c = lazyscope.tensor(keep, device="lazy:0"), lazyscope.tensor(s, device="lazy:0")
    t = ((x * y + x) - y).relu()
    m = lazyscope.maximum(x, t * c)
    u = lazyscope.where(x > y, (t + x) * m, -m) / 1.5 + k.float()
    return -(u - y), (u < y)

(got, below), program = run_graph(chain, require_compile=True)
np.save(out + "_got.npy", got)
np.save(out + "_below.npy", below)
print(program)
for name in ("FusionJitCompiles", "FusionJitCacheHits", "FusionJitFailures", "FusionJitRuns", "CpuDonatedBuffers"):
    print(name, met.counter_value(name) or 0)
"""


def oracle(n):
    rng = np.random.default_rng(7)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    a[::97] = np.nan
    keep = rng.random(n) < 0.5
    s = np.float32(0.75)
    t = (a * b + a) - b
    t = np.where(t > 0, t, np.float32(0))  # the engine's relu: NaN -> 0
    m = np.maximum(a, t * s)  # propagates NaN, as the engine's maximum
    u = np.where(a > b, (t + a) * m, -m) / np.float32(1.5) + keep.astype(np.float32)
    return -(u - b), u < b


def run_chain(build_dir, tmp_path, n, tag, held=False, **env):
    child_env = dict(
        os.environ,
        PYTHONPATH=str(build_dir / "python"),
        LAZYSCOPE_NUM_THREADS="2",
        LAZYSCOPE_FUSION_JIT_MIN_ELEMENTS="1000",
        LAZYSCOPE_KERNEL_CACHE_DIR=str(tmp_path / "kernels"),
        # Compiled before the step runs: these check the compiled code from
        # the first execution (test_fusion_jit_background.py: the default).
        LAZYSCOPE_FUSION_JIT_SYNC="1",
    )
    child_env.update(env)
    out = str(tmp_path / tag)
    here = os.path.dirname(__file__)
    proc = subprocess.run(
        [sys.executable, "-c", CHAIN, here, str(n), out, "held" if held else "donated"],
        env=child_env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    counters = {k: int(v) for k, v in re.findall(r"^(\w+) (\d+)$", proc.stdout, re.M)}
    return np.load(out + "_got.npy"), np.load(out + "_below.npy"), proc.stdout, counters, proc.stderr


def fused_code(program):
    return re.findall(r"ops, ([\w-]+) (tiles|compiled):", program)


@pytest.mark.parametrize("held", [False, True], ids=["over_its_input", "into_new_buffers"])
@pytest.mark.parametrize("isa", ["x86-64", "avx2", "avx512f"])
def test_a_compiled_chain_matches_numpy_and_the_interpreter_bit_for_bit_on_every_instruction_set(
    isa, held, build_dir, tmp_path
):
    n = 5 * 1024 + 37  # blocks end mid-vector, and the two threads' halves too
    got, below, program, counters, _ = run_chain(build_dir, tmp_path, n, "jit", held, LAZYSCOPE_CPU_ISA=isa)
    assert counters["FusionJitCompiles"] == 1 and counters["FusionJitRuns"] >= 1, (counters, program)
    assert (counters["CpuDonatedBuffers"] > 0) == (not held), counters
    code = fused_code(program)
    assert len(code) == 1 and code[0][1] == "compiled", program
    order = ["x86-64", "avx2", "avx512f"]
    assert order.index(code[0][0]) <= order.index(isa), program
    tiles, tiles_below, tiles_program, _, _ = run_chain(
        build_dir, tmp_path, n, "tiles", held, LAZYSCOPE_CPU_ISA=isa, LAZYSCOPE_FUSION_JIT="0"
    )
    assert fused_code(tiles_program)[0][1] == "tiles", tiles_program
    want, want_below = oracle(n)
    np.testing.assert_array_equal(got, want)  # exact, NaNs where NumPy has them
    np.testing.assert_array_equal(below, want_below)
    np.testing.assert_array_equal(got.view(np.uint32), tiles.view(np.uint32))
    np.testing.assert_array_equal(below, tiles_below)


def test_a_streamed_output_of_a_compiled_chain_matches_numpy(build_dir, tmp_path):
    # 4M elements and up: the output is written with non-temporal stores.
    n = (1 << 22) + 21
    got, below, program, counters, _ = run_chain(build_dir, tmp_path, n, "big", held=True)
    assert fused_code(program)[0][1] == "compiled" and counters["FusionJitRuns"] >= 1, (counters, program)
    want, want_below = oracle(n)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(below, want_below)


def test_a_second_process_loads_the_compiled_kernel_from_the_disk_cache(build_dir, tmp_path):
    n = 3000
    _, _, _, first, _ = run_chain(build_dir, tmp_path, n, "first")
    assert first["FusionJitCompiles"] == 1 and first["FusionJitCacheHits"] == 0, first
    assert list((tmp_path / "kernels").glob("*.so")), "nothing cached"
    got, _, program, second, _ = run_chain(build_dir, tmp_path, n, "second")
    assert second["FusionJitCompiles"] == 0 and second["FusionJitCacheHits"] == 1, second
    assert fused_code(program)[0][1] == "compiled", program
    np.testing.assert_array_equal(got, oracle(n)[0])


def test_without_a_compiler_chains_stay_on_the_interpreter_and_say_why(build_dir, tmp_path):
    n = 3000
    got, below, program, counters, stderr = run_chain(
        build_dir, tmp_path, n, "none", LAZYSCOPE_CXX=str(tmp_path / "no-such-compiler")
    )
    assert fused_code(program)[0][1] == "tiles", program
    assert counters["FusionJitFailures"] == 1 and counters["FusionJitRuns"] == 0, counters
    assert "no-such-compiler" in stderr and "LAZYSCOPE_CXX" in stderr, stderr
    want, want_below = oracle(n)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(below, want_below)


def test_a_cache_directory_others_may_write_is_not_used(build_dir, tmp_path):
    # A shared object found there would be code this process runs.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    n = 3000
    got, _, program, counters, stderr = run_chain(
        build_dir, tmp_path, n, "shared", LAZYSCOPE_KERNEL_CACHE_DIR=str(shared)
    )
    assert fused_code(program)[0][1] == "tiles" and counters["FusionJitRuns"] == 0, (counters, program)
    assert "not private" in stderr and str(shared) in stderr, stderr
    assert not list(shared.iterdir()), list(shared.iterdir())
    np.testing.assert_array_equal(got, oracle(n)[0])
