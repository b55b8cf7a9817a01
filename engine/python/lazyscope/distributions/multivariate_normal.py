"""MultivariateNormal, parameterized by its Cholesky factor ``scale_tril``
(a ``covariance_matrix`` through lazyscope.linalg.cholesky, a
``precision_matrix`` by PyTorch's flipped-Cholesky route). Triangular solves
are lazyscope.linalg.solve_triangular (one op, with its gradient), so
log_prob and KL run on every device and read nothing back.
"""
import math

import lazyscope as _ls
from lazyscope import Size
from lazyscope.distributions import constraints
from lazyscope.distributions.distribution import Distribution
from lazyscope.distributions.utils import batch_diagonal, lazy_property, standard_normal

__all__ = ["MultivariateNormal"]


def solve_lower(L, B):
    """X with L X = B for lower-triangular L [..., n, n] and B [..., n, m] (batch dims broadcast)."""
    return _ls.linalg.solve_triangular(L, B, upper=False)


def batch_mahalanobis(L, x):
    """xᵀ (L Lᵀ)⁻¹ x = |L⁻¹ x|² over the last dim."""
    return (solve_lower(L, x.unsqueeze(-1)).squeeze(-1) ** 2).sum(-1)


class MultivariateNormal(Distribution):
    """N(loc, Σ) over vectors, Σ = scale_tril scale_trilᵀ."""
    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = scale_tril if scale_tril is not None else (
            covariance_matrix if covariance_matrix is not None else precision_matrix)
        name = "scale_tril" if scale_tril is not None else (
            "covariance_matrix" if covariance_matrix is not None else "precision_matrix")
        if given.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch "
                             f"dimensions")
        batch_shape = _ls.broadcast_shapes(given.shape[:-2], loc.shape[:-1])
        n = loc.shape[-1]
        if tuple(given.shape[-2:]) != (n, n):
            raise ValueError(f"MultivariateNormal: {name} must be [..., {n}, {n}] for a loc of {n} elements, got "
                             f"{tuple(given.shape)}")
        setattr(self, name, given.expand(*batch_shape, n, n))
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = _ls.linalg.cholesky(covariance_matrix)
        else:
            # Σ = P⁻¹: with the flipped Cholesky of P, L = (flip(chol(flip(P)))ᵀ)⁻¹ (PyTorch's route).
            lf = _ls.linalg.cholesky(precision_matrix.flip(-2).flip(-1))
            l_inv = lf.flip(-2).flip(-1).transpose(-2, -1)
            eye = _ls.eye(n, dtype=loc.dtype, device=loc.device)
            self._unbroadcasted_scale_tril = solve_lower(l_inv, eye)
        self.loc = loc.expand(*batch_shape, n)
        super().__init__(batch_shape, (n,), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = Size(batch_shape)
        new = type(self).__new__(type(self))
        n = self.event_shape[0]
        new.loc = self.loc.expand(*batch_shape, n)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name].expand(*batch_shape, n, n)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, *self._event_shape, *self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(*self._batch_shape, *self._event_shape, *self._event_shape)

    @lazy_property
    def precision_matrix(self):
        n = self.event_shape[0]
        eye = _ls.eye(n, dtype=self.loc.dtype, device=self.loc.device)
        l_inv = solve_lower(self._unbroadcasted_scale_tril, eye)
        return (l_inv.transpose(-2, -1) @ l_inv).expand(*self._batch_shape, n, n)

    mean = property(lambda self: self.loc)
    mode = property(lambda self: self.loc)

    @property
    def variance(self):
        return (self._unbroadcasted_scale_tril ** 2).sum(-1).expand(*self._batch_shape, *self._event_shape)

    def rsample(self, sample_shape=Size()):
        eps = standard_normal(self._extended_shape(sample_shape), self.loc)
        return self.loc + (self._unbroadcasted_scale_tril * eps.unsqueeze(-2)).sum(-1)

    def _half_log_det(self):
        return batch_diagonal(self._unbroadcasted_scale_tril).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        return -0.5 * (self.event_shape[0] * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        h = 0.5 * self.event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(*self._batch_shape) if len(self._batch_shape) else h

    def __repr__(self):
        return f"MultivariateNormal(loc: {Size(self.loc.shape)}, scale_tril: " \
               f"{Size(self._unbroadcasted_scale_tril.shape)})"
