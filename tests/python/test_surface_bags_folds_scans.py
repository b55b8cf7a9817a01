"""bilinear, unfold/fold, embedding_bag and the scans (cummax, cummin,
logcumsumexp) on both devices, against NumPy (float64 references, loops
where that is clearest) and float64 central finite differences."""
import numpy as np
import pytest

import lazyscope
from lazyscope import nn
from test_autograd import check

F = nn.functional
DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(909)


# --- bilinear -------------------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
def test_bilinear_matches_numpy_and_finite_differences(device):
    x1, x2 = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 5))
    w, b = rng.standard_normal((6, 4, 5)), rng.standard_normal(6)
    got = F.bilinear(*(lazyscope.tensor(a, device=device) for a in (x1, x2, w, b)))
    np.testing.assert_allclose(got.numpy(), np.einsum("...i,oij,...j->...o", x1, w, x2) + b, rtol=1e-10)
    check(lambda a, c, ww, bb: F.bilinear(a, c, ww, bb),
          lambda a, c, ww, bb: np.einsum("...i,oij,...j->...o", a, ww, c) + bb, [x1, x2, w, b], device)


def test_bilinear_module_init_and_shape_errors():
    lazyscope.manual_seed(0)
    m = nn.Bilinear(16, 3, 7)
    w = m.weight.numpy()
    assert w.shape == (7, 16, 3) and m.bias.shape == (7,)
    assert np.abs(w).max() <= 0.25 and np.abs(w).max() > 0.2  # U(-1/sqrt(16), 1/sqrt(16))
    assert tuple(m(lazyscope.ones(5, 16), lazyscope.ones(5, 3)).shape) == (5, 7)
    with pytest.raises(lazyscope.ShapeError, match="bilinear: inputs"):
        m(lazyscope.ones(5, 16), lazyscope.ones(4, 3))


# --- unfold / fold --------------------------------------------------------------

def unfold_ref(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ch in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                row = (ch * k[0] + i) * k[1] + j
                for a in range(oh):
                    for b in range(ow):
                        out[:, row, a * ow + b] = xp[:, ch, a * s[0] + i * d[0], b * s[1] + j * d[1]]
    return out


def fold_ref(cols, size, k, d, p, s):
    n, ck, _ = cols.shape
    c = ck // (k[0] * k[1])
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    oh = (hp - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (wp - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, hp, wp))
    for ch in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                row = (ch * k[0] + i) * k[1] + j
                for a in range(oh):
                    for b in range(ow):
                        out[:, ch, a * s[0] + i * d[0], b * s[1] + j * d[1]] += cols[:, row, a * ow + b]
    return out[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]


GEOMETRIES = [((2, 2), (1, 1), (0, 0), (1, 1)), ((3, 2), (1, 2), (1, 0), (2, 1)), ((2, 3), (2, 1), (2, 1), (3, 2))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("k, d, p, s", GEOMETRIES)
def test_unfold_and_fold_match_numpy_loops(device, k, d, p, s):
    x = rng.standard_normal((2, 3, 7, 8))
    cols = F.unfold(lazyscope.tensor(x, device=device), k, d, p, s).numpy()
    want = unfold_ref(x, k, d, p, s)
    np.testing.assert_allclose(cols, want, rtol=1e-12, atol=1e-12)
    y = rng.standard_normal(want.shape)
    back = F.fold(lazyscope.tensor(y, device=device), (7, 8), k, d, p, s).numpy()
    np.testing.assert_allclose(back, fold_ref(y, (7, 8), k, d, p, s), rtol=1e-12, atol=1e-12)
    # fold is unfold's adjoint: <unfold(x), y> = <x, fold(y)>.
    np.testing.assert_allclose((want * y).sum(), (x * back).sum(), rtol=1e-10)
    # Unbatched inputs and the modules.
    np.testing.assert_allclose(nn.Unfold(k, d, p, s)(lazyscope.tensor(x[0], device=device)).numpy(), want[0],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(nn.Fold((7, 8), k, d, p, s)(lazyscope.tensor(y[0], device=device)).numpy(),
                               fold_ref(y, (7, 8), k, d, p, s)[0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_unfold_and_fold_gradients_match_finite_differences(device):
    x = rng.standard_normal((1, 2, 4, 5))
    check(lambda t: F.unfold(t, (2, 2), 1, 1, (2, 1)), lambda a: unfold_ref(a, (2, 2), (1, 1), (1, 1), (2, 1)),
          [x], device)
    cols = rng.standard_normal((1, 2 * 4, 12))
    check(lambda t: F.fold(t, (4, 5), (2, 2), 1, 0, 1), lambda a: fold_ref(a, (4, 5), (2, 2), (1, 1), (0, 0), (1, 1)),
          [cols], device)


def test_fold_refuses_columns_that_do_not_make_the_output():
    with pytest.raises(lazyscope.ShapeError, match=r"fold: input \(1, 8, 11\) does not make output_size"):
        F.fold(lazyscope.zeros(1, 8, 11), (4, 5), (2, 2))
    with pytest.raises(ValueError, match="unfold: kernel_size"):
        F.unfold(lazyscope.zeros(1, 1, 4, 4), 0)


# --- embedding_bag --------------------------------------------------------------

def bags_ref(weight, bags, mode, weights=None, padding_idx=None):
    out = np.zeros((len(bags), weight.shape[1]))
    for b, (idx, wts) in enumerate(zip(bags, weights or [None] * len(bags))):
        rows = [(weight[i] * (wts[j] if wts is not None else 1.0)) for j, i in enumerate(idx) if i != padding_idx]
        if not rows:
            continue
        rows = np.stack(rows)
        out[b] = rows.sum(0) if mode == "sum" else rows.mean(0) if mode == "mean" else rows.max(0)
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_with_offsets_and_rows_matches_numpy(device, mode):
    weight = rng.standard_normal((10, 4))
    flat = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0], dtype=np.int64)
    offsets = np.array([0, 3, 3, 7], dtype=np.int64)  # the second bag is empty
    bags = [flat[0:3], flat[3:3], flat[3:7], flat[7:9]]
    W = lazyscope.tensor(weight, device=device)
    got = F.embedding_bag(lazyscope.tensor(flat, device=device), W, lazyscope.tensor(offsets, device=device),
                          mode=mode)
    np.testing.assert_allclose(got.numpy(), bags_ref(weight, bags, mode), rtol=1e-12, atol=1e-12)
    last = F.embedding_bag(lazyscope.tensor(flat, device=device), W,
                           lazyscope.tensor(np.append(offsets, 9), device=device), mode=mode, include_last_offset=True)
    np.testing.assert_allclose(last.numpy(), bags_ref(weight, bags, mode), rtol=1e-12, atol=1e-12)
    rows = np.array([[1, 2, 3], [4, 4, 0]], dtype=np.int64)
    got2 = F.embedding_bag(lazyscope.tensor(rows, device=device), W, mode=mode, padding_idx=4)
    np.testing.assert_allclose(got2.numpy(), bags_ref(weight, list(rows), mode, padding_idx=4), rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_bag_gradients_and_per_sample_weights(device):
    weight = rng.standard_normal((6, 3))
    flat = np.array([0, 2, 2, 5, 1], dtype=np.int64)
    offsets = np.array([0, 2], dtype=np.int64)
    psw = rng.standard_normal(5)
    bags = [flat[:2], flat[2:]]
    got = F.embedding_bag(lazyscope.tensor(flat, device=device), lazyscope.tensor(weight, device=device),
                          lazyscope.tensor(offsets, device=device), mode="sum",
                          per_sample_weights=lazyscope.tensor(psw, device=device))
    np.testing.assert_allclose(got.numpy(), bags_ref(weight, bags, "sum", [psw[:2], psw[2:]]), rtol=1e-12)
    idx, offs = lazyscope.tensor(flat, device=device), lazyscope.tensor(offsets, device=device)
    check(lambda w: F.embedding_bag(idx, w, offs, mode="mean"), lambda w: bags_ref(w, bags, "mean"), [weight], device)
    check(lambda w: F.embedding_bag(idx, w, offs, mode="max"), lambda w: bags_ref(w, bags, "max"), [weight], device)


def test_embedding_bag_module_and_errors():
    lazyscope.manual_seed(3)
    m = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)
    assert np.all(m.weight.numpy()[0] == 0)
    out = m(lazyscope.tensor(np.array([0, 1, 2], dtype=np.int64)), lazyscope.tensor(np.array([0], dtype=np.int64)))
    np.testing.assert_allclose(out.numpy()[0], m.weight.numpy()[1] + m.weight.numpy()[2], rtol=1e-6)
    with pytest.raises(ValueError, match="per_sample_weights is only supported with mode='sum'"):
        F.embedding_bag(lazyscope.tensor(np.array([[1]])), m.weight, per_sample_weights=lazyscope.ones(1, 1))
    with pytest.raises(ValueError, match="a 1-D input needs 1-D offsets"):
        F.embedding_bag(lazyscope.tensor(np.array([1, 2])), m.weight)
    with pytest.raises(ValueError, match="mode must be one of"):
        nn.EmbeddingBag(3, 2, mode="median")


# --- scans ----------------------------------------------------------------------

def cum_extreme_ref(x, axis, is_max):
    x = np.moveaxis(x, axis, -1)
    values, indices = np.empty_like(x), np.zeros(x.shape, dtype=np.int64)
    for pos in np.ndindex(x.shape[:-1]):
        best, at = x[pos][0], 0
        for i, v in enumerate(x[pos]):
            better = (v >= best) if is_max else (v <= best)
            if np.isnan(v) or (not np.isnan(best) and better):
                best, at = v, i
            values[pos][i], indices[pos][i] = best, at
    return np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op, is_max", [("cummax", True), ("cummin", False)])
def test_cummax_and_cummin_values_and_indices_match_a_loop(device, op, is_max):
    x = rng.integers(0, 4, size=(3, 11, 2)).astype(np.float32)  # many ties
    x[1, 5, 0] = np.nan
    for axis in (1, 0, -1):
        v, i = getattr(lazyscope, op)(lazyscope.tensor(x, device=device), axis)
        want_v, want_i = cum_extreme_ref(x, axis, is_max)
        np.testing.assert_array_equal(v.numpy(), want_v)
        np.testing.assert_array_equal(i.numpy(), want_i)
    for xi in (rng.integers(-2**62, 2**62, size=(4, 9)), rng.integers(0, 255, size=(4, 9)).astype(np.uint8),
               rng.integers(-9, 9, size=(4, 9)).astype(np.int32), rng.integers(0, 2, size=(4, 9)).astype(bool)):
        v, i = getattr(lazyscope.tensor(xi, device=device), op)(1)
        want_v, want_i = cum_extreme_ref(xi, 1, is_max)
        assert v.numpy().dtype == xi.dtype
        np.testing.assert_array_equal(v.numpy(), want_v)
        np.testing.assert_array_equal(i.numpy(), want_i)


@pytest.mark.parametrize("device", DEVICES)
def test_cummax_gradient_goes_to_the_chosen_elements(device):
    x = rng.standard_normal((2, 9))
    t = lazyscope.tensor(x, device=device, requires_grad=True)
    g = rng.standard_normal((2, 9))
    v, i = lazyscope.cummax(t, 1)
    (v * lazyscope.tensor(g, device=device)).sum().backward()
    want = np.zeros_like(x)
    _, idx = cum_extreme_ref(x, 1, True)
    for r in range(2):
        np.add.at(want[r], idx[r], g[r])
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_logcumsumexp_matches_float64_and_finite_differences(device):
    x = rng.standard_normal((3, 13)) * 30
    x[0, 4] = -np.inf
    got = lazyscope.logcumsumexp(lazyscope.tensor(x, device=device), 1).numpy()
    np.testing.assert_allclose(got, np.logaddexp.accumulate(x, axis=1), rtol=1e-12)
    big = np.array([1000.0, 1000.0, -1000.0, 999.0])  # exp overflows: the scan must not
    np.testing.assert_allclose(lazyscope.tensor(big, device=device).logcumsumexp(0).numpy(),
                               np.logaddexp.accumulate(big), rtol=1e-12)
    y = rng.standard_normal((2, 6))
    check(lambda t: lazyscope.logcumsumexp(t, 1), lambda a: np.logaddexp.accumulate(a, axis=1), [y], device)


# --- affine_grid / grid_sample --------------------------------------------------

def _unnorm(c, size, ac):
    return (c + 1) / 2 * (size - 1) if ac else ((c + 1) * size - 1) / 2


def _reflect_ref(c, twice_low, twice_high):  # PyTorch's reflect_coordinates
    if twice_low == twice_high:
        return np.zeros_like(c)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    c = np.abs(c - low)
    extra, flips = np.fmod(c, span), np.floor(c / span)
    return np.where(flips % 2 == 0, extra + low, span - extra + low)


def grid_sample_ref(x, grid, mode, padding, ac):
    n, c, h, w = x.shape
    _, ho, wo, _ = grid.shape
    out = np.zeros((n, c, ho, wo))
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                gx, gy = _unnorm(grid[b, i, j, 0], w, ac), _unnorm(grid[b, i, j, 1], h, ac)
                if padding == "border":
                    gx, gy = np.clip(gx, 0, w - 1), np.clip(gy, 0, h - 1)
                elif padding == "reflection":
                    if ac:
                        gx, gy = _reflect_ref(gx, 0, 2 * (w - 1)), _reflect_ref(gy, 0, 2 * (h - 1))
                    else:
                        gx, gy = _reflect_ref(gx, -1, 2 * w - 1), _reflect_ref(gy, -1, 2 * h - 1)
                    gx, gy = np.clip(gx, 0, w - 1), np.clip(gy, 0, h - 1)

                def at(ix, iy):
                    ok = 0 <= ix <= w - 1 and 0 <= iy <= h - 1
                    return x[b, :, int(iy), int(ix)] if ok else np.zeros(c)
                if mode == "nearest":
                    out[b, :, i, j] = at(np.rint(gx), np.rint(gy))
                else:
                    x0, y0 = np.floor(gx), np.floor(gy)
                    fx, fy = gx - x0, gy - y0
                    out[b, :, i, j] = (at(x0, y0) * (1 - fx) * (1 - fy) + at(x0 + 1, y0) * fx * (1 - fy)
                                       + at(x0, y0 + 1) * (1 - fx) * fy + at(x0 + 1, y0 + 1) * fx * fy)
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("ac", [False, True])
def test_grid_sample_matches_a_numpy_loop(device, mode, padding, ac):
    x = rng.standard_normal((2, 3, 5, 6))
    grid = rng.uniform(-1.6, 1.6, size=(2, 4, 7, 2))
    got = F.grid_sample(lazyscope.tensor(x, device=device), lazyscope.tensor(grid, device=device), mode, padding, ac)
    np.testing.assert_allclose(got.numpy(), grid_sample_ref(x, grid, mode, padding, ac), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_affine_grid_and_grid_sample_gradients(device):
    theta = np.array([[[0.9, 0.2, 0.05], [-0.1, 1.1, 0.1]]])
    for ac in (False, True):
        got = F.affine_grid(lazyscope.tensor(theta, device=device), (1, 2, 4, 5), align_corners=ac).numpy()
        xs = np.linspace(-1, 1, 5) if ac else (np.arange(5) * 2 + 1) / 5 - 1
        ys = np.linspace(-1, 1, 4) if ac else (np.arange(4) * 2 + 1) / 4 - 1
        base = np.stack(np.meshgrid(xs, ys) + [np.ones((4, 5))], -1)
        np.testing.assert_allclose(got[0], base @ theta[0].T, rtol=1e-12, atol=1e-12)
    # Sample points a fraction 0.2-0.8 of the way between pixels: no finite difference steps across a pixel.
    h, w = 4, 5
    px = rng.integers(0, w - 1, size=(1, 3, 3)) + rng.uniform(0.2, 0.8, size=(1, 3, 3))
    py = rng.integers(0, h - 1, size=(1, 3, 3)) + rng.uniform(0.2, 0.8, size=(1, 3, 3))
    grid = np.stack([(2 * px + 1) / w - 1, (2 * py + 1) / h - 1], -1)
    x = rng.standard_normal((1, 2, h, w))
    check(lambda t, g: F.grid_sample(t, g, "bilinear", "zeros", False),
          lambda a, g: grid_sample_ref(a, g, "bilinear", "zeros", False), [x, grid], device)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        F.grid_sample(lazyscope.tensor(x), lazyscope.tensor(grid), padding_mode="wrap")


# --- ctc_loss -------------------------------------------------------------------

def ctc_ref(lp, labels, t_len, blank):
    """-log p(labels | lp[:t_len]) by the textbook forward recursion in float64 with -inf."""
    ext = [blank]
    for v in labels:
        ext += [v, blank]
    alpha = np.full(len(ext), -np.inf)
    alpha[0] = lp[0, ext[0]]
    if len(ext) > 1:
        alpha[1] = lp[0, ext[1]]
    for t in range(1, t_len):
        new = np.full(len(ext), -np.inf)
        for s in range(len(ext)):
            terms = [alpha[s]] + ([alpha[s - 1]] if s >= 1 else [])
            if s >= 2 and ext[s] != blank and ext[s] != ext[s - 2]:
                terms.append(alpha[s - 2])
            new[s] = np.logaddexp.reduce(terms) + lp[t, ext[s]]
        alpha = new
    tail = [alpha[-1]] + ([alpha[-2]] if len(ext) > 1 else [])
    return -np.logaddexp.reduce(tail)


def _log_softmax(x):
    return x - np.logaddexp.reduce(x, axis=-1, keepdims=True)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_loss_matches_the_textbook_recursion(device, reduction):
    t_max, n, classes = 9, 4, 5
    lp = _log_softmax(rng.standard_normal((t_max, n, classes)))
    labels = [[1, 2, 2], [3], [], [4, 1, 4, 1]]           # a repeat (needs a blank between), an empty target
    in_len = [9, 7, 3, 8]
    padded = np.zeros((n, 4), dtype=np.int64)
    for i, lab in enumerate(labels):
        padded[i, :len(lab)] = lab
    want = np.array([ctc_ref(lp[:, i], labels[i], in_len[i], 0) for i in range(n)])
    tgt_len = [len(v) for v in labels]
    got = F.ctc_loss(lazyscope.tensor(lp, device=device), lazyscope.tensor(padded, device=device), in_len, tgt_len,
                     reduction=reduction).numpy()
    expect = {"none": want, "sum": want.sum(), "mean": (want / np.maximum(tgt_len, 1)).mean()}[reduction]
    np.testing.assert_allclose(got, expect, rtol=1e-10)
    # The same targets concatenated (1-D), and the module.
    flat = lazyscope.tensor(np.array(sum(labels, []), dtype=np.int64), device=device)
    got_flat = nn.CTCLoss(reduction=reduction)(lazyscope.tensor(lp, device=device), flat,
                                               lazyscope.tensor(np.array(in_len)), lazyscope.tensor(np.array(tgt_len)))
    np.testing.assert_allclose(got_flat.numpy(), expect, rtol=1e-10)


@pytest.mark.parametrize("device", DEVICES)
def test_ctc_loss_gradient_and_impossible_alignments(device):
    t_max, classes = 5, 4
    x = rng.standard_normal((t_max, 2, classes))
    labels, in_len = np.array([[1, 2], [3, 3]]), [5, 5]

    def ref(a):
        lp = _log_softmax(a)
        return np.array([ctc_ref(lp[:, i], list(labels[i]), in_len[i], 0) for i in range(2)])
    check(lambda a: F.ctc_loss(a.log_softmax(-1), lazyscope.tensor(labels, device=device), in_len, [2, 2],
                               reduction="none"), ref, [x], device)
    # [3, 3] needs 3 frames; 2 cannot emit it: inf, or 0 (and a zero gradient) with zero_infinity.
    lp = lazyscope.tensor(_log_softmax(x), device=device, requires_grad=True)
    loss = F.ctc_loss(lp, lazyscope.tensor(labels, device=device), [5, 2], [2, 2], reduction="none")
    assert np.isfinite(loss.numpy()[0]) and loss.numpy()[1] == np.inf
    z = F.ctc_loss(lp, lazyscope.tensor(labels, device=device), [5, 2], [2, 2], reduction="sum", zero_infinity=True)
    z.backward()
    g = lp.grad.numpy()
    assert np.isfinite(g).all() and np.all(g[:, 1] == 0)
    np.testing.assert_allclose(z.numpy(), loss.numpy()[0], rtol=1e-12)
    with pytest.raises(ValueError, match="targets must be classes other than the blank"):
        F.ctc_loss(lp, lazyscope.tensor(np.array([[0, 1], [1, 2]])), [5, 5], [2, 2])
