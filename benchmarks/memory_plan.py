"""The memory plan of a training step against its live-set lower bound (issue 11).

Compiles the training steps of the MLP, the CNN and the transformer of
bench_models.py (the models vs_pytorch.py times: SGD with momentum,
optimizer_step with a barrier) on `lazy:0` and prints, per model, the
plan's peak bytes, the live-set lower bound and their ratio (target: at
most 1.2x).

The plan's peak, from the compiled program (the `compile` event of the
graph the last step ran: a warm step, momentum buffers included):
    graph inputs   every leaf buffer the step is given: weights, momentum
                   buffers, the batch and its targets, scalars
  + arena          the executable's block (`arena N` on the listing's
                   `memory:` line)
  + outputs        buffers the program writes and returns (`outputs N`):
                   new weights and momentum buffers, gradients, the loss
  - donated        outputs written over a parameter's buffer (the listing's
                   `in place:` pairs, each output and each parameter once,
                   first come, as the executable takes them when every
                   donor is free, which the benchmark's steps are)
Parameters are held by the caller for the whole step and outputs live from
their kernel to the end of it, so this is every byte the step holds at
its fullest.

The live-set lower bound, from the step's IR graph: each node is a phase by
the line of this script that traced it (the backward is the line calling
`loss.backward()`, the update the line calling `optimizer_step`, everything
else, the model's own lines included, is forward). Values are counted at
their storage: a reshape, permute, expand or slice is followed back to the
value it lays out, and each such root counted once (the models' only
slices are of parameters: the attention's q, k, v weights and biases cut
from its in_proj parameters, which count as those parameters).
    parameters          leaves read by the forward and by the update
  + gradients           backward values the update reads
  + optimizer state     non-scalar leaves only the update reads (momentum)
  + saved activations   forward values (the batch included) the backward
                        reads, other than the parameters
No program of the step can hold less: the first three live across the
whole step and the activations from the forward into the backward.

    LAZYSCOPE_BUILD_DIR=$PWD/build/release /usr/bin/python3 benchmarks/memory_plan.py [--models mlp,cnn,transformer]

--time-ab N also times the steps with views and in-place writes on (the
default) and off (LAZYSCOPE_ALIAS_VALUES=0: reshapes and contiguous slices
copied, no output written over an operand), a process per set-up,
alternated N rounds (A B A B ...), and prints each set-up's plan and the
median of its per-process median step times.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(os.environ.get("LAZYSCOPE_BUILD_DIR", ROOT / "build" / "release")) / "python"))

import lazyscope  # noqa: E402
from lazyscope import _C  # noqa: E402
from lazyscope.core import lazy_model as lm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models import CTX, MAKERS, VOCAB, batches  # noqa: E402

F = lazyscope.nn.functional
DTYPE_BYTES = {"bool": 1, "uint8": 1, "int32": 4, "int64": 8, "float16": 2, "bfloat16": 2, "float32": 4,
               "float64": 8}
LAYOUT_OPS = {"reshape", "permute", "expand", "slice"}


class Trainer:
    def __init__(self, model):
        lazyscope.manual_seed(0)
        self.model, self.dev = model, lm.lazy_device()
        self.net = MAKERS[model](lazyscope.nn, F).to(self.dev)
        self.opt = lazyscope.optim.SGD(self.net.parameters(), lr=0.01, momentum=0.9)
        self.data, self.i = batches(model, np.random.default_rng(0)), 0
        if model == "transformer":
            mask = np.triu(np.ones((CTX, CTX), dtype=bool), k=1)
            self.extra = (lazyscope.tensor(np.arange(CTX), device=self.dev), lazyscope.tensor(mask, device=self.dev))

    # The phases are told apart by the line that traced them: keep the
    # backward and the update each on a line of its own (BACKWARD, UPDATE).
    def step(self):
        x, y = self.data[self.i % len(self.data)]
        self.i += 1
        x, y = lazyscope.tensor(x, device=self.dev), lazyscope.tensor(y, device=self.dev)
        self.opt.zero_grad()
        if self.model == "transformer":
            loss = F.cross_entropy(self.net(x, *self.extra).reshape(-1, VOCAB), y.reshape(-1))
        elif self.model == "cnn":
            loss = F.nll_loss(self.net(x), y)
        else:
            loss = F.cross_entropy(self.net(x), y)
        loss.backward()  # BACKWARD
        lm.optimizer_step(self.opt, barrier=True)  # UPDATE
        return loss.item()


def line_of(marker):
    for number, text in enumerate(Path(__file__).read_text().splitlines(), 1):
        if text.rstrip().endswith(f"# {marker}") and "def " not in text:
            return number
    raise RuntimeError(f"no line marked {marker}")


def nbytes(node):
    n = 1
    for d in node.get("shape", []):
        n *= int(d)
    return n * DTYPE_BYTES[node["dtype"]]


def lower_bound(graph):
    nodes = graph["nodes"]
    here, backward, update = str(Path(__file__).resolve()), line_of("BACKWARD"), line_of("UPDATE")

    def phase(node):
        src = node.get("source", {})
        if src.get("file") == here and src.get("line") == backward:
            return "backward"
        if src.get("file") == here and src.get("line") == update:
            return "update"
        return "forward"

    def root(i):  # the value a chain of layout ops lays out
        while nodes[i]["op"] in LAYOUT_OPS:
            i = nodes[i]["operands"][0]
        return i

    leaf = [n["op"] == "device_data" for n in nodes]
    readers = [set() for _ in nodes]  # phases reading each root
    for n in nodes:
        if leaf[n["id"]] or n["op"] in LAYOUT_OPS:
            continue
        for o in n.get("operands", []):
            readers[root(o)].add(phase(n))
    params = {i for i, n in enumerate(nodes) if leaf[i] and {"forward", "update"} <= readers[i]}
    state = {i for i, n in enumerate(nodes)
             if leaf[i] and readers[i] == {"update"} and n.get("shape") and i not in params}
    grads = {i for i, n in enumerate(nodes) if not leaf[i] and phase(n) == "backward" and "update" in readers[i]}
    saved = {i for i, n in enumerate(nodes)
             if i not in params and (leaf[i] or phase(n) == "forward") and "backward" in readers[i]}
    parts = {name: sum(nbytes(nodes[i]) for i in ids)
             for name, ids in (("parameters", params), ("gradients", grads), ("optimizer state", state),
                               ("saved activations", saved))}
    return parts, sum(parts.values())


def plan_peak(graph, program):
    nodes = graph["nodes"]
    inputs = sum(nbytes(n) for n in nodes if n["op"] == "device_data")
    memory = re.search(r"^memory: peak=\d+ bytes \(arena (\d+) .*?outputs (\d+)", program, re.M)
    if not memory:
        raise RuntimeError("no memory line in the program listing:\n" + program)
    arena, outputs = int(memory.group(1)), int(memory.group(2))
    donated, taken_out, taken_param = 0, set(), set()
    pairs = re.search(r"^in place:(.*)\(when donated\)$", program, re.M)
    for out, param in re.findall(r"%(\d+) over parameter (\d+)", pairs.group(1) if pairs else ""):
        if out not in taken_out and param not in taken_param:
            taken_out.add(out)
            taken_param.add(param)
            donated += nbytes(nodes[int(out)])
    parts = {"graph inputs": inputs, "arena": arena, "outputs": outputs, "donated": -donated}
    return parts, sum(parts.values())


def train_and_find_program(trainer, steps):
    """Trains `steps` steps and returns the (graph, program text) of the
    compile behind the last execution: the training step's program."""
    capture = _C._EventCapture()
    capture.start()
    try:
        for _ in range(steps):
            trainer.step()
    finally:
        capture.stop()
    events = [json.loads(text) for text in capture.json()]
    last = [e["execute"] for e in events if "execute" in e][-1]
    [compile_event] = [e["compile"] for e in events
                       if "compile" in e and e["compile"]["graph_hash"] == last["graph_hash"]]
    return compile_event["graph"], compile_event["program_text"]


def measure(model, steps):
    return train_and_find_program(Trainer(model), steps)


def child(model, warmup, steps):
    """One process of --time-ab: the plan's figures and its median step time."""
    trainer = Trainer(model)
    graph, program = train_and_find_program(trainer, warmup)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        trainer.step()
        times.append((time.perf_counter() - t) * 1e3)
    _, peak = plan_peak(graph, program)
    _, bound = lower_bound(graph)
    print(json.dumps({"ms": statistics.median(times), "peak": peak, "bound": bound}))


def time_ab(model, rounds, warmup, steps):
    setups = (("views and in place (now)", "1"), ("copies, none in place", "0"))
    runs = {name: [] for name, _ in setups}
    for _ in range(rounds):
        for name, flag in setups:  # A B A B ...
            env = dict(os.environ, LAZYSCOPE_ALIAS_VALUES=flag)
            out = subprocess.run([sys.executable, __file__, "--child", model, "--warmup", str(warmup),
                                  "--timed-steps", str(steps)], env=env, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"  {model}: {rounds} processes per set-up, {steps} timed steps each after {warmup}")
    medians = {}
    for name, _ in setups:
        r = runs[name]
        medians[name] = statistics.median(x["ms"] for x in r)
        per_process = ", ".join(f"{x['ms']:.2f}" for x in r)
        print(f"    {name:26s} peak / bound {r[0]['peak'] / r[0]['bound']:.3f}x, step "
              f"{medians[name]:8.2f} ms (per process: {per_process})")
    off, on = (medians[name] for name, _ in setups[::-1])
    print(f"    copies / views step time: {off / on:.3f}x")


def mib(b):
    return f"{b / 2**20:8.3f} MiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,cnn,transformer")
    parser.add_argument("--steps", type=int, default=4, help="steps run; the last one's graph is measured")
    parser.add_argument("--program", action="store_true", help="also print each program's listing")
    parser.add_argument("--time-ab", type=int, default=0, metavar="N",
                        help="also time the steps with views and in-place writes on and off, N alternated rounds")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timed-steps", type=int, default=20)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.warmup, args.timed_steps)
        return
    for model in args.models.split(","):
        graph, program = measure(model, args.steps)
        bound_parts, bound = lower_bound(graph)
        peak_parts, peak = plan_peak(graph, program)
        print(f"{model}: {len(graph['nodes'])} IR nodes")
        print(f"  plan peak        {mib(peak)}  (" +
              ", ".join(f"{k} {v / 2**20:.3f}" for k, v in peak_parts.items()) + " MiB)")
        print(f"  live-set bound   {mib(bound)}  (" +
              ", ".join(f"{k} {v / 2**20:.3f}" for k, v in bound_parts.items()) + " MiB)")
        print(f"  peak / bound     {peak / bound:8.3f}x  (target <= 1.2x)")
        line = re.search(r"^memory: .*$", program, re.M)
        print(f"  listing: {line.group(0) if line else '(none)'}")
        if args.program:
            print(program)
        if args.time_ab:
            time_ab(model, args.time_ab, args.warmup, args.timed_steps)


if __name__ == "__main__":
    main()
