"""Replicas that are processes: ``torch.distributed``'s names over the engine's
Gloo process group (engine/distributed/process_group.h).

``lazyscope run --nproc-per-node N [--nnodes M ...] train.py`` starts N worker
processes per node, each with one lazy device (lazy:0) and these variables:
LAZYSCOPE_RANK, LAZYSCOPE_LOCAL_RANK, LAZYSCOPE_WORLD_SIZE, LAZYSCOPE_RDZV_DIR
and LAZYSCOPE_RDZV_ID (the Gloo file store and the job's key prefix),
LAZYSCOPE_GLOO_HOST (the address the rank's TCP transport binds), and
PyTorch's RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
``init_process_group()`` joins them; from then on the process is replica
``rank`` of ``world_size`` for lazy_model (get_ordinal, xrt_world_size,
all_reduce, optimizer_step...), and ``all_reduce`` stays an op of the step's
graph whose kernel goes through Gloo.

all_gather, broadcast and reduce_scatter on lazy tensors are written as
all_reduce ops of the graph (a zero-padded sum, exact), so they trace
without a host sync and give the same results in thread and process mode.
"""
import os

import numpy as np

from lazyscope import _C
from lazyscope.core import lazy_model as lm


class ReduceOp:
    SUM, PRODUCT, MIN, MAX, BAND, BOR = "sum", "mul", "min", "max", "and", "or"


class _ProcessGroup:
    """The replication of a worker process: lazy_model's replica context for
    every thread of this process (rank order = global rank)."""

    def __init__(self, rank, world_size, local_rank):
        self.key = _C.process_group_key()
        self.rank, self.local_rank = rank, local_rank
        # Each rank drives lazy:0 of its own process.
        self.devices = ["lazy:0"] * world_size

    def wait(self):
        _C.process_barrier()

    def abort(self, reason="a replica failed"):
        """A failing worker exits; the launcher stops the others."""

    def close(self):
        _C.destroy_process_group()


_group = None


def _env_int(names, default=None):
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            try:
                return int(value)
            except ValueError:
                raise ValueError(f"{name}={value!r} is not a number") from None
    return default


def is_available():
    return True


def is_initialized():
    return _group is not None


def launched():
    """True in a worker that ``lazyscope run --nproc-per-node`` started."""
    return bool(os.environ.get("LAZYSCOPE_RDZV_ID"))


def init_process_group(backend="gloo", init_method=None, world_size=-1, rank=-1, timeout=None, store=None,
                       group_name=""):
    """Joins the job's process group: rank and world size from the arguments,
    else from the launcher's environment (LAZYSCOPE_RANK/RANK,
    LAZYSCOPE_WORLD_SIZE/WORLD_SIZE). ``init_method`` may be ``file:///DIR``
    (a Gloo file store every rank can reach) instead of the launcher's.
    Blocks until every rank arrived (``timeout``, seconds or a timedelta,
    default LAZYSCOPE_COLLECTIVE_TIMEOUT_S); a rank that never arrives or a
    rank with another world size is an error naming it."""
    global _group
    if backend not in (None, "gloo", "cpu:gloo"):
        raise ValueError(f"init_process_group: backend {backend!r} is not available; LazyScope's processes "
                         f"exchange data with Gloo (backend='gloo')")
    if _group is not None:
        raise RuntimeError("init_process_group: the process group is already initialized "
                           "(destroy_process_group() first)")
    rank = rank if rank >= 0 else _env_int(("LAZYSCOPE_RANK", "RANK"))
    world_size = world_size if world_size > 0 else _env_int(("LAZYSCOPE_WORLD_SIZE", "WORLD_SIZE"))
    if rank is None or world_size is None:
        raise RuntimeError("init_process_group: no rank or world size: start the script with "
                           "`lazyscope run --nproc-per-node N script.py`, or pass rank= and world_size=")
    local_rank = _env_int(("LAZYSCOPE_LOCAL_RANK", "LOCAL_RANK"), rank)
    if init_method is not None:
        if not init_method.startswith("file://"):
            raise ValueError(f"init_process_group: init_method {init_method!r}: only file:///DIR (a directory "
                             f"every rank can reach) is supported; Gloo in Debian has no TCP store")
        store_dir, prefix = init_method[len("file://"):], "job"
    else:
        store_dir, prefix = os.environ.get("LAZYSCOPE_RDZV_DIR", ""), os.environ.get("LAZYSCOPE_RDZV_ID", "")
    if timeout is None:
        seconds = _C.collective_timeout()
    else:
        seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
    host = os.environ.get("LAZYSCOPE_GLOO_HOST", "127.0.0.1")
    _C.init_process_group(rank, world_size, store_dir, prefix, host, seconds)
    _group = _ProcessGroup(rank, world_size, local_rank)
    lm._process_replica = lm._Replica(_group, rank)


def _ensure_from_env():
    """Joins the launcher's group unless already joined (xmp.spawn in a worker)."""
    if _group is None:
        init_process_group()
    return _group


def destroy_process_group(group=None):
    global _group
    if _group is None:
        return
    lm._process_replica = None
    _group.close()
    _group = None


def _need(what):
    if _group is None:
        raise RuntimeError(f"{what}: the default process group is not initialized (init_process_group())")
    return _group


def get_rank(group=None):
    return _need("get_rank").rank


def get_world_size(group=None):
    return len(_need("get_world_size").devices)


def get_local_rank():
    return _need("get_local_rank").local_rank


def get_backend(group=None):
    _need("get_backend")
    return "gloo"


def barrier(group=None, async_op=False, device_ids=None):
    _need("barrier").wait()


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """In place, as torch.distributed: ``tensor`` becomes the reduction over
    all ranks (an all_reduce op of the step's graph on a lazy device; on the
    CPU device the value goes through the host)."""
    # On a lazy device copy_ rebinds the tensor (every handle on it) to the result.
    tensor.copy_(_reduce(_need("all_reduce"), tensor, op))


def _is_lazy(tensor):
    return str(tensor.device).startswith("lazy")


def _reduce(g, tensor, op):
    if _is_lazy(tensor):
        return _C.all_reduce(tensor, op, 1.0, g.key)
    # Eager CPU tensors: through a lazy device and back, so that the
    # reduction is the same kernel in the same rank order.
    lazy = tensor.to("lazy:0")
    out = _C.all_reduce(lazy, op, 1.0, g.key)
    lm.mark_step("lazy:0")
    return out.cpu()


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fills ``tensor_list[r]`` with rank r's ``tensor``: a zero-padded
    all_reduce(sum) in the graph (x + 0 is exact)."""
    g = _need("all_gather")
    world = len(g.devices)
    if len(tensor_list) != world:
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} entries, the world size is {world}")
    stacked = _gather_stacked(g, tensor)
    for r in range(world):
        tensor_list[r].copy_(stacked[r])


def _gather_stacked(g, tensor):
    from lazyscope import stack, zeros_like
    world = len(g.devices)
    parts = [tensor if r == g.rank else zeros_like(tensor) for r in range(world)]
    return _reduce(g, stack(parts), ReduceOp.SUM)


def broadcast(tensor, src, group=None, async_op=False):
    """``tensor`` of rank ``src`` on every rank (in place)."""
    g = _need("broadcast")
    from lazyscope import zeros_like
    if not 0 <= src < len(g.devices):
        raise ValueError(f"broadcast: src {src} is not a rank (world size {len(g.devices)})")
    contribution = tensor if g.rank == src else zeros_like(tensor)
    tensor.copy_(_reduce(g, contribution, ReduceOp.SUM))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """``output`` = the reduction over ranks of ``input_list[rank]``."""
    g = _need("reduce_scatter")
    from lazyscope import stack
    if len(input_list) != len(g.devices):
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} entries, the world size is "
                         f"{len(g.devices)}")
    output.copy_(_reduce(g, stack(list(input_list)), op)[g.rank])


def _host_array(data):
    if hasattr(data, "detach") and hasattr(data, "cpu"):
        return data.detach().cpu().numpy()
    return np.asarray(data)


def mesh_reduce(tag, data, reduce_fn):
    """torch_xla's mesh_reduce across processes: every rank's ``data`` (a
    number, array or tensor) through the host, ``reduce_fn(list in rank
    order)`` on every rank."""
    g = _need("mesh_reduce")
    array = np.ascontiguousarray(_host_array(data))
    header = f"{array.dtype.str}|{','.join(map(str, array.shape))}".encode()
    if len(header) > 256:
        raise ValueError(f"mesh_reduce({tag!r}): the value's shape is too long to exchange")
    header_block = header.ljust(256, b" ")
    headers = _C.process_all_gather_bytes(header_block)
    specs = [headers[i * 256:(i + 1) * 256].rstrip(b" ").decode() for i in range(len(g.devices))]
    sizes = [np.dtype(s.split("|")[0]).itemsize * int(np.prod([int(d) for d in s.split("|")[1].split(",") if d]))
             for s in specs]
    width = max(sizes)
    payload = _C.process_all_gather_bytes(array.tobytes().ljust(width, b"\0"))
    values = []
    for r, (spec, size) in enumerate(zip(specs, sizes)):
        dtype, shape = spec.split("|")
        dims = tuple(int(d) for d in shape.split(",") if d)
        value = np.frombuffer(payload[r * width:r * width + size], dtype=np.dtype(dtype)).reshape(dims)
        values.append(value.item() if value.ndim == 0 and np.isscalar(data) else value)
    return reduce_fn(values)


def master_print(*args, fd=None, **kwargs):
    """print() on rank 0 only."""
    if _group is None or _group.rank == 0:
        import sys
        print(*args, file=fd or sys.stdout, **kwargs)


class DistributedSampler:
    """torch.utils.data.distributed.DistributedSampler: this rank's share of
    the dataset's indices. With shuffle, a permutation seeded by seed + epoch
    (the same on every rank: call set_epoch each epoch); padded by repeating
    indices to a multiple of the world size, or trimmed with drop_last."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = lm.xrt_world_size()
        if rank is None:
            rank = lm.get_ordinal()
        if not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedSampler: rank {rank} is not in 0 .. {num_replicas - 1}")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.shuffle, self.seed, self.drop_last, self.epoch = shuffle, seed, drop_last, 0
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = n // num_replicas
        else:
            self.num_samples = -(-n // num_replicas)
        self.total_size = self.num_samples * num_replicas

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            while padding > 0:
                indices += indices[:padding]
                padding = self.total_size - len(indices)
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples
