"""The everyday PyTorch surface composed from the engine's ops (issue 14 §1).

Each function here is an exact composition of existing ops (clone is a
multiply by one, flip an index_select, isfinite x - x == 0, ...), or a host
computation where PyTorch's own result is data-dependent (bincount,
multinomial, randperm). Installed into the ``lazyscope`` namespace and onto
``Tensor`` by ``lazyscope/__init__.py``.
"""
import builtins as _builtins

import numpy as _np

from lazyscope import _C

Tensor = _C.Tensor


def _at():
    return _C._at_user_line()


class Size(tuple):
    """A tensor's shape, as ``torch.Size``: a tuple of ints with numel()."""

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __repr__(self):
        return f"lazyscope.Size({list(self)})"

    def __getitem__(self, key):
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out


def _wrap_dim(op, dim, rank):
    lo, hi = (-1, 0) if rank == 0 else (-rank, rank - 1)
    if not isinstance(dim, int) or isinstance(dim, bool) or not lo <= dim <= hi:
        raise IndexError(f"{op}: dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
                         f"{_at()}")
    return dim % rank if rank else 0


_shape_of = Tensor.shape.fget


def _size(self, dim=None):
    shape = Size(_shape_of(self))
    if dim is None:
        return shape
    return shape[_wrap_dim("size", dim, len(shape))] if shape else 1


def _clone(self, memory_format=None):
    # A new tensor with its own buffer; x * 1 is exact for every value (-0.0, nan, inf) and keeps autograd.
    return self * 1 if self.dtype != _C.dtype.bool else _C.logical_and(self, True)


def _repeat(self, *sizes):
    reps = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    shape = tuple(_shape_of(self))
    if len(reps) < len(shape):
        raise RuntimeError(f"repeat: number of repeat dims ({len(reps)}) can not be smaller than the number of "
                           f"dimensions of the tensor ({len(shape)}){_at()}")
    shape = (1,) * (len(reps) - len(shape)) + shape
    interleaved = [d for s in shape for d in (1, s)]
    expanded = [d for r, s in zip(reps, shape) for d in (r, s)]
    return self.reshape(interleaved).expand(expanded).reshape([r * s for r, s in zip(reps, shape)])


def _reversed_index(n, device):
    return _C.from_numpy(_np.arange(n - 1, -1, -1, dtype=_np.int64), "cpu").to(device)


def flip(input, dims):  # noqa: A002  (PyTorch's name)
    """Reverses the order of elements along each of ``dims`` (index_select with a reversed index)."""
    dims = [dims] if isinstance(dims, int) else list(dims)
    rank = input.dim()
    out = input
    for d in {_wrap_dim("flip", d, rank) for d in dims}:
        if rank:
            out = out.index_select(d, _reversed_index(out.shape[d], out.device))
    return out


def _uniform_(self, a=0.0, b=1.0, generator=None):
    import lazyscope
    with lazyscope.no_grad():
        return self.copy_(lazyscope.rand_like(self) * (b - a) + a)


def _normal_(self, mean=0.0, std=1.0, generator=None):
    import lazyscope
    with lazyscope.no_grad():
        return self.copy_(lazyscope.randn_like(self) * std + mean)


def bincount(input, weights=None, minlength=0):  # noqa: A002
    """Counts of each value of a 1-D non-negative int tensor (read on the host: its length depends on the data)."""
    if input.dim() != 1 or input.dtype.is_floating_point:
        raise RuntimeError(f"bincount: expected a 1-D integer tensor, got {input.dim()}-D {input.dtype}{_at()}")
    values = input.numpy()
    if values.size and values.min() < 0:
        raise RuntimeError(f"bincount: input must contain only non-negative values, got {int(values.min())}{_at()}")
    w = None if weights is None else weights.numpy()
    counts = _np.bincount(values, weights=w, minlength=minlength)
    if w is None:
        counts = counts.astype(_np.int64)
    elif weights.dtype != _C.dtype.float64:
        counts = counts.astype(_np.float32)
    return _C.from_numpy(counts, "cpu").to(input.device)


def _scalar(self, kind, convert):
    if self.numel() != 1:
        raise TypeError(f"only a tensor with one element can be converted to a Python {kind}; this one has "
                        f"{self.numel()} elements{_at()}")
    return convert(self.item())


def _index(self):
    if self.dtype.is_floating_point or self.dtype == _C.dtype.bool:
        raise TypeError(f"only integer tensors of a single element can be converted to an index{_at()}")
    return _scalar(self, "int", int)


def _invert(self):
    if self.dtype == _C.dtype.bool:
        return _C.logical_not(self)
    if self.dtype.is_floating_point:
        raise TypeError(f"~ (bitwise_not) is only supported for integer and bool tensors, got {self.dtype}{_at()}")
    return -self - 1  # two's complement: exact for every integer dtype


def _is_bool(value):
    return isinstance(value, bool) or (isinstance(value, Tensor) and value.dtype == _C.dtype.bool)


def _bitwise(op, combine, integral):
    """a & b, a | b, a ^ b: of bool masks (`(x > 0) & (y < 1)`) the logical
    ops (logical_and, logical_or and !=, which are those ops on bools); of
    integers (or a mask with an integer) the engine's bitwise ops, whose
    promotion refuses a float operand with a clear error."""

    def apply(a, b):
        if not isinstance(b, (Tensor, bool, int)):
            raise TypeError(f"{op}: expected a tensor, a bool or an int, got {type(b).__name__}{_at()}")
        if a.dtype == _C.dtype.bool and _is_bool(b):
            return combine(a, b)
        return integral(a, b)

    def in_place(self, other):
        return self.copy_(apply(self, other))

    return apply, in_place


def _format(self, spec):
    if self.dim() == 0 or (spec and self.numel() == 1):
        return format(self.item(), spec)
    if spec:
        raise TypeError(f"unsupported format string '{spec}' for a tensor of shape {tuple(self.shape)}: only "
                        f"one-element tensors take a format spec{_at()}")
    return str(self)


def _cuda(self, device=None, non_blocking=False):
    raise NotImplementedError("cuda(): LazyScope has no CUDA backend; use a lazy device, t.to(xm.xla_device()) or "
                              "t.to('lazy:0'), or keep tensors on 'cpu'" + _at())


def _type_as(self, other):
    return self.to(other.dtype)


def clone(input, memory_format=None):  # noqa: A002
    return _clone(input)


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):  # noqa: A002
    return input.numel()


def isnan(input):  # noqa: A002
    return _C.ne(input, input)  # only nan differs from itself; all False for integers


def isfinite(input):  # noqa: A002
    if not input.dtype.is_floating_point:
        return _C.eq(input, input)
    return _C.eq(input - input, 0)  # inf - inf and nan - nan are nan


def isinf(input):  # noqa: A002
    if not input.dtype.is_floating_point:
        return _C.ne(input, input)
    return _C.eq(abs(input), float("inf"))


def equal(input, other):  # noqa: A002
    """True when both have the same shape and the same values (reads the result: a sync on a lazy device)."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return _builtins.bool(_C.all(_C.eq(input, other)).item())


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    return _builtins.bool(_C.all(isclose(input, other, rtol, atol, equal_nan)).item())


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """|input - other| <= atol + rtol * |other|, with infinities equal only to themselves, as PyTorch."""
    if not isinstance(other, Tensor):
        import lazyscope
        other = lazyscope.full_like(input, other)
    close = _C.logical_or(_C.eq(input, other), _C.le(abs(input - other), atol + rtol * abs(other)))
    if equal_nan:
        close = _C.logical_or(close, _C.logical_and(isnan(input), isnan(other)))
    return close


def outer(input, vec2):  # noqa: A002
    return input.reshape(-1, 1) * vec2.reshape(1, -1)


ger = outer


def diag(input, diagonal=0):  # noqa: A002
    """1-D: a square matrix with input on the given diagonal; 2-D: that diagonal as a 1-D tensor."""
    if input.dim() == 1:
        length = input.shape[0]
        n = length + _builtins.abs(diagonal)
        mask = _C.from_numpy(_np.arange(n)[None, :] - _np.arange(n)[:, None] == diagonal, "cpu").to(input.device)
        # Element (i, j) of the diagonal holds input[i] (diagonal >= 0) or input[j] (below it).
        index = _np.clip(_np.arange(n), 0, length - 1).astype(_np.int64)
        spread = input.index_select(0, _C.from_numpy(index, "cpu").to(input.device))
        spread = spread.reshape(n, 1) if diagonal >= 0 else spread.reshape(1, n)
        return _C.where(mask, spread, 0)
    if input.dim() == 2:
        rows, cols = input.shape
        start_r, start_c = (0, diagonal) if diagonal >= 0 else (-diagonal, 0)
        length = _builtins.max(0, _builtins.min(rows - start_r, cols - start_c))
        r = _np.arange(length, dtype=_np.int64) + start_r
        c = _np.arange(length, dtype=_np.int64) + start_c
        return input[r.tolist(), c.tolist()] if length else input.reshape(-1)[:0]
    raise RuntimeError(f"diag: expected a 1-D or 2-D tensor, got {input.dim()}-D{_at()}")


def install(namespace):
    """Adds the Tensor methods; returns the functions for the package namespace."""
    Tensor.size = _size
    Tensor.ndim = property(lambda self: len(_shape_of(self)))
    Tensor.shape = property(lambda self: Size(_shape_of(self)))
    Tensor.clone = _clone
    Tensor.contiguous = lambda self, memory_format=None: self
    Tensor.is_contiguous = lambda self, memory_format=None: True
    Tensor.repeat = _repeat
    Tensor.type_as = _type_as
    Tensor.flip = lambda self, *dims: flip(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)
    Tensor.uniform_ = _uniform_
    Tensor.normal_ = _normal_
    Tensor.bincount = lambda self, weights=None, minlength=0: bincount(self, weights, minlength)
    Tensor.__float__ = lambda self: _scalar(self, "float", float)
    Tensor.__int__ = lambda self: _scalar(self, "int", int)
    Tensor.__index__ = _index
    Tensor.__invert__ = _invert
    for dunder, fn_name, combine, integral in (("and", "bitwise_and", _C.logical_and, _C._bitwise_and),
                                               ("or", "bitwise_or", _C.logical_or, _C._bitwise_or),
                                               ("xor", "bitwise_xor", _C.ne, _C._bitwise_xor)):
        forward, in_place = _bitwise(fn_name, combine, integral)
        setattr(Tensor, f"__{dunder}__", forward)
        setattr(Tensor, f"__r{dunder}__", forward)  # the ops are symmetric
        setattr(Tensor, f"__i{dunder}__", in_place)
        setattr(Tensor, fn_name, forward)
        namespace[fn_name] = forward
    Tensor.bitwise_not = _invert
    namespace["bitwise_not"] = _invert
    Tensor.__ilshift__ = lambda self, other: self.copy_(_C.bitwise_left_shift(self, other))
    Tensor.__irshift__ = lambda self, other: self.copy_(_C.bitwise_right_shift(self, other))
    Tensor.__format__ = _format
    Tensor.cuda = _cuda
    Tensor.is_cuda = property(lambda self: False)
    Tensor.isnan = isnan
    Tensor.isfinite = isfinite
    Tensor.isinf = isinf
    Tensor.equal = equal
    Tensor.allclose = allclose
    Tensor.isclose = isclose
    Tensor.outer = outer
    Tensor.diag = diag
    for name in ("Size", "flip", "bincount", "clone", "is_tensor", "numel", "isnan", "isfinite", "isinf", "equal",
                 "allclose", "isclose", "outer", "ger", "diag", "einsum"):
        namespace[name] = globals()[name]
    _more(namespace)


def _einsum_pair(a, la, b, lb, keep):
    """a (letters la) times b (letters lb), summed over the shared letters not in `keep`, as one batched
    matmul: [batch, a-only, contracted] @ [batch, contracted, b-only]. Returns (result, its letters)."""
    size = {}
    for t, letters in ((a, la), (b, lb)):
        for letter, n in zip(letters, t.shape):
            if size.get(letter, 1) not in (1, n) and n != 1:
                raise RuntimeError(f"einsum: subscript {letter} has size {n} for one operand and {size[letter]} "
                                   f"for another{_at()}")
            size[letter] = _builtins.max(size.get(letter, 1), n)
    batch = [c for c in la if c in lb and c in keep]
    contracted = [c for c in la if c in lb and c not in keep]
    a_only = [c for c in la if c not in lb]
    b_only = [c for c in lb if c not in la]

    def arrange(t, letters, order):
        t = t.permute([letters.index(c) for c in order]) if order != list(letters) else t
        return t.expand([size[c] for c in order])

    def prod(letters):
        n = 1
        for c in letters:
            n *= size[c]
        return n
    a2 = arrange(a, la, batch + a_only + contracted).reshape(prod(batch), prod(a_only), prod(contracted))
    b2 = arrange(b, lb, batch + contracted + b_only).reshape(prod(batch), prod(contracted), prod(b_only))
    out = (a2 @ b2).reshape([size[c] for c in batch + a_only + b_only])
    return out, batch + a_only + b_only


def einsum(equation, *operands):
    """Einstein summation over explicit subscripts ("ij,jk->ik", "bij,bjk->bik", "i,i->", "ij->ji"): operands
    are contracted pairwise, left to right, each pair as one batched matmul. Repeated subscripts within one
    operand (diagonals) and '...' are refused."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    equation = equation.replace(" ", "")
    if "..." in equation:
        raise NotImplementedError(f"einsum: '...' (ellipsis) subscripts are not supported; name every dim "
                                  f"explicitly{_at()}")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: the equation has {len(terms)} operands but {len(operands)} tensors were "
                         f"given{_at()}")
    for term, t in zip(terms, operands):
        if len(term) != t.dim():
            raise RuntimeError(f"einsum: subscripts '{term}' name {len(term)} dims of an operand of shape "
                               f"{tuple(t.shape)}{_at()}")
        if len(set(term)) != len(term):
            raise NotImplementedError(f"einsum: a subscript repeated within one operand ('{term}', a diagonal) "
                                      f"is not supported{_at()}")
    if not arrow:
        counts = {}
        for c in inputs.replace(",", ""):
            counts[c] = counts.get(c, 0) + 1
        output = "".join(sorted(c for c, n in counts.items() if n == 1))
    result, letters = operands[0], list(terms[0])
    for i in range(1, len(operands)):
        later = set(output) | set("".join(terms[i + 1:]))
        result, letters = _einsum_pair(result, letters, operands[i], list(terms[i]), later)
    gone = [letters.index(c) for c in letters if c not in output]
    if gone:
        result = result.sum(gone)
        letters = [c for c in letters if c in output]
    if letters != list(output):
        result = result.permute([letters.index(c) for c in output])
    return result


# --- More exact compositions of torch functions.

def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """beta·input + alpha·(mat1 @ mat2); beta=0 ignores input (nan included), as PyTorch."""
    product = mat1 @ mat2 if alpha == 1 else (mat1 @ mat2) * alpha
    if beta == 0:
        return product.expand(tuple(_np.broadcast_shapes(tuple(product.shape), tuple(input.shape))))
    return product + (input if beta == 1 else input * beta)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    return addmm(input, batch1, batch2, beta=beta, alpha=alpha)


def dot(input, other):  # noqa: A002
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"dot: 1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors{_at()}")
    return (input * other).sum()


def diagonal(input, offset=0, dim1=0, dim2=1):  # noqa: A002
    if input.dim() != 2 or (dim1, dim2) not in ((0, 1), (-2, -1), (1, 0)):
        raise NotImplementedError(f"diagonal: only the diagonal of a 2-D tensor is supported, got shape "
                                  f"{tuple(input.shape)} with dim1={dim1}, dim2={dim2}{_at()}")
    return diag(input if (dim1, dim2) != (1, 0) else input.t(), offset)


def diff(input, n=1, dim=-1):  # noqa: A002
    out = input
    for _ in range(n):
        length = out.shape[dim]
        out = out.narrow(dim, 1, length - 1) - out.narrow(dim, 0, length - 1)
    return out


def reciprocal(input):  # noqa: A002
    return 1 / input


def square(input):  # noqa: A002
    return input * input


def unbind(input, dim=0):  # noqa: A002
    return tuple(t.squeeze(dim) for t in input.split(1, dim))


def vstack(tensors):
    import lazyscope
    return lazyscope.cat([t.reshape(1, -1) if t.dim() < 2 else t for t in tensors], 0)


def hstack(tensors):
    import lazyscope
    return lazyscope.cat(list(tensors), 0 if tensors[0].dim() == 1 else 1)


def meshgrid(*tensors, indexing="ij"):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    sizes = [t.numel() for t in tensors]
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, t in enumerate(tensors):
        axis = (1 - i if i < 2 else i) if swap else i
        shape = [1] * len(sizes)
        shape[axis] = sizes[axis]
        out.append(t.reshape(shape).expand(sizes))
    return tuple(out)


def roll(input, shifts, dims=None):  # noqa: A002
    import lazyscope
    if dims is None:
        return roll(input.reshape(-1), shifts, 0).reshape(tuple(input.shape))
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    out = input
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        s %= n
        if s:
            out = lazyscope.cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], d)
    return out


def trace(input):  # noqa: A002
    return diag(input).sum()


def repeat_interleave(input, repeats, dim=None):  # noqa: A002
    if dim is None:
        input, dim = input.reshape(-1), 0
    n = input.shape[dim]
    counts = _np.full(n, repeats) if isinstance(repeats, int) else _np.asarray(repeats.tolist())
    index = _np.repeat(_np.arange(n), counts).astype(_np.int64)
    return input.index_select(dim, _C.from_numpy(index, "cpu").to(input.device))


def lerp(input, end, weight):  # noqa: A002
    return input + (end - input) * weight


def is_floating_point(input):  # noqa: A002
    return input.dtype.is_floating_point


def tensordot(a, b, dims=2):
    letters = "abcdefghijklmnopqrstuvwxyz"
    if isinstance(dims, int):
        dims_a, dims_b = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        dims_a, dims_b = [list(d) if not isinstance(d, int) else [d] for d in dims]
    la = list(letters[:a.dim()])
    lb = list(letters[a.dim():a.dim() + b.dim()])
    for i, j in zip(dims_a, dims_b):
        lb[j] = la[i]
    out = [c for i, c in enumerate(la) if i not in dims_a] + [c for j, c in enumerate(lb) if j not in dims_b]
    return einsum(f"{''.join(la)},{''.join(lb)}->{''.join(out)}", a, b)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    return (input.var(dim, unbiased, keepdim, correction=correction), input.mean(dim, keepdim) if dim is not None
            else input.mean())


class _Cuda:
    """torch.cuda as scripts probe it: no CUDA devices here."""

    @staticmethod
    def is_available():
        return False

    @staticmethod
    def device_count():
        return 0

    @staticmethod
    def manual_seed(seed):
        import lazyscope
        lazyscope.manual_seed(seed)

    manual_seed_all = manual_seed

    @property
    def amp(self):
        """torch.cuda.amp's autocast and GradScaler (the same as lazyscope.amp's)."""
        import lazyscope.amp
        return lazyscope.amp

    def __getattr__(self, name):
        raise NotImplementedError(f"torch.cuda.{name} is not supported by LazyScope (no CUDA backend); use a lazy "
                                  f"device (xm.xla_device() or 'lazy:0')")


# Elementwise math as compositions chosen for accuracy: expm1 as
# tanh(x/2)·(exp(x) + 1), exact to a few ulp near 0 where exp(x) − 1 loses
# every digit; sinh from expm1 for the same reason; exp2 through pow.
_LN2, _LN10 = 0.6931471805599453, 2.302585092994046


def expm1(input):  # noqa: A002
    return (input * 0.5).tanh() * (input.exp() + 1.0)


def exp2(input):  # noqa: A002
    return _C.pow(2.0, input) if input.is_floating_point() else _C.pow(2.0, input.float())


def log2(input):  # noqa: A002
    return input.log() * (1.0 / _LN2)


def log10(input):  # noqa: A002
    return input.log() * (1.0 / _LN10)


def sinh(input):  # noqa: A002
    return (expm1(input) - expm1(-input)) * 0.5


def cosh(input):  # noqa: A002
    return (input.exp() + (-input).exp()) * 0.5


def frac(input):  # noqa: A002
    return input - input.trunc()


def logit(input, eps=None):  # noqa: A002
    """log(p / (1 − p)), p clamped to [eps, 1 − eps] when eps is given."""
    p = input if eps is None else input.clamp(eps, 1.0 - eps)
    return p.log() - (-p).log1p()


def clamp_min(input, min):  # noqa: A002
    return input.clamp(min=min)


def clamp_max(input, max):  # noqa: A002
    return input.clamp(max=max)


_FLOAT_LIMITS = {"float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308, "float16": 65504.0,
                 "bfloat16": 3.3895313892515355e38}


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    """NaN to `nan`, +inf to `posinf`, -inf to `neginf` (by default the
    dtype's largest and lowest finite values); other dtypes unchanged."""
    if not input.is_floating_point():
        return input * 1
    big = _FLOAT_LIMITS[str(input.dtype).split(".")[-1]]
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    out = _C.where(input != input, nan, input)
    out = _C.where(out == float("inf"), posinf, out)
    return _C.where(out == float("-inf"), neginf, out)


def count_nonzero(input, dim=None):  # noqa: A002
    nonzero = (input != 0).long()
    return nonzero.sum() if dim is None else nonzero.sum(dim)


def broadcast_to(input, size):  # noqa: A002
    return input.expand(*size)


def broadcast_tensors(*tensors):
    shape = _np.broadcast_shapes(*(tuple(_shape_of(t)) for t in tensors))
    return tuple(t.expand(*shape) for t in tensors)


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return input + tensor1 * tensor2 * value


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    return input + tensor1 / tensor2 * value


def unflatten(input, dim, sizes):  # noqa: A002
    shape = list(_shape_of(input))
    d = _wrap_dim("unflatten", dim, len(shape))
    sizes = list(sizes)
    if sizes.count(-1) > 1 or (-1 not in sizes and int(_np.prod(sizes)) != shape[d]):
        raise ValueError(f"unflatten: sizes {tuple(sizes)} do not multiply to dimension {d}'s size {shape[d]}"
                         f"{_at()}")
    return input.reshape(*(shape[:d] + sizes + shape[d + 1:]))


def _bmm(self, mat2):
    if self.dim() != 3 or mat2.dim() != 3:
        raise ValueError(f"bmm: expected two 3-D tensors, got {self.dim()}-D and {mat2.dim()}-D{_at()}")
    return self @ mat2


def cdist(x1, x2, p=2.0, compute_mode=None):
    """Distances between the rows of x1 [.., P, M] and of x2 [.., R, M]:
    [.., P, R]. The p-norm of each difference (p = 0 counts non-zeros, inf
    takes the largest); p = 2 by the differences, not PyTorch's
    ‖a‖² + ‖b‖² − 2a·b (exact for equal rows, at the memory of P·R·M)."""
    if x1.dim() < 2 or x2.dim() < 2 or _shape_of(x1)[-1] != _shape_of(x2)[-1]:
        raise ValueError(f"cdist: expected [.., P, M] and [.., R, M] with the same M, got {tuple(_shape_of(x1))} "
                         f"and {tuple(_shape_of(x2))}{_at()}")
    d = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    p = float(p)
    if p == 0:
        return (d != 0).to(x1.dtype).sum(-1)
    if p == float("inf"):
        return d.amax(-1)
    if p == 2:
        return (d * d).sum(-1).sqrt()
    if p == 1:
        return d.sum(-1)
    return (d ** p).sum(-1) ** (1.0 / p)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):  # noqa: A002
    """For each value, how many elements of its (last-dim) sorted sequence are
    below it (right: at or below it): the insertion index that keeps the
    order. A comparison per (value, element): O(N·M) work, no host sync."""
    if sorter is not None:
        raise NotImplementedError("searchsorted: sorter= is not supported; sort the sequence first" + _at())
    if side is not None:
        right = side == "right"
    values = input if isinstance(input, Tensor) else sorted_sequence.new_tensor(input)
    seq = sorted_sequence
    if seq.dim() == 1:
        below = (seq <= values.unsqueeze(-1)) if right else (seq < values.unsqueeze(-1))
    else:
        if tuple(_shape_of(seq))[:-1] != tuple(_shape_of(values))[:-1]:
            raise ValueError(f"searchsorted: the sequence's leading dims {tuple(_shape_of(seq))[:-1]} must match the "
                             f"values' {tuple(_shape_of(values))[:-1]}{_at()}")
        s = seq.unsqueeze(-2)
        v = values.unsqueeze(-1)
        below = (s <= v) if right else (s < v)
    counts = below.long().sum(-1)
    return counts.int() if out_int32 else counts


def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    """The bucket of each value among 1-D sorted boundaries (searchsorted with
    the roles as PyTorch names them)."""
    if boundaries.dim() != 1:
        raise ValueError(f"bucketize: boundaries must be 1-D, got {boundaries.dim()}-D{_at()}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def _more(namespace):
    namespace["cuda"] = _Cuda()
    for name in ("addmm", "baddbmm", "dot", "diagonal", "diff", "reciprocal", "square", "unbind", "vstack",
                 "hstack", "meshgrid", "roll", "trace", "repeat_interleave", "lerp", "is_floating_point",
                 "tensordot", "var_mean"):
        namespace[name] = globals()[name]
    for name in ("addmm", "dot", "diagonal", "diff", "reciprocal", "square", "unbind", "roll", "trace",
                 "repeat_interleave", "lerp"):
        setattr(Tensor, name, globals()[name])
    for name in ("expm1", "exp2", "log2", "log10", "sinh", "cosh", "frac", "logit", "clamp_min", "clamp_max",
                 "nan_to_num", "count_nonzero", "broadcast_to", "broadcast_tensors", "addcmul", "addcdiv", "cdist",
                 "searchsorted", "bucketize"):
        namespace[name] = globals()[name]
    for name in ("expm1", "exp2", "log2", "log10", "sinh", "cosh", "frac", "logit", "clamp_min", "clamp_max",
                 "nan_to_num", "count_nonzero", "broadcast_to", "addcmul", "addcdiv", "unflatten"):
        setattr(Tensor, name, globals()[name])
    Tensor.bmm = _bmm
    Tensor.addcmul_ = lambda self, t1, t2, value=1: self.copy_(addcmul(self, t1, t2, value=value))
    Tensor.addcdiv_ = lambda self, t1, t2, value=1: self.copy_(addcdiv(self, t1, t2, value=value))
