"""lazyscope.debug.metrics: torch_xla.debug.metrics' API over the engine's counters and timed metrics."""
import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm
from lazyscope.debug import metrics as met
from runtime_util import capture_events


@pytest.fixture(autouse=True)
def clean():
    lm.mark_step()
    _C.clear_compile_cache()
    met.clear_all()
    _C.set_forced_fallbacks([])
    yield
    _C.set_forced_fallbacks([])


def run_two_steps():
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = lazyscope.tensor(data, device="lazy:0")  # one upload of 48 bytes
    for _ in range(2):
        y = (x * 2).sum()
        lm.mark_step()
    return y.item()  # one download of 4 bytes


def test_the_standard_metrics_exist_after_a_lazy_loop():
    assert run_two_steps() == pytest.approx(2 * 66)
    assert met.counter_value("UncachedCompile") == 1
    assert met.counter_value("CachedCompile") == 1
    assert met.counter_value("SyncCause.mark_step") == 2
    assert met.counter_value("TransferToDeviceCount") == 1
    assert met.counter_value("TransferToDeviceBytes") == 48
    assert met.counter_value("TransferFromDeviceCount") == 1
    assert met.counter_value("TransferFromDeviceBytes") == 4
    assert met.counter_value("CreatedIrNodes") >= 2
    for name in ("CompileTime", "ExecuteTime", "TransferToDeviceTime", "TransferFromDeviceTime"):
        assert name in met.metric_names()
    count, total, percentiles = met.metric_data("ExecuteTime")
    assert count == 2 and total > 0
    assert sorted(percentiles) == [0.5, 0.9, 0.99]
    assert 0 < percentiles[0.5] <= percentiles[0.99] <= total
    assert met.metric_data("NoSuchMetric") is None
    assert met.counter_value("NoSuchCounter") is None
    assert "UncachedCompile" in met.counter_names()
    assert "Metric: ExecuteTime" in met.metrics_report()


def test_fallbacks_appear_in_the_short_report_with_their_time():
    _C.set_forced_fallbacks(["sin"])
    lazyscope.tensor([1.0], device="lazy:0").sin().numpy()
    report = met.short_metrics_report()
    assert "Counter: Fallback.sin\n  Value: 1" in report
    assert "CreatedIrNodes" not in report  # the short report keeps to the headline figures
    assert met.metric_data("FallbackTime.sin")[0] == 1


def test_live_device_buffer_gauges_survive_clearing_and_track_tensors():
    before = met.counter_value("LiveDeviceBufferBytes") or 0
    x = lazyscope.zeros(1000, device="lazy:0")
    assert met.counter_value("LiveDeviceBufferBytes") - before == 4000
    met.clear_counters()
    assert met.counter_value("LiveDeviceBufferBytes") - before == 4000
    del x
    assert met.counter_value("LiveDeviceBufferBytes") == before


def test_clearing_counters_keeps_metrics_and_vice_versa():
    run_two_steps()
    met.clear_counters()
    assert met.counter_value("UncachedCompile") == 0
    assert met.metric_data("ExecuteTime")[0] == 2
    met.clear_metrics()
    assert met.metric_data("ExecuteTime")[0] == 0


@pytest.fixture
def snapshot_at_every_barrier():
    # Barrier snapshots are throttled (LAZYSCOPE_METRIC_SNAPSHOT_MS, 100 ms by
    # default); 0 publishes one at every step end.
    before = _C.metric_snapshot_ms()
    _C.set_metric_snapshot_ms(0)
    yield
    _C.set_metric_snapshot_ms(before)


def test_each_step_end_publishes_a_snapshot_of_what_changed(snapshot_at_every_barrier):
    with capture_events() as events:
        run_two_steps()
        _C.publish_metric_snapshot()
    snapshots = events.of("metrics")
    assert len(snapshots) == 3
    first = {m["name"]: m for m in snapshots[0]["metrics"]}
    assert first["UncachedCompile"]["is_counter"] and int(first["UncachedCompile"]["value"]) == 1
    assert first["ExecuteTime"]["count"] == "1" and first["ExecuteTime"]["total_ms"] > 0
    second = {m["name"] for m in snapshots[1]["metrics"]}
    assert "UncachedCompile" not in second and "CachedCompile" in second
    final = {m["name"]: m for m in snapshots[2]["metrics"]}
    assert int(final["TransferFromDeviceCount"]["value"]) == 1
    assert int(snapshots[1]["step"]) == int(snapshots[0]["step"]) + 1


def test_a_counter_counted_again_after_clearing_is_in_the_next_snapshot(snapshot_at_every_barrier):
    # Snapshots at barriers carry only what changed since the last one. A
    # counter published at 1, cleared and counted to 1 again has changed: it
    # must be published again (it was not while the baseline outlived the
    # clear, so whether this module's first test saw its compile depended on
    # which test ran before it).
    with capture_events() as events:
        run_two_steps()
        _C.clear_compile_cache()
        met.clear_all()
        run_two_steps()
    compiles = [int(m["value"]) for s in events.of("metrics") for m in s["metrics"] if m["name"] == "UncachedCompile"]
    assert compiles == [1, 1]
    timed = [m["count"] for s in events.of("metrics") for m in s["metrics"] if m["name"] == "ExecuteTime"]
    assert timed[:2] == ["1", "2"] and "1" in timed[2:]
