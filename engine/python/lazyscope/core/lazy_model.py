"""Lazy-device helpers, mirroring ``torch_xla.core.xla_model``."""
from lazyscope import _C


def lazy_device(n=None, devkind=None):
    """The lazy device with ordinal ``n`` (the first one when ``n`` is None)."""
    if devkind not in (None, "CPU", "LAZY"):
        raise ValueError(f"unknown device kind {devkind!r}: LazyScope's lazy devices run on the CPU backend")
    return _C.device(f"lazy:{0 if n is None else n}")


def get_lazy_supported_devices(devkind=None, max_devices=None):
    """The lazy devices, as strings ("lazy:0", …)."""
    count = _C.device_count()
    if max_devices is not None:
        count = min(count, max_devices)
    return [f"lazy:{i}" for i in range(count)]


def mark_step(device=None):
    """Barrier: runs the pending graph of every live lazy tensor and ends the step."""
    _C.mark_step(device)


def metrics_report():
    """Counters and timed metrics as text (compile/execute times, cache hits…)."""
    return _C.metrics_report()


def counters():
    return _C.counters()
