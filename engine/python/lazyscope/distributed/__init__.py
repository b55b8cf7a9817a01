"""Multi-device helpers mirroring torch_xla.distributed: ParallelLoader,
DataParallel (threads) and spawn (threads too; see lazy_multiprocessing)."""
from lazyscope.distributed import data_parallel, lazy_multiprocessing, parallel_loader  # noqa: F401

xla_multiprocessing = lazy_multiprocessing
