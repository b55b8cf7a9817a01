"""atleast_1d/2d/3d, isin, xlogy, copysign, float_power, trapezoid, trapz,
cumulative_trapezoid, quantile, nanquantile and histc on both devices,
against NumPy (and finite differences for quantile's and xlogy's
gradients)."""
import numpy as np
import pytest

import lazyscope
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(77)


@pytest.mark.parametrize("device", DEVICES)
def test_atleast_nd_and_isin_match_numpy(device):
    for shape in [(), (4,), (2, 3), (2, 3, 4)]:
        a = rng.standard_normal(shape)
        t = lazyscope.tensor(a, device=device)
        for n, ref in ((1, np.atleast_1d), (2, np.atleast_2d), (3, np.atleast_3d)):
            got = getattr(lazyscope, f"atleast_{n}d")(t).numpy()
            assert got.shape == ref(a).shape, (n, shape)
            np.testing.assert_array_equal(got, ref(a))
    x, y = lazyscope.atleast_2d(lazyscope.tensor(1.0), lazyscope.ones(3))
    assert tuple(x.shape) == (1, 1) and tuple(y.shape) == (1, 3)
    e = rng.integers(0, 10, size=(3, 5))
    tests = np.array([1, 4, 7])
    got = lazyscope.isin(lazyscope.tensor(e, device=device), lazyscope.tensor(tests, device=device))
    np.testing.assert_array_equal(got.numpy(), np.isin(e, tests))
    np.testing.assert_array_equal(lazyscope.isin(lazyscope.tensor(e, device=device), 4, invert=True).numpy(),
                                  np.isin(e, [4], invert=True))


@pytest.mark.parametrize("device", DEVICES)
def test_xlogy_copysign_float_power_match_numpy(device):
    x = np.array([0.0, 0.0, 1.5, -2.0, 3.0, 0.0])
    y = np.array([0.0, np.nan, 2.0, 3.0, 0.5, 4.0])
    with np.errstate(all="ignore"):
        want = np.where((x == 0) & ~np.isnan(y), 0.0, x * np.log(y))
    got = lazyscope.xlogy(lazyscope.tensor(x, device=device), lazyscope.tensor(y, device=device)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-12)
    check(lambda a, b: lazyscope.xlogy(a, b), lambda a, b: a * np.log(b),
          [rng.standard_normal(4), np.abs(rng.standard_normal(4)) + 0.5], device)
    a = np.array([1.0, -2.0, 3.0, -0.0, 5.0])
    b = np.array([-1.0, 2.0, -0.0, 1.0, np.inf])
    np.testing.assert_array_equal(lazyscope.copysign(lazyscope.tensor(a, device=device),
                                                     lazyscope.tensor(b, device=device)).numpy(), np.copysign(a, b))
    f = lazyscope.float_power(lazyscope.tensor(np.array([2, 3, 4], dtype=np.int32), device=device), 0.5)
    assert f.dtype == lazyscope.float64
    np.testing.assert_allclose(f.numpy(), np.float_power([2, 3, 4], 0.5), rtol=1e-15)


@pytest.mark.parametrize("device", DEVICES)
def test_trapezoid_and_cumulative_trapezoid_match_numpy(device):
    y = rng.standard_normal((3, 7))
    x = np.sort(rng.uniform(0, 5, size=7))
    t = lazyscope.tensor(y, device=device)
    np.testing.assert_allclose(lazyscope.trapezoid(t).numpy(), np.trapz(y), rtol=1e-12)
    np.testing.assert_allclose(lazyscope.trapz(t, dx=0.5).numpy(), np.trapz(y, dx=0.5), rtol=1e-12)
    np.testing.assert_allclose(lazyscope.trapezoid(t, lazyscope.tensor(x, device=device)).numpy(), np.trapz(y, x),
                               rtol=1e-12)
    np.testing.assert_allclose(lazyscope.trapezoid(t, dim=0).numpy(), np.trapz(y, axis=0), rtol=1e-12)
    mid = (y[:, 1:] + y[:, :-1]) / 2
    np.testing.assert_allclose(lazyscope.cumulative_trapezoid(t, lazyscope.tensor(x, device=device)).numpy(),
                               np.cumsum(mid * np.diff(x), axis=1), rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_and_nanquantile_match_numpy(device, method):
    a = rng.standard_normal((4, 9))
    t = lazyscope.tensor(a, device=device)
    q = [0.0, 0.1, 0.5, 0.75, 1.0]
    np.testing.assert_allclose(lazyscope.quantile(t, lazyscope.tensor(q, dtype=lazyscope.float64), dim=1, interpolation=method).numpy(),
                               np.quantile(a, q, axis=1, method=method), rtol=1e-12)
    np.testing.assert_allclose(t.quantile(0.3, dim=0, keepdim=True, interpolation=method).numpy(),
                               np.quantile(a, 0.3, axis=0, keepdims=True, method=method), rtol=1e-12)
    np.testing.assert_allclose(lazyscope.quantile(t, 0.6, interpolation=method).numpy(),
                               np.quantile(a, 0.6, method=method), rtol=1e-12)
    b = a.copy()
    b[1, 3] = b[2, 0] = b[2, 5] = np.nan
    b[3, :] = np.nan
    tb = lazyscope.tensor(b, device=device)
    with np.errstate(all="ignore"), np.testing.suppress_warnings() as sup:
        sup.filter(RuntimeWarning)
        np.testing.assert_allclose(lazyscope.nanquantile(tb, 0.4, dim=1, interpolation=method).numpy(),
                                   np.nanquantile(b, 0.4, axis=1, method=method), rtol=1e-12)
    np.testing.assert_allclose(lazyscope.quantile(tb, 0.4, dim=1).numpy(), np.quantile(b, 0.4, axis=1),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="q must be a scalar or 1-D, with values in"):
        lazyscope.quantile(t, 1.5)


@pytest.mark.parametrize("device", DEVICES)
def test_quantile_gradient_and_histc(device):
    check(lambda t: lazyscope.quantile(t, 0.35, dim=1), lambda a: np.quantile(a, 0.35, axis=1),
          [rng.standard_normal((3, 6))], device)
    a = rng.standard_normal(200)
    got = lazyscope.histc(lazyscope.tensor(a, device=device), bins=7, min=-1.5, max=2.0).numpy()
    np.testing.assert_array_equal(got, np.histogram(a, bins=7, range=(-1.5, 2.0))[0])
    got = lazyscope.tensor(a, device=device).histc(bins=5).numpy()  # the data's range
    np.testing.assert_array_equal(got, np.histogram(a, bins=5)[0])


def scatter_reduce_ref(self, dim, index, src, reduce, include_self):
    out = self.astype(np.float64).copy()
    groups = {}
    for pos in np.ndindex(index.shape):
        target = list(pos)
        target[dim] = index[pos]
        groups.setdefault(tuple(target), []).append(src[pos])
    for target, vals in groups.items():
        vals = ([self[target]] if include_self else []) + vals
        f = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
        out[target] = f(vals)
        if reduce == "mean" and not np.issubdtype(self.dtype, np.floating):
            out[target] = np.floor(out[target])
    return out.astype(self.dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_a_loop(device, reduce, include_self):
    self_ = rng.standard_normal((3, 5))
    src = rng.standard_normal((3, 7))
    index = rng.integers(0, 4, size=(3, 6))  # slot 4 never written; src's last column not read
    got = lazyscope.tensor(self_, device=device).scatter_reduce(
        1, lazyscope.tensor(index, device=device), lazyscope.tensor(src, device=device), reduce,
        include_self=include_self)
    np.testing.assert_allclose(got.numpy(), scatter_reduce_ref(self_, 1, index, src, reduce, include_self),
                               rtol=1e-12)
    idx0 = rng.integers(0, 3, size=(4, 5))
    src0 = rng.integers(-9, 9, size=(4, 5))
    self0 = rng.integers(-9, 9, size=(3, 5))
    got0 = lazyscope.scatter_reduce(lazyscope.tensor(self0, device=device), 0, lazyscope.tensor(idx0, device=device),
                                    lazyscope.tensor(src0, device=device), reduce, include_self=include_self)
    np.testing.assert_array_equal(got0.numpy(), scatter_reduce_ref(self0, 0, idx0, src0, reduce, include_self))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduce", ["sum", "prod", "amax"])
def test_scatter_reduce_gradients_and_errors(device, reduce):
    index = lazyscope.tensor(np.array([[0, 2, 0, 1]]), device=device)
    check(lambda s, x: s.scatter_reduce(1, index, x, reduce),
          lambda s, x: scatter_reduce_ref(s, 1, np.array([[0, 2, 0, 1]]), x, reduce, True),
          [rng.standard_normal((1, 3)), rng.standard_normal((1, 4))], device)
    with pytest.raises(ValueError, match="reduce must be one of"):
        lazyscope.ones(3).scatter_reduce(0, lazyscope.tensor(np.array([0])), lazyscope.ones(1), "max")
    with pytest.raises(IndexError, match="index out of range for dimension 0 of size 3"):
        lazyscope.ones(3).scatter_reduce(0, lazyscope.tensor(np.array([3])), lazyscope.ones(1), "sum")


@pytest.mark.parametrize("device", DEVICES)
def test_tan_and_the_inverse_hyperbolics_match_numpy_and_finite_differences(device):
    x = np.array([-1.2, -0.3, 1e-9, 0.7, 1.4])
    np.testing.assert_allclose(lazyscope.tan(lazyscope.tensor(x, device=device)).numpy(), np.tan(x), rtol=1e-14)
    a = np.array([-1e200, -3.0, -0.5, -1e-12, 0.0, 1e-9, 0.5, 2.0, 1e200])
    np.testing.assert_allclose(lazyscope.asinh(lazyscope.tensor(a, device=device)).numpy(), np.arcsinh(a),
                               rtol=1e-14)
    b = np.array([1.0, 1.0 + 1e-12, 1.5, 10.0, 1e200])
    np.testing.assert_allclose(lazyscope.tensor(b, device=device).arccosh().numpy(), np.arccosh(b), rtol=1e-12,
                               atol=1e-15)
    c = np.array([-0.99, -1e-9, 0.3, 0.999999])
    np.testing.assert_allclose(lazyscope.arctanh(lazyscope.tensor(c, device=device)).numpy(), np.arctanh(c),
                               rtol=1e-14)
    with np.errstate(all="ignore"):
        edge = lazyscope.atanh(lazyscope.tensor(np.array([-1.0, 1.0, 2.0]), device=device)).numpy()
    assert edge[0] == -np.inf and edge[1] == np.inf and np.isnan(edge[2])
    f32 = lazyscope.asinh(lazyscope.tensor(np.array([1e-6, 3.0, 1e30], dtype=np.float32), device=device)).numpy()
    np.testing.assert_allclose(f32, np.arcsinh(np.array([1e-6, 3.0, 1e30])), rtol=1e-6)
    for fn, ref, pts in ((lazyscope.tan, np.tan, [-1.0, 0.2, 1.1]), (lazyscope.asinh, np.arcsinh, [-2.0, 0.3, 4.0]),
                         (lazyscope.acosh, np.arccosh, [1.2, 2.0, 7.0]), (lazyscope.atanh, np.arctanh, [-0.8, 0.1])):
        check(lambda t, f=fn: f(t), ref, [np.array(pts)], device)


@pytest.mark.parametrize("device", DEVICES)
def test_aliases_real_tensors_var_mean_renorm_ldexp_mvlgamma(device):
    import math
    a = rng.standard_normal((3, 4))
    t = lazyscope.tensor(a, device=device)
    np.testing.assert_array_equal(lazyscope.absolute(t).numpy(), np.abs(a))
    np.testing.assert_array_equal(t.multiply(2.0).numpy(), a * 2.0)
    np.testing.assert_array_equal(lazyscope.subtract(t, 1.0).numpy(), a - 1.0)
    np.testing.assert_array_equal(lazyscope.positive(t).numpy(), a)
    np.testing.assert_array_equal(t.conj().numpy(), a)
    np.testing.assert_array_equal(t.real.numpy(), a)
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        t.imag
    v, m = t.var_mean(1)
    np.testing.assert_allclose(v.numpy(), a.var(1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(m.numpy(), a.mean(1), rtol=1e-12)
    r = lazyscope.renorm(t, 2, 0, 1.0).numpy()
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    np.testing.assert_allclose(r, np.where(norms > 1.0, a / (norms + 1e-7), a), rtol=1e-12)
    np.testing.assert_allclose(lazyscope.ldexp(t, lazyscope.tensor(np.array([1, 2, -1, 0]), device=device)).numpy(),
                               np.ldexp(a, [1, 2, -1, 0]), rtol=1e-15)
    x = np.array([2.5, 4.0, 10.0])
    want = np.array([sum(math.lgamma(v - i / 2) for i in range(3)) + 3 * 2 / 4 * math.log(math.pi) for v in x])
    np.testing.assert_allclose(lazyscope.mvlgamma(lazyscope.tensor(x, device=device), 3).numpy(), want, rtol=1e-13)
    with pytest.raises(ValueError, match="greater than"):
        lazyscope.mvlgamma(lazyscope.tensor(np.array([0.5])), 3)
