"""torch.distributions.transforms: the bijections TransformedDistribution pushes a base
distribution through (LogNormal = exp of a Normal; SAC's squashed Gaussian = tanh of one).

With ``cache_size=1`` a transform remembers its last (x, y): the inverse of
that y returns x itself, so log_prob of a tanh-squashed sample never takes
atanh of a value rounded to ±1 (PyTorch's behaviour).
"""
import math

import lazyscope as _ls
from lazyscope.distributions import constraints
from lazyscope.distributions.utils import sum_rightmost

__all__ = ["AffineTransform", "ComposeTransform", "ExpTransform", "SigmoidTransform", "TanhTransform", "Transform"]


class Transform:
    """y = f(x), with f's inverse and log|det ∂y/∂x|. ``sign`` is +1 or -1 for a monotone
    elementwise f."""
    bijective = True
    sign = 1
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError(f"{type(self).__name__}: cache_size must be 0 or 1, got {cache_size}")
        self._cache_size = cache_size
        self._cached_x_y = None, None

    event_dim = property(lambda self: self.domain.event_dim)

    @property
    def inv(self):
        return _InverseTransform(self)

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else type(self)(cache_size=cache_size)

    def __call__(self, x):
        return self._through_cache(x, 0, self._call)

    def _inv_call(self, y):
        return self._through_cache(y, 1, self._inverse)

    def _through_cache(self, given, side, compute):
        """compute(given), or the other side of the cached pair when ``given`` is its ``side``."""
        if self._cache_size == 0:
            return compute(given)
        if given is self._cached_x_y[side]:
            return self._cached_x_y[1 - side]
        other = compute(given)
        self._cached_x_y = (given, other) if side == 0 else (other, given)
        return other

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError(f"{type(self).__name__} has no inverse")

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """``t.inv``: x = t⁻¹(y), sharing t's cache."""

    def __init__(self, transform):
        super().__init__(0)
        self._inv = transform

    domain = property(lambda self: self._inv.codomain)
    codomain = property(lambda self: self._inv.domain)
    sign = property(lambda self: self._inv.sign)
    inv = property(lambda self: self._inv)

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __hash__(self):
        return hash((type(self), self._inv))


class ExpTransform(Transform):
    """y = exp(x)."""
    codomain = constraints.positive

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class SigmoidTransform(Transform):
    """y = sigmoid(x), kept inside (0, 1) as PyTorch (clamped to [tiny, 1 - eps])."""
    codomain = constraints.unit_interval

    def _call(self, x):
        finfo = _ls.finfo(x.dtype)
        return x.sigmoid().clamp(min=float(finfo.tiny), max=1.0 - float(finfo.eps))

    def _inverse(self, y):
        finfo = _ls.finfo(y.dtype)
        y = y.clamp(min=float(finfo.tiny), max=1.0 - float(finfo.eps))
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        softplus = _ls.nn.functional.softplus
        return -softplus(-x) - softplus(x)


class TanhTransform(Transform):
    """y = tanh(x). The inverse (atanh) is unstable near ±1: use cache_size=1, as PyTorch advises."""
    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return y.atanh()

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)²) in a form that stays finite for large |x| (PyTorch's).
        return 2.0 * (math.log(2.0) - x - _ls.nn.functional.softplus(-2.0 * x))


class AffineTransform(Transform):
    """y = loc + scale · x, over ``event_dim`` rightmost dims for the Jacobian."""

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    domain = property(lambda self: constraints.real if self._event_dim == 0
                      else constraints.independent(constraints.real, self._event_dim))
    codomain = domain

    @property
    def sign(self):
        if isinstance(self.scale, (int, float)):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def with_cache(self, cache_size=1):
        return self if self._cache_size == cache_size else AffineTransform(self.loc, self.scale, self._event_dim,
                                                                           cache_size)

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, (int, float)):
            result = _ls.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log().expand(*_ls.broadcast_shapes(scale.shape, x.shape))
        return sum_rightmost(result, self._event_dim)

    def __eq__(self, other):
        return isinstance(other, AffineTransform) and self.loc is other.loc and self.scale is other.scale

    def __hash__(self):
        return id(self)


class ComposeTransform(Transform):
    """The transforms applied in order (each one's output the next one's input)."""

    def __init__(self, parts, cache_size=0):
        super().__init__(cache_size)
        self.parts = [p.with_cache(cache_size) if cache_size else p for p in parts]

    domain = property(lambda self: self.parts[0].domain if self.parts else constraints.real)
    codomain = property(lambda self: self.parts[-1].codomain if self.parts else constraints.real)

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    def _call(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _inverse(self, y):
        for p in reversed(self.parts):
            y = p.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        total = 0
        for p in self.parts:
            y_p = p(x)
            total = total + sum_rightmost(p.log_abs_det_jacobian(x, y_p),
                                          max(0, self.domain.event_dim - p.domain.event_dim))
            x = y_p
        return total

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    def __hash__(self):
        return hash(tuple(self.parts))
