"""torch.norm / Tensor.norm and torch.linalg.vector_norm, composed from the
engine's reductions.

The result stays a tensor on the input's device: on a lazy device the norm is
part of the step's graph and nothing is read back (gradient clipping computes
a norm every step; a host sync there would cost one per step).
"""
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
    (inf, -inf, 0, 1, any p). 'nuc' needs an SVD, which the engine lacks."""
    if p == "fro" or p is None:
        p = 2
    elif isinstance(p, str):
        raise NotImplementedError(f"norm: p={p!r} is not supported (the engine has no SVD); "
                                  f"use p='fro', inf, -inf or a number")
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


__all__ = ["norm", "vector_norm"]
