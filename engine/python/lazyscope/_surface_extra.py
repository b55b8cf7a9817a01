"""Still more of torch's functions, compositions of the engine's ops
(installed by lazyscope/__init__.py after _surface_functions): comparison
aliases, asarray, addbmm, chain_matmul, combinations, dsplit, unflatten,
unravel_index, vander, select_scatter, slice_scatter, masked_scatter,
index_add, narrow_copy, range, gradient and matrix_exp; and the
data-dependent unique_consecutive, histogram and poisson, which read the
values on the host (a sync on a lazy device, as unique's). Each follows
PyTorch's documented definition; tests/python/test_surface_extra.py checks
them against NumPy."""
import itertools
import math

import numpy as np

from lazyscope import _C

Tensor = _C.Tensor


def _lib():
    import lazyscope
    return lazyscope


def _index(values, like):
    return _C.from_numpy(np.asarray(values, dtype=np.int64), str(like.device))


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor of obj: obj itself when it is one of that dtype and device (and copy is not True)."""
    ls = _lib()
    if isinstance(obj, Tensor) and not copy:
        out = ls.as_tensor(obj, dtype=dtype, device=device)
    else:
        out = ls.tensor(obj.numpy() if isinstance(obj, Tensor) else obj, dtype=dtype, device=device)
    return out.requires_grad_() if requires_grad else out


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * sum over the batch of batch1[i] @ batch2[i]."""
    product = (batch1 @ batch2).sum(0)
    return input * beta + product * alpha if beta != 0 else product * alpha


def chain_matmul(*matrices):
    return _lib().linalg.multi_dot(list(matrices))


def combinations(input, r=2, with_replacement=False):  # noqa: A002
    """The r-element combinations of a 1-D tensor's elements, as rows, in itertools' order."""
    if input.dim() != 1:
        raise ValueError(f"combinations: expected a 1-D tensor, got {input.dim()} dims")
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    if not rows:
        return input.new_zeros((0, r)) if r else input.new_zeros((0,))
    index = np.asarray(rows, dtype=np.int64)
    return input.index_select(0, _index(index.reshape(-1), input)).reshape(len(rows), r)


def dsplit(input, indices_or_sections):  # noqa: A002
    if input.dim() < 3:
        raise RuntimeError(f"dsplit: requires a tensor with at least 3 dims, got {input.dim()}")
    return _lib().tensor_split(input, indices_or_sections, 2)


def unflatten(input, dim, sizes):  # noqa: A002
    return input.unflatten(dim, sizes)


def unravel_index(indices, shape):
    """The coordinates of flat indices in `shape` (row-major), one tensor per dim."""
    ls = _lib()
    if not isinstance(indices, Tensor):
        indices = ls.tensor(indices)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    total = int(np.prod(shape, dtype=np.int64))
    coords, rest = [], indices
    for size in reversed(shape):
        coords.append(ls.remainder(rest, size))
        rest = ls.floor_divide(rest, size)
    if total and bool((indices >= total).any().item() or (indices < -total).any().item()):
        raise RuntimeError(f"unravel_index: an index is out of bounds for shape {list(shape)}")
    return tuple(reversed(coords))


def vander(x, N=None, increasing=False):  # noqa: N803  (PyTorch's name)
    """Columns x^(N-1), ..., x^0 (or the reverse with increasing)."""
    n = x.shape[0] if N is None else N
    powers = list(range(n)) if increasing else list(range(n - 1, -1, -1))
    ls = _lib()
    if not powers:
        return x.new_zeros((x.shape[0], 0))
    return ls.stack([x ** p if p else ls.ones_like(x) for p in powers], 1)


def select_scatter(input, src, dim, index):  # noqa: A002
    """input with the slice input.select(dim, index) replaced by src."""
    size = input.shape[dim]
    position = index + size if index < 0 else index
    return input.index_copy(dim, _index([position], input), src.unsqueeze(dim))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """input with input[start:end:step] along dim replaced by src."""
    positions = range(input.shape[dim])[slice(start, end, step)]
    return input.index_copy(dim, _index(list(positions), input), src)


def masked_scatter(input, mask, source):  # noqa: A002
    """input with the positions where mask holds taken, in order, from
    source's leading elements (no host read: each position's rank among the
    masked ones is a cumulative sum)."""
    ls = _lib()
    mask = ls.broadcast_to(mask, input.shape)
    rank = mask.reshape(-1).to(ls.int64).cumsum(0) - 1
    picked = source.reshape(-1).index_select(0, rank.clamp(min=0)).reshape(input.shape)
    return ls.where(mask, picked.to(input.dtype), input)


def index_add(input, dim, index, source, *, alpha=1):  # noqa: A002
    return input.index_add(dim, index, source, alpha=alpha)


def narrow_copy(input, dim, start, length):  # noqa: A002
    return input.narrow(dim, start, length).clone()


def range_(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    """torch.range (deprecated in PyTorch): end included; float32 unless told."""
    if end is None:
        start, end = 0, start
    count = int(math.floor((end - start) / step)) + 1
    values = np.arange(count, dtype=np.float64) * step + start
    ls = _lib()
    out = ls.tensor(values, dtype=dtype or ls.float32, device=device)
    return out.requires_grad_() if requires_grad else out


def gradient(input, *, spacing=1, dim=None, edge_order=1):  # noqa: A002
    """numpy.gradient's estimate along each dim (central differences inside,
    one-sided at the ends, edge_order 1 or 2), uniform spacing (a number, or
    one per dim)."""
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order}")
    dims = list(range(input.dim())) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    spacings = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(spacings) != len(dims) or any(isinstance(h, Tensor) for h in spacings):
        raise ValueError("gradient: spacing must be a number or one number per dim (coordinate tensors are "
                         "not supported)")
    ls = _lib()
    out = []
    for d, h in zip(dims, spacings):
        n = input.shape[d]
        if n < edge_order + 1:
            raise RuntimeError(f"gradient: dim {d} has {n} elements; edge_order={edge_order} needs at least "
                               f"{edge_order + 1}")
        x = input.to(ls.float64) if not input.is_floating_point() else input
        inner = (x.narrow(d, 2, n - 2) - x.narrow(d, 0, n - 2)) / (2 * h)
        if edge_order == 1:
            first = (x.narrow(d, 1, 1) - x.narrow(d, 0, 1)) / h
            last = (x.narrow(d, n - 1, 1) - x.narrow(d, n - 2, 1)) / h
        else:
            first = (-3 * x.narrow(d, 0, 1) + 4 * x.narrow(d, 1, 1) - x.narrow(d, 2, 1)) / (2 * h)
            last = (3 * x.narrow(d, n - 1, 1) - 4 * x.narrow(d, n - 2, 1) + x.narrow(d, n - 3, 1)) / (2 * h)
        out.append(ls.cat([first, inner, last], d))
    return tuple(out)


# Padé [13/13] with scaling and squaring (Higham 2005), the coefficients of scipy.linalg.expm.
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800., 129060195264000.,
           10559470521600., 670442572800., 33522128640., 1323241920., 40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def matrix_exp(A):  # noqa: N803
    """e^A by Padé [13/13] with scaling and squaring; the number of
    squarings comes from A's 1-norm, read on the host (a sync on a lazy
    device). Differentiable: products, sums and one solve."""
    ls = _lib()
    ls.linalg._matrices("matrix_exp", A, square=True)
    n = A.shape[-1]
    norm = float(A.abs().sum(-2).amax().item()) if A.numel() else 0.0
    s = max(0, int(math.ceil(math.log2(norm / _THETA13)))) if norm > _THETA13 else 0
    a = A / (2 ** s) if s else A
    eye = ls.eye(n, dtype=A.dtype, device=A.device).expand(A.shape)
    b = _PADE13
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (a6 * b[13] + a4 * b[11] + a2 * b[9]) + a6 * b[7] + a4 * b[5] + a2 * b[3] + eye * b[1])
    v = a6 @ (a6 * b[12] + a4 * b[10] + a2 * b[8]) + a6 * b[6] + a4 * b[4] + a2 * b[2] + eye * b[0]
    r = ls.linalg.solve(v - u, v + u)
    for _ in range(s):
        r = r @ r
    return r


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Each run of equal consecutive values once (reads the values on the host)."""
    if dim is not None:
        raise NotImplementedError("unique_consecutive: dim= is not supported; flatten first (dim=None)")
    ls = _lib()
    values = input.detach().numpy().reshape(-1)
    starts = np.ones(len(values), dtype=bool)
    starts[1:] = values[1:] != values[:-1]
    out = ls.tensor(values[starts], dtype=input.dtype, device=input.device)
    extra = []
    if return_inverse:
        extra.append(ls.tensor((np.cumsum(starts) - 1).reshape(tuple(input.shape)), device=input.device))
    if return_counts:
        edges = np.flatnonzero(np.append(starts, True))
        extra.append(ls.tensor(np.diff(edges), device=input.device))
    return (out, *extra) if extra else out


def histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    """(counts, bin edges) as numpy.histogram (reads the values on the host)."""
    ls = _lib()
    edges_in = bins.detach().numpy() if isinstance(bins, Tensor) else bins
    w = weight.detach().numpy().reshape(-1) if weight is not None else None
    hist, edges = np.histogram(input.detach().numpy().reshape(-1), bins=edges_in, range=range, weights=w,
                               density=density)
    return ls.tensor(hist, dtype=input.dtype, device=input.device), \
        ls.tensor(edges, dtype=input.dtype, device=input.device)


def poisson(input, generator=None):  # noqa: A002
    """Poisson draws with the given rates, from lazyscope's generator (reads the rates on the host)."""
    ls = _lib()
    rates = input.detach().numpy()
    if (rates < 0).any():
        raise RuntimeError("poisson: the rates must be non-negative")
    rng = generator._rng if generator is not None else ls._rng
    return ls.tensor(rng.poisson(rates).astype(rates.dtype), device=input.device)


# --- Tensor methods: in-place random fills, memory no-ops, strides, small compositions -------

def _host_fill(self, draw):
    """self filled with the host generator's draw(shape) (uploaded: no sync), its dtype kept."""
    ls = _lib()
    values = np.asarray(draw(tuple(self.shape)))
    with ls.no_grad():
        return self.copy_(_C.from_numpy(values.astype(np.float64), str(self.device)).to(self.dtype))


def bernoulli_(self, p=0.5, *, generator=None):
    rng = (generator or _lib())._rng
    if isinstance(p, Tensor):
        probs = p.detach().numpy()
        return _host_fill(self, lambda shape: rng.random(shape) < probs)
    return _host_fill(self, lambda shape: rng.random(shape) < p)


def exponential_(self, lambd=1.0, *, generator=None):
    rng = (generator or _lib())._rng
    return _host_fill(self, lambda shape: rng.exponential(1.0 / lambd, shape))


def geometric_(self, p, *, generator=None):
    rng = (generator or _lib())._rng
    return _host_fill(self, lambda shape: rng.geometric(p, shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    rng = (generator or _lib())._rng
    return _host_fill(self, lambda shape: rng.lognormal(mean, std, shape))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    rng = (generator or _lib())._rng
    return _host_fill(self, lambda shape: median + sigma * rng.standard_cauchy(shape))


def random_(self, from_=0, to=None, *, generator=None):
    """Integers uniform on [from, to) (to None: [0, from) if given one bound, else the dtype's mantissa range)."""
    rng = (generator or _lib())._rng
    if to is None:
        low, high = (0, from_) if from_ else (0, 2 ** 24 if self.is_floating_point() else 2 ** 31)
    else:
        low, high = from_, to
    return _host_fill(self, lambda shape: rng.integers(low, high, shape))


def fill_diagonal_(self, fill_value, wrap=False):
    """The main diagonal (all dims equal indices; for a tall 2-D matrix with
    wrap, restarting every N + 1 rows, as NumPy's fill_diagonal) set to fill_value."""
    ls = _lib()
    shape = tuple(self.shape)
    if len(shape) < 2 or (len(shape) > 2 and len(set(shape)) != 1):
        raise RuntimeError(f"fill_diagonal_: all dims must be equal for a tensor of more than 2 dims, got "
                           f"{list(shape)}")
    mask = np.zeros(shape, dtype=bool)
    np.fill_diagonal(mask, True, wrap=wrap)
    with ls.no_grad():
        return self.copy_(ls.where(_C.from_numpy(mask, str(self.device)), fill_value, self))


def stride(self, dim=None):
    """The contiguous row-major strides of the tensor's shape (every value is stored contiguous)."""
    shape = tuple(self.shape)
    strides, acc = [], 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= max(size, 1)
    strides = tuple(reversed(strides))
    return strides if dim is None else strides[dim]


def sum_to_size(self, *size):
    """Summed over the broadcast dims down to `size` (which must broadcast to the tensor's shape)."""
    target = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(target)
    if lead < 0 or any(t not in (1, s) for t, s in zip(target, shape[lead:])):
        raise RuntimeError(f"sum_to_size: size {list(target)} is not expandable to the tensor's shape {list(shape)}")
    dims = list(range(lead)) + [lead + i for i, (t, s) in enumerate(zip(target, shape[lead:])) if t == 1 and s != 1]
    out = self.sum(dims, keepdim=True) if dims else self
    return out.reshape(target)


def put_(self, index, source, accumulate=False):
    """self.view(-1)[index] = source (or += with accumulate), in place."""
    ls = _lib()
    flat = self.reshape(-1)
    idx = index.reshape(-1)
    idx = ls.where(idx < 0, idx + flat.shape[0], idx)
    src = source.reshape(-1).to(self.dtype)
    updated = flat.index_add(0, idx, src) if accumulate else flat.index_copy(0, idx, src)
    with ls.no_grad():
        return self.copy_(updated.reshape(tuple(self.shape)))


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False):  # noqa: N803  (PyTorch's names)
    """torch.triangular_solve (deprecated for linalg.solve_triangular): (X, A clone) with op(A) X = b."""
    ls = _lib()
    x = ls.linalg.solve_triangular(A.mT if transpose else A, b, upper=upper != transpose, unitriangular=unitriangular)
    return x, A.clone()


def _memory_noop(name):
    def method(self, *args, **kwargs):
        return self
    method.__name__ = name
    method.__doc__ = f"{name}: the tensor itself (host memory is the device's here; nothing to pin or share)."
    return method


_EXTRA_METHODS = {"bernoulli_": bernoulli_, "exponential_": exponential_, "geometric_": geometric_,
                  "log_normal_": log_normal_, "cauchy_": cauchy_, "random_": random_,
                  "fill_diagonal_": fill_diagonal_, "stride": stride, "sum_to_size": sum_to_size, "put_": put_,
                  "triangular_solve": lambda self, A, upper=True, transpose=False, unitriangular=False:
                  triangular_solve(self, A, upper, transpose, unitriangular),
                  "ger": lambda self, other: self.outer(other), "dsplit": dsplit,
                  "pin_memory": _memory_noop("pin_memory"), "share_memory_": _memory_noop("share_memory_"),
                  "is_pinned": lambda self, device=None: False, "is_shared": lambda self: False,
                  "hardshrink": lambda self, lambd=0.5: _lib().nn.functional.hardshrink(self, lambd)}


_FUNCTIONS = ["asarray", "addbmm", "chain_matmul", "combinations", "dsplit", "unflatten", "unravel_index", "vander",
              "select_scatter", "slice_scatter", "masked_scatter", "index_add", "narrow_copy", "gradient",
              "matrix_exp", "unique_consecutive", "histogram", "poisson"]
_METHODS = ["addbmm", "masked_scatter", "narrow_copy", "matrix_exp", "unique_consecutive", "histogram",
            "select_scatter", "slice_scatter"]
_ALIASES = {"greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne"}


def install(namespace):
    for name in _FUNCTIONS:
        namespace[name] = globals()[name]
    namespace["range"] = range_
    for name in _METHODS:
        setattr(Tensor, name, globals()[name])
    for alias, name in _ALIASES.items():
        namespace[alias] = namespace[name]
        setattr(Tensor, alias, getattr(Tensor, name))
    namespace["linalg"].matrix_exp = matrix_exp
    namespace["triangular_solve"] = triangular_solve
    for name, method in _EXTRA_METHODS.items():
        setattr(Tensor, name, method)
