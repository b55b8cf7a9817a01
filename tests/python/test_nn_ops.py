"""Softmax, losses, joins/splits, gathers and indexing on both devices:
values against NumPy, gradients against central finite differences of an
independent NumPy forward in float64 (the helpers of test_autograd)."""
import numpy as np
import pytest

import lazyscope
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(33)


def softmax_ref(x, axis):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax_ref(x, axis):
    m = np.max(x, axis=axis, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax_match_numpy(device, dtype, dim):
    x = (rng.standard_normal((3, 4, 5)) * 3).astype(dtype)
    t = lazyscope.tensor(x, device=device)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    for got, ref in [(t.softmax(dim), softmax_ref), (lazyscope.log_softmax(t, dim), log_softmax_ref)]:
        assert got.dtype == t.dtype and got.shape == x.shape
        np.testing.assert_allclose(got.numpy(), ref(x.astype(np.float64), dim), rtol=tol, atol=tol)


# A dim that is not the last (float32): a softmax down each column, in
# blocks of up to 256 columns on the pool. Shapes across a block edge, a
# segmentation map's class dim, large values, a column of -inf (0/0: NaN,
# as NumPy and PyTorch) and a column with a NaN.
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape,dim", [((700, 300), 0), ((4, 21, 9, 31), 1), ((3, 5, 513), -2), ((2, 1, 6), 1)])
def test_softmax_over_a_dim_that_is_not_the_last_matches_numpy(device, shape, dim):
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    flat = np.moveaxis(x, dim, -1).reshape(-1, shape[dim])  # each row a softmax's inputs, as a view
    if flat.shape[0] > 3:
        flat[0] += 1000.0
        flat[1] = -np.inf
        flat[2, 0] = np.nan
    x = np.moveaxis(flat.reshape(np.moveaxis(x, dim, -1).shape), -1, dim).copy()
    t = lazyscope.tensor(x, device=device)
    with np.errstate(invalid="ignore"):
        want, want_log = softmax_ref(x.astype(np.float64), dim), log_softmax_ref(x.astype(np.float64), dim)
    np.testing.assert_allclose(t.softmax(dim).numpy(), want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(lazyscope.log_softmax(t, dim).numpy(), want_log, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_softmax_is_stable_for_large_inputs(device):
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1000.0, -999.0]], dtype=np.float32)
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_allclose(t.softmax(-1).numpy(), softmax_ref(x.astype(np.float64), -1), rtol=1e-6)
    np.testing.assert_allclose(t.log_softmax(1).numpy(), log_softmax_ref(x.astype(np.float64), 1), rtol=1e-6)
    assert np.isfinite(t.log_softmax(1).numpy()).all()


@pytest.mark.parametrize("device", DEVICES)
def test_softmax_of_integers_is_float32_and_dtype_argument_casts(device):
    t = lazyscope.tensor([[1, 2, 3]], device=device)
    assert t.softmax(1).dtype == lazyscope.float32
    assert lazyscope.softmax(t, 1, dtype=lazyscope.float64).dtype == lazyscope.float64


def test_softmax_bad_dim_names_the_op_and_line():
    with pytest.raises(lazyscope.ShapeError) as info:
        lazyscope.tensor([[1.0, 2.0]]).softmax(2)
    assert "softmax" in str(info.value) and "test_nn_ops.py:" in str(info.value)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_gradients_match_finite_differences(device, dim):
    x = rng.standard_normal((3, 4, 2))
    check(lambda t: t.softmax(dim), lambda a: softmax_ref(a, dim), [x], device)
    check(lambda t: t.log_softmax(dim), lambda a: log_softmax_ref(a, dim), [x], device)


# --- losses -------------------------------------------------------------------

REDUCE = {"mean": np.mean, "sum": np.sum, "none": lambda x: x}


def nll_ref(logp, target, reduction="mean", ignore_index=-100):
    kept = target != ignore_index
    picked = -logp[np.arange(len(target)), np.where(kept, target, 0)] * kept
    if reduction == "mean":
        return np.sum(picked) / np.sum(kept)
    return REDUCE[reduction](picked)


def cross_entropy_ref(x, target, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    logp = log_softmax_ref(x, 1)
    loss = nll_ref(logp, target, reduction, ignore_index)
    if label_smoothing == 0:
        return loss
    kept = target != ignore_index
    smooth = -np.sum(logp, axis=1) * kept
    smooth = np.sum(smooth) / np.sum(kept) if reduction == "mean" else REDUCE[reduction](smooth)
    return (1 - label_smoothing) * loss + label_smoothing / x.shape[1] * smooth


def softplus_np(x):
    return np.logaddexp(0, x)


LOSS_CASES = [("mean", -100, 0.0), ("sum", -100, 0.0), ("none", -100, 0.0), ("mean", 2, 0.0), ("mean", -100, 0.1),
              ("none", 1, 0.2), ("sum", 0, 0.3)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction,ignore_index,smoothing", LOSS_CASES, ids=str)
def test_nll_and_cross_entropy_match_numpy_and_finite_differences(device, reduction, ignore_index, smoothing):
    x = rng.standard_normal((5, 4))
    target = np.array([0, 2, 3, 1, 2])
    tt = lazyscope.tensor(target, device=device)
    ce = lazyscope.cross_entropy(lazyscope.tensor(x, device=device), tt, ignore_index=ignore_index,
                                 reduction=reduction, label_smoothing=smoothing)
    np.testing.assert_allclose(ce.numpy(), cross_entropy_ref(x, target, reduction, ignore_index, smoothing), rtol=1e-12)
    check(lambda t: lazyscope.cross_entropy(t, tt, ignore_index=ignore_index, reduction=reduction,
                                            label_smoothing=smoothing),
          lambda a: cross_entropy_ref(a, target, reduction, ignore_index, smoothing), [x], device)
    if smoothing == 0:
        logp = log_softmax_ref(x, 1)
        got = lazyscope.nll_loss(lazyscope.tensor(logp, device=device), tt, ignore_index=ignore_index,
                                 reduction=reduction)
        np.testing.assert_allclose(got.numpy(), nll_ref(logp, target, reduction, ignore_index), rtol=1e-12)
        check(lambda t: lazyscope.nll_loss(t, tt, ignore_index=ignore_index, reduction=reduction),
              lambda a: nll_ref(a, target, reduction, ignore_index), [logp], device)


@pytest.mark.parametrize("device", DEVICES)
def test_cross_entropy_with_probability_targets_and_a_single_sample(device):
    x = rng.standard_normal((3, 4))
    p = softmax_ref(rng.standard_normal((3, 4)), 1)
    got = lazyscope.cross_entropy(lazyscope.tensor(x, device=device), lazyscope.tensor(p, device=device),
                                  label_smoothing=0.1)
    q = p * 0.9 + 0.1 / 4
    np.testing.assert_allclose(got.numpy(), np.mean(-np.sum(q * log_softmax_ref(x, 1), axis=1)), rtol=1e-12)
    one = lazyscope.cross_entropy(lazyscope.tensor(x[0], device=device), lazyscope.tensor(2, device=device))
    assert one.shape == ()
    np.testing.assert_allclose(one.numpy(), -log_softmax_ref(x[:1], 1)[0, 2], rtol=1e-12)


def test_out_of_range_target_on_cpu_names_the_op_the_value_and_the_line():
    x = lazyscope.tensor(rng.standard_normal((3, 4)))
    for bad in (4, -1):
        with pytest.raises(IndexError) as info:
            lazyscope.cross_entropy(x, lazyscope.tensor([0, bad, 1]))
        message = str(info.value)
        assert "nll_loss" in message and f"target {bad} is out of bounds for 4 classes" in message
        assert "test_nn_ops.py:" in message
    assert isinstance(info.value, lazyscope.EngineError)


def test_out_of_range_target_on_lazy_raises_at_the_sync():
    """On a lazy device the targets are not known at the call: the op records a
    node and the executor's kernel raises when the step's graph runs."""
    x = lazyscope.tensor(rng.standard_normal((3, 4)), device="lazy:0")
    loss = lazyscope.cross_entropy(x, lazyscope.tensor([0, 7, 1], device="lazy:0"))
    with pytest.raises(IndexError, match="nll_loss: target 7 is out of bounds for 4 classes"):
        loss.item()


def test_a_failed_lazy_graph_does_not_poison_later_steps():
    from lazyscope.core import lazy_model as lm
    x = lazyscope.tensor(rng.standard_normal((3, 4)), device="lazy:0")
    bad = lazyscope.cross_entropy(x, lazyscope.tensor([0, 9, 1], device="lazy:0"))
    with pytest.raises(IndexError, match="target 9 is out of bounds"):
        lm.mark_step()
    good = (x * 2.0).sum()
    lm.mark_step()  # the failed loss no longer belongs to the barrier
    np.testing.assert_allclose(good.item(), 2.0 * x.numpy().sum(), rtol=1e-5)
    with pytest.raises(IndexError, match="target 9 is out of bounds"):
        bad.item()  # reading it explicitly still raises


def test_loss_argument_errors():
    x = lazyscope.tensor(rng.standard_normal((3, 4)))
    t = lazyscope.tensor([0, 1, 2])
    with pytest.raises(ValueError, match="reduction"):
        lazyscope.cross_entropy(x, t, reduction="avg")
    with pytest.raises(lazyscope.ShapeError, match=r"nll_loss: expected input \[N, C\] and target \[N\]"):
        lazyscope.nll_loss(x, lazyscope.tensor([0, 1]))
    with pytest.raises(lazyscope.ShapeError, match=r"nll_loss: expected a weight of shape \[4\]"):
        lazyscope.nll_loss(x, t, weight=lazyscope.ones(3))
    with pytest.raises(lazyscope.EngineError, match="int64 class targets"):
        lazyscope.nll_loss(x, lazyscope.tensor([0.0, 1.0, 2.0]))


@pytest.mark.parametrize("device", DEVICES)
def test_one_hot(device):
    t = lazyscope.tensor([[0, 2], [1, 1]], device=device)
    out = lazyscope.one_hot(t, 4)
    assert out.dtype == lazyscope.int64 and out.shape == (2, 2, 4)
    np.testing.assert_array_equal(out.numpy(), np.eye(4, dtype=np.int64)[[[0, 2], [1, 1]]])
    assert lazyscope.one_hot(t).shape == (2, 2, 3)
    if device == "cpu":
        with pytest.raises(IndexError, match="one_hot: class value 5 is out of range for num_classes 4"):
            lazyscope.one_hot(lazyscope.tensor([5]), 4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_regression_and_binary_losses(device, reduction):
    red = REDUCE[reduction]
    x = rng.standard_normal((3, 4))
    y = rng.standard_normal((3, 4))
    p = 1 / (1 + np.exp(-rng.standard_normal((3, 4))))
    tgt = rng.random((3, 4))
    w = rng.random((3, 4)) + 0.5
    pw = rng.random(4) + 0.5
    T = lambda a: lazyscope.tensor(a, device=device)  # noqa: E731
    cases = [
        (lambda a: lazyscope.mse_loss(a, T(y), reduction=reduction), lambda a: red((a - y) ** 2), x),
        (lambda a: lazyscope.binary_cross_entropy(a, T(tgt), reduction=reduction),
         lambda a: red(-(tgt * np.log(a) + (1 - tgt) * np.log(1 - a))), p),
        (lambda a: lazyscope.binary_cross_entropy(a, T(tgt), weight=T(w), reduction=reduction),
         lambda a: red(-w * (tgt * np.log(a) + (1 - tgt) * np.log(1 - a))), p),
        (lambda a: lazyscope.binary_cross_entropy_with_logits(a, T(tgt), reduction=reduction),
         lambda a: red((1 - tgt) * a + softplus_np(-a)), x),
        (lambda a: lazyscope.binary_cross_entropy_with_logits(a, T(tgt), weight=T(w), reduction=reduction,
                                                              pos_weight=T(pw)),
         lambda a: red(w * ((1 - tgt) * a + (1 + (pw - 1) * tgt) * softplus_np(-a))), x),
    ]
    for fn, ref, arg in cases:
        np.testing.assert_allclose(fn(T(arg)).numpy(), ref(arg), rtol=1e-12)
        check(fn, ref, [arg], device)


@pytest.mark.parametrize("device", DEVICES)
def test_binary_losses_are_stable_at_the_extremes(device):
    x = lazyscope.tensor([-200.0, 200.0, 0.0], device=device)
    t = lazyscope.tensor([1.0, 0.0, 1.0], device=device)
    out = lazyscope.binary_cross_entropy_with_logits(x, t, reduction="none").numpy()
    np.testing.assert_allclose(out, [200.0, 200.0, np.log(2)], rtol=1e-6)
    p = lazyscope.tensor([0.0, 1.0, 0.5], device=device)
    np.testing.assert_allclose(lazyscope.binary_cross_entropy(p, t, reduction="none").numpy(),
                               [100.0, 100.0, np.log(2)], rtol=1e-6)


# --- joins, splits, gathers --------------------------------------------------------

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_and_stack_match_numpy_with_gradients(device, dim):
    a, b, c = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    b_cat = rng.standard_normal((2, 3, 4)[:dim % 3] + (2,) + (2, 3, 4)[dim % 3 + 1:])
    T = lambda x: lazyscope.tensor(x, device=device)  # noqa: E731
    np.testing.assert_array_equal(lazyscope.cat([T(a), T(b_cat)], dim).numpy(), np.concatenate([a, b_cat], dim))
    np.testing.assert_array_equal(lazyscope.stack([T(a), T(b), T(c)], dim).numpy(), np.stack([a, b, c], dim))
    check(lambda x, y: lazyscope.cat([x, y, x], dim), lambda x, y: np.concatenate([x, y, x], dim), [a, b_cat], device)
    check(lambda x, y: lazyscope.stack([x, y], dim), lambda x, y: np.stack([x, y], dim), [a, b], device)


@pytest.mark.parametrize("device", DEVICES)
def test_cat_promotes_and_reports_mismatched_shapes(device):
    out = lazyscope.cat([lazyscope.tensor([1, 2], device=device), lazyscope.tensor([0.5], device=device)])
    assert out.dtype == lazyscope.float32
    np.testing.assert_array_equal(out.numpy(), [1, 2, 0.5])
    with pytest.raises(lazyscope.ShapeError) as info:
        lazyscope.cat([lazyscope.zeros(2, 3, device=device), lazyscope.zeros(3, 3, device=device)], 1)
    assert "cat: tensor 1 has shape [3, 3]" in str(info.value) and "test_nn_ops.py:" in str(info.value)
    with pytest.raises(lazyscope.ShapeError, match="stack: expects each tensor to be equal size"):
        lazyscope.stack([lazyscope.zeros(2, device=device), lazyscope.zeros(3, device=device)])


@pytest.mark.parametrize("device", DEVICES)
def test_split_and_chunk_match_numpy_with_gradients(device):
    x = rng.standard_normal((7, 4))
    t = lazyscope.tensor(x, device=device)
    for pieces, want in [(t.split(3), np.split(x, [3, 6])), (lazyscope.split(t, [2, 5]), np.split(x, [2])),
                         (t.chunk(3), np.split(x, [3, 6])), (lazyscope.chunk(t, 2, dim=1), np.split(x, 2, axis=1)),
                         (t.split(2, dim=-1), np.split(x, 2, axis=1))]:
        assert isinstance(pieces, tuple) and len(pieces) == len(want)
        for got, ref in zip(pieces, want):
            np.testing.assert_array_equal(got.numpy(), ref)
    check(lambda a: lazyscope.cat([p * (i + 1) for i, p in enumerate(a.split([2, 5]))], 0),
          lambda a: np.concatenate([a[:2], 2 * a[2:]], 0), [x], device)
    check(lambda a: a.chunk(2, 1)[1], lambda a: a[:, 2:], [x], device)
    with pytest.raises(lazyscope.ShapeError, match=r"split: sizes \[2, 2\] do not sum to the size 7"):
        t.split([2, 2])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dim", [0, 1])
def test_index_select_with_repeats_and_its_gradient(device, dim):
    x = rng.standard_normal((4, 5))
    index = np.array([3, 0, 3, 1])
    ti = lazyscope.tensor(index, device=device)
    got = lazyscope.tensor(x, device=device).index_select(dim, ti)
    np.testing.assert_array_equal(got.numpy(), np.take(x, index, axis=dim))
    check(lambda a: lazyscope.index_select(a, dim, ti), lambda a: np.take(a, index, axis=dim), [x], device)


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_gradient_scatter_adds_into_the_weight(device):
    w = rng.standard_normal((6, 3))
    idx = np.array([[1, 4, 1], [0, 5, 1]])
    ti = lazyscope.tensor(idx, device=device)
    out = lazyscope.embedding(ti, lazyscope.tensor(w, device=device))
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(out.numpy(), w[idx])
    check(lambda a: lazyscope.embedding(ti, a), lambda a: a[idx], [w], device)
    weight = lazyscope.tensor(w, device=device, requires_grad=True)
    lazyscope.embedding(ti, weight, padding_idx=1).sum().backward()
    counts = np.bincount(idx.ravel(), minlength=6).astype(np.float64)
    counts[1] = 0
    np.testing.assert_array_equal(weight.grad.numpy(), np.repeat(counts[:, None], 3, axis=1))


def test_out_of_range_indices_name_the_op_value_and_line():
    w = lazyscope.zeros(5, 2)
    with pytest.raises(IndexError) as info:
        lazyscope.embedding(lazyscope.tensor([1, 5]), w)
    assert "embedding: index_select: index 5 is out of range for dimension 0 of size 5" in str(info.value)
    assert "test_nn_ops.py:" in str(info.value)
    with pytest.raises(IndexError, match="index_select: index -1 is out of range"):
        w.index_select(0, lazyscope.tensor([-1]))
    lazy = lazyscope.zeros(5, 2, device="lazy:0").index_select(0, lazyscope.tensor([7], device="lazy:0"))
    with pytest.raises(IndexError, match="index_select: index 7 is out of range"):
        lazy.numpy()


# --- basic indexing ------------------------------------------------------------------

KEYS = [
    1, -1, (0, 2), (-2, -1, 0), slice(None), slice(1, None), slice(None, -1), slice(None, None, 2),
    slice(-3, None, 2), slice(10, 20), slice(2, 1), (slice(None), 1), (slice(None, None, 3), slice(1, 3), -1),
    (Ellipsis, 0), (0, Ellipsis), (None, 1), (slice(None), None, slice(None, None, 2)), (Ellipsis, None),
    (1, None, Ellipsis, None, slice(0, 5, 4)), np.int64(2), (None,), Ellipsis,
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_matches_numpy_with_gradients(device, key):
    x = rng.standard_normal((3, 4, 5))
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_array_equal(t[key].numpy(), x[key])
    assert t[key].shape == x[key].shape
    check(lambda a: a[key], lambda a: a[key], [x], device)


@pytest.mark.parametrize("device", DEVICES)
def test_iteration_and_len_use_getitem(device):
    x = rng.standard_normal((3, 2))
    t = lazyscope.tensor(x, device=device)
    assert len(t) == 3
    rows = [r.numpy() for r in t]
    np.testing.assert_array_equal(np.stack(rows), x)


def test_getitem_errors_name_the_index_the_dim_and_the_line():
    t = lazyscope.zeros(3, 4)
    with pytest.raises(IndexError) as info:
        t[1, 4]
    message = str(info.value)
    assert "index 4 is out of bounds for dimension 1 with size 4" in message and "test_nn_ops.py:" in message
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        t[-4]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., 0, ...]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]
    with pytest.raises(IndexError, match="boolean-mask indexing combined with other indices"):
        t[lazyscope.tensor([True, False, True]), 0]
    with pytest.raises(TypeError, match="valid indices"):
        t[1.5]
    with pytest.raises(TypeError, match="0-d"):
        len(lazyscope.tensor(1.0))
