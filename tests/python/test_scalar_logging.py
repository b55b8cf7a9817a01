"""lazyscope.log(name, value): scalars recorded without a sync of their own."""
import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from runtime_util import capture_events


@pytest.fixture(autouse=True)
def clean():
    lm.mark_step()
    _C.clear_compile_cache()
    _C.reset_metrics()


def training_loop(x_np, y_np, steps, log):
    x = lazyscope.tensor(x_np, device="lazy:0")
    y = lazyscope.tensor(y_np, device="lazy:0")
    w = lazyscope.zeros(x_np.shape[1], 1, device="lazy:0")
    for _ in range(steps):
        err = x @ w - y
        loss = (err * err).mean()
        if log:
            lazyscope.log("loss", loss)
            lazyscope.log("lr", 0.05)
        w = w - (x.t() @ err) * (2 * 0.05 / x_np.shape[0])
        lm.mark_step()


def reference_losses(x, y, steps):
    w = np.zeros((x.shape[1], 1), dtype=np.float32)
    out = []
    for _ in range(steps):
        err = x @ w - y
        out.append(float((err * err).mean()))
        w = w - (x.T @ err) * np.float32(2 * 0.05 / x.shape[0])
    return out


def sync_counters():
    c = lm.counters()
    return {k: v for k, v in c.items() if k.startswith("SyncCause.") or k in ("ExecuteCount", "UncachedCompile")}


def test_logging_a_lazy_loss_adds_no_execution_and_publishes_the_values():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((16, 3)).astype(np.float32)
    y = rng.standard_normal((16, 1)).astype(np.float32)
    with capture_events():
        training_loop(x, y, 5, log=False)
    without = sync_counters()
    _C.clear_compile_cache()
    _C.reset_metrics()
    with capture_events() as events:
        training_loop(x, y, 5, log=True)
    assert sync_counters() == without
    assert without["ExecuteCount"] == 5  # one graph per step, nothing more
    scalars = events.of("scalar")
    losses = [s for s in scalars if s["name"] == "loss"]
    np.testing.assert_allclose([s["value"] for s in losses], reference_losses(x, y, 5), rtol=1e-5)
    steps = [int(s["step"]) for s in losses]
    assert steps == list(range(steps[0], steps[0] + 5))
    assert [s["value"] for s in scalars if s["name"] == "lr"] == [0.05] * 5
    # Each logged loss belongs to the step whose barrier computed it.
    step_ends = [int(s["step"]) for s in events.of("step")]
    assert set(steps) <= set(step_ends)


def test_log_without_a_subscriber_keeps_nothing_and_rejects_bad_values():
    x = lazyscope.tensor([1.0, 2.0], device="lazy:0")
    lazyscope.log("total", x.sum())  # no subscriber: nothing recorded, nothing synced
    assert lm.counters().get("ExecuteCount", 0) == 0
    with pytest.raises(RuntimeError, match="log\\('vec'\\): expected a one-element tensor, got shape \\[2\\]"):
        lazyscope.log("vec", x)
    with pytest.raises(TypeError, match="expected a number or a one-element tensor"):
        lazyscope.log("text", "abc")


def test_log_of_a_tensor_is_still_the_elementwise_log():
    np.testing.assert_allclose(lazyscope.log(lazyscope.tensor([1.0, np.e])).numpy(), [0.0, 1.0], rtol=1e-6)


def test_a_cpu_tensor_or_number_is_published_at_once():
    with capture_events() as events:
        lazyscope.log("acc", lazyscope.tensor([0.75]))
        lazyscope.log("epoch", 3)
    assert [(s["name"], s["value"]) for s in events.of("scalar")] == [("acc", 0.75), ("epoch", 3.0)]
