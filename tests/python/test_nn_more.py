"""The nn modules, functions, optimizers, schedulers and loader added for
issue 14 §1, each checked against a NumPy reference implementation written
here (never the engine), on cpu and lazy:0."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import nn, optim
import lazyscope.nn.functional as F
from lazyscope.utils.data import DataLoader, Dataset, TensorDataset

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(141)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def params(module):
    return {name: p.numpy().astype(np.float64) for name, p in module.named_parameters()}


# --- Recurrent layers.

def lstm_ref(x, p, layers, hidden, bidirectional, h0=None, c0=None):
    """x [T, N, I] -> (out [T, N, D*H], h [L*D, N, H], c [L*D, N, H]); PyTorch's equations, gates i, f, g, o."""
    dirs = 2 if bidirectional else 1
    steps, batch = x.shape[0], x.shape[1]
    hs, cs = [], []
    inp = x
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w_ih, w_hh = p["weight_ih" + sfx], p["weight_hh" + sfx]
            b = p["bias_ih" + sfx] + p["bias_hh" + sfx]
            k = layer * dirs + d
            h = np.zeros((batch, hidden)) if h0 is None else h0[k]
            c = np.zeros((batch, hidden)) if c0 is None else c0[k]
            out = np.zeros((steps, batch, hidden))
            for t in (range(steps - 1, -1, -1) if d else range(steps)):
                z = inp[t] @ w_ih.T + h @ w_hh.T + b
                i, f, g, o = np.split(z, 4, axis=-1)
                c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
                h = sigmoid(o) * np.tanh(c)
                out[t] = h
            outs.append(out)
            hs.append(h)
            cs.append(c)
        inp = np.concatenate(outs, -1)
    return inp, np.stack(hs), np.stack(cs)


def gru_ref(x, p, layers, hidden, bidirectional, h0=None):
    dirs = 2 if bidirectional else 1
    steps, batch = x.shape[0], x.shape[1]
    hs = []
    inp = x
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            k = layer * dirs + d
            h = np.zeros((batch, hidden)) if h0 is None else h0[k]
            out = np.zeros((steps, batch, hidden))
            for t in (range(steps - 1, -1, -1) if d else range(steps)):
                xr, xz, xn = np.split(inp[t] @ p["weight_ih" + sfx].T + p["bias_ih" + sfx], 3, -1)
                hr, hz, hn = np.split(h @ p["weight_hh" + sfx].T + p["bias_hh" + sfx], 3, -1)
                r, z = sigmoid(xr + hr), sigmoid(xz + hz)
                n = np.tanh(xn + r * hn)
                h = (1 - z) * n + z * h
                out[t] = h
            outs.append(out)
            hs.append(h)
        inp = np.concatenate(outs, -1)
    return inp, np.stack(hs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layers,bidirectional,batch_first", [(1, False, False), (2, True, True), (2, False, False)])
def test_lstm_matches_numpy(device, layers, bidirectional, batch_first):
    lazyscope.manual_seed(1)
    lstm = nn.LSTM(3, 4, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first).to(device)
    x = rng.standard_normal((5, 2, 3)).astype(np.float32)
    dirs = 2 if bidirectional else 1
    h0 = rng.standard_normal((layers * dirs, 2, 4)).astype(np.float32)
    c0 = rng.standard_normal((layers * dirs, 2, 4)).astype(np.float32)
    xin = x.transpose(1, 0, 2) if batch_first else x
    out, (h, c) = lstm(lazyscope.tensor(xin, device=device),
                       (lazyscope.tensor(h0, device=device), lazyscope.tensor(c0, device=device)))
    want, wh, wc = lstm_ref(x.astype(np.float64), params(lstm), layers, 4, bidirectional, h0, c0)
    np.testing.assert_allclose(out.numpy(), want.transpose(1, 0, 2) if batch_first else want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), wh, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(c.numpy(), wc, rtol=1e-5, atol=1e-6)
    assert sorted(dict(lstm.named_parameters())) == sorted(
        f"{w}_l{k}{s}" for k in range(layers) for s in ([""] + (["_reverse"] if bidirectional else []))
        for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    bound = 1 / math.sqrt(4)
    assert all(np.abs(v).max() <= bound for v in params(lstm).values())


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, True)])
def test_gru_matches_numpy_and_takes_unbatched_input(device, layers, bidirectional):
    lazyscope.manual_seed(2)
    gru = nn.GRU(3, 5, num_layers=layers, bidirectional=bidirectional).to(device)
    x = rng.standard_normal((4, 2, 3)).astype(np.float32)
    out, h = gru(lazyscope.tensor(x, device=device))
    want, wh = gru_ref(x.astype(np.float64), params(gru), layers, 5, bidirectional)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), wh, rtol=1e-5, atol=1e-6)
    out1, h1 = gru(lazyscope.tensor(x[:, 0], device=device))  # unbatched [T, I]
    np.testing.assert_allclose(out1.numpy(), want[:, 0], rtol=1e-5, atol=1e-6)
    assert tuple(h1.shape) == (layers * (2 if bidirectional else 1), 5)


@pytest.mark.parametrize("device", DEVICES)
def test_lstm_gradient_matches_finite_differences(device):
    lstm = nn.LSTM(2, 3, dtype=lazyscope.float64).to(device)
    x = rng.standard_normal((3, 1, 2))
    w = rng.standard_normal((3, 1, 3))
    xt = lazyscope.tensor(x, device=device, requires_grad=True)
    (lstm(xt)[0] * lazyscope.tensor(w, device=device)).sum().backward()
    p = params(lstm)
    f = lambda xx: np.sum(lstm_ref(xx, p, 1, 3, False)[0] * w)  # noqa: E731
    eps = 1e-6
    numeric = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        numeric[idx] = (f(plus) - f(minus)) / (2 * eps)
    np.testing.assert_allclose(xt.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_rnn_shape_errors_name_the_module():
    with pytest.raises(lazyscope.ShapeError, match="LSTM: input.size\\(-1\\) must be equal to input_size. Expected 3"):
        nn.LSTM(3, 4)(lazyscope.zeros(5, 2, 7))
    with pytest.raises(lazyscope.ShapeError, match="GRU: expected hidden size"):
        nn.GRU(3, 4)(lazyscope.zeros(5, 2, 3), lazyscope.zeros(1, 3, 4))


# --- Transformer encoder layer.

def layer_norm_ref(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def softmax_ref(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def encoder_layer_ref(src, p, heads, norm_first, mask=None):
    """src [L, N, E] (batch_first=False); PyTorch's post-norm / pre-norm equations, relu feed-forward."""
    x = src.transpose(1, 0, 2)  # [N, L, E]
    n, length, e = x.shape
    d = e // heads

    def attention(y):
        q, k, v = np.split(y @ p["self_attn.in_proj_weight"].T + p["self_attn.in_proj_bias"], 3, -1)
        split = lambda t: t.reshape(n, length, heads, d).transpose(0, 2, 1, 3)  # noqa: E731
        scores = split(q) @ split(k).transpose(0, 1, 3, 2) / math.sqrt(d)
        if mask is not None:
            scores = np.where(mask, -np.inf, scores)
        out = (softmax_ref(scores) @ split(v)).transpose(0, 2, 1, 3).reshape(n, length, e)
        return out @ p["self_attn.out_proj.weight"].T + p["self_attn.out_proj.bias"]

    def feed_forward(y):
        hidden = np.maximum(y @ p["linear1.weight"].T + p["linear1.bias"], 0)
        return hidden @ p["linear2.weight"].T + p["linear2.bias"]

    norm1 = lambda y: layer_norm_ref(y, p["norm1.weight"], p["norm1.bias"])  # noqa: E731
    norm2 = lambda y: layer_norm_ref(y, p["norm2.weight"], p["norm2.bias"])  # noqa: E731
    if norm_first:
        x = x + attention(norm1(x))
        x = x + feed_forward(norm2(x))
    else:
        x = norm1(x + attention(x))
        x = norm2(x + feed_forward(x))
    return x.transpose(1, 0, 2)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_matches_numpy(device, norm_first):
    lazyscope.manual_seed(3)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, norm_first=norm_first).to(device)
    for name in ("norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias", "self_attn.in_proj_bias"):
        nn.init.normal_(dict(layer.named_parameters())[name])  # not the trivial ones/zeros
    src = rng.standard_normal((5, 3, 8)).astype(np.float32)
    mask = np.triu(np.ones((5, 5), dtype=bool), 1)
    out = layer(lazyscope.tensor(src, device=device), src_mask=lazyscope.tensor(mask, device=device))
    np.testing.assert_allclose(out.numpy(), encoder_layer_ref(src.astype(np.float64), params(layer), 2, norm_first,
                                                              mask), rtol=1e-4, atol=1e-5)
    encoder = nn.TransformerEncoder(layer, 2)
    twice = encoder_layer_ref(encoder_layer_ref(src.astype(np.float64), params(layer), 2, norm_first), params(layer),
                              2, norm_first)
    np.testing.assert_allclose(encoder(lazyscope.tensor(src, device=device)).numpy(), twice, rtol=1e-4, atol=1e-5)


# --- Conv1d, GroupNorm, Softplus.

def conv1d_ref(x, w, b, stride, padding, dilation, groups):
    n, c, length = x.shape
    o, cg, k = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding)))
    out_len = (length + 2 * padding - dilation * (k - 1) - 1) // stride + 1
    out = np.zeros((n, o, out_len))
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for t in range(out_len):
            window = xp[:, g * cg:(g + 1) * cg, t * stride:t * stride + dilation * (k - 1) + 1:dilation]
            out[:, oc, t] = (window * w[oc]).sum(axis=(1, 2))
    return out + (b[None, :, None] if b is not None else 0)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 1, 2), (1, 2, 2, 1)])
def test_conv1d_matches_numpy(device, stride, padding, dilation, groups):
    lazyscope.manual_seed(4)
    conv = nn.Conv1d(4, 6, 3, stride=stride, padding=padding, dilation=dilation, groups=groups).to(device)
    x = rng.standard_normal((2, 4, 9)).astype(np.float32)
    p = params(conv)
    want = conv1d_ref(x.astype(np.float64), p["weight"], p["bias"], stride, padding, dilation, groups)
    np.testing.assert_allclose(conv(lazyscope.tensor(x, device=device)).numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(conv(lazyscope.tensor(x[0], device=device)).numpy(), want[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_group_norm_matches_numpy_with_gradients(device):
    gn = nn.GroupNorm(2, 6, dtype=lazyscope.float64).to(device)
    nn.init.normal_(gn.weight)
    nn.init.normal_(gn.bias)
    x = rng.standard_normal((3, 6, 4))
    w, b = gn.weight.numpy(), gn.bias.numpy()

    def ref(xx):
        g = xx.reshape(3, 2, -1)
        mean = g.mean(-1, keepdims=True)
        var = g.var(-1, keepdims=True)
        return ((g - mean) / np.sqrt(var + 1e-5)).reshape(xx.shape) * w[None, :, None] + b[None, :, None]

    xt = lazyscope.tensor(x, device=device, requires_grad=True)
    out = gn(xt)
    np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-10, atol=1e-12)
    weights = rng.standard_normal(x.shape)
    (out * lazyscope.tensor(weights, device=device)).sum().backward()
    numeric = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += 1e-6
        minus[idx] -= 1e-6
        numeric[idx] = (np.sum(ref(plus) * weights) - np.sum(ref(minus) * weights)) / 2e-6
    np.testing.assert_allclose(xt.grad.numpy(), numeric, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
def test_softplus_module(device):
    x = np.array([-30.0, -1.0, 0.0, 1.0, 5.0, 30.0], dtype=np.float32)
    out = nn.Softplus(beta=2.0, threshold=10.0)(lazyscope.tensor(x, device=device)).numpy()
    want = np.where(2 * x > 10, x, np.log1p(np.exp(2 * x.astype(np.float64))) / 2)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-7)


# --- Functional: pad, interpolate, normalize, l1_loss.

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode,numpy_mode", [("constant", "constant"), ("reflect", "reflect"),
                                             ("replicate", "edge"), ("circular", "wrap")])
def test_pad_matches_numpy(device, mode, numpy_mode):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    out = F.pad(lazyscope.tensor(x, device=device), (1, 2, 3, 0), mode=mode, **({"value": 1.5} if mode == "constant"
                                                                                  else {}))
    kwargs = {"constant_values": 1.5} if mode == "constant" else {}
    np.testing.assert_array_equal(out.numpy(), np.pad(x, ((0, 0), (0, 0), (3, 0), (1, 2)), mode=numpy_mode, **kwargs))


@pytest.mark.parametrize("device", DEVICES)
def test_pad_negative_crops_and_gradient_flows(device):
    x = rng.standard_normal((2, 6))
    xt = lazyscope.tensor(x, device=device, requires_grad=True)
    out = F.pad(xt, (-1, 2))
    np.testing.assert_array_equal(out.numpy(), np.pad(x[:, 1:], ((0, 0), (0, 2))))
    out.sum().backward()
    np.testing.assert_array_equal(xt.grad.numpy(), np.concatenate([np.zeros((2, 1)), np.ones((2, 5))], 1))


def interp_ref_1d(x, out_len, mode, align_corners, scale=None):
    """Along the last axis; PyTorch's source-index rules."""
    n_in = x.shape[-1]
    ratio = 1.0 / scale if scale else n_in / out_len
    dst = np.arange(out_len)
    if mode == "nearest":
        return x[..., np.minimum(np.floor(dst * ratio).astype(int), n_in - 1)]
    src = dst * (n_in - 1) / (out_len - 1) if align_corners else np.maximum((dst + 0.5) * ratio - 0.5, 0)
    lo = np.minimum(np.floor(src).astype(int), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    f = src - lo
    return x[..., lo] * (1 - f) + x[..., hi] * f


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("bilinear", False), ("bilinear", True)])
def test_interpolate_matches_numpy(device, mode, align_corners):
    x = rng.standard_normal((1, 2, 3, 4))
    out = F.interpolate(lazyscope.tensor(x, device=device), size=(5, 7), mode=mode, align_corners=align_corners)
    want = interp_ref_1d(interp_ref_1d(x, 7, mode, align_corners).swapaxes(-1, -2), 5, mode,
                         align_corners).swapaxes(-1, -2)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    doubled = F.interpolate(lazyscope.tensor(x[:, :, 0], device=device), scale_factor=2, mode="linear"
                            if mode != "nearest" else "nearest", align_corners=align_corners)
    np.testing.assert_allclose(doubled.numpy(), interp_ref_1d(x[:, :, 0], 8, mode, align_corners, scale=2),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_normalize_and_l1_loss(device):
    x = rng.standard_normal((3, 4))
    x[1] = 0
    t = lazyscope.tensor(x, device=device)
    norms = np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    np.testing.assert_allclose(F.normalize(t, dim=1).numpy(), x / norms, rtol=1e-12)
    np.testing.assert_allclose(F.normalize(t, p=1, dim=0).numpy(),
                               x / np.maximum(np.abs(x).sum(0, keepdims=True), 1e-12), rtol=1e-12)
    y = rng.standard_normal((3, 4))
    u = lazyscope.tensor(y, device=device)
    assert F.l1_loss(t, u).item() == pytest.approx(np.abs(x - y).mean(), rel=1e-12)
    assert nn.L1Loss(reduction="sum")(t, u).item() == pytest.approx(np.abs(x - y).sum(), rel=1e-12)
    np.testing.assert_allclose(F.l1_loss(t, u, reduction="none").numpy(), np.abs(x - y))


# --- init, utils.

def test_trunc_normal_stays_in_bounds_with_the_truncated_moments():
    lazyscope.manual_seed(5)
    t = lazyscope.empty(20000)
    assert nn.init.trunc_normal_(t, mean=1.0, std=2.0, a=-1.0, b=2.0) is t
    v = t.numpy()
    assert v.min() >= -1.0 and v.max() <= 2.0
    # Mean of N(1, 2²) truncated to [-1, 2]: mu + sigma (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha)).
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))  # noqa: E731
    alpha, beta = -1.0, 0.5
    assert abs(v.mean() - (1 + 2 * (phi(alpha) - phi(beta)) / (cdf(beta) - cdf(alpha)))) < 0.03


def test_parameters_to_vector_round_trip_and_checkpoint():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = nn.utils.parameters_to_vector(model.parameters())
    expected = np.concatenate([p.numpy().reshape(-1) for p in model.parameters()])
    np.testing.assert_array_equal(vec.numpy(), expected)
    nn.utils.vector_to_parameters(vec * 2, model.parameters())
    np.testing.assert_allclose(np.concatenate([p.numpy().reshape(-1) for p in model.parameters()]), expected * 2)
    from lazyscope.utils.checkpoint import checkpoint
    x = lazyscope.randn(4, 3, requires_grad=True)
    checkpoint(model, x, use_reentrant=False).sum().backward()
    g = x.grad.numpy()
    x.grad = None
    model(x).sum().backward()
    np.testing.assert_array_equal(g, x.grad.numpy())


# --- Optimizers and schedulers.

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("momentum,centered,weight_decay", [(0.0, False, 0.0), (0.9, True, 0.1)])
def test_rmsprop_matches_numpy(device, momentum, centered, weight_decay):
    p0 = rng.standard_normal(4)
    grads = [rng.standard_normal(4) for _ in range(3)]
    p = nn.Parameter(lazyscope.tensor(p0, device=device))
    opt = optim.RMSprop([p], lr=0.01, alpha=0.9, eps=1e-8, momentum=momentum, centered=centered,
                        weight_decay=weight_decay)
    ref, sq, avg, buf = p0.copy(), np.zeros(4), np.zeros(4), np.zeros(4)
    for g in grads:
        p.grad = lazyscope.tensor(g, device=device)
        opt.step()
        g = g + weight_decay * ref
        sq = 0.9 * sq + 0.1 * g * g
        if centered:
            avg = 0.9 * avg + 0.1 * g
            denom = np.sqrt(sq - avg * avg) + 1e-8
        else:
            denom = np.sqrt(sq) + 1e-8
        if momentum:
            buf = momentum * buf + g / denom
            ref = ref - 0.01 * buf
        else:
            ref = ref - 0.01 * g / denom
    np.testing.assert_allclose(p.numpy(), ref, rtol=1e-10)


def _sgd():
    return optim.SGD([nn.Parameter(lazyscope.zeros(1))], lr=0.1, momentum=0.9)


def test_lambda_lr():
    opt = _sgd()
    sched = optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.5 ** epoch)
    lrs = []
    for _ in range(4):
        lrs.append(opt.param_groups[0]["lr"])
        sched.step()
    assert lrs == pytest.approx([0.1, 0.05, 0.025, 0.0125])
    with pytest.raises(ValueError, match="expected 1 lr_lambdas, but got 2"):
        optim.lr_scheduler.LambdaLR(_sgd(), [lambda e: 1, lambda e: 1])


def test_one_cycle_lr_follows_the_closed_form():
    opt = _sgd()
    total, max_lr, pct = 10, 1.0, 0.3
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=max_lr, total_steps=total, pct_start=pct)
    initial, minimum = max_lr / 25.0, max_lr / 25.0 / 1e4
    up_end, down_end = pct * total - 1, total - 1
    cos = lambda a, b, f: b + (a - b) / 2 * (math.cos(math.pi * f) + 1)  # noqa: E731
    for step in range(total):
        if step <= up_end:
            want_lr, want_m = cos(initial, max_lr, step / up_end), cos(0.95, 0.85, step / up_end)
        else:
            f = (step - up_end) / (down_end - up_end)
            want_lr, want_m = cos(max_lr, minimum, f), cos(0.85, 0.95, f)
        assert opt.param_groups[0]["lr"] == pytest.approx(want_lr, rel=1e-12), step
        assert opt.param_groups[0]["momentum"] == pytest.approx(want_m, rel=1e-12), step
        sched.step()
    with pytest.raises(ValueError, match="tried to step 11 times"):
        sched.step()


def test_reduce_lr_on_plateau():
    opt = _sgd()
    sched = optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1, cooldown=1, min_lr=0.02)
    lrs = []
    for loss in [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95]:
        sched.step(lazyscope.tensor(loss))
        lrs.append(opt.param_groups[0]["lr"])
    # Bad epochs: 0.95 x2 -> halve (0.05), cooldown 1 epoch, two more bad -> 0.025, then min_lr 0.02.
    assert lrs == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025])
    sched.step(0.95)
    sched.step(0.95)
    sched.step(0.95)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.02)


# --- DataLoader with workers.

class SlowSquares(Dataset):
    def __len__(self):
        return 23

    def __getitem__(self, i):
        import time
        time.sleep(0.001 * ((i * 7) % 3))  # finish out of order
        return lazyscope.tensor([float(i * i)]), i


@pytest.mark.parametrize("workers", [1, 3])
def test_dataloader_with_workers_gives_the_same_batches_as_without(workers):
    def batches(num_workers):
        loader = DataLoader(SlowSquares(), batch_size=4, shuffle=True, generator=7, num_workers=num_workers)
        return [(x.numpy().tolist(), y.tolist()) for _ in range(2) for x, y in loader]
    assert batches(workers) == batches(0)
    tensors = TensorDataset(lazyscope.arange(10.0))
    assert [b[0].tolist() for b in DataLoader(tensors, batch_size=3, num_workers=2)] == \
        [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0]]


def test_dataloader_worker_errors_reach_the_caller_and_init_runs_per_worker():
    class Broken(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            if i == 5:
                raise KeyError("sample 5 is missing")
            return i

    seen = []
    with pytest.raises(KeyError, match="sample 5 is missing"):
        list(DataLoader(Broken(), batch_size=2, num_workers=2, worker_init_fn=seen.append))
    assert sorted(seen) == [0, 1]
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(Broken(), num_workers=-1)
