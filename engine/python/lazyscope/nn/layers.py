"""The layers: torch.nn's names, arguments, parameter names and default init."""
import math

import numpy as np

import lazyscope
from lazyscope import _C
from lazyscope.nn import functional as F
from lazyscope.nn import init
from lazyscope.nn.module import Module
from lazyscope.nn.parameter import Parameter


def _empty(*shape, device=None, dtype=None):
    dtype = dtype or lazyscope.get_default_dtype()
    dt = {lazyscope.float32: np.float32, lazyscope.float64: np.float64}.get(dtype)
    if dt is None:
        raise TypeError(f"parameters must be float32 or float64, got {dtype}")
    return _C.from_numpy(np.zeros(shape, dtype=dt), "cpu" if device is None else str(device))


def _ntuple(v, name, n, owner=None):
    """An int (repeated) or a tuple of n ints."""
    if isinstance(v, int):
        return (v,) * n
    v = tuple(v)
    if len(v) != n:
        what = "a pair" if n == 2 else f"a {n}-tuple"
        raise ValueError(f"{owner + ': ' if owner else ''}{name} must be an int or {what}, got {v}")
    return v


def _pair(v, name):
    return _ntuple(v, name, 2)


def _conv_parameters(module, weight_shape, out_channels, bias, device, dtype):
    """A convolution's weight and optional bias [out_channels], with PyTorch's default init."""
    module.weight = Parameter(_empty(*weight_shape, device=device, dtype=dtype))
    if bias:
        module.bias = Parameter(_empty(out_channels, device=device, dtype=dtype))
    else:
        module.register_parameter("bias", None)
    init._default_reset(module.weight, module.bias)


class Identity(Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):  # noqa: A002
        return input


class Linear(Module):
    """y = x Wᵀ + b; weight [out_features, in_features]."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(_empty(out_features, in_features, device=device, dtype=dtype))
        self.bias = Parameter(_empty(out_features, device=device, dtype=dtype)) if bias else None
        if not bias:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        init._default_reset(self.weight, self.bias)

    def forward(self, input):  # noqa: A002
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """y = x1ᵀ W x2 + b per output; weight [out, in1, in2], PyTorch's init
    (U(-1/√in1, 1/√in1) on weight and bias)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(_empty(out_features, in1_features, in2_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _check_padding_mode(layer, padding_mode):
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"{layer}: padding_mode must be one of {list(_PADDING_MODES)}, got {padding_mode!r}")


def _explicit_padding(padding, kernel_size, dilation):
    """Per spatial dim, (before, after) for a padding of ints, 'valid' or 'same'
    (the total dilation * (k - 1), split as PyTorch splits it: the extra one after)."""
    if padding == "valid":
        return [(0, 0)] * len(kernel_size)
    if padding == "same":
        out = []
        for k, d in zip(kernel_size, dilation):
            total = d * (k - 1)
            out.append((total // 2, total - total // 2))
        return out
    return [(p, p) for p in padding]


def _pad_for_mode(input, padding, kernel_size, dilation, padding_mode):  # noqa: A002
    """input padded by F.pad in padding_mode (reflect, replicate, circular), as
    PyTorch's conv layers do before a convolution without padding."""
    pairs = _explicit_padding(padding, kernel_size, dilation)
    flat = []
    for before, after in reversed(pairs):  # F.pad: last dim first
        flat += [before, after]
    return F.pad(input, flat, mode=padding_mode)


class _ConvNd(Module):
    """Conv2d/Conv3d: PyTorch's parameters (weight [out, in/groups, *kernel]), default init and arguments."""
    _dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        _check_padding_mode(name, padding_mode)
        self.padding_mode = padding_mode
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        tup = lambda v, what: _ntuple(v, what, self._dims)  # noqa: E731
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = tup(kernel_size, "kernel_size")
        self.stride = tup(stride, "stride")
        self.padding = padding if isinstance(padding, str) else tup(padding, "padding")
        self.dilation = tup(dilation, "dilation")
        self.groups = groups
        _conv_parameters(self, (out_channels, in_channels // groups, *self.kernel_size), out_channels, bias, device,
                         dtype)

    def reset_parameters(self):
        init._default_reset(self.weight, self.bias)

    def _operands(self, input):  # noqa: A002
        """(input, weight, bias, stride, padding, dilation, groups) for F.convNd: a padding_mode other
        than zeros pads the input first (F.pad), as PyTorch's layers do, and the conv pads nothing."""
        if self.padding_mode != "zeros":
            input = _pad_for_mode(input, self.padding, self.kernel_size, self.dilation, self.padding_mode)
            return input, self.weight, self.bias, self.stride, 0, self.dilation, self.groups
        return input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}")
        if self.padding != 0 and (isinstance(self.padding, str) or any(self.padding)):
            s += f", padding={self.padding}"
        if any(d != 1 for d in self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv2d(_ConvNd):
    def forward(self, input):  # noqa: A002
        return F.conv2d(*self._operands(input))


class Conv3d(_ConvNd):
    """The convolution over [N, C, D, H, W] (or [C, D, H, W]): video and volumes."""
    _dims = 3

    def forward(self, input):  # noqa: A002
        return F.conv3d(*self._operands(input))


class MaxPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, input):  # noqa: A002
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def forward(self, input):  # noqa: A002
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride or self.kernel_size}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class MaxPool3d(MaxPool2d):
    def forward(self, input):  # noqa: A002
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class AvgPool3d(AvgPool2d):
    def forward(self, input):  # noqa: A002
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    def forward(self, input):  # noqa: A002
        return F.adaptive_avg_pool3d(input, self.output_size)


def _norm_state(module, num_features, eps, momentum, affine, track_running_stats, device, dtype):
    """A batch or instance norm's settings, its affine weight (ones) and bias (zeros) when `affine`, and its
    running statistics (mean 0, variance 1, batches tracked) when `track_running_stats`."""
    module.num_features, module.eps, module.momentum = num_features, eps, momentum
    module.affine, module.track_running_stats = affine, track_running_stats
    if affine:
        module.weight = Parameter(_empty(num_features, device=device, dtype=dtype))
        module.bias = Parameter(_empty(num_features, device=device, dtype=dtype))
        init.ones_(module.weight)
        init.zeros_(module.bias)
    else:
        module.register_parameter("weight", None)
        module.register_parameter("bias", None)
    if track_running_stats:
        module.register_buffer("running_mean", _empty(num_features, device=device, dtype=dtype))
        module.register_buffer("running_var", _empty(num_features, device=device, dtype=dtype) + 1.0)
        module.register_buffer("num_batches_tracked", lazyscope.tensor(0, dtype=lazyscope.int64, device=device))
    else:
        module.running_mean = module.running_var = module.num_batches_tracked = None


class _BatchNorm(Module):
    _dims = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        super().__init__()
        _norm_state(self, num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def _check(self, input):
        if input.dim() not in self._dims:
            raise lazyscope.ShapeError(f"{type(self).__name__}: expected a {' or '.join(f'{d}-D' for d in self._dims)} "
                                       f"input, got shape {tuple(input.shape)}" + lazyscope._C._at_user_line())
        if input.shape[1] != self.num_features:
            raise lazyscope.ShapeError(f"{type(self).__name__}: expected {self.num_features} channels in dim 1, "
                                       f"got shape {tuple(input.shape)}" + lazyscope._C._at_user_line())

    def forward(self, input):  # noqa: A002
        self._check(input)
        use_batch = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            # Running statistics are updated in place, as PyTorch (the buffers
            # keep their identity; the unbiased batch variance); they stay on
            # the device, no sync.
            dims = [0] + list(range(2, input.dim()))
            with lazyscope.no_grad():
                x = input.detach()
                n = x.numel() // self.num_features
                mean = x.mean(dims)
                var = x.var(dims, unbiased=False) * (n / max(n - 1, 1))
                m = self.momentum if self.momentum is not None else 0.1
                self.running_mean.mul_(1 - m).add_(mean, alpha=m)
                self.running_var.mul_(1 - m).add_(var, alpha=m)
                self.num_batches_tracked.add_(1)
        if use_batch:
            return _batch_stats_norm(input, self.weight, self.bias, self.eps)
        return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, False,
                            0.0, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


def _batch_stats_norm(input, weight, bias, eps):
    # Normalization with the batch's statistics; running stats are handled by
    # the module, so the op gets none (it must not update anything).
    op = getattr(lazyscope, "batch_norm", None)
    if op is not None:
        return op(input, None, None, weight, bias, True, 0.0, eps)
    return F.batch_norm(input, None, None, weight, bias, True, 0.0, eps)


class BatchNorm1d(_BatchNorm):
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _dims = (4,)


class LayerNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_empty(*self.normalized_shape, device=device, dtype=dtype))
            init.ones_(self.weight)
            if bias:
                self.bias = Parameter(_empty(*self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):  # noqa: A002
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


def _embedding_table(module, owner, num_embeddings, embedding_dim, padding_idx, _weight, device, dtype):
    """An embedding table's set-up, shared by Embedding and EmbeddingBag: the
    padding row's index (checked, made non-negative) and the weight [num,
    dim], given or drawn N(0, 1) with the padding row zeroed, as PyTorch."""
    module.num_embeddings, module.embedding_dim = num_embeddings, embedding_dim
    if padding_idx is not None:
        if not -num_embeddings <= padding_idx < num_embeddings:
            raise ValueError(f"{owner}: padding_idx {padding_idx} must be within num_embeddings "
                             f"({num_embeddings})")
        padding_idx %= num_embeddings
    module.padding_idx = padding_idx
    if _weight is not None:
        module.weight = Parameter(_weight)
    else:
        module.weight = Parameter(_empty(num_embeddings, embedding_dim, device=device, dtype=dtype))
        module.reset_parameters()


def _reset_embedding_table(module, owner):
    values = lazyscope._rng.standard_normal((module.num_embeddings, module.embedding_dim))
    if module.padding_idx is not None:
        values[module.padding_idx] = 0.0  # PyTorch zeroes the padding row
    init._fill(module.weight, values, owner)


class Embedding(Module):
    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, device=None, dtype=None):
        super().__init__()
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        _embedding_table(self, "Embedding", num_embeddings, embedding_dim, padding_idx, _weight, device, dtype)

    def reset_parameters(self):
        _reset_embedding_table(self, "Embedding")

    def forward(self, input):  # noqa: A002
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")


class EmbeddingBag(Module):
    """Sums, means or maxes of bags of embeddings (F.embedding_bag); weight
    [num_embeddings, embedding_dim] drawn N(0, 1), as PyTorch."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        if mode not in F._BAG_MODES:
            raise ValueError(f"EmbeddingBag: mode must be one of {F._BAG_MODES}, got {mode!r}")
        self.mode, self.include_last_offset = mode, include_last_offset
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        _embedding_table(self, "EmbeddingBag", num_embeddings, embedding_dim, padding_idx, _weight, device, dtype)

    def reset_parameters(self):
        _reset_embedding_table(self, "EmbeddingBag")

    def forward(self, input, offsets=None, per_sample_weights=None):  # noqa: A002
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):  # noqa: A002
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout2d(Dropout):
    def forward(self, input):  # noqa: A002
        return F.dropout2d(input, self.p, self.training)


def _activation(name, fn, doc):
    class Activation(Module):
        def __init__(self, inplace=False):
            super().__init__()
            self.inplace = inplace

        def forward(self, input):  # noqa: A002
            return fn(input)
    Activation.__name__ = Activation.__qualname__ = name
    Activation.__doc__ = doc
    return Activation


ReLU = _activation("ReLU", F.relu, "max(0, x)")
SiLU = _activation("SiLU", F.silu, "x · sigmoid(x)")
Tanh = _activation("Tanh", F.tanh, "tanh(x)")
Sigmoid = _activation("Sigmoid", F.sigmoid, "1 / (1 + exp(-x))")


Hardswish = _activation("Hardswish", F.hardswish, "x · relu6(x + 3) / 6")
Hardsigmoid = _activation("Hardsigmoid", F.hardsigmoid, "relu6(x + 3) / 6")
SELU = _activation("SELU", F.selu, "scale · elu(x, alpha), PyTorch's scale and alpha")
Softsign = _activation("Softsign", F.softsign, "x / (1 + |x|)")
Tanhshrink = _activation("Tanhshrink", F.tanhshrink, "x − tanh(x)")


class CELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha

    def forward(self, input):  # noqa: A002
        return F.celu(input, self.alpha)


class PReLU(Module):
    """max(0, x) + a · min(0, x), with `num_parameters` learned slopes a (1, or one per channel) set to `init`."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(_empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, input):  # noqa: A002
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Softmin(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.softmin(input, self.dim)


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value = threshold, value

    def forward(self, input):  # noqa: A002
        return F.threshold(input, self.threshold, self.value)


class Softshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):  # noqa: A002
        return F.softshrink(input, self.lambd)


class Hardshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):  # noqa: A002
        return F.hardshrink(input, self.lambd)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):  # noqa: A002
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, input):  # noqa: A002
        return F.leaky_relu(input, self.negative_slope)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    def forward(self, input):  # noqa: A002
        return F.log_softmax(input, self.dim)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):  # noqa: A002
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class MultiheadAttention(Module):
    """Multi-head attention composed from matmul and softmax, with PyTorch's
    parameters (in_proj_weight [3E, E], in_proj_bias, out_proj) and call:
    (query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) -> (output, weights or None).
    Masks: boolean (True = not allowed to attend) or float (added to the scores)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise NotImplementedError("MultiheadAttention: add_bias_kv, add_zero_attn and kdim/vdim != embed_dim "
                                      "are not supported")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.head_dim = embed_dim // num_heads
        self.batch_first = batch_first
        self.in_proj_weight = Parameter(_empty(3 * embed_dim, embed_dim, device=device, dtype=dtype))
        if bias:
            self.in_proj_bias = Parameter(_empty(3 * embed_dim, device=device, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        init.xavier_uniform_(self.in_proj_weight)
        if bias:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        self_attention = query is key and key is value
        if query.dim() != 3:
            raise lazyscope.ShapeError(f"MultiheadAttention: expected a 3-D query, got shape {tuple(query.shape)}"
                                       + lazyscope._C._at_user_line())
        if not self.batch_first:  # (L, N, E) -> (N, L, E)
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        n, lq, e = query.shape
        lk = key.shape[1]
        if e != self.embed_dim:
            raise lazyscope.ShapeError(f"MultiheadAttention: query has embedding size {e}, expected {self.embed_dim}"
                                       + lazyscope._C._at_user_line())
        w_q, w_k, w_v = self.in_proj_weight.chunk(3, 0)
        b_q, b_k, b_v = self.in_proj_bias.chunk(3, 0) if self.in_proj_bias is not None else (None, None, None)
        h, d = self.num_heads, self.head_dim

        def heads(x, w, b, length):  # (N, L, E) -> (N, H, L, D)
            return F.linear(x, w, b).reshape(n, length, h, d).transpose(1, 2)
        dropout = self.dropout if self.training else 0.0
        masks = (attn_mask, key_padding_mask)
        if not need_weights and F._fusable(query, key, value, masks, dropout):
            # One attention kernel per pass over [N, L, H, D] (the projections' layout: no permute).
            def split(x, w, b, length):
                return F.linear(x, w, b).reshape(n, length, h, d)
            mask = _keep_mask(attn_mask, key_padding_mask, n, h, lq, lk, query.dtype)
            causal = bool(is_causal and attn_mask is None)
            if self_attention:
                # One in-projection [N, L, 3E] read as q, k, v heads in place: its gradient comes back
                # whole, so the weight's gradient is one product (no cat of three) and x's another.
                qkv = F.linear(query, self.in_proj_weight, self.in_proj_bias).reshape(n, lq, 3, h, d)
                out = _C.attention(qkv, None, None, mask, 1.0 / math.sqrt(d), causal)
            else:
                out = _C.attention(split(query, w_q, b_q, lq), split(key, w_k, b_k, lk),
                                   split(value, w_v, b_v, lk), mask, 1.0 / math.sqrt(d), causal)
            out = self.out_proj(out.reshape(n, lq, e))
            return (out if self.batch_first else out.transpose(0, 1)), None
        q, k, v = heads(query, w_q, b_q, lq), heads(key, w_k, b_k, lk), heads(value, w_v, b_v, lk)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))  # (N, H, Lq, Lk)
        if is_causal and attn_mask is None:
            attn_mask = _C.from_numpy(~np.tril(np.ones((lq, lk), dtype=bool)), str(query.device))
        if attn_mask is not None:
            if attn_mask.dim() == 3:  # (N*H, Lq, Lk)
                attn_mask = attn_mask.reshape(n, h, lq, lk)
            scores = F._apply_mask(scores, attn_mask, keep_true=False)
        if key_padding_mask is not None:
            scores = F._apply_mask(scores, key_padding_mask.reshape(n, 1, 1, lk), keep_true=False)
        weights = scores.softmax(-1)
        if self.dropout > 0.0:
            weights = F.dropout(weights, self.dropout, self.training)
        out = (weights @ v).transpose(1, 2).reshape(n, lq, e)
        out = self.out_proj(out)
        if not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        return out, (weights.mean(1) if average_attn_weights else weights)


def _keep_mask(attn_mask, key_padding_mask, n, h, lq, lk, dtype):
    """MultiheadAttention's masks (bool: True = not allowed; float: added) as one mask of the attention
    op's convention (bool: True = attend; float of `dtype`: added), broadcastable to [N, H, Lq, Lk];
    None for none."""
    masks = []
    if attn_mask is not None:
        masks.append(attn_mask.reshape(n, h, lq, lk) if attn_mask.dim() == 3 else attn_mask)
    if key_padding_mask is not None:
        masks.append(key_padding_mask.reshape(n, 1, 1, lk))
    if not masks:
        return None
    if all(m.dtype == lazyscope.bool for m in masks):
        keep = masks[0].logical_not()
        for m in masks[1:]:
            keep = lazyscope.logical_and(keep, m.logical_not())
        return keep
    total = None
    for m in masks:
        term = lazyscope.where(m, float("-inf"), 0.0) if m.dtype == lazyscope.bool else m
        total = term if total is None else total + term
    return total.to(dtype)


class Softplus(Module):
    """log(1 + exp(beta·x)) / beta, linear above threshold."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class _ConvTransposeNd(Module):
    """ConvTranspose1d/2d/3d: PyTorch's parameters (weight [in, out/groups, *kernel]), init and output_size."""
    _dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        if padding_mode != "zeros":
            raise NotImplementedError(f"{name}: padding_mode={padding_mode!r} is not supported, only 'zeros' "
                                      "(as PyTorch)")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        tup = lambda v, what: _ntuple(v, what, self._dims, name)  # noqa: E731
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = tup(kernel_size, "kernel_size"), tup(stride, "stride")
        self.padding, self.dilation = tup(padding, "padding"), tup(dilation, "dilation")
        self.output_padding = tup(output_padding, "output_padding")
        _conv_parameters(self, (in_channels, out_channels // groups, *self.kernel_size), out_channels, bias, device,
                         dtype)

    def reset_parameters(self):
        init._default_reset(self.weight, self.bias)

    def _output_padding(self, input, output_size):  # noqa: A002
        """PyTorch's: the output_padding that gives `output_size` (its last dims), which must lie within
        the sizes a strided convolution maps back to the input's."""
        if output_size is None:
            return self.output_padding
        name = type(self).__name__
        output_size = tuple(int(v) for v in output_size)[-self._dims:]
        if len(output_size) != self._dims:
            raise ValueError(f"{name}: output_size must have {self._dims} or more elements, got {output_size}")
        pads = []
        for d in range(self._dims):
            size = int(input.shape[input.dim() - self._dims + d])
            smallest = ((size - 1) * self.stride[d] - 2 * self.padding[d]
                        + self.dilation[d] * (self.kernel_size[d] - 1) + 1)
            if not smallest <= output_size[d] < smallest + self.stride[d]:
                raise ValueError(f"{name}: requested an output size of {output_size}, but valid sizes range from "
                                 f"{smallest} to {smallest + self.stride[d] - 1} in dim {d} (for an input of "
                                 f"{tuple(input.shape)})")
            pads.append(output_size[d] - smallest)
        return tuple(pads)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if any(self.padding):
            s += f", padding={self.padding}"
        if any(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if any(d != 1 for d in self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + (", bias=False" if self.bias is None else "")


class ConvTranspose2d(_ConvTransposeNd):
    """The transposed convolution over [N, C, H, W] (or [C, H, W])."""

    def forward(self, input, output_size=None):  # noqa: A002
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose3d(_ConvTransposeNd):
    """The transposed convolution over [N, C, D, H, W] (or [C, D, H, W])."""
    _dims = 3

    def forward(self, input, output_size=None):  # noqa: A002
        return F.conv_transpose3d(input, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """The transposed convolution over [N, C, L] (or [C, L]): ConvTranspose2d over a height of 1."""
    _dims = 1

    def forward(self, input, output_size=None):  # noqa: A002
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride[0], self.padding[0],
                                  self._output_padding(input, output_size)[0], self.groups, self.dilation[0])


class Conv1d(Module):
    """1-D convolution over [N, C, L] (conv2d over a height of 1); PyTorch's parameters and init."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        _check_padding_mode("Conv1d", padding_mode)
        self.padding_mode = padding_mode
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv1d: in_channels ({in_channels}) and out_channels ({out_channels}) must be "
                             f"divisible by groups ({groups})")
        single = lambda v: v if isinstance(v, (int, str)) else tuple(v)[0]  # noqa: E731
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = (single(kernel_size),), (single(stride),)
        self.padding = single(padding) if isinstance(padding, str) else (single(padding),)
        self.dilation = (single(dilation),)
        _conv_parameters(self, (out_channels, in_channels // groups, self.kernel_size[0]), out_channels, bias, device,
                         dtype)

    def forward(self, input):  # noqa: A002
        if self.padding_mode != "zeros":
            padded = _pad_for_mode(input, self.padding, self.kernel_size, self.dilation, self.padding_mode)
            return F.conv1d(padded, self.weight, self.bias, self.stride[0], 0, self.dilation[0], self.groups)
        padding = self.padding if isinstance(self.padding, str) else self.padding[0]
        return F.conv1d(input, self.weight, self.bias, self.stride[0], padding, self.dilation[0], self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
                + (", bias=False" if self.bias is None else ""))


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(_empty(num_channels, device=device, dtype=dtype))
            self.bias = Parameter(_empty(num_channels, device=device, dtype=dtype))
            init.ones_(self.weight)
            init.zeros_(self.bias)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):  # noqa: A002
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class L1Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):  # noqa: A002
        return F.l1_loss(input, target, reduction=self.reduction)


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha

    def forward(self, input):  # noqa: A002
        return F.elu(input, self.alpha)


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
        self.min_val, self.max_val = min_val, max_val

    def forward(self, input):  # noqa: A002
        return F.hardtanh(input, self.min_val, self.max_val)


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0)


class LogSigmoid(Module):
    def forward(self, input):  # noqa: A002
        return F.logsigmoid(input)


class Mish(Module):
    def __init__(self, inplace=False):
        super().__init__()

    def forward(self, input):  # noqa: A002
        return F.mish(input)


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):  # noqa: A002
        return F.glu(input, self.dim)


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
