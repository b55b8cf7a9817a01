"""Bernoulli, Categorical, OneHotCategorical, Binomial and Poisson.

Bernoulli and Categorical sample on the parameters' device from host
uniforms (Categorical by the Gumbel-max trick: argmax(logits + Gumbel noise)
is a draw from softmax(logits)), so sampling a lazy tensor reads nothing
back. Binomial and Poisson draw on the host with NumPy from the
parameters' values: a sync on a lazy device.
"""
import numpy as np

import lazyscope as _ls
from lazyscope import Size
from lazyscope.distributions import constraints
from lazyscope.distributions.distribution import Distribution
from lazyscope.distributions.utils import (broadcast_all, host_draw, host_values, lazy_property, logits_to_probs,
                                           probs_to_logits)

__all__ = ["Bernoulli", "Binomial", "Categorical", "OneHotCategorical", "Poisson"]


def _one_of(name, probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: either `probs` or `logits` must be specified, but not both")


class _BinaryParam:
    """Bernoulli's and Binomial's probs and logits, each derived from the other when not given."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    param_shape = property(lambda self: self._param.shape)


class Bernoulli(_BinaryParam, Distribution):
    """1 with probability probs (or sigmoid(logits)), else 0."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _expand_params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of("Bernoulli", probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    mean = property(lambda self: self.probs)
    variance = property(lambda self: self.probs * (1 - self.probs))

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return _ls.where(self.probs == 0.5, _ls.full_like(mode, float("nan")), mode)

    def sample(self, sample_shape=Size()):
        with _ls.no_grad():
            u = host_draw(self._extended_shape(sample_shape), self._param, lambda rng, s: rng.random(s))
            return (u < self.probs).to(u.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = _ls.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        return value * logits - _ls.nn.functional.softplus(logits)

    def entropy(self):
        return _ls.nn.functional.softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand=True):
        values = _ls.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(2, *self._batch_shape) if expand else values


class Categorical(Distribution):
    """One of K categories with probabilities probs (normalized over the last dim) or
    softmax(logits). The batch shape is the parameter's without its last dim."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True
    _expand_params = ("probs", "logits")

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of("Categorical", probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    param_shape = property(lambda self: self._param.shape)
    mean = property(lambda self: _ls.full(tuple(self._extended_shape()), float("nan"), dtype=self._param.dtype,
                                          device=self._param.device))
    variance = mean
    mode = property(lambda self: self.probs.argmax(-1))

    def sample(self, sample_shape=Size()):
        """Gumbel-max on the parameters' device: the noise is drawn on the host, the argmax is
        the engine's (no sync on a lazy device)."""
        with _ls.no_grad():
            # Given probs, their plain log: a zero-probability category is never drawn (the clamped
            # logits would give it ~1e-7 in float32).
            log_weights = self.__dict__["probs"].log() if "probs" in self.__dict__ else self.logits
            shape = tuple(self._extended_shape(sample_shape)) + (self._num_events,)
            gumbel = host_draw(shape, log_weights,
                               lambda rng, s: -np.log(-np.log(np.clip(rng.random(s), 1e-300, 1 - 2 ** -53))))
            return (log_weights + gumbel).argmax(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = _ls.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=float(_ls.finfo(self.logits.dtype).min))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = _ls.arange(self._num_events, dtype=_ls.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(self._num_events, *self._batch_shape) if expand else values


class OneHotCategorical(Distribution):
    """Categorical's draws as one-hot vectors of length K (the event shape)."""
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        # The parameters are the inner Categorical's, validated there.
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        param = self._categorical._param
        super().__init__(param.shape[:-1], param.shape[-1:], validate_args=False)
        self._validate_args = self._categorical._validate_args

    probs = property(lambda self: self._categorical.probs)
    logits = property(lambda self: self._categorical.logits)
    _param = property(lambda self: self._categorical._param)
    param_shape = property(lambda self: self._categorical.param_shape)

    def expand(self, batch_shape, _instance=None):
        new = type(self).__new__(type(self))
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, Size(batch_shape), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    mean = property(lambda self: self._categorical.probs)
    variance = property(lambda self: self._categorical.probs * (1 - self._categorical.probs))

    @property
    def mode(self):
        probs = self._categorical.probs
        return _ls.nn.functional.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    def sample(self, sample_shape=Size()):
        probs = self._categorical._param
        indices = self._categorical.sample(sample_shape)
        return _ls.nn.functional.one_hot(indices, self._categorical._num_events).to(probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = _ls.eye(n, dtype=self._categorical._param.dtype, device=self._categorical._param.device)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand(n, *self.batch_shape, n) if expand else values

    def __repr__(self):
        return f"OneHotCategorical({self._categorical!r})"


class Binomial(_BinaryParam, Distribution):
    """The number of successes in total_count trials of probability probs (or sigmoid(logits))."""
    arg_constraints = {"total_count": constraints.nonnegative_integer, "probs": constraints.unit_interval,
                       "logits": constraints.real}
    has_enumerate_support = True
    _expand_params = ("total_count", "probs", "logits")

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _one_of("Binomial", probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    mean = property(lambda self: self.total_count * self.probs)
    mode = property(lambda self: _ls.minimum(((self.total_count + 1) * self.probs).floor(), self.total_count))
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs))

    def sample(self, sample_shape=Size()):
        """NumPy's binomial on the host from the parameters' values (a sync on a lazy device)."""
        n, p = host_values(self.total_count), host_values(self.probs)
        return host_draw(self._extended_shape(sample_shape), self._param,
                         lambda rng, s: rng.binomial(n.astype(np.int64), p, size=s))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, k = self.total_count, value.to(self.logits.dtype)
        log_choose = (n + 1).lgamma() - (k + 1).lgamma() - (n - k + 1).lgamma()
        # k log p + (n - k) log(1 - p) in logits: k·logits - n·softplus(logits).
        return log_choose + k * self.logits - n * _ls.nn.functional.softplus(self.logits)

    def entropy(self):
        n_max = int(host_values(self.total_count).max())
        if not (host_values(self.total_count) == n_max).all():
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        values = self.enumerate_support(False)
        log_prob = self.log_prob(values)
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        n_max = int(host_values(self.total_count).max())
        if not (host_values(self.total_count) == n_max).all():
            raise NotImplementedError("Inhomogeneous total count not supported by `enumerate_support`.")
        values = _ls.arange(1 + n_max, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand(1 + n_max, *self._batch_shape) if expand else values


class Poisson(Distribution):
    """rate^k e^-rate / k! on k = 0, 1, 2, ..."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _expand_params = ("rate",)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    mean = property(lambda self: self.rate)
    mode = property(lambda self: self.rate.floor())
    variance = property(lambda self: self.rate)

    def sample(self, sample_shape=Size()):
        """NumPy's Poisson on the host from the rates (a sync on a lazy device)."""
        rate = host_values(self.rate)
        return host_draw(self._extended_shape(sample_shape), self.rate,
                         lambda rng, s: rng.poisson(np.broadcast_to(rate, s)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = _ls.broadcast_tensors(self.rate, value.to(self.rate.dtype))
        return _ls.xlogy(value, rate) - rate - (value + 1).lgamma()
