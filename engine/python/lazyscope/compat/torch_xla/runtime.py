"""``torch_xla.runtime``: world size and ordinals of the current replica."""
from lazyscope.core import lazy_model as _lm


def world_size():
    return _lm.xrt_world_size()


def global_ordinal():
    return _lm.get_ordinal()


def local_ordinal():
    return _lm.get_local_ordinal()


def global_runtime_device_count():
    return len(_lm.get_xla_supported_devices())


addressable_device_count = global_runtime_device_count
global_device_count = global_runtime_device_count


def using_pjrt():
    """LazyScope's replicas are PJRT-like (one runtime, no XRT server)."""
    return True


def device_type():
    """The hardware behind the lazy devices: LazyScope's CPU backend."""
    return "CPU"


def xla_device(n=None, devkind=None):
    return _lm.xla_device(n, devkind)
