"""The CPU backend's compiler on lazy:0: fused elementwise kernels, matmuls
reading transposes through BLAS flags, the memory plan and the thread pool,
each checked against NumPy (never against the engine's own eager path)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from lazyscope.debug import metrics as met
from runtime_util import bf16_round, capture_events, run_graph

DEV = "lazy:0"


def program_of(fn):
    return run_graph(fn, require_compile=True)


def fused_lines(program):
    return re.findall(r"^  %\d+ = fused\(.*$\n^      ; nodes ([\d,]+) \((\d+) ops", program, re.M)


def test_a_long_chain_with_broadcasts_scalars_and_casts_is_one_fused_kernel_and_matches_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 300)).astype(np.float32)
    row = rng.standard_normal(300).astype(np.float32)
    col = rng.standard_normal((64, 1)).astype(np.float32)

    def run():
        x = lazyscope.tensor(a, device=DEV)
        r = lazyscope.tensor(row, device=DEV)
        c = lazyscope.tensor(col, device=DEV)
        y = (x * r + c) * 0.5 - 1.25            # broadcasts both ways, Python scalars
        y = y.exp().log1p().sqrt() / (y.abs() + 1.0)
        mask = (y > 0.3).float()                # compare, bool -> float32 cast
        y = lazyscope.where(y < 0.9, y.tanh(), y.sigmoid()) + mask
        y = lazyscope.maximum(y, c * 0.1).clamp(-0.5, 1.5)
        return y

    got, program = program_of(run)
    ya = (a * row + col) * np.float32(0.5) - np.float32(1.25)
    ya = np.sqrt(np.log1p(np.exp(ya))) / (np.abs(ya) + np.float32(1))
    mask = (ya > np.float32(0.3)).astype(np.float32)
    ya = np.where(ya < np.float32(0.9), np.tanh(ya), 1 / (1 + np.exp(-ya))) + mask
    ya = np.clip(np.maximum(ya, col * np.float32(0.1)), -0.5, 1.5)
    np.testing.assert_allclose(got, ya, rtol=2e-6, atol=2e-6)
    fused = fused_lines(program)
    assert fused and max(int(ops) for _, ops in fused) >= 12, program


def test_values_read_outside_a_chain_are_written_and_the_rest_are_not():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 16)).astype(np.float32)

    def run():
        x = lazyscope.tensor(a, device=DEV)
        t = (x * 2.0).exp()           # read by the sum below: must be written
        s = t.sum(dim=1, keepdim=True)
        return (t / s), (t - 1.0).relu()

    (soft, relu), program = program_of(run)
    t = np.exp(a * np.float32(2))
    np.testing.assert_allclose(soft, t / t.sum(axis=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(relu, np.maximum(t - 1, 0), rtol=1e-5)
    assert fused_lines(program), program


def test_fused_chains_in_bf16_mode_round_after_every_op_like_the_oracle():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(4096).astype(np.float32)
    b = rng.standard_normal(4096).astype(np.float32)
    lm.mark_step()
    _C.set_bf16_mode(True)
    try:
        def run():
            x = lazyscope.tensor(a, device=DEV)
            y = lazyscope.tensor(b, device=DEV)
            return ((x * y + x) * 3.0 - y).relu()
        got, program = program_of(run)
    finally:
        lm.mark_step()
        _C.set_bf16_mode(False)
    x, y = bf16_round(a), bf16_round(b)
    want = bf16_round(x * y)
    want = bf16_round(want + x)
    want = bf16_round(want * np.float32(3))
    want = bf16_round(want - y)
    want = np.maximum(want, 0)
    np.testing.assert_array_equal(got, want)
    assert fused_lines(program), program


def test_a_transpose_feeding_a_matmul_is_a_blas_flag_not_a_copy():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((7, 5)).astype(np.float32)
    b = rng.standard_normal((9, 7)).astype(np.float32)
    c = rng.standard_normal((3, 9, 4)).astype(np.float32)
    d = rng.standard_normal((3, 6, 4)).astype(np.float32)

    def run():
        x, y = lazyscope.tensor(a, device=DEV), lazyscope.tensor(b, device=DEV)
        p, q = lazyscope.tensor(c, device=DEV), lazyscope.tensor(d, device=DEV)
        return (x.t() @ y.t()), (p @ q.transpose(1, 2))

    (got2, got3), program = program_of(run)
    np.testing.assert_allclose(got2, a.T @ b.T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got3, c @ d.transpose(0, 2, 1), rtol=1e-5, atol=1e-6)
    assert "reads a and b transposed (BLAS flag)" in program, program
    assert "reads b transposed (BLAS flag)" in program, program
    assert not re.search(r"^  %\d+ = permute\(", program, re.M), program


def test_a_transpose_with_another_reader_still_runs_and_both_readers_are_right():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((6, 4)).astype(np.float32)

    def run():
        x = lazyscope.tensor(a, device=DEV)
        xt = x.t()
        return (xt @ x), xt

    (gram, xt), program = program_of(run)
    np.testing.assert_allclose(gram, a.T @ a, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(xt, a.T)
    assert re.search(r"^  %\d+ = permute\(", program, re.M), program


def test_a_value_read_after_other_values_reuse_buffers_is_intact():
    # Many [16,16] intermediates through non-elementwise ops (cumsum, matmul)
    # share arena buffers; the first one is read again at the very end.
    rng = np.random.default_rng(6)
    a = rng.standard_normal((16, 16)).astype(np.float32) * 0.1

    def run():
        x = lazyscope.tensor(a, device=DEV)
        first = x @ x
        v = first
        for _ in range(6):
            v = (v @ x).cumsum(0)
        return (v @ first), first

    (got, first), program = program_of(run)
    f = a @ a
    v = f
    for _ in range(6):
        v = np.cumsum(v @ a, axis=0)
    np.testing.assert_allclose(first, f, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, v @ f, rtol=1e-4, atol=1e-6)
    arena = re.search(r"arena (\d+) bytes in one block, .* for (\d+) bytes of (\d+) intermediate values", program)
    assert arena and int(arena.group(3)) == 12, program
    assert int(arena.group(1)) <= 2 * 16 * 16 * 4, program  # reused: two values' bytes hold all twelve


def test_no_kernel_writes_over_an_operand_that_another_reader_still_needs():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((8, 8)).astype(np.float32)

    def run():
        x = lazyscope.tensor(a, device=DEV)
        m = x @ x                # one value, three readers of it at different times
        s1 = m.cumsum(1)
        s2 = s1.cumsum(0)
        return (s2 @ m), (m.cumsum(0) - s1), m

    (p, q, m), _ = program_of(run)
    mm = a @ a
    s1 = np.cumsum(mm, 1)
    s2 = np.cumsum(s1, 0)
    np.testing.assert_allclose(m, mm, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p, s2 @ mm, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(q, np.cumsum(mm, 0) - s1, rtol=1e-5, atol=1e-5)


def test_peak_bytes_are_in_the_program_listing():
    def run():
        x = lazyscope.ones(32, 32, device=DEV)
        return ((x @ x).cumsum(0) @ x)

    _, program = program_of(run)
    peak = re.search(r"^memory: peak=(\d+) bytes \(arena (\d+) bytes in one block.*outputs (\d+)\)", program, re.M)
    assert peak, program
    assert int(peak.group(1)) == int(peak.group(2)) + int(peak.group(3))
    assert int(peak.group(3)) == 32 * 32 * 4


def test_a_cached_training_step_allocates_nothing():
    from lazyscope import nn, optim
    rng = np.random.default_rng(8)
    w1 = nn.Parameter(lazyscope.tensor(rng.standard_normal((20, 32)).astype(np.float32) * 0.1, device=DEV))
    w2 = nn.Parameter(lazyscope.tensor(rng.standard_normal((32, 4)).astype(np.float32) * 0.1, device=DEV))
    x = lazyscope.tensor(rng.standard_normal((16, 20)).astype(np.float32), device=DEV)
    target = lazyscope.tensor(rng.integers(0, 4, 16), device=DEV)
    opt = optim.SGD([w1, w2], lr=0.1, momentum=0.9)
    lm.mark_step()

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy((x @ w1).relu() @ w2, target)
        loss.backward()
        opt.step()
        lm.mark_step()

    allocations = []
    for _ in range(6):
        before = met.counter_value("CpuProgramAllocations") or 0
        step()
        allocations.append((met.counter_value("CpuProgramAllocations") or 0) - before)
    # The first step compiles and fills the arena; the second still sees the
    # first step's outputs alive (they are its parameters); from the third
    # on, every output reuses a buffer whose holder has let go.
    assert allocations[0] > 0
    assert allocations[2:] == [0, 0, 0, 0], allocations


def test_a_value_whose_last_reader_is_a_fused_kernel_is_written_over_in_place():
    rng = np.random.default_rng(10)
    a = rng.standard_normal((8, 16)).astype(np.float32) * 0.1

    def run():
        y = lazyscope.tensor(a, device=DEV).cumsum(1)  # a table kernel: y is written to the arena
        return (y.exp() * 3.0).cumsum(0)                # exp * 3 is y's last reader

    got, program = program_of(run)
    np.testing.assert_allclose(got, np.cumsum(np.exp(np.cumsum(a, 1)) * 3, 0), rtol=1e-5, atol=1e-6)
    y = re.search(r"^  %(\d+) = cumsum\(%\d+\)", program, re.M).group(1)
    assert re.search(rf"^      ; nodes .*writes %\d+ at arena offset \d+ \(in place over %{y}\)", program, re.M), program


def test_a_reshape_is_a_view_and_its_readers_keep_its_source_from_being_written_over():
    # r is a view of y's bytes. exp(y) is y's last direct reader but not the
    # last reader of its bytes: r is read after it, so exp(y) must not be
    # written over y (r would then read exp(y)).
    rng = np.random.default_rng(11)
    a = rng.standard_normal((8, 8)).astype(np.float32) * 0.1
    w = rng.standard_normal((16, 3)).astype(np.float32)

    def run():
        y = lazyscope.tensor(a, device=DEV).cumsum(0)
        r = y.reshape(4, 16)
        scale = y.exp().sum()
        return r @ (lazyscope.tensor(w, device=DEV) * scale)

    got, program = program_of(run)
    y = np.cumsum(a, 0)
    np.testing.assert_allclose(got, y.reshape(4, 16) @ (w * np.exp(y).sum()), rtol=1e-4, atol=1e-5)
    view = re.search(r"^  %(\d+) = reshape\(%(\d+)\).*\n^      ; nodes \d+, a view of %\2 \(no kernel, no bytes\)",
                     program, re.M)
    assert view, program
    assert not re.search(rf"\(in place over %{view.group(2)}\)", program), program


def test_a_contiguous_slice_is_a_view_and_its_readers_keep_its_source_from_being_written_over():
    # rows 2:4 of y are y's bytes from byte 2 * 16 * 4; exp(y) is y's last
    # direct reader, the slice's reader comes after it.
    rng = np.random.default_rng(13)
    a = rng.standard_normal((8, 16)).astype(np.float32) * 0.1
    w = rng.standard_normal((16, 3)).astype(np.float32)

    def run():
        y = lazyscope.tensor(a, device=DEV).cumsum(0)
        rows = y[2:4]
        scale = y.exp().sum()
        return rows @ (lazyscope.tensor(w, device=DEV) * scale)

    got, program = program_of(run)
    y = np.cumsum(a, 0)
    np.testing.assert_allclose(got, y[2:4] @ (w * np.exp(y).sum()), rtol=1e-4, atol=1e-5)
    view = re.search(r"^  %\d+ = slice\(%(\d+)\).*\n^      ; nodes \d+, a view of %\1 from byte 128 \(no kernel",
                     program, re.M)
    assert view, program
    assert not re.search(rf"\(in place over %{view.group(1)}\)", program), program


def test_a_reshape_of_a_parameter_keeps_the_parameter_from_being_donated_before_it_is_read():
    # The update of w is w's last direct reader, but the view `flat` of w's
    # bytes is read after it (by a kernel that needs the update's sum): the
    # update must not be written over w's buffer.
    rng = np.random.default_rng(12)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    v = rng.standard_normal((6, 4)).astype(np.float32)
    w = lazyscope.tensor(a, device=DEV)
    lm.mark_step()
    x = lazyscope.tensor(v, device=DEV)
    flat = w.reshape(6, 4)
    w = w - 0.5 * w.exp()  # rebinds w: the old value dies with the step, a donor
    got = flat * (w.sum() + x.sum())
    del flat  # not returned: a view, not a copy
    with capture_events() as events:
        lm.mark_step()
    program = events.of("compile")[-1]["program_text"]
    assert re.search(r"a view of %\d+ \(no kernel, no bytes\)", program), program
    new_w = a - 0.5 * np.exp(a)
    np.testing.assert_allclose(w.numpy(), new_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.numpy(), a.reshape(6, 4) * (new_w.sum() + v.sum()), rtol=1e-5, atol=1e-5)


def test_views_and_in_place_writes_can_be_turned_off(build_dir):
    # LAZYSCOPE_ALIAS_VALUES=0 (the A/B switch of benchmarks/memory_plan.py):
    # reshapes copy, nothing is written in place, results are the same.
    script = r"""
import numpy as np, lazyscope
from runtime_util import run_graph
a = np.arange(32, dtype=np.float32).reshape(4, 8) / 10
def run():
    y = lazyscope.tensor(a, device="lazy:0").cumsum(1)
    return (y.exp() * 3.0).reshape(8, 4).cumsum(0)
got, program = run_graph(run, require_compile=True)
np.testing.assert_allclose(got, np.cumsum((np.exp(np.cumsum(a, 1)) * 3).reshape(8, 4), 0), rtol=1e-5)
print(program)
"""
    listings = {}
    for flag in ("0", "1"):
        env = dict(os.environ, LAZYSCOPE_ALIAS_VALUES=flag,
                   PYTHONPATH=os.pathsep.join([str(build_dir / "python"), os.path.dirname(__file__)]))
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        listings[flag] = out.stdout
    assert ", 0 written in place, 0 reshapes and slices as views;" in listings["0"], listings["0"]
    assert ", 1 written in place, 1 reshapes and slices as views;" in listings["1"], listings["1"]


@pytest.mark.parametrize("threads", ["1", "2", "3"])
def test_results_do_not_depend_on_the_thread_count(threads, build_dir):
    script = r"""
import numpy as np, lazyscope
rng = np.random.default_rng(9)
a = rng.standard_normal((300, 200)).astype(np.float32)
b = rng.standard_normal((200, 150)).astype(np.float32)
x, y = lazyscope.tensor(a, device="lazy:0"), lazyscope.tensor(b, device="lazy:0")
got = ((x @ y).tanh() * 2.0 + 1.0).numpy()
np.testing.assert_allclose(got, np.tanh(a @ b) * 2 + 1, rtol=1e-4, atol=1e-4)
big = lazyscope.tensor(np.full(100000, 3, dtype=np.int64), device="lazy:0")
try:
    (big ** lazyscope.tensor(np.full(100000, -1, dtype=np.int64), device="lazy:0")).numpy()
except Exception as e:
    assert "negative integer powers" in str(e), e
else:
    raise AssertionError("no error from a parallel kernel")
print("ok")
"""
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS=threads, PYTHONPATH=str(build_dir / "python"))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_sampled_kernel_profiles_and_the_machine_peaks_are_published():
    rng = np.random.default_rng(10)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    x = lazyscope.tensor(a, device=DEV)
    lm.mark_step()
    with capture_events() as events:
        for _ in range(5):
            y = ((x @ x) * 2.0 + 1.0).relu().sum()
            lm.mark_step()
            y.numpy()
        compiles = events.of("compile")
        profiles = events.of("kernel_profile")
        peaks = events.of("machine_peak")
    assert len(compiles) == 1
    graph = compiles[0]["graph"]
    # Sampled: the first 4 executions, then every 64th — not all 5.
    assert [int(p["executions"]) for p in profiles] == [1, 2, 3, 4], profiles
    # The first execution's timings (one-time set-up included) stand alone
    # until the second's replace them; then the later ones add up.
    assert [int(p["kernels"][0]["samples"]) for p in profiles] == [1, 1, 2, 3], profiles
    last = profiles[-1]
    assert int(last["peak_bytes"]) > 0
    kernels = last["kernels"]
    names = [k["name"] for k in kernels]
    assert names == ["gemm", "sum"], names
    # The elementwise chain reading the product is the GEMM's epilogue.
    gemm = kernels[0]
    ops = {n["id"]: n["op"] for n in graph["nodes"]}
    assert sorted(ops[n].lower() for n in gemm["nodes"]) == ["add", "matmul", "mul", "relu"], (gemm, ops)
    assert all(int(k["samples"]) == 3 and int(k["total_ns"]) > 0 for k in kernels), kernels
    [peak] = peaks
    assert float(peak["gemm_gflops"]) > 0.1 and float(peak["stream_gbps"]) > 0.1 and peak["isa"], peak
    # The cache roof: a triad over half the largest cache cpu0 has, as sysfs lists it.
    llc = last_level_cache_bytes()
    assert int(peak.get("cache_bytes", 0)) == llc // 2, (peak, llc)
    assert (float(peak.get("cache_gbps", 0)) > 0.1) == (llc > 0), peak


def last_level_cache_bytes():
    """The size of cpu0's highest data or unified cache level, read here
    independently of the engine; 0 where sysfs does not list it."""
    best = (0, 0)
    for index in range(8):
        d = f"/sys/devices/system/cpu/cpu0/cache/index{index}/"
        try:
            level = int(open(d + "level").read())
            kind = open(d + "type").read().strip()
            size = open(d + "size").read().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        scale = {"K": 1 << 10, "M": 1 << 20}.get(size[-1], 1)
        value = int(size.rstrip("KM")) * scale
        if level >= best[0]:
            best = (level, value)
    return best[1]


def test_a_forked_child_runs_parallel_kernels_without_the_parents_threads(build_dir):
    script = r"""
import os, numpy as np, lazyscope
a = np.arange(200000, dtype=np.float32)
x = lazyscope.tensor(a, device="lazy:0")
(x * 2.0).numpy()  # the pool is up in the parent
pid = os.fork()
if pid == 0:
    got = (lazyscope.tensor(a, device="lazy:0") * 3.0 + 1.0).numpy()
    os._exit(0 if np.array_equal(got, a * np.float32(3) + np.float32(1)) else 1)
_, status = os.waitpid(pid, 0)
assert os.WEXITSTATUS(status) == 0, status
print("ok")
"""
    env = dict(os.environ, LAZYSCOPE_NUM_THREADS="2", PYTHONPATH=str(build_dir / "python"))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


@pytest.mark.parametrize("isa", ["x86-64", "avx2", "avx512f"])
def test_every_instruction_set_of_the_fused_kernels_matches_numpy(isa, build_dir):
    script = r"""
import sys, numpy as np, lazyscope
sys.path.insert(0, sys.argv[1])
from runtime_util import capture_events
from lazyscope.core import lazy_model as lm
rng = np.random.default_rng(11)
a = rng.standard_normal((33, 517)).astype(np.float32)   # tiles end mid-row
b = rng.standard_normal(517).astype(np.float32)
with capture_events() as events:
    x, y = lazyscope.tensor(a, device="lazy:0"), lazyscope.tensor(b, device="lazy:0")
    z = (lazyscope.maximum(x * y - 0.25, -x).exp() / (x.abs() + 1.0)).sigmoid()
    lm.mark_step()
got = z.numpy()
want = 1 / (1 + np.exp(-(np.exp(np.maximum(a * b - np.float32(0.25), -a)) / (np.abs(a) + 1))))
np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
print(events.of("compile")[-1]["program_text"])
"""
    env = dict(os.environ, LAZYSCOPE_CPU_ISA=isa, PYTHONPATH=str(build_dir / "python"))
    here = os.path.dirname(__file__)
    out = subprocess.run([sys.executable, "-c", script, here], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    used = re.search(r"ops, ([\w-]+) tiles", out.stdout)
    assert used, out.stdout
    # The setting is a limit: the CPU may lack what it allows.
    order = ["x86-64", "avx2", "avx512f"]
    assert order.index(used.group(1)) <= order.index(isa), out.stdout
    if isa == "x86-64":
        assert used.group(1) == "x86-64"


@pytest.mark.parametrize("isa", ["x86-64", "avx2", "avx512f"])
def test_short_softmax_rows_match_numpy_on_every_instruction_set(isa, build_dir):
    # Rows under 32 floats take their exponentials a block of rows at a time
    # (softmax_short_rows): blocks end mid-batch (512 / 10 = 51 rows), rows
    # with -inf, +inf, NaN and huge values fall inside and across them.
    script = r"""
import numpy as np, lazyscope
rng = np.random.default_rng(5)
for n in (1, 3, 10, 17, 31):
    a = (rng.standard_normal((157, n)) * 20).astype(np.float32)
    a[0, 0] = -np.inf
    a[50, :] = -np.inf        # a fully masked row: NaN
    a[51, -1] = np.inf        # +inf: NaN where inf - inf
    a[52, 0] = np.nan         # NaN spreads over its row
    a[-1, :] += np.float32(5000)
    x = lazyscope.tensor(a, device="lazy:0")
    sm, lsm = x.softmax(-1).numpy(), x.log_softmax(-1).numpy()
    d = a.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        m = np.where(np.isinf(np.nanmax(d, axis=1, keepdims=True)), 0.0, np.nanmax(d, axis=1, keepdims=True))
        shifted = d - m
        log_s = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        want_sm, want_lsm = np.exp(shifted) / np.exp(log_s), shifted - log_s
    np.testing.assert_allclose(sm, want_sm, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(lsm, want_lsm, rtol=1e-5, atol=1e-5)
print("ok")
"""
    env = dict(os.environ, LAZYSCOPE_CPU_ISA=isa, PYTHONPATH=str(build_dir / "python"))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_an_unknown_instruction_set_is_refused_naming_the_setting(build_dir):
    script = r"""
import numpy as np, lazyscope
from lazyscope.core import lazy_model as lm
x = lazyscope.tensor(np.ones(8, np.float32), device="lazy:0")
try:
    ((x * 2.0) + 1.0).numpy()
except Exception as e:
    print("refused:", e)
"""
    env = dict(os.environ, LAZYSCOPE_CPU_ISA="sse9", PYTHONPATH=str(build_dir / "python"))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert "refused:" in out.stdout and "LAZYSCOPE_CPU_ISA" in out.stdout and "sse9" in out.stdout, (out.stdout, out.stderr)


def test_reductions_split_across_threads_match_numpy(build_dir):
    # Big enough to be split across the pool (and the same with one thread).
    script = r"""
import numpy as np, lazyscope
rng = np.random.default_rng(12)
a = rng.standard_normal((3000, 70)).astype(np.float32)
x = lazyscope.tensor(a, device="lazy:0")
np.testing.assert_allclose(x.sum(dim=0).numpy(), a.astype(np.float64).sum(0), rtol=1e-5, atol=1e-4)
np.testing.assert_allclose(x.amax(dim=1).numpy(), a.max(1))
np.testing.assert_array_equal(x.argmin(dim=1).numpy(), a.argmin(1))
print("ok")
"""
    for threads in ("1", "2"):
        env = dict(os.environ, LAZYSCOPE_NUM_THREADS=threads, PYTHONPATH=str(build_dir / "python"))
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_convolution_kernels_report_their_multiply_adds():
    # FLOPs written out here, independently of the engine: 2 per (output
    # position, weight element of one output channel), for the forward pass
    # and for each of its two backward ops (the same products).
    import lazyscope.nn.functional as F
    rng = np.random.default_rng(11)
    n, c, h, w, o, k = 2, 3, 10, 9, 4, 3
    x = lazyscope.tensor(rng.standard_normal((n, c, h, w)).astype(np.float32), device=DEV, requires_grad=True)
    wt = lazyscope.tensor(rng.standard_normal((o, c, k, k)).astype(np.float32), device=DEV, requires_grad=True)
    lm.mark_step()
    with capture_events() as events:
        loss = F.conv2d(x, wt).sum()  # kept alive, so the forward conv is in the step's graph
        loss.backward()
        lm.mark_step()
        profiles = events.of("kernel_profile")
    expected = 2 * n * o * (h - k + 1) * (w - k + 1) * c * k * k
    flops = {}
    for kernel in profiles[-1]["kernels"]:
        if kernel["name"].startswith("conv2d"):
            flops.setdefault(kernel["name"], set()).add(int(kernel["flops"]))
    assert flops == {"conv2d": {expected}, "conv2d_backward_input": {expected},
                     "conv2d_backward_weight": {expected}}, flops


def test_a_matmul_reading_transposed_operands_reports_its_multiply_adds():
    # x.t() @ y and x @ y.t() become BLAS transpose flags; their FLOPs are
    # still 2 m n k, written out here.
    rng = np.random.default_rng(12)
    m, k, n = 24, 40, 8
    a = lazyscope.tensor(rng.standard_normal((k, m)).astype(np.float32), device=DEV)
    b = lazyscope.tensor(rng.standard_normal((n, k)).astype(np.float32), device=DEV)
    lm.mark_step()
    with capture_events() as events:
        out = a.t() @ b.t()
        lm.mark_step()
        profiles = events.of("kernel_profile")
    np.testing.assert_allclose(out.numpy(), a.numpy().T @ b.numpy().T, rtol=1e-5, atol=1e-5)
    gemms = [int(kern["flops"]) for kern in profiles[-1]["kernels"] if kern["name"] == "gemm"]
    assert gemms == [2 * m * n * k], gemms


@pytest.mark.parametrize("shape", [(2, 3, 8, 12), (1, 2, 7, 9)])  # odd sizes: a row and a column no window covers
def test_a_2x2_max_pool_backward_is_written_over_the_input_it_reads_last(shape):
    # h = cumsum(x) is saved by the pool and read last by its backward, which
    # the plan writes over h's bytes (windows do not overlap: each is read
    # whole before its results are written). NumPy's gradient is the oracle.
    from lazyscope.nn import functional as F

    rng = np.random.default_rng(12)
    a = rng.permutation(np.prod(shape)).reshape(shape).astype(np.float32) / 7.0  # no ties within a window
    n, c, h, w = shape
    g = rng.standard_normal((n, c, h // 2, w // 2)).astype(np.float32)

    def run():
        x = lazyscope.tensor(a, device=DEV, requires_grad=True)
        hx = x.cumsum(3)
        (F.max_pool2d(hx, 2) * lazyscope.tensor(g, device=DEV)).sum().backward()
        return x.grad

    got, program = program_of(run)
    hx = np.cumsum(a, 3)
    dh = np.zeros_like(hx)
    for i in range(h // 2):
        for j in range(w // 2):
            win = hx[:, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2].reshape(n, c, 4)
            k = win.argmax(axis=2)
            for di in range(2):
                for dj in range(2):
                    dh[:, :, 2 * i + di, 2 * j + dj] = np.where(k == 2 * di + dj, g[:, :, i, j], 0)
    want = np.flip(np.cumsum(np.flip(dh, 3), 3), 3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # the backward's result at the saved input's offset, in place over it
    assert re.search(r"^  %\d+ = max_pool2d_backward\(%\d+, %(\d+)\).*\n.*\(in place over %\1\)$", program, re.M), program
