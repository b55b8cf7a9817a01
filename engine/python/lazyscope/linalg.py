"""torch.linalg: norms composed from the engine's reductions, and the
decompositions and solves (LAPACK kernels: kernels_linalg.cpp), each with
its gradient (gradients.cpp).

Results stay tensors on the input's device: on a lazy device they are part
of the step's graph and nothing is read back (gradient clipping computes a
norm every step; a host sync there would cost one per step). A matrix the
op cannot factor (a singular one for solve and inv, an indefinite one for
cholesky) is an error at the sync that runs the graph, naming the op.
"""
import collections
import math

from lazyscope import _C


def _dims(dim, ndim):
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:  # dim=() reduces over everything, as PyTorch
        return None
    for d in dims:
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(f"norm: dimension {d} is out of range for a tensor of {ndim} dimensions")
    return list(dims)


def _reduce(t, fn, dims, keepdim):
    if dims is None:
        out = getattr(t, fn)()
        if keepdim:
            out = out.reshape([1] * t.dim())
        return out
    return getattr(t, fn)(dim=dims, keepdim=keepdim)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002  (PyTorch's name)
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements when None):
    ord inf/-inf: max/min of |x|; 0: the count of non-zeros; otherwise
    (Σ|x|^ord)^(1/ord)."""
    if not isinstance(x, _C.Tensor):
        raise TypeError(f"vector_norm: expected a Tensor, got {type(x).__name__}")
    if dtype is not None:
        x = x.to(dtype)
    if not x.is_floating_point():
        raise TypeError(f"linalg.vector_norm: expected a floating point input, got {x.dtype}; "
                        f"pass dtype=lazyscope.float32 or convert the tensor first")
    if isinstance(ord, str):
        raise ValueError(f"linalg.vector_norm: ord must be a number, got {ord!r} (use lazyscope.norm for 'fro')")
    ord = float(ord)
    dims = _dims(dim, x.dim())
    if math.isinf(ord):
        if x.numel() == 0:
            raise RuntimeError("linalg.vector_norm: cannot compute the inf-norm of an empty tensor")
        return _reduce(x.abs(), "amax" if ord > 0 else "amin", dims, keepdim)
    if ord == 0:
        return _reduce((x != 0).to(x.dtype), "sum", dims, keepdim)
    if ord == 1:
        return _reduce(x.abs(), "sum", dims, keepdim)
    if ord == 2:
        return _reduce(x * x, "sum", dims, keepdim).sqrt()
    return _reduce(x.abs() ** ord, "sum", dims, keepdim) ** (1.0 / ord)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):  # noqa: A002  (PyTorch's names)
    """``torch.norm`` / ``Tensor.norm``: p='fro' (or 2) is the 2-norm over
    ``dim`` (all elements when None); other numbers are vector norms
    (inf, -inf, 0, 1, any p); 'nuc' the nuclear norm of the matrices over
    ``dim`` (two dims, as torch.norm)."""
    if p == "nuc":
        if dim is None and input.dim() == 2:
            dim = (-2, -1)
        if dim is None or isinstance(dim, int) or len(dim) != 2:
            raise ValueError("norm: p='nuc' needs the two matrix dims (dim=(-2, -1)) or a 2-D input")
        return matrix_norm(input if dtype is None else input.to(dtype), "nuc", dim, keepdim)
    if p == "fro" or p is None:
        p = 2
    elif isinstance(p, str):
        raise ValueError(f"norm: p={p!r} is not a norm; use 'fro', 'nuc', inf, -inf or a number")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


# Decompositions and solves. The engine's ops take batches whose batch dims
# are equal; these functions broadcast them, read PyTorch's arguments
# (left, UPLO, mode, full_matrices) and unpack the packed outputs.

SlogdetResult = collections.namedtuple("slogdet", ["sign", "logabsdet"])
EighResult = collections.namedtuple("eigh", ["eigenvalues", "eigenvectors"])
QRResult = collections.namedtuple("qr", ["Q", "R"])
SVDResult = collections.namedtuple("svd", ["U", "S", "Vh"])
LstsqResult = collections.namedtuple("lstsq", ["solution", "residuals", "rank", "singular_values"])


def _matrices(op, a, square=False):
    if not isinstance(a, _C.Tensor):
        raise TypeError(f"linalg.{op}: expected a Tensor, got {type(a).__name__}")
    if a.dim() < 2:
        raise ValueError(f"linalg.{op}: expected a matrix or a batch of matrices [..., rows, cols], got shape "
                         f"{list(a.shape)}")
    if not a.is_floating_point():
        raise TypeError(f"linalg.{op}: expected float32 or float64 matrices, got {a.dtype}")
    if square and a.shape[-1] != a.shape[-2]:
        raise ValueError(f"linalg.{op}: expected square matrices, got shape {list(a.shape)}")
    return a


def _broadcast_batches(op, a, b):
    """a [..., n, n] and b [..., n, k] with their batch dims broadcast to one shape."""
    try:
        batch = _broadcast_shape(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    except ValueError:
        raise ValueError(f"linalg.{op}: the batch dims of {list(a.shape)} and {list(b.shape)} do not "
                         f"broadcast") from None
    return a.expand(*batch, *a.shape[-2:]), b.expand(*batch, *b.shape[-2:])


def _broadcast_shape(x, y):
    out = []
    for i in range(1, max(len(x), len(y)) + 1):
        p = x[-i] if i <= len(x) else 1
        q = y[-i] if i <= len(y) else 1
        if p != q and p != 1 and q != 1:
            raise ValueError
        out.append(max(p, q) if p and q else 0)
    return tuple(reversed(out))


def _as_rhs(op, a, b):
    """b as [..., n, k] and whether it was a vector (PyTorch's rule: B is a
    vector when it is 1-D or has A's shape without the last dim)."""
    if not isinstance(b, _C.Tensor):
        raise TypeError(f"linalg.{op}: expected a Tensor right-hand side, got {type(b).__name__}")
    vector = b.dim() == 1 or (b.dim() == a.dim() - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    b = b.unsqueeze(-1) if vector else b
    if b.dtype != a.dtype:
        raise TypeError(f"linalg.{op}: the coefficients are {a.dtype} and the right-hand side {b.dtype}")
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"linalg.{op}: the coefficients {list(a.shape)} and the right-hand side "
                         f"{list(b.shape)} do not match (A is [..., n, n], B [..., n, k] or [..., n])")
    return b, vector


def solve(A, B, *, left=True, out=None):
    """X with A X = B (or X A = B when left=False), by LU with partial pivoting."""
    _matrices("solve", A, square=True)
    if not left:
        return solve(A.mT, B.mT).mT
    b, vector = _as_rhs("solve", A, B)
    a, b = _broadcast_batches("solve", A, b)
    x = _C._linalg("solve", [a, b], {"transpose": False})
    return x.squeeze(-1) if vector else x


def inv(A, *, out=None):
    """A^-1 (a singular A is an error naming the zero pivot)."""
    return _C._linalg("inv", [_matrices("inv", A, square=True)])


def slogdet(A, *, out=None):
    """(sign, log|det A|); (0, -inf) for a singular A."""
    packed = _C._linalg("slogdet", [_matrices("slogdet", A, square=True)])
    return SlogdetResult(packed[..., 0], packed[..., 1])


def det(A, *, out=None):
    """det A = sign * exp(log|det A|). Its gradient reads A^-T: a singular A
    fails in backward (PyTorch's SVD-based rule gives the adjugate there)."""
    sign, logabsdet = slogdet(A)
    return sign * logabsdet.exp()


def logdet(A):
    """log det A: nan where det A < 0, -inf where it is 0 (torch.logdet)."""
    sign, logabsdet = slogdet(A)
    return logabsdet.where(sign >= 0, logabsdet * float("nan"))


def cholesky(A, *, upper=False, out=None):
    """L lower-triangular with A = L L^T (its lower triangle read), or U = L^T."""
    return _C._linalg("cholesky", [_matrices("cholesky", A, square=True)], {"upper": bool(upper)})


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """X with A X = B (X A = B when left=False), A upper or lower triangular
    (only that triangle is read; its diagonal taken as ones when
    unitriangular)."""
    _matrices("solve_triangular", A, square=True)
    if not isinstance(B, _C.Tensor) or B.dim() < 2:
        raise ValueError("linalg.solve_triangular: expected B a matrix or a batch of matrices [..., n, k]")
    if B.dtype != A.dtype:
        raise TypeError(f"linalg.solve_triangular: A is {A.dtype} and B {B.dtype}")
    flags = {"upper": bool(upper), "unitriangular": bool(unitriangular)}
    if left:
        if B.shape[-2] != A.shape[-1]:
            raise ValueError(f"linalg.solve_triangular: A {list(A.shape)} and B {list(B.shape)} do not match "
                             f"(A X = B needs B [..., n, k])")
        a, b = _broadcast_batches("solve_triangular", A, B)
        return _C._linalg("solve_triangular", [a, b], {**flags, "transpose": False})
    # X A = B  <=>  A^T X^T = B^T.
    if B.shape[-1] != A.shape[-1]:
        raise ValueError(f"linalg.solve_triangular: A {list(A.shape)} and B {list(B.shape)} do not match "
                         f"(X A = B needs B [..., k, n])")
    bt = B.mT
    a, b = _broadcast_batches("solve_triangular", A, bt)
    return _C._linalg("solve_triangular", [a, b], {**flags, "transpose": True}).mT


def _uplo(op, UPLO):
    if UPLO not in ("L", "U"):
        raise ValueError(f"linalg.{op}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "U"


def eigh(A, UPLO="L", *, out=None):
    """(eigenvalues ascending, eigenvectors as columns) of the symmetric A
    (only its UPLO triangle read)."""
    _matrices("eigh", A, square=True)
    n = A.shape[-1]
    packed = _C._linalg("eigh", [A], {"upper": _uplo("eigh", UPLO)})
    values = packed[..., :n]
    vectors = packed[..., n:].reshape(*A.shape[:-2], n, n)
    return EighResult(values, vectors)


def eigvalsh(A, UPLO="L", *, out=None):
    return eigh(A, UPLO).eigenvalues


def qr(A, mode="reduced", *, out=None):
    """(Q, R) with A = Q R; mode 'reduced' (Q [m, min(m, n)]), 'complete'
    (Q [m, m]) or 'r' (Q empty)."""
    _matrices("qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"linalg.qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    m, n = A.shape[-2], A.shape[-1]
    q_cols = m if mode == "complete" else min(m, n)
    packed = _C._linalg("qr", [A], {"complete": mode == "complete"})
    batch = tuple(A.shape[:-2])
    Q = packed[..., :m * q_cols].reshape(*batch, m, q_cols)
    R = packed[..., m * q_cols:].reshape(*batch, q_cols, n)
    if mode == "r":
        Q = _C.zeros([0], A.dtype, str(A.device)) if hasattr(_C, "zeros") else Q[..., :0, :0]
    return QRResult(Q, R)


def svd(A, full_matrices=True, *, driver=None, out=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending (LAPACK's gesdd)."""
    _matrices("svd", A)
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    u_cols, v_rows = (m, n) if full_matrices else (k, k)
    packed = _C._linalg("svd", [A], {"full": bool(full_matrices)})
    batch = tuple(A.shape[:-2])
    U = packed[..., :m * u_cols].reshape(*batch, m, u_cols)
    S = packed[..., m * u_cols:m * u_cols + k]
    Vh = packed[..., m * u_cols + k:].reshape(*batch, v_rows, n)
    return SVDResult(U, S, Vh)


def svdvals(A, *, driver=None, out=None):
    return svd(A, full_matrices=False).S


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """'fro', 'nuc', inf, -inf, 1, -1, 2, -2 norms of the matrices over ``dim``."""
    if dtype is not None:
        A = A.to(dtype)
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise ValueError(f"linalg.matrix_norm: dim must be two dims, got {dim!r}")
    d0, d1 = (d % A.dim() for d in dim)
    if d0 == d1:
        raise ValueError(f"linalg.matrix_norm: dims must differ, got {dim!r}")
    if ord == "fro":
        return vector_norm(A, 2, dim=(d0, d1), keepdim=keepdim)
    if ord in ("nuc", 2, -2):
        moved = A.movedim((d0, d1), (-2, -1)) if (d0, d1) != (A.dim() - 2, A.dim() - 1) else A
        s = svdvals(moved)
        out = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    if ord in (math.inf, -math.inf, 1, -1):
        # inf: the largest row sum of |A|; 1: the largest column sum.
        summed = A.abs().sum(dim=d1 if ord in (math.inf, -math.inf) else d0, keepdim=True)
        other = d0 if ord in (math.inf, -math.inf) else d1
        out = summed.amax(dim=other, keepdim=True) if ord > 0 else summed.amin(dim=other, keepdim=True)
        return out if keepdim else out.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    raise ValueError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2, got {ord!r}")


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The pseudo-inverse V diag(1/s) U^T, singular values at or below
    max(atol, rtol * s_max) dropped (rtol's default: eps * max(m, n))."""
    _matrices("pinv", A)
    U, S, Vh = svd(A, full_matrices=False)
    eps = 1.1920928955078125e-07 if str(A.dtype).endswith("float32") else 2.220446049250313e-16
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else eps * max(A.shape[-2], A.shape[-1])
    s_max = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
    cutoff = (s_max * rtol).clamp_min(atol or 0.0)
    keep = S > cutoff
    inv_s = (1.0 / S.where(keep, S.new_ones(S.shape) if hasattr(S, "new_ones") else S * 0 + 1)) * keep.to(S.dtype)
    return (Vh.mT * inv_s.unsqueeze(-2)) @ U.mT


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """How many singular values are above max(atol, rtol * s_max) (int64)."""
    _matrices("matrix_rank", A)
    S = svdvals(A)
    eps = 1.1920928955078125e-07 if str(A.dtype).endswith("float32") else 2.220446049250313e-16
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else eps * max(A.shape[-2], A.shape[-1])
    s_max = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
    return (S > (s_max * rtol).clamp_min(atol or 0.0)).sum(-1)


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of A X = B through the pseudo-inverse
    (rank-deficient A included, as gelsd); residuals and rank are empty
    tensors, singular_values A's (PyTorch fills them for some drivers only)."""
    _matrices("lstsq", A)
    vector = isinstance(B, _C.Tensor) and B.dim() == A.dim() - 1
    b = B.unsqueeze(-1) if vector else B
    x = pinv(A, rtol=rcond) @ b
    empty = A.new_zeros((0,)) if hasattr(A, "new_zeros") else x.reshape(-1)[:0]
    return LstsqResult(x.squeeze(-1) if vector else x, empty, empty, svdvals(A))


def matrix_power(A, n):
    """A^n by repeated squaring (n < 0: of A^-1; n = 0: the identity)."""
    _matrices("matrix_power", A, square=True)
    if not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {type(n).__name__}")
    if n == 0:
        eye = A.new_zeros(A.shape) + _eye_like(A)
        return eye
    base = inv(A) if n < 0 else A
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


def _eye_like(A):
    import lazyscope
    return lazyscope.eye(A.shape[-1], dtype=A.dtype, device=A.device)


def cholesky_solve(B, L, upper=False):
    """X with A X = B, A = L L^T given its Cholesky factor (torch.cholesky_solve)."""
    lower = L.mT if upper else L
    y = solve_triangular(lower, B, upper=False)
    return solve_triangular(lower.mT, y, upper=True)


def cholesky_inverse(L, upper=False):
    """A^-1 from A's Cholesky factor (torch.cholesky_inverse)."""
    return cholesky_solve(_eye_like(L).expand(L.shape), L, upper=upper)


def multi_dot(tensors):
    """The product of the matrices in order (1-D ends as row/column vectors)."""
    if len(tensors) < 2:
        raise ValueError("linalg.multi_dot: expected at least two tensors")
    out = tensors[0]
    for t in tensors[1:]:
        out = out @ t
    return out


def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)


def cross(input, other, *, dim=-1):  # noqa: A002
    """The 3-vector cross product along ``dim``."""
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise ValueError(f"linalg.cross: dim {dim} must have size 3, got {list(input.shape)} and "
                         f"{list(other.shape)}")
    a0, a1, a2 = (input.narrow(dim, i, 1) for i in range(3))
    b0, b1, b2 = (other.narrow(dim, i, 1) for i in range(3))
    import lazyscope
    return lazyscope.cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim=dim)


__all__ = ["norm", "vector_norm", "matrix_norm", "solve", "inv", "det", "slogdet", "logdet", "cholesky",
           "solve_triangular", "eigh", "eigvalsh", "qr", "svd", "svdvals", "pinv", "matrix_rank", "lstsq",
           "matrix_power", "cholesky_solve", "cholesky_inverse", "multi_dot", "vecdot", "cross"]
