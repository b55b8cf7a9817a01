"""Normal, Uniform, Exponential and Laplace: location-scale families whose draws are
a differentiable function of the parameters and of a parameter-free host draw
(reparameterized: ``rsample`` carries gradients; no value is read back on any device)."""
import math

import lazyscope as _ls
from lazyscope import Size
from lazyscope.distributions import constraints
from lazyscope.distributions.distribution import Distribution, _enforce
from lazyscope.distributions.utils import broadcast_all, host_draw, standard_normal

__all__ = ["Exponential", "Laplace", "Normal", "Uniform"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class _LocationScale(Distribution):
    """Normal's and Laplace's shared frame: a real loc, a positive scale, reparameterized."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _expand_params = ("loc", "scale")

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)


class Normal(_LocationScale):
    """N(loc, scale²)."""
    stddev = property(lambda self: self.scale)
    variance = property(lambda self: self.scale ** 2)

    def rsample(self, sample_shape=Size()):
        eps = standard_normal(self._extended_shape(sample_shape), self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -((value - self.loc) ** 2) / (2 * self.scale ** 2) - self.scale.log() - _LOG_SQRT_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def icdf(self, value):
        return self.loc + self.scale * _ls.special.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + _LOG_SQRT_2PI + self.scale.log()


class Uniform(Distribution):
    """U[low, high)."""
    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True
    _expand_params = ("low", "high")

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        if self._validate_args:
            _enforce(self.low < self.high, f"Expected parameter low of distribution {self!r} to be less than "
                                           f"high: Uniform is not defined when low >= high", (self.low, self.high))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    mean = property(lambda self: (self.high + self.low) / 2)
    mode = property(lambda self: self.high * float("nan"))
    stddev = property(lambda self: (self.high - self.low) / 12 ** 0.5)
    variance = property(lambda self: (self.high - self.low) ** 2 / 12)

    def rsample(self, sample_shape=Size()):
        u = host_draw(self._extended_shape(sample_shape), self.low, lambda rng, s: rng.random(s))
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        inside = ((self.low <= value) & (self.high > value)).to(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()


class Exponential(Distribution):
    """rate · exp(-rate · x) on x >= 0."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _expand_params = ("rate",)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.rate.reciprocal())
    mode = property(lambda self: _ls.zeros_like(self.rate))
    stddev = property(lambda self: self.rate.reciprocal())
    variance = property(lambda self: self.rate ** -2)

    def rsample(self, sample_shape=Size()):
        e = host_draw(self._extended_shape(sample_shape), self.rate, lambda rng, s: rng.standard_exponential(s))
        return e / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        return -(-value).log1p() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()


class Laplace(_LocationScale):
    """exp(-|x - loc| / scale) / (2 scale)."""
    stddev = property(lambda self: math.sqrt(2) * self.scale)
    variance = property(lambda self: 2 * self.scale ** 2)

    def rsample(self, sample_shape=Size()):
        e = host_draw(self._extended_shape(sample_shape), self.loc, lambda rng, s: rng.laplace(0.0, 1.0, s))
        return self.loc + self.scale * e

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        d = value - self.loc
        return 0.5 - 0.5 * d.sign() * (-d.abs() / self.scale).expm1()

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()
