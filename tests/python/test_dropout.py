"""dropout and dropout2d: the mask is drawn by a dropout_mask op inside the
graph from an rng state (seed, offset) passed as device data, so a lazy
training loop compiles once while every step draws a new mask;
lazyscope.manual_seed makes the masks reproducible, on both devices alike."""
import numpy as np
import pytest

import lazyscope
from lazyscope import _C
from lazyscope.core import lazy_model as lm

DEVICES = ["cpu", "lazy:0"]


def fresh():
    _C.clear_compile_cache()
    _C.reset_metrics()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
@pytest.mark.parametrize("dtype", [lazyscope.float32, lazyscope.float64])
def test_dropout_keeps_about_1_minus_p_and_scales_the_rest(device, p, dtype):
    x = lazyscope.ones(200, 100, device=device, dtype=dtype) * 3.0
    y = lazyscope.dropout(x, p).numpy()
    assert y.dtype == (np.float32 if dtype == lazyscope.float32 else np.float64)
    kept = y != 0
    # 20000 Bernoulli draws: the kept fraction is within 4 standard deviations of 1 - p.
    sd = np.sqrt(p * (1 - p) / y.size)
    assert abs(kept.mean() - (1 - p)) < 4 * sd
    np.testing.assert_allclose(y[kept], 3.0 / (1 - p), rtol=1e-6)
    # Kept elements are not clustered: each row and each column sees both outcomes.
    assert kept.any(axis=1).all() and (~kept).any(axis=1).all()


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_edge_probabilities_and_eval_mode(device):
    x = lazyscope.tensor(np.arange(1.0, 7.0), device=device)
    np.testing.assert_array_equal(lazyscope.dropout(x, 0.0).numpy(), np.arange(1.0, 7.0))
    np.testing.assert_array_equal(lazyscope.dropout(x, 1.0).numpy(), np.zeros(6))
    np.testing.assert_array_equal(lazyscope.dropout(x, 0.7, training=False).numpy(), np.arange(1.0, 7.0))


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout_bad_probability_names_the_value(p):
    with pytest.raises(lazyscope.EngineError, match=r"dropout: dropout probability has to be between 0 and 1"):
        lazyscope.dropout(lazyscope.ones(3), p)


def test_dropout_of_integers_is_refused():
    with pytest.raises(lazyscope.EngineError, match="dropout: expected a floating point input"):
        lazyscope.dropout(lazyscope.ones(3, dtype=lazyscope.int64), 0.5)


def test_manual_seed_reproduces_masks_and_the_devices_agree():
    x = np.random.default_rng(1).standard_normal((16, 16))
    runs = []
    for device in DEVICES + DEVICES:
        lazyscope.manual_seed(1234)
        t = lazyscope.tensor(x, device=device)
        runs.append([lazyscope.dropout(t, 0.5).numpy() for _ in range(3)])
    for run in runs[1:]:
        for got, want in zip(run, runs[0]):
            np.testing.assert_array_equal(got, want)
    # Consecutive draws differ, and another seed gives other masks.
    assert not np.array_equal(runs[0][0] != 0, runs[0][1] != 0)
    lazyscope.manual_seed(99)
    assert not np.array_equal(lazyscope.dropout(lazyscope.tensor(x), 0.5).numpy() != 0, runs[0][0] != 0)


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_gradient_is_the_mask_times_the_scale(device):
    x = lazyscope.tensor(np.random.default_rng(2).standard_normal((30, 20)), device=device, requires_grad=True)
    y = lazyscope.dropout(x, 0.25)
    w = np.random.default_rng(3).standard_normal((30, 20))
    (y * lazyscope.tensor(w, device=device)).sum().backward()
    kept = y.numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, w / 0.75, 0.0), rtol=1e-12)


def test_five_lazy_steps_with_dropout_compile_once_and_draw_new_masks():
    fresh()
    dev = lm.lazy_device()
    rng = np.random.default_rng(5)
    w = lazyscope.tensor(rng.standard_normal((32, 8)) * 0.1, device=dev, dtype=lazyscope.float32)
    x = lazyscope.tensor(rng.standard_normal((64, 32)), device=dev, dtype=lazyscope.float32)
    masks = []
    for _ in range(5):
        w.requires_grad_()
        h = lazyscope.dropout(x, 0.5)
        loss = ((h @ w) ** 2).mean()
        loss.backward()
        w = (w - w.grad * 0.01).detach()
        lm.mark_step()
        masks.append(h.numpy() != 0)
    counters = lm.counters()
    assert counters["UncachedCompile"] == 1
    assert counters["CachedCompile"] == 4
    for i in range(len(masks)):
        for j in range(i):
            assert not np.array_equal(masks[i], masks[j])
    assert abs(np.mean(masks) - 0.5) < 0.02


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(8, 16, 5, 4), (32, 5, 4)])
def test_dropout2d_zeroes_whole_channels(device, shape):
    x = lazyscope.ones(*shape, device=device)
    y = lazyscope.dropout2d(x, 0.5).numpy()
    planes = y.reshape(-1, shape[-2] * shape[-1])
    # Each channel is all zero or all 2.
    assert ((planes == 0).all(axis=1) | (planes == 2).all(axis=1)).all()
    kept = (planes == 2).all(axis=1).mean()
    assert 0.2 < kept < 0.8
    np.testing.assert_array_equal(lazyscope.dropout2d(x, 0.5, training=False).numpy(), np.ones(shape))


def test_dropout2d_needs_an_image():
    with pytest.raises(lazyscope.ShapeError, match=r"dropout2d: expected a 3-D \[C, H, W\] or 4-D .* got \[4, 4\]"):
        lazyscope.dropout2d(lazyscope.ones(4, 4), 0.5)
