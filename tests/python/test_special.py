"""lazyscope.special (and lgamma, digamma, erfinv on the top level and on
tensors) against Python's math module in float64: math.lgamma, derivatives
of it, math.erf as the inverse's check, the normal CDF."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import special
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]


@pytest.mark.parametrize("device", DEVICES)
def test_gammaln_matches_math_lgamma_and_has_its_poles(device):
    x = np.array([1e-8, 0.1, 0.5, 1.0, 1.5, 2.0, 3.7, 10.0, 57.3, 171.0, -0.5, -1.7, -2.5, -10.3])
    got = special.gammaln(lazyscope.tensor(x, device=device)).numpy()
    want = np.array([math.lgamma(v) for v in x])
    np.testing.assert_allclose(got, want, rtol=2e-13, atol=2e-14)
    poles = lazyscope.lgamma(lazyscope.tensor(np.array([0.0, -1.0, -3.0]), device=device)).numpy()
    assert np.all(poles == np.inf)
    f32 = lazyscope.tensor(np.array([0.3, 5.5, 40.0], dtype=np.float32), device=device).lgamma().numpy()
    np.testing.assert_allclose(f32, [math.lgamma(v) for v in (0.3, 5.5, 40.0)], rtol=2e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_digamma_is_the_derivative_of_lgamma(device):
    x = np.array([0.5, 1.0, 2.2, 6.0, 25.0, 1000.0, -0.5, -1.3, -7.6])
    h = 1e-6
    want = np.array([(math.lgamma(v + h) - math.lgamma(v - h)) / (2 * h) for v in x])
    got = special.digamma(lazyscope.tensor(x, device=device)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-6)
    # Near 0 by the recurrence: digamma(x) = digamma(x + 1) - 1/x.
    small = special.digamma(lazyscope.tensor(np.array([1e-3, 1.001]), device=device)).numpy()
    np.testing.assert_allclose(small[0], small[1] - 1e3, rtol=1e-13)
    np.testing.assert_allclose(lazyscope.digamma(lazyscope.tensor(np.array([1.0]), device=device)).numpy(),
                               [-0.5772156649015329], rtol=1e-13)  # -Euler's constant
    edge = special.psi(lazyscope.tensor(np.array([0.0, -2.0]), device=device)).numpy()
    assert edge[0] == -np.inf and np.isnan(edge[1])
    check(lambda t: special.gammaln(t), lambda a: np.array([math.lgamma(v) for v in a]),
          [np.array([0.7, 2.5, 9.0])], device, rtol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_erfinv_inverts_erf_and_ndtri_inverts_ndtr(device):
    y = np.array([-0.999999, -0.9, -0.3, -1e-10, 0.0, 1e-6, 0.5, 0.97, 0.9999999999])
    got = lazyscope.erfinv(lazyscope.tensor(y, device=device)).numpy()
    np.testing.assert_allclose([math.erf(v) for v in got], y, rtol=1e-14, atol=1e-16)
    edge = lazyscope.tensor(np.array([-1.0, 1.0, 1.5]), device=device).erfinv().numpy()
    assert edge[0] == -np.inf and edge[1] == np.inf and np.isnan(edge[2])
    p = np.array([1e-6, 0.025, 0.5, 0.8, 0.999])
    q = special.ndtri(lazyscope.tensor(p, device=device))
    np.testing.assert_allclose(special.ndtr(q).numpy(), p, rtol=1e-10)  # 2p - 1's rounding at 1e-6
    np.testing.assert_allclose(special.ndtr(lazyscope.tensor(np.array([1.959963984540054]), device=device)).numpy(),
                               [0.975], rtol=1e-12)
    np.testing.assert_allclose(special.log_ndtr(lazyscope.tensor(np.array([-20.0]), device=device)).numpy(),
                               [math.log(0.5 * math.erfc(20 / math.sqrt(2)))], rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_the_rest_of_special(device):
    x = np.array([0.0, 0.25, 1.0, 3.0])
    t = lazyscope.tensor(x, device=device)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(special.entr(t).numpy(), np.where(x == 0, 0.0, -x * np.log(x)), rtol=1e-14)
    np.testing.assert_allclose(special.expit(t).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-14)
    np.testing.assert_allclose(special.xlog1py(t, t).numpy(), x * np.log1p(x), rtol=1e-14)
    np.testing.assert_allclose(special.logsumexp(t, 0).numpy(), np.logaddexp.reduce(x), rtol=1e-14)


@pytest.mark.parametrize("device", DEVICES)
def test_erfc_keeps_its_digits_in_the_right_tail(device):
    x = np.array([-4.0, -0.5, 0.0, 1.0, 1.999, 2.0, 2.001, 3.0, 6.0, 12.0, 26.0])
    want = np.array([math.erfc(v) for v in x])
    got = lazyscope.erfc(lazyscope.tensor(x, device=device)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-14)
    check(lambda t: lazyscope.erfc(t), lambda a: np.array([math.erfc(v) for v in a]),
          [np.array([0.3, 1.5, 2.5, 4.0])], device)
