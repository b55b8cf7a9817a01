"""torch.nn.utils.rnn: pad_sequence and unpad_sequence, and packed
sequences (PackedSequence, pack_padded_sequence, pad_packed_sequence,
pack_sequence, unpack_sequence) as PyTorch lays them out: the time steps'
rows one after another, longest sequences first, batch_sizes on the host.
The lengths are read on the host (PyTorch requires them on the CPU too).

RNN, LSTM and GRU take a PackedSequence: they run its padded batch with each
sequence's state held past its length (nn/recurrent.py), so h_n is each
sequence's state at its own last step and the outputs past a length never
enter the packed result."""
import collections

import lazyscope


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Tensors [L_i, *] stacked into [L_max, B, *] (or [B, L_max, *] with
    batch_first), each padded with padding_value on padding_side."""
    sequences = list(sequences)
    if not sequences:
        raise ValueError("pad_sequence: expected a non-empty list of tensors")
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'right' or 'left', got {padding_side!r}")
    trailing = tuple(sequences[0].shape[1:])
    for i, s in enumerate(sequences):
        if s.dim() < 1 or tuple(s.shape[1:]) != trailing:
            raise lazyscope.ShapeError(f"pad_sequence: sequence {i} has shape {tuple(s.shape)}; every sequence must "
                                       f"be [L, *{list(trailing)}]")
    longest = max(s.shape[0] for s in sequences)
    padded = []
    for s in sequences:
        short = longest - s.shape[0]
        if short:
            fill = lazyscope.full((short, *trailing), padding_value, dtype=s.dtype, device=s.device)
            s = lazyscope.cat([s, fill] if padding_side == "right" else [fill, s], 0)
        padded.append(s)
    return lazyscope.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """pad_sequence's inverse: the list of [L_i, *] tensors (lengths read on the host)."""
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    lengths = [int(v) for v in (lengths.tolist() if hasattr(lengths, "tolist") else lengths)]
    return [x[i, :n] for i, n in enumerate(lengths)]


class PackedSequence(collections.namedtuple("PackedSequence",
                                            ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """data [sum(lengths), *]: step t's rows for the batch_sizes[t] sequences
    still running, longest first; batch_sizes an int64 CPU tensor;
    sorted_indices[i] the batch index of the i-th longest sequence (None when
    the batch came sorted), unsorted_indices its inverse."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _inverse(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: t if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=lazyscope.float64)

    def float(self):
        return self.to(dtype=lazyscope.float32)

    @property
    def is_cuda(self):
        return False

    def is_pinned(self):
        return False


def _inverse(order):
    """The permutation undoing `order` (an int64 tensor), on its device."""
    values = [int(v) for v in order.tolist()]
    inverse = [0] * len(values)
    for i, v in enumerate(values):
        inverse[v] = i
    return lazyscope.tensor(inverse, dtype=lazyscope.int64, device=order.device)


def _host_lengths(op, lengths, batch):
    values = lengths.tolist() if hasattr(lengths, "tolist") else list(lengths)
    values = [int(v) for v in values]
    if len(values) != batch:
        raise ValueError(f"{op}: expected {batch} lengths (one per sequence of the batch), got {len(values)}")
    if any(v <= 0 for v in values):
        raise ValueError(f"{op}: every length must be at least 1, got {values}")
    return values


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):  # noqa: A002
    """A padded batch [T, B, *] (or [B, T, *]) and each sequence's length as a
    PackedSequence. enforce_sorted: the lengths must come longest first (no
    reordering is recorded); otherwise the batch is sorted, stably."""
    x = input.transpose(0, 1) if batch_first else input
    if x.dim() < 2:
        raise lazyscope.ShapeError(f"pack_padded_sequence: expected a padded batch [T, B, *], got shape "
                                   f"{tuple(input.shape)}")
    steps, batch = x.shape[0], x.shape[1]
    values = _host_lengths("pack_padded_sequence", lengths, batch)
    if max(values) > steps:
        raise ValueError(f"pack_padded_sequence: a length of {max(values)} is past the batch's {steps} steps")
    if enforce_sorted:
        if any(a < b for a, b in zip(values, values[1:])):
            raise RuntimeError(f"pack_padded_sequence: `lengths` array must be sorted in decreasing order when "
                               f"`enforce_sorted` is True (got {values}); pass enforce_sorted=False to pack "
                               f"unsorted sequences")
        order = None
        sorted_values = values
    else:
        ranks = sorted(range(batch), key=lambda i: -values[i])  # stable: ties keep their batch order
        order = lazyscope.tensor(ranks, dtype=lazyscope.int64, device=x.device)
        sorted_values = [values[i] for i in ranks]
    batch_sizes = [sum(1 for v in sorted_values if v > t) for t in range(max(sorted_values))]
    return _pack(x, batch_sizes, order)


def _pack(x, batch_sizes, order):
    """[T, B, *] (batch in its own order) -> the PackedSequence of the given
    batch sizes, rows taken in `order` (None: as they are)."""
    ordered = x if order is None else x.index_select(1, order)
    data = lazyscope.cat([ordered[t, :size] for t, size in enumerate(batch_sizes)], 0)
    return PackedSequence(data, lazyscope.tensor(batch_sizes, dtype=lazyscope.int64), order,
                          None if order is None else _inverse(order))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """A PackedSequence back as (padded [T, B, *] or [B, T, *] in the batch's
    original order, lengths as an int64 CPU tensor)."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence: expected a PackedSequence, got {type(sequence).__name__}")
    padded, lengths = _unpack(sequence, padding_value)
    steps = padded.shape[0]
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"pad_packed_sequence: total_length={total_length} is shorter than the longest "
                             f"sequence ({steps})")
        if total_length > steps:
            fill = lazyscope.full((total_length - steps, *padded.shape[1:]), padding_value, dtype=padded.dtype,
                                  device=padded.device)
            padded = lazyscope.cat([padded, fill], 0)
    lengths = lazyscope.tensor(lengths, dtype=lazyscope.int64)
    return (padded.transpose(0, 1) if batch_first else padded), lengths


def _unpack(sequence, padding_value=0.0):
    """(padded [T, B, *] in the original batch order, the lengths in that order)."""
    data = sequence.data
    sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    batch = sizes[0]
    trailing = tuple(data.shape[1:])
    rows, start = [], 0
    for size in sizes:
        step = data[start:start + size]
        start += size
        if size < batch:
            fill = lazyscope.full((batch - size, *trailing), padding_value, dtype=data.dtype, device=data.device)
            step = lazyscope.cat([step, fill], 0)
        rows.append(step)
    padded = lazyscope.stack(rows, 0)
    sorted_lengths = [sum(1 for size in sizes if size > i) for i in range(batch)]
    if sequence.unsorted_indices is None:
        return padded, sorted_lengths
    back = [int(v) for v in sequence.unsorted_indices.tolist()]
    return padded.index_select(1, sequence.unsorted_indices), [sorted_lengths[i] for i in back]


def pack_sequence(sequences, enforce_sorted=True):
    """A list of [L_i, *] tensors as one PackedSequence."""
    sequences = list(sequences)
    return pack_padded_sequence(pad_sequence(sequences), [s.shape[0] for s in sequences],
                                enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """A PackedSequence back as its list of [L_i, *] tensors (original order)."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
