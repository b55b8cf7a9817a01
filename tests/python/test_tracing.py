"""Tracing from Python (issue 11): the source line and scope each IR node
records survive the front end's caches (per code object, per instruction),
and a program's graph hash does not depend on the process."""
import inspect
import os
import re
import subprocess
import sys
import textwrap

import numpy as np

import lazyscope
from lazyscope import _C, nn

DEVICE = "lazy:0"


def graph_lines(tensor):
    """(op, file:line, scope) of every computed node of the pending graph of `tensor`."""
    out = []
    for row in _C.dump_graph([tensor], "text").splitlines()[1:]:
        m = re.match(r"\s+%\d+ = (\w+)\(.*?\)(?: parameter \d+)? : \S+(?: .*?)?(?:  scope (\S+))?  at (\S+)$", row)
        if m and m.group(1) != "device_data":
            out.append((m.group(1), m.group(3), m.group(2)))
    return out


def three_ops(x):
    a = x + x
    b = a.relu()
    return b * b


def test_each_node_records_its_own_line_on_every_call():
    first = inspect.getsourcelines(three_ops)[1]
    expected = [("add", f"test_tracing.py:{first + 1}", None),
                ("relu", f"test_tracing.py:{first + 2}", None),
                ("mul", f"test_tracing.py:{first + 3}", None)]
    x = lazyscope.tensor(np.ones(3, dtype=np.float32), device=DEVICE)
    # The second and third calls read the caches the first one filled.
    for _ in range(3):
        y = three_ops(x)
        assert graph_lines(y) == expected
        lazyscope.core.lazy_model.mark_step()


def test_two_functions_keep_their_own_lines():
    def f(x):
        return x + x

    def g(x):
        return x * x

    x = lazyscope.tensor(np.ones(3, dtype=np.float32), device=DEVICE)
    for _ in range(2):
        assert graph_lines(f(x)) == [("add", f"test_tracing.py:{f.__code__.co_firstlineno + 1}", None)]
        assert graph_lines(g(x)) == [("mul", f"test_tracing.py:{g.__code__.co_firstlineno + 1}", None)]
        lazyscope.core.lazy_model.mark_step()


def test_ops_inside_the_package_record_the_users_line_and_the_modules_scope():
    lazyscope.manual_seed(0)
    layer = nn.Linear(4, 2).to(DEVICE)
    x = lazyscope.tensor(np.ones((3, 4), dtype=np.float32), device=DEVICE)
    for _ in range(2):
        line = inspect.currentframe().f_lineno + 1
        y = layer(x)
        rows = graph_lines(y)
        assert rows, "the Linear layer traced no computed node"
        for op, where, scope in rows:
            assert where == f"test_tracing.py:{line}", (op, where)
            assert scope == "Linear", (op, scope)
        lazyscope.core.lazy_model.mark_step()


PROGRAM = textwrap.dedent("""
    import sys
    import numpy as np
    import lazyscope
    from lazyscope import _C, nn
    lazyscope.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to("lazy:0")
    opt = lazyscope.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = lazyscope.tensor(np.ones((5, 8), dtype=np.float32), device="lazy:0")
    y = lazyscope.tensor(np.arange(5) % 4, device="lazy:0")
    garbage = [lazyscope.tensor(np.ones(int(sys.argv[1]), dtype=np.float32)) for _ in range(int(sys.argv[1]))]
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(_C.dump_graph([loss] + [p for p in model.parameters()], "text").splitlines()[0])
""")


def test_the_graph_hash_of_a_program_is_the_same_in_every_process():
    # Different allocation histories (argv) move every node to other
    # addresses: the hash must come from the graph alone.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    heads = {subprocess.run([sys.executable, "-c", PROGRAM, n], env=env, capture_output=True, text=True,
                            check=True).stdout.strip() for n in ("1", "300")}
    assert len(heads) == 1, heads
    assert re.match(r"graph 0x[0-9a-f]{16}: \d+ nodes", heads.pop())


def test_a_90000_node_chain_is_traced_run_and_freed_on_a_thread_with_a_1_mib_stack(build_dir):
    # A node releasing the operand it owns last released that operand's
    # operands from inside its own destructor: a chain of N nodes was N
    # nested destructors, and 90,000 overflowed a 1 MiB stack (SIGSEGV).
    # In a child process, so that a crash is this test's failure.
    script = """
import threading
import numpy as np
import lazyscope
from lazyscope.core import lazy_model as lm
result = {}
def body():
    y = lazyscope.ones(4, device=lm.lazy_device())
    for i in range(90000):
        y = y * 1.0001 if i % 2 else y + 0.5
    result["value"] = y.numpy().copy()
    del y  # the whole chain's nodes die here
    result["freed"] = True
threading.stack_size(1 << 20)
t = threading.Thread(target=body)
t.start()
t.join()
v = np.float32(1)
for i in range(90000):
    v = v * np.float32(1.0001) if i % 2 else v + np.float32(0.5)
np.testing.assert_allclose(result["value"], np.full(4, v, np.float32), rtol=1e-5)
assert result["freed"]
print("ok")
"""
    env = dict(os.environ, PYTHONPATH=str(build_dir / "python"))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "ok" in out.stdout, (out.returncode, out.stderr[-2000:])
