"""Graph dumps (text, DOT, protobuf) and the lowered program's cost estimates."""
import os
import re

import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from runtime_util import capture_events

THIS_FILE = os.path.basename(__file__)
NODE_LINE = re.compile(r"^  %(\d+) = (\w+)\(([^)]*)\)( parameter \d+)? : (\w+)\[([\d, ]*)\](.*)$")


@pytest.fixture(autouse=True)
def clean():
    lm.mark_step()
    _C.clear_compile_cache()


def traced():
    x = lazyscope.tensor(np.ones((2, 3), dtype=np.float32), device="lazy:0")
    w = lazyscope.tensor(np.ones((3, 4), dtype=np.float32), device="lazy:0")
    y = (x @ w).relu()  # traced-line
    return y.sum(dim=1)


def parse_text(text):
    lines = text.splitlines()
    header = re.match(r"graph 0x[0-9a-f]{16}: (\d+) nodes, (\d+) parameters", lines[0])
    assert header, lines[0]
    nodes = {}
    for line in lines[1:-1]:
        m = NODE_LINE.match(line)
        assert m, line
        operands = [int(o.strip().lstrip("%")) for o in m.group(3).split(",") if o.strip()]
        shape = [int(d) for d in m.group(6).split(",") if d.strip()]
        nodes[int(m.group(1))] = {"op": m.group(2), "operands": operands, "dtype": m.group(5), "shape": shape,
                                  "rest": m.group(7)}
    assert lines[-1].startswith("  outputs:")
    assert len(nodes) == int(header.group(1))
    return nodes, [int(o.lstrip("%")) for o in lines[-1].split()[1:]]


def test_text_dump_lists_every_node_with_spec_attrs_and_source_line():
    out = traced()
    nodes, outputs = parse_text(lazyscope.debug.dump_graph(out))
    ops = [n["op"] for n in nodes.values()]
    assert ops.count("device_data") == 2 and {"matmul", "relu", "sum"} <= set(ops)
    matmul = next(n for n in nodes.values() if n["op"] == "matmul")
    assert matmul["shape"] == [2, 4] and matmul["dtype"] == "float32"
    with open(__file__) as f:
        line = next(i for i, text in enumerate(f, 1) if "# traced-line" in text)
    assert f"at {THIS_FILE}:{line}" in matmul["rest"]
    total = next(n for n in nodes.values() if n["op"] == "sum")
    assert "dims=[1]" in total["rest"] and "keepdim=false" in total["rest"].lower()
    assert nodes[outputs[0]]["op"] == "sum"
    for n_id, n in nodes.items():
        assert all(o < n_id for o in n["operands"])  # post-order
    assert out.numpy().tolist() == [12.0, 12.0]


def test_dumping_does_not_execute():
    _C.reset_metrics()
    out = traced()
    lazyscope.debug.dump_graph(out, format="dot")
    assert lm.counters().get("ExecuteCount", 0) == 0


def test_dot_dump_has_a_box_per_node_and_an_edge_per_operand():
    out = traced()
    nodes, _ = parse_text(lazyscope.debug.dump_graph(out))
    dot = lazyscope.debug.dump_graph([out], format="dot")
    assert dot.startswith("digraph ") and dot.rstrip().endswith("}")
    boxes = re.findall(r"^  n(\d+) \[label=\"([^\"]*)\"", dot, re.M)
    edges = re.findall(r"^  n(\d+) -> n(\d+);$", dot, re.M)
    assert len(boxes) == len(nodes)
    assert sorted((int(a), int(b)) for a, b in edges) == sorted(
        (o, i) for i, n in nodes.items() for o in n["operands"])
    assert any(label.startswith("matmul\\nfloat32[2, 4]") for _, label in boxes)


def test_proto_dump_parses_back_to_the_same_graph():
    out = traced()
    data = lazyscope.debug.dump_graph(out, format="proto")
    assert isinstance(data, bytes) and len(data) > 0
    assert _C._graph_proto_to_text(data) == lazyscope.debug.dump_graph(out)


def test_bad_dump_requests_are_errors():
    out = traced()
    with pytest.raises(ValueError, match="format must be 'text', 'dot' or 'proto', got 'svg'"):
        lazyscope.debug.dump_graph(out, format="svg")
    with pytest.raises(RuntimeError, match="tensor 1 is on cpu"):
        lazyscope.debug.dump_graph([out, lazyscope.zeros(2)])


def test_program_text_estimates_flops_and_bytes_per_kernel_with_totals():
    with capture_events() as events:
        traced().numpy()
    [compile_event] = events.of("compile")
    program = compile_event["program_text"]
    kernels = re.findall(r"^  %\d+ = (\w+)\(.*\) : \w+\[[\d, ]*\]  (\d+) bytes  flops=(\d+) traffic=(\d+)$",
                         program, re.M)
    by_op = {op: (int(size), int(flops), int(traffic)) for op, size, flops, traffic in kernels}
    assert by_op["matmul"] == (32, 2 * 2 * 4 * 3, 24 + 48 + 32)  # 2*m*n*k; reads x and w, writes [2, 4]
    assert by_op["fused"] == (32, 8, 64)  # the relu: a one-step fused kernel (the matmul's epilogue)
    assert by_op["sum"] == (8, 8, 40)
    total = re.search(r"^total: flops=(\d+) traffic=(\d+) bytes", program, re.M)
    assert int(total.group(1)) == sum(f for _, f, _ in by_op.values())
    assert int(total.group(2)) == sum(t for _, _, t in by_op.values())
