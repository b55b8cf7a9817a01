"""What mixed-precision and GPU-minded training scripts call: autocast
(accepted, no precision change), GradScaler (PyTorch's algorithm, checked
step by step against a plain-Python model of it), torch.backends flags and
set_float32_matmul_precision (kept, no effect), and pad_sequence."""
import numpy as np
import pytest

import lazyscope
from lazyscope import nn, optim
from lazyscope.nn.utils.rnn import pad_sequence, unpad_sequence

DEVICES = ["cpu", "lazy:0"]


def test_autocast_is_a_checked_context_and_decorator_that_keeps_dtypes():
    x = lazyscope.ones(2, 2)
    with lazyscope.autocast("cpu", dtype=lazyscope.bfloat16):
        assert lazyscope.amp.is_autocast_enabled()
        assert (x @ x).dtype == lazyscope.float32
    assert not lazyscope.amp.is_autocast_enabled()

    @lazyscope.autocast("cuda")
    def f(a):
        return lazyscope.amp.is_autocast_enabled(), (a + a).dtype
    assert f(x) == (True, lazyscope.float32)
    with lazyscope.cuda.amp.autocast(enabled=False):
        assert not lazyscope.amp.is_autocast_enabled()
    with pytest.raises(ValueError, match="dtype must be float16 or bfloat16"):
        lazyscope.autocast("cpu", dtype=lazyscope.int32)


def scaler_model(grads, init_scale=8.0, growth_interval=2):
    """PyTorch's GradScaler by hand: per step, whether it ran and the scale after update()."""
    scale, tracker, out = init_scale, 0, []
    for g in grads:
        finite = np.isfinite(g).all()
        if finite:
            tracker += 1
            if tracker == growth_interval:
                scale, tracker = scale * 2.0, 0
        else:
            scale, tracker = scale * 0.5, 0
        out.append((bool(finite), scale))
    return out


@pytest.mark.parametrize("device", DEVICES)
def test_grad_scaler_scales_unscales_skips_non_finite_steps_and_moves_the_scale(device):
    w0 = np.array([1.0, -2.0, 0.5], dtype=np.float32)
    w = nn.Parameter(lazyscope.tensor(w0, device=device))
    opt = optim.SGD([w], lr=0.1)
    scaler = lazyscope.amp.GradScaler(init_scale=8.0, growth_interval=2)
    factors = [1.0, 1.0, np.inf, 1.0, 1.0, np.nan, 1.0]
    grads, expect_w = [], w0.astype(np.float64)
    for step, f in enumerate(factors):
        opt.zero_grad()
        x = lazyscope.tensor(np.array([1.0, 2.0, 3.0], dtype=np.float32) * f, device=device)
        loss = (w * x).sum()
        scaled = scaler.scale(loss)
        np.testing.assert_allclose(scaled.item(), loss.item() * scaler.get_scale(), rtol=1e-6)
        scaled.backward()
        scaler.step(opt)
        scaler.update()
        g = np.array([1.0, 2.0, 3.0]) * f
        grads.append(g)
        ran, scale = scaler_model(grads)[-1]
        if ran:
            expect_w = expect_w - 0.1 * g  # the unscaled gradient
        np.testing.assert_allclose(w.numpy(), expect_w, rtol=1e-6, err_msg=f"step {step}")
        assert scaler.get_scale() == scale, f"step {step}"
    state = scaler.state_dict()
    other = lazyscope.amp.GradScaler()
    other.load_state_dict(state)
    assert other.get_scale() == scaler.get_scale()


def test_grad_scaler_unscale_once_per_step_and_disabled_pass_through():
    w = nn.Parameter(lazyscope.tensor(np.ones(2, dtype=np.float32)))
    opt = optim.SGD([w], lr=1.0)
    scaler = lazyscope.amp.GradScaler(init_scale=4.0)
    scaler.scale((w * 3.0).sum()).backward()
    scaler.unscale_(opt)
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])  # clip_grad_norm_ would see true gradients here
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(opt)
    off = lazyscope.amp.GradScaler(enabled=False)
    loss = (w * 1.0).sum()
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(ValueError, match="growth_factor > 1"):
        lazyscope.amp.GradScaler(growth_factor=0.5)


def test_backends_flags_and_matmul_precision_are_kept():
    lazyscope.backends.cudnn.benchmark = True
    lazyscope.backends.cudnn.deterministic = True
    assert lazyscope.backends.cudnn.benchmark and not lazyscope.backends.cudnn.is_available()
    assert not lazyscope.backends.mps.is_available() and lazyscope.backends.mkldnn.is_available()
    lazyscope.backends.cuda.matmul.allow_tf32 = True
    lazyscope.set_float32_matmul_precision("high")
    assert lazyscope.get_float32_matmul_precision() == "high"
    with pytest.raises(RuntimeError, match="expected one of"):
        lazyscope.set_float32_matmul_precision("low")
    lazyscope.set_float32_matmul_precision("highest")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_numpy_and_unpads(device, batch_first, side):
    rng = np.random.default_rng(4)
    seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (2, 5, 1)]
    got = pad_sequence([lazyscope.tensor(s, device=device) for s in seqs], batch_first, -1.0, side).numpy()
    want = np.full((3, 5, 3), -1.0, dtype=np.float32)
    for i, s in enumerate(seqs):
        if side == "right":
            want[i, :len(s)] = s
        else:
            want[i, 5 - len(s):] = s
    np.testing.assert_array_equal(got, want if batch_first else want.transpose(1, 0, 2))
    if side == "right":
        back = unpad_sequence(lazyscope.tensor(got, device=device), [2, 5, 1], batch_first)
        for b, s in zip(back, seqs):
            np.testing.assert_array_equal(b.numpy(), s)
    with pytest.raises(lazyscope.ShapeError, match="sequence 1 has shape"):
        pad_sequence([lazyscope.ones(2, 3), lazyscope.ones(2, 4)])
