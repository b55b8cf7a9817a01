"""``torch_xla.debug.metrics`` → lazyscope.debug.metrics."""
from lazyscope import _C
from lazyscope.debug.metrics import *  # noqa: F401,F403
from lazyscope.debug.metrics import __all__ as _names


def executed_fallback_ops():
    """Names of the ops that fell back to the host (torch_xla: ops without an XLA lowering)."""
    prefix = "Fallback."
    return sorted(name[len(prefix):] for name, value in _C.counters().items() if name.startswith(prefix) and value)


STATUS = {name: ("supported", "") for name in list(_names) + ["executed_fallback_ops"]}
