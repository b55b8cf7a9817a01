"""The optimizers' foreach path (one C++ call per parameter group,
_C._sgd_step) against a NumPy re-implementation of torch.optim.SGD over
several parameters, groups and steps, on both devices; its update is the
per-parameter loop's bit for bit, records the user's line, and zero_grad's
one call clears every gradient."""
import inspect
import re

import numpy as np
import pytest

import lazyscope
from lazyscope import _C, nn, optim
from lazyscope.core import lazy_model as lm

DEVICES = ["cpu", "lazy:0"]
SHAPES = [(3, 4), (4,), (2, 3, 2)]


def make_params(device):
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    scales = [(rng.random(s) + 0.5).astype(np.float32) for s in SHAPES]
    params = [nn.Parameter(lazyscope.tensor(v, device=device)) for v in values]
    return values, scales, params


def train(params, scales, device, opt, steps, skip=(), start=None):
    """loss = sum_i sum((p_i * a_i)^2) / 2 + sum(p_i), except the parameters
    in `skip` (by index), which get no gradient, and parameter i before step
    start[i]; a barrier per step."""
    ta = [lazyscope.tensor(a, device=device) for a in scales]
    for step in range(steps):
        opt.zero_grad()
        loss = None
        for i, (p, a) in enumerate(zip(params, ta)):
            if i in skip or step < (start or {}).get(i, 0):
                continue
            term = ((p * a) ** 2).sum() * 0.5 + p.sum()
            loss = term if loss is None else loss + term
        loss.backward()
        opt.step()
        lm.mark_step()
    return [p.numpy().astype(np.float64) for p in params]


def sgd_ref(w, a, steps, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False, maximize=False):
    """torch.optim.SGD's rule on the loss above (its gradient: w * a^2 + 1), in float64."""
    w = w.astype(np.float64)
    buf = None
    for _ in range(steps):
        g = w * a * a + 1.0
        if maximize:
            g = -g
        g = g + weight_decay * w
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - lr * g
    return w


CASES = [dict(), dict(momentum=0.9), dict(momentum=0.9, dampening=0.3), dict(momentum=0.8, nesterov=True),
         dict(momentum=0.5, weight_decay=0.1), dict(weight_decay=0.05), dict(momentum=0.7, maximize=True),
         dict(momentum=0.6, weight_decay=0.2, nesterov=True)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("foreach", [None, False])
@pytest.mark.parametrize("kwargs", CASES, ids=lambda k: ",".join(k) or "plain")
def test_sgd_over_several_parameters_matches_numpy(device, foreach, kwargs):
    values, scales, params = make_params(device)
    opt = optim.SGD(params, lr=0.05, foreach=foreach, **kwargs)
    got = train(params, scales, device, opt, 5)
    for v, a, g in zip(values, scales, got):
        # maximize climbs the loss: a smaller lr keeps it from overflowing
        np.testing.assert_allclose(g, sgd_ref(v, a, 5, 0.05, **kwargs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_groups_with_their_own_hyperparameters_and_a_parameter_without_gradient(device):
    values, scales, params = make_params(device)
    opt = optim.SGD([{"params": params[:2], "momentum": 0.9, "lr": 0.02},
                     {"params": params[2:], "nesterov": True, "momentum": 0.5, "weight_decay": 0.1}], lr=0.05)
    got = train(params, scales, device, opt, 4, skip={1})
    np.testing.assert_allclose(got[0], sgd_ref(values[0], scales[0], 4, 0.02, momentum=0.9), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1], values[1])  # no gradient: neither updated nor given a buffer
    assert "momentum_buffer" not in opt.state[params[1]]
    np.testing.assert_allclose(got[2], sgd_ref(values[2], scales[2], 4, 0.05, momentum=0.5, weight_decay=0.1,
                                               nesterov=True), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_the_foreach_update_is_the_per_parameter_loops_bit_for_bit(device):
    results = []
    for foreach in (None, False):
        values, scales, params = make_params(device)
        opt = optim.SGD(params, lr=0.03, momentum=0.9, dampening=0.1, weight_decay=0.01, foreach=foreach)
        results.append(train(params, scales, device, opt, 4)
                       + [opt.state[p]["momentum_buffer"].numpy() for p in params])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_a_subclass_overriding_update_keeps_its_rule():
    class Halved(optim.SGD):
        def _update(self, p, g, state, group):
            p.add_(g, alpha=-group["lr"] / 2)

    values, scales, params = make_params("lazy:0")
    got = train(params, scales, "lazy:0", Halved(params, lr=0.1), 3)
    for v, a, g in zip(values, scales, got):
        np.testing.assert_allclose(g, sgd_ref(v, a, 3, 0.05), rtol=1e-5, atol=1e-5)


def test_the_update_records_the_users_line():
    values, scales, params = make_params("lazy:0")
    opt = optim.SGD(params, lr=0.1, momentum=0.9)
    loss = sum(((p * 2.0) ** 2).sum() for p in params)
    loss.backward()
    line = inspect.currentframe().f_lineno + 1
    opt.step()
    rows = _C.dump_graph(params, "text").splitlines()[1:]
    computed = [r for r in rows if re.match(r"\s+%\d+ = (add|mul)\(", r)]
    updates = [r for r in computed if f"test_optim_foreach.py:{line}" in r]
    # per parameter: the buffer's mul and add, the gradient's weight mul, the parameter's add and lr mul
    assert len(updates) >= 5 * len(params), "\n".join(rows)
    lm.mark_step()


@pytest.mark.parametrize("device", DEVICES)
def test_zero_grad_in_one_call_clears_every_gradient_of_every_group(device):
    _, _, params = make_params(device)
    opt = optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1)
    sum((p * 1.0).sum() for p in params).backward()
    assert all(p.grad is not None for p in params)
    opt.zero_grad()
    assert all(p.grad is None for p in params)
    opt.zero_grad()  # no gradient: nothing to do, no error


def test_mismatched_buffers_are_refused_with_a_clear_error():
    _, _, params = make_params("cpu")
    with pytest.raises(Exception, match="3 parameters but 2 momentum buffers"):
        _C._sgd_step(params, params[:2], [1.0, 1.0], -0.1, 0.9, None, False, False)


def test_the_default_traces_each_group_in_one_call(monkeypatch):
    calls = []
    real = _C._sgd_step
    monkeypatch.setattr(_C, "_sgd_step", lambda params, *rest: calls.append(len(params)) or real(params, *rest))
    values, scales, params = make_params("lazy:0")
    opt = optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=0.1, momentum=0.9)
    train(params, scales, "lazy:0", opt, 2)
    assert calls == [1, 2, 1, 2]
    calls.clear()
    train(params, scales, "lazy:0", optim.SGD(params, lr=0.1, foreach=False), 1)
    assert calls == []


@pytest.mark.parametrize("device", DEVICES)
def test_a_buffer_starting_later_than_the_others_matches_numpy(device):
    # Parameter 1 gets its first gradient at step 2: that step updates a new
    # buffer (weight 1) beside old ones (weight 1 - dampening).
    values, scales, params = make_params(device)
    opt = optim.SGD(params, lr=0.05, momentum=0.9, dampening=0.3)
    got = train(params, scales, device, opt, 5, start={1: 2})
    for i, (v, a, g) in enumerate(zip(values, scales, got)):
        steps = 3 if i == 1 else 5
        np.testing.assert_allclose(g, sgd_ref(v, a, steps, 0.05, momentum=0.9, dampening=0.3), rtol=1e-5, atol=1e-5)


def test_each_hyperparameter_is_one_graph_input_shared_by_every_parameter():
    _, _, params = make_params("lazy:0")
    opt = optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.01)
    sum(((p * 2.0) ** 2).sum() for p in params).backward()
    lm.mark_step()  # the gradients become device data: the next graph is the update alone
    opt.step()
    text = _C.dump_graph(params, "text")
    scalars = re.findall(r"= device_data\(\) parameter \d+ : float32\[\]", text)
    # lr, momentum, weight decay and the buffers' weight: 4, where the loop made 4 per parameter
    assert len(scalars) == 4, text
    lm.mark_step()


@pytest.mark.parametrize("device", DEVICES)
def test_integer_hyperparameters_promote_as_python_numbers_do(device):
    # An int lr and weight decay become wrapped integers (converted per use, not shared): the update stays float32.
    values, scales, params = make_params(device)
    opt = optim.SGD(params, lr=1, momentum=0.25, weight_decay=1)
    got = train(params, scales, device, opt, 3)
    for v, a, g, p in zip(values, scales, got, params):
        assert p.dtype == lazyscope.float32
        np.testing.assert_allclose(g, sgd_ref(v, a, 3, 1.0, momentum=0.25, weight_decay=1.0), rtol=1e-5, atol=1e-4)


# ---- Adam and AdamW: _C._adam_step -------------------------------------------------------------


def adam_ref(w, a, steps, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, maximize=False,
             decoupled=False):
    """torch.optim.Adam's (decoupled: AdamW's) rule on the loss of `train`, in float64."""
    w = w.astype(np.float64)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    v_max = np.zeros_like(w)
    b1, b2 = betas
    for t in range(1, steps + 1):
        g = w * a * a + 1.0
        if maximize:
            g = -g
        if weight_decay and decoupled:
            w = w * (1 - lr * weight_decay)
        elif weight_decay:
            g = g + weight_decay * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        second = v
        if amsgrad:
            v_max = np.maximum(v_max, v)
            second = v_max
        denom = np.sqrt(second) / np.sqrt(1 - b2 ** t) + eps
        w = w - lr / (1 - b1 ** t) * m / denom
    return w


ADAM_CASES = [dict(), dict(weight_decay=0.1), dict(amsgrad=True), dict(maximize=True),
              dict(betas=(0.8, 0.99), eps=1e-6), dict(weight_decay=0.05, amsgrad=True, maximize=True)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("foreach", [None, False])
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("kwargs", ADAM_CASES, ids=lambda k: ",".join(k) or "plain")
def test_adam_over_several_parameters_matches_numpy(device, foreach, cls, kwargs):
    values, scales, params = make_params(device)
    opt = getattr(optim, cls)(params, lr=0.05, foreach=foreach, **kwargs)
    got = train(params, scales, device, opt, 5)
    if cls == "AdamW":
        kwargs = dict(kwargs, decoupled=True, weight_decay=kwargs.get("weight_decay", 1e-2))
    for v, a, g in zip(values, scales, got):
        np.testing.assert_allclose(g, adam_ref(v, a, 5, 0.05, **kwargs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
def test_the_adam_foreach_update_is_the_per_parameter_loops_bit_for_bit(device, cls):
    results = []
    for foreach in (None, False):
        values, scales, params = make_params(device)
        opt = getattr(optim, cls)(params, lr=0.03, weight_decay=0.02, amsgrad=True, foreach=foreach)
        results.append(train(params, scales, device, opt, 4, start={2: 1})
                       + [opt.state[p][k].numpy() for p in params
                          for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("device", DEVICES)
def test_adam_parameters_starting_at_different_steps_get_their_own_bias_corrections(device):
    # Parameter 1 gets its first gradient at step 2 and parameter 2 none at
    # all: one call updates parameters at steps 3 and 5 with their own numbers.
    values, scales, params = make_params(device)
    opt = optim.Adam(params, lr=0.05)
    got = train(params, scales, device, opt, 5, start={1: 2}, skip={2})
    np.testing.assert_allclose(got[0], adam_ref(values[0], scales[0], 5, 0.05), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[1], adam_ref(values[1], scales[1], 3, 0.05), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[2], values[2])
    assert opt.state[params[0]]["step"] == 5 and opt.state[params[1]]["step"] == 3 and not opt.state[params[2]]


def test_adam_traces_each_group_in_one_call_and_a_subclass_keeps_its_rule(monkeypatch):
    calls = []
    real = _C._adam_step
    monkeypatch.setattr(_C, "_adam_step", lambda params, *rest: calls.append(len(params)) or real(params, *rest))
    values, scales, params = make_params("lazy:0")
    opt = optim.AdamW([{"params": params[:1]}, {"params": params[1:], "lr": 0.01}], lr=0.05)
    train(params, scales, "lazy:0", opt, 2)
    assert calls == [1, 2, 1, 2]
    calls.clear()

    class Plain(optim.Adam):  # plain SGD through Adam's interface
        def _update(self, p, g, state, group):
            p.add_(g, alpha=-group["lr"])

    values, scales, params = make_params("lazy:0")
    got = train(params, scales, "lazy:0", Plain(params, lr=0.05), 3)
    assert calls == []
    for v, a, g in zip(values, scales, got):
        np.testing.assert_allclose(g, sgd_ref(v, a, 3, 0.05), rtol=1e-5, atol=1e-5)


def test_mismatched_adam_state_is_refused_with_a_clear_error():
    _, _, params = make_params("cpu")
    with pytest.raises(Exception, match="Adam: 3 parameters but 2 exp_avg"):
        _C._adam_step(params, params[:2], params, None, [1.0] * 3, [-0.1] * 3, 0.9, 0.1, 0.999, 0.001, 1e-8, None,
                      None, False)


def test_the_adam_update_records_the_users_line():
    _, _, params = make_params("lazy:0")
    opt = optim.Adam(params, lr=0.1)
    sum(((p * 2.0) ** 2).sum() for p in params).backward()
    line = inspect.currentframe().f_lineno + 1
    opt.step()
    rows = _C.dump_graph(params, "text").splitlines()[1:]
    updates = [r for r in rows if re.match(r"\s+%\d+ = (add|mul|div|sqrt)\(", r)
               and f"test_optim_foreach.py:{line}" in r]
    # per parameter: the moments' 2 mul + 2 add + 1 mul (g*g), sqrt, mul, add, div, mul, add
    assert len(updates) >= 11 * len(params), "\n".join(rows)
    lm.mark_step()
