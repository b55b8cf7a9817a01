"""``torch_xla.distributed.parallel_loader`` → lazyscope.distributed.parallel_loader."""
from lazyscope.distributed.parallel_loader import MpDeviceLoader, ParallelLoader, PerDeviceLoader  # noqa: F401

STATUS = {name: ("supported", "") for name in ("ParallelLoader", "PerDeviceLoader", "MpDeviceLoader")}
