"""End to end: the graph node limit counts graph nodes, not op results
(issue 15 item 9). A chain of `x + 1e-6` adds two nodes per op (the sum and
the scalar's leaf); counted per op it was cut into graphs of twice the limit."""
import os
import sqlite3
import subprocess
import textwrap

import numpy as np

LIMIT = 1000
OPS = 4500

CHAIN = textwrap.dedent(f"""
    import lazyscope
    from lazyscope.core import lazy_model as lm
    x = lazyscope.zeros(4, device='lazy:0')
    for i in range({OPS}):
        x = x + 1e-6
    lm.mark_step()
    print("RESULT", repr(float(x.sum().item())))
""")


def test_a_chain_is_cut_into_graphs_within_the_node_limit(build_dir, tmp_path):
    history = tmp_path / "h.sqlite"
    script = tmp_path / "chain.py"
    script.write_text(CHAIN)
    env = dict(os.environ, LAZYSCOPE_GRAPH_NODE_LIMIT=str(LIMIT))
    result = subprocess.run([str(build_dir / "bin" / "lazyscope"), "run", script, "--history", history, "--quiet"],
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(history) as db:
        nodes = [n for (n,) in db.execute("SELECT node_count FROM executions ORDER BY start_ns")]
    # The node that crosses the limit is in the graph it cuts: at most one over.
    assert max(nodes) <= LIMIT + 1, nodes
    # About 2 * OPS nodes in all: cut about 2 * OPS / LIMIT times, near the limit.
    assert len([n for n in nodes if n >= LIMIT * 0.9]) >= 2 * OPS // LIMIT, nodes
    # The value is what NumPy computes for the same chain in float32.
    expected = np.zeros(4, dtype=np.float32)
    for _ in range(OPS):
        expected = expected + np.float32(1e-6)
    value = float(result.stdout.split("RESULT ")[1].split()[0])
    assert abs(value - float(expected.sum())) <= 1e-6, (value, expected.sum())
