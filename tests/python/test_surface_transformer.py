"""nn.TransformerDecoderLayer, TransformerDecoder and Transformer against a
NumPy implementation of PyTorch's equations (post-norm and pre-norm, masks),
their parameter names in PyTorch's order, and the mask helper."""
import math

import numpy as np
import pytest

import lazyscope
from lazyscope import nn
from test_nn_more import encoder_layer_ref, layer_norm_ref, params, softmax_ref

DEVICES = ["cpu", "lazy:0"]
rng = np.random.default_rng(73)


def attention_ref(query, memory, p, prefix, heads, mask=None):
    """[N, Lq, E] attending over [N, Lk, E] with `prefix`'s in_proj/out_proj; mask True = not allowed."""
    n, lq, e = query.shape
    lk, d = memory.shape[1], e // heads
    w_q, w_k, w_v = np.split(p[prefix + ".in_proj_weight"], 3, 0)
    b_q, b_k, b_v = np.split(p[prefix + ".in_proj_bias"], 3, 0)
    split = lambda t, length: t.reshape(n, length, heads, d).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(query @ w_q.T + b_q, lq), split(memory @ w_k.T + b_k, lk), split(memory @ w_v.T + b_v, lk)
    scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
    if mask is not None:
        scores = np.where(mask, -np.inf, scores)
    out = (softmax_ref(scores) @ v).transpose(0, 2, 1, 3).reshape(n, lq, e)
    return out @ p[prefix + ".out_proj.weight"].T + p[prefix + ".out_proj.bias"]


def decoder_layer_ref(tgt, memory, p, heads, norm_first, tgt_mask=None, prefix=""):
    """tgt [T, N, E], memory [S, N, E] (batch_first=False): PyTorch's decoder layer, relu feed-forward."""
    x, mem = tgt.transpose(1, 0, 2), memory.transpose(1, 0, 2)
    get = lambda name: p[prefix + name]  # noqa: E731
    norm = lambda y, i: layer_norm_ref(y, get(f"norm{i}.weight"), get(f"norm{i}.bias"))  # noqa: E731
    sa = lambda y: attention_ref(y, y, p, prefix + "self_attn", heads, tgt_mask)  # noqa: E731
    mha = lambda y: attention_ref(y, mem, p, prefix + "multihead_attn", heads)  # noqa: E731

    def ff(y):
        return np.maximum(y @ get("linear1.weight").T + get("linear1.bias"), 0) @ get("linear2.weight").T \
            + get("linear2.bias")

    if norm_first:
        x = x + sa(norm(x, 1))
        x = x + mha(norm(x, 2))
        x = x + ff(norm(x, 3))
    else:
        x = norm(x + sa(x), 1)
        x = norm(x + mha(x), 2)
        x = norm(x + ff(x), 3)
    return x.transpose(1, 0, 2)


def perturb(module):
    """LayerNorm weights and biases off their trivial init, so a wrong norm cannot pass."""
    for name, p in module.named_parameters():
        if "norm" in name or name.endswith("in_proj_bias"):
            nn.init.normal_(p)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_and_stack_match_numpy(device, norm_first):
    lazyscope.manual_seed(5)
    layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, norm_first=norm_first)
    perturb(layer)
    layer = layer.to(device)
    tgt = rng.standard_normal((4, 3, 8)).astype(np.float32)
    memory = rng.standard_normal((6, 3, 8)).astype(np.float32)
    causal = np.triu(np.ones((4, 4), dtype=bool), 1)
    t = lambda a: lazyscope.tensor(a, device=device)  # noqa: E731
    out = layer(t(tgt), t(memory), tgt_mask=t(causal))
    want = decoder_layer_ref(tgt.astype(np.float64), memory.astype(np.float64), params(layer), 2, norm_first, causal)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(layer(t(tgt), t(memory), tgt_is_causal=True).numpy(), want, rtol=1e-4, atol=1e-5)
    stack = nn.TransformerDecoder(layer, 2)
    p = params(layer)
    twice = decoder_layer_ref(decoder_layer_ref(tgt.astype(np.float64), memory.astype(np.float64), p, 2, norm_first),
                              memory.astype(np.float64), p, 2, norm_first)
    np.testing.assert_allclose(stack(t(tgt), t(memory)).numpy(), twice, rtol=1e-4, atol=1e-5)


def test_parameter_names_follow_pytorchs_order():
    names = [n for n, _ in nn.TransformerDecoderLayer(8, 2, 16).named_parameters()]
    assert names == ["self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                     "self_attn.out_proj.bias", "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
                     "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias", "linear1.weight",
                     "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight",
                     "norm2.bias", "norm3.weight", "norm3.bias"]


@pytest.mark.parametrize("device", DEVICES)
def test_transformer_is_encoder_then_decoder_with_final_norms(device):
    lazyscope.manual_seed(6)
    model = nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16, dropout=0.0)
    perturb(model)
    model = model.to(device)
    src = rng.standard_normal((5, 2, 8)).astype(np.float32)
    tgt = rng.standard_normal((3, 2, 8)).astype(np.float32)
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    np.testing.assert_array_equal(mask.numpy(), np.triu(np.full((3, 3), -np.inf), 1))
    out = model(lazyscope.tensor(src, device=device), lazyscope.tensor(tgt, device=device), tgt_mask=mask.to(device))
    p = params(model)
    enc = {k[len("encoder.layers.0."):]: v for k, v in p.items() if k.startswith("encoder.layers.0.")}
    memory = encoder_layer_ref(src.astype(np.float64), enc, 2, False)
    memory = layer_norm_ref(memory, p["encoder.norm.weight"], p["encoder.norm.bias"])
    dec = decoder_layer_ref(tgt.astype(np.float64), memory, p, 2, False, np.triu(np.ones((3, 3), dtype=bool), 1),
                            prefix="decoder.layers.0.")
    want = layer_norm_ref(dec, p["decoder.norm.weight"], p["decoder.norm.bias"])
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-4, atol=1e-5)
    # Every matrix re-initialized with xavier_uniform_: bound sqrt(6 / (fan_in + fan_out)).
    w = p["decoder.layers.0.linear1.weight"]
    assert np.abs(w).max() <= math.sqrt(6 / (8 + 16))
    with pytest.raises(RuntimeError, match=r"Transformer: the feature number of src \(8\) and tgt \(4\) must be "
                                           r"equal to d_model \(8\)"):
        model(lazyscope.tensor(src, device=device), lazyscope.zeros(3, 2, 4, device=device))
