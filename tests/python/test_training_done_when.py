"""The engine's done-when checks, as training loops on lazy:0: an MLP and a
CNN learn synthetic MNIST and, after the first step, every step is a cache
hit; a changing batch size costs one uncached compile per new shape, with
reason kind "shape"; nonzero in the loop is a counted fallback at its line."""
import numpy as np
import pytest

import lazyscope
from lazyscope import _C, nn, optim
from lazyscope.core import lazy_model as lm
from lazyscope.datasets import SyntheticMNIST
from lazyscope.nn import functional as F
from lazyscope.utils.data import DataLoader
from runtime_util import capture_events

DEVICE = "lazy:0"


def line_of(marker):
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if marker in text and "line_of(" not in text)


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, kernel_size=5)
        self.conv2 = nn.Conv2d(6, 12, kernel_size=5)
        self.fc = nn.Linear(12 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        return self.fc(x.flatten(1))


def train(model, optimizer, steps, batch_size):
    """Trains on lazy:0; returns the losses and the counters of the steps after
    the first (the metrics are reset once the first step has compiled)."""
    loader = DataLoader(SyntheticMNIST(steps * batch_size, seed=0), batch_size=batch_size, drop_last=True)
    losses = []
    for step, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data.to(DEVICE)), target.to(DEVICE))
        loss.backward()
        lm.optimizer_step(optimizer, barrier=True)
        losses.append(loss.item())  # after the barrier: computed already, no new graph
        if step == 0:
            _C.reset_metrics()
    return losses, lm.counters()


@pytest.mark.parametrize("make, make_opt, steps", [
    (mlp, lambda p: optim.SGD(p, lr=0.1, momentum=0.9), 16),
    (SmallCNN, lambda p: optim.Adam(p, lr=3e-3), 12),
], ids=["mlp-sgd", "cnn-adam"])
def test_model_learns_synthetic_mnist_and_every_step_after_the_first_hits_the_cache(make, make_opt, steps):
    lazyscope.manual_seed(0)
    _C.clear_compile_cache()
    model = make().to(DEVICE)
    losses, counters = train(model, make_opt(model.parameters()), steps, 32)
    assert len(losses) == steps and all(np.isfinite(losses))
    # The loss falls: the last few steps average well below the first few.
    assert np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.2, losses
    # Every step after the first reused the first step's graph.
    assert counters.get("UncachedCompile", 0) == 0, counters
    assert counters["CachedCompile"] == steps - 1
    assert counters.get("FallbackCount", 0) == 0


def test_a_changing_batch_size_compiles_once_per_new_shape_with_reason_shape():
    lazyscope.manual_seed(0)
    _C.clear_compile_cache()
    _C.reset_metrics()
    model = mlp().to(DEVICE)
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    data = SyntheticMNIST(128, seed=1)
    sizes = [16, 16, 24, 24, 16, 32, 24, 32]
    start = 0
    with capture_events() as events:
        for size in sizes:
            x = lazyscope.stack([data[i][0] for i in range(start, start + size)]).to(DEVICE)  # batch-upload
            y = lazyscope.tensor([data[i][1] for i in range(start, start + size)], device=DEVICE)  # label-upload
            start = (start + size) % 64
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            lm.optimizer_step(optimizer, barrier=True)  # batch-barrier
    compiles = events.of("compile")
    # One uncached compile per distinct shape, at the step where it first appears.
    first_steps = [sizes.index(s) for s in dict.fromkeys(sizes)]
    assert len(compiles) == 3
    step_of_first_compile = int(compiles[0]["step"])
    assert [int(c["step"]) - step_of_first_compile for c in compiles] == first_steps
    assert compiles[0]["reason_kind"] == "COMPILE_REASON_FIRST_SIGHT"
    for c, (old, new) in zip(compiles[1:], [(16, 24), (24, 32)]):
        assert c["reason_kind"] == "COMPILE_REASON_SHAPE", c["reason"]
        # The reason names an input whose batch dimension changed (the images
        # or the labels, by the line that uploaded them) and its shapes; the
        # graph is compiled at the barrier's line.
        file = "test_training_done_when.py"
        assert (f"({file}:{line_of('# batch-upload')}) shape [{old}, 1, 28, 28] -> [{new}, 1, 28, 28]" in c["reason"]
                or f"({file}:{line_of('# label-upload')}) shape [{old}] -> [{new}]" in c["reason"]), c["reason"]
        assert c["source"]["line"] == line_of("# batch-barrier")
    counters = lm.counters()
    assert counters["UncachedCompile"] == 3
    assert counters["CachedCompile"] == len(sizes) - 3


def test_nonzero_in_a_training_loop_is_a_counted_fallback_at_its_line():
    lazyscope.manual_seed(0)
    _C.reset_metrics()
    model = mlp().to(DEVICE)
    optimizer = optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(SyntheticMNIST(4 * 32, seed=0), batch_size=32, drop_last=True)
    counts = []
    with capture_events() as events:
        for data, target in loader:
            optimizer.zero_grad()
            target = target.to(DEVICE)
            logits = model(data.to(DEVICE))
            wrong = (logits.argmax(1) != target).nonzero()  # nonzero-in-training
            counts.append(wrong.shape[0])
            F.cross_entropy(logits, target).backward()
            lm.optimizer_step(optimizer, barrier=True)
    fallbacks = events.of("fallback")
    assert [f["op"] for f in fallbacks] == ["nonzero"] * 4
    assert len({int(f["step"]) for f in fallbacks}) == 4  # one in each step
    for f in fallbacks:
        assert f["reason"] == "FALLBACK_REASON_DATA_DEPENDENT"
        assert f["source"]["file"].endswith("test_training_done_when.py")
        assert f["source"]["line"] == line_of("# nonzero-in-training")
    counters = lm.counters()
    assert counters["Fallback.nonzero"] == 4 and counters["FallbackCount"] == 4
    assert all(0 <= c <= 32 for c in counts)
