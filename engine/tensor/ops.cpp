// The ops' entry points: apply() (promotion, devices, eager or lazy, autograd),
// elementwise, matmul, reductions, collectives and scalar constants. Shape
// ops live in ops_shape.cpp, indexing in ops_index.cpp, losses in ops_loss.cpp,
// conv/pool/norm in ops_nn.cpp.
#include "tensor/ops.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>

#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/pool.h"
#include "core/source_location.h"
#include "metrics/metrics.h"
#include "tensor/ops_internal.h"
#include "tensor/upcalls.h"
#include "tensor/views.h"

namespace lazyscope::ops {
using detail::at_line;
using detail::check_same_device;
namespace {

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
    case Promote::kIntegral: {
      const DType common = common_type(inputs, 0);
      if (is_floating(common)) {
        std::string got;
        for (const Tensor& t : inputs) got += (got.empty() ? "" : " and ") + std::string(dtype_name(t.dtype()));
        throw EngineError(std::string(op_name(op)) + ": expected integer or bool operands, got " + got +
                          " (bitwise ops are not defined for floating point)" + at_line(current_source_location()));
      }
      std::fill(out.begin(), out.end(), common);
      break;
    }
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

// True when promotion leaves every operand as it is: one dtype, no wrapped
// number, and the op's rule keeps that dtype. Most ops of a training step;
// they skip the dtype vectors of the general path.
template <typename Tensors> bool promotion_is_identity(OpKind op, const Tensors& inputs) {
  if (inputs.size() == 0) return true;
  const DType first = inputs.begin()->dtype();
  bool uniform = true, floating = true;
  for (const Tensor& t : inputs) {
    uniform = uniform && t.dtype() == first && !t.impl()->wrapped_number;
    floating = floating && is_floating(t.dtype());
  }
  switch (op_info(op).promote) {
    case Promote::kNone: return true;
    case Promote::kCommon: return uniform;
    case Promote::kCommonFloat: return uniform && is_floating(first);
    case Promote::kFloatOnly: return floating;
    case Promote::kToBool: return uniform && first == DType::kBool;
    case Promote::kIntegral: return uniform && !is_floating(first);
    case Promote::kWhere:
    case Promote::kIntToLong: return false;
  }
  return false;
}

void promote_operands(OpKind op, std::vector<Tensor>& inputs) {
  if (promotion_is_identity(op, inputs)) return;
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

namespace {
Tensor apply_to(OpKind op, std::vector<Tensor>& inputs, Attrs attrs);
}  // namespace

Tensor apply(OpKind op, std::vector<Tensor> inputs, Attrs attrs) { return apply_to(op, inputs, std::move(attrs)); }

namespace {
// The trace's fast path: one to three operands, all lazy tensors on one
// device, no view, none needing a gradient (so autograd records nothing),
// and promotion changing nothing. Most ops of a forward pass without
// parameters, of an optimizer update under no_grad, of any chain like
// engine_bench's cached step. The node, its hash and the registration are
// apply_to's; skipped are only the copies the general path makes (the
// operand vector, shared_ptr copies of every operand) and checks that
// cannot fire. False: take the general path (which also raises any error
// with the user's line).
bool trace_directly(OpKind op, std::span<const Tensor* const> in, Attrs& attrs, Tensor& out) {
  const size_t n = in.size();
  if (n == 0 || n > 3 || !in[0]->defined()) return false;
  const Device& device = in[0]->device();
  if (!device.is_lazy()) return false;
  std::array<const TensorSpec*, 3> specs{};
  bool uniform = true, floating = true, any_tensor = false;
  for (size_t i = 0; i < n; ++i) {
    const TensorImpl* t = in[i]->impl().get();
    if (!t || t->view || t->device != device || t->grad_fn || t->requires_grad || !t->ir) return false;
    specs[i] = &t->spec;
    uniform = uniform && t->spec.dtype == specs[0]->dtype;
    any_tensor = any_tensor || !t->wrapped_number;
    floating = floating && is_floating(t->spec.dtype);
  }
  // A wrapped number of the other operands' dtype promotes to nothing when
  // some operand is not one (result_type: a number's category never exceeds
  // a tensor's of the same dtype), e.g. the optimizers' `buf * momentum`
  // with the number already in the parameter's dtype. Numbers alone (their
  // floats count as float32) take the general path.
  uniform = uniform && any_tensor;
  // promotion_is_identity's rule, on the specs at hand.
  switch (op_info(op).promote) {
    case Promote::kNone: break;
    case Promote::kCommon:
      if (!uniform) return false;
      break;
    case Promote::kCommonFloat:
      if (!uniform || !floating) return false;
      break;
    case Promote::kFloatOnly:
      if (!floating) return false;
      break;
    case Promote::kToBool:
      if (!uniform || specs[0]->dtype != DType::kBool) return false;
      break;
    case Promote::kIntegral:
      if (!uniform || floating) return false;  // a float operand takes the general path's error
      break;
    case Promote::kWhere:
    case Promote::kIntToLong: return false;
  }
  const SourceLocation source = current_source_location();
  const std::string* scope = current_scope();
  // The previous step's node for the same op on the same operand nodes (its
  // spec and hashes are this op's): no node, no inference, no hashing.
  std::array<const Node*, 3> operand_nodes{};
  for (size_t i = 0; i < n; ++i) operand_nodes[i] = in[i]->impl()->ir.get();
  size_t slot = kNoTraceSlot;
  if (executor::trace_reused(device, op, std::span<const Node* const>(operand_nodes.data(), n), attrs, source, scope,
                             &slot, out)) {
    return true;
  }
  TensorSpec spec;
  pool::unstash_vector(spec.shape);  // a dead node's or tensor's storage: no allocation
  bool shape_of_first = false;
  try {
    shape_of_first = infer_spec_into(op, std::span<const TensorSpec* const>(specs.data(), n), attrs, spec);
  } catch (const EngineError&) {
    return false;
  }
  if (executor::fallback_reason(op, spec.dtype) != pb::FALLBACK_REASON_UNSPECIFIED) return false;
  std::array<NodePtr, 3> operands;
  for (size_t i = 0; i < n; ++i) operands[i] = in[i]->impl()->ir;
  // The node takes the operand references over (no second count per operand).
  out = Tensor::lazy(make_node_moving(op, std::span<NodePtr>(operands.data(), n), std::move(spec), std::move(attrs),
                                      source, scope, shape_of_first),
                     device, slot);
  return true;
}

// apply() of operands given by address: an op called as add(a, b) copies
// no Tensor (each copy is two atomic reference-count updates) unless it
// takes the general path.
Tensor apply_general(OpKind op, std::initializer_list<Tensor> inputs, Attrs attrs);

template <size_t N> Tensor apply_refs(OpKind op, const std::array<const Tensor*, N>& in, Attrs attrs = {}) {
  if (Tensor out; trace_directly(op, in, attrs, out)) return out;
  if constexpr (N == 1) {
    return apply_general(op, {*in[0]}, std::move(attrs));
  } else if constexpr (N == 2) {
    return apply_general(op, {*in[0], *in[1]}, std::move(attrs));
  } else {
    return apply_general(op, {*in[0], *in[1], *in[2]}, std::move(attrs));
  }
}
Tensor unary(OpKind op, const Tensor& a) { return apply_refs<1>(op, {&a}); }
Tensor binary(OpKind op, const Tensor& a, const Tensor& b) { return apply_refs<2>(op, {&a, &b}); }
}  // namespace

Tensor apply(OpKind op, std::initializer_list<Tensor> inputs, Attrs attrs) {
  std::array<const Tensor*, 3> refs{};
  if (inputs.size() <= refs.size()) {
    for (size_t i = 0; i < inputs.size(); ++i) refs[i] = inputs.begin() + i;
    if (Tensor out; trace_directly(op, std::span<const Tensor* const>(refs.data(), inputs.size()), attrs, out)) {
      return out;
    }
  }
  return apply_general(op, inputs, std::move(attrs));
}

namespace {
Tensor apply_general(OpKind op, std::initializer_list<Tensor> inputs, Attrs attrs) {
  // Taken while in use, so an apply() nested in this one (a promotion's
  // cast) gets a scratch of its own; the operands are released on return.
  static thread_local std::vector<Tensor> t_inputs;
  struct Scratch {
    std::vector<Tensor> inputs = std::move(t_inputs);
    ~Scratch() {
      inputs.clear();
      t_inputs = std::move(inputs);
    }
  } scratch;
  scratch.inputs.assign(inputs.begin(), inputs.end());
  return apply_to(op, scratch.inputs, std::move(attrs));
}
}  // namespace

namespace {
// `inputs` is the caller's to change: promotion replaces operands in it.
Tensor apply_to(OpKind op, std::vector<Tensor>& inputs, Attrs attrs) {
  for (const Tensor& t : inputs) {
    if (!t.defined()) throw EngineError(std::string(op_name(op)) + ": undefined tensor operand");
    views::refresh_if_view(t);  // a view whose base was written in place since
  }
  check_same_device(op, inputs);
  promote_operands(op, inputs);
  // The operands' own specs, by pointer (no copy of their shapes).
  std::array<const TensorSpec*, 3> few_specs{};
  std::vector<const TensorSpec*> many_specs;
  std::span<const TensorSpec* const> specs;
  if (inputs.size() <= few_specs.size()) {
    for (size_t i = 0; i < inputs.size(); ++i) few_specs[i] = &inputs[i].impl()->spec;
    specs = std::span<const TensorSpec* const>(few_specs.data(), inputs.size());
  } else {
    for (const Tensor& t : inputs) many_specs.push_back(&t.impl()->spec);
    specs = many_specs;
  }
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
    // Up to three operands on the stack: no vector per op.
    std::array<NodePtr, 3> few;
    std::vector<NodePtr> many;
    std::span<const NodePtr> operands;
    if (inputs.size() <= few.size()) {
      for (size_t i = 0; i < inputs.size(); ++i) few[i] = inputs[i].impl()->ir;
      operands = std::span<const NodePtr>(few.data(), inputs.size());
    } else {
      for (const Tensor& t : inputs) many.push_back(t.impl()->ir);
      operands = many;
    }
    const NodePtr node = make_node(op, operands, std::move(spec), std::move(attrs), current_source_location(),
                                   current_scope());
    // `node` is held here because registering `out` may run the graph (the
    // node limit) and rebind `out` to a leaf, releasing the node and with
    // it the attributes record() reads.
    out = Tensor::lazy(node, device);
    autograd::record(op, inputs, node->attrs(), out);
    return out;
  }
  autograd::record(op, inputs, attrs, out);
  return out;
}
}  // namespace

Tensor cast(const Tensor& a, DType dtype) {
  if (a.dtype() == dtype) return a;
  return apply(OpKind::kCast, {a}, {{"dtype", static_cast<int64_t>(dtype)}});
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(OpKind::kAdd, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(OpKind::kSub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(OpKind::kMul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(OpKind::kDiv, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary(OpKind::kPow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(OpKind::kMaximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(OpKind::kMinimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return binary(OpKind::kEq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return binary(OpKind::kNe, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return binary(OpKind::kLt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return binary(OpKind::kLe, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return binary(OpKind::kGt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return binary(OpKind::kGe, a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(OpKind::kLogicalAnd, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(OpKind::kLogicalOr, a, b); }
Tensor logical_not(const Tensor& a) { return unary(OpKind::kLogicalNot, a); }
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  return apply_refs<3>(OpKind::kWhere, {&cond, &x, &y});
}
Tensor neg(const Tensor& a) { return unary(OpKind::kNeg, a); }
Tensor abs(const Tensor& a) { return unary(OpKind::kAbs, a); }
Tensor sign(const Tensor& a) { return unary(OpKind::kSign, a); }
Tensor floor(const Tensor& a) { return unary(OpKind::kFloor, a); }
Tensor ceil(const Tensor& a) { return unary(OpKind::kCeil, a); }
Tensor round(const Tensor& a) { return unary(OpKind::kRound, a); }
Tensor trunc(const Tensor& a) { return unary(OpKind::kTrunc, a); }
Tensor floor_divide(const Tensor& a, const Tensor& b) { return binary(OpKind::kFloorDivide, a, b); }
Tensor remainder(const Tensor& a, const Tensor& b) { return binary(OpKind::kRemainder, a, b); }
Tensor fmod(const Tensor& a, const Tensor& b) { return binary(OpKind::kFmod, a, b); }
Tensor atan(const Tensor& a) { return unary(OpKind::kAtan, a); }
Tensor asin(const Tensor& a) { return unary(OpKind::kAsin, a); }
Tensor acos(const Tensor& a) { return unary(OpKind::kAcos, a); }
Tensor atan2(const Tensor& y, const Tensor& x) { return binary(OpKind::kAtan2, y, x); }
Tensor bitwise_and(const Tensor& a, const Tensor& b) { return binary(OpKind::kBitwiseAnd, a, b); }
Tensor bitwise_or(const Tensor& a, const Tensor& b) { return binary(OpKind::kBitwiseOr, a, b); }
Tensor bitwise_xor(const Tensor& a, const Tensor& b) { return binary(OpKind::kBitwiseXor, a, b); }
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) { return binary(OpKind::kShiftLeft, a, b); }
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) { return binary(OpKind::kShiftRight, a, b); }
Tensor gcd(const Tensor& a, const Tensor& b) { return binary(OpKind::kGcd, a, b); }
Tensor nextafter(const Tensor& a, const Tensor& b) { return binary(OpKind::kNextafter, a, b); }
Tensor frexp_mantissa(const Tensor& a) { return unary(OpKind::kFrexpMantissa, a); }
Tensor frexp_exponent(const Tensor& a) { return unary(OpKind::kFrexpExponent, a); }
Tensor div_rounded(const Tensor& a, const Tensor& b, const std::string& rounding_mode) {
  if (rounding_mode == "floor") return floor_divide(a, b);
  if (rounding_mode != "trunc") {
    throw EngineError("div: expected rounding_mode to be one of None, 'trunc' or 'floor', got '" + rounding_mode + "'" +
                      at_line(current_source_location()));
  }
  // Integers: a - fmod(a, b) is an exact multiple of b, so its floor quotient
  // is the truncated one (and b == 0 raises in fmod, as PyTorch does).
  if (is_floating(a.dtype()) || is_floating(b.dtype())) return trunc(div(a, b));
  return floor_divide(sub(a, fmod(a, b)), b);
}
Tensor exp(const Tensor& a) { return unary(OpKind::kExp, a); }
Tensor log(const Tensor& a) { return unary(OpKind::kLog, a); }
Tensor log1p(const Tensor& a) { return unary(OpKind::kLog1p, a); }
Tensor sqrt(const Tensor& a) { return unary(OpKind::kSqrt, a); }
Tensor rsqrt(const Tensor& a) { return unary(OpKind::kRsqrt, a); }
Tensor sin(const Tensor& a) { return unary(OpKind::kSin, a); }
Tensor cos(const Tensor& a) { return unary(OpKind::kCos, a); }
Tensor tanh(const Tensor& a) { return unary(OpKind::kTanh, a); }
Tensor erf(const Tensor& a) { return unary(OpKind::kErf, a); }
Tensor sigmoid(const Tensor& a) { return unary(OpKind::kSigmoid, a); }
Tensor gelu(const Tensor& a) { return unary(OpKind::kGelu, a); }
Tensor silu(const Tensor& a) { return unary(OpKind::kSilu, a); }
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
Tensor relu(const Tensor& a) { return unary(OpKind::kRelu, a); }

namespace {
Tensor reduce(OpKind op, const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return apply(op, {a}, {{"dims", std::move(dims)}, {"keepdim", keepdim}});
}
std::vector<int64_t> dim_list(std::optional<int64_t> dim) {
  return dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
}
}  // namespace

Tensor sum(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return reduce(OpKind::kSum, a, std::move(dims), keepdim);
}
Tensor mean(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return reduce(OpKind::kMean, a, std::move(dims), keepdim);
}
Tensor prod(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return reduce(OpKind::kProd, a, std::move(dims), keepdim);
}
Tensor amax(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return reduce(OpKind::kAmax, a, std::move(dims), keepdim);
}
Tensor amin(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return reduce(OpKind::kAmin, a, std::move(dims), keepdim);
}
Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  return reduce(OpKind::kArgmax, a, dim_list(dim), keepdim);
}
Tensor argmin(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  return reduce(OpKind::kArgmin, a, dim_list(dim), keepdim);
}
Tensor logsumexp(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return reduce(OpKind::kLogsumexp, a, std::move(dims), keepdim);
}
Tensor any(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return reduce(OpKind::kAny, a, std::move(dims), keepdim);
}
Tensor all(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return reduce(OpKind::kAll, a, std::move(dims), keepdim);
}
Tensor var(const Tensor& a, std::vector<int64_t> dims, double correction, bool keepdim) {
  return apply(OpKind::kVar, {a}, {{"dims", std::move(dims)}, {"keepdim", keepdim}, {"correction", correction}});
}
Tensor std(const Tensor& a, std::vector<int64_t> dims, double correction, bool keepdim) {
  return sqrt(var(a, std::move(dims), correction, keepdim));
}

Tensor softmax(const Tensor& a, int64_t dim) { return apply(OpKind::kSoftmax, {a}, {{"dim", dim}}); }
Tensor log_softmax(const Tensor& a, int64_t dim) { return apply(OpKind::kLogSoftmax, {a}, {{"dim", dim}}); }

Tensor all_reduce(const Tensor& a, ReduceKind kind, double scale, int64_t group) {
  if (!a.device().is_lazy()) {
    // The eager device would run the kernel now, outside any replica's graph.
    throw DeviceMismatchError("all_reduce: expected a tensor on a replica's lazy device, got one on " +
                              a.device().str() + at_line(current_source_location()));
  }
  return apply(OpKind::kAllReduce, {a}, {{"reduce", static_cast<int64_t>(kind)}, {"scale", scale}, {"group", group}});
}

Tensor constant(BufferPtr buffer, const Device& device) { return Tensor::wrap(std::move(buffer), device); }

Tensor one_hot(const Tensor& a, int64_t num_classes) {
  return apply(OpKind::kOneHot, {a}, {{"num_classes", num_classes}});
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
