"""nll_loss/cross_entropy with class weights, label smoothing and
ignore_index on both devices, against NumPy formulas (PyTorch's weighted
mean); gradients against finite differences."""
import numpy as np
import pytest

import lazyscope
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(8)


def log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def ref_cross_entropy(x, target, weight=None, ignore_index=-100, smoothing=0.0, reduction="mean"):
    logp = log_softmax(x)
    n, c = x.shape
    w = np.ones(c) if weight is None else weight
    kept = target != ignore_index
    safe = np.where(kept, target, 0)
    wt = np.where(kept, w[safe], 0.0)
    nll = -logp[np.arange(n), safe] * wt
    smooth = np.where(kept, -(logp * w).sum(axis=1), 0.0)
    if reduction == "none":
        return (1 - smoothing) * nll + smoothing / c * smooth
    if reduction == "sum":
        return (1 - smoothing) * nll.sum() + smoothing / c * smooth.sum()
    return (1 - smoothing) * nll.sum() / wt.sum() + smoothing / c * smooth.sum() / wt.sum()


CASES = [
    dict(weight=True),
    dict(weight=True, ignore_index=1),
    dict(weight=True, smoothing=0.2),
    dict(weight=True, smoothing=0.1, ignore_index=2),
    dict(weight=False, smoothing=0.3, ignore_index=0),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_weighted_cross_entropy_matches_numpy(device, reduction, case):
    opts = CASES[case]
    x = rng.standard_normal((6, 4))
    target = np.array([0, 1, 2, 3, 1, 2])
    weight = rng.uniform(0.2, 2.0, 4) if opts["weight"] else None
    ignore = opts.get("ignore_index", -100)
    smoothing = opts.get("smoothing", 0.0)
    expected = ref_cross_entropy(x, target, weight, ignore, smoothing, reduction)
    tw = lazyscope.tensor(weight, device=device) if weight is not None else None
    tt = lazyscope.tensor(target, device=device)
    got = lazyscope.cross_entropy(lazyscope.tensor(x, device=device), tt, weight=tw, ignore_index=ignore,
                                  label_smoothing=smoothing, reduction=reduction)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-14)
    check(lambda a: lazyscope.cross_entropy(a, tt, weight=tw, ignore_index=ignore, label_smoothing=smoothing,
                                            reduction=reduction),
          lambda a: ref_cross_entropy(a, target, weight, ignore, smoothing, reduction), [x], device)


@pytest.mark.parametrize("device", DEVICES)
def test_weighted_nll_loss_and_probability_targets(device):
    logp = log_softmax(rng.standard_normal((5, 3)))
    target = np.array([2, 0, 1, 1, -100])
    weight = np.array([0.5, 2.0, 1.5])
    kept = target != -100
    wt = np.where(kept, weight[np.where(kept, target, 0)], 0)
    picked = np.where(kept, logp[np.arange(5), np.where(kept, target, 0)], 0)
    got = lazyscope.nll_loss(lazyscope.tensor(logp, device=device), lazyscope.tensor(target, device=device),
                             weight=lazyscope.tensor(weight, device=device))
    np.testing.assert_allclose(got.item(), -(picked * wt).sum() / wt.sum(), rtol=1e-12)
    # probability targets: -sum_c w_c p_c logp_c, mean over the batch
    x = rng.standard_normal((4, 3))
    p = rng.dirichlet(np.ones(3), size=4)
    got = lazyscope.cross_entropy(lazyscope.tensor(x, device=device), lazyscope.tensor(p, device=device),
                                  weight=lazyscope.tensor(weight, device=device))
    np.testing.assert_allclose(got.item(), -(p * weight * log_softmax(x)).sum(axis=1).mean(), rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_weighted_loss_errors(device):
    x = lazyscope.zeros(2, 3, device=device)
    t = lazyscope.tensor([0, 5], device=device)
    w = lazyscope.ones(3, device=device)
    with pytest.raises(IndexError, match="nll_loss: target 5 is out of bounds for 3 classes"):
        lazyscope.cross_entropy(x, t, weight=w).item()
    with pytest.raises(lazyscope.ShapeError, match=r"cross_entropy: expected a weight of shape \[3\]"):
        lazyscope.cross_entropy(x, lazyscope.tensor([0, 1], device=device), weight=lazyscope.ones(2, device=device))
    with pytest.raises(lazyscope.EngineError, match="floating point weight"):
        lazyscope.nll_loss(x, lazyscope.tensor([0, 1], device=device), weight=lazyscope.tensor([1, 1, 1], device=device))
