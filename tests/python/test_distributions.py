"""lazyscope.distributions against independent oracles: densities, entropies, CDFs,
moments and KL divergences in closed form computed with Python's math module and
NumPy in float64; sampling moments within 5 standard errors of the closed forms;
rsample gradients against finite differences with the same seed (location-scale
families) or against the analytic derivative of a moment (Gamma, Beta); KL also
against a Monte Carlo estimate from NumPy's own draws and densities. Every
numerical test runs on both devices; on lazy:0 a policy-gradient / Gaussian-NLL
training loop matches the CPU and syncs only at mark_step."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import distributions as D
from lazyscope.core import lazy_model as lm

DEVICES = ["cpu", "lazy:0"]
RNG = np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _settle_deferred_validation():
    """On lazy:0 a distribution's validation is read after the next mark_step
    (a step closure): each test's checks are settled at its end, so none is
    read by a later test's step (and counted in its compiles)."""
    yield
    try:
        lm.mark_step()
    except ValueError:
        pass  # a test that left a failing check had its own assertion on it


def t(x, device, dtype=np.float64):
    return lazyscope.tensor(np.asarray(x, dtype=dtype), device=device)


def host(x):
    return np.asarray(x.detach().numpy(), dtype=np.float64)


def close(got, want, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(host(got), np.asarray(want, dtype=np.float64), rtol=rtol, atol=atol)


def assert_moments(draws, mean, var, axis=0, k=5.0):
    """Sample mean and variance within k standard errors of the closed forms (the variance's
    standard error from the sample's fourth central moment)."""
    draws = np.asarray(draws, dtype=np.float64)
    n = draws.shape[axis]
    m = draws.mean(axis)
    centered = draws - m
    v = (centered ** 2).mean(axis)
    mu4 = (centered ** 4).mean(axis)
    se_mean = np.sqrt(np.asarray(var) / n)
    se_var = np.sqrt(np.maximum(mu4 - v ** 2, 1e-300) / n)
    assert np.all(np.abs(m - mean) < k * se_mean), (m, mean, se_mean)
    assert np.all(np.abs(v - var) < k * se_var), (v, var, se_var)


lgamma = np.vectorize(math.lgamma)


def digamma(x, h=1e-5):
    return (lgamma(x + h) - lgamma(x - h)) / (2 * h)


# --- densities, entropies, CDFs and moments against closed forms -------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_normal(device):
    loc, scale = np.array([0.0, 1.5, -2.0]), np.array([1.0, 0.5, 3.0])
    x = np.array([0.3, 1.0, 4.0])
    d = D.Normal(t(loc, device), t(scale, device))
    close(d.log_prob(t(x, device)), -((x - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * math.log(2 * math.pi))
    close(d.entropy(), 0.5 * np.log(2 * math.pi * math.e * scale ** 2))
    close(d.cdf(t(x, device)), [0.5 * (1 + math.erf((a - m) / (s * math.sqrt(2)))) for a, m, s in zip(x, loc, scale)])
    p = np.array([0.05, 0.5, 0.9])
    q = host(d.icdf(t(p, device)))
    np.testing.assert_allclose([0.5 * (1 + math.erf((a - m) / (s * math.sqrt(2)))) for a, m, s in zip(q, loc, scale)],
                               p, rtol=1e-10)
    close(d.mean, loc)
    close(d.mode, loc)
    close(d.variance, scale ** 2)
    close(d.stddev, scale)
    assert d.batch_shape == (3,) and d.event_shape == () and d.has_rsample


@pytest.mark.parametrize("device", DEVICES)
def test_uniform_exponential_laplace(device):
    low, high = np.array([0.0, -1.0]), np.array([2.0, 3.0])
    u = D.Uniform(t(low, device), t(high, device))
    x = np.array([0.5, 2.5])
    close(u.log_prob(t(x, device)), -np.log(high - low))
    close(u.entropy(), np.log(high - low))
    close(u.cdf(t(x, device)), (x - low) / (high - low))
    close(u.icdf(t([0.25, 0.75], device)), low + np.array([0.25, 0.75]) * (high - low))
    close(u.mean, (low + high) / 2)
    close(u.variance, (high - low) ** 2 / 12)
    assert np.isinf(host(D.Uniform(t(low, device), t(high, device), validate_args=False)
                         .log_prob(t([3.0, 0.0], device)))[0])

    rate = np.array([0.5, 2.0])
    e = D.Exponential(t(rate, device))
    x = np.array([1.0, 0.25])
    close(e.log_prob(t(x, device)), np.log(rate) - rate * x)
    close(e.cdf(t(x, device)), 1 - np.exp(-rate * x))
    close(e.icdf(t([0.3, 0.9], device)), -np.log1p(-np.array([0.3, 0.9])) / rate)
    close(e.entropy(), 1 - np.log(rate))
    close(e.mean, 1 / rate)
    close(e.variance, 1 / rate ** 2)

    loc, scale = np.array([0.0, 1.0]), np.array([1.0, 2.5])
    lap = D.Laplace(t(loc, device), t(scale, device))
    x = np.array([-0.7, 3.0])
    close(lap.log_prob(t(x, device)), -np.log(2 * scale) - np.abs(x - loc) / scale)
    cdf = np.where(x < loc, 0.5 * np.exp((x - loc) / scale), 1 - 0.5 * np.exp(-(x - loc) / scale))
    close(lap.cdf(t(x, device)), cdf)
    close(lap.icdf(t(cdf, device)), x)
    close(lap.entropy(), 1 + np.log(2 * scale))
    close(lap.variance, 2 * scale ** 2)


@pytest.mark.parametrize("device", DEVICES)
def test_lognormal_and_transformed(device):
    loc, scale = np.array([0.2, -1.0]), np.array([0.5, 1.2])
    d = D.LogNormal(t(loc, device), t(scale, device))
    x = np.array([1.3, 0.2])
    close(d.log_prob(t(x, device)),
          -np.log(x * scale * math.sqrt(2 * math.pi)) - (np.log(x) - loc) ** 2 / (2 * scale ** 2))
    close(d.mean, np.exp(loc + scale ** 2 / 2))
    close(d.variance, (np.exp(scale ** 2) - 1) * np.exp(2 * loc + scale ** 2))
    close(d.mode, np.exp(loc - scale ** 2))
    close(d.entropy(), loc + 0.5 + 0.5 * np.log(2 * math.pi * scale ** 2))
    close(d.cdf(t(x, device)), [0.5 * (1 + math.erf((math.log(a) - m) / (s * math.sqrt(2))))
                                for a, m, s in zip(x, loc, scale)])
    # tanh of a Normal (SAC): density of y = tanh(x) is N(atanh y) / (1 - y²).
    base = D.Normal(t(loc, device), t(scale, device))
    squashed = D.TransformedDistribution(base, [D.transforms.TanhTransform()])
    y = np.array([0.3, -0.95])
    z = np.arctanh(y)
    want = -((z - loc) ** 2) / (2 * scale ** 2) - np.log(scale * math.sqrt(2 * math.pi)) - np.log1p(-y ** 2)
    close(squashed.log_prob(t(y, device)), want, rtol=1e-9)
    # Affine then sigmoid: y = sigmoid(a + b x).
    sig = D.TransformedDistribution(base, [D.transforms.AffineTransform(0.5, -2.0), D.transforms.SigmoidTransform()])
    y = np.array([0.4, 0.9])
    logit = np.log(y) - np.log1p(-y)
    xs = (logit - 0.5) / -2.0
    want = (-((xs - loc) ** 2) / (2 * scale ** 2) - np.log(scale * math.sqrt(2 * math.pi)) - math.log(2.0)
            - np.log(y * (1 - y)))
    close(sig.log_prob(t(y, device)), want, rtol=1e-9)
    # A decreasing transform flips the CDF.
    neg = D.TransformedDistribution(base, D.transforms.AffineTransform(0.0, -1.0))
    close(neg.cdf(t([0.1, 0.4], device)), [1 - 0.5 * (1 + math.erf((-a - m) / (s * math.sqrt(2))))
                                           for a, m, s in zip([0.1, 0.4], loc, scale)])


@pytest.mark.parametrize("device", DEVICES)
def test_gamma_beta_dirichlet(device):
    c, r = np.array([0.7, 3.0]), np.array([2.0, 0.5])
    g = D.Gamma(t(c, device), t(r, device))
    x = np.array([0.4, 5.0])
    close(g.log_prob(t(x, device)), c * np.log(r) + (c - 1) * np.log(x) - r * x - lgamma(c), rtol=1e-11)
    close(g.entropy(), c - np.log(r) + lgamma(c) + (1 - c) * digamma(c), rtol=1e-8)
    close(g.mean, c / r)
    close(g.variance, c / r ** 2)

    a, b = np.array([2.0, 0.5]), np.array([3.0, 0.8])
    beta = D.Beta(t(a, device), t(b, device))
    x = np.array([0.3, 0.9])
    log_b = lgamma(a) + lgamma(b) - lgamma(a + b)
    close(beta.log_prob(t(x, device)), (a - 1) * np.log(x) + (b - 1) * np.log1p(-x) - log_b, rtol=1e-11)
    close(beta.mean, a / (a + b))
    close(beta.variance, a * b / ((a + b) ** 2 * (a + b + 1)))
    close(beta.entropy(), log_b - (a - 1) * digamma(a) - (b - 1) * digamma(b) + (a + b - 2) * digamma(a + b),
          rtol=1e-8)

    conc = np.array([1.5, 2.0, 4.0])
    dir_ = D.Dirichlet(t(conc, device))
    x = np.array([0.2, 0.3, 0.5])
    a0 = conc.sum()
    close(dir_.log_prob(t(x, device)), ((conc - 1) * np.log(x)).sum() + math.lgamma(a0) - lgamma(conc).sum(),
          rtol=1e-11)
    close(dir_.mean, conc / a0)
    close(dir_.variance, conc * (a0 - conc) / (a0 ** 2 * (a0 + 1)))
    assert dir_.event_shape == (3,) and dir_.batch_shape == ()


@pytest.mark.parametrize("device", DEVICES)
def test_bernoulli_categorical_onehot(device):
    p = np.array([0.1, 0.5, 0.85])
    for d in (D.Bernoulli(probs=t(p, device)), D.Bernoulli(logits=t(np.log(p / (1 - p)), device))):
        close(d.log_prob(t([1.0, 0.0, 0.0], device)), np.log([0.1, 0.5, 0.15]), rtol=1e-7)
        close(d.entropy(), -(p * np.log(p) + (1 - p) * np.log1p(-p)), rtol=1e-7)
        close(d.mean, p, rtol=1e-7)
        close(d.variance, p * (1 - p), rtol=1e-7)
    mode = host(D.Bernoulli(probs=t(p, device)).mode)
    assert mode[0] == 0 and np.isnan(mode[1]) and mode[2] == 1

    w = np.array([[1.0, 2.0, 7.0], [3.0, 3.0, 4.0]])
    probs = w / w.sum(-1, keepdims=True)
    for d in (D.Categorical(probs=t(w, device)), D.Categorical(logits=t(np.log(probs) + 3.0, device))):
        close(d.probs, probs, rtol=1e-12)
        close(d.logits, np.log(probs), rtol=1e-12)
        close(d.log_prob(t([2, 0], device, np.int64)), np.log([probs[0, 2], probs[1, 0]]), rtol=1e-12)
        close(d.entropy(), -(probs * np.log(probs)).sum(-1), rtol=1e-12)
        assert host(d.mode).tolist() == [2, 2]
        assert d.batch_shape == (2,) and d.event_shape == ()
    # log_prob broadcasts a batch of values against the batch shape.
    got = D.Categorical(probs=t(w, device)).log_prob(t([[0, 1], [2, 2]], device, np.int64))
    close(got, np.log([[probs[0, 0], probs[1, 1]], [probs[0, 2], probs[1, 2]]]), rtol=1e-12)
    oh = D.OneHotCategorical(probs=t(w, device))
    close(oh.log_prob(t([[0, 0, 1], [1, 0, 0]], device)), np.log([probs[0, 2], probs[1, 0]]), rtol=1e-12)
    close(oh.mean, probs, rtol=1e-12)
    close(oh.variance, probs * (1 - probs), rtol=1e-12)
    assert oh.event_shape == (3,) and oh.batch_shape == (2,)


@pytest.mark.parametrize("device", DEVICES)
def test_poisson_binomial(device):
    rate = np.array([0.5, 4.0])
    k = np.array([0.0, 6.0])
    close(D.Poisson(t(rate, device)).log_prob(t(k, device)), k * np.log(rate) - rate - lgamma(k + 1), rtol=1e-11)
    n, p = 10.0, np.array([0.3, 0.7])
    k = np.array([3.0, 10.0])
    want = [math.log(math.comb(10, int(kk))) + kk * math.log(pp) + (10 - kk) * math.log1p(-pp) for kk, pp in zip(k, p)]
    b = D.Binomial(n, probs=t(p, device))
    close(b.log_prob(t(k, device)), want, rtol=1e-9)
    close(b.mean, n * p)
    close(b.variance, n * p * (1 - p))
    pmf = np.array([[math.comb(10, j) * pp ** j * (1 - pp) ** (10 - j) for pp in p] for j in range(11)])
    close(b.entropy(), -(pmf * np.log(pmf)).sum(0), rtol=1e-9)


def _mvn_setup():
    loc = np.array([0.5, -1.0, 2.0])
    L = np.array([[1.2, 0.0, 0.0], [0.4, 0.8, 0.0], [-0.3, 0.6, 1.5]])
    return loc, L


@pytest.mark.parametrize("device", DEVICES)
def test_multivariate_normal_and_independent(device):
    loc, L = _mvn_setup()
    cov = L @ L.T
    d = D.MultivariateNormal(t(loc, device), scale_tril=t(L, device))
    x = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 3.5]])
    diff = x - loc
    maha = np.einsum("ni,ij,nj->n", diff, np.linalg.inv(cov), diff)
    want = -0.5 * (3 * math.log(2 * math.pi) + np.linalg.slogdet(cov)[1] + maha)
    close(d.log_prob(t(x, device)), want, rtol=1e-10)
    close(d.entropy(), 0.5 * (3 * (1 + math.log(2 * math.pi)) + np.linalg.slogdet(cov)[1]))
    close(d.covariance_matrix, cov)
    close(d.precision_matrix, np.linalg.inv(cov), rtol=1e-9)
    close(d.variance, np.diag(cov))
    assert d.event_shape == (3,) and d.batch_shape == ()
    # A batch of locs against one factor.
    batched = D.MultivariateNormal(t(np.stack([loc, loc + 1]), device), scale_tril=t(L, device))
    assert batched.batch_shape == (2,)
    close(batched.log_prob(t(x, device)), [want[0], -0.5 * (3 * math.log(2 * math.pi) + np.linalg.slogdet(cov)[1]
                                                              + (x[1] - loc - 1) @ np.linalg.inv(cov) @ (x[1] - loc - 1))],
          rtol=1e-10)

    scale = np.array([[1.0, 2.0, 0.5], [0.3, 1.0, 1.0]])
    mu = np.zeros((2, 3))
    ind = D.Independent(D.Normal(t(mu, device), t(scale, device)), 1)
    assert ind.batch_shape == (2,) and ind.event_shape == (3,)
    v = np.ones((2, 3))
    close(ind.log_prob(t(v, device)), (-(v ** 2) / (2 * scale ** 2) - np.log(scale)
                                       - 0.5 * math.log(2 * math.pi)).sum(-1))
    close(ind.entropy(), (0.5 * np.log(2 * math.pi * math.e * scale ** 2)).sum(-1))


@pytest.mark.parametrize("device", DEVICES)
def test_expand(device):
    d = D.Normal(t([0.0, 1.0], device), t([1.0, 2.0], device)).expand((4, 2))
    assert d.batch_shape == (4, 2) and d.sample().shape == (4, 2)
    close(d.log_prob(t(np.zeros((4, 2)), device)),
          np.tile(-np.array([0.0, 1.0]) ** 2 / (2 * np.array([1.0, 4.0])) - np.log([1.0, 2.0])
                  - 0.5 * math.log(2 * math.pi), (4, 1)))
    c = D.Categorical(logits=t([0.0, 1.0, 2.0], device)).expand((5,))
    assert c.batch_shape == (5,) and c.sample((2,)).shape == (2, 5) and c.param_shape == (5, 3)
    b = D.Bernoulli(probs=t([0.2], device)).expand((3,))
    assert b.sample().shape == (3,) and b.param_shape == (3,)
    loc, L = _mvn_setup()
    m = D.MultivariateNormal(t(loc, device), scale_tril=t(L, device)).expand((2,))
    assert m.batch_shape == (2,) and m.rsample().shape == (2, 3)
    ind = D.Independent(D.Normal(t(np.zeros(3), device), 1.0), 1).expand((4,))
    assert ind.batch_shape == (4,) and ind.event_shape == (3,) and ind.sample().shape == (4, 3)
    beta = D.Beta(2.0, 3.0).expand((6,))
    assert beta.sample().shape == (6,)


# --- sampling moments --------------------------------------------------------------------------

N = 60000


def _moment_cases():
    return [
        ("Normal", lambda dev: D.Normal(t([1.0, -2.0], dev), t([0.5, 3.0], dev)), [1.0, -2.0], [0.25, 9.0]),
        ("Uniform", lambda dev: D.Uniform(t([0.0, -1.0], dev), t([2.0, 3.0], dev)), [1.0, 1.0], [4 / 12, 16 / 12]),
        ("Exponential", lambda dev: D.Exponential(t([0.5, 3.0], dev)), [2.0, 1 / 3], [4.0, 1 / 9]),
        ("Laplace", lambda dev: D.Laplace(t([0.0, 2.0], dev), t([1.0, 0.5], dev)), [0.0, 2.0], [2.0, 0.5]),
        ("LogNormal", lambda dev: D.LogNormal(t([0.0], dev), t([0.5], dev)), [math.exp(0.125)],
         [(math.exp(0.25) - 1) * math.exp(0.25)]),
        ("Gamma", lambda dev: D.Gamma(t([0.4, 5.0], dev), t([1.0, 2.0], dev)), [0.4, 2.5], [0.4, 1.25]),
        ("Beta", lambda dev: D.Beta(t([2.0, 0.5], dev), t([3.0, 0.5], dev)), [0.4, 0.5],
         [6 / (25 * 6), 0.25 / 2]),
        ("Bernoulli", lambda dev: D.Bernoulli(probs=t([0.2, 0.9], dev)), [0.2, 0.9], [0.16, 0.09]),
        ("Poisson", lambda dev: D.Poisson(t([0.7, 12.0], dev)), [0.7, 12.0], [0.7, 12.0]),
        ("Binomial", lambda dev: D.Binomial(t([5.0, 20.0], dev), probs=t([0.3, 0.6], dev)), [1.5, 12.0],
         [1.05, 4.8]),
        ("TanhNormal", lambda dev: D.TransformedDistribution(D.Normal(t([0.0], dev), t([1.0], dev)),
                                                             D.transforms.TanhTransform()),
         [0.0], [0.3942944903978412]),  # E[tanh(Z)²] for Z ~ N(0, 1), by quadrature below
    ]


def test_tanh_normal_second_moment_reference():
    z = np.linspace(-12, 12, 200001)
    density = np.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    f = np.tanh(z) ** 2 * density
    assert abs(((f[1:] + f[:-1]) / 2 * np.diff(z)).sum() - 0.3942944903978412) < 1e-12


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,make,mean,var", _moment_cases(), ids=[c[0] for c in _moment_cases()])
def test_sampling_moments(device, name, make, mean, var):
    lazyscope.manual_seed(7)
    d = make(device)
    draws = d.sample((N,))
    assert tuple(draws.shape) == (N,) + tuple(d.batch_shape)
    assert str(draws.device) == device
    assert_moments(host(draws), np.array(mean), np.array(var))
    if d.has_rsample:
        assert_moments(host(d.rsample((N,))), np.array(mean), np.array(var))


def test_the_moment_check_can_fail():
    lazyscope.manual_seed(7)
    draws = host(D.Normal(t([1.0, -2.0], "cpu"), t([0.5, 3.0], "cpu")).sample((N,)))
    assert_moments(draws, np.array([1.0, -2.0]), np.array([0.25, 9.0]))
    with pytest.raises(AssertionError):  # a variance 5% off is caught at this sample size
        assert_moments(draws, np.array([1.0, -2.0]), np.array([0.25, 9.0]) * 1.05)
    with pytest.raises(AssertionError):  # so is a mean off by a tenth of a standard deviation
        assert_moments(draws, np.array([1.05, -2.0]), np.array([0.25, 9.0]))


@pytest.mark.parametrize("device", DEVICES)
def test_categorical_and_multivariate_sampling(device):
    lazyscope.manual_seed(3)
    probs = np.array([[0.1, 0.0, 0.6, 0.3], [0.25, 0.25, 0.25, 0.25]])
    draws = host(D.Categorical(probs=t(probs, device)).sample((N,)))
    assert draws.shape == (N, 2)
    freq = np.stack([(draws == k).mean(0) for k in range(4)], -1)
    assert np.all(np.abs(freq - probs) <= 5 * np.sqrt(probs * (1 - probs) / N))
    assert freq[0, 1] == 0  # a zero-probability category is never drawn
    onehot = host(D.OneHotCategorical(logits=t(np.log(probs[1]), device)).sample((N,)))
    assert np.all(onehot.sum(-1) == 1)
    assert_moments(onehot, probs[1], probs[1] * (1 - probs[1]))

    loc, L = _mvn_setup()
    draws = host(D.MultivariateNormal(t(loc, device), scale_tril=t(L, device)).sample((N,)))
    cov = L @ L.T
    assert_moments(draws, loc, np.diag(cov))
    emp = np.cov(draws.T)
    se = np.sqrt((cov ** 2 + np.outer(np.diag(cov), np.diag(cov))) / N)
    assert np.all(np.abs(emp - cov) < 5 * se)

    conc = np.array([0.5, 2.0, 3.5])
    draws = host(D.Dirichlet(t(conc, device)).sample((N,)))
    a0 = conc.sum()
    np.testing.assert_allclose(draws.sum(-1), 1.0, rtol=1e-12)
    assert_moments(draws, conc / a0, conc * (a0 - conc) / (a0 ** 2 * (a0 + 1)))


def test_draws_follow_manual_seed():
    d = D.Normal(t([0.0, 1.0], "cpu"), t([1.0, 2.0], "cpu"))
    lazyscope.manual_seed(11)
    a = host(d.sample((3,)))
    lazyscope.manual_seed(11)
    b = host(d.sample((3,)))
    c = host(d.sample((3,)))
    assert np.array_equal(a, b) and not np.array_equal(b, c)


# --- rsample gradients -------------------------------------------------------------------------

def _fd_grad(objective, theta, h=1e-6):
    """Central differences of objective(theta) (each evaluation reseeded: the same draws)."""
    grad = np.zeros_like(theta)
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e.flat[i] = h
        grad.flat[i] = (objective(theta + e) - objective(theta - e)) / (2 * h)
    return grad


def _pathwise(make, params, device, f=lambda x: (x.sin() * x).sum(), n=64):
    """The rsample gradient of sum f(draws) with respect to each parameter, and the finite
    difference of the same objective with the same seed."""
    def value(*arrays):
        lazyscope.manual_seed(5)
        return host(f(make(*[t(a, device) for a in arrays]).rsample((n,)))).item()

    lazyscope.manual_seed(5)
    leaves = [lazyscope.tensor(p, device=device, requires_grad=True) for p in params]
    f(make(*leaves).rsample((n,))).backward()
    for i, (leaf, p) in enumerate(zip(leaves, params)):
        fd = _fd_grad(lambda q: value(*params[:i], q, *params[i + 1:]), p)
        np.testing.assert_allclose(host(leaf.grad), fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_rsample_gradients_match_finite_differences(device):
    _pathwise(lambda m, s: D.Normal(m, s), [np.array([0.3, -1.0]), np.array([0.7, 1.5])], device)
    _pathwise(lambda lo, hi: D.Uniform(lo, hi), [np.array([0.0, -1.0]), np.array([1.0, 2.0])], device)
    _pathwise(lambda r: D.Exponential(r), [np.array([0.5, 2.0])], device)
    _pathwise(lambda m, s: D.Laplace(m, s), [np.array([0.3]), np.array([0.9])], device)
    _pathwise(lambda m, s: D.LogNormal(m, s), [np.array([0.1]), np.array([0.4])], device)
    _pathwise(lambda m, s: D.TransformedDistribution(D.Normal(m, s), D.transforms.TanhTransform()),
              [np.array([0.2, -0.4]), np.array([0.5, 1.1])], device)
    _pathwise(lambda m, s: D.Independent(D.Normal(m, s), 1), [np.array([0.2, -0.4]), np.array([0.5, 1.1])], device)
    loc, L = _mvn_setup()
    # validate_args=False: the differences step off the lower triangle, where the gradient is defined too.
    _pathwise(lambda m, l: D.MultivariateNormal(m, scale_tril=l, validate_args=False), [loc, L], device)


def _per_draw_grads(make, values, n, device):
    """Each parameter repeated n times as its own leaf: the gradient of sum(draw²) (or of sum(draw))
    reaching each copy is one draw's pathwise gradient."""
    leaves = [lazyscope.tensor(np.full(n, v), device=device, requires_grad=True) for v in values]
    return leaves, make(*leaves).rsample()


def _within(per_draw, want, k=5.0):
    per_draw = host(per_draw)
    se = per_draw.std() / math.sqrt(per_draw.size)
    assert abs(per_draw.mean() - want) < k * se, (per_draw.mean(), want, se)


@pytest.mark.parametrize("device", DEVICES)
def test_gamma_and_beta_rsample_gradients_match_analytic_moment_derivatives(device):
    n = 100000
    for alpha, rate in ((0.6, 1.0), (3.0, 2.0)):
        # E[X²] = α(α+1)/r² for X ~ Gamma(α, r): d/dα = (2α+1)/r², d/dr = -2α(α+1)/r³.
        lazyscope.manual_seed(9)
        (a, r), x = _per_draw_grads(D.Gamma, (alpha, rate), n, device)
        (x ** 2).sum().backward()
        _within(a.grad, (2 * alpha + 1) / rate ** 2)
        _within(r.grad, -2 * alpha * (alpha + 1) / rate ** 3)
    # Beta(a, b): E[X] = a / (a + b), so d/da = b / (a + b)², d/db = -a / (a + b)².
    lazyscope.manual_seed(9)
    (a, b), x = _per_draw_grads(D.Beta, (2.0, 3.0), n, device)
    x.sum().backward()
    _within(a.grad, 3.0 / 25)
    _within(b.grad, -2.0 / 25)


def test_the_gradient_check_can_fail():
    lazyscope.manual_seed(9)
    (a, r), x = _per_draw_grads(D.Gamma, (0.6, 1.0), 100000, "cpu")
    (x ** 2).sum().backward()
    with pytest.raises(AssertionError):  # 5% off the true derivative is caught
        _within(a.grad, 1.05 * 2.2)


def test_gamma_implicit_gradient_is_the_quantile_derivative():
    # dx/dα at a fixed quantile u: x(α) = F⁻¹(u; α). Check against a bisection of the host CDF.
    from lazyscope.distributions.gamma import _regularized_gamma_p, _standard_gamma_dx_da

    def quantile(a, u):
        lo, hi = 1e-12, 100.0
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if _regularized_gamma_p(a, mid) < u else (lo, mid)
        return 0.5 * (lo + hi)

    for a, x in ((0.5, 0.3), (2.5, 1.7), (9.0, 12.0)):
        u = _regularized_gamma_p(a, x)
        h = 1e-4
        numeric = (quantile(a + h, u) - quantile(a - h, u)) / (2 * h)
        np.testing.assert_allclose(_standard_gamma_dx_da(np.array([a]), np.array([x]))[0], numeric, rtol=1e-5)
    # The CDF itself against closed forms: P(1, x) = 1 - e^-x, P(2, x) = 1 - (1 + x) e^-x.
    np.testing.assert_allclose(_regularized_gamma_p(np.array([1.0, 2.0, 2.0]), np.array([0.7, 0.5, 8.0])),
                               [1 - math.exp(-0.7), 1 - 1.5 * math.exp(-0.5), 1 - 9 * math.exp(-8.0)], rtol=1e-13)


# --- KL divergence -----------------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_kl_closed_forms(device):
    m1, s1, m2, s2 = np.array([0.0, 1.0]), np.array([1.0, 0.5]), np.array([0.5, -1.0]), np.array([2.0, 0.7])
    close(D.kl_divergence(D.Normal(t(m1, device), t(s1, device)), D.Normal(t(m2, device), t(s2, device))),
          np.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5)
    p, q = np.array([[0.2, 0.3, 0.5]]), np.array([[0.1, 0.6, 0.3]])
    close(D.kl_divergence(D.Categorical(probs=t(p, device)), D.Categorical(logits=t(np.log(q), device))),
          (p * np.log(p / q)).sum(-1), rtol=1e-10)
    close(D.kl_divergence(D.OneHotCategorical(probs=t(p, device)), D.OneHotCategorical(probs=t(q, device))),
          (p * np.log(p / q)).sum(-1), rtol=1e-10)
    # A category q cannot produce: infinite.
    inf = D.kl_divergence(D.Categorical(probs=t([0.5, 0.5], device)), D.Categorical(probs=t([1.0, 0.0], device)))
    assert np.isinf(host(inf))
    a, b = np.array([0.3, 0.9]), np.array([0.6, 0.5])
    close(D.kl_divergence(D.Bernoulli(probs=t(a, device)), D.Bernoulli(probs=t(b, device))),
          a * np.log(a / b) + (1 - a) * np.log((1 - a) / (1 - b)), rtol=1e-6)
    close(D.kl_divergence(D.Uniform(t([0.0], device), t([1.0], device)), D.Uniform(t([-1.0], device),
                                                                                   t([3.0], device))), [math.log(4.0)])
    assert np.isinf(host(D.kl_divergence(D.Uniform(t([0.0], device), t([1.0], device)),
                                         D.Uniform(t([0.5], device), t([3.0], device))))).all()
    r1, r2 = np.array([0.5, 2.0]), np.array([1.5, 1.0])
    close(D.kl_divergence(D.Exponential(t(r1, device)), D.Exponential(t(r2, device))), np.log(r1 / r2) + r2 / r1 - 1)
    ind = D.kl_divergence(D.Independent(D.Normal(t([m1], device), t([s1], device)), 1),
                          D.Independent(D.Normal(t([m2], device), t([s2], device)), 1))
    close(ind, [(np.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5).sum()])
    loc, L = _mvn_setup()
    loc2, L2 = loc[::-1].copy(), np.array([[0.9, 0, 0], [0.1, 1.3, 0], [0.2, -0.4, 0.7]])
    c1, c2 = L @ L.T, L2 @ L2.T
    inv2 = np.linalg.inv(c2)
    want = 0.5 * (np.trace(inv2 @ c1) + (loc2 - loc) @ inv2 @ (loc2 - loc) - 3 + np.linalg.slogdet(c2)[1]
                  - np.linalg.slogdet(c1)[1])
    close(D.kl_divergence(D.MultivariateNormal(t(loc, device), scale_tril=t(L, device)),
                          D.MultivariateNormal(t(loc2, device), scale_tril=t(L2, device))), want, rtol=1e-10)


def _mc_kl(log_p, log_q, draws):
    terms = log_p(draws) - log_q(draws)
    return terms.mean(), terms.std() / math.sqrt(len(terms))


@pytest.mark.parametrize("device", DEVICES)
def test_kl_against_monte_carlo_from_numpy(device):
    rng = np.random.default_rng(21)
    n = 400000
    # Laplace / Laplace and Gamma / Gamma: NumPy's draws and densities.
    x = rng.laplace(0.3, 1.2, n)
    est, se = _mc_kl(lambda v: -np.log(2.4) - np.abs(v - 0.3) / 1.2, lambda v: -np.log(1.0) - np.abs(v + 0.5) / 0.5, x)
    got = host(D.kl_divergence(D.Laplace(t(0.3, device), t(1.2, device)), D.Laplace(t(-0.5, device), t(0.5, device))))
    assert abs(got - est) < 5 * se
    x = rng.gamma(2.5, 1 / 1.5, n)

    def gamma_log(c, r):
        return lambda v: c * math.log(r) + (c - 1) * np.log(v) - r * v - math.lgamma(c)
    est, se = _mc_kl(gamma_log(2.5, 1.5), gamma_log(1.2, 0.8), x)
    got = host(D.kl_divergence(D.Gamma(t(2.5, device), t(1.5, device)), D.Gamma(t(1.2, device), t(0.8, device))))
    assert abs(got - est) < 5 * se
    # Normal / Normal and the multivariate case also agree with sampling.
    loc, L = _mvn_setup()
    loc2 = loc + np.array([0.5, -0.2, 0.1])
    L2 = np.diag([1.5, 1.0, 2.0])
    z = loc + rng.standard_normal((n, 3)) @ L.T

    def mvn_log(m, l):
        c = l @ l.T
        inv = np.linalg.inv(c)
        return lambda v: -0.5 * (np.einsum("ni,ij,nj->n", v - m, inv, v - m) + np.linalg.slogdet(c)[1]
                                 + 3 * math.log(2 * math.pi))
    est, se = _mc_kl(mvn_log(loc, L), mvn_log(loc2, L2), z)
    got = host(D.kl_divergence(D.MultivariateNormal(t(loc, device), scale_tril=t(L, device)),
                               D.MultivariateNormal(t(loc2, device), scale_tril=t(L2, device))))
    assert abs(got - est) < 5 * se


def test_kl_registry():
    with pytest.raises(NotImplementedError, match="No KL.*Normal.*Exponential"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Exponential(1.0))

    class Wide(D.Normal):
        pass

    @D.register_kl(Wide, D.Normal)
    def _wide(p, q):
        return lazyscope.tensor(-7.0)

    # The most specific registration wins; a subclass without one falls back to its base's.
    assert D.kl_divergence(Wide(0.0, 1.0), D.Normal(0.0, 1.0)).item() == -7.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), Wide(0.0, 1.0)).item() == 0.0
    with pytest.raises(TypeError):
        D.register_kl("Normal", D.Normal)


# --- validation --------------------------------------------------------------------------------

def test_bad_parameters_raise_naming_the_argument_and_constraint():
    with pytest.raises(ValueError, match=r"parameter scale .* Normal.*GreaterThan\(lower_bound=0.0\)"):
        D.Normal(0.0, lazyscope.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match=r"parameter probs .* Bernoulli.*Interval"):
        D.Bernoulli(probs=lazyscope.tensor([1.5]))
    with pytest.raises(ValueError, match=r"parameter probs .* Categorical.*Simplex"):
        D.Categorical(probs=lazyscope.tensor([0.5, -0.1, 0.6]))
    with pytest.raises(ValueError, match=r"parameter rate .* Exponential"):
        D.Exponential(lazyscope.tensor([0.0]))
    with pytest.raises(ValueError, match=r"parameter scale_tril .* MultivariateNormal.*LowerCholesky"):
        D.MultivariateNormal(lazyscope.zeros(2), scale_tril=lazyscope.tensor([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"low .* Uniform"):
        D.Uniform(1.0, 0.0)
    with pytest.raises(ValueError, match=r"parameter concentration .* Gamma"):
        D.Gamma(-1.0, 1.0)
    with pytest.raises(ValueError, match=r"either `probs` or `logits`"):
        D.Bernoulli(probs=lazyscope.tensor([0.5]), logits=lazyscope.tensor([0.0]))
    with pytest.raises(ValueError, match=r"either `probs` or `logits`"):
        D.Categorical()


def test_values_outside_the_support_raise():
    with pytest.raises(ValueError, match=r"value argument .* support \(GreaterThanEq\(lower_bound=0.0\)\) .*Exponential"):
        D.Exponential(1.0).log_prob(lazyscope.tensor(-1.0))
    with pytest.raises(ValueError, match=r"IntegerInterval\(lower_bound=0, upper_bound=2\).*Categorical"):
        D.Categorical(logits=lazyscope.zeros(3)).log_prob(lazyscope.tensor(3))
    with pytest.raises(ValueError, match=r"Boolean.*Bernoulli"):
        D.Bernoulli(probs=lazyscope.tensor(0.5)).log_prob(lazyscope.tensor(0.5))
    with pytest.raises(ValueError, match=r"Interval.*Uniform"):
        D.Uniform(0.0, 1.0).log_prob(lazyscope.tensor(1.5))
    with pytest.raises(ValueError, match=r"right-most size of value must match event_shape"):
        D.MultivariateNormal(lazyscope.zeros(3), scale_tril=lazyscope.eye(3)).log_prob(lazyscope.zeros(2))
    with pytest.raises(ValueError, match="not broadcastable"):
        D.Normal(lazyscope.zeros(3), 1.0).log_prob(lazyscope.zeros(4))


def test_validation_can_be_turned_off():
    bad = D.Normal(0.0, lazyscope.tensor(-1.0), validate_args=False)
    assert bad.scale.item() == -1.0
    assert D.Exponential(1.0, validate_args=False).log_prob(lazyscope.tensor(-1.0)).item() == 1.0
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(0.0, lazyscope.tensor(-1.0))
        D.Exponential(1.0).log_prob(lazyscope.tensor(-1.0))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, lazyscope.tensor(-1.0))
    with pytest.raises(ValueError, match="True or False"):
        D.Distribution.set_default_validate_args("yes")


def test_validation_on_lazy_is_read_after_mark_step_without_a_sync():
    lm.mark_step()
    lazyscope._C.reset_metrics()
    scale = lazyscope.tensor([1.0, -1.0], device="lazy:0")
    d = D.Normal(lazyscope.zeros(2, device="lazy:0"), scale)  # no error yet: reading it would sync
    syncs = {k: v for k, v in lm.counters().items() if k.startswith("SyncCause.") and v}
    assert not syncs
    with pytest.raises(ValueError, match=r"(?s)parameter scale .* Normal.*GreaterThan.*after mark_step"):
        lm.mark_step()
    del d
    lm.mark_step()  # the failed check is not repeated
    good = D.Normal(lazyscope.zeros(2, device="lazy:0"), lazyscope.ones(2, device="lazy:0"))
    good.log_prob(lazyscope.tensor([0.5, 1.0], device="lazy:0"))
    lm.mark_step()


def test_refused_and_unsupported_names():
    with pytest.raises(NotImplementedError, match="Cauchy is not supported.*use "):
        D.Cauchy(0.0, 1.0)
    with pytest.raises(NotImplementedError, match="rsample"):
        D.Categorical(logits=lazyscope.zeros(3)).rsample()
    with pytest.raises(NotImplementedError, match="gammainc"):
        D.Gamma(1.0, 1.0).cdf(lazyscope.tensor(1.0))


# --- a training loop on lazy:0 -----------------------------------------------------------------

def _train(device, steps=6):
    """REINFORCE with a Categorical policy plus a Gaussian NLL head and a reparameterized
    squashed-Gaussian term (SAC's): the losses of every step."""
    rng = np.random.default_rng(0)
    obs = rng.standard_normal((32, 5))
    adv = rng.standard_normal(32)
    target = rng.standard_normal((32, 2))
    w = lazyscope.tensor(rng.standard_normal((5, 3)) * 0.3, device=device, requires_grad=True)
    v = lazyscope.tensor(rng.standard_normal((5, 4)) * 0.3, device=device, requires_grad=True)
    opt = lazyscope.optim.Adam([w, v], lr=0.02)
    x, a, y = (lazyscope.tensor(z, device=device) for z in (obs, adv, target))
    lazyscope.manual_seed(17)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        policy = D.Categorical(logits=x @ w)
        actions = policy.sample()
        pg = -(policy.log_prob(actions) * a).mean() - 0.01 * policy.entropy().mean()
        head = x @ v
        gauss = D.Normal(head[:, :2], nn_softplus(head[:, 2:]) + 1e-3)
        nll = -gauss.log_prob(y).sum(-1).mean()
        squashed = D.TransformedDistribution(gauss, D.transforms.TanhTransform(cache_size=1))
        act = squashed.rsample()
        sac = (squashed.log_prob(act).sum(-1) - (act * y.tanh()).sum(-1)).mean()
        loss = pg + nll + 0.1 * sac
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if device != "cpu":
            lm.mark_step()
    return [host(l).item() for l in losses]


def nn_softplus(x):
    return lazyscope.nn.functional.softplus(x)


def test_training_loop_on_lazy_matches_cpu_and_syncs_only_at_mark_step():
    want = _train("cpu")
    lm.mark_step()
    lazyscope._C.clear_compile_cache()
    lazyscope._C.reset_metrics()
    got = _train("lazy:0")
    counters = lm.counters()
    syncs = {k: v for k, v in counters.items() if k.startswith("SyncCause.") and k != "SyncCause.mark_step" and v}
    assert not syncs, syncs
    assert counters["SyncCause.mark_step"] >= 6
    assert counters["UncachedCompile"] == 1  # the draws are graph inputs: every step reuses one graph
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert want[-1] < want[0] and np.all(np.isfinite(want))  # it trains


@pytest.mark.parametrize("device", DEVICES)
def test_sample_records_no_gradient_rsample_does_and_float32_stays_float32(device):
    loc = lazyscope.tensor([0.0, 1.0], device=device, requires_grad=True)
    d = D.Normal(loc, 1.0)
    assert not d.sample().requires_grad and d.rsample().requires_grad
    assert D.Categorical(logits=loc).sample((3,)).dtype == lazyscope.int64
    x = lazyscope.tensor(np.array([[0.2, -0.5, 1.0]], dtype=np.float32), device=device)
    for family in (D.Normal(x, 1.0), D.Laplace(x, 2.0), D.Exponential(x.exp()), D.Uniform(x, x + 1),
                   D.LogNormal(x, 0.5), D.Gamma(x.exp(), 1.0), D.Beta(x.exp(), 2.0), D.Bernoulli(logits=x),
                   D.Categorical(logits=x), D.Poisson(x.exp()), D.Independent(D.Normal(x, 1.0), 1)):
        draws = family.sample((4,))
        log_prob = family.log_prob(draws)
        assert log_prob.dtype == lazyscope.float32, type(family).__name__
        assert np.all(np.isfinite(host(log_prob))), type(family).__name__
    if device != "cpu":
        lm.mark_step()


@pytest.mark.parametrize("device", DEVICES)
def test_covariance_and_precision_matrices_give_the_same_distribution(device):
    loc, L = _mvn_setup()
    cov = L @ L.T
    x = np.array([0.3, -0.2, 1.0])
    want = -0.5 * (3 * math.log(2 * math.pi) + np.linalg.slogdet(cov)[1] + (x - loc) @ np.linalg.inv(cov) @ (x - loc))
    for kw, m in (("covariance_matrix", cov), ("precision_matrix", np.linalg.inv(cov))):
        d = D.MultivariateNormal(t(loc, device), **{kw: t(m, device)})
        close(d.log_prob(t(x, device)), want, rtol=1e-9)
        close(d.scale_tril @ d.scale_tril.transpose(-2, -1), cov, rtol=1e-9, atol=1e-12)
    # positive_definite: symmetric with positive eigenvalues.
    pd = D.constraints.positive_definite
    checks = pd.check(t(np.stack([cov, np.diag([1.0, -1.0, 2.0]), cov + np.triu(np.ones((3, 3)), 1)]), device))
    assert checks.tolist() == [True, False, False]
