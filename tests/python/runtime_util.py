"""Helpers for the runtime tests: an event capture that yields events as dicts."""
import contextlib
import json

from lazyscope import _C


class Captured:
    def __init__(self, capture):
        self._capture = capture

    def all(self):
        return [json.loads(text) for text in self._capture.json()]

    def of(self, kind):
        return [e[kind] for e in self.all() if kind in e]


@contextlib.contextmanager
def capture_events():
    capture = _C._EventCapture()
    capture.start()
    try:
        yield Captured(capture)
    finally:
        capture.stop()


def bf16_round(values):
    """float32 values rounded to bfloat16 precision (nearest, ties to even), as float32: the NumPy oracle."""
    import numpy as np
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return rounded.astype(np.uint32).view(np.float32)
