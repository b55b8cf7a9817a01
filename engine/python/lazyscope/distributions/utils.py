"""Helpers the families share: broadcasting parameters, probs <-> logits, and the
host draws every sampler starts from.

Random numbers come from lazyscope's one host generator (``lazyscope._rng``,
seeded by ``lazyscope.manual_seed``, saved by ``get_rng_state``) as
``randn``/``rand`` do, and are uploaded: on a lazy device a draw is a graph
input, so sampling adds no sync. Only the samplers that need a parameter's
value on the host (Gamma, Beta, Dirichlet, Poisson, Binomial) read it.
"""
import functools
import numbers

import numpy as np

import lazyscope as _ls
from lazyscope import Tensor


class lazy_property:
    """A property computed once per instance, on first use, with gradients recorded
    (as torch.distributions.utils.lazy_property): Bernoulli(logits=...).probs."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with _ls.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


def broadcast_all(*values):
    """Tensors and numbers broadcast to one shape; numbers become tensors of the first
    tensor's floating dtype and device (the default dtype on the CPU without one)."""
    like = next((v for v in values if isinstance(v, Tensor)), None)
    for v in values:
        if not isinstance(v, (Tensor, numbers.Number)):
            raise ValueError(f"Input arguments must all be instances of numbers.Number or lazyscope.Tensor, "
                             f"got {type(v).__name__}")
    dtype = like.dtype if like is not None and like.is_floating_point() else _ls.get_default_dtype()
    device = like.device if like is not None else None
    tensors = [v if isinstance(v, Tensor) else _ls.tensor(float(v), dtype=dtype, device=device) for v in values]
    return _ls.broadcast_tensors(*tensors)


def as_float(value, like=None):
    """``value`` as a floating tensor (a number takes ``like``'s dtype and device)."""
    if isinstance(value, Tensor):
        return value if value.is_floating_point() else value.to(_ls.get_default_dtype())
    return broadcast_all(value, *(() if like is None else (like,)))[0]


def clamp_probs(probs):
    eps = _ls.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """log-odds of a Bernoulli's probs, or the log of a Categorical's (clamped away from 0 and 1)."""
    ps = clamp_probs(probs)
    return ps.log() - (-ps).log1p() if is_binary else ps.log()


def logits_to_probs(logits, is_binary=False):
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def sum_rightmost(value, dim):
    """value summed over its ``dim`` rightmost dims."""
    if dim == 0:
        return value
    return value.reshape(*value.shape[:value.dim() - dim], -1).sum(-1)


def _float_dtype(like):
    return like.dtype if like.is_floating_point() else _ls.get_default_dtype()


def host_draw(shape, like, draw):
    """``draw(rng, shape)`` (a float64 NumPy array from the shared generator) uploaded to
    ``like``'s device in its floating dtype: a graph input on a lazy device, never a sync."""
    shape = tuple(int(n) for n in shape)
    values = np.asarray(draw(_ls._rng, shape), dtype=np.float64).reshape(shape)
    return _ls.tensor(values, dtype=_float_dtype(like), device=like.device)


def standard_normal(shape, like):
    return host_draw(shape, like, lambda rng, s: rng.standard_normal(s))


def open_uniform(shape, like):
    """U(0, 1) without its ends, in ``like``'s dtype: samplers take log(u) and log(1 - u)."""
    tiny = float(_ls.finfo(_float_dtype(like)).tiny)
    top = 1.0 - float(_ls.finfo(_float_dtype(like)).eps)
    return host_draw(shape, like, lambda rng, s: np.clip(rng.random(s), tiny, top))


def host_values(tensor):
    """A parameter's values on the host, float64: the samplers that need them (a sync on a lazy device)."""
    return np.asarray(tensor.detach().double().numpy(), dtype=np.float64)


def batch_diagonal(matrix):
    """The diagonals of a batch of square matrices [..., n, n] -> [..., n] (the engine's
    diagonal takes 2-D tensors only): the matrices masked by the identity, summed over rows."""
    n = matrix.shape[-1]
    return (matrix * _ls.eye(n, dtype=matrix.dtype, device=matrix.device)).sum(-1)
