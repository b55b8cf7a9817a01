"""``torch_xla.debug.metrics``: lazyscope.debug.metrics when this build has it,
else the report and counters of lazyscope.core.lazy_model."""
try:
    from lazyscope.debug.metrics import *  # noqa: F401,F403
except ImportError:
    from lazyscope import _C

    def metrics_report():
        return _C.metrics_report()

    def counter_names():
        return sorted(_C.counters())

    def counter_value(name):
        return _C.counters().get(name)

    def metric_names():
        return sorted(_C.metrics())

    def metric_data(name):
        return _C.metrics().get(name)
