"""lazyscope.nn: module bookkeeping (parameters, state dicts, modes, hooks,
scopes) and layer numerics against NumPy re-implementations."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import nn
from lazyscope.nn import functional as F
from lazyscope.core import lazy_model as lm

DEVICES = ["cpu", "lazy:0"]


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 6)
        self.act = nn.ReLU()
        self.block = nn.Sequential(nn.Linear(6, 5), nn.Tanh())
        self.bn = nn.BatchNorm1d(5)
        self.head = nn.Linear(5, 3, bias=False)

    def forward(self, x):
        return self.head(self.bn(self.block(self.act(self.fc1(x)))))


def test_parameters_buffers_and_children_are_registered_in_order():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["fc1.weight", "fc1.bias", "block.0.weight", "block.0.bias", "bn.weight", "bn.bias",
                     "head.weight"]
    assert [n for n, _ in net.named_buffers()] == ["bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "block", "bn", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "block", "block.0", "block.1", "bn", "head"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert not isinstance(lazyscope.zeros(2), nn.Parameter)
    assert net.head.bias is None


def test_assigning_a_plain_tensor_to_a_parameter_name_is_an_error():
    lin = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'weight'"):
        lin.weight = lazyscope.zeros(2, 2)
    with pytest.raises(AttributeError, match="super\\(\\).__init__"):
        class Bad(nn.Module):
            def __init__(self):
                self.x = 1
        Bad()


def test_linear_default_init_follows_pytorch_bounds():
    lazyscope.manual_seed(3)
    lin = nn.Linear(400, 300)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    bound = 1 / math.sqrt(400)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert np.abs(b).max() <= bound
    # U(-a, a) has standard deviation a/sqrt(3).
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound


def test_init_functions_match_their_distributions():
    lazyscope.manual_seed(0)
    p = nn.Parameter(lazyscope.zeros(200, 100))
    p = nn.init.xavier_uniform_(p)
    assert abs(p.numpy().std() - math.sqrt(6 / 300) / math.sqrt(3)) < 0.01 * math.sqrt(6 / 300)
    p = nn.init.kaiming_normal_(p, nonlinearity="relu")
    assert abs(p.numpy().std() - math.sqrt(2 / 100)) < 0.02 * math.sqrt(2 / 100)
    p = nn.init.constant_(p, 0.25)
    assert np.all(p.numpy() == 0.25)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(nn.Parameter(lazyscope.zeros(3)))


def test_init_on_a_registered_parameter_updates_the_module():
    lin = nn.Linear(3, 2)
    nn.init.ones_(lin.weight)
    nn.init.zeros_(lin.bias)
    np.testing.assert_array_equal(lin(lazyscope.tensor([[1.0, 2.0, 3.0]])).numpy(), [[6.0, 6.0]])


@pytest.mark.parametrize("device", DEVICES)
def test_linear_matches_numpy_on_1d_and_batched_inputs(device):
    lin = nn.Linear(10, 20).to(device)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    x = np.random.default_rng(1).standard_normal((3, 7, 10)).astype(np.float32)
    np.testing.assert_allclose(lin(lazyscope.tensor(x, device=device)).numpy(), x @ w.T + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lin(lazyscope.tensor(x[0, 0], device=device)).numpy(), x[0, 0] @ w.T + b,
                               rtol=1e-5, atol=1e-5)


def test_module_on_cpu_fed_a_lazy_tensor_names_both_devices():
    lin = nn.Linear(10, 20)
    with pytest.raises(lazyscope.DeviceMismatchError, match="lazy:0.*cpu|cpu.*lazy:0"):
        lin(lazyscope.randn(10, device=lm.lazy_device()))


def test_state_dict_round_trip_and_strict_errors():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert list(sd) == ["fc1.weight", "fc1.bias", "block.0.weight", "block.0.bias", "bn.weight", "bn.bias",
                        "bn.running_mean", "bn.running_var", "bn.num_batches_tracked", "head.weight"]
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for k, v in b.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), sd[k].numpy())
    partial = dict(sd)
    del partial["fc1.bias"]
    partial["extra"] = lazyscope.zeros(1)
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "fc1.bias".*\n.*Unexpected.*"extra"'):
        b.load_state_dict(partial)
    result = b.load_state_dict(partial, strict=False)
    assert result.missing_keys == ["fc1.bias"] and result.unexpected_keys == ["extra"]
    bad = dict(sd)
    bad["fc1.weight"] = lazyscope.zeros(2, 2)
    with pytest.raises(RuntimeError, match="size mismatch for fc1.weight.*\\(2, 2\\).*\\(6, 4\\)"):
        b.load_state_dict(bad)


def test_load_state_dict_moves_values_to_the_module_device():
    src = nn.Linear(3, 2)
    dst = nn.Linear(3, 2).to("lazy:0")
    dst.load_state_dict(src.state_dict())
    assert str(dst.weight.device) == "lazy:0"
    np.testing.assert_array_equal(dst.weight.numpy(), src.weight.numpy())


def test_train_eval_apply_and_zero_grad():
    net = Net()
    assert net.training and net.bn.training
    net.eval()
    assert not net.training and not net.block[0].training
    net.train()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen.count("Linear") == 3
    net(lazyscope.randn(8, 4)).sum().backward()
    assert net.fc1.weight.grad is not None
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_to_moves_parameters_and_buffers_and_keeps_identity_when_nothing_changes():
    net = Net()
    before = list(net.parameters())
    net.to("cpu")  # already there: the same objects, as PyTorch
    assert all(a is b for a, b in zip(before, net.parameters()))
    net.to("lazy:0")
    # A tensor's device is fixed in this engine, so moving makes new parameter
    # objects (documented in nn.module); an optimizer is built after moving.
    assert all(str(p.device) == "lazy:0" for p in net.parameters())
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert all(str(b.device) == "lazy:0" for b in net.buffers())
    net.to(lazyscope.float64)
    assert net.fc1.weight.dtype == lazyscope.float64
    assert net.bn.num_batches_tracked.dtype == lazyscope.int64


def test_to_keeps_tied_parameters_tied():
    a, b = nn.Linear(3, 3), nn.Linear(3, 3)
    b.weight = a.weight
    model = nn.Sequential(a, b).to("lazy:0")
    assert model[0].weight is model[1].weight
    assert len(list(model.parameters())) == 3


def test_forward_hooks_and_removal():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: calls.append("pre"))
    h2 = lin.register_forward_hook(lambda m, args, out: out * 0)
    out = lin(lazyscope.ones(1, 2))
    assert calls == ["pre"] and np.all(out.numpy() == 0)
    h1.remove()
    h2.remove()
    assert np.any(lin(lazyscope.ones(1, 2)).numpy() != 0) and calls == ["pre"]


def test_module_call_sets_the_scope_path_and_restores_it(monkeypatch):
    scopes = []
    monkeypatch.setattr(lazyscope._C, "set_scope", lambda s: scopes.append(s))
    net = Net()
    net(lazyscope.randn(8, 4))
    assert scopes[:4] == ["Net", "Net.fc1", "Net", "Net.act"]
    assert "Net.block.0" in scopes and "Net.block.1" in scopes
    assert scopes[-1] is None


def test_blocks_of_a_module_list_are_scoped_by_their_index(monkeypatch):
    # A forward that iterates a ModuleList calls the blocks, not the list:
    # each block is still named by its path ("Stack.blocks.1"), not by its
    # class, which would fold every block into one scope.
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
            self.heads = nn.ModuleDict({"out": nn.Linear(4, 1)})

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return self.heads["out"](x)

    scopes = []
    monkeypatch.setattr(lazyscope._C, "set_scope", lambda s: scopes.append(s))
    Stack()(lazyscope.randn(2, 4))
    assert [s for s in scopes if s not in ("Stack", None)] == ["Stack.blocks.0", "Stack.blocks.1", "Stack.heads.out"]


def test_repr_looks_like_pytorch():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert text == "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): ReLU()\n)"


def test_containers():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.append(nn.ReLU())
    assert len(layers) == 4 and isinstance(layers[-1], nn.ReLU)
    assert len(list(layers.parameters())) == 6
    d = nn.ModuleDict({"a": nn.Linear(1, 1), "b": nn.ReLU()})
    assert list(d.keys()) == ["a", "b"] and "a" in d
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 1))
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 2
    with pytest.raises(IndexError, match="out of range"):
        seq[5]


def _layer_norm_ref(x, w, b, eps, dims):
    axes = tuple(range(-dims, 0))
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


@pytest.mark.parametrize("device", DEVICES)
def test_layer_norm_matches_numpy(device):
    x = np.random.default_rng(2).standard_normal((3, 4, 5)).astype(np.float32)
    ln = nn.LayerNorm([4, 5]).to(device)
    w = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    ln.load_state_dict({"weight": lazyscope.tensor(w), "bias": lazyscope.ones(4, 5)})
    got = ln(lazyscope.tensor(x, device=device)).numpy()
    np.testing.assert_allclose(got, _layer_norm_ref(x, w, 1.0, 1e-5, 2), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_batch_norm_train_and_eval_match_numpy(device):
    rng = np.random.default_rng(4)
    bn = nn.BatchNorm1d(3, momentum=0.2).to(device)
    xs = [rng.standard_normal((8, 3)).astype(np.float32) * 2 + 1 for _ in range(3)]
    mean, var = np.zeros(3), np.ones(3)
    for x in xs:
        got = bn(lazyscope.tensor(x, device=device)).numpy()
        ref = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-5)
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
        mean = 0.8 * mean + 0.2 * x.mean(0)
        var = 0.8 * var + 0.2 * x.var(0, ddof=1)
        lm.mark_step()
    np.testing.assert_allclose(bn.running_mean.numpy(), mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), var, rtol=1e-5)
    assert bn.num_batches_tracked.item() == 3
    bn.eval()
    x = xs[0]
    np.testing.assert_allclose(bn(lazyscope.tensor(x, device=device)).numpy(), (x - mean) / np.sqrt(var + 1e-5),
                               rtol=1e-4, atol=1e-4)


def test_dropout_scales_kept_values_and_is_identity_in_eval():
    lazyscope.manual_seed(5)
    drop = nn.Dropout(0.25)
    out = drop(lazyscope.ones(200, 100)).numpy()
    kept = out != 0
    np.testing.assert_allclose(out[kept], 1 / 0.75, rtol=1e-6)
    assert abs(kept.mean() - 0.75) < 0.02
    drop.eval()
    assert np.all(drop(lazyscope.ones(3, 3)).numpy() == 1)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)
    out2d = nn.Dropout2d(0.5)(lazyscope.ones(4, 6, 3, 3)).numpy()
    per_channel = out2d.reshape(4, 6, 9)
    assert np.all(per_channel.min(-1) == per_channel.max(-1))  # whole channels kept or dropped


@pytest.mark.parametrize("device", DEVICES)
def test_activations_and_flatten_match_numpy(device):
    x = np.random.default_rng(6).standard_normal((2, 3, 4)).astype(np.float32)
    t = lazyscope.tensor(x, device=device)
    cases = [(nn.ReLU(), np.maximum(x, 0)), (nn.Tanh(), np.tanh(x)), (nn.Sigmoid(), 1 / (1 + np.exp(-x))),
             (nn.SiLU(), x / (1 + np.exp(-x))),
             (nn.Softmax(dim=-1), np.exp(x) / np.exp(x).sum(-1, keepdims=True)),
             (nn.LogSoftmax(dim=1), x - np.log(np.exp(x).sum(1, keepdims=True))),
             (nn.Flatten(), x.reshape(2, 12)), (nn.Identity(), x)]
    for module, ref in cases:
        np.testing.assert_allclose(module(t).numpy(), ref, rtol=1e-5, atol=1e-6, err_msg=type(module).__name__)
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(nn.GELU()(t).numpy(), 0.5 * x * (1 + erf(x / math.sqrt(2))), rtol=1e-5, atol=1e-6)


def test_embedding_rows_and_padding_idx():
    emb = nn.Embedding(10, 4, padding_idx=0)
    np.testing.assert_array_equal(emb.weight.numpy()[0], 0)
    idx = np.array([[1, 0, 9]])
    np.testing.assert_array_equal(emb(lazyscope.tensor(idx)).numpy(), emb.weight.numpy()[idx])


def _mha_ref(q, k, v, w_in, b_in, w_out, b_out, heads, key_padding_mask=None):
    n, l, e = q.shape
    d = e // heads
    wq, wk, wv = np.split(w_in, 3)
    bq, bk, bv = np.split(b_in, 3)

    def split(x, w, b):
        return (x @ w.T + b).reshape(n, -1, heads, d).transpose(0, 2, 1, 3)
    Q, K, V = split(q, wq, bq), split(k, wk, bk), split(v, wv, bv)
    s = Q @ K.transpose(0, 1, 3, 2) / math.sqrt(d)
    if key_padding_mask is not None:
        s = np.where(key_padding_mask[:, None, None, :], -np.inf, s)
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    out = (a @ V).transpose(0, 2, 1, 3).reshape(n, l, e) @ w_out.T + b_out
    return out, a.mean(1)


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_matches_numpy(batch_first):
    lazyscope.manual_seed(7)
    mha = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    nn.init.normal_(mha.in_proj_bias, 0, 0.1)
    nn.init.normal_(mha.out_proj.bias, 0, 0.1)
    rng = np.random.default_rng(8)
    q, k = rng.standard_normal((2, 5, 8)).astype(np.float32), rng.standard_normal((2, 6, 8)).astype(np.float32)
    mask = np.zeros((2, 6), dtype=bool)
    mask[1, 4:] = True
    ref, ref_w = _mha_ref(q, k, k, mha.in_proj_weight.numpy(), mha.in_proj_bias.numpy(),
                          mha.out_proj.weight.numpy(), mha.out_proj.bias.numpy(), 2, mask)
    tq, tk = lazyscope.tensor(q), lazyscope.tensor(k)
    if not batch_first:
        tq, tk = tq.transpose(0, 1), tk.transpose(0, 1)
    out, w = mha(tq, tk, tk, key_padding_mask=lazyscope.tensor(mask))
    out = out.numpy() if batch_first else out.numpy().transpose(1, 0, 2)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-4, atol=1e-6)


def test_losses_match_numpy():
    rng = np.random.default_rng(9)
    logits = rng.standard_normal((6, 4)).astype(np.float32)
    target = rng.integers(0, 4, 6)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    ref = -logp[np.arange(6), target].mean()
    t, y = lazyscope.tensor(logits), lazyscope.tensor(target)
    np.testing.assert_allclose(nn.CrossEntropyLoss()(t, y).item(), ref, rtol=1e-5)
    np.testing.assert_allclose(nn.NLLLoss()(lazyscope.tensor(logp), y).item(), ref, rtol=1e-5)
    np.testing.assert_allclose(nn.NLLLoss(reduction="sum")(lazyscope.tensor(logp), y).item(), ref * 6, rtol=1e-5)
    a, b = rng.random((3, 2)).astype(np.float32), rng.random((3, 2)).astype(np.float32)
    np.testing.assert_allclose(nn.MSELoss()(lazyscope.tensor(a), lazyscope.tensor(b)).item(), ((a - b) ** 2).mean(),
                               rtol=1e-5)
    bce = -(b * np.log(a) + (1 - b) * np.log(1 - a)).mean()
    np.testing.assert_allclose(nn.BCELoss()(lazyscope.tensor(a), lazyscope.tensor(b)).item(), bce, rtol=1e-5)
    z = rng.standard_normal((3, 2)).astype(np.float32)
    s = 1 / (1 + np.exp(-z))
    bcel = -(b * np.log(s) + (1 - b) * np.log(1 - s)).mean()
    np.testing.assert_allclose(nn.BCEWithLogitsLoss()(lazyscope.tensor(z), lazyscope.tensor(b)).item(), bcel,
                               rtol=1e-5)
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        nn.MSELoss(reduction="avg")


def _grad_norm_setup(device):
    rng = np.random.default_rng(10)
    grads = [rng.standard_normal(s).astype(np.float32) * 3 for s in [(4, 3), (3,)]]
    params = []
    for g in grads:
        p = nn.Parameter(lazyscope.zeros(*g.shape, device=device))
        p.grad = lazyscope.tensor(g, device=device)
        params.append(p)
    return grads, params


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, float("inf")])
def test_clip_grad_norm_matches_numpy(device, norm_type):
    grads, params = _grad_norm_setup(device)
    flat = np.concatenate([g.ravel() for g in grads])
    total = np.abs(flat).max() if math.isinf(norm_type) else (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    got = nn.utils.clip_grad_norm_(params, max_norm=1.5, norm_type=norm_type)
    assert isinstance(got, lazyscope.Tensor)
    np.testing.assert_allclose(got.item(), total, rtol=1e-5)
    scale = min(1.0, 1.5 / (total + 1e-6))
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * scale, rtol=1e-5)
    # Below the threshold nothing changes.
    grads, params = _grad_norm_setup(device)
    nn.utils.clip_grad_norm_(params, max_norm=1e6, norm_type=norm_type)
    np.testing.assert_allclose(params[0].grad.numpy(), grads[0], rtol=1e-6)


def test_clip_grad_norm_does_not_sync_and_does_not_recompile_for_a_new_max_norm():
    _, params = _grad_norm_setup("lazy:0")
    lm.mark_step()
    lazyscope._C.clear_compile_cache()
    lazyscope._C.reset_metrics()
    for max_norm in (1.0, 2.0, 0.5):
        for p in params:
            p.grad = p.grad * 1.0
        nn.utils.clip_grad_norm_(params, max_norm)
        assert lm.counters().get("SyncCause.item", 0) == 0
        lm.mark_step()
    counters = lm.counters()
    assert counters["UncachedCompile"] == 1
    syncs = {k: v for k, v in counters.items() if k.startswith("SyncCause.") and k != "SyncCause.mark_step" and v}
    assert not syncs


def test_conv_and_pool_modules_match_numpy():
    rng = np.random.default_rng(11)
    conv = nn.Conv2d(2, 3, 3, stride=1, padding=1)
    x = rng.standard_normal((2, 2, 5, 5)).astype(np.float32)
    w, b = conv.weight.numpy(), conv.bias.numpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((2, 3, 5, 5), dtype=np.float32)
    for i in range(5):
        for j in range(5):
            ref[:, :, i, j] = np.einsum("ncij,ocij->no", xp[:, :, i:i + 3, j:j + 3], w) + b
    out = conv(lazyscope.tensor(x))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-5)
    pooled = nn.MaxPool2d(2)(lazyscope.tensor(ref[:, :, :4, :4])).numpy()
    np.testing.assert_allclose(pooled, ref[:, :, :4, :4].reshape(2, 3, 2, 2, 2, 2).max(axis=(3, 5)), rtol=1e-6)


def test_avg_pools_match_numpy():
    x = np.random.default_rng(12).standard_normal((1, 2, 4, 4)).astype(np.float32)
    t = lazyscope.tensor(x)
    np.testing.assert_allclose(nn.AvgPool2d(2)(t).numpy(), x.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5)),
                               rtol=1e-6)
    np.testing.assert_allclose(nn.AdaptiveAvgPool2d(1)(t).numpy(), x.mean(axis=(2, 3), keepdims=True), rtol=1e-6)


def test_batch_norm_updates_its_running_statistics_in_place():
    bn = nn.BatchNorm1d(3)
    mean, var, count = bn.running_mean, bn.running_var, bn.num_batches_tracked
    x = np.random.default_rng(2).standard_normal((8, 3)).astype(np.float32)
    bn(lazyscope.tensor(x))
    assert bn.running_mean is mean and bn.running_var is var and bn.num_batches_tracked is count
    np.testing.assert_allclose(mean.numpy(), 0.1 * x.mean(0), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(var.numpy(), 0.9 + 0.1 * x.var(0, ddof=1), rtol=1e-5)
    assert int(count.item()) == 1


def test_module_dtype_casts_lookups_and_no_op_methods():
    import lazyscope as _ls
    net = _ls.nn.Sequential(_ls.nn.Linear(2, 3), _ls.nn.BatchNorm1d(3))
    w = net[0].weight.detach().numpy().copy()
    assert net.get_parameter("0.weight") is net[0].weight
    assert net.get_buffer("1.running_mean") is net[1].running_mean
    with pytest.raises(AttributeError, match="has no parameter 'gamma'"):
        net.get_parameter("0.gamma")
    with pytest.raises(AttributeError, match="has no submodule '5'"):
        net.get_parameter("5.weight")
    net.double()
    assert net[0].weight.dtype == _ls.float64
    net.half()
    assert net[0].weight.dtype == _ls.float16
    np.testing.assert_allclose(net[0].weight.to(_ls.float32).numpy(), w.astype(np.float16), rtol=0)
    net.bfloat16()
    assert net[0].weight.dtype == _ls.bfloat16
    assert net.type(_ls.float32) is net and net[0].weight.dtype == _ls.float32
    assert net.share_memory() is net and net.compile() is None
    with pytest.raises(NotImplementedError, match="Module.cuda is not supported"):
        net.cuda()
