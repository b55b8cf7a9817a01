"""torch.nn.LSTM and GRU, composed from matmul and elementwise ops, one time
step after another (on a lazy device the whole unrolled sequence is one
graph). PyTorch's parameter names, shapes, gate order (LSTM i, f, g, o; GRU
r, z, n), initialization U(-1/sqrt(hidden), 1/sqrt(hidden)), batch_first,
bidirectional, num_layers with dropout between layers, and optional initial
states; unbatched [L, H_in] inputs too."""
import math

import lazyscope
from lazyscope.nn import functional as F
from lazyscope.nn import init
from lazyscope.nn.layers import _empty
from lazyscope.nn.module import Module
from lazyscope.nn.parameter import Parameter
from lazyscope.nn.utils import rnn as rnn_utils


class _RNNBase(Module):
    _gates = 1
    _name = "RNN"

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if proj_size:
            raise NotImplementedError(f"{self._name}: proj_size is not supported")
        if not 0 <= dropout <= 1:
            raise ValueError(f"{self._name}: dropout should be a number in range [0, 1], got {dropout}")
        if hidden_size <= 0 or num_layers <= 0:
            raise ValueError(f"{self._name}: hidden_size and num_layers must be positive, got {hidden_size} and "
                             f"{num_layers}")
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout, self.bidirectional = bias, batch_first, dropout, bidirectional
        directions = 2 if bidirectional else 1
        self._flat_names = []
        for layer in range(num_layers):
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                layer_input = input_size if layer == 0 else hidden_size * directions
                shapes = [("weight_ih", (self._gates * hidden_size, layer_input)),
                          ("weight_hh", (self._gates * hidden_size, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (self._gates * hidden_size,)), ("bias_hh", (self._gates * hidden_size,))]
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(_empty(*shape, device=device, dtype=dtype)))
                    self._flat_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size)
        for name in self._flat_names:
            init.uniform_(getattr(self, name), -bound, bound)

    def _params(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction else "")
        get = lambda name: getattr(self, name + suffix, None)  # noqa: E731
        return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")

    def _check(self, input, hx):
        if input.dim() not in (2, 3):
            raise lazyscope.ShapeError(f"{self._name}: expected a 2-D (unbatched) or 3-D input, got shape "
                                       f"{tuple(input.shape)}" + lazyscope._C._at_user_line())
        if input.shape[-1] != self.input_size:
            raise lazyscope.ShapeError(f"{self._name}: input.size(-1) must be equal to input_size. Expected "
                                       f"{self.input_size}, got {input.shape[-1]}" + lazyscope._C._at_user_line())

    def forward(self, input, hx=None):  # noqa: A002
        packed = input if isinstance(input, rnn_utils.PackedSequence) else None
        lengths = None
        if packed is not None:
            # The padded batch in its original order; each sequence's state is
            # held past its length (so h_n is its last step's, and the reverse
            # direction starts at its own last step), outputs there unused.
            input, lengths = rnn_utils._unpack(packed)
            if self.batch_first:
                input = input.transpose(0, 1)
        self._check(input, hx)
        unbatched = input.dim() == 2
        x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first else input)
        steps, batch = x.shape[0], x.shape[1]
        directions = 2 if self.bidirectional else 1
        states = self._initial_states(hx, unbatched, batch, directions, x)
        finals = [[] for _ in states]
        layer_input = [x[t] for t in range(steps)]
        running = None
        if lengths is not None:
            length_tensor = lazyscope.tensor(lengths, dtype=lazyscope.int64, device=x.device).unsqueeze(-1)
            running = [length_tensor > t for t in range(steps)]  # [B, 1] each: still inside its sequence
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                state = tuple(s[index] for s in states)
                order = range(steps - 1, -1, -1) if direction else range(steps)
                w_ih, w_hh, b_ih, b_hh = self._params(layer, direction)
                seq = [None] * steps
                for t in order:
                    new = self._cell(layer_input[t], state, w_ih, w_hh, b_ih, b_hh)
                    if running is not None and min(lengths) <= t:
                        new = tuple(n.where(running[t], s) for n, s in zip(new, state))
                    state = new
                    seq[t] = state[0]
                outputs.append(seq)
                for k, s in enumerate(state):
                    finals[k].append(s)
            layer_input = [lazyscope.cat([o[t] for o in outputs], -1) if directions == 2 else outputs[0][t]
                           for t in range(steps)]
            if self.dropout and self.training and layer < self.num_layers - 1:
                layer_input = [F.dropout(h, self.dropout, True) for h in layer_input]
        output = lazyscope.stack(layer_input, 0)
        finals = [lazyscope.stack(f, 0) for f in finals]
        if packed is not None:
            sizes = [int(v) for v in packed.batch_sizes.tolist()]
            out = rnn_utils._pack(output, sizes, packed.sorted_indices)
            return out, (tuple(finals) if len(finals) > 1 else finals[0])
        if unbatched:
            output = output.squeeze(1)
            finals = [f.squeeze(1) for f in finals]
        elif self.batch_first:
            output = output.transpose(0, 1)
        return output, (tuple(finals) if len(finals) > 1 else finals[0])

    def _initial_states(self, hx, unbatched, batch, directions, like):
        count = self.num_layers * directions
        parts = self._state_count
        if hx is None:
            zero = lazyscope.zeros(count, batch, self.hidden_size, dtype=like.dtype, device=like.device)
            return [zero] * parts
        given = list(hx) if isinstance(hx, (tuple, list)) else [hx]
        if len(given) != parts:
            raise ValueError(f"{self._name}: expected {'(h_0, c_0)' if parts == 2 else 'h_0'}, got {len(given)} "
                             f"tensors")
        out = []
        for h in given:
            h = h.unsqueeze(1) if unbatched else h
            if tuple(h.shape) != (count, batch, self.hidden_size):
                raise lazyscope.ShapeError(f"{self._name}: expected hidden size {(count, batch, self.hidden_size)}, "
                                           f"got {tuple(h.shape)}" + lazyscope._C._at_user_line())
            out.append(h)
        return out

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


def _affine(x, w, b):
    out = x @ w.t()
    return out + b if b is not None else out


def _lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh):
    h, c = state
    gates = _affine(x, w_ih, b_ih) + _affine(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def _gru_cell(x, state, w_ih, w_hh, b_ih, b_hh):
    (h,) = state
    xr, xz, xn = _affine(x, w_ih, b_ih).chunk(3, -1)
    hr, hz, hn = _affine(h, w_hh, b_hh).chunk(3, -1)
    r = (xr + hr).sigmoid()
    z = (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    return ((1 - z) * n + z * h,)


_NONLINEARITIES = {"tanh": lambda t: t.tanh(), "relu": lambda t: t.relu()}


def _nonlinearity(owner, name):
    if name not in _NONLINEARITIES:
        raise ValueError(f"{owner}: unknown nonlinearity '{name}', expected 'tanh' or 'relu'")
    return _NONLINEARITIES[name]


class LSTM(_RNNBase):
    _gates = 4
    _state_count = 2
    _name = "LSTM"

    def _cell(self, x, state, w_ih, w_hh, b_ih, b_hh):
        return _lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh)


class GRU(_RNNBase):
    _gates = 3
    _state_count = 1
    _name = "GRU"

    def _cell(self, x, state, w_ih, w_hh, b_ih, b_hh):
        return _gru_cell(x, state, w_ih, w_hh, b_ih, b_hh)


class RNN(_RNNBase):
    """The Elman RNN: h_t = nonlinearity(x_t·W_ihᵀ + b_ih + h_{t−1}·W_hhᵀ + b_hh), tanh or relu."""
    _gates = 1
    _state_count = 1
    _name = "RNN"

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        _nonlinearity("RNN", nonlinearity)  # a bad name fails before any parameter is made
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def _cell(self, x, state, w_ih, w_hh, b_ih, b_hh):
        return (_NONLINEARITIES[self.nonlinearity](_affine(x, w_ih, b_ih) + _affine(state[0], w_hh, b_hh)),)


class _CellBase(Module):
    """One time step of an RNN, LSTM or GRU: PyTorch's parameters (weight_ih [G·H, I], weight_hh [G·H, H],
    bias_ih, bias_hh), init U(−1/√H, 1/√H), and call (input [B, I] or [I], hx=None)."""
    _gates, _state_count, _name = 1, 1, "RNNCell"

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__()
        if hidden_size <= 0:
            raise ValueError(f"{self._name}: hidden_size must be positive, got {hidden_size}")
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = self._gates * hidden_size
        self.weight_ih = Parameter(_empty(g, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(_empty(g, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_empty(g, device=device, dtype=dtype))
            self.bias_hh = Parameter(_empty(g, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.hidden_size)
        for p in self.parameters():
            init.uniform_(p, -bound, bound)

    def forward(self, input, hx=None):  # noqa: A002
        if input.dim() not in (1, 2) or input.shape[-1] != self.input_size:
            raise lazyscope.ShapeError(f"{self._name}: expected an input [batch, {self.input_size}] or "
                                       f"[{self.input_size}], got shape {tuple(input.shape)}"
                                       + lazyscope._C._at_user_line())
        unbatched = input.dim() == 1
        x = input.unsqueeze(0) if unbatched else input
        if hx is None:
            zero = lazyscope.zeros(x.shape[0], self.hidden_size, dtype=x.dtype, device=x.device)
            state = (zero,) * self._state_count
        else:
            state = tuple(hx) if isinstance(hx, (tuple, list)) else (hx,)
            if len(state) != self._state_count:
                raise ValueError(f"{self._name}: expected {'(h, c)' if self._state_count == 2 else 'h'}, got "
                                 f"{len(state)} tensors")
            state = tuple(h.unsqueeze(0) if unbatched else h for h in state)
            for h in state:
                if tuple(h.shape) != (x.shape[0], self.hidden_size):
                    raise lazyscope.ShapeError(f"{self._name}: expected a hidden state of shape "
                                               f"{(x.shape[0], self.hidden_size)}, got {tuple(h.shape)}"
                                               + lazyscope._C._at_user_line())
        out = self._step(x, state, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        if unbatched:
            out = tuple(o.squeeze(0) for o in out)
        return out if self._state_count == 2 else out[0]

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}" + ("" if self.bias else ", bias=False")


class RNNCell(_CellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        _nonlinearity("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, device, dtype)
        self.nonlinearity = nonlinearity

    def _step(self, x, state, w_ih, w_hh, b_ih, b_hh):
        return (_NONLINEARITIES[self.nonlinearity](_affine(x, w_ih, b_ih) + _affine(state[0], w_hh, b_hh)),)


class LSTMCell(_CellBase):
    _gates, _state_count, _name = 4, 2, "LSTMCell"

    def _step(self, x, state, w_ih, w_hh, b_ih, b_hh):
        return _lstm_cell(x, state, w_ih, w_hh, b_ih, b_hh)


class GRUCell(_CellBase):
    _gates, _state_count, _name = 3, 1, "GRUCell"

    def _step(self, x, state, w_ih, w_hh, b_ih, b_hh):
        return _gru_cell(x, state, w_ih, w_hh, b_ih, b_hh)
