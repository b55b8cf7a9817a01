"""torch.nn.utils.rnn's padding helpers: pad_sequence and unpad_sequence.
Packed sequences (pack_padded_sequence) are refused, naming the way round:
the recurrent layers here run padded batches."""
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


def _refused(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(f"torch.nn.utils.rnn.{name} is not supported (LazyScope's RNN, LSTM and GRU take "
                                  f"padded batches); use pad_sequence, with a mask on the outputs past each length")
    fn.__name__ = name
    return fn


pack_padded_sequence = _refused("pack_padded_sequence")
pad_packed_sequence = _refused("pad_packed_sequence")
pack_sequence = _refused("pack_sequence")
