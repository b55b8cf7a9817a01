"""torch.nn.init: fill a parameter with values from a distribution.

The values are drawn on the host from lazyscope's generator (seeded by
``lazyscope.manual_seed``) and uploaded once: initialization runs before
training, so the upload does not cost a step. The fill is in place
(``copy_`` under no_grad, as torch.nn.init): a parameter keeps its identity,
and the function returns the tensor it was given.
"""
import math

import numpy as np

import lazyscope
from lazyscope import _C
from lazyscope.nn.parameter import Tensor, _NoGrad

_NUMPY = {"float32": np.float32, "float64": np.float64}


def _fill(tensor, array, name):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{name}: expected a Tensor, got {type(tensor).__name__}")
    value = _C.from_numpy(np.asarray(array, dtype=np.float64).astype(np.float32).reshape(tuple(tensor.shape)),
                          str(tensor.device)).to(tensor.dtype)
    with _NoGrad():
        return tensor.copy_(value)


def _rng():
    return lazyscope._rng  # looked up each time: manual_seed replaces it


def _calculate_fan_in_and_fan_out(tensor):
    dims = tensor.dim()
    if dims < 2:
        raise ValueError(f"Fan in and fan out can not be computed for a tensor with fewer than 2 dimensions "
                         f"(shape {tuple(tensor.shape)})")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def calculate_gain(nonlinearity, param=None):
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fan(tensor, mode):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ValueError(f"mode {mode!r} not supported, use 'fan_in' or 'fan_out'")


def _source(generator):
    """The NumPy generator behind ``generator`` (a lazyscope.Generator), or the shared one."""
    return _rng() if generator is None else generator._rng


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _fill(tensor, _source(generator).uniform(a, b, tuple(tensor.shape)), "uniform_")


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return _fill(tensor, _source(generator).normal(mean, std, tuple(tensor.shape)), "normal_")


def constant_(tensor, val):
    return _fill(tensor, np.full(tuple(tensor.shape), val), "constant_")


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def _default_reset(weight, bias):
    """PyTorch's default for Linear and Conv: kaiming_uniform_(a=√5) on the
    weight (a bound of 1/√fan_in) and U(-1/√fan_in, 1/√fan_in) on the bias."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std²) restricted to [a, b] (values outside are redrawn: the same distribution as PyTorch's
    inverse-CDF method)."""
    if not a < b:
        raise ValueError(f"nn.init.trunc_normal_: expected a < b, got a={a}, b={b}")
    rng = _source(generator)
    n = int(np.prod(tuple(tensor.shape), dtype=np.int64))
    values = np.empty(0)
    while values.size < n:
        draw = rng.normal(mean, std, size=max(2 * (n - values.size), 16))
        values = np.concatenate([values, draw[(draw >= a) & (draw <= b)]])
    return _fill(tensor, values[:n], "trunc_normal_")


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix, as torch.nn.init.orthogonal_: the Q of a QR decomposition
    of a Gaussian matrix [rows, numel / rows] (transposed when wider than tall), its columns'
    signs set by R's diagonal so the result is uniform (Haar), times ``gain``. The QR runs on
    the host in float64 with NumPy."""
    if tensor.dim() < 2:
        raise ValueError(f"nn.init.orthogonal_: only tensors with 2 or more dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _source(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q, "orthogonal_")


def eye_(tensor):
    """The identity matrix (ones on the diagonal of a 2-D tensor, rectangular allowed)."""
    if tensor.dim() != 2:
        raise ValueError(f"nn.init.eye_: only tensors with 2 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    return _fill(tensor, np.eye(*tuple(tensor.shape)), "eye_")


def dirac_(tensor, groups=1):
    """The Dirac delta of a convolution's weight [out, in, *kernel]: each of the first
    min(out/groups, in) channels of every group passes its input channel through unchanged."""
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError(f"nn.init.dirac_: only tensors with 3, 4, or 5 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    shape = tuple(tensor.shape)
    if shape[0] % groups != 0:
        raise ValueError(f"nn.init.dirac_: dim 0 ({shape[0]}) must be divisible by groups ({groups})")
    out_per_group = shape[0] // groups
    values = np.zeros(shape)
    center = tuple(k // 2 for k in shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            values[(g * out_per_group + d, d) + center] = 1
    return _fill(tensor, values, "dirac_")


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std²) with ceil(sparsity · rows) entries of every column set to zero (rows picked at
    random), as torch.nn.init.sparse_ for a 2-D tensor."""
    if tensor.dim() != 2:
        raise ValueError(f"nn.init.sparse_: only tensors with 2 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    rows, cols = tuple(tensor.shape)
    rng = _source(generator)
    values = rng.normal(0.0, std, (rows, cols))
    num_zeros = int(math.ceil(sparsity * rows))
    for col in range(cols):
        values[rng.permutation(rows)[:num_zeros], col] = 0
    return _fill(tensor, values, "sparse_")
