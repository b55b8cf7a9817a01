#include "tensor/ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "autograd/autograd.h"
#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/source_location.h"
#include "executor/fallback.h"
#include "metrics/metrics.h"
#include "tensor/views.h"

namespace lazyscope::ops {
namespace {

std::string at_line(const SourceLocation& loc) {
  return loc.known() ? " (at " + loc.str() + ")" : "";
}

void check_same_device(OpKind op, const std::vector<Tensor>& inputs) {
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].device() != inputs[0].device()) {
      throw DeviceMismatchError(std::string(op_name(op)) + ": operands are on different devices, " +
                                inputs[0].device().str() + " and " + inputs[i].device().str() +
                                "; move them to one device with .to(device)" +
                                at_line(current_source_location()));
    }
  }
}

PromotionOperand promotion_operand(const Tensor& t) {
  if (t.impl()->wrapped_number) return {t.dtype(), PromotionTier::kWrappedNumber};
  return {t.dtype(), t.shape().empty() ? PromotionTier::kZeroDim : PromotionTier::kDimensioned};
}

DType common_type(const std::vector<Tensor>& inputs, size_t first) {
  std::vector<PromotionOperand> operands;
  for (size_t i = first; i < inputs.size(); ++i) operands.push_back(promotion_operand(inputs[i]));
  return result_type(operands.data(), operands.size());
}

// The dtype each operand is cast to before the op runs, from the op's row.
std::vector<DType> operand_dtypes(OpKind op, const std::vector<Tensor>& inputs) {
  std::vector<DType> out;
  for (const Tensor& t : inputs) out.push_back(t.dtype());
  if (inputs.empty()) return out;
  switch (op_info(op).promote) {
    case Promote::kNone: break;
    case Promote::kCommon: std::fill(out.begin(), out.end(), common_type(inputs, 0)); break;
    case Promote::kCommonFloat: {
      const DType common = common_type(inputs, 0);
      std::fill(out.begin(), out.end(), is_floating(common) ? common : DType::kFloat32);
      break;
    }
    case Promote::kFloatOnly:
      for (const Tensor& t : inputs) {
        if (!is_floating(t.dtype())) {
          throw EngineError(std::string(op_name(op)) + ": expected a floating point input, got " +
                            std::string(dtype_name(t.dtype())) + "; convert it with .float() first" +
                            at_line(current_source_location()));
        }
      }
      break;
    case Promote::kToBool: std::fill(out.begin(), out.end(), DType::kBool); break;
    case Promote::kWhere:
      out[0] = DType::kBool;
      std::fill(out.begin() + 1, out.end(), common_type(inputs, 1));
      break;
    case Promote::kIntToLong:
      for (DType& d : out) {
        if (!is_floating(d)) d = DType::kInt64;
      }
      break;
  }
  return out;
}

// A wrapped number is a materialized 0-d buffer: it is converted on the host
// (with the cast kernel) and stays a graph input, so promotion adds no node.
Tensor convert_wrapped_number(const Tensor& t, DType dtype) {
  BufferPtr out = Buffer::allocate(dtype, {});
  const Buffer* in = t.impl()->buffer.get();
  cpu::find_kernel(OpKind::kCast, dtype)(cpu::KernelArgs{std::span<const Buffer* const>(&in, 1), *out, Attrs{}});
  Tensor converted = Tensor::wrap(std::move(out), t.device());
  converted.impl()->wrapped_number = true;
  return converted;
}

void promote_operands(OpKind op, std::vector<Tensor>& inputs) {
  const std::vector<DType> dtypes = operand_dtypes(op, inputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() == dtypes[i]) continue;
    const bool host_scalar = inputs[i].impl()->wrapped_number && inputs[i].impl()->buffer;
    inputs[i] = host_scalar ? convert_wrapped_number(inputs[i], dtypes[i]) : cast(inputs[i], dtypes[i]);
  }
}

// The host kernel of `op` on host buffers: the eager cpu device's path, and
// the computation of a lazy op that falls back to the host.
BufferPtr run_kernel(OpKind op, const std::vector<const Buffer*>& buffers, const TensorSpec& spec, const Attrs& attrs,
                     const char* where) {
  cpu::KernelFn kernel = cpu::find_kernel(op, spec.dtype);
  if (!kernel) {
    throw EngineError(std::string(op_name(op)) + " is not implemented for " + std::string(dtype_name(spec.dtype)) +
                      " " + where + at_line(current_source_location()));
  }
  BufferPtr out;
  try {
    out = Buffer::allocate(spec.dtype, spec.shape);
  } catch (const OutOfMemoryError& e) {
    throw OutOfMemoryError(std::string(op_name(op)) + ": " + e.what());
  }
  kernel(cpu::KernelArgs{buffers, *out, attrs});
  return out;
}

Tensor run_eager(OpKind op, const std::vector<Tensor>& inputs, const TensorSpec& spec, const Attrs& attrs) {
  std::vector<const Buffer*> buffers;
  buffers.reserve(inputs.size());
  for (const Tensor& t : inputs) buffers.push_back(t.impl()->buffer.get());
  return Tensor::wrap(run_kernel(op, buffers, spec, attrs, "on the cpu device"), inputs[0].device());
}

}  // namespace

Tensor apply(OpKind op, std::vector<Tensor> inputs, Attrs attrs) {
  for (const Tensor& t : inputs) {
    if (!t.defined()) throw EngineError(std::string(op_name(op)) + ": undefined tensor operand");
    views::refresh_if_view(t);  // a view whose base was written in place since
  }
  check_same_device(op, inputs);
  promote_operands(op, inputs);
  std::vector<TensorSpec> specs;
  specs.reserve(inputs.size());
  for (const Tensor& t : inputs) specs.push_back(t.impl()->spec);
  TensorSpec spec;
  try {
    spec = infer_spec(op, specs, attrs);
  } catch (const EngineError& e) {  // shapes, and dtypes an op refuses (conv2d of integers)
    rethrow_with_message(std::current_exception(), e.what() + at_line(current_source_location()));
  }

  const Device& device = inputs[0].device();
  Tensor out;
  if (!device.is_lazy()) {
    try {
      out = run_eager(op, inputs, spec, attrs);
    } catch (const IndexError& e) {  // a bad value in the data: name the user's line too
      throw IndexError(e.what() + at_line(current_source_location()));
    } catch (const OutOfMemoryError& e) {
      throw OutOfMemoryError(e.what() + at_line(current_source_location()));
    }
  } else if (const pb::FallbackReason reason = executor::fallback_reason(op, spec.dtype);
             reason != pb::FALLBACK_REASON_UNSPECIFIED) {
    // The device does not run this op: the host does, between two graphs.
    // Autograd below records it as usual, so gradients flow through it.
    try {
      out = executor::run_on_host(op_name(op), reason, spec.dtype, inputs,
                                  [&](const std::vector<const Buffer*>& host) -> std::vector<BufferPtr> {
                                    return {run_kernel(op, host, spec, attrs, "on the host (CPU fallback)")};
                                  })[0];
    } catch (const IndexError& e) {
      throw IndexError(e.what() + at_line(current_source_location()));
    } catch (const OutOfMemoryError& e) {
      throw OutOfMemoryError(e.what() + at_line(current_source_location()));
    }
  } else {
    std::vector<NodePtr> operands;
    operands.reserve(inputs.size());
    for (const Tensor& t : inputs) operands.push_back(t.impl()->ir);
    auto node = std::make_shared<Node>(op, std::move(operands), std::move(spec), attrs, current_source_location(),
                                       current_scope());
    out = Tensor::lazy(std::move(node), device);
  }
  autograd::record(op, inputs, attrs, out);
  return out;
}

Tensor cast(const Tensor& a, DType dtype) {
  if (a.dtype() == dtype) return a;
  return apply(OpKind::kCast, {a}, {{"dtype", static_cast<int64_t>(dtype)}});
}

Tensor add(const Tensor& a, const Tensor& b) { return apply(OpKind::kAdd, {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return apply(OpKind::kSub, {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return apply(OpKind::kMul, {a, b}); }
Tensor div(const Tensor& a, const Tensor& b) { return apply(OpKind::kDiv, {a, b}); }
Tensor pow(const Tensor& a, const Tensor& b) { return apply(OpKind::kPow, {a, b}); }
Tensor maximum(const Tensor& a, const Tensor& b) { return apply(OpKind::kMaximum, {a, b}); }
Tensor minimum(const Tensor& a, const Tensor& b) { return apply(OpKind::kMinimum, {a, b}); }
Tensor eq(const Tensor& a, const Tensor& b) { return apply(OpKind::kEq, {a, b}); }
Tensor ne(const Tensor& a, const Tensor& b) { return apply(OpKind::kNe, {a, b}); }
Tensor lt(const Tensor& a, const Tensor& b) { return apply(OpKind::kLt, {a, b}); }
Tensor le(const Tensor& a, const Tensor& b) { return apply(OpKind::kLe, {a, b}); }
Tensor gt(const Tensor& a, const Tensor& b) { return apply(OpKind::kGt, {a, b}); }
Tensor ge(const Tensor& a, const Tensor& b) { return apply(OpKind::kGe, {a, b}); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return apply(OpKind::kLogicalAnd, {a, b}); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return apply(OpKind::kLogicalOr, {a, b}); }
Tensor logical_not(const Tensor& a) { return apply(OpKind::kLogicalNot, {a}); }
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) { return apply(OpKind::kWhere, {cond, x, y}); }
Tensor neg(const Tensor& a) { return apply(OpKind::kNeg, {a}); }
Tensor abs(const Tensor& a) { return apply(OpKind::kAbs, {a}); }
Tensor exp(const Tensor& a) { return apply(OpKind::kExp, {a}); }
Tensor log(const Tensor& a) { return apply(OpKind::kLog, {a}); }
Tensor log1p(const Tensor& a) { return apply(OpKind::kLog1p, {a}); }
Tensor sqrt(const Tensor& a) { return apply(OpKind::kSqrt, {a}); }
Tensor rsqrt(const Tensor& a) { return apply(OpKind::kRsqrt, {a}); }
Tensor sin(const Tensor& a) { return apply(OpKind::kSin, {a}); }
Tensor cos(const Tensor& a) { return apply(OpKind::kCos, {a}); }
Tensor tanh(const Tensor& a) { return apply(OpKind::kTanh, {a}); }
Tensor erf(const Tensor& a) { return apply(OpKind::kErf, {a}); }
Tensor sigmoid(const Tensor& a) { return apply(OpKind::kSigmoid, {a}); }
Tensor gelu(const Tensor& a) { return apply(OpKind::kGelu, {a}); }
Tensor silu(const Tensor& a) { return apply(OpKind::kSilu, {a}); }
Tensor softplus(const Tensor& a, double beta, double threshold) {
  return apply(OpKind::kSoftplus, {a}, {{"beta", beta}, {"threshold", threshold}});
}
Tensor leaky_relu(const Tensor& a, double negative_slope) {
  return apply(OpKind::kLeakyRelu, {a}, {{"negative_slope", negative_slope}});
}
Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max) {
  const auto integral = [](std::optional<double> v) { return !v || v == std::trunc(*v); };
  const Tensor in = !is_floating(a.dtype()) && !(integral(min) && integral(max)) ? cast(a, DType::kFloat32) : a;
  const double inf = std::numeric_limits<double>::infinity();
  return apply(OpKind::kClamp, {in}, {{"min", min.value_or(-inf)}, {"max", max.value_or(inf)}});
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) throw EngineError("matmul: undefined tensor operand");
  if (a.shape().empty() || b.shape().empty()) {
    throw ShapeError("matmul: both operands need at least one dimension, got " + shape_str(a.shape()) + " and " +
                     shape_str(b.shape()) + at_line(current_source_location()));
  }
  const bool vector_a = a.shape().size() == 1, vector_b = b.shape().size() == 1;
  Tensor out = apply(OpKind::kMatmul, {vector_a ? unsqueeze(a, 0) : a, vector_b ? unsqueeze(b, 1) : b});
  if (!vector_a && !vector_b) return out;
  Shape shape = out.shape();
  if (vector_b) shape.pop_back();
  if (vector_a) shape.erase(shape.end() - (vector_b ? 1 : 2));
  return reshape(out, shape);
}

Tensor reshape(const Tensor& a, std::vector<int64_t> shape) {
  if (a.defined() && shape == a.shape()) return a;
  return apply(OpKind::kReshape, {a}, {{"shape", std::move(shape)}});
}

Tensor permute(const Tensor& a, std::vector<int64_t> dims) {
  bool identity = true;
  for (size_t i = 0; i < dims.size(); ++i) identity = identity && dims[i] == static_cast<int64_t>(i);
  if (a.defined() && identity && dims.size() == a.shape().size()) return a;
  return apply(OpKind::kPermute, {a}, {{"dims", std::move(dims)}});
}

Tensor expand(const Tensor& a, std::vector<int64_t> shape) {
  if (a.defined() && shape == a.shape()) return a;
  return apply(OpKind::kExpand, {a}, {{"shape", std::move(shape)}});
}

namespace {
// Shape errors of the ops below arise before apply(); they name the line too.
template <typename F>
auto at_call(F&& f) {
  try {
    return f();
  } catch (const ShapeError& e) {
    throw ShapeError(e.what() + at_line(current_source_location()));
  }
}
}  // namespace

Tensor sum_to_size(const Tensor& a, const Shape& shape) {
  const Shape& s = a.shape();
  if (s == shape) return a;
  if (shape.size() > s.size()) {
    throw ShapeError("sum_to_size: cannot sum shape " + shape_str(s) + " to " + shape_str(shape));
  }
  const size_t lead = s.size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i < lead) {
      dims.push_back(static_cast<int64_t>(i));
    } else if (shape[i - lead] == 1 && s[i] != 1) {
      dims.push_back(static_cast<int64_t>(i));
    } else if (shape[i - lead] != s[i]) {
      throw ShapeError("sum_to_size: cannot sum shape " + shape_str(s) + " to " + shape_str(shape));
    }
  }
  return reshape(sum(a, std::move(dims), /*keepdim=*/true), shape);
}

Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  const size_t rank = a.shape().size();
  std::vector<int64_t> dims(rank);
  for (size_t i = 0; i < rank; ++i) dims[i] = static_cast<int64_t>(i);
  if (rank == 0) return a;  // PyTorch accepts dims 0 and -1 of a 0-d tensor
  at_call([&] {
    std::swap(dims[static_cast<size_t>(wrap_dim(dim0, rank, "transpose"))],
              dims[static_cast<size_t>(wrap_dim(dim1, rank, "transpose"))]);
    return 0;
  });
  return permute(a, std::move(dims));
}

Tensor t(const Tensor& a) {
  if (a.shape().size() > 2) {
    throw ShapeError("t(): expects a tensor with at most 2 dimensions, got shape " + shape_str(a.shape()) +
                     at_line(current_source_location()));
  }
  return a.shape().size() < 2 ? a : transpose(a, 0, 1);
}

Tensor squeeze(const Tensor& a, std::optional<int64_t> dim) {
  const Shape& s = a.shape();
  Shape out;
  const int64_t d = dim ? at_call([&] { return wrap_dim(*dim, s.size(), "squeeze"); }) : -1;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool drop = s[i] == 1 && (!dim || static_cast<int64_t>(i) == d);
    if (!drop) out.push_back(s[i]);
  }
  return reshape(a, std::move(out));
}

Tensor unsqueeze(const Tensor& a, int64_t dim) {
  Shape s = a.shape();
  const int64_t d = at_call([&] { return wrap_dim(dim, s.size() + 1, "unsqueeze"); });
  s.insert(s.begin() + d, 1);
  return reshape(a, std::move(s));
}

Tensor flatten(const Tensor& a, int64_t start_dim, int64_t end_dim) {
  const Shape& s = a.shape();
  if (s.empty()) return reshape(a, {1});
  const auto [start, end] = at_call([&] {
    return std::pair{wrap_dim(start_dim, s.size(), "flatten"), wrap_dim(end_dim, s.size(), "flatten")};
  });
  if (start > end) {
    throw ShapeError("flatten: start_dim " + std::to_string(start_dim) + " comes after end_dim " +
                     std::to_string(end_dim) + at_line(current_source_location()));
  }
  Shape out(s.begin(), s.begin() + start);
  int64_t n = 1;
  for (int64_t i = start; i <= end; ++i) n *= s[static_cast<size_t>(i)];
  out.push_back(n);
  out.insert(out.end(), s.begin() + end + 1, s.end());
  return reshape(a, std::move(out));
}
Tensor relu(const Tensor& a) { return apply(OpKind::kRelu, {a}); }

namespace {
Tensor reduce(OpKind op, const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return apply(op, {a}, {{"dims", std::move(dims)}, {"keepdim", keepdim}});
}
std::vector<int64_t> dim_list(std::optional<int64_t> dim) {
  return dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
}
}  // namespace

Tensor sum(const Tensor& a, std::vector<int64_t> dims, bool keepdim) { return reduce(OpKind::kSum, a, std::move(dims), keepdim); }
Tensor mean(const Tensor& a, std::vector<int64_t> dims, bool keepdim) { return reduce(OpKind::kMean, a, std::move(dims), keepdim); }
Tensor prod(const Tensor& a, std::vector<int64_t> dims, bool keepdim) { return reduce(OpKind::kProd, a, std::move(dims), keepdim); }
Tensor amax(const Tensor& a, std::vector<int64_t> dims, bool keepdim) { return reduce(OpKind::kAmax, a, std::move(dims), keepdim); }
Tensor amin(const Tensor& a, std::vector<int64_t> dims, bool keepdim) { return reduce(OpKind::kAmin, a, std::move(dims), keepdim); }
Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) { return reduce(OpKind::kArgmax, a, dim_list(dim), keepdim); }
Tensor argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim) { return reduce(OpKind::kArgmin, a, dim_list(dim), keepdim); }
Tensor logsumexp(const Tensor& a, std::vector<int64_t> dims, bool keepdim) { return reduce(OpKind::kLogsumexp, a, std::move(dims), keepdim); }
Tensor any(const Tensor& a, std::vector<int64_t> dims, bool keepdim) { return reduce(OpKind::kAny, a, std::move(dims), keepdim); }
Tensor all(const Tensor& a, std::vector<int64_t> dims, bool keepdim) { return reduce(OpKind::kAll, a, std::move(dims), keepdim); }
Tensor var(const Tensor& a, std::vector<int64_t> dims, double correction, bool keepdim) {
  return apply(OpKind::kVar, {a}, {{"dims", std::move(dims)}, {"keepdim", keepdim}, {"correction", correction}});
}
Tensor std(const Tensor& a, std::vector<int64_t> dims, double correction, bool keepdim) {
  return sqrt(var(a, std::move(dims), correction, keepdim));
}

Tensor softmax(const Tensor& a, int64_t dim) { return apply(OpKind::kSoftmax, {a}, {{"dim", dim}}); }
Tensor log_softmax(const Tensor& a, int64_t dim) { return apply(OpKind::kLogSoftmax, {a}, {{"dim", dim}}); }

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.size() == 1) return tensors[0];
  return apply(OpKind::kCat, tensors, {{"dim", dim}});
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw ShapeError("stack: expected a non-empty list of tensors" + at_line(current_source_location()));
  const Shape& first = tensors[0].shape();
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].shape() != first) {
      throw ShapeError("stack: expects each tensor to be equal size, but got " + shape_str(first) + " at entry 0 and " +
                       shape_str(tensors[i].shape()) + " at entry " + std::to_string(i) + at_line(current_source_location()));
    }
    parts.push_back(unsqueeze(tensors[i], dim));
  }
  return apply(OpKind::kCat, parts, {{"dim", at_call([&] { return wrap_dim(dim, first.size() + 1, "stack"); })}});
}

Tensor slice(const Tensor& a, std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> steps) {
  bool identity = a.defined() && starts.size() == a.shape().size();
  for (size_t d = 0; identity && d < starts.size(); ++d) {
    identity = starts[d] == 0 && ends[d] == a.shape()[d] && steps[d] == 1;
  }
  if (identity) return a;
  return apply(OpKind::kSlice, {a}, {{"starts", std::move(starts)}, {"ends", std::move(ends)}, {"steps", std::move(steps)}});
}

Tensor narrow(const Tensor& a, int64_t dim, int64_t start, int64_t length) {
  const Shape& s = a.shape();
  const auto d = static_cast<size_t>(at_call([&] { return wrap_dim(dim, s.size(), "narrow"); }));
  if (start < 0 || length < 0 || start + length > s[d]) {
    throw ShapeError("narrow: start " + std::to_string(start) + " and length " + std::to_string(length) +
                     " are out of range for dimension " + std::to_string(d) + " of size " + std::to_string(s[d]) +
                     at_line(current_source_location()));
  }
  std::vector<int64_t> starts(s.size(), 0), ends(s.begin(), s.end()), steps(s.size(), 1);
  starts[d] = start;
  ends[d] = start + length;
  return slice(a, std::move(starts), std::move(ends), std::move(steps));
}

std::vector<Tensor> split(const Tensor& a, const std::vector<int64_t>& sizes, int64_t dim) {
  const Shape& s = a.shape();
  const auto d = static_cast<size_t>(at_call([&] { return wrap_dim(dim, s.size(), "split"); }));
  int64_t total = 0;
  bool negative = false;
  for (int64_t n : sizes) {
    total += n;
    negative = negative || n < 0;
  }
  if (total != s[d] || negative) {
    throw ShapeError("split: sizes " + shape_str(sizes) + " do not sum to the size " + std::to_string(s[d]) +
                     " of dimension " + std::to_string(d) + at_line(current_source_location()));
  }
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t n : sizes) {
    out.push_back(narrow(a, static_cast<int64_t>(d), start, n));
    start += n;
  }
  return out;
}

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim) {
  const Shape& s = a.shape();
  const auto d = static_cast<size_t>(at_call([&] { return wrap_dim(dim, s.size(), "split"); }));
  if (split_size <= 0 && !(split_size == 0 && s[d] == 0)) {
    throw ShapeError("split: split_size must be positive, got " + std::to_string(split_size) +
                     at_line(current_source_location()));
  }
  std::vector<int64_t> sizes;
  for (int64_t start = 0; start < s[d]; start += split_size) sizes.push_back(std::min(split_size, s[d] - start));
  if (sizes.empty()) sizes.push_back(0);
  return split(a, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  if (chunks <= 0) {
    throw ShapeError("chunk: chunks must be positive, got " + std::to_string(chunks) + at_line(current_source_location()));
  }
  const Shape& s = a.shape();
  const auto d = static_cast<size_t>(at_call([&] { return wrap_dim(dim, s.size(), "chunk"); }));
  return split(a, std::max<int64_t>(1, (s[d] + chunks - 1) / chunks), dim);
}

namespace {

// What an index expression selects: the strided slice that its ints and
// slices (and, as full slices, its index tensors) take, the shape after ints
// drop their dims and None adds some, and where in that shape each index
// tensor's dim lies.
struct IndexPlan {
  std::vector<int64_t> starts, ends, steps;
  Shape out;
  std::vector<size_t> positions;  // of the index tensors' dims in `out`
  std::vector<int64_t> dims;      // the same dims in the indexed tensor, for messages
  std::vector<Tensor> tensors;
};

[[noreturn]] void boolean_mask_read(const Tensor& mask) {
  // x[mask] alone is boolean_mask_index (a data-dependent read on the host);
  // a mask combined with other indices is not supported.
  throw IndexError("boolean-mask indexing combined with other indices (mask of shape " + shape_str(mask.shape()) +
                   ") is not supported; index with the mask alone (x[mask]), or use masked_select or where" +
                   at_line(current_source_location()));
}

IndexPlan plan_index(const Tensor& a, const std::vector<IndexItem>& items) {
  using Kind = IndexItem::Kind;
  const Shape& s = a.shape();
  const size_t rank = s.size();
  size_t consumed = 0, ellipses = 0;
  for (const IndexItem& it : items) {
    if (it.kind == Kind::kTensor && it.tensor.dtype() == DType::kBool) boolean_mask_read(it.tensor);
    consumed += it.kind == Kind::kInt || it.kind == Kind::kSlice || it.kind == Kind::kTensor;
    ellipses += it.kind == Kind::kEllipsis;
  }
  if (ellipses > 1) throw IndexError("an index can only have a single ellipsis ('...')" + at_line(current_source_location()));
  if (consumed > rank) {
    throw IndexError("too many indices for tensor of dimension " + std::to_string(rank) + " (got " +
                     std::to_string(consumed) + ")" + at_line(current_source_location()));
  }
  std::vector<IndexItem> full;
  for (const IndexItem& it : items) {
    if (it.kind != Kind::kEllipsis) {
      full.push_back(it);
      continue;
    }
    for (size_t i = consumed; i < rank; ++i) full.push_back(IndexItem{Kind::kSlice, 0, {}, {}, {}, {}});
  }
  if (ellipses == 0) {
    for (size_t i = consumed; i < rank; ++i) full.push_back(IndexItem{Kind::kSlice, 0, {}, {}, {}, {}});
  }
  IndexPlan p;
  size_t d = 0;
  for (const IndexItem& it : full) {
    if (it.kind == Kind::kNone) {
      p.out.push_back(1);
      continue;
    }
    const int64_t size = s[d];
    if (it.kind == Kind::kInt) {
      const int64_t v = it.value < 0 ? it.value + size : it.value;
      if (v < 0 || v >= size) {
        throw IndexError("index " + std::to_string(it.value) + " is out of bounds for dimension " + std::to_string(d) +
                         " with size " + std::to_string(size) + at_line(current_source_location()));
      }
      p.starts.push_back(v);
      p.ends.push_back(v + 1);
      p.steps.push_back(1);
    } else if (it.kind == Kind::kTensor) {
      if (is_floating(it.tensor.dtype())) {
        throw IndexError("tensors used as indices must be integer or bool tensors, got " +
                         std::string(dtype_name(it.tensor.dtype())) + at_line(current_source_location()));
      }
      p.positions.push_back(p.out.size());
      p.dims.push_back(static_cast<int64_t>(d));
      p.tensors.push_back(it.tensor);
      p.starts.push_back(0);
      p.ends.push_back(size);
      p.steps.push_back(1);
      p.out.push_back(size);
    } else {
      const int64_t step = it.step.value_or(1);
      if (step <= 0) throw EngineError("slice: step must be greater than zero" + at_line(current_source_location()));
      const auto clamp_bound = [size](std::optional<int64_t> b, int64_t fallback) {
        if (!b) return fallback;
        const int64_t v = *b < 0 ? *b + size : *b;
        return std::clamp<int64_t>(v, 0, size);
      };
      const int64_t start = clamp_bound(it.start, 0);
      const int64_t end = std::max(start, clamp_bound(it.stop, size));
      p.starts.push_back(start);
      p.ends.push_back(end);
      p.steps.push_back(step);
      p.out.push_back((end - start + step - 1) / step);
    }
    ++d;
  }
  return p;
}

// The advanced part of an index on `y` (the basic part applied): y's
// indexed dims permuted to the front, the indices broadcast to one shape B,
// and the permutation that puts B where PyTorch puts it in the result.
struct AdvancedPlan {
  std::vector<int64_t> perm;  // y's dims: indexed first, then the rest in order
  std::vector<Tensor> indices;
  Shape batch;
  std::vector<int64_t> result_perm;  // kIndex's output (B + rest) -> the result's layout
};

AdvancedPlan plan_advanced(const Tensor& y, const IndexPlan& p) {
  AdvancedPlan a;
  const size_t rank = y.shape().size();
  Shape batch = p.tensors[0].shape();
  for (size_t j = 1; j < p.tensors.size(); ++j) {
    try {
      batch = broadcast_shapes(batch, p.tensors[j].shape(), "index");
    } catch (const ShapeError&) {
      std::string shapes;
      for (const Tensor& t : p.tensors) shapes += (shapes.empty() ? "" : ", ") + shape_str(t.shape());
      throw IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes " + shapes +
                       at_line(current_source_location()));
    }
  }
  a.batch = batch;
  for (const Tensor& t : p.tensors) {
    Tensor i = t.device() == y.device() ? t : t.to(y.device());
    a.indices.push_back(expand(cast(i, DType::kInt64), batch));
  }
  std::vector<bool> indexed(rank, false);
  for (size_t pos : p.positions) {
    a.perm.push_back(static_cast<int64_t>(pos));
    indexed[pos] = true;
  }
  for (size_t d = 0; d < rank; ++d) {
    if (!indexed[d]) a.perm.push_back(static_cast<int64_t>(d));
  }
  bool adjacent = true;
  for (size_t j = 1; j < p.positions.size(); ++j) adjacent = adjacent && p.positions[j] == p.positions[j - 1] + 1;
  // Adjacent indexed dims are replaced in place by B; otherwise B goes first.
  const size_t insert_at = adjacent ? p.positions[0] : 0;
  const size_t nb = batch.size(), rest = rank - p.positions.size();
  for (size_t i = 0; i < insert_at; ++i) a.result_perm.push_back(static_cast<int64_t>(nb + i));
  for (size_t i = 0; i < nb; ++i) a.result_perm.push_back(static_cast<int64_t>(i));
  for (size_t i = insert_at; i < rest; ++i) a.result_perm.push_back(static_cast<int64_t>(nb + i));
  return a;
}

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inverse;
}

std::vector<Tensor> index_operands(Tensor self, const std::vector<Tensor>& indices) {
  std::vector<Tensor> operands{std::move(self)};
  operands.insert(operands.end(), indices.begin(), indices.end());
  return operands;
}

// Whether `from` broadcasts to exactly `to` (as values assigned to a selection must).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != 1 && f != t) return false;
  }
  return true;
}

Shape slice_shape_of(const IndexPlan& p) {
  Shape shape;
  for (size_t d = 0; d < p.starts.size(); ++d) shape.push_back((p.ends[d] - p.starts[d] + p.steps[d] - 1) / p.steps[d]);
  return shape;
}

}  // namespace

Tensor index(const Tensor& a, const std::vector<IndexItem>& items) {
  IndexPlan p = plan_index(a, items);
  const Tensor y = reshape(slice(a, p.starts, p.ends, p.steps), p.out);
  if (p.tensors.empty()) return y;
  const AdvancedPlan adv = plan_advanced(y, p);
  const Tensor picked = apply(OpKind::kIndex, index_operands(permute(y, adv.perm), adv.indices), {{"dims", p.dims}});
  return permute(picked, adv.result_perm);
}

Tensor index_put(const Tensor& self, const std::vector<IndexItem>& items, const Tensor& values, bool accumulate) {
  const Shape& s = self.shape();
  Tensor v = values.device() == self.device() || !values.shape().empty() ? values : values.to(self.device());
  v = cast(v, self.dtype());
  const bool has_mask = std::any_of(items.begin(), items.end(), [](const IndexItem& it) {
    return it.kind == IndexItem::Kind::kTensor && it.tensor.dtype() == DType::kBool;
  });
  if (has_mask) {
    // x[mask] = v is a where(): no data-dependent shape, as long as v does
    // not need to know how many elements the mask selects.
    if (items.size() != 1) {
      throw IndexError("index_put: a boolean mask combined with other indices is not supported in an assignment; "
                       "use where()" + at_line(current_source_location()));
    }
    const Tensor& mask = items[0].tensor;
    const Shape& m = mask.shape();
    if (m.size() > s.size() || !std::equal(m.begin(), m.end(), s.begin())) {
      throw IndexError("index_put: the shape of the mask " + shape_str(m) + " does not match the shape of the indexed tensor " +
                       shape_str(s) + at_line(current_source_location()));
    }
    const Shape trailing(s.begin() + static_cast<std::ptrdiff_t>(m.size()), s.end());
    const bool fits = broadcasts_to(v.shape(), trailing);
    if (!fits) {
      throw ShapeError("index_put: values of shape " + shape_str(v.shape()) + " for a boolean mask of shape " + shape_str(m) +
                       " on a tensor of shape " + shape_str(s) + ": only values that broadcast to the unmasked dims " +
                       shape_str(trailing) + " are supported (one value per selected element is data dependent)" +
                       at_line(current_source_location()));
    }
    Shape mask_shape = m;
    mask_shape.resize(s.size(), 1);
    const Tensor new_value = accumulate ? add(self, v) : v;
    return where(reshape(mask.device() == self.device() ? mask : mask.to(self.device()), mask_shape), new_value, self);
  }
  IndexPlan p = plan_index(self, items);
  const Tensor y = reshape(slice(self, p.starts, p.ends, p.steps), p.out);
  Tensor new_y;
  const auto fit_values = [&](const Shape& target) {
    const bool fits = broadcasts_to(v.shape(), target);
    if (!fits) {
      throw ShapeError("index_put: shape mismatch: value tensor of shape " + shape_str(v.shape()) +
                       " cannot be broadcast to indexing result of shape " + shape_str(target) +
                       at_line(current_source_location()));
    }
    return expand(v, target);
  };
  if (p.tensors.empty()) {
    const Tensor region = fit_values(p.out);
    new_y = accumulate ? add(y, region) : region;
  } else {
    const AdvancedPlan adv = plan_advanced(y, p);
    Shape picked_shape = adv.batch;
    for (size_t i = p.positions.size(); i < adv.perm.size(); ++i) {
      picked_shape.push_back(y.shape()[static_cast<size_t>(adv.perm[i])]);
    }
    Shape result_shape;
    for (int64_t d : adv.result_perm) result_shape.push_back(picked_shape[static_cast<size_t>(d)]);
    const Tensor in_layout = permute(fit_values(result_shape), inverse_permutation(adv.result_perm));
    std::vector<Tensor> operands{permute(y, adv.perm), in_layout};
    operands.insert(operands.end(), adv.indices.begin(), adv.indices.end());
    const Tensor put = apply(OpKind::kIndexPut, operands, {{"dims", p.dims}, {"accumulate", accumulate}});
    new_y = permute(put, inverse_permutation(adv.perm));
  }
  const Shape sliced = slice_shape_of(p);
  if (sliced == s) return reshape(new_y, s);
  return slice_scatter(self, reshape(new_y, sliced), p.starts, p.ends, p.steps);
}

namespace {
Tensor as_index(const Tensor& index) {
  return index.defined() && !is_floating(index.dtype()) && index.dtype() != DType::kBool ? cast(index, DType::kInt64)
                                                                                            : index;
}
}  // namespace

Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index) {
  return apply(OpKind::kIndexSelect, {a, as_index(index)}, {{"dim", dim}});
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  return apply(OpKind::kIndexAdd, {self, as_index(index), cast(source, self.dtype())}, {{"dim", dim}});
}

Tensor embedding(const Tensor& indices, const Tensor& weight, std::optional<int64_t> padding_idx) {
  if (weight.shape().size() != 2) {
    throw ShapeError("embedding: expected a weight of shape [num_embeddings, embedding_dim], got " +
                     shape_str(weight.shape()) + at_line(current_source_location()));
  }
  if (is_floating(indices.dtype()) || indices.dtype() == DType::kBool) {
    throw EngineError("embedding: expected integer indices, got " + std::string(dtype_name(indices.dtype())) +
                      at_line(current_source_location()));
  }
  const Tensor flat = reshape(indices, {-1});
  Tensor rows;
  try {
    rows = index_select(weight, 0, flat);
  } catch (const IndexError& e) {
    throw IndexError("embedding: " + std::string(e.what()));
  }
  if (padding_idx) {
    // The padding row's value, without a gradient path to the weight.
    const int64_t pad = *padding_idx < 0 ? *padding_idx + weight.shape()[0] : *padding_idx;
    const Tensor kept = unsqueeze(ne(flat, wrapped_int(pad, flat.device())), 1);
    rows = where(kept, rows, index_select(weight.detach(), 0, flat));
  }
  Shape out = indices.shape();
  out.push_back(weight.shape()[1]);
  return reshape(rows, out);
}

namespace {
// A 0-d operand as one element of a 1-d tensor, for the ops along a dim (PyTorch accepts dim 0 or -1).
Tensor as_1d(const Tensor& t) { return t.shape().empty() ? reshape(t, {1}) : t; }
Tensor back_to(const Tensor& out, const Tensor& like) { return like.shape().empty() ? reshape(out, {}) : out; }

Tensor scatter_op(OpKind op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  const Tensor out = apply(op, {as_1d(self), as_1d(as_index(index)), as_1d(cast(src, self.dtype()))}, {{"dim", dim}});
  return back_to(out, self);
}
}  // namespace

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) {
  return back_to(apply(OpKind::kGather, {as_1d(a), as_1d(as_index(index))}, {{"dim", dim}}), index);
}
Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op(OpKind::kScatter, self, dim, index, src);
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_op(OpKind::kScatterAdd, self, dim, index, src);
}

Tensor slice_scatter(const Tensor& self, const Tensor& src, std::vector<int64_t> starts, std::vector<int64_t> ends,
                     std::vector<int64_t> steps) {
  return apply(OpKind::kSliceScatter, {self, cast(src, self.dtype())},
               {{"starts", std::move(starts)}, {"ends", std::move(ends)}, {"steps", std::move(steps)}});
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  if (mask.dtype() != DType::kBool) {
    throw EngineError("masked_fill: expected a bool mask, got " + std::string(dtype_name(mask.dtype())) +
                      at_line(current_source_location()));
  }
  if (!value.shape().empty()) {
    throw ShapeError("masked_fill: only supports a 0-dimensional value tensor, got shape " + shape_str(value.shape()) +
                     at_line(current_source_location()));
  }
  if (!broadcasts_to(mask.shape(), self.shape())) {
    throw ShapeError("masked_fill: the mask of shape " + shape_str(mask.shape()) +
                     " does not broadcast to the tensor's shape " + shape_str(self.shape()) +
                     at_line(current_source_location()));
  }
  const Tensor v = value.device() == self.device() ? value : value.to(self.device());
  return where(mask, cast(v, self.dtype()), self);
}

Tensor argsort(const Tensor& a, int64_t dim, bool descending) {
  return back_to(apply(OpKind::kArgsort, {as_1d(a)}, {{"dim", dim}, {"descending", descending}}), a);
}

std::pair<Tensor, Tensor> sort(const Tensor& a, int64_t dim, bool descending) {
  const Tensor order = argsort(a, dim, descending);
  return {gather(a, dim, order), order};
}

std::pair<Tensor, Tensor> topk(const Tensor& a, int64_t k, int64_t dim, bool largest) {
  const Shape s = as_1d(a).shape();
  const auto d = static_cast<size_t>(at_call([&] { return wrap_dim(dim, s.size(), "topk"); }));
  if (k < 0 || k > s[d]) {
    throw IndexError("topk: k = " + std::to_string(k) + " is out of range for dimension " + std::to_string(d) +
                     " of size " + std::to_string(s[d]) + at_line(current_source_location()));
  }
  const Tensor order = back_to(narrow(argsort(as_1d(a), dim, largest), static_cast<int64_t>(d), 0, k), a);
  return {gather(a, dim, order), order};
}

Tensor cumsum(const Tensor& a, int64_t dim) { return back_to(apply(OpKind::kCumsum, {as_1d(a)}, {{"dim", dim}}), a); }
Tensor cumprod(const Tensor& a, int64_t dim) { return back_to(apply(OpKind::kCumprod, {as_1d(a)}, {{"dim", dim}}), a); }
Tensor tril(const Tensor& a, int64_t diagonal) { return apply(OpKind::kTril, {a}, {{"diagonal", diagonal}}); }
Tensor triu(const Tensor& a, int64_t diagonal) { return apply(OpKind::kTriu, {a}, {{"diagonal", diagonal}}); }

Tensor all_reduce(const Tensor& a, ReduceKind kind, double scale, int64_t group) {
  if (!a.device().is_lazy()) {
    // The eager device would run the kernel now, outside any replica's graph.
    throw DeviceMismatchError("all_reduce: expected a tensor on a replica's lazy device, got one on " +
                              a.device().str() + at_line(current_source_location()));
  }
  return apply(OpKind::kAllReduce, {a},
               {{"reduce", static_cast<int64_t>(kind)}, {"scale", scale}, {"group", group}});
}

Tensor constant(BufferPtr buffer, const Device& device) { return Tensor::wrap(std::move(buffer), device); }

Tensor one_hot(const Tensor& a, int64_t num_classes) {
  return apply(OpKind::kOneHot, {a}, {{"num_classes", num_classes}});
}

namespace {
// A data-dependent op: `fn` on host buffers. On the eager device it simply
// runs; on a lazy device it is a DATA_DEPENDENT fallback.
std::vector<Tensor> host_op(const char* op, const std::vector<Tensor>& inputs, const executor::HostFn& fn) {
  for (const Tensor& t : inputs) {
    if (!t.defined()) throw EngineError(std::string(op) + ": undefined tensor operand");
  }
  check_same_device(OpKind::kDeviceData, inputs);
  if (inputs[0].device().is_lazy()) {
    return executor::run_on_host(op, pb::FALLBACK_REASON_DATA_DEPENDENT, inputs[0].dtype(), inputs, fn);
  }
  std::vector<const Buffer*> buffers;
  for (const Tensor& t : inputs) buffers.push_back(t.impl()->buffer.get());
  std::vector<Tensor> out;
  for (BufferPtr& b : fn(buffers)) out.push_back(Tensor::wrap(std::move(b), inputs[0].device()));
  return out;
}

void check_bool_mask(const char* op, const Tensor& mask) {
  if (mask.defined() && mask.dtype() != DType::kBool) {
    throw EngineError(std::string(op) + ": expected a bool mask, got " + std::string(dtype_name(mask.dtype())) +
                      "; compare to get one (x > 0) or convert it with .bool()" + at_line(current_source_location()));
  }
}

// Flat positions of the true elements of a bool mask: int64 [K].
Tensor true_positions(const char* op, const Tensor& mask) {
  return host_op(op, {mask}, [](const std::vector<const Buffer*>& in) -> std::vector<BufferPtr> {
    return {cpu::flat_nonzero_indices(*in[0])};
  })[0];
}
}  // namespace

Tensor nonzero(const Tensor& a) {
  return host_op("nonzero", {a}, [](const std::vector<const Buffer*>& in) -> std::vector<BufferPtr> {
    return {cpu::nonzero_indices(*in[0])};
  })[0];
}

std::vector<Tensor> nonzero_tuple(const Tensor& a) {
  return host_op("nonzero", {a}, [](const std::vector<const Buffer*>& in) -> std::vector<BufferPtr> {
    const BufferPtr all = cpu::nonzero_indices(*in[0]);
    const int64_t k = all->shape()[0], rank = all->shape()[1];
    std::vector<BufferPtr> out;
    for (int64_t d = 0; d < rank; ++d) {
      BufferPtr column = Buffer::allocate(DType::kInt64, {k});
      for (int64_t i = 0; i < k; ++i) column->as<int64_t>()[i] = all->as<int64_t>()[i * rank + d];
      out.push_back(std::move(column));
    }
    return out;
  });
}

Tensor masked_select(const Tensor& a, const Tensor& mask) {
  if (!a.defined() || !mask.defined()) throw EngineError("masked_select: undefined tensor operand");
  check_bool_mask("masked_select", mask);
  const Shape shape =
      at_call([&] { return broadcast_shapes(a.shape(), mask.shape(), "masked_select"); });
  // Only the mask leaves the device; the selection itself is an index_select
  // on the device, whose gradient scatters back into `a`.
  const Tensor positions = true_positions("masked_select", expand(mask, shape));
  return index_select(reshape(expand(a, shape), {-1}), 0, positions);
}

Tensor boolean_mask_index(const Tensor& a, const Tensor& mask) {
  if (!a.defined() || !mask.defined()) throw EngineError("index: undefined tensor operand");
  check_bool_mask("index", mask);
  const Shape& s = a.shape();
  const Shape& m = mask.shape();
  if (m.size() > s.size()) {
    throw IndexError("too many indices for tensor of dimension " + std::to_string(s.size()) + " (a boolean mask of " +
                     std::to_string(m.size()) + " dims)" + at_line(current_source_location()));
  }
  for (size_t d = 0; d < m.size(); ++d) {
    if (m[d] != s[d]) {
      throw IndexError("the shape of the mask " + shape_str(m) + " at index " + std::to_string(d) +
                       " does not match the shape of the indexed tensor " + shape_str(s) + " at index " +
                       std::to_string(d) + at_line(current_source_location()));
    }
  }
  Shape rows{numel(m)};
  rows.insert(rows.end(), s.begin() + static_cast<std::ptrdiff_t>(m.size()), s.end());
  return index_select(reshape(a, rows), 0, true_positions("masked_select", mask));
}

UniqueResult unique(const Tensor& a) {
  std::vector<Tensor> out = host_op("unique", {a}, [](const std::vector<const Buffer*>& in) -> std::vector<BufferPtr> {
    cpu::UniqueResult r = cpu::unique_values(*in[0]);
    return {r.values, r.inverse, r.counts};
  });
  return {out[0], out[1], out[2]};
}

namespace {
Tensor num_like(double v, const Tensor& like) { return scalar(v, like.dtype(), like.device()); }

Tensor reduce_loss(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::kNone: return loss;
    case Reduction::kMean: return mean(loss);
    case Reduction::kSum: return sum(loss);
  }
  return loss;
}

// Integer class targets as int64; a float target is left to the op's check.
Tensor class_targets(const Tensor& target) {
  return is_floating(target.dtype()) || target.dtype() == DType::kBool ? target : cast(target, DType::kInt64);
}
}  // namespace

namespace {
// The class weights as a [C] tensor of the input's dtype; ShapeError otherwise.
Tensor class_weights(const char* op, const Tensor& weight, const Tensor& input, int64_t classes) {
  if (weight.shape().size() != 1 || weight.shape()[0] != classes) {
    throw ShapeError(std::string(op) + ": expected a weight of shape [" + std::to_string(classes) + "] (one per class), got " +
                     shape_str(weight.shape()) + at_line(current_source_location()));
  }
  if (!is_floating(weight.dtype())) {
    throw EngineError(std::string(op) + ": expected a floating point weight, got " + std::string(dtype_name(weight.dtype())) +
                      at_line(current_source_location()));
  }
  return cast(weight, input.dtype());
}

// Per sample, the weight of its target class; 0 for ignored targets. The
// index is clamped into range so that an out-of-range target is reported by
// nll_loss's own check, not by this gather.
Tensor target_weights(const Tensor& weight, const Tensor& target, const Tensor& kept, int64_t classes) {
  const Tensor safe = clamp(where(kept, target, scalar(0, DType::kInt64, target.device())), 0.0,
                            static_cast<double>(classes - 1));
  return where(kept, index_select(weight, 0, safe), scalar(0, weight.dtype(), weight.device()));
}
}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, Reduction reduction, int64_t ignore_index, const Tensor& weight) {
  const Attrs attrs{{"reduction", static_cast<int64_t>(reduction)}, {"ignore_index", ignore_index}};
  if (input.defined() && target.defined() && input.shape().size() == 1 && target.shape().empty()) {
    const Tensor out = nll_loss(unsqueeze(input, 0), unsqueeze(class_targets(target), 0), reduction, ignore_index, weight);
    return reduction == Reduction::kNone ? reshape(out, {}) : out;
  }
  if (!weight.defined()) {
    return apply(OpKind::kNllLoss, {input, target.defined() ? class_targets(target) : target}, attrs);
  }
  const Tensor t = class_targets(target);
  // Unweighted per-sample losses first: they check the shapes and the target values.
  const Tensor per = apply(OpKind::kNllLoss, {input, t},
                           {{"reduction", static_cast<int64_t>(Reduction::kNone)}, {"ignore_index", ignore_index}});
  const int64_t classes = input.shape()[1];
  const Tensor w = target_weights(class_weights("nll_loss", weight, input, classes), t,
                                  ne(t, wrapped_int(ignore_index, t.device())), classes);
  const Tensor loss = mul(per, w);
  switch (reduction) {
    case Reduction::kNone: return loss;
    case Reduction::kSum: return sum(loss);
    case Reduction::kMean: return div(sum(loss), sum(w));  // all ignored: 0/0, NaN, as PyTorch
  }
  return loss;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, Reduction reduction, int64_t ignore_index,
                     double label_smoothing, const Tensor& weight) {
  if (label_smoothing < 0.0 || label_smoothing > 1.0) {
    throw EngineError("cross_entropy: label_smoothing must be in [0, 1], got " + std::to_string(label_smoothing));
  }
  const Shape& s = input.shape();
  if (s.empty() || s.size() > 2) {
    throw ShapeError("cross_entropy: expected input [N, C] or [C], got " + shape_str(s) +
                     at_line(current_source_location()));
  }
  const int64_t class_dim = s.size() == 2 ? 1 : 0;
  const Tensor logp = log_softmax(input, class_dim);
  const int64_t n_classes = s[static_cast<size_t>(class_dim)];
  const auto classes = static_cast<double>(n_classes);
  const Tensor w = weight.defined() ? class_weights("cross_entropy", weight, logp, n_classes) : Tensor();
  // logp scaled by the class weights (broadcast along the class dim).
  const Tensor weighted_logp = w.defined() ? mul(logp, w) : logp;
  if (is_floating(target.dtype())) {  // class probabilities
    if (target.shape() != s) {
      throw ShapeError("cross_entropy: probability targets must have the input's shape " + shape_str(s) + ", got " +
                       shape_str(target.shape()) + at_line(current_source_location()));
    }
    Tensor p = target;
    if (label_smoothing > 0) {
      p = add(mul(p, num_like(1 - label_smoothing, p)), num_like(label_smoothing / classes, p));
    }
    return reduce_loss(neg(sum(mul(p, weighted_logp), {class_dim})), reduction);
  }
  Tensor loss = nll_loss(logp, target, reduction, ignore_index, w);
  if (label_smoothing <= 0) return loss;
  const Tensor t = class_targets(target);
  const Tensor mask = ne(t, wrapped_int(ignore_index, target.device()));
  Tensor smooth = where(mask, neg(sum(weighted_logp, {class_dim})), num_like(0, logp));
  if (reduction == Reduction::kMean) {
    // Divided as the nll term is: by the weights of the targets kept (their count without weights).
    const Tensor denominator =
        w.defined() ? sum(target_weights(w, s.size() == 1 ? unsqueeze(t, 0) : t, s.size() == 1 ? unsqueeze(mask, 0) : mask, n_classes))
                    : sum(cast(mask, logp.dtype()));
    smooth = div(sum(smooth), denominator);
  } else if (reduction == Reduction::kSum) {
    smooth = sum(smooth);
  }
  return add(mul(loss, num_like(1 - label_smoothing, loss)), mul(smooth, num_like(label_smoothing / classes, smooth)));
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  const Tensor d = sub(input, target);
  return reduce_loss(mul(d, d), reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight, Reduction reduction) {
  if (input.shape() != target.shape()) {
    throw ShapeError("binary_cross_entropy: target of shape " + shape_str(target.shape()) +
                     " for an input of shape " + shape_str(input.shape()) + at_line(current_source_location()));
  }
  const Tensor log_p = clamp(log(input), -100.0, std::nullopt);
  const Tensor log_q = clamp(log(sub(num_like(1, input), input)), -100.0, std::nullopt);
  Tensor loss = neg(add(mul(target, log_p), mul(sub(num_like(1, target), target), log_q)));
  if (weight.defined()) loss = mul(loss, weight);
  return reduce_loss(loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target, const Tensor& weight,
                                        Reduction reduction, const Tensor& pos_weight) {
  if (input.shape() != target.shape()) {
    throw ShapeError("binary_cross_entropy_with_logits: target of shape " + shape_str(target.shape()) +
                     " for an input of shape " + shape_str(input.shape()) + at_line(current_source_location()));
  }
  Tensor log_weight = num_like(1, input);
  if (pos_weight.defined()) log_weight = add(num_like(1, input), mul(sub(pos_weight, num_like(1, input)), target));
  Tensor loss = add(mul(sub(num_like(1, target), target), input), mul(log_weight, softplus(neg(input))));
  if (weight.defined()) loss = mul(loss, weight);
  return reduce_loss(loss, reduction);
}

Tensor scalar(double value, DType dtype, const Device& device) {
  BufferPtr f64 = Buffer::allocate(DType::kFloat64, {});
  *f64->as<double>() = value;
  BufferPtr buffer = Buffer::allocate(dtype, {});
  const Buffer* in = f64.get();
  cpu::find_kernel(OpKind::kCast, dtype)(cpu::KernelArgs{std::span<const Buffer* const>(&in, 1), *buffer, Attrs{}});
  // A scalar leaf: its hash is shape and dtype only, so the value is an input.
  return Tensor::wrap(std::move(buffer), device);
}

Tensor wrapped_float(double value, const Device& device) {
  Tensor t = scalar(value, DType::kFloat64, device);
  t.impl()->wrapped_number = true;
  return t;
}

Tensor wrapped_int(int64_t value, const Device& device) {
  BufferPtr buffer = Buffer::allocate(DType::kInt64, {});
  *buffer->as<int64_t>() = value;
  Tensor t = Tensor::wrap(std::move(buffer), device);
  t.impl()->wrapped_number = true;
  return t;
}

Tensor wrapped_bool(bool value, const Device& device) {
  Tensor t = scalar(value ? 1.0 : 0.0, DType::kBool, device);
  t.impl()->wrapped_number = true;
  return t;
}

}  // namespace lazyscope::ops
