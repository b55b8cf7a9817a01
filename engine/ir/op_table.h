// The op table: for each op its name, arity and output shape/dtype rule.
// Adding an op is one row here plus one kernel row in each backend that lowers
// it; ops a backend does not lower fall back to the host.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/dtype.h"
#include "core/shape.h"
#include "ir/attrs.h"

namespace lazyscope {

enum class OpKind : uint16_t {
  kDeviceData,  // graph input: a materialized buffer, a Python scalar, RNG state
  kAdd,
  kSub,
  kMul,
  kMatmul,
  kRelu,
  kSum,
  kTranspose,  // 2-D: swaps the two dimensions
  kNumOps
};

struct TensorSpec {
  Shape shape;
  DType dtype;
};

// Computes the output spec or throws ShapeError naming the op and shapes.
using InferFn = TensorSpec (*)(std::span<const TensorSpec> inputs, const Attrs& attrs);

struct OpInfo {
  std::string_view name;
  int arity;  // number of tensor operands
  InferFn infer;
};

const OpInfo& op_info(OpKind op);
inline std::string_view op_name(OpKind op) { return op_info(op).name; }

}  // namespace lazyscope
