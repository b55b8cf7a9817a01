"""ParallelLoader: a background thread uploads batches to the devices ahead
of the training loop (torch_xla.distributed.parallel_loader).

Batch i of the wrapped loader goes to ``devices[i % len(devices)]``; only
whole rounds are dealt, so every device sees the same number of steps (the
replicas meet in the gradient all-reduce each step). Iterating a per-device
loader ends the previous step with a barrier on that device (mark_step)
before handing out the next batch, which is why optimizer_step needs no
barrier under a ParallelLoader.
"""
import queue
import threading

from lazyscope import _C
from lazyscope.core import lazy_model as lm

_END = object()


def _send(data, device):
    if isinstance(data, _C.Tensor):
        return data.to(device)
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_send(x, device) for x in data))
    if isinstance(data, (list, tuple)):
        return type(data)(_send(x, device) for x in data)
    if isinstance(data, dict):
        return {k: _send(v, device) for k, v in data.items()}
    return data


class _Failure:
    def __init__(self, exc):
        self.exc = exc


class PerDeviceLoader:
    def __init__(self, loader, device):
        self._loader, self._device = loader, device
        self._queue = loader._queues[device]

    def __iter__(self):
        return self

    def __next__(self):
        # The previous step's graph on this device runs now, while the upload
        # thread keeps the queue full.
        lm.mark_step(self._device if self._device != "cpu" else None)
        item = self._queue.get()
        if item is _END:
            self._queue.put(_END)  # later calls stop too
            raise StopIteration
        if isinstance(item, _Failure):
            raise RuntimeError(f"ParallelLoader: reading the wrapped loader failed: {item.exc!r}") from item.exc
        return item

    def __len__(self):
        return self._loader.per_device_samples()

    next = __next__


class ParallelLoader:
    def __init__(self, loader, devices, batchdim=0, fixed_batch_size=False, loader_prefetch_size=8,
                 device_prefetch_size=4):
        devices = [str(d) for d in devices]
        if not devices:
            raise ValueError("ParallelLoader: needs at least one device")
        if len(set(devices)) != len(devices):
            raise ValueError(f"ParallelLoader: devices must be distinct, got {devices}")
        self._loader, self._devices = loader, devices
        self._batchdim, self._fixed = batchdim, fixed_batch_size
        self._queues = {d: queue.Queue(maxsize=device_prefetch_size) for d in devices}
        self._round = []
        self._closed = False
        self._thread = threading.Thread(target=self._worker, name="lazyscope-parallel-loader", daemon=True)
        self._thread.start()

    def per_device_loader(self, device):
        device = str(device)
        if device not in self._queues:
            raise ValueError(f"ParallelLoader: {device} is not one of this loader's devices {self._devices}")
        return PerDeviceLoader(self, device)

    def per_device_samples(self):
        return len(self._loader) // len(self._devices)

    def close(self):
        self._closed = True

    def _batch_size(self, batch):
        first = batch
        while isinstance(first, (list, tuple)) and first:
            first = first[0]
        if isinstance(first, dict) and first:
            first = next(iter(first.values()))
        return first.shape[self._batchdim] if isinstance(first, _C.Tensor) else None

    def _worker(self):
        try:
            size = None
            pending = []
            for batch in self._loader:
                if self._closed:
                    break
                if self._fixed:
                    this = self._batch_size(batch)
                    size = this if size is None else size
                    if this != size:
                        break
                pending.append(batch)
                if len(pending) == len(self._devices):
                    for device, b in zip(self._devices, pending):
                        self._queues[device].put(_send(b, device))
                    pending = []
        except Exception as exc:  # handed to the consumers, raised there
            for q in self._queues.values():
                q.put(_Failure(exc))
            return
        for q in self._queues.values():
            q.put(_END)


class MpDeviceLoader:
    """ParallelLoader(loader, [device]).per_device_loader(device), as one object."""

    def __init__(self, loader, device, **kwargs):
        self._loader, self._device, self._kwargs = loader, device, kwargs

    def __iter__(self):
        return iter(ParallelLoader(self._loader, [self._device], **self._kwargs).per_device_loader(self._device))

    def __len__(self):
        return len(self._loader)
