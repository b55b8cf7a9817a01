"""Trace replay (LAZYSCOPE_REUSE_IR) seen from the history: a run whose steps
reuse the previous step's nodes records the very compilations (graph hashes,
reasons, call sites) and executions (hashes, causes, cache hits, node counts)
that the same run with every node built afresh records; steps of different
lengths and values read mid-step included."""
import os
import sqlite3
import subprocess
import textwrap

SCRIPT = textwrap.dedent("""
    import os
    import lazyscope
    from lazyscope.core import lazy_model as lm
    from lazyscope.debug import metrics as met
    w = lazyscope.randn(8, 8, device='lazy:0')
    x = lazyscope.randn(4, 8, device='lazy:0')
    for step, n in enumerate([2, 2, 3, 2, 2, 1, 2, 2, 3, 3]):
        y = x
        for _ in range(n):
            y = (y @ w).tanh()
        if step % 3 == 2:
            y.sum().item()
        lm.mark_step()
    reused = met.counter_value("ReusedIrNodes") or 0
    assert (reused > 0) == (os.environ["LAZYSCOPE_REUSE_IR"] == "1"), reused
""")


def recorded(history):
    with sqlite3.connect(history) as db:
        compiles = db.execute("SELECT step, graph_hash, reason_kind, reason, compared_with, source_line FROM "
                              "compilations ORDER BY id").fetchall()
        runs = db.execute("SELECT step, graph_hash, cause, cache_hit, node_count, source_line FROM executions "
                          "ORDER BY id").fetchall()
    return compiles, runs


def test_reused_nodes_record_the_history_of_fresh_ones(build_dir, tmp_path):
    script = tmp_path / "reuse.py"
    script.write_text(SCRIPT)
    histories = {}
    for reuse in ("1", "0"):
        history = tmp_path / f"history{reuse}.sqlite"
        env = dict(os.environ, LAZYSCOPE_HISTORY=str(history), LAZYSCOPE_REUSE_IR=reuse)
        proc = subprocess.run([str(build_dir / "bin" / "lazyscope"), "run", "--name", "reuse" + reuse, str(script)],
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        histories[reuse] = recorded(history)
    compiles, runs = histories["1"]
    assert histories["1"] == histories["0"]
    # three graphs (chains of 1, 2, 3 products), each compiled once, the
    # steps read mid-way adding their partial graphs
    assert len({c[1] for c in compiles}) == len(compiles) >= 3, compiles
    assert len(runs) >= 10 and sum(r[3] for r in runs) == len(runs) - len(compiles), runs
