#include "ir/op_table.h"

#include <array>
#include <string>

#include "core/error.h"

namespace lazyscope {
namespace {

TensorSpec infer_leaf(std::span<const TensorSpec>, const Attrs&) {
  throw EngineError("device data has no inputs to infer from");
}

TensorSpec infer_binary(const char* op, std::span<const TensorSpec> in) {
  return {broadcast_shapes(in[0].shape, in[1].shape, op), promote_types(in[0].dtype, in[1].dtype)};
}

TensorSpec infer_add(std::span<const TensorSpec> in, const Attrs&) { return infer_binary("add", in); }
TensorSpec infer_sub(std::span<const TensorSpec> in, const Attrs&) { return infer_binary("sub", in); }
TensorSpec infer_mul(std::span<const TensorSpec> in, const Attrs&) { return infer_binary("mul", in); }
TensorSpec infer_cast(std::span<const TensorSpec> in, const Attrs& attrs) {
  const int64_t dt = attrs.get_int("dtype");
  if (dt < 0 || dt >= kNumDTypes) throw EngineError("cast: invalid dtype code " + std::to_string(dt));
  return {in[0].shape, static_cast<DType>(dt)};
}

TensorSpec infer_same(std::span<const TensorSpec> in, const Attrs&) { return in[0]; }

TensorSpec infer_matmul(std::span<const TensorSpec> in, const Attrs&) {
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  if (a.size() != 2 || b.size() != 2) {
    throw ShapeError("matmul: expected 2-D operands, got " + shape_str(a) + " and " + shape_str(b));
  }
  if (a[1] != b[0]) {
    throw ShapeError("matmul: shapes " + shape_str(a) + " and " + shape_str(b) +
                     " cannot be multiplied (" + std::to_string(a[1]) + " != " +
                     std::to_string(b[0]) + ")");
  }
  return {{a[0], b[1]}, promote_types(in[0].dtype, in[1].dtype)};
}

// attrs: dims (empty = all), keepdim.
TensorSpec infer_sum(std::span<const TensorSpec> in, const Attrs& attrs) {
  const Shape& s = in[0].shape;
  const auto& dims = attrs.get_ints("dims");
  const bool keepdim = attrs.get_bool("keepdim");
  std::vector<bool> reduced(s.size(), dims.empty());
  for (int64_t d : dims) reduced[wrap_dim(d, s.size(), "sum")] = true;
  Shape out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(s[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  // Summing integers or bools gives int64, as in PyTorch.
  const DType dt = is_floating(in[0].dtype) ? in[0].dtype : DType::kInt64;
  return {out, dt};
}

TensorSpec infer_transpose(std::span<const TensorSpec> in, const Attrs&) {
  const Shape& s = in[0].shape;
  if (s.size() != 2) throw ShapeError("t: expected a 2-D tensor, got shape " + shape_str(s));
  return {{s[1], s[0]}, in[0].dtype};
}

constexpr std::array<OpInfo, static_cast<size_t>(OpKind::kNumOps)> kOps = {{
    {"device_data", 0, infer_leaf, Promote::kNone},
    {"cast", 1, infer_cast, Promote::kNone},
    {"add", 2, infer_add, Promote::kCommon},
    {"sub", 2, infer_sub, Promote::kCommon},
    {"mul", 2, infer_mul, Promote::kCommon},
    {"matmul", 2, infer_matmul, Promote::kCommon},
    {"relu", 1, infer_same, Promote::kNone},
    {"sum", 1, infer_sum, Promote::kIntToLong},
    {"transpose", 1, infer_transpose, Promote::kNone},
}};

}  // namespace

const OpInfo& op_info(OpKind op) { return kOps[static_cast<size_t>(op)]; }

}  // namespace lazyscope
