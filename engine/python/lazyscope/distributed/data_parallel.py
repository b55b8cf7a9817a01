"""DataParallel: one model replica per device, one thread per replica
(torch_xla.distributed.data_parallel). Inside ``loop_fn``,
``lazy_model.optimizer_step`` averages the gradients across the replicas, so
the replicas stay identical. An empty device list runs one replica on the
eager CPU device.
"""
import copy
import threading

from lazyscope.core import lazy_model as lm
from lazyscope.distributed.parallel_loader import ParallelLoader
from lazyscope.nn.module import Module


class Context:
    """Per-device storage that lives as long as the DataParallel object."""

    def __init__(self, device):
        self.device = device

    def getattr_or(self, name, defval):
        value = getattr(self, name, None)
        if value is None:
            value = defval() if callable(defval) else defval
            setattr(self, name, value)
        return value


class _StepLoader:
    """Yields (step, batch), as torch_xla's per-device loader inside DataParallel."""

    def __init__(self, loader):
        self._loader = loader

    def __iter__(self):
        return enumerate(self._loader)

    def __len__(self):
        return len(self._loader)


class _CpuLoader:
    def __init__(self, loader):
        self._loader = loader

    def __iter__(self):
        return iter(self._loader)

    def __len__(self):
        return len(self._loader)


class DataParallel:
    def __init__(self, network, device_ids=None):
        if device_ids is None:
            device_ids = lm.get_lazy_supported_devices()
        self._devices = [str(d) for d in device_ids]
        base = network if isinstance(network, Module) else network()
        if not isinstance(base, Module):
            raise TypeError(f"DataParallel: network must be an nn.Module or a callable returning one, got "
                            f"{type(base).__name__}")
        targets = self._devices or ["cpu"]
        # One replica per device, all starting from the same weights.
        self._models = [base.to(targets[0])] + [copy.deepcopy(base).to(d) for d in targets[1:]]
        self._contexts = [Context(d) for d in targets]

    @property
    def models(self):
        return self._models

    def __call__(self, loop_fn, loader, fixed_batch_size=False, batchdim=0):
        """Runs one epoch: loop_fn(model, device_loader, device, context) on every
        device, in parallel threads; returns their results, in device order."""
        if not self._devices:
            return [loop_fn(self._models[0], _StepLoader(_CpuLoader(loader)), "cpu", self._contexts[0])]
        para = ParallelLoader(loader, self._devices, batchdim=batchdim, fixed_batch_size=fixed_batch_size)
        group = lm._ReplicationGroup(self._devices)
        results = [None] * len(self._devices)
        errors = []

        def run(i, device):
            lm._enter_replica(group, i)
            try:
                results[i] = loop_fn(self._models[i], _StepLoader(para.per_device_loader(device)), device,
                                     self._contexts[i])
                lm.mark_step(device)  # the last step's graph
            except BaseException as exc:  # noqa: BLE001  (re-raised in the caller)
                errors.append((device, exc))
                # Free the other replicas from the rendezvous and the collectives.
                group.abort(f"the loop on {device} failed: {exc!r}")
            finally:
                lm._leave_replica()

        threads = [threading.Thread(target=run, args=(i, d), name=f"lazyscope-replica-{d}")
                   for i, d in enumerate(self._devices)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        para.close()
        group.close()
        # The first failure is the cause: the others were released by its abort.
        real = [(d, e) for d, e in errors if not isinstance(e, threading.BrokenBarrierError)] or errors
        if real:
            device, exc = real[0]
            raise RuntimeError(f"DataParallel: the loop on {device} failed: {exc!r}") from exc
        return results
