"""Barriers, the compile cache and its counters, seen from Python."""
import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm


def fresh():
    _C.clear_compile_cache()
    _C.reset_metrics()


def train_step(x, w, lr):
    w = w - (x.t() @ (x @ w)) * lr
    lm.mark_step()
    return w


def test_identical_steps_compile_once_then_hit_the_cache():
    fresh()
    x = lazyscope.randn(32, 4, device=lm.lazy_device())
    w = lazyscope.randn(4, 1, device=lm.lazy_device())
    for _ in range(5):
        w = train_step(x, w, 0.01)
    counters = lm.counters()
    assert counters["UncachedCompile"] == 1
    assert counters["CachedCompile"] == 4
    assert counters["MarkStep"] >= 5
    assert "CompileTime" in lm.metrics_report()


def test_changing_the_learning_rate_does_not_recompile():
    fresh()
    x = lazyscope.randn(8, 3, device="lazy:0")
    w = lazyscope.randn(3, 1, device="lazy:0")
    for lr in (0.1, 0.05, 0.025):
        w = train_step(x, w, lr)
    assert lm.counters()["UncachedCompile"] == 1


def test_a_new_batch_size_recompiles_once_per_shape():
    fresh()
    w = lazyscope.randn(3, 1, device="lazy:0")
    for batch in (8, 8, 5, 5, 8):
        w = train_step(lazyscope.randn(batch, 3, device="lazy:0"), w, 0.01)
    assert lm.counters()["UncachedCompile"] == 2


def test_lazy_training_matches_numpy_reference():
    fresh()
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 5)).astype(np.float32)
    w0 = rng.standard_normal((5, 1)).astype(np.float32)
    w_ref = w0.copy()
    for _ in range(10):
        w_ref = w_ref - (x.T @ (x @ w_ref)) * np.float32(0.01)
    tx = lazyscope.tensor(x, device="lazy:0")
    w = lazyscope.tensor(w0, device="lazy:0")
    for _ in range(10):
        w = train_step(tx, w, 0.01)
    np.testing.assert_allclose(w.numpy(), w_ref, rtol=1e-4, atol=1e-5)


def test_item_syncs_only_what_it_needs_and_counts_the_cause():
    fresh()
    a = lazyscope.ones(4, device="lazy:0")
    wanted = (a * 3.0).sum()
    other = a * 5.0
    assert wanted.item() == 12.0
    counters = lm.counters()
    assert counters["SyncCause.item"] == 1
    assert counters.get("SyncCause.mark_step", 0) == 0
    np.testing.assert_array_equal(other.numpy(), np.full(4, 5.0, dtype=np.float32))


def test_supported_devices_follow_the_device_count():
    assert lm.get_lazy_supported_devices() == [f"lazy:{i}" for i in range(_C.device_count())]
    assert str(lm.lazy_device()) == "lazy:0"


def test_lazy_device_honours_the_default_device_of_the_run(monkeypatch):
    # lazyscope run --device cpu|lazy sets LAZYSCOPE_DEFAULT_DEVICE.
    monkeypatch.setenv("LAZYSCOPE_DEFAULT_DEVICE", "cpu")
    assert str(lm.lazy_device()) == "cpu"
    assert str(lm.xla_device()) == "cpu"
    assert str(lm.lazy_device(0)) == "lazy:0"  # an explicit ordinal is a lazy device still
    t = lazyscope.ones(2, device=lm.lazy_device()) * 2
    assert str(t.device) == "cpu"
    monkeypatch.setenv("LAZYSCOPE_DEFAULT_DEVICE", "lazy")
    assert str(lm.lazy_device()) == "lazy:0"
    monkeypatch.setenv("LAZYSCOPE_DEFAULT_DEVICE", "lazy:0")
    assert str(lm.lazy_device()) == "lazy:0"
    monkeypatch.setenv("LAZYSCOPE_DEFAULT_DEVICE", "tpu")
    with pytest.raises(ValueError, match="LAZYSCOPE_DEFAULT_DEVICE='tpu'.*'cpu', 'lazy'"):
        lm.lazy_device()
    monkeypatch.delenv("LAZYSCOPE_DEFAULT_DEVICE")
    assert str(lm.lazy_device()) == "lazy:0"
