"""torch.nn.functional's names over LazyScope's ops.

Ops that the engine provides are looked up on the ``lazyscope`` package at
call time (``conv2d``, ``max_pool2d``, ``layer_norm``, ``dropout`` … come with
the nn-ops work), so this module works with whichever build it runs on and
names the missing op clearly otherwise. ``layer_norm``, ``batch_norm`` and
``dropout`` have compositions from existing ops for builds without them.
"""
import math

import numpy as np

import lazyscope
from lazyscope import _C
from lazyscope._surface import _shape_of


def _engine_op(name, caller=None):
    fn = getattr(lazyscope, name, None)
    if fn is None:
        raise NotImplementedError(
            f"{caller or name}: lazyscope.{name} is not available in this build of the engine")
    return fn


# Activations.
def relu(input, inplace=False):  # noqa: A002  (PyTorch's names)
    return input.relu()


def gelu(input, approximate="none"):  # noqa: A002
    if approximate == "none":
        return _C.gelu(input)
    if approximate == "tanh":
        inner = (input + input * input * input * 0.044715) * math.sqrt(2.0 / math.pi)
        return input * 0.5 * (inner.tanh() + 1.0)
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(input, inplace=False):  # noqa: A002
    return _C.silu(input)


def tanh(input):  # noqa: A002
    return input.tanh()


def sigmoid(input):  # noqa: A002
    return input.sigmoid()


def leaky_relu(input, negative_slope=0.01, inplace=False):  # noqa: A002
    return _C.leaky_relu(input, negative_slope)


def softplus(input, beta=1.0, threshold=20.0):  # noqa: A002
    return _C.softplus(input, beta, threshold)


def _softmax_dim(dim, name):
    if dim is None:
        raise TypeError(f"{name}: give dim= explicitly (PyTorch's implicit dim choice is deprecated)")
    return dim


def softmax(input, dim=None, dtype=None):  # noqa: A002
    return _C.softmax(input, _softmax_dim(dim, "softmax"), dtype)


def log_softmax(input, dim=None, dtype=None):  # noqa: A002
    return _C.log_softmax(input, _softmax_dim(dim, "log_softmax"), dtype)


# Linear algebra and embeddings.
def linear(input, weight, bias=None):  # noqa: A002
    """y = x Aᵀ + b over the last dimension of ``input`` (any leading dims, or 1-D)."""
    # The engine's shape tuples: Tensor.shape makes a Size and indexes it in Python, ~1 us of each call.
    if _shape_of(input)[-1] != _shape_of(weight)[-1]:
        raise lazyscope.ShapeError(
            f"linear: input has {input.shape[-1]} features in its last dimension (shape {tuple(input.shape)}) "
            f"but the weight expects {weight.shape[-1]} (weight shape {tuple(weight.shape)})"
                + lazyscope._C._at_user_line())
    out = input @ weight.t()
    return out if bias is None else out + bias


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002
              scale_grad_by_freq=False, sparse=False):
    return _C.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)


one_hot = _C.one_hot


# Convolutions and pooling (engine ops).
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return _engine_op("conv2d")(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """The transposed convolution: weight [C_in, C_out/groups, kH, kW] (PyTorch's order of arguments)."""
    return _engine_op("conv_transpose2d")(input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    if return_indices:
        raise NotImplementedError("max_pool2d: return_indices=True is not supported")
    return _engine_op("max_pool2d")(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    if divisor_override is not None:
        raise NotImplementedError("avg_pool2d: divisor_override is not supported")
    return _engine_op("avg_pool2d")(input, kernel_size, stride, padding, ceil_mode, count_include_pad)


def adaptive_avg_pool2d(input, output_size):  # noqa: A002
    return _engine_op("adaptive_avg_pool2d")(input, output_size)



# The 3-D versions: NCDHW [N, C, D, H, W] or unbatched [C, D, H, W] inputs,
# spatial arguments an int or a triple.
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return _engine_op("conv3d")(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """The transposed convolution: weight [C_in, C_out/groups, kD, kH, kW] (PyTorch's order of arguments)."""
    return _engine_op("conv_transpose3d")(input, weight, bias, stride, padding, output_padding, groups, dilation)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    if return_indices:
        raise NotImplementedError("max_pool3d: return_indices=True is not supported")
    return _engine_op("max_pool3d")(input, kernel_size, stride, padding, dilation, ceil_mode)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,  # noqa: A002
               count_include_pad=True, divisor_override=None):
    return _engine_op("avg_pool3d")(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                    divisor_override)


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    return _engine_op("adaptive_avg_pool3d")(input, output_size)

# Normalization.
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    if tuple(input.shape[len(input.shape) - len(normalized_shape):]) != normalized_shape:
        raise lazyscope.ShapeError(
            f"layer_norm: input of shape {tuple(input.shape)} does not end with normalized_shape "
            f"{list(normalized_shape)}" + lazyscope._C._at_user_line())
    op = getattr(lazyscope, "layer_norm", None)
    if op is not None:
        return op(input, list(normalized_shape), weight, bias, eps)
    # Composition for builds without the fused op: biased variance, as PyTorch.
    dims = list(range(-len(normalized_shape), 0))
    mean = input.mean(dims, keepdim=True)
    centered = input - mean
    var = (centered * centered).mean(dims, keepdim=True)
    out = centered * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,  # noqa: A002
               momentum=0.1, eps=1e-5):
    """Normalizes over every dim but 1. Running statistics are not updated here
    (tensors cannot change in place); nn.BatchNorm updates its buffers itself."""
    op = getattr(lazyscope, "batch_norm", None)
    if op is not None:
        return op(input, running_mean, running_var, weight, bias, training, momentum, eps)
    if input.dim() < 2:
        raise lazyscope.ShapeError(f"batch_norm: expected at least 2 dims (N, C, …), got shape {tuple(input.shape)}"
                                   + lazyscope._C._at_user_line())
    channels = input.shape[1]
    dims = [0] + list(range(2, input.dim()))
    view = [1, channels] + [1] * (input.dim() - 2)
    if training:
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: running_mean and running_var are needed when training=False")
        centered = input - running_mean.reshape(view)
        var = running_var.reshape(view)
    out = centered * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(view)
    if bias is not None:
        out = out + bias.reshape(view)
    return out


# Dropout.
def _check_p(p, name):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got {p}")


def _host_mask(shape, p, like):
    # A fresh host mask is a graph input (data), not a constant, so a new mask
    # each step does not recompile; the engine's dropout op avoids the upload.
    keep = (lazyscope._rng.random(shape) >= p).astype(np.float32) / np.float32(1.0 - p)
    return _C.from_numpy(keep, str(like.device)).to(like.dtype)


def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    _check_p(p, "dropout")
    if not training or p == 0.0:
        return input
    op = getattr(lazyscope, "dropout", None)
    if op is not None:
        return op(input, p, training)
    if p == 1.0:
        return input * 0.0
    return input * _host_mask(tuple(input.shape), p, input)


def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    _check_p(p, "dropout2d")
    if not training or p == 0.0:
        return input
    op = getattr(lazyscope, "dropout2d", None)
    if op is not None:
        return op(input, p, training)
    if input.dim() not in (3, 4):
        raise lazyscope.ShapeError(f"dropout2d: expected a 3-D or 4-D input, got shape {tuple(input.shape)}"
                                   + lazyscope._C._at_user_line())
    if p == 1.0:
        return input * 0.0
    # One mask value per (sample, channel), broadcast over the spatial dims.
    shape = tuple(input.shape[:-2]) + (1, 1)
    return input * _host_mask(shape, p, input)


# Losses (engine ops, PyTorch's signatures).
nll_loss = _C.nll_loss
cross_entropy = _C.cross_entropy
mse_loss = _C.mse_loss
binary_cross_entropy = _C.binary_cross_entropy
binary_cross_entropy_with_logits = _C.binary_cross_entropy_with_logits


# LAZYSCOPE_FUSED_ATTENTION (default 1): scaled_dot_product_attention and
# nn.MultiheadAttention run as the engine's attention op (one kernel per
# pass, _C.attention) where it applies; 0 composes them from matmul, where
# and softmax, as before (A/B runs, and the way to higher-order gradients).
# Read once, at import.
import os as _os  # noqa: E402

FUSED_ATTENTION = _os.environ.get("LAZYSCOPE_FUSED_ATTENTION", "1") != "0"


def _fusable(query, key, value, masks, dropout):
    """Whether the attention op takes these: float32/64 operands of one dtype, no dropout, and
    no mask that needs a gradient (the op gives none to its mask)."""
    return (FUSED_ATTENTION and dropout == 0.0 and query.dtype in (lazyscope.float32, lazyscope.float64)
            and key.dtype == query.dtype and value.dtype == query.dtype
            and not any(m is not None and m.requires_grad for m in masks))


def _attention_heads_last(q, k, v, mask, scale, is_causal):
    """The attention op on [..., L, D] operands with one batch dim and an optional head dim
    ([N, H, L, D] or [N, L, D]); the result in the operands' layout."""
    if mask is not None and mask.dtype != lazyscope.bool and mask.dtype != q.dtype:
        mask = mask.to(q.dtype)
    if q.dim() == 3:
        if mask is not None and mask.dim() == 3:  # [N, Lq, Lk] over [N, 1, Lq, Lk]
            mask = mask.unsqueeze(1)
        out = _C.attention(q.unsqueeze(2), k.unsqueeze(2), v.unsqueeze(2), mask, scale, is_causal)
        return out.squeeze(2)
    out = _C.attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask, scale, is_causal)
    return out.transpose(1, 2)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """softmax(Q Kᵀ · scale + mask) V over the last two dims; a boolean mask keeps True positions."""
    d = query.shape[-1]
    if (query.dim() in (3, 4) and key.dim() == query.dim() and value.dim() == query.dim()
            and (attn_mask is None or attn_mask.dim() <= query.dim())
            and _fusable(query, key, value, (attn_mask,), dropout_p)):
        return _attention_heads_last(query, key, value, attn_mask,
                                     scale if scale is not None else 1.0 / math.sqrt(d), is_causal)
    scores = (query @ key.transpose(-2, -1)) * (scale if scale is not None else 1.0 / math.sqrt(d))
    if is_causal:
        n, m = query.shape[-2], key.shape[-2]
        causal = np.tril(np.ones((n, m), dtype=bool))
        attn_mask = _C.from_numpy(causal, str(query.device))
    if attn_mask is not None:
        scores = _apply_mask(scores, attn_mask, keep_true=True)
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return weights @ value


def _apply_mask(scores, mask, keep_true):
    """Adds a float mask, or masks out positions of a boolean one with -inf."""
    if mask.dtype == lazyscope.bool:
        masked_out = mask.logical_not() if keep_true else mask
        return lazyscope.where(masked_out, float("-inf"), scores)
    return scores + mask


# --- Compositions added for issue 14 §1: conv1d, group_norm, pad, interpolate, normalize, l1_loss.

def _one(op, name, v):
    """An int or a 1-tuple (conv1d's and conv_transpose1d's spatial arguments) as an int."""
    if isinstance(v, int):
        return v
    v = tuple(v)
    if len(v) != 1:
        raise ValueError(f"{op}: {name} must be an int or a 1-tuple, got {v}")
    return v[0]


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    """conv2d over a height of 1: input [N, C, L] (or [C, L]), weight [O, C/groups, k]."""
    stride, dilation = _one("conv1d", "stride", stride), _one("conv1d", "dilation", dilation)
    padding = padding if isinstance(padding, str) else _one("conv1d", "padding", padding)
    if weight.dim() != 3:
        raise lazyscope.ShapeError(f"conv1d: expected a 3-D weight [out_channels, in_channels/groups, kW], got "
                                   f"shape {tuple(weight.shape)}" + lazyscope._C._at_user_line())
    if input.dim() not in (2, 3):
        raise lazyscope.ShapeError(f"conv1d: expected a 2-D or 3-D input, got shape {tuple(input.shape)}"
                                   + lazyscope._C._at_user_line())
    x = input.unsqueeze(-2)  # [N, C, 1, L]
    pad = padding if isinstance(padding, str) else (0, padding)
    out = conv2d(x, weight.unsqueeze(-2), bias, (1, stride), pad, (1, dilation), groups)
    return out.squeeze(-2)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,  # noqa: A002
                     dilation=1):
    """conv_transpose2d over a height of 1: input [N, C_in, L] (or [C_in, L]), weight [C_in, C_out/groups, k]."""
    op = "conv_transpose1d"
    if weight.dim() != 3:
        raise lazyscope.ShapeError(f"{op}: expected a 3-D weight [in_channels, out_channels/groups, kW], got "
                                   f"shape {tuple(weight.shape)}" + lazyscope._C._at_user_line())
    if input.dim() not in (2, 3):
        raise lazyscope.ShapeError(f"{op}: expected a 2-D or 3-D input, got shape {tuple(input.shape)}"
                                   + lazyscope._C._at_user_line())
    out = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _one(op, "stride", stride)),
                           (0, _one(op, "padding", padding)), (0, _one(op, "output_padding", output_padding)),
                           groups, (1, _one(op, "dilation", dilation)))
    return out.squeeze(-2)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalizes each sample over groups of channels (biased variance), then a per-channel affine."""
    if input.dim() < 2 or input.shape[1] % num_groups:
        raise lazyscope.ShapeError(f"group_norm: expected an input [N, C, ...] with C divisible by num_groups="
                                   f"{num_groups}, got shape {tuple(input.shape)}" + lazyscope._C._at_user_line())
    n, c = input.shape[0], input.shape[1]
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(-1, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(-1, keepdim=True)
    out = (centered * (var + eps).rsqrt()).reshape(tuple(input.shape))
    view = [1, c] + [1] * (input.dim() - 2)
    if weight is not None:
        out = out * weight.reshape(view)
    if bias is not None:
        out = out + bias.reshape(view)
    return out


def _edge_index(size, left, right, mode):
    """Source index along one dim for each position of the padded dim."""
    positions = np.arange(-left, size + right)
    if mode == "replicate":
        return np.clip(positions, 0, size - 1)
    if mode == "circular":
        return positions % size
    if mode == "reflect":
        if left >= size or right >= size:
            raise ValueError(f"pad: padding ({left}, {right}) should be less than the dimension size {size} for "
                             f"mode 'reflect'")
        period = 2 * (size - 1) if size > 1 else 1
        p = np.abs(positions) % period
        return np.where(p >= size, period - p, p)
    raise ValueError(f"pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', got {mode!r}")


def pad(input, pad, mode="constant", value=None):  # noqa: A002
    """Pads the last len(pad)//2 dims, last dim first: (left, right, top, bottom, ...). Constant padding
    concatenates filled blocks (negative padding crops); the other modes gather with an index."""
    pad = list(pad)
    if len(pad) % 2 or len(pad) // 2 > input.dim():
        raise ValueError(f"pad: padding length must be divisible by 2 and at most twice the number of dims "
                         f"({input.dim()}), got {len(pad)}")
    out = input
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        left, right = pad[2 * i], pad[2 * i + 1]
        if mode == "constant":
            if left < 0:
                out = out.narrow(dim, -left, out.shape[dim] + left)
                left = 0
            if right < 0:
                out = out.narrow(dim, 0, out.shape[dim] + right)
                right = 0
            pieces = []
            for width in (left, None, right):
                if width is None:
                    pieces.append(out)
                elif width:
                    shape = list(out.shape)
                    shape[dim] = width
                    pieces.append(lazyscope.full(shape, 0 if value is None else value, dtype=out.dtype,
                                                 device=out.device))
            out = lazyscope.cat(pieces, dim) if len(pieces) > 1 else out
        else:
            index = _edge_index(out.shape[dim], left, right, mode).astype(np.int64)
            out = out.index_select(dim, _C.from_numpy(index, "cpu").to(out.device))
    return out


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,  # noqa: A002
                recompute_scale_factor=None, antialias=False):
    """Resizes the spatial dims (all but N, C): 'nearest' gathers, 'linear'/'bilinear'/'trilinear' mix the two
    neighbours along each dim in turn (separable, as PyTorch's), with PyTorch's source-index rules."""
    spatial = input.dim() - 2
    if spatial < 1:
        raise lazyscope.ShapeError(f"interpolate: expected an input [N, C, ...] with spatial dims, got shape "
                                   f"{tuple(input.shape)}" + lazyscope._C._at_user_line())
    expected = {"nearest": None, "linear": 1, "bilinear": 2, "trilinear": 3}
    if mode not in expected:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (nearest, linear, bilinear, "
                                  f"trilinear)")
    if expected[mode] not in (None, spatial):
        raise ValueError(f"interpolate: mode {mode!r} expects {expected[mode]} spatial dims, got input shape "
                         f"{tuple(input.shape)}")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: either size or scale_factor should be defined, not both")
    in_sizes = list(input.shape[2:])
    if size is not None:
        out_sizes = [size] * spatial if isinstance(size, int) else list(size)
        scales = [None] * spatial
    else:
        scales = [scale_factor] * spatial if not isinstance(scale_factor, (list, tuple)) else list(scale_factor)
        out_sizes = [int(math.floor(s * f)) for s, f in zip(in_sizes, scales)]
        if recompute_scale_factor:
            scales = [None] * spatial
    out = input
    for i, (n_in, n_out, scale) in enumerate(zip(in_sizes, out_sizes, scales)):
        dim = 2 + i
        dst = np.arange(n_out, dtype=np.float64)
        ratio = (1.0 / scale) if scale else n_in / n_out
        device = out.device
        if mode == "nearest":
            index = np.minimum(np.floor(dst * ratio).astype(np.int64), n_in - 1)
            out = out.index_select(dim, _C.from_numpy(index, "cpu").to(device))
            continue
        if align_corners:
            src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros_like(dst)
        else:
            src = np.maximum((dst + 0.5) * ratio - 0.5, 0.0)
        lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        hi = np.minimum(lo + 1, n_in - 1)
        frac = (src - lo).astype(np.float64)
        view = [1] * out.dim()
        view[dim] = n_out
        w_hi = _C.from_numpy(frac.reshape(view), "cpu").to(device).to(out.dtype)
        a = out.index_select(dim, _C.from_numpy(lo, "cpu").to(device))
        b = out.index_select(dim, _C.from_numpy(hi, "cpu").to(device))
        out = a + (b - a) * w_hi
    return out


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):  # noqa: A002
    """input / max(‖input‖_p along dim, eps)."""
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported; use the returned tensor")
    if p == 2:
        norm = (input * input).sum(dim, keepdim=True).sqrt()
    elif p == 1:
        norm = input.abs().sum(dim, keepdim=True)
    else:
        norm = (input.abs() ** p).sum(dim, keepdim=True) ** (1.0 / p)
    return input / norm.clamp(min=eps)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):  # noqa: A002
    if size_average is not None or reduce is not None:
        raise NotImplementedError("l1_loss: size_average and reduce are deprecated and not supported; use reduction=")
    return _reduce_loss((input - target).abs(), reduction, "l1_loss")


# More activations and losses, as compositions of the engine's ops (their
# gradients come from the ops'). PyTorch's definitions; the tests check
# them against NumPy.
def _reduce_loss(loss, reduction, name):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{name}: {reduction} is not a valid value for reduction (mean, sum, none)")


def elu(input, alpha=1.0, inplace=False):  # noqa: A002
    """x where x > 0, else alpha·(exp(x) − 1)."""
    return lazyscope.where(input > 0, input, (input.clamp(max=0.0).exp() - 1.0) * alpha)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):  # noqa: A002
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    return input.clamp(min_val, max_val)


def relu6(input, inplace=False):  # noqa: A002
    return input.clamp(0.0, 6.0)


def logsigmoid(input):  # noqa: A002
    """log(sigmoid(x)) = −softplus(−x): finite for large |x|."""
    return -softplus(-input)


def mish(input, inplace=False):  # noqa: A002
    """x · tanh(softplus(x))."""
    return input * softplus(input).tanh()


def glu(input, dim=-1):  # noqa: A002
    """a · sigmoid(b), a and b the two halves of `input` along dim."""
    size = _shape_of(input)[dim]
    if size % 2:
        raise ValueError(f"glu: halving dimension {dim} needs an even size, got {size}{_C._at_user_line()}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):  # noqa: A002
    """0.5·d²/beta where |d| < beta, else |d| − 0.5·beta (d = input − target)."""
    if size_average is not None or reduce is not None:
        raise NotImplementedError("smooth_l1_loss: size_average and reduce are deprecated; use reduction=")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = (input - target).abs()
    loss = d if beta == 0 else lazyscope.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta)
    return _reduce_loss(loss, reduction, "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0):  # noqa: A002
    """0.5·d² where |d| < delta, else delta·(|d| − 0.5·delta)."""
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be positive, got {delta}")
    d = (input - target).abs()
    loss = lazyscope.where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    return _reduce_loss(loss, reduction, "huber_loss")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):  # noqa: A002
    """target·(log target − input) pointwise (input: log-probabilities); a
    zero target contributes 0. 'batchmean' divides the sum by the batch size."""
    if size_average is not None or reduce is not None:
        raise NotImplementedError("kl_div: size_average and reduce are deprecated; use reduction=")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = lazyscope.where(target > 0, target * (target.clamp(min=1e-38).log() - input), target * 0.0)
    if reduction == "batchmean":
        return loss.sum() / (_shape_of(input)[0] if _shape_of(input) else 1)
    return _reduce_loss(loss, reduction, "kl_div")


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1·x2 / (max(‖x1‖, eps) · max(‖x2‖, eps)) along dim."""
    dot = (x1 * x2).sum(dim)
    n1 = (x1 * x1).sum(dim).sqrt().clamp(min=eps)
    n2 = (x2 * x2).sum(dim).sqrt().clamp(min=eps)
    return dot / (n1 * n2)


# More activations (PyTorch's documented definitions, as compositions).
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def hardsigmoid(input, inplace=False):  # noqa: A002
    """relu6(x + 3) / 6."""
    return (input + 3.0).clamp(0.0, 6.0) / 6.0


def hardswish(input, inplace=False):  # noqa: A002
    """x · relu6(x + 3) / 6."""
    return input * hardsigmoid(input)


def prelu(input, weight):  # noqa: A002
    """max(0, x) + weight · min(0, x), weight [1] or [C] over the channel dim (dim 1; none below 2 dims)."""
    shape = _shape_of(input)
    n = _shape_of(weight)
    count = n[0] if len(n) == 1 else None
    channels = shape[1] if len(shape) >= 2 else 1
    if count is None or count not in (1, channels):
        raise lazyscope.ShapeError(f"prelu: weight of shape {list(n)} must be [1] or [{channels}] (the channels "
                                   f"of an input of shape {list(shape)}){_C._at_user_line()}")
    if count > 1:
        weight = weight.reshape([count] + [1] * (len(shape) - 2))
    return input.clamp(min=0.0) + weight * input.clamp(max=0.0)


def selu(input, inplace=False):  # noqa: A002
    """scale · (max(0, x) + min(0, alpha · (exp(x) − 1))), PyTorch's alpha and scale."""
    return elu(input, _SELU_ALPHA) * _SELU_SCALE


def celu(input, alpha=1.0, inplace=False):  # noqa: A002
    """max(0, x) + min(0, alpha · (exp(x / alpha) − 1))."""
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0 (it divides x)")
    return lazyscope.where(input > 0, input, ((input.clamp(max=0.0) / alpha).exp() - 1.0) * alpha)


def softsign(input):  # noqa: A002
    """x / (1 + |x|)."""
    return input / (input.abs() + 1.0)


def softmin(input, dim=None, dtype=None):  # noqa: A002
    """softmax(−x) along dim."""
    return softmax(-input, _softmax_dim(dim, "softmin"), dtype)


def threshold(input, threshold, value, inplace=False):  # noqa: A002
    """x where x > threshold, else value."""
    return lazyscope.where(input > threshold, input, lazyscope.full_like(input, value))


def tanhshrink(input):  # noqa: A002
    """x − tanh(x)."""
    return input - input.tanh()


def softshrink(input, lambd=0.5):  # noqa: A002
    """x − lambd above lambd, x + lambd below −lambd, else 0."""
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be at least 0, got {lambd}")
    return input - input.clamp(-lambd, lambd)


def hardshrink(input, lambd=0.5):  # noqa: A002
    """x where |x| > lambd, else 0."""
    return lazyscope.where(input.abs() > lambd, input, lazyscope.zeros_like(input))


# Resampling, 1-D pooling, adaptive max pooling, instance norm (compositions).
def pixel_shuffle(input, upscale_factor):  # noqa: A002
    """[*, C·r², H, W] -> [*, C, H·r, W·r]: channel c·r² + i·r + j goes to position (h·r + i, w·r + j)."""
    r, shape = int(upscale_factor), list(_shape_of(input))
    if len(shape) < 3 or r < 1 or shape[-3] % (r * r):
        raise lazyscope.ShapeError(f"pixel_shuffle: expected an input [*, C·r², H, W] with r={r}, got shape "
                                   f"{shape}{_C._at_user_line()}")
    *lead, c, h, w = shape
    x = input.reshape(lead + [c // (r * r), r, r, h, w])
    k = len(lead)
    x = x.permute(list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2])
    return x.reshape(lead + [c // (r * r), h * r, w * r])


def pixel_unshuffle(input, downscale_factor):  # noqa: A002
    """The inverse of pixel_shuffle: [*, C, H·r, W·r] -> [*, C·r², H, W]."""
    r, shape = int(downscale_factor), list(_shape_of(input))
    if len(shape) < 3 or r < 1 or shape[-1] % r or shape[-2] % r:
        raise lazyscope.ShapeError(f"pixel_unshuffle: expected an input [*, C, H·r, W·r] with r={r}, got shape "
                                   f"{shape}{_C._at_user_line()}")
    *lead, c, h, w = shape
    x = input.reshape(lead + [c, h // r, r, w // r, r])
    k = len(lead)
    x = x.permute(list(range(k)) + [k, k + 2, k + 4, k + 1, k + 3])
    return x.reshape(lead + [c * r * r, h // r, w // r])


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    """Deprecated in PyTorch for interpolate, which it calls."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):  # noqa: A002
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):  # noqa: A002
    """Bilinear with align_corners=True, as PyTorch's (deprecated) upsample_bilinear."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def _as_2d(op, input):  # noqa: A002
    """[N, C, L] or [C, L] as [N, C, 1, L] or [C, 1, L]: the 1-D pools are the 2-D ones over a height of 1."""
    if input.dim() not in (2, 3):
        raise lazyscope.ShapeError(f"{op}: expected a 2-D [C, L] or 3-D [N, C, L] input, got shape "
                                   f"{tuple(input.shape)}{_C._at_user_line()}")
    return input.unsqueeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,  # noqa: A002
               return_indices=False):
    if return_indices:
        raise NotImplementedError("max_pool1d: return_indices=True is not supported")
    op = "max_pool1d"
    k = _one(op, "kernel_size", kernel_size)
    s = k if stride is None else _one(op, "stride", stride)
    return max_pool2d(_as_2d(op, input), (1, k), (1, s), (0, _one(op, "padding", padding)),
                      (1, _one(op, "dilation", dilation)), ceil_mode).squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):  # noqa: A002
    op = "avg_pool1d"
    k = _one(op, "kernel_size", kernel_size)
    s = k if stride is None else _one(op, "stride", stride)
    return avg_pool2d(_as_2d(op, input), (1, k), (1, s), (0, _one(op, "padding", padding)), ceil_mode,
                      count_include_pad).squeeze(-2)


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    op = "adaptive_avg_pool1d"
    return adaptive_avg_pool2d(_as_2d(op, input), (1, _one(op, "output_size", output_size))).squeeze(-2)


def _adaptive_max(input, dim, out, op):  # noqa: A002
    """Max over PyTorch's adaptive windows along one dim: window i covers [floor(i·L/out), ceil((i+1)·L/out))."""
    size = int(input.shape[dim])
    if out is None:
        return input
    if not 1 <= out:
        raise ValueError(f"{op}: output sizes must be positive, got {out}")
    if out == size:
        return input
    pieces = []
    for i in range(out):
        start, end = (i * size) // out, -((-(i + 1) * size) // out)
        pieces.append(input.narrow(dim, start, end - start).amax(dim, keepdim=True))
    return lazyscope.cat(pieces, dim) if len(pieces) > 1 else pieces[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):  # noqa: A002
    """The max of each adaptive window, separably (rows, then columns): the max of a rectangle is the max of
    its rows' maxima. Tied maxima share the gradient (as amax)."""
    op = "adaptive_max_pool2d"
    if return_indices:
        raise NotImplementedError(f"{op}: return_indices=True is not supported")
    if input.dim() not in (3, 4):
        raise lazyscope.ShapeError(f"{op}: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape "
                                   f"{tuple(input.shape)}{_C._at_user_line()}")
    oh, ow = (output_size, output_size) if isinstance(output_size, int) or output_size is None else output_size
    return _adaptive_max(_adaptive_max(input, input.dim() - 2, oh, op), input.dim() - 1, ow, op)


def adaptive_max_pool1d(input, output_size, return_indices=False):  # noqa: A002
    op = "adaptive_max_pool1d"
    if return_indices:
        raise NotImplementedError(f"{op}: return_indices=True is not supported")
    x = _as_2d(op, input).squeeze(-2)
    return _adaptive_max(x, x.dim() - 1, _one(op, "output_size", output_size), op)


def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zeroes whole channels of [N, C, L] (or [C, L]): dropout2d over a trailing dim of 1."""
    _check_p(p, "dropout1d")
    if input.dim() not in (2, 3):
        raise lazyscope.ShapeError(f"dropout1d: expected a 2-D [C, L] or 3-D [N, C, L] input, got shape "
                                   f"{tuple(input.shape)}{_C._at_user_line()}")
    return dropout2d(input.unsqueeze(-1), p, training).squeeze(-1)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalizes each (sample, channel) over its spatial dims (biased variance), then a per-channel affine.
    With running statistics and use_input_stats, they move by `momentum` toward the batch's average of the
    per-instance mean and unbiased variance (as PyTorch's); without use_input_stats they are used instead."""
    shape = _shape_of(input)
    if len(shape) < 3:
        raise lazyscope.ShapeError(f"instance_norm: expected an input [N, C, *] with spatial dims, got shape "
                                   f"{list(shape)}{_C._at_user_line()}")
    dims = list(range(2, len(shape)))
    channel = [1, shape[1]] + [1] * (len(shape) - 2)
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        var = ((input - mean) ** 2).mean(dims, keepdim=True)
        if running_mean is not None or running_var is not None:
            count = int(np.prod(shape[2:]))
            with lazyscope.no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.detach().mean(0).reshape(-1) * momentum)
                if running_var is not None:
                    unbiased = var.detach().mean(0).reshape(-1) * (count / max(count - 1, 1))
                    running_var.mul_(1 - momentum).add_(unbiased * momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("instance_norm: use_input_stats=False needs running_mean and running_var")
        mean, var = running_mean.reshape(channel), running_var.reshape(channel)
    out = (input - mean) / (var + eps).sqrt()
    if weight is not None:
        out = out * weight.reshape(channel)
    if bias is not None:
        out = out + bias.reshape(channel)
    return out


# More losses (PyTorch's documented definitions, as compositions).
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """‖x1 − x2 + eps‖_p along the last dim."""
    d = (x1 - x2 + eps).abs()
    if p == math.inf:
        return d.amax(-1, keepdim=keepdim)
    return (d ** p).sum(-1, keepdim=keepdim) ** (1.0 / p)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """max(0, −y·(x1 − x2) + margin)."""
    return _reduce_loss((-target * (input1 - input2) + margin).clamp(min=0.0), reduction, "margin_ranking_loss")


def hinge_embedding_loss(input, target, margin=1.0, reduction="mean"):  # noqa: A002
    """x where y = 1, max(0, margin − x) where y = −1."""
    loss = lazyscope.where(target == 1, input, lazyscope.zeros_like(input)) + \
        lazyscope.where(target == -1, (margin - input).clamp(min=0.0), lazyscope.zeros_like(input))
    return _reduce_loss(loss, reduction, "hinge_embedding_loss")


def soft_margin_loss(input, target, reduction="mean"):  # noqa: A002
    """log(1 + exp(−y·x))."""
    return _reduce_loss(softplus(-target * input), reduction, "soft_margin_loss")


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction="mean"):
    """1 − cos(x1, x2) where y = 1, max(0, cos − margin) where y = −1; cos over the last dim, as PyTorch
    (with 1e-12 added to each squared norm)."""
    dot = (input1 * input2).sum(-1)
    cos = dot / (((input1 * input1).sum(-1) + 1e-12) * ((input2 * input2).sum(-1) + 1e-12)).sqrt()
    loss = lazyscope.where(target == 1, 1.0 - cos, lazyscope.zeros_like(cos)) + \
        lazyscope.where(target == -1, (cos - margin).clamp(min=0.0), lazyscope.zeros_like(cos))
    return _reduce_loss(loss, reduction, "cosine_embedding_loss")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction="mean"):
    """max(d(a, p) − d(a, n) + margin, 0), d the pairwise distance; swap: d(a, n) = min(d(a, n), d(p, n))."""
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = lazyscope.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce_loss((d_pos - d_neg + margin).clamp(min=0.0), reduction, "triplet_margin_loss")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,  # noqa: A002
                     reduce=None, reduction="mean"):
    """exp(x) − y·x (log_input) or x − y·log(x + eps); full adds Stirling's y·log y − y + ½·log(2πy) where y > 1."""
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = lazyscope.where(target > 1, target, lazyscope.ones_like(target))
        stirling = safe * safe.log() - safe + 0.5 * (safe * (2 * math.pi)).log()
        loss = loss + lazyscope.where(target > 1, stirling, lazyscope.zeros_like(stirling))
    return _reduce_loss(loss, reduction, "poisson_nll_loss")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):  # noqa: A002
    """½·(log(max(var, eps)) + (x − y)²/max(var, eps)) (+ ½·log 2π with full); var may lack the last dim or
    have it 1 (one variance per sample)."""
    shape_in, shape_var = list(_shape_of(input)), list(_shape_of(var))
    if shape_var != shape_in:
        if shape_var == shape_in[:-1]:
            var = var.unsqueeze(-1)
        elif not (shape_var[:-1] == shape_in[:-1] and shape_var[-1:] == [1]):
            raise ValueError(f"gaussian_nll_loss: var of shape {shape_var} does not match input {shape_in}"
                             f"{_C._at_user_line()}")
    v = var.clamp(min=eps)
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce_loss(loss, reduction, "gaussian_nll_loss")


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                reduction="mean"):
    """−mean over classes of y·log σ(x) + (1 − y)·log σ(−x) (weighted per class), per sample."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce_loss(loss.mean(-1), reduction, "multilabel_soft_margin_loss")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,  # noqa: A002
                      reduction="mean"):
    """Σ_{i ≠ y} max(0, margin − x[y] + x[i])^p / C per sample (weight[y] scales the sample's terms)."""
    if p not in (1, 2):
        raise ValueError(f"multi_margin_loss: only p == 1 and p == 2 are supported, got {p}")
    x = input if input.dim() == 2 else input.unsqueeze(0)
    y = target.reshape(-1, 1)
    classes = _shape_of(x)[1]
    picked = x.gather(1, y)
    terms = (margin - picked + x).clamp(min=0.0)
    if p == 2:
        terms = terms * terms
    if weight is not None:
        terms = terms * weight.index_select(0, y.reshape(-1)).reshape(-1, 1)
    own = one_hot(y.reshape(-1), classes).to(terms.dtype)
    loss = (terms * (1 - own)).sum(1) / classes
    return _reduce_loss(loss if input.dim() == 2 else loss.reshape(()), reduction, "multi_margin_loss")



# --- bilinear, unfold/fold, embedding_bag (session 9: PyTorch surface). -------

def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = x1 W[o] x2ᵀ + b[o]: weight [out, in1, in2], inputs [..., in1] and [..., in2]."""
    if weight.dim() != 3:
        raise lazyscope.ShapeError(f"bilinear: expected a 3-D weight [out, in1, in2], got shape {tuple(weight.shape)}"
                                   + lazyscope._C._at_user_line())
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2 or tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise lazyscope.ShapeError(f"bilinear: inputs {tuple(input1.shape)} and {tuple(input2.shape)} do not match "
                                   f"the weight [{out_f}, {in1}, {in2}] (the same leading dims, last dims {in1} "
                                   f"and {in2})" + lazyscope._C._at_user_line())
    lead = tuple(input1.shape[:-1])
    x1, x2 = input1.reshape(-1, in1), input2.reshape(-1, in2)
    # x1 @ W as one product: [B, in1] x [in1, out * in2], then each output's dot with x2.
    t = (x1 @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    y = (t * x2.unsqueeze(1)).sum(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, out_f)


def _fold_geometry(op, kernel_size, dilation, padding, stride):
    def pair(v, name):
        v = (v, v) if isinstance(v, int) else tuple(v)
        if len(v) != 2 or any(not isinstance(x, int) for x in v):
            raise ValueError(f"{op}: {name} must be an int or a pair of ints, got {v}")
        return v
    k, d, p, s = (pair(v, n) for v, n in ((kernel_size, "kernel_size"), (dilation, "dilation"),
                                          (padding, "padding"), (stride, "stride")))
    if min(k) < 1 or min(d) < 1 or min(s) < 1 or min(p) < 0:
        raise ValueError(f"{op}: kernel_size, dilation and stride must be positive and padding non-negative, got "
                         f"kernel_size={k}, dilation={d}, padding={p}, stride={s}")
    return k, d, p, s


def _selector(channels, k, like):
    """[channels * kh * kw, 1, kh, kw]: channel c * K + i picks kernel position i
    (a one-hot kernel per position, repeated for each channel): unfold is a
    grouped convolution with it, fold its transpose."""
    positions = k[0] * k[1]
    eye = np.eye(positions, dtype=np.float64).reshape(positions, 1, k[0], k[1])
    return lazyscope.tensor(np.tile(eye, (channels, 1, 1, 1)), dtype=like.dtype, device=like.device)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """Sliding blocks of a [N, C, H, W] (or [C, H, W]) input as columns:
    [N, C * kh * kw, L], L the blocks (im2col), as torch.nn.functional.unfold."""
    k, d, p, s = _fold_geometry("unfold", kernel_size, dilation, padding, stride)
    if input.dim() not in (3, 4):
        raise lazyscope.ShapeError(f"unfold: expected a 3-D or 4-D input, got shape {tuple(input.shape)}"
                                   + lazyscope._C._at_user_line())
    x = input if input.dim() == 4 else input.unsqueeze(0)
    n, c = x.shape[0], x.shape[1]
    cols = conv2d(x, _selector(c, k, x), None, s, p, d, groups=c)  # [N, C * K, oh, ow]
    cols = cols.reshape(n, c * k[0] * k[1], -1)
    return cols if input.dim() == 4 else cols.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """unfold's adjoint: columns [N, C * kh * kw, L] (or [C * kh * kw, L])
    summed back into a [N, C, H, W] output (overlaps add), as
    torch.nn.functional.fold."""
    k, d, p, s = _fold_geometry("fold", kernel_size, dilation, padding, stride)
    out_hw = (output_size, output_size) if isinstance(output_size, int) else tuple(output_size)
    if input.dim() not in (2, 3):
        raise lazyscope.ShapeError(f"fold: expected a 2-D or 3-D input, got shape {tuple(input.shape)}"
                                   + lazyscope._C._at_user_line())
    x = input if input.dim() == 3 else input.unsqueeze(0)
    n, ck, length = x.shape
    positions = k[0] * k[1]
    blocks = [(out_hw[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    if ck % positions or blocks[0] * blocks[1] != length or min(blocks) < 1:
        raise lazyscope.ShapeError(
            f"fold: input {tuple(input.shape)} does not make output_size {out_hw} with kernel_size {k}, "
            f"dilation {d}, padding {p}, stride {s}: expected [N, C * {positions}, {blocks[0] * blocks[1]}]"
            + lazyscope._C._at_user_line())
    c = ck // positions
    grid = x.reshape(n, ck, blocks[0], blocks[1])
    # The transposed convolution's output is the stride's span; output_padding covers the rest of output_size.
    extra = [out_hw[i] + 2 * p[i] - ((blocks[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1) for i in range(2)]
    out = conv_transpose2d(grid, _selector(c, k, x), None, s, p, tuple(extra), c, d)
    return out if input.dim() == 3 else out.squeeze(0)


_BAG_MODES = ("sum", "mean", "max")


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,  # noqa: A002
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes of bags of embeddings, as torch.nn.functional.embedding_bag:
    a 2-D input is one bag per row; a 1-D input with offsets (each bag's start)
    is split there. padding_idx entries are left out of the bags (and their
    counts); an empty bag gives zeros."""
    if mode not in _BAG_MODES:
        raise ValueError(f"embedding_bag: mode must be one of {_BAG_MODES}, got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise ValueError(f"embedding_bag: per_sample_weights is only supported with mode='sum', got mode={mode!r}")
    if max_norm is not None or scale_grad_by_freq:
        raise NotImplementedError("embedding_bag: max_norm and scale_grad_by_freq are not supported")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("embedding_bag: offsets must be None for a 2-D input (each row is a bag)")
        bags, length = input.shape
        flat = input.reshape(-1)
        bag_of = lazyscope.arange(bags, device=input.device).unsqueeze(1).expand(bags, length).reshape(-1)
    elif input.dim() == 1:
        if offsets is None or offsets.dim() != 1:
            raise ValueError("embedding_bag: a 1-D input needs 1-D offsets (each bag's first position)")
        flat = input
        starts = offsets[:-1] if include_last_offset else offsets
        bags = starts.shape[0]
        # Each position's bag: how many starts lie at or before it, less one.
        positions = lazyscope.arange(flat.shape[0], device=input.device)
        bag_of = (positions.unsqueeze(1) >= starts.unsqueeze(0)).long().sum(1) - 1
    else:
        raise lazyscope.ShapeError(f"embedding_bag: expected a 1-D or 2-D input, got shape {tuple(input.shape)}"
                                   + lazyscope._C._at_user_line())
    dim = weight.shape[1]
    rows = embedding(flat, weight)  # [P, D]
    keep = lazyscope.ones(flat.shape[0], dtype=weight.dtype, device=weight.device)
    if padding_idx is not None:
        keep = (flat != padding_idx % weight.shape[0]).to(weight.dtype)
    if per_sample_weights is not None:
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise lazyscope.ShapeError(f"embedding_bag: per_sample_weights {tuple(per_sample_weights.shape)} must "
                                       f"have the input's shape {tuple(input.shape)}" + lazyscope._C._at_user_line())
        rows = rows * per_sample_weights.reshape(-1, 1)
    if mode == "max":
        # Left-out positions (padding) can never be the max: -inf, then empty bags give 0.
        masked = lazyscope.where(keep.unsqueeze(1) > 0, rows, float("-inf"))
        pick = lazyscope.nn.functional.one_hot(bag_of, bags).to(weight.dtype)  # [P, bags]
        spread = lazyscope.where(pick.t().unsqueeze(2) > 0, masked.unsqueeze(0), float("-inf"))  # [bags, P, D]
        best = spread.amax(1)
        return lazyscope.where(best == float("-inf"), 0.0, best)
    zeros = lazyscope.zeros(bags, dim, dtype=weight.dtype, device=weight.device)
    total = zeros.index_add(0, bag_of, rows * keep.unsqueeze(1))
    if mode == "sum":
        return total
    counts = lazyscope.zeros(bags, dtype=weight.dtype, device=weight.device).index_add(0, bag_of, keep)
    return total / counts.clamp(min=1.0).unsqueeze(1)


# --- affine_grid, grid_sample (spatial transformers). ----------------------------

def _base_coords(size, align_corners, like):
    """The normalized [-1, 1] coordinates of `size` pixel centres (or corners with align_corners)."""
    if size == 1:
        values = np.zeros(1)
    elif align_corners:
        values = np.linspace(-1.0, 1.0, size)
    else:
        values = (np.arange(size) * 2 + 1) / size - 1.0
    return lazyscope.tensor(values, dtype=like.dtype, device=like.device)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid [N, H, W, 2] (x, y) of 2-D affine transforms theta [N, 2, 3], as torch's."""
    align_corners = bool(align_corners)
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (2, 3):
        raise lazyscope.ShapeError(f"affine_grid: expected theta [N, 2, 3] for a 2-D grid, got shape "
                                   f"{tuple(theta.shape)}" + lazyscope._C._at_user_line())
    size = tuple(size)
    if len(size) != 4 or size[0] != theta.shape[0]:
        raise ValueError(f"affine_grid: expected size (N, C, H, W) with N = {theta.shape[0]}, got {size}")
    n, _, h, w = size
    xs, ys = _base_coords(w, align_corners, theta), _base_coords(h, align_corners, theta)
    base = lazyscope.stack([xs.reshape(1, w).expand(h, w), ys.reshape(h, 1).expand(h, w),
                            lazyscope.ones(h, w, dtype=theta.dtype, device=theta.device)], -1)  # [H, W, 3]
    return (base.reshape(1, h * w, 3) @ theta.transpose(1, 2)).reshape(n, h, w, 2)


_GRID_MODES, _GRID_PADDINGS = ("bilinear", "nearest"), ("zeros", "border", "reflection")


def _unnormalize(coord, size, align_corners):
    return (coord + 1) / 2 * (size - 1) if align_corners else ((coord + 1) * size - 1) / 2


def _reflect(coord, low, high):
    """coord reflected into [low, high] (PyTorch's reflect_coordinates, any number of bounces)."""
    span = high - low
    if span <= 0:
        return coord * 0 + low
    c = (coord - low).abs()
    flips = (c / span).floor()
    extra = c - flips * span
    even = (flips.remainder(2) == 0)
    return lazyscope.where(even, extra + low, span - extra + low)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):  # noqa: A002
    """Samples input [N, C, H, W] at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]) -> [N, C, Ho, Wo],
    as torch.nn.functional.grid_sample for 2-D inputs: modes bilinear and nearest, padding
    zeros, border and reflection. Gradients reach the input and (bilinear) the grid."""
    align_corners = bool(align_corners)
    if mode not in _GRID_MODES:
        raise ValueError(f"grid_sample: mode must be one of {_GRID_MODES} (2-D), got {mode!r}")
    if padding_mode not in _GRID_PADDINGS:
        raise ValueError(f"grid_sample: padding_mode must be one of {_GRID_PADDINGS}, got {padding_mode!r}")
    if input.dim() != 4 or grid.dim() != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise lazyscope.ShapeError(f"grid_sample: expected input [N, C, H, W] and grid [N, Ho, Wo, 2], got "
                                   f"{tuple(input.shape)} and {tuple(grid.shape)}" + lazyscope._C._at_user_line())
    n, c, h, w = input.shape
    _, ho, wo, _ = grid.shape
    x = _unnormalize(grid[..., 0], w, align_corners)
    y = _unnormalize(grid[..., 1], h, align_corners)
    if padding_mode == "border":
        x, y = x.clamp(0, w - 1), y.clamp(0, h - 1)
    elif padding_mode == "reflection":
        if align_corners:
            x, y = _reflect(x, 0, w - 1), _reflect(y, 0, h - 1)
        else:
            x, y = _reflect(x, -0.5, w - 0.5), _reflect(y, -0.5, h - 0.5)
        x, y = x.clamp(0, w - 1), y.clamp(0, h - 1)
    flat = input.reshape(n, c, h * w)

    def tap(ix, iy):
        """input at integer (ix, iy) [N, Ho, Wo] -> [N, C, Ho, Wo], 0 outside."""
        inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
        at = (iy.clamp(0, h - 1) * w + ix.clamp(0, w - 1)).long().reshape(n, 1, ho * wo).expand(n, c, ho * wo)
        got = flat.gather(2, at).reshape(n, c, ho, wo)
        return got * inside.to(input.dtype).unsqueeze(1)

    if mode == "nearest":
        # Round half to even, as PyTorch's nearbyint.
        return tap(x.round(), y.round())
    x0, y0 = x.floor(), y.floor()
    wx, wy = (x - x0).unsqueeze(1), (y - y0).unsqueeze(1)
    return (tap(x0, y0) * (1 - wx) * (1 - wy) + tap(x0 + 1, y0) * wx * (1 - wy)
            + tap(x0, y0 + 1) * (1 - wx) * wy + tap(x0 + 1, y0 + 1) * wx * wy)


# --- ctc_loss ----------------------------------------------------------------------

# Log-probabilities of unreachable CTC states: a large finite number, not
# -inf, so the composition's gradients stay finite (logaddexp(-inf, -inf)'s
# is NaN); exp of it is 0 in float32 and float64 alike.
_CTC_NONE = -1e30


def _host_ints(values, what):
    if hasattr(values, "numpy"):
        values = values.cpu().numpy() if hasattr(values, "cpu") else values.numpy()
    return [int(v) for v in np.asarray(values).reshape(-1)]


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",  # noqa: A002
             zero_infinity=False):
    """Connectionist temporal classification loss, as torch.nn.functional.ctc_loss:
    log_probs [T, N, C] (or [T, C]), targets [N, S] padded or 1-D concatenated,
    the lengths as ints, lists or tensors (read on the host: a sync for a lazy
    tensor). The forward variables are a scan over T of vector ops (autograd
    gives the gradient); mean divides each loss by its target length, then
    averages. An impossible alignment's loss is inf (0 with zero_infinity)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"ctc_loss: {reduction} is not a valid value for reduction (mean, sum, none)")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.dim() != 3:
        raise lazyscope.ShapeError(f"ctc_loss: expected log_probs [T, N, C] or [T, C], got shape "
                                   f"{tuple(log_probs.shape)}" + lazyscope._C._at_user_line())
    t_max, n, classes = lp.shape
    in_len, tgt_len = _host_ints(input_lengths, "input_lengths"), _host_ints(target_lengths, "target_lengths")
    if len(in_len) != n or len(tgt_len) != n:
        raise ValueError(f"ctc_loss: expected {n} input and target lengths, got {len(in_len)} and {len(tgt_len)}")
    if not 0 <= blank < classes:
        raise ValueError(f"ctc_loss: blank {blank} is not a class of {classes}")
    flat = _host_ints(targets, "targets")
    tg = np.asarray(targets.cpu().numpy() if hasattr(targets, "cpu") else targets)
    if tg.ndim == 2 or (tg.ndim == 1 and not batched):
        rows = tg.reshape(n, -1)
        labels = [list(rows[i, :tgt_len[i]]) for i in range(n)]
    else:
        starts = np.cumsum([0] + tgt_len)
        labels = [flat[starts[i]:starts[i + 1]] for i in range(n)]
    for i in range(n):
        if len(labels[i]) != tgt_len[i] or not 0 <= in_len[i] <= t_max:
            raise ValueError(f"ctc_loss: sample {i}: target length {tgt_len[i]} or input length {in_len[i]} does not "
                             f"fit the targets given or T = {t_max}")
        if any(int(v) == blank or not 0 <= int(v) < classes for v in labels[i]):
            raise ValueError(f"ctc_loss: sample {i}: targets must be classes other than the blank ({blank})")
    s_max = max(tgt_len) if tgt_len else 0
    width = 2 * s_max + 1
    ext = np.full((n, width), blank, dtype=np.int64)  # blank, l1, blank, l2, ..., blank
    skip = np.zeros((n, width), dtype=bool)           # a state that may come from two before (l_s != l_{s-1})
    for i in range(n):
        ext[i, 1:2 * tgt_len[i]:2] = labels[i]
        for s in range(3, 2 * tgt_len[i], 2):
            skip[i, s] = ext[i, s] != ext[i, s - 2]
    dev, dt = lp.device, lp.dtype
    emit = lp.gather(2, lazyscope.tensor(ext, device=dev).unsqueeze(0).expand(t_max, n, width))  # [T, N, W]
    none = lazyscope.full((n, width), _CTC_NONE, dtype=dt, device=dev)
    start = np.full((n, width), _CTC_NONE)
    start[:, :2] = 0.0
    alpha = lazyscope.tensor(start, dtype=dt, device=dev) + emit[0]
    skip_t = lazyscope.tensor(skip, device=dev)
    # Each sample's loglikelihood is read at its last frame (t = T_n - 1).
    ends = np.zeros((n, width), dtype=bool)
    for i in range(n):
        ends[i, 2 * tgt_len[i]] = True
        if tgt_len[i] > 0:
            ends[i, 2 * tgt_len[i] - 1] = True
    ends_t = lazyscope.tensor(ends, device=dev)
    final = none
    for t in range(t_max):
        if t > 0:
            one = pad(alpha[:, :-1], [1, 0], value=_CTC_NONE)
            two = lazyscope.where(skip_t, pad(alpha[:, :-2], [2, 0], value=_CTC_NONE), none)
            alpha = lazyscope.logaddexp(lazyscope.logaddexp(alpha, one), two) + emit[t]
        last = lazyscope.tensor(np.array([in_len[i] - 1 == t for i in range(n)]).reshape(n, 1), device=dev)
        final = lazyscope.where(last & ends_t, alpha, final)
    ll = lazyscope.logsumexp(final, 1)
    impossible = ll < _CTC_NONE / 2
    loss = lazyscope.where(impossible, 0.0 if zero_infinity else float("inf"), -ll)
    if reduction == "mean":
        return (loss / lazyscope.tensor(np.maximum(tgt_len, 1), dtype=dt, device=dev)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss if batched else loss.squeeze(0)


# --- Normalization, sampling and pooling functions composed from engine ops -----------------

def rms_norm(input, normalized_shape, weight=None, eps=None):  # noqa: A002
    """x / sqrt(mean(x^2) + eps) over the trailing normalized_shape dims, times
    weight; eps defaults to the dtype's machine epsilon, as PyTorch's."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.dim() - len(shape):]) != shape:
        raise lazyscope.ShapeError(f"rms_norm: the input's trailing dims {list(input.shape)} do not end with "
                                   f"normalized_shape {list(shape)}" + lazyscope._C._at_user_line())
    if eps is None:
        eps = float(np.finfo(np.float64 if input.dtype == lazyscope.float64 else np.float32).eps)
    dims = list(range(input.dim() - len(shape), input.dim()))
    out = input * (input * input).mean(dims, keepdim=True).add(eps).rsqrt()
    return out * weight if weight is not None else out


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1) drawn from lazyscope's
    generator (uploaded: no sync); hard=True gives the one-hot of its argmax
    forward and the soft sample's gradient backward (straight-through)."""
    u = _C.from_numpy(lazyscope._rng.random(tuple(logits.shape)).clip(1e-20, 1.0), str(logits.device))
    gumbels = -(-(u.to(logits.dtype)).log()).log()
    y = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y
    index = y.argmax(dim, keepdim=True)
    y_hard = lazyscope.zeros_like(y).scatter(dim, index, 1.0)
    return y_hard - y.detach() + y


_SELU_ALPHA_PRIME = -1.7580993408473766  # -scale * alpha of SELU


def alpha_dropout(input, p=0.5, training=False, inplace=False):  # noqa: A002
    """Dropout that keeps SELU's mean and variance: dropped values go to
    SELU's negative saturation, then an affine map restores the moments."""
    _check_p(p, "alpha_dropout")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = _C.from_numpy((lazyscope._rng.random(tuple(input.shape)) >= p).astype(np.float32),
                         str(input.device)).to(input.dtype)
    a = ((1 - p) * (1 + p * _SELU_ALPHA_PRIME ** 2)) ** -0.5
    b = -a * _SELU_ALPHA_PRIME * p
    return (input * keep + _SELU_ALPHA_PRIME * (1 - keep)) * a + b


def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Whole channels of a [N, C, D, H, W] (or [C, D, H, W]) input zeroed with probability p."""
    _check_p(p, "dropout3d")
    if not training or p == 0.0:
        return input
    if input.dim() not in (4, 5):
        raise lazyscope.ShapeError(f"dropout3d: expected a 4-D or 5-D input, got shape {tuple(input.shape)}"
                                   + lazyscope._C._at_user_line())
    if p == 1.0:
        return input * 0.0
    return input * _host_mask(tuple(input.shape[:-3]) + (1, 1, 1), p, input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):  # noqa: A002
    """Leaky ReLU whose negative slope is drawn U(lower, upper) per element in
    training, (lower + upper) / 2 otherwise."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2)
    slope = _C.from_numpy(lazyscope._rng.uniform(lower, upper, tuple(input.shape)).astype(np.float32),
                          str(input.device)).to(input.dtype)
    return lazyscope.where(input >= 0, input, input * slope)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):  # noqa: A002
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels)^beta
    (the window padded by size // 2 before and (size - 1) // 2 after, as PyTorch)."""
    if input.dim() < 3:
        raise lazyscope.ShapeError(f"local_response_norm: expected an input of 3 or more dims [N, C, ...], got "
                                   f"shape {tuple(input.shape)}" + lazyscope._C._at_user_line())
    sq = input * input
    channels = input.shape[1]
    before, after = size // 2, (size - 1) // 2
    pieces = []
    if before:
        pieces.append(lazyscope.zeros(input.shape[0], before, *input.shape[2:], dtype=input.dtype, device=input.device))
    pieces.append(sq)
    if after:
        pieces.append(lazyscope.zeros(input.shape[0], after, *input.shape[2:], dtype=input.dtype, device=input.device))
    padded = lazyscope.cat(pieces, 1) if len(pieces) > 1 else sq
    window = padded.narrow(1, 0, channels)
    for j in range(1, size):
        window = window + padded.narrow(1, j, channels)
    return input / (window * (alpha / size) + k).pow(beta)


def _lp_from_average(average, window, norm_type):
    """The window's p-norm from the average of x^p over it, as PyTorch's lp pools."""
    return (average.sign() * average.abs().relu()).mul(window).pow(1.0 / norm_type)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    """(sum of x^p over each window)^(1/p), as PyTorch: from avg_pool2d of x^p."""
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
    return _lp_from_average(avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode), kh * kw, norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):  # noqa: A002
    return _lp_from_average(avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode), kernel_size,
                            norm_type)


def pdist(input, p=2):  # noqa: A002
    """The p-norm distances between the rows of an [N, M] input, pairs i < j in row-major order."""
    if input.dim() != 2:
        raise lazyscope.ShapeError(f"pdist: expected a 2-D input [N, M], got shape {tuple(input.shape)}"
                                   + lazyscope._C._at_user_line())
    n = input.shape[0]
    rows, cols = np.triu_indices(n, 1)
    if len(rows) == 0:
        return lazyscope.zeros(0, dtype=input.dtype, device=input.device)
    index = lambda a: _C.from_numpy(a.astype(np.int64), str(input.device))  # noqa: E731
    diff = input.index_select(0, index(rows)) - input.index_select(0, index(cols))
    return lazyscope.linalg.vector_norm(diff, p, dim=1)


def channel_shuffle(input, groups):  # noqa: A002
    """[N, C, ...] with its channels regrouped: C = groups x k, read as [groups, k], emitted as [k, groups]."""
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise ValueError(f"channel_shuffle: {c} channels are not divisible by groups={groups}")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)
