"""nn.RNN (tanh and relu), RNNCell, LSTMCell and GRUCell against NumPy
written from PyTorch's equations (test_nn_more's LSTM/GRU references for
the cells, run for one step), gradients by central differences, and errors."""
import numpy as np
import pytest

import lazyscope
from lazyscope import nn
from test_autograd import check
from test_nn_more import gru_ref, lstm_ref, params

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(61)


def rnn_ref(x, p, layers, hidden, bidirectional, act, h0=None):
    dirs = 2 if bidirectional else 1
    steps, batch = x.shape[0], x.shape[1]
    hs, inp = [], x
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            h = np.zeros((batch, hidden)) if h0 is None else h0[layer * dirs + d]
            out = np.zeros((steps, batch, hidden))
            for t in (range(steps - 1, -1, -1) if d else range(steps)):
                h = act(inp[t] @ p["weight_ih" + sfx].T + p["bias_ih" + sfx] + h @ p["weight_hh" + sfx].T
                        + p["bias_hh" + sfx])
                out[t] = h
            outs.append(out)
            hs.append(h)
        inp = np.concatenate(outs, -1)
    return inp, np.stack(hs)


ACTS = {"tanh": np.tanh, "relu": lambda v: np.maximum(v, 0)}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("nonlinearity", ["tanh", "relu"])
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_rnn_matches_numpy(device, nonlinearity, layers, bidirectional):
    lazyscope.manual_seed(4)
    m = nn.RNN(3, 5, layers, nonlinearity, batch_first=True, bidirectional=bidirectional).to(device)
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)  # batch_first
    dirs = 2 if bidirectional else 1
    h0 = rng.standard_normal((layers * dirs, 2, 5)).astype(np.float32)
    out, h = m(lazyscope.tensor(x, device=device), lazyscope.tensor(h0, device=device))
    want_out, want_h = rnn_ref(x.transpose(1, 0, 2).astype(np.float64), params(m), layers, 5, bidirectional,
                               ACTS[nonlinearity], h0.astype(np.float64))
    np.testing.assert_allclose(out.numpy(), want_out.transpose(1, 0, 2), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(h.numpy(), want_h, rtol=1e-5, atol=1e-5)
    assert np.abs(params(m)["weight_ih_l0"]).max() <= 1 / np.sqrt(5)


def test_rnn_rejects_an_unknown_nonlinearity():
    with pytest.raises(ValueError, match="RNN: unknown nonlinearity 'sigmoid', expected 'tanh' or 'relu'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")


def one_step(cell):
    """A cell's parameters under the names of a 1-layer module (suffix _l0) for the NumPy references."""
    return {name + "_l0": v for name, v in params(cell).items()}


@pytest.mark.parametrize("device", DEVICES)
def test_cells_match_one_step_of_their_sequences(device):
    lazyscope.manual_seed(9)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    h = rng.standard_normal((3, 6)).astype(np.float32)
    c = rng.standard_normal((3, 6)).astype(np.float32)
    t = lambda a: lazyscope.tensor(a, device=device)  # noqa: E731
    x64 = x[None].astype(np.float64)

    lstm = nn.LSTMCell(4, 6).to(device)
    h1, c1 = lstm(t(x), (t(h), t(c)))
    _, want_h, want_c = lstm_ref(x64, one_step(lstm), 1, 6, False, h[None], c[None])
    np.testing.assert_allclose(h1.numpy(), want_h[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c1.numpy(), want_c[0], rtol=1e-5, atol=1e-6)

    gru = nn.GRUCell(4, 6).to(device)
    _, want = gru_ref(x64, one_step(gru), 1, 6, False, h[None])
    np.testing.assert_allclose(gru(t(x), t(h)).numpy(), want[0], rtol=1e-5, atol=1e-6)

    rnn = nn.RNNCell(4, 6, nonlinearity="relu").to(device)
    _, want = rnn_ref(x64, one_step(rnn), 1, 6, False, ACTS["relu"], h[None])
    np.testing.assert_allclose(rnn(t(x), t(h)).numpy(), want[0], rtol=1e-5, atol=1e-6)

    # No state: zeros; an unbatched [I] input gives an unbatched state.
    _, want = gru_ref(x64[:, :1], one_step(gru), 1, 6, False)
    np.testing.assert_allclose(gru(t(x[0])).numpy(), want[0, 0], rtol=1e-5, atol=1e-6)
    with pytest.raises(lazyscope.ShapeError, match=r"LSTMCell: expected a hidden state of shape \(3, 6\), got"):
        lstm(t(x), (t(h[:2]), t(c[:2])))
    with pytest.raises(lazyscope.ShapeError, match=r"GRUCell: expected an input \[batch, 4\] or \[4\]"):
        gru(t(h))


@pytest.mark.parametrize("device", DEVICES)
def test_lstm_cell_gradients_match_finite_differences(device):
    lazyscope.manual_seed(2)
    cell = nn.LSTMCell(3, 2, bias=False).to(device).to(lazyscope.float64)
    p = one_step(cell)
    p["bias_ih_l0"] = p["bias_hh_l0"] = np.zeros(8)

    def ref(x, h, c):
        _, hh, cc = lstm_ref(x[None], p, 1, 2, False, h[None], c[None])
        return np.concatenate([hh[0], cc[0]], -1)

    def engine(x, h, c):
        h1, c1 = cell(x, (h, c))
        return lazyscope.cat([h1, c1], -1)

    check(engine, ref, [rng.standard_normal((2, 3)), rng.standard_normal((2, 2)), rng.standard_normal((2, 2))],
          device)
