"""End to end: every node of a recorded graph carries the op category the
engine's op table gives it, so the GUI colours graphs without a copy of the
op list (issue 10 §4). Checked on a real CNN run, whose graph has matrix
products, convolutions, pooling, reductions, layout ops and inputs."""
import json
import os
import subprocess

# The category each op must have, written here independently of the engine.
EXPECTED = {
    "device_data": "OP_CATEGORY_DATA", "add": "OP_CATEGORY_ELEMENTWISE", "relu": "OP_CATEGORY_ELEMENTWISE",
    "matmul": "OP_CATEGORY_MATMUL_CONV", "conv2d": "OP_CATEGORY_MATMUL_CONV",
    "conv2d_backward_weight": "OP_CATEGORY_MATMUL_CONV", "max_pool2d": "OP_CATEGORY_MATMUL_CONV",
    "max_pool2d_backward": "OP_CATEGORY_MATMUL_CONV", "log_softmax": "OP_CATEGORY_REDUCTION",
    "sum": "OP_CATEGORY_REDUCTION", "nll_loss": "OP_CATEGORY_REDUCTION", "reshape": "OP_CATEGORY_LAYOUT",
    "permute": "OP_CATEGORY_LAYOUT", "dropout_mask": "OP_CATEGORY_DATA",
}


def lazyscope(build_dir, history, *args):
    env = dict(os.environ, LAZYSCOPE_HISTORY=str(history))
    result = subprocess.run([str(build_dir / "bin" / "lazyscope"), *map(str, args)], env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_every_recorded_node_has_its_ops_category(build_dir, repo_root, tmp_path):
    history = tmp_path / "history.sqlite"
    lazyscope(build_dir, history, "run", "--quiet", repo_root / "scripts/examples/mnist_cnn.py", "--", "--steps", 2)
    graphs = json.loads(lazyscope(build_dir, history, "graphs", "last", "--json"))["graphs"]
    seen = {}
    for graph in graphs:
        ir = json.loads(lazyscope(build_dir, history, "graph", "last", graph["hash"], "--json"))
        for node in ir["nodes"]:
            category = node.get("category", "OP_CATEGORY_UNSPECIFIED")
            assert category != "OP_CATEGORY_UNSPECIFIED", f"{node['op']} was recorded without a category"
            seen.setdefault(node["op"], set()).add(category)
    checked = 0
    for op, categories in seen.items():
        assert len(categories) == 1, f"{op} recorded with several categories: {categories}"
        if op in EXPECTED:
            assert categories == {EXPECTED[op]}, op
            checked += 1
    assert checked >= 8, f"the CNN's graph lacks the ops this test checks: {sorted(seen)}"
