"""LazyScope: a lazy-tensor engine with PyTorch's names.

Tensors on the ``cpu`` device run at once; tensors on a lazy device
(``lazy:0`` …) record their ops into an IR graph that runs at a barrier
(``lazyscope.core.lazy_model.mark_step()``) or when a value is read.
"""
import builtins as _builtins
import os as _os

# oneDNN's convolutions run on libgomp's threads, which otherwise spin
# after each parallel region beside the engine's own thread pool (a core
# lost to every kernel after a convolution on a small machine). libgomp
# reads this when it loads, with _C below, so it is set first unless the
# user chose a policy (or an OpenMP library was loaded before lazyscope).
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as _np

from lazyscope import _C
from lazyscope import _signatures

__version__ = _C.__version__  # LazyScope's own (not a PyTorch version a script could compare against)

# Before any name is taken from _C: argument-type errors in PyTorch's words.
_signatures.install(_C, _C.Tensor)

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
    OutOfMemoryError,
    ShapeError,
    Tensor,
    add,
    device,
    dtype,
    matmul,
    # Convolution, pooling, normalization, dropout
    conv2d,
    conv_transpose2d,
    max_pool2d,
    avg_pool2d,
    adaptive_avg_pool2d,
    conv3d,
    conv_transpose3d,
    max_pool3d,
    avg_pool3d,
    adaptive_avg_pool3d,
    layer_norm,
    batch_norm,
    dropout,
    dropout2d,
    mul,
    relu,
    sub,
    sum,
    # Indexing, scatters, sorting, scans and triangles.
    gather,
    scatter,
    scatter_add,
    index_put,
    masked_fill,
    argsort,
    cumsum,
    cumprod,
    tril,
    triu,
    # Rounding and integer division (Python's // and %).
    sign,
    floor,
    ceil,
    round,
    trunc,
    fix,
    floor_divide,
    remainder,
    fmod,
    atan,
    asin,
    acos,
    atan2,
    arctan,
    arcsin,
    arccos,
    arctan2,
    bitwise_left_shift,
    bitwise_right_shift,
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
int = dtype.int32  # noqa: A001  (PyTorch's name: torch.int is int32)

# dtypes print as PyTorch's do (torch.float32), under this package's name.
dtype.__repr__ = lambda self: f"lazyscope.{self.name}"
dtype.__str__ = dtype.__repr__

# The dtype of Python floats and of float tensors made without a dtype (set_default_dtype).
_default_float = dtype.float32


def set_default_dtype(d):
    """Sets the floating dtype that tensor(), zeros(), rand() ... give when none is named (float32 or float64)."""
    global _default_float
    if d not in (dtype.float32, dtype.float64, dtype.float16, dtype.bfloat16):
        raise TypeError(f"set_default_dtype: only floating-point types are supported as the default type, got {d}")
    _default_float = d


def get_default_dtype():
    return _default_float

_NUMPY_OF = {
    dtype.bool: _np.bool_, dtype.uint8: _np.uint8, dtype.int32: _np.int32,
    dtype.int64: _np.int64, dtype.float16: _np.float16,
    dtype.float32: _np.float32, dtype.float64: _np.float64,
}

_rng = _np.random.default_rng(0)


class Generator:
    """A random number generator, as ``torch.Generator``: a seedable source for randperm,
    multinomial, rand/randn/randint (generator=) and DataLoader shuffling."""

    def __init__(self, device="cpu"):
        self.device = device
        self._seed = 67280421310721
        self._rng = _np.random.default_rng(self._seed)

    def manual_seed(self, seed):
        self._seed = _builtins.int(seed)
        self._rng = _np.random.default_rng(self._seed)
        return self

    def seed(self):
        self.manual_seed(_np.random.SeedSequence().entropy % 2**63)
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """This generator's state as a uint8 CPU tensor (set_state puts it back)."""
        return tensor(_np.frombuffer(b"LZG1" + _pack_host(self._rng.bit_generator), dtype=_np.uint8).copy())

    def set_state(self, new_state):
        raw = _np.asarray(new_state.cpu().numpy() if hasattr(new_state, "numpy") else new_state)
        if raw.dtype != _np.uint8 or raw.ndim != 1 or raw.size != 41 or raw[:4].tobytes() != b"LZG1":
            raise ValueError(f"Generator.set_state: expected the uint8 [41] tensor get_state returns, got "
                             f"{raw.dtype} {list(raw.shape)}")
        rng = _np.random.default_rng()
        rng.bit_generator.state = _unpack_host(raw.tobytes()[4:])
        self._rng = rng
        return self


def _rng_of(generator):
    return _rng if generator is None else generator._rng


_initial_seed = 0


def manual_seed(seed):
    """Seeds the generator behind rand/randn and the engine's (dropout masks)."""
    global _rng, _initial_seed
    _initial_seed = _builtins.int(seed)
    _rng = _np.random.default_rng(seed)
    _C.manual_seed(seed)


def get_num_threads():
    """The engine's threads (its pool: LAZYSCOPE_NUM_THREADS, else the cores
    this process may use; under `lazyscope run --nproc-per-node N`, each
    worker's share), as torch.get_num_threads."""
    return _C._num_threads()


def set_num_threads(n):
    """Refused: the pool is sized once, when the engine starts; set
    LAZYSCOPE_NUM_THREADS before the process starts instead."""
    raise NotImplementedError(f"set_num_threads({n}): the engine's thread pool is sized at start-up; set "
                              f"LAZYSCOPE_NUM_THREADS={n} in the environment before starting the process")


def initial_seed():
    """The seed manual_seed last set (0 before any)."""
    return _initial_seed


def seed():
    """Seeds both generators from fresh entropy and returns the seed, as torch.seed()."""
    value = _np.random.SeedSequence().entropy % 2**63
    manual_seed(value)
    return value


# get_rng_state's bytes: a tag and version, the engine's (seed, offset),
# then the host generator's PCG64 state (state, inc, has_uint32, uinteger).
_RNG_TAG = b"LZR1"
_RNG_BYTES = 4 + 8 + 8 + 16 + 16 + 1 + 4


def _pack_host(bit_generator):
    st = bit_generator.state
    if st.get("bit_generator") != "PCG64":
        raise RuntimeError(f"get_rng_state: the host generator is {st.get('bit_generator')}, expected PCG64")
    inner = st["state"]
    return (inner["state"].to_bytes(16, "little") + inner["inc"].to_bytes(16, "little")
            + _builtins.bytes([st["has_uint32"]]) + _builtins.int(st["uinteger"]).to_bytes(4, "little"))


def _unpack_host(raw):
    return {"bit_generator": "PCG64",
            "state": {"state": _builtins.int.from_bytes(raw[0:16], "little"),
                      "inc": _builtins.int.from_bytes(raw[16:32], "little")},
            "has_uint32": raw[32], "uinteger": _builtins.int.from_bytes(raw[33:37], "little")}


def get_rng_state():
    """The state of the default generators, as torch.get_rng_state: a uint8 CPU
    tensor holding the host generator's (rand, randn, randperm, ...) and the
    engine's (dropout masks on every device). set_rng_state puts it back."""
    seed_value, offset = _C._rng_state()
    raw = _RNG_TAG + seed_value.to_bytes(8, "little") + offset.to_bytes(8, "little") + _pack_host(_rng.bit_generator)
    return tensor(_np.frombuffer(raw, dtype=_np.uint8).copy())


def set_rng_state(new_state):
    """Puts back a state from get_rng_state: the draws that followed it come again."""
    global _rng
    raw = _np.asarray(new_state.cpu().numpy() if hasattr(new_state, "numpy") else new_state)
    if raw.dtype != _np.uint8 or raw.ndim != 1 or raw.size != _RNG_BYTES or raw[:4].tobytes() != _RNG_TAG:
        raise ValueError(f"set_rng_state: expected the uint8 [{_RNG_BYTES}] tensor get_rng_state returns, got "
                         f"{raw.dtype} {list(raw.shape)}" + ("" if raw.size < 4 or raw.dtype != _np.uint8 else
                                                             f" tagged {raw[:4].tobytes()!r}"))
    raw = raw.tobytes()
    host = _np.random.default_rng()
    host.bit_generator.state = _unpack_host(raw[20:])
    _C._set_rng_state(_builtins.int.from_bytes(raw[4:12], "little"), _builtins.int.from_bytes(raw[12:20], "little"))
    _rng = host


def _device_str(dev):
    return "cpu" if dev is None else str(dev)


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def _leaf(t, requires_grad):
    return t.requires_grad_() if requires_grad else t


def _ragged_message(data, dim=0):
    """PyTorch's message for a nested list whose rows differ in length, or None."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    first = data[0]
    length = len(first) if isinstance(first, (list, tuple)) else None
    for item in data:
        n = len(item) if isinstance(item, (list, tuple)) else None
        if n != length:
            return (f"expected sequence of length {length} at dim {dim + 1} (got {n})" if length is not None and n is not None
                    else f"expected a sequence at every position of dim {dim + 1}, got a mix of sequences and numbers")
    for item in data:
        message = _ragged_message(item, dim + 1)
        if message:
            return message
    return None


def _as_array(op, data):
    """``data`` as a NumPy array, or ShapeError/TypeError naming the op and the user's line
    (NumPy's own "inhomogeneous shape" names neither)."""
    try:
        array = _np.asarray(data)
    except (ValueError, TypeError) as error:
        message = _ragged_message(data)  # walked only when NumPy refused: a well-formed list is walked once
        if message:
            raise ShapeError(f"{op}: {message}{_C._at_user_line()}") from None
        raise TypeError(f"{op}: could not convert the data to a tensor: {error}{_C._at_user_line()}") from None
    if array.dtype.kind in "USV":
        raise TypeError(f"{op}: expected numbers, nested lists of numbers or a NumPy array of numbers, got "
                        f"{type(data).__name__} data of NumPy dtype {array.dtype}{_C._at_user_line()}")
    if array.dtype == object:
        message = _ragged_message(data)
        if message:
            raise ShapeError(f"{op}: {message}{_C._at_user_line()}")
        raise TypeError(f"{op}: could not infer the dtype of {type(data).__name__} data (expected numbers, "
                        f"nested lists of numbers, or a NumPy array){_C._at_user_line()}")
    return array


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data`` (nested lists, scalars, NumPy arrays)."""
    if isinstance(data, Tensor):
        data = data.numpy()
    array = _as_array("tensor", data)
    if dtype is not None and dtype != bfloat16:
        array = array.astype(_NUMPY_OF[dtype])
    elif array.dtype == _np.float64 and not isinstance(data, _np.ndarray):
        array = array.astype(_numpy_dtype(None))  # Python floats: the default dtype (float32), as in PyTorch
        dtype = _default_float
    t = _C.from_numpy(array, _device_str(device))
    if dtype == bfloat16:
        t = t.to(bfloat16)
    return _leaf(t, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """``data`` itself when it is a tensor of that dtype and device already, else a new tensor."""
    if isinstance(data, Tensor):
        out = data
        if device is not None and str(out.device) != str(device):
            out = out.to(device)
        return out.to(dtype) if dtype is not None and out.dtype != dtype else out
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    return _C.from_numpy(array, "cpu")


def _host_array(op, shape, dtype, make):
    """``make()``'s NumPy array, or OutOfMemoryError naming the op, the shape
    and the bytes: creation goes through a host array, and NumPy's own
    MemoryError/ValueError names neither."""
    try:
        return make()
    except (MemoryError, ValueError) as error:
        count = 1
        for n in shape:
            count *= _builtins.int(n)
        if not isinstance(error, MemoryError) and count < 2**31:
            raise  # a genuine bad argument, not a size problem
        item = _np.dtype(_numpy_dtype(dtype)).itemsize if dtype is not None else 4
        raise OutOfMemoryError(f"{op}: cannot allocate a tensor of shape {list(shape)} "
                               f"({count * item} bytes)") from None


def _checked_shape(op, size):
    """The size arguments as a shape, or ShapeError/TypeError naming the op and the user's line."""
    shape = _shape(size)
    for n in shape:
        if isinstance(n, (_builtins.bool, _np.bool_)) or not isinstance(n, (_builtins.int, _np.integer)):
            if isinstance(n, Tensor) and n.dim() == 0 and not n.dtype.is_floating_point:
                continue
            raise TypeError(f"{op}(): argument 'size' must be a tuple of ints, but found element of type "
                            f"{type(n).__name__}{_C._at_user_line()}")
        if n < 0:
            raise ShapeError(f"{op}: trying to create a tensor with negative dimension {_builtins.int(n)}: "
                             f"{[_builtins.int(d) for d in shape]}{_C._at_user_line()}")
    return tuple(_builtins.int(n) for n in shape)


def _filled(value, size, dtype, device, requires_grad=False, op="full"):
    shape = _checked_shape(op, size)
    array = _host_array(op, shape, dtype, lambda: _np.full(shape, value, dtype=_numpy_dtype(dtype)))
    return _make(array, dtype, device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False):
    return _filled(0, size, dtype, device, requires_grad, op="zeros")


def ones(*size, dtype=None, device=None, requires_grad=False):
    return _filled(1, size, dtype, device, requires_grad, op="ones")


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    """The dtype follows fill_value when not given (int64, bool or float32), as in PyTorch."""
    return _filled(fill_value, (size,), dtype or _default_dtype_of(fill_value), device, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False):
    dt = _numpy_dtype(dtype)
    shape = _checked_shape("randn", size)
    array = _host_array("randn", shape, dtype, lambda: _rng.standard_normal(shape).astype(dt))
    return _make(array, dtype, device, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False):
    dt = _numpy_dtype(dtype)
    shape = _checked_shape("rand", size)
    array = _host_array("rand", shape, dtype, lambda: _rng.random(shape).astype(dt))
    return _make(array, dtype, device, requires_grad)


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

    def __new__(cls, fn=None):
        # @no_grad without parentheses: the class is called with the function.
        if callable(fn):
            return cls()(fn)
        return super().__new__(cls)

    def __init__(self, fn=None):
        pass

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


class inference_mode(_GradMode):
    """As ``torch.inference_mode``: here the same as ``no_grad`` (inference_mode(False) records)."""
    _mode = False

    def __new__(cls, mode=True):
        if callable(mode):
            return cls()(mode)
        return object.__new__(cls)

    def __init__(self, mode=True):
        self._mode = not mode

    def __call__(self, fn):
        import functools
        mode = not self._mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper


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


def _sort(input, dim=-1, descending=False, stable=False):  # noqa: A002  (PyTorch's names)
    """(values, indices) sorted along dim; always stable, NaN sorts as the largest value."""
    return _ValuesIndices(*_C.sort(input, dim, descending, stable=stable))


def _topk(input, k, dim=-1, largest=True, sorted=True):  # noqa: A002
    """(values, indices) of the k largest (or smallest) along dim, always sorted."""
    return _ValuesIndices(*_C.topk(input, k, dim, largest, sorted))


def median(input, dim=None, keepdim=False):  # noqa: A002
    """The lower median (of an even count, the smaller middle value), as
    PyTorch: over all elements a 0-d tensor; over dim (values, indices), the
    index of that element in a stable sort. A NaN propagates, as in
    PyTorch: the median of a line with one is NaN, its index the first
    NaN's."""
    if dim is None:
        flat = input.reshape(-1)
        n = flat.shape[0]
        if n == 0:
            raise RuntimeError("median() of an empty tensor" + _C._at_user_line())
        values = _C.sort(flat, 0, False, stable=True)[0]
        has_nan = (flat != flat).any()
        middle = values.narrow(0, (n - 1) // 2, 1).reshape(())
        return _C.where(has_nan, _np.nan, middle)
    d = dim if dim >= 0 else dim + input.dim()
    n = input.shape[d]
    values, indices = _C.sort(input, d, False, stable=True)
    k = (n - 1) // 2
    v, i = values.narrow(d, k, 1), indices.narrow(d, k, 1)
    # A line with a NaN: PyTorch's median is NaN, its index the first NaN's.
    nan = (input != input).any(d, keepdim=True)
    first_nan = (input != input).long().argmax(d, keepdim=True)
    v = _C.where(nan, _np.nan, v)
    i = _C.where(nan, first_nan, i)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return _ValuesIndices(v, i)


sort = _sort
topk = _topk
Tensor.median = lambda self, dim=None, keepdim=False: median(self, dim, keepdim)
Tensor.sort = lambda self, dim=-1, descending=False, stable=False: _sort(self, dim, descending, stable)
Tensor.topk = lambda self, k, dim=-1, largest=True, sorted=True: _topk(self, k, dim, largest, sorted)


# Creation functions. Values are made on the host (NumPy) and transferred,
# like tensor(): on a lazy device they are graph inputs, never constants.
def _make(array, dtype, device, requires_grad):
    if dtype == bfloat16:
        t = _C.from_numpy(array.astype(_np.float32), _device_str(device)).to(bfloat16)
    else:
        t = _C.from_numpy(array, _device_str(device))
    return _leaf(t, requires_grad)


def _numpy_dtype(dtype, default=None):
    if dtype is None:
        dtype = default or _default_float
    return _np.float32 if dtype == bfloat16 else _NUMPY_OF[dtype]


def _default_dtype_of(*values):
    """PyTorch's inference for arange/full: all ints (or bools) give int64, any float float32."""
    # bool, all, max, ... are PyTorch's names in this module: the builtins are spelled out.
    if _builtins.all(isinstance(v, (_builtins.bool, _np.bool_)) for v in values):
        return dtype.bool
    return int64 if _builtins.all(isinstance(v, (_builtins.int, _np.integer)) for v in values) else _default_float


def empty(*size, dtype=None, device=None, requires_grad=False):
    """Uninitialized in PyTorch; zeros here (buffers are always written before use)."""
    return _filled(0, size, dtype, device, requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(f"arange: upper bound {end} and lower bound {start} inconsistent with step sign {step}")
    dt = dtype or _default_dtype_of(start, end, step)
    n = _builtins.max(0, _builtins.int(_np.ceil((end - start) / step)))
    values = start + step * _np.arange(n, dtype=_np.float64 if dt.is_floating_point else _np.int64)
    return _make(values.astype(_numpy_dtype(dt)), dt, device, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    if steps < 0:
        raise ValueError(f"linspace: number of steps must be non-negative, got {steps}")
    return _make(_np.linspace(start, end, steps).astype(_numpy_dtype(dtype)), dtype, device, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    if n < 0 or (m is not None and m < 0):
        raise ValueError(f"eye: n and m must be non-negative, got {n} and {m}")
    return _make(_np.eye(n, m, dtype=_numpy_dtype(dtype)), dtype, device, requires_grad)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0 .. n-1 (int64)."""
    if n < 0:
        raise ShapeError(f"randperm: n must be non-negative, got {n}{_C._at_user_line()}")
    values = _rng_of(generator).permutation(n)
    return _make(values.astype(_numpy_dtype(dtype, int64)), dtype or int64, device, requires_grad)


def multinomial(input, num_samples, replacement=False, generator=None):  # noqa: A002
    """Indices sampled from each row of non-negative weights (read on the host: a sync on a lazy device)."""
    probs = input.double().numpy()
    rows = probs.reshape(-1, probs.shape[-1]) if probs.ndim else None
    if rows is None or probs.ndim > 2:
        raise ShapeError(f"multinomial: expected a 1-D or 2-D tensor of weights, got shape {tuple(input.shape)}"
                         f"{_C._at_user_line()}")
    if (rows < 0).any() or not _np.isfinite(rows).all():
        raise RuntimeError(f"multinomial: weights must be finite and non-negative{_C._at_user_line()}")
    rng = _rng_of(generator)
    out = []
    for row in rows:
        nonzero = _builtins.int((row > 0).sum())
        if row.sum() == 0 or (not replacement and num_samples > nonzero):
            raise RuntimeError(f"multinomial: cannot sample {num_samples} of {nonzero} non-zero weights "
                               f"{'with' if replacement else 'without'} replacement{_C._at_user_line()}")
        out.append(rng.choice(len(row), size=num_samples, replace=replacement, p=row / row.sum()))
    values = _np.asarray(out, dtype=_np.int64).reshape(probs.shape[:-1] + (num_samples,))
    return _C.from_numpy(values, "cpu").to(input.device)


Tensor.multinomial = multinomial

_print_options = {}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """How tensors print, as ``torch.set_printoptions`` (profile 'default', 'short' or 'full')."""
    presets = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
               "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
               "full": dict(precision=4, threshold=_builtins.int(2**62), edgeitems=3, linewidth=80)}
    # NumPy's array2string does the printing; its name for linewidth differs.
    if profile is not None:
        if profile not in presets:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(presets)}, got {profile!r}")
        _print_options.clear()
        _print_options.update(presets[profile])
        _print_options["max_line_width"] = _print_options.pop("linewidth")
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("max_line_width", linewidth)):
        if value is not None:
            _print_options[name] = value
    if sci_mode is not None:
        _print_options["suppress"] = not sci_mode


def randint(low, high=None, size=None, dtype=None, device=None, requires_grad=False):
    """randint(high, size) or randint(low, high, size): int64 values in [low, high)."""
    if size is None:
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint: missing the size argument")
    if high <= low:
        raise ValueError(f"randint: expected low < high, got low={low}, high={high}")
    values = _rng.integers(low, high, size=tuple(size))
    return _make(values.astype(_numpy_dtype(dtype, int64)), dtype or int64, device, requires_grad)


def _like(fill):
    def make(input, dtype=None, device=None, requires_grad=False):  # noqa: A002
        return fill(tuple(input.shape), dtype or input.dtype, device or input.device, requires_grad)
    return make


def _random_like(generate):
    def make(shape, dtype, device, requires_grad):
        if not dtype.is_floating_point:
            raise TypeError(f"expected a floating point dtype, got {dtype}")
        return _make(generate(shape).astype(_numpy_dtype(dtype)), dtype, device, requires_grad)
    return make


zeros_like = _like(lambda shape, dtype, device, rg: _filled(0, (shape,), dtype, device, rg))
ones_like = _like(lambda shape, dtype, device, rg: _filled(1, (shape,), dtype, device, rg))
empty_like = zeros_like
rand_like = _like(_random_like(lambda shape: _rng.random(shape)))
randn_like = _like(_random_like(lambda shape: _rng.standard_normal(shape)))


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False):  # noqa: A002
    return _filled(fill_value, (tuple(input.shape),), dtype or input.dtype, device or input.device, requires_grad)


def _new(fill):
    def make(self, *size, fill_value=None, dtype=None, device=None, requires_grad=False):
        shape = _shape(size)
        return fill(shape, fill_value, dtype or self.dtype, device or self.device, requires_grad)
    return make


Tensor.new_zeros = _new(lambda shape, _, dtype, device, rg: _filled(0, (shape,), dtype, device, rg))
Tensor.new_ones = _new(lambda shape, _, dtype, device, rg: _filled(1, (shape,), dtype, device, rg))
Tensor.new_empty = Tensor.new_zeros


def _new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    return _filled(fill_value, (tuple(size),), dtype or self.dtype, device or self.device, requires_grad)


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return tensor(data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad)


Tensor.new_full = _new_full


def div(input, other, *, rounding_mode=None):  # noqa: A002  (PyTorch's names)
    """True division; rounding_mode "trunc" or "floor" rounds the quotient (integers then stay integers)."""
    if rounding_mode is None:
        return _C.div(input, other)
    return _C._div_rounded(input, other, rounding_mode)


divide = div
Tensor.div = lambda self, other, *, rounding_mode=None: div(self, other, rounding_mode=rounding_mode)
Tensor.divide = Tensor.div
Tensor.new_tensor = _new_tensor


def _tensor_repr(self):
    suffix = "" if self.device.type == "cpu" else f", device='{self.device}'"
    body = _np.array2string(self.numpy(), separator=", ", prefix="tensor(", **_print_options)
    return f"tensor({body}{suffix})"


Tensor.__repr__ = _tensor_repr
Tensor.__str__ = _tensor_repr

from lazyscope import _surface  # noqa: E402

_surface.install(globals())

from lazyscope import _surface_functions  # noqa: E402

_surface_functions.install(globals())

from lazyscope.core import lazy_model  # noqa: E402,F401

# --- Runtime: data-dependent ops, scalar logging, metrics, debugging. -------
import atexit as _atexit  # noqa: E402

from lazyscope._C import masked_select, nonzero, unique  # noqa: E402,F401
from lazyscope import debug  # noqa: E402,F401
from lazyscope import linalg  # noqa: E402,F401
from lazyscope import random  # noqa: E402,F401
from lazyscope import amp, autograd, backends, special  # noqa: E402,F401
from lazyscope.special import digamma, erfinv, lgamma  # noqa: E402,F401

Tensor.lgamma = lgamma
Tensor.digamma = digamma
Tensor.erfinv = erfinv
from lazyscope.special import i0, polygamma  # noqa: E402,F401

Tensor.i0 = i0
Tensor.i0_ = lambda self: self.copy_(i0(self))
Tensor.polygamma = lambda self, n: polygamma(n, self)
Tensor.polygamma_ = lambda self, n: self.copy_(polygamma(n, self))
from lazyscope.amp import autocast  # noqa: E402,F401

_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"


def set_float32_matmul_precision(precision):
    """Accepted and kept, as torch's: products here are float32 whatever it says."""
    global _matmul_precision
    if precision not in _MATMUL_PRECISIONS:
        raise RuntimeError(f"set_float32_matmul_precision: expected one of {_MATMUL_PRECISIONS}, got {precision!r}")
    _matmul_precision = precision


def get_float32_matmul_precision():
    return _matmul_precision
from lazyscope.linalg import norm  # noqa: E402,F401
from lazyscope.linalg import (  # noqa: E402,F401  (torch's top-level names of torch.linalg's functions)
    det, slogdet, logdet, cholesky_solve, cholesky_inverse, matrix_power)

Tensor.norm = norm

from lazyscope import _surface_extra  # noqa: E402

_surface_extra.install(globals())


def where(condition, input=None, other=None):  # noqa: A002  (PyTorch's names)
    """torch.where(condition, input, other): input where condition holds, else
    other; torch.where(condition) alone: nonzero(condition, as_tuple=True)
    (reads the data: a counted fallback on a lazy device, as nonzero)."""
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where: expected where(condition) or where(condition, input, other), got one of input "
                        "and other")
    return _C.where(condition, input, other)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False):
    """torch.compile: returns ``model`` (a module or a function) itself, or a
    decorator doing so. On a lazy device LazyScope already traces each step
    into a graph, compiles it once and reuses it while the shapes hold (the
    compile cache): what torch.compile is asked for. The arguments are
    accepted and checked, and change nothing; on the cpu device code runs
    eagerly, as with torch.compile(disable=True)."""
    if mode not in (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        raise RuntimeError(f"compile: unrecognized mode {mode!r}")
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, disable=disable)
    if not callable(model):
        raise TypeError(f"compile: expected a module or a function, got {type(model).__name__}")
    return model


class compiler:  # noqa: N801  (torch.compiler, a namespace)
    """torch.compiler's helpers that scripts call around compiled code."""

    @staticmethod
    def disable(fn=None, recursive=True):
        return fn if fn is not None else (lambda f: f)

    @staticmethod
    def is_compiling():
        return False

    @staticmethod
    def reset():
        return None


def inverse(input):  # noqa: A002  (PyTorch's name)
    """torch.inverse: linalg.inv."""
    return linalg.inv(input)


def cholesky(input, upper=False):  # noqa: A002
    """torch.cholesky (deprecated in PyTorch for linalg.cholesky): L, or U with upper=True."""
    return linalg.cholesky(input, upper=upper)


def pinverse(input, rcond=1e-15):  # noqa: A002
    """torch.pinverse: linalg.pinv with singular values below rcond * max dropped."""
    return linalg.pinv(input, rtol=rcond)


def qr(input, some=True):  # noqa: A002
    """torch.qr: (Q, R), reduced when some=True, else complete."""
    return linalg.qr(input, mode="reduced" if some else "complete")


def svd(input, some=True, compute_uv=True):  # noqa: A002
    """torch.svd: (U, S, V) (V, not linalg.svd's Vh), reduced when some=True."""
    U, S, Vh = linalg.svd(input, full_matrices=not some)
    if not compute_uv:
        return linalg.SVDResult(U * 0, S, Vh.mT * 0)
    return linalg.SVDResult(U, S, Vh.mT)


for _name, _fn in {"det": det, "slogdet": slogdet, "logdet": logdet, "inverse": inverse, "cholesky": cholesky,
                   "cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse, "pinverse": pinverse,
                   "matrix_power": matrix_power, "qr": qr, "svd": svd}.items():
    setattr(Tensor, _name, _fn)


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
from lazyscope import distributions  # noqa: E402,F401
from lazyscope import func  # noqa: E402,F401
from lazyscope.func import vmap  # noqa: E402,F401
from lazyscope.serialization import load, save  # noqa: E402,F401

# Names PyTorch has and LazyScope refuses raise NotImplementedError saying what to use (see _coverage.py).
from lazyscope import _coverage  # noqa: E402

_coverage.install_refusals()
