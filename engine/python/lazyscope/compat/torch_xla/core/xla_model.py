"""``torch_xla.core.xla_model`` → lazyscope.core.lazy_model.

Every public function of PyTorch/XLA's xla_model is here: implemented, or a
refusal that names the function and says what to use instead (STATUS lists
each, and docs/pytorch_coverage.md is generated from it).
"""
import contextlib as _contextlib

from lazyscope.core import lazy_model as _lm
from lazyscope.core.lazy_model import (  # noqa: F401
    REDUCE_AND, REDUCE_MAX, REDUCE_MIN, REDUCE_MUL, REDUCE_OR, REDUCE_SUM, RateTracker, add_step_closure, all_reduce,
    counters, do_on_ordinals, get_local_ordinal, get_ordinal, get_rng_state, get_xla_supported_devices,
    is_master_ordinal, mark_step, master_print, mesh_reduce, metrics_report, optimizer_step, reduce_gradients,
    rendezvous, save, set_rng_state, unlazy, wait_device_ops, xla_device, xrt_world_size,
)

xla_rendezvous = rendezvous


def is_xla_tensor(tensor):
    """True for a tensor on a lazy device (LazyScope's counterpart of an XLA device)."""
    return _lm.is_lazy_tensor(tensor)


def parse_xla_device(device):
    kind, _, ordinal = str(device).partition(":")
    return (kind.upper(), int(ordinal)) if ordinal.isdigit() else None


def xla_device_hw(device):
    """The hardware behind a lazy device: always the CPU backend."""
    return "CPU"


def xla_real_devices(devices=None):
    return [f"CPU:{parse_xla_device(d)[1]}" for d in (devices or get_xla_supported_devices())]


def send_cpu_data_to_device(datas, device, input_sharding=None):
    """Every CPU tensor in ``datas`` (nested lists, tuples, dicts) moved to ``device``."""
    from lazyscope.distributed.parallel_loader import _send
    if input_sharding is not None:
        _refused("send_cpu_data_to_device(input_sharding=...)", "a plain device (LazyScope has no sharding)")
    return _send(list(datas) if isinstance(datas, (list, tuple)) else [datas], device)


@_contextlib.contextmanager
def fork_rng(device=None, enabled=True):
    """Restores the generator's seed on exit."""
    if not enabled:
        yield
        return
    state = get_rng_state(device)
    try:
        yield
    finally:
        set_rng_state(state, device)


def collective_broadcast(tensors, root_ordinal=0, groups=None, pin_layout=True):
    """Every replica's ``tensors`` set, in place, to the root replica's: as in
    PyTorch/XLA, each replica scales by 1 (root) or 0 and all replicas sum."""
    import lazyscope
    if groups:
        _refused("collective_broadcast(groups=...)", "collective_broadcast over all replicas")
    with lazyscope.no_grad():
        for t in tensors:
            scale = lazyscope.tensor(1 if get_ordinal() == root_ordinal else 0, dtype=t.dtype, device=t.device)
            t.mul_(scale)
            t.copy_(all_reduce(REDUCE_SUM, t))


def broadcast_master_param(model):
    """The master replica's parameters and buffers copied to every replica."""
    collective_broadcast(list(model.parameters()) + list(model.buffers()))
    mark_step()


def all_gather(value, dim=0, groups=None, output=None, pin_layout=True):
    """Every replica's ``value`` concatenated along ``dim`` (ordinal order), as PyTorch/XLA's
    all-reduce based all_gather: each replica places its value at its slot of zeros, and the
    replicas sum. Exact, except that -0.0 gathers as 0.0."""
    import lazyscope
    if groups:
        _refused("all_gather(groups=...)", "all_gather over all replicas")
    if output is not None or not isinstance(value, lazyscope.Tensor):
        _refused("all_gather(output=... or a list of tensors)", "all_gather of one tensor, using its result")
    world, ordinal = xrt_world_size(), get_ordinal()
    if world == 1:
        return value
    dim = dim % value.dim()
    pieces = []
    for i in range(world):
        if i == ordinal:
            pieces.append(value)
        else:
            pieces.append(lazyscope.zeros(*value.shape, dtype=value.dtype, device=value.device))
    return all_reduce(REDUCE_SUM, lazyscope.cat(pieces, dim))


def reduce_scatter(reduce_type, input, scale, scatter_dim, shard_count, groups=None, output=None,  # noqa: A002
                   pin_layout=True):
    """``input`` reduced across replicas (times ``scale``), each replica keeping its shard
    (ordinal order) of ``scatter_dim`` split into ``shard_count`` pieces."""
    import lazyscope
    if groups or output is not None or not isinstance(input, lazyscope.Tensor):
        _refused("reduce_scatter(groups=, output= or a list of tensors)", "reduce_scatter of one tensor over all "
                 "replicas, using its result")
    if shard_count != xrt_world_size():
        raise ValueError(f"reduce_scatter: shard_count ({shard_count}) must equal the number of replicas "
                         f"({xrt_world_size()})")
    size = input.shape[scatter_dim]
    if size % shard_count:
        raise ValueError(f"reduce_scatter: dim {scatter_dim} of size {size} does not split into {shard_count} shards")
    reduced = all_reduce(reduce_type, input, scale=scale)
    shard = size // shard_count
    return reduced.narrow(scatter_dim, get_ordinal() * shard, shard)


def _refused(name, instead):
    raise NotImplementedError(f"torch_xla.core.xla_model.{name} is not supported by LazyScope; use {instead}")


def _refusal(name, instead):
    def refuse(*args, **kwargs):
        _refused(f"{name}()", instead)
    refuse.__name__ = name
    refuse.__doc__ = f"Refused: use {instead}."
    refuse.refused = instead
    return refuse


# Functions LazyScope does not provide, each with what to use instead.
_REFUSED = {
    "all_gather_bucketized": "all_gather of each tensor",
    "all_to_all": "all_reduce (LazyScope's only collective)",
    "collective_permute": "all_reduce (LazyScope's only collective)",
    "reduce_scatter_bucketized": "reduce_scatter of each tensor",
    "send": "all_reduce or mesh_reduce (replicas are threads; there are no point-to-point channels)",
    "recv": "all_reduce or mesh_reduce (replicas are threads; there are no point-to-point channels)",
    "get_stablehlo": "lazyscope's graph dumps (LAZYSCOPE_GRAPH_DUMP) or `lazyscope graph RUN` (no StableHLO: "
                     "graphs run on LazyScope's own CPU backend)",
    "get_stablehlo_bytecode": "lazyscope's graph dumps or `lazyscope graph RUN`",
    "get_memory_info": "the host's memory figures (lazy devices use host memory)",
    "optimization_barrier_": "mark_step() (LazyScope does not reorder computations across ops)",
    "set_replication": "xmp.spawn or DataParallel, which set up replication themselves",
    "check_view_sharing": "clone() before saving views (LazyScope does not track view aliases by id)",
    "xla_replication_devices": "get_xla_supported_devices()",
}
for _name, _instead in _REFUSED.items():
    globals()[_name] = _refusal(_name, _instead)

# PyTorch/XLA's public xla_model names and how LazyScope answers each (docs/pytorch_coverage.md).
STATUS = {name: ("refused", instead) for name, instead in _REFUSED.items()}
STATUS.update({name: ("supported", "") for name in (
    "get_xla_supported_devices", "xrt_world_size", "get_ordinal", "get_local_ordinal", "is_master_ordinal",
    "master_print", "xla_device", "all_reduce", "add_step_closure", "mark_step", "reduce_gradients",
    "optimizer_step", "save", "rendezvous", "xla_rendezvous", "mesh_reduce", "do_on_ordinals", "RateTracker",
    "is_xla_tensor", "parse_xla_device", "send_cpu_data_to_device", "collective_broadcast",
    "broadcast_master_param", "fork_rng")})
STATUS["all_gather"] = ("differs", "one tensor over all replicas (no groups, output= or lists); -0.0 gathers as 0.0 "
                                   "(an all_reduce of zeros, as PyTorch/XLA's pinned-layout all_gather)")
STATUS["reduce_scatter"] = ("differs", "one tensor over all replicas (no groups, output= or lists)")
STATUS.update({
    "wait_device_ops": ("differs", "a no-op: a barrier returns when its graph has run"),
    "unlazy": ("differs", "a barrier (mark_step) on the tensors' device"),
    "xla_device_hw": ("differs", "always 'CPU': lazy devices run on the CPU backend"),
    "xla_real_devices": ("differs", "'CPU:n' for lazy:n"),
    "set_rng_state": ("differs", "seeds lazyscope.manual_seed (one generator for every device)"),
    "get_rng_state": ("differs", "the last seed set"),
})
