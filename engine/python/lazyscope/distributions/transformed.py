"""TransformedDistribution (a base distribution pushed through transforms) and LogNormal,
the exp of a Normal. log_prob inverts the transforms and adds each one's log|Jacobian|;
rsample exists where the base has one, so SAC's TransformedDistribution(Normal, TanhTransform)
is reparameterized."""
from lazyscope import Size
import lazyscope as _ls
from lazyscope.distributions import constraints
from lazyscope.distributions.continuous import Normal
from lazyscope.distributions.distribution import Distribution
from lazyscope.distributions.independent import Independent
from lazyscope.distributions.transforms import ExpTransform, Transform
from lazyscope.distributions.utils import sum_rightmost

__all__ = ["LogNormal", "TransformedDistribution"]


class TransformedDistribution(Distribution):
    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        elif not isinstance(transforms, (list, tuple)) or not all(isinstance(t, Transform) for t in transforms):
            raise ValueError(f"transforms must be a Transform or a list of Transforms, got {transforms!r}")
        self.transforms = list(transforms)
        base_shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        domain_event_dim = max([t.domain.event_dim for t in self.transforms] + [0])
        if len(base_shape) < domain_event_dim:
            raise ValueError(f"base_distribution needs at least {domain_event_dim} dims but got {len(base_shape)}")
        reinterpreted = domain_event_dim - len(base_distribution.event_shape)
        if reinterpreted > 0:
            base_distribution = Independent(base_distribution, reinterpreted)
        self.base_dist = base_distribution
        codomain_event_dim = max([t.codomain.event_dim for t in self.transforms] + [0])
        event_dim = codomain_event_dim + max(len(base_distribution.event_shape) - domain_event_dim, 0)
        cut = len(base_shape) - event_dim
        super().__init__(base_shape[:cut], base_shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = Size(batch_shape)
        new = _instance if _instance is not None else type(self).__new__(type(self))
        new.__dict__.update({k: v for k, v in self.__dict__.items() if k not in new.__dict__})
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + tuple(
            self.base_dist.batch_shape[len(self.batch_shape):]))
        new.transforms = self.transforms
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    has_rsample = property(lambda self: self.base_dist.has_rsample)

    @constraints.dependent_property(is_discrete=False)
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        support = self.transforms[-1].codomain
        if len(self.event_shape) > support.event_dim:
            support = constraints.independent(support, len(self.event_shape) - support.event_dim)
        return support

    def sample(self, sample_shape=Size()):
        with _ls.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=Size()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - sum_rightmost(t.log_abs_det_jacobian(x, y), event_dim - t.domain.event_dim)
            y = x
        return log_prob + sum_rightmost(self.base_dist.log_prob(y), event_dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value):
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        if isinstance(sign, int) and sign == 1:
            return value
        return sign * (value - 0.5) + 0.5

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value):
        value = self.base_dist.icdf(self._monotonize_cdf(value))
        for t in self.transforms:
            value = t(value)
        return value

    def __repr__(self):
        return f"TransformedDistribution({self.base_dist!r}, {self.transforms!r})"


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ N(loc, scale²)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _instance if _instance is not None else type(self).__new__(type(self))
        return super().expand(batch_shape, new)

    loc = property(lambda self: self.base_dist.loc)
    scale = property(lambda self: self.base_dist.scale)
    mean = property(lambda self: (self.loc + self.scale ** 2 / 2).exp())
    mode = property(lambda self: (self.loc - self.scale ** 2).exp())
    variance = property(lambda self: (self.scale ** 2).expm1() * (2 * self.loc + self.scale ** 2).exp())

    def entropy(self):
        return self.base_dist.entropy() + self.loc

    def __repr__(self):
        return f"LogNormal(loc: {Size(self.loc.shape)}, scale: {Size(self.scale.shape)})"
