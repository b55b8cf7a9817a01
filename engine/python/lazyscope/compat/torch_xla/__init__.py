"""``torch_xla`` → LazyScope. ``torch_xla._XLAC._xla_metrics_report()`` is the metrics report."""
import types as _types

from lazyscope import _C
from lazyscope.core import lazy_model as _lm

_XLAC = _types.SimpleNamespace(_xla_metrics_report=_C.metrics_report, _xla_counters=_C.counters)


def sync():
    """torch_xla.sync(): the barrier (mark_step)."""
    _lm.mark_step()


def device(n=None):
    return _lm.lazy_device(n)


from lazyscope.compat.torch_xla import runtime  # noqa: E402,F401  (torch_xla.runtime)
