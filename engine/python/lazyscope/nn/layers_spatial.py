"""Padding, resampling, 1-D and adaptive max pooling, and instance
normalization layers: torch.nn's names, arguments and defaults over the
compositions of nn.functional."""
from lazyscope import _C
from lazyscope.nn import functional as F
from lazyscope.nn.layers import _norm_state, _ntuple
from lazyscope.nn.module import Module


class _Pad(Module):
    """Pads the last `_dims` dims: `padding` an int (every side) or (left, right[, top, bottom[, front, back]])."""
    _dims, _mode = 2, "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = _ntuple(padding, "padding", 2 * self._dims, type(self).__name__)
        self.value = value

    def forward(self, input):  # noqa: A002
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}" + (f", value={self.value}" if self._mode == "constant" else "")


def _pad(name, dims, mode, zero=False):
    if zero:
        def __init__(self, padding):
            _Pad.__init__(self, padding, 0.0)
    elif mode == "constant":
        def __init__(self, padding, value):
            _Pad.__init__(self, padding, value)
    else:
        def __init__(self, padding):
            _Pad.__init__(self, padding)
    cls = type(name, (_Pad,), {"_dims": dims, "_mode": mode, "__init__": __init__,
                               "__doc__": f"{mode} padding of the last {dims} dim(s)"})
    cls.__module__ = __name__
    return cls


ZeroPad1d = _pad("ZeroPad1d", 1, "constant", zero=True)
ZeroPad2d = _pad("ZeroPad2d", 2, "constant", zero=True)
ConstantPad1d = _pad("ConstantPad1d", 1, "constant")
ConstantPad2d = _pad("ConstantPad2d", 2, "constant")
ConstantPad3d = _pad("ConstantPad3d", 3, "constant")
ReflectionPad1d = _pad("ReflectionPad1d", 1, "reflect")
ReflectionPad2d = _pad("ReflectionPad2d", 2, "reflect")
ReplicationPad1d = _pad("ReplicationPad1d", 1, "replicate")
ReplicationPad2d = _pad("ReplicationPad2d", 2, "replicate")
ReplicationPad3d = _pad("ReplicationPad3d", 3, "replicate")


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):  # noqa: A002
        return F.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             self.recompute_scale_factor)

    def extra_repr(self):
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear with align_corners=True (as PyTorch's)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class PixelShuffle(Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):  # noqa: A002
        return F.pixel_shuffle(input, self.upscale_factor)


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):  # noqa: A002
        return F.pixel_unshuffle(input, self.downscale_factor)


class MaxPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        if return_indices:
            raise NotImplementedError("MaxPool1d: return_indices=True is not supported")
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, input):  # noqa: A002
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class AvgPool1d(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):  # noqa: A002
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class AdaptiveAvgPool1d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveMaxPool1d(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        if return_indices:
            raise NotImplementedError("AdaptiveMaxPool1d: return_indices=True is not supported")
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        return F.adaptive_max_pool1d(input, self.output_size)


class AdaptiveMaxPool2d(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        if return_indices:
            raise NotImplementedError("AdaptiveMaxPool2d: return_indices=True is not supported")
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        return F.adaptive_max_pool2d(input, self.output_size)


class Dropout1d(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout1d: dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, input):  # noqa: A002
        return F.dropout1d(input, self.p, self.training)


class Unflatten(Module):
    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input):  # noqa: A002
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class _InstanceNorm(Module):
    """InstanceNorm1d/2d: PyTorch's arguments and defaults (no affine, no running statistics)."""
    _spatial = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__()
        _norm_state(self, num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, input):  # noqa: A002
        name, batched = type(self).__name__, self._spatial + 2
        if input.dim() not in (batched - 1, batched):
            raise _C.ShapeError(f"{name}: expected a {batched - 1}-D (unbatched) or {batched}-D input, got shape "
                                f"{tuple(input.shape)}{_C._at_user_line()}")
        x = input.unsqueeze(0) if input.dim() == batched - 1 else input
        if x.shape[1] != self.num_features and self.affine:
            raise _C.ShapeError(f"{name}: expected {self.num_features} channels (num_features), got input of shape "
                                f"{tuple(input.shape)}{_C._at_user_line()}")
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                              self.momentum, self.eps)
        return out.squeeze(0) if input.dim() == batched - 1 else out

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    _spatial = 2


class Unfold(Module):
    """Sliding blocks as columns (F.unfold): [N, C, H, W] -> [N, C * kh * kw, L]."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """Columns summed back into an image (F.fold): [N, C * kh * kw, L] -> [N, C, H, W]."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
