"""torch functions added as compositions (_surface_functions.py): values
against NumPy's equivalents (numpy.moveaxis, nansum, logaddexp, hypot, cov,
corrcoef, tril_indices, …), gradients against central differences of the
NumPy forward, random draws by their statistics, and the errors."""
import math

import numpy as np
import pytest

import lazyscope
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(41)


def to(a, device):
    return lazyscope.tensor(a, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_dim_reordering(device):
    x = rng.standard_normal((2, 3, 4, 5))
    t = to(x, device)
    np.testing.assert_array_equal(lazyscope.movedim(t, 1, -1).numpy(), np.moveaxis(x, 1, -1))
    np.testing.assert_array_equal(t.moveaxis((0, 3), (2, 0)).numpy(), np.moveaxis(x, (0, 3), (2, 0)))
    np.testing.assert_array_equal(lazyscope.swapaxes(t, 0, 2).numpy(), np.swapaxes(x, 0, 2))
    np.testing.assert_array_equal(t.swapdims(1, 3).numpy(), np.swapaxes(x, 1, 3))
    np.testing.assert_array_equal(lazyscope.tile(t[0, 0], (2, 1, 3)).numpy(), np.tile(x[0, 0], (2, 1, 3)))
    np.testing.assert_array_equal(t.tile(2).numpy(), np.tile(x, 2))
    np.testing.assert_array_equal(t.ravel().numpy(), x.ravel())
    with pytest.raises(ValueError, match=r"movedim: Invalid source or destination dims"):
        lazyscope.movedim(t, (0, 1), 2)


@pytest.mark.parametrize("device", DEVICES)
def test_take_along_dim_matches_numpy(device):
    x = rng.standard_normal((3, 5))
    idx = np.argsort(x, axis=1)[:, :2]
    got = lazyscope.take_along_dim(to(x, device), to(idx, device), dim=1)
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(x, idx, axis=1))
    flat = lazyscope.take_along_dim(to(x, device), to(np.array([0, 7, 14]), device))
    np.testing.assert_array_equal(flat.numpy(), x.ravel()[[0, 7, 14]])
    col = np.array([[1], [0], [4]])  # broadcast over nothing; a [1, 5] index row broadcasts over rows
    np.testing.assert_array_equal(to(x, device).take_along_dim(to(col, device), 1).numpy(),
                                  np.take_along_axis(x, col, 1))


@pytest.mark.parametrize("device", DEVICES)
def test_nan_ignoring_reductions(device):
    x = rng.standard_normal((4, 5))
    x[0, 1] = x[2, 3] = np.nan
    x[3, :] = np.nan
    t = to(x, device)
    np.testing.assert_allclose(lazyscope.nansum(t).numpy(), np.nansum(x), rtol=1e-12)
    np.testing.assert_allclose(t.nansum(1).numpy(), np.nansum(x, 1), rtol=1e-12)
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanmean(x, 1)
    np.testing.assert_allclose(lazyscope.nanmean(t, 1).numpy(), want, rtol=1e-12)  # all-NaN row: NaN
    np.testing.assert_allclose(t.nanmean().numpy(), np.nanmean(x), rtol=1e-12)


BINARY = [
    ("logaddexp", lazyscope.logaddexp if hasattr(lazyscope, "logaddexp") else None, np.logaddexp),
    ("logaddexp2", getattr(lazyscope, "logaddexp2", None), np.logaddexp2),
    ("hypot", getattr(lazyscope, "hypot", None), np.hypot),
    ("fmax", getattr(lazyscope, "fmax", None), np.fmax),
    ("fmin", getattr(lazyscope, "fmin", None), np.fmin),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref", BINARY, ids=[b[0] for b in BINARY])
def test_binary_math_matches_numpy_including_extremes(device, name, fn, ref):
    a = rng.standard_normal((3, 4)) * 3
    b = rng.standard_normal((3, 4)) * 3
    a[0, :4] = [800.0, -800.0, np.inf, -np.inf]
    b[0, :4] = [799.0, -801.0, np.inf, -np.inf]
    a[1, 0], b[1, 1] = np.nan, np.nan
    a[2, 0], b[2, 0] = 1e200, 1e200
    with np.errstate(all="ignore"):
        want = ref(a, b)
    np.testing.assert_allclose(fn(to(a, device), to(b, device)).numpy(), want, rtol=1e-12)
    check(fn, ref, [rng.standard_normal((2, 3)), rng.standard_normal((2, 3))], device)


UNARY = [
    ("sgn", lambda t: lazyscope.sgn(t), np.sign),
    ("deg2rad", lambda t: lazyscope.deg2rad(t), np.deg2rad),
    ("rad2deg", lambda t: t.rad2deg(), np.rad2deg),
    ("sinc", lambda t: lazyscope.sinc(t), np.sinc),
    ("erfc", lambda t: lazyscope.erfc(t), np.vectorize(math.erfc)),
    ("heaviside", lambda t: lazyscope.heaviside(t, lazyscope.tensor(0.5, dtype=t.dtype, device=t.device)),
     lambda x: np.heaviside(x, 0.5)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref", UNARY, ids=[u[0] for u in UNARY])
def test_unary_math_matches_numpy(device, name, fn, ref):
    x = rng.standard_normal(9) * 2
    x[:2] = [0.0, 1.0]
    np.testing.assert_allclose(fn(to(x, device)).numpy(), ref(x), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("device", DEVICES)
def test_sinc_gradient_and_dist(device):
    check(lazyscope.sinc, np.sinc, [rng.standard_normal(5) + 0.3], device)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(4)
    for p in (1, 2, 3.5, math.inf, -math.inf, 0):
        want = np.linalg.norm((a - b).ravel(), ord=p)
        assert lazyscope.dist(to(a, device), to(b, device), p).item() == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_cross_product_matches_numpy(device):
    a, b = rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 3, 2))
    np.testing.assert_allclose(lazyscope.cross(to(a, device), to(b, device), dim=1).numpy(),
                               np.cross(a, b, axis=1), rtol=1e-12)
    np.testing.assert_allclose(to(a, device).cross(to(b, device)).numpy(), np.cross(a, b, axis=1), rtol=1e-12)
    with pytest.raises(ValueError, match="cross: inputs must have size 3 in dim 2"):
        lazyscope.cross(to(a, device), to(b, device), dim=2)


@pytest.mark.parametrize("device", DEVICES)
def test_statistics_match_numpy(device):
    x = rng.standard_normal((3, 7))
    t = to(x, device)
    std, mean = lazyscope.std_mean(t, 1)
    np.testing.assert_allclose(std.numpy(), x.std(1, ddof=1), rtol=1e-12)
    np.testing.assert_allclose(mean.numpy(), x.mean(1), rtol=1e-12)
    lo, hi = lazyscope.aminmax(t, dim=0)
    np.testing.assert_array_equal(lo.numpy(), x.min(0))
    np.testing.assert_array_equal(hi.numpy(), x.max(0))
    np.testing.assert_allclose(lazyscope.cov(t).numpy(), np.cov(x), rtol=1e-12)
    np.testing.assert_allclose(t.cov(correction=0).numpy(), np.cov(x, ddof=0), rtol=1e-12)
    fw = np.array([1, 2, 1, 3, 1, 1, 2])
    aw = rng.uniform(0.5, 2.0, 7)
    np.testing.assert_allclose(lazyscope.cov(t, fweights=to(fw, device), aweights=to(aw, device)).numpy(),
                               np.cov(x, fweights=fw, aweights=aw), rtol=1e-12)
    np.testing.assert_allclose(lazyscope.corrcoef(t).numpy(), np.corrcoef(x), rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_kthvalue_is_the_kth_smallest_with_its_index(device):
    x = rng.standard_normal((4, 6))
    values, indices = lazyscope.kthvalue(to(x, device), 3, dim=1)
    order = np.argsort(x, axis=1, kind="stable")
    np.testing.assert_array_equal(indices.numpy(), order[:, 2])
    np.testing.assert_array_equal(values.numpy(), np.sort(x, 1)[:, 2])
    v, i = to(x, device).kthvalue(1, 0, keepdim=True)
    assert v.shape == (1, 6) and np.array_equal(v.numpy()[0], x.min(0))
    with pytest.raises(IndexError, match=r"kthvalue: k \(7\) is out of range for dimension 1 of size 6"):
        lazyscope.kthvalue(to(x, device), 7, 1)


def test_index_builders():
    for fn, ref in ((lazyscope.tril_indices, np.tril_indices), (lazyscope.triu_indices, np.triu_indices)):
        for row, col, offset in ((4, 4, 0), (3, 5, 1), (5, 3, -1)):
            np.testing.assert_array_equal(fn(row, col, offset).numpy(), np.stack(ref(row, offset, col)))
    np.testing.assert_allclose(lazyscope.logspace(-1, 2, 4).numpy(), np.logspace(-1, 2, 4), rtol=1e-6)
    np.testing.assert_allclose(lazyscope.logspace(0, 3, 4, base=2.0, dtype=lazyscope.float64).numpy(),
                               [1, 2, 4, 8])
    a, b, c = np.arange(4.0).reshape(2, 2), np.array([5.0, 6.0, 7.0]), np.array(9.0)
    want = np.zeros((4, 6))
    want[:2, :2], want[2, 2:5], want[3, 5] = a, b, c
    got = lazyscope.block_diag(lazyscope.tensor(a), lazyscope.tensor(b), lazyscope.tensor(c))
    np.testing.assert_array_equal(got.numpy(), want)
    p, q = np.array([1, 2, 3]), np.array([4, 5])
    np.testing.assert_array_equal(lazyscope.cartesian_prod(lazyscope.tensor(p), lazyscope.tensor(q)).numpy(),
                                  np.array([[i, j] for i in p for j in q]))
    assert lazyscope.broadcast_shapes((2, 1), (3,), 1) == (2, 3)
    with pytest.raises(RuntimeError, match=r"broadcast_shapes: shapes \[\[2\], \[3\]\] cannot be broadcast"):
        lazyscope.broadcast_shapes((2,), (3,))


@pytest.mark.parametrize("device", DEVICES)
def test_index_copy_and_fill_replace_slices_with_gradients(device):
    x = rng.standard_normal((5, 3))
    src = rng.standard_normal((2, 3))
    idx = np.array([3, 0])
    want = x.copy()
    want[idx] = src
    np.testing.assert_array_equal(lazyscope.index_copy(to(x, device), 0, to(idx, device), to(src, device)).numpy(),
                                  want)
    filled = x.copy()
    filled[:, [2]] = -1.5
    np.testing.assert_array_equal(to(x, device).index_fill(1, to(np.array([2]), device), -1.5).numpy(), filled)

    def ref(a, s):
        out = a.copy()
        out[idx] = s
        return out

    check(lambda t, s: lazyscope.index_copy(t, 0, lazyscope.tensor(idx, device=t.device), s), ref, [x, src], device)


@pytest.mark.parametrize("device", DEVICES)
def test_random_draws_have_their_distributions(device):
    lazyscope.manual_seed(0)
    probs = np.linspace(0.05, 0.95, 10)
    draws = np.stack([lazyscope.bernoulli(to(probs, device)).numpy() for _ in range(2000)])
    assert set(np.unique(draws)) <= {0.0, 1.0}
    np.testing.assert_allclose(draws.mean(0), probs, atol=0.04)
    n = lazyscope.normal(to(np.full(20000, 3.0), device), 2.0).numpy()
    assert abs(n.mean() - 3.0) < 0.05 and abs(n.std() - 2.0) < 0.05
    m = lazyscope.normal(1.0, 0.5, size=(4, 5))
    assert m.shape == (4, 5)


@pytest.mark.parametrize("device", DEVICES)
def test_selection_splitting_and_stacking(device):
    x = rng.standard_normal((4, 5, 6))
    t = to(x, device)
    np.testing.assert_array_equal(t.select(1, -2).numpy(), x[:, -2])
    idx = np.array([[0, 119], [-1, 7]])
    np.testing.assert_array_equal(lazyscope.take(t, to(idx, device)).numpy(), np.take(x, idx))
    for sections in (3, [1, 4, 9]):
        got = [p.numpy() for p in lazyscope.tensor_split(t, sections, dim=2)]
        want = np.array_split(x, sections, axis=2)
        assert len(got) == len(want) and all(np.array_equal(g, w) for g, w in zip(got, want))
    assert [p.shape for p in lazyscope.hsplit(t, 5)] == [tuple(a.shape) for a in np.hsplit(x, 5)]
    a, b = rng.standard_normal(3), rng.standard_normal(3)
    np.testing.assert_array_equal(lazyscope.dstack([to(a, device), to(b, device)]).numpy(), np.dstack([a, b]))
    np.testing.assert_array_equal(lazyscope.column_stack([to(a, device), to(x[0, :3, :2], device)]).numpy(),
                                  np.column_stack([a, x[0, :3, :2]]))
    np.testing.assert_array_equal(lazyscope.row_stack([to(a, device), to(b, device)]).numpy(), np.vstack([a, b]))
    np.testing.assert_array_equal(lazyscope.msort(t).numpy(), np.sort(x, axis=0))
    np.testing.assert_array_equal(t.unfold(2, 3, 2).numpy(),
                                  np.lib.stride_tricks.sliding_window_view(x, 3, axis=2)[:, :, ::2])
    np.testing.assert_array_equal(lazyscope.argwhere(to(x > 0.5, device)).numpy(), np.argwhere(x > 0.5))


@pytest.mark.parametrize("device", DEVICES)
def test_products_rotations_and_diagonals(device):
    m, v, w = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(3)
    np.testing.assert_allclose(lazyscope.mv(to(m, device), to(v, device)).numpy(), m @ v, rtol=1e-12)
    np.testing.assert_allclose(lazyscope.addmv(to(w, device), to(m, device), to(v, device), beta=0.5, alpha=2).numpy(),
                               0.5 * w + 2 * m @ v, rtol=1e-12)
    np.testing.assert_allclose(lazyscope.addr(to(m, device), to(w, device), to(v, device)).numpy(),
                               m + np.outer(w, v), rtol=1e-12)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4))
    np.testing.assert_allclose(lazyscope.inner(to(a, device), to(b, device)).numpy(), np.inner(a, b), rtol=1e-12)
    assert lazyscope.vdot(to(v, device), to(v, device)).item() == pytest.approx(np.vdot(v, v))
    p, q = rng.standard_normal((2, 3)), rng.standard_normal((4, 1, 2))
    np.testing.assert_allclose(lazyscope.kron(to(p, device), to(q, device)).numpy(), np.kron(p, q), rtol=1e-12)
    for k in range(-1, 5):
        np.testing.assert_array_equal(lazyscope.rot90(to(m, device), k).numpy(), np.rot90(m, k))
    np.testing.assert_array_equal(lazyscope.fliplr(to(m, device)).numpy(), np.fliplr(m))
    np.testing.assert_array_equal(to(m, device).flipud().numpy(), np.flipud(m))
    for offset in (-2, 0, 1):
        want = np.stack([np.diag(row, offset) for row in m])
        np.testing.assert_array_equal(lazyscope.diag_embed(to(m, device), offset).numpy(), want)
    np.testing.assert_array_equal(lazyscope.diagflat(to(m[:2, :2], device), 1).numpy(), np.diagflat(m[:2, :2], 1))
    check(lambda t: lazyscope.diag_embed(t, 1), lambda x: np.stack([np.diag(r, 1) for r in x]), [m[:2]], device)


@pytest.mark.parametrize("device", DEVICES)
def test_predicates_in_place_variants_and_sizes(device):
    x = np.array([-1.5, -0.0, 0.0, 2.0, np.inf, -np.inf, np.nan])
    t = to(x, device)
    np.testing.assert_array_equal(lazyscope.signbit(t).numpy(), np.signbit(x) & ~np.isnan(x))
    np.testing.assert_array_equal(lazyscope.isposinf(t).numpy(), np.isposinf(x))
    np.testing.assert_array_equal(t.isneginf().numpy(), np.isneginf(x))
    np.testing.assert_array_equal(lazyscope.logical_xor(t > 0, t < 1).numpy(), np.logical_xor(x > 0, x < 1))
    assert lazyscope.is_nonzero(to(np.array([0.5]), device)) and not lazyscope.is_nonzero(to(np.array(0.0), device))
    y = rng.standard_normal(6) * 3
    for name, ref in (("floor", np.floor), ("reciprocal", np.reciprocal), ("atan", np.arctan), ("sign", np.sign),
                      ("expm1", np.expm1), ("square", np.square)):
        u = to(y, device)
        assert getattr(u, name + "_")() is u
        np.testing.assert_allclose(u.numpy(), ref(y), rtol=1e-12)
    u = to(y, device)
    u.clamp_min_(0.5)
    np.testing.assert_array_equal(u.numpy(), np.maximum(y, 0.5))
    assert t.nbytes == 56 and t.itemsize == t.element_size() == 8 and t.ndimension() == 1 and t.nelement() == 7
    assert t.get_device() == (-1 if device == "cpu" else 0) and not t.is_complex()


def test_dtype_facts():
    f32 = lazyscope.finfo(lazyscope.float32)
    assert (f32.eps, f32.max, f32.tiny, f32.bits, f32.resolution) == (np.finfo(np.float32).eps, np.finfo(np.float32).max,
                                                                       np.finfo(np.float32).tiny, 32, 1e-6)
    assert lazyscope.finfo().bits == 32 and lazyscope.finfo(lazyscope.float16).max == 65504.0
    assert (lazyscope.iinfo(lazyscope.int64).min, lazyscope.iinfo(lazyscope.uint8).max) == (-2 ** 63, 255)
    with pytest.raises(TypeError, match="iinfo: expected an integer dtype"):
        lazyscope.iinfo(lazyscope.float32)
    i32 = lazyscope.tensor(np.array([1], dtype=np.int32))
    assert lazyscope.result_type(i32, 2) == lazyscope.int32
    assert lazyscope.result_type(i32, 2.5) == lazyscope.float32
    assert lazyscope.result_type(i32, lazyscope.tensor(np.array([1.0]))) == lazyscope.float64
    assert lazyscope.promote_types(lazyscope.uint8, lazyscope.int32) == lazyscope.int32
    assert lazyscope.can_cast(lazyscope.int32, lazyscope.float32) and not lazyscope.can_cast(lazyscope.float32,
                                                                                              lazyscope.int64)
    lazyscope.manual_seed(1)
    r = lazyscope.randint_like(i32.expand(1000), 3, 7).numpy()
    assert r.dtype == np.int32 and set(np.unique(r)) == {3, 4, 5, 6}
