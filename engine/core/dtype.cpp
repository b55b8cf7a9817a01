#include "core/dtype.h"

#include <array>
#include <string>

#include "core/error.h"

namespace lazyscope {
namespace {

enum class Category : uint8_t { kBool, kInteger, kFloating };

struct DTypeInfo {
  std::string_view name;
  size_t size;
  Category category;
  int rank;  // order within the category, for promotion
};

// Indexed by DType.
constexpr std::array<DTypeInfo, kNumDTypes> kTable = {{
    {"bool", 1, Category::kBool, 0},
    {"uint8", 1, Category::kInteger, 0},
    {"int32", 4, Category::kInteger, 1},
    {"int64", 8, Category::kInteger, 2},
    {"float16", 2, Category::kFloating, 0},
    {"bfloat16", 2, Category::kFloating, 0},
    {"float32", 4, Category::kFloating, 1},
    {"float64", 8, Category::kFloating, 2},
}};

const DTypeInfo& info(DType t) { return kTable[static_cast<size_t>(t)]; }

}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }
size_t dtype_size(DType t) { return info(t).size; }
bool is_floating(DType t) { return info(t).category == Category::kFloating; }

DType parse_dtype(std::string_view name) {
  if (name.starts_with("torch.")) name.remove_prefix(6);
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  if (name == "long") return DType::kInt64;
  if (name == "int") return DType::kInt32;
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kTable[i].name == name) return static_cast<DType>(i);
  }
  throw EngineError("unknown dtype '" + std::string(name) + "'");
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  const DTypeInfo& ia = info(a);
  const DTypeInfo& ib = info(b);
  if (ia.category != ib.category) return ia.category > ib.category ? a : b;
  // float16 and bfloat16 share a rank; PyTorch promotes the pair to float32.
  if (ia.rank == ib.rank) return DType::kFloat32;
  return ia.rank > ib.rank ? a : b;
}

}  // namespace lazyscope
