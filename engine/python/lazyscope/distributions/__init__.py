"""lazyscope.distributions: torch.distributions' everyday surface (policy gradients, VAEs,
SAC, Gaussian likelihoods), on every device.

Random draws come from lazyscope's one host generator (``lazyscope.manual_seed``)
and are uploaded, so sampling on a lazy device is a graph input, not a sync;
Gamma, Beta, Dirichlet, Poisson and Binomial sample on the host from their
parameters' values (a sync on a lazy device). Validation is on by default; on a
lazy device its checks are read after the next ``mark_step`` (see distribution.py).
"""
from lazyscope.distributions import constraints, transforms
from lazyscope.distributions.continuous import Exponential, Laplace, Normal, Uniform
from lazyscope.distributions.discrete import Bernoulli, Binomial, Categorical, OneHotCategorical, Poisson
from lazyscope.distributions.distribution import Distribution
from lazyscope.distributions.gamma import Beta, Dirichlet, Gamma
from lazyscope.distributions.independent import Independent
from lazyscope.distributions.kl import kl_divergence, register_kl
from lazyscope.distributions.multivariate_normal import MultivariateNormal
from lazyscope.distributions.transformed import LogNormal, TransformedDistribution
from lazyscope.distributions.transforms import (AffineTransform, ComposeTransform, ExpTransform, SigmoidTransform,
                                                TanhTransform, Transform)

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "ComposeTransform", "Dirichlet",
           "Distribution", "ExpTransform", "Exponential", "Gamma", "Independent", "Laplace", "LogNormal",
           "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson", "SigmoidTransform", "TanhTransform",
           "Transform", "TransformedDistribution", "Uniform", "constraints", "kl_divergence", "register_kl",
           "transforms"]
