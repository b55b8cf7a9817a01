"""LazyScope: a lazy-tensor engine with PyTorch's names.

Tensors on the ``cpu`` device run at once; tensors on a lazy device
(``lazy:0`` …) record their ops into an IR graph that runs at a barrier
(``lazyscope.core.lazy_model.mark_step()``) or when a value is read.
"""
import os as _os

import numpy as _np

from lazyscope import _C
from lazyscope._C import (  # noqa: F401  (re-exported API)
    abs,
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    flatten,
    logsumexp,
    log_softmax,
    softmax,
    one_hot,
    cat,
    concat,
    concatenate,
    stack,
    split,
    chunk,
    narrow,
    index_select,
    embedding,
    nll_loss,
    cross_entropy,
    mse_loss,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    gelu,
    silu,
    softplus,
    leaky_relu,
    mean,
    permute,
    reshape,
    squeeze,
    t,
    transpose,
    unsqueeze,
    prod,
    std,
    var,
    clamp,
    clip,
    cos,
    div,
    eq,
    erf,
    exp,
    ge,
    gt,
    le,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    lt,
    maximum,
    minimum,
    ne,
    neg,
    negative,
    pow,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    tanh,
    true_divide,
    where,
    DeviceMismatchError,
    EngineError,
    IndexError,
    ShapeError,
    Tensor,
    add,
    device,
    dtype,
    matmul,
    # Convolution, pooling, normalization, dropout
    conv2d,
    max_pool2d,
    avg_pool2d,
    adaptive_avg_pool2d,
    layer_norm,
    batch_norm,
    dropout,
    dropout2d,
    mul,
    relu,
    sub,
    sum,
)

_C._install_source_provider(_os.path.dirname(_os.path.abspath(__file__)) + _os.sep)

bool = dtype.bool  # noqa: A001  (PyTorch's name)
uint8 = dtype.uint8
int32 = dtype.int32
int64 = dtype.int64
long = dtype.int64
float16 = dtype.float16
half = dtype.float16
bfloat16 = dtype.bfloat16
float32 = dtype.float32
float = dtype.float32  # noqa: A001
float64 = dtype.float64
double = dtype.float64

_NUMPY_OF = {
    dtype.bool: _np.bool_, dtype.uint8: _np.uint8, dtype.int32: _np.int32,
    dtype.int64: _np.int64, dtype.float16: _np.float16,
    dtype.float32: _np.float32, dtype.float64: _np.float64,
}

_rng = _np.random.default_rng(0)


def manual_seed(seed):
    """Seeds the generator behind rand/randn and the engine's (dropout masks)."""
    global _rng
    _rng = _np.random.default_rng(seed)
    _C.manual_seed(seed)


def _device_str(dev):
    return "cpu" if dev is None else str(dev)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _leaf(t, requires_grad):
    return t.requires_grad_() if requires_grad else t


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data`` (nested lists, scalars, NumPy arrays)."""
    if isinstance(data, Tensor):
        data = data.numpy()
    array = _np.asarray(data)
    if dtype is not None and dtype != bfloat16:
        array = array.astype(_NUMPY_OF[dtype])
    elif array.dtype == _np.float64 and not isinstance(data, _np.ndarray):
        array = array.astype(_np.float32)  # Python floats default to float32, as in PyTorch
    t = _C.from_numpy(array, _device_str(device))
    if dtype == bfloat16:
        t = t.to(bfloat16)
    return _leaf(t, requires_grad)


def from_numpy(array):
    return _C.from_numpy(array, "cpu")


def _filled(value, size, dtype, device, requires_grad=False):
    dt = _NUMPY_OF[dtype or float32]
    return _leaf(_C.from_numpy(_np.full(_shape(size), value, dtype=dt), _device_str(device)), requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _filled(0, size, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _filled(1, size, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    return _filled(fill_value, (size,), dtype, device, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False):
    dt = _NUMPY_OF[dtype or float32]
    return _leaf(_C.from_numpy(_rng.standard_normal(_shape(size)).astype(dt), _device_str(device)), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False):
    dt = _NUMPY_OF[dtype or float32]
    return _leaf(_C.from_numpy(_rng.random(_shape(size)).astype(dt), _device_str(device)), requires_grad)


is_grad_enabled = _C.is_grad_enabled


class set_grad_enabled:
    """Turns gradient recording on or off for this thread: a call, a context manager or a decorator."""

    def __init__(self, mode):
        self._previous = _C.is_grad_enabled()
        self._mode = mode
        _C.set_grad_enabled(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._previous)
        return False


class _GradMode:
    _mode = None

    def __enter__(self):
        self._previous = _C.is_grad_enabled()
        _C.set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _C.set_grad_enabled(self._previous)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Ops inside record no autograd graph (thread-local), as ``torch.no_grad``."""
    _mode = False


class enable_grad(_GradMode):
    """Turns recording back on inside a ``no_grad`` block."""
    _mode = True


def mm(a, b):
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"mm: expected 2-D tensors, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    return _C.matmul(a, b)


def bmm(a, b):
    if a.dim() != 3 or b.dim() != 3:
        raise ValueError(f"bmm: expected 3-D tensors, got shapes {tuple(a.shape)} and {tuple(b.shape)}")
    return _C.matmul(a, b)


class _ValuesIndices(tuple):
    """PyTorch's return type of max(dim)/min(dim): (values, indices) with names."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


def _extreme(name, amax, argmax, binary):
    def reduce(input, dim=None, keepdim=False):  # noqa: A002  (PyTorch's name)
        if isinstance(dim, Tensor):
            return binary(input, dim)
        if dim is None:
            if keepdim:
                raise TypeError(f"{name}(): keepdim needs a dim")
            return amax(input)
        return _ValuesIndices(amax(input, dim, keepdim), argmax(input, dim, keepdim))
    reduce.__name__ = name
    reduce.__doc__ = (f"{name}(): over all elements; {name}(dim, keepdim=False): (values, indices); "
                      f"{name}(other): elementwise, as in PyTorch.")
    return reduce


max = _extreme("max", _C.amax, _C.argmax, _C.maximum)  # noqa: A001
min = _extreme("min", _C.amin, _C.argmin, _C.minimum)  # noqa: A001
Tensor.max = max
Tensor.min = min


def _tensor_repr(self):
    suffix = "" if self.device.type == "cpu" else f", device='{self.device}'"
    body = _np.array2string(self.numpy(), separator=", ", prefix="tensor(")
    return f"tensor({body}{suffix})"


Tensor.__repr__ = _tensor_repr
Tensor.__str__ = _tensor_repr

from lazyscope.core import lazy_model  # noqa: E402,F401

# --- Runtime: data-dependent ops, scalar logging, metrics, debugging. -------
import atexit as _atexit  # noqa: E402

from lazyscope._C import masked_select, nonzero, unique  # noqa: E402,F401
from lazyscope import debug  # noqa: E402,F401


def log(input, value=None):  # noqa: A002  (PyTorch's name)
    """``log(tensor)``: the elementwise natural logarithm, as ``torch.log``.

    ``log(name, value)``: records a scalar (a Python number, or a one-element
    tensor) under ``name`` at the current step. A lazy tensor is not read at
    the call — no sync: its value is computed by the step's graph and
    published after the next ``mark_step``.
    """
    if isinstance(input, str):
        if value is None:
            raise TypeError(f"log({input!r}, value): a value to record is needed")
        _C.log_scalar(input, value)
        return None
    if value is not None:
        raise TypeError("log(input) takes one tensor; to record a scalar, pass a name first: log('loss', loss)")
    return _C.log(input)


# The last metric values, for whoever records the run (a no-op without a subscriber).
_atexit.register(_C.publish_metric_snapshot)

# The PyTorch-style front end: nn, optim, data, serialization (lazyscope.save/load).
from lazyscope import datasets, distributed, nn, optim, utils  # noqa: E402,F401
from lazyscope.serialization import load, save  # noqa: E402,F401
