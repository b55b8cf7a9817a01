"""More of torch's functions and Tensor methods, as compositions of the
engine's ops (installed by lazyscope/__init__.py): reordering dims,
NaN-ignoring reductions, elementwise math, statistics, index builders and
random draws. Each follows PyTorch's documented definition; the tests check
them against NumPy."""
import math

import numpy as np

from lazyscope import _C
from lazyscope._surface import _at, _shape_of, _wrap_dim

Tensor = _C.Tensor


def _lib():
    import lazyscope
    return lazyscope


# --- dims ---------------------------------------------------------------------

def movedim(input, source, destination):  # noqa: A002
    """Moves dims `source` to positions `destination` (ints or equal-length sequences); the rest keep their order."""
    rank = len(_shape_of(input))
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise ValueError(f"movedim: Invalid source or destination dims: source ({src} dims) should contain the same "
                         f"number of dims as destination ({dst} dims){_at()}")
    src = [_wrap_dim("movedim", d, rank) for d in src]
    dst = [_wrap_dim("movedim", d, rank) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ValueError(f"movedim: repeated dim in source {src} or destination {dst}{_at()}")
    order = [None] * rank
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(rank) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return input.permute(order)


def swapaxes(input, axis0, axis1):  # noqa: A002
    return input.transpose(axis0, axis1)


def tile(input, dims):  # noqa: A002
    """repeat() with `dims` padded with leading 1s to the input's rank (or the input's shape with leading 1s)."""
    dims = [dims] if isinstance(dims, int) else list(dims)
    rank = len(_shape_of(input))
    if len(dims) < rank:
        dims = [1] * (rank - len(dims)) + dims
    return input.repeat(*dims)


def ravel(input):  # noqa: A002
    return input.reshape(-1)


def take_along_dim(input, indices, dim=None):  # noqa: A002
    """gather along `dim` after broadcasting input and indices over the other dims; dim None: the flattened input."""
    if dim is None:
        return input.reshape(-1).gather(0, indices.reshape(-1))
    shape_i, shape_x = list(_shape_of(indices)), list(_shape_of(input))
    rank = len(shape_x)
    d = _wrap_dim("take_along_dim", dim, rank)
    if len(shape_i) != rank:
        raise ValueError(f"take_along_dim: input and indices should have the same number of dimensions, but got "
                         f"{rank} and {len(shape_i)}{_at()}")
    common = [shape_i[k] if k == d else max(shape_x[k], shape_i[k]) for k in range(rank)]
    x_shape = [shape_x[k] if k == d else common[k] for k in range(rank)]
    return input.expand(*x_shape).gather(d, indices.expand(*common))


# --- NaN-ignoring reductions and elementwise math -----------------------------

def nansum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    lib = _lib()
    x = lib.where(input.isnan(), lib.zeros_like(input), input)
    out = x.sum(dim, keepdim) if dim is not None else x.sum()
    return out if dtype is None else out.to(dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The mean of the non-NaN elements (NaN where there are none)."""
    valid = (~input.isnan()).to(input.dtype)
    count = valid.sum(dim, keepdim) if dim is not None else valid.sum()
    out = nansum(input, dim, keepdim) / count
    return out if dtype is None else out.to(dtype)


def logaddexp(input, other):  # noqa: A002
    """log(exp(a) + exp(b)) = max + log1p(exp(−|a − b|)), finite for large arguments (−inf with −inf is −inf)."""
    lib = _lib()
    top = lib.maximum(input, other)
    low = lib.minimum(input, other)
    gap = lib.where(top == low, lib.zeros_like(low), low - top)  # equal infinities: no inf − inf
    return top + gap.exp().log1p()


def logaddexp2(input, other):  # noqa: A002
    return logaddexp(input * math.log(2.0), other * math.log(2.0)) * (1.0 / math.log(2.0))


def hypot(input, other):  # noqa: A002
    """√(a² + b²), scaled by max(|a|, |b|) so that neither square overflows."""
    lib = _lib()
    a, b = input.abs(), other.abs()
    big, small = lib.maximum(a, b), lib.minimum(a, b)
    safe = lib.where(big == 0, lib.ones_like(big), big)
    ratio = lib.where(small == big, lib.ones_like(big), small / safe)  # both infinite: no inf / inf
    return lib.where(big == 0, big, big * (ratio * ratio + 1.0).sqrt())


def sgn(input):  # noqa: A002
    return input.sign()


def deg2rad(input):  # noqa: A002
    return input * (math.pi / 180.0)


def rad2deg(input):  # noqa: A002
    return input * (180.0 / math.pi)


def fmax(input, other):  # noqa: A002
    """maximum that ignores a NaN operand (NaN only where both are)."""
    lib = _lib()
    return lib.where(input.isnan(), other, lib.where(other.isnan(), input, lib.maximum(input, other)))


def fmin(input, other):  # noqa: A002
    lib = _lib()
    return lib.where(input.isnan(), other, lib.where(other.isnan(), input, lib.minimum(input, other)))


def heaviside(input, values):  # noqa: A002
    """0 below 0, 1 above, `values` at 0."""
    lib = _lib()
    step = (input > 0).to(input.dtype)
    return lib.where(input == 0, values, step)


def sinc(input):  # noqa: A002
    """sin(πx)/(πx), 1 at 0."""
    lib = _lib()
    px = input * math.pi
    safe = lib.where(input == 0, lib.ones_like(px), px)
    return lib.where(input == 0, lib.ones_like(px), safe.sin() / safe)


def erfc(input):  # noqa: A002
    """1 - erf(x), accurate in the right tail: 1 - erf(x) loses every digit past x ~ 6 (erfc(3) is
    2.2e-5), so above 2 it is exp(-x^2) / sqrt(pi) over the continued fraction x + (1/2) / (x + 1 / (x +
    (3/2) / ...)), 60 levels deep (2e-16 relative from x = 2 on)."""
    lib = _lib()
    x = input if input.is_floating_point() else input.to(lib.get_default_dtype())
    a = x.clamp(min=2.0)
    t = a
    for k in range(60, 0, -1):
        t = a + (k / 2) / t
    tail = (-(a * a)).exp() / (math.sqrt(math.pi) * t)
    return lib.where(x > 2.0, tail, 1.0 - x.erf())


def dist(input, other, p=2):  # noqa: A002
    """The p-norm of input − other (broadcast), over all elements."""
    d = (input - other).abs().reshape(-1)
    if p == math.inf:
        return d.amax()
    if p == -math.inf:
        return d.amin()
    if p == 0:
        return (d != 0).to(d.dtype).sum()
    return (d ** p).sum() ** (1.0 / p)


def cross(input, other, dim=None):  # noqa: A002
    """The 3-vector cross product along `dim` (the first dim of size 3 when None)."""
    lib = _lib()
    shape = _shape_of(input)
    if dim is None:
        dim = next((k for k, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise ValueError(f"cross: no dimension of size 3 in input of shape {list(shape)}{_at()}")
    d = _wrap_dim("cross", dim, len(shape))
    if shape[d] != 3 or _shape_of(other)[d] != 3:
        raise ValueError(f"cross: inputs must have size 3 in dim {dim}, got {list(shape)} and "
                         f"{list(_shape_of(other))}{_at()}")
    a, b = input.unbind(d), other.unbind(d)
    return lib.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], d)


# --- statistics ---------------------------------------------------------------

def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    mean = input.mean(dim, keepdim) if dim is not None else input.mean()
    return input.std(dim, unbiased, keepdim, correction=correction), mean


def aminmax(input, *, dim=None, keepdim=False):  # noqa: A002
    if dim is None:
        return input.amin(), input.amax()
    return input.amin(dim, keepdim), input.amax(dim, keepdim)


def cov(input, *, correction=1, fweights=None, aweights=None):  # noqa: A002
    """The covariance of the rows (variables) over the columns (observations), with optional integer frequency
    and float observation weights (numpy.cov's definition)."""
    x = input if input.dim() == 2 else input.reshape(1, -1)
    n = _shape_of(x)[1]
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        total = float(n)
        mean = x.mean(1, keepdim=True)
        centered = x - mean
        out = centered.matmul(centered.transpose(0, 1)) / max(total - correction, 0.0)
    else:
        total = w.sum()
        mean = (x * w).sum(1, keepdim=True) / total
        centered = x - mean
        if correction == 0:
            norm = total
        elif aweights is None:
            norm = total - correction
        else:
            norm = total - correction * (w * aweights.to(x.dtype)).sum() / total
        out = (centered * w).matmul(centered.transpose(0, 1)) / norm
    return out.reshape(()) if input.dim() < 2 else out


def corrcoef(input):  # noqa: A002
    """Pearson's correlation coefficients of the rows, clipped to [−1, 1] (numpy.corrcoef)."""
    c = cov(input)
    if input.dim() < 2:
        return c / c
    d = c.diagonal().sqrt()
    return (c / d.reshape(-1, 1) / d.reshape(1, -1)).clamp(-1.0, 1.0)


def kthvalue(input, k, dim=-1, keepdim=False):  # noqa: A002
    """The k-th smallest element along dim (1-based) and its index, from a stable ascending sort."""
    lib = _lib()
    d = _wrap_dim("kthvalue", dim, len(_shape_of(input)))
    n = _shape_of(input)[d] if _shape_of(input) else 1
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue: k ({k}) is out of range for dimension {dim} of size {n}{_at()}")
    values, indices = lib.sort(input, dim=d)  # always stable
    v, i = values.narrow(d, k - 1, 1), indices.narrow(d, k - 1, 1)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return v, i


def _scan(x, d, combine, fill):
    """Inclusive scan along d in log2(n) steps (Hillis-Steele): each step
    combines every element with the one `shift` before it (`fill` where
    there is none). O(n log n) elementwise work in vector ops, no loop over n."""
    lib = _lib()
    n = _shape_of(x)[d]
    shift = 1
    while shift < n:
        pad = [0, 0] * (x.dim() - 1 - d) + [shift, 0]
        before = lib.nn.functional.pad(x.narrow(d, 0, n - shift), pad, value=fill)
        x = combine(x, before)
        shift *= 2
    return x


def _cum_extreme(op, input, dim, is_max):  # noqa: A002
    lib = _lib()
    if not _shape_of(input):
        return input.clone(), lib.zeros((), dtype=lib.int64, device=input.device)
    d = _wrap_dim(op, dim, len(_shape_of(input)))
    n = _shape_of(input)[d]
    if n == 0:
        return input.clone(), lib.zeros(_shape_of(input), dtype=lib.int64, device=input.device)
    x = input.detach()
    worst = float("-inf") if is_max else float("inf")
    if input.dtype == lib.bool:
        running = _scan(x, d, lib.logical_or if is_max else lib.logical_and, not is_max)
    elif input.dtype in (lib.uint8, lib.int32, lib.int64):
        info = np.iinfo({lib.uint8: np.uint8, lib.int32: np.int32, lib.int64: np.int64}[input.dtype])
        running = _scan(x, d, lib.maximum if is_max else lib.minimum, int(info.min if is_max else info.max))
    else:
        running = _scan(x, d, lib.maximum if is_max else lib.minimum, worst)  # NaN propagates
    # PyTorch's index: the last position whose value reached the running
    # extreme (ties move it on), or a NaN's (later NaNs move it on).
    shape = [1] * input.dim()
    shape[d] = n
    position = lib.arange(n, device=input.device).reshape(shape).expand(*_shape_of(input))
    reached = (x == running) | (x != x)
    marked = lib.where(reached, position, lib.full_like(position, -1))
    indices = _scan(marked, d, lib.maximum, -1)
    # The values gathered at the indices: the gradient goes to the chosen element, as PyTorch's.
    return input.gather(d, indices), indices


def cummax(input, dim):  # noqa: A002
    """The running maximum along dim and the index where each was reached (the last on ties), as torch.cummax."""
    return _cum_extreme("cummax", input, dim, True)


def cummin(input, dim):  # noqa: A002
    """The running minimum along dim and the index where each was reached (the last on ties), as torch.cummin."""
    return _cum_extreme("cummin", input, dim, False)


def logcumsumexp(input, dim):  # noqa: A002
    """log(cumsum(exp(x))) along dim without overflow: a scan of logaddexp."""
    lib = _lib()
    if not _shape_of(input):
        return input.clone()
    d = _wrap_dim("logcumsumexp", dim, len(_shape_of(input)))
    if _shape_of(input)[d] == 0:
        return input.clone()
    return _scan(input, d, lib.logaddexp, float("-inf"))



def mode(input, dim=-1, keepdim=False):  # noqa: A002
    """The most frequent value along dim (the smallest of those tied for most frequent) and an index
    of it, as torch.mode. The index is the mode's last occurrence along dim: PyTorch's CPU kernel
    takes the last element of the mode's run after sorting (value, index) pairs by value, which is
    the last occurrence wherever its sort keeps equal values in order (PyTorch leaves it
    unspecified otherwise). From a stable sort, without a host read."""
    lib = _lib()
    if not _shape_of(input):
        return lib._ValuesIndices(input.clone(), lib.zeros((), dtype=lib.int64, device=input.device))
    d = _wrap_dim("mode", dim, len(_shape_of(input)))
    n = _shape_of(input)[d]
    if n == 0:
        raise IndexError(f"mode(): expected a non-empty dimension {dim}, got size 0{_at()}")
    values, order = lib.sort(input.detach(), dim=d)
    shape = [1] * input.dim()
    shape[d] = n
    position = lib.arange(n, device=input.device).reshape(shape).expand(*_shape_of(input))
    # A run starts where the sorted value differs from the one before (NaN != NaN: each its own run);
    # a position's count is its distance from its run's start plus one, the largest at the run's end.
    before = values.narrow(d, 0, n - 1)
    starts = lib.cat([lib.ones_like(values.narrow(d, 0, 1), dtype=lib.bool),
                      values.narrow(d, 1, n - 1) != before], d)
    run_start = _scan(lib.where(starts, position, lib.zeros_like(position)), d, lib.maximum, 0)
    count = position - run_start
    # argmax's first maximum: the end of the first (smallest) value's run with the largest count.
    at = count.argmax(d, keepdim=True)
    indices = order.gather(d, at)
    v = input.gather(d, indices)  # the gradient goes to the chosen element
    if not keepdim:
        v, indices = v.squeeze(d), indices.squeeze(d)
    return lib._ValuesIndices(v, indices)


def nanmedian(input, dim=None, keepdim=False):  # noqa: A002
    """The lower median of the non-NaN elements (all NaN: NaN), as torch.nanmedian: over all
    elements a 0-d tensor; over dim (values, indices), the index that of the element in a stable
    sort (an all-NaN line: its first element's). NaNs sort last, so the k-th of each line's
    non-NaN count is gathered from one sort, without a host read."""
    lib = _lib()
    if dim is None:
        flat = input.reshape(-1)
        if _shape_of(flat)[0] == 0:
            raise RuntimeError("nanmedian() of an empty tensor" + _at())
        return nanmedian(flat, 0).values.reshape(())
    if not _shape_of(input):
        return lib._ValuesIndices(input.clone(), lib.zeros((), dtype=lib.int64, device=input.device))
    d = _wrap_dim("nanmedian", dim, len(_shape_of(input)))
    if _shape_of(input)[d] == 0:
        raise IndexError(f"nanmedian(): expected a non-empty dimension {dim}, got size 0{_at()}")
    _, order = lib.sort(input.detach(), dim=d)  # stable, NaNs last
    count = _shape_of(input)[d] - input.isnan().sum(d, keepdim=True)
    k = ((count - 1) // 2).clamp(min=0)
    indices = order.gather(d, k)
    v = input.gather(d, indices)
    if not keepdim:
        v, indices = v.squeeze(d), indices.squeeze(d)
    return lib._ValuesIndices(v, indices)


# --- integer and float elementwise math: gcd, lcm, nextafter, frexp (session 10) -----------------

def _operands(op, input, other, want):  # noqa: A002
    """The two operands as tensors, refused unless each is of the `want` kind ('integer' or 'floating')."""
    lib = _lib()
    like = input if isinstance(input, Tensor) else other
    if not isinstance(like, Tensor):
        raise TypeError(f"{op}: expected a tensor operand, got {type(input).__name__} and {type(other).__name__}")
    a, b = (t if isinstance(t, Tensor) else lib.tensor(t, device=like.device) for t in (input, other))
    for t in (a, b):
        floating = t.is_floating_point()
        if (want == "integer" and (floating or t.dtype == lib.bool)) or (want == "floating" and not floating):
            raise RuntimeError(f"{op}: expected {want} tensors, got {t.dtype}{_at()}")
    return a, b


def gcd(input, other):  # noqa: A002
    """The greatest common divisor of integers, elementwise (non-negative; gcd(0, 0) = 0), as torch.gcd."""
    return _C._gcd(*_operands("gcd", input, other, "integer"))


def lcm(input, other):  # noqa: A002
    """The least common multiple of integers, |a / gcd(a, b) * b| (0 when either is 0), as torch.lcm."""
    lib = _lib()
    a, b = _operands("lcm", input, other, "integer")
    g = _C._gcd(a, b)
    zero = g == 0
    return lib.where(zero, lib.zeros_like(g), (a // lib.where(zero, lib.ones_like(g), g) * b).abs())


def nextafter(input, other):  # noqa: A002
    """The next representable float after input toward other, elementwise, as torch.nextafter."""
    return _C._nextafter(*_operands("nextafter", input, other, "floating"))


class _MantissaExponent(tuple):
    """torch.frexp's return type: (mantissa, exponent) with names."""

    def __new__(cls, mantissa, exponent):
        return super().__new__(cls, (mantissa, exponent))

    mantissa = property(lambda self: self[0])
    exponent = property(lambda self: self[1])


def frexp(input):  # noqa: A002
    """(mantissa, exponent) with input = mantissa * 2^exponent, 0.5 <= |mantissa| < 1 and an int32
    exponent (0 and the value itself at 0, infinities and NaN), as torch.frexp."""
    lib = _lib()
    if not isinstance(input, Tensor) or not input.is_floating_point():
        raise RuntimeError(f"frexp: only supports floating-point dtypes, got "
                           f"{input.dtype if isinstance(input, Tensor) else type(input).__name__}{_at()}")
    exponent = _C._frexp_exponent(input.detach())
    mantissa = _C._frexp_mantissa(input.detach())
    if input.requires_grad and lib.is_grad_enabled():
        # PyTorch's gradient, grad / 2^exponent, through a term that is exactly 0 (x - x at the
        # finite elements): the kernel's mantissa stays exact where x * 2^-exponent would
        # overflow the scale for subnormals. (Not an autograd.Function: its hooks live on the
        # output, which a caller may drop at once.)
        finite = lib.where(input.isfinite(), input, lib.zeros_like(input))
        mantissa = mantissa + (finite - finite.detach()) / lib.exp2(exponent)
    return _MantissaExponent(mantissa, exponent.to(lib.int32))

# --- more math: atleast_nd, isin, xlogy, copysign, float_power, trapezoid,
# quantile, histc (session 9) ---------------------------------------------------

def _atleast(n):
    def fn(*tensors):
        lib = _lib()
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tuple(tensors[0])
        out = []
        for t in tensors:
            t = t if isinstance(t, Tensor) else lib.tensor(t)
            if t.dim() < n:
                shape = {0: [1] * n, 1: [1, t.numel()] if n >= 2 else [t.numel()], 2: list(t.shape)}[t.dim()]
                if n == 3:
                    shape = [1] * 3 if t.dim() == 0 else ([1, t.numel(), 1] if t.dim() == 1 else [*t.shape, 1])
                t = t.reshape(shape)
            out.append(t)
        return out[0] if len(out) == 1 else tuple(out)
    fn.__name__ = f"atleast_{n}d"
    fn.__doc__ = f"Each tensor with at least {n} dims, as torch.atleast_{n}d (NumPy's placement of the new dims)."
    return fn


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element is among test_elements (a tensor or a number), as torch.isin."""
    lib = _lib()
    if not isinstance(elements, Tensor):
        elements = lib.tensor(elements)
    if not isinstance(test_elements, Tensor):
        test_elements = lib.tensor(test_elements, device=elements.device)
    found = (elements.reshape(-1, 1) == test_elements.reshape(1, -1)).any(1).reshape(elements.shape)
    return found.logical_not() if invert else found


def xlogy(input, other):  # noqa: A002
    """x * log(y), 0 where x == 0 (unless y is NaN), as torch.xlogy."""
    lib = _lib()
    x = input if isinstance(input, Tensor) else lib.tensor(float(input), device=other.device)
    y = other if isinstance(other, Tensor) else lib.full_like(x, float(other))
    product = x * y.log()
    return lib.where((x == 0) & ~y.isnan(), lib.zeros_like(product), product)


def copysign(input, other):  # noqa: A002
    """|input| with the sign of other (its sign bit: -0.0 counts as negative), as torch.copysign."""
    lib = _lib()
    x = input.float() if not input.is_floating_point() else input
    y = other if isinstance(other, Tensor) else lib.full_like(x, float(other))
    return lib.where(y.signbit(), -x.abs(), x.abs())


def float_power(input, exponent):  # noqa: A002
    """input ** exponent in float64, as torch.float_power."""
    lib = _lib()
    base = input.double() if isinstance(input, Tensor) else lib.tensor(float(input), dtype=lib.float64)
    exp = exponent.double() if isinstance(exponent, Tensor) else float(exponent)
    return base.pow(exp)


def _trapezoid_terms(op, y, x, dx, dim):
    """Each interval's area along dim (the mean of its ends times its width: dx, default 1,
    or the step between sample points x) and the dim."""
    lib = _lib()
    d = _wrap_dim(op, dim, len(_shape_of(y)))
    n = _shape_of(y)[d]
    mid = (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1)) * 0.5
    if x is None:
        return mid * (1.0 if dx is None else float(dx)), d
    if not isinstance(x, Tensor):
        x = lib.tensor(x, dtype=y.dtype, device=y.device)
    xd = d if x.dim() == y.dim() else x.dim() - 1
    m = _shape_of(x)[xd]
    step = x.narrow(xd, 1, m - 1) - x.narrow(xd, 0, m - 1)
    if x.dim() == 1 and y.dim() > 1:
        shape = [1] * y.dim()
        shape[d] = m - 1
        step = step.reshape(shape)
    return mid * step, d


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along dim: spacing dx (default 1) or sample points x, as torch.trapezoid."""
    d = _wrap_dim("trapezoid", dim, len(_shape_of(y)))
    if _shape_of(y)[d] == 0:
        return y.sum(d)
    terms, d = _trapezoid_terms("trapezoid", y, x, dx, dim)
    return terms.sum(d)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along dim (one fewer element), as torch.cumulative_trapezoid."""
    terms, d = _trapezoid_terms("cumulative_trapezoid", y, x, dx, dim)
    return terms.cumsum(d)


_QUANTILE_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):  # noqa: A002
    lib = _lib()
    if interpolation not in _QUANTILE_MODES:
        raise ValueError(f"{op}: interpolation must be one of {_QUANTILE_MODES}, got {interpolation!r}")
    scalar_q = not isinstance(q, Tensor) and np.ndim(q) == 0
    qs = np.atleast_1d(np.asarray(q.cpu().numpy() if isinstance(q, Tensor) else q, dtype=np.float64))
    if qs.ndim != 1 or np.any((qs < 0) | (qs > 1)):
        raise ValueError(f"{op}: q must be a scalar or 1-D, with values in [0, 1], got {qs.tolist()}")
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else _wrap_dim(op, dim, len(_shape_of(input)))
    values, _ = lib.sort(x, dim=d)  # NaNs last
    n = _shape_of(x)[d]
    nan = x.isnan().sum(d, keepdim=True)
    count = (n - nan) if ignore_nan else lib.full_like(nan, n)
    outs = []
    for qv in qs:
        pos = (count.to(values.dtype) - 1).clamp(min=0) * float(qv)
        lo, hi = pos.floor(), pos.ceil()
        if interpolation == "lower":
            hi = lo
        elif interpolation == "higher":
            lo = hi
        elif interpolation == "nearest":
            lo = hi = pos.round()
        a, b = values.gather(d, lo.long()), values.gather(d, hi.long())
        frac = 0.5 if interpolation == "midpoint" else (pos - lo)
        r = a + (b - a) * frac if interpolation in ("linear", "midpoint") else a
        if not ignore_nan:
            r = lib.where(nan > 0, lib.full_like(r, float("nan")), r)
        else:
            r = lib.where(count == 0, lib.full_like(r, float("nan")), r)
        outs.append(r if keepdim else r.squeeze(d))
    if scalar_q:
        return outs[0] if dim is not None or keepdim else outs[0].reshape(())
    stacked = lib.stack(outs, 0)
    return stacked if dim is not None or keepdim else stacked.reshape(len(qs))


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    """The q-th quantiles along dim (or of all elements), as torch.quantile: a NaN makes the result NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):  # noqa: A002
    """quantile ignoring NaNs (all NaN: NaN), as torch.nanquantile."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def histc(input, bins=100, min=0, max=0):  # noqa: A002
    """Counts of the elements in `bins` equal bins over [min, max] (both 0: the data's range; a
    sync reads it), elements outside ignored, as torch.histc."""
    lib = _lib()
    if bins < 1:
        raise ValueError(f"histc: bins must be positive, got {bins}")
    x = input.reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi == 0 and x.numel():
        lo, hi = float(x.min().item()), float(x.max().item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise ValueError(f"histc: max ({hi}) must be larger than min ({lo})")
    inside = (x >= lo) & (x <= hi)
    idx = ((x - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1).long()
    counts = lib.nn.functional.one_hot(idx, bins).to(input.dtype) * inside.to(input.dtype).unsqueeze(1)
    return counts.sum(0)


# --- builders and random draws -------------------------------------------------

def logspace(start, end, steps, base=10.0, *, dtype=None, device=None):
    lib = _lib()
    values = lib.tensor(np.power(float(base), np.linspace(float(start), float(end), int(steps))))
    values = values.to(lib.float32 if dtype is None else dtype)
    return values if device is None else values.to(device)


def _indices(op, row, col, offset, lower):
    lib = _lib()
    if row < 0 or col < 0:
        raise ValueError(f"{op}: row and col must be non-negative, got {row} and {col}{_at()}")
    r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return lib.tensor(np.stack([r, c]).astype(np.int64))


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    out = _indices("tril_indices", row, col, offset, True)
    return out if device is None else out.to(device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    out = _indices("triu_indices", row, col, offset, False)
    return out if device is None else out.to(device)


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) along the diagonal of a zero matrix."""
    lib = _lib()
    mats = [t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1 else t for t in tensors]
    for i, m in enumerate(mats):
        if m.dim() != 2:
            raise ValueError(f"block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has {m.dim()} "
                             f"dimensions{_at()}")
    if not mats:
        return lib.zeros(0, 0)
    cols = sum(_shape_of(m)[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = _shape_of(m)
        rows.append(lib.nn.functional.pad(m, (left, cols - left - c)))
        left += c
    return lib.cat(rows, 0)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (PyTorch's rules; a clear error when they don't)."""
    from lazyscope import Size
    try:
        return Size(np.broadcast_shapes(*[(s,) if isinstance(s, int) else tuple(s) for s in shapes]))
    except ValueError:
        raise RuntimeError(f"broadcast_shapes: shapes {[list(s) if not isinstance(s, int) else [s] for s in shapes]}"
                           f" cannot be broadcast together{_at()}") from None


def cartesian_prod(*tensors):
    """Every combination of the 1-D tensors' elements, the last varying fastest: [N, len(tensors)]."""
    lib = _lib()
    if len(tensors) == 1:
        return tensors[0]
    grids = lib.meshgrid(*tensors, indexing="ij")
    return lib.stack([g.reshape(-1) for g in grids], 1)


def bernoulli(input, p=None, *, generator=None):  # noqa: A002
    """1 with probability `input` (or p), else 0, drawn from lazyscope's generator."""
    lib = _lib()
    prob = input if p is None else _lib().full_like(input, p)
    return (lib.rand(*_shape_of(input), dtype=input.dtype, device=input.device) < prob).to(input.dtype)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None):
    """Draws from N(mean, std²): tensors broadcast, or floats with `size`."""
    lib = _lib()
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        shape = broadcast_shapes(_shape_of(mean) if isinstance(mean, Tensor) else (),
                                     _shape_of(std) if isinstance(std, Tensor) else ())
        return lib.randn(*shape, dtype=like.dtype, device=like.device) * std + mean
    if size is None:
        raise TypeError(f"normal: float mean and std need a size{_at()}")
    return lib.randn(*size, dtype=dtype, device=device) * std + mean


def index_copy(input, dim, index, source):  # noqa: A002
    """input with the slices at `index` along dim replaced by source's (each index once), exactly: a mask of
    the indexed slices picks source's values scattered onto zeros."""
    lib = _lib()
    shape = list(_shape_of(input))
    d = _wrap_dim("index_copy", dim, len(shape))
    hits = lib.zeros(shape[d], dtype=input.dtype, device=input.device).index_add(
        0, index, lib.ones(_shape_of(index)[0] if _shape_of(index) else 1, dtype=input.dtype, device=input.device))
    mask = (hits > 0).reshape([shape[d] if k == d else 1 for k in range(len(shape))])
    return lib.where(mask, lib.zeros_like(input).index_add(d, index, source), input)


def index_fill(input, dim, index, value):  # noqa: A002
    """input with the slices at `index` along dim set to value."""
    selected = input.index_select(dim, index)
    return index_copy(input, dim, index, _lib().full_like(selected, value))


# --- selection, products and stacking ------------------------------------------

def select(input, dim, index):  # noqa: A002
    """The slice at `index` of dim, without that dim."""
    shape = _shape_of(input)
    d = _wrap_dim("select", dim, len(shape))
    n = shape[d]
    if not -n <= index < n:
        raise IndexError(f"select: index {index} out of range for tensor of size {list(shape)} at dimension {dim}"
                         f"{_at()}")
    return input.narrow(d, index % n, 1).squeeze(d)


def take(input, index):  # noqa: A002
    """The elements of the flattened input at `index` (of index's shape; negative indices count from the end)."""
    flat = input.reshape(-1)
    n = _shape_of(flat)[0]
    idx = index.reshape(-1)
    idx = _lib().where(idx < 0, idx + n, idx)
    return flat.gather(0, idx).reshape(_shape_of(index))


def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    """Splits into n nearly equal parts (the first size % n one longer), or at the given indices."""
    size = _shape_of(input)[_wrap_dim("tensor_split", dim, len(_shape_of(input)))]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise ValueError(f"tensor_split: number of sections must be greater than 0, but got {n}{_at()}")
        bounds = [i * (size // n) + min(i, size % n) for i in range(n + 1)]
    else:
        cuts = [min(max(int(i), 0), size) for i in indices_or_sections]
        bounds = [0] + cuts + [size]
    return tuple(input.narrow(dim, a, max(b - a, 0)) for a, b in zip(bounds[:-1], bounds[1:]))


def hsplit(input, indices_or_sections):  # noqa: A002
    return tensor_split(input, indices_or_sections, 1 if input.dim() > 1 else 0)


def vsplit(input, indices_or_sections):  # noqa: A002
    return tensor_split(input, indices_or_sections, 0)


def mv(input, vec):  # noqa: A002
    return input.matmul(vec)


def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    return input * beta + mat.matmul(vec) * alpha


def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    return input * beta + vec1.reshape(-1, 1) * vec2.reshape(1, -1) * alpha


def inner(input, other):  # noqa: A002
    """The sum over the last dims of both (a scalar times a tensor for 0-d operands)."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    return (input.unsqueeze(-2) if input.dim() == 1 else input).matmul(other.transpose(-1, -2) if other.dim() > 1
                                                                        else other.unsqueeze(-1)).reshape(
        list(_shape_of(input))[:-1] + list(_shape_of(other))[:-1])


def vdot(input, other):  # noqa: A002
    """The dot product of two 1-D tensors (real: no conjugation)."""
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"vdot: 1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors{_at()}")
    return (input * other).sum()


def kron(input, other):  # noqa: A002
    """The Kronecker product: out[i·m + k, j·n + l] = a[i, j]·b[k, l] (any rank; the smaller one padded with 1s)."""
    a, b = input, other
    ra, rb = a.dim(), b.dim()
    rank = max(ra, rb)
    a = a.reshape([1] * (rank - ra) + list(_shape_of(a)))
    b = b.reshape([1] * (rank - rb) + list(_shape_of(b)))
    sa, sb = _shape_of(a), _shape_of(b)
    interleaved_a = [v for d in range(rank) for v in (sa[d], 1)]
    interleaved_b = [v for d in range(rank) for v in (1, sb[d])]
    out = a.reshape(interleaved_a) * b.reshape(interleaved_b)
    return out.reshape([sa[d] * sb[d] for d in range(rank)])


def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    """The last dim of input on the `offset` diagonal of new (dim1, dim2) matrices: Rᵀ·diag(x)·C with R, C the
    one-hot rows and columns of the diagonal's positions."""
    lib = _lib()
    length = _shape_of(input)[-1]
    n = length + abs(offset)
    k = np.arange(length)
    rows, cols = np.zeros((length, n)), np.zeros((length, n))
    rows[k, k + max(-offset, 0)] = 1.0
    cols[k, k + max(offset, 0)] = 1.0
    r = lib.tensor(rows.T, dtype=input.dtype, device=input.device)  # [n, L]
    c = lib.tensor(cols, dtype=input.dtype, device=input.device)  # [L, n]
    out = (r * input.unsqueeze(-2)).matmul(c)
    rank = out.dim()
    d1, d2 = _wrap_dim("diag_embed", dim1, rank), _wrap_dim("diag_embed", dim2, rank)
    return out.movedim((rank - 2, rank - 1), (d1, d2)) if (d1, d2) != (rank - 2, rank - 1) else out


def diagflat(input, offset=0):  # noqa: A002
    return diag_embed(input.reshape(-1), offset)


def fliplr(input):  # noqa: A002
    if input.dim() < 2:
        raise RuntimeError(f"fliplr: input must be >= 2-d, got {input.dim()}-d{_at()}")
    return input.flip(1)


def flipud(input):  # noqa: A002
    if input.dim() < 1:
        raise RuntimeError(f"flipud: input must be >= 1-d{_at()}")
    return input.flip(0)


def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    """Rotates by 90° k times in the plane of dims, from the first toward the second."""
    d0, d1 = dims
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0).flip(d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def dstack(tensors):
    lib = _lib()
    ts = [t.reshape(1, -1, 1) if t.dim() <= 1 else (t.unsqueeze(-1) if t.dim() == 2 else t) for t in tensors]
    return lib.cat(ts, 2)


def column_stack(tensors):
    lib = _lib()
    return lib.cat([t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors], 1)


def row_stack(tensors):
    return _lib().vstack(tensors)


def msort(input):  # noqa: A002
    return _lib().sort(input, dim=0)[0]


def argwhere(input):  # noqa: A002
    """The indices of the nonzero elements, [count, rank] (reads the data, as nonzero)."""
    return _lib().nonzero(input)


# --- predicates and dtype facts ---------------------------------------------------

def logical_xor(input, other):  # noqa: A002
    lib = _lib()
    return lib.ne(input.to(lib.bool), other.to(lib.bool) if isinstance(other, Tensor) else bool(other))


def signbit(input):  # noqa: A002
    """True where the sign bit is set: negatives and −0.0 (and −NaN is not told apart: NaN gives False)."""
    lib = _lib()
    if not input.is_floating_point():
        return input < 0
    return lib.where(input == 0, (1.0 / input) < 0, input < 0)


def isposinf(input):  # noqa: A002
    return input == math.inf


def isneginf(input):  # noqa: A002
    return input == -math.inf


def isreal(input):  # noqa: A002
    return _lib().ones_like(input, dtype=_lib().bool)


def is_nonzero(input):  # noqa: A002
    n = int(np.prod(_shape_of(input), dtype=np.int64))
    if n != 1:
        raise RuntimeError(f"is_nonzero: Boolean value of Tensor with {'no values' if n == 0 else 'more than one value'}"
                           f" is ambiguous{_at()}")
    return bool(input.item() != 0)


def _np_dtype(dtype):
    lib = _lib()
    return np.dtype(str(lib.empty(0, dtype=dtype).numpy().dtype))


class finfo:
    """Machine limits of a floating dtype (bits, eps, max, min, tiny, resolution), as torch.finfo."""

    def __init__(self, type=None):  # noqa: A002
        lib = _lib()
        dtype = lib.get_default_dtype() if type is None else type
        if not dtype.is_floating_point:
            raise TypeError(f"finfo: expected a floating point dtype, got {dtype}")
        if dtype == lib.bfloat16:
            self.bits, self.eps, self.max, self.tiny, self.resolution = 16, 2.0 ** -7, 3.3895313892515355e38, \
                2.0 ** -126, 0.01
        else:
            info = np.finfo(_np_dtype(dtype))
            self.bits, self.eps, self.max = info.bits, float(info.eps), float(info.max)
            self.tiny, self.resolution = float(info.tiny), 10.0 ** -info.precision
        self.min, self.smallest_normal, self.dtype = -self.max, self.tiny, str(dtype).split(".")[-1]

    def __repr__(self):
        return f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, " \
               f"smallest_normal={self.tiny}, tiny={self.tiny}, dtype={self.dtype})"


class iinfo:
    """Limits of an integer dtype (bits, min, max), as torch.iinfo."""

    def __init__(self, type):  # noqa: A002
        if type.is_floating_point or type == _lib().bool:
            raise TypeError(f"iinfo: expected an integer dtype, got {type}")
        info = np.iinfo(_np_dtype(type))
        self.bits, self.min, self.max, self.dtype = info.bits, int(info.min), int(info.max), str(type).split(".")[-1]

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


def _probe(value):
    """A value as the engine's promotion sees it: a tensor, or a Python number as a wrapped scalar."""
    lib = _lib()
    if isinstance(value, Tensor):
        return lib.empty(*([0] * max(value.dim(), 1)), dtype=value.dtype) if value.dim() else \
            lib.zeros((), dtype=value.dtype)
    return value


def result_type(tensor1, tensor2):
    """The dtype an arithmetic op of the two gives (the engine's own promotion, on empty tensors)."""
    a, b = _probe(tensor1), _probe(tensor2)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        a = _lib().tensor(a)
    return (a + b).dtype if isinstance(a, Tensor) else (b + a).dtype


def promote_types(type1, type2):
    lib = _lib()
    return (lib.empty(1, dtype=type1) + lib.empty(1, dtype=type2)).dtype


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow from_ -> to: never to a lower kind (float to int, int to bool)."""
    lib = _lib()
    kind = lambda d: 0 if d == lib.bool else (2 if d.is_floating_point else 1)  # noqa: E731
    return kind(from_) <= kind(to)


def randint_like(input, low=0, high=None, *, dtype=None, device=None):  # noqa: A002
    lib = _lib()
    if high is None:
        low, high = 0, low
    return lib.randint(low, high, tuple(_shape_of(input)), dtype=dtype or input.dtype,
                       device=device or input.device)


def _unfold(self, dimension, size, step):
    """Sliding windows of `size` every `step` along dimension, as a new last dim (a gather of the windows)."""
    lib = _lib()
    shape = list(_shape_of(self))
    d = _wrap_dim("unfold", dimension, len(shape)) if shape else 0
    length = shape[d] if shape else 1
    if size > length or size < 0 or step <= 0:
        raise RuntimeError(f"unfold: maximum size for tensor at dimension {d} is {length} but size is {size} "
                           f"(step {step} must be positive){_at()}")
    n = (length - size) // step + 1
    idx = (np.arange(n)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    out = self.index_select(d, lib.tensor(idx, device=self.device))
    out = out.reshape(shape[:d] + [n, size] + shape[d + 1:])
    return out.movedim(d + 1, -1)


class _HookHandle:
    """register_hook's handle: remove() takes the hook off its tensor (if the tensor still lives)."""

    def __init__(self, tensor, hook_id):
        import weakref
        self._tensor, self.id = weakref.ref(tensor), hook_id

    def remove(self):
        t = self._tensor()
        if t is not None:
            _C._remove_grad_hook(t, self.id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _register_hook(self, hook):
    """hook(grad) -> Tensor or None, called with the gradient of this tensor during backward; a returned
    tensor replaces it (for a leaf, before it is accumulated into .grad)."""
    return _HookHandle(self, _C._register_grad_hook(self, hook))


def _nbytes(self):
    return int(np.prod(_shape_of(self), dtype=np.int64)) * _element_size(self)


def _element_size(self):
    return _np_dtype(self.dtype).itemsize


def _get_device(self):
    dev = str(self.device)
    return -1 if dev == "cpu" else int(dev.split(":")[1])


_INPLACE = ("tan", "asinh", "acosh", "atanh", "ldexp", "renorm",
            "sign", "floor", "ceil", "round", "trunc", "frac", "reciprocal", "square", "atan", "asin", "acos",
            "expm1", "lerp", "clamp_min", "clamp_max", "nan_to_num", "index_fill", "index_copy", "addmm", "addmv",
            "addr", "baddbmm", "logical_xor", "hypot", "logaddexp", "fmod", "remainder", "floor_divide", "atan2",
            "sinh", "cosh", "log2", "log10", "exp2", "logit", "heaviside", "deg2rad", "rad2deg", "sgn", "gcd", "lcm",
            "nextafter")


# In-place shape ops: the tensor becomes a view of its data with the new
# shape (views of it taken before see its writes, as in PyTorch).
_SHAPE_INPLACE = ("squeeze", "unsqueeze", "t", "transpose", "swapaxes", "swapdims")


def _shape_inplace(name):
    def method(self, *args, **kwargs):
        lib = _lib()
        if lib.is_grad_enabled() and self.requires_grad and self.is_leaf:
            raise RuntimeError(f"{name}_: a leaf Variable that requires grad is being used in an in-place operation"
                               f"{_at()}")
        self._rebind(getattr(self, name)(*args, **kwargs))
        return self
    method.__name__ = name + "_"
    method.__doc__ = f"{name}, this tensor taking the result's shape (its data shared)."
    return method


def _inplace(name):
    def method(self, *args, **kwargs):
        return self.copy_(getattr(self, name)(*args, **kwargs))
    method.__name__ = name + "_"
    method.__doc__ = f"{name}, written into this tensor (its shape and dtype kept)."
    return method


_MORE_FUNCTIONS = ("select", "take", "tensor_split", "hsplit", "vsplit", "mv", "addmv", "addr", "inner", "vdot",
                   "kron", "diag_embed", "diagflat", "fliplr", "flipud", "rot90", "dstack", "column_stack",
                   "row_stack", "msort", "argwhere", "logical_xor", "signbit", "isposinf", "isneginf", "isreal",
                   "is_nonzero", "finfo", "iinfo", "result_type", "promote_types", "can_cast", "randint_like")
_MORE_METHODS = ("select", "take", "tensor_split", "hsplit", "vsplit", "mv", "addmv", "addr", "inner", "kron",
                 "diag_embed", "fliplr", "flipud", "rot90", "msort", "argwhere", "logical_xor", "signbit",
                 "isposinf", "isneginf", "isreal", "is_nonzero")
_FUNCTIONS = ("tan", "asinh", "acosh", "atanh", "positive", "ldexp", "var_mean", "renorm", "mvlgamma", "conj",
              "conj_physical", "resolve_conj", "resolve_neg", "real", "imag", "scatter_reduce", "atleast_1d", "atleast_2d", "atleast_3d", "isin", "xlogy", "copysign", "float_power", "trapezoid",
              "trapz", "cumulative_trapezoid", "gcd", "lcm", "nextafter", "frexp", "mode", "nanmedian", "quantile", "nanquantile", "histc", "cummax", "cummin", "logcumsumexp",
              "movedim", "swapaxes", "tile", "ravel", "take_along_dim", "nansum", "nanmean", "logaddexp",
              "logaddexp2", "hypot", "sgn", "deg2rad", "rad2deg", "fmax", "fmin", "heaviside", "sinc", "erfc", "dist",
              "cross", "std_mean", "aminmax", "cov", "corrcoef", "kthvalue", "logspace", "tril_indices",
              "triu_indices", "block_diag", "broadcast_shapes", "cartesian_prod", "bernoulli", "normal", "index_copy", "index_fill")
_METHODS = ("tan", "asinh", "acosh", "atanh", "positive", "ldexp", "var_mean", "std_mean", "renorm", "mvlgamma",
            "conj", "conj_physical", "resolve_conj", "resolve_neg", "scatter_reduce", "xlogy", "copysign", "float_power", "gcd", "lcm", "nextafter", "frexp", "mode", "nanmedian", "quantile", "nanquantile", "histc", "cummax", "cummin",
            "logcumsumexp", "movedim", "swapaxes", "tile", "ravel", "take_along_dim", "nansum", "nanmean", "logaddexp",
            "logaddexp2", "hypot", "sgn", "deg2rad", "rad2deg", "fmax", "fmin", "heaviside", "sinc", "erfc", "dist",
            "cross", "aminmax", "cov", "corrcoef", "kthvalue", "bernoulli", "index_copy", "index_fill")


def install(namespace):
    for name in _FUNCTIONS:
        namespace[name] = globals()[name]
    namespace["moveaxis"] = movedim
    namespace["swapdims"] = swapaxes
    for name in _METHODS:
        setattr(Tensor, name, globals()[name])
    Tensor.moveaxis = movedim
    Tensor.swapdims = swapaxes
    for alias, name in (("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh")):
        namespace[alias] = globals()[name]
        setattr(Tensor, alias, globals()[name])
    namespace["absolute"], namespace["multiply"], namespace["subtract"] = namespace["abs"], namespace["mul"], \
        namespace["sub"]
    Tensor.absolute, Tensor.multiply, Tensor.subtract = Tensor.abs, Tensor.mul, Tensor.sub
    # real/imag are properties on tensors, as in PyTorch.
    Tensor.real = property(real)
    Tensor.imag = property(imag)
    for name in _MORE_FUNCTIONS:
        namespace[name] = globals()[name]
    for name in _MORE_METHODS:
        setattr(Tensor, name, globals()[name])
    for name in _INPLACE:
        setattr(Tensor, name + "_", _inplace(name))
    for name in _SHAPE_INPLACE:
        setattr(Tensor, name + "_", _shape_inplace(name))
    from lazyscope._surface import baddbmm
    Tensor.baddbmm = baddbmm
    Tensor.unfold = _unfold
    Tensor.register_hook = _register_hook
    Tensor.retain_grad = lambda self: _C._retain_grad(self)
    Tensor.nbytes = property(_nbytes)
    Tensor.itemsize = property(_element_size)
    Tensor.element_size = _element_size
    Tensor.get_device = _get_device
    Tensor.ndimension = lambda self: len(_shape_of(self))
    Tensor.nelement = lambda self: int(np.prod(_shape_of(self), dtype=np.int64))
    Tensor.is_complex = lambda self: False


# --- trigonometric and hyperbolic inverses, aliases (session 9) -----------------

def _floating(x):
    lib = _lib()
    return x if x.is_floating_point() else x.to(lib.get_default_dtype())


def tan(input):  # noqa: A002
    """sin / cos (its gradient 1 / cos^2 by the quotient rule)."""
    x = _floating(input)
    return x.sin() / x.cos()


def asinh(input):  # noqa: A002
    """sign(x) log1p(|x| + x^2 / (1 + sqrt(1 + x^2))): no cancellation near 0, no overflow of x^2 inside
    sqrt for large |x| (past 1e150 in float64, 1e18 in float32, log(2|x|))."""
    lib = _lib()
    x = _floating(input)
    a = x.abs()
    big = 1e150 if x.dtype == lib.float64 else 1e18
    safe = a.clamp(max=big)
    small = (safe + safe * safe / (1.0 + (1.0 + safe * safe).sqrt())).log1p()
    value = lib.where(a > big, (a * 2.0).log(), small)
    return lib.where(x < 0, -value, value)


def acosh(input):  # noqa: A002
    """log1p((x - 1) + sqrt((x - 1)(x + 1))) for x >= 1 (NaN below)."""
    lib = _lib()
    x = _floating(input)
    big = 1e150 if x.dtype == lib.float64 else 1e18
    t = x.clamp(max=big) - 1.0
    value = (t + (t * (x.clamp(max=big) + 1.0)).sqrt()).log1p()
    return lib.where(x > big, (x * 2.0).log(), value)


def atanh(input):  # noqa: A002
    """0.5 log1p(2x / (1 - x)): ±inf at ±1, NaN beyond."""
    x = _floating(input)
    return 0.5 * (2.0 * x / (1.0 - x)).log1p()


def positive(input):  # noqa: A002
    return input


def ldexp(input, other):  # noqa: A002
    """input * 2^other."""
    lib = _lib()
    e = other if isinstance(other, Tensor) else lib.tensor(float(other), device=input.device)
    return _floating(input) * lib.tensor(2.0, dtype=_floating(input).dtype, device=input.device).pow(e)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    mean = input.mean(dim, keepdim) if dim is not None else input.mean()
    return input.var(dim, unbiased, keepdim, correction=correction), mean


def renorm(input, p, dim, maxnorm):  # noqa: A002
    """Each slice along dim whose p-norm exceeds maxnorm scaled down to maxnorm, as torch.renorm."""
    lib = _lib()
    d = _wrap_dim("renorm", dim, len(_shape_of(input)))
    others = [k for k in range(input.dim()) if k != d]
    norms = input.abs().pow(float(p)).sum(others, keepdim=True).pow(1.0 / float(p)) if others else input.abs()
    scale = lib.where(norms > maxnorm, maxnorm / (norms + 1e-7), lib.ones_like(norms))
    return input * scale


def mvlgamma(input, p):  # noqa: A002
    """The multivariate log-gamma of dimension p: sum_i lgamma(x - i/2) + p(p-1)/4 log(pi)."""
    lib = _lib()
    if p < 1:
        raise ValueError(f"mvlgamma: p must be at least 1, got {p}")
    x = _floating(input)
    if bool((x <= (p - 1) / 2).any().item()):
        raise ValueError(f"mvlgamma: all elements must be greater than (p-1)/2 = {(p - 1) / 2}{_at()}")
    total = sum(lib.lgamma(x - i / 2) for i in range(p))
    return total + p * (p - 1) / 4 * math.log(math.pi)


def _real_only(name, value):
    def fn(input):  # noqa: A002
        return value(input)
    fn.__name__ = name
    fn.__doc__ = f"{name}: LazyScope's tensors are real, so {name} is " + (
        "the tensor itself" if name != "imag" else "refused")
    return fn


def _no_imag(input):  # noqa: A002
    raise RuntimeError(f"imag is not implemented for tensors with non-complex dtypes (LazyScope has no complex "
                       f"dtypes){_at()}")


conj = _real_only("conj", lambda t: t)
conj_physical = _real_only("conj_physical", lambda t: t)
resolve_conj = _real_only("resolve_conj", lambda t: t)
resolve_neg = _real_only("resolve_neg", lambda t: t)
real = _real_only("real", lambda t: t)
imag = _real_only("imag", _no_imag)


# --- scatter_reduce (session 9) --------------------------------------------------

_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):  # noqa: A002
    """self with src's values reduced into the positions index names along dim, as
    torch.scatter_reduce (sum, prod, mean, amax, amin; include_self). Each
    output slot along dim reduces the src elements sent to it (a [.., out, src, ..]
    mask: memory out x src along dim); slots nothing is sent to keep self's value.
    index must cover self in the other dims (src may be larger: its front is read)."""
    lib = _lib()
    if reduce not in _SCATTER_REDUCES:
        raise ValueError(f"scatter_reduce: reduce must be one of {_SCATTER_REDUCES}, got {reduce!r}")
    shape = _shape_of(input)
    rank = len(shape)
    d = _wrap_dim("scatter_reduce", dim, rank)
    ishape, sshape = _shape_of(index), _shape_of(src)
    if len(ishape) != rank or len(sshape) != rank or any(
            ishape[k] > sshape[k] or (k != d and ishape[k] != shape[k]) for k in range(rank)):
        raise lib.ShapeError(f"scatter_reduce: index {list(ishape)} must match self {list(shape)} in every dim but "
                             f"{d} and be no larger than src {list(sshape)}{_at()}")
    s = src
    for k in range(rank):
        if sshape[k] != ishape[k]:
            s = s.narrow(k, 0, ishape[k])
    if ishape[d] and bool(((index < 0) | (index >= shape[d])).any().item()):  # one read, not two
        raise IndexError(f"scatter_reduce: index out of range for dimension {d} of size {shape[d]}{_at()}")
    slots_shape = [1] * (rank + 1)
    slots_shape[d] = shape[d]
    slots = lib.arange(shape[d], device=input.device).reshape(slots_shape)
    mask = index.unsqueeze(d) == slots                     # [.., O, S, ..]: src element j goes to slot o
    vals = s.to(input.dtype).unsqueeze(d)                  # [.., 1, S, ..]
    hit = mask.any(d + 1)                                  # [.., O, ..]
    if reduce in ("sum", "mean"):
        total = lib.where(mask, vals, lib.zeros_like(vals)).sum(d + 1)
    elif reduce == "prod":
        total = lib.where(mask, vals, lib.ones_like(vals)).prod(d + 1)
    else:
        if input.is_floating_point():
            worst = float("-inf") if reduce == "amax" else float("inf")
        else:
            info = np.iinfo(np.int64 if input.dtype == lib.int64 else np.int32)
            worst = int(info.min if reduce == "amax" else info.max)
        masked = lib.where(mask, vals, lib.full_like(vals, worst))
        total = masked.amax(d + 1) if reduce == "amax" else masked.amin(d + 1)
    if include_self:
        if reduce in ("sum", "mean"):
            total = total + input
        elif reduce == "prod":
            total = total * input
        else:
            total = lib.maximum(total, input) if reduce == "amax" else lib.minimum(total, input)
    if reduce == "mean":
        count = mask.to(input.dtype).sum(d + 1) + (1 if include_self else 0)
        total = total / count.clamp(min=1)
        if not input.is_floating_point():
            total = total.floor()
    return lib.where(hit, total.to(input.dtype), input)
