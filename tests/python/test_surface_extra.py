"""_surface_extra's functions against NumPy (and itertools, math): aliases,
asarray, addbmm, chain_matmul, combinations, dsplit, unflatten,
unravel_index, vander, select/slice/masked scatters, index_add,
narrow_copy, range, gradient, matrix_exp (with its gradient by finite
differences of a NumPy series), unique_consecutive, histogram, poisson;
both devices."""
import itertools
import math

import numpy as np
import pytest

import lazyscope

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(11)


def t(a, dev, dtype=None):
    return lazyscope.tensor(np.asarray(a), device=dev, dtype=dtype)


@pytest.mark.parametrize("dev", DEVICES)
def test_aliases_products_and_builders(dev):
    a, b = rng.standard_normal(5), rng.standard_normal(5)
    for name, op in (("greater", np.greater), ("greater_equal", np.greater_equal), ("less", np.less),
                     ("less_equal", np.less_equal), ("not_equal", np.not_equal)):
        np.testing.assert_array_equal(getattr(lazyscope, name)(t(a, dev), t(b, dev)).numpy(), op(a, b))
        np.testing.assert_array_equal(getattr(t(a, dev), name)(t(b, dev)).numpy(), op(a, b))
    x = t(a, dev)
    assert lazyscope.asarray(x) is x and lazyscope.asarray(x, copy=True) is not x
    np.testing.assert_array_equal(lazyscope.asarray([1, 2], dtype=lazyscope.float64).numpy(), [1.0, 2.0])
    m, b1, b2 = rng.standard_normal((3, 4)), rng.standard_normal((5, 3, 2)), rng.standard_normal((5, 2, 4))
    np.testing.assert_allclose(lazyscope.addbmm(t(m, dev), t(b1, dev), t(b2, dev), beta=0.5, alpha=2).numpy(),
                               0.5 * m + 2 * np.einsum("bij,bjk->ik", b1, b2), rtol=1e-12)
    mats = [rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((4, 2))]
    np.testing.assert_allclose(lazyscope.chain_matmul(*[t(q, dev) for q in mats]).numpy(),
                               mats[0] @ mats[1] @ mats[2], rtol=1e-12)
    v = np.array([3.0, 1.0, 4.0, 1.5])
    for r, rep in ((2, False), (3, False), (2, True)):
        pick = itertools.combinations_with_replacement if rep else itertools.combinations
        np.testing.assert_array_equal(lazyscope.combinations(t(v, dev), r, rep).numpy(), np.array(list(pick(v, r))))
    np.testing.assert_allclose(lazyscope.vander(t(v, dev)).numpy(), np.vander(v), rtol=1e-12)
    np.testing.assert_allclose(lazyscope.vander(t(v, dev), 3, increasing=True).numpy(),
                               np.vander(v, 3, increasing=True), rtol=1e-12)
    c = rng.standard_normal((2, 3, 6))
    for got, want in zip(lazyscope.dsplit(t(c, dev), 3), np.dsplit(c, 3)):
        np.testing.assert_array_equal(got.numpy(), want)
    assert tuple(lazyscope.unflatten(t(c, dev), 2, (2, 3)).shape) == (2, 3, 2, 3)
    rows, cols = lazyscope.unravel_index(t(np.array([0, 5, 7, 11]), dev), (3, 4))
    want_r, want_c = np.unravel_index([0, 5, 7, 11], (3, 4))
    np.testing.assert_array_equal(rows.numpy(), want_r)
    np.testing.assert_array_equal(cols.numpy(), want_c)
    with pytest.raises(RuntimeError, match="out of bounds for shape \\[3, 4\\]"):
        lazyscope.unravel_index(t(np.array([12]), dev), (3, 4))
    np.testing.assert_allclose(lazyscope.range(1, 2.0, 0.25).numpy(), [1.0, 1.25, 1.5, 1.75, 2.0])


@pytest.mark.parametrize("dev", DEVICES)
def test_scatters_and_copies(dev):
    x = rng.standard_normal((4, 5))
    src = rng.standard_normal(5)
    want = x.copy()
    want[2] = src
    np.testing.assert_array_equal(lazyscope.select_scatter(t(x, dev), t(src, dev), 0, -2).numpy(), want)
    s2 = rng.standard_normal((4, 2))
    want = x.copy()
    want[:, 1:5:2] = s2
    np.testing.assert_array_equal(lazyscope.slice_scatter(t(x, dev), t(s2, dev), 1, 1, 5, 2).numpy(), want)
    mask = rng.random((4, 5)) > 0.5
    source = rng.standard_normal(20)
    want = x.copy()
    want[mask] = source[:mask.sum()]
    np.testing.assert_array_equal(t(x, dev).masked_scatter(t(mask, dev), t(source, dev)).numpy(), want)
    idx = np.array([0, 2, 0])
    add = rng.standard_normal((3, 5))
    want = x.copy()
    np.add.at(want, idx, 2 * add)
    np.testing.assert_allclose(lazyscope.index_add(t(x, dev), 0, t(idx, dev), t(add, dev), alpha=2).numpy(), want,
                               rtol=1e-12)
    np.testing.assert_array_equal(lazyscope.narrow_copy(t(x, dev), 1, 1, 3).numpy(), x[:, 1:4])
    # masked_scatter's gradient reaches the source entries it used.
    srct = t(source, dev).requires_grad_()
    lazyscope.masked_scatter(t(x, dev), t(mask, dev), srct).sum().backward()
    np.testing.assert_array_equal(srct.grad.numpy(), (np.arange(20) < mask.sum()).astype(float))


@pytest.mark.parametrize("dev", DEVICES)
def test_gradient_matches_numpy(dev):
    f = rng.standard_normal((5, 6))
    for edge in (1, 2):
        got = lazyscope.gradient(t(f, dev), spacing=[0.5, 2.0], edge_order=edge)
        for g, w in zip(got, np.gradient(f, 0.5, 2.0, edge_order=edge)):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-12)
    (g1,) = lazyscope.gradient(t(f, dev), dim=1)
    np.testing.assert_allclose(g1.numpy(), np.gradient(f, axis=1), rtol=1e-12)


def expm_series(a, terms=40):
    """e^a by its Taylor series on a / 2^s (norm below 1/2, no cancellation), squared s times."""
    s = max(0, int(np.ceil(np.log2(max(np.abs(a).sum(0).max(), 1e-300) / 0.5))))
    b = a / 2.0 ** s
    out, term = np.eye(a.shape[-1]), np.eye(a.shape[-1])
    for k in range(1, terms):
        term = term @ b / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


@pytest.mark.parametrize("dev", DEVICES)
def test_matrix_exp_matches_the_series_and_its_gradient_differences(dev):
    for scale in (0.1, 1.0, 8.0):  # 8: past theta_13, so squarings run
        a = rng.standard_normal((4, 4)) * scale
        np.testing.assert_allclose(lazyscope.matrix_exp(t(a, dev)).numpy(), expm_series(a), rtol=1e-10,
                                   atol=1e-10 * np.abs(expm_series(a)).max())
    a = rng.standard_normal((3, 3))
    w = rng.standard_normal((3, 3))
    at = t(a, dev).requires_grad_()
    (lazyscope.linalg.matrix_exp(at) * t(w, dev)).sum().backward()
    fd = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += 1e-6
        down[i] -= 1e-6
        fd[i] = ((expm_series(up) - expm_series(down)) * w).sum() / 2e-6
    np.testing.assert_allclose(at.grad.numpy(), fd, rtol=1e-6, atol=1e-8)
    batch = rng.standard_normal((2, 3, 3))
    np.testing.assert_allclose(lazyscope.matrix_exp(t(batch, dev)).numpy(),
                               np.stack([expm_series(m) for m in batch]), rtol=1e-10)


@pytest.mark.parametrize("dev", DEVICES)
def test_data_dependent_functions_match_numpy(dev):
    v = np.array([1, 1, 2, 2, 2, 3, 1, 1])
    out, inv, counts = lazyscope.unique_consecutive(t(v, dev), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(out.numpy(), [1, 2, 3, 1])
    np.testing.assert_array_equal(inv.numpy(), [0, 0, 1, 1, 1, 2, 3, 3])
    np.testing.assert_array_equal(counts.numpy(), [2, 3, 1, 2])
    x = rng.standard_normal(1000)
    hist, edges = lazyscope.histogram(t(x, dev), 7, range=(-2.0, 2.0))
    want_h, want_e = np.histogram(x, 7, range=(-2.0, 2.0))
    np.testing.assert_array_equal(hist.numpy(), want_h)
    np.testing.assert_allclose(edges.numpy(), want_e, rtol=1e-12)
    lazyscope.manual_seed(3)
    rates = np.array([0.5, 4.0, 20.0])
    draws = lazyscope.poisson(t(np.tile(rates, (20000, 1)), dev)).numpy()
    np.testing.assert_allclose(draws.mean(0), rates, atol=5 * np.sqrt(rates / 20000).max())
    np.testing.assert_allclose(draws.var(0), rates, rtol=0.05)
    assert math.isclose(float(draws.min()), 0.0)


@pytest.mark.parametrize("dev", DEVICES)
def test_tensor_methods_fill_strides_and_puts(dev):
    x = t(np.zeros((3, 4)), dev)
    x.fill_diagonal_(2.0)
    want = np.zeros((3, 4))
    np.fill_diagonal(want, 2.0)
    np.testing.assert_array_equal(x.numpy(), want)
    tall = t(np.zeros((7, 3)), dev)
    tall.fill_diagonal_(1.0, wrap=True)
    want = np.zeros((7, 3))
    np.fill_diagonal(want, 1.0, wrap=True)
    np.testing.assert_array_equal(tall.numpy(), want)
    a = np.zeros((2, 3, 4))
    assert t(a, dev).stride() == tuple(s // 8 for s in a.strides) and t(a, dev).stride(1) == 4
    b = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(t(b, dev).sum_to_size(3, 1).numpy(), b.sum(0).sum(-1, keepdims=True), rtol=1e-12)
    with pytest.raises(RuntimeError, match="not expandable"):
        t(b, dev).sum_to_size(5)
    y = t(np.zeros(6), dev)
    y.put_(t(np.array([0, 5, -1, 2]), dev), t(np.array([1.0, 2.0, 3.0, 4.0]), dev), accumulate=True)
    np.testing.assert_array_equal(y.numpy(), [1.0, 0.0, 4.0, 0.0, 0.0, 5.0])
    z = t(np.zeros((2, 2)), dev)
    z.put_(t(np.array([3]), dev), t(np.array([7.0]), dev))
    np.testing.assert_array_equal(z.numpy(), [[0.0, 0.0], [0.0, 7.0]])
    u, v = rng.standard_normal(3), rng.standard_normal(2)
    np.testing.assert_allclose(t(u, dev).ger(t(v, dev)).numpy(), np.outer(u, v))
    assert t(u, dev).pin_memory() is not None and not t(u, dev).is_pinned()
    upper = np.triu(rng.standard_normal((3, 3))) + 3 * np.eye(3)
    rhs = rng.standard_normal((3, 2))
    sol, coeff = lazyscope.triangular_solve(t(rhs, dev), t(upper, dev))
    np.testing.assert_allclose(sol.numpy(), np.linalg.solve(upper, rhs), rtol=1e-12)
    np.testing.assert_array_equal(coeff.numpy(), upper)
    sol_t, _ = t(rhs, dev).triangular_solve(t(upper, dev), transpose=True)
    np.testing.assert_allclose(sol_t.numpy(), np.linalg.solve(upper.T, rhs), rtol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
def test_in_place_random_fills_follow_their_distributions(dev):
    lazyscope.manual_seed(5)
    n = 100000
    e = t(np.zeros(n), dev).exponential_(2.0).numpy()
    assert abs(e.mean() - 0.5) < 5 * 0.5 / np.sqrt(n) and e.min() >= 0
    g = t(np.zeros(n), dev).geometric_(0.25).numpy()
    assert abs(g.mean() - 4.0) < 5 * np.sqrt(0.75 / 0.25 ** 2 / n) and g.min() >= 1
    ln = t(np.zeros(n), dev).log_normal_(0.5, 0.25).numpy()
    assert abs(np.log(ln).mean() - 0.5) < 5 * 0.25 / np.sqrt(n)
    c = t(np.zeros(n), dev).cauchy_(1.0, 2.0).numpy()
    assert abs(np.median(c) - 1.0) < 0.05
    bern = t(np.zeros(n), dev).bernoulli_(0.3).numpy()
    assert set(np.unique(bern)) <= {0.0, 1.0} and abs(bern.mean() - 0.3) < 5 * np.sqrt(0.21 / n)
    r = t(np.zeros(n, dtype=np.int64), dev).random_(3, 7).numpy()
    assert r.min() == 3 and r.max() == 6
