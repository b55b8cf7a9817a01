"""Gamma, Beta and Dirichlet.

Draws are made on the host: NumPy's ``standard_gamma`` (Marsaglia and
Tsang's method, with the boost for concentrations below 1) from the shared
generator, given the concentrations' values: a sync on a lazy device.
``rsample`` is reparameterized by implicit differentiation (Figurnov et al.,
2018), as PyTorch's: for x ~ Gamma(a, 1), dx/da = -(∂F/∂a)(x; a) / f(x; a),
with F the regularized lower incomplete gamma function, evaluated on the
host in float64 (series or continued fraction, ∂F/∂a by a central
difference). The sample enters the graph as x + (a - a.detach()) · dx/da:
the value x exactly, the gradient dx/da. Beta and Dirichlet normalize
Gamma draws, so their gradients follow.
"""
import math

import numpy as np

import lazyscope as _ls
from lazyscope import Size
from lazyscope.distributions import constraints
from lazyscope.distributions.distribution import Distribution
from lazyscope.distributions.utils import broadcast_all, host_draw, host_values

__all__ = ["Beta", "Dirichlet", "Gamma"]

_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _log_gamma(a):
    return np.asarray(_lgamma(a), dtype=np.float64)


def _regularized_gamma_p(a, x):
    """P(a, x) = γ(a, x) / Γ(a), elementwise in float64 (Numerical Recipes' gser and gcf)."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    log_front = a * np.log(np.maximum(x, 1e-300)) - x - _log_gamma(a)
    out = np.zeros(a.shape)
    series = x < a + 1
    if series.any():
        aa, xx = a[series], x[series]
        term = 1.0 / aa
        total = term.copy()
        n = aa.copy()
        for _ in range(10000):
            n += 1
            term *= xx / n
            total += term
            if (np.abs(term) < np.abs(total) * 1e-17).all():
                break
        out[series] = total * np.exp(log_front[series])
    cf = ~series
    if cf.any():
        aa, xx = a[cf], x[cf]
        tiny = 1e-300
        b = xx + 1.0 - aa
        c = np.full(aa.shape, 1.0 / tiny)
        d = 1.0 / b
        h = d.copy()
        for i in range(1, 10000):
            an = -i * (i - aa)
            b = b + 2.0
            d = an * d + b
            d = np.where(np.abs(d) < tiny, tiny, d)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            d = 1.0 / d
            delta = d * c
            h *= delta
            if (np.abs(delta - 1.0) < 1e-16).all():
                break
        out[cf] = 1.0 - np.exp(log_front[cf]) * h
    out[x <= 0] = 0.0
    return out


def _standard_gamma_dx_da(a, x):
    """dx/da of x ~ Gamma(a, 1) held at a fixed quantile: -(∂P/∂a) / density."""
    h = 1e-5 * a
    dp_da = (_regularized_gamma_p(a + h, x) - _regularized_gamma_p(a - h, x)) / (2 * h)
    log_density = (a - 1) * np.log(x) - x - _log_gamma(a)
    grad = -dp_da / np.exp(log_density)
    return np.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0)


def _standard_gamma(concentration, shape):
    """Draws of Gamma(concentration, 1) of ``shape`` (sample + batch), gradients to the concentration."""
    a = np.broadcast_to(host_values(concentration), shape)
    tiny = float(_ls.finfo(concentration.dtype).tiny)
    x = np.maximum(_ls._rng.standard_gamma(a), tiny)
    value = host_draw(shape, concentration, lambda rng, s: x)
    if not (concentration.requires_grad and _ls.is_grad_enabled()):
        return value
    slope = host_draw(shape, concentration, lambda rng, s: _standard_gamma_dx_da(a, x))
    return value + (concentration - concentration.detach()) * slope


class Gamma(Distribution):
    """rate^c x^(c-1) e^(-rate x) / Γ(c) on x > 0 (c = concentration)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _expand_params = ("concentration", "rate")

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate)
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp(min=0))
    variance = property(lambda self: self.concentration / self.rate ** 2)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        x = _standard_gamma(self.concentration.expand(*shape), shape) / self.rate
        return x.clamp(min=float(_ls.finfo(x.dtype).tiny))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return _ls.xlogy(c, r) + _ls.xlogy(c - 1, value) - r * value - c.lgamma()

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()

    def cdf(self, value):
        raise NotImplementedError("Gamma.cdf needs the regularized incomplete gamma function, which LazyScope "
                                  "lacks (torch.special.gammainc)")


class Dirichlet(Distribution):
    """The distribution on the simplex with density ∝ Π x_i^(c_i - 1)."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _expand_params = ("concentration",)

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        vertex = _ls.nn.functional.one_hot(self.concentration.argmax(-1), cm1.shape[-1]).to(mode.dtype)
        return _ls.where((self.concentration < 1).all(-1, keepdim=True), vertex, mode)

    @property
    def variance(self):
        c = self.concentration
        c0 = c.sum(-1, keepdim=True)
        return c * (c0 - c) / (c0 ** 2 * (c0 + 1))

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        g = _standard_gamma(self.concentration.expand(*shape), shape)
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return _ls.xlogy(c - 1.0, value).sum(-1) + c.sum(-1).lgamma() - c.lgamma().sum(-1)

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        c0 = c.sum(-1)
        return c.lgamma().sum(-1) - c0.lgamma() - (k - c0) * c0.digamma() - ((c - 1.0) * c.digamma()).sum(-1)


class Beta(Distribution):
    """x^(a-1) (1-x)^(b-1) / B(a, b) on [0, 1] (a = concentration1, b = concentration0)."""
    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(_ls.stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self))
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, Size(batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    concentration1 = property(lambda self: self._dirichlet.concentration[..., 0])
    concentration0 = property(lambda self: self._dirichlet.concentration[..., 1])
    mean = property(lambda self: self.concentration1 / (self.concentration1 + self.concentration0))
    mode = property(lambda self: self._dirichlet.mode[..., 0])

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total ** 2 * (total + 1))

    def rsample(self, sample_shape=Size()):
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(_ls.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()

    def __repr__(self):
        return f"Beta(concentration1: {Size(self.concentration1.shape)}, concentration0: " \
               f"{Size(self.concentration0.shape)})"
