"""The ranking, embedding, margin and likelihood losses added as
compositions (nn/functional.py, nn/loss.py): each against NumPy written
from PyTorch's documented formula, with every reduction, gradients by
central differences, and the module forms."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import nn
import lazyscope.nn.functional as F
from test_autograd import check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(97)


def reduce(loss, reduction):
    return {"mean": loss.mean(), "sum": loss.sum(), "none": loss}[reduction]


def signs(n):
    return np.where(rng.random(n) < 0.5, -1.0, 1.0)


def cos_ref(a, b):
    return (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))


def dist_ref(a, b, p=2.0, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


def log_sigmoid(x):
    return -np.logaddexp(0, -x)


X1, X2 = rng.standard_normal(8), rng.standard_normal(8)
Y = signs(8)
A, P, N = rng.standard_normal((5, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
YE = signs(5)
COUNTS = rng.integers(0, 6, (4, 3)).astype(float)
LABELS = (rng.random((4, 5)) < 0.4).astype(float)
CLASS = rng.integers(0, 5, 4)
CW = rng.uniform(0.5, 2.0, 5)

CASES = [
    ("margin_ranking", lambda a, b, r: F.margin_ranking_loss(a, b, lazyscope.tensor(Y, device=a.device), 0.3,
                                                             reduction=r),
     lambda a, b: np.maximum(0, -Y * (a - b) + 0.3), [X1, X2]),
    ("hinge_embedding", lambda a, r: F.hinge_embedding_loss(a, lazyscope.tensor(Y, device=a.device), 0.7, reduction=r),
     lambda a: np.where(Y == 1, a, np.maximum(0, 0.7 - a)), [X1]),
    ("soft_margin", lambda a, r: F.soft_margin_loss(a, lazyscope.tensor(Y, device=a.device), reduction=r),
     lambda a: np.log1p(np.exp(-Y * a)), [X1]),
    ("cosine_embedding", lambda a, b, r: F.cosine_embedding_loss(a, b, lazyscope.tensor(YE, device=a.device), 0.1,
                                                                 reduction=r),
     lambda a, b: np.where(YE == 1, 1 - cos_ref(a, b), np.maximum(0, cos_ref(a, b) - 0.1)), [A, P]),
    ("triplet", lambda a, b, c, r: F.triplet_margin_loss(a, b, c, margin=2.0, reduction=r),
     lambda a, b, c: np.maximum(dist_ref(a, b) - dist_ref(a, c) + 2.0, 0), [A, P, N]),
    ("triplet_swap_p1", lambda a, b, c, r: F.triplet_margin_loss(a, b, c, p=1, swap=True, reduction=r),
     lambda a, b, c: np.maximum(dist_ref(a, b, 1) - np.minimum(dist_ref(a, c, 1), dist_ref(b, c, 1)) + 1.0, 0),
     [A, P, N]),
    ("poisson_log", lambda a, r: F.poisson_nll_loss(a, lazyscope.tensor(COUNTS, device=a.device), reduction=r),
     lambda a: np.exp(a) - COUNTS * a, [rng.standard_normal((4, 3))]),
    ("poisson_full", lambda a, r: F.poisson_nll_loss(a, lazyscope.tensor(COUNTS, device=a.device), log_input=False,
                                                     full=True, reduction=r),
     lambda a: a - COUNTS * np.log(a + 1e-8) + np.where(
         COUNTS > 1, COUNTS * np.log(np.maximum(COUNTS, 1)) - COUNTS + 0.5 * np.log(2 * np.pi * np.maximum(COUNTS, 1)),
         0), [rng.uniform(0.5, 3, (4, 3))]),
    ("gaussian", lambda a, b, v, r: F.gaussian_nll_loss(a, b, v, full=True, reduction=r),
     lambda a, b, v: 0.5 * (np.log(np.maximum(v, 1e-6)) + (a - b) ** 2 / np.maximum(v, 1e-6) + np.log(2 * np.pi)),
     [A, P, rng.uniform(0.5, 2, (5, 4))]),
    ("multilabel_soft_margin", lambda a, r: F.multilabel_soft_margin_loss(
        a, lazyscope.tensor(LABELS, device=a.device), weight=lazyscope.tensor(CW, device=a.device), reduction=r),
     lambda a: (-(LABELS * log_sigmoid(a) + (1 - LABELS) * log_sigmoid(-a)) * CW).mean(-1),
     [rng.standard_normal((4, 5))]),
]


def multi_margin_ref(x, y, p, margin, weight=None):
    out = np.zeros(len(y))
    for n in range(len(y)):
        for i in range(x.shape[1]):
            if i != y[n]:
                term = max(0.0, margin - x[n, y[n]] + x[n, i]) ** p
                out[n] += term * (weight[y[n]] if weight is not None else 1.0)
    return out / x.shape[1]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,fn,ref,inputs", CASES, ids=[c[0] for c in CASES])
def test_losses_match_numpy_with_every_reduction(device, reduction, name, fn, ref, inputs):
    tensors = [lazyscope.tensor(a, device=device) for a in inputs]
    got = fn(*tensors, reduction).numpy()
    np.testing.assert_allclose(got, reduce(ref(*inputs), reduction), rtol=1e-10, atol=1e-12)
    if reduction == "mean":
        check(lambda *t: fn(*t, "none"), ref, inputs, device, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_loss_modules_call_their_functions(device):
    t = lambda a: lazyscope.tensor(a, device=device)  # noqa: E731
    y = t(Y)
    assert nn.MarginRankingLoss(0.3)(t(X1), t(X2), y).item() == pytest.approx(np.maximum(0, -Y * (X1 - X2) + 0.3)
                                                                              .mean())
    assert nn.TripletMarginLoss(margin=2.0, reduction="sum")(t(A), t(P), t(N)).item() == pytest.approx(
        np.maximum(dist_ref(A, P) - dist_ref(A, N) + 2.0, 0).sum())
    assert nn.GaussianNLLLoss()(t(A), t(P), t(np.full((5, 1), 0.5))).item() == pytest.approx(
        (0.5 * (np.log(0.5) + (A - P) ** 2 / 0.5)).mean())
    assert nn.GaussianNLLLoss()(t(A), t(P), t(np.full(5, 0.5))).item() == pytest.approx(
        (0.5 * (np.log(0.5) + (A - P) ** 2 / 0.5)).mean())
    np.testing.assert_allclose(nn.PairwiseDistance(p=3)(t(A), t(P)).numpy(), dist_ref(A, P, 3))
    # The other modules against the NumPy formulas too (their functions are checked above).
    ye = t(YE)
    assert nn.HingeEmbeddingLoss(0.7, reduction="sum")(t(X1), y).item() == pytest.approx(
        np.where(Y == 1, X1, np.maximum(0, 0.7 - X1)).sum())
    assert nn.SoftMarginLoss()(t(X1), y).item() == pytest.approx(np.log1p(np.exp(-Y * X1)).mean())
    assert nn.CosineEmbeddingLoss(0.1)(t(A), t(P), ye).item() == pytest.approx(
        np.where(YE == 1, 1 - cos_ref(A, P), np.maximum(0, cos_ref(A, P) - 0.1)).mean())
    rates = rng.standard_normal((4, 3))
    assert nn.PoissonNLLLoss()(t(rates), t(COUNTS)).item() == pytest.approx((np.exp(rates) - COUNTS * rates).mean())
    logits = rng.standard_normal((4, 5))
    assert nn.MultiLabelSoftMarginLoss(weight=t(CW))(t(logits), t(LABELS)).item() == pytest.approx(
        (-(LABELS * log_sigmoid(logits) + (1 - LABELS) * log_sigmoid(-logits)) * CW).mean(-1).mean())
    with pytest.raises(TypeError, match="MarginRankingLoss: unexpected argument 'gamma'"):
        nn.MarginRankingLoss(gamma=1)
    with pytest.raises(ValueError, match=r"gaussian_nll_loss: var of shape \[5, 3\] does not match input \[5, 4\]"):
        F.gaussian_nll_loss(t(A), t(P), t(np.ones((5, 3))))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p,weighted", [(1, False), (2, True)])
def test_multi_margin_loss_matches_its_sum(device, p, weighted):
    x = rng.standard_normal((4, 5))
    w = CW if weighted else None
    t = lambda a: lazyscope.tensor(a, device=device)  # noqa: E731
    got = F.multi_margin_loss(t(x), t(CLASS), p=p, margin=0.8, weight=t(w) if weighted else None, reduction="none")
    np.testing.assert_allclose(got.numpy(), multi_margin_ref(x, CLASS, p, 0.8, w), rtol=1e-12)
    module = nn.MultiMarginLoss(p=p, margin=0.8, weight=t(w) if weighted else None)
    assert module(t(x), t(CLASS)).item() == pytest.approx(multi_margin_ref(x, CLASS, p, 0.8, w).mean())
    check(lambda a: F.multi_margin_loss(a, t(CLASS), p=p, margin=0.8, reduction="none"),
          lambda a: multi_margin_ref(a, CLASS, p, 0.8), [x], device)
