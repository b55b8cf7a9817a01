"""``torch_xla.distributed.xla_multiprocessing`` → lazyscope.distributed.lazy_multiprocessing (threads)."""
import threading as _threading

from lazyscope.core.lazy_model import rendezvous as _rendezvous
from lazyscope.distributed.lazy_multiprocessing import spawn  # noqa: F401


def rendezvous(tag, payload=b"", replicas=()):
    """Waits for every replica; returns their payloads in ordinal order."""
    return _rendezvous(tag, payload, replicas)


class MpModelWrapper:
    """Holds one model for every replica; ``to(device)`` gives it on that device. Replicas
    are threads sharing this object, so they share (a copy per device of) the one model."""

    def __init__(self, model):
        self._model = model
        self._lock = _threading.Lock()

    def to(self, device):
        with self._lock:
            return self._model.to(device) if str(next(self._model.parameters()).device) == "cpu" else self._model

    @property
    def module(self):
        return self._model


class MpSerialExecutor:
    """Runs functions one replica at a time (a lock shared by the replica threads)."""

    def __init__(self):
        self._lock = _threading.Lock()

    def run(self, fn):
        with self._lock:
            return fn()


STATUS = {
    "spawn": ("differs", "replicas are threads of one process, one lazy device each; nprocs is 1 or the "
                         "number of lazy devices (LAZYSCOPE_DEVICE_COUNT / lazyscope run --devices)"),
    "rendezvous": ("supported", ""),
    "MpModelWrapper": ("differs", "to(device) moves the one shared model (replicas share memory already)"),
    "MpSerialExecutor": ("supported", ""),
}
