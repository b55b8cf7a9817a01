"""End to end: `lazyscope run --nproc-per-node N` (and --nnodes over
loopback) trains with worker processes whose all_reduce goes through Gloo,
records every rank into one run, and fails clearly (a rank killed, a rank
that never arrives, a port in use, mismatched world sizes), keeping in the
history what was recorded. Parameters are checked against a NumPy oracle of
data-parallel SGD, and for bitwise equality across ranks and with thread
replicas on the same data. Every launch is bounded by a timeout."""
import hashlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import textwrap
import time

import numpy as np
import pytest

FAILED, INTERRUPTED = 3, 4

MLP_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import lazyscope
    from lazyscope import nn, optim
    from lazyscope.core import lazy_model as lm
    from lazyscope.distributed import lazy_multiprocessing as xmp

    out_dir, steps = sys.argv[1], int(sys.argv[2])

    def data(rank, step):
        rng = np.random.default_rng(1000 * step + rank)
        return rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)

    def initial():
        rng = np.random.default_rng(7)
        return [rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((16, 6), (16,), (3, 16), (3,))]

    def train(index):
        device = lm.lazy_device()
        rank = lm.get_ordinal()
        model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
        with lazyscope.no_grad():
            for p, v in zip(model.parameters(), initial()):
                p.copy_(lazyscope.from_numpy(v).to(device))
        opt = optim.SGD(model.parameters(), lr=0.1)
        for step in range(steps):
            x, y = data(rank, step)
            opt.zero_grad()
            out = model(lazyscope.from_numpy(x).to(device))
            loss = nn.functional.mse_loss(out, lazyscope.from_numpy(y).to(device))
            loss.backward()
            lm.optimizer_step(opt)
            lm.mark_step()
        np.savez(f"{out_dir}/rank{rank}.npz", *[p.detach().cpu().numpy() for p in model.parameters()])
        lm.master_print(f"trained {steps} steps on {lm.xrt_world_size()} replicas")
        if len(sys.argv) > 3:
            print(f"node {sys.argv[3]}: local ordinal {lm.get_local_ordinal()}, local master "
                  f"{lm.is_master_ordinal()}, global master {lm.is_master_ordinal(local=False)}")

    xmp.spawn(train, nprocs=None)
""")

# Rank 1 dies (SIGKILL, no goodbye) at step 3; rank 0 would train forever.
DYING_SCRIPT = textwrap.dedent("""
    import os, signal
    import lazyscope
    from lazyscope import nn, optim
    from lazyscope.core import lazy_model as lm
    import lazyscope.distributed as dist

    dist.init_process_group()
    device = lm.lazy_device()
    model = nn.Linear(4, 2).to(device)
    opt = optim.SGD(model.parameters(), lr=0.1)
    step = 0
    while True:
        if dist.get_rank() == 1 and step == 3:
            print(f"rank 1 dies at step {step}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        opt.zero_grad()
        model(lazyscope.ones(2, 4, device=device)).sum().backward()
        lm.optimizer_step(opt)
        lm.mark_step()
        step += 1
""")

ABSENT_SCRIPT = textwrap.dedent("""
    import os, sys
    import lazyscope.distributed as dist
    if os.environ["LAZYSCOPE_RANK"] == "1":
        print("rank 1 leaves without joining")
        sys.exit(0)
    dist.init_process_group()
""")

LOOPING_SCRIPT = textwrap.dedent("""
    import time
    import lazyscope.distributed as dist
    dist.init_process_group()
    print(f"rank {dist.get_rank()} looping", flush=True)
    while True:
        time.sleep(0.05)
""")

API_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import lazyscope
    from lazyscope.core import lazy_model as lm
    import lazyscope.distributed as dist

    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    device = lm.lazy_device()
    mine = np.arange(6, dtype=np.float32).reshape(2, 3) * (rank + 1) + rank / 7
    t = lazyscope.from_numpy(mine).to(device)
    dist.all_reduce(t)
    b = lazyscope.from_numpy(mine).to(device)
    dist.broadcast(b, src=world - 1)
    gathered = [lazyscope.zeros(2, 3, device=device) for _ in range(world)]
    dist.all_gather(gathered, lazyscope.from_numpy(mine).to(device))
    scattered = lazyscope.zeros(3, device=device)
    dist.reduce_scatter(scattered, [lazyscope.from_numpy(mine[0] + r).to(device) for r in range(world)])
    mx = lazyscope.from_numpy(mine).to(device)
    dist.all_reduce(mx, op=dist.ReduceOp.MAX)
    lm.mark_step()
    dist.barrier()
    mesh = lm.mesh_reduce("total", float(rank + 1), sum)
    np.savez(f"{sys.argv[1]}/api{rank}.npz", all_reduce=t.cpu().numpy(), broadcast=b.cpu().numpy(),
             all_gather=np.stack([g.cpu().numpy() for g in gathered]), reduce_scatter=scattered.cpu().numpy(),
             max=mx.cpu().numpy(), mesh=np.array(mesh), ordinal=np.array(lm.get_ordinal()),
             local=np.array(lm.get_local_ordinal()), master=np.array(lm.is_master_ordinal()),
             world=np.array(lm.xrt_world_size()))
""")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def lazyscope(build_dir, *args, env=None, timeout=120):
    return subprocess.run([str(build_dir / "bin" / "lazyscope"), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


def query(history, sql, *params):
    with sqlite3.connect(history) as db:
        return db.execute(sql, params).fetchall()


def oracle(world, steps):
    """Data-parallel SGD on the MLP in float64 NumPy: each rank's gradient of
    its own batch's MSE, averaged over ranks, then p -= 0.1 * grad."""
    rng = np.random.default_rng(7)
    w1, b1, w2, b2 = [rng.standard_normal(s).astype(np.float32).astype(np.float64) * 0.5
                      for s in ((16, 6), (16,), (3, 16), (3,))]
    for step in range(steps):
        grads = []
        for rank in range(world):
            r = np.random.default_rng(1000 * step + rank)
            x = r.standard_normal((8, 6)).astype(np.float32).astype(np.float64)
            y = r.standard_normal((8, 3)).astype(np.float32).astype(np.float64)
            h_pre = x @ w1.T + b1
            h = np.maximum(h_pre, 0)
            out = h @ w2.T + b2
            d_out = 2 * (out - y) / out.size
            gw2, gb2 = d_out.T @ h, d_out.sum(0)
            d_h = (d_out @ w2) * (h_pre > 0)
            gw1, gb1 = d_h.T @ x, d_h.sum(0)
            grads.append((gw1, gb1, gw2, gb2))
        mean = [sum(g[i] for g in grads) / world for i in range(4)]
        w1, b1, w2, b2 = [p - 0.1 * g for p, g in zip((w1, b1, w2, b2), mean)]
    return [w1, b1, w2, b2]


def load(path):
    with np.load(path) as f:
        return [f[f"arr_{i}"] for i in range(4)]


def train_both_ways(build_dir, tmp_path, world, steps=5):
    script = tmp_path / "mlp.py"
    script.write_text(MLP_SCRIPT)
    procs, threads = tmp_path / "procs", tmp_path / "threads"
    procs.mkdir()
    threads.mkdir()
    history = tmp_path / "h.sqlite"
    result = lazyscope(build_dir, "run", "--nproc-per-node", world, "--history", history, script, procs, steps)
    assert result.returncode == 0, result.stderr
    assert f"[rank 0] trained {steps} steps on {world} replicas" in result.stdout
    result = lazyscope(build_dir, "run", "--devices", world, "--quiet", "--history", history, script, threads, steps)
    assert result.returncode == 0, result.stderr
    return history, [load(procs / f"rank{r}.npz") for r in range(world)], \
        [load(threads / f"rank{r}.npz") for r in range(world)]


def check_parameters(by_process, by_thread, world, steps):
    expected = oracle(world, steps)
    for rank in range(world):
        for got, thread, want in zip(by_process[rank], by_thread[rank], expected):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
            assert np.array_equal(got.view(np.uint32), thread.view(np.uint32)), "processes and threads differ"
    for rank in range(1, world):
        for a, b in zip(by_process[0], by_process[rank]):
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"rank {rank} differs from rank 0"


def test_two_processes_train_the_mlp_like_thread_replicas_and_record_one_run(build_dir, tmp_path):
    history, by_process, by_thread = train_both_ways(build_dir, tmp_path, 2)
    check_parameters(by_process, by_thread, 2, 5)
    # One run (the first) with both ranks' steps and executions.
    run_id, status, device_count = query(history, "SELECT id, status, device_count FROM runs ORDER BY id")[0]
    assert device_count == 2
    (sha,), = query(history, "SELECT script_sha256 FROM runs WHERE id = ?", run_id)
    assert sha == hashlib.sha256(MLP_SCRIPT.encode()).hexdigest()
    steps = dict(query(history, "SELECT replica, COUNT(*) FROM steps WHERE run_id = ? GROUP BY replica", run_id))
    assert set(steps) == {0, 1} and steps[0] == steps[1] >= 5
    executed = query(history, "SELECT DISTINCT replica FROM executions WHERE run_id = ?", run_id)
    assert sorted(r for (r,) in executed) == [0, 1]
    output = "".join(t for (t,) in query(history, "SELECT text FROM output WHERE run_id = ?", run_id))
    assert "[rank 0] trained 5 steps on 2 replicas" in output
    # Each training step all-reduces the MLP's 16*6 + 16 + 3*16 + 3 float32 gradients.
    sent = query(history, "SELECT replica, step, collective_bytes, collective_ns FROM steps WHERE run_id = ? "
                          "AND step < 5 ORDER BY replica, step", run_id)
    assert [(r, s, b) for r, s, b, _ in sent] == [(r, s, 163 * 4) for r in (0, 1) for s in range(5)]
    assert all(ns > 0 for *_, ns in sent)
    shown = lazyscope(build_dir, "show", run_id, "--history", history)
    assert shown.returncode == 0, shown.stderr
    assert "\nreplicas:\n  0 " in shown.stdout and "\n  1 " in shown.stdout and "sent 0.00 MB" in shown.stdout


# Rank 1 computes 40 ms more in each of 6 steps (host work inside the step,
# before its barrier), so rank 0 waits for it in the all_reduce; after the
# loop both ranks end with two empty barriers (a loader's last), which are no
# steps. A step is a barrier that ran a graph: 6 steps per rank, wherever
# they are counted.
STRAGGLER_SCRIPT = textwrap.dedent("""
    import time
    import lazyscope
    from lazyscope import nn, optim
    from lazyscope.core import lazy_model as lm
    import lazyscope.distributed as dist

    dist.init_process_group()
    device = lm.lazy_device()
    model = nn.Linear(64, 64).to(device)
    opt = optim.SGD(model.parameters(), lr=0.01)
    for step in range(6):
        opt.zero_grad()
        model(lazyscope.ones(8, 64, device=device)).sum().backward()
        if dist.get_rank() == 1:
            time.sleep(0.04)
        lm.optimizer_step(opt)
        lm.mark_step()
    lm.mark_step()
    lm.mark_step()
""")


def test_steps_per_rank_agree_in_the_summary_the_per_rank_block_and_the_straggler_finding(build_dir, tmp_path):
    script = tmp_path / "straggler.py"
    script.write_text(STRAGGLER_SCRIPT)
    history = tmp_path / "h.sqlite"
    result = lazyscope(build_dir, "run", "--nproc-per-node", 2, "--quiet", "--history", history, script)
    assert result.returncode == 0, result.stderr
    # 8 barriers were recorded per rank: the two empty ones are in the history.
    barriers = dict(query(history, "SELECT replica, COUNT(*) FROM steps GROUP BY replica"))
    assert barriers == {0: 8, 1: 8}
    shown = lazyscope(build_dir, "show", "last", "--json", "--history", history)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert int(report["summary"]["steps"]) == 6
    replicas = report["replicas"]
    assert [r["replica"] for r in replicas] == [0, 1]
    assert [int(r["steps"]) for r in replicas] == [6, 6]
    # Each step all-reduces the 64*64 + 64 float32 gradients.
    assert [int(r["collective_bytes"]) for r in replicas] == [6 * (64 * 64 + 64) * 4] * 2
    # Rank 0 waits for rank 1 in the collectives: at least most of 6 * 40 ms.
    assert replicas[0]["collective_ms"] > 0.5 * 6 * 40 > replicas[1]["collective_ms"]
    assert replicas[0]["step_p50_ms"] >= 40 and replicas[1]["step_p50_ms"] >= 40
    straggler = [f for f in report["findings"] if f["rule"] == "replicas" and "straggler" in f["title"]]
    assert len(straggler) == 1, report["findings"]
    assert straggler[0]["title"].startswith("replica 1 is a straggler")
    assert int(straggler[0]["count"]) == 6 and int(straggler[0]["steps_affected"]) == 6
    assert "over 6 steps" in straggler[0]["detail"]
    text = lazyscope(build_dir, "show", "last", "--history", history).stdout
    assert "\nreplicas:\n  0         6 steps  median " in text and "\n  1         6 steps  median " in text
    assert "sent 0.10 MB" in text  # 6 * 16640 bytes


def test_the_distributed_example_shows_its_straggler(build_dir, repo_root, tmp_path):
    # scripts/examples/distributed_mlp.py: rank 0 evaluates inside every
    # fourth step; rank 1 waits for it in the all_reduce.
    history = tmp_path / "h.sqlite"
    result = lazyscope(build_dir, "run", "--nproc-per-node", 2, "--quiet", "--history", history,
                       repo_root / "scripts/examples/distributed_mlp.py")
    assert result.returncode == 0, result.stderr
    report = json.loads(lazyscope(build_dir, "show", "last", "--json", "--history", history).stdout)
    steps = int(report["summary"]["steps"])
    assert steps == 32 and [int(r["steps"]) for r in report["replicas"]] == [steps, steps]
    assert report["replicas"][1]["collective_ms"] > report["replicas"][0]["collective_ms"]
    titles = [f["title"] for f in report["findings"] if f["rule"] == "replicas"]
    assert any(t.startswith("replica 0 is a straggler") for t in titles), titles
    # The launcher ends as a one-process run does: the summary, the history,
    # the per-rank block and the diagnosis (it used to print one status line).
    out = result.stdout
    assert '\nlazyscope: run #1 "distributed_mlp" succeeded in ' in out, out[-2000:]
    assert f"\n  history      {history}\n" in out
    assert "\nreplicas:\n  0        32 steps  median " in out and "\n  1        32 steps  median " in out
    assert "\ndiagnosis:\n" in out and "replica 0 is a straggler" in out


def test_four_processes_train_the_mlp_like_thread_replicas(build_dir, tmp_path):
    _, by_process, by_thread = train_both_ways(build_dir, tmp_path, 4, steps=3)
    check_parameters(by_process, by_thread, 4, 3)


def test_two_nodes_as_two_launchers_on_loopback(build_dir, tmp_path):
    script = tmp_path / "mlp.py"
    script.write_text(MLP_SCRIPT)
    out = tmp_path / "out"
    out.mkdir()
    port = free_port()
    common = ["--nnodes", 2, "--nproc-per-node", 1, "--master-addr", "127.0.0.1", "--master-port", port]
    # Two "machines" that share no folder: each launcher has its own
    # rendezvous directory (an empty one, which only a file store would use),
    # so the workers can only meet in node 0's launcher's store over TCP.
    rdzv0, rdzv1 = tmp_path / "rdzv0", tmp_path / "rdzv1"
    node1 = subprocess.Popen([str(build_dir / "bin" / "lazyscope"), "run", *map(str, common), "--node-rank", "1",
                              "--history", str(tmp_path / "h1.sqlite"), str(script), str(out), "4", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, LAZYSCOPE_RDZV_DIR=str(rdzv1)))
    try:
        node0 = lazyscope(build_dir, "run", *common, "--node-rank", 0, "--history", tmp_path / "h0.sqlite", script,
                          out, 4, 0, env={"LAZYSCOPE_RDZV_DIR": str(rdzv0)})
        out1, err1 = node1.communicate(timeout=120)
    finally:
        node1.kill()
    assert node0.returncode == 0, node0.stderr
    assert node1.returncode == 0, err1
    assert not rdzv0.exists() and not rdzv1.exists()  # no file store was used
    expected = oracle(2, 4)
    ranks = [load(out / f"rank{r}.npz") for r in range(2)]
    for a, b, want in zip(ranks[0], ranks[1], expected):
        assert np.array_equal(a, b)
        np.testing.assert_allclose(a, want, rtol=1e-4, atol=1e-5)
    # The same job from one launcher (a file store) ends with the same bits.
    single = tmp_path / "single"
    single.mkdir()
    result = lazyscope(build_dir, "run", "--nproc-per-node", 2, "--quiet", "--history", tmp_path / "h2.sqlite",
                       script, single, 4)
    assert result.returncode == 0, result.stderr
    for rank in range(2):
        for a, b in zip(ranks[rank], load(single / f"rank{rank}.npz")):
            assert np.array_equal(a.view(np.uint32), b.view(np.uint32)), "two launchers and one differ"
    # Node 1's only worker is rank 1 and local rank 0: the master of its node.
    assert "[rank 1] node 1: local ordinal 0, local master True, global master False" in out1
    assert "[rank 0] node 0: local ordinal 0, local master True, global master True" in node0.stdout
    # Each launcher's summary says which node and ranks it holds.
    assert "\n  node         0 of 2, ranks 0..0 of 2 (merge the other nodes' bundles" in node0.stdout
    assert "\n  node         1 of 2, ranks 1..1 of 2 (merge the other nodes' bundles" in out1
    # Each node records its own ranks; node 1's bundle merges into node 0's run.
    assert query(tmp_path / "h0.sqlite", "SELECT DISTINCT replica FROM steps") == [(0,)]
    assert query(tmp_path / "h1.sqlite", "SELECT DISTINCT replica FROM steps") == [(1,)]
    bundle = tmp_path / "node1.bundle"
    assert lazyscope(build_dir, "export", "last", "--bundle", bundle, "--history", tmp_path / "h1.sqlite").returncode == 0
    merged = lazyscope(build_dir, "import", bundle, "--into", "last", "--history", tmp_path / "h0.sqlite")
    assert merged.returncode == 0, merged.stderr
    assert query(tmp_path / "h0.sqlite", "SELECT replica, COUNT(*) FROM steps GROUP BY replica") == [(0, 5), (1, 5)]
    assert query(tmp_path / "h0.sqlite", "SELECT COUNT(*), MAX(status) FROM runs") == [(1, 2)]
    output = "".join(t for (t,) in query(tmp_path / "h0.sqlite", "SELECT text FROM output ORDER BY seq"))
    assert "[rank 0] trained 4 steps" in output
    again = lazyscope(build_dir, "import", bundle, "--into", "last", "--history", tmp_path / "h0.sqlite")
    assert again.returncode == 1 and "already has steps of replica 1" in again.stderr


def test_a_worker_that_cannot_reach_node_0s_store_says_where_within_the_timeout(build_dir, tmp_path):
    # A worker told to meet at node 0's store (as the launcher tells it with
    # --master-addr/--master-port) where nobody listens.
    script = tmp_path / "join.py"
    script.write_text("import lazyscope.distributed as dist\ndist.init_process_group()\n")
    port = free_port()
    env = {"LAZYSCOPE_RANK": "1", "LAZYSCOPE_WORLD_SIZE": "2", "LAZYSCOPE_RDZV_DIR": f"tcp://127.0.0.1:{port}",
           "LAZYSCOPE_RDZV_ID": "job", "LAZYSCOPE_COLLECTIVE_TIMEOUT_S": "2"}
    started = time.monotonic()
    result = lazyscope(build_dir, "run", "--quiet", "--history", tmp_path / "h.sqlite", script, env=env, timeout=60)
    elapsed = time.monotonic() - started
    assert result.returncode == 1
    assert (f"rank 1 of 2 cannot reach the rendezvous store of node 0's launcher at 127.0.0.1:{port} "
            f"(Connection refused) within 2 s") in result.stderr, result.stderr
    assert "--master-addr and --master-port" in result.stderr
    assert elapsed < 30


def test_the_process_group_api_matches_numpy(build_dir, tmp_path):
    script = tmp_path / "api.py"
    script.write_text(API_SCRIPT)
    result = lazyscope(build_dir, "run", "--nproc-per-node", 3, "--history", tmp_path / "h.sqlite", script, tmp_path)
    assert result.returncode == 0, result.stderr
    world = 3
    mine = [np.arange(6, dtype=np.float32).reshape(2, 3) * (r + 1) + np.float32(r / 7) for r in range(world)]
    for rank in range(world):
        with np.load(tmp_path / f"api{rank}.npz") as got:
            np.testing.assert_allclose(got["all_reduce"], mine[0].astype(np.float64) + mine[1] + mine[2], rtol=1e-6)
            np.testing.assert_array_equal(got["broadcast"], mine[world - 1])
            np.testing.assert_array_equal(got["all_gather"], np.stack(mine))
            np.testing.assert_allclose(got["reduce_scatter"], sum(mine[r][0] + rank for r in range(world)), rtol=1e-6)
            np.testing.assert_array_equal(got["max"], np.maximum.reduce(mine))
            assert float(got["mesh"]) == 6.0
            assert int(got["ordinal"]) == rank and int(got["world"]) == world
            assert int(got["local"]) == rank and bool(got["master"]) == (rank == 0)


THREADS_SCRIPT = textwrap.dedent("""
    import os, sys
    import lazyscope
    rank = os.environ["LAZYSCOPE_RANK"]
    with open(os.path.join(sys.argv[1], "threads" + rank), "w") as f:
        f.write(f"{lazyscope.get_num_threads()} {os.environ.get('LAZYSCOPE_NUM_THREADS')}")
""")


def test_each_worker_gets_its_share_of_the_cores_unless_the_user_set_the_threads(build_dir, tmp_path):
    script = tmp_path / "threads.py"
    script.write_text(THREADS_SCRIPT)
    cores = len(os.sched_getaffinity(0))
    env = {k: v for k, v in os.environ.items() if k != "LAZYSCOPE_NUM_THREADS"}
    result = subprocess.run([str(build_dir / "bin" / "lazyscope"), "run", "--nproc-per-node", "2", "--history",
                             str(tmp_path / "h.sqlite"), str(script), str(tmp_path)],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    share = max(1, cores // 2)
    assert f"{share} thread(s) each" in result.stderr
    for rank in range(2):
        assert (tmp_path / f"threads{rank}").read_text() == f"{share} {share}"
    result = lazyscope(build_dir, "run", "--nproc-per-node", 2, "--history", tmp_path / "h2.sqlite", script,
                       tmp_path, env={"LAZYSCOPE_NUM_THREADS": "3"})
    assert result.returncode == 0, result.stderr
    for rank in range(2):
        assert (tmp_path / f"threads{rank}").read_text() == "3 3"
    with pytest.raises(NotImplementedError, match="LAZYSCOPE_NUM_THREADS=2"):
        import lazyscope as ls
        ls.set_num_threads(2)


def test_a_killed_rank_takes_the_job_down_naming_it_and_the_history_keeps_its_steps(build_dir, tmp_path):
    script = tmp_path / "dying.py"
    script.write_text(DYING_SCRIPT)
    history = tmp_path / "h.sqlite"
    started = time.monotonic()
    result = lazyscope(build_dir, "run", "--nproc-per-node", 2, "--history", history, script,
                       env={"LAZYSCOPE_WORKER_TIMEOUT_S": "5"})
    assert time.monotonic() - started < 60
    assert result.returncode == 128 + signal.SIGKILL
    assert "rank 1" in result.stderr and "killed by signal 9" in result.stderr
    assert "its last line: rank 1 dies at step 3" in result.stderr
    (status, error), = query(history, "SELECT status, error FROM runs")
    assert status == FAILED and "rank 1" in error and "rank 1 dies at step 3" in error
    steps = dict(query(history, "SELECT replica, COUNT(*) FROM steps GROUP BY replica"))
    assert steps.get(1, 0) >= 3 and steps.get(0, 0) >= 3


def test_a_rank_that_never_arrives_is_named(build_dir, tmp_path):
    script = tmp_path / "absent.py"
    script.write_text(ABSENT_SCRIPT)
    history = tmp_path / "h.sqlite"
    result = lazyscope(build_dir, "run", "--nproc-per-node", 2, "--history", history, script,
                       env={"LAZYSCOPE_COLLECTIVE_TIMEOUT_S": "2"})
    assert result.returncode == 1
    assert "rank(s) 1 never arrived within 2 s" in result.stderr
    (status, error), = query(history, "SELECT status, error FROM runs")
    assert status == FAILED and "rank 0" in error and "never arrived" in error
    output = "".join(t for (t,) in query(history, "SELECT text FROM output"))
    assert "[rank 1] rank 1 leaves without joining" in output


def test_a_node_that_never_arrives_is_named_and_recorded(build_dir, tmp_path):
    history = tmp_path / "h.sqlite"
    script = tmp_path / "absent.py"
    script.write_text(ABSENT_SCRIPT)
    result = lazyscope(build_dir, "run", "--nnodes", 2, "--nproc-per-node", 1, "--master-port", free_port(),
                       "--history", history, script, env={"LAZYSCOPE_COLLECTIVE_TIMEOUT_S": "2"})
    assert result.returncode == 2
    assert "node(s) 1 never arrived within 2 s" in result.stderr
    (status, error), = query(history, "SELECT status, error FROM runs")
    assert status == FAILED and "node(s) 1 never arrived" in error


MISMATCH_SCRIPT = textwrap.dedent("""
    import lazyscope
    from lazyscope.core import lazy_model as lm
    import lazyscope.distributed as dist
    dist.init_process_group()
    t = lazyscope.ones(2 + dist.get_rank(), device=lm.lazy_device())
    dist.all_reduce(t)
    lm.mark_step()
""")


def test_ranks_that_trace_different_collectives_get_an_error_naming_both(build_dir, tmp_path):
    script = tmp_path / "mismatch.py"
    script.write_text(MISMATCH_SCRIPT)
    result = lazyscope(build_dir, "run", "--nproc-per-node", 2, "--history", tmp_path / "h.sqlite", script)
    assert result.returncode == 1
    assert "the ranks disagree at collective #0" in result.stderr
    assert "brought float32[2]" in result.stderr and "a float32 tensor of 3 elements" in result.stderr


SIZES_SCRIPT = textwrap.dedent("""
    import lazyscope.distributed as dist
    from lazyscope import _C
    dist.init_process_group()
    try:
        _C.process_all_gather_bytes(b"x" * (1024 + 8 * dist.get_rank()))
    except Exception as e:
        print(f"refused: {e}")
""")


def test_host_exchanges_of_different_sizes_are_refused_not_aborted(build_dir, tmp_path):
    # Gloo itself aborts the process on a size mismatch; the sizes are compared first.
    script = tmp_path / "sizes.py"
    script.write_text(SIZES_SCRIPT)
    result = lazyscope(build_dir, "run", "--nproc-per-node", 2, "--history", tmp_path / "h.sqlite", script)
    assert result.returncode == 0, result.stderr
    assert "[rank 0] refused: all_gather: rank 0 brought 1024 bytes and rank 1 1032" in result.stdout
    assert "[rank 1] refused: all_gather: rank 1 brought 1032 bytes and rank 0 1024" in result.stdout


def test_a_port_in_use_is_a_clear_error(build_dir, tmp_path):
    script = tmp_path / "absent.py"
    script.write_text(ABSENT_SCRIPT)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = lazyscope(build_dir, "run", "--nproc-per-node", 1, "--master-port", port,
                           "--history", tmp_path / "h.sqlite", script)
    assert result.returncode == 2
    assert f"--master-port {port} on 127.0.0.1 is not free" in result.stderr


def test_mismatched_world_sizes_are_refused_on_both_nodes(build_dir, tmp_path):
    script = tmp_path / "absent.py"
    script.write_text(ABSENT_SCRIPT)
    port = free_port()
    node1 = subprocess.Popen([str(build_dir / "bin" / "lazyscope"), "run", "--nnodes", "2", "--node-rank", "1",
                              "--nproc-per-node", "1", "--master-port", str(port), "--history",
                              str(tmp_path / "h1.sqlite"), str(script)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        node0 = lazyscope(build_dir, "run", "--nnodes", 2, "--nproc-per-node", 2, "--master-port", port,
                          "--history", tmp_path / "h0.sqlite", script, env={"LAZYSCOPE_COLLECTIVE_TIMEOUT_S": "20"})
        _, err1 = node1.communicate(timeout=60)
    finally:
        node1.kill()
    message = "mismatched world sizes: node 1 was started with --nnodes 2 --nproc-per-node 1, node 0 with " \
              "--nnodes 2 --nproc-per-node 2"
    assert node0.returncode == 2 and message in node0.stderr
    assert node1.returncode == 2 and message in err1
    (status, error), = query(tmp_path / "h1.sqlite", "SELECT status, error FROM runs")
    assert status == FAILED and "mismatched world sizes" in error


@pytest.mark.parametrize("whole_group", [False, True], ids=["launcher-only", "terminal-group"])
def test_ctrl_c_stops_every_worker_and_records_the_run_as_interrupted(build_dir, tmp_path, whole_group):
    """SIGINT to the launcher alone, or to its whole process group as a
    terminal's Ctrl-C does (the workers get it too)."""
    script = tmp_path / "looping.py"
    script.write_text(LOOPING_SCRIPT)
    history = tmp_path / "h.sqlite"
    launcher = subprocess.Popen([str(build_dir / "bin" / "lazyscope"), "run", "--nproc-per-node", "2", "--history",
                                 str(history), str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    try:
        seen = set()
        deadline = time.monotonic() + 60
        while len(seen) < 2 and time.monotonic() < deadline:
            line = launcher.stdout.readline()
            for rank in (0, 1):
                if f"[rank {rank}] rank {rank} looping" in line:
                    seen.add(rank)
        assert seen == {0, 1}
        if whole_group:
            os.killpg(launcher.pid, signal.SIGINT)
        else:
            launcher.send_signal(signal.SIGINT)
        _, err = launcher.communicate(timeout=60)
    finally:
        launcher.kill()
    assert launcher.returncode == 130
    assert "stopping every worker" in err
    (status,), = query(history, "SELECT status FROM runs")
    assert status == INTERRUPTED
    output = "".join(t for (t,) in query(history, "SELECT text FROM output"))
    assert "[rank 1] rank 1 looping" in output


def test_a_killed_launcher_takes_its_workers_down(build_dir, tmp_path):
    script = tmp_path / "looping.py"
    script.write_text(LOOPING_SCRIPT)
    launcher = subprocess.Popen([str(build_dir / "bin" / "lazyscope"), "run", "--nproc-per-node", "2", "--history",
                                 str(tmp_path / "h.sqlite"), str(script)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 2 and time.monotonic() < deadline:
            seen += "looping" in launcher.stdout.readline()
        workers = subprocess.run(["pgrep", "-P", str(launcher.pid)], capture_output=True, text=True).stdout.split()
        assert len(workers) == 2
        launcher.kill()
        launcher.wait(timeout=10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") for pid in workers):
            time.sleep(0.1)
        # Reaped by init once they exit; a zombie's /proc entry has state Z.
        alive = [pid for pid in workers if os.path.exists(f"/proc/{pid}")
                 and " Z " not in open(f"/proc/{pid}/stat").read()]
        assert alive == []
    finally:
        launcher.kill()
