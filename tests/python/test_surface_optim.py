"""Adamax, Adadelta, NAdam, RAdam and the schedulers ConstantLR,
PolynomialLR, MultiplicativeLR, CosineAnnealingWarmRestarts, SequentialLR
and CyclicLR. Each optimizer's parameters over several steps against the
algorithm PyTorch documents, written here in NumPy float64; each schedule
against its documented formula."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import optim
from lazyscope.core import lazy_model as lm

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(12)
X = rng.standard_normal(6)
W0 = rng.standard_normal(6)


def grad_of(w):
    """The gradient of sum(w·x) + sum(w³)/3: g = x + w², so that every step's gradient differs."""
    return X + w * w


def run(device, make, steps):
    w = lazyscope.nn.Parameter(lazyscope.tensor(W0, device=device))
    opt = make([w])
    x = lazyscope.tensor(X, device=device)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        ((w * x).sum() + (w * w * w).sum() / 3).backward()
        opt.step()
        if device != "cpu":
            lm.mark_step()
        out.append(w.numpy().copy())
    return np.array(out)


def adamax_ref(steps, lr=2e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.0):
    w, m, u, out = W0.copy(), np.zeros(6), np.zeros(6), []
    for t in range(1, steps + 1):
        g = grad_of(w) + wd * w
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g) + eps)
        w = w - lr / (1 - b1 ** t) * m / u
        out.append(w)
    return np.array(out)


def adadelta_ref(steps, lr=1.0, rho=0.9, eps=1e-6, wd=0.0):
    w, v, a, out = W0.copy(), np.zeros(6), np.zeros(6), []
    for _ in range(steps):
        g = grad_of(w) + wd * w
        v = rho * v + (1 - rho) * g * g
        delta = np.sqrt(a + eps) / np.sqrt(v + eps) * g
        a = rho * a + (1 - rho) * delta * delta
        w = w - lr * delta
        out.append(w)
    return np.array(out)


def decayed(w, lr, wd, decoupled):
    """(w, g) after weight decay: w shrunk by lr·wd (decoupled, as AdamW), or wd·w added to the gradient."""
    if decoupled:
        return w * (1 - lr * wd), grad_of(w)
    return w, grad_of(w) + wd * w


def nadam_ref(steps, lr=2e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, psi=4e-3, decoupled=False):
    w, m, v, mu_prod, out = W0.copy(), np.zeros(6), np.zeros(6), 1.0, []
    for t in range(1, steps + 1):
        w, g = decayed(w, lr, wd, decoupled)
        mu = b1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        mu_prod *= mu
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        v_hat = v / (1 - b2 ** t)
        w = w - lr * (1 - mu) / (1 - mu_prod) * g / (np.sqrt(v_hat) + eps) \
            - lr * mu_next / (1 - mu_prod * mu_next) * m / (np.sqrt(v_hat) + eps)
        out.append(w)
    return np.array(out)


def radam_ref(steps, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.0, decoupled=False):
    w, m, v, out = W0.copy(), np.zeros(6), np.zeros(6), []
    rho_inf = 2 / (1 - b2) - 1
    for t in range(1, steps + 1):
        w, g = decayed(w, lr, wd, decoupled)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat = m / (1 - b1 ** t)
        rho_t = rho_inf - 2 * t * b2 ** t / (1 - b2 ** t)
        if rho_t > 5:
            r = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            w = w - lr * m_hat * r * math.sqrt(1 - b2 ** t) / (np.sqrt(v) + eps)
        else:
            w = w - lr * m_hat
        out.append(w)
    return np.array(out)


OPTIMIZERS = [
    ("adamax", lambda p: optim.Adamax(p, lr=0.05), lambda n: adamax_ref(n, lr=0.05)),
    ("adamax_wd", lambda p: optim.Adamax(p, lr=0.05, betas=(0.8, 0.99), weight_decay=0.1),
     lambda n: adamax_ref(n, lr=0.05, b1=0.8, b2=0.99, wd=0.1)),
    ("adadelta", lambda p: optim.Adadelta(p), lambda n: adadelta_ref(n)),
    ("adadelta_wd", lambda p: optim.Adadelta(p, lr=0.5, rho=0.8, weight_decay=0.2),
     lambda n: adadelta_ref(n, lr=0.5, rho=0.8, wd=0.2)),
    ("nadam", lambda p: optim.NAdam(p, lr=0.05), lambda n: nadam_ref(n, lr=0.05)),
    ("nadam_decoupled", lambda p: optim.NAdam(p, lr=0.05, weight_decay=0.1, decoupled_weight_decay=True),
     lambda n: nadam_ref(n, lr=0.05, wd=0.1, decoupled=True)),
    ("radam", lambda p: optim.RAdam(p, lr=0.05), lambda n: radam_ref(n, lr=0.05)),
    ("radam_wd", lambda p: optim.RAdam(p, lr=0.05, weight_decay=0.1), lambda n: radam_ref(n, lr=0.05, wd=0.1)),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name,make,ref", OPTIMIZERS, ids=[o[0] for o in OPTIMIZERS])
def test_optimizer_trajectories_match_the_documented_algorithm(device, name, make, ref):
    steps = 9  # RAdam's rectification turns on at step 6 (beta2 = 0.999)
    np.testing.assert_allclose(run(device, make, steps), ref(steps), rtol=1e-10, atol=1e-12)


def test_optimizers_reject_bad_hyperparameters():
    w = [lazyscope.nn.Parameter(lazyscope.zeros(2))]
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.NAdam(w, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="Invalid rho value: 1.5"):
        optim.Adadelta(w, rho=1.5)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.Adamax(w, lr=-1)


def lrs(make, epochs, lr=1.0, step=lambda s, e: s.step()):
    opt = optim.SGD([lazyscope.nn.Parameter(lazyscope.zeros(1))], lr=lr, momentum=0.9)
    sched = make(opt)
    out = [opt.param_groups[0]["lr"]]
    for e in range(1, epochs):
        step(sched, e)
        out.append(opt.param_groups[0]["lr"])
    return out, opt, sched


def test_constant_polynomial_and_multiplicative_schedules():
    got, _, _ = lrs(lambda o: optim.lr_scheduler.ConstantLR(o, factor=0.5, total_iters=3), 6)
    assert got == [0.5, 0.5, 0.5, 1.0, 1.0, 1.0]
    got, _, _ = lrs(lambda o: optim.lr_scheduler.PolynomialLR(o, total_iters=4, power=2.0), 6)
    np.testing.assert_allclose(got, [(1 - min(e, 4) / 4) ** 2 for e in range(6)])
    got, _, _ = lrs(lambda o: optim.lr_scheduler.MultiplicativeLR(o, lambda e: 0.5 + 0.1 * e), 5)
    np.testing.assert_allclose(got, np.cumprod([1.0] + [0.5 + 0.1 * e for e in range(1, 5)]))


@pytest.mark.parametrize("t_mult", [1, 2])
def test_cosine_warm_restarts_by_step_and_by_fractional_epoch(t_mult):
    def expected(epoch, t0=3, eta_min=0.1):
        t_i, t_cur = t0, epoch
        while t_cur >= t_i:
            t_cur -= t_i
            t_i *= t_mult
        return eta_min + (1 - eta_min) * (1 + math.cos(math.pi * t_cur / t_i)) / 2

    make = lambda o: optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 3, t_mult, eta_min=0.1)  # noqa: E731
    got, _, _ = lrs(make, 16)
    np.testing.assert_allclose(got, [expected(e) for e in range(16)], rtol=1e-12)
    got, _, _ = lrs(make, 12, step=lambda s, e: s.step(e * 0.75))  # per-batch stepping with fractional epochs
    np.testing.assert_allclose(got, [expected(e * 0.75) for e in range(12)], rtol=1e-12)


def test_sequential_lr_starts_each_scheduler_at_its_milestone():
    def make(o):
        first = optim.lr_scheduler.ConstantLR(o, factor=0.1, total_iters=2)
        second = optim.lr_scheduler.ExponentialLR(o, gamma=0.9)
        return optim.lr_scheduler.SequentialLR(o, [first, second], milestones=[2])

    got, _, sched = lrs(make, 6)
    # ConstantLR for epochs 0-1, then ExponentialLR from its own epoch 0 at epoch 2.
    np.testing.assert_allclose(got, [0.1, 0.1, 1.0, 0.9, 0.81, 0.729])
    assert sched.get_last_lr() == [got[-1]]
    with pytest.raises(ValueError, match="SequentialLR: expected 1 milestones for 2 schedulers, got 2"):
        make2 = lambda o: optim.lr_scheduler.SequentialLR(  # noqa: E731
            o, [optim.lr_scheduler.ConstantLR(o), optim.lr_scheduler.ConstantLR(o)], milestones=[1, 2])
        lrs(make2, 1)


@pytest.mark.parametrize("mode", ["triangular", "triangular2", "exp_range"])
def test_cyclic_lr_and_its_momentum_follow_the_triangle(mode):
    base, top, up, down, gamma = 0.1, 1.0, 3, 5, 0.95

    def expected(e):
        cycle = math.floor(1 + e / (up + down))
        x = 1 + e / (up + down) - cycle
        ratio = up / (up + down)
        factor = x / ratio if x <= ratio else (x - 1) / (ratio - 1)
        scale = {"triangular": 1.0, "triangular2": 1 / 2 ** (cycle - 1), "exp_range": gamma ** e}[mode]
        return base + (top - base) * factor * scale, 0.9 - (0.9 - 0.8) * factor * scale

    make = lambda o: optim.lr_scheduler.CyclicLR(o, base, top, up, down, mode, gamma)  # noqa: E731
    opt = optim.SGD([lazyscope.nn.Parameter(lazyscope.zeros(1))], lr=0.5, momentum=0.5)
    sched = make(opt)
    for e in range(20):
        want_lr, want_m = expected(e)
        assert opt.param_groups[0]["lr"] == pytest.approx(want_lr, rel=1e-12)
        assert opt.param_groups[0]["momentum"] == pytest.approx(want_m, rel=1e-12)
        sched.step()
    adam = optim.Adam([lazyscope.nn.Parameter(lazyscope.zeros(1))])
    optim.lr_scheduler.CyclicLR(adam, base, top, up, down, mode, gamma)
    assert adam.param_groups[0]["betas"] == (pytest.approx(0.9), 0.999)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        optim.lr_scheduler.CyclicLR(optim.Adadelta([lazyscope.nn.Parameter(lazyscope.zeros(1))]), base, top)
