"""``torch_xla.core.xla_model`` → lazyscope.core.lazy_model."""
from lazyscope.core.lazy_model import (  # noqa: F401
    REDUCE_AND, REDUCE_MAX, REDUCE_MIN, REDUCE_MUL, REDUCE_OR, REDUCE_SUM, add_step_closure, all_reduce, counters,
    get_local_ordinal, get_ordinal, get_xla_supported_devices, is_master_ordinal, mark_step, master_print,
    mesh_reduce, metrics_report, optimizer_step, reduce_gradients, rendezvous, save, xla_device, xrt_world_size,
)
