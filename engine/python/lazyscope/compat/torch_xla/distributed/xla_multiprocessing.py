"""``torch_xla.distributed.xla_multiprocessing`` → lazyscope.distributed.lazy_multiprocessing (threads)."""
from lazyscope.distributed.lazy_multiprocessing import spawn  # noqa: F401
