"""The benchmark models, written once against the torch.nn-shaped API of
either library (vs_pytorch.py trains them with PyTorch and LazyScope;
omp_wait_policy.py with LazyScope only, so nothing here imports torch), and
LazyTrainer: one of them training on lazy:0, the step the LazyScope-only
benchmarks time and profile."""
import ctypes
import ctypes.util
import json
import os
import re
import time
from pathlib import Path

import numpy as np


def setup_env(setup):
    """The environment of a child process for a set-up written
    BUILD[:VAR=VALUE...]: that build's engine library and Python package,
    and the variables given (cnn_kernels.py, xfmr_kernels.py)."""
    build, *assignments = setup.split(":")
    build = Path(build).resolve()
    env = dict(os.environ)
    env.update(a.split("=", 1) for a in assignments)
    env["LAZYSCOPE_BUILD_DIR"] = str(build)
    env["LD_LIBRARY_PATH"] = str(build / "lib") + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["PYTHONPATH"] = str(build / "python")
    return env


def openblas():
    """The OpenBLAS that NumPy, PyTorch and LazyScope share in this process
    (its thread count is process-wide), or None."""
    for name in ("openblas", "openblas64_", "blas"):
        path = ctypes.util.find_library(name)
        if not path:
            continue
        lib = ctypes.CDLL(path)
        if hasattr(lib, "openblas_set_num_threads"):
            return lib
    return None


def make_mlp(nn, F):
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(784, 512), nn.Linear(512, 256), nn.Linear(256, 10)

        def forward(self, x):
            return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))

    return MLP()


def make_cnn(nn, F):
    class Net(nn.Module):  # scripts/examples/mnist_cnn.py
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
            self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
            self.conv2_drop = nn.Dropout2d()
            self.fc1 = nn.Linear(320, 50)
            self.fc2 = nn.Linear(50, 10)

        def forward(self, x):
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
            x = F.relu(self.fc1(x.flatten(1)))
            x = F.dropout(x, training=self.training)
            return F.log_softmax(self.fc2(x), dim=1)

    return Net()


VOCAB, CTX, DIM, LAYERS, HEADS = 65, 64, 256, 4, 4


def make_transformer(nn, F):
    class Block(nn.Module):  # scripts/examples/char_transformer.py, scaled
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
            self.attn = nn.MultiheadAttention(DIM, num_heads=HEADS, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

        def forward(self, x, mask):
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.ln2(x))

    class CharLM(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(VOCAB, DIM)
            self.pos = nn.Embedding(CTX, DIM)
            self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln = nn.LayerNorm(DIM)
            self.head = nn.Linear(DIM, VOCAB)

        def forward(self, idx, positions, mask):
            x = self.tok(idx) + self.pos(positions)
            for block in self.blocks:
                x = block(x, mask)
            return self.head(self.ln(x))

    return CharLM()


def batches(model, rng, n=4):
    """A few synthetic batches (inputs, targets) as NumPy arrays, reused in turn."""
    out = []
    for _ in range(n):
        if model == "mlp":
            out.append((rng.standard_normal((128, 784), dtype=np.float32), rng.integers(0, 10, 128)))
        elif model == "cnn":
            out.append((rng.standard_normal((64, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, 64)))
        else:
            ids = rng.integers(0, VOCAB, (16, CTX + 1))
            out.append((ids[:, :-1].copy(), ids[:, 1:].copy()))
    return out


MAKERS = {"mlp": make_mlp, "cnn": make_cnn, "transformer": make_transformer}


class LazyTrainer:
    """A model of MAKERS training on lazy:0 with SGD + momentum (lr 0.01,
    momentum 0.9), seeded. `step(i)` runs batch i (mod the batches) and a
    barrier, and returns the loss. The batches are on the device once
    (upload_each_step=False) or uploaded again in every step, as a data
    loader would."""

    def __init__(self, model, upload_each_step=False):
        import lazyscope
        from lazyscope.core import lazy_model as lm

        self.lazyscope, self.lm = lazyscope, lm
        lazyscope.manual_seed(0)
        self.model, self.dev, self.F = model, lm.lazy_device(), lazyscope.nn.functional
        self.net = MAKERS[model](lazyscope.nn, self.F).to(self.dev)
        self.opt = lazyscope.optim.SGD(self.net.parameters(), lr=0.01, momentum=0.9)
        self.upload_each_step = upload_each_step
        self.data = batches(model, np.random.default_rng(0))
        if not upload_each_step:
            self.data = [self.upload(x, y) for x, y in self.data]
        self.extra = ()
        if model == "transformer":
            mask = np.triu(np.ones((CTX, CTX), dtype=bool), k=1)
            self.extra = (lazyscope.tensor(np.arange(CTX), device=self.dev), lazyscope.tensor(mask, device=self.dev))

    def upload(self, x, y):
        return self.lazyscope.tensor(x, device=self.dev), self.lazyscope.tensor(y, device=self.dev)

    def step(self, i):
        x, y = self.data[i % len(self.data)]
        if self.upload_each_step:
            x, y = self.upload(x, y)
        self.opt.zero_grad()
        if self.model == "transformer":
            loss = self.F.cross_entropy(self.net(x, *self.extra).reshape(-1, VOCAB), y.reshape(-1))
        elif self.model == "cnn":
            loss = self.F.nll_loss(self.net(x), y)
        else:
            loss = self.F.cross_entropy(self.net(x), y)
        loss.backward()
        self.lm.optimizer_step(self.opt, barrier=True)
        return loss.item()


LISTED = re.compile(r"^\s*%\d+ = (\w+)\(.*\) : (\w+)(\[[\d, ]*\])")
LISTED_NODES = re.compile(r"; nodes ([\d,]*)")
LISTED_STEPS = re.compile(r"(?:tiles|compiled|row kernel): ([^)]*)\)")


def kernel_labels(program_texts):
    """{IR nodes tuple: label} of every kernel of the program listings: the
    op, the fused ops in brackets, the output's dtype and shape, and
    ' epilogue' for a GEMM's (profiled with its GEMM)."""
    labels = {}
    for text in program_texts:
        lines = text.splitlines()
        for i, line in enumerate(lines[:-1]):
            hit, nodes = LISTED.match(line), LISTED_NODES.search(lines[i + 1])
            if not hit or not nodes:
                continue
            steps = LISTED_STEPS.search(lines[i + 1])
            label = hit.group(1) + (f"[{steps.group(1)}]" if steps else "") + f" {hit.group(2)}{hit.group(3)}"
            if "epilogue of the matmul" in lines[i + 1]:
                label += " epilogue"
            labels[tuple(int(x) for x in nodes.group(1).split(",") if x)] = label
    return labels


def kernel_times(step, warmup, steps):
    """Runs step(i) `warmup` then `steps` times with the engine's events
    captured. Returns the kernels of the step's graph (the one with the most
    kernels) as (kernel, microseconds per sampled execution over the timed
    steps) pairs, from the engine's own sampled profile (each kernel's
    "label" from the program listing, kernel_labels), and each timed step's
    seconds."""
    from lazyscope import _C

    capture = _C._EventCapture()

    def profile():
        latest = {}
        for text in capture.json():
            event = json.loads(text)
            if "kernel_profile" in event:
                latest[event["kernel_profile"]["graph_hash"]] = event["kernel_profile"]
        return max(latest.values(), key=lambda p: len(p["kernels"]))

    capture.start()
    try:
        for i in range(warmup):
            step(i)
        start = {k["index"]: k for k in profile()["kernels"]}
        times = []
        for i in range(steps):
            t = time.perf_counter()
            step(i)
            times.append(time.perf_counter() - t)
        end = profile()["kernels"]
        labels = kernel_labels(v["program_text"] for text in capture.json() for v in json.loads(text).values()
                               if isinstance(v, dict) and "program_text" in v)
    finally:
        capture.stop()
    rows = []
    for k in end:
        # A multi-tensor group lists every member's nodes: its first member's label.
        k["label"] = labels.get(tuple(k.get("nodes", [])), k["name"] + " (group)")
        k0 = start.get(k["index"], {"samples": 0, "total_ns": 0})
        samples = int(k["samples"]) - int(k0["samples"])
        rows.append((k, (int(k["total_ns"]) - int(k0["total_ns"])) / max(1, samples) / 1e3))
    return rows, times
