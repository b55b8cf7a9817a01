"""Independent: a distribution with some batch dims reinterpreted as event dims (a diagonal
Gaussian over vectors: Independent(Normal(mu, sigma), 1), whose log_prob sums over the vector)."""
from lazyscope import Size
from lazyscope.distributions import constraints
from lazyscope.distributions.distribution import Distribution
from lazyscope.distributions.utils import sum_rightmost

__all__ = ["Independent"]


class Independent(Distribution):
    arg_constraints = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        if reinterpreted_batch_ndims > len(base_distribution.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual "
                             f"{reinterpreted_batch_ndims} vs {len(base_distribution.batch_shape)}")
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = reinterpreted_batch_ndims + len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[:len(shape) - event_dim], shape[len(shape) - event_dim:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = Size(batch_shape)
        new = type(self).__new__(type(self))
        new.base_dist = self.base_dist.expand(
            tuple(batch_shape) + tuple(self.event_shape[:self.reinterpreted_batch_ndims]))
        new.reinterpreted_batch_ndims = self.reinterpreted_batch_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    has_rsample = property(lambda self: self.base_dist.has_rsample)
    has_enumerate_support = property(lambda self: False if self.reinterpreted_batch_ndims > 0
                                     else self.base_dist.has_enumerate_support)

    @property
    def support(self):
        result = self.base_dist.support
        return constraints.independent(result, self.reinterpreted_batch_ndims) if self.reinterpreted_batch_ndims \
            else result

    mean = property(lambda self: self.base_dist.mean)
    mode = property(lambda self: self.base_dist.mode)
    variance = property(lambda self: self.base_dist.variance)

    def sample(self, sample_shape=Size()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=Size()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
