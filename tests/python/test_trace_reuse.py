"""Trace replay (issue 11, LAZYSCOPE_REUSE_IR): an op traced from Python like
the previous step's op at its place (same op, attributes, source line and
scope, on the very same operand nodes) gets that step's IR node. The graphs,
their hashes, source lines and values must be those of fresh nodes."""
import inspect

import numpy as np

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from lazyscope.debug import metrics as met
from runtime_util import capture_events
from test_tracing import graph_lines

DEVICE = "lazy:0"
rng = np.random.default_rng(11)
X = rng.standard_normal((8, 6)).astype(np.float32)
W1 = rng.standard_normal((6, 5)).astype(np.float32)
B1 = rng.standard_normal(5).astype(np.float32)
W2 = rng.standard_normal((5, 3)).astype(np.float32)


def forward(x, w1, b1, w2):
    h = (x @ w1 + b1).relu()
    return (h @ w2).softmax(1)


def forward_elsewhere(x, w1, b1, w2):
    h = (x @ w1 + b1).relu()
    return (h @ w2).softmax(1)


def oracle():
    h = np.maximum(X @ W1 + B1, 0)
    z = h @ W2
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def run_steps(reuse, steps=4):
    """Values, executed graph hashes and nodes made per step of an
    inference loop over constant inputs (every op on the direct path)."""
    _C.set_reuse_ir_nodes(reuse)
    try:
        lm.mark_step()
        inputs = [lazyscope.tensor(a, device=DEVICE) for a in (X, W1, B1, W2)]
        outputs, hashes, made = [], [], []
        with capture_events() as events:
            for _ in range(steps):
                before = met.counter_value("CreatedIrNodes") or 0
                outputs.append(forward(*inputs))
                made.append((met.counter_value("CreatedIrNodes") or 0) - before)
                lm.mark_step()
        hashes = [e["graph_hash"] for e in events.of("execute")]
        return [o.numpy() for o in outputs], hashes, made
    finally:
        _C.set_reuse_ir_nodes(True)


def test_reused_nodes_give_the_graph_and_values_of_fresh_ones():
    reused_before = met.counter_value("ReusedIrNodes") or 0
    values, hashes, made = run_steps(reuse=True)
    assert (met.counter_value("ReusedIrNodes") or 0) - reused_before == 3 * 5
    fresh_values, fresh_hashes, fresh_made = run_steps(reuse=False)
    assert made[0] == 5 and made[1:] == [0, 0, 0], made  # matmul, add, relu, matmul, softmax
    assert fresh_made == [5, 5, 5, 5], fresh_made
    assert len(hashes) == 4 and len(set(hashes)) == 1
    assert hashes == fresh_hashes
    for got in values + fresh_values:  # read after every step ran
        np.testing.assert_allclose(got, oracle(), rtol=1e-5, atol=1e-6)


def test_the_same_ops_from_another_line_are_nodes_of_that_line():
    # forward and forward_elsewhere trace the same ops from other lines, in
    # turn: no step may show the other function's lines.
    inputs = [lazyscope.tensor(a, device=DEVICE) for a in (X, W1, B1, W2)]
    lm.mark_step()
    for fn in (forward, forward_elsewhere, forward, forward, forward_elsewhere):
        first = inspect.getsourcelines(fn)[1]
        out = fn(*inputs)
        lines = [line for _, line, _ in graph_lines(out)]
        assert lines == [f"test_trace_reuse.py:{first + 1}"] * 3 + [f"test_trace_reuse.py:{first + 2}"] * 2, lines
        lm.mark_step()
        np.testing.assert_allclose(out.numpy(), oracle(), rtol=1e-5, atol=1e-6)


def test_a_new_input_each_step_is_traced_afresh_and_right():
    # A new batch each step (a new leaf): nothing downstream of it is reused.
    w = [lazyscope.tensor(a, device=DEVICE) for a in (W1, B1, W2)]
    lm.mark_step()
    for step in range(3):
        batch = X * (step + 1)
        out = forward(lazyscope.tensor(batch, device=DEVICE), *w)
        lm.mark_step()
        h = np.maximum(batch @ W1 + B1, 0)
        z = h @ W2
        e = np.exp(z - z.max(1, keepdims=True))
        np.testing.assert_allclose(out.numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
