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


def run_graph(fn, *, require_compile=False):
    """Traces fn() (lazy tensors, or a tuple of them), runs it as one graph and
    returns its values as NumPy arrays and the program text of its compile
    (None for a cache hit, which require_compile refuses)."""
    from lazyscope.core import lazy_model as lm

    lm.mark_step()
    with capture_events() as events:
        result = fn()
        lm.mark_step()
    result = tuple(t.numpy() for t in result) if isinstance(result, tuple) else result.numpy()
    programs = [c["program_text"] for c in events.of("compile")]
    assert programs or not require_compile, "the graph was not compiled (a cache hit?)"
    return result, (programs[-1] if programs else None)


def bf16_round(values):
    """float32 values rounded to bfloat16 precision (nearest, ties to even), as float32: the NumPy oracle."""
    import numpy as np
    bits = np.atleast_1d(np.asarray(values, dtype=np.float32)).view(np.uint32).astype(np.uint64)
    sixteen, one = np.uint64(16), np.uint64(1)
    rounded = (bits + np.uint64(0x7FFF) + ((bits >> sixteen) & one)) >> sixteen << sixteen
    out = rounded.astype(np.uint32).view(np.float32)
    return out.reshape(np.shape(values))
