#include "tensor/ops.h"

#include <cstring>
#include <string>

#include "backend/cpu/kernels.h"
#include "core/error.h"
#include "core/source_location.h"
#include "metrics/metrics.h"

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

// Kernels take operands of the output dtype; promotion casts arrive with the
// full op set. Until then a mix is refused rather than computed wrongly.
void check_dtypes(OpKind op, const std::vector<Tensor>& inputs, DType out) {
  if (op == OpKind::kSum) {
    if (!is_floating(inputs[0].dtype()) && inputs[0].dtype() != DType::kInt64) {
      throw EngineError("sum: " + std::string(dtype_name(inputs[0].dtype())) + " input is not supported yet");
    }
    return;
  }
  for (const Tensor& t : inputs) {
    if (t.dtype() != out) {
      throw EngineError(std::string(op_name(op)) + ": mixing " + std::string(dtype_name(t.dtype())) + " and " +
                        std::string(dtype_name(out)) + " operands is not supported yet");
    }
  }
}

Tensor run_eager(OpKind op, const std::vector<Tensor>& inputs, const TensorSpec& spec, const Attrs& attrs) {
  cpu::KernelFn kernel = cpu::find_kernel(op, spec.dtype);
  if (!kernel) {
    throw EngineError(std::string(op_name(op)) + " is not implemented for " +
                      std::string(dtype_name(spec.dtype)) + " on the cpu device");
  }
  std::vector<const Buffer*> buffers;
  buffers.reserve(inputs.size());
  for (const Tensor& t : inputs) buffers.push_back(t.impl()->buffer.get());
  BufferPtr out = Buffer::allocate(spec.dtype, spec.shape);
  kernel(cpu::KernelArgs{buffers, *out, attrs});
  return Tensor::wrap(std::move(out), inputs[0].device());
}

}  // namespace

Tensor apply(OpKind op, std::vector<Tensor> inputs, Attrs attrs) {
  for (const Tensor& t : inputs) {
    if (!t.defined()) throw EngineError(std::string(op_name(op)) + ": undefined tensor operand");
  }
  check_same_device(op, inputs);
  std::vector<TensorSpec> specs;
  specs.reserve(inputs.size());
  for (const Tensor& t : inputs) specs.push_back(t.impl()->spec);
  TensorSpec spec;
  try {
    spec = op_info(op).infer(specs, attrs);
  } catch (const ShapeError& e) {
    throw ShapeError(e.what() + at_line(current_source_location()));
  }
  check_dtypes(op, inputs, spec.dtype);

  const Device& device = inputs[0].device();
  if (!device.is_lazy()) return run_eager(op, inputs, spec, attrs);

  std::vector<NodePtr> operands;
  operands.reserve(inputs.size());
  for (const Tensor& t : inputs) operands.push_back(t.impl()->ir);
  auto node = std::make_shared<Node>(op, std::move(operands), std::move(spec), std::move(attrs),
                                     current_source_location(), current_scope());
  return Tensor::lazy(std::move(node), device);
}

Tensor add(const Tensor& a, const Tensor& b) { return apply(OpKind::kAdd, {a, b}); }
Tensor sub(const Tensor& a, const Tensor& b) { return apply(OpKind::kSub, {a, b}); }
Tensor mul(const Tensor& a, const Tensor& b) { return apply(OpKind::kMul, {a, b}); }
Tensor t(const Tensor& a) { return apply(OpKind::kTranspose, {a}); }
Tensor matmul(const Tensor& a, const Tensor& b) { return apply(OpKind::kMatmul, {a, b}); }
Tensor relu(const Tensor& a) { return apply(OpKind::kRelu, {a}); }

Tensor sum(const Tensor& a, std::vector<int64_t> dims, bool keepdim) {
  return apply(OpKind::kSum, {a}, {{"dims", std::move(dims)}, {"keepdim", keepdim}});
}

Tensor scalar(double value, DType dtype, const Device& device) {
  BufferPtr buffer = Buffer::allocate(dtype, {});
  switch (dtype) {
    case DType::kFloat32: *buffer->as<float>() = static_cast<float>(value); break;
    case DType::kFloat64: *buffer->as<double>() = value; break;
    case DType::kInt64: *buffer->as<int64_t>() = static_cast<int64_t>(value); break;
    case DType::kInt32: *buffer->as<int32_t>() = static_cast<int32_t>(value); break;
    case DType::kUInt8: *buffer->as<uint8_t>() = static_cast<uint8_t>(value); break;
    case DType::kBool: *buffer->as<uint8_t>() = value != 0; break;
    default:
      throw EngineError("scalar: " + std::string(dtype_name(dtype)) + " scalars are not supported yet");
  }
  // A scalar leaf: its hash is shape and dtype only, so the value is an input.
  return Tensor::wrap(std::move(buffer), device);
}

}  // namespace lazyscope::ops
