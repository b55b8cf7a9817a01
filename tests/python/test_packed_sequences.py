"""Packed sequences (torch.nn.utils.rnn): PyTorch's layout (time steps' rows
longest first, batch_sizes, sorted/unsorted indices) checked by hand, the
round trips pad -> pack -> pad, and LSTM/GRU/RNN on a PackedSequence
against NumPy run on each sequence alone at its own length (test_nn_more's
references): outputs, h_n and c_n (each sequence's state at its own last
step, the reverse direction starting there), gradients through the packed
path by finite differences, both devices."""
import numpy as np
import pytest

import lazyscope
from lazyscope import nn
from lazyscope.nn.utils import rnn as rnn_utils
from test_nn_more import gru_ref, lstm_ref, params

DEVICES = ["cpu", "lazy:0"]


def t(a, dev, dtype=None):
    return lazyscope.tensor(np.asarray(a), device=dev, dtype=dtype)


@pytest.mark.parametrize("dev", DEVICES)
def test_pack_padded_sequence_lays_out_rows_as_pytorch(dev):
    # Three sequences of lengths 2, 4, 1 (batch order), features [value, batch index].
    lengths = [2, 4, 1]
    x = np.zeros((4, 3, 2))
    for b, n in enumerate(lengths):
        for step in range(n):
            x[step, b] = [10 * step + b, b]
    packed = rnn_utils.pack_padded_sequence(t(x, dev), lengths, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 1, 1]
    assert packed.sorted_indices.tolist() == [1, 0, 2] and packed.unsorted_indices.tolist() == [1, 0, 2]
    # Step 0: sequences 1, 0, 2; step 1: 1, 0; steps 2, 3: 1.
    want = [[0 + 1, 1], [0, 0], [2, 2], [10 + 1, 1], [10, 0], [21, 1], [31, 1]]
    np.testing.assert_array_equal(packed.data.numpy(), want)
    padded, got_lengths = rnn_utils.pad_packed_sequence(packed, batch_first=True, padding_value=-1.0,
                                                        total_length=5)
    assert got_lengths.tolist() == lengths and tuple(padded.shape) == (3, 5, 2)
    want_padded = np.full((3, 5, 2), -1.0)
    for b, n in enumerate(lengths):
        want_padded[b, :n] = x[:n, b]
    np.testing.assert_array_equal(padded.numpy(), want_padded)
    seqs = [t(x[:n, b], dev) for b, n in enumerate(lengths)]
    for got, n, b in zip(rnn_utils.unpack_sequence(rnn_utils.pack_sequence(seqs, enforce_sorted=False)), lengths,
                         range(3)):
        np.testing.assert_array_equal(got.numpy(), x[:n, b])


def test_packing_errors_are_clear():
    x = lazyscope.zeros(4, 3, 2)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        rnn_utils.pack_padded_sequence(x, [2, 4, 1])
    with pytest.raises(ValueError, match="expected 3 lengths"):
        rnn_utils.pack_padded_sequence(x, [2, 1], enforce_sorted=False)
    with pytest.raises(ValueError, match="at least 1"):
        rnn_utils.pack_padded_sequence(x, [4, 0, 1])
    with pytest.raises(ValueError, match="past the batch's 4 steps"):
        rnn_utils.pack_padded_sequence(x, [5, 2, 1])
    packed = rnn_utils.pack_padded_sequence(x, [4, 2, 1])
    with pytest.raises(ValueError, match="total_length=2 is shorter"):
        rnn_utils.pad_packed_sequence(packed, total_length=2)


def per_sequence_reference(ref, x, lengths, p, layers, hidden, bidirectional, h0=None, c0=None):
    """NumPy: each sequence run alone over its own length -> (padded outputs, h_n, c_n or None)."""
    dirs = 2 if bidirectional else 1
    out = np.zeros((x.shape[0], x.shape[1], hidden * dirs))
    hs, cs = [], []
    for b, n in enumerate(lengths):
        args = [x[:n, b:b + 1], p, layers, hidden, bidirectional]
        if h0 is not None:
            args.append(h0[:, b:b + 1])
        if c0 is not None:
            args.append(c0[:, b:b + 1])
        res = ref(*args)
        out[:n, b] = res[0][:, 0]
        hs.append(res[1][:, 0])
        if len(res) > 2:
            cs.append(res[2][:, 0])
    return out, np.stack(hs, 1), (np.stack(cs, 1) if cs else None)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("layers,bidirectional,batch_first", [(1, False, False), (2, True, True)])
def test_lstm_on_a_packed_batch_matches_each_sequence_alone(dev, layers, bidirectional, batch_first):
    lazyscope.manual_seed(3)
    lstm = nn.LSTM(3, 4, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first,
                   dtype=lazyscope.float64).to(dev)
    r = np.random.default_rng(5)
    lengths = [3, 5, 1, 5]
    x = r.standard_normal((5, 4, 3))
    dirs = 2 if bidirectional else 1
    h0, c0 = r.standard_normal((2, layers * dirs, 4, 4))
    xin = x.transpose(1, 0, 2) if batch_first else x
    packed = rnn_utils.pack_padded_sequence(t(xin, dev), lengths, batch_first=batch_first, enforce_sorted=False)
    out, (h, c) = lstm(packed, (t(h0, dev), t(c0, dev)))
    assert isinstance(out, rnn_utils.PackedSequence)
    assert out.batch_sizes.tolist() == packed.batch_sizes.tolist()
    padded, got_lengths = rnn_utils.pad_packed_sequence(out)
    want, wh, wc = per_sequence_reference(lstm_ref, x, lengths, params(lstm), layers, 4, bidirectional, h0, c0)
    assert got_lengths.tolist() == lengths
    np.testing.assert_allclose(padded.numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.numpy(), wh, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c.numpy(), wc, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
def test_gru_on_a_packed_batch_matches_each_sequence_alone(dev):
    lazyscope.manual_seed(4)
    gru = nn.GRU(2, 3, num_layers=2, bidirectional=True, dtype=lazyscope.float64).to(dev)
    r = np.random.default_rng(6)
    lengths = [4, 4, 2]  # sorted: enforce_sorted=True records no reordering
    x = r.standard_normal((4, 3, 2))
    packed = rnn_utils.pack_padded_sequence(t(x, dev), lengths)
    assert packed.sorted_indices is None
    out, h = gru(packed)
    padded, _ = rnn_utils.pad_packed_sequence(out)
    want, wh, _ = per_sequence_reference(gru_ref, x, lengths, params(gru), 2, 3, True)
    np.testing.assert_allclose(padded.numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.numpy(), wh, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
def test_gradients_through_a_packed_lstm_match_finite_differences(dev):
    lazyscope.manual_seed(5)
    lstm = nn.LSTM(2, 3, dtype=lazyscope.float64).to(dev)
    p = params(lstm)
    r = np.random.default_rng(7)
    lengths = [1, 3, 2]
    x = r.standard_normal((3, 3, 2))
    w = r.standard_normal((3, 3))  # weights on h_n

    def ref_loss(xm):
        _, hn, _ = per_sequence_reference(lstm_ref, xm, lengths, p, 1, 3, False)
        return (hn[0] * w).sum()

    xt = t(x, dev).requires_grad_()
    _, (h, _) = lstm(rnn_utils.pack_padded_sequence(xt, lengths, enforce_sorted=False))
    (h[0] * t(w, dev)).sum().backward()
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        fd[i] = (ref_loss(up) - ref_loss(down)) / 2e-6
    np.testing.assert_allclose(xt.grad.numpy(), fd, atol=1e-7)
    # Steps past a sequence's length get no gradient.
    assert np.all(xt.grad.numpy()[1:, 0] == 0) and np.all(xt.grad.numpy()[2:, 2] == 0)
