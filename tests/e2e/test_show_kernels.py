"""End to end: `lazyscope show RUN --kernels` on a real recorded run whose
kernel profile and machine peaks are written into the history file as the
recorder stores them (rows built here, independently of the engine): the
table and the JSON join each kernel with the run's stored IR (op names and
source lines), sort by total time and rate against the roofline; a run with
no profile says why."""
import json
import os
import sqlite3
import subprocess

import pytest


def lazyscope(build_dir, history, *args):
    env = dict(os.environ, LAZYSCOPE_HISTORY=str(history))
    return subprocess.run([str(build_dir / "bin" / "lazyscope"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=300)


def ok(result):
    assert result.returncode == 0, result.stderr
    return result.stdout


def signed(hash64):
    """Graph hashes are stored as the int64 with the same bits."""
    return hash64 - (1 << 64) if hash64 >= 1 << 63 else hash64


@pytest.fixture
def profiled(build_dir, repo_root, tmp_path):
    history = tmp_path / "history.sqlite"
    example = repo_root / "scripts/examples/linear_regression.py"
    ok(lazyscope(build_dir, history, "run", "--name", "lr", example, "--", "--steps", 6))
    ok(lazyscope(build_dir, history, "run", "--name", "eager", "--device", "cpu", example, "--", "--steps", 2))
    [graph] = json.loads(ok(lazyscope(build_dir, history, "graphs", "lr", "--json")))["graphs"]
    ir = json.loads(ok(lazyscope(build_dir, history, "graph", "lr", graph["hash"], "--json")))
    nodes = {n["op"]: n for n in ir["nodes"]}
    matmul, mul = nodes["matmul"], nodes["mul"]
    h = signed(int(graph["hash"], 16))
    with sqlite3.connect(history) as db:
        # Whatever the engine recorded is replaced by figures whose results are known.
        db.execute("DELETE FROM kernel_profile_kernels WHERE run_id = 1")
        db.execute("DELETE FROM kernel_profiles WHERE run_id = 1")
        db.execute("DELETE FROM machine_peaks WHERE run_id = 1")
        db.execute("INSERT INTO machine_peaks (run_id, replica, gemm_gflops, stream_gbps, threads, isa) "
                   "VALUES (1, 0, 100.0, 20.0, 2, 'avx2')")
        db.execute("INSERT INTO kernel_profiles VALUES (1, 0, ?, 5, 6, 4096)", (h,))
        # gemm: 3 timed calls of 100 us; 2e6 FLOP and 40 kB each -> 20 GFLOP/s, 1/5 of its roof.
        db.execute("INSERT INTO kernel_profile_kernels VALUES (1, 0, ?, 0, 'gemm', ?, 2000000, 40000, 3, 300000, '')",
                   (h, json.dumps([matmul.get("id", 0)])))
        # fused: 2 timed calls of 400 us; no FLOPs, 1 MB each -> 2.5 GB/s, 1/8 of the bandwidth;
        # run on the interpreter's tiles.
        db.execute("INSERT INTO kernel_profile_kernels "
                   "VALUES (1, 0, ?, 1, 'fused_elementwise', ?, 0, 1000000, 2, 800000, 'avx2 tiles')",
                   (h, json.dumps([mul.get("id", 0)])))
    return history, matmul, mul


def test_show_kernels_json_joins_the_ir_and_rates_each_kernel(build_dir, profiled):
    history, matmul, mul = profiled
    report = json.loads(ok(lazyscope(build_dir, history, "show", "lr", "--kernels", "--json")))
    assert report["peaks"]["isa"] == "avx2"
    fused, gemm = report["kernels"]  # by total time: 6 x 400 us before 6 x 100 us
    assert fused["name"] == "fused_elementwise" and gemm["name"] == "gemm"
    assert int(fused["calls"]) == 6 and int(fused["samples"]) == 2
    assert fused["total_ms"] == pytest.approx(2.4)
    assert gemm["total_ms"] == pytest.approx(0.6)
    assert gemm["gflops"] == pytest.approx(20.0)
    assert gemm["roofline_fraction"] == pytest.approx(0.2)
    assert fused["gbps"] == pytest.approx(2.5)
    assert fused["roofline_fraction"] == pytest.approx(0.125)
    assert fused["share"] == pytest.approx(0.8)
    [node] = gemm["nodes"]
    assert node["op"] == "matmul"
    assert node["source"] == matmul["source"] and node["source"]["file"].endswith("linear_regression.py")
    assert fused["nodes"][0]["op"] == "mul"
    assert fused["code"] == "avx2 tiles" and gemm.get("code", "") == ""  # a library kernel


def test_show_kernels_table(build_dir, profiled):
    history, matmul, _ = profiled
    text = ok(lazyscope(build_dir, history, "show", "lr", "--kernels"))
    assert "kernels: 2 in 1 profiled graph(s), 3.0 ms of kernel time, memory-plan peak 4.1 kB" in text
    assert "machine peaks: 100.0 GFLOP/s (SGEMM), 20.0 GB/s (STREAM triad), 2 thread(s), avx2" in text
    rows = [line for line in text.splitlines() if "fused_elementwise" in line or " gemm " in line]
    assert "fused_elementwise (interpreted)" in rows[0] and "gemm" in rows[1]  # sorted by total time
    assert "20%" in rows[1] and f"matmul (linear_regression.py:{matmul['source']['line']})" in rows[1]


def test_a_run_without_a_profile_says_why(build_dir, profiled):
    history, _, _ = profiled
    text = ok(lazyscope(build_dir, history, "show", "eager", "--kernels"))
    assert text.startswith("no kernel profile: This run executed no compiled graph")
    report = json.loads(ok(lazyscope(build_dir, history, "show", "eager", "--kernels", "--json")))
    assert report["kernels"] == [] and "ran eagerly" in report["missing_reason"]


def test_a_graph_timed_only_on_its_first_call_is_marked(build_dir, repo_root, tmp_path):
    # A real recording: one step, so every graph ran once and its kernels were
    # timed on that first call, one-time set-up included.
    history = tmp_path / "history.sqlite"
    example = repo_root / "scripts/examples/linear_regression.py"
    ok(lazyscope(build_dir, history, "run", "--name", "once", example, "--", "--steps", 1))
    report = json.loads(ok(lazyscope(build_dir, history, "show", "once", "--kernels", "--json")))
    once = [k for k in report["kernels"] if int(k["calls"]) == 1]
    assert once and all(k.get("firstCallOnly", k.get("first_call_only")) for k in once), report["kernels"]
    text = ok(lazyscope(build_dir, history, "show", "once", "--kernels"))
    assert "* timed on the graph's first and only call, which includes one-time set-up" in text
    # A graph that ran again was timed on its later calls: no mark.
    ok(lazyscope(build_dir, history, "run", "--name", "six", example, "--", "--steps", 6))
    report = json.loads(ok(lazyscope(build_dir, history, "show", "six", "--kernels", "--json")))
    repeated = [k for k in report["kernels"] if int(k["calls"]) > 1]
    assert repeated and not any(k.get("firstCallOnly", k.get("first_call_only")) for k in repeated), repeated
