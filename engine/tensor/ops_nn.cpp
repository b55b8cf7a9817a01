// Convolution, pooling, normalization and dropout entry points (see ops.h).
// conv2d and the pools are IR ops with IR backward ops (gradients.cpp);
// layer_norm and batch_norm are compositions of existing ops, which gives
// their gradients for free; dropout multiplies by a dropout_mask op.
#include <array>
#include <mutex>
#include <string>

#include "core/error.h"
#include "core/settings.h"
#include "core/source_location.h"
#include "tensor/ops.h"
#include "tensor/upcalls.h"

namespace lazyscope::ops {
namespace {

std::string at_line() {
  const SourceLocation loc = current_source_location();
  return loc.known() ? " (at " + loc.str() + ")" : "";
}

template <size_t N> std::vector<int64_t> vec(const std::array<int64_t, N>& s) { return {s.begin(), s.end()}; }

void check_defined(const char* op, const Tensor& t, const char* what) {
  if (!t.defined()) throw EngineError(std::string(op) + ": " + what + " is undefined");
}

// Runs `f` on an [N, C, ...] view of a batched or unbatched [C, ...] input
// with R spatial dims and gives the result back in the input's rank.
template <size_t R, typename F> Tensor batched(const char* op, const Tensor& input, F&& f) {
  check_defined(op, input, "the input");
  const size_t rank = input.shape().size();
  if (rank != R + 1 && rank != R + 2) {
    throw ShapeError(std::string(op) +
                     (R == 2 ? ": expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got "
                             : ": expected a 4-D [C, D, H, W] or 5-D [N, C, D, H, W] input, got ") +
                     shape_str(input.shape()) + at_line());
  }
  if (rank == R + 2) return f(input);
  return squeeze(f(unsqueeze(input, 0)), 0);
}

// bias [O] as [1, O, 1, ...] against an output with R spatial dims.
template <size_t R> Tensor channel_bias(const Tensor& bias) {
  Shape shape(R + 2, 1);
  shape[1] = -1;
  return reshape(bias, shape);
}

Tensor num(double v, const Tensor& like) { return scalar(v, like.dtype(), like.device()); }

void check_floating(const char* op, const Tensor& t) {
  if (!is_floating(t.dtype())) {
    throw EngineError(std::string(op) + ": expected a floating point input, got " + std::string(dtype_name(t.dtype())) +
                      at_line());
  }
}

// A per-channel [C] tensor (weight, bias, running stats) of `expected` shape.
void check_param(const char* op, const char* name, const Tensor& t, const Shape& expected) {
  if (t.defined() && t.shape() != expected) {
    throw ShapeError(std::string(op) + ": " + name + " of shape " + shape_str(t.shape()) + " does not match " +
                     shape_str(expected) + at_line());
  }
}

// The in-place update of a running statistic: `target` takes `value`'s
// buffer or IR node. Every Tensor sharing target's impl (the Python module's
// buffer) sees the new value; on a lazy device the value is pending until
// the next sync, which is why target is registered as pending.
void assign(const Tensor& target, const Tensor& value) {
  TensorImpl& t = *target.impl();
  if (t.requires_grad || t.grad_fn) {
    throw EngineError("batch_norm: a running statistic that requires grad cannot be updated in place; detach it");
  }
  const Tensor v = cast(value, target.dtype());
  t.spec = v.impl()->spec;
  t.buffer = v.impl()->buffer;
  t.ir = v.impl()->ir;
  if (t.pending()) executor::register_pending(target.impl());
}

// PyTorch's default seed, so an unseeded run is reproducible too.
constexpr uint64_t kDefaultSeed = 67280421310721ull;

struct RngState {
  std::mutex mu;
  uint64_t seed = kDefaultSeed;
  uint64_t offset = 0;  // draws since the seed was set
};

RngState& rng() {
  static RngState state;
  return state;
}

// (seed, offset) as an int64 [2] tensor on `device`: a device-data leaf
// whose hash is its shape and dtype, so the value changes without a recompile.
Tensor next_rng_state(const Device& device) {
  RngState& r = rng();
  BufferPtr b = Buffer::allocate(DType::kInt64, {2});
  {
    std::lock_guard lock(r.mu);
    b->as<int64_t>()[0] = static_cast<int64_t>(r.seed);
    b->as<int64_t>()[1] = static_cast<int64_t>(r.offset++);
  }
  return Tensor::wrap(std::move(b), device);
}

Tensor dropout_with_mask_shape(const char* op, const Tensor& input, double p, bool training, Shape mask_shape) {
  if (!(p >= 0.0 && p <= 1.0)) {
    throw EngineError(std::string(op) + ": dropout probability has to be between 0 and 1, but got " +
                      std::to_string(p) + at_line());
  }
  check_floating(op, input);
  if (!training || p == 0.0) return input;
  const Tensor mask = apply(
      OpKind::kDropoutMask, {next_rng_state(input.device())},
      {{"shape", std::move(mask_shape)}, {"dtype", static_cast<int64_t>(input.dtype())}, {"p", p}});
  return mul(input, mask);
}

}  // namespace

namespace {

// The convolutions and pools of R spatial dims (2: conv2d, max_pool2d, ...;
// 3: conv3d, ...): one body each, the op kind and name passed in.
template <size_t R>
Tensor conv_nd(const char* op, OpKind kind, const Tensor& input, const Tensor& weight, const Tensor& bias,
               std::array<int64_t, R> stride, std::array<int64_t, R> padding, std::array<int64_t, R> dilation,
               int64_t groups) {
  check_defined(op, weight, "the weight");
  return batched<R>(op, input, [&](const Tensor& x) {
    Tensor out = apply(
        kind, {x, weight},
        {{"stride", vec(stride)}, {"padding", vec(padding)}, {"dilation", vec(dilation)}, {"groups", groups}});
    if (!bias.defined()) return out;
    check_param(op, "bias", bias, {weight.shape()[0]});
    return add(out, channel_bias<R>(bias));
  });
}

// The transposed convolution is the conv's backward-input op: the input here
// is the "grad" of a conv whose input (the result) has the size computed
// below; the op's own shape check then says whether the sizes agree.
template <size_t R>
Tensor conv_transpose_nd(const char* op, OpKind kind, const Tensor& input, const Tensor& weight, const Tensor& bias,
                         std::array<int64_t, R> stride, std::array<int64_t, R> padding,
                         std::array<int64_t, R> output_padding, int64_t groups, std::array<int64_t, R> dilation) {
  check_defined(op, weight, "the weight");
  return batched<R>(op, input, [&](const Tensor& x) {
    check_floating(op, x);
    const Shape& w = weight.shape();
    if (w.size() != R + 2) {
      throw ShapeError(std::string(op) + ": expected a " + std::to_string(R + 2) +
                       "-D weight [in_channels, out_channels/groups, " + (R == 2 ? "kH, kW" : "kD, kH, kW") +
                       "], got " + shape_str(w) + at_line());
    }
    if (groups < 1 || w[0] % groups != 0) {
      throw ShapeError(std::string(op) + ": groups=" + std::to_string(groups) + " must be positive and divide the " +
                       std::to_string(w[0]) + " input channels of weight " + shape_str(w) + at_line());
    }
    if (x.shape()[1] != w[0]) {
      throw ShapeError(std::string(op) + ": input " + shape_str(x.shape()) + " has " + std::to_string(x.shape()[1]) +
                       " channels, but weight " + shape_str(w) + " expects " + std::to_string(w[0]) + at_line());
    }
    Shape size(R);
    for (size_t d = 0; d < R; ++d) {
      if (stride[d] < 1 || dilation[d] < 1 || padding[d] < 0 || output_padding[d] < 0) {
        throw ShapeError(std::string(op) + ": stride " + shape_str(vec(stride)) + " and dilation " +
                         shape_str(vec(dilation)) + " must be positive, padding " + shape_str(vec(padding)) +
                         " and output_padding " + shape_str(vec(output_padding)) + " not negative" + at_line());
      }
      if (output_padding[d] >= std::max(stride[d], dilation[d])) {
        throw ShapeError(std::string(op) + ": output_padding " + shape_str(vec(output_padding)) +
                         " must be smaller than either stride " + shape_str(vec(stride)) + " or dilation " +
                         shape_str(vec(dilation)) + at_line());
      }
      size[d] = (x.shape()[d + 2] - 1) * stride[d] - 2 * padding[d] + dilation[d] * (w[d + 2] - 1) + output_padding[d] +
                1;
      if (size[d] < 1) {
        throw ShapeError(std::string(op) + ": input " + shape_str(x.shape()) + " with kernel " +
                         shape_str(Shape(w.begin() + 2, w.end())) + ", stride " + shape_str(vec(stride)) +
                         " and padding " + shape_str(vec(padding)) + " gives an empty output " + shape_str(size) +
                         at_line());
      }
    }
    Tensor out = apply(kind, {x, weight},
                       {{"stride", vec(stride)},
                        {"padding", vec(padding)},
                        {"dilation", vec(dilation)},
                        {"groups", groups},
                        {"input_size", size}});
    if (!bias.defined()) return out;
    check_param(op, "bias", bias, {w[1] * groups});
    return add(out, channel_bias<R>(bias));
  });
}

template <size_t R>
Tensor max_pool_nd(const char* op, OpKind kind, const Tensor& input, std::array<int64_t, R> kernel_size,
                   std::optional<std::array<int64_t, R>> stride, std::array<int64_t, R> padding,
                   std::array<int64_t, R> dilation, bool ceil_mode) {
  return batched<R>(op, input, [&](const Tensor& x) {
    return apply(kind, {x},
                 {{"kernel_size", vec(kernel_size)},
                  {"stride", vec(stride.value_or(kernel_size))},
                  {"padding", vec(padding)},
                  {"dilation", vec(dilation)},
                  {"ceil_mode", ceil_mode}});
  });
}

template <size_t R>
Tensor avg_pool_nd(const char* op, OpKind kind, const Tensor& input, std::array<int64_t, R> kernel_size,
                   std::optional<std::array<int64_t, R>> stride, std::array<int64_t, R> padding, bool ceil_mode,
                   bool count_include_pad, std::optional<int64_t> divisor_override) {
  if (divisor_override && *divisor_override == 0) {
    throw EngineError(std::string(op) + ": divisor_override must be non-zero" + at_line());
  }
  return batched<R>(op, input, [&](const Tensor& x) {
    return apply(kind, {x},
                 {{"kernel_size", vec(kernel_size)},
                  {"stride", vec(stride.value_or(kernel_size))},
                  {"padding", vec(padding)},
                  {"ceil_mode", ceil_mode},
                  {"count_include_pad", count_include_pad},
                  {"divisor", divisor_override.value_or(0)}});
  });
}

template <size_t R>
Tensor adaptive_avg_pool_nd(const char* op, OpKind kind, const Tensor& input, std::array<int64_t, R> output_size) {
  return batched<R>(op, input, [&](const Tensor& x) { return apply(kind, {x}, {{"output_size", vec(output_size)}}); });
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride, Size2 padding,
              Size2 dilation, int64_t groups) {
  return conv_nd<2>("conv2d", OpKind::kConv2d, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size3 stride, Size3 padding,
              Size3 dilation, int64_t groups) {
  return conv_nd<3>("conv3d", OpKind::kConv3d, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size2 stride, Size2 padding,
                        Size2 output_padding, int64_t groups, Size2 dilation) {
  return conv_transpose_nd<2>("conv_transpose2d", OpKind::kConv2dBackwardInput, input, weight, bias, stride, padding,
                              output_padding, groups, dilation);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias, Size3 stride, Size3 padding,
                        Size3 output_padding, int64_t groups, Size3 dilation) {
  return conv_transpose_nd<3>("conv_transpose3d", OpKind::kConv3dBackwardInput, input, weight, bias, stride, padding,
                              output_padding, groups, dilation);
}

Tensor max_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride, Size2 padding, Size2 dilation,
                  bool ceil_mode) {
  return max_pool_nd<2>("max_pool2d", OpKind::kMaxPool2d, input, kernel_size, stride, padding, dilation, ceil_mode);
}
Tensor max_pool3d(const Tensor& input, Size3 kernel_size, std::optional<Size3> stride, Size3 padding, Size3 dilation,
                  bool ceil_mode) {
  return max_pool_nd<3>("max_pool3d", OpKind::kMaxPool3d, input, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor avg_pool2d(const Tensor& input, Size2 kernel_size, std::optional<Size2> stride, Size2 padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return avg_pool_nd<2>("avg_pool2d", OpKind::kAvgPool2d, input, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override);
}
Tensor avg_pool3d(const Tensor& input, Size3 kernel_size, std::optional<Size3> stride, Size3 padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return avg_pool_nd<3>("avg_pool3d", OpKind::kAvgPool3d, input, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override);
}

Tensor adaptive_avg_pool2d(const Tensor& input, Size2 output_size) {
  return adaptive_avg_pool_nd<2>("adaptive_avg_pool2d", OpKind::kAdaptiveAvgPool2d, input, output_size);
}
Tensor adaptive_avg_pool3d(const Tensor& input, Size3 output_size) {
  return adaptive_avg_pool_nd<3>("adaptive_avg_pool3d", OpKind::kAdaptiveAvgPool3d, input, output_size);
}

Tensor layer_norm(const Tensor& input, const std::vector<int64_t>& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  check_defined("layer_norm", input, "the input");
  check_floating("layer_norm", input);
  const Shape& s = input.shape();
  const size_t k = normalized_shape.size();
  bool ok = k >= 1 && k <= s.size();
  for (size_t i = 0; ok && i < k; ++i) ok = s[s.size() - k + i] == normalized_shape[i];
  if (!ok) {
    throw ShapeError("layer_norm: normalized_shape " + shape_str(normalized_shape) +
                     " does not match the last dims of the input " + shape_str(s) + at_line());
  }
  check_param("layer_norm", "weight", weight, normalized_shape);
  check_param("layer_norm", "bias", bias, normalized_shape);
  if ((input.dtype() == DType::kFloat32 || input.dtype() == DType::kFloat64) && settings::layer_norm_kernel()) {
    std::vector<Tensor> operands{input};
    if (weight.defined()) operands.push_back(weight);
    if (bias.defined()) operands.push_back(bias);
    return apply(
        OpKind::kLayerNorm, operands,
        {{"dims", static_cast<int64_t>(k)}, {"eps", eps}, {"weight", weight.defined()}, {"bias", bias.defined()}});
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < k; ++i) dims.push_back(static_cast<int64_t>(i) - static_cast<int64_t>(k));
  const Tensor mu = mean(input, dims, /*keepdim=*/true);
  const Tensor v = var(input, dims, /*correction=*/0.0, /*keepdim=*/true);
  Tensor out = mul(sub(input, mu), rsqrt(add(v, num(eps, v))));
  if (weight.defined()) out = mul(out, weight);
  if (bias.defined()) out = add(out, bias);
  return out;
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  check_defined("batch_norm", input, "the input");
  check_floating("batch_norm", input);
  const Shape& s = input.shape();
  if (s.size() < 2) {
    throw ShapeError("batch_norm: expected an input [N, C, ...] of at least 2 dims, got " + shape_str(s) + at_line());
  }
  const Shape channels{s[1]};
  check_param("batch_norm", "running_mean", running_mean, channels);
  check_param("batch_norm", "running_var", running_var, channels);
  check_param("batch_norm", "weight", weight, channels);
  check_param("batch_norm", "bias", bias, channels);
  if (running_mean.defined() != running_var.defined()) {
    throw EngineError("batch_norm: give both running_mean and running_var, or neither" + at_line());
  }
  std::vector<int64_t> dims{0};
  Shape stat_shape{1, s[1]};  // [1, C, 1, ...]: broadcasts against the input
  int64_t count = s[0];
  for (size_t d = 2; d < s.size(); ++d) {
    dims.push_back(static_cast<int64_t>(d));
    stat_shape.push_back(1);
    count *= s[d];
  }
  const bool batch_stats = training || !running_mean.defined();
  if (training && count <= 1) {
    throw EngineError("batch_norm: expected more than 1 value per channel when training, got input of shape " +
                      shape_str(s) + at_line());
  }
  Tensor mu, v;
  if (batch_stats) {
    mu = mean(input, dims);
    v = var(input, dims, /*correction=*/0.0);
  } else {
    mu = cast(running_mean, input.dtype());
    v = cast(running_var, input.dtype());
  }
  Tensor out = mul(sub(input, reshape(mu, stat_shape)), reshape(rsqrt(add(v, num(eps, v))), stat_shape));
  if (weight.defined()) out = mul(out, reshape(weight, stat_shape));
  if (bias.defined()) out = add(out, reshape(bias, stat_shape));
  if (training && running_mean.defined()) {
    autograd::NoGradGuard no_grad;
    const auto blend = [&](const Tensor& running, const Tensor& batch) {
      return add(mul(running, num(1.0 - momentum, running)),
                 mul(cast(batch.detach(), running.dtype()), num(momentum, running)));
    };
    const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
    const Tensor new_mean = blend(running_mean, mu);
    const Tensor new_var = blend(running_var, mul(v.detach(), num(unbias, v)));
    assign(running_mean, new_mean);
    assign(running_var, new_var);
  }
  return out;
}

Tensor dropout(const Tensor& input, double p, bool training) {
  check_defined("dropout", input, "the input");
  return dropout_with_mask_shape("dropout", input, p, training, input.shape());
}

Tensor dropout2d(const Tensor& input, double p, bool training) {
  check_defined("dropout2d", input, "the input");
  const Shape& s = input.shape();
  if (s.size() != 3 && s.size() != 4) {
    throw ShapeError("dropout2d: expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got " + shape_str(s) + at_line());
  }
  Shape mask(s.size(), 1);  // one draw per channel, broadcast over H and W
  for (size_t d = 0; d + 2 < s.size(); ++d) mask[d] = s[d];
  return dropout_with_mask_shape("dropout2d", input, p, training, mask);
}

std::array<uint64_t, 2> rng_state() {
  RngState& r = rng();
  std::lock_guard lock(r.mu);
  return {r.seed, r.offset};
}

void set_rng_state(uint64_t seed, uint64_t offset) {
  RngState& r = rng();
  std::lock_guard lock(r.mu);
  r.seed = seed;
  r.offset = offset;
}

void manual_seed(uint64_t seed) {
  RngState& r = rng();
  std::lock_guard lock(r.mu);
  r.seed = seed;
  r.offset = 0;
}

}  // namespace lazyscope::ops
