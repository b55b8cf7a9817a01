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
    if input.shape[-1] != weight.shape[-1]:
        raise lazyscope.ShapeError(
            f"linear: input has {input.shape[-1]} features in its last dimension (shape {tuple(input.shape)}) "
            f"but the weight expects {weight.shape[-1]} (weight shape {tuple(weight.shape)})")
    out = input @ weight.t()
    return out if bias is None else out + bias


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,  # noqa: A002
              scale_grad_by_freq=False, sparse=False):
    return _C.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)


one_hot = _C.one_hot


# Convolutions and pooling (engine ops).
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):  # noqa: A002
    return _engine_op("conv2d")(input, weight, bias, stride, padding, dilation, groups)


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


# Normalization.
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    if tuple(input.shape[len(input.shape) - len(normalized_shape):]) != normalized_shape:
        raise lazyscope.ShapeError(
            f"layer_norm: input of shape {tuple(input.shape)} does not end with normalized_shape "
            f"{list(normalized_shape)}")
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
        raise lazyscope.ShapeError(f"batch_norm: expected at least 2 dims (N, C, …), got shape {tuple(input.shape)}")
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
        raise lazyscope.ShapeError(f"dropout2d: expected a 3-D or 4-D input, got shape {tuple(input.shape)}")
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


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None):
    """softmax(Q Kᵀ · scale + mask) V over the last two dims; a boolean mask keeps True positions."""
    d = query.shape[-1]
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
