// Element types. The table in dtype.cpp is the one place that knows each
// type's name, size and kind; everything else asks it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace lazyscope {

enum class DType : uint8_t { kBool, kUInt8, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64 };
inline constexpr int kNumDTypes = 8;

std::string_view dtype_name(DType t);  // "float32", "int64", ...
size_t dtype_size(DType t);
// Inline (every traced op asks, a call through the PLT otherwise): the
// floating types are the enum's last four, which dtype.cpp checks against
// its table at compile time.
inline bool is_floating(DType t) { return t >= DType::kFloat16; }
// Parses a name as dtype_name() prints it (also "float", "double", "long",
// "int", "half", "bfloat16"); throws EngineError on an unknown name.
DType parse_dtype(std::string_view name);

// PyTorch's promotion of two tensor operands: the higher category wins
// (bool < integer < floating), then the wider type.
DType promote_types(DType a, DType b);

// How strongly an operand takes part in promotion, as in PyTorch: tensors
// with dimensions outrank zero-dimensional tensors, which outrank Python
// scalars ("wrapped numbers"). A lower tier only matters when it brings a
// higher category (int tensor * 2.5 -> float32; int32 tensor + 5 -> int32).
enum class PromotionTier : uint8_t { kDimensioned, kZeroDim, kWrappedNumber };

struct PromotionOperand {
  DType dtype;
  PromotionTier tier;
};

// PyTorch's torch.result_type over several operands. A wrapped floating
// number counts as float32 (the default dtype), a wrapped integer as int64.
DType result_type(std::initializer_list<PromotionOperand> operands);
DType result_type(const PromotionOperand* operands, size_t count);

}  // namespace lazyscope
