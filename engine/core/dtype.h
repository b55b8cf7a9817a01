// Element types. The table in dtype.cpp is the one place that knows each
// type's name, size and kind; everything else asks it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace lazyscope {

enum class DType : uint8_t { kBool, kUInt8, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64 };
inline constexpr int kNumDTypes = 8;

std::string_view dtype_name(DType t);  // "float32", "int64", ...
size_t dtype_size(DType t);
bool is_floating(DType t);
// Parses a name as dtype_name() prints it (also "float", "double", "long",
// "int", "half", "bfloat16"); throws EngineError on an unknown name.
DType parse_dtype(std::string_view name);

// PyTorch's promotion of two tensor operands: the higher category wins
// (bool < integer < floating), then the wider type.
DType promote_types(DType a, DType b);

}  // namespace lazyscope
