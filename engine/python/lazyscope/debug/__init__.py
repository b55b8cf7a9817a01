"""Debugging aids: ``metrics`` (counters and timed metrics) and graph dumps."""
from lazyscope import _C
from lazyscope.debug import metrics  # noqa: F401


def dump_graph(tensors, format="text"):  # noqa: A002  (the seeds' name)
    """The pending graph the next sync of ``tensors`` (one tensor or a list) would run.

    ``format``: ``"text"`` (one line per node: op, dtype, shape, attributes,
    scope, source line), ``"dot"`` (Graphviz) or ``"proto"`` (serialized
    ``lazyscope.pb.IrGraph`` bytes). Nothing is executed.
    """
    if not isinstance(tensors, (list, tuple)):
        tensors = [tensors]
    return _C.dump_graph(list(tensors), format)
