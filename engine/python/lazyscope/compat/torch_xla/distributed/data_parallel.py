"""``torch_xla.distributed.data_parallel`` → lazyscope.distributed.data_parallel."""
from lazyscope.distributed.data_parallel import Context, DataParallel  # noqa: F401
