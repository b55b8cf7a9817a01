"""spawn(fn, args=(), nprocs=None): torch_xla.distributed.xla_multiprocessing's
entry point, run with THREADS, not processes.

Each replica is a thread of this process driving its own lazy device
(index i → lazy:i), with the replication context set, so that
``lazy_device()``, ``get_ordinal()``, ``xrt_world_size()`` and the gradient
all-reduce in ``optimizer_step`` behave as in torch_xla's process-based
replication. Global state is shared (unlike spawned processes): a script that
relies on per-process globals must pass its state through ``args``.

In a worker process that ``lazyscope run --nproc-per-node N`` started, the
processes are the replicas: spawn joins the launcher's process group and
calls fn(local rank, *args) once, in this process, as torch_xla's spawn
does in each of its processes.
"""
import threading

from lazyscope import _C
from lazyscope.core import lazy_model as lm


class _Result:
    def __init__(self, values):
        self.values = values

    def join(self):
        return True


def spawn(fn, args=(), nprocs=None, join=True, daemon=False, start_method="spawn"):
    """Calls fn(index, *args) once per device; returns the per-replica return values
    (as a list; with join=False an object whose join() waits)."""
    from lazyscope.distributed import process_group
    if process_group.launched():
        group = process_group._ensure_from_env()
        result = fn(group.local_rank, *args)
        lm.mark_step("lazy:0")
        return _Result([result]) if not join else [result]
    count = _C.device_count()
    if nprocs is None:
        nprocs = count
    if nprocs != 1 and nprocs != count:
        raise ValueError(f"spawn: nprocs must be 1 or the number of lazy devices ({count}), got {nprocs}")
    devices = [f"lazy:{i}" for i in range(nprocs)]
    group = lm._ReplicationGroup(devices)
    results = [None] * nprocs
    errors = []

    def run(index):
        lm._enter_replica(group, index)
        try:
            results[index] = fn(index, *args)
            lm.mark_step(devices[index])
        except BaseException as exc:  # noqa: BLE001  (re-raised in the caller)
            errors.append((index, exc))
            # Free the other replicas from the rendezvous and the collectives.
            group.abort(f"replica {index} failed: {exc!r}")
        finally:
            lm._leave_replica()

    threads = [threading.Thread(target=run, args=(i,), daemon=daemon, name=f"lazyscope-spawn-{i}")
               for i in range(nprocs)]
    for t in threads:
        t.start()

    def finish():
        for t in threads:
            t.join()
        group.close()
        # The first failure is the cause: the others were released by its abort.
        real = [(i, e) for i, e in errors if not isinstance(e, threading.BrokenBarrierError)] or errors
        if real:
            index, exc = real[0]
            raise RuntimeError(f"spawn: replica {index} failed: {exc!r}") from exc
        return results

    if join:
        return finish()
    handle = _Result(results)
    handle.join = finish
    return handle
