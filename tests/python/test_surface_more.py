"""Activations, losses, elementwise math and schedulers added to the PyTorch
surface as compositions (nn/functional.py, nn/layers.py, nn/loss.py,
_surface.py, optim/lr_scheduler.py): values against NumPy in float64 (the
definitions PyTorch documents), gradients against central differences of
the NumPy forward, and the errors for bad arguments."""
import math

import numpy as np
import pytest

import lazyscope
import lazyscope.nn as nn
import lazyscope.nn.functional as F
from test_autograd import away_from, check

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(8)


def softplus(x):
    return np.logaddexp(0, x)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


ACTIVATIONS = [
    ("elu", lambda t: F.elu(t, 0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x)), nn.ELU(0.7)),
    ("hardtanh", lambda t: F.hardtanh(t, -0.5, 2.0), lambda x: np.clip(x, -0.5, 2.0), nn.Hardtanh(-0.5, 2.0)),
    ("relu6", F.relu6, lambda x: np.clip(x, 0, 6), nn.ReLU6()),
    ("logsigmoid", F.logsigmoid, lambda x: -softplus(-x), nn.LogSigmoid()),
    ("mish", F.mish, lambda x: x * np.tanh(softplus(x)), nn.Mish()),
    ("glu", F.glu, lambda x: x[..., :3] * sigmoid(x[..., 3:]), nn.GLU()),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref,module", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations_match_numpy_and_their_modules(device, name, fn, ref, module):
    x = away_from(rng.standard_normal((4, 6)) * 4, [0.0, -0.5, 2.0, 6.0])
    x[0, :2] = [40.0, -40.0]  # far tails: logsigmoid and mish stay finite
    t = lazyscope.tensor(x.astype(np.float32), device=device)
    np.testing.assert_allclose(fn(t).numpy(), ref(x), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(module(t).numpy(), ref(x), rtol=2e-6, atol=2e-6)
    check(fn, ref, [x[1:] / 4], device)


def test_glu_needs_an_even_dimension():
    with pytest.raises(ValueError, match=r"glu: halving dimension -1 needs an even size, got 5.*test_surface_more.py:"):
        F.glu(lazyscope.zeros(2, 5))


LOSSES = [
    ("smooth_l1", lambda a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.5),
     lambda d: np.where(np.abs(d) < 0.5, 0.5 * d * d / 0.5, np.abs(d) - 0.25), nn.SmoothL1Loss(beta=0.5)),
    ("huber", lambda a, b, r: F.huber_loss(a, b, reduction=r, delta=0.5),
     lambda d: np.where(np.abs(d) < 0.5, 0.5 * d * d, 0.5 * (np.abs(d) - 0.25)), nn.HuberLoss(delta=0.5)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,fn,ref,module", LOSSES, ids=[lo[0] for lo in LOSSES])
def test_regression_losses_match_numpy(device, name, fn, ref, module):
    a, b = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    b = a - away_from(a - b, [-0.5, 0.5])
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    pointwise = ref(a - b)
    for reduction, want in (("none", pointwise), ("sum", pointwise.sum()), ("mean", pointwise.mean())):
        np.testing.assert_allclose(fn(ta, tb, reduction).numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(module(ta, tb).numpy(), pointwise.mean(), rtol=1e-12)
    check(lambda x: fn(x, tb, "sum"), lambda x: ref(x - b).sum(), [a], device)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        fn(ta, tb, "max")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_numpy_with_zero_targets(device, log_target):
    logp = np.log(rng.dirichlet(np.ones(5), size=4))
    q = rng.dirichlet(np.ones(5), size=4)
    q[0, 1] = 0.0  # contributes 0, not NaN
    target = np.log(q + 1e-300) if log_target else q
    want = np.where(q > 0, q * (np.log(np.where(q > 0, q, 1)) - logp), 0.0)
    t_in, t_tg = lazyscope.tensor(logp, device=device), lazyscope.tensor(target, device=device)
    np.testing.assert_allclose(F.kl_div(t_in, t_tg, reduction="sum", log_target=log_target).numpy(), want.sum(),
                               rtol=1e-10)
    np.testing.assert_allclose(nn.KLDivLoss(reduction="batchmean", log_target=log_target)(t_in, t_tg).numpy(),
                               want.sum() / 4, rtol=1e-10)
    with pytest.raises(ValueError, match="KLDivLoss: 'max' is not a valid value"):
        nn.KLDivLoss(reduction="max")


@pytest.mark.parametrize("device", DEVICES)
def test_cosine_similarity_matches_numpy(device):
    a, b = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    b[2] = 0.0  # a zero vector: the eps floor, no NaN
    want = (a * b).sum(1) / (np.maximum(np.linalg.norm(a, axis=1), 1e-8) * np.maximum(np.linalg.norm(b, axis=1), 1e-8))
    ta, tb = lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device)
    np.testing.assert_allclose(F.cosine_similarity(ta, tb).numpy(), want, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(nn.CosineSimilarity(dim=1)(ta, tb).numpy(), want, rtol=1e-12, atol=1e-15)
    check(lambda x: F.cosine_similarity(x, tb[:2]), lambda x: (x * b[:2]).sum(1) / (
        np.linalg.norm(x, axis=1) * np.linalg.norm(b[:2], axis=1)), [a[:2]], device)


MATH = [
    ("expm1", np.expm1), ("exp2", np.exp2), ("log2", np.log2), ("log10", np.log10), ("sinh", np.sinh),
    ("cosh", np.cosh), ("frac", lambda x: x - np.trunc(x)), ("logit", lambda p: np.log(p) - np.log1p(-p)),
]
# The input each takes: its domain, made in the test's dtype so that the
# oracle and the engine see the same numbers.
DOMAIN = {"log2": lambda x: np.abs(x) + 0.1, "log10": lambda x: np.abs(x) + 0.1, "logit": sigmoid}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name,ref", MATH, ids=[m[0] for m in MATH])
def test_elementwise_math_matches_numpy(device, dtype, name, ref):
    x = rng.standard_normal(200) * 3
    x[:4] = [1e-7, -1e-7, 1e-3, 20.0]  # expm1/sinh near 0: exp(x) - 1 would lose every digit
    x = DOMAIN.get(name, lambda v: v)(x).astype(dtype)
    t = lazyscope.tensor(x, device=device)
    got = getattr(lazyscope, name)(t).numpy()
    assert got.dtype == dtype
    rtol = 2e-6 if dtype == np.float32 else 1e-12
    # logit and log near 1 are near 0: their absolute error is the input's rounding.
    atol = (1e-6 if dtype == np.float32 else 1e-14) if name in ("logit", "log2", "log10") else 1e-30
    with np.errstate(divide="ignore"):  # logit of a float32 sigmoid(20) == 1: inf, on both sides
        want = ref(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    np.testing.assert_allclose(getattr(t, name)().numpy(), got)


@pytest.mark.parametrize("device", DEVICES)
def test_nan_to_num_clamps_count_and_broadcast(device):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0, 0.0], dtype=np.float32)
    t = lazyscope.tensor(x, device=device)
    np.testing.assert_array_equal(lazyscope.nan_to_num(t).numpy(), np.nan_to_num(x))
    np.testing.assert_array_equal(t.nan_to_num(nan=1.0, posinf=9.0, neginf=-9.0).numpy(),
                                  np.nan_to_num(x, nan=1.0, posinf=9.0, neginf=-9.0))
    y = lazyscope.tensor(x[3:], device=device)
    np.testing.assert_array_equal(lazyscope.clamp_min(y, -1.0).numpy(), np.maximum(x[3:], -1.0))
    np.testing.assert_array_equal(y.clamp_max(0.5).numpy(), np.minimum(x[3:], 0.5))
    m = np.array([[0, 1, 2], [0, 0, 3]], dtype=np.float32)
    tm = lazyscope.tensor(m, device=device)
    assert lazyscope.count_nonzero(tm).item() == 3
    np.testing.assert_array_equal(tm.count_nonzero(dim=1).numpy(), np.count_nonzero(m, axis=1))
    np.testing.assert_array_equal(lazyscope.broadcast_to(y, (2, 3)).numpy(), np.broadcast_to(x[3:], (2, 3)))
    a, b = lazyscope.broadcast_tensors(lazyscope.tensor(np.ones((3, 1)), device=device),
                                       lazyscope.tensor(np.ones(4), device=device))
    assert tuple(a.shape) == (3, 4) and tuple(b.shape) == (3, 4)


@pytest.mark.parametrize("device", DEVICES)
def test_addcmul_addcdiv_unflatten_and_bmm(device):
    a, b, c = (rng.standard_normal((3, 4)) for _ in range(3))
    ta, tb, tc = (lazyscope.tensor(v, device=device) for v in (a, b, c))
    np.testing.assert_allclose(lazyscope.addcmul(ta, tb, tc, value=0.5).numpy(), a + 0.5 * b * c, rtol=1e-12)
    np.testing.assert_allclose(ta.addcdiv(tb, tc, value=2).numpy(), a + 2 * b / c, rtol=1e-12)
    u = ta.clone()
    u.addcmul_(tb, tc, value=-1)
    np.testing.assert_allclose(u.numpy(), a - b * c, rtol=1e-12)
    x = lazyscope.tensor(rng.standard_normal((2, 12, 5)), device=device)
    assert tuple(x.unflatten(1, (3, -1)).shape) == (2, 3, 4, 5)
    np.testing.assert_array_equal(x.unflatten(-2, (4, 3)).numpy(), x.numpy().reshape(2, 4, 3, 5))
    with pytest.raises(ValueError, match=r"unflatten: sizes \(5, 2\) do not multiply to dimension 1's size 12"):
        x.unflatten(1, (5, 2))
    p, q = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    np.testing.assert_allclose(lazyscope.tensor(p, device=device).bmm(lazyscope.tensor(q, device=device)).numpy(),
                               p @ q, rtol=1e-12)
    with pytest.raises(ValueError, match="bmm: expected two 3-D tensors, got 2-D and 3-D"):
        ta.bmm(lazyscope.tensor(q, device=device))


def lrs(scheduler, optimizer, epochs):
    out = []
    for _ in range(epochs):
        out.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return out


def optimizer(lr=0.1):
    return lazyscope.optim.SGD([nn.Parameter(lazyscope.zeros(2))], lr=lr)


def test_multistep_exponential_and_linear_schedules_follow_their_formulas():
    o = optimizer()
    got = lrs(lazyscope.optim.lr_scheduler.MultiStepLR(o, milestones=[5, 2], gamma=0.5), o, 7)
    np.testing.assert_allclose(got, [0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025])
    o = optimizer()
    got = lrs(lazyscope.optim.lr_scheduler.ExponentialLR(o, gamma=0.9), o, 4)
    np.testing.assert_allclose(got, [0.1 * 0.9 ** e for e in range(4)])
    o = optimizer()
    got = lrs(lazyscope.optim.lr_scheduler.LinearLR(o, start_factor=0.25, total_iters=3), o, 6)
    np.testing.assert_allclose(got, [0.025, 0.05, 0.075, 0.1, 0.1, 0.1])
    with pytest.raises(ValueError, match="LinearLR: start_factor must be in"):
        lazyscope.optim.lr_scheduler.LinearLR(optimizer(), start_factor=0)
    assert math.isclose(o.param_groups[0]["lr"], 0.1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("lr_decay,weight_decay,initial,maximize",
                         [(0, 0, 0, False), (0.1, 0.01, 0.5, False), (0.0, 0.0, 0.1, True)])
def test_adagrad_matches_numpy(device, lr_decay, weight_decay, initial, maximize):
    p0 = rng.standard_normal(5)
    grads = [rng.standard_normal(5) for _ in range(4)]
    p = nn.Parameter(lazyscope.tensor(p0, device=device))
    opt = lazyscope.optim.Adagrad([p], lr=0.05, lr_decay=lr_decay, weight_decay=weight_decay,
                                  initial_accumulator_value=initial, maximize=maximize)
    ref, total = p0.copy(), np.full(5, float(initial))
    for step, g in enumerate(grads, 1):
        p.grad = lazyscope.tensor(g, device=device)
        opt.step()
        g = (-g if maximize else g) + weight_decay * ref
        total = total + g * g
        ref = ref - 0.05 / (1 + (step - 1) * lr_decay) * g / (np.sqrt(total) + 1e-10)
    np.testing.assert_allclose(p.numpy(), ref, rtol=1e-12)
    with pytest.raises(ValueError, match="Invalid lr_decay: -1"):
        lazyscope.optim.Adagrad([p], lr_decay=-1)


@pytest.mark.parametrize("device", DEVICES)
def test_median_matches_numpy_lower_median_and_nan(device):
    x = rng.integers(0, 5, (5, 8)).astype(np.float64)
    x[3, 2] = np.nan
    t = lazyscope.tensor(x, device=device)
    assert np.isnan(lazyscope.median(t).item())
    clean = lazyscope.tensor(x[[0, 1, 2, 4]], device=device)
    assert lazyscope.median(clean).item() == np.sort(x[[0, 1, 2, 4]].ravel())[(32 - 1) // 2]
    values, indices = t.median(1)
    for r in range(5):
        if r == 3:
            assert np.isnan(values[r].item()) and indices[r].item() == 2
            continue
        order = np.argsort(x[r], kind="stable")
        assert values[r].item() == x[r][order[3]] and indices[r].item() == order[3]
    kept = t.median(0, keepdim=True)
    assert tuple(kept.values.shape) == (1, 8) and tuple(kept.indices.shape) == (1, 8)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, 0.0, float("inf")])
def test_cdist_matches_numpy(device, p):
    a, b = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 4, 3))
    b[0, 1] = a[0, 2]  # an equal pair: distance 0 exactly
    d = np.abs(a[:, :, None, :] - b[:, None, :, :])
    if p == 0:
        want = (d != 0).sum(-1).astype(float)
    elif math.isinf(p):
        want = d.max(-1)
    else:
        want = (d ** p).sum(-1) ** (1 / p)
    got = lazyscope.cdist(lazyscope.tensor(a, device=device), lazyscope.tensor(b, device=device), p=p).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert got[0, 2, 1] == 0.0
    with pytest.raises(ValueError, match=r"cdist: expected \[.., P, M\] and \[.., R, M\] with the same M"):
        lazyscope.cdist(lazyscope.tensor(a, device=device), lazyscope.tensor(b[..., :2], device=device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize_match_numpy(device, right):
    seq = np.sort(rng.integers(0, 10, 12)).astype(np.float32)
    values = rng.integers(-1, 12, (3, 4)).astype(np.float32)
    side = "right" if right else "left"
    got = lazyscope.searchsorted(lazyscope.tensor(seq, device=device), lazyscope.tensor(values, device=device),
                                 right=right)
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, values, side=side))
    assert got.dtype == lazyscope.int64
    got = lazyscope.bucketize(lazyscope.tensor(values, device=device), lazyscope.tensor(seq, device=device),
                              right=right, out_int32=True)
    np.testing.assert_array_equal(got.numpy(), np.searchsorted(seq, values, side=side))
    assert got.dtype == lazyscope.int32
    rows = np.sort(rng.standard_normal((3, 6)), axis=1)
    vals = rng.standard_normal((3, 2))
    got = lazyscope.searchsorted(lazyscope.tensor(rows, device=device), lazyscope.tensor(vals, device=device),
                                 side=side)
    np.testing.assert_array_equal(got.numpy(), [np.searchsorted(r, v, side=side) for r, v in zip(rows, vals)])
