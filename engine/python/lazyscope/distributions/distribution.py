"""torch.distributions.Distribution: the base every family derives from.

Validation (on by default, as PyTorch; ``Distribution.set_default_validate_args``
or ``validate_args=`` per instance) checks the parameters against
``arg_constraints`` when the distribution is made and values against
``support`` in ``log_prob``/``cdf``, raising ValueError naming the
distribution, the argument and the constraint. On the CPU the check is read
at once. On a lazy device reading it would sync every step, so the check is
computed in the step's graph and read after the next ``mark_step`` (a step
closure): the same ValueError, raised from that ``mark_step``.
"""
import lazyscope as _ls
from lazyscope import Size, Tensor
from lazyscope.core import lazy_model as _lazy_model
from lazyscope.distributions import constraints
from lazyscope.distributions.utils import lazy_property

__all__ = ["Distribution"]


def _raise_unless(ok, message):
    if not bool(ok):
        raise ValueError(message + "\n(checked after mark_step: the values were on a lazy device)")


def _enforce(ok, message, value):
    """ValueError(message) where ``ok`` (a boolean tensor) is not all true: now on the CPU,
    after the next mark_step on a lazy device (reading it now would be a sync)."""
    ok = ok.all()
    if ok.device.type == "lazy":
        _lazy_model.add_step_closure(_raise_unless, (ok, message))
    elif not bool(ok):
        raise ValueError(f"{message}, but found invalid values:\n{value}")


class Distribution:
    """The base of the families: shapes, validation, and the methods a family overrides."""
    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    arg_constraints = {}
    # The attributes expand() broadcasts to the new batch shape (each keeps its event dims).
    _expand_params = ()

    @staticmethod
    def set_default_validate_args(value):
        """Turns validation on or off for distributions made afterwards (PyTorch's default: on)."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args: expected True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            for param, constraint in self.arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(getattr(type(self), param), lazy_property):
                    continue  # the one derived from the other (probs from logits): not given, not checked
                value = getattr(self, param)
                _enforce(constraint.check(value),
                         f"Expected parameter {param} ({type(value).__name__} of shape {tuple(value.shape)}) "
                         f"of distribution {self!r} to satisfy the constraint {constraint!r}", value)

    batch_shape = property(lambda self: self._batch_shape)
    event_shape = property(lambda self: self._event_shape)

    def expand(self, batch_shape, _instance=None):
        """This distribution with its parameters expanded (not copied) to ``batch_shape``."""
        batch_shape = Size(batch_shape)
        new = _instance if _instance is not None else type(self).__new__(type(self))
        old = len(self.batch_shape)
        for name in self._expand_params:
            if name in self.__dict__:
                value = self.__dict__[name]
                setattr(new, name, value.expand(*batch_shape, *value.shape[old:]))
        for name, value in self.__dict__.items():
            if name not in self._expand_params and name not in new.__dict__:
                new.__dict__[name] = value
        for name in self._expand_params:  # the parameter given (probs or logits), expanded too
            if name in self.__dict__ and self.__dict__.get("_param") is self.__dict__[name]:
                new._param = new.__dict__[name]
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def support(self):
        raise NotImplementedError(f"{type(self).__name__} does not define its support")

    def _unsupported(self, what):
        return NotImplementedError(f"{type(self).__name__}.{what} is not implemented (as in PyTorch)")

    @property
    def mean(self):
        raise self._unsupported("mean")

    @property
    def mode(self):
        raise self._unsupported("mode")

    @property
    def variance(self):
        raise self._unsupported("variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()):
        """Draws of shape sample_shape + batch_shape + event_shape, recording no gradient."""
        with _ls.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sampler (rsample); "
                                  f"use sample() (no gradient)")

    def sample_n(self, n):
        return self.sample(Size((n,)))

    def log_prob(self, value):
        raise self._unsupported("log_prob")

    def cdf(self, value):
        raise self._unsupported("cdf")

    def icdf(self, value):
        raise self._unsupported("icdf")

    def entropy(self):
        raise self._unsupported("entropy")

    def enumerate_support(self, expand=True):
        raise self._unsupported("enumerate_support")

    def perplexity(self):
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=Size()):
        if not isinstance(sample_shape, (tuple, list)):
            sample_shape = (sample_shape,)
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value):
        """ValueError unless ``value`` is a tensor whose shape fits and whose values lie in the support."""
        if not isinstance(value, Tensor):
            raise ValueError(f"{type(self).__name__}: the value must be a Tensor, got {type(value).__name__}")
        event_dim_start = value.dim() - len(self._event_shape)
        if tuple(value.shape[event_dim_start:]) != tuple(self._event_shape):
            raise ValueError(f"The right-most size of value must match event_shape: {tuple(value.shape)} vs "
                             f"{tuple(self._event_shape)}.")
        actual = tuple(value.shape)
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {actual} vs "
                                 f"{expected}.")
        support = self.support
        _enforce(support.check(value),
                 f"Expected value argument ({type(value).__name__} of shape {actual}) to be within the support "
                 f"({support!r}) of the distribution {self!r}", value)

    def __repr__(self):
        def show(v):
            if v.numel() == 1 and v.device.type == "cpu":
                return f"{v.detach().reshape(()).item()}"
            return f"{Size(v.shape)}"
        names = [k for k in self.arg_constraints if k in self.__dict__]
        return f"{type(self).__name__}(" + ", ".join(f"{k}: {show(self.__dict__[k])}" for k in names) + ")"
