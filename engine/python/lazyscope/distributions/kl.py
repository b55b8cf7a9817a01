"""kl_divergence(p, q) = E_p[log p - log q], dispatched on the pair of types through a
registry (``register_kl``), closed forms as PyTorch's. The most specific registered pair
(by the types' method resolution order) wins; an unregistered pair raises
NotImplementedError, as in PyTorch."""
import lazyscope as _ls
from lazyscope.distributions.continuous import Exponential, Laplace, Normal, Uniform
from lazyscope.distributions.discrete import Bernoulli, Categorical, OneHotCategorical, Poisson
from lazyscope.distributions.gamma import Beta, Dirichlet, Gamma
from lazyscope.distributions.independent import Independent
from lazyscope.distributions.multivariate_normal import MultivariateNormal, batch_mahalanobis, solve_lower
from lazyscope.distributions.utils import batch_diagonal, sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY = {}


def register_kl(type_p, type_q):
    """Decorator: ``@register_kl(Normal, Normal) def kl(p, q): ...`` registers a closed form."""
    if not isinstance(type_p, type) or not isinstance(type_q, type):
        raise TypeError(f"register_kl: expected two Distribution subclasses, got {type_p!r} and {type_q!r}")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        return fn
    return decorator


def _dispatch(type_p, type_q):
    matches = [(p, q) for p, q in _KL_REGISTRY if issubclass(type_p, p) and issubclass(type_q, q)]
    if not matches:
        return None
    best = min(matches, key=lambda m: (type_p.__mro__.index(m[0]), type_q.__mro__.index(m[1])))
    return _KL_REGISTRY[best]


def kl_divergence(p, q):
    fn = _dispatch(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {type(p).__name__} and q type "
                                  f"{type(q).__name__}")
    return fn(p, q)


def _inf_like(t):
    return _ls.full_like(t, float("inf"))


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = _ls.where((q.probs == 0).expand_as(t), _inf_like(t), t)
    t = _ls.where((p.probs == 0).expand_as(t), _ls.zeros_like(t), t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    softplus = _ls.nn.functional.softplus
    t1 = p.probs * (softplus(-q.logits) - softplus(-p.logits))
    t1 = _ls.where(q.probs == 0, _inf_like(t1), t1)
    t1 = _ls.where(p.probs == 0, _ls.zeros_like(t1), t1)
    t2 = (1 - p.probs) * (softplus(q.logits) - softplus(p.logits))
    t2 = _ls.where(q.probs == 1, _inf_like(t2), t2)
    t2 = _ls.where(p.probs == 1, _ls.zeros_like(t2), t2)
    return t1 + t2


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _ls.where((q.low > p.low) | (q.high < p.high), _inf_like(result), result)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return -rate_ratio.log() + rate_ratio - 1


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    return -scale_ratio.log() + loc_abs_diff / q.scale + scale_ratio * (-loc_abs_diff / p.scale).exp() - 1


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p = p.concentration.sum(-1)
    sum_q = q.concentration.sum(-1)
    t1 = sum_p.lgamma() - sum_q.lgamma()
    t2 = (p.concentration.lgamma() - q.concentration.lgamma()).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = p.concentration.digamma() - sum_p.digamma().unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL(Independent || Independent) needs the same reinterpreted_batch_ndims, got "
                                  f"{p.reinterpreted_batch_ndims} and {q.reinterpreted_batch_ndims}")
    return sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    n = p.event_shape[0]
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = batch_diagonal(lq).log().sum(-1) - batch_diagonal(lp).log().sum(-1)
    term2 = (solve_lower(lq, lp) ** 2).sum((-2, -1))  # tr(Σq⁻¹ Σp) = |Lq⁻¹ Lp|²_F
    term3 = batch_mahalanobis(lq, q.loc - p.loc)
    result = half_term1 + 0.5 * (term2 + term3 - n)
    shape = _ls.broadcast_shapes(p.batch_shape, q.batch_shape)
    return result.expand(*shape) if len(shape) else result
