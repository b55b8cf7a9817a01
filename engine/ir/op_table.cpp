#include "ir/op_table.h"

#include <algorithm>
#include <array>
#include <string>

#include "core/error.h"

namespace lazyscope {
namespace {

using Specs = SpecList;

TensorSpec infer_leaf(const char*, Specs, const Attrs&) {
  throw EngineError("device data has no inputs to infer from");
}

TensorSpec infer_cast(const char* op, Specs in, const Attrs& attrs) {
  const int64_t dt = attrs.get_int("dtype");
  if (dt < 0 || dt >= kNumDTypes) throw EngineError(std::string(op) + ": invalid dtype code " + std::to_string(dt));
  return {in[0].shape, static_cast<DType>(dt)};
}

// Operands arrive promoted (see Promote), so elementwise ops keep their dtype.
TensorSpec infer_same(const char*, Specs in, const Attrs&) { return in[0]; }

Shape broadcast_all(const char* op, Specs in) {
  // Operands of one shape (most elementwise ops of a step): nothing to
  // broadcast, and no intermediate shapes to build.
  bool same = true;
  for (size_t i = 1; i < in.size() && same; ++i) same = in[i].shape == in[0].shape;
  if (same) return in[0].shape;
  Shape shape = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) shape = broadcast_shapes(shape, in[i].shape, op);
  return shape;
}

TensorSpec infer_binary(const char* op, Specs in, const Attrs&) {
  return {broadcast_all(op, in), promote_types(in[0].dtype, in[1].dtype)};
}
TensorSpec infer_predicate(const char* op, Specs in, const Attrs&) { return {broadcast_all(op, in), DType::kBool}; }
TensorSpec infer_where(const char* op, Specs in, const Attrs&) { return {broadcast_all(op, in), in[1].dtype}; }

TensorSpec infer_matmul(const char* op, Specs in, const Attrs&) {
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  if (a.size() < 2 || b.size() < 2) {
    throw ShapeError(std::string(op) + ": expected operands of at least 2 dimensions, got " + shape_str(a) + " and " +
                     shape_str(b));
  }
  const int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2], n = b.back();
  if (k != k2) {
    throw ShapeError(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) + " cannot be multiplied (" +
                     std::to_string(k) + " != " + std::to_string(k2) + ")");
  }
  Shape batch = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), op);
  batch.push_back(m);
  batch.push_back(n);
  return {batch, promote_types(in[0].dtype, in[1].dtype)};
}

// Convolution, pooling, normalization, dropout. Spatial attrs are [h, w]
// pairs; operands are 4-D NCHW (ops.h adds the batch dim of 3-D inputs).
// The conv and pool rules are templates on R, the spatial rank: R = 2 for
// the 2-D ops, R = 3 for the 3-D ones (NCDHW, [d, h, w] triples), so both
// share one set of checks and messages.

template <size_t R> const char* layout_name() { return R == 2 ? "[N, C, H, W]" : "[N, C, D, H, W]"; }
template <size_t R> const char* kernel_dims() { return R == 2 ? "kH, kW" : "kD, kH, kW"; }
template <size_t R> const char* count_name() { return R == 2 ? "two" : "three"; }

// The spatial dims of an [N, C, ...] shape (or any shape's last R values).
template <size_t R> Shape spatial(const Shape& s) { return Shape(s.end() - R, s.end()); }

template <size_t R> void check_nchw(const char* op, const char* what, const TensorSpec& t) {
  if (t.shape.size() != R + 2) {
    throw ShapeError(std::string(op) + ": expected a " + std::to_string(R + 2) + "-D " + what + " " + layout_name<R>() +
                     ", got " + shape_str(t.shape));
  }
  if (!is_floating(t.dtype)) {
    throw EngineError(std::string(op) + ": expected a floating point " + what + ", got " +
                      std::string(dtype_name(t.dtype)));
  }
}

// attrs[name] as R values ([h, w] or [d, h, w]), each at least `min`.
template <size_t R>
std::array<int64_t, R> spatial_attr(const char* op, const Attrs& attrs, const char* name, int64_t min) {
  const auto& v = attrs.get_ints(name);
  bool ok = v.size() == R;
  for (size_t i = 0; ok && i < R; ++i) ok = v[i] >= min;
  if (!ok) {
    throw ShapeError(std::string(op) + ": " + name + " must be " + count_name<R>() +
                     " values >= " + std::to_string(min) + ", got " + shape_str(v));
  }
  std::array<int64_t, R> out{};
  std::copy(v.begin(), v.end(), out.begin());
  return out;
}

template <size_t R> Shape as_shape(const std::array<int64_t, R>& a) { return Shape(a.begin(), a.end()); }

// The output size of one spatial dim, as PyTorch's pooling_output_shape: the
// last window must start inside the input or its left padding (ceil_mode).
int64_t window_count(int64_t size, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation, bool ceil_mode) {
  const int64_t span = size + 2 * pad - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? span + stride - 1 : span) / stride + 1;
  if (ceil_mode && (out - 1) * stride >= size + pad) --out;
  return out;
}

template <size_t R>
Shape conv_shape(const char* op, const TensorSpec& input, const TensorSpec& weight, const Attrs& attrs) {
  check_nchw<R>(op, "input", input);
  if (weight.shape.size() != R + 2) {
    throw ShapeError(std::string(op) + ": expected a " + std::to_string(R + 2) +
                     "-D weight [out_channels, in_channels/groups, " + kernel_dims<R>() + "], got " +
                     shape_str(weight.shape));
  }
  const auto stride = spatial_attr<R>(op, attrs, "stride", 1);
  const auto padding = spatial_attr<R>(op, attrs, "padding", 0);
  const auto dilation = spatial_attr<R>(op, attrs, "dilation", 1);
  const int64_t groups = attrs.get_int("groups");
  const Shape& x = input.shape;
  const Shape& w = weight.shape;
  if (groups < 1 || w[0] % groups != 0) {
    throw ShapeError(std::string(op) + ": groups=" + std::to_string(groups) + " must be positive and divide the " +
                     std::to_string(w[0]) + " output channels of weight " + shape_str(w));
  }
  if (x[1] != w[1] * groups) {
    throw ShapeError(std::string(op) + ": input " + shape_str(x) + " has " + std::to_string(x[1]) +
                     " channels, but weight " + shape_str(w) + " with groups=" + std::to_string(groups) + " expects " +
                     std::to_string(w[1] * groups));
  }
  Shape out(R + 2, 0);
  out[0] = x[0];
  out[1] = w[0];
  for (size_t d = 0; d < R; ++d) {
    out[d + 2] = window_count(x[d + 2], w[d + 2], stride[d], padding[d], dilation[d], false);
    if (out[d + 2] < 1 || w[d + 2] < 1) {
      Shape padded = spatial<R>(x);
      for (size_t i = 0; i < R; ++i) padded[i] += 2 * padding[i];
      throw ShapeError(std::string(op) + ": kernel " + shape_str(spatial<R>(w)) + " (dilation " +
                       shape_str(as_shape<R>(dilation)) + ") is larger than the padded input " + shape_str(padded) +
                       " of input " + shape_str(x));
    }
  }
  return out;
}

template <size_t R> TensorSpec infer_conv(const char* op, Specs in, const Attrs& attrs) {
  return {conv_shape<R>(op, in[0], in[1], attrs), in[0].dtype};
}

// (grad, weight) -> the input's gradient, of the input shape the conv saw.
template <size_t R> TensorSpec infer_conv_backward_input(const char* op, Specs in, const Attrs& attrs) {
  const auto size = spatial_attr<R>(op, attrs, "input_size", 1);
  const Shape& g = in[0].shape;
  const Shape& w = in[1].shape;
  if (g.size() != R + 2 || w.size() != R + 2) {
    throw ShapeError(std::string(op) + ": expected " + std::to_string(R + 2) + "-D grad and weight, got " +
                     shape_str(g) + " and " + shape_str(w));
  }
  Shape x{g[0], w[1] * attrs.get_int("groups")};
  x.insert(x.end(), size.begin(), size.end());
  const TensorSpec input{x, in[0].dtype};
  if (conv_shape<R>(op, input, in[1], attrs) != g) {
    throw ShapeError(std::string(op) + ": grad " + shape_str(g) + " does not match conv" + std::to_string(R) + "d of " +
                     shape_str(input.shape) + " with weight " + shape_str(w));
  }
  return input;
}

// (input, grad) -> the weight's gradient.
template <size_t R> TensorSpec infer_conv_backward_weight(const char* op, Specs in, const Attrs& attrs) {
  const auto kernel = spatial_attr<R>(op, attrs, "kernel_size", 1);
  check_nchw<R>(op, "input", in[0]);
  const Shape& g = in[1].shape;
  if (g.size() != R + 2) {
    throw ShapeError(std::string(op) + ": expected a " + std::to_string(R + 2) + "-D grad, got " + shape_str(g));
  }
  Shape w{g[1], in[0].shape[1] / std::max<int64_t>(1, attrs.get_int("groups"))};
  w.insert(w.end(), kernel.begin(), kernel.end());
  const TensorSpec weight{w, in[0].dtype};
  if (conv_shape<R>(op, in[0], weight, attrs) != g) {
    throw ShapeError(std::string(op) + ": grad " + shape_str(g) + " does not match conv" + std::to_string(R) + "d of " +
                     shape_str(in[0].shape) + " with weight " + shape_str(weight.shape));
  }
  return weight;
}

// Pooling output shape; `dilated` pools (max) take a dilation attr.
template <size_t R> Shape pool_shape(const char* op, const TensorSpec& input, const Attrs& attrs, bool dilated) {
  check_nchw<R>(op, "input", input);
  const auto kernel = spatial_attr<R>(op, attrs, "kernel_size", 1);
  const auto stride = spatial_attr<R>(op, attrs, "stride", 1);
  const auto padding = spatial_attr<R>(op, attrs, "padding", 0);
  std::array<int64_t, R> dilation{};
  dilation.fill(1);
  if (dilated) dilation = spatial_attr<R>(op, attrs, "dilation", 1);
  const Shape& x = input.shape;
  Shape out(R + 2, 0);
  out[0] = x[0];
  out[1] = x[1];
  for (size_t d = 0; d < R; ++d) {
    // A window entirely in the padding would have no element to pool.
    if (padding[d] > (dilation[d] * (kernel[d] - 1) + 1) / 2) {
      throw ShapeError(std::string(op) + ": padding " + shape_str(as_shape<R>(padding)) +
                       " should be at most half of the kernel size " + shape_str(as_shape<R>(kernel)));
    }
    out[d + 2] = window_count(x[d + 2], kernel[d], stride[d], padding[d], dilation[d], attrs.get_bool("ceil_mode"));
    if (out[d + 2] < 1) {
      throw ShapeError(std::string(op) + ": kernel " + shape_str(as_shape<R>(kernel)) +
                       " is larger than the padded input of shape " + shape_str(x) + ": the output would be empty");
    }
  }
  return out;
}

template <size_t R> TensorSpec infer_max_pool(const char* op, Specs in, const Attrs& attrs) {
  return {pool_shape<R>(op, in[0], attrs, true), in[0].dtype};
}
template <size_t R> TensorSpec infer_avg_pool(const char* op, Specs in, const Attrs& attrs) {
  return {pool_shape<R>(op, in[0], attrs, false), in[0].dtype};
}

void check_grad_shape(const char* op, const TensorSpec& grad, const Shape& expected) {
  if (grad.shape != expected) {
    throw ShapeError(std::string(op) + ": grad of shape " + shape_str(grad.shape) + " for an output of shape " +
                     shape_str(expected));
  }
}

// (grad, input) -> input's spec.
template <size_t R> TensorSpec infer_max_pool_backward(const char* op, Specs in, const Attrs& attrs) {
  check_grad_shape(op, in[0], pool_shape<R>(op, in[1], attrs, true));
  return in[1];
}

// The input of a backward op that gets only the grad: N and C from it, the
// spatial dims from input_size.
template <size_t R> TensorSpec input_of(const char* op, const TensorSpec& grad, const Attrs& attrs) {
  const auto size = spatial_attr<R>(op, attrs, "input_size", 1);
  if (grad.shape.size() != R + 2) {
    throw ShapeError(std::string(op) + ": expected a " + std::to_string(R + 2) + "-D grad, got " +
                     shape_str(grad.shape));
  }
  Shape x{grad.shape[0], grad.shape[1]};
  x.insert(x.end(), size.begin(), size.end());
  return {x, grad.dtype};
}

template <size_t R> TensorSpec infer_avg_pool_backward(const char* op, Specs in, const Attrs& attrs) {
  const TensorSpec input = input_of<R>(op, in[0], attrs);
  check_grad_shape(op, in[0], pool_shape<R>(op, input, attrs, false));
  return input;
}

template <size_t R> Shape adaptive_pool_shape(const char* op, const TensorSpec& input, const Attrs& attrs) {
  check_nchw<R>(op, "input", input);
  const auto size = spatial_attr<R>(op, attrs, "output_size", 1);
  const Shape& x = input.shape;
  for (size_t d = 0; d < R; ++d) {
    if (x[d + 2] < 1) {
      throw ShapeError(std::string(op) + ": expected non-empty spatial dims, got input " + shape_str(x));
    }
  }
  Shape out{x[0], x[1]};
  out.insert(out.end(), size.begin(), size.end());
  return out;
}

template <size_t R> TensorSpec infer_adaptive_avg_pool(const char* op, Specs in, const Attrs& attrs) {
  return {adaptive_pool_shape<R>(op, in[0], attrs), in[0].dtype};
}

template <size_t R> TensorSpec infer_adaptive_avg_pool_backward(const char* op, Specs in, const Attrs& attrs) {
  const TensorSpec input = input_of<R>(op, in[0], attrs);
  check_grad_shape(op, in[0], adaptive_pool_shape<R>(op, input, Attrs{{"output_size", spatial<R>(in[0].shape)}}));
  return input;
}

TensorSpec infer_dropout_mask(const char* op, Specs in, const Attrs& attrs) {
  if (in[0].dtype != DType::kInt64 || in[0].shape != Shape{2}) {
    throw EngineError(std::string(op) + ": expected an int64 [2] rng state (seed, offset), got " +
                      std::string(dtype_name(in[0].dtype)) + " of shape " + shape_str(in[0].shape));
  }
  const double p = attrs.get_double("p");
  if (!(p >= 0.0 && p <= 1.0)) throw EngineError(std::string(op) + ": p must be in [0, 1], got " + std::to_string(p));
  const int64_t dt = attrs.get_int("dtype");
  if (dt < 0 || dt >= kNumDTypes || !is_floating(static_cast<DType>(dt))) {
    throw EngineError(std::string(op) + ": expected a floating dtype code, got " + std::to_string(dt));
  }
  return {attrs.get_ints("shape"), static_cast<DType>(dt)};
}

// Resolves one -1 against the input's element count.
TensorSpec infer_reshape(const char* op, Specs in, const Attrs& attrs) {
  Shape shape = attrs.get_ints("shape");
  const int64_t n = numel(in[0].shape);
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && infer_at < 0) {
      infer_at = static_cast<int>(i);
    } else if (shape[i] < 0) {
      throw ShapeError(std::string(op) + ": invalid shape " + shape_str(shape));
    } else {
      known *= shape[i];
    }
  }
  if (infer_at >= 0 && known != 0 && n % known == 0) shape[static_cast<size_t>(infer_at)] = n / known;
  if (numel(shape) != n || (infer_at >= 0 && known == 0)) {
    throw ShapeError(std::string(op) + ": shape " + shape_str(attrs.get_ints("shape")) +
                     " is invalid for input of shape " + shape_str(in[0].shape) + " (" + std::to_string(n) +
                     " elements)");
  }
  return {shape, in[0].dtype};
}

TensorSpec infer_permute(const char* op, Specs in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const auto& dims = attrs.get_ints("dims");
  if (dims.size() != s.size()) {
    throw ShapeError(std::string(op) + ": " + std::to_string(dims.size()) + " dims given for a tensor of shape " +
                     shape_str(s));
  }
  std::vector<bool> seen(s.size(), false);
  Shape out;
  for (int64_t d : dims) {
    const auto w = static_cast<size_t>(wrap_dim(d, s.size(), op));
    if (seen[w]) throw ShapeError(std::string(op) + ": dim " + std::to_string(w) + " repeats in " + shape_str(dims));
    seen[w] = true;
    out.push_back(s[w]);
  }
  return {out, in[0].dtype};
}

TensorSpec infer_expand(const char* op, Specs in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  Shape out = attrs.get_ints("shape");
  if (out.size() < s.size()) {
    throw ShapeError(std::string(op) + ": the shape " + shape_str(out) + " has fewer dimensions than the input " +
                     shape_str(s));
  }
  const size_t lead = out.size() - s.size();
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t have = i < lead ? -2 : s[i - lead];
    if (out[i] == -1 && have != -2) {
      out[i] = have;
    } else if (out[i] < 0 || (have >= 0 && have != 1 && have != out[i])) {
      throw ShapeError(std::string(op) + ": cannot expand shape " + shape_str(s) + " to " +
                       shape_str(attrs.get_ints("shape")) + " (dimension " + std::to_string(i) + ")");
    }
  }
  return {out, in[0].dtype};
}

// Reductions. attrs: dims (empty = all), keepdim. Operands arrive promoted
// (integer sums as int64, any/all as bool), so the dtype is kept unless the
// op gives indices.
TensorSpec infer_reduce(const char* op, Specs in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const auto reduced = reduced_dims(s, attrs.get_ints("dims"), op);
  return {reduced_shape(s, reduced, attrs.get_bool("keepdim")), in[0].dtype};
}

// max/min/argmax/argmin/logsumexp have no identity: an empty reduced dim is an error.
TensorSpec infer_reduce_nonempty(const char* op, Specs in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const auto reduced = reduced_dims(s, attrs.get_ints("dims"), op);
  for (size_t i = 0; i < s.size(); ++i) {
    if (reduced[i] && s[i] == 0) {
      throw ShapeError(std::string(op) + ": cannot reduce over dimension " + std::to_string(i) +
                       " of size 0 in shape " + shape_str(s));
    }
  }
  return {reduced_shape(s, reduced, attrs.get_bool("keepdim")), in[0].dtype};
}

TensorSpec infer_arg_reduce(const char* op, Specs in, const Attrs& attrs) {
  if (attrs.get_ints("dims").size() > 1) throw ShapeError(std::string(op) + ": expected at most one dim");
  TensorSpec spec = infer_reduce_nonempty(op, in, attrs);
  spec.dtype = DType::kInt64;
  return spec;
}

// softmax/log_softmax: the input's spec; the dim must exist.
TensorSpec infer_along_dim(const char* op, Specs in, const Attrs& attrs) {
  wrap_dim(attrs.get_int("dim"), in[0].shape.size(), op);
  return in[0];
}

TensorSpec infer_one_hot(const char* op, Specs in, const Attrs& attrs) {
  if (is_floating(in[0].dtype) || in[0].dtype == DType::kBool) {
    throw EngineError(std::string(op) + ": expected an integer tensor of class values, got " +
                      std::string(dtype_name(in[0].dtype)));
  }
  const int64_t classes = attrs.get_int("num_classes");
  if (classes < 0) throw ShapeError(std::string(op) + ": num_classes must be >= 0, got " + std::to_string(classes));
  Shape out = in[0].shape;
  out.push_back(classes);
  return {out, DType::kInt64};
}

TensorSpec infer_nll_loss(const char* op, Specs in, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  const Shape& t = in[1].shape;
  if (!is_floating(in[0].dtype)) {
    throw EngineError(std::string(op) + ": expected floating point log-probabilities, got " +
                      std::string(dtype_name(in[0].dtype)));
  }
  if (in[1].dtype != DType::kInt64) {
    throw EngineError(std::string(op) + ": expected int64 class targets, got " + std::string(dtype_name(in[1].dtype)));
  }
  if (x.size() != 2 || t.size() != 1 || t[0] != x[0]) {
    throw ShapeError(std::string(op) + ": expected input [N, C] and target [N], got " + shape_str(x) + " and " +
                     shape_str(t));
  }
  const int64_t reduction = attrs.get_int("reduction");
  if (reduction < 0 || reduction > 2)
    throw EngineError(std::string(op) + ": invalid reduction code " + std::to_string(reduction));
  return {reduction == 0 ? Shape{x[0]} : Shape{}, in[0].dtype};
}

// layer_norm's operands: x floating, `dims` trailing dims normalized, and
// each of weight and bias, where its flag says it is there (after x, in that
// order), of x's dtype and shaped as those dims.
void check_layer_norm_operands(const char* op, Specs in, size_t first_param, const Attrs& attrs, bool with_bias) {
  const TensorSpec& x = in[first_param - 1];
  if (!is_floating(x.dtype)) {
    throw EngineError(std::string(op) + ": expected a floating point input, got " + std::string(dtype_name(x.dtype)));
  }
  const int64_t dims = attrs.get_int("dims");
  if (dims < 1 || dims > static_cast<int64_t>(x.shape.size())) {
    throw ShapeError(std::string(op) + ": cannot normalize the last " + std::to_string(dims) + " dims of " +
                     shape_str(x.shape));
  }
  const bool weight = attrs.get_bool("weight"), bias = with_bias && attrs.get_bool("bias");
  const size_t want = first_param + (weight ? 1 : 0) + (bias ? 1 : 0);
  if (in.size() != want) {
    throw EngineError(std::string(op) + ": expected " + std::to_string(want) + " operands, got " +
                      std::to_string(in.size()));
  }
  const Shape normalized(x.shape.end() - dims, x.shape.end());
  for (size_t i = first_param; i < in.size(); ++i) {
    if (in[i].shape != normalized || in[i].dtype != x.dtype) {
      throw ShapeError(std::string(op) + ": expected a " + std::string(i == first_param && weight ? "weight" : "bias") +
                       " " + std::string(dtype_name(x.dtype)) + shape_str(normalized) + ", got " +
                       std::string(dtype_name(in[i].dtype)) + shape_str(in[i].shape));
    }
  }
}

TensorSpec infer_layer_norm(const char* op, Specs in, const Attrs& attrs) {
  if (in.empty()) throw EngineError(std::string(op) + ": expected an input");
  check_layer_norm_operands(op, in, 1, attrs, true);
  return in[0];
}

// (grad, x [, weight]) -> x's spec; grad shaped as x.
TensorSpec infer_layer_norm_backward(const char* op, Specs in, const Attrs& attrs) {
  if (in.size() < 2) throw EngineError(std::string(op) + ": expected a gradient and an input");
  check_layer_norm_operands(op, in, 2, attrs, false);
  if (in[0].shape != in[1].shape || in[0].dtype != in[1].dtype) {
    throw ShapeError(std::string(op) + ": the gradient " + std::string(dtype_name(in[0].dtype)) +
                     shape_str(in[0].shape) + " does not match the input " + std::string(dtype_name(in[1].dtype)) +
                     shape_str(in[1].shape));
  }
  return in[1];
}

// (grad, x) -> [2, *normalized dims] of x's dtype.
TensorSpec infer_layer_norm_param_grads(const char* op, Specs in, const Attrs& attrs) {
  const Attrs plain{{"dims", attrs.get_int("dims")}, {"eps", attrs.get_double("eps")}, {"weight", false}};
  const TensorSpec dx = infer_layer_norm_backward(op, in, plain);
  Shape out{2};
  out.insert(out.end(), dx.shape.end() - attrs.get_int("dims"), dx.shape.end());
  return {out, dx.dtype};
}

// Linear algebra: a batch of matrices [..., rows, cols], floating point.
void check_matrices(const char* op, const TensorSpec& t, bool square) {
  if (t.shape.size() < 2) {
    throw ShapeError(std::string(op) + ": expected a matrix or a batch of matrices [..., rows, cols], got shape " +
                     shape_str(t.shape));
  }
  if (t.dtype != DType::kFloat32 && t.dtype != DType::kFloat64) {
    throw EngineError(std::string(op) + ": expected float32 or float64 matrices, got " +
                      std::string(dtype_name(t.dtype)));
  }
  if (square && t.shape[t.shape.size() - 2] != t.shape.back()) {
    throw ShapeError(std::string(op) + ": expected square matrices, got shape " + shape_str(t.shape));
  }
}

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// (A [..., n, n], B [..., n, k]), batch dims equal -> B's spec.
TensorSpec infer_linalg_solve(const char* op, Specs in, const Attrs&) {
  check_matrices(op, in[0], true);
  check_matrices(op, in[1], false);
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  if (batch_of(a) != batch_of(b) || b[b.size() - 2] != a.back()) {
    throw ShapeError(std::string(op) + ": the coefficients " + shape_str(a) + " and the right-hand side " +
                     shape_str(b) + " do not match (expected [..., n, n] and [..., n, k], batch dims equal)");
  }
  if (in[0].dtype != in[1].dtype) {
    throw EngineError(std::string(op) + ": the coefficients are " + std::string(dtype_name(in[0].dtype)) +
                      " and the right-hand side " + std::string(dtype_name(in[1].dtype)));
  }
  return in[1];
}

TensorSpec infer_linalg_square(const char* op, Specs in, const Attrs&) {
  check_matrices(op, in[0], true);
  return in[0];
}

// A batch of matrices -> batch dims + [per-matrix elements of the packed output].
TensorSpec packed_per_matrix(const TensorSpec& a, int64_t per) {
  Shape out = batch_of(a.shape);
  out.push_back(per);
  return {out, a.dtype};
}

TensorSpec infer_linalg_slogdet(const char* op, Specs in, const Attrs&) {
  check_matrices(op, in[0], true);
  return packed_per_matrix(in[0], 2);
}

TensorSpec infer_linalg_eigh(const char* op, Specs in, const Attrs&) {
  check_matrices(op, in[0], true);
  const int64_t n = in[0].shape.back();
  return packed_per_matrix(in[0], n + n * n);
}

TensorSpec infer_linalg_qr(const char* op, Specs in, const Attrs& attrs) {
  check_matrices(op, in[0], false);
  const int64_t m = in[0].shape[in[0].shape.size() - 2], n = in[0].shape.back();
  const int64_t q = attrs.get_bool("complete") ? m : std::min(m, n);
  return packed_per_matrix(in[0], m * q + q * n);
}

TensorSpec infer_linalg_svd(const char* op, Specs in, const Attrs& attrs) {
  check_matrices(op, in[0], false);
  const int64_t m = in[0].shape[in[0].shape.size() - 2], n = in[0].shape.back(), q = std::min(m, n);
  const bool full = attrs.get_bool("full");
  return packed_per_matrix(in[0], m * (full ? m : q) + q + (full ? n : q) * n);
}

// (grad, int64 targets [N]) -> [N, classes] of grad's dtype; grad is [N]
// for reduction none, a scalar otherwise (what nll_loss gave).
TensorSpec infer_nll_loss_backward(const char* op, Specs in, const Attrs& attrs) {
  const Shape& g = in[0].shape;
  const Shape& t = in[1].shape;
  if (!is_floating(in[0].dtype)) {
    throw EngineError(std::string(op) + ": expected a floating point gradient, got " +
                      std::string(dtype_name(in[0].dtype)));
  }
  if (in[1].dtype != DType::kInt64) {
    throw EngineError(std::string(op) + ": expected int64 class targets, got " + std::string(dtype_name(in[1].dtype)));
  }
  const int64_t reduction = attrs.get_int("reduction");
  if (reduction < 0 || reduction > 2)
    throw EngineError(std::string(op) + ": invalid reduction code " + std::to_string(reduction));
  const int64_t classes = attrs.get_int("classes");
  const bool grad_ok = reduction == 0 ? g.size() == 1 && g[0] == (t.empty() ? -1 : t[0]) : g.empty();
  if (t.size() != 1 || classes < 0 || !grad_ok) {
    throw ShapeError(std::string(op) + ": expected target [N], " + (reduction == 0 ? "grad [N]" : "grad []") +
                     " and classes >= 0, got " + shape_str(t) + ", " + shape_str(g) + " and " +
                     std::to_string(classes));
  }
  return {Shape{t[0], classes}, in[0].dtype};
}

// The mask must broadcast to the scores [N, H, Lq, Lk] and be bool or of the operands' dtype.
void check_attention_mask(const char* op, const TensorSpec& m, const Shape& scores, DType dt) {
  bool fits = m.shape.size() <= 4;
  for (size_t i = 0; fits && i < m.shape.size(); ++i) {
    const int64_t size = m.shape[m.shape.size() - 1 - i];
    fits = size == 1 || size == scores[3 - i];
  }
  if (!fits) {
    throw ShapeError(std::string(op) + ": the mask " + shape_str(m.shape) +
                     " does not broadcast to the scores [N, H, Lq, Lk] " + shape_str(scores));
  }
  if (m.dtype != DType::kBool && m.dtype != dt) {
    throw EngineError(std::string(op) + ": expected a bool mask or one of the operands' dtype, got " +
                      std::string(dtype_name(m.dtype)));
  }
}

// attention (q [N, Lq, H, D], k [N, Lk, H, D], v [N, Lk, H, Dv][, mask])
// -> flat [O | P]: the output O [N, Lq, H, Dv], then the probabilities P
// [N, H, Lq, Lk] its gradient reads (one op, one output: the binding
// slices O out, a view); packed: (qkv [N, L, 3, H, D][, mask]). The mask
// broadcasts to [N, H, Lq, Lk]. attention_backward (q, k, v, O's grad,
// forward output) or (qkv, O's grad, forward output), the forward output
// [O | P] flat -> [dq | dk | dv] flat, or qkv's gradient [N, L, 3, H, D].
TensorSpec infer_attention(const char* op, Specs in, const Attrs&, bool backward) {
  const bool packed = !in.empty() && in[0].shape.size() == 5;  // [N, L, 3, H, D]: q, k, v heads of one value
  const size_t tensors = packed ? 1 : 3;
  const size_t arity = backward ? tensors + 2 : tensors;
  if (in.size() != arity && (backward || in.size() != arity + 1)) {
    throw EngineError(std::string(op) + ": expected " + std::to_string(arity) +
                      (backward ? "" : " or " + std::to_string(arity + 1)) + " operands" +
                      (packed ? " with a packed [N, L, 3, H, D] q/k/v" : "") + ", got " + std::to_string(in.size()));
  }
  const DType dt = in[0].dtype;
  for (size_t i = 0; i < arity; ++i) {
    if (in[i].dtype != dt || (dt != DType::kFloat32 && dt != DType::kFloat64)) {
      throw EngineError(std::string(op) + ": expected float32 or float64 operands of one dtype, got " +
                        std::string(dtype_name(in[i].dtype)) + " for operand " + std::to_string(i));
    }
  }
  Shape q, k, v;
  if (packed) {
    const Shape& qkv = in[0].shape;
    if (qkv[2] != 3) {
      throw ShapeError(std::string(op) + ": expected a packed q/k/v [N, L, 3, H, D], got " + shape_str(qkv));
    }
    q = k = v = Shape{qkv[0], qkv[1], qkv[3], qkv[4]};
  } else {
    q = in[0].shape;
    k = in[1].shape;
    v = in[2].shape;
    const bool ok = q.size() == 4 && k.size() == 4 && v.size() == 4 && k[0] == q[0] && v[0] == q[0] && k[2] == q[2] &&
                    v[2] == q[2] && k[3] == q[3] && v[1] == k[1];
    if (!ok) {
      throw ShapeError(std::string(op) + ": expected q [N, Lq, H, D], k [N, Lk, H, D] and v [N, Lk, H, Dv], got " +
                       shape_str(q) + ", " + shape_str(k) + " and " + shape_str(v));
    }
  }
  const int64_t saved = q[0] * q[1] * q[2] * v[3] + q[0] * q[2] * q[1] * k[1];  // O, then P
  if (backward) {
    const Shape o{q[0], q[1], q[2], v[3]};
    if (in[tensors].shape != o || in[tensors + 1].shape != Shape{saved}) {
      throw ShapeError(std::string(op) + ": expected the output's gradient " + shape_str(o) +
                       " and the forward's flat output [" + std::to_string(saved) + "], got " +
                       shape_str(in[tensors].shape) + " and " + shape_str(in[tensors + 1].shape));
    }
    return {packed ? in[0].shape : Shape{numel(q) + numel(k) + numel(v)}, dt};
  }
  if (in.size() == arity + 1) check_attention_mask(op, in[arity], {q[0], q[2], q[1], k[1]}, dt);
  return {Shape{saved}, dt};
}
TensorSpec infer_attention_forward(const char* op, Specs in, const Attrs& attrs) {
  return infer_attention(op, in, attrs, false);
}
TensorSpec infer_attention_backward(const char* op, Specs in, const Attrs& attrs) {
  return infer_attention(op, in, attrs, true);
}

TensorSpec infer_cat(const char* op, Specs in, const Attrs& attrs) {
  if (in.empty()) throw ShapeError(std::string(op) + ": expected a non-empty list of tensors");
  const Shape& first = in[0].shape;
  if (first.empty()) throw ShapeError(std::string(op) + ": zero-dimensional tensors cannot be concatenated");
  const auto dim = static_cast<size_t>(wrap_dim(attrs.get_int("dim"), first.size(), op));
  Shape out = first;
  out[dim] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    bool ok = s.size() == first.size();
    for (size_t d = 0; ok && d < s.size(); ++d) ok = d == dim || s[d] == first[d];
    if (!ok) {
      throw ShapeError(std::string(op) + ": tensor " + std::to_string(i) + " has shape " + shape_str(s) +
                       ", which does not match tensor 0's " + shape_str(first) + " outside dimension " +
                       std::to_string(dim));
    }
    out[dim] += s[dim];
  }
  return {out, in[0].dtype};
}

// The shape a normalized slice of `s` gives; throws for attrs out of range.
Shape slice_shape(const char* op, const Shape& s, const Attrs& attrs) {
  const auto& starts = attrs.get_ints("starts");
  const auto& ends = attrs.get_ints("ends");
  const auto& steps = attrs.get_ints("steps");
  if (starts.size() != s.size() || ends.size() != s.size() || steps.size() != s.size()) {
    throw ShapeError(std::string(op) + ": expected one start, end and step per dimension of " + shape_str(s));
  }
  Shape out(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    if (steps[d] < 1 || starts[d] < 0 || starts[d] > ends[d] || ends[d] > s[d]) {
      throw ShapeError(std::string(op) + ": invalid slice " + std::to_string(starts[d]) + ":" +
                       std::to_string(ends[d]) + ":" + std::to_string(steps[d]) + " of dimension " + std::to_string(d) +
                       " (size " + std::to_string(s[d]) + ")");
    }
    out[d] = (ends[d] - starts[d] + steps[d] - 1) / steps[d];
  }
  return out;
}

TensorSpec infer_slice(const char* op, Specs in, const Attrs& attrs) {
  return {slice_shape(op, in[0].shape, attrs), in[0].dtype};
}

TensorSpec infer_slice_backward(const char* op, Specs in, const Attrs& attrs) {
  const Shape shape = attrs.get_ints("shape");
  const Shape expected = slice_shape(op, shape, attrs);
  if (in[0].shape != expected) {
    throw ShapeError(std::string(op) + ": gradient of shape " + shape_str(in[0].shape) + " for a slice of shape " +
                     shape_str(expected));
  }
  return {shape, in[0].dtype};
}

void check_index(const char* op, const TensorSpec& index) {
  if (index.dtype != DType::kInt64 || index.shape.size() > 1) {
    throw EngineError(std::string(op) + ": expected a 1-D int64 index, got " + std::string(dtype_name(index.dtype)) +
                      " of shape " + shape_str(index.shape));
  }
}

TensorSpec infer_index_select(const char* op, Specs in, const Attrs& attrs) {
  check_index(op, in[1]);
  Shape out = in[0].shape;
  if (out.empty()) throw ShapeError(std::string(op) + ": cannot index a zero-dimensional tensor");
  out[static_cast<size_t>(wrap_dim(attrs.get_int("dim"), out.size(), op))] = in[1].shape.empty() ? 1 : in[1].shape[0];
  return {out, in[0].dtype};
}

TensorSpec infer_index_add(const char* op, Specs in, const Attrs& attrs) {
  check_index(op, in[1]);
  const Shape& self = in[0].shape;
  if (self.empty()) throw ShapeError(std::string(op) + ": cannot index a zero-dimensional tensor");
  Shape expected = self;
  expected[static_cast<size_t>(wrap_dim(attrs.get_int("dim"), self.size(), op))] = in[1].shape.empty() ? 1
                                                                                                       : in[1].shape[0];
  if (in[2].shape != expected || in[2].dtype != in[0].dtype) {
    throw ShapeError(std::string(op) + ": source of shape " + shape_str(in[2].shape) + " (" +
                     std::string(dtype_name(in[2].dtype)) + ") does not fit " + shape_str(expected) + " (" +
                     std::string(dtype_name(in[0].dtype)) + ")");
  }
  return in[0];
}

void check_int64(const char* op, const char* what, const TensorSpec& t) {
  if (t.dtype != DType::kInt64) {
    throw EngineError(std::string(op) + ": expected an int64 " + what + ", got " + std::string(dtype_name(t.dtype)));
  }
}

// gather/scatter: index of the input's rank; along the other dims it may not be larger than `limit`.
void check_gather_index(const char* op, const Shape& limit, const char* limit_name, const Shape& index, size_t dim,
                        bool check_dim) {
  if (index.size() != limit.size()) {
    throw ShapeError(std::string(op) + ": index " + shape_str(index) + " and " + limit_name + " " + shape_str(limit) +
                     " must have the same number of dimensions");
  }
  for (size_t d = 0; d < index.size(); ++d) {
    if ((d != dim || check_dim) && index[d] > limit[d]) {
      throw ShapeError(std::string(op) + ": index " + shape_str(index) + " is larger than " + limit_name + " " +
                       shape_str(limit) + " in dimension " + std::to_string(d));
    }
  }
}

TensorSpec infer_gather(const char* op, Specs in, const Attrs& attrs) {
  check_int64(op, "index", in[1]);
  const Shape& s = in[0].shape;
  const auto dim = static_cast<size_t>(wrap_dim(attrs.get_int("dim"), std::max<size_t>(s.size(), 1), op));
  if (!s.empty()) check_gather_index(op, s, "input", in[1].shape, dim, false);
  return {in[1].shape, in[0].dtype};
}

TensorSpec infer_scatter(const char* op, Specs in, const Attrs& attrs) {
  check_int64(op, "index", in[1]);
  const Shape& s = in[0].shape;
  if (in[2].dtype != in[0].dtype) {
    throw EngineError(std::string(op) + ": src of dtype " + std::string(dtype_name(in[2].dtype)) + " for self of " +
                      std::string(dtype_name(in[0].dtype)));
  }
  const auto dim = static_cast<size_t>(wrap_dim(attrs.get_int("dim"), std::max<size_t>(s.size(), 1), op));
  if (!s.empty()) {
    check_gather_index(op, s, "self", in[1].shape, dim, false);
    check_gather_index(op, in[2].shape, "src", in[1].shape, dim, true);
  }
  return in[0];
}

TensorSpec infer_slice_scatter(const char* op, Specs in, const Attrs& attrs) {
  const Shape expected = slice_shape(op, in[0].shape, attrs);
  if (in[1].shape != expected || in[1].dtype != in[0].dtype) {
    throw ShapeError(std::string(op) + ": src of shape " + shape_str(in[1].shape) + " (" +
                     std::string(dtype_name(in[1].dtype)) + ") does not fit the slice " + shape_str(expected) + " (" +
                     std::string(dtype_name(in[0].dtype)) + ")");
  }
  return in[0];
}

// kIndex's output shape for self and the index operands in[first..].
Shape advanced_index_shape(const char* op, Specs in, size_t first) {
  const Shape& s = in[0].shape;
  const size_t k = in.size() - first;
  if (k == 0 || k > s.size()) {
    throw ShapeError(std::string(op) + ": " + std::to_string(k) + " index tensors for a tensor of shape " +
                     shape_str(s));
  }
  const Shape& b = in[first].shape;
  for (size_t i = first; i < in.size(); ++i) {
    check_int64(op, "index", in[i]);
    if (in[i].shape != b) {
      throw ShapeError(std::string(op) + ": index tensors of shapes " + shape_str(b) + " and " +
                       shape_str(in[i].shape) + " (broadcast them first)");
    }
  }
  Shape out = b;
  out.insert(out.end(), s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
  return out;
}

TensorSpec infer_index(const char* op, Specs in, const Attrs&) {
  return {advanced_index_shape(op, in, 1), in[0].dtype};
}

TensorSpec infer_index_put(const char* op, Specs in, const Attrs&) {
  if (in.size() < 3) throw ShapeError(std::string(op) + ": expected self, values and at least one index");
  const Shape expected = advanced_index_shape(op, in, 2);
  if (in[1].shape != expected || in[1].dtype != in[0].dtype) {
    throw ShapeError(std::string(op) + ": values of shape " + shape_str(in[1].shape) + " (" +
                     std::string(dtype_name(in[1].dtype)) + ") for indexed elements of shape " + shape_str(expected) +
                     " (" + std::string(dtype_name(in[0].dtype)) + ")");
  }
  return in[0];
}

TensorSpec infer_argsort(const char* op, Specs in, const Attrs& attrs) {
  wrap_dim(attrs.get_int("dim"), in[0].shape.size(), op);
  return {in[0].shape, DType::kInt64};
}

TensorSpec infer_triangle(const char* op, Specs in, const Attrs&) {
  if (in[0].shape.size() < 2) {
    throw ShapeError(std::string(op) + ": expected a tensor of at least 2 dimensions, got " + shape_str(in[0].shape));
  }
  return in[0];
}

struct ReduceRow {
  ReduceKind kind;
  const char* name;
};
constexpr std::array<ReduceRow, kNumReduceKinds> kReduceRows{{
    {ReduceKind::kSum, "sum"},
    {ReduceKind::kMul, "mul"},
    {ReduceKind::kMin, "min"},
    {ReduceKind::kMax, "max"},
    {ReduceKind::kAnd, "and"},
    {ReduceKind::kOr, "or"},
}};

// Same shape; bool for and/or. A scale only makes sense for floats (an
// integer mean would truncate silently).
TensorSpec infer_all_reduce(const char* op, Specs in, const Attrs& attrs) {
  const int64_t reduce = attrs.get_int("reduce");
  if (reduce < 0 || reduce >= kNumReduceKinds) {
    throw EngineError(std::string(op) + ": invalid reduce kind " + std::to_string(reduce) + " (one of " +
                      reduce_names() + ")");
  }
  const auto kind = static_cast<ReduceKind>(reduce);
  const double scale = attrs.get_double("scale");
  if (scale != 1.0 && (is_logical(kind) || !is_floating(in[0].dtype))) {
    throw EngineError(std::string(op) + ": scale=" + std::to_string(scale) + " needs a floating point " +
                      (is_logical(kind) ? "arithmetic reduction, not '" + std::string(reduce_name(kind)) + "'"
                                        : "tensor, got " + std::string(dtype_name(in[0].dtype))));
  }
  return {in[0].shape, is_logical(kind) ? DType::kBool : in[0].dtype};
}

constexpr std::array<OpInfo, static_cast<size_t>(OpKind::kNumOps)> kOps = {{
    {"device_data", 0, infer_leaf, Promote::kNone},
    {"cast", 1, infer_cast, Promote::kNone},
    {"add", 2, infer_binary, Promote::kCommon},
    {"sub", 2, infer_binary, Promote::kCommon},
    {"mul", 2, infer_binary, Promote::kCommon},
    {"div", 2, infer_binary, Promote::kCommonFloat},
    {"pow", 2, infer_binary, Promote::kCommon},
    {"maximum", 2, infer_binary, Promote::kCommon},
    {"minimum", 2, infer_binary, Promote::kCommon},
    {"eq", 2, infer_predicate, Promote::kCommon},
    {"ne", 2, infer_predicate, Promote::kCommon},
    {"lt", 2, infer_predicate, Promote::kCommon},
    {"le", 2, infer_predicate, Promote::kCommon},
    {"gt", 2, infer_predicate, Promote::kCommon},
    {"ge", 2, infer_predicate, Promote::kCommon},
    {"logical_and", 2, infer_predicate, Promote::kToBool},
    {"logical_or", 2, infer_predicate, Promote::kToBool},
    {"logical_not", 1, infer_predicate, Promote::kToBool},
    {"where", 3, infer_where, Promote::kWhere},
    {"neg", 1, infer_same, Promote::kNone},
    {"abs", 1, infer_same, Promote::kNone},
    {"exp", 1, infer_same, Promote::kCommonFloat},
    {"log", 1, infer_same, Promote::kCommonFloat},
    {"log1p", 1, infer_same, Promote::kCommonFloat},
    {"sqrt", 1, infer_same, Promote::kCommonFloat},
    {"rsqrt", 1, infer_same, Promote::kCommonFloat},
    {"sin", 1, infer_same, Promote::kCommonFloat},
    {"cos", 1, infer_same, Promote::kCommonFloat},
    {"tanh", 1, infer_same, Promote::kCommonFloat},
    {"erf", 1, infer_same, Promote::kCommonFloat},
    {"sigmoid", 1, infer_same, Promote::kCommonFloat},
    {"relu", 1, infer_same, Promote::kNone},
    {"leaky_relu", 1, infer_same, Promote::kNone},
    {"gelu", 1, infer_same, Promote::kCommonFloat},
    {"silu", 1, infer_same, Promote::kCommonFloat},
    {"softplus", 1, infer_same, Promote::kCommonFloat},
    {"clamp", 1, infer_same, Promote::kNone},
    {"matmul", 2, infer_matmul, Promote::kCommon},
    // Convolution, pooling, normalization, dropout
    {"conv2d", 2, infer_conv<2>, Promote::kCommon},
    {"conv2d_backward_input", 2, infer_conv_backward_input<2>, Promote::kCommon},
    {"conv2d_backward_weight", 2, infer_conv_backward_weight<2>, Promote::kCommon},
    {"max_pool2d", 1, infer_max_pool<2>, Promote::kNone},
    {"max_pool2d_backward", 2, infer_max_pool_backward<2>, Promote::kCommon},
    {"avg_pool2d", 1, infer_avg_pool<2>, Promote::kNone},
    {"avg_pool2d_backward", 1, infer_avg_pool_backward<2>, Promote::kNone},
    {"adaptive_avg_pool2d", 1, infer_adaptive_avg_pool<2>, Promote::kNone},
    {"adaptive_avg_pool2d_backward", 1, infer_adaptive_avg_pool_backward<2>, Promote::kNone},
    {"dropout_mask", 1, infer_dropout_mask, Promote::kNone},
    {"reshape", 1, infer_reshape, Promote::kNone},
    {"permute", 1, infer_permute, Promote::kNone},
    {"expand", 1, infer_expand, Promote::kNone},
    {"sum", 1, infer_reduce, Promote::kIntToLong},
    {"mean", 1, infer_reduce, Promote::kFloatOnly},
    {"prod", 1, infer_reduce, Promote::kIntToLong},
    {"amax", 1, infer_reduce_nonempty, Promote::kNone},
    {"amin", 1, infer_reduce_nonempty, Promote::kNone},
    {"argmax", 1, infer_arg_reduce, Promote::kNone},
    {"argmin", 1, infer_arg_reduce, Promote::kNone},
    {"var", 1, infer_reduce, Promote::kFloatOnly},
    {"logsumexp", 1, infer_reduce_nonempty, Promote::kCommonFloat},
    {"any", 1, infer_reduce, Promote::kToBool},
    {"all", 1, infer_reduce, Promote::kToBool},
    {"softmax", 1, infer_along_dim, Promote::kCommonFloat},
    {"log_softmax", 1, infer_along_dim, Promote::kCommonFloat},
    {"one_hot", 1, infer_one_hot, Promote::kNone},
    {"nll_loss", 2, infer_nll_loss, Promote::kNone},
    {"cat", -1, infer_cat, Promote::kCommon},
    {"slice", 1, infer_slice, Promote::kNone},
    {"slice_backward", 1, infer_slice_backward, Promote::kNone},
    {"index_select", 2, infer_index_select, Promote::kNone},
    {"index_add", 3, infer_index_add, Promote::kNone},
    {"gather", 2, infer_gather, Promote::kNone},
    {"scatter", 3, infer_scatter, Promote::kNone},
    {"scatter_add", 3, infer_scatter, Promote::kNone},
    {"slice_scatter", 2, infer_slice_scatter, Promote::kNone},
    {"index", -1, infer_index, Promote::kNone},
    {"index_put", -1, infer_index_put, Promote::kNone},
    {"argsort", 1, infer_argsort, Promote::kNone},
    {"cumsum", 1, infer_along_dim, Promote::kIntToLong},
    {"cumprod", 1, infer_along_dim, Promote::kIntToLong},
    {"tril", 1, infer_triangle, Promote::kNone},
    {"triu", 1, infer_triangle, Promote::kNone},
    // Collectives
    {"all_reduce", 1, infer_all_reduce, Promote::kNone},
    // Rounding and integer division
    {"sign", 1, infer_same, Promote::kNone},
    {"floor", 1, infer_same, Promote::kNone},
    {"ceil", 1, infer_same, Promote::kNone},
    {"round", 1, infer_same, Promote::kNone},
    {"trunc", 1, infer_same, Promote::kNone},
    {"floor_divide", 2, infer_binary, Promote::kCommon},
    {"remainder", 2, infer_binary, Promote::kCommon},
    {"fmod", 2, infer_binary, Promote::kCommon},
    {"atan", 1, infer_same, Promote::kCommonFloat},
    {"asin", 1, infer_same, Promote::kCommonFloat},
    {"acos", 1, infer_same, Promote::kCommonFloat},
    {"atan2", 2, infer_binary, Promote::kCommonFloat},
    {"bitwise_and", 2, infer_binary, Promote::kIntegral},
    {"bitwise_or", 2, infer_binary, Promote::kIntegral},
    {"bitwise_xor", 2, infer_binary, Promote::kIntegral},
    {"bitwise_left_shift", 2, infer_binary, Promote::kIntegral},
    {"bitwise_right_shift", 2, infer_binary, Promote::kIntegral},
    {"nll_loss_backward", 2, infer_nll_loss_backward, Promote::kNone},
    {"layer_norm", -1, infer_layer_norm, Promote::kNone},
    {"layer_norm_backward", -1, infer_layer_norm_backward, Promote::kNone},
    {"layer_norm_param_grads", 2, infer_layer_norm_param_grads, Promote::kNone},
    {"attention", -1, infer_attention_forward, Promote::kNone},
    {"attention_backward", -1, infer_attention_backward, Promote::kNone},
    {"linalg.solve", 2, infer_linalg_solve, Promote::kNone},
    {"linalg.inv", 1, infer_linalg_square, Promote::kNone},
    {"linalg.slogdet", 1, infer_linalg_slogdet, Promote::kNone},
    {"linalg.cholesky", 1, infer_linalg_square, Promote::kNone},
    {"linalg.solve_triangular", 2, infer_linalg_solve, Promote::kNone},
    {"linalg.eigh", 1, infer_linalg_eigh, Promote::kNone},
    {"linalg.qr", 1, infer_linalg_qr, Promote::kNone},
    {"linalg.svd", 1, infer_linalg_svd, Promote::kNone},
    {"conv3d", 2, infer_conv<3>, Promote::kCommon},
    {"conv3d_backward_input", 2, infer_conv_backward_input<3>, Promote::kCommon},
    {"conv3d_backward_weight", 2, infer_conv_backward_weight<3>, Promote::kCommon},
    {"max_pool3d", 1, infer_max_pool<3>, Promote::kNone},
    {"max_pool3d_backward", 2, infer_max_pool_backward<3>, Promote::kCommon},
    {"avg_pool3d", 1, infer_avg_pool<3>, Promote::kNone},
    {"avg_pool3d_backward", 1, infer_avg_pool_backward<3>, Promote::kNone},
    {"adaptive_avg_pool3d", 1, infer_adaptive_avg_pool<3>, Promote::kNone},
    {"adaptive_avg_pool3d_backward", 1, infer_adaptive_avg_pool_backward<3>, Promote::kNone},
    {"gcd", 2, infer_binary, Promote::kIntegral},
    {"nextafter", 2, infer_binary, Promote::kCommon},
    {"frexp_mantissa", 1, infer_same, Promote::kNone},
    {"frexp_exponent", 1, infer_same, Promote::kNone},
}};

}  // namespace

const OpInfo& op_info(OpKind op) { return kOps[static_cast<size_t>(op)]; }

std::string_view reduce_name(ReduceKind kind) {
  for (const ReduceRow& row : kReduceRows) {
    if (row.kind == kind) return row.name;
  }
  return "?";
}

std::optional<ReduceKind> reduce_from_name(std::string_view name) {
  for (const ReduceRow& row : kReduceRows) {
    if (name == row.name) return row.kind;
  }
  return std::nullopt;
}

std::string reduce_names() {
  std::string out;
  for (const ReduceRow& row : kReduceRows) out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

bool infer_spec_into(OpKind op, SpecList in, const Attrs& attrs, TensorSpec& out) {
  const OpInfo& info = op_info(op);
  const auto keep_shape = [&](DType dtype) {
    out.shape.assign(in[0].shape.begin(), in[0].shape.end());
    out.dtype = dtype;
    return true;
  };
  if (info.infer == infer_same && !in.empty()) return keep_shape(in[0].dtype);
  const bool elementwise = info.infer == infer_binary || info.infer == infer_predicate || info.infer == infer_where;
  if (elementwise && in.size() >= 2) {
    bool same = true;
    for (size_t i = 1; i < in.size() && same; ++i) same = in[i].shape == in[0].shape;
    if (same) {
      const DType dtype = info.infer == infer_binary      ? promote_types(in[0].dtype, in[1].dtype)
                          : info.infer == infer_predicate ? DType::kBool
                                                          : in[1].dtype;
      return keep_shape(dtype);
    }
  }
  TensorSpec spec = info.infer(info.name, in, attrs);
  out.shape.assign(spec.shape.begin(), spec.shape.end());
  out.dtype = spec.dtype;
  return false;
}

OpCategory op_category(OpKind op) {
  // No default: a new op that is not placed here fails the build (-Wswitch),
  // so the GUI's colours can never go stale again.
  switch (op) {
    case OpKind::kDeviceData:
    case OpKind::kDropoutMask:
    case OpKind::kOneHot: return OpCategory::kData;
    case OpKind::kCast:
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kMaximum:
    case OpKind::kMinimum:
    case OpKind::kEq:
    case OpKind::kNe:
    case OpKind::kLt:
    case OpKind::kLe:
    case OpKind::kGt:
    case OpKind::kGe:
    case OpKind::kLogicalAnd:
    case OpKind::kLogicalOr:
    case OpKind::kLogicalNot:
    case OpKind::kWhere:
    case OpKind::kNeg:
    case OpKind::kAbs:
    case OpKind::kExp:
    case OpKind::kLog:
    case OpKind::kLog1p:
    case OpKind::kSqrt:
    case OpKind::kRsqrt:
    case OpKind::kSin:
    case OpKind::kCos:
    case OpKind::kTanh:
    case OpKind::kErf:
    case OpKind::kSigmoid:
    case OpKind::kRelu:
    case OpKind::kLeakyRelu:
    case OpKind::kGelu:
    case OpKind::kSilu:
    case OpKind::kSoftplus:
    case OpKind::kClamp:
    case OpKind::kSign:
    case OpKind::kFloor:
    case OpKind::kCeil:
    case OpKind::kRound:
    case OpKind::kTrunc:
    case OpKind::kFloorDivide:
    case OpKind::kRemainder:
    case OpKind::kFmod:
    case OpKind::kAtan:
    case OpKind::kAsin:
    case OpKind::kAcos:
    case OpKind::kAtan2:
    case OpKind::kBitwiseAnd:
    case OpKind::kBitwiseOr:
    case OpKind::kBitwiseXor:
    case OpKind::kShiftLeft:
    case OpKind::kShiftRight:
    case OpKind::kGcd:
    case OpKind::kNextafter:
    case OpKind::kFrexpMantissa:
    case OpKind::kFrexpExponent:
    case OpKind::kTril:
    case OpKind::kTriu: return OpCategory::kElementwise;
    case OpKind::kMatmul:
    case OpKind::kAttention:
    case OpKind::kAttentionBackward:
    case OpKind::kConv2d:
    case OpKind::kConv2dBackwardInput:
    case OpKind::kConv2dBackwardWeight:
    case OpKind::kMaxPool2d:
    case OpKind::kMaxPool2dBackward:
    case OpKind::kAvgPool2d:
    case OpKind::kAvgPool2dBackward:
    case OpKind::kAdaptiveAvgPool2d:
    case OpKind::kAdaptiveAvgPool2dBackward: return OpCategory::kMatmulConv;
    case OpKind::kSum:
    case OpKind::kMean:
    case OpKind::kProd:
    case OpKind::kAmax:
    case OpKind::kAmin:
    case OpKind::kArgmax:
    case OpKind::kArgmin:
    case OpKind::kVar:
    case OpKind::kLogsumexp:
    case OpKind::kAny:
    case OpKind::kAll:
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kNllLoss:
    case OpKind::kNllLossBackward:
    case OpKind::kLayerNorm:
    case OpKind::kLayerNormBackward:
    case OpKind::kLayerNormParamGrads:
    case OpKind::kCumsum:
    case OpKind::kCumprod: return OpCategory::kReduction;
    case OpKind::kReshape:
    case OpKind::kPermute:
    case OpKind::kExpand:
    case OpKind::kCat:
    case OpKind::kSlice:
    case OpKind::kSliceBackward:
    case OpKind::kSliceScatter: return OpCategory::kLayout;
    case OpKind::kIndexSelect:
    case OpKind::kIndexAdd:
    case OpKind::kGather:
    case OpKind::kScatter:
    case OpKind::kScatterAdd:
    case OpKind::kIndex:
    case OpKind::kIndexPut:
    case OpKind::kArgsort: return OpCategory::kIndexing;
    case OpKind::kAllReduce: return OpCategory::kCollective;
    // Matrix factorizations: matrix work for the workbench; the CPU backend
    // knows which can fail on their values (may_fail_on_values).
    case OpKind::kLinalgSolve:
    case OpKind::kLinalgInv:
    case OpKind::kLinalgSlogdet:
    case OpKind::kLinalgCholesky:
    case OpKind::kLinalgSolveTriangular:
    case OpKind::kLinalgEigh:
    case OpKind::kLinalgQr:
    case OpKind::kLinalgSvd:
    case OpKind::kConv3d:
    case OpKind::kConv3dBackwardInput:
    case OpKind::kConv3dBackwardWeight:
    case OpKind::kMaxPool3d:
    case OpKind::kMaxPool3dBackward:
    case OpKind::kAvgPool3d:
    case OpKind::kAvgPool3dBackward:
    case OpKind::kAdaptiveAvgPool3d:
    case OpKind::kAdaptiveAvgPool3dBackward: return OpCategory::kMatmulConv;
    case OpKind::kNumOps: break;
  }
  return OpCategory::kOther;
}

}  // namespace lazyscope
