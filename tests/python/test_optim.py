"""lazyscope.optim: several steps of each update rule against a NumPy
re-implementation of PyTorch's formulas, state dicts, schedulers, and the
compile cache (a changing lr must not recompile)."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import nn, optim
from lazyscope.core import lazy_model as lm

DEVICES = ["cpu", "lazy:0"]


def quad_grad(w, a):
    """Gradient of the loss sum((w * a)^2) / 2 + sum(w): w * a^2 + 1."""
    return w * a * a + 1.0


def run_engine(make_opt, device, steps, lrs=None):
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((3, 4)).astype(np.float32)
    a = (rng.random((3, 4)) + 0.5).astype(np.float32)
    model = nn.Module()
    model.w = nn.Parameter(lazyscope.tensor(w0, device=device))
    ta = lazyscope.tensor(a, device=device)
    opt = make_opt([model.w])
    for i in range(steps):
        if lrs is not None:
            for g in opt.param_groups:
                g["lr"] = lrs[i]
        opt.zero_grad()
        loss = ((model.w * ta) ** 2).sum() * 0.5 + model.w.sum()
        loss.backward()
        opt.step()
        lm.mark_step()
    return w0, a, model.w.numpy().astype(np.float64)


def sgd_ref(w, a, steps, lr, momentum=0.0, dampening=0.0, wd=0.0, nesterov=False, lrs=None):
    w = w.astype(np.float64)
    buf = None
    for i in range(steps):
        lr_i = lrs[i] if lrs else lr
        g = quad_grad(w, a) + wd * w
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - lr_i * g
    return w


def adam_ref(w, a, steps, lr, betas=(0.9, 0.999), eps=1e-8, wd=0.0, amsgrad=False, decoupled=False):
    w = w.astype(np.float64)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    vmax = np.zeros_like(w)
    for t in range(1, steps + 1):
        g = quad_grad(w, a)
        if wd and decoupled:
            w = w * (1 - lr * wd)
        elif wd:
            g = g + wd * w
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        if amsgrad:
            vmax = np.maximum(vmax, v)
        second = vmax if amsgrad else v
        denom = np.sqrt(second) / math.sqrt(1 - betas[1] ** t) + eps
        w = w - lr / (1 - betas[0] ** t) * m / denom
    return w


SGD_CASES = [dict(), dict(momentum=0.9), dict(momentum=0.9, dampening=0.3), dict(momentum=0.8, nesterov=True),
             dict(momentum=0.5, weight_decay=0.1)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kwargs", SGD_CASES, ids=lambda k: ",".join(k) or "plain")
def test_sgd_matches_numpy(device, kwargs):
    w0, a, got = run_engine(lambda p: optim.SGD(p, lr=0.05, **kwargs), device, 6)
    ref = sgd_ref(w0, a, 6, 0.05, kwargs.get("momentum", 0.0), kwargs.get("dampening", 0.0),
                  kwargs.get("weight_decay", 0.0), kwargs.get("nesterov", False))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


ADAM_CASES = [dict(), dict(weight_decay=0.1), dict(amsgrad=True), dict(betas=(0.5, 0.9), eps=1e-3)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("kwargs", ADAM_CASES, ids=lambda k: ",".join(k) or "default")
def test_adam_and_adamw_match_numpy(device, cls, kwargs):
    w0, a, got = run_engine(lambda p: getattr(optim, cls)(p, lr=0.1, **kwargs), device, 6)
    wd = kwargs.get("weight_decay", 0.0 if cls == "Adam" else 1e-2)
    ref = adam_ref(w0, a, 6, 0.1, kwargs.get("betas", (0.9, 0.999)), kwargs.get("eps", 1e-8), wd,
                   kwargs.get("amsgrad", False), decoupled=cls == "AdamW")
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_changing_lr_each_step_matches_numpy_and_does_not_recompile():
    lazyscope._C.clear_compile_cache()
    lazyscope._C.reset_metrics()
    lrs = [0.1, 0.05, 0.02, 0.08, 0.01, 0.03, 0.07]
    w0, a, got = run_engine(lambda p: optim.SGD(p, lr=0.1, momentum=0.9), "lazy:0", len(lrs), lrs)
    np.testing.assert_allclose(got, sgd_ref(w0, a, len(lrs), None, 0.9, lrs=lrs), rtol=1e-5, atol=1e-5)
    # One graph for every step, the first included (the momentum buffer starts
    # as zeros updated with a gradient weight of 1): a new lr each step hits
    # the cache.
    assert lm.counters()["UncachedCompile"] == 1
    assert lm.counters()["CachedCompile"] == len(lrs) - 1


def test_adam_with_a_scheduler_compiles_once():
    lazyscope._C.clear_compile_cache()
    lazyscope._C.reset_metrics()
    model = nn.Linear(4, 2).to("lazy:0")
    opt = optim.Adam(model.parameters(), lr=0.1)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
    x = lazyscope.randn(8, 4, device="lazy:0")
    for _ in range(5):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        sched.step()
        lm.mark_step()
    assert lm.counters()["UncachedCompile"] == 1


def test_step_lr_and_cosine_annealing_follow_their_formulas():
    p = nn.Parameter(lazyscope.zeros(1))
    opt = optim.SGD([p], lr=1.0)
    sched = optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    seen = []
    for _ in range(8):
        seen.append(opt.param_groups[0]["lr"])
        sched.step()
    assert seen == [1.0 * 0.5 ** (e // 3) for e in range(8)]
    assert sched.get_last_lr() == [0.5 ** (8 // 3)]
    opt = optim.SGD([p], lr=0.2)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10, eta_min=0.01)
    for epoch in range(12):
        expected = 0.01 + (0.2 - 0.01) * (1 + math.cos(math.pi * epoch / 10)) / 2
        assert opt.param_groups[0]["lr"] == pytest.approx(expected)
        sched.step()


def test_zero_grad_and_param_groups():
    a, b = nn.Parameter(lazyscope.ones(2)), nn.Parameter(lazyscope.ones(3))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    (a.sum() + b.sum()).backward()
    opt.zero_grad(set_to_none=False)
    a2, b2 = opt.param_groups[0]["params"][0], opt.param_groups[1]["params"][0]
    assert np.all(a2.grad.numpy() == 0)
    opt.zero_grad()
    assert a2.grad is None and b2.grad is None
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        optim.SGD([a])


def test_optimizer_state_dict_round_trip_continues_identically():
    def make():
        model = nn.Linear(3, 2)
        model.load_state_dict({"weight": lazyscope.tensor(np.arange(6, dtype=np.float32).reshape(2, 3) * 0.1),
                               "bias": lazyscope.zeros(2)})
        return model, optim.Adam(model.parameters(), lr=0.05)
    x = lazyscope.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))

    def step(model, opt):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        opt.step()
    m1, o1 = make()
    for _ in range(3):
        step(m1, o1)
    m2, o2 = make()
    m2.load_state_dict(m1.state_dict())
    sd = o1.state_dict()
    assert sorted(sd["state"]) == [0, 1] and sd["state"][0]["step"] == 3
    assert sd["param_groups"][0]["params"] == [0, 1]
    o2.load_state_dict(sd)
    step(m1, o1)
    step(m2, o2)
    np.testing.assert_allclose(m2.weight.numpy(), m1.weight.numpy(), rtol=1e-6)


def test_training_a_small_mlp_reduces_the_loss_on_lazy():
    lazyscope.manual_seed(0)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 5)).astype(np.float32)
    y = (x[:, :2].sum(1) > 0).astype(np.int64)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2)).to("lazy:0")
    opt = optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    tx, ty = lazyscope.tensor(x, device="lazy:0"), lazyscope.tensor(y, device="lazy:0")
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(tx), ty)
        loss.backward()
        lm.optimizer_step(opt, barrier=True) if hasattr(lm, "optimizer_step") else (opt.step(), lm.mark_step())
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("make", [lambda p: optim.SGD(p, lr=0.1, momentum=0.9), lambda p: optim.Adam(p, lr=0.1),
                                  lambda p: optim.AdamW(p, lr=0.1, amsgrad=True)], ids=["SGD", "Adam", "AdamW"])
def test_a_parameter_reference_held_outside_the_model_sees_the_optimizers_updates(device, make):
    model = nn.Linear(3, 2).to(device)
    weight, bias = model.weight, model.bias  # user references, taken before training
    start = weight.numpy().copy()
    opt = make(model.parameters())
    x = lazyscope.randn(5, 3, device=device)
    for _ in range(3):
        opt.zero_grad()
        model(x).pow(2).sum().backward()
        opt.step()
        lm.mark_step()
    # Same objects everywhere (PyTorch's in-place update), and the reference
    # reads the trained value.
    assert model.weight is weight and model.bias is bias
    assert opt.param_groups[0]["params"][0] is weight
    assert weight.is_leaf and weight.requires_grad and isinstance(weight, nn.Parameter)
    assert not np.allclose(weight.numpy(), start)
    # A plain forward through the held reference matches the model's.
    np.testing.assert_allclose((x @ weight.t() + bias).numpy(), model(x).detach().numpy(), rtol=1e-6)


def test_load_state_dict_and_init_update_parameters_in_place():
    model = nn.Linear(3, 2)
    weight = model.weight
    new = np.arange(6, dtype=np.float32).reshape(2, 3)
    model.load_state_dict({"weight": lazyscope.tensor(new, dtype=lazyscope.float64), "bias": lazyscope.zeros(2)})
    assert model.weight is weight and weight.dtype == lazyscope.float32
    np.testing.assert_array_equal(weight.numpy(), new)
    assert nn.init.constant_(weight, 0.5) is weight
    np.testing.assert_array_equal(weight.numpy(), np.full((2, 3), 0.5, np.float32))
    # A plain tensor is filled in place too (torch.nn.init's contract).
    t = lazyscope.zeros(4)
    assert nn.init.ones_(t) is t and np.all(t.numpy() == 1)


def test_zero_grad_without_set_to_none_zeroes_the_existing_gradient_in_place():
    model = nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    model(lazyscope.ones(2, 3)).sum().backward()
    grad = model.weight.grad
    opt.zero_grad(set_to_none=False)
    assert np.all(grad.numpy() == 0) and np.all(model.weight.grad.numpy() == 0)


def test_optimizer_load_state_dict_does_not_share_moments_with_its_source():
    model = nn.Linear(3, 2)
    o1 = optim.Adam(model.parameters(), lr=0.1)
    model(lazyscope.ones(1, 3)).sum().backward()
    o1.step()
    o2 = optim.Adam(model.parameters(), lr=0.1)
    o2.load_state_dict(o1.state_dict())
    before = o2.state[model.weight]["exp_avg"].numpy().copy()
    o1.step()  # updates o1's moments in place
    np.testing.assert_array_equal(o2.state[model.weight]["exp_avg"].numpy(), before)
