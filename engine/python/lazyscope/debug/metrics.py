"""Counters and timed metrics, mirroring ``torch_xla.debug.metrics``.

Counters are integers (``UncachedCompile``, ``Fallback.exp``,
``SyncCause.item``, gauges such as ``LiveDeviceBufferBytes``); metrics are
timed samples in milliseconds (``CompileTime``, ``ExecuteTime``,
``TransferToDeviceTime``, ``FallbackTime.exp``) with a count, a total and
percentiles over the most recent 1024 samples.
"""
from lazyscope import _C

__all__ = ["metrics_report", "short_metrics_report", "counter_names", "counter_value", "metric_names",
           "metric_data", "clear_counters", "clear_metrics", "clear_all"]


def metrics_report():
    """Every non-zero metric and counter as text, in the spirit of PyTorch/XLA's report."""
    return _C.metrics_report()


def short_metrics_report():
    """Compile and execute time, transfers, compile counts and every fallback counter."""
    return _C.short_metrics_report()


def counter_names():
    """Names of every counter the engine has created, sorted."""
    return sorted(_C.counters())


def counter_value(name):
    """The counter's value, or None when no counter has that name."""
    return _C.counters().get(name)


def metric_names():
    """Names of every timed metric the engine has created, sorted."""
    return sorted(_C.metrics())


def metric_data(name):
    """``(count, total_ms, {0.5: p50, 0.9: p90, 0.99: p99})`` of a timed metric, or None when unknown."""
    data = _C.metric_data(name)
    if data is None:
        return None
    return data["count"], data["total_ms"], {0.5: data["p50_ms"], 0.9: data["p90_ms"], 0.99: data["p99_ms"]}


def clear_counters():
    """Zeroes every counter except the live-buffer gauges (which describe the present)."""
    _C.clear_counters()


def clear_metrics():
    """Forgets every timed metric's samples."""
    _C.clear_metrics()


def clear_all():
    clear_counters()
    clear_metrics()
