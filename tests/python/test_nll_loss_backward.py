"""nll_loss's gradient as one kernel (nll_loss_backward) on both devices:
values against NumPy's closed form, bit for bit in float32 (the kernel does
the composite's operations in the same dtype), ignore_index, every
reduction, class weights, label smoothing, every target ignored; and the
lazy step's program runs it as one kernel instead of ne/where/one_hot/cast
kernels. Finite-difference checks of the same gradients (float64) are in
test_nn_ops.py and test_losses_weighted.py."""
import numpy as np
import pytest

import lazyscope
from runtime_util import run_graph

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(1111)


def nll_grad_ref(n, classes, target, ignore_index, reduction, upstream, dtype):
    """d sum(nll_loss(logp) * upstream) / d logp, in `dtype`: -(p * scale), p the kept target's one-hot."""
    kept = target != ignore_index
    p = np.zeros((n, classes), dtype=dtype)
    p[np.arange(n)[kept], target[kept]] = 1
    if reduction == "none":
        scale = upstream.astype(dtype)[:, None]
    elif reduction == "sum":
        scale = dtype(upstream)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = dtype(upstream) / dtype(kept.sum())
    with np.errstate(invalid="ignore"):
        return -(p * scale)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 3])
def test_nll_loss_gradient_matches_numpy_bit_for_bit(device, dtype, reduction, ignore_index):
    n, classes = 37, 10
    logp = rng.standard_normal((n, classes)).astype(dtype)
    target = rng.integers(0, classes, n)
    target[::5] = 3  # some ignored when ignore_index is 3
    upstream = np.asarray(rng.standard_normal(n if reduction == "none" else ()) * 3, dtype=dtype)  # 0-d: an array
    x = lazyscope.tensor(logp, device=device, requires_grad=True)
    loss = lazyscope.nll_loss(x, lazyscope.tensor(target, device=device), ignore_index=ignore_index,
                              reduction=reduction)
    (loss * lazyscope.tensor(upstream, device=device)).sum().backward()
    got = x.grad.numpy()
    want = nll_grad_ref(n, classes, target, ignore_index, reduction, upstream, dtype)
    assert got.dtype == dtype and got.shape == (n, classes)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0 where the upstream is positive


@pytest.mark.parametrize("device", DEVICES)
def test_every_target_ignored_gives_the_mean_s_nan_gradient(device):
    # mean over no kept target: the loss is 0/0 (NaN, as PyTorch) and so is
    # every element of its gradient (0 * inf), as the composite computed.
    x = lazyscope.tensor(rng.standard_normal((4, 3)).astype(np.float32), device=device, requires_grad=True)
    loss = lazyscope.nll_loss(x, lazyscope.tensor(np.full(4, 1), device=device), ignore_index=1)
    loss.backward()
    assert np.isnan(loss.item())
    assert np.isnan(x.grad.numpy()).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_smoothed_cross_entropy_gradient_matches_numpy(device, reduction):
    n, classes, smoothing, ignore = 12, 5, 0.2, 4
    x = rng.standard_normal((n, classes))
    target = rng.integers(0, classes, n)
    target[:2] = ignore
    weight = rng.uniform(0.3, 2.0, classes)
    upstream = rng.standard_normal(n if reduction == "none" else ())
    # Closed form: loss_i = -sum_c q_ic w_c logp_ic over kept rows, q = (1-s) onehot + s/C;
    # d/dx_i = (sum_c q_ic w_c) softmax_i - q_i w; mean divides by sum of w[target] kept.
    kept = target != ignore
    q = np.zeros((n, classes))
    q[np.arange(n)[kept], target[kept]] = 1 - smoothing
    q[kept] += smoothing / classes
    qw = q * weight
    e = np.exp(x - x.max(axis=1, keepdims=True))
    soft = e / e.sum(axis=1, keepdims=True)
    per_row = qw.sum(axis=1, keepdims=True) * soft - qw
    if reduction == "none":
        want = per_row * upstream[:, None]
    elif reduction == "sum":
        want = per_row * upstream
    else:
        want = per_row * upstream / weight[target[kept]].sum()
    t = lazyscope.tensor(x, device=device, requires_grad=True)
    loss = lazyscope.cross_entropy(t, lazyscope.tensor(target, device=device),
                                   weight=lazyscope.tensor(weight, device=device), ignore_index=ignore,
                                   label_smoothing=smoothing, reduction=reduction)
    (loss * lazyscope.tensor(upstream, device=device)).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-12, atol=1e-14)


def test_the_lazy_program_runs_the_gradient_as_one_kernel():
    from lazyscope.core import lazy_model as lm

    dev = lm.lazy_device()
    logits = rng.standard_normal((16, 10)).astype(np.float32)
    target = rng.integers(0, 10, 16)

    def step():
        x = lazyscope.tensor(logits, device=dev, requires_grad=True)
        lazyscope.cross_entropy(x, lazyscope.tensor(target, device=dev)).backward()
        return x.grad

    got, program = run_graph(step, require_compile=True)
    kernels = [line.split("= ")[1].split("(")[0] for line in program.splitlines() if line.startswith("  %")
               and "parameter" not in line]
    assert kernels.count("nll_loss_backward") == 1, program
    for gone in ("one_hot", "ne", "where", "cast"):
        assert gone not in kernels, program
    e = np.exp(logits.astype(np.float64) - logits.max(axis=1, keepdims=True))
    want = (e / e.sum(axis=1, keepdims=True) - np.eye(10)[target]) / 16
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
