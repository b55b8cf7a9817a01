"""Lazy-device helpers, mirroring ``torch_xla.core.xla_model``.

Replication: LazyScope runs replicas as threads of one process, one lazy
device each (DataParallel, and ``spawn`` in lazyscope.distributed). A thread
that runs a replica carries a replication context (its ordinal, the world
size and the group), which ``get_ordinal``, ``xrt_world_size``,
``lazy_device()``, ``all_reduce`` and ``optimizer_step`` consult. Outside a
replica the world size is ``defval`` (1) and the ordinal ``defval`` (0).

``all_reduce`` is an op of the step's graph, as PyTorch/XLA's cross-replica
sum: tracing it syncs nothing. When each replica's barrier runs its graph,
the op's kernel meets the other replicas' executions of the same collective
in an in-process rendezvous (the engine's backend/collective.h) and reduces
in replica order, so every replica gets the same bits. A replica that never
arrives makes the others raise after LAZYSCOPE_COLLECTIVE_TIMEOUT_S (60 s)
naming it; the replica runners (DataParallel, spawn) abort the group as soon
as one replica raises, which releases the others at once.
"""
import os
import threading

from lazyscope import _C

REDUCE_SUM, REDUCE_MUL, REDUCE_AND, REDUCE_OR, REDUCE_MIN, REDUCE_MAX = "sum", "mul", "and", "or", "min", "max"
_REDUCE_TYPES = (REDUCE_SUM, REDUCE_MUL, REDUCE_MIN, REDUCE_MAX, REDUCE_AND, REDUCE_OR)

_local = threading.local()
# Replicas that are processes (lazyscope.distributed.init_process_group):
# the whole process is one replica, for every thread of it.
_process_replica = None


def _replica():
    return getattr(_local, "replica", None) or _process_replica


class _ReplicationGroup:
    """The replicas of one run: their devices (in ordinal order), the engine's
    replica group that the graph's all_reduce ops name (registered here,
    before the replica threads start), and a host barrier for ``rendezvous``.
    ``close()`` (the runner calls it once the threads have ended) unregisters
    the engine group."""

    def __init__(self, devices):
        self.devices = list(devices)
        self.key = _C.register_replica_group([_C.device(str(d)) for d in self.devices])
        self.barrier = threading.Barrier(len(self.devices))

    def wait(self):
        self.barrier.wait()

    def abort(self, reason="a replica failed"):
        """Releases every replica waiting for the others: in ``rendezvous``
        (BrokenBarrierError) and in a collective (an EngineError naming
        ``reason``)."""
        self.barrier.abort()
        _C.abort_replica_group(self.key, reason)

    def close(self):
        _C.unregister_replica_group(self.key)


class _Replica:
    def __init__(self, group, ordinal):
        self.group, self.ordinal = group, ordinal
        self.device = group.devices[ordinal]


def _enter_replica(group, ordinal):
    _local.replica = _Replica(group, ordinal) if group is not None else None


def _leave_replica():
    _local.replica = None


def _default_device():
    """LAZYSCOPE_DEFAULT_DEVICE (set by ``lazyscope run --device cpu|lazy``):
    None for the lazy default, else the device it names. Read at each call, so
    a script (or a test) may set it before asking for its device."""
    value = os.environ.get("LAZYSCOPE_DEFAULT_DEVICE", "").strip()
    if value in ("", "lazy"):
        return None
    if value == "cpu" or value.startswith("lazy:"):
        return value
    raise ValueError(f"LAZYSCOPE_DEFAULT_DEVICE={value!r}: expected 'cpu', 'lazy' or 'lazy:N' "
                     f"(lazyscope run --device cpu|lazy sets it)")


def lazy_device(n=None, devkind=None):
    """The lazy device with ordinal ``n``. Without ``n``: this replica's device
    (inside a replica thread), else the run's default device —
    LAZYSCOPE_DEFAULT_DEVICE, which ``lazyscope run --device cpu`` sets so a
    script written for a lazy device runs eagerly on the CPU unchanged — else
    lazy:0."""
    if devkind not in (None, "CPU", "LAZY", "TPU", "GPU"):
        raise ValueError(f"unknown device kind {devkind!r}: LazyScope's lazy devices run on the CPU backend")
    if n is None:
        replica = _replica()
        if replica is not None:
            return _C.device(str(replica.device))
        default = _default_device()
        if default == "cpu":
            return _C.device("cpu")
        n = 0 if default is None else _ordinal(default)
    if not 0 <= n < _C.device_count():
        raise ValueError(f"lazy_device({n}): there are {_C.device_count()} lazy devices "
                         f"(set LAZYSCOPE_DEVICE_COUNT or lazyscope run --devices)")
    return _C.device(f"lazy:{n}")


def _ordinal(name):
    try:
        return int(name.split(":", 1)[1])
    except ValueError:
        raise ValueError(f"LAZYSCOPE_DEFAULT_DEVICE={name!r}: expected 'cpu', 'lazy' or 'lazy:N'") from None


xla_device = lazy_device


def get_lazy_supported_devices(devkind=None, max_devices=None):
    """The lazy devices, as strings ("lazy:0", …)."""
    count = _C.device_count()
    if max_devices is not None:
        count = min(count, max_devices)
    return [f"lazy:{i}" for i in range(count)]


get_xla_supported_devices = get_lazy_supported_devices


def xrt_world_size(defval=1):
    """The number of replicas taking part in the replication (defval outside one)."""
    replica = _replica()
    return len(replica.group.devices) if replica is not None else defval


world_size = xrt_world_size


def get_ordinal(defval=0):
    """This replica's ordinal, 0 … world size − 1 (defval outside a replication)."""
    replica = _replica()
    return replica.ordinal if replica is not None else defval


def get_local_ordinal(defval=0):
    """This replica's ordinal on its machine: a worker process's local rank."""
    replica = _replica()
    if replica is not None and hasattr(replica.group, "local_rank"):
        return replica.group.local_rank
    return get_ordinal(defval)


def is_master_ordinal(local=True):
    replica = _replica()
    if local and replica is not None and hasattr(replica.group, "local_rank"):
        return replica.group.local_rank == 0  # a worker process: the first of its node
    return get_ordinal() == 0


def _step_closures():
    closures = getattr(_local, "closures", None)
    if closures is None:
        closures = _local.closures = []
    return closures


def add_step_closure(closure, args=(), run_async=False):
    """Runs ``closure(*args)`` after this thread's next barrier has executed the
    step's graph, so reading tensors in it (printing a loss) syncs nothing new."""
    _step_closures().append((closure, tuple(args)))


def _run_step_closures():
    closures = _step_closures()
    while closures:
        fn, args = closures.pop(0)
        fn(*args)


def mark_step(device=None):
    """Barrier: runs the pending graph of every live lazy tensor (of ``device``
    only, when given; inside a replica, of the replica's device, as each
    torch_xla process marks only its own) and ends the step; then runs the
    step closures."""
    replica = _replica()
    if device is None and replica is not None:
        # Another replica's graph holds its own collectives: running it from
        # this thread would contribute to them out of turn.
        device = str(replica.device)
    if isinstance(device, str):
        device = _C.device(device)
    _C.mark_step(device)
    _run_step_closures()


def all_reduce(reduce_type, inputs, scale=1.0, groups=None):
    """Reduces ``inputs`` (a tensor or a list of tensors) across the replicas.

    A tensor gives a new tensor; a list has its items replaced by the results
    (and is returned), as torch_xla updates a list in place. Each replica gets
    the result on its own device. Outside a replication this only scales.
    """
    if groups is not None:
        raise NotImplementedError("all_reduce: replica groups are not supported; all replicas take part")
    if reduce_type not in _REDUCE_TYPES:
        raise ValueError(f"all_reduce: unknown reduce_type {reduce_type!r} (one of {', '.join(_REDUCE_TYPES)})")
    single = isinstance(inputs, _C.Tensor)
    tensors = [inputs] if single else list(inputs)
    replica = _replica()
    if replica is not None and len(replica.group.devices) > 1:
        # One all_reduce node per tensor in this replica's graph; the scale is
        # applied inside the op, after the reduction (no extra node).
        results = [_C.all_reduce(t, reduce_type, float(scale), replica.group.key) for t in tensors]
    elif scale != 1.0:
        results = [r * scale for r in tensors]
    else:
        results = tensors
    if single:
        return results[0]
    if isinstance(inputs, list):
        inputs[:] = results
        return inputs
    return results


def reduce_gradients(optimizer):
    """Averages the gradients of the optimizer's parameters across replicas:
    one all_reduce(sum, scale=1/world size) op per gradient, traced into the
    step's graph (no host sync; the barrier runs it)."""
    count = xrt_world_size()
    if count <= 1:
        return
    params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    if _process_replica is not None and _replica() is _process_replica and len(params) > 1 \
            and len({p.grad.dtype for p in params}) == 1:
        # Worker processes: one all_reduce over every gradient, flattened
        # (one exchange between processes instead of one per tensor). Each
        # element is reduced alone, in rank order, so the bits are the same
        # as one all_reduce per tensor, and as thread replicas'.
        from lazyscope import cat
        flat = all_reduce(REDUCE_SUM, cat([p.grad.reshape(-1) for p in params]), scale=1.0 / count)
        offset = 0
        for p in params:
            n = p.grad.numel()
            p.grad = flat[offset:offset + n].reshape(p.grad.shape)
            offset += n
        return
    grads = all_reduce(REDUCE_SUM, [p.grad for p in params], scale=1.0 / count)
    for p, g in zip(params, grads):
        p.grad = g


def optimizer_step(optimizer, barrier=False, optimizer_args={}):  # noqa: B006  (torch_xla's signature)
    """All-reduces the gradients across replicas (when there are several), runs
    ``optimizer.step(**optimizer_args)``, and with ``barrier`` ends the step."""
    reduce_gradients(optimizer)
    loss = optimizer.step(**optimizer_args)
    if barrier:
        replica = _replica()
        mark_step(str(replica.device) if replica is not None else None)
    return loss


def _to_host(data):
    from lazyscope.nn.parameter import Tensor
    if isinstance(data, Tensor):
        return data.detach().cpu()
    if isinstance(data, (list, tuple)):
        return type(data)(_to_host(x) for x in data) if not hasattr(data, "_fields") else data
    if isinstance(data, dict):
        return type(data)((k, _to_host(v)) for k, v in data.items())
    return data


def save(data, path, master_only=True, global_master=False):
    """Saves ``data`` through the host (tensors moved to the CPU first, so the
    file loads on any device); with master_only, only the master replica writes."""
    from lazyscope.serialization import save as _save
    host = _to_host(data)
    if not master_only or is_master_ordinal(local=not global_master):
        _save(host, path)


def rendezvous(tag="", payload=b"", replicas=()):
    """Waits for every replica (no-op outside a replication); returns every
    replica's ``payload`` in ordinal order, as torch_xla's rendezvous."""
    replica = _replica()
    if replica is None or len(replica.group.devices) == 1:
        return [payload]
    if replica is _process_replica:  # ranks are processes: exchange through the process group
        import numpy as np
        from lazyscope.distributed import process_group
        payloads = process_group.mesh_reduce(tag, np.frombuffer(bytes(payload), dtype=np.uint8), list)
        return [np.asarray(p, dtype=np.uint8).tobytes() for p in payloads]
    if replicas and sorted(replicas) != list(range(len(replica.group.devices))):
        raise ValueError(f"rendezvous({tag!r}): only all replicas can meet, got replicas={list(replicas)}")
    return _exchange(replica, tag, payload)


def _exchange(replica, tag, value):
    """Every replica's ``value`` (ordinal order), through the group's host barrier.
    Each use of a tag is its own slot (replicas count their uses, and make them
    in the same order), so a tag used again at once cannot meet a slow replica
    still reading the previous use; the last reader frees the slot."""
    group = replica.group
    uses = replica.__dict__.setdefault("exchanges", {})
    uses[tag] = uses.get(tag, 0) + 1
    key = (tag, uses[tag])
    with _exchange_lock:
        slots = group.__dict__.setdefault("_exchange", {})
        slot = slots.setdefault(key, {"values": [None] * len(group.devices), "readers": 0})
        slot["values"][replica.ordinal] = value
    group.wait()  # every value is in
    with _exchange_lock:
        values = list(slot["values"])
        slot["readers"] += 1
        if slot["readers"] == len(group.devices):
            del slots[key]
    return values


_exchange_lock = threading.Lock()


def mesh_reduce(tag, data, reduce_fn):
    """Reduces ``data`` across replicas outside the graph, as torch_xla's
    mesh_reduce: every replica's data (tensors moved to the host) in ordinal
    order is passed to ``reduce_fn``; every replica gets its result. Outside a
    replication, ``reduce_fn([data])``."""
    host = _to_host(data)
    replica = _replica()
    if replica is None or len(replica.group.devices) == 1:
        return reduce_fn([host])
    if replica is _process_replica:
        from lazyscope.distributed import process_group
        return process_group.mesh_reduce(tag, host, reduce_fn)
    return reduce_fn(_exchange(replica, tag, host))


def master_print(*args, fd=None, local=False, flush=False):
    """print() on the master replica only."""
    import sys
    if is_master_ordinal(local=local):
        print(*args, file=fd or sys.stdout, flush=flush)


def wait_device_ops(devices=()):
    """Every graph has finished when its barrier returns (execution is synchronous): nothing to wait for."""


def is_lazy_tensor(tensor):
    return tensor.device.type == "lazy"


def do_on_ordinals(target, data=(), ordinals=(0,)):
    """Runs ``target(*data)`` (tensors moved to the host) on the given ordinals only; all replicas then meet."""
    running = get_ordinal() in ordinals
    result = target(*_to_host(tuple(data))) if running else None
    rendezvous("lazyscope.do_on_ordinals")
    return result


def set_rng_state(seed, device=None):
    """Seeds the engine's generator (dropout masks) and the host one, as lazyscope.manual_seed."""
    import lazyscope
    lazyscope.manual_seed(seed)
    _rng_seed[0] = seed


def get_rng_state(device=None):
    return _rng_seed[0]


_rng_seed = [0]


def unlazy(tensors):
    """Materializes ``tensors`` now (a barrier for their device)."""
    for t in tensors:
        if t.device.type == "lazy":
            mark_step(t.device)
            break


class RateTracker:
    """Samples per second, as torch_xla's RateTracker: rate() smoothed since
    the last call, global_rate() since creation."""

    def __init__(self, smooth_factor=None):
        import time
        self._time = time.time
        self._smooth_factor = float(os.environ.get("RATE_TRACKER_SMOOTHING", 0.4)) if smooth_factor is None \
            else smooth_factor
        self._start_time = self._time()
        self._partial_time = self._start_time
        self._partial_count = 0.0
        self._partial_rate = None
        self._count = 0.0

    def add(self, count):
        self._count += count

    def rate(self):
        now = self._time()
        delta = now - self._partial_time
        if delta <= 0:
            return 0.0
        current = self._count / delta
        rate = current if self._partial_rate is None else \
            (1 - self._smooth_factor) * current + self._smooth_factor * self._partial_rate
        self._partial_count += self._count
        self._count = 0.0
        self._partial_time = now
        self._partial_rate = rate
        return rate

    def global_rate(self):
        delta = self._time() - self._start_time
        return (self._partial_count + self._count) / delta if delta > 0 else 0.0


def metrics_report():
    """Counters and timed metrics as text (compile/execute times, cache hits…)."""
    return _C.metrics_report()


def counters():
    return _C.counters()
