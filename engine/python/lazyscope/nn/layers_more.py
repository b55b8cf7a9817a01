"""More of torch.nn's layers, each a thin module over a function of
nn.functional: RMSNorm, LazyLinear, AlphaDropout, Dropout3d, Softmax2d,
RReLU, LocalResponseNorm, LPPool1d/2d, ChannelShuffle, CircularPad1d/2d."""
import math

import lazyscope
from lazyscope.nn import functional as F
from lazyscope.nn import init
from lazyscope.nn.layers import _empty
from lazyscope.nn.layers_spatial import _pad
from lazyscope.nn.module import Module
from lazyscope.nn.parameter import Parameter

__all__ = ["RMSNorm", "LazyLinear", "AlphaDropout", "Dropout3d", "Softmax2d", "RReLU", "LocalResponseNorm",
           "LPPool1d", "LPPool2d", "ChannelShuffle", "CircularPad1d", "CircularPad2d"]


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing normalized_shape dims."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_empty(*self.normalized_shape, device=device, dtype=dtype))
            init.ones_(self.weight)
        else:
            self.register_parameter("weight", None)

    def forward(self, input):  # noqa: A002
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LazyLinear(Module):
    """A Linear whose in_features come from its first input. Its parameters
    exist after that first call: build the optimizer after a first forward
    (PyTorch advises the same dry run for lazy modules)."""

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.out_features, self.in_features = out_features, 0
        self._bias, self._device, self._dtype = bias, device, dtype
        self.register_parameter("weight", None)
        self.register_parameter("bias", None)

    def has_uninitialized_params(self):
        return self.weight is None

    def forward(self, input):  # noqa: A002
        if self.weight is None:
            self.in_features = input.shape[-1]
            dtype = self._dtype or input.dtype
            self.weight = Parameter(_empty(self.out_features, self.in_features, device=input.device, dtype=dtype))
            init.kaiming_uniform_(self.weight, a=math.sqrt(5))
            if self._bias:
                self.bias = Parameter(_empty(self.out_features, device=input.device, dtype=dtype))
                bound = 1 / math.sqrt(self.in_features) if self.in_features else 0.0
                init.uniform_(self.bias, -bound, bound)
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self._bias}"


class AlphaDropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        self.p = p

    def forward(self, input):  # noqa: A002
        return F.alpha_dropout(input, self.p, self.training)


class Dropout3d(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        self.p = p

    def forward(self, input):  # noqa: A002
        return F.dropout3d(input, self.p, self.training)


class Softmax2d(Module):
    """softmax over the channels of [N, C, H, W] (or [C, H, W])."""

    def forward(self, input):  # noqa: A002
        if input.dim() not in (3, 4):
            raise lazyscope.ShapeError(f"Softmax2d: expected a 3-D or 4-D input, got shape {tuple(input.shape)}")
        return F.softmax(input, -3)


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper = lower, upper

    def forward(self, input):  # noqa: A002
        return F.rrelu(input, self.lower, self.upper, self.training)


class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):  # noqa: A002
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)


class LPPool2d(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):  # noqa: A002
        return F.lp_pool2d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(LPPool2d):
    def forward(self, input):  # noqa: A002
        return F.lp_pool1d(input, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):  # noqa: A002
        return F.channel_shuffle(input, self.groups)


CircularPad1d = _pad("CircularPad1d", 1, "circular")
CircularPad2d = _pad("CircularPad2d", 2, "circular")
