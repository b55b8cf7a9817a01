"""Multi-device helpers mirroring torch_xla.distributed: ParallelLoader,
DataParallel (threads) and spawn (threads, or the launcher's processes; see
lazy_multiprocessing), and torch.distributed's process-group API for worker
processes of `lazyscope run --nproc-per-node N` (see process_group)."""
from lazyscope.distributed import data_parallel, lazy_multiprocessing, parallel_loader, process_group  # noqa: F401
from lazyscope.distributed.process_group import (  # noqa: F401
    DistributedSampler, ReduceOp, all_gather, all_reduce, barrier, broadcast, destroy_process_group, get_backend,
    get_local_rank, get_rank, get_world_size, init_process_group, is_available, is_initialized, reduce_scatter,
)

xla_multiprocessing = lazy_multiprocessing
