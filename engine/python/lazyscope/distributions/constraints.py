"""torch.distributions.constraints: the sets parameters and values must lie in.

A constraint's ``check(value)`` is an elementwise boolean tensor (over the
batch: an event constraint reduces its event dims), computed by the engine's
ops on the value's device, so checking a lazy tensor adds to the step's
graph and reads nothing back (Distribution decides when the answer is read).
"""
import lazyscope as _ls
from lazyscope.distributions.utils import batch_diagonal

__all__ = ["Constraint", "boolean", "dependent", "dependent_property", "greater_than", "greater_than_eq",
           "half_open_interval", "independent", "integer_interval", "interval", "is_dependent", "less_than",
           "lower_cholesky", "lower_triangular", "nonnegative", "nonnegative_integer", "one_hot", "positive",
           "positive_definite", "positive_integer", "real", "real_vector", "simplex", "unit_interval"]


class Constraint:
    """A region: ``check(value)`` is True where value lies in it. ``event_dim`` is how many
    rightmost dims make one point (checked together); ``is_discrete`` marks integer sets."""
    is_discrete = False
    event_dim = 0

    def check(self, value):
        raise NotImplementedError

    def __repr__(self):
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A placeholder for a support or argument that depends on other parameters (Uniform's
    support, Categorical's): never checked itself."""

    def __init__(self, *, is_discrete=False, event_dim=0):
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def __call__(self, *, is_discrete=None, event_dim=None):
        return _Dependent(is_discrete=self.is_discrete if is_discrete is None else is_discrete,
                          event_dim=self.event_dim if event_dim is None else event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint):
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """``@constraints.dependent_property``: on the class a dependent constraint, on an instance
    the property's value (the actual constraint, built from the instance's parameters)."""

    def __init__(self, fn=None, *, is_discrete=False, event_dim=0):
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


class _IndependentConstraint(Constraint):
    """``base`` with its ``reinterpreted_batch_ndims`` rightmost batch dims made event dims:
    a point is valid when all its elements are."""

    def __init__(self, base_constraint, reinterpreted_batch_ndims):
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    is_discrete = property(lambda self: self.base_constraint.is_discrete)
    event_dim = property(lambda self: self.base_constraint.event_dim + self.reinterpreted_batch_ndims)

    def check(self, value):
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        for _ in range(self.reinterpreted_batch_ndims):
            result = result.all(-1)
        return result

    def __repr__(self):
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


def _bound(value):
    return value if isinstance(value, _ls.Tensor) else float(value)


def _show(value):
    return f"{value.tolist()}" if isinstance(value, _ls.Tensor) and value.device.type == "cpu" and \
        value.numel() <= 8 else ("a tensor" if isinstance(value, _ls.Tensor) else repr(value))


# The elementwise constraints as data: a name, its check, and its parameters (shown in messages).
class _Elementwise(Constraint):
    def __init__(self, name, test, is_discrete=False, **params):
        self._name = name
        self._test = test
        self.is_discrete = is_discrete
        self._params = params
        for key, v in params.items():
            setattr(self, key, v)

    def check(self, value):
        return self._test(value, *(_bound(v) for v in self._params.values()))

    def __repr__(self):
        return f"{self._name}(" + ", ".join(f"{k}={_show(v)}" for k, v in self._params.items()) + ")"


def _integral(value):
    return value == value.floor() if value.is_floating_point() else value == value


real = _Elementwise("Real", lambda v: v == v)  # not NaN
boolean = _Elementwise("Boolean", lambda v: (v == 0) | (v == 1), is_discrete=True)


def greater_than(lower_bound):
    return _Elementwise("GreaterThan", lambda v, lb: lb < v, lower_bound=lower_bound)


def greater_than_eq(lower_bound):
    return _Elementwise("GreaterThanEq", lambda v, lb: lb <= v, lower_bound=lower_bound)


def less_than(upper_bound):
    return _Elementwise("LessThan", lambda v, ub: v < ub, upper_bound=upper_bound)


def interval(lower_bound, upper_bound):
    return _Elementwise("Interval", lambda v, lb, ub: (lb <= v) & (v <= ub), lower_bound=lower_bound,
                        upper_bound=upper_bound)


def half_open_interval(lower_bound, upper_bound):
    return _Elementwise("HalfOpenInterval", lambda v, lb, ub: (lb <= v) & (v < ub), lower_bound=lower_bound,
                        upper_bound=upper_bound)


def integer_interval(lower_bound, upper_bound):
    return _Elementwise("IntegerInterval", lambda v, lb, ub: _integral(v) & (lb <= v) & (v <= ub),
                        is_discrete=True, lower_bound=lower_bound, upper_bound=upper_bound)


def _integer_greater_than(lower_bound):
    return _Elementwise("IntegerGreaterThan", lambda v, lb: _integral(v) & (v >= lb), is_discrete=True,
                        lower_bound=lower_bound)


positive = greater_than(0.0)
nonnegative = greater_than_eq(0.0)
unit_interval = interval(0.0, 1.0)
nonnegative_integer = _integer_greater_than(0)
positive_integer = _integer_greater_than(1)
independent = _IndependentConstraint
real_vector = _IndependentConstraint(real, 1)
dependent = _Dependent()
dependent_property = _DependentProperty


class _Simplex(Constraint):
    """Non-negative and summing to 1 (to 1e-6, as PyTorch) over the last dim."""
    event_dim = 1

    def check(self, value):
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        return (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)


class _LowerCholesky(Constraint):
    """Lower triangular with a positive diagonal."""
    event_dim = 2

    def check(self, value):
        tril = (value.tril() == value).reshape(*value.shape[:-2], -1).all(-1)
        return tril & (batch_diagonal(value) > 0).all(-1)


class _PositiveDefinite(Constraint):
    """Symmetric with positive eigenvalues (linalg.eigvalsh: no factorization that
    would raise on an indefinite matrix inside the check)."""
    event_dim = 2

    def check(self, value):
        symmetric = ((value - value.transpose(-2, -1)).abs() <= 1e-6 * value.abs().amax((-2, -1), keepdim=True)
                     ).reshape(*value.shape[:-2], -1).all(-1)
        return symmetric & (_ls.linalg.eigvalsh(value) > 0).all(-1)


simplex = _Simplex()
one_hot = _OneHot()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
positive_definite = _PositiveDefinite()
